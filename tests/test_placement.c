/* tests/test_placement.c: host or cuda by the predicted time per frame
 * (plm_pipeline_predict, plm_pipeline_place; plume/pipeline.h), on the two injected
 * "devices" of tests/injected_devices.h: a CPU-like one (low peaks, a cheap launch, no
 * copies; one test gives it memcpy bandwidths) and a GPU-like one (high peaks, a dearer launch,
 * every input and output crossing a link). The choice must go from host to cuda exactly once as the
 * frame grows, where the predictions cross, and describe must say so; a tuning table's points give
 * the steps' times. */
#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "injected_devices.h"
#include "scratch_dir.h"

static const char chain[] = "sobel ! entropy window=16 bins=64 range=0,2000 ! threshold value=4.25";

/* The chain compiled for n x n u16 frames, predicted on host (the CPU-like device, or
 * another calibration of it) and the GPU-like device. */
static plm_placement predict_on(const plm_profile_calibration *host, int64_t n, char *text,
                                size_t size) {
  const int64_t dims[2] = {n, n};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, chain, PLM_DTYPE_U16, 2, dims, &pl));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_placement p;
  PLM_CHECK_OK(plm_pipeline_predict(pl, host, &gpu_like, &p));
  if (text) PLM_CHECK_OK(plm_pipeline_describe(pl, text, size, NULL));
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  return p;
}

static plm_placement predict_at(int64_t n, char *text, size_t size) {
  return predict_on(&cpu_like, n, text, size);
}

START_TEST(test_the_choice_flips_once_at_the_break_even_frame) {
  /* The CPU-like device with memcpy bandwidths: the streamed frame's copies in and out. */
  plm_profile_calibration memcpy_cpu = cpu_like;
  memcpy_cpu.h2d_gbps = memcpy_cpu.d2h_gbps = 10.0;
  memcpy_cpu.copy_latency_us = 1.0;
  int64_t flip = 0;
  plm_backend previous = PLM_BACKEND_HOST;
  double host_before = 0.0;
  for (int64_t n = 8; n <= 2048; n *= 2) {
    const plm_placement p = predict_at(n, NULL, 0);
    ck_assert(p.host_ms > 0.0 && p.cuda_ms > p.cuda_copy_ms && p.cuda_copy_ms > 0.0);
    ck_assert(p.host_ms > host_before); /* a larger frame takes longer */
    host_before = p.host_ms;
    /* u16 in, u8 mask out */
    ck_assert_double_eq_tol(p.input_bytes, 2.0 * (double)(n * n), 1e-9);
    ck_assert_double_eq_tol(p.output_bytes, (double)(n * n), 1e-9);
    ck_assert_double_eq_tol(p.cuda_copy_ms, 3.0 * (double)(n * n) / 20e6 + 2 * 10e-3, 1e-12);
    /* A host without copy bandwidths pays none; with them, memcpy in and out and a latency
     * per tensor, on top of the same steps. */
    ck_assert(p.host_copy_ms == 0.0);
    const plm_placement q = predict_on(&memcpy_cpu, n, NULL, 0);
    ck_assert_double_eq_tol(q.host_copy_ms, 3.0 * (double)(n * n) / 10e6 + 2 * 1e-3, 1e-12);
    ck_assert_double_eq_tol(q.host_ms, p.host_ms + q.host_copy_ms, 1e-12);
    ck_assert_int_eq(p.choice, p.cuda_ms < p.host_ms ? PLM_BACKEND_CUDA : PLM_BACKEND_HOST);
    if (p.choice != previous) {
      ck_assert_msg(flip == 0, "the choice flipped back at %lld", (long long)n);
      ck_assert_int_eq(p.choice, PLM_BACKEND_CUDA);
      flip = n;
    }
    previous = p.choice;
  }
  /* Small frames stay on the CPU (launches and copies dominate), large ones go to the GPU. */
  ck_assert_msg(flip > 8 && flip < 2048, "flip at %lld", (long long)flip);
  char text[8192];
  const plm_placement before = predict_at(flip / 2, text, sizeof text);
  ck_assert_int_eq(before.choice, PLM_BACKEND_HOST);
  ck_assert_msg(strstr(text, "placement: predicted per frame: host ") && strstr(text, "-> host\n"),
                "%s", text);
  const plm_placement after = predict_at(flip, text, sizeof text);
  ck_assert_int_eq(after.choice, PLM_BACKEND_CUDA);
  ck_assert_msg(strstr(text, "ms of copies") && strstr(text, "-> cuda\n"), "%s", text);
}
END_TEST

START_TEST(test_one_device_is_the_choice_and_bad_calibrations_are_refused) {
  const int64_t dims[2] = {64, 64};
  plm_pipeline *pl = NULL;
  plm_placement p;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, chain, PLM_DTYPE_U16, 2, dims, &pl));
  PLM_CHECK_FAILS(plm_pipeline_predict(pl, &cpu_like, NULL, &p), PLM_ERR_INVALID_STATE,
                  "not compiled");
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  PLM_CHECK_OK(plm_pipeline_predict(pl, NULL, &gpu_like, &p));
  ck_assert_int_eq(p.choice, PLM_BACKEND_CUDA);
  ck_assert(p.host_ms == 0.0);
  PLM_CHECK_OK(plm_pipeline_predict(pl, &cpu_like, NULL, &p));
  ck_assert_int_eq(p.choice, PLM_BACKEND_HOST);
  ck_assert(p.cuda_ms == 0.0);
  PLM_CHECK_FAILS(plm_pipeline_predict(pl, NULL, NULL, &p), PLM_ERR_INVALID_ARG, "both NULL");
  plm_profile_calibration broken = gpu_like;
  broken.h2d_gbps = 0.0;
  PLM_CHECK_FAILS(plm_pipeline_predict(pl, &cpu_like, &broken, &p), PLM_ERR_INVALID_ARG,
                  "cuda->h2d_gbps 0");
  broken = cpu_like;
  broken.fma_gflops = -1.0;
  PLM_CHECK_FAILS(plm_pipeline_predict(pl, &broken, NULL, &p), PLM_ERR_INVALID_ARG,
                  "host->device_copy_gbps");
  PLM_CHECK_FAILS(plm_pipeline_predict(pl, &cpu_like, NULL, NULL), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

START_TEST(test_place_follows_plume_backend) {
  const int64_t dims[2] = {32, 32};
  plm_pipeline *pl = NULL;
  plm_backend choice = PLM_BACKEND_AUTO;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, chain, PLM_DTYPE_U16, 2, dims, &pl));
  PLM_CHECK_FAILS(plm_pipeline_place(pl, &choice, NULL), PLM_ERR_INVALID_STATE, "not compiled");
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  const char *saved = getenv("PLUME_BACKEND");
  char restore[16] = "";
  if (saved) snprintf(restore, sizeof restore, "%s", saved);
  setenv("PLUME_BACKEND", "cuda", 1);
  PLM_CHECK_OK(plm_pipeline_place(pl, &choice, NULL));
  ck_assert_int_eq(choice, PLM_BACKEND_CUDA);
  setenv("PLUME_BACKEND", "host", 1);
  plm_placement p;
  PLM_CHECK_OK(plm_pipeline_place(pl, &choice, &p));
  ck_assert_int_eq(choice, PLM_BACKEND_HOST);
  ck_assert(p.host_ms == 0.0 && p.cuda_ms == 0.0); /* forced: nothing measured */
  setenv("PLUME_BACKEND", "gpu", 1);
  PLM_CHECK_FAILS(plm_pipeline_place(pl, &choice, NULL), PLM_ERR_INVALID_ARG,
                  "PLUME_BACKEND='gpu'");
  if (saved)
    setenv("PLUME_BACKEND", restore, 1);
  else
    unsetenv("PLUME_BACKEND");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* A test of tuning tables: a fresh cache with PLUME_TUNING=on and no table loaded, the
 * injected device of the backend under test (CPU-like on host, GPU-like on cuda) named as
 * this context's device (so that a table stored for the context applies to it), and the
 * chain compiled unfused for 64 x 64 frames (entropy and threshold steps of their own). */
typedef struct table_test {
  char dir[SCRATCH_DIR_SIZE];
  plm_profile_calibration device;
  plm_pipeline *pl;
} table_test;

static void table_test_begin(table_test *t, const char *name) {
  scratch_dir_make(t->dir, name);
  setenv("XDG_CACHE_HOME", t->dir, 1);
  setenv("PLUME_TUNING", "on", 1);
  plm_tuning_reset();
  plm_device_info info;
  PLM_CHECK_OK(plm_context_device_info(plm_test_ctx, &info));
  t->device = plm_test_backend == PLM_BACKEND_HOST ? cpu_like : gpu_like;
  snprintf(t->device.device, sizeof t->device.device, "%s", info.name);
  const int64_t dims[2] = {64, 64};
  t->pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, chain, PLM_DTYPE_U16, 2, dims, &t->pl));
  const plm_plan_config unfused = {.flags = PLM_PLAN_NO_FUSION};
  PLM_CHECK_OK(plm_pipeline_compile(t->pl, &unfused));
}

static void table_test_end(table_test *t) {
  PLM_CHECK_OK(plm_pipeline_destroy(t->pl));
  setenv("PLUME_TUNING", "off", 1);
  plm_tuning_reset();
  scratch_dir_remove(t->dir);
}

/* The table test's pipeline predicted on its device alone (the backend under test's side of
 * the placement): ms per frame, and the whole prediction in *p. */
static double table_predict(const table_test *t, plm_placement *p) {
  const bool host = plm_test_backend == PLM_BACKEND_HOST;
  PLM_CHECK_OK(plm_pipeline_predict(t->pl, host ? &t->device : NULL, host ? NULL : &t->device, p));
  return host ? p->host_ms : p->cuda_ms;
}

/* A tuning table's measurement of an op scales that op's steps: entropy measured at 10x
 * its model on this device makes the prediction grow by 9x the entropy step's. The entry
 * is of a tunable of the backend under test (the host's bands per thread, the CUDA kernel's
 * block threads), at the value in force. */
START_TEST(test_a_tuning_table_corrects_the_model) {
  table_test t;
  table_test_begin(&t, "placement");
  plm_placement before, after;
  const double before_ms = table_predict(&t, &before);
  ck_assert_int_eq(before.corrected_steps, 0);
  const char *tunable =
      plm_test_backend == PLM_BACKEND_HOST ? "bands_per_thread" : "max_block_threads";
  int64_t value = 0;
  PLM_CHECK_OK(plm_tuning_get(plm_test_ctx, "entropy", tunable, PLM_SIZE_SMALL, &value));
  plm_tuning_entry e = {.size_class = PLM_SIZE_SMALL,
                        .value = value,
                        .fallback = value,
                        .best = value,
                        .default_ms = 10.0,
                        .best_ms = 10.0,
                        .model_ms = 1.0};
  snprintf(e.op, sizeof e.op, "entropy");
  snprintf(e.tunable, sizeof e.tunable, "%s", tunable);
  PLM_CHECK_OK(plm_tuning_store(plm_test_ctx, &e, 1, NULL, 0));
  const double after_ms = table_predict(&t, &after);
  ck_assert_int_eq(after.corrected_steps, 1);
  /* entropy on a 64 x 64 f32 magnitude: the model's step time, 9 more of it */
  plm_op_cost cost;
  const plm_tensor magnitude = {
      .ctx = plm_test_ctx, .dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {64, 64}, .strides = {64, 1}};
  plm_entropy_params params = plm_entropy_params_default();
  params.window = 16;
  params.bins = 64;
  params.range_lo = 0;
  params.range_hi = 2000;
  PLM_CHECK_OK(plm_entropy_cost(&magnitude, &params, &cost));
  ck_assert_double_eq_tol(after_ms - before_ms, 9.0 * launch_ms(&cost, &t.device), 1e-9);
  char text[8192];
  PLM_CHECK_OK(plm_pipeline_describe(t.pl, text, sizeof text, NULL));
  ck_assert_msg(strstr(text, "(1 step time(s) corrected by a tuning table)"), "%s", text);
  table_test_end(&t);
}
END_TEST

/* Several frames in flight on cuda: a frame's copies overlap another's steps, so the time
 * per frame is the larger of the two; the host's copies still add up, and a plan whose
 * host waits after every step overlaps nothing. */
START_TEST(test_frames_in_flight_overlap_copies_on_cuda) {
  for (int64_t n = 16; n <= 2048; n *= 4) {
    const int64_t dims[2] = {n, n};
    const plm_plan_config configs[3] = {
        {.frames_in_flight = 1},
        {.frames_in_flight = 3},
        {.frames_in_flight = 3, .flags = PLM_PLAN_SYNCHRONOUS_STEPS}};
    plm_placement p[3];
    for (int k = 0; k < 3; k++) {
      plm_pipeline *pl = NULL;
      PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, chain, PLM_DTYPE_U16, 2, dims, &pl));
      PLM_CHECK_OK(plm_pipeline_compile(pl, &configs[k]));
      PLM_CHECK_OK(plm_pipeline_predict(pl, &cpu_like, &gpu_like, &p[k]));
      ck_assert(p[k].copies_overlapped == (k == 1));
      char text[8192];
      PLM_CHECK_OK(plm_pipeline_describe(pl, text, sizeof text, NULL));
      ck_assert_msg((strstr(text, "of copies, beside another frame's steps") != NULL) == (k == 1),
                    "%s", text);
      PLM_CHECK_OK(plm_pipeline_destroy(pl));
    }
    const double steps = p[0].cuda_ms - p[0].cuda_copy_ms;
    ck_assert(steps > 0.0);
    ck_assert_double_eq_tol(p[1].cuda_copy_ms, p[0].cuda_copy_ms, 1e-12);
    ck_assert_double_eq_tol(p[1].cuda_ms, fmax(steps, p[0].cuda_copy_ms), 1e-12);
    ck_assert_double_eq_tol(p[2].cuda_ms, p[0].cuda_ms, 1e-12);
    ck_assert_double_eq_tol(p[1].host_ms, p[0].host_ms, 1e-12);
  }
}
END_TEST

/* The threshold step's model time on the device of calibration c: a 64 x 64 f32 entropy in. */
static double threshold_model_ms(const plm_profile_calibration *c) {
  const plm_tensor in = {
      .ctx = plm_test_ctx, .dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {64, 64}, .strides = {64, 1}};
  plm_threshold_params params = plm_threshold_params_default();
  params.value = 4.25;
  plm_op_cost cost;
  PLM_CHECK_OK(plm_threshold_cost(&in, &params, &cost));
  return launch_ms(&cost, c);
}

static plm_tuning_entry model_point(const char *op, double model_ms, double measured_ms) {
  plm_tuning_entry e = {.size_class = PLM_SIZE_SMALL,
                        .default_ms = measured_ms,
                        .best_ms = measured_ms,
                        .model_ms = model_ms};
  snprintf(e.op, sizeof e.op, "%s", op);
  return e;
}

/* plume tune's points of an op (tunable "", one per workload) give a step the time
 * interpolated between the two about its model time, a power law between them, and
 * beyond the points the nearest one's ratio. */
START_TEST(test_tuning_points_are_interpolated) {
  table_test t;
  table_test_begin(&t, "placement-points");
  plm_placement before, p;
  double p_ms;
  const double before_ms = table_predict(&t, &before);
  const double m = threshold_model_ms(&t.device);
  /* Points at m / 2 (3x the model) and 2 m (5x), stored out of order: at m, half way in
   * log: sqrt(1.5 m x 10 m). */
  plm_tuning_entry points[2] = {model_point("threshold", 2.0 * m, 10.0 * m),
                                model_point("threshold", 0.5 * m, 1.5 * m)};
  PLM_CHECK_OK(plm_tuning_store(plm_test_ctx, points, 2, NULL, 0));
  p_ms = table_predict(&t, &p);
  ck_assert_int_eq(p.corrected_steps, 1);
  ck_assert_double_eq_tol(p_ms - before_ms, sqrt(15.0) * m - m, 1e-9 * m);
  /* Both points below m: the larger one's ratio, 4. */
  points[0] = model_point("threshold", 0.25 * m, 0.5 * m);
  points[1] = model_point("threshold", 0.5 * m, 2.0 * m);
  PLM_CHECK_OK(plm_tuning_store(plm_test_ctx, points, 2, NULL, 0));
  p_ms = table_predict(&t, &p);
  ck_assert_double_eq_tol(p_ms - before_ms, 3.0 * m, 1e-9 * m);
  /* Both above: the smaller one's ratio, 0.5 (a model that overestimates). */
  points[0] = model_point("threshold", 4.0 * m, 2.0 * m);
  points[1] = model_point("threshold", 8.0 * m, 16.0 * m);
  PLM_CHECK_OK(plm_tuning_store(plm_test_ctx, points, 2, NULL, 0));
  p_ms = table_predict(&t, &p);
  ck_assert_double_eq_tol(p_ms - before_ms, -0.5 * m, 1e-9 * m);
  /* Points of one model time (two workloads the model cannot tell apart) count as one, the
   * geometric mean of their times: at m, sqrt(2 m x 8 m) = 4 m, whatever their order. */
  plm_tuning_entry tied[3] = {model_point("threshold", m, 8.0 * m),
                              model_point("threshold", 4.0 * m, 4.0 * m),
                              model_point("threshold", m, 2.0 * m)};
  PLM_CHECK_OK(plm_tuning_store(plm_test_ctx, tied, 3, NULL, 0));
  p_ms = table_predict(&t, &p);
  ck_assert_double_eq_tol(p_ms - before_ms, 3.0 * m, 1e-9 * m);
  PLM_CHECK_OK(plm_tuning_store(plm_test_ctx, points, 2, NULL, 0)); /* back to the last pair */
  /* A table written and read back gives the same: predict loads the pipeline's device's
   * table when nothing has yet (this chain's threshold step has no tunable to ask). */
  plm_tuning_reset();
  p_ms = table_predict(&t, &p);
  ck_assert_int_eq(p.corrected_steps, 1);
  ck_assert_double_eq_tol(p_ms - before_ms, -0.5 * m, 1e-6 * m);
  table_test_end(&t);
}
END_TEST

static Suite *placement_suite(void) {
  Suite *s = suite_create("placement");
  TCase *tc = tcase_create("core");
  plm_test_add_fixture(tc);
  tcase_add_test(tc, test_the_choice_flips_once_at_the_break_even_frame);
  tcase_add_test(tc, test_one_device_is_the_choice_and_bad_calibrations_are_refused);
  tcase_add_test(tc, test_place_follows_plume_backend);
  tcase_add_test(tc, test_a_tuning_table_corrects_the_model);
  tcase_add_test(tc, test_tuning_points_are_interpolated);
  tcase_add_test(tc, test_frames_in_flight_overlap_copies_on_cuda);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return plm_test_main(placement_suite);
}

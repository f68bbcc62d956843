/* tests/test_op_placement.c: host or cuda for one op call (plm_op_predict, plm_op_place;
 * plume/op_placement.h), on the two injected "devices" of tests/injected_devices.h: a
 * CPU-like one (low peaks, a cheap launch, no copies) and a GPU-like one (high peaks, a
 * dearer launch, every input and output crossing a link). Small calls stay on the host,
 * large ones go to the GPU, the choice flips once where the predictions cross, and a call predicts
 * exactly as the one-step pipeline of the same op does (the same model, not a second one). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "injected_devices.h"

static const char entropy_params[] = "window=16 bins=64";

static plm_shape square(plm_dtype dtype, int64_t n) {
  return (plm_shape){.dtype = dtype, .ndim = 2, .dims = {n, n}};
}

/* The model's time of one launch of cost on c (plume/pipeline.h's placement section). */
START_TEST(test_small_calls_stay_on_the_host_and_large_ones_go_to_the_gpu) {
  int64_t flip = 0;
  plm_backend previous = PLM_BACKEND_HOST;
  for (int64_t n = 8; n <= 4096; n *= 2) {
    const plm_shape in = square(PLM_DTYPE_U16, n);
    plm_placement p;
    PLM_CHECK_OK(plm_op_predict("entropy", &in, 1, entropy_params, &cpu_like, &gpu_like, &p));
    /* u16 in, f32 out: the figures are the model's, term by term */
    ck_assert_double_eq_tol(p.input_bytes, 2.0 * (double)(n * n), 1e-9);
    ck_assert_double_eq_tol(p.output_bytes, 4.0 * (double)(n * n), 1e-9);
    const plm_tensor described = {
        .dtype = PLM_DTYPE_U16, .ndim = 2, .dims = {n, n}, .strides = {n, 1}};
    plm_entropy_params params = plm_entropy_params_default();
    params.window = 16;
    params.bins = 64;
    plm_op_cost cost;
    PLM_CHECK_OK(plm_entropy_cost(&described, &params, &cost));
    const double copies = p.input_bytes / (gpu_like.h2d_gbps * 1e6) +
                          p.output_bytes / (gpu_like.d2h_gbps * 1e6) +
                          2 * gpu_like.copy_latency_us * 1e-3;
    ck_assert(p.host_copy_ms == 0.0);
    ck_assert_double_eq_tol(p.host_ms, launch_ms(&cost, &cpu_like), 1e-12);
    ck_assert_double_eq_tol(p.cuda_copy_ms, copies, 1e-12);
    ck_assert_double_eq_tol(p.cuda_ms, launch_ms(&cost, &gpu_like) + copies, 1e-12);
    ck_assert_int_eq(p.corrected_steps, 0);
    ck_assert_int_eq(p.choice, p.cuda_ms < p.host_ms ? PLM_BACKEND_CUDA : PLM_BACKEND_HOST);
    if (p.choice != previous) {
      ck_assert_msg(flip == 0, "the choice flipped back at %lld", (long long)n);
      ck_assert_int_eq(p.choice, PLM_BACKEND_CUDA);
      flip = n;
    }
    previous = p.choice;
  }
  /* launches and copies dominate a small call; entropy's arithmetic a large one */
  ck_assert_msg(flip > 8 && flip < 4096, "flip at %lld", (long long)flip);
  /* A cheap op never pays its copies back: threshold moves 3 bytes a pixel for 1 flop. */
  const plm_shape big = square(PLM_DTYPE_U16, 4096);
  plm_placement p;
  PLM_CHECK_OK(plm_op_predict("threshold", &big, 1, "value=100", &cpu_like, &gpu_like, &p));
  ck_assert_int_eq(p.choice, PLM_BACKEND_HOST);
}
END_TEST

/* One call of an op predicts what the pipeline of that one op predicts per frame. */
START_TEST(test_a_call_predicts_as_its_one_step_pipeline) {
  static const struct {
    const char *op, *params;
    plm_dtype dtype;
  } cases[] = {{"threshold", "value=100", PLM_DTYPE_U16},
               {"entropy", entropy_params, PLM_DTYPE_U16},
               {"sobel", "", PLM_DTYPE_U8}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    for (int64_t n = 16; n <= 1024; n *= 8) {
      char text[128];
      snprintf(text, sizeof text, "%s %s", cases[i].op, cases[i].params);
      plm_pipeline *pl = plm_test_pipeline(plm_test_ctx, text, cases[i].dtype, n, n, 1);
      plm_placement frame, call;
      PLM_CHECK_OK(plm_pipeline_predict(pl, &cpu_like, &gpu_like, &frame));
      PLM_CHECK_OK(plm_pipeline_destroy(pl));
      const plm_shape in = square(cases[i].dtype, n);
      PLM_CHECK_OK(
          plm_op_predict(cases[i].op, &in, 1, cases[i].params, &cpu_like, &gpu_like, &call));
      ck_assert_msg(call.host_ms == frame.host_ms && call.cuda_ms == frame.cuda_ms &&
                        call.cuda_copy_ms == frame.cuda_copy_ms &&
                        call.input_bytes == frame.input_bytes &&
                        call.output_bytes == frame.output_bytes && call.choice == frame.choice,
                    "%s at %lld: call host %g cuda %g (copies %g) in %g out %g, pipeline host %g "
                    "cuda %g (copies %g) in %g out %g",
                    text, (long long)n, call.host_ms, call.cuda_ms, call.cuda_copy_ms,
                    call.input_bytes, call.output_bytes, frame.host_ms, frame.cuda_ms,
                    frame.cuda_copy_ms, frame.input_bytes, frame.output_bytes);
    }
  }
}
END_TEST

/* pad=same of an op with 1-D kernels (sepconv2d's kernel_x (KW), kernel_y (KH)) reads each
 * extent from its own kernel: a "same" output, and an even one refused by name. */
START_TEST(test_same_padding_reads_each_1d_kernel) {
  const plm_shape inputs[3] = {square(PLM_DTYPE_F32, 64),
                               {.dtype = PLM_DTYPE_F32, .ndim = 1, .dims = {9}},
                               {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {5, 1}}};
  plm_placement p;
  PLM_CHECK_OK(plm_op_predict("sepconv2d", inputs, 3, "pad=same", &cpu_like, &gpu_like, &p));
  ck_assert_double_eq(p.output_bytes, 64.0 * 64.0 * 4.0);
  const plm_shape even[3] = {inputs[0], {.dtype = PLM_DTYPE_F32, .ndim = 1, .dims = {4}},
                             inputs[2]};
  PLM_CHECK_FAILS(plm_op_predict("sepconv2d", even, 3, "pad=same", &cpu_like, &gpu_like, &p),
                  PLM_ERR_INVALID_ARG, "'same' needs a kernel of odd sizes, not 5x4");
}
END_TEST

START_TEST(test_one_device_is_the_choice_and_bad_calibrations_are_refused) {
  const plm_shape in = square(PLM_DTYPE_U16, 64);
  plm_placement p;
  PLM_CHECK_OK(plm_op_predict("entropy", &in, 1, entropy_params, NULL, &gpu_like, &p));
  ck_assert_int_eq(p.choice, PLM_BACKEND_CUDA);
  ck_assert(p.host_ms == 0.0 && p.cuda_ms > p.cuda_copy_ms);
  PLM_CHECK_OK(plm_op_predict("entropy", &in, 1, entropy_params, &cpu_like, NULL, &p));
  ck_assert_int_eq(p.choice, PLM_BACKEND_HOST);
  ck_assert(p.cuda_ms == 0.0 && p.host_ms > 0.0);
  PLM_CHECK_FAILS(plm_op_predict("entropy", &in, 1, entropy_params, NULL, NULL, &p),
                  PLM_ERR_INVALID_ARG, "plm_op_predict: host and cuda are both NULL");
  plm_profile_calibration broken = gpu_like;
  broken.d2h_gbps = 0.0;
  PLM_CHECK_FAILS(plm_op_predict("entropy", &in, 1, entropy_params, &cpu_like, &broken, &p),
                  PLM_ERR_INVALID_ARG, "cuda->h2d_gbps 20 and ->d2h_gbps 0 must both be > 0");
  broken = cpu_like;
  broken.device_copy_gbps = -1.0;
  PLM_CHECK_FAILS(plm_op_predict("entropy", &in, 1, entropy_params, &broken, &gpu_like, &p),
                  PLM_ERR_INVALID_ARG, "host->device_copy_gbps -1");
  broken = gpu_like;
  broken.fma_gflops = 0.0;
  PLM_CHECK_FAILS(plm_op_predict("entropy", &in, 1, entropy_params, &cpu_like, &broken, &p),
                  PLM_ERR_INVALID_ARG, "->fma_gflops 0");
}
END_TEST

START_TEST(test_bad_calls_are_refused_with_their_reason) {
  const plm_shape in = square(PLM_DTYPE_U16, 64);
  const plm_shape f32 = square(PLM_DTYPE_F32, 64);
  plm_placement p;
  plm_backend choice;
#define REFUSED(call, needle) PLM_CHECK_FAILS(call, PLM_ERR_INVALID_ARG, needle)
  REFUSED(plm_op_predict(NULL, &in, 1, NULL, &cpu_like, &gpu_like, &p), "op is NULL");
  REFUSED(plm_op_predict("entropy", &in, 1, NULL, &cpu_like, &gpu_like, NULL), "out is NULL");
  REFUSED(plm_op_place("entropy", &in, 1, NULL, NULL, &p), "choice is NULL");
  REFUSED(plm_op_place(NULL, &in, 1, NULL, &choice, &p), "op is NULL");
  REFUSED(plm_op_predict("blur", &in, 1, NULL, &cpu_like, &gpu_like, &p),
          "op 'blur' is not an operation");
  REFUSED(plm_op_place("blur", &in, 1, NULL, &choice, NULL), "op 'blur' is not an operation");
  REFUSED(plm_op_predict("entropy", NULL, 1, NULL, &cpu_like, &gpu_like, &p), "inputs is NULL");
  REFUSED(plm_op_predict("entropy", &in, 7, NULL, &cpu_like, &gpu_like, &p),
          "input_count 7 is not in 0..");
  REFUSED(plm_op_predict("entropy", &in, 0, NULL, &cpu_like, &gpu_like, &p),
          "inputs[0] (entropy's in) is required");
  plm_shape deep = in;
  deep.ndim = 9;
  REFUSED(plm_op_predict("entropy", &deep, 1, NULL, &cpu_like, &gpu_like, &p),
          "inputs[0].ndim 9 is not in 0..");
  plm_shape empty = in;
  empty.dims[1] = 0;
  REFUSED(plm_op_predict("entropy", &empty, 1, NULL, &cpu_like, &gpu_like, &p), "in->dims[1] is 0");
  REFUSED(plm_op_predict("entropy", &in, 1, "window=16 depth=3", &cpu_like, &gpu_like, &p),
          "params: unknown key 'depth' (entropy's keys: window, bins");
  REFUSED(plm_op_predict("entropy", &in, 1, "window=16 window=9", &cpu_like, &gpu_like, &p),
          "params: key 'window' is given twice");
  REFUSED(plm_op_predict("entropy", &in, 1, "window", &cpu_like, &gpu_like, &p),
          "params: 'window' is not key=value");
  REFUSED(plm_op_predict("entropy", &in, 1, "window=abc bins=64", &cpu_like, &gpu_like, &p),
          "params: key 'window': ");
  REFUSED(plm_op_predict("threshold", &in, 1, NULL, &cpu_like, &gpu_like, &p),
          "params: missing key 'value'");
  REFUSED(plm_op_place("threshold", &in, 1, "", &choice, &p), "params: missing key 'value'");
  REFUSED(plm_op_predict("entropy", &f32, 1, NULL, &cpu_like, &gpu_like, &p),
          "params: missing key 'window'");
  REFUSED(plm_op_predict("entropy", &f32, 1, "window=9 bins=64", &cpu_like, &gpu_like, &p),
          "params: missing key 'range' (f32 input needs it)");
  REFUSED(plm_op_predict("entropy", &in, 1, "window=9 range=0,1", &cpu_like, &gpu_like, &p),
          "params: key 'range' is for f32 input, not u16");
#undef REFUSED
  /* After a refusal the same call, made right, goes through. */
  PLM_CHECK_OK(
      plm_op_predict("entropy", &f32, 1, "window=9 bins=64 range=0,1", &cpu_like, &gpu_like, &p));
}
END_TEST

/* PLUME_BACKEND decides, as for pipelines and contexts; without a GPU it is host with
 * nothing measured. */
START_TEST(test_place_follows_plume_backend_and_the_gpus_present) {
  const plm_shape in = square(PLM_DTYPE_U16, 32);
  const char *saved = getenv("PLUME_BACKEND");
  char restore[16] = "";
  if (saved) snprintf(restore, sizeof restore, "%s", saved);
  plm_backend choice = PLM_BACKEND_AUTO;
  plm_placement p;
  setenv("PLUME_BACKEND", "cuda", 1);
  PLM_CHECK_OK(plm_op_place("entropy", &in, 1, entropy_params, &choice, NULL));
  ck_assert_int_eq(choice, PLM_BACKEND_CUDA);
  setenv("PLUME_BACKEND", "host", 1);
  PLM_CHECK_OK(plm_op_place("entropy", &in, 1, entropy_params, &choice, &p));
  ck_assert_int_eq(choice, PLM_BACKEND_HOST);
  ck_assert(p.host_ms == 0.0 && p.cuda_ms == 0.0); /* forced: nothing measured */
  setenv("PLUME_BACKEND", "gpu", 1);
  PLM_CHECK_FAILS(plm_op_place("entropy", &in, 1, entropy_params, &choice, NULL),
                  PLM_ERR_INVALID_ARG, "plm_op_place: environment variable PLUME_BACKEND='gpu'");
  unsetenv("PLUME_BACKEND");
  int gpus = 0;
  PLM_CHECK_OK(plm_backend_device_count(PLM_BACKEND_CUDA, &gpus, NULL));
  if (gpus == 0) {
    PLM_CHECK_OK(plm_op_place("entropy", &in, 1, entropy_params, &choice, &p));
    ck_assert_int_eq(choice, PLM_BACKEND_HOST);
    ck_assert(p.host_ms == 0.0 && p.cuda_ms == 0.0); /* no GPU: nothing calibrated */
  }
  if (saved)
    setenv("PLUME_BACKEND", restore, 1);
  else
    unsetenv("PLUME_BACKEND");
}
END_TEST

static Suite *op_placement_suite(void) {
  Suite *s = suite_create("op_placement");
  TCase *tc = tcase_create("core");
  plm_test_add_fixture(tc);
  tcase_add_test(tc, test_small_calls_stay_on_the_host_and_large_ones_go_to_the_gpu);
  tcase_add_test(tc, test_a_call_predicts_as_its_one_step_pipeline);
  tcase_add_test(tc, test_same_padding_reads_each_1d_kernel);
  tcase_add_test(tc, test_one_device_is_the_choice_and_bad_calibrations_are_refused);
  tcase_add_test(tc, test_bad_calls_are_refused_with_their_reason);
  tcase_add_test(tc, test_place_follows_plume_backend_and_the_gpus_present);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return plm_test_main(op_placement_suite);
}

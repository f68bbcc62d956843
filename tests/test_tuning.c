/* tests/test_tuning.c: the ops' tunables (plume/tuning.h): the descriptors' lists, values
 * forced in the process changing what a pipeline runs while the results stay equal, and
 * the tables written and read back as PLUME_TUNING says, up to their cap; and
 * plm_pipeline_run_stream's batch, kept in the same tables (plm_tuning_batch, plm_tune_batch). */
#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "scratch_dir.h"

/* ---- the descriptors -------------------------------------------------------------------- */

START_TEST(test_every_tunable_has_its_default_among_ascending_candidates) {
  int tunables = 0;
  for (int op = 0; op < plm_op_count(); op++) {
    plm_op_info info;
    int count = -1;
    PLM_CHECK_OK(plm_op_info_get(op, &info));
    PLM_CHECK_OK(plm_op_tunable_count(op, &count));
    for (int k = 0; k < count; k++, tunables++) {
      plm_tunable_info t;
      PLM_CHECK_OK(plm_op_tunable_info_get(op, k, &t));
      ck_assert_msg(t.backend == PLM_BACKEND_HOST || t.backend == PLM_BACKEND_CUDA, "%s.%s",
                    info.name, t.name);
      ck_assert_int_ge(t.candidate_count, 2);
      bool has_default = false;
      for (int c = 0; c < t.candidate_count; c++) {
        if (c) ck_assert_msg(t.candidates[c - 1] < t.candidates[c], "%s.%s", info.name, t.name);
        has_default |= t.candidates[c] == t.fallback;
      }
      ck_assert_msg(has_default, "%s.%s: default %lld is no candidate", info.name, t.name,
                    (long long)t.fallback);
      for (int j = 0; j < k; j++) {
        plm_tunable_info other;
        PLM_CHECK_OK(plm_op_tunable_info_get(op, j, &other));
        ck_assert_msg(other.backend != t.backend || strcmp(other.name, t.name) != 0,
                      "%s.%s twice on one backend", info.name, t.name);
      }
    }
    PLM_CHECK_FAILS(plm_op_tunable_info_get(op, count, &(plm_tunable_info){0}), PLM_ERR_INVALID_ARG,
                    "is not one of");
  }
  /* entropy (6), the fused op (5), conv2d, matmul, lstm_cell (2), dendritic (2) and
   * ar_forecast */
  ck_assert_int_eq(tunables, 18);
  PLM_CHECK_FAILS(plm_op_tunable_count(plm_op_count(), &(int){0}), PLM_ERR_INVALID_ARG, "not in");
}
END_TEST

START_TEST(test_set_refuses_what_is_not_a_tunable_value) {
  PLM_CHECK_FAILS(plm_tuning_set(PLM_BACKEND_HOST, "entropi", "bands_per_thread", -1, 4),
                  PLM_ERR_INVALID_ARG, "no op named 'entropi'");
  PLM_CHECK_FAILS(plm_tuning_set(PLM_BACKEND_CUDA, "entropy", "bands_per_thread", -1, 4),
                  PLM_ERR_INVALID_ARG, "entropy has no tunable 'bands_per_thread' on cuda");
  PLM_CHECK_FAILS(plm_tuning_set(PLM_BACKEND_HOST, "entropy", "bands_per_thread", -1, 3),
                  PLM_ERR_INVALID_ARG, "bands_per_thread 3 is not 1, 2, 4, 8 or 16");
  PLM_CHECK_FAILS(plm_tuning_set(PLM_BACKEND_HOST, "entropy", "bands_per_thread", 3, 4),
                  PLM_ERR_INVALID_ARG, "size_class 3");
  PLM_CHECK_FAILS(plm_tuning_set(PLM_BACKEND_AUTO, "entropy", "bands_per_thread", 0, 4),
                  PLM_ERR_INVALID_ARG, "backend 0");
  PLM_CHECK_FAILS(plm_tuning_get(plm_test_ctx, "lstm_cell", "bands", PLM_SIZE_SMALL, &(int64_t){0}),
                  PLM_ERR_INVALID_ARG, "has no tunable 'bands'");
  ck_assert_str_eq(plm_size_class_name(plm_size_class_of(1000.0)), "small");
  ck_assert_str_eq(plm_size_class_name(plm_size_class_of(2e6)), "medium");
  ck_assert_str_eq(plm_size_class_name(plm_size_class_of(1e9)), "large");
  ck_assert_ptr_null(plm_size_class_name(PLM_SIZE_CLASS_COUNT));
}
END_TEST

/* The launch shape of the CUDA window kernel, cuda tunables of entropy and of the fused
 * op (kernels/common/entropy.h's plm__entropy_cuda_shape; atomic_counts entropy's only),
 * with the shape plume launched before they were tunable as their defaults (but
 * changes_at_once: 1 then). */
static const struct {
  const char *name;
  int64_t fallback;
  int candidate_count;
  int64_t candidates[6];
  bool entropy_only;
} launch_shape[] = {
    {"max_block_threads", 128, 3, {32, 64, 128}, false},
    {"segment_windows", 2, 4, {1, 2, 4, 8}, false},
    {"min_tasks", 512, 6, {128, 256, 512, 1024, 2048, 4096}, false},
    {"changes_at_once", 2, 2, {1, 2}, false},
    {"atomic_counts", 0, 2, {0, 1}, true},
};
enum { LAUNCH_SHAPE_TUNABLES = sizeof launch_shape / sizeof launch_shape[0] };

static int op_index(const char *name) {
  for (int op = 0; op < plm_op_count(); op++) {
    plm_op_info info;
    PLM_CHECK_OK(plm_op_info_get(op, &info));
    if (strcmp(info.name, name) == 0) return op;
  }
  ck_abort_msg("no op %s", name);
  return -1;
}

START_TEST(test_the_window_kernels_launch_shape_is_listed_on_cuda) {
  const char *const ops[] = {"entropy", "sobel_entropy_threshold"};
  for (int o = 0; o < 2; o++) {
    const int op = op_index(ops[o]);
    int count = 0, own = 0;
    PLM_CHECK_OK(plm_op_tunable_count(op, &count));
    for (int j = 0; j < LAUNCH_SHAPE_TUNABLES; j++) own += o == 0 || !launch_shape[j].entropy_only;
    ck_assert_int_eq(count, 1 + own);
    for (int k = 0; k < count; k++) {
      plm_tunable_info t;
      PLM_CHECK_OK(plm_op_tunable_info_get(op, k, &t));
      if (strcmp(t.name, "bands_per_thread") == 0) {
        ck_assert_int_eq(t.backend, PLM_BACKEND_HOST);
        continue;
      }
      int j = 0;
      while (j < LAUNCH_SHAPE_TUNABLES && strcmp(launch_shape[j].name, t.name) != 0) j++;
      ck_assert_msg(j < LAUNCH_SHAPE_TUNABLES, "%s.%s is no launch shape", ops[o], t.name);
      ck_assert_msg(t.backend == PLM_BACKEND_CUDA, "%s.%s", ops[o], t.name);
      ck_assert_int_eq(t.fallback, launch_shape[j].fallback);
      ck_assert_int_eq(t.candidate_count, launch_shape[j].candidate_count);
      for (int c = 0; c < t.candidate_count; c++)
        ck_assert_int_eq(t.candidates[c], launch_shape[j].candidates[c]);
      ck_assert_msg(t.help && t.help[0], "%s.%s has no help", ops[o], t.name);
    }
  }
  PLM_CHECK_FAILS(plm_tuning_set(PLM_BACKEND_CUDA, "entropy", "max_block_threads", -1, 96),
                  PLM_ERR_INVALID_ARG, "max_block_threads 96 is not 32, 64 or 128");
  PLM_CHECK_FAILS(plm_tuning_set(PLM_BACKEND_HOST, "entropy", "segment_windows", -1, 2),
                  PLM_ERR_INVALID_ARG, "entropy has no tunable 'segment_windows' on host");
  if (plm_test_backend == PLM_BACKEND_HOST)
    PLM_CHECK_FAILS(plm_tuning_get(plm_test_ctx, "sobel_entropy_threshold", "min_tasks",
                                   PLM_SIZE_SMALL, &(int64_t){0}),
                    PLM_ERR_INVALID_ARG, "has no tunable 'min_tasks' on host");
}
END_TEST

START_TEST(test_conv2d_lists_its_cuda_tile_width) {
  const int op = op_index("conv2d");
  int count = 0;
  PLM_CHECK_OK(plm_op_tunable_count(op, &count));
  ck_assert_int_eq(count, 1);
  plm_tunable_info t;
  PLM_CHECK_OK(plm_op_tunable_info_get(op, 0, &t));
  ck_assert_str_eq(t.name, "tile_width");
  ck_assert_int_eq(t.backend, PLM_BACKEND_CUDA);
  ck_assert_int_eq(t.fallback, 16); /* 16 x 16, the block before it was tunable */
  ck_assert_int_eq(t.candidate_count, 4);
  const int64_t widths[] = {8, 16, 32, 64};
  for (int c = 0; c < 4; c++) ck_assert_int_eq(t.candidates[c], widths[c]);
}
END_TEST

/* ---- forcing a value changes what a pipeline runs, not what it computes ------------------ */

/* Compile pl, then describe it into text and give its plan's scratch bytes. */
static size_t compile_and_describe(plm_pipeline *pl, char *text, size_t size) {
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  PLM_CHECK_OK(plm_pipeline_describe(pl, text, size, NULL));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  return info.scratch_bytes;
}

/* Run pl's one frame from in into result, download result into out, then free both, pl
 * and the values forced for it. */
static void run_and_destroy(plm_pipeline *pl, plm_tensor in, plm_tensor result, void *out) {
  PLM_CHECK_OK(plm_pipeline_run(pl, &in, &result, plm_test_stream));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, out, result.data, plm_tensor_bytes(&result),
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &result));
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  plm_tuning_reset();
}

/* entropy window 5 over a 64 x 96 u8 frame with bands_per_thread `bands` (0: the default):
 * the output downloaded into out, the plan's scratch bytes returned. */
static size_t entropy_with_bands(int64_t bands, const uint8_t *frame, float *out, char *text,
                                 size_t size) {
  if (bands)
    PLM_CHECK_OK(plm_tuning_set(PLM_BACKEND_HOST, "entropy", "bands_per_thread", -1, bands));
  const int64_t dims[2] = {64, 96};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, "entropy window=5", PLM_DTYPE_U8, 2, dims, &pl));
  const size_t scratch = compile_and_describe(pl, text, size);
  run_and_destroy(pl, plm_test_upload(PLM_DTYPE_U8, 2, dims, frame),
                  plm_test_upload(PLM_DTYPE_F32, 2, dims, NULL), out);
  return scratch;
}

/* On host, forced bands change the plan's scratch and its description, never the bits. On
 * cuda the host's tunable does not reach the plan: the same scratch and bits, and the plan
 * names no bands (its tuned line is the CUDA kernel's). */
START_TEST(test_forced_bands_change_the_plan_and_keep_the_bits) {
  enum { PIXELS = 64 * 96 };
  uint8_t frame[PIXELS];
  uint64_t seed = 23;
  for (int k = 0; k < PIXELS; k++) frame[k] = (uint8_t)(plm_test_random(&seed) >> 56);
  static float base[PIXELS], one[PIXELS], sixteen[PIXELS];
  char text[4096];
  const size_t scratch_default = entropy_with_bands(0, frame, base, text, sizeof text);
  if (plm_test_backend == PLM_BACKEND_CUDA) {
    ck_assert_msg(
        strstr(text, "    tuned: max_block_threads=") && !strstr(text, "bands_per_thread"), "%s",
        text);
    const size_t scratch_sixteen = entropy_with_bands(16, frame, sixteen, text, sizeof text);
    ck_assert_msg(!strstr(text, "bands_per_thread"), "%s", text);
    ck_assert_uint_eq(scratch_sixteen, scratch_default);
    ck_assert_mem_eq(sixteen, base, sizeof base);
    return;
  }
  ck_assert_msg(strstr(text, "    tuned: bands_per_thread=4\n"), "%s", text);
  const size_t scratch_one = entropy_with_bands(1, frame, one, text, sizeof text);
  ck_assert_msg(strstr(text, "    tuned: bands_per_thread=1 (default 4)\n"), "%s", text);
  const size_t scratch_sixteen = entropy_with_bands(16, frame, sixteen, text, sizeof text);
  /* Each band has its own histogram and bin buffer: fewer bands, less scratch. */
  ck_assert_uint_lt(scratch_one, scratch_default);
  ck_assert_uint_lt(scratch_default, scratch_sixteen);
  ck_assert_mem_eq(one, base, sizeof base);
  ck_assert_mem_eq(sixteen, base, sizeof base);
}
END_TEST

/* An lstm_cell pipeline (batch 16, input 24, hidden 20) with gemm_min_batch `from` on the
 * backend under test (0: the default); out_h downloaded into out, the scratch returned. */
static size_t lstm_with_gemm_from(int64_t from, const float *x, const float *weights, float *out) {
  enum { B = 16, I = 24, H = 20 };
  if (from) PLM_CHECK_OK(plm_tuning_set(plm_test_backend, "lstm_cell", "gemm_min_batch", -1, from));
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  plm_pipe_tensor tx, th, tc, wi, wh, oh, oc;
  const plm_pipe_tensor none = {0};
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, (int64_t[]){B, I}, &tx));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, (int64_t[]){B, H}, weights, &th));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, (int64_t[]){B, H}, weights, &tc));
  PLM_CHECK_OK(
      plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, (int64_t[]){4 * H, I}, weights, &wi));
  PLM_CHECK_OK(
      plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, (int64_t[]){4 * H, H}, weights, &wh));
  PLM_CHECK_OK(plm_pipeline_add_lstm_cell(pl, tx, th, tc, wi, wh, none, none, &oh, &oc));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, oh));
  char text[4096];
  const size_t scratch = compile_and_describe(pl, text, sizeof text);
  if (from) ck_assert_msg(strstr(text, "tuned: gemm_min_batch="), "%s", text);
  run_and_destroy(pl, plm_test_upload(PLM_DTYPE_F32, 2, (int64_t[]){B, I}, x),
                  plm_test_upload(PLM_DTYPE_F32, 2, (int64_t[]){B, H}, NULL), out);
  return scratch;
}

START_TEST(test_forced_gemm_threshold_switches_the_lstm_path_within_tolerance) {
  float *x = plm_test_uniform_f32(16 * 24, 1.0, 5);
  float *weights = plm_test_uniform_f32(80 * 24, 0.3, 7);
  float gemm[16 * 20], per_unit[16 * 20];
  /* The smallest candidate is at most the batch (GEMM), the largest above it (per unit). */
  const bool cuda = plm_test_backend == PLM_BACKEND_CUDA;
  ck_assert_uint_gt(lstm_with_gemm_from(cuda ? 8 : 1, x, weights, gemm), 0);
  ck_assert_uint_eq(lstm_with_gemm_from(cuda ? 256 : 32, x, weights, per_unit), 0);
  for (int k = 0; k < 16 * 20; k++)
    ck_assert_msg(fabsf(gemm[k] - per_unit[k]) <= 1e-5f, "out_h[%d] %g vs %g", k, gemm[k],
                  per_unit[k]);
  free(x);
  free(weights);
}
END_TEST

/* entropy (window 7 over u8, byte counts; window 9 over u16 value-as-bin, sparse ones;
 * window 17 over u8, a u16 count a bin) and the fused op (window 7, 64 bins: byte counts;
 * window 33, 4096 bins: global) over two frames of 160 x 600, each with the launch shape's
 * values forced on cuda (index -1: none; else launch_shape[index] at candidate c), their
 * outputs downloaded one after another into out (WINDOW_RUNS x the frames' pixels x 4
 * bytes). With atomic_counts 1, entropy's runs over u8 take both atomic kernels (byte
 * counts at window 7, u16 counts at 17; the sparse tables of run 1 have none). */
enum {
  SHAPE_FRAMES = 2,
  SHAPE_H = 160,
  SHAPE_W = 600,
  SHAPE_PIXELS = SHAPE_FRAMES * SHAPE_H * SHAPE_W,
  ENTROPY_RUNS = 3,              /* runs 0 .. 2: entropy, f32 out */
  WINDOW_RUNS = ENTROPY_RUNS + 2 /* then the fused op's two, a u8 mask out */
};

static void window_ops_with_shape(int index, int c, const plm_tensor *u8, const plm_tensor *u16,
                                  unsigned char *out) {
  if (index >= 0) {
    const int64_t value = launch_shape[index].candidates[c];
    PLM_CHECK_OK(plm_tuning_set(PLM_BACKEND_CUDA, "entropy", launch_shape[index].name, -1, value));
    if (!launch_shape[index].entropy_only)
      PLM_CHECK_OK(plm_tuning_set(PLM_BACKEND_CUDA, "sobel_entropy_threshold",
                                  launch_shape[index].name, -1, value));
  }
  const int64_t dims[3] = {SHAPE_FRAMES, SHAPE_H, SHAPE_W};
  plm_tensor result = plm_test_upload(PLM_DTYPE_F32, 3, dims, NULL);
  plm_tensor mask = plm_test_upload(PLM_DTYPE_U8, 3, dims, NULL);
  plm_entropy_params entropy = plm_entropy_params_default();
  plm_sobel_entropy_threshold_params fused = {
      .entropy = {.window = 7, .bins = 64, .range_lo = 0.0, .range_hi = 1000.0},
      .threshold = {.value = 3.0, .compare = PLM_COMPARE_GT}};
  const size_t floats = (size_t)SHAPE_PIXELS * sizeof(float);
  for (int run = 0; run < WINDOW_RUNS; run++) {
    if (run < ENTROPY_RUNS) {
      const int windows[ENTROPY_RUNS] = {7, 9, 17};
      entropy.window = windows[run];
      PLM_CHECK_OK(plm_entropy(plm_test_stream, run == 1 ? u16 : u8, &entropy, &result));
      PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, out + run * floats, result.data, floats,
                                     PLM_COPY_DEVICE_TO_HOST));
    } else {
      fused.entropy.window = run == ENTROPY_RUNS ? 7 : 33;
      fused.entropy.bins = run == ENTROPY_RUNS ? 64 : 4096;
      PLM_CHECK_OK(plm_sobel_entropy_threshold(plm_test_stream, u8, &fused, &mask));
      PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, out + run * floats, mask.data, SHAPE_PIXELS,
                                     PLM_COPY_DEVICE_TO_HOST));
    }
  }
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &result));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &mask));
  plm_tuning_reset();
}

/* On cuda every launch shape computes the default's bits (the kernel's plan changes: see
 * tests/test_entropy_cuda_logic.cpp); on host the cuda values, forced, change nothing.
 * The candidates are a sweep (tests/harness.h): each is five window ops over the frames,
 * about seven seconds on the emulated GPU, where each seed takes every second, so that CI's
 * two seeds (1 and 2) run every candidate between them (every third left a third to none). */
START_TEST(test_forced_launch_shapes_keep_the_bits) {
  uint8_t *frames = malloc((size_t)SHAPE_PIXELS * 3);
  ck_assert_ptr_nonnull(frames);
  uint64_t seed = 41;
  for (int k = 0; k < SHAPE_PIXELS * 3; k++) frames[k] = (uint8_t)(plm_test_random(&seed) >> 59);
  const int64_t dims[3] = {SHAPE_FRAMES, SHAPE_H, SHAPE_W};
  plm_tensor u8 = plm_test_upload(PLM_DTYPE_U8, 3, dims, frames);
  plm_tensor u16 = plm_test_upload(PLM_DTYPE_U16, 3, dims, frames + SHAPE_PIXELS);
  const size_t bytes = (size_t)WINDOW_RUNS * SHAPE_PIXELS * sizeof(float);
  unsigned char *base = calloc(1, bytes), *forced = calloc(1, bytes);
  ck_assert(base && forced);
  window_ops_with_shape(-1, 0, &u8, &u16, base);
  plm_test_sweep candidates = plm_test_sweep_start("forced launch shapes", 2);
  for (int index = 0; index < LAUNCH_SHAPE_TUNABLES; index++)
    for (int c = 0; c < launch_shape[index].candidate_count; c++) {
      if (launch_shape[index].candidates[c] == launch_shape[index].fallback) continue;
      if (!plm_test_sweep_take(&candidates)) continue;
      memset(forced, 0xa5, bytes);
      window_ops_with_shape(index, c, &u8, &u16, forced);
      for (int run = 0; run < WINDOW_RUNS; run++) {
        const size_t part = bytes / WINDOW_RUNS, used = run < ENTROPY_RUNS ? part : SHAPE_PIXELS;
        ck_assert_msg(memcmp(forced + run * part, base + run * part, used) == 0,
                      "%s=%lld changes run %d's output on %s", launch_shape[index].name,
                      (long long)launch_shape[index].candidates[c], run,
                      plm_backend_name(plm_test_backend));
      }
    }
  plm_test_sweep_finish(&candidates);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &u8));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &u16));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  free(frames);
  free(base);
  free(forced);
}
END_TEST

/* conv2d with 5 x 5 taps (same padding, reflect101) and 3 x 3 taps at strides 2, 3 over
 * two u16 frames of 160 x 600, conv2d's tile_width forced on cuda to `width` (0: none);
 * both outputs into out, one after the other. */
static void conv2d_with_tile_width(int64_t width, const plm_tensor *in, const plm_tensor *taps5,
                                   const plm_tensor *taps3, float *out, size_t *floats) {
  if (width) PLM_CHECK_OK(plm_tuning_set(PLM_BACKEND_CUDA, "conv2d", "tile_width", -1, width));
  *floats = 0;
  for (int run = 0; run < 2; run++) {
    plm_conv2d_params params = plm_conv2d_params_default();
    params.border = run == 0 ? PLM_BORDER_REFLECT101 : PLM_BORDER_ZERO;
    params.pad_y = params.pad_x = run == 0 ? 2 : 1;
    params.stride_y = run == 0 ? 1 : 2;
    params.stride_x = run == 0 ? 1 : 3;
    const plm_tensor *kernel = run == 0 ? taps5 : taps3;
    plm_shape shape;
    PLM_CHECK_OK(plm_conv2d_output(in, kernel, &params, &shape));
    plm_tensor result = plm_test_upload(PLM_DTYPE_F32, shape.ndim, shape.dims, NULL);
    PLM_CHECK_OK(plm_conv2d(plm_test_stream, in, kernel, &params, &result));
    const size_t count = (size_t)plm_tensor_numel(&result);
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, out + *floats, result.data,
                                   count * sizeof(float), PLM_COPY_DEVICE_TO_HOST));
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &result));
    *floats += count;
  }
  plm_tuning_reset();
}

/* On cuda every block shape computes the default's bits; on host the value changes nothing. */
START_TEST(test_forced_tile_widths_keep_the_conv2d_bits) {
  uint16_t *frames = malloc((size_t)SHAPE_PIXELS * sizeof *frames);
  ck_assert_ptr_nonnull(frames);
  uint64_t seed = 43;
  for (int k = 0; k < SHAPE_PIXELS; k++) frames[k] = (uint16_t)(plm_test_random(&seed) >> 48);
  float *taps = plm_test_uniform_f32(25, 1.0, 11);
  const int64_t dims[3] = {SHAPE_FRAMES, SHAPE_H, SHAPE_W};
  plm_tensor in = plm_test_upload(PLM_DTYPE_U16, 3, dims, frames);
  plm_tensor taps5 = plm_test_upload(PLM_DTYPE_F32, 2, (int64_t[]){5, 5}, taps);
  plm_tensor taps3 = plm_test_upload(PLM_DTYPE_F32, 2, (int64_t[]){3, 3}, taps);
  float *base = calloc((size_t)2 * SHAPE_PIXELS, sizeof(float));
  float *forced = calloc((size_t)2 * SHAPE_PIXELS, sizeof(float));
  ck_assert(base && forced);
  size_t floats = 0, forced_floats = 0;
  conv2d_with_tile_width(0, &in, &taps5, &taps3, base, &floats);
  for (int64_t width = 8; width <= 64; width *= 2) {
    memset(forced, 0xa5, (size_t)2 * SHAPE_PIXELS * sizeof(float));
    conv2d_with_tile_width(width, &in, &taps5, &taps3, forced, &forced_floats);
    ck_assert_uint_eq(forced_floats, floats);
    ck_assert_msg(memcmp(forced, base, floats * sizeof(float)) == 0,
                  "tile_width=%lld changes conv2d's output on %s", (long long)width,
                  plm_backend_name(plm_test_backend));
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &taps5));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &taps3));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  free(frames);
  free(taps);
  free(base);
  free(forced);
}
END_TEST

/* A pipeline's compile resolves the launch shape forced on cuda into its fused step, and
 * describe shows it there, on cuda only (a host pipeline's steps have no cuda values). */
START_TEST(test_a_forced_launch_shape_reaches_the_fused_step) {
  PLM_CHECK_OK(
      plm_tuning_set(PLM_BACKEND_CUDA, "sobel_entropy_threshold", "max_block_threads", -1, 32));
  const int64_t dims[2] = {64, 96};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                  "sobel ! entropy window=5 bins=64 range=0,1000 ! "
                                  "threshold value=3",
                                  PLM_DTYPE_U8, 2, dims, &pl));
  char text[4096];
  const plm_plan_config fuse = {.flags = PLM_PLAN_FUSE}; /* cuda's default is unfused */
  PLM_CHECK_OK(plm_pipeline_compile(pl, &fuse));
  PLM_CHECK_OK(plm_pipeline_describe(pl, text, sizeof text, NULL));
  ck_assert_msg(strstr(text, "sobel_entropy_threshold"), "not fused: %s", text);
  if (plm_test_backend == PLM_BACKEND_CUDA)
    ck_assert_msg(strstr(text,
                         "max_block_threads=32 (default 128), segment_windows=2, "
                         "min_tasks=512, changes_at_once=2\n"),
                  "%s", text);
  else
    ck_assert_msg(!strstr(text, "max_block_threads"), "%s", text);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  plm_tuning_reset();
}
END_TEST

/* ---- tables ------------------------------------------------------------------------------- */

/* The backend's entry that the table tests store: a tunable of it and a non-default value. */
static plm_tuning_entry sample_entry(void) {
  const bool cuda = plm_test_backend == PLM_BACKEND_CUDA;
  plm_tuning_entry e = {.size_class = PLM_SIZE_SMALL,
                        .value = cuda ? 16 : 8,
                        .fallback = cuda ? 64 : 4,
                        .best = cuda ? 16 : 8,
                        .default_ms = 2.0,
                        .best_ms = 1.0,
                        .cv = 0.05,
                        .kept = true};
  snprintf(e.op, sizeof e.op, "%s", cuda ? "lstm_cell" : "entropy");
  snprintf(e.tunable, sizeof e.tunable, "%s", cuda ? "gemm_min_batch" : "bands_per_thread");
  return e;
}

/* XDG_CACHE_HOME as the suite found it (NULL: unset), while a test points it elsewhere. */
static char *cache_home_before;
static bool cache_home_saved;

/* The table under a fresh scratch folder `dir` (XDG_CACHE_HOME), read as PLUME_TUNING=on
 * reads it, nothing of it in memory yet. */
static void tuning_in_scratch(char dir[SCRATCH_DIR_SIZE], const char *name) {
  if (!cache_home_saved) {
    const char *home = getenv("XDG_CACHE_HOME");
    cache_home_before = home ? strdup(home) : NULL;
    cache_home_saved = true;
  }
  scratch_dir_make(dir, name);
  setenv("XDG_CACHE_HOME", dir, 1);
  setenv("PLUME_TUNING", "on", 1);
  plm_tuning_reset();
}

/* Back to the defaults and the cache folder the suite found, and `dir` removed: left as
 * XDG_CACHE_HOME, the removed folder was made again by the next test that calibrates
 * (plume/calibration.tsv), and left behind in TMPDIR. */
static void tuning_scratch_done(const char *dir) {
  setenv("PLUME_TUNING", "off", 1);
  if (cache_home_before) setenv("XDG_CACHE_HOME", cache_home_before, 1);
  else unsetenv("XDG_CACHE_HOME");
  plm_tuning_reset();
  scratch_dir_remove(dir);
}

START_TEST(test_a_stored_table_is_read_back_as_plume_tuning_says) {
  char dir[SCRATCH_DIR_SIZE], path[512];
  tuning_in_scratch(dir, "tuning");
  plm_tuning_table_info info;
  PLM_CHECK_OK(plm_tuning_table_info_get(plm_test_ctx, &info));
  ck_assert(!info.in_use);
  ck_assert_str_eq(info.setting, "on");

  const plm_tuning_entry e = sample_entry();
  PLM_CHECK_OK(plm_tuning_store(plm_test_ctx, &e, 1, path, sizeof path));
  ck_assert_msg(strncmp(path, dir, strlen(dir)) == 0, "%s not in %s", path, dir);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);

  /* A new process's view: the file alone. */
  plm_tuning_reset();
  PLM_CHECK_OK(plm_tuning_table_info_get(plm_test_ctx, &info));
  ck_assert(info.in_use);
  ck_assert_int_eq(info.entry_count, 1);
  ck_assert_int_eq(info.kept_count, 1);
  int64_t value = 0;
  PLM_CHECK_OK(plm_tuning_get(plm_test_ctx, e.op, e.tunable, PLM_SIZE_SMALL, &value));
  ck_assert_int_eq(value, e.value);
  PLM_CHECK_OK(plm_tuning_get(plm_test_ctx, e.op, e.tunable, PLM_SIZE_MEDIUM, &value));
  ck_assert_int_eq(value, e.fallback);
  plm_tuning_entry *entries = NULL;
  size_t count = 0;
  PLM_CHECK_OK(plm_tuning_entries(plm_test_ctx, &entries, &count));
  ck_assert_uint_eq(count, 1);
  ck_assert_str_eq(entries[0].op, e.op);
  ck_assert(entries[0].kept);
  ck_assert_double_eq_tol(entries[0].default_ms, 2.0, 1e-12);
  free(entries);

  /* refresh: the file is not read (the defaults run) */
  setenv("PLUME_TUNING", "refresh", 1);
  plm_tuning_reset();
  PLM_CHECK_OK(plm_tuning_get(plm_test_ctx, e.op, e.tunable, PLM_SIZE_SMALL, &value));
  ck_assert_int_eq(value, e.fallback);
  /* off: nor written */
  setenv("PLUME_TUNING", "off", 1);
  plm_tuning_reset();
  PLM_CHECK_OK(plm_tuning_table_info_get(plm_test_ctx, &info));
  ck_assert(!info.in_use);
  ck_assert_str_eq(info.path, "");
  ck_assert_str_eq(info.setting, "off");

  /* a damaged file is no table */
  setenv("PLUME_TUNING", "on", 1);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("{\"schema\": \"plume-tuning\", \"version\": 1, \"entries\": [", f);
  fclose(f);
  plm_tuning_reset();
  PLM_CHECK_OK(plm_tuning_table_info_get(plm_test_ctx, &info));
  ck_assert(!info.in_use);

  /* an entry that names no tunable value is refused */
  plm_tuning_entry bad = e;
  bad.value = 3;
  PLM_CHECK_FAILS(plm_tuning_store(plm_test_ctx, &bad, 1, NULL, 0), PLM_ERR_INVALID_ARG,
                  "is no tunable value");
  snprintf(bad.op, sizeof bad.op, "conv2d");
  PLM_CHECK_FAILS(plm_tuning_store(plm_test_ctx, &bad, 1, NULL, 0), PLM_ERR_INVALID_ARG,
                  "entries[0]: conv2d's");
  /* A point of the model (tunable "", value 0: a workload's model and measured times) is an
   * entry; with a value it is not. */
  plm_tuning_entry model = {.size_class = PLM_SIZE_MEDIUM, .default_ms = 3.0, .model_ms = 1.0};
  snprintf(model.op, sizeof model.op, "conv2d");
  PLM_CHECK_OK(plm_tuning_store(plm_test_ctx, &model, 1, NULL, 0));
  PLM_CHECK_OK(plm_tuning_table_info_get(plm_test_ctx, &info));
  ck_assert_int_eq(info.entry_count, 1);
  ck_assert_int_eq(info.kept_count, 0);
  model.value = 1;
  PLM_CHECK_FAILS(plm_tuning_store(plm_test_ctx, &model, 1, NULL, 0), PLM_ERR_INVALID_ARG,
                  "entries[0]: conv2d's");

  tuning_scratch_done(dir);
}
END_TEST

/* A table file of `count` points of entropy's model under ctx's device's key. */
static void write_table(const char *path, const char *key, int count) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\"schema\": \"plume-tuning\", \"version\": 1, \"key\": \"%s\", \"entries\": [", key);
  for (int k = 0; k < count; k++)
    fprintf(f,
            "%s{\"op\": \"entropy\", \"tunable\": \"\", \"size_class\": \"small\", \"value\": 0, "
            "\"default_ms\": 1.0, \"model_ms\": 1.0}",
            k ? ", " : "");
  fputs("]}", f);
  ck_assert_int_eq(fclose(f), 0);
}

/* A table holds at most PLM_TUNING_MAX_ENTRIES entries in a file of at most
 * PLM_TUNING_MAX_FILE_BYTES (760,000 entries once made every command take 13 s): more is
 * refused when stored, and a larger table or file is not loaded, saying why. */
START_TEST(test_a_table_larger_than_the_cap_is_refused_saying_so) {
  char dir[SCRATCH_DIR_SIZE], path[512];
  tuning_in_scratch(dir, "tuning-cap");
  plm_tuning_entry *entries = calloc(PLM_TUNING_MAX_ENTRIES + 1, sizeof *entries);
  ck_assert_ptr_nonnull(entries);
  for (int k = 0; k <= PLM_TUNING_MAX_ENTRIES; k++) {
    entries[k] =
        (plm_tuning_entry){.size_class = PLM_SIZE_SMALL, .default_ms = 1.0, .model_ms = 1.0};
    snprintf(entries[k].op, sizeof entries[k].op, "entropy");
  }
  char want[128];
  snprintf(want, sizeof want, "count %d is more than the %d entries a table may hold",
           PLM_TUNING_MAX_ENTRIES + 1, PLM_TUNING_MAX_ENTRIES);
  PLM_CHECK_FAILS(plm_tuning_store(plm_test_ctx, entries, PLM_TUNING_MAX_ENTRIES + 1, NULL, 0),
                  PLM_ERR_INVALID_ARG, want);
  PLM_CHECK_OK(plm_tuning_store(plm_test_ctx, entries, PLM_TUNING_MAX_ENTRIES, path, sizeof path));
  free(entries);
  plm_tuning_table_info info;
  PLM_CHECK_OK(plm_tuning_table_info_get(plm_test_ctx, &info));
  ck_assert_int_eq(info.entry_count, PLM_TUNING_MAX_ENTRIES);

  /* One entry more in the file: not loaded, and said. */
  write_table(path, info.key, PLM_TUNING_MAX_ENTRIES + 1);
  plm_tuning_reset();
  PLM_CHECK_OK(plm_tuning_table_info_get(plm_test_ctx, &info));
  ck_assert(!info.in_use);
  ck_assert_int_eq(info.entry_count, 0);
  snprintf(want, sizeof want, "%d entries, more than the %d a tuning table may hold (not loaded)",
           PLM_TUNING_MAX_ENTRIES + 1, PLM_TUNING_MAX_ENTRIES);
  ck_assert_str_eq(info.problem, want);
  /* A file larger than a table may be is not even parsed. */
  FILE *f = fopen(path, "r+");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fseek(f, PLM_TUNING_MAX_FILE_BYTES, SEEK_SET), 0);
  fputc(' ', f);
  ck_assert_int_eq(fclose(f), 0);
  plm_tuning_reset();
  PLM_CHECK_OK(plm_tuning_table_info_get(plm_test_ctx, &info));
  ck_assert(!info.in_use);
  ck_assert_msg(strstr(info.problem, "a tuning table may take (not read)") != NULL, "%s",
                info.problem);
  /* Such a file is not replaced by a store (it may be the user's, damaged or not). */
  plm_tuning_entry e = sample_entry();
  PLM_CHECK_FAILS(plm_tuning_store(plm_test_ctx, &e, 1, NULL, 0), PLM_ERR_IO, "not replaced");

  tuning_scratch_done(dir);
}
END_TEST

/* A full run of one op on the backend under test (one timed run per candidate): an entry
 * per size class for each of entropy's tunables of that backend (on cuda the launch shape
 * also at 4096 x 4096: the large class; on the CUDA emulator, whose frames are 1/16 the
 * side, every workload is in the small class), then its points of the model, one per
 * workload (two windows at four frame sizes), each with a model and a measured time; an
 * unknown op and runs out of range are refused. */
/* What options.progress was told, call by call. */
typedef struct progress_calls {
  int calls, last_done, total;
  bool in_order, named; /* done rose by one each call; op named until the end, then NULL */
} progress_calls;

static void note_progress(void *user, int done, int total, const char *op) {
  progress_calls *p = user;
  p->in_order = p->in_order && done == p->last_done + 1 && (p->calls == 0 || total == p->total);
  p->named = p->named && (done < total ? op && strcmp(op, "entropy") == 0 : op == NULL);
  p->calls++;
  p->last_done = done;
  p->total = total;
}

START_TEST(test_a_full_tune_of_one_op_decides_its_tunables_and_measures_its_points) {
  plm_tune_options options = plm_tune_options_default();
  options.op = "entropy";
  options.runs = 1;
  progress_calls told = {.last_done = -1, .in_order = true, .named = true};
  options.progress = note_progress;
  options.progress_user = &told;
  plm_tuning_entry *entries = NULL;
  size_t count = 0;
  PLM_CHECK_OK(plm_tune_run(plm_test_ctx, &options, &entries, &count));
  const bool cuda = plm_test_backend == PLM_BACKEND_CUDA;
  /* A step per tunable of the backend, and one for the points: told before each and at the end. */
  ck_assert_int_eq(told.total, (cuda ? LAUNCH_SHAPE_TUNABLES : 1) + 1);
  ck_assert(told.in_order && told.named && told.calls == told.total + 1);
  ck_assert_int_eq(told.last_done, told.total);
  int points = 0, decided[PLM_SIZE_CLASS_COUNT] = {0};
  for (size_t k = 0; k < count; k++) {
    const plm_tuning_entry *e = &entries[k];
    ck_assert_str_eq(e->op, "entropy");
    ck_assert(e->model_ms > 0.0 && e->default_ms > 0.0);
    if (e->tunable[0] == '\0') {
      ck_assert(e->value == 0 && !e->kept && e->best_ms == e->default_ms);
      points++;
    } else {
      ck_assert_int_eq(strcmp(e->tunable, "bands_per_thread") == 0, !cuda);
      decided[e->size_class]++;
    }
  }
  ck_assert_int_eq(points, 2 * 4);
  const int tunables = cuda ? LAUNCH_SHAPE_TUNABLES : 1; /* the launch shape's, or the bands */
  const bool emulated = plm_test_on_emulator();
  ck_assert_int_eq(decided[PLM_SIZE_SMALL], tunables);
  ck_assert_int_eq(decided[PLM_SIZE_MEDIUM], emulated ? 0 : tunables);
  ck_assert_int_eq(decided[PLM_SIZE_LARGE], cuda && !emulated ? tunables : 0);
  free(entries);
  options.op = "no_such_op";
  PLM_CHECK_FAILS(plm_tune_run(plm_test_ctx, &options, &entries, &count), PLM_ERR_INVALID_ARG,
                  "no op named 'no_such_op'");
  options.op = NULL;
  options.runs = 1001;
  PLM_CHECK_FAILS(plm_tune_run(plm_test_ctx, &options, &entries, &count), PLM_ERR_INVALID_ARG,
                  "options->runs 1001");
}
END_TEST

/* ---- plm_pipeline_run_stream's batch ---------------------------------------------------- */

/* The rule from a bytes target to a frame count: powers of two, capped, 1 below two frames. */
START_TEST(test_a_batch_target_gives_the_largest_power_of_two_frames_it_holds) {
  ck_assert_int_eq(plm_tuning_batch_for(0, 8192), 1);
  ck_assert_int_eq(plm_tuning_batch_for(65536, 8192), 8);
  ck_assert_int_eq(plm_tuning_batch_for(65535, 8192), 4);
  ck_assert_int_eq(plm_tuning_batch_for(65536, 32768), 2);
  ck_assert_int_eq(plm_tuning_batch_for(65536, 65536), 1);
  ck_assert_int_eq(plm_tuning_batch_for(65536, 131072), 1);
  ck_assert_int_eq(plm_tuning_batch_for(1 << 20, 16), PLM_TUNING_MAX_BATCH);
  ck_assert_int_eq(plm_tuning_batch_for(1 << 20, 0), 1);
  ck_assert_int_eq(plm_tuning_batch_for(-1, 8), 1);
}
END_TEST

/* The batch is set, got, stored and read back by the ops' paths under its names; its
 * class is the frame's; refusals name what is wrong. */
START_TEST(test_the_batch_is_set_stored_and_read_back_like_a_tunable) {
  char dir[SCRATCH_DIR_SIZE];
  tuning_in_scratch(dir, "tuning-batch");
  int batch = 0;
  PLM_CHECK_OK(plm_tuning_batch(plm_test_ctx, 64 * 64 * 2, &batch));
  ck_assert_int_eq(batch, 1); /* the default: a frame at a time */
  plm_tunable_info t;
  PLM_CHECK_OK(plm_tuning_batch_tunable(plm_test_backend, &t));
  ck_assert_str_eq(t.name, PLM_TUNING_BATCH_BYTES);
  ck_assert_int_eq(t.fallback, 0);
  ck_assert_int_eq(t.candidates[0], 0);
  for (int k = 1; k < t.candidate_count; k++) ck_assert(t.candidates[k] > t.candidates[k - 1]);

  PLM_CHECK_OK(plm_tuning_set(plm_test_backend, PLM_TUNING_RUN_STREAM, PLM_TUNING_BATCH_BYTES,
                              PLM_SIZE_SMALL, 65536));
  PLM_CHECK_OK(plm_tuning_batch(plm_test_ctx, 64 * 64 * 2, &batch));
  ck_assert_int_eq(batch, 8);
  PLM_CHECK_OK(plm_tuning_batch(plm_test_ctx, 128 * 128 * 2, &batch));
  ck_assert_int_eq(batch, 2);
  PLM_CHECK_OK(plm_tuning_batch(plm_test_ctx, 1024 * 1024 * 2, &batch));
  ck_assert_int_eq(batch, 1); /* the medium class: not set */
  int64_t value = 0;
  PLM_CHECK_OK(plm_tuning_get(plm_test_ctx, PLM_TUNING_RUN_STREAM, PLM_TUNING_BATCH_BYTES,
                              PLM_SIZE_SMALL, &value));
  ck_assert_int_eq(value, 65536);
  PLM_CHECK_FAILS(
      plm_tuning_set(plm_test_backend, PLM_TUNING_RUN_STREAM, PLM_TUNING_BATCH_BYTES, -1, 1000),
      PLM_ERR_INVALID_ARG, "run_stream's batch_bytes 1000 is not 0, 16384");
  PLM_CHECK_FAILS(plm_tuning_set(plm_test_backend, PLM_TUNING_RUN_STREAM, "frames", -1, 8),
                  PLM_ERR_INVALID_ARG, "run_stream has no tunable 'frames'");
  PLM_CHECK_FAILS(plm_tuning_batch(plm_test_ctx, 0, &batch), PLM_ERR_INVALID_ARG,
                  "frame_bytes is 0");
  PLM_CHECK_FAILS(plm_tuning_batch(plm_test_ctx, 8, NULL), PLM_ERR_INVALID_ARG, "batch");

  /* stored in the table, and read back by a new process's view of it */
  plm_tuning_entry e = {.size_class = PLM_SIZE_SMALL,
                        .value = 262144,
                        .best = 262144,
                        .default_ms = 2.0,
                        .best_ms = 1.0,
                        .cv = 0.01,
                        .kept = true};
  snprintf(e.op, sizeof e.op, "%s", PLM_TUNING_RUN_STREAM);
  snprintf(e.tunable, sizeof e.tunable, "%s", PLM_TUNING_BATCH_BYTES);
  PLM_CHECK_OK(plm_tuning_store(plm_test_ctx, &e, 1, NULL, 0));
  plm_tuning_reset();
  PLM_CHECK_OK(plm_tuning_batch(plm_test_ctx, 64 * 64 * 2, &batch));
  ck_assert_int_eq(batch, 32);
  /* a point of the model (tunable "") is an op's only */
  plm_tuning_entry point = {.size_class = PLM_SIZE_SMALL, .default_ms = 1.0, .model_ms = 1.0};
  snprintf(point.op, sizeof point.op, "%s", PLM_TUNING_RUN_STREAM);
  PLM_CHECK_FAILS(plm_tuning_store(plm_test_ctx, &point, 1, NULL, 0), PLM_ERR_INVALID_ARG,
                  "entries[0]: run_stream's");
  tuning_scratch_done(dir);
}
END_TEST

/* plm_tune_batch measures and decides one entry of the small class; on the emulator it
 * says why it does not. */
START_TEST(test_tune_batch_decides_the_small_class_batch) {
  plm_tune_batch_options options = plm_tune_batch_options_default();
  options.quick = true;
  options.runs = 1;
  plm_tuning_entry e;
  if (plm_test_on_emulator()) {
    PLM_CHECK_FAILS(plm_tune_batch(plm_test_ctx, &options, &e), PLM_ERR_UNSUPPORTED,
                    "not measured on the CUDA emulator");
    return;
  }
  PLM_CHECK_OK(plm_tune_batch(plm_test_ctx, &options, &e));
  ck_assert_str_eq(e.op, PLM_TUNING_RUN_STREAM);
  ck_assert_str_eq(e.tunable, PLM_TUNING_BATCH_BYTES);
  ck_assert_int_eq(e.size_class, PLM_SIZE_SMALL);
  ck_assert_int_eq(e.fallback, 0);
  ck_assert(e.default_ms > 0 && e.best_ms > 0 && e.best_ms <= e.default_ms);
  ck_assert_int_eq(e.value, e.kept ? e.best : 0);
  /* a text that does not take stacks is named */
  options.pipeline = "threshold value=25 ! label ! segment";
  PLM_CHECK_FAILS(plm_tune_batch(plm_test_ctx, &options, &e), PLM_ERR_INVALID_ARG, "segment");
  options.pipeline = NULL;
  options.runs = 65;
  PLM_CHECK_FAILS(plm_tune_batch(plm_test_ctx, &options, &e), PLM_ERR_INVALID_ARG, "runs 65");
  PLM_CHECK_FAILS(plm_tune_batch(plm_test_ctx, NULL, NULL), PLM_ERR_INVALID_ARG, "entry");
}
END_TEST

static Suite *tuning_suite(void) {
  Suite *s = suite_create("tuning");
  TCase *tc = tcase_create("core");
  plm_test_add_fixture(tc);
  plm_test_add_stream_fixture(tc);
  tcase_add_test(tc, test_every_tunable_has_its_default_among_ascending_candidates);
  tcase_add_test(tc, test_set_refuses_what_is_not_a_tunable_value);
  tcase_add_test(tc, test_the_window_kernels_launch_shape_is_listed_on_cuda);
  tcase_add_test(tc, test_conv2d_lists_its_cuda_tile_width);
  tcase_add_test(tc, test_forced_tile_widths_keep_the_conv2d_bits);
  tcase_add_test(tc, test_forced_launch_shapes_keep_the_bits);
  tcase_add_test(tc, test_a_forced_launch_shape_reaches_the_fused_step);
  tcase_add_test(tc, test_forced_bands_change_the_plan_and_keep_the_bits);
  tcase_add_test(tc, test_forced_gemm_threshold_switches_the_lstm_path_within_tolerance);
  tcase_add_test(tc, test_a_stored_table_is_read_back_as_plume_tuning_says);
  tcase_add_test(tc, test_a_table_larger_than_the_cap_is_refused_saying_so);
  tcase_add_test(tc, test_a_full_tune_of_one_op_decides_its_tunables_and_measures_its_points);
  tcase_add_test(tc, test_a_batch_target_gives_the_largest_power_of_two_frames_it_holds);
  tcase_add_test(tc, test_the_batch_is_set_stored_and_read_back_like_a_tunable);
  tcase_add_test(tc, test_tune_batch_decides_the_small_class_batch);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return plm_test_main(tuning_suite);
}

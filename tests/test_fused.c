/* tests/test_fused.c: the fused sobel -> entropy -> threshold op (plume/fused.h) on the
 * backend under test, against the three ops run one after another on the same stream:
 * the masks must be equal byte for byte. The chain's own semantics are pinned to
 * float64 references by test_conv.c, test_entropy.c and test_threshold.c; one case
 * here is worked out by hand. Inputs go to the device with stream copies, so the same
 * test runs on cuda (ctest fused.cuda). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int64_t numel(int ndim, const int64_t *dims) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= dims[d];
  return n;
}

/* Host input: u8 and u16 with `levels` distinct values (few levels give large counts
 * and many equal entropies), f32 in [-1, 3) with a few NaNs, infinities and repeats. */
static void *random_input(plm_dtype dtype, int64_t count, uint32_t levels, uint64_t seed) {
  void *host = malloc((size_t)count * plm_dtype_size(dtype));
  ck_assert_ptr_nonnull(host);
  uint64_t state = seed | 1;
  for (int64_t i = 0; i < count; i++) {
    uint64_t r = plm_test_random(&state);
    switch (dtype) {
      case PLM_DTYPE_U8: ((uint8_t *)host)[i] = (uint8_t)((r % levels) * (256 / levels)); break;
      case PLM_DTYPE_U16:
        ((uint16_t *)host)[i] = (uint16_t)((r % levels) * (65536 / levels));
        break;
      default: {
        float v = (float)(-1.0 + 4.0 * (double)(r % 100003) / 100003.0);
        if (r % 151 == 0) v = NAN;
        if (r % 157 == 0) v = (r & 1) ? INFINITY : -INFINITY;
        if (r % 7 == 0) v = 0.5f;
        ((float *)host)[i] = v;
      }
    }
  }
  return host;
}

static int compare_floats(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* The finite values of v[0..count) sorted into out; returns how many. */
static int64_t sorted_finite(const float *v, int64_t count, float *out) {
  int64_t n = 0;
  for (int64_t i = 0; i < count; i++)
    if (isfinite(v[i])) out[n++] = v[i];
  qsort(out, (size_t)n, sizeof *out, compare_floats);
  return n;
}

typedef struct fused_case {
  plm_dtype dtype;
  int ndim;
  const int64_t *dims;
  const void *host;
  plm_border border;
  int window, bins;
  int variant; /* 0 or 1: which comparisons meet the tie and which the near-tie */
} fused_case;

/* The mask of the fused op and of the chain, for one threshold; both downloaded. */
static void run_both(const plm_tensor *in, const plm_tensor *entropy,
                     const plm_sobel_entropy_threshold_params *params, plm_tensor *mask,
                     plm_tensor *chain_mask, uint8_t *fused_host, uint8_t *chain_host) {
  size_t bytes = plm_tensor_bytes(mask);
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, mask->data, 0xAA, bytes));
  PLM_CHECK_OK(plm_threshold(plm_test_stream, entropy, &params->threshold, chain_mask));
  PLM_CHECK_OK(plm_sobel_entropy_threshold(plm_test_stream, in, params, mask));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, fused_host, mask->data, bytes, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, chain_host, chain_mask->data, bytes,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}

/* Run the chain (sobel magnitude, entropy, threshold) and the fused op on one input,
 * with the range chosen from the actual magnitudes and the thresholds from the actual
 * entropies (one equal to the median entropy, one between it and the next float), for
 * every comparison; returns the number of mask bytes that differ, over all of them. */
static int64_t check_case(const fused_case *c) {
  plm_tensor in, magnitude, entropy, mask, chain_mask;
  const int nd = c->ndim;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, c->dtype, nd, c->dims, &in));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, nd, c->dims, &magnitude));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, nd, c->dims, &entropy));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, nd, c->dims, &mask));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, nd, c->dims, &chain_mask));
  int64_t count = numel(nd, c->dims);
  float *values = malloc((size_t)count * sizeof *values);
  float *sorted = malloc((size_t)count * sizeof *sorted);
  uint8_t *fused_host = malloc((size_t)count), *chain_host = malloc((size_t)count);
  ck_assert(values && sorted && fused_host && chain_host);

  plm_sobel_entropy_threshold_params params = {.sobel = {.border = c->border},
                                               .entropy = {.window = c->window, .bins = c->bins}};
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, c->host, plm_tensor_bytes(&in),
                                 PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_sobel(plm_test_stream, &in, &params.sobel, NULL, NULL, &magnitude));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, values, magnitude.data,
                                 plm_tensor_bytes(&magnitude), PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  /* A range inside the magnitudes, its ends actual values: some fall below lo, some at
   * or above hi, some exactly on lo. */
  int64_t finite = sorted_finite(values, count, sorted);
  double lo = finite ? sorted[finite / 10] : 0.0, hi = finite ? sorted[finite * 9 / 10] : 1.0;
  if (!(lo < hi)) hi = lo + 1.0;
  params.entropy.range_lo = lo;
  params.entropy.range_hi = hi;
  PLM_CHECK_OK(plm_entropy(plm_test_stream, &magnitude, &params.entropy, &entropy));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, values, entropy.data, plm_tensor_bytes(&entropy),
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  finite = sorted_finite(values, count, sorted);
  ck_assert_int_eq(finite, count);
  float tie = sorted[count / 2];
  double between = 0.5 * ((double)tie + (double)nextafterf(tie, INFINITY));

  /* Every comparison, against the tie or the near-tie as c->variant says (callers
   * alternate it, so that both meet every comparison). */
  int64_t differ = 0;
  for (int cmp = PLM_COMPARE_GT; cmp <= PLM_COMPARE_LE; cmp++) {
    double value = (cmp + c->variant) % 2 ? between : (double)tie;
    params.threshold = (plm_threshold_params){.value = value, .compare = (plm_compare)cmp};
    run_both(&in, &entropy, &params, &mask, &chain_mask, fused_host, chain_host);
    for (int64_t i = 0; i < count; i++) differ += fused_host[i] != chain_host[i];
  }
  plm_tensor *all[] = {&in, &magnitude, &entropy, &mask, &chain_mask};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
  free(values);
  free(sorted);
  free(fused_host);
  free(chain_host);
  return differ;
}

static const int64_t small_shapes[][3] = {{1, 1},  {1, 40},    {40, 1},    {7, 13},
                                          {23, 9}, {3, 7, 13}, {2, 37, 29}};
static const int small_ndims[] = {2, 2, 2, 2, 2, 3, 3};
enum { SHAPE_COUNT = sizeof small_ndims / sizeof small_ndims[0] };
static const int windows[] = {1, 2, 3, 4, 5, 8, 15, 16, 33};
enum { WINDOW_COUNT = sizeof windows / sizeof windows[0] };
static const int bin_counts[] = {1, 2, 7, 64, 256, 65536};
enum { BIN_COUNT = sizeof bin_counts / sizeof bin_counts[0] };
static const plm_border borders[] = {PLM_BORDER_ZERO, PLM_BORDER_REPLICATE, PLM_BORDER_REFLECT101};

/* The sweeps' strides on the emulated GPU (tests/harness.h). */
enum { SMALL_STRIDE_ON_EMULATOR = 23, LARGE_STRIDE_ON_EMULATOR = 11 };

/* Every small shape, window, bin count and border on one dtype (on the emulated GPU a
 * sample of them: tests/harness.h's sweeps). */
static void check_small_cases(plm_dtype dtype, uint32_t levels) {
  char name[64];
  snprintf(name, sizeof name, "small %s, %u levels", plm_dtype_name(dtype), levels);
  plm_test_sweep sweep = plm_test_sweep_start(name, SMALL_STRIDE_ON_EMULATOR);
  for (int s = 0; s < SHAPE_COUNT; s++) {
    int64_t count = numel(small_ndims[s], small_shapes[s]);
    void *host =
        random_input(dtype, count, levels, 0x51ed270b27ull + (uint64_t)(s * 7919) + levels);
    for (int w = 0; w < WINDOW_COUNT; w++)
      for (int b = 0; b < BIN_COUNT; b++)
        for (int e = 0; e < 3; e++) {
          if (!plm_test_sweep_take(&sweep)) continue;
          fused_case c = {.dtype = dtype,
                          .ndim = small_ndims[s],
                          .dims = small_shapes[s],
                          .host = host,
                          .border = borders[e],
                          .window = windows[w],
                          .bins = bin_counts[b],
                          .variant = (w + b + e) % 2};
          int64_t differ = check_case(&c);
          ck_assert_msg(differ == 0,
                        "%lld mask bytes differ: %s levels %u, shape %d, window %d, bins %d, "
                        "border %d",
                        (long long)differ, plm_dtype_name(dtype), levels, s, windows[w],
                        bin_counts[b], (int)borders[e]);
        }
    free(host);
  }
  plm_test_sweep_finish(&sweep);
}

START_TEST(test_u8_equals_the_chain) {
  check_small_cases(PLM_DTYPE_U8, 256);
  check_small_cases(PLM_DTYPE_U8, 4);
}
END_TEST

START_TEST(test_u16_equals_the_chain) {
  check_small_cases(PLM_DTYPE_U16, 65536);
  check_small_cases(PLM_DTYPE_U16, 5);
}
END_TEST

START_TEST(test_f32_equals_the_chain) {
  check_small_cases(PLM_DTYPE_F32, 0);
}
END_TEST

/* A frame larger than the CPU kernel's bands and the GPU kernel's strips and segments,
 * and a batch whose bands cross frames (on the emulated GPU a sample of the shapes,
 * dtypes, windows and bins: tests/harness.h's sweeps). A window of 255, nearly the
 * frame, runs on host and on a GPU; on the emulated GPU one combination of it took 77 s,
 * and 33 reaches the same paths there (past shared memory's table of differences, and
 * with 65536 bins the global histograms). Under ThreadSanitizer window 255 runs once. */
START_TEST(test_large_frames_and_batches_equal_the_chain) {
  static const int64_t large[2] = {257, 255}, batch[3] = {5, 61, 70}, wide[2] = {3, 1000},
                       tall[2] = {1000, 3};
  const struct {
    const int64_t *dims;
    int ndim;
  } shapes[] = {{large, 2}, {batch, 3}, {wide, 2}, {tall, 2}};
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  const int large_windows[] = {1, 2, 16, 33, 255};
  const size_t window_count = sizeof large_windows / sizeof large_windows[0] -
                              (plm_test_on_emulator() ? 1 : 0); /* 255 last */
  const int large_bins[] = {64, 65536};
  plm_test_sweep sweep = plm_test_sweep_start("large", LARGE_STRIDE_ON_EMULATOR);
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int t = 0; t < 3; t++) {
      int64_t count = numel(shapes[s].ndim, shapes[s].dims);
      void *host = random_input(dtypes[t], count, t == 0 ? 16 : 1000, 4242u + s * 3 + (size_t)t);
      for (size_t w = 0; w < window_count; w++)
        for (int b = 0; b < 2; b++) {
          /* Under ThreadSanitizer, whose point here is the threads of the CPU kernel's
           * bands, window 255 runs on the large frame in u8 only: each of its cases costs
           * about eight of window 33's, which crosses the same bands. */
          if (large_windows[w] == 255 && (s != 0 || t != 0) && plm_test_under_thread_sanitizer())
            continue;
          if (!plm_test_sweep_take(&sweep)) continue;
          fused_case c = {.dtype = dtypes[t],
                          .ndim = shapes[s].ndim,
                          .dims = shapes[s].dims,
                          .host = host,
                          .border = borders[(s + w + (size_t)b) % 3],
                          .window = large_windows[w],
                          .bins = large_bins[b],
                          .variant = (int)(w + (size_t)b) % 2};
          int64_t differ = check_case(&c);
          ck_assert_msg(differ == 0, "%lld mask bytes differ: %s, shape %zu, window %d, bins %d",
                        (long long)differ, plm_dtype_name(dtypes[t]), s, large_windows[w],
                        large_bins[b]);
        }
      free(host);
    }
  plm_test_sweep_finish(&sweep);
}
END_TEST

/* Worked by hand: columns 0..2 are 0 and 3..5 are 100, replicated at the border, so
 * gx = 400 at columns 2 and 3 and 0 elsewhere, gy = 0. With 2 bins over [0, 800), 400
 * is bin 1: bins 0 0 1 1 0 0 in every row. A 3-wide window then holds one or two
 * columns of bin 1 out of three at columns 1..4 (entropy 0.918 bits) and none at
 * columns 0 and 5 (0 bits); above 0.5 that is 0 1 1 1 1 0. */
START_TEST(test_a_step_edge_gives_the_mask_worked_out_by_hand) {
  const int64_t dims[2] = {4, 6};
  uint8_t host[24], result[24];
  for (int i = 0; i < 24; i++) host[i] = i % 6 < 3 ? 0 : 100;
  plm_tensor in, mask;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &mask));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, in.data, host, sizeof host, PLM_COPY_HOST_TO_DEVICE));
  plm_sobel_entropy_threshold_params params = {
      .sobel = {.border = PLM_BORDER_REPLICATE},
      .entropy = {.window = 3, .bins = 2, .range_lo = 0.0, .range_hi = 800.0},
      .threshold = {.value = 0.5, .compare = PLM_COMPARE_GT}};
  PLM_CHECK_OK(plm_sobel_entropy_threshold(plm_test_stream, &in, &params, &mask));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, result, mask.data, sizeof result,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  const uint8_t row[6] = {0, 1, 1, 1, 1, 0};
  for (int i = 0; i < 24; i++)
    ck_assert_msg(result[i] == row[i % 6], "pixel %d is %d", i, result[i]);
  /* Below 0.9 bits everything but the ends; a window of 1 has no entropy anywhere. */
  params.threshold = (plm_threshold_params){.value = 0.9, .compare = PLM_COMPARE_LT};
  PLM_CHECK_OK(plm_sobel_entropy_threshold(plm_test_stream, &in, &params, &mask));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, result, mask.data, sizeof result,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  for (int i = 0; i < 24; i++) ck_assert_int_eq(result[i], row[i % 6] ? 0 : 1);
  params.entropy.window = 1;
  params.threshold = (plm_threshold_params){.value = 0.0, .compare = PLM_COMPARE_LE};
  PLM_CHECK_OK(plm_sobel_entropy_threshold(plm_test_stream, &in, &params, &mask));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, result, mask.data, sizeof result,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  for (int i = 0; i < 24; i++) ck_assert_int_eq(result[i], 1);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &mask));
}
END_TEST

static plm_sobel_entropy_threshold_params good_params(void) {
  return (plm_sobel_entropy_threshold_params){
      .sobel = {.border = PLM_BORDER_REFLECT101},
      .entropy = {.window = 5, .bins = 64, .range_lo = 0.0, .range_hi = 4.0},
      .threshold = {.value = 3.0, .compare = PLM_COMPARE_GT}};
}

START_TEST(test_output_shape_and_cost) {
  const int64_t dims[3] = {4, 6, 8};
  plm_tensor in;
  uint16_t storage[4 * 6 * 8];
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U16, 3, dims, &in));
  plm_sobel_entropy_threshold_params params = good_params();
  plm_shape shape;
  PLM_CHECK_OK(plm_sobel_entropy_threshold_output(&in, &params, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_U8);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert(shape.dims[0] == 4 && shape.dims[1] == 6 && shape.dims[2] == 8);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_sobel_entropy_threshold_cost(&in, &params, &cost));
  /* u16 read, u8 written; 17 + 4 + (6 * 5 + 4) + 1 operations per pixel. */
  ck_assert(cost.bytes == 192.0 * 3.0);
  ck_assert(cost.flops == 192.0 * 56.0);
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t dims[2] = {8, 8}, other_dims[2] = {8, 9}, line[1] = {64}, cube[4] = {1, 1, 8, 8};
  plm_tensor in, mask, wrong_shape, as_i32, as_f32_mask, in_u8, flat, four_d;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &mask));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, other_dims, &wrong_shape));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &as_i32));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &as_f32_mask));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &in_u8));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 1, line, &flat));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 4, cube, &four_d));
  /* The mask starts as 0xAA; nothing below may write it. */
  uint8_t before[64], after[64];
  memset(before, 0xAA, sizeof before);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, mask.data, before, sizeof before,
                                 PLM_COPY_HOST_TO_DEVICE));
  const plm_sobel_entropy_threshold_params params = good_params();

  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(NULL, &in, &params, &mask), PLM_ERR_INVALID_ARG,
                  "plm_sobel_entropy_threshold: stream is NULL");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, NULL, &params, &mask),
                  PLM_ERR_INVALID_ARG, "plm_sobel_entropy_threshold: in is NULL");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, NULL, &mask),
                  PLM_ERR_INVALID_ARG, "plm_sobel_entropy_threshold: params is NULL");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &params, NULL),
                  PLM_ERR_INVALID_ARG, "mask is NULL");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &as_i32, &params, &mask),
                  PLM_ERR_INVALID_ARG, "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &flat, &params, &mask),
                  PLM_ERR_INVALID_ARG, "in->ndim 1 is not 2 (H, W) or 3 (N, H, W)");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &four_d, &params, &mask),
                  PLM_ERR_INVALID_ARG, "in->ndim 4");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &params, &as_f32_mask),
                  PLM_ERR_INVALID_ARG, "mask->dtype f32 is not u8");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &params, &wrong_shape),
                  PLM_ERR_INVALID_ARG, "mask is 8x9 but in is 8x8");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in_u8, &params, &in_u8),
                  PLM_ERR_INVALID_ARG, "mask overlaps in");
  plm_tensor shifted = mask;
  shifted.data = (char *)in.data + 4;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &params, &shifted),
                  PLM_ERR_INVALID_ARG, "mask overlaps in");
  plm_tensor strided = mask;
  strided.strides[0] = 16;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &params, &strided),
                  PLM_ERR_UNSUPPORTED, "mask is not contiguous");
  plm_tensor no_data = in;
  no_data.data = NULL;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &no_data, &params, &mask),
                  PLM_ERR_INVALID_ARG, "in->data is NULL");

  /* Each field of each embedded struct, named in full. */
  plm_sobel_entropy_threshold_params bad = params;
  bad.entropy.range_auto = true;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &bad, &mask),
                  PLM_ERR_INVALID_ARG, "params->entropy.range_auto is set");
  bad = params;
  bad.sobel.border = (plm_border)7;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &bad, &mask),
                  PLM_ERR_INVALID_ARG, "params->sobel.border 7 is not a plm_border");
  bad = params;
  bad.entropy.window = 0;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &bad, &mask),
                  PLM_ERR_INVALID_ARG, "params->entropy.window 0 is not in 1..255");
  bad.entropy.window = 256;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &bad, &mask),
                  PLM_ERR_INVALID_ARG, "params->entropy.window 256");
  bad = params;
  bad.entropy.bins = 0; /* the magnitude is f32 even for integer input */
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in_u8, &bad, &mask),
                  PLM_ERR_INVALID_ARG, "params->entropy.bins is 0 but f32 input needs a bin count");
  bad.entropy.bins = 65537;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &bad, &mask),
                  PLM_ERR_INVALID_ARG, "params->entropy.bins 65537 is not in 0..65536");
  bad = params;
  bad.entropy.range_lo = 4.0;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &bad, &mask),
                  PLM_ERR_INVALID_ARG, "params->entropy.range_lo 4 is not below range_hi 4");
  bad.entropy.range_lo = NAN;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &bad, &mask),
                  PLM_ERR_INVALID_ARG, "params->entropy.range_lo nan is not finite");
  bad = params;
  bad.entropy.range_hi = INFINITY;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &bad, &mask),
                  PLM_ERR_INVALID_ARG, "params->entropy.range_hi inf is not finite");
  bad = params;
  bad.threshold.value = NAN;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &bad, &mask),
                  PLM_ERR_INVALID_ARG, "params->threshold.value is NaN");
  bad = params;
  bad.threshold.compare = (plm_compare)9;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &bad, &mask),
                  PLM_ERR_INVALID_ARG, "params->threshold.compare 9 is not a plm_compare");

  /* A tensor of another context. */
  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_tensor foreign = in;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &foreign, &params, &mask),
                  PLM_ERR_INVALID_ARG, "in belongs to another context than stream");
  foreign = mask;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold(plm_test_stream, &in, &params, &foreign),
                  PLM_ERR_INVALID_ARG, "mask belongs to another context than stream");
  PLM_CHECK_OK(plm_context_destroy(other));

  /* The shape queries take bare descriptions and check the same parameters. */
  plm_shape shape;
  plm_op_cost cost;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold_output(NULL, &params, &shape), PLM_ERR_INVALID_ARG,
                  "plm_sobel_entropy_threshold_output: in is NULL");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold_output(&in, &params, NULL), PLM_ERR_INVALID_ARG,
                  "mask is NULL");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold_cost(&in, &params, NULL), PLM_ERR_INVALID_ARG,
                  "cost is NULL");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold_output(&in, NULL, &shape), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  bad = params;
  bad.entropy.range_auto = true;
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold_output(&in, &bad, &shape), PLM_ERR_INVALID_ARG,
                  "plm_sobel_entropy_threshold_output: params->entropy.range_auto");
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold_cost(&in, &bad, &cost), PLM_ERR_INVALID_ARG,
                  "plm_sobel_entropy_threshold_cost: params->entropy.range_auto");
  plm_tensor broken = {.ctx = plm_test_ctx, .dtype = PLM_DTYPE_F32, .ndim = 12};
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold_output(&broken, &params, &shape), PLM_ERR_INVALID_ARG,
                  "in->ndim 12 is not in 1..4");
  broken = (plm_tensor){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {4, 0}};
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold_cost(&broken, &params, &cost), PLM_ERR_INVALID_ARG,
                  "in->dims[1] is 0");
  broken = (plm_tensor){.dtype = PLM_DTYPE_I32, .ndim = 2, .dims = {4, 4}};
  PLM_CHECK_FAILS(plm_sobel_entropy_threshold_cost(&broken, &params, &cost), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");

  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, after, mask.data, sizeof after, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert_mem_eq(before, after, sizeof before);
  plm_tensor *all[] = {&in, &mask, &wrong_shape, &as_i32, &as_f32_mask, &in_u8, &flat, &four_d};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

static Suite *fused_suite(void) {
  Suite *suite = suite_create("fused");
  TCase *tcase = tcase_create("fused");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 300);
  tcase_add_test(tcase, test_u8_equals_the_chain);
  tcase_add_test(tcase, test_u16_equals_the_chain);
  tcase_add_test(tcase, test_f32_equals_the_chain);
  tcase_add_test(tcase, test_large_frames_and_batches_equal_the_chain);
  tcase_add_test(tcase, test_a_step_edge_gives_the_mask_worked_out_by_hand);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(fused_suite);
}

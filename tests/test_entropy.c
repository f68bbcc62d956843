/* tests/test_entropy.c: the local entropy op (plume/entropy.h) on the backend under
 * test, against a float64 reference computed here with plain loops (a histogram of
 * each window, from scratch): skimage.filters.rank.entropy with a square footprint
 * for u8. Inputs go to the device with stream copies, so the same test runs on cuda. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "streams/stream_graph.h"

typedef enum { ENQUEUED, CAPTURED } run_how;

static double value_at(const void *host, plm_dtype dtype, int64_t i) {
  switch (dtype) {
    case PLM_DTYPE_U8: return ((const uint8_t *)host)[i];
    case PLM_DTYPE_U16: return ((const uint16_t *)host)[i];
    default: return ((const float *)host)[i];
  }
}

/* The bins of one frame, as plume/entropy.h states them, in double precision. */
static void reference_bins(const void *host, plm_dtype dtype, int64_t offset, int64_t size,
                           const plm_entropy_params *params, int64_t *bins_out) {
  double lo = params->range_lo, hi = params->range_hi;
  int bins = params->bins;
  if (dtype == PLM_DTYPE_F32 && params->range_auto) {
    bool seen = false;
    for (int64_t i = 0; i < size; i++) {
      double v = value_at(host, dtype, offset + i);
      if (!isfinite(v)) continue;
      if (!seen || v < lo) lo = v;
      if (!seen || v > hi) hi = v;
      seen = true;
    }
    if (!seen) lo = hi = 0;
  }
  for (int64_t i = 0; i < size; i++) {
    double v = value_at(host, dtype, offset + i);
    int64_t b;
    if (dtype == PLM_DTYPE_U8 || dtype == PLM_DTYPE_U16) {
      double levels = dtype == PLM_DTYPE_U8 ? 256.0 : 65536.0;
      b = bins == 0 ? (int64_t)v : (int64_t)floor(v * bins / levels);
    } else if (!(lo < hi) || isnan(v) || v < lo) {
      b = 0;
    } else if (v >= hi) {
      b = bins - 1;
    } else {
      b = (int64_t)floor((v - lo) * bins / (hi - lo));
      if (b > bins - 1) b = bins - 1;
    }
    bins_out[i] = b;
  }
}

/* Local entropy of one frame of bins, every window counted from scratch. */
static void reference_entropy(const int64_t *bins, int64_t height, int64_t width, int window,
                              int64_t *counts, double *out) {
  int64_t left = window / 2;
  for (int64_t y = 0; y < height; y++)
    for (int64_t x = 0; x < width; x++) {
      int64_t n = 0;
      for (int64_t r = y - left; r < y - left + window; r++)
        for (int64_t c = x - left; c < x - left + window; c++)
          if (r >= 0 && r < height && c >= 0 && c < width) {
            counts[bins[r * width + c]]++;
            n++;
          }
      double h = 0.0;
      for (int64_t r = y - left; r < y - left + window; r++)
        for (int64_t c = x - left; c < x - left + window; c++)
          if (r >= 0 && r < height && c >= 0 && c < width) {
            int64_t *count = &counts[bins[r * width + c]];
            if (*count == 0) continue;
            double p = (double)*count / (double)n;
            h -= p * log2(p);
            *count = 0;
          }
      out[y * width + x] = h;
    }
}

/* Run the op on host data of the given shape and return the largest difference from
 * the reference. Captured: the call is captured into a CUDA graph (the backend must have
 * graphs), which is launched twice, the output scribbled over in between. */
static double run_case_as(run_how how, plm_dtype dtype, int ndim, const int64_t *dims,
                          const void *host, const plm_entropy_params *params) {
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, ndim, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, ndim, dims, &out));
  int64_t count = plm_tensor_numel(&in);
  float *result = malloc((size_t)count * sizeof *result);
  ck_assert_ptr_nonnull(result);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, host, plm_tensor_bytes(&in),
                                 PLM_COPY_HOST_TO_DEVICE));
  if (how == CAPTURED) {
    plm__stream_graph *graph = NULL;
    PLM_CHECK_OK(plm__stream_graph_capture_begin(plm_test_stream));
    PLM_CHECK_OK(plm_entropy(plm_test_stream, &in, params, &out));
    PLM_CHECK_OK(plm__stream_graph_capture_end(plm_test_stream, &graph));
    PLM_CHECK_OK(plm__stream_graph_launch(graph, plm_test_stream));
    PLM_CHECK_OK(plm_stream_memset(plm_test_stream, out.data, 0xff, plm_tensor_bytes(&out)));
    PLM_CHECK_OK(plm__stream_graph_launch(graph, plm_test_stream));
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
    plm__stream_graph_destroy(graph);
  } else {
    PLM_CHECK_OK(plm_entropy(plm_test_stream, &in, params, &out));
  }
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, result, out.data, plm_tensor_bytes(&out),
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));

  int64_t height = dims[ndim - 2], width = dims[ndim - 1], size = height * width;
  int64_t *bins = malloc((size_t)size * sizeof *bins);
  int64_t *counts = calloc(65536, sizeof *counts);
  double *expected = malloc((size_t)size * sizeof *expected);
  ck_assert(bins && counts && expected);
  double worst = 0.0;
  for (int64_t offset = 0; offset < count; offset += size) {
    reference_bins(host, dtype, offset, size, params, bins);
    reference_entropy(bins, height, width, params->window, counts, expected);
    for (int64_t i = 0; i < size; i++) {
      double diff = fabs((double)result[offset + i] - expected[i]);
      if (!(diff <= worst)) worst = isnan(diff) ? INFINITY : diff;
    }
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
  free(bins);
  free(counts);
  free(expected);
  free(result);
  return worst;
}

static double run_case(plm_dtype dtype, int ndim, const int64_t *dims, const void *host,
                       const plm_entropy_params *params) {
  return run_case_as(ENQUEUED, dtype, ndim, dims, host, params);
}

/* count random integers below `levels` as dtype (u8 or u16). */
static void *random_ints(plm_dtype dtype, int64_t count, uint32_t levels, uint64_t seed) {
  void *host = malloc((size_t)count * plm_dtype_size(dtype));
  ck_assert_ptr_nonnull(host);
  uint64_t state = seed | 1;
  for (int64_t i = 0; i < count; i++) {
    uint32_t v = (uint32_t)(plm_test_random(&state) % levels);
    if (dtype == PLM_DTYPE_U8)
      ((uint8_t *)host)[i] = (uint8_t)v;
    else
      ((uint16_t *)host)[i] = (uint16_t)v;
  }
  return host;
}

static const int windows[] = {1, 2, 3, 4, 5, 8, 15, 16, 33};
enum { WINDOW_COUNT = sizeof windows / sizeof windows[0] };
static const int64_t small_shapes[][3] = {{1, 1}, {1, 40}, {40, 1}, {7, 13}, {37, 29}, {3, 7, 13}};
static const int small_ndims[] = {2, 2, 2, 2, 2, 3};
enum { SHAPE_COUNT = sizeof small_ndims / sizeof small_ndims[0] };

static int64_t numel(int ndim, const int64_t *dims) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= dims[d];
  return n;
}

/* Every small shape and window on integer input with values below `levels`. */
static void check_integer_cases(plm_dtype dtype, uint32_t levels, int bins) {
  for (int s = 0; s < SHAPE_COUNT; s++)
    for (int w = 0; w < WINDOW_COUNT; w++) {
      int64_t count = numel(small_ndims[s], small_shapes[s]);
      void *host = random_ints(dtype, count, levels, 1234567u + (uint64_t)(s * 100 + w));
      plm_entropy_params params = {.window = windows[w], .bins = bins};
      double worst = run_case(dtype, small_ndims[s], small_shapes[s], host, &params);
      ck_assert_msg(worst < 1e-4, "%s levels %u bins %d shape %d window %d: off by %g",
                    plm_dtype_name(dtype), levels, bins, s, windows[w], worst);
      free(host);
    }
}

/* The process's first entropy (this test runs first) captured into a CUDA graph, each
 * kind of table read: the differences from shared memory (u8), c log2 c for a summed fill
 * (two bins), the differences from the device's table (u16, window 33, histograms in
 * device memory). The tables are in the device data; no call copies them (there was one,
 * synchronous, which a capture refused). */
START_TEST(test_first_calls_captured_into_a_graph_match_the_reference) {
  if (!plm__stream_graph_supported(plm_test_ctx)) {
    printf("SKIP test_first_calls_captured_into_a_graph_match_the_reference: no graphs on this "
           "backend\n");
    return;
  }
  const int64_t dims[] = {2, 37, 29};
  const struct {
    plm_dtype dtype;
    uint32_t levels;
    plm_entropy_params params;
  } cases[] = {
      {PLM_DTYPE_U8, 256, {.window = 5}},
      {PLM_DTYPE_U8, 256, {.window = 16, .bins = 2}},
      {PLM_DTYPE_U16, 65536, {.window = 33}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    void *host = random_ints(cases[i].dtype, numel(3, dims), cases[i].levels, 99u + i);
    double worst = run_case_as(CAPTURED, cases[i].dtype, 3, dims, host, &cases[i].params);
    ck_assert_msg(worst < 1e-4, "case %zu: off by %g", i, worst);
    free(host);
  }
}
END_TEST

START_TEST(test_u8_value_as_bin_matches_the_reference) {
  check_integer_cases(PLM_DTYPE_U8, 256, 0);
  check_integer_cases(PLM_DTYPE_U8, 5, 0); /* few values: large counts */
}
END_TEST

START_TEST(test_u8_with_16_bins_matches_the_reference) {
  check_integer_cases(PLM_DTYPE_U8, 256, 16);
  check_integer_cases(PLM_DTYPE_U8, 256, 3);
}
END_TEST

START_TEST(test_u16_value_as_bin_and_binned_match_the_reference) {
  check_integer_cases(PLM_DTYPE_U16, 65536, 0);
  check_integer_cases(PLM_DTYPE_U16, 7, 0);
  check_integer_cases(PLM_DTYPE_U16, 65536, 1000);
}
END_TEST

/* u16 with its default 65536 bins, on more columns and segments than the CUDA
 * kernel has warps (it gives each warp one histogram of 65536 counts, and at most
 * 2048 of them): warps take several tasks and must leave their histograms zeroed.
 * Also few distinct values (large counts) and a window wider than most frames. */
START_TEST(test_u16_default_bins_on_many_columns) {
  const int64_t dims[3] = {2, 300, 257};
  plm_entropy_params params = {.window = 16};
  void *host = random_ints(PLM_DTYPE_U16, 2 * 300 * 257, 65536, 31);
  double worst = run_case(PLM_DTYPE_U16, 3, dims, host, &params);
  ck_assert_msg(worst < 1e-4, "u16 65536 values, window 16: off by %g", worst);
  free(host);
  host = random_ints(PLM_DTYPE_U16, 2 * 300 * 257, 3, 32);
  params.window = 33;
  worst = run_case(PLM_DTYPE_U16, 3, dims, host, &params);
  ck_assert_msg(worst < 1e-4, "u16 3 values, window 33: off by %g", worst);
  free(host);
  const int64_t wide[2] = {70, 2100};
  host = random_ints(PLM_DTYPE_U16, 70 * 2100, 65536, 33);
  params.window = 5;
  worst = run_case(PLM_DTYPE_U16, 2, wide, host, &params);
  ck_assert_msg(worst < 1e-4, "u16 70x2100, window 5: off by %g", worst);
  free(host);
}
END_TEST

START_TEST(test_large_frame_and_batch_with_window_16) {
  const int64_t dims[2] = {257, 255}, batch[3] = {3, 64, 50};
  plm_entropy_params params = {.window = 16};
  void *host = random_ints(PLM_DTYPE_U8, 257 * 255, 256, 99);
  ck_assert(run_case(PLM_DTYPE_U8, 2, dims, host, &params) < 1e-4);
  free(host);
  host = random_ints(PLM_DTYPE_U8, 257 * 255, 20, 98);
  ck_assert(run_case(PLM_DTYPE_U8, 2, dims, host, &params) < 1e-4);
  free(host);
  host = random_ints(PLM_DTYPE_U8, 3 * 64 * 50, 256, 97);
  ck_assert(run_case(PLM_DTYPE_U8, 3, batch, host, &params) < 1e-4);
  params.window = 255; /* a window larger than the frame */
  ck_assert(run_case(PLM_DTYPE_U8, 3, batch, host, &params) < 1e-4);
  free(host);
}
END_TEST

/* Batches of 100 and 600 frames of 32 x 32: right in every frame, and the scratch the op
 * takes from the pool grows by no more than the header says (plume/entropy.h): on host 16
 * bytes per frame (each frame's range; it once held 2 bytes per pixel of the batch), on
 * cuda none (u8's 256 bins fit the shared-memory histograms, and no range is found). */
START_TEST(test_long_batches_are_right_and_their_host_scratch_does_not_grow) {
  const int64_t frames[2] = {100, 600};
  uint64_t scratch[2];
  for (int k = 0; k < 2; k++) {
    const int64_t dims[3] = {frames[k], 32, 32}, pixels = frames[k] * 32 * 32;
    void *host = random_ints(PLM_DTYPE_U8, pixels, 256, 96 + (uint64_t)k);
    plm_entropy_params params = {.window = 16};
    ck_assert(run_case(PLM_DTYPE_U8, 3, dims, host, &params) < 1e-4);
    free(host);
    plm_pool_stats stats;
    PLM_CHECK_OK(plm_pool_stats_get(plm_test_pool, &stats));
    /* The peak held the input and output (5 bytes per pixel) and the scratch. */
    scratch[k] = stats.peak_bytes_in_use - (uint64_t)pixels * 5;
  }
  const uint64_t per_frame = plm_test_backend == PLM_BACKEND_HOST ? 16 : 0;
  ck_assert_msg(scratch[1] <= scratch[0] + 500 * per_frame + 256,
                "entropy's scratch grew from %llu bytes (100 frames) to %llu (600 frames)",
                (unsigned long long)scratch[0], (unsigned long long)scratch[1]);
}
END_TEST

START_TEST(test_known_values) {
  /* [0 1; 2 3] with w = 3: every window holds all four values, 2 bits. With w = 2 the
   * window at (y, x) covers y-1..y and x-1..x: (0,0) sees one pixel, (1,1) all four. */
  const int64_t dims[2] = {2, 2};
  const uint8_t host[4] = {0, 1, 2, 3};
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &out));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, host, 4, PLM_COPY_HOST_TO_DEVICE));
  float three[4], two[4];
  plm_entropy_params params = {.window = 3};
  PLM_CHECK_OK(plm_entropy(plm_test_stream, &in, &params, &out));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, three, out.data, sizeof three, PLM_COPY_DEVICE_TO_HOST));
  params.window = 2;
  PLM_CHECK_OK(plm_entropy(plm_test_stream, &in, &params, &out));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, two, out.data, sizeof two, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  for (int i = 0; i < 4; i++) ck_assert_float_eq_tol(three[i], 2.0f, 1e-6f);
  ck_assert_float_eq_tol(two[0], 0.0f, 1e-6f);
  ck_assert_float_eq_tol(two[1], 1.0f, 1e-6f);
  ck_assert_float_eq_tol(two[2], 1.0f, 1e-6f);
  ck_assert_float_eq_tol(two[3], 2.0f, 1e-6f);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
}
END_TEST

/* f32 values around [lo, hi): below, inside, exactly at bin edges and hi, above, NaN
 * and infinities. */
static float *random_floats(int64_t count, double lo, double hi, uint64_t seed) {
  float *host = malloc((size_t)count * sizeof *host);
  ck_assert_ptr_nonnull(host);
  uint64_t state = seed | 1;
  for (int64_t i = 0; i < count; i++) {
    uint64_t r = plm_test_random(&state);
    double span = hi - lo;
    float v = (float)(lo - 0.25 * span + 1.5 * span * (double)(r % 100000) / 100000.0);
    switch (r % 23) {
      case 0: v = NAN; break;
      case 1: v = (float)hi; break;
      case 2: v = (float)lo; break;
      case 3: v = (r & 64) ? INFINITY : -INFINITY; break;
      case 4: v = (float)(lo + span * (double)(r % 8) / 8.0); break; /* bin edges */
      default: break;
    }
    host[i] = v;
  }
  return host;
}

START_TEST(test_f32_fixed_range_matches_the_reference) {
  const int bin_counts[] = {1, 8, 256, 65536};
  for (int s = 0; s < SHAPE_COUNT; s++)
    for (int w = 0; w < WINDOW_COUNT; w++)
      for (int b = 0; b < 4; b++) {
        int64_t count = numel(small_ndims[s], small_shapes[s]);
        float *host = random_floats(count, -2.0, 6.0, 777u + (uint64_t)(s * 1000 + w * 10 + b));
        plm_entropy_params params = {
            .window = windows[w], .bins = bin_counts[b], .range_lo = -2.0, .range_hi = 6.0};
        double worst = run_case(PLM_DTYPE_F32, small_ndims[s], small_shapes[s], host, &params);
        ck_assert_msg(worst < 1e-4, "shape %d window %d bins %d: off by %g", s, windows[w],
                      bin_counts[b], worst);
        free(host);
      }
}
END_TEST

START_TEST(test_f32_auto_range_matches_the_reference_per_frame) {
  const int64_t dims[3] = {4, 23, 19};
  const int64_t size = 23 * 19;
  for (int w = 0; w < WINDOW_COUNT; w++) {
    float *host = random_floats(4 * size, 10.0, 50.0, 4242u + (uint64_t)w);
    for (int64_t i = 0; i < size; i++) host[size + i] = 3.5f; /* a constant frame */
    for (int64_t i = 0; i < size; i++) host[2 * size + i] = (i % 3) ? NAN : INFINITY;
    for (int64_t i = 0; i < size; i++) host[3 * size + i] *= 1000.0f; /* another range */
    plm_entropy_params params = {.window = windows[w], .bins = 32, .range_auto = true};
    double worst = run_case(PLM_DTYPE_F32, 3, dims, host, &params);
    ck_assert_msg(worst < 1e-4, "window %d: off by %g", windows[w], worst);
    free(host);
  }
}
END_TEST

START_TEST(test_output_shape_and_cost) {
  const int64_t dims[3] = {4, 6, 8};
  plm_tensor in;
  uint16_t storage[4 * 6 * 8];
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U16, 3, dims, &in));
  plm_entropy_params params = {.window = 5};
  plm_shape shape;
  PLM_CHECK_OK(plm_entropy_output(&in, &params, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_F32);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert_int_eq(shape.dims[0], 4);
  ck_assert_int_eq(shape.dims[2], 8);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_entropy_cost(&in, &params, &cost));
  ck_assert(cost.bytes == 192.0 * 6.0 && cost.flops == 192.0 * 34.0);
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t dims[2] = {8, 8}, other_dims[2] = {8, 9}, line[1] = {8};
  plm_tensor in, out, wrong_shape, as_i32, as_u8_out, in_u8, flat;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &out));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, other_dims, &wrong_shape));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &as_i32));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &as_u8_out));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &in_u8));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 1, line, &flat));
  plm_entropy_params params = {.window = 3, .bins = 8, .range_lo = 0, .range_hi = 1};

  PLM_CHECK_FAILS(plm_entropy(NULL, &in, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_entropy: stream is NULL");
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, NULL, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_entropy: in is NULL");
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, NULL, &out), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &params, NULL), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &as_i32, &params, &out), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &flat, &params, &out), PLM_ERR_INVALID_ARG,
                  "in->ndim 1");
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &params, &as_u8_out), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &params, &wrong_shape), PLM_ERR_INVALID_ARG,
                  "out is 8x9 but in is 8x8");
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &params, &in), PLM_ERR_INVALID_ARG,
                  "out overlaps in");
  plm_tensor shifted = out;
  shifted.data = (char *)in.data + 4;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &params, &shifted), PLM_ERR_INVALID_ARG,
                  "out overlaps in");

  plm_entropy_params bad = params;
  bad.window = 0;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->window 0 is not in 1..255");
  bad.window = 256;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->window 256");
  bad = params;
  bad.bins = -1;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->bins -1 is not in 0..65536");
  bad.bins = 65537;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in_u8, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->bins 65537");
  bad.bins = 0;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->bins is 0 but f32 input needs a bin count");
  bad = params;
  bad.range_lo = 1;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->range_lo 1 is not below range_hi 1");
  bad.range_lo = 2;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->range_lo 2 is not below range_hi 1");
  bad.range_lo = NAN;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->range_lo nan is not finite");
  bad = params;
  bad.range_hi = NAN;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->range_hi nan is not finite");
  bad.range_hi = INFINITY;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->range_hi inf is not finite");
  /* The range does not matter with range_auto, nor for integer input. */
  bad.range_auto = true;
  plm_shape shape;
  PLM_CHECK_OK(plm_entropy_output(&in, &bad, &shape));
  bad = (plm_entropy_params){.window = 3, .range_lo = NAN};
  PLM_CHECK_OK(plm_entropy_output(&in_u8, &bad, &shape));
  bad.window = 0;
  PLM_CHECK_FAILS(plm_entropy_output(&in_u8, &bad, &shape), PLM_ERR_INVALID_ARG,
                  "plm_entropy_output: params->window 0");
  plm_op_cost cost;
  PLM_CHECK_FAILS(plm_entropy_cost(&in_u8, &bad, &cost), PLM_ERR_INVALID_ARG,
                  "plm_entropy_cost: params->window 0");

  plm_tensor strided = out;
  strided.strides[0] = 16;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &params, &strided), PLM_ERR_UNSUPPORTED,
                  "out is not contiguous");
  plm_tensor no_data = out;
  no_data.data = NULL;
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &in, &params, &no_data), PLM_ERR_INVALID_ARG,
                  "out->data is NULL");

  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&in, &out, &wrong_shape, &as_i32, &as_u8_out, &in_u8, &flat};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

static Suite *entropy_suite(void) {
  Suite *suite = suite_create("entropy");
  TCase *tcase = tcase_create("entropy");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_first_calls_captured_into_a_graph_match_the_reference); /* first */
  tcase_add_test(tcase, test_u8_value_as_bin_matches_the_reference);
  tcase_add_test(tcase, test_u8_with_16_bins_matches_the_reference);
  tcase_add_test(tcase, test_u16_value_as_bin_and_binned_match_the_reference);
  tcase_add_test(tcase, test_large_frame_and_batch_with_window_16);
  tcase_add_test(tcase, test_u16_default_bins_on_many_columns);
  tcase_add_test(tcase, test_long_batches_are_right_and_their_host_scratch_does_not_grow);
  tcase_add_test(tcase, test_known_values);
  tcase_add_test(tcase, test_f32_fixed_range_matches_the_reference);
  tcase_add_test(tcase, test_f32_auto_range_matches_the_reference_per_frame);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(entropy_suite);
}

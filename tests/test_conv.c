/* tests/test_conv.c: the conv2d and sobel ops (plume/conv.h) on the backend under
 * test, against a float64 reference computed here with plain loops (scipy's
 * ndimage.correlate with modes constant / nearest / mirror, and cv2.Sobel with
 * ksize 3). Inputs go to the device with stream copies, so the same test runs on
 * cuda. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "filter_reference.h"

/* ---- the reference ------------------------------------------------------------------ */

static double reference_pixel(const double *frame, int64_t h, int64_t w, int64_t y, int64_t x,
                              plm_border border) {
  int64_t r = filter_border_index(y, h, border), c = filter_border_index(x, w, border);
  return r < 0 || c < 0 ? 0.0 : frame[r * w + c];
}

/* One output of the correlation of frame with taps (kh x kw) at input origin
 * (y0, x0), and the sum of the absolute terms (the scale of f32 rounding). */
static double reference_correlate(const double *frame, int64_t h, int64_t w, const double *taps,
                                  int kh, int kw, int64_t y0, int64_t x0, plm_border border,
                                  double *scale) {
  double sum = 0.0;
  for (int i = 0; i < kh; i++)
    for (int j = 0; j < kw; j++) {
      double term = taps[i * kw + j] * reference_pixel(frame, h, w, y0 + i, x0 + j, border);
      sum += term;
      *scale += fabs(term);
    }
  return sum;
}

/* ---- helpers ------------------------------------------------------------------------ */

/* A host image of dtype and `count` elements, random, and the same as doubles. */
static void *make_image(plm_dtype dtype, int64_t count, double *as_double, uint64_t seed) {
  void *host = malloc((size_t)count * plm_dtype_size(dtype));
  ck_assert_ptr_nonnull(host);
  uint64_t state = seed | 1;
  for (int64_t i = 0; i < count; i++) {
    uint64_t r = plm_test_random(&state);
    switch (dtype) {
      case PLM_DTYPE_U8: ((uint8_t *)host)[i] = (uint8_t)r; break;
      case PLM_DTYPE_U16: ((uint16_t *)host)[i] = (uint16_t)r; break;
      default: ((float *)host)[i] = (float)((double)(r % 20001) / 100.0 - 100.0);
    }
    as_double[i] = dtype == PLM_DTYPE_U8    ? ((uint8_t *)host)[i]
                   : dtype == PLM_DTYPE_U16 ? ((uint16_t *)host)[i]
                                            : ((float *)host)[i];
  }
  return host;
}

static void upload(plm_tensor *t, const void *host) {
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, t->data, host, plm_tensor_bytes(t),
                                 PLM_COPY_HOST_TO_DEVICE));
}

/* ---- conv2d ------------------------------------------------------------------------- */

/* Run conv2d with a random kh x kw kernel and compare with the reference; returns
 * the number of mismatches. */
static int64_t run_conv2d(plm_dtype dtype, filter_shape shape, int kh, int kw,
                          plm_conv2d_params params, uint64_t seed) {
  int64_t n, h, w;
  filter_frame_dims(&shape, &n, &h, &w);
  int64_t ho = (h + 2 * params.pad_y - kh) / params.stride_y + 1;
  int64_t wo = (w + 2 * params.pad_x - kw) / params.stride_x + 1;
  ck_assert(ho >= 1 && wo >= 1);
  filter_shape out_shape = shape;
  out_shape.dims[shape.ndim - 2] = ho;
  out_shape.dims[shape.ndim - 1] = wo;
  const int64_t kernel_dims[2] = {kh, kw};

  plm_tensor in, kernel, out;
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, shape.ndim, shape.dims, &in));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, kernel_dims, &kernel));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, shape.ndim,
                                out_shape.dims, &out));
  plm_shape expected;
  PLM_CHECK_OK(plm_conv2d_output(&in, &kernel, &params, &expected));
  ck_assert_int_eq(expected.ndim, shape.ndim);
  ck_assert_int_eq(expected.dims[shape.ndim - 2], ho);
  ck_assert_int_eq(expected.dims[shape.ndim - 1], wo);

  int64_t count = n * h * w;
  double *image = malloc((size_t)count * sizeof *image);
  double *taps = malloc((size_t)(kh * kw) * sizeof *taps);
  float *taps_f32 = malloc((size_t)(kh * kw) * sizeof *taps_f32);
  ck_assert(image && taps && taps_f32);
  void *host = make_image(dtype, count, image, seed);
  uint64_t state = seed * 3 + 1;
  for (int t = 0; t < kh * kw; t++) {
    taps_f32[t] = (float)((double)(plm_test_random(&state) % 2001) / 1000.0 - 1.0);
    taps[t] = taps_f32[t];
  }
  upload(&in, host);
  upload(&kernel, taps_f32);
  PLM_CHECK_OK(plm_conv2d(plm_test_stream, &in, &kernel, &params, &out));
  float *result = plm_test_download(&out);

  int64_t mismatches = 0;
  for (int64_t f = 0; f < n; f++)
    for (int64_t y = 0; y < ho; y++)
      for (int64_t x = 0; x < wo; x++) {
        double scale = 0.0;
        double want = reference_correlate(
            image + f * h * w, h, w, taps, kh, kw, y * params.stride_y - params.pad_y,
            x * params.stride_x - params.pad_x, params.border, &scale);
        float got = result[(f * ho + y) * wo + x];
        if (!filter_close_enough(got, want, scale)) {
          if (mismatches < 3)
            fprintf(stderr, "conv2d: frame %lld (%lld, %lld): got %.9g, want %.9g\n", (long long)f,
                    (long long)y, (long long)x, (double)got, want);
          mismatches++;
        }
      }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &kernel));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
  free(host);
  free(result);
  free(image);
  free(taps);
  free(taps_f32);
  return mismatches;
}

static plm_conv2d_params conv_params(int stride_y, int stride_x, int pad_y, int pad_x,
                                     plm_border border) {
  plm_conv2d_params params = plm_conv2d_params_default();
  params.stride_y = stride_y;
  params.stride_x = stride_x;
  params.pad_y = pad_y;
  params.pad_x = pad_x;
  params.border = border;
  return params;
}

START_TEST(test_conv2d_same_size_matches_for_every_shape_dtype_border_and_kernel) {
  static const int kernels[][2] = {{1, 1}, {3, 3}, {5, 3}, {1, 7}};
  for (size_t s = 0; s < FILTER_SHAPES; s++)
    for (size_t t = 0; t < 3; t++)
      for (size_t b = 0; b < 3; b++)
        for (size_t k = 0; k < 4; k++) {
          int kh = kernels[k][0], kw = kernels[k][1];
          plm_conv2d_params params = conv_params(1, 1, kh / 2, kw / 2, filter_borders[b]);
          int64_t bad = run_conv2d(filter_dtypes[t], filter_shapes[s], kh, kw, params,
                                   1000 + s * 97 + t * 13 + b * 5 + k);
          ck_assert_msg(bad == 0, "%lld mismatches: shape %zu, dtype %s, border %d, kernel %dx%d",
                        (long long)bad, s, plm_dtype_name(filter_dtypes[t]), (int)filter_borders[b],
                        kh, kw);
        }
}
END_TEST

START_TEST(test_conv2d_strides_and_paddings_match) {
  static const int cases[][4] = {
      /* stride_y, stride_x, pad_y, pad_x */
      {1, 1, 0, 0}, {2, 3, 0, 0}, {2, 2, 1, 2}, {3, 1, 4, 0}, {1, 2, 2, 2}, {4, 5, 3, 1}};
  static const int kernels[][2] = {{3, 3}, {5, 3}, {1, 7}};
  const filter_shape tested[] = {filter_shapes[3], filter_shapes[4], filter_shapes[5]};
  for (size_t s = 0; s < 3; s++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
      for (size_t b = 0; b < 3; b++)
        for (size_t k = 0; k < 3; k++) {
          plm_conv2d_params params =
              conv_params(cases[c][0], cases[c][1], cases[c][2], cases[c][3], filter_borders[b]);
          plm_dtype dtype = filter_dtypes[(s + c + k) % 3];
          int64_t bad = run_conv2d(dtype, tested[s], kernels[k][0], kernels[k][1], params,
                                   7000 + s * 31 + c * 7 + b * 3 + k);
          ck_assert_msg(bad == 0, "%lld mismatches: shape %zu, case %zu, border %d, kernel %zu",
                        (long long)bad, s, c, (int)filter_borders[b], k);
        }
}
END_TEST

START_TEST(test_conv2d_padding_beyond_the_image_reflects_repeatedly) {
  const filter_shape small[] = {{2, {7, 13}}, {2, {1, 5}}, {2, {2, 1}}, {3, {2, 3, 4}}};
  for (size_t s = 0; s < 4; s++)
    for (size_t b = 0; b < 3; b++) {
      plm_conv2d_params params = conv_params(1, 2, 9, 20, filter_borders[b]);
      ck_assert_int_eq(run_conv2d(PLM_DTYPE_F32, small[s], 3, 3, params, 50 + s * 3 + b), 0);
      params = conv_params(3, 1, 30, 11, filter_borders[b]);
      ck_assert_int_eq(run_conv2d(PLM_DTYPE_U8, small[s], 5, 3, params, 90 + s * 3 + b), 0);
    }
}
END_TEST

START_TEST(test_conv2d_31x31_kernel_on_small_images) {
  const filter_shape small[] = {{2, {20, 25}}, {2, {31, 40}}, {3, {2, 33, 31}}, {2, {1, 1}}};
  for (size_t s = 0; s < 4; s++)
    for (size_t b = 0; b < 3; b++) {
      plm_conv2d_params same = conv_params(1, 1, 15, 15, filter_borders[b]);
      ck_assert_int_eq(
          run_conv2d(filter_dtypes[(s + b) % 3], small[s], 31, 31, same, 300 + s * 3 + b), 0);
      if (s == 3) continue; /* 1x1 has no valid 31x31 output */
      plm_conv2d_params strided = conv_params(2, 3, 0, 4, filter_borders[b]);
      if (small[s].dims[small[s].ndim - 2] >= 31)
        ck_assert_int_eq(run_conv2d(PLM_DTYPE_F32, small[s], 31, 31, strided, 400 + s * 3 + b), 0);
    }
}
END_TEST

/* The CUDA tiled kernel's runs (kernels/cuda/conv.cu: at stride_x 1 each thread sums 7
 * outputs side by side, a 16 x 16 block 112 x 16 of them) at their edges: outputs whose
 * width is not a multiple of the run nor of the tile (1, 6, 8, 111, 113, 225), a taps'
 * width below, at and above the run (3, 7, 9, 15), vertical strides (which keep the runs)
 * and horizontal ones (which do not), no padding, "same" and past the image, every border
 * and input dtype taking turns. Every backend runs the same cases. */
START_TEST(test_conv2d_runs_of_outputs_match_at_their_edges) {
  static const int kernels[][2] = {{9, 9}, {3, 3}, {7, 7}, {1, 9}, {5, 15}, {9, 3}};
  static const filter_shape images[] = {{2, {17, 113}}, {2, {40, 225}}, {2, {3, 111}},
                                        {3, {2, 9, 8}}, {2, {9, 6}},    {2, {20, 1}}};
  static const int strides[][2] = {{1, 1}, {2, 1}, {3, 1}, {1, 2}};
  int cases = 0;
  for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
    for (size_t s = 0; s < sizeof images / sizeof images[0]; s++)
      for (size_t st = 0; st < sizeof strides / sizeof strides[0]; st++)
        for (int pad = 0; pad < 3; pad++) {
          const int kh = kernels[k][0], kw = kernels[k][1];
          /* none, "same", and past the image on both sides */
          const int pad_y = pad == 0 ? 0 : pad == 1 ? kh / 2 : kh + 2;
          const int pad_x = pad == 0 ? 0 : pad == 1 ? kw / 2 : kw + 5;
          int64_t n, h, w;
          filter_frame_dims(&images[s], &n, &h, &w);
          if (h + 2 * pad_y < kh || w + 2 * pad_x < kw) continue; /* no output */
          const plm_border border = filter_borders[cases % 3];
          const plm_dtype dtype = filter_dtypes[(cases / 3) % 3];
          plm_conv2d_params params =
              conv_params(strides[st][0], strides[st][1], pad_y, pad_x, border);
          int64_t bad = run_conv2d(dtype, images[s], kh, kw, params, 900 + (uint64_t)cases);
          ck_assert_msg(bad == 0,
                        "%lld mismatches: %dx%d taps, image %zu, strides %d, %d, pads %d, %d, "
                        "border %d, %s",
                        (long long)bad, kh, kw, s, strides[st][0], strides[st][1], pad_y, pad_x,
                        (int)border, plm_dtype_name(dtype));
          cases++;
        }
  ck_assert_int_eq(cases, 364); /* every case with an output ran */
}
END_TEST

/* Every kernel width from 1 to 20: the CPU kernel adds a row's taps in passes of nine and
 * one pass of the rest (kernels/cpu/conv.c's add_taps: groups of three, then one or two
 * single taps), so these give each form of the rest after none, one and two passes of
 * nine. Every backend runs the same cases. */
START_TEST(test_conv2d_every_kernel_width_to_20) {
  const filter_shape image = {2, {11, 70}};
  for (int kw = 1; kw <= 20; kw++) {
    const int kh = 1 + kw % 3;
    const plm_conv2d_params params = conv_params(1, 1, kh / 2, kw / 2, filter_borders[kw % 3]);
    const int64_t bad =
        run_conv2d(filter_dtypes[kw % 3], image, kh, kw, params, 5000 + (uint64_t)kw);
    ck_assert_msg(bad == 0, "%lld mismatches: %dx%d taps", (long long)bad, kh, kw);
  }
}
END_TEST

/* Padding at the limit (PLM_CONV2D_MAX_PAD) on a tiny image: a padded row would be
 * 2^21 floats, and the CPU kernel once staged whole padded rows, one per kernel row,
 * whatever the output. Its buffers are now bounded by the output and the kernel. */
START_TEST(test_conv2d_huge_padding_on_a_small_image) {
  const filter_shape tiny = {2, {3, 4}}, batch = {3, {2, 3, 4}};
  const int max = PLM_CONV2D_MAX_PAD;
  /* The outputs 2^21 columns wide take half a minute a border on the emulated GPU: there
   * each seed takes every other border of them (tests/harness.h's sweeps). */
  plm_test_sweep wide_outputs = plm_test_sweep_start("outputs 2^21 wide", 2);
  for (size_t b = 0; b < 3; b++) {
    /* Strides that leave a few outputs: one on the image, the others 2^20 away. (The
     * reference mirrors step by step, so reflect101 this far out is slow for it.) */
    plm_conv2d_params sparse = conv_params(max, max, max, max, filter_borders[b]);
    ck_assert_int_eq(run_conv2d(PLM_DTYPE_F32, tiny, 3, 3, sparse, 800 + b), 0);
    ck_assert_int_eq(run_conv2d(PLM_DTYPE_U8, batch, 5, 3, sparse, 810 + b), 0);
    if (filter_borders[b] == PLM_BORDER_REFLECT101 || !plm_test_sweep_take(&wide_outputs)) continue;
    /* Every column of an output 2^21 columns wide, with the widest kernel. */
    plm_conv2d_params wide = conv_params(1, 1, 0, max, filter_borders[b]);
    ck_assert_int_eq(run_conv2d(PLM_DTYPE_F32, tiny, 3, 31, wide, 820 + b), 0);
    ck_assert_int_eq(run_conv2d(PLM_DTYPE_U16, tiny, 1, 1,
                                conv_params(1, 3, 5, max, filter_borders[b]), 830 + b),
                     0);
  }
  plm_test_sweep_finish(&wide_outputs);
}
END_TEST

/* Strides so large that a GPU tile with its halo would not fit in shared memory
 * (the CUDA backend then reads every tap from global memory). */
START_TEST(test_conv2d_large_strides_with_large_kernels) {
  const filter_shape images[] = {{2, {100, 120}}, {3, {2, 64, 97}}};
  for (size_t s = 0; s < 2; s++)
    for (size_t b = 0; b < 3; b++) {
      plm_conv2d_params params = conv_params(9, 10, 5, 7, filter_borders[b]);
      ck_assert_int_eq(run_conv2d(PLM_DTYPE_U16, images[s], 31, 29, params, 600 + s * 3 + b), 0);
      params = conv_params(33, 2, 0, 31, filter_borders[b]);
      ck_assert_int_eq(run_conv2d(PLM_DTYPE_F32, images[s], 17, 31, params, 700 + s * 3 + b), 0);
    }
}
END_TEST

/* Outputs with more tile rows (16 rows each) than a CUDA grid has rows (65535), and
 * batches with more frames than it has layers (65535): the CUDA kernels walk the
 * tiles in grid-stride loops rather than refusing such shapes. Small in memory: one
 * column of 1,100,000 pixels (4.4 MB as f32) and 70,000 frames of 2 x 3. Every run
 * reaches both edges; the three tall outputs (dtypes, borders, and the direct kernel)
 * take about ten seconds each on the emulated GPU, where each seed takes some of them
 * (tests/harness.h's sweeps: CI's two seeds take all three between them). */
START_TEST(test_conv2d_outputs_beyond_one_grid) {
  const filter_shape tall = {2, {1100000, 1}}, deep = {3, {70000, 2, 3}};
  ck_assert_int_eq(
      run_conv2d(PLM_DTYPE_U8, deep, 3, 3, conv_params(1, 1, 1, 1, PLM_BORDER_REPLICATE), 33), 0);
  plm_test_sweep tall_outputs = plm_test_sweep_start("outputs of 68,750 tile rows", 2);
  if (plm_test_sweep_take(&tall_outputs))
    ck_assert_int_eq(
        run_conv2d(PLM_DTYPE_F32, tall, 3, 1, conv_params(1, 1, 1, 0, PLM_BORDER_REFLECT101), 31),
        0);
  if (plm_test_sweep_take(&tall_outputs))
    ck_assert_int_eq(
        run_conv2d(PLM_DTYPE_U16, tall, 5, 1, conv_params(1, 1, 0, 0, PLM_BORDER_ZERO), 32), 0);
  /* The direct kernel (stride_x 1000: a tile too wide for shared memory) too. */
  if (plm_test_sweep_take(&tall_outputs))
    ck_assert_int_eq(
        run_conv2d(PLM_DTYPE_F32, tall, 3, 1, conv_params(1, 1000, 1, 0, PLM_BORDER_ZERO), 34), 0);
  plm_test_sweep_finish(&tall_outputs);
}
END_TEST

/* ---- sobel -------------------------------------------------------------------------- */

enum { WANT_GX = 1, WANT_GY = 2, WANT_MAGNITUDE = 4 };

static int64_t run_sobel(plm_dtype dtype, filter_shape shape, plm_border border, int want,
                         uint64_t seed) {
  static const double taps_x[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
  static const double taps_y[9] = {-1, -2, -1, 0, 0, 0, 1, 2, 1};
  int64_t n, h, w;
  filter_frame_dims(&shape, &n, &h, &w);
  plm_tensor in, outs[3];
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, shape.ndim, shape.dims, &in));
  for (int o = 0; o < 3; o++)
    PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, shape.ndim,
                                  shape.dims, &outs[o]));
  int64_t count = n * h * w;
  double *image = malloc((size_t)count * sizeof *image);
  ck_assert_ptr_nonnull(image);
  void *host = make_image(dtype, count, image, seed);
  upload(&in, host);
  plm_sobel_params params = plm_sobel_params_default();
  params.border = border;
  PLM_CHECK_OK(plm_sobel(plm_test_stream, &in, &params, (want & WANT_GX) ? &outs[0] : NULL,
                         (want & WANT_GY) ? &outs[1] : NULL,
                         (want & WANT_MAGNITUDE) ? &outs[2] : NULL));
  float *results[3] = {NULL, NULL, NULL};
  for (int o = 0; o < 3; o++)
    if (want & (1 << o)) results[o] = plm_test_download(&outs[o]);

  int64_t mismatches = 0;
  for (int64_t f = 0; f < n; f++)
    for (int64_t y = 0; y < h; y++)
      for (int64_t x = 0; x < w; x++) {
        double scale = 0.0;
        const double *frame = image + f * h * w;
        double gx = reference_correlate(frame, h, w, taps_x, 3, 3, y - 1, x - 1, border, &scale);
        double gy = reference_correlate(frame, h, w, taps_y, 3, 3, y - 1, x - 1, border, &scale);
        double want_values[3] = {gx, gy, sqrt(gx * gx + gy * gy)};
        for (int o = 0; o < 3; o++) {
          if (!results[o]) continue;
          float got = results[o][(f * h + y) * w + x];
          if (!filter_close_enough(got, want_values[o], scale)) {
            if (mismatches < 3)
              fprintf(stderr, "sobel output %d: frame %lld (%lld, %lld): got %.9g, want %.9g\n", o,
                      (long long)f, (long long)y, (long long)x, (double)got, want_values[o]);
            mismatches++;
          }
        }
      }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  for (int o = 0; o < 3; o++) {
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &outs[o]));
    free(results[o]);
  }
  free(host);
  free(image);
  return mismatches;
}

START_TEST(test_sobel_matches_for_every_shape_dtype_border_and_output_set) {
  const int wants[] = {WANT_GX, WANT_GY, WANT_MAGNITUDE, WANT_GX | WANT_GY | WANT_MAGNITUDE,
                       WANT_GX | WANT_MAGNITUDE};
  for (size_t s = 0; s < FILTER_SHAPES; s++)
    for (size_t t = 0; t < 3; t++)
      for (size_t b = 0; b < 3; b++)
        for (size_t o = 0; o < sizeof wants / sizeof wants[0]; o++) {
          int64_t bad = run_sobel(filter_dtypes[t], filter_shapes[s], filter_borders[b], wants[o],
                                  20 + s * 41 + t * 11 + b * 3 + o);
          ck_assert_msg(bad == 0, "%lld mismatches: shape %zu, dtype %s, border %d, outputs %d",
                        (long long)bad, s, plm_dtype_name(filter_dtypes[t]), (int)filter_borders[b],
                        wants[o]);
        }
}
END_TEST

/* As test_conv2d_outputs_beyond_one_grid, for sobel. */
START_TEST(test_sobel_outputs_beyond_one_grid) {
  const filter_shape tall = {2, {1100000, 1}}, deep = {3, {70000, 2, 3}};
  ck_assert_int_eq(
      run_sobel(PLM_DTYPE_F32, tall, PLM_BORDER_REFLECT101, WANT_GX | WANT_MAGNITUDE, 41), 0);
  ck_assert_int_eq(run_sobel(PLM_DTYPE_U8, deep, PLM_BORDER_ZERO, WANT_GY, 42), 0);
}
END_TEST

START_TEST(test_sobel_default_border_is_reflect101) {
  plm_sobel_params params = plm_sobel_params_default();
  ck_assert_int_eq(params.border, PLM_BORDER_REFLECT101);
  /* A ramp along x: with reflect101 the edge columns have gx 0, inside it is 8. */
  const int64_t dims[2] = {4, 5};
  float host[20], *gx;
  for (int i = 0; i < 20; i++) host[i] = (float)(i % 5);
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &out));
  upload(&in, host);
  PLM_CHECK_OK(plm_sobel(plm_test_stream, &in, &params, &out, NULL, NULL));
  gx = plm_test_download(&out);
  for (int i = 0; i < 20; i++) ck_assert_float_eq(gx[i], (i % 5 == 0 || i % 5 == 4) ? 0.0f : 8.0f);
  free(gx);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
}
END_TEST

/* ---- shapes, costs, defaults -------------------------------------------------------- */

START_TEST(test_output_shape_cost_and_defaults) {
  plm_conv2d_params params = plm_conv2d_params_default();
  ck_assert_int_eq(params.stride_y, 1);
  ck_assert_int_eq(params.stride_x, 1);
  ck_assert_int_eq(params.pad_y, 0);
  ck_assert_int_eq(params.pad_x, 0);
  ck_assert_int_eq(params.border, PLM_BORDER_ZERO);
  const int64_t dims[3] = {4, 10, 12}, kernel_dims[2] = {3, 5};
  plm_tensor in, kernel;
  static float storage[4 * 10 * 12], taps[15];
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U16, 3, dims, &in));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, taps, PLM_DTYPE_F32, 2, kernel_dims, &kernel));
  params = conv_params(2, 3, 1, 0, PLM_BORDER_REPLICATE);
  plm_shape shape;
  PLM_CHECK_OK(plm_conv2d_output(&in, &kernel, &params, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_F32);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert_int_eq(shape.dims[0], 4);
  ck_assert_int_eq(shape.dims[1], (10 + 2 - 3) / 2 + 1);
  ck_assert_int_eq(shape.dims[2], (12 - 5) / 3 + 1);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_conv2d_cost(&in, &kernel, &params, &cost));
  double outputs = 4.0 * 5 * 3;
  ck_assert(cost.flops == 2.0 * 15 * outputs);
  ck_assert(cost.bytes == 480.0 * 2 + 15 * 4 + outputs * 4);

  plm_sobel_params sobel = plm_sobel_params_default();
  PLM_CHECK_OK(plm_sobel_output(&in, &sobel, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_F32);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert_int_eq(shape.dims[2], 12);
  PLM_CHECK_OK(plm_sobel_cost(&in, &sobel, &cost));
  ck_assert(cost.bytes == 480.0 * (2 + 12) && cost.flops == 480.0 * 17);

  PLM_CHECK_FAILS(plm_conv2d_output(&in, &kernel, NULL, &shape), PLM_ERR_INVALID_ARG,
                  "plm_conv2d_output: params is NULL");
  PLM_CHECK_FAILS(plm_sobel_cost(NULL, &sobel, &cost), PLM_ERR_INVALID_ARG,
                  "plm_sobel_cost: in is NULL");
}
END_TEST

/* ---- bad input ---------------------------------------------------------------------- */

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t dims[2] = {8, 8}, out_dims[2] = {6, 6}, wrong_dims[2] = {8, 8};
  const int64_t k3[2] = {3, 3}, k32[2] = {3, 32}, k_small[2] = {9, 3};
  plm_tensor in, kernel, out, wrong, as_i32, u8_out, kernel_u8, big_kernel, small_img_kernel,
      same_out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, k3, &kernel));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, out_dims, &out));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, wrong_dims, &wrong));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &as_i32));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, out_dims, &u8_out));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, k3, &kernel_u8));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, k32, &big_kernel));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, k_small,
                                &small_img_kernel));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &same_out));
  plm_conv2d_params params = plm_conv2d_params_default();
  /* Whatever the allocations enqueued has run (sanitized builds poison each block's slack
   * in stream order): the calls below must enqueue nothing. */
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));

  PLM_CHECK_FAILS(plm_conv2d(NULL, &in, &kernel, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_conv2d: stream is NULL");
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, NULL, &kernel, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_conv2d: in is NULL");
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, NULL, &params, &out), PLM_ERR_INVALID_ARG,
                  "kernel is NULL");
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &kernel, NULL, &out), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &kernel, &params, NULL), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &as_i32, &kernel, &params, &out), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &kernel_u8, &params, &out), PLM_ERR_INVALID_ARG,
                  "kernel->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &kernel, &params, &u8_out), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &big_kernel, &params, &out), PLM_ERR_INVALID_ARG,
                  "kernel is 3x32; KH and KW must be in 1..31");
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &small_img_kernel, &params, &out),
                  PLM_ERR_INVALID_ARG, "in is 8x8, padded by 0,0, smaller than the 9x3 kernel");
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &kernel, &params, &wrong), PLM_ERR_INVALID_ARG,
                  "out is 8x8 but the output of conv2d is 6x6");
  plm_conv2d_params bad = params;
  bad.stride_x = 0;
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &kernel, &bad, &out), PLM_ERR_INVALID_ARG,
                  "stride_x 0: strides must be at least 1");
  bad = params;
  bad.pad_y = -1;
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &kernel, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->pad_y -1, pad_x 0: padding must be in");
  bad = params;
  bad.border = (plm_border)7;
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &kernel, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->border 7 is not a plm_border");
  plm_tensor overlapping = out;
  overlapping.data = (char *)in.data + 8;
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &kernel, &params, &overlapping),
                  PLM_ERR_INVALID_ARG, "out overlaps in");
  bad = conv_params(1, 1, 1, 1, PLM_BORDER_ZERO);
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &kernel, &bad, &in), PLM_ERR_INVALID_ARG,
                  "out overlaps in");
  plm_tensor strided = out;
  strided.strides[0] = 16;
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &kernel, &params, &strided), PLM_ERR_UNSUPPORTED,
                  "out is not contiguous");

  /* sobel */
  plm_sobel_params sobel = plm_sobel_params_default();
  PLM_CHECK_FAILS(plm_sobel(plm_test_stream, &in, &sobel, NULL, NULL, NULL), PLM_ERR_INVALID_ARG,
                  "gx, gy and magnitude are all NULL");
  PLM_CHECK_FAILS(plm_sobel(NULL, &in, &sobel, &same_out, NULL, NULL), PLM_ERR_INVALID_ARG,
                  "plm_sobel: stream is NULL");
  PLM_CHECK_FAILS(plm_sobel(plm_test_stream, NULL, &sobel, &same_out, NULL, NULL),
                  PLM_ERR_INVALID_ARG, "plm_sobel: in is NULL");
  PLM_CHECK_FAILS(plm_sobel(plm_test_stream, &in, NULL, &same_out, NULL, NULL), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  PLM_CHECK_FAILS(plm_sobel(plm_test_stream, &as_i32, &sobel, &same_out, NULL, NULL),
                  PLM_ERR_INVALID_ARG, "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_sobel(plm_test_stream, &in, &sobel, NULL, &out, NULL), PLM_ERR_INVALID_ARG,
                  "gy is 6x6 but in is 8x8");
  PLM_CHECK_FAILS(plm_sobel(plm_test_stream, &in, &sobel, NULL, NULL, &as_i32), PLM_ERR_INVALID_ARG,
                  "magnitude->dtype i32 is not f32");
  PLM_CHECK_FAILS(plm_sobel(plm_test_stream, &in, &sobel, &same_out, NULL, &same_out),
                  PLM_ERR_INVALID_ARG, "magnitude overlaps gx");
  PLM_CHECK_FAILS(plm_sobel(plm_test_stream, &in, &sobel, &in, NULL, NULL), PLM_ERR_INVALID_ARG,
                  "gx overlaps in");
  plm_sobel_params bad_sobel = {.border = (plm_border)-1};
  PLM_CHECK_FAILS(plm_sobel(plm_test_stream, &in, &bad_sobel, &same_out, NULL, NULL),
                  PLM_ERR_INVALID_ARG, "params->border -1 is not a plm_border");

  /* Tensors of another context. */
  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_tensor foreign = kernel;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_conv2d(plm_test_stream, &in, &foreign, &params, &out), PLM_ERR_INVALID_ARG,
                  "kernel belongs to another context than stream");
  foreign = same_out;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_sobel(plm_test_stream, &in, &sobel, NULL, &foreign, NULL),
                  PLM_ERR_INVALID_ARG, "gy belongs to another context than stream");
  PLM_CHECK_OK(plm_context_destroy(other));

  bool finished = false;
  PLM_CHECK_OK(plm_stream_query(plm_test_stream, &finished));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {
      &in,         &kernel,           &out,     &wrong, &as_i32, &u8_out, &kernel_u8,
      &big_kernel, &small_img_kernel, &same_out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

static Suite *conv_suite(void) {
  Suite *suite = suite_create("conv");
  TCase *tcase = tcase_create("conv");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_conv2d_same_size_matches_for_every_shape_dtype_border_and_kernel);
  tcase_add_test(tcase, test_conv2d_strides_and_paddings_match);
  tcase_add_test(tcase, test_conv2d_padding_beyond_the_image_reflects_repeatedly);
  tcase_add_test(tcase, test_conv2d_31x31_kernel_on_small_images);
  tcase_add_test(tcase, test_conv2d_runs_of_outputs_match_at_their_edges);
  tcase_add_test(tcase, test_conv2d_every_kernel_width_to_20);
  tcase_add_test(tcase, test_conv2d_huge_padding_on_a_small_image);
  tcase_add_test(tcase, test_conv2d_large_strides_with_large_kernels);
  tcase_add_test(tcase, test_conv2d_outputs_beyond_one_grid);
  tcase_add_test(tcase, test_sobel_matches_for_every_shape_dtype_border_and_output_set);
  tcase_add_test(tcase, test_sobel_outputs_beyond_one_grid);
  tcase_add_test(tcase, test_sobel_default_border_is_reflect101);
  tcase_add_test(tcase, test_output_shape_cost_and_defaults);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(conv_suite);
}

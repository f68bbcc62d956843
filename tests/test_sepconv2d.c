/* tests/test_sepconv2d.c: the sepconv2d op (plume/conv.h) on the backend under test:
 *
 *   - against a float64 reference computed here with plain loops (scipy's
 *     ndimage.correlate1d along the rows with kernel_x, then along the columns with
 *     kernel_y, modes constant / nearest / mirror), within f32 accumulation error;
 *   - bit for bit against plm__sepconv2d_pixel (kernels/common/sepconv.h) evaluated here
 *     on the host for every output pixel: the order of the arithmetic is the op's contract,
 *     so both backends must give exactly those floats (NaN for NaN);
 *   - against conv2d with the outer product of the two kernels (exactly, where every
 *     product and sum is an integer that f32 holds);
 *   - its text form in pipelines (gauss, box, inline and @NAME kernels, one dimension
 *     each) against the op given the same taps.
 *
 * Inputs go to the device with stream copies, so the same test runs on cuda
 * (sepconv2d.cuda). */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "filter_reference.h"
#include "kernels/common/sepconv.h"

/* ---- the reference ------------------------------------------------------------------ */

/* One output of the separable correlation of frame (h x w) at input origin (y0, x0): the
 * row sums of kernel_x (taps_x, kw) over the rows y0 .. y0 + kh - 1, weighted by kernel_y
 * (taps_y, kh), in float64; *scale gets the sum of the absolute terms
 * |taps_y[i] taps_x[j] pixel| (the scale of f32 rounding). */
static double reference_separable(const double *frame, int64_t h, int64_t w, const float *taps_x,
                                  int kw, const float *taps_y, int kh, int64_t y0, int64_t x0,
                                  plm_border border, double *scale) {
  double sum = 0.0;
  for (int i = 0; i < kh; i++) {
    const int64_t r = filter_border_index(y0 + i, h, border);
    double row = 0.0, row_scale = 0.0;
    for (int j = 0; j < kw; j++) {
      const int64_t c = filter_border_index(x0 + j, w, border);
      const double pixel = r < 0 || c < 0 ? 0.0 : frame[r * w + c];
      row += (double)taps_x[j] * pixel;
      row_scale += fabs((double)taps_x[j] * pixel);
    }
    sum += (double)taps_y[i] * row;
    *scale += fabs((double)taps_y[i]) * row_scale;
  }
  return sum;
}

/* The same bits, or both NaN (a NaN's sign and payload are not IEEE's to fix: a GPU
 * gives its canonical NaN). */
static int same_float(float got, float want) {
  return memcmp(&got, &want, sizeof got) == 0 || (isnan(got) && isnan(want));
}

static unsigned float_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

/* ---- helpers ------------------------------------------------------------------------ */

/* The f32 test images' values: 0.01 steps in [-100, 100] (as tests/test_conv.c's). */
static float image_value(uint64_t r, int64_t i, const void *user) {
  (void)i;
  (void)user;
  return (float)((double)(r % 20001) / 100.0 - 100.0);
}

/* count taps in [-1, 1] on a grid of 0.001, from seed. */
static void random_taps(float *taps, int count, uint64_t seed) {
  uint64_t state = seed * 3 + 1;
  for (int t = 0; t < count; t++)
    taps[t] = (float)((double)(plm_test_random(&state) % 2001) / 1000.0 - 1.0);
}

/* How a kernel is given: 1-D (K), or 2-D, kernel_x a row (1, KW) and kernel_y a column
 * (KH, 1). forms is a bit set of the 2-D ones. */
enum { X_AS_ROW = 1, Y_AS_COLUMN = 2 };

/* kernel_x (KW) or (1, KW), uploaded. */
static plm_tensor upload_kernel_x(const float *taps, int kw, int forms) {
  const int64_t flat[1] = {kw}, row[2] = {1, kw};
  return (forms & X_AS_ROW) ? plm_test_upload(PLM_DTYPE_F32, 2, row, taps)
                            : plm_test_upload(PLM_DTYPE_F32, 1, flat, taps);
}

/* kernel_y (KH) or (KH, 1), uploaded. */
static plm_tensor upload_kernel_y(const float *taps, int kh, int forms) {
  const int64_t flat[1] = {kh}, column[2] = {kh, 1};
  return (forms & Y_AS_COLUMN) ? plm_test_upload(PLM_DTYPE_F32, 2, column, taps)
                               : plm_test_upload(PLM_DTYPE_F32, 1, flat, taps);
}

static plm_sepconv2d_params sep_params(int stride_y, int stride_x, int pad_y, int pad_x,
                                       plm_border border) {
  plm_sepconv2d_params params = plm_sepconv2d_params_default();
  params.stride_y = stride_y;
  params.stride_x = stride_x;
  params.pad_y = pad_y;
  params.pad_x = pad_x;
  params.border = border;
  return params;
}

/* The output's (Ho, Wo) by the header's formula. */
static void output_size(int64_t h, int64_t w, int kh, int kw, const plm_sepconv2d_params *p,
                        int64_t *ho, int64_t *wo) {
  *ho = (h + 2 * (int64_t)p->pad_y - kh) / p->stride_y + 1;
  *wo = (w + 2 * (int64_t)p->pad_x - kw) / p->stride_x + 1;
}

/* The arguments plm__sepconv2d_pixel reads, over host copies of the operands. */
static plm__sepconv2d_args host_args(const void *in, plm_dtype dtype, int64_t n, int64_t h,
                                     int64_t w, const float *taps_x, int kw, const float *taps_y,
                                     int kh, const plm_sepconv2d_params *p) {
  int64_t ho, wo;
  output_size(h, w, kh, kw, p, &ho, &wo);
  return (plm__sepconv2d_args){.in = in,
                               .taps_x = taps_x,
                               .taps_y = taps_y,
                               .out = NULL,
                               .n = n,
                               .h = h,
                               .w = w,
                               .ho = ho,
                               .wo = wo,
                               .dtype = dtype,
                               .kh = kh,
                               .kw = kw,
                               .stride_y = p->stride_y,
                               .stride_x = p->stride_x,
                               .pad_y = p->pad_y,
                               .pad_x = p->pad_x,
                               .border = p->border};
}

/* ---- sepconv2d against the reference and the pixel function ------------------------- */

/* Run sepconv2d with random kw and kh taps (given as forms says) on a random image of
 * dtype and shape, and compare every output with the float64 reference and, bit for bit,
 * with plm__sepconv2d_pixel; returns the number of mismatches (each printed, up to 3). */
static int64_t run_sepconv2d(plm_dtype dtype, filter_shape shape, int kh, int kw, int forms,
                             plm_sepconv2d_params params, uint64_t seed) {
  int64_t n, h, w, ho, wo;
  filter_frame_dims(&shape, &n, &h, &w);
  output_size(h, w, kh, kw, &params, &ho, &wo);
  ck_assert(ho >= 1 && wo >= 1);
  float taps_x[PLM_CONV2D_MAX_KERNEL], taps_y[PLM_CONV2D_MAX_KERNEL];
  random_taps(taps_x, kw, seed);
  random_taps(taps_y, kh, seed + 0x5eed);

  const int64_t count = n * h * w;
  double *image = malloc((size_t)count * sizeof *image);
  ck_assert_ptr_nonnull(image);
  void *host = plm_test_values(dtype, count, seed, image_value, NULL, image);
  plm_tensor in = plm_test_upload(dtype, shape.ndim, shape.dims, host);
  plm_tensor kernel_x = upload_kernel_x(taps_x, kw, forms);
  plm_tensor kernel_y = upload_kernel_y(taps_y, kh, forms);
  plm_shape expected;
  PLM_CHECK_OK(plm_sepconv2d_output(&in, &kernel_x, &kernel_y, &params, &expected));
  ck_assert_int_eq(expected.dtype, PLM_DTYPE_F32);
  ck_assert_int_eq(expected.ndim, shape.ndim);
  if (shape.ndim == 3) ck_assert_int_eq(expected.dims[0], n);
  ck_assert_int_eq(expected.dims[shape.ndim - 2], ho);
  ck_assert_int_eq(expected.dims[shape.ndim - 1], wo);
  plm_tensor out = plm_test_garbage(&expected); /* every byte must be written */
  PLM_CHECK_OK(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &params, &out));
  float *result = plm_test_download(&out);

  const plm__sepconv2d_args args = host_args(host, dtype, n, h, w, taps_x, kw, taps_y, kh, &params);
  int64_t far = 0, inexact = 0;
  for (int64_t f = 0; f < n; f++)
    for (int64_t y = 0; y < ho; y++)
      for (int64_t x = 0; x < wo; x++) {
        const float got = result[(f * ho + y) * wo + x];
        const float exact = plm__sepconv2d_pixel(&args, f, y, x);
        if (!same_float(got, exact) && inexact++ < 3)
          fprintf(stderr,
                  "sepconv2d: frame %lld (%lld, %lld): got %.9g (0x%08x), "
                  "plm__sepconv2d_pixel %.9g (0x%08x)\n",
                  (long long)f, (long long)y, (long long)x, (double)got, float_bits(got),
                  (double)exact, float_bits(exact));
        double scale = 0.0;
        const double want = reference_separable(
            image + f * h * w, h, w, taps_x, kw, taps_y, kh, y * params.stride_y - params.pad_y,
            x * params.stride_x - params.pad_x, params.border, &scale);
        if (!filter_close_enough(got, want, scale) && far++ < 3)
          fprintf(stderr, "sepconv2d: frame %lld (%lld, %lld): got %.9g, float64 %.9g\n",
                  (long long)f, (long long)y, (long long)x, (double)got, want);
      }
  if (far || inexact)
    fprintf(stderr,
            "sepconv2d %s (%lld, %lld, %lld), %dx%d taps (forms %d), stride %d,%d, pad %d,%d, "
            "border %d: %lld off the float64 reference, %lld not plm__sepconv2d_pixel's bits\n",
            plm_dtype_name(dtype), (long long)n, (long long)h, (long long)w, kh, kw, forms,
            params.stride_y, params.stride_x, params.pad_y, params.pad_x, (int)params.border,
            (long long)far, (long long)inexact);
  plm_test_release(&in);
  plm_test_release(&kernel_x);
  plm_test_release(&kernel_y);
  plm_test_release(&out);
  free(host);
  free(result);
  free(image);
  return far + inexact;
}

/* "same" size (stride 1, pad (KH - 1) / 2, (KW - 1) / 2) for every shape, dtype and
 * border; kernels of 1, 3, 5x3 (KH != KW) and 1x7 / 7x1 taps; each kernel's form (1-D or
 * 2-D) taking turns. */
START_TEST(test_same_size_matches_for_every_shape_dtype_border_and_kernel) {
  static const int kernels[][2] = {{1, 1}, {3, 3}, {5, 3}, {1, 7}, {7, 1}};
  const size_t kernel_count = sizeof kernels / sizeof kernels[0];
  int cases = 0;
  for (size_t s = 0; s < FILTER_SHAPES; s++)
    for (size_t t = 0; t < 3; t++)
      for (size_t b = 0; b < 3; b++)
        for (size_t k = 0; k < kernel_count; k++) {
          const int kh = kernels[k][0], kw = kernels[k][1], forms = cases++ % 4;
          plm_sepconv2d_params params =
              sep_params(1, 1, (kh - 1) / 2, (kw - 1) / 2, filter_borders[b]);
          int64_t bad = run_sepconv2d(filter_dtypes[t], filter_shapes[s], kh, kw, forms, params,
                                      1000 + s * 97 + t * 13 + b * 5 + k);
          ck_assert_msg(bad == 0, "%lld mismatches: shape %zu, dtype %s, border %d, kernel %dx%d",
                        (long long)bad, s, plm_dtype_name(filter_dtypes[t]), (int)filter_borders[b],
                        kh, kw);
        }
}
END_TEST

/* The same kernels given as (KW) or (1, KW) and (KH) or (KH, 1) give the same bits. */
START_TEST(test_kernel_forms_give_the_same_output) {
  const filter_shape shape = {3, {2, 19, 23}};
  const plm_sepconv2d_params params = sep_params(1, 2, 2, 1, PLM_BORDER_REFLECT101);
  float taps_x[3], taps_y[5];
  random_taps(taps_x, 3, 71);
  random_taps(taps_y, 5, 72);
  double *image = malloc(2 * 19 * 23 * sizeof *image);
  ck_assert_ptr_nonnull(image);
  void *host = plm_test_values(PLM_DTYPE_F32, 2 * 19 * 23, 73, image_value, NULL, image);
  plm_tensor in = plm_test_upload(PLM_DTYPE_F32, 3, shape.dims, host);
  float *first = NULL;
  size_t bytes = 0;
  for (int forms = 0; forms < 4; forms++) {
    plm_tensor kernel_x = upload_kernel_x(taps_x, 3, forms);
    plm_tensor kernel_y = upload_kernel_y(taps_y, 5, forms);
    plm_shape shape_out;
    PLM_CHECK_OK(plm_sepconv2d_output(&in, &kernel_x, &kernel_y, &params, &shape_out));
    plm_tensor out = plm_test_garbage(&shape_out);
    PLM_CHECK_OK(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &params, &out));
    float *got = plm_test_download(&out);
    if (!first) {
      first = got;
      bytes = plm_tensor_bytes(&out);
    } else {
      ck_assert_uint_eq(plm_tensor_bytes(&out), bytes);
      ck_assert_msg(memcmp(got, first, bytes) == 0, "forms %d differ from forms 0", forms);
      free(got);
    }
    plm_test_release(&kernel_x);
    plm_test_release(&kernel_y);
    plm_test_release(&out);
  }
  plm_test_release(&in);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  free(first);
  free(host);
  free(image);
}
END_TEST

/* Strides and paddings (none, one side's, "same", past the image), even kernels (KH or KW
 * even: 4x2, 2x6, 4x4), KH != KW both ways. */
START_TEST(test_strides_paddings_and_even_kernels_match) {
  static const int cases[][4] = {/* stride_y, stride_x, pad_y, pad_x */
                                 {1, 1, 0, 0}, {2, 3, 0, 0}, {2, 2, 1, 2}, {3, 1, 4, 0},
                                 {1, 2, 2, 2}, {4, 5, 3, 1}, {2, 1, 1, 3}};
  static const int kernels[][2] = {{3, 3}, {5, 3}, {1, 7}, {4, 2}, {2, 6}, {4, 4}};
  const size_t kernel_count = sizeof kernels / sizeof kernels[0];
  const filter_shape tested[] = {filter_shapes[3], filter_shapes[4], filter_shapes[5]};
  int runs = 0;
  for (size_t s = 0; s < 3; s++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
      for (size_t b = 0; b < 3; b++)
        for (size_t k = 0; k < kernel_count; k++) {
          plm_sepconv2d_params params =
              sep_params(cases[c][0], cases[c][1], cases[c][2], cases[c][3], filter_borders[b]);
          const plm_dtype dtype = filter_dtypes[(s + c + k) % 3];
          int64_t bad = run_sepconv2d(dtype, tested[s], kernels[k][0], kernels[k][1], runs++ % 4,
                                      params, 7000 + s * 31 + c * 7 + b * 3 + k);
          ck_assert_msg(bad == 0, "%lld mismatches: shape %zu, case %zu, border %d, kernel %zu",
                        (long long)bad, s, c, (int)filter_borders[b], k);
        }
}
END_TEST

/* Every kernel length from 1 to 20 in both directions: the CPU kernel's passes add nine
 * taps a pass and the rest in one (kernels/cpu/sepconv.c's add_tap_passes), so these give
 * each length of the rest after none, one and two passes of nine. */
START_TEST(test_every_kernel_length_to_20) {
  const filter_shape image = {2, {23, 70}};
  for (int k = 1; k <= 20; k++) {
    const int kh = 21 - k;
    const plm_sepconv2d_params params = sep_params(1, 1, kh / 2, k / 2, filter_borders[k % 3]);
    const int64_t bad =
        run_sepconv2d(filter_dtypes[k % 3], image, kh, k, k % 4, params, 6000 + (uint64_t)k);
    ck_assert_msg(bad == 0, "%lld mismatches: %dx%d taps", (long long)bad, kh, k);
  }
}
END_TEST

/* Padding beyond the image: reflect101 reflects again and again, replicate repeats the
 * edge, on images down to 1 or 2 pixels a side. */
START_TEST(test_padding_beyond_the_image_reflects_repeatedly) {
  const filter_shape small[] = {{2, {7, 13}}, {2, {1, 5}}, {2, {2, 1}}, {3, {2, 3, 4}}};
  for (size_t s = 0; s < 4; s++)
    for (size_t b = 0; b < 3; b++) {
      plm_sepconv2d_params params = sep_params(1, 2, 9, 20, filter_borders[b]);
      ck_assert_int_eq(
          run_sepconv2d(PLM_DTYPE_F32, small[s], 3, 3, (int)b % 4, params, 50 + s * 3 + b), 0);
      params = sep_params(3, 1, 30, 11, filter_borders[b]);
      ck_assert_int_eq(
          run_sepconv2d(PLM_DTYPE_U8, small[s], 5, 3, (int)(b + 1) % 4, params, 90 + s * 3 + b), 0);
      params = sep_params(1, 1, 40, 40, filter_borders[b]);
      ck_assert_int_eq(
          run_sepconv2d(PLM_DTYPE_U16, small[s], 31, 2, (int)(b + 2) % 4, params, 130 + s * 3 + b),
          0);
    }
}
END_TEST

/* 31 taps (the most), in one dimension or both, on images smaller than, as large as and
 * larger than the kernel. */
START_TEST(test_31_taps_on_small_images) {
  static const int kernels[][2] = {{31, 31}, {31, 1}, {1, 31}, {31, 3}};
  const filter_shape small[] = {{2, {20, 25}}, {2, {31, 40}}, {3, {2, 33, 31}}, {2, {1, 1}}};
  int runs = 0;
  for (size_t s = 0; s < 4; s++)
    for (size_t b = 0; b < 3; b++)
      for (size_t k = 0; k < 4; k++) {
        const int kh = kernels[k][0], kw = kernels[k][1];
        plm_sepconv2d_params same = sep_params(1, 1, (kh - 1) / 2, (kw - 1) / 2, filter_borders[b]);
        ck_assert_int_eq(run_sepconv2d(filter_dtypes[(s + b + k) % 3], small[s], kh, kw, runs++ % 4,
                                       same, 300 + s * 13 + b * 4 + k),
                         0);
        plm_sepconv2d_params strided = sep_params(2, 3, 0, 4, filter_borders[b]);
        int64_t n, h, w;
        filter_frame_dims(&small[s], &n, &h, &w);
        if (h >= kh && w + 8 >= kw)
          ck_assert_int_eq(run_sepconv2d(PLM_DTYPE_F32, small[s], kh, kw, runs++ % 4, strided,
                                         400 + s * 13 + b * 4 + k),
                           0);
      }
}
END_TEST

/* Outputs wider than the blocks and tiles the kernels compute at a time (the CPU's 512
 * columns, the CUDA kernel's 64), with a block's edge inside the image and on its border,
 * at stride_x 1 and 2. */
START_TEST(test_outputs_wider_than_a_block) {
  static const filter_shape wide[] = {{2, {3, 1100}}, {3, {2, 4, 1030}}, {2, {9, 513}}};
  static const int kernels[][2] = {{3, 7}, {5, 1}, {2, 31}};
  int runs = 0;
  for (size_t s = 0; s < 3; s++)
    for (size_t k = 0; k < 3; k++)
      for (int stride_x = 1; stride_x <= 2; stride_x++) {
        const int kh = kernels[k][0], kw = kernels[k][1];
        const plm_border border = filter_borders[runs % 3];
        plm_sepconv2d_params params = sep_params(1, stride_x, (kh - 1) / 2, kw, border);
        int64_t bad = run_sepconv2d(filter_dtypes[(s + k) % 3], wide[s], kh, kw, runs % 4, params,
                                    1200 + (uint64_t)runs);
        ck_assert_msg(bad == 0, "%lld mismatches: shape %zu, kernel %dx%d, stride_x %d",
                      (long long)bad, s, kh, kw, stride_x);
        runs++;
      }
}
END_TEST

/* Strides larger than the kernel, with large kernels. */
START_TEST(test_large_strides_with_large_kernels) {
  const filter_shape images[] = {{2, {100, 120}}, {3, {2, 64, 97}}};
  for (size_t s = 0; s < 2; s++)
    for (size_t b = 0; b < 3; b++) {
      plm_sepconv2d_params params = sep_params(9, 10, 5, 7, filter_borders[b]);
      ck_assert_int_eq(run_sepconv2d(PLM_DTYPE_U16, images[s], 31, 29, 3, params, 600 + s * 3 + b),
                       0);
      params = sep_params(33, 2, 0, 31, filter_borders[b]);
      ck_assert_int_eq(run_sepconv2d(PLM_DTYPE_F32, images[s], 17, 31, 0, params, 700 + s * 3 + b),
                       0);
      params = sep_params(1000, 1000, 3, 3, filter_borders[b]);
      ck_assert_int_eq(run_sepconv2d(PLM_DTYPE_U8, images[s], 7, 7, 1, params, 750 + s * 3 + b), 0);
    }
}
END_TEST

/* Padding at the limit (PLM_CONV2D_MAX_PAD) on a tiny image, as tests/test_conv.c's: a
 * padded row would be 2^21 floats. Strides that leave a few outputs, 2^20 apart, and (on
 * zero and replicate: the reference mirrors step by step, so reflect101 this far out is
 * slow for it) outputs 2^21 columns wide, with 31 taps across. */
START_TEST(test_huge_padding_on_a_small_image) {
  const filter_shape tiny = {2, {3, 4}}, batch = {3, {2, 3, 4}};
  const int max = PLM_CONV2D_MAX_PAD;
  /* Every column of the outputs 2^21 wide, or every 7th on the emulated GPU, where every
   * column took two minutes (the edge is the padding, which a stride keeps; each seed also
   * takes every other border: tests/harness.h's sweeps). */
  const int step = plm_test_on_emulator() ? 7 : 1;
  plm_test_sweep wide_outputs = plm_test_sweep_start("outputs 2^21 wide", 2);
  for (size_t b = 0; b < 3; b++) {
    plm_sepconv2d_params sparse = sep_params(max, max, max, max, filter_borders[b]);
    ck_assert_int_eq(run_sepconv2d(PLM_DTYPE_F32, tiny, 3, 3, 0, sparse, 800 + b), 0);
    ck_assert_int_eq(run_sepconv2d(PLM_DTYPE_U8, batch, 5, 3, 3, sparse, 810 + b), 0);
    if (filter_borders[b] == PLM_BORDER_REFLECT101 || !plm_test_sweep_take(&wide_outputs)) continue;
    plm_sepconv2d_params wide = sep_params(1, step, 0, max, filter_borders[b]);
    ck_assert_int_eq(run_sepconv2d(PLM_DTYPE_F32, tiny, 3, 31, 1, wide, 820 + b), 0);
    wide = sep_params(1, 3 * step, 5, max, filter_borders[b]);
    ck_assert_int_eq(run_sepconv2d(PLM_DTYPE_U16, tiny, 1, 1, 2, wide, 830 + b), 0);
  }
  plm_test_sweep_finish(&wide_outputs);
}
END_TEST

/* Outputs with more rows of tiles than a CUDA grid has rows (65535), and batches with more
 * frames than it has layers (65535), as tests/test_conv.c's: one column of 2,200,000 pixels
 * (8.8 MB as f32; the tiled kernel's tiles are 32 rows), one of 600,000 with a stride across
 * (the direct kernel, whose tiles are 8 rows), and 70,000 frames of 2 x 3. Every run reaches
 * both edges; the tall outputs take seconds each on the emulated GPU, where each seed takes
 * some of them (tests/harness.h's sweeps). */
START_TEST(test_outputs_beyond_one_grid) {
  const filter_shape tall = {2, {2200000, 1}}, direct = {2, {600000, 1}}, deep = {3, {70000, 2, 3}};
  ck_assert_int_eq(
      run_sepconv2d(PLM_DTYPE_U8, deep, 3, 3, 0, sep_params(1, 1, 1, 1, PLM_BORDER_REPLICATE), 33),
      0);
  plm_test_sweep tall_outputs = plm_test_sweep_start("outputs of 600,000 and 2,200,000 rows", 2);
  if (plm_test_sweep_take(&tall_outputs))
    ck_assert_int_eq(run_sepconv2d(PLM_DTYPE_F32, tall, 3, 1, 2,
                                   sep_params(1, 1, 1, 0, PLM_BORDER_REFLECT101), 31),
                     0);
  if (plm_test_sweep_take(&tall_outputs))
    ck_assert_int_eq(
        run_sepconv2d(PLM_DTYPE_U16, tall, 5, 3, 1, sep_params(1, 1, 0, 1, PLM_BORDER_ZERO), 32),
        0);
  /* A row pass across the border on every row, and a stride across the columns. */
  if (plm_test_sweep_take(&tall_outputs))
    ck_assert_int_eq(run_sepconv2d(PLM_DTYPE_F32, direct, 3, 3, 3,
                                   sep_params(1, 1000, 1, 1, PLM_BORDER_REPLICATE), 34),
                     0);
  plm_test_sweep_finish(&tall_outputs);
}
END_TEST

/* NaN and infinities in in or in a kernel propagate as IEEE arithmetic says, in the
 * pixel function's order: an infinite tap times a zero of the border is NaN. Compared
 * with plm__sepconv2d_pixel only (NaN for NaN). */
START_TEST(test_nan_and_infinities_propagate_as_the_pixel_function) {
  const int64_t dims[2] = {9, 11}, tap_dims[1] = {3};
  float image[99];
  uint64_t state = 5;
  for (int i = 0; i < 99; i++) image[i] = (float)(plm_test_random(&state) % 100) - 50.0f;
  image[0] = NAN;
  image[4 * 11 + 5] = INFINITY;
  image[4 * 11 + 7] = -INFINITY; /* inf - inf in some sums */
  image[8 * 11 + 10] = NAN;
  const float finite_x[3] = {0.25f, 0.5f, 0.25f}, finite_y[3] = {1.0f, -2.0f, 1.0f};
  const float infinite_y[3] = {INFINITY, 1.0f, 0.0f};
  const float *taps_y[2] = {finite_y, infinite_y};
  plm_tensor in = plm_test_upload(PLM_DTYPE_F32, 2, dims, image);
  plm_tensor kernel_x = plm_test_upload(PLM_DTYPE_F32, 1, tap_dims, finite_x);
  for (int k = 0; k < 2; k++)
    for (size_t b = 0; b < 3; b++) {
      plm_tensor kernel_y = plm_test_upload(PLM_DTYPE_F32, 1, tap_dims, taps_y[k]);
      const plm_sepconv2d_params params = sep_params(1, 1, 2, 1, filter_borders[b]);
      plm_shape shape;
      PLM_CHECK_OK(plm_sepconv2d_output(&in, &kernel_x, &kernel_y, &params, &shape));
      plm_tensor out = plm_test_garbage(&shape);
      PLM_CHECK_OK(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &params, &out));
      float *got = plm_test_download(&out);
      const plm__sepconv2d_args args =
          host_args(image, PLM_DTYPE_F32, 1, 9, 11, finite_x, 3, taps_y[k], 3, &params);
      int nans = 0;
      for (int64_t y = 0; y < args.ho; y++)
        for (int64_t x = 0; x < args.wo; x++) {
          const float want = plm__sepconv2d_pixel(&args, 0, y, x), value = got[y * args.wo + x];
          nans += isnan(want);
          ck_assert_msg(same_float(value, want),
                        "kernel_y %d, border %d, (%lld, %lld): got %.9g, plm__sepconv2d_pixel %.9g",
                        k, (int)filter_borders[b], (long long)y, (long long)x, (double)value,
                        (double)want);
        }
      ck_assert_int_gt(nans, 0);
      free(got);
      plm_test_release(&out);
      plm_test_release(&kernel_y);
    }
  plm_test_release(&in);
  plm_test_release(&kernel_x);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

/* Subnormal products and sums are kept (no flush to zero on either backend): pixels near
 * the smallest normal f32 under taps below 1. */
START_TEST(test_subnormals_are_kept) {
  const int64_t dims[2] = {6, 70}, tap_dims[1] = {3};
  float image[6 * 70];
  uint64_t state = 9;
  for (int i = 0; i < 6 * 70; i++)
    image[i] = ldexpf((float)(plm_test_random(&state) % 2001) - 1000.0f, -136);
  const float taps_x[3] = {0.375f, -0.5f, 0.0625f}, taps_y[3] = {0.25f, 0.75f, -0.125f};
  plm_tensor in = plm_test_upload(PLM_DTYPE_F32, 2, dims, image);
  plm_tensor kernel_x = plm_test_upload(PLM_DTYPE_F32, 1, tap_dims, taps_x);
  plm_tensor kernel_y = plm_test_upload(PLM_DTYPE_F32, 1, tap_dims, taps_y);
  const plm_sepconv2d_params params = sep_params(1, 1, 1, 1, PLM_BORDER_REFLECT101);
  plm_shape shape;
  PLM_CHECK_OK(plm_sepconv2d_output(&in, &kernel_x, &kernel_y, &params, &shape));
  plm_tensor out = plm_test_garbage(&shape);
  PLM_CHECK_OK(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &params, &out));
  float *got = plm_test_download(&out);
  const plm__sepconv2d_args args =
      host_args(image, PLM_DTYPE_F32, 1, 6, 70, taps_x, 3, taps_y, 3, &params);
  int subnormal = 0;
  for (int64_t i = 0; i < 6 * 70; i++) {
    const float want = plm__sepconv2d_pixel(&args, 0, i / 70, i % 70);
    subnormal += want != 0.0f && fabsf(want) < FLT_MIN;
    ck_assert_msg(same_float(got[i], want), "(%lld, %lld): got %a, plm__sepconv2d_pixel %a",
                  (long long)(i / 70), (long long)(i % 70), (double)got[i], (double)want);
  }
  ck_assert_int_gt(subnormal, 100);
  free(got);
  plm_tensor *all[] = {&in, &kernel_x, &kernel_y, &out};
  for (size_t i = 0; i < 4; i++) plm_test_release(all[i]);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

/* ---- against conv2d with the outer product ------------------------------------------ */

/* sepconv2d with taps_x (kw) and taps_y (kh), and conv2d with their outer product
 * K(i, j) = taps_y[i] * taps_x[j] (rounded to f32), on the same image; returns the number
 * of outputs further apart than f32 error of the sum of |terms| (exact: any difference). */
static int64_t run_against_conv2d(plm_dtype dtype, filter_shape shape, const float *taps_x, int kw,
                                  const float *taps_y, int kh, plm_sepconv2d_params params,
                                  bool exact, uint64_t seed) {
  int64_t n, h, w, ho, wo;
  filter_frame_dims(&shape, &n, &h, &w);
  output_size(h, w, kh, kw, &params, &ho, &wo);
  const int64_t count = n * h * w, kernel_dims[2] = {kh, kw};
  double *image = malloc((size_t)count * sizeof *image);
  float *outer = malloc((size_t)(kh * kw) * sizeof *outer);
  ck_assert(image && outer);
  for (int i = 0; i < kh; i++)
    for (int j = 0; j < kw; j++) outer[i * kw + j] = taps_y[i] * taps_x[j];
  void *host = plm_test_values(dtype, count, seed, image_value, NULL, image);
  plm_tensor in = plm_test_upload(dtype, shape.ndim, shape.dims, host);
  plm_tensor kernel_x = upload_kernel_x(taps_x, kw, (int)(seed % 4));
  plm_tensor kernel_y = upload_kernel_y(taps_y, kh, (int)(seed % 4));
  plm_tensor kernel = plm_test_upload(PLM_DTYPE_F32, 2, kernel_dims, outer);
  plm_shape shape_out;
  PLM_CHECK_OK(plm_sepconv2d_output(&in, &kernel_x, &kernel_y, &params, &shape_out));
  plm_tensor sep = plm_test_garbage(&shape_out), conv = plm_test_garbage(&shape_out);
  plm_conv2d_params conv_params = plm_conv2d_params_default();
  conv_params.stride_y = params.stride_y;
  conv_params.stride_x = params.stride_x;
  conv_params.pad_y = params.pad_y;
  conv_params.pad_x = params.pad_x;
  conv_params.border = params.border;
  PLM_CHECK_OK(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &params, &sep));
  PLM_CHECK_OK(plm_conv2d(plm_test_stream, &in, &kernel, &conv_params, &conv));
  float *got_sep = plm_test_download(&sep), *got_conv = plm_test_download(&conv);
  int64_t bad = 0;
  for (int64_t f = 0; f < n; f++)
    for (int64_t y = 0; y < ho; y++)
      for (int64_t x = 0; x < wo; x++) {
        const int64_t at = (f * ho + y) * wo + x;
        double scale = 0.0;
        reference_separable(image + f * h * w, h, w, taps_x, kw, taps_y, kh,
                            y * params.stride_y - params.pad_y, x * params.stride_x - params.pad_x,
                            params.border, &scale);
        const bool same = exact ? got_sep[at] == got_conv[at]
                                : fabs((double)got_sep[at] - got_conv[at]) <= 1e-4 * (1.0 + scale);
        if (!same && bad++ < 3)
          fprintf(stderr, "frame %lld (%lld, %lld): sepconv2d %.9g, conv2d %.9g\n", (long long)f,
                  (long long)y, (long long)x, (double)got_sep[at], (double)got_conv[at]);
      }
  plm_tensor *all[] = {&in, &kernel_x, &kernel_y, &kernel, &sep, &conv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) plm_test_release(all[i]);
  free(got_sep);
  free(got_conv);
  free(host);
  free(image);
  free(outer);
  return bad;
}

START_TEST(test_equals_conv2d_with_the_outer_product) {
  static const int kernels[][2] = {{3, 3}, {5, 3}, {1, 9}, {31, 4}};
  static const int cases[][4] = {{1, 1, -1, -1}, {2, 3, 0, 1}, {1, 1, 12, 40}};
  const filter_shape images[] = {{2, {33, 47}}, {3, {2, 17, 40}}};
  int runs = 0;
  for (size_t k = 0; k < 4; k++)
    for (size_t c = 0; c < 3; c++)
      for (size_t b = 0; b < 3; b++) {
        const int kh = kernels[k][0], kw = kernels[k][1];
        const int pad_y = cases[c][2] < 0 ? (kh - 1) / 2 : cases[c][2];
        const int pad_x = cases[c][3] < 0 ? (kw - 1) / 2 : cases[c][3];
        const filter_shape shape = images[runs % 2];
        int64_t n, h, w;
        filter_frame_dims(&shape, &n, &h, &w);
        if (h + 2 * pad_y < kh || w + 2 * pad_x < kw) continue;
        float taps_x[PLM_CONV2D_MAX_KERNEL], taps_y[PLM_CONV2D_MAX_KERNEL];
        random_taps(taps_x, kw, 40 + (uint64_t)runs);
        random_taps(taps_y, kh, 80 + (uint64_t)runs);
        plm_sepconv2d_params params =
            sep_params(cases[c][0], cases[c][1], pad_y, pad_x, filter_borders[b]);
        int64_t bad = run_against_conv2d(filter_dtypes[runs % 3], shape, taps_x, kw, taps_y, kh,
                                         params, false, 500 + (uint64_t)runs);
        ck_assert_msg(bad == 0, "%lld differ from conv2d: kernel %dx%d, case %zu, border %d",
                      (long long)bad, kh, kw, c, (int)filter_borders[b]);
        runs++;
      }
  ck_assert_int_ge(runs, 30);
}
END_TEST

/* Integer taps on u8 and u16 images (below 2^24 / 64 for u16's sums to stay exact): every
 * product and sum is an integer that f32 holds, so both ops give the same floats. */
START_TEST(test_integer_taps_equal_conv2d_exactly) {
  const float binomial[5] = {1, 4, 6, 4, 1}, smooth[3] = {1, 2, 1}, derivative[3] = {-1, 0, 1};
  const filter_shape images[] = {{2, {16, 21}}, {3, {3, 9, 5}}, {2, {1, 1}}};
  for (size_t s = 0; s < 3; s++)
    for (size_t b = 0; b < 3; b++) {
      plm_sepconv2d_params same = sep_params(1, 1, 2, 1, filter_borders[b]);
      ck_assert_int_eq(run_against_conv2d(PLM_DTYPE_U8, images[s], derivative, 3, binomial, 5, same,
                                          true, 60 + s * 3 + b),
                       0);
      plm_sepconv2d_params strided = sep_params(2, 3, 1, 4, filter_borders[b]);
      ck_assert_int_eq(run_against_conv2d(PLM_DTYPE_U8, images[s], smooth, 3, derivative, 3,
                                          strided, true, 70 + s * 3 + b),
                       0);
    }
}
END_TEST

/* ---- shapes, costs, defaults -------------------------------------------------------- */

START_TEST(test_output_shape_cost_and_defaults) {
  plm_sepconv2d_params params = plm_sepconv2d_params_default();
  ck_assert_int_eq(params.stride_y, 1);
  ck_assert_int_eq(params.stride_x, 1);
  ck_assert_int_eq(params.pad_y, 0);
  ck_assert_int_eq(params.pad_x, 0);
  ck_assert_int_eq(params.border, PLM_BORDER_ZERO);
  const int64_t dims[3] = {4, 10, 12}, flat_x[1] = {5}, row_x[2] = {1, 5}, flat_y[1] = {3},
                column_y[2] = {3, 1};
  static uint16_t storage[4 * 10 * 12];
  static float taps_x[5], taps_y[3];
  plm_tensor in, kernel_xs[2], kernel_ys[2];
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U16, 3, dims, &in));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, taps_x, PLM_DTYPE_F32, 1, flat_x, &kernel_xs[0]));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, taps_x, PLM_DTYPE_F32, 2, row_x, &kernel_xs[1]));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, taps_y, PLM_DTYPE_F32, 1, flat_y, &kernel_ys[0]));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, taps_y, PLM_DTYPE_F32, 2, column_y, &kernel_ys[1]));
  params = sep_params(2, 3, 1, 0, PLM_BORDER_REPLICATE);
  for (int forms = 0; forms < 4; forms++) {
    const plm_tensor *kernel_x = &kernel_xs[forms & 1], *kernel_y = &kernel_ys[forms >> 1];
    plm_shape shape;
    PLM_CHECK_OK(plm_sepconv2d_output(&in, kernel_x, kernel_y, &params, &shape));
    ck_assert_int_eq(shape.dtype, PLM_DTYPE_F32);
    ck_assert_int_eq(shape.ndim, 3);
    ck_assert_int_eq(shape.dims[0], 4);
    ck_assert_int_eq(shape.dims[1], (10 + 2 - 3) / 2 + 1);
    ck_assert_int_eq(shape.dims[2], (12 - 5) / 3 + 1);
    plm_op_cost cost;
    PLM_CHECK_OK(plm_sepconv2d_cost(&in, kernel_x, kernel_y, &params, &cost));
    const double outputs = 4.0 * 5 * 3;
    /* stride_y 2: each output's 3 terms down, and 2 rows' sums of 5 taps across. */
    ck_assert_msg(cost.flops == 2.0 * outputs * (5 * 2 + 3), "flops %g, not 2 * %g * (5 * 2 + 3)",
                  cost.flops, outputs);
    ck_assert_msg(cost.bytes >= 480.0 * 2 + outputs * 4, "bytes %g: less than in and out",
                  cost.bytes);
  }
  /* A single frame (H, W), a 1 x 1 output from a 31-tap kernel each way. */
  const int64_t frame[2] = {31, 31}, taps31[1] = {31};
  static uint8_t pixels[31 * 31];
  static float taps[31];
  plm_tensor image, kernel31;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, pixels, PLM_DTYPE_U8, 2, frame, &image));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, taps, PLM_DTYPE_F32, 1, taps31, &kernel31));
  plm_shape shape;
  params = plm_sepconv2d_params_default();
  PLM_CHECK_OK(plm_sepconv2d_output(&image, &kernel31, &kernel31, &params, &shape));
  ck_assert_int_eq(shape.ndim, 2);
  ck_assert_int_eq(shape.dims[0], 1);
  ck_assert_int_eq(shape.dims[1], 1);

  PLM_CHECK_FAILS(plm_sepconv2d_output(&in, &kernel_xs[0], &kernel_ys[0], NULL, &shape),
                  PLM_ERR_INVALID_ARG, "plm_sepconv2d_output: params is NULL");
  PLM_CHECK_FAILS(plm_sepconv2d_output(&in, NULL, &kernel_ys[0], &params, &shape),
                  PLM_ERR_INVALID_ARG, "plm_sepconv2d_output: kernel_x is NULL");
  plm_op_cost cost;
  PLM_CHECK_FAILS(plm_sepconv2d_cost(NULL, &kernel_xs[0], &kernel_ys[0], &params, &cost),
                  PLM_ERR_INVALID_ARG, "plm_sepconv2d_cost: in is NULL");
  PLM_CHECK_FAILS(plm_sepconv2d_cost(&in, &kernel_xs[0], NULL, &params, &cost), PLM_ERR_INVALID_ARG,
                  "plm_sepconv2d_cost: kernel_y is NULL");
}
END_TEST

/* ---- bad input ---------------------------------------------------------------------- */

/* call failed with `expected`, and its message holds every needle (a NULL-terminated
 * list). */
static void expect_refusal(plm_status status, plm_status expected, const char *call,
                           const char *const *needles) {
  ck_assert_msg(status == expected, "%s -> %s, expected %s (%s)", call, plm_status_str(status),
                plm_status_str(expected), plm_last_error());
  for (const char *const *needle = needles; *needle; needle++)
    ck_assert_msg(strstr(plm_last_error(), *needle) != NULL,
                  "%s: message \"%s\" does not mention \"%s\"", call, plm_last_error(), *needle);
}

#define CHECK_REFUSED(call, expected, ...)                                               \
  do {                                                                                   \
    plm_clear_error();                                                                   \
    expect_refusal((call), (expected), #call, (const char *const[]){__VA_ARGS__, NULL}); \
  } while (0)

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t dims[2] = {8, 8}, out_dims[2] = {6, 6}, tiny_dims[2] = {2, 2};
  const int64_t k3[1] = {3}, k3_3d[3] = {1, 1, 3}, k2x3[2] = {2, 3}, k3x2[2] = {3, 2};
  const int64_t k1x3[2] = {1, 3}, k3x1[2] = {3, 1}, k32[1] = {32}, k32x1[2] = {32, 1};
  const int64_t k1x32[2] = {1, 32}, k9[1] = {9};
  const plm_shape out_shape = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {6, 6}};
  plm_tensor in = plm_test_upload(PLM_DTYPE_F32, 2, dims, NULL);
  plm_tensor kernel_x = plm_test_upload(PLM_DTYPE_F32, 1, k3, NULL);
  plm_tensor kernel_y = plm_test_upload(PLM_DTYPE_F32, 1, k3, NULL);
  plm_tensor out = plm_test_garbage(&out_shape);
  plm_tensor wrong = plm_test_upload(PLM_DTYPE_F32, 2, dims, NULL);
  plm_tensor as_i32 = plm_test_upload(PLM_DTYPE_I32, 2, dims, NULL);
  plm_tensor u8_out = plm_test_upload(PLM_DTYPE_U8, 2, out_dims, NULL);
  plm_tensor kernel_u8 = plm_test_upload(PLM_DTYPE_U8, 1, k3, NULL);
  plm_tensor kernel_3d = plm_test_upload(PLM_DTYPE_F32, 3, k3_3d, NULL);
  plm_tensor kernel_2x3 = plm_test_upload(PLM_DTYPE_F32, 2, k2x3, NULL);
  plm_tensor kernel_3x2 = plm_test_upload(PLM_DTYPE_F32, 2, k3x2, NULL);
  plm_tensor row = plm_test_upload(PLM_DTYPE_F32, 2, k1x3, NULL);
  plm_tensor column = plm_test_upload(PLM_DTYPE_F32, 2, k3x1, NULL);
  plm_tensor kernel_32 = plm_test_upload(PLM_DTYPE_F32, 1, k32, NULL);
  plm_tensor column_32 = plm_test_upload(PLM_DTYPE_F32, 2, k32x1, NULL);
  plm_tensor row_32 = plm_test_upload(PLM_DTYPE_F32, 2, k1x32, NULL);
  plm_tensor kernel_9 = plm_test_upload(PLM_DTYPE_F32, 1, k9, NULL);
  plm_tensor tiny = plm_test_upload(PLM_DTYPE_U8, 2, tiny_dims, NULL);
  plm_sepconv2d_params params = plm_sepconv2d_params_default();
  /* Whatever the allocations enqueued has run: the calls below must enqueue nothing. */
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));

  /* NULL arguments. */
  CHECK_REFUSED(plm_sepconv2d(NULL, &in, &kernel_x, &kernel_y, &params, &out), PLM_ERR_INVALID_ARG,
                "plm_sepconv2d: stream is NULL");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, NULL, &kernel_x, &kernel_y, &params, &out),
                PLM_ERR_INVALID_ARG, "plm_sepconv2d: in is NULL");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, NULL, &kernel_y, &params, &out),
                PLM_ERR_INVALID_ARG, "plm_sepconv2d: kernel_x is NULL");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, NULL, &params, &out),
                PLM_ERR_INVALID_ARG, "plm_sepconv2d: kernel_y is NULL");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, NULL, &out),
                PLM_ERR_INVALID_ARG, "plm_sepconv2d: params is NULL");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &params, NULL),
                PLM_ERR_INVALID_ARG, "plm_sepconv2d: out is NULL");
  /* Dtypes. */
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &as_i32, &kernel_x, &kernel_y, &params, &out),
                PLM_ERR_INVALID_ARG, "in->dtype i32 is not u8, u16 or f32");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_u8, &kernel_y, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_x->dtype u8 is not f32");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_u8, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_y->dtype u8 is not f32");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &params, &u8_out),
                PLM_ERR_INVALID_ARG, "out->dtype u8 is not f32");
  /* Kernels' shapes: a 3-D one, a 2-D one that is not a row (kernel_x) or a column
   * (kernel_y), and 32 taps. */
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_3d, &kernel_y, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_x", "(1, 1, 3)");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_3d, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_y", "(1, 1, 3)");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_2x3, &kernel_y, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_x", "(2, 3)", "(1, KW)");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &column, &kernel_y, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_x", "(3, 1)", "(1, KW)");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_3x2, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_y", "(3, 2)", "(KH, 1)");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &row, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_y", "(1, 3)", "(KH, 1)");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_32, &kernel_y, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_x", "32", "31");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &row_32, &kernel_y, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_x", "32", "31");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_32, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_y", "32", "31");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &column_32, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_y", "32", "31");
  /* Parameters. */
  plm_sepconv2d_params bad = params;
  bad.stride_x = 0;
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &bad, &out),
                PLM_ERR_INVALID_ARG, "stride_x 0");
  bad = params;
  bad.stride_y = -2;
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &bad, &out),
                PLM_ERR_INVALID_ARG, "stride_y -2");
  bad = params;
  bad.pad_y = -1;
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &bad, &out),
                PLM_ERR_INVALID_ARG, "pad_y -1");
  bad = params;
  bad.pad_x = PLM_CONV2D_MAX_PAD + 1;
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &bad, &out),
                PLM_ERR_INVALID_ARG, "pad_x 1048577");
  bad = params;
  bad.border = (plm_border)7;
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &bad, &out),
                PLM_ERR_INVALID_ARG, "border 7 is not a plm_border");
  /* Outputs: of the wrong shape, smaller than 1 x 1, overlapping, not contiguous. */
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &params, &wrong),
                PLM_ERR_INVALID_ARG, "out is 8x8", "6x6");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_9, &kernel_y, &params, &out),
                PLM_ERR_INVALID_ARG, "8x8", "no output");
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &tiny, &kernel_x, &kernel_y, &params, &out),
                PLM_ERR_INVALID_ARG, "2x2", "no output");
  CHECK_REFUSED(plm_sepconv2d_output(&in, &kernel_x, &kernel_9, &params, &(plm_shape){0}),
                PLM_ERR_INVALID_ARG, "plm_sepconv2d_output", "no output");
  plm_tensor overlapping = out;
  overlapping.data = (char *)in.data + 8;
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &params, &overlapping),
                PLM_ERR_INVALID_ARG, "out overlaps in");
  bad = sep_params(1, 1, 1, 1, PLM_BORDER_ZERO);
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &bad, &in),
                PLM_ERR_INVALID_ARG, "out overlaps in");
  plm_tensor on_kernel = out;
  on_kernel.data = kernel_y.data;
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &params, &on_kernel),
                PLM_ERR_INVALID_ARG, "out overlaps kernel_y");
  plm_tensor strided = out;
  strided.strides[0] = 16;
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &kernel_y, &params, &strided),
                PLM_ERR_UNSUPPORTED, "out is not contiguous");
  /* Tensors of another context. */
  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_tensor foreign = kernel_y;
  foreign.ctx = other;
  CHECK_REFUSED(plm_sepconv2d(plm_test_stream, &in, &kernel_x, &foreign, &params, &out),
                PLM_ERR_INVALID_ARG, "kernel_y belongs to another context than stream");
  PLM_CHECK_OK(plm_context_destroy(other));

  /* Nothing ran: out still holds the garbage it was given. */
  unsigned char *bytes = (unsigned char *)plm_test_download(&out);
  for (size_t i = 0; i < plm_tensor_bytes(&out); i++)
    ck_assert_msg(bytes[i] == 0x5a, "out was written at byte %zu", i);
  free(bytes);
  plm_tensor *all[] = {&in,     &kernel_x,  &kernel_y,  &out,        &wrong,      &as_i32,
                       &u8_out, &kernel_u8, &kernel_3d, &kernel_2x3, &kernel_3x2, &row,
                       &column, &kernel_32, &column_32, &row_32,     &kernel_9,   &tiny};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) plm_test_release(all[i]);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

/* ---- the text form ------------------------------------------------------------------ */

/* The frames of the text tests: u16 (H, W). */
enum { TEXT_H = 23, TEXT_W = 37 };

static const int64_t text_dims[2] = {TEXT_H, TEXT_W};

/* A random u16 frame, uploaded, and its values as doubles (malloc'd, in *image). */
static plm_tensor text_frame(uint16_t **host, double **image) {
  *image = malloc(TEXT_H * TEXT_W * sizeof **image);
  ck_assert_ptr_nonnull(*image);
  *host = plm_test_values(PLM_DTYPE_U16, TEXT_H * TEXT_W, 2024, image_value, NULL, *image);
  return plm_test_upload(PLM_DTYPE_U16, 2, text_dims, *host);
}

/* The output of the pipeline of `text` (with count named tensors) over frame, on the host
 * (malloc'd); its shape in *shape. */
static float *run_text(const char *text, const plm_named_tensor *tensors, int count,
                       const plm_tensor *frame, plm_shape *shape) {
  plm_pipeline *pl = NULL;
  plm_status status = plm_pipeline_parse_with_tensors(plm_test_ctx, text, PLM_DTYPE_U16, 2,
                                                      text_dims, tensors, count, &pl);
  ck_assert_msg(status == PLM_OK, "'%s': %s", text, plm_last_error());
  int outputs = 0;
  PLM_CHECK_OK(plm_pipeline_io_count(pl, NULL, &outputs));
  ck_assert_int_eq(outputs, 1);
  plm_tensor out;
  plm_test_compile_and_run(pl, frame, &out);
  float *host = plm_test_download(&out);
  *shape = (plm_shape){.dtype = out.dtype, .ndim = out.ndim};
  for (int d = 0; d < out.ndim; d++) shape->dims[d] = out.dims[d];
  plm_test_release(&out);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  return host;
}

/* plm_sepconv2d of frame with taps_x (kw) and taps_y (kh), on the host (malloc'd). */
static float *run_op(const plm_tensor *frame, const float *taps_x, int kw, const float *taps_y,
                     int kh, const plm_sepconv2d_params *params, plm_shape *shape) {
  plm_tensor kernel_x = upload_kernel_x(taps_x, kw, 0), kernel_y = upload_kernel_y(taps_y, kh, 0);
  PLM_CHECK_OK(plm_sepconv2d_output(frame, &kernel_x, &kernel_y, params, shape));
  plm_tensor out = plm_test_garbage(shape);
  PLM_CHECK_OK(plm_sepconv2d(plm_test_stream, frame, &kernel_x, &kernel_y, params, &out));
  float *host = plm_test_download(&out);
  plm_test_release(&kernel_x);
  plm_test_release(&kernel_y);
  plm_test_release(&out);
  return host;
}

/* The text's output has the op's shape and bytes. */
static void expect_same_output(const char *text, const float *got, const plm_shape *got_shape,
                               const float *want, const plm_shape *want_shape) {
  ck_assert_msg(got_shape->dtype == want_shape->dtype && got_shape->ndim == want_shape->ndim &&
                    got_shape->dims[0] == want_shape->dims[0] &&
                    got_shape->dims[1] == want_shape->dims[1],
                "'%s': output %lldx%lld, the op's %lldx%lld", text, (long long)got_shape->dims[0],
                (long long)got_shape->dims[1], (long long)want_shape->dims[0],
                (long long)want_shape->dims[1]);
  const int64_t count = want_shape->dims[0] * want_shape->dims[1];
  for (int64_t i = 0; i < count; i++)
    ck_assert_msg(same_float(got[i], want[i]), "'%s': (%lld, %lld): %.9g, the op's %.9g", text,
                  (long long)(i / want_shape->dims[1]), (long long)(i % want_shape->dims[1]),
                  (double)got[i], (double)want[i]);
}

/* The 1-D Gaussian of k taps: exp(-(j - c)^2 / (2 sigma^2)), c = (k - 1) / 2, normalised
 * to sum 1 in double, then rounded to f32. */
static void gaussian_taps(int k, double sigma, float *taps) {
  const double c = (k - 1) / 2.0, s2 = sigma * sigma;
  double sum = 0.0;
  for (int j = 0; j < k; j++) sum += exp(-((j - c) * (j - c)) / (2.0 * s2));
  for (int j = 0; j < k; j++) taps[j] = (float)(exp(-((j - c) * (j - c)) / (2.0 * s2)) / sum);
}

START_TEST(test_text_gauss_kernels_are_the_1d_gaussian) {
  uint16_t *host;
  double *image;
  plm_tensor frame = text_frame(&host, &image);
  static const struct {
    const char *text;
    int kx;
    double sigma_x;
    int ky;
    double sigma_y;
    int pad_y, pad_x;
    plm_border border;
  } cases[] = {
      {"sepconv2d kernel_x=gauss:5:1 kernel_y=gauss:5:1 pad=same border=replicate", 5, 1.0, 5, 1.0,
       2, 2, PLM_BORDER_REPLICATE},
      {"sepconv2d kernel_x=gauss:9:1.5 kernel_y=gauss:3:0.7 pad=same border=reflect101", 9, 1.5, 3,
       0.7, 1, 4, PLM_BORDER_REFLECT101},
      {"sepconv2d kernel_y=gauss:31:4 kernel_x=gauss:1:2 pad=same", 1, 2.0, 31, 4.0, 15, 0,
       PLM_BORDER_ZERO},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    float taps_x[31], taps_y[31];
    gaussian_taps(cases[c].kx, cases[c].sigma_x, taps_x);
    gaussian_taps(cases[c].ky, cases[c].sigma_y, taps_y);
    const plm_sepconv2d_params params =
        sep_params(1, 1, cases[c].pad_y, cases[c].pad_x, cases[c].border);
    plm_shape got_shape, want_shape;
    float *got = run_text(cases[c].text, NULL, 0, &frame, &got_shape);
    float *want = run_op(&frame, taps_x, cases[c].kx, taps_y, cases[c].ky, &params, &want_shape);
    expect_same_output(cases[c].text, got, &got_shape, want, &want_shape);
    free(got);
    free(want);
  }
  plm_test_release(&frame);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  free(host);
  free(image);
}
END_TEST

/* gauss:K:SIGMA in each dimension is conv2d's gauss:K:SIGMA (their outer product): the
 * two pipelines agree within f32 error, both with the float64 reference. */
START_TEST(test_text_gauss_is_conv2d_gauss) {
  uint16_t *host;
  double *image;
  plm_tensor frame = text_frame(&host, &image);
  static const char *const texts[][2] = {
      {"sepconv2d kernel_x=gauss:5:1 kernel_y=gauss:5:1 pad=same border=replicate",
       "conv2d kernel=gauss:5:1 pad=same border=replicate"},
      {"sepconv2d kernel_x=gauss:7:1.3 kernel_y=gauss:7:1.3 pad=same border=reflect101",
       "conv2d kernel=gauss:7:1.3 pad=same border=reflect101"},
  };
  static const int sizes[] = {5, 7};
  static const double sigmas[] = {1.0, 1.3};
  static const plm_border modes[] = {PLM_BORDER_REPLICATE, PLM_BORDER_REFLECT101};
  for (int t = 0; t < 2; t++) {
    plm_shape sep_shape, conv_shape;
    float *sep = run_text(texts[t][0], NULL, 0, &frame, &sep_shape);
    float *conv = run_text(texts[t][1], NULL, 0, &frame, &conv_shape);
    ck_assert_int_eq(sep_shape.dims[0], TEXT_H);
    ck_assert_int_eq(sep_shape.dims[1], TEXT_W);
    ck_assert_int_eq(conv_shape.dims[0], TEXT_H);
    ck_assert_int_eq(conv_shape.dims[1], TEXT_W);
    float taps[31];
    gaussian_taps(sizes[t], sigmas[t], taps);
    const int c = sizes[t] / 2;
    for (int64_t y = 0; y < TEXT_H; y++)
      for (int64_t x = 0; x < TEXT_W; x++) {
        double scale = 0.0;
        const double want = reference_separable(image, TEXT_H, TEXT_W, taps, sizes[t], taps,
                                                sizes[t], y - c, x - c, modes[t], &scale);
        const float a = sep[y * TEXT_W + x], b = conv[y * TEXT_W + x];
        ck_assert_msg(filter_close_enough(a, want, scale) && filter_close_enough(b, want, scale),
                      "'%s' (%lld, %lld): sepconv2d %.9g, conv2d %.9g, float64 %.9g", texts[t][0],
                      (long long)y, (long long)x, (double)a, (double)b, want);
      }
    free(sep);
    free(conv);
  }
  plm_test_release(&frame);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  free(host);
  free(image);
}
END_TEST

/* Inline values and box:K (taps 1/K), strides. */
START_TEST(test_text_inline_and_box_kernels) {
  uint16_t *host;
  double *image;
  plm_tensor frame = text_frame(&host, &image);
  const float third = (float)(1.0 / 3.0), fifth = (float)(1.0 / 5.0);
  static const float smooth[3] = {1, 2, 1}, derivative[5] = {-0.5f, 0, 0.125f, 0, 25.0f};
  static const float box4[4] = {0.25f, 0.25f, 0.25f, 0.25f}, one[1] = {1.0f};
  const float box3[3] = {third, third, third};
  const float box5[5] = {fifth, fifth, fifth, fifth, fifth};
  const struct {
    const char *text;
    const float *taps_x;
    int kw;
    const float *taps_y;
    int kh;
    plm_sepconv2d_params params;
  } cases[] = {
      {"sepconv2d kernel_x=1,2,1 kernel_y=box:3", smooth, 3, box3, 3,
       sep_params(1, 1, 0, 0, PLM_BORDER_ZERO)},
      {"sepconv2d kernel_x=1,2,1 kernel_y=box:3 pad=same border=reflect101", smooth, 3, box3, 3,
       sep_params(1, 1, 1, 1, PLM_BORDER_REFLECT101)},
      {"sepconv2d kernel_x=box:5 kernel_y=-0.5,0,0.125,0,25 stride=2,3 pad=4,1 border=replicate",
       box5, 5, derivative, 5, sep_params(2, 3, 4, 1, PLM_BORDER_REPLICATE)},
      {"sepconv2d kernel_x=1 kernel_y=box:1 pad=same", one, 1, one, 1,
       sep_params(1, 1, 0, 0, PLM_BORDER_ZERO)},
      {"sepconv2d kernel_x=box:4 kernel_y=1,2,1 pad=3,2", box4, 4, smooth, 3,
       sep_params(1, 1, 3, 2, PLM_BORDER_ZERO)},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    plm_shape got_shape, want_shape;
    float *got = run_text(cases[c].text, NULL, 0, &frame, &got_shape);
    float *want = run_op(&frame, cases[c].taps_x, cases[c].kw, cases[c].taps_y, cases[c].kh,
                         &cases[c].params, &want_shape);
    expect_same_output(cases[c].text, got, &got_shape, want, &want_shape);
    free(got);
    free(want);
  }
  plm_test_release(&frame);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  free(host);
  free(image);
}
END_TEST

/* Kernels as named tensors (kernel_x (KW) or (1, KW), kernel_y (KH) or (KH, 1)), and the
 * same pipeline built by hand with plm_pipeline_add_sepconv2d. */
START_TEST(test_text_named_tensors_and_the_builder) {
  uint16_t *host;
  double *image;
  plm_tensor frame = text_frame(&host, &image);
  float taps_x[5], taps_y[3];
  random_taps(taps_x, 5, 91);
  random_taps(taps_y, 3, 92);
  const plm_named_tensor tensors[] = {
      {.name = "kx",
       .shape = {.dtype = PLM_DTYPE_F32, .ndim = 1, .dims = {5}},
       .host_data = taps_x},
      {.name = "kx.row",
       .shape = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {1, 5}},
       .host_data = taps_x},
      {.name = "ky",
       .shape = {.dtype = PLM_DTYPE_F32, .ndim = 1, .dims = {3}},
       .host_data = taps_y},
      {.name = "ky-column",
       .shape = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {3, 1}},
       .host_data = taps_y},
  };
  const int count = sizeof tensors / sizeof tensors[0];
  const plm_sepconv2d_params params = sep_params(1, 1, 1, 2, PLM_BORDER_REFLECT101);
  plm_shape want_shape;
  float *want = run_op(&frame, taps_x, 5, taps_y, 3, &params, &want_shape);
  static const char *const texts[] = {
      "sepconv2d kernel_x=@kx kernel_y=@ky pad=same border=reflect101",
      "sepconv2d kernel_x=@kx.row kernel_y=@ky-column pad=same border=reflect101",
      "sepconv2d kernel_y=@ky-column kernel_x=@kx pad=1,2 border=reflect101",
  };
  for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
    plm_shape got_shape;
    float *got = run_text(texts[t], tensors, count, &frame, &got_shape);
    expect_same_output(texts[t], got, &got_shape, want, &want_shape);
    free(got);
  }
  /* By hand: the kernels as constants, as the text makes them. */
  plm_pipeline *pl = NULL;
  plm_pipe_tensor x, kx, ky, out;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, text_dims, &x));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, tensors[1].shape.dims, taps_x, &kx));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 1, tensors[2].shape.dims, taps_y, &ky));
  PLM_CHECK_OK(plm_pipeline_add_sepconv2d(pl, x, kx, ky, &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
  plm_tensor result;
  plm_test_compile_and_run(pl, &frame, &result);
  float *got = plm_test_download(&result);
  const plm_shape got_shape = {
      .dtype = result.dtype, .ndim = 2, .dims = {result.dims[0], result.dims[1]}};
  expect_same_output("plm_pipeline_add_sepconv2d", got, &got_shape, want, &want_shape);
  free(got);
  plm_test_release(&result);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free(want);
  plm_test_release(&frame);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  free(host);
  free(image);
}
END_TEST

/* Texts refused, each with plm_pipeline_parse's prefix, the element and what was wrong. */
START_TEST(test_text_refusals) {
  const float column[3] = {1, 2, 1}, with_nan[3] = {1, NAN, 1};
  const plm_named_tensor tensors[] = {
      {.name = "col",
       .shape = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {3, 1}},
       .host_data = column},
      {.name = "nan",
       .shape = {.dtype = PLM_DTYPE_F32, .ndim = 1, .dims = {3}},
       .host_data = with_nan},
  };
  static const struct {
    const char *text, *needles[3];
  } cases[] = {
      /* LoG is not separable. */
      {"sepconv2d kernel_x=log:5:1 kernel_y=gauss:5:1", {"key 'kernel_x'", "log:5:1", "separable"}},
      {"sepconv2d kernel_x=gauss:5:1 kernel_y=log:5:1", {"key 'kernel_y'", "log:5:1", "separable"}},
      /* size= is for conv2d's inline kernels, not one dimension's. */
      {"sepconv2d kernel_x=1,2,1 kernel_y=1,2,1 size=1x3", {"key 'size'", NULL}},
      {"sepconv2d kernel_x=box:3", {"'sepconv2d'", "missing key 'kernel_y'", NULL}},
      {"sepconv2d kernel_y=box:3", {"'sepconv2d'", "missing key 'kernel_x'", NULL}},
      {"sepconv2d kernel_x=gauss:4:1 kernel_y=box:3", {"kernel_x", "gauss:4:1", NULL}},
      {"sepconv2d kernel_x=box:32 kernel_y=box:3", {"kernel_x", "box:32", NULL}},
      {"sepconv2d kernel_x=box:3 kernel_y=1,2,,3", {"kernel_y", "1,2,,3", NULL}},
      {"sepconv2d kernel_x=box:4 kernel_y=box:3 pad=same", {"'sepconv2d'", "pad", "same"}},
      {"sepconv2d kernel_x=box:3 kernel_y=box:3 border=mirror", {"border", "mirror", NULL}},
      {"sepconv2d kernel_x=box:3 kernel_y=box:3 stride=0,1", {"stride", "0,1", NULL}},
      {"sepconv2d kernel_x=box:3 kernel=box:3 kernel_y=box:3", {"unknown key 'kernel'", NULL}},
      /* The op's own refusal when the node is added: 31 rows on 23. */
      {"sepconv2d kernel_x=box:3 kernel_y=box:31", {"element 1 'sepconv2d': ", NULL}},
      /* Named tensors: a column for kernel_x, a NaN. */
      {"sepconv2d kernel_x=@col kernel_y=@col", {"element 1 'sepconv2d': ", "kernel_x", NULL}},
      {"sepconv2d kernel_x=box:3 kernel_y=@nan", {"kernel_y", "'nan'", NULL}},
      {"sepconv2d kernel_x=@nope kernel_y=@col", {"kernel_x", "no tensor named 'nope'", NULL}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    plm_pipeline *pl = (plm_pipeline *)&pl; /* must be reset to NULL */
    plm_clear_error();
    plm_status status = plm_pipeline_parse_with_tensors(plm_test_ctx, cases[i].text, PLM_DTYPE_U16,
                                                        2, text_dims, tensors, 2, &pl);
    ck_assert_msg(status == PLM_ERR_INVALID_ARG, "'%s' -> %s (%s)", cases[i].text,
                  plm_status_str(status), plm_last_error());
    ck_assert_ptr_null(pl);
    ck_assert_msg(
        strstr(plm_last_error(), "plm_pipeline_parse_with_tensors: element 1") == plm_last_error(),
        "'%s': message \"%s\"", cases[i].text, plm_last_error());
    for (int k = 0; k < 3 && cases[i].needles[k]; k++)
      ck_assert_msg(strstr(plm_last_error(), cases[i].needles[k]) != NULL,
                    "'%s': message \"%s\" does not mention \"%s\"", cases[i].text, plm_last_error(),
                    cases[i].needles[k]);
  }
  /* plm_pipeline_parse (no tensors) says the same for LoG. */
  plm_pipeline *pl = NULL;
  PLM_CHECK_FAILS(plm_pipeline_parse(plm_test_ctx, "sepconv2d kernel_x=log:5:1 kernel_y=box:5",
                                     PLM_DTYPE_U16, 2, text_dims, &pl),
                  PLM_ERR_INVALID_ARG, "plm_pipeline_parse: element 1 'sepconv2d': key 'kernel_x'");
  ck_assert_ptr_null(pl);
}
END_TEST

/* An unknown key's message lists the keys the element takes: size is not one of them
 * (it is refused for 1-D kernels). */
START_TEST(test_text_unknown_key_lists_the_keys) {
  plm_pipeline *pl = NULL;
  PLM_CHECK_FAILS(plm_pipeline_parse(plm_test_ctx, "sepconv2d kernel_x=box:3 kernel_y=box:3 k=1",
                                     PLM_DTYPE_U16, 2, text_dims, &pl),
                  PLM_ERR_INVALID_ARG,
                  "plm_pipeline_parse: element 1 'sepconv2d': unknown key 'k' (sepconv2d takes "
                  "kernel_x, kernel_y, stride, pad, border)");
  ck_assert_ptr_null(pl);
}
END_TEST

static Suite *sepconv2d_suite(void) {
  Suite *suite = suite_create("sepconv2d");
  TCase *tcase = tcase_create("sepconv2d");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_same_size_matches_for_every_shape_dtype_border_and_kernel);
  tcase_add_test(tcase, test_kernel_forms_give_the_same_output);
  tcase_add_test(tcase, test_strides_paddings_and_even_kernels_match);
  tcase_add_test(tcase, test_every_kernel_length_to_20);
  tcase_add_test(tcase, test_padding_beyond_the_image_reflects_repeatedly);
  tcase_add_test(tcase, test_31_taps_on_small_images);
  tcase_add_test(tcase, test_outputs_wider_than_a_block);
  tcase_add_test(tcase, test_large_strides_with_large_kernels);
  tcase_add_test(tcase, test_huge_padding_on_a_small_image);
  tcase_add_test(tcase, test_outputs_beyond_one_grid);
  tcase_add_test(tcase, test_nan_and_infinities_propagate_as_the_pixel_function);
  tcase_add_test(tcase, test_subnormals_are_kept);
  tcase_add_test(tcase, test_equals_conv2d_with_the_outer_product);
  tcase_add_test(tcase, test_integer_taps_equal_conv2d_exactly);
  tcase_add_test(tcase, test_output_shape_cost_and_defaults);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  tcase_add_test(tcase, test_text_gauss_kernels_are_the_1d_gaussian);
  tcase_add_test(tcase, test_text_gauss_is_conv2d_gauss);
  tcase_add_test(tcase, test_text_inline_and_box_kernels);
  tcase_add_test(tcase, test_text_named_tensors_and_the_builder);
  tcase_add_test(tcase, test_text_refusals);
  tcase_add_test(tcase, test_text_unknown_key_lists_the_keys);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(sepconv2d_suite);
}

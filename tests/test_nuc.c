/* tests/test_nuc.c: the nuc op (plume/nuc.h) on the backend under test, against the
 * correctly rounded reference computed here (C's fmaf of gain, x and offset: the bits both
 * backends must give), itself checked within one f32 ulp of the float64 gain * x + offset.
 * Also stacks sharing one calibration, in place on f32, NaN, the output's shape and cost,
 * and every refusal. Inputs go to the device with stream copies, so the same test runs on
 * cuda (the fixtures of tests/fixtures/MANIFEST.json check it against exact fractions). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Host input of count elements of dtype (f32 with a NaN and infinities), also as floats. */
static void *make_input(plm_dtype dtype, int64_t count, float *as_float, uint64_t seed) {
  void *host = malloc((size_t)count * plm_dtype_size(dtype));
  ck_assert_ptr_nonnull(host);
  uint64_t state = seed | 1;
  for (int64_t i = 0; i < count; i++) {
    uint64_t r = plm_test_random(&state);
    switch (dtype) {
      case PLM_DTYPE_U8: ((uint8_t *)host)[i] = (uint8_t)r; break;
      case PLM_DTYPE_U16: ((uint16_t *)host)[i] = (uint16_t)r; break;
      default: {
        float v = (float)((double)(r >> 11) / 9007199254740992.0 * 2e4 - 1e4);
        if (i == 5) v = NAN;
        if (i == 6) v = INFINITY;
        ((float *)host)[i] = v;
      }
    }
    as_float[i] = dtype == PLM_DTYPE_U8    ? (float)((uint8_t *)host)[i]
                  : dtype == PLM_DTYPE_U16 ? (float)((uint16_t *)host)[i]
                                           : ((float *)host)[i];
  }
  return host;
}

/* The distance in f32 ulps between two finite floats of one sign. */
static int64_t ulps(float a, float b) {
  int32_t x, y;
  memcpy(&x, &a, sizeof x);
  memcpy(&y, &b, sizeof y);
  return llabs((long long)x - (long long)y);
}

/* Run nuc on a random input of dims (the last two (h, w)) and compare; in place when asked
 * (f32 only). Returns the mismatches. */
static int64_t run_case(plm_dtype dtype, int ndim, const int64_t *dims, bool in_place,
                        uint64_t seed) {
  const int64_t h = dims[ndim - 2], w = dims[ndim - 1], pixels = h * w;
  plm_tensor in, out, gain, offset;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, ndim, dims, &in));
  if (!in_place)
    PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, ndim, dims, &out));
  const int64_t count = plm_tensor_numel(&in);
  float *x = malloc((size_t)count * sizeof *x), *got = malloc((size_t)count * sizeof *got);
  float *g = plm_test_uniform_f32(pixels, 0.25, seed + 1),
        *o = plm_test_uniform_f32(pixels, 60.0, seed + 2);
  ck_assert(x && got && g && o);
  for (int64_t p = 0; p < pixels; p++) g[p] += 1.0f;
  void *host = make_input(dtype, count, x, seed);
  const int64_t hw[2] = {h, w};
  gain = plm_test_upload(PLM_DTYPE_F32, 2, hw, g);
  offset = plm_test_upload(PLM_DTYPE_F32, 2, hw, o);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, host, plm_tensor_bytes(&in),
                                 PLM_COPY_HOST_TO_DEVICE));
  plm_tensor *target = in_place ? &in : &out;
  PLM_CHECK_OK(plm_nuc(plm_test_stream, &in, &gain, &offset, target));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got, target->data, (size_t)count * sizeof *got,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  int64_t bad = 0;
  for (int64_t i = 0; i < count; i++) {
    const int64_t p = i % pixels;
    const float want = fmaf(g[p], x[i], o[p]);
    const float plain = (float)((double)g[p] * (double)x[i] + (double)o[p]);
    if (isfinite(want)) ck_assert_msg(ulps(want, plain) <= 1, "fmaf and float64 differ");
    const bool same = (isnan(want) && isnan(got[i])) || memcmp(&want, &got[i], sizeof want) == 0;
    if (!same && bad++ == 0)
      printf("nuc %s: element %lld: got %.9g, expected %.9g\n", plm_dtype_name(dtype), (long long)i,
             got[i], want);
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  if (!in_place) PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &gain));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &offset));
  free(host);
  free(x);
  free(got);
  free(g);
  free(o);
  return bad;
}

START_TEST(test_matches_the_rounded_reference_for_every_shape_and_dtype) {
  static const int64_t shapes[][3] = {{1, 1, 0}, {1, 37, 0}, {41, 1, 0}, {257, 255, 0}, {3, 7, 13}};
  static const int ndims[] = {2, 2, 2, 2, 3};
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++)
    for (size_t t = 0; t < 3; t++) {
      int64_t bad =
          run_case(dtypes[t], ndims[s], shapes[s], false, 0x2545f4914f6cdd1dull + s * 7 + t);
      ck_assert_msg(bad == 0, "%lld mismatches: shape %zu, dtype %s", (long long)bad, s,
                    plm_dtype_name(dtypes[t]));
    }
  const int64_t stack[3] = {4, 33, 70};
  ck_assert_int_eq(run_case(PLM_DTYPE_F32, 3, stack, true, 99), 0);
}
END_TEST

START_TEST(test_output_shape_and_cost) {
  const int64_t dims[3] = {2, 6, 8}, hw[2] = {6, 8};
  uint16_t storage[2 * 6 * 8];
  float calibration[6 * 8];
  plm_tensor in, gain;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U16, 3, dims, &in));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, calibration, PLM_DTYPE_F32, 2, hw, &gain));
  plm_shape shape;
  PLM_CHECK_OK(plm_nuc_output(&in, &gain, &gain, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_F32);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert_int_eq(shape.dims[0], 2);
  ck_assert_int_eq(shape.dims[2], 8);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_nuc_cost(&in, &gain, &gain, &cost));
  ck_assert(cost.bytes == 96.0 * (2 + 4 + 8) && cost.flops == 96.0 * 2);
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t dims[3] = {2, 4, 5}, hw[2] = {4, 5}, wrong[2] = {5, 4}, line[1] = {20};
  plm_tensor in, out, gain, offset, bad_shape, as_u16, as_i32, out_u8, one_dim;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 3, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 3, dims, &out));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, hw, &gain));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, hw, &offset));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, wrong, &bad_shape));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, hw, &as_u16));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 3, dims, &as_i32));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 3, dims, &out_u8));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 1, line, &one_dim));

  PLM_CHECK_FAILS(plm_nuc(NULL, &in, &gain, &offset, &out), PLM_ERR_INVALID_ARG,
                  "plm_nuc: stream is NULL");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, NULL, &gain, &offset, &out), PLM_ERR_INVALID_ARG,
                  "plm_nuc: in is NULL");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &in, NULL, &offset, &out), PLM_ERR_INVALID_ARG,
                  "gain is NULL");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &in, &gain, NULL, &out), PLM_ERR_INVALID_ARG,
                  "offset is NULL");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &in, &gain, &offset, NULL), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &as_i32, &gain, &offset, &out), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &one_dim, &gain, &offset, &one_dim), PLM_ERR_INVALID_ARG,
                  "in->ndim 1: nuc needs (H, W) or (N, H, W)");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &in, &bad_shape, &offset, &out), PLM_ERR_INVALID_ARG,
                  "gain is 5x4 but in's frames are 4x5");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &in, &gain, &out, &out), PLM_ERR_INVALID_ARG,
                  "offset is 2x4x5 but in's frames are 4x5");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &in, &as_u16, &offset, &out), PLM_ERR_INVALID_ARG,
                  "gain->dtype u16 is not f32");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &in, &gain, &as_u16, &out), PLM_ERR_INVALID_ARG,
                  "offset->dtype u16 is not f32");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &in, &gain, &offset, &out_u8), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &in, &gain, &offset, &bad_shape), PLM_ERR_INVALID_ARG,
                  "out is 5x4 but in is 2x4x5");
  plm_tensor over_gain = out;
  over_gain.data = gain.data;
  PLM_CHECK_FAILS(plm_nuc(plm_test_stream, &in, &gain, &offset, &over_gain), PLM_ERR_INVALID_ARG,
                  "overlaps gain");

  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&in, &out, &gain, &offset, &bad_shape, &as_u16, &as_i32, &out_u8, &one_dim};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

static Suite *nuc_suite(void) {
  Suite *suite = suite_create("nuc");
  TCase *tcase = tcase_create("nuc");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_add_test(tcase, test_matches_the_rounded_reference_for_every_shape_and_dtype);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(nuc_suite);
}

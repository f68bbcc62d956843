/* tests/test_clip.c: the clip op (plume/clip.h) on the backend under test, against a
 * reference computed here in double: min(max(x, lo), hi) of each value, which is exact in
 * f32 (u8 and u16 values are exact there) and is numpy's
 * np.clip(in.astype(np.float32), lo, hi). Also NaN and infinities, open ranges, a stack,
 * in place, the output's shape and cost, and every refusal. Inputs go to the device with
 * stream copies, so the same test runs on cuda (the fixtures of
 * tests/fixtures/MANIFEST.json check it against numpy itself). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* An f32 input value: a multiple of 1/256 in (-4096, 4096). */
static float f32_value(uint64_t r, int64_t i, const void *user) {
  (void)i, (void)user;
  return (float)((int64_t)(r % (1u << 21)) - (1 << 20)) / 256.0f;
}

static void *make_input(plm_dtype dtype, int64_t count, double *as_double, uint64_t seed) {
  return plm_test_values(dtype, count, seed, f32_value, NULL, as_double);
}

/* Run clip on random inputs of dims, into a new output or in place (f32 only). Returns
 * the mismatches. */
static int64_t run_case(plm_dtype dtype, int ndim, const int64_t *dims, bool in_place,
                        const plm_clip_params *params, uint64_t seed) {
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, ndim, dims, &in));
  if (!in_place)
    PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, ndim, dims, &out));
  const int64_t count = plm_tensor_numel(&in);
  double *x = malloc((size_t)count * sizeof *x);
  float *got = malloc((size_t)count * sizeof *got);
  ck_assert(x && got);
  void *host = make_input(dtype, count, x, seed);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, host, plm_tensor_bytes(&in),
                                 PLM_COPY_HOST_TO_DEVICE));
  plm_tensor *target = in_place ? &in : &out;
  PLM_CHECK_OK(plm_clip(plm_test_stream, &in, params, target));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got, target->data, (size_t)count * 4,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  int64_t bad = 0;
  for (int64_t i = 0; i < count; i++) {
    const double lo = params->lo, hi = params->hi;
    const float want = (float)(x[i] < lo ? lo : x[i] > hi ? hi : x[i]);
    if (memcmp(&want, &got[i], sizeof want) != 0 && bad++ == 0)
      printf("clip %s: element %lld: %.9g in [%.9g, %.9g] got %.9g, expected %.9g\n",
             plm_dtype_name(dtype), (long long)i, x[i], lo, hi, (double)got[i], (double)want);
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  if (!in_place) PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
  free(host);
  free(x);
  free(got);
  return bad;
}

START_TEST(test_matches_the_reference_for_every_shape_and_dtype) {
  static const int64_t shapes[][3] = {{1, 1, 0}, {1, 37, 0}, {257, 255, 0}, {3, 7, 13}};
  static const int ndims[] = {2, 2, 2, 3};
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  const plm_clip_params ranges[] = {
      {.lo = 40.5f, .hi = 200.0f}, {.lo = -100.25f, .hi = 3000.0f}, {.lo = 7.0f, .hi = 7.0f}};
  for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++)
    for (size_t t = 0; t < 3; t++)
      for (size_t m = 0; m < 3; m++) {
        int64_t bad =
            run_case(dtypes[t], ndims[s], shapes[s], false, &ranges[m], s * 9 + t * 3 + m);
        ck_assert_msg(bad == 0, "%lld mismatches: shape %zu, dtype %s, range %zu", (long long)bad,
                      s, plm_dtype_name(dtypes[t]), m);
      }
  const int64_t stack[3] = {4, 33, 70};
  ck_assert_int_eq(run_case(PLM_DTYPE_F32, 3, stack, true, &ranges[1], 11), 0);
}
END_TEST

START_TEST(test_specials_worked_by_hand) {
  const int64_t dims[1] = {6};
  const float x[6] = {NAN, INFINITY, -INFINITY, 2.0f, -3.0f, 0.5f};
  const plm_clip_params closed = {.lo = -1.0f, .hi = 1.0f};
  const plm_clip_params open_above = {.lo = 0.0f, .hi = INFINITY};
  plm_tensor a = plm_test_upload(PLM_DTYPE_F32, 1, dims, x);
  plm_tensor b = plm_test_upload(PLM_DTYPE_F32, 1, dims, x);
  PLM_CHECK_OK(plm_clip(plm_test_stream, &a, &closed, &a));
  PLM_CHECK_OK(plm_clip(plm_test_stream, &b, &open_above, &b));
  float got[6], got_open[6];
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got, a.data, 24, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got_open, b.data, 24, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert(isnan(got[0]) && isnan(got_open[0])); /* NaN propagates, as numpy's clip */
  ck_assert(got[1] == 1.0f && got[2] == -1.0f && got[3] == 1.0f && got[4] == -1.0f);
  ck_assert(got[5] == 0.5f);
  ck_assert(got_open[1] == INFINITY && got_open[2] == 0.0f && got_open[3] == 2.0f);
  ck_assert(got_open[4] == 0.0f && got_open[5] == 0.5f);
  const plm_clip_params defaults = plm_clip_params_default();
  ck_assert(defaults.lo == 0.0f && defaults.hi == 0.0f); /* required: the text must give them */
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &a));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &b));
}
END_TEST

START_TEST(test_output_shape_and_cost) {
  const int64_t dims[3] = {2, 6, 8};
  uint16_t storage[2 * 6 * 8];
  plm_tensor in;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U16, 3, dims, &in));
  const plm_clip_params params = {.lo = 1.0f, .hi = 9.0f};
  plm_shape shape;
  PLM_CHECK_OK(plm_clip_output(&in, &params, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_F32);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert_int_eq(shape.dims[0], 2);
  ck_assert_int_eq(shape.dims[2], 8);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_clip_cost(&in, &params, &cost));
  ck_assert(cost.bytes == 96.0 * (2 + 4) && cost.flops == 96.0 * 2);
  PLM_CHECK_FAILS(plm_clip_output(&in, &params, NULL), PLM_ERR_INVALID_ARG,
                  "plm_clip_output: out is NULL");
  PLM_CHECK_FAILS(plm_clip_cost(&in, NULL, &cost), PLM_ERR_INVALID_ARG,
                  "plm_clip_cost: params is NULL");
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t dims[2] = {4, 5}, wrong[2] = {5, 4};
  plm_tensor in, out, other_shape, as_u8, as_i32;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &out));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, wrong, &other_shape));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &as_u8));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &as_i32));
  const plm_clip_params ok = {.lo = 2.0f, .hi = 5.0f};
  const plm_clip_params nan_lo = {.lo = NAN, .hi = 5.0f};
  const plm_clip_params nan_hi = {.lo = 2.0f, .hi = NAN};
  const plm_clip_params reversed = {.lo = 5.0f, .hi = 2.0f};

  PLM_CHECK_FAILS(plm_clip(NULL, &in, &ok, &out), PLM_ERR_INVALID_ARG, "plm_clip: stream is NULL");
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, NULL, &ok, &out), PLM_ERR_INVALID_ARG,
                  "plm_clip: in is NULL");
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, &in, NULL, &out), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, &in, &nan_lo, &out), PLM_ERR_INVALID_ARG,
                  "params->lo is NaN");
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, &in, &nan_hi, &out), PLM_ERR_INVALID_ARG,
                  "params->hi is NaN");
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, &in, &reversed, &out), PLM_ERR_INVALID_ARG,
                  "params->lo 5 is above params->hi 2");
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, &in, &ok, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, &as_i32, &ok, &out), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, &in, &ok, &as_u8), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, &in, &ok, &other_shape), PLM_ERR_INVALID_ARG,
                  "out is 5x4 but in is 4x5");

  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&in, &out, &other_shape, &as_u8, &as_i32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

static Suite *clip_suite(void) {
  Suite *suite = suite_create("clip");
  TCase *tcase = tcase_create("clip");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_add_test(tcase, test_matches_the_reference_for_every_shape_and_dtype);
  tcase_add_test(tcase, test_specials_worked_by_hand);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(clip_suite);
}

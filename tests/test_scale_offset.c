/* tests/test_scale_offset.c: the scale_offset op (plume/scale_offset.h) on the backend
 * under test, against a float64 reference computed here: in * scale + offset in double,
 * rounded once to f32, which is numpy's (in.astype(np.float64) * scale + offset)
 * .astype(np.float32). The inputs are chosen so that the double is exact (u8 and u16
 * values; f32 values that are multiples of 1/256 below 2^13), where the op's single
 * rounding (fmaf) must give the same bits. Also NaN and infinities, a stack, in place,
 * the defaults, the output's shape and cost, and every refusal. Inputs go to the device
 * with stream copies, so the same test runs on cuda (the fixtures of
 * tests/fixtures/MANIFEST.json check it against numpy itself). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* An f32 input value: a multiple of 1/256 in (-4096, 4096), 21 significant bits at most. */
static float f32_value(uint64_t r, int64_t i, const void *user) {
  (void)i, (void)user;
  return (float)((int64_t)(r % (1u << 21)) - (1 << 20)) / 256.0f;
}

static void *make_input(plm_dtype dtype, int64_t count, double *as_double, uint64_t seed) {
  return plm_test_values(dtype, count, seed, f32_value, NULL, as_double);
}

/* Run scale_offset on random inputs of dims, into a new output or in place (f32 only).
 * Returns the mismatches. */
static int64_t run_case(plm_dtype dtype, int ndim, const int64_t *dims, bool in_place,
                        const plm_scale_offset_params *params, uint64_t seed) {
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
  PLM_CHECK_OK(plm_scale_offset(plm_test_stream, &in, params, target));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got, target->data, (size_t)count * 4,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  int64_t bad = 0;
  for (int64_t i = 0; i < count; i++) {
    const float want = (float)(x[i] * (double)params->scale + (double)params->offset);
    if (memcmp(&want, &got[i], sizeof want) != 0 && bad++ == 0)
      printf("scale_offset %s: element %lld: %.9g * %.9g + %.9g got %.9g, expected %.9g\n",
             plm_dtype_name(dtype), (long long)i, x[i], (double)params->scale,
             (double)params->offset, (double)got[i], (double)want);
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
  const plm_scale_offset_params maps[] = {
      {.scale = 0.37f, .offset = -12.5f}, {.scale = -3.0f, .offset = 0.1f}, {1.0f, 0.0f}};
  for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++)
    for (size_t t = 0; t < 3; t++)
      for (size_t m = 0; m < 3; m++) {
        int64_t bad = run_case(dtypes[t], ndims[s], shapes[s], false, &maps[m], s * 9 + t * 3 + m);
        ck_assert_msg(bad == 0, "%lld mismatches: shape %zu, dtype %s, map %zu", (long long)bad, s,
                      plm_dtype_name(dtypes[t]), m);
      }
  const int64_t stack[3] = {4, 33, 70};
  ck_assert_int_eq(run_case(PLM_DTYPE_F32, 3, stack, true, &maps[0], 11), 0);
}
END_TEST

START_TEST(test_specials_and_defaults_worked_by_hand) {
  const plm_scale_offset_params defaults = plm_scale_offset_params_default();
  ck_assert(defaults.scale == 1.0f && defaults.offset == 0.0f);
  const int64_t dims[1] = {5};
  const float x[5] = {NAN, INFINITY, -INFINITY, 2.0f, 3e38f};
  const plm_scale_offset_params zero = {.scale = 0.0f, .offset = 1.0f};
  const plm_scale_offset_params big = {.scale = 3.0f, .offset = 0.0f};
  plm_tensor in = plm_test_upload(PLM_DTYPE_F32, 1, dims, x);
  plm_tensor a = plm_test_upload(PLM_DTYPE_F32, 1, dims, x);
  PLM_CHECK_OK(plm_scale_offset(plm_test_stream, &in, &zero, &in));
  PLM_CHECK_OK(plm_scale_offset(plm_test_stream, &a, &big, &a));
  float got[5], got_big[5];
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got, in.data, 20, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got_big, a.data, 20, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert(isnan(got[0]));                       /* NaN propagates */
  ck_assert(isnan(got[1]) && isnan(got[2]));      /* inf * 0 is NaN */
  ck_assert(got[3] == 1.0f && got[4] == 1.0f);    /* 0 x + 1 */
  ck_assert(isinf(got_big[4]) && got_big[4] > 0); /* 9e38 overflows f32, as numpy's */
  ck_assert(got_big[1] == INFINITY && got_big[2] == -INFINITY && got_big[3] == 6.0f);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &a));
}
END_TEST

START_TEST(test_output_shape_and_cost) {
  const int64_t dims[3] = {2, 6, 8};
  uint16_t storage[2 * 6 * 8];
  plm_tensor in;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U16, 3, dims, &in));
  const plm_scale_offset_params params = {.scale = 2.0f, .offset = 1.0f};
  plm_shape shape;
  PLM_CHECK_OK(plm_scale_offset_output(&in, &params, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_F32);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert_int_eq(shape.dims[0], 2);
  ck_assert_int_eq(shape.dims[2], 8);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_scale_offset_cost(&in, &params, &cost));
  ck_assert(cost.bytes == 96.0 * (2 + 4) && cost.flops == 96.0 * 2);
  PLM_CHECK_FAILS(plm_scale_offset_output(&in, &params, NULL), PLM_ERR_INVALID_ARG,
                  "plm_scale_offset_output: out is NULL");
  PLM_CHECK_FAILS(plm_scale_offset_cost(&in, NULL, &cost), PLM_ERR_INVALID_ARG,
                  "plm_scale_offset_cost: params is NULL");
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
  const plm_scale_offset_params ok = {.scale = 2.0f, .offset = 0.0f};
  const plm_scale_offset_params nan_scale = {.scale = NAN, .offset = 0.0f};
  const plm_scale_offset_params inf_offset = {.scale = 1.0f, .offset = -INFINITY};

  PLM_CHECK_FAILS(plm_scale_offset(NULL, &in, &ok, &out), PLM_ERR_INVALID_ARG,
                  "plm_scale_offset: stream is NULL");
  PLM_CHECK_FAILS(plm_scale_offset(plm_test_stream, NULL, &ok, &out), PLM_ERR_INVALID_ARG,
                  "plm_scale_offset: in is NULL");
  PLM_CHECK_FAILS(plm_scale_offset(plm_test_stream, &in, NULL, &out), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  PLM_CHECK_FAILS(plm_scale_offset(plm_test_stream, &in, &nan_scale, &out), PLM_ERR_INVALID_ARG,
                  "params->scale nan is not finite");
  PLM_CHECK_FAILS(plm_scale_offset(plm_test_stream, &in, &inf_offset, &out), PLM_ERR_INVALID_ARG,
                  "params->offset -inf is not finite");
  PLM_CHECK_FAILS(plm_scale_offset(plm_test_stream, &in, &ok, NULL), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  PLM_CHECK_FAILS(plm_scale_offset(plm_test_stream, &as_i32, &ok, &out), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_scale_offset(plm_test_stream, &in, &ok, &as_u8), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_scale_offset(plm_test_stream, &as_u8, &ok, &as_u8), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not f32"); /* in place only for f32 */
  PLM_CHECK_FAILS(plm_scale_offset(plm_test_stream, &in, &ok, &other_shape), PLM_ERR_INVALID_ARG,
                  "out is 5x4 but in is 4x5");

  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&in, &out, &other_shape, &as_u8, &as_i32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

static Suite *scale_offset_suite(void) {
  Suite *suite = suite_create("scale_offset");
  TCase *tcase = tcase_create("scale_offset");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_add_test(tcase, test_matches_the_reference_for_every_shape_and_dtype);
  tcase_add_test(tcase, test_specials_and_defaults_worked_by_hand);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(scale_offset_suite);
}

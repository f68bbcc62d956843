/* tests/test_scale_offset.c: the scale_offset op (plume/scale_offset.h) on the backend
 * under test, against a float64 reference computed here: in * scale + offset in double,
 * rounded once to f32, which is numpy's (in.astype(np.float64) * scale + offset)
 * .astype(np.float32). The inputs are chosen so that the double is exact (u8 and u16
 * values; f32 values that are multiples of 1/256 below 2^13), where the op's single
 * rounding (fmaf) must give the same bits. Also NaN and infinities, a stack, in place,
 * the defaults, the output's shape and cost, and every refusal (the cases every unary
 * element-wise op shares are tests/harness_unary.h's). Inputs go to the device with stream
 * copies, so the same test runs on cuda (the fixtures of
 * tests/fixtures/MANIFEST.json check it against numpy itself). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "harness_unary.h"

static plm_status run_scale_offset(plm_stream *stream, const plm_tensor *in, const void *params,
                                   plm_tensor *out) {
  return plm_scale_offset(stream, in, params, out);
}

/* x * scale + offset in double (exact for these inputs), rounded once to f32. */
static float scale_offset_reference(double x, const void *params) {
  const plm_scale_offset_params *p = params;
  return (float)(x * (double)p->scale + (double)p->offset);
}

static void describe_map(const void *params, char *text, size_t size) {
  const plm_scale_offset_params *p = params;
  snprintf(text, size, "* %.9g + %.9g", (double)p->scale, (double)p->offset);
}

static const plm_test_unary_op scale_offset_op = {.name = "scale_offset",
                                                  .run = run_scale_offset,
                                                  .reference = scale_offset_reference,
                                                  .describe = describe_map};

START_TEST(test_matches_the_reference_for_every_shape_and_dtype) {
  const plm_scale_offset_params maps[] = {
      {.scale = 0.37f, .offset = -12.5f}, {.scale = -3.0f, .offset = 0.1f}, {1.0f, 0.0f}};
  plm_test_unary_matches_reference(&scale_offset_op, maps, 3, sizeof maps[0]);
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
  const plm_scale_offset_params ok = {.scale = 2.0f, .offset = 0.0f};
  plm_test_unary_refuses_bad_tensors(&scale_offset_op, &ok);

  const int64_t dims[2] = {4, 5};
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &out));
  const plm_scale_offset_params nan_scale = {.scale = NAN, .offset = 0.0f};
  const plm_scale_offset_params inf_offset = {.scale = 1.0f, .offset = -INFINITY};
  PLM_CHECK_FAILS(plm_scale_offset(plm_test_stream, &in, &nan_scale, &out), PLM_ERR_INVALID_ARG,
                  "params->scale nan is not finite");
  PLM_CHECK_FAILS(plm_scale_offset(plm_test_stream, &in, &inf_offset, &out), PLM_ERR_INVALID_ARG,
                  "params->offset -inf is not finite");
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
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

/* tests/test_clip.c: the clip op (plume/clip.h) on the backend under test, against a
 * reference computed here in double: min(max(x, lo), hi) of each value, which is exact in
 * f32 (u8 and u16 values are exact there) and is numpy's
 * np.clip(in.astype(np.float32), lo, hi). Also NaN and infinities, open ranges, a stack,
 * in place, the output's shape and cost, and every refusal (the cases every unary
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

static plm_status run_clip(plm_stream *stream, const plm_tensor *in, const void *params,
                           plm_tensor *out) {
  return plm_clip(stream, in, params, out);
}

/* min(max(x, lo), hi): exact, so rounding it to f32 is numpy's f32 clip. */
static float clip_reference(double x, const void *params) {
  const plm_clip_params *p = params;
  const double lo = p->lo, hi = p->hi;
  return (float)(x < lo ? lo : x > hi ? hi : x);
}

static void describe_range(const void *params, char *text, size_t size) {
  const plm_clip_params *p = params;
  snprintf(text, size, "in [%.9g, %.9g]", (double)p->lo, (double)p->hi);
}

static const plm_test_unary_op clip_op = {
    .name = "clip", .run = run_clip, .reference = clip_reference, .describe = describe_range};

START_TEST(test_matches_the_reference_for_every_shape_and_dtype) {
  const plm_clip_params ranges[] = {
      {.lo = -100.25f, .hi = 3000.0f}, {.lo = 40.5f, .hi = 200.0f}, {.lo = 7.0f, .hi = 7.0f}};
  plm_test_unary_matches_reference(&clip_op, ranges, 3, sizeof ranges[0]);
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
  const plm_clip_params ok = {.lo = 2.0f, .hi = 5.0f};
  plm_test_unary_refuses_bad_tensors(&clip_op, &ok);

  const int64_t dims[2] = {4, 5};
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &out));
  const plm_clip_params nan_lo = {.lo = NAN, .hi = 5.0f};
  const plm_clip_params nan_hi = {.lo = 2.0f, .hi = NAN};
  const plm_clip_params reversed = {.lo = 5.0f, .hi = 2.0f};
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, &in, &nan_lo, &out), PLM_ERR_INVALID_ARG,
                  "params->lo is NaN");
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, &in, &nan_hi, &out), PLM_ERR_INVALID_ARG,
                  "params->hi is NaN");
  PLM_CHECK_FAILS(plm_clip(plm_test_stream, &in, &reversed, &out), PLM_ERR_INVALID_ARG,
                  "params->lo 5 is above params->hi 2");
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
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

/* tests/test_abs_diff.c: the abs_diff op (plume/abs_diff.h) on the backend under test,
 * against a float64 reference computed here: |a - b| exactly in double, which for u8 and
 * u16 is cv2.absdiff's saturated result (the difference of two values of one unsigned
 * type always fits it) and for f32 rounds once to numpy's float32 np.abs(a - b) (a - b is
 * rounded to f32 first, as numpy does). Also NaN and infinities, a stack, in place on
 * either input, the output's shape and cost, and every refusal. Inputs go to the device
 * with stream copies, so the same test runs on cuda (the fixtures of
 * tests/fixtures/MANIFEST.json check it against OpenCV and numpy themselves). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* An f32 input value in (-1e4, 1e4), with NaN and infinities (of the sign the seed's bit 1
 * says: user) and exact zeros placed. */
static float f32_value(uint64_t r, int64_t i, const void *user) {
  float v = (float)((double)(r >> 11) / 9007199254740992.0 * 2e4 - 1e4);
  if (i % 97 == 5) v = NAN;
  if (i % 89 == 6) v = *(const bool *)user ? INFINITY : -INFINITY;
  if (i % 83 == 7) v = 0.0f; /* equal values: an exact zero */
  return v;
}

static void *make_input(plm_dtype dtype, int64_t count, double *as_double, uint64_t seed) {
  const bool positive = seed & 2;
  return plm_test_values(dtype, count, seed, f32_value, &positive, as_double);
}

/* The expected element: |a - b| in double, a - b rounded to f32 first for f32. */
static double reference(plm_dtype dtype, double a, double b) {
  if (dtype == PLM_DTYPE_F32) return fabs((double)(float)(a - b));
  return fabs(a - b);
}

static double element(plm_dtype dtype, const void *data, int64_t i) {
  return dtype == PLM_DTYPE_U8    ? ((const uint8_t *)data)[i]
         : dtype == PLM_DTYPE_U16 ? ((const uint16_t *)data)[i]
                                  : ((const float *)data)[i];
}

/* Run abs_diff on random inputs of dims; into a new output, or in place on input `onto`
 * (0: in, 1: ref); ref and out at their allocations' start or, shifted, one element past it
 * (in at its start: inputs of mixed alignment). Returns the mismatches. */
static int64_t run_shifted_case(plm_dtype dtype, int ndim, const int64_t *dims, int onto,
                                bool shifted, uint64_t seed) {
  plm_tensor in, ref_storage, out_storage, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, ndim, dims, &in));
  plm_tensor ref = plm_test_alloc_shifted(dtype, ndim, dims, shifted, &ref_storage);
  if (onto < 0) out = plm_test_alloc_shifted(dtype, ndim, dims, shifted, &out_storage);
  const int64_t count = plm_tensor_numel(&in);
  const size_t bytes = plm_tensor_bytes(&in);
  double *a = malloc((size_t)count * sizeof *a), *b = malloc((size_t)count * sizeof *b);
  void *got = malloc(bytes);
  ck_assert(a && b && got);
  void *host_a = make_input(dtype, count, a, seed), *host_b = make_input(dtype, count, b, seed + 2);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, host_a, bytes, PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, ref.data, host_b, bytes, PLM_COPY_HOST_TO_DEVICE));
  plm_tensor *target = onto == 0 ? &in : onto == 1 ? &ref : &out;
  PLM_CHECK_OK(plm_abs_diff(plm_test_stream, &in, &ref, target));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, got, target->data, bytes, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  int64_t bad = 0;
  for (int64_t i = 0; i < count; i++) {
    const double want = reference(dtype, a[i], b[i]), have = element(dtype, got, i);
    const bool same = (isnan(want) && isnan(have)) || want == have;
    if (!same && bad++ == 0)
      printf("abs_diff %s: element %lld: |%.9g - %.9g| got %.9g, expected %.9g\n",
             plm_dtype_name(dtype), (long long)i, a[i], b[i], have, want);
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &ref_storage));
  if (onto < 0) PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out_storage));
  free(host_a);
  free(host_b);
  free(a);
  free(b);
  free(got);
  return bad;
}

static int64_t run_case(plm_dtype dtype, int ndim, const int64_t *dims, int onto, uint64_t seed) {
  return run_shifted_case(dtype, ndim, dims, onto, false, seed);
}

START_TEST(test_matches_the_reference_for_every_shape_and_dtype) {
  static const int64_t shapes[][3] = {{1, 1, 0}, {1, 37, 0}, {257, 255, 0}, {3, 7, 13}};
  static const int ndims[] = {2, 2, 2, 3};
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++)
    for (size_t t = 0; t < 3; t++) {
      int64_t bad = run_case(dtypes[t], ndims[s], shapes[s], -1, 0x9e3779b97f4a7c15ull + s * 7 + t);
      ck_assert_msg(bad == 0, "%lld mismatches: shape %zu, dtype %s", (long long)bad, s,
                    plm_dtype_name(dtypes[t]));
    }
  const int64_t line[1] = {1000};
  ck_assert_int_eq(run_case(PLM_DTYPE_U8, 1, line, -1, 5), 0);
  /* In place on either input. */
  const int64_t stack[3] = {4, 33, 70};
  ck_assert_int_eq(run_case(PLM_DTYPE_U16, 3, stack, 0, 11), 0);
  ck_assert_int_eq(run_case(PLM_DTYPE_F32, 3, stack, 1, 13), 0);
  /* ref and out one element past their allocations' start, in at its own. */
  for (size_t t = 0; t < 3; t++)
    ck_assert_int_eq(run_shifted_case(dtypes[t], 2, shapes[2], -1, true, 17 + t), 0);
  ck_assert_int_eq(run_shifted_case(PLM_DTYPE_U16, 3, stack, 1, true, 19), 0);
}
END_TEST

START_TEST(test_saturation_and_specials_worked_by_hand) {
  const int64_t dims[1] = {4};
  const uint8_t a8[4] = {0, 255, 10, 200}, b8[4] = {255, 0, 10, 100};
  const uint8_t want8[4] = {255, 255, 0, 100};
  const float af[4] = {NAN, INFINITY, -0.0f, 3e38f}, bf[4] = {1.0f, INFINITY, 0.0f, -3e38f};
  plm_tensor a = plm_test_upload(PLM_DTYPE_U8, 1, dims, a8);
  plm_tensor b = plm_test_upload(PLM_DTYPE_U8, 1, dims, b8);
  plm_tensor fa = plm_test_upload(PLM_DTYPE_F32, 1, dims, af);
  plm_tensor fb = plm_test_upload(PLM_DTYPE_F32, 1, dims, bf);
  PLM_CHECK_OK(plm_abs_diff(plm_test_stream, &a, &b, &a));
  PLM_CHECK_OK(plm_abs_diff(plm_test_stream, &fa, &fb, &fb));
  uint8_t got8[4];
  float gotf[4];
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got8, a.data, 4, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, gotf, fb.data, 16, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert_mem_eq(got8, want8, 4);
  ck_assert(isnan(gotf[0]));                       /* NaN propagates */
  ck_assert(isnan(gotf[1]));                       /* inf - inf */
  ck_assert(gotf[2] == 0.0f && !signbit(gotf[2])); /* |-0 - 0| is +0 */
  ck_assert(isinf(gotf[3]) && gotf[3] > 0);        /* 6e38 overflows f32, as in numpy */
  plm_tensor *all[] = {&a, &b, &fa, &fb};
  for (size_t i = 0; i < 4; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

START_TEST(test_output_shape_and_cost) {
  const int64_t dims[3] = {2, 6, 8};
  uint16_t storage[2 * 6 * 8];
  plm_tensor in;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U16, 3, dims, &in));
  plm_shape shape;
  PLM_CHECK_OK(plm_abs_diff_output(&in, &in, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_U16);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert_int_eq(shape.dims[0], 2);
  ck_assert_int_eq(shape.dims[2], 8);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_abs_diff_cost(&in, &in, &cost));
  ck_assert(cost.bytes == 96.0 * 3 * 2 && cost.flops == 96.0 * 2);
  PLM_CHECK_FAILS(plm_abs_diff_output(&in, NULL, &shape), PLM_ERR_INVALID_ARG,
                  "plm_abs_diff_output: ref is NULL");
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t dims[2] = {4, 5}, wrong[2] = {5, 4};
  plm_tensor in, ref, out, other_shape, as_u8, as_i32, bigger;
  const int64_t more[2] = {8, 5};
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &ref));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &out));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, wrong, &other_shape));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &as_u8));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &as_i32));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, more, &bigger));

  PLM_CHECK_FAILS(plm_abs_diff(NULL, &in, &ref, &out), PLM_ERR_INVALID_ARG,
                  "plm_abs_diff: stream is NULL");
  PLM_CHECK_FAILS(plm_abs_diff(plm_test_stream, NULL, &ref, &out), PLM_ERR_INVALID_ARG,
                  "plm_abs_diff: in is NULL");
  PLM_CHECK_FAILS(plm_abs_diff(plm_test_stream, &in, NULL, &out), PLM_ERR_INVALID_ARG,
                  "ref is NULL");
  PLM_CHECK_FAILS(plm_abs_diff(plm_test_stream, &in, &ref, NULL), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  PLM_CHECK_FAILS(plm_abs_diff(plm_test_stream, &as_i32, &ref, &out), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_abs_diff(plm_test_stream, &in, &as_i32, &out), PLM_ERR_INVALID_ARG,
                  "ref->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_abs_diff(plm_test_stream, &in, &as_u8, &out), PLM_ERR_INVALID_ARG,
                  "ref->dtype u8 is not u16");
  PLM_CHECK_FAILS(plm_abs_diff(plm_test_stream, &in, &other_shape, &out), PLM_ERR_INVALID_ARG,
                  "ref is 5x4 but in is 4x5");
  PLM_CHECK_FAILS(plm_abs_diff(plm_test_stream, &in, &ref, &as_u8), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not u16");
  PLM_CHECK_FAILS(plm_abs_diff(plm_test_stream, &in, &ref, &other_shape), PLM_ERR_INVALID_ARG,
                  "out is 5x4 but in is 4x5");
  /* Overlapping an input without being it exactly. */
  plm_tensor shifted = out;
  shifted.data = (uint16_t *)bigger.data + 1;
  plm_tensor in_inside = in;
  in_inside.data = bigger.data;
  PLM_CHECK_FAILS(plm_abs_diff(plm_test_stream, &in_inside, &ref, &shifted), PLM_ERR_INVALID_ARG,
                  "out overlaps in without being the same memory");

  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&in, &ref, &out, &other_shape, &as_u8, &as_i32, &bigger};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

static Suite *abs_diff_suite(void) {
  Suite *suite = suite_create("abs_diff");
  TCase *tcase = tcase_create("abs_diff");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_add_test(tcase, test_matches_the_reference_for_every_shape_and_dtype);
  tcase_add_test(tcase, test_saturation_and_specials_worked_by_hand);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(abs_diff_suite);
}

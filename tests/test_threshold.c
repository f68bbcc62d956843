/* tests/test_threshold.c: the threshold op (plume/ops.h) on the backend under
 * test, against a float64 reference computed here: numpy's
 * (in CMP value).astype(np.uint8). Inputs go to the device with stream copies, so
 * the same test runs on cuda. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* The reference, in double precision. */
static uint8_t reference(double x, double value, plm_compare compare) {
  switch (compare) {
    case PLM_COMPARE_GT: return x > value;
    case PLM_COMPARE_GE: return x >= value;
    case PLM_COMPARE_LT: return x < value;
    case PLM_COMPARE_LE: return x <= value;
  }
  return 0;
}

/* An f32 input value within 10 of the threshold (user: a double), with NaN, infinities
 * and ties placed. */
static float f32_value(uint64_t r, int64_t i, const void *user) {
  (void)i;
  const double value = *(const double *)user;
  float v = (float)(value + ((double)(r % 2001) - 1000.0) / 100.0);
  if (r % 97 == 0) v = NAN;
  if (r % 89 == 0) v = (r & 1) ? INFINITY : -INFINITY;
  if (r % 83 == 0) v = (float)value; /* ties */
  return v;
}

/* Host input of `count` elements of dtype, values straddling `value` (and, for f32,
 * NaN and infinities). Returned as doubles too, for the reference. */
static void *make_input(plm_dtype dtype, int64_t count, double value, double *as_double,
                        uint64_t seed) {
  return plm_test_values(dtype, count, seed, f32_value, &value, as_double);
}

/* Run threshold over a host input of the given shape, in and out at their allocations'
 * start or shifted one element past it, and compare with the reference; returns the
 * number of mismatches. */
static int64_t run_shifted_case(plm_dtype dtype, int ndim, const int64_t *dims, double value,
                                plm_compare compare, bool shifted, uint64_t seed) {
  plm_tensor in_storage, out_storage;
  plm_tensor in = plm_test_alloc_shifted(dtype, ndim, dims, shifted, &in_storage);
  plm_tensor out = plm_test_alloc_shifted(PLM_DTYPE_U8, ndim, dims, shifted, &out_storage);
  int64_t count = plm_tensor_numel(&in);
  double *as_double = malloc((size_t)count * sizeof *as_double);
  uint8_t *result = malloc((size_t)count);
  ck_assert(as_double && result);
  void *host = make_input(dtype, count, value, as_double, seed);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, host, plm_tensor_bytes(&in),
                                 PLM_COPY_HOST_TO_DEVICE));
  plm_threshold_params params = {.value = value, .compare = compare};
  PLM_CHECK_OK(plm_threshold(plm_test_stream, &in, &params, &out));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, result, out.data, (size_t)count, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  int64_t mismatches = 0;
  for (int64_t i = 0; i < count; i++)
    mismatches += result[i] != reference(as_double[i], value, compare);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in_storage));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out_storage));
  free(host);
  free(result);
  free(as_double);
  return mismatches;
}

static int64_t run_case(plm_dtype dtype, int ndim, const int64_t *dims, double value,
                        plm_compare compare, uint64_t seed) {
  return run_shifted_case(dtype, ndim, dims, value, compare, false, seed);
}

START_TEST(test_matches_the_reference_for_every_shape_dtype_and_comparison) {
  static const int64_t shapes[][3] = {{1, 1, 0},     {1, 300, 0},   {300, 1, 0}, {7, 13, 0},
                                      {257, 255, 0}, {512, 512, 0}, {3, 7, 13}};
  static const int ndims[] = {2, 2, 2, 2, 2, 2, 3};
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  const double values[] = {127.5, 40000.0, 4.5};
  for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++)
    for (size_t t = 0; t < 3; t++)
      for (int c = PLM_COMPARE_GT; c <= PLM_COMPARE_LE; c++) {
        int64_t bad = run_case(dtypes[t], ndims[s], shapes[s], values[t], (plm_compare)c,
                               0x9e3779b97f4a7c15ull + s * 31 + t * 7 + (uint64_t)c);
        ck_assert_msg(bad == 0, "%lld mismatches: shape %zu, dtype %s, compare %d", (long long)bad,
                      s, plm_dtype_name(dtypes[t]), c);
      }
  for (size_t t = 0; t < 3; t++) {
    int64_t bad =
        run_shifted_case(dtypes[t], 2, shapes[4], values[t], PLM_COMPARE_GT, true, 77 + t);
    ck_assert_msg(bad == 0, "%lld mismatches one element past the allocations' start, dtype %s",
                  (long long)bad, plm_dtype_name(dtypes[t]));
  }
}
END_TEST

START_TEST(test_integer_inputs_compare_exactly_against_fractional_and_edge_values) {
  const int64_t dims[1] = {65536};
  const double values[] = {-1.0, 0.0, 0.5, 255.0, 255.5, 65535.0, 1e9};
  for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
    ck_assert_int_eq(run_case(PLM_DTYPE_U16, 1, dims, values[v], PLM_COMPARE_GE, v + 1), 0);
    ck_assert_int_eq(run_case(PLM_DTYPE_U8, 1, dims, values[v], PLM_COMPARE_GT, v + 1), 0);
  }
}
END_TEST

START_TEST(test_u8_input_may_be_thresholded_in_place) {
  const int64_t dims[2] = {31, 33};
  plm_tensor t;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &t));
  uint8_t host[31 * 33], result[31 * 33];
  for (int i = 0; i < 31 * 33; i++) host[i] = (uint8_t)(i * 7);
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, t.data, host, sizeof host, PLM_COPY_HOST_TO_DEVICE));
  plm_threshold_params params = {.value = 100, .compare = PLM_COMPARE_LE};
  PLM_CHECK_OK(plm_threshold(plm_test_stream, &t, &params, &t));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, result, t.data, sizeof result, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  for (int i = 0; i < 31 * 33; i++) ck_assert_int_eq(result[i], host[i] <= 100);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &t));
}
END_TEST

/* An op on a context of the last device, called from a thread whose current device
 * is another (CUDA's default, device 0): the op makes its context's device current
 * for its launches, as CUDA requires. Needs two devices; with one (or on host) there
 * is nothing to test, and it says so. */
START_TEST(test_runs_on_a_context_of_another_device_than_the_current_one) {
  int devices = 0;
  const char *reason = NULL;
  PLM_CHECK_OK(plm_backend_device_count(plm_test_backend, &devices, &reason));
  if (devices < 2) {
    printf("threshold: one device, the op on another device than the current one is not tested\n");
    return;
  }
  plm_context *ctx = NULL;
  plm_stream *stream = NULL;
  plm_pool *pool = NULL;
  plm_context_config config = {.backend = plm_test_backend, .device = devices - 1};
  PLM_CHECK_OK(plm_context_create(&config, &ctx));
  PLM_CHECK_OK(plm_stream_create(ctx, PLM_STREAM_DEFAULT, &stream));
  PLM_CHECK_OK(plm_context_default_pool(ctx, &pool));
  const int64_t dims[2] = {64, 100};
  uint8_t host[64 * 100], result[64 * 100];
  for (int i = 0; i < 64 * 100; i++) host[i] = (uint8_t)(i * 13);
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(pool, stream, PLM_DTYPE_U8, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(pool, stream, PLM_DTYPE_U8, 2, dims, &out));
  PLM_CHECK_OK(plm_stream_memcpy(stream, in.data, host, sizeof host, PLM_COPY_HOST_TO_DEVICE));
  plm_threshold_params params = {.value = 99.5, .compare = PLM_COMPARE_GT};
  PLM_CHECK_OK(plm_threshold(stream, &in, &params, &out));
  PLM_CHECK_OK(plm_stream_memcpy(stream, result, out.data, sizeof result, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  for (int i = 0; i < 64 * 100; i++) ck_assert_int_eq(result[i], host[i] > 99.5);
  PLM_CHECK_OK(plm_tensor_free(pool, stream, &in));
  PLM_CHECK_OK(plm_tensor_free(pool, stream, &out));
  PLM_CHECK_OK(plm_stream_destroy(stream));
  PLM_CHECK_OK(plm_context_destroy(ctx));
}
END_TEST

START_TEST(test_output_shape_and_cost) {
  const int64_t dims[3] = {4, 6, 8};
  plm_tensor in;
  float storage[4 * 6 * 8];
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 3, dims, &in));
  plm_threshold_params params = {.value = 1};
  plm_shape shape;
  PLM_CHECK_OK(plm_threshold_output(&in, &params, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_U8);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert_int_eq(shape.dims[2], 8);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_threshold_cost(&in, &params, &cost));
  ck_assert(cost.bytes == 192.0 * 5.0 && cost.flops == 192.0);
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t dims[2] = {8, 8}, other_dims[2] = {8, 9};
  plm_tensor in, out, wrong_shape, as_i32, as_f32_out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &out));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, other_dims, &wrong_shape));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &as_i32));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &as_f32_out));
  plm_threshold_params params = {.value = 0.5, .compare = PLM_COMPARE_GT};
  /* Whatever the allocations enqueued has run (sanitized builds poison each block's slack
   * in stream order): the calls below must enqueue nothing. */
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));

  PLM_CHECK_FAILS(plm_threshold(NULL, &in, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_threshold: stream is NULL");
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, NULL, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_threshold: in is NULL");
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &in, NULL, &out), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &in, &params, NULL), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &as_i32, &params, &out), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &in, &params, &as_f32_out), PLM_ERR_INVALID_ARG,
                  "out->dtype f32 is not u8");
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &in, &params, &wrong_shape), PLM_ERR_INVALID_ARG,
                  "out is 8x9 but in is 8x8");
  plm_threshold_params bad = {.value = NAN};
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->value is NaN");
  bad = (plm_threshold_params){.value = 1, .compare = (plm_compare)9};
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->compare 9 is not a plm_compare");
  plm_tensor strided = out;
  strided.strides[0] = 16;
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &in, &params, &strided), PLM_ERR_UNSUPPORTED,
                  "out is not contiguous");
  plm_tensor no_data = out;
  no_data.data = NULL;
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &in, &params, &no_data), PLM_ERR_INVALID_ARG,
                  "out->data is NULL");
  plm_tensor shifted = out;
  shifted.data = (char *)in.data + 4;
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &in, &params, &shifted), PLM_ERR_INVALID_ARG,
                  "out overlaps in");

  /* A tensor of another context. */
  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_tensor foreign = in;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &foreign, &params, &out), PLM_ERR_INVALID_ARG,
                  "in belongs to another context than stream");
  PLM_CHECK_OK(plm_context_destroy(other));

  bool finished = false;
  PLM_CHECK_OK(plm_stream_query(plm_test_stream, &finished));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&in, &out, &wrong_shape, &as_i32, &as_f32_out};
  for (size_t i = 0; i < 5; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

/* The shape queries take a bare description: a broken one is refused, never read
 * past (ndim 12 once wrote past plm_shape's four dims). */
START_TEST(test_shape_queries_refuse_broken_descriptions) {
  plm_tensor broken = {.ctx = plm_test_ctx, .dtype = PLM_DTYPE_F32, .ndim = 12};
  plm_threshold_params params = {.value = 1};
  plm_shape shape;
  plm_op_cost cost;
  PLM_CHECK_FAILS(plm_threshold_output(&broken, &params, &shape), PLM_ERR_INVALID_ARG,
                  "plm_threshold_output: in->ndim 12 is not in 1..4");
  PLM_CHECK_FAILS(plm_threshold_cost(&broken, &params, &cost), PLM_ERR_INVALID_ARG, "in->ndim 12");
  broken = (plm_tensor){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {4, 0}};
  PLM_CHECK_FAILS(plm_threshold_cost(&broken, &params, &cost), PLM_ERR_INVALID_ARG,
                  "in->dims[1] is 0");
  broken = (plm_tensor){.dtype = PLM_DTYPE_I32, .ndim = 2, .dims = {4, 4}};
  PLM_CHECK_FAILS(plm_threshold_cost(&broken, &params, &cost), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");
}
END_TEST

static Suite *threshold_suite(void) {
  Suite *suite = suite_create("threshold");
  TCase *tcase = tcase_create("threshold");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 60);
  tcase_add_test(tcase, test_matches_the_reference_for_every_shape_dtype_and_comparison);
  tcase_add_test(tcase, test_integer_inputs_compare_exactly_against_fractional_and_edge_values);
  tcase_add_test(tcase, test_u8_input_may_be_thresholded_in_place);
  tcase_add_test(tcase, test_runs_on_a_context_of_another_device_than_the_current_one);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  tcase_add_test(tcase, test_shape_queries_refuse_broken_descriptions);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(threshold_suite);
}

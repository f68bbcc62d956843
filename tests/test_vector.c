/* tests/test_vector.c: vector_add, vector_add_batched and dot (plume/vector.h) on the
 * backend under test, against float64 references computed here: numpy's float32
 * alpha * a + beta * b and numpy.dot in float64. Inputs go to the device with stream
 * copies, so the same test runs on cuda. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* count f32 values in [-scale, scale), some exactly representable small integers. */
static float *random_floats(int64_t count, double scale, uint64_t seed) {
  float *values = malloc((size_t)count * sizeof *values);
  ck_assert_ptr_nonnull(values);
  uint64_t state = seed | 1;
  for (int64_t i = 0; i < count; i++) {
    uint64_t r = plm_test_random(&state);
    values[i] = r % 11 == 0 ? (float)((int)(r >> 40) % 9 - 4)
                            : (float)(((double)(r >> 11) / 9007199254740992.0 * 2 - 1) * scale);
  }
  return values;
}

static void release(plm_tensor *t) {
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, t));
}

/* Mismatches of got against alpha * a + beta * b: exact (numpy's float32 a + b) when
 * exact, else within one f32 rounding of the float64 value. */
static int64_t add_mismatches(const float *a, const float *b, const float *got, int64_t count,
                              double alpha, double beta, bool exact) {
  int64_t bad = 0;
  for (int64_t i = 0; i < count; i++) {
    if (exact) {
      float expected = alpha == 1 ? a[i] + (float)beta * b[i] : a[i] - b[i];
      bad += memcmp(&expected, &got[i], sizeof expected) != 0;
      continue;
    }
    double reference = alpha * a[i] + beta * b[i];
    double scale = fabs(alpha * a[i]) + fabs(beta * b[i]);
    bad += !(fabs(got[i] - reference) <= 6e-8 * scale + 1e-45);
  }
  return bad;
}

static void run_add_case(int ndim, const int64_t *dims, double alpha, double beta, bool exact,
                         uint64_t seed) {
  int64_t count = 1;
  for (int d = 0; d < ndim; d++) count *= dims[d];
  float *a = random_floats(count, 1000, seed), *b = random_floats(count, 3, seed + 99);
  plm_tensor ta = plm_test_upload(PLM_DTYPE_F32, ndim, dims, a),
             tb = plm_test_upload(PLM_DTYPE_F32, ndim, dims, b);
  plm_tensor tout = plm_test_upload(PLM_DTYPE_F32, ndim, dims, NULL);
  plm_vector_add_params params = {.alpha = alpha, .beta = beta};
  PLM_CHECK_OK(plm_vector_add(plm_test_stream, &ta, &tb, &params, &tout));
  float *got = plm_test_download(&tout);
  int64_t bad = add_mismatches(a, b, got, count, alpha, beta, exact);
  ck_assert_msg(bad == 0, "%lld of %lld wrong (ndim %d, alpha %g, beta %g)", (long long)bad,
                (long long)count, ndim, alpha, beta);
  release(&ta);
  release(&tb);
  release(&tout);
  free(a);
  free(b);
  free(got);
}

START_TEST(test_vector_add_matches_numpy_for_every_rank_and_odd_sizes) {
  static const int64_t shapes[][4] = {{1}, {7}, {1000003}, {13, 17}, {3, 5, 7}, {2, 3, 5, 41}};
  static const int ndims[] = {1, 1, 1, 2, 3, 4};
  for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++) {
    run_add_case(ndims[s], shapes[s], 1, 1, true, 11 + s);
    run_add_case(ndims[s], shapes[s], 1, -1, true, 21 + s);
    run_add_case(ndims[s], shapes[s], 2.5, -0.75, false, 31 + s);
    run_add_case(ndims[s], shapes[s], 0, 1e-3, false, 41 + s);
  }
}
END_TEST

START_TEST(test_vector_add_with_null_params_is_a_plain_add_and_may_run_in_place) {
  const int64_t dims[1] = {4099};
  float *a = random_floats(4099, 100, 5), *b = random_floats(4099, 100, 6);
  plm_tensor ta = plm_test_upload(PLM_DTYPE_F32, 1, dims, a),
             tb = plm_test_upload(PLM_DTYPE_F32, 1, dims, b);
  PLM_CHECK_OK(plm_vector_add(plm_test_stream, &ta, &tb, NULL, &ta));
  float *got = plm_test_download(&ta);
  ck_assert_int_eq(add_mismatches(a, b, got, 4099, 1, 1, true), 0);
  plm_vector_add_params params = {.alpha = 1, .beta = 1};
  PLM_CHECK_OK(plm_vector_add(plm_test_stream, &ta, &tb, &params, &tb)); /* b = (a + b) + b */
  float *twice = plm_test_download(&tb);
  ck_assert_int_eq(add_mismatches(got, b, twice, 4099, 1, 1, true), 0);
  release(&ta);
  release(&tb);
  free(a);
  free(b);
  free(got);
  free(twice);
}
END_TEST

/* A batch of `count` triples of the given lengths, against the reference per triple. */
static void run_batch_case(int64_t count, const int64_t *lengths, double alpha, double beta,
                           uint64_t seed) {
  plm_tensor *ta = calloc((size_t)count, sizeof *ta), *tb = calloc((size_t)count, sizeof *tb);
  plm_tensor *tout = calloc((size_t)count, sizeof *tout);
  const plm_tensor **pa = calloc((size_t)count, sizeof *pa),
                   **pb = calloc((size_t)count, sizeof *pb);
  plm_tensor **pout = calloc((size_t)count, sizeof *pout);
  float **a = calloc((size_t)count, sizeof *a), **b = calloc((size_t)count, sizeof *b);
  ck_assert(ta && tb && tout && pa && pb && pout && a && b);
  for (int64_t i = 0; i < count; i++) {
    a[i] = random_floats(lengths[i], 50, seed + (uint64_t)i * 2);
    b[i] = random_floats(lengths[i], 50, seed + (uint64_t)i * 2 + 1);
    ta[i] = plm_test_upload(PLM_DTYPE_F32, 1, &lengths[i], a[i]);
    tb[i] = plm_test_upload(PLM_DTYPE_F32, 1, &lengths[i], b[i]);
    tout[i] = plm_test_upload(PLM_DTYPE_F32, 1, &lengths[i], NULL);
    pa[i] = &ta[i];
    pb[i] = &tb[i];
    pout[i] = &tout[i];
  }
  plm_vector_add_params params = {.alpha = alpha, .beta = beta};
  PLM_CHECK_OK(plm_vector_add_batched(plm_test_stream, pa, pb, &params, pout, count));
  for (int64_t i = 0; i < count; i++) {
    float *got = plm_test_download(&tout[i]);
    int64_t bad = add_mismatches(a[i], b[i], got, lengths[i], alpha, beta, alpha == 1 && beta == 1);
    ck_assert_msg(bad == 0, "triple %lld of %lld (length %lld): %lld wrong", (long long)i,
                  (long long)count, (long long)lengths[i], (long long)bad);
    free(got);
    release(&ta[i]);
    release(&tb[i]);
    release(&tout[i]);
    free(a[i]);
    free(b[i]);
  }
  free(ta), free(tb), free(tout), free(pa), free(pb), free(pout), free(a), free(b);
}

START_TEST(test_vector_add_batched_matches_the_reference_per_triple) {
  const int64_t one[1] = {5};
  run_batch_case(1, one, 1, 1, 3);
  const int64_t few[5] = {1, 4096, 4097, 3, 10000};
  run_batch_case(5, few, 1, 1, 7);
  run_batch_case(5, few, -2, 0.5, 9);
  /* More triples than travel in the kernel's parameters on cuda; lengths 1 to ~9000. */
  int64_t many[300];
  uint64_t state = 77;
  for (int i = 0; i < 300; i++)
    many[i] = 1 + (int64_t)(plm_test_random(&state) % (i % 50 ? 300 : 9000));
  run_batch_case(300, many, 1, 1, 13);
  run_batch_case(300, many, 0.25, 3, 17);
  run_batch_case(PLM_VECTOR_ADD_BATCH_INLINE, many, 1, 1, 19);
  run_batch_case(PLM_VECTOR_ADD_BATCH_INLINE + 1, many, 1, 1, 23);
}
END_TEST

START_TEST(test_vector_add_batched_triples_may_run_in_place_and_share_inputs) {
  const int64_t dims[1] = {1000};
  float *a = random_floats(1000, 10, 1), *b = random_floats(1000, 10, 2);
  plm_tensor ta = plm_test_upload(PLM_DTYPE_F32, 1, dims, a),
             tb = plm_test_upload(PLM_DTYPE_F32, 1, dims, b);
  plm_tensor tout = plm_test_upload(PLM_DTYPE_F32, 1, dims, NULL);
  /* Triples may share inputs: out[0] = a + b and out[1] = a + a. */
  plm_tensor tout2 = plm_test_upload(PLM_DTYPE_F32, 1, dims, NULL);
  const plm_tensor *pa[2] = {&ta, &ta}, *pb[2] = {&tb, &ta};
  plm_tensor *pout[2] = {&tout, &tout2};
  PLM_CHECK_OK(plm_vector_add_batched(plm_test_stream, pa, pb, NULL, pout, 2));
  float *got = plm_test_download(&tout), *got2 = plm_test_download(&tout2);
  ck_assert_int_eq(add_mismatches(a, b, got, 1000, 1, 1, true), 0);
  ck_assert_int_eq(add_mismatches(a, a, got2, 1000, 1, 1, true), 0);
  /* In place: out[0] is a[0] itself. */
  const plm_tensor *qa[1] = {&tout};
  plm_tensor *qout[1] = {&tout};
  PLM_CHECK_OK(plm_vector_add_batched(plm_test_stream, qa, pb, NULL, qout, 1));
  float *again = plm_test_download(&tout);
  ck_assert_int_eq(add_mismatches(got, b, again, 1000, 1, 1, true), 0);
  release(&ta), release(&tb), release(&tout), release(&tout2);
  free(a), free(b), free(got), free(got2), free(again);
}
END_TEST

/* The float64 reference of one row, in long double, and sum |a * b|. */
static void dot_reference(const float *a, const float *b, int64_t n, double *value,
                          double *magnitude) {
  long double sum = 0, abs_sum = 0;
  for (int64_t i = 0; i < n; i++) {
    long double p = (long double)a[i] * (long double)b[i];
    sum += p;
    abs_sum += p < 0 ? -p : p;
  }
  *value = (double)sum;
  *magnitude = (double)abs_sum;
}

static void run_dot_case(int64_t rows, int64_t length, bool as_matrix, uint64_t seed) {
  int64_t count = rows * length;
  float *a = random_floats(count, 100, seed), *b = random_floats(count, 1, seed + 1);
  int64_t dims[2] = {rows, length}, out_dims[1] = {rows};
  plm_tensor ta = plm_test_upload(PLM_DTYPE_F32, as_matrix ? 2 : 1, as_matrix ? dims : &dims[1], a);
  plm_tensor tb = plm_test_upload(PLM_DTYPE_F32, as_matrix ? 2 : 1, as_matrix ? dims : &dims[1], b);
  plm_tensor tout = plm_test_upload(PLM_DTYPE_F64, 1, out_dims, NULL);
  PLM_CHECK_OK(plm_dot(plm_test_stream, &ta, &tb, NULL, &tout));
  double *got = plm_test_download(&tout);
  for (int64_t r = 0; r < rows; r++) {
    double value, magnitude;
    dot_reference(a + r * length, b + r * length, length, &value, &magnitude);
    ck_assert_msg(fabs(got[r] - value) <= 1e-12 * magnitude,
                  "row %lld of (%lld, %lld): %.17g, expected %.17g (sum|ab| %g)", (long long)r,
                  (long long)rows, (long long)length, got[r], value, magnitude);
  }
  /* The same bits on every run. */
  for (int run = 0; run < 3; run++) {
    PLM_CHECK_OK(plm_dot(plm_test_stream, &ta, &tb, NULL, &tout));
    double *again = plm_test_download(&tout);
    ck_assert_msg(memcmp(again, got, (size_t)rows * sizeof *got) == 0,
                  "run %d of (%lld, %lld) gave other bits", run, (long long)rows,
                  (long long)length);
    free(again);
  }
  release(&ta), release(&tb), release(&tout);
  free(a), free(b), free(got);
}

START_TEST(test_dot_matches_numpy_in_float64_and_is_deterministic) {
  const int64_t lengths[] = {1, 3, 4095, 4096, 4097, 100003, 1 << 20};
  for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
    run_dot_case(1, lengths[i], false, 100 + i);
  run_dot_case(1, 17, true, 200);
  run_dot_case(3, 50001, true, 201);
  run_dot_case(1000, 17, true, 202);
  run_dot_case(7, 9000, true, 203);
  run_dot_case(5000, 1, true, 204);
}
END_TEST

START_TEST(test_dot_propagates_nan_and_infinity) {
  const int64_t dims[2] = {3, 5}, out_dims[1] = {3};
  float a[15], b[15];
  for (int i = 0; i < 15; i++) a[i] = b[i] = 1;
  a[2] = NAN;
  a[6] = INFINITY;
  plm_tensor ta = plm_test_upload(PLM_DTYPE_F32, 2, dims, a),
             tb = plm_test_upload(PLM_DTYPE_F32, 2, dims, b);
  plm_tensor tout = plm_test_upload(PLM_DTYPE_F64, 1, out_dims, NULL);
  PLM_CHECK_OK(plm_dot(plm_test_stream, &ta, &tb, NULL, &tout));
  double *got = plm_test_download(&tout);
  ck_assert(isnan(got[0]));
  ck_assert(isinf(got[1]) && got[1] > 0);
  ck_assert(got[2] == 5.0);
  release(&ta), release(&tb), release(&tout);
  free(got);
}
END_TEST

START_TEST(test_output_shapes_and_costs) {
  const int64_t dims[3] = {4, 6, 8}, mat[2] = {5, 7}, vec[1] = {9};
  static float storage[4 * 6 * 8];
  plm_tensor t3, m, v;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 3, dims, &t3));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, mat, &m));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 1, vec, &v));
  plm_shape shape;
  PLM_CHECK_OK(plm_vector_add_output(&t3, &t3, NULL, &shape));
  ck_assert(shape.dtype == PLM_DTYPE_F32 && shape.ndim == 3 && shape.dims[0] == 4 &&
            shape.dims[1] == 6 && shape.dims[2] == 8);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_vector_add_cost(&t3, &t3, NULL, &cost));
  ck_assert(cost.bytes == 192.0 * 12 && cost.flops == 192.0 * 3);
  const plm_tensor *as[2] = {&t3, &m}, *bs[2] = {&t3, &m};
  PLM_CHECK_OK(plm_vector_add_batched_cost(as, bs, NULL, 2, &cost));
  ck_assert(cost.bytes == (192.0 + 35.0) * 12 && cost.flops == (192.0 + 35.0) * 3);
  PLM_CHECK_OK(plm_dot_output(&m, &m, NULL, &shape));
  ck_assert(shape.dtype == PLM_DTYPE_F64 && shape.ndim == 1 && shape.dims[0] == 5);
  PLM_CHECK_OK(plm_dot_output(&v, &v, NULL, &shape));
  ck_assert(shape.dtype == PLM_DTYPE_F64 && shape.ndim == 1 && shape.dims[0] == 1);
  PLM_CHECK_OK(plm_dot_cost(&m, &m, NULL, &cost));
  ck_assert(cost.bytes == 35.0 * 8 + 5.0 * 8 && cost.flops == 35.0 * 2);
  PLM_CHECK_OK(plm_dot_cost(&v, &v, NULL, &cost));
  ck_assert(cost.bytes == 9.0 * 8 + 8 && cost.flops == 18.0);
  PLM_CHECK_FAILS(plm_dot_cost(&t3, &t3, NULL, &cost), PLM_ERR_INVALID_ARG,
                  "a has 3 dims, not (N) or (R, N)");
  PLM_CHECK_FAILS(plm_vector_add_cost(&t3, &m, NULL, &cost), PLM_ERR_INVALID_ARG,
                  "b is 5x7 but a is 4x6x8");
  PLM_CHECK_FAILS(plm_vector_add_batched_cost(as, bs, NULL, 0, &cost), PLM_ERR_INVALID_ARG,
                  "count 0 is not >= 1");
}
END_TEST

START_TEST(test_bad_arguments_are_refused_and_nothing_is_enqueued) {
  const int64_t dims[2] = {8, 8}, other_dims[2] = {8, 9}, rows[1] = {8}, wrong_rows[1] = {7};
  plm_tensor a = plm_test_upload(PLM_DTYPE_F32, 2, dims, NULL),
             b = plm_test_upload(PLM_DTYPE_F32, 2, dims, NULL);
  plm_tensor out = plm_test_upload(PLM_DTYPE_F32, 2, dims, NULL);
  plm_tensor wrong = plm_test_upload(PLM_DTYPE_F32, 2, other_dims, NULL);
  plm_tensor as_u8 = plm_test_upload(PLM_DTYPE_U8, 2, dims, NULL);
  plm_tensor dot_out = plm_test_upload(PLM_DTYPE_F64, 1, rows, NULL);
  plm_tensor dot_wrong = plm_test_upload(PLM_DTYPE_F64, 1, wrong_rows, NULL);
  plm_tensor dot_f32 = plm_test_upload(PLM_DTYPE_F32, 1, rows, NULL);
  plm_vector_add_params params = {.alpha = 1, .beta = 2};
  plm_stream *s = plm_test_stream;
  /* Whatever the allocations enqueued has run (sanitized builds poison each block's slack
   * in stream order): the calls below must enqueue nothing. */
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));

  PLM_CHECK_FAILS(plm_vector_add(NULL, &a, &b, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_vector_add: stream is NULL");
  PLM_CHECK_FAILS(plm_vector_add(s, NULL, &b, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_vector_add: a is NULL");
  PLM_CHECK_FAILS(plm_vector_add(s, &a, NULL, &params, &out), PLM_ERR_INVALID_ARG, "b is NULL");
  PLM_CHECK_FAILS(plm_vector_add(s, &a, &b, &params, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  PLM_CHECK_FAILS(plm_vector_add(s, &as_u8, &b, &params, &out), PLM_ERR_INVALID_ARG,
                  "a->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_vector_add(s, &a, &b, &params, &as_u8), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_vector_add(s, &a, &wrong, &params, &out), PLM_ERR_INVALID_ARG,
                  "b is 8x9 but a is 8x8");
  PLM_CHECK_FAILS(plm_vector_add(s, &a, &b, &params, &wrong), PLM_ERR_INVALID_ARG,
                  "out is 8x9 but a is 8x8");
  plm_vector_add_params bad = {.alpha = NAN, .beta = 1};
  PLM_CHECK_FAILS(plm_vector_add(s, &a, &b, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->alpha nan is not finite");
  bad = (plm_vector_add_params){.alpha = 1, .beta = INFINITY};
  PLM_CHECK_FAILS(plm_vector_add(s, &a, &b, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->beta inf is not finite");
  plm_tensor shifted = out;
  shifted.data = (char *)a.data + 4;
  PLM_CHECK_FAILS(plm_vector_add(s, &a, &b, &params, &shifted), PLM_ERR_INVALID_ARG,
                  "out overlaps a");

  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_tensor foreign = b;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_vector_add(s, &a, &foreign, &params, &out), PLM_ERR_INVALID_ARG,
                  "b belongs to another context than stream");

  /* Batched. */
  const plm_tensor *pa[2] = {&a, &b}, *pb[2] = {&b, &a};
  plm_tensor *pout[2] = {&out, &wrong};
  PLM_CHECK_FAILS(plm_vector_add_batched(NULL, pa, pb, NULL, pout, 2), PLM_ERR_INVALID_ARG,
                  "plm_vector_add_batched: stream is NULL");
  PLM_CHECK_FAILS(plm_vector_add_batched(s, NULL, pb, NULL, pout, 2), PLM_ERR_INVALID_ARG,
                  "a is NULL");
  PLM_CHECK_FAILS(plm_vector_add_batched(s, pa, NULL, NULL, pout, 2), PLM_ERR_INVALID_ARG,
                  "b is NULL");
  PLM_CHECK_FAILS(plm_vector_add_batched(s, pa, pb, NULL, NULL, 2), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  PLM_CHECK_FAILS(plm_vector_add_batched(s, pa, pb, NULL, pout, 0), PLM_ERR_INVALID_ARG,
                  "count 0 is not >= 1");
  PLM_CHECK_FAILS(plm_vector_add_batched(s, pa, pb, NULL, pout, -3), PLM_ERR_INVALID_ARG,
                  "count -3 is not >= 1");
  PLM_CHECK_FAILS(plm_vector_add_batched(s, pa, pb, NULL, pout, 2), PLM_ERR_INVALID_ARG,
                  "out[1] is 8x9 but a[1] is 8x8");
  PLM_CHECK_FAILS(plm_vector_add_batched(s, pa, pb, &bad, pout, 1), PLM_ERR_INVALID_ARG,
                  "params->beta inf is not finite");
  const plm_tensor *null_entry[2] = {&a, NULL};
  PLM_CHECK_FAILS(plm_vector_add_batched(s, pa, null_entry, NULL, pout, 2), PLM_ERR_INVALID_ARG,
                  "b[1] is NULL");
  const plm_tensor *u8_entry[2] = {&a, &as_u8};
  PLM_CHECK_FAILS(plm_vector_add_batched(s, u8_entry, pb, NULL, pout, 2), PLM_ERR_INVALID_ARG,
                  "a[1]->dtype u8 is not f32");
  const plm_tensor *foreign_entry[2] = {&a, &foreign};
  PLM_CHECK_FAILS(plm_vector_add_batched(s, foreign_entry, pb, NULL, pout, 2), PLM_ERR_INVALID_ARG,
                  "a[1] belongs to another context than stream");
  plm_tensor out2 = plm_test_upload(PLM_DTYPE_F32, 2, dims, NULL);
  plm_tensor *same_out[2] = {&out, &out};
  PLM_CHECK_FAILS(plm_vector_add_batched(s, pa, pb, NULL, same_out, 2), PLM_ERR_INVALID_ARG,
                  "overlaps out[");
  plm_tensor *into_input[2] = {&out2, &a}; /* out[1] is a[0], an input of triple 0 */
  PLM_CHECK_FAILS(plm_vector_add_batched(s, pa, pb, NULL, into_input, 2), PLM_ERR_INVALID_ARG,
                  "out[1] overlaps a[0]");

  /* dot. */
  PLM_CHECK_FAILS(plm_dot(NULL, &a, &b, NULL, &dot_out), PLM_ERR_INVALID_ARG,
                  "plm_dot: stream is NULL");
  PLM_CHECK_FAILS(plm_dot(s, NULL, &b, NULL, &dot_out), PLM_ERR_INVALID_ARG, "a is NULL");
  PLM_CHECK_FAILS(plm_dot(s, &a, NULL, NULL, &dot_out), PLM_ERR_INVALID_ARG, "b is NULL");
  PLM_CHECK_FAILS(plm_dot(s, &a, &b, NULL, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  PLM_CHECK_FAILS(plm_dot(s, &as_u8, &b, NULL, &dot_out), PLM_ERR_INVALID_ARG,
                  "a->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_dot(s, &a, &wrong, NULL, &dot_out), PLM_ERR_INVALID_ARG,
                  "b is 8x9 but a is 8x8");
  PLM_CHECK_FAILS(plm_dot(s, &a, &b, NULL, &dot_f32), PLM_ERR_INVALID_ARG,
                  "out->dtype f32 is not f64");
  PLM_CHECK_FAILS(plm_dot(s, &a, &b, NULL, &dot_wrong), PLM_ERR_INVALID_ARG, "expected (8)");
  PLM_CHECK_FAILS(plm_dot(s, &foreign, &b, NULL, &dot_out), PLM_ERR_INVALID_ARG,
                  "a belongs to another context than stream");
  plm_dot_params dot_bad = {.reserved = 1};
  PLM_CHECK_FAILS(plm_dot(s, &a, &b, &dot_bad, &dot_out), PLM_ERR_INVALID_ARG,
                  "params->reserved 1 is not 0");
  plm_tensor dot_alias = dot_out;
  dot_alias.data = a.data;
  PLM_CHECK_FAILS(plm_dot(s, &a, &b, NULL, &dot_alias), PLM_ERR_INVALID_ARG, "out overlaps a");
  const int64_t cube[3] = {2, 2, 16};
  plm_tensor a3;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, a.data, PLM_DTYPE_F32, 3, cube, &a3));
  PLM_CHECK_FAILS(plm_dot(s, &a3, &a3, NULL, &dot_out), PLM_ERR_INVALID_ARG,
                  "a has 3 dims, not (N) or (R, N)");
  PLM_CHECK_OK(plm_context_destroy(other));

  bool finished = false;
  PLM_CHECK_OK(plm_stream_query(s, &finished));
  ck_assert(finished);
  plm_tensor *all[] = {&a, &b, &out, &wrong, &as_u8, &dot_out, &dot_wrong, &dot_f32, &out2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
}
END_TEST

static Suite *vector_suite(void) {
  Suite *suite = suite_create("vector");
  TCase *tcase = tcase_create("vector");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_vector_add_matches_numpy_for_every_rank_and_odd_sizes);
  tcase_add_test(tcase, test_vector_add_with_null_params_is_a_plain_add_and_may_run_in_place);
  tcase_add_test(tcase, test_vector_add_batched_matches_the_reference_per_triple);
  tcase_add_test(tcase, test_vector_add_batched_triples_may_run_in_place_and_share_inputs);
  tcase_add_test(tcase, test_dot_matches_numpy_in_float64_and_is_deterministic);
  tcase_add_test(tcase, test_dot_propagates_nan_and_infinity);
  tcase_add_test(tcase, test_output_shapes_and_costs);
  tcase_add_test(tcase, test_bad_arguments_are_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(vector_suite);
}

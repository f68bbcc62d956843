/* tests/test_dendritic.c: the dendritic op (plume/dendritic.h) on the backend under
 * test, against a float64 reference computed here. Each dendrite's f32 sum may be off
 * by ~1e-7 · Σ_i |w·x| per term; through the dendrite's function (slope at most L_d)
 * and the soma, each result must stay within 1e-5 · (1 + |out|) · (1 + Σ_d L_d ·
 * Σ_i |w·x|) of the reference. Inputs go to the device with stream copies, so the same
 * test runs on cuda. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *const mode_names[] = {"sigmoid", "nmda", "active_bp", "multiplicative"};

static double sigmoid(double x) {
  return 1.0 / (1.0 + exp(-x));
}

static float *random_values(int64_t count, double range, uint64_t seed) {
  float *v = malloc((size_t)count * sizeof *v);
  ck_assert_ptr_nonnull(v);
  uint64_t state = seed | 1;
  for (int64_t i = 0; i < count; i++)
    v[i] = (float)(range * ((double)(plm_test_random(&state) % 2000001) / 1000000.0 - 1.0));
  return v;
}

static plm_tensor upload(const float *host, int ndim, const int64_t *dims) {
  plm_tensor t;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, ndim, dims, &t));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, t.data, host, plm_tensor_bytes(&t),
                                 PLM_COPY_HOST_TO_DEVICE));
  return t;
}

/* The layer of the given sizes against the reference; the worst error as a fraction of
 * its tolerance (<= 1 passes). */
static double run_case(int64_t batch, int64_t in, int64_t neurons, int64_t dendrites,
                       plm_dendritic_params params, uint64_t seed) {
  float *x = random_values(batch * in, 1.0, seed);
  float *w = random_values(neurons * dendrites * in, 1.0 / sqrt((double)in), seed + 1);
  const int64_t x_dims[2] = {batch, in}, w_dims[3] = {neurons, dendrites, in};
  const int64_t out_dims[2] = {batch, neurons};
  plm_tensor tx = upload(x, 2, x_dims), tw = upload(w, 3, w_dims), tout;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, out_dims, &tout));
  PLM_CHECK_OK(plm_dendritic(plm_test_stream, &tx, &tw, &params, &tout));
  float *out = malloc((size_t)(batch * neurons) * sizeof *out);
  ck_assert_ptr_nonnull(out);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, out, tout.data, plm_tensor_bytes(&tout),
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  const double k = params.k, theta = params.theta, beta = params.beta;
  double worst = 0;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t n = 0; n < neurons; n++) {
      double soma = params.mode == PLM_DENDRITE_MULTIPLICATIVE ? 1.0 : 0.0, spread = 0;
      for (int64_t d = 0; d < dendrites; d++) {
        double a = 0, scale = 0;
        for (int64_t i = 0; i < in; i++) {
          double term = (double)w[(n * dendrites + d) * in + i] * x[b * in + i];
          a += term;
          scale += fabs(term);
        }
        double slope = 1.0;
        switch (params.mode) {
          case PLM_DENDRITE_SIGMOID: soma += sigmoid(a); break;
          case PLM_DENDRITE_NMDA:
            soma += a * sigmoid(k * (a - theta));
            slope = 1.0 + fabs(a * k) / 4.0;
            break;
          case PLM_DENDRITE_ACTIVE_BP:
            soma += a + beta * fmax(0.0, a - theta);
            slope = 1.0 + fabs(beta);
            break;
          case PLM_DENDRITE_MULTIPLICATIVE: soma *= sigmoid(a); break;
        }
        spread += slope * scale;
      }
      double tol = 1e-5 * (1.0 + fabs(soma)) * (1.0 + spread);
      double error = fabs((double)out[b * neurons + n] - soma) / tol;
      if (!(error <= worst)) worst = error; /* NaN counts as the worst */
    }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &tx));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &tw));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &tout));
  free(x);
  free(w);
  free(out);
  return worst;
}

START_TEST(test_matches_the_reference_for_every_mode_and_size) {
  static const int64_t sizes[][4] = {
      /* batch, input, neurons, dendrites */
      {1, 16, 10, 8}, {4, 16, 10, 8}, {1, 1, 1, 1}, {3, 7, 5, 3}, {2, 100, 33, 9}, {17, 40, 6, 1}};
  const plm_dendritic_params modes[] = {
      {.mode = PLM_DENDRITE_SIGMOID},
      {.mode = PLM_DENDRITE_NMDA, .k = 4.0f, .theta = 0.25f},
      {.mode = PLM_DENDRITE_ACTIVE_BP, .theta = 0.1f, .beta = 2.0f},
      {.mode = PLM_DENDRITE_MULTIPLICATIVE}};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int m = 0; m < 4; m++) {
      double worst = run_case(sizes[s][0], sizes[s][1], sizes[s][2], sizes[s][3], modes[m],
                              500 + s * 8 + (uint64_t)m);
      ck_assert_msg(worst <= 1.0, "B %lld I %lld N %lld D %lld %s: %.3g x tolerance",
                    (long long)sizes[s][0], (long long)sizes[s][1], (long long)sizes[s][2],
                    (long long)sizes[s][3], mode_names[m], worst);
    }
}
END_TEST

/* Each mode's function, on a one-dendrite neuron with a known sum, exactly. */
START_TEST(test_each_mode_applies_its_own_function) {
  const int64_t x_dims[2] = {1, 2}, w_dims[3] = {1, 2, 2}, out_dims[2] = {1, 1};
  const float x[2] = {1.0f, 2.0f}, w[4] = {0.5f, 0.25f, -1.0f, 0.0f}; /* a = 1, -1 */
  plm_tensor tx = upload(x, 2, x_dims), tw = upload(w, 3, w_dims), tout;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, out_dims, &tout));
  const plm_dendritic_params modes[] = {
      {.mode = PLM_DENDRITE_SIGMOID},
      {.mode = PLM_DENDRITE_NMDA, .k = 2.0f, .theta = 0.5f},
      {.mode = PLM_DENDRITE_ACTIVE_BP, .theta = 0.5f, .beta = 3.0f},
      {.mode = PLM_DENDRITE_MULTIPLICATIVE}};
  const double expected[] = {sigmoid(1) + sigmoid(-1),
                             1 * sigmoid(2 * 0.5) + -1 * sigmoid(2 * -1.5), (1 + 3 * 0.5) + -1.0,
                             sigmoid(1) * sigmoid(-1)};
  for (int m = 0; m < 4; m++) {
    float result = 0;
    PLM_CHECK_OK(plm_dendritic(plm_test_stream, &tx, &tw, &modes[m], &tout));
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, &result, tout.data, sizeof result,
                                   PLM_COPY_DEVICE_TO_HOST));
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
    ck_assert_msg(fabs(result - expected[m]) <= 1e-6 * (1 + fabs(expected[m])), "%s: %g, not %g",
                  mode_names[m], (double)result, expected[m]);
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &tx));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &tw));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &tout));
}
END_TEST

START_TEST(test_output_shape_and_cost) {
  const int64_t x_dims[2] = {4, 16}, w_dims[3] = {10, 8, 16};
  float storage[8];
  plm_tensor x, w;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, x_dims, &x));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 3, w_dims, &w));
  plm_dendritic_params params = {.mode = PLM_DENDRITE_NMDA, .k = 1};
  plm_shape shape;
  PLM_CHECK_OK(plm_dendritic_output(&x, &w, &params, &shape));
  ck_assert(shape.dtype == PLM_DTYPE_F32 && shape.ndim == 2 && shape.dims[0] == 4 &&
            shape.dims[1] == 10);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_dendritic_cost(&x, &w, &params, &cost));
  ck_assert(cost.bytes == 4.0 * (64 + 1280 + 40));
  ck_assert(cost.flops == 2.0 * 4 * 10 * 8 * 16 + 5.0 * 320);
  params.mode = PLM_DENDRITE_MULTIPLICATIVE;
  PLM_CHECK_OK(plm_dendritic_cost(&x, &w, &params, &cost));
  ck_assert(cost.flops == 2.0 * 4 * 10 * 8 * 16 + 2.0 * 320);
  PLM_CHECK_FAILS(plm_dendritic_output(&w, &x, &params, &shape), PLM_ERR_INVALID_ARG,
                  "x->ndim is 3, expected 2");
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t x_dims[2] = {2, 5}, w_dims[3] = {3, 4, 5}, out_dims[2] = {2, 3};
  const int64_t w6_dims[3] = {3, 4, 6}, wrong_dims[2] = {2, 4};
  plm_tensor x, w, out, w6, wrong, as_i32;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, x_dims, &x));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 3, w_dims, &w));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, out_dims, &out));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 3, w6_dims, &w6));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, wrong_dims, &wrong));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, x_dims, &as_i32));
  plm_dendritic_params params = {.mode = PLM_DENDRITE_SIGMOID};
  plm_stream *s = plm_test_stream;
  PLM_CHECK_FAILS(plm_dendritic(NULL, &x, &w, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_dendritic: stream is NULL");
  PLM_CHECK_FAILS(plm_dendritic(s, NULL, &w, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_dendritic: x is NULL");
  PLM_CHECK_FAILS(plm_dendritic(s, &x, NULL, &params, &out), PLM_ERR_INVALID_ARG, "w is NULL");
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &w, NULL, &out), PLM_ERR_INVALID_ARG, "params is NULL");
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &w, &params, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  PLM_CHECK_FAILS(plm_dendritic(s, &as_i32, &w, &params, &out), PLM_ERR_INVALID_ARG,
                  "x->dtype i32 is not f32");
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &x, &params, &out), PLM_ERR_INVALID_ARG,
                  "w->ndim is 2, expected 3");
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &w6, &params, &out), PLM_ERR_INVALID_ARG,
                  "w has 6 inputs per dendrite but x has 5");
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &w, &params, &wrong), PLM_ERR_INVALID_ARG,
                  "out is 2x4, expected 2x3");
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &w, &params, &w), PLM_ERR_INVALID_ARG,
                  "out->ndim is 3, expected 2");
  plm_dendritic_params bad = {.mode = (plm_dendrite_mode)4};
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &w, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->mode 4 is not a plm_dendrite_mode");
  bad = (plm_dendritic_params){.mode = PLM_DENDRITE_NMDA, .k = NAN};
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &w, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->k is nan, not finite");
  bad = (plm_dendritic_params){.mode = PLM_DENDRITE_ACTIVE_BP, .beta = INFINITY};
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &w, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->beta is inf, not finite");
  plm_tensor over = out;
  over.data = (char *)w.data + 8;
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &w, &params, &over), PLM_ERR_INVALID_ARG, "out overlaps w");
  over.data = x.data;
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &w, &params, &over), PLM_ERR_INVALID_ARG, "out overlaps x");
  plm_tensor strided = w;
  strided.strides[0] = 40;
  PLM_CHECK_FAILS(plm_dendritic(s, &x, &strided, &params, &out), PLM_ERR_UNSUPPORTED,
                  "w is not contiguous");
  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_tensor foreign = x;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_dendritic(s, &foreign, &w, &params, &out), PLM_ERR_INVALID_ARG,
                  "x belongs to another context than stream");
  PLM_CHECK_OK(plm_context_destroy(other));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&x, &w, &out, &w6, &wrong, &as_i32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

static Suite *dendritic_suite(void) {
  Suite *suite = suite_create("dendritic");
  TCase *tcase = tcase_create("dendritic");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 60);
  tcase_add_test(tcase, test_matches_the_reference_for_every_mode_and_size);
  tcase_add_test(tcase, test_each_mode_applies_its_own_function);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(dendritic_suite);
}

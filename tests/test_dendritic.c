/* tests/test_dendritic.c: the dendritic op (plume/dendritic.h) on the backend under
 * test, against a float64 reference computed here. Each dendrite's f32 sum may be off
 * by ~1e-7 · Σ_i |w·x| per term; through the dendrite's function (slope at most L_d)
 * and the soma, each result must stay within 1e-5 · (1 + |out|) · (1 + Σ_d L_d ·
 * Σ_i |w·x|) of the reference. Inputs go to the device with stream copies, so the same
 * test runs on cuda. Both paths (per output, and the GEMM from the backend's batch
 * threshold, kernels/common/dendritic.h) are checked, with neurons of more dendrites
 * than the CPU kernel's block of 256. The op with the caller's scratch
 * (plm__op_scratch_bytes, plm__op_call_with_scratch) is checked: its size, its errors,
 * and a pipeline step taking its scratch from the workspace. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernels/common/dendritic.h"
#include "ops/op_desc.h"

static const char *const mode_names[] = {"sigmoid", "nmda", "active_bp", "multiplicative"};

static double sigmoid(double x) {
  return 1.0 / (1.0 + exp(-x));
}

/* The layer of the given sizes against the reference; the worst error as a fraction of
 * its tolerance (<= 1 passes). */
static double run_case(int64_t batch, int64_t in, int64_t neurons, int64_t dendrites,
                       plm_dendritic_params params, uint64_t seed) {
  float *x = plm_test_uniform_f32(batch * in, 1.0, seed);
  float *w = plm_test_uniform_f32(neurons * dendrites * in, 1.0 / sqrt((double)in), seed + 1);
  const int64_t x_dims[2] = {batch, in}, w_dims[3] = {neurons, dendrites, in};
  const int64_t out_dims[2] = {batch, neurons};
  plm_tensor tx = plm_test_upload(PLM_DTYPE_F32, 2, x_dims, x),
             tw = plm_test_upload(PLM_DTYPE_F32, 3, w_dims, w), tout;
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

/* A description of an f32 tensor (rows, cols) or (a, b, c): enough for the scratch query. */
static plm_tensor description(int ndim, const int64_t *dims) {
  plm_tensor t = {.ctx = plm_test_ctx, .dtype = PLM_DTYPE_F32, .ndim = ndim};
  int64_t stride = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    t.dims[d] = dims[d];
    t.strides[d] = stride;
    stride *= dims[d];
  }
  return t;
}

/* dendritic's scratch for x, w and params (plm__op_scratch_bytes), and the op enqueued
 * with the caller's (plm__op_call_with_scratch). */
static plm_status dendritic_scratch_bytes(const plm_context *ctx, const plm_tensor *x,
                                          const plm_tensor *w, const plm_dendritic_params *params,
                                          size_t *bytes) {
  const plm__op_call call = {.in = {x, w}, .params = params};
  return plm__op_scratch_bytes(&plm__op_dendritic, ctx, &call, bytes);
}

static plm_status dendritic_with_scratch(plm_stream *stream, const plm_tensor *x,
                                         const plm_tensor *w, const plm_dendritic_params *params,
                                         plm_tensor *out, void *scratch, size_t scratch_bytes) {
  const plm__op_call call = {.in = {x, w}, .out = {out}, .params = params};
  return plm__op_call_with_scratch(&plm__op_dendritic, stream, &call, scratch, scratch_bytes);
}

/* The sums' scratch dendritic asks for at (batch, input, neurons, dendrites) on the
 * test's context: 0 where the per-output path runs. */
static size_t sums_scratch(int64_t batch, int64_t in, int64_t neurons, int64_t dendrites) {
  const int64_t x_dims[2] = {batch, in}, w_dims[3] = {neurons, dendrites, in};
  const plm_tensor x = description(2, x_dims), w = description(3, w_dims);
  const plm_dendritic_params params = {.mode = PLM_DENDRITE_SIGMOID};
  size_t bytes = 0;
  PLM_CHECK_OK(dendritic_scratch_bytes(plm_test_ctx, &x, &w, &params, &bytes));
  return bytes;
}

/* The smallest batch the GEMM path takes on the backend under test. */
static int64_t gemm_min_batch(void) {
  return plm_test_backend == PLM_BACKEND_CUDA ? PLM__DENDRITIC_CUDA_GEMM_MIN_BATCH
                                              : PLM__DENDRITIC_CPU_GEMM_MIN_BATCH;
}

START_TEST(test_matches_the_reference_for_every_mode_and_size) {
  const int64_t gemm = gemm_min_batch();
  const int64_t sizes[][4] = {/* batch, input, neurons, dendrites */
                              {1, 16, 10, 8},
                              {4, 16, 10, 8},
                              {1, 1, 1, 1},
                              {3, 7, 5, 3},
                              {2, 100, 33, 9},
                              {17, 40, 6, 1},
                              /* the seed's layer at a batch of 2048 (the GEMM); just below and at
                               * the GEMM's threshold; odd sizes (not multiples of the CPU
                               * micro-kernel's 6 x 16 or of the dot product's 8 lanes); more
                               * dendrites than a block of 256 (the CPU's blocked fold), on both
                               * paths; depth over one block of 256 (I = 300) */
                              {2048, 16, 10, 8},
                              {gemm - 1, 13, 7, 5},
                              {gemm, 13, 7, 5},
                              {gemm + 5, 300, 11, 3},
                              {2, 3, 2, 300},
                              {gemm + 1, 3, 2, 300},
                              {gemm + 3, 1, 1, 1}};
  int paths[2] = {0, 0}; /* cases per output, by GEMM */
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    paths[sums_scratch(sizes[s][0], sizes[s][1], sizes[s][2], sizes[s][3]) > 0]++;
  ck_assert_msg(paths[0] >= 3 && paths[1] >= 3, "%d cases per output, %d by GEMM", paths[0],
                paths[1]);
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
  plm_tensor tx = plm_test_upload(PLM_DTYPE_F32, 2, x_dims, x),
             tw = plm_test_upload(PLM_DTYPE_F32, 3, w_dims, w), tout;
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

/* Each mode's term (kernels/common/dendritic.h, both backends' code, with the
 * arithmetic-only σ of kernels/common/activation.h) against double on a spread of sums a:
 * within 1e-7 · (1 + |a|) (σ is within 1e-7, NMDA multiplies it by a) plus one f32
 * rounding of the result, and the extremes. */
START_TEST(test_dendrite_terms_match_double) {
  const plm_dendritic_params modes[] = {
      {.mode = PLM_DENDRITE_SIGMOID},
      {.mode = PLM_DENDRITE_NMDA, .k = 4.0f, .theta = 0.25f},
      {.mode = PLM_DENDRITE_ACTIVE_BP, .theta = 0.1f, .beta = 2.0f},
      {.mode = PLM_DENDRITE_MULTIPLICATIVE}};
  for (int m = 0; m < 4; m++) {
    const plm_dendritic_params *p = &modes[m];
    double worst = 0;
    for (int i = -200000; i <= 200000; i++) {
      const float a = (float)i * 5e-4f; /* [-100, 100] */
      const double ad = a;
      double want = 0;
      switch (p->mode) {
        case PLM_DENDRITE_SIGMOID:
        case PLM_DENDRITE_MULTIPLICATIVE: want = sigmoid(ad); break;
        case PLM_DENDRITE_NMDA: want = ad * sigmoid((double)p->k * (ad - (double)p->theta)); break;
        case PLM_DENDRITE_ACTIVE_BP:
          want = ad + (double)p->beta * fmax(0.0, ad - (double)p->theta);
          break;
      }
      const double tol = 1e-7 * (1.0 + fabs(ad)) + 0x1p-23 * fabs(want);
      double error = fabs((double)plm__dendritic_term(a, p) - want) / tol;
      if (!(error <= worst)) worst = error;
    }
    ck_assert_msg(worst <= 1.0, "%s: %.3g x tolerance", mode_names[m], worst);
  }
  const plm_dendritic_params sigmoid_mode = {.mode = PLM_DENDRITE_SIGMOID};
  ck_assert(plm__dendritic_term(INFINITY, &sigmoid_mode) == 1.0f);
  ck_assert(plm__dendritic_term(-INFINITY, &sigmoid_mode) <= 1e-38f);
  ck_assert(isnan(plm__dendritic_term(NAN, &sigmoid_mode)));
}
END_TEST

START_TEST(test_sums_scratch_follows_the_path) {
  const int64_t gemm = gemm_min_batch();
  ck_assert_uint_eq(sums_scratch(gemm - 1, 16, 10, 8), 0);
  ck_assert_uint_eq(sums_scratch(1, 5, 3, 2), 0);
  ck_assert_uint_eq(sums_scratch(gemm, 16, 10, 8), (size_t)gemm * 10 * 8 * sizeof(float));
  ck_assert_uint_eq(sums_scratch(gemm + 5, 7, 3, 300),
                    (size_t)(gemm + 5) * 3 * 300 * sizeof(float));
  const int64_t x_dims[2] = {gemm, 5}, w_dims[3] = {3, 2, 5}, w6_dims[3] = {3, 2, 6};
  const plm_tensor x = description(2, x_dims), w = description(3, w_dims),
                   w6 = description(3, w6_dims);
  const plm_dendritic_params params = {.mode = PLM_DENDRITE_NMDA, .k = 1.0f};
  const plm_dendritic_params bad = {.mode = PLM_DENDRITE_NMDA, .k = NAN};
  size_t bytes = 0;
  PLM_CHECK_FAILS(dendritic_scratch_bytes(NULL, &x, &w, &params, &bytes), PLM_ERR_INVALID_ARG,
                  "ctx is NULL");
  PLM_CHECK_FAILS(dendritic_scratch_bytes(plm_test_ctx, NULL, &w, &params, &bytes),
                  PLM_ERR_INVALID_ARG, "x is NULL");
  PLM_CHECK_FAILS(dendritic_scratch_bytes(plm_test_ctx, &x, NULL, &params, &bytes),
                  PLM_ERR_INVALID_ARG, "w is NULL");
  PLM_CHECK_FAILS(dendritic_scratch_bytes(plm_test_ctx, &x, &w, NULL, &bytes), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  PLM_CHECK_FAILS(dendritic_scratch_bytes(plm_test_ctx, &x, &w, &params, NULL), PLM_ERR_INVALID_ARG,
                  "bytes is NULL");
  PLM_CHECK_FAILS(dendritic_scratch_bytes(plm_test_ctx, &x, &w6, &params, &bytes),
                  PLM_ERR_INVALID_ARG, "w has 6 inputs per dendrite but x has 5");
  PLM_CHECK_FAILS(dendritic_scratch_bytes(plm_test_ctx, &x, &w, &bad, &bytes), PLM_ERR_INVALID_ARG,
                  "params->k is nan, not finite");
}
END_TEST

/* The operands of one layer at (batch, in, neurons, dendrites) on the test's stream. */
typedef struct layer_operands {
  plm_tensor x, w, out;
  float *host_x, *host_w;
} layer_operands;

static layer_operands make_operands(int64_t batch, int64_t in, int64_t neurons, int64_t dendrites,
                                    uint64_t seed) {
  layer_operands o;
  const int64_t x_dims[2] = {batch, in}, w_dims[3] = {neurons, dendrites, in};
  const int64_t out_dims[2] = {batch, neurons};
  o.host_x = plm_test_uniform_f32(batch * in, 1.0, seed);
  o.host_w = plm_test_uniform_f32(neurons * dendrites * in, 1.0 / sqrt((double)in), seed + 1);
  o.x = plm_test_upload(PLM_DTYPE_F32, 2, x_dims, o.host_x);
  o.w = plm_test_upload(PLM_DTYPE_F32, 3, w_dims, o.host_w);
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, out_dims, &o.out));
  return o;
}

static void free_operands(layer_operands *o) {
  plm_tensor *all[] = {&o->x, &o->w, &o->out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
  free(o->host_x);
  free(o->host_w);
}

/* dendritic with the caller's scratch gives the public op's bytes (the same
 * path), on both paths; bad scratch is refused and nothing is enqueued. */
START_TEST(test_enqueue_uses_the_given_scratch_and_refuses_bad_scratch) {
  const int64_t batches[2] = {gemm_min_batch() - 1, gemm_min_batch() + 3};
  const plm_dendritic_params params = {.mode = PLM_DENDRITE_NMDA, .k = 2.0f, .theta = 0.25f};
  for (int k = 0; k < 2; k++) {
    const int64_t batch = batches[k], in = 9, neurons = 11, dendrites = 5;
    layer_operands o = make_operands(batch, in, neurons, dendrites, 77 + (uint64_t)k);
    const size_t needed = sums_scratch(batch, in, neurons, dendrites);
    ck_assert_uint_eq(needed > 0, k == 1);
    void *scratch = NULL;
    PLM_CHECK_OK(plm_pool_alloc(plm_test_pool, needed + 256, plm_test_stream, &scratch));
    PLM_CHECK_OK(plm_dendritic(plm_test_stream, &o.x, &o.w, &params, &o.out));
    float *want = plm_test_download(&o.out);
    const size_t out_bytes = plm_tensor_bytes(&o.out);
    PLM_CHECK_OK(plm_stream_memset(plm_test_stream, o.out.data, 0, out_bytes));
    /* Per output, no scratch is needed: NULL and 0 bytes are fine. */
    PLM_CHECK_OK(dendritic_with_scratch(plm_test_stream, &o.x, &o.w, &params, &o.out,
                                        needed ? scratch : NULL, needed));
    float *got = plm_test_download(&o.out);
    ck_assert_msg(memcmp(got, want, out_bytes) == 0, "batch %lld: out differs", (long long)batch);
    free(got);
    if (needed) {
      /* Each failure leaves out as it is (zero): nothing was enqueued. */
      PLM_CHECK_OK(plm_stream_memset(plm_test_stream, o.out.data, 0, out_bytes));
      plm_stream *s = plm_test_stream;
      PLM_CHECK_FAILS(dendritic_with_scratch(s, &o.x, &o.w, &params, &o.out, scratch, needed - 1),
                      PLM_ERR_INVALID_ARG, "is less than the");
      PLM_CHECK_FAILS(dendritic_with_scratch(s, &o.x, &o.w, &params, &o.out, NULL, needed),
                      PLM_ERR_INVALID_ARG, "scratch is NULL but dendritic needs");
      PLM_CHECK_FAILS(
          dendritic_with_scratch(s, &o.x, &o.w, &params, &o.out, (char *)scratch + 4, needed),
          PLM_ERR_INVALID_ARG, "-byte aligned");
      PLM_CHECK_FAILS(dendritic_with_scratch(s, &o.x, &o.w, &params, &o.out, o.x.data, needed),
                      PLM_ERR_INVALID_ARG, "scratch overlaps x");
      PLM_CHECK_FAILS(dendritic_with_scratch(s, &o.x, &o.w, &params, &o.out, o.w.data, needed),
                      PLM_ERR_INVALID_ARG, "scratch overlaps");
      /* The output overlapping the scratch, and no other operand: out moved to a block of
       * a pool of its own (where the default pool puts blocks next to each other is not
       * part of its contract, so scratch at o.out.data may overlap others too). */
      plm_pool *own = NULL;
      plm_tensor lone_out = o.out;
      PLM_CHECK_OK(plm_pool_create(plm_test_ctx, NULL, &own));
      PLM_CHECK_OK(plm_pool_alloc(own, needed, s, &lone_out.data));
      PLM_CHECK_FAILS(
          dendritic_with_scratch(s, &o.x, &o.w, &params, &lone_out, lone_out.data, needed),
          PLM_ERR_INVALID_ARG, "scratch overlaps out");
      PLM_CHECK_OK(plm_pool_free(own, lone_out.data, s));
      PLM_CHECK_OK(plm_pool_destroy(own));
      PLM_CHECK_FAILS(dendritic_with_scratch(NULL, &o.x, &o.w, &params, &o.out, scratch, needed),
                      PLM_ERR_INVALID_ARG, "stream is NULL");
      PLM_CHECK_FAILS(dendritic_with_scratch(s, &o.x, &o.w, NULL, &o.out, scratch, needed),
                      PLM_ERR_INVALID_ARG, "params is NULL");
      PLM_CHECK_FAILS(dendritic_with_scratch(s, &o.x, &o.w, &params, &o.x, scratch, needed),
                      PLM_ERR_INVALID_ARG, "out is");
      float *after = plm_test_download(&o.out);
      for (int64_t i = 0; i < batch * neurons; i++)
        ck_assert_msg(after[i] == 0.0f, "output %lld was written", (long long)i);
      free(after);
    }
    PLM_CHECK_OK(plm_pool_free(plm_test_pool, scratch, plm_test_stream));
    free(want);
    free_operands(&o);
  }
}
END_TEST

/* A pipeline with a dendritic step on the GEMM path: the plan gives the step the sums'
 * scratch in the workspace, the output is the eager op's bytes, and frames make no pool
 * allocation. */
START_TEST(test_pipeline_step_takes_its_scratch_from_the_workspace) {
  const int64_t batch = gemm_min_batch() + 2, in = 10, neurons = 7, dendrites = 6;
  const plm_dendritic_params params = {.mode = PLM_DENDRITE_MULTIPLICATIVE};
  layer_operands o = make_operands(batch, in, neurons, dendrites, 4242);
  const int64_t x_dims[2] = {batch, in}, w_dims[3] = {neurons, dendrites, in};
  plm_pipeline *pl = NULL;
  plm_pipe_tensor px, pw, pout;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, x_dims, &px));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 3, w_dims, o.host_w, &pw));
  PLM_CHECK_OK(plm_pipeline_add_dendritic(pl, px, pw, &params, &pout));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, pout));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  const size_t needed = sums_scratch(batch, in, neurons, dendrites);
  ck_assert_uint_gt(needed, 0);
  ck_assert_uint_eq(info.scratch_bytes, (needed + 255) / 256 * 256);
  ck_assert_uint_ge(info.workspace_bytes, needed);

  PLM_CHECK_OK(plm_dendritic(plm_test_stream, &o.x, &o.w, &params, &o.out));
  float *want = plm_test_download(&o.out);
  const size_t out_bytes = plm_tensor_bytes(&o.out);
  plm_tensor outputs[1] = {o.out};
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, o.out.data, 0, out_bytes));
  PLM_CHECK_OK(plm_pipeline_run(pl, &o.x, outputs, plm_test_stream));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_pool_stats before, after;
  PLM_CHECK_OK(plm_pool_stats_get(plm_test_pool, &before));
  for (int f = 0; f < 3; f++) PLM_CHECK_OK(plm_pipeline_run(pl, &o.x, outputs, plm_test_stream));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_pool_stats_get(plm_test_pool, &after));
  ck_assert_msg(after.requests == before.requests, "%llu pool allocations in 3 frames",
                (unsigned long long)(after.requests - before.requests));
  float *got = plm_test_download(&o.out);
  ck_assert(memcmp(got, want, out_bytes) == 0);
  free(got);
  free(want);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free_operands(&o);
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
  tcase_add_test(tcase, test_dendrite_terms_match_double);
  tcase_add_test(tcase, test_sums_scratch_follows_the_path);
  tcase_add_test(tcase, test_enqueue_uses_the_given_scratch_and_refuses_bad_scratch);
  tcase_add_test(tcase, test_pipeline_step_takes_its_scratch_from_the_workspace);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(dendritic_suite);
}

/* tests/test_pipeline_core.c: the issue-7 operations as pipeline nodes (plume/pipeline.h):
 * matmul, lstm_cell, dendritic, vector_add, dot and ar_forecast. Each node, run in a
 * compiled pipeline, gives the same bytes as its op run alone on the same inputs on the
 * backend under test; bad shapes and dtypes are refused when the node is added, with the
 * node named; the text form's errors name the element and the key; chains plan a
 * workspace; ar_forecast (no scratch on either backend) is capturable. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/op_desc.h"
#include "pipeline/pipeline_internal.h"

/* ---- helpers --------------------------------------------------------------------------------- */

/* n f32 values in [-1, 1), deterministic. */
static float *random_f32(int64_t n, uint64_t *seed) {
  float *host = malloc((size_t)n * sizeof *host);
  ck_assert_ptr_nonnull(host);
  for (int64_t i = 0; i < n; i++)
    host[i] = (float)((double)(plm_test_random(seed) >> 11) / 4503599627370496.0 - 1.0);
  return host;
}

static int64_t count_of(int ndim, const int64_t *dims) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= dims[d];
  return n;
}

/* A tensor like the pipeline's output o, for the op run alone. */
static plm_tensor like_output(const plm_pipeline *pl, int o) {
  plm_shape shape;
  PLM_CHECK_OK(plm_pipeline_output_shape(pl, o, &shape));
  return plm_test_garbage(&shape);
}

static const plm_pipe_tensor none = {0, 0};

/* ---- each node against its op --------------------------------------------------------------- */

/* a (M, K) an input; b (K, N) and bias (N) constants, or inputs, or no bias. */
START_TEST(test_matmul_node) {
  const int64_t M = 7, K = 13, N = 5;
  const int64_t a_dims[2] = {M, K}, b_dims[2] = {K, N}, bias_dims[1] = {N};
  uint64_t seed = 0x1234567ull;
  float *a_host = random_f32(M * K, &seed), *b_host = random_f32(K * N, &seed);
  float *bias_host = random_f32(N, &seed);
  for (int variant = 0; variant < 3; variant++) {
    /* 0: b and bias constants, relu; 1: b an input, no bias, tanh; 2: all inputs, auto. */
    plm_matmul_params params = {.precision = variant == 2 ? PLM_PRECISION_AUTO : PLM_PRECISION_FP32,
                                .activation = variant == 0   ? PLM_ACTIVATION_RELU
                                              : variant == 1 ? PLM_ACTIVATION_TANH
                                                             : PLM_ACTIVATION_SIGMOID};
    plm_pipeline *pl;
    plm_pipe_tensor a, b, bias = none, out;
    PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, a_dims, &a));
    if (variant == 0) {
      PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, b_dims, b_host, &b));
      PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 1, bias_dims, bias_host, &bias));
    } else {
      PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, b_dims, &b));
      if (variant == 2)
        PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 1, bias_dims, &bias));
    }
    PLM_CHECK_OK(plm_pipeline_add_matmul(pl, a, b, bias, &params, &out));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));

    plm_tensor ta = plm_test_upload(PLM_DTYPE_F32, 2, a_dims, a_host);
    plm_tensor tb = plm_test_upload(PLM_DTYPE_F32, 2, b_dims, b_host);
    plm_tensor tbias = plm_test_upload(PLM_DTYPE_F32, 1, bias_dims, bias_host);
    plm_tensor inputs[3] = {ta, tb, tbias}, outputs[1];
    plm_test_compile_and_run(pl, inputs, outputs);
    plm_tensor want = like_output(pl, 0);
    PLM_CHECK_OK(
        plm_matmul(plm_test_stream, &ta, &tb, variant == 1 ? NULL : &tbias, &params, &want));
    plm_test_expect_same_bytes(&outputs[0], &want, "matmul");

    plm_plan_info info;
    plm_op_cost cost;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    PLM_CHECK_OK(plm_matmul_cost(&ta, &tb, variant == 1 ? NULL : &tbias, &params, &cost));
    ck_assert_double_eq(info.flops, cost.flops);
    ck_assert_double_eq(info.device_bytes, cost.bytes);
    ck_assert_uint_eq(info.constant_bytes > 0, variant == 0);
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
    plm_test_release(&ta);
    plm_test_release(&tb);
    plm_test_release(&tbias);
    plm_test_release(&outputs[0]);
    plm_test_release(&want);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  free(a_host);
  free(b_host);
  free(bias_host);
}
END_TEST

/* x, h, c, the weights inputs; the biases constants (or none). Both outputs compared. */
START_TEST(test_lstm_cell_node) {
  const int64_t B = 3, I = 6, H = 5;
  const int64_t x_dims[2] = {B, I}, s_dims[2] = {B, H}, wi_dims[2] = {4 * H, I},
                wh_dims[2] = {4 * H, H}, b_dims[1] = {4 * H};
  uint64_t seed = 0xabcdefull;
  float *x = random_f32(B * I, &seed), *h = random_f32(B * H, &seed), *c = random_f32(B * H, &seed);
  float *wi = random_f32(4 * H * I, &seed), *wh = random_f32(4 * H * H, &seed);
  float *bi = random_f32(4 * H, &seed), *bh = random_f32(4 * H, &seed);
  for (int biased = 0; biased < 2; biased++) {
    plm_pipeline *pl;
    plm_pipe_tensor px, ph, pc, pwi, pwh, pbi = none, pbh = none, out_h, out_c;
    PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, x_dims, &px));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, s_dims, &ph));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, s_dims, &pc));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, wi_dims, &pwi));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, wh_dims, &pwh));
    if (biased) {
      PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 1, b_dims, bi, &pbi));
      PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 1, b_dims, bh, &pbh));
    }
    PLM_CHECK_OK(plm_pipeline_add_lstm_cell(pl, px, ph, pc, pwi, pwh, pbi, pbh, &out_h, &out_c));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, out_h));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, out_c));

    plm_tensor inputs[5] = {plm_test_upload(PLM_DTYPE_F32, 2, x_dims, x),
                            plm_test_upload(PLM_DTYPE_F32, 2, s_dims, h),
                            plm_test_upload(PLM_DTYPE_F32, 2, s_dims, c),
                            plm_test_upload(PLM_DTYPE_F32, 2, wi_dims, wi),
                            plm_test_upload(PLM_DTYPE_F32, 2, wh_dims, wh)};
    plm_tensor tbi = plm_test_upload(PLM_DTYPE_F32, 1, b_dims, bi),
               tbh = plm_test_upload(PLM_DTYPE_F32, 1, b_dims, bh);
    plm_tensor outputs[2];
    plm_test_compile_and_run(pl, inputs, outputs);
    plm_tensor want_h = like_output(pl, 0), want_c = like_output(pl, 1);
    PLM_CHECK_OK(plm_lstm_cell(plm_test_stream, &inputs[0], &inputs[1], &inputs[2], &inputs[3],
                               &inputs[4], biased ? &tbi : NULL, biased ? &tbh : NULL, &want_h,
                               &want_c));
    plm_test_expect_same_bytes(&outputs[0], &want_h, "lstm_cell out_h");
    plm_test_expect_same_bytes(&outputs[1], &want_c, "lstm_cell out_c");

    plm_plan_info info;
    plm_op_cost cost;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    PLM_CHECK_OK(plm_lstm_cell_cost(&inputs[0], &inputs[1], biased ? &tbi : NULL,
                                    biased ? &tbh : NULL, &cost));
    ck_assert_double_eq(info.flops, cost.flops);
    for (int i = 0; i < 5; i++) plm_test_release(&inputs[i]);
    plm_test_release(&tbi);
    plm_test_release(&tbh);
    plm_test_release(&outputs[0]);
    plm_test_release(&outputs[1]);
    plm_test_release(&want_h);
    plm_test_release(&want_c);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  free(x);
  free(h);
  free(c);
  free(wi);
  free(wh);
  free(bi);
  free(bh);
}
END_TEST

/* x an input, w a constant; every mode. */
START_TEST(test_dendritic_node) {
  const int64_t B = 5, I = 9, N = 4, D = 3;
  const int64_t x_dims[2] = {B, I}, w_dims[3] = {N, D, I};
  uint64_t seed = 0x77ull;
  float *x = random_f32(B * I, &seed), *w = random_f32(N * D * I, &seed);
  for (int mode = PLM_DENDRITE_SIGMOID; mode <= PLM_DENDRITE_MULTIPLICATIVE; mode++) {
    plm_dendritic_params params = {
        .mode = (plm_dendrite_mode)mode, .k = 2.5f, .theta = 0.25f, .beta = 1.5f};
    plm_pipeline *pl;
    plm_pipe_tensor px, pw, out;
    PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, x_dims, &px));
    PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 3, w_dims, w, &pw));
    PLM_CHECK_OK(plm_pipeline_add_dendritic(pl, px, pw, &params, &out));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
    plm_tensor tx = plm_test_upload(PLM_DTYPE_F32, 2, x_dims, x),
               tw = plm_test_upload(PLM_DTYPE_F32, 3, w_dims, w);
    plm_tensor outputs[1];
    plm_test_compile_and_run(pl, &tx, outputs);
    plm_tensor want = like_output(pl, 0);
    ck_assert_int_eq(want.dims[0], B);
    ck_assert_int_eq(want.dims[1], N);
    PLM_CHECK_OK(plm_dendritic(plm_test_stream, &tx, &tw, &params, &want));
    plm_test_expect_same_bytes(&outputs[0], &want, "dendritic");
    plm_test_release(&tx);
    plm_test_release(&tw);
    plm_test_release(&outputs[0]);
    plm_test_release(&want);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  free(x);
  free(w);
}
END_TEST

/* a and b inputs (odd 3-D shape); axpby and params NULL (a + b). */
START_TEST(test_vector_add_node) {
  const int64_t dims[3] = {3, 7, 11};
  const int64_t n = count_of(3, dims);
  uint64_t seed = 0x5151ull;
  float *a = random_f32(n, &seed), *b = random_f32(n, &seed);
  const plm_vector_add_params axpby = {.alpha = 2.0, .beta = -0.375};
  for (int plain = 0; plain < 2; plain++) {
    plm_pipeline *pl;
    plm_pipe_tensor pa, pb, out;
    PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 3, dims, &pa));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 3, dims, &pb));
    PLM_CHECK_OK(plm_pipeline_add_vector_add(pl, pa, pb, plain ? NULL : &axpby, &out));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
    plm_tensor inputs[2] = {plm_test_upload(PLM_DTYPE_F32, 3, dims, a),
                            plm_test_upload(PLM_DTYPE_F32, 3, dims, b)};
    plm_tensor outputs[1];
    plm_test_compile_and_run(pl, inputs, outputs);
    plm_tensor want = like_output(pl, 0);
    PLM_CHECK_OK(
        plm_vector_add(plm_test_stream, &inputs[0], &inputs[1], plain ? NULL : &axpby, &want));
    plm_test_expect_same_bytes(&outputs[0], &want, "vector_add");
    plm_test_release(&inputs[0]);
    plm_test_release(&inputs[1]);
    plm_test_release(&outputs[0]);
    plm_test_release(&want);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  free(a);
  free(b);
}
END_TEST

/* Rows (R, N) -> f64 (R); a vector (N) -> f64 (1). */
START_TEST(test_dot_node) {
  uint64_t seed = 0x9090ull;
  const int64_t shapes[2][2] = {{4, 1037}, {5000, 0}};
  for (int v = 0; v < 2; v++) {
    const int ndim = shapes[v][1] ? 2 : 1;
    const int64_t n = count_of(ndim, shapes[v]);
    float *a = random_f32(n, &seed), *b = random_f32(n, &seed);
    plm_pipeline *pl;
    plm_pipe_tensor pa, pb, out;
    PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, ndim, shapes[v], &pa));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, ndim, shapes[v], &pb));
    PLM_CHECK_OK(plm_pipeline_add_dot(pl, pa, pb, &out));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
    plm_shape shape;
    PLM_CHECK_OK(plm_pipeline_tensor_shape(pl, out, &shape));
    ck_assert_int_eq(shape.dtype, PLM_DTYPE_F64);
    ck_assert_int_eq(shape.dims[0], ndim == 2 ? shapes[v][0] : 1);
    plm_tensor inputs[2] = {plm_test_upload(PLM_DTYPE_F32, ndim, shapes[v], a),
                            plm_test_upload(PLM_DTYPE_F32, ndim, shapes[v], b)};
    plm_tensor outputs[1];
    plm_test_compile_and_run(pl, inputs, outputs);
    plm_tensor want = like_output(pl, 0);
    PLM_CHECK_OK(plm_dot(plm_test_stream, &inputs[0], &inputs[1], NULL, &want));
    plm_test_expect_same_bytes(&outputs[0], &want, "dot");
    plm_test_release(&inputs[0]);
    plm_test_release(&inputs[1]);
    plm_test_release(&outputs[0]);
    plm_test_release(&want);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
    free(a);
    free(b);
  }
}
END_TEST

/* Noisy AR(2) series, f32 (S, T), built with the C API and from text. */
static float *ar_series(int64_t count, int64_t length, uint64_t *seed) {
  float *noise = random_f32(count * length, seed);
  for (int64_t s = 0; s < count; s++) {
    float *x = noise + s * length;
    for (int64_t t = 2; t < length; t++) x[t] = 0.6f * x[t - 1] - 0.2f * x[t - 2] + 0.3f * x[t];
  }
  return noise;
}

START_TEST(test_ar_forecast_node) {
  const int64_t S = 37, T = 50, dims[2] = {S, T};
  uint64_t seed = 0xfeedull;
  float *series = ar_series(S, T, &seed);
  const plm_ar_forecast_params params = {.lags = 3, .horizon = 7};
  for (int text = 0; text < 2; text++) {
    plm_pipeline *pl;
    if (text) {
      PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, "ar_forecast lags=3 horizon=7", PLM_DTYPE_F32,
                                      2, dims, &pl));
    } else {
      plm_pipe_tensor in, out;
      PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
      PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, dims, &in));
      PLM_CHECK_OK(plm_pipeline_add_ar_forecast(pl, in, &params, &out));
      PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
    }
    plm_tensor in = plm_test_upload(PLM_DTYPE_F32, 2, dims, series), outputs[1];
    plm_test_compile_and_run(pl, &in, outputs);
    plm_tensor want = like_output(pl, 0);
    ck_assert_int_eq(want.dims[0], S);
    ck_assert_int_eq(want.dims[1], 7);
    PLM_CHECK_OK(plm_ar_forecast(plm_test_stream, &in, &params, &want));
    plm_test_expect_same_bytes(&outputs[0], &want, text ? "ar_forecast (text)" : "ar_forecast");

    /* Graph capture: ar_forecast's scratch (cuda) is in the workspace, none is taken per call. */
    char why[160] = "";
    ck_assert_msg(plm__pipeline_capturable(pl, why, sizeof why), "%s", why);
    plm_test_release(&in);
    plm_test_release(&outputs[0]);
    plm_test_release(&want);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  free(series);
}
END_TEST

/* ---- chains ---------------------------------------------------------------------------------- */

/* x (B, I) -> matmul (W (I, J), bias, relu) -> dendritic (w (N, D, J)): the hidden layer is
 * an intermediate in the workspace. */
START_TEST(test_matmul_then_dendritic) {
  const int64_t B = 6, I = 10, J = 12, N = 3, D = 4;
  const int64_t x_dims[2] = {B, I}, w1_dims[2] = {I, J}, bias_dims[1] = {J}, w2_dims[3] = {N, D, J},
                hidden_dims[2] = {B, J};
  uint64_t seed = 0x4242ull;
  float *x = random_f32(B * I, &seed), *w1 = random_f32(I * J, &seed);
  float *bias = random_f32(J, &seed), *w2 = random_f32(N * D * J, &seed);
  const plm_matmul_params mp = {.activation = PLM_ACTIVATION_RELU};
  const plm_dendritic_params dp = {.mode = PLM_DENDRITE_NMDA, .k = 3.0f, .theta = 0.1f};

  plm_pipeline *pl;
  plm_pipe_tensor px, pw1, pbias, pw2, hidden, out;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, x_dims, &px));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, w1_dims, w1, &pw1));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 1, bias_dims, bias, &pbias));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 3, w2_dims, w2, &pw2));
  PLM_CHECK_OK(plm_pipeline_add_matmul(pl, px, pw1, pbias, &mp, &hidden));
  PLM_CHECK_OK(plm_pipeline_add_dendritic(pl, hidden, pw2, &dp, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));

  plm_tensor tx = plm_test_upload(PLM_DTYPE_F32, 2, x_dims, x),
             tw1 = plm_test_upload(PLM_DTYPE_F32, 2, w1_dims, w1);
  plm_tensor tbias = plm_test_upload(PLM_DTYPE_F32, 1, bias_dims, bias);
  plm_tensor tw2 = plm_test_upload(PLM_DTYPE_F32, 3, w2_dims, w2);
  plm_tensor outputs[1];
  plm_test_compile_and_run(pl, &tx, outputs);
  const plm_shape hidden_shape = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {B, J}};
  plm_tensor th = plm_test_garbage(&hidden_shape), want = like_output(pl, 0);
  PLM_CHECK_OK(plm_matmul(plm_test_stream, &tx, &tw1, &tbias, &mp, &th));
  PLM_CHECK_OK(plm_dendritic(plm_test_stream, &th, &tw2, &dp, &want));
  plm_test_expect_same_bytes(&outputs[0], &want, "matmul -> dendritic");

  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_int_eq(info.nodes, 2);
  ck_assert_int_eq(info.steps, 2);
  ck_assert_int_eq(info.streams, 1);
  const size_t hidden_bytes = (size_t)count_of(2, hidden_dims) * sizeof(float);
  const size_t aligned = (hidden_bytes + 255) / 256 * 256;
  /* dendritic's sums where its GEMM path runs (from a batch on: kernels/common/dendritic.h),
   * beside the hidden layer it reads. */
  const plm__op_call layer = {.in = {&th, &tw2}, .params = &dp};
  size_t sums_bytes = 0;
  PLM_CHECK_OK(plm__op_scratch_bytes(&plm__op_dendritic, plm_test_ctx, &layer, &sums_bytes));
  const size_t sums = (sums_bytes + 255) / 256 * 256;
  ck_assert_uint_eq(info.intermediate_bytes, aligned);
  ck_assert_uint_eq(info.scratch_bytes, sums);
  ck_assert_uint_eq(info.workspace_bytes, aligned + sums);
  ck_assert_uint_ge(info.constant_bytes, (size_t)(I * J + J + N * D * J) * sizeof(float));
  plm_op_cost c1, c2;
  PLM_CHECK_OK(plm_matmul_cost(&tx, &tw1, &tbias, &mp, &c1));
  PLM_CHECK_OK(plm_dendritic_cost(&th, &tw2, &dp, &c2));
  ck_assert_double_eq(info.flops, c1.flops + c2.flops);
  ck_assert_double_eq(info.device_bytes, c1.bytes + c2.bytes);

  char text[4096];
  PLM_CHECK_OK(plm_pipeline_describe(pl, text, sizeof text, NULL));
  ck_assert_msg(strstr(text, "matmul(a=t1, b=t2, bias=t3) act=relu precision=fp32"), "%s", text);
  ck_assert_msg(strstr(text, "dendritic(x=t5, w=t4) mode=nmda k=3 theta=0.1 beta=0"), "%s", text);
  ck_assert_msg(strstr(text, "writes out=t5 f32 6x12 at workspace[0, 288)"), "%s", text);

  plm_test_release(&tx);
  plm_test_release(&tw1);
  plm_test_release(&tbias);
  plm_test_release(&tw2);
  plm_test_release(&th);
  plm_test_release(&outputs[0]);
  plm_test_release(&want);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free(x);
  free(w1);
  free(bias);
  free(w2);
}
END_TEST

/* dot(a + b, c): vector_add into the workspace, then dot of two operands; and, beside
 * it, an lstm_cell whose out_c feeds a second step (out_c is an intermediate). */
START_TEST(test_vector_add_then_dot) {
  const int64_t dims[2] = {9, 300};
  const int64_t n = count_of(2, dims);
  uint64_t seed = 0x3131ull;
  float *a = random_f32(n, &seed), *b = random_f32(n, &seed), *c = random_f32(n, &seed);
  plm_pipeline *pl;
  plm_pipe_tensor pa, pb, pc, sum, out;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, dims, &pa));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, dims, &pb));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, dims, &pc));
  PLM_CHECK_OK(plm_pipeline_add_vector_add(pl, pa, pb, NULL, &sum));
  PLM_CHECK_OK(plm_pipeline_add_dot(pl, sum, pc, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
  plm_tensor inputs[3] = {plm_test_upload(PLM_DTYPE_F32, 2, dims, a),
                          plm_test_upload(PLM_DTYPE_F32, 2, dims, b),
                          plm_test_upload(PLM_DTYPE_F32, 2, dims, c)};
  plm_tensor outputs[1];
  plm_test_compile_and_run(pl, inputs, outputs);
  const plm_shape sum_shape = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {dims[0], dims[1]}};
  plm_tensor tsum = plm_test_garbage(&sum_shape), want = like_output(pl, 0);
  PLM_CHECK_OK(plm_vector_add(plm_test_stream, &inputs[0], &inputs[1], NULL, &tsum));
  PLM_CHECK_OK(plm_dot(plm_test_stream, &tsum, &inputs[2], NULL, &want));
  plm_test_expect_same_bytes(&outputs[0], &want, "vector_add -> dot");
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_int_eq(info.steps, 2);
  ck_assert_uint_eq(info.workspace_bytes, (size_t)n * sizeof(float) / 256 * 256 +
                                              ((size_t)n * sizeof(float) % 256 ? 256 : 0));
  for (int i = 0; i < 3; i++) plm_test_release(&inputs[i]);
  plm_test_release(&tsum);
  plm_test_release(&outputs[0]);
  plm_test_release(&want);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free(a);
  free(b);
  free(c);
}
END_TEST

/* Two lstm steps, the second reading the first's out_h and out_c (intermediates), and
 * with PLM_PLAN_ALLOCATE_PER_RUN as well. */
START_TEST(test_lstm_two_steps) {
  const int64_t B = 2, I = 3, H = 4;
  const int64_t x_dims[2] = {B, I}, s_dims[2] = {B, H}, wi_dims[2] = {4 * H, I},
                wh_dims[2] = {4 * H, H};
  uint64_t seed = 0x8181ull;
  float *x = random_f32(B * I, &seed), *h = random_f32(B * H, &seed), *c = random_f32(B * H, &seed);
  float *wi = random_f32(4 * H * I, &seed), *wh = random_f32(4 * H * H, &seed);
  for (int per_run = 0; per_run < 2; per_run++) {
    plm_pipeline *pl;
    plm_pipe_tensor px, ph, pc, pwi, pwh, h1, c1, h2, c2;
    PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, x_dims, &px));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, s_dims, &ph));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, s_dims, &pc));
    PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, wi_dims, wi, &pwi));
    PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, wh_dims, wh, &pwh));
    PLM_CHECK_OK(plm_pipeline_add_lstm_cell(pl, px, ph, pc, pwi, pwh, none, none, &h1, &c1));
    PLM_CHECK_OK(plm_pipeline_add_lstm_cell(pl, px, h1, c1, pwi, pwh, none, none, &h2, &c2));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, h2));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, c2));
    plm_tensor inputs[3] = {plm_test_upload(PLM_DTYPE_F32, 2, x_dims, x),
                            plm_test_upload(PLM_DTYPE_F32, 2, s_dims, h),
                            plm_test_upload(PLM_DTYPE_F32, 2, s_dims, c)};
    plm_tensor twi = plm_test_upload(PLM_DTYPE_F32, 2, wi_dims, wi),
               twh = plm_test_upload(PLM_DTYPE_F32, 2, wh_dims, wh);
    const plm_plan_config cfg = {.flags = per_run ? PLM_PLAN_ALLOCATE_PER_RUN : 0};
    PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
    plm_tensor outputs[2] = {like_output(pl, 0), like_output(pl, 1)};
    PLM_CHECK_OK(plm_pipeline_run(pl, inputs, outputs, plm_test_stream));
    plm_plan_info info;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    ck_assert_int_eq(info.steps, 2);
    ck_assert_uint_eq(info.intermediate_bytes, 2 * 256);
    ck_assert_uint_eq(info.workspace_bytes, per_run ? 0 : 2 * 256);
    const plm_shape state = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {B, H}};
    plm_tensor th = plm_test_garbage(&state), tc = plm_test_garbage(&state), want_h = plm_test_garbage(&state),
               want_c = plm_test_garbage(&state);
    PLM_CHECK_OK(plm_lstm_cell(plm_test_stream, &inputs[0], &inputs[1], &inputs[2], &twi, &twh,
                               NULL, NULL, &th, &tc));
    PLM_CHECK_OK(plm_lstm_cell(plm_test_stream, &inputs[0], &th, &tc, &twi, &twh, NULL, NULL,
                               &want_h, &want_c));
    plm_test_expect_same_bytes(&outputs[0], &want_h, "lstm x2 out_h");
    plm_test_expect_same_bytes(&outputs[1], &want_c, "lstm x2 out_c");
    for (int i = 0; i < 3; i++) plm_test_release(&inputs[i]);
    plm_tensor *rest[] = {&twi, &twh, &outputs[0], &outputs[1], &th, &tc, &want_h, &want_c};
    for (int i = 0; i < 8; i++) plm_test_release(rest[i]);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  free(x);
  free(h);
  free(c);
  free(wi);
  free(wh);
}
END_TEST

/* An lstm_cell whose seven operands are each made by a vector_add of its own: seven
 * independent branches on their own streams (up to 8), the cell waiting for each. */
START_TEST(test_lstm_waits_for_seven_branches) {
  const int64_t B = 3, I = 4, H = 2;
  const int64_t shapes[7][2] = {{B, I},     {B, H},     {B, H},    {4 * H, I},
                                {4 * H, H}, {4 * H, 0}, {4 * H, 0}};
  uint64_t seed = 0x7777ull;
  plm_pipeline *pl;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  plm_pipe_tensor in[14], sums[7], out_h, out_c;
  plm_tensor dev[14], sum_dev[7];
  float *host[14];
  for (int k = 0; k < 7; k++) {
    const int ndim = shapes[k][1] ? 2 : 1;
    const plm_vector_add_params params = {.alpha = 0.5 + k, .beta = -1.0};
    for (int j = 0; j < 2; j++) {
      host[2 * k + j] = random_f32(count_of(ndim, shapes[k]), &seed);
      PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, ndim, shapes[k], &in[2 * k + j]));
      dev[2 * k + j] = plm_test_upload(PLM_DTYPE_F32, ndim, shapes[k], host[2 * k + j]);
    }
    PLM_CHECK_OK(plm_pipeline_add_vector_add(pl, in[2 * k], in[2 * k + 1], &params, &sums[k]));
    const plm_shape shape = {
        .dtype = PLM_DTYPE_F32, .ndim = ndim, .dims = {shapes[k][0], shapes[k][1]}};
    sum_dev[k] = plm_test_garbage(&shape);
    PLM_CHECK_OK(
        plm_vector_add(plm_test_stream, &dev[2 * k], &dev[2 * k + 1], &params, &sum_dev[k]));
  }
  PLM_CHECK_OK(plm_pipeline_add_lstm_cell(pl, sums[0], sums[1], sums[2], sums[3], sums[4], sums[5],
                                          sums[6], &out_h, &out_c));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out_h));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out_c));
  const plm_plan_config cfg = {.max_streams = 8};
  PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_int_eq(info.steps, 8);
  ck_assert_int_eq(info.streams, 7);
  ck_assert_int_eq(pl->plan.steps[7].kind, PLM__OP_lstm_cell);
  ck_assert_int_eq(pl->plan.steps[7].wait_count, 6); /* the six other branches' events */
  plm_tensor outputs[2] = {like_output(pl, 0), like_output(pl, 1)};
  PLM_CHECK_OK(plm_pipeline_run(pl, dev, outputs, plm_test_stream));
  plm_tensor want_h = like_output(pl, 0), want_c = like_output(pl, 1);
  PLM_CHECK_OK(plm_lstm_cell(plm_test_stream, &sum_dev[0], &sum_dev[1], &sum_dev[2], &sum_dev[3],
                             &sum_dev[4], &sum_dev[5], &sum_dev[6], &want_h, &want_c));
  plm_test_expect_same_bytes(&outputs[0], &want_h, "7 branches -> lstm_cell out_h");
  plm_test_expect_same_bytes(&outputs[1], &want_c, "7 branches -> lstm_cell out_c");
  for (int k = 0; k < 14; k++) {
    plm_test_release(&dev[k]);
    free(host[k]);
  }
  for (int k = 0; k < 7; k++) plm_test_release(&sum_dev[k]);
  plm_test_release(&outputs[0]);
  plm_test_release(&outputs[1]);
  plm_test_release(&want_h);
  plm_test_release(&want_c);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* ---- errors ---------------------------------------------------------------------------------- */

START_TEST(test_add_errors_name_the_node) {
  plm_pipeline *pl;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  const int64_t d34[2] = {3, 4}, d52[2] = {5, 2}, d42[2] = {4, 2}, d3[1] = {3}, d2[1] = {2};
  const int64_t d35[2] = {3, 5}, d20x4[2] = {20, 4}, d20x5[2] = {20, 5}, d20[1] = {20};
  const int64_t d2x2x4[3] = {2, 2, 4}, d2x2x3[3] = {2, 2, 3}, series[2] = {4, 10};
  plm_pipe_tensor a, b52, b42, bias3, bias2, u8, h, c, wi, wh, b20, w224, w223, s, out, out2;
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, d34, &a));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, d52, &b52));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, d42, &b42));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 1, d3, &bias3));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 1, d2, &bias2));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U8, 2, d34, &u8));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, d35, &h));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, d35, &c));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, d20x4, &wi));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, d20x5, &wh));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 1, d20, &b20));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 3, d2x2x4, &w224));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 3, d2x2x3, &w223));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, series, &s));
  const plm_matmul_params mp = {0};
  const plm_dendritic_params dp = {0};

  /* matmul: K mismatch, bias of the wrong length, a u8, a bad activation. */
  PLM_CHECK_FAILS(plm_pipeline_add_matmul(pl, a, b52, none, &mp, &out), PLM_ERR_INVALID_ARG,
                  "plm_pipeline_add_matmul: node 0 'matmul': ");
  PLM_CHECK_FAILS(plm_pipeline_add_matmul(pl, a, b42, bias3, &mp, &out), PLM_ERR_INVALID_ARG,
                  "node 0 'matmul': bias");
  PLM_CHECK_FAILS(plm_pipeline_add_matmul(pl, u8, b42, none, &mp, &out), PLM_ERR_INVALID_ARG,
                  "node 0 'matmul': a");
  const plm_matmul_params bad_act = {.activation = (plm_activation)9};
  PLM_CHECK_FAILS(plm_pipeline_add_matmul(pl, a, b42, none, &bad_act, &out), PLM_ERR_INVALID_ARG,
                  "node 0 'matmul'");
  PLM_CHECK_FAILS(plm_pipeline_add_matmul(pl, a, none, none, &mp, &out), PLM_ERR_INVALID_ARG,
                  "node 0 'matmul': b is a zeroed handle");
  /* A failed add changed nothing: this one is node 0 still. */
  PLM_CHECK_OK(plm_pipeline_add_matmul(pl, a, b42, bias2, &mp, &out));

  /* lstm_cell: each operand's shape and dtype, and the optional biases. */
  PLM_CHECK_FAILS(plm_pipeline_add_lstm_cell(pl, a, h, c, wh, wh, none, none, &out, &out2),
                  PLM_ERR_INVALID_ARG, "node 1 'lstm_cell': w_ih is 20x5, not 20x4");
  PLM_CHECK_FAILS(plm_pipeline_add_lstm_cell(pl, a, h, c, wi, wi, none, none, &out, &out2),
                  PLM_ERR_INVALID_ARG, "node 1 'lstm_cell': w_hh is 20x4, not 20x5");
  PLM_CHECK_FAILS(plm_pipeline_add_lstm_cell(pl, a, h, a, wi, wh, none, none, &out, &out2),
                  PLM_ERR_INVALID_ARG, "node 1 'lstm_cell': c is 3x4, not 3x5");
  PLM_CHECK_FAILS(plm_pipeline_add_lstm_cell(pl, a, h, c, wi, wh, bias3, none, &out, &out2),
                  PLM_ERR_INVALID_ARG, "node 1 'lstm_cell': b_ih is 3, not 20");
  PLM_CHECK_FAILS(plm_pipeline_add_lstm_cell(pl, a, h, c, wi, wh, b20, u8, &out, &out2),
                  PLM_ERR_INVALID_ARG, "node 1 'lstm_cell': b_hh->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_pipeline_add_lstm_cell(pl, u8, h, c, wi, wh, none, none, &out, &out2),
                  PLM_ERR_INVALID_ARG, "node 1 'lstm_cell': x");
  PLM_CHECK_FAILS(plm_pipeline_add_lstm_cell(pl, a, b42, c, wi, wh, none, none, &out, &out2),
                  PLM_ERR_INVALID_ARG, "node 1 'lstm_cell': h");
  PLM_CHECK_FAILS(plm_pipeline_add_lstm_cell(pl, a, h, c, wi, wh, none, none, &out, NULL),
                  PLM_ERR_INVALID_ARG, "out_c");
  PLM_CHECK_OK(plm_pipeline_add_lstm_cell(pl, a, h, c, wi, wh, b20, b20, &out, &out2));

  /* dendritic: w's I not x's; x not f32; a bad mode. */
  PLM_CHECK_FAILS(plm_pipeline_add_dendritic(pl, a, w223, &dp, &out), PLM_ERR_INVALID_ARG,
                  "node 2 'dendritic': ");
  PLM_CHECK_FAILS(plm_pipeline_add_dendritic(pl, u8, w224, &dp, &out), PLM_ERR_INVALID_ARG,
                  "node 2 'dendritic': x");
  const plm_dendritic_params bad_mode = {.mode = (plm_dendrite_mode)7};
  PLM_CHECK_FAILS(plm_pipeline_add_dendritic(pl, a, w224, &bad_mode, &out), PLM_ERR_INVALID_ARG,
                  "node 2 'dendritic': ");
  const plm_dendritic_params nan_k = {.mode = PLM_DENDRITE_NMDA, .k = NAN};
  PLM_CHECK_FAILS(plm_pipeline_add_dendritic(pl, a, w224, &nan_k, &out), PLM_ERR_INVALID_ARG,
                  "node 2 'dendritic': ");
  PLM_CHECK_OK(plm_pipeline_add_dendritic(pl, a, w224, &dp, &out));

  /* vector_add and dot: shapes differ, dtype not f32, alpha not finite. */
  PLM_CHECK_FAILS(plm_pipeline_add_vector_add(pl, a, h, NULL, &out), PLM_ERR_INVALID_ARG,
                  "node 3 'vector_add': ");
  PLM_CHECK_FAILS(plm_pipeline_add_vector_add(pl, u8, a, NULL, &out), PLM_ERR_INVALID_ARG,
                  "node 3 'vector_add': ");
  const plm_vector_add_params inf_alpha = {.alpha = INFINITY, .beta = 1.0};
  PLM_CHECK_FAILS(plm_pipeline_add_vector_add(pl, a, a, &inf_alpha, &out), PLM_ERR_INVALID_ARG,
                  "node 3 'vector_add': ");
  PLM_CHECK_FAILS(plm_pipeline_add_dot(pl, a, h, &out), PLM_ERR_INVALID_ARG, "node 3 'dot': ");
  PLM_CHECK_FAILS(plm_pipeline_add_dot(pl, a, u8, &out), PLM_ERR_INVALID_ARG, "node 3 'dot': ");
  PLM_CHECK_FAILS(plm_pipeline_add_dot(pl, w224, w224, &out), PLM_ERR_INVALID_ARG,
                  "node 3 'dot': ");

  /* ar_forecast: lags out of range, too short a series (T >= 2p + 1), not f32. */
  const plm_ar_forecast_params zero_lags = {.lags = 0, .horizon = 3};
  const plm_ar_forecast_params long_lags = {.lags = 5, .horizon = 3};
  const plm_ar_forecast_params ok = {.lags = 4, .horizon = 3};
  PLM_CHECK_FAILS(plm_pipeline_add_ar_forecast(pl, s, &zero_lags, &out), PLM_ERR_INVALID_ARG,
                  "node 3 'ar_forecast': ");
  PLM_CHECK_FAILS(plm_pipeline_add_ar_forecast(pl, s, &long_lags, &out), PLM_ERR_INVALID_ARG,
                  "node 3 'ar_forecast': ");
  PLM_CHECK_FAILS(plm_pipeline_add_ar_forecast(pl, u8, &ok, &out), PLM_ERR_INVALID_ARG,
                  "node 3 'ar_forecast': ");
  PLM_CHECK_FAILS(plm_pipeline_add_ar_forecast(pl, s, NULL, &out), PLM_ERR_INVALID_ARG, "params");
  PLM_CHECK_OK(plm_pipeline_add_ar_forecast(pl, s, &ok, &out));

  int nodes = 0;
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  nodes = info.nodes;
  ck_assert_int_eq(nodes, 4);
  ck_assert_int_eq(info.steps, 1); /* the others feed no output */
  PLM_CHECK_FAILS(plm_pipeline_add_dot(pl, a, a, &out), PLM_ERR_INVALID_STATE, "compiled");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

START_TEST(test_parse_errors_name_element_and_key) {
  static const struct {
    const char *text, *message;
  } cases[] = {
      {"ar_forecast lags=3", "plm_pipeline_parse: element 1 'ar_forecast': missing key 'horizon'"},
      {"ar_forecast horizon=3", "element 1 'ar_forecast': missing key 'lags'"},
      {"ar_forecast lags=x horizon=3",
       "element 1 'ar_forecast': key 'lags': 'x' is not an integer"},
      {"ar_forecast lags=3 horizon=0",
       "element 1 'ar_forecast': key 'horizon': '0' is not an integer in 1..1024"},
      {"ar_forecast lags=33 horizon=2", "element 1 'ar_forecast': key 'lags'"},
      {"ar_forecast lags=3 horizon=2 window=4", "element 1 'ar_forecast': unknown key 'window'"},
      {"ar_forecast lags=3 lags=4 horizon=2", "element 1 'ar_forecast': key 'lags' is given twice"},
      /* T = 20 < 2p + 1: the node's own check, naming the element. */
      {"ar_forecast lags=10 horizon=2", "element 1 'ar_forecast': "},
      {"ar_forecast lags=2 horizon=2 ! ar_forecast lags=2", "element 2 'ar_forecast': missing key"},
      /* The operations that read tensors name them (test_pipeline.c has the rest). */
      {"matmul", "element 1 'matmul': missing key 'b' (a tensor: b=@NAME)"},
      {"ar_forecast lags=2 horizon=2 ! dot", "element 2 'dot': missing key 'b'"},
      {"lstm_cell", "element 1 'lstm_cell': missing key 'h'"},
      {"dendritic mode=nmda", "element 1 'dendritic': missing key 'w'"},
      {"vector_add b=@b alpha=2",
       "element 1 'vector_add': key 'b': no tensor named 'b' (no "
       "tensors were given)"},
      {"ar_forcast lags=2 horizon=2", "element 1 'ar_forcast': unknown element"},
  };
  const int64_t dims[2] = {6, 20};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    plm_pipeline *pl = (plm_pipeline *)&pl;
    PLM_CHECK_FAILS(plm_pipeline_parse(plm_test_ctx, cases[i].text, PLM_DTYPE_F32, 2, dims, &pl),
                    PLM_ERR_INVALID_ARG, cases[i].message);
    ck_assert_ptr_null(pl);
  }
  /* ar_forecast after another element reads its output: two forecasts in a row. */
  plm_pipeline *pl;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                  "ar_forecast lags=2 horizon=9 ! ar_forecast lags=1 horizon=4",
                                  PLM_DTYPE_F32, 2, dims, &pl));
  plm_shape shape;
  PLM_CHECK_OK(plm_pipeline_output_shape(pl, 0, &shape));
  ck_assert_int_eq(shape.dims[0], 6);
  ck_assert_int_eq(shape.dims[1], 4);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

static Suite *pipeline_core_suite(void) {
  Suite *suite = suite_create("pipeline_core");
  TCase *nodes = tcase_create("nodes");
  plm_test_add_fixture(nodes);
  plm_test_add_stream_fixture(nodes);
  tcase_add_test(nodes, test_matmul_node);
  tcase_add_test(nodes, test_lstm_cell_node);
  tcase_add_test(nodes, test_dendritic_node);
  tcase_add_test(nodes, test_vector_add_node);
  tcase_add_test(nodes, test_dot_node);
  tcase_add_test(nodes, test_ar_forecast_node);
  suite_add_tcase(suite, nodes);
  TCase *chains = tcase_create("chains");
  plm_test_add_fixture(chains);
  plm_test_add_stream_fixture(chains);
  tcase_add_test(chains, test_matmul_then_dendritic);
  tcase_add_test(chains, test_vector_add_then_dot);
  tcase_add_test(chains, test_lstm_two_steps);
  tcase_add_test(chains, test_lstm_waits_for_seven_branches);
  suite_add_tcase(suite, chains);
  TCase *errors = tcase_create("errors");
  plm_test_add_fixture(errors);
  tcase_add_test(errors, test_add_errors_name_the_node);
  tcase_add_test(errors, test_parse_errors_name_element_and_key);
  suite_add_tcase(suite, errors);
  return suite;
}

int main(void) {
  return plm_test_main(pipeline_core_suite);
}

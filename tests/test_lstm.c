/* tests/test_lstm.c: the lstm_cell op (plume/lstm.h) on the backend under test,
 * against a float64 reference of torch.nn.LSTMCell computed here. Each result must be
 * within 1e-5 · (1 + Σ |terms of its unit's four gate sums|) of the reference (the gates'
 * nonlinearities are at most 1-Lipschitz, so the f32 sums' error bound carries through).
 * Both ways of computing the gates run (per unit below the backend's batch threshold,
 * the GEMM above it: kernels/common/lstm.h), at odd sizes and at sizes that span several
 * of the CPU GEMM's depth and column blocks. The op with the caller's scratch
 * (plm__op_scratch_bytes, plm__op_call_with_scratch) is checked: its size, its errors,
 * and a pipeline step taking its scratch from the workspace. Inputs go to the device with stream
 * copies, so the same test runs on cuda. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernels/common/lstm.h"
#include "ops/op_desc.h"

static double sigmoid(double x) {
  return 1.0 / (1.0 + exp(-x));
}

static void download(float *host, const plm_tensor *t) {
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, host, t->data, plm_tensor_bytes(t),
                                 PLM_COPY_DEVICE_TO_HOST));
}

/* One LSTM step of the given sizes against the reference; with_bias 0 (none), 1 (both),
 * 2 (b_ih only); in_place writes out_c over c. Returns the worst error as a fraction of
 * its tolerance (<= 1 passes). */
static double run_case(int64_t batch, int64_t in, int64_t hid, int with_bias, bool in_place,
                       uint64_t seed) {
  const double w_range = 1.0 / sqrt((double)hid); /* torch's initialisation */
  float *x = plm_test_uniform_f32(batch * in, 1.0, seed),
        *h = plm_test_uniform_f32(batch * hid, 1.0, seed + 1);
  float *c = plm_test_uniform_f32(batch * hid, 2.0, seed + 2);
  float *w_ih = plm_test_uniform_f32(4 * hid * in, w_range, seed + 3);
  float *w_hh = plm_test_uniform_f32(4 * hid * hid, w_range, seed + 4);
  float *b_ih = plm_test_uniform_f32(4 * hid, w_range, seed + 5);
  float *b_hh = plm_test_uniform_f32(4 * hid, w_range, seed + 6);
  const int64_t x_dims[2] = {batch, in}, s_dims[2] = {batch, hid};
  const int64_t wi_dims[2] = {4 * hid, in}, wh_dims[2] = {4 * hid, hid}, g_dims[1] = {4 * hid};
  plm_tensor tx = plm_test_upload(PLM_DTYPE_F32, 2, x_dims, x),
             th = plm_test_upload(PLM_DTYPE_F32, 2, s_dims, h),
             tc = plm_test_upload(PLM_DTYPE_F32, 2, s_dims, c);
  plm_tensor twi = plm_test_upload(PLM_DTYPE_F32, 2, wi_dims, w_ih),
             twh = plm_test_upload(PLM_DTYPE_F32, 2, wh_dims, w_hh);
  plm_tensor tbi = plm_test_upload(PLM_DTYPE_F32, 1, g_dims, b_ih),
             tbh = plm_test_upload(PLM_DTYPE_F32, 1, g_dims, b_hh), tout_h, tout_c;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, s_dims, &tout_h));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, s_dims, &tout_c));
  const bool use_ih = with_bias >= 1, use_hh = with_bias == 1;
  PLM_CHECK_OK(plm_lstm_cell(plm_test_stream, &tx, &th, &tc, &twi, &twh, use_ih ? &tbi : NULL,
                             use_hh ? &tbh : NULL, &tout_h, in_place ? &tc : &tout_c));
  float *out_h = malloc((size_t)(batch * hid) * sizeof(float));
  float *out_c = malloc((size_t)(batch * hid) * sizeof(float));
  ck_assert(out_h && out_c);
  download(out_h, &tout_h);
  download(out_c, in_place ? &tc : &tout_c);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  double worst = 0;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t j = 0; j < hid; j++) {
      double gates[4], scale = 1.0;
      for (int g = 0; g < 4; g++) {
        const int64_t row = g * hid + j;
        double sum = 0;
        for (int64_t k = 0; k < in; k++) {
          sum += (double)x[b * in + k] * w_ih[row * in + k];
          scale += fabs((double)x[b * in + k] * w_ih[row * in + k]);
        }
        for (int64_t k = 0; k < hid; k++) {
          sum += (double)h[b * hid + k] * w_hh[row * hid + k];
          scale += fabs((double)h[b * hid + k] * w_hh[row * hid + k]);
        }
        if (use_ih) sum += b_ih[row], scale += fabs(b_ih[row]);
        if (use_hh) sum += b_hh[row], scale += fabs(b_hh[row]);
        gates[g] = sum;
      }
      double cell = sigmoid(gates[1]) * c[b * hid + j] + sigmoid(gates[0]) * tanh(gates[2]);
      double hidden = sigmoid(gates[3]) * tanh(cell);
      double tol = 1e-5 * scale;
      double e_c = fabs(out_c[b * hid + j] - cell) / tol;
      double e_h = fabs(out_h[b * hid + j] - hidden) / tol;
      if (!(e_c <= worst)) worst = e_c; /* NaN counts as the worst */
      if (!(e_h <= worst)) worst = e_h;
    }
  plm_tensor *all[] = {&tx, &th, &tc, &twi, &twh, &tbi, &tbh, &tout_h, &tout_c};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
  float *host[] = {x, h, c, w_ih, w_hh, b_ih, b_hh, out_h, out_c};
  for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
  return worst;
}

/* The gates' scratch lstm_cell asks for at (batch, input, hidden) on the test's context:
 * 0 where the per-unit path runs. */
static plm_tensor description(int64_t rows, int64_t cols) {
  return (plm_tensor){.ctx = plm_test_ctx,
                      .dtype = PLM_DTYPE_F32,
                      .ndim = 2,
                      .dims = {rows, cols},
                      .strides = {cols, 1}};
}

/* A call on descriptions of the required inputs x, h, c, w_ih and w_hh (in t). */
static plm__op_call described_call(int64_t batch, int64_t in, int64_t hid, plm_tensor t[5]) {
  t[0] = description(batch, in);
  t[1] = description(batch, hid);
  t[2] = description(batch, hid);
  t[3] = description(4 * hid, in);
  t[4] = description(4 * hid, hid);
  return (plm__op_call){.in = {&t[0], &t[1], &t[2], &t[3], &t[4]}};
}

static size_t gate_scratch(int64_t batch, int64_t in, int64_t hid) {
  plm_tensor t[5];
  const plm__op_call call = described_call(batch, in, hid, t);
  size_t bytes = 0;
  PLM_CHECK_OK(plm__op_scratch_bytes(&plm__op_lstm_cell, plm_test_ctx, &call, &bytes));
  return bytes;
}

/* The smallest batch the GEMM path takes on the backend under test. */
static int64_t gemm_min_batch(void) {
  return plm_test_backend == PLM_BACKEND_CUDA ? PLM__LSTM_CUDA_GEMM_MIN_BATCH
                                              : PLM__LSTM_CPU_GEMM_MIN_BATCH;
}

START_TEST(test_matches_torch_lstm_cell_for_the_seeds_sizes_and_odd_ones) {
  const int64_t gemm = gemm_min_batch();
  const int64_t sizes[][3] = {/* batch, input, hidden */
                              {1, 64, 128},
                              {32, 64, 128},
                              {1, 1, 1},
                              {3, 7, 5},
                              {5, 33, 17},
                              {2, 200, 70},
                              /* just below and at the GEMM's threshold; odd sizes (not multiples of
                               * the CPU micro-kernel's 6 x 16); depth over one block of 256 (I =
                               * 300) and 4H over one column block of 512 (H = 131) */
                              {gemm - 1, 13, 9},
                              {gemm, 13, 9},
                              {gemm + 7, 300, 131},
                              {gemm + 1, 1, 1}};
  int paths[2] = {0, 0}; /* cases per unit, by GEMM */
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    paths[gate_scratch(sizes[s][0], sizes[s][1], sizes[s][2]) > 0]++;
  ck_assert_msg(paths[0] >= 3 && paths[1] >= 3, "%d cases per unit, %d by GEMM", paths[0],
                paths[1]);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int with_bias = 0; with_bias < 3; with_bias++)
      for (int in_place = 0; in_place < 2; in_place++) {
        double worst = run_case(sizes[s][0], sizes[s][1], sizes[s][2], with_bias, in_place,
                                1000 + s * 10 + (uint64_t)with_bias * 2 + (uint64_t)in_place);
        ck_assert_msg(worst <= 1.0, "B %lld I %lld H %lld bias %d in place %d: %.3g x tolerance",
                      (long long)sizes[s][0], (long long)sizes[s][1], (long long)sizes[s][2],
                      with_bias, in_place, worst);
      }
}
END_TEST

START_TEST(test_output_shape_and_cost) {
  const int64_t x_dims[2] = {3, 5}, h_dims[2] = {3, 7}, g_dims[1] = {28};
  float storage[64];
  plm_tensor x, h, bias;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, x_dims, &x));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, h_dims, &h));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 1, g_dims, &bias));
  plm_shape shape;
  PLM_CHECK_OK(plm_lstm_cell_output(&x, &h, &shape));
  ck_assert(shape.dtype == PLM_DTYPE_F32 && shape.ndim == 2 && shape.dims[0] == 3 &&
            shape.dims[1] == 7);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_lstm_cell_cost(&x, &h, &bias, &bias, &cost));
  ck_assert(cost.bytes == 4.0 * (15 + 42 + 28 * 5 + 28 * 7 + 56 + 42));
  ck_assert(cost.flops == 2.0 * 3 * 28 * 12 + 2 * 3 * 28 + 9 * 21);
  PLM_CHECK_OK(plm_lstm_cell_cost(&x, &h, NULL, NULL, &cost));
  ck_assert(cost.bytes == 4.0 * (15 + 42 + 28 * 5 + 28 * 7 + 42));
  ck_assert(cost.flops == 2.0 * 3 * 28 * 12 + 9 * 21);
  PLM_CHECK_FAILS(plm_lstm_cell_cost(&x, &h, &x, NULL, &cost), PLM_ERR_INVALID_ARG,
                  "b_ih is 3x5, not 28 (B 3, I 5, H 7)");
  const int64_t other[2] = {4, 7};
  plm_tensor h4;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, other, &h4));
  PLM_CHECK_FAILS(plm_lstm_cell_output(&x, &h4, &shape), PLM_ERR_INVALID_ARG,
                  "h->dims[0] is 4, expected 3");
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t B = 2, I = 3, H = 4;
  const int64_t x_dims[2] = {B, I}, s_dims[2] = {B, H}, wi_dims[2] = {4 * H, I};
  const int64_t wh_dims[2] = {4 * H, H}, g_dims[1] = {4 * H}, bad_dims[2] = {B, H + 1};
  plm_tensor x, h, c, wi, wh, bi, bh, oh, oc, bad;
  struct {
    plm_tensor *t;
    int ndim;
    const int64_t *dims;
  } make[] = {{&x, 2, x_dims},   {&h, 2, s_dims},    {&c, 2, s_dims},  {&wi, 2, wi_dims},
              {&wh, 2, wh_dims}, {&bi, 1, g_dims},   {&bh, 1, g_dims}, {&oh, 2, s_dims},
              {&oc, 2, s_dims},  {&bad, 2, bad_dims}};
  for (size_t i = 0; i < sizeof make / sizeof make[0]; i++)
    PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, make[i].ndim,
                                  make[i].dims, make[i].t));
  plm_stream *s = plm_test_stream;
  PLM_CHECK_FAILS(plm_lstm_cell(NULL, &x, &h, &c, &wi, &wh, &bi, &bh, &oh, &oc),
                  PLM_ERR_INVALID_ARG, "plm_lstm_cell: stream is NULL");
  PLM_CHECK_FAILS(plm_lstm_cell(s, NULL, &h, &c, &wi, &wh, &bi, &bh, &oh, &oc), PLM_ERR_INVALID_ARG,
                  "plm_lstm_cell: x is NULL");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, NULL, &wi, &wh, &bi, &bh, &oh, &oc), PLM_ERR_INVALID_ARG,
                  "c is NULL");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, NULL, &wh, &bi, &bh, &oh, &oc), PLM_ERR_INVALID_ARG,
                  "w_ih is NULL");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wh, &bi, &bh, NULL, &oc), PLM_ERR_INVALID_ARG,
                  "out_h is NULL");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wh, &bi, &bh, &oh, NULL), PLM_ERR_INVALID_ARG,
                  "out_c is NULL");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &bad, &c, &wi, &wh, &bi, &bh, &oh, &oc), PLM_ERR_INVALID_ARG,
                  "c is 2x4, not 2x5 (B 2, I 3, H 5)");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &bad, &wi, &wh, &bi, &bh, &oh, &oc), PLM_ERR_INVALID_ARG,
                  "c is 2x5, not 2x4 (B 2, I 3, H 4)");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wh, &wh, &bi, &bh, &oh, &oc), PLM_ERR_INVALID_ARG,
                  "w_ih is 16x4, not 16x3");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wi, &bi, &bh, &oh, &oc), PLM_ERR_INVALID_ARG,
                  "w_hh is 16x3, not 16x4");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wh, &h, &bh, &oh, &oc), PLM_ERR_INVALID_ARG,
                  "b_ih is 2x4, not 16");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wh, &bi, &bad, &oh, &oc), PLM_ERR_INVALID_ARG,
                  "b_hh is 2x5, not 16");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wh, &bi, &bh, &bad, &oc), PLM_ERR_INVALID_ARG,
                  "out_h is 2x5, not 2x4");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wh, &bi, &bh, &oh, &bad), PLM_ERR_INVALID_ARG,
                  "out_c is 2x5, not 2x4");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wh, &bi, &bh, &h, &oc), PLM_ERR_INVALID_ARG,
                  "out_h overlaps h");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wh, &bi, &bh, &oh, &oh), PLM_ERR_INVALID_ARG,
                  "out_c overlaps out_h");
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wh, &bi, &bh, &oh, &h), PLM_ERR_INVALID_ARG,
                  "out_c overlaps h");
  plm_tensor shifted_c = c;
  shifted_c.data = (char *)c.data + 4;
  plm_tensor shifted_out = oc;
  shifted_out.data = shifted_c.data;
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wh, &bi, &bh, &oh, &shifted_out),
                  PLM_ERR_INVALID_ARG, "out_c overlaps c without being the same memory");
  plm_tensor as_i32 = x;
  as_i32.dtype = PLM_DTYPE_I32;
  PLM_CHECK_FAILS(plm_lstm_cell(s, &as_i32, &h, &c, &wi, &wh, &bi, &bh, &oh, &oc),
                  PLM_ERR_INVALID_ARG, "x->dtype i32 is not f32");
  plm_tensor strided = wi;
  strided.strides[0] = 8;
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &strided, &wh, &bi, &bh, &oh, &oc),
                  PLM_ERR_UNSUPPORTED, "w_ih is not contiguous");
  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_tensor foreign = bh;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_lstm_cell(s, &x, &h, &c, &wi, &wh, &bi, &foreign, &oh, &oc),
                  PLM_ERR_INVALID_ARG, "b_hh belongs to another context than stream");
  PLM_CHECK_OK(plm_context_destroy(other));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  for (size_t i = 0; i < sizeof make / sizeof make[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, make[i].t));
}
END_TEST

/* The update's arithmetic-only e^x, σ and tanh (kernels/common/activation.h, both
 * backends' code; the dendrites use them too) on a spread of f32 values against double:
 * e^x within 1e-7 relatively on [-87, 88], σ and tanh within 1e-7 absolutely everywhere;
 * the extremes and NaN. */
START_TEST(test_update_nonlinearities_match_double) {
  double worst_exp = 0, worst_sigmoid = 0, worst_tanh = 0;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 4093) {
    const uint32_t bits = (uint32_t)u;
    float x;
    memcpy(&x, &bits, sizeof x);
    if (isnan(x)) continue;
    const double xd = x;
    if (xd >= -87.0 && xd <= 88.0) {
      double e = fabs(plm__fast_expf(x) - exp(xd)) / exp(xd);
      if (!(e <= worst_exp)) worst_exp = e;
    }
    double es = fabs(plm__fast_sigmoidf(x) - 1.0 / (1.0 + exp(-xd)));
    double et = fabs(plm__fast_tanhf(x) - tanh(xd));
    if (!(es <= worst_sigmoid)) worst_sigmoid = es;
    if (!(et <= worst_tanh)) worst_tanh = et;
  }
  ck_assert_msg(worst_exp <= 1e-7 && worst_sigmoid <= 1e-7 && worst_tanh <= 1e-7,
                "e^x %.3g (relative), sigmoid %.3g, tanh %.3g", worst_exp, worst_sigmoid,
                worst_tanh);
  ck_assert(plm__fast_sigmoidf(INFINITY) == 1.0f && plm__fast_sigmoidf(-INFINITY) <= 1e-38f);
  ck_assert(plm__fast_tanhf(INFINITY) == 1.0f && plm__fast_tanhf(-INFINITY) == -1.0f);
  ck_assert(isnan(plm__fast_expf(NAN)) && isnan(plm__fast_sigmoidf(NAN)) &&
            isnan(plm__fast_tanhf(NAN)));
}
END_TEST

START_TEST(test_gate_scratch_follows_the_path) {
  const int64_t gemm = gemm_min_batch();
  ck_assert_uint_eq(gate_scratch(gemm - 1, 64, 128), 0);
  ck_assert_uint_eq(gate_scratch(1, 5, 3), 0);
  ck_assert_uint_eq(gate_scratch(gemm, 64, 128), (size_t)gemm * 4 * 128 * sizeof(float));
  ck_assert_uint_eq(gate_scratch(gemm + 5, 7, 3), (size_t)(gemm + 5) * 4 * 3 * sizeof(float));
  plm_tensor t[5];
  const plm__op_call good = described_call(gemm, 5, 3, t);
  const plm_tensor h2 = description(gemm + 1, 3);
  const plm__op_desc *op = &plm__op_lstm_cell;
  size_t bytes = 0;
  PLM_CHECK_FAILS(plm__op_scratch_bytes(op, NULL, &good, &bytes), PLM_ERR_INVALID_ARG,
                  "ctx is NULL");
  PLM_CHECK_FAILS(plm__op_scratch_bytes(op, plm_test_ctx, &good, NULL), PLM_ERR_INVALID_ARG,
                  "bytes is NULL");
  static const char *const required[] = {"x is NULL", "h is NULL", "c is NULL", "w_ih is NULL",
                                         "w_hh is NULL"};
  for (int k = 0; k < 5; k++) {
    plm__op_call call = good;
    call.in[k] = NULL;
    PLM_CHECK_FAILS(plm__op_scratch_bytes(op, plm_test_ctx, &call, &bytes), PLM_ERR_INVALID_ARG,
                    required[k]);
  }
  plm__op_call call = good;
  call.in[1] = &h2;
  PLM_CHECK_FAILS(plm__op_scratch_bytes(op, plm_test_ctx, &call, &bytes), PLM_ERR_INVALID_ARG,
                  "h->dims[0] is");
}
END_TEST

/* The operands of one step at (batch, in, hid), with biases, on the test's stream. */
typedef struct step_operands {
  plm_tensor x, h, c, w_ih, w_hh, b_ih, b_hh, out_h, out_c;
  float *host[7];
} step_operands;

static step_operands make_operands(int64_t batch, int64_t in, int64_t hid, uint64_t seed) {
  step_operands o;
  const double w_range = 1.0 / sqrt((double)hid);
  const int64_t x_dims[2] = {batch, in}, s_dims[2] = {batch, hid};
  const int64_t wi_dims[2] = {4 * hid, in}, wh_dims[2] = {4 * hid, hid}, g_dims[1] = {4 * hid};
  o.host[0] = plm_test_uniform_f32(batch * in, 1.0, seed);
  o.host[1] = plm_test_uniform_f32(batch * hid, 1.0, seed + 1);
  o.host[2] = plm_test_uniform_f32(batch * hid, 2.0, seed + 2);
  o.host[3] = plm_test_uniform_f32(4 * hid * in, w_range, seed + 3);
  o.host[4] = plm_test_uniform_f32(4 * hid * hid, w_range, seed + 4);
  o.host[5] = plm_test_uniform_f32(4 * hid, w_range, seed + 5);
  o.host[6] = plm_test_uniform_f32(4 * hid, w_range, seed + 6);
  o.x = plm_test_upload(PLM_DTYPE_F32, 2, x_dims, o.host[0]);
  o.h = plm_test_upload(PLM_DTYPE_F32, 2, s_dims, o.host[1]);
  o.c = plm_test_upload(PLM_DTYPE_F32, 2, s_dims, o.host[2]);
  o.w_ih = plm_test_upload(PLM_DTYPE_F32, 2, wi_dims, o.host[3]);
  o.w_hh = plm_test_upload(PLM_DTYPE_F32, 2, wh_dims, o.host[4]);
  o.b_ih = plm_test_upload(PLM_DTYPE_F32, 1, g_dims, o.host[5]);
  o.b_hh = plm_test_upload(PLM_DTYPE_F32, 1, g_dims, o.host[6]);
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, s_dims, &o.out_h));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, s_dims, &o.out_c));
  return o;
}

/* lstm_cell's call on o's operands, and the op with the caller's scratch. */
static plm__op_call step_call(step_operands *o) {
  return (plm__op_call){.in = {&o->x, &o->h, &o->c, &o->w_ih, &o->w_hh, &o->b_ih, &o->b_hh},
                        .out = {&o->out_h, &o->out_c}};
}

static plm_status cell_with_scratch(plm_stream *stream, const plm__op_call *call, void *scratch,
                                    size_t scratch_bytes) {
  return plm__op_call_with_scratch(&plm__op_lstm_cell, stream, call, scratch, scratch_bytes);
}

static void free_operands(step_operands *o) {
  plm_tensor *all[] = {&o->x,    &o->h,    &o->c,     &o->w_ih, &o->w_hh,
                       &o->b_ih, &o->b_hh, &o->out_h, &o->out_c};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
  for (int i = 0; i < 7; i++) free(o->host[i]);
}

/* t's values on the host (malloc'd). */
static float *fetch(const plm_tensor *t) {
  float *host = malloc(plm_tensor_bytes(t));
  ck_assert_ptr_nonnull(host);
  download(host, t);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  return host;
}

/* lstm_cell with the caller's scratch gives the public op's bytes (the same
 * path), on both paths; bad scratch is refused and nothing is enqueued. */
START_TEST(test_enqueue_uses_the_given_scratch_and_refuses_bad_scratch) {
  const int64_t batches[2] = {gemm_min_batch() - 1, gemm_min_batch() + 3};
  for (int k = 0; k < 2; k++) {
    const int64_t batch = batches[k], in = 9, hid = 11;
    step_operands o = make_operands(batch, in, hid, 77 + (uint64_t)k);
    const size_t needed = gate_scratch(batch, in, hid);
    ck_assert_uint_eq(needed > 0, k == 1);
    void *scratch = NULL;
    PLM_CHECK_OK(plm_pool_alloc(plm_test_pool, needed + 256, plm_test_stream, &scratch));
    PLM_CHECK_OK(plm_lstm_cell(plm_test_stream, &o.x, &o.h, &o.c, &o.w_ih, &o.w_hh, &o.b_ih,
                               &o.b_hh, &o.out_h, &o.out_c));
    float *want_h = fetch(&o.out_h), *want_c = fetch(&o.out_c);
    PLM_CHECK_OK(plm_stream_memset(plm_test_stream, o.out_h.data, 0, plm_tensor_bytes(&o.out_h)));
    PLM_CHECK_OK(plm_stream_memset(plm_test_stream, o.out_c.data, 0, plm_tensor_bytes(&o.out_c)));
    /* Per unit, no scratch is needed: NULL and 0 bytes are fine. */
    const plm__op_call call = step_call(&o);
    PLM_CHECK_OK(cell_with_scratch(plm_test_stream, &call, needed ? scratch : NULL, needed));
    float *got_h = fetch(&o.out_h), *got_c = fetch(&o.out_c);
    const size_t state_bytes = (size_t)(batch * hid) * sizeof(float);
    ck_assert_msg(memcmp(got_h, want_h, state_bytes) == 0, "batch %lld: out_h differs",
                  (long long)batch);
    ck_assert_msg(memcmp(got_c, want_c, state_bytes) == 0, "batch %lld: out_c differs",
                  (long long)batch);
    free(got_h);
    free(got_c);
    if (needed) {
      /* Each failure leaves out_h and out_c as they are (zero): nothing was enqueued. */
      PLM_CHECK_OK(plm_stream_memset(plm_test_stream, o.out_h.data, 0, state_bytes));
      PLM_CHECK_OK(plm_stream_memset(plm_test_stream, o.out_c.data, 0, state_bytes));
      plm_stream *s = plm_test_stream;
      PLM_CHECK_FAILS(cell_with_scratch(s, &call, scratch, needed - 1), PLM_ERR_INVALID_ARG,
                      "is less than the");
      PLM_CHECK_FAILS(cell_with_scratch(s, &call, NULL, needed), PLM_ERR_INVALID_ARG,
                      "scratch is NULL but lstm_cell needs");
      PLM_CHECK_FAILS(cell_with_scratch(s, &call, (char *)scratch + 4, needed), PLM_ERR_INVALID_ARG,
                      "-byte aligned");
      PLM_CHECK_FAILS(cell_with_scratch(s, &call, o.x.data, needed), PLM_ERR_INVALID_ARG,
                      "scratch overlaps x");
      /* An output overlapping the scratch, and no other operand: out_c moved to a block
       * of a pool of its own (where the default pool puts blocks next to each other is
       * not part of its contract, so scratch at o.out_c.data may overlap others too). */
      plm_pool *own = NULL;
      plm_tensor lone_out_c = o.out_c;
      PLM_CHECK_OK(plm_pool_create(plm_test_ctx, NULL, &own));
      PLM_CHECK_OK(plm_pool_alloc(own, needed, s, &lone_out_c.data));
      plm__op_call lone = call;
      lone.out[1] = &lone_out_c;
      PLM_CHECK_FAILS(cell_with_scratch(s, &lone, lone_out_c.data, needed), PLM_ERR_INVALID_ARG,
                      "scratch overlaps out_c");
      PLM_CHECK_OK(plm_pool_free(own, lone_out_c.data, s));
      PLM_CHECK_OK(plm_pool_destroy(own));
      PLM_CHECK_FAILS(cell_with_scratch(NULL, &call, scratch, needed), PLM_ERR_INVALID_ARG,
                      "stream is NULL");
      plm__op_call onto_h = call;
      onto_h.out[0] = &o.h;
      PLM_CHECK_FAILS(cell_with_scratch(s, &onto_h, scratch, needed), PLM_ERR_INVALID_ARG,
                      "out_h overlaps h");
      float *after_h = fetch(&o.out_h), *after_c = fetch(&o.out_c);
      for (int64_t i = 0; i < batch * hid; i++)
        ck_assert_msg(after_h[i] == 0.0f && after_c[i] == 0.0f, "unit %lld was written",
                      (long long)i);
      free(after_h);
      free(after_c);
    }
    PLM_CHECK_OK(plm_pool_free(plm_test_pool, scratch, plm_test_stream));
    free(want_h);
    free(want_c);
    free_operands(&o);
  }
}
END_TEST

/* A pipeline with an lstm_cell step on the GEMM path: the plan gives the step the gates'
 * scratch in the workspace, the outputs are the eager op's bytes, and frames make no
 * pool allocation. */
START_TEST(test_pipeline_step_takes_its_scratch_from_the_workspace) {
  const int64_t batch = gemm_min_batch() + 2, in = 10, hid = 7;
  step_operands o = make_operands(batch, in, hid, 4242);
  const int64_t x_dims[2] = {batch, in}, s_dims[2] = {batch, hid};
  const int64_t wi_dims[2] = {4 * hid, in}, wh_dims[2] = {4 * hid, hid}, g_dims[1] = {4 * hid};
  plm_pipeline *pl = NULL;
  plm_pipe_tensor px, ph, pc, pwi, pwh, pbi, pbh, out_h, out_c;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, x_dims, &px));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, s_dims, &ph));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, s_dims, &pc));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, wi_dims, o.host[3], &pwi));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, wh_dims, o.host[4], &pwh));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 1, g_dims, o.host[5], &pbi));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 1, g_dims, o.host[6], &pbh));
  PLM_CHECK_OK(plm_pipeline_add_lstm_cell(pl, px, ph, pc, pwi, pwh, pbi, pbh, &out_h, &out_c));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out_h));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out_c));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  const size_t needed = gate_scratch(batch, in, hid);
  ck_assert_uint_gt(needed, 0);
  ck_assert_uint_eq(info.scratch_bytes, (needed + 255) / 256 * 256);
  ck_assert_uint_ge(info.workspace_bytes, needed);

  PLM_CHECK_OK(plm_lstm_cell(plm_test_stream, &o.x, &o.h, &o.c, &o.w_ih, &o.w_hh, &o.b_ih, &o.b_hh,
                             &o.out_h, &o.out_c));
  float *want_h = fetch(&o.out_h), *want_c = fetch(&o.out_c);
  const plm_tensor inputs[3] = {o.x, o.h, o.c};
  plm_tensor outputs[2] = {o.out_h, o.out_c};
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, o.out_h.data, 0, plm_tensor_bytes(&o.out_h)));
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, o.out_c.data, 0, plm_tensor_bytes(&o.out_c)));
  PLM_CHECK_OK(plm_pipeline_run(pl, inputs, outputs, plm_test_stream));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_pool_stats before, after;
  PLM_CHECK_OK(plm_pool_stats_get(plm_test_pool, &before));
  for (int f = 0; f < 3; f++) PLM_CHECK_OK(plm_pipeline_run(pl, inputs, outputs, plm_test_stream));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_pool_stats_get(plm_test_pool, &after));
  ck_assert_msg(after.requests == before.requests, "%llu pool allocations in 3 frames",
                (unsigned long long)(after.requests - before.requests));
  float *got_h = fetch(&o.out_h), *got_c = fetch(&o.out_c);
  const size_t state_bytes = (size_t)(batch * hid) * sizeof(float);
  ck_assert(memcmp(got_h, want_h, state_bytes) == 0);
  ck_assert(memcmp(got_c, want_c, state_bytes) == 0);
  free(got_h);
  free(got_c);
  free(want_h);
  free(want_c);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free_operands(&o);
}
END_TEST

static Suite *lstm_suite(void) {
  Suite *suite = suite_create("lstm");
  TCase *tcase = tcase_create("lstm");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 60);
  tcase_add_test(tcase, test_matches_torch_lstm_cell_for_the_seeds_sizes_and_odd_ones);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  tcase_add_test(tcase, test_update_nonlinearities_match_double);
  tcase_add_test(tcase, test_gate_scratch_follows_the_path);
  tcase_add_test(tcase, test_enqueue_uses_the_given_scratch_and_refuses_bad_scratch);
  tcase_add_test(tcase, test_pipeline_step_takes_its_scratch_from_the_workspace);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(lstm_suite);
}

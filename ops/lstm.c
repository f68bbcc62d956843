/* ops/lstm.c: the lstm_cell operation (plume/lstm.h): the public op, whose gates' scratch
 * (the GEMM path) comes from the context's default pool, and the internal scratch pair
 * (ops/op_scratch.h). */
#include "kernels/common/lstm.h"
#include "ops/op_internal.h"
#include "ops/op_scratch.h"
#include "streams/error.h"

/* t is f32 with `ndim` dims equal to dims[] (a NULL t passes: an absent bias). */
static plm_status check_f32_shape(const plm_tensor *t, const char *name, int ndim,
                                  const int64_t *dims) {
  if (!t) return PLM_OK;
  plm_status status = plm__op_check_f32(t, name, ndim);
  if (status != PLM_OK) return status;
  for (int d = 0; d < ndim; d++)
    if (t->dims[d] != dims[d])
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->dims[%d] is %lld, expected %lld", name, d,
                           (long long)t->dims[d], (long long)dims[d]);
  return PLM_OK;
}

/* x (B, I) and h (B, H): f32, 2-D, the same B. */
static plm_status check_x_and_h(const plm_tensor *x, const plm_tensor *h) {
  if (x->dtype != PLM_DTYPE_F32 || x->ndim != 2)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "x is not a 2-D f32 tensor (dtype %s, ndim %d)",
                         plm_dtype_name(x->dtype), x->ndim);
  const int64_t h_dims[2] = {x->dims[0], h->ndim == 2 ? h->dims[1] : 1};
  return check_f32_shape(h, "h", 2, h_dims);
}

static plm_status check_biases(const plm_tensor *b_ih, const plm_tensor *b_hh, int64_t hidden) {
  const int64_t gates = 4 * hidden;
  plm_status status = check_f32_shape(b_ih, "b_ih", 1, &gates);
  if (status == PLM_OK) status = check_f32_shape(b_hh, "b_hh", 1, &gates);
  return status;
}

plm_status plm_lstm_cell_output(const plm_tensor *x, const plm_tensor *h, plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(x);
  PLM__REQUIRE_NOT_NULL(h);
  PLM__REQUIRE_NOT_NULL(out);
  plm_status status = plm__op_check_shape(x, "x");
  if (status == PLM_OK) status = plm__op_check_shape(h, "h");
  if (status == PLM_OK) status = check_x_and_h(x, h);
  if (status != PLM_OK) return plm__propagate(status);
  *out = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {h->dims[0], h->dims[1]}};
  return PLM_OK;
}

plm_status plm_lstm_cell_cost(const plm_tensor *x, const plm_tensor *h, const plm_tensor *b_ih,
                              const plm_tensor *b_hh, plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(x);
  PLM__REQUIRE_NOT_NULL(h);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = plm__op_check_shape(x, "x");
  if (status == PLM_OK) status = plm__op_check_shape(h, "h");
  if (status == PLM_OK) status = check_x_and_h(x, h);
  if (status == PLM_OK && b_ih) status = plm__op_check_shape(b_ih, "b_ih");
  if (status == PLM_OK && b_hh) status = plm__op_check_shape(b_hh, "b_hh");
  if (status == PLM_OK) status = check_biases(b_ih, b_hh, h->dims[1]);
  if (status != PLM_OK) return plm__propagate(status);
  const double b = (double)x->dims[0], in = (double)x->dims[1], hid = (double)h->dims[1];
  const double biases = (b_ih ? 1.0 : 0.0) + (b_hh ? 1.0 : 0.0);
  *cost =
      (plm_op_cost){.bytes = 4.0 * (b * in + 2 * b * hid + 4 * hid * in + 4 * hid * hid +
                                    biases * 4 * hid + 2 * b * hid),
                    .flops = 2.0 * b * 4 * hid * (in + hid) + biases * b * 4 * hid + 9.0 * b * hid};
  return PLM_OK;
}

static void lstm_task(const void *args) {
  plm__lstm_cpu(args);
}

/* The gates' scratch (kernels/common/lstm.h: 0 where the per-unit path runs). */
static size_t scratch_bytes_of(const plm_context *ctx, int64_t batch, int64_t hidden) {
  return plm__lstm_scratch_bytes(ctx->backend->kind == PLM_BACKEND_CUDA, batch, hidden);
}

plm_status plm__lstm_cell_scratch_bytes(const plm_context *ctx, const plm_tensor *x,
                                        const plm_tensor *h, size_t *bytes) {
  if (!ctx) return plm__fail_raw(PLM_ERR_INVALID_ARG, "ctx is NULL");
  if (!bytes) return plm__fail_raw(PLM_ERR_INVALID_ARG, "bytes is NULL");
  if (!x) return plm__fail_raw(PLM_ERR_INVALID_ARG, "x is NULL");
  if (!h) return plm__fail_raw(PLM_ERR_INVALID_ARG, "h is NULL");
  plm_status status = plm__op_check_shape(x, "x");
  if (status == PLM_OK) status = plm__op_check_shape(h, "h");
  if (status == PLM_OK) status = check_x_and_h(x, h);
  if (status != PLM_OK) return status;
  *bytes = scratch_bytes_of(ctx, x->dims[0], h->dims[1]);
  return PLM_OK;
}

/* The operands in the public op's order, as the messages name them. */
enum { OPERANDS = 9 };
static const char *const names[OPERANDS] = {"x",    "h",    "c",     "w_ih", "w_hh",
                                            "b_ih", "b_hh", "out_h", "out_c"};

/* What plm_lstm_cell checks; on success *args is the launch's (gates unset). */
static plm_status check_call(plm_stream *stream, const plm_tensor *const tensors[OPERANDS],
                             plm__lstm_args *args) {
  const plm_tensor *x = tensors[0], *h = tensors[1], *c = tensors[2];
  const plm_tensor *w_ih = tensors[3], *w_hh = tensors[4], *b_ih = tensors[5], *b_hh = tensors[6];
  const plm_tensor *out_h = tensors[7], *out_c = tensors[8];
  if (!stream) return plm__fail_raw(PLM_ERR_INVALID_ARG, "stream is NULL");
  plm_status status = PLM_OK;
  for (int t = 0; t < OPERANDS && status == PLM_OK; t++)
    if (tensors[t] || (t != 5 && t != 6))
      status = plm__op_check_tensor(stream, tensors[t], names[t]);
  if (status == PLM_OK) status = check_x_and_h(x, h);
  if (status == PLM_OK) {
    const int64_t batch = x->dims[0], in = x->dims[1], hid = h->dims[1];
    const int64_t state[2] = {batch, hid}, wi[2] = {4 * hid, in}, wh[2] = {4 * hid, hid};
    status = check_f32_shape(c, "c", 2, state);
    if (status == PLM_OK) status = check_f32_shape(w_ih, "w_ih", 2, wi);
    if (status == PLM_OK) status = check_f32_shape(w_hh, "w_hh", 2, wh);
    if (status == PLM_OK) status = check_biases(b_ih, b_hh, hid);
    if (status == PLM_OK) status = check_f32_shape(out_h, "out_h", 2, state);
    if (status == PLM_OK) status = check_f32_shape(out_c, "out_c", 2, state);
  }
  /* out_h overlaps nothing; out_c nothing but, exactly, c. */
  for (int t = 0; t < OPERANDS && status == PLM_OK; t++)
    if (tensors[t] && t != 7) status = plm__op_check_disjoint(tensors[t], names[t], out_h, "out_h");
  for (int t = 0; t < 7 && status == PLM_OK; t++)
    if (tensors[t] && t != 2) status = plm__op_check_disjoint(tensors[t], names[t], out_c, "out_c");
  if (status == PLM_OK) status = plm__op_check_no_partial_overlap(c, "c", out_c, "out_c");
  if (status != PLM_OK) return status;
  *args = (plm__lstm_args){.x = x->data,
                           .h = h->data,
                           .c = c->data,
                           .w_ih = w_ih->data,
                           .w_hh = w_hh->data,
                           .b_ih = b_ih ? b_ih->data : NULL,
                           .b_hh = b_hh ? b_hh->data : NULL,
                           .out_h = out_h->data,
                           .out_c = out_c->data,
                           .batch = x->dims[0],
                           .input = x->dims[1],
                           .hidden = h->dims[1]};
  return PLM_OK;
}

/* Enqueue the kernels of checked arguments, with their gates set where the GEMM path
 * runs. */
static plm_status launch(plm_stream *stream, const plm__lstm_args *args) {
  plm_status status = PLM_OK;
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    PLM__OP_ON_DEVICE(stream, "lstm_cell", status, plm__lstm_cuda(stream->handle, args));
    return status;
  }
#endif
  status = plm__op_launch_cpu(stream, lstm_task, args, sizeof *args);
  return status;
}

plm_status plm__lstm_cell_enqueue(plm_stream *stream, const plm_tensor *x, const plm_tensor *h,
                                  const plm_tensor *c, const plm_tensor *w_ih,
                                  const plm_tensor *w_hh, const plm_tensor *b_ih,
                                  const plm_tensor *b_hh, plm_tensor *out_h, plm_tensor *out_c,
                                  void *scratch, size_t scratch_bytes) {
  const plm_tensor *const tensors[OPERANDS] = {x, h, c, w_ih, w_hh, b_ih, b_hh, out_h, out_c};
  plm__lstm_args args;
  plm_status status = check_call(stream, tensors, &args);
  if (status != PLM_OK) return status;
  const size_t needed = scratch_bytes_of(stream->ctx, args.batch, args.hidden);
  status =
      plm__op_check_scratch("lstm_cell", scratch, scratch_bytes, needed, tensors, names, OPERANDS);
  if (status != PLM_OK) return status;
  args.gates = needed ? scratch : NULL;
  return launch(stream, &args);
}

plm_status plm_lstm_cell(plm_stream *stream, const plm_tensor *x, const plm_tensor *h,
                         const plm_tensor *c, const plm_tensor *w_ih, const plm_tensor *w_hh,
                         const plm_tensor *b_ih, const plm_tensor *b_hh, plm_tensor *out_h,
                         plm_tensor *out_c) {
  PLM__REQUIRE_NOT_NULL(stream);
  const plm_tensor *const tensors[OPERANDS] = {x, h, c, w_ih, w_hh, b_ih, b_hh, out_h, out_c};
  plm__lstm_args args;
  plm_pool *pool = NULL;
  void *scratch = NULL;
  plm_status status = check_call(stream, tensors, &args);
  if (status == PLM_OK)
    status = plm__op_scratch_take(stream, scratch_bytes_of(stream->ctx, args.batch, args.hidden),
                                  &pool, &scratch);
  if (status != PLM_OK) return plm__propagate(status);
  args.gates = scratch;
  status = launch(stream, &args);
  return plm__propagate(plm__op_scratch_give(stream, pool, scratch, status));
}

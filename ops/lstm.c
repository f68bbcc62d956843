/* ops/lstm.c: the lstm_cell operation (plume/lstm.h) and its descriptor: its gates are
 * the scratch where the GEMM path runs. */

#include "kernels/common/lstm.h"
#include "ops/op_desc.h"
#include "ops/op_tuning.h"
#include "ops/op_internal.h"
#include "streams/error.h"

/* t is of the shape dims[] (rank `ndim`) that x (B, I) and h (B, H) imply; a NULL t
 * passes (an absent operand). "c is 5x12, not 5x6 (B 5, I 12, H 6)". */
static plm_status check_operand(const plm_tensor *t, const char *name, int ndim,
                                const int64_t *dims, const plm_tensor *x, const plm_tensor *h) {
  if (!t) return PLM_OK;
  if (plm__dims_equal(t->dims, t->ndim, dims, ndim)) return PLM_OK;
  char got[96], want[96];
  plm__dims_text(t->dims, t->ndim, got, sizeof got);
  plm__dims_text(dims, ndim, want, sizeof want);
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is %s, not %s (B %lld, I %lld, H %lld)", name, got,
                       want, (long long)x->dims[0], (long long)x->dims[1], (long long)h->dims[1]);
}

/* t is f32 with `ndim` dims equal to dims[]. */
static plm_status check_f32_shape(const plm_tensor *t, const char *name, int ndim,
                                  const int64_t *dims) {
  plm_status status = plm__op_check_f32(t, name, ndim);
  if (status != PLM_OK) return status;
  for (int d = 0; d < ndim; d++)
    if (t->dims[d] != dims[d])
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->dims[%d] is %lld, expected %lld", name, d,
                           (long long)t->dims[d], (long long)dims[d]);
  return PLM_OK;
}

/* x (B, I) and h (B, H): 2-D, the same B. */
static plm_status check_x_and_h(const plm_tensor *x, const plm_tensor *h) {
  if (x->ndim != 2)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "x is not a 2-D tensor (ndim %d)", x->ndim);
  const int64_t h_dims[2] = {x->dims[0], h->ndim == 2 ? h->dims[1] : 1};
  return check_f32_shape(h, "h", 2, h_dims);
}

static plm_status check(const plm__op_call *call) {
  const plm_tensor *x = call->in[0], *h = call->in[1];
  plm_status status = check_x_and_h(x, h);
  if (status != PLM_OK) return status;
  const int64_t batch = x->dims[0], in = x->dims[1], hid = h->dims[1];
  const int64_t state[2] = {batch, hid}, wi[2] = {4 * hid, in}, wh[2] = {4 * hid, hid};
  const int64_t gates[1] = {4 * hid};
  const plm_tensor *const operands[7] = {call->in[2], call->in[3],  call->in[4], call->in[5],
                                         call->in[6], call->out[0], call->out[1]};
  static const char *const names[7] = {"c", "w_ih", "w_hh", "b_ih", "b_hh", "out_h", "out_c"};
  const int64_t *const dims[7] = {state, wi, wh, gates, gates, state, state};
  static const int ranks[7] = {2, 2, 2, 1, 1, 2, 2};
  for (int k = 0; k < 7 && status == PLM_OK; k++)
    status = check_operand(operands[k], names[k], ranks[k], dims[k], x, h);
  return status;
}

static plm_status shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  const plm_tensor *h = call->in[1];
  out[0] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {h->dims[0], h->dims[1]}};
  out[1] = out[0];
  return PLM_OK;
}

static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *x = call->in[0], *h = call->in[1];
  const double b = (double)x->dims[0], in = (double)x->dims[1], hid = (double)h->dims[1];
  const double biases = (call->in[5] ? 1.0 : 0.0) + (call->in[6] ? 1.0 : 0.0);
  *cost =
      (plm_op_cost){.bytes = 4.0 * (b * in + 2 * b * hid + 4 * hid * in + 4 * hid * hid +
                                    biases * 4 * hid + 2 * b * hid),
                    .flops = 2.0 * b * 4 * hid * (in + hid) + biases * b * 4 * hid + 9.0 * b * hid};
}

static const void *data_of(const plm_tensor *t) {
  return t ? t->data : NULL;
}

/* Where the GEMM path starts on each backend (kernels/common/lstm.h): its tunables. */
enum { TUNE_HOST_GEMM, TUNE_CUDA_GEMM };
static const plm__op_tunable tunables[] = {
    PLM__GEMM_MIN_BATCH_TUNABLES(PLM__LSTM_CPU_GEMM_MIN_BATCH, PLM__LSTM_CUDA_GEMM_MIN_BATCH,
                                 "the gates are two GEMMs (else per unit)")};

/* The gates are the scratch, where the GEMM path runs (x->data may be NULL: a description,
 * for the scratch size). */
static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *out_args) {
  const plm_tensor *x = call->in[0], *h = call->in[1];
  plm__lstm_args *args = out_args;
  *args = (plm__lstm_args){.x = x->data,
                           .h = h->data,
                           .c = data_of(call->in[2]),
                           .w_ih = data_of(call->in[3]),
                           .w_hh = data_of(call->in[4]),
                           .b_ih = data_of(call->in[5]),
                           .b_hh = data_of(call->in[6]),
                           .out_h = call->out[0] ? call->out[0]->data : NULL,
                           .out_c = call->out[1] ? call->out[1]->data : NULL,
                           .batch = x->dims[0],
                           .input = x->dims[1],
                           .hidden = h->dims[1]};
  const bool on_cuda = plm__op_ctx_on_cuda(ctx);
  args->gemm_min_batch =
      plm__op_tuned(&plm__op_lstm_cell, call, on_cuda ? TUNE_CUDA_GEMM : TUNE_HOST_GEMM);
  const bool gemm =
      plm__lstm_scratch_bytes(on_cuda, args->gemm_min_batch, args->batch, args->hidden) > 0;
  args->gates = gemm ? scratch : NULL;
}

static size_t cpu_scratch(const void *args) {
  const plm__lstm_args *a = args;
  return plm__lstm_scratch_bytes(false, a->gemm_min_batch, a->batch, a->hidden);
}

PLM__OP_KERNEL_ENTRIES(lstm)

#ifdef PLM_HAVE_CUDA
static plm_status cuda_scratch(const void *args, size_t *bytes) {
  const plm__lstm_args *a = args;
  *bytes = plm__lstm_scratch_bytes(true, a->gemm_min_batch, a->batch, a->hidden);
  return PLM_OK;
}
#endif

/* One step of a batch of `size`, input 64, hidden 128 (the seeds' cell), both biases. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  enum { INPUT = 64, HIDDEN = 128 };
  const int64_t batch = request->size;
  sample->in[0] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {batch, INPUT}};
  sample->in[1] = sample->in[2] =
      (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {batch, HIDDEN}};
  sample->in[3] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {4 * HIDDEN, INPUT}};
  sample->in[4] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {4 * HIDDEN, HIDDEN}};
  sample->in[5] = sample->in[6] =
      (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 1, .dims = {4 * HIDDEN}};
  sample->outputs = 3u;
  sample->scale = "batch";
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_lstm_cell = {
    .name = "lstm_cell",
    .summary = "one LSTM step (PyTorch's LSTMCell): out_h, out_c from x, h, c and the weights",
    .details =
        "out_h and out_c, f32 (B, H): one `torch.nn.LSTMCell` step, gates i, f, g, o "
        "(`include/plume/lstm.h`).",
    .kind = PLM__OP_lstm_cell,
    .flags = PLM__OP_NAMED_OPERANDS,
    .input_count = 7,
    .inputs =
        {{.name = "x", .dtypes = PLM__DTYPE_MASK(F32), .shape = "(B, I)"},
         {.name = "h", .dtypes = PLM__DTYPE_MASK(F32), .shape = "(B, H)", .role = PLM__IN_TENSOR},
         {.name = "c", .dtypes = PLM__DTYPE_MASK(F32), .shape = "(B, H)", .role = PLM__IN_TENSOR},
         {.name = "w_ih",
          .dtypes = PLM__DTYPE_MASK(F32),
          .shape = "(4H, I)",
          .role = PLM__IN_TENSOR},
         {.name = "w_hh",
          .dtypes = PLM__DTYPE_MASK(F32),
          .shape = "(4H, H)",
          .role = PLM__IN_TENSOR},
         {.name = "b_ih",
          .dtypes = PLM__DTYPE_MASK(F32),
          .shape = "(4H,)",
          .optional = true,
          .role = PLM__IN_TENSOR},
         {.name = "b_hh",
          .dtypes = PLM__DTYPE_MASK(F32),
          .shape = "(4H,)",
          .optional = true,
          .role = PLM__IN_TENSOR}},
    .output_count = 2,
    .outputs = {{.name = "out_h",
                 .dtypes = PLM__DTYPE_MASK(F32),
                 .shape = "(B, H)",
                 .role = PLM__OUT_MAIN},
                {.name = "out_c",
                 .dtypes = PLM__DTYPE_MASK(F32),
                 .shape = "(B, H)",
                 .role = PLM__OUT_SIDE,
                 .in_place = 1u << 2}},
    .params_size = sizeof(plm__no_params),
    .check = check,
    .shapes = shapes,
    .cost = cost,
    .args_size = sizeof(plm__lstm_args),
    .pack = pack,
    .cpu_scratch = cpu_scratch,
    .cuda_scratch = PLM__CUDA_ENTRY(cuda_scratch),
    .cpu = lstm_cpu_entry,
    .cuda = PLM__CUDA_ENTRY(lstm_cuda_entry),
    .tunable_count = 2,
    .tunables = tunables,
    .sample = sample,
};

/* ---- the public and internal entries ------------------------------------------------------ */

plm_status plm_lstm_cell_output(const plm_tensor *x, const plm_tensor *h, plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(x);
  PLM__REQUIRE_NOT_NULL(h);
  PLM__REQUIRE_NOT_NULL(out);
  const plm__op_call call = {.in = {x, h}};
  plm_shape shapes[2];
  plm_status status = plm__op_shapes(&plm__op_lstm_cell, &call, shapes, NULL);
  if (status == PLM_OK) *out = shapes[0];
  return plm__propagate(status);
}

plm_status plm_lstm_cell_cost(const plm_tensor *x, const plm_tensor *h, const plm_tensor *b_ih,
                              const plm_tensor *b_hh, plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(x);
  PLM__REQUIRE_NOT_NULL(h);
  PLM__REQUIRE_NOT_NULL(cost);
  const plm__op_call call = {.in = {x, h, NULL, NULL, NULL, b_ih, b_hh}};
  return plm__propagate(plm__op_cost(&plm__op_lstm_cell, &call, cost));
}

plm_status plm_lstm_cell(plm_stream *stream, const plm_tensor *x, const plm_tensor *h,
                         const plm_tensor *c, const plm_tensor *w_ih, const plm_tensor *w_hh,
                         const plm_tensor *b_ih, const plm_tensor *b_hh, plm_tensor *out_h,
                         plm_tensor *out_c) {
  const plm__op_call call = {.in = {x, h, c, w_ih, w_hh, b_ih, b_hh}, .out = {out_h, out_c}};
  return plm__op_call_public(&plm__op_lstm_cell, stream, &call);
}

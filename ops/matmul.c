/* ops/matmul.c: the matmul operation (plume/matmul.h) and its descriptor. */
#include <stddef.h>

#include "kernels/common/matmul.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

static plm_status check_params(const plm_matmul_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  if (params->precision < PLM_PRECISION_FP32 || params->precision > PLM_PRECISION_AUTO)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->precision %d is not a plm_precision",
                         (int)params->precision);
  if (params->activation < PLM_ACTIVATION_NONE || params->activation > PLM_ACTIVATION_TANH)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->activation %d is not a plm_activation",
                         (int)params->activation);
  return PLM_OK;
}

/* The shapes of a, b and bias (NULL allowed) agree; a and b are already checked to be
 * valid tensor descriptions. */
static plm_status check_shapes(const plm_tensor *a, const plm_tensor *b, const plm_tensor *bias) {
  plm_status status = plm__op_check_f32(a, "a", 2);
  if (status == PLM_OK) status = plm__op_check_f32(b, "b", 2);
  if (status == PLM_OK && a->dims[1] != b->dims[0])
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "b has %lld rows but a has %lld columns",
                           (long long)b->dims[0], (long long)a->dims[1]);
  if (status == PLM_OK && bias) status = plm__op_check_f32(bias, "bias", 1);
  if (status == PLM_OK && bias && bias->dims[0] != b->dims[1])
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "bias has %lld elements but b has %lld columns",
                           (long long)bias->dims[0], (long long)b->dims[1]);
  return status;
}

static plm_status check(const plm__op_call *call) {
  const plm_tensor *a = call->in[0], *b = call->in[1], *bias = call->in[2], *out = call->out[0];
  plm_status status = check_params(call->params);
  if (status == PLM_OK) status = check_shapes(a, b, bias);
  if (status != PLM_OK || !out) return status;
  status = plm__op_check_f32(out, "out", 2);
  if (status == PLM_OK && (out->dims[0] != a->dims[0] || out->dims[1] != b->dims[1]))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "out is %lldx%lld, expected %lldx%lld",
                           (long long)out->dims[0], (long long)out->dims[1], (long long)a->dims[0],
                           (long long)b->dims[1]);
  return status;
}

static plm_status shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  out[0] = (plm_shape){
      .dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {call->in[0]->dims[0], call->in[1]->dims[1]}};
  return PLM_OK;
}

static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *a = call->in[0], *b = call->in[1], *bias = call->in[2];
  const plm_matmul_params *params = call->params;
  const double m = (double)a->dims[0], k = (double)a->dims[1], n = (double)b->dims[1];
  double flops = 2.0 * m * n * k;
  if (bias) flops += m * n;
  if (params->activation != PLM_ACTIVATION_NONE) flops += m * n;
  *cost = (plm_op_cost){.bytes = 4.0 * (m * k + k * n + m * n + (bias ? n : 0.0)), .flops = flops};
}

/* AUTO: tensor cores where the size pays; the host has none, so it stays exact. */
static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *out_args) {
  (void)scratch;
  const plm_tensor *a = call->in[0], *b = call->in[1], *bias = call->in[2];
  const plm_matmul_params *params = call->params;
  plm__matmul_args *args = out_args;
  *args = (plm__matmul_args){.a = a->data,
                             .b = b->data,
                             .bias = bias ? bias->data : NULL,
                             .out = call->out[0]->data,
                             .m = a->dims[0],
                             .n = b->dims[1],
                             .k = a->dims[1],
                             .precision = params->precision,
                             .activation = params->activation};
  if (args->precision == PLM_PRECISION_AUTO)
    args->precision =
        plm__op_ctx_on_cuda(ctx) && (double)args->m * (double)args->n * (double)args->k >=
                                        (double)plm__op_tuned(&plm__op_matmul, call, 0)
            ? PLM_PRECISION_TF32
            : PLM_PRECISION_FP32;
}

/* AUTO's TF32 threshold on cuda: M·N·K from which tensor cores pay (a guess until tuned). */
static const plm__op_tunable tunables[] = {
    {.name = "tf32_min_work",
     .backend = PLM_BACKEND_CUDA,
     .fallback = PLM_MATMUL_AUTO_TF32_MIN_WORK,
     .candidate_count = 5,
     .candidates = {1LL << 20, 1LL << 22, 1LL << 24, 1LL << 26, 1LL << 28},
     .help = "precision auto: M*N*K from which the product runs in TF32"}};

PLM__OP_KERNEL_ENTRIES(matmul)

/* In the enums' order. */
const char *const plm__activation_names[] = {"none", "relu", "sigmoid", "tanh", NULL};
static const char *const precision_names[] = {"fp32", "tf32", "bf16", "auto", NULL};
_Static_assert(PLM_ACTIVATION_TANH == 3 && PLM_PRECISION_AUTO == 3,
               "the choices' names follow the enums");

static const plm__op_param schema[] = {
    {.name = "act",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(plm_matmul_params, activation),
     .fallback = PLM_ACTIVATION_NONE,
     .choices = plm__activation_names,
     .help = "the activation applied to a.b + bias: none, relu, sigmoid or tanh"},
    {.name = "precision",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(plm_matmul_params, precision),
     .fallback = PLM_PRECISION_FP32,
     .choices = precision_names,
     .help = "fp32 (exact order-independent sums), tf32 or bf16 (tensor cores on cuda; "
             "rounded on host), auto (tf32 from 2^24 multiply-adds on cuda)"},
};

/* (n, n) x (n, n) + bias (n), ReLU, fp32. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  const int64_t n = request->size;
  sample->in[0] = sample->in[1] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {n, n}};
  sample->in[2] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 1, .dims = {n}};
  sample->outputs = 1u;
  sample->scale = "n";
  sample->params.matmul =
      (plm_matmul_params){.precision = PLM_PRECISION_FP32, .activation = PLM_ACTIVATION_RELU};
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_matmul = {
    .name = "matmul",
    .summary = "out = act(a . b + bias), f32 (M, K) x (K, N) -> (M, N)",
    .details =
        "f32 (M, N) `act(a @ b + bias)`; tf32/bf16 round the inputs to nearest even "
        "and sum in f32; `auto` is tf32 on cuda for large products, fp32 on the host "
        "(`include/plume/matmul.h`).",
    .kind = PLM__OP_matmul,
    .flags = PLM__OP_NAMED_OPERANDS,
    .input_count = 3,
    .inputs =
        {{.name = "a", .dtypes = PLM__DTYPE_MASK(F32), .shape = "(M, K)"},
         {.name = "b", .dtypes = PLM__DTYPE_MASK(F32), .shape = "(K, N)", .role = PLM__IN_TENSOR},
         {.name = "bias",
          .dtypes = PLM__DTYPE_MASK(F32),
          .shape = "(N,)",
          .optional = true,
          .role = PLM__IN_TENSOR}},
    .output_count = 1,
    .outputs =
        {{.name = "out", .dtypes = PLM__DTYPE_MASK(F32), .shape = "(M, N)", .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm_matmul_params),
    .param_count = sizeof schema / sizeof schema[0],
    .params = schema,
    .check = check,
    .shapes = shapes,
    .cost = cost,
    .args_size = sizeof(plm__matmul_args),
    .pack = pack,
    .cpu = matmul_cpu_entry,
    .cuda = PLM__CUDA_ENTRY(matmul_cuda_entry),
    .tunable_count = 1,
    .tunables = tunables,
    .sample = sample,
};

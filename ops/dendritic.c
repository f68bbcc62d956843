/* ops/dendritic.c: the dendritic operation (plume/dendritic.h) and its descriptor: the
 * dendrites' sums are the scratch where the GEMM path runs. */
#include <math.h>
#include <stddef.h>

#include "kernels/common/dendritic.h"
#include "ops/op_desc.h"
#include "ops/op_tuning.h"
#include "ops/op_internal.h"
#include "streams/error.h"

static plm_status check_params(const plm_dendritic_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  if (params->mode < PLM_DENDRITE_SIGMOID || params->mode > PLM_DENDRITE_MULTIPLICATIVE)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->mode %d is not a plm_dendrite_mode",
                         (int)params->mode);
  const float values[3] = {params->k, params->theta, params->beta};
  const char *names[3] = {"k", "theta", "beta"};
  for (int v = 0; v < 3; v++)
    if (!isfinite(values[v]))
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->%s is %g, not finite", names[v],
                           (double)values[v]);
  return PLM_OK;
}

/* x (B, I) and w (N, D, I), already valid descriptions, and params agree. */
static plm_status check_inputs(const plm_tensor *x, const plm_tensor *w,
                               const plm_dendritic_params *params) {
  plm_status status = check_params(params);
  if (status == PLM_OK) status = plm__op_check_f32(x, "x", 2);
  if (status == PLM_OK) status = plm__op_check_f32(w, "w", 3);
  if (status == PLM_OK && w->dims[2] != x->dims[1])
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "w has %lld inputs per dendrite but x has %lld",
                           (long long)w->dims[2], (long long)x->dims[1]);
  return status;
}

static plm_status check(const plm__op_call *call) {
  const plm_tensor *x = call->in[0], *w = call->in[1], *out = call->out[0];
  plm_status status = check_inputs(x, w, call->params);
  if (status != PLM_OK || !out) return status;
  status = plm__op_check_f32(out, "out", 2);
  if (status == PLM_OK && (out->dims[0] != x->dims[0] || out->dims[1] != w->dims[0]))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "out is %lldx%lld, expected %lldx%lld",
                           (long long)out->dims[0], (long long)out->dims[1], (long long)x->dims[0],
                           (long long)w->dims[0]);
  return status;
}

static plm_status shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  out[0] = (plm_shape){
      .dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {call->in[0]->dims[0], call->in[1]->dims[0]}};
  return PLM_OK;
}

static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *x = call->in[0], *w = call->in[1];
  const plm_dendritic_params *params = call->params;
  const double b = (double)x->dims[0], in = (double)x->dims[1];
  const double n = (double)w->dims[0], d = (double)w->dims[1];
  const bool five = params->mode == PLM_DENDRITE_NMDA || params->mode == PLM_DENDRITE_ACTIVE_BP;
  *cost = (plm_op_cost){.bytes = 4.0 * (b * in + n * d * in + b * n),
                        .flops = 2.0 * b * n * d * in + (five ? 5.0 : 2.0) * b * n * d};
}

/* Where the GEMM path starts on each backend (kernels/common/dendritic.h): its tunables. */
enum { TUNE_HOST_GEMM, TUNE_CUDA_GEMM };
static const plm__op_tunable tunables[] = {PLM__GEMM_MIN_BATCH_TUNABLES(
    PLM__DENDRITIC_CPU_GEMM_MIN_BATCH, PLM__DENDRITIC_CUDA_GEMM_MIN_BATCH,
    "the sums are one GEMM (else per output)")};

/* The sums are the scratch, where the GEMM path runs (kernels/common/dendritic.h). */
static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *out_args) {
  const plm_tensor *x = call->in[0], *w = call->in[1];
  plm__dendritic_args *args = out_args;
  *args = (plm__dendritic_args){.x = x->data,
                                .w = w->data,
                                .out = call->out[0] ? call->out[0]->data : NULL,
                                .batch = x->dims[0],
                                .input = x->dims[1],
                                .neurons = w->dims[0],
                                .dendrites = w->dims[1],
                                .params = *(const plm_dendritic_params *)call->params};
  const bool on_cuda = plm__op_ctx_on_cuda(ctx);
  args->gemm_min_batch =
      plm__op_tuned(&plm__op_dendritic, call, on_cuda ? TUNE_CUDA_GEMM : TUNE_HOST_GEMM);
  const bool gemm = plm__dendritic_sums_bytes(on_cuda, args->gemm_min_batch, args->batch,
                                              args->neurons, args->dendrites) > 0;
  args->sums = gemm ? scratch : NULL;
}

static size_t cpu_scratch(const void *args) {
  const plm__dendritic_args *a = args;
  return plm__dendritic_sums_bytes(false, a->gemm_min_batch, a->batch, a->neurons, a->dendrites);
}

PLM__OP_KERNEL_ENTRIES(dendritic)

#ifdef PLM_HAVE_CUDA
static plm_status cuda_scratch(const void *args, size_t *bytes) {
  const plm__dendritic_args *a = args;
  *bytes = plm__dendritic_sums_bytes(true, a->gemm_min_batch, a->batch, a->neurons, a->dendrites);
  return PLM_OK;
}
#endif

static const char *const mode_names[] = {"sigmoid", "nmda", "active_bp", "multiplicative", NULL};
_Static_assert(PLM_DENDRITE_MULTIPLICATIVE == 3, "the modes' names follow the enum");

static const plm__op_param schema[] = {
    {.name = "mode",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(plm_dendritic_params, mode),
     .fallback = PLM_DENDRITE_SIGMOID,
     .choices = mode_names,
     .help = "the dendrites' nonlinearity: sigmoid, nmda, active_bp or multiplicative"},
    {.name = "k",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_dendritic_params, k),
     .fallback = 1.0,
     .help = "NMDA: the gate's steepness"},
    {.name = "theta",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_dendritic_params, theta),
     .fallback = 0.0,
     .help = "NMDA, ACTIVE_BP: the threshold"},
    {.name = "beta",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_dendritic_params, beta),
     .fallback = 1.0,
     .help = "ACTIVE_BP: the boost above the threshold"},
};

/* A batch of `size` through the seeds' 10 neurons x 8 dendrites x 16 inputs, NMDA. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  enum { NEURONS = 10, DENDRITES = 8, INPUTS = 16 };
  sample->in[0] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {request->size, INPUTS}};
  sample->in[1] =
      (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 3, .dims = {NEURONS, DENDRITES, INPUTS}};
  sample->outputs = 1u;
  sample->scale = "batch";
  sample->params.dendritic =
      (plm_dendritic_params){.mode = PLM_DENDRITE_NMDA, .k = 4.0f, .theta = 2.0f, .beta = 0.5f};
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_dendritic = {
    .name = "dendritic",
    .summary =
        "a dendritic layer: out (B, N) from x (B, I) and w (N, D, I), D dendrites per "
        "neuron",
    .details =
        "f32 (B, N): each neuron's D dendrite sums `a_d = w[n, d] · x[b]` through Σ "
        "σ(a_d) (sigmoid), Σ a_d σ(k (a_d − θ)) (nmda), Σ a_d + β max(0, a_d − θ) "
        "(active_bp) or Π σ(a_d) (multiplicative) (`include/plume/dendritic.h`).",
    .kind = PLM__OP_dendritic,
    .flags = PLM__OP_NAMED_OPERANDS,
    .input_count = 2,
    .inputs = {{.name = "x", .dtypes = PLM__DTYPE_MASK(F32), .shape = "(B, I)"},
               {.name = "w",
                .dtypes = PLM__DTYPE_MASK(F32),
                .shape = "(N, D, I)",
                .role = PLM__IN_TENSOR}},
    .output_count = 1,
    .outputs =
        {{.name = "out", .dtypes = PLM__DTYPE_MASK(F32), .shape = "(B, N)", .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm_dendritic_params),
    .param_count = sizeof schema / sizeof schema[0],
    .params = schema,
    .check = check,
    .shapes = shapes,
    .cost = cost,
    .args_size = sizeof(plm__dendritic_args),
    .pack = pack,
    .cpu_scratch = cpu_scratch,
    .cuda_scratch = PLM__CUDA_ENTRY(cuda_scratch),
    .cpu = dendritic_cpu_entry,
    .cuda = PLM__CUDA_ENTRY(dendritic_cuda_entry),
    .tunable_count = 2,
    .tunables = tunables,
    .sample = sample,
};

/* ops/dendritic.c: the dendritic operation (plume/dendritic.h): the public op, whose
 * sums' scratch (the GEMM path) comes from the context's default pool, and the internal
 * scratch pair (ops/op_scratch.h). */
#include <math.h>

#include "kernels/common/dendritic.h"
#include "ops/op_internal.h"
#include "ops/op_scratch.h"
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

static plm_status check_descriptions(const plm_tensor *x, const plm_tensor *w,
                                     const plm_dendritic_params *params) {
  plm_status status = plm__op_check_shape(x, "x");
  if (status == PLM_OK) status = plm__op_check_shape(w, "w");
  if (status == PLM_OK) status = check_inputs(x, w, params);
  return status;
}

plm_status plm_dendritic_output(const plm_tensor *x, const plm_tensor *w,
                                const plm_dendritic_params *params, plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(x);
  PLM__REQUIRE_NOT_NULL(w);
  PLM__REQUIRE_NOT_NULL(out);
  plm_status status = check_descriptions(x, w, params);
  if (status != PLM_OK) return plm__propagate(status);
  *out = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {x->dims[0], w->dims[0]}};
  return PLM_OK;
}

plm_status plm_dendritic_cost(const plm_tensor *x, const plm_tensor *w,
                              const plm_dendritic_params *params, plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(x);
  PLM__REQUIRE_NOT_NULL(w);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = check_descriptions(x, w, params);
  if (status != PLM_OK) return plm__propagate(status);
  const double b = (double)x->dims[0], in = (double)x->dims[1];
  const double n = (double)w->dims[0], d = (double)w->dims[1];
  const bool five = params->mode == PLM_DENDRITE_NMDA || params->mode == PLM_DENDRITE_ACTIVE_BP;
  *cost = (plm_op_cost){.bytes = 4.0 * (b * in + n * d * in + b * n),
                        .flops = 2.0 * b * n * d * in + (five ? 5.0 : 2.0) * b * n * d};
  return PLM_OK;
}

static void dendritic_task(const void *args) {
  plm__dendritic_cpu(args);
}

/* The sums' scratch (kernels/common/dendritic.h: 0 where the per-output path runs). */
static size_t scratch_bytes_of(const plm_context *ctx, const plm__dendritic_args *args) {
  return plm__dendritic_sums_bytes(ctx->backend->kind == PLM_BACKEND_CUDA, args->batch,
                                   args->neurons, args->dendrites);
}

plm_status plm__dendritic_scratch_bytes(const plm_context *ctx, const plm_tensor *x,
                                        const plm_tensor *w, const plm_dendritic_params *params,
                                        size_t *bytes) {
  if (!ctx) return plm__fail_raw(PLM_ERR_INVALID_ARG, "ctx is NULL");
  if (!bytes) return plm__fail_raw(PLM_ERR_INVALID_ARG, "bytes is NULL");
  if (!x) return plm__fail_raw(PLM_ERR_INVALID_ARG, "x is NULL");
  if (!w) return plm__fail_raw(PLM_ERR_INVALID_ARG, "w is NULL");
  plm_status status = check_descriptions(x, w, params);
  if (status != PLM_OK) return status;
  const plm__dendritic_args sizes = {
      .batch = x->dims[0], .neurons = w->dims[0], .dendrites = w->dims[1]};
  *bytes = scratch_bytes_of(ctx, &sizes);
  return PLM_OK;
}

/* The operands in the public op's order, as the messages name them. */
enum { OPERANDS = 3 };
static const char *const names[OPERANDS] = {"x", "w", "out"};

/* What plm_dendritic checks (raw messages); on success *args is the launch's (sums
 * unset). */
static plm_status check_call(plm_stream *stream, const plm_tensor *const tensors[OPERANDS],
                             const plm_dendritic_params *params, plm__dendritic_args *args) {
  const plm_tensor *x = tensors[0], *w = tensors[1], *out = tensors[2];
  if (!stream) return plm__fail_raw(PLM_ERR_INVALID_ARG, "stream is NULL");
  plm_status status = PLM_OK;
  for (int t = 0; t < OPERANDS && status == PLM_OK; t++)
    status = plm__op_check_tensor(stream, tensors[t], names[t]);
  if (status == PLM_OK) status = check_inputs(x, w, params);
  if (status == PLM_OK) status = plm__op_check_f32(out, "out", 2);
  if (status == PLM_OK && (out->dims[0] != x->dims[0] || out->dims[1] != w->dims[0]))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "out is %lldx%lld, expected %lldx%lld",
                           (long long)out->dims[0], (long long)out->dims[1], (long long)x->dims[0],
                           (long long)w->dims[0]);
  if (status == PLM_OK) status = plm__op_check_disjoint(x, "x", out, "out");
  if (status == PLM_OK) status = plm__op_check_disjoint(w, "w", out, "out");
  if (status != PLM_OK) return status;
  *args = (plm__dendritic_args){.x = x->data,
                                .w = w->data,
                                .out = out->data,
                                .batch = x->dims[0],
                                .input = x->dims[1],
                                .neurons = w->dims[0],
                                .dendrites = w->dims[1],
                                .params = *params};
  return PLM_OK;
}

/* Enqueue the kernels of checked arguments, with their sums set where the GEMM path
 * runs. */
static plm_status launch(plm_stream *stream, const plm__dendritic_args *args) {
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    plm_status status = PLM_OK;
    PLM__OP_ON_DEVICE(stream, "dendritic", status, plm__dendritic_cuda(stream->handle, args));
    return status;
  }
#endif
  return plm__op_launch_cpu(stream, dendritic_task, args, sizeof *args);
}

plm_status plm__dendritic_enqueue(plm_stream *stream, const plm_tensor *x, const plm_tensor *w,
                                  const plm_dendritic_params *params, plm_tensor *out,
                                  void *scratch, size_t scratch_bytes) {
  const plm_tensor *const tensors[OPERANDS] = {x, w, out};
  plm__dendritic_args args;
  plm_status status = check_call(stream, tensors, params, &args);
  if (status != PLM_OK) return status;
  const size_t needed = scratch_bytes_of(stream->ctx, &args);
  status =
      plm__op_check_scratch("dendritic", scratch, scratch_bytes, needed, tensors, names, OPERANDS);
  if (status != PLM_OK) return status;
  args.sums = needed ? scratch : NULL;
  return launch(stream, &args);
}

plm_status plm_dendritic(plm_stream *stream, const plm_tensor *x, const plm_tensor *w,
                         const plm_dendritic_params *params, plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(stream);
  const plm_tensor *const tensors[OPERANDS] = {x, w, out};
  plm__dendritic_args args;
  plm_pool *pool = NULL;
  void *scratch = NULL;
  plm_status status = check_call(stream, tensors, params, &args);
  if (status == PLM_OK)
    status = plm__op_scratch_take(stream, scratch_bytes_of(stream->ctx, &args), &pool, &scratch);
  if (status != PLM_OK) return plm__propagate(status);
  args.sums = scratch;
  status = launch(stream, &args);
  return plm__propagate(plm__op_scratch_give(stream, pool, scratch, status));
}

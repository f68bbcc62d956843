/* ops/dendritic.c: the dendritic operation (plume/dendritic.h). */
#include <math.h>

#include "kernels/common/dendritic.h"
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

plm_status plm_dendritic(plm_stream *stream, const plm_tensor *x, const plm_tensor *w,
                         const plm_dendritic_params *params, plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm_status status = plm__op_check_tensor(stream, x, "x");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, w, "w");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, out, "out");
  if (status == PLM_OK) status = check_inputs(x, w, params);
  if (status == PLM_OK) status = plm__op_check_f32(out, "out", 2);
  if (status == PLM_OK && (out->dims[0] != x->dims[0] || out->dims[1] != w->dims[0]))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "out is %lldx%lld, expected %lldx%lld",
                           (long long)out->dims[0], (long long)out->dims[1], (long long)x->dims[0],
                           (long long)w->dims[0]);
  if (status == PLM_OK) status = plm__op_check_disjoint(x, "x", out, "out");
  if (status == PLM_OK) status = plm__op_check_disjoint(w, "w", out, "out");
  if (status != PLM_OK) return plm__propagate(status);

  plm__dendritic_args args = {.x = x->data,
                              .w = w->data,
                              .out = out->data,
                              .batch = x->dims[0],
                              .input = x->dims[1],
                              .neurons = w->dims[0],
                              .dendrites = w->dims[1],
                              .params = *params};
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    PLM__OP_ON_DEVICE(stream, "dendritic", status, plm__dendritic_cuda(stream->handle, &args));
    return plm__propagate(status);
  }
#endif
  return plm__propagate(plm__op_launch_cpu(stream, dendritic_task, &args, sizeof args));
}

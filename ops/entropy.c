/* ops/entropy.c: the local entropy operation (plume/entropy.h). */
#include <math.h>

#include "kernels/common/entropy.h"
#include "ops/op_internal.h"
#include "ops/op_scratch.h"
#include "streams/error.h"

plm_status plm__entropy_check_params(const plm_entropy_params *params, plm_dtype dtype,
                                     const char *prefix) {
  if (params->window < 1 || params->window > PLM__ENTROPY_MAX_WINDOW)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%swindow %d is not in 1..%d", prefix, params->window,
                         PLM__ENTROPY_MAX_WINDOW);
  if (params->bins < 0 || params->bins > PLM__ENTROPY_MAX_BINS)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%sbins %d is not in 0..%d", prefix, params->bins,
                         PLM__ENTROPY_MAX_BINS);
  if (dtype != PLM_DTYPE_F32) return PLM_OK;
  if (params->bins == 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%sbins is 0 but f32 input needs a bin count",
                         prefix);
  if (params->range_auto) return PLM_OK;
  if (!isfinite(params->range_lo))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%srange_lo %g is not finite", prefix,
                         params->range_lo);
  if (!isfinite(params->range_hi))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%srange_hi %g is not finite", prefix,
                         params->range_hi);
  if (!(params->range_lo < params->range_hi))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%srange_lo %g is not below range_hi %g", prefix,
                         params->range_lo, params->range_hi);
  return PLM_OK;
}

static plm_status check_params(const plm_entropy_params *params, plm_dtype dtype) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  return plm__entropy_check_params(params, dtype, "params->");
}

static plm_status check_input(const plm_tensor *in) {
  if (in->dtype != PLM_DTYPE_U8 && in->dtype != PLM_DTYPE_U16 && in->dtype != PLM_DTYPE_F32)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "in->dtype %s is not u8, u16 or f32",
                         plm_dtype_name(in->dtype));
  if (in->ndim < 2)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "in->ndim %d: entropy needs (H, W) or (N, H, W)",
                         in->ndim);
  return PLM_OK;
}

/* Params and input, for _output and _cost (tensors of any context). */
static plm_status check_all(const plm_tensor *in, const plm_entropy_params *params) {
  if (in->ndim < 1 || in->ndim > PLM_TENSOR_MAX_DIMS)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "in->ndim %d is not in 1..%d", in->ndim,
                         PLM_TENSOR_MAX_DIMS);
  plm_status status = check_input(in);
  if (status == PLM_OK) status = check_params(params, in->dtype);
  return status;
}

plm_status plm_entropy_output(const plm_tensor *in, const plm_entropy_params *params,
                              plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(in);
  PLM__REQUIRE_NOT_NULL(out);
  plm_status status = check_all(in, params);
  if (status != PLM_OK) return plm__propagate(status);
  *out = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = in->ndim};
  for (int d = 0; d < in->ndim; d++) out->dims[d] = in->dims[d];
  return PLM_OK;
}

plm_status plm_entropy_cost(const plm_tensor *in, const plm_entropy_params *params,
                            plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(in);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = check_all(in, params);
  if (status != PLM_OK) return plm__propagate(status);
  double count = (double)plm_tensor_numel(in);
  /* Per pixel: 2w count updates of about 3 operations each, and the entropy itself. */
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + 4.0),
                        .flops = count * (6.0 * params->window + 4.0)};
  return PLM_OK;
}

static plm_status check_no_overlap(const plm_tensor *in, const plm_tensor *out) {
  uintptr_t in_begin = (uintptr_t)in->data, out_begin = (uintptr_t)out->data;
  uintptr_t in_end = in_begin + plm_tensor_bytes(in), out_end = out_begin + plm_tensor_bytes(out);
  if (in_end <= out_begin || out_end <= in_begin) return PLM_OK;
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "out overlaps in (entropy cannot run in place)");
}

static void entropy_task(const void *args) {
  plm__entropy_cpu(args);
}

/* The kernels' arguments for in's shape (in->data may be NULL: a description). */
static plm__entropy_args args_of(const plm_tensor *in, const plm_entropy_params *params) {
  const int nd = in->ndim, bits = in->dtype == PLM_DTYPE_U8 ? 8 : 16;
  int64_t frames = 1;
  for (int d = 0; d < nd - 2; d++) frames *= in->dims[d];
  return (plm__entropy_args){.in = in->data,
                             .frames = frames,
                             .height = in->dims[nd - 2],
                             .width = in->dims[nd - 1],
                             .dtype = in->dtype,
                             .window = params->window,
                             .bins = params->bins ? params->bins : 1 << bits,
                             .range_auto = in->dtype == PLM_DTYPE_F32 && params->range_auto,
                             .lo = params->range_lo,
                             .hi = params->range_hi};
}

static size_t scratch_bytes_of(const plm_context *ctx, const plm__entropy_args *args) {
#ifdef PLM_HAVE_CUDA
  if (ctx->backend->kind == PLM_BACKEND_CUDA) return plm__entropy_cuda_scratch_bytes(args);
#endif
  (void)ctx;
  return plm__entropy_cpu_scratch_bytes(args);
}

plm_status plm__entropy_scratch_bytes(const plm_context *ctx, const plm_tensor *in,
                                      const plm_entropy_params *params, size_t *bytes) {
  if (!ctx) return plm__fail_raw(PLM_ERR_INVALID_ARG, "ctx is NULL");
  if (!bytes) return plm__fail_raw(PLM_ERR_INVALID_ARG, "bytes is NULL");
  if (!in) return plm__fail_raw(PLM_ERR_INVALID_ARG, "in is NULL");
  plm_status status = plm__op_check_shape(in, "in");
  if (status == PLM_OK) status = check_all(in, params);
  if (status != PLM_OK) return status;
  plm__entropy_args args = args_of(in, params);
  *bytes = scratch_bytes_of(ctx, &args);
  return PLM_OK;
}

/* What plm_entropy checks; on success *args is the launch's (scratch unset). */
static plm_status check_call(plm_stream *stream, const plm_tensor *in,
                             const plm_entropy_params *params, plm_tensor *out,
                             plm__entropy_args *args) {
  if (!stream) return plm__fail_raw(PLM_ERR_INVALID_ARG, "stream is NULL");
  plm_status status = plm__op_check_tensor(stream, in, "in");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, out, "out");
  if (status == PLM_OK) status = check_input(in);
  if (status == PLM_OK) status = check_params(params, in->dtype);
  if (status == PLM_OK && out->dtype != PLM_DTYPE_F32)
    status =
        plm__fail_raw(PLM_ERR_INVALID_ARG, "out->dtype %s is not f32", plm_dtype_name(out->dtype));
  if (status == PLM_OK) status = plm__op_check_same_dims(in, "in", out, "out");
  if (status == PLM_OK) status = check_no_overlap(in, out);
  if (status != PLM_OK) return status;
  *args = args_of(in, params);
  args->out = out->data;
  return PLM_OK;
}

/* Enqueue the kernels of checked arguments whose scratch is set. */
static plm_status launch(plm_stream *stream, const plm__entropy_args *args) {
  plm_status status = PLM_OK;
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    PLM__OP_ON_DEVICE(stream, "entropy", status, plm__entropy_cuda(stream->handle, args));
    return status;
  }
#endif
  status = plm__op_launch_cpu(stream, entropy_task, args, sizeof *args);
  return status;
}

plm_status plm__entropy_enqueue(plm_stream *stream, const plm_tensor *in,
                                const plm_entropy_params *params, plm_tensor *out, void *scratch,
                                size_t scratch_bytes) {
  plm__entropy_args args;
  plm_status status = check_call(stream, in, params, out, &args);
  if (status != PLM_OK) return status;
  const plm_tensor *const operands[] = {in, out};
  static const char *const names[] = {"in", "out"};
  status = plm__op_check_scratch("entropy", scratch, scratch_bytes,
                                 scratch_bytes_of(stream->ctx, &args), operands, names, 2);
  if (status != PLM_OK) return status;
  args.scratch = scratch;
  return launch(stream, &args);
}

plm_status plm_entropy(plm_stream *stream, const plm_tensor *in, const plm_entropy_params *params,
                       plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm__entropy_args args;
  plm_pool *pool = NULL;
  plm_status status = check_call(stream, in, params, out, &args);
  if (status == PLM_OK)
    status =
        plm__op_scratch_take(stream, scratch_bytes_of(stream->ctx, &args), &pool, &args.scratch);
  if (status != PLM_OK) return plm__propagate(status);
  status = launch(stream, &args);
  return plm__propagate(plm__op_scratch_give(stream, pool, args.scratch, status));
}

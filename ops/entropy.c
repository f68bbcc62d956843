/* ops/entropy.c: the local entropy operation (plume/entropy.h). */
#include <math.h>

#include "kernels/common/entropy.h"
#include "ops/op_internal.h"
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

plm_status plm_entropy(plm_stream *stream, const plm_tensor *in, const plm_entropy_params *params,
                       plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm_status status = plm__op_check_tensor(stream, in, "in");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, out, "out");
  if (status == PLM_OK) status = check_input(in);
  if (status == PLM_OK) status = check_params(params, in->dtype);
  if (status == PLM_OK && out->dtype != PLM_DTYPE_F32)
    status =
        plm__fail_raw(PLM_ERR_INVALID_ARG, "out->dtype %s is not f32", plm_dtype_name(out->dtype));
  if (status == PLM_OK) status = plm__op_check_same_dims(in, "in", out, "out");
  if (status == PLM_OK) status = check_no_overlap(in, out);
  if (status != PLM_OK) return plm__propagate(status);

  int nd = in->ndim;
  int64_t frames = 1;
  for (int d = 0; d < nd - 2; d++) frames *= in->dims[d];
  int bits = in->dtype == PLM_DTYPE_U8 ? 8 : 16;
  plm__entropy_args args = {.in = in->data,
                            .out = out->data,
                            .frames = frames,
                            .height = in->dims[nd - 2],
                            .width = in->dims[nd - 1],
                            .dtype = in->dtype,
                            .window = params->window,
                            .bins = params->bins ? params->bins : 1 << bits,
                            .range_auto = in->dtype == PLM_DTYPE_F32 && params->range_auto,
                            .lo = params->range_lo,
                            .hi = params->range_hi};

  bool on_cuda = false;
#ifdef PLM_HAVE_CUDA
  on_cuda = plm__op_on_cuda(stream);
#endif
  size_t bytes = 0;
#ifdef PLM_HAVE_CUDA
  if (on_cuda) bytes = plm__entropy_cuda_scratch_bytes(&args);
#endif
  if (!on_cuda) bytes = plm__entropy_cpu_scratch_bytes(&args);
  plm_pool *pool = NULL;
  status = plm_context_default_pool(stream->ctx, &pool);
  if (status == PLM_OK) status = plm_pool_alloc(pool, bytes, stream, &args.scratch);
  if (status != PLM_OK) return plm__propagate(status);
#ifdef PLM_HAVE_CUDA
  if (on_cuda) PLM__OP_ON_DEVICE(stream, status, plm__entropy_cuda(stream->handle, &args));
#endif
  if (!on_cuda) status = plm__op_launch_cpu(stream, entropy_task, &args, sizeof args);
  /* Stream-ordered: the kernels enqueued above still own the scratch. */
  plm_status freed = plm_pool_free(pool, args.scratch, stream);
  return plm__propagate(status != PLM_OK ? status : freed);
}

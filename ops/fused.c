/* ops/fused.c: the fused sobel -> entropy -> threshold operation (plume/fused.h).
 *
 * It checks what plm_sobel, plm_entropy and plm_threshold check, with the shared
 * checks of their parameter structs (ops/op_internal.h), so that the fused op refuses
 * exactly what the chain would, plus the auto range, which it cannot do. */
#include "kernels/common/fused.h"
#include "ops/op_internal.h"
#include "ops/op_scratch.h"
#include "plume/fused.h"
#include "streams/error.h"

static plm_status check_params(const plm_sobel_entropy_threshold_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  plm_status status = plm__sobel_check_params(&params->sobel, "params->sobel.");
  if (status == PLM_OK && params->entropy.range_auto)
    status = plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "params->entropy.range_auto is set, but the fused op needs a fixed "
                           "range (range_lo, range_hi); run sobel, entropy and threshold for an "
                           "auto range");
  /* The entropy's input is Sobel's f32 magnitude, whatever in's dtype. */
  if (status == PLM_OK)
    status = plm__entropy_check_params(&params->entropy, PLM_DTYPE_F32, "params->entropy.");
  if (status == PLM_OK)
    status = plm__threshold_check_params(&params->threshold, "params->threshold.");
  return status;
}

/* in as sobel takes it: u8, u16 or f32, (H, W) or (N, H, W). */
static plm_status check_input(const plm_tensor *in) {
  if (in->dtype != PLM_DTYPE_U8 && in->dtype != PLM_DTYPE_U16 && in->dtype != PLM_DTYPE_F32)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "in->dtype %s is not u8, u16 or f32",
                         plm_dtype_name(in->dtype));
  if (in->ndim != 2 && in->ndim != 3)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "in->ndim %d is not 2 (H, W) or 3 (N, H, W)",
                         in->ndim);
  return PLM_OK;
}

/* For _output and _cost: a description of in (any context, no data needed). */
static plm_status check_description(const plm_tensor *in,
                                    const plm_sobel_entropy_threshold_params *params) {
  plm_status status = plm__op_check_shape(in, "in");
  if (status == PLM_OK) status = check_params(params);
  if (status == PLM_OK) status = check_input(in);
  return status;
}

plm_status plm_sobel_entropy_threshold_output(const plm_tensor *in,
                                              const plm_sobel_entropy_threshold_params *params,
                                              plm_shape *mask) {
  PLM__REQUIRE_NOT_NULL(in);
  PLM__REQUIRE_NOT_NULL(mask);
  plm_status status = check_description(in, params);
  if (status != PLM_OK) return plm__propagate(status);
  *mask = (plm_shape){.dtype = PLM_DTYPE_U8, .ndim = in->ndim};
  for (int d = 0; d < in->ndim; d++) mask->dims[d] = in->dims[d];
  return PLM_OK;
}

plm_status plm_sobel_entropy_threshold_cost(const plm_tensor *in,
                                            const plm_sobel_entropy_threshold_params *params,
                                            plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(in);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = check_description(in, params);
  if (status != PLM_OK) return plm__propagate(status);
  double count = (double)plm_tensor_numel(in);
  /* Per pixel: Sobel 17 (as plm_sobel_cost), the bin 4, the entropy 6w + 4 (as
   * plm_entropy_cost), the comparison 1. Only in and mask reach memory. */
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + 1.0),
                        .flops = count * (17.0 + 4.0 + 6.0 * params->entropy.window + 4.0 + 1.0)};
  return PLM_OK;
}

static void fused_task(const void *args) {
  plm__sobel_entropy_threshold_cpu(args);
}

/* The kernel's arguments for in's shape (in->data may be NULL: a description). */
static plm__sobel_entropy_threshold_args args_of(const plm_tensor *in,
                                                 const plm_sobel_entropy_threshold_params *params) {
  const int nd = in->ndim;
  return (plm__sobel_entropy_threshold_args){.sobel = {.in = in->data,
                                                       .n = nd == 3 ? in->dims[0] : 1,
                                                       .h = in->dims[nd - 2],
                                                       .w = in->dims[nd - 1],
                                                       .dtype = in->dtype,
                                                       .border = params->sobel.border},
                                             .window = params->entropy.window,
                                             .bins = params->entropy.bins,
                                             .lo = params->entropy.range_lo,
                                             .hi = params->entropy.range_hi,
                                             .value = params->threshold.value,
                                             .compare = params->threshold.compare};
}

static size_t scratch_bytes_of(const plm_context *ctx,
                               const plm__sobel_entropy_threshold_args *args) {
#ifdef PLM_HAVE_CUDA
  if (ctx->backend->kind == PLM_BACKEND_CUDA)
    return plm__sobel_entropy_threshold_cuda_scratch_bytes(args);
#endif
  (void)ctx;
  return plm__sobel_entropy_threshold_cpu_scratch_bytes(args);
}

plm_status plm__sobel_entropy_threshold_scratch_bytes(
    const plm_context *ctx, const plm_tensor *in, const plm_sobel_entropy_threshold_params *params,
    size_t *bytes) {
  if (!ctx) return plm__fail_raw(PLM_ERR_INVALID_ARG, "ctx is NULL");
  if (!bytes) return plm__fail_raw(PLM_ERR_INVALID_ARG, "bytes is NULL");
  if (!in) return plm__fail_raw(PLM_ERR_INVALID_ARG, "in is NULL");
  plm_status status = check_description(in, params);
  if (status != PLM_OK) return status;
  plm__sobel_entropy_threshold_args args = args_of(in, params);
  *bytes = scratch_bytes_of(ctx, &args);
  return PLM_OK;
}

/* What plm_sobel_entropy_threshold checks; on success *args is the launch's (scratch
 * unset). */
static plm_status check_call(plm_stream *stream, const plm_tensor *in,
                             const plm_sobel_entropy_threshold_params *params, plm_tensor *mask,
                             plm__sobel_entropy_threshold_args *args) {
  if (!stream) return plm__fail_raw(PLM_ERR_INVALID_ARG, "stream is NULL");
  plm_status status = plm__op_check_tensor(stream, in, "in");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, mask, "mask");
  if (status == PLM_OK) status = check_params(params);
  if (status == PLM_OK) status = check_input(in);
  if (status == PLM_OK && mask->dtype != PLM_DTYPE_U8)
    status =
        plm__fail_raw(PLM_ERR_INVALID_ARG, "mask->dtype %s is not u8", plm_dtype_name(mask->dtype));
  if (status == PLM_OK) status = plm__op_check_same_dims(in, "in", mask, "mask");
  if (status == PLM_OK) status = plm__op_check_disjoint(in, "in", mask, "mask");
  if (status != PLM_OK) return status;
  *args = args_of(in, params);
  args->mask = mask->data;
  return PLM_OK;
}

/* Enqueue the kernel of checked arguments whose scratch is set (when it needs any). */
static plm_status launch(plm_stream *stream, const plm__sobel_entropy_threshold_args *args) {
  plm_status status = PLM_OK;
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    PLM__OP_ON_DEVICE(stream, "sobel_entropy_threshold", status,
                      plm__sobel_entropy_threshold_cuda(stream->handle, args));
    return status;
  }
#endif
  status = plm__op_launch_cpu(stream, fused_task, args, sizeof *args);
  return status;
}

plm_status plm__sobel_entropy_threshold_enqueue(plm_stream *stream, const plm_tensor *in,
                                                const plm_sobel_entropy_threshold_params *params,
                                                plm_tensor *mask, void *scratch,
                                                size_t scratch_bytes) {
  plm__sobel_entropy_threshold_args args;
  plm_status status = check_call(stream, in, params, mask, &args);
  if (status != PLM_OK) return status;
  const plm_tensor *const operands[] = {in, mask};
  static const char *const names[] = {"in", "mask"};
  status = plm__op_check_scratch("sobel_entropy_threshold", scratch, scratch_bytes,
                                 scratch_bytes_of(stream->ctx, &args), operands, names, 2);
  if (status != PLM_OK) return status;
  args.scratch = scratch;
  return launch(stream, &args);
}

plm_status plm_sobel_entropy_threshold(plm_stream *stream, const plm_tensor *in,
                                       const plm_sobel_entropy_threshold_params *params,
                                       plm_tensor *mask) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm__sobel_entropy_threshold_args args;
  plm_pool *pool = NULL;
  plm_status status = check_call(stream, in, params, mask, &args);
  if (status == PLM_OK)
    status =
        plm__op_scratch_take(stream, scratch_bytes_of(stream->ctx, &args), &pool, &args.scratch);
  if (status != PLM_OK) return plm__propagate(status);
  status = launch(stream, &args);
  return plm__propagate(plm__op_scratch_give(stream, pool, args.scratch, status));
}

/* ops/label.c: connected-component labelling and region statistics (plume/label.h). */
#include <stdint.h>

#include "kernels/common/label.h"
#include "ops/op_internal.h"
#include "ops/op_scratch.h"
#include "streams/error.h"

static plm_status check_params(const plm_label_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  if (params->connectivity != 0 && params->connectivity != 4 && params->connectivity != 8)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->connectivity %d is not 4 or 8 (or 0)",
                         params->connectivity);
  return PLM_OK;
}

/* A tensor that is NULL-checked, with a valid shape, as the _output functions see it. */
static plm_status check_mask(const plm_tensor *mask) {
  if (mask->dtype != PLM_DTYPE_U8)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "mask->dtype %s is not u8",
                         plm_dtype_name(mask->dtype));
  if (mask->ndim != 2 && mask->ndim != 3)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "mask->ndim %d is not 2 (H, W) or 3 (N, H, W)",
                         mask->ndim);
  const int64_t height = mask->dims[mask->ndim - 2], width = mask->dims[mask->ndim - 1];
  if (height < 1 || width < 1 || height > INT32_MAX / width)
    return plm__fail_raw(PLM_ERR_UNSUPPORTED,
                         "mask's frames of %lld x %lld pixels are not in 1..INT32_MAX pixels",
                         (long long)height, (long long)width);
  return PLM_OK;
}

static int64_t frames_of(const plm_tensor *mask) {
  return mask->ndim == 3 ? mask->dims[0] : 1;
}

/* The memory of a and b is disjoint. */
static plm_status check_disjoint(const plm_tensor *a, const char *a_name, const plm_tensor *b,
                                 const char *b_name) {
  uintptr_t a_begin = (uintptr_t)a->data, b_begin = (uintptr_t)b->data;
  uintptr_t a_end = a_begin + plm_tensor_bytes(a), b_end = b_begin + plm_tensor_bytes(b);
  if (a_end <= b_begin || b_end <= a_begin) return PLM_OK;
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s overlaps %s", b_name, a_name);
}

plm_status plm_label_output(const plm_tensor *mask, const plm_label_params *params,
                            plm_shape *labels) {
  PLM__REQUIRE_NOT_NULL(mask);
  PLM__REQUIRE_NOT_NULL(labels);
  plm_status status = check_params(params);
  if (status == PLM_OK) status = check_mask(mask);
  if (status != PLM_OK) return plm__propagate(status);
  *labels = (plm_shape){.dtype = PLM_DTYPE_I32, .ndim = mask->ndim};
  for (int d = 0; d < mask->ndim; d++) labels->dims[d] = mask->dims[d];
  return PLM_OK;
}

plm_status plm_label_count_output(const plm_tensor *mask, const plm_label_params *params,
                                  plm_shape *count) {
  PLM__REQUIRE_NOT_NULL(mask);
  PLM__REQUIRE_NOT_NULL(count);
  plm_status status = check_params(params);
  if (status == PLM_OK) status = check_mask(mask);
  if (status != PLM_OK) return plm__propagate(status);
  *count = (plm_shape){.dtype = PLM_DTYPE_I32, .ndim = 1, .dims = {frames_of(mask)}};
  return PLM_OK;
}

plm_status plm_label_cost(const plm_tensor *mask, const plm_label_params *params,
                          plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(mask);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = check_params(params);
  if (status == PLM_OK) status = check_mask(mask);
  if (status != PLM_OK) return plm__propagate(status);
  /* The mask is read, the labels written and read back (parents, then numbers). */
  const double pixels = (double)plm_tensor_numel(mask);
  const int neighbours = params->connectivity == 4 ? 2 : 4;
  *cost = (plm_op_cost){.bytes = pixels * (1.0 + 4.0 * 3.0) + 4.0 * (double)frames_of(mask),
                        .flops = pixels * (neighbours + 2)};
  return PLM_OK;
}

static void label_task(const void *args) {
  plm__label_cpu(args);
}

/* The kernels' arguments for mask's shape (mask->data may be NULL: a description). */
static plm__label_args args_of(const plm_tensor *mask, const plm_label_params *params) {
  return (plm__label_args){.mask = mask->data,
                           .frames = frames_of(mask),
                           .height = mask->dims[mask->ndim - 2],
                           .width = mask->dims[mask->ndim - 1],
                           .connectivity = params->connectivity == 4 ? 4 : 8};
}

/* The CUDA kernels' scratch, sized by CUB for ctx's device (made current for the call);
 * the CPU kernel needs none. */
static plm_status scratch_bytes_of(const plm_context *ctx, const plm__label_args *args,
                                   size_t *bytes) {
  *bytes = 0;
#ifdef PLM_HAVE_CUDA
  if (ctx->backend->kind == PLM_BACKEND_CUDA) {
    int previous = 0;
    plm_status status = plm__op_context_device_enter(ctx, &previous);
    if (status != PLM_OK) return status;
    status = plm__label_cuda_scratch_bytes(args, bytes);
    plm__op_context_device_leave(ctx, previous);
    return status;
  }
#endif
  (void)ctx;
  (void)args;
  return PLM_OK;
}

plm_status plm__label_scratch_bytes(const plm_context *ctx, const plm_tensor *mask,
                                    const plm_label_params *params, size_t *bytes) {
  if (!ctx) return plm__fail_raw(PLM_ERR_INVALID_ARG, "ctx is NULL");
  if (!bytes) return plm__fail_raw(PLM_ERR_INVALID_ARG, "bytes is NULL");
  if (!mask) return plm__fail_raw(PLM_ERR_INVALID_ARG, "mask is NULL");
  plm_status status = plm__op_check_shape(mask, "mask");
  if (status == PLM_OK) status = check_params(params);
  if (status == PLM_OK) status = check_mask(mask);
  if (status != PLM_OK) return status;
  plm__label_args args = args_of(mask, params);
  return scratch_bytes_of(ctx, &args, bytes);
}

/* What plm_label checks; on success *args is the launch's (scratch unset). */
static plm_status check_call(plm_stream *stream, const plm_tensor *mask,
                             const plm_label_params *params, plm_tensor *labels, plm_tensor *count,
                             plm__label_args *args) {
  if (!stream) return plm__fail_raw(PLM_ERR_INVALID_ARG, "stream is NULL");
  plm_status status = plm__op_check_tensor(stream, mask, "mask");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, labels, "labels");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, count, "count");
  if (status == PLM_OK) status = check_params(params);
  if (status == PLM_OK) status = check_mask(mask);
  if (status == PLM_OK && labels->dtype != PLM_DTYPE_I32)
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "labels->dtype %s is not i32",
                           plm_dtype_name(labels->dtype));
  if (status == PLM_OK) status = plm__op_check_same_dims(mask, "mask", labels, "labels");
  if (status == PLM_OK && count->dtype != PLM_DTYPE_I32)
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "count->dtype %s is not i32",
                           plm_dtype_name(count->dtype));
  if (status == PLM_OK && (count->ndim != 1 || count->dims[0] != frames_of(mask)))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "count must have shape (%lld,), one per frame",
                           (long long)frames_of(mask));
  if (status == PLM_OK) status = check_disjoint(mask, "mask", labels, "labels");
  if (status == PLM_OK) status = check_disjoint(mask, "mask", count, "count");
  if (status == PLM_OK) status = check_disjoint(labels, "labels", count, "count");
  if (status != PLM_OK) return status;
  *args = args_of(mask, params);
  args->labels = labels->data;
  args->count = count->data;
  return PLM_OK;
}

/* Enqueue the kernels of checked arguments whose scratch is set (on cuda). */
static plm_status launch(plm_stream *stream, const plm__label_args *args) {
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    plm_status status;
    PLM__OP_ON_DEVICE(stream, "label", status, plm__label_cuda(stream->handle, args));
    return status;
  }
#endif
  return plm__op_launch_cpu(stream, label_task, args, sizeof *args);
}

plm_status plm__label_enqueue(plm_stream *stream, const plm_tensor *mask,
                              const plm_label_params *params, plm_tensor *labels, plm_tensor *count,
                              void *scratch, size_t scratch_bytes) {
  plm__label_args args;
  size_t needed = 0;
  plm_status status = check_call(stream, mask, params, labels, count, &args);
  if (status == PLM_OK) status = scratch_bytes_of(stream->ctx, &args, &needed);
  if (status != PLM_OK) return status;
  const plm_tensor *const operands[] = {mask, labels, count};
  static const char *const names[] = {"mask", "labels", "count"};
  status = plm__op_check_scratch("label", scratch, scratch_bytes, needed, operands, names, 3);
  if (status != PLM_OK) return status;
  args.scratch = scratch;
  return launch(stream, &args);
}

plm_status plm_label(plm_stream *stream, const plm_tensor *mask, const plm_label_params *params,
                     plm_tensor *labels, plm_tensor *count) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm__label_args args;
  size_t bytes = 0;
  plm_pool *pool = NULL;
  plm_status status = check_call(stream, mask, params, labels, count, &args);
  if (status == PLM_OK) status = scratch_bytes_of(stream->ctx, &args, &bytes);
  if (status == PLM_OK) status = plm__op_scratch_take(stream, bytes, &pool, &args.scratch);
  if (status != PLM_OK) return plm__propagate(status);
  status = launch(stream, &args);
  return plm__propagate(plm__op_scratch_give(stream, pool, args.scratch, status));
}

static plm_status check_regions_inputs(const plm_tensor *labels, const plm_tensor *intensity) {
  if (labels->dtype != PLM_DTYPE_I32)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "labels->dtype %s is not i32",
                         plm_dtype_name(labels->dtype));
  if (labels->ndim != 2)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "labels->ndim %d is not 2 (one frame per call)",
                         labels->ndim);
  if (intensity && intensity->dtype != PLM_DTYPE_U8 && intensity->dtype != PLM_DTYPE_U16 &&
      intensity->dtype != PLM_DTYPE_F32)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "intensity->dtype %s is not u8, u16 or f32",
                         plm_dtype_name(intensity->dtype));
  if (intensity) return plm__op_check_same_dims(labels, "labels", intensity, "intensity");
  return PLM_OK;
}

plm_status plm_regions_cost(const plm_tensor *labels, const plm_tensor *intensity, int64_t capacity,
                            plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(labels);
  PLM__REQUIRE_NOT_NULL(cost);
  if (capacity < 1)
    return plm__fail(PLM_ERR_INVALID_ARG, "capacity %lld is not positive", (long long)capacity);
  plm_status status = check_regions_inputs(labels, intensity);
  if (status != PLM_OK) return plm__propagate(status);
  const double pixels = (double)plm_tensor_numel(labels);
  const double per_pixel = 4.0 + (intensity ? (double)plm_dtype_size(intensity->dtype) : 0.0);
  *cost =
      (plm_op_cost){.bytes = pixels * per_pixel + 4.0 + (double)capacity * PLM_REGION_COLUMNS * 8.0,
                    .flops = pixels * (intensity ? 12.0 : 7.0) + (double)capacity * 4.0};
  return PLM_OK;
}

static void regions_task(const void *args) {
  plm__regions_cpu(args);
}

plm_status plm_regions(plm_stream *stream, const plm_tensor *labels, const plm_tensor *intensity,
                       const plm_tensor *count, plm_tensor *table) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm_status status = plm__op_check_tensor(stream, labels, "labels");
  if (status == PLM_OK && intensity) status = plm__op_check_tensor(stream, intensity, "intensity");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, count, "count");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, table, "table");
  if (status == PLM_OK) status = check_regions_inputs(labels, intensity);
  if (status == PLM_OK &&
      (count->dtype != PLM_DTYPE_I32 || count->ndim != 1 || count->dims[0] != 1))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "count must be i32 of shape (1,)");
  if (status == PLM_OK &&
      (table->dtype != PLM_DTYPE_F64 || table->ndim != 2 || table->dims[1] != PLM_REGION_COLUMNS))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "table must be f64 of shape (capacity, %d)",
                           PLM_REGION_COLUMNS);
  if (status == PLM_OK) status = check_disjoint(labels, "labels", table, "table");
  if (status == PLM_OK) status = check_disjoint(count, "count", table, "table");
  if (status == PLM_OK && intensity)
    status = check_disjoint(intensity, "intensity", table, "table");
  if (status != PLM_OK) return plm__propagate(status);

  plm__regions_args args = {.labels = labels->data,
                            .intensity = intensity ? intensity->data : NULL,
                            .intensity_dtype = intensity ? intensity->dtype : PLM_DTYPE_U8,
                            .count = count->data,
                            .table = table->data,
                            .capacity = table->dims[0],
                            .height = labels->dims[0],
                            .width = labels->dims[1]};
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    PLM__OP_ON_DEVICE(stream, "regions", status, plm__regions_cuda(stream->handle, &args));
    return plm__propagate(status);
  }
#endif
  return plm__propagate(plm__op_launch_cpu(stream, regions_task, &args, sizeof args));
}

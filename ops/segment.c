/* ops/segment.c: threshold + label + regions (plume/segment.h), composed from the
 * public ops on the stream, its mask (and label's scratch) taken from the context's default
 * pool, or given by the caller of plm__segment_enqueue (ops/op_scratch.h). */
#include <stdint.h>

#include "ops/op_internal.h"
#include "ops/op_scratch.h"
#include "plume/label.h"
#include "plume/pool.h"
#include "plume/segment.h"
#include "streams/error.h"

static plm_threshold_params threshold_params(const plm_segment_params *params) {
  return (plm_threshold_params){.value = params->value, .compare = params->compare};
}

static plm_status check_params(const plm_segment_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  plm_threshold_params threshold = threshold_params(params);
  plm_status status = plm__threshold_check_params(&threshold, "params->");
  if (status != PLM_OK) return status;
  if (params->connectivity != 0 && params->connectivity != 4 && params->connectivity != 8)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->connectivity %d is not 4 or 8 (or 0)",
                         params->connectivity);
  return PLM_OK;
}

static plm_status check_image(const plm_tensor *image) {
  plm_status status = plm__op_check_shape(image, "image");
  if (status != PLM_OK) return status;
  if (image->dtype != PLM_DTYPE_U8 && image->dtype != PLM_DTYPE_U16 &&
      image->dtype != PLM_DTYPE_F32)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "image->dtype %s is not u8, u16 or f32",
                         plm_dtype_name(image->dtype));
  if (image->ndim != 2)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "image has %d dimensions, not 2 (H, W)", image->ndim);
  if (image->dims[0] > INT32_MAX / image->dims[1])
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "image has more than INT32_MAX pixels");
  return PLM_OK;
}

/* The memory of a and b does not overlap. */
static plm_status check_disjoint(const plm_tensor *a, const char *a_name, const plm_tensor *b,
                                 const char *b_name) {
  const char *a0 = a->data, *b0 = b->data;
  const char *a1 = a0 + plm_tensor_bytes(a), *b1 = b0 + plm_tensor_bytes(b);
  if (a0 < b1 && b0 < a1)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s and %s overlap", a_name, b_name);
  return PLM_OK;
}

plm_status plm_segment_output(const plm_tensor *image, const plm_segment_params *params,
                              plm_shape *labels, plm_shape *count) {
  PLM__REQUIRE_NOT_NULL(image);
  PLM__REQUIRE_NOT_NULL(labels);
  PLM__REQUIRE_NOT_NULL(count);
  plm_status status = check_params(params);
  if (status == PLM_OK) status = check_image(image);
  if (status != PLM_OK) return plm__propagate(status);
  *labels =
      (plm_shape){.dtype = PLM_DTYPE_I32, .ndim = 2, .dims = {image->dims[0], image->dims[1]}};
  *count = (plm_shape){.dtype = PLM_DTYPE_I32, .ndim = 1, .dims = {1}};
  return PLM_OK;
}

plm_status plm_segment_cost(const plm_tensor *image, const plm_segment_params *params,
                            int64_t capacity, plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(image);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = check_params(params);
  if (status == PLM_OK) status = check_image(image);
  if (status == PLM_OK && capacity < 1)
    status =
        plm__fail_raw(PLM_ERR_INVALID_ARG, "capacity %lld is not positive", (long long)capacity);
  if (status != PLM_OK) return plm__propagate(status);
  /* Descriptions of the intermediate tensors, for the parts' cost functions. */
  plm_tensor mask = *image, labels = *image;
  mask.dtype = PLM_DTYPE_U8;
  labels.dtype = PLM_DTYPE_I32;
  plm_threshold_params tp = threshold_params(params);
  plm_label_params lp = {.connectivity = params->connectivity};
  plm_op_cost parts[3];
  status = plm_threshold_cost(image, &tp, &parts[0]);
  if (status == PLM_OK) status = plm_label_cost(&mask, &lp, &parts[1]);
  if (status == PLM_OK) status = plm_regions_cost(&labels, image, capacity, &parts[2]);
  if (status != PLM_OK) return plm__propagate(status);
  *cost = (plm_op_cost){.bytes = parts[0].bytes + parts[1].bytes + parts[2].bytes,
                        .flops = parts[0].flops + parts[1].flops + parts[2].flops};
  return PLM_OK;
}

/* The scratch: the mask (256-byte aligned), then label's scratch for the mask. */
static size_t mask_bytes(const plm_tensor *image) {
  const size_t bytes = (size_t)image->dims[0] * (size_t)image->dims[1];
  return (bytes + PLM_OP_SCRATCH_ALIGN - 1) / PLM_OP_SCRATCH_ALIGN * PLM_OP_SCRATCH_ALIGN;
}

static plm_tensor mask_of(const plm_tensor *image, void *data) {
  return (plm_tensor){.data = data,
                      .ctx = image->ctx,
                      .dtype = PLM_DTYPE_U8,
                      .ndim = 2,
                      .dims = {image->dims[0], image->dims[1]},
                      .strides = {image->dims[1], 1}};
}

static plm_status scratch_bytes_of(const plm_context *ctx, const plm_tensor *image,
                                   const plm_segment_params *params, size_t *bytes) {
  plm_tensor mask = mask_of(image, NULL);
  plm_label_params lp = {.connectivity = params->connectivity};
  size_t label_bytes = 0;
  plm_status status = plm__label_scratch_bytes(ctx, &mask, &lp, &label_bytes);
  if (status == PLM_OK) *bytes = mask_bytes(image) + label_bytes;
  return status;
}

plm_status plm__segment_scratch_bytes(const plm_context *ctx, const plm_tensor *image,
                                      const plm_segment_params *params, size_t *bytes) {
  if (!ctx) return plm__fail_raw(PLM_ERR_INVALID_ARG, "ctx is NULL");
  if (!bytes) return plm__fail_raw(PLM_ERR_INVALID_ARG, "bytes is NULL");
  if (!image) return plm__fail_raw(PLM_ERR_INVALID_ARG, "image is NULL");
  plm_status status = check_params(params);
  if (status == PLM_OK) status = check_image(image);
  if (status != PLM_OK) return status;
  return scratch_bytes_of(ctx, image, params, bytes);
}

/* What plm_segment checks. */
static plm_status check_call(plm_stream *stream, const plm_tensor *image,
                             const plm_segment_params *params, plm_tensor *labels,
                             plm_tensor *count, plm_tensor *table) {
  if (!stream) return plm__fail_raw(PLM_ERR_INVALID_ARG, "stream is NULL");
  plm_status status = check_params(params);
  if (status == PLM_OK) status = plm__op_check_tensor(stream, image, "image");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, labels, "labels");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, count, "count");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, table, "table");
  if (status == PLM_OK) status = check_image(image);
  if (status == PLM_OK && (labels->dtype != PLM_DTYPE_I32 || labels->ndim != 2 ||
                           labels->dims[0] != image->dims[0] || labels->dims[1] != image->dims[1]))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "labels must be i32 of image's shape");
  if (status == PLM_OK &&
      (count->dtype != PLM_DTYPE_I32 || count->ndim != 1 || count->dims[0] != 1))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "count must be i32 of shape (1,)");
  if (status == PLM_OK &&
      (table->dtype != PLM_DTYPE_F64 || table->ndim != 2 || table->dims[1] != PLM_REGION_COLUMNS))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "table must be f64 of shape (capacity, %d)",
                           PLM_REGION_COLUMNS);
  const plm_tensor *const all[] = {image, labels, count, table};
  static const char *const names[] = {"image", "labels", "count", "table"};
  for (int i = 0; status == PLM_OK && i < 4; i++)
    for (int j = i + 1; status == PLM_OK && j < 4; j++)
      status = check_disjoint(all[i], names[i], all[j], names[j]);
  return status;
}

/* The three parts on checked arguments, the mask and label's scratch in `scratch`
 * (label_bytes of it after the mask). Every argument is good: the parts cannot refuse
 * them. Messages as the parts' public functions give them. */
static plm_status enqueue_parts(plm_stream *stream, const plm_tensor *image,
                                const plm_segment_params *params, plm_tensor *labels,
                                plm_tensor *count, plm_tensor *table, void *scratch,
                                size_t label_bytes) {
  plm_tensor mask = mask_of(image, scratch);
  plm_threshold_params tp = threshold_params(params);
  plm_label_params lp = {.connectivity = params->connectivity};
  void *label_scratch = label_bytes ? (char *)scratch + mask_bytes(image) : NULL;
  plm_status status = plm_threshold(stream, image, &tp, &mask);
  if (status == PLM_OK)
    status = plm__propagate_in("plm_label", plm__label_enqueue(stream, &mask, &lp, labels, count,
                                                               label_scratch, label_bytes));
  if (status == PLM_OK) status = plm_regions(stream, labels, image, count, table);
  return status;
}

plm_status plm__segment_enqueue(plm_stream *stream, const plm_tensor *image,
                                const plm_segment_params *params, plm_tensor *labels,
                                plm_tensor *count, plm_tensor *table, void *scratch,
                                size_t scratch_bytes) {
  size_t needed = 0;
  plm_status status = check_call(stream, image, params, labels, count, table);
  if (status == PLM_OK) status = scratch_bytes_of(stream->ctx, image, params, &needed);
  if (status != PLM_OK) return status;
  const plm_tensor *const operands[] = {image, labels, count, table};
  static const char *const names[] = {"image", "labels", "count", "table"};
  status = plm__op_check_scratch("segment", scratch, scratch_bytes, needed, operands, names, 4);
  if (status != PLM_OK) return status;
  return enqueue_parts(stream, image, params, labels, count, table, scratch,
                       needed - mask_bytes(image));
}

plm_status plm_segment(plm_stream *stream, const plm_tensor *image,
                       const plm_segment_params *params, plm_tensor *labels, plm_tensor *count,
                       plm_tensor *table) {
  PLM__REQUIRE_NOT_NULL(stream);
  size_t bytes = 0;
  plm_pool *pool = NULL;
  void *scratch = NULL;
  plm_status status = check_call(stream, image, params, labels, count, table);
  if (status == PLM_OK) status = scratch_bytes_of(stream->ctx, image, params, &bytes);
  if (status == PLM_OK) status = plm__op_scratch_take(stream, bytes, &pool, &scratch);
  if (status != PLM_OK) return plm__propagate(status);
  status = enqueue_parts(stream, image, params, labels, count, table, scratch,
                         bytes - mask_bytes(image));
  return plm__propagate(plm__op_scratch_give(stream, pool, scratch, status));
}

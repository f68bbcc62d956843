/* ops/segment.c: threshold + label + regions (plume/segment.h), composed from the
 * public ops on the stream with a pooled scratch mask. */
#include <stdint.h>

#include "ops/op_internal.h"
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

plm_status plm_segment(plm_stream *stream, const plm_tensor *image,
                       const plm_segment_params *params, plm_tensor *labels, plm_tensor *count,
                       plm_tensor *table) {
  PLM__REQUIRE_NOT_NULL(stream);
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
  plm_pool *pool = NULL;
  if (status == PLM_OK) status = plm_context_default_pool(stream->ctx, &pool);
  if (status != PLM_OK) return plm__propagate(status);

  /* Every argument is good: the parts cannot refuse them. */
  plm_tensor mask = {0};
  status = plm_tensor_alloc(pool, stream, PLM_DTYPE_U8, 2, image->dims, &mask);
  if (status != PLM_OK) return plm__propagate(status);
  plm_threshold_params tp = threshold_params(params);
  plm_label_params lp = {.connectivity = params->connectivity};
  status = plm_threshold(stream, image, &tp, &mask);
  if (status == PLM_OK) status = plm_label(stream, &mask, &lp, labels, count);
  if (status == PLM_OK) status = plm_regions(stream, labels, image, count, table);
  plm_status freed = plm_tensor_free(pool, stream, &mask);
  if (status == PLM_OK) status = freed;
  return plm__propagate(status);
}

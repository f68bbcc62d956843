/* ops/segment_chain.c: threshold + label + regions (plume/segment.h), composed from their
 * descriptors on the stream, its mask (and label's scratch) taken from the context's default
 * pool, or given by a caller's block (plm__op_call_with_scratch, ops/op_scratch.h). */
#include <stddef.h>
#include <stdint.h>

#include "ops/op_desc.h"
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
  if (image->ndim != 2)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "image has %d dimensions, not 2 (H, W)", image->ndim);
  if (image->dims[0] > INT32_MAX / image->dims[1])
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "image has more than INT32_MAX pixels");
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

static plm_status check(const plm__op_call *call) {
  const plm__segment_params *p = call->params;
  const plm_tensor *image = call->in[0];
  plm_status status = check_params(p ? &p->segment : NULL);
  if (status == PLM_OK) status = check_image(image);
  if (status != PLM_OK) return status;
  const plm_tensor *labels = call->out[0], *count = call->out[1], *table = call->out[2];
  if (labels &&
      (labels->ndim != 2 || labels->dims[0] != image->dims[0] || labels->dims[1] != image->dims[1]))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "labels must be of image's shape");
  if (count && (count->ndim != 1 || count->dims[0] != 1))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "count must be of shape (1,)");
  if (table && (table->ndim != 2 || table->dims[1] != PLM_REGION_COLUMNS))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "table must be of shape (capacity, %d)",
                         PLM_REGION_COLUMNS);
  if (p->capacity < 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "capacity %lld is negative", (long long)p->capacity);
  if (table && p->capacity > 0 && table->dims[0] != p->capacity)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "table has %lld rows but capacity is %lld",
                         (long long)table->dims[0], (long long)p->capacity);
  return PLM_OK;
}

static int labels_connectivity(const void *params) {
  return ((const plm__segment_params *)params)->segment.connectivity == 4 ? 4 : 8;
}

static plm_status shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  const plm__segment_params *p = call->params;
  const plm_tensor *image = call->in[0];
  out[0] = (plm_shape){.dtype = PLM_DTYPE_I32, .ndim = 2, .dims = {image->dims[0], image->dims[1]}};
  out[1] = (plm_shape){.dtype = PLM_DTYPE_I32, .ndim = 1, .dims = {1}};
  plm_status status = plm__regions_table_shape(p->capacity, image, labels_connectivity(p), &out[2]);
  if (status == PLM_OK && resolved) ((plm__segment_params *)resolved)->capacity = out[2].dims[0];
  return status;
}

/* The parts' costs, on descriptions of the intermediate tensors. */
static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm__segment_params *p = call->params;
  const plm_tensor *image = call->in[0];
  plm_tensor mask = *image, labels = *image;
  mask.dtype = PLM_DTYPE_U8;
  labels.dtype = PLM_DTYPE_I32;
  plm_threshold_params tp = threshold_params(&p->segment);
  plm_label_params lp = {.connectivity = p->segment.connectivity};
  plm__regions_params rp = {.capacity = p->capacity};
  const plm__op_call parts[3] = {{.in = {image}, .params = &tp},
                                 {.in = {&mask}, .params = &lp},
                                 {.in = {&labels, image}, .params = &rp}};
  const plm__op_desc *ops[3] = {&plm__op_threshold, &plm__op_label, &plm__op_regions};
  *cost = (plm_op_cost){0};
  for (int k = 0; k < 3; k++) {
    plm_op_cost part;
    ops[k]->cost(&parts[k], &part);
    cost->bytes += part.bytes;
    cost->flops += part.flops;
  }
}

static plm_status label_scratch(const plm_context *ctx, const plm__op_call *call, size_t *bytes) {
  const plm__segment_params *p = call->params;
  const plm_tensor mask = mask_of(call->in[0], NULL);
  const plm_label_params lp = {.connectivity = p->segment.connectivity};
  const plm__op_call label = {.in = {&mask}, .params = &lp};
  return plm__op_scratch_of(&plm__op_label, ctx, &label, bytes);
}

static plm_status scratch_bytes(const plm_context *ctx, const plm__op_call *call, size_t *bytes) {
  size_t label_bytes = 0;
  plm_status status = label_scratch(ctx, call, &label_bytes);
  if (status == PLM_OK) *bytes = mask_bytes(call->in[0]) + label_bytes;
  return status;
}

/* The three parts on checked operands, the mask then label's scratch in `scratch`. Every
 * argument is good: the parts cannot refuse them. */
static plm_status enqueue(plm_stream *stream, const plm__op_call *call, void *scratch) {
  const plm__segment_params *p = call->params;
  const plm_tensor *image = call->in[0];
  plm_tensor mask = mask_of(image, scratch);
  plm_threshold_params tp = threshold_params(&p->segment);
  plm_label_params lp = {.connectivity = p->segment.connectivity};
  plm__regions_params rp = {.capacity = call->out[2]->dims[0]};
  size_t label_bytes = 0;
  plm_status status = label_scratch(stream->ctx, call, &label_bytes);
  void *label_scratch_at = label_bytes ? (char *)scratch + mask_bytes(image) : NULL;
  const plm__op_call threshold = {.in = {image}, .out = {&mask}, .params = &tp};
  const plm__op_call label = {.in = {&mask}, .out = {call->out[0], call->out[1]}, .params = &lp};
  const plm__op_call regions = {
      .in = {call->out[0], image, call->out[1]}, .out = {call->out[2]}, .params = &rp};
  if (status == PLM_OK) status = plm__op_enqueue(&plm__op_threshold, stream, &threshold, NULL);
  if (status == PLM_OK) status = plm__op_enqueue(&plm__op_label, stream, &label, label_scratch_at);
  if (status == PLM_OK) status = plm__op_enqueue(&plm__op_regions, stream, &regions, NULL);
  return status;
}

static const plm__op_param schema[] = {
    {.name = "value",
     .type = PLM__PARAM_DOUBLE,
     .offset = offsetof(plm__segment_params, segment.value),
     .flags = PLM__PARAM_REQUIRED,
     .help = "the threshold T (foreground: image CMP T)"},
    {.name = "cmp",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(plm__segment_params, segment.compare),
     .fallback = PLM_COMPARE_GT,
     .choices = plm__compare_names,
     .help = "the comparison: gt, ge, lt or le"},
    {.name = "connectivity",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(plm__segment_params, segment.connectivity),
     .fallback = 8,
     .choices = plm__connectivity_names,
     .values = plm__connectivity_values,
     .help = "4: edge neighbours; 8: edge and corner neighbours"},
    {.name = "capacity",
     .type = PLM__PARAM_INT64,
     .offset = offsetof(plm__segment_params, capacity),
     .min = 1,
     .max = (double)INT64_MAX,
     .fallback = 0,
     .help = "the table's rows (default: the most regions the frame can hold)"},
};

/* An image (f32 by default) above the middle of its values (half of it foreground),
 * 8-connectivity, a table of max(64, H W / 16) rows (about the regions such a frame holds),
 * at most the ceil(H/2) ceil(W/2) a frame can hold. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  const plm_dtype dtype = plm__sample_dtype(request, PLM_DTYPE_F32);
  sample->in[0] = plm__sample_image(request, dtype);
  sample->outputs = 7u;
  const int64_t h = sample->in[0].dims[0], w = sample->in[0].dims[1];
  const int64_t rows = h * w / 16 > 64 ? h * w / 16 : 64, most = ((h + 1) / 2) * ((w + 1) / 2);
  plm__op_params_default(&plm__op_segment, &sample->params);
  sample->params.segment.segment.value = plm__sample_middle(dtype);
  sample->params.segment.capacity = rows < most ? rows : most;
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_segment = {
    .name = "segment",
    .summary = "threshold, label and regions in one call: labels, count and a table of regions",
    .details =
        "`threshold`, `label` and regions in one library call (`plm_segment`): i32 "
        "labels of the components of `in CMP value`, their count, and the regions "
        "table with the intensity columns taken from the input, sized for the most "
        "regions an H×W frame can have, so no count is read back between the steps "
        "(`include/plume/segment.h`).",
    .kind = PLM__OP_segment,
    .flags = PLM__OP_GRAPH_ONLY,
    .input_count = 1,
    .inputs = {{.name = "image", .dtypes = PLM__DTYPES_IMAGE, .shape = "(H, W)"}},
    .output_count = 3,
    .outputs =
        {{.name = "labels", .dtypes = PLM__DTYPE_MASK(I32), .shape = "(H, W)", .labels = true},
         {.name = "count", .dtypes = PLM__DTYPE_MASK(I32), .shape = "(1,)", .role = PLM__OUT_COUNT},
         {.name = "table",
          .dtypes = PLM__DTYPE_MASK(F64),
          .shape = "(capacity, 12)",
          .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm__segment_params),
    .param_count = sizeof schema / sizeof schema[0],
    .params = schema,
    .check = check,
    .shapes = shapes,
    .cost = cost,
    .labels_connectivity = labels_connectivity,
    .scratch_bytes = scratch_bytes,
    .enqueue = enqueue,
    .sample = sample,
};

/* ---- the public and internal entries ------------------------------------------------------ */

plm_segment_params plm_segment_params_default(void) {
  plm__segment_params params;
  plm__op_params_default(&plm__op_segment, &params);
  return params.segment;
}

plm_status plm_segment_output(const plm_tensor *image, const plm_segment_params *params,
                              plm_shape *labels, plm_shape *count) {
  PLM__REQUIRE_NOT_NULL(image);
  PLM__REQUIRE_NOT_NULL(labels);
  PLM__REQUIRE_NOT_NULL(count);
  plm_status status = check_params(params);
  if (status != PLM_OK) return plm__propagate(status);
  const plm__segment_params p = {.segment = *params};
  const plm__op_call call = {.in = {image}, .params = &p};
  plm_shape shapes[3];
  status = plm__op_shapes(&plm__op_segment, &call, shapes, NULL);
  if (status == PLM_OK) {
    *labels = shapes[0];
    *count = shapes[1];
  }
  return plm__propagate(status);
}

plm_status plm_segment_cost(const plm_tensor *image, const plm_segment_params *params,
                            int64_t capacity, plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(image);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = check_params(params);
  if (status == PLM_OK && capacity < 1)
    status =
        plm__fail_raw(PLM_ERR_INVALID_ARG, "capacity %lld is not positive", (long long)capacity);
  if (status != PLM_OK) return plm__propagate(status);
  const plm__segment_params p = {.segment = *params, .capacity = capacity};
  const plm__op_call call = {.in = {image}, .params = &p};
  return plm__propagate(plm__op_cost(&plm__op_segment, &call, cost));
}

/* The call of the public arguments (params NULL stays NULL: the check names it). */
typedef struct segment_call {
  plm__segment_params params;
  plm__op_call call;
} segment_call;

static void segment_call_of(const plm_tensor *image, const plm_segment_params *params,
                            plm_tensor *labels, plm_tensor *count, plm_tensor *table,
                            segment_call *c) {
  c->params = (plm__segment_params){.capacity = table ? table->dims[0] : 0};
  if (params) c->params.segment = *params;
  c->call = (plm__op_call){
      .in = {image}, .out = {labels, count, table}, .params = params ? &c->params : NULL};
}

plm_status plm_segment(plm_stream *stream, const plm_tensor *image,
                       const plm_segment_params *params, plm_tensor *labels, plm_tensor *count,
                       plm_tensor *table) {
  segment_call c;
  segment_call_of(image, params, labels, count, table, &c);
  return plm__op_call_public(&plm__op_segment, stream, &c.call);
}

/* ops/label.c: connected-component labelling and region statistics (plume/label.h) and
 * their descriptors. */
#include <stddef.h>
#include <stdint.h>

#include "kernels/common/label.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

static plm_status check_params(const plm_label_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  if (params->connectivity != 0 && params->connectivity != 4 && params->connectivity != 8)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->connectivity %d is not 4 or 8 (or 0)",
                         params->connectivity);
  return PLM_OK;
}

/* The frames (the last two dims) of t, named `whose`, are 1..INT32_MAX pixels: label's
 * and regions' kernels keep a frame's pixel indices and columns in int32. */
static plm_status check_frame_pixels(const plm_tensor *t, const char *whose) {
  const int64_t height = t->dims[t->ndim - 2], width = t->dims[t->ndim - 1];
  if (height < 1 || width < 1 || height > INT32_MAX / width)
    return plm__fail_raw(PLM_ERR_UNSUPPORTED,
                         "%s frames of %lld x %lld pixels are not in 1..INT32_MAX pixels", whose,
                         (long long)height, (long long)width);
  return PLM_OK;
}

/* A tensor that is NULL-checked, with a valid shape, as the _output functions see it. */
static plm_status check_mask(const plm_tensor *mask) {
  if (mask->ndim != 2 && mask->ndim != 3)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "mask->ndim %d is not 2 (H, W) or 3 (N, H, W)",
                         mask->ndim);
  return check_frame_pixels(mask, "mask's");
}

static int64_t frames_of(const plm_tensor *mask) {
  return mask->ndim == 3 ? mask->dims[0] : 1;
}

/* ---- label ------------------------------------------------------------------------- */

const char *const plm__connectivity_names[] = {"4", "8", NULL};
const int plm__connectivity_values[] = {4, 8};

static plm_status label_check(const plm__op_call *call) {
  const plm_tensor *mask = call->in[0], *labels = call->out[0], *count = call->out[1];
  plm_status status = check_params(call->params);
  if (status == PLM_OK) status = check_mask(mask);
  if (status == PLM_OK && labels)
    status = plm__op_check_output_like(mask, "mask", labels, "labels", PLM_DTYPE_I32);
  if (status == PLM_OK && count && count->dtype != PLM_DTYPE_I32)
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "count->dtype %s is not i32",
                           plm_dtype_name(count->dtype));
  if (status == PLM_OK && count && (count->ndim != 1 || count->dims[0] != frames_of(mask)))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "count must have shape (%lld,), one per frame",
                           (long long)frames_of(mask));
  return status;
}

static plm_status label_shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  const plm_tensor *mask = call->in[0];
  out[0] = plm__op_shape_like(mask, PLM_DTYPE_I32);
  out[1] = (plm_shape){.dtype = PLM_DTYPE_I32, .ndim = 1, .dims = {frames_of(mask)}};
  return PLM_OK;
}

/* The mask is read, the labels written and read back (on cuda: parents, then numbers;
 * the CPU keeps its union-find's nodes at the front of each band's labels, mostly in the
 * caches, writes each label once and reads the mask twice). */
static void label_cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *mask = call->in[0];
  const plm_label_params *params = call->params;
  const double pixels = (double)plm_tensor_numel(mask);
  const int neighbours = params->connectivity == 4 ? 2 : 4;
  *cost = (plm_op_cost){.bytes = pixels * (1.0 + 4.0 * 3.0) + 4.0 * (double)frames_of(mask),
                        .flops = pixels * (neighbours + 2)};
}

static int label_connectivity(const void *params) {
  return ((const plm_label_params *)params)->connectivity == 4 ? 4 : 8;
}

/* The kernels' arguments (mask->data may be NULL: a description, for the scratch size). */
static void label_pack(const plm_context *ctx, const plm__op_call *call, void *scratch,
                       void *args) {
  (void)ctx;
  const plm_tensor *mask = call->in[0];
  *(plm__label_args *)args = (plm__label_args){.mask = mask->data,
                                               .labels = call->out[0] ? call->out[0]->data : NULL,
                                               .count = call->out[1] ? call->out[1]->data : NULL,
                                               .scratch = scratch,
                                               .frames = frames_of(mask),
                                               .height = mask->dims[mask->ndim - 2],
                                               .width = mask->dims[mask->ndim - 1],
                                               .connectivity = label_connectivity(call->params)};
}

static void label_cpu(const void *args) {
  plm__label_cpu(args);
}

/* Per band of rows a record and two rows of runs (kernels/common/label.h); the
 * union-find's nodes are in the labels. */
static size_t label_cpu_scratch(const void *args) {
  return plm__label_cpu_scratch_bytes(args);
}

#ifdef PLM_HAVE_CUDA
static plm_status label_cuda(void *stream, const void *args) {
  return plm__label_cuda(stream, args);
}

/* A root count per image row (kernels/common/label.h). */
static plm_status label_cuda_scratch(const void *args, size_t *bytes) {
  return plm__label_cuda_scratch_bytes(args, bytes);
}
#endif

static const plm__op_param label_params[] = {
    {.name = "connectivity",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(plm_label_params, connectivity),
     .fallback = 8,
     .choices = plm__connectivity_names,
     .values = plm__connectivity_values,
     .help = "4: edge neighbours; 8: edge and corner neighbours"},
};

/* A mask with half of it foreground at random (many small components, label's hard case),
 * 8-connectivity. */
static void label_sample(const plm__op_sample_request *request, plm__op_sample *sample,
                         const plm__op_sample_data *data) {
  sample->in[0] = plm__sample_image(request, PLM_DTYPE_U8);
  sample->outputs = 3u;
  plm__op_params_default(&plm__op_label, &sample->params);
  if (!data) return;
  uint64_t state = request->seed;
  plm__sample_mask(&sample->in[0], data->in[0], &state, 127);
}

const plm__op_desc plm__op_label = {
    .name = "label",
    .summary = "out = connected components of a mask (non-zero: foreground), i32 labels 1..K",
    .details =
        "i32 labels 0 (background), 1..K in raster order of each component's first "
        "pixel, per frame (as `scipy.ndimage.label`), and the count K of each frame "
        "(`include/plume/label.h`).",
    .kind = PLM__OP_label,
    .input_count = 1,
    .inputs = {{.name = "mask", .dtypes = PLM__DTYPE_MASK(U8), .shape = "(H, W) or (N, H, W)"}},
    .output_count = 2,
    .outputs =
        {{.name = "labels", .dtypes = PLM__DTYPE_MASK(I32), .role = PLM__OUT_MAIN, .labels = true},
         {.name = "count",
          .dtypes = PLM__DTYPE_MASK(I32),
          .shape = "(N,)",
          .role = PLM__OUT_COUNT}},
    .params_size = sizeof(plm_label_params),
    .param_count = sizeof label_params / sizeof label_params[0],
    .params = label_params,
    .check = label_check,
    .shapes = label_shapes,
    .cost = label_cost,
    .labels_connectivity = label_connectivity,
    .args_size = sizeof(plm__label_args),
    .pack = label_pack,
    .cpu_scratch = label_cpu_scratch,
    .cuda_scratch = PLM__CUDA_ENTRY(label_cuda_scratch),
    .cpu = label_cpu,
    .cuda = PLM__CUDA_ENTRY(label_cuda),
    .sample = label_sample,
};

static plm_status label_output(const plm_tensor *mask, const plm_label_params *params, int slot,
                               plm_shape *out) {
  const plm__op_call call = {.in = {mask}, .params = params};
  plm_shape shapes[2];
  plm_status status = plm__op_shapes(&plm__op_label, &call, shapes, NULL);
  if (status == PLM_OK) *out = shapes[slot];
  return status;
}

plm_status plm_label_count_output(const plm_tensor *mask, const plm_label_params *params,
                                  plm_shape *count) {
  PLM__REQUIRE_NOT_NULL(mask);
  PLM__REQUIRE_NOT_NULL(count);
  return plm__propagate(label_output(mask, params, 1, count));
}

/* ---- regions -------------------------------------------------------------------------- */

int64_t plm__regions_bound(int64_t height, int64_t width, int connectivity) {
  if (connectivity == 4) return (height * width + 1) / 2;
  return ((height + 1) / 2) * ((width + 1) / 2);
}

/* The frames of a labels image: (H, W) is one, (N, H, W) N. */
static int64_t regions_frames(const plm_tensor *labels) {
  return labels->ndim == 3 ? labels->dims[0] : 1;
}

static plm_status regions_check(const plm__op_call *call) {
  const plm_tensor *labels = call->in[0], *intensity = call->in[1], *count = call->in[2];
  const plm_tensor *table = call->out[0];
  const plm__regions_params *params = call->params;
  if (labels->ndim != 2 && labels->ndim != 3)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "labels->ndim %d is not 2 (H, W) or 3 (N, H, W)",
                         labels->ndim);
  const int64_t frames = regions_frames(labels);
  plm_status status = check_frame_pixels(labels, "labels'");
  if (status == PLM_OK && intensity)
    status = plm__op_check_same_dims(labels, "labels", intensity, "intensity");
  if (status != PLM_OK) return status;
  if (count && (count->ndim != 1 || count->dims[0] != frames))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "count must be of shape (%lld,): one K per frame",
                         (long long)frames);
  if (params->capacity < 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "capacity %lld is negative",
                         (long long)params->capacity);
  const int table_ndim = labels->ndim;
  if (table && (table->ndim != table_ndim || table->dims[table_ndim - 1] != PLM_REGION_COLUMNS ||
                (table_ndim == 3 && table->dims[0] != frames))) {
    if (table_ndim == 3)
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "table must be of shape (%lld, capacity, %d): a table per frame",
                           (long long)frames, PLM_REGION_COLUMNS);
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "table must be of shape (capacity, %d)",
                         PLM_REGION_COLUMNS);
  }
  if (table && params->capacity > 0 && table->dims[table_ndim - 2] != params->capacity)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "table has %lld rows but capacity is %lld",
                         (long long)table->dims[table_ndim - 2], (long long)params->capacity);
  return PLM_OK;
}

/* The table of (capacity, PLM_REGION_COLUMNS), or (N, capacity, PLM_REGION_COLUMNS) for
 * (N, H, W) labels; capacity 0 becomes the bound of labels made with a known
 * connectivity. */
plm_status plm__regions_table_shape(int64_t capacity, const plm_tensor *labels, int connectivity,
                                    plm_shape *table) {
  if (capacity == 0) {
    if (connectivity == 0)
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "capacity 0 (the bound) needs labels made by a label node; give a "
                           "capacity");
    capacity = plm__regions_bound(labels->dims[labels->ndim - 2], labels->dims[labels->ndim - 1],
                                  connectivity);
  }
  if (labels->ndim == 3)
    *table = (plm_shape){
        .dtype = PLM_DTYPE_F64, .ndim = 3, .dims = {labels->dims[0], capacity, PLM_REGION_COLUMNS}};
  else
    *table = (plm_shape){.dtype = PLM_DTYPE_F64, .ndim = 2, .dims = {capacity, PLM_REGION_COLUMNS}};
  /* No labelling of the frame has more components than 4-connectivity's checkerboard:
   * rows past that could never be filled, and a huge capacity would only fail later, as
   * an allocation. */
  const int64_t h = labels->dims[labels->ndim - 2], w = labels->dims[labels->ndim - 1];
  const int64_t most = plm__regions_bound(h, w, 4);
  if (capacity > most)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "capacity %lld is more than the %lld regions a %lldx%lld frame can have",
                         (long long)capacity, (long long)most, (long long)h, (long long)w);
  return PLM_OK;
}

static plm_status regions_shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  const plm__regions_params *params = call->params;
  plm_status status =
      plm__regions_table_shape(params->capacity, call->in[0], call->in_connectivity[0], &out[0]);
  if (status == PLM_OK && resolved)
    ((plm__regions_params *)resolved)->capacity = out[0].dims[out[0].ndim - 2];
  return status;
}

static void regions_cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *labels = call->in[0], *intensity = call->in[1];
  const double capacity = (double)((const plm__regions_params *)call->params)->capacity;
  const double pixels = (double)plm_tensor_numel(labels);
  const double frames = (double)regions_frames(labels), rows = frames * capacity;
  const double per_pixel = 4.0 + (intensity ? (double)plm_dtype_size(intensity->dtype) : 0.0);
  *cost =
      (plm_op_cost){.bytes = pixels * per_pixel + 4.0 * frames + rows * PLM_REGION_COLUMNS * 8.0,
                    .flops = pixels * (intensity ? 12.0 : 7.0) + rows * 4.0};
}

static void regions_pack(const plm_context *ctx, const plm__op_call *call, void *scratch,
                         void *args) {
  (void)ctx;
  (void)scratch;
  const plm_tensor *labels = call->in[0], *intensity = call->in[1], *table = call->out[0];
  *(plm__regions_args *)args =
      (plm__regions_args){.labels = labels->data,
                          .intensity = intensity ? intensity->data : NULL,
                          .intensity_dtype = intensity ? intensity->dtype : PLM_DTYPE_U8,
                          .count = call->in[2]->data,
                          .table = table->data,
                          .capacity = table->dims[table->ndim - 2],
                          .frames = regions_frames(labels),
                          .height = labels->dims[labels->ndim - 2],
                          .width = labels->dims[labels->ndim - 1]};
}

static void regions_cpu(const void *args) {
  plm__regions_cpu(args);
}

#ifdef PLM_HAVE_CUDA
static plm_status regions_cuda(void *stream, const void *args) {
  return plm__regions_cuda(stream, args);
}
#endif

static const plm__op_param regions_params[] = {
    {.name = "capacity",
     .type = PLM__PARAM_INT64,
     .offset = offsetof(plm__regions_params, capacity),
     .min = 1,
     .max = (double)INT64_MAX,
     .fallback = 0,
     .help = "the table's rows (default: the most regions the labels can hold)"},
};

/* K = max(1, H W / 16) labels scattered at random (0, the background, among them), an f32
 * intensity, their count and a table of K rows. */
static void regions_sample(const plm__op_sample_request *request, plm__op_sample *sample,
                           const plm__op_sample_data *data) {
  sample->in[0] = plm__sample_image(request, PLM_DTYPE_I32);
  sample->in[1] = plm__sample_image(request, PLM_DTYPE_F32);
  sample->in[2] = (plm_shape){.dtype = PLM_DTYPE_I32, .ndim = 1, .dims = {1}};
  sample->outputs = 1u;
  const int64_t pixels = sample->in[0].dims[0] * sample->in[0].dims[1];
  const int64_t labels = pixels / 16 > INT32_MAX ? INT32_MAX : pixels / 16 > 1 ? pixels / 16 : 1;
  sample->params.regions.capacity = labels;
  if (!data) return;
  uint64_t state = request->seed;
  plm__sample_uniform(&sample->in[0], data->in[0], &state);
  int32_t *label = data->in[0];
  for (int64_t i = 0; i < pixels; i++) label[i] = (int32_t)(label[i] % (labels + 1));
  plm__sample_uniform(&sample->in[1], data->in[1], &state);
  *(int32_t *)data->in[2] = (int32_t)labels;
}

const plm__op_desc plm__op_regions = {
    .name = "regions",
    .summary =
        "table = one row of statistics per label of a frame, a table per frame of a stack "
        "(area, box, centroid; "
        "with intensity its sum, max and weighted centroid)",
    .details =
        "f64 (capacity, columns), a table per frame: row j describes label j + 1 (area, "
        "bounding box with inclusive maxima, centroid, and with an intensity image its "
        "sum, max and weighted centroid, NaN when the sum is 0), as "
        "`skimage.measure.regionprops`; rows from the count on are left untouched "
        "(`include/plume/label.h`).",
    .kind = PLM__OP_regions,
    .input_count = 3,
    .inputs = {{.name = "labels", .dtypes = PLM__DTYPE_MASK(I32), .shape = "(H, W) or (N, H, W)"},
               {.name = "intensity",
                .dtypes = PLM__DTYPES_IMAGE,
                .shape = "(labels' shape)",
                .optional = true,
                .role = PLM__IN_FRAME},
               {.name = "count",
                .dtypes = PLM__DTYPE_MASK(I32),
                .shape = "(1,) or (N,)",
                .role = PLM__IN_COUNT}},
    .output_count = 1,
    .outputs = {{.name = "table",
                 .dtypes = PLM__DTYPE_MASK(F64),
                 .shape = "(capacity, 12) or (N, capacity, 12)",
                 .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm__regions_params),
    .param_count = sizeof regions_params / sizeof regions_params[0],
    .params = regions_params,
    .check = regions_check,
    .shapes = regions_shapes,
    .cost = regions_cost,
    .args_size = sizeof(plm__regions_args),
    .pack = regions_pack,
    .cpu = regions_cpu,
    .cuda = PLM__CUDA_ENTRY(regions_cuda),
    .sample = regions_sample,
};

plm_status plm_regions_cost(const plm_tensor *labels, const plm_tensor *intensity, int64_t capacity,
                            plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(labels);
  PLM__REQUIRE_NOT_NULL(cost);
  if (capacity < 1)
    return plm__fail(PLM_ERR_INVALID_ARG, "capacity %lld is not positive", (long long)capacity);
  const plm__regions_params params = {.capacity = capacity};
  const plm__op_call call = {.in = {labels, intensity}, .params = &params};
  return plm__propagate(plm__op_cost(&plm__op_regions, &call, cost));
}

const char *plm_region_column_name(int column) {
  static const char *const names[PLM_REGION_COLUMNS] = {
      [PLM_REGION_LABEL] = "label",
      [PLM_REGION_AREA] = "area",
      [PLM_REGION_MIN_ROW] = "min_row",
      [PLM_REGION_MIN_COL] = "min_col",
      [PLM_REGION_MAX_ROW] = "max_row",
      [PLM_REGION_MAX_COL] = "max_col",
      [PLM_REGION_CENTROID_ROW] = "centroid_row",
      [PLM_REGION_CENTROID_COL] = "centroid_col",
      [PLM_REGION_SUM] = "sum",
      [PLM_REGION_MAX] = "max",
      [PLM_REGION_WCENTROID_ROW] = "wcentroid_row",
      [PLM_REGION_WCENTROID_COL] = "wcentroid_col",
  };
  return column >= 0 && column < PLM_REGION_COLUMNS ? names[column] : NULL;
}

plm_status plm_regions(plm_stream *stream, const plm_tensor *labels, const plm_tensor *intensity,
                       const plm_tensor *count, plm_tensor *table) {
  const plm__regions_params params = {
      .capacity = table && table->ndim >= 2 ? table->dims[table->ndim - 2] : 0};
  const plm__op_call call = {.in = {labels, intensity, count}, .out = {table}, .params = &params};
  return plm__op_call_public(&plm__op_regions, stream, &call);
}

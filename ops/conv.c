/* ops/conv.c: the conv2d, sepconv2d and sobel operations (plume/conv.h) and their
 * descriptors. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/common/conv.h"
#include "kernels/common/sepconv.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

const char *const plm__border_names[] = {"zero", "replicate", "reflect101", NULL};

/* prefix: how the message names the struct holding the field ("params->"). */
static plm_status check_border(plm_border border, const char *prefix) {
  if (border >= PLM_BORDER_ZERO && border <= PLM_BORDER_REFLECT101) return PLM_OK;
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%sborder %d is not a plm_border", prefix, (int)border);
}

/* An image operand (of a dtype its slot takes): (H, W) or (N, H, W). */
static plm_status check_image(const plm_tensor *in) {
  if (in->ndim != 2 && in->ndim != 3)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "in->ndim %d is not 2 (H, W) or 3 (N, H, W)",
                         in->ndim);
  for (int d = 0; d < in->ndim; d++)
    if (in->dims[d] < 1)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "in->dims[%d] is %lld", d, (long long)in->dims[d]);
  return PLM_OK;
}

/* The three dims (N, H, W) of an image operand checked by check_image. */
static void image_dims(const plm_tensor *in, int64_t dims[3]) {
  dims[0] = in->ndim == 3 ? in->dims[0] : 1;
  dims[1] = in->dims[in->ndim - 2];
  dims[2] = in->dims[in->ndim - 1];
}

/* ---- conv2d ------------------------------------------------------------------------ */

/* conv2d's parameters, or sepconv2d's as conv2d's (op: the one whose they are). */
static plm_status check_filter_params(const plm_conv2d_params *params, const char *op) {
  if (params->stride_y < 1 || params->stride_x < 1)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "params->stride_y %d, stride_x %d: strides must be at least 1 "
                         "(plm_%s_params_default gives 1)",
                         params->stride_y, params->stride_x, op);
  if (params->pad_y < 0 || params->pad_x < 0 || params->pad_y > PLM_CONV2D_MAX_PAD ||
      params->pad_x > PLM_CONV2D_MAX_PAD)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "params->pad_y %d, pad_x %d: padding must be in 0..%d", params->pad_y,
                         params->pad_x, PLM_CONV2D_MAX_PAD);
  return check_border(params->border, "params->");
}

static plm_status check_kernel(const plm_tensor *kernel) {
  if (kernel->ndim != 2)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "kernel->ndim %d is not 2 (KH, KW)", kernel->ndim);
  for (int d = 0; d < 2; d++)
    if (kernel->dims[d] < 1 || kernel->dims[d] > PLM_CONV2D_MAX_KERNEL)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "kernel is %lldx%lld; KH and KW must be in 1..%d",
                           (long long)kernel->dims[0], (long long)kernel->dims[1],
                           PLM_CONV2D_MAX_KERNEL);
  return PLM_OK;
}

/* The output's shape of a checked image filtered by a kh x kw kernel; fails when no
 * output pixel is left. */
static plm_status filter_shape(const plm_tensor *in, int64_t kh, int64_t kw,
                               const plm_conv2d_params *params, plm_shape *shape) {
  int64_t dims[3];
  image_dims(in, dims);
  int64_t span_y = dims[1] + 2 * (int64_t)params->pad_y - kh;
  int64_t span_x = dims[2] + 2 * (int64_t)params->pad_x - kw;
  if (span_y < 0 || span_x < 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "in is %lldx%lld, padded by %d,%d, smaller than the %lldx%lld kernel: "
                         "no output pixel",
                         (long long)dims[1], (long long)dims[2], params->pad_y, params->pad_x,
                         (long long)kh, (long long)kw);
  *shape = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = in->ndim};
  if (in->ndim == 3) shape->dims[0] = dims[0];
  shape->dims[in->ndim - 2] = span_y / params->stride_y + 1;
  shape->dims[in->ndim - 1] = span_x / params->stride_x + 1;
  return PLM_OK;
}

static plm_status conv2d_shape(const plm_tensor *in, const plm_tensor *kernel,
                               const plm_conv2d_params *params, plm_shape *shape) {
  return filter_shape(in, kernel->dims[0], kernel->dims[1], params, shape);
}

static plm_status check_f32_output(const plm_tensor *out, const char *name) {
  if (out->dtype == PLM_DTYPE_F32) return PLM_OK;
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->dtype %s is not f32", name,
                       plm_dtype_name(out->dtype));
}

/* out, given: f32 and of the shape the filter makes. */
static plm_status check_filter_output(const plm_tensor *out, const plm_shape *shape,
                                      const char *what) {
  plm_status status = check_f32_output(out, "out");
  if (status != PLM_OK) return status;
  plm_tensor expected = *out;
  expected.ndim = shape->ndim;
  for (int d = 0; d < shape->ndim; d++) expected.dims[d] = shape->dims[d];
  return plm__op_check_same_dims(&expected, what, out, "out");
}

static plm_status conv2d_check(const plm__op_call *call) {
  const plm_tensor *in = call->in[0], *kernel = call->in[1], *out = call->out[0];
  if (!call->params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  plm_status status = check_filter_params(call->params, "conv2d");
  if (status == PLM_OK) status = check_image(in);
  if (status == PLM_OK && kernel) status = check_kernel(kernel);
  if (status != PLM_OK || !kernel) return status;
  plm_shape shape;
  status = conv2d_shape(in, kernel, call->params, &shape);
  if (status != PLM_OK || !out) return status;
  return check_filter_output(out, &shape, "the output of conv2d");
}

static plm_status conv2d_shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  return conv2d_shape(call->in[0], call->in[1], call->params, &out[0]);
}

static void conv2d_cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0], *kernel = call->in[1];
  plm_shape shape;
  conv2d_shape(in, kernel, call->params, &shape); /* checked */
  double outputs = 1.0, taps = (double)(kernel->dims[0] * kernel->dims[1]);
  for (int d = 0; d < shape.ndim; d++) outputs *= (double)shape.dims[d];
  double inputs = (double)plm_tensor_numel(in);
  *cost = (plm_op_cost){
      .bytes = inputs * (double)plm_dtype_size(in->dtype) + taps * 4.0 + outputs * 4.0,
      .flops = 2.0 * outputs * taps};
}

static void conv2d_pack(const plm_context *ctx, const plm__op_call *call, void *scratch,
                        void *args) {
  (void)ctx;
  (void)scratch;
  const plm_tensor *in = call->in[0], *kernel = call->in[1], *out = call->out[0];
  const plm_conv2d_params *params = call->params;
  int64_t dims[3];
  image_dims(in, dims);
  *(plm__conv2d_args *)args =
      (plm__conv2d_args){.in = in->data,
                         .taps = kernel->data,
                         .out = out->data,
                         .n = dims[0],
                         .h = dims[1],
                         .w = dims[2],
                         .ho = out->dims[out->ndim - 2],
                         .wo = out->dims[out->ndim - 1],
                         .dtype = in->dtype,
                         .kh = (int)kernel->dims[0],
                         .kw = (int)kernel->dims[1],
                         .stride_y = params->stride_y,
                         .stride_x = params->stride_x,
                         .pad_y = params->pad_y,
                         .pad_x = params->pad_x,
                         .border = params->border,
                         .cuda_tile_width = (int)plm__op_tuned(&plm__op_conv2d, call, 0)};
}

static void conv2d_cpu(const void *args) {
  plm__conv2d_cpu(args);
}

#ifdef PLM_HAVE_CUDA
static plm_status conv2d_cuda(void *stream, const void *args) {
  return plm__conv2d_cuda(stream, args);
}
#endif

static const plm__op_param conv2d_params[] = {
    {.name = "stride",
     .type = PLM__PARAM_PAIR,
     .offset = offsetof(plm_conv2d_params, stride_y),
     .offset2 = offsetof(plm_conv2d_params, stride_x),
     .min = 1,
     .max = INT32_MAX,
     .fallback = 1,
     .form = "SY,SX",
     .help = "the output's step in rows, columns (each >= 1)"},
    {.name = "pad",
     .type = PLM__PARAM_PAIR,
     .offset = offsetof(plm_conv2d_params, pad_y),
     .offset2 = offsetof(plm_conv2d_params, pad_x),
     .min = 0,
     .max = PLM_CONV2D_MAX_PAD,
     .fallback = 0,
     .flags = PLM__PARAM_SAME_PADDING,
     .form = "PY,PX",
     .help = "rows, columns added on each side, or same ((KH-1)/2,(KW-1)/2 for an odd kernel)"},
    {.name = "border",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(plm_conv2d_params, border),
     .fallback = PLM_BORDER_ZERO,
     .choices = plm__border_names,
     .help = "where padded pixels come from: zero, replicate (aaa|abcd|ddd) or reflect101 "
             "(dcb|abcd|cba)"},
};

/* An image (f32 by default) smoothed by the 3x3 binomial kernel, "same" size (pad 1,
 * reflect101). */
static void conv2d_sample(const plm__op_sample_request *request, plm__op_sample *sample,
                          const plm__op_sample_data *data) {
  static const float taps[9] = {1 / 16.f, 2 / 16.f, 1 / 16.f, 2 / 16.f, 4 / 16.f,
                                2 / 16.f, 1 / 16.f, 2 / 16.f, 1 / 16.f};
  sample->in[0] = plm__sample_image(request, plm__sample_dtype(request, PLM_DTYPE_F32));
  sample->in[1] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {3, 3}};
  sample->outputs = 1u;
  plm__op_params_default(&plm__op_conv2d, &sample->params);
  sample->params.conv2d.pad_y = sample->params.conv2d.pad_x = 1;
  sample->params.conv2d.border = PLM_BORDER_REFLECT101;
  if (!data) return;
  uint64_t state = request->seed;
  plm__sample_uniform(&sample->in[0], data->in[0], &state);
  memcpy(data->in[1], taps, sizeof taps);
}

const plm__op_desc plm__op_conv2d = {
    .name = "conv2d",
    .summary = "out = in cross-correlated with a kernel (no flip), f32",
    .details =
        "f32 cross-correlation with the kernel (no kernel flip, as "
        "`scipy.ndimage.correlate` and PyTorch's `conv2d`), `(H + 2·PY − KH) / SY + "
        "1` by `(W + 2·PX − KW) / SX + 1` for stride SY,SX and pad PY,PX, the pad "
        "filled as `border` says (zero: 0; replicate: `aaa|abcd|ddd`; reflect101: "
        "`dcb|abcd|cba`) (`include/plume/conv.h`).",
    .kind = PLM__OP_conv2d,
    .input_count = 2,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE},
               {.name = "kernel",
                .dtypes = PLM__DTYPE_MASK(F32),
                .shape = "(KH, KW), 1..31 taps a side",
                .role = PLM__IN_KERNEL,
                .finite = true}},
    .output_count = 1,
    .outputs = {{.name = "out", .dtypes = PLM__DTYPE_MASK(F32), .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm_conv2d_params),
    .param_count = sizeof conv2d_params / sizeof conv2d_params[0],
    .params = conv2d_params,
    .check = conv2d_check,
    .shapes = conv2d_shapes,
    .cost = conv2d_cost,
    .args_size = sizeof(plm__conv2d_args),
    .pack = conv2d_pack,
    .cpu = conv2d_cpu,
    .cuda = PLM__CUDA_ENTRY(conv2d_cuda),
    .tunable_count = 1,
    .tunables =
        &(const plm__op_tunable){
            .name = "tile_width",
            .backend = PLM_BACKEND_CUDA,
            .fallback = PLM__CONV2D_CUDA_TILE_WIDTH,
            .candidate_count = 4,
            .candidates = {8, 16, 32, 64},
            .help = "the threads across a block of 256 (rows: 256 / columns), each summing 7 "
                    "outputs side by side at stride_x 1, one otherwise: wider reads longer rows, "
                    "squarer stages less halo"},
    .sample = conv2d_sample,
};

/* ---- sepconv2d --------------------------------------------------------------------- */

/* sepconv2d's parameters are conv2d's, field for field (the schema and the checks are
 * conv2d's). */
_Static_assert(sizeof(plm_sepconv2d_params) == sizeof(plm_conv2d_params) &&
                   offsetof(plm_sepconv2d_params, stride_x) ==
                       offsetof(plm_conv2d_params, stride_x) &&
                   offsetof(plm_sepconv2d_params, pad_y) == offsetof(plm_conv2d_params, pad_y) &&
                   offsetof(plm_sepconv2d_params, pad_x) == offsetof(plm_conv2d_params, pad_x) &&
                   offsetof(plm_sepconv2d_params, border) == offsetof(plm_conv2d_params, border),
               "plm_sepconv2d_params is laid out as plm_conv2d_params");

static plm_conv2d_params conv2d_params_of(const plm_sepconv2d_params *p) {
  return (plm_conv2d_params){.stride_y = p->stride_y,
                             .stride_x = p->stride_x,
                             .pad_y = p->pad_y,
                             .pad_x = p->pad_x,
                             .border = p->border};
}

/* kernel_x (KW) or (1, KW); kernel_y (KH) or (KH, 1): a 1-D kernel along the slot's axis,
 * *taps its length. */
static plm_status check_kernel_1d(const plm_tensor *kernel, const char *name, bool along_x,
                                  int64_t *taps) {
  const bool one_d = kernel->ndim == 1;
  const bool flat = kernel->ndim == 2 && kernel->dims[along_x ? 0 : 1] == 1;
  if (!one_d && !flat) {
    char dims[96] = "";
    for (int d = 0; d < kernel->ndim; d++)
      snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%lld", d ? ", " : "",
               (long long)kernel->dims[d]);
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is (%s): a 1-D kernel is %s or %s", name, dims,
                         along_x ? "(KW)" : "(KH)", along_x ? "(1, KW)" : "(KH, 1)");
  }
  *taps = one_d ? kernel->dims[0] : kernel->dims[along_x ? 1 : 0];
  if (*taps < 1 || *taps > PLM_CONV2D_MAX_KERNEL)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s has %lld taps; it must have 1..%d", name,
                         (long long)*taps, PLM_CONV2D_MAX_KERNEL);
  return PLM_OK;
}

/* The output's shape of checked operands. */
static plm_status sepconv2d_shape(const plm__op_call *call, plm_shape *shape) {
  int64_t kw = 0, kh = 0;
  plm_status status = check_kernel_1d(call->in[1], "kernel_x", true, &kw);
  if (status == PLM_OK) status = check_kernel_1d(call->in[2], "kernel_y", false, &kh);
  const plm_conv2d_params params = conv2d_params_of(call->params);
  if (status == PLM_OK) status = filter_shape(call->in[0], kh, kw, &params, shape);
  return status;
}

static plm_status sepconv2d_check(const plm__op_call *call) {
  if (!call->params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  const plm_conv2d_params params = conv2d_params_of(call->params);
  plm_status status = check_filter_params(&params, "sepconv2d");
  if (status == PLM_OK) status = check_image(call->in[0]);
  if (status != PLM_OK || !call->in[1] || !call->in[2]) return status;
  plm_shape shape;
  status = sepconv2d_shape(call, &shape);
  if (status != PLM_OK || !call->out[0]) return status;
  return check_filter_output(call->out[0], &shape, "the output of sepconv2d");
}

static plm_status sepconv2d_shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  return sepconv2d_shape(call, &out[0]);
}

static void sepconv2d_cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0];
  plm_shape shape;
  sepconv2d_shape(call, &shape); /* checked */
  double outputs = 1.0;
  for (int d = 0; d < shape.ndim; d++) outputs *= (double)shape.dims[d];
  /* Each needed input row is summed once under kernel_x: min(stride_y, KH) row sums an
   * output row's output, then KH terms down. */
  const plm_sepconv2d_params *params = call->params;
  const int64_t kw = plm_tensor_numel(call->in[1]), kh = plm_tensor_numel(call->in[2]);
  const int64_t rows = params->stride_y < kh ? params->stride_y : kh;
  *cost = (plm_op_cost){.bytes = (double)plm_tensor_numel(in) * (double)plm_dtype_size(in->dtype) +
                                 (double)(kh + kw) * 4.0 + outputs * 4.0,
                        .flops = 2.0 * outputs * (double)(kw * rows + kh)};
}

static void sepconv2d_pack(const plm_context *ctx, const plm__op_call *call, void *scratch,
                           void *args) {
  (void)ctx;
  (void)scratch;
  const plm_tensor *in = call->in[0], *out = call->out[0];
  const plm_sepconv2d_params *params = call->params;
  int64_t dims[3];
  image_dims(in, dims);
  *(plm__sepconv2d_args *)args = (plm__sepconv2d_args){.in = in->data,
                                                       .taps_x = call->in[1]->data,
                                                       .taps_y = call->in[2]->data,
                                                       .out = out->data,
                                                       .n = dims[0],
                                                       .h = dims[1],
                                                       .w = dims[2],
                                                       .ho = out->dims[out->ndim - 2],
                                                       .wo = out->dims[out->ndim - 1],
                                                       .dtype = in->dtype,
                                                       .kh = (int)plm_tensor_numel(call->in[2]),
                                                       .kw = (int)plm_tensor_numel(call->in[1]),
                                                       .stride_y = params->stride_y,
                                                       .stride_x = params->stride_x,
                                                       .pad_y = params->pad_y,
                                                       .pad_x = params->pad_x,
                                                       .border = params->border};
}

PLM__OP_KERNEL_ENTRIES(sepconv2d)

/* An image (f32 by default) under the 5-tap binomial across and the 3-tap one down,
 * "same" size (pad 1, 2; reflect101). */
static void sepconv2d_sample(const plm__op_sample_request *request, plm__op_sample *sample,
                             const plm__op_sample_data *data) {
  static const float taps_x[5] = {1 / 16.f, 4 / 16.f, 6 / 16.f, 4 / 16.f, 1 / 16.f};
  static const float taps_y[3] = {1 / 4.f, 2 / 4.f, 1 / 4.f};
  sample->in[0] = plm__sample_image(request, plm__sample_dtype(request, PLM_DTYPE_F32));
  sample->in[1] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 1, .dims = {5}};
  sample->in[2] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 1, .dims = {3}};
  sample->outputs = 1u;
  plm__op_params_default(&plm__op_sepconv2d, &sample->params);
  sample->params.sepconv2d.pad_y = 1;
  sample->params.sepconv2d.pad_x = 2;
  sample->params.sepconv2d.border = PLM_BORDER_REFLECT101;
  if (!data) return;
  uint64_t state = request->seed;
  plm__sample_uniform(&sample->in[0], data->in[0], &state);
  memcpy(data->in[1], taps_x, sizeof taps_x);
  memcpy(data->in[2], taps_y, sizeof taps_y);
}

const plm__op_desc plm__op_sepconv2d = {
    .name = "sepconv2d",
    .summary = "out = in cross-correlated with kernel_y x kernel_x, two 1-D passes, f32",
    .details =
        "f32 cross-correlation with the separable kernel `kernel_y[i] · kernel_x[j]` as two "
        "1-D passes, rows under `kernel_x` then columns under `kernel_y`, as OpenCV's "
        "`cv2.sepFilter2D` and `scipy.ndimage.correlate1d` along the last axis then the one "
        "before; KH + KW multiply-adds an output at stride 1 where conv2d takes KH · KW. "
        "Output shape, stride, pad and border as conv2d's (`include/plume/conv.h`).",
    .kind = PLM__OP_sepconv2d,
    .input_count = 3,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE},
               {.name = "kernel_x",
                .dtypes = PLM__DTYPE_MASK(F32),
                .shape = "(KW) or (1, KW), 1..31 taps",
                .role = PLM__IN_KERNEL,
                .finite = true,
                .kernel_axis = PLM__KERNEL_ALONG_X},
               {.name = "kernel_y",
                .dtypes = PLM__DTYPE_MASK(F32),
                .shape = "(KH) or (KH, 1), 1..31 taps",
                .role = PLM__IN_KERNEL,
                .finite = true,
                .kernel_axis = PLM__KERNEL_ALONG_Y}},
    .output_count = 1,
    .outputs = {{.name = "out", .dtypes = PLM__DTYPE_MASK(F32), .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm_sepconv2d_params),
    .param_count = sizeof conv2d_params / sizeof conv2d_params[0],
    .params = conv2d_params,
    .check = sepconv2d_check,
    .shapes = sepconv2d_shapes,
    .cost = sepconv2d_cost,
    .args_size = sizeof(plm__sepconv2d_args),
    .pack = sepconv2d_pack,
    .cpu = sepconv2d_cpu_entry,
    .cuda = PLM__CUDA_ENTRY(sepconv2d_cuda_entry),
    .sample = sepconv2d_sample,
};

/* ---- sobel ------------------------------------------------------------------------- */

plm_status plm__sobel_check_params(const plm_sobel_params *params, const char *prefix) {
  return check_border(params->border, prefix);
}

static plm_status sobel_check(const plm__op_call *call) {
  const plm_sobel_params *params = call->params;
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  plm_status status = plm__sobel_check_params(params, "params->");
  if (status == PLM_OK) status = check_image(call->in[0]);
  static const char *const names[3] = {"gx", "gy", "magnitude"};
  for (int o = 0; o < 3 && status == PLM_OK; o++) {
    if (!call->out[o]) continue;
    status = plm__op_check_output_like(call->in[0], "in", call->out[o], names[o], PLM_DTYPE_F32);
  }
  return status;
}

static plm_status sobel_shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  const plm_tensor *in = call->in[0];
  out[0] = plm__op_shape_like(in, PLM_DTYPE_F32);
  out[1] = out[2] = out[0];
  return PLM_OK;
}

/* gx 6, gy 7, the magnitude 4 (the square root counted as one); the outputs written. A
 * call without outputs (plm_sobel_cost) counts all three. */
static void sobel_cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0];
  double count = (double)plm_tensor_numel(in), written = 0.0;
  for (int o = 0; o < 3; o++) written += call->out[o] != NULL;
  if (written == 0.0) written = 3.0;
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + written * 4.0),
                        .flops = count * 17.0};
}

static void sobel_pack(const plm_context *ctx, const plm__op_call *call, void *scratch,
                       void *args) {
  (void)ctx;
  (void)scratch;
  const plm_tensor *in = call->in[0];
  const plm_sobel_params *params = call->params;
  int64_t dims[3];
  image_dims(in, dims);
  *(plm__sobel_args *)args =
      (plm__sobel_args){.in = in->data,
                        .gx = call->out[0] ? call->out[0]->data : NULL,
                        .gy = call->out[1] ? call->out[1]->data : NULL,
                        .magnitude = call->out[2] ? call->out[2]->data : NULL,
                        .n = dims[0],
                        .h = dims[1],
                        .w = dims[2],
                        .dtype = in->dtype,
                        .border = params->border};
}

static void sobel_cpu(const void *args) {
  plm__sobel_cpu(args);
}

#ifdef PLM_HAVE_CUDA
static plm_status sobel_cuda(void *stream, const void *args) {
  return plm__sobel_cuda(stream, args);
}
#endif

static const plm__op_param sobel_params[] = {
    {.name = "border",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(plm_sobel_params, border),
     .fallback = PLM_BORDER_REFLECT101,
     .choices = plm__border_names,
     .help = "pixels outside the image: reflect101 (dcb|abcd|cba), replicate (aaa|abcd|ddd) "
             "or zero"},
};

/* An image (u8 by default), the magnitude alone. */
static void sobel_sample(const plm__op_sample_request *request, plm__op_sample *sample,
                         const plm__op_sample_data *data) {
  sample->in[0] = plm__sample_image(request, plm__sample_dtype(request, PLM_DTYPE_U8));
  sample->outputs = 1u << 2;
  plm__op_params_default(&plm__op_sobel, &sample->params);
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_sobel = {
    .name = "sobel",
    .summary = "out = Sobel gradient magnitude sqrt(gx^2 + gy^2), f32",
    .details =
        "f32 gradient magnitude `sqrt(gx² + gy²)` of the 3x3 Sobel derivatives, as "
        "OpenCV's `cv2.Sobel` (ksize 3, its border as `border` says), the input's "
        "shape; gx and gy too when asked (`include/plume/conv.h`).",
    .kind = PLM__OP_sobel,
    .flags = PLM__OP_ONE_OUTPUT,
    .input_count = 1,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE}},
    .output_count = 3,
    .outputs =
        {{.name = "gx", .dtypes = PLM__DTYPE_MASK(F32), .optional = true, .role = PLM__OUT_UNMADE},
         {.name = "gy", .dtypes = PLM__DTYPE_MASK(F32), .optional = true, .role = PLM__OUT_UNMADE},
         {.name = "magnitude",
          .dtypes = PLM__DTYPE_MASK(F32),
          .optional = true,
          .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm_sobel_params),
    .param_count = sizeof sobel_params / sizeof sobel_params[0],
    .params = sobel_params,
    .check = sobel_check,
    .shapes = sobel_shapes,
    .cost = sobel_cost,
    .args_size = sizeof(plm__sobel_args),
    .pack = sobel_pack,
    .cpu = sobel_cpu,
    .cuda = PLM__CUDA_ENTRY(sobel_cuda),
    .sample = sobel_sample,
};

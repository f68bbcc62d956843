/* ops/conv.c: the conv2d and sobel operations (plume/conv.h). */
#include <stdint.h>

#include "kernels/common/conv.h"
#include "ops/op_internal.h"
#include "streams/error.h"

plm_conv2d_params plm_conv2d_params_default(void) {
  return (plm_conv2d_params){
      .stride_y = 1, .stride_x = 1, .pad_y = 0, .pad_x = 0, .border = PLM_BORDER_ZERO};
}

plm_sobel_params plm_sobel_params_default(void) {
  return (plm_sobel_params){.border = PLM_BORDER_REFLECT101};
}

/* prefix: how the message names the struct holding the field ("params->"). */
static plm_status check_border(plm_border border, const char *prefix) {
  if (border >= PLM_BORDER_ZERO && border <= PLM_BORDER_REFLECT101) return PLM_OK;
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%sborder %d is not a plm_border", prefix, (int)border);
}

/* An image operand: u8, u16 or f32, (H, W) or (N, H, W). */
static plm_status check_image(const plm_tensor *in) {
  if (in->dtype != PLM_DTYPE_U8 && in->dtype != PLM_DTYPE_U16 && in->dtype != PLM_DTYPE_F32)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "in->dtype %s is not u8, u16 or f32",
                         plm_dtype_name(in->dtype));
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

static plm_status check_conv2d_params(const plm_conv2d_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  if (params->stride_y < 1 || params->stride_x < 1)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "params->stride_y %d, stride_x %d: strides must be at least 1 "
                         "(plm_conv2d_params_default gives 1)",
                         params->stride_y, params->stride_x);
  if (params->pad_y < 0 || params->pad_x < 0 || params->pad_y > PLM_CONV2D_MAX_PAD ||
      params->pad_x > PLM_CONV2D_MAX_PAD)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "params->pad_y %d, pad_x %d: padding must be in 0..%d", params->pad_y,
                         params->pad_x, PLM_CONV2D_MAX_PAD);
  return check_border(params->border, "params->");
}

static plm_status check_kernel(const plm_tensor *kernel) {
  if (kernel->dtype != PLM_DTYPE_F32)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "kernel->dtype %s is not f32",
                         plm_dtype_name(kernel->dtype));
  if (kernel->ndim != 2)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "kernel->ndim %d is not 2 (KH, KW)", kernel->ndim);
  for (int d = 0; d < 2; d++)
    if (kernel->dims[d] < 1 || kernel->dims[d] > PLM_CONV2D_MAX_KERNEL)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "kernel is %lldx%lld; KH and KW must be in 1..%d",
                           (long long)kernel->dims[0], (long long)kernel->dims[1],
                           PLM_CONV2D_MAX_KERNEL);
  return PLM_OK;
}

/* Check everything but the tensors' memory and context; give the output's shape. */
static plm_status conv2d_shape(const plm_tensor *in, const plm_tensor *kernel,
                               const plm_conv2d_params *params, plm_shape *shape) {
  plm_status status = check_conv2d_params(params);
  if (status == PLM_OK) status = check_image(in);
  if (status == PLM_OK) status = check_kernel(kernel);
  if (status != PLM_OK) return status;
  int64_t dims[3];
  image_dims(in, dims);
  int64_t span_y = dims[1] + 2 * (int64_t)params->pad_y - kernel->dims[0];
  int64_t span_x = dims[2] + 2 * (int64_t)params->pad_x - kernel->dims[1];
  if (span_y < 0 || span_x < 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "in is %lldx%lld, padded by %d,%d, smaller than the %lldx%lld kernel: "
                         "no output pixel",
                         (long long)dims[1], (long long)dims[2], params->pad_y, params->pad_x,
                         (long long)kernel->dims[0], (long long)kernel->dims[1]);
  *shape = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = in->ndim};
  if (in->ndim == 3) shape->dims[0] = dims[0];
  shape->dims[in->ndim - 2] = span_y / params->stride_y + 1;
  shape->dims[in->ndim - 1] = span_x / params->stride_x + 1;
  return PLM_OK;
}

plm_status plm_conv2d_output(const plm_tensor *in, const plm_tensor *kernel,
                             const plm_conv2d_params *params, plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(in);
  PLM__REQUIRE_NOT_NULL(kernel);
  PLM__REQUIRE_NOT_NULL(out);
  return plm__propagate(conv2d_shape(in, kernel, params, out));
}

plm_status plm_conv2d_cost(const plm_tensor *in, const plm_tensor *kernel,
                           const plm_conv2d_params *params, plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(in);
  PLM__REQUIRE_NOT_NULL(kernel);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_shape shape;
  plm_status status = conv2d_shape(in, kernel, params, &shape);
  if (status != PLM_OK) return plm__propagate(status);
  double outputs = 1.0, taps = (double)(kernel->dims[0] * kernel->dims[1]);
  for (int d = 0; d < shape.ndim; d++) outputs *= (double)shape.dims[d];
  double inputs = (double)plm_tensor_numel(in);
  *cost = (plm_op_cost){
      .bytes = inputs * (double)plm_dtype_size(in->dtype) + taps * 4.0 + outputs * 4.0,
      .flops = 2.0 * outputs * taps};
  return PLM_OK;
}

static plm_status check_f32_output(const plm_tensor *out, const char *name) {
  if (out->dtype == PLM_DTYPE_F32) return PLM_OK;
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->dtype %s is not f32", name,
                       plm_dtype_name(out->dtype));
}

static void conv2d_task(const void *args) {
  plm__conv2d_cpu(args);
}

plm_status plm_conv2d(plm_stream *stream, const plm_tensor *in, const plm_tensor *kernel,
                      const plm_conv2d_params *params, plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm_shape shape;
  plm_status status = plm__op_check_tensor(stream, in, "in");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, kernel, "kernel");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, out, "out");
  if (status == PLM_OK) status = conv2d_shape(in, kernel, params, &shape);
  if (status == PLM_OK) status = check_f32_output(out, "out");
  if (status == PLM_OK) {
    plm_tensor expected = *out;
    expected.ndim = shape.ndim;
    for (int d = 0; d < shape.ndim; d++) expected.dims[d] = shape.dims[d];
    status = plm__op_check_same_dims(&expected, "the output of conv2d", out, "out");
  }
  if (status == PLM_OK) status = plm__op_check_disjoint(in, "in", out, "out");
  if (status == PLM_OK) status = plm__op_check_disjoint(kernel, "kernel", out, "out");
  if (status != PLM_OK) return plm__propagate(status);

  int64_t dims[3];
  image_dims(in, dims);
  plm__conv2d_args args = {.in = in->data,
                           .taps = kernel->data,
                           .out = out->data,
                           .n = dims[0],
                           .h = dims[1],
                           .w = dims[2],
                           .ho = shape.dims[shape.ndim - 2],
                           .wo = shape.dims[shape.ndim - 1],
                           .dtype = in->dtype,
                           .kh = (int)kernel->dims[0],
                           .kw = (int)kernel->dims[1],
                           .stride_y = params->stride_y,
                           .stride_x = params->stride_x,
                           .pad_y = params->pad_y,
                           .pad_x = params->pad_x,
                           .border = params->border};
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    PLM__OP_ON_DEVICE(stream, "conv2d", status, plm__conv2d_cuda(stream->handle, &args));
    return plm__propagate(status);
  }
#endif
  return plm__propagate(plm__op_launch_cpu(stream, conv2d_task, &args, sizeof args));
}

/* ---- sobel ------------------------------------------------------------------------- */

plm_status plm__sobel_check_params(const plm_sobel_params *params, const char *prefix) {
  return check_border(params->border, prefix);
}

static plm_status check_sobel_params(const plm_sobel_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  return plm__sobel_check_params(params, "params->");
}

plm_status plm_sobel_output(const plm_tensor *in, const plm_sobel_params *params, plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(in);
  PLM__REQUIRE_NOT_NULL(out);
  plm_status status = check_sobel_params(params);
  if (status == PLM_OK) status = check_image(in);
  if (status != PLM_OK) return plm__propagate(status);
  *out = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = in->ndim};
  for (int d = 0; d < in->ndim; d++) out->dims[d] = in->dims[d];
  return PLM_OK;
}

plm_status plm_sobel_cost(const plm_tensor *in, const plm_sobel_params *params, plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(in);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = check_sobel_params(params);
  if (status == PLM_OK) status = check_image(in);
  if (status != PLM_OK) return plm__propagate(status);
  double count = (double)plm_tensor_numel(in);
  /* gx 6, gy 7, the magnitude 4 (the square root counted as one). */
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + 3.0 * 4.0),
                        .flops = count * 17.0};
  return PLM_OK;
}

static void sobel_task(const void *args) {
  plm__sobel_cpu(args);
}

plm_status plm_sobel(plm_stream *stream, const plm_tensor *in, const plm_sobel_params *params,
                     plm_tensor *gx, plm_tensor *gy, plm_tensor *magnitude) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm_status status = plm__op_check_tensor(stream, in, "in");
  if (status == PLM_OK) status = check_sobel_params(params);
  if (status == PLM_OK) status = check_image(in);
  if (status == PLM_OK && !gx && !gy && !magnitude)
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "gx, gy and magnitude are all NULL");
  plm_tensor *outs[3] = {gx, gy, magnitude};
  const char *names[3] = {"gx", "gy", "magnitude"};
  for (int o = 0; o < 3 && status == PLM_OK; o++) {
    if (!outs[o]) continue;
    status = plm__op_check_tensor(stream, outs[o], names[o]);
    if (status == PLM_OK) status = check_f32_output(outs[o], names[o]);
    if (status == PLM_OK) status = plm__op_check_same_dims(in, "in", outs[o], names[o]);
    if (status == PLM_OK) status = plm__op_check_disjoint(in, "in", outs[o], names[o]);
    for (int p = 0; p < o && status == PLM_OK; p++)
      if (outs[p]) status = plm__op_check_disjoint(outs[p], names[p], outs[o], names[o]);
  }
  if (status != PLM_OK) return plm__propagate(status);

  int64_t dims[3];
  image_dims(in, dims);
  plm__sobel_args args = {.in = in->data,
                          .gx = gx ? gx->data : NULL,
                          .gy = gy ? gy->data : NULL,
                          .magnitude = magnitude ? magnitude->data : NULL,
                          .n = dims[0],
                          .h = dims[1],
                          .w = dims[2],
                          .dtype = in->dtype,
                          .border = params->border};
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    PLM__OP_ON_DEVICE(stream, "sobel", status, plm__sobel_cuda(stream->handle, &args));
    return plm__propagate(status);
  }
#endif
  return plm__propagate(plm__op_launch_cpu(stream, sobel_task, &args, sizeof args));
}

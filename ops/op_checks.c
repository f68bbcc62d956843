/* ops/op_checks.c: argument checks shared by the operations (op_internal.h). */
#include <stdint.h>
#include <stdio.h>

#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

plm_status plm__op_check_tensor(const plm_stream *stream, const plm_tensor *tensor,
                                const char *name) {
  if (!tensor) return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is NULL", name);
  if (!tensor->data) return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->data is NULL", name);
  if (plm_dtype_size(tensor->dtype) == 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->dtype %d is not a plm_dtype", name,
                         (int)tensor->dtype);
  if (tensor->ndim < 1 || tensor->ndim > PLM_TENSOR_MAX_DIMS)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->ndim %d is not in 1..%d", name, tensor->ndim,
                         PLM_TENSOR_MAX_DIMS);
  int64_t stride = 1;
  for (int d = tensor->ndim - 1; d >= 0; d--) {
    if (tensor->dims[d] < 1)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->dims[%d] is %lld", name, d,
                           (long long)tensor->dims[d]);
    if (tensor->strides[d] != stride)
      return plm__fail_raw(PLM_ERR_UNSUPPORTED,
                           "%s is not contiguous (strides[%d] is %lld, expected %lld)", name, d,
                           (long long)tensor->strides[d], (long long)stride);
    if (tensor->dims[d] > INT64_MAX / stride)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s's shape overflows", name);
    stride *= tensor->dims[d];
  }
  char data_name[96];
  snprintf(data_name, sizeof data_name, "%s->data", name);
  plm_status aligned = plm__tensor_check_data(tensor->data, tensor->dtype, data_name);
  if (aligned != PLM_OK) return aligned;
  if (tensor->ctx != stream->ctx)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s belongs to another context than stream", name);
  return PLM_OK;
}

plm_status plm__op_check_shape(const plm_tensor *tensor, const char *name) {
  if (!tensor) return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is NULL", name);
  if (plm_dtype_size(tensor->dtype) == 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->dtype %d is not a plm_dtype", name,
                         (int)tensor->dtype);
  if (tensor->ndim < 1 || tensor->ndim > PLM_TENSOR_MAX_DIMS)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->ndim %d is not in 1..%d", name, tensor->ndim,
                         PLM_TENSOR_MAX_DIMS);
  for (int d = 0; d < tensor->ndim; d++)
    if (tensor->dims[d] < 1)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->dims[%d] is %lld", name, d,
                           (long long)tensor->dims[d]);
  return PLM_OK;
}

plm_status plm__op_check_same_dims(const plm_tensor *a, const char *a_name, const plm_tensor *b,
                                   const char *b_name) {
  if (plm__dims_equal(a->dims, a->ndim, b->dims, b->ndim)) return PLM_OK;
  char a_shape[96], b_shape[96];
  plm__dims_text(a->dims, a->ndim, a_shape, sizeof a_shape);
  plm__dims_text(b->dims, b->ndim, b_shape, sizeof b_shape);
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is %s but %s is %s", b_name, b_shape, a_name,
                       a_shape);
}

plm_status plm__op_check_dtype(const plm_tensor *t, const char *name, unsigned mask) {
  if ((mask >> t->dtype) & 1u) return PLM_OK;
  char allowed[64];
  plm__dtype_mask_text(mask, allowed, sizeof allowed);
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->dtype %s is not %s", name,
                       plm_dtype_name(t->dtype), allowed);
}

plm_status plm__op_check_f32(const plm_tensor *t, const char *name, int ndim) {
  if (t->dtype != PLM_DTYPE_F32)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->dtype %s is not f32", name,
                         plm_dtype_name(t->dtype));
  if (ndim > 0 && t->ndim != ndim)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->ndim is %d, expected %d", name, t->ndim, ndim);
  return PLM_OK;
}

plm_status plm__op_check_frames(const plm_tensor *in, const char *op) {
  if (in->ndim < 2)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "in->ndim %d: %s needs (H, W) or (N, H, W)", in->ndim,
                         op);
  return PLM_OK;
}

plm_status plm__op_check_frame_map(const plm_tensor *t, const char *name, const plm_tensor *in) {
  const int64_t h = in->dims[in->ndim - 2], w = in->dims[in->ndim - 1];
  if (t->ndim == 2 && t->dims[0] == h && t->dims[1] == w) return PLM_OK;
  char shape[96];
  plm__dims_text(t->dims, t->ndim, shape, sizeof shape);
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is %s but in's frames are %lldx%lld", name, shape,
                       (long long)h, (long long)w);
}

plm_status plm__op_check_no_partial_overlap(const plm_tensor *a, const char *a_name,
                                            const plm_tensor *b, const char *b_name) {
  uintptr_t a_begin = (uintptr_t)a->data, b_begin = (uintptr_t)b->data;
  uintptr_t a_end = a_begin + plm_tensor_bytes(a), b_end = b_begin + plm_tensor_bytes(b);
  if ((a_begin == b_begin && a_end == b_end) || a_end <= b_begin || b_end <= a_begin) return PLM_OK;
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s overlaps %s without being the same memory", b_name,
                       a_name);
}

plm_status plm__op_check_disjoint(const plm_tensor *a, const char *a_name, const plm_tensor *b,
                                  const char *b_name) {
  uintptr_t a_begin = (uintptr_t)a->data, b_begin = (uintptr_t)b->data;
  uintptr_t a_end = a_begin + plm_tensor_bytes(a), b_end = b_begin + plm_tensor_bytes(b);
  if (a_end <= b_begin || b_end <= a_begin) return PLM_OK;
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s overlaps %s", b_name, a_name);
}

plm_status plm__op_check_output_like(const plm_tensor *in, const char *in_name,
                                     const plm_tensor *out, const char *out_name, plm_dtype dtype) {
  if (out->dtype != dtype)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->dtype %s is not %s", out_name,
                         plm_dtype_name(out->dtype), plm_dtype_name(dtype));
  return plm__op_check_same_dims(in, in_name, out, out_name);
}

void plm__op_kernel_extent(const plm__op_slot *slot, int ndim, const int64_t *dims, int *kh,
                           int *kw) {
  switch (slot->kernel_axis) {
    case PLM__KERNEL_2D:
      if (ndim != 2) return;
      *kh = (int)dims[0];
      *kw = (int)dims[1];
      return;
    case PLM__KERNEL_ALONG_X:
      if (ndim == 1 || (ndim == 2 && dims[0] == 1)) *kw = (int)dims[ndim - 1];
      return;
    case PLM__KERNEL_ALONG_Y:
      if (ndim == 1 || (ndim == 2 && dims[1] == 1)) *kh = (int)dims[0];
      return;
  }
}

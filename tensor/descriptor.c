/* tensor/descriptor.c: tensor descriptors (plume/tensor.h), and their text in messages
 * (plm__shape_text, plm__dims_text, plm__list_text: tensor_internal.h). */
#include "plume/tensor.h"

#include <stdint.h>
#include <stdio.h>

#include "streams/error.h"
#include "tensor/tensor_internal.h"

size_t plm_dtype_size(plm_dtype dtype) {
  switch (dtype) {
    case PLM_DTYPE_U8: return 1;
    case PLM_DTYPE_U16: return 2;
    case PLM_DTYPE_I32: return 4;
    case PLM_DTYPE_F32: return 4;
    case PLM_DTYPE_F64: return 8;
  }
  return 0;
}

const char *plm_dtype_name(plm_dtype dtype) {
  switch (dtype) {
    case PLM_DTYPE_U8: return "u8";
    case PLM_DTYPE_U16: return "u16";
    case PLM_DTYPE_I32: return "i32";
    case PLM_DTYPE_F32: return "f32";
    case PLM_DTYPE_F64: return "f64";
  }
  return "unknown";
}

int64_t plm_tensor_numel(const plm_tensor *tensor) {
  if (!tensor || tensor->ndim < 1 || tensor->ndim > PLM_TENSOR_MAX_DIMS) return 0;
  int64_t count = 1;
  for (int d = 0; d < tensor->ndim; d++) {
    if (tensor->dims[d] < 1 || tensor->dims[d] > INT64_MAX / count) return 0;
    count *= tensor->dims[d];
  }
  return count;
}

size_t plm_tensor_bytes(const plm_tensor *tensor) {
  const uint64_t count = (uint64_t)plm_tensor_numel(tensor);
  const uint64_t size = plm_dtype_size(tensor ? tensor->dtype : 0);
  return size && count <= (uint64_t)INT64_MAX / size ? (size_t)(count * size) : 0;
}

plm_tensor plm__tensor_describe(plm_context *ctx, const plm_shape *shape) {
  plm_tensor t = {.ctx = ctx, .dtype = shape->dtype, .ndim = shape->ndim};
  int64_t stride = 1;
  for (int d = shape->ndim - 1; d >= 0; d--) {
    t.dims[d] = shape->dims[d];
    t.strides[d] = stride;
    stride *= shape->dims[d];
  }
  return t;
}

plm_status plm__tensor_check_shape(plm_dtype dtype, int ndim, const int64_t *dims) {
  if (plm_dtype_size(dtype) == 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "dtype %d is not a plm_dtype", (int)dtype);
  if (ndim < 1 || ndim > PLM_TENSOR_MAX_DIMS)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "ndim %d is not in 1..%d", ndim, PLM_TENSOR_MAX_DIMS);
  /* Sizes are int64_t (plm_tensor_numel) and pointer offsets: at most INT64_MAX bytes. */
  uint64_t bytes = plm_dtype_size(dtype);
  for (int d = 0; d < ndim; d++) {
    if (dims[d] < 1)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "dims[%d] is %lld; dimensions must be >= 1", d,
                           (long long)dims[d]);
    if ((uint64_t)dims[d] > (uint64_t)INT64_MAX / bytes) {
      char shown[160];
      plm__dims_text(dims, ndim, shown, sizeof shown);
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "the shape %s of %s is more than INT64_MAX (2^63 - 1) bytes", shown,
                           plm_dtype_name(dtype));
    }
    bytes *= (uint64_t)dims[d];
  }
  return PLM_OK;
}

/* Check a shape and fill a contiguous descriptor (no data pointer yet). */
static plm_status describe(plm_context *ctx, plm_dtype dtype, int ndim, const int64_t *dims,
                           plm_tensor *out) {
  const plm_status status = plm__tensor_check_shape(dtype, ndim, dims);
  if (status != PLM_OK) return status;
  plm_shape shape = {.dtype = dtype, .ndim = ndim};
  for (int d = 0; d < ndim; d++) shape.dims[d] = dims[d];
  *out = plm__tensor_describe(ctx, &shape);
  return PLM_OK;
}

plm_status plm__tensor_check_data(const void *data, plm_dtype dtype, const char *name) {
  const size_t size = plm_dtype_size(dtype);
  const uintptr_t misaligned = size ? (uintptr_t)data % size : 0;
  if (misaligned == 0) return PLM_OK;
  return plm__fail_raw(PLM_ERR_INVALID_ARG,
                       "%s %p is not aligned to its %s elements' %zu bytes (it is %zu bytes past "
                       "a multiple): copy the data to aligned memory first",
                       name, data, plm_dtype_name(dtype), size, (size_t)misaligned);
}

plm_status plm_tensor_wrap(plm_context *ctx, void *data, plm_dtype dtype, int ndim,
                           const int64_t *dims, plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(out);
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(data);
  PLM__REQUIRE_NOT_NULL(dims);
  plm_status status = describe(ctx, dtype, ndim, dims, out);
  if (status == PLM_OK) status = plm__tensor_check_data(data, dtype, "data");
  if (status == PLM_OK) out->data = data;
  return plm__propagate(status);
}

plm_status plm_tensor_wrap_strided(plm_context *ctx, void *data, plm_dtype dtype, int ndim,
                                   const int64_t *dims, const int64_t *strides, plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(out);
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(data);
  PLM__REQUIRE_NOT_NULL(dims);
  plm_tensor tensor;
  plm_status status = describe(ctx, dtype, ndim, dims, &tensor);
  if (status == PLM_OK) status = plm__tensor_check_data(data, dtype, "data");
  if (status != PLM_OK) return plm__propagate(status);
  /* A dimension of 1 may have any stride: it is never stepped over. */
  bool compact = true;
  for (int d = 0; strides && d < ndim; d++)
    compact &= dims[d] == 1 || strides[d] == tensor.strides[d];
  if (!compact) {
    char given[128], wanted[128];
    plm__list_text(strides, ndim, given, sizeof given);
    plm__list_text(tensor.strides, ndim, wanted, sizeof wanted);
    return plm__fail(PLM_ERR_UNSUPPORTED,
                     "strides %s (in elements) are not compact row-major %s: plume's "
                     "operations need contiguous C-order memory; copy the tensor first",
                     given, wanted);
  }
  tensor.data = data;
  *out = tensor;
  return PLM_OK;
}

plm_status plm_tensor_alloc(plm_pool *pool, plm_stream *stream, plm_dtype dtype, int ndim,
                            const int64_t *dims, plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(out);
  PLM__REQUIRE_NOT_NULL(pool);
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REQUIRE_NOT_NULL(dims);
  plm_context *ctx = NULL;
  plm_pool_context(pool, &ctx);
  plm_tensor tensor;
  plm_status status = describe(ctx, dtype, ndim, dims, &tensor);
  if (status != PLM_OK) return plm__propagate(status);
  status = plm_pool_alloc(pool, plm_tensor_bytes(&tensor), stream, &tensor.data);
  if (status != PLM_OK) return status; /* plm_pool_alloc named itself */
  *out = tensor;
  return PLM_OK;
}

plm_status plm_tensor_free(plm_pool *pool, plm_stream *stream, plm_tensor *tensor) {
  PLM__REQUIRE_NOT_NULL(tensor);
  plm_status status = plm_pool_free(pool, tensor->data, stream);
  if (status == PLM_OK) tensor->data = NULL;
  return status;
}

/* ---- text for messages ---------------------------------------------------------------- */

void plm__dims_text(const int64_t *dims, int ndim, char *text, size_t size) {
  size_t used = 0;
  text[0] = '\0';
  for (int d = 0; d < ndim && used < size; d++)
    used += (size_t)snprintf(text + used, size - used, d ? "x%lld" : "%lld", (long long)dims[d]);
}

void plm__list_text(const int64_t *values, int n, char *text, size_t size) {
  size_t used = (size_t)snprintf(text, size, "[");
  for (int i = 0; i < n && used < size; i++)
    used += (size_t)snprintf(text + used, size - used, i ? ", %lld" : "%lld", (long long)values[i]);
  if (used < size) snprintf(text + used, size - used, "]");
}

bool plm__dims_equal(const int64_t *a, int a_ndim, const int64_t *b, int b_ndim) {
  if (a_ndim != b_ndim) return false;
  for (int d = 0; d < a_ndim; d++)
    if (a[d] != b[d]) return false;
  return true;
}

bool plm__shape_equal(const plm_shape *a, const plm_shape *b) {
  return a->dtype == b->dtype && plm__dims_equal(a->dims, a->ndim, b->dims, b->ndim);
}

bool plm__tensor_has_shape(const plm_tensor *tensor, const plm_shape *shape) {
  return tensor->dtype == shape->dtype &&
         plm__dims_equal(tensor->dims, tensor->ndim, shape->dims, shape->ndim);
}

void plm__shape_text(const plm_shape *shape, char *text, size_t size) {
  int used = snprintf(text, size, "%s ", plm_dtype_name(shape->dtype));
  if (used > 0 && (size_t)used < size)
    plm__dims_text(shape->dims, shape->ndim, text + used, size - (size_t)used);
}

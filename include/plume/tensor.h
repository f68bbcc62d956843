/* plume/tensor.h: tensors, the operands of operations.
 *
 * A tensor describes memory; it does not own it. It names its context (the memory
 * is that context's device memory: on cuda, GPU memory; on host, ordinary memory),
 * an element type, up to four dimensions and row-major strides counted in
 * elements. Images are (H, W); a stack of N frames is (N, H, W), and operations
 * process the N frames of a stack in one call.
 *
 * plm_tensor_alloc takes the memory from a pool in stream order and
 * plm_tensor_free gives it back (plume/pool.h); plm_tensor_wrap describes memory
 * the application already has. These calls are thread-safe and do not block
 * (beyond what the pool documents).
 */
#ifndef PLUME_TENSOR_H
#define PLUME_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "plume/context.h"
#include "plume/export.h"
#include "plume/pool.h"
#include "plume/status.h"
#include "plume/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum plm_dtype {
  PLM_DTYPE_U8 = 1,  /* uint8_t */
  PLM_DTYPE_U16 = 2, /* uint16_t */
  PLM_DTYPE_I32 = 3, /* int32_t */
  PLM_DTYPE_F32 = 4, /* float */
  PLM_DTYPE_F64 = 5  /* double: tables of results (plume/label.h's regions) */
} plm_dtype;

enum { PLM_TENSOR_MAX_DIMS = 4 };

typedef struct plm_tensor {
  plm_context *ctx; /* whose device memory `data` is */
  void *data;
  plm_dtype dtype;
  int ndim; /* 1..PLM_TENSOR_MAX_DIMS */
  int64_t dims[PLM_TENSOR_MAX_DIMS];
  int64_t strides[PLM_TENSOR_MAX_DIMS]; /* in elements; row-major contiguous when made here */
} plm_tensor;

/* Bytes per element (0 for an unknown dtype), and a name ("u8", "u16", "i32",
 * "f32", "f64"; "unknown"). */
PLM_API size_t plm_dtype_size(plm_dtype dtype);
PLM_API const char *plm_dtype_name(plm_dtype dtype);

/* Describe contiguous row-major memory at data. Errors: PLM_ERR_INVALID_ARG (NULL
 * out, ctx, data or dims; unknown dtype; ndim outside 1..4; a dimension < 1; a shape of
 * more than INT64_MAX bytes; data not aligned to the element size, such as f32 data at
 * an odd address: the kernels load whole elements, so copy such data to aligned memory
 * first). The operations refuse a tensor whose data is not aligned in the same way. */
PLM_API plm_status plm_tensor_wrap(plm_context *ctx, void *data, plm_dtype dtype, int ndim,
                                   const int64_t *dims, plm_tensor *out);

/* plm_tensor_wrap for memory described with strides (in elements, as NumPy's divided by
 * the item size, DLPack's and CuPy's), checked: the operations need compact row-major
 * memory, so strides must be exactly those of a contiguous C-order array (a dimension of
 * 1 may have any stride); NULL strides mean contiguous. The tensor gets the contiguous
 * strides. Errors: those of plm_tensor_wrap, and PLM_ERR_UNSUPPORTED for other strides,
 * with a message giving them and the ones expected. */
PLM_API plm_status plm_tensor_wrap_strided(plm_context *ctx, void *data, plm_dtype dtype, int ndim,
                                           const int64_t *dims, const int64_t *strides,
                                           plm_tensor *out);

/* Allocate a contiguous tensor from pool for use on stream (plm_pool_alloc's
 * contract). Errors: those of plm_tensor_wrap and plm_pool_alloc. */
PLM_API plm_status plm_tensor_alloc(plm_pool *pool, plm_stream *stream, plm_dtype dtype, int ndim,
                                    const int64_t *dims, plm_tensor *out);

/* Give a tensor from plm_tensor_alloc back to its pool in stream order, and clear
 * its data pointer. Errors: those of plm_pool_free. */
PLM_API plm_status plm_tensor_free(plm_pool *pool, plm_stream *stream, plm_tensor *tensor);

/* Number of elements, and bytes (elements x element size) of a tensor's shape; 0 for a
 * shape no wrap accepts (a dimension < 1, more than INT64_MAX elements or bytes). */
PLM_API int64_t plm_tensor_numel(const plm_tensor *tensor);
PLM_API size_t plm_tensor_bytes(const plm_tensor *tensor);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_TENSOR_H */

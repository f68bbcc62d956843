/* tensor/tensor_internal.h: the tensor model's internal functions (tensor/descriptor.c):
 * descriptions of tensors that hold no data, the checks of a user's shape and data, and
 * shapes as text for messages. The ops (ops/op_internal.h includes this header), the
 * pipeline and DLPack (tensor/dlpack_exchange.c) use them; nothing here knows an op.
 */
#ifndef PLUME_TENSOR_TENSOR_INTERNAL_H
#define PLUME_TENSOR_TENSOR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/context.h"
#include "plume/ops.h" /* plm_shape */
#include "plume/status.h"
#include "plume/tensor.h"

/* A contiguous description of a tensor of this shape on ctx (NULL: none), no data: what
 * the ops' shape, check and cost functions take for a tensor not allocated (a plan's, a
 * call being priced). The shape is taken as it is (tensor/descriptor.c checks a user's). */
plm_tensor plm__tensor_describe(plm_context *ctx, const plm_shape *shape);

/* Whether a shape is one plm_tensor_wrap takes: a known dtype, ndim in 1..4, every
 * dimension >= 1, at most INT64_MAX bytes; else PLM_ERR_INVALID_ARG saying which (raised
 * with plm__fail_raw). */
plm_status plm__tensor_check_shape(plm_dtype dtype, int ndim, const int64_t *dims);

/* Whether data is aligned to dtype's element size (the kernels load whole elements:
 * f32 data at +2 bytes is refused, as NumPy's np.frombuffer(..., offset=1) would give);
 * else PLM_ERR_INVALID_ARG naming `name`, the address and how far it is off. Raised with
 * plm__fail_raw: the caller names itself. */
plm_status plm__tensor_check_data(const void *data, plm_dtype dtype, const char *name);

/* Whether two lists of dims are the same: the rank and every dimension. */
bool plm__dims_equal(const int64_t *a, int a_ndim, const int64_t *b, int b_ndim);

/* Whether two shapes are the same: the dtype, the rank and every dimension. */
bool plm__shape_equal(const plm_shape *a, const plm_shape *b);

/* Whether tensor's dtype, rank and dims are shape's (its data and strides aside). */
bool plm__tensor_has_shape(const plm_tensor *tensor, const plm_shape *shape);

/* "f32 32x40": a shape's dtype and dims, for messages (at most size bytes, terminated). */
void plm__shape_text(const plm_shape *shape, char *text, size_t size);

/* "32x40": the dims alone. */
void plm__dims_text(const int64_t *dims, int ndim, char *text, size_t size);

/* "[12, 4, 1]": a list of n values (strides, a DLPack shape). */
void plm__list_text(const int64_t *values, int n, char *text, size_t size);

#endif /* PLUME_TENSOR_TENSOR_INTERNAL_H */

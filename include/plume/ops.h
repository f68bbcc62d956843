/* plume/ops.h: operations on tensors.
 *
 * Every operation follows one pattern:
 *   plm_<op>(stream, inputs..., &params, outputs...)  enqueue the op on stream;
 *       asynchronous, like a copy: the tensors' memory must stay valid until the
 *       stream has run it. Arguments are checked before anything is enqueued; a bad
 *       argument returns its status with a message and enqueues nothing.
 *   plm_<op>_output(inputs..., &params, &shape)  the output's dtype and shape;
 *   plm_<op>_cost(inputs..., &params, &cost)     bytes moved and arithmetic done, for
 *       roofline figures.
 * Inputs and outputs are tensors of the stream's context with row-major
 * contiguous layout; a leading batch dimension (N, H, W) runs N frames at once.
 * Semantics are pinned to a public reference, named with each op; the tests check
 * them against a float64 reference on both backends. All functions are
 * thread-safe.
 */
#ifndef PLUME_OPS_H
#define PLUME_OPS_H

#include "plume/export.h"
#include "plume/status.h"
#include "plume/stream.h"
#include "plume/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an op reads and writes, and the arithmetic it does. */
typedef struct plm_op_cost {
  double bytes; /* bytes read plus bytes written, at least once each */
  double flops; /* arithmetic operations (a comparison counts as one) */
} plm_op_cost;

/* The dtype and shape of an op's output. */
typedef struct plm_shape {
  plm_dtype dtype;
  int ndim;
  int64_t dims[PLM_TENSOR_MAX_DIMS];
} plm_shape;

/* ---- threshold ----------------------------------------------------------------------
 * out = (in CMP value) ? 1 : 0, as numpy's `(in > value).astype(np.uint8)` (and >=,
 * <, <=) and OpenCV's cv2.threshold(in, value, 1, THRESH_BINARY) for gt. in is u8,
 * u16 or f32; out is u8 of in's shape (it may be in itself when in is u8). The
 * comparison is made in double precision, so every u8, u16 and f32 value compares
 * exactly; NaN compares false (out 0). value must not be NaN. */

typedef enum plm_compare {
  PLM_COMPARE_GT = 0, /* in > value (the default) */
  PLM_COMPARE_GE = 1, /* in >= value */
  PLM_COMPARE_LT = 2, /* in < value */
  PLM_COMPARE_LE = 3  /* in <= value */
} plm_compare;

typedef struct plm_threshold_params {
  double value;
  plm_compare compare;
} plm_threshold_params;

PLM_API plm_status plm_threshold(plm_stream *stream, const plm_tensor *in,
                                 const plm_threshold_params *params, plm_tensor *out);
PLM_API plm_status plm_threshold_output(const plm_tensor *in, const plm_threshold_params *params,
                                        plm_shape *out);
PLM_API plm_status plm_threshold_cost(const plm_tensor *in, const plm_threshold_params *params,
                                      plm_op_cost *cost);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_OPS_H */

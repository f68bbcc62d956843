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
 * These, plm_<op>_params_default() and the typed pipeline builder are declared for every
 * op from one list, in plume/op_functions.h; each op's header states what it computes.
 * Inputs and outputs are tensors of the stream's context with row-major
 * contiguous layout; a leading batch dimension (N, H, W) runs N frames at once.
 * Semantics are pinned to a public reference, named with each op; the tests check
 * them against a float64 reference on both backends. All functions are
 * thread-safe.
 *
 * Each family of operations has a header of its own, included by plume/plume.h:
 * plume/threshold.h (threshold), plume/conv.h (conv2d, sobel), plume/entropy.h
 * (local entropy), plume/label.h (label, regions), plume/segment.h (segment),
 * plume/fused.h (sobel -> entropy -> threshold in one pass), plume/matmul.h (matmul
 * with bias and activation), plume/lstm.h (an LSTM cell step), plume/dendritic.h
 * (neurons with nonlinear dendrites), plume/vector.h (vector_add, vector_add_batched,
 * dot), plume/forecast.h (ar_forecast), plume/cfar.h (cell-averaging CFAR detection),
 * plume/nuc.h (non-uniformity correction), plume/badpixel.h (bad-pixel replacement),
 * plume/background.h (temporal background suppression: the one op with a state),
 * plume/abs_diff.h (frame differencing), plume/scale_offset.h (a linear map of the values).
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

#ifdef __cplusplus
}
#endif

#endif /* PLUME_OPS_H */

/* plume/abs_diff.h: the absolute difference of two frames (conventions in plume/ops.h). */
#ifndef PLUME_ABS_DIFF_H
#define PLUME_ABS_DIFF_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- abs_diff -----------------------------------------------------------------------
 * Frame differencing: out = |in - ref| element by element, as OpenCV's
 *   cv2.absdiff(in, ref)
 * for u8 and u16 (saturating, which for two values of one unsigned type never clips: the
 * difference is exact) and numpy's np.abs(in - ref) for f32 (the difference rounded to f32,
 * then its magnitude; NaN propagates). Both backends compute fabsf((float)in - (float)ref)
 * (kernels/common/map/abs_diff.h), exact for u8 and u16, so host and cuda give the same bits.
 *
 * Shapes: in and ref are u8, u16 or f32, one dtype and one shape (1 to 4 dims). out has
 * their dtype and shape; it may be in or ref itself (in place), else it must not overlap
 * them.
 *
 * Errors (PLM_ERR_INVALID_ARG, the message names the operand): a NULL operand; in of
 * another dtype; ref of another dtype or shape than in; out of another dtype or shape, or
 * overlapping in or ref without being exactly one of them. */
/* plm_abs_diff_cost: bytes = in, ref and out per element; flops = 2 per element (a subtraction, a
 * magnitude). */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_ABS_DIFF_H */

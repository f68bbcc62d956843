/* plume/scale_offset.h: a linear map of the pixel values (conventions in plume/ops.h). */
#ifndef PLUME_SCALE_OFFSET_H
#define PLUME_SCALE_OFFSET_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- scale_offset ----------------------------------------------------------------------
 * out = in * scale + offset element by element, in f32: counts to radiance or temperature
 * with a sensor's linear calibration, a frame rescaled for display. The product and the sum
 * are exact and rounded once to f32 (a fused multiply-add, fmaf, on both backends: the same
 * bits), which is numpy's
 *   (in.astype(np.float64) * scale + offset).astype(np.float32)
 * whenever that double sum is exact (always for u8 and u16 inputs of moderate scale and
 * offset; the fixtures hold such cases), and OpenCV's
 *   cv2.convertScaleAbs(in, alpha=scale, beta=offset)
 * without its absolute value and its rounding to u8. NaN and infinities propagate as IEEE
 * arithmetic says (inf * 0 is NaN).
 *
 * Shapes: in is u8, u16 or f32 (1 to 4 dims); out is f32 of in's shape, and may be in
 * itself when in is f32 (in place), else it must not overlap in.
 *
 * Errors (PLM_ERR_INVALID_ARG, the message names the operand or field): a NULL operand or
 * params; scale or offset not finite; in of another dtype; out not f32, of another shape,
 * or overlapping in without being it. */
typedef struct plm_scale_offset_params {
  float scale;  /* default 1 */
  float offset; /* default 0 */
} plm_scale_offset_params;

/* plm_scale_offset_cost: bytes = in's and out's (4) per element; flops = 2 per element (a
 * multiply and an add, fused). */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_SCALE_OFFSET_H */

/* plume/nuc.h: non-uniformity correction (conventions in plume/ops.h). */
#ifndef PLUME_NUC_H
#define PLUME_NUC_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- nuc ----------------------------------------------------------------------------
 * The two-point non-uniformity correction of a focal-plane array: each pixel's own gain
 * and offset, measured once for the sensor, applied to every frame:
 *   out(..., y, x) = gain(y, x) * in(..., y, x) + offset(y, x)
 * computed as fmaf(gain, (float)in, offset) on both backends: the exact value rounded once
 * to f32 (u8 and u16 values are exact in f32), so the host and cuda give the same bits.
 * The fixtures check it against the exact result rounded to f32 (Python fractions), which
 * is within one f32 ulp of numpy's float64 gain * x + offset rounded to f32; tolerance 0.
 * NaN and infinities propagate as IEEE arithmetic says. A pipeline's text refuses a named
 * gain or offset that holds one (plm_pipeline_parse_with_tensors): one NaN in a calibration
 * would silently blank a pixel of every frame, and every detection downstream of it.
 *
 * Shapes: in is u8, u16 or f32 with 2 to 4 dims; the last two are (H, W) and the leading
 * ones count frames, all corrected with the same calibration. gain and offset are f32
 * (H, W). out is f32 of in's shape; it may be in itself when in is f32 (in place), else it
 * must not overlap any input.
 *
 * Errors (PLM_ERR_INVALID_ARG, the message names the operand): a NULL operand; in of
 * another dtype or 1 dim; gain or offset not f32 or not (H, W) of in's frames; out not f32,
 * of another shape, or overlapping an input other than in exactly. */
/* plm_nuc_cost: bytes = in, out, gain and offset (8 bytes) per pixel; flops = 2 per pixel (one
 * fused multiply-add). */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_NUC_H */

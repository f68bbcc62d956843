/* plume/clip.h: pixel values limited to a range (conventions in plume/ops.h). */
#ifndef PLUME_CLIP_H
#define PLUME_CLIP_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- clip ------------------------------------------------------------------------------
 * out = min(max(in, lo), hi) element by element, in f32: a frame limited to a sensor's
 * valid range or a display window before scaling, saturated pixels held at the range's
 * ends. numpy's
 *   np.clip(in.astype(np.float32), np.float32(lo), np.float32(hi))
 * exactly (a comparison and a choice, no rounding: u8 and u16 values are exact in f32);
 * NaN propagates (numpy's maximum and minimum return the NaN), and an infinite lo or hi
 * leaves that side open.
 *
 * Shapes: in is u8, u16 or f32 (1 to 4 dims); out is f32 of in's shape, and may be in
 * itself when in is f32 (in place), else it must not overlap in.
 *
 * Errors (PLM_ERR_INVALID_ARG, the message names the operand or field): a NULL operand or
 * params; lo or hi NaN, or lo > hi; in of another dtype; out not f32, of another shape, or
 * overlapping in without being it. */
typedef struct plm_clip_params {
  float lo; /* required (0 in plm_clip_params_default); -INFINITY: no lower limit */
  float hi; /* required (0 in plm_clip_params_default); INFINITY: no upper limit */
} plm_clip_params;

/* plm_clip_cost: bytes = in's and out's (4) per element; flops = 2 per element (two
 * comparisons). */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_CLIP_H */

/* plume/background.h: temporal background suppression, a stateful operation
 * (conventions in plume/ops.h). */
#ifndef PLUME_BACKGROUND_H
#define PLUME_BACKGROUND_H

#include <stdbool.h>

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- background ----------------------------------------------------------------------
 * A staring sensor's scene changes slowly; what moves, or appears, does not. background
 * keeps a per-pixel estimate b of the scene and gives each frame's difference from it:
 *
 *   out_t = x_t - b_{t-1}                        (f32)
 *   ema:    b_t = b_{t-1} + alpha (x_t - b_{t-1})   = (1 - alpha) b_{t-1} + alpha x_t
 *   median: b_t = b_{t-1} + step sign(x_t - b_{t-1})   (the running-median approximation
 *           of McFarlane and Schofield: b walks towards x by `step` a frame, so it
 *           settles on the median of the recent values and ignores brief outliers)
 *
 * and the first frame initialises the state: b_0 = x_0, out_0 = 0. Every value is f32:
 * d = x - b is rounded once, then ema computes fmaf(alpha, d, b) (the exact value rounded
 * once) and median b + step or b - step (b when d is 0), so the host and cuda give the same
 * bits. The fixtures check it against an exact rational model of these roundings (Python
 * fractions), which stays within 1e-5 relative of numpy's float64 recurrence on their
 * frames (tests/fixtures/make_fixtures.py).
 *
 * Values that are not numbers. An x that is NaN or infinite gives out = x - b and leaves b
 * as it was, so one bad frame of a pixel does not poison its background. A b that is not
 * finite (a first frame that was not) is re-initialised by the pixel's next finite x
 * (b = x, out = 0).
 *
 * State. The state is b, an f32 (H, W) tensor. A call processes in's frames in order,
 * continuing from `state` when `first` is false, or initialising it from in's first
 * frame when `first` is true (state's old values are not read). state may be NULL: the
 * frames then start from a fresh background (first must be true) kept in scratch memory
 * from the context's default pool for the call. In a pipeline the state belongs to the
 * compiled pipeline (plume/pipeline.h: plm_pipeline_reset_state).
 *
 * Parameters: mode, PLM_BACKGROUND_EMA (default) or PLM_BACKGROUND_MEDIAN (the text form's
 * mode=ema|median); alpha, ema's weight of the new frame, in (0, 1] (default 0.05: a time
 * constant of about 20 frames); step, median's change per frame, finite and > 0 (default
 * 1, in the input's units).
 *
 * Shapes: in is u8, u16 or f32 with 2 to 4 dims; the last two are (H, W) and the leading
 * ones count frames, processed in order (row-major over the leading dims). out is f32 of
 * in's shape and may be in itself when in is f32 (in place); state must not overlap in or
 * out.
 *
 * Errors (PLM_ERR_INVALID_ARG, the message names the operand or field): params NULL;
 * mode not a plm_background_mode; alpha outside (0, 1]; step not finite or <= 0; in of
 * another dtype or 1 dim; out not f32, of another shape, or overlapping an input other
 * than in exactly; state not f32 (H, W) of in's frames, or overlapping in or out; state
 * NULL with first false. With state NULL the op takes 4 H W bytes of scratch from the
 * context's default pool in stream order (PLM_ERR_OUT_OF_MEMORY when it has none). */

typedef enum plm_background_mode {
  PLM_BACKGROUND_EMA = 0,   /* exponential moving average */
  PLM_BACKGROUND_MEDIAN = 1 /* running-median approximation */
} plm_background_mode;

typedef struct plm_background_params {
  plm_background_mode mode;
  float alpha; /* ema: (0, 1] */
  float step;  /* median: > 0 */
} plm_background_params;

/* plm_background_params_default: The defaults of the operation's parameter schema (ops/op_desc.h):
 * mode ema, alpha 0.05, step 1. */

PLM_API plm_status plm_background(plm_stream *stream, const plm_tensor *in, plm_tensor *state,
                                  bool first, const plm_background_params *params, plm_tensor *out);
/* plm_background_cost: bytes = in, out, and the state read and written (8 bytes) per pixel; flops =
 * 3 per pixel (the difference and a fused multiply-add, or a compare and an add). */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_BACKGROUND_H */

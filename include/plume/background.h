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
 * and the first frame initialises the state: b_0 = x_0, out_0 = 0.
 *
 * The gate (gate > 0; off by default). A plume that lingers on a pixel would fade into b
 * and lose its contrast; the gate slows b where the frame stands out from it. Each pixel
 * then also keeps v, the running mean of the squared difference d = x_t - b_{t-1}:
 *
 *   gated = v_{t-1} > 0 and d^2 > gate^2 v_{t-1}   (|d| beyond gate times its rms)
 *   b_t   = as above, with alpha (ema) or step (median) times gate_rate where gated
 *   v_t   = v_{t-1} + alpha (d^2 - v_{t-1}),   v_0 = 0 (no spread seen yet: never gated)
 *
 * a per-pixel stand-in, without feedback from the detector, for the masked update of
 * detection chains that slow the background near their detections: a target stands out
 * by several rms of its pixel, noise rarely does, and a change of the scene (a cloud's
 * edge, the sensor's drift) raises v and opens the gate again.
 *
 * The hold (hold not NULL; off by default). The masked update itself: hold is a u8 (H, W)
 * map of pixels to hold, such as the previous frame's detections, and b moves at hold_rate
 * of its pace (alpha or step times hold_rate) at every pixel within hold_radius steps of a
 * nonzero one, counted as |row - r| + |col - c| <= hold_radius (the pixels
 * scipy.ndimage.binary_dilation(hold, iterations=hold_radius) sets, its cross-shaped
 * structure; 0: the nonzero pixels alone). A pixel both gated and held moves at the smaller
 * rate (alpha times min(gate_rate, hold_rate), rounded once). The hold slows b only: v, the
 * first frame's b and out are as without it. Every frame of a stack reads the same hold. In f32: d^2 is rounded
 * (and capped at FLT_MAX), gate^2 v rounded, and v updated by fmaf(alpha, d^2 - v, v);
 * the gated rate is alpha * gate_rate (or step * gate_rate) rounded once. Both backends give
 * the same bits. Every value is f32:
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
 * State. The state is b, an f32 (H, W) tensor; with a gate, b and v, an f32 (2, H, W) tensor
 * (plane 0 b, plane 1 v). A call processes in's frames in order,
 * continuing from `state` when `first` is false, or initialising it from in's first
 * frame when `first` is true (state's old values are not read). state may be NULL: the
 * frames then start from a fresh background (first must be true) kept in scratch memory
 * from the context's default pool for the call (4 H W bytes, 8 H W with a gate). In a pipeline the
 * state belongs to the compiled pipeline (plume/pipeline.h: plm_pipeline_reset_state).
 *
 * Parameters: mode, PLM_BACKGROUND_EMA (default) or PLM_BACKGROUND_MEDIAN (the text form's
 * mode=ema|median); alpha, ema's weight of the new frame, in (0, 1] (default 0.05: a time
 * constant of about 20 frames); step, median's change per frame, finite and > 0 (default
 * 1, in the input's units); gate, in rms of the pixel's difference, finite and >= 0
 * (default 0: no gate; at most 1e18); gate_rate, the fraction of alpha or step kept where
 * gated, in [0, 1] (default 0.3); hold_rate, the fraction kept where held, in [0, 1]
 * (default 0.3); hold_radius, 0 to 8 (default 2). The text form names the hold as a
 * tensor, `background hold=@mask`, or as the previous frame's output of an element named
 * det further down the chain, `background hold=~det` (plume/pipeline.h: feedback).
 *
 * Shapes: in is u8, u16 or f32 with 2 to 4 dims; the last two are (H, W) and the leading
 * ones count frames, processed in order (row-major over the leading dims). hold, when
 * given, is u8 (H, W). out is f32 of in's shape and may be in itself when in is f32 (in
 * place); state must not overlap in, hold or out, nor hold out.
 *
 * Errors (PLM_ERR_INVALID_ARG, the message names the operand or field): params NULL;
 * mode not a plm_background_mode; alpha outside (0, 1]; step not finite or <= 0; gate
 * outside [0, 1e18], gate_rate or hold_rate outside [0, 1], hold_radius outside [0, 8];
 * in of another dtype or 1 dim; hold not u8 (H, W); out not f32, of another shape, or
 * overlapping an input other than in exactly; state not f32 (H, W) of in's frames ((2, H, W) with a gate), or
 * overlapping in or out; state NULL with first false. With state NULL the op takes its
 * state as scratch from the context's default pool in stream order (PLM_ERR_OUT_OF_MEMORY
 * when it has none). */

typedef enum plm_background_mode {
  PLM_BACKGROUND_EMA = 0,   /* exponential moving average */
  PLM_BACKGROUND_MEDIAN = 1 /* running-median approximation */
} plm_background_mode;

typedef struct plm_background_params {
  plm_background_mode mode;
  float alpha;     /* ema: (0, 1] */
  float step;      /* median: > 0 */
  float gate;      /* >= 0, in rms of the pixel's difference; 0: no gate */
  float gate_rate; /* [0, 1]: the fraction of alpha or step kept where gated */
  float hold_rate; /* [0, 1]: the fraction of alpha or step kept where held (a hold given) */
  int hold_radius; /* 0..8: the steps from a held pixel that its hold reaches */
} plm_background_params;

/* plm_background_params_default: The defaults of the operation's parameter schema (ops/op_desc.h):
 * mode ema, alpha 0.05, step 1, gate 0 (none), gate_rate 0.3, hold_rate 0.3, hold_radius 2. */

PLM_API plm_status plm_background(plm_stream *stream, const plm_tensor *in, const plm_tensor *hold,
                                  plm_tensor *state, bool first,
                                  const plm_background_params *params, plm_tensor *out);
/* plm_background_cost: bytes = in, out, and the state read and written (8 bytes, 16 with a gate)
 * per pixel, and with a hold its byte per pixel; flops = 3 per pixel (the difference and a fused
 * multiply-add, or a compare and an add), 8 with a gate (the square, its cap, the compare's
 * product and v's update). */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_BACKGROUND_H */

/* plume/cfar.h: cell-averaging CFAR detection (conventions in plume/ops.h). */
#ifndef PLUME_CFAR_H
#define PLUME_CFAR_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- cfar ---------------------------------------------------------------------------
 * Cell-averaging constant-false-alarm-rate detection: each pixel is compared with the
 * statistics of the cells around it. Matches a float64 numpy reference of cell-averaging
 * CFAR; scipy.ndimage.uniform_filter-based sums (tests/fixtures/make_fixtures.py).
 *
 * Reference cells of (y, x): the window x window square centred on (y, x) minus the
 * centred guard x guard square (which holds the pixel itself), each cell inside the
 * image; cells outside the image are left out, so border pixels have fewer (n = w^2 - g^2
 * inside). Over those n cells:
 *   mean = sum / n,  std = sqrt(sum (v - mean)^2 / n)   (the population std, ddof = 0)
 *   output = mask:  (x - mean) > k * std   as u8 0/1 (the default)
 *   output = z:     (x - mean) / std       as f32
 * A pixel without reference cells (n = 0: the guard square covers the whole image
 * around it) or whose cells are all equal (std = 0) gets 0 in both outputs.
 *
 * Computed as z = (n x - S1) / sqrt(n S2 - S1^2), with S1 and S2 the sums of v and v^2
 * over the cells, and mask = (n x - S1) > k sqrt(n S2 - S1^2), from summed-area tables
 * (integral images): O(1) per pixel whatever the window.
 *   u8, u16  The tables are exact 64-bit integers, and so are n x - S1 and n S2 - S1^2
 *            (which fit in 64 bits for every window up to 255); the mask and z then take
 *            two or three roundings in double. Both backends give the same bits.
 *   f32      The tables are double sums of v - v0 (v0: the frame's first pixel when it
 *            is finite, else 0, so a large constant level costs no precision), their
 *            rounding relative to the frame's totals: z is within 1e-4 of the float64
 *            reference on frames of a few thousand pixels, and the mask agrees except
 *            within about 1e-9 of the decision boundary. The host and cuda sum in
 *            different orders, so their last bits may differ. A window of equal f32
 *            values may then get a rounding-sized std instead of 0.
 *
 * Values that are not numbers (f32). A NaN or infinite pixel is confined to itself: it is
 * no pixel's reference cell (n, S1 and S2 count only the finite cells of each window: a
 * third table counts them), and it gets mask 0 and z 0 itself. No error is reported (the
 * data is on the device). A window whose cells are all non-finite has n = 0, so 0. The
 * numpy/scipy reference (uniform_filter over the frame) would instead spread a NaN to
 * every pixel whose window holds it, and an infinity to NaN or infinite scores; on frames
 * without non-finite pixels the two agree as stated above, and on frames with them plume
 * agrees with that reference computed over the finite cells alone (the mean and std of
 * numpy's nanmean/nanstd over each window's reference cells, with infinities taken as
 * NaN).
 * The tolerance of the tests: z within 1e-4 absolute, the mask exact (the fixtures keep
 * every pixel's z at least 1e-6 away from k).
 *
 * The hold (hold not NULL; off by default): a hysteresis over frames. hold is a u8 (H, W)
 * map, such as the mask this cfar gave the previous frame, and within hold_radius steps of
 * a nonzero pixel, counted as |row - r| + |col - c| <= hold_radius (the pixels
 * scipy.ndimage.binary_dilation(hold, iterations=hold_radius) sets, its cross-shaped
 * structure), the mask's factor is min(k, hold_k): a target once detected is followed at
 * the lower threshold while it stays near where it was, and a new one must pass k. Every
 * frame of a stack reads the same hold. Mask output only; z is unchanged by it. In a
 * pipeline's text: `cfar k=5.8 hold=~det hold_k=4.5 name=det` feeds the cfar's own mask
 * of the previous frame back (plume/pipeline.h: feedback).
 *
 * Parameters: window, the side w of the square, odd, 3..255 (default 15); guard, the side
 * g of the guard square, odd, 1..w-2 (default 5; 1 leaves out only the pixel itself); k,
 * the detection factor, finite and > 0 (default 5); output, PLM_CFAR_MASK (default) or
 * PLM_CFAR_Z (the text form's and `plume op`'s output=mask|z); hold_k, the factor where a
 * hold reaches, finite and > 0 (default 4; it applies where below k); hold_radius, 0 to 8
 * (default 2).
 *
 * Shapes: in is u8, u16 or f32 with 2 to 4 dims; the last two are (H, W) and the leading
 * ones count independent frames. hold, when given, is u8 (H, W). out has in's shape, u8 for
 * the mask and f32 for z, and must not overlap in nor hold.
 *
 * Errors (PLM_ERR_INVALID_ARG, the message names the field): params NULL; window even or
 * outside 3..255; guard even, below 1 or not below window; k not finite or <= 0; with a
 * hold, hold_k not finite or <= 0 (without one it is not read); hold_radius outside 0..8; output
 * not a plm_cfar_result; a hold with output z; in of another dtype or 1 dim; hold not u8 (H, W);
 * out of the wrong dtype or shape, or overlapping in or hold. The op takes scratch memory from the
 * context's default pool in stream order (PLM_ERR_OUT_OF_MEMORY when it has none): the tables of
 * one frame, two for u8 and u16 and three for f32, 8 (H + 1)(W + 1) bytes each, reused frame after
 * frame; on the cuda backend none for windows up to 97, and up to 127 on a GPU that gives a block
 * 128 KiB of shared memory (A100, H100 and H200 do; compute capability 8.6 and 8.9 do not),
 * whose one pass keeps no tables (each column's sums move down a band of rows and are summed
 * across in shared memory), and past them the tables of the frames it takes at once: as many of the
 * stack's frames as 24 MiB of tables hold, or one frame's where that is more. */

typedef enum plm_cfar_result {
  PLM_CFAR_MASK = 0, /* u8: 1 where (x - mean) > k std */
  PLM_CFAR_Z = 1     /* f32: (x - mean) / std */
} plm_cfar_result;

typedef struct plm_cfar_params {
  int window;             /* odd, 3..255 */
  int guard;              /* odd, 1..window - 2 */
  double k;               /* > 0 */
  plm_cfar_result output; /* mask or z */
  double hold_k;          /* > 0: the factor where a hold reaches, when below k */
  int hold_radius;        /* 0..8: the steps from a held pixel that its hold reaches */
} plm_cfar_params;

/* plm_cfar_params_default: The defaults of the operation's parameter schema (ops/op_desc.h): window
 * 15, guard 5, k 5, output PLM_CFAR_MASK, hold_k 4, hold_radius 2. */
/* plm_cfar_cost: bytes = in, out, the hold's byte when given and four passes over the 8-byte
 * tables (two; three for f32) per pixel (the host's passes; cuda's one pass for windows up
 * to 97, or 127, moves in, out and the hold alone); flops = about 30 per pixel (the tables' sums,
 * the boxes' corners, the statistics). */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_CFAR_H */

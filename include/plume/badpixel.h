/* plume/badpixel.h: bad-pixel replacement (conventions in plume/ops.h). */
#ifndef PLUME_BADPIXEL_H
#define PLUME_BADPIXEL_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- badpixel -----------------------------------------------------------------------
 * The dead and hot pixels of a focal-plane array, flagged once for the sensor in a map,
 * replaced in every frame by what their neighbours saw:
 *   out(..., y, x) = in(..., y, x)                 where bad(y, x) == 0
 *                  = median of the valid neighbours where bad(y, x) != 0
 * The neighbours are the 8 pixels of the 3x3 square around (y, x); one is valid when it is
 * inside the frame, not flagged in bad, and not NaN (a NaN is no sample). Of n valid values
 * sorted (a fixed sorting network, the same on both backends), the median is the middle one
 * for odd n and, for even n, the mean of the two middle ones computed as (a + b) * 0.5f in
 * f32 (as numpy.median, whose float64 (a + b) / 2 rounds to the same f32 unless a + b
 * overflows f32). For n = 1 and n = 2 this is the neighbours' mean, the rule for fewer
 * than 3. With no valid neighbour (a pixel in a 3x3 cluster of bad ones, or a 1x1 frame)
 * the pixel is left as it was, converted to f32: a value the caller can see was not
 * replaced, where any made-up value could pass for a measurement. Infinities are values
 * like any other (the median of -inf and +inf is NaN, as numpy's); a NaN in an unflagged
 * pixel is copied. u8 and u16 values are exact in f32, so the two backends give the same
 * bits and the fixtures (numpy in float64, cast to f32) need no tolerance.
 *
 * Shapes: in is u8, u16 or f32 with 2 to 4 dims; the last two are (H, W) and the leading
 * ones count frames, all repaired with the same map. bad is u8 (H, W), nonzero for a bad
 * pixel. out is f32 of in's shape and must not overlap in or bad: the neighbours of a pixel
 * are read after it may have been written, so the op is never in place.
 *
 * Errors (PLM_ERR_INVALID_ARG, the message names the operand): a NULL operand; in of
 * another dtype or 1 dim; bad not u8 or not (H, W) of in's frames; out not f32, of another
 * shape, or overlapping an input. */
/* plm_badpixel_cost: bytes = in's, out's (4) and bad's (1) per pixel; flops = 1 per pixel (the
 * map's test): a flagged pixel's sort is comparisons, left out. */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_BADPIXEL_H */

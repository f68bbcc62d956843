/* plume/entropy.h: local Shannon entropy (conventions in plume/ops.h). */
#ifndef PLUME_ENTROPY_H
#define PLUME_ENTROPY_H

#include <stdbool.h>

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- entropy ------------------------------------------------------------------------
 * out(y, x) = local Shannon entropy in bits of the values in a window x window square
 * around (y, x), as skimage.filters.rank.entropy(in, np.ones((w, w))) for u8 input
 * (which also uses log base 2), exactly, for every window and at every border.
 *
 * Window: 1 <= w <= 255. The window at (y, x) covers rows y - floor(w/2) ..
 * y - floor(w/2) + w - 1 and the same columns (an even window reaches one further up
 * and left than down and right). Pixels outside the image are left out, so the
 * pixel count n shrinks at the borders (n = w*w inside).
 *   H = -sum_b (c_b / n) log2(c_b / n)   over the bins b with a count c_b > 0,
 * which is 0 when every pixel of the window is in one bin (and for w = 1).
 *
 * Bins:
 *   u8, u16  With params->bins = 0, every value is its own bin (256 bins for u8,
 *            65536 for u16). With bins = B > 0 (1..65536),
 *              bin = floor(v * B / 2^bits),  bits = 8 for u8, 16 for u16,
 *            so B = 16 on u8 groups 0..15, 16..31, ...; B = 2^bits is the same as 0.
 *            range_lo, range_hi and range_auto are ignored.
 *   f32      bins = B (1..65536) is required, with a range [lo, hi):
 *              bin = floor((v - lo) * B / (hi - lo))   computed in double,
 *            v < lo and NaN go to bin 0, v >= hi (+inf included) to bin B - 1.
 *            The range is [range_lo, range_hi) (finite, range_lo < range_hi), or,
 *            with range_auto, each frame's own [min, max]: the smallest and largest
 *            finite values of that frame (NaN and +-inf are left out of the min and
 *            max, then binned by the rule above; max itself lands in bin B - 1). When
 *            a frame's min == max, or it has no finite value, every pixel of that
 *            frame is in bin 0 (entropy 0). The auto range is computed on the device,
 *            with no round trip to the host.
 *
 * Shapes: in is u8, u16 or f32 with 2 to 4 dims; the last two are (H, W) and the
 * leading ones count frames, which are independent (auto range per frame). out is f32
 * of in's shape and must not overlap in. Results match a float64 reference within
 * 1e-5 (the sum is kept in 32.32 fixed point, so it does not drift).
 *
 * Errors (PLM_ERR_INVALID_ARG, the message names the field): window 0 or > 255; bins
 * < 0 or > 65536; bins 0 on f32; for f32 without range_auto, a NaN or infinite
 * range_lo or range_hi, or range_lo >= range_hi; in of another dtype or 1 dim; out not
 * f32, of another shape, or overlapping in. The op takes scratch memory from the
 * context's default pool in stream order (PLM_ERR_OUT_OF_MEMORY when it has none):
 * on host, per CPU work chunk (4 per core) a histogram of 2 bytes per bin and the bins
 * of at most 64 + w - 1 rows of a frame (2 bytes per pixel, rows padded to an odd
 * number of cache lines), plus 16 bytes per frame, so a long batch needs no more than
 * one frame; on cuda, with range_auto 8 bytes per frame and 8 per part of at least
 * 8192 pixels of a frame (the range is found by many blocks per frame), plus, only when
 * neither kind of shared-memory histogram fits (more than 512 bins and a window wider
 * than 18), histograms of 2 bytes per bin in device memory, one per warp of 32 threads,
 * at most min(2048, 256 MiB / (2 bins)) of them and never more than frames x ceil(H /
 * 64) x W (256 MiB at 65536 bins), zeroed on each such call. On cuda any call, the first on a
 * device included, may be captured into a CUDA graph: the kernels' tables are in the device
 * code's data, so no call copies them.
 *
 * Cost: both kernels slide a histogram (the CPU's along rows, CUDA's down columns),
 * 2w count updates per pixel, each updating sum c log2 c in O(1) from a table, so time
 * grows with w, not with w*w or the bin count. On cuda a histogram per thread lives
 * in shared memory: a count per bin with at most 512 bins (u8 by default), else, for
 * windows of at most 18, a small hash table of the bins the window holds (u16 by
 * default); each input pixel is binned about once. */

typedef struct plm_entropy_params {
  int window;      /* w, 1..255 */
  int bins;        /* 0: each u8/u16 value is its own bin; else 1..65536 (required for f32) */
  double range_lo; /* f32 without range_auto: the binned range [range_lo, range_hi) */
  double range_hi;
  bool range_auto; /* f32: each frame's finite [min, max] instead of range_lo/hi */
} plm_entropy_params;

/* plm_entropy_params_default: The defaults of the operation's parameter schema (ops/op_desc.h):
 * bins 0 (each u8/u16 value its own bin), no range, window 0: set window (1..255). */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_ENTROPY_H */

/* kernels/common/hold_reach.h: the reach of a hold map, which both backends of every op
 * that takes one test per pixel (background's hold: plume/background.h; cfar's:
 * plume/cfar.h). A hold is a u8 (H, W) map, typically a detector's mask of the previous
 * frame fed back through a pipeline's previous value; a pixel is reached when a nonzero
 * hold pixel lies within `radius` 4-connected steps of it: exactly the pixels that
 * scipy.ndimage.binary_dilation(hold, iterations=radius) sets (its default cross-shaped
 * structure), the frame's edge not wrapping. */
#ifndef PLUME_KERNELS_COMMON_HOLD_REACH_H
#define PLUME_KERNELS_COMMON_HOLD_REACH_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"

/* The largest radius: a pixel's test reads at most 2 r^2 + 2 r + 1 = 145 bytes. */
#define PLM__HOLD_MAX_RADIUS 8

/* Whether pixel (row, col) of a height x width frame is within radius 4-connected steps
 * (|dr| + |dc| <= radius, inside the frame) of a nonzero pixel of hold. */
static inline PLM_HD bool plm__hold_reaches(const uint8_t *hold, int64_t height, int64_t width,
                                            int64_t row, int64_t col, int radius) {
  for (int dr = -radius; dr <= radius; dr++) {
    const int64_t r = row + dr;
    if (r < 0 || r >= height) continue;
    const int reach = radius - (dr < 0 ? -dr : dr);
    const int64_t first = col - reach < 0 ? 0 : col - reach;
    const int64_t last = col + reach >= width ? width - 1 : col + reach;
    for (int64_t c = first; c <= last; c++)
      if (hold[r * width + c]) return true;
  }
  return false;
}

#endif /* PLUME_KERNELS_COMMON_HOLD_REACH_H */

/* kernels/common/map/clip.h: the range limit both backends run, and the arguments of a clip
 * launch (semantics in plume/clip.h). */
#ifndef PLUME_KERNELS_COMMON_MAP_CLIP_H
#define PLUME_KERNELS_COMMON_MAP_CLIP_H

#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/clip.h"

typedef struct plm__clip_args {
  const void *in;
  float *out;
  int64_t count;
  int64_t period;  /* 0: the element-wise templates' p is unused */
  plm_dtype dtype; /* of in: u8, u16 or f32 */
  float lo, hi;
} plm__clip_args;

/* The op's element: x held within [lo, hi]. Comparisons, not fminf/fmaxf, so that a NaN x
 * is false on both sides and comes out as itself, as numpy's clip gives it. */
static inline PLM_HD float plm__clip_at(const plm__clip_args *k, float x, int64_t p) {
  (void)p;
  return x < k->lo ? k->lo : x > k->hi ? k->hi : x;
}

/* Its kernels (kernels/common/map_ops.h): one input, an f32 output, the CPU pool's chunks
 * of at least 65,536 elements. */
#define PLM__MAP_OP_clip (1, F32, 1 << 16)

#endif /* PLUME_KERNELS_COMMON_MAP_CLIP_H */

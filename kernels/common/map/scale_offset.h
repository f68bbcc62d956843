/* kernels/common/map/scale_offset.h: the linear map both backends run, and the arguments of a
 * scale_offset launch (semantics in plume/scale_offset.h). */
#ifndef PLUME_KERNELS_COMMON_MAP_SCALE_OFFSET_H
#define PLUME_KERNELS_COMMON_MAP_SCALE_OFFSET_H

#include <math.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/scale_offset.h"

typedef struct plm__scale_offset_args {
  const void *in;
  float *out;
  int64_t count;
  int64_t period;  /* 0: the element-wise templates' p is unused */
  plm_dtype dtype; /* of in: u8, u16 or f32 */
  float scale, offset;
} plm__scale_offset_args;

/* The op's element (kernels/common/map_ops.h): x * scale + offset rounded once. */
static inline PLM_HD float plm__scale_offset_at(const plm__scale_offset_args *k, float x,
                                                int64_t p) {
  (void)p;
  return fmaf(x, k->scale, k->offset);
}

/* Its kernels (kernels/common/map_ops.h): one input, an f32 output, the CPU pool's chunks
 * of at least 65,536 elements. */
#define PLM__MAP_OP_scale_offset (1, F32, 1 << 16)

#endif /* PLUME_KERNELS_COMMON_MAP_SCALE_OFFSET_H */

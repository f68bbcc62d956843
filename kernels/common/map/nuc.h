/* kernels/common/map/nuc.h: the per-pixel correction both backends run, and the arguments of
 * a nuc launch (semantics in plume/nuc.h). */
#ifndef PLUME_KERNELS_COMMON_MAP_NUC_H
#define PLUME_KERNELS_COMMON_MAP_NUC_H

#include <math.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/nuc.h"

typedef struct plm__nuc_args {
  const void *in;
  const float *gain, *offset; /* (H, W) */
  float *out;
  int64_t count;   /* elements of in */
  int64_t period;  /* H * W: element i takes gain and offset p = i % period */
  plm_dtype dtype; /* of in: u8, u16 or f32 */
} plm__nuc_args;

/* gain * x + offset, rounded once (CUDA's fmaf and C's are both the correctly rounded
 * fused multiply-add). */
static inline PLM_HD float plm__nuc_one(float gain, float x, float offset) {
  return fmaf(gain, x, offset);
}

/* The op's element: pixel x at place p of its frame (kernels/cpu/map.h, kernels/cuda/map.h). */
static inline PLM_HD float plm__nuc_at(const plm__nuc_args *k, float x, int64_t p) {
  return plm__nuc_one(k->gain[p], x, k->offset[p]);
}

/* Its kernels (kernels/common/map_ops.h): one input, an f32 output, the CPU pool's chunks
 * of at least 32,768 elements. */
#define PLM__MAP_OP_nuc (1, F32, 1 << 15)

#endif /* PLUME_KERNELS_COMMON_MAP_NUC_H */

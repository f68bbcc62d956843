/* kernels/common/map/abs_diff.h: the per-element difference both backends run, and the
 * arguments of an abs_diff launch (semantics in plume/abs_diff.h). */
#ifndef PLUME_KERNELS_COMMON_MAP_ABS_DIFF_H
#define PLUME_KERNELS_COMMON_MAP_ABS_DIFF_H

#include <math.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/abs_diff.h"

typedef struct plm__abs_diff_args {
  const void *in, *in2; /* in and ref */
  void *out;            /* of their dtype */
  int64_t count;
  int64_t period;  /* 0: the element-wise templates' p is unused */
  plm_dtype dtype; /* u8, u16 or f32 */
} plm__abs_diff_args;

/* The op's element (kernels/cpu/map.h, kernels/cuda/map.h): |a - b| in f32, exact for u8
 * and u16 values (and so their type's value again), numpy's float32 np.abs(a - b) for f32. */
static inline PLM_HD float plm__abs_diff_at(const plm__abs_diff_args *k, float a, float b,
                                            int64_t p) {
  (void)k;
  (void)p;
  return fabsf(a - b);
}

/* Its kernels (kernels/common/map_ops.h): two inputs, the output in their dtype, the CPU
 * pool's chunks of at least 65,536 elements. */
#define PLM__MAP_OP_abs_diff (2, SAME, 1 << 16)

#endif /* PLUME_KERNELS_COMMON_MAP_ABS_DIFF_H */

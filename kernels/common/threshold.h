/* kernels/common/threshold.h: the threshold comparison both backends run, and the
 * arguments of a threshold launch (see plume/ops.h for the semantics). */
#ifndef PLUME_KERNELS_COMMON_THRESHOLD_H
#define PLUME_KERNELS_COMMON_THRESHOLD_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/threshold.h"

typedef struct plm__threshold_args {
  const void *in;
  uint8_t *out;
  int64_t count;
  int64_t period;  /* 0: the element-wise templates' p is unused */
  plm_dtype dtype; /* of in: u8, u16 or f32 */
  float bound;     /* plm__threshold_float_bound(value, compare), made by the op's pack */
  plm_compare compare;
} plm__threshold_args;

/* 1 when `x compare value` holds, else 0; NaN compares false. */
static inline PLM_HD uint8_t plm__threshold_one(double x, double value, plm_compare compare) {
  switch (compare) {
    case PLM_COMPARE_GE: return x >= value;
    case PLM_COMPARE_LT: return x < value;
    case PLM_COMPARE_LE: return x <= value;
    case PLM_COMPARE_GT: break;
  }
  return x > value;
}

/* The float that gives plm__threshold_one's answer for every float x (and every u8 and
 * u16, which a float holds exactly) in a float comparison, x compare bound: for gt and le
 * the largest float at most value, for ge and lt the smallest float at least value. No
 * float lies strictly between value and that bound, so x > value exactly when x > bound,
 * and likewise for the others; a NaN value gives a NaN bound (every comparison false), and
 * a value past float's range an infinite one before the step (no out-of-range conversion).
 * The CPU kernel compares so, in vectors of floats instead of one double at a time. */
static inline float plm__threshold_float_bound(double value, plm_compare compare) {
  float bound = value > FLT_MAX ? INFINITY : value < -FLT_MAX ? -INFINITY : (float)value;
  const bool down = compare == PLM_COMPARE_GT || compare == PLM_COMPARE_LE;
  if (down && (double)bound > value) bound = nextafterf(bound, -INFINITY);
  if (!down && (double)bound < value) bound = nextafterf(bound, INFINITY);
  return bound;
}

/* plm__threshold_one on a float against plm__threshold_float_bound(value, compare). */
static inline PLM_HD uint8_t plm__threshold_one_float(float x, float bound, plm_compare compare) {
  switch (compare) {
    case PLM_COMPARE_GE: return x >= bound;
    case PLM_COMPARE_LT: return x < bound;
    case PLM_COMPARE_LE: return x <= bound;
    case PLM_COMPARE_GT: break;
  }
  return x > bound;
}

/* The op's element, on both backends (kernels/cpu/map.h, kernels/cuda/map.h): x (u8, u16
 * or f32, each exactly a float) against the bound, as plm__threshold_one against value. */
static inline PLM_HD uint8_t plm__threshold_at(const plm__threshold_args *k, float x,
                                               plm_compare compare) {
  return plm__threshold_one_float(x, k->bound, compare);
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernel (kernels/cpu/threshold.c): runs on the calling thread and the CPU
 * pool; returns when done. */
void plm__threshold_cpu(const plm__threshold_args *args);

/* Enqueue the CUDA kernel (kernels/cuda/threshold.cu) on a cudaStream_t. */
plm_status plm__threshold_cuda(void *stream, const plm__threshold_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_THRESHOLD_H */

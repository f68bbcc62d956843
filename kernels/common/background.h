/* kernels/common/background.h: the per-pixel update both backends run, and the arguments
 * of a background launch (semantics in plume/background.h). */
#ifndef PLUME_KERNELS_COMMON_BACKGROUND_H
#define PLUME_KERNELS_COMMON_BACKGROUND_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/background.h"

typedef struct plm__background_args {
  const void *in;
  float *state; /* b, (H, W) */
  float *out;
  int64_t frames;        /* in's frames, processed in order */
  int64_t frame_pixels;  /* H * W */
  plm_dtype dtype;       /* of in: u8, u16 or f32 */
  bool first;            /* frame 0 initialises the state */
  bool state_in_scratch; /* the call has no state: a fresh one in its scratch */
  plm_background_mode mode;
  float alpha, step;
} plm__background_args;

/* One pixel of one frame: returns out and updates *b. `first`: the pixel's first frame. */
static inline PLM_HD float plm__background_one(float x, float *b, bool first,
                                               plm_background_mode mode, float alpha, float step) {
  if (first || !isfinite(*b)) {
    if (!first && !isfinite(x)) return x - *b; /* nothing finite to start from yet */
    *b = x;
    return 0.0f;
  }
  const float d = x - *b;
  if (!isfinite(x)) return d; /* a bad value does not move the background */
  if (mode == PLM_BACKGROUND_MEDIAN)
    *b = d > 0.0f ? *b + step : d < 0.0f ? *b - step : *b;
  else
    *b = fmaf(alpha, d, *b);
  return d;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernel (kernels/cpu/background.c): runs on the calling thread and the CPU
 * pool; returns when done. */
void plm__background_cpu(const plm__background_args *args);

/* Enqueue the CUDA kernel (kernels/cuda/background.cu) on a cudaStream_t. */
plm_status plm__background_cuda(void *stream, const plm__background_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_BACKGROUND_H */

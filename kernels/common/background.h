/* kernels/common/background.h: the per-pixel update both backends run, and the arguments
 * of a background launch (semantics in plume/background.h). */
#ifndef PLUME_KERNELS_COMMON_BACKGROUND_H
#define PLUME_KERNELS_COMMON_BACKGROUND_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/common/hold_reach.h"
#include "kernels/common/plm_hd.h"
#include "plume/background.h"

/* How a pixel's background moves: the params as the per-pixel update reads them. */
typedef struct plm__background_rule {
  plm_background_mode mode;
  float alpha, step;
  float gate2;       /* gate^2; 0: no gate, and no spread v is kept */
  float gated_alpha; /* alpha * gate_rate, rounded once */
  float gated_step;  /* step * gate_rate, rounded once */
  float held_alpha;  /* alpha * hold_rate, rounded once */
  float held_step;   /* step * hold_rate, rounded once */
} plm__background_rule;

typedef struct plm__background_args {
  const void *in;
  float *state; /* b, (H, W); with a gate b then v, (2, H, W) */
  float *out;
  const uint8_t *hold;   /* (H, W), or NULL: no hold */
  int64_t frames;        /* in's frames, processed in order */
  int64_t frame_pixels;  /* H * W */
  int64_t height, width; /* H, W */
  int hold_radius;       /* the hold's reach, in 4-connected steps */
  plm_dtype dtype;       /* of in: u8, u16 or f32 */
  bool first;            /* frame 0 initialises the state */
  bool state_in_scratch; /* the call has no state: a fresh one in its scratch */
  plm__background_rule rule;
} plm__background_args;

/* The rule of params (checked). */
static inline plm__background_rule plm__background_rule_of(const plm_background_params *params) {
  return (plm__background_rule){.mode = params->mode,
                                .alpha = params->alpha,
                                .step = params->step,
                                .gate2 = params->gate * params->gate,
                                .gated_alpha = params->alpha * params->gate_rate,
                                .gated_step = params->step * params->gate_rate,
                                .held_alpha = params->alpha * params->hold_rate,
                                .held_step = params->step * params->hold_rate};
}

/* One pixel of one frame: returns out and updates *b and, with a gate, *v (the running
 * mean of d^2; 0: no spread seen yet, never gated). `first`: the pixel's first frame;
 * `held`: the hold reaches the pixel (b moves at the held rate, or the gated one where
 * that is smaller: the products are rounded alike, so the smaller product is the product
 * of the smaller rate).
 * Every product and difference is rounded as written (PLM__FMUL, PLM__FSUB: nvcc does not
 * contract them), the updates are fmaf: the host and cuda give the same bits. */
static inline PLM_HD float plm__background_one(float x, float *b, float *v, bool first, bool held,
                                               const plm__background_rule *rule) {
  if (first || !isfinite(*b)) {
    if (!first && !isfinite(x)) return x - *b; /* nothing finite to start from yet */
    *b = x;
    *v = 0.0f;
    return 0.0f;
  }
  const float d = x - *b;
  if (!isfinite(x)) return d; /* a bad value does not move the background */
  bool gated = false;
  if (rule->gate2 > 0.0f) {
    /* d^2 capped at FLT_MAX (3.4028235e38f) so that v stays finite. */
    const float dd = fminf(PLM__FMUL(d, d), 3.40282347e+38f);
    gated = *v > 0.0f && dd > PLM__FMUL(rule->gate2, *v);
    *v = fmaf(rule->alpha, PLM__FSUB(dd, *v), *v);
  }
  if (rule->mode == PLM_BACKGROUND_MEDIAN) {
    float step = gated ? rule->gated_step : rule->step;
    if (held) step = fminf(step, rule->held_step);
    *b = d > 0.0f ? *b + step : d < 0.0f ? *b - step : *b;
  } else {
    float alpha = gated ? rule->gated_alpha : rule->alpha;
    if (held) alpha = fminf(alpha, rule->held_alpha);
    *b = fmaf(alpha, d, *b);
  }
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

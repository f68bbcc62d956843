/* kernels/cpu/background.c: temporal background suppression on the CPU, split across
 * cores by pixels: a chunk walks its pixels through every frame in order, its part of
 * the state staying in cache, one loop per input type. Without a gate v is a dummy the
 * update writes and nobody reads; with a hold a pixel's row and column follow p (one
 * division a chunk and frame) for its neighbourhood's test.
 *
 * Without a hold, a chunk's pixels go BLOCK at a time through update_block instead:
 * plm__background_one's arithmetic with its branches taken as selects, in a loop that
 * vectorises, built with FMA (kernels/cpu/dispatch.h), whose fmaf is one instruction
 * rounded as the library's is (the baseline clone calls it). Its branches on whether a
 * pixel is gated and on the sign of d follow the frames' noise, which the branch
 * predictor cannot: in plume detect's robust preset at 512^2 the per-pixel loop took a
 * quarter of the process's CPU time. */
#include "kernels/common/background.h"
#include "kernels/cpu/dispatch.h"
#include "streams/parallel.h"

enum {
  GRAIN = 1 << 14, /* pixels per chunk at least */
  BLOCK = 1024     /* pixels update_block takes at once (its input as f32 on the stack) */
};

/* Pixels [0, n) of a frame without a hold, not a first frame: out[i] and the state b[i]
 * (and v[i] with a gate) from x[i] as plm__background_one gives them, bit for bit: each
 * branch of it becomes a select between values computed in every lane (their NaNs and
 * infinities discarded where the branch is not taken). gate and median are constants where
 * it is inlined, so that each of the four loops vectorises. */
static inline __attribute__((always_inline)) void update_lanes(const float *restrict x,
                                                               float *restrict b, float *restrict v,
                                                               float *restrict out, int64_t n,
                                                               const plm__background_rule rule,
                                                               const bool gate, const bool median) {
  for (int64_t i = 0; i < n; i++) {
    const float xi = x[i], bi = b[i], vi = gate ? v[i] : 0.0f;
    const bool x_finite = xi - xi == 0.0f, b_finite = bi - bi == 0.0f;
    const float d = xi - bi;
    /* b not finite and x finite: b starts at x, out 0 (b not finite and x not finite: out
     * x - b, nothing moves); x not finite: out d, nothing moves. */
    const bool restart = !b_finite && x_finite, moves = b_finite && x_finite;
    const float dd_raw = d * d, dd = dd_raw < 3.40282347e+38f ? dd_raw : 3.40282347e+38f;
    const bool gated = gate && vi > 0.0f && dd > rule.gate2 * vi;
    float b_next;
    if (median) {
      const float step = gated ? rule.gated_step : rule.step;
      b_next = d > 0.0f ? bi + step : d < 0.0f ? bi - step : bi;
    } else {
      b_next = fmaf(gated ? rule.gated_alpha : rule.alpha, d, bi);
    }
    out[i] = restart ? 0.0f : d;
    b[i] = moves ? b_next : restart ? xi : bi;
    if (gate) v[i] = moves ? fmaf(rule.alpha, dd - vi, vi) : restart ? 0.0f : vi;
  }
}

/* Pixels [0, n) of a frame without a hold: a first frame starts the state, any other
 * goes through update_lanes' loop for the rule's gate and mode. */
PLM__CPU_CLONES_FMA static void update_block(const float *restrict x, float *restrict b,
                                             float *restrict v, float *restrict out, int64_t n,
                                             bool first, const plm__background_rule *rule) {
  const bool gate = rule->gate2 > 0.0f, median = rule->mode == PLM_BACKGROUND_MEDIAN;
  if (first) { /* the state starts at the frame */
    for (int64_t i = 0; i < n; i++) {
      b[i] = x[i];
      out[i] = 0.0f;
      if (gate) v[i] = 0.0f;
    }
  } else if (gate) {
    if (median)
      update_lanes(x, b, v, out, n, *rule, true, true);
    else
      update_lanes(x, b, v, out, n, *rule, true, false);
  } else {
    if (median)
      update_lanes(x, b, v, out, n, *rule, false, true);
    else
      update_lanes(x, b, v, out, n, *rule, false, false);
  }
}

/* Frame t's pixels [begin, end) as f32, BLOCK at a time through update_block. */
static void update_frames(const plm__background_args *args, int64_t begin, int64_t end) {
  float *spread = args->rule.gate2 > 0.0f ? args->state + args->frame_pixels : NULL;
  float x[BLOCK];
  for (int64_t t = 0; t < args->frames; t++) {
    const int64_t base = t * args->frame_pixels;
    const bool first = args->first && t == 0;
    for (int64_t p = begin; p < end; p += BLOCK) {
      const int64_t n = end - p < BLOCK ? end - p : BLOCK;
      const int64_t at = base + p;
      switch (args->dtype) {
        case PLM_DTYPE_U8:
          for (int64_t i = 0; i < n; i++) x[i] = (float)((const uint8_t *)args->in)[at + i];
          break;
        case PLM_DTYPE_U16:
          for (int64_t i = 0; i < n; i++) x[i] = (float)((const uint16_t *)args->in)[at + i];
          break;
        case PLM_DTYPE_F32:
          for (int64_t i = 0; i < n; i++) x[i] = ((const float *)args->in)[at + i];
          break;
        case PLM_DTYPE_I32:
        case PLM_DTYPE_F64: return; /* refused by the op */
      }
      update_block(x, args->state + p, spread ? spread + p : NULL, args->out + at, n, first,
                   &args->rule);
    }
  }
}

#define BACKGROUND_LOOP(type)                                                                    \
  do {                                                                                           \
    const type *in = (const type *)args->in;                                                     \
    float dummy = 0.0f;                                                                          \
    for (int64_t t = 0; t < args->frames; t++) {                                                 \
      const int64_t base = t * args->frame_pixels;                                               \
      const bool first = args->first && t == 0;                                                  \
      int64_t row = begin / args->width, col = begin % args->width;                              \
      for (int64_t p = begin; p < end; p++) {                                                    \
        const bool held = args->hold && plm__hold_reaches(args->hold, args->height, args->width, \
                                                          row, col, args->hold_radius);          \
        args->out[base + p] =                                                                    \
            plm__background_one((float)in[base + p], &args->state[p],                            \
                                spread ? &spread[p] : &dummy, first, held, &args->rule);         \
        if (++col == args->width) col = 0, row++;                                                \
      }                                                                                          \
    }                                                                                            \
  } while (0)

static void background_range(void *context, int64_t begin, int64_t end) {
  const plm__background_args *args = context;
  if (!args->hold) {
    update_frames(args, begin, end);
    return;
  }
  float *spread = args->rule.gate2 > 0.0f ? args->state + args->frame_pixels : NULL;
  switch (args->dtype) {
    case PLM_DTYPE_U8: BACKGROUND_LOOP(uint8_t); break;
    case PLM_DTYPE_U16: BACKGROUND_LOOP(uint16_t); break;
    case PLM_DTYPE_F32: BACKGROUND_LOOP(float); break;
    case PLM_DTYPE_I32:
    case PLM_DTYPE_F64: break; /* refused by the op */
  }
}

void plm__background_cpu(const plm__background_args *args) {
  plm__parallel_for(args->frame_pixels, GRAIN, background_range, (void *)args);
}

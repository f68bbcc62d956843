/* kernels/cpu/background.c: temporal background suppression on the CPU, split across
 * cores by pixels: a chunk walks its pixels through every frame in order, its part of
 * the state staying in cache, one loop per input type. Without a gate v is a dummy the
 * update writes and nobody reads; with a hold a pixel's row and column follow p (one
 * division a chunk and frame) for its neighbourhood's test. */
#include "kernels/common/background.h"
#include "streams/parallel.h"

enum { GRAIN = 1 << 14 }; /* pixels per chunk at least */

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

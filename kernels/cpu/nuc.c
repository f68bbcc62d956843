/* kernels/cpu/nuc.c: non-uniformity correction on the CPU, split across cores. A chunk
 * walks its frames' rows of pixels with the calibration's matching part, one loop per
 * input type over a run of pixels within one frame (no division per pixel), built for FMA
 * machines too (kernels/cpu/dispatch.h), where plm__nuc_one's fmaf vectorises. */
#include "kernels/common/nuc.h"
#include "kernels/cpu/dispatch.h"
#include "streams/parallel.h"

enum { GRAIN = 1 << 15 }; /* elements per chunk at least: ~300 KiB moved */

#define NUC_RUN(type, name)                                                                  \
  PLM__CPU_CLONES_FMA static void name(const type *restrict in, const float *restrict gain,  \
                                       const float *restrict offset, float *restrict out,    \
                                       int64_t n) {                                          \
    for (int64_t i = 0; i < n; i++) out[i] = plm__nuc_one(gain[i], (float)in[i], offset[i]); \
  }

NUC_RUN(uint8_t, nuc_run_u8)
NUC_RUN(uint16_t, nuc_run_u16)
NUC_RUN(float, nuc_run_f32)

static void nuc_range(void *context, int64_t begin, int64_t end) {
  const plm__nuc_args *args = context;
  for (int64_t i = begin; i < end;) {
    const int64_t p = i % args->frame_pixels; /* once per run of pixels, not per pixel */
    const int64_t n = end - i < args->frame_pixels - p ? end - i : args->frame_pixels - p;
    const float *gain = args->gain + p, *offset = args->offset + p;
    switch (args->dtype) {
      case PLM_DTYPE_U8:
        nuc_run_u8((const uint8_t *)args->in + i, gain, offset, args->out + i, n);
        break;
      case PLM_DTYPE_U16:
        nuc_run_u16((const uint16_t *)args->in + i, gain, offset, args->out + i, n);
        break;
      case PLM_DTYPE_F32:
        nuc_run_f32((const float *)args->in + i, gain, offset, args->out + i, n);
        break;
      case PLM_DTYPE_I32:
      case PLM_DTYPE_F64: break; /* refused by the op */
    }
    i += n;
  }
}

void plm__nuc_cpu(const plm__nuc_args *args) {
  plm__parallel_for(args->count, GRAIN, nuc_range, (void *)args);
}

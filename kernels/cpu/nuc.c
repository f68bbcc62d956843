/* kernels/cpu/nuc.c: non-uniformity correction on the CPU, split across cores. A chunk
 * walks its frames' rows of pixels with the calibration's matching part, one loop per
 * input type. */
#include "kernels/common/nuc.h"
#include "kernels/cpu/parallel.h"

enum { GRAIN = 1 << 15 }; /* elements per chunk at least: ~300 KiB moved */

#define NUC_LOOP(type)                                                           \
  do {                                                                           \
    const type *in = (const type *)args->in;                                     \
    for (int64_t i = begin; i < end; i++) {                                      \
      const int64_t p = i % args->frame_pixels;                                  \
      args->out[i] = plm__nuc_one(args->gain[p], (float)in[i], args->offset[p]); \
    }                                                                            \
  } while (0)

static void nuc_range(void *context, int64_t begin, int64_t end) {
  const plm__nuc_args *args = context;
  switch (args->dtype) {
    case PLM_DTYPE_U8: NUC_LOOP(uint8_t); break;
    case PLM_DTYPE_U16: NUC_LOOP(uint16_t); break;
    case PLM_DTYPE_F32: NUC_LOOP(float); break;
    case PLM_DTYPE_I32:
    case PLM_DTYPE_F64: break; /* refused by the op */
  }
}

void plm__nuc_cpu(const plm__nuc_args *args) {
  plm__parallel_for(args->count, GRAIN, nuc_range, (void *)args);
}

/* kernels/cpu/threshold.c: threshold on the CPU, split across cores. One loop per
 * input type, so the compiler vectorises each. */
#include "kernels/common/threshold.h"
#include "kernels/cpu/parallel.h"

enum { GRAIN = 1 << 16 }; /* elements per chunk at least: ~64 KiB of output */

#define THRESHOLD_LOOP(type)                                                        \
  do {                                                                              \
    const type *in = (const type *)args->in;                                        \
    for (int64_t i = begin; i < end; i++)                                           \
      args->out[i] = plm__threshold_one((double)in[i], args->value, args->compare); \
  } while (0)

static void threshold_range(void *context, int64_t begin, int64_t end) {
  const plm__threshold_args *args = context;
  switch (args->dtype) {
    case PLM_DTYPE_U8: THRESHOLD_LOOP(uint8_t); break;
    case PLM_DTYPE_U16: THRESHOLD_LOOP(uint16_t); break;
    case PLM_DTYPE_F32: THRESHOLD_LOOP(float); break;
    case PLM_DTYPE_I32:
    case PLM_DTYPE_F64: break; /* refused by the op */
  }
}

void plm__threshold_cpu(const plm__threshold_args *args) {
  plm__parallel_for(args->count, GRAIN, threshold_range, (void *)args);
}

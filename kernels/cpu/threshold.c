/* kernels/cpu/threshold.c: threshold on the CPU, split across cores. One loop per input
 * type and comparison, each comparing floats against plm__threshold_float_bound (the same
 * answers as plm__threshold_one's doubles, kernels/common/threshold.h) with the comparison
 * a constant and the arguments in locals, so that the compiler vectorises it: comparing
 * doubles, chosen inside the loop, it ran element by element at ten times numpy's time. */
#include "kernels/common/threshold.h"
#include "streams/parallel.h"

enum { GRAIN = 1 << 16 }; /* elements per chunk at least: ~64 KiB of output */

#define THRESHOLD_LOOP(type, compare)                                  \
  do {                                                                 \
    const type *restrict in = (const type *)args->in;                  \
    for (int64_t i = begin; i < end; i++)                              \
      out[i] = plm__threshold_one_float((float)in[i], bound, compare); \
  } while (0)

#define THRESHOLD_TYPE(compare)                                     \
  do {                                                              \
    switch (args->dtype) {                                          \
      case PLM_DTYPE_U8: THRESHOLD_LOOP(uint8_t, compare); break;   \
      case PLM_DTYPE_U16: THRESHOLD_LOOP(uint16_t, compare); break; \
      case PLM_DTYPE_F32: THRESHOLD_LOOP(float, compare); break;    \
      case PLM_DTYPE_I32:                                           \
      case PLM_DTYPE_F64: break; /* refused by the op */            \
    }                                                               \
  } while (0)

static void threshold_range(void *context, int64_t begin, int64_t end) {
  const plm__threshold_args *args = context;
  uint8_t *restrict out = args->out;
  const float bound = plm__threshold_float_bound(args->value, args->compare);
  switch (args->compare) {
    case PLM_COMPARE_GT: THRESHOLD_TYPE(PLM_COMPARE_GT); break;
    case PLM_COMPARE_GE: THRESHOLD_TYPE(PLM_COMPARE_GE); break;
    case PLM_COMPARE_LT: THRESHOLD_TYPE(PLM_COMPARE_LT); break;
    case PLM_COMPARE_LE: THRESHOLD_TYPE(PLM_COMPARE_LE); break;
  }
}

void plm__threshold_cpu(const plm__threshold_args *args) {
  plm__parallel_for(args->count, GRAIN, threshold_range, (void *)args);
}

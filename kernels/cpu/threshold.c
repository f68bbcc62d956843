/* kernels/cpu/threshold.c: threshold on the CPU: plm__threshold_at (kernels/common/threshold.h)
 * by the element-wise template (kernels/cpu/map.h), one map per comparison, so that the
 * comparison is a constant in each loop and the compiler vectorises it (comparing doubles,
 * the comparison chosen inside the loop, it ran element by element at ten times numpy's
 * time). */
#include "kernels/common/threshold.h"
#include "kernels/cpu/map.h"

enum { GRAIN = 1 << 16 }; /* elements per chunk at least: ~64 KiB of output */

#define GT(k, x, p) plm__threshold_at(k, (float)(x), PLM_COMPARE_GT)
#define GE(k, x, p) plm__threshold_at(k, (float)(x), PLM_COMPARE_GE)
#define LT(k, x, p) plm__threshold_at(k, (float)(x), PLM_COMPARE_LT)
#define LE(k, x, p) plm__threshold_at(k, (float)(x), PLM_COMPARE_LE)

static void threshold_gt(const plm__threshold_args *args);
static void threshold_ge(const plm__threshold_args *args);
static void threshold_lt(const plm__threshold_args *args);
static void threshold_le(const plm__threshold_args *args);

PLM__CPU_MAP(threshold_gt, plm__threshold_args, uint8_t, GT, GRAIN)
PLM__CPU_MAP(threshold_ge, plm__threshold_args, uint8_t, GE, GRAIN)
PLM__CPU_MAP(threshold_lt, plm__threshold_args, uint8_t, LT, GRAIN)
PLM__CPU_MAP(threshold_le, plm__threshold_args, uint8_t, LE, GRAIN)

void plm__threshold_cpu(const plm__threshold_args *args) {
  switch (args->compare) {
    case PLM_COMPARE_GT: threshold_gt(args); break;
    case PLM_COMPARE_GE: threshold_ge(args); break;
    case PLM_COMPARE_LT: threshold_lt(args); break;
    case PLM_COMPARE_LE: threshold_le(args); break;
  }
}

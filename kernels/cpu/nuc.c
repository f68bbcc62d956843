/* kernels/cpu/nuc.c: non-uniformity correction on the CPU: plm__nuc_at (kernels/common/nuc.h)
 * over the pixels, by the element-wise template (kernels/cpu/map.h): spans within one
 * frame (no division per pixel), built for FMA machines too, where plm__nuc_one's fmaf
 * vectorises. */
#include "kernels/common/nuc.h"
#include "kernels/cpu/map.h"

enum { GRAIN = 1 << 15 }; /* elements per chunk at least: ~300 KiB moved */

PLM__CPU_MAP(plm__nuc_cpu, plm__nuc_args, float, plm__nuc_at, GRAIN)

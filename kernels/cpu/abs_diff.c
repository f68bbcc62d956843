/* kernels/cpu/abs_diff.c: abs_diff on the CPU: plm__abs_diff_at (kernels/common/abs_diff.h)
 * by the element-wise template (kernels/cpu/map.h). */
#include "kernels/common/abs_diff.h"
#include "kernels/cpu/map.h"

enum { GRAIN = 1 << 16 }; /* elements per chunk at least */

#define ABS_DIFF(k, a, b, p) plm__abs_diff_at(k, (float)(a), (float)(b), p)

PLM__CPU_MAP2_SAME(plm__abs_diff_cpu, plm__abs_diff_args, ABS_DIFF, GRAIN)

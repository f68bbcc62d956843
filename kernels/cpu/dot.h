/* kernels/cpu/dot.h: the f32 dot product the CPU kernels share (lstm, dendritic).
 * Eight partial sums, so the loop vectorises (AVX2: one vector) without the compiler
 * reassociating anything itself; the partial sums are added in a fixed order, so the
 * result does not depend on the instruction set. */
#ifndef PLUME_KERNELS_CPU_DOT_H
#define PLUME_KERNELS_CPU_DOT_H

#include <stdint.h>

enum { PLM__DOT_LANES = 8 };

static inline float plm__dot_f32(const float *restrict u, const float *restrict v, int64_t count) {
  float partial[PLM__DOT_LANES] = {0};
  int64_t i = 0;
  for (; i + PLM__DOT_LANES <= count; i += PLM__DOT_LANES)
    for (int l = 0; l < PLM__DOT_LANES; l++) partial[l] += u[i + l] * v[i + l];
  for (; i < count; i++) partial[0] += u[i] * v[i];
  float sum = 0.0f;
  for (int l = 0; l < PLM__DOT_LANES; l++) sum += partial[l];
  return sum;
}

#endif /* PLUME_KERNELS_CPU_DOT_H */

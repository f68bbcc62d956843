/* kernels/cpu/fma_peak.c: the arithmetic-peak probe on the CPU (kernels/common/fma_peak.h).
 *
 * Lanes go in blocks of LANE_BLOCK, one block per pool task; within a block the
 * compiler vectorises the lanes of each chain, so the probe measures what vectorised
 * f32 multiply-adds reach on this machine with plume's CPU pool: the ceiling the CPU
 * kernels (AVX2 clones where the CPU has it, without FMA contraction) can aim for. */
#include "kernels/common/fma_peak.h"
#include "kernels/cpu/dispatch.h"
#include "streams/parallel.h"

enum { LANE_BLOCK = 16 };

/* Built for AVX2 too (kernels/cpu/dispatch.h), as the kernels it is a ceiling for are: the
 * baseline's 4-wide SSE2 would understate the peak they reach. */
PLM__CPU_CLONES static void probe_blocks(void *context, int64_t begin, int64_t end) {
  const plm__fma_peak_args *args = context;
  for (int64_t block = begin; block < end; block++) {
    float x[FMA_PEAK_CHAINS][LANE_BLOCK];
    for (int c = 0; c < FMA_PEAK_CHAINS; c++)
      for (int l = 0; l < LANE_BLOCK; l++) x[c][l] = (float)(c + l) * 1e-3f;
    const float m = 0.999f, a = 1e-4f;
    for (int64_t i = 0; i < args->iterations; i++)
      for (int c = 0; c < FMA_PEAK_CHAINS; c++)
        for (int l = 0; l < LANE_BLOCK; l++) x[c][l] = x[c][l] * m + a;
    for (int l = 0; l < LANE_BLOCK && block * LANE_BLOCK + l < args->lanes; l++) {
      float sum = 0.0f;
      for (int c = 0; c < FMA_PEAK_CHAINS; c++) sum += x[c][l];
      args->out[block * LANE_BLOCK + l] = sum;
    }
  }
}

void plm__fma_peak_cpu(const plm__fma_peak_args *args) {
  const int64_t blocks = (args->lanes + LANE_BLOCK - 1) / LANE_BLOCK;
  plm__parallel_for(blocks, 1, probe_blocks, (void *)args);
}

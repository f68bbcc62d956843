/* kernels/common/fma_peak.h: the arithmetic-peak probe behind the profiler's calibration.
 *
 * Each of `lanes` independent lanes runs `iterations` steps of FMA_PEAK_CHAINS
 * independent multiply-adds (x = x * m + a), 2 flops each, so the probe does
 * 2 * FMA_PEAK_CHAINS * lanes * iterations flops. The chains are independent so that
 * the rate is bound by the arithmetic units, not by one chain's latency. Every lane's
 * sum is written to out[lane] so that nothing is optimised away. */
#ifndef PLUME_KERNELS_COMMON_FMA_PEAK_H
#define PLUME_KERNELS_COMMON_FMA_PEAK_H

#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/status.h"

/* Six: with 16 lanes a block (two AVX2 registers a chain) the twelve accumulators and the
 * two constants stay in the sixteen registers; eight spilled and understated the peak. */
enum { FMA_PEAK_CHAINS = 6 };

typedef struct plm__fma_peak_args {
  float *out;         /* [lanes] */
  int64_t lanes;      /* independent lanes (CPU: vector lanes across cores; GPU: threads) */
  int64_t iterations; /* steps per lane */
} plm__fma_peak_args;

static inline double plm__fma_peak_flops(const plm__fma_peak_args *args) {
  return 2.0 * FMA_PEAK_CHAINS * (double)args->lanes * (double)args->iterations;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU probe (kernels/cpu/fma_peak.c): runs on the calling thread and the CPU pool. */
void plm__fma_peak_cpu(const plm__fma_peak_args *args);

/* Enqueue the CUDA probe (kernels/cuda/fma_peak.cu) on a cudaStream_t. */
plm_status plm__fma_peak_cuda(void *stream, const plm__fma_peak_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_FMA_PEAK_H */

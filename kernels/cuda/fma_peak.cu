/* kernels/cuda/fma_peak.cu: the arithmetic-peak probe on the GPU
 * (kernels/common/fma_peak.h): one lane per thread, FMA_PEAK_CHAINS independent fmaf
 * chains per thread, enough threads to fill every SM several times over. */
#include "kernels/common/fma_peak.h"
#include "kernels/cuda/launch.h"

__global__ void fma_peak_kernel(float *out, int64_t lanes, int64_t iterations) {
  const int64_t lane = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (lane >= lanes) return;
  float x[FMA_PEAK_CHAINS];
#pragma unroll
  for (int c = 0; c < FMA_PEAK_CHAINS; c++) x[c] = (float)(c + lane % 7) * 1e-3f;
  const float m = 0.999f, a = 1e-4f;
  for (int64_t i = 0; i < iterations; i++) {
#pragma unroll
    for (int c = 0; c < FMA_PEAK_CHAINS; c++) x[c] = fmaf(x[c], m, a);
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < FMA_PEAK_CHAINS; c++) sum += x[c];
  out[lane] = sum;
}

extern "C" plm_status plm__fma_peak_cuda(void *stream, const plm__fma_peak_args *args) {
  const unsigned threads = 256;
  const unsigned blocks = (unsigned)((args->lanes + threads - 1) / threads);
  fma_peak_kernel<<<blocks, threads, 0, (cudaStream_t)stream>>>(args->out, args->lanes,
                                                                args->iterations);
  return plm__cuda_check_launch("fma_peak_kernel");
}

/* kernels/cuda/forecast.cu: ar_forecast on the GPU, one thread per series
 * (kernels/common/forecast.h), its working doubles in scratch interleaved across the
 * series (element i of series s at scratch[i * S + s]), so a warp's accesses to them
 * coalesce. Double-precision arithmetic throughout. */
#include "kernels/common/forecast.h"
#include "kernels/cuda/launch.h"

enum { FORECAST_THREADS = 64 };

__global__ void ar_forecast_kernel(plm__ar_forecast_args args) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; s < args.count; s += step)
    plm__ar_forecast_one(args.series + s * args.length, args.length, args.lags, args.horizon,
                         args.out + s * args.horizon, args.scratch + s, args.count);
}

extern "C" plm_status plm__ar_forecast_cuda(void *stream, const plm__ar_forecast_args *args) {
  unsigned blocks = plm__cuda_blocks(args->count, FORECAST_THREADS);
  ar_forecast_kernel<<<blocks, FORECAST_THREADS, 0, (cudaStream_t)stream>>>(*args);
  return plm__cuda_check_launch("ar_forecast_kernel");
}

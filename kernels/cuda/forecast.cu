/* kernels/cuda/forecast.cu: ar_forecast on the GPU, one thread per series
 * (plm__ar_forecast_one, kernels/common/forecast.h), in one of two kernels by where a
 * series' working doubles (R, V, Q^T y, a row, the history: plm__ar_work_doubles(p))
 * live:
 *   - shared (lags 1..8, plm__ar_shared_threads > 0): in the block's shared memory,
 *     element i of thread t at work[i * threads + t], so a warp's accesses fall in
 *     consecutive banks. Blocks of plm__ar_shared_threads(p) threads, as many as fit
 *     48 KiB (256 at p = 1, 96 at p = 4, 32 at p = 6..8). No scratch.
 *   - scratch (lags 9..32): in global scratch interleaved across the series (element i
 *     of series s at scratch[i * S + s]), so a warp's accesses coalesce; 18 KiB per series
 *     at p = 32, more than shared memory holds for a warp.
 * Both run the same function with the same doubles in the same order: only the address
 * of each number differs. This file is compiled without contracting multiplies and adds
 * into fused multiply-adds (--fmad=false, CMakeLists.txt), as the CPU kernel is (C11, no
 * contraction), so both backends round every operation alike and give the same bits:
 * sqrt and division are correctly rounded on both; only plm__ar_hypot's fallback to
 * hypot, for values outside [2^-450, 2^450] or NaN, may differ in the last bit.
 *
 * Device cost model, per series of T points at lags p (n = p + 1, m = T - p equations):
 *   - global memory: 4 T bytes of series read, 4 h bytes of forecasts written.
 *   - working doubles: each equation's Givens rotations read and write R's upper
 *     triangle, the equation's row and Q^T y, about 2 n^2 + 3 n accesses of 8 bytes (65 at
 *     p = 4, 2,277 at p = 32); each Jacobi sweep about 10 n per column pair. On the
 *     shared path they stay in shared memory; on the scratch path they go to L1/L2 and
 *     DRAM: 18 KiB per equation per series at p = 32, against 4 bytes of series.
 *   - arithmetic: about 3 m n (n + 1) + 10 n^3 f64 flops (ops/forecast.c's cost), and a
 *     square root and two divisions per rotation (n per equation), each a sequence of
 *     instructions on the GPU.
 *   - launches: 1.
 *   Floor: the larger of 4 T bytes / bandwidth and the arithmetic / f64 throughput:
 *   100,000 series of 1000 points at p = 5 read 400 MB (120 us at 3.35 TB/s) and do
 *   1.3e10 flops (0.38 ms at an H100 SXM's 34 Tflop/s f64 without tensor cores) plus
 *   600 million square roots and 1.2 billion divisions, so arithmetic bounds it. The shared
 *   path at p = 5 runs blocks of 64 threads in 44.5 KiB, 5 blocks (10 warps) per SM of
 *   228 KiB; at p = 6..8 one warp per block.
 *   Registers (ptxas): the scratch kernel is bounded to 80 (__launch_bounds__(64, 12):
 *   12 blocks, 24 warps, per SM by the register file); uncapped it took 96 for sm_90
 *   (10 blocks) and 128 for sm_80 (8), no spill either way; capped lower it spills: at 72
 *   (14 blocks) 16 bytes stored and 16 loaded for sm_90, 8 and 8 for sm_80; at 64 (16
 *   blocks) 16 and 16 for sm_90. The shared kernel takes 56 for sm_90
 *   (80 for sm_80), uncapped: shared memory, not registers, bounds its blocks. Budgets
 *   (the build fails past them, or on any spill): kernels/cuda/register_budgets.txt.
 * Not yet run on a GPU (none was available when it was written); tests/test_forecast.c
 * checks both layouts' indexing on the host (each thread writes only its own slots and
 * gets the contiguous layout's bits) and the kernels under PLUME_BACKEND=cuda. */
#include "kernels/common/forecast.h"
#include "kernels/cuda/launch.h"

enum { SCRATCH_THREADS = 64 };

/* At least 12 blocks of 64 threads per SM: 80 registers (the header's "Registers"). */
__global__ void __launch_bounds__(SCRATCH_THREADS, 12)
    ar_forecast_scratch_kernel(plm__ar_forecast_args args) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; s < args.count; s += step)
    plm__ar_forecast_one(args.series + s * args.length, args.length, args.lags, args.horizon,
                         args.out + s * args.horizon, args.scratch + s, args.count);
}

/* Every thread uses its own interleaved slots only, so no barrier is needed. */
__global__ void ar_forecast_shared_kernel(plm__ar_forecast_args args) {
  extern __shared__ double work[];
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; s < args.count; s += step)
    plm__ar_forecast_one(args.series + s * args.length, args.length, args.lags, args.horizon,
                         args.out + s * args.horizon, work + threadIdx.x, blockDim.x);
}

extern "C" plm_status plm__ar_forecast_cuda(void *stream, const plm__ar_forecast_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  const int threads = plm__ar_shared_threads(args->lags);
  if (threads > 0) {
    const size_t smem = (size_t)threads * (size_t)plm__ar_work_doubles(args->lags) * sizeof(double);
    ar_forecast_shared_kernel<<<plm__cuda_blocks(args->count, threads), threads, smem, s>>>(*args);
    return plm__cuda_check_launch("ar_forecast_shared_kernel");
  }
  unsigned blocks = plm__cuda_blocks(args->count, SCRATCH_THREADS);
  ar_forecast_scratch_kernel<<<blocks, SCRATCH_THREADS, 0, s>>>(*args);
  return plm__cuda_check_launch("ar_forecast_scratch_kernel");
}

/* kernels/cuda/lstm.cu: one LSTM step on the GPU, per unit or through the GEMM (the two
 * paths and the rule between them: kernels/common/lstm.h).
 *
 * Per unit: one warp per unit (batch row, hidden index): its lanes stride along the
 * weight rows (coalesced reads of w_ih and w_hh), four gate sums are reduced with
 * shuffles, and lane 0 applies the state update shared with the CPU.
 *
 * GEMM: the two gate products with the matmul kernels (plm__matmul_cuda, FP32 SGEMM),
 * then one thread per unit applies the update to its four gates. */
#include "kernels/common/lstm.h"
#include "kernels/cuda/launch.h"

namespace {

constexpr unsigned THREADS = 256;
constexpr unsigned WARPS = THREADS / 32;

__global__ void __launch_bounds__(THREADS) lstm_kernel(plm__lstm_args args) {
  const int lane = threadIdx.x % 32;
  const int64_t units = args.batch * args.hidden;
  const int64_t step = (int64_t)gridDim.x * WARPS;
  for (int64_t unit = (int64_t)blockIdx.x * WARPS + threadIdx.x / 32; unit < units; unit += step) {
    const int64_t b = unit / args.hidden, j = unit % args.hidden;
    const float *x = args.x + b * args.input, *h = args.h + b * args.hidden;
    float sums[4];
#pragma unroll
    for (int g = 0; g < 4; g++) {
      const int64_t row = g * args.hidden + j;
      const float *wi = args.w_ih + row * args.input, *wh = args.w_hh + row * args.hidden;
      float sum = 0.0f;
      for (int64_t k = lane; k < args.input; k += 32) sum = fmaf(x[k], wi[k], sum);
      for (int64_t k = lane; k < args.hidden; k += 32) sum = fmaf(h[k], wh[k], sum);
      for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
      if (args.b_ih) sum += args.b_ih[row];
      if (args.b_hh) sum += args.b_hh[row];
      sums[g] = sum;
    }
    if (lane == 0)
      plm__lstm_update(sums[0], sums[1], sums[2], sums[3], args.c[unit], &args.out_h[unit],
                       &args.out_c[unit]);
  }
}

/* The new state of each unit from its gates (row b's i, f, g, o at
 * gates[b · 4 hidden + {0, 1, 2, 3} · hidden + j]); consecutive threads take consecutive
 * units, so every read and write is coalesced. */
__global__ void __launch_bounds__(THREADS) lstm_update_kernel(plm__lstm_args args) {
  const int64_t units = args.batch * args.hidden, hid = args.hidden;
  const int64_t step = (int64_t)gridDim.x * THREADS;
  for (int64_t unit = (int64_t)blockIdx.x * THREADS + threadIdx.x; unit < units; unit += step) {
    const int64_t b = unit / hid, j = unit % hid;
    const float *g = args.gates + b * 4 * hid + j;
    plm__lstm_update(g[0], g[hid], g[2 * hid], g[3 * hid], args.c[unit], &args.out_h[unit],
                     &args.out_c[unit]);
  }
}

}  // namespace

extern "C" plm_status plm__lstm_cuda(void *stream, const plm__lstm_args *args) {
  const int64_t units = args->batch * args->hidden;
  if (args->gates) {
    for (int which = 0; which < 2; which++) {
      const plm__matmul_args product = plm__lstm_gate_product(args, which);
      plm_status status = plm__matmul_cuda(stream, &product);
      if (status != PLM_OK) return status;
    }
    lstm_update_kernel<<<plm__cuda_blocks(units, THREADS), THREADS, 0, (cudaStream_t)stream>>>(
        *args);
    return plm__cuda_check_launch("lstm_update_kernel");
  }
  lstm_kernel<<<plm__cuda_blocks(units, WARPS), THREADS, 0, (cudaStream_t)stream>>>(*args);
  return plm__cuda_check_launch("lstm_kernel");
}

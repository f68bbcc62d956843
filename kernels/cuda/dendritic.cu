/* kernels/cuda/dendritic.cu: the dendritic layer on the GPU, per output or through the
 * GEMM (the two paths and the rule between them: kernels/common/dendritic.h).
 *
 * Per output: one warp per output (batch row, neuron): its lanes stride along each
 * dendrite's weight row (coalesced), the sum is reduced with shuffles (every lane gets
 * it), and the soma is folded by the functions shared with the CPU.
 *
 * GEMM: the sums of every output with the matmul kernels (plm__matmul_cuda, FP32 SGEMM)
 * into scratch, then one thread per output folds its dendrites' terms from there. */
#include "kernels/common/dendritic.h"
#include "kernels/cuda/launch.h"

namespace {

constexpr unsigned THREADS = 256;
constexpr unsigned WARPS = THREADS / 32;

__global__ void __launch_bounds__(THREADS) dendritic_kernel(plm__dendritic_args args) {
  const int lane = threadIdx.x % 32;
  const int64_t outputs = args.batch * args.neurons;
  const int64_t step = (int64_t)gridDim.x * WARPS;
  for (int64_t o = (int64_t)blockIdx.x * WARPS + threadIdx.x / 32; o < outputs; o += step) {
    const int64_t b = o / args.neurons, n = o % args.neurons;
    const float *x = args.x + b * args.input, *w = args.w + n * args.dendrites * args.input;
    float soma = plm__dendritic_soma_start(args.params.mode);
    for (int64_t d = 0; d < args.dendrites; d++) {
      const float *row = w + d * args.input;
      float a = 0.0f;
      for (int64_t i = lane; i < args.input; i += 32) a = fmaf(x[i], row[i], a);
      for (int offset = 16; offset > 0; offset /= 2) a += __shfl_xor_sync(0xffffffffu, a, offset);
      soma = plm__dendritic_fold(soma, plm__dendritic_term(a, &args.params), args.params.mode);
    }
    if (lane == 0) args.out[o] = soma;
  }
}

/* Each output's soma from its dendrites' sums (output o's at sums[o · dendrites + d]). */
__global__ void __launch_bounds__(THREADS) dendritic_fold_kernel(plm__dendritic_args args) {
  const int64_t outputs = args.batch * args.neurons;
  const int64_t step = (int64_t)gridDim.x * THREADS;
  for (int64_t o = (int64_t)blockIdx.x * THREADS + threadIdx.x; o < outputs; o += step) {
    const float *sums = args.sums + o * args.dendrites;
    float soma = plm__dendritic_soma_start(args.params.mode);
    for (int64_t d = 0; d < args.dendrites; d++)
      soma =
          plm__dendritic_fold(soma, plm__dendritic_term(sums[d], &args.params), args.params.mode);
    args.out[o] = soma;
  }
}

}  // namespace

extern "C" plm_status plm__dendritic_cuda(void *stream, const plm__dendritic_args *args) {
  const int64_t outputs = args->batch * args->neurons;
  if (args->sums) {
    const plm__matmul_args product = plm__dendritic_product(args);
    plm_status status = plm__matmul_cuda(stream, &product);
    if (status != PLM_OK) return status;
    dendritic_fold_kernel<<<plm__cuda_blocks(outputs, THREADS), THREADS, 0, (cudaStream_t)stream>>>(
        *args);
    return plm__cuda_check_launch("dendritic_fold_kernel");
  }
  dendritic_kernel<<<plm__cuda_blocks(outputs, WARPS), THREADS, 0, (cudaStream_t)stream>>>(*args);
  return plm__cuda_check_launch("dendritic_kernel");
}

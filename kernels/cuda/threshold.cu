/* kernels/cuda/threshold.cu: threshold on the GPU. A grid-stride loop, one element
 * per thread per step, the comparison shared with the CPU (kernels/common). The op
 * is bound by memory: 2 bytes per element for u8, 3 for u16, 5 for f32. */
#include "kernels/common/threshold.h"
#include "kernels/cuda/launch.h"

/* in and out are not __restrict__: plm_threshold allows out == in for u8 (the pipeline
 * runs a mask's threshold in place), and restrict on either would make that undefined. */
template <typename T>
__global__ void threshold_kernel(const T *in, uint8_t *out, int64_t count, double value,
                                 plm_compare compare) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step)
    out[i] = plm__threshold_one((double)in[i], value, compare);
}

extern "C" plm_status plm__threshold_cuda(void *stream, const plm__threshold_args *args) {
  const unsigned threads = 256;
  unsigned blocks = plm__cuda_blocks(args->count, threads);
  cudaStream_t s = (cudaStream_t)stream;
  switch (args->dtype) {
    case PLM_DTYPE_U8:
      threshold_kernel<<<blocks, threads, 0, s>>>((const uint8_t *)args->in, args->out, args->count,
                                                  args->value, args->compare);
      break;
    case PLM_DTYPE_U16:
      threshold_kernel<<<blocks, threads, 0, s>>>((const uint16_t *)args->in, args->out,
                                                  args->count, args->value, args->compare);
      break;
    case PLM_DTYPE_F32:
      threshold_kernel<<<blocks, threads, 0, s>>>((const float *)args->in, args->out, args->count,
                                                  args->value, args->compare);
      break;
    default:
      return plm__fail_raw(PLM_ERR_INTERNAL, "threshold: dtype %d reached the kernel",
                           (int)args->dtype);
  }
  return plm__cuda_check_launch("threshold_kernel");
}

/* kernels/cuda/nuc.cu: non-uniformity correction on the GPU. A grid-stride loop, one
 * element per thread per step, the correction shared with the CPU (kernels/common): the
 * same bits. Bound by memory: 13 to 16 bytes per element. */
#include "kernels/common/nuc.h"
#include "kernels/cuda/launch.h"

/* in and out are not __restrict__: out may be in (f32 in place). */
template <typename T>
__global__ void nuc_kernel(const T *in, const float *__restrict__ gain,
                           const float *__restrict__ offset, float *out, int64_t count,
                           int64_t frame_pixels) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
    const int64_t p = i % frame_pixels;
    out[i] = plm__nuc_one(gain[p], (float)in[i], offset[p]);
  }
}

extern "C" plm_status plm__nuc_cuda(void *stream, const plm__nuc_args *args) {
  const unsigned threads = 256;
  unsigned blocks = plm__cuda_blocks(args->count, threads);
  cudaStream_t s = (cudaStream_t)stream;
  switch (args->dtype) {
    case PLM_DTYPE_U8:
      nuc_kernel<<<blocks, threads, 0, s>>>((const uint8_t *)args->in, args->gain, args->offset,
                                            args->out, args->count, args->frame_pixels);
      break;
    case PLM_DTYPE_U16:
      nuc_kernel<<<blocks, threads, 0, s>>>((const uint16_t *)args->in, args->gain, args->offset,
                                            args->out, args->count, args->frame_pixels);
      break;
    case PLM_DTYPE_F32:
      nuc_kernel<<<blocks, threads, 0, s>>>((const float *)args->in, args->gain, args->offset,
                                            args->out, args->count, args->frame_pixels);
      break;
    default:
      return plm__fail_raw(PLM_ERR_INTERNAL, "nuc: dtype %d reached the kernel", (int)args->dtype);
  }
  return plm__cuda_check_launch("nuc_kernel");
}

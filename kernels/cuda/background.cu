/* kernels/cuda/background.cu: temporal background suppression on the GPU. One thread per
 * pixel (grid-stride), its background in a register while it walks the call's frames in
 * order; the update shared with the CPU (kernels/common): the same bits. Bound by
 * memory: in and out per frame, the state once per call. */
#include "kernels/common/background.h"
#include "kernels/cuda/launch.h"

/* in and out are not __restrict__: out may be in (f32 in place). */
template <typename T>
__global__ void background_kernel(const T *in, float *__restrict__ state, float *out,
                                  plm__background_args args) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < args.frame_pixels;
       p += stride) {
    float b = state[p];
    for (int64_t t = 0; t < args.frames; t++) {
      const int64_t i = t * args.frame_pixels + p;
      out[i] = plm__background_one((float)in[i], &b, args.first && t == 0, args.mode, args.alpha,
                                   args.step);
    }
    state[p] = b;
  }
}

extern "C" plm_status plm__background_cuda(void *stream, const plm__background_args *args) {
  const unsigned threads = 256;
  unsigned blocks = plm__cuda_blocks(args->frame_pixels, threads);
  cudaStream_t s = (cudaStream_t)stream;
  switch (args->dtype) {
    case PLM_DTYPE_U8:
      background_kernel<<<blocks, threads, 0, s>>>((const uint8_t *)args->in, args->state,
                                                   args->out, *args);
      break;
    case PLM_DTYPE_U16:
      background_kernel<<<blocks, threads, 0, s>>>((const uint16_t *)args->in, args->state,
                                                   args->out, *args);
      break;
    case PLM_DTYPE_F32:
      background_kernel<<<blocks, threads, 0, s>>>((const float *)args->in, args->state, args->out,
                                                   *args);
      break;
    default:
      return plm__fail_raw(PLM_ERR_INTERNAL, "background: dtype %d reached the kernel",
                           (int)args->dtype);
  }
  return plm__cuda_check_launch("background_kernel");
}

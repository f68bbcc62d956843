/* kernels/cuda/badpixel.cu: bad-pixel replacement on the GPU. A grid-stride loop, one
 * output pixel per thread per step, each through plm__badpixel_at (kernels/common): the
 * CPU kernel's bits. The kernel has no logic of its own beyond the index arithmetic, so no
 * host-compiled logic test: tests/test_badpixel.c checks plm__badpixel_at on the host. */
#include "kernels/common/badpixel.h"
#include "kernels/cuda/launch.h"

__global__ void badpixel_kernel(plm__badpixel_args args, int64_t count) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x, pixels = args.height * args.width;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
    const int64_t p = i % pixels;
    args.out[i] = plm__badpixel_at(&args, i / pixels, p / args.width, p % args.width);
  }
}

extern "C" plm_status plm__badpixel_cuda(void *stream, const plm__badpixel_args *args) {
  if (args->dtype != PLM_DTYPE_U8 && args->dtype != PLM_DTYPE_U16 && args->dtype != PLM_DTYPE_F32)
    return plm__fail_raw(PLM_ERR_INTERNAL, "badpixel: dtype %d reached the kernel",
                         (int)args->dtype);
  const unsigned threads = 256;
  const int64_t count = args->frames * args->height * args->width;
  badpixel_kernel<<<plm__cuda_blocks(count, threads), threads, 0, (cudaStream_t)stream>>>(*args,
                                                                                          count);
  return plm__cuda_check_launch("badpixel_kernel");
}

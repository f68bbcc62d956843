/* kernels/cuda/badpixel.cu: bad-pixel replacement on the GPU, each output pixel through
 * plm__badpixel_at (kernels/common): the CPU kernel's bits. The kernel has no logic of its
 * own beyond the walk over the pixels, so no host-compiled logic test:
 * tests/test_badpixel.c checks plm__badpixel_at on the host and the kernel on every
 * backend.
 *
 * The walk: blocks of tx x ty threads, tx columns (256, or the width rounded up to a warp
 * where narrower) by ty = 256 / tx rows, over a grid of (column blocks, row blocks,
 * frames), each dimension capped and walked grid-stride. A thread's frame, row and column
 * come from the grid, so a pixel costs no division. It was one thread a pixel of the
 * flattened stack, which found them by i % pixels, i / pixels, p / w and p % w: four
 * 64-bit divisions a pixel (a called routine of dozens of instructions each on a GPU),
 * and the H200 measured the op at 8.9x its floor (278 us at 4096^2 f32, commit d834510).
 * The floor: 9 bytes a pixel for f32 (the value, its flag, the output), the neighbours of
 * the flagged third from the caches. */
#include "kernels/common/badpixel.h"
#include "kernels/cuda/launch.h"

namespace {

constexpr unsigned kThreads = 256, kWarp = 32;

__global__ void badpixel_kernel(plm__badpixel_args args) {
  const int64_t x0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t y0 = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
  const int64_t x_step = (int64_t)gridDim.x * blockDim.x, y_step = (int64_t)gridDim.y * blockDim.y;
  for (int64_t f = blockIdx.z; f < args.frames; f += gridDim.z)
    for (int64_t y = y0; y < args.height; y += y_step) {
      float *row = args.out + (f * args.height + y) * args.width;
      for (int64_t x = x0; x < args.width; x += x_step) row[x] = plm__badpixel_at(&args, f, y, x);
    }
}

}  // namespace

extern "C" plm_status plm__badpixel_cuda(void *stream, const plm__badpixel_args *args) {
  if (args->dtype != PLM_DTYPE_U8 && args->dtype != PLM_DTYPE_U16 && args->dtype != PLM_DTYPE_F32)
    return plm__fail_raw(PLM_ERR_INTERNAL, "badpixel: dtype %d reached the kernel",
                         (int)args->dtype);
  const int64_t warps_wide = (args->width + kWarp - 1) / kWarp;
  const unsigned tx = warps_wide * kWarp < kThreads ? (unsigned)(warps_wide * kWarp) : kThreads;
  const unsigned ty = kThreads / tx;
  const dim3 block(tx, ty);
  const dim3 grid(plm__cuda_grid_x((args->width + tx - 1) / tx),
                  plm__cuda_grid_yz((args->height + ty - 1) / ty), plm__cuda_grid_yz(args->frames));
  badpixel_kernel<<<grid, block, 0, (cudaStream_t)stream>>>(*args);
  return plm__cuda_check_launch("badpixel_kernel");
}

/* kernels/cuda/background.cu: temporal background suppression on the GPU. One thread per
 * pixel (grid-stride), its background in a register while it walks the call's frames in
 * order (with a gate its spread v too); the update shared with the CPU (kernels/common): the
 * same bits. Not an element-wise
 * map (a pixel's frames are a recurrence), but its dtype dispatch is the maps' one
 * (plm__cuda_map_dtypes, kernels/cuda/map.h). Bound by memory: in and out per frame, the
 * state (b, and v with a gate) once per call; with a hold, each pixel tests its diamond of
 * the hold once per call (its row and column one division of p). */
#include "kernels/common/background.h"
#include "kernels/cuda/map.h"

/* in and out are not __restrict__: out may be in (f32 in place). */
template <typename T>
__global__ void background_kernel(const T *in, float *__restrict__ state, float *out,
                                  plm__background_args args) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < args.frame_pixels;
       p += stride) {
    const bool gated = args.rule.gate2 > 0.0f;
    const bool held = args.hold && plm__hold_reaches(args.hold, args.height, args.width,
                                                        p / args.width, p % args.width,
                                                        args.hold_radius);
    /* A first frame initialises the state: its old values are not read (the header's
     * contract; compute-sanitizer's initcheck found them read on the first H200 run). */
    float b = args.first ? 0.0f : state[p];
    float v = gated && !args.first ? state[args.frame_pixels + p] : 0.0f;
    for (int64_t t = 0; t < args.frames; t++) {
      const int64_t i = t * args.frame_pixels + p;
      out[i] = plm__background_one((float)in[i], &b, &v, args.first && t == 0, held, &args.rule);
    }
    state[p] = b;
    if (gated) state[args.frame_pixels + p] = v;
  }
}

extern "C" plm_status plm__background_cuda(void *stream, const plm__background_args *args) {
  const unsigned threads = 256;
  const unsigned blocks = plm__cuda_blocks(args->frame_pixels, threads);
  return plm__cuda_map_dtypes(args->dtype, "background", [&](auto zero) {
    using T = decltype(zero);
    background_kernel<T><<<blocks, threads, 0, (cudaStream_t)stream>>>(
        (const T *)args->in, args->state, args->out, *args);
  });
}

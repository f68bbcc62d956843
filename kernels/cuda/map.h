/* kernels/cuda/map.h: the CUDA kernel of an element-wise op, one template for every such
 * op (internal, C++ only).
 *
 * An element-wise op is one per-element function in kernels/common/<op>.h (PLM_HD), that
 * kernels/cpu/map.h runs on the CPU and this grid-stride template runs on the GPU: the
 * same function, so the same bits. The ops of PLM__MAP_OPS (kernels/common/map_ops.h)
 * get their functor and launch from their line there (kernels/cuda/map_ops.cu); an op
 * that needs more (threshold's comparison, vector_add's f32 only) writes an element
 * functor and one launch of its own, as map_ops.cu's are:
 *
 *   struct nuc_elem {
 *     template <typename T>
 *     __device__ float operator()(const plm__nuc_args &k, T x, int64_t p) const {
 *       return plm__nuc_at(&k, (float)x, p);
 *     }
 *   };
 *   extern "C" plm_status plm__nuc_cuda(void *stream, const void *packed) {
 *     const plm__nuc_args *args = (const plm__nuc_args *)packed;
 *     return plm__cuda_map_dtypes(args->dtype, "nuc", [&](auto zero) {
 *       using T = decltype(zero);
 *       plm__map_kernel<nuc_elem, plm__nuc_args, T, float>
 *           <<<plm__map_blocks(args->count), PLM__MAP_THREADS, 0, (cudaStream_t)stream>>>(
 *               *args, (const T *)args->in, args->out, args->count);
 *     });
 *   }
 *
 * plm__cuda_map_dtypes calls the launch with a zero of each input dtype the maps take (u8,
 * u16, f32), checks it (plm__cuda_check_launch) and refuses any other dtype (the op's slot
 * mask already did). The launch itself stays in the op's .cu, spelled with its template
 * arguments, because the emulator's rewriting (emu/cu2cpp.pl) sees launches in .cu files
 * only. ARGS has count and period (int64_t) as kernels/cpu/map.h says: p is i % period,
 * or i when period is 0. in and out are not __restrict__: an op may run in place (out ==
 * in exactly), which restrict would make undefined.
 */
#ifndef PLUME_KERNELS_CUDA_MAP_H
#define PLUME_KERNELS_CUDA_MAP_H

#include <stdint.h>

#include "kernels/cuda/launch.h"
#include "plume/tensor.h"

enum { PLM__MAP_THREADS = 256 };

static inline unsigned plm__map_blocks(int64_t count) {
  return plm__cuda_blocks(count, PLM__MAP_THREADS);
}

/* out[i] = Elem()(k, in[i], p) over count elements, a grid-stride loop. */
template <typename Elem, typename Args, typename In, typename Out>
__global__ void plm__map_kernel(Args k, const In *in, Out *out, int64_t count) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step)
    out[i] = Elem()(k, in[i], k.period > 0 ? i % k.period : i);
}

/* out[i] = Elem()(k, in[i], in2[i], p) over count elements, a grid-stride loop. */
template <typename Elem, typename Args, typename In, typename Out>
__global__ void plm__map2_kernel(Args k, const In *in, const In *in2, Out *out, int64_t count) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step)
    out[i] = Elem()(k, in[i], in2[i], k.period > 0 ? i % k.period : i);
}

/* launch(T{}) for the input dtype (u8, u16 or f32), then the launch's check, naming op. */
template <typename Launch>
static plm_status plm__cuda_map_dtypes(plm_dtype dtype, const char *op, Launch launch) {
  switch (dtype) {
    case PLM_DTYPE_U8: launch((uint8_t)0); break;
    case PLM_DTYPE_U16: launch((uint16_t)0); break;
    case PLM_DTYPE_F32: launch(0.0f); break;
    default:
      return plm__fail_raw(PLM_ERR_INTERNAL, "%s: dtype %d reached the kernel", op, (int)dtype);
  }
  return plm__cuda_check_launch(op);
}

#endif /* PLUME_KERNELS_CUDA_MAP_H */

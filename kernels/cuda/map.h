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
 *       plm__map_kernel<nuc_elem, plm__nuc_args, float, T>
 *           <<<plm__map_blocks(args->count), PLM__MAP_THREADS, 0, (cudaStream_t)stream>>>(
 *               *args, args->out, args->count, (const T *)args->in);
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
#include "kernels/cuda/vector_of.h"
#include "plume/tensor.h"

enum {
  PLM__MAP_THREADS = 256,
  PLM__MAP_QUAD = 4 /* the elements one thread takes per step */
};

/* Blocks for count elements, four of them per thread (plm__cuda_blocks' cap: the
 * templates below are grid-stride loops). */
static inline unsigned plm__map_blocks(int64_t count) {
  return plm__cuda_blocks((count + PLM__MAP_QUAD - 1) / PLM__MAP_QUAD, PLM__MAP_THREADS);
}

/* Four elements as one load or store: the CUDA vector type of T's size times four (4, 8 or
 * 16 bytes, aligned to that: kernels/cuda/vector_of.h), through which a quad moves in one
 * instruction (ld.global.cg.v4: cached in the L2, not the L1, which a streaming map would not
 * reuse). Through the cache-hint intrinsics rather than a plain copy, so that the emulator
 * too sees one access (emu/include/plm_emu/intrinsics.h). */
template <typename T>
struct plm__quad_of {
  using type = typename plm__vector_of<T, PLM__MAP_QUAD>::type;
};

template <typename T>
struct plm__quad {
  T v[PLM__MAP_QUAD];

  __device__ static plm__quad load(const T *at) {
    const typename plm__quad_of<T>::type q = __ldcg((const typename plm__quad_of<T>::type *)at);
    return plm__quad{{q.x, q.y, q.z, q.w}};
  }
  __device__ void store(T *at) const {
    typename plm__quad_of<T>::type q;
    q.x = v[0], q.y = v[1], q.z = v[2], q.w = v[3];
    __stcg((typename plm__quad_of<T>::type *)at, q);
  }
};

/* Whether every pointer lets quads of its element move as one vector (all quads of a
 * launch then do: each starts at a multiple of four elements). */
template <typename T>
__device__ inline bool plm__quad_aligned(const T *at) {
  return (uintptr_t)at % (sizeof(T) * PLM__MAP_QUAD) == 0;
}

/* The place of element i in its period: i itself when period is 0. */
__device__ inline int64_t plm__map_place(int64_t i, int64_t period) {
  return period > 0 ? i % period : i;
}

/* The place of the element `by` after the one at place p: a subtraction, not a 64-bit
 * division, but where by passes a whole period (frames smaller than a block). */
__device__ inline int64_t plm__map_place_after(int64_t p, int64_t by, int64_t period) {
  p += by;
  if (period > 0 && p >= period) p = p - period < period ? p - period : p % period;
  return p;
}

/* The quad of outputs at `at` (element `first` on) from its inputs' quads, stored as one
 * vector. */
template <typename Elem, typename Args, typename Out, typename... In>
__device__ inline void plm__map_quad(const Args &k, Out *at, int64_t first,
                                     const plm__quad<In> &...x) {
  plm__quad<Out> y;
  for (int j = 0; j < PLM__MAP_QUAD; j++) y.v[j] = Elem()(k, x.v[j]..., first + j);
  y.store(at);
}

/* out[i] = Elem()(k, in[i]..., p) over count elements, for one input or more. A block
 * takes 4 x blockDim.x elements per step of a grid-stride loop, four a thread, in one of
 * two layouts:
 *   quads    thread t the four from 4t on, each quad one vector load per input and one
 *            store, when every pointer is aligned for vectors and the op has no period (p
 *            is i);
 *   strided  thread t elements t, t + blockDim.x, ...: each warp access 32 consecutive
 *            elements, as an op with a period wants for its per-pixel tables (nuc's gain
 *            at p), and the only layout unaligned pointers allow.
 * Why four a thread: a byte or a u16 per thread leaves too few bytes in flight for a GPU's
 * memory (the H200 measured clip u8 at 4.0x its floor and threshold at 3.3x with one
 * element a thread, f32 vector_add at 1.9x), and one place in the period (a 64-bit
 * division) serves four elements. The same elements either way, so the same bits; in
 * place (out == an input) stays safe: each element is read by the thread that writes it,
 * before it writes it. */
template <typename Elem, typename Args, typename Out, typename... In>
__global__ void plm__map_kernel(Args k, Out *out, int64_t count, const In *...in) {
  static_assert(sizeof...(In) >= 1, "an element-wise op reads at least one input");
  const bool quads = k.period == 0 && plm__quad_aligned(out) && (plm__quad_aligned(in) && ...);
  const int64_t span = (int64_t)blockDim.x * PLM__MAP_QUAD;
  for (int64_t base = blockIdx.x * span; base < count; base += gridDim.x * span) {
    if (quads) {
      const int64_t first = base + (int64_t)threadIdx.x * PLM__MAP_QUAD;
      if (first + PLM__MAP_QUAD <= count)
        plm__map_quad<Elem>(k, out + first, first, plm__quad<In>::load(in + first)...);
      else
        for (int64_t i = first; i < count; i++) out[i] = Elem()(k, in[i]..., i);
    } else {
      int64_t p = plm__map_place(base + threadIdx.x, k.period);
      for (int j = 0; j < PLM__MAP_QUAD; j++, p = plm__map_place_after(p, blockDim.x, k.period)) {
        const int64_t i = base + threadIdx.x + (int64_t)j * blockDim.x;
        if (i < count) out[i] = Elem()(k, in[i]..., p);
      }
    }
  }
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

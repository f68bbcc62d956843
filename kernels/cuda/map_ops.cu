/* kernels/cuda/map_ops.cu: the CUDA kernels of the element-wise ops (every header of
 * kernels/common/map/: PLM__MAP_OPS, kernels/common/map_ops.h), each its per-element
 * function plm__<op>_at (shared with the CPU: the same bits) in the grid-stride template of
 * kernels/cuda/map.h, one launch for every op. Bound by memory: the bytes of each input and
 * of the output per element. */
#include "kernels/common/map_ops.h"
#include "kernels/cuda/map.h"

/* The output element of an OUT of the list, for input elements T. */
template <typename T>
struct out_f32 {
  using type = float;
};
template <typename T>
struct out_u8 {
  using type = uint8_t;
};
template <typename T>
struct out_same {
  using type = T;
};
#define OUT_OF_F32 out_f32
#define OUT_OF_U8 out_u8
#define OUT_OF_SAME out_same

/* One input: out[i] = Elem()(k, in[i], p), for the input's dtype. */
template <typename Elem, template <typename> class OutOf, typename Args>
static plm_status launch_map(void *stream, const Args *args, const char *op) {
  return plm__cuda_map_dtypes(args->dtype, op, [&](auto zero) {
    using T = decltype(zero);
    using Out = typename OutOf<T>::type;
    plm__map_kernel<Elem, Args, Out, T>
        <<<plm__map_blocks(args->count), PLM__MAP_THREADS, 0, (cudaStream_t)stream>>>(
            *args, (Out *)args->out, args->count, (const T *)args->in);
  });
}

/* Two inputs of one dtype: out[i] = Elem()(k, in[i], in2[i], p). */
template <typename Elem, template <typename> class OutOf, typename Args>
static plm_status launch_map2(void *stream, const Args *args, const char *op) {
  return plm__cuda_map_dtypes(args->dtype, op, [&](auto zero) {
    using T = decltype(zero);
    using Out = typename OutOf<T>::type;
    plm__map_kernel<Elem, Args, Out, T, T>
        <<<plm__map_blocks(args->count), PLM__MAP_THREADS, 0, (cudaStream_t)stream>>>(
            *args, (Out *)args->out, args->count, (const T *)args->in, (const T *)args->in2);
  });
}

/* op's element functor (op_elem, the name the kernel's symbol carries) and launcher. */
#define ELEM_1(op)                                                                 \
  struct op##_elem {                                                               \
    template <typename T>                                                          \
    __device__ float operator()(const plm__##op##_args &k, T x, int64_t p) const { \
      return plm__##op##_at(&k, (float)x, p);                                      \
    }                                                                              \
  };
#define ELEM_2(op)                                                                      \
  struct op##_elem {                                                                    \
    template <typename T>                                                               \
    __device__ float operator()(const plm__##op##_args &k, T a, T b, int64_t p) const { \
      return plm__##op##_at(&k, (float)a, (float)b, p);                                 \
    }                                                                                   \
  };
#define LAUNCH_1 launch_map
#define LAUNCH_2 launch_map2
#define CUDA_MAP_OP(op, INPUTS, OUT, GRAIN)                                                       \
  ELEM_##INPUTS(op) extern "C" plm_status plm__##op##_cuda(void *stream, const void *args) {      \
    return LAUNCH_##INPUTS<op##_elem, OUT_OF_##OUT>(stream, (const plm__##op##_args *)args, #op); \
  }

PLM__MAP_OPS(CUDA_MAP_OP)

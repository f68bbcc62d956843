/* kernels/cuda/nuc.cu: non-uniformity correction on the GPU: plm__nuc_at
 * (kernels/common/nuc.h, shared with the CPU: the same bits) in the element-wise template
 * (kernels/cuda/map.h). Bound by memory: 13 to 16 bytes per element. */
#include "kernels/common/nuc.h"
#include "kernels/cuda/map.h"

struct nuc_elem {
  template <typename T>
  __device__ float operator()(const plm__nuc_args &k, T x, int64_t p) const {
    return plm__nuc_at(&k, (float)x, p);
  }
};

extern "C" plm_status plm__nuc_cuda(void *stream, const plm__nuc_args *args) {
  return plm__cuda_map_dtypes(args->dtype, "nuc", [&](auto zero) {
    using T = decltype(zero);
    plm__map_kernel<nuc_elem, plm__nuc_args, T, float>
        <<<plm__map_blocks(args->count), PLM__MAP_THREADS, 0, (cudaStream_t)stream>>>(
            *args, (const T *)args->in, args->out, args->count);
  });
}

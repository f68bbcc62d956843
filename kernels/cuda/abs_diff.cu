/* kernels/cuda/abs_diff.cu: abs_diff on the GPU: plm__abs_diff_at
 * (kernels/common/abs_diff.h, shared with the CPU: the same bits) in the element-wise
 * template (kernels/cuda/map.h). */
#include "kernels/common/abs_diff.h"
#include "kernels/cuda/map.h"

struct abs_diff_elem {
  template <typename T>
  __device__ T operator()(const plm__abs_diff_args &k, T a, T b, int64_t p) const {
    return (T)plm__abs_diff_at(&k, (float)a, (float)b, p);
  }
};

extern "C" plm_status plm__abs_diff_cuda(void *stream, const plm__abs_diff_args *args) {
  return plm__cuda_map_dtypes(args->dtype, "abs_diff", [&](auto zero) {
    using T = decltype(zero);
    plm__map2_kernel<abs_diff_elem, plm__abs_diff_args, T, T>
        <<<plm__map_blocks(args->count), PLM__MAP_THREADS, 0, (cudaStream_t)stream>>>(
            *args, (const T *)args->in, (const T *)args->in2, (T *)args->out, args->count);
  });
}

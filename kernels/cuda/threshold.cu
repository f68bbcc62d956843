/* kernels/cuda/threshold.cu: threshold on the GPU: plm__threshold_at
 * (kernels/common/threshold.h, shared with the CPU: the same answers) in the element-wise
 * template (kernels/cuda/map.h). The op is bound by memory: 2 bytes per element for u8, 3
 * for u16, 5 for f32. */
#include "kernels/common/threshold.h"
#include "kernels/cuda/map.h"

struct threshold_elem {
  template <typename T>
  __device__ uint8_t operator()(const plm__threshold_args &k, T x, int64_t) const {
    return plm__threshold_at(&k, (float)x, k.compare);
  }
};

/* in and out may be the same memory: plm_threshold allows out == in for u8 (the pipeline
 * runs a mask's threshold in place). */
extern "C" plm_status plm__threshold_cuda(void *stream, const plm__threshold_args *args) {
  return plm__cuda_map_dtypes(args->dtype, "threshold", [&](auto zero) {
    using T = decltype(zero);
    plm__map_kernel<threshold_elem, plm__threshold_args, uint8_t, T>
        <<<plm__map_blocks(args->count), PLM__MAP_THREADS, 0, (cudaStream_t)stream>>>(
            *args, args->out, args->count, (const T *)args->in);
  });
}

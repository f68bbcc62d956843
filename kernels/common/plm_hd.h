/* kernels/common/plm_hd.h: code that both backends compile.
 *
 * Per-element math shared by the CPU and CUDA kernels lives in kernels/common/ as
 * `static inline PLM_HD` functions: __host__ __device__ under nvcc, plain C
 * otherwise, so the CPU tests exercise the very code the GPU runs.
 */
#ifndef PLUME_KERNELS_COMMON_PLM_HD_H
#define PLUME_KERNELS_COMMON_PLM_HD_H

#ifdef __CUDACC__
#define PLM_HD __host__ __device__
#else
#define PLM_HD
#endif

#endif /* PLUME_KERNELS_COMMON_PLM_HD_H */

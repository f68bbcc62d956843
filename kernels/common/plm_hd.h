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

/* f32 arithmetic rounded exactly as written: each operation rounded to nearest. nvcc
 * contracts a * b + c into a fused multiply-add (one rounding) where it sees fit, so
 * the same expression may round differently in two kernels, or differ from the CPU
 * (C11 does not contract). Math whose results must match bit for bit across kernels
 * and backends is written with these. */
#ifdef __CUDA_ARCH__
#define PLM__FADD(a, b) __fadd_rn((a), (b))
#define PLM__FSUB(a, b) __fsub_rn((a), (b))
#define PLM__FMUL(a, b) __fmul_rn((a), (b))
#else
#define PLM__FADD(a, b) ((a) + (b))
#define PLM__FSUB(a, b) ((a) - (b))
#define PLM__FMUL(a, b) ((a) * (b))
#endif

#endif /* PLUME_KERNELS_COMMON_PLM_HD_H */

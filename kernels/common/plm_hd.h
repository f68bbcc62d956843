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

/* Before a loop with a constant trip count in PLM_HD code: PLM_UNROLLED asks nvcc to unroll
 * it whole (so that an array indexed by its counter stays in registers, not a stack frame),
 * PLM_ROLLED to keep it rolled (fewer registers); the host compiler, which would warn of an
 * unknown pragma, sees neither. */
#ifdef __CUDA_ARCH__
#define PLM_UNROLLED _Pragma("unroll")
#define PLM_ROLLED _Pragma("unroll 1")
#else
#define PLM_UNROLLED
#define PLM_ROLLED
#endif

#endif /* PLUME_KERNELS_COMMON_PLM_HD_H */

/* plume/matmul.h: dense matrix multiply with a fused bias and activation (conventions in
 * plume/ops.h). */
#ifndef PLUME_MATMUL_H
#define PLUME_MATMUL_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- matmul -------------------------------------------------------------------------
 * out = act(a · b + bias), row-major, all f32: a is (M, K), b is (K, N) (not
 * transposed: numpy's `a @ b`), bias is (N,) broadcast over the rows, or NULL for none
 * (torch.nn.functional.linear(a, b.T, bias) then the activation). out is (M, N) and may
 * not overlap a, b or bias.
 *
 * Activations: NONE; RELU max(0, x) (NaN stays NaN); SIGMOID 1 / (1 + exp(-x)); TANH.
 *
 * Precision (what the products are computed from; every sum is accumulated in f32):
 *   FP32  exact f32 inputs. CUDA: a tiled shared-memory SGEMM on the CUDA cores.
 *   TF32  each element of a and b is first rounded to nearest, ties to even, to a
 *         10-bit mantissa (TensorFloat-32, f32's exponent). CUDA: tensor cores
 *         (WMMA m16n16k8, sm_80 and later).
 *   BF16  the same with a 7-bit mantissa (bfloat16). CUDA: tensor cores (WMMA
 *         m16n16k16 on __nv_bfloat16, sm_80 and later).
 *   AUTO  on cuda, TF32 when M·N·K >= PLM_MATMUL_AUTO_TF32_MIN_WORK, else FP32; on the
 *         host (no tensor cores, so lower precision would buy nothing) always FP32.
 * The host backend has no tensor cores: it rounds the inputs exactly as above and
 * multiplies in f32, so both backends give TF32 and BF16 the same meaning and
 * agree up to the order of the f32 sums. Where the code built for the GPU is older than
 * sm_80 (CMAKE_CUDA_ARCHITECTURES below 80), WMMA on tf32 / bf16 does not exist: the
 * inputs are still rounded, and the FP32 kernel multiplies them.
 * Accuracy (tested against float64): |error| <= tol · Σ_k |a_ik|·|b_kj| (+ |bias_j|) per
 * element before the activation, tol 1e-5 for FP32, 1e-3 for TF32, 1e-2 for BF16.
 * NaN and infinities propagate as in any f32 product sum. */

typedef enum plm_precision {
  PLM_PRECISION_FP32 = 0, /* the default */
  PLM_PRECISION_TF32 = 1,
  PLM_PRECISION_BF16 = 2,
  PLM_PRECISION_AUTO = 3
} plm_precision;

typedef enum plm_activation {
  PLM_ACTIVATION_NONE = 0, /* the default */
  PLM_ACTIVATION_RELU = 1,
  PLM_ACTIVATION_SIGMOID = 2,
  PLM_ACTIVATION_TANH = 3
} plm_activation;

/* AUTO's switch to TF32 tensor cores: M·N·K at or above this (2^24, e.g. 256³). NOT YET
 * MEASURED: chosen without a GPU at hand, to be re-measured (where tensor cores overtake
 * the f32 kernel, launch overheads included) and updated on one. */
#define PLM_MATMUL_AUTO_TF32_MIN_WORK (1LL << 24)

typedef struct plm_matmul_params {
  plm_precision precision;
  plm_activation activation;
} plm_matmul_params;

/* plm_matmul_params_default: The defaults of the operation's parameter schema (ops/op_desc.h):
 * PLM_PRECISION_FP32, PLM_ACTIVATION_NONE. */

/* plm_matmul: Enqueue out = act(a · b + bias) on stream. bias may be NULL. Errors
 * (PLM_ERR_INVALID_ARG unless said): a NULL stream, a, b, params or out; a tensor not f32,
 * not 2-D (bias: 1-D), not contiguous (PLM_ERR_UNSUPPORTED) or of another context;
 * a's K != b's K; bias not of N elements; out not (M, N); out overlapping an input;
 * an unknown precision or activation. */
/* plm_matmul_output: out's shape: f32 (M, N). */
/* bytes: 4·(M·K + K·N + M·N, + N with bias); flops: 2·M·N·K, + M·N with bias, + M·N
 * with an activation. bias may be NULL. */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_MATMUL_H */

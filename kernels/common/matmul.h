/* kernels/common/matmul.h: the per-element math of matmul both backends run (rounding
 * to TF32 / BF16; the activations are in kernels/common/activation.h), and the arguments of a
 * matmul launch (see plume/matmul.h for the semantics). */
#ifndef PLUME_KERNELS_COMMON_MATMUL_H
#define PLUME_KERNELS_COMMON_MATMUL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels/common/activation.h"
#include "kernels/common/plm_hd.h"
#include "plume/matmul.h"

/* The most rows (m) the CUDA kernels take: 65535 row tiles of 64 (the grid's y). */
#define PLM__MATMUL_CUDA_MAX_ROWS (65535LL * 64)

/* out = activation(a · b + bias), or with accumulate out = activation(out + a · b + bias).
 * plm_matmul leaves b_transposed and accumulate false; the internal callers that set them
 * (lstm_cell's gate products, kernels/common/lstm.h; dendritic's sums,
 * kernels/common/dendritic.h) get the same blocking, rounding and summation order as
 * plm_matmul on the transposed b, on both backends. */
typedef struct plm__matmul_args {
  const float *a;    /* (m, k) */
  const float *b;    /* (k, n), or (n, k) when b_transposed */
  const float *bias; /* (n) or NULL */
  float *out;        /* (m, n) */
  int64_t m, n, k;
  plm_precision precision; /* resolved: FP32, TF32 or BF16, never AUTO */
  plm_activation activation;
  bool b_transposed; /* b is stored (n, k) row-major and out gets a · bᵀ: torch's weight
                        layout (out_features, in_features) */
  bool accumulate;   /* out's old values are added to the product (the bias and the
                        activation still come after) */
} plm__matmul_args;

/* x rounded to nearest, ties to even, keeping `mantissa_bits` of f32's 23 (10 for TF32,
 * 7 for BF16); infinities and NaN unchanged, overflow rounds to infinity. */
static inline PLM_HD float plm__round_mantissa(float x, int mantissa_bits) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;
  const int drop = 23 - mantissa_bits;
  const uint32_t half = (1u << (drop - 1)) - 1u;
  u += half + ((u >> drop) & 1u);
  u &= ~((1u << drop) - 1u);
  memcpy(&x, &u, sizeof x);
  return x;
}

static inline PLM_HD float plm__round_tf32(float x) {
  return plm__round_mantissa(x, 10);
}

static inline PLM_HD float plm__round_bf16(float x) {
  return plm__round_mantissa(x, 7);
}

/* x rounded as `precision` reads its inputs (FP32: unchanged). */
static inline PLM_HD float plm__round_to_precision(float x, plm_precision precision) {
  switch (precision) {
    case PLM_PRECISION_TF32: return plm__round_tf32(x);
    case PLM_PRECISION_BF16: return plm__round_bf16(x);
    case PLM_PRECISION_FP32:
    case PLM_PRECISION_AUTO: break;
  }
  return x;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernel (kernels/cpu/matmul.c): runs on the calling thread and the CPU pool;
 * returns when done. */
void plm__matmul_cpu(const plm__matmul_args *args);

/* Enqueue the CUDA kernels (kernels/cuda/matmul.cu) on a cudaStream_t. */
plm_status plm__matmul_cuda(void *stream, const plm__matmul_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_MATMUL_H */

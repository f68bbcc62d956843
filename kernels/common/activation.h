/* kernels/common/activation.h: the elementwise nonlinearities both backends share
 * (matmul's fused activations; the LSTM gates and the dendrites take the fast ones). */
#ifndef PLUME_KERNELS_COMMON_ACTIVATION_H
#define PLUME_KERNELS_COMMON_ACTIVATION_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/common/plm_hd.h"
#include "plume/matmul.h"

/* The logistic function 1 / (1 + e^-x), in f32 with libm's expf (matmul's fused
 * activation): 0 and 1 at the extremes, never NaN for a number. */
static inline PLM_HD float plm__sigmoidf(float x) {
  return 1.0f / (1.0f + expf(-x));
}

/* e^x in f32 from arithmetic alone, so that a loop calling it vectorises (libm's expf is
 * a call): x clamped to [-87, 88] (NaN stays NaN), x = n·ln 2 + r with |r| <= ln 2 / 2
 * (n rounded by adding 1.5·2^23; ln 2 in two parts, Cody-Waite), e^r by Cephes expf's
 * polynomial, 2^n written into the exponent bits. Within 1e-7 of e^x relatively on
 * [-87, 88]; σ and tanh below within 1e-7 absolutely everywhere (checked against double
 * on every 4093rd f32 bit pattern, tests/test_lstm.c). The LSTM update
 * (kernels/common/lstm.h) and the dendrites (kernels/common/dendritic.h) use these. */
static inline PLM_HD float plm__fast_expf(float x) {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  const float shifted = x * 1.44269504f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  uint32_t bits;
  memcpy(&bits, &shifted, sizeof bits); /* 0x4b400000 + n */
  bits = (bits - 0x4b400000u + 127u) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/* σ(x) = 1 / (1 + e^-x) with plm__fast_expf: 1 and 0 (within 1e-38) at the extremes, NaN
 * for NaN. */
static inline PLM_HD float plm__fast_sigmoidf(float x) {
  return 1.0f / (1.0f + plm__fast_expf(-x));
}

/* tanh x as (1 - e^-2|x|) / (1 + e^-2|x|) with x's sign, with plm__fast_expf: ±1 at
 * ±infinity, NaN for NaN. */
static inline PLM_HD float plm__fast_tanhf(float x) {
  const float t = plm__fast_expf(-2.0f * fabsf(x));
  return copysignf((1.0f - t) / (1.0f + t), x);
}

/* The activation applied to x; ReLU keeps NaN. */
static inline PLM_HD float plm__activate(float x, plm_activation activation) {
  switch (activation) {
    case PLM_ACTIVATION_RELU: return x < 0.0f ? 0.0f : x;
    case PLM_ACTIVATION_SIGMOID: return plm__sigmoidf(x);
    case PLM_ACTIVATION_TANH: return tanhf(x);
    case PLM_ACTIVATION_NONE: break;
  }
  return x;
}

#endif /* PLUME_KERNELS_COMMON_ACTIVATION_H */

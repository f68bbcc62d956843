/* kernels/common/activation.h: the elementwise nonlinearities both backends share
 * (matmul's fused activations, the LSTM gates). */
#ifndef PLUME_KERNELS_COMMON_ACTIVATION_H
#define PLUME_KERNELS_COMMON_ACTIVATION_H

#include <math.h>

#include "kernels/common/plm_hd.h"
#include "plume/matmul.h"

/* The logistic function 1 / (1 + e^-x), in f32: 0 and 1 at the extremes, never NaN
 * for a number. */
static inline PLM_HD float plm__sigmoidf(float x) {
  return 1.0f / (1.0f + expf(-x));
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

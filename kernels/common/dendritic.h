/* kernels/common/dendritic.h: the dendrites' functions both backends run, and the
 * arguments of a dendritic launch (see plume/dendritic.h for the semantics). */
#ifndef PLUME_KERNELS_COMMON_DENDRITIC_H
#define PLUME_KERNELS_COMMON_DENDRITIC_H

#include <stdint.h>

#include "kernels/common/activation.h"
#include "kernels/common/plm_hd.h"
#include "plume/dendritic.h"

typedef struct plm__dendritic_args {
  const float *x; /* (batch, input) */
  const float *w; /* (neurons, dendrites, input) */
  float *out;     /* (batch, neurons) */
  int64_t batch, input, neurons, dendrites;
  plm_dendritic_params params;
} plm__dendritic_args;

/* The soma's value before its first dendrite: 1 for the product, else 0. */
static inline PLM_HD float plm__dendritic_soma_start(plm_dendrite_mode mode) {
  return mode == PLM_DENDRITE_MULTIPLICATIVE ? 1.0f : 0.0f;
}

/* The soma after adding (or multiplying in) the dendrite whose sum is a. */
static inline PLM_HD float plm__dendritic_soma_add(float soma, float a,
                                                   const plm_dendritic_params *p) {
  switch (p->mode) {
    case PLM_DENDRITE_NMDA: return soma + a * plm__sigmoidf(p->k * (a - p->theta));
    case PLM_DENDRITE_ACTIVE_BP: {
      float above = a - p->theta;
      return soma + (a + p->beta * (above > 0.0f ? above : 0.0f));
    }
    case PLM_DENDRITE_MULTIPLICATIVE: return soma * plm__sigmoidf(a);
    case PLM_DENDRITE_SIGMOID: break;
  }
  return soma + plm__sigmoidf(a);
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernel (kernels/cpu/dendritic.c): runs on the calling thread and the CPU pool;
 * returns when done. */
void plm__dendritic_cpu(const plm__dendritic_args *args);

/* Enqueue the CUDA kernel (kernels/cuda/dendritic.cu) on a cudaStream_t. */
plm_status plm__dendritic_cuda(void *stream, const plm__dendritic_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_DENDRITIC_H */

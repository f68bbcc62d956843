/* kernels/common/lstm.h: the LSTM state update both backends run, and the arguments of
 * an lstm_cell launch (see plume/lstm.h for the semantics). */
#ifndef PLUME_KERNELS_COMMON_LSTM_H
#define PLUME_KERNELS_COMMON_LSTM_H

#include <math.h>
#include <stdint.h>

#include "kernels/common/activation.h"
#include "kernels/common/plm_hd.h"
#include "plume/lstm.h"

typedef struct plm__lstm_args {
  const float *x, *h, *c;   /* (batch, input), (batch, hidden), (batch, hidden) */
  const float *w_ih;        /* (4 hidden, input) */
  const float *w_hh;        /* (4 hidden, hidden) */
  const float *b_ih, *b_hh; /* (4 hidden) or NULL */
  float *out_h, *out_c;     /* (batch, hidden); out_c may be c */
  int64_t batch, input, hidden;
} plm__lstm_args;

/* One unit's new state from its four gate sums (i, f, g, o, in torch's order) and its
 * cell value c: *out_c = σ(f)·c + σ(i)·tanh(g), *out_h = σ(o)·tanh(*out_c). */
static inline PLM_HD void plm__lstm_update(float i, float f, float g, float o, float c,
                                           float *out_h, float *out_c) {
  float cell = plm__sigmoidf(f) * c + plm__sigmoidf(i) * tanhf(g);
  *out_c = cell;
  *out_h = plm__sigmoidf(o) * tanhf(cell);
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernel (kernels/cpu/lstm.c): runs on the calling thread and the CPU pool;
 * returns when done. */
void plm__lstm_cpu(const plm__lstm_args *args);

/* Enqueue the CUDA kernel (kernels/cuda/lstm.cu) on a cudaStream_t. */
plm_status plm__lstm_cuda(void *stream, const plm__lstm_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_LSTM_H */

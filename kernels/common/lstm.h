/* kernels/common/lstm.h: the LSTM state update both backends run, the arguments of an
 * lstm_cell launch (see plume/lstm.h for the semantics), and which of the two ways of
 * computing the gate sums runs.
 *
 * Per unit: each unit (batch row, hidden index) computes its four gate sums as dot
 * products of x's and h's row with rows of w_ih and w_hh (CPU: kernels/cpu/dot.h;
 * cuda: one warp per unit), then its new state. No scratch. Every weight is read once
 * per batch row, at dot-product speed (about 40 GFLOP/s on the 2-core host).
 *
 * GEMM: gates (batch, 4 hidden) = x · w_ihᵀ + b_ih, then gates += h · w_hhᵀ + b_hh, both
 * with the matmul kernels in FP32 (kernels/common/matmul.h: b_transposed reads the
 * weights in torch's layout, accumulate adds the second product), then a pointwise
 * kernel applies plm__lstm_update to each unit's four gates. The gates live in scratch
 * (ops/op_scratch.h). Matmul speed for the products (about 180 GFLOP/s on the host),
 * but the CPU GEMM packs all the weights on one thread whatever the batch, so for a
 * batch of 1 or 2 the dot products are faster.
 *
 * The rule (plm__lstm_scratch_bytes): GEMM when batch >= the backend's minimum below,
 * else per unit. It depends on the batch only, never on the thread count, so which
 * path runs, and with it every rounding, is the same on any machine of a backend. Both
 * paths sum in f32 (the order differs, within plume/lstm.h's tolerance).
 *
 * Host: GEMM from a batch of 4. Measured 2026-11-25 on the 2-core AMD EPYC VM (shared
 * with other work), plm__lstm_cpu called directly, the two paths alternating, median of
 * 60 to 300 runs each, at a quiet moment; microseconds per unit / GEMM:
 *     input x hidden   B = 1         2             3             4             8
 *     64 x 128         9.6 / 16.6    19.2 / 17.7   16.6 / 19.6   26.2 / 20.8   59.4 / 34.7
 *     256 x 256        36.7 / 94.6   56.9 / 97.4   80.5 / 102    98.6 / 105    154 / 129
 *     512 x 512        101 / 406     170 / 397     235 / 404     311 / 418     567 / 509
 *     16 x 16          0.9 / 0.6     1.7 / 0.7     2.5 / 0.9     3.3 / 1.1     6.6 / 1.8
 * (64 x 128 at 32 rows: 220 / 98.5.) The GEMM packs the weights on one thread, so its
 * fixed cost grows with them: with 2 MiB of weights or more (256 x 256, 512 x 512) and
 * the second core idle, the per-unit path was still faster at 4 rows (not at 8), but
 * with that core busy (minutes apart, 512 x 512 at 4 rows: 578 / 413) the GEMM won from
 * 4 rows on. The rule stays on the batch alone: 4, where the seed's size (64 x 128)
 * gains, and large weights lose at most about a third on an idle machine.
 *
 * cuda: unmeasured (no GPU where this was written): GEMM from a batch of 64. The SGEMM
 * kernel computes 64 x 64 tiles of out, so below 64 rows most of each tile is padding
 * and the grid has only ceil(4 hidden / 64) blocks, while the per-unit kernel has
 * batch · hidden warps. Also per unit past the matmul grid's rows
 * (PLM__MATMUL_CUDA_MAX_ROWS).
 */
#ifndef PLUME_KERNELS_COMMON_LSTM_H
#define PLUME_KERNELS_COMMON_LSTM_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/common/activation.h"
#include "kernels/common/matmul.h"
#include "kernels/common/plm_hd.h"
#include "plume/lstm.h"

enum {
  PLM__LSTM_CPU_GEMM_MIN_BATCH = 4,  /* measured, above */
  PLM__LSTM_CUDA_GEMM_MIN_BATCH = 64 /* unmeasured, above */
};

typedef struct plm__lstm_args {
  const float *x, *h, *c;   /* (batch, input), (batch, hidden), (batch, hidden) */
  const float *w_ih;        /* (4 hidden, input) */
  const float *w_hh;        /* (4 hidden, hidden) */
  const float *b_ih, *b_hh; /* (4 hidden) or NULL */
  float *out_h, *out_c;     /* (batch, hidden); out_c may be c */
  float *gates;             /* (batch, 4 hidden) scratch: the GEMM path; NULL: per unit */
  int64_t batch, input, hidden;
} plm__lstm_args;

/* The scratch lstm_cell needs for these sizes on a backend (cuda or host): the gates'
 * bytes where the GEMM path runs, 0 where the per-unit one does. */
static inline size_t plm__lstm_scratch_bytes(bool cuda, int64_t batch, int64_t hidden) {
  const bool gemm =
      cuda ? batch >= PLM__LSTM_CUDA_GEMM_MIN_BATCH && batch <= (int64_t)PLM__MATMUL_CUDA_MAX_ROWS
           : batch >= PLM__LSTM_CPU_GEMM_MIN_BATCH;
  return gemm ? (size_t)batch * (size_t)(4 * hidden) * sizeof(float) : 0;
}

/* The GEMM path's products: 0 is gates = x · w_ihᵀ + b_ih, 1 is gates += h · w_hhᵀ + b_hh. */
static inline plm__matmul_args plm__lstm_gate_product(const plm__lstm_args *args, int which) {
  return (plm__matmul_args){.a = which ? args->h : args->x,
                            .b = which ? args->w_hh : args->w_ih,
                            .bias = which ? args->b_hh : args->b_ih,
                            .out = args->gates,
                            .m = args->batch,
                            .n = 4 * args->hidden,
                            .k = which ? args->hidden : args->input,
                            .precision = PLM_PRECISION_FP32,
                            .activation = PLM_ACTIVATION_NONE,
                            .b_transposed = true,
                            .accumulate = which != 0};
}

/* One unit's new state from its four gate sums (i, f, g, o, in torch's order) and its
 * cell value c: *out_c = σ(f)·c + σ(i)·tanh(g), *out_h = σ(o)·tanh(*out_c), with the
 * arithmetic-only σ and tanh of kernels/common/activation.h (within 1e-7 of double), so
 * that a loop over units vectorises: glibc's tanhf, through expm1f, was slower than the
 * GEMM path's products at a batch of 2048. */
static inline PLM_HD void plm__lstm_update(float i, float f, float g, float o, float c,
                                           float *out_h, float *out_c) {
  float cell = plm__fast_sigmoidf(f) * c + plm__fast_sigmoidf(i) * plm__fast_tanhf(g);
  *out_c = cell;
  *out_h = plm__fast_sigmoidf(o) * plm__fast_tanhf(cell);
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernels (kernels/cpu/lstm.c): the GEMM path when args->gates is set, else per
 * unit; runs on the calling thread and the CPU pool; returns when done. */
void plm__lstm_cpu(const plm__lstm_args *args);

/* Enqueue the CUDA kernels (kernels/cuda/lstm.cu) on a cudaStream_t, the GEMM path when
 * args->gates is set, else per unit. */
plm_status plm__lstm_cuda(void *stream, const plm__lstm_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_LSTM_H */

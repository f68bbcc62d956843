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
 * but a fixed cost for packing the weights (spread over the cores, kernels/cpu/matmul.c)
 * that one or two rows of dot products undercut.
 *
 * The rule (plm__lstm_scratch_bytes): GEMM when batch >= the backend's minimum below,
 * else per unit. It depends on the batch only, never on the thread count, so which
 * path runs, and with it every rounding, is the same on any machine of a backend
 * unless a tuning table (`plume tune`, ops/op_tuning.h) moved the minimum for a device:
 * the minimum is the descriptor's tunable gemm_min_batch of the backend. Both
 * paths sum in f32 (the order differs, within plume/lstm.h's tolerance).
 *
 * Host: GEMM from a batch of 4. Measured 2026-11-25 on the 2-core AMD EPYC VM (shared
 * with other work), plm__lstm_cpu called directly, the two paths alternating, medians,
 * ranges over 3 runs, after the CPU GEMM learnt to pack b on both cores; microseconds
 * per unit / GEMM:
 *     input x hidden   B = 1         2             3             4             8
 *     64 x 128         9.8 / 15.5    19.5 / 16.7   16.5 / 18.1   38.4 / 19.2   59-78 / 32.6
 *     256 x 256        20.0 / 47.8   39.5 / 49.4   59.3 / 53.6   77.5 / 55.5   159 / 90.4
 *     512 x 512        74 / 182      144 / 186     214 / 193     277 / 197     550 / 318
 * (64 x 128 at 32 rows: 156 / 71.5; the per-unit path splits across the cores only from
 * 3 rows, hence 64 x 128's dip there.) The large weights would gain from 3 rows (10%);
 * 4 keeps the seed's size (64 x 128) on its faster side at 3. Before the packing was
 * shared, the GEMM at 512 x 512 took 383-418 µs at 1 to 4 rows and lost to per unit
 * until 8.
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
  int64_t gemm_min_batch; /* the backend's minimum above, or the tuned one (ops/lstm.c) */
} plm__lstm_args;

/* The scratch lstm_cell needs for these sizes on a backend (cuda or host), GEMM from a
 * batch of gemm_min_batch: the gates' bytes where the GEMM path runs, 0 where the
 * per-unit one does. */
static inline size_t plm__lstm_scratch_bytes(bool cuda, int64_t gemm_min_batch, int64_t batch,
                                             int64_t hidden) {
  const bool gemm =
      batch >= gemm_min_batch && (!cuda || batch <= (int64_t)PLM__MATMUL_CUDA_MAX_ROWS);
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

/* kernels/common/dendritic.h: the dendrites' functions both backends run, the arguments
 * of a dendritic launch (see plume/dendritic.h for the semantics), and which of the two
 * ways of computing the dendrites' sums runs.
 *
 * Per output: each output (batch row, neuron) computes its D sums as dot products of
 * x's row with rows of w (CPU: kernels/cpu/dot.h, a block of outputs at a time; cuda:
 * one warp per output). No scratch. Every weight is read once per batch row, at
 * dot-product speed.
 *
 * GEMM: sums (batch, neurons · dendrites) = x · wᵀ, w read as its (N·D, I) rows
 * (b_transposed), with the matmul kernels in FP32 (kernels/common/matmul.h), into
 * scratch (ops/op_scratch.h); then each output folds its D terms from there. Matmul
 * speed for the products, but a fixed cost for packing the weights (spread over the
 * cores, kernels/cpu/matmul.c) that a row or two of dot products undercut.
 *
 * On both paths, and both backends, a dendrite's term is plm__dendritic_term of its sum
 * (σ from the arithmetic-only e^x of kernels/common/activation.h, within 1e-7 of σ), and
 * the soma folds the terms in order d = 0, 1, ... (plm__dendritic_fold). With glibc's
 * expf, a call per dendrite, the nonlinearity was more than half the time on the host:
 * at a batch of 2048 (10 x 8 x 16) NMDA took 407 µs and ACTIVE_BP, which has no e^x,
 * 182; the CPU kernel now applies the terms to a block of sums in one vectorised loop
 * (per output, NMDA 190 µs; ACTIVE_BP 146).
 *
 * The rule (plm__dendritic_sums_bytes): GEMM when batch >= the backend's minimum below,
 * else per output. It depends on the batch only, never on the thread count, so which
 * path runs, and with it every rounding, is the same on any machine of a backend
 * unless a tuning table (`plume tune`, ops/op_tuning.h) moved the minimum for a device:
 * the minimum is the descriptor's tunable gemm_min_batch of the backend. Both
 * paths sum in f32 (the order differs, within plume/dendritic.h's tolerance).
 *
 * Host: GEMM from a batch of 4. Measured 2026-11-25 on the 2-core AMD EPYC VM (shared
 * with other work), plm__dendritic_cpu called directly, NMDA, the two paths alternating,
 * each time the median of 3000 (10 x 8 x 16) or 200 (256 x 8 x 256) runs, after the CPU
 * GEMM learnt to pack b on both cores; microseconds, per-output path / GEMM path (a range
 * over two runs where they differed, the per-output path splitting across both cores or
 * not):
 *     N x D x I      B = 1          2              4              8              16
 *     10 x 8 x 16    0.23 / 0.33    0.42 / 0.40    0.79 / 0.58    1.55 / 0.91
 *     256 x 8 x 256  19-28 / 43-58  29-56 / 47-49  62-70 / 49-58  116-118 / 78   227-230 /
 *                                                                                119-127
 * At a batch of 2048: 10 x 8 x 16 185 / 84 µs, 256 x 8 x 256 29.2 / 10.8 ms. While the
 * packing ran on one thread the large layer's GEMM took 93-99 µs at 1 to 4 rows and the
 * rule was 8; now both layers gain from 4 (1.4x and 1.2x), and 2 is a toss-up.
 *
 * cuda: unmeasured (no GPU where this was written): GEMM from a batch of 64, as
 * lstm_cell (kernels/common/lstm.h). The SGEMM kernel computes 64 x 64 tiles of out, so
 * below 64 rows most of each tile is padding and the grid has only ceil(N·D / 64)
 * blocks, while the per-output kernel has batch · neurons warps (each with its lanes
 * idle past I, and a shuffle reduction per dendrite). Also per output past the matmul
 * grid's rows (PLM__MATMUL_CUDA_MAX_ROWS).
 */
#ifndef PLUME_KERNELS_COMMON_DENDRITIC_H
#define PLUME_KERNELS_COMMON_DENDRITIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/common/activation.h"
#include "kernels/common/matmul.h"
#include "kernels/common/plm_hd.h"
#include "plume/dendritic.h"

enum {
  PLM__DENDRITIC_CPU_GEMM_MIN_BATCH = 4,  /* measured, above */
  PLM__DENDRITIC_CUDA_GEMM_MIN_BATCH = 64 /* unmeasured, above */
};

typedef struct plm__dendritic_args {
  const float *x; /* (batch, input) */
  const float *w; /* (neurons, dendrites, input) */
  float *out;     /* (batch, neurons) */
  float *sums;    /* (batch, neurons · dendrites) scratch: the GEMM path; NULL: per output */
  int64_t batch, input, neurons, dendrites;
  int64_t gemm_min_batch; /* the backend's minimum above, or the tuned one (ops/dendritic.c) */
  plm_dendritic_params params;
} plm__dendritic_args;

/* The scratch dendritic needs for these sizes on a backend (cuda or host), GEMM from a
 * batch of gemm_min_batch: the dendrites' sums where the GEMM path runs, 0 where the
 * per-output one does (also where their bytes would not fit in a size_t: B·N·D is no
 * operand's size). */
static inline size_t plm__dendritic_sums_bytes(bool cuda, int64_t gemm_min_batch, int64_t batch,
                                               int64_t neurons, int64_t dendrites) {
  const bool gemm =
      batch >= gemm_min_batch && (!cuda || batch <= (int64_t)PLM__MATMUL_CUDA_MAX_ROWS);
  const size_t per_row = (size_t)neurons * (size_t)dendrites * sizeof(float);
  if (!gemm || per_row > SIZE_MAX / (size_t)batch) return 0;
  return (size_t)batch * per_row;
}

/* The GEMM path's product: sums (batch, neurons · dendrites) = x · wᵀ, w read as its
 * (neurons · dendrites, input) rows (b_transposed), in FP32. */
static inline plm__matmul_args plm__dendritic_product(const plm__dendritic_args *args) {
  return (plm__matmul_args){.a = args->x,
                            .b = args->w,
                            .out = args->sums,
                            .m = args->batch,
                            .n = args->neurons * args->dendrites,
                            .k = args->input,
                            .precision = PLM_PRECISION_FP32,
                            .activation = PLM_ACTIVATION_NONE,
                            .b_transposed = true};
}

/* The soma's value before its first dendrite: 1 for the product, else 0. */
static inline PLM_HD float plm__dendritic_soma_start(plm_dendrite_mode mode) {
  return mode == PLM_DENDRITE_MULTIPLICATIVE ? 1.0f : 0.0f;
}

/* Each mode's dendrite function of the dendrite's sum a, with σ the arithmetic-only
 * plm__fast_sigmoidf (kernels/common/activation.h: within 1e-7 of σ absolutely), so that
 * a CPU loop applying one to many sums vectorises. */
static inline PLM_HD float plm__dendrite_sigmoid(float a) {
  return plm__fast_sigmoidf(a);
}

/* NMDA's gate σ(k · (a − θ)); the dendrite's term is a times it. */
static inline PLM_HD float plm__dendrite_nmda_gate(float a, float k, float theta) {
  return plm__fast_sigmoidf(k * (a - theta));
}

static inline PLM_HD float plm__dendrite_active_bp(float a, float theta, float beta) {
  const float above = a - theta;
  return a + beta * (above > 0.0f ? above : 0.0f);
}

/* The dendrite's term: what its sum a adds to the soma (SIGMOID, NMDA, ACTIVE_BP) or
 * multiplies into it (MULTIPLICATIVE: σ(a)). */
static inline PLM_HD float plm__dendritic_term(float a, const plm_dendritic_params *p) {
  switch (p->mode) {
    case PLM_DENDRITE_NMDA: return a * plm__dendrite_nmda_gate(a, p->k, p->theta);
    case PLM_DENDRITE_ACTIVE_BP: return plm__dendrite_active_bp(a, p->theta, p->beta);
    case PLM_DENDRITE_MULTIPLICATIVE:
    case PLM_DENDRITE_SIGMOID: break;
  }
  return plm__dendrite_sigmoid(a);
}

/* The soma after folding in the next dendrite's term: the product for MULTIPLICATIVE,
 * else the sum. Both backends fold a neuron's dendrites in order d = 0, 1, ... from
 * plm__dendritic_soma_start, so the soma rounds alike on both for the same sums. */
static inline PLM_HD float plm__dendritic_fold(float soma, float term, plm_dendrite_mode mode) {
  return mode == PLM_DENDRITE_MULTIPLICATIVE ? soma * term : soma + term;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernels (kernels/cpu/dendritic.c): the GEMM path when args->sums is set, else
 * per output; run on the calling thread and the CPU pool; return when done. */
void plm__dendritic_cpu(const plm__dendritic_args *args);

/* Enqueue the CUDA kernels (kernels/cuda/dendritic.cu) on a cudaStream_t, the GEMM path
 * when args->sums is set, else per output. */
plm_status plm__dendritic_cuda(void *stream, const plm__dendritic_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_DENDRITIC_H */

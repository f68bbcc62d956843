/* plume/dendritic.h: a layer of neurons with nonlinear dendrites (conventions in
 * plume/ops.h). */
#ifndef PLUME_DENDRITIC_H
#define PLUME_DENDRITIC_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- dendritic ----------------------------------------------------------------------
 * N neurons of D dendrites each, over inputs x (B, I), weights w (N, D, I), all f32,
 * row-major; out is (B, N). For each batch row b, neuron n and dendrite d:
 *   a = Σ_i w[n, d, i] · x[b, i]   (accumulated in f32)
 * and, with σ the logistic function 1 / (1 + e^-x):
 *   SIGMOID         out[b, n] = Σ_d σ(a_d)
 *   NMDA            out[b, n] = Σ_d a_d · σ(k · (a_d − θ))   (a sigmoidal NMDA-like gate)
 *   ACTIVE_BP       out[b, n] = Σ_d (a_d + β · max(0, a_d − θ))   (active back-propagation
 *                   boosts a dendrite above threshold)
 *   MULTIPLICATIVE  out[b, n] = Π_d σ(a_d)
 * k, theta and beta are read by the modes that use them and must be finite. out may not
 * overlap x or w. σ is evaluated in f32 from an arithmetic-only e^x, within 1e-7 of the
 * exact σ. The test holds each result within 1e-5 · (1 + |out|) · (1 + Σ_d L_d ·
 * Σ_i |w·x|) of a float64 reference, L_d the slope bound of the dendrite's function.
 *
 * How the dendrites' sums are computed depends on the batch B and the backend (the rule
 * and its measurements: kernels/common/dendritic.h):
 *   B < 4 on host, B < 64 on cuda: per output, each (row, neuron) its own D dot
 *       products; no scratch.
 *   from there on (on cuda up to 65535 · 64 rows): one matrix product, sums (B, N·D) =
 *       x · wᵀ with w read as (N·D, I), with the FP32 matmul kernels (plume/matmul.h),
 *       then each output's dendrite functions and soma from its sums. The sums, 4·B·N·D
 *       bytes, are scratch from the context's default pool, taken and given back in
 *       stream order (PLM_ERR_OUT_OF_MEMORY when the pool has none).
 * The two paths add the products in different orders (both within the tolerance above);
 * each neuron's soma folds its dendrites in order d = 0, 1, ... on both. Which one runs
 * depends on B and the backend only, and neither's sums depend on how the work is split
 * across threads, so on a backend the result is the same whatever the thread count. */

typedef enum plm_dendrite_mode {
  PLM_DENDRITE_SIGMOID = 0, /* the default */
  PLM_DENDRITE_NMDA = 1,
  PLM_DENDRITE_ACTIVE_BP = 2,
  PLM_DENDRITE_MULTIPLICATIVE = 3
} plm_dendrite_mode;

typedef struct plm_dendritic_params {
  plm_dendrite_mode mode;
  float k;     /* NMDA: the gate's steepness */
  float theta; /* NMDA, ACTIVE_BP: the threshold θ */
  float beta;  /* ACTIVE_BP: the boost above θ */
} plm_dendritic_params;

/* plm_dendritic_params_default: The defaults of the operation's parameter schema (ops/op_desc.h):
 * PLM_DENDRITE_SIGMOID, k 1, theta 0, beta 1. */

/* plm_dendritic: Enqueue the layer on stream. Errors (PLM_ERR_INVALID_ARG unless said): a NULL
 * stream, x, w, params or out; a tensor not f32, of the wrong rank (x, out 2-D; w 3-D), not
 * contiguous (PLM_ERR_UNSUPPORTED) or of another context; w's I not x's; out not
 * (B, N); out overlapping x or w; an unknown mode; k, theta or beta not finite;
 * PLM_ERR_OUT_OF_MEMORY when the sums' scratch cannot be had (above). */
/* plm_dendritic_output: out's shape: f32 (B, N). */
/* bytes: 4·(B·I + N·D·I + B·N); flops: 2·B·N·D·I for the dendrites' sums, plus per
 * dendrite 2 (σ, the sum or product) for SIGMOID and MULTIPLICATIVE, 5 for NMDA
 * (subtract, multiply, σ, multiply, sum) and ACTIVE_BP (subtract, max, multiply, add,
 * sum), each counted as one: · B·N·D. */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_DENDRITIC_H */

/* kernels/cpu/dendritic.c: the dendritic layer on the CPU, per output or through the
 * GEMM (the two paths and the rule between them: kernels/common/dendritic.h).
 *
 * Per output: the outputs (batch row, neuron) are split across cores; a group of
 * consecutive outputs computes its dendrites' sums into a block on the stack, a dot
 * product of x's row with a contiguous row of w (kernels/cpu/dot.h) per dendrite.
 *
 * GEMM: the sums of every output with plm__matmul_cpu into scratch (split across cores
 * by rows of the batch), then the outputs are split across cores and read their sums
 * there, a group of consecutive outputs at a time.
 *
 * Both then run the same code on a group's sums: one loop turns the whole block into
 * the dendrites' terms (arithmetic only, kernels/common/dendritic.h: it vectorises), and
 * each output folds its terms into the soma in dendrite order. A neuron with more
 * dendrites than a block holds does that a block of its dendrites at a time. */
#include "kernels/common/dendritic.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/dot.h"
#include "streams/parallel.h"

/* The dendrites' sums (and terms) one block holds. */
enum { BLOCK = 256 };

/* terms[0, count) from the sums[0, count): one loop per mode, so each vectorises. For
 * NMDA the terms are the gates σ(k · (a − θ)), and fold_terms multiplies each by its a:
 * with that product in this loop, GCC 12 also computes, in every lane, a times the
 * gate's constant value where e^x clamps (~6e-39, subnormal) and blends the results, and
 * the loop ran at 1.3 to 2 ns per value on the 2-core EPYC host, against 0.55 for the
 * gates here and the products in a second loop. */
static inline void dendrite_terms(const float *restrict sums, float *restrict terms, int64_t count,
                                  plm_dendritic_params p) {
  switch (p.mode) {
    case PLM_DENDRITE_NMDA:
      for (int64_t i = 0; i < count; i++) terms[i] = plm__dendrite_nmda_gate(sums[i], p.k, p.theta);
      break;
    case PLM_DENDRITE_ACTIVE_BP:
      for (int64_t i = 0; i < count; i++)
        terms[i] = plm__dendrite_active_bp(sums[i], p.theta, p.beta);
      break;
    case PLM_DENDRITE_SIGMOID:
    case PLM_DENDRITE_MULTIPLICATIVE:
      for (int64_t i = 0; i < count; i++) terms[i] = plm__dendrite_sigmoid(sums[i]);
      break;
  }
}

/* soma with the terms of dendrites [0, count) folded in, in order (NMDA's a · gate rounds
 * as plm__dendritic_term's). */
static inline float fold_terms(float soma, const float *sums, const float *terms, int64_t count,
                               plm_dendrite_mode mode) {
  for (int64_t d = 0; d < count; d++)
    soma =
        plm__dendritic_fold(soma, mode == PLM_DENDRITE_NMDA ? sums[d] * terms[d] : terms[d], mode);
  return soma;
}

/* The sums of dendrites [d0, d0 + count) of outputs [o, o + group) (count is all of them
 * when group > 1), output after output: in the GEMM's scratch, or computed into buffer. */
static inline const float *dendrite_sums(const plm__dendritic_args *args, int64_t o, int64_t group,
                                         int64_t d0, int64_t count, float *buffer) {
  const int64_t in = args->input, dendrites = args->dendrites;
  if (args->sums) return args->sums + o * dendrites + d0;
  for (int64_t g = 0; g < group; g++) {
    const float *x = args->x + (o + g) / args->neurons * in;
    const float *w = args->w + ((o + g) % args->neurons * dendrites + d0) * in;
    for (int64_t d = 0; d < count; d++) buffer[g * count + d] = plm__dot_f32(x, w + d * in, in);
  }
  return buffer;
}

PLM__CPU_CLONES
static void dendritic_outputs(void *context, int64_t begin, int64_t end) {
  const plm__dendritic_args *args = context;
  const int64_t dendrites = args->dendrites;
  const int64_t chunk = dendrites < BLOCK ? dendrites : BLOCK;
  const plm_dendritic_params p = args->params;
  float buffer[BLOCK], terms[BLOCK], soma[BLOCK];
  for (int64_t o = begin; o < end;) {
    int64_t group = BLOCK / chunk;
    if (group > end - o) group = end - o;
    for (int64_t g = 0; g < group; g++) soma[g] = plm__dendritic_soma_start(p.mode);
    for (int64_t d0 = 0; d0 < dendrites; d0 += chunk) {
      const int64_t count = dendrites - d0 < chunk ? dendrites - d0 : chunk;
      const float *sums = dendrite_sums(args, o, group, d0, count, buffer);
      dendrite_terms(sums, terms, group * count, p);
      for (int64_t g = 0; g < group; g++)
        soma[g] = fold_terms(soma[g], sums + g * count, terms + g * count, count, p.mode);
    }
    for (int64_t g = 0; g < group; g++) args->out[o + g] = soma[g];
    o += group;
  }
}

void plm__dendritic_cpu(const plm__dendritic_args *args) {
  const int64_t outputs = args->batch * args->neurons;
  int64_t per_output = 2 * args->dendrites * args->input;
  if (args->sums) {
    const plm__matmul_args product = plm__dendritic_product(args);
    plm__matmul_cpu(&product);
    per_output = 16 * args->dendrites;
  }
  const int64_t grain = per_output >= (1 << 18) ? 1 : (1 << 18) / per_output + 1;
  plm__parallel_for(outputs, grain, dendritic_outputs, (void *)args);
}

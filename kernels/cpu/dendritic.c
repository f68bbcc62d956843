/* kernels/cpu/dendritic.c: the dendritic layer on the CPU. The outputs (batch row,
 * neuron) are split across cores; each runs through its neuron's dendrites, a dot
 * product of x's row with a contiguous row of w (kernels/cpu/dot.h) per dendrite,
 * folded into the soma by the function shared with the GPU. */
#include "kernels/common/dendritic.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/dot.h"
#include "kernels/cpu/parallel.h"

PLM__CPU_CLONES
static void dendritic_outputs(void *context, int64_t begin, int64_t end) {
  const plm__dendritic_args *args = context;
  const int64_t in = args->input;
  for (int64_t o = begin; o < end; o++) {
    const int64_t b = o / args->neurons, n = o % args->neurons;
    const float *x = args->x + b * in, *w = args->w + n * args->dendrites * in;
    float soma = plm__dendritic_soma_start(args->params.mode);
    for (int64_t d = 0; d < args->dendrites; d++)
      soma = plm__dendritic_soma_add(soma, plm__dot_f32(x, w + d * in, in), &args->params);
    args->out[o] = soma;
  }
}

void plm__dendritic_cpu(const plm__dendritic_args *args) {
  const int64_t outputs = args->batch * args->neurons;
  const int64_t per_output = 2 * args->dendrites * args->input;
  const int64_t grain = per_output >= (1 << 18) ? 1 : (1 << 18) / per_output + 1;
  plm__parallel_for(outputs, grain, dendritic_outputs, (void *)args);
}

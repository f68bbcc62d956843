/* kernels/cpu/lstm.c: one LSTM step on the CPU, per unit or through the GEMM (the two
 * paths and the rule between them: kernels/common/lstm.h).
 *
 * Per unit: the units (batch row, hidden index) are split across cores; each computes
 * its four gate sums as dot products of x's and h's row with contiguous rows of w_ih and
 * w_hh (kernels/cpu/dot.h), then its new state.
 *
 * GEMM: the two gate products with plm__matmul_cpu (each split across cores by rows of
 * the batch), then the units' new states from the gates, split across cores. */
#include <string.h>

#include "kernels/common/lstm.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/dot.h"
#include "streams/parallel.h"

PLM__CPU_CLONES
static void lstm_units(void *context, int64_t begin, int64_t end) {
  const plm__lstm_args *args = context;
  const int64_t in = args->input, hid = args->hidden;
  for (int64_t unit = begin; unit < end; unit++) {
    const int64_t b = unit / hid, j = unit % hid;
    const float *x = args->x + b * in, *h = args->h + b * hid;
    float gates[4];
    for (int g = 0; g < 4; g++) {
      const int64_t row = g * hid + j;
      float sum =
          plm__dot_f32(x, args->w_ih + row * in, in) + plm__dot_f32(h, args->w_hh + row * hid, hid);
      if (args->b_ih) sum += args->b_ih[row];
      if (args->b_hh) sum += args->b_hh[row];
      gates[g] = sum;
    }
    plm__lstm_update(gates[0], gates[1], gates[2], gates[3], args->c[unit], &args->out_h[unit],
                     &args->out_c[unit]);
  }
}

/* The new state of rows [begin, end) from their gates (row b's i, f, g, o at
 * gates[b · 4 hidden + {0, 1, 2, 3} · hidden + j]). A block of UPDATE_BLOCK units at a
 * time into locals, then stored: the loop over the block vectorises (plm__lstm_update
 * is arithmetic only), and out_c may be c. */
enum { UPDATE_BLOCK = 64 };

PLM__CPU_CLONES
static void lstm_update_rows(void *context, int64_t begin, int64_t end) {
  const plm__lstm_args *args = context;
  const int64_t hid = args->hidden;
  for (int64_t b = begin; b < end; b++) {
    const float *restrict gates = args->gates + b * 4 * hid;
    const float *c = args->c + b * hid; /* not restrict: out_c may be c */
    for (int64_t j0 = 0; j0 < hid; j0 += UPDATE_BLOCK) {
      const int64_t count = hid - j0 < UPDATE_BLOCK ? hid - j0 : UPDATE_BLOCK;
      float new_h[UPDATE_BLOCK], new_c[UPDATE_BLOCK];
      for (int64_t j = j0; j < j0 + count; j++)
        plm__lstm_update(gates[j], gates[hid + j], gates[2 * hid + j], gates[3 * hid + j], c[j],
                         &new_h[j - j0], &new_c[j - j0]);
      memcpy(args->out_h + b * hid + j0, new_h, (size_t)count * sizeof(float));
      memcpy(args->out_c + b * hid + j0, new_c, (size_t)count * sizeof(float));
    }
  }
}

void plm__lstm_cpu(const plm__lstm_args *args) {
  if (args->gates) {
    for (int which = 0; which < 2; which++) {
      const plm__matmul_args product = plm__lstm_gate_product(args, which);
      plm__matmul_cpu(&product);
    }
    /* About 8192 units per chunk. */
    const int64_t rows = 8192 / args->hidden + 1;
    plm__parallel_for(args->batch, rows, lstm_update_rows, (void *)args);
    return;
  }
  const int64_t units = args->batch * args->hidden;
  const int64_t per_unit = 8 * (args->input + args->hidden);
  const int64_t grain = per_unit >= (1 << 18) ? 1 : (1 << 18) / per_unit + 1;
  plm__parallel_for(units, grain, lstm_units, (void *)args);
}

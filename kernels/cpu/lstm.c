/* kernels/cpu/lstm.c: one LSTM step on the CPU. The units (batch row, hidden index) are
 * split across cores; each computes its four gate sums as dot products of x's and h's
 * row with contiguous rows of w_ih and w_hh (kernels/cpu/dot.h), then its new state. */
#include "kernels/common/lstm.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/dot.h"
#include "kernels/cpu/parallel.h"

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

void plm__lstm_cpu(const plm__lstm_args *args) {
  const int64_t units = args->batch * args->hidden;
  const int64_t per_unit = 8 * (args->input + args->hidden);
  const int64_t grain = per_unit >= (1 << 18) ? 1 : (1 << 18) / per_unit + 1;
  plm__parallel_for(units, grain, lstm_units, (void *)args);
}

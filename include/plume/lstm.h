/* plume/lstm.h: one step of an LSTM cell (conventions in plume/ops.h). */
#ifndef PLUME_LSTM_H
#define PLUME_LSTM_H

#include "plume/export.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- lstm_cell ----------------------------------------------------------------------
 * One step of torch.nn.LSTMCell, all f32, row-major: x is (B, I), h and c are (B, H),
 * w_ih is (4H, I), w_hh is (4H, H), b_ih and b_hh are (4H) or NULL (no bias):
 *   gates = x · w_ihᵀ + b_ih + h · w_hhᵀ + b_hh, split along 4H, in this order, into
 *           i, f, g, o (each (B, H));
 *   out_c = σ(f) · c + σ(i) · tanh(g);   out_h = σ(o) · tanh(out_c),
 * σ the logistic function 1 / (1 + e^-x). out_h and out_c are (B, H). out_c may be c
 * itself (an update in place); otherwise no output may overlap any input or the other
 * output. Each gate sum is accumulated in f32; the test holds each result within
 * 1e-5 · (1 + Σ |terms of its four gate sums|) of a float64 reference.
 *
 * How the gates are computed depends on the batch B and the backend (the rule and its
 * measurements: kernels/common/lstm.h):
 *   B < 4 on host, B < 64 on cuda: per unit, each (row, hidden index) its own four dot
 *       products; no scratch.
 *   from there on (on cuda up to 65535 · 64 rows): two matrix products into the gates,
 *       gates = x · w_ihᵀ + b_ih then gates += h · w_hhᵀ + b_hh, with the FP32 matmul
 *       kernels (plume/matmul.h), then the state update per unit. The gates, 16·B·H
 *       bytes, are scratch from the context's default pool, taken and given back in
 *       stream order (PLM_ERR_OUT_OF_MEMORY when the pool has none).
 * The two paths add the terms in different orders (both within the tolerance above).
 * Which one runs depends on B and the backend only, and neither's sums depend on how
 * the work is split across threads, so on a backend the result is the same whatever the
 * thread count. */

/* Enqueue one LSTM step on stream. Errors (PLM_ERR_INVALID_ARG unless said): a NULL
 * stream, x, h, c, w_ih, w_hh, out_h or out_c; a tensor not f32, not 2-D (biases: 1-D),
 * not contiguous (PLM_ERR_UNSUPPORTED) or of another context; shapes that disagree
 * with x's (B, I) and h's (B, H) as above; overlapping outputs; PLM_ERR_OUT_OF_MEMORY
 * when the gates' scratch cannot be had (above). */
PLM_API plm_status plm_lstm_cell(plm_stream *stream, const plm_tensor *x, const plm_tensor *h,
                                 const plm_tensor *c, const plm_tensor *w_ih,
                                 const plm_tensor *w_hh, const plm_tensor *b_ih,
                                 const plm_tensor *b_hh, plm_tensor *out_h, plm_tensor *out_c);
/* The shape of out_h and of out_c: f32 (B, H), B from x and H from h. */
PLM_API plm_status plm_lstm_cell_output(const plm_tensor *x, const plm_tensor *h, plm_shape *out);
/* bytes: 4·(B·I + 2·B·H + 4H·I + 4H·H, + 4H per bias, + 2·B·H) (x, h, c, the weights, the
 * biases, the outputs); flops: 2·B·4H·(I + H) for the products, + B·4H per bias, + 9·B·H
 * for the update (5 nonlinearities, 3 multiplies, 1 add, each counted as one). b_ih and
 * b_hh may be NULL; their presence is all that is read of them. */
PLM_API plm_status plm_lstm_cell_cost(const plm_tensor *x, const plm_tensor *h,
                                      const plm_tensor *b_ih, const plm_tensor *b_hh,
                                      plm_op_cost *cost);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_LSTM_H */

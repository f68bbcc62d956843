/* ops/op_scratch.h: operations' scratch memory, sized from shapes and given per call
 * (internal).
 *
 * Some operations need working memory besides their operands:
 *   entropy                    both backends: each frame's range and the histograms
 *                              (kernels/common/entropy.h);
 *   sobel_entropy_threshold    host: per CPU work band, staged rows, bins and a
 *                              histogram; cuda: nothing up to 512 bins (shared memory),
 *                              else the global histograms (kernels/common/fused.h);
 *   label                      cuda: a root count per image row; host: nothing (its
 *                              union-find works in labels itself);
 *   segment                    its mask, then label's scratch;
 *   ar_forecast                cuda: each series' working doubles, interleaved across
 *                              the series (kernels/common/forecast.h); host: nothing
 *                              (each CPU task keeps its series' numbers on its stack);
 *   lstm_cell                  both backends, from a batch size on: the gates of the
 *                              GEMM path (kernels/common/lstm.h); none below it;
 *   dendritic                  both backends, from a batch size on: the dendrites' sums
 *                              of the GEMM path (kernels/common/dendritic.h); none below
 *                              it.
 * conv2d, sobel, threshold and regions take none from a pool (the CPU conv2d and sobel
 * kernels malloc working buffers per work chunk inside the kernel, kernels/cpu/conv.c,
 * and fall back to a slower path when malloc fails; the CUDA kernels need none).
 *
 * Each of those ops has two internal entry points beside its public one:
 *
 *   plm__<op>_scratch_bytes(ctx, <operand descriptions>, params, &bytes)
 *       the bytes the op needs on ctx's backend for these shapes and parameters. The
 *       operands are descriptions (plm__op_check_shape): their data and context are not
 *       looked at, no stream is needed, nothing is enqueued, so a planner can call it
 *       at compile time. Thread-safe. The answer depends only on the shapes, the
 *       parameters and the backend (and, on host, the CPU pool's thread count, which is
 *       fixed once the pool has started). The CUDA sizes are asked with the device of
 *       ctx current, as plm__op_device_enter makes it, for kernels that would size
 *       their storage by the device. 0 means the op needs no scratch there.
 *   plm__<op>_enqueue(stream, <the public op's arguments>, scratch, scratch_bytes)
 *       checks what the public op checks, with the same messages, then checks the
 *       scratch (PLM_ERR_INVALID_ARG: scratch_bytes below what the op needs, scratch
 *       NULL while some is needed, not PLM_OP_SCRATCH_ALIGN-aligned, or overlapping an
 *       operand) and enqueues the op using it. scratch must stay untouched by other work
 *       until the stream has run the op (its use is stream-ordered like the operands'),
 *       and may be reused by any work ordered after it. Nothing is allocated, so a plan
 *       of such calls can be captured into a CUDA graph and replayed.
 *
 * Messages are raw (plm__fail_raw: no function name); the public op adds its own name,
 * so its messages are what they were. The public op is: the same checks, scratch from
 * the context's default pool (plm_pool_alloc on the stream), the same enqueue, and
 * plm_pool_free on the stream (stream-ordered: the kernels still own it).
 */
#ifndef PLUME_OPS_OP_SCRATCH_H
#define PLUME_OPS_OP_SCRATCH_H

#include <stddef.h>

#include "plume/dendritic.h"
#include "plume/entropy.h"
#include "plume/forecast.h"
#include "plume/fused.h"
#include "plume/label.h"
#include "plume/lstm.h"
#include "plume/pool.h"
#include "plume/segment.h"
#include "streams/runtime.h"

/* Where scratch must start: the pool's alignment and the pipelines' workspace offsets. */
enum { PLM_OP_SCRATCH_ALIGN = 256 };

/* plm_entropy: in is u8, u16 or f32 (2 to 4 dims). */
plm_status plm__entropy_scratch_bytes(const plm_context *ctx, const plm_tensor *in,
                                      const plm_entropy_params *params, size_t *bytes);
plm_status plm__entropy_enqueue(plm_stream *stream, const plm_tensor *in,
                                const plm_entropy_params *params, plm_tensor *out, void *scratch,
                                size_t scratch_bytes);

/* plm_sobel_entropy_threshold. */
plm_status plm__sobel_entropy_threshold_scratch_bytes(
    const plm_context *ctx, const plm_tensor *in, const plm_sobel_entropy_threshold_params *params,
    size_t *bytes);
plm_status plm__sobel_entropy_threshold_enqueue(plm_stream *stream, const plm_tensor *in,
                                                const plm_sobel_entropy_threshold_params *params,
                                                plm_tensor *mask, void *scratch,
                                                size_t scratch_bytes);

/* plm_label: mask is u8 (H, W) or (N, H, W). 0 bytes on host. */
plm_status plm__label_scratch_bytes(const plm_context *ctx, const plm_tensor *mask,
                                    const plm_label_params *params, size_t *bytes);
plm_status plm__label_enqueue(plm_stream *stream, const plm_tensor *mask,
                              const plm_label_params *params, plm_tensor *labels, plm_tensor *count,
                              void *scratch, size_t scratch_bytes);

/* plm_segment: image is u8, u16 or f32 (H, W). */
plm_status plm__segment_scratch_bytes(const plm_context *ctx, const plm_tensor *image,
                                      const plm_segment_params *params, size_t *bytes);
plm_status plm__segment_enqueue(plm_stream *stream, const plm_tensor *image,
                                const plm_segment_params *params, plm_tensor *labels,
                                plm_tensor *count, plm_tensor *table, void *scratch,
                                size_t scratch_bytes);

/* plm_ar_forecast: series is f32 (S, T). cuda: S * plm__ar_cuda_scratch_doubles(lags)
 * doubles (none for lags 1..8); 0 bytes on host. */
plm_status plm__ar_forecast_scratch_bytes(const plm_context *ctx, const plm_tensor *series,
                                          const plm_ar_forecast_params *params, size_t *bytes);
plm_status plm__ar_forecast_enqueue(plm_stream *stream, const plm_tensor *series,
                                    const plm_ar_forecast_params *params, plm_tensor *out,
                                    void *scratch, size_t scratch_bytes);

/* plm_lstm_cell: x (B, I) and h (B, H) describe the sizes (the other operands' follow). */
plm_status plm__lstm_cell_scratch_bytes(const plm_context *ctx, const plm_tensor *x,
                                        const plm_tensor *h, size_t *bytes);
plm_status plm__lstm_cell_enqueue(plm_stream *stream, const plm_tensor *x, const plm_tensor *h,
                                  const plm_tensor *c, const plm_tensor *w_ih,
                                  const plm_tensor *w_hh, const plm_tensor *b_ih,
                                  const plm_tensor *b_hh, plm_tensor *out_h, plm_tensor *out_c,
                                  void *scratch, size_t scratch_bytes);

/* plm_dendritic: x (B, I) and w (N, D, I). B·N·D floats where the GEMM path runs. */
plm_status plm__dendritic_scratch_bytes(const plm_context *ctx, const plm_tensor *x,
                                        const plm_tensor *w, const plm_dendritic_params *params,
                                        size_t *bytes);
plm_status plm__dendritic_enqueue(plm_stream *stream, const plm_tensor *x, const plm_tensor *w,
                                  const plm_dendritic_params *params, plm_tensor *out,
                                  void *scratch, size_t scratch_bytes);

/* ---- shared by the ops above (ops/op_scratch.c) ---- */

/* The scratch checks of every _enqueue: scratch_bytes >= needed, scratch set when needed
 * > 0, PLM_OP_SCRATCH_ALIGN-aligned, and [scratch, scratch + needed) disjoint from each
 * of the `count` operands (NULL entries are skipped), named in `names`. `op` ("entropy")
 * names the op in the message about the size. Raw messages. */
plm_status plm__op_check_scratch(const char *op, const void *scratch, size_t scratch_bytes,
                                 size_t needed, const plm_tensor *const *operands,
                                 const char *const *names, int count);

/* The public ops' scratch: take `bytes` from the stream's context's default pool for
 * work enqueued on stream next (*pool and *scratch stay NULL when bytes is 0), and give
 * it back on the stream once that work is enqueued (stream-ordered: the work still owns
 * it); give returns `status` when it is not PLM_OK, else the free's. Raw messages. */
plm_status plm__op_scratch_take(plm_stream *stream, size_t bytes, plm_pool **pool, void **scratch);
plm_status plm__op_scratch_give(plm_stream *stream, plm_pool *pool, void *scratch,
                                plm_status status);

#endif /* PLUME_OPS_OP_SCRATCH_H */

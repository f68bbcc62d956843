/* plume/fused.h: fused operations, several ops in one pass that keeps the
 * intermediates on chip (conventions in plume/ops.h). */
#ifndef PLUME_FUSED_H
#define PLUME_FUSED_H

#include "plume/conv.h"
#include "plume/entropy.h"
#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"
#include "plume/threshold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sobel -> entropy -> threshold ----------------------------------------------------
 * mask = threshold(entropy(sobel magnitude(in))): the Sobel gradient magnitude of in
 * (plm_sobel with params->sobel), its local entropy (plm_entropy with params->entropy
 * on that f32 magnitude), compared with params->threshold (plm_threshold on that f32
 * entropy), in one operation whose output equals, bit for bit, the three ops run one
 * after another on the same backend. Neither the magnitude nor the entropy is written
 * to memory: the op reads in and writes mask, nothing else, so it moves 1 + 1 bytes
 * per pixel for u8 input where the three ops move 1 + 4 + 4 + 4 + 4 + 1.
 *
 * in is u8, u16 or f32, (H, W) or a batch (N, H, W) of independent frames; mask is u8
 * of in's shape and must not overlap in. The entropy needs a fixed range: the
 * magnitude's bins are floor((v - range_lo) * bins / (range_hi - range_lo)) as
 * plume/entropy.h states for f32, with bins 1..65536 and range_auto false (an auto
 * range needs every magnitude of a frame before the first bin, which is what fusing
 * avoids; run the three ops for that).
 *
 * Errors (PLM_ERR_INVALID_ARG, the message names the field, e.g.
 * "params->entropy.window 0 is not in 1..255"): everything plm_sobel, plm_entropy and
 * plm_threshold refuse for these parameters and tensors; params->entropy.range_auto
 * set; mask not u8, of another shape, or overlapping in. PLM_ERR_UNSUPPORTED for
 * non-contiguous tensors. The op takes scratch memory from the context's default pool
 * in stream order (PLM_ERR_OUT_OF_MEMORY when it has none): on host, per CPU work
 * chunk, a few rows of bins and of staged input (O(rows x W), not O(H x W)) and a
 * histogram; on cuda, nothing when the per-thread histograms fit in shared memory
 * (bins <= 512, or a window of at most 18 with more bins), else up to 64 MiB of
 * histograms in device memory. Any call on cuda, the first on a device included, may be
 * captured into a CUDA graph, as plm_entropy's may (plume/entropy.h). */

typedef struct plm_sobel_entropy_threshold_params {
  plm_sobel_params sobel;         /* as plm_sobel (border) */
  plm_entropy_params entropy;     /* as plm_entropy on the f32 Sobel magnitude: a fixed range is
                                     required (range_auto false) */
  plm_threshold_params threshold; /* as plm_threshold on the f32 entropy */
} plm_sobel_entropy_threshold_params;

/* plm_sobel_entropy_threshold_params_default: The defaults of the operation's parameter schema
 * (ops/op_desc.h): each part's defaults (sobel's border PLM_BORDER_REFLECT101); window, bins, the
 * range and the threshold must be set. */

/* plm_sobel_entropy_threshold: Enqueue the fused op on stream (asynchronous; plume/ops.h). */
/* plm_sobel_entropy_threshold_output: The mask's shape: u8, in's shape. */
/* Bytes: in read once and mask written once (the intermediates never reach memory);
 * flops: the three ops' arithmetic. */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_FUSED_H */

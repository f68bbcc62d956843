/* kernels/common/fused.h: the arguments of a fused sobel -> entropy -> threshold
 * launch (semantics in plume/fused.h), and what both backends compute per pixel.
 *
 * Bit-for-bit equality with the three ops run one after another comes from sharing
 * their per-element math, never from re-deriving it: the Sobel taps and magnitude
 * (kernels/common/conv.h), the f32 binning, the 32.32 fixed-point sum and the entropy
 * from it (kernels/common/entropy.h), and the comparison (kernels/common/threshold.h).
 * The sum S = sum_b c_b log2 c_b is an exact integer whatever order the counts were
 * reached in, so the entropy of a window depends only on its counts and its pixel
 * count, however a kernel slides its histogram. */
#ifndef PLUME_KERNELS_COMMON_FUSED_H
#define PLUME_KERNELS_COMMON_FUSED_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/common/conv.h"
#include "kernels/common/entropy.h"
#include "kernels/common/plm_hd.h"
#include "kernels/common/threshold.h"

/* CPU work bands per pool thread, the default of the fused op's host tunable. */
enum { PLM__FUSED_CPU_BANDS_PER_THREAD = 4 };

typedef struct plm__sobel_entropy_threshold_args {
  plm__sobel_args sobel; /* in, n, h, w, dtype, border; the outputs are NULL (not written) */
  uint8_t *mask;         /* (n, h, w) */
  void *scratch;         /* plm__sobel_entropy_threshold_{cpu,cuda}_scratch_bytes, from the pool */
  int window;            /* 1..255 */
  int bins;              /* 1..65536 */
  double lo, hi;         /* the fixed range, lo < hi, both finite */
  double value;          /* the threshold */
  plm_compare compare;
  int bands_per_thread; /* host: CPU work bands per pool thread (ops/fused.c's tunable) */
  plm__entropy_cuda_shape cuda_shape; /* cuda: the window kernel's (ops/fused.c's tunables) */
} plm__sobel_entropy_threshold_args;

/* The bin of the Sobel magnitude at pixel (y, x) of frame `frame` (y and x inside the
 * frame), every input pixel read through the border rule: what sobel writes there,
 * binned as entropy bins it. */
static inline PLM_HD int plm__sobel_entropy_bin_at(const plm__sobel_entropy_threshold_args *a,
                                                   int64_t frame, int64_t y, int64_t x) {
  const plm__sobel_args *s = &a->sobel;
  const void *in =
      (const char *)s->in + (size_t)(frame * s->h * s->w) * plm__conv_element_size(s->dtype);
  float p[3][3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      p[i][j] = plm__load_border(in, s->dtype, s->h, s->w, y - 1 + i, x - 1 + j, s->border);
  float magnitude =
      plm__sobel_magnitude(plm__sobel_gx(p[0], p[1], p[2]), plm__sobel_gy(p[0], p[2]));
  return plm__entropy_bin_f32(magnitude, a->lo, a->hi, a->bins);
}

/* The mask value of a window whose counts give the fixed-point sum s over n pixels:
 * the entropy as plm_entropy writes it (f32), compared as plm_threshold compares it. */
static inline PLM_HD uint8_t plm__sobel_entropy_threshold_mask(
    const plm__sobel_entropy_threshold_args *a, plm__entropy_norm norm, int64_t s) {
  float entropy = plm__entropy_from_sum(norm, s);
  return plm__threshold_one((double)entropy, a->value, a->compare);
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernel (kernels/cpu/fused.c): runs on the calling thread and the CPU pool;
 * returns when done. */
void plm__sobel_entropy_threshold_cpu(const plm__sobel_entropy_threshold_args *args);
size_t plm__sobel_entropy_threshold_cpu_scratch_bytes(
    const plm__sobel_entropy_threshold_args *args);

/* Enqueue the CUDA kernel (kernels/cuda/entropy.cu, the entropy op's window kernel
 * with the Sobel magnitude's bins and a mask out) on a cudaStream_t, with the
 * context's device current. Scratch: none when the histograms fit in shared memory
 * (at most 512 bins, or a window of at most 18 with more), else the global
 * histograms, at most 64 MiB. */
plm_status plm__sobel_entropy_threshold_cuda(void *stream,
                                             const plm__sobel_entropy_threshold_args *args);
size_t plm__sobel_entropy_threshold_cuda_scratch_bytes(
    const plm__sobel_entropy_threshold_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_FUSED_H */

/* kernels/common/sepconv.h: the arguments of a sepconv2d launch and the arithmetic both
 * backends share (plume/conv.h states the op).
 *
 * The order of the arithmetic is the contract: a row sum adds kernel_x[j] * pixel for j
 * ascending from 0.0f, an output adds kernel_y[i] * row sum for i ascending from 0.0f,
 * each product and each sum rounded to f32 (PLM__FMUL, PLM__FADD). The fast kernels
 * (kernels/cpu/sepconv.c, kernels/cuda/sepconv.cu) keep that order whatever they stage,
 * so their outputs equal plm__sepconv2d_pixel's bit for bit; tests/test_sepconv2d.c holds
 * them to it. */
#ifndef PLUME_KERNELS_COMMON_SEPCONV_H
#define PLUME_KERNELS_COMMON_SEPCONV_H

#include <stdint.h>

#include "kernels/common/conv.h"
#include "kernels/common/plm_hd.h"

typedef struct plm__sepconv2d_args {
  const void *in;      /* (n, h, w) of dtype */
  const float *taps_x; /* kw taps along a row */
  const float *taps_y; /* kh taps down a column */
  float *out;          /* (n, ho, wo) */
  int64_t n, h, w, ho, wo;
  plm_dtype dtype; /* of in: u8, u16 or f32 */
  int kh, kw, stride_y, stride_x, pad_y, pad_x;
  plm_border border;
} plm__sepconv2d_args;

/* One row sum: kw pixels of image row v (any integer, through the border) from column x0
 * (any integer), weighted by taps_x. */
static inline PLM_HD float plm__sepconv2d_row_sum(const plm__sepconv2d_args *a, const void *frame,
                                                  int64_t v, int64_t x0) {
  float sum = 0.0f;
  for (int j = 0; j < a->kw; j++)
    sum = PLM__FADD(sum, PLM__FMUL(a->taps_x[j], plm__load_border(frame, a->dtype, a->h, a->w, v,
                                                                  x0 + j, a->border)));
  return sum;
}

/* out(frame, y, x), every tap checked against the border: the definition the fast
 * kernels match. */
static inline PLM_HD float plm__sepconv2d_pixel(const plm__sepconv2d_args *a, int64_t frame,
                                                int64_t y, int64_t x) {
  const char *base = (const char *)a->in;
  const void *in = base + (size_t)(frame * a->h * a->w) * plm__conv_element_size(a->dtype);
  int64_t y0 = y * a->stride_y - a->pad_y, x0 = x * a->stride_x - a->pad_x;
  float sum = 0.0f;
  for (int i = 0; i < a->kh; i++)
    sum = PLM__FADD(sum, PLM__FMUL(a->taps_y[i], plm__sepconv2d_row_sum(a, in, y0 + i, x0)));
  return sum;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernel (kernels/cpu/sepconv.c): runs on the calling thread and the CPU pool;
 * returns when done. */
void plm__sepconv2d_cpu(const plm__sepconv2d_args *args);

/* Enqueue the CUDA kernel (kernels/cuda/sepconv.cu) on a cudaStream_t. */
plm_status plm__sepconv2d_cuda(void *stream, const plm__sepconv2d_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_SEPCONV_H */

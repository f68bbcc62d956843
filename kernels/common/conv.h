/* kernels/common/conv.h: the border rule, the Sobel taps and a per-pixel conv2d that
 * both backends run, and the arguments of conv2d and sobel launches (see plume/conv.h
 * for the semantics).
 *
 * The fast kernels (kernels/cpu/conv.c, kernels/cuda/conv.cu) stage rows or tiles
 * with their borders already applied and then read them without checks; the
 * per-pixel functions here, which check every tap, serve their fallbacks. */
#ifndef PLUME_KERNELS_COMMON_CONV_H
#define PLUME_KERNELS_COMMON_CONV_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/conv.h"

/* The CUDA conv2d kernel's block (kernels/cuda/conv.cu): a tile of tile_width x (256 /
 * tile_width) outputs, one thread each; tile_width is the op's cuda tunable (8, 16, 32 or
 * 64), 16 (16 x 16) the default, the block plume launched before it was tunable. */
enum { PLM__CONV2D_CUDA_TILE_WIDTH = 16, PLM__CONV2D_CUDA_TILE_THREADS = 256 };

typedef struct plm__conv2d_args {
  const void *in;    /* (n, h, w) of dtype */
  const float *taps; /* (kh, kw) */
  float *out;        /* (n, ho, wo) */
  int64_t n, h, w, ho, wo;
  plm_dtype dtype; /* of in: u8, u16 or f32 */
  int kh, kw, stride_y, stride_x, pad_y, pad_x;
  plm_border border;
  int cuda_tile_width; /* cuda: the block's tile width (ops/conv.c's tunable) */
} plm__conv2d_args;

typedef struct plm__sobel_args {
  const void *in;             /* (n, h, w) of dtype */
  float *gx, *gy, *magnitude; /* (n, h, w) each, or NULL when not wanted */
  int64_t n, h, w;
  plm_dtype dtype;
  plm_border border;
} plm__sobel_args;

/* The index inside [0, n) that index i (any integer) reads under border, or -1
 * for a zero (PLM_BORDER_ZERO outside the image). */
static inline PLM_HD int64_t plm__border_index(int64_t i, int64_t n, plm_border border) {
  if (i >= 0 && i < n) return i;
  if (border == PLM_BORDER_ZERO) return -1;
  if (border == PLM_BORDER_REPLICATE || n == 1) return i < 0 ? 0 : n - 1;
  int64_t period = 2 * (n - 1); /* PLM_BORDER_REFLECT101: dcb|abcd|cba, repeated */
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

/* Bytes per element of an u8, u16 or f32 array. */
static inline PLM_HD size_t plm__conv_element_size(plm_dtype dtype) {
  return dtype == PLM_DTYPE_U8 ? 1 : dtype == PLM_DTYPE_U16 ? 2 : 4;
}

/* Element `index` of an u8, u16 or f32 array, as f32. */
static inline PLM_HD float plm__load_f32(const void *base, plm_dtype dtype, int64_t index) {
  switch (dtype) {
    case PLM_DTYPE_U8: return (float)((const uint8_t *)base)[index];
    case PLM_DTYPE_U16: return (float)((const uint16_t *)base)[index];
    default: return ((const float *)base)[index];
  }
}

/* Pixel (y, x) of an h x w frame, either inside or outside it (border). */
static inline PLM_HD float plm__load_border(const void *frame, plm_dtype dtype, int64_t h,
                                            int64_t w, int64_t y, int64_t x, plm_border border) {
  int64_t row = plm__border_index(y, h, border), col = plm__border_index(x, w, border);
  if (row < 0 || col < 0) return 0.0f;
  return plm__load_f32(frame, dtype, row * w + col);
}

/* out(frame, y, x) of conv2d, every tap checked against the border. */
static inline PLM_HD float plm__conv2d_pixel(const plm__conv2d_args *a, int64_t frame, int64_t y,
                                             int64_t x) {
  const char *base = (const char *)a->in;
  const void *in = base + (size_t)(frame * a->h * a->w) * plm__conv_element_size(a->dtype);
  int64_t y0 = y * a->stride_y - a->pad_y, x0 = x * a->stride_x - a->pad_x;
  float sum = 0.0f;
  for (int i = 0; i < a->kh; i++)
    for (int j = 0; j < a->kw; j++)
      sum += a->taps[i * a->kw + j] *
             plm__load_border(in, a->dtype, a->h, a->w, y0 + i, x0 + j, a->border);
  return sum;
}

/* The Sobel taps on three rows of three pixels (top, middle, bottom, each pointing
 * at the left pixel of its three), and the magnitude sqrt(gx^2 + gy^2), in f32 with
 * every operation rounded as written (PLM__FADD...), so that every kernel computing
 * them (sobel's and the fused sobel-entropy-threshold's, on both backends) gets the
 * same floats; the square root is correctly rounded on both backends. */
static inline PLM_HD float plm__sobel_gx(const float *top, const float *mid, const float *bot) {
  float outer = PLM__FSUB(top[2], top[0]), centre = PLM__FSUB(mid[2], mid[0]);
  return PLM__FADD(PLM__FADD(outer, PLM__FMUL(2.0f, centre)), PLM__FSUB(bot[2], bot[0]));
}

static inline PLM_HD float plm__sobel_gy(const float *top, const float *bot) {
  float below = PLM__FADD(PLM__FADD(bot[0], PLM__FMUL(2.0f, bot[1])), bot[2]);
  float above = PLM__FADD(PLM__FADD(top[0], PLM__FMUL(2.0f, top[1])), top[2]);
  return PLM__FSUB(below, above);
}

static inline PLM_HD float plm__sobel_magnitude(float gx, float gy) {
  float sum = PLM__FADD(PLM__FMUL(gx, gx), PLM__FMUL(gy, gy));
#ifdef __CUDA_ARCH__
  return __fsqrt_rn(sum); /* correctly rounded even under --use_fast_math */
#else
  return sqrtf(sum);
#endif
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernels (kernels/cpu/conv.c): run on the calling thread and the CPU pool;
 * return when done. */
void plm__conv2d_cpu(const plm__conv2d_args *args);
void plm__sobel_cpu(const plm__sobel_args *args);

/* Staged columns of image row `row` (inside the image) of an h x w frame as f32, through
 * the border: dst[t] (t < count) is column c0 + (t / step) * stride + t % step, which is
 * c0 + t when step == stride (contiguous: the part inside the image converted in one loop,
 * the columns outside by the rule). For the CPU filters (conv2d's, sepconv2d's). */
void plm__conv_stage_columns(float *dst, const void *frame, plm_dtype dtype, int64_t w, int64_t row,
                             plm_border border, int64_t c0, int64_t count, int64_t step,
                             int64_t stride);

/* Sobel's row steps, for CPU kernels that compute the magnitude of a few rows at a
 * time (kernels/cpu/fused.c). plm__sobel_stage_row stages row v (any integer: rows
 * outside the frame come from the border rule) of frame `frame` of a->in as w + 2
 * floats, dst[c] = pixel (v, c - 1) under a->border. plm__sobel_magnitude_row writes
 * magnitude[x], x < w, from the staged rows above, at and below. */
void plm__sobel_stage_row(const plm__sobel_args *a, int64_t frame, int64_t v, float *dst);
void plm__sobel_magnitude_row(const float *top, const float *mid, const float *bot, int64_t w,
                              float *magnitude);

/* Enqueue the CUDA kernels (kernels/cuda/conv.cu) on a cudaStream_t. */
plm_status plm__conv2d_cuda(void *stream, const plm__conv2d_args *args);
plm_status plm__sobel_cuda(void *stream, const plm__sobel_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_CONV_H */

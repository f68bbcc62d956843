/* kernels/common/badpixel.h: the per-pixel replacement both backends run, and the
 * arguments of a badpixel launch (semantics in plume/badpixel.h).
 *
 * A flagged pixel gathers its valid neighbours in raster order (plm__badpixel_replace),
 * pads the rest of 8 slots with +inf and sorts them with one fixed network of 19
 * compare-exchanges (no branch on the data, so no divergence on the GPU); the first n
 * slots are then the n valid values in order (a valid +inf ties with the padding, which
 * changes nothing). NaN never reaches the sort: it is not valid. Both backends take a
 * pixel's output through plm__badpixel_replace, so they have the same bits: the CPU kernel
 * reads the neighbours from the frame (plm__badpixel_at), the CUDA kernel from a tile it
 * stages in shared memory.
 */
#ifndef PLUME_KERNELS_COMMON_BADPIXEL_H
#define PLUME_KERNELS_COMMON_BADPIXEL_H

#include <math.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/badpixel.h"

typedef struct plm__badpixel_args {
  const void *in;
  const uint8_t *bad; /* (H, W), nonzero: bad */
  float *out;         /* never in's memory */
  int64_t frames, height, width;
  plm_dtype dtype; /* of in: u8, u16 or f32 */
} plm__badpixel_args;

/* Element i of in as f32 (exact for u8 and u16). */
static inline PLM_HD float plm__badpixel_value(const void *in, int64_t i, plm_dtype dtype) {
  return dtype == PLM_DTYPE_U8    ? (float)((const uint8_t *)in)[i]
         : dtype == PLM_DTYPE_U16 ? (float)((const uint16_t *)in)[i]
                                  : ((const float *)in)[i];
}

/* Slots a and b of s in order. */
static inline PLM_HD void plm__badpixel_order(float *s, int a, int b) {
  const float lo = s[b] < s[a] ? s[b] : s[a], hi = s[b] < s[a] ? s[a] : s[b];
  s[a] = lo;
  s[b] = hi;
}

/* The median of the n (1..8) valid values in s[0..n), s[n..8) being +inf: sorted by an
 * optimal network for 8 (Knuth, TAOCP 5.3.4: 19 exchanges in layers of 4, 4, 4, 2, 2 and
 * 3, written two or three to a line), then the middle value, or the two middle ones'
 * (a + b) * 0.5f rounded as written on both backends. */
static inline PLM_HD float plm__badpixel_median(float *s, int n) {
  plm__badpixel_order(s, 0, 2), plm__badpixel_order(s, 1, 3);
  plm__badpixel_order(s, 4, 6), plm__badpixel_order(s, 5, 7);
  plm__badpixel_order(s, 0, 4), plm__badpixel_order(s, 1, 5);
  plm__badpixel_order(s, 2, 6), plm__badpixel_order(s, 3, 7);
  plm__badpixel_order(s, 0, 1), plm__badpixel_order(s, 2, 3);
  plm__badpixel_order(s, 4, 5), plm__badpixel_order(s, 6, 7);
  plm__badpixel_order(s, 2, 4), plm__badpixel_order(s, 3, 5);
  plm__badpixel_order(s, 1, 4), plm__badpixel_order(s, 3, 6);
  plm__badpixel_order(s, 1, 2), plm__badpixel_order(s, 3, 4), plm__badpixel_order(s, 5, 6);
  return n % 2 ? s[n / 2] : PLM__FMUL(PLM__FADD(s[n / 2 - 1], s[n / 2]), 0.5f);
}

/* The output of a flagged pixel of value self from its 3 x 3 neighbourhood: around[k] and
 * skip[k] for k = 3 (dy + 1) + (dx + 1) (k = 4 is the pixel itself, never read), skip
 * nonzero where the neighbour is flagged or outside the frame (around[k] is then not read).
 * Its samples are the other neighbours' values in raster order, NaN left out (it is no
 * sample); self when there are none, else their median. Both backends' kernels fill the
 * neighbourhood (the CPU's from the frame, plm__badpixel_at; the GPU's from a tile in
 * shared memory, kernels/cuda/badpixel.cu) and call this, so they have the same bits. */
static inline PLM_HD float plm__badpixel_replace(float self, const float around[9],
                                                 const uint8_t skip[9]) {
  float s[8];
  int n = 0;
  for (int k = 0; k < 9; k++)
    if (k != 4 && !skip[k] && around[k] == around[k]) s[n++] = around[k];
  if (n == 0) return self;
  for (int k = n; k < 8; k++) s[k] = INFINITY;
  return plm__badpixel_median(s, n);
}

/* Output pixel (y, x) of frame f (in's and out's frame base offset f * H * W), its
 * neighbourhood read from the frame: the CPU kernel's. */
static inline PLM_HD float plm__badpixel_at(const plm__badpixel_args *args, int64_t f, int64_t y,
                                            int64_t x) {
  const int64_t h = args->height, w = args->width, base = f * h * w;
  const float self = plm__badpixel_value(args->in, base + y * w + x, args->dtype);
  if (!args->bad[y * w + x]) return self;
  float around[9];
  uint8_t skip[9];
  for (int k = 0; k < 9; k++) {
    const int64_t yy = y + k / 3 - 1, xx = x + k % 3 - 1;
    skip[k] = yy < 0 || yy >= h || xx < 0 || xx >= w || args->bad[yy * w + xx];
    if (!skip[k]) around[k] = plm__badpixel_value(args->in, base + yy * w + xx, args->dtype);
  }
  return plm__badpixel_replace(self, around, skip);
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernel (kernels/cpu/badpixel.c): runs on the calling thread and the CPU pool;
 * returns when done. */
void plm__badpixel_cpu(const plm__badpixel_args *args);

/* Enqueue the CUDA kernel (kernels/cuda/badpixel.cu) on a cudaStream_t. */
plm_status plm__badpixel_cuda(void *stream, const plm__badpixel_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_BADPIXEL_H */

/* kernels/cpu/sepconv.c: sepconv2d on the CPU (plume/conv.h; the arithmetic's order in
 * kernels/common/sepconv.h), output rows split across cores.
 *
 * A range of output rows is computed a block of at most BLOCK output columns at a time.
 * For a block, each input row that the range's outputs need is summed under kernel_x
 * once (the row pass) into a ring of KH row sums, BLOCK floats each, tagged by the
 * row's index before the border rule; an output row then sums KH of them under kernel_y
 * (the column pass), and at stride_y 1 the next output row needs one new row sum. A row
 * pass reads its row's columns in place where they are f32 and inside the image, else
 * staged (converted to f32, through the border rule) into a buffer of (BLOCK - 1) x
 * step + KW floats (step: the stride, or KW when the stride is larger). Memory is bounded
 * by the kernel and the block, never by the image or the padding.
 *
 * Both passes add their terms tap by tap into a block of sums (tap 0 first, from
 * 0.0f), each product and sum rounded on its own (-ffp-contract=off), so every output
 * has plm__sepconv2d_pixel's bits; the loops over the block vectorise, up to nine taps
 * a pass, so that the block is loaded and stored once per nine taps. Rows outside the
 * image under PLM_BORDER_ZERO are summed as zeros, as the definition does (an infinite
 * tap times zero is NaN in both). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common/sepconv.h"
#include "kernels/cpu/dispatch.h"
#include "streams/parallel.h"

enum {
  GRAIN_PIXELS = 1 << 14, /* output pixels (times taps) per chunk at least */
  BLOCK = 512,            /* output columns computed together */
  RANGE_ROWS_PER_TAP = 8  /* output rows a range at least, per tap of kernel_y */
};

/* Per-range working memory. */
typedef struct sep_work {
  float *staged;                       /* (BLOCK - 1) x step + KW floats */
  float *ring;                         /* KH row sums, BLOCK floats each */
  int64_t tags[PLM_CONV2D_MAX_KERNEL]; /* the row each slot holds (before the border), or
                                          INT64_MIN */
  float acc[BLOCK];
} sep_work;

/* The layout of a staged row: `step` floats per output. */
static int64_t staged_step(const plm__sepconv2d_args *a) {
  return a->stride_x <= a->kw ? a->stride_x : a->kw;
}

/* sums[x] = sums[x] + taps[t] * rows[t][x] for t = 0 .. count - 1 in turn, each product
 * and sum rounded on its own: one pass over the sums for up to nine taps, with the same
 * bits as a pass per tap. `count` is a constant where this is inlined (at most nine taps
 * and a sum in AVX2's sixteen registers), so the loop over taps unrolls; rows[t] is the
 * t-th input (a row shifted by t for the row pass, the t-th row sum for the column pass). */
static inline __attribute__((always_inline)) void add_taps(float *restrict sums,
                                                           const float *const rows[],
                                                           const float *restrict taps, int count,
                                                           int64_t n) {
  for (int64_t x = 0; x < n; x++) {
    float sum = sums[x];
    for (int t = 0; t < count; t++) sum = sum + taps[t] * rows[t][x];
    sums[x] = sum;
  }
}

/* Taps [0, count) of taps into sums, through add_taps: nine a pass, then the rest in one. */
static inline __attribute__((always_inline)) void add_tap_passes(float *restrict sums,
                                                                 const float *const rows[],
                                                                 const float *restrict taps,
                                                                 int count, int64_t n) {
  int t = 0;
  for (; t + 9 <= count; t += 9) add_taps(sums, rows + t, taps + t, 9, n);
  switch (count - t) {
    case 1: add_taps(sums, rows + t, taps + t, 1, n); break;
    case 2: add_taps(sums, rows + t, taps + t, 2, n); break;
    case 3: add_taps(sums, rows + t, taps + t, 3, n); break;
    case 4: add_taps(sums, rows + t, taps + t, 4, n); break;
    case 5: add_taps(sums, rows + t, taps + t, 5, n); break;
    case 6: add_taps(sums, rows + t, taps + t, 6, n); break;
    case 7: add_taps(sums, rows + t, taps + t, 7, n); break;
    case 8: add_taps(sums, rows + t, taps + t, 8, n); break;
    default: break; /* none */
  }
}

/* sums[x] = sum_j taps[j] * row[x * step + j], x < n, tap 0 first, from 0; at step 1
 * up to nine taps a pass (add_tap_passes: each sum still adds them one at a time, left to
 * right), so that the sums are loaded and stored a ninth as often. */
PLM__CPU_CLONES static void row_sums(float *restrict sums, const float *restrict row,
                                     const float *restrict taps, int kw, int64_t step, int64_t n) {
  for (int64_t x = 0; x < n; x++) sums[x] = 0.0f;
  if (step == 1) {
    const float *shifted[PLM_CONV2D_MAX_KERNEL];
    for (int j = 0; j < kw; j++) shifted[j] = row + j;
    add_tap_passes(sums, shifted, taps, kw, n);
    return;
  }
  for (int j = 0; j < kw; j++) {
    const float tap = taps[j];
    const float *restrict r = row + j;
    for (int64_t x = 0; x < n; x++) sums[x] = sums[x] + tap * r[x * step];
  }
}

/* acc[x] = sum_i taps[i] * rows[i][x], x < n, tap 0 first, from 0; up to nine rows a
 * pass (add_tap_passes). */
PLM__CPU_CLONES static void column_sums(float *restrict acc, const float *const *rows,
                                        const float *restrict taps, int kh, int64_t n) {
  for (int64_t x = 0; x < n; x++) acc[x] = 0.0f;
  add_tap_passes(acc, rows, taps, kh, n);
}

/* Input row v (before the border) of frame `in` under kernel_x, for outputs [x0, x0 + n),
 * into dst. */
static void row_pass(const plm__sepconv2d_args *a, sep_work *work, const void *in, int64_t v,
                     int64_t x0, int64_t n, float *dst) {
  const int64_t sx = a->stride_x, step = staged_step(a);
  const int64_t c0 = x0 * sx - a->pad_x, last = (x0 + n - 1) * sx - a->pad_x + a->kw - 1;
  const int64_t row = plm__border_index(v, a->h, a->border);
  if (row >= 0 && a->dtype == PLM_DTYPE_F32 && c0 >= 0 && last < a->w) {
    row_sums(dst, (const float *)in + row * a->w + c0, a->taps_x, a->kw, sx, n);
    return;
  }
  const int64_t count = (n - 1) * step + a->kw;
  if (row < 0) /* outside under PLM_BORDER_ZERO: a row of zeros */
    memset(work->staged, 0, (size_t)count * sizeof(float));
  else
    plm__conv_stage_columns(work->staged, in, a->dtype, a->w, row, a->border, c0, count, step, sx);
  row_sums(dst, work->staged, a->taps_x, a->kw, step, n);
}

/* The row sums of input row v for the block, from the ring or computed into it. */
static const float *ring_row(const plm__sepconv2d_args *a, sep_work *work, const void *in,
                             int64_t v, int64_t x0, int64_t n) {
  int64_t slot = v % a->kh;
  if (slot < 0) slot += a->kh;
  float *dst = work->ring + slot * BLOCK;
  if (work->tags[slot] != v) {
    row_pass(a, work, in, v, x0, n, dst);
    work->tags[slot] = v;
  }
  return dst;
}

/* Output rows [begin, end) of the (frame, row) sequence, columns [x0, x0 + n). */
static void sep_block(const plm__sepconv2d_args *a, sep_work *work, int64_t begin, int64_t end,
                      int64_t x0, int64_t n) {
  int64_t frame_held = -1;
  for (int64_t q = begin; q < end; q++) {
    const int64_t frame = q / a->ho, y = q % a->ho;
    if (frame != frame_held) { /* a new block or frame: the ring holds none of its rows */
      for (int i = 0; i < a->kh; i++) work->tags[i] = INT64_MIN;
      frame_held = frame;
    }
    const void *in =
        (const char *)a->in + (size_t)(frame * a->h * a->w) * plm__conv_element_size(a->dtype);
    const int64_t v0 = y * a->stride_y - a->pad_y;
    const float *rows[PLM_CONV2D_MAX_KERNEL];
    for (int i = 0; i < a->kh; i++) rows[i] = ring_row(a, work, in, v0 + i, x0, n);
    column_sums(work->acc, rows, a->taps_y, a->kh, n);
    memcpy(a->out + q * a->wo + x0, work->acc, (size_t)n * sizeof(float));
  }
}

static void sepconv2d_range(void *context, int64_t begin, int64_t end) {
  const plm__sepconv2d_args *a = context;
  sep_work *work = malloc(sizeof *work);
  if (work) {
    work->staged = malloc((size_t)((BLOCK - 1) * staged_step(a) + a->kw) * sizeof(float));
    work->ring = malloc((size_t)a->kh * BLOCK * sizeof(float));
  }
  if (!work || !work->staged || !work->ring) {
    /* No memory for the buffers: the same bits, pixel by pixel. */
    if (work) {
      free(work->staged);
      free(work->ring);
    }
    free(work);
    for (int64_t q = begin; q < end; q++)
      for (int64_t x = 0; x < a->wo; x++)
        a->out[q * a->wo + x] = plm__sepconv2d_pixel(a, q / a->ho, q % a->ho, x);
    return;
  }
  for (int64_t x0 = 0; x0 < a->wo; x0 += BLOCK) {
    const int64_t n = a->wo - x0 < BLOCK ? a->wo - x0 : BLOCK;
    sep_block(a, work, begin, end, x0, n);
  }
  free(work->staged);
  free(work->ring);
  free(work);
}

void plm__sepconv2d_cpu(const plm__sepconv2d_args *args) {
  /* A range's first output row sums KH rows before any is shared: at least
   * RANGE_ROWS_PER_TAP x KH rows a range keep that below 1/8 of its row passes. */
  int64_t grain = GRAIN_PIXELS / (args->wo * (args->kh + args->kw)) + 1;
  if (grain < RANGE_ROWS_PER_TAP * args->kh) grain = RANGE_ROWS_PER_TAP * args->kh;
  plm__parallel_for(args->n * args->ho, grain, sepconv2d_range, (void *)args);
}

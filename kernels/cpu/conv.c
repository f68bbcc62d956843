/* kernels/cpu/conv.c: conv2d and sobel on the CPU, output rows split across cores.
 *
 * Each output row is computed in blocks of at most BLOCK columns, cut so that the
 * outputs whose taps reach past the left or right edge get blocks of their own. For a
 * block, every input row it needs is read through a segment: the run of input
 * columns that the block's taps cover, read in place when the row is f32 and the run
 * lies inside the image (the interior of every row), else staged into a small buffer,
 * converted to f32 with the border applied. u8 and u16 rows are converted once per
 * chunk into a ring of one row per kernel row, then read as f32 rows are (rows too
 * wide for an 8 MiB ring are staged block by block instead). Memory is thus bounded
 * by the kernel, the block and the image width (at most 31 segments of
 * (BLOCK - 1) * 31 + 31 floats and 8 MiB per chunk), never by the padding, which may
 * reach 2^20. With a horizontal stride larger than the kernel a staged segment holds
 * only the KW columns of each output (x * KW + j), not the gaps between them.
 *
 * conv2d adds each kernel row's taps into an accumulator block (at stride 1 in groups
 * of three taps and the last one or two singly, nine taps a pass and the rest in one, so
 * that the loop vectorises and the block is loaded and stored once a pass), and a 3x3
 * kernel at stride 1 does all nine taps in one pass straight into the output; every path
 * adds in the same order, so the result does not depend on the path. Sobel computes its
 * outputs from three segments in one pass, the magnitude without materialising gx and
 * gy. These loops are built for AVX2 and the baseline (kernels/cpu/dispatch.h), with the
 * same results. Sobel's row steps are exported for the fused sobel-entropy-threshold
 * kernel (kernels/cpu/fused.c). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common/conv.h"
#include "kernels/cpu/dispatch.h"
#include "streams/parallel.h"

enum {
  GRAIN_PIXELS = 1 << 14, /* output pixels (times taps) per chunk at least */
  BLOCK = 256             /* output columns computed together */
};

/* ---- segments ---------------------------------------------------------------------- */

void plm__conv_stage_columns(float *restrict dst, const void *frame, plm_dtype dtype, int64_t w,
                             int64_t row, plm_border border, int64_t c0, int64_t count,
                             int64_t step, int64_t stride) {
  const int64_t base = row * w;
  if (step != stride) {
    for (int64_t t = 0; t < count; t++) {
      int64_t col = plm__border_index(c0 + (t / step) * stride + t % step, w, border);
      dst[t] = col < 0 ? 0.0f : plm__load_f32(frame, dtype, base + col);
    }
    return;
  }
  /* Contiguous: the part inside the image converted in one loop, the rest by the rule. */
  int64_t in0 = c0 < 0 ? -c0 : 0, in1 = w - c0;
  if (in0 > count) in0 = count;
  if (in1 > count) in1 = count;
  if (in1 < in0) in1 = in0;
  for (int64_t t = 0; t < in0; t++) {
    int64_t col = plm__border_index(c0 + t, w, border);
    dst[t] = col < 0 ? 0.0f : plm__load_f32(frame, dtype, base + col);
  }
  switch (dtype) {
    case PLM_DTYPE_U8: {
      const uint8_t *restrict s = (const uint8_t *)frame + base + c0;
      for (int64_t t = in0; t < in1; t++) dst[t] = (float)s[t];
      break;
    }
    case PLM_DTYPE_U16: {
      const uint16_t *restrict s = (const uint16_t *)frame + base + c0;
      for (int64_t t = in0; t < in1; t++) dst[t] = (float)s[t];
      break;
    }
    default:
      if (in1 > in0)
        memcpy(dst + in0, (const float *)frame + base + c0 + in0,
               (size_t)(in1 - in0) * sizeof(float));
  }
  for (int64_t t = in1; t < count; t++) {
    int64_t col = plm__border_index(c0 + t, w, border);
    dst[t] = col < 0 ? 0.0f : plm__load_f32(frame, dtype, base + col);
  }
}

/* The end of the block of outputs that starts at x0: BLOCK outputs at most, and never
 * across `lo` or `hi`, the first and the last + 1 outputs whose input columns all lie
 * inside the image, so that the interior blocks are read in place. */
static int64_t block_end(int64_t x0, int64_t count, int64_t lo, int64_t hi) {
  int64_t end = x0 + BLOCK < count ? x0 + BLOCK : count;
  if (x0 < lo && lo < end) end = lo;
  if (x0 < hi && hi < end) end = hi;
  return end;
}

static const void *frame_of(const void *in, plm_dtype dtype, int64_t frame, int64_t h, int64_t w) {
  return (const char *)in + (size_t)(frame * h * w) * plm__conv_element_size(dtype);
}

/* u8 and u16 rows converted to f32 once per chunk rather than once per output row they
 * feed: one slot per kernel row (kh consecutive virtual rows, folded by the border,
 * are distinct modulo kh, so the rows of one output row never evict each other).
 * Off (rows NULL) for f32 input, which is read in place, when the slots would take
 * more than RING_BYTES (very wide rows: each block stages its own columns then), or
 * when there is no memory for them. */
enum { RING_BYTES = 8 << 20 };

typedef struct row_ring {
  float *rows;   /* slots x w */
  int64_t *tags; /* frame * h + row held by each slot, or -1 */
  int slots;
} row_ring;

static row_ring ring_make(plm_dtype dtype, int slots, int64_t w) {
  row_ring ring = {NULL, NULL, slots};
  if (dtype == PLM_DTYPE_F32 || (size_t)slots * (size_t)w > RING_BYTES / sizeof(float)) return ring;
  ring.rows = malloc((size_t)slots * (size_t)w * sizeof(float));
  ring.tags = malloc((size_t)slots * sizeof(int64_t));
  if (!ring.rows || !ring.tags) {
    free(ring.rows);
    free(ring.tags);
    ring.rows = NULL;
    ring.tags = NULL;
    return ring;
  }
  for (int k = 0; k < slots; k++) ring.tags[k] = -1;
  return ring;
}

static void ring_free(row_ring *ring) {
  free(ring->rows);
  free(ring->tags);
}

/* Image row `row` of a frame (index `frame`) as f32: in place, converted in the ring,
 * or NULL when neither (then blocks stage from the raw input). */
static const float *f32_row(row_ring *ring, const void *in, plm_dtype dtype, int64_t h, int64_t w,
                            int64_t frame, int64_t row) {
  if (dtype == PLM_DTYPE_F32) return (const float *)in + row * w;
  if (!ring->rows) return NULL;
  const int slot = (int)(row % ring->slots);
  float *dst = ring->rows + (int64_t)slot * w;
  if (ring->tags[slot] != frame * h + row) {
    ring->tags[slot] = frame * h + row;
    plm__conv_stage_columns(dst, in, dtype, w, row, PLM_BORDER_ZERO, 0, w, 1, 1);
  }
  return dst;
}

/* Columns of row `row` staged into buf (see stage), from its f32 version when there is
 * one (src, from f32_row), else from the raw input. */
static void stage_row(float *buf, const float *src, const void *in, plm_dtype dtype, int64_t w,
                      int64_t row, plm_border border, int64_t c0, int64_t count, int64_t step,
                      int64_t stride) {
  if (src)
    plm__conv_stage_columns(buf, src, PLM_DTYPE_F32, w, 0, border, c0, count, step, stride);
  else
    plm__conv_stage_columns(buf, in, dtype, w, row, border, c0, count, step, stride);
}

/* ---- conv2d ------------------------------------------------------------------------ */

/* acc[x] += (taps[0] * r[x] + taps[1] * r[x + 1]) + taps[2] * r[x + 2] for each of
 * `groups` groups of three taps in turn (group g at taps + 3g, r + 3g), then
 * acc[x] += taps[j] * r[x + j] for each of `singles` taps after them, in one pass over
 * acc: the same sums, rounded alike, as one pass per group and per single tap, with acc
 * loaded and stored once. `groups` (up to 3) and `singles` (up to 2) are constants where
 * this is inlined (at most eleven taps and a sum, held in AVX2's sixteen registers), so
 * the loops over them unroll. */
static inline __attribute__((always_inline)) void add_taps(float *restrict acc,
                                                           const float *restrict r,
                                                           const float *restrict taps, int groups,
                                                           int singles, int64_t n) {
  for (int64_t x = 0; x < n; x++) {
    float sum = acc[x];
    for (int g = 0; g < groups; g++) {
      const float *restrict k = taps + 3 * g, *restrict p = r + 3 * g + x;
      sum += k[0] * p[0] + k[1] * p[1] + k[2] * p[2];
    }
    for (int j = 3 * groups; j < 3 * groups + singles; j++) sum += taps[j] * r[x + j];
    acc[x] = sum;
  }
}

/* acc[x] += sum_j taps[j] * row[x * step + j], for x < n; at stride 1 (grouped) three
 * taps at a time, then the last one or two one by one, in passes of nine taps and one of
 * the rest (add_taps); at other strides a tap a pass. */
PLM__CPU_CLONES static void add_kernel_row(float *restrict acc, const float *restrict row,
                                           const float *restrict taps, int kw, int64_t step,
                                           bool grouped, int64_t n) {
  if (grouped) {
    int j = 0;
    for (; j + 9 <= kw; j += 9) add_taps(acc, row + j, taps + j, 3, 0, n);
    const float *restrict r = row + j, *restrict k = taps + j;
    switch (kw - j) { /* the rest: (kw - j) / 3 groups and (kw - j) % 3 single taps */
      case 1: add_taps(acc, r, k, 0, 1, n); break;
      case 2: add_taps(acc, r, k, 0, 2, n); break;
      case 3: add_taps(acc, r, k, 1, 0, n); break;
      case 4: add_taps(acc, r, k, 1, 1, n); break;
      case 5: add_taps(acc, r, k, 1, 2, n); break;
      case 6: add_taps(acc, r, k, 2, 0, n); break;
      case 7: add_taps(acc, r, k, 2, 1, n); break;
      case 8: add_taps(acc, r, k, 2, 2, n); break;
      default: break; /* none */
    }
    return;
  }
  for (int j = 0; j < kw; j++) {
    const float k = taps[j];
    const float *restrict r = row + j;
    for (int64_t x = 0; x < n; x++) acc[x] += k * r[x * step];
  }
}

/* The 3x3 stride-1 case, all nine taps in one pass, added as add_kernel_row does. */
PLM__CPU_CLONES static void conv3x3_block(float *restrict out, const float *restrict r0,
                                          const float *restrict r1, const float *restrict r2,
                                          const float *restrict k, int64_t n) {
  const float k00 = k[0], k01 = k[1], k02 = k[2], k10 = k[3], k11 = k[4], k12 = k[5], k20 = k[6],
              k21 = k[7], k22 = k[8];
  for (int64_t x = 0; x < n; x++) {
    float acc = 0.0f;
    acc += k00 * r0[x] + k01 * r0[x + 1] + k02 * r0[x + 2];
    acc += k10 * r1[x] + k11 * r1[x + 1] + k12 * r1[x + 2];
    acc += k20 * r2[x] + k21 * r2[x + 1] + k22 * r2[x + 2];
    out[x] = acc;
  }
}

/* Per-range working memory: one segment buffer per kernel row and an accumulator. */
typedef struct conv_work {
  float *segments; /* kh x capacity */
  int64_t capacity;
  row_ring ring;
  float acc[BLOCK];
} conv_work;

/* The layout of a staged segment: `step` floats per output (the stride, or KW when
 * the stride is larger, so that the gaps are not staged). */
static int64_t staged_step(const plm__conv2d_args *a) {
  return a->stride_x <= a->kw ? a->stride_x : a->kw;
}

static void conv2d_row(const plm__conv2d_args *a, conv_work *work, int64_t q) {
  const int64_t frame = q / a->ho, y = q % a->ho;
  const void *in = frame_of(a->in, a->dtype, frame, a->h, a->w);
  float *out_row = a->out + q * a->wo;
  const int64_t sx = a->stride_x, step = staged_step(a);
  int64_t rows[PLM_CONV2D_MAX_KERNEL]; /* the image row of each kernel row, -1: zeros */
  bool all_rows = true;
  for (int i = 0; i < a->kh; i++) {
    rows[i] = plm__border_index(y * a->stride_y - a->pad_y + i, a->h, a->border);
    all_rows = all_rows && rows[i] >= 0;
  }
  const bool fused = a->kh == 3 && a->kw == 3 && sx == 1 && all_rows;
  const float *src[PLM_CONV2D_MAX_KERNEL], *seg[PLM_CONV2D_MAX_KERNEL];
  int64_t seg_step[PLM_CONV2D_MAX_KERNEL];
  for (int i = 0; i < a->kh; i++)
    src[i] = rows[i] < 0 ? NULL : f32_row(&work->ring, in, a->dtype, a->h, a->w, frame, rows[i]);
  /* Outputs [lo, hi) read only columns inside the image. */
  const int64_t lo = (a->pad_x + sx - 1) / sx, hi = (a->w - a->kw + a->pad_x) / sx + 1;
  for (int64_t x0 = 0, x1; x0 < a->wo; x0 = x1) {
    x1 = block_end(x0, a->wo, lo, hi);
    const int64_t n = x1 - x0;
    const int64_t c0 = x0 * sx - a->pad_x, last = (x0 + n - 1) * sx - a->pad_x + a->kw - 1;
    const bool inside = c0 >= 0 && last < a->w;
    for (int i = 0; i < a->kh; i++) {
      if (rows[i] < 0) continue; /* zeros add nothing */
      if (inside && src[i]) {
        seg[i] = src[i] + c0;
        seg_step[i] = sx;
      } else {
        float *buf = work->segments + i * work->capacity;
        stage_row(buf, src[i], in, a->dtype, a->w, rows[i], a->border, c0, (n - 1) * step + a->kw,
                  step, sx);
        seg[i] = buf;
        seg_step[i] = step;
      }
    }
    if (fused) {
      conv3x3_block(out_row + x0, seg[0], seg[1], seg[2], a->taps, n);
      continue;
    }
    memset(work->acc, 0, (size_t)n * sizeof(float));
    for (int i = 0; i < a->kh; i++)
      if (rows[i] >= 0)
        add_kernel_row(work->acc, seg[i], a->taps + (int64_t)i * a->kw, a->kw, seg_step[i], sx == 1,
                       n);
    memcpy(out_row + x0, work->acc, (size_t)n * sizeof(float));
  }
}

static void conv2d_range(void *context, int64_t begin, int64_t end) {
  const plm__conv2d_args *a = context;
  conv_work *work = malloc(sizeof *work);
  if (work) {
    work->capacity = (BLOCK - 1) * staged_step(a) + a->kw;
    work->segments = malloc((size_t)a->kh * (size_t)work->capacity * sizeof(float));
  }
  if (!work || !work->segments) {
    /* No memory for the buffers: the same result (up to rounding), pixel by pixel. */
    free(work);
    for (int64_t q = begin; q < end; q++)
      for (int64_t x = 0; x < a->wo; x++)
        a->out[q * a->wo + x] = plm__conv2d_pixel(a, q / a->ho, q % a->ho, x);
    return;
  }
  work->ring = ring_make(a->dtype, a->kh, a->w);
  for (int64_t q = begin; q < end; q++) conv2d_row(a, work, q);
  ring_free(&work->ring);
  free(work->segments);
  free(work);
}

void plm__conv2d_cpu(const plm__conv2d_args *args) {
  int64_t grain = GRAIN_PIXELS / (args->wo * args->kh * args->kw) + 1;
  plm__parallel_for(args->n * args->ho, grain, conv2d_range, (void *)args);
}

/* ---- sobel ------------------------------------------------------------------------- */

/* n outputs from three rows of n + 2 pixels (the left neighbour first), at offset. */
PLM__CPU_CLONES static void sobel_block(const plm__sobel_args *a, const float *restrict top,
                                        const float *restrict mid, const float *restrict bot,
                                        int64_t offset, int64_t n) {
  if (a->gx && a->gy && a->magnitude) {
    float *restrict gx = a->gx + offset, *restrict gy = a->gy + offset;
    float *restrict magnitude = a->magnitude + offset;
    for (int64_t x = 0; x < n; x++) {
      float dx = plm__sobel_gx(top + x, mid + x, bot + x), dy = plm__sobel_gy(top + x, bot + x);
      gx[x] = dx;
      gy[x] = dy;
      magnitude[x] = plm__sobel_magnitude(dx, dy);
    }
    return;
  }
  if (a->gx) {
    float *restrict gx = a->gx + offset;
    for (int64_t x = 0; x < n; x++) gx[x] = plm__sobel_gx(top + x, mid + x, bot + x);
  }
  if (a->gy) {
    float *restrict gy = a->gy + offset;
    for (int64_t x = 0; x < n; x++) gy[x] = plm__sobel_gy(top + x, bot + x);
  }
  if (a->magnitude) {
    float *restrict magnitude = a->magnitude + offset;
    for (int64_t x = 0; x < n; x++) {
      float gx = plm__sobel_gx(top + x, mid + x, bot + x), gy = plm__sobel_gy(top + x, bot + x);
      magnitude[x] = plm__sobel_magnitude(gx, gy);
    }
  }
}

PLM__CPU_CLONES static void sobel_magnitude_row(const float *restrict top,
                                                const float *restrict mid,
                                                const float *restrict bot, int64_t w,
                                                float *restrict magnitude) {
  for (int64_t x = 0; x < w; x++) {
    float gx = plm__sobel_gx(top + x, mid + x, bot + x), gy = plm__sobel_gy(top + x, bot + x);
    magnitude[x] = plm__sobel_magnitude(gx, gy);
  }
}

/* The clones stay static, called through this plain function: clang 14 defines only the
 * ifunc symbol (name.ifunc) of an extern function with target_clones, and the fused
 * kernel, in another file, would not link. */
void plm__sobel_magnitude_row(const float *restrict top, const float *restrict mid,
                              const float *restrict bot, int64_t w, float *restrict magnitude) {
  sobel_magnitude_row(top, mid, bot, w, magnitude);
}

void plm__sobel_stage_row(const plm__sobel_args *a, int64_t frame, int64_t v, float *dst) {
  const int64_t row = plm__border_index(v, a->h, a->border);
  if (row < 0) {
    memset(dst, 0, (size_t)(a->w + 2) * sizeof(float));
    return;
  }
  plm__conv_stage_columns(dst, frame_of(a->in, a->dtype, frame, a->h, a->w), a->dtype, a->w, row,
                          a->border, -1, a->w + 2, 1, 1);
}

/* Three segment buffers and a row of zeros (for rows outside under PLM_BORDER_ZERO). */
typedef struct sobel_work {
  float segments[3][BLOCK + 2];
  float zeros[BLOCK + 2];
  row_ring ring;
} sobel_work;

static void sobel_row(const plm__sobel_args *a, sobel_work *work, int64_t q) {
  const int64_t frame = q / a->h, y = q % a->h;
  const void *in = frame_of(a->in, a->dtype, frame, a->h, a->w);
  int64_t rows[3];
  const float *src[3];
  for (int i = 0; i < 3; i++) {
    rows[i] = plm__border_index(y - 1 + i, a->h, a->border);
    src[i] = rows[i] < 0 ? NULL : f32_row(&work->ring, in, a->dtype, a->h, a->w, frame, rows[i]);
  }
  for (int64_t x0 = 0, x1; x0 < a->w; x0 = x1) {
    x1 = block_end(x0, a->w, 1, a->w - 1);
    const int64_t n = x1 - x0;
    const bool inside = x0 >= 1 && x1 + 1 <= a->w;
    const float *seg[3];
    for (int i = 0; i < 3; i++) {
      if (rows[i] < 0) {
        seg[i] = work->zeros;
      } else if (inside && src[i]) {
        seg[i] = src[i] + x0 - 1;
      } else {
        stage_row(work->segments[i], src[i], in, a->dtype, a->w, rows[i], a->border, x0 - 1, n + 2,
                  1, 1);
        seg[i] = work->segments[i];
      }
    }
    sobel_block(a, seg[0], seg[1], seg[2], q * a->w + x0, n);
  }
}

/* One row of sobel with every pixel read through the border rule. */
static void sobel_row_checked(const plm__sobel_args *a, int64_t frame, int64_t y) {
  const void *in = frame_of(a->in, a->dtype, frame, a->h, a->w);
  int64_t offset = (frame * a->h + y) * a->w;
  for (int64_t x = 0; x < a->w; x++) {
    float p[3][3];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        p[i][j] = plm__load_border(in, a->dtype, a->h, a->w, y - 1 + i, x - 1 + j, a->border);
    float gx = plm__sobel_gx(p[0], p[1], p[2]), gy = plm__sobel_gy(p[0], p[2]);
    if (a->gx) a->gx[offset + x] = gx;
    if (a->gy) a->gy[offset + x] = gy;
    if (a->magnitude) a->magnitude[offset + x] = plm__sobel_magnitude(gx, gy);
  }
}

static void sobel_range(void *context, int64_t begin, int64_t end) {
  const plm__sobel_args *a = context;
  sobel_work *work = calloc(1, sizeof *work);
  if (!work) {
    for (int64_t q = begin; q < end; q++) sobel_row_checked(a, q / a->h, q % a->h);
    return;
  }
  work->ring = ring_make(a->dtype, 3, a->w);
  for (int64_t q = begin; q < end; q++) sobel_row(a, work, q);
  ring_free(&work->ring);
  free(work);
}

void plm__sobel_cpu(const plm__sobel_args *args) {
  int64_t grain = GRAIN_PIXELS / (args->w * 9) + 1;
  plm__parallel_for(args->n * args->h, grain, sobel_range, (void *)args);
}

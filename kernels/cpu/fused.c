/* kernels/cpu/fused.c: sobel -> entropy -> threshold on the CPU, in one pass.
 *
 * The rows of all frames are split into bands, one per chunk of plm__parallel_for. A
 * band walks its output rows down, and for that keeps in its part of the scratch:
 *   - three staged input rows (f32 with one border column on each side, from
 *     plm__sobel_stage_row), slot v mod 3 holding row v, so each row is staged once;
 *   - a sliding buffer of bin rows (u16, rows padded apart: bins_stride): bin row r is
 *     Sobel's magnitude of row r (plm__sobel_magnitude_row) binned by
 *     plm__entropy_bin_f32. It holds up to `capacity` consecutive rows, the window's at
 *     least; when the next row would not fit, the rows still needed move to its top
 *     (one memmove every STEP rows or so);
 *   - one f32 row (the magnitudes of a row, then the entropies of a row) and a
 *     histogram.
 * The entropy of an output row is plm__entropy_cpu_row on the bin rows of its window,
 * the entropy op's own row step, and each value is compared by plm__threshold_one as
 * the threshold op compares it: with the sobel and entropy ops' per-element math this
 * gives their results bit for bit (kernels/common/fused.h).
 *
 * A band recomputes the window - 1 bin rows around its first rows (its halo); bands
 * are at least MIN_BAND_ROWS rows, which keeps that small next to the entropy's 2w
 * count updates per pixel. Memory per band: about capacity x W x 2 + (W + 2) x 12 +
 * W x 4 bytes and a histogram, so O(rows x W) for the whole op, never O(H x W).
 */
#include <stdbool.h>
#include <string.h>

#include "kernels/common/fused.h"
#include "streams/parallel.h"

enum { MIN_BAND_ROWS = 16, STEP = 16, ALIGN = 64 };

typedef plm__sobel_entropy_threshold_args fused_args;

static size_t round_up(size_t bytes) {
  return (bytes + ALIGN - 1) / ALIGN * ALIGN;
}

static int64_t band_count(const fused_args *a) {
  int64_t rows = a->sobel.n * a->sobel.h;
  int64_t most = (int64_t)plm__parallel_threads() * a->bands_per_thread;
  int64_t by_size = (rows + MIN_BAND_ROWS - 1) / MIN_BAND_ROWS;
  return by_size < most ? by_size : most;
}

/* Bins between the starts of two rows of the bin buffer (the entropy kernel's). */
static int64_t bins_stride(const fused_args *a) {
  return plm__entropy_cpu_bins_stride(a->sobel.w);
}

/* Rows the bin buffer holds: the window's and STEP more, never more than the frame's. */
static int64_t capacity(const fused_args *a) {
  int64_t rows = (int64_t)a->window + STEP - 1;
  return rows < a->sobel.h ? rows : a->sobel.h;
}

/* One band's part of the scratch. */
typedef struct band {
  float *staged;     /* 3 rows of w + 2 */
  int64_t tags[3];   /* the virtual input row in each staged slot */
  float *row;        /* w */
  uint16_t *bins;    /* capacity rows of w */
  int64_t first_row; /* the frame row in bins' first row */
  int64_t end_row;   /* one past the last frame row in bins */
  uint16_t *hist;    /* a->bins counts */
} band;

static size_t staged_bytes(const fused_args *a) {
  return round_up(3 * (size_t)(a->sobel.w + 2) * sizeof(float));
}

static size_t row_bytes(const fused_args *a) {
  return round_up((size_t)a->sobel.w * sizeof(float));
}

static size_t bins_bytes(const fused_args *a) {
  return round_up((size_t)(capacity(a) * bins_stride(a)) * sizeof(uint16_t));
}

static size_t band_bytes(const fused_args *a) {
  return staged_bytes(a) + row_bytes(a) + bins_bytes(a) +
         round_up((size_t)a->bins * sizeof(uint16_t));
}

size_t plm__sobel_entropy_threshold_cpu_scratch_bytes(const fused_args *a) {
  return (size_t)band_count(a) * band_bytes(a);
}

static band band_at(const fused_args *a, int64_t index) {
  char *base = (char *)a->scratch + (size_t)index * band_bytes(a);
  band b = {.staged = (float *)base,
            .row = (float *)(base + staged_bytes(a)),
            .bins = (uint16_t *)(base + staged_bytes(a) + row_bytes(a)),
            .hist = (uint16_t *)(base + staged_bytes(a) + row_bytes(a) + bins_bytes(a))};
  return b;
}

/* Staged input row v (any integer) of frame f, staging it if its slot holds another. */
static const float *staged_row(const fused_args *a, band *b, int64_t f, int64_t v) {
  int slot = (int)(((v % 3) + 3) % 3);
  float *dst = b->staged + (size_t)slot * (size_t)(a->sobel.w + 2);
  if (b->tags[slot] != v) {
    plm__sobel_stage_row(&a->sobel, f, v, dst);
    b->tags[slot] = v;
  }
  return dst;
}

/* Bin row r of frame f into dst: the Sobel magnitude of row r, binned. */
static void bin_row(const fused_args *a, band *b, int64_t f, int64_t r, uint16_t *restrict dst) {
  const float *top = staged_row(a, b, f, r - 1);
  const float *mid = staged_row(a, b, f, r);
  const float *bot = staged_row(a, b, f, r + 1);
  plm__sobel_magnitude_row(top, mid, bot, a->sobel.w, b->row);
  const float *restrict magnitude = b->row;
  for (int64_t x = 0; x < a->sobel.w; x++)
    dst[x] = (uint16_t)plm__entropy_bin_f32(magnitude[x], a->lo, a->hi, a->bins);
}

/* Make bins hold frame rows [first, end) (end - first <= capacity), binning the rows
 * it lacks. Rows are asked for in increasing order: first and end never go back. */
static void hold_rows(const fused_args *a, band *b, int64_t f, int64_t first, int64_t end) {
  const int64_t stride = bins_stride(a);
  if (end <= b->end_row) return;
  if (end - b->first_row > capacity(a)) {
    memmove(b->bins, b->bins + (first - b->first_row) * stride,
            (size_t)((b->end_row - first) * stride) * sizeof(uint16_t));
    b->first_row = first;
  }
  for (int64_t r = b->end_row; r < end; r++)
    bin_row(a, b, f, r, b->bins + (r - b->first_row) * stride);
  b->end_row = end;
}

/* Output rows [y0, y1) of frame f. */
static void run_rows(const fused_args *a, band *b, int64_t f, int64_t y0, int64_t y1) {
  const int64_t h = a->sobel.h, w = a->sobel.w;
  for (int s = 0; s < 3; s++) b->tags[s] = INT64_MIN; /* a new frame: nothing staged */
  int64_t first, count;
  plm__entropy_span(y0, h, a->window, &first, &count);
  b->first_row = b->end_row = first;
  for (int64_t y = y0; y < y1; y++) {
    plm__entropy_span(y, h, a->window, &first, &count);
    hold_rows(a, b, f, first, first + count);
    plm__entropy_cpu_row(b->bins + (first - b->first_row) * bins_stride(a), count, bins_stride(a),
                         w, a->window, b->row, b->hist);
    uint8_t *restrict mask = a->mask + (f * h + y) * w;
    const float *restrict entropy = b->row;
    for (int64_t x = 0; x < w; x++)
      mask[x] = plm__threshold_one((double)entropy[x], a->value, a->compare);
  }
}

static void run_bands(void *context, int64_t begin, int64_t end) {
  const fused_args *a = context;
  band b = band_at(a, begin); /* one chunk runs its bands one after another */
  memset(b.hist, 0, (size_t)a->bins * sizeof(uint16_t));
  const int64_t h = a->sobel.h, rows = a->sobel.n * h, bands = band_count(a);
  for (int64_t index = begin; index < end; index++) {
    int64_t row = index * rows / bands, last = (index + 1) * rows / bands;
    while (row < last) { /* a band may cross frames: one run per frame */
      int64_t f = row / h, y0 = row % h;
      int64_t y1 = y0 + (last - row) < h ? y0 + (last - row) : h;
      run_rows(a, &b, f, y0, y1);
      row += y1 - y0;
    }
  }
}

void plm__sobel_entropy_threshold_cpu(const fused_args *a) {
  plm__parallel_for(band_count(a), 1, run_bands, (void *)a);
}

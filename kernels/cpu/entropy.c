/* kernels/cpu/entropy.c: local entropy on the CPU, split across cores.
 *
 * (f32 with auto range) A first pass finds each frame's finite min and max. Then the
 * rows of all frames are cut into bands, one task each; a band works through its rows
 * a block of at most BLOCK_ROWS rows of one frame at a time: it bins the rows the
 * block's windows cover (the block and w - 1 rows of halo, clipped to the frame) into
 * its own u16 buffer (rows plm__entropy_cpu_bins_stride apart), then computes the
 * block's rows from it with plm__entropy_cpu_row, which the fused op shares. Within a row the
 * window's histogram slides right: the column that leaves is taken out and the column
 * that enters is added (2w count changes per pixel), and each change updates
 * S = sum c log2 c in O(1) from a table of differences, so no pixel scans the bins.
 *
 * Scratch (from the pool): each frame's range, and per band a histogram and a bin
 * buffer of at most BLOCK_ROWS + w - 1 rows, so it grows with the frame width and the
 * core count, not with the batch. Every row leaves the histogram zeroed again.
 */
#include <string.h>

#include "kernels/common/entropy.h"
#include "streams/parallel.h"

enum { BLOCK_ROWS = 64, ALIGN = 64 };

/* What S gains when a count goes from c to c + 1, for every count a window reaches,
 * including swap_columns' one past a full 255 x 255 window (kernels/common/entropy.h):
 * computed at build time (cmake/make_entropy_tables.c), the very table the CUDA
 * kernels compile into their device data. */
static const int64_t delta[PLM__ENTROPY_DELTA_COUNT] = {
#include "entropy_delta_table.inc"
};

const int64_t *plm__entropy_delta_table(void) {
  return delta;
}

static size_t round_up(size_t bytes) {
  return (bytes + ALIGN - 1) / ALIGN * ALIGN;
}

static inline int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

static inline int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

static int64_t band_count(const plm__entropy_args *args) {
  int64_t rows = args->frames * args->height;
  int64_t most = (int64_t)plm__parallel_threads() * args->bands_per_thread;
  return rows < most ? rows : most;
}

/* Rows in a band's bin buffer: a block and its halo, never more than a frame. */
static int64_t buffer_rows(const plm__entropy_args *args) {
  return min64(args->height, BLOCK_ROWS + args->window - 1);
}

/* The scratch: ranges (2 doubles per frame), then per band its histogram (a u16 count
 * per bin) and its bin buffer (u16 per pixel). */
static size_t ranges_bytes(const plm__entropy_args *args) {
  return round_up((size_t)args->frames * 2 * sizeof(double));
}

static size_t band_bytes(const plm__entropy_args *args) {
  return round_up((size_t)args->bins * sizeof(uint16_t)) +
         round_up((size_t)(buffer_rows(args) * plm__entropy_cpu_bins_stride(args->width)) *
                  sizeof(uint16_t));
}

size_t plm__entropy_cpu_scratch_bytes(const plm__entropy_args *args) {
  return ranges_bytes(args) + (size_t)band_count(args) * band_bytes(args);
}

static double *ranges_of(const plm__entropy_args *args) {
  return (double *)args->scratch;
}

static uint16_t *hist_of(const plm__entropy_args *args, int64_t band) {
  return (uint16_t *)((char *)args->scratch + ranges_bytes(args) + (size_t)band * band_bytes(args));
}

static uint16_t *buffer_of(const plm__entropy_args *args, int64_t band) {
  return hist_of(args, band) + round_up((size_t)args->bins * sizeof(uint16_t)) / sizeof(uint16_t);
}

/* ---- pass 1: each frame's finite min and max (f32, auto range) ---- */

static void range_frames(void *context, int64_t begin, int64_t end) {
  const plm__entropy_args *args = context;
  double *ranges = ranges_of(args);
  int64_t size = args->height * args->width;
  for (int64_t f = begin; f < end; f++) {
    const float *frame = (const float *)args->in + f * size;
    float lo = 0.0f, hi = 0.0f;
    int seen = 0;
    for (int64_t i = 0; i < size; i++) {
      float v = frame[i];
      if (!plm__entropy_in_auto_range(v)) continue;
      if (!seen || v < lo) lo = v;
      if (!seen || v > hi) hi = v;
      seen = 1;
    }
    ranges[2 * f] = lo;
    ranges[2 * f + 1] = hi;
  }
}

/* ---- binning: rows [r0, r1) of frame f into dst ---- */

#define BIN_LOOP(dtype)             \
  for (int64_t i = i0; i < i1; i++) \
  dst[i - i0] = (uint16_t)plm__entropy_bin(args->in, i, dtype, args->bins, lo, hi)

static void bin_rows(const plm__entropy_args *args, int64_t f, int64_t r0, int64_t r1,
                     uint16_t *bins) {
  double lo = args->range_auto ? ranges_of(args)[2 * f] : args->lo;
  double hi = args->range_auto ? ranges_of(args)[2 * f + 1] : args->hi;
  const int64_t stride = plm__entropy_cpu_bins_stride(args->width);
  for (int64_t r = r0; r < r1; r++) {
    int64_t i0 = (f * args->height + r) * args->width, i1 = i0 + args->width;
    uint16_t *dst = bins + (r - r0) * stride;
    switch (args->dtype) { /* a constant dtype in each loop, so each is specialised */
      case PLM_DTYPE_U8: BIN_LOOP(PLM_DTYPE_U8); break;
      case PLM_DTYPE_U16: BIN_LOOP(PLM_DTYPE_U16); break;
      case PLM_DTYPE_F32: BIN_LOOP(PLM_DTYPE_F32); break;
      case PLM_DTYPE_I32:
      case PLM_DTYPE_F64: break; /* refused by the op */
    }
  }
}

/* ---- the entropy, a band of rows at a time ---- */

static inline int64_t add_column(uint16_t *hist, const uint16_t *column, int64_t rows,
                                 int64_t stride, int64_t s) {
  for (int64_t r = 0; r < rows; r++) {
    uint16_t b = column[r * stride];
    uint16_t c = hist[b];
    s += delta[c];
    hist[b] = (uint16_t)(c + 1);
  }
  return s;
}

static inline int64_t remove_column(uint16_t *hist, const uint16_t *column, int64_t rows,
                                    int64_t stride, int64_t s) {
  for (int64_t r = 0; r < rows; r++) {
    uint16_t b = column[r * stride];
    uint16_t c = (uint16_t)(hist[b] - 1);
    s -= delta[c];
    hist[b] = c;
  }
  return s;
}

/* Both at once, for the interior. (When a row's two pixels share a bin the count goes
 * up and down again: cheaper than a branch the CPU would mispredict.) */
static inline int64_t swap_columns(uint16_t *hist, const uint16_t *entering,
                                   const uint16_t *leaving, int64_t rows, int64_t stride,
                                   int64_t s) {
  for (int64_t r = 0; r < rows; r++) {
    uint16_t a = entering[r * stride], b = leaving[r * stride];
    uint16_t ca = hist[a];
    s += delta[ca];
    hist[a] = (uint16_t)(ca + 1);
    uint16_t cb = (uint16_t)(hist[b] - 1);
    s -= delta[cb];
    hist[b] = cb;
  }
  return s;
}

void plm__entropy_cpu_row(const uint16_t *top, int64_t rows, int64_t stride, int64_t width,
                          int window, float *out_row, uint16_t *hist) {
  const int64_t left = window / 2, right = window - 1 - left;
  int64_t s = 0;
  for (int64_t c = 0; c <= min64(width - 1, right); c++)
    s = add_column(hist, top + c, rows, stride, s);
  int64_t last_n = 0;
  plm__entropy_norm norm = {0.0, 0.0};
  for (int64_t x = 0; x < width; x++) {
    int64_t entering = x + right, leaving = x - left - 1;
    if (x > 0) {
      if (entering < width && leaving >= 0)
        s = swap_columns(hist, top + entering, top + leaving, rows, stride, s);
      else if (entering < width)
        s = add_column(hist, top + entering, rows, stride, s);
      else if (leaving >= 0)
        s = remove_column(hist, top + leaving, rows, stride, s);
    }
    int64_t n = rows * (min64(width - 1, x + right) - max64(0, x - left) + 1);
    if (n != last_n) {
      last_n = n;
      norm = plm__entropy_norm_of(n);
    }
    out_row[x] = plm__entropy_from_sum(norm, s);
  }
  for (int64_t c = max64(0, width - 1 - left); c < width; c++)
    s = remove_column(hist, top + c, rows, stride, s);
}

/* Bands [begin, end): each takes rows [band * rows / bands, (band + 1) * rows / bands)
 * of the frames laid end to end, a block of one frame at a time. */
static void entropy_bands(void *context, int64_t begin, int64_t end) {
  const plm__entropy_args *args = context;
  const int64_t height = args->height, rows = args->frames * height, bands = band_count(args);
  const int64_t left = args->window / 2, right = args->window - 1 - left;
  const int64_t stride = plm__entropy_cpu_bins_stride(args->width);
  for (int64_t band = begin; band < end; band++) {
    uint16_t *hist = hist_of(args, band), *bins = buffer_of(args, band);
    memset(hist, 0, (size_t)args->bins * sizeof *hist);
    const int64_t last = (band + 1) * rows / bands;
    for (int64_t row = band * rows / bands; row < last;) {
      const int64_t f = row / height, y0 = row % height;
      const int64_t y1 = min64(min64(y0 + BLOCK_ROWS, height), y0 + last - row);
      const int64_t b0 = max64(0, y0 - left), b1 = min64(height, y1 + right);
      bin_rows(args, f, b0, b1, bins);
      for (int64_t y = y0; y < y1; y++) {
        int64_t first, count;
        plm__entropy_span(y, height, args->window, &first, &count);
        plm__entropy_cpu_row(bins + (first - b0) * stride, count, stride, args->width, args->window,
                             args->out + (f * height + y) * args->width, hist);
      }
      row += y1 - y0;
    }
  }
}

int64_t plm__entropy_cpu_bins_stride(int64_t width) {
  int64_t lines = (width + 31) / 32; /* 32 bins of 2 bytes: a 64-byte cache line */
  return (lines | 1) * 32;
}

void plm__entropy_cpu(const plm__entropy_args *args) {
  void *context = (void *)args;
  if (args->dtype == PLM_DTYPE_F32 && args->range_auto)
    plm__parallel_for(args->frames, 1, range_frames, context);
  plm__parallel_for(band_count(args), 1, entropy_bands, context);
}

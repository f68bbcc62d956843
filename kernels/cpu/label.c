/* kernels/cpu/label.c: connected components and region statistics on the CPU.
 *
 * label is a run-based two-pass union-find. A run is a maximal stretch of foreground
 * in a row; runs are found a word (8 pixels) at a time, so the background costs
 * little. Each run is one union-find node, represented by its first pixel: the labels
 * array holds, at that pixel, the parent's first pixel (a frame-local linear index).
 * Linking hangs the larger root under the smaller, so every parent precedes its child
 * in raster order and a component's root is its first pixel.
 *
 *   1. Bands of rows, in parallel: each run is linked with the runs it touches in the
 *      row above (columns overlapping, or one apart diagonally under 8-connectivity),
 *      inside the band.
 *   2. Per frame: the runs across each band border are linked; then, in raster order,
 *      a run that is its own root opens label k + 1 and any other takes the final
 *      label of its parent, which precedes it and so is already final (scipy's
 *      numbering).
 *   3. Bands of rows, in parallel: each run is filled with the label at its first
 *      pixel, the background with 0.
 *
 * No memory beyond the labels array is needed; pixels other than a run's first are
 * written only in step 3. regions is one raster-order pass accumulating in f64 per
 * label. */
#include <math.h>
#include <string.h>

#include "kernels/common/label.h"
#include "kernels/cpu/parallel.h"

enum { BAND_PIXELS = 1 << 16 }; /* pixels per band at least */

static int32_t find_root(int32_t *parent, int32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]]; /* path halving keeps parent <= child */
    x = parent[x];
  }
  return x;
}

static void unite(int32_t *parent, int32_t a, int32_t b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a < b)
    parent[b] = a;
  else if (b < a)
    parent[a] = b;
}

static int64_t band_rows(const plm__label_args *args) {
  int64_t rows = (BAND_PIXELS + args->width - 1) / args->width;
  return rows < args->height ? rows : args->height;
}

static int64_t bands_per_frame(const plm__label_args *args) {
  int64_t rows = band_rows(args);
  return (args->height + rows - 1) / rows;
}

/* ---- runs ---------------------------------------------------------------------------- */

static const uint64_t LOW7 = 0x7f7f7f7f7f7f7f7full, HIGH = 0x8080808080808080ull;

/* The high bit of each byte of v that is not zero. */
static inline uint64_t nonzero_bytes(uint64_t v) {
  return (((v & LOW7) + LOW7) | v) & HIGH;
}

/* The index of the first flagged byte of a non-zero flags word (memory order). */
static inline int64_t first_byte(uint64_t flags) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return __builtin_clzll(flags) / 8;
#else
  return __builtin_ctzll(flags) / 8;
#endif
}

/* The first x' >= x with row[x'] != 0 (want_nonzero) or == 0, or w. */
static inline int64_t scan(const uint8_t *row, int64_t x, int64_t w, int want_nonzero) {
  for (; x + 8 <= w; x += 8) {
    uint64_t v;
    memcpy(&v, row + x, sizeof v);
    uint64_t flags = want_nonzero ? nonzero_bytes(v) : ~nonzero_bytes(v) & HIGH;
    if (flags) return x + first_byte(flags);
  }
  while (x < w && (row[x] != 0) != want_nonzero) x++;
  return x;
}

/* The runs of a row, one after the other: [start, end) of each. */
typedef struct run_cursor {
  const uint8_t *row;
  int64_t width, start, end;
} run_cursor;

static inline run_cursor runs_of(const uint8_t *row, int64_t width) {
  return (run_cursor){.row = row, .width = width, .start = 0, .end = 0};
}

/* Step to the next run; 0 when there is none. */
static inline int next_run(run_cursor *c) {
  c->start = scan(c->row, c->end, c->width, 1);
  if (c->start >= c->width) return 0;
  c->end = scan(c->row, c->start + 1, c->width, 0);
  return 1;
}

/* Row r's runs: made nodes of their own (init), and linked with the runs of row
 * r - 1 they touch (link, r > 0). */
static void link_row(const plm__label_args *args, const uint8_t *mask, int32_t *parent, int64_t r,
                     int init, int link) {
  const int64_t width = args->width, reach = args->connectivity == 8 ? 1 : 0;
  run_cursor cur = runs_of(mask + r * width, width), up = cur;
  int have_up = 0;
  if (link) {
    up = runs_of(mask + (r - 1) * width, width);
    have_up = next_run(&up);
  }
  while (next_run(&cur)) {
    const int32_t node = (int32_t)(r * width + cur.start);
    if (init) parent[node] = node;
    /* Runs above that end before this one's reach touch no later run either. */
    while (have_up && up.end + reach <= cur.start) have_up = next_run(&up);
    while (have_up && up.start < cur.end + reach) {
      unite(parent, node, (int32_t)((r - 1) * width + up.start));
      if (up.end > cur.end) break; /* it may touch the next run of row r too */
      have_up = next_run(&up);
    }
  }
}

/* ---- the passes ---------------------------------------------------------------------- */

/* Step 1 over the bands [begin, end) (index = frame * bands + band). */
static void link_bands(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t frame_pixels = args->height * args->width;
  const int64_t rows = band_rows(args), bands = bands_per_frame(args);
  for (int64_t task = begin; task < end; task++) {
    const int64_t frame = task / bands, band = task % bands;
    const uint8_t *mask = args->mask + frame * frame_pixels;
    int32_t *parent = args->labels + frame * frame_pixels;
    const int64_t r0 = band * rows, r1 = r0 + rows < args->height ? r0 + rows : args->height;
    link_row(args, mask, parent, r0, 1, 0); /* step 2 links it with the band above */
    for (int64_t r = r0 + 1; r < r1; r++) link_row(args, mask, parent, r, 1, 1);
  }
}

/* Step 2 over the frames [begin, end): merge the band borders, then number. */
static void number_frames(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t width = args->width, frame_pixels = args->height * width;
  const int64_t rows = band_rows(args);
  for (int64_t frame = begin; frame < end; frame++) {
    const uint8_t *mask = args->mask + frame * frame_pixels;
    int32_t *labels = args->labels + frame * frame_pixels;
    for (int64_t r = rows; r < args->height; r += rows) link_row(args, mask, labels, r, 0, 1);
    int32_t k = 0;
    for (int64_t r = 0; r < args->height; r++) {
      run_cursor c = runs_of(mask + r * width, width);
      while (next_run(&c)) {
        const int32_t i = (int32_t)(r * width + c.start), parent = labels[i];
        labels[i] = parent == i ? ++k : labels[parent];
      }
    }
    args->count[frame] = k;
  }
}

/* Step 3 over the bands [begin, end). */
static void fill_bands(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t width = args->width, frame_pixels = args->height * width;
  const int64_t rows = band_rows(args), bands = bands_per_frame(args);
  for (int64_t task = begin; task < end; task++) {
    const int64_t frame = task / bands, band = task % bands;
    const uint8_t *mask = args->mask + frame * frame_pixels;
    int32_t *labels = args->labels + frame * frame_pixels;
    const int64_t r0 = band * rows, r1 = r0 + rows < args->height ? r0 + rows : args->height;
    for (int64_t r = r0; r < r1; r++) {
      int32_t *row = labels + r * width;
      run_cursor c = runs_of(mask + r * width, width);
      int64_t x = 0;
      while (next_run(&c)) {
        memset(row + x, 0, (size_t)(c.start - x) * sizeof *row);
        const int32_t label = row[c.start];
        for (int64_t t = c.start + 1; t < c.end; t++) row[t] = label;
        x = c.end;
      }
      memset(row + x, 0, (size_t)(width - x) * sizeof *row);
    }
  }
}

void plm__label_cpu(const plm__label_args *args) {
  const int64_t tasks = args->frames * bands_per_frame(args);
  plm__parallel_for(tasks, 1, link_bands, (void *)args);
  plm__parallel_for(args->frames, 1, number_frames, (void *)args);
  plm__parallel_for(tasks, 1, fill_bands, (void *)args);
}

static double intensity_at(const plm__regions_args *args, int64_t i) {
  switch (args->intensity_dtype) {
    case PLM_DTYPE_U8: return ((const uint8_t *)args->intensity)[i];
    case PLM_DTYPE_U16: return ((const uint16_t *)args->intensity)[i];
    case PLM_DTYPE_F32: return ((const float *)args->intensity)[i];
    case PLM_DTYPE_I32:
    case PLM_DTYPE_F64: break; /* refused by the op */
  }
  return 0;
}

void plm__regions_cpu(const plm__regions_args *args) {
  const int64_t rows = plm__regions_rows(*args->count, args->capacity);
  for (int64_t j = 0; j < rows; j++)
    plm__regions_start_row(args->table + j * PLM_REGION_COLUMNS, j + 1);
  for (int64_t r = 0; r < args->height; r++)
    for (int64_t c = 0; c < args->width; c++) {
      const int64_t i = r * args->width + c;
      const int32_t label = args->labels[i];
      if (label < 1 || label > rows) continue;
      double *row = args->table + (int64_t)(label - 1) * PLM_REGION_COLUMNS;
      row[PLM_REGION_AREA] += 1;
      row[PLM_REGION_MIN_ROW] = fmin(row[PLM_REGION_MIN_ROW], (double)r);
      row[PLM_REGION_MIN_COL] = fmin(row[PLM_REGION_MIN_COL], (double)c);
      row[PLM_REGION_MAX_ROW] = fmax(row[PLM_REGION_MAX_ROW], (double)r);
      row[PLM_REGION_MAX_COL] = fmax(row[PLM_REGION_MAX_COL], (double)c);
      row[PLM_REGION_CENTROID_ROW] += (double)r;
      row[PLM_REGION_CENTROID_COL] += (double)c;
      if (args->intensity) {
        const double v = intensity_at(args, i);
        row[PLM_REGION_SUM] += v;
        row[PLM_REGION_MAX] = fmax(row[PLM_REGION_MAX], v);
        row[PLM_REGION_WCENTROID_ROW] += v * (double)r;
        row[PLM_REGION_WCENTROID_COL] += v * (double)c;
      }
    }
  for (int64_t j = 0; j < rows; j++)
    plm__regions_finish_row(args->table + j * PLM_REGION_COLUMNS, args->intensity != NULL);
}

/* kernels/cpu/label.c: connected components and region statistics on the CPU.
 *
 * label is a run-based union-find. A run is a maximal stretch of foreground in a row;
 * rows are read 64 pixels at a time into a bitmap, so the background costs little and
 * a run a few bit operations. Each run is one union-find node, represented by its
 * first pixel: the labels array holds, at that pixel, the parent's first pixel (a
 * frame-local linear index). Linking hangs the larger root under the smaller, so
 * every parent precedes its child in raster order and a component's root is its
 * first pixel. Frames are cut into bands of rows.
 *
 *   1. Bands in parallel: each run is linked with the runs it touches in the row above
 *      (columns overlapping, or one apart diagonally under 8-connectivity), inside the
 *      band; the band counts its roots.
 *   2. Per frame: the runs across each band border are linked, each merge taking one
 *      root off its band's count; the counts become each band's first label - 1 (a
 *      prefix sum) and their total is K.
 *   3. Bands in parallel: in raster order, a root takes the band's next label, stored
 *      negated; any other run points straight at its root, found by following
 *      parents (which other bands may be shortening meanwhile, only ever to another
 *      ancestor). Roots are numbered in the raster order of their first pixels:
 *      scipy's numbering.
 *   4. Bands in parallel: each run is filled with its label (its own, or its root's),
 *      the background with 0.
 *
 * Steps 3 and 4 read other bands' nodes while those are written, with relaxed atomic
 * loads and stores. No memory beyond the labels array is needed: a band's count lives
 * in a pixel of its first row that is no run's first pixel (column 0 when it is
 * background, else column 1; band 0 uses count[frame]), and pixels other than runs'
 * first are written only in step 4. regions is one raster-order pass accumulating in
 * f64 per label. */
#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/common/label.h"
#include "streams/parallel.h"

/* A band has at least BAND_PIXELS pixels and BAND_ROWS rows: small frames are still
 * split over the cores (a 256-wide frame into 32-row bands), and the border rows, which
 * step 2 merges serially, stay a thirty-second of the frame or less. */
enum { BAND_PIXELS = 1 << 13, BAND_ROWS = 32 };

static int32_t find_root(int32_t *parent, int32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]]; /* path halving keeps parent <= child */
    x = parent[x];
  }
  return x;
}

/* Join the trees of a and b; returns the root hung under the other, or -1 when they
 * were one tree. */
static int32_t unite(int32_t *parent, int32_t a, int32_t b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a == b) return -1;
  if (a < b) {
    parent[b] = a;
    return b;
  }
  parent[a] = b;
  return a;
}

static int32_t load(const int32_t *p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void store(int32_t *p, int32_t value) {
  __atomic_store_n(p, value, __ATOMIC_RELAXED);
}

static int64_t band_rows(const plm__label_args *args) {
  if (args->width < 2) return args->height; /* a band's count needs two columns */
  int64_t rows = (BAND_PIXELS + args->width - 1) / args->width;
  if (rows < BAND_ROWS) rows = BAND_ROWS;
  return rows < args->height ? rows : args->height;
}

static int64_t bands_per_frame(const plm__label_args *args) {
  int64_t rows = band_rows(args);
  return (args->height + rows - 1) / rows;
}

/* ---- runs ---------------------------------------------------------------------------- */

/* Foreground bits of row[0..count) (count <= 64): bit i for pixel i. */
static inline uint64_t foreground_bits(const uint8_t *row, int64_t count) {
  uint64_t bits = 0;
  if (count == 64) {
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    for (int k = 0; k < 4; k++) {
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(row + 16 * k));
      uint64_t empty = (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero));
      bits |= (~empty & 0xffffu) << (16 * k);
    }
    return bits;
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7full, high = 0x8080808080808080ull;
    for (int k = 0; k < 8; k++) {
      uint64_t v;
      memcpy(&v, row + 8 * k, sizeof v);
      uint64_t nonzero = ((((v & low7) + low7) | v) & high) >> 7;   /* bit 0 of each byte */
      bits |= ((nonzero * 0x0102040810204080ull) >> 56) << (8 * k); /* byte i to bit i */
    }
    return bits;
#endif
  }
  for (int64_t i = 0; i < count; i++) bits |= (uint64_t)(row[i] != 0) << i;
  return bits;
}

/* The runs of a row, one after the other: [start, end) of each. The row is read 64
 * pixels at a time into a bitmap, so a run costs a few bit operations. */
typedef struct run_cursor {
  const uint8_t *row;
  int64_t width;
  int64_t base;  /* the column of bit 0 of bits */
  uint64_t bits; /* foreground from base on, the runs already taken cleared */
  int64_t start, end;
} run_cursor;

static inline uint64_t bits_at(const run_cursor *c, int64_t base) {
  return foreground_bits(c->row + base, c->width - base < 64 ? c->width - base : 64);
}

static inline run_cursor runs_of(const uint8_t *row, int64_t width) {
  run_cursor c = {.row = row, .width = width, .base = 0, .bits = 0, .start = 0, .end = 0};
  c.bits = bits_at(&c, 0);
  return c;
}

/* Step to the next run; 0 when there is none. */
__attribute__((always_inline)) static inline int next_run(run_cursor *c) {
  while (!c->bits) {
    c->base += 64;
    if (c->base >= c->width) return 0;
    c->bits = bits_at(c, c->base);
  }
  c->start = c->base + __builtin_ctzll(c->bits);
  /* The run ends at the first background bit after its start. */
  uint64_t rest = ~c->bits & (~(uint64_t)0 << (c->start - c->base));
  while (!rest) { /* it goes on into the next 64 pixels */
    c->base += 64;
    if (c->base >= c->width) {
      c->bits = 0;
      c->end = c->width;
      return 1;
    }
    c->bits = bits_at(c, c->base);
    rest = ~c->bits;
  }
  int64_t end_bit = __builtin_ctzll(rest);
  c->end = c->base + end_bit;
  c->bits &= ~(uint64_t)0 << end_bit; /* what is left: after the run */
  return 1;
}

/* One frame as the passes see it. */
typedef struct frame_view {
  const plm__label_args *args;
  const uint8_t *mask;
  int32_t *labels;
  int32_t *count; /* K, and band 0's count meanwhile */
  int64_t rows;   /* per band */
} frame_view;

static frame_view view_of(const plm__label_args *args, int64_t frame) {
  const int64_t frame_pixels = args->height * args->width;
  return (frame_view){.args = args,
                      .mask = args->mask + frame * frame_pixels,
                      .labels = args->labels + frame * frame_pixels,
                      .count = args->count + frame,
                      .rows = band_rows(args)};
}

/* Where band b keeps its root count, then its first label - 1 (see the top). */
static int32_t *band_slot(const frame_view *f, int64_t band) {
  if (band == 0) return f->count;
  const int64_t first = band * f->rows * f->args->width;
  return f->labels + first + (f->mask[first] ? 1 : 0);
}

/* Row r's runs: made nodes of their own (init), and linked with the runs of row
 * r - 1 they touch (link, r > 0). Returns the runs less the merges: the roots it
 * adds. With counts, each merge also takes one off the count of the band of the
 * root it hangs under another (step 2). */
static int64_t link_row(const frame_view *f, int64_t r, int init, int link, int counts) {
  const int64_t width = f->args->width, reach = f->args->connectivity == 8 ? 1 : 0;
  const uint8_t *mask = f->mask;
  int32_t *parent = f->labels;
  run_cursor cur = runs_of(mask + r * width, width), up = cur;
  int have_up = 0;
  if (link) {
    up = runs_of(mask + (r - 1) * width, width);
    have_up = next_run(&up);
  }
  int64_t roots = 0;
  while (next_run(&cur)) {
    const int32_t node = (int32_t)(r * width + cur.start);
    if (init) {
      parent[node] = node;
      roots++;
    }
    /* Runs above that end before this one's reach touch no later run either. */
    while (have_up && up.end + reach <= cur.start) have_up = next_run(&up);
    while (have_up && up.start < cur.end + reach) {
      const int32_t hung = unite(parent, node, (int32_t)((r - 1) * width + up.start));
      if (hung >= 0) {
        roots--;
        if (counts) (*band_slot(f, hung / width / f->rows))--;
      }
      if (up.end > cur.end) break; /* it may touch the next run of row r too */
      have_up = next_run(&up);
    }
  }
  return roots;
}

/* The rows [*r0, *r1) of band `band`. */
static void band_bounds(const frame_view *f, int64_t band, int64_t *r0, int64_t *r1) {
  *r0 = band * f->rows;
  *r1 = *r0 + f->rows < f->args->height ? *r0 + f->rows : f->args->height;
}

/* ---- the passes ---------------------------------------------------------------------- */

/* Step 1 over the bands [begin, end) (index = frame * bands + band). */
static void link_bands(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t bands = bands_per_frame(args);
  for (int64_t task = begin; task < end; task++) {
    const frame_view f = view_of(args, task / bands);
    const int64_t band = task % bands;
    int64_t r0, r1;
    band_bounds(&f, band, &r0, &r1);
    int64_t roots = link_row(&f, r0, 1, 0, 0); /* step 2 links it with the band above */
    for (int64_t r = r0 + 1; r < r1; r++) roots += link_row(&f, r, 1, 1, 0);
    *band_slot(&f, band) = (int32_t)roots;
  }
}

/* Step 2 over the frames [begin, end). */
static void merge_frames(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t bands = bands_per_frame(args);
  for (int64_t frame = begin; frame < end; frame++) {
    const frame_view f = view_of(args, frame);
    for (int64_t band = 1; band < bands; band++) link_row(&f, band * f.rows, 0, 1, 1);
    int32_t labels_before = 0;
    for (int64_t band = 0; band < bands; band++) {
      int32_t *slot = band_slot(&f, band), roots = *slot;
      *slot = labels_before;
      labels_before += roots;
    }
    *f.count = labels_before;
  }
}

/* Step 3 over the bands [begin, end). */
static void number_bands(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t bands = bands_per_frame(args), width = args->width;
  for (int64_t task = begin; task < end; task++) {
    const frame_view f = view_of(args, task / bands);
    const int64_t band = task % bands;
    int32_t label = band == 0 ? 0 : *band_slot(&f, band);
    int64_t r0, r1;
    band_bounds(&f, band, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
      run_cursor c = runs_of(f.mask + r * width, width);
      while (next_run(&c)) {
        int32_t *node = f.labels + r * width + c.start;
        int32_t root = load(node);
        if (root == (int32_t)(r * width + c.start)) {
          store(node, -++label);
          continue;
        }
        for (;;) { /* up to a root: one that is its own parent, or already numbered */
          const int32_t parent = load(f.labels + root);
          if (parent < 0 || parent == root) break;
          root = parent;
        }
        store(node, root);
      }
    }
  }
}

/* Step 4 over the bands [begin, end). */
static void fill_bands(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t bands = bands_per_frame(args), width = args->width;
  for (int64_t task = begin; task < end; task++) {
    const frame_view f = view_of(args, task / bands);
    int64_t r0, r1;
    band_bounds(&f, task % bands, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
      int32_t *row = f.labels + r * width;
      run_cursor c = runs_of(f.mask + r * width, width);
      int64_t x = 0;
      while (next_run(&c)) {
        /* A root holds its label negated, any other run its root (whose run may be
         * filled already, with the label itself). */
        const int32_t own = row[c.start];
        int32_t label = own < 0 ? -own : load(f.labels + own);
        if (label < 0) label = -label;
        for (; x < c.start; x++) row[x] = 0;
        store(row + x, label);
        for (x++; x < c.end; x++) row[x] = label;
      }
      for (; x < width; x++) row[x] = 0;
    }
  }
}

void plm__label_cpu(const plm__label_args *args) {
  const int64_t tasks = args->frames * bands_per_frame(args);
  plm__parallel_for(tasks, 1, link_bands, (void *)args);
  plm__parallel_for(args->frames, 1, merge_frames, (void *)args);
  plm__parallel_for(tasks, 1, number_bands, (void *)args);
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

/* One frame's table, in raster order. */
static void regions_frame(const plm__regions_args *args) {
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

static void regions_frames(void *context, int64_t begin, int64_t end) {
  for (int64_t f = begin; f < end; f++) {
    const plm__regions_args frame = plm__regions_frame(context, f);
    regions_frame(&frame);
  }
}

/* A task per frame: each frame's table is its own, summed in raster order as one frame's. */
void plm__regions_cpu(const plm__regions_args *args) {
  if (args->frames <= 1) {
    regions_frame(args);
    return;
  }
  plm__parallel_for(args->frames, 1, regions_frames, (void *)args);
}

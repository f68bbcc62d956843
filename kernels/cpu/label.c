/* kernels/cpu/label.c: connected components and region statistics on the CPU.
 *
 * label is a union-find over the runs of foreground. A run is a maximal stretch of
 * foreground in a row; a row is read 64 pixels at a time into a bitmap and its runs
 * taken from the bitmap's edges (row_runs), so the background costs little and a run a
 * few bit operations. Each run is a node of a table, 4 bytes a run, and the table lives
 * in the labels themselves until they are written: a frame is cut into bands of rows,
 * and each band numbers its runs in raster order from its own first pixel's index, so
 * that its nodes sit at the front of its own rows (a row holds at most (W + 1) / 2 runs,
 * never more than its W pixels) and a frame's node numbers are in raster order across
 * its bands too. A node holds its parent's number. Linking hangs the larger root under
 * the smaller, so every parent precedes its child and a component's root is its first
 * run.
 *
 *   1. Bands in parallel: row after row, the runs become nodes and each is linked with
 *      the runs it touches in the row above (columns overlapping, or one apart
 *      diagonally under 8-connectivity) inside the band; the band records its runs,
 *      its roots and its last row's first node.
 *   2. Per frame: the runs across each band border are linked, each merge taking one
 *      root off its band's count; the counts become each band's first label - 1 (a
 *      prefix sum) and their total is K.
 *   3. Bands in parallel, in table order: each root takes the band's next label, stored
 *      negated (roots are numbered in the raster order of their first pixels: scipy's
 *      numbering), and each other node whose parent is in the band takes what the
 *      parent holds by then: the label, or an ancestor in an earlier band.
 *   4. Bands in parallel: a node still pointing at an earlier band (among the band's
 *      first nodes, up to the last of a component crossing its top border) follows
 *      parents up to the first negative node (the root, or a node its own band has
 *      resolved meanwhile: the same label) and takes it. Other bands' nodes are read
 *      while those are written, with relaxed atomic loads and stores: a node read is
 *      either a parent (an ancestor still) or the label.
 *      A frame under 2^20 pixels, or one of a stack with a frame for every thread, does
 *      steps 3 and 4 in step 2's task instead, its bands in order (number_frame), which
 *      saves two hand-offs to the CPU pool.
 *   5. Bands in parallel, each reading its own nodes alone: row after row from the last,
 *      a row's runs take their nodes' labels, then the row is zeroed and its runs
 *      filled. A row's nodes come before its own pixels, except where they share them
 *      (its nodes are read first), and a later row's nodes are spent: the labels
 *      overwrite no node still to be read.
 *
 * The scratch (plm__label_cpu_scratch_bytes) holds a record and two rows of runs a band.
 * The union-find works in a few hundred KiB to a MB of the labels at the front of each
 * band (a 2048^2 mask of 15% foreground, compare_cpu.py's: 258,449 runs, 1 MB of 16.8 MB),
 * so the links and the finds stay in the caches, and each label is written once, row
 * after row, over the nodes. Until 2026-12-06 each run's node was at its first pixel: the links
 * scattered over the whole labels array, and each run's root was read there at random twice more,
 * to number it and to fill; OpenCV's connectedComponents took 0.71 to 0.75 of plume's
 * time on that mask (2 cores; docs/benchmarks.md, compare_cpu.py). Then for a day the
 * table was in the scratch: 8.4 MB at 2048^2 (9.4 MB of scratch in all, 56% of the
 * labels' bytes), which a pool with a byte limit could refuse where it had given none.
 * regions accumulates in f64 per label, each label's pixels in raster order: a large
 * frame's labels, where they are many, are cut into ranges, one a core, and each range's
 * task reads the whole frame and adds its own labels' runs alone (regions_frame). */
#include <math.h>
#include <stdbool.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/common/label.h"
#include "kernels/cpu/dispatch.h"
#include "streams/parallel.h"

/* A band has at least BAND_PIXELS pixels and BAND_ROWS rows: small frames are still
 * split over the cores (a 256-wide frame into 32-row bands), and the border rows, which
 * step 2 merges serially, stay a thirty-second of the frame or less. */
enum { BAND_PIXELS = 1 << 13, BAND_ROWS = 32 };

/* What step 1 records of a band, in the scratch. */
typedef struct band_record {
  int32_t runs;           /* its nodes: first_node(band) on */
  int32_t last_row_first; /* the node of its last row's first run */
  int32_t roots;          /* steps 1 and 2: its roots; then the labels before its own */
  int32_t unresolved_end; /* step 3: one past its last node left pointing at an earlier band */
} band_record;

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
  if (args->width < 1) return args->height; /* no pixels: one band */
  int64_t rows = (BAND_PIXELS + args->width - 1) / args->width;
  if (rows < BAND_ROWS) rows = BAND_ROWS;
  return rows < args->height ? rows : args->height;
}

static int64_t bands_per_frame(const plm__label_args *args) {
  int64_t rows = band_rows(args);
  return (args->height + rows - 1) / rows;
}

/* The most runs a row holds: one every other pixel. */
static int64_t row_nodes(const plm__label_args *args) {
  return (args->width + 1) / 2;
}

/* A row's runs: run i covers the columns [start[i], end[i]). */
typedef struct run_row {
  int32_t *start, *end; /* row_capacity slots each, in the scratch */
} run_row;

/* Slots a row's runs take past its most: set_bit_columns writes up to three past the
 * last run. */
enum { ROW_SPARE_RUNS = 3 };

/* A row's runs in the scratch: its most, and the spare. */
static int64_t row_capacity(const plm__label_args *args) {
  return row_nodes(args) + ROW_SPARE_RUNS;
}

/* A frame's part of the scratch: a record per band, then two rows' runs per band (step
 * 1's row and the row above it; step 5's row and its labels). */
static size_t frame_scratch_bytes(const plm__label_args *args) {
  const size_t bands = (size_t)bands_per_frame(args);
  return bands * sizeof(band_record) + bands * 4 * (size_t)row_capacity(args) * sizeof(int32_t);
}

size_t plm__label_cpu_scratch_bytes(const plm__label_args *args) {
  return (size_t)args->frames * frame_scratch_bytes(args);
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

/* The number of set bits of x (SWAR: x86-64's baseline has no popcount instruction). */
static inline int32_t bit_count(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (int32_t)((x * 0x0101010101010101ull) >> 56);
}

/* The columns base + i of the set bits i of s, in order, into out[0..n), n = bit_count(s),
 * four a step with no branch on the bits (the slots past n, at most three, get columns
 * that a later call overwrites or no one reads: ROW_SPARE_RUNS). Returns n. */
static inline int32_t set_bit_columns(uint64_t s, int64_t base, int32_t *out) {
  const int32_t n = bit_count(s);
  const uint64_t top = (uint64_t)1 << 63; /* ctz of 0 would be undefined; of top, 63 */
  for (int32_t k = 0; k < n; k += 4, out += 4) {
    out[0] = (int32_t)(base + __builtin_ctzll(s | top)), s &= s - 1;
    out[1] = (int32_t)(base + __builtin_ctzll(s | top)), s &= s - 1;
    out[2] = (int32_t)(base + __builtin_ctzll(s | top)), s &= s - 1;
    out[3] = (int32_t)(base + __builtin_ctzll(s | top)), s &= s - 1;
  }
  return n;
}

/* The runs of a row into runs[] (room for row_nodes + ROW_SPARE_RUNS); returns their
 * number. The row is read 64 pixels at a time into a bitmap; a run starts at each
 * foreground bit whose left neighbour is background, and ends at each background bit
 * whose left neighbour is foreground (or at the width). Runs of imagery are short (2.4
 * pixels on average on the 15% mask above): a loop per run, whose end the branch
 * predictor cannot guess, was the cost, in stepping a cursor from run to run and then
 * in a loop over each word's bits; now a word takes a step per four runs. Built for
 * AVX2 too (kernels/cpu/dispatch.h), whose clone counts the bits with POPCNT (GCC 12
 * finds bit_count's idiom): about 6% of label's time at 2048^2. */
PLM__CPU_CLONES static int32_t row_runs(const uint8_t *row, int64_t width, run_row runs) {
  int32_t starts = 0, ends = 0;
  uint64_t left = 0; /* the pixel left of bit 0, as bit 0 */
  for (int64_t base = 0; base < width; base += 64) {
    const uint64_t bits = foreground_bits(row + base, width - base < 64 ? width - base : 64);
    const uint64_t before = bits << 1 | left; /* bit i: pixel i - 1 */
    starts += set_bit_columns(bits & ~before, base, runs.start + starts);
    ends += set_bit_columns(~bits & before, base, runs.end + ends);
    left = bits >> 63;
  }
  if (left) runs.end[ends] = (int32_t)width; /* a run up to the last pixel of a full word */
  return starts;
}

/* One frame as the passes see it. */
typedef struct frame_view {
  const plm__label_args *args;
  const uint8_t *mask;
  int32_t *labels;
  int32_t *parent;    /* the frame's table, in its labels: a node per run */
  band_record *bands; /* the frame's records */
  int32_t *runs;      /* the frame's run rows: two per band */
  int32_t *count;     /* K */
  int64_t rows;       /* per band */
  int32_t band_nodes; /* the table's room per band: its pixels, rows x W */
} frame_view;

static frame_view view_of(const plm__label_args *args, int64_t frame) {
  const int64_t frame_pixels = args->height * args->width;
  char *scratch = (char *)args->scratch + (size_t)frame * frame_scratch_bytes(args);
  const int64_t rows = band_rows(args);
  band_record *bands = (band_record *)(void *)scratch;
  return (frame_view){.args = args,
                      .mask = args->mask + frame * frame_pixels,
                      .labels = args->labels + frame * frame_pixels,
                      .parent = args->labels + frame * frame_pixels,
                      .bands = bands,
                      .runs = (int32_t *)(void *)(bands + bands_per_frame(args)),
                      .count = args->count + frame,
                      .rows = rows,
                      .band_nodes = (int32_t)(rows * args->width)};
}

/* The node of band b's first run: its first pixel's index. */
static int32_t first_node(const frame_view *f, int64_t band) {
  return (int32_t)(band * f->band_nodes);
}

/* Run row k (0 or 1) of band b. */
static run_row band_runs(const frame_view *f, int64_t band, int k) {
  const int64_t capacity = row_capacity(f->args);
  int32_t *at = f->runs + (2 * band + k) * 2 * capacity;
  return (run_row){.start = at, .end = at + capacity};
}

/* Link the n runs of a row, nodes first.., with the up_n runs of the row above that
 * they touch (columns overlapping, or one apart diagonally under 8-connectivity),
 * nodes up_first... Returns the merges. In step 1 (border 0) the row's nodes are new,
 * each its own root; in step 2 (border 1) they are a band's first row, linked in step 1
 * below, and each merge also takes one off the roots of the band whose root it hangs
 * under another. */
static int64_t link_runs(const frame_view *f, run_row cur, int32_t n, int32_t first, run_row up,
                         int32_t up_n, int32_t up_first, int border) {
  const int32_t reach = f->args->connectivity == 8 ? 1 : 0;
  int32_t *parent = f->parent;
  int64_t merges = 0;
  int32_t j = 0;
  for (int32_t i = 0; i < n; i++) {
    /* Runs above that end before this one's reach touch no later run either. */
    while (j < up_n && up.end[j] + reach <= cur.start[i]) j++;
    int32_t k = j;
    if (!border && k < up_n && up.start[k] < cur.end[i] + reach) {
      /* A new node is a root of its own until its first link: it goes under the root
       * above (an earlier node) with one find, not two. */
      parent[first + i] = find_root(parent, up_first + k++);
      merges++;
    }
    for (; k < up_n && up.start[k] < cur.end[i] + reach; k++) {
      const int32_t hung = unite(parent, first + i, up_first + k);
      if (hung >= 0) {
        merges++;
        if (border) f->bands[hung / f->band_nodes].roots--;
      }
    }
  }
  return merges;
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
  const int64_t bands = bands_per_frame(args), width = args->width;
  for (int64_t task = begin; task < end; task++) {
    const frame_view f = view_of(args, task / bands);
    const int64_t band = task % bands;
    int64_t r0, r1;
    band_bounds(&f, band, &r0, &r1);
    run_row cur = band_runs(&f, band, 0), up = band_runs(&f, band, 1);
    int32_t up_n = 0, up_first = first_node(&f, band), row_first = up_first;
    int64_t roots = 0;
    for (int64_t r = r0; r < r1; r++) {
      const int32_t n = row_runs(f.mask + r * width, width, cur);
      for (int32_t i = 0; i < n; i++) f.parent[row_first + i] = row_first + i;
      roots += n;
      /* the band's first row: step 2 links it with the band above */
      if (r > r0) roots -= link_runs(&f, cur, n, row_first, up, up_n, up_first, 0);
      const run_row swap = up;
      up = cur, cur = swap;
      up_n = n, up_first = row_first, row_first += n;
    }
    f.bands[band] = (band_record){.runs = row_first - first_node(&f, band),
                                  .last_row_first = up_first,
                                  .roots = (int32_t)roots};
  }
}

/* Number band b's nodes in table order, after `label`; returns the band's last label.
 * Each root takes the next label, stored negated (roots are numbered in the raster order
 * of their first pixels: scipy's numbering), and each other node whose parent is at
 * `settled` or later (numbered by now) takes what the parent holds: the label, or an
 * ancestor before `settled`, which stays for step 4. Without a branch (roots and other
 * nodes alternate at random). Records where the nodes left for step 4 end. */
static int32_t number_band(const frame_view *f, int64_t b, int32_t settled, int32_t label) {
  band_record *band = &f->bands[b];
  const int32_t first = first_node(f, b);
  int32_t unresolved_end = first;
  for (int32_t node = first; node < first + band->runs; node++) {
    const int32_t up = f->parent[node], root = up == node;
    const int32_t next = f->parent[up >= settled ? up : node];
    label += root;
    const int32_t held = root ? -label : next;
    f->parent[node] = held;
    unresolved_end = held >= 0 ? node + 1 : unresolved_end;
  }
  band->unresolved_end = unresolved_end;
  return label;
}

/* Steps 3 and 4 of a frame in one pass, its bands one after another, for a frame small
 * enough that parallel passes would cost more in hand-offs to the CPU pool (about 4 us
 * each) than they save, or a frame of a stack that keeps every core busy already: every
 * earlier node is numbered by the time a node is reached, so none is left for step 4. */
static void number_frame(const frame_view *f, int64_t bands) {
  int32_t label = 0;
  for (int64_t band = 0; band < bands; band++) label = number_band(f, band, 0, label);
}

/* Below this many pixels a frame is numbered in one pass (number_frame). */
enum { NUMBER_IN_PARALLEL_PIXELS = 1 << 20 };

/* What step 2 does: it numbers the frames too where number_frame does steps 3 and 4. */
typedef struct merge_job {
  const plm__label_args *args;
  bool number;
} merge_job;

/* Step 2 over the frames [begin, end). */
static void merge_frames(void *context, int64_t begin, int64_t end) {
  const merge_job *job = context;
  const plm__label_args *args = job->args;
  const int64_t bands = bands_per_frame(args), width = args->width;
  for (int64_t frame = begin; frame < end; frame++) {
    const frame_view f = view_of(args, frame);
    const run_row cur = band_runs(&f, 0, 0), up = band_runs(&f, 0, 1);
    for (int64_t band = 1; band < bands; band++) {
      const int64_t r = band * f.rows;
      const int32_t n = row_runs(f.mask + r * width, width, cur);
      const int32_t up_n = row_runs(f.mask + (r - 1) * width, width, up);
      link_runs(&f, cur, n, first_node(&f, band), up, up_n, f.bands[band - 1].last_row_first, 1);
    }
    int32_t labels_before = 0;
    for (int64_t band = 0; band < bands; band++) {
      const int32_t roots = f.bands[band].roots;
      f.bands[band].roots = labels_before;
      labels_before += roots;
    }
    *f.count = labels_before;
    if (job->number) number_frame(&f, bands);
  }
}

/* Step 3 over the bands [begin, end): each band's nodes numbered from its first label,
 * reading its own nodes alone. */
static void number_roots(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t bands = bands_per_frame(args);
  for (int64_t task = begin; task < end; task++) {
    const frame_view f = view_of(args, task / bands);
    const int64_t band = task % bands;
    number_band(&f, band, first_node(&f, band), f.bands[band].roots);
  }
}

/* row[start, end) = label, in a row zeroed before and filled from left to right. Four
 * pixels a store, the last store's overshoot zeroed again by one more, a store of
 * background that the next run overwrites where it starts within it: a short run (2.4
 * pixels on average on the mask above) then costs two stores and no loop whose end the
 * branch predictor must guess. A run within four pixels of the row's end, whose
 * overshoot would reach the next row (written already, or another band's), is filled
 * a pixel at a time. */
static inline void fill_run(int32_t *row, int64_t width, int32_t start, int32_t end,
                            int32_t label) {
  if ((int64_t)end + 4 > width) { /* end may be INT32_MAX: a one-row frame that wide */
    for (int32_t x = start; x < end; x++) row[x] = label;
    return;
  }
  const int32_t labels[4] = {label, label, label, label}, zeros[4] = {0, 0, 0, 0};
  int32_t x = start;
  do {
    memcpy(row + x, labels, sizeof labels);
    x += 4;
  } while (x < end);
  memcpy(row + end, zeros, sizeof zeros);
}

/* Step 4 over the bands [begin, end). */
static void resolve_bands(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t bands = bands_per_frame(args);
  for (int64_t task = begin; task < end; task++) {
    const frame_view f = view_of(args, task / bands);
    const int32_t first = first_node(&f, task % bands);
    /* The nodes left pointing at an earlier band are of components that cross the
     * band's top border: they end at the last such component's last run, in the band's
     * first rows unless a component reaches far down. */
    for (int32_t node = first; node < f.bands[task % bands].unresolved_end; node++) {
      int32_t up = load(f.parent + node);
      if (up < 0) continue; /* resolved in step 3 */
      while (up >= 0) up = load(f.parent + up);
      store(f.parent + node, up);
    }
  }
}

/* Ask for a row's mask (to read) and labels (to write) ahead of their use: step 5 walks
 * the rows upwards, which the hardware's prefetchers, following each row's lines forwards,
 * do not foresee; where another core has just written the mask or the labels (segment's
 * threshold, the last call's fill), each row's first lines would wait on that core. At
 * 362^2 segment took 0.216 ms without, 0.205 with, and 0.207 with the rows filled
 * downwards from a copy of the nodes. */
static inline void prefetch_row(const uint8_t *mask, const int32_t *labels, int64_t width) {
  for (int64_t at = 0; at < width; at += 64) __builtin_prefetch(mask + at, 0);
  for (int64_t at = 0; at < width * 4; at += 64) __builtin_prefetch((const char *)labels + at, 1);
}

/* Step 5 over the bands [begin, end). */
static void fill_bands(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t bands = bands_per_frame(args), width = args->width;
  for (int64_t task = begin; task < end; task++) {
    const frame_view f = view_of(args, task / bands);
    const int64_t band = task % bands;
    int64_t r0, r1;
    band_bounds(&f, band, &r0, &r1);
    const run_row runs = band_runs(&f, band, 0);
    int32_t *const run_labels = band_runs(&f, band, 1).start; /* of the row's runs */
    int32_t next_row_first = first_node(&f, band) + f.bands[band].runs;
    for (int64_t r = r1 - 1; r >= r0; r--) {
      if (r > r0) prefetch_row(f.mask + (r - 1) * width, f.labels + (r - 1) * width, width);
      const int32_t n = row_runs(f.mask + r * width, width, runs);
      const int32_t *node = f.parent + (next_row_first -= n);
      for (int32_t i = 0; i < n; i++) run_labels[i] = -node[i]; /* all negative since step 4 */
      /* The row zeroed in one call, then its runs written over it. */
      int32_t *row = f.labels + r * width;
      memset(row, 0, (size_t)width * sizeof *row);
      for (int32_t i = 0; i < n; i++)
        fill_run(row, width, runs.start[i], runs.end[i], run_labels[i]);
    }
  }
}

void plm__label_cpu(const plm__label_args *args) {
  const int64_t tasks = args->frames * bands_per_frame(args);
  const merge_job merge = {.args = args,
                           .number = args->frames >= plm__parallel_threads() ||
                                     args->height * args->width < NUMBER_IN_PARALLEL_PIXELS};
  plm__parallel_for(tasks, 1, link_bands, (void *)args);
  plm__parallel_for(args->frames, 1, merge_frames, (void *)&merge);
  if (!merge.number) {
    plm__parallel_for(tasks, 1, number_roots, (void *)args);
    plm__parallel_for(tasks, 1, resolve_bands, (void *)args);
  }
  plm__parallel_for(tasks, 1, fill_bands, (void *)args);
}

/* ---- regions ------------------------------------------------------------------------- */

/* The labels [first, last] of a frame's table (1 <= first, last <= its rows), the
 * part of it one task accumulates. */
typedef struct label_range {
  int64_t first, last;
} label_range;

/* The labels of labels[0..count) (count <= 64) in `mine`: bit i for pixel i. */
static inline uint64_t bits_in_range(const int32_t *labels, int64_t count, label_range mine) {
  uint64_t bits = 0;
#if defined(__SSE2__)
  if (count == 64) {
    const __m128i first = _mm_set1_epi32((int32_t)mine.first);
    const __m128i last = _mm_set1_epi32((int32_t)mine.last);
    for (int k = 0; k < 16; k++) {
      const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(labels + 4 * k));
      const __m128i out = _mm_or_si128(_mm_cmplt_epi32(v, first), _mm_cmpgt_epi32(v, last));
      const int outside = _mm_movemask_ps(_mm_castsi128_ps(out));
      bits |= (uint64_t)(~outside & 0xf) << (4 * k);
    }
    return bits;
  }
#endif
  for (int64_t i = 0; i < count; i++)
    bits |= (uint64_t)(labels[i] >= mine.first && labels[i] <= mine.last) << i;
  return bits;
}

/* Eight labels as one vector (GCC's vector extensions: an AVX2 register in the AVX2 clone,
 * two SSE2 registers in the baseline's). */
typedef uint32_t label_lanes __attribute__((vector_size(32)));
typedef int32_t lane_masks __attribute__((vector_size(32)));

/* Whether any of labels[0..64) is in `mine`: each label minus mine.first compared, unsigned,
 * with mine.last - mine.first (one compare a label, the background's 0 wrapping round to
 * above it), the answers OR'ed. Most words of a detection's frame hold background or other
 * tasks' labels alone: this test is a third of bits_in_range's work on them (SSE2), a sixth
 * with AVX2, and they need no bitmap. */
static inline bool word_meets_range(const int32_t *labels, label_range mine) {
  const uint32_t first = (uint32_t)mine.first, span = (uint32_t)(mine.last - mine.first);
  const label_lanes firsts = {first, first, first, first, first, first, first, first};
  const label_lanes spans = {span, span, span, span, span, span, span, span};
  lane_masks met = {0};
  for (int k = 0; k < 8; k++) {
    label_lanes v;
    memcpy(&v, labels + 8 * k, sizeof v);
    met |= (v - firsts) <= spans;
  }
  uint64_t halves[4];
  memcpy(halves, &met, sizeof halves);
  return (halves[0] | halves[1] | halves[2] | halves[3]) != 0;
}

/* Pixel (r, c)'s intensity v into its table row (the order of the sums is the raster
 * order's). max as fmax(max, v) gives it, without a call into libm a pixel: a NaN v
 * leaves it (the header rules NaN out, but the CUDA kernel's fmax ignores one too, and
 * tests/test_regions_cuda_logic.cpp compares the two on such values), and of equal
 * values (+0 and -0) the new one, as glibc's x86-64 fmax (maxsd) gives it. */
static inline void add_value(double *row, double v, double r, double c) {
  const double max = row[PLM_REGION_MAX];
  row[PLM_REGION_SUM] += v;
  row[PLM_REGION_MAX] = max > v || v != v ? max : v;
  row[PLM_REGION_WCENTROID_ROW] += v * r;
  row[PLM_REGION_WCENTROID_COL] += v * c;
}

/* The pixels [c0, c1) of row r, all of one label, into its table row. Their coordinates
 * are summed in int64 (below 2^62: n <= 2^31 columns, each below 2^31, as the op's check
 * holds a frame to INT32_MAX pixels) and added once:
 * while a region's sums stay below 2^53, as they do unless a frame's pixels times its
 * longer side pass 2^53, the same doubles as adding them a pixel at a time; past that,
 * fewer roundings. */
static void add_segment(const plm__regions_args *args, double *row, int64_t r, int64_t c0,
                        int64_t c1) {
  const int64_t n = c1 - c0;
  const double dr = (double)r;
  row[PLM_REGION_AREA] += (double)n;
  if (dr < row[PLM_REGION_MIN_ROW]) row[PLM_REGION_MIN_ROW] = dr;
  if ((double)c0 < row[PLM_REGION_MIN_COL]) row[PLM_REGION_MIN_COL] = (double)c0;
  if (dr > row[PLM_REGION_MAX_ROW]) row[PLM_REGION_MAX_ROW] = dr;
  if ((double)(c1 - 1) > row[PLM_REGION_MAX_COL]) row[PLM_REGION_MAX_COL] = (double)(c1 - 1);
  const int64_t ends = c0 + c1 - 1; /* first + last column: even where n is odd */
  row[PLM_REGION_CENTROID_ROW] += (double)(r * n);
  row[PLM_REGION_CENTROID_COL] += (double)(n % 2 == 0 ? n / 2 * ends : ends / 2 * n);
  if (!args->intensity) return;
  const int64_t at = r * args->width;
  switch (args->intensity_dtype) {
    case PLM_DTYPE_U8:
      for (int64_t c = c0; c < c1; c++)
        add_value(row, ((const uint8_t *)args->intensity)[at + c], dr, (double)c);
      break;
    case PLM_DTYPE_U16:
      for (int64_t c = c0; c < c1; c++)
        add_value(row, ((const uint16_t *)args->intensity)[at + c], dr, (double)c);
      break;
    case PLM_DTYPE_F32:
      for (int64_t c = c0; c < c1; c++)
        add_value(row, ((const float *)args->intensity)[at + c], dr, (double)c);
      break;
    case PLM_DTYPE_I32:
    case PLM_DTYPE_F64: break; /* refused by the op */
  }
}

/* The pixels [c0, c1) of row r (a run of labels in the task's range), cut where the
 * label changes (labels not made by plm_label may), each piece into its label's row of
 * the table. */
static void add_run(const plm__regions_args *args, int64_t r, int64_t c0, int64_t c1) {
  const int32_t *labels = args->labels + r * args->width;
  while (c0 < c1) {
    const int32_t label = labels[c0];
    int64_t end = c0 + 1;
    while (end < c1 && labels[end] == label) end++;
    add_segment(args, args->table + (int64_t)(label - 1) * PLM_REGION_COLUMNS, r, c0, end);
    c0 = end;
  }
}

/* The rows of `mine` of one frame's table, in raster order: each row's runs of pixels
 * whose labels are in `mine` found 64 at a time from a bitmap (as label's, above), a
 * word with none of them passed over after one vector test (word_meets_range), so the
 * background and the other tasks' labels cost little, and a run's coordinates are summed
 * at once. It was a loop over every pixel, a branch on each and fmin and fmax called four
 * times a labelled pixel: 12 ms of segment's 17.5 on compare_cpu.py's 2048^2 mask, on one
 * core. Built for AVX2 too (kernels/cpu/dispatch.h): the test takes 8 labels a compare. */
PLM__CPU_CLONES static void regions_frame(const plm__regions_args *args, label_range mine) {
  const int64_t height = args->height, width = args->width;
  for (int64_t j = mine.first - 1; j < mine.last; j++)
    plm__regions_start_row(args->table + j * PLM_REGION_COLUMNS, j + 1);
  enum { WORD_RUNS = 32 + ROW_SPARE_RUNS }; /* a word's: at most 32 starts, 32 ends */
  int32_t starts[WORD_RUNS], ends[WORD_RUNS];
  for (int64_t r = 0; r < height && mine.first <= mine.last; r++) {
    const int32_t *labels = args->labels + r * width;
    uint64_t left = 0;
    int64_t open = -1; /* the start of a run going on past the last word */
    for (int64_t base = 0; base < width; base += 64) {
      const int64_t count = width - base < 64 ? width - base : 64;
      const uint64_t bits = count == 64 && !word_meets_range(labels + base, mine)
                                ? 0
                                : bits_in_range(labels + base, count, mine);
      const uint64_t before = bits << 1 | left;
      const int32_t n_starts = set_bit_columns(bits & ~before, base, starts);
      const int32_t n_ends = set_bit_columns(~bits & before, base, ends);
      int32_t e = 0;
      if (open >= 0 && n_ends > 0) { /* the run from an earlier word ends in this one */
        add_run(args, r, open, ends[e++]);
        open = -1;
      }
      for (int32_t s = 0; s < n_starts; s++) {
        if (e < n_ends)
          add_run(args, r, starts[s], ends[e++]);
        else
          open = starts[s];
      }
      left = bits >> 63;
    }
    if (open >= 0) add_run(args, r, open, width);
  }
  for (int64_t j = mine.first - 1; j < mine.last; j++)
    plm__regions_finish_row(args->table + j * PLM_REGION_COLUMNS, args->intensity != NULL);
}

/* A frame is one task below this many pixels, or below this many labels: a second core
 * would save less than the hand-off to it costs and the second read of the labels. A
 * task's work beyond its read of the frame grows with its labels' runs, which the
 * labels' count stands for. Segment on the 2-core VM, split against one task, medians:
 * 512^2 of 17, 99, 281 and 867 labels (a detection's frame, blobs up to 6% of it) 0.23
 * against 0.14 ms to 0.31 against 0.28, 2,758 labels (a 14% random mask) 0.51 against
 * 0.64; 2048^2 of 379 and 1,974 labels even, of 7,391 3.40 against 4.36 ms. */
enum { REGIONS_SPLIT_PIXELS = 1 << 17, REGIONS_SPLIT_LABELS = 2048 };

/* The work of plm__regions_cpu: `ranges` tasks a frame, task t taking frame t / ranges
 * and the (t % ranges)-th of its labels' equal ranges. */
typedef struct regions_job {
  const plm__regions_args *args;
  int64_t ranges;
} regions_job;

static void regions_tasks(void *context, int64_t begin, int64_t end) {
  const regions_job *job = context;
  for (int64_t task = begin; task < end; task++) {
    const plm__regions_args frame = plm__regions_frame(job->args, task / job->ranges);
    const int64_t rows = plm__regions_rows(*frame.count, frame.capacity);
    const int64_t part = task % job->ranges;
    const label_range mine = {.first = rows * part / job->ranges + 1,
                              .last = rows * (part + 1) / job->ranges};
    regions_frame(&frame, mine);
  }
}

/* Whether a frame of the stack has REGIONS_SPLIT_LABELS rows of its table or more. */
static bool many_labels(const plm__regions_args *args) {
  for (int64_t f = 0; f < args->frames; f++)
    if (plm__regions_rows(args->count[f], args->capacity) >= REGIONS_SPLIT_LABELS) return true;
  return false;
}

/* A task per frame, or per range of a frame's labels where the frames are fewer than the
 * threads and large with many labels: each label's sums stay in raster order, whichever
 * task adds them, at the cost of each task reading the frame's labels whole (a third of
 * regions' time at 2048^2). */
void plm__regions_cpu(const plm__regions_args *args) {
  const int64_t threads = plm__parallel_threads();
  int64_t ranges = args->frames > 0 && args->frames < threads ? threads / args->frames : 1;
  if (args->height * args->width < REGIONS_SPLIT_PIXELS || !many_labels(args)) ranges = 1;
  const regions_job job = {.args = args, .ranges = ranges};
  plm__parallel_for(args->frames * ranges, 1, regions_tasks, (void *)&job);
}

/* kernels/common/label.h: the arguments of label and regions launches, the per-region
 * arithmetic both backends share (see plume/label.h for the semantics), and the
 * per-pixel steps of the CUDA labelling, which tests/test_label_cuda_logic.c also runs
 * on the host.
 *
 * ---- the CUDA labelling (kernels/cuda/label.cu), block-based union-find ----------------
 * A frame is cut into tiles of PLM__LABEL_TILE_W x PLM__LABEL_TILE_H pixels (the last
 * ones clipped), one thread block per tile, as in Playne and Hawick (2018) and
 * Allegretti et al.'s block-based union-find (2019). The labels array holds the
 * union-find parents (frame-local linear indices, -1 on the background) until the
 * numbering replaces them.
 *   1. tile pass, in shared memory, on runs (maximal stretches of foreground in a tile
 *      row): a warp's ballot gives its row's bits, each run's first pixel is a node,
 *      each pair of touching runs of adjacent rows is united once (atomicMin on shared
 *      memory), in four levels of rows; then every pixel writes its run's tile root as
 *      a frame index ("Tile pass" below). Every pixel then points straight at its tile
 *      root.
 *   2. border pass: a warp per 32 pixels of a tile border unites, in global memory,
 *      the runs on the two sides that touch, with the same rule, starting from the
 *      parents the tile pass wrote ("Border pass" below), halving the paths its finds
 *      walk (plm__label_find_halving); interior pixels are not visited.
 *   3. flatten and number, a block per image row: every pixel's parent becomes its
 *      root (plm__label_flatten, which compresses the path it walked) and the row's
 *      roots are counted and published; the roots of the frame's earlier rows are
 *      summed from the rows' status words (plm__label_roots_before: a look-back that
 *      counts a row itself rather than wait for it); each root's label is that sum
 *      plus the roots before it in its row (a block-wide scan of the row's root flags),
 *      plus one, and its slot gets the label as a mark below -1
 *      (plm__label_root_mark); the frame's last row writes its K.
 *   4. relabel: every pixel's label from its slot and its root's (plm__label_final).
 *   So the numbering is raster order, as scipy.ndimage.label's, with no prefix sum over
 *   the pixels: four launches (label.cu has the cost model).
 * Invariants. Every parent is at most its child: a run's node is its first pixel, a
 * tile's local index order is the frame's raster order restricted to the tile, and
 * plm__label_unite hangs the larger root under the smaller. So a component's root is
 * its smallest index, its first pixel in raster order, which the numbering relies on.
 * Which unions are made: every union is along an edge of the image (two foreground
 * neighbours under the connectivity), and every edge's two pixels end up connected:
 * those inside a tile by step 1, those across a tile border by step 2 (the proofs are
 * next to each). So the components come out exactly the image's. */
#ifndef PLUME_KERNELS_COMMON_LABEL_H
#define PLUME_KERNELS_COMMON_LABEL_H

#include <math.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/label.h"

typedef struct plm__label_args {
  const uint8_t *mask;
  int32_t *labels; /* also the union-find's table while the kernels run */
  int32_t *count;  /* one per frame */
  void *scratch;   /* plm__label_cpu_scratch_bytes or plm__label_cuda_scratch_bytes bytes,
                    * as the backend's (ops/op_scratch.h) */
  int64_t frames;
  int64_t height, width; /* height * width <= INT32_MAX */
  int connectivity;      /* 4 or 8 */
} plm__label_args;

typedef struct plm__regions_args {
  const int32_t *labels;
  const void *intensity; /* NULL, or of intensity_dtype */
  plm_dtype intensity_dtype;
  const int32_t *count; /* K per frame, read in stream order */
  double *table;        /* per frame capacity x PLM_REGION_COLUMNS, frame after frame */
  int64_t capacity;
  int64_t frames; /* a stack's frames: labels, intensity, count and table hold each */
  int64_t height, width;
} plm__regions_args;

/* Frame f of a stack's regions: the same call over that frame's labels, intensity, K and
 * table alone (host code: the CPU kernel's frames, the CUDA launches'). */
static inline plm__regions_args plm__regions_frame(const plm__regions_args *args, int64_t f) {
  plm__regions_args frame = *args;
  const int64_t pixels = args->height * args->width;
  frame.labels = args->labels + f * pixels;
  if (args->intensity)
    frame.intensity =
        (const char *)args->intensity + f * pixels * (int64_t)plm_dtype_size(args->intensity_dtype);
  frame.count = args->count + f;
  frame.table = args->table + f * args->capacity * PLM_REGION_COLUMNS;
  frame.frames = 1;
  return frame;
}

/* The rows written: min(K, capacity), K < 0 taken as 0. */
static inline PLM_HD int64_t plm__regions_rows(int32_t k, int64_t capacity) {
  int64_t rows = k < 0 ? 0 : (int64_t)k;
  return rows < capacity ? rows : capacity;
}

/* A row before accumulation: its label, zero sums, and bounds that any pixel
 * replaces. */
static inline PLM_HD void plm__regions_start_row(double *row, int64_t label) {
  for (int c = 0; c < PLM_REGION_COLUMNS; c++) row[c] = 0;
  row[PLM_REGION_LABEL] = (double)label;
  row[PLM_REGION_MIN_ROW] = row[PLM_REGION_MIN_COL] = INFINITY;
  row[PLM_REGION_MAX_ROW] = row[PLM_REGION_MAX_COL] = -INFINITY;
  row[PLM_REGION_MAX] = -INFINITY;
}

/* While accumulating, a row holds sums where the final table holds means: the
 * centroid columns hold sum(row), sum(col), the weighted ones sum(I * row),
 * sum(I * col), and max starts at -infinity. Turn an accumulated row into its final
 * form. */
static inline PLM_HD void plm__regions_finish_row(double *row, int with_intensity) {
  double area = row[PLM_REGION_AREA];
  if (area == 0) {
    for (int c = PLM_REGION_AREA; c < PLM_REGION_COLUMNS; c++) row[c] = 0;
    return;
  }
  row[PLM_REGION_CENTROID_ROW] /= area;
  row[PLM_REGION_CENTROID_COL] /= area;
  if (with_intensity) {
    row[PLM_REGION_WCENTROID_ROW] /= row[PLM_REGION_SUM];
    row[PLM_REGION_WCENTROID_COL] /= row[PLM_REGION_SUM];
  } else {
    row[PLM_REGION_SUM] = row[PLM_REGION_MAX] = 0;
    row[PLM_REGION_WCENTROID_ROW] = row[PLM_REGION_WCENTROID_COL] = 0;
  }
}

/* ---- the CUDA labelling's per-pixel steps (see the top of the file) ---------------- */

/* TILE_W is a warp, its row a 32-bit word; TILE_H is a power of two (the join levels)
 * that divides 32 (a left border segment's 32 rows start on a tile row). */
enum {
  PLM__LABEL_TILE_W = 32, /* a warp per tile row */
  PLM__LABEL_TILE_H = 16,
  PLM__LABEL_TILE_PIXELS = PLM__LABEL_TILE_W * PLM__LABEL_TILE_H /* threads per block */
};

/* *address = min(*address, value), atomically; returns the value before. The host
 * version exists for tests/test_label_cuda_logic.c. */
static inline PLM_HD int32_t plm__label_atomic_min(int32_t *address, int32_t value) {
#ifdef __CUDA_ARCH__
  return atomicMin(address, value);
#else
  int32_t old = __atomic_load_n(address, __ATOMIC_RELAXED);
  while (value < old && !__atomic_compare_exchange_n(address, &old, value, 0, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED)) {
  }
  return old;
#endif
}

/* The root of x: follow parents until one is its own. Reads through volatile, since
 * other threads lower parents meanwhile (a parent only ever moves to an ancestor). */
static inline PLM_HD int32_t plm__label_find(const int32_t *parent, int32_t x) {
  const volatile int32_t *p = parent;
  int32_t next = p[x];
  while (next != x) {
    x = next;
    next = p[x];
  }
  return x;
}

/* The root of x, halving the path on the way (Tarjan and van Leeuwen's path halving): each
 * node visited whose parent is not a root is pointed at its grandparent, so a later find
 * from anywhere on the path takes about half the steps. The border pass finds with it: its
 * unions, made in whatever order the GPU runs the segments, hang tile roots under tile
 * roots, and on a half-foreground random mask a pixel was left 7.5 steps from its root on
 * average at 1024 x 1024 (18 at most; 8 to 10, and 26, at 4096 x 4096), each a dependent
 * load of the flatten, where every pixel of a tile walks its tile root's path at once;
 * halving leaves about 2 (6 at most), and the border pass's own finds load 2.7 to 3.7
 * times less (the CUDA steps on the host with the segments in a shuffled order: test
 * label_cuda_logic's test_border_pass_depth). Safe with concurrent unions and finds: a
 * grandparent is an ancestor, so every parent stays at most its child and every path ends
 * at the same root; a store here and a union's atomicMin meet on one node only once the
 * node is no longer a root (this find read another parent for it, and a node never
 * becomes a root again), and a union whose lowering is overwritten goes on from the parent
 * its atomicMin returned, as plm__label_unite does whenever its root stopped being one
 * (the argument of Jaiganesh and Burtscher's ECL-CC for its pointer jumping). Stores go
 * through volatile, as the finds read. */
static inline PLM_HD int32_t plm__label_find_halving(int32_t *parent, int32_t x) {
  volatile int32_t *p = parent;
  for (;;) {
    const int32_t up = p[x];
    if (up == x) return x;
    const int32_t above = p[up];
    if (above == up) return up;
    p[x] = above;
    x = above;
  }
}

/* How a union finds its roots: the tile pass keeps its paths (its trees are a few levels
 * deep by construction, and a plain store into a tile's shared parents would race with the
 * other threads' atomics in the same barrier interval); the border pass halves them. */
typedef enum plm__label_paths { PLM__LABEL_KEEP_PATHS, PLM__LABEL_HALVE_PATHS } plm__label_paths;

/* Join the trees of a and b: hang the larger root under the smaller with atomicMin,
 * and when the larger stopped being a root meanwhile (another thread hung it under
 * something), go on from what it now hangs under; the roots found as `paths` says. Safe
 * with concurrent unions and finds; every parent stays at most its child. */
static inline PLM_HD void plm__label_unite(int32_t *parent, int32_t a, int32_t b,
                                           plm__label_paths paths) {
  for (;;) {
    a = paths == PLM__LABEL_HALVE_PATHS ? plm__label_find_halving(parent, a)
                                        : plm__label_find(parent, a);
    b = paths == PLM__LABEL_HALVE_PATHS ? plm__label_find_halving(parent, b)
                                        : plm__label_find(parent, b);
    if (a == b) return;
    if (a > b) {
      const int32_t t = a;
      a = b;
      b = t;
    }
    const int32_t old = plm__label_atomic_min(&parent[b], a);
    if (old == b) return;
    b = old;
  }
}

/* Tile pass (step 1), on runs. A tile row is a 32-bit word, bit x set where pixel x of
 * the row is foreground (0 outside the frame): on the GPU, the ballot of the row's warp.
 * A run is a maximal stretch of set bits, and the tile's union-find has one node per
 * run, the slot of the run's first pixel (tile index ty * PLM__LABEL_TILE_W + its
 * column) in a tile's parents; no other slot is read or written. Three phases, separated
 * by barriers across the tile:
 *   start: each run's first pixel makes its node a root (parent[t] = t, where
 *          plm__label_run_start(row, tx) == tx);
 *   join:  each run unites with every run of the row above that touches it, each pair
 *          once (plm__label_tile_join; plm__label_up_joins says which pixel makes
 *          which union), in log2(PLM__LABEL_TILE_H) = 4 levels, a barrier after each
 *          (plm__label_joins_at): rows 1, 3, 5, ... join first, each pairing two rows;
 *          then rows 2, 6, 10, 14, each pairing two pairs; then 4 and 12; then 8. All
 *          rows at once would hang each row's root under the row above's, still a root
 *          at that moment: a vertical stripe would become a chain 16 nodes deep, walked
 *          by every pixel under it in the root phase; by levels, a level's union links
 *          two blocks' trees, so the depth grows by about one a level;
 *   root:  every foreground pixel reads its run's root (plm__label_tile_root).
 * So pixels adjacent in the tile (left: one run; up, up-left, up-right: a union) end
 * up in one tree, and pixels not connected in the tile in two: the trees are the
 * components of the tile's own pixels. A union per pair of touching runs, not per
 * pixel: the finds and atomics in shared memory are a few per run, and a run's pixels
 * read its node together (one word, one wavefront). */

/* The number of zero bits above the highest set bit of v (32 for 0). */
static inline PLM_HD int plm__label_clz(uint32_t v) {
#ifdef __CUDA_ARCH__
  return __clz((int)v);
#else
  return v ? __builtin_clz(v) : 32;
#endif
}

/* The column of the first pixel of the run of `row` that holds column x (bit x set). */
static inline PLM_HD int plm__label_run_start(uint32_t row, int x) {
  return 32 - plm__label_clz(~row & ((1u << x) - 1u)); /* one past the last gap below x */
}

/* The columns of the row above (bits `up`) whose runs the run of foreground pixel x of
 * `row` unites with at pixel x, as bits: at most two. Each run U above that touches the
 * run R = [a, b] of x is joined by exactly one pixel of R:
 *   - 4-connectivity, U touches R where they overlap: the first column of the overlap.
 *   - 8-connectivity, U = [c, d] touches R when c <= b + 1 and d >= a - 1. Pixel a joins
 *     the U that holds a - 1 or a (a U that starts at or before a), and pixel x the U
 *     that starts at x + 1 (a < c <= b + 1). A U that holds a - 1 and a is found once,
 *     at a - 1, and a U that starts at x + 1 has no pixel at x, which keeps the two
 *     apart.
 * Columns outside the tile are left to the border pass. */
static inline PLM_HD uint32_t plm__label_up_joins(uint32_t row, uint32_t up, int x, int eight) {
  const int first = plm__label_run_start(row, x) == x;
  const uint32_t above = up >> x & 1u, above_left = x > 0 ? up >> (x - 1) & 1u : 0u;
  if (!eight) return above && (first || !above_left) ? 1u << x : 0u;
  uint32_t joins = 0;
  if (first && (above_left || above)) joins = above_left ? 1u << (x - 1) : 1u << x;
  if (x + 1 < PLM__LABEL_TILE_W && !above && (up >> (x + 1) & 1u)) joins |= 1u << (x + 1);
  return joins;
}

/* Whether row ty of a tile joins the row above at the join level of `step` (1, 2, 4,
 * 8): every row but the first at exactly one level. */
static inline PLM_HD int plm__label_joins_at(int ty, int step) {
  return ty % (2 * step) == step;
}

/* Join phase for foreground pixel (tx, ty) of a tile: row and up are the bits of its
 * row and of the row above (0 for the tile's first row). */
static inline PLM_HD void plm__label_tile_join(int32_t *parent, uint32_t row, uint32_t up, int tx,
                                               int ty, int eight) {
  uint32_t joins = plm__label_up_joins(row, up, tx, eight);
  if (!joins) return;
  const int32_t node = ty * PLM__LABEL_TILE_W + plm__label_run_start(row, tx);
  while (joins) {
    const uint32_t bit = joins & (0u - joins);
    const int column = 31 - plm__label_clz(bit);
    plm__label_unite(parent, node, (ty - 1) * PLM__LABEL_TILE_W + plm__label_run_start(up, column),
                     PLM__LABEL_KEEP_PATHS);
    joins &= ~bit;
  }
}

/* The frame index of the tile root of foreground pixel (tx, ty) (its row's bits `row`)
 * of the tile whose first pixel is (r0, c0) in a frame `width` wide. */
static inline PLM_HD int32_t plm__label_tile_root(const int32_t *parent, uint32_t row, int tx,
                                                  int ty, int32_t r0, int32_t c0, int32_t width) {
  const int32_t root =
      plm__label_find(parent, ty * PLM__LABEL_TILE_W + plm__label_run_start(row, tx));
  return (r0 + root / PLM__LABEL_TILE_W) * width + c0 + root % PLM__LABEL_TILE_W;
}

/* The tiles of a batch: `across` x `down` per frame, numbered frame by frame, row by
 * row. */
typedef struct plm__label_tiling {
  int64_t across, down, count;
} plm__label_tiling;

static inline PLM_HD plm__label_tiling plm__label_tiling_of(int64_t frames, int64_t height,
                                                            int64_t width) {
  plm__label_tiling tiling;
  tiling.across = (width + PLM__LABEL_TILE_W - 1) / PLM__LABEL_TILE_W;
  tiling.down = (height + PLM__LABEL_TILE_H - 1) / PLM__LABEL_TILE_H;
  tiling.count = frames * tiling.across * tiling.down;
  return tiling;
}

/* Where tile `tile` lies: its frame and its first pixel (r0, c0). */
static inline PLM_HD void plm__label_tile_at(plm__label_tiling tiling, int64_t tile, int64_t *frame,
                                             int64_t *r0, int64_t *c0) {
  const int64_t per_frame = tiling.across * tiling.down, in_frame = tile % per_frame;
  *frame = tile / per_frame;
  *r0 = in_frame / tiling.across * PLM__LABEL_TILE_H;
  *c0 = in_frame % tiling.across * PLM__LABEL_TILE_W;
}

/* Border pass (step 2). After the tile pass, the two ends of every edge of the image
 * inside one tile are in one tree; the border pass unites along the edges that cross a
 * tile border, a warp per segment of 32 pixels along a border, with the tile pass's run
 * rule (plm__label_up_joins, the segment's far line as the row above):
 *   - a top segment per tile below the frame's first tile row: the tile's top row
 *     (near) against the row above (far), lane i at column c0 + i; with 8-connectivity,
 *     lanes 0 and 31 also unite across the tile's top corners, with the pixels up-left
 *     of (r0, c0) and up-right of (r0, c0 + 31);
 *   - a left segment per 32 rows (two tile rows, from row 32 k) of each tile column but
 *     the first: the tile column's first column (near) against the column left of it
 *     (far), lane i at row r0 + i.
 * Why that is every crossing edge: the pixels of a run of a line are connected without
 * the segment's unions (in one tile by its tree; a left segment's lines cross a tile row
 * border, where the top segment below it joins them), so a union per pair of touching
 * runs, near against far, connects the ends of every edge between them. The edges that
 * cross a tile corner (diagonal, up-left or up-right of a tile's top row's end pixels)
 * are the corner unions'; those a left segment sees are between its own lines, and
 * those at its ends, at rows 32 k, cross a tile corner. Every union is along an edge
 * (the far pixel a lane names is its neighbour), so the components come out exact.
 * A lane reads its two pixels' parents (after the tile pass: a tile root, or -1 on the
 * background), which say what is foreground as the mask does, and starts its finds from
 * them, one step nearer the root. */
typedef struct plm__label_segments { /* counts in a frame: below its pixels, int32 */
  int32_t top;                       /* top segments: the tiles below the first tile row */
  int32_t left;                      /* left segments */
  int32_t across, left_down;         /* tiles across, left segments down a tile column */
} plm__label_segments;

static inline PLM_HD plm__label_segments plm__label_segments_of(int64_t height, int64_t width) {
  plm__label_segments s;
  s.across = (int32_t)((width + PLM__LABEL_TILE_W - 1) / PLM__LABEL_TILE_W);
  s.left_down = (int32_t)((height + 31) / 32);
  s.top = (int32_t)((height + PLM__LABEL_TILE_H - 1) / PLM__LABEL_TILE_H - 1) * s.across;
  s.left = (s.across - 1) * s.left_down;
  return s;
}

/* Segment k of a frame (0 <= k < top + left): its first near pixel (r, c) and whether
 * it is a top segment (along a row) or a left one (down a column). */
static inline PLM_HD int plm__label_segment_at(plm__label_segments s, int32_t k, int32_t *r,
                                               int32_t *c) {
  if (k < s.top) {
    *r = (k / s.across + 1) * PLM__LABEL_TILE_H;
    *c = k % s.across * PLM__LABEL_TILE_W;
    return 1;
  }
  k -= s.top;
  *r = k % s.left_down * 32;
  *c = (k / s.left_down + 1) * PLM__LABEL_TILE_W;
  return 0;
}

/* Lane i of a top segment, in column c of a frame `width` wide, also unites across a
 * tile corner, with 8-connectivity: with the pixel before its far pixel (lane 0: -1,
 * up-left) or after it (lane 31: +1, up-right). Returns that offset, or 0 for none. */
static inline PLM_HD int plm__label_segment_corner(int top, int i, int32_t c, int32_t width,
                                                   int eight) {
  if (!eight || !top) return 0;
  if (i == 0) return c > 0 ? -1 : 0;
  return i == 31 && c + 1 < width ? 1 : 0;
}

/* Lane i's unions in a segment: own is the parent of its near pixel (-1 where it is
 * background or outside the frame), near and far the bits of the segment's foreground
 * pixels on each line, and far_before, far_at, far_after the parents of the far pixels
 * at i - 1, i and i + 1 (any value where there is none: the bits say). */
static inline PLM_HD void plm__label_segment_join(int32_t *parent, uint32_t near, uint32_t far,
                                                  int i, int32_t own, int32_t far_before,
                                                  int32_t far_at, int32_t far_after, int eight) {
  if (own < 0) return;
  uint32_t joins = plm__label_up_joins(near, far, i, eight);
  while (joins) {
    const uint32_t bit = joins & (0u - joins);
    const int column = 31 - plm__label_clz(bit);
    const int32_t far_parent = column < i ? far_before : column > i ? far_after : far_at;
    plm__label_unite(parent, own, far_parent, PLM__LABEL_HALVE_PATHS);
    joins &= ~bit;
  }
}

/* Step 3, a block per image row, per frame: parent holds the frame's parents. The row's
 * pixels are flattened and its roots counted; the count is published in the row's status
 * word; the roots of the frame's earlier rows are summed from theirs (a look-back, as
 * Merrill and Garland's single-pass scan, without waiting: a row whose count is not out
 * yet is counted by the reader, as its own block would count it); then the row's roots
 * are numbered. While it runs, other rows' roots may already hold their marks (below),
 * so a slot is a root when it holds its own index or a mark. */

/* What a root's slot holds once its row is numbered: its label, below -1, so that it
 * reads apart from a parent (a frame index, >= 0) and from the background (-1). */
static inline PLM_HD int32_t plm__label_root_mark(int32_t label) {
  return -label - 1;
}

/* Whether slot i, holding `value`, is a root: its own index, or its label's mark. Stable
 * while step 3 runs: flattening writes only slots that are not roots, each its root (not
 * itself), and numbering turns a root's index into its mark. */
static inline PLM_HD int plm__label_is_root(int32_t value, int32_t i) {
  return value == i || value < -1;
}

/* The root of x, a foreground slot, in step 3: as plm__label_find, but a slot holding a
 * mark is a root too. */
static inline PLM_HD int32_t plm__label_root_of(const int32_t *parent, int32_t x) {
  const volatile int32_t *p = parent;
  for (int32_t next = p[x]; next != x && next >= 0; next = p[x]) x = next;
  return x;
}

/* Point pixel i, and every pixel on its path, at its root (path compression: a later
 * find through any of them takes one step, so a long chain is walked once, not once per
 * pixel on it); returns 1 when i is a root (counted in its row), else 0 (the background
 * included). A pixel whose parent is a root, as most are after the tile pass (their tile
 * root, still a root when no border joined it to an earlier tile's), costs two reads and
 * no write. Safe with concurrent flattens, counts and numbering, as no union runs in
 * step 3: each pixel written gets its own root, an ancestor, so every parent stays at
 * most its child and every path still ends at the same root; stores go through volatile,
 * as the finds read. */
static inline PLM_HD uint32_t plm__label_flatten(int32_t *parent, int32_t i) {
  volatile int32_t *p = parent;
  const int32_t first = p[i];
  if (first == -1) return 0;
  if (plm__label_is_root(first, i)) return 1;
  const int32_t root = plm__label_root_of(parent, first);
  for (int32_t x = i; x != root;) {
    const int32_t next = x == i ? first : p[x];
    if (next != root) p[x] = root;
    x = next;
  }
  return 0;
}

/* A row's status word (a 64-bit integer, 0 before the row is seen): what is known of the
 * frame's roots up to it, as a stage and a count, raised only (an atomic max), so that
 * any number of writers may publish, in any order:
 *   0                       nothing yet;
 *   PLM__LABEL_ROW_COUNTED  the roots of the row itself;
 *   PLM__LABEL_ROW_SUMMED   the roots of the frame's rows up to it, this one included.
 * A row's count and sum are the same whoever finds them (roots are stable, above). */
enum { PLM__LABEL_ROW_COUNTED = 1, PLM__LABEL_ROW_SUMMED = 2 };

static inline PLM_HD uint64_t plm__label_row_status(int stage, int32_t roots) {
  return (uint64_t)stage << 32 | (uint32_t)roots;
}
static inline PLM_HD int plm__label_row_stage(uint64_t status) {
  return (int)(status >> 32);
}
static inline PLM_HD int32_t plm__label_row_roots(uint64_t status) {
  return (int32_t)(uint32_t)status;
}

/* *address = max(*address, value), atomically. The host version exists for
 * tests/test_label_cuda_logic.c. */
static inline PLM_HD void plm__label_publish(uint64_t *address, uint64_t value) {
#ifdef __CUDA_ARCH__
  atomicMax((unsigned long long *)address, (unsigned long long)value);
#else
  uint64_t old = __atomic_load_n(address, __ATOMIC_RELAXED);
  while (value > old && !__atomic_compare_exchange_n(address, &old, value, 0, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED)) {
  }
#endif
}

/* The roots of row y of a frame `width` wide, counted from its slots (any time in step 3). */
static inline PLM_HD int32_t plm__label_count_row(const int32_t *parent, int32_t y, int32_t width) {
  const volatile int32_t *p = parent;
  int32_t roots = 0;
  for (int32_t i = y * width; i < (y + 1) * width; i++) roots += plm__label_is_root(p[i], i);
  return roots;
}

/* The roots of the frame's rows before y, from their status words (status: the frame's),
 * newest first, up to the first that holds a sum: a row with nothing yet is counted here
 * and its count published. One thread's look-back, for the host check; the kernel's
 * (label.cu) takes 256 rows a step with a block, to the same sum. */
static inline PLM_HD int32_t plm__label_roots_before(uint64_t *status, const int32_t *parent,
                                                     int32_t y, int32_t width) {
  int32_t roots = 0;
  for (int32_t r = y - 1; r >= 0; r--) {
    uint64_t s = ((volatile uint64_t *)status)[r];
    if (plm__label_row_stage(s) == 0) {
      s = plm__label_row_status(PLM__LABEL_ROW_COUNTED, plm__label_count_row(parent, r, width));
      plm__label_publish(&status[r], s);
    }
    roots += plm__label_row_roots(s);
    if (plm__label_row_stage(s) == PLM__LABEL_ROW_SUMMED) break;
  }
  return roots;
}

/* Step 4: the label of a pixel whose slot held `own` when read, in the frame whose
 * slots are `labels`: 0 on the background, a root's own mark decoded, else the label
 * of its root (own, after flattening), read from the root's slot, which holds either
 * the root's mark or, if the root's own thread has been there already, its label.
 * Only a pixel's own thread writes its slot, so `own` is never a label. */
static inline PLM_HD int32_t plm__label_final(const int32_t *labels, int32_t own) {
  if (own == -1) return 0;
  if (own < -1) return -own - 1;
  const int32_t at_root = ((const volatile int32_t *)labels)[own];
  return at_root < -1 ? -at_root - 1 : at_root;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernels (kernels/cpu/label.c): run on the calling thread and the CPU pool;
 * return when done. plm__label_cpu needs args->scratch of the size
 * plm__label_cpu_scratch_bytes gives (per band of rows a 16-byte record and two rows of
 * runs, 16 bytes for every two pixels of a row, rounded up, and 48 more: a sixteenth of
 * the labels' bytes for bands of 32 rows, 2 / H for a frame of H < 32 rows; the
 * union-find's table is in the labels; it reads none of args' pointers). */
size_t plm__label_cpu_scratch_bytes(const plm__label_args *args);
void plm__label_cpu(const plm__label_args *args);
void plm__regions_cpu(const plm__regions_args *args);

/* Enqueue the CUDA kernels (kernels/cuda/label.cu) on a cudaStream_t, with the
 * context's device current. plm__label_cuda needs args->scratch of the size
 * plm__label_cuda_scratch_bytes gives: a root count per image row of the batch (4
 * bytes per row). It needs no stream, enqueues nothing and reads none of args'
 * pointers. */
plm_status plm__label_cuda_scratch_bytes(const plm__label_args *args, size_t *bytes);
plm_status plm__label_cuda(void *stream, const plm__label_args *args);
plm_status plm__regions_cuda(void *stream, const plm__regions_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_LABEL_H */

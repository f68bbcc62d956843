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
 *   1. tile pass, in shared memory: each pixel links to one of its foreground
 *      neighbours before it in raster order (a plain store, plm__label_tile_start),
 *      then, after a barrier, unites with the others (plm__label_tile_join: atomicMin
 *      on shared memory), and, after another, writes its tile root as a frame index.
 *      Only links inside the tile are made; every pixel then points straight at its
 *      tile root.
 *   2. border pass: each pixel on a tile's top row, left column or (8-connectivity)
 *      right column unites, in global memory, along its links that leave the tile
 *      (plm__label_border_join); interior pixels are not visited.
 *   3. flatten: every pixel's parent becomes its root (plm__label_flatten, which
 *      compresses the path it walked), and each image row's roots are counted (an
 *      atomic add per root).
 *   4. number the roots, a block per image row: the roots of the frame's earlier rows
 *      (the sum of their counts) plus the roots before it in its row (a block-wide
 *      scan of the row's root flags), plus one; each root's slot gets its label as a
 *      mark below -1 (plm__label_root_mark), and the frame's last row writes its K.
 *   5. relabel: every pixel's label from its slot and its root's (plm__label_final).
 *   So the numbering is raster order, as scipy.ndimage.label's, with no prefix sum over
 *   the pixels: five launches, about 29 bytes of memory traffic per pixel (the mask
 *   read and the labels written are 5: the floor).
 * Invariants. Every parent is at most its child: the links of step 1 go to earlier
 * pixels, a tile's local index order is the frame's raster order restricted to the
 * tile, and plm__label_unite hangs the larger root under the smaller. So a
 * component's root is its smallest index, its first pixel in raster order, which the
 * numbering relies on. Which links are made: plm__label_links keeps a subset of a
 * pixel's links to earlier foreground neighbours that still connects every
 * component (the proof is by induction over raster order, next to it). Step 2 makes
 * exactly the links of that subset that leave their tile; step 1 judges links from
 * the tile alone (neighbours outside it taken as background), which only ever makes
 * more of the in-tile links than the subset has, never fewer. Extra links are edges
 * of the image, so the components come out the same. */
#ifndef PLUME_KERNELS_COMMON_LABEL_H
#define PLUME_KERNELS_COMMON_LABEL_H

#include <math.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/label.h"

typedef struct plm__label_args {
  const uint8_t *mask;
  int32_t *labels; /* also the union-find parents while the kernels run */
  int32_t *count;  /* one per frame */
  void *scratch;   /* CUDA only: plm__label_cuda_scratch_bytes bytes (ops/op_scratch.h) */
  int64_t frames;
  int64_t height, width; /* height * width <= INT32_MAX */
  int connectivity;      /* 4 or 8 */
} plm__label_args;

typedef struct plm__regions_args {
  const int32_t *labels;
  const void *intensity; /* NULL, or of intensity_dtype */
  plm_dtype intensity_dtype;
  const int32_t *count; /* K, read in stream order */
  double *table;        /* capacity x PLM_REGION_COLUMNS */
  int64_t capacity;
  int64_t height, width;
} plm__regions_args;

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

enum {
  PLM__LABEL_TILE_W = 32, /* a warp per tile row */
  PLM__LABEL_TILE_H = 16,
  PLM__LABEL_TILE_PIXELS = PLM__LABEL_TILE_W * PLM__LABEL_TILE_H /* threads per block */
};

/* A pixel's neighbours before it in raster order, as bits of a link set. */
enum { PLM__LABEL_LEFT = 1, PLM__LABEL_UP_LEFT = 2, PLM__LABEL_UP = 4, PLM__LABEL_UP_RIGHT = 8 };

/* Which of a foreground pixel's links to its earlier foreground neighbours (left,
 * up_left, up, up_right: non-zero where that neighbour exists and is foreground) the
 * labelling makes. Claim: for every pixel p, the links made connect p to each of its
 * earlier foreground neighbours. By induction over raster order, taking the claim for
 * every pixel before p:
 *   - 8-connectivity, up foreground: only up. Left, up-left and up-right all touch up
 *     and come before p: left has up as its up-right neighbour, up has up-left as its
 *     left one, up-right has up as its left one, so each is connected to up already.
 *   - 8-connectivity, up background: left and up-right, and up-left unless left is
 *     foreground (left has up-left as its up neighbour).
 *   - 4-connectivity: left and up, but only up when up-left is foreground too (left
 *     has up-left as its up neighbour, up has it as its left one).
 * Every component thus stays connected, with at most two links per pixel. */
static inline PLM_HD int plm__label_links(int left, int up_left, int up, int up_right, int eight) {
  if (eight) {
    if (up) return PLM__LABEL_UP;
    return (left      ? PLM__LABEL_LEFT
            : up_left ? PLM__LABEL_UP_LEFT
                      : 0) |
           (up_right ? PLM__LABEL_UP_RIGHT : 0);
  }
  if (up && left && up_left) return PLM__LABEL_UP;
  return (left ? PLM__LABEL_LEFT : 0) | (up ? PLM__LABEL_UP : 0);
}

/* The index offset of a link's neighbour in rows of `stride` elements. */
static inline PLM_HD int64_t plm__label_link_offset(int link, int64_t stride) {
  switch (link) {
    case PLM__LABEL_LEFT: return -1;
    case PLM__LABEL_UP_LEFT: return -stride - 1;
    case PLM__LABEL_UP: return -stride;
    default: return -stride + 1; /* PLM__LABEL_UP_RIGHT */
  }
}

/* Whether the link from (tx, ty) of a tile leaves the tile. */
static inline PLM_HD int plm__label_link_leaves_tile(int link, int tx, int ty) {
  switch (link) {
    case PLM__LABEL_LEFT: return tx == 0;
    case PLM__LABEL_UP_LEFT: return tx == 0 || ty == 0;
    case PLM__LABEL_UP: return ty == 0;
    default: return ty == 0 || tx == PLM__LABEL_TILE_W - 1; /* PLM__LABEL_UP_RIGHT */
  }
}

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

/* Join the trees of a and b: hang the larger root under the smaller with atomicMin,
 * and when the larger stopped being a root meanwhile (another thread hung it under
 * something), go on from what it now hangs under. Safe with concurrent unions and
 * finds; every parent stays at most its child. */
static inline PLM_HD void plm__label_unite(int32_t *parent, int32_t a, int32_t b) {
  for (;;) {
    a = plm__label_find(parent, a);
    b = plm__label_find(parent, b);
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
    plm__label_unite(parent, node, (ty - 1) * PLM__LABEL_TILE_W + plm__label_run_start(up, column));
    joins &= ~bit;
  }
}

/* The frame index of the tile root of foreground pixel (tx, ty) (its row's bits `row`)
 * of the tile whose first pixel is (r0, c0) in a frame `width` wide. */
static inline PLM_HD int32_t plm__label_tile_root(const int32_t *parent, uint32_t row, int tx,
                                                  int ty, int64_t r0, int64_t c0, int64_t width) {
  const int32_t root =
      plm__label_find(parent, ty * PLM__LABEL_TILE_W + plm__label_run_start(row, tx));
  return (int32_t)((r0 + root / PLM__LABEL_TILE_W) * width + c0 + root % PLM__LABEL_TILE_W);
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

/* Border pass (step 2). The pixels of a tile it visits: the top row, the left column
 * and, with 8-connectivity, the right column (whose up-right links leave the tile);
 * no other pixel has a link that leaves its tile. */
static inline PLM_HD int plm__label_border_pixels(int eight) {
  return PLM__LABEL_TILE_W + (PLM__LABEL_TILE_H - 1) * (eight ? 2 : 1);
}

/* The k-th of them, 0 <= k < plm__label_border_pixels. */
static inline PLM_HD void plm__label_border_pixel(int k, int *tx, int *ty) {
  if (k < PLM__LABEL_TILE_W) {
    *tx = k;
    *ty = 0;
  } else if (k < PLM__LABEL_TILE_W + PLM__LABEL_TILE_H - 1) {
    *tx = 0;
    *ty = k - PLM__LABEL_TILE_W + 1;
  } else {
    *tx = PLM__LABEL_TILE_W - 1;
    *ty = k - (PLM__LABEL_TILE_W + PLM__LABEL_TILE_H - 1) + 1;
  }
}

/* Unite foreground pixel (r, c) of a frame (its parents and its mask, `width` wide)
 * along those of its links that leave its tile. */
static inline PLM_HD void plm__label_border_join(int32_t *parent, const uint8_t *mask,
                                                 int64_t width, int64_t r, int64_t c, int eight) {
  const int64_t i = r * width + c;
  const int left = c > 0, up = r > 0, right = c + 1 < width;
  int links = plm__label_links(left && mask[i - 1], left && up && mask[i - width - 1],
                               up && mask[i - width], up && right && mask[i - width + 1], eight);
  const int tx = (int)(c % PLM__LABEL_TILE_W), ty = (int)(r % PLM__LABEL_TILE_H);
  while (links) {
    const int link = links & -links;
    if (plm__label_link_leaves_tile(link, tx, ty))
      plm__label_unite(parent, (int32_t)i, (int32_t)(i + plm__label_link_offset(link, width)));
    links &= ~link;
  }
}

/* Flatten (step 3), per frame: parent holds the frame's parents. */

/* Point pixel i, and every pixel on its path, at its root (path compression: a later
 * find through any of them takes one step, so a long chain is walked once, not once per
 * pixel on it); returns 1 when i is a root (counted in its row), else 0 (the background
 * included). A pixel whose parent is a root, as most are after the tile pass (their tile
 * root, still a root when no border joined it to an earlier tile's), costs two reads and
 * no write. Safe with concurrent flattens, as no union runs in step 3: each pixel written
 * gets its own root, an ancestor, so every parent stays at most its child and every path
 * still ends at the same root; stores go through volatile, as the finds read. */
static inline PLM_HD uint32_t plm__label_flatten(int32_t *parent, int32_t i) {
  volatile int32_t *p = parent;
  const int32_t first = p[i];
  if (first < 0) return 0;
  if (first == i) return 1;
  const int32_t root = plm__label_find(parent, first);
  for (int32_t x = i; x != root;) {
    const int32_t next = x == i ? first : p[x];
    if (next != root) p[x] = root;
    x = next;
  }
  return 0;
}

/* What a root's slot holds between steps 4 and 5: its label, below -1, so that it
 * reads apart from a parent (a frame index, >= 0) and from the background (-1). */
static inline PLM_HD int32_t plm__label_root_mark(int32_t label) {
  return -label - 1;
}

/* Step 5: the label of a pixel whose slot held `own` when read, in the frame whose
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
 * return when done. */
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

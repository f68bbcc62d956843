/* kernels/cuda/regions_warp.h: regions' accumulation on the GPU, warp by warp (internal;
 * C++). kernels/cuda/label.cu's regions_accumulate runs it with kernels/cuda/warp.h's
 * warp; tests/test_regions_cuda_logic.cpp runs the same code on the host with 32
 * emulated lanes (tests/emulated_lanes.h) and compares the table with plm__regions_cpu.
 *
 * ---- design ----------------------------------------------------------------------------
 * The table's rows are sums, bounds and maxima that every pixel of a label adds to. One
 * atomic per column per pixel serialises a large blob on its row, so a warp first
 * combines what its pixels add and the table sees one update per column per run:
 *   - A warp owns a tile of the frame, PLM__REGIONS_TILE_W columns by tiling.rows rows
 *     (plm__regions_tiling_of), and walks it row by row, 32 pixels of a row at a time:
 *     lane l reads pixel (r, c + l). No division per pixel.
 *   - In those 32 pixels, runs of one label are contiguous lanes (a ballot of "my label
 *     differs from my left neighbour's" gives every run's first lane, its head). A
 *     run's area, bounds and coordinate sums follow from its head and end lanes alone
 *     (one row, consecutive columns); its intensity terms (sum, max, sum of v * col)
 *     come from a segmented reduction, five shuffle steps towards the head, each lane
 *     taking its neighbour's partial only when it lies in its own run.
 *   - Runs that continue across the 32-pixel steps and the tile's rows do not go to the
 *     table at once: the last labelled run of a step is carried (kept by its head lane,
 *     the holder) and merged into the first labelled run of the next labelled step when
 *     it has the same label, else written out then. A blob that covers the tile thus
 *     costs one table update per column for the whole tile, not one per 32 pixels.
 *     Background steps leave the carry alone (a hole or the background between two
 *     rows of a blob does not break it).
 *   - Every other run's head writes its run out: area and sums with atomicAdd on f64,
 *     the bounds and the intensity maximum with one integer atomicMin or atomicMax on
 *     the double's bits (plm__regions_atomic_max below says why that orders doubles),
 *     so no compare-and-swap loop remains.
 * Label 0, labels past the table's rows and lanes past the tile's last column count as
 * unlabelled: they form runs too, which never reach the table.
 * Why warps and not blocks: a block-wide combination in shared memory would need a table
 * of the labels a block sees (any number, so hashed, with an overflow path) and barriers
 * between the block's warps; it could save at most the warps per block over what the
 * carry along a warp's tile already saves for large blobs, and nothing for small ones,
 * whose runs each need their own update anyway.
 *
 * ---- results -------------------------------------------------------------------------
 * Area, bounds and the intensity maximum are exact, and so are the coordinate sums
 * (integers, summed in int64 and exact in f64 below 2^53), so the centroids equal the
 * CPU's bit for bit. The intensity sums of u8 and u16 images are sums of integers
 * (sum(v * row) is formed as row * sum(v) per run, an integer too) and exact below 2^53
 * as well. f32 intensities are summed in another order than the CPU's raster order
 * (a run's tree, then runs in whatever order the atomics land), so their sums differ
 * from the CPU's in the last bits, and from run to run (tests/test_label.c allows 1e-9
 * relative). NaN intensities propagate into the sums and are passed over by the
 * maximum, as with the CPU's fmax.
 *
 * ---- device cost model -------------------------------------------------------------------
 * Per pixel: 4 bytes of label read, plus the intensity (1, 2 or 4 bytes) where labelled;
 * nothing else per pixel but registers and shuffles: per 32 pixels 2 ballots and a
 * shuffle of 4 bytes, and where a step is labelled, with intensity, 5 shuffles of 24
 * bytes, and one of 96 bytes where the carry moves to another lane.
 * Table: per run written out, 7 f64 atomics (11 with intensity) on its label's row. A
 * run is written out unless it carries on into the next labelled step of the tile, so
 * a frame costs about (label changes along the rows of each tile) + (tiles each label
 * meets) updates. Before: 7 to 11 atomics per labelled pixel, 4 to 5 of them
 * compare-and-swap loops. A 2048 x 2048 frame (tiles of 128 x 8) with one 1000 x 1000
 * blob: about 8 x 125 = 1,000 updates of its row (11,000 atomics with intensity) instead
 * of 11 million.
 * Launches: 3 (start rows, accumulate, finish rows), as before.
 * Floor: H * W * (4 + intensity bytes) / memory bandwidth: a 2048 x 2048 frame with an
 * f32 image is 32 MiB, 10 us at 3.35 TB/s (H100 SXM). The table (capacity x 96 bytes)
 * is read and written once by the start and finish kernels. */
#ifndef PLUME_KERNELS_CUDA_REGIONS_WARP_H
#define PLUME_KERNELS_CUDA_REGIONS_WARP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/common/label.h"

/* A warp's tile: PLM__REGIONS_TILE_W columns (4 steps of 32 pixels) by up to
 * PLM__REGIONS_TILE_MAX_H rows, as many rows as still leave PLM__REGIONS_WANTED_TILES
 * tiles (warps to fill a GPU: 4096 warps are 16 per SM on 132 SMs, and a 512 x 512
 * frame still gets 2048 of them with one row each). */
enum { PLM__REGIONS_TILE_W = 128, PLM__REGIONS_TILE_MAX_H = 16, PLM__REGIONS_WANTED_TILES = 4096 };

/* The tiles of a frame: `across` per tile row, `rows` frame rows each, `count` in all,
 * numbered row of tiles by row of tiles. */
struct plm__regions_tiling {
  int64_t across, rows, count;
};

static inline PLM_HD plm__regions_tiling plm__regions_tiling_of(int64_t height, int64_t width) {
  plm__regions_tiling t;
  t.across = (width + PLM__REGIONS_TILE_W - 1) / PLM__REGIONS_TILE_W;
  const int64_t most = PLM__REGIONS_TILE_MAX_H,
                rows = t.across * height / PLM__REGIONS_WANTED_TILES;
  t.rows = rows < 1 ? 1 : rows > most ? most : rows;
  t.count = t.across * ((height + t.rows - 1) / t.rows);
  return t;
}

/* What a run of pixels of one label adds to the label's row. label 0: nothing. */
struct plm__regions_part {
  int32_t label;
  int64_t area, min_row, min_col, max_row, max_col, sum_row, sum_col;
  double sum, max, sum_row_weighted, sum_col_weighted; /* of the intensity v: v, v, v r, v c */
};

static inline PLM_HD plm__regions_part plm__regions_part_none(void) {
  plm__regions_part p;
  memset(&p, 0, sizeof p);
  p.max = -INFINITY;
  return p;
}

/* The part of a run of `label` on row r, columns [first, last]. */
static inline PLM_HD plm__regions_part plm__regions_run_part(int32_t label, int64_t r,
                                                             int64_t first, int64_t last) {
  plm__regions_part p = plm__regions_part_none();
  p.label = label;
  p.area = last - first + 1;
  p.min_row = p.max_row = r;
  p.min_col = first;
  p.max_col = last;
  p.sum_row = r * p.area;
  p.sum_col = p.area * (first + last) / 2; /* area and first + last are never both odd */
  return p;
}

/* a and b of the same label together. */
static inline PLM_HD plm__regions_part plm__regions_part_add(plm__regions_part a,
                                                             const plm__regions_part &b) {
  a.area += b.area;
  a.min_row = a.min_row < b.min_row ? a.min_row : b.min_row;
  a.min_col = a.min_col < b.min_col ? a.min_col : b.min_col;
  a.max_row = a.max_row > b.max_row ? a.max_row : b.max_row;
  a.max_col = a.max_col > b.max_col ? a.max_col : b.max_col;
  a.sum_row += b.sum_row;
  a.sum_col += b.sum_col;
  a.sum += b.sum;
  a.max = fmax(a.max, b.max);
  a.sum_row_weighted += b.sum_row_weighted;
  a.sum_col_weighted += b.sum_col_weighted;
  return a;
}

/* The intensity terms a lane holds while its run's are reduced: sum v, max v, sum v c. */
struct plm__regions_terms {
  double sum, max, sum_col;
};

static inline PLM_HD plm__regions_terms plm__regions_terms_add(plm__regions_terms a,
                                                               const plm__regions_terms &b) {
  a.sum += b.sum;
  a.max = fmax(a.max, b.max);
  a.sum_col += b.sum_col;
  return a;
}

/* ---- the table's atomics -------------------------------------------------------------- */

static inline PLM_HD int64_t plm__regions_bits(double value) {
  int64_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

#ifndef __CUDA_ARCH__
/* The host's stand-in for a device atomic on the 64 bits at address: replace them with
 * next(old) until no other thread came in between (tests/test_regions_cuda_logic.cpp). */
template <class Next>
static inline void plm__regions_host_update(double *address, Next next) {
  uint64_t *word = (uint64_t *)(void *)address;
  uint64_t old = __atomic_load_n(word, __ATOMIC_RELAXED);
  while (
      !__atomic_compare_exchange_n(word, &old, next(old), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
#endif

static inline PLM_HD void plm__regions_atomic_add(double *address, double value) {
#ifdef __CUDA_ARCH__
  atomicAdd(address, value);
#else
  plm__regions_host_update(address, [value](uint64_t old) {
    double sum;
    memcpy(&sum, &old, sizeof sum);
    sum += value;
    uint64_t next;
    memcpy(&next, &sum, sizeof next);
    return next;
  });
#endif
}

/* *address = the lesser (greater) of itself and bits, both taken as signed (unsigned)
 * 64-bit integers. */
static inline PLM_HD void plm__regions_atomic_min_signed(double *address, int64_t bits) {
#ifdef __CUDA_ARCH__
  atomicMin((long long *)address, (long long)bits);
#else
  plm__regions_host_update(
      address, [bits](uint64_t old) { return (int64_t)old < bits ? old : (uint64_t)bits; });
#endif
}

static inline PLM_HD void plm__regions_atomic_max_signed(double *address, int64_t bits) {
#ifdef __CUDA_ARCH__
  atomicMax((long long *)address, (long long)bits);
#else
  plm__regions_host_update(
      address, [bits](uint64_t old) { return (int64_t)old > bits ? old : (uint64_t)bits; });
#endif
}

static inline PLM_HD void plm__regions_atomic_min_unsigned(double *address, uint64_t bits) {
#ifdef __CUDA_ARCH__
  atomicMin((unsigned long long *)address, (unsigned long long)bits);
#else
  plm__regions_host_update(address, [bits](uint64_t old) { return old < bits ? old : bits; });
#endif
}

/* *address = fmax(*address, value), for *address not NaN (a row starts at -infinity).
 * Doubles with the sign bit clear order as their bits do as signed integers, all >= 0;
 * doubles with it set have negative signed bits, and among them the greater double has
 * the lesser bits as unsigned integers (which are all >= 2^63). So a value with the
 * sign bit clear wins by a signed atomicMax exactly when it is the greater double (any
 * negative double loses to it), and one with the sign bit set by an unsigned atomicMin
 * (any double with the sign bit clear keeps its place, being below 2^63). -0 and +0
 * both order below every positive and above every negative double (+0 wins over -0,
 * which fmax may or may not do). NaN is passed over, as by fmax. */
static inline PLM_HD void plm__regions_atomic_max(double *address, double value) {
  if (value != value) return;
  const int64_t bits = plm__regions_bits(value);
  if (bits >= 0)
    plm__regions_atomic_max_signed(address, bits);
  else
    plm__regions_atomic_min_unsigned(address, (uint64_t)bits);
}

/* *address = min(*address, value) for value >= 0 and *address >= 0 or +infinity (the
 * bounds: a row starts at +infinity); the signed order of the bits is then the order of
 * the doubles. */
static inline PLM_HD void plm__regions_atomic_min_nonnegative(double *address, double value) {
  plm__regions_atomic_min_signed(address, plm__regions_bits(value));
}

/* Add part p (label 1..rows) to its row of the table. */
static inline PLM_HD void plm__regions_write(double *table, const plm__regions_part &p,
                                             bool with_intensity) {
  double *row = table + (int64_t)(p.label - 1) * PLM_REGION_COLUMNS;
  plm__regions_atomic_add(&row[PLM_REGION_AREA], (double)p.area);
  plm__regions_atomic_min_nonnegative(&row[PLM_REGION_MIN_ROW], (double)p.min_row);
  plm__regions_atomic_min_nonnegative(&row[PLM_REGION_MIN_COL], (double)p.min_col);
  plm__regions_atomic_max(&row[PLM_REGION_MAX_ROW], (double)p.max_row);
  plm__regions_atomic_max(&row[PLM_REGION_MAX_COL], (double)p.max_col);
  plm__regions_atomic_add(&row[PLM_REGION_CENTROID_ROW], (double)p.sum_row);
  plm__regions_atomic_add(&row[PLM_REGION_CENTROID_COL], (double)p.sum_col);
  if (!with_intensity) return;
  plm__regions_atomic_add(&row[PLM_REGION_SUM], p.sum);
  plm__regions_atomic_max(&row[PLM_REGION_MAX], p.max);
  plm__regions_atomic_add(&row[PLM_REGION_WCENTROID_ROW], p.sum_row_weighted);
  plm__regions_atomic_add(&row[PLM_REGION_WCENTROID_COL], p.sum_col_weighted);
}

/* ---- a warp's tile ------------------------------------------------------------------------ */

static inline PLM_HD int plm__regions_lowest_bit(uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __ffs((int)bits) - 1;
#else
  return __builtin_ctz(bits);
#endif
}

static inline PLM_HD int plm__regions_highest_bit(uint32_t bits) {
#ifdef __CUDA_ARCH__
  return 31 - __clz((int)bits);
#else
  return 31 - __builtin_clz(bits);
#endif
}

/* The lane after the last of the run that `lane` is in, from the heads of the runs. */
static inline PLM_HD int plm__regions_run_end(uint32_t heads, int lane) {
  const uint32_t after = heads & ~(0xffffffffu >> (31 - lane));
  return after ? plm__regions_lowest_bit(after) : 32;
}

/* The terms of each lane's run, in the run's head (other lanes: partial terms). Lane
 * l holds those of lanes [l, min(l + 2^k, end)) after step k, since lane l + 2^k, when
 * in the run, holds those of the next 2^k lanes of it. */
template <class Warp>
static inline PLM_HD plm__regions_terms plm__regions_reduce_run(const Warp &warp,
                                                                plm__regions_terms t, int end) {
  const int lane = warp.lane();
  for (int offset = 1; offset < 32; offset *= 2) {
    const plm__regions_terms next = warp.shuffle(t, lane + offset < 32 ? lane + offset : lane);
    if (lane + offset < end) t = plm__regions_terms_add(t, next);
  }
  return t;
}

/* Accumulate tile `tile` of a frame (labels and intensity, or NULL, of height x width)
 * into the table's rows for labels 1..rows; every lane of the warp calls it with the
 * same arguments. */
template <class Warp, typename T>
PLM_HD void plm__regions_tile(const Warp &warp, const int32_t *labels, const T *intensity,
                              double *table, int64_t rows, int64_t height, int64_t width,
                              plm__regions_tiling tiling, int64_t tile) {
  const int lane = warp.lane();
  const bool with_intensity = intensity != NULL;
  const int64_t r0 = tile / tiling.across * tiling.rows,
                c0 = tile % tiling.across * PLM__REGIONS_TILE_W;
  const int64_t r1 = r0 + tiling.rows < height ? r0 + tiling.rows : height;
  const int64_t c1 = c0 + PLM__REGIONS_TILE_W < width ? c0 + PLM__REGIONS_TILE_W : width;
  plm__regions_part carry = plm__regions_part_none(); /* the holder's */
  int holder = -1;                                    /* the lane holding the carry, if any */
  for (int64_t r = r0; r < r1; r++)
    for (int64_t step = c0; step < c1; step += 32) {
      const int64_t c = step + lane, i = r * width + c;
      int32_t label = c < c1 ? labels[i] : 0;
      if (label < 1 || label > rows) label = 0;
      const uint32_t labelled = warp.ballot(label != 0);
      if (!labelled) continue;
      const int32_t left = warp.shuffle(label, lane > 0 ? lane - 1 : 0);
      const uint32_t heads = warp.ballot(lane == 0 || label != left);
      const int end = plm__regions_run_end(heads, lane);
      plm__regions_terms t = {0.0, -INFINITY, 0.0};
      if (with_intensity) {
        if (label) {
          const double v = (double)intensity[i];
          t = plm__regions_terms{v, v, v * (double)c};
        }
        t = plm__regions_reduce_run(warp, t, end);
      }
      const bool head = (heads >> lane) & 1;
      plm__regions_part p = plm__regions_part_none();
      if (head && label) {
        p = plm__regions_run_part(label, r, c, step + end - 1);
        p.sum = t.sum;
        p.max = t.max;
        p.sum_row_weighted = (double)r * t.sum;
        p.sum_col_weighted = t.sum_col;
      }
      const uint32_t starts = heads & labelled; /* the heads of labelled runs */
      const int first = plm__regions_lowest_bit(starts), last = plm__regions_highest_bit(starts);
      if (holder >= 0 && holder != first) carry = warp.shuffle(carry, holder);
      if (holder >= 0 && lane == first) {
        if (carry.label == p.label)
          p = plm__regions_part_add(p, carry);
        else
          plm__regions_write(table, carry, with_intensity);
      }
      if (p.label && lane != last) plm__regions_write(table, p, with_intensity);
      carry = p;
      holder = last;
    }
  if (holder >= 0 && lane == holder) plm__regions_write(table, carry, with_intensity);
}

#endif /* PLUME_KERNELS_CUDA_REGIONS_WARP_H */

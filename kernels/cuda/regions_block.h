/* kernels/cuda/regions_block.h: regions' accumulation on the GPU, block by block (internal;
 * C++). kernels/cuda/label.cu's regions_accumulate runs it with kernels/cuda/lanes.h's
 * warp and block; tests/test_regions_cuda_logic.cpp runs the same code on the host with
 * a block's 256 lanes emulated (tests/emulated_lanes.h) and compares the table with
 * plm__regions_cpu.
 *
 * ---- design ----------------------------------------------------------------------------
 * The table's rows are sums, bounds and maxima that every pixel of a label adds to. A
 * large blob meets one row from everywhere, and updates of one address serialise (one an
 * L2 clock), so nothing per pixel or per run goes to the table: a block combines what its
 * pixels add, label by label, in shared memory, and the table sees one update per column
 * per (block, label).
 *   - A block owns a tile of the frame, PLM__REGIONS_TILE_W (64) columns by tiling.rows
 *     (4 to 64) rows (plm__regions_tiling_of), and keeps a table of PLM__REGIONS_SLOTS
 *     slots in shared memory, keyed by label (open addressing: a label's slots are
 *     PLM__REGIONS_PROBES from its hash on, claimed by compare-and-swap on the key).
 *   - Its warps take the tile's steps, 32 pixels of a row each (lane l: pixel (r, c + l),
 *     no division per pixel). In a step, the labelled lanes are cut into spans: a span
 *     starts at a labelled lane whose label differs from that of the labelled lane before
 *     it (a ballot gives these heads) and runs to the next head, so the background between
 *     two runs of one label does not cut them apart: a step of a blob with holes is one
 *     span. A span's area, bounds and coordinate sums come from the bits of its labelled
 *     lanes alone (population counts); its intensity terms (sum, max, sum of v * col)
 *     from a segmented reduction, five shuffle steps towards the head.
 *   - The head adds its span to its label's slot: what a slot holds is kept so that few
 *     atomics carry it (plm__regions_patch): the area and the two coordinate sums, in the
 *     tile's coordinates, packed into one 64-bit integer (one atomicAdd), the bounds as
 *     bit masks of the tile's rows and columns that the label has pixels on (one atomicOr
 *     each: the lowest and highest bits are the bounds), and with intensity the sum, the
 *     maximum and the two weighted sums (atomicAdd on f64 and plm__regions_atomic_max).
 *   - After a barrier each thread writes its slots out to the table (plm__regions_write:
 *     atomicAdd on f64, the bounds and the maximum with one integer atomicMin or atomicMax
 *     on the double's bits, plm__regions_atomic_max below says why that orders doubles),
 *     and empties them for the block's next tile.
 *   - Overflow: a span whose label finds its PLM__REGIONS_PROBES slots held by other
 *     labels goes to the table at once, as a slot would (many tiny components: up to 1
 *     in 4 pixels of a tile at 8-connectivity, 1 in 2 at 4 (a checkerboard), 1024 or 2048
 *     labels in a 64 x 64 tile, 4 or 8 times the slots).
 * Label 0, labels past the table's rows and lanes past the frame's last column count as
 * unlabelled. Why no carry along a warp's walk (the design before, one update per run):
 * the carried sums took 94 registers, and a carry only saved updates within one warp's
 * walk, where the slots save them across the block, for the price of a shared atomic.
 *
 * ---- results -------------------------------------------------------------------------
 * Area, bounds and the intensity maximum are exact, and so are the coordinate sums
 * (integers: packed in a slot exactly, each field below its bit width, then summed in f64,
 * exact below 2^53), so the centroids equal the CPU's bit for bit. The intensity sums of
 * u8 and u16 images are sums of integers (sum(v * row) is formed as row * sum(v) per span,
 * an integer too) and exact below 2^53 as well. f32 intensities are summed in another
 * order than the CPU's raster order (a span's tree, then spans and blocks in whatever
 * order the atomics land), so their sums differ from the CPU's in the last bits, and from
 * run to run (tests/test_label.c allows 1e-9 relative). NaN intensities propagate into
 * the sums and are passed over by the maximum, as with the CPU's fmax.
 *
 * ---- device cost model -------------------------------------------------------------------
 * Per pixel: 4 bytes of label read, plus the intensity (1, 2 or 4 bytes) in steps with a
 * labelled pixel (every lane of the step loads it: one coalesced request, as the labels');
 * per 32 pixels a ballot, and where a step is labelled a shuffle of 4 bytes, a ballot and,
 * with intensity, 5 shuffles of 24 bytes.
 * Shared memory, per span: a compare-and-swap on its label's key (more when the hash
 * collides) and 3 atomics (7 with intensity); a span is a label change among a step's
 * labelled pixels, so a blob costs one per step, and segment's noise below about 1.3 per
 * labelled step. Per tile: the slots used read and emptied once.
 * Table: per (block, label) 7 f64 atomics (11 with intensity), plus those of overflowed
 * spans. A label's row is updated once per tile it meets: the hottest address of a frame
 * with one blob takes (tiles) updates, not (runs of the blob).
 * Emulated estimate for an H100 SXM, not a measurement (bench_ops --smoke --size 512
 * --backend cuda --op segment --emulated-cost, docs/benchmarks.md): segment's 512 x 512
 * frame (f32 noise > 0.5, 8-connected: one component holds most of the pixels, f32
 * intensity), 256 tiles of 64 x 16: 84,461 shared atomics in 73,763 steps (0.54 us at one
 * step per SM per clock), 12,991 table atomics, 256 on the hottest address; bound by DRAM,
 * 0.65 us, its floor. Before (a warp's carry along a 128-pixel tile row, one table update
 * per run, 94 registers): 680,691 table atomics, 60,435 of them on the giant component's
 * area, 30.5 us by the estimate's one update of an address per clock, 47 times the floor.
 * At 4096 x 4096 (--size 4096; tiles of 64 x 64): 5.4 million shared atomics, 669,922
 * table atomics, 4,096 on the hottest address; bound by DRAM, 41.7 us, its floor. Before:
 * 42 million table atomics, 3.7 million on one address, 1,885 us (45 times the floor).
 * Registers (sm_90, ptxas 13.0): 48 under __launch_bounds__(256, 5), 56 without, no
 * spill: 5 blocks of 256 threads an SM, with 75 KiB of slots (94 registers before).
 * Launches: 3 (start rows, accumulate, finish rows), as before.
 * Floor: H * W * (4 + intensity bytes) / memory bandwidth: a 2048 x 2048 frame with an
 * f32 image is 32 MiB, 10 us at 3.35 TB/s (H100 SXM). The table (capacity x 96 bytes)
 * is read and written once by the start and finish kernels.
 * The shuffles (most of the about 35 warp instructions a labelled step with intensity, 3
 * without) are counted, since 2026-12-05, as the 32-bit SHFL instructions they are, on the
 * shared-memory pipe (emu/README.md): they made segment shared-bound at 2048^2, 64.73 us
 * against the 52.15 its L2 traffic alone gives (1.8x its floor). Not counted by the
 * emulated estimate: the ballots, the latency of the
 * compare-and-swap before a span's adds, and whether ptxas makes the f64 shared add one
 * instruction or a compare-and-swap loop (the PTX has atom.shared.add.f64; no disassembler
 * was at hand to read the SASS). */
#ifndef PLUME_KERNELS_CUDA_REGIONS_BLOCK_H
#define PLUME_KERNELS_CUDA_REGIONS_BLOCK_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/common/label.h"

/* A block's tile: PLM__REGIONS_TILE_W columns (2 steps of 32 pixels) by
 * PLM__REGIONS_TILE_MIN_H to PLM__REGIONS_TILE_MAX_H rows, as many rows as still leave
 * PLM__REGIONS_WANTED_TILES tiles (blocks to fill a GPU: 256 are about 2 per SM on 132
 * SMs, and a 512 x 512 frame gets them with tiles of 16 rows). The tile's area bounds the
 * packed sums (plm__regions_pack), its sides the 64-bit row and column masks. */
enum {
  PLM__REGIONS_TILE_W = 64,
  PLM__REGIONS_TILE_MIN_H = 4,
  PLM__REGIONS_TILE_MAX_H = 64,
  PLM__REGIONS_WANTED_TILES = 256
};

/* A block's table: PLM__REGIONS_SLOTS slots (2^PLM__REGIONS_SLOT_BITS, 15 KiB of shared
 * memory), a label looked for in PLM__REGIONS_PROBES of them. */
enum { PLM__REGIONS_SLOT_BITS = 8, PLM__REGIONS_SLOTS = 1 << PLM__REGIONS_SLOT_BITS };
enum { PLM__REGIONS_PROBES = 8 };

/* The tiles of a frame: `across` per tile row, `rows` frame rows each, `count` in all,
 * numbered row of tiles by row of tiles. */
struct plm__regions_tiling {
  int64_t across, rows, count;
};

static inline PLM_HD plm__regions_tiling plm__regions_tiling_of(int64_t height, int64_t width) {
  plm__regions_tiling t;
  t.across = (width + PLM__REGIONS_TILE_W - 1) / PLM__REGIONS_TILE_W;
  const int64_t least = PLM__REGIONS_TILE_MIN_H, most = PLM__REGIONS_TILE_MAX_H,
                rows = t.across * height / PLM__REGIONS_WANTED_TILES;
  t.rows = rows < least ? least : rows > most ? most : rows;
  t.count = t.across * ((height + t.rows - 1) / t.rows);
  return t;
}

/* What pixels of one label add to the label's row, in frame coordinates. */
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

/* The intensity terms a lane holds while its span's are reduced: sum v, max v, sum v c. */
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

/* ---- a tile's slots ----------------------------------------------------------------------- */

/* The packed sums of pixels of a tile: their count (the area), the sum of their columns and
 * the sum of their rows, both counted from the tile's first, in fields of
 * PLM__REGIONS_AREA_BITS, PLM__REGIONS_SUM_BITS and PLM__REGIONS_SUM_BITS bits, low to high.
 * No field of a whole tile's sums reaches the next field, so packed values add as their
 * fields do, exactly. */
enum { PLM__REGIONS_AREA_BITS = 13, PLM__REGIONS_SUM_BITS = 18 };
static_assert(PLM__REGIONS_TILE_W * PLM__REGIONS_TILE_MAX_H < (1 << PLM__REGIONS_AREA_BITS),
              "a tile's area fits its field");
static_assert(PLM__REGIONS_TILE_W * PLM__REGIONS_TILE_MAX_H * (PLM__REGIONS_TILE_MAX_H - 1) <
                      (1 << PLM__REGIONS_SUM_BITS) &&
                  PLM__REGIONS_TILE_W * PLM__REGIONS_TILE_MAX_H * (PLM__REGIONS_TILE_W - 1) <
                      (1 << PLM__REGIONS_SUM_BITS),
              "a tile's coordinate sums fit their fields");
static_assert(PLM__REGIONS_TILE_W <= 64 && PLM__REGIONS_TILE_MAX_H <= 64,
              "a tile's rows and columns are bits of 64-bit masks");

static inline PLM_HD uint64_t plm__regions_pack(uint64_t area, uint64_t sum_col, uint64_t sum_row) {
  return area | sum_col << PLM__REGIONS_AREA_BITS |
         sum_row << (PLM__REGIONS_AREA_BITS + PLM__REGIONS_SUM_BITS);
}

/* What pixels of one label add to its slot, in the tile's coordinates. */
struct plm__regions_patch {
  uint64_t sums;       /* plm__regions_pack */
  uint64_t rows, cols; /* bit k set: the label has pixels on the tile's row (column) k */
  double sum, max, sum_row_weighted, sum_col_weighted; /* as plm__regions_part's */
};

/* A block's table in shared memory: slot s is free while label[s] is 0, else holds
 * label[s]'s patch, field by field (each field an array: lanes at different slots touch
 * different banks). */
struct plm__regions_slots {
  uint64_t sums[PLM__REGIONS_SLOTS], rows[PLM__REGIONS_SLOTS], cols[PLM__REGIONS_SLOTS];
  double sum[PLM__REGIONS_SLOTS], max[PLM__REGIONS_SLOTS];
  double sum_row_weighted[PLM__REGIONS_SLOTS], sum_col_weighted[PLM__REGIONS_SLOTS];
  int32_t label[PLM__REGIONS_SLOTS];
};

static inline PLM_HD void plm__regions_atomic_add_bits(uint64_t *address, uint64_t value) {
#ifdef __CUDA_ARCH__
  atomicAdd((unsigned long long *)address, (unsigned long long)value);
#else
  __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
#endif
}

static inline PLM_HD void plm__regions_atomic_or(uint64_t *address, uint64_t bits) {
#ifdef __CUDA_ARCH__
  atomicOr((unsigned long long *)address, (unsigned long long)bits);
#else
  __atomic_fetch_or(address, bits, __ATOMIC_RELAXED);
#endif
}

/* *key = label if *key is 0; returns *key from before. */
static inline PLM_HD int32_t plm__regions_atomic_claim(int32_t *key, int32_t label) {
#ifdef __CUDA_ARCH__
  return atomicCAS(key, 0, label);
#else
  int32_t before = 0;
  __atomic_compare_exchange_n(key, &before, label, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return before;
#endif
}

/* The slot of `label` (> 0), claimed if none holds it yet: one of the PLM__REGIONS_PROBES
 * slots from its hash on (Fibonacci hashing spreads consecutive labels, which neighbouring
 * components have); -1 when other labels hold all of them. */
static inline PLM_HD int plm__regions_slot(int32_t *keys, int32_t label) {
  const uint32_t hash = ((uint32_t)label * 2654435761u) >> (32 - PLM__REGIONS_SLOT_BITS);
  for (int k = 0; k < PLM__REGIONS_PROBES; k++) {
    const int slot = (int)((hash + (uint32_t)k) & (PLM__REGIONS_SLOTS - 1));
    const int32_t held = plm__regions_atomic_claim(&keys[slot], label);
    if (held == 0 || held == label) return slot;
  }
  return -1;
}

static inline PLM_HD void plm__regions_slot_add(plm__regions_slots *slots, int slot,
                                                const plm__regions_patch &p, bool with_intensity) {
  plm__regions_atomic_add_bits(&slots->sums[slot], p.sums);
  plm__regions_atomic_or(&slots->rows[slot], p.rows);
  plm__regions_atomic_or(&slots->cols[slot], p.cols);
  if (!with_intensity) return;
  plm__regions_atomic_add(&slots->sum[slot], p.sum);
  plm__regions_atomic_max(&slots->max[slot], p.max);
  plm__regions_atomic_add(&slots->sum_row_weighted[slot], p.sum_row_weighted);
  plm__regions_atomic_add(&slots->sum_col_weighted[slot], p.sum_col_weighted);
}

/* Slot `slot` free, its patch adding nothing. */
static inline PLM_HD void plm__regions_slot_empty(plm__regions_slots *slots, int slot) {
  slots->label[slot] = 0;
  slots->sums[slot] = slots->rows[slot] = slots->cols[slot] = 0;
  slots->sum[slot] = slots->sum_row_weighted[slot] = slots->sum_col_weighted[slot] = 0.0;
  slots->max[slot] = -INFINITY;
}

static inline PLM_HD int plm__regions_lowest_bit64(uint64_t bits) {
#ifdef __CUDA_ARCH__
  return __ffsll((long long)bits) - 1;
#else
  return __builtin_ctzll(bits);
#endif
}

static inline PLM_HD int plm__regions_highest_bit64(uint64_t bits) {
#ifdef __CUDA_ARCH__
  return 63 - __clzll((long long)bits);
#else
  return 63 - __builtin_clzll(bits);
#endif
}

/* Patch p of `label` (rows and cols not 0), of the tile whose first pixel is (r0, c0), in
 * the frame's coordinates. */
static inline PLM_HD plm__regions_part plm__regions_part_of(int32_t label,
                                                            const plm__regions_patch &p, int64_t r0,
                                                            int64_t c0) {
  const uint64_t area_mask = (1ull << PLM__REGIONS_AREA_BITS) - 1,
                 sum_mask = (1ull << PLM__REGIONS_SUM_BITS) - 1;
  plm__regions_part part;
  part.label = label;
  part.area = (int64_t)(p.sums & area_mask);
  part.sum_col = c0 * part.area + (int64_t)(p.sums >> PLM__REGIONS_AREA_BITS & sum_mask);
  part.sum_row =
      r0 * part.area + (int64_t)(p.sums >> (PLM__REGIONS_AREA_BITS + PLM__REGIONS_SUM_BITS));
  part.min_row = r0 + plm__regions_lowest_bit64(p.rows);
  part.max_row = r0 + plm__regions_highest_bit64(p.rows);
  part.min_col = c0 + plm__regions_lowest_bit64(p.cols);
  part.max_col = c0 + plm__regions_highest_bit64(p.cols);
  part.sum = p.sum;
  part.max = p.max;
  part.sum_row_weighted = p.sum_row_weighted;
  part.sum_col_weighted = p.sum_col_weighted;
  return part;
}

/* ---- a block's tile ------------------------------------------------------------------------ */

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

static inline PLM_HD uint32_t plm__regions_popcount(uint32_t bits) {
#ifdef __CUDA_ARCH__
  return (uint32_t)__popc(bits);
#else
  return (uint32_t)__builtin_popcount(bits);
#endif
}

/* The sum of the indices of the set bits: index bit b of each, by its count. */
static inline PLM_HD uint32_t plm__regions_index_sum(uint32_t bits) {
  return plm__regions_popcount(bits & 0xaaaaaaaau) + 2 * plm__regions_popcount(bits & 0xccccccccu) +
         4 * plm__regions_popcount(bits & 0xf0f0f0f0u) +
         8 * plm__regions_popcount(bits & 0xff00ff00u) +
         16 * plm__regions_popcount(bits & 0xffff0000u);
}

/* The lanes below `lane`, as bits. */
static inline PLM_HD uint32_t plm__regions_lanes_below(int lane) {
  return (1u << lane) - 1u;
}

/* The first head above `lane` (32 if none): where the span that `lane` is in ends. */
static inline PLM_HD int plm__regions_span_end(uint32_t heads, int lane) {
  const uint32_t after = heads & ~(0xffffffffu >> (31 - lane));
  return after ? plm__regions_lowest_bit(after) : 32;
}

/* The terms of each lane's span, in the span's head (other lanes: partial terms). Lane
 * l holds those of lanes [l, min(l + 2^k, end)) after step k, since lane l + 2^k, when
 * in the span, holds those of the next 2^k lanes of it. */
template <class Warp>
static inline PLM_HD plm__regions_terms plm__regions_reduce_span(const Warp &warp,
                                                                 plm__regions_terms t, int end) {
  const int lane = warp.lane();
  for (int offset = 1; offset < 32; offset *= 2) {
    const plm__regions_terms next = warp.shuffle(t, lane + offset < 32 ? lane + offset : lane);
    if (lane + offset < end) t = plm__regions_terms_add(t, next);
  }
  return t;
}

/* Where a block's tile lies in its frame: rows [r0, r1), columns [c0, c1). */
struct plm__regions_tile_place {
  int64_t r0, r1, c0, c1;
};

static inline PLM_HD plm__regions_tile_place plm__regions_place(plm__regions_tiling tiling,
                                                                int64_t height, int64_t width,
                                                                int64_t tile) {
  plm__regions_tile_place t;
  t.r0 = tile / tiling.across * tiling.rows;
  t.c0 = tile % tiling.across * PLM__REGIONS_TILE_W;
  t.r1 = t.r0 + tiling.rows < height ? t.r0 + tiling.rows : height;
  t.c1 = t.c0 + PLM__REGIONS_TILE_W < width ? t.c0 + PLM__REGIONS_TILE_W : width;
  return t;
}

/* The step of 32 pixels from (r, step) of tile t: its spans into the slots (or, when they
 * overflow, the table). Every lane of the warp calls it with the same arguments. */
template <class Warp, typename T>
PLM_HD void plm__regions_step(const Warp &warp, const int32_t *labels, const T *intensity,
                              double *table, plm__regions_slots *slots, int64_t rows, int64_t width,
                              const plm__regions_tile_place &t, int64_t r, int64_t step) {
  const int lane = warp.lane();
  const bool with_intensity = intensity != NULL;
  const int64_t c = step + lane, i = r * width + c;
  int32_t label = c < t.c1 ? labels[i] : 0;
  if (label < 1 || label > rows) label = 0;
  const uint32_t labelled = warp.ballot(label != 0);
  if (!labelled) return;
  const uint32_t before = labelled & plm__regions_lanes_below(lane);
  const int32_t previous = warp.shuffle(label, before ? plm__regions_highest_bit(before) : lane);
  const bool head = label != 0 && (!before || previous != label);
  const uint32_t heads = warp.ballot(head);
  const int end = plm__regions_span_end(heads, lane);
  plm__regions_terms terms = {0.0, -INFINITY, 0.0};
  if (with_intensity) {
    /* Every lane in the frame loads, as for the labels: one request of the step's pixels,
     * whichever of them are labelled. */
    const double v = c < t.c1 ? (double)intensity[i] : 0.0;
    if (label) terms = plm__regions_terms{v, v, v * (double)c};
    terms = plm__regions_reduce_span(warp, terms, end);
  }
  if (!head) return;
  /* The span's pixels: its labelled lanes, every one of them of its label. */
  const uint32_t pixels = labelled & ~plm__regions_lanes_below(lane) &
                          (end < 32 ? plm__regions_lanes_below(end) : 0xffffffffu);
  const uint64_t area = plm__regions_popcount(pixels), row = (uint64_t)(r - t.r0),
                 column = (uint64_t)(step - t.c0); /* the tile's, of the step's lane 0 */
  plm__regions_patch patch;
  patch.sums = plm__regions_pack(area, area * column + plm__regions_index_sum(pixels), area * row);
  patch.rows = 1ull << row;
  patch.cols = (uint64_t)pixels << column;
  patch.sum = terms.sum;
  patch.max = terms.max;
  patch.sum_row_weighted = (double)r * terms.sum;
  patch.sum_col_weighted = terms.sum_col;
  const int slot = plm__regions_slot(slots->label, label);
  if (slot >= 0)
    plm__regions_slot_add(slots, slot, patch, with_intensity);
  else
    plm__regions_write(table, plm__regions_part_of(label, patch, t.r0, t.c0), with_intensity);
}

/* Every slot free; the block's threads call it together, then a barrier. */
template <class Block>
PLM_HD void plm__regions_slots_start(const Block &block, plm__regions_slots *slots) {
  for (int s = block.thread(); s < PLM__REGIONS_SLOTS; s += block.threads())
    plm__regions_slot_empty(slots, s);
}

/* Accumulate tile `tile` of a frame (labels and intensity, or NULL, of height x width) into
 * the table's rows for labels 1..rows, through the block's slots, free on entry and on
 * return; every thread of the block calls it with the same arguments (blocks of whole
 * warps). Warp w takes the tile's steps w, w + warps, ... (a row's steps one after another). */
template <class Block, class Warp, typename T>
PLM_HD void plm__regions_tile(const Block &block, const Warp &warp, const int32_t *labels,
                              const T *intensity, double *table, plm__regions_slots *slots,
                              int64_t rows, int64_t height, int64_t width,
                              plm__regions_tiling tiling, int64_t tile) {
  const plm__regions_tile_place t = plm__regions_place(tiling, height, width, tile);
  const int row_steps = (int)((t.c1 - t.c0 + 31) / 32), steps = (int)(t.r1 - t.r0) * row_steps;
  const int warps = block.threads() / 32;
  for (int k = block.thread() / 32; k < steps; k += warps)
    plm__regions_step(warp, labels, intensity, table, slots, rows, width, t, t.r0 + k / row_steps,
                      t.c0 + (int64_t)(k % row_steps) * 32);
  block.sync();
  for (int s = block.thread(); s < PLM__REGIONS_SLOTS; s += block.threads()) {
    const int32_t label = slots->label[s];
    if (!label) continue;
    const plm__regions_patch patch = {slots->sums[s],
                                      slots->rows[s],
                                      slots->cols[s],
                                      slots->sum[s],
                                      slots->max[s],
                                      slots->sum_row_weighted[s],
                                      slots->sum_col_weighted[s]};
    plm__regions_write(table, plm__regions_part_of(label, patch, t.r0, t.c0), intensity != NULL);
    plm__regions_slot_empty(slots, s);
  }
  block.sync();
}

#endif /* PLUME_KERNELS_CUDA_REGIONS_BLOCK_H */

/* kernels/cuda/cfar.cu: cell-averaging CFAR on the GPU. Windows up to 97 (the default is 15),
 * and up to 127 (BAND_WINDOW_MOST) where a block may take 128.0 KiB of shared memory (sm_80,
 * sm_90: in_bands, by the device information the op packs), take one kernel for a whole stack
 * of frames and no scratch:
 *   band            a block of 64 threads (two warps) per strip of 256 columns of a band of
 *                   rows, four consecutive columns a thread: each column's k (its window
 *                   sum, less the window sum 2R + 1 columns to its left, with two columns'
 *                   guard sums) kept in its thread's registers and moved down by four
 *                   exchanges of ring cells a row, then the running sum of k along the row
 *                   (the warps' lanes scanned by shuffles, a carry between the warps) being
 *                   each pixel's reference sums; with a hold, each pixel's mask decided in
 *                   the same pass (kernels/cuda/cfar_bands.h, whose essay has the design).
 * Larger windows, whose strips would put out few columns, take summed-area tables of
 * whole frames in the scratch, several frames at once (frames_at_once: as many as 24 MiB
 * of tables hold, at least one), five kernels for them (a hold, six), each grid a row of
 * blocks per frame:
 *   row_sums        a block per table row: the row's running sums of each cell's components
 *                   (v, v^2 and, for f32, 1 when finite: kernels/common/cfar.h), as many
 *                   columns at a time as the block's threads (the warps that cover a row,
 *                   at most 256): a shuffle scan in each warp, the warps' totals added in
 *                   order, a carry from chunk to chunk; table row 0 is written 0;
 *   column_totals,  the running sums down the columns, in tiles of 32 columns by 64 rows
 *   column_carries, (a segment of 8 rows a thread): each tile's totals, then the carries
 *   column_scan     down the tiles' last rows, then each tile's rows (tile_totals,
 *                   tile_carries and tile_scan below);
 *   pixels          a thread a pixel reading the eight corners of its window's and its
 *                   guard's boxes from the tables (plm__cfar_pixel, kernels/common/cfar.h).
 *
 * The column pass's cost. Its floor is reading and writing each table entry once: 16 bytes
 * an entry, (h + 1)(w + 1) entries a table, 2 tables (u8, u16) or 3 (f32). On an H100
 * (3.35 TB/s): 8.4 MB, 2.5 us at 512^2 u8 (12.6 MB, 3.8 us f32); 537 MB, 160 us at 4096^2
 * u8 (806 MB, 240 us f32).
 *   Before (one kernel, column_sums): a thread per table column, ceil((w + 1) / 256) blocks
 *   of 256 (3 at 512^2, 17 at 4096^2: a few SMs of 132), each thread walking all h rows,
 *   each row's load waiting on the previous row's store (the sums may alias): a dependent
 *   chain of h load-add-stores per table (512 at 512^2, 4096 at 4096^2). The bytes were
 *   the floor's; the time was the chain's (by hand: hundreds of microseconds at 512^2).
 *   After (three kernels): column_totals and column_scan run ceil((w + 1) / 32) x
 *   ceil(h / 64) blocks of 256 (17 x 8 = 136 at 512^2, 129 x 64 = 8256 at 4096^2), each
 *   thread loading its 8 rows independently (no store between them) and the block adding
 *   its 8 segments' totals through shared memory; column_carries is a thread a column
 *   over the tiles' last rows only, a chain of ceil(h / 64) (8 at 512^2, 64 at 4096^2).
 *   Bytes: the totals read the tables (1), the carries read and write 1/64 of them, the
 *   scan reads and writes the rest (63/64 each, plus 1/64 of carries read): about 3.05
 *   times the tables' bytes against the floor's 2, so 1.5x the floor, and one launch more.
 *   Figures by hand from the code: these kernels serve windows past the bands' (127 on
 *   sm_80 and sm_90, 97 elsewhere; 45 until 2026-12-07), and bench_ops' cfar (window 15)
 *   takes the bands, so no GPU has timed them yet (bench_ops' cfar_w129_stack takes them to
 *   the next, and cfar_w127 on a device that gives a block 99 KiB).
 *
 * The pixel pass's cost. Its floor is reading each table entry once, the frame and the
 * output: 8 bytes a table (2 or 3) plus 4 + 1 bytes a pixel (f32 to a mask). Emulated
 * estimates for an H100 SXM, not measurements (bench_ops --op cfar --emulated-cost, f32,
 * window 15, guard 5: docs/benchmarks.md):
 *   Before (pixels_kernel for every window): a thread's eight corners in each table are
 *   eight coalesced loads from the L2, 192 bytes a pixel for f32 (the corners of a
 *   pixel's boxes are its own: no two pixels share one), against 24 from DRAM. The
 *   pixels 10.2 us l2-bound against a floor of 2.28 at 512^2 (52.4 MB from the L2),
 *   176.9 against 36.3 at 2048^2 (839 MB), 658.2 against 145.3 at 4096^2 (3.36 GB); the
 *   op 16.97 us l2-bound against 8.27 (2.1x), 285.8 against 132.0 (2.2x), 1100.4
 *   against 527.9 (2.08x).
 *   Then (pixel_tiles_kernel, windows up to 45, until the bands took them: commit
 *   deb4c74 has it): each table's entries under a 32 x 32 tile's boxes copied once to
 *   shared memory, 2.2 entries a pixel a table at window 15; the op 9.82 us (1.19x),
 *   159.1 (1.21x) and 741.7 dram-bound (1.40x) at 512^2, 2048^2 and 4096^2. Windows past
 *   the bands take pixels_kernel and its eight loads a pixel a table (a tile's span would
 *   pass 48 KiB: a 287 x 287 span is 644 KiB).
 *
 * The bands' cost. They read the frame and write the output, nothing else: their floor is the
 * op's input and output alone, 5 bytes a pixel for f32 to a mask (1.3 MB, 0.39 us at 512^2; 84
 * MB, 25 us at 4096^2 on an H100). Their bound is the shared-memory pipe's
 * (kernels/cuda/cfar_bands.h has the design). A warp's row (128 columns, four a lane, each
 * column's k in its thread's registers) stores its entering cells to the ring and loads each
 * column's own leaving cell and the entering and leaving cells of the three other columns of
 * its k: 8 requests a column of the lanes, each meeting every bank once, 0.25 wavefronts a
 * column. Across, 24 shuffles a warp's row scan the lanes' totals (two doubles: 0.19 a
 * column), the pixels' own values take 4 requests per 128 columns, each thread's aligned 4 of
 * outputs a shuffle (the mask's 4 bytes as one word; z's R % 4 floats) and a warp's first
 * lane's outputs passed to the warp before a store and a load (0.05), and a band's first
 * 2R + 1 rows cost each column about 2R + 1 stores and 2R + 4G + 3 loads once. Emulated
 * estimates for an H100 SXM, not measurements (bench_ops --op cfar --emulated-cost, f32 to a
 * mask, window 15, guard 5, 2026-12-07, commit b432e51): 0.58 wavefronts and shuffles an
 * output at 4096^2 (0.48 a column by the design, over 240 outputs of a strip's 256 columns, 18
 * strips for 4096 columns, the last one's second warp idle, and the bands' first rows),
 * shared-bound at 0.86 us at 512^2 (3.36 with the launch; 2.2x the floor), 9.74 at 2048^2
 * (1.56x; 12.24 with the launch) and 37.21 at 4096^2 (1.49x; 39.71 with the launch, 1.59x).
 * Until then the emulator's count was 6 wavefronts a block's row more than a GPU's (band_kept:
 * its host compiler let a lane left of the strip skip a ring load): 38.64 us at 4096^2 with the
 * groups (commit 217f0bd). With the outputs staged in shared memory, stored and loaded again by
 * the next row's write-out (12 requests per 128 columns where the groups take about 6; the
 * evening of 2026-12-07, commit 8c9a28a): 0.66, and 0.96, 11.01 and 42.28 us (2.5x, 1.76x,
 * 1.69x). With a strip of 128 columns, two a
 * thread, each batch row's k stored to shared memory and read back by threads summing runs
 * of 8 across (the morning of 2026-12-07): 0.82 wavefronts and 0.07 shuffles an output, 1.19, 14.31
 * and 57.22 us (3.0x, 2.3x, 2.3x). With each column's four sums (window, guard; v, v^2) and a
 * thread sliding a run of 8 outputs along them: 1.39 wavefronts an output, 1.61, 22.28 and 89.12 us
 * (4.1x, 3.6x, 3.6x). Before, running sums across each warp's 64 columns (commit 7f64d98):
 * 1.23 wavefronts and 0.70 shuffles a pixel, 2.14, 31.09 and 124.38 us (5.5x, 5.0x, 5.0x). A
 * thread a column (commit deb4c74) took 1.26 wavefronts and 1.41 shuffles a pixel: 2.93 and
 * 42.59 us at 512^2 and 2048^2 (7.5x, 6.8x). Before, the one-pass tiles built summed-area
 * tables of each tile's span in shared memory: 3.0 wavefronts a pixel, 3.02, 49.14 and
 * 197.17 us (7.7x to 7.9x; commit 1525f5c), and a scan's chain of about 16 dependent shared
 * accesses a segment, which an H200 measured at 803.4 us at 4096^2 (bench_ops, f32, window
 * 15, commit d834510: benchmarks/results/2026-12-04-h200-d834510; 18.4 us at 512^2, 193.7 at
 * 2048^2), 4.0 times that estimate. The bands have no such chain: a thread's steps down its
 * columns depend on each other only through additions in registers, its loads run four rows
 * ahead, and the scans across are chains of shuffles whose loads do not wait on them.
 *   What the count leaves out: the FP64 pipe, which f32's sums use (u8 and u16 add integers),
 * and the conversions to double. By the code: a column's row takes four exchanges
 * (band_exchange), each two conversions and six double operations, 24 and 8 a column; across,
 * the thread's total, the scan, the carry and the running sums about 6.5 a column; the
 * moments about 10 and a square root. Over 240 outputs of 256 columns, 4480 columns worked
 * for 4096 and the bands' first rows at 4096^2 (1.14 columns an output): about 45 double
 * operations an output, 45 us at 64 a clock an SM on an H100 (52 with the strip of 128
 * columns, whose cells each took a difference from the level and a square), and about 11
 * conversions (the cells, the pixel and its count), which the CUDA guide rates at 16 a clock
 * an SM on compute capability 9.0: about 45 us. So the three pipes come to 37, 45 and 45 us
 * at 4096^2, each within 2x of the 25 us floor and within a quarter of each other: a GPU will
 * show which binds. Registers (sm_90): 246 for f32 and 202 for u8 under
 * __launch_bounds__(64, 4), 8 warps an SM; 168 for u16 under (64, 6), 12 (under (64, 6)'s
 * 168 f32 spilled 8 bytes for sm_80 and u8 12, with the stage). Each thread has 28 independent ring
 * loads and four columns' exchanges a row to overlap; the estimate does not model occupancy, so the
 * figures at 512^2, where one frame's bands of 8 rows make 192 blocks, are the least certain. Not
 * yet timed on a GPU. The emulator groups a warp's accesses of a site by the k-th execution of each
 * lane, and a loop the host's compiler does not unroll is one site: where lanes skip an access, the
 * next one joins another's request (so the ring's loads are made by every lane: band_ring_cell,
 * whose cell band_kept keeps or not by its bits). What is left, 1.01 wavefronts a request, is the
 * own values' loads, which the host's compiler moves past the test that skips a lane's columns
 * without an output. Precision, f32: around one pixel of 1e6 to
 * 1e8 among values 1 +- 1e-3 (200 x 300, window 15, guard 5; 2026-12-07, a throwaway program
 * against long double), 3,001 of the 60,000 z-scores were wrong at 1e-3 (the strip of 128 columns:
 * 2,637 to 2,652, its running sums carrying the rounding over 114 outputs rather than 240; the four
 * column sums: 382; the CPU's tables of the whole frame: 16,550 to 16,591). Large windows. A strip
 * puts out 256 - R - band_lead columns, rounded down to a multiple of 4, so a column's row of the
 * down phase is shared by fewer outputs as the window grows (192 of 256 columns at window 63, 160
 * at 97), and each band loads the 2R rows above it again. The ring grows by a row a window's row,
 * past the 48 KiB a block has without asking from window 47, where the launch opts in
 * (stack_bands); at 97 a block takes 98.0 KiB, within the 99 KiB of sm_86 and sm_89, at 127 128.0
 * KiB, within sm_80's 163 and sm_90's 227, where the windows between take the bands too. The
 * tables' cost does not grow with the window, but it starts high: 16 to 24 bytes a table entry
 * through their passes and eight corners a pixel a table from the L2. Emulated estimates for an
 * H100 SXM,
 * not measurements (f32 to a mask, guard 5, with the launches; bench_ops --op cfar_w63, and
 * PLUME_EMU_COUNT=1 plume op cfar --window 97 on a uniform random frame, 2026-12-07): window
 * 63, 4.63 us at 512^2 (L2-bound: one frame's bands of 8 rows load the 62 rows above them
 * again), 15.35 at 2048^2 (shared-bound, 2.05x the floor of 6.26 us by the bound) and 49.90
 * at 4096^2 (47.40 by the bound, 1.89x; commit b432e51); with the stage 4.59, 16.90 and 56.10
 * (2.1x); window 97, 20.08 at 2048^2 with the stage. The strip of 128 columns took 5.96 and 26.74
 * at window 63 (3.9x at 2048^2) and 51.16 at 97; the tables 29.26 and 285.0 at 63 (43x) and 283.4
 * at 99. Window 127 (bench_ops --op cfar_w127, 2026-12-07, the evening): 7.86 us at 512^2
 * (L2-bound, 13.7x the floor), 22.81 at 2048^2 (shared-bound, 3.2x) and 75.48 at 4096^2 (72.98 by
 * the bound, 2.91x; shared-bound), where the tables took 28.98, 283.86 and about 1,100: a strip
 * puts out 128 of its 256 columns, so each output carries two columns' down phase: 0.75 wavefronts
 * and 0.39 shuffles an output at 4096^2 (0.58 together at window 15), and the L2 53.2 us, each
 * frame's column loaded by two strips and each band's 126 rows above it again. Not modelled, and a
 * GPU's to show: a block of 128.0 KiB leaves an H100's SM (228 KiB) one block, two warps, half its
 * four schedulers idle (at 97, two blocks; at 63, three). Past 127 R would pass half a warp's
 * columns (band_ring_place) and a strip put out fewer than half its columns, so the tables take
 * them everywhere, and windows 99 to 127 on a device whose block has 99 KiB (sm_86, sm_89, sm_120).
 *
 * The integer tables and sums (u8, u16) are exact in any order, so the bits equal the
 * CPU's; the f32 tables sum their doubles in the scans' orders (rows in chunks of warps,
 * columns in segments, tiles and carries), and the bands add and take them away as the
 * rows pass, not the CPU's left to right and top to bottom: the z-scores agree within the
 * tests' tolerance, not bit for bit, as they did before the tiles.
 *
 * The row and column scans' block and warp logic (table_row, tile_totals, tile_carries and
 * tile_scan, written against the Block and Warp of kernels/cuda/lanes.h) and the bands'
 * (cfar_band) also run on the host in tests/test_cfar_cuda_logic.cpp (ctest
 * cfar_cuda_logic), which compiles this file as plain C++ (hence the __CUDACC__ guards)
 * with emulated threads. The cfar suite passed on cuda on an H200 (the campaign of
 * 2026-12-04, commit d834510) with the one-pass tiles; the bands have not yet run on a
 * GPU. */
#include "kernels/common/cfar.h"
#include "kernels/cuda/cfar_bands.h"
#include "kernels/cuda/launch.h"
#ifdef __CUDACC__
#include "kernels/cuda/lanes.h"
#endif

namespace {

constexpr int kRowThreads = 256;
constexpr int kRowWarps = kRowThreads / 32;
constexpr unsigned kThreads = 256;

/* What row_sums keeps in shared memory: each warp's totals and the carry of the chunks
 * before, per table. */
template <typename T>
struct row_shared {
  T warp_totals[PLM__CFAR_MAX_TABLES][kRowWarps];
  T carry[PLM__CFAR_MAX_TABLES];
};

typedef unsigned long long table_int; /* uint64_t, as a shuffle takes it */

/* Element i's components, one per table (kernels/common/cfar.h). */
template <typename T> /* table_int, uint64_t */
PLM_HD inline void load(const void *frame, int64_t i, plm_dtype dtype, double level,
                        T cell[PLM__CFAR_MAX_TABLES]) {
  (void)level;
  uint64_t c[PLM__CFAR_MAX_TABLES];
  plm__cfar_cell_int(frame, i, dtype, c);
  for (int t = 0; t < PLM__CFAR_MAX_TABLES; t++) cell[t] = c[t];
}
PLM_HD inline void load(const void *frame, int64_t i, plm_dtype dtype, double level,
                        double cell[PLM__CFAR_MAX_TABLES]) {
  (void)dtype;
  plm__cfar_cell_f32(frame, i, level, cell);
}

/* The inclusive running sum of v over the lanes of a warp (every lane calls it). */
template <typename T, class Warp>
PLM_HD T warp_running_sum(const Warp &warp, T v) {
  for (int d = 1; d < 32; d *= 2) {
    const T u = warp.shuffle(v, warp.lane() >= d ? warp.lane() - d : warp.lane());
    if (warp.lane() >= d) v += u;
  }
  return v;
}

/* Table row r (0..height) of a frame, in each of its plm__cfar_tables tables (tables[0],
 * then one every `entries`), by one block of whole warps (at most kRowThreads threads): 0
 * for r = 0, else the running sums of image row r - 1's components, with entry 0 = 0. */
template <typename T, class Block, class Warp>
PLM_HD void table_row(const Block &block, const Warp &warp, const void *frame, int64_t width,
                      plm_dtype dtype, double level, int64_t r, int64_t entries, T *tables,
                      row_shared<T> *shared) {
  const int64_t stride = width + 1;
  const int count = plm__cfar_tables(dtype);
  T *row = tables + r * stride;
  if (r == 0) {
    for (int64_t c = block.thread(); c < stride; c += block.threads())
      for (int t = 0; t < count; t++) row[t * entries + c] = 0;
    return;
  }
  const int w = block.thread() / 32, last = block.threads() - 1;
  if (block.thread() == 0)
    for (int t = 0; t < count; t++) {
      row[t * entries] = 0;
      shared->carry[t] = 0;
    }
  block.sync();
  for (int64_t base = 0; base < width; base += block.threads()) {
    const int64_t c = base + block.thread();
    T cell[PLM__CFAR_MAX_TABLES] = {0, 0, 0}, running[PLM__CFAR_MAX_TABLES];
    if (c < width) load(frame, (r - 1) * width + c, dtype, level, cell);
    for (int t = 0; t < count; t++) running[t] = warp_running_sum(warp, cell[t]);
    if (warp.lane() == 31)
      for (int t = 0; t < count; t++) shared->warp_totals[t][w] = running[t];
    block.sync();
    T before[PLM__CFAR_MAX_TABLES];
    for (int t = 0; t < count; t++) {
      before[t] = shared->carry[t];
      for (int k = 0; k < w; k++) before[t] += shared->warp_totals[t][k];
      if (c < width) row[t * entries + c + 1] = before[t] + running[t];
    }
    block.sync(); /* every thread has read the carry and the warps' totals */
    if (block.thread() == last)
      for (int t = 0; t < count; t++) shared->carry[t] = before[t] + running[t];
    block.sync();
  }
}

/* The column pass in tiles. A block of whole warps (kColumnThreads on the GPU) takes 32
 * table columns (a column group) and tile_rows(threads) table rows (a tile): thread t has
 * column 32 * group + t % 32 and segment t / 32 of kSegmentRows rows. Tile k holds table
 * rows 1 + k * rows .. min((k + 1) * rows, height); its last row is the one that carries
 * into the tile below. Three kernels, each over every (group, tile):
 *   column_totals   each tile's sums down its columns, written over its last row;
 *   column_carries  a thread a column: the running sums of the tiles' last rows (tile k's
 *                   last row becomes the final sum down to it);
 *   column_scan     each tile's other rows: the carry (the last row of the tile above, or
 *                   table row 0's zero), the totals of the segments above in the tile, then
 *                   the running sums down the thread's own segment. */
constexpr int kColumnThreads = 256;
constexpr int kSegmentRows = 8;

/* A block's segment totals, one per column and segment. */
template <typename T>
struct column_shared {
  T segment_totals[kColumnThreads / 32][32];
};

PLM_HD inline int64_t tile_rows(int threads) {
  return (int64_t)(threads / 32) * kSegmentRows;
}

/* This thread's part of tile `tile` of column group `group`: its column, the tile's first
 * and last table rows and its segment's first row. */
struct column_place {
  int64_t column, top, last, first;
  int segment, x;
};

template <class Block>
PLM_HD column_place place_in_tile(const Block &block, int64_t height, int64_t group, int64_t tile) {
  column_place p;
  const int64_t rows = tile_rows(block.threads());
  p.x = block.thread() % 32;
  p.segment = block.thread() / 32;
  p.column = group * 32 + p.x;
  p.top = 1 + tile * rows;
  p.last = (tile + 1) * rows < height ? (tile + 1) * rows : height;
  p.first = p.top + (int64_t)p.segment * kSegmentRows;
  return p;
}

/* column_totals for one (group, tile) of each of the `count` tables. */
template <typename T, class Block>
PLM_HD void tile_totals(const Block &block, int64_t height, int64_t width, int64_t group,
                        int64_t tile, int count, T *tables, column_shared<T> *shared) {
  const column_place p = place_in_tile(block, height, group, tile);
  const int64_t stride = width + 1, entries = (height + 1) * stride;
  const bool in_frame = p.column <= width;
  for (int t = 0; t < count; t++) {
    T *table = tables + t * entries, sum = 0;
    for (int64_t r = p.first; in_frame && r < p.first + kSegmentRows && r <= p.last; r++)
      sum += table[r * stride + p.column];
    shared->segment_totals[p.segment][p.x] = sum;
    block.sync();
    if (p.segment == 0 && in_frame) {
      T total = 0;
      for (int k = 0; k < block.threads() / 32; k++) total += shared->segment_totals[k][p.x];
      table[p.last * stride + p.column] = total;
    }
    block.sync(); /* the totals are read before the next table writes them */
  }
}

/* column_carries for column c of each of the `count` tables, tiles of `rows` rows. */
template <typename T>
PLM_HD void tile_carries(int64_t height, int64_t width, int64_t c, int count, int64_t rows,
                         T *tables) {
  const int64_t stride = width + 1, entries = (height + 1) * stride;
  for (int t = 0; t < count; t++) {
    T *table = tables + t * entries, s = 0;
    for (int64_t end = rows;; end += rows) {
      const int64_t last = end < height ? end : height;
      s += table[last * stride + c];
      table[last * stride + c] = s;
      if (last == height) break;
    }
  }
}

/* column_scan for one (group, tile) of each of the `count` tables: every row but the
 * tile's last, which column_carries has made final and the tile below reads. */
template <typename T, class Block>
PLM_HD void tile_scan(const Block &block, int64_t height, int64_t width, int64_t group,
                      int64_t tile, int count, T *tables, column_shared<T> *shared) {
  const column_place p = place_in_tile(block, height, group, tile);
  const int64_t stride = width + 1, entries = (height + 1) * stride;
  const bool in_frame = p.column <= width;
  for (int t = 0; t < count; t++) {
    T *table = tables + t * entries, own[kSegmentRows], sum = 0;
    for (int i = 0; i < kSegmentRows; i++) {
      const int64_t r = p.first + i;
      own[i] = in_frame && r < p.last ? table[r * stride + p.column] : (T)0;
      sum += own[i];
    }
    shared->segment_totals[p.segment][p.x] = sum;
    block.sync();
    if (in_frame) {
      T running = table[(p.top - 1) * stride + p.column];
      for (int k = 0; k < p.segment; k++) running += shared->segment_totals[k][p.x];
      for (int i = 0; i < kSegmentRows && p.first + i < p.last; i++) {
        running += own[i];
        table[(p.first + i) * stride + p.column] = running;
      }
    }
    block.sync(); /* the totals are read before the next table writes them */
  }
}

/* The tables' path takes a stack's frames several at once, each with its own tables in
 * the scratch, so that each of its launches covers them all: as many frames as
 * kTableBytesAtOnce of tables hold (plm__cfar_scratch_bytes a frame), at least one, at most
 * the stack's and a grid's rows. 24 MiB is about half the 50 MB L2 of an H100 or an H200,
 * so that the set's tables, written by row_sums and read again by the four launches after
 * it, may stay in the L2 from launch to launch, beside the frames' pixels (an assumption:
 * the emulator's count starts each launch with an empty L2, so its estimate sees only the
 * launches saved). Three 512^2 f32 frames at once (19 MB), five of u8 or u16; 15 of 256^2
 * f32.
 * A launch a frame was most of a stack of small frames' time. 16 frames of 512^2 f32 at
 * window 63 (bench_ops' cfar_w63_stack at 2048^2, before the bands took window 63) took
 * 80 launches, 200 us of an H100's launch costs against a largest bound of 268 us; sets
 * of 2^18 table entries (a wave of an H100's threads in pixels_kernel) left each 512^2
 * frame a set of its own; by bytes, 6 sets, 30 launches, 343 us in place of 468 (the
 * emulated estimate for an H100 SXM, not a measurement; docs/benchmarks.md, "cfar in
 * bands"). */
constexpr int64_t kTableBytesAtOnce = (int64_t)24 << 20;
constexpr int64_t kMostGridRows = 65535; /* CUDA's gridDim.y: a frame's blocks a row each */

PLM_HD inline int64_t frames_at_once(const plm__cfar_args &args) {
  int64_t fit = kTableBytesAtOnce / (int64_t)plm__cfar_scratch_bytes(&args);
  if (fit > kMostGridRows) fit = kMostGridRows;
  return fit < 1 ? 1 : fit < args.frames ? fit : args.frames;
}

/* The tables of the g-th of the frames at once in the scratch, after those of the frames
 * before it (plm__cfar_scratch_bytes a frame). */
PLM_HD inline void *frame_tables(const plm__cfar_args &args, int64_t g) {
  return (char *)args.scratch + g * plm__cfar_scratch_bytes(&args);
}

/* The scratch the cuda kernels take (plm__cfar_cuda_scratch_bytes): none for the bands (on
 * the op's device: in_bands), else the tables of the frames at once, frame_tables(args, g) for
 * g below frames_at_once. */
PLM_HD inline size_t scratch_bytes(const plm__cfar_args &args) {
  return in_bands(args) ? 0 : (size_t)frames_at_once(args) * plm__cfar_scratch_bytes(&args);
}

/* row_sums' block: the warps that cover a frame's row, at most kRowThreads threads (a
 * block of kRowThreads gave a 128-wide frame's rows twice the threads they load, a 16-wide
 * frame's eight times). Rows of 32 or fewer columns get a warp a block, and an H100's 32
 * blocks an SM then hold half its threads: still more of them at work than 256 a block,
 * seven eighths idle. */
PLM_HD inline int row_threads(const plm__cfar_args &args) {
  const int64_t warps = (args.width + 31) / 32;
  return warps < kRowWarps ? (int)warps * 32 : kRowThreads;
}

#ifdef __CUDACC__
/* The tables' kernels take frames first .. first + gridDim.y - 1 of the stack at once
 * (frames_at_once), frame first + g in the blocks of blockIdx.y = g, its tables at
 * frame_tables(args, g). Block b of a frame takes table rows b, b + blocks, ...: uniform
 * across the block. */
template <typename T>
__global__ void __launch_bounds__(kRowThreads) row_sums_kernel(plm__cfar_args args, int64_t first) {
  __shared__ row_shared<T> shared;
  const plm__cuda_block block;
  const plm__cuda_warp warp;
  const int64_t entries = plm__cfar_table_entries(&args);
  const void *frame = plm__cfar_frame_in(&args, first + blockIdx.y);
  const double level = plm__cfar_level(frame, args.dtype);
  T *const tables = (T *)frame_tables(args, blockIdx.y);
  for (int64_t r = blockIdx.x; r <= args.height; r += gridDim.x)
    table_row(block, warp, frame, args.width, args.dtype, level, r, entries, tables, &shared);
}

/* The column tiles of a frame's tables: column groups of 32 by tiles of rows. */
PLM_HD inline int64_t column_groups(const plm__cfar_args &args) {
  return (args.width + 1 + 31) / 32;
}
PLM_HD inline int64_t column_tiles(const plm__cfar_args &args) {
  return column_groups(args) *
         ((args.height + tile_rows(kColumnThreads) - 1) / tile_rows(kColumnThreads));
}

/* Block b of a frame takes (column group, tile) pairs b, b + blocks, ...: uniform across
 * the block. */
template <typename T>
__global__ void __launch_bounds__(kColumnThreads) column_totals_kernel(plm__cfar_args args) {
  __shared__ column_shared<T> shared;
  const plm__cuda_block block;
  const int count = plm__cfar_tables(args.dtype);
  const int64_t groups = column_groups(args), tiles = column_tiles(args);
  T *const tables = (T *)frame_tables(args, blockIdx.y);
  for (int64_t b = blockIdx.x; b < tiles; b += gridDim.x)
    tile_totals(block, args.height, args.width, b % groups, b / groups, count, tables, &shared);
}

template <typename T>
__global__ void column_carries_kernel(plm__cfar_args args) {
  const int count = plm__cfar_tables(args.dtype);
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  T *const tables = (T *)frame_tables(args, blockIdx.y);
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c <= args.width; c += step)
    tile_carries(args.height, args.width, c, count, tile_rows(kColumnThreads), tables);
}

template <typename T>
__global__ void __launch_bounds__(kColumnThreads) column_scan_kernel(plm__cfar_args args) {
  __shared__ column_shared<T> shared;
  const plm__cuda_block block;
  const int count = plm__cfar_tables(args.dtype);
  const int64_t groups = column_groups(args), tiles = column_tiles(args);
  T *const tables = (T *)frame_tables(args, blockIdx.y);
  for (int64_t b = blockIdx.x; b < tiles; b += gridDim.x)
    tile_scan(block, args.height, args.width, b % groups, b / groups, count, tables, &shared);
}

/* A thread a pixel on the tables: plm__cfar_pixel (windows past the bands'), or with
 * Held the hold's second pass, plm__cfar_hold_pixel (a kernel of its own, so that the hold
 * adds no register to the pixel kernels). */
template <bool Held>
__global__ void pixels_kernel(plm__cfar_args args, int64_t first) {
  const int64_t count = args.height * args.width;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const void *frame_in = plm__cfar_frame_in(&args, first + blockIdx.y);
  void *frame_out = plm__cfar_frame_out(&args, first + blockIdx.y);
  const void *tables = frame_tables(args, blockIdx.y);
  const double level = plm__cfar_level(frame_in, args.dtype);
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
    if (Held)
      plm__cfar_hold_pixel(&args, frame_in, frame_out, tables, level, i / args.width,
                           i % args.width);
    else
      plm__cfar_pixel(&args, frame_in, frame_out, tables, level, i / args.width, i % args.width);
  }
}

/* Block (x, y), two warps, takes frame y's (strip, band) pairs x, x + gridDim.x, ..., and so
 * frames y, y + gridDim.y, ... (cfar_frame_bands, kernels/cuda/cfar_bands.h): T the frame's
 * element type, S the sums'; band_shared_bytes of shared memory. Six blocks (12 warps) an SM
 * by registers for u16 (168 a thread); four (8 warps) for f32 and u8, which under 168 spill
 * for sm_80 (8 and 12 bytes) and take 241 and 196 without (kernels/cuda/register_budgets.txt). */
template <typename T>
constexpr int kBandBlocksPerSm = std::is_same<T, uint16_t>::value ? 6 : 4;
template <typename T, typename S>
__global__ void __launch_bounds__(BAND_THREADS, kBandBlocksPerSm<T>)
    band_kernel(plm__cfar_args args, int rows) {
  extern __shared__ __align__(16) unsigned char band_bytes[];
  const plm__cuda_block block;
  const plm__cuda_warp warp;
  for (int64_t f = blockIdx.y; f < args.frames; f += gridDim.y)
    cfar_frame_bands<T, S>(block, warp, args, f, blockIdx.x, gridDim.x, rows, band_bytes);
}

/* Every frame's outputs in one pass, one launch for the stack (band_kernel), T the frame's
 * element type, S the sums'. */
template <typename T, typename S>
plm_status stack_bands(cudaStream_t s, const plm__cfar_args *args) {
  const int rows = band_rows(*args);
  const dim3 grid(plm__cuda_grid_x(band_blocks(*args, rows)), plm__cuda_grid_yz(args->frames));
  const size_t shared = band_shared_bytes<S>(args->window);
  const cudaError_t err = plm__cuda_opt_in_shared((const void *)band_kernel<T, S>, shared);
  if (err != cudaSuccess) return plm__cuda_call_failed(err, "cfar band_kernel's shared memory");
  band_kernel<T, S><<<grid, BAND_THREADS, shared, s>>>(*args, rows);
  return plm__cuda_check_launch("cfar band_kernel");
}

/* The outputs of frames first .. first + frames - 1 from their tables (windows past the
 * bands'), a thread a pixel; with a hold, that pass at min(k, hold_k), then the
 * second pass (kernels/common/cfar.h). */
plm_status table_outputs(cudaStream_t s, const plm__cfar_args *args, int64_t first,
                         int64_t frames) {
  const dim3 grid(plm__cuda_blocks(args->height * args->width, kThreads), (unsigned)frames);
  pixels_kernel<false><<<grid, kThreads, 0, s>>>(plm__cfar_first_pass(args), first);
  const plm_status status = plm__cuda_check_launch("cfar pixels_kernel");
  if (status != PLM_OK || !plm__cfar_holds(args)) return status;
  pixels_kernel<true><<<grid, kThreads, 0, s>>>(*args, first);
  return plm__cuda_check_launch("cfar pixels_kernel<true>, the hold's second pass");
}

/* The tables of frames first .. first + frames - 1, of entry type T. */
template <typename T>
plm_status fill_tables(cudaStream_t s, const plm__cfar_args *args, int64_t first, int64_t frames) {
  const dim3 rows(plm__cuda_blocks(args->height + 1, 1), (unsigned)frames);
  row_sums_kernel<T><<<rows, row_threads(*args), 0, s>>>(*args, first);
  plm_status status = plm__cuda_check_launch("cfar row_sums_kernel");
  if (status != PLM_OK) return status;
  const dim3 tiles(plm__cuda_blocks(column_tiles(*args), 1), (unsigned)frames);
  column_totals_kernel<T><<<tiles, kColumnThreads, 0, s>>>(*args);
  status = plm__cuda_check_launch("cfar column_totals_kernel");
  if (status != PLM_OK) return status;
  const dim3 columns(plm__cuda_blocks(args->width + 1, kThreads), (unsigned)frames);
  column_carries_kernel<T><<<columns, kThreads, 0, s>>>(*args);
  status = plm__cuda_check_launch("cfar column_carries_kernel");
  if (status != PLM_OK) return status;
  column_scan_kernel<T><<<tiles, kColumnThreads, 0, s>>>(*args);
  return plm__cuda_check_launch("cfar column_scan_kernel");
}
#endif

}  // namespace

#ifdef __CUDACC__
extern "C" size_t plm__cfar_cuda_scratch_bytes(const plm__cfar_args *args) {
  return scratch_bytes(*args);
}

extern "C" plm_status plm__cfar_cuda(void *stream, const plm__cfar_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  if (in_bands(*args))
    return args->dtype == PLM_DTYPE_U8    ? stack_bands<uint8_t, uint32_t>(s, args)
           : args->dtype == PLM_DTYPE_U16 ? stack_bands<uint16_t, uint64_t>(s, args)
                                          : stack_bands<float, double>(s, args);
  /* The tables' path, frames_at_once frames at a time, their tables in the scratch, which the
   * op sized by the same args (plm__cfar_cuda_scratch_bytes): none would mean a caller packed
   * them apart. */
  if (!args->scratch)
    return plm__fail_raw(PLM_ERR_INTERNAL,
                         "cfar: window %d takes the summed-area tables on this device, but the "
                         "op was given no scratch for them",
                         args->window);
  const int64_t at_once = frames_at_once(*args);
  for (int64_t first = 0; first < args->frames; first += at_once) {
    const int64_t frames = at_once < args->frames - first ? at_once : args->frames - first;
    plm_status status = args->dtype == PLM_DTYPE_F32
                            ? fill_tables<double>(s, args, first, frames)
                            : fill_tables<table_int>(s, args, first, frames);
    if (status != PLM_OK) return status;
    status = table_outputs(s, args, first, frames);
    if (status != PLM_OK) return status;
  }
  return PLM_OK;
}
#endif

/* kernels/cuda/cfar.cu: cell-averaging CFAR on the GPU, frame by frame. Windows up to 29
 * (BAND_WINDOW_MOST; the default is 15) take one kernel a frame and no scratch:
 *   band            a block per strip of 128 columns of a band of rows: each column's sums
 *                   over the window's and the guard's rows kept in registers as the rows
 *                   pass, then summed across the columns through running sums in shared
 *                   memory; with a hold, each pixel's mask decided in the same pass
 *                   (kernels/cuda/cfar_bands.h, whose essay has the design).
 * Larger windows, whose strips would put out few columns, take five kernels a frame (a
 * hold, six) on summed-area tables of the whole frame in the scratch:
 *   row_sums        a block per table row: the row's running sums of each cell's components
 *                   (v, v^2 and, for f32, 1 when finite: kernels/common/cfar.h), ROW_THREADS
 *                   columns at a time (a shuffle scan in each warp, the warps' totals added
 *                   in order, a carry from chunk to chunk); table row 0 is written 0;
 *   column_totals,  the running sums down the columns, in tiles of 32 columns by 64 rows
 *   column_carries, (a segment of 8 rows a thread): each tile's totals, then the carries
 *   column_scan     down the tiles' last rows, then each tile's rows (tile_totals,
 *                   tile_carries and tile_scan below);
 *   pixel_tiles     a block per 32 x 32 pixels: each table's entries under the tile's
 *                   boxes copied once to shared memory, then plm__cfar_pixel's arithmetic
 *                   (kernels/common/cfar.h) on the eight corners of the window's and the
 *                   guard's boxes from the copy (pixel_tile below); windows past 45, whose
 *                   copy would pass 48 KiB, go to pixels, a thread a pixel reading the
 *                   corners from the tables (plm__cfar_pixel itself).
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
 *   Figures by hand from the code: these kernels serve windows past 29, and bench_ops'
 *   cfar (window 15) takes the bands, so no GPU has timed them yet.
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
 *   After (pixel_tiles_kernel): a tile's span is (32 + window)^2 entries at most, each
 *   loaded once: (47 / 32)^2 = 2.2 entries a pixel a table at window 15, in rows of 47
 *   misaligned entries (6.4 sectors a request). The pixels 3.06 us l2-bound at 512^2
 *   (14.4 MB from the L2; 1.34x), 50.2 at 2048^2 (1.38x), 299.6 dram-bound at 4096^2
 *   (2.06x); the op 9.82 us (1.19x), 159.1 (1.21x) and 741.7 dram-bound (1.40x), now
 *   bound by the tables' four passes (rows, totals, scan, pixels: the floor counts
 *   each) as much as by the pixels. At 4096^2, 517 MB of the pixels' bytes are fetched
 *   again: the halos of tiles whose neighbours ran long before in the emulator's random
 *   block order (a GPU's, row by row, would mostly find them in the L2: a row of tiles
 *   holds 6.8 MB of spans); without them the pixels are 201.6 us l2-bound (1.39x).
 *   Shared memory: eight 8-byte loads a pixel a table (2 wavefronts a warp, no
 *   conflict) and the copy's stores, 1.92 wavefronts a request, below the L2 bound.
 *   Registers: 75 (f32) and 80 (u8, u16), 3 blocks (24 warps) per SM, each thread's
 *   four pixels' ring sums held across the tables' copies
 *   (kernels/cuda/register_budgets.txt). Windows past 45 still cost the eight loads a
 *   pixel a table (a span would pass 48 KiB: a 287 x 287 span is 644 KiB); no bench_ops
 *   workload uses one.
 *
 * The bands' cost. They read the frame and write the output, nothing else: their floor is
 * the op's input and output alone, 5 bytes a pixel for f32 to a mask (1.3 MB, 0.39 us at
 * 512^2; 84 MB, 25 us at 4096^2 on an H100). Their bound is the shared memory's, counted
 * a warp's row (32 columns) at a time: the ring's store of the row entering and loads of
 * the three leaving or entering the guard (4 wavefronts: 4-byte elements or fewer), the
 * four running sums' stores (8: 8-byte entries take 2 wavefronts), each pixel's eight
 * running sums (16) with, where its window or guard spans two warps, a warp's total (4
 * requests, up to 8 wavefronts: a warp's lanes may read two warps' totals, 32 entries
 * apart, in the same banks), and its own value from the ring (1): 33 to 37 wavefronts,
 * and a band's first 2R rows stored again, against the 114 outputs of 128 columns at
 * window 15. Emulated estimates for an H100 SXM, not measurements (bench_ops --op cfar
 * --emulated-cost, f32, window 15, guard 5, commit deb4c74): 1.26 wavefronts an output
 * pixel, 1.38 us shared-bound at 512^2 (3.5x the floor; 320 blocks of bands of 8 rows),
 * 20.16 at 2048^2 (3.2x), 80.65 at 4096^2 (3.2x); the L2 below (each pixel loaded 1.12
 * times by the strips' sides and 1.23 by the bands' first rows: 27.5 us at 4096^2).
 * Before, the one-pass tiles built summed-area tables of each tile's span in shared memory:
 * 3.0 wavefronts a pixel, 3.02, 49.14 and 197.17 us (7.7x to 7.9x; commit 1525f5c), and a
 * scan's chain of about 16 dependent shared accesses a segment, which an H200 measured at
 * 803.4 us at 4096^2 (bench_ops, f32, window 15, commit d834510: benchmarks/results/
 * 2026-12-04-h200-d834510; 18.4 us at 512^2, 193.7 at 2048^2), 4.0 times that estimate.
 * The bands have no such chain: a thread's steps down its column depend on each other
 * only through four additions in registers, and its loads are BAND_BATCH rows ahead. What
 * the count leaves out: the running sums across a warp are five shuffles a sum (40
 * shuffle instructions a warp's row for four 8-byte sums, 1.4 an output pixel), which a
 * GPU issues at 32 lanes a clock an SM, as it does shared-memory wavefronts, so a GPU may
 * take up to twice the count; nor the FP64 pipe, which f32's sums use: about 60 double
 * operations an output (the cells' conversions and squares, the sums' moves, the scans,
 * the boxes, the moments), at 64 lanes a clock an SM on an H100 about 70 us at 4096^2,
 * near the shared memory's bound (u8 and u16 add integers). Not yet timed on a GPU. What
 * would go further: a thread of two columns (half the shuffles); a thread of several
 * columns that sums each row's window across from the raw pixels in shared memory (4-byte
 * reads, no 8-byte sums exchanged: about 0.4 wavefronts a pixel by hand), which for f32
 * would leave the FP64 pipe the bound.
 *
 * The integer tables and sums (u8, u16) are exact in any order, so the bits equal the
 * CPU's; the f32 tables sum their doubles in the scans' orders (rows in chunks of warps,
 * columns in segments, tiles and carries), and the bands add and take them away as the
 * rows pass, not the CPU's left to right and top to bottom: the z-scores agree within the
 * tests' tolerance, not bit for bit, as they did before the tiles.
 *
 * The row and column scans' block and warp logic (table_row, tile_totals, tile_carries and
 * tile_scan, written against the Block and Warp of kernels/cuda/lanes.h), the tiled
 * pixel pass's (pixel_tile) and the bands' (cfar_band) also run on the host in
 * tests/test_cfar_cuda_logic.cpp (ctest cfar_cuda_logic), which compiles this file as plain C++
 * (hence the __CUDACC__ guards) with emulated threads; the cfar suite passed on cuda on an
 * H200 (the campaign of 2026-12-04, commit d834510). */
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

/* The pixel pass in tiles (pixel_tiles_kernel), for windows up to kStagedWindowMost. A
 * block of kTileThreads takes a tile of kTileSide x kTileSide pixels: thread t has column
 * t % 32 and rows t / 32 + 8 k (k < kTileRowsPerThread), so a warp is 32 pixels of a row.
 * Every corner of its pixels' boxes lies in the tile's span: the table entries from
 * (y0 - half, x0 - half) to (y1 + half + 1, x1 + half + 1), clipped to the table, for the
 * tile's first pixel (y0, x0), its last (y1, x1) and half = window / 2 (the guard's box
 * is inside the window's). Table by table, the block copies the span to shared memory
 * (each entry loaded once, a warp a row segment), then each thread takes its pixels' ring
 * sums from the copy and holds them in registers; then the outputs. The entries and the
 * arithmetic are plm__cfar_pixel's, so the bits are too. */
constexpr int kTileSide = 32;
constexpr int kTileThreads = 256;
constexpr int kTileRanks = kTileThreads / 32; /* a tile's rows a block takes at once */
constexpr int kTileRowsPerThread = kTileSide / kTileRanks;
/* The shared memory a block may have without opting in, and the largest odd window whose
 * span ((kTileSide + window)^2 entries of 8 bytes) fits it. */
constexpr int kSpanBytesMost = 48 * 1024;
constexpr int kStagedWindowMost = 45;
static_assert((kTileSide + kStagedWindowMost) * (kTileSide + kStagedWindowMost) * 8 <=
                      kSpanBytesMost &&
                  (kTileSide + kStagedWindowMost + 2) * (kTileSide + kStagedWindowMost + 2) * 8 >
                      kSpanBytesMost,
              "kStagedWindowMost is the largest odd window whose span fits");
/* The tiles' arithmetic within a span is 32-bit (square_in_span): frames of up to 2^30 rows
 * and columns, any that a device holds the tables of. */
constexpr int64_t kStagedSideMost = (int64_t)1 << 30;

/* A tile's span, table rows [row, row + rows) and columns [column, column + columns); in
 * its coordinates (entry (row, column) at (0, 0)), the image's rows [top, bottom) and
 * columns [left, right), which the boxes are clipped to; and this thread's first pixel,
 * (y, x) in the span's coordinates, i in the frame. */
struct tile_place {
  int64_t row, column;
  int rows, columns, top, bottom, left, right;
  int y, x;
  int64_t i;
};

/* Thread thread's place in tile `tile` (row-major over the frame's tiles). */
PLM_HD inline tile_place place_in_frame(const plm__cfar_args &args, int64_t tile, int thread) {
  const int64_t across = (args.width + kTileSide - 1) / kTileSide, half = args.window / 2;
  const int64_t y0 = tile / across * kTileSide, x0 = tile % across * kTileSide;
  const int64_t y1 = (y0 + kTileSide < args.height ? y0 + kTileSide : args.height) - 1;
  const int64_t x1 = (x0 + kTileSide < args.width ? x0 + kTileSide : args.width) - 1;
  const int64_t last_row = y1 + half + 1 < args.height ? y1 + half + 1 : args.height;
  const int64_t last_column = x1 + half + 1 < args.width ? x1 + half + 1 : args.width;
  tile_place p;
  p.row = y0 - half > 0 ? y0 - half : 0;
  p.column = x0 - half > 0 ? x0 - half : 0;
  p.rows = (int)(last_row - p.row + 1);
  p.columns = (int)(last_column - p.column + 1);
  p.top = (int)-p.row;
  p.bottom = (int)(args.height - p.row);
  p.left = (int)-p.column;
  p.right = (int)(args.width - p.column);
  p.y = (int)(y0 - p.row) + thread / 32;
  p.x = (int)(x0 - p.column) + thread % 32;
  p.i = (y0 + thread / 32) * args.width + x0 + thread % 32;
  return p;
}

/* A frame's tiles. */
PLM_HD inline int64_t tile_count(const plm__cfar_args &args) {
  return ((args.height + kTileSide - 1) / kTileSide) * ((args.width + kTileSide - 1) / kTileSide);
}

/* The rows and columns of the largest span of a frame's tiles, and its bytes, for the
 * launch. */
inline void largest_span(const plm__cfar_args &args, int *rows, int *columns) {
  const int64_t side = kTileSide + args.window;
  *rows = (int)(side < args.height + 1 ? side : args.height + 1);
  *columns = (int)(side < args.width + 1 ? side : args.width + 1);
}
inline size_t span_bytes_most(const plm__cfar_args &args) {
  int rows, columns;
  largest_span(args, &rows, &columns);
  return (size_t)rows * (size_t)columns * 8;
}

/* plm__cfar_square of the pixel at (y, x) of a span's coordinates: the same box, moved,
 * in 32-bit arithmetic (ptxas, sm_90: the kernel takes 75 registers for f32 and 80 for u8
 * and u16; 104 and 128 with 64-bit boxes). */
PLM_HD inline plm__cfar_box square_in_span(int y, int x, int side, const tile_place &p) {
  const int half = side / 2;
  const plm__cfar_box b = {
      y - half > p.top ? y - half : p.top, y + half + 1 < p.bottom ? y + half + 1 : p.bottom,
      x - half > p.left ? x - half : p.left, x + half + 1 < p.right ? x + half + 1 : p.right};
  return b;
}

/* Whether this thread's pixel k lies in the frame (a tile may hang over its edges). */
PLM_HD inline bool in_frame(const tile_place &p, int k) {
  return p.y + k * kTileRanks < p.bottom && p.x < p.right;
}

/* A pixel's ring sum in one table (the table types as plm__cfar_pixel reads them: double
 * for f32, uint64_t for u8 and u16), and its d and m from its ring sums and n. */
PLM_HD inline double ring(const double *t, int64_t stride, plm__cfar_box outer,
                          plm__cfar_box guard) {
  return plm__cfar_ring_f64(t, stride, outer, guard);
}
PLM_HD inline uint64_t ring(const uint64_t *t, int64_t stride, plm__cfar_box outer,
                            plm__cfar_box guard) {
  return plm__cfar_ring_int(t, stride, outer, guard);
}
/* One table's ring sums of this thread's pixels (sums[k]: its row k * kTileRanks below its
 * first; none for a pixel outside the frame) from the table's span, held in shared memory
 * at `stride` entries a row (entry (0, 0) the span's first). */
template <typename S>
PLM_HD void span_rings(const plm__cfar_args &args, const tile_place &p, const S *span, int stride,
                       S sums[kTileRowsPerThread]) {
  for (int k = 0; k < kTileRowsPerThread; k++) {
    const int y = p.y + k * kTileRanks;
    if (in_frame(p, k))
      sums[k] = ring(span, stride, square_in_span(y, p.x, args.window, p),
                     square_in_span(y, p.x, args.guard, p));
  }
}

/* One table's ring sums of this thread's pixels (span_rings), through a copy of the
 * table's span in span_copy. */
template <typename S, class Block>
PLM_HD void tile_rings(const Block &block, const plm__cfar_args &args, const tile_place &p,
                       const S *table, S *span_copy, S sums[kTileRowsPerThread]) {
  const int64_t stride = args.width + 1;
  const S *first = table + p.row * stride + p.column;
  for (int r = block.thread() / 32; r < p.rows; r += kTileRanks)
    for (int c = block.thread() % 32; c < p.columns; c += 32)
      span_copy[r * p.columns + c] = first[r * stride + c];
  block.sync();
  span_rings(args, p, span_copy, p.columns, sums);
  block.sync(); /* the copy is read before the next table's overwrites it */
}

/* This thread's pixels' reference cell counts n for u8 and u16: the boxes' areas. */
PLM_HD inline void box_areas(const plm__cfar_args &args, const tile_place &p,
                             uint64_t n[kTileRowsPerThread]) {
  for (int k = 0; k < kTileRowsPerThread; k++) {
    const int y = p.y + k * kTileRanks;
    if (in_frame(p, k))
      n[k] = (uint64_t)(plm__cfar_area(square_in_span(y, p.x, args.window, p)) -
                        plm__cfar_area(square_in_span(y, p.x, args.guard, p)));
  }
}

/* This thread's pixels' reference cell counts n: for f32, the ring sums of the count table
 * (the third of `tables`); for u8 and u16, the boxes' areas. */
template <class Block>
PLM_HD void tile_counts(const Block &block, const plm__cfar_args &args, const tile_place &p,
                        const double *tables, double *span_copy, double n[kTileRowsPerThread]) {
  tile_rings(block, args, p, tables + 2 * plm__cfar_table_entries(&args), span_copy, n);
}
template <class Block>
PLM_HD void tile_counts(const Block &, const plm__cfar_args &args, const tile_place &p,
                        const uint64_t *, uint64_t *, uint64_t n[kTileRowsPerThread]) {
  box_areas(args, p, n);
}

/* Tile `tile` of one frame, by a block of kTileThreads: tables as plm__cfar_pixel takes
 * them, S their entry type; span_copy holds the largest span (span_bytes_most). */
template <typename S, class Block>
PLM_HD void pixel_tile(const Block &block, const plm__cfar_args &args, const void *frame_in,
                       void *frame_out, const S *tables, double level, int64_t tile, S *span_copy) {
  const tile_place p = place_in_frame(args, tile, block.thread());
  const int64_t entries = plm__cfar_table_entries(&args);
  S s1[kTileRowsPerThread], s2[kTileRowsPerThread], n[kTileRowsPerThread];
  tile_rings(block, args, p, tables, span_copy, s1);
  tile_rings(block, args, p, tables + entries, span_copy, s2);
  tile_counts(block, args, p, tables, span_copy, n);
  for (int k = 0; k < kTileRowsPerThread; k++) {
    if (!in_frame(p, k)) continue;
    const int64_t i = p.i + k * kTileRanks * args.width;
    double d, m;
    cfar_moments(args, frame_in, level, i, n[k], s1[k], s2[k], &d, &m);
    plm__cfar_write(&args, frame_out, i, d, m);
  }
}

#ifdef __CUDACC__
/* Block b takes table rows b, b + blocks, ...: uniform across the block. */
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    row_sums_kernel(const void *frame, int64_t height, int64_t width, plm_dtype dtype, T *tables) {
  __shared__ row_shared<T> shared;
  const plm__cuda_block block;
  const plm__cuda_warp warp;
  const double level = plm__cfar_level(frame, dtype);
  const int64_t entries = (height + 1) * (width + 1);
  for (int64_t r = blockIdx.x; r <= height; r += gridDim.x)
    table_row(block, warp, frame, width, dtype, level, r, entries, tables, &shared);
}

/* Block b takes (group, tile) pairs b, b + blocks, ...: uniform across the block. */
template <typename T>
__global__ void __launch_bounds__(kColumnThreads)
    column_totals_kernel(int64_t height, int64_t width, int count, T *tables) {
  __shared__ column_shared<T> shared;
  const plm__cuda_block block;
  const int64_t groups = (width + 1 + 31) / 32,
                tiles = (height + tile_rows(kColumnThreads) - 1) / tile_rows(kColumnThreads);
  for (int64_t b = blockIdx.x; b < groups * tiles; b += gridDim.x)
    tile_totals(block, height, width, b % groups, b / groups, count, tables, &shared);
}

template <typename T>
__global__ void column_carries_kernel(int64_t height, int64_t width, int count, T *tables) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c <= width; c += step)
    tile_carries(height, width, c, count, tile_rows(kColumnThreads), tables);
}

template <typename T>
__global__ void __launch_bounds__(kColumnThreads)
    column_scan_kernel(int64_t height, int64_t width, int count, T *tables) {
  __shared__ column_shared<T> shared;
  const plm__cuda_block block;
  const int64_t groups = (width + 1 + 31) / 32,
                tiles = (height + tile_rows(kColumnThreads) - 1) / tile_rows(kColumnThreads);
  for (int64_t b = blockIdx.x; b < groups * tiles; b += gridDim.x)
    tile_scan(block, height, width, b % groups, b / groups, count, tables, &shared);
}

/* A thread a pixel on the tables: plm__cfar_pixel (windows past kStagedWindowMost), or with
 * Held the hold's second pass, plm__cfar_hold_pixel (a kernel of its own, so that the hold
 * adds no register to the pixel kernels). */
template <bool Held>
__global__ void pixels_kernel(plm__cfar_args args, const void *frame_in, void *frame_out,
                              const void *tables) {
  const double level = plm__cfar_level(frame_in, args.dtype);
  const int64_t count = args.height * args.width;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
    if (Held)
      plm__cfar_hold_pixel(&args, frame_in, frame_out, tables, level, i / args.width,
                           i % args.width);
    else
      plm__cfar_pixel(&args, frame_in, frame_out, tables, level, i / args.width, i % args.width);
  }
}

/* Block b takes tiles b, b + blocks, ...: uniform across the block. */
template <typename S>
__global__ void __launch_bounds__(kTileThreads)
    pixel_tiles_kernel(plm__cfar_args args, const void *frame_in, void *frame_out,
                       const S *tables) {
  extern __shared__ __align__(16) unsigned char span_bytes[];
  const plm__cuda_block block;
  const double level = plm__cfar_level(frame_in, args.dtype);
  const int64_t tiles = tile_count(args);
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x)
    pixel_tile(block, args, frame_in, frame_out, tables, level, tile, (S *)span_bytes);
}

/* Block b takes (strip, band) pairs b, b + blocks, ... of bands of `rows` rows
 * (kernels/cuda/cfar_bands.h): T the frame's element type, S the sums'. Six blocks an SM, as
 * many as f32's shared memory allows: left to ptxas, u8's took 72 registers and spilled. */
template <typename T, typename S>
__global__ void __launch_bounds__(BAND_THREADS, 6)
    band_kernel(plm__cfar_args args, const void *frame_in, void *frame_out, int rows) {
  __shared__ band_memory<S> memory;
  const plm__cuda_block block;
  const plm__cuda_warp warp;
  const double level = plm__cfar_level(frame_in, args.dtype);
  const int64_t blocks = band_blocks(args, rows);
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x)
    cfar_band<T, S>(block, warp, args, (const T *)frame_in, frame_out, level, b, rows, &memory);
}

/* One frame's outputs in one pass (band_kernel), T the frame's element type, S the sums'. */
template <typename T, typename S>
plm_status frame_bands(cudaStream_t s, const plm__cfar_args *args, const void *frame_in,
                       void *frame_out) {
  const int rows = band_rows(*args);
  band_kernel<T, S><<<plm__cuda_blocks(band_blocks(*args, rows), 1), BAND_THREADS, 0, s>>>(
      *args, frame_in, frame_out, rows);
  return plm__cuda_check_launch("cfar band_kernel");
}

/* One frame's outputs from its tables: in tiles through shared memory, or (windows past
 * kStagedWindowMost) a thread a pixel; with a hold, that pass at min(k, hold_k), then the
 * second pass (kernels/common/cfar.h). */
template <typename S>
plm_status frame_pixels(cudaStream_t s, const plm__cfar_args *args, const void *frame_in,
                        void *frame_out) {
  const plm__cfar_args first = plm__cfar_first_pass(args);
  const int64_t count = args->height * args->width;
  plm_status status;
  if (args->window > kStagedWindowMost || args->height >= kStagedSideMost ||
      args->width >= kStagedSideMost) {
    pixels_kernel<false><<<plm__cuda_blocks(count, kThreads), kThreads, 0, s>>>(
        first, frame_in, frame_out, args->scratch);
    status = plm__cuda_check_launch("cfar pixels_kernel");
  } else {
    pixel_tiles_kernel<S>
        <<<plm__cuda_blocks(tile_count(*args), 1), kTileThreads, span_bytes_most(*args), s>>>(
            first, frame_in, frame_out, (const S *)args->scratch);
    status = plm__cuda_check_launch("cfar pixel_tiles_kernel");
  }
  if (status != PLM_OK || !plm__cfar_holds(args)) return status;
  pixels_kernel<true><<<plm__cuda_blocks(count, kThreads), kThreads, 0, s>>>(
      *args, frame_in, frame_out, args->scratch);
  return plm__cuda_check_launch("cfar pixels_kernel<true>, the hold's second pass");
}

/* One frame's tables, of entry type T. */
template <typename T>
plm_status frame_tables(cudaStream_t s, const plm__cfar_args *args, const void *frame) {
  T *tables = (T *)args->scratch;
  row_sums_kernel<T><<<plm__cuda_blocks(args->height + 1, 1), kRowThreads, 0, s>>>(
      frame, args->height, args->width, args->dtype, tables);
  plm_status status = plm__cuda_check_launch("cfar row_sums_kernel");
  if (status != PLM_OK) return status;
  const int count = plm__cfar_tables(args->dtype);
  const int64_t rows = tile_rows(kColumnThreads);
  const int64_t tiles = ((args->width + 1 + 31) / 32) * ((args->height + rows - 1) / rows);
  column_totals_kernel<T><<<plm__cuda_blocks(tiles, 1), kColumnThreads, 0, s>>>(
      args->height, args->width, count, tables);
  status = plm__cuda_check_launch("cfar column_totals_kernel");
  if (status != PLM_OK) return status;
  column_carries_kernel<T><<<plm__cuda_blocks(args->width + 1, kThreads), kThreads, 0, s>>>(
      args->height, args->width, count, tables);
  status = plm__cuda_check_launch("cfar column_carries_kernel");
  if (status != PLM_OK) return status;
  column_scan_kernel<T><<<plm__cuda_blocks(tiles, 1), kColumnThreads, 0, s>>>(
      args->height, args->width, count, tables);
  return plm__cuda_check_launch("cfar column_scan_kernel");
}
#endif

}  // namespace

#ifdef __CUDACC__
extern "C" size_t plm__cfar_cuda_scratch_bytes(const plm__cfar_args *args) {
  return in_bands(*args) ? 0 : plm__cfar_scratch_bytes(args);
}

extern "C" plm_status plm__cfar_cuda(void *stream, const plm__cfar_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  const bool f32 = args->dtype == PLM_DTYPE_F32;
  for (int64_t f = 0; f < args->frames; f++) {
    const void *frame_in = plm__cfar_frame_in(args, f);
    void *frame_out = plm__cfar_frame_out(args, f);
    plm_status status;
    if (in_bands(*args)) {
      status = args->dtype == PLM_DTYPE_U8
                   ? frame_bands<uint8_t, uint32_t>(s, args, frame_in, frame_out)
               : args->dtype == PLM_DTYPE_U16
                   ? frame_bands<uint16_t, uint64_t>(s, args, frame_in, frame_out)
                   : frame_bands<float, double>(s, args, frame_in, frame_out);
      if (status != PLM_OK) return status;
      continue;
    }
    status =
        f32 ? frame_tables<double>(s, args, frame_in) : frame_tables<table_int>(s, args, frame_in);
    if (status != PLM_OK) return status;
    status = f32 ? frame_pixels<double>(s, args, frame_in, frame_out)
                 : frame_pixels<uint64_t>(s, args, frame_in, frame_out);
    if (status != PLM_OK) return status;
  }
  return PLM_OK;
}
#endif

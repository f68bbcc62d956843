/* tests/test_cfar_cuda_logic.cpp: the CUDA cfar kernels' table logic (kernels/cuda/cfar.cu),
 * run on the host, so that a machine without a GPU checks it too.
 *
 * cfar.cu is compiled here as plain C++ (its kernels and launcher are under __CUDACC__).
 * table_row runs for every row of a frame on a block of emulated threads
 * (tests/emulated_lanes.h: fibres, in a shuffled order between barriers and exchanges),
 * with the tables and the block's shared memory scribbled over first, then the column pass
 * as its three kernels run it (tile_totals and tile_scan on every column group and tile,
 * tile_carries on every column between them), with blocks of the same size. The tables must equal
 * plain running sums (exactly for u8 and u16, whose entries are integers; within 1e-9 relative for
 * f32, whose doubles the scan adds in another order), and plm__cfar_pixel on them must give the CPU
 * kernel's outputs: the same bits for u8 and u16, z within 1e-9 and the same mask for f32. Frames
 * of widths around the warp and the block (1, 31, 32, 33, 150, 255, 256, 257, 600), with the row
 * block the launcher gives them (row_threads) and blocks of 256 and of 64 threads (more chunks
 * per row, tiles of 16 rows); heights around the tiles (15 to 17 and 45 at 64
 * threads, 63 to 65 at 256: up to three tiles, the last partial) at width 33 (two column groups,
 * the second of one column); f32 frames also with NaN and infinite pixels, which the tables must
 * leave out (a third table counts the finite cells); the mask also with a hold, as the
 * launcher's two passes make it (the first at min(k, hold_k), then plm__cfar_hold_pixel).
 * Then the bands (cfar_band, kernels/cuda/cfar_bands.h: the one pass for windows up to 127,
 * each column's k moving down the rows, the running sums of k along each row the pixels'
 * reference sums) against the CPU kernel, mask, z and the mask with a hold, on frames
 * around a strip's width (odd widths too, whose rows take a thread's four cells an element at a
 * time where they are not one aligned vector) and a band's height, and their edge cases
 * (check_band_edges: every window, a block's bands in turn, f32's counts switched on mid-band,
 * integer sums at their largest, stacks of frames in one launch). Last, how many frames the tables'
 * launches take at once (frames_at_once), that the scratch the op asks for ends with the last of
 * their tables (scratch_bytes, frame_tables; tests/test_cfar.c runs stacks of several sets on the
 * emulated GPU), and how many threads row_sums gives a row (row_threads). Before all of them, the
 * bands' shared-memory layouts (check_band_layouts): every place inside its row, and each warp
 * request of the bands' phases at the fewest wavefronts the design claims (cfar_bands.h),
 * counted as the emulator counts them.
 * Exit status 0 is success. */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/cfar.cu"
#include "tests/emulated_lanes.h"

namespace {

std::mt19937_64 rng(2020);

struct Frame {
  plm_dtype dtype;
  int64_t h, w;
  std::vector<unsigned char> bytes;
};

/* With non_finite, about one f32 pixel in 37 is NaN, +inf or -inf (not the first, whose
 * value the tables are summed from: a level of 0 would cost the z-scores the precision
 * that the 1e-9 comparison needs; test_cfar covers that fallback). */
Frame random_frame(plm_dtype dtype, int64_t h, int64_t w, bool non_finite) {
  Frame f{dtype, h, w, std::vector<unsigned char>((size_t)(h * w) * 4)};
  for (int64_t i = 0; i < h * w; i++) {
    const uint64_t r = rng();
    if (dtype == PLM_DTYPE_U8) f.bytes[(size_t)i] = (uint8_t)(r % 97 == 0 ? 250 : 100 + r % 20);
    if (dtype == PLM_DTYPE_U16) ((uint16_t *)f.bytes.data())[i] = (uint16_t)r;
    if (dtype == PLM_DTYPE_F32)
      ((float *)f.bytes.data())[i] = 1000.0f + (float)(int64_t)(r % 20001) / 997.0f;
    if (dtype == PLM_DTYPE_F32 && non_finite && i > 0 && r % 37 == 0) {
      const float specials[] = {NAN, INFINITY, -INFINITY};
      ((float *)f.bytes.data())[i] = specials[(r >> 32) % 3];
    }
  }
  return f;
}

/* The args of one frame's launch: in f, out, scratch, factor k 2 and, with a hold, hold_k 1
 * at radius 2. */
plm__cfar_args frame_args(const Frame &f, void *out, void *scratch, int window, int guard,
                          plm_cfar_result output, const uint8_t *hold) {
  plm__cfar_args args = {};
  args.in = f.bytes.data();
  args.out = out;
  args.scratch = scratch;
  args.frames = 1;
  args.height = f.h;
  args.width = f.w;
  args.dtype = f.dtype;
  args.window = window;
  args.guard = guard;
  args.k = 2.0;
  args.output = output;
  args.hold = hold;
  args.hold_k = 1.0;
  args.hold_radius = 2;
  return args;
}

/* The frame's tables (plm__cfar_tables of them) as the kernels fill them, with `row_block`
 * threads per row block and `threads` per column block. */
template <typename T>
std::vector<T> kernel_tables(const Frame &f, int row_block, int threads) {
  const int64_t entries = (f.h + 1) * (f.w + 1);
  const int count = plm__cfar_tables(f.dtype);
  std::vector<T> tables((size_t)(count * entries));
  for (T &t : tables) t = (T)(rng() % 1000); /* scribbled: every entry must be written */
  const double level = plm__cfar_level(f.bytes.data(), f.dtype);
  LaneGroup rows_block(row_block, rng());
  row_shared<T> shared;
  for (int64_t r = 0; r <= f.h; r++) {
    std::memset(&shared, 0x5a, sizeof shared);
    rows_block.run([&](int t) {
      const EmulatedBlock b = {&rows_block, t};
      const EmulatedWarp w = {&rows_block, t};
      table_row(b, w, f.bytes.data(), f.w, f.dtype, level, r, entries, tables.data(), &shared);
    });
  }
  LaneGroup block(threads, rng());
  /* The column pass, kernel by kernel, over every (column group, tile) of blocks of the
   * same size (tiles of tile_rows(threads) rows). */
  const int64_t groups = (f.w + 1 + 31) / 32, rows = tile_rows(threads);
  const int64_t tiles = (f.h + rows - 1) / rows;
  column_shared<T> column;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1)
      for (int64_t c = 0; c <= f.w; c++) tile_carries(f.h, f.w, c, count, rows, tables.data());
    for (int64_t g = 0; g < groups; g++)
      for (int64_t k = 0; k < tiles; k++) {
        std::memset(&column, 0x5a, sizeof column);
        block.run([&](int t) {
          const EmulatedBlock b = {&block, t};
          if (pass == 0)
            tile_totals(b, f.h, f.w, g, k, count, tables.data(), &column);
          else
            tile_scan(b, f.h, f.w, g, k, count, tables.data(), &column);
        });
      }
  }
  return tables;
}

/* Plain running sums, row then column, in T, written out here: of v, v^2 and, for f32,
 * 1 for each finite pixel, a non-finite one counting 0 in every table. */
template <typename T>
std::vector<T> plain_tables(const Frame &f) {
  const int64_t stride = f.w + 1, entries = (f.h + 1) * stride;
  const int count = plm__cfar_tables(f.dtype);
  std::vector<T> tables((size_t)(count * entries), 0);
  const double level = plm__cfar_level(f.bytes.data(), f.dtype);
  for (int64_t r = 1; r <= f.h; r++)
    for (int64_t c = 1; c <= f.w; c++) {
      const int64_t p = (r - 1) * f.w + c - 1;
      T cell[3];
      if (f.dtype == PLM_DTYPE_F32) {
        const float v = ((const float *)f.bytes.data())[p];
        const bool finite = std::isfinite(v);
        cell[0] = finite ? (T)((double)v - level) : (T)0;
        cell[2] = finite ? (T)1 : (T)0;
      } else {
        cell[0] = f.dtype == PLM_DTYPE_U8 ? (T)f.bytes[(size_t)p]
                                          : (T)((const uint16_t *)f.bytes.data())[p];
        cell[2] = 1;
      }
      cell[1] = cell[0] * cell[0];
      const int64_t i = r * stride + c, up = i - stride;
      for (int t = 0; t < count; t++) {
        T *table = tables.data() + t * entries;
        table[i] = cell[t] + table[i - 1] + table[up] - table[up - 1];
      }
    }
  return tables;
}

template <typename T>
int64_t table_mismatches(const std::vector<T> &got, const std::vector<T> &want) {
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); i++) {
    const double a = (double)got[i], b = (double)want[i];
    bad += !(a == b || std::fabs(a - b) <= 1e-9 * std::fmax(1.0, std::fabs(b)));
  }
  return bad;
}

/* plm__cfar_pixel on the kernels' tables against the CPU kernel, for one output. */
template <typename T>
int64_t output_mismatches(const Frame &f, const std::vector<T> &tables, int window, int guard,
                          double k, plm_cfar_result output) {
  const int64_t pixels = f.h * f.w;
  std::vector<unsigned char> gpu((size_t)pixels * 4), cpu((size_t)pixels * 4);
  std::vector<uint64_t> scratch((size_t)(plm__cfar_tables(f.dtype) * (f.h + 1) * (f.w + 1)));
  plm__cfar_args args = frame_args(f, cpu.data(), scratch.data(), window, guard, output, nullptr);
  args.k = k;
  plm__cfar_cpu(&args);
  const double level = plm__cfar_level(f.bytes.data(), f.dtype);
  for (int64_t i = 0; i < pixels; i++)
    plm__cfar_pixel(&args, f.bytes.data(), gpu.data(), tables.data(), level, i / f.w, i % f.w);
  int64_t bad = 0;
  if (output == PLM_CFAR_MASK) {
    /* With a hold (about one pixel in 40, radius 2, hold_k below k): the CUDA launcher's
     * two passes (the first at min(k, hold_k), then pixels_kernel<true>'s) on the kernels'
     * tables against the CPU kernel's. */
    std::vector<uint8_t> hold((size_t)pixels);
    for (auto &h : hold) h = rng() % 40 == 0;
    plm__cfar_args held = args;
    held.hold = hold.data();
    held.hold_k = k / 2;
    held.hold_radius = 2;
    std::vector<unsigned char> cpu_held((size_t)pixels), gpu_held((size_t)pixels);
    held.out = cpu_held.data();
    plm__cfar_cpu(&held);
    const plm__cfar_args first = plm__cfar_first_pass(&held);
    for (int64_t i = 0; i < pixels; i++)
      plm__cfar_pixel(&first, f.bytes.data(), gpu_held.data(), tables.data(), level, i / f.w,
                      i % f.w);
    for (int64_t i = 0; i < pixels; i++)
      plm__cfar_hold_pixel(&held, f.bytes.data(), gpu_held.data(), tables.data(), level, i / f.w,
                           i % f.w);
    for (int64_t i = 0; i < pixels; i++) bad += gpu_held[(size_t)i] != cpu_held[(size_t)i];
  }
  for (int64_t i = 0; i < pixels; i++) {
    if (output == PLM_CFAR_MASK) {
      bad += gpu[(size_t)i] != cpu[(size_t)i];
    } else {
      const float a = ((const float *)gpu.data())[i], b = ((const float *)cpu.data())[i];
      const bool exact = f.dtype != PLM_DTYPE_F32;
      bad += exact ? std::memcmp(&a, &b, sizeof a) != 0
                   : !(std::fabs((double)a - (double)b) <= 1e-9 * std::fmax(1.0, std::fabs(b)));
    }
  }
  return bad;
}

/* cfar_band over every (strip, band) block of each of f's `frames` frames (a stack of
 * f.h / frames rows each), as band_kernel runs it (cfar_frame_bands): on `grid` x
 * `grid_frames` blocks of BAND_THREADS emulated threads (warps of 32), block (x, y) taking
 * frames y, y + grid_frames, ... and in each the blocks x, x + grid, ... (the shared memory
 * scribbled over before each emulated block, not between its bands), the outputs
 * scribbled over first,
 * against the CPU kernel: every output written, the same bits for u8 and u16, z within
 * 1e-9 and the same mask for f32 (its doubles added and taken away as the rows pass, not
 * read from the frame's tables); the mask also with a hold (about one pixel in 40, radius 2,
 * hold_k = k / 2), decided in the same pass. T: the frame's element type, S: the sums'. */
template <typename T, typename S>
int64_t band_mismatches(const Frame &f, int window, int guard, plm_cfar_result output,
                        bool with_hold, int rows, int64_t grid = INT64_MAX, int64_t frames = 1,
                        int64_t grid_frames = 1) {
  const int64_t pixels = f.h * f.w;
  const size_t size = output == PLM_CFAR_Z ? 4 : 1, bytes = (size_t)pixels * size;
  std::vector<unsigned char> banded(bytes, 0xa5), cpu(bytes, 0x5a);
  std::vector<uint8_t> hold((size_t)pixels);
  for (auto &h : hold) h = rng() % 40 == 0;
  plm__cfar_args args =
      frame_args(f, cpu.data(), nullptr, window, guard, output, with_hold ? hold.data() : nullptr);
  args.frames = frames;
  args.height = f.h / frames;
  std::vector<uint64_t> scratch(plm__cfar_scratch_bytes(&args) / 8);
  args.scratch = scratch.data();
  plm__cfar_cpu(&args);
  args.out = banded.data();
  args.scratch = nullptr; /* the bands have no tables */
  std::vector<unsigned char> shared(band_shared_bytes<S>(window));
  LaneGroup block(BAND_THREADS, rng());
  const int64_t blocks = band_blocks(args, rows);
  if (grid > blocks) grid = blocks;
  for (int64_t y = 0; y < grid_frames; y++)
    for (int64_t x = 0; x < grid; x++) {
      for (unsigned char &e : shared) e = (unsigned char)rng();
      block.run([&](int t) {
        const EmulatedBlock eb = {&block, t};
        const EmulatedWarp ew = {&block, t};
        for (int64_t frame = y; frame < frames; frame += grid_frames)
          cfar_frame_bands<T, S>(eb, ew, args, frame, x, grid, rows, shared.data());
      });
    }
  int64_t bad = 0;
  for (int64_t i = 0; i < pixels; i++) {
    if (f.dtype != PLM_DTYPE_F32 || output == PLM_CFAR_MASK) {
      bad += std::memcmp(&banded[(size_t)i * size], &cpu[(size_t)i * size], size) != 0;
    } else {
      const float a = ((const float *)banded.data())[i], b = ((const float *)cpu.data())[i];
      bad += !(std::fabs((double)a - (double)b) <= 1e-9 * std::fmax(1.0, std::fabs(b)));
    }
  }
  return bad;
}

/* The windows of the bands' checks: the smallest, the default, a guard of 1 (its box the
 * pixel alone), and windows whose guard leaves a ring one cell wide, 29 and the largest
 * (their boxes across the one boundary between a strip's two warps of 128 columns, as the
 * default's are for some pixels), and the largest every device takes; bands of the fewest rows
 * and the most (a frame's rows split unevenly between them either way). */
const int kBandWindows[][2] = {{3, 1},
                               {15, 5},
                               {9, 1},
                               {29, 27},
                               {BAND_WINDOW_EVERYWHERE, 5},
                               {BAND_WINDOW_MOST, BAND_WINDOW_MOST - 2}};

/* band_mismatches of one case, reported; the failures (0 or 1). */
template <typename T, typename S>
int check_band_case(const Frame &f, const char *what, int window, int guard, plm_cfar_result output,
                    bool with_hold, int rows, int64_t grid = INT64_MAX, int64_t frames = 1,
                    int64_t grid_frames = 1) {
  const int64_t bad =
      band_mismatches<T, S>(f, window, guard, output, with_hold, rows, grid, frames, grid_frames);
  if (!bad) return 0;
  std::printf(
      "FAIL: %s %s %lldx%lld (%lld frames, grid %lld x %lld), window %d guard %d, bands of %d "
      "rows, %s%s: %lld band outputs differ from the CPU's\n",
      what, plm_dtype_name(f.dtype), (long long)f.h, (long long)f.w, (long long)frames,
      (long long)(grid == INT64_MAX ? -1 : grid), (long long)grid_frames, window, guard, rows,
      output == PLM_CFAR_Z ? "z" : "mask", with_hold ? " with a hold" : "", (long long)bad);
  return 1;
}

template <typename T, typename S>
int check_bands(const Frame &f) {
  int failures = 0;
  for (const auto &wg : kBandWindows)
    for (int rows : {(int)BAND_ROWS_LEAST, (int)BAND_ROWS_MOST})
      for (int variant = 0; variant < 3; variant++)
        failures +=
            check_band_case<T, S>(f, "bands", wg[0], wg[1],
                                  variant == 1 ? PLM_CFAR_Z : PLM_CFAR_MASK, variant == 2, rows);
  return failures;
}

/* The bands' edge cases: every window with the smallest guard and the largest (each ring
 * length, the guard's rows at either end of the ring), z and the mask, on frames one strip
 * and a few columns wide; one block taking several bands in turn (grid-stride), the non-finite
 * pixels in some bands only; a band whose first non-finite pixel comes in its last rows (f32's
 * counts switched on mid-band); and integer sums at their largest (u8 all 255 and 0/255, u16
 * all 65535, the largest window); stacks of 3 frames, each frame's level its own (f32), as one
 * launch takes them: a block's frames in turn where the grid has fewer rows than frames.
 * Returns the failures; *cases counts the frames. */
int check_band_edges(int *cases) {
  int failures = 0;
  for (int window = 3; window <= BAND_WINDOW_MOST; window += 2)
    for (int guard : {1, window - 2}) {
      const Frame u8 = random_frame(PLM_DTYPE_U8, 19, band_outputs(window) + 3, false);
      const Frame f32 = random_frame(PLM_DTYPE_F32, 13, band_outputs(window) + 1, false);
      /* z and the mask: each R % 4 shifts a thread's outputs into the 4s it writes its own
       * way (band_group: shuffles of floats, or a word of bytes) */
      for (plm_cfar_result output : {PLM_CFAR_Z, PLM_CFAR_MASK})
        failures += check_band_case<uint8_t, uint32_t>(u8, "sweep", window, guard, output, false,
                                                       BAND_ROWS_LEAST);
      failures += check_band_case<float, double>(f32, "sweep", window, guard, PLM_CFAR_Z, false,
                                                 BAND_ROWS_LEAST);
      *cases += 3;
    }
  /* The mask where one pixel in 10 stands out (about one output in 10 set, where the frames
   * above set about one in 100): a warp's last lane's group, whose last R % 4 outputs are its
   * own first R % 4 until the next warp's first lane passes them after the next barrier,
   * differs from the CPU's wherever that passing fails; several strips and bands a block
   * (grid-stride), each R % 4, with and without a hold. */
  Frame dense = random_frame(PLM_DTYPE_U8, 40, 600, false);
  for (size_t i = 0; i < (size_t)(dense.h * dense.w); i++)
    dense.bytes[i] = rng() % 10 == 0 ? 250 : (uint8_t)(100 + rng() % 20);
  for (int window : {3, 5, 7, 9, 15, 31, 63, (int)BAND_WINDOW_MOST})
    for (int64_t grid : {(int64_t)1, INT64_MAX}) {
      failures += check_band_case<uint8_t, uint32_t>(dense, "dense mask", window, 1, PLM_CFAR_MASK,
                                                     grid == 1, BAND_ROWS_LEAST, grid);
      (*cases)++;
    }
  Frame strided = random_frame(PLM_DTYPE_F32, 45, 250, false);
  ((float *)strided.bytes.data())[20 * 250 + 60] = NAN;
  ((float *)strided.bytes.data())[41 * 250 + 130] = INFINITY;
  for (int64_t grid : {1, 2, 3}) {
    failures += check_band_case<float, double>(strided, "grid-stride", 15, 5, PLM_CFAR_Z, false,
                                               BAND_ROWS_LEAST, grid);
    failures += check_band_case<float, double>(strided, "grid-stride", BAND_WINDOW_MOST,
                                               BAND_WINDOW_MOST - 2, PLM_CFAR_MASK, true,
                                               BAND_ROWS_LEAST, grid);
  }
  Frame late = random_frame(PLM_DTYPE_F32, BAND_ROWS_MOST, 120, false);
  ((float *)late.bytes.data())[50 * 120 + 40] = NAN;
  for (int window : {3, 15, (int)BAND_WINDOW_MOST})
    failures += check_band_case<float, double>(late, "mid-band non-finite", window, window - 2,
                                               PLM_CFAR_Z, false, BAND_ROWS_MOST);
  *cases += 2;
  /* frames taller than the largest window, so that its boxes' sums are the largest */
  const int64_t largest_rows = BAND_WINDOW_MOST + 3, largest_columns = 130;
  for (int pattern = 0; pattern < 2; pattern++) {
    Frame u8 = random_frame(PLM_DTYPE_U8, largest_rows, largest_columns, false);
    for (size_t i = 0; i < (size_t)(largest_rows * largest_columns); i++)
      u8.bytes[i] = pattern == 0 ? 255 : (uint8_t)((rng() & 1) * 255);
    for (int guard : {1, (int)BAND_WINDOW_MOST - 2}) {
      failures += check_band_case<uint8_t, uint32_t>(u8, "largest sums", BAND_WINDOW_MOST, guard,
                                                     PLM_CFAR_Z, false, BAND_ROWS_LEAST);
      failures += check_band_case<uint8_t, uint32_t>(u8, "largest sums", BAND_WINDOW_MOST, guard,
                                                     PLM_CFAR_MASK, true, BAND_ROWS_MOST);
    }
    (*cases)++;
  }
  Frame u16 = random_frame(PLM_DTYPE_U16, largest_rows, largest_columns, false);
  for (size_t i = 0; i < (size_t)(largest_rows * largest_columns); i++)
    ((uint16_t *)u16.bytes.data())[i] = 65535;
  failures += check_band_case<uint16_t, uint64_t>(u16, "largest sums", BAND_WINDOW_MOST, 1,
                                                  PLM_CFAR_Z, false, BAND_ROWS_LEAST);
  (*cases)++;
  const int64_t stack_rows = 21, stack_width = 130;
  const Frame u16_stack = random_frame(PLM_DTYPE_U16, 3 * stack_rows, stack_width, false);
  Frame f32_stack = random_frame(PLM_DTYPE_F32, 3 * stack_rows, stack_width, false);
  for (int64_t i = stack_rows * stack_width; i < 2 * stack_rows * stack_width; i++)
    ((float *)f32_stack.bytes.data())[i] += 1e5f; /* frame 1's level far from the others' */
  for (int64_t grid_frames : {1, 2, 3}) {
    failures += check_band_case<uint16_t, uint64_t>(u16_stack, "stack", 15, 5, PLM_CFAR_Z, false,
                                                    BAND_ROWS_LEAST, 2, 3, grid_frames);
    failures += check_band_case<float, double>(f32_stack, "stack", 15, 5, PLM_CFAR_Z, false,
                                               BAND_ROWS_LEAST, 2, 3, grid_frames);
    failures += check_band_case<float, double>(f32_stack, "stack", 9, 3, PLM_CFAR_MASK, true,
                                               BAND_ROWS_MOST, INT64_MAX, 3, grid_frames);
  }
  *cases += 6;
  return failures;
}

template <typename T>
int check_frame(const Frame &f, const char *label, int row_block, int threads) {
  const std::vector<T> got = kernel_tables<T>(f, row_block, threads), want = plain_tables<T>(f);
  int failures = 0;
  const int64_t tables_bad = table_mismatches(got, want);
  const int windows[][2] = {{3, 1}, {7, 3}, {31, 9}};
  int64_t outputs_bad = 0;
  for (const auto &wg : windows)
    for (plm_cfar_result output : {PLM_CFAR_MASK, PLM_CFAR_Z})
      outputs_bad += output_mismatches(f, got, wg[0], wg[1], 2.0, output);
  if (tables_bad || outputs_bad) {
    std::printf(
        "FAIL: %s %lldx%lld%s, %d and %d threads: %lld table entries, %lld outputs "
        "differ\n",
        plm_dtype_name(f.dtype), (long long)f.h, (long long)f.w, label, row_block, threads,
        (long long)tables_bad, (long long)outputs_bad);
    failures++;
  }
  return failures;
}

/* How many frames the tables' path takes at once (frames_at_once): as many as 24 MiB of
 * tables hold (8 bytes an entry, 3 tables for f32 and 2 for integers), at least one, at
 * most the stack's and a grid's 65535 rows; and that the scratch holds their tables. */
int check_frames_at_once(int *cases) {
  const struct {
    plm_dtype dtype;
    int64_t frames, h, w, want;
  } expected[] = {
      {PLM_DTYPE_F32, 16, 512, 512, 3},     /* 513 x 513 x 24 = 6,316,056 bytes a frame */
      {PLM_DTYPE_U8, 16, 512, 512, 5},      /* 4,210,704 */
      {PLM_DTYPE_U16, 16, 512, 512, 5},     /* the same */
      {PLM_DTYPE_F32, 16, 256, 256, 15},    /* 257 x 257 x 24 = 1,585,176 */
      {PLM_DTYPE_F32, 300, 4, 1000, 209},   /* 5,005 x 24 = 120,120 */
      {PLM_DTYPE_U16, 400, 4, 1000, 314},   /* 5,005 x 16 = 80,080 */
      {PLM_DTYPE_F32, 2, 4, 1000, 2},       /* the stack's */
      {PLM_DTYPE_F32, 3, 1023, 1023, 1},    /* one frame's tables: exactly 24 MiB */
      {PLM_DTYPE_F32, 3, 4096, 4096, 1},    /* one frame's tables past 24 MiB */
      {PLM_DTYPE_F32, 100000, 1, 1, 65535}, /* 96 bytes: 262,144 fit, a grid's rows do not */
  };
  int failures = 0;
  for (const auto &e : expected) {
    plm__cfar_args args = {};
    args.frames = e.frames;
    args.height = e.h;
    args.width = e.w;
    args.dtype = e.dtype;
    const int64_t got = frames_at_once(args);
    if (got != e.want) {
      std::printf("frames_at_once: %lld frames of %lld x %lld %s: %lld at once, expected %lld\n",
                  (long long)e.frames, (long long)e.h, (long long)e.w, plm_dtype_name(e.dtype),
                  (long long)got, (long long)e.want);
      failures++;
    }
    /* The scratch the op asks for (scratch_bytes, plm__cfar_cuda_scratch_bytes) holds the
     * tables of each of the frames at once where the kernels put them (frame_tables), the
     * last ending where it ends; the bands take none: up to BAND_WINDOW_EVERYWHERE on every
     * device, up to BAND_WINDOW_MOST where a block may take its shared memory (sm_80's 163
     * KiB, sm_90's 227), past it on none. */
    args.guard = 5;
    const struct {
      int window;
      size_t shared_most;
      bool bands;
    } devices[] = {{15, kBandSharedEverywhere, true},
                   {BAND_WINDOW_EVERYWHERE, kBandSharedEverywhere, true},
                   {BAND_WINDOW_EVERYWHERE + 2, kBandSharedEverywhere, false},
                   {BAND_WINDOW_EVERYWHERE + 2, 163 * 1024, true},
                   {BAND_WINDOW_MOST, 163 * 1024, true},
                   {BAND_WINDOW_MOST, band_shared_bytes<double>(BAND_WINDOW_MOST) - 1, false},
                   {47, 48 * 1024, false}, /* a device that gives no more than 48 KiB */
                   {BAND_WINDOW_MOST + 2, 227 * 1024, false}};
    for (const auto &d : devices) {
      args.window = d.window;
      args.shared_per_block = d.shared_most;
      const size_t bands_bytes = scratch_bytes(args);
      if (in_bands(args) != d.bands || (bands_bytes == 0) != d.bands) {
        std::printf(
            "in_bands: window %d where a block may take %zu bytes: %s, %zu bytes of "
            "scratch; expected %s\n",
            d.window, d.shared_most, in_bands(args) ? "bands" : "tables", bands_bytes,
            d.bands ? "the bands" : "the tables");
        failures++;
      }
    }
    args.window = BAND_WINDOW_MOST + 2; /* the tables */
    args.shared_per_block = 227 * 1024;
    const size_t bytes = scratch_bytes(args);
    if (bytes <= (size_t)64 << 20) { /* allocated, not touched */
      unsigned char *const scratch = static_cast<unsigned char *>(std::malloc(bytes));
      args.scratch = scratch;
      const unsigned char *const last = static_cast<unsigned char *>(frame_tables(args, got - 1));
      if (scratch == nullptr || frame_tables(args, 0) != scratch ||
          last + plm__cfar_scratch_bytes(&args) != scratch + bytes) {
        std::printf(
            "scratch_bytes: %lld frames of %lld x %lld %s: %zu bytes do not end with the "
            "tables of frame %lld of %lld at once\n",
            (long long)e.frames, (long long)e.h, (long long)e.w, plm_dtype_name(e.dtype), bytes,
            (long long)got - 1, (long long)got);
        failures++;
      }
      std::free(scratch);
    }
    (*cases)++;
  }
  return failures;
}

/* row_sums' block for a frame's width (row_threads): whole warps that cover the row, at
 * most kRowThreads. */
int check_row_threads(int *cases) {
  const int64_t expected[][2] = {{1, 32},    {32, 32},   {33, 64},    {128, 128},
                                 {129, 160}, {255, 256}, {4096, 256}, {180000, 256}};
  int failures = 0;
  for (const auto &e : expected) {
    plm__cfar_args args = {};
    args.width = e[0];
    if (row_threads(args) != e[1]) {
      std::printf("row_threads: width %lld: %d threads, expected %lld\n", (long long)e[0],
                  row_threads(args), (long long)e[1]);
      failures++;
    }
    (*cases)++;
  }
  return failures;
}

/* The wavefronts of one warp's shared-memory request, as the emulator counts them
 * (emu/count/counters.cpp): the most distinct 4-byte words that one of the 32 banks holds
 * among the bytes the lanes touch. `elements` are the lanes' element indices. */
int request_wavefronts(const std::vector<int> &elements, int element_bytes) {
  std::vector<int64_t> words;
  for (int e : elements)
    for (int64_t w = (int64_t)e * element_bytes / 4;
         w <= ((int64_t)e * element_bytes + element_bytes - 1) / 4; w++)
      words.push_back(w);
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  int per_bank[32] = {0}, most = 1;
  for (int64_t w : words) most = std::max(most, ++per_bank[w % 32]);
  return most;
}

/* A request's wavefronts against the least its bytes allow, reported when more. */
int check_request(const char *what, int window, const std::vector<int> &elements,
                  int element_bytes) {
  if (elements.empty()) return 0;
  const int got = request_wavefronts(elements, element_bytes);
  const int least = ((int)elements.size() * element_bytes + 127) / 128;
  if (got <= least) return 0;
  std::printf("FAIL: bands' layout, %s at window %d: %d wavefronts where %d would do\n", what,
              window, got, least);
  return 1;
}

/* The bands' shared-memory layouts meet each bank once (band_place, cfar_bands.h), for
 * every window and guard and each of a block's warps: the down phase's ring stores of a
 * thread's entering cells and its ring loads of the cells that move its columns' k (its own
 * column's, and the columns 2R + 1, R - G and R + G + 1 to the left: 4-byte cells, one of a
 * lane's columns at a time); the across phase's loads of each output pixel's own value from
 * the ring; and every place inside its row. One failure a kind and window at most. */
int check_band_layouts() {
  int failures = 0;
  for (int c = 0; c < BAND_COLUMNS; c++)
    if (band_place(c) < 0 || band_place(c) >= BAND_COLUMNS) {
      std::printf("FAIL: bands' layout, column %d outside its ring row\n", c);
      return 1;
    }
  for (int window = 3; window <= BAND_WINDOW_MOST; window += 2) {
    const int R = window / 2, lead = band_lead(window), outputs = band_outputs(window);
    if (lead % BAND_PER_THREAD != 0 || outputs % BAND_PER_THREAD != 0 || lead < R ||
        lead + outputs + R > BAND_COLUMNS) {
      std::printf("FAIL: bands' strip at window %d: lead %d, %d outputs\n", window, lead, outputs);
      return 1;
    }
    int bad[2] = {0};
    for (int warp = 0; warp < BAND_WARPS; warp++)
      for (int i = 0; i < BAND_PER_THREAD; i++) {
        /* down: the cells of the columns `offset` left of each lane's, for every guard */
        for (int guard = 1; guard <= window - 2; guard += 2) {
          const int G = guard / 2;
          for (int offset : {0, 2 * R + 1, R - G, R + G + 1}) {
            std::vector<int> cells;
            for (int lane = 0; lane < 32; lane++) {
              const int c = BAND_PER_THREAD * (32 * warp + lane) + i - offset;
              cells.push_back(band_ring_place(c)); /* every lane loads */
            }
            bad[0] |= check_request("ring cells stored and loaded", window, cells, 4);
          }
        }
        /* across: each output's own value from the ring */
        std::vector<int> own;
        for (int lane = 0; lane < 32; lane++)
          own.push_back(band_ring_place(BAND_PER_THREAD * (32 * warp + lane) + i - R));
        bad[1] |= check_request("own values loaded", window, own, 4); /* every lane loads */
      }
    for (int b : bad) failures += b;
  }
  return failures;
}

}  // namespace

int main() {
  int failures = 0, cases = 0;
  /* first, and alone if it fails: a place outside its row would have the bands below
   * write past their shared memory */
  if (check_band_layouts() != 0) {
    std::printf("cfar_cuda_logic: the bands' layouts fail; the frames not run\n");
    return 1;
  }
  const int64_t widths[] = {1, 31, 32, 33, 150, 255, 256, 257, 600};
  for (plm_dtype dtype : {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32})
    for (bool non_finite : {false, true}) {
      if (non_finite && dtype != PLM_DTYPE_F32) continue;
      const char *label = non_finite ? " with non-finite pixels" : "";
      for (int64_t w : widths) {
        /* the row block the launcher gives a frame this wide (row_threads: the warps that
         * cover a row, at most kRowThreads), then rows and columns at 256 and at 64 */
        plm__cfar_args args = {};
        args.width = w;
        const int row_blocks[][2] = {
            {row_threads(args), kColumnThreads}, {kRowThreads, kColumnThreads}, {64, 64}};
        for (const auto &rc : row_blocks) {
          const Frame f = random_frame(dtype, w > 256 ? 3 : 9, w, non_finite);
          failures += dtype == PLM_DTYPE_F32 ? check_frame<double>(f, label, rc[0], rc[1])
                                             : check_frame<table_int>(f, label, rc[0], rc[1]);
          cases++;
        }
      }
      /* Frames around a tile's height (64 rows at 256 threads, 16 at 64): one row short
       * of it, on it, one past it, and (16-row tiles) three tiles, the last partial. */
      for (int threads : {kRowThreads, 64})
        for (int64_t rows : {-1, 0, 1, 29}) {
          if (rows == 29 && threads != 64) continue;
          const int64_t h = tile_rows(threads) + rows;
          const Frame f = random_frame(dtype, h, 33, non_finite);
          failures += dtype == PLM_DTYPE_F32 ? check_frame<double>(f, label, threads, threads)
                                             : check_frame<table_int>(f, label, threads, threads);
          cases++;
        }
    }
  /* The bands, against the CPU kernel: frames around a strip's outputs (band_outputs: 248
   * at window 3, 240 at 15, 208 at 45, 160 at 97, 128 at 127; two strips and a column) and a
   * band's height, and frames around a 32 x 32 tile's side. */
  const int64_t band_sides[][2] = {{1, 1},    {5, 7},   {31, 32},  {65, 97},  {9, 240},  {17, 241},
                                   {70, 248}, {8, 249}, {33, 481}, {66, 100}, {21, 159}, {99, 33},
                                   {101, 65}, {6, 161}, {3, 497},  {12, 128}, {130, 257}};
  for (plm_dtype dtype : {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32})
    for (const auto &hw : band_sides) {
      const bool non_finite = dtype == PLM_DTYPE_F32 && (hw[0] == 65 || hw[0] == 33);
      const Frame f = random_frame(dtype, hw[0], hw[1], non_finite);
      failures += dtype == PLM_DTYPE_U8    ? check_bands<uint8_t, uint32_t>(f)
                  : dtype == PLM_DTYPE_U16 ? check_bands<uint16_t, uint64_t>(f)
                                           : check_bands<float, double>(f);
      cases++;
    }
  failures += check_band_edges(&cases);
  failures += check_frames_at_once(&cases);
  failures += check_row_threads(&cases);
  std::printf("cfar_cuda_logic: %d frames, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}

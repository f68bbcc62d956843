/* tests/test_conv_cuda_logic.cpp: the CUDA conv2d and sobel kernels' per-thread logic
 * (kernels/cuda/conv.cu: stage_tile, conv2d_launch_of, conv2d_place_of,
 * conv2d_thread_sums, copy_sums_row, sobel_stage, sobel_thread_outputs), run on the
 * host, so that a machine without a GPU checks it too.
 *
 * conv.cu is compiled here as plain C++ (its kernels and launchers are under
 * __CUDACC__). stage_tile runs for each thread (tx, ty) of a block in turn, on tiles of
 * the shapes conv2d's launcher stages (as conv2d_launch_of makes them, rows `pitch` apart, for
 * several taps and strides and each block its cuda tunable tile_width gives: 8 x 32, 16 x 16, 32 x
 * 8, 64 x 4; and 256 x 1, a one-row output's) at origins inside, across and outside a frame's
 * edges, for u8, u16 and f32 frames and every border mode. Every element of the tile must be
 * written by exactly one thread, with the value the former loop wrote there (plm__load_border at
 * row idx / cols, column idx % cols of the tile's linear index idx), bit for bit, and no padding
 * column (cols .. pitch) written.
 *
 * conv2d_launch_of: at the default tile_width a 16 x 16 block, each thread summing
 * CONV2D_RUN outputs along its row at stride_x 1 (one otherwise, or where that tile
 * would not fit in shared memory), a tile of (15 stride_y + kh) x ((16 run - 1)
 * stride_x + kw) staged rows `pitch` apart, a pitch whose warp reads hit 32 distinct
 * banks (odd strides); for any width, candidate or not, a block of 256 threads whose
 * width is a power of two; for an output fewer rows tall than the block, a block as
 * tall as the output rounded up to a power of two.
 *
 * The tiled kernel's body, each phase for every thread of the block in turn, as the
 * barriers order them: over every tile of an output (conv2d_place_of), stage the tile
 * (padding and the space past it poisoned with a NaN no frame holds), sum each thread's
 * outputs (conv2d_thread_sums: straight to the output at run 1, else to the tile's sums
 * and copy_sums_row), for shapes whose outputs are not a multiple of the run or the
 * block, every taps' size from 1 x 1 to 31 x 31, strides, paddings, every border, u8,
 * u16 and f32 in. Every output must be written exactly once, bit for bit the value of
 * plm__conv2d_pixel (the CPU's per-pixel conv2d, which adds the terms in the same
 * order); a read of an element not staged reads the poison.
 *
 * Sobel's body the same way (check_sobel): over every 64 x 32 tile of frames smaller than
 * a tile, cut across tiles, and with tiles inside them (staged without the border rule),
 * u8, u16 and f32, every border: each element of the staged tile written by exactly one
 * thread with plm__load_border's bits, each output by exactly one thread with the CPU's
 * bits (the 3 x 3 inputs through the border rule, then the shared taps), none outside
 * its tile. Exit status 0 is success. */
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "kernels/cuda/conv.cu"

namespace {

std::mt19937_64 rng(1717);

struct Frame {
  plm_dtype dtype;
  int64_t h, w;
  std::vector<unsigned char> bytes;
};

Frame random_frame(plm_dtype dtype, int64_t h, int64_t w) {
  Frame f{dtype, h, w, std::vector<unsigned char>((size_t)(h * w) * 4)};
  for (int64_t i = 0; i < h * w; i++) {
    const uint64_t r = rng();
    if (dtype == PLM_DTYPE_U8) f.bytes[(size_t)i] = (uint8_t)r;
    if (dtype == PLM_DTYPE_U16) ((uint16_t *)f.bytes.data())[i] = (uint16_t)r;
    if (dtype == PLM_DTYPE_F32) ((float *)f.bytes.data())[i] = (float)(int64_t)(r % 20001) / 7.0f;
  }
  return f;
}

/* A NaN no frame holds: what a tile holds where nothing was staged. */
float poison() {
  const uint32_t bits = 0x7fc0dead;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

bool is_poison(float value) {
  const float p = poison();
  return std::memcmp(&value, &p, sizeof value) == 0;
}

/* Stage a rows x cols tile at (y0, x0) of f, rows pitch apart, as a bx x by block does;
 * returns the number of elements written other than once or with another value than
 * the former loop's, and of padding elements written. */
int64_t check_tile(const Frame &f, int64_t y0, int64_t x0, int rows, int cols, int pitch,
                   plm_border border, int bx, int by) {
  const size_t n = (size_t)rows * (size_t)pitch;
  std::vector<float> tile(n), former(n);
  std::vector<int> writes(n, 0);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      const int64_t idx = (int64_t)r * cols + c; /* the former loop's linear index */
      former[(size_t)(r * pitch + c)] = plm__load_border(f.bytes.data(), f.dtype, f.h, f.w,
                                                         y0 + idx / cols, x0 + idx % cols, border);
    }
  std::vector<float> mine(n); /* one thread's writes: poison where it wrote nothing */
  for (int ty = 0; ty < by; ty++)
    for (int tx = 0; tx < bx; tx++) {
      std::fill(mine.begin(), mine.end(), poison());
      stage_tile(mine.data(), f.bytes.data(), f.dtype, f.h, f.w, y0, x0, rows, cols, pitch, border,
                 tx, ty, bx, by);
      for (size_t idx = 0; idx < n; idx++)
        if (!is_poison(mine[idx])) {
          writes[idx]++;
          tile[idx] = mine[idx];
        }
    }
  int64_t wrong = 0;
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < pitch; c++) {
      const size_t idx = (size_t)(r * pitch + c);
      if (c >= cols)
        wrong += writes[idx] != 0;
      else if (writes[idx] != 1 || std::memcmp(&tile[idx], &former[idx], sizeof(float)) != 0)
        wrong++;
    }
  return wrong;
}

/* The block widths whose staging is checked: conv2d's tile_width candidates (ops/conv.c;
 * tests/test_tuning.c checks the listing), and 256, a one-row output's 256 x 1. */
const int kStagedWidths[] = {8, 16, 32, 64, 256};

/* The launch of a conv2d of kh x kw taps and strides at tile_width, for an output `ho`
 * rows tall (taller than any block by default). */
conv2d_launch launch_for(int kh, int kw, int stride_y, int stride_x, int tile_width,
                         int64_t ho = 1000, int64_t wo = 0) {
  plm__conv2d_args a = {};
  a.ho = ho;
  a.wo = wo;
  a.kh = kh;
  a.kw = kw;
  a.stride_y = stride_y;
  a.stride_x = stride_x;
  a.cuda_tile_width = tile_width;
  return conv2d_launch_of(&a);
}

/* Whether the 32 lanes of a warp of a block tile_w threads wide, lane l at row l /
 * tile_w and column l % tile_w, reading word row x row_step + column x col_step, read 32
 * distinct banks (one wavefront). */
bool distinct_banks(int tile_w, int64_t row_step, int64_t col_step) {
  bool bank_used[32] = {};
  for (int lane = 0; lane < 32; lane++) {
    const int64_t word = (int64_t)(lane / tile_w) * row_step + (int64_t)(lane % tile_w) * col_step;
    if (bank_used[word % 32]) return false;
    bank_used[word % 32] = true;
  }
  return true;
}

/* The shared memory of a tiled launch whose tile is rows x cols floats, rows pitch apart:
 * the taps, the tile, and at run > 1 the tile's sums; past 48 KiB when either side is. */
int64_t smem_of(int kh, int kw, int64_t rows, int64_t cols, int64_t pitch, int run, int tile_w,
                int tile_h) {
  const int64_t most = 48 * 1024 / 4;
  if (rows > most || cols > most) return 48 * 1024 + 1;
  const int64_t sums = run > 1 ? (int64_t)tile_w * run * tile_h : 0;
  return (rows * pitch + kh * kw + sums) * 4;
}

/* What conv2d_launch_of promises of launch l for kh x kw taps at strides (sy, sx), its
 * block given; prints and returns the failures. */
int check_tile_of(const conv2d_launch &l, int kh, int kw, int sy, int sx, const char *what) {
  const int64_t rows = (int64_t)(l.tile_h - 1) * sy + kh;
  const int64_t cols = ((int64_t)l.tile_w * l.run - 1) * sx + kw;
  /* A run where the window slides and its tile fits (with a pitch of cols .. cols + 31:
   * between the two, either); one output a thread otherwise. */
  const int64_t run_cols = ((int64_t)l.tile_w * CONV2D_RUN - 1) * sx + kw;
  const auto run_smem = [&](int64_t pitch) {
    return smem_of(kh, kw, rows, run_cols, pitch, CONV2D_RUN, l.tile_w, l.tile_h);
  };
  int run = l.run;
  if (sx != 1 || run_smem(run_cols) > 48 * 1024) run = 1;
  if (sx == 1 && run_smem(run_cols + 31) <= 48 * 1024) run = CONV2D_RUN;
  bool ok = (l.run == 1 || l.run == CONV2D_RUN) && l.run == run && l.tile_rows == rows &&
            l.tile_cols == cols;
  ok = ok && l.smem == smem_of(kh, kw, rows, cols, l.pitch, l.run, l.tile_w, l.tile_h);
  if (l.smem <= 48 * 1024) {
    ok = ok && l.pitch >= cols && l.pitch < cols + 32;
    /* Odd steps: the sums' reads and the staging's writes each one wavefront a warp. */
    if (sy == 1 && (l.run * sx) % 2 == 1)
      ok = ok && distinct_banks(l.tile_w, l.pitch, (int64_t)l.run * sx) &&
           distinct_banks(l.tile_w, l.pitch, 1);
  }
  if (!ok)
    std::printf(
        "conv2d %dx%d strides %d, %d, %s: a %d x %d block, run %d, a %lld x %lld tile "
        "%lld apart, %lld bytes; expected run %d, a %lld x %lld tile  WRONG\n",
        kh, kw, sy, sx, what, l.tile_w, l.tile_h, l.run, (long long)l.tile_rows,
        (long long)l.tile_cols, (long long)l.pitch, (long long)l.smem, run, (long long)rows,
        (long long)cols);
  return ok ? 0 : 1;
}

/* What conv2d_launch_of promises; returns the failures. */
int check_launches() {
  int failures = 0;
  const int taps[][4] = {{1, 1, 1, 1},   {3, 3, 1, 1},   {5, 3, 1, 1},          {7, 7, 2, 2},
                         {3, 9, 3, 1},   {9, 9, 1, 1},   {9, 9, 2, 1},          {1, 31, 1, 1},
                         {31, 31, 1, 1}, {31, 31, 4, 4}, {3, 3, 100000, 100000}};
  for (const auto &k : taps) {
    /* The default: 16 x 16 threads. */
    const conv2d_launch d = launch_for(k[0], k[1], k[2], k[3], PLM__CONV2D_CUDA_TILE_WIDTH);
    if (d.tile_w != 16 || d.tile_h != 16) {
      std::printf("conv2d %dx%d strides %d, %d: the default block is %d x %d, not 16 x 16  WRONG\n",
                  k[0], k[1], k[2], k[3], d.tile_w, d.tile_h);
      failures++;
    }
    for (int width : {-3, 0, 1, 3, 8, 16, 24, 32, 64, 256, 1000}) {
      const conv2d_launch l = launch_for(k[0], k[1], k[2], k[3], width);
      const int expected = width < 1 ? 1 : width > 256 ? 256 : width;
      const bool ok = l.tile_w * l.tile_h == PLM__CONV2D_CUDA_TILE_THREADS &&
                      (l.tile_w & (l.tile_w - 1)) == 0 && l.tile_w <= expected &&
                      2 * l.tile_w > expected;
      if (!ok) {
        std::printf("conv2d %dx%d strides %d, %d, tile_width %d: a %d x %d block  WRONG\n", k[0],
                    k[1], k[2], k[3], width, l.tile_w, l.tile_h);
        failures++;
      }
      failures += check_tile_of(l, k[0], k[1], k[2], k[3], "a tall output");
    }
  }
  /* An output fewer rows tall than the block: a block as tall as the output rounded up
   * to a power of two, as wide as the rest of the 256 threads, whatever tile_width. */
  for (int64_t ho = 1; ho <= 300; ho++)
    for (int width : {1, 8, 16, 64, 256}) {
      const conv2d_launch l = launch_for(3, 31, 1, 1, width, ho);
      const int tall = 256 / (width < 256 ? width : 256);
      int expected_h = tall;
      if (ho < tall)
        for (expected_h = 1; expected_h < ho;) expected_h *= 2;
      if (l.tile_h != expected_h || l.tile_w * l.tile_h != PLM__CONV2D_CUDA_TILE_THREADS) {
        std::printf(
            "conv2d 3x31, an output %lld rows tall, tile_width %d: a %d x %d block, "
            "expected %d rows  WRONG\n",
            (long long)ho, width, l.tile_w, l.tile_h, expected_h);
        failures++;
      }
      failures += check_tile_of(l, 3, 31, 1, 1, "a short output");
    }
  /* An output narrower than a run: one output a thread (the run's other sums would all
   * fall outside it); as wide as a run or wider, or of a width not given (0), the run. */
  for (int64_t wo = 0; wo <= 2 * CONV2D_RUN; wo++) {
    const conv2d_launch l = launch_for(3, 3, 1, 1, PLM__CONV2D_CUDA_TILE_WIDTH, 1000, wo);
    const int expected = wo >= 1 && wo < CONV2D_RUN ? 1 : CONV2D_RUN;
    if (l.run != expected) {
      std::printf("conv2d 3x3, an output %lld columns wide: run %d, expected %d  WRONG\n",
                  (long long)wo, l.run, expected);
      failures++;
    }
  }
  std::printf("conv2d launches: %s\n",
              failures ? "FAILED"
                       : "16 x 16 by default, every width valid, runs where they fit, "
                         "flat blocks for short outputs, one output a thread for narrow ones");
  return failures;
}

/* The outputs of one thread phase of the tiled kernel: every thread (tx, ty) of the block
 * runs `phase` in turn, writing into its own copy of `into` (rows pitch apart, valid_h x
 * valid_w of them used), poisoned; what it wrote is merged into `into` and counted in
 * `writes`. */
template <typename Phase>
void run_phase(const conv2d_launch &l, const conv2d_place &p, std::vector<float> &into,
               std::vector<int> &writes, int64_t pitch, Phase phase) {
  std::vector<float> mine(into.size());
  for (int ty = 0; ty < l.tile_h; ty++)
    for (int tx = 0; tx < l.tile_w; tx++) {
      std::fill(mine.begin(), mine.end(), poison());
      phase(tx, ty, mine.data());
      for (int64_t r = 0; r < (int64_t)into.size() / pitch; r++)
        for (int64_t c = 0; c < pitch; c++) {
          const size_t idx = (size_t)(r * pitch + c);
          if (is_poison(mine[idx])) continue;
          into[idx] = mine[idx];
          /* A write outside the tile's valid outputs counts as a second write. */
          writes[idx] += r < p.valid_h && c < p.valid_w ? 1 : 2;
        }
    }
}

/* The tiled kernel's body on the host for the output of a (whose in, taps and out are
 * ignored: f and taps given), each phase for every thread in turn, over every tile;
 * returns the outputs not written exactly once with plm__conv2d_pixel's bits, or -1
 * when the launch is the direct kernel's. */
int64_t check_outputs(const Frame &f, const std::vector<float> &taps, plm__conv2d_args a) {
  a.in = f.bytes.data();
  a.taps = taps.data();
  a.n = 1;
  a.h = f.h;
  a.w = f.w;
  a.dtype = f.dtype;
  a.ho = (f.h + 2 * a.pad_y - a.kh) / a.stride_y + 1;
  a.wo = (f.w + 2 * a.pad_x - a.kw) / a.stride_x + 1;
  const conv2d_launch l = conv2d_launch_of(&a);
  if (l.smem > 48 * 1024) return -1;
  const int across = l.tile_w * l.run;
  std::vector<int> written((size_t)(a.ho * a.wo), 0);
  std::vector<float> out((size_t)(a.ho * a.wo), poison());
  /* The staged tile with poison past it: a read beyond it is a NaN, never a sum's bits. */
  std::vector<float> tile((size_t)(l.tile_rows * l.pitch + 2 * l.pitch));
  int64_t wrong = 0;
  for (int64_t tile_y = 0; tile_y * l.tile_h < a.ho; tile_y++)
    for (int64_t tile_x = 0; tile_x * across < a.wo; tile_x++) {
      const conv2d_place p = conv2d_place_of(&a, tile_y, tile_x, l.tile_h, across);
      std::fill(tile.begin(), tile.end(), poison());
      for (int ty = 0; ty < l.tile_h; ty++)
        for (int tx = 0; tx < l.tile_w; tx++)
          stage_tile(tile.data(), f.bytes.data(), f.dtype, f.h, f.w, p.y0, p.x0, (int)l.tile_rows,
                     (int)l.tile_cols, (int)l.pitch, a.border, tx, ty, l.tile_w, l.tile_h);
      /* This tile's outputs, across apart (the kernel's out is the frame's, wo apart). */
      std::vector<float> mine((size_t)(l.tile_h * across), poison());
      std::vector<int> writes(mine.size(), 0);
      if (l.run == 1) {
        run_phase(l, p, mine, writes, across, [&](int tx, int ty, float *into) {
          conv2d_thread_sums<1>(taps.data(), tile.data(), (int)l.pitch, a.kh, a.kw, a.stride_y,
                                a.stride_x, p, tx, ty, into, across);
        });
      } else {
        std::vector<float> sums(mine.size(), poison());
        std::vector<int> sum_writes(mine.size(), 0);
        run_phase(l, p, sums, sum_writes, across, [&](int tx, int ty, float *into) {
          conv2d_thread_sums<CONV2D_RUN>(taps.data(), tile.data(), (int)l.pitch, a.kh, a.kw,
                                         a.stride_y, a.stride_x, p, tx, ty, into, across);
        });
        for (size_t idx = 0; idx < sums.size(); idx++)
          wrong += sum_writes[idx] > 1 ? 1 : 0; /* copy_sums_row reads each of them once */
        run_phase(l, p, mine, writes, across, [&](int tx, int ty, float *into) {
          copy_sums_row(sums.data(), across, p, tx, ty, l.tile_w, into, across);
        });
      }
      for (int64_t r = 0; r < l.tile_h; r++)
        for (int64_t c = 0; c < across; c++) {
          const size_t idx = (size_t)(r * across + c);
          if (r >= p.valid_h || c >= p.valid_w) {
            wrong += writes[idx] ? 1 : 0;
            continue;
          }
          const size_t at = (size_t)((p.oy0 + r) * a.wo + p.ox0 + c);
          written[at] += writes[idx];
          out[at] = mine[idx];
        }
    }
  for (int64_t y = 0; y < a.ho; y++)
    for (int64_t x = 0; x < a.wo; x++) {
      const size_t at = (size_t)(y * a.wo + x);
      const float want = plm__conv2d_pixel(&a, 0, y, x);
      if (written[at] != 1 || std::memcmp(&out[at], &want, sizeof want) != 0) wrong++;
    }
  return wrong;
}

/* check_outputs over taps' sizes, strides, paddings, frames and blocks, u8, u16 and f32
 * and every border taking turns; returns the failures. */
int check_sums() {
  const int sizes[][2] = {{1, 1}, {3, 3}, {9, 9}, {5, 3}, {3, 9}, {1, 31}, {31, 1}, {31, 31}};
  const int strides[][2] = {{1, 1}, {2, 1}, {1, 2}, {3, 3}};
  /* Outputs 35 and 120 wide: not a multiple of the run (7) nor of a tile (16 x 7 = 112);
   * 3 rows: a flat block. */
  const int64_t frames[][2] = {{1, 1}, {7, 13}, {40, 35}, {3, 120}, {23, 120}};
  const plm_border borders[] = {PLM_BORDER_ZERO, PLM_BORDER_REPLICATE, PLM_BORDER_REFLECT101};
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  int failures = 0;
  int64_t cases = 0, wrong = 0, runs = 0;
  for (const auto &k : sizes) {
    std::vector<float> taps((size_t)(k[0] * k[1]));
    for (float &t : taps) t = (float)(int64_t)(rng() % 2001 - 1000) / 997.0f;
    for (const auto &stride : strides)
      for (int same : {1, 0})
        for (const auto &size : frames)
          for (int width : {8, 16, 64}) {
            const plm_dtype dtype = dtypes[cases % 3];
            const plm_border border = borders[(cases / 3) % 3];
            cases++;
            plm__conv2d_args a = {};
            a.kh = k[0];
            a.kw = k[1];
            a.stride_y = stride[0];
            a.stride_x = stride[1];
            /* "same", or none (whose output may be empty: then nothing to check). */
            a.pad_y = same ? k[0] / 2 : 0;
            a.pad_x = same ? k[1] / 2 : 0;
            a.border = border;
            a.cuda_tile_width = width;
            if (size[0] + 2 * a.pad_y < a.kh || size[1] + 2 * a.pad_x < a.kw) continue;
            const Frame f = random_frame(dtype, size[0], size[1]);
            const int64_t bad = check_outputs(f, taps, a);
            if (bad < 0) continue; /* the direct kernel: test_conv covers it */
            runs += conv2d_launch_of(&a).run > 1;
            if (bad) {
              std::printf(
                  "conv2d %dx%d strides %d, %d, pad %d, %d, a %lldx%lld frame, "
                  "tile_width %d: %lld outputs wrong  WRONG\n",
                  a.kh, a.kw, a.stride_y, a.stride_x, a.pad_y, a.pad_x, (long long)size[0],
                  (long long)size[1], width, (long long)bad);
              failures++;
              wrong += bad;
            }
          }
  }
  std::printf(
      "conv2d tiles summed on the host: %lld cases (%lld with runs of %d), %lld "
      "outputs wrong\n",
      (long long)cases, (long long)runs, CONV2D_RUN, (long long)wrong);
  return failures + (runs ? 0 : 1);
}

}  // namespace

/* tile_pitch remembers search_tile_pitch's answers (conv2d launches paid the search's
 * 80 us each before): from 4 threads at once, every pitch is the search's, asked first
 * and asked again, for more launch shapes than the memo holds. */
int check_remembered_pitches() {
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&wrong, t] {
      for (int pass = 0; pass < 2; pass++)
        for (int64_t cols = 3 + t; cols < 3 + t + 2 * PITCH_MEMO; cols += 3)
          for (int tile_w : {8, 16, 64})
            if (tile_pitch(cols, tile_w, 1 + t % 2, 7) !=
                search_tile_pitch(cols, tile_w, 1 + t % 2, 7))
              wrong++;
    });
  for (std::thread &thread : threads) thread.join();
  std::printf("remembered pitches: %d differ from the search\n", wrong.load());
  return wrong.load() ? 1 : 0;
}

/* sobel_stage for a frame of f's dtype (the kernel's template argument). */
void sobel_stage_for(const Frame &f, float (*tile)[SOBEL_TILE_COLS], int64_t y0, int64_t x0,
                     plm_border border, int tx, int ty) {
  const void *frame = f.bytes.data();
  if (f.dtype == PLM_DTYPE_U8)
    sobel_stage<PLM_DTYPE_U8>(tile, frame, f.h, f.w, y0, x0, border, tx, ty);
  else if (f.dtype == PLM_DTYPE_U16)
    sobel_stage<PLM_DTYPE_U16>(tile, frame, f.h, f.w, y0, x0, border, tx, ty);
  else
    sobel_stage<PLM_DTYPE_F32>(tile, frame, f.h, f.w, y0, x0, border, tx, ty);
}

/* Sobel's outputs (gx, gy, magnitude) of pixel (y, x) of f, as the CPU's kernel gets
 * them: its 3 x 3 inputs through the border rule, then the shared taps. */
void sobel_reference(const Frame &f, plm_border border, int64_t y, int64_t x, float out[3]) {
  float in[3][3];
  for (int i = 0; i < 3; i++)
    for (int d = 0; d < 3; d++)
      in[i][d] = plm__load_border(f.bytes.data(), f.dtype, f.h, f.w, y - 1 + i, x - 1 + d, border);
  out[0] = plm__sobel_gx(in[0], in[1], in[2]);
  out[1] = plm__sobel_gy(in[0], in[2]);
  out[2] = plm__sobel_magnitude(out[0], out[1]);
}

/* sobel_kernel's body, each phase for every thread of the block in turn, over every tile
 * of f (output frame `frame` of frame + 1): sobel_stage must write every element of the
 * tile exactly once with plm__load_border's value, and sobel_thread_outputs every output
 * exactly once (none outside its tile) with the CPU's bits. Returns the elements wrong. */
int64_t check_sobel_frame(const Frame &f, plm_border border, int64_t frame) {
  const int64_t h = f.h, w = f.w, plane = h * w, size = (frame + 1) * plane;
  std::vector<float> out[3], got[3]; /* each thread's writes (poison elsewhere); all writes */
  std::vector<int> writes((size_t)plane, 0);
  for (int o = 0; o < 3; o++) {
    out[o].assign((size_t)size, poison());
    got[o].assign((size_t)size, poison());
  }
  plm__sobel_args a = {};
  a.gx = out[0].data();
  a.gy = out[1].data();
  a.magnitude = out[2].data();
  a.n = frame + 1;
  a.h = h;
  a.w = w;
  a.dtype = f.dtype;
  a.border = border;
  int64_t wrong = 0;
  float tile[SOBEL_TILE_ROWS][SOBEL_TILE_COLS], mine[SOBEL_TILE_ROWS][SOBEL_TILE_COLS];
  for (int64_t y0 = 0; y0 < h; y0 += SOBEL_H)
    for (int64_t x0 = 0; x0 < w; x0 += SOBEL_W) {
      int staged[SOBEL_TILE_ROWS][SOBEL_TILE_COLS] = {};
      for (int ty = 0; ty < SOBEL_BY; ty++)
        for (int tx = 0; tx < SOBEL_BX; tx++) {
          std::fill(&mine[0][0], &mine[0][0] + SOBEL_TILE_ROWS * SOBEL_TILE_COLS, poison());
          sobel_stage_for(f, mine, y0, x0, border, tx, ty);
          for (int r = 0; r < SOBEL_TILE_ROWS; r++)
            for (int c = 0; c < SOBEL_TILE_COLS; c++)
              if (!is_poison(mine[r][c])) {
                staged[r][c]++;
                tile[r][c] = mine[r][c];
              }
        }
      for (int r = 0; r < SOBEL_TILE_ROWS; r++)
        for (int c = 0; c < SOBEL_TILE_COLS; c++) {
          const float want =
              plm__load_border(f.bytes.data(), f.dtype, h, w, y0 - 1 + r, x0 - 1 + c, border);
          wrong += staged[r][c] != 1 || std::memcmp(&tile[r][c], &want, sizeof want) != 0;
        }
      for (int ty = 0; ty < SOBEL_BY; ty++)
        for (int tx = 0; tx < SOBEL_BX; tx++) {
          sobel_thread_outputs(tile, a, frame, y0, x0, tx, ty);
          for (int64_t y = y0; y < y0 + SOBEL_H && y < h; y++)
            for (int64_t x = x0; x < x0 + SOBEL_W && x < w; x++) {
              const size_t at = (size_t)(frame * plane + y * w + x);
              if (is_poison(out[2][at])) continue;
              writes[(size_t)(y * w + x)]++;
              for (int o = 0; o < 3; o++) {
                got[o][at] = out[o][at];
                out[o][at] = poison();
              }
            }
        }
    }
  for (int64_t y = 0; y < h; y++)
    for (int64_t x = 0; x < w; x++) {
      float want[3];
      sobel_reference(f, border, y, x, want);
      const size_t at = (size_t)(frame * plane + y * w + x);
      wrong += writes[(size_t)(y * w + x)] != 1 || std::memcmp(&got[0][at], &want[0], 4) != 0 ||
               std::memcmp(&got[1][at], &want[1], 4) != 0 ||
               std::memcmp(&got[2][at], &want[2], 4) != 0;
    }
  /* Writes outside a thread's tile stay in out: none may. */
  for (int o = 0; o < 3; o++)
    for (float value : out[o]) wrong += !is_poison(value);
  return wrong;
}

/* check_sobel_frame for frames smaller than a tile, cut across tiles, and wide and tall
 * enough to have tiles inside them (read without the border rule), every dtype and
 * border; the second frame of two for one. Returns the failures. */
int check_sobel() {
  const int64_t sizes[][2] = {{1, 1}, {7, 13}, {33, 65}, {40, 35}, {100, 200}, {257, 255}};
  const plm_border borders[] = {PLM_BORDER_ZERO, PLM_BORDER_REPLICATE, PLM_BORDER_REFLECT101};
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  int64_t frames = 0, inside = 0, wrong = 0;
  for (plm_dtype dtype : dtypes)
    for (const auto &size : sizes) {
      const Frame f = random_frame(dtype, size[0], size[1]);
      for (int64_t y0 = 0; y0 < f.h; y0 += SOBEL_H)
        for (int64_t x0 = 0; x0 < f.w; x0 += SOBEL_W) /* staged without the border rule */
          inside += y0 >= 1 && x0 >= 1 && y0 + SOBEL_H < f.h && x0 + SOBEL_W < f.w;
      for (plm_border border : borders) {
        wrong += check_sobel_frame(f, border, frames % 2);
        frames++;
      }
    }
  std::printf("sobel: %lld frames (%lld tiles inside them), %lld elements wrong\n",
              (long long)frames, (long long)inside, (long long)wrong);
  return wrong || !inside ? 1 : 0;
}

int main() {
  int failures = check_launches() + check_sums() + check_remembered_pitches() + check_sobel();
  struct Shape {
    const char *what;
    int kh, kw, stride_y, stride_x;
  };
  const Shape shapes[] = {
      {"conv2d 1x1", 1, 1, 1, 1}, /* 16 x 112 at 16 x 16 */
      {"conv2d 5x3", 5, 3, 1, 1}, /* 20 x 114 */
      {"conv2d 7x7 stride 2", 7, 7, 2, 2}, {"conv2d 3x9 strides 3, 1", 3, 9, 3, 1},
      {"conv2d 33x33", 33, 33, 1, 1}, /* 48 x 48 */
  };
  const plm_border borders[] = {PLM_BORDER_ZERO, PLM_BORDER_REPLICATE, PLM_BORDER_REFLECT101};
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  const int64_t sizes[][2] = {{1, 1}, {7, 13}, {40, 35}, {64, 64}, {200, 300}};
  for (const Shape &shape : shapes)
    for (int width : kStagedWidths) {
      /* width 256: the flattest block, a one-row output's (launch_for's ho 1). */
      conv2d_launch l = launch_for(shape.kh, shape.kw, shape.stride_y, shape.stride_x, width,
                                   width == 256 ? 1 : 1000);
      const int rows = (int)l.tile_rows, cols = (int)l.tile_cols, pitch = (int)l.pitch;
      int64_t tiles = 0, wrong = 0;
      for (plm_dtype dtype : dtypes)
        for (const auto &size : sizes) {
          const Frame f = random_frame(dtype, size[0], size[1]);
          for (plm_border border : borders)
            for (int64_t y0 :
                 {(int64_t)-shape.kh, (int64_t)-1, (int64_t)0, size[0] / 2, size[0] - 3})
              for (int64_t x0 : {(int64_t)-shape.kw, (int64_t)-1, (int64_t)0, size[1] - 5}) {
                wrong += check_tile(f, y0, x0, rows, cols, pitch, border, l.tile_w, l.tile_h);
                tiles++;
              }
        }
      std::printf(
          "%-26s %3d x %2d block, tiles of %2d x %4d (%4d apart): %lld tiles, %lld "
          "elements wrong\n",
          shape.what, l.tile_w, l.tile_h, rows, cols, pitch, (long long)tiles, (long long)wrong);
      failures += wrong ? 1 : 0;
    }
  std::printf(failures ? "FAILED: %d shapes\n" : "all shapes passed\n", failures);
  return failures ? 1 : 0;
}

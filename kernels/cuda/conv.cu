/* kernels/cuda/conv.cu: conv2d and sobel on the GPU.
 *
 * conv2d's blocks are tile_width x 256 / tile_width threads (its cuda tunable, 16 x 16 by
 * default, flatter for an output fewer rows tall than the block: conv2d_launch_of). Its
 * threads at a horizontal stride above 1 sum one output each; at stride_x 1 each sums a
 * run of CONV2D_RUN (7) outputs side by side in its row, so a 16 x 16 block covers
 * 112 x 16 outputs. Sobel's blocks are 32 x 8 threads, each thread computing 2 x 4
 * outputs of a 64 x 32 tile (the SOBEL_ enum, sobel_stage, sobel_thread_outputs). A block walks
 * the tiles of the output in a grid-stride loop over (tile column, tile row, frame) on
 * grid (x, y, z), so that any output the CPU takes runs, however tall or wide or deep
 * the batch: each grid dimension is capped below its CUDA limit and the loop covers the
 * rest. Per tile, a block first stages its input tile plus halo in shared memory
 * (each pixel read once through the border rule, converted to f32), with conv2d's
 * taps beside it, then every thread sums its window from shared memory without
 * checks. When the tile of a conv2d with large strides would not fit in shared
 * memory, a plain kernel reads each tap from global memory through the border rule
 * (plm__conv2d_pixel, the same function as the CPU's fallback).
 *
 * Register tiling (conv2d_run_sums). A thread's run of outputs shares its inputs: along a
 * tap row, the input under tap j of output r is the one under tap j + 1 of output r - 1.
 * The thread holds the run's RUN inputs under the current tap in registers and one tap,
 * so each shared load feeds RUN multiply-adds, where the one-output kernel loaded a tap
 * and an input for each. Each output still adds its terms in plm__conv2d_pixel's order,
 * so the results are the one-output kernel's bits. RUN is odd, and the tile's rows are
 * `pitch` floats apart (tile_pitch: at most 31 floats of padding), chosen so that a
 * warp's loads hit 32 distinct banks: one wavefront each (the one-output kernel's 24-float
 * rows of a 9 x 9 tile cost 1.5). The sums pass through shared memory on their way out,
 * so that a warp stores 32 consecutive floats, not 32 floats 7 apart.
 *
 * Staging (stage_tile) walks the tile's rows and columns with two loops, each thread of
 * a bx x by block taking every by-th row and in it every bx-th column, so no element
 * costs a division. tests/test_conv_cuda_logic.cpp compiles this file as plain C++
 * (the kernels and launchers are under __CUDACC__) and checks on the host that the
 * block's threads together write every element of tiles of the launchers' shapes, for
 * every block conv2d's tile_width gives, exactly once, with the value the border rule
 * gives (as the former loop over idx / cols, idx % cols did); what conv2d_launch_of
 * promises (blocks, runs, pitches); and the tiled kernel's body phase by phase over whole
 * outputs (conv2d_place_of, conv2d_thread_sums, copy_sums_row): every output written
 * once, with plm__conv2d_pixel's bits.
 *
 * Device cost model, per output pixel (s: the input's bytes per element, 1, 2 or 4; an
 * H100 SXM: 3.35 TB/s, 132 SMs at 1.98 GHz, one shared-memory wavefront per SM per
 * clock, 128 f32 multiply-adds per SM per clock):
 *   - conv2d, tiled: the tile of a W x H block of outputs (W = 16 x 7 = 112, H = 16 at
 *     stride_x 1; 16 x 16 otherwise) is R x C = ((H - 1) stride_y + kh) x ((W - 1)
 *     stride_x + kw) inputs, each read once through the border rule: R C / (W H) x s
 *     bytes read per output (3 x 3, stride 1: 18 x 114 / 1792 = 1.15 s), the taps
 *     (kh kw x 4 bytes) once per block; 4 bytes written; 2 kh kw flops from shared
 *     memory. One launch. Floors: the bytes, (R C / (W H) x s + 4) x outputs /
 *     bandwidth (a 2048 x 2048 u8 frame with 3 x 3 taps moves 22 MB, 6.4 us), and the
 *     multiply-adds, kh kw x outputs / 33.5 T/s (9 x 9 taps on an f32 512 x 512 frame:
 *     21 M, 0.63 us, as long as its 2.1 MB take at 3.35 TB/s). Shared memory, in
 *     wavefronts per warp of 32 outputs: kh (RUN + 2 kw - 1) / RUN for the sums
 *     (one-output kernel: 2 kh kw, times its bank conflicts), R C / (W H) to stage, 2 to
 *     pass the sums out. 9 x 9 taps: 30.9 + 1.6 + 2 = 34.5 (was 164 x 1.5 replay);
 *     15 x 15 taps on 2048 x 2048: about 41 us (was about 225 us), against 28 us of
 *     multiply-adds; 3 x 3 taps: 8.3 wavefronts, below the bytes.
 *     Emulated estimates for an H100 SXM (bench_ops --emulated-cost, f32, "same"; bound
 *     and floor in us, not measurements), one output a thread -> runs of 7:
 *       3 x 3   512 x 512: 0.96 shared (1.5x floor 0.63) -> 0.63 dram (1.0x)
 *       3 x 3  2048 x 2048: 15.3 shared (1.5x floor 10.0) -> 10.0 dram (1.0x)
 *       3 x 3  4096 x 4096: 61.2 shared (1.5x floor 40.1) -> 41.0 dram (1.0x)
 *       9 x 9   512 x 512: 7.77 shared (12.4x floor 0.63) -> 1.18 shared (1.9x)
 *       9 x 9  2048 x 2048: 124.3 shared (12.4x floor 10.0) -> 18.0 shared (1.8x)
 *       9 x 9  4096 x 4096: 497.2 shared (12.4x floor 40.1) -> 70.3 shared (1.8x)
 *     Runs of 5, 9, 11, 13 gave 1.49, 1.04, 0.86, 0.93 us for 9 x 9 at 512 x 512: 7 is
 *     the largest run with more tiles at 512 x 512 (5 x 32 = 160) than an H100 has SMs,
 *     which the estimate does not model. Registers: 58 (ptxas 13.0, sm_90), so 4 blocks
 *     of 8 warps per SM, each thread with 7 independent sums in flight.
 *     The H200 (2026-12-04, d834510, f32 4096 x 4096) measured 3 x 3 at 182 us, 6.5x its
 *     floor, and 9 x 9 at 282 us, 5.0x: at 4 blocks an SM, 18 waves of tiles, about 10 us
 *     a block, the time of eight DRAM round trips one after another. That is what staging
 *     took: each thread's 8 elements (18 x 114 / 256) loaded and stored one by one, each
 *     store waiting for its load. stage_tile now issues them together (STAGE_BATCH,
 *     kernels/cuda/stage.h), which costs registers (56 -> 58 at runs of 7, 38 -> 54 at
 *     one output) and no count the estimate sees. Not yet timed on a GPU.
 *   - conv2d, direct (tiles past 48 KiB of shared memory): kh kw inputs per output
 *     through the caches, each through the border rule.
 *   - sobel: 34 x 66 inputs per 64 x 32 outputs, 1.10 s bytes read per pixel, 4 bytes
 *     written per output asked for (gx, gy, magnitude), about 20 flops. One launch.
 *     Floor: (1.10 s + 4 outputs) bytes x pixels / bandwidth: a 2048 x 2048 u8 frame, the
 *     magnitude only, is 21 MB, 6.3 us at 3.35 TB/s, 4.4 us at an H200's 4.8 TB/s.
 *     The H200 (2026-12-04, d834510) measured the former kernel, a 16 x 16 tile a block of
 *     16 x 16 threads, one output a thread, at 187 us for u8 at 4096 x 4096, 10.7x its
 *     floor and 449 GB/s: each thread loaded one or two inputs through the border rule,
 *     each waited for in turn, and so an SM had about 2,600 loads in flight, a few KB
 *     against the ~30 KB an SM needs to cover DRAM's latency at full bandwidth (Little's
 *     law: 4.8 TB/s x ~0.8 us over 132 SMs). Now a thread issues all of its up to 15 loads
 *     before storing any (the tile inside the frame, all but its edges, read without the
 *     border rule, the dtype resolved when compiled), and computes 8 outputs, walking
 *     down its column with two rows of inputs in registers (3 shared loads an output, not
 *     9; 1.1 wavefronts a request, not 1.9: the 16-wide tile's warps spanned two rows).
 *     At most 64 registers (__launch_bounds__(256, 4): 32 warps an SM; unbounded, nvcc
 *     took 80), so about 9,000 loads in flight an SM. Emulated estimate for an H200 (u8,
 *     bench_ops --emulated-cost, not a measurement): 2048 x 2048, 9.72 us shared-bound
 *     (2.2x floor 4.37) -> 6.08 us L2-bound (1.4x); 512 x 512, 0.61 (2.2x) -> 0.37 (1.4x).
 *     Its L2 bound is the u8 rows' loads, a warp's 32 bytes one byte off a sector boundary
 *     (2 sectors each). Not yet timed on a GPU. */
#include <mutex>

#include "kernels/common/conv.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/frame_tiles.h"
#include "kernels/cuda/stage.h"

enum { SMEM_MAX = 48 * 1024, BANKS = 32 };

/* Sobel's launch: blocks of SOBEL_BX x SOBEL_BY threads; thread (tx, ty) computes the
 * outputs in the SOBEL_COLUMNS columns tx, tx + SOBEL_BX, ... and the SOBEL_ROWS
 * consecutive rows from ty SOBEL_ROWS on of its block's tile of SOBEL_W x SOBEL_H
 * outputs, whose inputs with their one-pixel halo, SOBEL_TILE_ROWS x SOBEL_TILE_COLS, the
 * block stages in shared memory; each thread stages the rows ty, ty + SOBEL_BY, ... by
 * the columns tx, tx + SOBEL_BX, ... of that tile, at most SOBEL_STAGE_ROWS x
 * SOBEL_STAGE_COLS of them. A warp is one row of the block: its lanes read and write
 * consecutive words and store consecutive outputs. Why this shape: the essay's cost
 * model. */
enum {
  SOBEL_BX = 32,
  SOBEL_BY = 8,
  SOBEL_COLUMNS = 2,
  SOBEL_ROWS = 4,
  SOBEL_W = SOBEL_BX * SOBEL_COLUMNS, /* 64 */
  SOBEL_H = SOBEL_BY * SOBEL_ROWS,    /* 32 */
  SOBEL_TILE_ROWS = SOBEL_H + 2,
  SOBEL_TILE_COLS = SOBEL_W + 2,
  SOBEL_STAGE_ROWS = (SOBEL_TILE_ROWS + SOBEL_BY - 1) / SOBEL_BY, /* 5 */
  SOBEL_STAGE_COLS = (SOBEL_TILE_COLS + SOBEL_BX - 1) / SOBEL_BX, /* 3 */
  SOBEL_BLOCKS_PER_SM = 4, /* __launch_bounds__: at most 64 registers, 32 warps an SM */
};

/* Outputs a thread of the tiled conv2d kernel sums, consecutive along a row, where the
 * window can slide (conv2d_run_of). Odd, so that the lanes of a warp, RUN columns apart,
 * read 32 distinct banks; 7, the largest odd run with more tiles at 512 x 512 (160) than
 * an H100 has SMs (132), at 56 registers (the essay's cost model has the measurements). */
enum { CONV2D_RUN = 7 };

/* A conv2d launch: the block (tile_w x tile_h threads), the outputs each thread sums
 * (run, along its row: a tile of tile_w run x tile_h outputs), the input tile that they
 * read (with the halo), staged in shared memory rows `pitch` floats apart, and the tiled
 * kernel's shared memory in bytes (taps, tile and, for runs, the tile's sums), past
 * SMEM_MAX when the direct kernel runs instead. */
struct conv2d_launch {
  int tile_w, tile_h, run;
  int64_t tile_rows, tile_cols, pitch, smem;
};

/* The shared-memory word that lane `lane` of a warp of a block tile_w threads wide reads
 * (its thread at row lane / tile_w, column lane % tile_w of the block) when a thread's
 * word is row x row_step + column x col_step. */
static int64_t lane_word(int lane, int tile_w, int64_t row_step, int64_t col_step) {
  return (int64_t)(lane / tile_w) * row_step + (int64_t)(lane % tile_w) * col_step;
}

/* The wavefronts of that warp access: the most distinct words one of the 32 banks of 4
 * bytes must deliver (lanes reading one word share it), as the emulator counts them. */
static int warp_wavefronts(int tile_w, int64_t row_step, int64_t col_step) {
  int64_t word[BANKS];             /* lane's */
  int asked[BANKS] = {}, most = 0; /* per bank, the distinct words asked of it */
  for (int lane = 0; lane < BANKS; lane++) {
    word[lane] = lane_word(lane, tile_w, row_step, col_step);
    bool shared = false; /* with an earlier lane: the bank delivers it to both at once */
    for (int other = 0; other < lane && !shared; other++) shared = word[other] == word[lane];
    if (!shared && ++asked[word[lane] % BANKS] > most) most = asked[word[lane] % BANKS];
  }
  return most;
}

/* The pitch of a tile `cols` wide (cols .. cols + 31): the one whose sums' reads (a warp's
 * threads stride_y rows and col_step columns apart) ask fewest wavefronts, then whose
 * staging writes (threads a row and a column apart) do, then the narrowest. The padding
 * columns are never written nor read. A search: 32 pitches, each 2 x 32 x 32 lane words. */
static int64_t search_tile_pitch(int64_t cols, int tile_w, int stride_y, int col_step) {
  int64_t best = cols;
  int best_reads = BANKS + 1, best_writes = BANKS + 1;
  for (int64_t pitch = cols; pitch < cols + BANKS; pitch++) {
    const int reads = warp_wavefronts(tile_w, pitch * stride_y, col_step);
    const int writes = warp_wavefronts(tile_w, pitch, 1);
    if (reads < best_reads || (reads == best_reads && writes < best_writes)) {
      best = pitch;
      best_reads = reads;
      best_writes = writes;
    }
  }
  return best;
}

/* search_tile_pitch's answer, remembered: the search takes about 80 us of host time, which
 * every conv2d launch paid (the first H200 run: 82 us to enqueue conv2d at every size,
 * against 3 us for sobel, and so 84 us a call at 512 x 512 for a 1 us kernel). The answer
 * depends on the four arguments alone; the process's few shapes of launch each search
 * once. Thread-safe: launches come from any thread. Past PITCH_MEMO entries a launch
 * searches again (right, only slower). */
enum { PITCH_MEMO = 64 };
struct pitch_memo_entry {
  int64_t cols, pitch;
  int tile_w, stride_y, col_step;
};
static int64_t tile_pitch(int64_t cols, int tile_w, int stride_y, int col_step) {
  static std::mutex lock;
  static pitch_memo_entry memo[PITCH_MEMO];
  static int count;
  {
    std::lock_guard<std::mutex> held(lock);
    for (int k = 0; k < count; k++)
      if (memo[k].cols == cols && memo[k].tile_w == tile_w && memo[k].stride_y == stride_y &&
          memo[k].col_step == col_step)
        return memo[k].pitch;
  }
  const int64_t pitch = search_tile_pitch(cols, tile_w, stride_y, col_step);
  std::lock_guard<std::mutex> held(lock);
  if (count < PITCH_MEMO) memo[count++] = {cols, pitch, tile_w, stride_y, col_step};
  return pitch;
}

/* The outputs per thread for args: CONV2D_RUN when the window slides one column a tap
 * (stride_x 1), else 1; and 1 for an output narrower than a run (args->wo >= 1), where a
 * run's other sums would all fall outside it and only add work. Whatever the taps: by the
 * emulated estimate even 3 x 3 taps pay (their shared-memory bound fell below their DRAM
 * floor, see the cost model). */
static int conv2d_run_of(const plm__conv2d_args *args) {
  if (args->wo >= 1 && args->wo < CONV2D_RUN) return 1;
  return args->stride_x == 1 ? CONV2D_RUN : 1;
}

/* The tile, pitch and shared memory of launch l (its block and run set) for args. */
static void conv2d_size_tile(conv2d_launch *l, const plm__conv2d_args *args) {
  l->tile_rows = (int64_t)(l->tile_h - 1) * args->stride_y + args->kh;
  l->tile_cols = ((int64_t)l->tile_w * l->run - 1) * args->stride_x + args->kw;
  /* Either side alone past the budget means the direct kernel; checking that first
   * keeps the products below from overflowing with huge strides. */
  const int64_t most_floats = SMEM_MAX / (int64_t)sizeof(float);
  l->pitch = l->tile_cols;
  l->smem = SMEM_MAX + 1;
  if (l->tile_rows > most_floats || l->tile_cols > most_floats) return;
  l->pitch = tile_pitch(l->tile_cols, l->tile_w, args->stride_y, l->run * args->stride_x);
  const int64_t sums = l->run > 1 ? (int64_t)l->tile_w * l->run * l->tile_h : 0;
  l->smem =
      (l->tile_rows * l->pitch + (int64_t)args->kh * args->kw + sums) * (int64_t)sizeof(float);
}

/* The launch for args: tile_w the largest power of two of at most args->cuda_tile_width
 * (1..PLM__CONV2D_CUDA_TILE_THREADS; a value out of range is taken as the nearest end),
 * tile_h the rest of the block's PLM__CONV2D_CUDA_TILE_THREADS threads. An output fewer
 * rows tall than that (args->ho >= 1) gets a flatter block instead: tile_h its height
 * rounded up to a power of two, tile_w the rest, so that no row of the block's threads
 * idles (at 16 x 16 a one-row output left 15 of every 16 threads idle, and launched 16
 * times the blocks). Each thread sums conv2d_run_of outputs, or one when that tile would
 * not fit in shared memory. Every width gives a valid launch: a tile too large for shared
 * memory even at one output a thread runs the direct kernel. */
static conv2d_launch conv2d_launch_of(const plm__conv2d_args *args) {
  conv2d_launch l = {};
  l.tile_w = PLM__CONV2D_CUDA_TILE_THREADS;
  while (l.tile_w > 1 && l.tile_w > args->cuda_tile_width) l.tile_w /= 2;
  l.tile_h = PLM__CONV2D_CUDA_TILE_THREADS / l.tile_w;
  if (args->ho >= 1 && args->ho < l.tile_h) {
    l.tile_h = 1;
    while (l.tile_h < args->ho) l.tile_h *= 2;
    l.tile_w = PLM__CONV2D_CUDA_TILE_THREADS / l.tile_h;
  }
  l.run = conv2d_run_of(args);
  conv2d_size_tile(&l, args);
  if (l.smem > SMEM_MAX && l.run > 1) {
    l.run = 1;
    conv2d_size_tile(&l, args);
  }
  return l;
}

/* The sums of RUN outputs side by side in a row (RUN > 1 needs stride_x 1): window
 * points at the first one's top-left input in the staged tile, rows pitch floats apart,
 * taps are kh x kw. Each output adds its terms in plm__conv2d_pixel's order (tap rows
 * top to bottom, each left to right, sum += tap x input from 0), so it gets the same
 * floats as the one-output kernel did. Per tap row, the RUN inputs under the current tap
 * are held in registers, in[] rotated by one column a tap (the slot of the column just
 * used takes the one RUN columns on), so each tap and each input is read from shared
 * memory once and feeds RUN multiply-adds: RUN + 2 kw - 1 loads per row for RUN
 * outputs, against 2 kw each. The loops over k and r have constant trip counts, which
 * nvcc unrolls: every slot index is a constant and in[] stays in registers (no stack
 * frame: the ptxas gate). */
template <int RUN>
static PLM_HD void conv2d_run_sums(const float *taps, const float *window, int pitch, int kh,
                                   int kw, float sums[RUN]) {
  for (int r = 0; r < RUN; r++) sums[r] = 0.0f;
  for (int i = 0; i < kh; i++) {
    const float *row = window + i * pitch, *row_taps = taps + i * kw;
    float in[RUN]; /* slot (k + r) % RUN: output r's input under tap j0 + k */
    for (int r = 0; r < RUN; r++) in[r] = row[r];
    for (int j0 = 0; j0 < kw; j0 += RUN) {
      for (int k = 0; k < RUN; k++) {
        const int j = j0 + k;
        if (j < kw) {
          const float tap = row_taps[j];
          for (int r = 0; r < RUN; r++) sums[r] += tap * in[(k + r) % RUN];
          if (j + 1 < kw) in[k] = row[j + RUN];
        }
      }
    }
  }
}

/* One tile of a conv2d's outputs, tile_h x `across` of them: its first output (row,
 * column), how many of its rows and columns are outputs (the last tiles of a frame are
 * cut), and the input pixel (row, column) its staged tile starts at. */
struct conv2d_place {
  int64_t oy0, ox0, valid_h, valid_w, y0, x0;
};

static PLM_HD conv2d_place conv2d_place_of(const plm__conv2d_args *a, int64_t tile_y,
                                           int64_t tile_x, int tile_h, int across) {
  conv2d_place p;
  p.oy0 = tile_y * tile_h;
  p.ox0 = tile_x * across;
  p.valid_h = a->ho - p.oy0 < tile_h ? a->ho - p.oy0 : tile_h;
  p.valid_w = a->wo - p.ox0 < across ? a->wo - p.ox0 : across;
  p.y0 = p.oy0 * a->stride_y - a->pad_y;
  p.x0 = p.ox0 * a->stride_x - a->pad_x;
  return p;
}

/* Thread (tx, ty)'s part of the tile at p: outputs (ty, tx RUN + r), r < RUN, those that
 * are outputs (p's valid rows and columns) written to out[ty out_pitch + tx RUN + r]. The
 * tile is staged as stage_tile leaves it (from p's y0, x0; rows pitch apart). */
template <int RUN>
static PLM_HD void conv2d_thread_sums(const float *taps, const float *tile, int pitch, int kh,
                                      int kw, int stride_y, int stride_x, const conv2d_place &p,
                                      int tx, int ty, float *out, int64_t out_pitch) {
  const int col = tx * RUN;
  if (ty >= p.valid_h || col >= p.valid_w) return;
  float sums[RUN];
  conv2d_run_sums<RUN>(taps, tile + ty * stride_y * pitch + col * stride_x, pitch, kh, kw, sums);
  for (int r = 0; r < RUN; r++)
    if (col + r < p.valid_w) out[ty * out_pitch + col + r] = sums[r];
}

/* Thread (tx, ty) of a block bx threads wide copies row ty of the sums of the tile at p
 * (rows sums_pitch apart) to out (rows out_pitch apart): columns tx, tx + bx, ... of the
 * valid ones, if the row is valid, so that a warp stores along a row. */
static PLM_HD void copy_sums_row(const float *sums, int sums_pitch, const conv2d_place &p, int tx,
                                 int ty, int bx, float *out, int64_t out_pitch) {
  if (ty >= p.valid_h) return;
  for (int c = tx; c < p.valid_w; c += bx) out[ty * out_pitch + c] = sums[ty * sums_pitch + c];
}

/* Thread (tx, ty)'s part of staging sobel's tile whose first output is (y0, x0) of an
 * h x w frame of DTYPE: tile[r][c] = pixel (y0 - 1 + r, x0 - 1 + c) under border, through
 * stage_tile with all of a thread's loads (up to SOBEL_STAGE_ROWS x SOBEL_STAGE_COLS, 15)
 * in one batch. DTYPE is a template argument so that the load's switch is resolved when
 * compiled. */
template <plm_dtype DTYPE>
static PLM_HD void sobel_stage(float (*tile)[SOBEL_TILE_COLS], const void *frame, int64_t h,
                               int64_t w, int64_t y0, int64_t x0, plm_border border, int tx,
                               int ty) {
  stage_tile<SOBEL_STAGE_ROWS * SOBEL_STAGE_COLS>(&tile[0][0], frame, DTYPE, h, w, y0 - 1, x0 - 1,
                                                  SOBEL_TILE_ROWS, SOBEL_TILE_COLS, SOBEL_TILE_COLS,
                                                  border, tx, ty, SOBEL_BX, SOBEL_BY);
}

/* Thread (tx, ty)'s outputs of the tile staged at (y0, x0) of frame `frame` (sobel_stage):
 * columns x0 + tx + SOBEL_BX j, rows y0 + ty SOBEL_ROWS + k, those inside the frame,
 * written to a's outputs that are wanted. Down a column the thread keeps the last two
 * rows' three inputs in registers, so each output reads three words of the tile, not
 * nine. */
static PLM_HD void sobel_thread_outputs(const float (*tile)[SOBEL_TILE_COLS],
                                        const plm__sobel_args &a, int64_t frame, int64_t y0,
                                        int64_t x0, int tx, int ty) {
  const int r0 = ty * SOBEL_ROWS;
  PLM_UNROLLED
  for (int j = 0; j < SOBEL_COLUMNS; j++) {
    const int c = tx + j * SOBEL_BX;
    if (x0 + c >= a.w) break;
    int64_t at = (frame * a.h + y0 + r0) * a.w + x0 + c; /* output row k's */
    float in[3][3]; /* in[(k + i) % 3]: the three inputs of output row k's tap row i */
    for (int d = 0; d < 3; d++) {
      in[0][d] = tile[r0][c + d];
      in[1][d] = tile[r0 + 1][c + d];
    }
    PLM_UNROLLED
    for (int k = 0; k < SOBEL_ROWS && y0 + r0 + k < a.h; k++, at += a.w) {
      float *top = in[k % 3], *mid = in[(k + 1) % 3], *bot = in[(k + 2) % 3];
      for (int d = 0; d < 3; d++) bot[d] = tile[r0 + k + 2][c + d];
      const float gx = plm__sobel_gx(top, mid, bot), gy = plm__sobel_gy(top, bot);
      if (a.gx) a.gx[at] = gx;
      if (a.gy) a.gy[at] = gy;
      if (a.magnitude) a.magnitude[at] = plm__sobel_magnitude(gx, gy);
    }
  }
}

#ifdef __CUDACC__

/* The staged input of a conv2d launch's tiles (conv2d_launch's tile_rows, tile_cols,
 * pitch), as the kernel takes it. */
struct conv2d_tile {
  int rows, cols, pitch;
};

/* Tiles of blockDim.x RUN x blockDim.y outputs, thread (tx, ty) summing outputs (ty,
 * tx RUN + r) of each. RUN 1: each thread stores its output. RUN > 1: the sums go to
 * shared memory first and the block stores them along rows, as RUN 1 does (stored from
 * registers, a warp's lanes RUN floats apart would touch RUN times the sectors). */
template <int RUN>
__global__ void conv2d_tiled_kernel(plm__conv2d_args a, conv2d_tile s) {
  extern __shared__ float smem[];
  float *taps = smem;
  float *tile = smem + a.kh * a.kw;
  float *sums = tile + s.rows * s.pitch; /* RUN > 1: the tile's sums, blockDim.x RUN wide */
  const int tx = (int)threadIdx.x, ty = (int)threadIdx.y, bx = (int)blockDim.x;
  const int by = (int)blockDim.y, across = bx * RUN;
  for (int idx = ty * bx + tx; idx < a.kh * a.kw; idx += bx * by) taps[idx] = a.taps[idx];
  size_t element = plm__conv_element_size(a.dtype);
  const tiles t = tiles_of(a.n, a.ho, a.wo, by, across);
  FOR_EACH_TILE(t, frame, tile_y, tile_x) {
    const conv2d_place p = conv2d_place_of(&a, tile_y, tile_x, by, across);
    const void *in = (const char *)a.in + (size_t)(frame * a.h * a.w) * element;
    float *out = a.out + (frame * a.ho + p.oy0) * a.wo + p.ox0;
    __syncthreads(); /* the taps are in; the previous tile's reads of tile and sums are done */
    stage_tile_by_block(tile, in, a.dtype, a.h, a.w, p.y0, p.x0, s.rows, s.cols, s.pitch, a.border);
    __syncthreads();
    if (RUN == 1) {
      conv2d_thread_sums<RUN>(taps, tile, s.pitch, a.kh, a.kw, a.stride_y, a.stride_x, p, tx, ty,
                              out, a.wo);
    } else {
      conv2d_thread_sums<RUN>(taps, tile, s.pitch, a.kh, a.kw, a.stride_y, a.stride_x, p, tx, ty,
                              sums, across);
      __syncthreads();
      copy_sums_row(sums, across, p, tx, ty, bx, out, a.wo);
    }
  }
}

/* Sobel's tiles (sobel_stage, sobel_thread_outputs), for frames of DTYPE. */
template <plm_dtype DTYPE>
__global__ void __launch_bounds__(SOBEL_BX *SOBEL_BY, SOBEL_BLOCKS_PER_SM)
    sobel_kernel(plm__sobel_args a) {
  __shared__ float tile[SOBEL_TILE_ROWS][SOBEL_TILE_COLS];
  const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
  const tiles t = tiles_of(a.n, a.h, a.w, SOBEL_H, SOBEL_W);
  FOR_EACH_TILE(t, frame, tile_y, tile_x) {
    const int64_t y0 = tile_y * SOBEL_H, x0 = tile_x * SOBEL_W;
    const void *in =
        (const char *)a.in + (size_t)(frame * a.h * a.w) * plm__conv_element_size(DTYPE);
    __syncthreads(); /* the previous tile's reads of tile are done */
    sobel_stage<DTYPE>(tile, in, a.h, a.w, y0, x0, a.border, tx, ty);
    __syncthreads();
    sobel_thread_outputs(tile, a, frame, y0, x0, tx, ty);
  }
}

extern "C" plm_status plm__conv2d_cuda(void *stream, const plm__conv2d_args *args) {
  const conv2d_launch l = conv2d_launch_of(args);
  const dim3 grid = make_grid(args->n, args->ho, args->wo, l.tile_h, l.tile_w * l.run);
  const dim3 block((unsigned)l.tile_w, (unsigned)l.tile_h);
  cudaStream_t s = (cudaStream_t)stream;
  if (l.smem <= SMEM_MAX) {
    const conv2d_tile tile = {(int)l.tile_rows, (int)l.tile_cols, (int)l.pitch};
    if (l.run == CONV2D_RUN)
      conv2d_tiled_kernel<CONV2D_RUN><<<grid, block, (size_t)l.smem, s>>>(*args, tile);
    else
      conv2d_tiled_kernel<1><<<grid, block, (size_t)l.smem, s>>>(*args, tile);
    return plm__cuda_check_launch("conv2d_tiled_kernel");
  }
  direct_kernel<plm__conv2d_args, plm__conv2d_pixel><<<grid, block, 0, s>>>(*args);
  return plm__cuda_check_launch("direct_kernel<plm__conv2d_args>");
}

extern "C" plm_status plm__sobel_cuda(void *stream, const plm__sobel_args *args) {
  const dim3 grid = make_grid(args->n, args->h, args->w, SOBEL_H, SOBEL_W);
  const dim3 block(SOBEL_BX, SOBEL_BY);
  cudaStream_t s = (cudaStream_t)stream;
  switch (args->dtype) {
    case PLM_DTYPE_U8: sobel_kernel<PLM_DTYPE_U8><<<grid, block, 0, s>>>(*args); break;
    case PLM_DTYPE_U16: sobel_kernel<PLM_DTYPE_U16><<<grid, block, 0, s>>>(*args); break;
    default: sobel_kernel<PLM_DTYPE_F32><<<grid, block, 0, s>>>(*args); break;
  }
  return plm__cuda_check_launch("sobel_kernel");
}
#endif

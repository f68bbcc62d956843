/* kernels/cuda/cfar_bands.h: cfar in one pass over a frame, for windows up to
 * BAND_WINDOW_MOST (45; the default is 15), reading the frame once and writing the output,
 * nothing else (internal; C++, __host__ __device__, so that tests/test_cfar_cuda_logic.cpp
 * runs it on emulated threads; the kernel around it is in kernels/cuda/cfar.cu).
 *
 * A pixel's reference sums (plume/cfar.h) are its window's box less its guard's, of v, v^2
 * and, for f32, 1 when finite (kernels/common/cfar.h). A box is separable: its sum is the
 * sum over its columns of each column's sum over its rows. A block of BAND_THREADS (64)
 * takes a strip of BAND_COLUMNS (128) columns of a band of rows, BAND_PER_THREAD (2) side by
 * side a thread:
 *   down    thread t owns strip columns 2t and 2t + 1 (image columns x0 - R + 2t + k, R =
 *           window / 2, x0 the strip's first output column) and keeps in registers each
 *           column's sums over the rows of the window and of the guard (G = guard / 2) of
 *           the row it is at, moving down a row at a time: a row enters each sum and one
 *           leaves. A thread loads its columns' rows once each, BAND_BATCH ahead (that many
 *           loads in flight a column), and keeps the last window + BAND_BATCH of them in a
 *           ring in shared memory, its own columns only (no barrier guards them), where the
 *           rows leaving are read again.
 *   across  each row's four column sums (window and guard; v and v^2) become running sums
 *           across the warp's 64 columns in shared memory: a thread adds its two columns,
 *           the warp's running sum of those pairs takes five shuffles, and the first
 *           column's is the pair's less the second column (band_running_pair: half the
 *           shuffles a pixel of a thread a column, whose five shuffles served one column);
 *           the pixel of strip column a reads its window's sum as running[a + R] -
 *           running[a - R - 1] and its guard's as running[a + G] - running[a - G - 1],
 *           adding the running sum's total at the last column of a warp where the two are
 *           in different warps (2R + 1 <= 45 columns apart: one boundary at most). Each
 *           row of shared memory holds a warp's even columns, then its odd ones
 *           (band_place), so that a warp's lanes storing one of their two columns, or
 *           reading the ends of their pixels' boxes (which are a lane apart), touch
 *           consecutive words: no bank conflicts.
 * The 2R columns at a strip's sides only feed their neighbours: a strip puts out
 * BAND_COLUMNS - 2R columns (114 of 128 at window 15, 84 at 45). Windows past 45
 * take summed-area tables of the frame (kernels/cuda/cfar.cu): a strip would put out ever
 * fewer columns (f32's shared memory, 44.5 KiB at 45, passes the 48 KiB a launch gets
 * without an opt-in only at window 53).
 *
 * f32 counts its finite cells only in a band where a pixel loaded so far is not finite (a
 * flag in shared memory, read after the barrier that follows the loads), else takes the
 * boxes' areas, the same integers; a cell outside the frame is a NaN in the ring, which
 * adds nothing to any sum and is counted by nobody (plm__cfar_cell_f32), and 0 for u8 and
 * u16. Integer sums are exact in any order, so u8 and u16 have the CPU's bits: uint64_t for
 * u16, uint32_t for u8, whose boxes' sums stay below 2^32 (45^2 x 255^2 < 2^27), so their
 * differences are exact modulo 2^32 and the running sums move half the bytes. f32's doubles
 * are added and taken away as the rows pass, not read from a table of the frame: on the
 * tests' frames z agrees with the CPU's within 1e-9 x max(1, |z|), as the tables' did. Their
 * rounding is relative to the sums they pass through: a pixel far larger than its
 * neighbours leaves its rounding in its column's sums for the rest of the band (up to
 * 64 + R rows) and in the running sums to its right in its warp (up to 63 columns, two a
 * lane; a thread's first column's running sum is its pair's less its second column, one
 * rounding more), about four times as far as the tiles' span tables left it, and far less
 * than the CPU's tables of the whole frame, whose
 * entries carry every pixel above and to the left (a review measured, against long double,
 * 790, 351 and 6,321 wrong z-scores at 1e-3 around one pixel of 1e8 among values 1 +- 1e-3,
 * outside its window). Products are rounded one by one (plm__cfar_mul), so nvcc contracts
 * nothing the CPU does not. */
#ifndef PLUME_KERNELS_CUDA_CFAR_BANDS_H
#define PLUME_KERNELS_CUDA_CFAR_BANDS_H

#include "kernels/common/cfar.h"
#include "kernels/common/plm_hd.h"

enum {
  BAND_THREADS = 64,
  BAND_PER_THREAD = 2,                           /* columns a thread owns, side by side */
  BAND_COLUMNS = BAND_THREADS * BAND_PER_THREAD, /* a strip's, halo included */
  BAND_WARP_COLUMNS = 32 * BAND_PER_THREAD,
  BAND_BATCH = 4, /* rows a thread moves down between two barriers */
  BAND_WINDOW_MOST = 45,
  BAND_ROWS_MOST = 64,
  BAND_ROWS_LEAST = 8
};

/* The four column sums a thread keeps: over the window's rows and the guard's, of v and v^2. */
enum { BAND_WINDOW_V, BAND_WINDOW_V2, BAND_GUARD_V, BAND_GUARD_V2, BAND_SUMS };

/* Where a strip's column c sits in a row of shared memory (band_memory's running sums and
 * counts, and each ring row): its warp's BAND_WARP_COLUMNS, the even columns' lanes then the
 * odd ones', so that a warp storing or loading one of its lanes' two columns (or any
 * columns of one parity a lane apart, as the boxes' ends are) touches consecutive words. */
static PLM_HD inline int band_place(int c) {
  return c / BAND_WARP_COLUMNS * BAND_WARP_COLUMNS + c % BAND_PER_THREAD * 32 +
         c % BAND_WARP_COLUMNS / BAND_PER_THREAD;
}

/* A block's shared memory: each batch row's column sums as running sums across their warp
 * (at band_place of the column), the finite cells' counts likewise (window, guard; f32
 * bands with a pixel that is not finite) and the flag of such a pixel; then, right after
 * the struct, the ring of each column's last window + BAND_BATCH rows (rows
 * y - R - 1 .. y + BAND_BATCH - 1 + R; slot k of column c at k * BAND_COLUMNS +
 * band_place(c), of the frame's element type): band_shared_bytes in all, 29.5 KiB for f32
 * at window 15, 44.5 KiB at 45, under the 48 KiB a block has without opting in. */
template <typename S>
struct band_memory {
  S running[BAND_SUMS][BAND_BATCH][BAND_COLUMNS];
  int counts[2][BAND_BATCH][BAND_COLUMNS];
  alignas(8) int non_finite;
};
template <typename S>
static PLM_HD constexpr size_t band_shared_bytes(int window, int element_bytes) {
  return sizeof(band_memory<S>) + (size_t)(window + BAND_BATCH) * BAND_COLUMNS * element_bytes;
}
static_assert(band_shared_bytes<double>(BAND_WINDOW_MOST, 4) <= 48 * 1024,
              "the largest window's shared memory fits without opting in");

/* Whether a frame's cfar takes the bands (else summed-area tables in the scratch). The
 * bands' arithmetic on rows and columns is 64-bit: any frame. */
static PLM_HD inline bool in_bands(const plm__cfar_args &args) {
  return args.window <= BAND_WINDOW_MOST;
}

/* The output columns of a strip, the strips of a frame, and the (strip, band) pairs of a
 * frame cut into bands of `rows` rows (a launch takes them for every frame of the stack:
 * cfar_frame_bands). */
static PLM_HD inline int band_outputs(int window) {
  return BAND_COLUMNS - 2 * (window / 2);
}
static PLM_HD inline int64_t band_strips(const plm__cfar_args &args) {
  return (args.width + band_outputs(args.window) - 1) / band_outputs(args.window);
}
static PLM_HD inline int64_t band_blocks(const plm__cfar_args &args, int rows) {
  return band_strips(args) * ((args.height + rows - 1) / rows);
}

/* The rows of a band: BAND_ROWS_MOST, halved (to BAND_ROWS_LEAST at least) until the
 * stack's frames have kBandBlocksToFill blocks in all, two for each SM of an H100 or H200
 * (132), since each band first loads the 2R rows above it again (one 512 x 512 frame at
 * window 15: 8 rows, 320 blocks; a stack of 16 of 256 x 256: 32 rows, 384 blocks). A
 * multiple of BAND_BATCH. */
constexpr int64_t kBandBlocksToFill = 2 * 132;
static inline int band_rows(const plm__cfar_args &args) {
  int rows = BAND_ROWS_MOST;
  while (rows > BAND_ROWS_LEAST && args.frames * band_blocks(args, rows) < kBandBlocksToFill)
    rows /= 2;
  return rows;
}

/* The inclusive running sum of v over the lanes of a warp (every lane calls it). */
template <typename T, class Warp>
static PLM_HD T warp_running_sum(const Warp &warp, T v) {
  for (int d = 1; d < 32; d *= 2) {
    const T u = warp.shuffle(v, warp.lane() >= d ? warp.lane() - d : warp.lane());
    if (warp.lane() >= d) v += u;
  }
  return v;
}

/* A cell's components as the sums take them: v, v^2 and 1 (finite), from an element of
 * the frame's type (plm__cfar_cell_int and plm__cfar_cell_f32's rule). */
static PLM_HD inline void band_cell(uint8_t v, double, uint32_t *s, uint32_t *q, int *n) {
  *s = v;
  *q = (uint32_t)v * v;
  *n = 1;
}
static PLM_HD inline void band_cell(uint16_t v, double, uint64_t *s, uint64_t *q, int *n) {
  *s = v;
  *q = (uint64_t)v * v;
  *n = 1;
}
static PLM_HD inline void band_cell(float v, double level, double *s, double *q, int *n) {
  const double d = (double)v;
  *n = plm__cfar_finite(d);
  *s = *n ? d - level : 0.0;
  *q = plm__cfar_mul(*s, *s);
}

/* What the ring holds for a cell outside the frame: one that adds nothing and counts for
 * nobody. */
template <typename T>
static PLM_HD inline T band_outside() {
  return T(0);
}
template <>
PLM_HD inline float band_outside<float>() {
  return NAN;
}

/* Element (row, column) of the frame, or band_outside past its edges; an f32 pixel that is
 * not finite sets *non_finite (volatile: threads of one barrier interval may each set it;
 * st.volatile is a relaxed atomic in PTX, and so to the emulator's race check). */
template <typename T>
static PLM_HD inline T band_load(const plm__cfar_args &args, const T *frame, int64_t row,
                                 int64_t column, int *non_finite) {
  if (row < 0 || row >= args.height || column < 0 || column >= args.width) return band_outside<T>();
  const T v = frame[row * args.width + column];
  if (sizeof(T) == 4 && !plm__cfar_finite((double)v)) *(volatile int *)non_finite = 1;
  return v;
}

/* One cell entering and one leaving the sums `first` (BAND_WINDOW_V or BAND_GUARD_V) and
 * first + 1, and their count. */
template <typename T, typename S>
static PLM_HD inline void band_move(S sums[BAND_SUMS], int counts[2], int first, T entering,
                                    T leaving, double level) {
  S s, q;
  int n;
  band_cell(entering, level, &s, &q, &n);
  sums[first] += s;
  sums[first + 1] += q;
  counts[first / 2] += n;
  band_cell(leaving, level, &s, &q, &n);
  sums[first] -= s;
  sums[first + 1] -= q;
  counts[first / 2] -= n;
}

/* A ring slot, k < 2 * length. */
static PLM_HD inline int band_wrap(int k, int length) {
  return k >= length ? k - length : k;
}

/* The sum of a row's column sums over columns (b, a] of the strip (b >= -1), from their
 * running sums across each warp's columns: their difference, plus the total (the running
 * sum at the warp's last column) of each warp from b's to the one before a's (one at most:
 * a - b <= 45 < BAND_WARP_COLUMNS). */
template <typename S>
static PLM_HD inline S band_box(const S *running, int a, int b) {
  S sum = running[band_place(a)];
  if (b >= 0) sum -= running[band_place(b)];
  for (int w = b < 0 ? 0 : b / BAND_WARP_COLUMNS; w < a / BAND_WARP_COLUMNS; w++)
    sum += running[band_place(w * BAND_WARP_COLUMNS + BAND_WARP_COLUMNS - 1)];
  return sum;
}

/* The running sums at a thread's two columns across its warp's columns: the sum of every
 * column up to and including each (every lane calls it). */
static_assert(BAND_PER_THREAD == 2, "band_running_pair and cfar_band's across phase take a pair");
template <typename S, class Warp>
static PLM_HD inline void band_running_pair(const Warp &warp, S first, S second, S *at_first,
                                            S *at_second) {
  *at_second = warp_running_sum(warp, (S)(first + second));
  *at_first = *at_second - second;
}

/* d and m (plm__cfar_moments_*) of element i of frame_in from its reference sums, as
 * doubles (f32) or integers (u8, u16); level is plm__cfar_level of the frame. */
static PLM_HD inline void cfar_moments(const plm__cfar_args &args, const void *frame_in,
                                       double level, int64_t i, double n, double s1, double s2,
                                       double *d, double *m) {
  (void)args;
  plm__cfar_moments_f32(frame_in, level, i, n, s1, s2, d, m);
}
static PLM_HD inline void cfar_moments(const plm__cfar_args &args, const void *frame_in,
                                       double level, int64_t i, uint32_t n, uint32_t s1,
                                       uint32_t s2, double *d, double *m) {
  (void)level;
  plm__cfar_moments_int(&args, frame_in, i, (int64_t)n, s1, s2, d, m);
}
static PLM_HD inline void cfar_moments(const plm__cfar_args &args, const void *frame_in,
                                       double level, int64_t i, uint64_t n, uint64_t s1,
                                       uint64_t s2, double *d, double *m) {
  (void)level;
  plm__cfar_moments_int(&args, frame_in, i, (int64_t)n, s1, s2, d, m);
}

/* Block `block` of a frame (band block / strips, strip block % strips) in bands of `rows`
 * rows, by BAND_THREADS threads of BAND_PER_THREAD columns each: T the frame's element
 * type, S the sums' (uint32_t for u8, uint64_t for u16, double for f32); level is
 * plm__cfar_level of the frame. */
template <typename T, typename S, class Block, class Warp>
PLM_HD void cfar_band(const Block &block, const Warp &warp, const plm__cfar_args &args,
                      const T *frame_in, void *frame_out, double level, int64_t band_block,
                      int rows, band_memory<S> *memory) {
  enum { K = BAND_PER_THREAD };
  const int R = args.window / 2, G = args.guard / 2, length = args.window + BAND_BATCH;
  const int64_t strips = band_strips(args);
  const int64_t x0 = (band_block % strips) * band_outputs(args.window);
  const int64_t y0 = (band_block / strips) * rows;
  const int64_t y_end = y0 + rows < args.height ? y0 + rows : args.height;
  const int t = block.thread();
  const bool held = plm__cfar_holds(&args);
  T *const ring = (T *)(memory + 1);
  /* The thread's columns: K t + k of the strip, column[k] of the frame, at place[k] in a
   * row of shared memory. */
  int place[K];
  int64_t column[K];
  PLM_UNROLLED
  for (int k = 0; k < K; k++) {
    place[k] = band_place(K * t + k);
    column[k] = x0 - R + K * t + k;
  }
  if (t == 0) memory->non_finite = 0;
  block.sync();

  /* Rows y0 - R - 1 .. y0 + R - 1 into ring slots 0 .. 2R: the window's sums of row
   * y0 - 1, and the guard's (ring slots R - G .. R + G). */
  S sums[K][BAND_SUMS] = {};
  int counts[K][2] = {};
  for (int r = 0; r <= 2 * R; r += BAND_BATCH) {
    T values[K][BAND_BATCH];
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++) {
      PLM_UNROLLED
      for (int k = 0; k < K; k++)
        if (r + j <= 2 * R)
          values[k][j] =
              band_load(args, frame_in, y0 - R - 1 + r + j, column[k], &memory->non_finite);
    }
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++) {
      if (r + j > 2 * R) continue;
      PLM_UNROLLED
      for (int k = 0; k < K; k++) {
        ring[(r + j) * BAND_COLUMNS + place[k]] = values[k][j];
        band_move(sums[k], counts[k], BAND_WINDOW_V, values[k][j], band_outside<T>(), level);
        if (r + j >= R - G && r + j <= R + G)
          band_move(sums[k], counts[k], BAND_GUARD_V, values[k][j], band_outside<T>(), level);
      }
    }
  }

  int oldest = 0; /* the ring slot of row y - R - 1, y the batch's first row */
  for (int64_t y = y0; y < y_end; y += BAND_BATCH) {
    T entering[K][BAND_BATCH]; /* rows y + R .. y + R + BAND_BATCH - 1 */
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++) {
      PLM_UNROLLED
      for (int k = 0; k < K; k++)
        entering[k][j] = band_load(args, frame_in, y + R + j, column[k], &memory->non_finite);
    }
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++) {
      PLM_UNROLLED
      for (int k = 0; k < K; k++)
        ring[band_wrap(oldest + 2 * R + 1 + j, length) * BAND_COLUMNS + place[k]] = entering[k][j];
    }
    block.sync(); /* the flag holds this batch's loads; every thread has read the last
                     batch's running sums */
    const bool counted = sizeof(T) == 4 && *(volatile int *)&memory->non_finite != 0;

    /* Down: row y + j's column sums, then their running sums across the warp's columns. */
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++) {
      PLM_UNROLLED
      for (int k = 0; k < K; k++) {
        const T *const mine = ring + place[k];
        band_move(sums[k], counts[k], BAND_WINDOW_V, entering[k][j],
                  mine[band_wrap(oldest + j, length) * BAND_COLUMNS], level);
        band_move(sums[k], counts[k], BAND_GUARD_V,
                  mine[band_wrap(oldest + j + R + G + 1, length) * BAND_COLUMNS],
                  mine[band_wrap(oldest + j + R - G, length) * BAND_COLUMNS], level);
      }
      PLM_UNROLLED
      for (int s = 0; s < BAND_SUMS; s++)
        band_running_pair(warp, sums[0][s], sums[1][s], &memory->running[s][j][place[0]],
                          &memory->running[s][j][place[1]]);
      if (counted) {
        PLM_UNROLLED
        for (int n = 0; n < 2; n++)
          band_running_pair(warp, counts[0][n], counts[1][n], &memory->counts[n][j][place[0]],
                            &memory->counts[n][j][place[1]]);
      }
    }
    block.sync();

    /* Across: each of the thread's pixels' reference sums, then its output (a loop kept
     * rolled: unrolled, f32's kernel took more registers than its bound and spilled). */
    for (int j = 0; j < BAND_BATCH && y + j < y_end; j++) {
      PLM_ROLLED
      for (int k = 0; k < K; k++) {
        const int a = K * t + k;
        const int64_t py = y + j, px = x0 - R + a;
        if (a < R || a >= BAND_COLUMNS - R || px >= args.width) continue;
        const S s1 = band_box(memory->running[BAND_WINDOW_V][j], a + R, a - R - 1) -
                     band_box(memory->running[BAND_GUARD_V][j], a + G, a - G - 1);
        const S s2 = band_box(memory->running[BAND_WINDOW_V2][j], a + R, a - R - 1) -
                     band_box(memory->running[BAND_GUARD_V2][j], a + G, a - G - 1);
        int64_t n;
        if (counted) {
          n = band_box(memory->counts[0][j], a + R, a - R - 1) -
              band_box(memory->counts[1][j], a + G, a - G - 1);
        } else {
          n = plm__cfar_area(plm__cfar_square(py, px, args.window, args.height, args.width)) -
              plm__cfar_area(plm__cfar_square(py, px, args.guard, args.height, args.width));
        }
        double d, m;
        cfar_moments(args, ring, level,
                     band_wrap(oldest + j + R + 1, length) * BAND_COLUMNS + band_place(a), (S)n, s1,
                     s2, &d, &m);
        const int64_t i = py * args.width + px;
        if (held)
          ((uint8_t *)frame_out)[i] = plm__cfar_held_mask(&args, py, px, d, m);
        else
          plm__cfar_write(&args, frame_out, i, d, m);
      }
    }
    oldest = band_wrap(oldest + BAND_BATCH, length);
  }
}

/* Frame f's (strip, band) blocks first, first + step, ... of the stack's args.frames (a
 * launch's grid has a row of blocks for each frame, at most 65535 rows, so that one launch
 * fills the GPU with a stack of small frames, where a launch a frame put out a few blocks
 * each). */
template <typename T, typename S, class Block, class Warp>
PLM_HD void cfar_frame_bands(const Block &block, const Warp &warp, const plm__cfar_args &args,
                             int64_t f, int64_t first, int64_t step, int rows,
                             band_memory<S> *memory) {
  const void *frame_in = plm__cfar_frame_in(&args, f);
  void *frame_out = plm__cfar_frame_out(&args, f);
  const double level = plm__cfar_level(frame_in, args.dtype);
  const int64_t blocks = band_blocks(args, rows);
  for (int64_t b = first; b < blocks; b += step)
    cfar_band<T, S>(block, warp, args, (const T *)frame_in, frame_out, level, b, rows, memory);
}

#endif /* PLUME_KERNELS_CUDA_CFAR_BANDS_H */

/* kernels/cuda/cfar_bands.h: cfar in one pass over a frame, for windows up to
 * BAND_WINDOW_MOST (45; the default is 15), reading the frame once and writing the output,
 * nothing else (internal; C++, __host__ __device__, so that tests/test_cfar_cuda_logic.cpp
 * runs it on emulated threads; the kernel around it is in kernels/cuda/cfar.cu).
 *
 * A pixel's reference sums (plume/cfar.h) are its window's box less its guard's, of v, v^2
 * and, for f32, 1 when finite (kernels/common/cfar.h). A box is separable: its sum is the
 * sum over its columns of each column's sum over its rows. A block of BAND_THREADS takes a
 * strip of columns of a band of rows:
 *   down    thread t owns image column x0 - R + t (R = window / 2, x0 the strip's first
 *           output column) and keeps in registers its column's sums over the rows of the
 *           window and of the guard (G = guard / 2) of the row it is at, moving down a row
 *           at a time: a row enters each sum and one leaves. A thread loads its column's
 *           rows once each, BAND_BATCH ahead (that many loads in flight), and keeps the last
 *           window + BAND_BATCH of them in a ring in shared memory, its own column only
 *           (no barrier guards it), where the rows leaving are read again.
 *   across  each row's four column sums (window and guard; v and v^2) become running sums
 *           across the warp's lanes (five shuffles each) in shared memory; the pixel of
 *           thread t reads its window's sum as running[t + R] - running[t - R - 1] and its
 *           guard's as running[t + G] - running[t - G - 1], adding the running sum's total
 *           at the last lane of each warp from the one to the other (2R + 1 <= 45 columns
 *           apart: two boundaries at most).
 * The threads of the 2R columns at a strip's sides only feed their neighbours: a strip
 * puts out BAND_THREADS - 2R columns (114 of 128 at window 15, 84 at 45). Windows past 45
 * take summed-area tables of the frame (kernels/cuda/cfar.cu): a strip would put out few
 * columns, and the ring would pass 48 KiB.
 *
 * f32 counts its finite cells only in a band where a pixel loaded so far is not finite (a
 * flag in shared memory, read after the barrier that follows the loads), else takes the
 * boxes' areas, the same integers; a cell outside the frame is a NaN in the ring, which
 * adds nothing to any sum and is counted by nobody (plm__cfar_cell_f32), and 0 for u8 and
 * u16. Integer sums are exact in any order, so u8 and u16 have the CPU's bits: uint64_t for
 * u16, uint32_t for u8, whose boxes' sums stay below 2^32 (45^2 x 255^2 < 2^27), so their
 * differences are exact modulo 2^32 and the running sums move half the bytes. f32's doubles
 * are added and taken away as the rows pass, not read from a table of the frame: on the
 * tests' frames z agrees with the CPU's within 1e-9 (relative), as the tables' did. Their
 * rounding is relative to the sums they pass through: a pixel far larger than its
 * neighbours leaves its rounding in its column's sums for the rest of the band (up to
 * 64 + R rows) and in the running sums to its right in its warp, about twice as far as the
 * tiles' span tables left it, and far less than the CPU's tables of the whole frame, whose
 * entries carry every pixel above and to the left (a review measured, against long double,
 * 790, 351 and 6,321 wrong z-scores at 1e-3 around one pixel of 1e8 among values 1 +- 1e-3,
 * outside its window). Products are rounded one by one (plm__cfar_mul), so nvcc contracts
 * nothing the CPU does not. */
#ifndef PLUME_KERNELS_CUDA_CFAR_BANDS_H
#define PLUME_KERNELS_CUDA_CFAR_BANDS_H

#include "kernels/common/cfar.h"
#include "kernels/common/plm_hd.h"

enum {
  BAND_THREADS = 128,
  BAND_BATCH = 4, /* rows a thread moves down between two barriers */
  BAND_WINDOW_MOST = 45,
  BAND_ROWS_MOST = 64,
  BAND_ROWS_LEAST = 8
};

/* The four column sums a thread keeps: over the window's rows and the guard's, of v and v^2. */
enum { BAND_WINDOW_V, BAND_WINDOW_V2, BAND_GUARD_V, BAND_GUARD_V2, BAND_SUMS };

/* A block's shared memory: each batch row's column sums as running sums across their warp
 * (lane by lane; t a thread's column), the finite cells' counts likewise (window, guard;
 * f32 bands with a pixel that is not finite) and the flag of such a pixel; then, right
 * after the struct, the ring of each column's last window + BAND_BATCH rows (rows
 * y - R - 1 .. y + BAND_BATCH - 1 + R; element k of a column's ring at k * BAND_THREADS + t,
 * of the frame's element type): band_shared_bytes in all, 29.5 KiB for f32 at window 15,
 * 44.6 KiB at 45, under the 48 KiB a block has without opting in. */
template <typename S>
struct band_memory {
  S running[BAND_SUMS][BAND_BATCH][BAND_THREADS];
  int counts[2][BAND_BATCH][BAND_THREADS];
  alignas(8) int non_finite;
};
template <typename S>
static PLM_HD constexpr size_t band_shared_bytes(int window, int element_bytes) {
  return sizeof(band_memory<S>) + (size_t)(window + BAND_BATCH) * BAND_THREADS * element_bytes;
}
static_assert(band_shared_bytes<double>(BAND_WINDOW_MOST, 4) <= 48 * 1024,
              "the largest window's shared memory fits without opting in");

/* Whether a frame's cfar takes the bands (else summed-area tables in the scratch). The
 * bands' arithmetic on rows and columns is 64-bit: any frame. */
static PLM_HD inline bool in_bands(const plm__cfar_args &args) {
  return args.window <= BAND_WINDOW_MOST;
}

/* The output columns of a strip, the strips of a frame, and the (strip, band) pairs of a
 * frame cut into bands of `rows` rows. */
static PLM_HD inline int band_outputs(int window) {
  return BAND_THREADS - 2 * (window / 2);
}
static PLM_HD inline int64_t band_strips(const plm__cfar_args &args) {
  return (args.width + band_outputs(args.window) - 1) / band_outputs(args.window);
}
static PLM_HD inline int64_t band_blocks(const plm__cfar_args &args, int rows) {
  return band_strips(args) * ((args.height + rows - 1) / rows);
}

/* The rows of a band: BAND_ROWS_MOST, halved (to BAND_ROWS_LEAST at least) until a frame
 * has kBandBlocksToFill blocks, two for each SM of an H100 or H200 (132), since each band
 * first loads the 2R rows above it again (at 512 x 512, window 15: 8 rows, 320 blocks). A
 * multiple of BAND_BATCH. */
constexpr int64_t kBandBlocksToFill = 2 * 132;
static inline int band_rows(const plm__cfar_args &args) {
  int rows = BAND_ROWS_MOST;
  while (rows > BAND_ROWS_LEAST && band_blocks(args, rows) < kBandBlocksToFill) rows /= 2;
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
 * running sums across each warp: their difference, plus the total (the running sum at the
 * last lane) of each warp from b's to the one before a's (two at most: a - b <= 45). */
template <typename S>
static PLM_HD inline S band_box(const S *running, int a, int b) {
  S sum = running[a];
  if (b >= 0) sum -= running[b];
  for (int w = b < 0 ? 0 : b / 32; w < a / 32; w++) sum += running[w * 32 + 31];
  return sum;
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
 * rows, by BAND_THREADS threads: T the frame's element type, S the sums' (uint32_t for u8,
 * uint64_t for u16, double for f32); level is plm__cfar_level of the frame. */
template <typename T, typename S, class Block, class Warp>
PLM_HD void cfar_band(const Block &block, const Warp &warp, const plm__cfar_args &args,
                      const T *frame_in, void *frame_out, double level, int64_t band_block,
                      int rows, band_memory<S> *memory) {
  const int R = args.window / 2, G = args.guard / 2, length = args.window + BAND_BATCH;
  const int64_t strips = band_strips(args);
  const int64_t x0 = (band_block % strips) * band_outputs(args.window);
  const int64_t y0 = (band_block / strips) * rows;
  const int64_t y_end = y0 + rows < args.height ? y0 + rows : args.height;
  const int t = block.thread();
  const int64_t column = x0 - R + t;
  const bool puts_out = t >= R && t < BAND_THREADS - R && column < args.width;
  const bool held = plm__cfar_holds(&args);
  T *const ring = (T *)(memory + 1), *const mine = ring + t;
  if (t == 0) memory->non_finite = 0;
  block.sync();

  /* Rows y0 - R - 1 .. y0 + R - 1 into ring slots 0 .. 2R: the window's sums of row
   * y0 - 1, and the guard's (ring slots R - G .. R + G). */
  S sums[BAND_SUMS] = {0, 0, 0, 0};
  int counts[2] = {0, 0};
  for (int k = 0; k <= 2 * R; k += BAND_BATCH) {
    T values[BAND_BATCH];
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++)
      if (k + j <= 2 * R)
        values[j] = band_load(args, frame_in, y0 - R - 1 + k + j, column, &memory->non_finite);
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++) {
      if (k + j > 2 * R) continue;
      mine[(k + j) * BAND_THREADS] = values[j];
      band_move(sums, counts, BAND_WINDOW_V, values[j], band_outside<T>(), level);
      if (k + j >= R - G && k + j <= R + G)
        band_move(sums, counts, BAND_GUARD_V, values[j], band_outside<T>(), level);
    }
  }

  int oldest = 0; /* the ring slot of row y - R - 1, y the batch's first row */
  for (int64_t y = y0; y < y_end; y += BAND_BATCH) {
    T entering[BAND_BATCH]; /* rows y + R .. y + R + BAND_BATCH - 1 */
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++)
      entering[j] = band_load(args, frame_in, y + R + j, column, &memory->non_finite);
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++)
      mine[band_wrap(oldest + 2 * R + 1 + j, length) * BAND_THREADS] = entering[j];
    block.sync(); /* the flag holds this batch's loads; every thread has read the last
                     batch's running sums */
    const bool counted = sizeof(T) == 4 && *(volatile int *)&memory->non_finite != 0;

    /* Down: row y + j's column sums, then their running sums across the warp. */
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++) {
      band_move(sums, counts, BAND_WINDOW_V, entering[j],
                mine[band_wrap(oldest + j, length) * BAND_THREADS], level);
      band_move(sums, counts, BAND_GUARD_V,
                mine[band_wrap(oldest + j + R + G + 1, length) * BAND_THREADS],
                mine[band_wrap(oldest + j + R - G, length) * BAND_THREADS], level);
      PLM_UNROLLED
      for (int s = 0; s < BAND_SUMS; s++)
        memory->running[s][j][t] = warp_running_sum(warp, sums[s]);
      if (counted) {
        PLM_UNROLLED
        for (int c = 0; c < 2; c++) memory->counts[c][j][t] = warp_running_sum(warp, counts[c]);
      }
    }
    block.sync();

    /* Across: each pixel's reference sums, then its output. */
    for (int j = 0; j < BAND_BATCH && puts_out && y + j < y_end; j++) {
      const int64_t py = y + j, px = column;
      const S s1 = band_box(memory->running[BAND_WINDOW_V][j], t + R, t - R - 1) -
                   band_box(memory->running[BAND_GUARD_V][j], t + G, t - G - 1);
      const S s2 = band_box(memory->running[BAND_WINDOW_V2][j], t + R, t - R - 1) -
                   band_box(memory->running[BAND_GUARD_V2][j], t + G, t - G - 1);
      int64_t n;
      if (counted) {
        n = band_box(memory->counts[0][j], t + R, t - R - 1) -
            band_box(memory->counts[1][j], t + G, t - G - 1);
      } else {
        n = plm__cfar_area(plm__cfar_square(py, px, args.window, args.height, args.width)) -
            plm__cfar_area(plm__cfar_square(py, px, args.guard, args.height, args.width));
      }
      double d, m;
      cfar_moments(args, ring, level, band_wrap(oldest + j + R + 1, length) * BAND_THREADS + t,
                   (S)n, s1, s2, &d, &m);
      const int64_t i = py * args.width + px;
      if (held)
        ((uint8_t *)frame_out)[i] = plm__cfar_held_mask(&args, py, px, d, m);
      else
        plm__cfar_write(&args, frame_out, i, d, m);
    }
    oldest = band_wrap(oldest + BAND_BATCH, length);
  }
}

#endif /* PLUME_KERNELS_CUDA_CFAR_BANDS_H */

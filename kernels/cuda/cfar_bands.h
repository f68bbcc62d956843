/* kernels/cuda/cfar_bands.h: cfar in one pass over a frame, for windows up to
 * BAND_WINDOW_MOST (97; the default is 15), reading the frame once and writing the output,
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
 *           ring in shared memory, where the rows leaving are read again (its own columns
 *           only) and where the across phase reads each pixel's own value (any column: so
 *           a batch's rows enter the ring after the barrier that ends the last batch's
 *           reads).
 *   across  each row's four column sums (window and guard; v and v^2) go to shared memory,
 *           and a thread takes a run of BAND_RUN (8) of a batch row's outputs (the block's
 *           64 threads: BAND_BATCH rows of BAND_RUNS runs), summing its first pixel's window
 *           and guard over their columns and sliding them along the run, a column entering
 *           and one leaving each: no shuffles, no running sums across the warp. Column c of
 *           a row sits at band_sum_place<Shift>(c), one word of padding each 16 columns
 *           (each 4 past window 57), so that a warp's lanes storing one of their two
 *           columns, or reading the same column of their runs (8 apart, in two rows),
 *           spread over the banks: 2 wavefronts for 32 8-byte sums, the least. Each output
 *           goes to a stage in shared memory.
 *   out     after a barrier, the block writes the stage's rows to the frame, consecutive
 *           threads at consecutive pixels (a run's lanes, 8 pixels apart, would store a
 *           request's 32 outputs to 8 sectors, or 32 for z).
 * The 2R columns at a strip's sides only feed their neighbours: a strip puts out
 * BAND_COLUMNS - 2R columns (114 of 128 at window 15, 84 at 45, 66 at 63, 32 at 97), and
 * the ring grows with the window: past the 48 KiB a block has without asking (f32 from
 * window 47 to z, 49 to a mask; u16 from 83 and 87) the launch opts in to more
 * (band_shared_bytes, at most kBandSharedMost). Windows past 97 take summed-area tables of
 * the frame (kernels/cuda/cfar.cu): a strip would put out fewer than a quarter of its
 * columns, and the tables' passes, whose cost does not grow with the window, come near the
 * bands' by the emulated estimate (kernels/cuda/cfar.cu, "The bands' cost").
 *
 * f32 counts its finite cells only in a band where a pixel loaded so far is not finite (a
 * flag in shared memory, read after the barrier that follows the loads), else takes the
 * boxes' areas, the same integers; a cell outside the frame is a NaN in the ring, which
 * adds nothing to any sum and is counted by nobody (plm__cfar_cell_f32), and 0 for u8 and
 * u16. Integer sums are exact in any order, so u8 and u16 have the CPU's bits: uint64_t for
 * u16, uint32_t for u8, whose boxes' sums stay below 2^32 (97^2 x 255^2 < 2^30), so their
 * differences are exact modulo 2^32 and the column sums move half the bytes. f32's doubles
 * are added and taken away as the rows pass, not read from a table of the frame: on the
 * tests' frames z agrees with the CPU's within 1e-9 x max(1, |z|), as the tables' did. Their
 * rounding is relative to the sums they pass through: a pixel far larger than its
 * neighbours leaves its rounding in its column's sums for the rest of the band (up to
 * 64 + R rows) and in the sums that slide over it along a run (at most BAND_RUN outputs),
 * about as far as the tiles' span tables left it, and far less than the CPU's tables of
 * the whole frame, whose
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
  BAND_RUN = 8,   /* a batch row's outputs a thread takes across */
  BAND_RUNS = BAND_COLUMNS / BAND_RUN,
  BAND_RING_PITCH = BAND_COLUMNS + 2, /* a ring row (band_place): see band_place */
  BAND_WINDOW_MOST = 97,
  BAND_ROWS_MOST = 64,
  BAND_ROWS_LEAST = 8
};

/* The four column sums a thread keeps: over the window's rows and the guard's, of v and v^2. */
enum { BAND_WINDOW_V, BAND_WINDOW_V2, BAND_GUARD_V, BAND_GUARD_V2, BAND_SUMS };

/* Where a strip's column c sits in a ring row of shared memory: its warp's
 * BAND_WARP_COLUMNS, the even columns' lanes then the odd ones', so that a warp storing or
 * loading one of its lanes' two columns touches consecutive words, the second warp's a
 * word further on. The across phase's lanes read one column of each of their runs in two
 * ring rows (16 lanes a row, BAND_RUN columns apart): the word further on puts a row's 16
 * on 16 banks (two in each four), and ring rows 2 words past a multiple of 32 apart
 * (BAND_RING_PITCH) put the next row on the other 16, so 4-byte elements take 1
 * wavefront, 2 where the two rows are the ring's last and first (4 and 4 with neither:
 * tests/test_cfar_cuda_logic.cpp counts them). */
static PLM_HD inline int band_place(int c) {
  return c / BAND_WARP_COLUMNS * (BAND_WARP_COLUMNS + 1) + c % BAND_PER_THREAD * 32 +
         c % BAND_WARP_COLUMNS / BAND_PER_THREAD;
}
static_assert((BAND_COLUMNS - 1) / BAND_WARP_COLUMNS * (BAND_WARP_COLUMNS + 1) + BAND_WARP_COLUMNS -
                      1 <
                  BAND_RING_PITCH,
              "a ring row fits its pitch");

/* Where a strip's column c sits in a row of column sums or counts (band_memory):
 * c + c / 2^Shift, a word of padding after each 2^Shift columns, in rows
 * band_sum_pitch(Shift) apart. A warp's lanes storing one of their two columns (2t + k) and
 * a warp's lanes reading one column of each of their runs (BAND_RUN apart, in two rows)
 * each meet every bank the fewest times for 8-byte sums (2 wavefronts for 32 lanes, 1 for
 * 16 or fewer), and for 4-byte counts (which f32 takes only in a band with a pixel that is
 * not finite) at most twice the fewest. Up to window BAND_WINDOW_NARROW_MOST a word after
 * each 16 columns, 136 a row (Shift 4). Past it a row has 8 runs or fewer at some step,
 * and a warp's two rows would meet the same banks (2 wavefronts where the 16 lanes' bytes
 * take 1) unless a word follows each 4 columns, 161 a row (Shift 2): a search of paddings
 * and pitches found no narrower layout that serves every window, and at window 15 the
 * wider one would cost f32 a block an SM. The layout is the kernel's (band_kernel<T, S,
 * Shift>): chosen at run time, f32's kernel spilled at its 128 registers.
 * tests/test_cfar_cuda_logic.cpp counts the requests for every window. */
enum { BAND_WINDOW_NARROW_MOST = 57, BAND_SHIFT_NARROW = 4, BAND_SHIFT_WIDE = 2 };
static PLM_HD constexpr int band_sum_shift(int window) {
  return window <= BAND_WINDOW_NARROW_MOST ? BAND_SHIFT_NARROW : BAND_SHIFT_WIDE;
}
static PLM_HD constexpr int band_sum_pitch(int shift) {
  return shift == BAND_SHIFT_NARROW ? 136 : 161;
}
template <int Shift>
static PLM_HD inline int band_sum_place(int c) {
  return c + c / (1 << Shift);
}
static_assert(BAND_COLUMNS - 1 + ((BAND_COLUMNS - 1) >> BAND_SHIFT_NARROW) <
                      band_sum_pitch(BAND_SHIFT_NARROW) &&
                  BAND_COLUMNS - 1 + ((BAND_COLUMNS - 1) >> BAND_SHIFT_WIDE) <
                      band_sum_pitch(BAND_SHIFT_WIDE),
              "a row of column sums fits its pitch");
static_assert(BAND_THREADS == BAND_BATCH * BAND_RUNS, "the across phase takes a run a thread");

/* The output columns of a strip. */
static PLM_HD constexpr int band_outputs(int window) {
  return BAND_COLUMNS - 2 * (window / 2);
}

/* The stage, where the across phase leaves a batch's outputs (output o of batch row j, strip
 * column R + o) for the block to write them to the frame a row at a time, consecutive
 * threads at consecutive pixels: its runs' lanes, BAND_RUN pixels apart, would store each to
 * a sector of its own (a 4-byte z), or 8 to a request (a byte). A byte (the mask) at
 * j * pitch + o, rows an odd number of words apart; a 4-byte z at j * pitch + o with o's
 * low three bits crossed with its 32-block and its row's parity (rows a multiple of 32
 * apart). Either way a warp's runs' lanes storing (two rows, 16 runs) and its consecutive
 * lanes loading meet each bank once (tests/test_cfar_cuda_logic.cpp counts them). */
static PLM_HD constexpr int band_stage_pitch(int window, int output_bytes) {
  return output_bytes == 1 ? (band_outputs(window) + 3) / 8 * 8 + 4
                           : (band_outputs(window) + 31) / 32 * 32;
}
static PLM_HD inline int band_stage_place(int j, int o, int pitch, int output_bytes) {
  return j * pitch + (output_bytes == 1 ? o : o ^ ((o / 32 + 4 * (j & 1)) & 7));
}

/* A block's shared memory: each batch row's column sums (at band_sum_place of the column),
 * the finite cells' counts likewise (window, guard; f32 bands with a pixel that is not
 * finite) and the flag of such a pixel; then, right after the struct, the ring of each
 * column's last window + BAND_BATCH rows (rows y - R - 1 .. y + BAND_BATCH - 1 + R; slot k
 * of column c at k * BAND_RING_PITCH + band_place(c), of the frame's element type), and
 * the stage (band_stage_pitch) at the next multiple of 4 bytes: band_shared_bytes in all,
 * 31.4 KiB for f32 to a mask at window 15 (7 blocks in an H100's 228 KiB an SM; 32.9 KiB,
 * 6 blocks, to z), 47.6 KiB to z at 45; at 63 59.5 KiB to a mask and 60.7 to z (3 blocks
 * either way, in the wider rows of sums: band_sum_shift), 77.0 KiB to z at 97, past the
 * 48 KiB a block has without opting in (plm__cuda_opt_in_shared, kernels/cuda/launch.h). */
template <typename S, int Shift>
struct band_memory {
  S columns[BAND_SUMS][BAND_BATCH][band_sum_pitch(Shift)];
  int counts[2][BAND_BATCH][band_sum_pitch(Shift)];
  alignas(8) int non_finite;
};
static PLM_HD constexpr size_t band_ring_bytes(int window, int element_bytes) {
  return ((size_t)(window + BAND_BATCH) * BAND_RING_PITCH * element_bytes + 3) / 4 * 4;
}
template <typename S>
static PLM_HD constexpr size_t band_shared_bytes(int window, int element_bytes, int output_bytes) {
  return (band_sum_shift(window) == BAND_SHIFT_NARROW ? sizeof(band_memory<S, BAND_SHIFT_NARROW>)
                                                      : sizeof(band_memory<S, BAND_SHIFT_WIDE>)) +
         band_ring_bytes(window, element_bytes) +
         (size_t)BAND_BATCH * band_stage_pitch(window, output_bytes) * output_bytes;
}
/* The shared memory a block may take: 48 KiB without asking, past it an opt-in
 * (cudaFuncAttributeMaxDynamicSharedMemorySize) up to what every architecture of plume's
 * default build (sm_80 and later) allows: 99 KiB on sm_86 and sm_89, which run the sm_80
 * code. A build for sm_75 (64 KiB) would fail f32's windows from 71 to z, 73 to a mask
 * (docs/building.md). */
constexpr size_t kBandSharedMost = 99 * 1024;
static_assert(band_shared_bytes<double>(BAND_WINDOW_MOST, 4, 4) <= kBandSharedMost,
              "the largest window's shared memory fits every architecture's opt-in");

/* The bytes of an output: 4 for z, 1 for the mask (with or without a hold). */
static PLM_HD inline int band_output_bytes(const plm__cfar_args &args) {
  return args.output == PLM_CFAR_Z && !plm__cfar_holds(&args) ? 4 : 1;
}

/* Whether a frame's cfar takes the bands (else summed-area tables in the scratch). The
 * bands' arithmetic on rows and columns is 64-bit: any frame. */
static PLM_HD inline bool in_bands(const plm__cfar_args &args) {
  return args.window <= BAND_WINDOW_MOST;
}

/* The strips of a frame, and the (strip, band) pairs of a frame cut into bands of `rows`
 * rows (a launch takes them for every frame of the stack: cfar_frame_bands). */
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
  *n = plm__cfar_finite(v);
  *s = plm__cfar_centred(v, level);
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
  if (sizeof(T) == 4 && !plm__cfar_finite((float)v)) *(volatile int *)non_finite = 1;
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

/* A run's first window or guard: the sum of a row's column sums (or counts) over the
 * strip's columns first .. last. */
template <int Shift, typename S>
static PLM_HD inline S band_columns_sum(const S *row, int first, int last) {
  S sum = 0;
  for (int c = first; c <= last; c++) sum += row[band_sum_place<Shift>(c)];
  return sum;
}

/* A window or guard one column to the right: column `entering` in, `leaving` out. */
template <int Shift, typename S>
static PLM_HD inline void band_slide(S *sum, const S *row, int entering, int leaving) {
  *sum += row[band_sum_place<Shift>(entering)] - row[band_sum_place<Shift>(leaving)];
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
template <typename T, typename S, int Shift, class Block>
PLM_HD void cfar_band(const Block &block, const plm__cfar_args &args, const T *frame_in,
                      void *frame_out, double level, int64_t band_block, int rows,
                      band_memory<S, Shift> *memory) {
  enum { K = BAND_PER_THREAD };
  const int R = args.window / 2, G = args.guard / 2, length = args.window + BAND_BATCH;
  const int64_t strips = band_strips(args);
  const int64_t x0 = (band_block % strips) * band_outputs(args.window);
  const int64_t y0 = (band_block / strips) * rows;
  const int64_t y_end = y0 + rows < args.height ? y0 + rows : args.height;
  const int t = block.thread();
  const bool held = plm__cfar_holds(&args);
  T *const ring = (T *)(memory + 1);
  const int out_bytes = band_output_bytes(args);
  const int outputs = band_outputs(args.window);
  const int stage_pitch = band_stage_pitch(args.window, out_bytes);
  unsigned char *const stage =
      (unsigned char *)(memory + 1) + band_ring_bytes(args.window, sizeof(T));
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
        ring[(r + j) * BAND_RING_PITCH + place[k]] = values[k][j];
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
    block.sync(); /* the flag holds this batch's loads; every thread has read the last
                     batch's column sums and its pixels' values from the ring */
    const bool counted = sizeof(T) == 4 && *(volatile int *)&memory->non_finite != 0;
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++) {
      PLM_UNROLLED
      for (int k = 0; k < K; k++)
        ring[band_wrap(oldest + 2 * R + 1 + j, length) * BAND_RING_PITCH + place[k]] =
            entering[k][j];
    }

    /* Down: row y + j's column sums, into shared memory for the across phase. */
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++) {
      PLM_UNROLLED
      for (int k = 0; k < K; k++) {
        const T *const mine = ring + place[k];
        band_move(sums[k], counts[k], BAND_WINDOW_V, entering[k][j],
                  mine[band_wrap(oldest + j, length) * BAND_RING_PITCH], level);
        band_move(sums[k], counts[k], BAND_GUARD_V,
                  mine[band_wrap(oldest + j + R + G + 1, length) * BAND_RING_PITCH],
                  mine[band_wrap(oldest + j + R - G, length) * BAND_RING_PITCH], level);
      }
      PLM_UNROLLED
      for (int k = 0; k < K; k++) {
        const int at = band_sum_place<Shift>(K * t + k);
        PLM_UNROLLED
        for (int s = 0; s < BAND_SUMS; s++) memory->columns[s][j][at] = sums[k][s];
        if (counted) {
          memory->counts[0][j][at] = counts[k][0];
          memory->counts[1][j][at] = counts[k][1];
        }
      }
    }
    block.sync();

    /* Across: the thread's run of batch row j's outputs, strip columns first .. end - 1
     * (the last run of a row may be shorter or empty), each pixel's reference sums slid
     * from its left neighbour's. */
    const int j = t / BAND_RUNS, first = R + BAND_RUN * (t % BAND_RUNS);
    const int end = first + BAND_RUN < BAND_COLUMNS - R ? first + BAND_RUN : BAND_COLUMNS - R;
    const int64_t py = y + j;
    if (py < y_end && first < end) {
      S window[2], guard[2];
      int window_n = 0, guard_n = 0;
      PLM_UNROLLED
      for (int q = 0; q < 2; q++) {
        window[q] =
            band_columns_sum<Shift>(memory->columns[BAND_WINDOW_V + q][j], first - R, first + R);
        guard[q] =
            band_columns_sum<Shift>(memory->columns[BAND_GUARD_V + q][j], first - G, first + G);
      }
      if (counted) {
        window_n = band_columns_sum<Shift>(memory->counts[0][j], first - R, first + R);
        guard_n = band_columns_sum<Shift>(memory->counts[1][j], first - G, first + G);
      }
      for (int a = first; a < end; a++) {
        const int64_t px = x0 - R + a;
        if (px >= args.width) break;
        if (a > first) {
          PLM_UNROLLED
          for (int q = 0; q < 2; q++) {
            band_slide<Shift>(&window[q], memory->columns[BAND_WINDOW_V + q][j], a + R, a - R - 1);
            band_slide<Shift>(&guard[q], memory->columns[BAND_GUARD_V + q][j], a + G, a - G - 1);
          }
          if (counted) {
            band_slide<Shift>(&window_n, memory->counts[0][j], a + R, a - R - 1);
            band_slide<Shift>(&guard_n, memory->counts[1][j], a + G, a - G - 1);
          }
        }
        const S s1 = window[0] - guard[0], s2 = window[1] - guard[1];
        int64_t n;
        if (counted) {
          n = window_n - guard_n;
        } else {
          n = plm__cfar_area(plm__cfar_square(py, px, args.window, args.height, args.width)) -
              plm__cfar_area(plm__cfar_square(py, px, args.guard, args.height, args.width));
        }
        double d, m;
        cfar_moments(args, ring, level,
                     band_wrap(oldest + j + R + 1, length) * BAND_RING_PITCH + band_place(a), (S)n,
                     s1, s2, &d, &m);
        const int at = band_stage_place(j, a - R, stage_pitch, out_bytes);
        if (held)
          stage[at] = plm__cfar_held_mask(&args, py, px, d, m);
        else
          plm__cfar_write(&args, stage, at, d, m); /* z or the mask, as out_bytes says */
      }
    }
    block.sync();

    /* Out: the stage's rows to the frame, consecutive threads at consecutive pixels (the
     * next batch's first barrier comes before its across phase writes the stage again). */
    PLM_UNROLLED
    for (int r = 0; r < BAND_BATCH && y + r < y_end; r++) {
      for (int o = t; o < outputs && x0 + o < args.width; o += BAND_THREADS) {
        const int at = band_stage_place(r, o, stage_pitch, out_bytes);
        const int64_t i = (y + r) * args.width + x0 + o;
        if (out_bytes == 4)
          ((float *)frame_out)[i] = ((const float *)stage)[at];
        else
          ((uint8_t *)frame_out)[i] = stage[at];
      }
    }
    oldest = band_wrap(oldest + BAND_BATCH, length);
  }
}

/* Frame f's (strip, band) blocks first, first + step, ... of the stack's args.frames (a
 * launch's grid has a row of blocks for each frame, at most 65535 rows, so that one launch
 * fills the GPU with a stack of small frames, where a launch a frame put out a few blocks
 * each). */
template <typename T, typename S, int Shift, class Block>
PLM_HD void cfar_frame_bands(const Block &block, const plm__cfar_args &args, int64_t f,
                             int64_t first, int64_t step, int rows, band_memory<S, Shift> *memory) {
  const void *frame_in = plm__cfar_frame_in(&args, f);
  void *frame_out = plm__cfar_frame_out(&args, f);
  const double level = plm__cfar_level(frame_in, args.dtype);
  const int64_t blocks = band_blocks(args, rows);
  for (int64_t b = first; b < blocks; b += step)
    cfar_band<T, S, Shift>(block, args, (const T *)frame_in, frame_out, level, b, rows, memory);
}

#endif /* PLUME_KERNELS_CUDA_CFAR_BANDS_H */

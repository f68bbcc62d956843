/* kernels/cuda/cfar_bands.h: cfar in one pass over a frame, for windows up to
 * BAND_WINDOW_MOST (97; the default is 15), reading the frame once and writing the output,
 * nothing else (internal; C++, __host__ __device__, so that tests/test_cfar_cuda_logic.cpp
 * runs it on emulated threads; the kernel around it is in kernels/cuda/cfar.cu).
 *
 * A pixel's reference sums (plume/cfar.h) are its window's box less its guard's, of v, v^2
 * and, for f32, 1 when finite (kernels/common/cfar.h). A box is separable: its sum is the
 * sum over its columns of each column's sum over its rows. With w(c) and g(c) column c's
 * sums over the rows of the window and of the guard (R = window / 2, G = guard / 2), the
 * reference sum of the pixel at column a is the sum over columns up to a + R of
 *   k(c) = w(c) - w(c - 2R - 1) - g(c - R + G) + g(c - R - G - 1)
 * (a column left of the strip adds nothing): the w terms leave the window's 2R + 1
 * columns, the g terms the guard's 2G + 1. So one quantity a column (of v and of v^2)
 * carries what four column sums did. A block of BAND_THREADS (64) takes a strip of
 * BAND_COLUMNS (128) columns of a band of rows, BAND_PER_THREAD (2) side by side a thread:
 *   down    thread t owns strip columns 2t and 2t + 1 (image columns x0 - R + 2t + k, x0
 *           the strip's first output column) and moves their k down a row at a time (in
 *           registers through a batch of rows, in shared memory between batches): its
 *           own column's entering cell, and seven cells read from a ring in shared
 *           memory of each column's last window + BAND_BATCH rows (its own leaving one,
 *           the entering and leaving ones of the three other columns). A thread loads
 *           its columns' rows once each, two columns as one pair, a batch of BAND_BATCH
 *           rows while the batch before runs, and stores them to the ring at the top of
 *           the next (after the barrier that ends the last reads of their slots); a
 *           barrier, and every column's cells are there. A band's first k are summed
 *           from its first window's rows.
 *   across  each batch row's k go to shared memory (column c at band_sum_place(c), a word
 *           of padding each 16 columns); a thread takes BAND_RUN (8) consecutive columns
 *           of a batch row (the block's 64 threads: BAND_BATCH rows of BAND_RUNS runs),
 *           sums their k, adds the totals of the runs to its left through its row's 16
 *           lanes (four shuffle steps a quantity), then walks its columns keeping the
 *           running sum of k, which at column c is the reference sum of the output at
 *           column c - R (for c from 2R). The pixel's own value comes from the ring;
 *           each output goes to a stage in shared memory.
 *   out     after a barrier, the block writes the stage's rows to the frame, consecutive
 *           threads at consecutive pixels (a run's lanes, 8 pixels apart, would store a
 *           request's 32 outputs to 8 sectors, or 32 for z).
 * The 2R columns at a strip's sides only feed their neighbours: a strip puts out
 * BAND_COLUMNS - 2R columns (114 of 128 at window 15, 84 at 45, 66 at 63, 32 at 97), and
 * the ring grows with the window: past the 48 KiB a block has without asking (f32 from
 * window 67 to z, 69 to a mask; u8 and u16 never) the launch opts in to more
 * (band_shared_bytes, at most kBandSharedMost). Windows past 97 take summed-area tables
 * of the frame (kernels/cuda/cfar.cu): a strip would put out fewer than a quarter of its
 * columns. Until 2026-12-07 each column kept its four sums (window and guard, v and v^2)
 * and a thread slid a run of 8 outputs along them, 12 loads of 8 bytes a pixel and a
 * run's first window and guard, 20 columns, again; the cost of both is in
 * kernels/cuda/cfar.cu ("The bands' cost").
 *
 * f32 counts its finite cells only in a band where a pixel loaded so far is not finite (a
 * flag in shared memory, read after the barrier that follows the ring's stores), else
 * takes the boxes' areas, the same integers; a cell outside the frame is a NaN in the
 * ring, which adds nothing to any sum and is counted by nobody (plm__cfar_cell_f32), and 0
 * for u8 and u16. Integer sums are exact in any order, so u8 and u16 have the CPU's bits:
 * uint64_t for u16, uint32_t for u8, whose boxes' sums stay below 2^32 (97^2 x 255^2 <
 * 2^30), so that k and its running sums, exact modulo 2^32, end at the exact reference
 * sums. f32's doubles are added and taken away as the rows pass, not read from a table of
 * the frame: on the tests' frames z agrees with the CPU's within 1e-9 x max(1, |z|). Their
 * rounding is relative to the sums they pass through: a pixel far larger than its
 * neighbours leaves its rounding in the k of the four columns it passed through for the
 * rest of the band (up to 64 + R rows), and the running sums across carry it to the
 * strip's right edge (up to 114 outputs a row), where the four column sums kept it to
 * the 2R + 1 columns whose windows hold it. Around one pixel of 1e6 to 1e8 among values
 * 1 +- 1e-3 (200 x 300, window 15, guard 5; 2026-12-07, a throwaway program against
 * long double) 2,637 to 2,652 of the 60,000 z-scores were wrong at 1e-3 (the four sums:
 * 382; the CPU's tables of the whole frame, whose entries carry every pixel above and to
 * the left: 16,591); at 1e4, none. Products are rounded one by one (plm__cfar_mul), so nvcc
 * contracts nothing the CPU does not. */
#ifndef PLUME_KERNELS_CUDA_CFAR_BANDS_H
#define PLUME_KERNELS_CUDA_CFAR_BANDS_H

#include <string.h>

#include <type_traits>

#include "kernels/common/cfar.h"
#include "kernels/common/plm_hd.h"
#include "kernels/cuda/vector_of.h"

enum {
  BAND_THREADS = 64,
  BAND_PER_THREAD = 2,                           /* columns a thread owns, side by side */
  BAND_COLUMNS = BAND_THREADS * BAND_PER_THREAD, /* a strip's, halo included */
  BAND_WARP_COLUMNS = 32 * BAND_PER_THREAD,
  BAND_BATCH = 4,                      /* rows a thread moves down between two barriers */
  BAND_RUN = 8,                        /* a batch row's columns a thread sums across */
  BAND_RUNS = BAND_COLUMNS / BAND_RUN, /* a batch row's threads across: 16, half a warp */
  BAND_RING_PITCH = BAND_COLUMNS + 2,  /* a ring row (band_place): see band_place */
  BAND_SUM_PITCH = 136,                /* a row of k (band_sum_place) */
  BAND_WINDOW_MOST = 97,
  BAND_ROWS_MOST = 64,
  BAND_ROWS_LEAST = 8
};

/* The two quantities of k a thread keeps for each of its columns: of v and of v^2. */
enum { BAND_V, BAND_V2, BAND_SUMS };

/* Where a strip's column c sits in a ring row of shared memory: its warp's
 * BAND_WARP_COLUMNS, the even columns' lanes then the odd ones', so that a warp's 32
 * lanes storing or loading one of their two columns, or the cells of any columns 2t + k -
 * offset (the down phase's other columns), touch 32 consecutive words: the least
 * wavefronts. The across phase's lanes reading each output's own value (a column of each
 * of a row's 16 runs, 8 apart, in two ring rows BAND_RING_PITCH apart) meet each of 16
 * banks twice: 2 wavefronts where 1 would do, the price of the down phase's loads at
 * every offset (a word of padding after each warp's columns gave the across phase 1 and
 * the down phase 2 for half its loads). tests/test_cfar_cuda_logic.cpp counts them. */
static PLM_HD inline int band_place(int c) {
  return c / BAND_WARP_COLUMNS * BAND_WARP_COLUMNS + c % BAND_PER_THREAD * 32 +
         c % BAND_WARP_COLUMNS / BAND_PER_THREAD;
}
static_assert(BAND_COLUMNS <= BAND_RING_PITCH, "a ring row fits its pitch");

/* Where a strip's column c sits in a row of k or of its counts (band_memory): c + c / 16,
 * a word of padding after each 16 columns, rows BAND_SUM_PITCH apart. A warp's lanes
 * storing one of their two columns (2t + k), and a warp's lanes loading one column of each
 * of their runs (BAND_RUN apart, in two rows), each meet every bank the fewest times for
 * 8-byte values (2 wavefronts for 32 lanes), and at most twice the fewest for 4-byte
 * counts (which f32 takes only in a band with a pixel that is not finite). */
static PLM_HD inline int band_sum_place(int c) {
  return c + c / 16;
}
static_assert(BAND_COLUMNS - 1 + (BAND_COLUMNS - 1) / 16 < BAND_SUM_PITCH,
              "a row of k fits its pitch");
static_assert(BAND_THREADS == BAND_BATCH * BAND_RUNS, "the across phase takes a run a thread");
static_assert(BAND_RUNS == 16, "a batch row's runs are half a warp (the scan across them)");

/* The output columns of a strip. */
static PLM_HD constexpr int band_outputs(int window) {
  return BAND_COLUMNS - 2 * (window / 2);
}

/* The stage, where the across phase leaves a batch's outputs (the output of batch row j
 * whose running sum of k ends at strip column c, the output at strip column c - R and
 * number c - 2R of the strip's, at band_stage_place(j, c)) for the block to write them to the frame
 * a row at a time, consecutive threads at consecutive pixels: the runs' lanes, BAND_RUN pixels
 * apart, would store each to a sector of its own (a 4-byte z), or 8 to a request (a byte). A byte
 * (the mask) at j * pitch + c, rows an odd number of words apart; a 4-byte z at j * pitch + c with
 * c's low three bits crossed with its 32-block and its row's parity (rows a multiple of 32 apart).
 * Either way a warp's runs' lanes storing (two rows, 16 runs) and its consecutive lanes loading 32
 * columns from a multiple of 32 meet each bank once (tests/test_cfar_cuda_logic.cpp counts them).
 */
static PLM_HD constexpr int band_stage_pitch(int output_bytes) {
  return output_bytes == 1 ? BAND_COLUMNS + 4 : BAND_COLUMNS;
}
static PLM_HD inline int band_stage_place(int j, int c, int output_bytes) {
  return j * band_stage_pitch(output_bytes) +
         (output_bytes == 1 ? c : c ^ ((c / 32 + 4 * (j & 1)) & 7));
}

/* A block's shared memory: each batch row's k (at band_sum_place of the column), the
 * finite cells' count of k likewise (f32 bands with a pixel that is not finite) and the
 * flag of such a pixel; then, right after the struct, the ring of each column's last
 * window + BAND_BATCH rows (rows y - R - 1 .. y + BAND_BATCH - 1 + R; slot i of column c
 * at i * BAND_RING_PITCH + band_place(c), of the frame's element type), and the stage
 * (band_stage_pitch) at the next multiple of 4 bytes: band_shared_bytes in all, 20.8 KiB
 * for f32 to a mask at window 15 (22.3 to z; 31.4 and 32.9 with the four column sums
 * before 2026-12-07), 46.7 KiB to z at 63, 63.9 at 97, past the 48 KiB a block has without
 * opting in (plm__cuda_opt_in_shared, kernels/cuda/launch.h) from window 67 to z. */
template <typename S>
struct band_memory {
  S k[BAND_SUMS][BAND_BATCH][BAND_SUM_PITCH];
  int counts[BAND_BATCH][BAND_SUM_PITCH];
  alignas(8) int non_finite;
};
static PLM_HD constexpr size_t band_ring_bytes(int window, int element_bytes) {
  return ((size_t)(window + BAND_BATCH) * BAND_RING_PITCH * element_bytes + 3) / 4 * 4;
}
template <typename S>
static PLM_HD constexpr size_t band_shared_bytes(int window, int element_bytes, int output_bytes) {
  return sizeof(band_memory<S>) + band_ring_bytes(window, element_bytes) +
         (size_t)BAND_BATCH * band_stage_pitch(output_bytes) * output_bytes;
}
/* The shared memory a block may take: 48 KiB without asking, past it an opt-in
 * (cudaFuncAttributeMaxDynamicSharedMemorySize) up to what every architecture of plume's
 * default build (sm_80 and later) allows: 99 KiB on sm_86 and sm_89, which run the sm_80
 * code. The largest, f32 to z at window 97, takes 63.9 KiB: within sm_75's 64 KiB too. */
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

/* Strip s's first output column is s band_outputs - band_shift: one to the left when R is
 * odd, so that every strip's first column (x0 - R) is even and a thread's two columns
 * (x0 - R + 2t, + 1) are one aligned pair (band_load_pair). */
static PLM_HD constexpr int band_shift(int window) {
  return window / 2 % 2;
}

/* The strips of a frame, and the (strip, band) pairs of a frame cut into bands of `rows`
 * rows (a launch takes them for every frame of the stack: cfar_frame_bands). */
static PLM_HD inline int64_t band_strips(const plm__cfar_args &args) {
  return (args.width + band_shift(args.window) + band_outputs(args.window) - 1) /
         band_outputs(args.window);
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
  *q = (uint32_t)v * v; /* below 2^32: a 32-bit product */
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

/* A thread's two cells of a row, columns column and column + 1 (column even): one load of
 * both, a CUDA vector of two (kernels/cuda/vector_of.h), where they are inside the frame and their
 * address is a multiple of the vector's size (every row when the frame's width is even:
 * a warp's request then touches the sectors of its 64 columns once, where a load a column
 * touched each twice), else band_load each. The vector moves through __ldcg, so that the
 * emulator too sees one access of its width (kernels/cuda/map.h's quads do the same). */
static_assert(BAND_PER_THREAD == 2, "a thread's columns are one pair");
template <typename T>
using band_pair = typename plm__vector_of<T, 2>::type;
template <typename T>
static PLM_HD inline band_pair<T> band_load_pair(const plm__cfar_args &args, const T *frame,
                                                 int64_t row, int64_t column, int *non_finite) {
  band_pair<T> pair;
  if (row >= 0 && row < args.height && column >= 0 && column + 1 < args.width) {
    const T *const at = frame + row * args.width + column;
    if ((uintptr_t)at % sizeof(pair) == 0) {
#ifdef __CUDACC__
      pair = __ldcg((const band_pair<T> *)at);
#else
      memcpy(&pair, at, sizeof pair); /* tests/test_cfar_cuda_logic.cpp, on the host */
#endif
      if (sizeof(T) == 4 && !(plm__cfar_finite((float)pair.x) && plm__cfar_finite((float)pair.y)))
        *(volatile int *)non_finite = 1;
      return pair;
    }
  }
  pair.x = band_load(args, frame, row, column, non_finite);
  pair.y = band_load(args, frame, row, column + 1, non_finite);
  return pair;
}

/* Element k (0 or 1) of a pair. */
template <typename P>
static PLM_HD inline auto band_pair_cell(const P &pair, int k) -> decltype(pair.x) {
  return k == 0 ? pair.x : pair.y;
}

/* A cell added to (sign 1) or taken from (sign -1) a column's k and its count. */
template <typename T, typename S>
static PLM_HD inline void band_add(S k[BAND_SUMS], int *count, T cell, double level, int sign) {
  S s, q;
  int n;
  band_cell(cell, level, &s, &q, &n);
  if (sign > 0) {
    k[BAND_V] += s;
    k[BAND_V2] += q;
    *count += n;
  } else {
    k[BAND_V] -= s;
    k[BAND_V2] -= q;
    *count -= n;
  }
}

/* The cells of [p - half, p + half] inside [0, size): a box's side, clipped to the frame
 * as plm__cfar_square clips it. */
static PLM_HD inline int band_extent(int64_t p, int half, int64_t size) {
  const int64_t first = p - half < 0 ? 0 : p - half,
                end = p + half + 1 > size ? size : p + half + 1;
  return (int)(end - first);
}

/* A ring slot, i < 2 * length. */
static PLM_HD inline int band_wrap(int i, int length) {
  return i >= length ? i - length : i;
}

/* Where the cells that move column c's k sit in a ring row (band_place): c's own (its
 * window sum enters k), and the columns 2R + 1 to the left (window_left: its window sum
 * leaves), R - G to the left (guard_near: its guard sum leaves) and R + G + 1 to the left
 * (guard_far: its guard sum enters); -1 for a column left of the strip, which adds
 * nothing. */
struct band_k_places {
  int own, window_left, guard_near, guard_far;
};
static PLM_HD inline band_k_places band_k_of(int c, int R, int G) {
  const int w = c - 2 * R - 1, g = c - R + G, l = c - R - G - 1;
  return band_k_places{band_place(c), w >= 0 ? band_place(w) : -1, g >= 0 ? band_place(g) : -1,
                       l >= 0 ? band_place(l) : -1};
}

/* Column c's k moved down a row: the cells of the rows entering and leaving its window's
 * and its three other columns' boxes, in the ring rows `in` and `out` (the window's rows)
 * and `guard_in` and `guard_out` (the guard's). */
template <typename T, typename S>
static PLM_HD inline void band_k_step(S k[BAND_SUMS], int *count, T entering, const T *in,
                                      const T *out, const T *guard_in, const T *guard_out,
                                      const band_k_places &places, double level) {
  band_add(k, count, entering, level, 1);
  band_add(k, count, out[places.own], level, -1);
  if (places.window_left >= 0) {
    band_add(k, count, in[places.window_left], level, -1);
    band_add(k, count, out[places.window_left], level, 1);
  }
  if (places.guard_near >= 0) {
    band_add(k, count, guard_in[places.guard_near], level, -1);
    band_add(k, count, guard_out[places.guard_near], level, 1);
  }
  if (places.guard_far >= 0) {
    band_add(k, count, guard_in[places.guard_far], level, 1);
    band_add(k, count, guard_out[places.guard_far], level, -1);
  }
}

/* The cells at `place` of ring slots first .. last, added with `sign` to a k. */
template <typename T, typename S>
static PLM_HD inline void band_k_fill(S k[BAND_SUMS], int *count, const T *ring, int place,
                                      int first, int last, double level, int sign) {
  for (int slot = first; slot <= last; slot++)
    band_add(k, count, ring[slot * BAND_RING_PITCH + place], level, sign);
}

/* Whether the across phase keeps a run's BAND_RUN k of each quantity in registers from
 * its first pass (their totals) to its second (the outputs), or reads them again: kept
 * for f32's doubles and u8's 32-bit sums (0.14 wavefronts fewer an output at window 15,
 * about a seventh of the shared-memory count), read again for u16's 64-bit integer sums,
 * whose registers would spill for sm_80 under the kernel's 168. */
template <typename S>
static PLM_HD constexpr bool band_keeps_run() {
  return sizeof(S) == 4 || std::is_floating_point<S>::value;
}

/* The running sum over the 16 lanes of a batch row (half a warp: lanes 0-15 or 16-31) of
 * each lane's v, inclusive (every lane of the warp calls it). */
template <typename V, class Warp>
static PLM_HD inline V band_runs_sum(const Warp &warp, V v) {
  const int lane = warp.lane() % BAND_RUNS;
  for (int d = 1; d < BAND_RUNS; d *= 2) {
    const V u = warp.shuffle(v, lane >= d ? warp.lane() - d : warp.lane());
    if (lane >= d) v += u;
  }
  return v;
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
 * rows, by BAND_THREADS threads of BAND_PER_THREAD columns each (warp: the thread's
 * warp): T the frame's element type, S the sums' (uint32_t for u8, uint64_t for u16,
 * double for f32); level is plm__cfar_level of the frame. */
template <typename T, typename S, class Block, class Warp>
PLM_HD void cfar_band(const Block &block, const Warp &warp, const plm__cfar_args &args,
                      const T *frame_in, void *frame_out, double level, int64_t band_block,
                      int rows, band_memory<S> *memory) {
  enum { K = BAND_PER_THREAD };
  const int R = args.window / 2, G = args.guard / 2, length = args.window + BAND_BATCH;
  const int64_t strips = band_strips(args);
  const int64_t x0 = (band_block % strips) * band_outputs(args.window) - band_shift(args.window);
  const int64_t y0 = (band_block / strips) * rows;
  const int64_t y_end = y0 + rows < args.height ? y0 + rows : args.height;
  const int t = block.thread();
  const bool held = plm__cfar_holds(&args);
  T *const ring = (T *)(memory + 1);
  const int out_bytes = band_output_bytes(args);
  unsigned char *const stage =
      (unsigned char *)(memory + 1) + band_ring_bytes(args.window, sizeof(T));
  /* The thread's columns: K t + k of the strip, column + k of the frame, at at[k].own in a
   * ring row, beside the places of the cells that move their k. */
  const int64_t column = x0 - R + K * t;
  band_k_places at[K];
  PLM_UNROLLED
  for (int k = 0; k < K; k++) at[k] = band_k_of(K * t + k, R, G);
  if (t == 0) memory->non_finite = 0;
  block.sync();

  /* Rows y0 - R - 1 .. y0 + R - 1 into ring slots 0 .. 2R; then each column's k at row
   * y0 - 1 from them: its window and the window 2R + 1 columns to its left (slots
   * 0 .. 2R), the two guards' columns (the guard's rows: slots R - G .. R + G). */
  int k_counts[K] = {};
  {
    S k_sums[K][BAND_SUMS] = {};
    for (int r = 0; r <= 2 * R; r += BAND_BATCH) {
      band_pair<T> values[BAND_BATCH];
      PLM_UNROLLED
      for (int j = 0; j < BAND_BATCH; j++)
        if (r + j <= 2 * R)
          values[j] =
              band_load_pair(args, frame_in, y0 - R - 1 + r + j, column, &memory->non_finite);
      PLM_UNROLLED
      for (int j = 0; j < BAND_BATCH; j++) {
        if (r + j > 2 * R) continue;
        PLM_UNROLLED
        for (int k = 0; k < K; k++) {
          const T cell = band_pair_cell(values[j], k);
          ring[(r + j) * BAND_RING_PITCH + at[k].own] = cell;
          band_add(k_sums[k], &k_counts[k], cell, level, 1);
        }
      }
    }
    block.sync(); /* the ring's first rows are in */
    PLM_UNROLLED
    for (int k = 0; k < K; k++) {
      if (at[k].window_left >= 0)
        band_k_fill(k_sums[k], &k_counts[k], ring, at[k].window_left, 0, 2 * R, level, -1);
      if (at[k].guard_near >= 0)
        band_k_fill(k_sums[k], &k_counts[k], ring, at[k].guard_near, R - G, R + G, level, -1);
      if (at[k].guard_far >= 0)
        band_k_fill(k_sums[k], &k_counts[k], ring, at[k].guard_far, R - G, R + G, level, 1);
      PLM_UNROLLED
      for (int q = 0; q < BAND_SUMS; q++)
        memory->k[q][BAND_BATCH - 1][band_sum_place(K * t + k)] = k_sums[k][q];
    }
  }

  /* Each batch's entering rows are loaded a batch ahead, while the batch before runs. */
  band_pair<T> entering[BAND_BATCH]; /* rows y + R .. y + R + BAND_BATCH - 1 */
  PLM_UNROLLED
  for (int j = 0; j < BAND_BATCH; j++)
    entering[j] = band_load_pair(args, frame_in, y0 + R + j, column, &memory->non_finite);
  int oldest = 0; /* the ring slot of row y - R - 1, y the batch's first row */
  for (int64_t y = y0; y < y_end; y += BAND_BATCH) {
    /* The batch's entering rows into the ring (their slots were last read by the batch
     * before's down phase, and for windows 3 and 5 by its across phase: both end at
     * barriers this thread has passed); then the next batch's loads. */
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++) {
      PLM_UNROLLED
      for (int k = 0; k < K; k++)
        ring[band_wrap(oldest + 2 * R + 1 + j, length) * BAND_RING_PITCH + at[k].own] =
            band_pair_cell(entering[j], k);
    }
    band_pair<T> ahead[BAND_BATCH] = {};
    const bool more = y + BAND_BATCH < y_end;
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++)
      if (more)
        ahead[j] =
            band_load_pair(args, frame_in, y + BAND_BATCH + R + j, column, &memory->non_finite);
    block.sync(); /* the entering rows are in; the flag holds every load so far */
    const bool counted = sizeof(T) == 4 && *(volatile int *)&memory->non_finite != 0;

    /* Down: row y + j's k of each of the thread's columns, into shared memory for the
     * across phase (the rows kept rolled: their cells all come from the ring). Between
     * batches a column's k lives in shared memory, in its last row, which its thread
     * reads back here: its registers are free for the across phase's. */
    S k_sums[K][BAND_SUMS];
    PLM_UNROLLED
    for (int k = 0; k < K; k++) {
      PLM_UNROLLED
      for (int q = 0; q < BAND_SUMS; q++)
        k_sums[k][q] = memory->k[q][BAND_BATCH - 1][band_sum_place(K * t + k)];
    }
    PLM_ROLLED
    for (int j = 0; j < BAND_BATCH; j++) {
      const T *const in = ring + band_wrap(oldest + 2 * R + 1 + j, length) * BAND_RING_PITCH;
      const T *const out = ring + band_wrap(oldest + j, length) * BAND_RING_PITCH;
      const T *const guard_in = ring + band_wrap(oldest + j + R + G + 1, length) * BAND_RING_PITCH;
      const T *const guard_out = ring + band_wrap(oldest + j + R - G, length) * BAND_RING_PITCH;
      PLM_UNROLLED
      for (int k = 0; k < K; k++) {
        band_k_step(k_sums[k], &k_counts[k], band_pair_cell(entering[0], k), in, out, guard_in,
                    guard_out, at[k], level);
        const int place = band_sum_place(K * t + k);
        PLM_UNROLLED
        for (int q = 0; q < BAND_SUMS; q++) memory->k[q][j][place] = k_sums[k][q];
        if (counted) memory->counts[j][place] = k_counts[k];
      }
      /* the next row's entering cells to the front (constant indices: the loop is rolled) */
      PLM_UNROLLED
      for (int i = 0; i + 1 < BAND_BATCH; i++) entering[i] = entering[i + 1];
    }
    block.sync();

    /* Across: batch row j's columns c = BAND_RUN i .. BAND_RUN i + 7 for the thread's
     * run i, their k summed, the runs before's sums added through the row's 16 lanes, then
     * the outputs at strip columns c - R for c from 2R: the running sum of k up to c is
     * the window's box less the guard's for that output. */
    const int j = t / BAND_RUNS, first = BAND_RUN * (t % BAND_RUNS);
    const int64_t py = y + j;
    const bool keep = band_keeps_run<S>();
    S k_run[BAND_SUMS][BAND_RUN], before[BAND_SUMS];
    int count_before = 0; /* the counts, rare, are read again rather than kept */
    PLM_UNROLLED
    for (int q = 0; q < BAND_SUMS; q++) {
      S total = 0;
      PLM_UNROLLED
      for (int m = 0; m < BAND_RUN; m++) {
        k_run[q][m] = memory->k[q][j][band_sum_place(first + m)];
        total += k_run[q][m];
      }
      before[q] = band_runs_sum(warp, total) - total;
    }
    if (counted) {
      int total = 0;
      PLM_UNROLLED
      for (int m = 0; m < BAND_RUN; m++) total += memory->counts[j][band_sum_place(first + m)];
      count_before = band_runs_sum(warp, total) - total;
    }
    if (py < y_end) {
      /* the boxes' rows inside the frame, for their areas (plm__cfar_square's clipping) */
      const int window_rows = band_extent(py, R, args.height),
                guard_rows = band_extent(py, G, args.height);
      PLM_ROLLED
      for (int m = 0; m < BAND_RUN; m++) {
        /* the run's next column's k from the front of k_run, the rest moved up: a loop
         * kept rolled (the moments' code once) whose registers are indexed as constants;
         * or from shared memory again (band_keeps_run) */
        PLM_UNROLLED
        for (int q = 0; q < BAND_SUMS; q++) {
          before[q] += keep ? k_run[q][0] : memory->k[q][j][band_sum_place(first + m)];
          PLM_UNROLLED
          for (int i = 0; i + 1 < BAND_RUN; i++) k_run[q][i] = k_run[q][i + 1];
        }
        if (counted) count_before += memory->counts[j][band_sum_place(first + m)];
        const int c = first + m, a = c - R;
        const int64_t px = x0 - R + a;
        if (c < 2 * R || px < 0 || px >= args.width) continue;
        const int n = counted ? count_before
                              : window_rows * band_extent(px, R, args.width) -
                                    guard_rows * band_extent(px, G, args.width);
        double d, moment;
        cfar_moments(args, ring, level,
                     band_wrap(oldest + j + R + 1, length) * BAND_RING_PITCH + band_place(a), (S)n,
                     before[BAND_V], before[BAND_V2], &d, &moment);
        const int staged = band_stage_place(j, c, out_bytes);
        if (held)
          stage[staged] = plm__cfar_held_mask(&args, py, px, d, moment);
        else
          plm__cfar_write(&args, stage, staged, d, moment); /* z or the mask, as out_bytes says */
      }
    }
    block.sync();

    /* Out: the stage's rows to the frame, consecutive threads at consecutive columns from
     * a multiple of 32 (the last barrier ended every read of the ring slots the next
     * batch's entering rows take; the next batch's first barrier comes before its across
     * phase writes the stage again). */
    PLM_UNROLLED
    for (int r = 0; r < BAND_BATCH && y + r < y_end; r++) {
      for (int c = t; c < BAND_COLUMNS; c += BAND_THREADS) {
        const int64_t px = x0 + c - 2 * R;
        if (c < 2 * R || px < 0 || px >= args.width) continue;
        const int staged = band_stage_place(r, c, out_bytes);
        const int64_t i = (y + r) * args.width + px;
        if (out_bytes == 4)
          ((float *)frame_out)[i] = ((const float *)stage)[staged];
        else
          ((uint8_t *)frame_out)[i] = stage[staged];
      }
    }
    PLM_UNROLLED
    for (int j = 0; j < BAND_BATCH; j++) entering[j] = ahead[j];
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

/* kernels/cuda/cfar_bands.h: cfar in one pass over a frame, for windows up to
 * BAND_WINDOW_MOST (127; the default is 15) whose shared memory the device gives a block (every
 * device of plume's build up to 97: in_bands), reading the frame once and writing the output,
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
 * carries what four column sums would. A block of BAND_THREADS (64, two warps) takes a strip
 * of BAND_COLUMNS (256) columns of a band of rows, each thread BAND_PER_THREAD (4)
 * consecutive columns, whose k it keeps in registers from the band's first row to its last.
 * A row at a time, between two barriers:
 *   down    the thread stores its columns' entering cells (row y + R, loaded BAND_AHEAD rows
 *           earlier as one vector of 4 elements) to a ring in shared memory of the last
 *           window + 1 rows; after the barrier it moves each column's k down a row by four
 *           exchanges, each a cell entering and a cell leaving one of k's four column sums:
 *           its own column's (the entering cell from registers, the leaving one from the
 *           ring) and the three other columns' from the ring, seven loads a column. An f32
 *           exchange costs the FP64 pipe four operations and two additions, (a - b) and
 *           (a - b)(a + b - 2 level) (the level cancels in the difference of v), where each
 *           cell by itself took a difference from the level and a square before its two
 *           additions: 24 a column's row, not 32.
 *   across  the thread sums its 4 columns' k; each warp scans its 32 totals by shuffles (five
 *           steps, and one more that moves each lane's inclusive sum to the lane to its
 *           right: an exact exclusive sum, not the inclusive less its own total), the first
 *           warp leaves its total for the second in shared memory, and after the second
 *           barrier a column's running sum is the sum of k up to it, which at column c is
 *           the reference sum of the output at column c - R. The pixel's own value comes
 *           from the ring.
 *   out     the thread's outputs are R columns left of its columns and may straddle two
 *           aligned 4s of the frame; each thread writes one such 4 (band_group), most of it
 *           its own outputs, the rest the next lane's by a shuffle (the mask's 4 bytes as one
 *           word), one vector store where the 4 are inside the frame; a warp's last lane takes
 *           the next warp's part from shared memory after the next row's first barrier and
 *           stores it again.
 * A strip's first output is at strip column band_lead, R rounded up to a multiple of 4, and
 * it puts out band_outputs, what is left of its 256 columns after R at its right, rounded
 * down to a multiple of 4 (240 at window 15, 192 at 63, 160 at 97, 128 at 127): every strip's
 * columns, loads and stores then start at a multiple of 4 columns of the frame. A warp's row costs
 * the shared-memory pipe 8 wavefronts per 32 columns for the ring (every request of the
 * lanes, 4 columns apart, meets each of the 32 banks once: band_place), 24 shuffles per 128
 * columns for the scan, 4 wavefronts per 128 for the own values and 1 shuffle for the mask's
 * groups (3 for z's at window 15, whose R % 4 is 3), and the first lane's outputs passed to
 * the warp before: 0.48 a column, 0.52 an output over 240 of 256 columns. Until 2026-12-07
 * (night) the outputs went through a stage in shared memory, stored and loaded again by the
 * write-out: 12 wavefronts per 128 columns where these take 6, 0.53 a column. The design before
 * (2026-12-07, morning) took a strip of 128 columns, two a thread, and kept each batch row's k in
 * shared memory for the across phase: 0.89 (kernels/cuda/cfar.cu, "The bands' cost", has all).
 *
 * f32 counts its finite cells only when a cell of the frame stored to the ring so far is not
 * finite (a flag in shared memory, read after each row's first barrier), else takes the boxes'
 * areas, the same integers; a cell outside the frame, or left of the strip, is a NaN, which adds
 * nothing to any sum and is counted by nobody (an exchange takes it as the level), and 0
 * for u8 and u16. Integer sums are exact in any order, so u8 and u16 have the CPU's bits:
 * uint64_t for u16, uint32_t for u8, whose boxes' sums stay below 2^32 (127^2 x 255^2 <
 * 2^30), so that k and its running sums, exact modulo 2^32, end at the exact reference
 * sums. f32's doubles are added and taken away as the rows pass, not read from a table of
 * the frame: on the tests' frames z agrees with the CPU's within 1e-9 x max(1, |z|). Their
 * rounding is relative to the sums they pass through: a pixel far larger than its
 * neighbours leaves its rounding in the k of the four columns it passed through for the
 * rest of the band, and the running sums across carry it to the strip's right edge, where
 * column sums would keep it to the 2R + 1 columns whose windows hold it (the precision
 * figures are in kernels/cuda/cfar.cu, "The bands' cost"). Products are rounded one by one
 * (plm__cfar_mul), so nvcc contracts nothing the host's test does not. */
#ifndef PLUME_KERNELS_CUDA_CFAR_BANDS_H
#define PLUME_KERNELS_CUDA_CFAR_BANDS_H

#include <string.h>

#include <type_traits>

#include "kernels/common/cfar.h"
#include "kernels/common/plm_hd.h"
#include "kernels/cuda/vector_of.h"

enum {
  BAND_THREADS = 64, /* a block: two warps */
  BAND_WARPS = BAND_THREADS / 32,
  BAND_PER_THREAD = 4,                           /* consecutive columns a thread owns */
  BAND_COLUMNS = BAND_THREADS * BAND_PER_THREAD, /* a strip's, halo included */
  BAND_WARP_COLUMNS = BAND_COLUMNS / BAND_WARPS,
  BAND_AHEAD = 4,              /* rows a thread's loads run ahead */
  BAND_WINDOW_MOST = 127,      /* R below half a warp's columns: band_ring_place */
  BAND_WINDOW_EVERYWHERE = 97, /* whose block every device takes: kBandSharedEverywhere */
  BAND_ROWS_MOST = 128,
  BAND_ROWS_LEAST = 8
};

/* The two quantities of k a thread keeps for each of its columns: of v and of v^2. */
enum { BAND_V, BAND_V2, BAND_SUMS };

/* What the ring holds, 4 bytes a cell whatever the frame's type (so that one layout meets
 * each bank once: band_place): an f32 cell as itself, a u8 or u16 one as a 32-bit integer. */
template <typename T>
struct band_ring_of {
  using type = uint32_t;
};
template <>
struct band_ring_of<float> {
  using type = float;
};
template <typename T>
using band_cell_t = typename band_ring_of<T>::type;

/* Where column c (a strip column) sits in a row of the ring: c with its low two bits crossed
 * with bits 5 and 6. A warp's lanes reach
 * columns 4 apart (each lane one of its own 4, or one a fixed offset to their left): 32
 * consecutive multiples of 4 plus a constant fall in 8 banks by themselves, and the crossing
 * spreads each of those over 4, so every such request meets each bank once, 1 wavefront. A
 * place stays in its column's 32-aligned block. tests/test_cfar_cuda_logic.cpp counts
 * them. */
static PLM_HD inline int band_place(int c) {
  return c ^ (c >> 5 & 3);
}

/* The strip column of a strip's first output: R rounded up to a multiple of 4. Its outputs
 * are the band_outputs columns from there; the output at strip column a is the running sum
 * of k at column a + R, which needs a + R < BAND_COLUMNS. */
static PLM_HD constexpr int band_lead(int window) {
  return (window / 2 + 3) / 4 * 4;
}
static PLM_HD constexpr int band_outputs(int window) {
  return (BAND_COLUMNS - window / 2 - band_lead(window)) / 4 * 4;
}

/* A block's shared memory: the ring, window + 1 rows (y - R - 1 .. y + R at row y; slot i
 * of column c at i * BAND_COLUMNS + band_place(c)); then the tail: each warp's sums but the
 * last's, for the warps after it; each warp's first lane's outputs but the first warp's, for
 * the last lane of the warp before (band_group); and the flag of a cell stored to the ring
 * that is not finite. 4 bytes a ring cell: 16.0 KiB at window 15, 64.0 at 63, 98.0 at 97,
 * 128.0 at 127, past the 48 KiB a block has without opting in (plm__cuda_opt_in_shared,
 * kernels/cuda/launch.h) from window 47. */
template <typename S>
struct band_carry {
  S sums[BAND_SUMS];
  int count;
};
/* A warp's first lane's first r outputs, passed to the last lane of the warp before
 * (band_group): the mask's as one word of bytes, z's as floats, each a 4-byte access. */
union band_passed {
  uint32_t mask_bytes;
  float z[BAND_PER_THREAD];
};
template <typename S>
struct band_tail {
  band_carry<S> carry[BAND_WARPS - 1];
  band_passed passed[BAND_WARPS - 1];
  int non_finite; /* written volatile: threads of one barrier interval may each set it */
};
static PLM_HD constexpr int band_ring_rows(int window) {
  return window + 1;
}
static PLM_HD constexpr size_t band_tail_offset(int window) {
  return (size_t)band_ring_rows(window) * BAND_COLUMNS * 4;
}
template <typename S>
static PLM_HD constexpr size_t band_shared_bytes(int window) {
  return band_tail_offset(window) + sizeof(band_tail<S>);
}
/* The shared memory a block may take: 48 KiB without asking, past it an opt-in
 * (cudaFuncAttributeMaxDynamicSharedMemorySize) up to the device's most
 * (cudaDevAttrMaxSharedMemoryPerBlockOptin): 99 KiB on sm_86, sm_89 and sm_120, which run the
 * sm_80 code, the least of plume's build (sm_80 and later); 163 KiB on sm_80, 227 KiB on sm_90
 * and sm_100. */
constexpr size_t kBandSharedEverywhere = 99 * 1024;
static_assert(band_shared_bytes<double>(BAND_WINDOW_EVERYWHERE) <= kBandSharedEverywhere &&
                  band_shared_bytes<double>(BAND_WINDOW_EVERYWHERE + 2) > kBandSharedEverywhere,
              "the largest window whose shared memory fits every architecture's opt-in");
static_assert(band_shared_bytes<double>(BAND_WINDOW_MOST) <= 163 * 1024,
              "the largest window's shared memory fits sm_80's and sm_90's opt-in");
static_assert(BAND_COLUMNS * 4 % 8 == 0,
              "the carry's doubles are aligned: a ring row is a multiple of 8 bytes");

/* Whether a frame's cfar takes the bands (else summed-area tables in the scratch) on the op's
 * device, whose blocks may opt in to args.shared_per_block bytes of shared memory (the op's
 * pack reads it from the context's device information, so that the scratch's size and the
 * launch answer alike): windows up to BAND_WINDOW_MOST whose block fits (f32's, the largest
 * tail, for every type: a few bytes more than u8's), so 97 everywhere and 127 on sm_80 and
 * sm_90. The bands' arithmetic on rows and columns is 64-bit: any frame. */
static PLM_HD inline bool in_bands(const plm__cfar_args &args) {
  return args.window <= BAND_WINDOW_MOST &&
         band_shared_bytes<double>(args.window) <= args.shared_per_block;
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
 * window 15: 8 rows, 192 blocks; a stack of 16 of 256 x 256: 16 rows, 512 blocks). */
constexpr int64_t kBandBlocksToFill = 2 * 132;
static inline int band_rows(const plm__cfar_args &args) {
  int rows = BAND_ROWS_MOST;
  while (rows > BAND_ROWS_LEAST && args.frames * band_blocks(args, rows) < kBandBlocksToFill)
    rows /= 2;
  return rows;
}

/* A cell's components as the sums take them: v, v^2 and 1 (finite), from a ring cell
 * (plm__cfar_cell_int and plm__cfar_cell_f32's rule). */
static PLM_HD inline void band_cell(uint32_t v, double, uint32_t *s, uint32_t *q, int *n) {
  *s = v;
  *q = v * v;
  *n = 1;
}
static PLM_HD inline void band_cell(uint32_t v, double, uint64_t *s, uint64_t *q, int *n) {
  *s = v;
  *q = (uint64_t)v * v;
  *n = 1;
}
static PLM_HD inline void band_cell(float v, double level, double *s, double *q, int *n) {
  *n = plm__cfar_finite(v);
  *s = plm__cfar_centred(v, level);
  *q = plm__cfar_mul(*s, *s);
}

/* A cell added to (sign 1) or taken from (sign -1) a column's k and its count. */
template <typename C, typename S>
static PLM_HD inline void band_add(S k[BAND_SUMS], int *count, C cell, double level, int sign) {
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

/* Cell `in` added to a column's k and count and cell `out` taken away, as one exchange:
 * for integers v and v^2 (exact modulo the sums' size); for f32 a cell that is not finite
 * taken as the level (0 from the level), then (a - b) and (a - b)(a + b - 2 level), the
 * same as each cell's own difference and square (band_cell) up to rounding, four operations
 * of the FP64 pipe where those take six. */
static PLM_HD inline void band_exchange(uint32_t k[BAND_SUMS], int *, uint32_t in, uint32_t out,
                                        double) {
  k[BAND_V] += in - out;
  k[BAND_V2] += in * in - out * out;
}
static PLM_HD inline void band_exchange(uint64_t k[BAND_SUMS], int *, uint32_t in, uint32_t out,
                                        double) {
  k[BAND_V] += (uint64_t)in - out;
  k[BAND_V2] += (uint64_t)in * in - (uint64_t)out * out;
}
static PLM_HD inline void band_exchange(double k[BAND_SUMS], int *count, float in, float out,
                                        double level) {
  const int in_finite = plm__cfar_finite(in), out_finite = plm__cfar_finite(out);
  const double a = in_finite ? (double)in : level, b = out_finite ? (double)out : level;
  const double difference = a - b;
  k[BAND_V] += difference;
  k[BAND_V2] += plm__cfar_mul(difference, plm__cfar_sub(a + b, 2.0 * level));
  *count += in_finite - out_finite;
}

/* What the ring holds for a cell outside the frame: one that adds nothing and counts for
 * nobody. */
template <typename C>
static PLM_HD inline C band_outside() {
  return C(0);
}
template <>
PLM_HD inline float band_outside<float>() {
  return NAN;
}

/* The CUDA vector a thread's BAND_PER_THREAD elements of a row move as (uchar4, ushort4,
 * float4: kernels/cuda/vector_of.h). */
template <typename T>
using band_vector = typename plm__vector_of<T, BAND_PER_THREAD>::type;

/* A thread's cells of a frame row, from column `column` (a multiple of BAND_PER_THREAD), as
 * ring cells: one vector load where all are inside the frame and their address is a multiple
 * of the vector's size (every row of an aligned frame whose width is a multiple of 4), else an
 * element at a time, band_outside past the frame's edges. The vector moves through __ldcg,
 * so that the emulator too sees one access of its width. */
template <typename T>
static PLM_HD inline void band_load_row(const plm__cfar_args &args, const T *frame, int64_t row,
                                        int64_t column, band_cell_t<T> cells[BAND_PER_THREAD]) {
  typedef band_vector<T> vector;
  const bool inside = row >= 0 && row < args.height;
  if (inside && column >= 0 && column + BAND_PER_THREAD <= args.width) {
    const T *const at = frame + row * args.width + column;
    if ((uintptr_t)at % sizeof(vector) == 0) {
#ifdef __CUDACC__
      const vector loaded = __ldcg((const vector *)at);
#else
      vector loaded; /* tests/test_cfar_cuda_logic.cpp, on the host */
      memcpy(&loaded, at, sizeof loaded);
#endif
      T elements[BAND_PER_THREAD];
      memcpy(elements, &loaded, sizeof loaded);
      PLM_UNROLLED
      for (int i = 0; i < BAND_PER_THREAD; i++) cells[i] = (band_cell_t<T>)elements[i];
      return;
    }
  }
  PLM_UNROLLED
  for (int i = 0; i < BAND_PER_THREAD; i++) {
    const int64_t x = column + i;
    cells[i] = inside && x >= 0 && x < args.width ? (band_cell_t<T>)frame[row * args.width + x]
                                                  : band_outside<band_cell_t<T>>();
  }
}

/* A thread's cells of frame row `row` from frame column `column`, stored to ring row `slot`
 * at its strip columns first ..; one of them inside the frame that is not finite (f32) sets
 * *non_finite (checked here, where the cells are used, not where they were loaded, which
 * would wait for the load; volatile: threads of one barrier interval may each set it, and
 * st.volatile is a relaxed atomic in PTX, and so to the emulator's race check). */
template <typename C>
static PLM_HD inline void band_store_row(const plm__cfar_args &args, C *ring, int slot, int first,
                                         int64_t row, int64_t column,
                                         const C cells[BAND_PER_THREAD], int *non_finite) {
  PLM_UNROLLED
  for (int i = 0; i < BAND_PER_THREAD; i++) {
    ring[slot * BAND_COLUMNS + band_place(first + i)] = cells[i];
    if (std::is_floating_point<C>::value && !plm__cfar_finite((float)cells[i]) && row >= 0 &&
        row < args.height && column + i >= 0 && column + i < args.width)
      *(volatile int *)non_finite = 1;
  }
}

/* The bytes of an output: 4 for z, 1 for the mask (with or without a hold: a hold is the
 * mask's only, plm__cfar_holds). */
static PLM_HD inline int band_output_bytes(const plm__cfar_args &args) {
  return args.output == PLM_CFAR_Z ? 4 : 1;
}

/* A thread's 4 mask outputs (0 or 1) as one word of bytes, the first lowest, as they lie in
 * memory (little-endian, as every CUDA host); band_mask_output, byte i of a word. */
static PLM_HD inline uint32_t band_mask_word(const float values[BAND_PER_THREAD]) {
  return (uint32_t)values[0] | (uint32_t)values[1] << 8 | (uint32_t)values[2] << 16 |
         (uint32_t)values[3] << 24;
}
static PLM_HD inline float band_mask_output(uint32_t word, int i) {
  return (float)(word >> 8 * i & 0xff);
}

/* How far a thread's outputs are from an aligned 4 of the frame: R % 4 (band_group). */
static PLM_HD inline int band_shift(const plm__cfar_args &args) {
  return args.window / 2 % BAND_PER_THREAD;
}

/* Outputs from .. to - 1 of a thread's BAND_PER_THREAD for frame row `row` from column
 * `column` (a multiple of BAND_PER_THREAD), those inside the frame: z as floats, or the mask as
 * bytes (with or without a hold); all 4 as one vector store where all are inside and their
 * address is a multiple of its size, else an element at a time. */
static PLM_HD inline void band_store_outputs(const plm__cfar_args &args, void *frame_out,
                                             int64_t row, int64_t column,
                                             const float values[BAND_PER_THREAD], int from = 0,
                                             int to = BAND_PER_THREAD) {
  const int64_t i0 = row * args.width + column;
  const bool vector = from == 0 && to == BAND_PER_THREAD && column + BAND_PER_THREAD <= args.width;
  if (band_output_bytes(args) == 4) {
    float *const at = (float *)frame_out + i0;
    if (vector && (uintptr_t)at % sizeof(float4) == 0) {
      const float4 v = {values[0], values[1], values[2], values[3]};
#ifdef __CUDA_ARCH__
      __stcg((float4 *)at, v);
#else /* nvcc's host pass; tests/test_cfar_cuda_logic.cpp */
      memcpy(at, &v, sizeof v);
#endif
      return;
    }
    PLM_UNROLLED
    for (int i = 0; i < BAND_PER_THREAD; i++)
      if (i >= from && i < to && column + i < args.width) at[i] = values[i];
  } else {
    uint8_t *const at = (uint8_t *)frame_out + i0;
    if (vector && (uintptr_t)at % sizeof(unsigned int) == 0) {
      const unsigned int v = band_mask_word(values);
#ifdef __CUDA_ARCH__
      __stcg((unsigned int *)at, v);
#else
      memcpy(at, &v, sizeof v);
#endif
      return;
    }
    PLM_UNROLLED
    for (int i = 0; i < BAND_PER_THREAD; i++)
      if (i >= from && i < to && column + i < args.width) at[i] = (uint8_t)values[i];
  }
}
static_assert(BAND_PER_THREAD == 4, "band_store_outputs moves a float4 or 4 bytes");

/* Element `at` (0 .. BAND_PER_THREAD - 1) of a thread's row of values, by selects: a register
 * array indexed by a value unknown to the compiler would go to local memory. */
static PLM_HD inline float band_element(const float values[BAND_PER_THREAD], int at) {
  float element = values[0];
  PLM_UNROLLED
  for (int i = 1; i < BAND_PER_THREAD; i++)
    if (at == i) element = values[i];
  return element;
}

/* The outputs a thread writes. Its own, at strip columns first - R .. first - R + 3 with
 * R = 4q + r, straddle two aligned 4s when r > 0: its last 4 - r begin the 4 from
 * first - 4q, and the next lane's first r end it. So each thread writes that 4, its group:
 * its own outputs from the r-th, then the next lane's first r, which come by shuffles (the
 * mask's 4 as one word of bytes: one shuffle; z's floats: r; none when r is 0). A warp's last
 * lane (but the
 * last warp's) has its next lane in the next warp: it writes the 4 with the row, its last r
 * its own first r (a shuffle from itself), and after the next barrier those r again, the
 * next warp's first lane's, from the tail (band_tail::passed, band_store_passed): the
 * thread's two stores in order, where holding its part for the second (or storing it an
 * element at a time) took 8 registers more. Every lane of the warp calls band_group. */
template <class Warp>
static PLM_HD inline void band_group(const Warp &warp, const plm__cfar_args &args,
                                     float own[BAND_PER_THREAD], float group[BAND_PER_THREAD]) {
  enum { K = BAND_PER_THREAD };
  const int r = band_shift(args), lane = warp.lane(), from = lane < 31 ? lane + 1 : lane;
  if (band_output_bytes(args) == 1) {
    uint32_t bytes = band_mask_word(own);
    if (r > 0) bytes = bytes >> 8 * r | warp.shuffle(bytes, from) << 8 * (K - r);
    PLM_UNROLLED
    for (int i = 0; i < K; i++) group[i] = band_mask_output(bytes, i);
    return;
  }
  /* own's first r replaced by the next lane's: the group is own rotated by r */
  PLM_UNROLLED
  for (int i = 0; i < K; i++)
    if (i < r) own[i] = warp.shuffle(own[i], from);
  PLM_UNROLLED
  for (int i = 0; i < K; i++) group[i] = band_element(own, (i + r) % K);
}

/* What a warp's first lane (but the first warp's) passes to the last lane of the warp before:
 * its first r outputs (band_passed). */
static PLM_HD inline void band_pass(const plm__cfar_args &args, const float own[BAND_PER_THREAD],
                                    band_passed *passed) {
  const int r = band_shift(args);
  if (band_output_bytes(args) == 1) {
    passed->mask_bytes = band_mask_word(own);
    return;
  }
  PLM_UNROLLED
  for (int i = 0; i < BAND_PER_THREAD; i++)
    if (i < r) passed->z[i] = own[i];
}

/* A warp's last lane's group's last r outputs (band_group), the next warp's first lane's first
 * r, from `passed` after the barrier that follows their row: to frame row `row`, the group's
 * from column `column`. */
static PLM_HD inline void band_store_passed(const plm__cfar_args &args, void *frame_out,
                                            int64_t row, int64_t column,
                                            const band_passed *passed) {
  enum { K = BAND_PER_THREAD };
  const int r = band_shift(args);
  float next[K] = {};
  if (band_output_bytes(args) == 1) {
    const uint32_t word = passed->mask_bytes;
    PLM_UNROLLED
    for (int i = 0; i < K; i++) next[i] = band_mask_output(word, i);
  } else {
    PLM_UNROLLED
    for (int i = 0; i < K; i++)
      if (i < r) next[i] = passed->z[i];
  }
  float group[K] = {};
  PLM_UNROLLED
  for (int i = 0; i < K; i++)
    if (i + r >= K) group[i] = band_element(next, i + r - K);
  band_store_outputs(args, frame_out, row, column, group, K - r, K);
}

/* Where a load of strip column c (c > -BAND_WARP_COLUMNS) finds its cell in a ring
 * row: band_place(c); for a column left of the strip, whose cell is band_outside, the cell
 * of one of the first warp's columns (never idle, so always stored) a multiple of 32 to the
 * right, in the bank its own column would have, so that every lane loads and the request
 * still meets each bank once (and the lanes' loads of a site stay one request each: the
 * emulator groups a warp's k-th executions of a site). */
static PLM_HD inline int band_ring_place(int c) {
  /* c + 128 when negative, without a branch: a select the compiler may turn into one would
   * leave the discarded load out of that path, and the lanes' loads out of step */
  return band_place(c + (c >> 31 & BAND_WARP_COLUMNS));
}
static_assert(BAND_WINDOW_MOST < BAND_WARP_COLUMNS && BAND_WARP_COLUMNS % 32 == 0,
              "a column left of the strip reads one of the first warp's, in its own bank");

/* A ring cell loaded for strip column c, kept where c >= 0, else band_outside's (a NaN, or
 * 0), by the cell's bits: a select, which a compiler may turn into a branch, would let it move
 * the load under the branch where its cell is kept, and a lane of a column left of the strip
 * would skip it (the emulator, whose host compiler did so, then grouped that lane's next load
 * with the other lanes' this one: 6 wavefronts a block's row more than a GPU's). */
static PLM_HD inline uint32_t band_kept(uint32_t cell, int c) {
  return cell & ~(uint32_t)(c >> 31);
}
static PLM_HD inline float band_kept(float cell, int c) {
  uint32_t bits;
  memcpy(&bits, &cell, sizeof bits);
  bits |= (uint32_t)(c >> 31) & 0x7fc00000u; /* every exponent bit and the quiet bit: a NaN */
  float kept;
  memcpy(&kept, &bits, sizeof kept);
  return kept;
}

/* Ring row `slot`'s cell of strip column c, or band_outside for a column left of the
 * strip. */
template <typename C>
static PLM_HD inline C band_ring_cell(const C *ring, int slot, int c) {
  return band_kept(ring[slot * BAND_COLUMNS + band_ring_place(c)], c);
}

/* The cells of [p - half, p + half] inside [0, size): a box's side, clipped to the frame
 * as plm__cfar_square clips it. */
static PLM_HD inline int band_extent(int64_t p, int half, int64_t size) {
  const int64_t first = p - half < 0 ? 0 : p - half,
                end = p + half + 1 > size ? size : p + half + 1;
  return (int)(end - first);
}

/* A ring slot, 0 <= i < 2 * length. */
static PLM_HD inline int band_wrap(int i, int length) {
  return i >= length ? i - length : i;
}

/* The sum of v over this warp's lanes before this lane (0 at lane 0), exact, and in *inclusive
 * the sum through this lane (at lane 31 the warp's): the five steps of an inclusive scan, then
 * each lane's sum moved one lane to the right (every lane of the warp calls it). */
template <typename V, class Warp>
static PLM_HD inline V band_lanes_before(const Warp &warp, V v, V *inclusive) {
  const int lane = warp.lane();
  for (int d = 1; d < 32; d *= 2) {
    const V u = warp.shuffle(v, lane >= d ? lane - d : lane);
    if (lane >= d) v += u;
  }
  *inclusive = v;
  const V before = warp.shuffle(v, lane > 0 ? lane - 1 : lane);
  return lane > 0 ? before : V(0);
}

/* d and m (plm__cfar_moments_of_*) of a pixel of value v from its reference sums, as
 * doubles (f32) or integers (u8, u16); level is plm__cfar_level of the frame. */
static PLM_HD inline void band_moments(float v, double level, int n, double s1, double s2,
                                       double *d, double *m) {
  plm__cfar_moments_of_f32(v, level, (double)n, s1, s2, d, m);
}
template <typename S>
static PLM_HD inline void band_moments(uint32_t v, double, int n, S s1, S s2, double *d,
                                       double *m) {
  plm__cfar_moments_of_int(v, n, s1, s2, d, m);
}

/* The output of pixel (y, x) from its d and m, as a float: z, or the mask (with a hold, its
 * mask decided in the same pass: plm__cfar_held_mask) as 0 or 1. */
static PLM_HD inline float band_output(const plm__cfar_args &args, int64_t y, int64_t x, double d,
                                       double m) {
  if (args.output == PLM_CFAR_Z) return plm__cfar_z(d, m);
  return plm__cfar_holds(&args) ? plm__cfar_held_mask(&args, y, x, d, m)
                                : plm__cfar_mask(d, m, args.k);
}

/* Block `block` of a frame (band block / strips, strip block % strips) in bands of `rows`
 * rows, by BAND_THREADS threads of BAND_PER_THREAD columns each (warp: the thread's warp):
 * T the frame's element type, S the sums' (uint32_t for u8, uint64_t for u16, double for
 * f32); level is plm__cfar_level of the frame; shared, band_shared_bytes<S>(args.window)
 * bytes. */
template <typename T, typename S, class Block, class Warp>
PLM_HD void cfar_band(const Block &block, const Warp &warp, const plm__cfar_args &args,
                      const T *frame_in, void *frame_out, double level, int64_t band_block,
                      int rows, void *shared) {
  typedef band_cell_t<T> C;
  enum { K = BAND_PER_THREAD };
  const int R = args.window / 2, G = args.guard / 2, length = band_ring_rows(args.window);
  const int lead = band_lead(args.window), outputs = band_outputs(args.window);
  const int64_t strips = band_strips(args);
  /* the frame column of strip column 0, a multiple of K */
  const int64_t x0 = (band_block % strips) * outputs - lead;
  const int64_t y0 = (band_block / strips) * rows;
  const int64_t y_end = y0 + rows < args.height ? y0 + rows : args.height;
  const int t = block.thread(), first = K * t, w = t / 32;
  const int64_t column = x0 + first; /* the frame column of the thread's first */
  C *const ring = (C *)shared;
  band_tail<S> *const tail = (band_tail<S> *)((char *)shared + band_tail_offset(args.window));
  band_carry<S> *const carry = tail->carry;
  /* A warp whose columns all lie right of the last output's window (a strip past the frame's
   * right edge) keeps the barriers only: the other columns of a column's k are to its left,
   * so no column left of it reads its cells. */
  const int64_t last_output =
      (args.width - x0 < lead + outputs ? args.width - x0 : lead + outputs) - 1;
  const bool idle = BAND_WARP_COLUMNS * w > last_output + R;
  const float zeros[K] = {};
  if (t == 0) {
    tail->non_finite = 0;
    for (int v = 0; v < BAND_WARPS - 1; v++) band_pass(args, zeros, &tail->passed[v]);
  }
  /* The flag and the passed outputs cleared (the block's previous band last read them before
   * its final barrier), so that a last lane whose next warp is idle reads written words. */
  block.sync();

  /* Rows y0 - R - 1 .. y0 + R - 1 into ring slots 0 .. 2R, a thread's own cells added to
   * its columns' k as they come; after a barrier, each column's k at row y0 - 1 from the
   * ring: the window 2R + 1 columns to its left taken away (slots 0 .. 2R), the two guards'
   * columns (the guard's rows: slots R - G .. R + G). */
  S k[K][BAND_SUMS] = {};
  int counts[K] = {};
  for (int r = 0; r <= (idle ? -1 : 2 * R); r += BAND_AHEAD) {
    C cells[BAND_AHEAD][K];
    PLM_UNROLLED
    for (int j = 0; j < BAND_AHEAD; j++)
      if (r + j <= 2 * R) band_load_row(args, frame_in, y0 - R - 1 + r + j, column, cells[j]);
    PLM_UNROLLED
    for (int j = 0; j < BAND_AHEAD; j++) {
      if (r + j > 2 * R) continue;
      band_store_row(args, ring, r + j, first, y0 - R - 1 + r + j, column, cells[j],
                     &tail->non_finite);
      PLM_UNROLLED
      for (int i = 0; i < K; i++) band_add(k[i], &counts[i], cells[j][i], level, 1);
    }
  }
  block.sync(); /* the ring's first rows are in */
  if (!idle) {
    PLM_UNROLLED
    for (int i = 0; i < K; i++) {
      const int c = first + i;
      for (int slot = 0; slot <= 2 * R; slot++)
        band_add(k[i], &counts[i], band_ring_cell(ring, slot, c - 2 * R - 1), level, -1);
      for (int slot = R - G; slot <= R + G; slot++) {
        band_add(k[i], &counts[i], band_ring_cell(ring, slot, c - R - G - 1), level, 1);
        band_add(k[i], &counts[i], band_ring_cell(ring, slot, c - R + G), level, -1);
      }
    }
  }

  /* Row y's entering cells (row y + R) are loaded BAND_AHEAD rows before. */
  C entering[BAND_AHEAD][K] = {};
  PLM_UNROLLED
  for (int j = 0; j < BAND_AHEAD; j++)
    if (!idle) band_load_row(args, frame_in, y0 + R + j, column, entering[j]);
  /* The thread's group (band_group): the outputs from strip column first - 4 (R / 4), a
   * multiple of K from the strip's first output; a warp's last lane (but the last warp's)
   * writes the last r = R % 4 of them again a row late, the next warp's first lane's. */
  const int written = first - K * (R / K), r = band_shift(args);
  const int64_t written_column = x0 + written;
  const bool writes = written >= lead && written < lead + outputs && written_column < args.width;
  const bool passed_late = writes && r > 0 && w < BAND_WARPS - 1 && warp.lane() == 31;
  int oldest = 0; /* the ring slot of row y - R - 1 */
  PLM_ROLLED
  for (int64_t y = y0; y < y_end; y++) {
    /* Row y + R into the slot of row y - R - 2 (read by the row before's down phase, which
     * ended at a barrier this thread has passed). */
    const int entering_slot = band_wrap(oldest + 2 * R + 1, length);
    if (!idle)
      band_store_row(args, ring, entering_slot, first, y + R, column, entering[0],
                     &tail->non_finite);
    block.sync(); /* row y + R is in; the row before's first lanes' outputs are passed */
    const bool counted =
        std::is_floating_point<C>::value && *(volatile int *)&tail->non_finite != 0;

    /* the row before's group's last r outputs, passed from the next warp */
    if (passed_late && y > y0)
      band_store_passed(args, frame_out, y - 1, written_column, &tail->passed[w]);

    /* Down: each column's k moved to row y by its four exchanges. */
    if (!idle) {
      /* the slots of the rows entering and leaving the window's rows and the guard's */
      const int leaving_slot = oldest, guard_entering = band_wrap(oldest + R + G + 1, length),
                guard_leaving = band_wrap(oldest + R - G, length);
      PLM_UNROLLED
      for (int i = 0; i < K; i++) {
        const int c = first + i, window_left = c - 2 * R - 1, guard_near = c - R + G,
                  guard_far = c - R - G - 1;
        /* k(c) = w(c) - w(window_left) - g(guard_near) + g(guard_far): a column's sum that
         * k takes away exchanges its leaving cell in and its entering cell out */
        band_exchange(k[i], &counts[i], entering[0][i], band_ring_cell(ring, leaving_slot, c),
                      level);
        band_exchange(k[i], &counts[i], band_ring_cell(ring, leaving_slot, window_left),
                      band_ring_cell(ring, entering_slot, window_left), level);
        band_exchange(k[i], &counts[i], band_ring_cell(ring, guard_leaving, guard_near),
                      band_ring_cell(ring, guard_entering, guard_near), level);
        band_exchange(k[i], &counts[i], band_ring_cell(ring, guard_entering, guard_far),
                      band_ring_cell(ring, guard_leaving, guard_far), level);
      }
    }
    /* the next rows' entering cells to the front, and the load of row y + R + BAND_AHEAD */
    PLM_UNROLLED
    for (int j = 0; j + 1 < BAND_AHEAD; j++) {
      PLM_UNROLLED
      for (int i = 0; i < K; i++) entering[j][i] = entering[j + 1][i];
    }
    if (y + BAND_AHEAD < y_end && !idle)
      band_load_row(args, frame_in, y + R + BAND_AHEAD, column, entering[BAND_AHEAD - 1]);

    /* Across: the sums of k over the columns to the left of the thread's, from its warp's
     * lanes (band_lanes_before) and the warp before (the carry, after a barrier); then the
     * running sum over the thread's columns, at column c the window's box less the guard's
     * for the output at column c - R; then the group the thread writes (band_group). */
    S running[BAND_SUMS] = {}, inclusive[BAND_SUMS] = {};
    if (!idle) {
      PLM_UNROLLED
      for (int q = 0; q < BAND_SUMS; q++) {
        S total = 0;
        PLM_UNROLLED
        for (int i = 0; i < K; i++) total += k[i][q];
        running[q] = band_lanes_before(warp, total, &inclusive[q]);
      }
    }
    int running_count = 0, inclusive_count = 0;
    if (counted && !idle) {
      int total = 0;
      PLM_UNROLLED
      for (int i = 0; i < K; i++) total += counts[i];
      running_count = band_lanes_before(warp, total, &inclusive_count);
    }
    if (w < BAND_WARPS - 1 && warp.lane() == 31) {
      PLM_UNROLLED
      for (int q = 0; q < BAND_SUMS; q++) carry[w].sums[q] = inclusive[q];
      carry[w].count = inclusive_count;
    }
    block.sync(); /* the carries are in; every read of the passed outputs by the row before */
    for (int before = 0; before < w; before++) {
      PLM_UNROLLED
      for (int q = 0; q < BAND_SUMS; q++) running[q] += carry[before].sums[q];
      running_count += carry[before].count;
    }
    if (!idle) {
      /* the boxes' rows inside the frame, for their areas (plm__cfar_square's clipping) */
      const int window_rows = band_extent(y, R, args.height),
                guard_rows = band_extent(y, G, args.height);
      const int own_slot = band_wrap(oldest + R + 1, length); /* row y's */
      float own[K] = {};
      PLM_UNROLLED
      for (int i = 0; i < K; i++) {
        PLM_UNROLLED
        for (int q = 0; q < BAND_SUMS; q++) running[q] += k[i][q];
        running_count += counts[i];
        const int a = first + i - R;
        const int64_t x = x0 + a;
        /* loaded before the test, but the compiler may move the load past it: the emulator's
         * host compiler does (kernels/cuda/cfar.cu, "The bands' cost") */
        const C value = band_ring_cell(ring, own_slot, a);
        if (a < lead || a >= lead + outputs || x >= args.width) continue;
        const int n = counted ? running_count
                              : window_rows * band_extent(x, R, args.width) -
                                    guard_rows * band_extent(x, G, args.width);
        double d, m;
        band_moments(value, level, n, running[BAND_V], running[BAND_V2], &d, &m);
        own[i] = band_output(args, y, x, d, m);
      }
      if (r > 0 && w > 0 && warp.lane() == 0) band_pass(args, own, &tail->passed[w - 1]);
      float group[K];
      band_group(warp, args, own, group);
      if (writes) band_store_outputs(args, frame_out, y, written_column, group);
    }
    oldest = band_wrap(oldest + 1, length);
  }
  /* The band's last row's passed outputs (the barrier also ends every read of the ring and the
   * flag before the block's next band writes them). */
  block.sync();
  if (passed_late && y_end > y0)
    band_store_passed(args, frame_out, y_end - 1, written_column, &tail->passed[w]);
  block.sync(); /* every read of the passed outputs, before the block's next band clears them */
}

/* Frame f's (strip, band) blocks first, first + step, ... of the stack's args.frames (a
 * launch's grid has a row of blocks for each frame, at most 65535 rows, so that one launch
 * fills the GPU with a stack of small frames, where a launch a frame put out a few blocks
 * each). */
template <typename T, typename S, class Block, class Warp>
PLM_HD void cfar_frame_bands(const Block &block, const Warp &warp, const plm__cfar_args &args,
                             int64_t f, int64_t first, int64_t step, int rows, void *shared) {
  const void *frame_in = plm__cfar_frame_in(&args, f);
  void *frame_out = plm__cfar_frame_out(&args, f);
  const double level = plm__cfar_level(frame_in, args.dtype);
  const int64_t blocks = band_blocks(args, rows);
  for (int64_t b = first; b < blocks; b += step)
    cfar_band<T, S>(block, warp, args, (const T *)frame_in, frame_out, level, b, rows, shared);
}

#endif /* PLUME_KERNELS_CUDA_CFAR_BANDS_H */

/* kernels/common/entropy.h: the binning and entropy terms both backends run, and the
 * arguments of an entropy launch (semantics in plume/entropy.h).
 *
 * Both kernels keep, for the window they slide, the counts c_b and the sum
 * S = sum_b c_b log2 c_b in 32.32 fixed point (plm__entropy_clogc), so adding a pixel
 * and taking it out again restores S exactly and no error builds up along a row;
 * then H = log2 n - S / n. A window holds at most 255 * 255 = 65025 pixels; a count
 * may pass that by the w pixels of a column or row entering before the one leaving is
 * taken out.
 *
 * S changes by a table lookup per count change, never a logarithm: the table
 * (plm__entropy_delta_table) is computed once, at build time, from plm__entropy_clogc
 * with the host's log2 (cmake/make_entropy_tables.c) and compiled into both
 * backends, so the CPU and the GPU add up the same integers (the GPU's log2 and the
 * host's may differ in the last bit).
 */
#ifndef PLUME_KERNELS_COMMON_ENTROPY_H
#define PLUME_KERNELS_COMMON_ENTROPY_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/common/plm_hd.h"
#include "plume/entropy.h"

enum {
  PLM__ENTROPY_MAX_WINDOW = 255,
  PLM__ENTROPY_MAX_COUNT = 255 * 255,
  PLM__ENTROPY_MAX_BINS = 65536,
  /* entries of the table of differences: every count a kernel may hold, plus one */
  PLM__ENTROPY_DELTA_COUNT = PLM__ENTROPY_MAX_COUNT + PLM__ENTROPY_MAX_WINDOW + 1,
  /* entries of the table of c log2 c: the CUDA kernels sum a fill from it only where the
   * differences its window reaches fit in shared memory (kernels/cuda/entropy.cu's
   * kDeltaBudget, 8 KiB: counts below 1024) */
  PLM__ENTROPY_CLOGC_COUNT = 1024
};

/* CPU work bands per pool thread, the default of entropy's host tunable bands_per_thread:
 * more bands balance uneven cores, fewer cost less scratch and halo. */
enum { PLM__ENTROPY_CPU_BANDS_PER_THREAD = 4 };

/* The launch shape of the CUDA window kernel (kernels/cuda/entropy.cu's make_plan), which
 * entropy and the fused op both take from their cuda tunables (ops/op_tuning.h's
 * PLM__ENTROPY_CUDA_TUNABLES, in this struct's order): at most max_threads threads per
 * block (32, 64 or 128; fewer where the shared-memory budget of the plan's kind of
 * histogram does not fit that many, never another kind), and tasks of segment_windows x
 * max(w, 16) output rows, halved down to 8 while the launch has fewer than min_tasks
 * tasks, each thread changing changes_at_once counts (1 or 2) at a time: loading their
 * words before storing either (2), or each after the last store (1); or, with
 * atomic_counts 1 (the entropy op's, histograms in shared memory only; the fused op's
 * is always 0), each count by one shared-memory atomic that returns the count before,
 * in place of its load and store. Any shape computes the same bits: it changes the
 * speed alone. */
typedef struct plm__entropy_cuda_shape {
  int max_threads;
  int segment_windows;
  int min_tasks;
  int changes_at_once;
  int atomic_counts;
} plm__entropy_cuda_shape;

/* The shape plume launched before it was tunable: the tunables' defaults. */
enum {
  PLM__ENTROPY_CUDA_MAX_THREADS = 128,
  PLM__ENTROPY_CUDA_SEGMENT_WINDOWS = 2,
  PLM__ENTROPY_CUDA_MIN_TASKS = 512,
  PLM__ENTROPY_CUDA_CHANGES_AT_ONCE = 2, /* since: 1 before, when it was not tunable */
  PLM__ENTROPY_CUDA_ATOMIC_COUNTS = 0    /* until a GPU has timed the atomics */
};

typedef struct plm__entropy_args {
  const void *in;
  float *out;
  void *scratch; /* plm__entropy_{cpu,cuda}_scratch_bytes(args) bytes, from the pool */
  int64_t frames, height, width;
  plm_dtype dtype; /* of in: u8, u16 or f32 */
  int window;
  int bins;             /* the bin count in use: 2^bits for integer value-as-bin */
  int range_auto;       /* f32: per-frame finite [min, max] instead of [lo, hi) */
  double lo, hi;        /* f32 without range_auto */
  int bands_per_thread; /* host: CPU work bands per pool thread (ops/entropy.c's tunable) */
  plm__entropy_cuda_shape cuda_shape; /* cuda: the window kernel's (ops/entropy.c's tunables) */
} plm__entropy_args;

/* c log2 c in 32.32 fixed point (0 for c = 0 and 1). */
static inline PLM_HD int64_t plm__entropy_clogc(int64_t c) {
  return c < 2 ? 0 : (int64_t)llrint((double)c * log2((double)c) * 4294967296.0);
}

/* What plm__entropy_from_sum needs to know of n, the window's pixel count: log2 n
 * and 1 / (2^32 n). Kernels compute it once per change of n. */
typedef struct plm__entropy_norm {
  double log2n, scale;
} plm__entropy_norm;

static inline PLM_HD plm__entropy_norm plm__entropy_norm_of(int64_t n) {
  plm__entropy_norm norm = {log2((double)n), 1.0 / (4294967296.0 * (double)n)};
  return norm;
}

/* H in bits of a window whose counts give the fixed-point sum s. Never negative
 * (rounding could give -1e-10 when every pixel is in one bin). The product and the
 * difference are each rounded to nearest on both backends: on the GPU the intrinsics
 * keep nvcc from contracting them into a fused multiply-add, which it may do in one
 * kernel and not in another (the fused sobel-entropy-threshold kernel must equal the
 * entropy kernel bit for bit); C11 does not contract. */
static inline PLM_HD float plm__entropy_from_sum(plm__entropy_norm norm, int64_t s) {
#ifdef __CUDA_ARCH__
  double h = __dsub_rn(norm.log2n, __dmul_rn((double)s, norm.scale));
#else
  double h = norm.log2n - (double)s * norm.scale;
#endif
  return h > 0.0 ? (float)h : 0.0f;
}

/* The bin of an f32 value in [lo, hi) with `bins` bins (plume/entropy.h): below lo
 * and NaN to 0, at or above hi to bins - 1, and everything to 0 when !(lo < hi). */
static inline PLM_HD int plm__entropy_bin_f32(float v, double lo, double hi, int bins) {
  double x = (double)v;
  if (!(lo < hi) || !(x >= lo)) return 0;
  if (x >= hi) return bins - 1;
  double b = floor((x - lo) * (double)bins / (hi - lo));
  return b < (double)(bins - 1) ? (int)b : bins - 1;
}

/* Element i of in as 32 bits, what plm__entropy_bin_raw bins: a u8's or u16's value, an
 * f32's bits. Apart from the binning so that a kernel may load a row's elements a step
 * before it bins them (kernels/cuda/entropy.cu, RowAhead). */
static inline PLM_HD uint32_t plm__entropy_raw(const void *in, int64_t i, plm_dtype dtype) {
  uint32_t bits = 0;
  switch (dtype) {
    case PLM_DTYPE_U8: return ((const uint8_t *)in)[i];
    case PLM_DTYPE_U16: return ((const uint16_t *)in)[i];
    case PLM_DTYPE_F32: memcpy(&bits, (const float *)in + i, sizeof bits); return bits;
    case PLM_DTYPE_I32:
    case PLM_DTYPE_F64: break; /* refused by the op */
  }
  return 0;
}

/* The bin of an element whose plm__entropy_raw is raw (plume/entropy.h); lo and hi are
 * the frame's range for f32 and unused for integers. */
static inline PLM_HD int plm__entropy_bin_raw(uint32_t raw, plm_dtype dtype, int bins, double lo,
                                              double hi) {
  float value;
  switch (dtype) {
    case PLM_DTYPE_U8: return (int)((raw * (uint32_t)bins) >> 8);
    case PLM_DTYPE_U16: return (int)(((uint64_t)raw * (uint64_t)bins) >> 16);
    case PLM_DTYPE_F32:
      memcpy(&value, &raw, sizeof value);
      return plm__entropy_bin_f32(value, lo, hi, bins);
    case PLM_DTYPE_I32:
    case PLM_DTYPE_F64: break; /* refused by the op */
  }
  return 0;
}

/* The bin of element i of in (plume/entropy.h); lo and hi are the frame's range for
 * f32 and unused for integers. */
static inline PLM_HD int plm__entropy_bin(const void *in, int64_t i, plm_dtype dtype, int bins,
                                          double lo, double hi) {
  return plm__entropy_bin_raw(plm__entropy_raw(in, i, dtype), dtype, bins, lo, hi);
}

/* The window around index y along a dimension of size n: *first is its first index
 * inside [0, n) and *count how many of its indices are inside (plume/entropy.h: the
 * window covers y - floor(w/2) .. y - floor(w/2) + w - 1). */
static inline PLM_HD void plm__entropy_span(int64_t y, int64_t n, int window, int64_t *first,
                                            int64_t *count) {
  int64_t lo = y - window / 2, hi = lo + window - 1;
  if (lo < 0) lo = 0;
  if (hi > n - 1) hi = n - 1;
  *first = lo;
  *count = hi - lo + 1;
}

/* Whether a frame's auto range accepts v: finite values only. */
static inline PLM_HD int plm__entropy_in_auto_range(float v) {
  return v == v && v - v == 0.0f;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernel (kernels/cpu/entropy.c): runs on the calling thread and the CPU
 * pool; returns when done. Scratch: each frame's range, and per work chunk a
 * histogram and the bins (u16) of a block of rows with its halo (kernels/cpu/entropy.c). */
void plm__entropy_cpu(const plm__entropy_args *args);
size_t plm__entropy_cpu_scratch_bytes(const plm__entropy_args *args);

/* The table of differences: entry c is clogc(c + 1) - clogc(c), what S gains when a
 * count goes from c to c + 1, for c < PLM__ENTROPY_DELTA_COUNT. Constant data computed
 * at build time (cmake/make_entropy_tables.c), which the CUDA kernels compile
 * into their device data too (kernels/cuda/entropy.cu). */
const int64_t *plm__entropy_delta_table(void);

/* The stride the CPU kernels give rows of bins of a given width: whole cache lines,
 * an odd number of them, so that the rows of a window, which plm__entropy_cpu_row
 * walks column by column, fall in different cache sets (at a width of 2048, rows
 * 4 KiB apart would all share one L1 set). */
int64_t plm__entropy_cpu_bins_stride(int64_t width);

/* The CPU kernel's row step, which the fused sobel-entropy-threshold kernel shares
 * (kernels/cpu/fused.c): the entropy of one output row, out_row[x] for x < width,
 * from the `rows` rows of bins its window covers (plm__entropy_span), the first at
 * top and each `stride` bins after the previous. The window's histogram slides right
 * along the row. hist holds a u16 count per bin, zero on entry and on return. */
void plm__entropy_cpu_row(const uint16_t *top, int64_t rows, int64_t stride, int64_t width,
                          int window, float *out_row, uint16_t *hist);

/* Enqueue the CUDA kernels (kernels/cuda/entropy.cu) on a cudaStream_t, with the
 * context's device current. Scratch: each frame's range (auto), and warp-owned global
 * histograms only when no kind of shared one fits (more than 512 bins and a
 * window past 18), at most 256 MiB (kernels/cuda/entropy.cu). */
plm_status plm__entropy_cuda(void *stream, const plm__entropy_args *args);
size_t plm__entropy_cuda_scratch_bytes(const plm__entropy_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_ENTROPY_H */

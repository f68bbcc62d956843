/* kernels/common/cfar.h: the per-pixel math of cell-averaging CFAR that both backends
 * run, and the arguments of a cfar launch (semantics in plume/cfar.h).
 *
 * Each frame gets summed-area tables in the scratch, one after the other, each of
 * (H + 1) x (W + 1) entries of 8 bytes: the sums over rows < r and columns < c at (r, c),
 * so row 0 and column 0 are 0, of each cell's components (plm__cfar_cell_int,
 * plm__cfar_cell_f32): v, v^2 and, for f32 only, 1 when the cell is finite. Entries are
 * uint64_t for u8 and u16 (exact; a box's sum is a difference of four entries, exact even
 * if an entry wrapped, since the box's own sum fits) and double for f32, of v - v0
 * (plm__cfar_level), with a non-finite cell taken as 0 in every table (left out of every
 * reference set); the count table holds integers below 2^53, so its boxes are exact. The
 * kernels differ only in how they fill the tables; from the tables on, every pixel goes
 * through plm__cfar_moments_* and plm__cfar_write, so for integer inputs the two backends
 * give the same bits. (The CUDA kernels' bands, for windows up to 97 or 127, keep no tables:
 * each column's sums over a box's rows move down the rows and are summed across the
 * columns (kernels/cuda/cfar_bands.h); integer sums are exact in any order, so the bits
 * are the same.)
 */
#ifndef PLUME_KERNELS_COMMON_CFAR_H
#define PLUME_KERNELS_COMMON_CFAR_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/common/hold_reach.h"
#include "kernels/common/plm_hd.h"
#include "plume/cfar.h"

enum { PLM__CFAR_MAX_WINDOW = 255, PLM__CFAR_MAX_TABLES = 3 };

typedef struct plm__cfar_args {
  const void *in;
  void *out;     /* u8 (mask) or f32 (z) */
  void *scratch; /* the CPU's plm__cfar_scratch_bytes(args), one frame's tables; cuda's
                    plm__cfar_cuda_scratch_bytes(args) */
  int64_t frames, height, width;
  plm_dtype dtype; /* of in: u8, u16 or f32 */
  int window, guard;
  double k;
  plm_cfar_result output;
  const uint8_t *hold; /* (H, W), or NULL: no hold (the mask only) */
  double hold_k;       /* the factor where the hold reaches, when below k */
  int hold_radius;     /* the hold's reach, in 4-connected steps */
  uint64_t shared_per_block; /* cuda: the shared memory a block may opt in to on the op's
                                device (plm_device_info.shared_per_block_optin), which picks
                                the bands or the tables (in_bands, kernels/cuda/cfar_bands.h)
                                for the scratch's size and the launch alike; unread on the
                                host */
} plm__cfar_args;

/* The tables a frame gets: sums of v and v^2, and for f32 the count of finite cells
 * (integers are always finite, so their count is the box's area). */
static inline PLM_HD int plm__cfar_tables(plm_dtype dtype) {
  return dtype == PLM_DTYPE_F32 ? 3 : 2;
}

/* Entries per table, and the scratch of a frame's tables (the CPU's: one frame's, reused by the
 * next). */
static inline PLM_HD int64_t plm__cfar_table_entries(const plm__cfar_args *args) {
  return (args->height + 1) * (args->width + 1);
}
static inline PLM_HD size_t plm__cfar_scratch_bytes(const plm__cfar_args *args) {
  return (size_t)plm__cfar_tables(args->dtype) * (size_t)plm__cfar_table_entries(args) * 8;
}

/* The bytes of an element of in (u8, u16 or f32). */
static inline PLM_HD int plm__cfar_in_bytes(plm_dtype dtype) {
  return dtype == PLM_DTYPE_U8 ? 1 : dtype == PLM_DTYPE_U16 ? 2 : 4;
}

/* Frame f's first element of in and of out. */
static inline PLM_HD const void *plm__cfar_frame_in(const plm__cfar_args *args, int64_t f) {
  return (const char *)args->in + f * args->height * args->width * plm__cfar_in_bytes(args->dtype);
}
static inline PLM_HD void *plm__cfar_frame_out(const plm__cfar_args *args, int64_t f) {
  const int64_t size = args->output == PLM_CFAR_Z ? 4 : 1;
  return (char *)args->out + f * args->height * args->width * size;
}

/* Whether an f32 value is finite (neither NaN nor an infinity: v - v is 0 for no other),
 * without isfinite's dependence on the host's or device's math library. Tested in f32, the
 * same answer as for the double it widens to: on a GPU a test of the double would take two
 * instructions of the FP64 pipe, which the f32 sums already load (kernels/cuda/cfar.cu). */
static inline PLM_HD int plm__cfar_finite(float v) {
  return v - v == 0.0f;
}

/* The level f32 tables are summed from: a frame's first pixel when finite, else 0 (0 for
 * integers, whose tables are exact anyway). */
static inline PLM_HD double plm__cfar_level(const void *frame, plm_dtype dtype) {
  if (dtype != PLM_DTYPE_F32) return 0.0;
  const float v = ((const float *)frame)[0];
  return plm__cfar_finite(v) ? (double)v : 0.0;
}

/* Element i of a frame as an integer table takes it (u8, u16); an f32 value as an f32 table
 * takes it (v - level; 0 when v is not finite), for the tables and the bands alike. */
static inline PLM_HD uint64_t plm__cfar_value_int(const void *frame, int64_t i, plm_dtype dtype) {
  return dtype == PLM_DTYPE_U8 ? (uint64_t)((const uint8_t *)frame)[i]
                               : (uint64_t)((const uint16_t *)frame)[i];
}
static inline PLM_HD double plm__cfar_centred(float v, double level) {
  return plm__cfar_finite(v) ? (double)v - level : 0.0;
}

/* Element i's components, one per table (plm__cfar_tables): v and v^2 for integers; v, v^2
 * and 1 for a finite f32, 0, 0 and 0 for a non-finite one, which so adds nothing to any
 * table and is no one's reference cell. */
static inline PLM_HD void plm__cfar_cell_int(const void *frame, int64_t i, plm_dtype dtype,
                                             uint64_t cell[PLM__CFAR_MAX_TABLES]) {
  const uint64_t v = plm__cfar_value_int(frame, i, dtype);
  cell[0] = v;
  cell[1] = v * v;
  cell[2] = 1;
}
static inline PLM_HD void plm__cfar_cell_f32(const void *frame, int64_t i, double level,
                                             double cell[PLM__CFAR_MAX_TABLES]) {
  const float v = ((const float *)frame)[i];
  cell[0] = plm__cfar_centred(v, level);
  cell[1] = cell[0] * cell[0];
  cell[2] = plm__cfar_finite(v) ? 1.0 : 0.0;
}

/* Products and differences rounded one by one: nvcc would contract a * b - c into a fused
 * multiply-add, C11 does not. */
static inline PLM_HD double plm__cfar_mul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
static inline PLM_HD double plm__cfar_sub(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

/* A box of table coordinates: rows [y0, y1), columns [x0, x1) of the image. */
typedef struct plm__cfar_box {
  int64_t y0, y1, x0, x1;
} plm__cfar_box;

/* The side x side square centred on (y, x), clipped to the height x width image. */
static inline PLM_HD plm__cfar_box plm__cfar_square(int64_t y, int64_t x, int side, int64_t height,
                                                    int64_t width) {
  const int64_t half = side / 2;
  plm__cfar_box b = {y - half, y + half + 1, x - half, x + half + 1};
  if (b.y0 < 0) b.y0 = 0;
  if (b.x0 < 0) b.x0 = 0;
  if (b.y1 > height) b.y1 = height;
  if (b.x1 > width) b.x1 = width;
  return b;
}

static inline PLM_HD int64_t plm__cfar_area(plm__cfar_box b) {
  return (b.y1 - b.y0) * (b.x1 - b.x0);
}

/* A box's sum from a table of `stride` (W + 1) entries per row. */
static inline PLM_HD uint64_t plm__cfar_box_int(const uint64_t *t, int64_t stride,
                                                plm__cfar_box b) {
  return t[b.y1 * stride + b.x1] - t[b.y0 * stride + b.x1] - t[b.y1 * stride + b.x0] +
         t[b.y0 * stride + b.x0];
}
static inline PLM_HD double plm__cfar_box_f64(const double *t, int64_t stride, plm__cfar_box b) {
  return (t[b.y1 * stride + b.x1] - t[b.y0 * stride + b.x1]) -
         (t[b.y1 * stride + b.x0] - t[b.y0 * stride + b.x0]);
}

/* The two outputs from d = n x - S1 and m = n S2 - S1^2 (plume/cfar.h): 0 when m is not
 * positive (no reference cell, or all equal); NaN makes the mask 0. */
static inline PLM_HD uint8_t plm__cfar_mask(double d, double m, double k) {
  return m > 0.0 && d > plm__cfar_mul(k, sqrt(m));
}
static inline PLM_HD float plm__cfar_z(double d, double m) {
  return m > 0.0 ? (float)(d / sqrt(m)) : 0.0f;
}

/* A pixel's reference sum in one table: its outer box's less its guard's. */
static inline PLM_HD double plm__cfar_ring_f64(const double *t, int64_t stride, plm__cfar_box outer,
                                               plm__cfar_box guard) {
  return plm__cfar_box_f64(t, stride, outer) - plm__cfar_box_f64(t, stride, guard);
}
static inline PLM_HD uint64_t plm__cfar_ring_int(const uint64_t *t, int64_t stride,
                                                 plm__cfar_box outer, plm__cfar_box guard) {
  return plm__cfar_box_int(t, stride, outer) - plm__cfar_box_int(t, stride, guard);
}

/* Element i of a frame's output (frame_out: its first element) from d and m. */
static inline PLM_HD void plm__cfar_write(const plm__cfar_args *args, void *frame_out, int64_t i,
                                          double d, double m) {
  if (args->output == PLM_CFAR_Z)
    ((float *)frame_out)[i] = plm__cfar_z(d, m);
  else
    ((uint8_t *)frame_out)[i] = plm__cfar_mask(d, m, args->k);
}

/* A pixel's d = n x - S1 and m = n S2 - S1^2 (plume/cfar.h) from its value x and its reference
 * sums (plm__cfar_ring_*): for f32, n, S1 and S2 from the three tables (or the bands' sums), and
 * d = m = 0 when x is not finite; level is plm__cfar_level of the frame; for u8 and u16, S1 and
 * S2 from the two, n from the boxes' areas. */
static inline PLM_HD void plm__cfar_moments_of_f32(float v, double level, double n, double s1,
                                                   double s2, double *d, double *m) {
  *d = plm__cfar_sub(plm__cfar_mul(n, (double)v - level), s1);
  *m = plm__cfar_sub(plm__cfar_mul(n, s2), plm__cfar_mul(s1, s1));
  if (!plm__cfar_finite(v)) *d = *m = 0.0;
}
static inline PLM_HD void plm__cfar_moments_of_int(uint64_t v, int64_t n, uint64_t s1, uint64_t s2,
                                                   double *d, double *m) {
  /* Exact: n <= 255^2 - 1 and v <= 65535, so n S2 and S1^2 stay below 2^64. */
  *d = (double)((int64_t)((uint64_t)n * v) - (int64_t)s1);
  *m = (double)((uint64_t)n * s2 - s1 * s1);
}

/* The same for element i of a frame (frame_in: its first element). */
static inline PLM_HD void plm__cfar_moments_f32(const void *frame_in, double level, int64_t i,
                                                double n, double s1, double s2, double *d,
                                                double *m) {
  plm__cfar_moments_of_f32(((const float *)frame_in)[i], level, n, s1, s2, d, m);
}
static inline PLM_HD void plm__cfar_moments_int(const plm__cfar_args *args, const void *frame_in,
                                                int64_t i, int64_t n, uint64_t s1, uint64_t s2,
                                                double *d, double *m) {
  plm__cfar_moments_of_int(plm__cfar_value_int(frame_in, i, args->dtype), n, s1, s2, d, m);
}

/* Pixel (y, x)'s d and m from its reference cells' sums in the frame's tables. frame_in
 * points at the frame's first element; tables at the first of the frame's
 * plm__cfar_tables tables, one after the other; level is plm__cfar_level of the frame. An
 * f32 pixel that is not finite gets d = m = 0; its neighbours' n counts only their finite
 * reference cells. */
static inline PLM_HD void plm__cfar_moments_at(const plm__cfar_args *args, const void *frame_in,
                                               const void *tables, double level, int64_t y,
                                               int64_t x, double *d, double *m) {
  const int64_t w = args->width, stride = w + 1, i = y * w + x;
  const int64_t entries = plm__cfar_table_entries(args);
  const plm__cfar_box outer = plm__cfar_square(y, x, args->window, args->height, w);
  const plm__cfar_box guard = plm__cfar_square(y, x, args->guard, args->height, w);
  if (args->dtype == PLM_DTYPE_F32) {
    const double *s = (const double *)tables, *q = s + entries, *c = q + entries;
    plm__cfar_moments_f32(frame_in, level, i, plm__cfar_ring_f64(c, stride, outer, guard),
                          plm__cfar_ring_f64(s, stride, outer, guard),
                          plm__cfar_ring_f64(q, stride, outer, guard), d, m);
  } else {
    const uint64_t *s = (const uint64_t *)tables, *q = s + entries;
    plm__cfar_moments_int(args, frame_in, i, plm__cfar_area(outer) - plm__cfar_area(guard),
                          plm__cfar_ring_int(s, stride, outer, guard),
                          plm__cfar_ring_int(q, stride, outer, guard), d, m);
  }
}

/* Pixel (y, x) of a frame: plm__cfar_moments_at, then its output. */
static inline PLM_HD void plm__cfar_pixel(const plm__cfar_args *args, const void *frame_in,
                                          void *frame_out, const void *tables, double level,
                                          int64_t y, int64_t x) {
  double d, m;
  plm__cfar_moments_at(args, frame_in, tables, level, y, x, &d, &m);
  plm__cfar_write(args, frame_out, y * args->width + x, d, m);
}

/* A hold (plume/cfar.h) takes two passes over a frame's mask, so that the pixel kernels
 * stay as they are without one: whether they are due (a hold that lowers the mask's factor),
 * and the first pass's args, the ordinary pass at min(k, hold_k) everywhere. */
static inline PLM_HD int plm__cfar_holds(const plm__cfar_args *args) {
  return args->hold && args->output == PLM_CFAR_MASK && args->hold_k < args->k;
}

static inline PLM_HD plm__cfar_args plm__cfar_first_pass(const plm__cfar_args *args) {
  plm__cfar_args first = *args;
  if (plm__cfar_holds(args)) first.k = args->hold_k;
  return first;
}

/* The second pass, pixel (y, x): a pixel the first pass detected stays detected where the
 * hold reaches it, and elsewhere is judged again at k from the same tables and arithmetic
 * (so exactly as a pass at k would judge it). */
static inline PLM_HD void plm__cfar_hold_pixel(const plm__cfar_args *args, const void *frame_in,
                                               void *frame_out, const void *tables, double level,
                                               int64_t y, int64_t x) {
  uint8_t *mask = (uint8_t *)frame_out + y * args->width + x;
  if (!*mask || plm__hold_reaches(args->hold, args->height, args->width, y, x, args->hold_radius))
    return;
  double d, m;
  plm__cfar_moments_at(args, frame_in, tables, level, y, x, &d, &m);
  *mask = plm__cfar_mask(d, m, args->k);
}

/* The mask of pixel (y, x) under a hold, in one pass from its d and m: what the two passes
 * give (the first at hold_k, then plm__cfar_hold_pixel at k where the hold does not reach),
 * since k * sqrt(m), rounded, does not fall as k rises: a pixel not detected at hold_k is
 * not detected at k either. */
static inline PLM_HD uint8_t plm__cfar_held_mask(const plm__cfar_args *args, int64_t y, int64_t x,
                                                 double d, double m) {
  if (!plm__cfar_mask(d, m, args->hold_k)) return 0;
  if (plm__hold_reaches(args->hold, args->height, args->width, y, x, args->hold_radius)) return 1;
  return plm__cfar_mask(d, m, args->k);
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernel (kernels/cpu/cfar.c): runs on the calling thread and the CPU pool;
 * returns when done. */
void plm__cfar_cpu(const plm__cfar_args *args);

/* Enqueue the CUDA kernels (kernels/cuda/cfar.cu) on a cudaStream_t. */
plm_status plm__cfar_cuda(void *stream, const plm__cfar_args *args);

/* The scratch the CUDA kernels need on the current device: none when every frame goes through
 * the bands (windows up to 97, up to 127 where a block may take their shared memory; no
 * tables), else the tables of the frames they take at once (a multiple of
 * plm__cfar_scratch_bytes: kernels/cuda/cfar.cu). */
size_t plm__cfar_cuda_scratch_bytes(const plm__cfar_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_CFAR_H */

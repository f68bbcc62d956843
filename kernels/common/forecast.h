/* kernels/common/forecast.h: the AR(p) fit and forecast of one series, run by both
 * backends (one CPU task per series; on CUDA a thread or a group of lanes a series), and
 * the arguments of an ar_forecast launch (semantics in plume/forecast.h). */
#ifndef PLUME_KERNELS_COMMON_FORECAST_H
#define PLUME_KERNELS_COMMON_FORECAST_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/forecast.h"

typedef struct plm__ar_forecast_args {
  const float *series; /* (S, T) */
  float *out;          /* (S, h) */
  int64_t count;       /* S */
  int64_t length;      /* T */
  int lags;            /* p */
  int horizon;         /* h */
  int lanes;           /* CUDA only: lanes a series, plm__ar_series_lanes (1, 8, 16, 32) */
} plm__ar_forecast_args;

/* The working doubles of one series: R and V ((p + 1)^2 each), Q^T y, a row (p + 1 each)
 * and the forecast's history (p). */
static inline PLM_HD int64_t plm__ar_work_doubles(int lags) {
  int64_t n = lags + 1;
  return 2 * n * n + 2 * n + lags;
}

/* How the CUDA kernels (kernels/cuda/forecast.cu) spread a series over lanes, and where
 * they keep its working doubles; ar_forecast's cuda tunable lanes_per_series picks
 * (ops/forecast.c), plm__ar_series_lanes makes its value fit the lags:
 *   - 1, a thread a series (lags 1..8): in shared memory, interleaved across a block's
 *     threads, when at least a warp's worth of them fits in PLM__AR_SHARED_BYTES (48 KiB,
 *     what a block may have without opting in; 8: 188 doubles, 1504 bytes, 32 threads).
 *     plm__ar_shared_threads gives the threads per block (a multiple of 32, at most
 *     PLM__AR_SHARED_MAX_THREADS), or 0 past those lags. The thread's chain of dependent
 *     rotations is (T - p) (p + 1) long.
 *   - 8, 16 or 32, a group of lanes a series, lane l owning rows l and l + lanes of R (only
 *     32 lanes hold the 33 rows of p = 32 with a second row): in shared memory, one
 *     contiguous block of plm__ar_group_work_doubles(p) a group (the work, then two rings
 *     of n + 1 equations of n + 1 values, which the Jacobi sweeps reuse for two buffers of
 *     3 n + 3; 35.8 KiB at p = 32, 10 KiB at p = 16, 1.5 KiB at p = 5);
 *     plm__ar_group_kernel_threads gives the threads per block, as many whole warps as
 *     fit 48 KiB, at most PLM__AR_GROUP_KERNEL_MAX_THREADS. The rows rotate an equation
 *     at once, a step apart (systolic): the chain is m + p = T steps long (m = T - p
 *     equations).
 * Neither needs scratch. */
enum {
  PLM__AR_SHARED_BYTES = 48 * 1024,
  PLM__AR_SHARED_MAX_THREADS = 256,
  PLM__AR_GROUP_KERNEL_MAX_THREADS = 256,
  PLM__AR_GROUP_LANES_MOST = 32
};

static inline PLM_HD int plm__ar_shared_threads(int lags) {
  const int64_t per_thread = plm__ar_work_doubles(lags) * (int64_t)sizeof(double);
  const int64_t warps = PLM__AR_SHARED_BYTES / (32 * per_thread);
  const int64_t threads = 32 * warps;
  return (int)(threads < PLM__AR_SHARED_MAX_THREADS ? threads : PLM__AR_SHARED_MAX_THREADS);
}

/* The lanes a series takes for `wanted` (lanes_per_series: 1, 8, 16 or 32): 1 where a
 * thread a series fits the lags (1..8); else the least of 8, 16 and 32 that is at least
 * `wanted` and, below 32, at least the p + 1 rows of R. */
static inline PLM_HD int plm__ar_series_lanes(int lags, int wanted) {
  if (wanted <= 1 && plm__ar_shared_threads(lags) > 0) return 1;
  int lanes = 8;
  while (lanes < PLM__AR_GROUP_LANES_MOST && (lanes < wanted || lanes < lags + 1)) lanes *= 2;
  return lanes;
}

static inline PLM_HD int64_t plm__ar_group_work_doubles(int lags) {
  const int64_t n = lags + 1;
  return plm__ar_work_doubles(lags) + 2 * (n + 1) * (n + 1); /* at least 6 n + 6 */
}

/* The threads of a block of the group kernel, `lanes` (8, 16 or 32) a series: the most
 * whole warps whose series' work fits PLM__AR_SHARED_BYTES, at most
 * PLM__AR_GROUP_KERNEL_MAX_THREADS (at least one warp for every lags and lanes). */
static inline PLM_HD int plm__ar_group_kernel_threads(int lags, int lanes) {
  const int64_t warp_bytes =
      (32 / lanes) * plm__ar_group_work_doubles(lags) * (int64_t)sizeof(double);
  const int64_t threads = 32 * (PLM__AR_SHARED_BYTES / warp_bytes);
  return (int)(threads < PLM__AR_GROUP_KERNEL_MAX_THREADS ? threads
                                                          : PLM__AR_GROUP_KERNEL_MAX_THREADS);
}

/* The most one-sided Jacobi sweeps over R's column pairs (they stop at the first sweep
 * that rotates none). */
enum { PLM__AR_JACOBI_SWEEPS = 60 };

/* sqrt(a^2 + b^2) for the Givens rotations, within an ulp or two of hypot(a, b).
 * libm's hypot guards against overflow and underflow at the price of a call (it was half
 * of a series' time). The values here come from f32 data, |x| < 2^128, rotated (|c|,
 * |s| <= 1) and summed over the equations, so their squares stay far inside double's
 * range and the plain formula serves; hypot takes over outside [2^-450, 2^450] (values
 * that cancellation left tiny, or anything unforeseen), and for NaN. */
static inline PLM_HD double plm__ar_hypot(double a, double b) {
  const double h = sqrt(a * a + b * b);
  return h > 0x1p-450 && h < 0x1p450 ? h : hypot(a, b);
}

/* A series' working doubles, element i at work[i * stride] (the CUDA kernels interleave
 * their threads' work; the CPU passes stride 1): R (n x n, row-major), V (n x n), Q^T y,
 * a row (n each) and the forecast's history (p), n = p + 1. */
#define PLM__AR_R(i, j) work[((int64_t)(i)*n + (j)) * stride]
#define PLM__AR_V(i, j) work[((int64_t)n * n + (int64_t)(i)*n + (j)) * stride]
#define PLM__AR_QTY(i) work[((int64_t)2 * n * n + (i)) * stride]
#define PLM__AR_ROW(i) work[((int64_t)2 * n * n + n + (i)) * stride]
#define PLM__AR_HIST(i) work[((int64_t)2 * n * n + 2 * n + (i)) * stride]

/* The Jacobi rotation of columns p and q of R from their squared norms alpha and beta and
 * their dot product gamma: 0 when they are orthogonal to working precision (no rotation),
 * else 1 with its cosine and sine in *c and *s. */
static inline PLM_HD int plm__ar_jacobi_rotation(double alpha, double beta, double gamma, double *c,
                                                 double *s) {
  if (!(fabs(gamma) > DBL_EPSILON * sqrt(alpha * beta))) return 0;
  double zeta = (beta - alpha) / (2 * gamma);
  double t = fabs(zeta) > 1e150 ? 0.5 / zeta
                                : (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
  *c = 1 / sqrt(1 + t * t);
  *s = *c * t;
  return 1;
}

/* Row i of the Jacobi rotation (c, s) of columns p and q: of R, and of V, which gathers the
 * rotations. Both backends' sweeps rotate a row with it, so that they give the same bits. */
static inline PLM_HD void plm__ar_rotate_row(double *work, int64_t stride, int n, int i, int p,
                                             int q, double c, double s) {
  const double ap = PLM__AR_R(i, p), aq = PLM__AR_R(i, q);
  PLM__AR_R(i, p) = c * ap - s * aq;
  PLM__AR_R(i, q) = s * ap + c * aq;
  const double vp = PLM__AR_V(i, p), vq = PLM__AR_V(i, q);
  PLM__AR_V(i, p) = c * vp - s * vq;
  PLM__AR_V(i, q) = s * vp + c * vq;
}

/* From R and V after the Jacobi sweeps (R V = U S) and Q^T y: the coefficients, the
 * minimum-norm least-squares answer, and the forecast of series x (length T) into out (h
 * values). Uses R's first row, ROW and HIST as it goes. */
static inline PLM_HD void plm__ar_solve_and_forecast(const float *x, int64_t length, int lags,
                                                     int horizon, float *out, double *work,
                                                     int64_t stride) {
  const int n = lags + 1;
  /* coef = sum over kept j of v_j (a_j . Q^T y) / s_j^2, into ROW. */
  double largest = 0;
  for (int j = 0; j < n; j++) {
    double norm2 = 0;
    for (int i = 0; i < n; i++) norm2 += PLM__AR_R(i, j) * PLM__AR_R(i, j);
    PLM__AR_ROW(j) = sqrt(norm2); /* s_j, for now */
    if (PLM__AR_ROW(j) > largest) largest = PLM__AR_ROW(j);
  }
  int64_t equations = length - lags;
  double cutoff = (double)(equations > n ? equations : n) * DBL_EPSILON * largest;
  for (int j = 0; j < n; j++) {
    double sj = PLM__AR_ROW(j), weight = 0;
    if (sj > cutoff) {
      for (int i = 0; i < n; i++) weight += PLM__AR_R(i, j) * PLM__AR_QTY(i);
      weight /= sj * sj;
    } else if (!(sj <= cutoff)) {
      weight = NAN; /* a NaN in the series */
    }
    PLM__AR_R(0, j) = weight; /* column j is done with: R's first row keeps the weights */
  }
  for (int i = 0; i < n; i++) {
    double coef = 0;
    for (int j = 0; j < n; j++) coef += PLM__AR_V(i, j) * PLM__AR_R(0, j);
    PLM__AR_ROW(i) = coef;
  }
  /* Recursive forecast: HIST(k) is the value at lag k + 1. */
  for (int k = 0; k < lags; k++) PLM__AR_HIST(k) = (double)x[length - 1 - k];
  for (int step = 0; step < horizon; step++) {
    double f = PLM__AR_ROW(0);
    for (int k = 1; k < n; k++) f += PLM__AR_ROW(k) * PLM__AR_HIST(k - 1);
    for (int k = lags - 1; k > 0; k--) PLM__AR_HIST(k) = PLM__AR_HIST(k - 1);
    PLM__AR_HIST(0) = f;
    out[step] = (float)f;
  }
}

/* Fit and forecast series x (length T) into out (h values), one thread: Givens QR of the
 * T - p equations, one-sided Jacobi SVD of R, then plm__ar_solve_and_forecast. The CUDA
 * group kernel (kernels/cuda/forecast.cu) spreads the first two over a group's lanes with
 * the same operations on each number in the same order, so it gives the same bits. */
static inline PLM_HD void plm__ar_forecast_one(const float *x, int64_t length, int lags,
                                               int horizon, float *out, double *work,
                                               int64_t stride) {
  const int n = lags + 1;
  for (int i = 0; i < n; i++) {
    PLM__AR_QTY(i) = 0;
    for (int j = 0; j < n; j++) {
      PLM__AR_R(i, j) = 0;
      PLM__AR_V(i, j) = i == j;
    }
  }
  /* Givens QR, one equation at a time: [1, x[t-1], ..., x[t-p]] . c = x[t]. */
  for (int64_t t = lags; t < length; t++) {
    PLM__AR_ROW(0) = 1.0;
    for (int k = 1; k < n; k++) PLM__AR_ROW(k) = (double)x[t - k];
    double y = (double)x[t];
    for (int j = 0; j < n; j++) {
      double rj = PLM__AR_ROW(j);
      if (rj == 0) continue;
      double rjj = PLM__AR_R(j, j), h = plm__ar_hypot(rjj, rj), c = rjj / h, s = rj / h;
      PLM__AR_R(j, j) = h;
      for (int k = j + 1; k < n; k++) {
        double a = PLM__AR_R(j, k), b = PLM__AR_ROW(k);
        PLM__AR_R(j, k) = c * a + s * b;
        PLM__AR_ROW(k) = c * b - s * a;
      }
      double a = PLM__AR_QTY(j);
      PLM__AR_QTY(j) = c * a + s * y;
      y = c * y - s * a;
    }
  }
  /* One-sided Jacobi on R's columns: R V = U S, V accumulated. */
  for (int sweep = 0; sweep < PLM__AR_JACOBI_SWEEPS; sweep++) {
    int rotated = 0;
    for (int p = 0; p < n - 1; p++)
      for (int q = p + 1; q < n; q++) {
        double alpha = 0, beta = 0, gamma = 0, c, s;
        for (int i = 0; i < n; i++) {
          double ap = PLM__AR_R(i, p), aq = PLM__AR_R(i, q);
          alpha += ap * ap;
          beta += aq * aq;
          gamma += ap * aq;
        }
        if (!plm__ar_jacobi_rotation(alpha, beta, gamma, &c, &s)) continue;
        for (int i = 0; i < n; i++) plm__ar_rotate_row(work, stride, n, i, p, q, c, s);
        rotated = 1;
      }
    if (!rotated) break;
  }
  plm__ar_solve_and_forecast(x, length, lags, horizon, out, work, stride);
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernel (kernels/cpu/forecast.c): runs on the calling thread and the CPU pool;
 * returns when done. */
void plm__ar_forecast_cpu(const plm__ar_forecast_args *args);

/* Enqueue the CUDA kernel (kernels/cuda/forecast.cu) on a cudaStream_t; it needs no
 * scratch. */
plm_status plm__ar_forecast_cuda(void *stream, const plm__ar_forecast_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_FORECAST_H */

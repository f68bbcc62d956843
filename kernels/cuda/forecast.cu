/* kernels/cuda/forecast.cu: ar_forecast on the GPU (plm__ar_forecast_one,
 * kernels/common/forecast.h), a series on one thread or on a group of lanes, as the cuda
 * tunable lanes_per_series says (plm__ar_series_lanes fits it to the lags; args.lanes):
 *   - 1, a thread a series (lags 1..8, plm__ar_shared_threads > 0): its working doubles
 *     (R, V, Q^T y, a row, the history: plm__ar_work_doubles(p)) in the block's shared
 *     memory, element i of thread t at work[i * threads + t], so a warp's accesses fall
 *     in consecutive banks. Blocks of plm__ar_shared_threads(p) threads, as many as fit
 *     48 KiB (256 at p = 1, 96 at p = 4, 32 at p = 6..8). The thread rotates each
 *     equation through the n = p + 1 rows of R in turn: a chain of m n dependent
 *     rotations (a square root and two divisions each) for m = T - p equations.
 *   - 8, 16 or 32 (the default 8, raised to hold the rows), a group of lanes a series,
 *     its working doubles contiguous in shared memory (plm__ar_group_work_doubles(p):
 *     the work, then two rings of n + 1 equations that the Jacobi sweeps reuse; 1.5 KiB
 *     at p = 5, 10 KiB at p = 16, 36 KiB at p = 32), lane l owning rows l and l + lanes
 *     of R, Q^T y and V: a systolic Givens QR (at step tau row r rotates equation
 *     tau - r, one barrier of the group's lanes a step, m + p steps) and Jacobi sweeps
 *     whose rotations run on the rows' lanes, lanes 0, 1 and 2 summing each column pair's
 *     products in row order (two barriers a pair); lane 0 then solves and forecasts.
 *     ar_forecast_group has the details. Blocks of plm__ar_group_kernel_threads(p, lanes)
 *     threads (256 at p = 5 in groups of 8: 32 series; 128 at p = 16, 32 at p = 32).
 * Neither needs scratch (lags 9..32 took 18 KiB a series of global scratch before, and
 * were L2-bound: docs/benchmarks.md, "ar_forecast_p16"). Both do the one-thread
 * function's operations on each number in its order: only the address of each number,
 * and which lane does the work, differ. This file is compiled without contracting
 * multiplies and adds into fused multiply-adds (--fmad=false, CMakeLists.txt), as the CPU
 * kernel is (C11, no contraction), so both backends round every operation alike and give
 * the same bits: sqrt and division are correctly rounded on both; only plm__ar_hypot's
 * fallback to hypot, for values outside [2^-450, 2^450] or NaN, may differ in the last
 * bit.
 *
 * Why groups by default (lanes_per_series 8, for every lags): the H200 (bench_ops, commit
 * d834510, a thread a series at p = 5, series of 1000 points) took 2,738 us for one series,
 * 3,101 for 10,000 and 10,233 for 100,000, against floors of 0, 26 and 264 us: 0.46 us a
 * rotation of one thread's chain of 5,970 (995 equations, 6 rows), and nearly the same
 * time for 10,000 series as for one, so the chain, not the work, set the time. In groups
 * of 8 lanes the chain is 1,000 QR steps, each one rotation deep, for 4 series a warp
 * (6 of a group's 8 lanes busy at p = 5), and a block holds 32 series where the thread
 * kernel's held 64 in 44.5 KiB: what it buys, about n times shorter chains, is a
 * prediction until a GPU times it (`plume tune` times the four values per device and
 * size class). A thread a series issues fewer instructions per series (32 series a
 * warp instruction, against 4 in groups of 8), so with enough series to hide its chain
 * it may win: at small lags, many series, on a device where tune says so.
 *
 * Device cost model, per series of T points at lags p (n = p + 1, m = T - p equations):
 *   - global memory: 4 T bytes of series read (the group kernel reads each equation's n
 *     values, mostly from L1/L2: 4.3 MB through the L2 for 64 series of 1000 at p = 16),
 *     4 h bytes of forecasts written.
 *   - shared memory: each equation's Givens rotations read and write R's upper triangle,
 *     the equation's row and Q^T y, about 2 n^2 + 3 n accesses of 8 bytes (65 at p = 4,
 *     2,277 at p = 32); each Jacobi sweep about 10 n per column pair. In the group kernel
 *     the lanes of a step touch rows of R and equations n + 1 doubles apart, a few
 *     wavefronts a request; in the thread kernel one wavefront pair a request.
 *   - arithmetic: about 3 m n (n + 1) + 10 n^3 f64 flops (ops/forecast.c's cost), and a
 *     square root and two divisions per rotation (n per equation), each a sequence of
 *     instructions on the GPU; the group kernel runs the n rotations of a step on n lanes
 *     at once, so its chain of dependent square roots and divisions is m + p long, not
 *     m n as a thread's.
 *   - warp collectives (group kernel): m + p barriers for the QR, 2 per column pair
 *     visited by the Jacobi sweeps.
 *   - launches: 1.
 *   Floor: the larger of 4 T bytes / bandwidth and the arithmetic / f64 throughput:
 *   100,000 series of 1000 points at p = 5 read 400 MB (120 us at 3.35 TB/s) and do
 *   1.3e10 flops (0.38 ms at an H100 SXM's 34 Tflop/s f64 without tensor cores) plus
 *   600 million square roots and 1.2 billion divisions, so arithmetic bounds it. The thread
 *   kernel at p = 5 runs blocks of 64 threads in 44.5 KiB, 5 blocks (10 warps) per SM of
 *   228 KiB; at p = 6..8 one warp per block. The group kernel's count at p = 16 is bound
 *   by its shared-memory wavefronts (docs/benchmarks.md), far above that floor: keeping R
 *   in registers (a lane's row unrolled over its columns) is the next lever.
 *   Registers (ptxas 13.0, unbounded, no spill): the group kernel takes 80 for sm_90 at
 *   32 lanes (as the warp kernel it generalises did; 96 for sm_80) and 72 at 8 and 16
 *   (94 for sm_80), the thread kernel 56 for sm_90 (80 for sm_80). Shared memory bounds
 *   the thread kernel's blocks and the group kernel's at 32 lanes (its budget, 96, keeps
 *   the 20 warps per SM that its 40 KiB blocks of 4 warps allow at p = 16); registers
 *   bound the group kernel's blocks of 256 threads at 8 and 16 lanes (3 an SM, 24 warps,
 *   where shared memory lets in 4 at p = 5; its budget, 80, keeps the 3). Budgets (the
 *   build fails past them, or on any spill): kernels/cuda/register_budgets.txt.
 * tests/test_forecast.c checks the thread kernel's interleaved indexing on the host (each
 * thread writes only its own slots and gets the contiguous layout's bits), the lanes and
 * block sizes for every lags, and every spread of a series over lanes against the CPU
 * kernel's bits under PLUME_BACKEND=cuda (the emulator: its race checks hold a group's
 * lanes to their own rows between the group's barriers). */
#include "kernels/common/forecast.h"
#include "kernels/cuda/launch.h"

/* ---- a group of lanes a series (any lags) --------------------------------------- */

/* A series' group: Lanes lanes of one warp (8, 16 or 32), lane l owning rows l and
 * l + Lanes of R, Q^T y and V (kSlots of them: two only at 32 lanes, for the 33 rows of
 * p = 32; plm__ar_series_lanes gives fewer lanes only where they hold every row). Its
 * barrier is __syncwarp over its own lanes, so the groups of a warp go on apart. */
template <int Lanes>
struct SeriesGroup {
  static constexpr int kSlots = Lanes == 32 ? 2 : 1;
  static_assert(Lanes == 8 || Lanes == 16 || Lanes == 32, "a group is 8, 16 or 32 lanes");
  static_assert(Lanes < 32 || Lanes * kSlots >= PLM_AR_MAX_LAGS + 1,
                "32 lanes own every row of the most lags");
  int lane;      /* in the group */
  unsigned mask; /* the group's lanes in the warp */

  __device__ explicit SeriesGroup(unsigned thread)
      : lane((int)(thread % Lanes)),
        mask(Lanes == 32 ? 0xffffffffu : ((1u << Lanes) - 1u) << (thread % 32 / Lanes * Lanes)) {}
  __device__ void sync() const { __syncwarp(mask); }
};

/* plm__ar_forecast_one on a group of lanes: series x into out, the working doubles in the
 * group's work (stride 1; plm__ar_group_work_doubles: the work, then two rings of equations
 * that the Jacobi sweeps' products reuse). Every lane reads and writes only the rows of R,
 * Q^T y and V it owns, so R needs no barrier; what crosses lanes goes through the rings or
 * the products, ordered by the group's barrier (one a QR step, two a Jacobi pair):
 *   - the QR, systolic: at step tau, the owner of R's row r rotates equation e = tau - r
 *     (if there is one) with that row, exactly as the one-thread loop does at its
 *     rotation j = r. The equation's values (1, x[t-1], .., x[t-p], then x[t]) are in
 *     slot e mod (n + 1) of two rings: row r reads them from ring r mod 2 and writes the
 *     rotated ones to the other, so no lane writes a value that another reads in the
 *     same step (nor one it read itself: the emulator's race check takes that for a
 *     race once other lanes have read the byte before); the lanes also write equation
 *     tau + 1's values into ring 0. Equation e meets rows 0, 1, .., p in order, and row
 *     r meets equations in order, as on the CPU; n + m - 1 steps for m equations.
 *   - the Jacobi sweeps: lane i writes row i's three products for the column pair; after
 *     a barrier lanes 0, 1 and 2 sum them in row order (the CPU's alpha, beta, gamma: n
 *     reads a lane, at once); after a second every lane reads the three sums, computes
 *     the rotation and rotates its rows of R and V (3 lanes read the 3 n products, not
 *     32: the emulator's check of every read made that the tests' main cost).
 *   - then lane 0 solves and forecasts (plm__ar_solve_and_forecast).
 * Each number sees the operations of the one-thread function in its order: the same bits. */
template <int Lanes>
static __device__ void ar_forecast_group(const float *x, int64_t length, int lags, int horizon,
                                         float *out, double *work,
                                         const SeriesGroup<Lanes> &group) {
  const int lane = group.lane;
  const int n = lags + 1;
  const int64_t stride = 1, equations = length - lags;
  double *const ring = work + plm__ar_work_doubles(lags);
#pragma unroll
  for (int u = 0; u < SeriesGroup<Lanes>::kSlots; u++) {
    const int r = lane + Lanes * u;
    if (r >= n) continue;
    PLM__AR_QTY(r) = 0;
    for (int k = 0; k < n; k++) {
      PLM__AR_R(r, k) = 0;
      PLM__AR_V(r, k) = r == k;
    }
  }
  /* Equation e's values into its slot of ring 0: lane k writes value k (k = n: x[t]). */
#define LOAD_EQUATION(e)                                            \
  do {                                                              \
    const int64_t t_ = lags + (e);                                  \
    double *const slot_ = ring + ((e) % (n + 1)) * (n + 1);         \
    for (int k_ = lane; k_ <= n; k_ += Lanes)                       \
      slot_[k_] = k_ == 0 ? 1.0 : (double)x[k_ < n ? t_ - k_ : t_]; \
  } while (0)
  LOAD_EQUATION(0);
  group.sync();
  for (int64_t tau = 0; tau < equations + n - 1; tau++) {
    if (tau + 1 < equations) LOAD_EQUATION(tau + 1);
#pragma unroll
    for (int u = 0; u < SeriesGroup<Lanes>::kSlots; u++) {
      const int r = lane + Lanes * u;
      const int64_t e = tau - r;
      if (r >= n || e < 0 || e >= equations) continue;
      const int64_t slot = (e % (n + 1)) * (n + 1), ring_size = (int64_t)(n + 1) * (n + 1);
      const double *const in = ring + (r & 1) * ring_size + slot;
      double *const next = ring + ((r + 1) & 1) * ring_size + slot;
      const double rj = in[r];
      if (rj == 0) {
        for (int k = r + 1; k <= n; k++) next[k] = in[k];
        continue;
      }
      const double rjj = PLM__AR_R(r, r), h = plm__ar_hypot(rjj, rj), c = rjj / h, s = rj / h;
      PLM__AR_R(r, r) = h;
      for (int k = r + 1; k < n; k++) {
        const double a = PLM__AR_R(r, k), b = in[k];
        PLM__AR_R(r, k) = c * a + s * b;
        next[k] = c * b - s * a;
      }
      const double a = PLM__AR_QTY(r), y = in[n];
      PLM__AR_QTY(r) = c * a + s * y;
      next[n] = c * y - s * a;
    }
    group.sync();
  }
#undef LOAD_EQUATION
  /* The products of rows i of columns p and q, lane i's: alpha's at products[i], beta's at
   * products[n + i], gamma's at products[2 n + i]; then alpha, beta and gamma themselves,
   * summed in row order by lanes 0, 1 and 2, at products[3 n ..], from which every lane
   * computes the same rotation. The pairs alternate between two such buffers, so the two
   * barriers of a pair also order its reads before the writes of the pair after next. */
  double *const products = ring;
  int buffer = 0;
  for (int sweep = 0; sweep < PLM__AR_JACOBI_SWEEPS; sweep++) {
    int rotated = 0;
    for (int p = 0; p < n - 1; p++)
      for (int q = p + 1; q < n; q++) {
        double *const pr = products + buffer * (3 * n + 3);
        buffer ^= 1;
#pragma unroll
        for (int u = 0; u < SeriesGroup<Lanes>::kSlots; u++) {
          const int i = lane + Lanes * u;
          if (i >= n) continue;
          const double ap = PLM__AR_R(i, p), aq = PLM__AR_R(i, q);
          pr[i] = ap * ap;
          pr[n + i] = aq * aq;
          pr[2 * n + i] = ap * aq;
        }
        group.sync();
        if (lane < 3) { /* alpha, beta, gamma */
          const double *const terms = pr + lane * n;
          double sum = 0;
          for (int i = 0; i < n; i++) sum += terms[i];
          pr[3 * n + lane] = sum;
        }
        group.sync();
        double c, s;
        if (!plm__ar_jacobi_rotation(pr[3 * n], pr[3 * n + 1], pr[3 * n + 2], &c, &s)) continue;
#pragma unroll
        for (int u = 0; u < SeriesGroup<Lanes>::kSlots; u++) {
          const int i = lane + Lanes * u;
          if (i < n) plm__ar_rotate_row(work, stride, n, i, p, q, c, s);
        }
        rotated = 1;
      }
    if (!rotated) break;
  }
  group.sync(); /* from rows to lane 0 */
  if (lane == 0) plm__ar_solve_and_forecast(x, length, lags, horizon, out, work, stride);
  group.sync(); /* lane 0 is done before the next series' work reuses the space */
}

/* Blocks of plm__ar_group_kernel_threads(p, Lanes) threads, a series a group of Lanes
 * lanes, each group's working doubles contiguous in the block's shared memory. A group's
 * loop over series is uniform across its lanes, so each reaches every barrier of its
 * group; groups whose series ran out leave while the others of their warp go on. */
template <int Lanes>
__global__ void ar_forecast_group_kernel(plm__ar_forecast_args args) {
  extern __shared__ double group_work[];
  const SeriesGroup<Lanes> group(threadIdx.x);
  const int index = (int)(threadIdx.x / Lanes), groups = (int)(blockDim.x / Lanes);
  double *work = group_work + (int64_t)index * plm__ar_group_work_doubles(args.lags);
  const int64_t step = (int64_t)gridDim.x * groups;
  for (int64_t s = (int64_t)blockIdx.x * groups + index; s < args.count; s += step)
    ar_forecast_group<Lanes>(args.series + s * args.length, args.length, args.lags, args.horizon,
                             args.out + s * args.horizon, work, group);
}

template <int Lanes>
static plm_status launch_group_kernel(cudaStream_t s, const plm__ar_forecast_args *args) {
  const int threads = plm__ar_group_kernel_threads(args->lags, Lanes), groups = threads / Lanes;
  const size_t smem =
      (size_t)groups * (size_t)plm__ar_group_work_doubles(args->lags) * sizeof(double);
  ar_forecast_group_kernel<Lanes>
      <<<plm__cuda_blocks(args->count, (unsigned)groups), threads, smem, s>>>(*args);
  return plm__cuda_check_launch("ar_forecast_group_kernel");
}

/* ---- a thread a series (lags 1..8) ------------------------------------------------ */

/* Every thread uses its own interleaved slots only, so no barrier is needed. */
__global__ void ar_forecast_shared_kernel(plm__ar_forecast_args args) {
  extern __shared__ double work[];
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; s < args.count; s += step)
    plm__ar_forecast_one(args.series + s * args.length, args.length, args.lags, args.horizon,
                         args.out + s * args.horizon, work + threadIdx.x, blockDim.x);
}

extern "C" plm_status plm__ar_forecast_cuda(void *stream, const plm__ar_forecast_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  switch (args->lanes) { /* plm__ar_series_lanes, in the op's pack */
    case 1: {
      const int threads = plm__ar_shared_threads(args->lags);
      const size_t smem =
          (size_t)threads * (size_t)plm__ar_work_doubles(args->lags) * sizeof(double);
      ar_forecast_shared_kernel<<<plm__cuda_blocks(args->count, (unsigned)threads), threads, smem,
                                  s>>>(*args);
      return plm__cuda_check_launch("ar_forecast_shared_kernel");
    }
    case 8: return launch_group_kernel<8>(s, args);
    case 16: return launch_group_kernel<16>(s, args);
    case 32: return launch_group_kernel<32>(s, args);
    default:
      return plm__fail_raw(PLM_ERR_INTERNAL, "ar_forecast: %d lanes a series reached the kernel",
                           args->lanes);
  }
}

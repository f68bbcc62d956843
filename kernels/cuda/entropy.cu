/* kernels/cuda/entropy.cu: local entropy on the GPU.
 *
 * Every histogram has an owner, which takes tasks, segments of a column (frame, x) of
 * segment_rows rows (below), in a grid-stride loop: it fills the window of the
 * segment's first row, then slides down, adding the row segment that enters and taking
 * out the one that leaves (2w count updates per pixel), keeping S = sum c log2 c in
 * 32.32 fixed point as the CPU does (kernels/common/entropy.h), and ends by taking out
 * the last window, so every task leaves its histogram zeroed; the histograms are
 * zeroed once before the launch. Counts are u16: a window holds at most 255 * 255 =
 * 65025 pixels, and a count passes that by at most the w pixels of the row entering
 * before the row leaving is taken out.
 *
 * Two kinds of owner, one kernel template (entropy_kernel<Owner, Hist>):
 *   - a thread, when there are at most kThreadBins bins (u8 by default): u16 counts
 *     interleaved across threads (bin b of thread t at b * owners + t), so that the
 *     histograms of neighbouring threads, on neighbouring columns, share cache lines;
 *     up to kFillThreads threads (64 MiB for 256 bins).
 *   - a warp, with more bins (u16 by default: 65536), where a histogram per thread
 *     would leave the GPU nearly empty under any memory bound. The 32 lanes share one
 *     histogram: they split each step's 2w updates (and the w*w of a fill) among
 *     themselves, change the counts with atomics (u16 counts packed two to a u32 word;
 *     a count never goes below 0 or past 65535, so the halves never carry or borrow),
 *     and add up their changes of S with shuffles. Each lane's change of S is
 *     c' log2 c' - c log2 c for the count c its own atomic saw, so in whatever order
 *     the atomics land the changes of a bin telescope to its new term exactly, and S
 *     is the same integer as the CPU's. Up to min(kFillThreads / 32 warps,
 *     kHistBudget / histogram size) warps: 2048 warps and 256 MiB for 65536 bins.
 * Either way the scratch is at most kHistBudget (256 MiB) of histograms plus 8 bytes
 * per frame, and never more histograms than tasks.
 *
 * Segments are 64 rows (kMaxSegmentRows) where the batch has enough columns to give
 * every histogram the bounds allow a task at that height. With a histogram per thread
 * (at most 256 bins: 131072 histograms, about 4 x 132 SMs x 256 threads), smaller
 * batches get shorter segments, so that there are as many tasks as histograms and the
 * GPU fills up (a 512 x 512 u8 frame: 4096 tasks of 64 rows, but 65536 of 4 rows at
 * w = 16), down to ceil(w / 4) rows: a task's fill and final take-out cost 2 w^2
 * updates against 2 w per row it slides, so shorter segments would spend more than
 * 4 times the sliding on fills. More histograms cost more scratch to zero (32 MiB at
 * 256 bins for 65536 of them). A warp's histogram is large (128 KiB at 65536 bins)
 * and its fills are split 32 ways: warps keep 64-row segments, and their count stays
 * bounded by the tasks of 64 rows. The results do not depend on the segment height
 * (S is exact; tests/test_entropy_cuda_logic.cpp compares heights bit for bit).
 *
 * With auto range, a first kernel (one block per frame) writes each frame's finite
 * min and max to scratch, where the entropy kernel reads them: no host round trip.
 *
 * Not yet run on a GPU (none was available when it was written). The segment logic
 * of both kinds of owner (the functions below marked PLM_HD) runs on the host in
 * tests/test_entropy_cuda_logic.cpp (ctest entropy_cuda_logic), which compiles this
 * file as plain C++ (hence the __CUDACC__ guards around what only nvcc knows) and
 * emulates a warp's lanes with threads. tests/test_entropy.c checks the kernels
 * against the reference under PLUME_BACKEND=cuda (ctest entropy.cuda).
 */
#include "kernels/common/entropy.h"
#include "kernels/cuda/launch.h"

namespace {

constexpr unsigned kThreads = 128; /* a multiple of 32: a warp never straddles owners */
constexpr unsigned kRangeThreads = 256;
constexpr int64_t kMaxSegmentRows = 64;   /* rows an owner slides down at most per task */
constexpr int kThreadBins = 256;          /* more bins: warps own the histograms */
constexpr int64_t kFillThreads = 1 << 17; /* enough threads to fill any GPU */
constexpr size_t kHistBudget = size_t(256) << 20;
constexpr size_t kAlign = 256;

size_t round_up(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

size_t ranges_bytes(const plm__entropy_args *args) {
  return round_up((size_t)args->frames * 2 * sizeof(float));
}

PLM_HD int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

PLM_HD int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/* ---- owners and their histograms ---------------------------------------------------- */

/* A histogram of one thread: u16 counts, bin b at base[b * stride]. */
struct ThreadHist {
  uint16_t *base;
  int64_t stride;
  /* Add delta (+1 or -1) to bin b's count; returns the count before. */
  PLM_HD uint32_t change(int b, int delta) const {
    uint16_t *count = base + (int64_t)b * stride;
    uint32_t old = *count;
    *count = (uint16_t)(old + delta);
    return old;
  }
};

/* A histogram shared by the lanes of a warp: u16 counts packed two to a u32 word (bin
 * b in word b / 2, low half for even b), changed with atomics. */
struct WarpHist {
  uint32_t *words;
  PLM_HD uint32_t change(int b, int delta) const {
    const unsigned shift = (unsigned)(b & 1) * 16;
    uint32_t *word = words + (b >> 1);
#ifdef __CUDA_ARCH__
    uint32_t old = delta > 0 ? atomicAdd(word, 1u << shift) : atomicSub(word, 1u << shift);
#else /* the host check of the segment logic (see the top of the file) */
    uint32_t old = delta > 0 ? __atomic_fetch_add(word, 1u << shift, __ATOMIC_SEQ_CST)
                             : __atomic_fetch_sub(word, 1u << shift, __ATOMIC_SEQ_CST);
#endif
    return (old >> shift) & 0xffffu;
  }
};

/* Histograms' sizes in bytes, and how many there are. */
PLM_HD size_t thread_hist_bytes(int bins) {
  return (size_t)bins * sizeof(uint16_t);
}

PLM_HD size_t warp_hist_bytes(int bins) {
  return (size_t)(bins + 1) / 2 * sizeof(uint32_t);
}

PLM_HD bool warps_own(const plm__entropy_args &args) {
  return args.bins > kThreadBins;
}

/* The most histograms the bounds allow (see the top of the file). */
PLM_HD int64_t most_owners(const plm__entropy_args &args) {
  if (!warps_own(args)) return kFillThreads;
  const int64_t fit = (int64_t)(kHistBudget / warp_hist_bytes(args.bins));
  return min64(kFillThreads / 32, fit);
}

/* The rows of a task's segment: kMaxSegmentRows, or, with a histogram per thread,
 * fewer, down to ceil(w / 4), where that leaves fewer tasks than most_owners (see the
 * top of the file). */
PLM_HD int64_t segment_rows(const plm__entropy_args &args) {
  if (warps_own(args)) return kMaxSegmentRows;
  const int64_t columns = args.frames * args.width;
  const int64_t wanted = (most_owners(args) + columns - 1) / columns; /* segments per column */
  const int64_t rows = wanted > 1 ? args.height / wanted : kMaxSegmentRows;
  return min64(max64(rows, max64((args.window + 3) / 4, 1)), kMaxSegmentRows);
}

PLM_HD int64_t segment_count(const plm__entropy_args &args, int64_t rows) {
  return (args.height + rows - 1) / rows;
}

int64_t task_count(const plm__entropy_args &args) {
  return args.frames * segment_count(args, segment_rows(args)) * args.width;
}

int64_t owner_count(const plm__entropy_args &args) {
  return min64(task_count(args), most_owners(args));
}

size_t hists_bytes(const plm__entropy_args &args) {
  const size_t each = warps_own(args) ? warp_hist_bytes(args.bins) : thread_hist_bytes(args.bins);
  return (size_t)owner_count(args) * each;
}

/* The owner is one thread: its lane is 0 and its sums are its own. */
struct ThreadOwner {
  static constexpr int kLanes = 1;
  PLM_HD int lane() const { return 0; }
  PLM_HD int64_t sum(int64_t v) const { return v; }
  PLM_HD void sync() const {}
};

#ifdef __CUDACC__

/* The owner is a warp: every lane gets the sum over the warp. */
struct WarpOwner {
  static constexpr int kLanes = 32;
  __device__ int lane() const { return (int)(threadIdx.x & 31); }
  __device__ int64_t sum(int64_t v) const {
    __syncwarp(); /* the lanes' count updates are ordered before what follows */
    for (int offset = 16; offset > 0; offset /= 2)
      v += __shfl_xor_sync(0xffffffffu, (long long)v, offset);
    return v;
  }
  __device__ void sync() const { __syncwarp(); }
};
#endif

/* ---- the segment logic (both owners; __host__ __device__ for the host check) -------- */

/* Add (sign > 0) or take out this lane's share (every kLanes-th pixel) of rows
 * [r0, r1] x columns [c0, c1] of the frame starting at element `base`; returns this
 * lane's change of S. Nothing when r1 < r0. */
template <int kLanes, class Hist>
PLM_HD int64_t update_rect(const plm__entropy_args &args, const Hist &hist, int lane, int64_t base,
                           int64_t r0, int64_t r1, int64_t c0, int64_t c1, int sign, double lo,
                           double hi) {
  if (r1 < r0) return 0;
  const int cols = (int)(c1 - c0 + 1), count = (int)(r1 - r0 + 1) * cols; /* <= 255 * 255 */
  int64_t ds = 0;
  for (int k = lane; k < count; k += kLanes) {
    const int dr = k / cols, dc = k - dr * cols;
    const int64_t at = base + (r0 + dr) * args.width + c0 + dc;
    const int b = plm__entropy_bin(args.in, at, args.dtype, args.bins, lo, hi);
    const int64_t old = hist.change(b, sign);
    ds += plm__entropy_clogc(old + sign) - plm__entropy_clogc(old);
  }
  return ds;
}

/* One step down: add row `in_row` and take out row `out_row` (either may be -1 for
 * none) of columns [c0, c1], this lane's share of the 2 (c1 - c0 + 1) updates;
 * returns this lane's change of S. */
template <int kLanes, class Hist>
PLM_HD int64_t update_step(const plm__entropy_args &args, const Hist &hist, int lane, int64_t base,
                           int64_t in_row, int64_t out_row, int64_t c0, int64_t c1, double lo,
                           double hi) {
  const int cols = (int)(c1 - c0 + 1);
  int64_t ds = 0;
  for (int k = lane; k < 2 * cols; k += kLanes) {
    const int64_t row = k < cols ? in_row : out_row;
    if (row < 0) continue;
    const int sign = k < cols ? 1 : -1;
    const int64_t at = base + row * args.width + c0 + (k < cols ? k : k - cols);
    const int b = plm__entropy_bin(args.in, at, args.dtype, args.bins, lo, hi);
    const int64_t old = hist.change(b, sign);
    ds += plm__entropy_clogc(old + sign) - plm__entropy_clogc(old);
  }
  return ds;
}

/* Rows [y0, y1) of column x of frame f: fill the window of row y0, slide down, then
 * take out the window of row y1 - 1, which leaves the histogram zeroed. Every lane of
 * the owner calls it with the same task; lane 0 writes the outputs. */
template <class Owner, class Hist>
PLM_HD void entropy_segment(const Owner &owner, const plm__entropy_args &args, const float *ranges,
                            const Hist &hist, int64_t f, int64_t y0, int64_t y1, int64_t x) {
  constexpr int kLanes = Owner::kLanes;
  const int lane = owner.lane();
  const int64_t height = args.height, width = args.width;
  const int64_t left = args.window / 2, right = args.window - 1 - left;
  const double lo = args.range_auto ? (double)ranges[2 * f] : args.lo;
  const double hi = args.range_auto ? (double)ranges[2 * f + 1] : args.hi;
  const int64_t c0 = max64(x - left, 0), c1 = min64(x + right, width - 1);
  const int64_t base = f * height * width;
  int64_t s = owner.sum(update_rect<kLanes>(args, hist, lane, base, max64(y0 - left, 0),
                                            min64(y0 + right, height - 1), c0, c1, 1, lo, hi));
  for (int64_t y = y0; y < y1; y++) {
    if (y > y0) {
      const int64_t in_row = y + right < height ? y + right : -1;
      const int64_t out_row = y - left - 1 >= 0 ? y - left - 1 : -1;
      s += owner.sum(update_step<kLanes>(args, hist, lane, base, in_row, out_row, c0, c1, lo, hi));
    }
    if (lane == 0) {
      const int64_t rows = min64(y + right, height - 1) - max64(y - left, 0) + 1;
      const int64_t n = (c1 - c0 + 1) * rows;
      args.out[base + y * width + x] = plm__entropy_from_sum(plm__entropy_norm_of(n), s);
    }
  }
  update_rect<kLanes>(args, hist, lane, base, max64(y1 - 1 - left, 0),
                      min64(y1 - 1 + right, height - 1), c0, c1, -1, lo, hi);
  owner.sync(); /* the next task starts from a histogram the whole owner has zeroed */
}

/* ---- kernels ------------------------------------------------------------------------ */

#ifdef __CUDACC__
__global__ void range_kernel(const float *__restrict__ in, int64_t frames, int64_t size,
                             float *__restrict__ ranges) {
  __shared__ float lo_s[kRangeThreads], hi_s[kRangeThreads];
  __shared__ int seen_s[kRangeThreads];
  for (int64_t f = blockIdx.x; f < frames; f += gridDim.x) { /* uniform across the block */
    const float *frame = in + f * size;
    float lo = 0.0f, hi = 0.0f;
    int seen = 0;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      float v = frame[i];
      if (!plm__entropy_in_auto_range(v)) continue;
      if (!seen || v < lo) lo = v;
      if (!seen || v > hi) hi = v;
      seen = 1;
    }
    lo_s[threadIdx.x] = lo;
    hi_s[threadIdx.x] = hi;
    seen_s[threadIdx.x] = seen;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        unsigned other = threadIdx.x + half;
        if (seen_s[other]) {
          if (!seen_s[threadIdx.x] || lo_s[other] < lo_s[threadIdx.x])
            lo_s[threadIdx.x] = lo_s[other];
          if (!seen_s[threadIdx.x] || hi_s[other] > hi_s[threadIdx.x])
            hi_s[threadIdx.x] = hi_s[other];
          seen_s[threadIdx.x] = 1;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      ranges[2 * f] = lo_s[0]; /* 0, 0 when the frame has no finite value */
      ranges[2 * f + 1] = hi_s[0];
    }
    __syncthreads(); /* before the next frame overwrites the shared arrays */
  }
}

/* Task (f, segment, x), x fastest, so that neighbouring owners read neighbouring
 * pixels. Owner o is thread o (ThreadOwner) or warp o (WarpOwner) of the grid; all the
 * lanes of an owner take the same tasks. */
template <class Owner>
__global__ void entropy_kernel(plm__entropy_args args, const float *__restrict__ ranges,
                               void *hists, int64_t owners) {
  const Owner owner;
  const int64_t o = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / Owner::kLanes;
  if (o >= owners) return; /* whole owners: kThreads is a multiple of 32 */
  const int64_t rows = segment_rows(args), segments = segment_count(args, rows);
  const int64_t tasks = args.frames * segments * args.width;
  for (int64_t task = o; task < tasks; task += owners) {
    const int64_t x = task % args.width, rest = task / args.width;
    const int64_t y0 = rest % segments * rows, f = rest / segments;
    const int64_t y1 = min64(y0 + rows, args.height);
    if constexpr (Owner::kLanes == 1) {
      ThreadHist hist = {(uint16_t *)hists + o, owners};
      entropy_segment(owner, args, ranges, hist, f, y0, y1, x);
    } else {
      WarpHist hist = {(uint32_t *)hists + o * (int64_t)((args.bins + 1) / 2)};
      entropy_segment(owner, args, ranges, hist, f, y0, y1, x);
    }
  }
}
#endif

}  // namespace

extern "C" size_t plm__entropy_cuda_scratch_bytes(const plm__entropy_args *args) {
  return ranges_bytes(args) + hists_bytes(*args);
}

#ifdef __CUDACC__
extern "C" plm_status plm__entropy_cuda(void *stream, const plm__entropy_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  float *ranges = (float *)args->scratch;
  void *hists = (char *)args->scratch + ranges_bytes(args);
  cudaError_t err = cudaMemsetAsync(hists, 0, hists_bytes(*args), s);
  if (err != cudaSuccess) return plm__cuda_call_failed(err, "entropy: clearing the histograms");
  if (args->range_auto) {
    int64_t frames = args->frames < 65535 ? args->frames : 65535;
    range_kernel<<<(unsigned)frames, kRangeThreads, 0, s>>>((const float *)args->in, args->frames,
                                                            args->height * args->width, ranges);
    plm_status status = plm__cuda_check_launch("entropy range_kernel");
    if (status != PLM_OK) return status;
  }
  /* Few enough owners (at most kFillThreads threads) that one thread each is a grid. */
  const int64_t owners = owner_count(*args);
  if (warps_own(*args)) {
    const unsigned blocks = (unsigned)((owners * 32 + kThreads - 1) / kThreads);
    entropy_kernel<WarpOwner><<<blocks, kThreads, 0, s>>>(*args, ranges, hists, owners);
    return plm__cuda_check_launch("entropy_kernel (a histogram per warp)");
  }
  const unsigned blocks = (unsigned)((owners + kThreads - 1) / kThreads);
  entropy_kernel<ThreadOwner><<<blocks, kThreads, 0, s>>>(*args, ranges, hists, owners);
  return plm__cuda_check_launch("entropy_kernel (a histogram per thread)");
}
#endif

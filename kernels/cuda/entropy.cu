/* kernels/cuda/entropy.cu: local entropy on the GPU.
 *
 * Simple and correct first. Each thread owns a histogram in global scratch (one u32
 * count per bin, interleaved across threads so that bin b of thread t is at
 * b * threads + t) and takes tasks, 64-row segments of a column (frame, x), in a
 * grid-stride loop: it fills the window of the segment's first row, then slides
 * down, adding the row segment that enters and taking out the one that leaves (2w
 * count updates per pixel), keeping
 * S = sum c log2 c in fixed point as the CPU does (kernels/common/entropy.h).
 * Neighbouring threads own neighbouring columns, so their reads of the image are
 * coalesced. The thread count is capped so the histograms take at most 64 MiB:
 * 65536 bins run on 256 threads, slowly but correctly. Every task leaves its
 * thread's histogram zeroed, and the scratch is zeroed before the launch.
 *
 * With auto range, a first kernel (one block per frame) writes each frame's finite
 * min and max to scratch, where the entropy kernel reads them: no host round trip.
 *
 * Not yet run on a GPU (none was available when it was written): it compiles, and its
 * per-thread logic (segments, sliding, binning, the zeroed-histogram invariant) was
 * checked on the host by running the device functions serially against the CPU
 * kernel. tests/test_entropy.c checks it against the reference under
 * PLUME_BACKEND=cuda (ctest entropy.cuda).
 */
#include "kernels/common/entropy.h"
#include "kernels/cuda/launch.h"

namespace {

constexpr unsigned kThreads = 128;
constexpr unsigned kRangeThreads = 256;
constexpr int64_t kSegmentRows = 64; /* rows a thread slides down before the next task */
constexpr size_t kHistBudget = size_t(64) << 20;
constexpr size_t kAlign = 256;

size_t round_up(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

size_t ranges_bytes(const plm__entropy_args *args) {
  return round_up((size_t)args->frames * 2 * sizeof(float));
}

__host__ __device__ int64_t segment_count(const plm__entropy_args *args) {
  return (args->height + kSegmentRows - 1) / kSegmentRows;
}

/* Threads of the entropy kernel: one per task (a column segment), at most
 * kHistBudget of histograms. */
int64_t hist_threads(const plm__entropy_args *args) {
  int64_t tasks = args->frames * segment_count(args) * args->width;
  int64_t most = (int64_t)(kHistBudget / ((size_t)args->bins * sizeof(uint32_t)));
  if (most < 1) most = 1;
  return tasks < most ? tasks : most;
}

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

/* Add (sign > 0) or take out the pixels of one row's columns [c0, c1] (elements
 * row_start + c of in); returns the new S. */
__device__ int64_t update_row(const plm__entropy_args &args, int64_t row_start, int64_t c0,
                              int64_t c1, uint32_t *hist, int64_t stride, int sign, int64_t s,
                              double lo, double hi) {
  for (int64_t c = c0; c <= c1; c++) {
    int b = plm__entropy_bin(args.in, row_start + c, args.dtype, args.bins, lo, hi);
    uint32_t *count = hist + (int64_t)b * stride;
    int64_t old = *count, now = sign > 0 ? old + 1 : old - 1;
    s += plm__entropy_clogc(now) - plm__entropy_clogc(old);
    *count = (uint32_t)now;
  }
  return s;
}

/* Rows [y0, y1) of column x of frame f: fill the window of row y0, slide down, then
 * take out the window of row y1 - 1, which leaves the histogram zeroed. */
__device__ void entropy_segment(const plm__entropy_args &args, const float *ranges, uint32_t *hist,
                                int64_t stride, int64_t f, int64_t y0, int64_t y1, int64_t x) {
  const int64_t height = args.height, width = args.width;
  const int64_t left = args.window / 2, right = args.window - 1 - left;
  double lo = args.range_auto ? (double)ranges[2 * f] : args.lo;
  double hi = args.range_auto ? (double)ranges[2 * f + 1] : args.hi;
  int64_t c0 = max(x - left, (int64_t)0), c1 = min(x + right, width - 1);
  int64_t base = f * height * width;
  int64_t s = 0;
  for (int64_t r = max(y0 - left, (int64_t)0); r <= min(y0 + right, height - 1); r++)
    s = update_row(args, base + r * width, c0, c1, hist, stride, 1, s, lo, hi);
  for (int64_t y = y0; y < y1; y++) {
    if (y > y0 && y + right < height)
      s = update_row(args, base + (y + right) * width, c0, c1, hist, stride, 1, s, lo, hi);
    if (y > y0 && y - left - 1 >= 0)
      s = update_row(args, base + (y - left - 1) * width, c0, c1, hist, stride, -1, s, lo, hi);
    int64_t rows = min(y + right, height - 1) - max(y - left, (int64_t)0) + 1;
    int64_t n = (c1 - c0 + 1) * rows;
    args.out[base + y * width + x] = plm__entropy_from_sum(plm__entropy_norm_of(n), s);
  }
  for (int64_t r = max(y1 - 1 - left, (int64_t)0); r <= min(y1 - 1 + right, height - 1); r++)
    s = update_row(args, base + r * width, c0, c1, hist, stride, -1, s, lo, hi);
}

/* Task (f, segment, x), x fastest, so that neighbouring threads read neighbouring
 * pixels. */
__global__ void entropy_kernel(plm__entropy_args args, const float *__restrict__ ranges,
                               uint32_t *__restrict__ hists, int64_t threads) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= threads) return;
  int64_t segments = segment_count(&args), tasks = args.frames * segments * args.width;
  for (int64_t task = t; task < tasks; task += threads) {
    int64_t x = task % args.width, rest = task / args.width;
    int64_t y0 = rest % segments * kSegmentRows, f = rest / segments;
    int64_t y1 = min(y0 + (int64_t)kSegmentRows, args.height);
    entropy_segment(args, ranges, hists + t, threads, f, y0, y1, x);
  }
}

}  // namespace

extern "C" size_t plm__entropy_cuda_scratch_bytes(const plm__entropy_args *args) {
  return ranges_bytes(args) + (size_t)hist_threads(args) * (size_t)args->bins * sizeof(uint32_t);
}

extern "C" plm_status plm__entropy_cuda(void *stream, const plm__entropy_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  float *ranges = (float *)args->scratch;
  uint32_t *hists = (uint32_t *)((char *)args->scratch + ranges_bytes(args));
  int64_t threads = hist_threads(args);
  size_t hist_bytes = (size_t)threads * (size_t)args->bins * sizeof(uint32_t);
  cudaError_t err = cudaMemsetAsync(hists, 0, hist_bytes, s);
  if (err != cudaSuccess)
    return plm__fail_raw(PLM_ERR_BACKEND, "entropy: clearing the histograms failed: %s (%s)",
                         cudaGetErrorName(err), cudaGetErrorString(err));
  if (args->range_auto) {
    int64_t frames = args->frames < 65535 ? args->frames : 65535;
    range_kernel<<<(unsigned)frames, kRangeThreads, 0, s>>>((const float *)args->in, args->frames,
                                                            args->height * args->width, ranges);
    plm_status status = plm__cuda_check_launch("entropy range_kernel");
    if (status != PLM_OK) return status;
  }
  unsigned blocks = (unsigned)((threads + kThreads - 1) / kThreads);
  entropy_kernel<<<blocks, kThreads, 0, s>>>(*args, ranges, hists, threads);
  return plm__cuda_check_launch("entropy_kernel");
}

/* kernels/cuda/fused.cu: sobel -> entropy -> threshold on the GPU, in one kernel.
 *
 * A block of T threads owns a strip of T columns of one frame, one column per thread,
 * and takes tasks (frame, strip, segment of rows) in a grid-stride loop. For a task
 * each thread slides its window's histogram down its column, as the entropy op's
 * kernel does: it fills the window of the segment's first row, then per row adds the
 * row that enters and takes out the row that leaves (2w count updates), keeping
 * S = sum c log2 c in 32.32 fixed point (kernels/common/entropy.h), and writes one
 * mask byte per row. The bins those updates need are made on chip: before each step
 * the block computes, into shared memory, the bins of the entering and the leaving
 * row over the strip's columns plus the window's halo (T + w - 1 bins each), every
 * bin being the Sobel magnitude of its pixel (nine input pixels read through the
 * border rule, cached by L1) binned with the fixed range (plm__sobel_entropy_bin_at,
 * the sobel and entropy ops' own per-element math). A row's bins are computed twice,
 * entering and leaving, instead of keeping w + 1 rows in shared memory: that fits any
 * window up to 255 in a few KiB, and costs (2T + 2w) / T bin computations per pixel
 * against the 2w count updates, each of which evaluates two c log2 c. Neither the
 * magnitude nor the entropy ever reaches global memory.
 *
 * Histograms: one per thread, u16 counts (at most 255 * 255 + 255), bin b of thread t
 * at b * stride + t. With bins <= 512 they live in shared memory (T = 128, 64 or 32
 * threads so that they take at most 32 KiB); beyond, in global scratch, with the
 * grid capped so that they take at most 64 MiB (65536 bins: 4 blocks of 128 threads,
 * slow but correct). Each task leaves its histograms zeroed again (the last window's
 * rows are taken out), so they are cleared once per launch, not per task.
 *
 * Segments are max(32, 2w) rows, halved down to 16 while there are fewer than 64Ki
 * column segments in all, so that small frames still spread over the GPU; filling and
 * emptying a window costs 2w^2 updates per segment.
 *
 * Not yet run on a GPU (none was available when it was written). The block's logic
 * (run_block, written against a Block that gives the thread's index and a barrier)
 * runs on the host in tests/test_fused_cuda_logic.cpp (ctest fused_cuda_logic), which
 * compiles this file as plain C++ (hence the __CUDACC__ guards around what only nvcc
 * knows), emulates a block's threads with threads meeting at a barrier, and compares
 * the masks with the sobel, entropy and threshold ops run on the host, bit for bit.
 * tests/test_fused.c checks the kernel itself against those ops under
 * PLUME_BACKEND=cuda (ctest fused.cuda).
 */
#include "kernels/common/fused.h"
#include "kernels/cuda/launch.h"

namespace {

typedef plm__sobel_entropy_threshold_args fused_args;

constexpr int kMaxThreads = 128;
constexpr int kMinThreads = 32;
constexpr size_t kSharedHistBudget = 32 * 1024;
constexpr size_t kGlobalHistBudget = size_t(64) << 20;
constexpr int64_t kMinSegmentRows = 16;
constexpr int64_t kTargetColumnSegments = 65536;
constexpr int64_t kMaxBlocks = 65535LL * 32;
constexpr size_t kAlign = 16;

struct plan {
  int threads;          /* per block, the columns of a strip */
  int span;             /* staged bins per row: threads + window - 1 */
  int shared_hist;      /* histograms in shared memory, else in scratch */
  int64_t segment_rows; /* output rows per task */
  int64_t strips, segments, tasks;
  unsigned blocks;
  size_t rows_bytes; /* the two staged rows, at the start of shared memory */
  size_t smem;       /* dynamic shared memory in all */
  size_t scratch;    /* global histograms, bytes */
};

plan make_plan(const fused_args *a) {
  plan p = {};
  const int64_t n = a->sobel.n, h = a->sobel.h, w = a->sobel.w;
  const size_t bins = (size_t)a->bins;
  p.threads = kMaxThreads;
  for (int t = kMaxThreads; t >= kMinThreads; t /= 2)
    if ((size_t)t * bins * sizeof(uint16_t) <= kSharedHistBudget) {
      p.threads = t;
      p.shared_hist = 1;
      break;
    }
  p.span = p.threads + a->window - 1;
  p.strips = (w + p.threads - 1) / p.threads;
  int64_t rows = 2 * (int64_t)a->window > 32 ? 2 * (int64_t)a->window : 32;
  while (rows > kMinSegmentRows &&
         n * p.strips * p.threads * ((h + rows - 1) / rows) < kTargetColumnSegments)
    rows /= 2;
  p.segment_rows = rows < kMinSegmentRows ? kMinSegmentRows : rows;
  p.segments = (h + p.segment_rows - 1) / p.segment_rows;
  p.tasks = n * p.strips * p.segments;
  int64_t blocks = p.tasks < kMaxBlocks ? p.tasks : kMaxBlocks;
  if (!p.shared_hist) {
    int64_t most = (int64_t)(kGlobalHistBudget / ((size_t)p.threads * bins * sizeof(uint16_t)));
    if (most < 1) most = 1;
    if (blocks > most) blocks = most;
  }
  p.blocks = (unsigned)blocks;
  p.rows_bytes = (2 * (size_t)p.span * sizeof(uint16_t) + kAlign - 1) / kAlign * kAlign;
  p.smem = p.rows_bytes + (p.shared_hist ? (size_t)p.threads * bins * sizeof(uint16_t) : 0);
  p.scratch = p.shared_hist ? 0 : (size_t)p.blocks * (size_t)p.threads * bins * sizeof(uint16_t);
  return p;
}

/* ---- the block's logic (__host__ __device__ for the host check) ----------------------- */

/* The bins of row r of frame f over columns x0 - left .. x0 - left + span - 1 (those
 * inside the frame) into dst; every thread of the block takes part. */
template <class Block>
PLM_HD void stage_bins(const Block &block, const fused_args &a, int64_t f, int64_t r, int64_t x0,
                       int left, int span, uint16_t *dst) {
  for (int k = block.thread(); k < span; k += block.threads()) {
    int64_t c = x0 - left + k;
    if (c >= 0 && c < a.sobel.w) dst[k] = (uint16_t)plm__sobel_entropy_bin_at(&a, f, r, c);
  }
}

/* Add (sign 1) or take out (sign -1) the bins row[k0..k1] to a histogram; returns
 * the new S. */
PLM_HD int64_t update(const uint16_t *row, int k0, int k1, uint16_t *hist, int64_t stride, int sign,
                      int64_t s) {
  for (int k = k0; k <= k1; k++) {
    uint16_t *count = hist + (int64_t)row[k] * stride;
    int64_t old = *count, now = old + sign;
    s += plm__entropy_clogc(now) - plm__entropy_clogc(old);
    *count = (uint16_t)now;
  }
  return s;
}

/* One block's work: its tasks, in a grid-stride loop. smem is the block's dynamic
 * shared memory (p.smem bytes), global_hists the scratch (p.scratch bytes, zeroed). */
template <class Block>
PLM_HD void run_block(const Block &block, const fused_args &a, const plan &p, unsigned char *smem,
                      uint16_t *global_hists) {
  const int t = block.thread();
  uint16_t *entering = (uint16_t *)smem, *leaving = entering + p.span;
  uint16_t *hist;
  int64_t stride;
  if (p.shared_hist) {
    hist = (uint16_t *)(smem + p.rows_bytes) + t;
    stride = block.threads();
    for (int b = 0; b < a.bins; b++) hist[(int64_t)b * stride] = 0;
  } else {
    hist = global_hists + block.index() * block.threads() + t;
    stride = block.count() * block.threads();
  }
  const int64_t h = a.sobel.h, w = a.sobel.w;
  const int left = a.window / 2, right = a.window - 1 - left;
  /* Every loop below that synchronises runs the same trips in every thread: its
   * bounds depend on the task only. */
  for (int64_t task = block.index(); task < p.tasks; task += block.count()) {
    int64_t strip = task % p.strips, rest = task / p.strips;
    int64_t f = rest / p.segments, y0 = rest % p.segments * p.segment_rows;
    int64_t y1 = y0 + p.segment_rows < h ? y0 + p.segment_rows : h;
    int64_t x0 = strip * block.threads(), x = x0 + t;
    bool active = x < w;
    int64_t col_first = 0, cols = 0;
    if (active) plm__entropy_span(x, w, a.window, &col_first, &cols);
    int k0 = (int)(col_first - x0 + left), k1 = k0 + (int)cols - 1; /* in the staged rows */
    int64_t s = 0, row_first, rows;

    plm__entropy_span(y0, h, a.window, &row_first, &rows);
    for (int64_t r = row_first; r < row_first + rows; r++) {
      block.sync(); /* the last readers of `entering` are done */
      stage_bins(block, a, f, r, x0, left, p.span, entering);
      block.sync();
      if (active) s = update(entering, k0, k1, hist, stride, 1, s);
    }
    for (int64_t y = y0; y < y1; y++) {
      if (y > y0) {
        int64_t enters = y + right, leaves = y - left - 1;
        block.sync();
        if (enters < h) stage_bins(block, a, f, enters, x0, left, p.span, entering);
        if (leaves >= 0) stage_bins(block, a, f, leaves, x0, left, p.span, leaving);
        block.sync();
        if (active && enters < h) s = update(entering, k0, k1, hist, stride, 1, s);
        if (active && leaves >= 0) s = update(leaving, k0, k1, hist, stride, -1, s);
      }
      if (active) {
        plm__entropy_span(y, h, a.window, &row_first, &rows);
        plm__entropy_norm norm = plm__entropy_norm_of(rows * cols);
        a.mask[(f * h + y) * w + x] = plm__sobel_entropy_threshold_mask(&a, norm, s);
      }
    }
    /* Take the last window out again, which leaves the histogram zeroed. */
    plm__entropy_span(y1 - 1, h, a.window, &row_first, &rows);
    for (int64_t r = row_first; r < row_first + rows; r++) {
      block.sync();
      stage_bins(block, a, f, r, x0, left, p.span, leaving);
      block.sync();
      if (active) s = update(leaving, k0, k1, hist, stride, -1, s);
    }
  }
}

#ifdef __CUDACC__

/* The block as the GPU runs it. */
struct DeviceBlock {
  __device__ int thread() const { return (int)threadIdx.x; }
  __device__ int threads() const { return (int)blockDim.x; }
  __device__ int64_t index() const { return blockIdx.x; }
  __device__ int64_t count() const { return gridDim.x; }
  __device__ void sync() const { __syncthreads(); }
};

__global__ void fused_kernel(fused_args a, plan p, uint16_t *__restrict__ global_hists) {
  extern __shared__ __align__(16) unsigned char smem[];
  run_block(DeviceBlock{}, a, p, smem, global_hists);
}
#endif

}  // namespace

#ifdef __CUDACC__
extern "C" size_t plm__sobel_entropy_threshold_cuda_scratch_bytes(const fused_args *args) {
  return make_plan(args).scratch;
}

extern "C" plm_status plm__sobel_entropy_threshold_cuda(void *stream, const fused_args *args) {
  plan p = make_plan(args);
  cudaStream_t s = (cudaStream_t)stream;
  if (p.scratch > 0) {
    cudaError_t err = cudaMemsetAsync(args->scratch, 0, p.scratch, s);
    if (err != cudaSuccess)
      return plm__cuda_call_failed(err, "sobel_entropy_threshold: clearing the histograms");
  }
  fused_kernel<<<p.blocks, (unsigned)p.threads, p.smem, s>>>(*args, p, (uint16_t *)args->scratch);
  return plm__cuda_check_launch("sobel_entropy_threshold fused_kernel");
}
#endif

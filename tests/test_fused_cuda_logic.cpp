/* tests/test_fused_cuda_logic.cpp: the fused sobel -> entropy -> threshold CUDA
 * kernel's block logic, run on the host, so that a machine without a GPU checks it
 * too.
 *
 * kernels/cuda/fused.cu is compiled here as plain C++ (its device-only parts are
 * under __CUDACC__): run_block runs with the launch plan the launcher would make
 * (make_plan), each of the block's threads emulated by a thread, meeting the others
 * at a barrier where the GPU's threads call __syncthreads, and the blocks of the grid
 * one after another, with the shared memory scribbled over between them. The masks
 * must equal, bit for bit, those of plm_sobel, plm_entropy and plm_threshold run one
 * after another on a host context (the same per-element math on the host), for
 * histograms in shared memory (128, 64 and 32 threads) and in global scratch, and
 * the global histograms must be zeroed again at the end. Exit status 0 is success.
 */
#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cuda/fused.cu"
#include "plume/plume.h"

namespace {

/* A block's threads, emulated: each is a thread; sync() is the block's barrier. */
struct EmulatedBlock {
  pthread_barrier_t *barrier;
  int my_thread, thread_count;
  int64_t my_block, block_count;
  int thread() const { return my_thread; }
  int threads() const { return thread_count; }
  int64_t index() const { return my_block; }
  int64_t count() const { return block_count; }
  void sync() const { pthread_barrier_wait(barrier); }
};

struct Lane {
  const fused_args *args;
  const plan *p;
  unsigned char *smem;
  uint16_t *hists;
  pthread_barrier_t *barrier;
  int thread;
};

/* One thread of every block of the grid, the blocks one after another. */
void *lane_main(void *arg) {
  const Lane *l = static_cast<const Lane *>(arg);
  for (int64_t b = 0; b < (int64_t)l->p->blocks; b++) {
    EmulatedBlock block = {l->barrier, l->thread, l->p->threads, b, (int64_t)l->p->blocks};
    block.sync(); /* the previous block is done with the shared memory */
    if (l->thread == 0) std::memset(l->smem, 0xa5, l->p->smem); /* no block inherits it */
    block.sync();
    run_block(block, *l->args, *l->p, l->smem, l->hists);
  }
  return nullptr;
}

/* The kernel's mask for args (args->mask filled); false when the global histograms
 * are not zeroed at the end. */
bool run_kernel(const fused_args &args, const plan &p) {
  std::vector<unsigned char> smem(p.smem + 1);
  std::vector<uint16_t> hists(p.scratch / sizeof(uint16_t) + 1, 0);
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, nullptr, (unsigned)p.threads);
  std::vector<Lane> lanes((size_t)p.threads);
  std::vector<pthread_t> threads((size_t)p.threads);
  for (int t = 0; t < p.threads; t++) {
    lanes[(size_t)t] = Lane{&args, &p, smem.data(), hists.data(), &barrier, t};
    if (pthread_create(&threads[(size_t)t], nullptr, lane_main, &lanes[(size_t)t]) != 0)
      std::abort();
  }
  for (pthread_t &thread : threads) pthread_join(thread, nullptr);
  pthread_barrier_destroy(&barrier);
  return std::all_of(hists.begin(), hists.end(), [](uint16_t c) { return c == 0; });
}

struct Case {
  plm_dtype dtype;
  int64_t frames, height, width;
  int window, bins;
};

uint64_t rng = 0x2545f4914f6cdd1dull;

uint64_t next_random() {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

#define CHECK(call)                                                                \
  do {                                                                             \
    plm_status check_status_ = (call);                                             \
    if (check_status_ != PLM_OK) {                                                 \
      std::fprintf(stderr, "%s -> %s: %s\n", #call, plm_status_str(check_status_), \
                   plm_last_error());                                              \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

/* Run one case (every comparison in turn); returns the number of differing bytes, or
 * -1 when a histogram was left dirty. */
int64_t run_case(plm_stream *stream, plm_pool *pool, const Case &c, int index) {
  const int64_t dims[3] = {c.frames, c.height, c.width}, count = c.frames * c.height * c.width;
  plm_tensor in, magnitude, entropy, chain_mask;
  CHECK(plm_tensor_alloc(pool, stream, c.dtype, 3, dims, &in));
  CHECK(plm_tensor_alloc(pool, stream, PLM_DTYPE_F32, 3, dims, &magnitude));
  CHECK(plm_tensor_alloc(pool, stream, PLM_DTYPE_F32, 3, dims, &entropy));
  CHECK(plm_tensor_alloc(pool, stream, PLM_DTYPE_U8, 3, dims, &chain_mask));
  CHECK(plm_stream_synchronize(stream)); /* host memory: written directly below */
  for (int64_t i = 0; i < count; i++) {
    uint64_t r = next_random();
    if (c.dtype == PLM_DTYPE_U8) ((uint8_t *)in.data)[i] = (uint8_t)(r % 6 * 40);
    if (c.dtype == PLM_DTYPE_U16) ((uint16_t *)in.data)[i] = (uint16_t)r;
    if (c.dtype == PLM_DTYPE_F32)
      ((float *)in.data)[i] = r % 101 == 0 ? NAN : (float)(r % 1000) / 250.0f;
  }
  plm_sobel_entropy_threshold_params params = {};
  params.sobel.border = (plm_border)(index % 3);
  params.entropy.window = c.window;
  params.entropy.bins = c.bins;
  params.entropy.range_lo = c.dtype == PLM_DTYPE_U16 ? 20000.0 : 0.5;
  params.entropy.range_hi = c.dtype == PLM_DTYPE_U16  ? 150000.0
                            : c.dtype == PLM_DTYPE_U8 ? 600.0
                                                      : 9.0;
  CHECK(plm_sobel(stream, &in, &params.sobel, nullptr, nullptr, &magnitude));
  CHECK(plm_entropy(stream, &magnitude, &params.entropy, &entropy));
  CHECK(plm_stream_synchronize(stream));
  std::vector<float> sorted((const float *)entropy.data, (const float *)entropy.data + count);
  std::sort(sorted.begin(), sorted.end());

  fused_args args = {};
  args.sobel.in = in.data;
  args.sobel.n = c.frames;
  args.sobel.h = c.height;
  args.sobel.w = c.width;
  args.sobel.dtype = c.dtype;
  args.sobel.border = params.sobel.border;
  args.window = c.window;
  args.bins = c.bins;
  args.lo = params.entropy.range_lo;
  args.hi = params.entropy.range_hi;
  const plan p = make_plan(&args);
  std::vector<uint8_t> mask((size_t)count);
  args.mask = mask.data();
  int64_t differ = 0;
  for (int cmp = PLM_COMPARE_GT; cmp <= PLM_COMPARE_LE; cmp++) {
    params.threshold.compare = (plm_compare)cmp;
    params.threshold.value = sorted[(size_t)count / 2]; /* a tie with the median */
    CHECK(plm_threshold(stream, &entropy, &params.threshold, &chain_mask));
    CHECK(plm_stream_synchronize(stream));
    args.value = params.threshold.value;
    args.compare = params.threshold.compare;
    std::fill(mask.begin(), mask.end(), 0xaa);
    if (!run_kernel(args, p)) return -1;
    for (int64_t i = 0; i < count; i++)
      differ += mask[(size_t)i] != ((uint8_t *)chain_mask.data)[i];
  }
  plm_tensor *all[] = {&in, &magnitude, &entropy, &chain_mask};
  for (plm_tensor *t : all) CHECK(plm_tensor_free(pool, stream, t));
  std::printf(
      "%s %lldx%lldx%lld window %d bins %d: %d threads (%s histograms), %lld-row "
      "segments, %u blocks: %lld differ\n",
      plm_dtype_name(c.dtype), (long long)c.frames, (long long)c.height, (long long)c.width,
      c.window, c.bins, p.threads, p.shared_hist ? "shared" : "global", (long long)p.segment_rows,
      p.blocks, (long long)differ);
  return differ;
}

}  // namespace

int main() {
  plm_context_config config = {};
  config.backend = PLM_BACKEND_HOST;
  plm_context *ctx = nullptr;
  plm_stream *stream = nullptr;
  plm_pool *pool = nullptr;
  CHECK(plm_context_create(&config, &ctx));
  CHECK(plm_stream_create(ctx, PLM_STREAM_DEFAULT, &stream));
  CHECK(plm_context_default_pool(ctx, &pool));
  /* Shapes with one and several strips and segments, windows past the frame, each
   * kind of histogram: 64 bins (128 threads), 200 (64), 400 (32), 600 and 65536
   * (global, grid-stride over more tasks than blocks). */
  const Case cases[] = {
      {PLM_DTYPE_U8, 1, 1, 1, 1, 64},        {PLM_DTYPE_F32, 1, 1, 40, 3, 200},
      {PLM_DTYPE_U16, 1, 40, 1, 4, 400},     {PLM_DTYPE_U8, 1, 7, 13, 2, 600},
      {PLM_DTYPE_F32, 2, 37, 29, 5, 64},     {PLM_DTYPE_U8, 2, 37, 29, 16, 200},
      {PLM_DTYPE_U16, 2, 37, 29, 33, 400},   {PLM_DTYPE_F32, 1, 70, 150, 2, 64},
      {PLM_DTYPE_U8, 1, 70, 150, 16, 65536}, {PLM_DTYPE_F32, 1, 70, 150, 5, 600},
      {PLM_DTYPE_U16, 3, 20, 33, 8, 7},      {PLM_DTYPE_F32, 3, 20, 33, 255, 64},
      {PLM_DTYPE_U8, 1, 300, 2, 15, 65536},  {PLM_DTYPE_F32, 1, 5, 300, 1, 1},
  };
  int failures = 0, index = 0;
  for (const Case &c : cases) {
    int64_t differ = run_case(stream, pool, c, index++);
    if (differ != 0) {
      std::printf("  FAILED: %s\n", differ < 0 ? "a global histogram was left dirty"
                                               : "the mask differs from the chain's");
      failures++;
    }
  }
  CHECK(plm_stream_destroy(stream));
  CHECK(plm_context_destroy(ctx));
  std::printf("%d of %zu cases failed\n", failures, sizeof cases / sizeof cases[0]);
  return failures == 0 ? 0 : 1;
}

/* tests/test_entropy_cuda_logic.cpp: the CUDA entropy kernel's segment logic, run on
 * the host, so that a machine without a GPU checks it too.
 *
 * kernels/cuda/entropy.cu is compiled here as plain C++ (its device-only parts are
 * under __CUDACC__): entropy_segment runs with a histogram per thread (ThreadOwner,
 * ThreadHist) directly, and with a histogram per warp (WarpHist) with the 32 lanes
 * emulated by 32 threads that meet at a barrier wherever a warp's lanes exchange
 * their sums, changing the shared counts with atomics, in whatever order the threads
 * run. Each owner takes many tasks, as on the GPU, so a histogram that a task did not
 * leave zeroed shows. Results are compared with a float64 reference that counts
 * every window from scratch (plume/entropy.h), and the two kinds of owner with each
 * other bit for bit. Exit status 0 is success.
 */
#include <pthread.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cuda/entropy.cu"

namespace {

/* The lanes of a warp, emulated: lane() is the thread's own, sum() adds up one value
 * per lane between two barriers, sync() is a barrier. */
struct EmulatedWarp {
  static constexpr int kLanes = 32;
  pthread_barrier_t *barrier;
  int64_t *slots;
  int my_lane;
  int lane() const { return my_lane; }
  int64_t sum(int64_t v) const {
    slots[my_lane] = v;
    pthread_barrier_wait(barrier);
    int64_t total = 0;
    for (int i = 0; i < kLanes; i++) total += slots[i];
    pthread_barrier_wait(barrier);
    return total;
  }
  void sync() const { pthread_barrier_wait(barrier); }
};

/* One owner's tasks, as entropy_kernel gives them out, in segments of `rows` rows (0:
 * segment_rows, as the kernel takes them); with x_first > 0 only those of columns
 * x_first.. x_first + 2 (the others are left undone). */
template <class Owner, class Hist>
void run_tasks(const Owner &owner, const plm__entropy_args &args, const Hist &hist, int64_t o,
               int64_t owners, int64_t x_first, int64_t rows) {
  if (rows == 0) rows = segment_rows(args);
  const int64_t segments = segment_count(args, rows), tasks = args.frames * segments * args.width;
  for (int64_t task = o; task < tasks; task += owners) {
    const int64_t x = task % args.width, rest = task / args.width;
    if (x_first > 0 && (x < x_first || x > x_first + 2)) continue;
    const int64_t y0 = rest % segments * rows, f = rest / segments;
    entropy_segment(owner, args, nullptr, hist, f, y0, min64(y0 + rows, args.height), x);
  }
}

struct Lane {
  const plm__entropy_args *args;
  uint32_t *words;
  pthread_barrier_t *barrier;
  int64_t *slots;
  int lane;
  int64_t o, owners, x_first, rows;
};

void *lane_main(void *arg) {
  const Lane *l = static_cast<const Lane *>(arg);
  EmulatedWarp warp = {l->barrier, l->slots, l->lane};
  run_tasks(warp, *l->args, WarpHist{l->words}, l->o, l->owners, l->x_first, l->rows);
  return nullptr;
}

/* The kernel's work with `owners` histograms of the given kind (x_first and rows as
 * run_tasks takes them); false when a histogram is not zeroed at the end. */
bool run_kernel(const plm__entropy_args &args, bool by_warps, int64_t owners, int64_t x_first = 0,
                int64_t rows = 0) {
  if (!by_warps) {
    std::vector<uint16_t> hists((size_t)(owners * args.bins), 0);
    for (int64_t o = 0; o < owners; o++)
      run_tasks(ThreadOwner{}, args, ThreadHist{hists.data() + o, owners}, o, owners, x_first,
                rows);
    for (uint16_t c : hists)
      if (c) return false;
    return true;
  }
  const int64_t words = (args.bins + 1) / 2;
  std::vector<uint32_t> hists((size_t)(owners * words), 0);
  for (int64_t o = 0; o < owners; o++) {
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, nullptr, 32);
    int64_t slots[32];
    Lane lanes[32];
    pthread_t threads[32];
    for (int l = 0; l < 32; l++) {
      lanes[l] =
          Lane{&args, hists.data() + o * words, &barrier, slots, l, o, owners, x_first, rows};
      if (pthread_create(&threads[l], nullptr, lane_main, &lanes[l]) != 0) std::abort();
    }
    for (int l = 0; l < 32; l++) pthread_join(threads[l], nullptr);
    pthread_barrier_destroy(&barrier);
  }
  for (uint32_t w : hists)
    if (w) return false;
  return true;
}

/* The worst difference from a float64 reference of every window. */
double worst_error(const plm__entropy_args &args, const std::vector<float> &out) {
  const int64_t h = args.height, w = args.width, left = args.window / 2;
  std::vector<int> counts((size_t)args.bins, 0);
  double worst = 0.0;
  for (int64_t f = 0; f < args.frames; f++)
    for (int64_t y = 0; y < h; y++)
      for (int64_t x = 0; x < w; x++) {
        std::vector<int> seen;
        int64_t n = 0;
        for (int64_t r = y - left; r < y - left + args.window; r++)
          for (int64_t c = x - left; c < x - left + args.window; c++) {
            if (r < 0 || r >= h || c < 0 || c >= w) continue;
            int b = plm__entropy_bin(args.in, (f * h + r) * w + c, args.dtype, args.bins, args.lo,
                                     args.hi);
            if (counts[(size_t)b]++ == 0) seen.push_back(b);
            n++;
          }
        double entropy = 0.0;
        for (int b : seen) {
          double p = (double)counts[(size_t)b] / (double)n;
          entropy -= p * std::log2(p);
          counts[(size_t)b] = 0;
        }
        double diff = std::fabs((double)out[(size_t)((f * h + y) * w + x)] - entropy);
        if (!(diff <= worst)) worst = std::isnan(diff) ? INFINITY : diff;
      }
  return worst;
}

struct Case {
  plm_dtype dtype;
  int64_t frames, height, width;
  int window, bins;
  uint32_t levels; /* values drawn below this */
};

int check(const Case &c, unsigned seed) {
  const int64_t count = c.frames * c.height * c.width;
  std::vector<uint8_t> u8((size_t)count);
  std::vector<uint16_t> u16((size_t)count);
  std::vector<float> f32((size_t)count);
  uint64_t state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < count; i++) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const uint32_t v = (uint32_t)(state % c.levels);
    u8[(size_t)i] = (uint8_t)v;
    u16[(size_t)i] = (uint16_t)v;
    f32[(size_t)i] = (float)v / (float)c.levels * 10.0f - 1.0f; /* some below lo, some above hi */
  }
  plm__entropy_args args = {};
  args.in = c.dtype == PLM_DTYPE_U8    ? (const void *)u8.data()
            : c.dtype == PLM_DTYPE_U16 ? (const void *)u16.data()
                                       : (const void *)f32.data();
  args.frames = c.frames;
  args.height = c.height;
  args.width = c.width;
  args.dtype = c.dtype;
  args.window = c.window;
  args.bins = c.bins;
  args.lo = 0.0;
  args.hi = 8.0;
  std::vector<float> by_thread((size_t)count, -1.0f), by_warp((size_t)count, -2.0f);
  args.out = by_thread.data();
  bool zeroed = run_kernel(args, false, 5);
  args.out = by_warp.data();
  zeroed = run_kernel(args, true, 3) && zeroed;
  const double worst = worst_error(args, by_thread);
  /* Any segment height gives the same bits: 1 row, a few, 64 and the kernel's own. */
  bool heights_agree = true;
  for (int64_t rows : {(int64_t)1, (int64_t)2, (int64_t)5, kMaxSegmentRows}) {
    std::vector<float> other((size_t)count, -3.0f);
    args.out = other.data();
    zeroed = run_kernel(args, false, 4, 0, rows) && zeroed;
    heights_agree = heights_agree && other == by_thread;
  }
  const bool same = by_thread == by_warp && heights_agree;
  std::printf(
      "%s %lldx%lldx%lld window %d bins %d values < %u: segments of %lld rows, worst "
      "%.3g, warp %s thread%s%s\n",
      c.dtype == PLM_DTYPE_U8    ? "u8"
      : c.dtype == PLM_DTYPE_U16 ? "u16"
                                 : "f32",
      (long long)c.frames, (long long)c.height, (long long)c.width, c.window, c.bins, c.levels,
      (long long)segment_rows(args), worst, by_thread == by_warp ? "equals" : "DIFFERS from",
      heights_agree ? "" : ", segment heights DISAGREE", zeroed ? "" : ", a histogram NOT zeroed");
  return worst < 1e-4 && same && zeroed ? 0 : 1;
}

}  // namespace

/* The segment height the kernel plans, and what it promises: between ceil(w / 4) and
 * 64 rows, 64 with warps' histograms or when the batch is large enough, else enough
 * tasks for every histogram the bounds allow, unless the segments are already as short
 * as ceil(w / 4); scratch within plume/entropy.h's bounds. */
int check_plan(plm_dtype dtype, int64_t frames, int64_t height, int64_t width, int window, int bins,
               int64_t expected_rows) {
  plm__entropy_args args = {};
  args.frames = frames;
  args.height = height;
  args.width = width;
  args.dtype = dtype;
  args.window = window;
  args.bins = bins;
  const int64_t rows = segment_rows(args), least = (window + 3) / 4;
  const int64_t tasks = task_count(args), owners = owner_count(args);
  const size_t bytes = plm__entropy_cuda_scratch_bytes(&args) - ranges_bytes(&args);
  const size_t bound = bins <= kThreadBins ? (size_t)kFillThreads * bins * 2 : kHistBudget;
  bool ok = rows == expected_rows && rows >= least && rows >= 1 && rows <= kMaxSegmentRows &&
            (rows == kMaxSegmentRows || rows == least || tasks >= most_owners(args)) &&
            (!warps_own(args) || rows == kMaxSegmentRows) &&
            owners == (tasks < most_owners(args) ? tasks : most_owners(args)) && bytes <= bound;
  std::printf(
      "plan %lldx%lldx%lld window %d bins %d: segments of %lld rows (expected %lld), %lld "
      "tasks, %lld histograms, %zu bytes%s\n",
      (long long)frames, (long long)height, (long long)width, window, bins, (long long)rows,
      (long long)expected_rows, (long long)tasks, (long long)owners, bytes, ok ? "" : ": WRONG");
  return ok ? 0 : 1;
}

int main() {
  int failures = 0;
  failures += check_plan(PLM_DTYPE_U8, 1, 512, 512, 16, 256, 4);      /* the seed size */
  failures += check_plan(PLM_DTYPE_U8, 1, 512, 512, 3, 256, 2);       /* 131072 tasks */
  failures += check_plan(PLM_DTYPE_U8, 1, 512, 512, 255, 256, 64);    /* fills would dominate */
  failures += check_plan(PLM_DTYPE_U8, 1, 4096, 4096, 16, 256, 64);   /* big enough as it is */
  failures += check_plan(PLM_DTYPE_U8, 16, 512, 512, 3, 256, 32);     /* a batch fills it too */
  failures += check_plan(PLM_DTYPE_U8, 1, 1, 1, 1, 256, 1);           /* one pixel */
  failures += check_plan(PLM_DTYPE_U8, 1, 5940, 1000, 5, 16, 45);     /* 132 segments a column */
  failures += check_plan(PLM_DTYPE_U16, 1, 512, 512, 16, 65536, 64);  /* 4096 tasks, 2048 warps */
  failures += check_plan(PLM_DTYPE_U16, 1, 128, 128, 16, 65536, 64);  /* warps: 64 rows */
  failures += check_plan(PLM_DTYPE_F32, 1, 2048, 2048, 16, 4096, 64); /* warps, big */
  const Case cases[] = {
      {PLM_DTYPE_U16, 2, 150, 11, 16, 65536, 65536}, /* segments across frames */
      {PLM_DTYPE_U16, 1, 70, 9, 1, 65536, 3},
      {PLM_DTYPE_U16, 1, 130, 5, 33, 1000, 65536},
      {PLM_DTYPE_U16, 1, 20, 30, 4, 65535, 65536}, /* an odd bin count: half a last word */
      {PLM_DTYPE_U16, 1, 70, 4, 255, 65536, 2},    /* a window wider than the frame */
      {PLM_DTYPE_U8, 3, 66, 7, 5, 256, 256},
      {PLM_DTYPE_U8, 1, 65, 9, 2, 256, 4}, /* an even window */
      {PLM_DTYPE_U8, 1, 1, 1, 3, 256, 256},
      {PLM_DTYPE_F32, 1, 129, 6, 8, 4096, 1000},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    failures += check(cases[i], (unsigned)i + 1);
  /* Counts near the most a window holds (255 * 255 = 65025, plus a row entering):
   * two values packed in one word must never carry into each other. No reference
   * (it would count 65025 pixels per window); the two kinds of owner must agree, on
   * the columns around the middle. */
  for (uint32_t levels = 1; levels <= 2; levels++) {
    const int64_t h = 260, w = 258, count = h * w;
    std::vector<uint16_t> in((size_t)count);
    for (int64_t i = 0; i < count; i++) in[(size_t)i] = (uint16_t)((i * 7 + i / w) % levels);
    plm__entropy_args args = {};
    args.in = in.data();
    args.frames = 1;
    args.height = h;
    args.width = w;
    args.dtype = PLM_DTYPE_U16;
    args.window = 255;
    args.bins = 65536;
    std::vector<float> by_thread((size_t)count, 0.0f), by_warp((size_t)count, 0.0f);
    args.out = by_thread.data();
    bool zeroed = run_kernel(args, false, 5, w / 2 - 1);
    args.out = by_warp.data();
    zeroed = run_kernel(args, true, 3, w / 2 - 1) && zeroed;
    const bool same = by_thread == by_warp;
    std::printf("u16 %lldx%lld window 255, %u values: warp %s thread%s\n", (long long)h,
                (long long)w, levels, same ? "equals" : "DIFFERS from",
                zeroed ? "" : ", a histogram NOT zeroed");
    failures += !(same && zeroed);
  }
  std::printf(failures ? "FAILED: %d cases\n" : "all cases passed\n", failures);
  return failures ? 1 : 0;
}

/* tests/test_entropy_cuda_logic.cpp: the CUDA window kernel's block logic, for both
 * of its ops (entropy and the fused sobel -> entropy -> threshold), run on the host,
 * so that a machine without a GPU checks it too.
 *
 * kernels/cuda/entropy.cu is compiled here as plain C++ (its device-only parts are
 * under __CUDACC__): run_block runs with a launch plan, each of a block's threads
 * emulated by a fibre (tests/emulated_lanes.h: warps that run ahead of each other, lanes
 * in a seeded random order between barriers) that meets the others where the GPU's
 * threads call __syncthreads, the blocks of the grid one after another, the shared
 * memory scribbled over between them. Every case runs with the plan the launcher makes
 * and with plans chosen otherwise on the same input: each kind of histogram (byte shared,
 * dense shared, sparse shared, dense global) where it applies (byte counts also on full
 * windows of one bin, whose count of 256 they hold as 0), the two-row ring, short and long
 * segments, 32 and 128 threads, and the plan of the smallest launch shape (the cuda
 * tunables); first windows filled by differences, and summed from their counts where the
 * bins are few (fill_summed: bench_ops' fused case and others).
 *
 * The launch shapes themselves (plm__entropy_cuda_shape, the tunables entropy and the
 * fused op list through plume/tuning.h): every candidate, one at a time as `plume tune`
 * measures them and all at their smallest or largest, gives a valid plan for windows,
 * bin counts and frames across their ranges (the kind of histogram the default's, the
 * threads the most that fit its budget, shared memory within it, segments as the
 * shape says); every candidate changes the plan somewhere; the default shape makes
 * exactly the plan make_plan made before the shape was tunable, with the byte counts
 * since (restated here).
 *
 * The entropy op's warp-owned histograms (more than 512 bins and a window past 18) run
 * with each warp's 32 lanes emulated by fibres that meet at a warp barrier wherever the
 * lanes exchange their sums, changing the shared counts with atomics in whatever order
 * the lanes run. (Data races between the threads of a real launch are the CUDA
 * emulator's to find: entropy.cuda and fused.cuda under its race check, emu/README.md.)
 *
 * The reader of a staged row's bins (each_bin_pair, four bins to an 8-byte load) is
 * checked on its own: every start within a quad and counts 0..40, on rows that end at an
 * unreadable page, so that a read past a row's last quad stops the test.
 *
 * References, bit for bit: for entropy the CPU kernel (plm_entropy on a host context,
 * itself checked against a float64 reference by tests/test_entropy.c); for the fused
 * op the masks of plm_sobel, plm_entropy and plm_threshold run one after another on
 * the host. The global histograms must be zeroed again at the end. Exit status 0 is
 * success.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "kernels/cuda/entropy.cu"
#include "plume/plume.h"
#include "tests/emulated_lanes.h"

namespace {

#define CHECK(call)                                                                \
  do {                                                                             \
    plm_status check_status_ = (call);                                             \
    if (check_status_ != PLM_OK) {                                                 \
      std::fprintf(stderr, "%s -> %s: %s\n", #call, plm_status_str(check_status_), \
                   plm_last_error());                                              \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

/* The table of c log2 c as the kernels' file compiles it into the device data
 * (device_clogc; the build writes it: cmake/make_entropy_tables.c). */
const int64_t kClogc[PLM__ENTROPY_CLOGC_COUNT] = {
#include "entropy_clogc_table.inc"
};

/* The build's tables are what they say: each difference the step of plm__entropy_clogc
 * (the CPU kernel's and device_delta's table) and each c log2 c its value
 * (device_clogc's), so the backends' sums are the formula's. */
int check_tables() {
  const int64_t *delta = plm__entropy_delta_table();
  for (int64_t c = 0; c < PLM__ENTROPY_DELTA_COUNT; c++) {
    const int64_t clogc = plm__entropy_clogc(c), next = plm__entropy_clogc(c + 1);
    if ((c < PLM__ENTROPY_CLOGC_COUNT && kClogc[c] != clogc) || delta[c] != next - clogc) {
      std::fprintf(stderr, "tables at count %lld: delta %lld (want %lld)%s\n", (long long)c,
                   (long long)delta[c], (long long)(next - clogc),
                   c < PLM__ENTROPY_CLOGC_COUNT && kClogc[c] != clogc ? ", clogc differs" : "");
      return 1;
    }
  }
  return 0;
}

/* ---- the grid, emulated ------------------------------------------------------------- */

/* Global histograms, zeroed: they run to hundreds of MiB (65536 bins for every thread
 * of every block), and calloc's fresh pages read as zero without being written, so a
 * case pays only for the pages its kernel touches. still_zero(): the kernel zeroed
 * every count it made again, as the next launch expects. */
template <class T>
struct ZeroedHists {
  std::unique_ptr<T, void (*)(void *)> counts;
  size_t count;
  explicit ZeroedHists(size_t n) : counts((T *)std::calloc(n + 1, sizeof(T)), std::free), count(n) {
    if (!counts) std::abort();
  }
  T *data() const { return counts.get(); }
  bool still_zero() const {
    return std::all_of(data(), data() + count, [](T c) { return c == 0; });
  }
};

/* The seed of each emulated block's or warp's lane order: one after another, so that a
 * run is repeatable and the runs differ from each other. */
uint64_t lane_seed = 1;

/* A block of the grid as the kernel's Block parameter sees it: its threads are the
 * lanes of a LaneGroup (tests/emulated_lanes.h), sync() the group's barrier. */
struct GridBlock {
  LaneGroup *group;
  int my_thread;
  int64_t my_block, block_count;
  int thread() const { return my_thread; }
  int threads() const { return group->size(); }
  int64_t index() const { return my_block; }
  int64_t count() const { return block_count; }
  void sync() const { group->barrier(my_thread, false); }
};

/* The kernel's work under plan p, the blocks one after another, the shared memory
 * scribbled over before each (no block inherits it); false when a global histogram is
 * left dirty. */
template <class Hist, class Source, class Sink>
bool run_grid(const plan &p, const Source &source, const Sink &sink, int bins) {
  std::vector<unsigned char> smem(p.smem + 16);
  const ZeroedHists<uint32_t> hists(p.scratch / sizeof(uint32_t) + 1);
  LaneGroup threads(p.threads, lane_seed++);
  const int64_t blocks = (int64_t)p.blocks;
  for (int64_t b = 0; b < blocks; b++) {
    std::memset(smem.data(), 0xa5, p.smem);
    threads.run([&](int t) {
      const GridBlock block = {&threads, t, b, blocks};
      run_block<Hist>(block, p, source, sink, bins, smem.data(), hists.data(),
                      plm__entropy_delta_table(), kClogc);
    });
  }
  return hists.still_zero();
}

/* As launch() in the kernel's file: the histogram type the plan's kind needs. */
template <class Source, class Sink>
bool run_plan(const plan &p, const Source &source, const Sink &sink, int bins) {
  if (p.hist == HIST_SPARSE_SHARED) return run_grid<SparseHist>(p, source, sink, bins);
  if (p.hist == HIST_DENSE_GLOBAL) return run_grid<GlobalDenseHist>(p, source, sink, bins);
  if constexpr (Source::atomic_counts) {
    if (p.hist == HIST_BYTE_SHARED && p.atomic_counts)
      return run_grid<AtomicByteHist>(p, source, sink, bins);
    if (p.hist == HIST_DENSE_SHARED && p.atomic_counts)
      return run_grid<AtomicDenseHist>(p, source, sink, bins);
  }
  if (p.hist == HIST_BYTE_SHARED) return run_grid<ByteHist>(p, source, sink, bins);
  return run_grid<DenseHist>(p, source, sink, bins);
}

/* A lane of a warp as the kernel's Lane parameter sees it: sum() adds up one value per
 * lane of the warp (an exchange between two warp barriers), sync() is the warp's
 * barrier. */
struct WarpLane {
  LaneGroup *group;
  int my_lane;
  int lane() const { return my_lane; }
  int64_t sum(int64_t v) const {
    int64_t total = 0;
    for (int64_t each : group->gather(my_lane, v)) total += each;
    return total;
  }
  void sync() const { group->barrier(my_lane, true); }
};

/* warp_kernel's work (args.out filled), the warps one after another, or with
 * x_first >= 0 only that of frame 0's columns x_first .. x_first + 2, one warp; false
 * when a histogram is left dirty. */
bool run_warps(const plm__entropy_args &args, const float *ranges, warp_plan p,
               int64_t x_first = -1) {
  const ZeroedHists<uint32_t> hists(p.scratch / sizeof(uint32_t));
  const int64_t *delta = plm__entropy_delta_table();
  LaneGroup warp(kLanes, lane_seed++);
  warp.run([&](int l) {
    const WarpLane lane = {&warp, l};
    if (x_first < 0) {
      for (int64_t o = 0; o < p.warps; o++) warp_tasks(lane, args, p, ranges, hists.data(), delta, o);
      return;
    }
    const WarpHist hist = {hists.data()};
    for (int64_t x = x_first; x < x_first + 3; x++)
      for (int64_t y0 = 0; y0 < args.height; y0 += kWarpSegmentRows)
        warp_segment(lane, args, ranges, hist, delta, 0, y0,
                     min64(y0 + kWarpSegmentRows, args.height), x);
  });
  return hists.still_zero();
}

const char *kind_name(hist_kind kind) {
  return kind == HIST_BYTE_SHARED     ? "byte shared"
         : kind == HIST_DENSE_SHARED  ? "dense shared"
         : kind == HIST_SPARSE_SHARED ? "sparse shared"
                                      : "dense global";
}

/* The launch shape plume runs without a tuning table, and the extreme ones. */
const plm__entropy_cuda_shape kDefaultShape = {
    PLM__ENTROPY_CUDA_MAX_THREADS, PLM__ENTROPY_CUDA_SEGMENT_WINDOWS, PLM__ENTROPY_CUDA_MIN_TASKS,
    PLM__ENTROPY_CUDA_CHANGES_AT_ONCE, PLM__ENTROPY_CUDA_ATOMIC_COUNTS};
const plm__entropy_cuda_shape kSmallestShape = {32, 1, 128, 1, 0},
                              kLargestShape = {128, 8, 4096, 2, 1};

bool same_plan(const plan &a, const plan &b) {
  return a.hist == b.hist && a.threads == b.threads && a.window == b.window && a.span == b.span &&
         a.row_quads == b.row_quads && a.ring_rows == b.ring_rows &&
         a.sparse_slots == b.sparse_slots && a.delta_entries == b.delta_entries &&
         a.clogc_entries == b.clogc_entries && a.segment_rows == b.segment_rows &&
         a.strips == b.strips && a.segments == b.segments && a.tasks == b.tasks &&
         a.blocks == b.blocks && a.ring_bytes == b.ring_bytes && a.hist_bytes == b.hist_bytes &&
         a.delta_bytes == b.delta_bytes && a.clogc_bytes == b.clogc_bytes && a.smem == b.smem &&
         a.scratch == b.scratch && a.changes_at_once == b.changes_at_once &&
         a.atomic_counts == b.atomic_counts;
}

/* The plan the launcher makes, then the smallest launch shape's where it differs (32
 * threads, the shortest segments, the most tasks; the largest shape's longer segments
 * and 128 threads the plans below and the default's cover), then others on the same
 * input, at 32 threads (the emulation's barriers are costly): each kind of histogram
 * that applies (byte shared with at most 1024 bins and windows of at most 256 pixels,
 * dense shared with at most 512 bins, sparse where its table fits 64 KiB), with the full
 * ring and 5-row segments, and with the two-row ring and whole-frame segments; with
 * `atomics` (the entropy op's), byte and dense shared also with atomic counts. */
std::vector<plan> plans_for(int64_t frames, int64_t height, int64_t width, int window, int bins,
                            bool atomics) {
  std::vector<plan> plans = {make_plan(frames, height, width, window, bins, kDefaultShape)};
  const plan smallest = make_plan(frames, height, width, window, bins, kSmallestShape);
  if (!same_plan(smallest, plans[0])) plans.push_back(smallest);
  const hist_kind kinds[] = {HIST_BYTE_SHARED, HIST_DENSE_SHARED, HIST_SPARSE_SHARED,
                             HIST_DENSE_GLOBAL};
  for (hist_kind kind : kinds) {
    if (kind == HIST_BYTE_SHARED &&
        (!bytes_hold(window) || (size_t)32 * byte_bytes(bins) > kDenseBudget))
      continue;
    if (kind == HIST_DENSE_SHARED && (size_t)32 * dense_bytes(bins) > kDenseBudget) continue;
    if (kind == HIST_SPARSE_SHARED &&
        (size_t)32 * sparse_slots_for(window, bins) * 4 > kSparseBudget)
      continue;
    /* One change at a time in the ring, two in the two-row ring: both paths, every kind. */
    plans.push_back(
        lay_out(frames, height, width, window, bins, plan_choice{kind, 32, window + 2, 5, 1, 0}));
    plans.push_back(
        lay_out(frames, height, width, window, bins, plan_choice{kind, 32, 2, height, 2, 0}));
    if (atomics && (kind == HIST_BYTE_SHARED || kind == HIST_DENSE_SHARED))
      plans.push_back(lay_out(frames, height, width, window, bins,
                              plan_choice{kind, 32, window + 2, 5, 1, 1}));
  }
  return plans;
}

std::string describe(const plan &p) {
  char text[192];
  std::snprintf(text, sizeof text, "%s%s%s, %d threads, %s ring, %lld-row segments, %u blocks",
                kind_name(p.hist), p.atomic_counts ? " (atomic)" : "",
                p.clogc_entries > 0 ? " (fills summed)" : "", p.threads,
                p.ring_rows > 2 ? "full" : "two-row", (long long)p.segment_rows, p.blocks);
  return text;
}

/* ---- inputs --------------------------------------------------------------------------- */

uint64_t rng = 0x2545f4914f6cdd1dull;

uint64_t next_random() {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

struct Case {
  plm_dtype dtype;
  int64_t frames, height, width;
  int window, bins;
  uint32_t levels;   /* values drawn below this (0: the dtype's own mix, see fill) */
  bool range_auto;   /* f32 entropy */
};

/* Rows in bands of `rows`, band j's pixels all first + j mod levels (u8): whole windows
 * of one value, beside windows of the next. */
struct Bands {
  uint32_t first;
  int64_t rows;
};

/* A tensor of random values of the case's dtype: below `levels`, or with levels 0 a
 * mix: u8 of six levels, u16 anything, f32 in [0, 4) with some NaNs; or, with bands,
 * the bands' values (u8). */
void fill(const Case &c, plm_tensor *t, const Bands *bands = nullptr) {
  const int64_t count = c.frames * c.height * c.width;
  for (int64_t i = 0; i < count; i++) {
    const uint64_t r = next_random();
    if (bands) {
      const int64_t band = i / c.width % c.height / bands->rows;
      ((uint8_t *)t->data)[i] = (uint8_t)(bands->first + (uint32_t)band % c.levels);
      continue;
    }
    const uint32_t v = c.levels ? (uint32_t)(r % c.levels) : 0;
    switch (c.dtype) {
      case PLM_DTYPE_U8: ((uint8_t *)t->data)[i] = (uint8_t)(c.levels ? v : r % 6 * 40); break;
      case PLM_DTYPE_U16: ((uint16_t *)t->data)[i] = (uint16_t)(c.levels ? v : r); break;
      case PLM_DTYPE_F32:
        ((float *)t->data)[i] = c.levels          ? (float)v / (float)c.levels * 10.0f - 1.0f
                                : r % 101 == 0 ? NAN
                                               : (float)(r % 1000) / 250.0f;
        break;
      default: std::abort();
    }
  }
}

/* Each frame's finite min and max, as the range kernel writes them. */
std::vector<float> frame_ranges(const Case &c, const float *in) {
  std::vector<float> ranges((size_t)(2 * c.frames), 0.0f);
  const int64_t size = c.height * c.width;
  for (int64_t f = 0; f < c.frames; f++) {
    bool seen = false;
    for (int64_t i = 0; i < size; i++) {
      const float v = in[f * size + i];
      if (!plm__entropy_in_auto_range(v)) continue;
      if (!seen || v < ranges[(size_t)(2 * f)]) ranges[(size_t)(2 * f)] = v;
      if (!seen || v > ranges[(size_t)(2 * f + 1)]) ranges[(size_t)(2 * f + 1)] = v;
      seen = true;
    }
  }
  return ranges;
}

struct Host {
  plm_context *ctx;
  plm_stream *stream;
  plm_pool *pool;
};

plm_tensor make_tensor(const Host &host, plm_dtype dtype, const Case &c) {
  const int64_t dims[3] = {c.frames, c.height, c.width};
  plm_tensor t;
  CHECK(plm_tensor_alloc(host.pool, host.stream, dtype, 3, dims, &t));
  CHECK(plm_stream_synchronize(host.stream)); /* host memory: written directly */
  return t;
}

/* ---- entropy ------------------------------------------------------------------------ */

/* Every plan's entropy against the CPU kernel's (with whole_frames, only one plan:
 * global histograms, segments of the whole frame, for windows whose fills would take
 * the emulation too long); returns the failures. */
int check_entropy(const Host &host, const Case &c, bool whole_frames = false,
                  const Bands *bands = nullptr) {
  const int64_t count = c.frames * c.height * c.width;
  plm_tensor in = make_tensor(host, c.dtype, c), expected = make_tensor(host, PLM_DTYPE_F32, c);
  fill(c, &in, bands);
  plm_entropy_params params = plm_entropy_params_default();
  params.window = c.window;
  params.bins = c.bins;
  params.range_auto = c.range_auto;
  params.range_lo = 0.0;
  params.range_hi = 8.0;
  CHECK(plm_entropy(host.stream, &in, &params, &expected));
  CHECK(plm_stream_synchronize(host.stream));

  plm__entropy_args args = {};
  args.in = in.data;
  args.frames = c.frames;
  args.height = c.height;
  args.width = c.width;
  args.dtype = c.dtype;
  args.window = c.window;
  args.bins = c.bins;
  args.range_auto = c.range_auto;
  args.lo = params.range_lo;
  args.hi = params.range_hi;
  const std::vector<float> ranges =
      c.range_auto ? frame_ranges(c, (const float *)in.data) : std::vector<float>();
  std::vector<float> out((size_t)count);
  int failures = 0;
  const std::vector<plan> plans =
      whole_frames ? std::vector<plan>{lay_out(c.frames, c.height, c.width, c.window, c.bins,
                                               plan_choice{HIST_DENSE_GLOBAL, 128, 2, c.height, 2, 0})}
                   : plans_for(c.frames, c.height, c.width, c.window, c.bins, true);
  for (const plan &p : plans) {
    std::fill(out.begin(), out.end(), -1.0f);
    args.out = out.data();
    const EntropySource source = {args, ranges.data(), 0.0, 0.0};
    const bool zeroed = run_plan(p, source, EntropySink{out.data()}, c.bins);
    int64_t differ = 0;
    for (int64_t i = 0; i < count; i++)
      differ += std::memcmp(&out[(size_t)i], (const float *)expected.data + i, sizeof(float)) != 0;
    const bool ok = differ == 0 && zeroed;
    failures += !ok;
    std::printf("entropy %s %lldx%lldx%lld w %d bins %d%s, %s: %lld differ%s%s\n",
                plm_dtype_name(c.dtype), (long long)c.frames, (long long)c.height,
                (long long)c.width, c.window, c.bins, c.range_auto ? " auto" : "",
                describe(p).c_str(), (long long)differ, zeroed ? "" : ", histogram NOT zeroed",
                ok ? "" : "  FAILED");
  }
  /* Where the launcher gives warps the histograms: their kernel, with the plan it
   * makes and with as few warps as tasks allow down to 3 (each taking many tasks). */
  if (!whole_frames &&
      make_plan(c.frames, c.height, c.width, c.window, c.bins, kDefaultShape).hist ==
          HIST_DENSE_GLOBAL) {
    const warp_plan natural = make_warp_plan(args);
    warp_plan few = natural;
    few.warps = min64(natural.warps, 3);
    few.scratch = (size_t)few.warps * warp_hist_words(c.bins) * sizeof(uint32_t);
    for (const warp_plan &wp : {natural, few}) {
      std::fill(out.begin(), out.end(), -1.0f);
      args.out = out.data();
      const bool zeroed = run_warps(args, ranges.data(), wp);
      int64_t differ = 0;
      for (int64_t i = 0; i < count; i++)
        differ +=
            std::memcmp(&out[(size_t)i], (const float *)expected.data + i, sizeof(float)) != 0;
      const bool ok = differ == 0 && zeroed;
      failures += !ok;
      std::printf("entropy %s %lldx%lldx%lld w %d bins %d, %lld warp-owned histograms: %lld "
                  "differ%s%s\n",
                  plm_dtype_name(c.dtype), (long long)c.frames, (long long)c.height,
                  (long long)c.width, c.window, c.bins, (long long)wp.warps, (long long)differ,
                  zeroed ? "" : ", histogram NOT zeroed", ok ? "" : "  FAILED");
    }
  }
  /* With whole_frames (large windows), the warps on three middle columns alone: counts
   * near the most a window holds, two to a word, must never carry into each other. */
  if (whole_frames) {
    const int64_t x_first = c.width / 2 - 1;
    std::fill(out.begin(), out.end(), -1.0f);
    args.out = out.data();
    const bool zeroed = run_warps(args, ranges.data(), make_warp_plan(args), x_first);
    int64_t differ = 0;
    for (int64_t y = 0; y < c.height; y++)
      for (int64_t x = x_first; x < x_first + 3; x++) {
        const int64_t i = y * c.width + x;
        differ += std::memcmp(&out[(size_t)i], (const float *)expected.data + i, sizeof(float)) != 0;
      }
    const bool ok = differ == 0 && zeroed;
    failures += !ok;
    std::printf("entropy %s %lldx%lldx%lld w %d bins %d, a warp-owned histogram on columns "
                "%lld..%lld: %lld differ%s%s\n",
                plm_dtype_name(c.dtype), (long long)c.frames, (long long)c.height,
                (long long)c.width, c.window, c.bins, (long long)x_first, (long long)x_first + 2,
                (long long)differ, zeroed ? "" : ", histogram NOT zeroed", ok ? "" : "  FAILED");
  }
  CHECK(plm_tensor_free(host.pool, host.stream, &in));
  CHECK(plm_tensor_free(host.pool, host.stream, &expected));
  return failures;
}

/* ---- fused ------------------------------------------------------------------------- */

/* Every plan's masks against the chain's, for each comparison; returns the failures. */
int check_fused(const Host &host, const Case &c, int index) {
  const int64_t count = c.frames * c.height * c.width;
  plm_tensor in = make_tensor(host, c.dtype, c), magnitude = make_tensor(host, PLM_DTYPE_F32, c);
  plm_tensor entropy = make_tensor(host, PLM_DTYPE_F32, c);
  plm_tensor chain_mask = make_tensor(host, PLM_DTYPE_U8, c);
  fill(c, &in);
  plm_sobel_entropy_threshold_params params = {};
  params.sobel.border = (plm_border)(index % 3);
  params.entropy.window = c.window;
  params.entropy.bins = c.bins;
  params.entropy.range_lo = c.dtype == PLM_DTYPE_U16 ? 20000.0 : 0.5;
  params.entropy.range_hi = c.dtype == PLM_DTYPE_U16  ? 150000.0
                            : c.dtype == PLM_DTYPE_U8 ? 600.0
                                                      : 9.0;
  CHECK(plm_sobel(host.stream, &in, &params.sobel, nullptr, nullptr, &magnitude));
  CHECK(plm_entropy(host.stream, &magnitude, &params.entropy, &entropy));
  CHECK(plm_stream_synchronize(host.stream));
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
  std::vector<uint8_t> mask((size_t)count);
  args.mask = mask.data();
  int failures = 0;
  for (const plan &p : plans_for(c.frames, c.height, c.width, c.window, c.bins, false)) {
    int64_t differ = 0;
    bool zeroed = true;
    for (int cmp = PLM_COMPARE_GT; cmp <= PLM_COMPARE_LE; cmp++) {
      params.threshold.compare = (plm_compare)cmp;
      params.threshold.value = sorted[(size_t)count / 2]; /* a tie with the median */
      CHECK(plm_threshold(host.stream, &entropy, &params.threshold, &chain_mask));
      CHECK(plm_stream_synchronize(host.stream));
      args.value = params.threshold.value;
      args.compare = params.threshold.compare;
      std::fill(mask.begin(), mask.end(), 0xaa);
      zeroed = run_plan(p, FusedSource{args}, FusedSink{args}, c.bins) && zeroed;
      for (int64_t i = 0; i < count; i++)
        differ += mask[(size_t)i] != ((uint8_t *)chain_mask.data)[i];
    }
    const bool ok = differ == 0 && zeroed;
    failures += !ok;
    std::printf("fused %s %lldx%lldx%lld w %d bins %d, %s: %lld differ%s%s\n",
                plm_dtype_name(c.dtype), (long long)c.frames, (long long)c.height,
                (long long)c.width, c.window, c.bins, describe(p).c_str(), (long long)differ,
                zeroed ? "" : ", histogram NOT zeroed", ok ? "" : "  FAILED");
  }
  plm_tensor *all[] = {&in, &magnitude, &entropy, &chain_mask};
  for (plm_tensor *t : all) CHECK(plm_tensor_free(host.pool, host.stream, t));
  return failures;
}

/* ---- the plans themselves ------------------------------------------------------------- */

/* What make_plan promises: the kind of histogram and threads the top of the kernel's
 * file says, shared memory within the budgets, segments between 8 rows and max(2w,
 * 32), halved only while there are fewer than 512 tasks. */
/* A staged row of ring_row_quads(span) quads that ends where an unreadable page begins, so
 * that a read past the row's last quad faults; released by release_row. */
struct GuardedRow {
  BinQuad *row;
  char *mapping;
  size_t bytes;
};

GuardedRow guarded_row(int quads) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), row_bytes = (size_t)quads * sizeof(BinQuad);
  const size_t pages = (row_bytes + page - 1) / page + 1;
  void *mapping =
      mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return GuardedRow{nullptr, nullptr, 0};
  char *guard = (char *)mapping + (pages - 1) * page;
  if (mprotect(guard, page, PROT_NONE) != 0) {
    munmap(mapping, pages * page);
    return GuardedRow{nullptr, nullptr, 0};
  }
  return GuardedRow{(BinQuad *)(guard - row_bytes), (char *)mapping, pages * page};
}

/* each_bin_pair, the reader of every count change's bins, four to an 8-byte load: for a
 * window starting at any bin of a quad (k0 0..7) and 0 to 40 bins (k1 = k0 - 1 .. k0 + 39),
 * in rows of the span it ends at and longer, it gives the bins k0..k1 in order, as pairs
 * and a last single for an odd count, and reads no quad past ring_row_quads(span) (the
 * row ends at an unreadable page: a read past it would stop the test). */
int check_each_bin_pair() {
  int failures = 0, cases = 0;
  for (int k0 = 0; k0 < 8; k0++)
    for (int count = 0; count <= 40; count++)
      for (int extra = 0; extra < 5; extra++) {
        const int k1 = k0 + count - 1, span = std::max(k1 + 1, 1) + extra;
        const int quads = ring_row_quads(span);
        GuardedRow g = guarded_row(quads);
        if (g.row == nullptr) {
          std::printf("each_bin_pair: no guarded row  WRONG\n");
          return failures + 1;
        }
        for (int k = 0; k < 4 * quads; k++) g.row[k >> 2].half[k & 3] = (uint16_t)(100 + k);
        std::vector<int> bins;
        int singles = 0;
        bool single_last = true;
        each_bin_pair(
            g.row, k0, k1,
            [&](int a, int b) {
              single_last = singles == 0;
              bins.push_back(a);
              bins.push_back(b);
            },
            [&](int b) {
              singles++;
              bins.push_back(b);
            });
        bool right = (int)bins.size() == count && singles == (count & 1) && single_last;
        for (int i = 0; right && i < count; i++) right = bins[(size_t)i] == 100 + k0 + i;
        munmap(g.mapping, g.bytes);
        cases++;
        if (!right && failures++ < 10)
          std::printf("each_bin_pair k0 %d k1 %d span %d: %zu bins, %d single  WRONG\n", k0, k1,
                      span, bins.size(), singles);
      }
  std::printf("each_bin_pair: %d windows, the bins in order, nothing read past a row%s\n", cases,
              failures ? "  FAILED" : "");
  return failures;
}

int check_make_plan(int64_t frames, int64_t height, int64_t width, int window, int bins,
                    hist_kind kind, int threads) {
  const plan p = make_plan(frames, height, width, window, bins, kDefaultShape);
  const int64_t longest = max64(2 * (int64_t)window, 32);
  const int64_t longer = 2 * p.segment_rows; /* what the plan halved, if it did */
  const bool rows_ok =
      p.segment_rows >= kMinSegmentRows && p.segment_rows <= longest &&
      (p.segment_rows == longest ||
       frames * p.strips * ((height + longer - 1) / longer) < PLM__ENTROPY_CUDA_MIN_TASKS);
  const size_t budget = kRingBudget + (kind == HIST_SPARSE_SHARED ? kSparseBudget : kDenseBudget) +
                        kDeltaBudget;
  const bool ok = p.hist == kind && p.threads == threads && rows_ok && p.smem <= budget &&
                  (kind != HIST_DENSE_SHARED || p.smem <= PLM__CUDA_SHARED_WITHOUT_OPT_IN) &&
                  (kind != HIST_BYTE_SHARED || p.smem <= PLM__CUDA_SHARED_WITHOUT_OPT_IN) &&
                  p.scratch <= kGlobalHistBudget && p.blocks >= 1;
  std::printf("plan %lldx%lldx%lld w %d bins %d: %s, %zu bytes of shared memory, %zu of scratch%s\n",
              (long long)frames, (long long)height, (long long)width, window, bins,
              describe(p).c_str(), p.smem, p.scratch, ok ? "" : "  WRONG");
  return ok ? 0 : 1;
}

/* ---- the launch shapes ---------------------------------------------------------------- */

/* make_plan as it was before the launch shape was tunable, restated: the reference of
 * the default shape. The most threads of 128, 64, 32 whose dense histograms fit 32 KiB
 * (for windows of at most 256 pixels, since 2026-12-05, of byte counts where u16 counts
 * fit), else whose sparse tables fit 64 KiB, else 128 with global histograms; segments of
 * max(2w, 32) rows halved down to 8 while the launch has fewer than 512 tasks. */
plan todays_plan(int64_t frames, int64_t height, int64_t width, int window, int bins) {
  /* Two changes at once: the default since changes_at_once was added (one before). */
  plan_choice choice = {HIST_DENSE_GLOBAL, 128, 0, 0, 2, 0};
  int bytes = 0, dense = 0, sparse = 0;
  for (int t = 128; t >= 32; t /= 2) {
    if (!bytes && (size_t)t * ((bins + 3) / 4 * 4) <= 32 * 1024) bytes = t;
    if (!dense && (size_t)t * dense_bytes(bins) <= 32 * 1024) dense = t;
    if (!sparse && (size_t)t * (size_t)sparse_slots_for(window, bins) * 4 <= 64 * 1024) sparse = t;
  }
  if (dense && window * window <= 256)
    choice = {HIST_BYTE_SHARED, bytes, 0, 0, 2, 0};
  else if (dense)
    choice = {HIST_DENSE_SHARED, dense, 0, 0, 2, 0};
  else if (sparse)
    choice = {HIST_SPARSE_SHARED, sparse, 0, 0, 2, 0};
  const size_t row_bytes = (size_t)ring_row_quads(choice.threads + window - 1) * 8;
  choice.ring_rows = (size_t)(window + 2) * row_bytes <= 32 * 1024 ? window + 2 : 2;
  const int64_t strips = (width + choice.threads - 1) / choice.threads;
  int64_t rows = max64(2 * (int64_t)window, 32);
  while (rows > 8 && frames * strips * ((height + rows - 1) / rows) < 512)
    rows = max64(rows / 2, 8);
  choice.segment_rows = rows;
  return lay_out(frames, height, width, window, bins, choice);
}

/* The shape's field that the cuda tunable `name` sets (listed by plume/tuning.h), or NULL. */
int *shape_field(plm__entropy_cuda_shape *shape, const char *name) {
  if (std::strcmp(name, "max_block_threads") == 0) return &shape->max_threads;
  if (std::strcmp(name, "segment_windows") == 0) return &shape->segment_windows;
  if (std::strcmp(name, "min_tasks") == 0) return &shape->min_tasks;
  if (std::strcmp(name, "changes_at_once") == 0) return &shape->changes_at_once;
  if (std::strcmp(name, "atomic_counts") == 0) return &shape->atomic_counts;
  return nullptr;
}

struct ShapeCase {
  plm__entropy_cuda_shape shape;
  std::string name; /* "segment_windows=4" */
  bool changes;     /* the plan differs from the default's for some input */
};

/* The shapes to check, from op's cuda tunables as the public API lists them: each
 * candidate alone (the others at their defaults), then the extremes. Adds to *failures
 * what the listing gets wrong (a tunable the shape does not know, a default that is not
 * the shape's, other than `expected` of them: entropy lists all five, the fused op all
 * but atomic_counts). */
std::vector<ShapeCase> shapes_of(const char *op_name, int expected, int *failures) {
  std::vector<ShapeCase> shapes;
  int op = -1;
  for (int k = 0; k < plm_op_count(); k++) {
    plm_op_info info;
    CHECK(plm_op_info_get(k, &info));
    if (std::strcmp(info.name, op_name) == 0) op = k;
  }
  int count = 0, listed = 0;
  CHECK(plm_op_tunable_count(op, &count));
  for (int k = 0; k < count; k++) {
    plm_tunable_info t;
    CHECK(plm_op_tunable_info_get(op, k, &t));
    if (t.backend != PLM_BACKEND_CUDA) continue;
    plm__entropy_cuda_shape shape = kDefaultShape;
    int *field = shape_field(&shape, t.name);
    if (!field || *field != t.fallback) {
      std::printf(
          "%s's cuda tunable %s: no field of the launch shape, or not its default  "
          "WRONG\n",
          op_name, t.name);
      ++*failures;
      continue;
    }
    listed++;
    for (int c = 0; c < t.candidate_count; c++) {
      *field = (int)t.candidates[c];
      shapes.push_back({shape, std::string(t.name) + "=" + std::to_string(t.candidates[c]),
                        t.candidates[c] == t.fallback});
    }
  }
  if (listed != expected) {
    std::printf("%s lists %d of the launch shape's cuda tunables, not %d  WRONG\n", op_name,
                listed, expected);
    ++*failures;
  }
  shapes.push_back({kSmallestShape, "all smallest", false});
  shapes.push_back({kLargestShape, "all largest", false});
  return shapes;
}

/* What a plan of a shape must be, given the default shape's plan d; empty when it is. */
std::string plan_problem(const plan &p, const plan &d, const plm__entropy_cuda_shape &shape,
                         int64_t frames, int64_t height, int64_t width, int window, int bins) {
  if (p.hist != d.hist) return "another kind of histogram";
  if (p.threads < kMinThreads || p.threads > std::max(shape.max_threads, kMinThreads) ||
      (p.threads & (p.threads - 1)) != 0)
    return "threads not a power of two in 32..max_block_threads";
  const size_t each = p.hist == HIST_BYTE_SHARED     ? byte_bytes(bins)
                      : p.hist == HIST_DENSE_SHARED  ? dense_bytes(bins)
                      : p.hist == HIST_SPARSE_SHARED ? (size_t)p.sparse_slots * 4
                                                     : 0;
  const size_t budget = p.hist == HIST_SPARSE_SHARED ? kSparseBudget : kDenseBudget;
  if ((size_t)p.threads * each > budget) return "histograms past their budget";
  if (p.threads < std::min(shape.max_threads, kMaxThreads) && 2 * p.threads * each <= budget)
    return "fewer threads than fit";
  /* Past 48 KiB the launch opts in; sm_80 allows up to 163 KiB, sm_90 227 KiB. */
  if (p.smem > kRingBudget + kSparseBudget + kDeltaBudget || p.smem > 163 * 1024)
    return "shared memory past the budgets";
  if (p.ring_bytes > kRingBudget) return "the ring past its budget";
  if (p.ring_rows != window + 2 && p.ring_rows != 2) return "a ring of neither w + 2 nor 2 rows";
  /* From segment_windows x max(w, 16) rows, halved (down to 8) while too few tasks. */
  auto tasks = [&](int64_t rows) { return frames * p.strips * ((height + rows - 1) / rows); };
  int64_t rows = (int64_t)shape.segment_windows * max64(window, kSegmentUnit);
  while (rows > p.segment_rows && tasks(rows) < shape.min_tasks)
    rows = max64(rows / 2, kMinSegmentRows);
  if (rows != p.segment_rows || (rows > kMinSegmentRows && tasks(rows) < shape.min_tasks))
    return "segments not as the shape says";
  if (p.strips * p.threads < width || p.segments * p.segment_rows < height ||
      p.tasks != frames * p.strips * p.segments)
    return "tasks that do not cover the output";
  if (p.blocks < 1 || p.blocks > p.tasks || p.scratch > kGlobalHistBudget)
    return "blocks or scratch out of bounds";
  if (p.atomic_counts != (shape.atomic_counts == 1 && (p.hist == HIST_BYTE_SHARED ||
                                                       p.hist == HIST_DENSE_SHARED)))
    return "atomic counts where the shape or the kind does not take them, or not where they do";
  return "";
}

/* Every shape of op's tunables on inputs across the ranges: windows 1..255, bin counts
 * 1..65536 (u8's 256 or fewer, u16's up to 65536, f32's and the fused op's any), frames
 * from 1 x 1 to 4096 x 4096 and tall, wide and many. */
int check_shapes(const char *op_name, int tunables) {
  int failures = 0;
  std::vector<ShapeCase> shapes = shapes_of(op_name, tunables, &failures);
  const int windows[] = {1, 2, 5, 9, 16, 17, 18, 19, 31, 32, 64, 80, 81, 128, 200, 255};
  const int bin_counts[] = {1, 2, 64, 128, 129, 256, 257, 512, 513, 1000, 4096, 65535, 65536};
  const int64_t frame_shapes[][3] = {{1, 1, 1},       {1, 64, 96},   {1, 512, 512}, {4, 256, 1024},
                                     {1, 4096, 4096}, {3, 1000, 37}, {1, 7, 5000},  {16, 480, 640}};
  int64_t plans = 0, reproduced = 0, compared = 0;
  for (int window : windows)
    for (int bins : bin_counts)
      for (const auto &f : frame_shapes) {
        const plan d = make_plan(f[0], f[1], f[2], window, bins, kDefaultShape);
        compared++;
        if (same_plan(d, todays_plan(f[0], f[1], f[2], window, bins))) {
          reproduced++;
        } else if (failures < 20) {
          std::printf(
              "%s %lldx%lldx%lld w %d bins %d: the default shape's plan is not "
              "today's  WRONG\n",
              op_name, (long long)f[0], (long long)f[1], (long long)f[2], window, bins);
          failures++;
        }
        for (ShapeCase &s : shapes) {
          const plan p = make_plan(f[0], f[1], f[2], window, bins, s.shape);
          plans++;
          s.changes = s.changes || !same_plan(p, d);
          const std::string problem = plan_problem(p, d, s.shape, f[0], f[1], f[2], window, bins);
          if (problem.empty()) continue;
          if (failures++ < 20)
            std::printf("%s %s, %lldx%lldx%lld w %d bins %d: %s (%s)  WRONG\n", op_name,
                        s.name.c_str(), (long long)f[0], (long long)f[1], (long long)f[2], window,
                        bins, problem.c_str(), describe(p).c_str());
        }
      }
  for (const ShapeCase &s : shapes)
    if (!s.changes) {
      std::printf("%s %s: the same plan as the default's for every input  WRONG\n", op_name,
                  s.name.c_str());
      failures++;
    }
  std::printf(
      "%s: %lld plans of %zu launch shapes valid, the default's today's on %lld of %lld "
      "inputs%s\n",
      op_name, (long long)plans, shapes.size(), (long long)reproduced, (long long)compared,
      failures ? "  FAILED" : "");
  return failures;
}

}  // namespace

int main() {
  int failures = check_tables();
  failures += check_make_plan(1, 512, 512, 16, 256, HIST_BYTE_SHARED, 128);   /* u8 */
  failures += check_make_plan(1, 4096, 4096, 16, 256, HIST_BYTE_SHARED, 128); /* big */
  failures += check_make_plan(1, 512, 512, 9, 64, HIST_BYTE_SHARED, 128);     /* fused */
  failures += check_make_plan(1, 512, 512, 17, 256, HIST_DENSE_SHARED, 64);   /* w > 16 */
  failures += check_make_plan(1, 512, 512, 16, 512, HIST_BYTE_SHARED, 64);
  failures += check_make_plan(1, 512, 512, 16, 513, HIST_SPARSE_SHARED, 32);
  failures += check_make_plan(1, 512, 512, 16, 65536, HIST_SPARSE_SHARED, 32); /* u16 */
  failures += check_make_plan(1, 512, 512, 18, 65536, HIST_SPARSE_SHARED, 32);
  failures += check_make_plan(1, 512, 512, 19, 65536, HIST_DENSE_GLOBAL, 128);
  failures += check_make_plan(1, 512, 512, 5, 1000, HIST_SPARSE_SHARED, 128); /* 37 slots: 64 */
  failures += check_make_plan(1, 512, 512, 255, 256, HIST_DENSE_SHARED, 64);  /* two-row ring */
  failures += check_make_plan(1, 1, 1, 1, 256, HIST_BYTE_SHARED, 128);
  failures += check_shapes("entropy", 5);
  failures += check_shapes("sobel_entropy_threshold", 4);
  failures += check_each_bin_pair();

  plm_context_config config = {};
  config.backend = PLM_BACKEND_HOST;
  Host host = {};
  CHECK(plm_context_create(&config, &host.ctx));
  CHECK(plm_stream_create(host.ctx, PLM_STREAM_DEFAULT, &host.stream));
  CHECK(plm_context_default_pool(host.ctx, &host.pool));

  /* Shapes with one and several strips and segments, windows past the frame, even
   * windows, odd bin counts; each kind of histogram by plans_for. */
  const Case entropy_cases[] = {
      {PLM_DTYPE_U8, 1, 1, 1, 3, 256, 0, false},
      {PLM_DTYPE_U8, 3, 66, 7, 5, 256, 256, false},
      {PLM_DTYPE_U8, 1, 65, 40, 2, 256, 4, false},
      {PLM_DTYPE_U8, 2, 37, 130, 16, 16, 0, false},
      /* Full windows in one bin, w = 16: byte counts at 256, held as 0 (ByteHist), and
       * back (255 after a row leaves, 256 again when the next enters). */
      {PLM_DTYPE_U8, 1, 40, 45, 16, 1, 0, false},
      {PLM_DTYPE_U8, 1, 45, 40, 16, 256, 1, false},
      {PLM_DTYPE_U8, 1, 40, 40, 16, 2, 0, false}, /* two bins, fills summed */
      {PLM_DTYPE_U16, 2, 70, 11, 16, 65536, 65536, false},
      {PLM_DTYPE_U16, 1, 70, 9, 1, 65536, 3, false},
      {PLM_DTYPE_U16, 1, 40, 33, 33, 1000, 0, false},
      {PLM_DTYPE_U16, 1, 20, 30, 4, 65535, 65536, false},
      {PLM_DTYPE_U16, 1, 70, 4, 255, 65536, 2, false},
      {PLM_DTYPE_F32, 1, 29, 36, 8, 4096, 1000, false},
      {PLM_DTYPE_F32, 2, 23, 41, 7, 64, 0, true},
      {PLM_DTYPE_F32, 1, 30, 20, 3, 300, 17, true},
      {PLM_DTYPE_U16, 1, 40, 30, 33, 65536, 0, false}, /* warp-owned histograms */
      {PLM_DTYPE_F32, 2, 20, 9, 25, 1000, 0, true},
  };
  for (const Case &c : entropy_cases) failures += check_entropy(host, c);
  /* Whole windows of one bin in each byte of a count word (w = 16, 256 bins): bands of
   * 20 rows of value v, then v + 1, ... With atomic counts the bin's 256th pixel carries
   * into the next byte (bin v + 1's, or out of the word for v = 3 mod 4: nothing to
   * mend, and a mend there would shift by 32) and its first leaving one borrows from it,
   * each mended at once. (Unmended, a carry and its borrow cancel, but a summed fill of
   * a full window then reads a count of 1 in the next byte: the bins-1 case above.) */
  for (uint32_t first = 0; first < 4; first++) {
    const Case c = {PLM_DTYPE_U8, 1, 80, 40, 16, 256, 4, false};
    const Bands bands = {first, 20};
    failures += check_entropy(host, c, false, &bands);
  }

  const Case fused_cases[] = {
      {PLM_DTYPE_U8, 1, 1, 1, 1, 64, 0, false},
      {PLM_DTYPE_F32, 1, 1, 40, 3, 200, 0, false},
      {PLM_DTYPE_U16, 1, 40, 1, 4, 400, 0, false},
      {PLM_DTYPE_U8, 1, 7, 13, 2, 600, 0, false},
      {PLM_DTYPE_F32, 2, 37, 29, 5, 64, 0, false},
      {PLM_DTYPE_U8, 2, 37, 29, 16, 200, 0, false},
      {PLM_DTYPE_U16, 2, 37, 29, 33, 400, 0, false},
      {PLM_DTYPE_F32, 1, 30, 150, 2, 64, 0, false},
      {PLM_DTYPE_U8, 1, 30, 70, 16, 65536, 0, false},
      {PLM_DTYPE_U16, 3, 20, 33, 8, 7, 0, false},
      {PLM_DTYPE_F32, 1, 20, 33, 255, 64, 0, false},
      {PLM_DTYPE_F32, 1, 40, 70, 16, 64, 0, false}, /* bench_ops' fused: fills summed */
      {PLM_DTYPE_U8, 1, 40, 45, 16, 1, 0, false},   /* full windows in one bin, summed */
  };
  int index = 0;
  for (const Case &c : fused_cases) failures += check_fused(host, c, index++);

  /* Counts near the most a window holds (255 * 255 = 65025): one or two values over
   * a frame larger than the window, whole-frame segments to keep it short. */
  for (uint32_t levels = 1; levels <= 2; levels++) {
    const Case c = {PLM_DTYPE_U16, 1, 260, 258, 255, 65536, levels, false};
    failures += check_entropy(host, c, true);
  }

  CHECK(plm_stream_destroy(host.stream));
  CHECK(plm_context_destroy(host.ctx));
  std::printf(failures ? "FAILED: %d\n" : "all cases passed\n", failures);
  return failures ? 1 : 0;
}

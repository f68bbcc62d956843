/* kernels/cuda/entropy.cu: local entropy on the GPU, for two ops, one kernel template
 * (window_kernel<Source, Sink, Hist>):
 *   - entropy: the bins of the input (u8, u16, f32), the entropy out (f32);
 *   - sobel_entropy_threshold (fused): the bins of the Sobel magnitude, computed on
 *     chip, a mask out; neither the magnitude nor the entropy reaches global memory.
 *
 * The work. A block of T threads (32, 64 or 128) owns a strip of T output columns of
 * one frame, one column per thread, and takes tasks (frame, strip, segment of R rows)
 * in a grid-stride loop. For a task each thread fills its window's histogram for the
 * segment's first row, then slides down its column: per row it takes out the row of
 * the window that leaves and adds the row that enters (2w count changes), keeping
 * S = sum c log2 c in 32.32 fixed point by one lookup per change in the table of
 * differences (kernels/common/entropy.h), and writes its output. So S is the CPU's
 * integer, and every output the CPU's bits.
 *
 * Bins once per pixel. The block bins each input row a task needs once, into a ring
 * of w + 2 rows of T + w - 1 bins in shared memory (u16, four to an 8-byte quad, and a
 * spare quad: BinQuad, ring_row_quads): one thread computes a bin (entropy: a u8/u16
 * value scaled by a multiply and a shift, an f32 through the frame's range; fused: the
 * Sobel magnitude of nine pixels read through the border rule, binned with the fixed
 * range) and the w threads whose windows cover it read it, four bins to an 8-byte load
 * (each_bin_pair). A task bins its first window's rows and one row per output row after:
 * each input pixel is binned (R + w - 1) / R x (T + w - 1) / T times in all (1.6 for
 * R = 32, T = 128, w = 16, 1.8 at T = 64; the halo). A step reads w + 1 rows; the ring's one more
 * makes the slot a step writes one last read two steps before, so one barrier a step,
 * after its staging, orders its readers after its writers and its writers after those
 * readers. When w + 2 rows do not fit the ring's budget (32 KiB: w past 76 at T = 128,
 * past 97 at T = 64) the ring is two rows, entering and leaving, every row is binned twice as
 * often, and a step takes two barriers.
 *
 * The launch shape is tunable per device (plm__entropy_cuda_shape, kernels/common/
 * entropy.h: both ops' cuda tunables max_block_threads, segment_windows, min_tasks and
 * changes_at_once, and the entropy op's atomic_counts ("Atomic counts" below), resolved
 * once per call or pipeline step and passed in the op's args):
 * T is the most threads, up to max_block_threads, whose histograms fit the budget of the
 * kind below (the kind itself is chosen as at 32 threads, so no candidate changes it, and
 * every candidate fits every input), R the segments' rows below, and changes_at_once the
 * count changes a thread has in flight (change_pair: 2, each pair's words loaded before
 * either is stored; 1, each change's load after the last store). The defaults (128, 2,
 * 512) are the shape plume launched before it was tunable; changes_at_once's, 2, is
 * newer (1 before): a bet that the chain of dependent shared accesses, not the issue of
 * instructions (two more a change), binds the kernel on a GPU, which `plume tune`
 * settles per device. The entropy op's warp-owned histograms (below) have a fixed shape
 * of their own.
 *
 * Histograms, one per thread, the kind chosen per launch (make_plan):
 *   byte shared    a u8 count per bin in shared memory, four bins to a 32-bit word,
 *                  for windows of at most 256 pixels (w <= 16; a full window's one
 *                  count of 256 held as 0: ByteHist), wherever u16 counts would fit
 *                  (up to 512 bins), with the most threads whose T bins fit 32 KiB:
 *                  u8's 256 at T = 128 (u16: 64), the fused op's 64 at 128. Not past
 *                  512 bins, where T = 32 would hold fewer warps than the sparse kind.
 *   dense shared   a u16 count per bin in shared memory, two bins to a 32-bit word,
 *                  each thread's words in its own bank (DenseHist: no bank conflicts
 *                  between a warp's updates; the byte kind's layout too), for larger
 *                  windows, when T bins 2 bytes fit 32 KiB, T >= 32: up to 512 bins
 *                  (u8's 256 at T = 64). With the ring and the
 *                  differences a block may pass the 48 KiB a kernel gets without
 *                  asking (32 KiB of histograms and a window past about 24): the
 *                  launch then opts in, as for the sparse kind (the budgets add up to
 *                  104 KiB; the largest plan takes about 69 KiB).
 *   sparse shared  more bins (u16 value-as-bin: 65536) but a small window: a window
 *                  holds at most min(bins, w^2) distinct bins, so each thread keeps an
 *                  open-addressing table of (bin, count) pairs, u32 each, P of them,
 *                  the power of two >= 1.5 times that (linear probing; an entry whose
 *                  count falls to 0 is removed by shifting back the entries after it,
 *                  so dead keys never fill the table), when T P 4 bytes fit 64 KiB
 *                  (the kernel opts in to the shared memory past 48 KiB): w <= 18 at
 *                  T = 32.
 *   global         neither fits (more than 512 bins and a larger window): the entropy
 *                  op gives each warp one histogram in global memory, its lanes sharing
 *                  the count changes (warp_kernel, "warp-owned histograms" below); the
 *                  fused op a u16 count per bin per thread in global scratch, bin b of
 *                  thread t in word (b / 2) (threads in the grid) + t, the grid capped
 *                  so that they take at most 64 MiB. Either is zeroed by one memset per
 *                  launch. Slow; correct.
 * Taking out the leaving row before adding the entering one bounds the counts by w^2
 * and the distinct bins by min(bins, w^2). Each task starts from a zeroed histogram:
 * a shared one is zeroed at the task's start, a store per word of counts (cheaper
 * than w^2 take-outs; at the start, so that no block zeroes after its last task), a
 * global one has the task's last window taken out at its end (cheaper than zeroing 2
 * bins bytes; the launch's memset zeroes it for the first). The table of differences
 * is the host's (plm__entropy_delta_table), compiled into the device data (device_delta,
 * 510 KiB, loaded with the module: no call copies it, so any call may be captured into
 * a graph). The differences a window reaches (counts up to w^2)
 * are copied into shared memory at the start of each block when they take at most
 * 8 KiB (w <= 31); beyond, the lookups go to the device's table (L1, L2).
 * A summed fill (fill_summed: a byte or dense shared histogram, the differences in shared
 * memory, and 3 bins < 2 w^2, as the fused op's 64 bins at w = 16): a task fills its
 * first window with counts alone and then sums S = sum clogc(count) over its bins from
 * a table of c log2 c (device_clogc: the sums of the differences, so the CPU's integers;
 * compiled in beside them and copied into shared memory beside them), bins / 4 word loads
 * (bins / 2 for u16 counts) and bins lookups instead of a difference per pixel of the
 * window (w^2).
 *
 * Segments: R = segment_windows x max(w, 16) rows (by default max(2w, 32)), halved
 * (down to 8) while the launch has fewer than min_tasks tasks (by default 512), so that
 * one small frame still spreads over the GPU. A task costs w^2 count changes to fill
 * its first window, then 2w per row: 2w + w^2 / R per pixel, against the 2w of a pure
 * slide (40 against 32 for w = 16, R = 32).
 *
 * Cost model per pixel (entropy, u8 in, f32 out, w = 16, byte shared, T = 128, R = 32):
 *   DRAM: 1 byte read (halo rereads hit L2) and 4 written: 5 B. The memory floor is
 *   84 MB / 3.35 TB/s = 25 us at 4096^2 (H100 SXM), 0.4 us at 512^2, where a launch
 *   (a few us) dominates.
 *   On chip, the shared-memory pipe (one wavefront a clock per SM; the CUDA emulator
 *   counts them, emu/README.md): a count change is a load and a store of the count's
 *   byte (each lane in its own bank: one wavefront each) and a load of a difference
 *   (8 bytes, random, but a warp's counts are few and small: 1.0 to 1.15 wavefronts
 *   counted), and its bin comes four to a load (floor(w/4) + 1 loads for w bins, or one
 *   more: 0.31 a change at w = 16, where two to a 32-bit load were 0.56): 3.31 wavefronts
 *   a change. A task adds bins / 4 stores to zero its histogram (bins / 2 for u16
 *   counts) and about 1.3 stores a staged row per warp. At R = 32: 40 changes,
 *   (40 x 3.31 + 64 / 32 + 1.3 x 47 / 32) / 32 = 4.26 wavefronts a pixel, 16.7 M x 4.26 /
 *   132 SMs / 1.98 GHz = 0.27 ms at 4096^2, 11x the floor (4.6 wavefronts and 12x with
 *   two bins a load; the emulated estimate at 2048^2: 72.8 -> 68.3 us for the shared
 *   pipe, 11.6x -> 10.9x, and 67.0 us, 10.7x, with byte counts at T = 128,
 *   docs/benchmarks.md). At 512^2 one frame's 256 tasks (512 at T = 64) cut R to 8
 *   (min_tasks), so the fill is more than half the changes (w^2 / R = 32 of 60 a pixel):
 *   the emulated estimate there is 6.72 us for the shared pipe, 17x the floor
 *   (docs/benchmarks.md; 7.05 us with u16 counts at T = 64, 7.4 with two bins a load,
 *   and 9.7 us, 4 wavefronts a change and two clears of a u16 store per bin, before the
 *   pair loads, word clears and the clear at the start).
 *   What bounds this design: 2w + w^2 / R changes a pixel is the least an exact
 *   sliding histogram does, and each must read and write its count and read a
 *   difference; no redesign of the layout takes a change below 3 wavefronts. Levers
 *   weighed and left, and why:
 *   - equal leaving and entering bins of a column cancel without touching the
 *     histogram, but a warp issues the change whenever one lane's pair differs (all 32
 *     equal is rare on imagery, never on the benchmark's random input); a skip per lane
 *     would only look cheaper to the emulator, which groups a site's k-th executions per
 *     lane, not per iteration, and so undercounts divergent code;
 *   - the differences of small counts in registers: the same divergence, per datum;
 *   - the bins through warp shuffles instead of loads: a shuffle takes the same pipe
 *     and issue slot a shared load does (the emulator now charges it there too: a 32-bit
 *     shuffle a clock, as a wavefront);
 *   - the differences as 32-bit halves: two requests where one 8-byte load (a warp's
 *     16 or fewer distinct counts: one wavefront) serves;
 *   - longer segments at 512^2 with half the threads (T = 32, R = 16, the same 512
 *     tasks: 46 changes a pixel, not 60) would lower the estimate but halve the warps
 *     and lengthen each thread's chain of dependent changes (736, not 480), which is
 *     what a single 512^2 frame waits on on a GPU (latency: not in the estimate);
 *   - longer segments where a frame has tasks to spare (R = 64 at 4096^2: 36 changes a
 *     pixel, not 40, about 10% of the count) by default: 2,048 blocks where 4,096 are,
 *     about 3 waves of an H100's 660 (5 blocks of 128 an SM), a trade
 *     of fewer fills against coarser waves that the estimate does not see; the cuda
 *     tunable segment_windows lets `plume tune` take it on the device (on the H200, at
 *     its small size, every candidate timed within the noise of the default).
 *   Taken: byte counts (ByteHist, w <= 16), which halve the clear and the histograms'
 *   shared memory, not the wavefronts a change, but let twice the threads into a block
 *   (below, "Occupancy"). The summed fill (above), for few bins: the fused op's shared
 *   pipe at 512^2 6.5 us instead of 7.1 (it is then bound by the L2 at 6.7 us: the Sobel
 *   taps' reads of the input, 9 a binned pixel).
 *   Fused adds the Sobel magnitude (9 loads, ~20 flops) per binned pixel and writes 1
 *   byte instead of 4.
 *   Launches per frame: 1, plus frame_range's 1 or 2 for f32 with auto range
 *   (kernels/common/frame_range.h), plus a memset with global histograms.
 *   Occupancy: u8's 256 bins in byte counts at T = 128 take 32 KiB of histograms,
 *   5 KiB of ring and 2 KiB of differences: 5 blocks (640 threads, 20 warps) per SM,
 *   as many as the registers let in. Until 2026-12-05 they were u16 counts at T = 64
 *   (32 KiB of histograms, 3 KiB of ring): 6 blocks, 12 warps, bounded by shared
 *   memory, which the H200 ran at 4.5x the shared pipe's bound (below): more warps
 *   an SM to hide each thread's chain of dependent changes, the same wavefronts a
 *   change (a byte's load and store where a u16 word's were), one more instruction
 *   a removal (the count modulo 256). Not yet timed on a GPU.
 *   Registers: __launch_bounds__(128, 5), at most 96 a thread (65,536 / (5 x 128),
 *   rounded down to the allocation's multiple of 8: 5 blocks of 128 threads, 10 of 64,
 *   per SM by the register file), at which no kind or source spills: ptxas 13.0 for sm_90
 *   gives the fused byte and dense variants 96 registers, fused sparse 96, entropy byte
 *   96, dense 90 and sparse 90 since the byte counts came (dense 92 before), 92 and 90
 *   with its bins four to a load (entropy dense 96 two to a load), 96 and 90
 *   with RowAhead (below), 90 and 90 before it with both changes_at_once paths
 *   (84 and 86 with one; sm_80 before them: 88,
 *   88, 86, 82; unbounded they took 88, 96, 58, 62 for sm_90, 96, 100, 72, 74 for sm_80:
 *   under the bound ptxas spends registers it may have; the loops over a histogram's
 *   words are kept rolled, PLM_ROLLED, and the summed fill shares add_row's loop,
 *   fill_row: otherwise entropy dense took 90 to 92).
 *   It was (128, 8), a 64-register cap at which three
 *   of the four spilled for sm_90 (fused dense 52 bytes stored and 28 loaded, fused
 *   sparse 48 and 56, entropy dense 20 and 28; sm_80: 40 and 20, 40 and 72, 12 and 16):
 *   room by registers for 8 blocks of 128 where shared memory lets in 6 of 64 for u8
 *   (above), bought with local-memory traffic in the inner loop. Their budgets (the
 *   build fails past them, or on any spill): kernels/cuda/register_budgets.txt.
 * Measured on an H200 (benchmarks/results/2026-12-04-h200-d834510, bench_ops, u8, w = 16,
 * commit d834510): 63 us at 512^2, 1,316 us at 4096^2: 4.5 times the shared pipe's bound
 * above (0.29 ms) and 38 times bench_ops' floor. So the pipe's throughput is not what
 * binds it on a GPU; what the model leaves out is: each thread's changes are a chain (a
 * count's load, its add and store before the next change's load of a count that may be
 * the same), with 12 warps an SM to hide it, and every instruction of a change is on
 * that path. Not yet profiled (no counters were read in that window). Since, a change's
 * address is 32-bit arithmetic in shared space (DenseCounts): 15 SASS instructions a
 * change for sm_90 where there were 16 (add_row over 17 bins in a probe kernel, cubin
 * text / 16 bytes), the dense entropy kernel 3,344 instructions where it was 3,592 and
 * 84 registers where it took 88: small steps on that path, not yet timed on a GPU.
 * The other chain is DRAM's: each step staged its entering row (stage_row: a load, then a
 * store to the ring) and then waited at its barrier for every thread's load, a DRAM round
 * trip a step, and a task's first window staged row after row, `window` round trips in a
 * row. Now a task's first window is staged with kStageBatch bins in flight a thread
 * (stage_rows, kernels/cuda/stage.h), and a step loads the next step's entering row
 * before it changes its counts, binning and storing it at the next step (RowAhead: the
 * entropy op's raw pixels, so that its loads overlap the changes; the fused op's bins,
 * which need their loads at once). Registers for sm_90: entropy dense 96, sparse 90,
 * fused 96 (the bound's cap), no spill. Not yet timed on a GPU. Then the bins came four
 * to an 8-byte load (each_bin_pair): 5 loads for a row of 16 bins where there were 9,
 * the dense entropy kernel 5,496 instructions of text where it had 6,720 (fused dense
 * 20,232 where 21,160; sparse, which ptxas lays out otherwise, 7,768 where 5,296), 90
 * registers where it took 96 (92 since a row's spare quad is staged as zeros, not binned:
 * StagedColumns; the fused op's L2 bound at 512^2 6.74 -> 6.46 us, its Sobel taps' loads
 * 30.0 -> 29.2 MB).
 *
 * Atomic counts (the entropy op's cuda tunable atomic_counts, 0 by default): a change
 * of a shared histogram's count by one shared-memory atomic add that returns the word
 * before (AtomicCounts, below), not a load and a store. One access of the pipe where
 * there were two, and no chain through memory between a thread's changes, which is what
 * the H200's 4.5x points at. By the emulated estimate for an H100 (which charges a shared
 * atomic one step of the pipe, as a wavefront): entropy u8 w = 16 at 2048^2 66.96 ->
 * 47.40 us, 10.7x -> 7.6x the floor (docs/benchmarks.md, "Atomic counts"). Not the
 * default until a GPU has timed what an ATOMS costs beside a load and a store; `plume
 * tune` does. Kernels of their own (window_kernel<AtomicCounts<...>>, 94 registers for
 * byte counts and 96 for u16, no spill): the load-and-store ones keep their registers,
 * and the fused op has none (its kernel spilled with them: 28 to 36 bytes).
 *
 * The host check: tests/test_entropy_cuda_logic.cpp compiles this file as plain C++
 * (hence the __CUDACC__ guards around what only nvcc knows) and runs run_block for
 * both sources and every kind of histogram, each block's threads emulated by threads
 * meeting at a barrier, against the CPU kernels bit for bit. tests/test_entropy.c and
 * tests/test_fused.c check the kernels themselves under PLUME_BACKEND=cuda.
 */
#include "kernels/common/entropy.h"
#include "kernels/common/frame_range.h"
#include "kernels/common/fused.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/stage.h"

namespace {

typedef plm__sobel_entropy_threshold_args fused_args;

constexpr int kMaxThreads = 128;
constexpr int kMinThreads = 32;
constexpr size_t kDenseBudget = 32 * 1024;  /* byte or dense shared histograms per block */
constexpr int64_t kByteCountsMost = 256;    /* pixels in a window, for byte counts */
constexpr size_t kSparseBudget = 64 * 1024; /* sparse ones (past 48 KiB in all: an opt-in) */
constexpr size_t kRingBudget = 32 * 1024;          /* staged bins per block */
constexpr size_t kDeltaBudget = 8 * 1024;          /* differences copied per block */
static_assert(kDeltaBudget / sizeof(int64_t) <= PLM__ENTROPY_CLOGC_COUNT,
              "a summed fill's c log2 c must be in the device's table (device_clogc)");
constexpr size_t kGlobalHistBudget = size_t(64) << 20;
constexpr int64_t kMinSegmentRows = 8;
constexpr int64_t kSegmentUnit = 16; /* R = segment_windows x max(w, kSegmentUnit) */
static_assert(PLM__ENTROPY_CUDA_MAX_THREADS <= kMaxThreads, "the launch bounds cap the threads");
constexpr int64_t kMaxBlocks = 65535LL * 32;
constexpr size_t kAlign = 16;

PLM_HD int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

PLM_HD int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

size_t round_up(size_t bytes, size_t to) {
  return (bytes + to - 1) / to * to;
}

/* ---- the launch plan ------------------------------------------------------------------ */

enum hist_kind { HIST_BYTE_SHARED, HIST_DENSE_SHARED, HIST_SPARSE_SHARED, HIST_DENSE_GLOBAL };

struct plan {
  hist_kind hist;
  int threads;          /* per block: the columns of a strip */
  int window, span;     /* span: staged bins per row, threads + window - 1 */
  int row_quads;        /* a staged row's quads, four bins each: ring_row_quads */
  int ring_rows;        /* window + 2 (each row binned once per task) or 2 */
  int sparse_slots;     /* P, a power of two (sparse shared) */
  int delta_entries;    /* differences in shared memory; 0: read from the global table */
  int clogc_entries;    /* c log2 c in shared memory, for fills summed from their counts */
  int changes_at_once;  /* 1 or 2: the counts a thread loads before storing (add_two) */
  int64_t segment_rows; /* output rows per task */
  int64_t strips, segments, tasks;
  unsigned blocks;
  bool atomic_counts; /* an atomic a change: AtomicCounts (byte and dense shared kinds) */
  size_t ring_bytes, hist_bytes, delta_bytes, clogc_bytes; /* the shared memory, in order */
  size_t smem;                                /* in all */
  size_t scratch;                             /* global histograms, bytes */
};

/* The most threads of a block up to `most`: a power of two, kMinThreads..kMaxThreads
 * (kMinThreads when `most` is below). */
int threads_at_most(int most) {
  int t = kMaxThreads;
  while (t > kMinThreads && t > most) t /= 2;
  return t;
}

/* The most threads (a power of two, kMinThreads..threads_at_most(most)) whose
 * histograms of `each` bytes fit `budget`; 0 when not even kMinThreads do. */
int threads_fitting(size_t each, size_t budget, int most) {
  for (int t = threads_at_most(most); t >= kMinThreads; t /= 2)
    if ((size_t)t * each <= budget) return t;
  return 0;
}

/* How a histogram's counts pack into 32-bit words, Count wide: a u16 count two to a word
 * (DenseHist), a u8 count four (ByteHist), the last word part used when bins do not fill
 * it. DenseCounts keeps its counts so, and the plan sizes its histograms by the same words. */
template <class Count>
struct CountWords {
  static_assert(sizeof(Count) == 1 || sizeof(Count) == 2, "u8 or u16 counts");
  static constexpr int kPerWord = (int)(sizeof(uint32_t) / sizeof(Count));
  PLM_HD static int words(int bins) { return (bins + kPerWord - 1) / kPerWord; }
  static size_t bytes(int bins) { return (size_t)words(bins) * sizeof(uint32_t); }
};

/* The bytes of one histogram of u16 counts (dense) or of byte counts. */
size_t dense_bytes(int bins) {
  return CountWords<uint16_t>::bytes(bins);
}

size_t byte_bytes(int bins) {
  return CountWords<uint8_t>::bytes(bins);
}

/* Whether byte counts hold a window's: at most 256 pixels (ByteHist, w <= 16). */
bool bytes_hold(int window) {
  return (int64_t)window * window <= kByteCountsMost;
}

/* P for a window: the power of two >= 1.5 x the most distinct bins it holds. */
int sparse_slots_for(int window, int bins) {
  const int64_t distinct = min64(bins, (int64_t)window * window);
  int slots = 2;
  while (slots < distinct + distinct / 2 + 1) slots *= 2;
  return slots;
}

/* The quads (8-byte words of four bins, BinQuad) of a staged row of `span` bins: one
 * more than the span needs, so that a thread reading its window's bins four at a time
 * (each_bin_pair) may read the quad after its last bin's. */
PLM_HD inline int ring_row_quads(int span) {
  return (span + 3) / 4 + 1;
}

/* Whether a task fills its first window with counts alone and then sums S from them,
 * S = sum over the bins of clogc(count) (a table of c log2 c beside the differences),
 * rather than a difference per pixel: a dense shared histogram's bins / 2 words and
 * bins lookups against w^2 lookups, fewer when 3 bins < 2 w^2 (the fused op's 64 bins
 * at w = 16: 96 against 256; u8's 256 at w = 16: more). */
bool fill_summed(hist_kind hist, int window, int bins) {
  return (hist == HIST_DENSE_SHARED || hist == HIST_BYTE_SHARED) &&
         3 * (int64_t)bins < 2 * (int64_t)window * window;
}

/* What a plan is made of: the shape, and the choices make_plan makes (which the host
 * check also makes otherwise, to run every kind of histogram and ring on one input). */
struct plan_choice {
  hist_kind hist;
  int threads;          /* kMinThreads..kMaxThreads, a power of two */
  int ring_rows;        /* window + 2 or 2 */
  int64_t segment_rows; /* >= 1 */
  int changes_at_once;  /* 2, or 1 for anything else */
  int atomic_counts;    /* 1, or 0 for anything else */
};

plan lay_out(int64_t frames, int64_t height, int64_t width, int window, int bins,
             const plan_choice &choice) {
  plan p = {};
  p.hist = choice.hist;
  p.threads = choice.threads;
  p.window = window;
  p.span = p.threads + window - 1;
  p.row_quads = ring_row_quads(p.span);
  p.ring_rows = choice.ring_rows;
  p.changes_at_once = choice.changes_at_once == 2 ? 2 : 1;
  p.atomic_counts = choice.atomic_counts == 1 &&
                    (choice.hist == HIST_BYTE_SHARED || choice.hist == HIST_DENSE_SHARED);
  p.ring_bytes = round_up((size_t)p.ring_rows * (size_t)p.row_quads * sizeof(uint64_t), kAlign);
  if (p.hist == HIST_BYTE_SHARED) {
    p.hist_bytes = (size_t)p.threads * byte_bytes(bins);
  } else if (p.hist == HIST_DENSE_SHARED) {
    p.hist_bytes = (size_t)p.threads * dense_bytes(bins);
  } else if (p.hist == HIST_SPARSE_SHARED) {
    p.sparse_slots = sparse_slots_for(window, bins);
    p.hist_bytes = (size_t)p.threads * (size_t)p.sparse_slots * sizeof(uint32_t);
  }
  const size_t entries = (size_t)window * window + 1; /* counts 0 .. w^2 - 1 change */
  if (entries * sizeof(int64_t) <= kDeltaBudget) {
    p.delta_entries = (int)entries;
    p.delta_bytes = entries * sizeof(int64_t);
  }
  if (fill_summed(p.hist, window, bins) && p.delta_entries > 0) {
    p.clogc_entries = p.delta_entries;
    p.clogc_bytes = p.delta_bytes;
  }
  p.segment_rows = choice.segment_rows;
  p.strips = (width + p.threads - 1) / p.threads;
  p.segments = (height + p.segment_rows - 1) / p.segment_rows;
  p.tasks = frames * p.strips * p.segments;
  int64_t blocks = min64(p.tasks, kMaxBlocks);
  if (p.hist == HIST_DENSE_GLOBAL) {
    const size_t each = (size_t)p.threads * dense_bytes(bins);
    blocks = min64(blocks, max64((int64_t)(kGlobalHistBudget / each), 1));
    p.scratch = (size_t)blocks * each;
  }
  p.blocks = (unsigned)blocks;
  p.smem = p.ring_bytes + p.hist_bytes + p.delta_bytes + p.clogc_bytes;
  return p;
}

/* The launch's plan for a shape (the choices at the top of the file). A shape's value
 * out of its range is taken as the nearest in it (threads also down to a power of
 * two), so that any shape gives a valid plan. */
plan make_plan(int64_t frames, int64_t height, int64_t width, int window, int bins,
               const plm__entropy_cuda_shape &shape) {
  plan_choice choice = {};
  const int most = shape.max_threads;
  const size_t byte_each = byte_bytes(bins), dense_each = dense_bytes(bins);
  const size_t sparse_each = (size_t)sparse_slots_for(window, bins) * sizeof(uint32_t);
  if (bytes_hold(window) && threads_fitting(dense_each, kDenseBudget, kMinThreads) > 0) {
    choice.hist = HIST_BYTE_SHARED; /* where u16 counts fit, at up to twice their threads */
    choice.threads = threads_fitting(byte_each, kDenseBudget, most);
  } else if (threads_fitting(dense_each, kDenseBudget, kMinThreads) > 0) {
    choice.hist = HIST_DENSE_SHARED;
    choice.threads = threads_fitting(dense_each, kDenseBudget, most);
  } else if (threads_fitting(sparse_each, kSparseBudget, kMinThreads) > 0) {
    choice.hist = HIST_SPARSE_SHARED;
    choice.threads = threads_fitting(sparse_each, kSparseBudget, most);
  } else {
    choice.hist = HIST_DENSE_GLOBAL;
    choice.threads = threads_at_most(most);
  }
  const size_t row_bytes = (size_t)ring_row_quads(choice.threads + window - 1) * sizeof(uint64_t);
  choice.ring_rows = (size_t)(window + 2) * row_bytes <= kRingBudget ? window + 2 : 2;
  const int64_t strips = (width + choice.threads - 1) / choice.threads;
  const int64_t windows = max64(shape.segment_windows, 1), least_tasks = shape.min_tasks;
  int64_t rows = windows * max64(window, kSegmentUnit);
  while (rows > kMinSegmentRows && frames * strips * ((height + rows - 1) / rows) < least_tasks)
    rows = max64(rows / 2, kMinSegmentRows);
  choice.segment_rows = rows;
  choice.changes_at_once = shape.changes_at_once;
  choice.atomic_counts = shape.atomic_counts;
  return lay_out(frames, height, width, window, bins, choice);
}

/* ---- histograms (one per thread; __host__ __device__ for the host check) -------------- */

/* *word += v, returning the word before: one atomic on a GPU (a shared-memory one, ATOMS,
 * for the shared histograms, whose address space nvcc sees), a load and a store on the
 * host (the logic test; a thread's histogram is its own, so nothing else writes it). */
PLM_HD inline uint32_t fetch_add(uint32_t *word, uint32_t v) {
#ifdef __CUDA_ARCH__
  return atomicAdd(word, v);
#else
  const uint32_t before = *word;
  *word = before + v;
  return before;
#endif
}

/* Loops over a histogram's words (zeroing, summing) stay rolled (PLM_ROLLED): unrolled,
 * they take the entropy variants past their register budget for sm_90. */

/* A count per bin, Count wide (u16, or u8 for windows of at most 256 pixels), a thread's
 * bins packed into 32-bit words, kPerWord a word (bin b in word b / kPerWord, the lowest
 * bin in the lowest bits), its words `owners` apart (the block's threads in shared
 * memory, the grid's in global memory): thread t's word j is word j * owners + t, so in
 * shared memory a thread's counts are all in bank t mod 32 and a warp's updates never
 * conflict, whatever bins its lanes touch. base points at the thread's first word;
 * add/remove return the count before; clear stores a word per kPerWord bins. A word's
 * place from base, (b / kPerWord) owners, is below 2^24 (shared memory; the global
 * scratch is capped at 64 MiB), so it is 32-bit arithmetic, on the path of every change.
 *
 * A u16 count is changed by a load and a store of its word (adding or taking 1 << 16 for
 * the high half): it stays within 0..65025 (a window holds at most 255^2 pixels, and a
 * row leaves before the next enters), so a change never carries or borrows into the
 * other half. A u8 count is changed by a load and a store of its own byte (an unsigned
 * char, which may alias the words clear and sum read), modulo 256: byte counts serve
 * windows of at most 256 pixels (w <= 16: kByteCountsMost), where one count does not fit,
 * 256 (a full 16 x 16 window in one bin), and is held as 0. No add sees it (that bin
 * holds the whole window, so nothing enters before a row leaves), a remove reads it as
 * 256 (its count after, (0 - 1) mod 256, is 255), and sum() takes a histogram that reads
 * all zeros for the one full bin (a window is never empty). So every change reads the
 * true count, and byte counts halve a histogram's shared memory: for u8's 256 bins at
 * w = 16, 128 threads a block where 64 fitted, 20 warps an SM where 12 were (the header's
 * "Occupancy").
 *
 * Two types for the u16 counts, by where they live (InGlobal: the grid's scratch,
 * HIST_DENSE_GLOBAL; else the block's shared memory), not one with a flag: so every
 * kernel's histogram pointer has one memory space, and nvcc addresses shared counts with
 * shared loads and stores rather than generic ones (which must first find which memory
 * an address is in). */
template <bool InGlobal, class Count>
struct DenseCounts {
  static constexpr bool kBytes = sizeof(Count) == 1;
  static constexpr int kPerWord = CountWords<Count>::kPerWord;
  static constexpr unsigned kShift = kPerWord == 4 ? 2 : 1; /* log2 kPerWord */
  static constexpr unsigned kBits = 8 * sizeof(Count);
  static constexpr uint32_t kMask = (1u << kBits) - 1u;
  static constexpr bool kAtomic = false; /* AtomicCounts: an atomic a change */
  uint32_t *base;
  uint32_t owners;
  int bins;
  PLM_HD uint32_t *word(int b) const { return base + ((uint32_t)b >> kShift) * owners; }
  PLM_HD unsigned shift(int b) const { return ((uint32_t)b & (kPerWord - 1u)) * kBits; }
  PLM_HD unsigned char *byte(int b) const {
    return (unsigned char *)word(b) + ((uint32_t)b & (kPerWord - 1u));
  }
  /* A change of bin b by +1 (by 1) or -1 (by 0xffffffff): the count before. */
  PLM_HD uint32_t change(int b, uint32_t by) const {
    if constexpr (kBytes) {
      unsigned char *c = byte(b);
      const uint32_t loaded = *c, after = (loaded + by) & kMask; /* a held 0 less 1: 255 */
      *c = (unsigned char)after;
      return by == 1u ? loaded : after + 1u; /* an add never starts from 256 */
    } else {
      uint32_t *w = word(b);
      const uint32_t old = *w;
      *w = old + (by << shift(b));
      return (old >> shift(b)) & kMask;
    }
  }
  PLM_HD uint32_t add(int b) const { return change(b, 1u); }
  PLM_HD uint32_t remove(int b) const { return change(b, 0xffffffffu); }
  /* Two changes, bin a's then bin b's, as if one after the other (b's count before sees
   * a's change when they share a count, or a u16 word), but with both loaded before
   * either is stored: a thread's changes are a chain (each load may read the last
   * store), and this halves its links. The counts before, in *ca and *cb. */
  PLM_HD void change_two(int a, int b, uint32_t by, uint32_t *ca, uint32_t *cb) const {
    if constexpr (kBytes) {
      unsigned char *pa = byte(a), *pb = byte(b);
      const uint32_t loaded_a = *pa, loaded_b = *pb;
      const uint32_t na = (loaded_a + by) & kMask, ob = pa == pb ? na : loaded_b;
      const uint32_t nb = (ob + by) & kMask;
      *pa = (unsigned char)na;
      *pb = (unsigned char)nb;
      *ca = by == 1u ? loaded_a : na + 1u;
      *cb = by == 1u ? ob : nb + 1u;
    } else {
      const unsigned sa = shift(a), sb = shift(b);
      uint32_t *wa = word(a), *wb = word(b);
      const uint32_t oa = *wa, loaded_b = *wb, na = oa + (by << sa);
      const uint32_t ob = wa == wb ? na : loaded_b;
      *wa = na;
      *wb = ob + (by << sb);
      *ca = (oa >> sa) & kMask;
      *cb = (ob >> sb) & kMask;
    }
  }
  PLM_HD void add_two(int a, int b, uint32_t *ca, uint32_t *cb) const {
    change_two(a, b, 1u, ca, cb);
  }
  PLM_HD void remove_two(int a, int b, uint32_t *ca, uint32_t *cb) const {
    change_two(a, b, 0xffffffffu, ca, cb);
  }
  PLM_HD int words() const { return CountWords<Count>::words(bins); }
  /* S of the counts: the sum of clogc[count] over the bins (a word's spare counts hold
   * 0, whose clogc is 0); a byte histogram of all zeros holds one bin of 256. */
  PLM_HD int64_t sum(const int64_t *clogc) const {
    int64_t s = 0;
    uint32_t seen = 0;
    const uint32_t *w = base;
    PLM_ROLLED
    for (int j = 0; j < words(); j++, w += owners) {
      const uint32_t word = *w;
      seen |= word;
      for (int k = 0; k < kPerWord; k++) s += clogc[(word >> (k * kBits)) & kMask];
    }
    return kBytes && seen == 0 ? clogc[kMask + 1u] : s;
  }
  PLM_HD void clear() const {
    uint32_t *w = base;
    PLM_ROLLED
    for (int j = 0; j < words(); j++, w += owners) *w = 0;
  }
};
typedef DenseCounts<false, uint16_t> DenseHist;      /* HIST_DENSE_SHARED */
typedef DenseCounts<false, uint8_t> ByteHist;        /* HIST_BYTE_SHARED */
typedef DenseCounts<true, uint16_t> GlobalDenseHist; /* HIST_DENSE_GLOBAL */

/* A shared histogram (DenseHist, ByteHist) whose every change is one atomic add to its
 * word that returns the word before (the plan's atomic_counts): one access of the
 * shared-memory unit where a load and a store are two, and no chain through memory
 * between a thread's changes (a load after a store that may alias it waits for it; an
 * atomic does not wait for the last), so add_two is two atomics, as changes_at_once's 1.
 * A u16 count never carries. A byte count does when it goes from 255 to 256 (held as
 * 0: the add carries 1 into the next byte of the word) and from 256 to 255 (the remove
 * borrows 1 from it): a second atomic mends the next byte at once (none past the word's
 * last byte, whose carry leaves the word). Either happens only when one bin holds the
 * whole window, the carry at a row's last add and the borrow at its first remove, whose
 * row's later removes are of that same bin (whose byte is right meanwhile): no change
 * reads a count before it is mended. Its own kernel (window_kernel<AtomicCounts<...>>),
 * so that the load-and-store kernels keep their registers. */
template <class Count>
struct AtomicCounts : DenseCounts<false, Count> {
  using Counts = DenseCounts<false, Count>;
  static constexpr bool kAtomic = true;
  /* A change of bin b by +1 (by 1) or -1 (by 0xffffffff): the count before. */
  PLM_HD uint32_t change(int b, uint32_t by) const {
    uint32_t *w = this->word(b);
    const unsigned at = this->shift(b);
    const uint32_t loaded = (fetch_add(w, by << at) >> at) & Counts::kMask;
    if constexpr (Counts::kBytes) {
      const bool crossed = by == 1u ? loaded == Counts::kMask : loaded == 0u;
      if (crossed && at + Counts::kBits < 32u) fetch_add(w, (0u - by) << (at + Counts::kBits));
      return by == 1u ? loaded : ((loaded + by) & Counts::kMask) + 1u; /* a held 0: 256 */
    } else {
      return loaded;
    }
  }
  PLM_HD uint32_t add(int b) const { return change(b, 1u); }
  PLM_HD uint32_t remove(int b) const { return change(b, 0xffffffffu); }
  PLM_HD void add_two(int a, int b, uint32_t *ca, uint32_t *cb) const {
    *ca = add(a);
    *cb = add(b);
  }
  PLM_HD void remove_two(int a, int b, uint32_t *ca, uint32_t *cb) const {
    *ca = remove(a);
    *cb = remove(b);
  }
  /* The load-and-store pair, not for these counts. */
  void change_two(int, int, uint32_t, uint32_t *, uint32_t *) const = delete;
};
typedef AtomicCounts<uint16_t> AtomicDenseHist; /* HIST_DENSE_SHARED, atomic_counts */
typedef AtomicCounts<uint8_t> AtomicByteHist;   /* HIST_BYTE_SHARED, atomic_counts */

/* An open-addressing table of P = mask + 1 entries (bin << 16 | count; 0: empty),
 * entry i at base[i * stride]. A bin is looked for from its home slot onwards (linear
 * probing); the table never holds a count of 0. */
struct SparseHist {
  static constexpr bool kAtomic = false;
  uint32_t *base;
  uint32_t stride; /* the block's threads: i stride stays far below 2^32 */
  uint32_t mask;
  PLM_HD uint32_t home(uint32_t bin) const { return (bin * 2654435761u >> 7) & mask; }
  PLM_HD uint32_t &at(uint32_t i) const { return base[i * stride]; }
  PLM_HD uint32_t add(int b) const {
    const uint32_t bin = (uint32_t)b;
    for (uint32_t i = home(bin);; i = (i + 1) & mask) {
      const uint32_t e = at(i);
      if (e == 0) {
        at(i) = bin << 16 | 1u;
        return 0;
      }
      if (e >> 16 == bin) {
        at(i) = e + 1;
        return e & 0xffffu;
      }
    }
  }
  /* The bin is in the table (its count is at least 1). */
  PLM_HD uint32_t remove(int b) const {
    const uint32_t bin = (uint32_t)b;
    uint32_t i = home(bin);
    while (at(i) >> 16 != bin || (at(i) & 0xffffu) == 0) i = (i + 1) & mask;
    const uint32_t e = at(i);
    if ((e & 0xffffu) > 1) {
      at(i) = e - 1;
      return e & 0xffffu;
    }
    /* The count falls to 0: close the gap, moving back each entry after it whose home
     * is not between the gap and the entry (cyclically), until an empty slot. */
    uint32_t gap = i;
    for (uint32_t j = (i + 1) & mask;; j = (j + 1) & mask) {
      const uint32_t next = at(j);
      if (next == 0) break;
      if (((j - home(next >> 16)) & mask) >= ((j - gap) & mask)) {
        at(gap) = next;
        gap = j;
      }
    }
    at(gap) = 0;
    return 1;
  }
  /* Two changes one after the other (a probe's loads depend on what it finds). */
  PLM_HD void add_two(int a, int b, uint32_t *ca, uint32_t *cb) const {
    *ca = add(a);
    *cb = add(b);
  }
  PLM_HD void remove_two(int a, int b, uint32_t *ca, uint32_t *cb) const {
    *ca = remove(a);
    *cb = remove(b);
  }
  PLM_HD int64_t sum(const int64_t *clogc) const {
    int64_t s = 0;
    PLM_ROLLED
    for (uint32_t i = 0; i <= mask; i++) s += clogc[at(i) & 0xffffu];
    return s;
  }
  PLM_HD void clear() const {
    for (uint32_t i = 0; i <= mask; i++) at(i) = 0;
  }
};

/* ---- sources of bins and sinks of results --------------------------------------------- */

/* entropy: the bin of an input pixel; f32 through the frame's range (the fixed one, or
 * with range_auto the frame's finite [min, max] from frame_range, in `ranges`). */
struct EntropySource {
  static constexpr bool global_histograms = false; /* warp_kernel takes those (warps_own) */
  static constexpr bool atomic_counts = true;      /* AtomicCounts kernels compiled */
  plm__entropy_args a;
  const float *ranges;
  double lo, hi; /* the frame's, set by begin */
  PLM_HD int64_t height() const { return a.height; }
  PLM_HD int64_t width() const { return a.width; }
  PLM_HD void begin(int64_t f) {
    lo = a.range_auto ? (double)ranges[2 * f] : a.lo;
    hi = a.range_auto ? (double)ranges[2 * f + 1] : a.hi;
  }
  /* A pixel as loaded (fetch) and its bin (bin_of), apart for RowAhead. */
  using Raw = uint32_t;
  PLM_HD Raw fetch(int64_t f, int64_t y, int64_t x) const {
    return plm__entropy_raw(a.in, (f * a.height + y) * a.width + x, a.dtype);
  }
  PLM_HD int bin_of(Raw raw) const { return plm__entropy_bin_raw(raw, a.dtype, a.bins, lo, hi); }
  PLM_HD int bin(int64_t f, int64_t y, int64_t x) const { return bin_of(fetch(f, y, x)); }
};

struct EntropySink {
  float *out;
  PLM_HD void write(int64_t at, plm__entropy_norm norm, int64_t s) const {
    out[at] = plm__entropy_from_sum(norm, s);
  }
};

/* fused: the bin of the Sobel magnitude at a pixel (kernels/common/fused.h). */
struct FusedSource {
  static constexpr bool global_histograms = true; /* when neither shared kind fits */
  static constexpr bool atomic_counts = false;    /* with them its kernels spilled */
  fused_args a;
  PLM_HD int64_t height() const { return a.sobel.h; }
  PLM_HD int64_t width() const { return a.sobel.w; }
  PLM_HD void begin(int64_t) {}
  PLM_HD int bin(int64_t f, int64_t y, int64_t x) const {
    return plm__sobel_entropy_bin_at(&a, f, y, x);
  }
  /* A pixel's bin takes nine loads and the Sobel taps: fetched whole. */
  using Raw = int;
  PLM_HD Raw fetch(int64_t f, int64_t y, int64_t x) const { return bin(f, y, x); }
  PLM_HD int bin_of(Raw bin) const { return bin; }
};

struct FusedSink {
  fused_args a;
  PLM_HD void write(int64_t at, plm__entropy_norm norm, int64_t s) const {
    a.mask[at] = plm__sobel_entropy_threshold_mask(&a, norm, s);
  }
};

/* ---- the block's logic (__host__ __device__ for the host check) ----------------------- */

/* A quad of a staged row: the bins of four neighbouring columns, written a bin at a time
 * (a thread per column, so that a warp's reads of the input stay coalesced), read whole
 * as one 8-byte load (each_bin_pair). Through the union, which C++ compilers (GCC, Clang,
 * nvcc) define for reading a member other than the one last written. */
union BinQuad {
  uint16_t half[4]; /* half[k & 3]: the bin of column k; [0] is the quad's lowest 16 bits */
  unsigned long long quad;
};
static_assert(sizeof(BinQuad) == sizeof(uint64_t), "a staged row is an array of 8-byte words");

/* The columns of a task's staged rows: bin k of a row is the bin of column x0 - left + k,
 * for k < span (a strip's T columns and its window's halo); a row holds 4 quads bins
 * (ring_row_quads), the ones past the span, and those of columns outside the frame, 0.
 * The bins past the span are only read past (each_bin_pair), never counted, so they are
 * not computed (a fused bin is nine loads and the Sobel taps). */
struct StagedColumns {
  int64_t x0;
  int left, span;
  int64_t width; /* the frame's */
  PLM_HD int quads() const { return ring_row_quads(span); }
  PLM_HD int bins() const { return 4 * quads(); }
  PLM_HD int64_t column(int k) const { return x0 - left + k; }
  /* Whether bin k is a column of the frame (else it is staged as 0). */
  PLM_HD bool in_frame(int k) const {
    const int64_t c = column(k);
    return k < span && c >= 0 && c < width;
  }
};

/* Bin k of a row at dst[k / 4].half[k % 4]. */
PLM_HD inline void put_bin(BinQuad *row, int k, uint16_t bin) {
  row[k >> 2].half[k & 3] = bin;
}

/* The bins of row r of frame f over the task's columns into dst; every thread of the
 * block takes part, a column each. */
template <class Block, class Source>
PLM_HD void stage_row(const Block &block, const Source &source, int64_t f, int64_t r,
                      const StagedColumns &cols, BinQuad *dst) {
  for (int k = block.thread(); k < cols.bins(); k += block.threads())
    put_bin(dst, k, cols.in_frame(k) ? (uint16_t)source.bin(f, r, cols.column(k)) : (uint16_t)0);
}

/* The 32 bits at bit `shift` (0 or 16) of the 64 bits hi:lo. */
PLM_HD inline uint32_t funnel_right(uint32_t lo, uint32_t hi, unsigned shift) {
#ifdef __CUDA_ARCH__
  return __funnelshift_r(lo, hi, shift);
#else
  return (uint32_t)(((uint64_t)hi << 32 | lo) >> shift);
#endif
}

/* The bins b of a staged row's k0..k1, in order, read four to an 8-byte load: pair(b, b')
 * for each pair k, k + 1, one(b) for the last bin of an odd count. A thread's window
 * starts at any bin of an 8-byte word (k0 mod 4), so each step takes the four bins from
 * k on out of the word holding bin k and the next one: two 32-bit funnel shifts of the
 * three 32-bit words from bin k's (the word before is kept from the last load). A window
 * of w bins costs floor(w / 4) + 1 loads or one more (floor(w / 2) + 1 as 32-bit words,
 * before: 5 where 9 were, at w = 16; a warp's lanes read 64 neighbouring bytes, a
 * wavefront, either way). The last load may be of the 8-byte word after bin k1's (which
 * the row has: ring_row_quads). */
template <class Pair, class One>
PLM_HD void each_bin_pair(const BinQuad *row, int k0, int k1, const Pair &pair, const One &one) {
  const BinQuad *at = row + (k0 >> 2);
  const unsigned shift = (unsigned)(k0 & 1) * 16;
  const bool upper = (k0 & 2) != 0; /* bin k0 in the quad's upper 32 bits */
  unsigned long long low = at->quad;
  int k = k0;
  /* The four bins from k, of the quads low and high: the 32-bit words from bin k's. */
  auto words = [&](unsigned long long high, uint32_t *first, uint32_t *second) {
    const uint32_t a = (uint32_t)(upper ? low >> 32 : low),
                   b = (uint32_t)(upper ? high : low >> 32),
                   c = (uint32_t)(upper ? high >> 32 : high);
    *first = funnel_right(a, b, shift);
    *second = funnel_right(b, c, shift);
  };
  for (; k + 3 <= k1; k += 4) {
    const unsigned long long high = (++at)->quad;
    uint32_t first, second;
    words(high, &first, &second);
    pair((int)(first & 0xffffu), (int)(first >> 16));
    pair((int)(second & 0xffffu), (int)(second >> 16));
    low = high;
  }
  if (k > k1) return;
  uint32_t first, second; /* one to three bins left, from k */
  words((++at)->quad, &first, &second);
  if (k == k1) {
    one((int)(first & 0xffffu));
    return;
  }
  pair((int)(first & 0xffffu), (int)(first >> 16));
  if (k + 2 == k1) one((int)(second & 0xffffu));
}

/* The counts before the changes of bins a then b by +1 (Sign > 0) or -1: in two
 * (Together 2: add_two, remove_two) or one after the other (Together 1: the plan's
 * changes_at_once). */
template <int Together, int Sign, class Hist>
PLM_HD void change_pair(const Hist &hist, int a, int b, uint32_t *ca, uint32_t *cb) {
  if (Together == 2) {
    if (Sign > 0) hist.add_two(a, b, ca, cb);
    else hist.remove_two(a, b, ca, cb);
  } else {
    *ca = Sign > 0 ? hist.add(a) : hist.remove(a);
    *cb = Sign > 0 ? hist.add(b) : hist.remove(b);
  }
}

/* Add the bins of a staged row's k0..k1 to the histogram, Together changes at a time;
 * returns the new S (a sum of integers: the same in any order). */
template <int Together, class Hist>
PLM_HD int64_t add_row(const Hist &hist, const int64_t *delta, const BinQuad *row, int k0, int k1,
                       int64_t s) {
  each_bin_pair(
      row, k0, k1,
      [&](int a, int b) {
        uint32_t ca, cb;
        change_pair<Together, 1>(hist, a, b, &ca, &cb);
        s += delta[ca] + delta[cb];
      },
      [&](int b) { s += delta[hist.add(b)]; });
  return s;
}

/* add_row for a row of a task's first window; with `summed`, to the counts alone (S
 * unchanged: the fill sums it from the counts, fill_summed). */
template <int Together, class Hist>
PLM_HD int64_t fill_row(const Hist &hist, const int64_t *delta, bool summed, const BinQuad *row,
                        int k0, int k1, int64_t s) {
  each_bin_pair(
      row, k0, k1,
      [&](int a, int b) {
        uint32_t ca, cb;
        change_pair<Together, 1>(hist, a, b, &ca, &cb);
        if (!summed) s += delta[ca] + delta[cb];
      },
      [&](int b) {
        const uint32_t old = hist.add(b);
        if (!summed) s += delta[old];
      });
  return s;
}

/* Take the bins of a staged row's k0..k1 out of the histogram; returns the new S. */
template <int Together, class Hist>
PLM_HD int64_t remove_row(const Hist &hist, const int64_t *delta, const BinQuad *row, int k0,
                          int k1, int64_t s) {
  each_bin_pair(
      row, k0, k1,
      [&](int a, int b) {
        uint32_t ca, cb;
        change_pair<Together, -1>(hist, a, b, &ca, &cb);
        s -= delta[ca - 1] + delta[cb - 1];
      },
      [&](int b) { s -= delta[hist.remove(b) - 1]; });
  return s;
}

/* A row's slot in a ring of `rows` (the rows r >= 0 of a frame in slots r mod rows),
 * kept by counting: one division a task to start, not a 64-bit division (a routine of
 * dozens of instructions on a GPU) for every row staged and read. */
struct RingSlot {
  int at, rows;
  PLM_HD void next() { at = at + 1 == rows ? 0 : at + 1; }
};

/* Bins a thread of stage_rows has in flight. */
constexpr int kStageBatch = 8;

/* Rows r0 .. r0 + rows - 1 of frame f, each as stage_row stages it, into the slots of a
 * ring of cols.quads()-quad rows from `first` on, slot after slot: a task's first window,
 * kStageBatch bins in flight a thread (kernels/cuda/stage.h). A row at a time, each of a
 * thread's bins waited for its load before the next row's was issued: `window` DRAM
 * round trips one after another at every task's start. */
template <class Block, class Source>
PLM_HD void stage_rows(const Block &block, const Source &source, int64_t f, int64_t r0, int rows,
                       const StagedColumns &cols, BinQuad *ring, RingSlot first) {
  const int quads = cols.quads();
  plm__stage_batched<kStageBatch>(
      rows, cols.bins(), 0, block.thread(), 1, block.threads(),
      [&](int r, int k) {
        return cols.in_frame(k) ? (uint16_t)source.bin(f, r0 + r, cols.column(k)) : (uint16_t)0;
      },
      [&](int r, int k, uint16_t bin) {
        const int at = first.at + r < first.rows ? first.at + r : first.at + r - first.rows;
        put_bin(ring + at * quads, k, bin);
      });
}

/* A thread's pixels of one row, held in registers from the step before the one that
 * stages the row (load: Source::fetch) to that step (store: Source::bin_of into the
 * ring): stage_row split in two, so that the next row's loads are in flight while a step
 * changes its counts. Staged at its step, each step began with a DRAM round trip that its
 * barrier then waited for. The entropy op fetches a pixel's raw value and bins it at the
 * store; the fused op's bin takes nine loads and the Sobel taps, fetched whole (its loads
 * are waited for in load, after the barrier). For rows of at most kMost pixels a thread
 * (cols.bins() <= kMost T: the span of T + w - 1 bins up to a window of about 3T); the loops
 * over them unrolled, so that the pixels stay in registers. */
template <class Source>
struct RowAhead {
  static constexpr int kMost = 4;
  typename Source::Raw raws[kMost] = {};

  template <class Block>
  PLM_HD void load(const Block &block, const Source &source, int64_t f, int64_t r,
                   const StagedColumns &cols) {
    PLM_UNROLLED
    for (int j = 0; j < kMost; j++) {
      const int k = block.thread() + j * block.threads();
      if (cols.in_frame(k)) raws[j] = source.fetch(f, r, cols.column(k));
    }
  }

  template <class Block>
  PLM_HD void store(const Block &block, const Source &source, const StagedColumns &cols,
                    BinQuad *dst) const {
    PLM_UNROLLED
    for (int j = 0; j < kMost; j++) {
      const int k = block.thread() + j * block.threads();
      if (k < cols.bins())
        put_bin(dst, k, cols.in_frame(k) ? (uint16_t)source.bin_of(raws[j]) : (uint16_t)0);
    }
  }
};

/* The thread's histogram: in the block's shared memory (area, p.hist_bytes), or, for
 * HIST_DENSE_GLOBAL, in the scratch. */
template <class Hist>
struct HistOf;

template <class Count> /* ByteHist, DenseHist */
struct HistOf<DenseCounts<false, Count>> {
  template <class Block>
  static PLM_HD DenseCounts<false, Count> make(const Block &block, const plan &, int bins,
                                               unsigned char *area, uint32_t *) {
    return {(uint32_t *)area + block.thread(), (uint32_t)block.threads(), bins};
  }
};

template <class Count> /* AtomicByteHist, AtomicDenseHist */
struct HistOf<AtomicCounts<Count>> {
  template <class Block>
  static PLM_HD AtomicCounts<Count> make(const Block &block, const plan &p, int bins,
                                         unsigned char *area, uint32_t *global_hists) {
    return {HistOf<DenseCounts<false, Count>>::make(block, p, bins, area, global_hists)};
  }
};

template <>
struct HistOf<GlobalDenseHist> {
  template <class Block>
  static PLM_HD GlobalDenseHist make(const Block &block, const plan &, int bins, unsigned char *,
                                     uint32_t *global_hists) {
    const int threads = block.threads();
    return GlobalDenseHist{global_hists + block.index() * threads + block.thread(),
                           (uint32_t)(block.count() * threads), bins};
  }
};

template <>
struct HistOf<SparseHist> {
  template <class Block>
  static PLM_HD SparseHist make(const Block &block, const plan &p, int, unsigned char *area,
                                uint32_t *) {
    return SparseHist{(uint32_t *)area + block.thread(), (uint32_t)block.threads(),
                      (uint32_t)p.sparse_slots - 1};
  }
};

/* One block's work: its tasks, in a grid-stride loop. smem is the block's dynamic
 * shared memory (p.smem bytes), global_hists the scratch (p.scratch bytes, zeroed; used
 * with HIST_DENSE_GLOBAL only), global_delta the table of differences, global_clogc
 * that of c log2 c (plan.clogc_entries > 0 only: device_clogc). Every loop that
 * synchronises runs the same trips in every thread: its bounds depend on the task. */
template <class Hist, class Block, class Source, class Sink>
PLM_HD void run_block(const Block &block, const plan &p, Source source, const Sink &sink, int bins,
                      unsigned char *smem, uint32_t *global_hists, const int64_t *global_delta,
                      const int64_t *global_clogc) {
  const int t = block.thread(), T = block.threads();
  BinQuad *ring = (BinQuad *)smem;
  unsigned char *hist_area = smem + p.ring_bytes;
  const int64_t *delta = global_delta;
  if (p.delta_entries > 0) {
    int64_t *shared_delta = (int64_t *)(smem + p.ring_bytes + p.hist_bytes);
    for (int c = t; c < p.delta_entries; c += T) shared_delta[c] = global_delta[c];
    delta = shared_delta;
  }
  const bool summed = p.clogc_entries > 0; /* the fill: counts, then S from them */
  int64_t *clogc = (int64_t *)(smem + p.ring_bytes + p.hist_bytes + p.delta_bytes);
  for (int c = t; c < p.clogc_entries; c += T) clogc[c] = global_clogc[c];
  const Hist hist = HistOf<Hist>::make(block, p, bins, hist_area, global_hists);
  const bool drain = p.hist == HIST_DENSE_GLOBAL; /* else zeroed at each task's start */
  const bool two = !Hist::kAtomic && p.changes_at_once == 2; /* an atomic's pair is two */

  const int64_t h = source.height(), w = source.width();
  const int window = p.window, left = window / 2, right = window - 1 - left;
  const bool ring_mode = p.ring_rows > 2;
  auto slot_at = [&](RingSlot r) { return ring + r.at * p.row_quads; };
  /* In a ring, each step's entering row is loaded a step ahead when a row's bins are at
   * most RowAhead::kMost a thread. */
  const bool ahead = ring_mode && 4 * p.row_quads <= RowAhead<Source>::kMost * T;
  RowAhead<Source> next;
  for (int64_t task = block.index(); task < p.tasks; task += block.count()) {
    const int64_t strip = task % p.strips, rest = task / p.strips;
    const int64_t f = rest / p.segments, y0 = rest % p.segments * p.segment_rows;
    const int64_t y1 = min64(y0 + p.segment_rows, h);
    const int64_t x0 = strip * T, x = x0 + t;
    const bool active = x < w;
    source.begin(f);
    int64_t col_first = 0, cols = 0;
    if (active) plm__entropy_span(x, w, window, &col_first, &cols);
    if (active && !drain) hist.clear();
    const int k0 = (int)(col_first - x0 + left), k1 = k0 + (int)cols - 1; /* in a staged row */
    const StagedColumns cols_staged = {x0, left, p.span, w};
    /* A staged row's bins k0..k1 into or out of the histogram, changes_at_once at a time. */
    auto fill = [&](const BinQuad *row, int64_t s) {
      return two ? fill_row<2>(hist, delta, summed, row, k0, k1, s)
                 : fill_row<1>(hist, delta, summed, row, k0, k1, s);
    };
    auto add = [&](const BinQuad *row, int64_t s) {
      return two ? add_row<2>(hist, delta, row, k0, k1, s) : add_row<1>(hist, delta, row, k0, k1, s);
    };
    auto remove = [&](const BinQuad *row, int64_t s) {
      return two ? remove_row<2>(hist, delta, row, k0, k1, s)
                 : remove_row<1>(hist, delta, row, k0, k1, s);
    };

    /* The first window. */
    int64_t row_first, rows, s = 0;
    plm__entropy_span(y0, h, window, &row_first, &rows);
    const RingSlot first_slot = {(int)(row_first % p.ring_rows), p.ring_rows};
    RingSlot at = first_slot;
    if (ring_mode) {
      block.sync(); /* the previous task's readers are done with the ring */
      stage_rows(block, source, f, row_first, (int)rows, cols_staged, ring, first_slot);
      block.sync();
      for (int64_t r = row_first; active && r < row_first + rows; r++, at.next())
        s = fill(slot_at(at), s);
    } else {
      for (int64_t r = row_first; r < row_first + rows; r++) {
        block.sync(); /* the last row's readers are done with it */
        stage_row(block, source, f, r, cols_staged, ring);
        block.sync();
        if (active) s = fill(ring, s);
      }
    }
    if (active && summed) s = hist.sum(clogc);
    int64_t last_n = 0;
    plm__entropy_norm norm = {0.0, 0.0};
    /* The entering row's slot follows the first window's last row's; the leaving row is
     * `window` rows above it, so two slots after it in a ring of window + 2. */
    RingSlot entering_slot = {(int)((y0 + right) % p.ring_rows), p.ring_rows};
    for (int64_t y = y0; y < y1; y++) {
      /* Slide down a row (past the first): the top row leaves, the one below enters. */
      const bool slides = y > y0;
      const int64_t enters = y + right, leaves = y - left - 1;
      BinQuad *entering = ring, *leaving = ring + p.row_quads;
      if (slides) {
        if (ring_mode) {
          entering_slot.next();
          RingSlot leaving_slot = entering_slot;
          leaving_slot.next();
          leaving_slot.next();
          entering = slot_at(entering_slot);
          leaving = slot_at(leaving_slot);
        }
        /* The ring's slot of the entering row was last read two steps ago, before the
         * last step's barrier; the two-row ring's rows, this step. */
        if (!ring_mode) block.sync();
        if (enters < h && ahead)
          next.store(block, source, cols_staged, entering);
        else if (enters < h)
          stage_row(block, source, f, enters, cols_staged, entering);
        if (!ring_mode && leaves >= 0)
          stage_row(block, source, f, leaves, cols_staged, leaving);
        block.sync();
      }
      /* The next step's entering row, loaded now so that its loads are in flight while
       * this step changes its counts. */
      if (ahead && y + 1 < y1 && enters + 1 < h)
        next.load(block, source, f, enters + 1, cols_staged);
      if (slides && active && leaves >= 0) s = remove(leaving, s);
      if (slides && active && enters < h) s = add(entering, s);
      if (active) {
        plm__entropy_span(y, h, window, &row_first, &rows);
        const int64_t n = rows * cols;
        if (n != last_n) {
          last_n = n;
          norm = plm__entropy_norm_of(n);
        }
        sink.write((f * h + y) * w + x, norm, s);
      }
    }
    /* Take the last window out of a global histogram for the next task. */
    if (!drain) continue;
    plm__entropy_span(y1 - 1, h, window, &row_first, &rows);
    at = {(int)(row_first % p.ring_rows), p.ring_rows};
    for (int64_t r = row_first; r < row_first + rows; r++, at.next()) {
      BinQuad *src = ring_mode ? slot_at(at) : ring;
      if (!ring_mode) {
        block.sync();
        stage_row(block, source, f, r, cols_staged, src);
        block.sync();
      }
      if (active) s = remove(src, s);
    }
  }
}

/* ---- warp-owned histograms in global memory (entropy: bins > 512, w > 18) ------------- */

/* Where no per-thread histogram fits in shared memory (more than 512 bins, and a window
 * past 18, whose distinct bins overflow a hash table of 64 KiB per 32 threads), the
 * entropy op gives each warp one histogram in global scratch, as u16 counts packed two
 * to a u32 word, and the warp takes tasks (frame, 64-row segment, column): it fills the
 * segment's first window, slides down, and takes the last window out again, so the
 * histogram is zeroed for the next task (the scratch is zeroed once per call). The 32
 * lanes split each step's 2w count changes (and a fill's w^2) among themselves, change
 * the counts with atomics (a count never goes below 0 or past 65535, so the halves of a
 * word never carry or borrow), and add up their changes of S with shuffles: each lane's
 * change is the difference for the count its own atomic saw, so in whatever order the
 * atomics land a bin's changes telescope to its new term, and S is the CPU's integer.
 * Bins are computed per change (a multiply and a shift for u16). Up to 2048 warps
 * (65536 threads) and 256 MiB of histograms: 2048 of 128 KiB at 65536 bins. Slower than
 * the shared-memory kinds (random read-modify-writes in L2 and DRAM) and a memset of
 * the scratch per call; the fused op, whose Sobel bins would be recomputed per change,
 * keeps a dense global histogram per thread instead. */

constexpr int kLanes = 32;
constexpr int64_t kWarpSegmentRows = 64;
constexpr int64_t kMostWarps = 2048;
constexpr size_t kWarpHistBudget = size_t(256) << 20;

/* A histogram shared by the lanes of a warp (bin b in word b / 2, low half for even
 * b); returns the count before. */
struct WarpHist {
  uint32_t *words;
  PLM_HD uint32_t change(int b, int sign) const {
    const unsigned shift = (unsigned)(b & 1) * 16;
    uint32_t *word = words + (b >> 1);
#ifdef __CUDA_ARCH__
    const uint32_t old = sign > 0 ? atomicAdd(word, 1u << shift) : atomicSub(word, 1u << shift);
#else /* the host check */
    const uint32_t old = sign > 0 ? __atomic_fetch_add(word, 1u << shift, __ATOMIC_SEQ_CST)
                                  : __atomic_fetch_sub(word, 1u << shift, __ATOMIC_SEQ_CST);
#endif
    return (old >> shift) & 0xffffu;
  }
};

PLM_HD size_t warp_hist_words(int bins) {
  return (size_t)(bins + 1) / 2;
}

struct warp_plan {
  int64_t segments, tasks, warps;
  size_t scratch;
};

warp_plan make_warp_plan(const plm__entropy_args &a) {
  warp_plan p = {};
  p.segments = (a.height + kWarpSegmentRows - 1) / kWarpSegmentRows;
  p.tasks = a.frames * p.segments * a.width;
  const size_t each = warp_hist_words(a.bins) * sizeof(uint32_t);
  p.warps = min64(p.tasks, min64(kMostWarps, (int64_t)(kWarpHistBudget / each)));
  p.scratch = (size_t)p.warps * each;
  return p;
}

/* This lane's change of S for count changes of `sign` on its share (every kLanes-th) of
 * the `count` pixels `pixel(k)` gives (k < count). */
template <class Lane, class Pixel>
PLM_HD int64_t warp_changes(const Lane &lane, const WarpHist &hist, const int64_t *delta,
                            const plm__entropy_args &a, double lo, double hi, int count,
                            int sign, const Pixel &pixel) {
  int64_t ds = 0;
  for (int k = lane.lane(); k < count; k += kLanes) {
    int64_t at;
    int s = sign;
    if (!pixel(k, &at, &s)) continue;
    const uint32_t old = hist.change(plm__entropy_bin(a.in, at, a.dtype, a.bins, lo, hi), s);
    ds += s > 0 ? delta[old] : -delta[old - 1];
  }
  return ds;
}

/* Rows [y0, y1) of column x of frame f, by the warp whose lanes `lane` stands for (lane()
 * its index, sum() the warp's total of a value, sync() a barrier of the warp): fill the
 * window of row y0, slide down, take out the window of row y1 - 1. Lane 0 writes. */
template <class Lane>
PLM_HD void warp_segment(const Lane &lane, const plm__entropy_args &a, const float *ranges,
                         const WarpHist &hist, const int64_t *delta, int64_t f, int64_t y0,
                         int64_t y1, int64_t x) {
  const int64_t h = a.height, w = a.width, left = a.window / 2, right = a.window - 1 - left;
  const double lo = a.range_auto ? (double)ranges[2 * f] : a.lo;
  const double hi = a.range_auto ? (double)ranges[2 * f + 1] : a.hi;
  const int64_t c0 = max64(x - left, 0), c1 = min64(x + right, w - 1), base = f * h * w;
  const int cols = (int)(c1 - c0 + 1);
  /* The pixels of rows [r0, r1] x [c0, c1], all with the same sign. */
  auto rect = [&](int64_t r0, int64_t r1, int sign) {
    const int count = r1 < r0 ? 0 : (int)(r1 - r0 + 1) * cols;
    return warp_changes(lane, hist, delta, a, lo, hi, count, sign, [&](int k, int64_t *at, int *) {
      *at = base + (r0 + k / cols) * w + c0 + k % cols;
      return true;
    });
  };
  int64_t s = lane.sum(rect(max64(y0 - left, 0), min64(y0 + right, h - 1), 1));
  for (int64_t y = y0; y < y1; y++) {
    if (y > y0) { /* the row leaving (-1) and the row entering (+1), when inside */
      const int64_t leaves = y - left - 1, enters = y + right;
      s += lane.sum(warp_changes(lane, hist, delta, a, lo, hi, 2 * cols, 1,
                                 [&](int k, int64_t *at, int *sign) {
                                   const bool out = k < cols;
                                   const int64_t row = out ? leaves : enters;
                                   if (row < 0 || row >= h) return false;
                                   *at = base + row * w + c0 + (out ? k : k - cols);
                                   *sign = out ? -1 : 1;
                                   return true;
                                 }));
    }
    if (lane.lane() == 0) {
      const int64_t rows = min64(y + right, h - 1) - max64(y - left, 0) + 1;
      a.out[base + y * w + x] = plm__entropy_from_sum(plm__entropy_norm_of(rows * cols), s);
    }
  }
  rect(max64(y1 - 1 - left, 0), min64(y1 - 1 + right, h - 1), -1);
  lane.sync(); /* the next task starts from a histogram the whole warp has zeroed */
}

/* Warp o's tasks (task = (frame, segment, column), column fastest). */
template <class Lane>
PLM_HD void warp_tasks(const Lane &lane, const plm__entropy_args &a, const warp_plan &p,
                       const float *ranges, uint32_t *hists, const int64_t *delta, int64_t o) {
  const WarpHist hist = {hists + o * (int64_t)warp_hist_words(a.bins)};
  for (int64_t task = o; task < p.tasks; task += p.warps) {
    const int64_t x = task % a.width, rest = task / a.width;
    const int64_t y0 = rest % p.segments * kWarpSegmentRows, f = rest / p.segments;
    warp_segment(lane, a, ranges, hist, delta, f, y0, min64(y0 + kWarpSegmentRows, a.height), x);
  }
}

/* ---- kernels and launchers ------------------------------------------------------------ */

#ifdef __CUDACC__

/* The tables on the device: the host's table of differences, and c log2 c for fills
 * summed from their counts (fill_summed), the sums of those differences, so the very
 * integers plm__entropy_clogc gives and S the CPU's. Both computed at build time
 * (cmake/make_entropy_tables.c) and loaded with the module: no call copies
 * them, so the first entropy on a device may be captured into a graph. */
__device__ int64_t device_delta[PLM__ENTROPY_DELTA_COUNT] = {
#include "entropy_delta_table.inc"
};
__device__ int64_t device_clogc[PLM__ENTROPY_CLOGC_COUNT] = {
#include "entropy_clogc_table.inc"
};

/* The block as the GPU runs it. */
struct DeviceBlock {
  __device__ int thread() const { return (int)threadIdx.x; }
  __device__ int threads() const { return (int)blockDim.x; }
  __device__ int64_t index() const { return blockIdx.x; }
  __device__ int64_t count() const { return gridDim.x; }
  __device__ void sync() const { __syncthreads(); }
};

/* The lanes of a warp as the GPU runs them. */
struct DeviceLane {
  __device__ int lane() const { return (int)(threadIdx.x & 31); }
  __device__ int64_t sum(int64_t v) const {
    __syncwarp(); /* the lanes' count changes are ordered before what follows */
    for (int offset = 16; offset > 0; offset /= 2)
      v += __shfl_xor_sync(0xffffffffu, (long long)v, offset);
    return v;
  }
  __device__ void sync() const { __syncwarp(); }
};

__global__ void warp_kernel(plm__entropy_args a, warp_plan p, const float *__restrict__ ranges,
                            uint32_t *hists) {
  const int64_t o = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / kLanes;
  if (o < p.warps) warp_tasks(DeviceLane{}, a, p, ranges, hists, device_delta, o);
}

/* 5 blocks of kMaxThreads: the most registers no variant spills at (the header's
 * "Registers"). */
template <class Hist, class Source, class Sink>
__global__ void __launch_bounds__(kMaxThreads, 5)
    window_kernel(plan p, Source source, Sink sink, int bins, uint32_t *__restrict__ global_hists) {
  extern __shared__ __align__(16) unsigned char smem[];
  run_block<Hist>(DeviceBlock{}, p, source, sink, bins, smem, global_hists, device_delta,
                  device_clogc);
}

/* Launch window_kernel for the plan's kind of histogram: the memset of global ones
 * first, the opt-in to more than 48 KiB of shared memory where the plan takes it. */
template <class Hist, class Source, class Sink>
plm_status launch_kind(cudaStream_t s, const plan &p, const Source &source, const Sink &sink,
                       int bins, void *scratch, const char *name) {
  auto kernel = window_kernel<Hist, Source, Sink>;
  cudaError_t err = plm__cuda_opt_in_shared((const void *)kernel, p.smem);
  if (err != cudaSuccess) return plm__cuda_call_failed(err, name);
  if (p.scratch > 0) {
    err = cudaMemsetAsync(scratch, 0, p.scratch, s);
    if (err != cudaSuccess) return plm__cuda_call_failed(err, name);
  }
  kernel<<<p.blocks, (unsigned)p.threads, p.smem, s>>>(p, source, sink, bins, (uint32_t *)scratch);
  return plm__cuda_check_launch(name);
}

/* The kind's kernel. Only a source whose op gives window_kernel global histograms
 * (Source::global_histograms: the fused op; the entropy op's are warp_kernel's) has
 * that variant compiled, and only one whose op has atomic_counts (Source::atomic_counts:
 * the entropy op) the AtomicCounts ones. */
template <class Source, class Sink>
plm_status launch(cudaStream_t s, const plan &p, const Source &source, const Sink &sink, int bins,
                  void *scratch, const char *name) {
  if (p.hist == HIST_SPARSE_SHARED)
    return launch_kind<SparseHist>(s, p, source, sink, bins, scratch, name);
  if constexpr (Source::atomic_counts) {
    if (p.hist == HIST_BYTE_SHARED && p.atomic_counts)
      return launch_kind<AtomicByteHist>(s, p, source, sink, bins, scratch, name);
    if (p.hist == HIST_DENSE_SHARED && p.atomic_counts)
      return launch_kind<AtomicDenseHist>(s, p, source, sink, bins, scratch, name);
  }
  if (p.hist == HIST_BYTE_SHARED)
    return launch_kind<ByteHist>(s, p, source, sink, bins, scratch, name);
  if (p.hist == HIST_DENSE_SHARED)
    return launch_kind<DenseHist>(s, p, source, sink, bins, scratch, name);
  if constexpr (Source::global_histograms)
    return launch_kind<GlobalDenseHist>(s, p, source, sink, bins, scratch, name);
  else
    return plm__fail_raw(PLM_ERR_INTERNAL, "%s: global histograms reached window_kernel", name);
}
#endif

#ifdef __CUDACC__
/* entropy's scratch: each frame's range and frame_range's own (auto), then the plan's
 * global histograms. */
size_t ranges_bytes(const plm__entropy_args *args) {
  if (!args->range_auto) return 0;
  return round_up((size_t)args->frames * 2 * sizeof(float), 256) +
         plm__frame_range_cuda_scratch_bytes(args->frames, args->height * args->width);
}

plan entropy_plan(const plm__entropy_args *args) {
  return make_plan(args->frames, args->height, args->width, args->window, args->bins,
                   args->cuda_shape);
}

plan fused_plan(const fused_args *args) {
  return make_plan(args->sobel.n, args->sobel.h, args->sobel.w, args->window, args->bins,
                   args->cuda_shape);
}
#endif

}  // namespace

#ifdef __CUDACC__ /* (the host check links the library, which has these) */
/* Whether the entropy op takes warp-owned global histograms (see above). */
bool warps_own(const plan &p) {
  return p.hist == HIST_DENSE_GLOBAL;
}

extern "C" size_t plm__entropy_cuda_scratch_bytes(const plm__entropy_args *args) {
  const plan p = entropy_plan(args);
  return ranges_bytes(args) + (warps_own(p) ? make_warp_plan(*args).scratch : p.scratch);
}

extern "C" size_t plm__sobel_entropy_threshold_cuda_scratch_bytes(const fused_args *args) {
  return fused_plan(args).scratch;
}

extern "C" plm_status plm__entropy_cuda(void *stream, const plm__entropy_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  float *ranges = (float *)args->scratch;
  if (args->range_auto) {
    const size_t own = round_up((size_t)args->frames * 2 * sizeof(float), 256);
    void *range_scratch =
        plm__frame_range_cuda_scratch_bytes(args->frames, args->height * args->width) > 0
            ? (char *)args->scratch + own
            : NULL;
    plm_status status = plm__frame_range_cuda(stream, (const float *)args->in, args->frames,
                                              args->height * args->width, ranges, range_scratch);
    if (status != PLM_OK) return status;
  }
  const plan p = entropy_plan(args);
  void *hists = (char *)args->scratch + ranges_bytes(args);
  if (warps_own(p)) {
    const warp_plan wp = make_warp_plan(*args);
    cudaError_t err = cudaMemsetAsync(hists, 0, wp.scratch, s);
    if (err != cudaSuccess) return plm__cuda_call_failed(err, "entropy: clearing the histograms");
    const unsigned blocks = (unsigned)((wp.warps * kLanes + kMaxThreads - 1) / kMaxThreads);
    warp_kernel<<<blocks, kMaxThreads, 0, s>>>(*args, wp, ranges, (uint32_t *)hists);
    return plm__cuda_check_launch("entropy warp_kernel");
  }
  const EntropySource source = {*args, ranges, 0.0, 0.0};
  return launch(s, p, source, EntropySink{args->out}, args->bins, hists, "entropy window_kernel");
}

extern "C" plm_status plm__sobel_entropy_threshold_cuda(void *stream, const fused_args *args) {
  const plan p = fused_plan(args);
  return launch((cudaStream_t)stream, p, FusedSource{*args}, FusedSink{*args}, args->bins,
                args->scratch, "sobel_entropy_threshold window_kernel");
}
#endif

/* kernels/cuda/label.cu: connected components and region statistics on the GPU.
 *
 * label is a block-based union-find (the design, its steps and its invariants are at
 * the top of kernels/common/label.h, where the per-pixel steps live so that the host
 * runs them too, in tests/test_label_cuda_logic.c), all on the stream, with no host
 * round trip:
 *   1. label_tiles: one block of PLM__LABEL_TILE_PIXELS threads per tile (grid-stride
 *      over each frame's tiles), a warp per tile row: its ballot is the row's bits, and
 *      the tile's union-find has a node per run in shared memory; writes every pixel's
 *      tile root (a frame index) or -1 to labels, and the tiles of the first column
 *      zero their rows' status words.
 *   2. label_borders: a warp per 32 pixels of a tile border (a tile's top row against
 *      the row above, or 32 rows of a tile column's first column against the column
 *      left of it) unites the runs that touch across it, with atomicMin on labels,
 *      halving the paths its finds walk (plm__label_find_halving: a tile root ends about
 *      2 steps from its root, where finds that kept their paths left 7.5 to 10 on a
 *      half-foreground random mask, each a dependent load of every pixel of the tile in
 *      step 3). A component's root stays its smallest index: its first pixel in raster
 *      order.
 *   3. label_number_rows: a block per image row (grid-stride over the rows of the
 *      batch). Its pixels' parents become their roots, and so does every parent on the
 *      paths (path compression, plm__label_flatten: a chain is walked in full once, then
 *      in one step by the pixels on it); the row's roots are counted and the count
 *      published in its status word; the block sums the frame's earlier rows' roots from
 *      theirs, 256 rows a step, counting a row itself where nothing is published yet
 *      (a look-back that never waits: roots_before), and publishes the row's sum; then
 *      the row is numbered 16 chunks of the block's width at a time (4096 columns),
 *      every chunk's slot loaded before any is used, each root's rank from its warp's
 *      ballot and the running sums of the warps' counts in raster order (one scan by a
 *      warp); each root's slot gets its label's mark; the frame's last row writes K.
 *   4. label_relabel: every pixel's label (plm__label_final).
 * Steps 1, 2 and 4 take a frame per blockIdx.y and index its pixels and tiles without a
 * 64-bit division (frame_pixels_grid below); before, each pixel divided its batch index
 * by the frame's pixels or its tile's (64-bit divisions and modulos, tens of instructions
 * each, per pixel).
 *
 * Between blocks. Steps 2 and 3 read words that other blocks of the same launch write
 * (parents, row status words), with relaxed accesses only: volatile loads and stores,
 * atomicMin and atomicMax (relaxed, device scope), a few plain loads read once. No fence
 * or acquire is needed, and no block waits on another, because no word guards another:
 * every value a parent ever holds is an ancestor in the same set (parents only fall: a
 * stale read walks a longer path to the same root, and a find's index falls every step)
 * or, in step 3, a root's mark, which every reader takes as a root, as it does the index
 * the mark replaces; a status word carries its count in itself (stage and count in one
 * 64-bit word, raised by atomicMax; a row with nothing published is counted by the
 * reader). So whatever store a read sees, the answer is the same. Keep labels and parent
 * free of `const __restrict__` in these kernels: nvcc may then read them through the
 * non-coherent path (ld.global.nc), which need not see other blocks' stores at all.
 * (Reviewed against the PTX memory model on 2026-12-05; the emulator, whose atomics are
 * sequentially consistent, cannot judge it.)
 *
 * The scratch (a status word per image row, plm__label_cuda_scratch_bytes) is the
 * caller's (ops/op_scratch.h): plm_label takes it from the context's default pool in
 * stream order, a pipeline gives it from its workspace.
 *
 * Cost model. The floor bench_ops judges by (docs/benchmarks.md, "emulated") is each
 * launch's distinct bytes over DRAM bandwidth, summed: about 15 bytes a pixel here, the
 * mask in and a parent out (5), parents read by borders (about 2: a left segment's
 * sectors lie in every row), read and mostly not written by number_rows (4), read and
 * written over by relabel (4): 19.1 us at 2048^2 on an H100 (3.35 TB/s; 24.1 with the
 * five launches before number_rows, whose flatten and numbering each read the parents).
 * The op's own floor, mask in and labels out, is 5 bytes a pixel (6.3 us at 2048^2): the
 * three launches after the first re-read the parents, which only a labelling in fewer
 * passes would save. Per kernel, by the emulated estimate for an H100 (an estimate from
 * the emulator's counts, not a measurement; the half-full random mask of bench_ops,
 * 8-connectivity, 512^2 to 4096^2 alike within 0.1x), bound over floor:
 *   - tiles, 1.5x, shared-memory bound: about 17 shared requests a warp (a tile row):
 *     the row's bits stored and the row above's read, the run nodes started, at most
 *     two unions a lane (a find from each side and an atomicMin), and the root's find,
 *     about five steps (the trees are about a level deep per join level). A warp's 160
 *     bytes of DRAM take as long as 12.5 wavefronts (132 SMs x 1.98 GHz, one a clock).
 *     Before the runs (a union per pixel, the mask staged in shared memory and five
 *     bytes of it read a pixel): 43 requests a warp, 4.4x. Tiles 8 and 32 rows high were
 *     tried: the tile pass 1.3x and 1.65x, but the borders and flatten the other way,
 *     the op 1.35x and 1.32x against 16 rows' 1.31x at 512^2.
 *   - borders, 1.1x, L2: a top segment reads two rows of 128 bytes, a left segment a
 *     sector in each of 64 rows (its two columns), then the unions' finds. Before (a
 *     thread per border pixel reading five mask bytes and two parents): 3.0x.
 *   - number_rows, 2.7x, L2 (at 2048^2, 13.7 us against 5.0): the flatten (a parent and
 *     its parent's parent a pixel, a write only where a path is longer), the look-back
 *     (status words, 256 a step, and in the emulator's random block order about every
 *     other row counted again by a later row's block, 0.5 reads a pixel that a GPU's
 *     blocks, run about in order, mostly do not make), and the numbering's second read
 *     of the row's slots (from the L2 on a GPU: the block has just read them). It
 *     replaced two launches, label_flatten (1.3x) and label_number_roots (1.0x, DRAM),
 *     each of which read the parents from DRAM (11.5 us of bounds at 2048^2, 5.0 of it
 *     DRAM's), and number_roots summed the earlier rows' counts, h^2/2 reads of a
 *     frame's 4h bytes. Before number_roots loaded 16 chunks of a row together, it took
 *     a chunk of 256 columns at a time, each a load, a ballot and a block scan with two
 *     barriers: a 4096-wide row was 16 DRAM round trips and 32 barriers one after
 *     another, latency the count does not see.
 *   - relabel, 1.4x, L2: a parent and its root's slot read and the label written, 8
 *     bytes of L2 requests for 4 of DRAM.
 * Whole op: 4 launches (5 before number_rows). Emulated estimates for an H100, against
 * the five launches of commit fc68ca3: at 2048^2, bound 33.2 us over a floor of 19.1,
 * 1.7x (32.0 over 24.1, 1.3x), 43.2 us with its launches (44.5) and 37.2 as graph nodes
 * (37.0); at 512^2, 12.2 us with its launches (14.5) and 6.2 as graph nodes (7.0), where
 * launches dominate. Measured on an H200
 * (bench_ops, commit d834510, five launches, before the halving and the look-back): 53.6
 * us at 512^2, 351.6 at 2048^2, 1,366.6 at 4096^2, 10.7 times the estimate there and 30
 * times bench_ops' floor: what the estimate leaves out (latency: the tile pass's
 * barriers, six a tile; the flatten's chains; instruction issue) sets its time.
 *
 * regions starts the table's rows (regions_start), accumulates into them block by block
 * (regions_accumulate: a block combines what each label adds within its tile in a table
 * of slots in shared memory and writes each label's slot out with one atomic per column;
 * the design, the exactness of the results and the device cost model are at the top of
 * kernels/cuda/regions_block.h), then turns sums into means (regions_finish): 3 launches,
 * no scratch. A stack of N frames takes a frame per blockIdx.y in the same 3 launches (per
 * 65535 frames), each frame's table its own: the cost model is a frame's times N, and the
 * launches are paid once per stack instead of once per frame.
 *
 * The label and segment suites passed on an H200 (the campaign of 2026-12-04, commit
 * d834510, before the border pass halved its paths and number_rows took the flatten and
 * the numbering into one launch). tests/test_label_cuda_logic.c runs the labelling's
 * per-pixel steps on the host, tile by tile and in shuffled thread orders, the rows of
 * step 3 in two halves interleaved at random (so that the look-back meets rows counted,
 * summed and not yet seen), and
 * tests/test_regions_cuda_logic.cpp runs regions' block logic with emulated threads;
 * tests/test_label.c checks the kernels under PLUME_BACKEND=cuda (ctest label.cuda, on
 * the CUDA emulator in the -DPLUME_CUDA=EMU build). */
#include "kernels/common/label.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/lanes.h"
#include "kernels/cuda/regions_block.h"

namespace {

const unsigned kThreads = 256;
const unsigned kTileThreads = PLM__LABEL_TILE_PIXELS;
const size_t kAlign = 256;

size_t round_up(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

/* The scratch: a status word per image row of the batch (kernels/common/label.h). */
size_t row_status_bytes(const plm__label_args *args) {
  return round_up((size_t)(args->frames * args->height) * sizeof(uint64_t));
}

/* Steps 1, 2 and 4 run over each frame's pixels with 32-bit indices (a frame has at most
 * INT32_MAX pixels, ops/label.c): blockIdx.y and its stride pick the frame, so no pixel
 * divides a 64-bit index. */
dim3 frame_pixels_grid(int64_t frames, int64_t frame_pixels) {
  const int64_t most_frames = 65535;
  return dim3(plm__cuda_blocks(frame_pixels, kThreads),
              (unsigned)(frames < most_frames ? frames : most_frames));
}

/* Step 1. Thread t of a block is pixel (t % TILE_W, t / TILE_W) of the block's tile: a
 * warp reads a tile row of the mask, 32 consecutive bytes, and its ballot is the row's
 * bits (kernels/common/label.h, "Tile pass"), which the warp below reads from shared
 * memory. A frame per blockIdx.y and its stride (as steps 2, 3 and 5), the tile's place
 * in it from a 32-bit division. The loops over frames and tiles are uniform across the
 * block, so every thread reaches every barrier and every ballot. */
__global__ void __launch_bounds__(PLM__LABEL_TILE_PIXELS)
    label_tiles(const uint8_t *__restrict__ mask, int32_t *__restrict__ parent,
                uint64_t *__restrict__ row_status, int64_t frames, int32_t across, int32_t tiles,
                int32_t height, int32_t width, int eight) {
  __shared__ int32_t tile_parent[PLM__LABEL_TILE_PIXELS]; /* a node per run */
  __shared__ uint32_t tile_rows[PLM__LABEL_TILE_H];
  const int t = (int)threadIdx.x, tx = t % PLM__LABEL_TILE_W, ty = t / PLM__LABEL_TILE_W;
  const int64_t frame_pixels = (int64_t)height * width;
  for (int64_t frame = blockIdx.y; frame < frames; frame += gridDim.y)
    for (int32_t tile = (int32_t)blockIdx.x; tile < tiles; tile += (int32_t)gridDim.x) {
      const int32_t down = tile / across, r0 = down * PLM__LABEL_TILE_H,
                    c0 = (tile - down * across) * PLM__LABEL_TILE_W;
      const int32_t r = r0 + ty, c = c0 + tx, i = r * width + c; /* in the frame */
      const bool inside = r < height && c < width;
      if (c0 == 0 && tx == 0 && r < height) row_status[frame * height + r] = 0; /* for step 3 */
      const bool foreground = inside && mask[frame * frame_pixels + i] != 0;
      const uint32_t row = __ballot_sync(0xffffffffu, foreground);
      if (tx == 0) tile_rows[ty] = row;
      if (foreground && plm__label_run_start(row, tx) == tx) tile_parent[t] = t;
      __syncthreads();
      const uint32_t up = ty > 0 ? tile_rows[ty - 1] : 0u;
      for (int step = 1; step < PLM__LABEL_TILE_H; step *= 2) {
        if (foreground && plm__label_joins_at(ty, step))
          plm__label_tile_join(tile_parent, row, up, tx, ty, eight);
        __syncthreads();
      }
      if (inside)
        parent[frame * frame_pixels + i] =
            foreground ? plm__label_tile_root(tile_parent, row, tx, ty, r0, c0, width) : -1;
      __syncthreads(); /* before the next tile overwrites the shared arrays */
    }
}

/* Step 2, a warp per border segment (kernels/common/label.h, "Border pass"), frame by
 * frame (blockIdx.y and its stride, as steps 3 and 5). The segment loop is uniform
 * across each warp (its stride a multiple of 32 threads), so every lane reaches every
 * ballot and shuffle. A top segment's lanes read two rows of parents, 128 bytes each; a
 * left segment's read a parent in each of 64 rows. Eight blocks an SM (the halving's
 * stores took the 8-connected kernel to 34 registers, 7 blocks; bounded, 29, no spill). */
template <int Eight>
__global__ void __launch_bounds__(kThreads, 8)
    label_borders(int32_t *parent, int64_t frames, plm__label_segments segments, int32_t height,
                  int32_t width) {
  const unsigned all = 0xffffffffu;
  const int lane = (int)(threadIdx.x % 32);
  const int32_t count = segments.top + segments.left;
  const int64_t frame_pixels = (int64_t)height * width;
  const int32_t first = (int32_t)((blockIdx.x * blockDim.x + threadIdx.x) / 32),
                step = (int32_t)(gridDim.x * blockDim.x / 32);
  for (int64_t f = blockIdx.y; f < frames; f += gridDim.y) {
    int32_t *frame = parent + f * frame_pixels;
    for (int32_t k = first; k < count; k += step) {
      int32_t r, c;
      const bool top = plm__label_segment_at(segments, k, &r, &c);
      if (top)
        c += lane;
      else
        r += lane;
      const bool inside = r < height && c < width;
      const int32_t i = r * width + c, far_i = top ? i - width : i - 1;
      const int32_t own = inside ? frame[i] : -1, far = inside ? frame[far_i] : -1;
      const uint32_t near_bits = __ballot_sync(all, own >= 0),
                     far_bits = __ballot_sync(all, far >= 0);
      const int32_t far_before = __shfl_up_sync(all, far, 1),
                    far_after = __shfl_down_sync(all, far, 1);
      plm__label_segment_join(frame, near_bits, far_bits, lane, own, far_before, far, far_after,
                              Eight);
      const int corner = plm__label_segment_corner(top, lane, c, width, Eight);
      if (corner && own >= 0) {
        const int32_t beyond = frame[far_i + corner];
        if (beyond >= 0) plm__label_unite(frame, own, beyond, PLM__LABEL_HALVE_PATHS);
      }
    }
  }
}

/* v summed over the lanes of a whole warp, returned to each. */
__device__ int32_t warp_sum(int32_t v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/* v summed over the threads of the block (blockDim.x a multiple of 32, at most 1024),
 * returned to each: each warp's sum into warp_sums (a word a warp, free again on return),
 * which each warp reads once, a word a lane, rather than every thread every word. */
__device__ int32_t block_sum(int32_t v, int32_t *warp_sums) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  const int32_t total = warp_sum(lane < warps ? warp_sums[lane] : 0);
  __syncthreads(); /* before warp_sums is written again */
  return total;
}

/* Step 3 numbers a row kRowChunks chunks of kThreads columns at a time, every chunk's slot
 * loaded before any is used: one DRAM round trip for 4096 columns, where a chunk at a
 * time (a load, a ballot, a block scan and its two barriers, then the next chunk) made
 * 16 round trips of a 4096-wide row one after another. */
constexpr int kRowChunks = 16;
constexpr int kRowWarps = kThreads / 32;
constexpr int kRowCounts = kRowChunks * kRowWarps; /* a warp's roots in a chunk, in raster order */
static_assert(kRowCounts == 4 * 32, "warp 0 scans the counts four a lane");

/* The counts' exclusive running sums, in place, by warp 0 (four consecutive counts a
 * lane, one 16-byte access: no bank conflict); returns their total, to warp 0's lanes.
 * counts: 16-byte aligned. */
__device__ int32_t scan_row_counts(int32_t *counts) {
  const unsigned lane = threadIdx.x % 32;
  int4 *mine = reinterpret_cast<int4 *>(counts) + lane;
  const int4 four = *mine;
  const int32_t sum = four.x + four.y + four.z + four.w;
  int32_t scan = sum; /* inclusive, over the lanes */
  for (int offset = 1; offset < 32; offset *= 2) {
    const int32_t lower = __shfl_up_sync(0xffffffffu, scan, offset);
    if ((int)lane >= offset) scan += lower;
  }
  const int32_t first = scan - sum;
  *mine =
      make_int4(first, first + four.x, first + four.x + four.y, first + four.x + four.y + four.z);
  return __shfl_sync(0xffffffffu, scan, 31);
}

/* What step 3's look-back keeps in shared memory: each warp's nearest row holding a sum
 * (its lane, or 32) and its rows' roots up to it. */
struct look_back_shared {
  int32_t summed_lane[kRowWarps];
  int32_t warp_roots[kRowWarps]; /* block_sum's */
};

/* Step 3's look-back, by the whole block (kernels/common/label.h, plm__label_roots_before,
 * kThreads rows a step, thread t the newest row but t): the roots of the frame's rows
 * before y, from their status words, up to the newest that holds a sum; each row before it
 * with nothing published yet is counted by its warp together and its count published. So
 * a row far from any sum (at 512^2 every row of a frame starts at once) takes a step per
 * kThreads rows, not per 32, and no row past the sum is counted. Returned to every
 * thread; uniform across the block (every thread reaches every barrier). */
__device__ int32_t roots_before(uint64_t *status, const int32_t *frame, int32_t y, int32_t width,
                                look_back_shared *shared) {
  const unsigned all = 0xffffffffu, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int32_t roots = 0;
  for (int32_t newest = y - 1; newest >= 0; newest -= (int32_t)kThreads) {
    const int32_t r = newest - (int32_t)threadIdx.x;
    uint64_t s = r >= 0 ? ((volatile uint64_t *)status)[r]
                        : plm__label_row_status(PLM__LABEL_ROW_SUMMED, 0); /* before the frame */
    const uint32_t summed = __ballot_sync(all, plm__label_row_stage(s) == PLM__LABEL_ROW_SUMMED);
    if (lane == 0) shared->summed_lane[warp] = summed ? __ffs(summed) - 1 : 32;
    __syncthreads();
    int stop_warp = kRowWarps, stop_lane = 32; /* the newest row holding a sum */
    for (int w = 0; w < kRowWarps && stop_warp == kRowWarps; w++)
      if (shared->summed_lane[w] < 32) {
        stop_warp = w;
        stop_lane = shared->summed_lane[w];
      }
    const bool counts = (int)warp < stop_warp || ((int)warp == stop_warp && (int)lane <= stop_lane);
    for (uint32_t unseen = __ballot_sync(all, counts && plm__label_row_stage(s) == 0); unseen;
         unseen &= unseen - 1) {
      const int at = __ffs(unseen) - 1, row = newest - (int)warp * 32 - at;
      const volatile int32_t *p = frame;
      int32_t counted = 0;
      for (int32_t c = (int32_t)lane; c < width; c += 32) {
        const int32_t i = row * width + c;
        counted += plm__label_is_root(p[i], i);
      }
      counted = warp_sum(counted);
      if ((int)lane == at) {
        s = plm__label_row_status(PLM__LABEL_ROW_COUNTED, counted);
        plm__label_publish(&status[row], s);
      }
    }
    roots += block_sum(counts ? plm__label_row_roots(s) : 0, shared->warp_roots);
    if (stop_warp < kRowWarps) break;
  }
  return roots;
}

/* Step 3, a block per image row of the batch: the row flattened and its roots counted and
 * published, the earlier rows' roots summed by the block's look-back and the row's sum
 * published, then its roots numbered in raster order, kRowChunks chunks of the row at a
 * time (each warp's roots in each chunk by a ballot, counted into `counts`, scanned by
 * warp 0, then each root's label from its warp's running sum and the roots of its warp
 * before it). */
__global__ void __launch_bounds__(kThreads, 5)
    label_number_rows(int32_t *labels, uint64_t *__restrict__ row_status,
                      int32_t *__restrict__ count, int64_t frames, int32_t height, int32_t width) {
  __shared__ int32_t warp_sums[32];
  __shared__ __align__(16) int32_t counts[kRowCounts + 1]; /* + 1: the chunks' total */
  __shared__ look_back_shared look_back;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t frame_pixels = (int64_t)height * width;
  for (int64_t row = blockIdx.x; row < frames * height; row += gridDim.x) { /* uniform */
    const int64_t f = row / height;
    const int32_t y = (int32_t)(row - f * height);
    int32_t *frame = labels + f * frame_pixels;
    uint64_t *status = row_status + f * height;
    int32_t own = 0;
    /* The lanes' walks differ in length: the warp meets again after each pixel, so that
     * a pixel's first reads go out together (as the compiler reconverges a loop's trip;
     * said here, the emulator's count sees it too). The trips are uniform across the
     * warp: blockDim.x is a multiple of 32. */
    for (int32_t c0 = 0; c0 < width; c0 += (int32_t)blockDim.x) {
      const int32_t c = c0 + (int32_t)threadIdx.x;
      if (c < width) own += (int32_t)plm__label_flatten(frame, y * width + c);
      __syncwarp();
    }
    const int32_t in_row = block_sum(own, warp_sums);
    if (threadIdx.x == 0)
      plm__label_publish(&status[y], plm__label_row_status(PLM__LABEL_ROW_COUNTED, in_row));
    const int32_t before = roots_before(status, frame, y, width, &look_back);
    if (threadIdx.x == 0)
      plm__label_publish(&status[y], plm__label_row_status(PLM__LABEL_ROW_SUMMED, before + in_row));
    int32_t next = before + 1; /* the row's first root's label */
    int32_t *row_slots = frame + (int64_t)y * width;
    for (int64_t c0 = 0; c0 < width; c0 += (int64_t)kRowChunks * kThreads) {
      int32_t slot[kRowChunks];
#pragma unroll
      for (int k = 0; k < kRowChunks; k++) {
        const int64_t c = c0 + k * kThreads + threadIdx.x;
        slot[k] = c < width ? row_slots[c] : -1;
      }
      uint32_t roots[kRowChunks];
#pragma unroll
      for (int k = 0; k < kRowChunks; k++) {
        const int64_t c = c0 + k * kThreads + threadIdx.x;
        roots[k] = __ballot_sync(0xffffffffu, c < width && slot[k] == (int32_t)(y * width + c));
        if (lane == 0) counts[k * kRowWarps + warp] = __popc(roots[k]);
      }
      __syncthreads();
      if (warp == 0) {
        const int32_t total = scan_row_counts(counts);
        if (lane == 0) counts[kRowCounts] = total;
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kRowChunks; k++)
        if (roots[k] >> lane & 1u)
          row_slots[c0 + k * kThreads + threadIdx.x] = plm__label_root_mark(
              next + counts[k * kRowWarps + warp] + __popc(roots[k] & ((1u << lane) - 1u)));
      next += counts[kRowCounts];
      __syncthreads(); /* before counts is written again */
    }
    if (y == height - 1 && threadIdx.x == 0) count[f] = next - 1;
  }
}

/* Step 4. */
__global__ void label_relabel(int32_t *labels, int64_t frames, int64_t frame_pixels) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t f = blockIdx.y; f < frames; f += gridDim.y) {
    int32_t *frame = labels + f * frame_pixels;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < frame_pixels; i += step)
      frame[i] = plm__label_final(frame, frame[i]);
  }
}

/* The regions kernels take a frame of a stack per blockIdx.y (a launch has at most 65535:
 * plm__regions_cuda launches the rest from the next frame on); a frame's table is
 * `capacity` rows after the previous frame's. */
__device__ __forceinline__ int64_t regions_frame_of_block() {
  return blockIdx.y;
}

__global__ void regions_start(double *table, const int32_t *count, int64_t capacity) {
  table += regions_frame_of_block() * capacity * PLM_REGION_COLUMNS;
  count += regions_frame_of_block();
  const int64_t rows = plm__regions_rows(*count, capacity);
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < rows; j += step)
    plm__regions_start_row(table + j * PLM_REGION_COLUMNS, j + 1);
}

/* Block b of the grid takes tiles b, b + blocks, ... (kernels/cuda/regions_block.h), its
 * slots in shared memory. The loop is uniform across the block, so every thread reaches
 * every barrier. 5 blocks an SM: 48 registers (56 unbounded), no spill; 75 KiB of slots. */
template <typename T>
__global__ void __launch_bounds__(kThreads, 5)
    regions_accumulate(const int32_t *__restrict__ labels, const T *__restrict__ intensity,
                       const int32_t *count, double *table, int64_t capacity, int64_t height,
                       int64_t width, plm__regions_tiling tiling) {
  __shared__ plm__regions_slots slots;
  const int64_t frame = regions_frame_of_block();
  labels += frame * height * width;
  if (intensity) intensity += frame * height * width;
  count += frame;
  table += frame * capacity * PLM_REGION_COLUMNS;
  const int64_t rows = plm__regions_rows(*count, capacity);
  const plm__cuda_block block;
  const plm__cuda_warp warp;
  plm__regions_slots_start(block, &slots);
  block.sync();
  for (int64_t tile = blockIdx.x; tile < tiling.count; tile += gridDim.x)
    plm__regions_tile(block, warp, labels, intensity, table, &slots, rows, height, width, tiling,
                      tile);
}

__global__ void regions_finish(double *table, const int32_t *count, int64_t capacity,
                               int with_intensity) {
  table += regions_frame_of_block() * capacity * PLM_REGION_COLUMNS;
  count += regions_frame_of_block();
  const int64_t rows = plm__regions_rows(*count, capacity);
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < rows; j += step)
    plm__regions_finish_row(table + j * PLM_REGION_COLUMNS, with_intensity);
}

}  // namespace

extern "C" plm_status plm__label_cuda_scratch_bytes(const plm__label_args *args, size_t *bytes) {
  *bytes = row_status_bytes(args);
  return PLM_OK;
}

extern "C" plm_status plm__label_cuda(void *stream, const plm__label_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t frame_pixels = args->height * args->width;
  const plm__label_tiling tiling = plm__label_tiling_of(args->frames, args->height, args->width);
  const int eight = args->connectivity == 8;
  const dim3 pixel_blocks = frame_pixels_grid(args->frames, frame_pixels);
  uint64_t *row_status = (uint64_t *)args->scratch;
  /* One block per tile, up to plm__cuda_blocks' bound and 65535 frames (the blocks loop
   * over the rest). */
  const int32_t across = (int32_t)tiling.across, tiles = (int32_t)(tiling.across * tiling.down);
  const dim3 tile_blocks(plm__cuda_blocks((int64_t)tiles * kTileThreads, kTileThreads),
                         frame_pixels_grid(args->frames, 1).y);
  label_tiles<<<tile_blocks, kTileThreads, 0, s>>>(
      args->mask, args->labels, row_status, args->frames, across, tiles, (int32_t)args->height,
      (int32_t)args->width, eight);
  plm_status status = plm__cuda_check_launch("label_tiles");
  if (status == PLM_OK) {
    const plm__label_segments segments = plm__label_segments_of(args->height, args->width);
    const dim3 border_blocks = frame_pixels_grid(args->frames, (segments.top + segments.left) * 32);
    if (eight)
      label_borders<1><<<border_blocks, kThreads, 0, s>>>(
          args->labels, args->frames, segments, (int32_t)args->height, (int32_t)args->width);
    else
      label_borders<0><<<border_blocks, kThreads, 0, s>>>(
          args->labels, args->frames, segments, (int32_t)args->height, (int32_t)args->width);
    status = plm__cuda_check_launch("label_borders");
  }
  if (status == PLM_OK) {
    const unsigned row_blocks = plm__cuda_blocks(args->frames * args->height * kThreads, kThreads);
    label_number_rows<<<row_blocks, kThreads, 0, s>>>(args->labels, row_status, args->count,
                                                      args->frames, (int32_t)args->height,
                                                      (int32_t)args->width);
    status = plm__cuda_check_launch("label_number_rows");
  }
  if (status == PLM_OK) {
    label_relabel<<<pixel_blocks, kThreads, 0, s>>>(args->labels, args->frames, frame_pixels);
    status = plm__cuda_check_launch("label_relabel");
  }
  return status;
}

/* Frames first .. first + frames - 1 of a stack (frames <= 65535), a frame per
 * blockIdx.y: 3 launches whatever the frames. */
static plm_status regions_launch(cudaStream_t s, const plm__regions_args *args, unsigned frames) {
  const dim3 row_blocks(plm__cuda_blocks(args->capacity, kThreads), frames);
  regions_start<<<row_blocks, kThreads, 0, s>>>(args->table, args->count, args->capacity);
  plm_status status = plm__cuda_check_launch("regions_start");
  if (status != PLM_OK) return status;
  const plm__regions_tiling tiling = plm__regions_tiling_of(args->height, args->width);
  /* A block a tile (x), a frame (y). */
  const dim3 blocks(plm__cuda_blocks(tiling.count * kThreads, kThreads), frames);
#define REGIONS_ACCUMULATE(type)                                                             \
  regions_accumulate<type>                                                                   \
      <<<blocks, kThreads, 0, s>>>(args->labels, (const type *)args->intensity, args->count, \
                                   args->table, args->capacity, args->height, args->width, tiling)
  switch (args->intensity ? args->intensity_dtype : PLM_DTYPE_U8) {
    case PLM_DTYPE_U8: REGIONS_ACCUMULATE(uint8_t); break;
    case PLM_DTYPE_U16: REGIONS_ACCUMULATE(uint16_t); break;
    case PLM_DTYPE_F32: REGIONS_ACCUMULATE(float); break;
    default:
      return plm__fail_raw(PLM_ERR_INTERNAL, "regions: dtype %d reached the kernel",
                           (int)args->intensity_dtype);
  }
#undef REGIONS_ACCUMULATE
  status = plm__cuda_check_launch("regions_accumulate");
  if (status != PLM_OK) return status;
  regions_finish<<<row_blocks, kThreads, 0, s>>>(args->table, args->count, args->capacity,
                                                 args->intensity != NULL);
  return plm__cuda_check_launch("regions_finish");
}

extern "C" plm_status plm__regions_cuda(void *stream, const plm__regions_args *args) {
  const int64_t most = 65535; /* gridDim.y */
  plm_status status = PLM_OK;
  for (int64_t first = 0; status == PLM_OK && first < args->frames; first += most) {
    const plm__regions_args from = plm__regions_frame(args, first);
    const int64_t left = args->frames - first;
    status = regions_launch((cudaStream_t)stream, &from, (unsigned)(left < most ? left : most));
  }
  return status;
}

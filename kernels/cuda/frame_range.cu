/* kernels/cuda/frame_range.cu: each frame's finite minimum and maximum, many blocks per
 * frame (the design, the order of values and the device cost model are at the top of
 * kernels/common/frame_range.h).
 *
 * The block and warp logic (the functions marked PLM_HD, written against the Block and
 * Warp of kernels/cuda/lanes.h) also runs on the host in
 * tests/test_frame_range_cuda_logic.cpp (ctest frame_range_cuda_logic), which compiles
 * this file as plain C++ (hence the __CUDACC__ guards around what only nvcc knows) with
 * emulated threads. Not yet run on a GPU (none was available when it was written). */
#include "kernels/common/frame_range.h"
#include "kernels/cuda/launch.h"
#ifdef __CUDACC__
#include "kernels/cuda/lanes.h"
#endif

namespace {

constexpr int kThreads = PLM__FRAME_RANGE_THREADS;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFinishThreads = 128; /* 4 warps, a frame each */
constexpr size_t kAlign = 256;

/* Every lane gets the keys of its whole warp. */
template <class Warp>
PLM_HD plm__frame_range_keys warp_keys(const Warp &warp, plm__frame_range_keys k) {
  for (int offset = 16; offset > 0; offset /= 2)
    k = plm__frame_range_add(k, warp.shuffle(k, warp.lane() ^ offset));
  return k;
}

/* Every thread gets the keys of the whole block; shared holds one pair per warp. */
template <class Block, class Warp>
PLM_HD plm__frame_range_keys block_keys(const Block &block, const Warp &warp,
                                        plm__frame_range_keys mine, plm__frame_range_keys *shared) {
  mine = warp_keys(warp, mine);
  if (warp.lane() == 0) shared[block.thread() / 32] = mine;
  block.sync();
  plm__frame_range_keys all = plm__frame_range_empty();
  for (int w = 0; w < block.threads() / 32; w++) all = plm__frame_range_add(all, shared[w]);
  block.sync(); /* every thread has read shared before the next part writes it */
  return all;
}

/* Task `task` = frame f's part p (task = f * parts + p) by one block: the part's keys to
 * partials[task], or, when a frame is one part, the frame's range to ranges. */
template <class Block, class Warp>
PLM_HD void range_part(const Block &block, const Warp &warp, const float *in, int64_t frame_size,
                       plm__frame_range_plan plan, int64_t task, plm__frame_range_keys *shared,
                       plm__frame_range_keys *partials, float *ranges) {
  const int64_t f = task / plan.parts, first = task % plan.parts * plan.chunk;
  const int64_t end = first + plan.chunk < frame_size ? first + plan.chunk : frame_size;
  const float *frame = in + f * frame_size;
  plm__frame_range_keys mine = plm__frame_range_empty();
  for (int64_t i = first + block.thread(); i < end; i += block.threads())
    mine = plm__frame_range_take(mine, frame[i]);
  const plm__frame_range_keys all = block_keys(block, warp, mine, shared);
  if (block.thread() != 0) return;
  if (plan.parts == 1)
    plm__frame_range_write(ranges + 2 * f, all);
  else
    partials[task] = all;
}

/* Frame f's range from its parts' keys, by one warp. */
template <class Warp>
PLM_HD void range_finish(const Warp &warp, const plm__frame_range_keys *partials, int64_t parts,
                         int64_t f, float *ranges) {
  plm__frame_range_keys k = plm__frame_range_empty();
  for (int64_t p = warp.lane(); p < parts; p += 32)
    k = plm__frame_range_add(k, partials[f * parts + p]);
  k = warp_keys(warp, k);
  if (warp.lane() == 0) plm__frame_range_write(ranges + 2 * f, k);
}

#ifdef __CUDACC__
/* Block b takes tasks b, b + blocks, ...: uniform across the block. */
__global__ void __launch_bounds__(kThreads)
    frame_range_parts(const float *__restrict__ in, int64_t frames, int64_t frame_size,
                      plm__frame_range_plan plan, plm__frame_range_keys *__restrict__ partials,
                      float *__restrict__ ranges) {
  __shared__ plm__frame_range_keys shared[kWarps];
  const plm__cuda_block block;
  const plm__cuda_warp warp;
  for (int64_t task = blockIdx.x; task < frames * plan.parts; task += gridDim.x)
    range_part(block, warp, in, frame_size, plan, task, shared, partials, ranges);
}

/* Warp w of the grid takes frames w, w + warps, ...: uniform across the warp. */
__global__ void frame_range_finish(const plm__frame_range_keys *__restrict__ partials,
                                   int64_t frames, int64_t parts, float *__restrict__ ranges) {
  const plm__cuda_warp warp;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t f = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; f < frames; f += warps)
    range_finish(warp, partials, parts, f, ranges);
}
#endif

}  // namespace

extern "C" size_t plm__frame_range_cuda_scratch_bytes(int64_t frames, int64_t frame_size) {
  const plm__frame_range_plan plan = plm__frame_range_plan_of(frame_size);
  if (plan.parts == 1) return 0;
  const size_t bytes = (size_t)(frames * plan.parts) * sizeof(plm__frame_range_keys);
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

#ifdef __CUDACC__
extern "C" plm_status plm__frame_range_cuda(void *stream, const float *in, int64_t frames,
                                            int64_t frame_size, float *ranges, void *scratch) {
  cudaStream_t s = (cudaStream_t)stream;
  const plm__frame_range_plan plan = plm__frame_range_plan_of(frame_size);
  plm__frame_range_keys *partials = (plm__frame_range_keys *)scratch;
  const unsigned blocks = plm__cuda_blocks(frames * plan.parts * kThreads, kThreads);
  frame_range_parts<<<blocks, kThreads, 0, s>>>(in, frames, frame_size, plan, partials, ranges);
  plm_status status = plm__cuda_check_launch("frame_range_parts");
  if (status != PLM_OK || plan.parts == 1) return status;
  const unsigned finish_blocks = plm__cuda_blocks(frames * 32, kFinishThreads);
  frame_range_finish<<<finish_blocks, kFinishThreads, 0, s>>>(partials, frames, plan.parts, ranges);
  return plm__cuda_check_launch("frame_range_finish");
}
#endif

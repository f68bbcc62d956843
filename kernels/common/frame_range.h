/* kernels/common/frame_range.h: each frame's finite minimum and maximum on the GPU (the
 * auto range of f32 entropy, plume/entropy.h), many blocks per frame
 * (kernels/cuda/frame_range.cu), with the plan and the order of values that both the
 * kernels and tests/test_frame_range_cuda_logic.cpp use.
 *
 * ---- what it computes ---------------------------------------------------------------------
 * For each of `frames` frames of frame_size floats: ranges[2 f] = lo, ranges[2 f + 1] =
 * hi, the least and greatest value that plm__entropy_in_auto_range accepts (the finite
 * ones), or 0, 0 when a frame has none. Values are ordered by plm__frame_range_key, in
 * which -0 is below +0: where the least (greatest) finite value is a zero and the frame
 * holds both zeros, lo is -0 (hi is +0), whatever their places. The CPU's loop keeps the
 * zero it met first instead; the two compare equal, and entropy bins every value alike
 * with either (x - lo and hi - lo are the same numbers).
 *
 * ---- design ------------------------------------------------------------------------------
 * Two kernels, on the stream, no atomics and nothing to initialise:
 *   1. parts: a frame is cut into plan.parts parts of plan.chunk consecutive elements
 *      (plm__frame_range_plan_of: parts of at least PLM__FRAME_RANGE_MIN_CHUNK elements,
 *      at most PLM__FRAME_RANGE_MAX_PARTS per frame), one block of
 *      PLM__FRAME_RANGE_THREADS threads per part (a grid-stride loop over every frame's
 *      parts). Thread t takes elements t, t + 256, ... of the part (a warp reads 128
 *      consecutive bytes), keeps the least and greatest key, then the block reduces its
 *      threads' keys (shuffles in each warp, the warps' through shared memory) and writes
 *      the part's two keys to scratch; a frame of one part gets its range written
 *      directly, and kernel 2 is not launched.
 *   2. finish: one warp per frame reduces its parts' keys (at most 1024: 32 per lane)
 *      and writes the frame's range.
 * Keys are order-preserving int32 (plm__frame_range_key), so min and max are integer
 * operations and the empty range is (INT32_MAX, INT32_MIN), which no float maps to.
 * Why partials and not atomics on the keys: atomicMin/atomicMax into each frame's keys
 * need those keys set to the empty range in the stream first (a memset or a kernel, a
 * launch either way), and the keys still have to become floats, with 0, 0 for frames
 * without a finite value, before the entropy kernel reads them (a last kernel): three
 * launches against two (one for frames of one part), for the same bytes. The partials
 * cost 8 bytes per block, written and read once, and the result does not depend on the
 * order in which blocks finish.
 *
 * ---- device cost model -------------------------------------------------------------------
 * Bytes: 4 per element read once, coalesced; 8 per part written and read; 8 per frame
 * written. Launches: 1 when a frame has at most PLM__FRAME_RANGE_MIN_CHUNK (8192)
 * elements, else 2 (the second reads frames x parts x 8 bytes, a 1024th of the first's).
 * Blocks per frame: ceil(frame_size / chunk) with chunk = max(8192, frame_size / 1024
 * rounded up to 256 elements): a 512 x 512 frame gets 32 blocks, a 2048 x 2048 frame
 * 512 (about 4 per SM of an H100's 132), a 4096 x 4096 frame 1024. Each thread loads
 * chunk / 256 elements: 32, 64 at 4096 x 4096, more only past 1024 x 8192 elements.
 * Floor: frames x frame_size x 4 bytes / memory bandwidth: a 2048 x 2048 frame is
 * 16 MiB, 5.0 us at 3.35 TB/s (H100 SXM), 3.5 us at 4.8 TB/s (H200); plus a launch (a
 * few us) for the finish. (It replaced a kernel of one block per frame, which read a
 * frame through one SM, whose share of the bandwidth is a fraction of the GPU's.)
 */
#ifndef PLUME_KERNELS_COMMON_FRAME_RANGE_H
#define PLUME_KERNELS_COMMON_FRAME_RANGE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/common/entropy.h"
#include "kernels/common/plm_hd.h"
#include "plume/status.h"

enum {
  PLM__FRAME_RANGE_THREADS = 256,    /* per block of the parts kernel */
  PLM__FRAME_RANGE_MIN_CHUNK = 8192, /* elements per part, at least (32 per thread) */
  PLM__FRAME_RANGE_MAX_PARTS = 1024  /* parts per frame, at most */
};

/* A frame's parts: `parts` of `chunk` elements (the last one shorter). */
typedef struct plm__frame_range_plan {
  int64_t parts, chunk;
} plm__frame_range_plan;

static inline PLM_HD plm__frame_range_plan plm__frame_range_plan_of(int64_t frame_size) {
  const int64_t threads = PLM__FRAME_RANGE_THREADS, most = PLM__FRAME_RANGE_MAX_PARTS;
  int64_t chunk = (frame_size + most - 1) / most;
  chunk = (chunk + threads - 1) / threads * threads;
  if (chunk < PLM__FRAME_RANGE_MIN_CHUNK) chunk = PLM__FRAME_RANGE_MIN_CHUNK;
  plm__frame_range_plan plan;
  plan.chunk = chunk;
  plan.parts = frame_size > chunk ? (frame_size + chunk - 1) / chunk : 1;
  return plan;
}

/* The key of a float: keys order as the floats do, -0 below +0 (the bits of a negative
 * float, its magnitude's bits flipped, then read as a signed integer). NaN keys exist
 * but are never taken. */
static inline PLM_HD int32_t plm__frame_range_key(float v) {
  int32_t bits;
  memcpy(&bits, &v, sizeof bits);
  return bits < 0 ? bits ^ 0x7fffffff : bits;
}

static inline PLM_HD float plm__frame_range_value(int32_t key) {
  const int32_t bits = key < 0 ? key ^ 0x7fffffff : key;
  float v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

/* The least and greatest key seen; lo > hi when none was. */
typedef struct plm__frame_range_keys {
  int32_t lo, hi;
} plm__frame_range_keys;

static inline PLM_HD plm__frame_range_keys plm__frame_range_empty(void) {
  plm__frame_range_keys k = {INT32_MAX, INT32_MIN};
  return k;
}

static inline PLM_HD plm__frame_range_keys plm__frame_range_add(plm__frame_range_keys a,
                                                                plm__frame_range_keys b) {
  if (b.lo < a.lo) a.lo = b.lo;
  if (b.hi > a.hi) a.hi = b.hi;
  return a;
}

/* Take value v in, when the auto range accepts it (plume/entropy.h: finite). */
static inline PLM_HD plm__frame_range_keys plm__frame_range_take(plm__frame_range_keys k, float v) {
  if (!plm__entropy_in_auto_range(v)) return k;
  const int32_t key = plm__frame_range_key(v);
  if (key < k.lo) k.lo = key;
  if (key > k.hi) k.hi = key;
  return k;
}

/* Write a frame's range (two floats) from its keys: 0, 0 when none was seen. */
static inline PLM_HD void plm__frame_range_write(float *range, plm__frame_range_keys k) {
  const int seen = k.lo <= k.hi;
  range[0] = seen ? plm__frame_range_value(k.lo) : 0.0f;
  range[1] = seen ? plm__frame_range_value(k.hi) : 0.0f;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The scratch plm__frame_range_cuda needs for `frames` frames of frame_size elements:
 * the parts' keys, 8 bytes per part, rounded up to 256 bytes; 0 when a frame is one
 * part. */
size_t plm__frame_range_cuda_scratch_bytes(int64_t frames, int64_t frame_size);

/* Enqueue the two kernels (see the top) on a cudaStream_t, with the context's device
 * current: in holds frames x frame_size floats, ranges gets 2 floats per frame (lo, hi;
 * 0, 0 for a frame without a finite value), scratch is device memory of
 * plm__frame_range_cuda_scratch_bytes bytes (NULL when that is 0). Asynchronous; no
 * host round trip. */
plm_status plm__frame_range_cuda(void *stream, const float *in, int64_t frames, int64_t frame_size,
                                 float *ranges, void *scratch);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_FRAME_RANGE_H */

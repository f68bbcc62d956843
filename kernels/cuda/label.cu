/* kernels/cuda/label.cu: connected components and region statistics on the GPU.
 *
 * label is a block-based union-find (the design, its steps and its invariants are at
 * the top of kernels/common/label.h, where the per-pixel steps live so that the host
 * runs them too, in tests/test_label_cuda_logic.c), all on the stream, with no host
 * round trip:
 *   1. label_tiles: one block of PLM__LABEL_TILE_PIXELS threads per tile (grid-stride
 *      over the tiles of the whole batch), the tile's mask and parents in shared
 *      memory; writes every pixel's tile root (a frame index) or -1 to labels.
 *   2. label_borders: one thread per border pixel of every tile (the top row, the left
 *      column and, for 8-connectivity, the right column) unites across the tile
 *      borders with atomicMin on labels. A component's root stays its smallest index:
 *      its first pixel in raster order.
 *   3. label_flatten: every pixel's parent becomes its root, and ranks[g] = 1 where
 *      pixel g is a root, else 0.
 *   4. one in-place exclusive prefix sum (CUB) over the ranks of the whole batch. The
 *      sum runs on in u32 arithmetic across frame boundaries (it may wrap past 2^32
 *      on huge batches); a root's rank within its frame is its prefix minus the
 *      prefix at the frame's first pixel, exact modulo 2^32 and so exact, since a
 *      frame has fewer than 2^31 pixels. No loop over frames, whatever the batch.
 *   5. label_count: K of each frame = the prefix difference across the frame plus its
 *      last pixel's own flag (read from the parents: a root is its own parent).
 *   6. label_number: a pixel's label is its root's rank within the frame, plus one.
 * The scratch (the ranks and CUB's temporary storage, plm__label_cuda_scratch_bytes)
 * is the caller's (ops/op_scratch.h): plm_label takes it from the context's default
 * pool in stream order, a pipeline gives it from its workspace.
 *
 * regions accumulates in the table itself: atomicAdd on doubles for the sums, and
 * compare-and-swap loops for the bounds and the maximum (taken only when a pixel
 * would change them), then a last kernel turns sums into means.
 *
 * Not yet run on a GPU (none was available when the block-based labelling was
 * written): tests/test_label_cuda_logic.c runs its per-pixel steps on the host, tile
 * by tile and in shuffled thread orders; tests/test_label.c checks the kernels under
 * PLUME_BACKEND=cuda (ctest label.cuda). */
#include <cub/cub.cuh>

#include "kernels/common/label.h"
#include "kernels/cuda/launch.h"

namespace {

const unsigned kThreads = 256;
const unsigned kTileThreads = PLM__LABEL_TILE_PIXELS;
const size_t kAlign = 256;

size_t round_up(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

/* The scratch: ranks (u32 per pixel of the batch), then CUB's temporary storage. */
size_t ranks_bytes(const plm__label_args *args) {
  return round_up((size_t)(args->frames * args->height * args->width) * sizeof(uint32_t));
}

/* Step 1. Thread t of a block is pixel (t % TILE_W, t / TILE_W) of the block's tile: a
 * warp reads a tile row of the mask, 32 consecutive bytes. The loop over tiles is
 * uniform across the block, so every thread reaches every barrier. */
__global__ void __launch_bounds__(PLM__LABEL_TILE_PIXELS)
    label_tiles(const uint8_t *__restrict__ mask, int32_t *__restrict__ parent,
                plm__label_tiling tiling, int64_t height, int64_t width, int eight) {
  __shared__ int32_t tile_parent[PLM__LABEL_TILE_PIXELS];
  __shared__ uint8_t tile_mask[PLM__LABEL_TILE_PIXELS];
  const int t = (int)threadIdx.x, tx = t % PLM__LABEL_TILE_W, ty = t / PLM__LABEL_TILE_W;
  for (int64_t tile = blockIdx.x; tile < tiling.count; tile += gridDim.x) {
    int64_t frame, r0, c0;
    plm__label_tile_at(tiling, tile, &frame, &r0, &c0);
    const int64_t r = r0 + ty, c = c0 + tx;
    const bool inside = r < height && c < width;
    const int64_t g = (frame * height + r) * width + c;
    tile_mask[t] = inside && mask[g] != 0;
    __syncthreads();
    const int links = plm__label_tile_start(tile_parent, tile_mask, tx, ty, eight);
    __syncthreads();
    plm__label_tile_join(tile_parent, t, links);
    __syncthreads();
    if (inside) parent[g] = tile_mask[t] ? plm__label_tile_root(tile_parent, t, r0, c0, width) : -1;
    __syncthreads(); /* before the next tile overwrites the shared arrays */
  }
}

/* Step 2, over the border pixels of every tile of the batch, tile by tile. */
__global__ void label_borders(const uint8_t *__restrict__ mask, int32_t *parent,
                              plm__label_tiling tiling, int64_t height, int64_t width, int eight) {
  const int per_tile = plm__label_border_pixels(eight);
  const int64_t total = tiling.count * per_tile, frame_pixels = height * width;
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < total; j += step) {
    int64_t frame, r0, c0;
    int tx, ty;
    plm__label_tile_at(tiling, j / per_tile, &frame, &r0, &c0);
    plm__label_border_pixel((int)(j % per_tile), &tx, &ty);
    const int64_t r = r0 + ty, c = c0 + tx, base = frame * frame_pixels;
    if (r >= height || c >= width || !mask[base + r * width + c]) continue;
    plm__label_border_join(parent + base, mask + base, width, r, c, eight);
  }
}

__global__ void label_flatten(int32_t *parent, uint32_t *__restrict__ ranks, int64_t total,
                              int64_t frame_pixels) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += step) {
    const int64_t base = g - g % frame_pixels;
    ranks[g] = plm__label_flatten(parent + base, (int32_t)(g - base));
  }
}

/* Before label_number: each frame's K from the scanned ranks and the parents. */
__global__ void label_count(const int32_t *__restrict__ parent, const uint32_t *__restrict__ ranks,
                            int32_t *__restrict__ count, int64_t frames, int64_t frame_pixels) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t f = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; f < frames; f += step)
    count[f] =
        plm__label_frame_count(parent + f * frame_pixels, ranks + f * frame_pixels, frame_pixels);
}

__global__ void label_number(int32_t *__restrict__ labels, const uint32_t *__restrict__ ranks,
                             int64_t total, int64_t frame_pixels) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += step) {
    const int64_t base = g - g % frame_pixels;
    labels[g] = plm__label_number(labels[g], ranks + base);
  }
}

/* A status for what CUB returned (CUB only peeks at a launch error, so the slot is
 * emptied here). */
plm_status scan_error(cudaError_t err) {
  if (err == cudaSuccess) return PLM_OK;
  return plm__cuda_call_failed(err, "label: cub::DeviceScan::ExclusiveSum");
}

/* Atomically lower (or raise) *address to value, when value is lower (higher). */
__device__ void atomic_min_double(double *address, double value) {
  unsigned long long *bits = (unsigned long long *)address;
  unsigned long long old = *bits;
  while (value < __longlong_as_double((long long)old)) {
    unsigned long long seen = atomicCAS(bits, old, (unsigned long long)__double_as_longlong(value));
    if (seen == old) return;
    old = seen;
  }
}

__device__ void atomic_max_double(double *address, double value) {
  unsigned long long *bits = (unsigned long long *)address;
  unsigned long long old = *bits;
  while (value > __longlong_as_double((long long)old)) {
    unsigned long long seen = atomicCAS(bits, old, (unsigned long long)__double_as_longlong(value));
    if (seen == old) return;
    old = seen;
  }
}

__global__ void regions_start(double *table, const int32_t *count, int64_t capacity) {
  const int64_t rows = plm__regions_rows(*count, capacity);
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < rows; j += step)
    plm__regions_start_row(table + j * PLM_REGION_COLUMNS, j + 1);
}

template <typename T>
__global__ void regions_accumulate(const int32_t *__restrict__ labels, const T *intensity,
                                   const int32_t *count, double *table, int64_t capacity,
                                   int64_t height, int64_t width) {
  const int64_t rows = plm__regions_rows(*count, capacity), total = height * width;
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
    const int32_t label = labels[i];
    if (label < 1 || label > rows) continue;
    double *row = table + (int64_t)(label - 1) * PLM_REGION_COLUMNS;
    const double r = (double)(i / width), c = (double)(i % width);
    atomicAdd(&row[PLM_REGION_AREA], 1.0);
    atomic_min_double(&row[PLM_REGION_MIN_ROW], r);
    atomic_min_double(&row[PLM_REGION_MIN_COL], c);
    atomic_max_double(&row[PLM_REGION_MAX_ROW], r);
    atomic_max_double(&row[PLM_REGION_MAX_COL], c);
    atomicAdd(&row[PLM_REGION_CENTROID_ROW], r);
    atomicAdd(&row[PLM_REGION_CENTROID_COL], c);
    if (intensity) {
      const double v = (double)intensity[i];
      atomicAdd(&row[PLM_REGION_SUM], v);
      atomic_max_double(&row[PLM_REGION_MAX], v);
      atomicAdd(&row[PLM_REGION_WCENTROID_ROW], v * r);
      atomicAdd(&row[PLM_REGION_WCENTROID_COL], v * c);
    }
  }
}

__global__ void regions_finish(double *table, const int32_t *count, int64_t capacity,
                               int with_intensity) {
  const int64_t rows = plm__regions_rows(*count, capacity);
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < rows; j += step)
    plm__regions_finish_row(table + j * PLM_REGION_COLUMNS, with_intensity);
}

}  // namespace

extern "C" plm_status plm__label_cuda_scratch_bytes(const plm__label_args *args, size_t *bytes) {
  const int64_t total = args->frames * args->height * args->width;
  size_t temp_bytes = 0;
  /* With no temporary storage CUB only sizes it (for the current device): nothing is
   * enqueued, so no stream is needed. */
  plm_status status = scan_error(
      cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, (uint32_t *)NULL, total, (cudaStream_t)0));
  if (status != PLM_OK) return status;
  *bytes = ranks_bytes(args) + (temp_bytes ? temp_bytes : 1);
  return PLM_OK;
}

extern "C" plm_status plm__label_cuda(void *stream, const plm__label_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t frame_pixels = args->height * args->width, total = args->frames * frame_pixels;
  const plm__label_tiling tiling = plm__label_tiling_of(args->frames, args->height, args->width);
  const int eight = args->connectivity == 8;
  const unsigned blocks = plm__cuda_blocks(total, kThreads);
  uint32_t *ranks = (uint32_t *)args->scratch;
  void *temp = (char *)args->scratch + ranks_bytes(args);
  size_t temp_bytes = 0;
  plm_status status = scan_error(cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, ranks, total, s));
  if (status == PLM_OK) {
    /* One block per tile, up to plm__cuda_blocks' bound (the blocks loop over the rest). */
    const unsigned tile_blocks = plm__cuda_blocks(tiling.count * kTileThreads, kTileThreads);
    label_tiles<<<tile_blocks, kTileThreads, 0, s>>>(args->mask, args->labels, tiling, args->height,
                                                     args->width, eight);
    status = plm__cuda_check_launch("label_tiles");
  }
  if (status == PLM_OK) {
    const int64_t border = tiling.count * plm__label_border_pixels(eight);
    label_borders<<<plm__cuda_blocks(border, kThreads), kThreads, 0, s>>>(
        args->mask, args->labels, tiling, args->height, args->width, eight);
    status = plm__cuda_check_launch("label_borders");
  }
  if (status == PLM_OK) {
    label_flatten<<<blocks, kThreads, 0, s>>>(args->labels, ranks, total, frame_pixels);
    status = plm__cuda_check_launch("label_flatten");
  }
  if (status == PLM_OK)
    status = scan_error(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, ranks, total, s));
  if (status == PLM_OK) {
    label_count<<<plm__cuda_blocks(args->frames, kThreads), kThreads, 0, s>>>(
        args->labels, ranks, args->count, args->frames, frame_pixels);
    status = plm__cuda_check_launch("label_count");
  }
  if (status == PLM_OK) {
    label_number<<<blocks, kThreads, 0, s>>>(args->labels, ranks, total, frame_pixels);
    status = plm__cuda_check_launch("label_number");
  }
  return status;
}

extern "C" plm_status plm__regions_cuda(void *stream, const plm__regions_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t total = args->height * args->width;
  const unsigned row_blocks = plm__cuda_blocks(args->capacity, kThreads);
  regions_start<<<row_blocks, kThreads, 0, s>>>(args->table, args->count, args->capacity);
  plm_status status = plm__cuda_check_launch("regions_start");
  if (status != PLM_OK) return status;
  const unsigned blocks = plm__cuda_blocks(total, kThreads);
#define REGIONS_ACCUMULATE(type)                                                             \
  regions_accumulate<type>                                                                   \
      <<<blocks, kThreads, 0, s>>>(args->labels, (const type *)args->intensity, args->count, \
                                   args->table, args->capacity, args->height, args->width)
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

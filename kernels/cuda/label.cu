/* kernels/cuda/label.cu: connected components and region statistics on the GPU.
 *
 * label, with the labels array as the union-find parents (frame-local linear indices,
 * -1 on the background), all on the stream, with no host round trip:
 *   1. init: every foreground pixel is its own parent.
 *   2. merge: every foreground pixel joins its foreground neighbours above and to the
 *      left. Joining links the larger root under the smaller with atomicMin, retrying
 *      when another thread moved the root first (Playne and Hawick's union), so every
 *      parent stays at most its child and a component's root is its smallest index:
 *      its first pixel in raster order.
 *   3. compress: every foreground pixel's parent becomes its root, and ranks[g] = 1
 *      where pixel g is a root, else 0.
 *   4. one in-place exclusive prefix sum (CUB) over the ranks of the whole batch. The
 *      sum runs on in u32 arithmetic across frame boundaries (it may wrap past 2^32
 *      on huge batches); a root's rank within its frame is its prefix minus the
 *      prefix at the frame's first pixel, exact modulo 2^32 and so exact, since a
 *      frame has fewer than 2^31 pixels. No loop over frames, whatever the batch.
 *   5. count: K of each frame = the prefix difference across the frame plus its last
 *      pixel's own flag (read from the parents: a root is its own parent).
 *   6. number: a pixel's label is its root's rank within the frame, plus one.
 * The scratch (the ranks and CUB's temporary storage, plm__label_cuda_scratch_bytes)
 * is the caller's: ops/label.c takes it from the context's default pool in stream
 * order.
 *
 * regions accumulates in the table itself: atomicAdd on doubles for the sums, and
 * compare-and-swap loops for the bounds and the maximum (taken only when a pixel
 * would change them), then a last kernel turns sums into means. */
#include <cub/cub.cuh>

#include "kernels/common/label.h"
#include "kernels/cuda/launch.h"

namespace {

const unsigned kThreads = 256;
const size_t kAlign = 256;

size_t round_up(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

/* The scratch: ranks (u32 per pixel of the batch), then CUB's temporary storage. */
size_t ranks_bytes(const plm__label_args *args) {
  return round_up((size_t)(args->frames * args->height * args->width) * sizeof(uint32_t));
}

__global__ void label_init(const uint8_t *__restrict__ mask, int32_t *__restrict__ parent,
                           int64_t total, int64_t frame_pixels) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    parent[i] = mask[i] ? (int32_t)(i % frame_pixels) : -1;
}

__device__ int32_t find_root(const int32_t *parent, int32_t x) {
  const volatile int32_t *p = parent;
  int32_t next = p[x];
  while (next != x) {
    x = next;
    next = p[x];
  }
  return x;
}

__device__ void unite(int32_t *parent, int32_t a, int32_t b) {
  for (;;) {
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a == b) return;
    if (a > b) {
      int32_t t = a;
      a = b;
      b = t;
    }
    /* Hang root b under a, unless b stopped being a root meanwhile: then retry from
     * what it became. */
    int32_t old = atomicMin(&parent[b], a);
    if (old == b) return;
    b = old;
  }
}

__global__ void label_merge(const uint8_t *__restrict__ mask, int32_t *parent, int64_t total,
                            int64_t height, int64_t width, int eight) {
  const int64_t frame_pixels = height * width;
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += step) {
    if (!mask[g]) continue;
    const int64_t base = g - g % frame_pixels;
    int32_t *p = parent + base;
    const uint8_t *m = mask + base;
    const int32_t i = (int32_t)(g - base);
    const int64_t r = i / width, c = i % width;
    if (c > 0 && m[i - 1]) unite(p, i, i - 1);
    if (r == 0) continue;
    const int32_t up = i - (int32_t)width;
    if (m[up]) unite(p, i, up);
    if (eight && c > 0 && m[up - 1]) unite(p, i, up - 1);
    if (eight && c + 1 < width && m[up + 1]) unite(p, i, up + 1);
  }
}

__global__ void label_compress(int32_t *parent, uint32_t *__restrict__ ranks, int64_t total,
                               int64_t frame_pixels) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += step) {
    const int64_t base = g - g % frame_pixels;
    const int32_t i = (int32_t)(g - base);
    int32_t root = -1;
    if (parent[g] >= 0) {
      root = find_root(parent + base, i);
      parent[g] = root;
    }
    ranks[g] = root == i;
  }
}

/* Before label_number: each frame's K from the scanned ranks and the parents. */
__global__ void label_count(const int32_t *__restrict__ parent, const uint32_t *__restrict__ ranks,
                            int32_t *__restrict__ count, int64_t frames, int64_t frame_pixels) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t f = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; f < frames; f += step) {
    const int64_t first = f * frame_pixels, last = first + frame_pixels - 1;
    const uint32_t last_is_root = parent[last] == (int32_t)(frame_pixels - 1);
    count[f] = (int32_t)(ranks[last] - ranks[first] + last_is_root);
  }
}

__global__ void label_number(int32_t *__restrict__ labels, const uint32_t *__restrict__ ranks,
                             int64_t total, int64_t frame_pixels) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += step) {
    const int64_t base = g - g % frame_pixels;
    const int32_t root = labels[g];
    labels[g] = root < 0 ? 0 : (int32_t)(ranks[base + root] - ranks[base]) + 1;
  }
}

/* A status for what CUB returned, clearing CUB's launch error (it only peeks) so that
 * a later launch check is not misled. */
plm_status scan_error(cudaError_t err) {
  if (err == cudaSuccess) return PLM_OK;
  (void)cudaGetLastError();
  return plm__fail_raw(err == cudaErrorMemoryAllocation ? PLM_ERR_OUT_OF_MEMORY : PLM_ERR_BACKEND,
                       "label: cub::DeviceScan::ExclusiveSum failed: %s (%s)",
                       cudaGetErrorName(err), cudaGetErrorString(err));
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

extern "C" plm_status plm__label_cuda_scratch_bytes(void *stream, const plm__label_args *args,
                                                    size_t *bytes) {
  const int64_t total = args->frames * args->height * args->width;
  size_t temp_bytes = 0;
  /* With no temporary storage CUB only sizes it: nothing is enqueued. */
  plm_status status = scan_error(cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, (uint32_t *)NULL,
                                                               total, (cudaStream_t)stream));
  if (status != PLM_OK) return status;
  *bytes = ranks_bytes(args) + (temp_bytes ? temp_bytes : 1);
  return PLM_OK;
}

extern "C" plm_status plm__label_cuda(void *stream, const plm__label_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t frame_pixels = args->height * args->width, total = args->frames * frame_pixels;
  const unsigned blocks = plm__cuda_blocks(total, kThreads);
  uint32_t *ranks = (uint32_t *)args->scratch;
  void *temp = (char *)args->scratch + ranks_bytes(args);
  size_t temp_bytes = 0;
  plm_status status = scan_error(cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, ranks, total, s));
  if (status == PLM_OK) {
    label_init<<<blocks, kThreads, 0, s>>>(args->mask, args->labels, total, frame_pixels);
    status = plm__cuda_check_launch("label_init");
  }
  if (status == PLM_OK) {
    label_merge<<<blocks, kThreads, 0, s>>>(args->mask, args->labels, total, args->height,
                                            args->width, args->connectivity == 8);
    status = plm__cuda_check_launch("label_merge");
  }
  if (status == PLM_OK) {
    label_compress<<<blocks, kThreads, 0, s>>>(args->labels, ranks, total, frame_pixels);
    status = plm__cuda_check_launch("label_compress");
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

/* kernels/cuda/vector.cu: vector_add, its batched form and dot on the GPU.
 *
 * vector_add is plm__axpby_one in the element-wise template (kernels/cuda/map.h; bound by
 * memory: 12 bytes per element). The batch
 * cuts the concatenation of its triples into chunks of BATCH_CHUNK elements; a block
 * finds the triple holding its chunk's first element by binary search over the table
 * (in the kernel's parameters up to PLM_VECTOR_ADD_BATCH_INLINE triples, else in
 * device memory) and walks on from there. dot gives each row one block of DOT_THREADS
 * threads: strided sums in double, then a fixed pairwise tree in shared memory, so a
 * row's bits are the same on every run. */
#include <string.h>

#include "kernels/common/vector.h"
#include "kernels/cuda/map.h"

enum { BATCH_THREADS = 256, BATCH_CHUNK = 4096, DOT_THREADS = 256 };

struct add_elem {
  __device__ float operator()(const plm__vector_add_args &k, float a, float b, int64_t) const {
    return plm__axpby_one(k.alpha, a, k.beta, b);
  }
};

/* f32 only: no dtype to dispatch. out may be a or b (in place: a pipeline step over its own
 * intermediate), which the template allows. */
extern "C" plm_status plm__vector_add_cuda(void *stream, const plm__vector_add_args *args) {
  plm__map_kernel<add_elem, plm__vector_add_args, float, float, float>
      <<<plm__map_blocks(args->count), PLM__MAP_THREADS, 0, (cudaStream_t)stream>>>(
          *args, args->out, args->count, args->in, args->in2);
  return plm__cuda_check_launch("vector_add");
}

/* The table inline, passed by value in the kernel's parameters. */
struct inline_table {
  plm__vector_add_entry entries[PLM_VECTOR_ADD_BATCH_INLINE];
};

__global__ void vector_add_batch_kernel(inline_table inline_entries,
                                        const plm__vector_add_entry *device_entries, int64_t count,
                                        int64_t total, double alpha, double beta) {
  const plm__vector_add_entry *entries = device_entries ? device_entries : inline_entries.entries;
  __shared__ int64_t first_entry;
  for (int64_t chunk = blockIdx.x; chunk * BATCH_CHUNK < total; chunk += gridDim.x) {
    int64_t begin = chunk * BATCH_CHUNK;
    int64_t end = begin + BATCH_CHUNK < total ? begin + BATCH_CHUNK : total;
    __syncthreads(); /* every thread is done with the previous chunk's first_entry */
    if (threadIdx.x == 0) first_entry = plm__vector_add_find(entries, count, begin);
    __syncthreads();
    for (int64_t e = first_entry; e < count && entries[e].begin < end; e++) {
      plm__vector_add_entry entry = entries[e];
      int64_t entry_end = e + 1 < count ? entries[e + 1].begin : total;
      int64_t from = begin > entry.begin ? begin : entry.begin;
      int64_t to = end < entry_end ? end : entry_end;
      for (int64_t i = from + threadIdx.x; i < to; i += blockDim.x) {
        int64_t k = i - entry.begin;
        entry.out[k] = plm__axpby_one(alpha, entry.a[k], beta, entry.b[k]);
      }
    }
  }
}

extern "C" plm_status plm__vector_add_batch_cuda(void *stream,
                                                 const plm__vector_add_batch_args *args,
                                                 void *device_table) {
  cudaStream_t s = (cudaStream_t)stream;
  inline_table inline_entries;
  memset(&inline_entries, 0, sizeof inline_entries);
  const plm__vector_add_entry *table = NULL;
  if (args->count <= PLM_VECTOR_ADD_BATCH_INLINE) {
    memcpy(inline_entries.entries, args->entries, (size_t)args->count * sizeof *args->entries);
  } else {
    if (!device_table)
      return plm__fail_raw(PLM_ERR_INTERNAL, "vector_add_batched: no device table for %lld triples",
                           (long long)args->count);
    /* From pageable memory: CUDA stages it before returning, so args->entries may go. */
    cudaError_t err =
        cudaMemcpyAsync(device_table, args->entries, (size_t)args->count * sizeof *args->entries,
                        cudaMemcpyHostToDevice, s);
    if (err != cudaSuccess)
      return plm__cuda_call_failed(err, "vector_add_batched: copying the batch's table");
    table = (const plm__vector_add_entry *)device_table;
  }
  unsigned blocks = plm__cuda_blocks((args->total + BATCH_CHUNK - 1) / BATCH_CHUNK, 1);
  vector_add_batch_kernel<<<blocks, BATCH_THREADS, 0, s>>>(inline_entries, table, args->count,
                                                           args->total, args->alpha, args->beta);
  return plm__cuda_check_launch("vector_add_batch_kernel");
}

__global__ void dot_kernel(const float *__restrict__ a, const float *__restrict__ b, double *out,
                           int64_t rows, int64_t length) {
  __shared__ double sums[DOT_THREADS];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *ar = a + r * length, *br = b + r * length;
    double sum = 0;
    for (int64_t i = threadIdx.x; i < length; i += DOT_THREADS)
      sum = __dadd_rn(sum, __dmul_rn((double)ar[i], (double)br[i]));
    sums[threadIdx.x] = sum;
    __syncthreads();
    for (int half = DOT_THREADS / 2; half > 0; half /= 2) {
      if (threadIdx.x < half)
        sums[threadIdx.x] = __dadd_rn(sums[threadIdx.x], sums[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[r] = sums[0];
    __syncthreads(); /* sums[0] read before the next row overwrites it */
  }
}

extern "C" plm_status plm__dot_cuda(void *stream, const plm__dot_args *args) {
  unsigned blocks = plm__cuda_blocks(args->rows, 1);
  dot_kernel<<<blocks, DOT_THREADS, 0, (cudaStream_t)stream>>>(args->a, args->b, args->out,
                                                               args->rows, args->length);
  return plm__cuda_check_launch("dot_kernel");
}

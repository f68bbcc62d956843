/* kernels/common/vector.h: the per-element math of vector_add and dot that both
 * backends run, and the arguments of their launches (semantics in plume/vector.h). */
#ifndef PLUME_KERNELS_COMMON_VECTOR_H
#define PLUME_KERNELS_COMMON_VECTOR_H

#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/vector.h"

/* alpha * a + beta * b in double, each operation rounded (no contraction into a fused
 * multiply-add, which nvcc would do), then rounded once to f32: the same bits on both
 * backends, and a + b exactly numpy's float32 sum. */
static inline PLM_HD float plm__axpby_one(double alpha, float a, double beta, float b) {
#ifdef __CUDA_ARCH__
  return (float)__dadd_rn(__dmul_rn(alpha, (double)a), __dmul_rn(beta, (double)b));
#else
  return (float)(alpha * (double)a + beta * (double)b);
#endif
}

typedef struct plm__vector_add_args {
  const float *in, *in2; /* a and b */
  float *out;
  int64_t count;
  int64_t period; /* 0: the element-wise template's p is unused (kernels/cuda/map.h) */
  double alpha;
  double beta;
} plm__vector_add_args;

/* One triple of a batch; begin is its first element's index in the concatenation of
 * every triple (entries are in order, begin strictly increasing: no triple is empty). */
typedef struct plm__vector_add_entry {
  const float *a;
  const float *b;
  float *out;
  int64_t begin;
} plm__vector_add_entry;

typedef struct plm__vector_add_batch_args {
  const plm__vector_add_entry *entries; /* host memory: count entries */
  int64_t count;
  int64_t total; /* elements in all triples */
  double alpha;
  double beta;
} plm__vector_add_batch_args;

/* The index of the entry holding element `index` of the concatenation: the last entry
 * whose begin is <= index. */
static inline PLM_HD int64_t plm__vector_add_find(const plm__vector_add_entry *entries,
                                                  int64_t count, int64_t index) {
  int64_t low = 0, high = count - 1;
  while (low < high) {
    int64_t mid = low + (high - low + 1) / 2;
    if (entries[mid].begin <= index)
      low = mid;
    else
      high = mid - 1;
  }
  return low;
}

/* dot: rows of `length` elements; out[r] = sum a[r, i] * b[r, i] in double. */
typedef struct plm__dot_args {
  const float *a;
  const float *b;
  double *out;
  int64_t rows;
  int64_t length;
} plm__dot_args;

enum { PLM__DOT_BLOCK = 4096 }; /* the host's fixed summation block (plume/vector.h) */

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernels (kernels/cpu/vector.c): run on the calling thread and the CPU pool;
 * return when done. */
void plm__vector_add_cpu(const plm__vector_add_args *args);
void plm__vector_add_batch_cpu(const plm__vector_add_batch_args *args);
void plm__dot_cpu(const plm__dot_args *args);

/* Enqueue the CUDA kernels (kernels/cuda/vector.cu) on a cudaStream_t. The batch
 * launcher reads args->entries (host memory) during the call only: up to
 * PLM_VECTOR_ADD_BATCH_INLINE entries go in the kernel's parameters and device_table
 * is unused (may be NULL); more are copied on the stream into device_table (room for
 * args->count entries). */
plm_status plm__vector_add_cuda(void *stream, const plm__vector_add_args *args);
plm_status plm__vector_add_batch_cuda(void *stream, const plm__vector_add_batch_args *args,
                                      void *device_table);
plm_status plm__dot_cuda(void *stream, const plm__dot_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_VECTOR_H */

/* kernels/common/label.h: the arguments of label and regions launches, and the
 * per-region arithmetic both backends share (see plume/label.h for the semantics). */
#ifndef PLUME_KERNELS_COMMON_LABEL_H
#define PLUME_KERNELS_COMMON_LABEL_H

#include <math.h>
#include <stdint.h>

#include "kernels/common/plm_hd.h"
#include "plume/label.h"

typedef struct plm__label_args {
  const uint8_t *mask;
  int32_t *labels; /* also the union-find parents while the kernels run */
  int32_t *count;  /* one per frame */
  void *scratch;   /* CUDA only: plm__label_cuda_scratch_bytes bytes, from the pool */
  int64_t frames;
  int64_t height, width; /* height * width <= INT32_MAX */
  int connectivity;      /* 4 or 8 */
} plm__label_args;

typedef struct plm__regions_args {
  const int32_t *labels;
  const void *intensity; /* NULL, or of intensity_dtype */
  plm_dtype intensity_dtype;
  const int32_t *count; /* K, read in stream order */
  double *table;        /* capacity x PLM_REGION_COLUMNS */
  int64_t capacity;
  int64_t height, width;
} plm__regions_args;

/* The rows written: min(K, capacity), K < 0 taken as 0. */
static inline PLM_HD int64_t plm__regions_rows(int32_t k, int64_t capacity) {
  int64_t rows = k < 0 ? 0 : (int64_t)k;
  return rows < capacity ? rows : capacity;
}

/* A row before accumulation: its label, zero sums, and bounds that any pixel
 * replaces. */
static inline PLM_HD void plm__regions_start_row(double *row, int64_t label) {
  for (int c = 0; c < PLM_REGION_COLUMNS; c++) row[c] = 0;
  row[PLM_REGION_LABEL] = (double)label;
  row[PLM_REGION_MIN_ROW] = row[PLM_REGION_MIN_COL] = INFINITY;
  row[PLM_REGION_MAX_ROW] = row[PLM_REGION_MAX_COL] = -INFINITY;
  row[PLM_REGION_MAX] = -INFINITY;
}

/* While accumulating, a row holds sums where the final table holds means: the
 * centroid columns hold sum(row), sum(col), the weighted ones sum(I * row),
 * sum(I * col), and max starts at -infinity. Turn an accumulated row into its final
 * form. */
static inline PLM_HD void plm__regions_finish_row(double *row, int with_intensity) {
  double area = row[PLM_REGION_AREA];
  if (area == 0) {
    for (int c = PLM_REGION_AREA; c < PLM_REGION_COLUMNS; c++) row[c] = 0;
    return;
  }
  row[PLM_REGION_CENTROID_ROW] /= area;
  row[PLM_REGION_CENTROID_COL] /= area;
  if (with_intensity) {
    row[PLM_REGION_WCENTROID_ROW] /= row[PLM_REGION_SUM];
    row[PLM_REGION_WCENTROID_COL] /= row[PLM_REGION_SUM];
  } else {
    row[PLM_REGION_SUM] = row[PLM_REGION_MAX] = 0;
    row[PLM_REGION_WCENTROID_ROW] = row[PLM_REGION_WCENTROID_COL] = 0;
  }
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU kernels (kernels/cpu/label.c): run on the calling thread and the CPU pool;
 * return when done. */
void plm__label_cpu(const plm__label_args *args);
void plm__regions_cpu(const plm__regions_args *args);

/* Enqueue the CUDA kernels (kernels/cuda/label.cu) on a cudaStream_t, with the
 * context's device current. plm__label_cuda needs args->scratch of the size
 * plm__label_cuda_scratch_bytes gives (it asks CUB, which enqueues nothing): the
 * ranks of the batch and the prefix sum's temporary storage, 256-byte aligned. */
plm_status plm__label_cuda_scratch_bytes(void *stream, const plm__label_args *args, size_t *bytes);
plm_status plm__label_cuda(void *stream, const plm__label_args *args);
plm_status plm__regions_cuda(void *stream, const plm__regions_args *args);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_LABEL_H */

/* kernels/cpu/vector.c: vector_add, its batched form and dot on the CPU, split across
 * cores. The add loops vectorise (double arithmetic, one rounding to f32); dot sums
 * fixed blocks with four accumulators, so its bits do not depend on the core count. */
#include <stdlib.h>

#include "kernels/common/vector.h"
#include "streams/parallel.h"

enum { ADD_GRAIN = 1 << 15 }; /* elements per chunk at least: ~384 KiB moved */

static void add_span(const float *a, const float *b, float *out, int64_t count, double alpha,
                     double beta) {
  for (int64_t i = 0; i < count; i++) out[i] = plm__axpby_one(alpha, a[i], beta, b[i]);
}

static void add_range(void *context, int64_t begin, int64_t end) {
  const plm__vector_add_args *args = context;
  add_span(args->in + begin, args->in2 + begin, args->out + begin, end - begin, args->alpha,
           args->beta);
}

void plm__vector_add_cpu(const plm__vector_add_args *args) {
  plm__parallel_for(args->count, ADD_GRAIN, add_range, (void *)args);
}

/* [begin, end) of the concatenation: from the entry holding begin, each entry's part. */
static void batch_range(void *context, int64_t begin, int64_t end) {
  const plm__vector_add_batch_args *args = context;
  for (int64_t e = plm__vector_add_find(args->entries, args->count, begin);
       e < args->count && args->entries[e].begin < end; e++) {
    const plm__vector_add_entry *entry = &args->entries[e];
    int64_t entry_end = e + 1 < args->count ? args->entries[e + 1].begin : args->total;
    int64_t from = begin > entry->begin ? begin : entry->begin;
    int64_t to = end < entry_end ? end : entry_end;
    int64_t offset = from - entry->begin;
    add_span(entry->a + offset, entry->b + offset, entry->out + offset, to - from, args->alpha,
             args->beta);
  }
}

void plm__vector_add_batch_cpu(const plm__vector_add_batch_args *args) {
  plm__parallel_for(args->total, ADD_GRAIN, batch_range, (void *)args);
}

/* One fixed block: four interleaved accumulators, combined (s0 + s1) + (s2 + s3). */
static double dot_block(const float *a, const float *b, int64_t count) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    s0 += (double)a[i] * (double)b[i];
    s1 += (double)a[i + 1] * (double)b[i + 1];
    s2 += (double)a[i + 2] * (double)b[i + 2];
    s3 += (double)a[i + 3] * (double)b[i + 3];
  }
  for (; i < count; i++) s0 += (double)a[i] * (double)b[i];
  return (s0 + s1) + (s2 + s3);
}

static int64_t blocks_per_row(const plm__dot_args *args) {
  return (args->length + PLM__DOT_BLOCK - 1) / PLM__DOT_BLOCK;
}

/* Whole rows, blocks left to right. */
static void dot_rows(void *context, int64_t begin, int64_t end) {
  const plm__dot_args *args = context;
  int64_t blocks = blocks_per_row(args);
  for (int64_t r = begin; r < end; r++) {
    const float *a = args->a + r * args->length, *b = args->b + r * args->length;
    double sum = 0;
    for (int64_t k = 0; k < blocks; k++) {
      int64_t first = k * PLM__DOT_BLOCK;
      int64_t n = args->length - first < PLM__DOT_BLOCK ? args->length - first : PLM__DOT_BLOCK;
      sum += dot_block(a + first, b + first, n);
    }
    args->out[r] = sum;
  }
}

/* Few long rows: every block's sum in parallel into partials, then each row's blocks
 * added left to right, as dot_rows does (the same bits). */
typedef struct dot_partials {
  const plm__dot_args *args;
  int64_t blocks; /* per row */
  double *partials;
} dot_partials;

static void dot_blocks(void *context, int64_t begin, int64_t end) {
  const dot_partials *work = context;
  const plm__dot_args *args = work->args;
  for (int64_t j = begin; j < end; j++) {
    int64_t r = j / work->blocks, first = (j % work->blocks) * PLM__DOT_BLOCK;
    int64_t n = args->length - first < PLM__DOT_BLOCK ? args->length - first : PLM__DOT_BLOCK;
    work->partials[j] =
        dot_block(args->a + r * args->length + first, args->b + r * args->length + first, n);
  }
}

void plm__dot_cpu(const plm__dot_args *args) {
  int64_t blocks = blocks_per_row(args);
  int threads = plm__parallel_threads();
  double *partials = NULL;
  if (blocks > 1 && args->rows < 2 * (int64_t)threads)
    partials = malloc((size_t)(args->rows * blocks) * sizeof *partials);
  if (!partials) { /* enough rows to share out, or no memory: the same order, by rows */
    int64_t grain = (1 << 16) / args->length + 1;
    plm__parallel_for(args->rows, grain, dot_rows, (void *)args);
    return;
  }
  dot_partials work = {.args = args, .blocks = blocks, .partials = partials};
  plm__parallel_for(args->rows * blocks, 4, dot_blocks, &work);
  for (int64_t r = 0; r < args->rows; r++) {
    double sum = 0;
    for (int64_t k = 0; k < blocks; k++) sum += partials[r * blocks + k];
    args->out[r] = sum;
  }
  free(partials);
}

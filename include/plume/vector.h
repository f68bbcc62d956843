/* plume/vector.h: element-wise vector arithmetic and dot products (conventions in
 * plume/ops.h). */
#ifndef PLUME_VECTOR_H
#define PLUME_VECTOR_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- vector_add (axpby) -----------------------------------------------------------
 * out = alpha * a + beta * b, element by element, as numpy's `alpha * a + beta * b`
 * on float32 arrays; with params NULL (or alpha = beta = 1) it is numpy's `a + b`.
 * a, b and out are f32 of one shape (1 to 4 dims, any size). Each element is computed
 * in double precision and rounded once to f32, so a + b (and a - b) equals numpy's
 * float32 result bit for bit, and axpby is within one f32 rounding of the exact value
 * (numpy rounds after each operation, so it may differ from ours by an ulp). Both
 * backends give the same bits. out may be a or b exactly (in place), but may not
 * overlap either otherwise. alpha and beta must be finite. */
typedef struct plm_vector_add_params {
  double alpha;
  double beta;
} plm_vector_add_params;

/* plm_vector_add_params_default: The defaults of the operation's parameter schema (ops/op_desc.h):
 * alpha 1, beta 1: a + b. */
/* plm_vector_add_cost: bytes = 12 per element (two f32 reads, one f32 write); flops = 3 per element
 * (two multiplies and an add; counted the same for a plain add). */

/* ---- vector_add_batched -----------------------------------------------------------
 * count independent vector_adds, out[i] = alpha * a[i] + beta * b[i], with one params
 * for all, in one launch: one CUDA kernel on cuda, one CPU task on host (split across
 * cores). Each triple follows plm_vector_add's rules (f32, a[i], b[i] and out[i] of
 * one shape; each triple may have its own shape and length); every triple is checked
 * before anything is enqueued, and the message names the index ("a[3] is NULL").
 * Besides, no out[i] may overlap another out[j], nor an input of another triple (the
 * triples run concurrently); out[i] may be a[i] or b[i] exactly. count is >= 1 and the
 * three arrays are not NULL; the arrays themselves are read during the call only.
 *
 * On cuda the kernel needs a table of the triples (pointers and element offsets):
 *   - up to PLM_VECTOR_ADD_BATCH_INLINE triples travel in the kernel's parameters (no
 *     copy, no allocation: the common case of a few small vectors costs one launch);
 *   - more go in a table taken from the stream's context's default pool
 *     (plm_context_default_pool, plm_pool_alloc on the stream), filled with a copy on the
 *     stream from host memory and given back (plm_pool_free) on the stream after the
 *     launch, so nothing waits. The copy is from pageable memory, which CUDA stages
 *     before returning; such a copy cannot be captured into a CUDA graph, so a batch of
 *     more than PLM_VECTOR_ADD_BATCH_INLINE triples is not graph-capturable.
 * The kernel splits the concatenation of all triples into fixed chunks, so one long
 * vector among many short ones does not leave the GPU idle. */
enum { PLM_VECTOR_ADD_BATCH_INLINE = 32 };

PLM_API plm_status plm_vector_add_batched(plm_stream *stream, const plm_tensor *const a[],
                                          const plm_tensor *const b[],
                                          const plm_vector_add_params *params,
                                          plm_tensor *const out[], int64_t count);
/* The sum of plm_vector_add_cost over the triples. */
PLM_API plm_status plm_vector_add_batched_cost(const plm_tensor *const a[],
                                               const plm_tensor *const b[],
                                               const plm_vector_add_params *params, int64_t count,
                                               plm_op_cost *cost);

/* ---- dot ----------------------------------------------------------------------------
 * The dot product of a and b, as numpy.dot(a.astype(np.float64), b.astype(np.float64))
 * (or, for rows, (a64 * b64).sum(axis=1)): a and b are f32 of one shape, (N) or (R, N);
 * out is f64 of shape (1) for (N), (R) for (R, N): one value per row.
 *
 * Accumulation is in double: each product of two f32 is exact in double, and the sums
 * are of fixed blocks combined in a fixed order, so a backend gives the same bits on
 * every run (no float atomics, nothing depends on the number of cores or on timing).
 * The two backends' orders differ, so they may differ from each other in the last bits:
 *   host: each row is cut into blocks of 4096 elements; a block is summed with four
 *         interleaved accumulators (element i into accumulator i % 4; the last
 *         length % 4 into the first) combined as (s0 + s1) + (s2 + s3); the blocks'
 *         sums are added left to right. Worst-case error about
 *         (1024 + N / 4096) * 2^-53 * sum|a * b|.
 *   cuda: one block of 256 threads per row; thread t sums elements t, t + 256, ... in
 *         order; the 256 sums are combined by a fixed pairwise tree. Worst-case error
 *         about (N / 256 + 8) * 2^-53 * sum|a * b|.
 * Both are far inside 1e-12 * sum|a * b| for rows up to millions of elements (the
 * tests' tolerance against numpy.dot in float64); typical errors are much smaller.
 * Rows much shorter than 256 leave most of a CUDA block idle: fine for a few long rows
 * or many rows of hundreds of elements, wasteful for very many tiny rows.
 * NaN and infinities propagate as in IEEE arithmetic. params may be NULL. */
typedef struct plm_dot_params {
  int reserved; /* 0; nothing to choose yet */
} plm_dot_params;

/* plm_dot_params_default: reserved 0. */
/* plm_dot_cost: bytes = 8 per element of a (two f32 reads) + 8 per output value; flops = 2 per
 * element of a (a multiply and an add). */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_VECTOR_H */

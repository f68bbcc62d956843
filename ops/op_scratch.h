/* ops/op_scratch.h: operations' scratch memory, sized from shapes and given per call
 * (internal).
 *
 * Some operations need working memory besides their operands (histograms, a GEMM's
 * products, a composite's intermediate mask). Which ones, on which backend and how much
 * is data in their descriptors (ops/op_desc.h), never a list kept here: cpu_scratch and
 * cuda_scratch size it from the kernels' packed arguments (NULL: none on that backend),
 * or a composite op's scratch_bytes from its parts'; each kernel's header in
 * kernels/common (a composite's own file, ops/segment_chain.c) says what its scratch holds.
 * The other ops take none from a pool (the
 * CPU conv2d and sobel kernels malloc working buffers per work chunk inside the kernel,
 * kernels/cpu/conv.c, and fall back to a slower path when malloc fails).
 *
 * Who gives it, always in stream order (the kernels own it until the stream has run
 * them):
 *   a public op (plm__op_call_public)  takes it from the context's default pool for the
 *                                      call and gives it back on the stream (below);
 *   a compiled pipeline                gives each step a range of its workspace
 *                                      (pipeline/plan_memory.c);
 *   any other caller                   asks plm__op_scratch_bytes and passes its own block
 *                                      to plm__op_call_with_scratch (ops/op_desc.h), which
 *                                      checks it with plm__op_check_scratch below.
 *
 * Messages are raw (plm__fail_raw: no function name); a public op adds its own name.
 */
#ifndef PLUME_OPS_OP_SCRATCH_H
#define PLUME_OPS_OP_SCRATCH_H

#include <stddef.h>

#include "plume/pool.h"
#include "plume/tensor.h"
#include "streams/runtime.h"

/* Where scratch must start: the pool's alignment and the pipelines' workspace offsets. */
enum { PLM_OP_SCRATCH_ALIGN = 256 };

/* The checks of a caller's scratch (plm__op_call_with_scratch): scratch_bytes >= needed,
 * scratch set when needed > 0, PLM_OP_SCRATCH_ALIGN-aligned, and [scratch, scratch +
 * needed) disjoint from each of the `count` operands (NULL entries are skipped), named in
 * `names`. `op` ("entropy") names the op in the message about the size. Raw messages. */
plm_status plm__op_check_scratch(const char *op, const void *scratch, size_t scratch_bytes,
                                 size_t needed, const plm_tensor *const *operands,
                                 const char *const *names, int count);

/* The public ops' scratch: take `bytes` from the stream's context's default pool for
 * work enqueued on stream next (*pool and *scratch stay NULL when bytes is 0), and give
 * it back on the stream once that work is enqueued (stream-ordered: the work still owns
 * it); give returns `status` when it is not PLM_OK, else the free's. Raw messages. */
plm_status plm__op_scratch_take(plm_stream *stream, size_t bytes, plm_pool **pool, void **scratch);
plm_status plm__op_scratch_give(plm_stream *stream, plm_pool *pool, void *scratch,
                                plm_status status);

#endif /* PLUME_OPS_OP_SCRATCH_H */

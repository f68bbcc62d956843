/* ops/op_scratch.c: what the operations with scratch share (ops/op_scratch.h). */
#include <stdint.h>

#include "ops/op_scratch.h"
#include "streams/error.h"

plm_status plm__op_check_scratch(const char *op, const void *scratch, size_t scratch_bytes,
                                 size_t needed, const plm_tensor *const *operands,
                                 const char *const *names, int count) {
  if (scratch_bytes < needed)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "scratch_bytes %zu is less than the %zu bytes %s needs here",
                         scratch_bytes, needed, op);
  if (needed == 0) return PLM_OK;
  if (!scratch)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "scratch is NULL but %s needs %zu bytes", op, needed);
  const uintptr_t begin = (uintptr_t)scratch, end = begin + needed;
  if (begin % PLM_OP_SCRATCH_ALIGN != 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "scratch %p is not %d-byte aligned", scratch,
                         PLM_OP_SCRATCH_ALIGN);
  for (int i = 0; i < count; i++) {
    if (!operands[i]) continue;
    const uintptr_t a = (uintptr_t)operands[i]->data, b = a + plm_tensor_bytes(operands[i]);
    if (a < end && begin < b)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "scratch overlaps %s", names[i]);
  }
  return PLM_OK;
}

plm_status plm__op_scratch_take(plm_stream *stream, size_t bytes, plm_pool **pool, void **scratch) {
  *pool = NULL;
  *scratch = NULL;
  if (bytes == 0) return PLM_OK;
  plm_status status = plm_context_default_pool(stream->ctx, pool);
  if (status == PLM_OK) status = plm_pool_alloc(*pool, bytes, stream, scratch);
  return status;
}

plm_status plm__op_scratch_give(plm_stream *stream, plm_pool *pool, void *scratch,
                                plm_status status) {
  if (!scratch) return status;
  plm_status freed = plm_pool_free(pool, scratch, stream);
  return status != PLM_OK ? status : freed;
}

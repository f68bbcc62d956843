/* pool/pool_upstream.c: where memory comes from (internal): the user's
 * plm_pool_upstream or the backend, for the pooled resource's chunks and the
 * passthrough resource's blocks. */
#include "pool/pool_internal.h"
#include "streams/error.h"

/* ---- the upstream: the user's callbacks, else the backend ---------------------------- */

/* Per thread: a request's slow path runs on the thread that made it. */
static _Thread_local size_t refused_bytes;

size_t plm__pool_upstream_refused(bool clear) {
  size_t bytes = refused_bytes;
  if (clear) refused_bytes = 0;
  return bytes;
}

plm_status plm__pool_reserve(plm_pool *pool, size_t bytes, void *stream, void **ptr) {
  const plm_pool_upstream *up = &pool->upstream;
  if (!up->alloc) return pool->backend->mem_alloc(pool->backend_ctx, bytes, ptr);
  void *memory = NULL;
  plm_status status = up->alloc(bytes, stream, up->user, &memory);
  if (status == PLM_ERR_OUT_OF_MEMORY) {
    if (bytes > refused_bytes) refused_bytes = bytes;
    return plm__fail_raw(status, "the upstream's alloc of %zu bytes ran out of memory", bytes);
  }
  if (status != PLM_OK)
    return plm__fail_raw(PLM_ERR_BACKEND, "the upstream's alloc of %zu bytes failed with %d (%s)",
                         bytes, (int)status, plm_status_str(status));
  if (!memory || (uintptr_t)memory % POOL_GRANULE != 0) {
    if (memory) up->free(memory, bytes, stream, up->user);
    return plm__fail_raw(PLM_ERR_BACKEND,
                         "the upstream's alloc of %zu bytes returned %p, which is not a pointer "
                         "aligned to %d bytes",
                         bytes, memory, POOL_GRANULE);
  }
  *ptr = memory;
  return PLM_OK;
}

void plm__pool_unreserve(plm_pool *pool, void *ptr, size_t bytes, void *stream) {
  const plm_pool_upstream *up = &pool->upstream;
  if (up->free)
    up->free(ptr, bytes, stream, up->user);
  else
    pool->backend->mem_free(pool->backend_ctx, ptr);
}

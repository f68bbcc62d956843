/* pool/pool_upstream.c: where memory comes from (internal): the user's
 * plm_pool_upstream or the backend, for the pooled mode's chunks and the
 * passthrough mode's blocks; and the PASSTHROUGH and CUDA_ASYNC modes, where every
 * allocation and free goes upstream (cudaMalloc/cudaFree, aligned host memory or the
 * user's callbacks; cudaMallocAsync on the backend's pool or an adopted one). The
 * pool only tracks those blocks, to check frees and keep statistics. */
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

/* ---- passthrough and cuda_async modes: every call goes upstream ---------------------- */

/* Track an upstream block (its bytes already counted as reserved) so that frees can
 * be checked. */
static plm_status track_upstream(plm_pool *pool, void *memory, size_t bytes) {
  pthread_mutex_lock(&pool->lock);
  pool_block *block = plm__pool_descriptor_new(pool);
  if (block) {
    block->addr = (uintptr_t)memory;
    block->size = pool_round_up(bytes, POOL_GRANULE);
    block->requested = bytes;
    block->state = BLOCK_USED;
    if (!pool_live_insert(&pool->live, block)) {
      plm__pool_descriptor_release(pool, block);
      block = NULL;
    }
  }
  if (block) {
    pool->stats.upstream_allocs++;
    plm__pool_note_allocated(pool, block->size, bytes, false, false);
  }
  pthread_mutex_unlock(&pool->lock);
  return block ? PLM_OK : plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory to track a block");
}

/* Forget an upstream block; false when ptr is not one. *bytes: what it was asked for. */
static bool untrack_upstream(plm_pool *pool, void *ptr, size_t *bytes) {
  uintptr_t addr = (uintptr_t)ptr;
  pthread_mutex_lock(&pool->lock);
  pool_block *block = pool_live_find(&pool->live, addr);
  if (block) {
    pool_live_remove(&pool->live, addr);
    plm__pool_note_freed(pool, block->size, block->requested);
    pool->stats.bytes_reserved -= block->size;
    pool->stats.upstream_frees++;
    *bytes = block->requested;
    plm__pool_descriptor_release(pool, block);
  }
  pthread_mutex_unlock(&pool->lock);
  return block != NULL;
}

/* Give a block of `bytes` (as asked for) straight back upstream. */
static plm_status upstream_release(plm_pool *pool, void *memory, size_t bytes, void *stream) {
  if (pool->config.mode == PLM_POOL_CUDA_ASYNC)
    return pool->backend->async_free(pool->backend_ctx, pool->async_pool, memory, stream);
  if (!pool->upstream.free) return pool->backend->mem_free(pool->backend_ctx, memory);
  /* As cudaFree would: the block is unused when the upstream gets it back. */
  plm_status status =
      stream ? pool->backend->stream_synchronize(pool->backend_ctx, stream) : PLM_OK;
  plm__pool_unreserve(pool, memory, bytes, stream);
  return status;
}

plm_status plm__pool_upstream_alloc(plm_pool *pool, size_t bytes, plm_stream *stream, void **ptr) {
  /* Count the bytes as reserved before the upstream call, so that threads racing
   * for the last bytes under byte_limit cannot both pass the check. */
  size_t size = pool_round_up(bytes, POOL_GRANULE);
  size_t limit = pool->config.byte_limit;
  plm__pool_upstream_refused(true);
  pthread_mutex_lock(&pool->lock);
  bool over =
      limit && (pool->stats.bytes_reserved > limit || size > limit - pool->stats.bytes_reserved);
  if (over)
    pool->stats.failures++;
  else
    plm__pool_note_reserved(pool, size);
  pthread_mutex_unlock(&pool->lock);
  if (over) {
    plm__pool_format_failure(pool, &(request){.bytes = bytes});
    return PLM_ERR_OUT_OF_MEMORY;
  }
  void *memory = NULL;
  plm_status status = pool->config.mode == PLM_POOL_CUDA_ASYNC
                          ? pool->backend->async_alloc(pool->backend_ctx, pool->async_pool, bytes,
                                                       stream->handle, &memory)
                          : plm__pool_reserve(pool, bytes, stream->handle, &memory);
  if (status == PLM_OK) {
    status = track_upstream(pool, memory, bytes);
    if (status != PLM_OK) upstream_release(pool, memory, bytes, stream->handle);
  }
  if (status != PLM_OK) {
    pthread_mutex_lock(&pool->lock);
    pool->stats.bytes_reserved -= size;
    pool->stats.failures++;
    pthread_mutex_unlock(&pool->lock);
    if (status == PLM_ERR_OUT_OF_MEMORY && plm__pool_upstream_refused(false))
      plm__pool_format_failure(pool, &(request){.bytes = bytes});
    return status;
  }
  *ptr = memory;
  return PLM_OK;
}

plm_status plm__pool_upstream_free(plm_pool *pool, void *ptr, plm_stream *stream) {
  size_t bytes = 0;
  if (!untrack_upstream(pool, ptr, &bytes))
    return plm__fail_raw(PLM_ERR_NOT_FOUND,
                         "ptr %p is not a live block of this pool (never allocated, already "
                         "freed, or an interior pointer)",
                         ptr);
  return upstream_release(pool, ptr, bytes, stream->handle);
}

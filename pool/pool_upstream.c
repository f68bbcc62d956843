/* pool/pool_upstream.c: the PASSTHROUGH and CUDA_ASYNC modes (internal), where
 * every allocation and free goes to the backend (cudaMalloc/cudaFree or aligned
 * host memory; cudaMallocAsync on the backend's own pool). The pool only tracks
 * the blocks, to check frees and keep statistics. */
#include "pool/pool_internal.h"
#include "streams/error.h"

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
    plm__pool_note_allocated(pool, block, bytes, NULL, true);
  }
  pthread_mutex_unlock(&pool->lock);
  return block ? PLM_OK : plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory to track a block");
}

/* Forget an upstream block; false when ptr is not one. */
static bool untrack_upstream(plm_pool *pool, void *ptr) {
  uintptr_t addr = (uintptr_t)ptr;
  pthread_mutex_lock(&pool->lock);
  pool_block *block = pool_live_find(&pool->live, addr);
  if (block) {
    pool_live_remove(&pool->live, addr);
    pool->stats.live_blocks--;
    pool->stats.bytes_in_use -= block->size;
    pool->stats.bytes_requested -= block->requested;
    pool->stats.bytes_reserved -= block->size;
    pool->stats.upstream_frees++;
    plm__pool_descriptor_release(pool, block);
  }
  pthread_mutex_unlock(&pool->lock);
  return block != NULL;
}

/* Give a block straight back upstream. */
static plm_status upstream_release(plm_pool *pool, void *memory, plm_stream *stream) {
  if (pool->config.mode == PLM_POOL_CUDA_ASYNC)
    return pool->backend->async_free(pool->backend_ctx, pool->async_pool, memory, stream->handle);
  return pool->backend->mem_free(pool->backend_ctx, memory);
}

plm_status plm__pool_upstream_alloc(plm_pool *pool, size_t bytes, plm_stream *stream, void **ptr) {
  /* Count the bytes as reserved before the upstream call, so that threads racing
   * for the last bytes under byte_limit cannot both pass the check. */
  size_t size = pool_round_up(bytes, POOL_GRANULE);
  size_t limit = pool->config.byte_limit;
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
                          : pool->backend->mem_alloc(pool->backend_ctx, bytes, &memory);
  if (status == PLM_OK) {
    status = track_upstream(pool, memory, bytes);
    if (status != PLM_OK) upstream_release(pool, memory, stream);
  }
  if (status != PLM_OK) {
    pthread_mutex_lock(&pool->lock);
    pool->stats.bytes_reserved -= size;
    pool->stats.failures++;
    pthread_mutex_unlock(&pool->lock);
    return status;
  }
  *ptr = memory;
  return PLM_OK;
}

plm_status plm__pool_upstream_free(plm_pool *pool, void *ptr, plm_stream *stream) {
  if (!untrack_upstream(pool, ptr))
    return plm__fail_raw(PLM_ERR_NOT_FOUND,
                         "ptr %p is not a live block of this pool (never allocated, already "
                         "freed, or an interior pointer)",
                         ptr);
  return upstream_release(pool, ptr, stream);
}

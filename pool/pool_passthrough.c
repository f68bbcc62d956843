/* pool/pool_passthrough.c: the passthrough and cuda_async resources
 * (pool/pool_resource.h), where every allocation and free goes upstream: cudaMalloc /
 * cudaFree, aligned host memory or the user's callbacks (passthrough, through
 * pool/pool_upstream.c); cudaMallocAsync / cudaFreeAsync on the backend's cudaMemPool or
 * an adopted one (cuda_async). The pool only tracks those blocks, to check frees and
 * keep statistics. The two differ only in where a block comes from and goes back to,
 * and in what they hold besides (cuda_async: its cudaMemPool). */
#include "pool/pool_internal.h"
#include "pool/pool_resource.h"
#include "streams/error.h"

/* ---- tracking: every block is live in the pool's table ----------------------------- */

/* Track an upstream block so that frees can be checked, and count it as reserved (its
 * bytes, admitted by the byte limit, are settled). */
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
    pool_limit_settle(&pool->limit, block->size);
    pool_count_reserved(&pool->stats, block->size);
    pool->stats.upstream_allocs++;
    pool_count_allocated(&pool->stats, block->size, bytes, false, false);
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
    pool_count_freed(&pool->stats, block->size, block->requested);
    pool->stats.bytes_reserved -= block->size;
    pool->stats.upstream_frees++;
    *bytes = block->requested;
    plm__pool_descriptor_release(pool, block);
  }
  pthread_mutex_unlock(&pool->lock);
  return block != NULL;
}

/* ---- where a block comes from and goes back to ------------------------------------- */

/* A block of `bytes` for `stream` (the backend's handle), or the way it goes back
 * (stream NULL: no work uses it any more). Passthrough takes with plm__pool_reserve. */
typedef plm_status (*take_fn)(plm_pool *pool, size_t bytes, void *stream, void **ptr);
typedef plm_status (*give_fn)(plm_pool *pool, void *memory, size_t bytes, void *stream);

static plm_status upstream_give(plm_pool *pool, void *memory, size_t bytes, void *stream) {
  if (!pool->upstream.free) return pool->backend->mem_free(pool->backend_ctx, memory);
  /* As cudaFree would: the block is unused when the upstream gets it back. */
  plm_status status =
      stream ? pool->backend->stream_synchronize(pool->backend_ctx, stream) : PLM_OK;
  plm__pool_unreserve(pool, memory, bytes, stream);
  return status;
}

static plm_status async_take(plm_pool *pool, size_t bytes, void *stream, void **ptr) {
  return pool->backend->async_alloc(pool->backend_ctx, pool->async_pool, bytes, stream, ptr);
}

static plm_status async_give(plm_pool *pool, void *memory, size_t bytes, void *stream) {
  (void)bytes;
  return pool->backend->async_free(pool->backend_ctx, pool->async_pool, memory, stream);
}

/* ---- alloc and free ---------------------------------------------------------------- */

static plm_status alloc_upstream(plm_pool *pool, size_t bytes, plm_stream *stream, void **ptr,
                                 take_fn take, give_fn give) {
  /* The byte limit admits the bytes before the upstream call (pool_limit.h). */
  size_t size = pool_round_up(bytes, POOL_GRANULE);
  plm__pool_upstream_refused(true);
  pthread_mutex_lock(&pool->lock);
  bool over = !pool_limit_admit(&pool->limit, pool->stats.bytes_reserved, size);
  if (over) pool->stats.failures++;
  pthread_mutex_unlock(&pool->lock);
  if (over) {
    plm__pool_format_failure(pool, &(request){.bytes = bytes});
    return PLM_ERR_OUT_OF_MEMORY;
  }
  void *memory = NULL;
  plm_status status = take(pool, bytes, stream->handle, &memory);
  if (status == PLM_OK) {
    status = track_upstream(pool, memory, bytes);
    if (status != PLM_OK) give(pool, memory, bytes, stream->handle);
  }
  if (status != PLM_OK) {
    pthread_mutex_lock(&pool->lock);
    pool_limit_settle(&pool->limit, size);
    pool->stats.failures++;
    pthread_mutex_unlock(&pool->lock);
    if (status == PLM_ERR_OUT_OF_MEMORY && plm__pool_upstream_refused(false))
      plm__pool_format_failure(pool, &(request){.bytes = bytes});
    return status;
  }
  *ptr = memory;
  return PLM_OK;
}

static plm_status free_upstream(plm_pool *pool, void *ptr, plm_stream *stream, give_fn give) {
  size_t bytes = 0;
  if (!untrack_upstream(pool, ptr, &bytes))
    return plm__fail_raw(PLM_ERR_NOT_FOUND,
                         "ptr %p is not a live block of this pool (never allocated, already "
                         "freed, or an interior pointer)",
                         ptr);
  return give(pool, ptr, bytes, stream->handle);
}

/* Give every live block back (no work uses them any more). */
static void close_upstream(plm_pool *pool, give_fn give) {
  for (size_t i = 0; pool->live.slots && i <= pool->live.mask; i++) {
    void *memory = (void *)pool->live.slots[i].addr;
    if (memory) give(pool, memory, pool->live.slots[i].block->requested, NULL);
  }
}

/* ---- passthrough -------------------------------------------------------------------- */

static plm_status passthrough_alloc(plm_pool *pool, size_t bytes, plm_stream *stream, void **ptr) {
  return alloc_upstream(pool, bytes, stream, ptr, plm__pool_reserve, upstream_give);
}

static plm_status passthrough_free(plm_pool *pool, void *ptr, plm_stream *stream) {
  return free_upstream(pool, ptr, stream, upstream_give);
}

static void passthrough_close(plm_pool *pool) {
  close_upstream(pool, upstream_give);
}

const pool_resource plm__pool_passthrough = {
    /* .mode               = */ PLM_POOL_PASSTHROUGH,
    /* .name               = */ "passthrough",
    /* .lays_out_chunks    = */ false,
    /* .free_goes_upstream = */ true,
    /* .from_cuda_mem_pool = */ false,
    /* .check              = */ NULL,
    /* .open               = */ NULL,
    /* .close              = */ passthrough_close,
    /* .alloc              = */ passthrough_alloc,
    /* .free               = */ passthrough_free,
    /* .trim               = */ NULL,
    /* .reserved           = */ NULL,
    /* .forget_stream      = */ NULL,
};

/* ---- cuda_async --------------------------------------------------------------------- */

static plm_status cuda_async_check(const plm_context *ctx, const plm_pool_config *config) {
  (void)config;
  if (!ctx->backend->async_pool_create)
    return plm__fail_raw(PLM_ERR_UNSUPPORTED, "mode cuda_async needs the cuda backend, not %s",
                         plm_backend_name(ctx->backend->kind));
  return PLM_OK;
}

/* The caller's cudaMemPool, adopted, or one of the backend's own. */
static plm_status cuda_async_open(plm_pool *pool) {
  const plm_pool_config *config = &pool->config;
  if (!config->cuda_mem_pool)
    return pool->backend->async_pool_create(
        pool->backend_ctx, !(config->flags & PLM_POOL_NO_STREAM_WAITS), &pool->async_pool);
  plm_status status = pool->backend->async_pool_adopt(pool->backend_ctx, config->cuda_mem_pool);
  if (status == PLM_OK) {
    pool->async_pool = config->cuda_mem_pool;
    pool->async_pool_adopted = true;
  }
  return status;
}

static void cuda_async_close(plm_pool *pool) {
  close_upstream(pool, async_give);
  if (!pool->async_pool) return;
  pool->backend->synchronize(pool->backend_ctx);
  if (!pool->async_pool_adopted)
    pool->backend->async_pool_destroy(pool->backend_ctx, pool->async_pool);
}

static plm_status cuda_async_alloc(plm_pool *pool, size_t bytes, plm_stream *stream, void **ptr) {
  return alloc_upstream(pool, bytes, stream, ptr, async_take, async_give);
}

static plm_status cuda_async_free(plm_pool *pool, void *ptr, plm_stream *stream) {
  return free_upstream(pool, ptr, stream, async_give);
}

static plm_status cuda_async_trim(plm_pool *pool, size_t keep_bytes) {
  plm_status status = pool->backend->synchronize(pool->backend_ctx);
  if (status == PLM_OK)
    status = pool->backend->async_pool_trim(pool->backend_ctx, pool->async_pool, keep_bytes);
  return status;
}

/* What cudaMallocAsync's pool really holds, not the bytes handed out. */
static plm_status cuda_async_reserved(plm_pool *pool, uint64_t *bytes, uint64_t *peak) {
  return pool->backend->async_pool_reserved(pool->backend_ctx, pool->async_pool, bytes, peak);
}

const pool_resource plm__pool_cuda_async = {
    /* .mode               = */ PLM_POOL_CUDA_ASYNC,
    /* .name               = */ "cuda_async",
    /* .lays_out_chunks    = */ false,
    /* .free_goes_upstream = */ true,
    /* .from_cuda_mem_pool = */ true,
    /* .check              = */ cuda_async_check,
    /* .open               = */ cuda_async_open,
    /* .close              = */ cuda_async_close,
    /* .alloc              = */ cuda_async_alloc,
    /* .free               = */ cuda_async_free,
    /* .trim               = */ cuda_async_trim,
    /* .reserved           = */ cuda_async_reserved,
    /* .forget_stream      = */ NULL,
};

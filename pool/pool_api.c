/* pool/pool_api.c: the stream-ordered device pool (plume/pool.h): creation, destruction and
 * the public functions, which check their arguments and call the pool's resource
 * (pool/pool_resource.h: pooled, passthrough or cuda_async) without looking at its mode.
 * The design, its locks and its invariants are described in pool/pool_internal.h. */
#include <stdlib.h>
#include <string.h>

#include "pool/pool_internal.h"
#include "pool/pool_resource.h"
#include "streams/error.h"

enum { KNOWN_POOL_FLAGS = PLM_POOL_NO_STREAM_WAITS | PLM_POOL_KEEP_PAGES | PLM_POOL_NO_SLABS };

static const size_t DEFAULT_MIN_CHUNK = (size_t)2 << 20;
static const size_t DEFAULT_HUGE = (size_t)256 << 20;
static const size_t MAX_REQUEST_BYTES = (size_t)1 << 48; /* keeps every size inside the index */

/* The resource behind each mode; NULL for a value that is no mode. */
static const pool_resource *resource_of(plm_pool_mode mode) {
  static const pool_resource *const resources[] = {
      [PLM_POOL_POOLED] = &plm__pool_pooled,
      [PLM_POOL_PASSTHROUGH] = &plm__pool_passthrough,
      [PLM_POOL_CUDA_ASYNC] = &plm__pool_cuda_async,
  };
  const size_t count = sizeof resources / sizeof resources[0];
  return (unsigned)mode < count ? resources[mode] : NULL;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

static void pool_stream_destroying(plm__attachment *self, plm_stream *stream) {
  plm_pool *pool = (plm_pool *)self;
  if (pool->resource->forget_stream) pool->resource->forget_stream(pool, stream);
}

/* Release everything; returns the number of blocks that were still live. */
static size_t pool_teardown(plm_pool *pool) {
  pool->backend->synchronize(pool->backend_ctx);
  size_t live = (size_t)pool->stats.live_blocks;
  plm__pool_poison_destroy(pool); /* every stream has finished: no note runs any more */
  pool->resource->close(pool);
  pool_live_destroy(&pool->live);
  while (pool->descriptor_slabs) {
    descriptor_slab *batch = pool->descriptor_slabs;
    pool->descriptor_slabs = batch->next;
    free(batch);
  }
  pthread_mutex_destroy(&pool->lock);
  pthread_mutex_destroy(&pool->slow_lock);
  free(pool);
  return live;
}

static void pool_destroy_attached(plm__attachment *self) {
  pool_teardown((plm_pool *)self);
}

plm_pool_config plm_pool_config_default(void) {
  return (plm_pool_config){0};
}

const char *plm_pool_mode_name(plm_pool_mode mode) {
  const pool_resource *resource = resource_of(mode);
  return resource ? resource->name : "unknown";
}

static plm_status check_upstream(const pool_resource *resource, const plm_pool_config *config) {
  const plm_pool_upstream *up = config->upstream;
  if (!up) return PLM_OK;
  if (resource->from_cuda_mem_pool)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "cfg->upstream is for the pooled and passthrough modes; mode "
                         "cuda_async allocates from a cudaMemPool (share one with "
                         "cfg->cuda_mem_pool)");
  if (!up->alloc || !up->free)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "cfg->upstream->%s is NULL",
                         up->alloc ? "free" : "alloc");
  return PLM_OK;
}

static plm_status check_config(const plm_context *ctx, const plm_pool_config *config) {
  const pool_resource *resource = resource_of(config->mode);
  if (!resource)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "cfg->mode %d is not a plm_pool_mode",
                         (int)config->mode);
  if (config->flags & ~(unsigned)KNOWN_POOL_FLAGS)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "cfg->flags 0x%x has unknown bits", config->flags);
  if (config->growth != PLM_POOL_GROW_PROPORTIONAL && config->growth != PLM_POOL_GROW_FIXED)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "cfg->growth %d is not a plm_pool_growth",
                         (int)config->growth);
  if (config->byte_limit && config->initial_reservation > config->byte_limit)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "cfg->initial_reservation %zu is above cfg->byte_limit %zu",
                         config->initial_reservation, config->byte_limit);
  if (config->min_chunk_bytes > MAX_REQUEST_BYTES)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "cfg->min_chunk_bytes %zu is too large (256 TiB at most)",
                         config->min_chunk_bytes);
  if (config->initial_reservation > MAX_REQUEST_BYTES)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "cfg->initial_reservation %zu is too large",
                         config->initial_reservation);
  if (config->cuda_mem_pool && !ctx->backend->async_pool_adopt)
    return plm__fail_raw(PLM_ERR_UNSUPPORTED,
                         "cfg->cuda_mem_pool is given, but the %s backend has no cudaMemPool",
                         plm_backend_name(ctx->backend->kind));
  plm_status status = resource->check ? resource->check(ctx, config) : PLM_OK;
  if (status != PLM_OK) return status;
  if (config->cuda_mem_pool && !resource->from_cuda_mem_pool)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "cfg->cuda_mem_pool is for mode cuda_async, not %s (for the other modes "
                         "give cfg->upstream)",
                         plm_pool_mode_name(config->mode));
  return check_upstream(resource, config);
}

/* The backend's unit of giving memory back; 0 when it cannot. */
static size_t decommit_unit(const plm_context *ctx) {
  return ctx->backend->mem_decommit_unit ? ctx->backend->mem_decommit_unit(ctx->backend_ctx) : 0;
}

static plm_status check_page_bytes(const plm_context *ctx, const plm_pool_config *config) {
  const size_t page = config->page_bytes, unit = decommit_unit(ctx);
  const size_t least = unit > POOL_GRANULE ? unit : POOL_GRANULE;
  if (page && ((page & (page - 1)) || page < least || page > POOL_PAGE_MAX))
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "cfg->page_bytes %zu is not a power of two from %zu (the %s backend's "
                         "unit) to %zu",
                         page, least, plm_backend_name(ctx->backend->kind), POOL_PAGE_MAX);
  return PLM_OK;
}

static plm_status pool_create(plm_context *ctx, const plm_pool_config *cfg, bool is_default,
                              plm_pool **out) {
  plm_pool_config config = cfg ? *cfg : plm_pool_config_default();
  plm_status status = check_config(ctx, &config);
  if (status == PLM_OK) status = check_page_bytes(ctx, &config);
  if (status != PLM_OK) return status;
  if (!config.min_chunk_bytes) config.min_chunk_bytes = DEFAULT_MIN_CHUNK;
  config.min_chunk_bytes = pool_round_up(config.min_chunk_bytes, POOL_GRANULE);
  if (!config.huge_bytes) config.huge_bytes = DEFAULT_HUGE;

  plm_pool *pool = calloc(1, sizeof *pool);
  if (!pool) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a pool");
  pool->ctx = ctx;
  pool->resource = resource_of(config.mode);
  pool->backend = ctx->backend;
  pool->backend_ctx = ctx->backend_ctx;
  pool->config = config;
  pool->limit.bytes = config.byte_limit;
  plm__pool_slabs_init(&pool->small_slabs);
  plm__pool_poison_init(pool);
  pool->page_bytes = config.page_bytes;
  if (!pool->page_bytes)
    pool->page_bytes =
        decommit_unit(ctx) > POOL_PAGE_DEFAULT ? decommit_unit(ctx) : POOL_PAGE_DEFAULT;
  if (config.upstream) {
    pool->upstream = *config.upstream;
    pool->config.upstream = &pool->upstream;
  }
  pool->is_default = is_default;
  pthread_mutex_init(&pool->lock, NULL);
  pthread_mutex_init(&pool->slow_lock, NULL);
  pool->attachment = (plm__attachment){.kind = "pool",
                                       .report_if_leftover = !is_default,
                                       .destroy = pool_destroy_attached,
                                       .stream_destroying = pool_stream_destroying};
  if (pool->resource->open) status = pool->resource->open(pool);
  if (status != PLM_OK) {
    pool_teardown(pool);
    return status;
  }
  plm__context_attach(ctx, &pool->attachment);
  *out = pool;
  return PLM_OK;
}

/* ---- the public API ----------------------------------------------------------------- */

plm_status plm_pool_create(plm_context *ctx, const plm_pool_config *cfg, plm_pool **out) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  return plm__propagate(pool_create(ctx, cfg, false, out));
}

plm_status plm_pool_destroy(plm_pool *pool) {
  if (!pool) return PLM_OK;
  PLM__REFUSE_IN_HOST_CALLBACK();
  if (pool->is_default)
    return plm__fail(PLM_ERR_INVALID_ARG,
                     "pool is the context's default pool, which is destroyed with the context");
  plm__context_detach(pool->ctx, &pool->attachment);
  size_t live = pool_teardown(pool);
  if (live > 0)
    return plm__fail(PLM_ERR_INVALID_STATE,
                     "the pool still had %zu live block(s); they were freed with it", live);
  return PLM_OK;
}

plm_status plm_context_default_pool(plm_context *ctx, plm_pool **out) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(out);
  plm_status status = PLM_OK;
  pthread_mutex_lock(&ctx->lazy_lock);
  if (!ctx->default_pool) {
    plm_pool *pool = NULL;
    status = pool_create(ctx, &ctx->default_pool_config, true, &pool);
    if (status == PLM_OK)
      ctx->default_pool = &pool->attachment;
    else {
      char reason[256];
      snprintf(reason, sizeof reason, "%s", plm_last_error());
      plm__fail_raw(status, "the default pool: %s", reason);
    }
  }
  *out = (plm_pool *)ctx->default_pool;
  pthread_mutex_unlock(&ctx->lazy_lock);
  return plm__propagate(status);
}

static plm_status check_stream(const plm_pool *pool, const plm_stream *stream) {
  if (stream->ctx != pool->ctx)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "stream belongs to another context than pool");
  return PLM_OK;
}

plm_status plm_pool_alloc(plm_pool *pool, size_t bytes, plm_stream *stream, void **ptr) {
  PLM__REQUIRE_NOT_NULL(ptr);
  *ptr = NULL;
  PLM__REQUIRE_NOT_NULL(pool);
  PLM__REQUIRE_NOT_NULL(stream);
  if (bytes == 0) return plm__fail(PLM_ERR_INVALID_ARG, "bytes is 0");
  PLM__REFUSE_IN_HOST_CALLBACK();
  if (bytes > MAX_REQUEST_BYTES)
    return plm__fail(PLM_ERR_INVALID_ARG, "bytes %zu is larger than any device memory (256 TiB)",
                     bytes);
  plm_status status = check_stream(pool, stream);
  if (status == PLM_OK) status = pool->resource->alloc(pool, bytes, stream, ptr);
  plm__pool_poison_send();
  return plm__propagate(status);
}

plm_status plm_pool_free(plm_pool *pool, void *ptr, plm_stream *stream) {
  PLM__REQUIRE_NOT_NULL(pool);
  PLM__REQUIRE_NOT_NULL(stream);
  if (!ptr) return PLM_OK;
  /* Pooled frees make no backend call; the other resources give the block upstream (on
   * cuda cudaFree waits for the device, and a host function may make no CUDA call). */
  if (pool->resource->free_goes_upstream) PLM__REFUSE_IN_HOST_CALLBACK();
  plm_status status = check_stream(pool, stream);
  if (status == PLM_OK) status = pool->resource->free(pool, ptr, stream);
  plm__pool_poison_send();
  return plm__propagate(status);
}

plm_status plm_pool_trim(plm_pool *pool, size_t keep_bytes) {
  PLM__REQUIRE_NOT_NULL(pool);
  PLM__REFUSE_IN_HOST_CALLBACK();
  if (!pool->resource->trim) return PLM_OK; /* nothing is cached */
  return plm__propagate(pool->resource->trim(pool, keep_bytes));
}

plm_status plm_pool_mode_get(const plm_pool *pool, plm_pool_mode *out) {
  PLM__REQUIRE_NOT_NULL(pool);
  PLM__REQUIRE_NOT_NULL(out);
  *out = pool->resource->mode;
  return PLM_OK;
}

plm_status plm_pool_context(const plm_pool *pool, plm_context **out) {
  PLM__REQUIRE_NOT_NULL(pool);
  PLM__REQUIRE_NOT_NULL(out);
  *out = pool->ctx;
  return PLM_OK;
}

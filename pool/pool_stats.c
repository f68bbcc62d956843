/* pool/pool_stats.c: the pool's statistics (plume/pool.h): the snapshot
 * plm_pool_stats_get returns, from the counters every resource keeps
 * (pool/pool_counts.h) and the free lists, and the message an out-of-memory failure
 * carries. */
#include "pool/pool_internal.h"
#include "pool/pool_resource.h"
#include "streams/error.h"

void plm__pool_format_failure(plm_pool *pool, const request *r) {
  plm_pool_stats stats;
  plm_pool_stats_get(pool, &stats);
  char refusal[96] = "";
  size_t refused = plm__pool_upstream_refused(true);
  if (refused)
    snprintf(refusal, sizeof refusal, "; the user upstream's alloc refused %zu bytes", refused);
  plm__fail_raw(PLM_ERR_OUT_OF_MEMORY,
                "out of memory for %zu bytes: %llu bytes in use, %llu reserved (limit %zu), "
                "largest free block %llu, fragmentation %.3f%s",
                r->bytes, (unsigned long long)stats.bytes_in_use,
                (unsigned long long)stats.bytes_reserved, pool->config.byte_limit,
                (unsigned long long)stats.largest_free_block, stats.fragmentation, refusal);
}

plm_status plm_pool_stats_get(plm_pool *pool, plm_pool_stats *out) {
  PLM__REQUIRE_NOT_NULL(pool);
  PLM__REQUIRE_NOT_NULL(out);
  pthread_mutex_lock(&pool->lock);
  plm_pool_stats stats = pool->stats;
  size_t largest = pool_index_largest(&pool->global);
  size_t free_bytes = pool->global.free_bytes + pool->small_slabs.idle_bytes;
  size_t slab_largest = plm__pool_slab_largest_idle(&pool->small_slabs);
  if (slab_largest > largest) largest = slab_largest;
  pool_owner *owner, *next;
  HASH_ITER(hh, pool->owners, owner, next) {
    size_t pending_largest = pool_index_largest(&owner->pending);
    if (pending_largest > largest) largest = pending_largest;
    free_bytes += owner->pending.free_bytes;
  }
  pthread_mutex_unlock(&pool->lock);
  stats.largest_free_block = largest;
  stats.fragmentation = free_bytes ? 1.0 - (double)largest / (double)free_bytes : 0.0;
  if (pool->resource->reserved) {
    plm_status status =
        pool->resource->reserved(pool, &stats.bytes_reserved, &stats.peak_bytes_reserved);
    if (status != PLM_OK) return plm__propagate(status);
  }
  *out = stats;
  return PLM_OK;
}

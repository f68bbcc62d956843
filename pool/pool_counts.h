/* pool/pool_counts.h: the counters every resource keeps as blocks come and go
 * (internal): what plm_pool_stats_get reports (pool/pool_stats.c), counted under the
 * pool's `lock` in the same critical section that moves the block, so that the counts
 * and the blocks always agree (a snapshot's totals equal the statistics at one
 * instant). A leaf: it knows the statistics and nothing of the pool. */
#ifndef PLUME_POOL_COUNTS_H
#define PLUME_POOL_COUNTS_H

#include <stdbool.h>
#include <stddef.h>

#include "plume/pool.h"

/* A block (or slot) of `size` bytes is handed out for `requested`; `hit`: without
 * reserving memory for it; `cross_stream`: it was freed on another stream. */
static inline void pool_count_allocated(plm_pool_stats *stats, size_t size, size_t requested,
                                        bool cross_stream, bool hit) {
  stats->requests++;
  if (hit) stats->hits++;
  if (cross_stream) stats->cross_stream_reuses++;
  stats->live_blocks++;
  stats->bytes_in_use += size;
  stats->bytes_requested += requested;
  if (stats->bytes_in_use > stats->peak_bytes_in_use)
    stats->peak_bytes_in_use = stats->bytes_in_use;
}

/* A block (or slot) counted by pool_count_allocated is freed: its counts go down. */
static inline void pool_count_freed(plm_pool_stats *stats, size_t size, size_t requested) {
  stats->live_blocks--;
  stats->bytes_in_use -= size;
  stats->bytes_requested -= requested;
}

/* Bytes taken from upstream are held (the caller counts the call itself). */
static inline void pool_count_reserved(plm_pool_stats *stats, size_t bytes) {
  stats->bytes_reserved += bytes;
  if (stats->bytes_reserved > stats->peak_bytes_reserved)
    stats->peak_bytes_reserved = stats->bytes_reserved;
}

#endif /* PLUME_POOL_COUNTS_H */

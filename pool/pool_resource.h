/* pool/pool_resource.h: memory resources, what a plm_pool serves requests from (internal).
 *
 * A pool's mode names the resource behind it, as RMM's device_memory_resource: one
 * table of functions, one implementation per file, and plm_pool's public functions
 * (pool/pool_api.c) call through the table without looking at the mode:
 *   pooled       pool/pool_pooled.c: plume's pool (the design in pool/pool_internal.h);
 *   passthrough  pool/pool_passthrough.c: every alloc and free goes upstream (the
 *                user's plm_pool_upstream, else the backend's mem_alloc / mem_free);
 *   cuda_async   pool/pool_passthrough.c: the same, from a cudaMemPool
 *                (cudaMallocAsync / cudaFreeAsync).
 * What is not a mode wraps whichever of them a pool has: the byte limit is an adaptor
 * around every call a resource makes to take memory upstream (pool/pool_limit.h). The
 * statistics are counted by every resource with the same counters (pool/pool_counts.h)
 * rather than by an adaptor around alloc and free: they are counted under the pool's
 * `lock` in the critical section that moves the block, so that a snapshot's totals equal
 * plm_pool_stats at one instant (an adaptor, outside that section, could not promise
 * it), and hits and cross-stream reuses are facts only the pooled resource knows.
 *
 * The entries receive the pool: its lock, live table and statistics are shared. The
 * public functions check every argument first, so an entry may assume: bytes is
 * non-zero and at most the largest request, the stream belongs to the pool's context,
 * and a call that free_goes_upstream forbids is not made from a host callback.
 * Failures set their message (plm__fail_raw) and count in stats.failures where they
 * are an allocation's. Entries marked (optional) may be NULL; the pool then does what
 * is stated.
 */
#ifndef PLUME_POOL_RESOURCE_H
#define PLUME_POOL_RESOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/pool.h"

typedef struct pool_resource {
  plm_pool_mode mode;
  const char *name; /* plm_pool_mode_name's */

  /* It reserves chunks and cuts them into blocks, which a snapshot describes
   * (plm_pool_snapshot_take refuses the others). */
  bool lays_out_chunks;
  /* Its free gives the block upstream, which may block (cudaFree) and makes a backend
   * call: plm_pool_free refuses it from a host callback. */
  bool free_goes_upstream;
  /* It allocates from a cudaMemPool (config.cuda_mem_pool may name one to adopt);
   * the others take their memory from config.upstream. */
  bool from_cuda_mem_pool;

  /* (optional) The config's parts this resource alone judges, after the common ones
   * (mode, flags, sizes) and before the upstream's. NULL: nothing more. */
  plm_status (*check)(const plm_context *ctx, const plm_pool_config *config);
  /* (optional) Take what the resource needs at creation (a cudaMemPool, an initial
   * reservation). A failure leaves the pool for close to tear down. */
  plm_status (*open)(plm_pool *pool);
  /* Give back everything it holds, live blocks included. The device has finished all
   * work (the pool synchronised it); no other call runs. */
  void (*close)(plm_pool *pool);

  plm_status (*alloc)(plm_pool *pool, size_t bytes, plm_stream *stream, void **ptr);
  plm_status (*free)(plm_pool *pool, void *ptr, plm_stream *stream);

  /* (optional) plm_pool_trim's work (the public function checked the pool). NULL:
   * nothing is cached, so nothing goes back. */
  plm_status (*trim)(plm_pool *pool, size_t keep_bytes);
  /* (optional) What the memory behind the resource holds, where that is not what the
   * pool counted: bytes reserved now and at most. NULL: the counts stand. */
  plm_status (*reserved)(plm_pool *pool, uint64_t *bytes, uint64_t *peak);
  /* (optional) A stream is being destroyed: its work must be waited for, and what the
   * resource keeps of it forgotten. NULL: it keeps nothing of streams. */
  void (*forget_stream)(plm_pool *pool, plm_stream *stream);
} pool_resource;

extern const pool_resource plm__pool_pooled;      /* pool/pool_pooled.c */
extern const pool_resource plm__pool_passthrough; /* pool/pool_passthrough.c */
extern const pool_resource plm__pool_cuda_async;  /* pool/pool_passthrough.c */

#endif /* PLUME_POOL_RESOURCE_H */

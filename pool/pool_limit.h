/* pool/pool_limit.h: the byte limit, an adaptor around whatever a resource takes from
 * upstream (internal).
 *
 * plm_pool_config.byte_limit bounds the memory a pool holds from upstream: what its
 * statistics count as bytes_reserved (the pooled resource's chunks less their released
 * pages, the passthrough and cuda_async resources' blocks rounded up to 256 bytes). As
 * RMM's limiting_resource_adaptor wraps an upstream resource, every call that takes
 * memory goes through here, whichever resource makes it: a pooled chunk, pages taken
 * again under a free run, a passthrough or cuda_async block. The bytes are admitted
 * before the upstream call and held "in flight" until it returns, so that threads
 * racing for the last bytes cannot both pass; then the caller counts them as reserved
 * (if the call succeeded) in the same critical section that settles them, so that what
 * is held plus what is in flight never passes the limit. Memory given back is counted
 * down where it leaves the pool's books (a chunk given back, a block freed, pages
 * released), as the statistics always were; the limit reads that count.
 *
 * Every function is called with the pool's `lock` held; none calls out. Without a limit
 * (0) everything is admitted.
 */
#ifndef PLUME_POOL_LIMIT_H
#define PLUME_POOL_LIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pool_limit {
  size_t bytes;     /* the most that may be held; 0: no limit */
  size_t in_flight; /* admitted, their upstream call not yet returned */
} pool_limit;

/* How many more bytes may be taken while `held` are held. SIZE_MAX without a limit. */
static inline size_t pool_limit_room(const pool_limit *limit, uint64_t held) {
  if (!limit->bytes) return SIZE_MAX;
  const uint64_t taken = held + limit->in_flight;
  return taken >= limit->bytes ? 0 : (size_t)(limit->bytes - taken);
}

/* Admit `bytes` more while `held` are held: true (they are in flight until
 * pool_limit_settle) or false (nothing changes: the limit would be passed). */
static inline bool pool_limit_admit(pool_limit *limit, uint64_t held, size_t bytes) {
  if (bytes > pool_limit_room(limit, held)) return false;
  limit->in_flight += bytes;
  return true;
}

/* The upstream call for `bytes` admitted has returned; the caller counts them as held
 * now if it succeeded. */
static inline void pool_limit_settle(pool_limit *limit, size_t bytes) {
  limit->in_flight -= bytes;
}

#endif /* PLUME_POOL_LIMIT_H */

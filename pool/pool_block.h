/* pool/pool_block.h: the descriptor of one block of pool memory (internal).
 *
 * Descriptors live in host memory (device memory cannot hold headers). A chunk
 * reserved from upstream is cut into blocks that tile it exactly; phys_prev and
 * phys_next link a block to its neighbours in address order, which is what
 * coalescing needs. A block is in exactly one of four states, and its links say
 * where it is:
 *   USED      handed out; in the pool's live table (pool_live.h);
 *   FREE      in an index's `lists` (free_prev/free_next), may be merged;
 *   CACHED    a small block in an index's `cached` list, not merged;
 *   RELEASED  whole pages whose memory went back to the backend (mem_decommit), the
 *             addresses kept: in the pool's `released` index (free_prev/free_next),
 *             never handed out until recommitted (pool/pool_pages.c).
 * A FREE or CACHED block whose `owner` is not NULL was freed on that stream and is
 * not yet known to be safe for other streams; it is also in the owner's epoch
 * queue (epoch_prev/epoch_next), oldest free first.
 */
#ifndef PLUME_POOL_BLOCK_H
#define PLUME_POOL_BLOCK_H

#include <stdint.h>

#include "plume/stream.h"

typedef struct pool_block pool_block;
typedef struct pool_chunk pool_chunk;
typedef struct pool_owner pool_owner;

typedef enum pool_block_state {
  BLOCK_USED,
  BLOCK_FREE,
  BLOCK_CACHED,
  BLOCK_RELEASED
} pool_block_state;

struct pool_block {
  uintptr_t addr;
  size_t size; /* bytes, a multiple of POOL_GRANULE */
  pool_block *phys_prev, *phys_next;
  pool_block *free_prev, *free_next;
  pool_block *epoch_prev, *epoch_next;
  pool_chunk *chunk;
  pool_owner *owner;          /* pending on this stream; NULL: safe for all */
  const plm_stream *freed_on; /* the stream of the last free (statistics only) */
  uint64_t epoch;             /* owner's epoch at the free */
  double freed_at;            /* monotonic seconds of the last free in it; 0: never */
  size_t requested;           /* bytes asked for (USED) */
  pool_block_state state;
};

struct pool_chunk {
  uintptr_t base;
  size_t size;
  size_t released;   /* bytes of its RELEASED blocks */
  size_t page_bytes; /* the unit of memory given back, counted from base */
  pool_block *first; /* the block at base */
  pool_chunk *prev, *next;
};

#endif /* PLUME_POOL_BLOCK_H */

/* pool/pool_blocks.c: the pool's block bookkeeping (internal): descriptors, the
 * streams the pool has seen and their epoch queues, and the moves of a block
 * between states: taking, splitting, releasing, merging, migrating. Every function
 * here is called with the pool's `lock` held and makes no backend call. */
#include <stdlib.h>
#include <string.h>

#include "pool/pool_internal.h"
#include "streams/clock.h"

/* ---- block descriptors ---------------------------------------------------------- */

pool_block *plm__pool_descriptor_new(plm_pool *pool) {
  if (!pool->spare_descriptors) {
    descriptor_slab *slab = malloc(sizeof *slab);
    if (!slab) return NULL;
    slab->next = pool->descriptor_slabs;
    pool->descriptor_slabs = slab;
    for (size_t i = 0; i < sizeof slab->blocks / sizeof slab->blocks[0]; i++) {
      slab->blocks[i].free_next = pool->spare_descriptors;
      pool->spare_descriptors = &slab->blocks[i];
    }
  }
  pool_block *block = pool->spare_descriptors;
  pool->spare_descriptors = block->free_next;
  memset(block, 0, sizeof *block);
  return block;
}

void plm__pool_descriptor_release(plm_pool *pool, pool_block *block) {
  block->free_next = pool->spare_descriptors;
  pool->spare_descriptors = block;
}

/* ---- owners (the streams the pool has seen) and their epoch queues ---------------- */

pool_owner *plm__pool_owner_find(plm_pool *pool, const plm_stream *stream) {
  pool_owner *owner = pool->last_owner;
  if (owner && owner->stream == stream) return owner;
  HASH_FIND_PTR(pool->owners, &stream, owner);
  if (owner) pool->last_owner = owner;
  return owner;
}

void plm__pool_owner_remove(plm_pool *pool, pool_owner *owner) {
  if (pool->last_owner == owner) pool->last_owner = NULL;
  HASH_DEL(pool->owners, owner);
  free(owner);
}

pool_owner *plm__pool_owner_get(plm_pool *pool, plm_stream *stream) {
  pool_owner *owner = plm__pool_owner_find(pool, stream);
  if (owner) return owner;
  owner = calloc(1, sizeof *owner);
  if (!owner) return NULL;
  owner->stream = stream;
  owner->handle = stream->handle;
  owner->open_epoch = 1;
  HASH_ADD_PTR(pool->owners, stream, owner);
  if (!PLM__HASH_ADDED(owner)) {
    free(owner);
    return NULL;
  }
  return owner;
}

static void queue_append(pool_owner *owner, pool_block *block) {
  block->epoch_next = NULL;
  block->epoch_prev = owner->queue_tail;
  if (owner->queue_tail)
    owner->queue_tail->epoch_next = block;
  else
    owner->queue_head = block;
  owner->queue_tail = block;
}

static void queue_unlink(pool_owner *owner, pool_block *block) {
  if (block->epoch_prev)
    block->epoch_prev->epoch_next = block->epoch_next;
  else
    owner->queue_head = block->epoch_next;
  if (block->epoch_next)
    block->epoch_next->epoch_prev = block->epoch_prev;
  else
    owner->queue_tail = block->epoch_prev;
  block->epoch_prev = block->epoch_next = NULL;
}

/* Put `replacement` where `block` stands in the queue. */
static void queue_replace(pool_owner *owner, pool_block *block, pool_block *replacement) {
  replacement->epoch_prev = block->epoch_prev;
  replacement->epoch_next = block->epoch_next;
  if (block->epoch_prev)
    block->epoch_prev->epoch_next = replacement;
  else
    owner->queue_head = replacement;
  if (block->epoch_next)
    block->epoch_next->epoch_prev = replacement;
  else
    owner->queue_tail = replacement;
  block->epoch_prev = block->epoch_next = NULL;
}

/* Insert keeping epochs non-decreasing from head to tail (searching from the tail:
 * only blocks put back after a failed stream wait are older than the tail). */
static void queue_insert_sorted(pool_owner *owner, pool_block *block) {
  pool_block *after = owner->queue_tail;
  while (after && after->epoch > block->epoch) after = after->epoch_prev;
  block->epoch_prev = after;
  block->epoch_next = after ? after->epoch_next : owner->queue_head;
  if (block->epoch_next)
    block->epoch_next->epoch_prev = block;
  else
    owner->queue_tail = block;
  if (after)
    after->epoch_next = block;
  else
    owner->queue_head = block;
}

/* ---- free blocks: where they live, merging, taking ------------------------------- */

static pool_index *index_of(plm_pool *pool, const pool_block *block) {
  return block->owner ? &block->owner->pending : &pool->global;
}

static unsigned cached_class(const pool_block *block) {
  return pool_class_of(block->size / POOL_GRANULE);
}

/* Take a FREE or CACHED block out of its index and its owner's queue. */
void plm__pool_detach_free_block(plm_pool *pool, pool_block *block) {
  pool_index *index = index_of(pool, block);
  if (block->state == BLOCK_CACHED)
    pool_index_remove_cached(index, block, cached_class(block));
  else
    pool_index_remove(index, block);
  if (block->owner) queue_unlink(block->owner, block);
}

/* Put a detached free block into its index (and its owner's queue, at the tail or,
 * for an older epoch, in order). */
void plm__pool_attach_free_block(plm_pool *pool, pool_block *block) {
  pool_index *index = index_of(pool, block);
  if (block->state == BLOCK_CACHED)
    pool_index_push_cached(index, block, cached_class(block));
  else
    pool_index_insert(index, block);
  if (block->owner) queue_insert_sorted(block->owner, block);
}

/* FREE neighbours merge when they have the same owner (the same stream, or both
 * safe for all), and a block pending on a stream that allocates absorbs its global
 * free neighbours: that stream may use them at once, and a hole on each side of its
 * free would otherwise stay apart until the slow path makes the free safe for all
 * (the pool grew instead). A stream that only frees (another stream's blocks) does
 * not: the global memory would be hidden from the streams that allocate until the
 * freeing stream catches up, and they would grow the pool instead; for them only
 * the slow path does it, behind a wait (extend_with_global). A global block never
 * absorbs a pending one, which is not yet safe for all. */
static bool can_merge(const pool_block *neighbour, const pool_block *block) {
  if (!neighbour || neighbour->state != BLOCK_FREE) return false;
  if (neighbour->owner == block->owner) return true;
  return block->owner && !neighbour->owner && block->owner->allocates;
}

/* Absorb `next` (detached by the caller) into `block`. Global blocks carry epoch 0,
 * so the merged epoch is the latest free's. */
void plm__pool_absorb_next(plm_pool *pool, pool_block *block, pool_block *next) {
  block->size += next->size;
  block->phys_next = next->phys_next;
  if (next->phys_next) next->phys_next->phys_prev = block;
  if (next->epoch > block->epoch) block->epoch = next->epoch;
  if (next->freed_at > block->freed_at) block->freed_at = next->freed_at;
  plm__pool_descriptor_release(pool, next);
}

/* Merge a detached FREE block with the neighbours can_merge allows, on each side for as
 * long as it allows: a global neighbour absorbed by a pending block may have had a block
 * pending on the same stream beyond it, now adjacent. Returns the merged (still
 * detached) block, which keeps the block's owner. */
pool_block *plm__pool_merge_neighbours(plm_pool *pool, pool_block *block) {
  for (pool_block *prev = block->phys_prev; can_merge(prev, block); prev = block->phys_prev) {
    plm__pool_detach_free_block(pool, prev);
    const plm_stream *freed_on = block->freed_on;
    pool_owner *owner = block->owner;
    plm__pool_absorb_next(pool, prev, block);
    prev->freed_on = freed_on;
    prev->owner = owner;
    block = prev;
  }
  for (pool_block *next = block->phys_next; can_merge(next, block); next = block->phys_next) {
    plm__pool_detach_free_block(pool, next);
    plm__pool_absorb_next(pool, block, next);
  }
  return block;
}

/* Split a detached FREE block: a new descriptor for its last `size` bytes, which is
 * returned; `block` keeps the front, its owner, epoch and queue place, and goes back
 * into `index`. NULL (nothing changed) when no descriptor is left. */
static pool_block *split_tail(plm_pool *pool, pool_index *index, pool_block *block, size_t size) {
  pool_block *tail = plm__pool_descriptor_new(pool);
  if (!tail) return NULL;
  block->size -= size;
  tail->addr = block->addr + block->size;
  tail->size = size;
  tail->chunk = block->chunk;
  tail->freed_on = block->freed_on;
  tail->freed_at = block->freed_at;
  tail->phys_prev = block;
  tail->phys_next = block->phys_next;
  if (block->phys_next) block->phys_next->phys_prev = tail;
  block->phys_next = tail;
  pool_index_insert(index, block);
  return tail;
}

/* Split a detached FREE block: `block` keeps its first `size` bytes; the rest, a new
 * descriptor, takes its owner, epoch and queue place and goes into `index`. False
 * (nothing changed) when no descriptor is left. */
static bool split_front(plm_pool *pool, pool_index *index, pool_block *block, size_t size) {
  pool_block *rest = plm__pool_descriptor_new(pool);
  if (!rest) return false;
  rest->addr = block->addr + size;
  rest->size = block->size - size;
  rest->chunk = block->chunk;
  rest->owner = block->owner;
  rest->epoch = block->epoch;
  rest->freed_on = block->freed_on;
  rest->freed_at = block->freed_at;
  rest->state = BLOCK_FREE;
  rest->phys_prev = block;
  rest->phys_next = block->phys_next;
  if (block->phys_next) block->phys_next->phys_prev = rest;
  block->phys_next = rest;
  block->size = size;
  pool_index_insert(index, rest);
  if (block->owner) queue_replace(block->owner, block, rest);
  return true;
}

/* Hand out `size` bytes of `block` (FREE or CACHED, attached) and return the USED
 * block. A CACHED block is handed out whole. A FREE block larger than `size` is
 * split: a small request takes its tail and a larger one its front, so that small
 * blocks gather at the ends of free runs and leave the rest of each run whole for
 * large requests (a tiny block cut from the front of a 1 MiB run leaves 1 MiB minus
 * 256 bytes, which no 1 MiB request fits). */
pool_block *plm__pool_take_block(plm_pool *pool, pool_block *block, size_t size) {
  pool_index *index = index_of(pool, block);
  if (block->state == BLOCK_CACHED) {
    pool_index_remove_cached(index, block, cached_class(block));
  } else {
    pool_index_remove(index, block);
    if (block->size > size && size <= POOL_SMALL_MAX_BYTES) {
      pool_block *tail = split_tail(pool, index, block, size);
      if (tail) {
        tail->state = BLOCK_USED;
        return tail;
      }
    } else if (block->size > size && split_front(pool, index, block, size)) {
      block->owner = NULL;
      block->state = BLOCK_USED;
      return block;
    }
  }
  if (block->owner) queue_unlink(block->owner, block);
  block->owner = NULL;
  block->state = BLOCK_USED;
  return block;
}

/* Whether a small block going into `index` may stay cached, unmerged: an index
 * caches at most POOL_CACHE_MAX_BYTES, and what is freed beyond that merges with its
 * neighbours, so that memory cached in one class cannot be missing from the others. */
bool plm__pool_may_cache(const pool_index *index, const pool_block *block) {
  return block->size <= POOL_SMALL_MAX_BYTES &&
         index->cached_bytes + block->size <= POOL_CACHE_MAX_BYTES;
}

/* Free a USED block on `owner`'s stream: it becomes pending there. */
void plm__pool_release_block(plm_pool *pool, pool_block *block, pool_owner *owner) {
  block->owner = owner;
  block->epoch = owner->open_epoch;
  block->freed_on = owner->stream;
  block->freed_at = plm__monotonic_seconds_coarse();
  owner->open_epoch_used = true;
  if (plm__pool_may_cache(&owner->pending, block)) {
    block->state = BLOCK_CACHED;
    pool_index_push_cached(&owner->pending, block, cached_class(block));
    queue_append(owner, block);
    return;
  }
  block->state = BLOCK_FREE;
  block = plm__pool_merge_neighbours(pool, block);
  pool_index_insert(&owner->pending, block);
  queue_append(owner, block);
}

/* Free a block that is not USED any more (out of the live table, in no index) as safe
 * for all, merged with its neighbours. */
void plm__pool_release_block_safe(plm_pool *pool, pool_block *block) {
  plm__pool_poison_now(pool, block->addr, block->size); /* nothing uses it (pool_poison.h) */
  block->owner = NULL;
  block->epoch = 0;
  block->freed_at = plm__monotonic_seconds_coarse();
  block->state = BLOCK_FREE;
  plm__pool_attach_free_block(pool, plm__pool_merge_neighbours(pool, block));
}

/* Make every pending block of `owner` with an epoch up to `upto` safe for all. */
void plm__pool_migrate_blocks(plm_pool *pool, pool_owner *owner, uint64_t upto) {
  while (owner->queue_head && owner->queue_head->epoch <= upto) {
    pool_block *block = owner->queue_head;
    plm__pool_detach_free_block(pool, block);
    plm__pool_poison_now(pool, block->addr, block->size); /* its free completed */
    block->owner = NULL;
    block->epoch = 0;
    if (block->state == BLOCK_CACHED && !plm__pool_may_cache(&pool->global, block))
      block->state = BLOCK_FREE;
    if (block->state == BLOCK_FREE) block = plm__pool_merge_neighbours(pool, block);
    plm__pool_attach_free_block(pool, block);
  }
}

/* Return cached small blocks of an index to its merging lists. */
void plm__pool_uncache_index(plm_pool *pool, pool_index *index) {
  unsigned small_classes = pool_class_of(POOL_SMALL_MAX_GRANULES) + 1;
  for (unsigned klass = 0; klass < small_classes; klass++) {
    pool_block *block;
    while ((block = index->cached[klass]) != NULL) {
      plm__pool_detach_free_block(pool, block);
      block->state = BLOCK_FREE;
      block = plm__pool_merge_neighbours(pool, block);
      plm__pool_attach_free_block(pool, block);
    }
  }
}

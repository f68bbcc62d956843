/* pool/pool_pooled.c: the pooled resource (pool/pool_resource.h): plume's pool. The
 * fast path, the slow path's ladder, chunks, trimming and the pooled teardown; the
 * design, its locks and its invariants are described in pool/pool_internal.h. */
#include <stdlib.h>
#include <string.h>

#include <utlist.h>

#include "pool/pool_internal.h"
#include "pool/pool_resource.h"
#include "streams/assert.h"
#include "streams/error.h"

enum { SLOW_PATH_ROUNDS = 4 };

/* ---- invariants (pool_internal.h), checked in debug builds ----------------------- */

#ifndef NDEBUG
/* Walk every chunk and every epoch queue. Called with `lock` held, on the slow
 * path and after trimming only: O(blocks). */
static void check_released(const pool_block *block, const pool_block *prev) {
  PLM_ASSERT(!block->owner);
  PLM_ASSERT((block->addr - block->chunk->base) % block->chunk->page_bytes == 0);
  PLM_ASSERT(block->size % block->chunk->page_bytes == 0);
  PLM_ASSERT(!prev || prev->state != BLOCK_RELEASED);
}

static void check_invariants(const plm_pool *pool) {
  size_t used = 0, held = 0, released = 0;
  for (const pool_chunk *chunk = pool->chunks; chunk; chunk = chunk->next) {
    uintptr_t expected = chunk->base;
    const pool_block *prev = NULL;
    size_t released_here = 0;
    for (const pool_block *block = chunk->first; block; block = block->phys_next) {
      PLM_ASSERT(block->addr == expected && block->chunk == chunk);
      PLM_ASSERT(block->phys_prev == prev && block->size % POOL_GRANULE == 0);
      PLM_ASSERT(block->state != BLOCK_USED || !block->owner);
      PLM_ASSERT((pool_live_find(&pool->live, block->addr) == block) ==
                 (block->state == BLOCK_USED));
      if (prev && prev->state == BLOCK_FREE && block->state == BLOCK_FREE)
        PLM_ASSERT(prev->owner != block->owner);
      if (block->state == BLOCK_RELEASED) {
        check_released(block, prev);
        released_here += block->size;
      }
      used += block->state == BLOCK_USED;
      expected += block->size;
      prev = block;
    }
    PLM_ASSERT(expected == chunk->base + chunk->size);
    PLM_ASSERT(released_here == chunk->released);
    held += chunk->size - chunk->released;
    released += chunk->released;
  }
  PLM_ASSERT(pool->released.free_bytes == released && released == pool->stats.bytes_released);
  PLM_ASSERT(held == pool->stats.bytes_reserved);
  PLM_ASSERT(used == pool->live.count);
  plm__pool_slabs_check(pool);
  PLM_ASSERT(pool->global.cached_bytes <= POOL_CACHE_MAX_BYTES);
  for (const pool_owner *owner = pool->owners; owner; owner = owner->hh.next) {
    PLM_ASSERT(owner->pending.cached_bytes <= POOL_CACHE_MAX_BYTES);
    uint64_t epoch = 0;
    for (const pool_block *block = owner->queue_head; block; block = block->epoch_next) {
      PLM_ASSERT(block->owner == owner && block->state != BLOCK_USED);
      PLM_ASSERT(block->epoch >= epoch && block->epoch <= owner->open_epoch);
      epoch = block->epoch;
    }
  }
}
#else
#define check_invariants(pool) ((void)0)
#endif

/* ---- the fast path ---------------------------------------------------------------- */

static request make_request(size_t bytes) {
  request r = {.bytes = bytes, .size = pool_round_up(bytes, POOL_GRANULE)};
  size_t granules = r.size / POOL_GRANULE;
  if (granules <= POOL_SMALL_MAX_GRANULES) {
    size_t class_granules = 0;
    r.klass = pool_class_for_request(granules, &class_granules);
    r.small = true;
    r.size = class_granules * POOL_GRANULE;
  }
  return r;
}

/* A block for the request from the owner's pending index or the global one, taken,
 * or NULL. Called with `lock` held. */
static pool_block *try_take(plm_pool *pool, pool_owner *owner, const request *r) {
  pool_block *block = NULL;
  if (r->small) {
    block = owner->pending.cached[r->klass];
    if (!block) block = pool->global.cached[r->klass];
  }
  if (!block) {
    size_t granules = r->size / POOL_GRANULE;
    pool_block *mine = pool_index_find(&owner->pending, granules);
    pool_block *anyone = pool_index_find(&pool->global, granules);
    block = mine;
    if (!mine || (anyone && anyone->size < mine->size)) block = anyone;
  }
  return block ? plm__pool_take_block(pool, block, r->size) : NULL;
}

/* Record a taken block as live; false (block put back) when the table is out of
 * memory. Called with `lock` held. */
static bool make_live(plm_pool *pool, pool_block *block, const request *r, plm_stream *stream,
                      bool reserved_memory) {
  block->requested = r->slab ? 0 : r->bytes;
  bool tracked = pool_live_insert(&pool->live, block);
  if (tracked && r->slab) {
    /* A slab's block becomes the slab at once, so that no one sees it in between (a
     * block split short for want of a descriptor is no slab). */
    pool_owner *owner = plm__pool_owner_get(pool, stream);
    if (owner && block->size == r->size && plm__pool_slab_add(pool, owner, r->klass, block)) {
      plm__pool_poison_freed(pool, block->addr, block->size, stream->handle); /* its slots */
      return true;
    }
    pool_live_remove(&pool->live, block->addr);
    tracked = false;
  }
  if (!tracked) {
    pool_owner *owner = plm__pool_owner_find(pool, stream);
    if (owner)
      plm__pool_release_block(pool, block, owner);
    else /* the stream was destroyed meanwhile: its work is done */
      plm__pool_release_block_safe(pool, block);
    return false;
  }
  if (r->slab) return true;
  plm__pool_poison_handout(pool, block->addr, block->size, r->bytes, stream->handle);
  pool_count_allocated(&pool->stats, block->size, r->bytes,
                       block->freed_on && block->freed_on != stream, !reserved_memory);
  plm__pool_slab_count(pool, block->size, +1);
  return true;
}

/* ---- the slow path: chunks --------------------------------------------------------- */

/* A growth the byte limit refuses. */
static plm_status byte_limit_passed(const plm_pool *pool) {
  return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "the byte limit of %zu would be passed",
                       pool->limit.bytes);
}

/* Memory for a chunk of `bytes` from upstream, through the byte limit (pool_limit.h).
 * On success the bytes are still in flight: the caller settles them. */
static plm_status reserve_chunk(plm_pool *pool, size_t bytes, void **memory) {
  pthread_mutex_lock(&pool->lock);
  bool admitted = pool_limit_admit(&pool->limit, pool->stats.bytes_reserved, bytes);
  pthread_mutex_unlock(&pool->lock);
  if (!admitted) return byte_limit_passed(pool);
  plm_status status = plm__pool_reserve(pool, bytes, NULL, memory);
  if (status != PLM_OK) {
    pthread_mutex_lock(&pool->lock);
    pool_limit_settle(&pool->limit, bytes);
    pthread_mutex_unlock(&pool->lock);
  }
  return status;
}

/* Reserve a chunk for at least `need` bytes and, when `r` is given, take the
 * request's block from it at once. slow_lock held, lock not held. */
static plm_status grow(plm_pool *pool, size_t need, const request *r, pool_block **taken) {
  pthread_mutex_lock(&pool->lock);
  const size_t reserved = (size_t)pool->stats.bytes_reserved;
  const size_t room = pool_limit_room(&pool->limit, reserved);
  pthread_mutex_unlock(&pool->lock);
  if (need > room) return byte_limit_passed(pool);
  const plm_pool_config *config = &pool->config;
  size_t bytes = pool_chunk_size(config, need, reserved);
  if (need < config->huge_bytes && bytes > room) bytes = room / POOL_GRANULE * POOL_GRANULE;
  void *memory = NULL;
  plm_status status = reserve_chunk(pool, bytes, &memory);
  if (status != PLM_OK && bytes > need) {
    bytes = need;
    status = reserve_chunk(pool, bytes, &memory);
  }
  if (status != PLM_OK) return status;

  pthread_mutex_lock(&pool->lock);
  pool_limit_settle(&pool->limit, bytes);
  pool_chunk *chunk = calloc(1, sizeof *chunk);
  pool_block *block = chunk ? plm__pool_descriptor_new(pool) : NULL;
  if (!block) {
    pthread_mutex_unlock(&pool->lock);
    free(chunk);
    plm__pool_unreserve(pool, memory, bytes, NULL);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a chunk descriptor");
  }
  chunk->base = (uintptr_t)memory;
  chunk->size = bytes;
  chunk->page_bytes = pool->page_bytes;
  chunk->first = block;
  plm__pool_poison_now(pool, chunk->base, bytes); /* nothing is handed out yet */
  DL_APPEND(pool->chunks, chunk);
  block->addr = chunk->base;
  block->size = bytes;
  block->chunk = chunk;
  block->state = BLOCK_FREE;
  pool_index_insert(&pool->global, block);
  pool->stats.upstream_allocs++;
  pool_count_reserved(&pool->stats, bytes);
  if (r) {
    *taken = plm__pool_take_block(pool, block, r->size);
  }
  pthread_mutex_unlock(&pool->lock);
  return PLM_OK;
}

/* Whether nothing in a chunk is used or pending: its blocks are FREE and safe for
 * all, or RELEASED (alternating: neighbours of one state merge). */
static bool chunk_is_idle(const pool_chunk *chunk) {
  for (const pool_block *block = chunk->first; block; block = block->phys_next) {
    bool idle = (block->state == BLOCK_FREE && !block->owner) || block->state == BLOCK_RELEASED;
    if (!idle) return false;
  }
  return true;
}

/* Take an idle chunk's blocks out of the global index and the released list, and its
 * bytes out of the counts. `lock` held. */
static void forget_idle_chunk(plm_pool *pool, pool_chunk *chunk) {
  pool_block *block = chunk->first;
  while (block) {
    pool_block *next = block->phys_next;
    if (block->state == BLOCK_RELEASED)
      pool_index_remove(&pool->released, block);
    else
      pool_index_remove(&pool->global, block);
    plm__pool_descriptor_release(pool, block);
    block = next;
  }
  pool->stats.bytes_reserved -= chunk->size - chunk->released;
  pool->stats.bytes_released -= chunk->released;
}

/* Give idle chunks (nothing used or pending in them) back upstream while more than
 * `keep` bytes are reserved (the last one released may take it below `keep`); with
 * `addresses_too` (a trim), also idle chunks whose memory has all gone back (released
 * pages only), whatever `keep` is. The slow path keeps those: their addresses cost
 * nothing, and taking them again is cheaper than a new chunk. slow_lock held, lock not
 * held. */
static size_t release_idle_chunks(plm_pool *pool, size_t keep, bool addresses_too) {
  size_t released = 0;
  pool_chunk *idle = NULL;
  pthread_mutex_lock(&pool->lock);
  pool_chunk *chunk, *next;
  DL_FOREACH_SAFE(pool->chunks, chunk, next) {
    bool addresses_only = addresses_too && chunk->released == chunk->size;
    if (!chunk_is_idle(chunk) || (!addresses_only && pool->stats.bytes_reserved <= keep)) continue;
    forget_idle_chunk(pool, chunk);
    DL_DELETE(pool->chunks, chunk);
    DL_APPEND(idle, chunk);
    pool->stats.upstream_frees++;
    released++;
  }
  pthread_mutex_unlock(&pool->lock);
  DL_FOREACH_SAFE(idle, chunk, next) {
    plm__pool_unpoison_chunk(pool, chunk->base, chunk->size);
    plm__pool_unreserve(pool, (void *)chunk->base, chunk->size, NULL);
    free(chunk);
  }
  return released;
}

/* Give idle chunks back on the slow path; an upstream free waits for the device
 * (cudaFree does), so it counts as a host synchronisation. */
static void release_idle_chunks_counted(plm_pool *pool, size_t keep) {
  if (release_idle_chunks(pool, keep, false) == 0) return;
  pthread_mutex_lock(&pool->lock);
  pool->stats.host_synchronizations++;
  pthread_mutex_unlock(&pool->lock);
}

/* ---- the slow path: the ladder ------------------------------------------------------ */

static size_t keep_reserved(const plm_pool *pool) {
  return pool->config.release_threshold ? pool->config.release_threshold : SIZE_MAX;
}

/* Wait on the host for a pending free elsewhere that would satisfy the request (or,
 * when no single block would, for every stream with pending frees, the requester's
 * own included: once safe for all, they can merge and their chunks can go back).
 * Returns whether it waited. slow_lock held, lock not held. */
static bool wait_for_pending(plm_pool *pool, pool_owner **owners, size_t count,
                             const pool_owner *requester, const request *r, plm_status *error) {
  void *event = NULL;
  pthread_mutex_lock(&pool->lock);
  for (size_t i = 0; i < count && !event; i++)
    if (owners[i] != requester) plm__pool_find_covered_pending(pool, owners[i], r, false, &event);
  pthread_mutex_unlock(&pool->lock);
  bool waited = false;
  plm_status status = PLM_OK;
  if (event) {
    status = pool->backend->event_synchronize(pool->backend_ctx, event);
    waited = status == PLM_OK;
  } else {
    for (size_t i = 0; i < count && status == PLM_OK; i++) {
      const pool_owner *owner = owners[i];
      if (owner->mark_count == 0) continue;
      const epoch_mark *newest =
          &owner->marks[(owner->mark_first + owner->mark_count - 1) % POOL_EPOCH_RING];
      status = pool->backend->event_synchronize(pool->backend_ctx, newest->event);
      waited |= status == PLM_OK;
    }
  }
  if (status != PLM_OK) *error = status;
  if (waited) {
    pthread_mutex_lock(&pool->lock);
    pool->stats.host_synchronizations++;
    pthread_mutex_unlock(&pool->lock);
  }
  return waited;
}

/* Take a block pending on another stream, making `requester` wait for its free on
 * the device. slow_lock held, lock not held. */
static pool_block *take_with_stream_wait(plm_pool *pool, pool_owner **owners, size_t count,
                                         pool_owner *requester, const request *r) {
  void *event = NULL;
  pool_block *block = NULL;
  pool_owner *from = NULL;
  pthread_mutex_lock(&pool->lock);
  for (size_t i = 0; i < count && !block; i++) {
    if (owners[i] == requester) continue;
    block = plm__pool_find_covered_pending(pool, owners[i], r, true, &event);
    from = owners[i];
  }
  uint64_t epoch = block ? block->epoch : 0;
  if (block) block = plm__pool_take_block(pool, block, r->size);
  pthread_mutex_unlock(&pool->lock);
  if (!block) return NULL;

  if (pool->backend->stream_wait_event(pool->backend_ctx, requester->handle, event) != PLM_OK) {
    pthread_mutex_lock(&pool->lock);
    block->owner = from;
    block->epoch = epoch;
    block->state = plm__pool_may_cache(&from->pending, block) ? BLOCK_CACHED : BLOCK_FREE;
    if (block->state == BLOCK_FREE) block = plm__pool_merge_neighbours(pool, block);
    plm__pool_attach_free_block(pool, block);
    pthread_mutex_unlock(&pool->lock);
    return NULL;
  }
  pthread_mutex_lock(&pool->lock);
  pool->stats.inserted_waits++;
  pthread_mutex_unlock(&pool->lock);
  return block;
}

/* Memory for a request the free blocks cannot serve (pool_pages.c): first the memory
 * under the largest holes goes back, beyond the slack the new memory would leave; then
 * released pages are taken again where they, with the free blocks beside them, hold
 * the request (the block is taken from them), else a new chunk is reserved. slow_lock
 * held, lock not held. */
static plm_status reserve_memory(plm_pool *pool, pool_owner *requester, const request *r,
                                 pool_block **taken) {
  plm__pool_decommit_before_growth(pool, r->size);
  if (plm__pool_recommit_for(pool, r->size)) {
    pthread_mutex_lock(&pool->lock);
    *taken = try_take(pool, requester, r);
    pthread_mutex_unlock(&pool->lock);
    if (*taken) return PLM_OK;
  }
  return grow(pool, r->size, r, taken);
}

/* Give idle chunks back beyond the release threshold (all: every idle chunk, and the
 * memory under every free page), then reserve memory for the request (reserve_memory).
 * slow_lock held, lock not held. */
static plm_status give_back_and_reserve(plm_pool *pool, pool_owner *requester, const request *r,
                                        bool all, pool_block **taken) {
  release_idle_chunks_counted(pool, all ? 0 : keep_reserved(pool));
  if (all) plm__pool_decommit(pool, SIZE_MAX);
  return reserve_memory(pool, requester, r, taken);
}

/* Serve a request the fast path could not, following the ladder (pool_internal.h).
 * Returns the live block, or NULL with *status and the message set: out-of-memory
 * with the diagnostic, or the first backend error met on the way. */
static pool_block *alloc_slow(plm_pool *pool, plm_stream *stream, const request *r,
                              plm_status *status, bool *reserved) {
  pthread_mutex_lock(&pool->slow_lock);
  plm__pool_upstream_refused(true);
  pool_block *block = NULL;
  plm_status grown = PLM_ERR_OUT_OF_MEMORY; /* the last reservation's outcome */
  plm_status error = PLM_OK;                /* a failure other than lack of memory */
  size_t count = 0;
  pthread_mutex_lock(&pool->lock);
  pool_owner *requester = plm__pool_owner_get(pool, stream);
  pool_owner **owners = requester ? plm__pool_snapshot_owners(pool, &count) : NULL;
  pthread_mutex_unlock(&pool->lock);
  if (!owners) {
    *status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the pool's stream records");
    pthread_mutex_lock(&pool->lock);
    pool->stats.failures++;
    pthread_mutex_unlock(&pool->lock);
    pthread_mutex_unlock(&pool->slow_lock);
    return NULL;
  }

  for (int round = 0; round < SLOW_PATH_ROUNDS && !block && error == PLM_OK; round++) {
    /* 1. Reuse frees whose work has completed. */
    plm__pool_close_epochs(pool, owners, count);
    plm__pool_poll_epochs(pool, owners, count);
    pthread_mutex_lock(&pool->lock);
    block = try_take(pool, requester, r);
    pthread_mutex_unlock(&pool->lock);
    if (block) break;

    /* 2. Reuse another stream's pending free behind a device-side wait, rather
     * than reserve more memory while the freeing stream catches up. */
    if (!(pool->config.flags & PLM_POOL_NO_STREAM_WAITS)) {
      block = take_with_stream_wait(pool, owners, count, requester, r);
      if (block) break;
    }

    /* 3. Take released pages again, or grow, after giving idle chunks back beyond the
     * release threshold. */
    grown = give_back_and_reserve(pool, requester, r, false, &block);
    if (grown != PLM_ERR_OUT_OF_MEMORY) break;

    /* Out of memory. 4. Give back every empty slab (those not yet safe go back pending
     * on their streams, for step 6), and coalesce cached small blocks. */
    pthread_mutex_lock(&pool->lock);
    plm__pool_slabs_retire_empty(pool, NULL);
    plm__pool_uncache_index(pool, &pool->global);
    plm__pool_uncache_index(pool, &requester->pending);
    block = try_take(pool, requester, r);
    pthread_mutex_unlock(&pool->lock);
    if (block) break;

    /* 5. Give every idle chunk, and the memory under every free page, back upstream,
     * and reserve again. */
    grown = give_back_and_reserve(pool, requester, r, true, &block);
    if (grown != PLM_ERR_OUT_OF_MEMORY) break;

    /* 6. Block the host on the pending frees that would satisfy the request. */
    if (!wait_for_pending(pool, owners, count, requester, r, &error)) break;
  }
  const bool reserved_memory = grown == PLM_OK;
  if (grown != PLM_OK && grown != PLM_ERR_OUT_OF_MEMORY) error = grown;

  pthread_mutex_lock(&pool->lock);
  bool live = block && make_live(pool, block, r, stream, reserved_memory);
  if (!live && !r->slab) pool->stats.failures++; /* a slab's: see pooled_alloc */
  check_invariants(pool);
  pthread_mutex_unlock(&pool->lock);
  if (reserved) *reserved = live && reserved_memory;
  if (live)
    *status = PLM_OK;
  else if (block)
    *status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory to track a block");
  else if (error != PLM_OK)
    *status = error; /* the backend's message is already set */
  else {
    plm__pool_format_failure(pool, r);
    *status = PLM_ERR_OUT_OF_MEMORY;
  }
  free(owners);
  pthread_mutex_unlock(&pool->slow_lock);
  return live ? block : NULL;
}

/* ---- alloc and free --------------------------------------------------------------- */

/* The fast path: a block for the request from the free lists, made live, or NULL (then
 * the slow path serves it). `lock` held. */
static pool_block *take_live(plm_pool *pool, pool_owner *owner, const request *r,
                             plm_stream *stream) {
  pool_block *block = owner ? try_take(pool, owner, r) : NULL;
  return block && make_live(pool, block, r, stream, false) ? block : NULL;
}

/* A slot of `klass` for `bytes` from a new slab, whose block is served as any other
 * request (make_live makes it the slab). */
static plm_status slab_alloc_new(plm_pool *pool, unsigned klass, size_t bytes, plm_stream *stream,
                                 void **ptr) {
  const size_t slab_bytes = plm__pool_slab_bytes(pool, klass);
  const request r = {.bytes = slab_bytes, .size = slab_bytes, .klass = klass, .slab = true};
  for (;;) {
    pthread_mutex_lock(&pool->lock);
    pool_owner *owner = plm__pool_owner_get(pool, stream);
    pool_block *block = take_live(pool, owner, &r, stream);
    pthread_mutex_unlock(&pool->lock);
    plm_status status = PLM_OK;
    bool reserved = false;
    if (!block && !alloc_slow(pool, stream, &r, &status, &reserved)) return status;
    pthread_mutex_lock(&pool->lock);
    owner = plm__pool_owner_get(pool, stream);
    /* Another thread on this stream may have emptied the new slab meanwhile: again. */
    *ptr = owner ? plm__pool_slab_take(pool, owner, klass, bytes, !reserved) : NULL;
    pthread_mutex_unlock(&pool->lock);
    if (*ptr) return PLM_OK;
    if (!owner) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a stream record");
  }
}

static plm_status pooled_alloc(plm_pool *pool, size_t bytes, plm_stream *stream, void **ptr) {
  request r = make_request(bytes);
  pthread_mutex_lock(&pool->lock);
  pool_owner *owner = plm__pool_owner_get(pool, stream);
  if (owner) owner->allocates = true;
  if (owner && r.small && plm__pool_slab_serves(pool, r.klass)) {
    /* A slot of the owner's slabs, of an orphan it adopts, or of a new slab... */
    *ptr = plm__pool_slab_take(pool, owner, r.klass, bytes, true);
    pthread_mutex_unlock(&pool->lock);
    if (*ptr) return PLM_OK;
    plm_status status = slab_alloc_new(pool, r.klass, bytes, stream, ptr);
    if (status == PLM_OK) return PLM_OK;
    pthread_mutex_lock(&pool->lock);
    if (status != PLM_ERR_OUT_OF_MEMORY) {
      pool->stats.failures++;
      pthread_mutex_unlock(&pool->lock);
      return status;
    }
    /* ...or, where no slab fits, a block of its own: the ladder again for the request
     * itself (its diagnostic names the bytes asked for, and it counts the failure). */
    owner = plm__pool_owner_get(pool, stream);
  }
  pool_block *block = take_live(pool, owner, &r, stream);
  pthread_mutex_unlock(&pool->lock);
  plm_status status = PLM_OK;
  if (!block && !(block = alloc_slow(pool, stream, &r, &status, NULL))) return status;
  *ptr = (void *)block->addr;
  return PLM_OK;
}

static plm_status pooled_free(plm_pool *pool, void *ptr, plm_stream *stream) {
  uintptr_t addr = (uintptr_t)ptr;
  pthread_mutex_lock(&pool->lock);
  pool_slab *slab = plm__pool_slab_find(pool, addr);
  if (slab) {
    plm_status status = plm__pool_slab_give(pool, slab, addr, stream);
    pthread_mutex_unlock(&pool->lock);
    return status;
  }
  pool_block *block = pool_live_find(&pool->live, addr);
  pool_owner *owner = block ? plm__pool_owner_get(pool, stream) : NULL;
  if (owner) {
    pool_live_remove(&pool->live, addr);
    pool_count_freed(&pool->stats, block->size, block->requested);
    plm__pool_slab_count(pool, block->size, -1);
    plm__pool_poison_freed(pool, addr, block->size, stream->handle);
    plm__pool_release_block(pool, block, owner);
  }
  pthread_mutex_unlock(&pool->lock);
  if (!block)
    return plm__fail_raw(PLM_ERR_NOT_FOUND,
                         "ptr %p is not a live block of this pool (never allocated, already "
                         "freed, or an interior pointer)",
                         ptr);
  if (!owner) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a stream record");
  return PLM_OK;
}

/* ---- streams, trimming, lifecycle --------------------------------------------------- */

/* Forget a stream that is being destroyed: wait for its work, then make its pending
 * blocks safe for all. Called under the context's registry lock. */
static void pooled_forget_stream(plm_pool *pool, plm_stream *stream) {
  pthread_mutex_lock(&pool->slow_lock);
  pthread_mutex_lock(&pool->lock);
  pool_owner *owner = plm__pool_owner_find(pool, stream);
  pthread_mutex_unlock(&pool->lock);
  if (owner) {
    pool->backend->stream_synchronize(pool->backend_ctx, owner->handle);
    plm__pool_drop_marks(pool, owner);
    pthread_mutex_lock(&pool->lock);
    plm__pool_migrate(pool, owner, UINT64_MAX);
    plm__pool_slabs_orphan(pool, owner);
    plm__pool_owner_slabs_release(&owner->slabs);
    plm__pool_owner_remove(pool, owner);
    pthread_mutex_unlock(&pool->lock);
  }
  pthread_mutex_unlock(&pool->slow_lock);
}

/* Wait for every stream that has freed blocks into the pool: exactly what makes their
 * closed epochs safe for all (a context-wide synchronize passes over a stream under
 * capture, whose earlier frees would then be taken as done). A failure (a stream under
 * capture is refused) moves nothing. slow_lock held. */
static plm_status synchronize_owners(plm_pool *pool, pool_owner **owners, size_t count) {
  for (size_t i = 0; i < count; i++) {
    plm_status status = pool->backend->stream_synchronize(pool->backend_ctx, owners[i]->handle);
    if (status != PLM_OK) return status;
  }
  return PLM_OK;
}

static plm_status pooled_trim(plm_pool *pool, size_t keep_bytes) {
  pthread_mutex_lock(&pool->slow_lock);
  /* Close every stream's epoch first: the synchronisation below covers the frees
   * made before it, not frees other threads make while it runs. */
  pthread_mutex_lock(&pool->lock);
  size_t count = 0;
  pool_owner **owners = plm__pool_snapshot_owners(pool, &count);
  uint64_t *closed = owners ? malloc((count ? count : 1) * sizeof *closed) : NULL;
  for (size_t i = 0; closed && i < count; i++) {
    closed[i] = owners[i]->open_epoch++;
    owners[i]->open_epoch_used = false;
  }
  pthread_mutex_unlock(&pool->lock);
  plm_status status = closed ? synchronize_owners(pool, owners, count)
                             : plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory to trim");
  if (status == PLM_OK) {
    for (size_t i = 0; i < count; i++) plm__pool_drop_marks(pool, owners[i]);
    pthread_mutex_lock(&pool->lock);
    pool->stats.host_synchronizations++;
    for (size_t i = 0; i < count; i++) plm__pool_migrate(pool, owners[i], closed[i]);
    /* Empty slabs go back: safe for all when their last free is covered above. */
    plm__pool_slabs_retire_empty(pool, NULL);
    plm__pool_uncache_index(pool, &pool->global);
    check_invariants(pool);
    pthread_mutex_unlock(&pool->lock);
    release_idle_chunks(pool, keep_bytes, true);
    pthread_mutex_lock(&pool->lock);
    const size_t reserved = (size_t)pool->stats.bytes_reserved;
    pthread_mutex_unlock(&pool->lock);
    if (reserved > keep_bytes) plm__pool_decommit(pool, reserved - keep_bytes);
  } else if (closed) {
    /* Nothing moved: let a later slow path close those epochs again. */
    pthread_mutex_lock(&pool->lock);
    for (size_t i = 0; i < count; i++) owners[i]->open_epoch_used = true;
    pthread_mutex_unlock(&pool->lock);
  }
  free(closed);
  free(owners);
  pthread_mutex_unlock(&pool->slow_lock);
  return status;
}

static plm_status pooled_open(plm_pool *pool) {
  if (!pool->config.initial_reservation) return PLM_OK;
  pthread_mutex_lock(&pool->slow_lock);
  plm_status status =
      grow(pool, pool_round_up(pool->config.initial_reservation, POOL_GRANULE), NULL, NULL);
  pthread_mutex_unlock(&pool->slow_lock);
  return status;
}

/* Give every chunk back, live blocks and all, and the streams' records and events. */
static void pooled_close(plm_pool *pool) {
  pool_chunk *chunk, *next_chunk;
  DL_FOREACH_SAFE(pool->chunks, chunk, next_chunk) {
    plm__pool_unpoison_chunk(pool, chunk->base, chunk->size);
    plm__pool_unreserve(pool, (void *)chunk->base, chunk->size, NULL);
    free(chunk);
  }
  pool_owner *owner, *next_owner;
  HASH_ITER(hh, pool->owners, owner, next_owner) {
    for (unsigned k = 0; k < owner->mark_count; k++)
      pool->backend->event_destroy(pool->backend_ctx,
                                   owner->marks[(owner->mark_first + k) % POOL_EPOCH_RING].event);
    plm__pool_owner_slabs_release(&owner->slabs);
    plm__pool_owner_remove(pool, owner);
  }
  for (size_t i = 0; i < pool->spare_event_count; i++)
    pool->backend->event_destroy(pool->backend_ctx, pool->spare_events[i]);
  free(pool->spare_events);
  plm__pool_slabs_destroy(&pool->small_slabs);
}

const pool_resource plm__pool_pooled = {
    /* .mode               = */ PLM_POOL_POOLED,
    /* .name               = */ "pooled",
    /* .lays_out_chunks    = */ true,
    /* .free_goes_upstream = */ false,
    /* .from_cuda_mem_pool = */ false,
    /* .check              = */ NULL,
    /* .open               = */ pooled_open,
    /* .close              = */ pooled_close,
    /* .alloc              = */ pooled_alloc,
    /* .free               = */ pooled_free,
    /* .trim               = */ pooled_trim,
    /* .reserved           = */ NULL,
    /* .forget_stream      = */ pooled_forget_stream,
};

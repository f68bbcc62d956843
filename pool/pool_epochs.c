/* pool/pool_epochs.c: how the pool learns that a stream has passed its frees
 * (internal). Frees on a stream are tagged with its open epoch; the slow path
 * closes epochs, records an event behind them (or sees the stream idle), polls the
 * events, and migrates what completed. It also finds the pending blocks another
 * stream can take behind a device-side wait. Called with `slow_lock` held (which
 * alone may recycle events and owners); each function takes `lock` around the
 * state it changes, except find_covered_pending, whose caller holds it. */
#include <stdlib.h>

#include "pool/pool_internal.h"

enum { EXTEND_CANDIDATES = 64 };

/* ---- what completed becomes safe for all -------------------------------------------- */

void plm__pool_migrate(plm_pool *pool, pool_owner *owner, uint64_t upto) {
  if (upto > owner->safe_epoch) owner->safe_epoch = upto;
  plm__pool_slab_migrate(pool, owner, upto); /* an empty slab reads safe_epoch */
  plm__pool_migrate_blocks(pool, owner, upto);
}

/* ---- the slow path: epochs --------------------------------------------------------- */

/* The owners, as an array the slow path can walk with `lock` released. */
pool_owner **plm__pool_snapshot_owners(plm_pool *pool, size_t *count) {
  *count = HASH_COUNT(pool->owners);
  pool_owner **owners = malloc((*count ? *count : 1) * sizeof *owners);
  if (!owners) {
    *count = 0;
    return NULL;
  }
  size_t i = 0;
  pool_owner *owner, *next;
  HASH_ITER(hh, pool->owners, owner, next) owners[i++] = owner;
  return owners;
}

static void *take_spare_event(plm_pool *pool) {
  if (pool->spare_event_count > 0) return pool->spare_events[--pool->spare_event_count];
  void *event = NULL;
  if (pool->backend->event_create(pool->backend_ctx, PLM_EVENT_DISABLE_TIMING, &event) != PLM_OK)
    return NULL;
  return event;
}

static void return_spare_event(plm_pool *pool, void *event) {
  if (pool->spare_event_count == pool->spare_event_capacity) {
    size_t capacity = pool->spare_event_capacity ? 2 * pool->spare_event_capacity : 16;
    void **grown = realloc(pool->spare_events, capacity * sizeof *grown);
    if (!grown) {
      pool->backend->event_destroy(pool->backend_ctx, event);
      return;
    }
    pool->spare_events = grown;
    pool->spare_event_capacity = capacity;
  }
  pool->spare_events[pool->spare_event_count++] = event;
}

/* Forget every mark of an owner (all known complete). */
void plm__pool_drop_marks(plm_pool *pool, pool_owner *owner) {
  for (; owner->mark_count > 0; owner->mark_count--) {
    return_spare_event(pool, owner->marks[owner->mark_first].event);
    owner->mark_first = (owner->mark_first + 1) % POOL_EPOCH_RING;
  }
}

/* Whether the owner's stream is being captured into a graph (by another thread, or by
 * another library on a wrapped stream): a query of it would fail and break the capture,
 * and an event recorded on it would become a node of the graph, which completes only
 * when the graph is launched (and which CUDA refuses to query). */
static bool capturing(const plm_pool *pool, const pool_owner *owner) {
  return pool->backend->stream_capturing &&
         pool->backend->stream_capturing(pool->backend_ctx, owner->handle);
}

/* Close the open epoch of every owner whose frees carry it. If the stream has
 * nothing left to run, those frees (and all earlier ones) are safe now; otherwise
 * record an event behind them. Closing comes first, so frees racing with the query
 * are tagged with the next epoch. A stream under capture keeps its epoch open until a
 * slow path after the capture (pool_internal.h, "Epochs"). slow_lock held, lock not
 * held. */
void plm__pool_close_epochs(plm_pool *pool, pool_owner **owners, size_t count) {
  for (size_t i = 0; i < count; i++) {
    pool_owner *owner = owners[i];
    if (capturing(pool, owner)) continue;
    pthread_mutex_lock(&pool->lock);
    bool close = owner->open_epoch_used;
    uint64_t epoch = 0;
    if (close) {
      epoch = owner->open_epoch++;
      owner->open_epoch_used = false;
    }
    pthread_mutex_unlock(&pool->lock);
    if (!close) continue;
    bool idle = false;
    if (pool->backend->stream_query(pool->backend_ctx, owner->handle, &idle) == PLM_OK && idle) {
      plm__pool_drop_marks(pool, owner);
      pthread_mutex_lock(&pool->lock);
      plm__pool_migrate(pool, owner, epoch);
      pthread_mutex_unlock(&pool->lock);
      continue;
    }
    bool marked = false;
    if (owner->mark_count == POOL_EPOCH_RING) {
      /* Ring full: move the newest mark behind these frees too. It then completes
       * later than before, which is conservative, and covers every pending block. */
      epoch_mark *newest =
          &owner->marks[(owner->mark_first + owner->mark_count - 1) % POOL_EPOCH_RING];
      marked =
          pool->backend->event_record(pool->backend_ctx, newest->event, owner->handle) == PLM_OK;
      if (marked) newest->epoch = epoch;
    } else {
      void *event = take_spare_event(pool);
      marked =
          event && pool->backend->event_record(pool->backend_ctx, event, owner->handle) == PLM_OK;
      if (marked) {
        unsigned slot = (owner->mark_first + owner->mark_count) % POOL_EPOCH_RING;
        owner->marks[slot] = (epoch_mark){.epoch = epoch, .event = event, .complete = false};
        owner->mark_count++;
      } else if (event) {
        return_spare_event(pool, event);
      }
    }
    if (!marked) {
      /* No mark covers this epoch's blocks: have the next slow path close it again
       * (the next mark covers older epochs too, as a stream completes in order). */
      pthread_mutex_lock(&pool->lock);
      owner->open_epoch_used = true;
      pthread_mutex_unlock(&pool->lock);
    }
  }
}

/* Ask the backend which marks have completed (newest first: a complete mark implies
 * every older one), then migrate what they cover. slow_lock held, lock not held. */
void plm__pool_poll_epochs(plm_pool *pool, pool_owner **owners, size_t count) {
  for (size_t i = 0; i < count; i++) {
    pool_owner *owner = owners[i];
    for (unsigned k = owner->mark_count; k-- > 0;) {
      epoch_mark *mark = &owner->marks[(owner->mark_first + k) % POOL_EPOCH_RING];
      bool complete = mark->complete;
      if (!complete &&
          pool->backend->event_query(pool->backend_ctx, mark->event, &complete) != PLM_OK)
        complete = false;
      if (!complete) continue;
      for (unsigned j = 0; j <= k; j++)
        owner->marks[(owner->mark_first + j) % POOL_EPOCH_RING].complete = true;
      break;
    }
    uint64_t upto = 0;
    while (owner->mark_count > 0 && owner->marks[owner->mark_first].complete) {
      epoch_mark *mark = &owner->marks[owner->mark_first];
      upto = mark->epoch;
      return_spare_event(pool, mark->event);
      owner->mark_first = (owner->mark_first + 1) % POOL_EPOCH_RING;
      owner->mark_count--;
    }
    if (upto > 0) {
      pthread_mutex_lock(&pool->lock);
      plm__pool_migrate(pool, owner, upto);
      pthread_mutex_unlock(&pool->lock);
    }
  }
}

/* The event of the oldest closed epoch at or after `epoch`, or NULL. */
static void *mark_covering(const pool_owner *owner, uint64_t epoch) {
  for (unsigned k = 0; k < owner->mark_count; k++) {
    const epoch_mark *mark = &owner->marks[(owner->mark_first + k) % POOL_EPOCH_RING];
    if (mark->epoch >= epoch) return mark->event;
  }
  return NULL;
}

static bool is_global_free(const pool_block *block) {
  return block && block->state == BLOCK_FREE && !block->owner;
}

/* The size a FREE pending block would have with its global free neighbours. */
static size_t size_with_global(const pool_block *block) {
  size_t size = block->size;
  if (is_global_free(block->phys_prev)) size += block->phys_prev->size;
  if (is_global_free(block->phys_next)) size += block->phys_next->size;
  return size;
}

/* Merge a FREE pending block (attached) with its global free neighbours, and then
 * with any FREE neighbours pending on the same stream that brings next to it; the
 * result stays pending on the block's owner. */
static pool_block *extend_with_global(plm_pool *pool, pool_block *block) {
  pool_owner *owner = block->owner;
  plm__pool_detach_free_block(pool, block);
  pool_block *prev = block->phys_prev, *next = block->phys_next;
  if (is_global_free(next)) {
    pool_index_remove(&pool->global, next);
    plm__pool_absorb_next(pool, block, next);
  }
  if (is_global_free(prev)) {
    pool_index_remove(&pool->global, prev);
    prev->owner = owner;
    prev->freed_on = block->freed_on;
    plm__pool_absorb_next(pool, prev, block);
    block = prev;
  }
  block = plm__pool_merge_neighbours(pool, block);
  plm__pool_attach_free_block(pool, block);
  return block;
}

/* A block pending on `owner` that fits the request, possibly once extended with its
 * global free neighbours, and is covered by a recorded mark; or NULL. When no single
 * block fits, looks at the owner's oldest EXTEND_CANDIDATES pending blocks (the
 * slow path only). Called with `lock` held. */
pool_block *plm__pool_find_covered_pending(plm_pool *pool, pool_owner *owner, const request *r,
                                           bool extend, void **event) {
  pool_block *block = NULL;
  if (r->small) block = owner->pending.cached[r->klass];
  if (!block) block = pool_index_find(&owner->pending, r->size / POOL_GRANULE);
  if (!block) {
    unsigned budget = EXTEND_CANDIDATES;
    for (pool_block *candidate = owner->queue_head; candidate && !block && budget-- > 0;
         candidate = candidate->epoch_next)
      if (candidate->state == BLOCK_FREE && size_with_global(candidate) >= r->size &&
          mark_covering(owner, candidate->epoch))
        block = extend ? extend_with_global(pool, candidate) : candidate;
  }
  if (!block) return NULL;
  *event = mark_covering(owner, block->epoch);
  return *event ? block : NULL;
}

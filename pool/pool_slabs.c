/* pool/pool_slabs.c: small blocks carved from slabs (pool/pool_slabs.h). Every
 * function is called with the pool's `lock` held and makes no backend call. */
#include <stdlib.h>
#include <string.h>

#include <utlist.h>

#include "pool/pool_internal.h"
#include "streams/assert.h"
#include "streams/clock.h"
#include "streams/error.h"

/* ---- classes ---------------------------------------------------------------------- */

bool plm__pool_slab_serves(const plm_pool *pool, unsigned klass) {
  return klass < POOL_SLAB_CLASSES && pool->small_slabs.on[klass];
}

/* A class turns slabs on with a quarter of a slab's worth of blocks live (at least 4),
 * and off below a quarter of that: slabs pay when descriptors fall out of cache, not for a
 * handful of blocks (pool_slabs.h, "When"). A slab has the fewest slots that pass 64 KiB,
 * so it is never a small block itself. */
void plm__pool_slabs_init(pool_slabs *slabs) {
  for (size_t granules = 1; granules <= POOL_SLAB_MAX_GRANULES; granules++) {
    size_t class_granules = 0;
    unsigned klass = pool_class_for_request(granules, &class_granules);
    pool_slab_class *c = &slabs->classes[klass];
    c->slot_bytes = class_granules * POOL_GRANULE;
    c->slot_count = (unsigned)(((size_t)1 << POOL_SLAB_PAGE_SHIFT) / c->slot_bytes + 1);
    c->on_at = c->slot_count / 4 > 4 ? c->slot_count / 4 : 4;
  }
}

static size_t slot_bytes_of(const plm_pool *pool, unsigned klass) {
  return pool->small_slabs.classes[klass].slot_bytes;
}

size_t plm__pool_slab_bytes(const plm_pool *pool, unsigned klass) {
  const pool_slab_class *c = &pool->small_slabs.classes[klass];
  return c->slot_bytes * c->slot_count;
}

void plm__pool_slab_count(plm_pool *pool, size_t size, int change) {
  if (size > POOL_SLAB_MAX_BYTES || (pool->config.flags & PLM_POOL_NO_SLABS)) return;
  unsigned klass = pool_class_of(size / POOL_GRANULE);
  pool_slabs *slabs = &pool->small_slabs;
  slabs->live[klass] += (size_t)(ptrdiff_t)change;
  const unsigned on_at = slabs->classes[klass].on_at;
  if (slabs->live[klass] >= on_at)
    slabs->on[klass] = true;
  else if (slabs->live[klass] < on_at / 4)
    slabs->on[klass] = false;
}

/* ---- the slab map ------------------------------------------------------------------- */

static size_t map_home(const pool_slab_map *map, uintptr_t page) {
  return (size_t)(((uint64_t)page * 0x9e3779b97f4a7c15ULL) >> map->shift);
}

static bool slot_empty(const pool_slab_map_slot *slot) {
  return !slot->slab[0] && !slot->slab[1];
}

static pool_slab_map_slot *map_find(const pool_slab_map *map, uintptr_t page) {
  if (!map->slots) return NULL;
  for (size_t i = map_home(map, page);; i = (i + 1) & map->mask) {
    pool_slab_map_slot *slot = &map->slots[i];
    if (slot_empty(slot)) return NULL;
    if (slot->page == page) return slot;
  }
}

static pool_slab_map_slot *map_claim(pool_slab_map *map, uintptr_t page) {
  for (size_t i = map_home(map, page);; i = (i + 1) & map->mask) {
    pool_slab_map_slot *slot = &map->slots[i];
    if (slot_empty(slot)) {
      slot->page = page;
      map->count++;
      return slot;
    }
    if (slot->page == page) return slot;
  }
}

/* Rebuild the map with `capacity` slots (a power of two). */
static bool map_resize(pool_slab_map *map, size_t capacity) {
  pool_slab_map_slot *slots = calloc(capacity, sizeof *slots);
  if (!slots) return false;
  pool_slab_map old = *map;
  map->slots = slots;
  map->mask = capacity - 1;
  map->shift = 64u - (unsigned)__builtin_ctzll(capacity);
  map->count = 0;
  for (size_t i = 0; old.slots && i <= old.mask; i++)
    if (!slot_empty(&old.slots[i])) *map_claim(map, old.slots[i].page) = old.slots[i];
  free(old.slots);
  return true;
}

/* Room for `pages` more pages at a load of at most one half. */
static bool map_reserve(pool_slab_map *map, size_t pages) {
  size_t capacity = map->slots ? map->mask + 1 : 0;
  if ((map->count + pages) * 2 <= capacity) return true;
  size_t wanted = capacity ? capacity : 64;
  while ((map->count + pages) * 2 > wanted) wanted *= 2;
  return map_resize(map, wanted);
}

/* Empty slot i, shifting later slots of its run back (no tombstones). */
static void map_vacate(pool_slab_map *map, size_t i) {
  for (size_t j = (i + 1) & map->mask;; j = (j + 1) & map->mask) {
    pool_slab_map_slot *slot = &map->slots[j];
    if (slot_empty(slot)) break;
    size_t home = map_home(map, slot->page);
    /* Move j to i when its home is not cyclically in (i, j]. */
    bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (stays) continue;
    map->slots[i] = *slot;
    i = j;
  }
  map->slots[i] = (pool_slab_map_slot){0};
  map->count--;
}

static uintptr_t first_page(const pool_slab *slab) {
  return slab->base >> POOL_SLAB_PAGE_SHIFT;
}

static uintptr_t last_page(const pool_slab *slab) {
  return (slab->base + slab->slot_bytes * slab->slot_count - 1) >> POOL_SLAB_PAGE_SHIFT;
}

static bool map_add(pool_slab_map *map, pool_slab *slab) {
  if (!map_reserve(map, (size_t)(last_page(slab) - first_page(slab) + 1))) return false;
  for (uintptr_t page = first_page(slab); page <= last_page(slab); page++) {
    pool_slab_map_slot *slot = map_claim(map, page);
    int side = slot->slab[0] ? 1 : 0;
    PLM_ASSERT(!slot->slab[side]);
    slot->slab[side] = slab;
  }
  return true;
}

static void map_remove(pool_slab_map *map, const pool_slab *slab) {
  for (uintptr_t page = first_page(slab); page <= last_page(slab); page++) {
    pool_slab_map_slot *slot = map_find(map, page);
    PLM_ASSERT(slot);
    if (slot->slab[0] == slab) slot->slab[0] = NULL;
    if (slot->slab[1] == slab) slot->slab[1] = NULL;
    if (slot_empty(slot)) map_vacate(map, (size_t)(slot - map->slots));
  }
}

static bool holds(const pool_slab *slab, uintptr_t addr) {
  return slab && addr - slab->base < slab->slot_bytes * slab->slot_count;
}

pool_slab *plm__pool_slab_find(const plm_pool *pool, uintptr_t addr) {
  const pool_slab_map_slot *slot = map_find(&pool->small_slabs.map, addr >> POOL_SLAB_PAGE_SHIFT);
  if (!slot) return NULL;
  if (holds(slot->slab[0], addr)) return slot->slab[0];
  if (holds(slot->slab[1], addr)) return slot->slab[1];
  return NULL;
}

/* ---- bits and lists ----------------------------------------------------------------- */

static bool bit_get(const uint64_t *bits, unsigned i) {
  return (bits[i / 64] >> (i % 64)) & 1u;
}

static void bit_set(uint64_t *bits, unsigned i) {
  bits[i / 64] |= (uint64_t)1 << (i % 64);
}

static void bit_clear(uint64_t *bits, unsigned i) {
  bits[i / 64] &= ~((uint64_t)1 << (i % 64));
}

static pool_slab **list_of(plm_pool *pool, const pool_slab *slab) {
  return slab->owner ? &slab->owner->slabs.lists[slab->klass]
                     : &pool->small_slabs.orphans[slab->klass];
}

static unsigned free_slots(const pool_slab *slab) {
  return slab->slot_count - slab->used;
}

/* A slab is listed iff it has a free slot. */
static void relist(plm_pool *pool, pool_slab *slab) {
  bool wanted = free_slots(slab) > 0;
  if (wanted == slab->listed) return;
  pool_slab **list = list_of(pool, slab);
  if (wanted)
    DL_PREPEND(*list, slab);
  else
    DL_DELETE(*list, slab);
  slab->listed = wanted;
}

static void unlist(plm_pool *pool, pool_slab *slab) {
  if (slab->listed) DL_DELETE(*list_of(pool, slab), slab);
  slab->listed = false;
}

/* The owner's count of empty-slab bytes follows `used` crossing zero. */
static void note_empty(pool_slab *slab, bool empty) {
  if (!slab->owner) return;
  size_t bytes = slab->slot_bytes * slab->slot_count;
  if (empty)
    slab->owner->slabs.empty_bytes += bytes;
  else
    slab->owner->slabs.empty_bytes -= bytes;
}

/* ---- slabs come and go ---------------------------------------------------------------- */

bool plm__pool_slab_add(plm_pool *pool, pool_owner *owner, unsigned klass, pool_block *block) {
  pool_slab *slab = calloc(1, sizeof *slab);
  size_t slot_bytes = slot_bytes_of(pool, klass);
  unsigned count = pool->small_slabs.classes[klass].slot_count;
  PLM_ASSERT(block->size == slot_bytes * count && count <= POOL_SLAB_MAX_SLOTS);
  if (slab) slab->requested = calloc(count, sizeof *slab->requested);
  if (!slab || !slab->requested) {
    if (slab) free(slab->requested);
    free(slab);
    return false;
  }
  /* The block may have been freed on this stream a moment ago (a stream reuses its own
   * frees at once), with that work still running: the slab's memory is safe for others
   * only once the stream has passed its open epoch, as for a free made now. */
  *slab = (pool_slab){.base = block->addr,
                      .slot_bytes = slot_bytes,
                      .slot_count = count,
                      .klass = klass,
                      .block = block,
                      .owner = owner,
                      .epoch = owner->open_epoch,
                      .requested = slab->requested};
  if (!map_add(&pool->small_slabs.map, slab)) {
    free(slab->requested);
    free(slab);
    return false;
  }
  for (unsigned i = 0; i < count; i++) bit_set(slab->free_bits, i);
  DL_APPEND2(pool->small_slabs.all, slab, all_prev, all_next);
  pool->small_slabs.count++;
  pool->small_slabs.idle_slots[klass] += count;
  pool->small_slabs.idle_bytes += slot_bytes * count;
  note_empty(slab, true);
  relist(pool, slab);
  return true;
}

/* Give the slab's block back to the pool and free its header. The slab is empty; its
 * free slots are safe for its owner (the block goes back pending there) or, for an
 * orphan, for all. */
static void retire(plm_pool *pool, pool_slab *slab) {
  PLM_ASSERT(slab->used == 0);
  unlist(pool, slab);
  note_empty(slab, false);
  map_remove(&pool->small_slabs.map, slab);
  DL_DELETE2(pool->small_slabs.all, slab, all_prev, all_next);
  pool->small_slabs.count--;
  pool->small_slabs.idle_slots[slab->klass] -= slab->slot_count;
  pool->small_slabs.idle_bytes -= slab->slot_bytes * slab->slot_count;

  pool_block *block = slab->block;
  pool_live_remove(&pool->live, block->addr);
  pool_owner *owner = slab->owner;
  block->freed_on = owner ? owner->stream : slab->freed_on;
  if (!owner || slab->epoch <= owner->safe_epoch) {
    plm__pool_release_block_safe(pool, block);
  } else {
    /* Pending on the owner until it passes its last free into the slab. */
    block->owner = owner;
    block->epoch = slab->epoch;
    block->freed_at = plm__monotonic_seconds_coarse();
    block->state = BLOCK_FREE;
    owner->open_epoch_used = true;
    plm__pool_attach_free_block(pool, plm__pool_merge_neighbours(pool, block));
  }
  free(slab->requested);
  free(slab);
}

/* After a slot came free: keep an empty slab while its owner's empty ones stay within
 * POOL_SLAB_EMPTY_MAX_BYTES; an orphan's goes back at once. */
static void after_slot_free(plm_pool *pool, pool_slab *slab) {
  relist(pool, slab);
  if (slab->used != 0) return;
  note_empty(slab, true);
  if (!slab->owner || slab->owner->slabs.empty_bytes > POOL_SLAB_EMPTY_MAX_BYTES)
    retire(pool, slab);
}

void plm__pool_slabs_retire_empty(plm_pool *pool, const pool_owner *only) {
  pool_slab *slab, *next;
  DL_FOREACH_SAFE2(pool->small_slabs.all, slab, next, all_next) {
    if (slab->used == 0 && (!only || !slab->owner || slab->owner == only)) retire(pool, slab);
  }
}

void plm__pool_slabs_orphan(plm_pool *pool, pool_owner *owner) {
  PLM_ASSERT(owner->slabs.foreign.count == 0);
  pool_slab *slab, *next;
  DL_FOREACH_SAFE2(pool->small_slabs.all, slab, next, all_next) {
    if (slab->owner != owner) continue;
    if (slab->used == 0) note_empty(slab, false);
    unlist(pool, slab);
    slab->owner = NULL;
    slab->epoch = 0;
    if (slab->used == 0)
      retire(pool, slab);
    else
      relist(pool, slab);
  }
  PLM_ASSERT(owner->slabs.empty_bytes == 0);
}

/* An orphan's free slots are safe for all: the owner adopts it. */
static void adopt(plm_pool *pool, pool_slab *slab, pool_owner *owner) {
  unlist(pool, slab);
  slab->owner = owner;
  relist(pool, slab);
}

/* ---- slots ---------------------------------------------------------------------------- */

static unsigned first_free(const pool_slab *slab) {
  for (unsigned w = 0; w < POOL_SLAB_WORDS; w++)
    if (slab->free_bits[w]) return w * 64 + (unsigned)__builtin_ctzll(slab->free_bits[w]);
  PLM_ASSERT(!"a listed slab has a free slot");
  return 0;
}

void *plm__pool_slab_take(plm_pool *pool, pool_owner *owner, unsigned klass, size_t bytes,
                          bool hit) {
  pool_slab *slab = owner->slabs.lists[klass];
  if (!slab && pool->small_slabs.orphans[klass]) {
    slab = pool->small_slabs.orphans[klass];
    adopt(pool, slab, owner);
  }
  if (!slab) return NULL;
  unsigned slot = first_free(slab);
  bit_clear(slab->free_bits, slot);
  if (slab->used++ == 0) note_empty(slab, false);
  slab->requested[slot] = (uint32_t)bytes;
  relist(pool, slab);
  pool->small_slabs.idle_slots[klass]--;
  pool->small_slabs.idle_bytes -= slab->slot_bytes;
  pool_count_allocated(&pool->stats, slab->slot_bytes, bytes, false, hit);
  plm__pool_slab_count(pool, slab->slot_bytes, +1);
  const uintptr_t addr = slab->base + slot * slab->slot_bytes;
  plm__pool_poison_handout(pool, addr, slab->slot_bytes, bytes, owner->handle);
  return (void *)addr;
}

static bool queue_push(pool_slab_queue *queue, pool_slab_foreign_free item) {
  if (queue->count == queue->capacity) {
    size_t capacity = queue->capacity ? queue->capacity * 2 : 64;
    pool_slab_foreign_free *items = malloc(capacity * sizeof *items);
    if (!items) return false;
    for (size_t i = 0; i < queue->count; i++)
      items[i] = queue->items[(queue->head + i) % queue->capacity];
    free(queue->items);
    queue->items = items;
    queue->head = 0;
    queue->capacity = capacity;
  }
  queue->items[(queue->head + queue->count++) % queue->capacity] = item;
  return true;
}

plm_status plm__pool_slab_give(plm_pool *pool, pool_slab *slab, uintptr_t addr,
                               plm_stream *stream) {
  size_t offset = addr - slab->base;
  unsigned slot = (unsigned)(offset / slab->slot_bytes);
  if (offset % slab->slot_bytes != 0 || bit_get(slab->free_bits, slot) ||
      bit_get(slab->pending_bits, slot))
    return plm__fail_raw(PLM_ERR_NOT_FOUND,
                         "ptr %p is not a live block of this pool (never allocated, already "
                         "freed, or an interior pointer)",
                         (void *)addr);
  pool_owner *owner = plm__pool_owner_get(pool, stream);
  if (!owner) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a stream record");
  if (slab->owner && slab->owner != owner) {
    pool_slab_foreign_free item = {slab, slot, owner->open_epoch};
    if (!queue_push(&owner->slabs.foreign, item))
      return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory to record a free");
    owner->open_epoch_used = true;
    bit_set(slab->pending_bits, slot);
    slab->pending++;
  } else {
    if (!slab->owner) adopt(pool, slab, owner);
    bit_set(slab->free_bits, slot);
    slab->used--;
    slab->epoch = owner->open_epoch;
    owner->open_epoch_used = true;
  }
  pool_count_freed(&pool->stats, slab->slot_bytes, slab->requested[slot]);
  plm__pool_poison_freed(pool, addr, slab->slot_bytes, stream->handle);
  pool->small_slabs.idle_slots[slab->klass]++;
  pool->small_slabs.idle_bytes += slab->slot_bytes;
  plm__pool_slab_count(pool, slab->slot_bytes, -1);
  slab->freed_on = stream;
  slab->freed_at = plm__monotonic_seconds_coarse();
  if (!bit_get(slab->pending_bits, slot)) after_slot_free(pool, slab);
  return PLM_OK;
}

void plm__pool_slab_migrate(plm_pool *pool, pool_owner *owner, uint64_t upto) {
  pool_slab_queue *queue = &owner->slabs.foreign;
  while (queue->count > 0 && queue->items[queue->head].epoch <= upto) {
    pool_slab_foreign_free item = queue->items[queue->head];
    queue->head = (queue->head + 1) % queue->capacity;
    queue->count--;
    pool_slab *slab = item.slab;
    plm__pool_poison_now(pool, slab->base + item.slot * slab->slot_bytes, slab->slot_bytes);
    bit_clear(slab->pending_bits, item.slot);
    bit_set(slab->free_bits, item.slot);
    slab->pending--;
    slab->used--;
    after_slot_free(pool, slab);
  }
}

/* ---- the rest ------------------------------------------------------------------------- */

void plm__pool_owner_slabs_release(pool_owner_slabs *slabs) {
  free(slabs->foreign.items);
  slabs->foreign = (pool_slab_queue){0};
}

void plm__pool_slabs_destroy(pool_slabs *slabs) {
  pool_slab *slab, *next;
  DL_FOREACH_SAFE2(slabs->all, slab, next, all_next) {
    free(slab->requested);
    free(slab);
  }
  free(slabs->map.slots);
  slabs->map = (pool_slab_map){0};
  slabs->all = NULL;
}

size_t plm__pool_slab_largest_idle(const pool_slabs *slabs) {
  for (unsigned klass = POOL_SLAB_CLASSES; klass-- > 1;)
    if (slabs->idle_slots[klass]) return slabs->classes[klass].slot_bytes;
  return 0;
}

const pool_slab *plm__pool_slab_of_block(const plm_pool *pool, const pool_block *block) {
  if (block->state != BLOCK_USED) return NULL;
  const pool_slab *slab = plm__pool_slab_find(pool, block->addr);
  return slab && slab->block == block ? slab : NULL;
}

pool_slot_state plm__pool_slot_state(const pool_slab *slab, unsigned slot) {
  if (bit_get(slab->free_bits, slot)) return SLOT_FREE;
  if (bit_get(slab->pending_bits, slot)) return SLOT_PENDING;
  return SLOT_USED;
}

#ifndef NDEBUG
static unsigned popcount(const uint64_t *bits) {
  unsigned n = 0;
  for (unsigned w = 0; w < POOL_SLAB_WORDS; w++) n += (unsigned)__builtin_popcountll(bits[w]);
  return n;
}

void plm__pool_slabs_check(const plm_pool *pool) {
  const pool_slabs *slabs = &pool->small_slabs;
  size_t count = 0, idle[POOL_SLAB_CLASSES] = {0}, idle_bytes = 0;
  const pool_slab *slab;
  DL_FOREACH2(slabs->all, slab, all_next) {
    count++;
    PLM_ASSERT(slab->block->state == BLOCK_USED && slab->block->addr == slab->base);
    PLM_ASSERT(pool_live_find(&pool->live, slab->base) == slab->block);
    PLM_ASSERT(slab->block->size == slab->slot_bytes * slab->slot_count);
    PLM_ASSERT(plm__pool_slab_find(pool, slab->base) == slab);
    PLM_ASSERT(plm__pool_slab_find(pool, slab->base + slab->block->size - 1) == slab);
    unsigned free_count = popcount(slab->free_bits), pending = popcount(slab->pending_bits);
    PLM_ASSERT(free_count + slab->used == slab->slot_count && pending == slab->pending);
    for (unsigned w = 0; w < POOL_SLAB_WORDS; w++)
      PLM_ASSERT(!(slab->free_bits[w] & slab->pending_bits[w]));
    PLM_ASSERT(slab->listed == (free_count > 0));
    PLM_ASSERT(!slab->owner || slab->used > 0 ||
               slab->owner->slabs.empty_bytes >= slab->block->size);
    idle[slab->klass] += free_count + pending;
    idle_bytes += (free_count + pending) * slab->slot_bytes;
  }
  PLM_ASSERT(count == slabs->count && idle_bytes == slabs->idle_bytes);
  for (unsigned klass = 0; klass < POOL_SLAB_CLASSES; klass++)
    PLM_ASSERT(idle[klass] == slabs->idle_slots[klass]);
}
#else
void plm__pool_slabs_check(const plm_pool *pool) {
  (void)pool;
}
#endif

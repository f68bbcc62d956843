/* pool/pool_slabs.h: small blocks carved from slabs (internal).
 *
 * Why. A pool block has a 112-byte host descriptor and an entry in the live table.
 * With tens of thousands of small blocks live, a free read a table slot and a
 * descriptor that were both out of cache (bench_pool's random_allocations at 4 KiB,
 * n 100,000: about 400 ns a pair against jemalloc's 60), and small blocks cut from
 * the free runs between larger ones kept those runs from merging (the fragmentation
 * workload reserved 1.6x what it used). jemalloc's answer is the slab: one region per
 * size class, cut into equal slots, its occupancy a bitmap in a small header.
 *
 * What. Requests up to POOL_SLAB_MAX_BYTES (16 KiB) may be served from slabs. A slab is
 * one ordinary pool block (USED, in the live table, taken and given back through the
 * usual paths) of slot_count slots of one small class's size; slot_count is the
 * fewest slots that pass 64 KiB, so a slab is never a small block itself (it merges
 * when it goes back) and has no unused tail. Its header, host side, holds a bitmap of
 * free slots, one of slots pending a free on another stream (below), and the bytes
 * asked for per slot (for bytes_requested).
 *
 * When. Slabs pay once many blocks of a class are live: then a descriptor per block
 * no longer stays in cache. For a handful (a pipeline's frame buffers, a thread's last
 * few blocks) they cost memory instead: a slab per class in use, mostly empty, where the
 * cached small blocks (pool_internal.h) serve at about 100 ns from what is in cache
 * anyway. So a class turns slabs on when a quarter of a slab's worth of its blocks
 * (slot_count / 4, at least 4) are live, slots or not, and off again below a quarter of
 * that (measured on bench_pool: a whole slab's worth left 4 KiB requests at 1.6x
 * jemalloc's time with 460 blocks live; always on, a thread's last 16 blocks of sizes
 * to 64 KiB took a slab each and the pool a second chunk); slots already handed out
 * stay in their slabs until freed, and a free finds either kind. PLM_POOL_NO_SLABS
 * keeps them off (for A/B measurements).
 *
 * Lookup. A free finds its slab in the slab map: open addressing keyed by 64 KiB page
 * number, each page naming the (at most two: a slab spans more than a page) slabs
 * that overlap it. The map and the headers are a few bytes per 64 KiB of slabs, so a
 * free stays in cache whatever the number of live slots, and touches no per-block
 * descriptor. A pointer that no slab holds goes on to the live table.
 *
 * Streams. A slab belongs to the stream that took it (its `owner`): its free slots are
 * safe for that stream's later work, and only that stream allocates from it. A slot
 * freed on the owner becomes free at once. A slot freed on another stream T is
 * pending: it joins T's queue of foreign frees, tagged with T's open epoch, and
 * becomes free when the pool learns that T passed that epoch (plm__pool_migrate), as a
 * pending block would. When a stream is destroyed (its work done), its slabs become
 * orphans, whose free slots are safe for all: the next stream that allocates from one
 * of their class, or frees into one, adopts it.
 *
 * Memory. A slab that empties stays with its owner, as long as the owner's empty slabs
 * total at most POOL_SLAB_EMPTY_MAX_BYTES (256 KiB), so that a class freed and taken
 * again does not take and give back a slab each time; beyond that it goes back to the
 * pool: safe for all when the owner has passed its last free into the slab (the slab's
 * `epoch`), else pending on the owner until it has. plm_pool_trim gives every empty
 * slab back, and the out-of-memory ladder the requester's and the orphans'.
 * Free slots count in the pool's free bytes (and a snapshot shows each slot).
 *
 * Every function here is called with the pool's `lock` held and makes no backend call.
 */
#ifndef PLUME_POOL_SLABS_H
#define PLUME_POOL_SLABS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/pool.h"
#include "pool/pool_block.h"
#include "pool/pool_index.h"

enum {
  POOL_SLAB_MAX_GRANULES = 64,                         /* 16 KiB */
  POOL_SLAB_CLASSES = 49,                              /* pool_class_of(64) + 1 */
  POOL_SLAB_PAGE_SHIFT = 16,                           /* the map's pages: 64 KiB */
  POOL_SLAB_MAX_SLOTS = (1 << POOL_SLAB_PAGE_SHIFT) / POOL_GRANULE + 1, /* 257 */
  POOL_SLAB_WORDS = (POOL_SLAB_MAX_SLOTS + 63) / 64
};

static const size_t POOL_SLAB_MAX_BYTES = (size_t)POOL_SLAB_MAX_GRANULES * POOL_GRANULE;
static const size_t POOL_SLAB_EMPTY_MAX_BYTES = (size_t)256 << 10;

typedef struct pool_slab pool_slab;
struct pool_slab {
  uintptr_t base;     /* = block->addr */
  size_t slot_bytes;  /* the class's size */
  unsigned slot_count;
  unsigned used;      /* slots handed out, or pending a foreign free */
  unsigned pending;   /* of `used`, those pending */
  unsigned klass;     /* the pool class of slot_bytes (< POOL_SLAB_CLASSES) */
  bool listed;        /* in its owner's (or the orphans') list of its class */
  pool_block *block;  /* the pool block under it (USED) */
  pool_owner *owner;  /* NULL: an orphan */
  uint64_t epoch;     /* the owner's open epoch when the slab was made or at its last
                         free into it: once the owner has passed it, every free slot
                         is safe for all (an orphan's: 0) */
  pool_slab *prev, *next;         /* the class list */
  pool_slab *all_prev, *all_next; /* every slab of the pool */
  const plm_stream *freed_on;     /* the stream of the last free (snapshots) */
  double freed_at;                /* monotonic seconds of the last free; 0: never */
  uint32_t *requested;            /* bytes asked for, per slot */
  uint64_t free_bits[POOL_SLAB_WORDS];
  uint64_t pending_bits[POOL_SLAB_WORDS];
};

/* One page of the slab map: the slabs overlapping it. */
typedef struct pool_slab_map_slot {
  uintptr_t page; /* address >> POOL_SLAB_PAGE_SHIFT; meaningful when slab[0] or [1] */
  pool_slab *slab[2];
} pool_slab_map_slot;

typedef struct pool_slab_map {
  pool_slab_map_slot *slots; /* NULL until the first slab */
  size_t mask;
  unsigned shift;
  size_t count; /* pages in the map */
} pool_slab_map;

/* A slot freed on a stream other than its slab's owner, waiting for that stream. */
typedef struct pool_slab_foreign_free {
  pool_slab *slab;
  unsigned slot;
  uint64_t epoch;
} pool_slab_foreign_free;

/* A stream's foreign frees, oldest first (a ring). */
typedef struct pool_slab_queue {
  pool_slab_foreign_free *items;
  size_t head, count, capacity;
} pool_slab_queue;

/* What an owner (pool_internal.h) keeps of slabs. */
typedef struct pool_owner_slabs {
  pool_slab *lists[POOL_SLAB_CLASSES]; /* its slabs with a free slot */
  pool_slab_queue foreign;             /* slots it freed in other streams' slabs */
  size_t empty_bytes;                  /* the bytes of its empty slabs */
} pool_owner_slabs;

/* A class's slabs: the size of a slot, the slots of a slab, and the blocks live at which
 * the class turns slabs on (pool_slabs.c). */
typedef struct pool_slab_class {
  size_t slot_bytes;
  unsigned slot_count;
  unsigned on_at;
} pool_slab_class;

/* What a pool keeps of slabs. */
typedef struct pool_slabs {
  pool_slab_class classes[POOL_SLAB_CLASSES]; /* index 0 unused */
  size_t live[POOL_SLAB_CLASSES]; /* live blocks of each class, slots or not */
  bool on[POOL_SLAB_CLASSES];     /* the class is served from slabs */
  pool_slab_map map;
  pool_slab *all;                        /* every slab */
  pool_slab *orphans[POOL_SLAB_CLASSES]; /* orphans with a free slot */
  size_t count;
  size_t idle_slots[POOL_SLAB_CLASSES]; /* free or pending slots, per class */
  size_t idle_bytes;                    /* their bytes */
} pool_slabs;

/* Fill in the classes of a new pool's slabs (its pool_slabs zeroed). */
void plm__pool_slabs_init(pool_slabs *slabs);
/* Whether a small request of class `klass` is served from a slab now. */
bool plm__pool_slab_serves(const plm_pool *pool, unsigned klass);
/* A block of `size` bytes (a multiple of POOL_GRANULE) of a small class up to 16 KiB
 * comes (+1) or goes (-1), slot or not: the class turns slabs on or off. */
void plm__pool_slab_count(plm_pool *pool, size_t size, int change);
/* The bytes of a slab of `klass`. */
size_t plm__pool_slab_bytes(const plm_pool *pool, unsigned klass);

/* A slot of `klass` from the owner's slabs (or an orphan it adopts), `bytes` asked
 * for; counted in the statistics (`hit`: no memory was reserved for it). NULL when no
 * slab has a free slot. */
void *plm__pool_slab_take(plm_pool *pool, pool_owner *owner, unsigned klass, size_t bytes,
                          bool hit);
/* Make a slab of `klass` out of `block` (USED, in the live table, of
 * plm__pool_slab_bytes(klass)) for the owner. False (nothing changed) when host
 * memory runs out. */
bool plm__pool_slab_add(plm_pool *pool, pool_owner *owner, unsigned klass, pool_block *block);
/* The slab holding `addr`, or NULL. */
pool_slab *plm__pool_slab_find(const plm_pool *pool, uintptr_t addr);
/* Free the slot at `addr` of `slab` on `stream`: PLM_ERR_NOT_FOUND (message set) when
 * addr is not a slot's start or the slot is not handed out. */
plm_status plm__pool_slab_give(plm_pool *pool, pool_slab *slab, uintptr_t addr,
                               plm_stream *stream);

/* The owner's foreign frees with an epoch up to `upto` become free slots. */
void plm__pool_slab_migrate(plm_pool *pool, pool_owner *owner, uint64_t upto);
/* The owner's stream is gone (its work complete, its foreign frees migrated): its
 * slabs become orphans, and its empty ones go back. */
void plm__pool_slabs_orphan(plm_pool *pool, pool_owner *owner);
/* Give back every empty slab of `only` and every empty orphan (only NULL: every
 * empty slab). */
void plm__pool_slabs_retire_empty(plm_pool *pool, const pool_owner *only);
/* Free the owner's slab records (the owner is being freed). */
void plm__pool_owner_slabs_release(pool_owner_slabs *slabs);
/* Free every slab header and the map (the pool is being destroyed). */
void plm__pool_slabs_destroy(pool_slabs *slabs);

/* The largest class with a free or pending slot (0 when none). */
size_t plm__pool_slab_largest_idle(const pool_slabs *slabs);

/* Snapshots: the slab whose block this is (NULL: not a slab), and one slot's state. */
const pool_slab *plm__pool_slab_of_block(const plm_pool *pool, const pool_block *block);
typedef enum pool_slot_state { SLOT_USED, SLOT_FREE, SLOT_PENDING } pool_slot_state;
pool_slot_state plm__pool_slot_state(const pool_slab *slab, unsigned slot);

/* Debug builds: assert the slabs' invariants (pool_internal.h). */
void plm__pool_slabs_check(const plm_pool *pool);

#endif /* PLUME_POOL_SLABS_H */

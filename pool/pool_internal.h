/* pool/pool_internal.h: the device pool's design (internal): the pooled resource
 * (pool/pool_pooled.c), behind the contract of plume/pool.h; the other modes are
 * resources too (pool/pool_resource.h).
 *
 * In short: memory is reserved from upstream in chunks; small requests (up to 64 KiB)
 * are served from exact size classes, and those up to 16 KiB, once many blocks of their
 * class are live, as slots of slabs; medium ones by a two-level segregated fit (TLSF)
 * with splitting and immediate coalescing; requests at or above huge_bytes get a chunk
 * of their own. All streams share one free structure; a block freed on stream S is
 * first usable by S only, and becomes usable by all once the pool learns (from an
 * event it records lazily, off the fast path) that S has passed the free. The
 * paragraphs below take each part in turn.
 *
 * Memory. The pool reserves chunks from upstream (the backend's mem_alloc, or the
 * user's plm_pool_upstream: plm__pool_reserve / plm__pool_unreserve choose) and
 * cuts them into 256-byte-aligned blocks described in host memory (pool_block.h).
 * Requests up to 64 KiB are small: they are served at the exact size of their
 * class and, when freed, cached in that class without merging (a list push and a
 * pop: the hot path), as long as the index they go to (the freeing stream's, or
 * the global one) caches at most POOL_CACHE_MAX_BYTES (512 KiB); a small block
 * freed beyond that merges with its free neighbours like a larger one. Without
 * that cap every class kept what it had ever held: a stream cycling through the
 * 81 small classes kept about 1.5 MiB per stream cached that no other class could
 * use (bench_pool's threads workload reserved 7.5x what it used). Larger requests
 * take a good fit from the TLSF lists (pool_index.h), split off the rest, and
 * merge with free neighbours when freed. A small request served from a larger
 * free block takes that block's tail, a larger request its front: tiny blocks
 * gather at the ends of free runs instead of cutting a granule off the front of a
 * run that a large request would have fitted exactly. Requests of at least
 * huge_bytes get a chunk of their own. Requests up to 16 KiB of a class with many
 * blocks live are slots of slabs instead (pool_slabs.h): a slab is one USED block of
 * the above, cut into equal slots, with a host-side bitmap, so that a free touches no
 * per-block descriptor.
 *
 * Growth (pool_chunk_size). When nothing free fits, the pool reserves one
 * chunk of max(the request rounded up to POOL_CHUNK_GRANULE (2 MiB, not to a power
 * of two), min_chunk_bytes (2 MiB), and, with PLM_POOL_GROW_PROPORTIONAL, an
 * eighth of what is reserved rounded down to 2 MiB, that step at most
 * POOL_GROWTH_CAP (64 MiB)). So the pool starts at 2 MiB, grows geometrically by
 * 12.5% a step once past 16 MiB (few upstream calls: 97 chunks reach 4 GiB), and
 * never reserves more than 64 MiB beyond a request: the overshoot of the last chunk
 * is at most an eighth of what is reserved, and 64 MiB once that is 512 MiB or more
 * (it was a quarter of what is reserved, uncapped: 1 GiB at 4 GiB).
 *
 * Fragmentation bound. What is reserved beyond what is in use is (a) the unused
 * tail of the last chunk (above), (b) cached small blocks, at most
 * POOL_CACHE_MAX_BYTES per index, and (c) holes between live blocks that no
 * request fits. (a) and (b) are bounded by this policy; (c) depends on the order of
 * frees and sizes: the TLSF good fit, immediate merging and the tail placement of
 * small blocks keep it small, and where the backend can, the pages under the holes
 * go back (below), so that a hole costs at most the parts of two pages at its ends.
 *
 * Giving memory back (pool_pages.c). A chunk returns upstream only when it is idle
 * (every block FREE and safe for all, or RELEASED): plm_pool_trim makes every pending
 * block safe (it waits for the streams), returns cached small blocks to the merging
 * lists so that they coalesce, and gives back idle chunks; the slow path does the
 * same beyond release_threshold. A chunk with one live block stays, but its free
 * runs need not hold memory: where the backend has mem_decommit (the host backend:
 * madvise; cuda: the driver's virtual memory calls, below), the whole pages (page_bytes:
 * 16 KiB by default on the host, 2 MiB on cuda) inside a FREE, safe-for-all block are
 * given back and the block's middle becomes RELEASED (its
 * addresses kept, its memory
 * not counted in bytes_reserved). The slow path does that before it grows, to the
 * largest holes first, until the chunk it is about to reserve would leave at most an
 * eighth of what is in use (and 2 MiB) reserved beyond use; plm_pool_trim does it
 * down to keep_bytes. Before growing, the slow path first recommits released pages
 * where they, with the free blocks beside them, hold the request (the fewer pages of
 * two candidates found by size in the released index: the smallest released run that
 * can hold it with a page of free memory on each side, and one of the largest (the
 * head of the highest class, within a sixteenth of the largest); a scan of
 * every released run cost a quarter of the fragmentation workload's time once pages
 * were 16 KiB), so the addresses are reused before new ones are reserved. Page
 * boundaries count from the chunk's base. PLM_POOL_KEEP_PAGES turns this off, and so
 * does a user upstream: its pages are not the backend's to decommit.
 *
 * On cuda a chunk (any mem_alloc of at least 2 MiB) is an address range reserved with
 * cuMemAddressReserve and filled with physical allocations of the driver's granularity
 * (2 MiB), each mapped at its place (cuMemCreate, cuMemMap, cuMemSetAccess), as PyTorch's
 * expandable segments are (streams/cuda_vmm.h): mem_decommit unmaps and releases the
 * granules inside a range (cuMemUnmap, cuMemRelease), mem_recommit creates and maps new
 * ones. The pool decommits only safe-for-all free blocks, whose frees have completed,
 * so nothing waits for the device there. Where the driver's calls are missing the
 * backend has no mem_decommit, and the pool keeps its pages as before (the device info's
 * page_release_bytes is then 0). cudaMemPool-style release (cudaMemPoolTrimTo) would not
 * help: it returns only memory wholly unused, which release_idle_chunks already does.
 *
 * Lookup. A free finds its block's descriptor in the live table (pool_live.h):
 * open addressing over 16-byte slots holding the address and the descriptor, so
 * that a find reads one slot line and then the descriptor it needs anyway. It
 * replaced uthash, whose buckets, per-descriptor handles and insertion-order list
 * cost several misses per free once 46,000 blocks were live (an alloc+free pair
 * 2.2 to 2.6 times jemalloc's); a page map per chunk was tried and measured slower
 * (pool_live.h says why). It costs 32 to 128 bytes per live block, not per byte
 * reserved: 8 to 32 MiB per GiB reserved in 4 KiB blocks, 32 to 128 KiB per GiB
 * in 1 MiB blocks.
 *
 * Streams. All streams share one global index of blocks safe for anyone. A block
 * freed on stream S is not safe for another stream until S has executed past the
 * free, so it goes into S's own index (pool_owner.pending) instead, tagged with
 * S's current epoch, and is appended to S's epoch queue. Later work on S may take
 * it at once. An allocation searches its own stream's index and the global one.
 * When S also allocates, the freed block absorbs its global free neighbours (S may
 * use them at once), so that a hole is not split in two between S's index and the
 * global one until S's epoch completes; a stream that only frees leaves them
 * global, where the streams that allocate can take them (see can_merge).
 *
 * Epochs. To learn that S has passed its frees without a backend call on the fast
 * path, the slow path closes S's open epoch by recording an event on S (taken from
 * a cache of events) and opens the next one. When a later slow path finds that
 * event complete, every block of S with an epoch up to it moves to the global
 * index (merging with global neighbours): opportunistic reuse. A block whose epoch
 * is closed but not yet complete can still be given to another stream T at once
 * by enqueueing "T waits for the event" (unless PLM_POOL_NO_STREAM_WAITS).
 *
 * A stream that is being captured into a graph (by another thread, or by another
 * library on a wrapped stream) is left alone: querying it would fail and break the
 * capture, and an event recorded on it would be a node of the graph, complete only once
 * the graph is launched (and refused by cudaEventQuery). Its open epoch stays open, its
 * frees pending, until a slow path after the capture closes it; its older marks, recorded
 * before the capture, are polled as usual. (The backend answers stream_capturing before
 * the pool's query; a capture that begins on another thread in between is not seen.)
 *
 * The out-of-memory ladder (alloc_slow, pool_pooled.c). When the free blocks cannot
 * serve a request, the slow path, in this order: reuses frees whose work has completed
 * (learning it from an event, or from the freeing stream being idle); makes the stream
 * wait on the device for a pending free of another stream (unless
 * PLM_POOL_NO_STREAM_WAITS); gives idle chunks back upstream beyond the release
 * threshold, takes released pages again, or grows. When growing fails (the byte limit,
 * or upstream out of memory), it gives back every empty slab and coalesces cached small
 * blocks, gives every idle chunk and free page back and tries to grow again, blocks the
 * host on the specific pending frees that would satisfy the request, and only then
 * fails with PLM_ERR_OUT_OF_MEMORY and its diagnostic (pool_stats.c). It makes up to
 * four such rounds: a wait can free what another round then uses.
 *
 * Locks. `lock` guards all pool state and is held only for list and table updates
 * (no backend call, no blocking). `slow_lock` serialises the slow path, trimming,
 * destruction and the stream-destroyed hook; it is taken before `lock`, and the
 * backend calls of the slow path (event record/query, stream waits, mem_alloc,
 * mem_free) are made with only `slow_lock` held. Events and owners are recycled or
 * freed only under `slow_lock`, so the slow path may use them while `lock` is
 * released.
 *
 * Sanitized builds (pool_poison.h): every byte of a chunk that is not handed out, and
 * each block's slack, is poisoned for AddressSanitizer, in stream order, so that a read
 * one past a pooled block or of a block after its free is reported.
 *
 * Files: pool_index.c (the TLSF index), pool_live.c (the live table), pool_slabs.c (slabs of
 * small slots), pool_poison.c (poisoning free memory), pool_blocks.c (descriptors,
 * owners, epoch queues, moving blocks between states), pool_pages.c (giving the memory under
 * free pages back and taking it again), pool_epochs.c (closing, marking and polling
 * epochs, and what completes becoming safe for all; reuse behind waits), pool_upstream.c
 * (memory from the user's upstream or the backend), pool_limit.h (the byte limit, around
 * every upstream take), pool_counts.h (the counters behind the statistics), pool_stats.c
 * (plm_pool_stats_get, the out-of-memory message), pool_pooled.c (the pooled resource: the
 * fast path, chunks, the out-of-memory ladder, trimming), pool_passthrough.c (the
 * passthrough and cuda_async resources), pool_api.c (creation, destruction and the public
 * functions, through the resource table of pool_resource.h). Calls run one way: pool_api.c
 * calls the resources through their table, the resources call the helpers, and no helper
 * calls into pool_api.c or a resource by name (plm_pool_stats_get asks the resource's
 * `reserved` through the table).
 *
 * Invariants (checked by PLM_ASSERT in debug builds, after every slow path):
 *   - the blocks of a chunk tile it exactly, in address order;
 *   - every index (global, and each stream's pending one) caches at most
 *     POOL_CACHE_MAX_BYTES of small blocks;
 *   - no two adjacent FREE blocks have the same owner (they would have merged);
 *   - a block is in the live table iff it is USED;
 *   - a RELEASED block is safe for all, starts and ends on page boundaries of its
 *     chunk, has no RELEASED neighbour (they would have merged), and is in the
 *     `released` index; each chunk's `released` and the pool's bytes_released count
 *     them, and bytes_reserved is what the chunks hold less that;
 *   - every pending block (owner != NULL) is in its owner's epoch queue, whose
 *     epochs never decrease from head to tail;
 *   - every slab's block is USED and in the live table, and the slab map finds the
 *     slab at both its ends; its free and pending bitmaps are disjoint and count
 *     what `used` does not; it is listed iff it has a free slot; the pool's counts of
 *     idle slots per class add up (plm__pool_slabs_check).
 */
#ifndef PLUME_POOL_INTERNAL_H
#define PLUME_POOL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "plume/pool.h"
#include "pool/pool_block.h"
#include "pool/pool_counts.h"
#include "pool/pool_index.h"
#include "pool/pool_limit.h"
#include "pool/pool_live.h"
#include "pool/pool_poison.h"
#include "pool/pool_slabs.h"
#include "streams/hash.h"
#include "streams/runtime.h"

enum { POOL_EPOCH_RING = 8 };

/* A closed epoch of one stream: the event recorded after its frees. */
typedef struct epoch_mark {
  uint64_t epoch;
  void *event;   /* backend event handle */
  bool complete; /* known complete */
} epoch_mark;

/* What the pool knows of one stream it has seen. */
struct pool_owner {
  const plm_stream *stream; /* key */
  void *handle;             /* the backend stream */
  pool_index pending;       /* blocks freed on this stream, not yet safe for all */
  pool_block *queue_head, *queue_tail;
  uint64_t open_epoch;  /* frees now are tagged with this */
  uint64_t safe_epoch;  /* every free tagged up to this is known complete */
  bool open_epoch_used; /* some block carries open_epoch */
  bool allocates;       /* an allocation was made on this stream (see can_merge) */
  epoch_mark marks[POOL_EPOCH_RING];
  unsigned mark_first, mark_count;
  pool_owner_slabs slabs; /* its slabs, and the slots it freed in others' (pool_slabs.h) */
  UT_hash_handle hh;
};

/* A batch of block descriptors (not a pool_slab). */
typedef struct descriptor_slab {
  struct descriptor_slab *next;
  pool_block blocks[256];
} descriptor_slab;

struct plm_pool {
  plm__attachment attachment; /* first: the context destroys pools through it */
  plm_context *ctx;
  const struct pool_resource *resource; /* the mode's (pool/pool_resource.h) */
  const plm__backend_iface *backend;
  void *backend_ctx;
  plm_pool_config config;
  bool is_default;
  void *async_pool;           /* CUDA_ASYNC: the backend's pool, or the adopted one */
  bool async_pool_adopted;    /* async_pool is config.cuda_mem_pool: never destroyed */
  plm_pool_upstream upstream; /* config.upstream's copy (config.upstream points here);
                                 alloc NULL: the backend */
  size_t page_bytes;          /* the unit of memory given back (config.page_bytes) */

  pthread_mutex_t slow_lock;
  pthread_mutex_t lock;
  pool_index global;
  pool_owner *owners;     /* hash by stream */
  pool_owner *last_owner; /* the owner found last: most calls repeat a stream */
  pool_live live;         /* the USED blocks by address (every mode) */
  pool_index released;    /* the RELEASED blocks, by size (free_prev/free_next) */
  pool_chunk *chunks;
  pool_slabs small_slabs; /* requests up to 16 KiB (pool_slabs.h) */
  pool_block *spare_descriptors;
  descriptor_slab *descriptor_slabs;
  void **spare_events;
  size_t spare_event_count, spare_event_capacity;
  pool_poison poison; /* sanitized builds: free memory poisoned (pool_poison.h) */
  pool_limit limit;   /* config.byte_limit, around every upstream take (pool_limit.h) */
  plm_pool_stats stats;
};

static const size_t POOL_SMALL_MAX_BYTES = (size_t)POOL_SMALL_MAX_GRANULES * POOL_GRANULE;
/* The most bytes one index (a stream's pending one, or the global one) keeps cached. */
static const size_t POOL_CACHE_MAX_BYTES = (size_t)512 << 10;

static inline size_t pool_round_up(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/* The growth policy (the design comment above): chunks are multiples of
 * POOL_CHUNK_GRANULE, and a proportional step adds reserved / POOL_GROWTH_DIVISOR,
 * at most POOL_GROWTH_CAP. */
static const size_t POOL_CHUNK_GRANULE = (size_t)2 << 20;
/* The default unit of memory given back under free blocks (plm_pool_config.page_bytes),
 * and the largest. */
static const size_t POOL_PAGE_DEFAULT = (size_t)16 << 10;
static const size_t POOL_PAGE_MAX = (size_t)2 << 20;
static const size_t POOL_GROWTH_DIVISOR = 8;
static const size_t POOL_GROWTH_CAP = (size_t)64 << 20;

/* The size of the chunk the pool reserves for a request of `need` bytes (a multiple
 * of POOL_GRANULE) while `reserved` bytes are reserved; the byte limit aside. */
static inline size_t pool_chunk_size(const plm_pool_config *config, size_t need, size_t reserved) {
  if (need >= config->huge_bytes) return need;
  size_t bytes = pool_round_up(need, POOL_CHUNK_GRANULE);
  if (bytes < config->min_chunk_bytes) bytes = config->min_chunk_bytes;
  if (config->growth == PLM_POOL_GROW_PROPORTIONAL) {
    size_t step = reserved / POOL_GROWTH_DIVISOR;
    if (step > POOL_GROWTH_CAP) step = POOL_GROWTH_CAP;
    step = step / POOL_CHUNK_GRANULE * POOL_CHUNK_GRANULE;
    if (bytes < step) bytes = step;
  }
  return bytes;
}

/* The size a request is served at, and whether it is small (and its class). */
typedef struct request {
  size_t bytes; /* asked for */
  size_t size;  /* served: a multiple of POOL_GRANULE */
  bool small;
  unsigned klass; /* small only */
  bool slab;      /* the block of a new slab of class klass: not counted as handed out */
} request;

/* pool/pool_blocks.c: block bookkeeping; `lock` held. */
pool_block *plm__pool_descriptor_new(plm_pool *pool);
void plm__pool_descriptor_release(plm_pool *pool, pool_block *block);
pool_owner *plm__pool_owner_find(plm_pool *pool, const plm_stream *stream);
pool_owner *plm__pool_owner_get(plm_pool *pool, plm_stream *stream);
/* Forget an owner (its slab records released first: plm__pool_owner_slabs_release). */
void plm__pool_owner_remove(plm_pool *pool, pool_owner *owner);
void plm__pool_detach_free_block(plm_pool *pool, pool_block *block);
void plm__pool_attach_free_block(plm_pool *pool, pool_block *block);
void plm__pool_absorb_next(plm_pool *pool, pool_block *block, pool_block *next);
pool_block *plm__pool_merge_neighbours(plm_pool *pool, pool_block *block);
pool_block *plm__pool_take_block(plm_pool *pool, pool_block *block, size_t size);
bool plm__pool_may_cache(const pool_index *index, const pool_block *block);
void plm__pool_release_block(plm_pool *pool, pool_block *block, pool_owner *owner);
void plm__pool_release_block_safe(plm_pool *pool, pool_block *block);
void plm__pool_migrate_blocks(plm_pool *pool, pool_owner *owner, uint64_t upto);
void plm__pool_uncache_index(plm_pool *pool, pool_index *index);

/* pool/pool_pages.c: the memory under free pages given back and taken again;
 * `slow_lock` held, `lock` not held (they take it, and call the backend without it). */
bool plm__pool_pages_enabled(const plm_pool *pool);
size_t plm__pool_decommit(plm_pool *pool, size_t goal_bytes);
void plm__pool_decommit_before_growth(plm_pool *pool, size_t need);
bool plm__pool_recommit_for(plm_pool *pool, size_t need);

/* pool/pool_epochs.c: epochs and marks; `slow_lock` held, `lock` not held (except
 * migrate and find_covered_pending: `lock` held). */
pool_owner **plm__pool_snapshot_owners(plm_pool *pool, size_t *count);
/* Every pending slot and block of `owner` with an epoch up to `upto` becomes safe for all
 * (its epochs up to `upto` are known complete). `lock` held. */
void plm__pool_migrate(plm_pool *pool, pool_owner *owner, uint64_t upto);
void plm__pool_drop_marks(plm_pool *pool, pool_owner *owner);
void plm__pool_close_epochs(plm_pool *pool, pool_owner **owners, size_t count);
void plm__pool_poll_epochs(plm_pool *pool, pool_owner **owners, size_t count);
pool_block *plm__pool_find_covered_pending(plm_pool *pool, pool_owner *owner, const request *r,
                                           bool extend, void **event);

/* pool/pool_stats.c: the out-of-memory message; `lock` not held. */
void plm__pool_format_failure(plm_pool *pool, const request *r);

/* pool/pool_upstream.c: memory from upstream (the user's plm_pool_upstream, else the
 * backend's mem_alloc / mem_free), `lock` not held; `stream` is the backend handle of
 * a passthrough block's stream, NULL for chunks. A failure has its message set. */
plm_status plm__pool_reserve(plm_pool *pool, size_t bytes, void *stream, void **ptr);
void plm__pool_unreserve(plm_pool *pool, void *ptr, size_t bytes, void *stream);
/* The largest alloc the user upstream refused for lack of memory on this thread since
 * the last call with clear (0: none), for the out-of-memory message. */
size_t plm__pool_upstream_refused(bool clear);

#endif /* PLUME_POOL_INTERNAL_H */

/* plume/pool.h: the stream-ordered device memory pool and the pinned host pool.
 *
 * Device pool. The same contract as cudaMallocAsync:
 *   - plm_pool_alloc(pool, bytes, stream, &ptr): the block may be used by work
 *     enqueued on `stream` after the call (and by other streams once they are
 *     ordered after it with an event);
 *   - plm_pool_free(pool, ptr, stream): work enqueued on `stream` before the call
 *     may still use the block; the pool hands it out again only when that is safe:
 *     at once to later work on the same stream; to another stream once the free's
 *     work has completed (opportunistic reuse) or, if the pool may insert stream
 *     waits, by making that stream wait for it on the device.
 * The host never blocks in these calls, with two exceptions on the slow path: as
 * the last step before reporting out-of-memory, and when the pool gives idle chunks
 * back upstream (beyond release_threshold, or to make room under byte_limit),
 * since cudaFree synchronises the device. Blocks are 256-byte aligned. Both calls are thread-safe,
 * make no backend (CUDA) call on their fast path, and take O(1) time however many blocks are live
 * or free. (Builds with AddressSanitizer are the exception: there the pool poisons what is
 * not handed out, each block's bytes past the request included, in stream order, with a
 * host function enqueued per free and per handout with slack: a read past a pooled block
 * or after its free is reported as it is for malloc's.)
 *
 * Modes, for A/B measurements:
 *   PLM_POOL_POOLED       plume's pool: chunks reserved from upstream, cut into blocks
 *                         and reused in stream order;
 *   PLM_POOL_PASSTHROUGH  upstream on every call: cudaMalloc/cudaFree, or aligned
 *                         malloc/free on the host backend (free blocks the host
 *                         until the device is done with the block, as cudaFree);
 *   PLM_POOL_CUDA_ASYNC   cudaMallocAsync/cudaFreeAsync on a cudaMemPool whose
 *                         release threshold is UINT64_MAX (cuda backend only).
 *
 * Out of memory is a status, never an abort: an allocation fails with
 * PLM_ERR_OUT_OF_MEMORY only once the pool has reused what it safely can, given back
 * what is idle and waited for the pending frees that would satisfy the request, and the
 * message states the request, bytes in use, reserved (and the byte limit), the largest
 * free block and the fragmentation. A backend failure on the way is returned as such,
 * with its message. The pool stays usable after a failure.
 *
 * Memory goes back upstream on plm_pool_trim, beyond release_threshold, and, where the
 * backend can give back part of a chunk (plm_device_info.page_release_bytes), as the
 * pages (page_bytes) wholly inside free runs: bytes_reserved counts the memory held,
 * bytes_released the addresses kept without it.
 *
 * Stream waits: when one stream frees what another allocates and the host runs ahead
 * of the device, the allocating stream by default waits for those frees on the device
 * (as cudaMallocAsync does with internal dependencies allowed), so memory stays
 * bounded. With PLM_POOL_NO_STREAM_WAITS the pool grows instead, up to byte_limit, and
 * then blocks the host: set a byte_limit with that flag.
 *
 * docs/memory.md is the guide; how the pooled mode works is in pool/pool_internal.h.
 */
#ifndef PLUME_POOL_H
#define PLUME_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plume/context.h"
#include "plume/export.h"
#include "plume/pool_config.h"
#include "plume/status.h"
#include "plume/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct plm_pool plm_pool;

/* In CUDA_ASYNC mode bytes_reserved and its peak are what cudaMallocAsync's pool
 * holds (cudaMemPoolAttrReservedMemCurrent / High); upstream counts are calls. */
typedef struct plm_pool_stats {
  uint64_t requests;        /* plm_pool_alloc calls that succeeded */
  uint64_t hits;            /* of those, served without reserving memory */
  uint64_t failures;        /* plm_pool_alloc calls that failed for lack of memory */
  uint64_t upstream_allocs; /* chunks (or, passthrough, blocks) taken upstream */
  uint64_t upstream_frees;  /* chunks (or blocks) given back upstream */
  uint64_t bytes_in_use;    /* bytes of live blocks (rounded to 256) */
  uint64_t bytes_requested; /* bytes the live blocks were asked for */
  uint64_t bytes_reserved;  /* bytes of memory held from upstream */
  uint64_t bytes_released;  /* bytes of addresses held whose memory went back (pages
                               under free runs; not in bytes_reserved) */
  uint64_t peak_bytes_in_use;
  uint64_t peak_bytes_reserved;
  uint64_t largest_free_block; /* bytes; free blocks pending on a stream included */
  double fragmentation;        /* 1 - largest free / total free; 0 when nothing is free */
  uint64_t live_blocks;
  uint64_t cross_stream_reuses;   /* blocks freed on one stream handed to another */
  uint64_t inserted_waits;        /* stream waits the pool enqueued to reuse a block */
  uint64_t host_synchronizations; /* times the pool blocked the host: the last step before
                                     out-of-memory, giving chunks back upstream, trimming */
} plm_pool_stats;

/* The config a NULL cfg stands for (same as a zeroed one). */
PLM_API plm_pool_config plm_pool_config_default(void);

/* Create a pool on ctx. Blocks while initial_reservation is reserved. Errors:
 * PLM_ERR_INVALID_ARG (NULL ctx or out, unknown mode or flags, byte_limit below
 * initial_reservation, an upstream with a NULL callback or with CUDA_ASYNC,
 * cuda_mem_pool without CUDA_ASYNC, a cuda_mem_pool not of the context's device),
 * PLM_ERR_UNSUPPORTED (CUDA_ASYNC or cuda_mem_pool on the host backend),
 * PLM_ERR_OUT_OF_MEMORY (the initial reservation failed). */
PLM_API plm_status plm_pool_create(plm_context *ctx, const plm_pool_config *cfg, plm_pool **out);

/* Destroy a pool: waits for the context's device work to finish, then gives all
 * memory back upstream. Live blocks are freed with it; when there were any the pool
 * is still destroyed but the call returns PLM_ERR_INVALID_STATE counting them. NULL
 * is a no-op. The context's default pool is destroyed with the context only. */
PLM_API plm_status plm_pool_destroy(plm_pool *pool);

/* The context's default pool, created on first use with plm_context_config's
 * default_pool (a zeroed config when that was NULL). Thread-safe. Errors: those of
 * plm_pool_create, the message prefixed "the default pool: ". */
PLM_API plm_status plm_context_default_pool(plm_context *ctx, plm_pool **out);

/* Allocate bytes (> 0) for use on stream, in stream order (see above). Thread-safe;
 * blocks only as described above. Not from a host callback (PLM_ERR_INVALID_STATE on
 * both backends). Errors:
 * PLM_ERR_INVALID_ARG (NULL pool, stream or ptr; bytes 0 or too large to align; a
 * stream of another context), PLM_ERR_OUT_OF_MEMORY (with the diagnostic). *ptr is
 * NULL on failure. */
PLM_API plm_status plm_pool_alloc(plm_pool *pool, size_t bytes, plm_stream *stream, void **ptr);

/* Free a block in stream order: work enqueued on stream before this call may still
 * use it. Thread-safe; never blocks in pooled and CUDA_ASYNC modes. ptr NULL is a
 * no-op. From a host callback only in pooled mode (the others give the block
 * upstream: PLM_ERR_INVALID_STATE, the block stays live). Errors: PLM_ERR_INVALID_ARG
 * (NULL pool or stream, a stream of another context), PLM_ERR_NOT_FOUND (ptr is not a
 * live block of this pool: never allocated, already freed, or an interior pointer;
 * nothing changes), PLM_ERR_OUT_OF_MEMORY (no host memory to record the free: the
 * stream's record, or a slot freed on another stream than its slab's; the block stays
 * live). */
PLM_API plm_status plm_pool_free(plm_pool *pool, void *ptr, plm_stream *stream);

/* A snapshot of the statistics. O(number of free-list classes). */
PLM_API plm_status plm_pool_stats_get(plm_pool *pool, plm_pool_stats *out);

/* Give idle chunks back upstream while more than keep_bytes stay reserved (or
 * until no chunk is idle), then, where the backend can, the memory under the pages
 * of free runs, largest first, until at most keep_bytes stay reserved. Waits for the
 * device work of pending frees to finish first (each stream that freed into the
 * pool), so that their memory can be given back: this call blocks. Fails with
 * PLM_ERR_INVALID_STATE, giving nothing back, while one of those streams is being captured into a
 * graph (a pipeline's capture). */
PLM_API plm_status plm_pool_trim(plm_pool *pool, size_t keep_bytes);

/* The pool's mode and the context it belongs to. */
PLM_API plm_status plm_pool_mode_get(const plm_pool *pool, plm_pool_mode *out);
PLM_API plm_status plm_pool_context(const plm_pool *pool, plm_context **out);

/* "pooled", "passthrough", "cuda_async". */
PLM_API const char *plm_pool_mode_name(plm_pool_mode mode);

/* ---- snapshots: what the pool holds, block by block ------------------------------
 *
 * A snapshot is a copy of the pooled mode's layout taken at one instant: one segment
 * per chunk reserved from upstream, in the pool's chunk order, and the blocks that
 * tile each chunk, in address order. Addresses are integers (offsets from the
 * segment's base) and are never dereferenced, so a snapshot reads the same on the host
 * and cuda backends. It is for looking at fragmentation and reuse: the profiler draws
 * it (plm_profiler_add_pool_snapshot, plume/profile.h) and it writes itself as JSON.
 */

/* The state of a block in a snapshot. A PENDING block is free but was freed on a
 * stream that the pool does not yet know to have passed the free: only that stream may
 * take it now (another may, behind a stream wait). */
typedef enum plm_pool_block_state {
  PLM_POOL_BLOCK_USED = 0,    /* handed out by plm_pool_alloc, not yet freed */
  PLM_POOL_BLOCK_FREE = 1,    /* free and safe for every stream */
  PLM_POOL_BLOCK_PENDING = 2, /* free, owned by the stream it was freed on */
  PLM_POOL_BLOCK_RELEASED = 3 /* free pages whose memory went back; addresses kept */
} plm_pool_block_state;

/* One chunk reserved from upstream. */
typedef struct plm_pool_segment {
  uint64_t base;      /* the chunk's device address, as an integer */
  uint64_t size;      /* bytes */
  bool huge;          /* at least the pool's huge_bytes (a request that large gets a
                         chunk of its own) */
  size_t first_block; /* its blocks are blocks[first_block .. first_block + block_count) */
  size_t block_count;
} plm_pool_segment;

/* One block of a segment. */
typedef struct plm_pool_block_info {
  size_t segment;     /* index in the snapshot's segments */
  uint64_t offset;    /* from the segment's base */
  uint64_t size;      /* bytes, a multiple of 256 */
  uint64_t requested; /* USED: the bytes asked for; 0 otherwise */
  plm_pool_block_state state;
  const plm_stream *stream; /* PENDING: the owning stream; else the stream of the last
                               free in the block, or NULL when never freed. An opaque id
                               to compare: the stream may be destroyed since */
  int stream_index;         /* stream numbered 0, 1, ... by first appearance in the
                               snapshot's blocks; -1 for NULL. A slot of a slab (a
                               size_class up to 16 KiB) keeps no history: USED, no
                               stream and freed_at 0; free, the stream it is safe for
                               (PENDING: the slab's), or NULL when it waits for
                               another stream's free */
  int size_class;           /* the small size class: of a slot of a slab (up to 16 KiB,
                               one block of the pool cut into equal slots), or of a
                               USED or cached small block (up to 64 KiB, kept
                               unmerged); -1 for the TLSF lists */
  double freed_at;          /* monotonic seconds (CLOCK_MONOTONIC, read coarsely: up to
                               a few ms early) of the last free in the block (a free
                               slot: in its slab); 0 when never freed */
} plm_pool_block_info;

typedef struct plm_pool_snapshot {
  double taken_at; /* monotonic seconds, as freed_at */
  plm_pool_segment *segments;
  size_t segment_count;
  plm_pool_block_info *blocks; /* segment by segment, each in address order */
  size_t block_count;
  int stream_count; /* distinct streams among the blocks */
  /* Totals: reserved = in_use + free + pending (memory held), released the addresses
   * held without memory; each equals the sum of its blocks, and the segments' sizes
   * add up to reserved + released. */
  uint64_t bytes_reserved, bytes_in_use, bytes_free, bytes_pending, bytes_released;
  /* Fragmentation, over FREE and PENDING blocks (as plm_pool_stats): */
  uint64_t largest_free_block;
  uint64_t free_blocks;       /* how many blocks are FREE or PENDING */
  double fragmentation;       /* 1 - largest free / (free + pending); 0 when nothing is free */
  double reserved_per_in_use; /* bytes_reserved / bytes_in_use; 0 when nothing is in use */
} plm_pool_snapshot;

/* Take a snapshot of a pooled-mode pool into a new *out (malloc'd; give it to
 * plm_pool_snapshot_free). Consistent: taken under the pool's locks, so it waits for
 * a slow path in progress (which may be waiting on the device) and holds up other
 * threads' calls for O(blocks) time. Thread-safe; makes no backend call. Its totals
 * equal plm_pool_stats_get's bytes_reserved, bytes_in_use, largest_free_block and
 * fragmentation at the same instant. Errors: PLM_ERR_INVALID_ARG (NULL pool or out),
 * PLM_ERR_INVALID_STATE (called from a host callback: the slow path it waits for may be
 * waiting for that very stream), PLM_ERR_UNSUPPORTED (passthrough or cuda_async mode:
 * there are no chunks to show), PLM_ERR_OUT_OF_MEMORY (nothing is leaked). *out is NULL
 * on failure. */
PLM_API plm_status plm_pool_snapshot_take(plm_pool *pool, plm_pool_snapshot **out);

/* A new copy of a snapshot into *out (give it to plm_pool_snapshot_free). Thread-safe
 * on distinct snapshots. Errors: PLM_ERR_INVALID_ARG (NULL snapshot or out),
 * PLM_ERR_OUT_OF_MEMORY (nothing is leaked). *out is NULL on failure. */
PLM_API plm_status plm_pool_snapshot_copy(const plm_pool_snapshot *snapshot,
                                          plm_pool_snapshot **out);

/* Free a snapshot. NULL is a no-op. */
PLM_API void plm_pool_snapshot_free(plm_pool_snapshot *snapshot);

/* The snapshot as JSON text (UTF-8, indented, malloc'd: free() it), schema
 * "plume-pool-snapshot", version 1:
 *   {"schema", "version", "taken_at",
 *    "totals": {"bytes_reserved", "bytes_in_use", "bytes_free", "bytes_pending",
 *               "bytes_released", "largest_free_block", "free_blocks", "fragmentation",
 *               "reserved_per_in_use"},
 *    "segments": [{"base", "size", "huge", "first_block", "block_count"}],
 *    "blocks": [{"segment", "offset", "size", "requested", "state" ("used", "free",
 *               "pending" or "released"), "stream" (stream_index, or null), "size_class",
 *               "freed_at" (null when never freed)}]}
 * Integers are JSON integers (exact up to 2^63). Thread-safe on distinct snapshots.
 * Errors: PLM_ERR_INVALID_ARG (NULL snapshot or json), PLM_ERR_OUT_OF_MEMORY. */
PLM_API plm_status plm_pool_snapshot_to_json(const plm_pool_snapshot *snapshot, char **json);

/* Write the JSON above to file (not closed). Errors: PLM_ERR_INVALID_ARG (NULL
 * snapshot or file), PLM_ERR_OUT_OF_MEMORY, PLM_ERR_IO (the write failed). */
PLM_API plm_status plm_pool_snapshot_write_json(const plm_pool_snapshot *snapshot, FILE *file);

/* "used", "free", "pending", "released"; "unknown" for any other value. */
PLM_API const char *plm_pool_block_state_name(plm_pool_block_state state);

/* ---- pinned host memory --------------------------------------------------------
 *
 * Staging buffers for copies that overlap compute. On cuda the memory is
 * page-locked (cudaHostRegister), so cudaMemcpyAsync from it is truly
 * asynchronous; on host it is ordinary pages. It comes from a jemalloc arena of
 * the context's own whose extent hooks map and page-lock memory, so small and large
 * staging buffers are served at malloc speed after warm-up. Freed memory stays
 * mapped and page-locked for reuse (pinning is slow); everything is unregistered
 * and unmapped when the context is destroyed, blocks still live included (they are
 * not reported as leftovers).
 *
 * Linking jemalloc: libplume links Debian's libjemalloc, which replaces malloc and
 * free for the whole process (the application's own allocations included). plume
 * uses only its explicit arena (mallocx with MALLOCX_ARENA and no thread cache)
 * for pinned memory, so the application's memory is never pinned.
 */

/* Allocate bytes (> 0) of pinned host memory, 256-byte aligned. Thread-safe; the
 * context's first call creates its arena. Errors: PLM_ERR_INVALID_ARG (NULL ctx or
 * ptr, bytes 0 or too large to align), PLM_ERR_OUT_OF_MEMORY (with the reason: the
 * size, mmap or page-locking failed). *ptr is NULL on failure. */
PLM_API plm_status plm_host_alloc(plm_context *ctx, size_t bytes, void **ptr);

/* Free memory from plm_host_alloc. Does not wait for the device: the caller must
 * know that no enqueued copy still uses it. Thread-safe. ptr NULL is a no-op.
 * Errors: PLM_ERR_INVALID_ARG (NULL ctx), PLM_ERR_NOT_FOUND (not a live block from
 * plm_host_alloc of this context: never allocated, already freed, an interior
 * pointer, or another context's block; nothing changes). */
PLM_API plm_status plm_host_free(plm_context *ctx, void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_POOL_H */

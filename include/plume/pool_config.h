/* plume/pool_config.h: what a pool is made with: its mode, flags, growth and limits
 * (plm_pool_config) and where its memory comes from (plm_pool_upstream).
 *
 * Apart from plume/pool.h, whose functions take them, because a context keeps the config
 * of its default pool (plm_context_config, plume/context.h) below the pools themselves.
 * plume/pool.h includes this header: a program includes that one.
 */
#ifndef PLUME_POOL_CONFIG_H
#define PLUME_POOL_CONFIG_H

#include <stddef.h>

#include "plume/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum plm_pool_mode {
  PLM_POOL_POOLED = 0,
  PLM_POOL_PASSTHROUGH = 1,
  PLM_POOL_CUDA_ASYNC = 2
} plm_pool_mode;

typedef enum plm_pool_growth {
  /* Each new chunk is max(request rounded up to 2 MiB, min_chunk_bytes, min(reserved
   * / 8, 64 MiB)): few upstream calls while the pool is small (it grows by 12.5% a
   * step), and a chunk never adds more than an eighth of what is already reserved,
   * nor more than 64 MiB, beyond the request itself. */
  PLM_POOL_GROW_PROPORTIONAL = 0,
  /* Each new chunk is max(request rounded up to 2 MiB, min_chunk_bytes). */
  PLM_POOL_GROW_FIXED = 1
} plm_pool_growth;

/* Pool flags. */
enum {
  PLM_POOL_DEFAULT = 0,
  /* Never make one stream wait for another to reuse a block; such blocks wait
   * until their free has completed (cudaMemPoolReuseAllowInternalDependencies off). */
  PLM_POOL_NO_STREAM_WAITS = 1u << 0,
  /* Keep the memory under free blocks until their whole chunk goes back: never give
   * back pages inside a chunk that still has live blocks (the behaviour where the
   * backend cannot). */
  PLM_POOL_KEEP_PAGES = 1u << 1,
  /* Serve requests up to 16 KiB like larger ones, each a block of its own with a
   * descriptor, instead of as slots of per-class slabs (for A/B measurements of what
   * the slabs buy; pool/pool_slabs.h). */
  PLM_POOL_NO_SLABS = 1u << 2
};

/* ---- where the memory comes from: the pool's upstream ---------------------------
 *
 * By default a pool reserves its memory from the backend (cudaMalloc, or aligned host
 * memory on the host backend). To share memory with another allocator (docs/memory.md,
 * "Sharing memory with another allocator"), give the pool a user upstream
 * (plm_pool_upstream, below: its chunks in pooled mode, every block in passthrough
 * mode), or, in PLM_POOL_CUDA_ASYNC mode, a cudaMemPool_t to allocate from
 * (plm_pool_config.cuda_mem_pool; compiled, refused on the host backend, and not yet
 * run by plume's own tests on a GPU).
 */

/* A user upstream. The pool copies the struct at creation; `user` must stay valid
 * until the pool is destroyed.
 *
 * alloc: reserve `bytes` (> 0; in pooled mode a multiple of 256, at least 2 MiB but
 * for a byte limit's last chunk) into *ptr, aligned to at least 256 bytes, usable by
 * the context's device (on cuda: device memory of the context's device, or managed
 * memory; on the host backend: host memory). `stream` is the backend's native stream
 * handle (a cudaStream_t on cuda, the host backend's opaque worker handle on host)
 * when the memory is for one block in passthrough mode, to be used in that stream's
 * order; it is NULL for the pooled mode's chunks, which any stream may use once
 * alloc returns (so a stream-ordered allocator must make them safe for all streams,
 * e.g. allocate on its own stream and synchronise it). Return PLM_OK, or
 * PLM_ERR_OUT_OF_MEMORY when there is no memory: the pool then goes down its
 * out-of-memory ladder (gives idle chunks back through `free`, retries with a
 * chunk of just the request, waits for pending frees) and fails the plm_pool_alloc
 * with PLM_ERR_OUT_OF_MEMORY and its diagnostic only when that finds nothing. Any
 * other status is a hard failure: plm_pool_alloc fails at once with PLM_ERR_BACKEND,
 * naming it. *ptr is not read after a failure; a NULL or misaligned *ptr with PLM_OK
 * is given back through free and fails the same way.
 *
 * free: give back memory that alloc returned, with the same `bytes` it was asked
 * for, exactly once. No work uses the memory any more when free is called: in
 * passthrough mode the pool has waited for the block's freeing stream (`stream`,
 * as in alloc; plm_pool_free blocks, as cudaFree does), and chunks (`stream` NULL)
 * go back only when nothing in them is used or pending. Cannot fail.
 *
 * The pool calls neither on its fast path: only on the slow path (growing, giving
 * chunks back), in plm_pool_trim and plm_pool_destroy (plm_context_destroy for the
 * default pool), and in passthrough mode in every plm_pool_alloc / plm_pool_free, on
 * whichever thread makes that call, with the pool's slow-path lock held in pooled
 * mode. Calls on one pool are serialised in pooled mode; in passthrough mode they may
 * come concurrently from several threads. The callbacks must not call back into this
 * pool (they would deadlock), nor enqueue host work that does. The pool never frees
 * memory it did not get from this upstream, and destroys nothing else of the caller's.
 *
 * Pages: with a user upstream the pool never gives back the memory under free pages
 * of a chunk in use (mem_decommit, pool/pool_internal.h): the pages are the
 * upstream's. PLM_POOL_KEEP_PAGES is implied; idle chunks still go back whole. */
typedef struct plm_pool_upstream {
  plm_status (*alloc)(size_t bytes, void *stream, void *user, void **ptr);
  void (*free)(void *ptr, size_t bytes, void *stream, void *user);
  void *user;
} plm_pool_upstream;

/* A zeroed config is valid and means: pooled, no byte limit, idle chunks kept
 * (release_threshold 0 is read as "keep all"; see PLM_POOL_RELEASE_IDLE), no
 * initial reservation, proportional growth from 2 MiB chunks, huge at 256 MiB,
 * stream waits allowed. */
typedef struct plm_pool_config {
  plm_pool_mode mode;
  unsigned flags;
  size_t byte_limit;          /* most bytes reserved from upstream; 0: no limit */
  size_t release_threshold;   /* the slow path gives idle chunks back while more
                                 than this is reserved; 0: keep all */
  size_t initial_reservation; /* reserve this much at creation (one chunk) */
  plm_pool_growth growth;
  size_t min_chunk_bytes; /* 0: 2 MiB */
  size_t huge_bytes;      /* requests this large get their own chunk; 0: 256 MiB */
  /* The unit in which the pool gives back the memory under free runs of a chunk in use
   * (see "Memory goes back" in plume/pool.h): a power of two, at least the backend's unit
   * (plm_device_info.page_release_bytes: the host's system page, cuda's 2 MiB) and at
   * most 2 MiB. Smaller pages give back more of the holes between live blocks, at the
   * cost of more backend calls on the slow path (docs/benchmarks.md, bench_pool, has
   * the figures). 0: 16 KiB on the host backend, and the backend's unit where that is
   * more (cuda's physical granularity, 2 MiB). */
  size_t page_bytes;
  /* Where the memory comes from (see "the pool's upstream" above). NULL: the backend.
   * POOLED and PASSTHROUGH only; both callbacks must be set. Copied at creation. */
  const plm_pool_upstream *upstream;
  /* CUDA_ASYNC on the cuda backend only: a cudaMemPool_t of the context's device to
   * allocate from (cudaMallocFromPoolAsync) instead of a pool of plume's own. The
   * caller owns it and destroys it after this pool: plume never changes its
   * attributes nor destroys it. plm_pool_trim trims it (cudaMemPoolTrimTo), and
   * bytes_reserved counts what it holds for every user of it. NULL: plume's own. */
  void *cuda_mem_pool;
} plm_pool_config;

/* release_threshold value that gives idle chunks back as soon as the slow path sees
 * them. */
#define PLM_POOL_RELEASE_IDLE ((size_t)1)

#ifdef __cplusplus
}
#endif

#endif /* PLUME_POOL_CONFIG_H */

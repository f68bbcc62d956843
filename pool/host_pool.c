/* pool/host_pool.c: the pinned host pool (plm_host_alloc / plm_host_free,
 * plume/pool.h).
 *
 * Design. Each context gets, on its first plm_host_alloc, an arena of its own
 * (mallctl "arenas.create") of plume's private jemalloc (pool/private_jemalloc.h: not
 * the process's malloc, which never sees these arenas) whose extent hooks take memory from mmap and
 * page-lock it with the backend's host_register (cudaHostRegister on cuda; the
 * host backend has none and uses the pages as they are). Blocks come from that
 * arena with mallocx(MALLOCX_ARENA | MALLOCX_TCACHE_NONE | MALLOCX_ALIGN(256)): no
 * thread cache, so that every block goes back to the arena at once and the arena
 * can be destroyed without flushing the caches of threads it never knew.
 *
 * A user upstream (plm_context_config.host_upstream) takes mmap's place: the alloc
 * hook asks it for the mapping plus room to align it (its pointers are only 256-byte
 * aligned), page-locks the aligned part unless host_upstream_pinned, and tells
 * jemalloc the memory is not zeroed; giving a mapping back unregisters it and hands
 * the upstream exactly the pointer and size it gave. Everything else below holds as
 * for mmap'd mappings.
 *
 * Mappings. Every mmap the hooks make is recorded in `mappings` (a hash table keyed
 * by base address), registered with the backend as a whole. jemalloc may cut the
 * mapping into extents (split is allowed: the pieces stay inside one registration)
 * and glue pieces back together, but only pieces of the same mapping: a merge
 * hook refuses when the second extent starts a mapping of its own, so no extent,
 * and hence no block, ever straddles two registrations (a copy from such a block
 * would not be from one page-locked range). jemalloc only merges adjacent
 * extents, so "b starts a mapping" is exactly "a and b lie in two mappings".
 *
 * Giving memory back. Pinning and unpinning are slow (cudaHostRegister walks and
 * locks every page), so the pool keeps what it has mapped until the context is
 * destroyed, like the device pool's default "keep all": the dalloc hook is NULL
 * (jemalloc then retains the extent for reuse), decommit and both purges are NULL
 * (purging would put fresh pages under addresses whose old pages stay pinned for
 * the device; jemalloc never sees memory as decommitted, so commit is never needed
 * and is NULL too), and the arena's decay is turned off so that jemalloc does not
 * keep trying.
 *
 * Destruction (the attachment's destroy, called by plm_context_destroy after the
 * streams' work has finished): the live blocks are freed, "arena.<i>.destroy"
 * discards the arena and calls the destroy hook on each retained extent (which does
 * nothing: a host_upstream's free may call into jemalloc, which must not happen inside
 * its own arena destruction), and every mapping (whole ones, pieces, the arena's
 * metadata) is unregistered and unmapped or given back last, when jemalloc no longer
 * refers to any of it. jemalloc recycles the index of
 * a destroyed arena, so contexts that come and go do not pile arenas up.
 *
 * Metadata. jemalloc places an arena's own metadata (its "base") in memory from
 * the same alloc hook, always in blocks aligned to a huge page (2 MiB), whereas
 * blocks for plume's requests (256-byte alignment) are asked for with page
 * alignment. Mappings asked for with more than page alignment are therefore not
 * page-locked: jemalloc's metadata stays out of DMA-able memory. Were the guess
 * ever wrong, a block would be in pageable memory: copies from it stay correct,
 * only not asynchronous.
 *
 * Locks. `blocks_lock` guards the table of live blocks and `mappings_lock` the
 * mappings; each is held only for a table update, never across a jemalloc or a
 * backend call. Hooks run inside jemalloc, under its arena locks, on a thread that
 * uses the arena, and take only `mappings_lock`.
 * ctx->host_pool is written once under ctx->lazy_lock and read with acquire loads,
 * so that allocations after the first do not take lazy_lock.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pool/private_jemalloc.h"

#include "plume/pool.h"
#include "streams/assert.h"
#include "streams/error.h"
#include "streams/runtime.h"

enum { HOST_ALIGNMENT = 256, HOOK_MESSAGE_CAPACITY = 512 };

/* A live block from plm_host_alloc. */
typedef struct host_block {
  void *ptr;
  size_t bytes;
  UT_hash_handle hh;
} host_block;

/* One mmap (or piece of the context's host_upstream) taken by the alloc hook. */
typedef struct host_mapping {
  void *base;
  size_t bytes;
  void *raw;        /* host_upstream: what its alloc returned (base lies inside) */
  size_t raw_bytes; /* host_upstream: what was asked for */
  bool registered;  /* page-locked with the backend's host_register */
  UT_hash_handle hh;
} host_mapping;

typedef struct host_pool {
  plm__attachment attachment;
  extent_hooks_t hooks; /* jemalloc keeps &hooks: must live as long as the arena */
  plm_context *ctx;
  unsigned arena;
  int mallocx_flags;

  pthread_mutex_t blocks_lock;
  host_block *blocks;

  pthread_mutex_t mappings_lock;
  host_mapping *mappings;
} host_pool;

/* Why the last hook that failed on this thread failed; plm_host_alloc clears it
 * before calling jemalloc and adds it to its message when jemalloc fails. */
static _Thread_local char hook_failure[HOOK_MESSAGE_CAPACITY];

static void note_hook_failure(const char *fmt, ...) PLM__PRINTF(1, 2);

static void note_hook_failure(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(hook_failure, sizeof hook_failure, fmt, args);
  va_end(args);
}

static host_pool *pool_of_hooks(extent_hooks_t *hooks) {
  return (host_pool *)(void *)((char *)hooks - offsetof(host_pool, hooks));
}

static host_pool *pool_of_attachment(plm__attachment *attachment) {
  return (host_pool *)(void *)((char *)attachment - offsetof(host_pool, attachment));
}

/* strerror, thread-safe (the XSI strerror_r). */
static const char *describe_error(int error, char *buffer, size_t size) {
  if (strerror_r(error, buffer, size) != 0) snprintf(buffer, size, "error %d", error);
  return buffer;
}

static size_t page_size(void) {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (size_t)page : 4096;
}

/* Unpin and unmap (or give back upstream) one mapping and forget its record (already
 * out of the table). */
static void release_mapping(host_pool *pool, host_mapping *mapping) {
  plm_context *ctx = pool->ctx;
  if (mapping->registered && ctx->backend->host_unregister)
    ctx->backend->host_unregister(ctx->backend_ctx, mapping->base);
  if (mapping->raw)
    ctx->host_upstream.free(mapping->raw, mapping->raw_bytes, NULL, ctx->host_upstream.user);
  else
    munmap(mapping->base, mapping->bytes);
  free(mapping);
}

/* Memory for a mapping of `size` bytes aligned to `alignment` (a power of two, at least
 * a page) from the context's host_upstream: its alloc's pointer is only 256-byte
 * aligned, so ask for enough to find an aligned start inside. NULL on failure, noted. */
static void *upstream_map(plm_context *ctx, host_mapping *mapping, size_t size, size_t alignment) {
  const plm_pool_upstream *up = &ctx->host_upstream;
  size_t span = size + alignment - HOST_ALIGNMENT;
  void *raw = NULL;
  plm_status status = up->alloc(span, NULL, up->user, &raw);
  if (status != PLM_OK || !raw || (uintptr_t)raw % HOST_ALIGNMENT != 0) {
    if (status == PLM_OK && raw) up->free(raw, span, NULL, up->user);
    note_hook_failure("the host upstream's alloc of %zu bytes failed (%s)", span,
                      status != PLM_OK ? plm_status_str(status) : "no 256-aligned pointer");
    return NULL;
  }
  mapping->raw = raw;
  mapping->raw_bytes = span;
  return (void *)(((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1));
}

/* `size` bytes of fresh anonymous pages aligned to `alignment` (a power of two, at
 * least a page). NULL on failure, noted. */
static void *mmap_aligned(size_t size, size_t alignment, size_t page) {
  /* Map enough to find an aligned start inside, then unmap the ends. */
  size_t span = size + alignment - page;
  char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    char reason[128];
    note_hook_failure("mmap of %zu bytes failed: %s", span,
                      describe_error(errno, reason, sizeof reason));
    return NULL;
  }
  uintptr_t start = ((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1);
  size_t head = (size_t)(start - (uintptr_t)raw);
  size_t tail = span - head - size;
  if (head > 0) munmap(raw, head);
  if (tail > 0) munmap((char *)start + size, tail);
  return (void *)start;
}

/* ---- extent hooks --------------------------------------------------------------- */

static void *hook_alloc(extent_hooks_t *hooks, void *new_addr, size_t size, size_t alignment,
                        bool *zero, bool *commit, unsigned arena_ind) {
  (void)arena_ind;
  host_pool *pool = pool_of_hooks(hooks);
  /* jemalloc asks for a given address only to grow an extent in place (rallocx,
   * xallocx), which plume never does; the result would be a second mapping that
   * the merge hook refuses to join anyway. */
  if (new_addr != NULL) return NULL;
  size_t page = page_size();
  if (alignment < page) alignment = page;
  if (size == 0 || size > SIZE_MAX - alignment) {
    note_hook_failure("cannot map %zu bytes aligned to %zu", size, alignment);
    return NULL;
  }
  host_mapping *mapping = calloc(1, sizeof *mapping);
  if (!mapping) {
    note_hook_failure("no host memory to record a mapping");
    return NULL;
  }

  plm_context *ctx = pool->ctx;
  bool upstream = ctx->host_upstream.alloc != NULL;
  void *base =
      upstream ? upstream_map(ctx, mapping, size, alignment) : mmap_aligned(size, alignment, page);
  if (!base) {
    free(mapping);
    return NULL;
  }
  mapping->base = base;
  mapping->bytes = size;

  /* Page-lock what plume's blocks will live in (see "Metadata" above). */
  if (ctx->backend->host_register && alignment <= page && !ctx->host_upstream_pinned) {
    plm_status status = ctx->backend->host_register(ctx->backend_ctx, base, size);
    if (status != PLM_OK) {
      note_hook_failure("could not page-lock %zu bytes: %s", size, plm_last_error());
      release_mapping(pool, mapping);
      return NULL;
    }
    mapping->registered = true;
  }
  pthread_mutex_lock(&pool->mappings_lock);
  HASH_ADD_PTR(pool->mappings, base, mapping);
  bool recorded = PLM__HASH_ADDED(mapping);
  pthread_mutex_unlock(&pool->mappings_lock);
  if (!recorded) {
    note_hook_failure("no host memory to record a mapping");
    release_mapping(pool, mapping);
    return NULL;
  }
  *zero = !upstream; /* fresh anonymous pages; the upstream's may hold anything */
  *commit = true;
  return base;
}

/* Called by arena destruction for each retained extent. Nothing is given back here: the
 * final sweep after the destruction (release_all_mappings) gives every mapping back, out of
 * jemalloc. A user's host_upstream free is the user's code, which must not run inside the
 * arena's destruction, under its locks (when libplume linked a jemalloc that was also the
 * process's malloc, a free() from there crashed about one run in four of
 * test_pool_upstream). */
static void hook_destroy(extent_hooks_t *hooks, void *addr, size_t size, bool committed,
                         unsigned arena_ind) {
  (void)hooks;
  (void)addr;
  (void)size;
  (void)committed;
  (void)arena_ind;
}

/* Splitting keeps both pieces inside their mapping: nothing to do. */
static bool hook_split(extent_hooks_t *hooks, void *addr, size_t size, size_t size_a, size_t size_b,
                       bool committed, unsigned arena_ind) {
  (void)hooks;
  (void)addr;
  (void)size;
  (void)size_a;
  (void)size_b;
  (void)committed;
  (void)arena_ind;
  return false;
}

/* Merge two adjacent extents only when they lie in the same mapping, that is when
 * b does not start a mapping of its own. Returns true (refused) otherwise. */
static bool hook_merge(extent_hooks_t *hooks, void *addr_a, size_t size_a, void *addr_b,
                       size_t size_b, bool committed, unsigned arena_ind) {
  (void)size_b;
  (void)committed;
  (void)arena_ind;
  PLM_ASSERT((char *)addr_a + size_a == (char *)addr_b);
  (void)addr_a;
  (void)size_a;
  host_pool *pool = pool_of_hooks(hooks);
  host_mapping *mapping = NULL;
  pthread_mutex_lock(&pool->mappings_lock);
  HASH_FIND_PTR(pool->mappings, &addr_b, mapping);
  pthread_mutex_unlock(&pool->mappings_lock);
  return mapping != NULL;
}

/* ---- the pool's life ------------------------------------------------------------ */

/* Unpin and unmap every mapping still recorded: after arena destruction (or a
 * failed creation), when jemalloc no longer refers to any of them. */
static void release_all_mappings(host_pool *pool) {
  pthread_mutex_lock(&pool->mappings_lock);
  host_mapping *table = pool->mappings;
  pool->mappings = NULL;
  pthread_mutex_unlock(&pool->mappings_lock);
  host_mapping *mapping, *next;
  HASH_ITER(hh, table, mapping, next) {
    HASH_DEL(table, mapping);
    release_mapping(pool, mapping);
  }
}

static void free_pool(host_pool *pool) {
  pthread_mutex_destroy(&pool->mappings_lock);
  pthread_mutex_destroy(&pool->blocks_lock);
  free(pool);
}

static int set_arena_ssize(unsigned arena, const char *leaf, ssize_t value) {
  char name[64];
  snprintf(name, sizeof name, "arena.%u.%s", arena, leaf);
  return je_mallctl(name, NULL, NULL, &value, sizeof value);
}

static int destroy_arena(unsigned arena) {
  char name[64];
  snprintf(name, sizeof name, "arena.%u.destroy", arena);
  return je_mallctl(name, NULL, NULL, NULL, 0);
}

static void host_pool_destroy(plm__attachment *attachment);

static plm_status host_pool_create(plm_context *ctx, host_pool **out) {
  host_pool *pool = calloc(1, sizeof *pool);
  if (!pool) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the pinned host pool");
  pool->ctx = ctx;
  pool->attachment = (plm__attachment){
      .kind = "host pool",
      .report_if_leftover = false,
      .destroy = host_pool_destroy,
      .stream_destroying = NULL,
  };
  pool->hooks = (extent_hooks_t){
      .alloc = hook_alloc,
      .dalloc = NULL, /* retain: never unpin while the context lives */
      .destroy = hook_destroy,
      .commit = NULL, /* memory is never decommitted */
      .decommit = NULL,
      .purge_lazy = NULL, /* purging would detach pages from the registration */
      .purge_forced = NULL,
      .split = hook_split,
      .merge = hook_merge,
  };
  pthread_mutex_init(&pool->blocks_lock, NULL);
  pthread_mutex_init(&pool->mappings_lock, NULL);

  extent_hooks_t *hooks = &pool->hooks;
  unsigned arena = 0;
  size_t arena_size = sizeof arena;
  hook_failure[0] = '\0';
  int err = je_mallctl("arenas.create", &arena, &arena_size, &hooks, sizeof hooks);
  char reason[128];
  if (err != 0) {
    release_all_mappings(pool); /* what arena creation mapped before failing */
    free_pool(pool);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY,
                         "could not create the pinned host arena: mallctl(\"arenas.create\") "
                         "failed with %s%s%s",
                         describe_error(err, reason, sizeof reason), hook_failure[0] ? ": " : "",
                         hook_failure);
  }
  pool->arena = arena;
  /* Nothing can be purged (see above): tell jemalloc not to try. */
  err = set_arena_ssize(arena, "dirty_decay_ms", -1);
  if (err == 0) err = set_arena_ssize(arena, "muzzy_decay_ms", -1);
  if (err != 0) {
    if (destroy_arena(arena) == 0) {
      release_all_mappings(pool);
      free_pool(pool);
    } /* else the arena still refers to the pool: keep it (never happens) */
    return plm__fail_raw(PLM_ERR_INTERNAL,
                         "could not turn off decay of the pinned host arena %u: %s", arena,
                         describe_error(err, reason, sizeof reason));
  }
  pool->mallocx_flags = MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE | MALLOCX_ALIGN(HOST_ALIGNMENT);
  *out = pool;
  return PLM_OK;
}

/* The attachment's destroy: plm_context_destroy calls it once every stream's work
 * has finished, so no copy still uses the memory. */
static void host_pool_destroy(plm__attachment *attachment) {
  host_pool *pool = pool_of_attachment(attachment);
  plm_context *ctx = pool->ctx;
  pthread_mutex_lock(&ctx->lazy_lock);
  if (ctx->host_pool == attachment) __atomic_store_n(&ctx->host_pool, NULL, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&ctx->lazy_lock);

  pthread_mutex_lock(&pool->blocks_lock);
  host_block *table = pool->blocks;
  pool->blocks = NULL;
  pthread_mutex_unlock(&pool->blocks_lock);
  host_block *block, *next;
  HASH_ITER(hh, table, block, next) {
    HASH_DEL(table, block);
    je_dallocx(block->ptr, MALLOCX_TCACHE_NONE);
    free(block);
  }

  if (destroy_arena(pool->arena) != 0) {
    /* Only a thread bound to the arena with mallctl("thread.arena") can make this
     * fail. jemalloc then still uses the hooks and the memory: keep both. */
    PLM_ASSERT(!"arena.<i>.destroy failed");
    return;
  }
  release_all_mappings(pool);
  free_pool(pool);
}

/* The context's pool, created on first use. */
static plm_status get_pool(plm_context *ctx, host_pool **out) {
  plm__attachment *attachment = __atomic_load_n(&ctx->host_pool, __ATOMIC_ACQUIRE);
  if (!attachment) {
    plm_status status = PLM_OK;
    host_pool *created = NULL;
    pthread_mutex_lock(&ctx->lazy_lock);
    attachment = ctx->host_pool;
    if (!attachment) {
      status = host_pool_create(ctx, &created);
      if (status == PLM_OK) {
        attachment = &created->attachment;
        __atomic_store_n(&ctx->host_pool, attachment, __ATOMIC_RELEASE);
      }
    }
    pthread_mutex_unlock(&ctx->lazy_lock);
    if (status != PLM_OK) return status;
    /* Attached after lazy_lock is released (it is never held with ctx->lock), and
     * before this plm_host_alloc returns, so before any plm_context_destroy that
     * is not itself a use-after-destroy race. */
    if (created) plm__context_attach(ctx, &created->attachment);
  }
  *out = pool_of_attachment(attachment);
  return PLM_OK;
}

/* ---- the public API ------------------------------------------------------------- */

plm_status plm_host_alloc(plm_context *ctx, size_t bytes, void **ptr) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(ptr);
  *ptr = NULL;
  if (bytes == 0) return plm__fail(PLM_ERR_INVALID_ARG, "bytes is 0");
  if (bytes > SIZE_MAX - HOST_ALIGNMENT)
    return plm__fail(PLM_ERR_INVALID_ARG, "bytes %zu is too large to align to %d", bytes,
                     HOST_ALIGNMENT);
  host_pool *pool = NULL;
  plm_status status = get_pool(ctx, &pool);
  if (status != PLM_OK) return plm__propagate(status);

  host_block *block = calloc(1, sizeof *block);
  if (!block) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory to track a block");
  hook_failure[0] = '\0';
  void *memory = je_mallocx(bytes, pool->mallocx_flags);
  if (!memory) {
    free(block);
    if (hook_failure[0])
      return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no pinned host memory for %zu bytes: %s", bytes,
                       hook_failure);
    return plm__fail(PLM_ERR_OUT_OF_MEMORY,
                     "no pinned host memory for %zu bytes (more than jemalloc can serve)", bytes);
  }
  PLM_ASSERT((uintptr_t)memory % HOST_ALIGNMENT == 0);
  block->ptr = memory;
  block->bytes = bytes;
  pthread_mutex_lock(&pool->blocks_lock);
  HASH_ADD_PTR(pool->blocks, ptr, block);
  bool tracked = PLM__HASH_ADDED(block);
  pthread_mutex_unlock(&pool->blocks_lock);
  if (!tracked) {
    je_dallocx(memory, MALLOCX_TCACHE_NONE);
    free(block);
    return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory to track a block");
  }
  *ptr = memory;
  return PLM_OK;
}

bool plm__host_pool_holds(plm_context *ctx, const void *ptr) {
  plm__attachment *attachment = __atomic_load_n(&ctx->host_pool, __ATOMIC_ACQUIRE);
  if (!attachment || !ptr) return false;
  host_pool *pool = pool_of_attachment(attachment);
  const uintptr_t p = (uintptr_t)ptr;
  /* Where the backend page-locks, only what is: mappings registered here, or a
   * host_upstream's that it pinned itself (not jemalloc's metadata, see "Metadata"). */
  const bool pins = ctx->backend->host_register != NULL;
  bool held = false;
  pthread_mutex_lock(&pool->mappings_lock);
  host_mapping *mapping, *next;
  HASH_ITER(hh, pool->mappings, mapping, next) {
    const uintptr_t base = (uintptr_t)mapping->base;
    if (p >= base && p - base < mapping->bytes) {
      held = !pins || mapping->registered || ctx->host_upstream_pinned;
      break;
    }
  }
  pthread_mutex_unlock(&pool->mappings_lock);
  return held;
}

plm_status plm_host_free(plm_context *ctx, void *ptr) {
  PLM__REQUIRE_NOT_NULL(ctx);
  if (!ptr) return PLM_OK;
  plm__attachment *attachment = __atomic_load_n(&ctx->host_pool, __ATOMIC_ACQUIRE);
  host_block *block = NULL;
  if (attachment) {
    host_pool *pool = pool_of_attachment(attachment);
    pthread_mutex_lock(&pool->blocks_lock);
    HASH_FIND_PTR(pool->blocks, &ptr, block);
    if (block) HASH_DEL(pool->blocks, block);
    pthread_mutex_unlock(&pool->blocks_lock);
  }
  if (!block)
    return plm__fail(PLM_ERR_NOT_FOUND,
                     "ptr %p is not a live block from plm_host_alloc of this context (never "
                     "allocated, already freed, or an interior pointer)",
                     ptr);
  free(block);
  je_dallocx(ptr, MALLOCX_TCACHE_NONE);
  return PLM_OK;
}

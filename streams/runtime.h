/* streams/runtime.h: what contexts, streams and events are (internal).
 *
 * A context owns a backend (streams/backend.h) and keeps a registry of the objects
 * made from it: streams and events in doubly linked lists, device allocations in a
 * hash table from pointer to size. The registry serves three purposes:
 *   - objects from another context are detected (every object points back to its
 *     context);
 *   - plm_context_destroy can destroy, and report, whatever was left alive;
 *   - plm_device_free can tell an allocation from any other pointer.
 * Objects of higher layers (pools) register as attachments, so that the context can
 * destroy them and tell them when a stream goes away.
 * The registry is guarded by `lock`; no backend call is made while holding it,
 * except the ones context destruction makes after the lists are detached, and the
 * stream_destroying hooks (which may synchronise a stream).
 */
#ifndef PLUME_STREAMS_RUNTIME_H
#define PLUME_STREAMS_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "streams/hash.h"

#include "plume/context.h"
#include "plume/event.h"
#include "plume/pool_config.h" /* the pool configs the context keeps for the pool layer */
#include "plume/stream.h"
#include "streams/backend.h"

/* An object of a higher layer (a pool, the pinned host pool) that lives and dies
 * with the context. The context knows it only through these callbacks, so that
 * dependencies still point downward. */
typedef struct plm__attachment plm__attachment;
struct plm__attachment {
  const char *kind;        /* "pool", "pipeline": named when reported as a leftover */
  bool report_if_leftover; /* false for objects the context made itself */
  /* Destroy the object; called by plm_context_destroy after every stream's work
   * has finished and before streams and events are destroyed. */
  void (*destroy)(plm__attachment *self);
  /* (optional) Called by plm_stream_destroy before the stream is released; the
   * stream's pending work has not necessarily finished. */
  void (*stream_destroying)(plm__attachment *self, plm_stream *stream);
  plm__attachment *prev, *next;
};

typedef struct plm__allocation {
  void *ptr;
  size_t bytes;
  UT_hash_handle hh;
} plm__allocation;

struct plm_context {
  const plm__backend_iface *backend;
  void *backend_ctx;
  plm_device_info info; /* filled once at creation; free_memory refreshed on request */

  pthread_mutex_t lock; /* guards the registry below */
  plm_stream *streams;
  plm_event *events;
  plm__allocation *allocations;
  plm__attachment *attachments;

  /* Objects of higher layers that the context creates on first use, each guarded
   * by lazy_lock. Lock order: lazy_lock may be held while `lock` is taken (creating
   * the object attaches it), never the reverse. */
  pthread_mutex_t lazy_lock;
  plm__attachment *default_pool;
  plm__attachment *host_pool;

  /* From plm_context_config, copied: the default pool's config (its upstream
   * pointing at default_upstream), and the host pool's upstream (alloc NULL: mmap). */
  plm_pool_config default_pool_config;
  plm_pool_upstream default_upstream;
  plm_pool_upstream host_upstream;
  bool host_upstream_pinned;
};

struct plm_stream {
  plm_context *ctx;
  void *handle; /* the backend's stream */
  unsigned flags;
  plm_stream *wraps; /* plm_stream_wrap: the plume stream shared (host), or NULL */
  bool adopted;      /* plm_stream_wrap: another library's stream, never destroyed */
  int wrappers;      /* live plm_stream_wrap streams sharing this one (ctx->lock) */
  bool destroying;   /* plm_stream_destroy has begun: no new wrapper (ctx->lock) */
  plm_stream *prev, *next;
};

struct plm_event {
  plm_context *ctx;
  void *handle; /* the backend's event */
  unsigned flags;
  atomic_bool recorded; /* set by the first plm_event_record */
  plm_event *prev, *next;
};

/* Registry updates, each under ctx->lock. */
void plm__context_add_stream(plm_context *ctx, plm_stream *stream);
void plm__context_remove_stream(plm_context *ctx, plm_stream *stream);
void plm__context_add_event(plm_context *ctx, plm_event *event);
void plm__context_remove_event(plm_context *ctx, plm_event *event);
void plm__context_attach(plm_context *ctx, plm__attachment *attachment);
void plm__context_detach(plm_context *ctx, plm__attachment *attachment);

/* Launch a CPU kernel on a host-backend stream (see backend.h); PLM_ERR_UNSUPPORTED
 * on a backend that runs its own kernels. */
plm_status plm__stream_launch_host_kernel(plm_stream *stream, void (*fn)(const void *args),
                                          const void *args, size_t args_size);

/* Whether ptr lies in the page-locked memory of ctx's pinned host pool (plm_host_alloc's
 * blocks, interior pointers too, and freed blocks the pool keeps; pool/host_pool.c): on
 * cuda host memory the device reaches (DLPack's kDLCUDAHost); on the host backend, which
 * locks nothing, the pool's memory. False before the context's first plm_host_alloc, for
 * NULL and for any other memory (another context's blocks included). Thread-safe. */
bool plm__host_pool_holds(plm_context *ctx, const void *ptr);

/* Call every attachment's stream_destroying hook (plm_stream_destroy does). */
void plm__context_notify_stream_destroying(plm_context *ctx, plm_stream *stream);

#endif /* PLUME_STREAMS_RUNTIME_H */

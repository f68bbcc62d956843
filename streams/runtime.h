/* streams/runtime.h: what contexts, streams and events are (internal).
 *
 * A context owns a backend (streams/backend.h) and keeps a registry of the objects
 * made from it: streams and events in doubly linked lists, device allocations in a
 * hash table from pointer to size. The registry serves three purposes:
 *   - objects from another context are detected (every object points back to its
 *     context);
 *   - plm_context_destroy can destroy, and report, whatever was left alive;
 *   - plm_device_free can tell an allocation from any other pointer.
 * The registry is guarded by `lock`; no backend call is made while holding it,
 * except the ones context destruction makes after the lists are detached.
 */
#ifndef PLUME_STREAMS_RUNTIME_H
#define PLUME_STREAMS_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <uthash.h>

#include "plume/context.h"
#include "plume/event.h"
#include "plume/stream.h"
#include "streams/backend.h"

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
};

struct plm_stream {
  plm_context *ctx;
  void *handle; /* the backend's stream */
  unsigned flags;
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

#endif /* PLUME_STREAMS_RUNTIME_H */

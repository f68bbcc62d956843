/* streams/context.c: contexts, backend selection, device information and the
 * synchronous device allocations (plume/context.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utlist.h>

#include "plume_build_config.h"
#include "streams/ascii.h"
#include "streams/error.h"
#include "streams/parallel.h"
#include "streams/runtime.h"

enum { DEVICE_ALIGNMENT = 256 };

const char *plm_backend_name(plm_backend backend) {
  switch (backend) {
    case PLM_BACKEND_AUTO: return "auto";
    case PLM_BACKEND_HOST: return "host";
    case PLM_BACKEND_CUDA: return "cuda";
  }
  return "unknown";
}

plm_status plm_backend_parse(const char *name, plm_backend *out) {
  PLM__REQUIRE_NOT_NULL(name);
  PLM__REQUIRE_NOT_NULL(out);
  static const plm_backend all[] = {PLM_BACKEND_AUTO, PLM_BACKEND_HOST, PLM_BACKEND_CUDA};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    if (plm__ascii_casecmp(name, plm_backend_name(all[i])) == 0) {
      *out = all[i];
      return PLM_OK;
    }
  }
  return plm__fail(PLM_ERR_INVALID_ARG, "backend '%s' is not host, cuda or auto", name);
}

plm_status plm_backend_device_count(plm_backend backend, int *count, const char **reason) {
  PLM__REQUIRE_NOT_NULL(count);
  const char *why = "";
  switch (backend) {
    case PLM_BACKEND_HOST: *count = 1; break;
    case PLM_BACKEND_CUDA: plm__cuda_device_count(count, &why); break;
    default: return plm__fail(PLM_ERR_INVALID_ARG, "backend %d is not host or cuda", (int)backend);
  }
  if (reason) *reason = why;
  return PLM_OK;
}

bool plm__cuda_auto_eligible(void) {
  if (PLM_BUILD_CUDA_EMULATED) return false;
  int cuda_devices = 0;
  const char *why = NULL;
  plm__cuda_device_count(&cuda_devices, &why);
  return cuda_devices > 0;
}

/* The backend AUTO stands for: PLUME_BACKEND if set, else cuda when a GPU is visible
 * (plm__cuda_auto_eligible), else host. */
static plm_status resolve_auto_backend(plm_backend *out) {
  const char *env = getenv("PLUME_BACKEND");
  if (env && *env) {
    plm_backend chosen;
    if (plm_backend_parse(env, &chosen) != PLM_OK)
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "environment variable PLUME_BACKEND='%s' is not host, cuda or auto",
                           env);
    if (chosen != PLM_BACKEND_AUTO) {
      *out = chosen;
      return PLM_OK;
    }
  }
  *out = plm__cuda_auto_eligible() ? PLM_BACKEND_CUDA : PLM_BACKEND_HOST;
  return PLM_OK;
}

static plm_status open_backend(plm_backend kind, int device, int host_threads,
                               const plm__backend_iface **iface, void **backend_ctx) {
  if (kind == PLM_BACKEND_HOST) {
    if (device != 0)
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "device %d is out of range: the host backend has one device (0)",
                           device);
    return plm__host_backend_open(host_threads, iface, backend_ctx);
  }
  return plm__cuda_backend_open(device, iface, backend_ctx);
}

plm_status plm_context_create(const plm_context_config *cfg, plm_context **out) {
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  plm_context_config config = {0};
  if (cfg) config = *cfg;
  if (config.backend != PLM_BACKEND_AUTO && config.backend != PLM_BACKEND_HOST &&
      config.backend != PLM_BACKEND_CUDA)
    return plm__fail(PLM_ERR_INVALID_ARG, "cfg->backend %d is not AUTO, HOST or CUDA",
                     (int)config.backend);
  if (config.device < 0)
    return plm__fail(PLM_ERR_INVALID_ARG, "cfg->device %d is negative", config.device);

  if (config.host_threads < 0)
    return plm__fail(PLM_ERR_INVALID_ARG, "cfg->host_threads %d is negative", config.host_threads);
  /* The process-wide pool's threads are the cores the host backend uses (started here
   * only when a budget is asked for). */
  if (config.host_threads > 0 && config.host_threads > plm__parallel_threads())
    return plm__fail(PLM_ERR_INVALID_ARG,
                     "cfg->host_threads %d is more than the %d cores the host backend uses",
                     config.host_threads, plm__parallel_threads());

  const plm_pool_upstream *host_up = config.host_upstream;
  if (host_up && (!host_up->alloc || !host_up->free))
    return plm__fail(PLM_ERR_INVALID_ARG, "cfg->host_upstream->%s is NULL",
                     host_up->alloc ? "free" : "alloc");

  plm_backend kind = config.backend;
  plm_status status = PLM_OK;
  if (kind == PLM_BACKEND_AUTO && (status = resolve_auto_backend(&kind)) != PLM_OK)
    return plm__propagate(status);

  plm_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory for the context");
  pthread_mutex_init(&ctx->lock, NULL);
  pthread_mutex_init(&ctx->lazy_lock, NULL);
  status = open_backend(kind, config.device, config.host_threads, &ctx->backend, &ctx->backend_ctx);
  if (status != PLM_OK) {
    pthread_mutex_destroy(&ctx->lazy_lock);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return plm__propagate(status);
  }
  ctx->backend->device_info(ctx->backend_ctx, &ctx->info);
  if (config.default_pool) {
    ctx->default_pool_config = *config.default_pool;
    if (config.default_pool->upstream) {
      ctx->default_upstream = *config.default_pool->upstream;
      ctx->default_pool_config.upstream = &ctx->default_upstream;
    }
  }
  if (host_up) ctx->host_upstream = *host_up;
  ctx->host_upstream_pinned = config.host_upstream_pinned != 0;
  *out = ctx;
  return PLM_OK;
}

/* Destroy every attachment (pools and pipelines, while streams still exist); count the
 * ones the application should have destroyed itself. */
static void destroy_attachments(plm_context *ctx, size_t *pools, size_t *pipelines) {
  ctx->backend->synchronize(ctx->backend_ctx);
  pthread_mutex_lock(&ctx->lock);
  plm__attachment *list = ctx->attachments;
  ctx->attachments = NULL;
  pthread_mutex_unlock(&ctx->lock);
  *pools = *pipelines = 0;
  plm__attachment *attachment, *next;
  DL_FOREACH_SAFE(list, attachment, next) {
    DL_DELETE(list, attachment);
    if (attachment->report_if_leftover) {
      if (strcmp(attachment->kind, "pipeline") == 0)
        (*pipelines)++;
      else
        (*pools)++;
    }
    attachment->destroy(attachment);
  }
}

/* Destroy what the application left alive; return how many of each there were. */
static void destroy_leftovers(plm_context *ctx, size_t *streams, size_t *events,
                              size_t *allocations) {
  pthread_mutex_lock(&ctx->lock);
  plm_stream *stream_list = ctx->streams;
  plm_event *event_list = ctx->events;
  plm__allocation *allocation_table = ctx->allocations;
  ctx->streams = NULL;
  ctx->events = NULL;
  ctx->allocations = NULL;
  pthread_mutex_unlock(&ctx->lock);

  *streams = *events = *allocations = 0;
  plm_stream *stream, *next_stream;
  DL_FOREACH_SAFE(stream_list, stream, next_stream) {
    /* A plm_stream_wrap stream: another library's is forgotten, never destroyed; one
     * sharing a plume host stream leaves it to that stream's own entry. */
    if (stream->adopted)
      ctx->backend->stream_forget(ctx->backend_ctx, stream->handle);
    else if (!stream->wraps)
      ctx->backend->stream_destroy(ctx->backend_ctx, stream->handle);
    free(stream);
    (*streams)++;
  }
  plm_event *event, *next_event;
  DL_FOREACH_SAFE(event_list, event, next_event) {
    ctx->backend->event_destroy(ctx->backend_ctx, event->handle);
    free(event);
    (*events)++;
  }
  plm__allocation *allocation, *next_allocation;
  HASH_ITER(hh, allocation_table, allocation, next_allocation) {
    HASH_DEL(allocation_table, allocation);
    ctx->backend->mem_free(ctx->backend_ctx, allocation->ptr);
    free(allocation);
    (*allocations)++;
  }
}

plm_status plm_context_destroy(plm_context *ctx) {
  if (!ctx) return PLM_OK;
  size_t pools, pipelines;
  destroy_attachments(ctx, &pools, &pipelines);
  size_t streams, events, allocations;
  destroy_leftovers(ctx, &streams, &events, &allocations);
  ctx->backend->close(ctx->backend_ctx);
  pthread_mutex_destroy(&ctx->lazy_lock);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
  if (pipelines > 0)
    return plm__fail(PLM_ERR_INVALID_STATE,
                     "the context still owned %zu pipeline(s), %zu stream(s), %zu event(s), %zu "
                     "device allocation(s) and %zu pool(s); they were destroyed with it",
                     pipelines, streams, events, allocations, pools);
  if (streams + events + allocations + pools > 0)
    return plm__fail(PLM_ERR_INVALID_STATE,
                     "the context still owned %zu stream(s), %zu event(s), %zu device "
                     "allocation(s) and %zu pool(s); they were destroyed with it",
                     streams, events, allocations, pools);
  return PLM_OK;
}

plm_status plm_context_backend(const plm_context *ctx, plm_backend *out) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(out);
  *out = ctx->backend->kind;
  return PLM_OK;
}

plm_status plm_context_synchronize(plm_context *ctx) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REFUSE_IN_HOST_CALLBACK();
  plm_status status = ctx->backend->synchronize(ctx->backend_ctx);
  return plm__propagate(status);
}

plm_status plm_context_device_info(plm_context *ctx, plm_device_info *out) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(out);
  *out = ctx->info;
  if (ctx->backend->memory_info) {
    uint64_t free_bytes = 0, total_bytes = 0;
    plm_status status = ctx->backend->memory_info(ctx->backend_ctx, &free_bytes, &total_bytes);
    if (status != PLM_OK) return plm__propagate(status);
    out->free_memory = free_bytes;
    if (total_bytes) out->total_memory = total_bytes;
  }
  return PLM_OK;
}

plm_status plm_device_alloc(plm_context *ctx, size_t bytes, void **ptr) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(ptr);
  *ptr = NULL;
  if (bytes == 0) return plm__fail(PLM_ERR_INVALID_ARG, "bytes is 0");
  if (bytes > SIZE_MAX - DEVICE_ALIGNMENT)
    return plm__fail(PLM_ERR_INVALID_ARG, "bytes %zu is too large to align to %d", bytes,
                     DEVICE_ALIGNMENT);
  plm__allocation *record = malloc(sizeof *record);
  if (!record) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory to track an allocation");
  void *memory = NULL;
  plm_status status = ctx->backend->mem_alloc(ctx->backend_ctx, bytes, &memory);
  if (status != PLM_OK) {
    free(record);
    return plm__propagate(status);
  }
  record->ptr = memory;
  record->bytes = bytes;
  pthread_mutex_lock(&ctx->lock);
  HASH_ADD_PTR(ctx->allocations, ptr, record);
  bool tracked = PLM__HASH_ADDED(record);
  pthread_mutex_unlock(&ctx->lock);
  if (!tracked) {
    ctx->backend->mem_free(ctx->backend_ctx, memory);
    free(record);
    return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory to track an allocation");
  }
  *ptr = memory;
  return PLM_OK;
}

plm_status plm_device_free(plm_context *ctx, void *ptr) {
  PLM__REQUIRE_NOT_NULL(ctx);
  if (!ptr) return PLM_OK;
  PLM__REFUSE_IN_HOST_CALLBACK();
  plm__allocation *record = NULL;
  pthread_mutex_lock(&ctx->lock);
  HASH_FIND_PTR(ctx->allocations, &ptr, record);
  if (record) HASH_DEL(ctx->allocations, record);
  pthread_mutex_unlock(&ctx->lock);
  if (!record)
    return plm__fail(PLM_ERR_NOT_FOUND,
                     "ptr %p is not a device allocation of this context (never allocated, "
                     "already freed, or an interior pointer)",
                     ptr);
  free(record);
  plm_status status = ctx->backend->mem_free(ctx->backend_ctx, ptr);
  return plm__propagate(status);
}

void plm__context_add_stream(plm_context *ctx, plm_stream *stream) {
  pthread_mutex_lock(&ctx->lock);
  DL_APPEND(ctx->streams, stream);
  pthread_mutex_unlock(&ctx->lock);
}

void plm__context_remove_stream(plm_context *ctx, plm_stream *stream) {
  pthread_mutex_lock(&ctx->lock);
  DL_DELETE(ctx->streams, stream);
  pthread_mutex_unlock(&ctx->lock);
}

void plm__context_add_event(plm_context *ctx, plm_event *event) {
  pthread_mutex_lock(&ctx->lock);
  DL_APPEND(ctx->events, event);
  pthread_mutex_unlock(&ctx->lock);
}

void plm__context_remove_event(plm_context *ctx, plm_event *event) {
  pthread_mutex_lock(&ctx->lock);
  DL_DELETE(ctx->events, event);
  pthread_mutex_unlock(&ctx->lock);
}

void plm__context_attach(plm_context *ctx, plm__attachment *attachment) {
  pthread_mutex_lock(&ctx->lock);
  DL_APPEND(ctx->attachments, attachment);
  pthread_mutex_unlock(&ctx->lock);
}

void plm__context_detach(plm_context *ctx, plm__attachment *attachment) {
  pthread_mutex_lock(&ctx->lock);
  DL_DELETE(ctx->attachments, attachment);
  pthread_mutex_unlock(&ctx->lock);
}

void plm__context_notify_stream_destroying(plm_context *ctx, plm_stream *stream) {
  pthread_mutex_lock(&ctx->lock);
  plm__attachment *attachment;
  DL_FOREACH(ctx->attachments, attachment) {
    if (attachment->stream_destroying) attachment->stream_destroying(attachment, stream);
  }
  pthread_mutex_unlock(&ctx->lock);
}

/* streams/stream.c: the public stream API (plume/stream.h). Checks every argument,
 * then hands the work to the context's backend. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <utlist.h>

#include "streams/error.h"
#include "streams/runtime.h"

enum { KNOWN_STREAM_FLAGS = PLM_STREAM_PRIORITY_HIGH | PLM_STREAM_PRIORITY_LOW };

/* A range [ptr, ptr + bytes) that does not fit in the address space. */
static bool range_wraps(const void *ptr, size_t bytes) {
  return (uintptr_t)ptr > UINTPTR_MAX - bytes;
}

static bool ranges_overlap(const void *a, const void *b, size_t bytes) {
  uintptr_t lo_a = (uintptr_t)a, lo_b = (uintptr_t)b;
  return lo_a < lo_b + bytes && lo_b < lo_a + bytes;
}

plm_status plm_stream_create(plm_context *ctx, unsigned flags, plm_stream **out) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  if (flags & ~(unsigned)KNOWN_STREAM_FLAGS)
    return plm__fail(PLM_ERR_INVALID_ARG, "flags 0x%x has unknown bits", flags);
  if ((flags & PLM_STREAM_PRIORITY_HIGH) && (flags & PLM_STREAM_PRIORITY_LOW))
    return plm__fail(PLM_ERR_INVALID_ARG, "flags 0x%x asks for both high and low priority", flags);
  plm_stream *stream = calloc(1, sizeof *stream);
  if (!stream) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory for a stream");
  plm_status status = ctx->backend->stream_create(ctx->backend_ctx, flags, &stream->handle);
  if (status != PLM_OK) {
    free(stream);
    return plm__propagate(status);
  }
  stream->ctx = ctx;
  stream->flags = flags;
  plm__context_add_stream(ctx, stream);
  *out = stream;
  return PLM_OK;
}

/* The live stream of ctx that native names (a plm_stream *), or NULL. */
static plm_stream *find_stream(plm_context *ctx, const void *native) {
  plm_stream *found = NULL, *s;
  pthread_mutex_lock(&ctx->lock);
  DL_FOREACH(ctx->streams, s) {
    if (s == native && !s->destroying) found = s;
  }
  if (found && found->wraps && found->wraps->destroying) found = NULL;
  if (found) {
    if (found->wraps) found = found->wraps; /* a wrapper of a wrapper shares the first */
    found->wrappers++;
  }
  pthread_mutex_unlock(&ctx->lock);
  return found;
}

plm_status plm_stream_wrap(plm_context *ctx, void *native, plm_stream **out) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  PLM__REFUSE_IN_HOST_CALLBACK();
  plm_stream *stream = calloc(1, sizeof *stream);
  if (!stream) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory for a stream");
  if (ctx->backend->stream_adopt) {
    plm_status status = ctx->backend->stream_adopt(ctx->backend_ctx, native, &stream->handle);
    if (status != PLM_OK) {
      free(stream);
      return plm__propagate(status);
    }
    stream->adopted = true;
  } else {
    plm_stream *shared = native ? find_stream(ctx, native) : NULL;
    if (!shared) {
      free(stream);
      return plm__fail(PLM_ERR_INVALID_ARG,
                       "native %s: on the %s backend it must be a plm_stream * of this "
                       "context (its streams are plume's own worker threads)",
                       native ? "is not a stream of this context" : "is NULL",
                       plm_backend_name(ctx->backend->kind));
    }
    stream->wraps = shared;
    stream->handle = shared->handle;
  }
  stream->ctx = ctx;
  plm__context_add_stream(ctx, stream);
  *out = stream;
  return PLM_OK;
}

plm_status plm_stream_destroy(plm_stream *stream) {
  if (!stream) return PLM_OK;
  PLM__REFUSE_IN_HOST_CALLBACK();
  plm_context *ctx = stream->ctx;
  pthread_mutex_lock(&ctx->lock);
  int wrappers = stream->wrappers;
  if (wrappers == 0) stream->destroying = true; /* plm_stream_wrap passes it over now */
  pthread_mutex_unlock(&ctx->lock);
  if (wrappers > 0)
    return plm__fail(PLM_ERR_INVALID_STATE,
                     "%d plm_stream_wrap stream(s) share this stream; destroy them first",
                     wrappers);
  /* Drain first, holding no lock, so the hooks below find the stream idle and the
   * context's registry is not held while work runs. */
  ctx->backend->stream_synchronize(ctx->backend_ctx, stream->handle);
  plm__context_notify_stream_destroying(ctx, stream);
  plm__context_remove_stream(ctx, stream);
  plm_status status = PLM_OK;
  if (stream->adopted) {
    status = ctx->backend->stream_forget(ctx->backend_ctx, stream->handle);
  } else if (stream->wraps) {
    pthread_mutex_lock(&ctx->lock);
    stream->wraps->wrappers--;
    pthread_mutex_unlock(&ctx->lock);
  } else {
    status = ctx->backend->stream_destroy(ctx->backend_ctx, stream->handle);
  }
  free(stream);
  return plm__propagate(status);
}

plm_status plm_stream_synchronize(plm_stream *stream) {
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REFUSE_IN_HOST_CALLBACK();
  plm_context *ctx = stream->ctx;
  plm_status status = ctx->backend->stream_synchronize(ctx->backend_ctx, stream->handle);
  return plm__propagate(status);
}

plm_status plm_stream_query(plm_stream *stream, bool *finished) {
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REQUIRE_NOT_NULL(finished);
  plm_context *ctx = stream->ctx;
  plm_status status = ctx->backend->stream_query(ctx->backend_ctx, stream->handle, finished);
  return plm__propagate(status);
}

plm_status plm_stream_context(const plm_stream *stream, plm_context **out) {
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REQUIRE_NOT_NULL(out);
  *out = stream->ctx;
  return PLM_OK;
}

plm_status plm_stream_flags(const plm_stream *stream, unsigned *out) {
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REQUIRE_NOT_NULL(out);
  *out = stream->flags;
  return PLM_OK;
}

plm_status plm_stream_native_handle(const plm_stream *stream, void **native) {
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REQUIRE_NOT_NULL(native);
  *native = NULL;
  if (stream->ctx->backend->kind != PLM_BACKEND_CUDA)
    return plm__fail(PLM_ERR_UNSUPPORTED, "a %s stream has no native handle (cuda streams do)",
                     plm_backend_name(stream->ctx->backend->kind));
  *native = stream->handle;
  return PLM_OK;
}

plm_status plm_stream_memcpy(plm_stream *stream, void *dst, const void *src, size_t bytes,
                             plm_copy_kind kind) {
  PLM__REQUIRE_NOT_NULL(stream);
  if (kind != PLM_COPY_HOST_TO_DEVICE && kind != PLM_COPY_DEVICE_TO_HOST &&
      kind != PLM_COPY_DEVICE_TO_DEVICE)
    return plm__fail(PLM_ERR_INVALID_ARG, "kind %d is not a plm_copy_kind", (int)kind);
  if (bytes == 0) return PLM_OK;
  PLM__REQUIRE_NOT_NULL(dst);
  PLM__REQUIRE_NOT_NULL(src);
  if (range_wraps(dst, bytes) || range_wraps(src, bytes))
    return plm__fail(PLM_ERR_INVALID_ARG, "bytes %zu runs past the end of the address space",
                     bytes);
  if (ranges_overlap(dst, src, bytes))
    return plm__fail(PLM_ERR_INVALID_ARG, "dst %p and src %p overlap over %zu bytes", dst, src,
                     bytes);
  plm_context *ctx = stream->ctx;
  plm_status status =
      ctx->backend->stream_memcpy(ctx->backend_ctx, stream->handle, dst, src, bytes, kind);
  return plm__propagate(status);
}

plm_status plm_stream_memset(plm_stream *stream, void *dst, int value, size_t bytes) {
  PLM__REQUIRE_NOT_NULL(stream);
  if (bytes == 0) return PLM_OK;
  PLM__REQUIRE_NOT_NULL(dst);
  if (range_wraps(dst, bytes))
    return plm__fail(PLM_ERR_INVALID_ARG, "bytes %zu runs past the end of the address space",
                     bytes);
  plm_context *ctx = stream->ctx;
  plm_status status =
      ctx->backend->stream_memset(ctx->backend_ctx, stream->handle, dst, value, bytes);
  return plm__propagate(status);
}

plm_status plm_stream_enqueue_host(plm_stream *stream, plm_host_fn fn, void *user) {
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REQUIRE_NOT_NULL(fn);
  plm_context *ctx = stream->ctx;
  plm_status status = ctx->backend->stream_enqueue_host(ctx->backend_ctx, stream->handle, fn, user);
  return plm__propagate(status);
}

plm_status plm_stream_wait_event(plm_stream *stream, plm_event *event) {
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REQUIRE_NOT_NULL(event);
  if (event->ctx != stream->ctx)
    return plm__fail(PLM_ERR_INVALID_ARG, "event belongs to another context than stream");
  plm_context *ctx = stream->ctx;
  plm_status status =
      ctx->backend->stream_wait_event(ctx->backend_ctx, stream->handle, event->handle);
  return plm__propagate(status);
}

plm_status plm__stream_launch_host_kernel(plm_stream *stream, void (*fn)(const void *args),
                                          const void *args, size_t args_size) {
  plm_context *ctx = stream->ctx;
  if (!ctx->backend->stream_launch_host_kernel)
    return plm__fail_raw(PLM_ERR_UNSUPPORTED, "the %s backend runs no CPU kernels",
                         plm_backend_name(ctx->backend->kind));
  return ctx->backend->stream_launch_host_kernel(ctx->backend_ctx, stream->handle, fn, args,
                                                 args_size);
}

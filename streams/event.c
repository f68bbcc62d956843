/* streams/event.c: the public event API (plume/event.h). Checks every argument,
 * then hands the work to the context's backend. */
#include <stdlib.h>

#include "streams/error.h"
#include "streams/runtime.h"

enum { KNOWN_EVENT_FLAGS = PLM_EVENT_DISABLE_TIMING | PLM_EVENT_BLOCKING_SYNC };

plm_status plm_event_create(plm_context *ctx, unsigned flags, plm_event **out) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  if (flags & ~(unsigned)KNOWN_EVENT_FLAGS)
    return plm__fail(PLM_ERR_INVALID_ARG, "flags 0x%x has unknown bits", flags);
  plm_event *event = calloc(1, sizeof *event);
  if (!event) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory for an event");
  plm_status status = ctx->backend->event_create(ctx->backend_ctx, flags, &event->handle);
  if (status != PLM_OK) {
    free(event);
    return plm__propagate(status);
  }
  event->ctx = ctx;
  event->flags = flags;
  atomic_init(&event->recorded, false);
  plm__context_add_event(ctx, event);
  *out = event;
  return PLM_OK;
}

plm_status plm_event_destroy(plm_event *event) {
  if (!event) return PLM_OK;
  plm_context *ctx = event->ctx;
  plm__context_remove_event(ctx, event);
  ctx->backend->event_destroy(ctx->backend_ctx, event->handle);
  free(event);
  return PLM_OK;
}

plm_status plm_event_record(plm_event *event, plm_stream *stream) {
  PLM__REQUIRE_NOT_NULL(event);
  PLM__REQUIRE_NOT_NULL(stream);
  if (event->ctx != stream->ctx)
    return plm__fail(PLM_ERR_INVALID_ARG, "event belongs to another context than stream");
  plm_context *ctx = event->ctx;
  plm_status status = ctx->backend->event_record(ctx->backend_ctx, event->handle, stream->handle);
  if (status != PLM_OK) return plm__propagate(status);
  atomic_store(&event->recorded, true);
  return PLM_OK;
}

plm_status plm_event_query(plm_event *event, bool *complete) {
  PLM__REQUIRE_NOT_NULL(event);
  PLM__REQUIRE_NOT_NULL(complete);
  plm_context *ctx = event->ctx;
  plm_status status = ctx->backend->event_query(ctx->backend_ctx, event->handle, complete);
  return plm__propagate(status);
}

plm_status plm_event_synchronize(plm_event *event) {
  PLM__REQUIRE_NOT_NULL(event);
  PLM__REFUSE_IN_HOST_CALLBACK();
  plm_context *ctx = event->ctx;
  plm_status status = ctx->backend->event_synchronize(ctx->backend_ctx, event->handle);
  return plm__propagate(status);
}

static plm_status check_timed_and_recorded(const plm_event *event, const char *name) {
  if (event->flags & PLM_EVENT_DISABLE_TIMING)
    return plm__fail_raw(PLM_ERR_INVALID_STATE,
                         "%s was created with PLM_EVENT_DISABLE_TIMING and has no timestamp", name);
  if (!atomic_load(&event->recorded))
    return plm__fail_raw(PLM_ERR_INVALID_STATE, "%s was never recorded", name);
  return PLM_OK;
}

plm_status plm_event_elapsed_ms(plm_event *start, plm_event *end, float *ms) {
  PLM__REQUIRE_NOT_NULL(start);
  PLM__REQUIRE_NOT_NULL(end);
  PLM__REQUIRE_NOT_NULL(ms);
  if (start->ctx != end->ctx)
    return plm__fail(PLM_ERR_INVALID_ARG, "start and end belong to different contexts");
  plm_status status = check_timed_and_recorded(start, "start");
  if (status == PLM_OK) status = check_timed_and_recorded(end, "end");
  plm_context *ctx = start->ctx;
  if (status == PLM_OK)
    status = ctx->backend->event_elapsed_ms(ctx->backend_ctx, start->handle, end->handle, ms);
  return plm__propagate(status);
}

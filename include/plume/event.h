/* plume/event.h: events, for ordering work across streams and timing it.
 *
 * An event marks a point in a stream. plm_event_record captures all work enqueued
 * on the stream so far; the event completes when that work has finished. Recording
 * again replaces the captured point for later queries and waits; waits already
 * enqueued keep the point they captured (CUDA semantics). An event never recorded
 * counts as complete.
 *
 * Thread safety: every function here is thread-safe. An event must not be
 * destroyed while another thread is still using it; destroying an event whose
 * recorded work is still pending is allowed (pending waits on it are unaffected).
 */
#ifndef PLUME_EVENT_H
#define PLUME_EVENT_H

#include <stdbool.h>

#include "plume/context.h"
#include "plume/export.h"
#include "plume/status.h"
#include "plume/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Event creation flags. */
enum {
  PLM_EVENT_DEFAULT = 0,
  /* No timestamps: cheaper to record; plm_event_elapsed_ms refuses such events. */
  PLM_EVENT_DISABLE_TIMING = 1u << 0,
  /* plm_event_synchronize sleeps instead of spinning (cuda; host always sleeps). */
  PLM_EVENT_BLOCKING_SYNC = 1u << 1
};

/* Create an event. Errors: PLM_ERR_INVALID_ARG (ctx or out NULL, unknown flags). */
PLM_API plm_status plm_event_create(plm_context *ctx, unsigned flags, plm_event **out);

/* Destroy an event. Does not block. NULL is a no-op. */
PLM_API plm_status plm_event_destroy(plm_event *event);

/* Capture the work enqueued on stream so far. Asynchronous. Errors:
 * PLM_ERR_INVALID_ARG (NULL event or stream, different contexts). */
PLM_API plm_status plm_event_record(plm_event *event, plm_stream *stream);

/* Set *complete to whether the captured work has finished. Never blocks. */
PLM_API plm_status plm_event_query(plm_event *event, bool *complete);

/* Block until the captured work has finished. */
PLM_API plm_status plm_event_synchronize(plm_event *event);

/* Milliseconds between two completed events (end − start; may be negative when
 * end ran first). Does not block. Errors: PLM_ERR_INVALID_ARG (NULL, different
 * contexts), PLM_ERR_INVALID_STATE (an event never recorded or created with
 * PLM_EVENT_DISABLE_TIMING), PLM_ERR_NOT_READY (an event not yet complete).
 * Resolution: about 0.5 µs on cuda, 1 µs on host. */
PLM_API plm_status plm_event_elapsed_ms(plm_event *start, plm_event *end, float *ms);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_EVENT_H */

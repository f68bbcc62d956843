/* streams/stream_graph.c: graph capture and replay over the backend's optional entries. */
#include "streams/stream_graph.h"

#include <stdlib.h>

#include "streams/error.h"
#include "streams/runtime.h"

struct plm__stream_graph {
  plm_context *ctx;
  void *handle; /* the backend's executable graph */
};

bool plm__stream_graph_supported(const plm_context *ctx) {
  return ctx && ctx->backend->stream_capture_begin && ctx->backend->stream_capture_end &&
         ctx->backend->graph_launch && ctx->backend->graph_destroy;
}

plm_status plm__stream_graph_capture_begin(plm_stream *stream) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm_context *ctx = stream->ctx;
  if (!plm__stream_graph_supported(ctx))
    return plm__fail(PLM_ERR_UNSUPPORTED, "the %s backend cannot capture graphs",
                     plm_backend_name(ctx->backend->kind));
  return plm__propagate(ctx->backend->stream_capture_begin(ctx->backend_ctx, stream->handle));
}

plm_status plm__stream_graph_capture_end(plm_stream *stream, plm__stream_graph **graph) {
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REQUIRE_NOT_NULL(graph);
  *graph = NULL;
  plm_context *ctx = stream->ctx;
  if (!plm__stream_graph_supported(ctx))
    return plm__fail(PLM_ERR_UNSUPPORTED, "the %s backend cannot capture graphs",
                     plm_backend_name(ctx->backend->kind));
  plm__stream_graph *made = calloc(1, sizeof *made);
  void *handle = NULL;
  plm_status status = ctx->backend->stream_capture_end(ctx->backend_ctx, stream->handle, &handle);
  if (status != PLM_OK) {
    free(made);
    return plm__propagate(status);
  }
  if (!made) {
    ctx->backend->graph_destroy(ctx->backend_ctx, handle);
    return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory for a graph");
  }
  made->ctx = ctx;
  made->handle = handle;
  *graph = made;
  return PLM_OK;
}

plm_status plm__stream_graph_launch(plm__stream_graph *graph, plm_stream *stream) {
  PLM__REQUIRE_NOT_NULL(graph);
  PLM__REQUIRE_NOT_NULL(stream);
  if (stream->ctx != graph->ctx)
    return plm__fail(PLM_ERR_INVALID_ARG, "stream belongs to another context than graph");
  plm_context *ctx = graph->ctx;
  return plm__propagate(
      ctx->backend->graph_launch(ctx->backend_ctx, graph->handle, stream->handle));
}

void plm__stream_graph_destroy(plm__stream_graph *graph) {
  if (!graph) return;
  graph->ctx->backend->graph_destroy(graph->ctx->backend_ctx, graph->handle);
  free(graph);
}

plm_status plm__event_record_across_graphs(plm_event *event, plm_stream *stream) {
  PLM__REQUIRE_NOT_NULL(event);
  PLM__REQUIRE_NOT_NULL(stream);
  plm_context *ctx = stream->ctx;
  if (!ctx->backend->event_record_external || event->ctx != ctx)
    return plm_event_record(event, stream);
  plm_status status =
      ctx->backend->event_record_external(ctx->backend_ctx, event->handle, stream->handle);
  if (status != PLM_OK) return plm__propagate(status);
  atomic_store(&event->recorded, true);
  return PLM_OK;
}

plm_status plm__stream_wait_event_across_graphs(plm_stream *stream, plm_event *event) {
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REQUIRE_NOT_NULL(event);
  plm_context *ctx = stream->ctx;
  if (!ctx->backend->stream_wait_event_external || event->ctx != ctx)
    return plm_stream_wait_event(stream, event);
  return plm__propagate(
      ctx->backend->stream_wait_event_external(ctx->backend_ctx, stream->handle, event->handle));
}

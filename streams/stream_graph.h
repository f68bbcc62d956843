/* streams/stream_graph.h: recording the work enqueued on a stream once and replaying it
 * (internal; CUDA graphs on the cuda backend).
 *
 * Between plm__stream_graph_capture_begin(s) and plm__stream_graph_capture_end(s), work enqueued
 * on s, and on other streams that wait on events recorded in s during the capture
 * (fork and join), is recorded instead of run. The graph replays exactly that work
 * with the same pointers and arguments, so whatever it touches must stay where it
 * was: pipelines capture a plan whose buffers are fixed, never work that allocates
 * from a pool (a pool records and queries events, which capture forbids).
 *
 * Every capture_begin that succeeded must be followed by capture_end on the same
 * stream, even when enqueueing failed in between (it then fails too, and the stream
 * leaves capture mode). Host functions (plm_stream_enqueue_host) can be captured;
 * synchronising calls on a capturing stream fail.
 *
 * Thread safety: a graph may be launched from any thread; one stream is captured by
 * one thread at a time. plm__stream_graph_destroy must not race with a launch of the same
 * graph; replays already enqueued finish first.
 */
#ifndef PLUME_STREAMS_STREAM_GRAPH_H
#define PLUME_STREAMS_STREAM_GRAPH_H

#include <stdbool.h>

#include "plume/context.h"
#include "plume/status.h"
#include "plume/stream.h"

typedef struct plm__stream_graph plm__stream_graph;

/* Whether ctx's backend can capture graphs (cuda: yes; host: no). */
bool plm__stream_graph_supported(const plm_context *ctx);

/* Start recording stream. PLM_ERR_UNSUPPORTED on a backend without graphs. */
plm_status plm__stream_graph_capture_begin(plm_stream *stream);

/* Stop recording stream and make the recording an executable graph in *graph. */
plm_status plm__stream_graph_capture_end(plm_stream *stream, plm__stream_graph **graph);

/* Enqueue one replay of graph on stream (of the graph's context); asynchronous. */
plm_status plm__stream_graph_launch(plm__stream_graph *graph, plm_stream *stream);

/* Release graph; NULL is a no-op. */
void plm__stream_graph_destroy(plm__stream_graph *graph);

/* plm_event_record and plm_stream_wait_event for an event that orders a graph's work
 * after work outside the graph, or work outside after it: captured, they become event
 * nodes that record or wait at each replay (an external event node on cuda), where the
 * plain calls would join the event's stream into the capture. Outside a capture, and on
 * backends without graphs, they are the plain calls. */
plm_status plm__event_record_across_graphs(plm_event *event, plm_stream *stream);
plm_status plm__stream_wait_event_across_graphs(plm_stream *stream, plm_event *event);

#endif /* PLUME_STREAMS_STREAM_GRAPH_H */

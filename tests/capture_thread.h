/* tests/capture_thread.h: a stream captured into a graph on a thread of its own, between
 * two gates (tests/gate.h), so that a test can act while the capture is open.
 *
 * capture_between_gates (a pthread start routine) begins capturing run->stream, opens
 * run->begun, and, if the capture began, waits for run->may_end and ends it into
 * run->graph, keeping the status (run->begin, run->end) and plm_last_error() at the end
 * (run->end_message). Needs the internal streams/stream_graph.h: the test's target adds
 * the project's root to its include path. */
#ifndef PLUME_TESTS_CAPTURE_THREAD_H
#define PLUME_TESTS_CAPTURE_THREAD_H

#include <stdio.h>

#include "gate.h"
#include "plume/plume.h"
#include "streams/stream_graph.h"

typedef struct capture_run {
  plm_stream *stream;
  gate begun, may_end;
  plm_status begin, end;
  char end_message[256];
  plm__stream_graph *graph;
} capture_run;

static inline void *capture_between_gates(void *arg) {
  capture_run *run = arg;
  run->begin = plm__stream_graph_capture_begin(run->stream);
  gate_open(&run->begun);
  if (run->begin != PLM_OK) return NULL;
  (void)gate_wait(&run->may_end);
  run->end = plm__stream_graph_capture_end(run->stream, &run->graph);
  snprintf(run->end_message, sizeof run->end_message, "%s", plm_last_error());
  return NULL;
}

#endif /* PLUME_TESTS_CAPTURE_THREAD_H */

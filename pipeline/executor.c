/* pipeline/executor.c: streaming frames through a compiled pipeline
 * (plm_pipeline_run_stream; the contract is in plume/pipeline.h, frame slots in
 * pipeline/pipeline_internal.h, the ring of pinned inputs in pipeline/source_ring.h).
 *
 * K = the plan's frames in flight. Slot s (frame k with k mod K = s) owns a stream,
 * device tensors for the pipeline's inputs and outputs, pinned host buffers for the
 * outputs, four timing events and, once captured, a graph of its plan; the plan's
 * runtime slot s (workspace, branch streams, events) is the pipeline's. Frame k's pinned
 * inputs are set k mod (K + N) of the source ring, N = source_ahead. Frame k on slot s:
 *
 *   take its inputs from the ring -> upload -> plan (or its graph) -> download -> done
 *
 * Taking calls the source on this thread (N = 0) or waits until the source's thread has
 * filled the frame (N > 0; it usually has, up to N frames ahead), so with N > 0 the
 * calling thread's time per frame is the enqueueing and the sink, not the source's copy.
 * The report keeps the two apart: source_* is the take, submit_* the enqueueing.
 *
 * Only `done` is recorded on every frame (the host waits for it before reusing the slot);
 * the three other timing events are recorded with record_timing alone, so a run without
 * it spends no event records per frame on figures nobody asked for.
 *
 * Before slot s takes frame k, the host waits for frame k - K (the slot's previous
 * frame), hands it to the sink and releases its ring set (its upload is complete), so
 * frames reach the sink in order, each once, a slot's buffers are never overwritten
 * while in use, and the source refills a set only after its frame's upload. Meanwhile
 * frames k - K + 1 ... k - 1 are queued on the other slots' streams: the upload of one
 * frame overlaps the compute of the previous one and the download of the one before. A
 * slow sink holds the loop, which is the back-pressure: at most K frames are queued
 * (and N more filled by the source).
 *
 * Graphs: a slot's work is captured after its first frame (the warm-up), and only when
 * every step takes its memory from the workspace (plm__pipeline_capturable): a step
 * that allocates from a pool would bake one allocation's address into every replay.
 * Without record_timing and a profiler (whose marks go between the copies and the
 * plan) the whole frame is captured: upload, plan and download, so a frame costs the
 * host one graph launch and the `done` record. Such a graph bakes in the pinned inputs'
 * addresses, which are the frame's ring entry, so a slot keeps one graph per entry it
 * meets (R / K of them when R = K + N is a multiple of K, at most R), each captured on
 * its first use. With timing or a profiler only the plan is captured, one graph per
 * slot, and the copies and marks are enqueued around its launch.
 *
 * Batches (options->batch N >= 2; pipeline/batch.c): the loop's unit is a batch of N
 * frames, the pipeline's inputs and outputs stacks of them. Everything above holds with
 * "frame" read as "unit" (slots, ring entries, graphs, the sink's order), but that the
 * ring's source is gather_unit, which calls the user's source for the unit's frames into
 * their places in the stacks, and that retiring a unit hands its frames to the sink one
 * by one. A unit holds n <= N frames (unit_frames, per ring entry); a short one runs as an
 * n-frame stack (plm__pipeline_enqueue_frames) without graphs. Reports and messages name
 * frames: failed_frame is a frame, failed_unit the unit drain_frames stops before.
 *
 * State (pipeline_internal.h): a stateful step's wait for the previous frame's update and
 * the record of its own are captured as external event nodes. Frame k's previous frame
 * is always on slot (k - 1) mod K, so a slot's graphs wait on the right event at every
 * replay; after each launch the pipeline's order of updates moves on to the slot
 * (plm__pipeline_state_replayed), and a failed capture puts it back.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline_internal.h"
#include "pipeline/source_ring.h"
#include "profile/stats.h"
#include "streams/clock.h"
#include "streams/nvtx.h"
#include "streams/error.h"
#include "streams/stream_graph.h"

enum { TIMING_POINTS = 4 }; /* upload start, upload end, compute end, download end */

typedef struct frame_slot {
  plm_stream *stream;
  plm_tensor *inputs, *outputs; /* device memory, fixed for the run */
  void **host_outputs;          /* pinned host memory (plm_host_alloc) */
  plm_event *started, *uploaded, *computed, *done;
  plm__stream_graph **graphs; /* graph_keys of them (graph_of), NULL until captured */
  int64_t frame;              /* the frame in flight here, -1 when none */
  double taken_s;             /* when its inputs were taken from the ring (for latency) */
} frame_slot;

/* A growing list of one figure per frame, for its p50 and p99. */
typedef struct sample_series {
  float *values;
  size_t count, capacity;
} sample_series;

typedef struct frame_run {
  plm_pipeline *pl;
  int slots_count, inputs_count, outputs_count;
  plm_shape *input_shapes, *output_shapes;
  size_t *input_bytes, *output_bytes;
  frame_slot *slots;
  plm__source_ring ring; /* the frames' pinned inputs, filled by the source */
  plm_event *origin;     /* every timing point is measured from it */
  plm_frame_source_fn source;
  plm_frame_sink_fn sink; /* NULL: the results are discarded */
  void *user;
  const plm_run_stream_options *options;
  plm_run_stream_report *report;
  bool graphs_wanted, graphs_refused;
  bool whole_frame_graphs; /* graphs hold the copies too (see the top of the file) */
  int graph_keys;          /* graphs per slot: the ring's entries, or 1 */
  /* Batches (options->batch N >= 2, batch.c): the loop's units are batches of N frames,
   * unit u holding frames u N .. u N + n - 1; with N = 1 a unit is a frame. */
  int batch;                   /* N, 1 without batching */
  int64_t *unit_frames;        /* per ring entry: the frames n its unit holds */
  size_t *input_frame_bytes;   /* per input: one frame's bytes (input_bytes / N) */
  size_t *output_frame_bytes;  /* per output, likewise */
  const void **frame_outputs;  /* the sink's outputs: one frame of each output's stack */
  void **gathered;             /* the source's inputs: one frame of each input's stack */
  bool source_ended;           /* the source set end (batches: gather_unit) */
  plm_status source_failure;   /* the source failed after gathering part of a unit */
  char source_message[1024];   /* ... with this message */
  int64_t source_failed_frame; /* the frame whose source call failed */
  int64_t failed_unit;         /* the unit that failed (drain_frames delivers those before) */
  int64_t failed_frame;        /* the frame reported (report->failed_frame) */
  sample_series latency_ms;    /* per delivered unit */
  sample_series source_us;     /* per taken frame: the host's wait for its inputs */
  sample_series submit_us;     /* per submitted frame: the host's enqueue time */
  double *timings;             /* TIMING_POINTS per delivered frame, ms after origin */
  size_t timed_frames, timed_capacity;
} frame_run;

/* ---- set-up and tear-down ---------------------------------------------------------------- */

/* Device tensors of the given shapes, zeroed once, and, when host is not NULL, pinned host
 * buffers of their sizes. Zeroed because an output may be written in part (a regions table
 * past its count: plume/label.h) and is downloaded whole: its other bytes are then zeros or
 * an earlier frame's, never memory nothing wrote (compute-sanitizer's initcheck reported
 * such downloads on the first H200 run). */
static plm_status alloc_io(frame_run *run, int count, const plm_shape *shapes, plm_stream *stream,
                           plm_tensor *device, void **host) {
  plm_status status = PLM_OK;
  for (int i = 0; status == PLM_OK && i < count; i++) {
    status = plm_tensor_alloc(run->pl->pool, stream, shapes[i].dtype, shapes[i].ndim,
                              shapes[i].dims, &device[i]);
    if (status == PLM_OK)
      status = plm_stream_memset(stream, device[i].data, 0, plm_tensor_bytes(&device[i]));
    if (status == PLM_OK && host)
      status = plm_host_alloc(run->pl->ctx, plm_tensor_bytes(&device[i]), &host[i]);
  }
  return status;
}

/* A slot's stream, events and buffers. Its frames' pinned inputs are the ring's. */
static plm_status slot_open(frame_run *run, frame_slot *slot) {
  slot->frame = -1;
  slot->inputs = calloc((size_t)run->inputs_count, sizeof *slot->inputs);
  slot->outputs = calloc((size_t)run->outputs_count, sizeof *slot->outputs);
  slot->host_outputs = calloc((size_t)run->outputs_count, sizeof *slot->host_outputs);
  slot->graphs = calloc((size_t)run->graph_keys, sizeof *slot->graphs);
  if (!slot->inputs || !slot->outputs || !slot->host_outputs || !slot->graphs)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a frame slot");
  plm_status status = plm_stream_create(run->pl->ctx, 0, &slot->stream);
  plm_event **events[] = {&slot->started, &slot->uploaded, &slot->computed, &slot->done};
  for (size_t e = 0; status == PLM_OK && e < TIMING_POINTS; e++)
    status = plm_event_create(run->pl->ctx, 0, events[e]);
  if (status == PLM_OK)
    status = alloc_io(run, run->inputs_count, run->input_shapes, slot->stream, slot->inputs, NULL);
  if (status == PLM_OK)
    status = alloc_io(run, run->outputs_count, run->output_shapes, slot->stream, slot->outputs,
                      slot->host_outputs);
  return status;
}

/* Release whatever slot_open made; the slot's work has finished. */
static void slot_close(frame_run *run, frame_slot *slot) {
  for (int k = 0; slot->graphs && k < run->graph_keys; k++)
    plm__stream_graph_destroy(slot->graphs[k]);
  free(slot->graphs);
  for (int i = 0; slot->inputs && i < run->inputs_count; i++)
    if (slot->inputs[i].data) plm_tensor_free(run->pl->pool, slot->stream, &slot->inputs[i]);
  for (int i = 0; slot->outputs && i < run->outputs_count; i++)
    if (slot->outputs[i].data) plm_tensor_free(run->pl->pool, slot->stream, &slot->outputs[i]);
  for (int i = 0; slot->host_outputs && i < run->outputs_count; i++)
    if (slot->host_outputs[i]) plm_host_free(run->pl->ctx, slot->host_outputs[i]);
  plm_event *events[] = {slot->started, slot->uploaded, slot->computed, slot->done};
  for (size_t e = 0; e < TIMING_POINTS; e++)
    if (events[e]) plm_event_destroy(events[e]);
  if (slot->stream) plm_stream_destroy(slot->stream);
  free(slot->inputs);
  free(slot->outputs);
  free(slot->host_outputs);
  memset(slot, 0, sizeof *slot);
}

/* The pipeline's inputs and outputs: shapes and bytes. */
static plm_status read_io(frame_run *run) {
  run->inputs_count = run->pl->graph.input_count;
  run->outputs_count = run->pl->graph.output_count;
  run->input_shapes = calloc((size_t)run->inputs_count, sizeof *run->input_shapes);
  run->output_shapes = calloc((size_t)run->outputs_count, sizeof *run->output_shapes);
  run->input_bytes = calloc((size_t)run->inputs_count, sizeof *run->input_bytes);
  run->output_bytes = calloc((size_t)run->outputs_count, sizeof *run->output_bytes);
  if (!run->input_shapes || !run->output_shapes || !run->input_bytes || !run->output_bytes)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the run");
  plm_status status = PLM_OK;
  for (int i = 0; status == PLM_OK && i < run->inputs_count; i++) {
    status = plm_pipeline_input_shape(run->pl, i, &run->input_shapes[i]);
    run->input_bytes[i] = run->pl->graph.tensors[run->pl->graph.inputs[i]].bytes;
  }
  for (int i = 0; status == PLM_OK && i < run->outputs_count; i++) {
    status = plm_pipeline_output_shape(run->pl, i, &run->output_shapes[i]);
    run->output_bytes[i] = run->pl->graph.tensors[run->pl->graph.outputs[i]].bytes;
  }
  return status;
}

/* A unit's first frame. */
static int64_t first_frame(const frame_run *run, int64_t unit) {
  return unit * run->batch;
}

/* The frames unit `unit` holds (its ring entry's count). */
static int64_t frames_of(const frame_run *run, int64_t unit) {
  return run->batch == 1 ? 1
                         : run->unit_frames[unit % (run->slots_count + run->options->source_ahead)];
}

/* The ring's source for batches: the user's source called for the unit's frames, each
 * into its place in the stacks, in order, until the batch is full, the source ends or
 * fails, or max_frames is reached. A unit holds at least one frame; the rest of its
 * stacks is zeroed (a short batch runs as a stack of its frames alone, batch.c). A
 * failure after some frames were gathered is kept for the next unit, so those frames are
 * run and delivered first. Runs on the source's thread when source_ahead > 0: the ring
 * orders what it writes before the taker reads it. */
static plm_status gather_unit(void *user, int64_t unit, void *const *inputs, bool *end) {
  frame_run *run = user;
  if (run->source_failure != PLM_OK)
    return plm__fail_raw(run->source_failure, "%s", run->source_message);
  const int64_t limit = run->options->max_frames;
  int64_t n = 0;
  for (; n < run->batch && !run->source_ended; n++) {
    const int64_t frame = first_frame(run, unit) + n;
    if (limit && frame >= limit) break;
    for (int i = 0; i < run->inputs_count; i++)
      run->gathered[i] = (char *)inputs[i] + (size_t)n * run->input_frame_bytes[i];
    plm_clear_error();
    plm_status status = run->source(run->user, frame, run->gathered, &run->source_ended);
    if (status != PLM_OK) {
      run->source_failed_frame = frame;
      if (n == 0) return status; /* the ring takes the message */
      run->source_failure = status;
      snprintf(run->source_message, sizeof run->source_message, "%s", plm_last_error());
      break;
    }
    if (run->source_ended) break;
  }
  if (n == 0) {
    *end = true;
    return PLM_OK;
  }
  for (int i = 0; i < run->inputs_count; i++)
    memset((char *)inputs[i] + (size_t)n * run->input_frame_bytes[i], 0,
           (size_t)(run->batch - n) * run->input_frame_bytes[i]);
  run->unit_frames[unit % (run->slots_count + run->options->source_ahead)] = n;
  return PLM_OK;
}

/* With batches: the pipeline's batch (batch.c) and the per-frame views of the stacks. */
static plm_status open_batches(frame_run *run) {
  if (run->batch == 1) return PLM_OK;
  plm_status status = plm__pipeline_batch_begin(run->pl, run->batch);
  if (status != PLM_OK) return status;
  const int entries = run->slots_count + run->options->source_ahead;
  run->unit_frames = calloc((size_t)entries, sizeof *run->unit_frames);
  run->input_frame_bytes = calloc((size_t)run->inputs_count + 1, sizeof *run->input_frame_bytes);
  run->output_frame_bytes = calloc((size_t)run->outputs_count + 1, sizeof *run->output_frame_bytes);
  run->frame_outputs = calloc((size_t)run->outputs_count + 1, sizeof *run->frame_outputs);
  run->gathered = calloc((size_t)run->inputs_count + 1, sizeof *run->gathered);
  if (!run->unit_frames || !run->input_frame_bytes || !run->output_frame_bytes ||
      !run->frame_outputs || !run->gathered)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the run's batches");
  for (int i = 0; i < run->inputs_count; i++)
    run->input_frame_bytes[i] = run->input_bytes[i] / (size_t)run->batch;
  for (int i = 0; i < run->outputs_count; i++)
    run->output_frame_bytes[i] = run->output_bytes[i] / (size_t)run->batch;
  return PLM_OK;
}

/* The slots, the origin event and, last because it may start the source's thread, the
 * ring of pinned inputs. */
static plm_status open_run(frame_run *run) {
  plm_status status = read_io(run);
  if (status == PLM_OK) status = open_batches(run);
  if (status != PLM_OK) return status;
  run->whole_frame_graphs =
      run->graphs_wanted && !run->options->record_timing && !run->pl->profiler;
  run->graph_keys = run->whole_frame_graphs ? run->slots_count + run->options->source_ahead : 1;
  run->slots = calloc((size_t)run->slots_count, sizeof *run->slots);
  if (!run->slots)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for %d frame slots",
                         run->slots_count);
  for (int s = 0; s < run->slots_count; s++) run->slots[s].frame = -1;
  for (int s = 0; s < run->slots_count && status == PLM_OK; s++)
    status = slot_open(run, &run->slots[s]);
  if (status == PLM_OK) status = plm_event_create(run->pl->ctx, 0, &run->origin);
  /* Slot 0's stream follows any plm_pipeline_run still running on the plan's slot 0. */
  plm__slot *runtime0 = &run->pl->slots[0];
  if (status == PLM_OK && runtime0->done_recorded)
    status = plm_stream_wait_event(run->slots[0].stream, runtime0->done);
  if (status == PLM_OK) status = plm_event_record(run->origin, run->slots[0].stream);
  /* Every slot starts after the origin, so no timing point precedes it. */
  for (int s = 1; s < run->slots_count && status == PLM_OK; s++)
    status = plm_stream_wait_event(run->slots[s].stream, run->origin);
  const bool batched = run->batch > 1;
  const int64_t max_frames = run->options->max_frames;
  const plm__source_ring_config ring = {
      .ctx = run->pl->ctx,
      .source = batched ? gather_unit : run->source,
      .user = batched ? (void *)run : run->user,
      .inputs_count = run->inputs_count,
      .input_bytes = run->input_bytes,
      .in_flight = run->slots_count,
      .ahead = run->options->source_ahead,
      .max_frames = (max_frames + run->batch - 1) / run->batch}; /* in units */
  if (status == PLM_OK) status = plm__source_ring_open(&run->ring, &ring);
  return status;
}

static void close_run(frame_run *run) {
  if (run->slots) {
    for (int s = 0; s < run->slots_count; s++)
      if (run->slots[s].stream) plm_stream_synchronize(run->slots[s].stream);
    for (int s = 0; s < run->slots_count; s++) slot_close(run, &run->slots[s]);
  }
  plm__source_ring_close(&run->ring); /* after the streams: uploads read its buffers */
  free(run->slots);
  if (run->origin) plm_event_destroy(run->origin);
  free(run->input_shapes);
  free(run->output_shapes);
  free(run->input_bytes);
  free(run->output_bytes);
  plm__pipeline_batch_end(run->pl);
  free(run->unit_frames);
  free(run->input_frame_bytes);
  free(run->output_frame_bytes);
  free(run->frame_outputs);
  free(run->gathered);
  free(run->latency_ms.values);
  free(run->source_us.values);
  free(run->submit_us.values);
  free(run->timings);
}

/* ---- one frame --------------------------------------------------------------------------- */

/* Say once, in the report, why graphs are not used (the library prints nothing). */
static void refuse_graphs(frame_run *run, const char *why) {
  run->graphs_refused = true;
  plm_run_stream_report *report = run->report;
  if (report->graphs_note[0]) return;
  snprintf(report->graphs_note, sizeof report->graphs_note, "%s", why);
}

/* The graph of a slot for a frame: by the frame's ring entry when graphs hold the copies
 * (the entry's addresses are baked in), else the slot's one. */
static plm__stream_graph **graph_of(frame_run *run, frame_slot *slot, int64_t frame) {
  return &slot->graphs[run->whole_frame_graphs ? frame % run->graph_keys : 0];
}

static plm_status upload(frame_run *run, frame_slot *slot, int64_t frame, void *const *inputs);
static plm_status download(frame_run *run, frame_slot *slot, int64_t frame);

/* Capture the slot's work for this frame into *graph: with whole_frame_graphs the
 * upload from `inputs`, the plan and the download, else the plan alone. A failure
 * leaves no graph and turns graphs off for the run (said once); the frame then runs
 * without. */
static void capture(frame_run *run, frame_slot *slot, int slot_index, int64_t frame,
                    void *const *inputs, plm__stream_graph **graph) {
  plm_status status = plm__stream_graph_capture_begin(slot->stream);
  if (status != PLM_OK) {
    refuse_graphs(run, plm_last_error());
    return;
  }
  /* The capture moves the states' order on (the frame's updates are in the graph); a
   * failed one runs the frame again without a graph, after the same previous updates. */
  plm__pipeline_state_save(run->pl);
  plm_status enqueued = run->whole_frame_graphs ? upload(run, slot, frame, inputs) : PLM_OK;
  if (enqueued == PLM_OK)
    enqueued = plm__pipeline_enqueue(run->pl, slot_index, slot->stream, slot->inputs, slot->outputs,
                                     first_frame(run, slot->frame));
  if (enqueued == PLM_OK && run->whole_frame_graphs) enqueued = download(run, slot, frame);
  char why[sizeof run->report->graphs_note] = "";
  if (enqueued != PLM_OK) snprintf(why, sizeof why, "%s", plm_last_error());
  status = plm__stream_graph_capture_end(slot->stream, graph);
  if (enqueued == PLM_OK && status != PLM_OK) snprintf(why, sizeof why, "%s", plm_last_error());
  if (why[0]) {
    plm__stream_graph_destroy(*graph);
    *graph = NULL;
    plm__pipeline_state_restore(run->pl);
    refuse_graphs(run, why);
  }
}

/* A frame's copy, recorded as a launch named `name` when a profiler is attached. */
static plm_status copy(frame_run *run, plm_stream *stream, void *dst, const void *src, size_t bytes,
                       plm_copy_kind kind, int64_t frame) {
  plm_profiler *profiler = run->pl->profiler;
  if (!profiler) return plm_stream_memcpy(stream, dst, src, bytes, kind);
  const plm_op_cost cost = {.bytes = (double)bytes, .flops = 0.0};
  plm_profile_mark mark;
  plm_status status = plm_profiler_begin(
      profiler, stream, kind == PLM_COPY_HOST_TO_DEVICE ? "h2d" : "d2h", frame, &cost, &mark);
  if (status == PLM_OK) status = plm_stream_memcpy(stream, dst, src, bytes, kind);
  plm_status ended = plm_profiler_end(profiler, stream, &mark);
  return status == PLM_OK ? ended : status;
}

/* The frame's inputs from `inputs` (its ring entry) to the slot's device tensors. */
static plm_status upload(frame_run *run, frame_slot *slot, int64_t frame, void *const *inputs) {
  plm_status status = PLM_OK;
  for (int i = 0; status == PLM_OK && i < run->inputs_count; i++)
    status = copy(run, slot->stream, slot->inputs[i].data, inputs[i], run->input_bytes[i],
                  PLM_COPY_HOST_TO_DEVICE, first_frame(run, frame));
  return status;
}

/* The slot's device outputs to its pinned host outputs. */
static plm_status download(frame_run *run, frame_slot *slot, int64_t frame) {
  plm_status status = PLM_OK;
  for (int i = 0; status == PLM_OK && i < run->outputs_count; i++)
    status = copy(run, slot->stream, slot->host_outputs[i], slot->outputs[i].data,
                  run->output_bytes[i], PLM_COPY_DEVICE_TO_HOST, first_frame(run, frame));
  return status;
}

/* Queue unit `frame` (a frame, or a batch) on its slot, uploading it from `inputs` (its
 * entry of the ring): one graph launch when the unit's whole graph exists, else the
 * copies around the plan (or the plan's graph), with the timing events when asked for.
 * A short batch runs without graphs, as a stack of its frames alone. */
static plm_status submit_frame(frame_run *run, int64_t frame, void *const *inputs) {
  const int slot_index = (int)(frame % run->slots_count);
  frame_slot *slot = &run->slots[slot_index];
  slot->frame = frame;
  char range[48];
  if (run->batch == 1)
    snprintf(range, sizeof range, "frame %lld", (long long)frame);
  else
    snprintf(range, sizeof range, "frames %lld+%lld", (long long)first_frame(run, frame),
             (long long)frames_of(run, frame));
  plm__nvtx_push(run->pl->ctx, range);
  const int64_t frames = frames_of(run, frame);
  const bool short_batch = frames < run->batch;
  /* Each slot's first frame is its warm-up, run without a graph. */
  const bool warm = frame >= run->slots_count;
  plm__stream_graph *no_graph = NULL;
  plm__stream_graph **graph = short_batch ? &no_graph : graph_of(run, slot, frame);
  bool captured_now = false, launched = false;
  if (run->graphs_wanted && !run->graphs_refused && warm && !short_batch && !*graph) {
    capture(run, slot, slot_index, frame, inputs, graph);
    captured_now = *graph != NULL;
  }
  plm_status status = PLM_OK;
  if (*graph && run->whole_frame_graphs) {
    status = plm__stream_graph_launch(*graph, slot->stream);
    launched = status == PLM_OK;
    if (launched) run->report->graph_replays++;
    if (launched) plm__pipeline_state_replayed(run->pl, slot_index);
  } else {
    const bool timed = run->options->record_timing;
    if (timed) status = plm_event_record(slot->started, slot->stream);
    if (status == PLM_OK) status = upload(run, slot, frame, inputs);
    if (status == PLM_OK && timed) status = plm_event_record(slot->uploaded, slot->stream);
    if (status == PLM_OK && *graph) {
      status = plm__stream_graph_launch(*graph, slot->stream);
      launched = status == PLM_OK;
      if (launched) run->report->graph_replays++;
      if (launched) plm__pipeline_state_replayed(run->pl, slot_index);
    } else if (status == PLM_OK && short_batch) {
      status = plm__pipeline_enqueue_frames(run->pl, slot_index, slot->stream, slot->inputs,
                                            slot->outputs, first_frame(run, frame), frames);
    } else if (status == PLM_OK) {
      status = plm__pipeline_enqueue(run->pl, slot_index, slot->stream, slot->inputs, slot->outputs,
                                     first_frame(run, frame));
    }
    if (status == PLM_OK && timed) status = plm_event_record(slot->computed, slot->stream);
    if (status == PLM_OK) status = download(run, slot, frame);
  }
  /* The capture moved the states' order on for a graph whose launch did not happen. */
  if (status != PLM_OK && captured_now && !launched) plm__pipeline_state_restore(run->pl);
  if (status == PLM_OK) status = plm_event_record(slot->done, slot->stream);
  plm__nvtx_pop(run->pl->ctx);
  return status;
}

/* Milliseconds from the run's origin to a completed event (NaN when it cannot be
 * measured, as on a backend without timing). */
static double since_origin_ms(frame_run *run, plm_event *event) {
  float ms = 0.0f;
  if (plm_event_elapsed_ms(run->origin, event, &ms) != PLM_OK) {
    plm_clear_error();
    return NAN;
  }
  return ms;
}

/* Append v to series; `what` names it in the out-of-memory message. */
static plm_status series_add(sample_series *series, double v, const char *what) {
  if (series->count == series->capacity) {
    size_t capacity = series->capacity ? 2 * series->capacity : 1024;
    float *grown = realloc(series->values, capacity * sizeof *grown);
    if (!grown) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for %s", what);
    series->values = grown;
    series->capacity = capacity;
  }
  series->values[series->count++] = (float)v;
  return PLM_OK;
}

static plm_status keep_timings(frame_run *run, frame_slot *slot) {
  if (run->timed_frames == run->timed_capacity) {
    size_t capacity = run->timed_capacity ? 2 * run->timed_capacity : 1024;
    double *grown = realloc(run->timings, TIMING_POINTS * capacity * sizeof *grown);
    if (!grown) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for frame timings");
    run->timings = grown;
    run->timed_capacity = capacity;
  }
  double *row = run->timings + TIMING_POINTS * run->timed_frames++;
  row[0] = since_origin_ms(run, slot->started);
  row[1] = since_origin_ms(run, slot->uploaded);
  row[2] = since_origin_ms(run, slot->computed);
  row[3] = since_origin_ms(run, slot->done);
  return PLM_OK;
}

/* Record a failure of unit `unit` at frame `frame` (the run's failed frame). */
static plm_status failed_at(frame_run *run, int64_t unit, int64_t frame, plm_status status) {
  run->failed_unit = unit;
  run->failed_frame = frame;
  return status;
}

/* Hand frame `frame` (of the slot's unit, `index` in its stack) to the sink. */
static plm_status sink_frame(frame_run *run, frame_slot *slot, int64_t frame, int64_t index) {
  const void *const *outputs = (const void *const *)slot->host_outputs;
  if (run->batch > 1) {
    for (int i = 0; i < run->outputs_count; i++)
      run->frame_outputs[i] =
          (const char *)slot->host_outputs[i] + (size_t)index * run->output_frame_bytes[i];
    outputs = run->frame_outputs;
  }
  plm_clear_error();
  plm_status status = run->sink(run->user, frame, outputs);
  if (status == PLM_OK) return PLM_OK;
  if (plm_last_error()[0])
    return plm__fail_raw(status, "frame %lld: the sink failed: %s", (long long)frame,
                         plm_last_error());
  return plm__fail_raw(status, "frame %lld: the sink failed (%s)", (long long)frame,
                       plm_status_str(status));
}

/* Wait for the slot's unit, hand its frames to the sink in order and give its ring entry
 * back to the source. A failure's message is raw and names the frame, which becomes the
 * run's failed frame (failed_at). */
static plm_status retire_frame(frame_run *run, frame_slot *slot) {
  const int64_t unit = slot->frame, first = first_frame(run, unit), frames = frames_of(run, unit);
  plm_status status = plm_event_synchronize(slot->done);
  if (status != PLM_OK) {
    if (run->batch == 1)
      status = plm__fail_raw(status, "frame %lld: %s", (long long)first, plm_last_error());
    else
      status = plm__fail_raw(status, "frame %lld (the batch of frames %lld to %lld): %s",
                             (long long)first, (long long)first, (long long)(first + frames - 1),
                             plm_last_error());
    return failed_at(run, unit, first, status);
  }
  if (run->options->record_timing) {
    status = keep_timings(run, slot);
    if (status != PLM_OK) return failed_at(run, unit, first, status);
  }
  for (int64_t f = 0; f < frames; f++) {
    if (run->sink) status = sink_frame(run, slot, first + f, f);
    if (status != PLM_OK) return failed_at(run, unit, first + f, status);
    run->report->frames_delivered++;
  }
  plm__source_ring_release(&run->ring, unit); /* its upload is complete */
  status = series_add(&run->latency_ms, (plm__monotonic_seconds() - slot->taken_s) * 1e3,
                      "frame latencies");
  if (status != PLM_OK) return failed_at(run, unit, first + frames - 1, status);
  slot->frame = -1;
  return PLM_OK;
}

/* ---- figures ----------------------------------------------------------------------------- */

static int compare_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static int compare_interval(const void *a, const void *b) {
  const double *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Merge intervals (begin, end pairs) sorted by begin into disjoint ones, in place;
 * returns how many remain. Disjoint and sorted by begin, they are sorted by end too. */
static size_t merge_intervals(double *intervals, size_t n) {
  size_t disjoint = 0;
  for (size_t i = 0; i < n; i++) {
    double begin = intervals[2 * i], end = intervals[2 * i + 1];
    if (disjoint && begin <= intervals[2 * disjoint - 1]) {
      if (end > intervals[2 * disjoint - 1]) intervals[2 * disjoint - 1] = end;
      continue;
    }
    intervals[2 * disjoint] = begin;
    intervals[2 * disjoint + 1] = end;
    disjoint++;
  }
  return disjoint;
}

/* How much of [begin, end) the disjoint sorted intervals cover. */
static double covered(const double *intervals, size_t n, double begin, double end) {
  size_t lo = 0, hi = n; /* the first interval ending after begin */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (intervals[2 * mid + 1] <= begin)
      lo = mid + 1;
    else
      hi = mid;
  }
  double total = 0.0;
  for (size_t i = lo; i < n && intervals[2 * i] < end; i++) {
    double a = fmax(begin, intervals[2 * i]), b = fmin(end, intervals[2 * i + 1]);
    if (b > a) total += b - a;
  }
  return total;
}

/* Copy and compute time summed over frames, and how much of the copy time ran while
 * some frame was computing. */
static void measure_overlap(frame_run *run) {
  plm_run_stream_report *report = run->report;
  const size_t n = run->timed_frames;
  double *compute = malloc((n ? n : 1) * 2 * sizeof *compute);
  if (!compute) return; /* the figures stay 0: they are optional */
  size_t kept = 0;
  for (size_t f = 0; f < n; f++) {
    const double *row = run->timings + TIMING_POINTS * f;
    if (isnan(row[0]) || isnan(row[1]) || isnan(row[2]) || isnan(row[3])) continue;
    report->copy_ms += (row[1] - row[0]) + (row[3] - row[2]);
    report->compute_ms += row[2] - row[1];
    compute[2 * kept] = row[1];
    compute[2 * kept + 1] = row[2];
    kept++;
  }
  qsort(compute, kept, 2 * sizeof *compute, compare_interval);
  const size_t disjoint = merge_intervals(compute, kept);
  for (size_t f = 0; f < n; f++) {
    const double *row = run->timings + TIMING_POINTS * f;
    if (isnan(row[0]) || isnan(row[1]) || isnan(row[2]) || isnan(row[3])) continue;
    report->overlap_ms += covered(compute, disjoint, row[0], row[1]);
    report->overlap_ms += covered(compute, disjoint, row[2], row[3]);
  }
  free(compute);
}

/* A series' p50 and p99 by nearest rank (profile/stats.h); 0 for an empty one. */
static void series_percentiles(sample_series *series, double *p50, double *p99) {
  *p50 = *p99 = 0.0;
  if (series->count == 0) return;
  qsort(series->values, series->count, sizeof *series->values, compare_float);
  *p50 = series->values[plm__nearest_rank(series->count, 0.50)];
  *p99 = series->values[plm__nearest_rank(series->count, 0.99)];
}

static void finish_report(frame_run *run, double started_s) {
  plm_run_stream_report *report = run->report;
  report->seconds = plm__monotonic_seconds() - started_s;
  if (report->seconds > 0)
    report->frames_per_s = (double)report->frames_delivered / report->seconds;
  series_percentiles(&run->latency_ms, &report->latency_p50_ms, &report->latency_p99_ms);
  series_percentiles(&run->source_us, &report->source_p50_us, &report->source_p99_us);
  series_percentiles(&run->submit_us, &report->submit_p50_us, &report->submit_p99_us);
  report->graphs_used = report->graph_replays > 0;
  if (run->options->record_timing) measure_overlap(run);
}

/* ---- the loop ---------------------------------------------------------------------------- */

/* Frame `frame`'s inputs from the ring (the source's call, or the wait for its thread),
 * with the host's time for it; a source's failure is reported for the frame. */
static plm_status take_frame(frame_run *run, int64_t frame, void *const **inputs, bool *end) {
  const double asked_s = plm__monotonic_seconds();
  plm_status status = plm__source_ring_take(&run->ring, frame, inputs, end);
  if (status != PLM_OK) {
    const int64_t failed = run->batch == 1 ? frame : run->source_failed_frame;
    failed_at(run, frame, failed, status);
    if (plm_last_error()[0])
      return plm__fail_raw(status, "frame %lld: the source failed: %s", (long long)failed,
                           plm_last_error());
    return plm__fail_raw(status, "frame %lld: the source failed (%s)", (long long)failed,
                         plm_status_str(status));
  }
  const double taken_s = plm__monotonic_seconds();
  if (*end) return PLM_OK;
  /* Latency counts from here: enqueueing may block (PLM_PLAN_SYNCHRONOUS_STEPS). */
  run->slots[frame % run->slots_count].taken_s = taken_s;
  return series_add(&run->source_us, (taken_s - asked_s) * 1e6, "source times");
}

/* Feed frames until the source ends, max_frames is reached or something fails; returns
 * the first failure, its frame in report->failed_frame. */
static plm_status stream_frames(frame_run *run) {
  const int64_t limit = (run->options->max_frames + run->batch - 1) / run->batch; /* units */
  for (int64_t frame = 0; limit == 0 || frame < limit; frame++) {
    frame_slot *slot = &run->slots[frame % run->slots_count];
    if (slot->frame >= 0) {
      plm_status status = retire_frame(run, slot);
      if (status != PLM_OK) return status;
    }
    void *const *inputs = NULL;
    bool end = false;
    plm_status status = take_frame(run, frame, &inputs, &end);
    if (status != PLM_OK || end) return status;
    status = submit_frame(run, frame, inputs);
    if (status == PLM_OK)
      status = series_add(&run->submit_us, (plm__monotonic_seconds() - slot->taken_s) * 1e6,
                          "submit times");
    if (status != PLM_OK) {
      slot->frame = -1; /* not delivered; its work, if any, is waited for at close */
      const int64_t first = first_frame(run, frame);
      return failed_at(run, frame, first,
                       plm__fail_raw(status, "frame %lld: %s", (long long)first, plm_last_error()));
    }
  }
  return PLM_OK;
}

/* Deliver, in order, the frames still in flight before `stop` (all of them when stop is
 * -1). Stops at the first failure, which becomes the run's failed frame. */
static plm_status drain_frames(frame_run *run, int64_t stop) {
  for (;;) {
    frame_slot *oldest = NULL;
    for (int s = 0; s < run->slots_count; s++) {
      frame_slot *slot = &run->slots[s];
      if (slot->frame < 0 || (stop >= 0 && slot->frame >= stop)) continue;
      if (!oldest || slot->frame < oldest->frame) oldest = slot;
    }
    if (!oldest) return PLM_OK;
    plm_status status = retire_frame(run, oldest);
    if (status != PLM_OK) return status;
  }
}

/* ---- the public API ------------------------------------------------------------------------ */

plm_run_stream_options plm_run_stream_options_default(void) {
  return (plm_run_stream_options){
      .max_frames = 0, .use_graphs = true, .record_timing = false, .source_ahead = 0, .batch = 1};
}

plm_status plm__run_stream_options_check(const plm_run_stream_options *options) {
  if (options->max_frames < 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "options->max_frames %lld is negative",
                         (long long)options->max_frames);
  if (options->source_ahead < 0 || options->source_ahead > PLM_SOURCE_AHEAD_MAX)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "options->source_ahead %d is out of range (0 to %d)",
                         options->source_ahead, PLM_SOURCE_AHEAD_MAX);
  if (options->batch < 0 || options->batch > PLM_RUN_STREAM_MAX_BATCH)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "options->batch %d is out of range (1 to %d frames a batch; 0 means 1)",
                         options->batch, PLM_RUN_STREAM_MAX_BATCH);
  return PLM_OK;
}

plm_status plm_pipeline_run_stream(plm_pipeline *pl, plm_frame_source_fn source,
                                   plm_frame_sink_fn sink, void *user,
                                   const plm_run_stream_options *options,
                                   plm_run_stream_report *report) {
  PLM__REQUIRE_NOT_NULL(report);
  memset(report, 0, sizeof *report);
  report->failed_frame = -1;
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(source);
  PLM__REFUSE_IN_HOST_CALLBACK();
  const plm_run_stream_options defaults = plm_run_stream_options_default();
  if (!options) options = &defaults;
  plm_status checked = plm__run_stream_options_check(options);
  if (checked != PLM_OK) return plm__propagate(checked);
  if (!pl->compiled) return plm__fail(PLM_ERR_INVALID_STATE, "the pipeline is not compiled");

  frame_run run = {.pl = pl,
                   .slots_count = pl->config.frames_in_flight,
                   .source = source,
                   .sink = sink,
                   .user = user,
                   .options = options,
                   .report = report,
                   .batch = options->batch > 1 ? options->batch : 1,
                   .failed_unit = -1,
                   .failed_frame = -1};
  if (options->use_graphs) {
    char why[sizeof report->graphs_note] = "";
    if (!plm__stream_graph_supported(pl->ctx))
      snprintf(why, sizeof why, "the %s backend has no graphs",
               plm_backend_name(pl->ctx->backend->kind));
    else
      plm__pipeline_capturable(pl, why, sizeof why);
    run.graphs_wanted = why[0] == '\0';
    if (!run.graphs_wanted) snprintf(report->graphs_note, sizeof report->graphs_note, "%s", why);
  }

  bool idle = false;
  if (!atomic_compare_exchange_strong(&pl->streaming, &idle, true))
    return plm__fail(PLM_ERR_INVALID_STATE,
                     "plm_pipeline_run_stream is already running this pipeline (a run shares "
                     "its frame slots and state): run one at a time");
  const double started_s = plm__monotonic_seconds();
  plm_status status = open_run(&run);
  if (status == PLM_OK) {
    status = stream_frames(&run);
    /* The source is not needed any more: after a failure its thread may still be
     * filling frames ahead. */
    plm__source_ring_stop(&run.ring);
    /* The frames before a failure are all delivered; a failure while draining becomes
     * the reported one only when there was none. */
    char first_error[512];
    snprintf(first_error, sizeof first_error, "%s", plm_last_error());
    plm_status drained = drain_frames(&run, run.failed_unit);
    if (status == PLM_OK)
      status = drained;
    else
      plm__fail_raw(status, "%s", first_error);
  }
  report->failed_frame = run.failed_frame;
  finish_report(&run, started_s);
  close_run(&run);
  atomic_store(&pl->streaming, false);
  return status == PLM_OK ? PLM_OK : plm__propagate(status);
}

/* pipeline/run.c: enqueueing a frame (plume/pipeline.h's plm_pipeline_run and the
 * executor's plm__pipeline_enqueue). */
#include <stdint.h>
#include <stdio.h>

#include "ops/op_internal.h"
#include "pipeline/pipeline_internal.h"
#include "streams/error.h"
#include "streams/stream_graph.h"

/* ---- checks ------------------------------------------------------------------------------- */

static plm_status check_tensor(const plm_stream *stream, const plm_tensor *tensor,
                               const plm_shape *shape, const char *array, int i) {
  char name[32];
  snprintf(name, sizeof name, "%s[%d]", array, i);
  plm_status status = plm__op_check_tensor(stream, tensor, name);
  if (status != PLM_OK) return status;
  if (plm__tensor_has_shape(tensor, shape)) return PLM_OK;
  plm_shape given = {.dtype = tensor->dtype, .ndim = tensor->ndim};
  for (int d = 0; d < tensor->ndim; d++) given.dims[d] = tensor->dims[d];
  char want[96], got[96];
  plm__shape_text(shape, want, sizeof want);
  plm__shape_text(&given, got, sizeof got);
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is %s but the pipeline's %s %d is %s", name, got,
                       array[0] == 'i' ? "input" : "output", i, want);
}

static bool overlap(const plm_tensor *a, const plm_tensor *b) {
  uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
  return a0 < b0 + plm_tensor_bytes(b) && b0 < a0 + plm_tensor_bytes(a);
}

plm_status plm__pipeline_check_io(const plm_pipeline *pl, const plm_stream *stream,
                                  const plm_tensor *inputs, const plm_tensor *outputs) {
  const plm__graph *g = &pl->graph;
  if (g->input_count && !inputs) return plm__fail_raw(PLM_ERR_INVALID_ARG, "inputs is NULL");
  if (g->output_count && !outputs) return plm__fail_raw(PLM_ERR_INVALID_ARG, "outputs is NULL");
  for (int i = 0; i < g->input_count; i++) {
    plm_status status =
        check_tensor(stream, &inputs[i], &g->tensors[g->inputs[i]].shape, "inputs", i);
    if (status != PLM_OK) return status;
  }
  for (int i = 0; i < g->output_count; i++) {
    plm_status status =
        check_tensor(stream, &outputs[i], &g->tensors[g->outputs[i]].shape, "outputs", i);
    if (status != PLM_OK) return status;
    for (int j = 0; j < i; j++)
      if (overlap(&outputs[i], &outputs[j]))
        return plm__fail_raw(PLM_ERR_INVALID_ARG, "outputs[%d] overlaps outputs[%d]", i, j);
    for (int j = 0; j < g->input_count; j++)
      if (overlap(&outputs[i], &inputs[j]))
        return plm__fail_raw(PLM_ERR_INVALID_ARG, "outputs[%d] overlaps inputs[%d]", i, j);
  }
  return PLM_OK;
}

/* ---- steps -------------------------------------------------------------------------------- */

/* Enqueue one step with the arguments compile checked (plm__op_enqueue: no checks, no
 * allocation), its scratch at its offset in the slot's workspace. Without a workspace
 * (PLM_PLAN_ALLOCATE_PER_RUN) a step's scratch comes from the pipeline's pool for the
 * step, as its intermediates do (per_run.c). */
static plm_status run_step(const plm_pipeline *pl, const plm__step *step, plm_stream *stream,
                           plm__slot *slot) {
  const plm__op_desc *op = plm__op_get(step->kind);
  plm__op_call call = plm__step_call(step->kind, step->inputs, step->outputs, &step->params,
                                     step->in_place, slot->tensors);
  call.tuning = &step->tuning;
  if (step->state >= 0) {
    call.state = &pl->state_tensors[step->state];
    call.state_fresh = pl->state_fresh[step->state];
  }
  if (step->scratch_bytes == 0 || slot->workspace)
    return plm__op_enqueue(
        op, stream, &call,
        step->scratch_bytes ? (char *)slot->workspace + step->scratch_offset : NULL);
  void *scratch = NULL;
  plm_status status = plm_pool_alloc(pl->pool, step->scratch_bytes, stream, &scratch);
  if (status != PLM_OK) return status;
  status = plm__op_enqueue(op, stream, &call, scratch);
  plm_status freed = plm_pool_free(pl->pool, scratch, stream);
  return status != PLM_OK ? status : freed;
}

/* run_step, recorded as a launch of `frame` by the pipeline's profiler (when it has one)
 * with the cost compile computed. */
static plm_status run_step_profiled(plm_pipeline *pl, const plm__step *step, plm_stream *stream,
                                    plm__slot *slot, int64_t frame) {
  if (!pl->profiler) return run_step(pl, step, stream, slot);
  plm_profile_mark mark;
  plm_status status =
      plm_profiler_begin(pl->profiler, stream, plm__op_name(step->kind), frame, &step->cost, &mark);
  if (status == PLM_OK) status = run_step(pl, step, stream, slot);
  plm_status ended = plm_profiler_end(pl->profiler, stream, &mark);
  return status == PLM_OK ? ended : status;
}

/* A stateful step, after the previous frame's update of its state and recorded for the
 * next (pipeline_internal.h: State); the update after compile or a reset initialises. */
static plm_status run_stateful_step(plm_pipeline *pl, const plm__step *step, plm_stream *stream,
                                    plm__slot *slot, int64_t frame) {
  const int j = step->state;
  plm_status status = PLM_OK;
  if (pl->state_last[j]) status = plm__stream_wait_event_across_graphs(stream, pl->state_last[j]);
  if (status == PLM_OK) status = run_step_profiled(pl, step, stream, slot, frame);
  if (status == PLM_OK) status = plm__event_record_across_graphs(slot->state_events[j], stream);
  if (status != PLM_OK) return status;
  pl->state_last[j] = slot->state_events[j];
  pl->state_fresh[j] = false;
  return PLM_OK;
}

/* ---- previous values ---------------------------------------------------------------------- */

/* Zero the fresh previous values on stream (the frame's stream 0, before its fork), after
 * whatever frame copied into them last. */
static plm_status zero_fresh_previous(plm_pipeline *pl, plm_stream *stream) {
  plm_status status = PLM_OK;
  for (int j = 0; status == PLM_OK && j < pl->plan.state_count; j++) {
    if (pl->plan.states[j].tensor < 0 || !pl->state_fresh[j]) continue;
    if (pl->state_last[j]) status = plm__stream_wait_event_across_graphs(stream, pl->state_last[j]);
    if (status == PLM_OK)
      status = plm_stream_memset(stream, pl->state_tensors[j].data, 0, pl->plan.states[j].bytes);
    if (status == PLM_OK) pl->state_fresh[j] = false;
  }
  return status;
}

/* Before a step: its reads of previous values come after the previous frame's copies. */
static plm_status wait_for_previous(plm_pipeline *pl, const plm__step *step, plm_stream *stream) {
  plm_status status = PLM_OK;
  for (int k = 0; status == PLM_OK && k < PLM__PIPE_MAX_IO; k++) {
    const int t = step->inputs[k];
    if (t < 0 || pl->plan.location[t] != PLM__AT_STATE) continue;
    const int j = pl->plan.tensors[t].state;
    if (pl->state_last[j]) status = plm__stream_wait_event_across_graphs(stream, pl->state_last[j]);
  }
  return status;
}

/* After step index: the values it made that the next frame reads as previous, copied over
 * them and recorded for that frame's readers. */
static plm_status keep_for_next_frame(plm_pipeline *pl, int index, plm_stream *stream,
                                      plm__slot *slot) {
  const plm__plan *plan = &pl->plan;
  plm_status status = PLM_OK;
  for (int j = 0; status == PLM_OK && j < plan->state_count; j++) {
    const plm__state *state = &plan->states[j];
    if (state->tensor < 0 || state->step != index) continue;
    const int value = plan->tensors[state->tensor].previous_of;
    status = plm_stream_memcpy(stream, pl->state_tensors[j].data, slot->tensors[value].data,
                               state->bytes, PLM_COPY_DEVICE_TO_DEVICE);
    if (status == PLM_OK) status = plm__event_record_across_graphs(slot->state_events[j], stream);
    if (status == PLM_OK) pl->state_last[j] = slot->state_events[j];
  }
  return status;
}

plm_status plm__pipeline_enqueue(plm_pipeline *pl, int slot_index, plm_stream *stream,
                                 const plm_tensor *inputs, plm_tensor *outputs, int64_t frame) {
  const plm__plan *plan = &pl->plan;
  plm__slot *slot = &pl->slots[slot_index];
  for (int t = 0; t < plan->tensor_count; t++) {
    int io = plan->tensors[t].io_index;
    if (plan->location[t] == PLM__AT_INPUT) slot->tensors[t].data = inputs[io].data;
    if (plan->location[t] == PLM__AT_OUTPUT) slot->tensors[t].data = outputs[io].data;
  }
  plm_stream *streams[PLM_PIPELINE_MAX_STREAMS] = {stream};
  for (int s = 1; s < plan->stream_count; s++) streams[s] = slot->streams[s];

  const bool per_run = pl->config.flags & PLM_PLAN_ALLOCATE_PER_RUN;
  const bool synchronous = pl->config.flags & PLM_PLAN_SYNCHRONOUS_STEPS;
  plm_status status = zero_fresh_previous(pl, stream);
  if (status == PLM_OK && plan->stream_count > 1)
    status = plm_event_record(slot->events[0], stream); /* the fork */
  int failed = -1;
  for (int i = 0; status == PLM_OK && i < plan->step_count; i++) {
    const plm__step *step = &plan->steps[i];
    plm_stream *on = streams[step->stream];
    for (int w = 0; status == PLM_OK && w < step->wait_count; w++)
      status = plm_stream_wait_event(on, slot->events[step->waits[w]]);
    if (status == PLM_OK && per_run) status = plm__per_run_acquire(pl, slot, i, on);
    if (status == PLM_OK) status = wait_for_previous(pl, step, on);
    if (status == PLM_OK)
      status = step->state >= 0 ? run_stateful_step(pl, step, on, slot, frame)
                                : run_step_profiled(pl, step, on, slot, frame);
    if (status == PLM_OK) status = keep_for_next_frame(pl, i, on, slot);
    if (status == PLM_OK && step->record >= 0)
      status = plm_event_record(slot->events[step->record], on);
    if (status == PLM_OK && per_run) status = plm__per_run_release_after(pl, slot, i, on);
    if (status == PLM_OK && synchronous) status = plm_stream_synchronize(on);
    if (status != PLM_OK) failed = i;
  }
  if (failed >= 0)
    plm__pipe_reraise(status, "step %d '%s' (node %d)", failed,
                      plm__op_name(plan->steps[failed].kind), plan->steps[failed].nodes[0]);
  /* The joins, even after a failure, so that stream covers whatever was enqueued. */
  for (int s = 1; s < plan->stream_count; s++) {
    plm_event *join = slot->events[plan->join_events[s]];
    plm_status joined = plm_event_record(join, streams[s]);
    if (joined == PLM_OK) joined = plm_stream_wait_event(stream, join);
    if (status == PLM_OK) status = joined;
  }
  /* What is still allocated (the whole frame is ordered before stream's end now). */
  if (per_run) {
    plm_status released = plm__per_run_release_rest(pl, slot, stream);
    if (status == PLM_OK) status = released;
  }
  return status;
}

plm_status plm__pipeline_enqueue_frames(plm_pipeline *pl, int slot_index, plm_stream *stream,
                                        const plm_tensor *inputs, plm_tensor *outputs,
                                        int64_t frame, int64_t frames) {
  if (frames >= pl->batch)
    return plm__pipeline_enqueue(pl, slot_index, stream, inputs, outputs, frame);
  plm__pipeline_batch_shrink(pl, &pl->slots[slot_index], frames);
  plm_status status = plm__pipeline_enqueue(pl, slot_index, stream, inputs, outputs, frame);
  plm__pipeline_batch_shrink(pl, &pl->slots[slot_index], pl->batch);
  return status;
}

plm_status plm_pipeline_run(plm_pipeline *pl, const plm_tensor *inputs, plm_tensor *outputs,
                            plm_stream *stream) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REFUSE_IN_HOST_CALLBACK();
  if (!pl->compiled) return plm__fail(PLM_ERR_INVALID_STATE, "the pipeline is not compiled");
  if (stream->ctx != pl->ctx)
    return plm__fail(PLM_ERR_INVALID_ARG, "stream belongs to another context than the pipeline");
  if (atomic_load(&pl->streaming))
    return plm__fail(PLM_ERR_INVALID_STATE,
                     "plm_pipeline_run_stream is running this pipeline (it uses slot 0 and the "
                     "state): run after it returns");
  plm_status status = plm__pipeline_check_io(pl, stream, inputs, outputs);
  if (status != PLM_OK) return plm__propagate(status);
  /* Slot 0's workspace: this frame starts after the previous run on it, whatever stream
   * that was on. */
  plm__slot *slot = &pl->slots[0];
  if (slot->done_recorded) status = plm_stream_wait_event(stream, slot->done);
  if (status == PLM_OK)
    status = plm__pipeline_enqueue(pl, 0, stream, inputs, outputs, pl->frames_run++);
  plm_status recorded = plm_event_record(slot->done, stream);
  if (recorded == PLM_OK) slot->done_recorded = true;
  if (status == PLM_OK) status = recorded;
  return plm__propagate(status);
}

bool plm__pipeline_capturable(const plm_pipeline *pl, char *why, size_t size) {
  if (pl->profiler) {
    snprintf(why, size, "a profiler is attached (each step is timed with its own events)");
    return false;
  }
  if (pl->config.flags & PLM_PLAN_ALLOCATE_PER_RUN) {
    snprintf(why, size, "the plan allocates its intermediates per run (PLM_PLAN_ALLOCATE_PER_RUN)");
    return false;
  }
  if (pl->config.flags & PLM_PLAN_SYNCHRONOUS_STEPS) {
    snprintf(why, size, "the host waits after every step (PLM_PLAN_SYNCHRONOUS_STEPS)");
    return false;
  }
  /* Every step's scratch is in the workspace (run_step): nothing allocates per call. */
  return true;
}

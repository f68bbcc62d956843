/* pipeline/run.c: enqueueing a frame (plume/pipeline.h's plm_pipeline_run and the
 * executor's plm__pipeline_enqueue). */
#include <stdint.h>
#include <stdio.h>

#include "ops/op_internal.h"
#include "ops/op_scratch.h"
#include "pipeline/pipeline_internal.h"
#include "streams/error.h"

/* ---- checks ------------------------------------------------------------------------------- */

static void shape_text(const plm_shape *shape, char *text, size_t size) {
  size_t used = (size_t)snprintf(text, size, "%s ", plm_dtype_name(shape->dtype));
  for (int d = 0; d < shape->ndim && used < size; d++)
    used +=
        (size_t)snprintf(text + used, size - used, d ? "x%lld" : "%lld", (long long)shape->dims[d]);
}

static plm_status check_tensor(const plm_stream *stream, const plm_tensor *tensor,
                               const plm_shape *shape, const char *array, int i) {
  char name[32];
  snprintf(name, sizeof name, "%s[%d]", array, i);
  plm_status status = plm__op_check_tensor(stream, tensor, name);
  if (status != PLM_OK) return status;
  bool same = tensor->dtype == shape->dtype && tensor->ndim == shape->ndim;
  for (int d = 0; same && d < shape->ndim; d++) same = tensor->dims[d] == shape->dims[d];
  if (same) return PLM_OK;
  plm_shape given = {.dtype = tensor->dtype, .ndim = tensor->ndim};
  for (int d = 0; d < tensor->ndim; d++) given.dims[d] = tensor->dims[d];
  char want[96], got[96];
  shape_text(shape, want, sizeof want);
  shape_text(&given, got, sizeof got);
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

/* Enqueue one step: with the public op, or, for an op with scratch, its _enqueue entry
 * with the step's scratch in the slot's workspace (ops/op_scratch.h), so that nothing is
 * allocated. Without a workspace (PLM_PLAN_ALLOCATE_PER_RUN) an op with scratch is the
 * public op, which takes its scratch from the context's default pool, as eager code does.
 * The op checks its arguments again (cheaply). */
static plm_status run_step(const plm__step *step, plm_stream *stream, plm_tensor *tensors,
                           void *workspace) {
  plm_tensor *in[PLM__PIPE_MAX_IO], *out[PLM__PIPE_MAX_IO];
  for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
    in[k] = step->inputs[k] >= 0 ? &tensors[step->inputs[k]] : NULL;
    out[k] = step->outputs[k] >= 0 ? &tensors[step->outputs[k]] : NULL;
  }
  void *scratch = step->scratch_bytes ? (char *)workspace + step->scratch_offset : NULL;
  const size_t bytes = step->scratch_bytes;
  const plm__op_params *p = &step->params;
  if (!workspace) {
    switch (step->kind) {
      case PLM__OP_ENTROPY: return plm_entropy(stream, in[0], &p->entropy, out[0]);
      case PLM__OP_LABEL: return plm_label(stream, in[0], &p->label, out[0], out[1]);
      case PLM__OP_SOBEL_ENTROPY_THRESHOLD:
        return plm_sobel_entropy_threshold(stream, in[0], &p->fused, out[0]);
      case PLM__OP_AR_FORECAST: return plm_ar_forecast(stream, in[0], &p->ar_forecast, out[0]);
      case PLM__OP_LSTM_CELL:
        return plm_lstm_cell(stream, in[0], in[1], in[2], in[3], in[4], in[5], in[6], out[0],
                             out[1]);
      case PLM__OP_DENDRITIC: return plm_dendritic(stream, in[0], in[1], &p->dendritic, out[0]);
      default: break; /* the ops without scratch, below */
    }
  }
  switch (step->kind) {
    case PLM__OP_CONV2D: return plm_conv2d(stream, in[0], in[1], &p->conv2d, out[0]);
    case PLM__OP_SOBEL: return plm_sobel(stream, in[0], &p->sobel, out[0], out[1], out[2]);
    case PLM__OP_ENTROPY:
      return plm__entropy_enqueue(stream, in[0], &p->entropy, out[0], scratch, bytes);
    case PLM__OP_THRESHOLD:
      /* In place, the output is the input's memory (plm_threshold allows it for u8). */
      return plm_threshold(stream, in[0], &p->threshold, step->in_place ? in[0] : out[0]);
    case PLM__OP_LABEL:
      return plm__label_enqueue(stream, in[0], &p->label, out[0], out[1], scratch, bytes);
    case PLM__OP_REGIONS: return plm_regions(stream, in[0], in[1], in[2], out[0]);
    case PLM__OP_SOBEL_ENTROPY_THRESHOLD:
      return plm__sobel_entropy_threshold_enqueue(stream, in[0], &p->fused, out[0], scratch, bytes);
    case PLM__OP_MATMUL: return plm_matmul(stream, in[0], in[1], in[2], &p->matmul, out[0]);
    case PLM__OP_LSTM_CELL:
      return plm__lstm_cell_enqueue(stream, in[0], in[1], in[2], in[3], in[4], in[5], in[6], out[0],
                                    out[1], scratch, bytes);
    case PLM__OP_DENDRITIC:
      return plm__dendritic_enqueue(stream, in[0], in[1], &p->dendritic, out[0], scratch, bytes);
    case PLM__OP_VECTOR_ADD: return plm_vector_add(stream, in[0], in[1], &p->vector_add, out[0]);
    case PLM__OP_DOT: return plm_dot(stream, in[0], in[1], &p->dot, out[0]);
    case PLM__OP_AR_FORECAST:
      return plm__ar_forecast_enqueue(stream, in[0], &p->ar_forecast, out[0], scratch, bytes);
    case PLM__OP_SEGMENT: break; /* lowered at compile */
  }
  return plm__fail_raw(PLM_ERR_INTERNAL, "step kind %d cannot run", (int)step->kind);
}

/* run_step, recorded as a launch of `frame` by the pipeline's profiler. */
static plm_status run_step_profiled(plm_pipeline *pl, const plm__step *step, plm_stream *stream,
                                    plm__slot *slot, int64_t frame) {
  plm_op_cost cost = {0};
  const bool costed = plm__step_cost(step, slot->tensors, &cost) == PLM_OK;
  plm_profile_mark mark;
  plm_status status = plm_profiler_begin(pl->profiler, stream, plm__op_name(step->kind), frame,
                                         costed ? &cost : NULL, &mark);
  if (status == PLM_OK) status = run_step(step, stream, slot->tensors, slot->workspace);
  plm_status ended = plm_profiler_end(pl->profiler, stream, &mark);
  return status == PLM_OK ? ended : status;
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
  plm_status status = PLM_OK;
  if (plan->stream_count > 1) status = plm_event_record(slot->events[0], stream); /* the fork */
  int failed = -1;
  for (int i = 0; status == PLM_OK && i < plan->step_count; i++) {
    const plm__step *step = &plan->steps[i];
    plm_stream *on = streams[step->stream];
    for (int w = 0; status == PLM_OK && w < step->wait_count; w++)
      status = plm_stream_wait_event(on, slot->events[step->waits[w]]);
    if (status == PLM_OK && per_run) status = plm__per_run_acquire(pl, slot, i, on);
    if (status == PLM_OK)
      status = pl->profiler ? run_step_profiled(pl, step, on, slot, frame)
                            : run_step(step, on, slot->tensors, slot->workspace);
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

plm_status plm_pipeline_run(plm_pipeline *pl, const plm_tensor *inputs, plm_tensor *outputs,
                            plm_stream *stream) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REFUSE_IN_HOST_CALLBACK();
  if (!pl->compiled) return plm__fail(PLM_ERR_INVALID_STATE, "the pipeline is not compiled");
  if (stream->ctx != pl->ctx)
    return plm__fail(PLM_ERR_INVALID_ARG, "stream belongs to another context than the pipeline");
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

/* Whether run_step enqueues a step of this kind, on either backend, through something
 * that takes memory from a pool per call. The switch has no default, so a new kind must
 * be decided here. */
static bool allocates_per_call(plm__op_kind kind) {
  switch (kind) {
    case PLM__OP_CONV2D:
    case PLM__OP_SOBEL:
    case PLM__OP_THRESHOLD:
    case PLM__OP_REGIONS:
    case PLM__OP_MATMUL:
    case PLM__OP_VECTOR_ADD:        /* one triple: no table (only vector_add_batched takes one) */
    case PLM__OP_DOT: return false; /* no scratch */
    case PLM__OP_ENTROPY:
    case PLM__OP_LABEL:
    case PLM__OP_LSTM_CELL:
    case PLM__OP_DENDRITIC:
    case PLM__OP_SOBEL_ENTROPY_THRESHOLD:
    case PLM__OP_AR_FORECAST: return false; /* scratch from the workspace */
    case PLM__OP_SEGMENT: return true;      /* never a step (lowered); plm_segment would allocate */
  }
  return true;
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
  for (int s = 0; s < pl->plan.step_count; s++) {
    const plm__step *step = &pl->plan.steps[s];
    if (allocates_per_call(step->kind)) {
      snprintf(why, size, "step %d '%s' takes memory from a pool per call", s,
               plm__op_name(step->kind));
      return false;
    }
  }
  return true;
}

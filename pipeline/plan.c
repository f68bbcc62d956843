/* pipeline/plan.c: from a graph to a plan: lowering, pruning, fusion, order, streams,
 * events, clocks and the steps' scratch (the passes are described in
 * pipeline_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "ops/op_tuning.h"
#include "pipeline/pipeline_internal.h"
#include "streams/assert.h"

void plm__plan_free(plm__plan *plan) {
  free(plan->tensors);
  free(plan->steps);
  free(plan->location);
  free(plan->offset);
  free(plan->clock);
  free(plan->join_events);
  free(plan->states);
  *plan = (plm__plan){0};
}

/* Append a step; its outputs' producer becomes the step. */
static void add_step(plm__plan *plan, plm__op_kind kind, const int *inputs, const int *outputs,
                     const plm__op_params *params, int node) {
  int index = plan->step_count++;
  plm__step *step = &plan->steps[index];
  *step = (plm__step){.kind = kind, .params = *params, .nodes = {node, -1, -1}, .record = -1};
  for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
    step->inputs[k] = inputs[k];
    step->outputs[k] = outputs[k];
    if (outputs[k] >= 0) {
      plan->tensors[outputs[k]].producer = index;
      plan->tensors[outputs[k]].slot = k;
    }
  }
}

/* Copy the graph's tensors and nodes, with segment lowered into its three parts. */
static plm_status lower(const plm__graph *graph, plm__plan *plan) {
  int segments = 0;
  for (int n = 0; n < graph->node_count; n++) segments += graph->nodes[n].kind == PLM__OP_segment;
  plan->tensors = calloc((size_t)(graph->tensor_count + segments), sizeof *plan->tensors);
  plan->steps = calloc((size_t)(graph->node_count + 2 * segments) + 1, sizeof *plan->steps);
  if (!plan->tensors || !plan->steps)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  memcpy(plan->tensors, graph->tensors, (size_t)graph->tensor_count * sizeof *plan->tensors);
  plan->tensor_count = graph->tensor_count;
  for (int t = 0; t < plan->tensor_count; t++) plan->tensors[t].producer = -1;

  for (int n = 0; n < graph->node_count; n++) {
    const plm__node *node = &graph->nodes[n];
    if (node->kind != PLM__OP_segment) {
      add_step(plan, node->kind, node->inputs, node->outputs, &node->params, n);
      continue;
    }
    /* mask = image CMP value; labels, count = label(mask); table = regions(labels, image). */
    const int image = node->inputs[0];
    const int mask = plan->tensor_count++;
    plm__tensor *m = &plan->tensors[mask];
    *m = (plm__tensor){.kind = PLM__TENSOR_VALUE,
                       .shape = plan->tensors[image].shape,
                       .producer = -1,
                       .slot = -1,
                       .io_index = -1,
                       .previous_of = -1,
                       .kept_as = -1,
                       .state = -1};
    m->shape.dtype = PLM_DTYPE_U8;
    m->bytes = 1;
    for (int d = 0; d < m->shape.ndim; d++) m->bytes *= (size_t)m->shape.dims[d];
    const plm_segment_params *sp = &node->params.segment.segment;
    plm__op_params threshold = {.threshold = {.value = sp->value, .compare = sp->compare}};
    plm__op_params label = {.label = {.connectivity = sp->connectivity}};
    plm__op_params regions = {.regions = {.capacity = node->params.segment.capacity}};
    int in[PLM__PIPE_MAX_IO], out[PLM__PIPE_MAX_IO];
    add_step(plan, PLM__OP_threshold, plm__pipe_io(in, image, -1, -1),
             plm__pipe_io(out, mask, -1, -1), &threshold, n);
    add_step(plan, PLM__OP_label, plm__pipe_io(in, mask, -1, -1),
             plm__pipe_io(out, node->outputs[0], node->outputs[1], -1), &label, n);
    add_step(plan, PLM__OP_regions, plm__pipe_io(in, node->outputs[0], image, node->outputs[1]),
             plm__pipe_io(out, node->outputs[2], -1, -1), &regions, n);
  }
  return PLM_OK;
}

/* Keep the steps with keep[s] set, in their order; producers follow. */
static void compact(plm__plan *plan, const bool *keep) {
  int kept = 0;
  for (int s = 0; s < plan->step_count; s++) {
    if (!keep[s]) continue;
    plan->steps[kept] = plan->steps[s];
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++)
      if (plan->steps[kept].outputs[k] >= 0)
        plan->tensors[plan->steps[kept].outputs[k]].producer = kept;
    kept++;
  }
  plan->step_count = kept;
}

/* Drop steps that no output depends on, and sobel outputs that nothing reads. */
static plm_status prune(plm__plan *plan) {
  bool *needed = calloc((size_t)plan->tensor_count, sizeof *needed);
  bool *keep = calloc((size_t)plan->step_count + 1, sizeof *keep);
  if (!needed || !keep) {
    free(needed);
    free(keep);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  }
  /* The outputs, and the values a later frame reads as previous. */
  for (int t = 0; t < plan->tensor_count; t++)
    needed[t] = plan->tensors[t].kind == PLM__TENSOR_VALUE &&
                (plan->tensors[t].io_index >= 0 || plan->tensors[t].kept_as >= 0);
  /* Steps are in graph order, so every reader of a tensor comes after its producer. */
  for (int s = plan->step_count - 1; s >= 0; s--) {
    plm__step *step = &plan->steps[s];
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++)
      keep[s] |= step->outputs[k] >= 0 && needed[step->outputs[k]];
    if (!keep[s]) {
      for (int k = 0; k < PLM__PIPE_MAX_IO; k++)
        if (step->outputs[k] >= 0) plan->tensors[step->outputs[k]].producer = -1;
      continue;
    }
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++)
      if (step->inputs[k] >= 0) needed[step->inputs[k]] = true;
    const plm__op_desc *op = plm__op_get(step->kind);
    for (int k = 0; k < op->output_count; k++)
      if (op->outputs[k].optional && step->outputs[k] >= 0 && !needed[step->outputs[k]]) {
        plan->tensors[step->outputs[k]].producer = -1;
        step->outputs[k] = -1;
      }
  }
  compact(plan, keep);
  free(needed);
  free(keep);
  return PLM_OK;
}

/* t is an intermediate read by one step only (readers[t]), not an output, and not kept for
 * the next frame. */
static bool private_intermediate(const plm__plan *plan, const int *readers, int t) {
  return t >= 0 && plan->tensors[t].kind == PLM__TENSOR_VALUE && plan->tensors[t].io_index < 0 &&
         plan->tensors[t].kept_as < 0 && readers[t] == 1;
}

int plm__plan_find_fusions(const plm__plan *plan, plm__fusion *found, int capacity) {
  int count = 0;
  int *readers = plm__plan_readers(plan);
  if (!readers) return -1;
  for (int t = 0; t < plan->step_count; t++) {
    const plm__step *threshold = &plan->steps[t];
    if (threshold->kind != PLM__OP_threshold) continue;
    int entropy_out = threshold->inputs[0];
    if (!private_intermediate(plan, readers, entropy_out)) continue;
    int e = plan->tensors[entropy_out].producer;
    if (e < 0 || plan->steps[e].kind != PLM__OP_entropy) continue;
    const plm__step *entropy = &plan->steps[e];
    int sobel_out = entropy->inputs[0];
    if (entropy->params.entropy.range_auto || !private_intermediate(plan, readers, sobel_out) ||
        plan->tensors[sobel_out].shape.dtype != PLM_DTYPE_F32)
      continue;
    int s = plan->tensors[sobel_out].producer;
    if (s < 0 || plan->steps[s].kind != PLM__OP_sobel) continue;
    const plm__step *sobel = &plan->steps[s];
    if (sobel->outputs[0] >= 0 || sobel->outputs[1] >= 0 || sobel->outputs[2] != sobel_out)
      continue;
    if (count < capacity) found[count] = (plm__fusion){.sobel = s, .entropy = e, .threshold = t};
    count++;
  }
  free(readers);
  return count;
}

/* Recognise the fusable chains; replace each by one step when `substitute`. The fused
 * step takes the threshold's place, which every reader of the mask follows. */
static plm_status fuse(plm__plan *plan, bool substitute) {
  int count = plm__plan_find_fusions(plan, NULL, 0);
  if (count < 0) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  plan->fusable_chains = count;
  if (!substitute || count == 0) return PLM_OK;
  plm__fusion *found = calloc((size_t)count, sizeof *found);
  bool *keep = malloc((size_t)plan->step_count * sizeof *keep);
  if (!found || !keep) {
    free(found);
    free(keep);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  }
  if (plm__plan_find_fusions(plan, found, count) != count) {
    free(found);
    free(keep);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  }
  for (int s = 0; s < plan->step_count; s++) keep[s] = true;
  for (int f = 0; f < count; f++) {
    plm__step *sobel = &plan->steps[found[f].sobel], *entropy = &plan->steps[found[f].entropy];
    plm__step *threshold = &plan->steps[found[f].threshold];
    plm__step fused = {
        .kind = PLM__OP_sobel_entropy_threshold,
        .params = {.sobel_entropy_threshold = {.sobel = sobel->params.sobel,
                                               .entropy = entropy->params.entropy,
                                               .threshold = threshold->params.threshold}},
        .nodes = {sobel->nodes[0], entropy->nodes[0], threshold->nodes[0]},
        .record = -1};
    plm__pipe_io(fused.inputs, sobel->inputs[0], -1, -1);
    plm__pipe_io(fused.outputs, threshold->outputs[0], -1, -1);
    plan->tensors[sobel->outputs[2]].producer = -1;
    plan->tensors[entropy->outputs[0]].producer = -1;
    *threshold = fused;
    keep[found[f].sobel] = keep[found[f].entropy] = false;
  }
  compact(plan, keep);
  plan->fused_steps = count;
  free(found);
  free(keep);
  return PLM_OK;
}

/* A min-heap of step indices (the ready steps of order()). */
static void heap_push(int *heap, int *count, int v) {
  int i = (*count)++;
  for (; i > 0 && heap[(i - 1) / 2] > v; i = (i - 1) / 2) heap[i] = heap[(i - 1) / 2];
  heap[i] = v;
}
static int heap_pop(int *heap, int *count) {
  const int top = heap[0], v = heap[--*count];
  int i = 0;
  for (;;) {
    int child = 2 * i + 1;
    if (child >= *count) break;
    if (child + 1 < *count && heap[child + 1] < heap[child]) child++;
    if (heap[child] >= v) break;
    heap[i] = heap[child];
    i = child;
  }
  if (*count > 0) heap[i] = v;
  return top;
}

/* Kahn's algorithm; among ready steps the earliest goes first, so a graph built in a
 * valid order keeps it. pending[s]: the inputs of s whose producer has not run; readers
 * of each step's outputs found through first_reader/next_reader (a list per step of its
 * (reader, slot) pairs), so the whole costs O(n log n). */
static plm_status order(plm__plan *plan) {
  const int n = plan->step_count;
  plm__step *sorted = malloc((size_t)(n + 1) * sizeof *sorted);
  int *pending = calloc((size_t)n + 1, sizeof *pending);
  int *heap = malloc((size_t)(n + 1) * sizeof *heap);
  int *first_reader = malloc((size_t)(n + 1) * sizeof *first_reader);
  int *next_reader = malloc(((size_t)n * PLM__PIPE_MAX_IO + 1) * sizeof *next_reader);
  if (!sorted || !pending || !heap || !first_reader || !next_reader) {
    free(sorted);
    free(pending);
    free(heap);
    free(first_reader);
    free(next_reader);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  }
  for (int s = 0; s < n; s++) first_reader[s] = -1;
  for (int s = n - 1; s >= 0; s--) /* an edge per (reader, slot): s * MAX_IO + k */
    for (int k = PLM__PIPE_MAX_IO - 1; k >= 0; k--) {
      int t = plan->steps[s].inputs[k];
      int p = t >= 0 ? plan->tensors[t].producer : -1;
      if (p < 0) continue;
      pending[s]++;
      next_reader[s * PLM__PIPE_MAX_IO + k] = first_reader[p];
      first_reader[p] = s * PLM__PIPE_MAX_IO + k;
    }
  int ready = 0;
  for (int s = 0; s < n; s++)
    if (pending[s] == 0) heap_push(heap, &ready, s);
  for (int placed = 0; placed < n; placed++) {
    PLM_ASSERT(ready > 0); /* handles only name existing tensors: no cycles */
    const int next = heap_pop(heap, &ready);
    sorted[placed] = plan->steps[next];
    for (int e = first_reader[next]; e >= 0; e = next_reader[e])
      if (--pending[e / PLM__PIPE_MAX_IO] == 0) heap_push(heap, &ready, e / PLM__PIPE_MAX_IO);
  }
  memcpy(plan->steps, sorted, (size_t)n * sizeof *sorted);
  for (int s = 0; s < n; s++)
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++)
      if (plan->steps[s].outputs[k] >= 0) plan->tensors[plan->steps[s].outputs[k]].producer = s;
  free(sorted);
  free(pending);
  free(heap);
  free(first_reader);
  free(next_reader);
  return PLM_OK;
}

static void add_wait(plm__step *step, int event) {
  for (int w = 0; w < step->wait_count; w++)
    if (step->waits[w] == event) return;
  PLM_ASSERT(step->wait_count < PLM__PIPE_MAX_WAITS);
  step->waits[step->wait_count++] = event;
}

/* Streams, events and clocks (pipeline_internal.h). */
static plm_status assign_streams(plm__plan *plan, int max_streams) {
  const int n = plan->step_count;
  int tail[PLM_PIPELINE_MAX_STREAMS], length[PLM_PIPELINE_MAX_STREAMS] = {0}, streams = 0;
  for (int s = 0; s < PLM_PIPELINE_MAX_STREAMS; s++) tail[s] = -1;
  for (int v = 0; v < n; v++) {
    plm__step *step = &plan->steps[v];
    int chosen = -1;
    for (int k = 0; k < PLM__PIPE_MAX_IO && chosen < 0; k++) {
      int t = step->inputs[k];
      int p = t >= 0 ? plan->tensors[t].producer : -1;
      if (p >= 0 && tail[plan->steps[p].stream] == p) chosen = plan->steps[p].stream;
    }
    if (chosen < 0 && streams < max_streams) chosen = streams++;
    if (chosen < 0) { /* every stream is taken: the one idle longest */
      chosen = 0;
      for (int s = 1; s < streams; s++)
        if (tail[s] < tail[chosen]) chosen = s;
    }
    step->stream = chosen;
    step->position = ++length[chosen];
    tail[chosen] = v;
  }
  plan->stream_count = streams ? streams : 1;

  /* Events: the fork (0) when there are branches, one per step read on another stream,
   * then the joins. */
  int events = plan->stream_count > 1 ? 1 : 0;
  for (int v = 0; v < n; v++) {
    plm__step *step = &plan->steps[v];
    if (step->stream != 0 && step->position == 1) add_wait(step, 0);
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
      int t = step->inputs[k];
      int p = t >= 0 ? plan->tensors[t].producer : -1;
      if (p < 0 || plan->steps[p].stream == step->stream) continue;
      if (plan->steps[p].record < 0) plan->steps[p].record = events++;
      add_wait(step, plan->steps[p].record);
    }
  }
  plan->join_events = calloc(PLM_PIPELINE_MAX_STREAMS, sizeof *plan->join_events);
  plan->clock = calloc((size_t)n * PLM_PIPELINE_MAX_STREAMS + 1, sizeof *plan->clock);
  if (!plan->join_events || !plan->clock)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  for (int s = 1; s < plan->stream_count; s++) plan->join_events[s] = events++;
  plan->event_count = events;

  /* Clocks: what each step's start is ordered after. recorded_by[e]: the step that
   * records event e (-1: the fork and the joins). */
  int *recorded_by = malloc(((size_t)events + 1) * sizeof *recorded_by);
  if (!recorded_by) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  for (int e = 0; e < events; e++) recorded_by[e] = -1;
  for (int v = 0; v < n; v++)
    if (plan->steps[v].record >= 0) recorded_by[plan->steps[v].record] = v;
  int last_on[PLM_PIPELINE_MAX_STREAMS];
  for (int s = 0; s < PLM_PIPELINE_MAX_STREAMS; s++) last_on[s] = -1;
  for (int v = 0; v < n; v++) {
    const plm__step *step = &plan->steps[v];
    int *clock = &plan->clock[(size_t)v * PLM_PIPELINE_MAX_STREAMS];
    int before[PLM__PIPE_MAX_WAITS + 1], count = 0;
    if (last_on[step->stream] >= 0) before[count++] = last_on[step->stream];
    for (int w = 0; w < step->wait_count; w++) {
      const int u = step->waits[w] != 0 ? recorded_by[step->waits[w]] : -1;
      if (u >= 0 && u < v) before[count++] = u;
    }
    for (int b = 0; b < count; b++) {
      const int u = before[b];
      const int *from = &plan->clock[(size_t)u * PLM_PIPELINE_MAX_STREAMS];
      for (int s = 0; s < PLM_PIPELINE_MAX_STREAMS; s++)
        if (from[s] > clock[s]) clock[s] = from[s];
      if (plan->steps[u].position > clock[plan->steps[u].stream])
        clock[plan->steps[u].stream] = plan->steps[u].position;
    }
    last_on[step->stream] = v;
  }
  free(recorded_by);
  return PLM_OK;
}

/* Where each tensor lives; the constants' offsets. */
static plm_status locate(plm__plan *plan) {
  plan->location = calloc((size_t)plan->tensor_count + 1, sizeof *plan->location);
  plan->offset = calloc((size_t)plan->tensor_count + 1, sizeof *plan->offset);
  if (!plan->location || !plan->offset)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  bool *read = calloc((size_t)plan->tensor_count + 1, sizeof *read);
  if (!read) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  for (int s = 0; s < plan->step_count; s++)
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++)
      if (plan->steps[s].inputs[k] >= 0) read[plan->steps[s].inputs[k]] = true;
  plan->constant_bytes = 0;
  for (int t = 0; t < plan->tensor_count; t++) {
    const plm__tensor *tensor = &plan->tensors[t];
    plm__location at = PLM__AT_NONE;
    if (tensor->kind == PLM__TENSOR_INPUT) at = PLM__AT_INPUT;
    if (tensor->kind == PLM__TENSOR_CONSTANT && read[t]) {
      at = PLM__AT_CONSTANT;
      plan->offset[t] = plan->constant_bytes;
      plan->constant_bytes +=
          (tensor->bytes + PLM__PIPE_ALIGN - 1) / PLM__PIPE_ALIGN * PLM__PIPE_ALIGN;
    }
    if (tensor->kind == PLM__TENSOR_VALUE && tensor->producer >= 0)
      at = tensor->io_index >= 0 ? PLM__AT_OUTPUT : PLM__AT_WORKSPACE;
    if (tensor->kind == PLM__TENSOR_PREVIOUS) at = PLM__AT_STATE; /* offset: place_states */
    plan->location[t] = at;
  }
  free(read);
  return PLM_OK;
}

/* A state of shape in the state block, for step (and the PREVIOUS tensor, or -1). */
static void add_state(plm__plan *plan, int step, int tensor, const plm_shape *shape) {
  plm__state *state = &plan->states[plan->state_count++];
  *state =
      (plm__state){.step = step, .tensor = tensor, .shape = *shape, .offset = plan->state_bytes};
  state->bytes = plm_dtype_size(shape->dtype);
  for (int d = 0; d < shape->ndim; d++) state->bytes *= (size_t)shape->dims[d];
  plan->state_bytes += (state->bytes + PLM__PIPE_ALIGN - 1) / PLM__PIPE_ALIGN * PLM__PIPE_ALIGN;
}

/* The previous values: each bound, and each read only by steps that happen before its
 * value's producer (which copies the frame's value over it), a state after the steps'. */
static plm_status place_previous(plm__plan *plan) {
  for (int t = 0; t < plan->tensor_count; t++) {
    const plm__tensor *previous = &plan->tensors[t];
    if (previous->kind != PLM__TENSOR_PREVIOUS) continue;
    if (previous->previous_of < 0)
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "previous value t%d is bound to no value (plm_pipeline_bind_previous)",
                           t + 1);
    const int producer = plan->tensors[previous->previous_of].producer;
    if (producer < 0) /* prune keeps it */
      return plm__fail_raw(PLM_ERR_INTERNAL, "the value of previous value t%d has no step", t + 1);
    for (int s = 0; s < plan->step_count; s++)
      if (s != producer && plm__step_reads(&plan->steps[s], t) &&
          !plm__plan_happens_before(plan, s, producer))
        return plm__fail_raw(
            PLM_ERR_INVALID_ARG,
            "node %d '%s' reads previous value t%d, but node %d '%s', which makes its value "
            "t%d, does not depend on it: the frame's value could replace the previous one "
            "before it is read",
            plan->steps[s].nodes[0], plm__op_name(plan->steps[s].kind), t + 1,
            plan->steps[producer].nodes[0], plm__op_name(plan->steps[producer].kind),
            previous->previous_of + 1);
    plan->offset[t] = plan->state_bytes;
    plan->tensors[t].state = plan->state_count;
    add_state(plan, producer, t, &previous->shape);
  }
  return PLM_OK;
}

/* The states of the stateful steps, each its own range of the state block, then the
 * previous values'. */
static plm_status place_states(plm__plan *plan, plm_context *ctx) {
  plm_tensor *described = malloc((size_t)plan->tensor_count * sizeof *described + 1);
  plan->states =
      calloc((size_t)plan->step_count + (size_t)plan->tensor_count + 1, sizeof *plan->states);
  if (!described || !plan->states) {
    free(described);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  }
  for (int t = 0; t < plan->tensor_count; t++)
    described[t] = plm__tensor_describe(ctx, &plan->tensors[t].shape);
  plan->state_count = 0;
  plan->state_bytes = 0;
  for (int s = 0; s < plan->step_count; s++) {
    plm__step *step = &plan->steps[s];
    const plm__op_desc *op = plm__op_get(step->kind);
    step->state = -1;
    if (!op->state_shape) continue;
    const plm__op_call call = plm__step_call(step->kind, step->inputs, step->outputs, &step->params,
                                             step->in_place, described);
    plm_shape shape;
    op->state_shape(&call, &shape);
    step->state = plan->state_count;
    add_state(plan, s, -1, &shape);
  }
  free(described);
  return place_previous(plan);
}

/* Each step checked by its op on descriptions of its tensors (and state) on ctx (the run
 * enqueues it with no checks), its cost model, its tunables' values on ctx (once: the run
 * reads them from the step) and the scratch its op needs with them on ctx's backend. */
static plm_status check_and_size(plm__plan *plan, plm_context *ctx) {
  plm_tensor *described = malloc((size_t)plan->tensor_count * sizeof *described + 1);
  if (!described) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  for (int t = 0; t < plan->tensor_count; t++)
    described[t] = plm__tensor_describe(ctx, &plan->tensors[t].shape);
  plm_status status = PLM_OK;
  for (int s = 0; s < plan->step_count && status == PLM_OK; s++) {
    plm__step *step = &plan->steps[s];
    const plm__op_desc *op = plm__op_get(step->kind);
    plm__op_call call = plm__step_call(step->kind, step->inputs, step->outputs, &step->params,
                                       step->in_place, described);
    plm_tensor state;
    if (step->state >= 0) {
      state = plm__tensor_describe(ctx, &plan->states[step->state].shape);
      call.state = &state;
    }
    step->scratch_bytes = 0;
    status = plm__op_check_call(op, NULL, &call);
    if (status == PLM_OK) {
      op->cost(&call, &step->cost);
      plm__op_tuning_resolve(ctx, op, &call, &step->tuning);
      call.tuning = &step->tuning;
      status = plm__op_scratch_of(op, ctx, &call, &step->scratch_bytes);
    }
    if (status != PLM_OK)
      status = plm__pipe_reraise(status, "step %d '%s' (node %d)", s, op->name, step->nodes[0]);
  }
  free(described);
  return status;
}

plm_status plm__plan_build(plm_context *ctx, const plm__graph *graph, const plm_plan_config *config,
                           bool substitute, plm__plan *plan) {
  *plan = (plm__plan){0};
  plm_status status = lower(graph, plan);
  if (status == PLM_OK) status = prune(plan);
  if (status == PLM_OK) status = fuse(plan, substitute);
  if (status == PLM_OK) status = order(plan);
  if (status == PLM_OK) status = assign_streams(plan, config->max_streams);
  if (status == PLM_OK) status = locate(plan);
  if (status == PLM_OK) status = place_states(plan, ctx);
  if (status == PLM_OK) status = check_and_size(plan, ctx);
  if (status == PLM_OK) status = plm__plan_memory(plan, !(config->flags & PLM_PLAN_NO_REUSE));
  if (status != PLM_OK) plm__plan_free(plan);
  return status;
}

/* pipeline/describe.c: a pipeline's graph and plan as text for people
 * (plm_pipeline_describe). */
#include <stdarg.h>
#include <stdio.h>

#include "pipeline/pipeline_internal.h"
#include "streams/error.h"

/* Text accumulated snprintf-style: `used` may exceed `size`, and is the length the whole
 * text would have. */
typedef struct text_buffer {
  char *buf;
  size_t size, used;
} text_buffer;

static void text_printf(text_buffer *text, const char *fmt, ...) PLM__PRINTF(2, 3);
static void text_printf(text_buffer *text, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  size_t room = text->used < text->size ? text->size - text->used : 0;
  int wrote = vsnprintf(room ? text->buf + text->used : NULL, room, fmt, args);
  va_end(args);
  if (wrote > 0) text->used += (size_t)wrote;
}

/* " window=16 bins=0 range=0,0": every parameter of the op's schema as the text form
 * writes it (ops/op_desc.h). */
static void params_text(text_buffer *text, plm__op_kind kind, const plm__op_params *params) {
  const plm__op_desc *op = plm__op_get(kind);
  for (int i = 0; i < op->param_count; i++) {
    char value[96];
    plm__op_param_format(&op->params[i], params, value, sizeof value);
    text_printf(text, " %s=%s", op->params[i].name, value);
  }
}

/* "    tuned: bands_per_thread=8 (default 4)": the values compile resolved for the step's
 * tunables on the pipeline's backend (plume/tuning.h), or nothing when it has none. */
static void tuning_text(text_buffer *text, const plm_pipeline *pl, const plm__step *step) {
  const plm__op_desc *op = plm__op_get(step->kind);
  const char *sep = "    tuned: ";
  for (int k = 0; k < op->tunable_count; k++) {
    const plm__op_tunable *t = &op->tunables[k];
    if (t->backend != pl->ctx->info.backend) continue;
    text_printf(text, "%s%s=%lld", sep, t->name, (long long)step->tuning.values[k]);
    if (step->tuning.values[k] != t->fallback)
      text_printf(text, " (default %lld)", (long long)t->fallback);
    sep = ", ";
  }
  if (sep[0] == ',') text_printf(text, "\n");
}

static void shape_text(text_buffer *text, const plm_shape *shape) {
  text_printf(text, "%s ", plm_dtype_name(shape->dtype));
  for (int d = 0; d < shape->ndim; d++)
    text_printf(text, d ? "x%lld" : "%lld", (long long)shape->dims[d]);
}

/* "in=t1, kernel=t2" */
static void operands_text(text_buffer *text, plm__op_kind kind, const int *tensors, bool outputs) {
  const char *sep = "";
  for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
    if (tensors[k] < 0) continue;
    const char *name = outputs ? plm__op_output_name(kind, k) : plm__op_input_name(kind, k);
    text_printf(text, "%s%s=t%d", sep, name, tensors[k] + 1);
    sep = ", ";
  }
}

static void graph_text(text_buffer *text, const plm__graph *g) {
  for (int i = 0; i < g->input_count; i++) {
    text_printf(text, "  input %d: t%d ", i, g->inputs[i] + 1);
    shape_text(text, &g->tensors[g->inputs[i]].shape);
    text_printf(text, "\n");
  }
  for (int t = 0; t < g->tensor_count; t++) {
    if (g->tensors[t].kind != PLM__TENSOR_CONSTANT) continue;
    text_printf(text, "  constant: t%d ", t + 1);
    shape_text(text, &g->tensors[t].shape);
    text_printf(text, "\n");
  }
  for (int t = 0; t < g->tensor_count; t++) {
    if (g->tensors[t].kind != PLM__TENSOR_PREVIOUS) continue;
    text_printf(text, "  previous: t%d ", t + 1);
    shape_text(text, &g->tensors[t].shape);
    if (g->tensors[t].previous_of >= 0)
      text_printf(text, ", t%d of the frame before", g->tensors[t].previous_of + 1);
    text_printf(text, "\n");
  }
  for (int n = 0; n < g->node_count; n++) {
    const plm__node *node = &g->nodes[n];
    text_printf(text, "  node %d: %s(", n, plm__op_name(node->kind));
    operands_text(text, node->kind, node->inputs, false);
    text_printf(text, ")");
    params_text(text, node->kind, &node->params);
    text_printf(text, " ->");
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
      int t = node->outputs[k];
      if (t < 0) continue;
      text_printf(text, " %s=t%d ", plm__op_output_name(node->kind, k), t + 1);
      shape_text(text, &g->tensors[t].shape);
      if (g->tensors[t].io_index >= 0) text_printf(text, " [output %d]", g->tensors[t].io_index);
    }
    text_printf(text, "\n");
  }
}

static void location_text(text_buffer *text, const plm_pipeline *pl, int t) {
  const plm__plan *plan = &pl->plan;
  size_t offset = plan->offset[t], end = offset + plan->tensors[t].bytes;
  if (plan->location[t] == PLM__AT_WORKSPACE && (pl->config.flags & PLM_PLAN_ALLOCATE_PER_RUN)) {
    text_printf(text, "a block allocated per run");
    return;
  }
  switch (plan->location[t]) {
    case PLM__AT_INPUT: text_printf(text, "input %d", plan->tensors[t].io_index); break;
    case PLM__AT_OUTPUT: text_printf(text, "output %d", plan->tensors[t].io_index); break;
    case PLM__AT_CONSTANT: text_printf(text, "constants[%zu, %zu)", offset, end); break;
    case PLM__AT_WORKSPACE: text_printf(text, "workspace[%zu, %zu)", offset, end); break;
    case PLM__AT_STATE: text_printf(text, "state[%zu, %zu)", offset, end); break;
    case PLM__AT_NONE: text_printf(text, "unused"); break;
  }
}

static void plan_text(text_buffer *text, const plm_pipeline *pl) {
  const plm__plan *plan = &pl->plan;
  text_printf(text, "plan: %d step(s) on %d stream(s), %d event(s) per slot, %d frame slot(s)\n",
              plan->step_count, plan->stream_count, plan->event_count, pl->config.frames_in_flight);
  for (int s = 0; s < plan->step_count; s++) {
    const plm__step *step = &plan->steps[s];
    text_printf(text, "  step %d [stream %d] %s", s, step->stream, plm__op_name(step->kind));
    params_text(text, step->kind, &step->params);
    text_printf(text, " (node");
    for (int n = 0; n < 3 && step->nodes[n] >= 0; n++) text_printf(text, " %d", step->nodes[n]);
    text_printf(text, ")%s\n", step->in_place ? " in place" : "");
    for (int w = 0; w < step->wait_count; w++)
      text_printf(text, "%s%d%s", w ? ", e" : "    waits for e", step->waits[w],
                  w + 1 == step->wait_count ? "\n" : "");
    for (int io = 0; io < 2; io++) {
      const int *tensors = io ? step->outputs : step->inputs;
      for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
        if (tensors[k] < 0) continue;
        const char *name =
            io ? plm__op_output_name(step->kind, k) : plm__op_input_name(step->kind, k);
        text_printf(text, "    %s %s=t%d ", io ? "writes" : "reads ", name, tensors[k] + 1);
        shape_text(text, &plan->tensors[tensors[k]].shape);
        text_printf(text, " at ");
        location_text(text, pl, tensors[k]);
        text_printf(text, "\n");
      }
    }
    if (step->scratch_bytes)
      text_printf(text, "    scratch %zu bytes at workspace[%zu, %zu)\n", step->scratch_bytes,
                  step->scratch_offset, step->scratch_offset + step->scratch_bytes);
    tuning_text(text, pl, step);
    if (step->record >= 0) text_printf(text, "    then records e%d\n", step->record);
    if (step->state >= 0) {
      const plm__state *state = &plan->states[step->state];
      text_printf(text, "    state s%d ", step->state);
      shape_text(text, &state->shape);
      text_printf(text,
                  " at state[%zu, %zu), read and written: after the previous frame's update "
                  "(its slot's state event), then records this slot's for the next frame\n",
                  state->offset, state->offset + state->bytes);
    }
    for (int j = 0; j < plan->state_count; j++)
      if (plan->states[j].tensor >= 0 && plan->states[j].step == s)
        text_printf(text,
                    "    keeps t%d for the next frame: copies it over t%d (state s%d), then "
                    "records this slot's state event for the next frame's readers\n",
                    plan->tensors[plan->states[j].tensor].previous_of + 1,
                    plan->states[j].tensor + 1, j);
  }
  for (int s = 1; s < plan->stream_count; s++)
    text_printf(text, "  stream %d records e%d at the end; stream 0 waits for it\n", s,
                plan->join_events[s]);
  text_printf(text,
              "memory: workspace %zu bytes per frame slot; intermediates %zu bytes; scratch "
              "%zu bytes; peak live %zu bytes; constants %zu bytes; %d step(s) in place\n",
              plan->workspace_bytes, plan->intermediate_bytes, plan->scratch_bytes,
              plan->peak_live_bytes, plan->constant_bytes, plan->in_place);
  if (pl->config.flags & PLM_PLAN_ALLOCATE_PER_RUN)
    text_printf(text, "memory: intermediates and scratch allocated per run, no workspace\n");
  if (plan->state_count)
    text_printf(text,
                "state: %d state(s), %zu bytes for the pipeline (not per slot); frame k's "
                "updates follow frame k-1's across slots\n",
                plan->state_count, plan->state_bytes);
  if (pl->config.flags & PLM_PLAN_SYNCHRONOUS_STEPS)
    text_printf(text, "steps: the host waits after every step\n");
  text_printf(text, "fusion: %d chain(s) found, %d fused\n", plan->fusable_chains,
              plan->fused_steps);
  text_printf(text, "cost: %.0f device bytes, %.0f flops per frame\n", pl->device_bytes, pl->flops);
  if (pl->predicted) {
    const plm_placement *p = &pl->placement;
    text_printf(text, "placement: predicted per frame: host ");
    text_printf(text, p->host_ms > 0 ? "%.4f ms (%.4f ms of copies)" : "not available", p->host_ms,
                p->host_copy_ms);
    text_printf(text, ", cuda ");
    text_printf(text,
                p->cuda_ms > 0 ? "%.4f ms (%.4f ms of copies%s: %.0f bytes up, %.0f down)"
                               : "not available",
                p->cuda_ms, p->cuda_copy_ms,
                p->copies_overlapped ? ", beside another frame's steps" : "", p->input_bytes,
                p->output_bytes);
    text_printf(text, " -> %s", plm_backend_name(p->choice));
    if (p->corrected_steps)
      text_printf(text, " (%d step time(s) corrected by a tuning table)", p->corrected_steps);
    text_printf(text, "\n");
  }
}

plm_status plm_pipeline_describe(const plm_pipeline *pl, char *buf, size_t size, size_t *needed) {
  PLM__REQUIRE_NOT_NULL(pl);
  if (!buf && size > 0) return plm__fail(PLM_ERR_INVALID_ARG, "buf is NULL but size is %zu", size);
  text_buffer text = {.buf = buf, .size = size};
  const plm__graph *g = &pl->graph;
  text_printf(&text, "pipeline: %d input(s), %d node(s), %d output(s)%s\n", g->input_count,
              g->node_count, g->output_count, pl->compiled ? ", compiled" : "");
  graph_text(&text, g);
  if (pl->compiled) plan_text(&text, pl);
  if (size > 0 && text.used >= size) buf[size - 1] = '\0';
  if (needed) *needed = text.used + 1;
  return PLM_OK;
}

/* pipeline/lifecycle.c: a pipeline's life: create, compile (plan and runtime objects),
 * destroy, and the plan's figures (plume/pipeline.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline_internal.h"
#include "profile/profile_internal.h"
#include "streams/error.h"

enum { DEFAULT_STREAMS = 4 };

static atomic_uint next_serial = 1;

/* ---- runtime objects ------------------------------------------------------------------------ */

/* Destroy the slots' streams and events, and give the memory back to the pool when
 * `free_memory` (not when the context is being destroyed: its pools may be gone, and
 * they release everything themselves). The device work must have finished. */
static void release_runtime(plm_pipeline *pl, bool free_memory) {
  for (int k = 0; pl->slots && k < pl->config.frames_in_flight; k++) {
    plm__slot *slot = &pl->slots[k];
    if (free_memory && slot->workspace) plm_pool_free(pl->pool, slot->workspace, pl->control);
    for (int s = 1; s < PLM_PIPELINE_MAX_STREAMS; s++) plm_stream_destroy(slot->streams[s]);
    for (int e = 0; slot->events && e < pl->plan.event_count; e++)
      plm_event_destroy(slot->events[e]);
    plm_event_destroy(slot->done);
    for (int j = 0; slot->state_events && j < pl->plan.state_count; j++)
      plm_event_destroy(slot->state_events[j]);
    free(slot->state_events);
    free(slot->events);
    free(slot->tensors);
  }
  free(pl->slots);
  pl->slots = NULL;
  if (free_memory && pl->constants) plm_pool_free(pl->pool, pl->constants, pl->control);
  pl->constants = NULL;
  if (free_memory && pl->state) plm_pool_free(pl->pool, pl->state, pl->control);
  pl->state = NULL;
  free(pl->state_tensors);
  free(pl->state_fresh);
  free(pl->state_last);
  free(pl->saved_last);
  free(pl->saved_fresh);
  pl->state_tensors = NULL;
  pl->state_fresh = NULL;
  pl->state_last = pl->saved_last = NULL;
  pl->saved_fresh = NULL;
  plm_stream_destroy(pl->control); /* waits for the frees' place in its order */
  pl->control = NULL;
  free(pl->release_after);
  pl->release_after = NULL;
  plm__plan_free(&pl->plan);
  pl->compiled = false;
}

static plm_status create_slot(plm_pipeline *pl, plm__slot *slot) {
  const plm__plan *plan = &pl->plan;
  plm_status status = PLM_OK;
  if (plan->workspace_bytes)
    status = plm_pool_alloc(pl->pool, plan->workspace_bytes, pl->control, &slot->workspace);
  for (int s = 1; status == PLM_OK && s < plan->stream_count; s++)
    status = plm_stream_create(pl->ctx, PLM_STREAM_DEFAULT, &slot->streams[s]);
  slot->events = calloc((size_t)plan->event_count + 1, sizeof *slot->events);
  slot->tensors = calloc((size_t)plan->tensor_count + 1, sizeof *slot->tensors);
  slot->state_events = calloc((size_t)plan->state_count + 1, sizeof *slot->state_events);
  if (status == PLM_OK && (!slot->events || !slot->tensors || !slot->state_events))
    status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a frame slot");
  for (int e = 0; status == PLM_OK && e < plan->event_count; e++)
    status = plm_event_create(pl->ctx, PLM_EVENT_DISABLE_TIMING, &slot->events[e]);
  for (int j = 0; status == PLM_OK && j < plan->state_count; j++)
    status = plm_event_create(pl->ctx, PLM_EVENT_DISABLE_TIMING, &slot->state_events[j]);
  if (status == PLM_OK) status = plm_event_create(pl->ctx, PLM_EVENT_DISABLE_TIMING, &slot->done);
  if (status != PLM_OK) return status;
  for (int t = 0; t < plan->tensor_count; t++) {
    plm_tensor *tensor = &slot->tensors[t];
    *tensor = plm__tensor_describe(pl->ctx, &plan->tensors[t].shape);
    if (plan->location[t] == PLM__AT_WORKSPACE && slot->workspace) /* else: per run */
      tensor->data = (char *)slot->workspace + plan->offset[t];
    if (plan->location[t] == PLM__AT_CONSTANT)
      tensor->data = (char *)pl->constants + plan->offset[t];
    if (plan->location[t] == PLM__AT_STATE) tensor->data = (char *)pl->state + plan->offset[t];
  }
  return PLM_OK;
}

/* The state block and the states' tensors in it, each fresh (its first update
 * initialises it, and a previous value is zeroed before the first frame reads it: the
 * memory is not read before). */
static plm_status create_states(plm_pipeline *pl) {
  const plm__plan *plan = &pl->plan;
  const size_t n = (size_t)plan->state_count + 1;
  pl->state_tensors = calloc(n, sizeof *pl->state_tensors);
  pl->state_fresh = calloc(n, sizeof *pl->state_fresh);
  pl->state_last = calloc(n, sizeof *pl->state_last);
  pl->saved_last = calloc(n, sizeof *pl->saved_last);
  pl->saved_fresh = calloc(n, sizeof *pl->saved_fresh);
  if (!pl->state_tensors || !pl->state_fresh || !pl->state_last || !pl->saved_last ||
      !pl->saved_fresh)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the pipeline's state");
  if (plan->state_bytes == 0) return PLM_OK;
  plm_status status = plm_pool_alloc(pl->pool, plan->state_bytes, pl->control, &pl->state);
  for (int j = 0; status == PLM_OK && j < plan->state_count; j++) {
    pl->state_tensors[j] = plm__tensor_describe(pl->ctx, &plan->states[j].shape);
    pl->state_tensors[j].data = (char *)pl->state + plan->states[j].offset;
    pl->state_fresh[j] = true;
  }
  return status;
}

/* The runtime of a built plan: control stream, constants, state, slots. */
static plm_status create_runtime(plm_pipeline *pl) {
  const plm__plan *plan = &pl->plan;
  plm_status status = plm_stream_create(pl->ctx, PLM_STREAM_DEFAULT, &pl->control);
  if (status == PLM_OK && plan->constant_bytes)
    status = plm_pool_alloc(pl->pool, plan->constant_bytes, pl->control, &pl->constants);
  if (status == PLM_OK) status = create_states(pl);
  for (int t = 0; status == PLM_OK && t < plan->tensor_count; t++)
    if (plan->location[t] == PLM__AT_CONSTANT)
      status =
          plm_stream_memcpy(pl->control, (char *)pl->constants + plan->offset[t],
                            plan->tensors[t].host, plan->tensors[t].bytes, PLM_COPY_HOST_TO_DEVICE);
  if (status == PLM_OK) {
    pl->slots = calloc((size_t)pl->config.frames_in_flight, sizeof *pl->slots);
    if (!pl->slots) status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for frame slots");
  }
  for (int k = 0; status == PLM_OK && k < pl->config.frames_in_flight; k++)
    status = create_slot(pl, &pl->slots[k]);
  /* The memory was allocated on the control stream (which may have been made to wait for
   * other streams' frees) and the constants copied there: once it is idle, every stream
   * may use them. */
  if (status == PLM_OK) status = plm_stream_synchronize(pl->control);
  return status;
}

/* ---- the attachment: the context destroys a pipeline left alive --------------------------- */

static void destroy_pipeline(plm_pipeline *pl, bool free_memory) {
  if (pl->compiled || pl->control) release_runtime(pl, free_memory);
  plm__plan_free(&pl->plan);
  plm__graph_free(&pl->graph);
  free(pl);
}

static void destroy_attached(plm__attachment *self) {
  plm_pipeline *pl = (plm_pipeline *)(void *)((char *)self - offsetof(plm_pipeline, attachment));
  destroy_pipeline(pl, false);
}

/* ---- the public API ------------------------------------------------------------------------- */

plm_status plm_pipeline_create(plm_context *ctx, plm_pipeline **out) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  plm_pipeline *pl = calloc(1, sizeof *pl);
  if (!pl) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory for a pipeline");
  pl->ctx = ctx;
  atomic_init(&pl->streaming, false);
  pl->serial = atomic_fetch_add(&next_serial, 1);
  if (pl->serial == 0) pl->serial = atomic_fetch_add(&next_serial, 1); /* 0 means "none" */
  pl->attachment = (plm__attachment){
      .kind = "pipeline", .report_if_leftover = true, .destroy = destroy_attached};
  plm__context_attach(ctx, &pl->attachment);
  *out = pl;
  return PLM_OK;
}

plm_status plm_pipeline_set_profiler(plm_pipeline *pl, plm_profiler *profiler) {
  PLM__REQUIRE_NOT_NULL(pl);
  if (profiler && plm__profiler_context(profiler) != pl->ctx)
    return plm__fail(PLM_ERR_INVALID_ARG, "profiler belongs to another context than the pipeline");
  if (profiler) plm__profiler_attach(profiler, +1);
  if (pl->profiler) plm__profiler_attach(pl->profiler, -1);
  pl->profiler = profiler;
  return PLM_OK;
}

plm_status plm_pipeline_destroy(plm_pipeline *pl) {
  if (!pl) return PLM_OK;
  PLM__REFUSE_IN_HOST_CALLBACK();
  plm_status status = PLM_OK;
  if (pl->compiled) status = plm_context_synchronize(pl->ctx); /* the frames in flight */
  if (pl->profiler) plm__profiler_attach(pl->profiler, -1);
  plm__context_detach(pl->ctx, &pl->attachment);
  destroy_pipeline(pl, true);
  return plm__propagate(status);
}

static plm_status check_config(const plm_pipeline *pl, const plm_plan_config *cfg) {
  if (cfg->frames_in_flight < 0 || cfg->frames_in_flight > PLM_PIPELINE_MAX_FRAMES)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "cfg->frames_in_flight %d is not in 0..%d",
                         cfg->frames_in_flight, PLM_PIPELINE_MAX_FRAMES);
  if (cfg->max_streams < 0 || cfg->max_streams > PLM_PIPELINE_MAX_STREAMS)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "cfg->max_streams %d is not in 0..%d",
                         cfg->max_streams, PLM_PIPELINE_MAX_STREAMS);
  if (cfg->flags & ~(unsigned)(PLM_PLAN_NO_FUSION | PLM_PLAN_NO_REUSE | PLM_PLAN_ALLOCATE_PER_RUN |
                               PLM_PLAN_SYNCHRONOUS_STEPS | PLM_PLAN_FUSE))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "cfg->flags 0x%x has unknown bits", cfg->flags);
  if ((cfg->flags & PLM_PLAN_FUSE) && (cfg->flags & PLM_PLAN_NO_FUSION))
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "cfg->flags has both PLM_PLAN_FUSE and PLM_PLAN_NO_FUSION");
  plm_context *pool_ctx = NULL;
  if (cfg->pool && plm_pool_context(cfg->pool, &pool_ctx) == PLM_OK && pool_ctx != pl->ctx)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "cfg->pool belongs to another context");
  if (pl->graph.output_count == 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "the pipeline has no output (plm_pipeline_mark_output)");
  return PLM_OK;
}

plm_status plm_pipeline_compile(plm_pipeline *pl, const plm_plan_config *cfg) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REFUSE_IN_HOST_CALLBACK();
  if (pl->compiled) return plm__fail(PLM_ERR_INVALID_STATE, "the pipeline is compiled already");
  plm_plan_config config = cfg ? *cfg : (plm_plan_config){0};
  plm_status status = check_config(pl, &config);
  if (status != PLM_OK) return plm__propagate(status);
  if (config.frames_in_flight == 0) config.frames_in_flight = 1;
  if (config.max_streams == 0) config.max_streams = DEFAULT_STREAMS;
  pl->pool = config.pool;
  if (!pl->pool) status = plm_context_default_pool(pl->ctx, &pl->pool);
  /* Fusion by default where the fused op pays: not on cuda (plume/pipeline.h, compile). */
  const bool fuse = (config.flags & PLM_PLAN_FUSE) || (!(config.flags & PLM_PLAN_NO_FUSION) &&
                                                       pl->ctx->info.backend != PLM_BACKEND_CUDA);
  const bool per_run = config.flags & PLM_PLAN_ALLOCATE_PER_RUN;
  /* Per run, every intermediate is a block of its own: planned without reuse, and
   * without the workspace that plan would need. */
  plm_plan_config planned = config;
  if (per_run) planned.flags |= PLM_PLAN_NO_REUSE;
  if (status == PLM_OK) status = plm__plan_build(pl->ctx, &pl->graph, &planned, fuse, &pl->plan);
  if (status != PLM_OK) return plm__propagate(status);
  if (per_run) pl->plan.workspace_bytes = 0;
  pl->config = config;
  if (per_run) status = plm__per_run_prepare(pl);
  if (status == PLM_OK) status = create_runtime(pl);
  if (status == PLM_OK) status = plm__plan_cost(pl, &pl->device_bytes, &pl->flops);
  if (status != PLM_OK) {
    release_runtime(pl, true);
    return plm__propagate(status);
  }
  pl->compiled = true;
  return PLM_OK;
}

plm_status plm_pipeline_plan_info(const plm_pipeline *pl, plm_plan_info *out) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(out);
  if (!pl->compiled) return plm__fail(PLM_ERR_INVALID_STATE, "the pipeline is not compiled");
  const plm__plan *plan = &pl->plan;
  *out = (plm_plan_info){.workspace_bytes = plan->workspace_bytes,
                         .intermediate_bytes = plan->intermediate_bytes,
                         .scratch_bytes = plan->scratch_bytes,
                         .peak_live_bytes = plan->peak_live_bytes,
                         .constant_bytes = plan->constant_bytes,
                         .frames_in_flight = pl->config.frames_in_flight,
                         .nodes = pl->graph.node_count,
                         .steps = plan->step_count,
                         .fusable_chains = plan->fusable_chains,
                         .fused_steps = plan->fused_steps,
                         .in_place = plan->in_place,
                         .streams = plan->stream_count,
                         .events = plan->event_count,
                         .device_bytes = pl->device_bytes,
                         .flops = pl->flops,
                         .states = plan->state_count,
                         .state_bytes = plan->state_bytes};
  return PLM_OK;
}

void plm__pipeline_state_save(plm_pipeline *pl) {
  for (int j = 0; j < pl->plan.state_count; j++) {
    pl->saved_last[j] = pl->state_last[j];
    pl->saved_fresh[j] = pl->state_fresh[j];
  }
}

void plm__pipeline_state_restore(plm_pipeline *pl) {
  for (int j = 0; j < pl->plan.state_count; j++) {
    pl->state_last[j] = pl->saved_last[j];
    pl->state_fresh[j] = pl->saved_fresh[j];
  }
}

void plm__pipeline_state_replayed(plm_pipeline *pl, int slot) {
  for (int j = 0; j < pl->plan.state_count; j++) {
    pl->state_last[j] = pl->slots[slot].state_events[j];
    pl->state_fresh[j] = false;
  }
}

plm_status plm_pipeline_reset_state(plm_pipeline *pl) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REFUSE_IN_HOST_CALLBACK();
  if (!pl->compiled) return plm__fail(PLM_ERR_INVALID_STATE, "the pipeline is not compiled");
  if (atomic_load(&pl->streaming))
    return plm__fail(PLM_ERR_INVALID_STATE,
                     "plm_pipeline_run_stream is running this pipeline (its frames share the "
                     "state in order); reset after it returns");
  for (int j = 0; j < pl->plan.state_count; j++) pl->state_fresh[j] = true;
  return PLM_OK;
}

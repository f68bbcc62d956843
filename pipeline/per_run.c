/* pipeline/per_run.c: intermediates allocated per run (PLM_PLAN_ALLOCATE_PER_RUN in
 * plume/pipeline.h; the functions are described in pipeline_internal.h).
 *
 * An intermediate is allocated on its producer's stream just before the producer is
 * enqueued, so every later use on that stream may use it, and uses on other streams are
 * ordered after it by the plan's events. It is freed after its last use L, on L's stream,
 * when every other use happens before L (then nothing enqueued later can touch it);
 * otherwise, after the branches have joined, on the run's stream, which by then follows
 * every step of the frame.
 */
#include <stdlib.h>

#include "pipeline/pipeline_internal.h"
#include "streams/error.h"

/* Whether step s reads tensor t. */
static bool reads(const plm__step *step, int t) {
  return plm__step_reads(step, t);
}

plm_status plm__per_run_prepare(plm_pipeline *pl) {
  const plm__plan *plan = &pl->plan;
  pl->release_after = malloc(((size_t)plan->tensor_count + 1) * sizeof *pl->release_after);
  if (!pl->release_after)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  for (int t = 0; t < plan->tensor_count; t++) {
    pl->release_after[t] = -1;
    if (plan->location[t] != PLM__AT_WORKSPACE) continue;
    const int producer = plan->tensors[t].producer;
    int last = producer;
    for (int s = producer + 1; s < plan->step_count; s++)
      if (reads(&plan->steps[s], t)) last = s;
    bool ordered = plm__plan_happens_before(plan, producer, last) || producer == last;
    for (int s = producer + 1; ordered && s < last; s++)
      if (reads(&plan->steps[s], t)) ordered = plm__plan_happens_before(plan, s, last);
    if (ordered) pl->release_after[t] = last;
  }
  return PLM_OK;
}

plm_status plm__per_run_acquire(plm_pipeline *pl, plm__slot *slot, int step, plm_stream *on) {
  const plm__plan *plan = &pl->plan;
  const plm__step *s = &plan->steps[step];
  for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
    const int t = s->outputs[k];
    if (t < 0 || plan->location[t] != PLM__AT_WORKSPACE) continue;
    const size_t bytes = plan->tensors[t].bytes ? plan->tensors[t].bytes : 1;
    plm_status status = plm_pool_alloc(pl->pool, bytes, on, &slot->tensors[t].data);
    if (status != PLM_OK) return status;
  }
  return PLM_OK;
}

static plm_status release(plm_pipeline *pl, plm__slot *slot, int t, plm_stream *on) {
  plm_status status = plm_pool_free(pl->pool, slot->tensors[t].data, on);
  slot->tensors[t].data = NULL;
  return status;
}

plm_status plm__per_run_release_after(plm_pipeline *pl, plm__slot *slot, int step, plm_stream *on) {
  const plm__plan *plan = &pl->plan;
  plm_status status = PLM_OK;
  for (int t = 0; t < plan->tensor_count; t++) {
    if (plan->location[t] != PLM__AT_WORKSPACE || pl->release_after[t] != step ||
        !slot->tensors[t].data)
      continue;
    plm_status freed = release(pl, slot, t, on);
    if (status == PLM_OK) status = freed;
  }
  return status;
}

plm_status plm__per_run_release_rest(plm_pipeline *pl, plm__slot *slot, plm_stream *stream) {
  const plm__plan *plan = &pl->plan;
  plm_status status = PLM_OK;
  for (int t = 0; t < plan->tensor_count; t++) {
    if (plan->location[t] != PLM__AT_WORKSPACE || !slot->tensors[t].data) continue;
    plm_status freed = release(pl, slot, t, stream);
    if (status == PLM_OK) status = freed;
  }
  return status;
}

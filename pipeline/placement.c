/* pipeline/placement.c: a compiled plan's predicted time per frame on each backend, and
 * the choice between them (plm_pipeline_predict, plm_pipeline_place; plume/pipeline.h), from
 * the model's pieces that one op call's prediction shares (pipeline/placement.h). */
#include "pipeline/placement.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_tuning.h"
#include "pipeline/pipeline_internal.h"
#include "profile/profile_internal.h"
#include "streams/backend.h"
#include "streams/error.h"

double plm__placement_launch_ms(const plm__op_desc *op, const plm_op_cost *cost,
                                const plm_profile_calibration *c, int *corrected) {
  plm_backend backend = PLM_BACKEND_HOST;
  plm_backend_parse(c->backend, &backend);
  const double model = plm__profile_model_ms(cost, c);
  double measured = 0.0;
  const bool found = plm__tuning_measured_ms(backend, c->device, op, model, &measured);
  *corrected += found;
  return found ? measured : model;
}

/* ms per frame of the plan's steps on a device of calibration c (*corrected counts the
 * steps a tuning table's points gave the time of). */
static double steps_ms(const plm__plan *plan, const plm_profile_calibration *c, int *corrected) {
  double ms = 0.0;
  for (int s = 0; s < plan->step_count; s++)
    ms += plm__placement_launch_ms(plm__op_get(plan->steps[s].kind), &plan->steps[s].cost, c,
                                   corrected);
  return ms;
}

static plm_status check_calibration(const plm_profile_calibration *c, const char *name,
                                    bool copies) {
  if (!c) return PLM_OK;
  if (!(c->device_copy_gbps > 0) || !(c->fma_gflops > 0))
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "%s->device_copy_gbps %g and ->fma_gflops %g must both be > 0", name,
                         c->device_copy_gbps, c->fma_gflops);
  if (copies && (!(c->h2d_gbps > 0) || !(c->d2h_gbps > 0)))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s->h2d_gbps %g and ->d2h_gbps %g must both be > 0",
                         name, c->h2d_gbps, c->d2h_gbps);
  return PLM_OK;
}

plm_status plm__placement_check(const plm_profile_calibration *host,
                                const plm_profile_calibration *cuda) {
  if (!host && !cuda) return plm__fail_raw(PLM_ERR_INVALID_ARG, "host and cuda are both NULL");
  plm_status status = check_calibration(host, "host", false);
  return status == PLM_OK ? check_calibration(cuda, "cuda", true) : status;
}

/* ms of the frame's copies on a device of calibration c: p's inputs in and outputs out at
 * its h2d and d2h bandwidths, and its copy latency per transfer (0 where c has no copy
 * bandwidths: a host calibration made by hand may leave them out). */
static double copies_ms(const plm_placement *p, int copies, const plm_profile_calibration *c) {
  if (!(c->h2d_gbps > 0) || !(c->d2h_gbps > 0)) return 0.0;
  return p->input_bytes / (c->h2d_gbps * 1e6) + p->output_bytes / (c->d2h_gbps * 1e6) +
         copies * c->copy_latency_us * 1e-3;
}

void plm__placement_choose(plm_placement *p, const plm_profile_calibration *host,
                           const plm_profile_calibration *cuda, int copies, bool overlap) {
  p->choice = PLM_BACKEND_HOST;
  if (host) {
    p->host_copy_ms = copies_ms(p, copies, host);
    p->host_ms += p->host_copy_ms;
  }
  if (!cuda) return;
  p->cuda_copy_ms = copies_ms(p, copies, cuda);
  p->copies_overlapped = overlap;
  p->cuda_ms = overlap ? fmax(p->cuda_ms, p->cuda_copy_ms) : p->cuda_ms + p->cuda_copy_ms;
  if (!host || p->cuda_ms < p->host_ms) p->choice = PLM_BACKEND_CUDA;
}

plm_status plm_pipeline_predict(plm_pipeline *pl, const plm_profile_calibration *host,
                                const plm_profile_calibration *cuda, plm_placement *out) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(out);
  if (!pl->compiled) return plm__fail(PLM_ERR_INVALID_STATE, "the pipeline is not compiled");
  plm_status status = plm__placement_check(host, cuda);
  if (status != PLM_OK) return plm__propagate(status);
  /* The tuning table of the pipeline's own device, loaded if no call has loaded it yet
   * (a pipeline of ops without tunables never asks for it at compile). */
  plm_tuning_table_info table;
  (void)plm_tuning_table_info_get(pl->ctx, &table);
  const plm__plan *plan = &pl->plan;
  plm_placement p = {.choice = PLM_BACKEND_HOST};
  int copies = 0;
  for (int t = 0; t < plan->tensor_count; t++) {
    const bool input = plan->location[t] == PLM__AT_INPUT;
    if (!input && plan->location[t] != PLM__AT_OUTPUT) continue;
    *(input ? &p.input_bytes : &p.output_bytes) += (double)plan->tensors[t].bytes;
    copies++;
  }
  if (host) p.host_ms = steps_ms(plan, host, &p.corrected_steps);
  if (cuda) p.cuda_ms = steps_ms(plan, cuda, &p.corrected_steps);
  /* Frames in flight on cuda: one frame's copies (the copy engines) run beside another's
   * steps (the SMs). Not on host, where both take the same cores, nor when the host waits
   * after every step. */
  const bool overlap =
      pl->config.frames_in_flight >= 2 && !(pl->config.flags & PLM_PLAN_SYNCHRONOUS_STEPS);
  plm__placement_choose(&p, host, cuda, copies, overlap);
  pl->placement = p;
  pl->predicted = true;
  *out = p;
  return PLM_OK;
}

/* The calibration of a context of backend (device 0), made for it. */
static plm_status calibrate_backend(plm_backend backend, plm_profile_calibration *out) {
  plm_context *ctx = NULL;
  plm_context_config config = {.backend = backend};
  plm_tuning_table_info table; /* loads the device's tuning table: the model's points */
  plm_status status = plm_context_create(&config, &ctx);
  if (status == PLM_OK) status = plm_tuning_table_info_get(ctx, &table);
  if (status == PLM_OK) status = plm__profile_calibrate(ctx, out);
  if (ctx) plm_context_destroy(ctx);
  return status;
}

plm_status plm__placement_rule(plm_backend *choice, bool *model) {
  const char *env = getenv("PLUME_BACKEND");
  plm_backend forced = PLM_BACKEND_AUTO;
  if (env && *env && plm_backend_parse(env, &forced) != PLM_OK)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "environment variable PLUME_BACKEND='%s' is not host, cuda or auto", env);
  *choice = forced == PLM_BACKEND_CUDA ? PLM_BACKEND_CUDA : PLM_BACKEND_HOST;
  *model = forced == PLM_BACKEND_AUTO && plm__cuda_auto_eligible();
  return PLM_OK;
}

plm_status plm__placement_calibrate(plm_profile_calibration *host, plm_profile_calibration *cuda) {
  plm_status status = calibrate_backend(PLM_BACKEND_HOST, host);
  return status == PLM_OK ? calibrate_backend(PLM_BACKEND_CUDA, cuda) : status;
}

plm_status plm_pipeline_place(plm_pipeline *pl, plm_backend *choice, plm_placement *out) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(choice);
  if (!pl->compiled) return plm__fail(PLM_ERR_INVALID_STATE, "the pipeline is not compiled");
  plm_placement p = {.choice = PLM_BACKEND_HOST};
  bool model = false;
  plm_status status = plm__placement_rule(&p.choice, &model);
  if (status == PLM_OK && model) {
    plm_profile_calibration host, cuda;
    status = plm__placement_calibrate(&host, &cuda);
    if (status == PLM_OK) status = plm_pipeline_predict(pl, &host, &cuda, &p);
  }
  if (status != PLM_OK) return plm__propagate(status);
  *choice = p.choice;
  if (out) *out = p;
  return PLM_OK;
}

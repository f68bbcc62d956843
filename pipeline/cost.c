/* pipeline/cost.c: a step's call on a tensor table and its cost; a plan's cost per frame,
 * the sum of its steps' cost models as compile computed them (plm_plan_info's
 * device_bytes and flops). */
#include "pipeline/pipeline_internal.h"
#include "streams/error.h"

plm__op_call plm__step_call(plm__op_kind kind, const int *inputs, const int *outputs,
                            const plm__op_params *params, bool in_place, plm_tensor *tensors) {
  const plm__op_desc *op = plm__op_get(kind);
  plm__op_call call = {.params = params};
  for (int k = 0; k < op->input_count; k++)
    call.in[k] = inputs[k] >= 0 ? &tensors[inputs[k]] : NULL;
  for (int k = 0; k < op->output_count; k++)
    call.out[k] = outputs[k] >= 0 ? &tensors[outputs[k]] : NULL;
  /* In place, the output is the input's memory (of the same bytes: plan_memory.c). */
  if (in_place) call.out[0] = &tensors[inputs[0]];
  return call;
}

plm_status plm__plan_cost(const plm_pipeline *pl, double *bytes, double *flops) {
  *bytes = 0.0;
  *flops = 0.0;
  for (int s = 0; s < pl->plan.step_count; s++) {
    *bytes += pl->plan.steps[s].cost.bytes;
    *flops += pl->plan.steps[s].cost.flops;
  }
  return PLM_OK;
}

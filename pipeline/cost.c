/* pipeline/cost.c: a plan's cost per frame, the sum of its steps' cost models
 * (plm_plan_info's device_bytes and flops). */
#include "pipeline/pipeline_internal.h"
#include "streams/error.h"

plm_status plm__step_cost(const plm__step *step, const plm_tensor *tensors, plm_op_cost *cost) {
  const plm_tensor *in[PLM__PIPE_MAX_IO];
  for (int k = 0; k < PLM__PIPE_MAX_IO; k++)
    in[k] = step->inputs[k] >= 0 ? &tensors[step->inputs[k]] : NULL;
  const plm__op_params *p = &step->params;
  plm_status status = PLM_OK;
  switch (step->kind) {
    case PLM__OP_CONV2D: return plm_conv2d_cost(in[0], in[1], &p->conv2d, cost);
    case PLM__OP_SOBEL:
      status = plm_sobel_cost(in[0], &p->sobel, cost);
      /* The model counts gx, gy and the magnitude (f32 each); unwanted ones are not
       * written. */
      for (int k = 0; status == PLM_OK && k < 3; k++)
        if (step->outputs[k] < 0) cost->bytes -= 4.0 * (double)plm_tensor_numel(in[0]);
      return status;
    case PLM__OP_ENTROPY: return plm_entropy_cost(in[0], &p->entropy, cost);
    case PLM__OP_THRESHOLD: return plm_threshold_cost(in[0], &p->threshold, cost);
    case PLM__OP_LABEL: return plm_label_cost(in[0], &p->label, cost);
    case PLM__OP_REGIONS:
      return plm_regions_cost(in[0], in[1], tensors[step->outputs[0]].dims[0], cost);
    case PLM__OP_SOBEL_ENTROPY_THRESHOLD:
      return plm_sobel_entropy_threshold_cost(in[0], &p->fused, cost);
    case PLM__OP_MATMUL: return plm_matmul_cost(in[0], in[1], in[2], &p->matmul, cost);
    case PLM__OP_LSTM_CELL: return plm_lstm_cell_cost(in[0], in[1], in[5], in[6], cost);
    case PLM__OP_DENDRITIC: return plm_dendritic_cost(in[0], in[1], &p->dendritic, cost);
    case PLM__OP_VECTOR_ADD: return plm_vector_add_cost(in[0], in[1], &p->vector_add, cost);
    case PLM__OP_DOT: return plm_dot_cost(in[0], in[1], &p->dot, cost);
    case PLM__OP_AR_FORECAST: return plm_ar_forecast_cost(in[0], &p->ar_forecast, cost);
    case PLM__OP_SEGMENT: break; /* lowered at compile */
  }
  return plm__fail_raw(PLM_ERR_INTERNAL, "step kind %d has no cost", (int)step->kind);
}

plm_status plm__plan_cost(const plm_pipeline *pl, double *bytes, double *flops) {
  *bytes = 0.0;
  *flops = 0.0;
  for (int s = 0; s < pl->plan.step_count; s++) {
    plm_op_cost cost = {0};
    plm_status status = plm__step_cost(&pl->plan.steps[s], pl->slots[0].tensors, &cost);
    if (status != PLM_OK)
      return plm__pipe_reraise(status, "the cost of step %d '%s'", s,
                               plm__op_name(pl->plan.steps[s].kind));
    *bytes += cost.bytes;
    *flops += cost.flops;
  }
  return PLM_OK;
}

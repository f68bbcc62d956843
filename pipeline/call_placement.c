/* pipeline/call_placement.c: one op call's predicted time on each backend, and the choice
 * (plm_op_predict, plm_op_place; plume/op_placement.h). The call is a one-step pipeline to
 * the model: its launch time comes from the same piece as a plan step's
 * (plm__placement_launch_ms), cuda's copies and the choice from the same
 * plm__placement_choose, and AUTO's rules from plm__placement_rule (pipeline/placement.c).
 * What is the call's own: its cost from the op's descriptor (plm__op_cost) at the given
 * shapes and parameters, and which tensors cross the link. */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r */

#include <stdlib.h>
#include <string.h>

#include "ops/op_internal.h"
#include "pipeline/pipeline_internal.h"
#include "pipeline/placement.h"
#include "plume/op_placement.h"
#include "streams/error.h"

plm_status plm__op_call_predict(const plm__op_desc *op, const plm__op_call *call,
                                const plm_profile_calibration *host,
                                const plm_profile_calibration *cuda, plm_placement *out) {
  plm_op_cost cost;
  plm_status status = plm__op_cost(op, call, &cost);
  if (status == PLM_OK) status = plm__placement_check(host, cuda);
  if (status != PLM_OK) return status;
  plm_placement p = {.choice = PLM_BACKEND_HOST};
  int copies = 0;
  for (int k = 0; k < op->input_count; k++)
    if (call->in[k]) {
      p.input_bytes += (double)plm_tensor_bytes(call->in[k]);
      copies++;
    }
  for (int k = 0; k < op->output_count; k++)
    if (call->out[k]) {
      p.output_bytes += (double)plm_tensor_bytes(call->out[k]);
      copies++;
    }
  if (host) p.host_ms = plm__placement_launch_ms(op, &cost, host, &p.corrected_steps);
  if (cuda) p.cuda_ms = plm__placement_launch_ms(op, &cost, cuda, &p.corrected_steps);
  plm__placement_choose(&p, host, cuda, copies, false); /* one call: nothing to overlap */
  *out = p;
  return PLM_OK;
}

plm_status plm__op_call_place(const plm__op_desc *op, const plm__op_call *call, plm_backend *choice,
                              plm_placement *out) {
  plm_op_cost cost; /* the call is checked whatever the rules decide */
  plm_status status = plm__op_cost(op, call, &cost);
  plm_placement p = {.choice = PLM_BACKEND_HOST};
  bool model = false;
  if (status == PLM_OK) status = plm__placement_rule(&p.choice, &model);
  if (status == PLM_OK && model) {
    plm_profile_calibration host, cuda;
    status = plm__placement_calibrate(&host, &cuda);
    if (status == PLM_OK) status = plm__op_call_predict(op, call, &host, &cuda, &p);
  }
  if (status != PLM_OK) return status;
  *choice = p.choice;
  if (out) *out = p;
  return PLM_OK;
}

/* ---- a call from shapes and the text form's parameters ------------------------------------ */

/* A call of descriptions (no data), its tensors and parameters with it. */
typedef struct described_call {
  plm_tensor in[PLM__OP_MAX_IN], out[PLM__OP_MAX_OUT];
  plm__op_params params;
  plm__op_call call;
} described_call;

/* "window, bins, range" */
static void keys_text(const plm__op_desc *op, char *list, size_t size) {
  list[0] = '\0';
  for (int i = 0; i < op->param_count; i++)
    snprintf(list + strlen(list), size - strlen(list), "%s%s", i ? ", " : "", op->params[i].name);
  if (op->param_count == 0) snprintf(list, size, "none");
}

/* The values of text ("key=value ..."; NULL: none) by parameter into values[], pointing into
 * copy (text's copy, cut at each space and '='). Raw messages. */
static plm_status split_params(const plm__op_desc *op, char *copy,
                               const char *values[PLM__OP_MAX_PARAMS]) {
  char *rest = NULL;
  for (char *token = strtok_r(copy, " \t\n", &rest); token;
       token = strtok_r(NULL, " \t\n", &rest)) {
    char *equals = strchr(token, '=');
    if (!equals || equals == token)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "params: '%s' is not key=value", token);
    *equals = '\0';
    int found = -1;
    for (int i = 0; i < op->param_count; i++)
      if (strcmp(op->params[i].name, token) == 0) found = i;
    if (found < 0) {
      char keys[512];
      keys_text(op, keys, sizeof keys);
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "params: unknown key '%s' (%s's keys: %s)", token,
                           op->name, keys);
    }
    if (values[found])
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "params: key '%s' is given twice", token);
    values[found] = equals + 1;
  }
  return PLM_OK;
}

/* The parameters: the schema's defaults, then the values given, read with the kernel's
 * size kh x kw and by the first input's dtype, as the text form reads an element's. */
static plm_status read_params(const plm__op_desc *op, const char *text, plm_dtype dtype, int kh,
                              int kw, plm__op_params *params) {
  plm__op_params_default(op, params);
  char *copy = strdup(text ? text : "");
  if (!copy) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for params");
  const char *values[PLM__OP_MAX_PARAMS] = {0};
  plm_status status = split_params(op, copy, values);
  const bool f32 = dtype == PLM_DTYPE_F32;
  for (int i = 0; status == PLM_OK && i < op->param_count; i++) {
    const plm__op_param *p = &op->params[i];
    char why[256];
    if (!values[i]) {
      if (p->flags & PLM__PARAM_REQUIRED)
        status = plm__fail_raw(PLM_ERR_INVALID_ARG, "params: missing key '%s'", p->name);
      else if (f32 && (p->flags & PLM__PARAM_REQUIRED_FOR_FLOAT))
        status = plm__fail_raw(PLM_ERR_INVALID_ARG, "params: missing key '%s' (f32 input needs it)",
                               p->name);
    } else if (!f32 && (p->flags & PLM__PARAM_FLOAT_ONLY)) {
      status = plm__fail_raw(PLM_ERR_INVALID_ARG, "params: key '%s' is for f32 input, not %s",
                             p->name, plm_dtype_name(dtype));
    } else if (!plm__op_param_parse(p, values[i], kh, kw, params, why, sizeof why)) {
      status = plm__fail_raw(PLM_ERR_INVALID_ARG, "params: key '%s': %s", p->name, why);
    }
  }
  free(copy);
  return status;
}

/* The call of op `name` on inputs of the given shapes with the text's parameters, its
 * outputs described as the op makes them (plume/op_placement.h: which come back). */
static plm_status describe_call(const char *name, const plm_shape *inputs, int input_count,
                                const char *text, const plm__op_desc **op_out, described_call *d) {
  const plm__op_desc *op = plm__op_find(name);
  if (!op)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "op '%s' is not an operation (plm_op_info_get lists them)", name);
  if (input_count < 0 || input_count > op->input_count)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "input_count %d is not in 0..%d (%s's inputs)",
                         input_count, op->input_count, op->name);
  if (input_count > 0 && !inputs)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "inputs is NULL (input_count %d)", input_count);
  memset(d, 0, sizeof *d);
  int kh = 1, kw = 1;
  plm_dtype dtype = PLM_DTYPE_U8;
  for (int k = 0; k < op->input_count; k++) {
    const plm_shape *shape = k < input_count ? &inputs[k] : NULL;
    if (shape && (shape->ndim < 0 || shape->ndim > PLM_TENSOR_MAX_DIMS))
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "inputs[%d].ndim %d is not in 0..%d", k,
                           shape->ndim, PLM_TENSOR_MAX_DIMS);
    if (!shape || shape->ndim == 0) {
      if (op->inputs[k].optional) continue;
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "inputs[%d] (%s's %s) is required", k, op->name,
                           op->inputs[k].name);
    }
    d->in[k] = plm__tensor_describe(NULL, shape);
    d->call.in[k] = &d->in[k];
    plm_status status = plm__op_check_shape(&d->in[k], op->inputs[k].name);
    if (status != PLM_OK) return status;
    if (k == 0) dtype = shape->dtype;
    if (op->inputs[k].role == PLM__IN_KERNEL)
      plm__op_kernel_extent(&op->inputs[k], shape->ndim, shape->dims, &kh, &kw);
  }
  plm_status status = read_params(op, text, dtype, kh, kw, &d->params);
  if (status != PLM_OK) return status;
  d->call.params = &d->params;
  /* The shapes complete the parameters (segment's capacity 0 becomes the bound). */
  plm_shape shapes[PLM__OP_MAX_OUT];
  plm__op_params resolved = d->params;
  if ((status = plm__op_shapes(op, &d->call, shapes, &resolved)) != PLM_OK) return status;
  d->params = resolved;
  int main_output = 0, made = 0;
  for (int k = 0; k < op->output_count; k++) {
    if (op->outputs[k].role == PLM__OUT_MAIN) main_output = k;
    if (op->outputs[k].optional) continue;
    d->out[k] = plm__tensor_describe(NULL, &shapes[k]);
    d->call.out[k] = &d->out[k];
    made++;
  }
  if (made == 0) {
    d->out[main_output] = plm__tensor_describe(NULL, &shapes[main_output]);
    d->call.out[main_output] = &d->out[main_output];
  }
  *op_out = op;
  return PLM_OK;
}

plm_status plm_op_predict(const char *op, const plm_shape *inputs, int input_count,
                          const char *params, const plm_profile_calibration *host,
                          const plm_profile_calibration *cuda, plm_placement *out) {
  PLM__REQUIRE_NOT_NULL(op);
  PLM__REQUIRE_NOT_NULL(out);
  const plm__op_desc *desc = NULL;
  described_call d;
  plm_status status = describe_call(op, inputs, input_count, params, &desc, &d);
  if (status == PLM_OK) status = plm__op_call_predict(desc, &d.call, host, cuda, out);
  return plm__propagate(status);
}

plm_status plm_op_place(const char *op, const plm_shape *inputs, int input_count,
                        const char *params, plm_backend *choice, plm_placement *out) {
  PLM__REQUIRE_NOT_NULL(op);
  PLM__REQUIRE_NOT_NULL(choice);
  const plm__op_desc *desc = NULL;
  described_call d;
  plm_status status = describe_call(op, inputs, input_count, params, &desc, &d);
  if (status == PLM_OK) status = plm__op_call_place(desc, &d.call, choice, out);
  return plm__propagate(status);
}

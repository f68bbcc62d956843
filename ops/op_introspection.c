/* ops/op_introspection.c: the table of descriptors as the public plume/op_info.h reads it. */
#include "plume/op_info.h"

#include <string.h>

#include "ops/op_desc.h"
#include "streams/error.h"

static const char *type_name(plm__param_type type) {
  switch (type) {
    case PLM__PARAM_INT:
    case PLM__PARAM_INT64: return "int";
    case PLM__PARAM_DOUBLE:
    case PLM__PARAM_FLOAT: return "number";
    case PLM__PARAM_CHOICE: return "choice";
    case PLM__PARAM_PAIR: return "pair";
    case PLM__PARAM_RANGE: return "range";
  }
  return "?";
}

int plm_op_count(void) {
  return PLM__OP_COUNT;
}

/* What an index names besides the op: nothing, one of its inputs, one of its parameters. */
typedef enum item_kind { ITEM_NONE, ITEM_INPUT, ITEM_PARAM } item_kind;

/* The descriptor of op, with item checked against its inputs or parameters (kind), and
 * the caller's out checked not NULL. */
#define get_op(op, kind, item, out, desc) get_op_in(__func__, (op), (kind), (item), (out), (desc))
static plm_status get_op_in(const char *caller, int op, item_kind kind, int item, const void *out,
                            const plm__op_desc **desc) {
  if (!out) return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "out is NULL");
  if (op < 0 || op >= PLM__OP_COUNT)
    return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "op %d is not in 0..%d", op,
                        PLM__OP_COUNT - 1);
  const plm__op_desc *d = plm__op_get((plm__op_kind)op);
  const int count = kind == ITEM_INPUT ? d->input_count : d->param_count;
  if (kind != ITEM_NONE && (item < 0 || item >= count))
    return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "%s %d is not in 0..%d (%s's %s)",
                        kind == ITEM_INPUT ? "input" : "param", item, count - 1, d->name,
                        kind == ITEM_INPUT ? "inputs" : "parameters");
  *desc = d;
  return PLM_OK;
}

plm_status plm_op_info_get(int op, plm_op_info *out) {
  const plm__op_desc *desc = NULL;
  plm_status status = get_op(op, ITEM_NONE, 0, out, &desc);
  if (status != PLM_OK) return status;
  *out = (plm_op_info){.name = desc->name,
                       .summary = desc->summary,
                       .input_count = desc->input_count,
                       .output_count = desc->output_count,
                       .param_count = desc->param_count,
                       .in_text = plm__op_in_text(desc),
                       .stateful = desc->state_shape != NULL,
                       .details = desc->details};
  return PLM_OK;
}

plm_status plm_op_input_info_get(int op, int input, plm_op_input_info *out) {
  const plm__op_desc *desc = NULL;
  plm_status status = get_op(op, ITEM_INPUT, input, out, &desc);
  if (status != PLM_OK) return status;
  const plm__op_slot *slot = &desc->inputs[input];
  *out =
      (plm_op_input_info){.name = slot->name,
                          .dtype_mask = slot->dtypes,
                          .optional = slot->optional,
                          .by_name = slot->role == PLM__IN_TENSOR || slot->role == PLM__IN_KERNEL};
  plm__op_slot_text(slot, out->dtypes, sizeof out->dtypes);
  return PLM_OK;
}

plm_status plm_op_param_info_get(int op, int param, plm_op_param_info *out) {
  const plm__op_desc *desc = NULL;
  plm_status status = get_op(op, ITEM_PARAM, param, out, &desc);
  if (status != PLM_OK) return status;
  const plm__op_param *p = &desc->params[param];
  *out = (plm_op_param_info){.name = p->name,
                             .type = type_name(p->type),
                             .choices = p->type == PLM__PARAM_CHOICE ? p->choices : NULL,
                             .form = p->type == PLM__PARAM_PAIR ? p->form : NULL,
                             .help = p->help,
                             .required = (p->flags & PLM__PARAM_REQUIRED) != 0,
                             .required_for_float = (p->flags & PLM__PARAM_REQUIRED_FOR_FLOAT) != 0};
  if (plm__op_param_has_default(p)) {
    plm__op_params defaults;
    plm__op_params_default(desc, &defaults);
    plm__op_param_format(p, &defaults, out->default_text, sizeof out->default_text);
  }
  return PLM_OK;
}

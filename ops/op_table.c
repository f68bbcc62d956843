/* ops/op_table.c: the table of descriptors PLM__OP_MAP lists, and what reads a
 * descriptor's schema (ops/op_desc.h). */
#include <stdio.h>
#include <string.h>

#include "ops/op_desc.h"

#define PLM__OP_ENTRY(op, PARAMS, SHAPE_IN, IN, OUT, FORM) [PLM__OP_##op] = &plm__op_##op,
static const plm__op_desc *const table[PLM__OP_COUNT] = {PLM__OP_MAP(PLM__OP_ENTRY)};
#undef PLM__OP_ENTRY

/* Every descriptor's params_size is its params type's, and its kind is its place. */
#define PLM__OP_SIZE_CHECK(op, PARAMS, SHAPE_IN, IN, OUT, FORM)                     \
  _Static_assert(sizeof(PLM__OP_PARAMS_TYPE(op, PARAMS)) <= sizeof(plm__op_params), \
                 #op "'s params fit the union");
PLM__OP_MAP(PLM__OP_SIZE_CHECK)
#undef PLM__OP_SIZE_CHECK

const plm__op_desc *plm__op_get(plm__op_kind kind) {
  return (unsigned)kind < PLM__OP_COUNT ? table[kind] : NULL;
}

const plm__op_desc *plm__op_find(const char *name) {
  for (int k = 0; name && k < PLM__OP_COUNT; k++)
    if (strcmp(table[k]->name, name) == 0) return table[k];
  return NULL;
}

const char *plm__op_name(plm__op_kind kind) {
  return table[kind]->name;
}

const char *plm__op_input_name(plm__op_kind kind, int slot) {
  return table[kind]->inputs[slot].name;
}

const char *plm__op_output_name(plm__op_kind kind, int slot) {
  return table[kind]->outputs[slot].name;
}

int plm__op_input_index(const plm__op_desc *op, const char *name) {
  for (int k = 0; k < op->input_count; k++)
    if (strcmp(op->inputs[k].name, name) == 0) return k;
  return -1;
}

int plm__op_output_index(const plm__op_desc *op, const char *name) {
  for (int k = 0; k < op->output_count; k++)
    if (strcmp(op->outputs[k].name, name) == 0) return k;
  return -1;
}

bool plm__op_in_text(const plm__op_desc *op) {
  if (op->flags & PLM__OP_PLAN_ONLY) return false;
  for (int k = 0; k < op->input_count; k++)
    if (op->inputs[k].role == PLM__IN_COUNT) return false;
  return true;
}

void plm__dtype_mask_text(unsigned mask, char *text, size_t size) {
  static const plm_dtype order[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_I32, PLM_DTYPE_F32,
                                    PLM_DTYPE_F64};
  int total = 0, written = 0;
  for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) total += (mask >> order[k]) & 1u;
  text[0] = '\0';
  for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
    if (!((mask >> order[k]) & 1u)) continue;
    size_t used = strlen(text);
    snprintf(text + used, size - used, "%s%s",
             written == 0           ? ""
             : written + 1 == total ? " or "
                                    : ", ",
             plm_dtype_name(order[k]));
    written++;
  }
}

void plm__op_slot_text(const plm__op_slot *slot, char *text, size_t size) {
  plm__dtype_mask_text(slot->dtypes, text, size);
  if (!slot->shape) return;
  size_t used = strlen(text);
  snprintf(text + used, size - used, " %s", slot->shape);
}

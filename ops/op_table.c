/* ops/op_table.c: the table of descriptors PLM__OP_MAP lists, and what reads a
 * descriptor's schema (ops/op_desc.h). */
#include <string.h>

#include "ops/op_desc.h"

#define PLM__OP_ENTRY(KIND, name, type) [PLM__OP_##KIND] = &plm__op_##name,
static const plm__op_desc *const table[PLM__OP_COUNT] = {PLM__OP_MAP(PLM__OP_ENTRY)};
#undef PLM__OP_ENTRY

/* Every descriptor's params_size is its params type's, and its kind is its place. */
#define PLM__OP_SIZE_CHECK(KIND, name, type) \
  _Static_assert(sizeof(type) <= sizeof(plm__op_params), #name "'s params fit the union");
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

static void set_int(void *params, size_t offset, int value) {
  memcpy(plm__op_param_field(params, offset), &value, sizeof value);
}

void plm__op_params_default(const plm__op_desc *op, void *params) {
  memset(params, 0, op->params_size);
  for (int i = 0; i < op->param_count; i++) {
    const plm__op_param *p = &op->params[i];
    void *field = plm__op_param_field(params, p->offset);
    switch (p->type) {
      case PLM__PARAM_INT:
      case PLM__PARAM_CHOICE: set_int(params, p->offset, (int)p->fallback); break;
      case PLM__PARAM_INT64: {
        int64_t v = (int64_t)p->fallback;
        memcpy(field, &v, sizeof v);
        break;
      }
      case PLM__PARAM_DOUBLE: memcpy(field, &p->fallback, sizeof p->fallback); break;
      case PLM__PARAM_FLOAT: {
        float v = (float)p->fallback;
        memcpy(field, &v, sizeof v);
        break;
      }
      case PLM__PARAM_PAIR:
        set_int(params, p->offset, (int)p->fallback);
        set_int(params, p->offset2, (int)p->fallback);
        break;
      case PLM__PARAM_RANGE: break; /* 0, 0, not auto */
    }
  }
}

const char *plm__op_param_choice(const plm__op_param *param, const void *params) {
  int value;
  memcpy(&value, plm__op_param_cfield(params, param->offset), sizeof value);
  /* 0, when no choice is 0, stands for the default (a label connectivity of 0 is 8). */
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; param->choices[i]; i++)
      if ((param->values ? param->values[i] : i) == value) return param->choices[i];
    if (value != 0) break;
    value = (int)param->fallback;
  }
  return "?";
}

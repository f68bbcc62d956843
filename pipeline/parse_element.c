/* pipeline/parse_element.c: one element of the text form, "entropy window=16 bins=64":
 * its name and key=value pairs, and the op's parameters read from them against its schema
 * (pipeline/parse.h). The text pipeline (parse.c) reads each of its elements with these,
 * and a node added by name (plm_pipeline_add, graph.c) reads its parameters' text as an
 * element of its op; nothing here knows a pipeline. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/parse.h"
#include "streams/error.h"

plm_status plm__element_fail(const plm__element *e, const char *fmt, ...) {
  char message[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  /* index 0: the parameters of a node added by name; its caller names the node. */
  if (e->index == 0) return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s", message);
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "element %d '%s': %s", e->index, e->name, message);
}

const char *plm__element_value(const plm__element *e, const char *key) {
  for (int i = 0; i < e->count; i++)
    if (strcmp(e->pairs[i].key, key) == 0) return e->pairs[i].value;
  return NULL;
}

static bool is_space(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

plm_status plm__element_split(char *text, plm__element *e) {
  char *p = text;
  while (is_space(*p)) p++;
  e->name = p;
  while (*p && !is_space(*p)) p++;
  e->count = 0;
  while (*p) {
    *p++ = '\0';
    while (is_space(*p)) p++;
    if (!*p) break;
    char *word = p;
    while (*p && !is_space(*p)) p++;
    char end = *p;
    *p = '\0';
    char *equals = strchr(word, '=');
    if (!equals || equals == word || equals[1] == '\0')
      return plm__element_fail(e, "'%s' is not key=value", word);
    *equals = '\0';
    if (plm__element_value(e, word)) return plm__element_fail(e, "key '%s' is given twice", word);
    if (e->count == PLM__ELEMENT_MAX_PAIRS)
      return plm__element_fail(e, "more than %d keys", PLM__ELEMENT_MAX_PAIRS);
    e->pairs[e->count++] = (plm__pair){word, equals + 1};
    *p = end;
  }
  return PLM_OK;
}

plm_status plm__element_params(const plm__element *e, const plm__op_desc *op, plm_dtype dtype,
                               int kh, int kw, plm__op_params *params) {
  plm__op_params_default(op, params);
  const bool f32 = dtype == PLM_DTYPE_F32;
  for (int i = 0; i < op->param_count; i++) {
    const plm__op_param *p = &op->params[i];
    const char *value = plm__element_value(e, p->name);
    if (!value) {
      if (p->flags & PLM__PARAM_REQUIRED) return plm__element_fail(e, "missing key '%s'", p->name);
      if (f32 && (p->flags & PLM__PARAM_REQUIRED_FOR_FLOAT))
        return plm__element_fail(e, "missing key '%s' (f32 input needs it)", p->name);
      continue;
    }
    if (!f32 && (p->flags & PLM__PARAM_FLOAT_ONLY))
      return plm__element_fail(e, "key '%s' is for f32 input, not %s", p->name,
                               plm_dtype_name(dtype));
    char why[256];
    if (!plm__op_param_parse(p, value, kh, kw, params, why, sizeof why))
      return plm__element_fail(e, "key '%s': %s", p->name, why);
  }
  return PLM_OK;
}

/* ---- the parameters of a node added by name (plm_pipeline_add) ----------------------------- */

/* Only the schema's keys: a node added by name is given every input as a handle, so the
 * text form's tensor keys, kernel specs and frame choice are not parameters here. */
static plm_status check_param_keys(const plm__op_desc *op, const plm__element *e) {
  for (int i = 0; i < e->count; i++) {
    bool known = false;
    for (int k = 0; k < op->param_count && !known; k++)
      known = strcmp(op->params[k].name, e->pairs[i].key) == 0;
    if (known) continue;
    char list[256] = "";
    for (int k = 0; k < op->param_count; k++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
               op->params[k].name);
    return plm__element_fail(e, "unknown key '%s' (%s's parameters: %s; its inputs are handles)",
                             e->pairs[i].key, op->name, list[0] ? list : "none");
  }
  return PLM_OK;
}

plm_status plm__parse_node_params(const plm__op_desc *op, const char *text, plm_dtype dtype, int kh,
                                  int kw, plm__op_params *params) {
  /* An element's text starts with its name: give the splitter "op pairs". */
  const size_t size = strlen(op->name) + 1 + (text ? strlen(text) : 0) + 1;
  char *copy = malloc(size);
  if (!copy) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory to read the parameters");
  snprintf(copy, size, "%s %s", op->name, text ? text : "");
  plm__element e = {.index = 0, .name = op->name};
  plm_status status = plm__element_split(copy, &e);
  if (status == PLM_OK) status = check_param_keys(op, &e);
  if (status == PLM_OK) status = plm__element_params(&e, op, dtype, kh, kw, params);
  free(copy);
  return status;
}

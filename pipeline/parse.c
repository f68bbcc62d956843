/* pipeline/parse.c: text pipelines, "sobel ! entropy window=16 ! threshold value=4.5"
 * (plm_pipeline_parse, plm_pipeline_parse_with_tensors; the grammar is in
 * plume/pipeline.h). The text is cut into elements and key=value pairs; an element is an
 * op of the table (ops/op_desc.h), whose input slots say where each input comes from
 * (the chain, a tensor key, a kernel spec, the frame, the count before it) and whose
 * parameter schema gives the keys, their values, defaults and messages. The nodes are
 * added with plm__graph_add_node, which checks them as the C API does. A value @NAME names one of
 * the caller's tensors, which becomes a constant of the pipeline the first time the text names it.
 *
 * Feedback: name=NAME names an element's main output and a value ~NAME is that output in
 * the previous frame (plm_pipeline_add_previous, bound at the end). An element may read the
 * previous value of one that comes after it, whose shape is not known yet: such a text is
 * parsed twice, first with every ~NAME left out (only optional inputs take one) to learn
 * the shapes of the named outputs, then with the previous values made of those shapes.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/parse.h"
#include "pipeline/pipeline_internal.h"
#include "streams/error.h"

enum { MAX_NAMED = 16 };

/* An element's output the text names, or a previous value made for the name. */
typedef struct named {
  const char *name;
  int tensor;
  plm_shape shape;
} named;

/* What the chain has made so far (tensor indices). */
typedef struct chain {
  plm_pipeline *pl;
  int input; /* the frame */
  int main;  /* what the next element reads */
  int count; /* the count of the last label (or segment), -1 when none */
  int side;  /* the side output of the last element that made one (out_c), -1 when none */
  const plm__op_desc *last;        /* the last element's op; NULL before the first */
  const plm_named_tensor *tensors; /* the caller's, tensor_count of them */
  int tensor_count;
  int *constants; /* the constant each tensor became, -1 until the text names it */
  bool *finite;   /* each tensor found finite (for a slot that needs it) */
  /* Feedback (name=NAME, ~NAME): the outputs named so far, the previous values made (each
   * for a name), and the named outputs' shapes a first pass found (probing: this is that
   * pass; ~NAME then reads nothing). */
  named names[MAX_NAMED], previous[MAX_NAMED];
  int name_count, previous_count;
  const named *probed;
  int probed_count;
  bool probing;
} chain;

/* The caller's tensors' names, for a message: "the tensors are w, bias". */
static void tensor_names(const chain *c, char *list, size_t size) {
  if (c->tensor_count == 0) {
    snprintf(list, size, "no tensors were given");
    return;
  }
  snprintf(list, size, "the tensors are ");
  for (int t = 0; t < c->tensor_count; t++)
    snprintf(list + strlen(list), size - strlen(list), "%s%s", t ? ", " : "", c->tensors[t].name);
}

/* "NaN", "+inf" or "-inf", for a value that is not finite. */
static const char *non_finite_name(double v) {
  return isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf";
}

/* A tensor's first element that is NaN or infinite, as an index per dimension in
 * `where` ("[3, 7]"); -1 when every element is finite (always for integer dtypes). */
static int64_t first_non_finite(const plm_named_tensor *t, char *where, size_t size) {
  int64_t count = 1;
  for (int d = 0; d < t->shape.ndim; d++) count *= t->shape.dims[d];
  int64_t bad = -1;
  for (int64_t i = 0; i < count && bad < 0; i++) {
    const double v = t->shape.dtype == PLM_DTYPE_F32   ? (double)((const float *)t->host_data)[i]
                     : t->shape.dtype == PLM_DTYPE_F64 ? ((const double *)t->host_data)[i]
                                                       : 0.0;
    if (!isfinite(v)) bad = i;
  }
  if (bad < 0) return -1;
  size_t used = (size_t)snprintf(where, size, "[");
  for (int d = 0; d < t->shape.ndim; d++) {
    int64_t stride = 1;
    for (int e = d + 1; e < t->shape.ndim; e++) stride *= t->shape.dims[e];
    if (used < size)
      used += (size_t)snprintf(where + used, size - used, "%s%lld", d ? ", " : "",
                               (long long)(bad / stride % t->shape.dims[d]));
  }
  if (used < size) snprintf(where + used, size - used, "]");
  return bad;
}

static const named *find_named(const named *list, int count, const char *name) {
  for (int i = 0; i < count; i++)
    if (strcmp(list[i].name, name) == 0) return &list[i];
  return NULL;
}

/* key=~NAME: the previous frame's value of the output named NAME, made (once per name)
 * with the shape the first pass found; nothing while probing (an optional input only). */
static plm_status get_previous(chain *c, const plm__element *e, const char *key, const char *name,
                               bool required, int *index) {
  if (required)
    return plm__element_fail(
        e,
        "key '%s': '~%s' is a previous frame's value, which the text gives to optional "
        "inputs only (build the pipeline with plm_pipeline_add_previous)",
        key, name);
  if (c->probing) return PLM_OK;
  const named *kept = find_named(c->previous, c->previous_count, name);
  if (kept) {
    *index = kept->tensor;
    return PLM_OK;
  }
  const named *probed = find_named(c->probed, c->probed_count, name);
  if (!probed)
    return plm__element_fail(
        e, "key '%s': no element is named '%s' (name=%s names an element's output)", key, name,
        name);
  if (c->previous_count == MAX_NAMED)
    return plm__element_fail(e, "key '%s': more than %d previous values", key, MAX_NAMED);
  const plm_shape *shape = &probed->shape;
  plm_status status = plm__graph_add_source(c->pl, PLM__TENSOR_PREVIOUS, shape->dtype, shape->ndim,
                                            shape->dims, NULL, index);
  if (status != PLM_OK)
    return plm__pipe_reraise(status, "element %d '%s': key '%s'", e->index, e->name, key);
  c->previous[c->previous_count++] =
      (named){.name = probed->name, .tensor = *index, .shape = *shape};
  return PLM_OK;
}

/* The tensor a key names (key=@NAME), as a tensor index: the caller's tensor NAME, added
 * as a constant of the pipeline the first time the text names it; -1 when the key is
 * absent and not required. For a slot whose values must be finite (plm__op_slot's finite:
 * a calibration, a kernel) a NaN or an infinity is refused, naming the first; a tensor is
 * searched once, however many elements name it. */
static plm_status get_tensor(chain *c, const plm__element *e, const plm__op_slot *slot,
                             bool required, int *index) {
  const char *const key = slot->name;
  const char *value = plm__element_value(e, key);
  *index = -1;
  if (!value)
    return required ? plm__element_fail(e, "missing key '%s' (a tensor: %s=@NAME)", key, key)
                    : PLM_OK;
  if (value[0] == '~') return get_previous(c, e, key, value + 1, required, index);
  if (value[0] != '@')
    return plm__element_fail(
        e, "key '%s': '%s' is not a tensor (%s=@NAME names one of the tensors given)", key, value,
        key);
  const char *name = value + 1;
  for (int t = 0; t < c->tensor_count; t++) {
    if (strcmp(c->tensors[t].name, name) != 0) continue;
    if (slot->finite && !c->finite[t]) {
      char where[160];
      const int64_t bad = first_non_finite(&c->tensors[t], where, sizeof where);
      if (bad >= 0) {
        const void *data = c->tensors[t].host_data;
        const double v = c->tensors[t].shape.dtype == PLM_DTYPE_F32
                             ? (double)((const float *)data)[bad]
                             : ((const double *)data)[bad];
        return plm__element_fail(
            e,
            "key '%s': tensor '%s': element %s (flat index %lld) is %s; %s's %s must "
            "be finite",
            key, name, where, (long long)bad, non_finite_name(v), e->name, key);
      }
      c->finite[t] = true;
    }
    if (c->constants[t] < 0) {
      const plm_shape *shape = &c->tensors[t].shape;
      plm_status status =
          plm__graph_add_source(c->pl, PLM__TENSOR_CONSTANT, shape->dtype, shape->ndim, shape->dims,
                                c->tensors[t].host_data, &c->constants[t]);
      if (status != PLM_OK)
        return plm__pipe_reraise(status, "element %d '%s': key '%s'", e->index, e->name, key);
    }
    *index = c->constants[t];
    return PLM_OK;
  }
  char list[256];
  tensor_names(c, list, sizeof list);
  return plm__element_fail(e, "key '%s': no tensor named '%s' (%s)", key, name, list);
}

/* One of names[] (index into *out); *out unchanged when absent. */
static plm_status get_choice(const plm__element *e, const char *key, const char *const *names,
                             int count, int *out) {
  const char *value = plm__element_value(e, key);
  if (!value) return PLM_OK;
  for (int i = 0; i < count; i++)
    if (strcmp(value, names[i]) == 0) {
      *out = i;
      return PLM_OK;
    }
  char list[128] = "";
  for (int i = 0; i < count; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
  return plm__element_fail(e, "key '%s': '%s' is not one of %s", key, value, list);
}

/* Add a node whose outputs[k] are made when want[k]; the node's own check names the
 * element. */
static plm_status add(chain *c, const plm__element *e, const plm__op_desc *op, const int *inputs,
                      const plm__op_params *params, const bool *want, int *outputs) {
  plm_status status = plm__graph_add_node(c->pl, op->kind, inputs, params, want, outputs);
  if (status != PLM_OK) return plm__pipe_reraise(status, "element %d '%s'", e->index, e->name);
  c->last = op;
  return PLM_OK;
}

/* ---- inputs ------------------------------------------------------------------------------- */

/* key=@NAME: the caller's tensor; its height and width when it is 2-D (else the op
 * refuses it when the node is added). */
static plm_status named_kernel(chain *c, const plm__element *e, const plm__op_slot *slot,
                               int *kernel, int *kh, int *kw) {
  const char *const key = slot->name;
  if (plm__element_value(e, "size"))
    return plm__element_fail(e, "key 'size' is for inline kernels, not '%s'",
                             plm__element_value(e, key));
  plm_status status = get_tensor(c, e, slot, true, kernel);
  const plm_shape *shape = status == PLM_OK ? &c->pl->graph.tensors[*kernel].shape : NULL;
  if (shape) plm__op_kernel_extent(slot, shape->ndim, shape->dims, kh, kw);
  return status;
}

/* A built-in or inline kernel (plume/pipeline.h's grammar), added as a constant: a 2-D
 * kernel, or a 1-D one (K) along the slot's axis. */
static plm_status spec_kernel(chain *c, const plm__element *e, const plm__op_slot *slot,
                              int *kernel, int *kh, int *kw) {
  const char *key = slot->name, *spec = plm__element_value(e, key);
  const char *size = plm__element_value(e, "size");
  float *taps = NULL;
  int64_t dims[2] = {0, 0};
  int ndim = 2, height = 0, width = 0;
  plm_status status = PLM_OK;
  if (slot->kernel_axis == PLM__KERNEL_2D) {
    status = plm__parse_kernel(spec, size, &taps, &height, &width);
    dims[0] = height;
    dims[1] = width;
  } else { /* size= is not one of its keys (check_keys) */
    status = plm__parse_kernel_1d(key, spec, &taps, &width);
    ndim = 1;
    dims[0] = width;
  }
  if (status == PLM_OK) {
    plm__op_kernel_extent(slot, ndim, dims, kh, kw);
    status =
        plm__graph_add_source(c->pl, PLM__TENSOR_CONSTANT, PLM_DTYPE_F32, ndim, dims, taps, kernel);
  }
  free(taps);
  if (status != PLM_OK) return plm__pipe_reraise(status, "element %d '%s'", e->index, e->name);
  return PLM_OK;
}

/* Whether an op makes labels as its main output and a count: what an IN_COUNT input reads
 * from the element before it. */
static bool makes_labels_and_count(const plm__op_desc *op) {
  bool labels = false, count = false;
  for (int k = 0; k < op->output_count; k++) {
    labels |= op->outputs[k].role == PLM__OUT_MAIN && op->outputs[k].labels;
    count |= op->outputs[k].role == PLM__OUT_COUNT;
  }
  return labels && count;
}

/* An IN_COUNT input: the element just before made labels (now the chain's) and a count. */
static plm_status check_count_input(const chain *c, const plm__element *e, const plm__op_desc *op,
                                    int slot) {
  if (c->last && makes_labels_and_count(c->last) && c->count >= 0) return PLM_OK;
  char makers[128] = "";
  for (int k = 0; k < PLM__OP_COUNT; k++) {
    const plm__op_desc *maker = plm__op_get((plm__op_kind)k);
    if (!(maker->flags & PLM__OP_PLAN_ONLY) && makes_labels_and_count(maker))
      snprintf(makers + strlen(makers), sizeof makers - strlen(makers), "%s%s",
               makers[0] ? " or " : "", maker->name);
  }
  return plm__element_fail(e, "needs a %s element just before it (it reads %s and %s)", makers,
                           op->inputs[0].name, op->inputs[slot].name);
}

/* The node's inputs, as each slot's role says; *kh, *kw: a kernel's size (1 without one). */
static plm_status get_inputs(chain *c, const plm__element *e, const plm__op_desc *op, int *inputs,
                             int *kh, int *kw) {
  static const char *const frame_choices[] = {"input", "none"};
  plm__pipe_io(inputs, -1, -1, -1);
  for (int k = 0; k < op->input_count; k++)
    if (op->inputs[k].role == PLM__IN_COUNT) {
      plm_status status = check_count_input(c, e, op, k);
      if (status != PLM_OK) return status;
    }
  for (int k = 0; k < op->input_count; k++) {
    const plm__op_slot *slot = &op->inputs[k];
    plm_status status = PLM_OK;
    switch ((plm__input_role)slot->role) {
      case PLM__IN_CHAIN: inputs[k] = c->main; break;
      case PLM__IN_COUNT: inputs[k] = c->count; break;
      case PLM__IN_TENSOR: status = get_tensor(c, e, slot, !slot->optional, &inputs[k]); break;
      case PLM__IN_KERNEL: {
        const char *spec = plm__element_value(e, slot->name);
        if (!spec) return plm__element_fail(e, "missing key '%s'", slot->name);
        status = spec[0] == '@' ? named_kernel(c, e, slot, &inputs[k], kh, kw)
                                : spec_kernel(c, e, slot, &inputs[k], kh, kw);
        break;
      }
      case PLM__IN_FRAME: {
        int choice = 0;
        status = get_choice(e, slot->name, frame_choices, 2, &choice);
        inputs[k] = choice == 0 ? c->input : -1;
        break;
      }
    }
    if (status != PLM_OK) return status;
  }
  return PLM_OK;
}

/* ---- an element --------------------------------------------------------------------------- */

/* Whether a name is letters, digits, '_', '-' and '.' (what the text and a tensor's name
 * can be). */
static bool is_name(const char *name) {
  if (!*name) return false;
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '-' || *p == '.'))
      return false;
  return true;
}

/* name=NAME: the element's main output, by that name, for ~NAME. */
static plm_status name_output(chain *c, const plm__element *e) {
  const char *name = plm__element_value(e, "name");
  if (!name) return PLM_OK;
  if (!is_name(name))
    return plm__element_fail(e, "key 'name': '%s' is not letters, digits, '_', '-' and '.' only",
                             name);
  if (find_named(c->names, c->name_count, name))
    return plm__element_fail(e, "key 'name': an element before is named '%s'", name);
  if (c->name_count == MAX_NAMED)
    return plm__element_fail(e, "more than %d named elements", MAX_NAMED);
  c->names[c->name_count++] =
      (named){.name = name, .tensor = c->main, .shape = c->pl->graph.tensors[c->main].shape};
  return PLM_OK;
}

/* Build the node of element e of op: its inputs, its parameters, the outputs the text
 * makes; the chain goes on from its main output. */
static plm_status build(chain *c, const plm__element *e, const plm__op_desc *op) {
  int inputs[PLM__PIPE_MAX_IO], outputs[PLM__PIPE_MAX_IO], kh = 1, kw = 1;
  plm__op_params params;
  plm_status status = get_inputs(c, e, op, inputs, &kh, &kw);
  if (status != PLM_OK) return status;
  status = plm__element_params(e, op, c->pl->graph.tensors[c->main].shape.dtype, kh, kw, &params);
  if (status != PLM_OK) return status;
  bool want[PLM__PIPE_MAX_IO] = {false};
  for (int k = 0; k < op->output_count; k++) want[k] = op->outputs[k].role != PLM__OUT_UNMADE;
  status = add(c, e, op, inputs, &params, want, outputs);
  if (status != PLM_OK) return status;
  for (int k = 0; k < op->output_count; k++) {
    if (op->outputs[k].role == PLM__OUT_MAIN) c->main = outputs[k];
    if (op->outputs[k].role == PLM__OUT_COUNT) c->count = outputs[k];
    if (op->outputs[k].role == PLM__OUT_SIDE) c->side = outputs[k];
  }
  return name_output(c, e);
}

/* The keys an op's element takes: those naming a tensor (key=@NAME) and those taking a
 * value (a kernel slot takes both, and `size`). */
static bool takes_tensor(const plm__op_desc *op, const char *key) {
  for (int k = 0; k < op->input_count; k++) {
    const int role = op->inputs[k].role;
    if ((role == PLM__IN_TENSOR || role == PLM__IN_KERNEL) && strcmp(op->inputs[k].name, key) == 0)
      return true;
  }
  return false;
}

static bool takes_value(const plm__op_desc *op, const char *key) {
  for (int k = 0; k < op->input_count; k++) {
    const int role = op->inputs[k].role;
    if ((role == PLM__IN_KERNEL || role == PLM__IN_FRAME) && strcmp(op->inputs[k].name, key) == 0)
      return true;
    if (plm__op_slot_takes_size(&op->inputs[k]) && strcmp(key, "size") == 0) return true;
  }
  for (int i = 0; i < op->param_count; i++)
    if (strcmp(op->params[i].name, key) == 0) return true;
  return false;
}

/* "b=@NAME, bias=@NAME, act, precision": the tensor-only keys first. */
static void keys_text(const plm__op_desc *op, char *list, size_t size) {
  list[0] = '\0';
#define APPEND(...) snprintf(list + strlen(list), size - strlen(list), __VA_ARGS__)
  for (int k = 0; k < op->input_count; k++)
    if (op->inputs[k].role == PLM__IN_TENSOR)
      APPEND("%s%s=@NAME", list[0] ? ", " : "", op->inputs[k].name);
  for (int k = 0; k < op->input_count; k++) {
    if (op->inputs[k].role == PLM__IN_KERNEL)
      APPEND("%s%s%s", list[0] ? ", " : "", op->inputs[k].name,
             plm__op_slot_takes_size(&op->inputs[k]) ? ", size" : "");
    if (op->inputs[k].role == PLM__IN_FRAME)
      APPEND("%s%s", list[0] ? ", " : "", op->inputs[k].name);
  }
  for (int i = 0; i < op->param_count; i++) APPEND("%s%s", list[0] ? ", " : "", op->params[i].name);
#undef APPEND
}

/* Every key is one of the op's, and only tensor keys are given a tensor (@NAME); a
 * tensor key given something else is refused when it is read (get_tensor). */
static plm_status check_keys(const plm__op_desc *op, const plm__element *e) {
  for (int i = 0; i < e->count; i++) {
    const plm__pair *kv = &e->pairs[i];
    if (strcmp(kv->key, "name") == 0) continue; /* every element's: name_output */
    const bool value = takes_value(op, kv->key), tensor = takes_tensor(op, kv->key);
    if (value && !tensor && (kv->value[0] == '@' || kv->value[0] == '~'))
      return plm__element_fail(e, "key '%s': '%s' names a tensor, but %s takes a value", kv->key,
                               kv->value, kv->key);
    if (value || tensor) continue;
    char list[256];
    keys_text(op, list, sizeof list);
    return plm__element_fail(e, "unknown key '%s' (%s takes %s)", kv->key, op->name,
                             list[0] ? list : "none");
  }
  return PLM_OK;
}

/* ---- the text ------------------------------------------------------------------------------ */

static plm_status parse_element(chain *c, char *text, int index, bool last) {
  plm__element e = {.index = index, .name = ""};
  char *p = text;
  p += strspn(p, " \t\n\r");
  if (!*p) {
    const char *where = index == 1 && last ? "the text is empty"
                        : index == 1       ? "the text starts with '!'"
                        : last             ? "the text ends with '!'"
                                           : "nothing between two '!'";
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "element %d is empty (%s)", index, where);
  }
  plm_status status = plm__element_split(p, &e);
  if (status != PLM_OK) return status;
  const plm__op_desc *op = plm__op_find(e.name);
  if (op && !(op->flags & PLM__OP_PLAN_ONLY)) {
    status = check_keys(op, &e);
    return status == PLM_OK ? build(c, &e, op) : status;
  }
  char list[256];
  plm__node_op_names(list, sizeof list);
  return plm__element_fail(&e, "unknown element (one of %s)", list);
}

/* Whether the last element made the chain's count or read it (label, segment, regions). */
static bool counted(const plm__op_desc *op) {
  for (int k = 0; k < op->output_count; k++)
    if (op->outputs[k].role == PLM__OUT_COUNT) return true;
  for (int k = 0; k < op->input_count; k++)
    if (op->inputs[k].role == PLM__IN_COUNT) return true;
  return false;
}

/* The outputs: the main one, then the count when the last element made or read it, or
 * the side output it made (lstm_cell's out_c). */
static plm_status mark_outputs(chain *c) {
  plm_status status = plm_pipeline_mark_output(c->pl, plm__graph_handle(c->pl, c->main));
  if (status == PLM_OK && counted(c->last))
    status = plm_pipeline_mark_output(c->pl, plm__graph_handle(c->pl, c->count));
  for (int k = 0; status == PLM_OK && k < c->last->output_count; k++)
    if (c->last->outputs[k].role == PLM__OUT_SIDE)
      status = plm_pipeline_mark_output(c->pl, plm__graph_handle(c->pl, c->side));
  return status == PLM_OK ? PLM_OK : plm__pipe_reraise(status, "%s", "");
}

/* Each previous value the text made follows the output of its name. */
static plm_status bind_previous(chain *c) {
  for (int i = 0; i < c->previous_count; i++) {
    const named *value = find_named(c->names, c->name_count, c->previous[i].name);
    plm_status status =
        plm_pipeline_bind_previous(c->pl, plm__graph_handle(c->pl, c->previous[i].tensor),
                                   plm__graph_handle(c->pl, value->tensor));
    if (status != PLM_OK) return plm__pipe_reraise(status, "~%s", c->previous[i].name);
  }
  return PLM_OK;
}

static plm_status parse(chain *c, char *text) {
  int index = 1;
  for (char *start = text;; index++) {
    char *bang = strchr(start, '!');
    if (bang) *bang = '\0';
    plm_status status = parse_element(c, start, index, !bang);
    if (status != PLM_OK) return status;
    if (!bang) break;
    start = bang + 1;
  }
  plm_status status = mark_outputs(c);
  return status == PLM_OK ? bind_previous(c) : status;
}

/* The caller's tensors, checked before anything is built: names that the text can
 * write (letters, digits, '_', '-', '.'), each once, and data of a valid dtype and shape. */
static plm_status check_tensors(const plm_named_tensor *tensors, int count) {
  if (count < 0) return plm__fail_raw(PLM_ERR_INVALID_ARG, "count %d is negative", count);
  if (count > 0 && !tensors)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "tensors is NULL (count %d)", count);
  for (int i = 0; i < count; i++) {
    const plm_named_tensor *t = &tensors[i];
    if (!t->name) return plm__fail_raw(PLM_ERR_INVALID_ARG, "tensors[%d].name is NULL", i);
    if (!t->name[0]) return plm__fail_raw(PLM_ERR_INVALID_ARG, "tensors[%d].name is empty", i);
    for (const char *p = t->name; *p; p++)
      if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '_' || *p == '-' || *p == '.'))
        return plm__fail_raw(PLM_ERR_INVALID_ARG,
                             "tensors[%d].name '%s' is not letters, digits, '_', '-' and '.' "
                             "only (the text could not name it)",
                             i, t->name);
    for (int j = 0; j < i; j++)
      if (strcmp(tensors[j].name, t->name) == 0)
        return plm__fail_raw(PLM_ERR_INVALID_ARG,
                             "tensors[%d].name '%s' is given twice (also tensors[%d])", i, t->name,
                             j);
    if (!t->host_data)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "tensors[%d] '%s': host_data is NULL", i, t->name);
    if (plm__tensor_check_shape(t->shape.dtype, t->shape.ndim, t->shape.dims) != PLM_OK)
      return plm__pipe_reraise(PLM_ERR_INVALID_ARG, "tensors[%d] '%s'", i, t->name);
  }
  return PLM_OK;
}

/* One pass over the text (writable) into a new pipeline c->pl (left for the caller to
 * destroy, also on failure). */
static plm_status parse_pass(chain *c, plm_context *ctx, plm_dtype dtype, int ndim,
                             const int64_t *dims, char *text) {
  for (int t = 0; t < c->tensor_count; t++) c->constants[t] = -1;
  c->pl = NULL;
  plm_status status = plm_pipeline_create(ctx, &c->pl);
  if (status == PLM_OK) {
    status = plm__graph_add_source(c->pl, PLM__TENSOR_INPUT, dtype, ndim, dims, NULL, &c->input);
    c->main = c->input;
  }
  return status == PLM_OK ? parse(c, text) : status;
}

/* The arguments were checked for NULL by the public functions; the messages are raw. */
static plm_status parse_text(plm_context *ctx, const char *text, plm_dtype dtype, int ndim,
                             const int64_t *dims, const plm_named_tensor *tensors, int count,
                             plm_pipeline **out) {
  plm_status status = check_tensors(tensors, count);
  if (status != PLM_OK) return status;
  chain c = {.input = -1, .count = -1, .side = -1, .tensors = tensors, .tensor_count = count};
  char *copy = malloc(strlen(text) + 1);
  c.constants = malloc((size_t)count * sizeof *c.constants + 1);
  c.finite = calloc((size_t)count + 1, sizeof *c.finite);
  if (!copy || !c.constants || !c.finite) {
    free(copy);
    free(c.constants);
    free(c.finite);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the text");
  }
  /* A text reading previous values learns its named outputs' shapes in a first pass. */
  chain probe = c;
  char *probe_text = strstr(text, "=~") ? malloc(strlen(text) + 1) : NULL;
  if (probe_text) {
    strcpy(probe_text, text);
    probe.probing = true;
    status = parse_pass(&probe, ctx, dtype, ndim, dims, probe_text);
    plm_pipeline_destroy(probe.pl);
    c.probed = probe.names;
    c.probed_count = probe.name_count;
  } else if (strstr(text, "=~")) {
    status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the text");
  }
  if (status == PLM_OK) {
    strcpy(copy, text);
    status = parse_pass(&c, ctx, dtype, ndim, dims, copy);
  }
  free(probe_text);
  free(copy);
  free(c.constants);
  free(c.finite);
  if (status != PLM_OK) {
    plm_pipeline_destroy(c.pl);
    return status;
  }
  *out = c.pl;
  return PLM_OK;
}

plm_status plm_pipeline_parse(plm_context *ctx, const char *text, plm_dtype dtype, int ndim,
                              const int64_t *dims, plm_pipeline **out) {
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(text);
  PLM__REQUIRE_NOT_NULL(dims);
  return plm__propagate(parse_text(ctx, text, dtype, ndim, dims, NULL, 0, out));
}

plm_status plm_pipeline_parse_with_tensors(plm_context *ctx, const char *text, plm_dtype dtype,
                                           int ndim, const int64_t *dims,
                                           const plm_named_tensor *tensors, int count,
                                           plm_pipeline **out) {
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(text);
  PLM__REQUIRE_NOT_NULL(dims);
  return plm__propagate(parse_text(ctx, text, dtype, ndim, dims, tensors, count, out));
}

/* pipeline/graph.c: building a pipeline's graph (plume/pipeline.h): inputs, constants,
 * nodes checked by their ops' descriptors (ops/op_desc.h), outputs, and the shape
 * queries. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/parse.h"
#include "pipeline/pipeline_internal.h"
#include "streams/error.h"

/* ---- messages ------------------------------------------------------------------------------ */

plm_status plm__pipe_reraise(plm_status status, const char *fmt, ...) {
  char message[1024], prefix[256];
  snprintf(message, sizeof message, "%s", plm_last_error());
  /* "plm_entropy_output: params->window ..." -> "params->window ..." */
  const char *tail = message, *colon = strstr(message, ": ");
  if (strncmp(message, "plm_", 4) == 0 && colon && !memchr(message, ' ', (size_t)(colon - message)))
    tail = colon + 2;
  va_list args;
  va_start(args, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, args);
  va_end(args);
  if (!prefix[0]) return plm__fail_raw(status, "%s", tail);
  return plm__fail_raw(status, "%s: %s", prefix, tail);
}

/* ---- handles ------------------------------------------------------------------------------- */

int plm__graph_resolve(const plm_pipeline *pl, plm_pipe_tensor t, const char *name) {
  if (t.pipeline == 0 && t.id == 0) {
    plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is a zeroed handle (no tensor)", name);
    return -1;
  }
  if (t.pipeline != pl->serial || t.id < 1 || t.id > (uint32_t)pl->graph.tensor_count) {
    plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is not a tensor of this pipeline", name);
    return -1;
  }
  return (int)t.id - 1;
}

plm_pipe_tensor plm__graph_handle(const plm_pipeline *pl, int tensor) {
  return (plm_pipe_tensor){.pipeline = pl->serial, .id = (uint32_t)tensor + 1};
}

/* ---- growing the arrays -------------------------------------------------------------------- */

/* Make room for `more` elements of `size` bytes; false (nothing changed) without memory. */
static bool reserve(void **array, int *capacity, int count, int more, size_t size) {
  if (count + more <= *capacity) return true;
  int wanted = *capacity ? *capacity : 8;
  while (wanted < count + more) wanted *= 2;
  void *grown = realloc(*array, (size_t)wanted * size);
  if (!grown) return false;
  *array = grown;
  *capacity = wanted;
  return true;
}

#define RESERVE(array, capacity, count, more) \
  reserve((void **)&(array), &(capacity), (count), (more), sizeof *(array))

void plm__graph_free(plm__graph *graph) {
  for (int t = 0; t < graph->tensor_count; t++) free(graph->tensors[t].host);
  free(graph->tensors);
  free(graph->nodes);
  free(graph->inputs);
  free(graph->outputs);
  *graph = (plm__graph){0};
}

/* ---- tensors ---------------------------------------------------------------------------- */

const char *plm__tensor_kind_name(plm__tensor_kind kind) {
  switch (kind) {
    case PLM__TENSOR_INPUT: return "input";
    case PLM__TENSOR_CONSTANT: return "constant";
    case PLM__TENSOR_VALUE: return "value";
    case PLM__TENSOR_PREVIOUS: return "previous value";
  }
  return "tensor";
}

static plm_tensor describe(const plm_pipeline *pl, int tensor) {
  return plm__tensor_describe(pl->ctx, &pl->graph.tensors[tensor].shape);
}

/* The bytes of a shape, or 0 when they overflow size_t. */
static size_t shape_bytes(const plm_shape *shape) {
  size_t bytes = plm_dtype_size(shape->dtype);
  for (int d = 0; d < shape->ndim; d++) {
    if (shape->dims[d] < 1 || (uint64_t)shape->dims[d] > SIZE_MAX / bytes) return 0;
    bytes *= (size_t)shape->dims[d];
  }
  return bytes;
}

plm_status plm__graph_add_source(plm_pipeline *pl, plm__tensor_kind kind, plm_dtype dtype, int ndim,
                                 const int64_t *dims, const void *host, int *index) {
  if (plm__tensor_check_shape(dtype, ndim, dims) != PLM_OK)
    return plm__pipe_reraise(PLM_ERR_INVALID_ARG, "%s", plm__tensor_kind_name(kind));
  plm__graph *g = &pl->graph;
  plm__tensor t = {.kind = kind,
                   .shape = {.dtype = dtype, .ndim = ndim},
                   .producer = -1,
                   .slot = -1,
                   .io_index = -1,
                   .previous_of = -1,
                   .kept_as = -1,
                   .state = -1};
  for (int d = 0; d < ndim; d++) t.shape.dims[d] = dims[d];
  t.bytes = shape_bytes(&t.shape);
  if (!RESERVE(g->tensors, g->tensor_capacity, g->tensor_count, 1) ||
      (kind == PLM__TENSOR_INPUT && !RESERVE(g->inputs, g->input_capacity, g->input_count, 1)))
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for another tensor");
  if (kind == PLM__TENSOR_CONSTANT) {
    t.host = malloc(t.bytes);
    if (!t.host)
      return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a constant of %zu bytes",
                           t.bytes);
    memcpy(t.host, host, t.bytes);
  }
  if (kind == PLM__TENSOR_INPUT) {
    t.io_index = g->input_count;
    g->inputs[g->input_count++] = g->tensor_count;
  }
  *index = g->tensor_count;
  g->tensors[g->tensor_count++] = t;
  return PLM_OK;
}

/* ---- nodes ------------------------------------------------------------------------------- */

/* The output shapes of a node, checked by its op's descriptor on descriptions of its
 * inputs; the params the op resolves (regions' and segment's capacity 0 -> the bound) are
 * written back into p. */
static plm_status node_shapes(const plm_pipeline *pl, plm__op_kind kind, const int *inputs,
                              plm__op_params *p, plm_shape *out) {
  const plm__op_desc *op = plm__op_get(kind);
  if (op->flags & PLM__OP_PLAN_ONLY)
    return plm__fail_raw(PLM_ERR_INTERNAL, "%s is made by compile, not added", op->name);
  plm_tensor described[PLM__OP_MAX_IN];
  plm__op_call call = {.params = p};
  for (int k = 0; k < op->input_count; k++) {
    if (inputs[k] < 0) {
      if (op->inputs[k].optional) continue;
      return plm__fail_raw(PLM_ERR_INTERNAL, "input %s is missing", op->inputs[k].name);
    }
    described[k] = describe(pl, inputs[k]);
    call.in[k] = &described[k];
    call.in_connectivity[k] = pl->graph.tensors[inputs[k]].producer_connectivity;
  }
  plm__op_params resolved = *p;
  plm_status status = plm__op_shapes(op, &call, out, &resolved);
  if (status != PLM_OK) return plm__pipe_reraise(status, "%s", "");
  *p = resolved;
  return PLM_OK;
}

plm_status plm__graph_add_node(plm_pipeline *pl, plm__op_kind kind, const int *inputs,
                               const plm__op_params *params, const bool *want, int *outputs) {
  plm__op_params p = *params;
  plm_shape shapes[PLM__PIPE_MAX_IO] = {{0}};
  plm_status status = node_shapes(pl, kind, inputs, &p, shapes);
  if (status != PLM_OK) return status;

  plm__graph *g = &pl->graph;
  int made = 0;
  for (int k = 0; k < PLM__PIPE_MAX_IO; k++) made += want[k];
  if (!RESERVE(g->nodes, g->node_capacity, g->node_count, 1) ||
      !RESERVE(g->tensors, g->tensor_capacity, g->tensor_count, made))
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for another node");
  for (int k = 0; k < PLM__PIPE_MAX_IO; k++)
    if (want[k] && shape_bytes(&shapes[k]) == 0)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "output %s's size overflows",
                           plm__op_output_name(kind, k));

  int node = g->node_count++;
  plm__node *n = &g->nodes[node];
  *n = (plm__node){.kind = kind, .params = p};
  const plm__op_desc *op = plm__op_get(kind);
  for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
    n->inputs[k] = k < op->input_count ? inputs[k] : -1;
    n->outputs[k] = outputs[k] = -1;
    if (!want[k]) continue;
    plm__tensor t = {.kind = PLM__TENSOR_VALUE,
                     .shape = shapes[k],
                     .bytes = shape_bytes(&shapes[k]),
                     .producer = node,
                     .slot = k,
                     .io_index = -1,
                     .previous_of = -1,
                     .kept_as = -1,
                     .state = -1};
    if (op->outputs[k].labels) t.producer_connectivity = op->labels_connectivity(&p);
    n->outputs[k] = outputs[k] = g->tensor_count;
    g->tensors[g->tensor_count++] = t;
  }
  return PLM_OK;
}

/* ---- the public add calls ------------------------------------------------------------------- */

static plm_status check_buildable(const plm_pipeline *pl) {
  if (pl->compiled)
    return plm__fail_raw(PLM_ERR_INVALID_STATE, "the pipeline is compiled; nothing can be added");
  return PLM_OK;
}

/* The handles in[0..count) as tensor indices into inputs[] (-1 for the slots after count,
 * and for an optional slot given a zeroed handle). Messages: "node N 'kind': ...". */
static plm_status resolve_inputs(plm_pipeline *pl, const plm__op_desc *op,
                                 const plm_pipe_tensor *in, int count, int *inputs) {
  const int node = pl->graph.node_count;
  plm__pipe_io(inputs, -1, -1, -1);
  for (int k = 0; k < count; k++) {
    if (op->inputs[k].optional && in[k].pipeline == 0 && in[k].id == 0) continue;
    inputs[k] = plm__graph_resolve(pl, in[k], op->inputs[k].name);
    if (inputs[k] < 0)
      return plm__pipe_reraise(PLM_ERR_INVALID_ARG, "node %d '%s'", node, op->name);
  }
  return PLM_OK;
}

/* Add the node of resolved inputs and hand out the outputs asked for (out[k] not NULL).
 * An output its op always makes (not optional) is made even when not asked for: a
 * lowered op's steps need every one of them (segment). Messages: "node N 'kind': ...". */
static plm_status add_resolved(plm_pipeline *pl, const plm__op_desc *op, const int *inputs,
                               const plm__op_params *params, plm_pipe_tensor *const *out) {
  const int node = pl->graph.node_count;
  bool want[PLM__PIPE_MAX_IO] = {false};
  int asked = 0;
  for (int k = 0; k < op->output_count; k++) {
    asked += out[k] != NULL;
    want[k] = out[k] || !op->outputs[k].optional;
  }
  if (asked == 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "node %d '%s': no output asked for", node, op->name);
  int outputs[PLM__PIPE_MAX_IO];
  plm_status status = plm__graph_add_node(pl, op->kind, inputs, params, want, outputs);
  if (status != PLM_OK) return plm__pipe_reraise(status, "node %d '%s'", node, op->name);
  for (int k = 0; k < op->output_count; k++)
    if (out[k]) *out[k] = plm__graph_handle(pl, outputs[k]);
  return PLM_OK;
}

/* The common part of every typed add call: resolve, add, hand out. */
static plm_status add(plm_pipeline *pl, plm__op_kind kind, const plm_pipe_tensor *in, int count,
                      const plm__op_params *params, plm_pipe_tensor *const *out) {
  plm_status status = check_buildable(pl);
  if (status != PLM_OK) return status;
  const plm__op_desc *op = plm__op_get(kind);
  int inputs[PLM__PIPE_MAX_IO];
  status = resolve_inputs(pl, op, in, count, inputs);
  return status == PLM_OK ? add_resolved(pl, op, inputs, params, out) : status;
}

/* ---- any op, by name ------------------------------------------------------------------------ */

void plm__node_op_names(char *list, size_t size) {
  list[0] = '\0';
  for (int k = 0; k < PLM__OP_COUNT; k++) {
    const plm__op_desc *op = plm__op_get((plm__op_kind)k);
    if (!(op->flags & PLM__OP_PLAN_ONLY))
      snprintf(list + strlen(list), size - strlen(list), "%s%s", list[0] ? ", " : "", op->name);
  }
}

/* "in", "labels, intensity (optional), count": a node's slots, for messages. */
static void slot_names(const plm__op_slot *slots, int count, char *list, size_t size) {
  list[0] = '\0';
  for (int k = 0; k < count; k++)
    snprintf(list + strlen(list), size - strlen(list), "%s%s%s", k ? ", " : "", slots[k].name,
             slots[k].optional ? " (optional)" : "");
}

/* The size of the node's filter, from its inputs given as kernels (conv2d's 2-D one,
 * sepconv2d's kernel_x and kernel_y): padding=same reads it. 1, 1 without one; a shape
 * the op refuses (its own check names the slot) gives nothing. */
static void kernel_size(const plm_pipeline *pl, const plm__op_desc *op, const int *inputs, int *kh,
                        int *kw) {
  *kh = *kw = 1;
  for (int k = 0; k < op->input_count; k++) {
    if (op->inputs[k].role != PLM__IN_KERNEL || inputs[k] < 0) continue;
    const plm_shape *shape = &pl->graph.tensors[inputs[k]].shape;
    plm__op_kernel_extent(&op->inputs[k], shape->ndim, shape->dims, kh, kw);
  }
}

plm_status plm_pipeline_add(plm_pipeline *pl, const char *op_name, const plm_pipe_tensor *inputs,
                            int input_count, const char *params, plm_pipe_tensor *const *outputs,
                            int output_count) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(op_name);
  PLM__REQUIRE_NOT_NULL(inputs);
  PLM__REQUIRE_NOT_NULL(outputs);
  plm_status status = check_buildable(pl);
  if (status != PLM_OK) return plm__propagate(status);
  const int node = pl->graph.node_count;
  const plm__op_desc *op = plm__op_find(op_name);
  char list[256];
  if (!op || (op->flags & PLM__OP_PLAN_ONLY)) {
    plm__node_op_names(list, sizeof list);
    return plm__fail(PLM_ERR_INVALID_ARG, "node %d: no op '%s' (one of %s)", node, op_name, list);
  }
  /* Optional slots at the end may be left out, as zeroed handles would leave them empty. */
  int least = op->input_count;
  while (least > 0 && op->inputs[least - 1].optional) least--;
  if (input_count < least || input_count > op->input_count) {
    slot_names(op->inputs, op->input_count, list, sizeof list);
    if (least == op->input_count)
      return plm__fail(PLM_ERR_INVALID_ARG, "node %d '%s': input_count %d is not %d (%s)", node,
                       op->name, input_count, op->input_count, list);
    return plm__fail(PLM_ERR_INVALID_ARG, "node %d '%s': input_count %d is not in %d..%d (%s)",
                     node, op->name, input_count, least, op->input_count, list);
  }
  if (output_count != op->output_count) {
    slot_names(op->outputs, op->output_count, list, sizeof list);
    return plm__fail(PLM_ERR_INVALID_ARG, "node %d '%s': output_count %d is not %d (%s)", node,
                     op->name, output_count, op->output_count, list);
  }
  plm_pipe_tensor given[PLM__PIPE_MAX_IO] = {{0}};
  for (int k = 0; k < input_count; k++) given[k] = inputs[k];
  int resolved[PLM__PIPE_MAX_IO];
  status = resolve_inputs(pl, op, given, op->input_count, resolved);
  if (status != PLM_OK) return plm__propagate(status);
  int kh, kw;
  kernel_size(pl, op, resolved, &kh, &kw);
  /* Which keys are required may hang on the first input's dtype (f32: threshold's value). */
  const plm_dtype dtype =
      resolved[0] >= 0 ? pl->graph.tensors[resolved[0]].shape.dtype : PLM_DTYPE_U8;
  plm__op_params p;
  status = plm__parse_node_params(op, params, dtype, kh, kw, &p);
  if (status != PLM_OK)
    return plm__propagate(plm__pipe_reraise(status, "node %d '%s'", node, op->name));
  return plm__propagate(add_resolved(pl, op, resolved, &p, outputs));
}

/* ---- the typed add calls ------------------------------------------------------------------ */

#define REQUIRE_PARAMS(params)     \
  do {                             \
    PLM__REQUIRE_NOT_NULL(pl);     \
    PLM__REQUIRE_NOT_NULL(params); \
  } while (0)

/* A source tensor (an input, a constant, a previous value) and its handle; the message is
 * raw. */
static plm_status add_source_handle(plm_pipeline *pl, plm__tensor_kind kind, plm_dtype dtype,
                                    int ndim, const int64_t *dims, const void *host,
                                    plm_pipe_tensor *out) {
  int index = -1;
  plm_status status = check_buildable(pl);
  if (status == PLM_OK) status = plm__graph_add_source(pl, kind, dtype, ndim, dims, host, &index);
  if (status == PLM_OK) *out = plm__graph_handle(pl, index);
  return status;
}

plm_status plm_pipeline_add_input(plm_pipeline *pl, plm_dtype dtype, int ndim, const int64_t *dims,
                                  plm_pipe_tensor *out) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(dims);
  PLM__REQUIRE_NOT_NULL(out);
  return plm__propagate(add_source_handle(pl, PLM__TENSOR_INPUT, dtype, ndim, dims, NULL, out));
}

plm_status plm_pipeline_add_constant(plm_pipeline *pl, plm_dtype dtype, int ndim,
                                     const int64_t *dims, const void *host_data,
                                     plm_pipe_tensor *out) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(dims);
  PLM__REQUIRE_NOT_NULL(host_data);
  PLM__REQUIRE_NOT_NULL(out);
  return plm__propagate(
      add_source_handle(pl, PLM__TENSOR_CONSTANT, dtype, ndim, dims, host_data, out));
}

plm_status plm_pipeline_add_previous(plm_pipeline *pl, plm_dtype dtype, int ndim,
                                     const int64_t *dims, plm_pipe_tensor *out) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(dims);
  PLM__REQUIRE_NOT_NULL(out);
  return plm__propagate(add_source_handle(pl, PLM__TENSOR_PREVIOUS, dtype, ndim, dims, NULL, out));
}

plm_status plm_pipeline_bind_previous(plm_pipeline *pl, plm_pipe_tensor previous,
                                      plm_pipe_tensor value) {
  PLM__REQUIRE_NOT_NULL(pl);
  plm_status status = check_buildable(pl);
  if (status != PLM_OK) return plm__propagate(status);
  const int p = plm__graph_resolve(pl, previous, "previous");
  if (p < 0) return plm__propagate(PLM_ERR_INVALID_ARG);
  const int v = plm__graph_resolve(pl, value, "value");
  if (v < 0) return plm__propagate(PLM_ERR_INVALID_ARG);
  plm__tensor *prev = &pl->graph.tensors[p], *val = &pl->graph.tensors[v];
  if (prev->kind != PLM__TENSOR_PREVIOUS)
    return plm__fail(PLM_ERR_INVALID_ARG,
                     "previous is the pipeline's %s, not a tensor of plm_pipeline_add_previous",
                     plm__tensor_kind_name(prev->kind));
  if (prev->previous_of >= 0)
    return plm__fail(PLM_ERR_INVALID_ARG, "previous is bound already (to t%d)",
                     prev->previous_of + 1);
  if (val->kind != PLM__TENSOR_VALUE)
    return plm__fail(PLM_ERR_INVALID_ARG,
                     "value is the pipeline's %s; a previous frame is kept of a node's result",
                     plm__tensor_kind_name(val->kind));
  if (val->kept_as >= 0)
    return plm__fail(PLM_ERR_INVALID_ARG, "value is kept already (by previous value t%d)",
                     val->kept_as + 1);
  if (!plm__shape_equal(&prev->shape, &val->shape)) {
    char want[96], got[96];
    plm__shape_text(&prev->shape, want, sizeof want);
    plm__shape_text(&val->shape, got, sizeof got);
    return plm__fail(PLM_ERR_INVALID_ARG, "value is %s but previous is %s", got, want);
  }
  prev->previous_of = v;
  val->kept_as = p;
  return PLM_OK;
}

/* The builders of plume/op_functions.h's map: pl and params (for an op with parameters)
 * not NULL, each output not NULL unless its slot is optional (named as the map names it),
 * then the node. */
#define BUILDER_PARAMS(op, PARAMS) PLM_OP__CAT(BUILDER_PARAMS_, PARAMS)(op)
#define BUILDER_PARAMS_PLM_OP_PARAMS(op) \
  PLM__REQUIRE_NOT_NULL(params);         \
  p.op = *params;
#define BUILDER_PARAMS_PLM_OP_NO_PARAMS(op)
#define OUTPUT_NAME(name) #name

#define DEFINE_BUILDER(op, PARAMS, IN, OUT)                                               \
  PLM_OP_BUILDER_SIGNATURE(op, PARAMS, IN, OUT) {                                         \
    PLM__REQUIRE_NOT_NULL(pl);                                                            \
    plm__op_params p;                                                                     \
    memset(&p, 0, sizeof p);                                                              \
    BUILDER_PARAMS(op, PARAMS)                                                            \
    const plm__op_desc *desc = &plm__op_##op;                                             \
    const plm_pipe_tensor inputs[] = {PLM_OP__EXPAND IN};                                 \
    plm_pipe_tensor *const outputs[PLM__PIPE_MAX_IO] = {PLM_OP__EXPAND OUT};              \
    static const char *const names[] = {PLM_OP__JOIN(OUTPUT_NAME, OUT)};                  \
    for (int k = 0; k < desc->output_count; k++)                                          \
      if (!outputs[k] && !desc->outputs[k].optional)                                      \
        return plm__fail(PLM_ERR_INVALID_ARG, "%s is NULL", names[k]);                    \
    return plm__propagate(                                                                \
        add(pl, desc->kind, inputs, (int)(sizeof inputs / sizeof *inputs), &p, outputs)); \
  }
#define DEFINE_MAPPED_BUILDER(op, PARAMS, SHAPE_IN, IN, OUT, FORM) \
  PLM_OP__IF_BUILDER(FORM, DEFINE_BUILDER(op, PARAMS, IN, OUT))

PLM_OP_FUNCTIONS_MAP(DEFINE_MAPPED_BUILDER)

plm_status plm_pipeline_add_regions(plm_pipeline *pl, plm_pipe_tensor labels,
                                    plm_pipe_tensor intensity, plm_pipe_tensor count,
                                    int64_t capacity, plm_pipe_tensor *table) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(table);
  plm__op_params p = {.regions = {.capacity = capacity}};
  const plm_pipe_tensor inputs[] = {labels, intensity, count};
  plm_pipe_tensor *const outputs[PLM__PIPE_MAX_IO] = {table, NULL, NULL};
  return plm__propagate(add(pl, PLM__OP_regions, inputs, 3, &p, outputs));
}

plm_status plm_pipeline_add_segment(plm_pipeline *pl, plm_pipe_tensor image,
                                    const plm_segment_params *params, int64_t capacity,
                                    plm_pipe_tensor *labels, plm_pipe_tensor *count,
                                    plm_pipe_tensor *table) {
  REQUIRE_PARAMS(params);
  plm__op_params p = {.segment = {.segment = *params, .capacity = capacity}};
  /* All three are made (none is optional); NULL only means "not named". */
  plm_pipe_tensor *const outputs[PLM__PIPE_MAX_IO] = {labels, count, table};
  return plm__propagate(add(pl, PLM__OP_segment, &image, 1, &p, outputs));
}

plm_status plm_pipeline_add_lstm_cell(plm_pipeline *pl, plm_pipe_tensor x, plm_pipe_tensor h,
                                      plm_pipe_tensor c, plm_pipe_tensor w_ih, plm_pipe_tensor w_hh,
                                      plm_pipe_tensor b_ih, plm_pipe_tensor b_hh,
                                      plm_pipe_tensor *out_h, plm_pipe_tensor *out_c) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(out_h);
  PLM__REQUIRE_NOT_NULL(out_c);
  plm__op_params p = {.lstm_cell = {0}}; /* lstm_cell has no parameters */
  const plm_pipe_tensor inputs[] = {x, h, c, w_ih, w_hh, b_ih, b_hh};
  plm_pipe_tensor *const outputs[PLM__PIPE_MAX_IO] = {out_h, out_c};
  return plm__propagate(add(pl, PLM__OP_lstm_cell, inputs, 7, &p, outputs));
}

plm_status plm_pipeline_add_vector_add(plm_pipeline *pl, plm_pipe_tensor a, plm_pipe_tensor b,
                                       const plm_vector_add_params *params, plm_pipe_tensor *out) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(out);
  /* NULL params: a + b, as plm_vector_add takes it. */
  plm__op_params p = {.vector_add = params ? *params : (plm_vector_add_params){1.0, 1.0}};
  const plm_pipe_tensor inputs[] = {a, b};
  plm_pipe_tensor *const outputs[PLM__PIPE_MAX_IO] = {out};
  return plm__propagate(add(pl, PLM__OP_vector_add, inputs, 2, &p, outputs));
}

plm_status plm_pipeline_add_dot(plm_pipeline *pl, plm_pipe_tensor a, plm_pipe_tensor b,
                                plm_pipe_tensor *out) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(out);
  plm__op_params p = {.dot = {0}};
  const plm_pipe_tensor inputs[] = {a, b};
  plm_pipe_tensor *const outputs[PLM__PIPE_MAX_IO] = {out};
  return plm__propagate(add(pl, PLM__OP_dot, inputs, 2, &p, outputs));
}

plm_status plm_pipeline_mark_output(plm_pipeline *pl, plm_pipe_tensor t) {
  PLM__REQUIRE_NOT_NULL(pl);
  plm_status status = check_buildable(pl);
  if (status != PLM_OK) return plm__propagate(status);
  int index = plm__graph_resolve(pl, t, "t");
  if (index < 0) return plm__propagate(PLM_ERR_INVALID_ARG);
  plm__graph *g = &pl->graph;
  plm__tensor *tensor = &g->tensors[index];
  if (tensor->kind != PLM__TENSOR_VALUE)
    return plm__fail(PLM_ERR_INVALID_ARG, "t is the pipeline's %s; outputs are nodes' results",
                     plm__tensor_kind_name(tensor->kind));
  if (tensor->io_index >= 0)
    return plm__fail(PLM_ERR_INVALID_ARG, "t is output %d already", tensor->io_index);
  if (!RESERVE(g->outputs, g->output_capacity, g->output_count, 1))
    return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory for another output");
  tensor->io_index = g->output_count;
  g->outputs[g->output_count++] = index;
  return PLM_OK;
}

/* ---- shapes ------------------------------------------------------------------------------ */

plm_status plm_pipeline_io_count(const plm_pipeline *pl, int *inputs, int *outputs) {
  PLM__REQUIRE_NOT_NULL(pl);
  if (inputs) *inputs = pl->graph.input_count;
  if (outputs) *outputs = pl->graph.output_count;
  return PLM_OK;
}

plm_status plm_pipeline_input_shape(const plm_pipeline *pl, int i, plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(out);
  if (i < 0 || i >= pl->graph.input_count)
    return plm__fail(PLM_ERR_INVALID_ARG, "i %d is not in 0..%d (the pipeline's inputs)", i,
                     pl->graph.input_count - 1);
  *out = pl->graph.tensors[pl->graph.inputs[i]].shape;
  return PLM_OK;
}

plm_status plm_pipeline_output_shape(const plm_pipeline *pl, int i, plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(out);
  if (i < 0 || i >= pl->graph.output_count)
    return plm__fail(PLM_ERR_INVALID_ARG, "i %d is not in 0..%d (the pipeline's outputs)", i,
                     pl->graph.output_count - 1);
  *out = pl->graph.tensors[pl->graph.outputs[i]].shape;
  return PLM_OK;
}

plm_status plm_pipeline_tensor_shape(const plm_pipeline *pl, plm_pipe_tensor t, plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(pl);
  PLM__REQUIRE_NOT_NULL(out);
  int index = plm__graph_resolve(pl, t, "t");
  if (index < 0) return plm__propagate(PLM_ERR_INVALID_ARG);
  *out = pl->graph.tensors[index].shape;
  return PLM_OK;
}

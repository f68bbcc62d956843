/* pipeline/parse.c: text pipelines, "sobel ! entropy window=16 ! threshold value=4.5"
 * (plm_pipeline_parse, plm_pipeline_parse_with_tensors; the grammar is in
 * plume/pipeline.h). The text is cut into elements and key=value pairs, each element is
 * checked against its table of keys, and the nodes are added with plm__graph_add_node,
 * which checks them as the C API does. A value @NAME names one of the caller's tensors,
 * which becomes a constant of the pipeline the first time the text names it. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/parse.h"
#include "pipeline/pipeline_internal.h"
#include "streams/error.h"

enum { MAX_PAIRS = 16 };

typedef struct pair {
  const char *key, *value;
} pair;

typedef struct element {
  int index; /* from 1 */
  const char *name;
  pair pairs[MAX_PAIRS];
  int count;
} element;

/* What the chain has made so far (tensor indices). */
typedef struct chain {
  plm_pipeline *pl;
  int input; /* the frame */
  int main;  /* what the next element reads */
  int count; /* the count of the last label (or segment), -1 when none */
  int cell;  /* out_c of the last lstm_cell, -1 when none */
  plm__op_kind last;
  const plm_named_tensor *tensors; /* the caller's, tensor_count of them */
  int tensor_count;
  int *constants; /* the constant each tensor became, -1 until the text names it */
} chain;

static plm_status fail(const element *e, const char *fmt, ...) PLM__PRINTF(2, 3);
static plm_status fail(const element *e, const char *fmt, ...) {
  char message[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "element %d '%s': %s", e->index, e->name, message);
}

static const char *value_of(const element *e, const char *key) {
  for (int i = 0; i < e->count; i++)
    if (strcmp(e->pairs[i].key, key) == 0) return e->pairs[i].value;
  return NULL;
}

/* An integer key in min..max; `fallback` when absent. */
static plm_status get_int(const element *e, const char *key, int64_t min, int64_t max,
                          int64_t fallback, int64_t *out) {
  const char *value = value_of(e, key);
  *out = fallback;
  if (value && !plm__parse_int(value, NULL, min, max, out))
    return fail(e, "key '%s': '%s' is not an integer in %lld..%lld", key, value, (long long)min,
                (long long)max);
  return PLM_OK;
}

/* A number key; *out unchanged when absent. */
static plm_status get_optional_number(const element *e, const char *key, double *out) {
  const char *value = value_of(e, key);
  if (value && !plm__parse_number(value, NULL, out))
    return fail(e, "key '%s': '%s' is not a finite number", key, value);
  return PLM_OK;
}

static plm_status get_number(const element *e, const char *key, double *out) {
  if (!value_of(e, key)) return fail(e, "missing key '%s'", key);
  return get_optional_number(e, key, out);
}

/* A number that is finite in f32; *out unchanged when absent. */
static plm_status get_f32(const element *e, const char *key, float *out) {
  const char *value = value_of(e, key);
  double v = 0;
  if (!value) return PLM_OK;
  if (!plm__parse_number(value, NULL, &v) || fabs(v) > FLT_MAX)
    return fail(e, "key '%s': '%s' is not a finite f32 number", key, value);
  *out = (float)v;
  return PLM_OK;
}

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

/* The tensor a key names (key=@NAME), as a tensor index: the caller's tensor NAME, added
 * as a constant of the pipeline the first time the text names it; -1 when the key is
 * absent and not required. */
static plm_status get_tensor(chain *c, const element *e, const char *key, bool required,
                             int *index) {
  const char *value = value_of(e, key);
  *index = -1;
  if (!value) return required ? fail(e, "missing key '%s' (a tensor: %s=@NAME)", key, key) : PLM_OK;
  if (value[0] != '@')
    return fail(e, "key '%s': '%s' is not a tensor (%s=@NAME names one of the tensors given)", key,
                value, key);
  const char *name = value + 1;
  for (int t = 0; t < c->tensor_count; t++) {
    if (strcmp(c->tensors[t].name, name) != 0) continue;
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
  return fail(e, "key '%s': no tensor named '%s' (%s)", key, name, list);
}

/* One of names[] (index into *out); *out unchanged when absent. */
static plm_status get_choice(const element *e, const char *key, const char *const *names, int count,
                             int *out) {
  const char *value = value_of(e, key);
  if (!value) return PLM_OK;
  for (int i = 0; i < count; i++)
    if (strcmp(value, names[i]) == 0) {
      *out = i;
      return PLM_OK;
    }
  char list[128] = "";
  for (int i = 0; i < count; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
  return fail(e, "key '%s': '%s' is not one of %s", key, value, list);
}

/* "A,B": two integers in min..max. */
static plm_status get_pair(const element *e, const char *key, const char *form, int64_t min,
                           int64_t max, int *a, int *b) {
  const char *value = value_of(e, key), *p = value;
  if (!value) return PLM_OK;
  int64_t first = 0, second = 0;
  if (!plm__parse_int(p, &p, min, max, &first) || *p != ',' ||
      !plm__parse_int(p + 1, NULL, min, max, &second))
    return fail(e, "key '%s': '%s' is not %s (two integers in %lld..%lld)", key, value, form,
                (long long)min, (long long)max);
  *a = (int)first;
  *b = (int)second;
  return PLM_OK;
}

static const char *const borders[] = {"zero", "replicate", "reflect101"};
static const char *const compares[] = {"gt", "ge", "lt", "le"};
static const char *const connectivities[] = {"4", "8"};

/* Add a node whose outputs[k] are made when want[k]; the node's own check names the
 * element. */
static plm_status add(chain *c, const element *e, plm__op_kind kind, const int *inputs,
                      const plm__op_params *params, const bool *want, int *outputs) {
  plm_status status = plm__graph_add_node(c->pl, kind, inputs, params, want, outputs);
  if (status != PLM_OK) return plm__pipe_reraise(status, "element %d '%s'", e->index, e->name);
  c->last = kind;
  return PLM_OK;
}

/* The inputs a, b, c (-1: absent), the other slots absent. */
#define IN(a, b, c) plm__pipe_io((int[PLM__PIPE_MAX_IO]){0}, (a), (b), (c))

static const bool first_output[PLM__PIPE_MAX_IO] = {true};

/* ---- the elements --------------------------------------------------------------------------- */

/* kernel=@NAME: the caller's tensor; its height and width when it is 2-D (else the op
 * refuses it when the node is added). */
static plm_status named_kernel(chain *c, const element *e, int *kernel, int *kh, int *kw) {
  if (value_of(e, "size"))
    return fail(e, "key 'size' is for inline kernels, not '%s'", value_of(e, "kernel"));
  plm_status status = get_tensor(c, e, "kernel", true, kernel);
  const plm_shape *shape = status == PLM_OK ? &c->pl->graph.tensors[*kernel].shape : NULL;
  if (shape && shape->ndim == 2) {
    *kh = (int)shape->dims[0];
    *kw = (int)shape->dims[1];
  }
  return status;
}

/* A built-in or inline kernel, added as a constant. */
static plm_status spec_kernel(chain *c, const element *e, int *kernel, int *kh, int *kw) {
  float *taps = NULL;
  plm_status status = plm__parse_kernel(value_of(e, "kernel"), value_of(e, "size"), &taps, kh, kw);
  const int64_t dims[2] = {*kh, *kw};
  if (status == PLM_OK)
    status =
        plm__graph_add_source(c->pl, PLM__TENSOR_CONSTANT, PLM_DTYPE_F32, 2, dims, taps, kernel);
  free(taps);
  if (status != PLM_OK) return plm__pipe_reraise(status, "element %d '%s'", e->index, e->name);
  return PLM_OK;
}

static plm_status build_conv2d(chain *c, const element *e) {
  const char *spec = value_of(e, "kernel");
  if (!spec) return fail(e, "missing key 'kernel'");
  int kernel = -1, kh = 1, kw = 1, border = PLM_BORDER_ZERO, out[PLM__PIPE_MAX_IO];
  plm_status status =
      spec[0] == '@' ? named_kernel(c, e, &kernel, &kh, &kw) : spec_kernel(c, e, &kernel, &kh, &kw);
  if (status != PLM_OK) return status;
  plm__op_params p = {.conv2d = plm_conv2d_params_default()};
  status = get_pair(e, "stride", "SY,SX", 1, INT32_MAX, &p.conv2d.stride_y, &p.conv2d.stride_x);
  const char *pad = value_of(e, "pad");
  if (status == PLM_OK && pad && strcmp(pad, "same") == 0) {
    if (kh % 2 == 0 || kw % 2 == 0)
      status = fail(e, "key 'pad': 'same' needs a kernel of odd sizes, not %dx%d", kh, kw);
    p.conv2d.pad_y = (kh - 1) / 2;
    p.conv2d.pad_x = (kw - 1) / 2;
  } else if (status == PLM_OK) {
    status = get_pair(e, "pad", "PY,PX", 0, PLM_CONV2D_MAX_PAD, &p.conv2d.pad_y, &p.conv2d.pad_x);
  }
  if (status == PLM_OK) status = get_choice(e, "border", borders, 3, &border);
  p.conv2d.border = (plm_border)border;
  if (status == PLM_OK)
    status = add(c, e, PLM__OP_CONV2D, IN(c->main, kernel, -1), &p, first_output, out);
  if (status == PLM_OK) c->main = out[0];
  return status;
}

static plm_status build_sobel(chain *c, const element *e) {
  int border = PLM_BORDER_REFLECT101, out[PLM__PIPE_MAX_IO];
  plm_status status = get_choice(e, "border", borders, 3, &border);
  plm__op_params p = {.sobel = {.border = (plm_border)border}};
  const bool magnitude[PLM__PIPE_MAX_IO] = {false, false, true};
  if (status == PLM_OK) status = add(c, e, PLM__OP_SOBEL, IN(c->main, -1, -1), &p, magnitude, out);
  if (status == PLM_OK) c->main = out[2];
  return status;
}

static plm_status build_entropy(chain *c, const element *e) {
  const plm_dtype dtype = c->pl->graph.tensors[c->main].shape.dtype;
  plm__op_params p = {.entropy = {0}};
  int64_t window = 0, bins = 0;
  if (!value_of(e, "window")) return fail(e, "missing key 'window'");
  plm_status status = get_int(e, "window", 1, 255, 0, &window);
  if (status == PLM_OK) status = get_int(e, "bins", 0, 65536, 0, &bins);
  if (status != PLM_OK) return status;
  p.entropy.window = (int)window;
  p.entropy.bins = (int)bins;
  const char *range = value_of(e, "range");
  if (dtype == PLM_DTYPE_F32 && !value_of(e, "bins"))
    return fail(e, "missing key 'bins' (f32 input needs a bin count)");
  if (dtype == PLM_DTYPE_F32 && !range)
    return fail(e, "missing key 'range' (f32 input needs range=LO,HI or range=auto)");
  if (dtype != PLM_DTYPE_F32 && range)
    return fail(e, "key 'range' is for f32 input, not %s (integers are binned by bins)",
                plm_dtype_name(dtype));
  if (range && strcmp(range, "auto") == 0) {
    p.entropy.range_auto = true;
  } else if (range) {
    const char *comma = strchr(range, ',');
    char lo[64];
    size_t length = comma ? (size_t)(comma - range) : 0;
    bool good = comma && length < sizeof lo;
    if (good) {
      memcpy(lo, range, length);
      lo[length] = '\0';
      good = plm__parse_number(lo, NULL, &p.entropy.range_lo) &&
             plm__parse_number(comma + 1, NULL, &p.entropy.range_hi);
    }
    if (!good) return fail(e, "key 'range': '%s' is not LO,HI (two finite numbers) or auto", range);
  }
  int out[PLM__PIPE_MAX_IO];
  status = add(c, e, PLM__OP_ENTROPY, IN(c->main, -1, -1), &p, first_output, out);
  if (status == PLM_OK) c->main = out[0];
  return status;
}

static plm_status build_threshold(chain *c, const element *e) {
  plm__op_params p = {.threshold = {0}};
  int compare = PLM_COMPARE_GT, out[PLM__PIPE_MAX_IO];
  plm_status status = get_number(e, "value", &p.threshold.value);
  if (status == PLM_OK) status = get_choice(e, "cmp", compares, 4, &compare);
  p.threshold.compare = (plm_compare)compare;
  if (status == PLM_OK)
    status = add(c, e, PLM__OP_THRESHOLD, IN(c->main, -1, -1), &p, first_output, out);
  if (status == PLM_OK) c->main = out[0];
  return status;
}

static plm_status build_label(chain *c, const element *e) {
  int connectivity = 1, out[PLM__PIPE_MAX_IO];
  plm_status status = get_choice(e, "connectivity", connectivities, 2, &connectivity);
  plm__op_params p = {.label = {.connectivity = connectivity ? 8 : 4}};
  const bool both[PLM__PIPE_MAX_IO] = {true, true};
  if (status == PLM_OK) status = add(c, e, PLM__OP_LABEL, IN(c->main, -1, -1), &p, both, out);
  if (status != PLM_OK) return status;
  c->main = out[0];
  c->count = out[1];
  return PLM_OK;
}

static plm_status build_regions(chain *c, const element *e) {
  if (c->last != PLM__OP_LABEL || c->count < 0)
    return fail(e, "needs a label element just before it (it reads labels and count)");
  static const char *const intensities[] = {"input", "none"};
  int64_t capacity = 0;
  int intensity = 0, out[PLM__PIPE_MAX_IO];
  plm_status status = get_int(e, "capacity", 1, INT64_MAX, 0, &capacity);
  if (status == PLM_OK) status = get_choice(e, "intensity", intensities, 2, &intensity);
  plm__op_params p = {.regions = {.capacity = capacity}};
  int inputs[PLM__PIPE_MAX_IO];
  plm__pipe_io(inputs, c->main, intensity == 0 ? c->input : -1, c->count);
  if (status == PLM_OK) status = add(c, e, PLM__OP_REGIONS, inputs, &p, first_output, out);
  if (status == PLM_OK) c->main = out[0];
  return status;
}

static plm_status build_segment(chain *c, const element *e) {
  plm__op_params p = {.segment = {.params = {0}}};
  int compare = PLM_COMPARE_GT, connectivity = 1, out[PLM__PIPE_MAX_IO];
  int64_t capacity = 0;
  plm_status status = get_number(e, "value", &p.segment.params.value);
  if (status == PLM_OK) status = get_choice(e, "cmp", compares, 4, &compare);
  if (status == PLM_OK) status = get_choice(e, "connectivity", connectivities, 2, &connectivity);
  if (status == PLM_OK) status = get_int(e, "capacity", 1, INT64_MAX, 0, &capacity);
  p.segment.params.compare = (plm_compare)compare;
  p.segment.params.connectivity = connectivity ? 8 : 4;
  p.segment.capacity = capacity;
  const bool all[PLM__PIPE_MAX_IO] = {true, true, true};
  if (status == PLM_OK) status = add(c, e, PLM__OP_SEGMENT, IN(c->main, -1, -1), &p, all, out);
  if (status != PLM_OK) return status;
  c->main = out[2];
  c->count = out[1];
  return PLM_OK;
}

static plm_status build_ar_forecast(chain *c, const element *e) {
  int64_t lags = 0, horizon = 0;
  if (!value_of(e, "lags")) return fail(e, "missing key 'lags'");
  if (!value_of(e, "horizon")) return fail(e, "missing key 'horizon'");
  plm_status status = get_int(e, "lags", 1, PLM_AR_MAX_LAGS, 0, &lags);
  if (status == PLM_OK) status = get_int(e, "horizon", 1, PLM_AR_MAX_HORIZON, 0, &horizon);
  plm__op_params p = {.ar_forecast = {.lags = (int)lags, .horizon = (int)horizon}};
  int out[PLM__PIPE_MAX_IO];
  if (status == PLM_OK)
    status = add(c, e, PLM__OP_AR_FORECAST, IN(c->main, -1, -1), &p, first_output, out);
  if (status == PLM_OK) c->main = out[0];
  return status;
}

static const char *const activations[] = {"none", "relu", "sigmoid", "tanh"};
static const char *const precisions[] = {"fp32", "tf32", "bf16", "auto"};
static const char *const dendrite_modes[] = {"sigmoid", "nmda", "active_bp", "multiplicative"};

/* The names above are in the order of their enums' values. */
_Static_assert(PLM_ACTIVATION_TANH == 3 && PLM_PRECISION_AUTO == 3 &&
                   PLM_DENDRITE_MULTIPLICATIVE == 3,
               "the choices' names follow the enums");

static plm_status build_matmul(chain *c, const element *e) {
  int b = -1, bias = -1, activation = PLM_ACTIVATION_NONE, precision = PLM_PRECISION_FP32;
  int out[PLM__PIPE_MAX_IO];
  plm_status status = get_tensor(c, e, "b", true, &b);
  if (status == PLM_OK) status = get_tensor(c, e, "bias", false, &bias);
  if (status == PLM_OK) status = get_choice(e, "act", activations, 4, &activation);
  if (status == PLM_OK) status = get_choice(e, "precision", precisions, 4, &precision);
  plm__op_params p = {
      .matmul = {.precision = (plm_precision)precision, .activation = (plm_activation)activation}};
  if (status == PLM_OK)
    status = add(c, e, PLM__OP_MATMUL, IN(c->main, b, bias), &p, first_output, out);
  if (status == PLM_OK) c->main = out[0];
  return status;
}

/* k 1, theta 0, beta 1 unless given: `plume op dendritic`'s defaults. */
static plm_status build_dendritic(chain *c, const element *e) {
  int w = -1, mode = PLM_DENDRITE_SIGMOID, out[PLM__PIPE_MAX_IO];
  plm__op_params p = {.dendritic = {.k = 1.0f, .theta = 0.0f, .beta = 1.0f}};
  plm_status status = get_tensor(c, e, "w", true, &w);
  if (status == PLM_OK) status = get_choice(e, "mode", dendrite_modes, 4, &mode);
  if (status == PLM_OK) status = get_f32(e, "k", &p.dendritic.k);
  if (status == PLM_OK) status = get_f32(e, "theta", &p.dendritic.theta);
  if (status == PLM_OK) status = get_f32(e, "beta", &p.dendritic.beta);
  p.dendritic.mode = (plm_dendrite_mode)mode;
  if (status == PLM_OK)
    status = add(c, e, PLM__OP_DENDRITIC, IN(c->main, w, -1), &p, first_output, out);
  if (status == PLM_OK) c->main = out[0];
  return status;
}

static plm_status build_vector_add(chain *c, const element *e) {
  int b = -1, out[PLM__PIPE_MAX_IO];
  plm__op_params p = {.vector_add = {.alpha = 1.0, .beta = 1.0}};
  plm_status status = get_tensor(c, e, "b", true, &b);
  if (status == PLM_OK) status = get_optional_number(e, "alpha", &p.vector_add.alpha);
  if (status == PLM_OK) status = get_optional_number(e, "beta", &p.vector_add.beta);
  if (status == PLM_OK)
    status = add(c, e, PLM__OP_VECTOR_ADD, IN(c->main, b, -1), &p, first_output, out);
  if (status == PLM_OK) c->main = out[0];
  return status;
}

static plm_status build_dot(chain *c, const element *e) {
  int b = -1, out[PLM__PIPE_MAX_IO];
  plm__op_params p = {.dot = {0}};
  plm_status status = get_tensor(c, e, "b", true, &b);
  if (status == PLM_OK) status = add(c, e, PLM__OP_DOT, IN(c->main, b, -1), &p, first_output, out);
  if (status == PLM_OK) c->main = out[0];
  return status;
}

/* The chain's tensor is x; the next element reads out_h, and out_c is an output when
 * lstm_cell is the last element. */
static plm_status build_lstm_cell(chain *c, const element *e) {
  static const char *const keys[] = {"h", "c", "w_ih", "w_hh", "b_ih", "b_hh"};
  int inputs[PLM__PIPE_MAX_IO], out[PLM__PIPE_MAX_IO];
  plm__pipe_io(inputs, c->main, -1, -1);
  plm_status status = PLM_OK;
  for (int k = 0; k < 6 && status == PLM_OK; k++)
    status = get_tensor(c, e, keys[k], k < 4, &inputs[1 + k]);
  plm__op_params p = {.matmul = {0}}; /* lstm_cell has no parameters */
  const bool both[PLM__PIPE_MAX_IO] = {true, true};
  if (status == PLM_OK) status = add(c, e, PLM__OP_LSTM_CELL, inputs, &p, both, out);
  if (status != PLM_OK) return status;
  c->main = out[0];
  c->cell = out[1];
  return PLM_OK;
}

typedef struct element_kind {
  const char *name;
  const char *keys[8];    /* that take values, NULL-terminated */
  const char *tensors[8]; /* that take a tensor (@NAME), NULL-terminated */
  plm_status (*build)(chain *c, const element *e);
} element_kind;

/* conv2d's kernel is in both lists: a kernel spec or a tensor. */
static const element_kind kinds[] = {
    {"conv2d", {"kernel", "size", "stride", "pad", "border"}, {"kernel"}, build_conv2d},
    {"sobel", {"border"}, {NULL}, build_sobel},
    {"entropy", {"window", "bins", "range"}, {NULL}, build_entropy},
    {"threshold", {"value", "cmp"}, {NULL}, build_threshold},
    {"label", {"connectivity"}, {NULL}, build_label},
    {"regions", {"capacity", "intensity"}, {NULL}, build_regions},
    {"segment", {"value", "cmp", "connectivity", "capacity"}, {NULL}, build_segment},
    {"ar_forecast", {"lags", "horizon"}, {NULL}, build_ar_forecast},
    {"matmul", {"act", "precision"}, {"b", "bias"}, build_matmul},
    {"lstm_cell", {NULL}, {"h", "c", "w_ih", "w_hh", "b_ih", "b_hh"}, build_lstm_cell},
    {"dendritic", {"mode", "k", "theta", "beta"}, {"w"}, build_dendritic},
    {"vector_add", {"alpha", "beta"}, {"b"}, build_vector_add},
    {"dot", {NULL}, {"b"}, build_dot},
};
enum { KINDS = sizeof kinds / sizeof kinds[0] };

/* ---- the text ------------------------------------------------------------------------------ */

static bool is_space(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* Cut one element's text (writable, NUL-terminated) into its name and pairs. */
static plm_status split(char *text, element *e) {
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
      return fail(e, "'%s' is not key=value", word);
    *equals = '\0';
    if (value_of(e, word)) return fail(e, "key '%s' is given twice", word);
    if (e->count == MAX_PAIRS) return fail(e, "more than %d keys", MAX_PAIRS);
    e->pairs[e->count++] = (pair){word, equals + 1};
    *p = end;
  }
  return PLM_OK;
}

static bool listed(const char *const *names, const char *key) {
  for (int k = 0; names[k]; k++)
    if (strcmp(names[k], key) == 0) return true;
  return false;
}

/* Every key is one of the kind's, and only tensor keys are given a tensor (@NAME); a
 * tensor key given something else is refused when it is read (get_tensor). */
static plm_status check_keys(const element_kind *kind, const element *e) {
  for (int i = 0; i < e->count; i++) {
    const pair *kv = &e->pairs[i];
    const bool value = listed(kind->keys, kv->key), tensor = listed(kind->tensors, kv->key);
    if (value && !tensor && kv->value[0] == '@')
      return fail(e, "key '%s': '%s' names a tensor, but %s takes a value", kv->key, kv->value,
                  kv->key);
    if (value || tensor) continue;
    char list[256] = ""; /* the tensor-only keys first: "b=@NAME, bias=@NAME, act, ..." */
    for (int k = 0; kind->tensors[k]; k++)
      if (!listed(kind->keys, kind->tensors[k]))
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s=@NAME", list[0] ? ", " : "",
                 kind->tensors[k]);
    for (int k = 0; kind->keys[k]; k++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "",
               kind->keys[k]);
    return fail(e, "unknown key '%s' (%s takes %s)", kv->key, kind->name, list);
  }
  return PLM_OK;
}

static plm_status parse_element(chain *c, char *text, int index, bool last) {
  element e = {.index = index, .name = ""};
  char *p = text;
  while (is_space(*p)) p++;
  if (!*p) {
    const char *where = index == 1 && last ? "the text is empty"
                        : index == 1       ? "the text starts with '!'"
                        : last             ? "the text ends with '!'"
                                           : "nothing between two '!'";
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "element %d is empty (%s)", index, where);
  }
  plm_status status = split(p, &e);
  if (status != PLM_OK) return status;
  for (int k = 0; k < KINDS; k++) {
    if (strcmp(e.name, kinds[k].name) != 0) continue;
    status = check_keys(&kinds[k], &e);
    return status == PLM_OK ? kinds[k].build(c, &e) : status;
  }
  char list[160] = "";
  for (int k = 0; k < KINDS; k++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", kinds[k].name);
  return fail(&e, "unknown element (one of %s)", list);
}

/* The outputs: the main one, then the count after label, regions or segment, or out_c
 * after lstm_cell. */
static plm_status mark_outputs(chain *c) {
  plm_status status = plm_pipeline_mark_output(c->pl, plm__graph_handle(c->pl, c->main));
  bool counted =
      c->last == PLM__OP_LABEL || c->last == PLM__OP_REGIONS || c->last == PLM__OP_SEGMENT;
  if (status == PLM_OK && counted)
    status = plm_pipeline_mark_output(c->pl, plm__graph_handle(c->pl, c->count));
  if (status == PLM_OK && c->last == PLM__OP_LSTM_CELL)
    status = plm_pipeline_mark_output(c->pl, plm__graph_handle(c->pl, c->cell));
  return status == PLM_OK ? PLM_OK : plm__pipe_reraise(status, "%s", "");
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
  return mark_outputs(c);
}

/* The caller's tensors, checked before anything is built: names that the text can
 * write (letters, digits, '_', '-', '.'), each once, and data of a valid dtype and shape. */
static plm_status check_tensors(plm_context *ctx, const plm_named_tensor *tensors, int count) {
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
    plm_tensor checked; /* plm_tensor_wrap checks the dtype and the shape */
    if (plm_tensor_wrap(ctx, (void *)t->host_data, t->shape.dtype, t->shape.ndim, t->shape.dims,
                        &checked) != PLM_OK)
      return plm__pipe_reraise(PLM_ERR_INVALID_ARG, "tensors[%d] '%s'", i, t->name);
  }
  return PLM_OK;
}

/* The arguments were checked for NULL by the public functions; the messages are raw. */
static plm_status parse_text(plm_context *ctx, const char *text, plm_dtype dtype, int ndim,
                             const int64_t *dims, const plm_named_tensor *tensors, int count,
                             plm_pipeline **out) {
  plm_status status = check_tensors(ctx, tensors, count);
  if (status != PLM_OK) return status;
  chain c = {.input = -1,
             .count = -1,
             .cell = -1,
             .last = PLM__OP_SOBEL_ENTROPY_THRESHOLD /* none yet */,
             .tensors = tensors,
             .tensor_count = count};
  char *copy = malloc(strlen(text) + 1);
  c.constants = malloc((size_t)count * sizeof *c.constants + 1);
  if (!copy || !c.constants) {
    free(copy);
    free(c.constants);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the text");
  }
  strcpy(copy, text);
  for (int t = 0; t < count; t++) c.constants[t] = -1;
  status = plm_pipeline_create(ctx, &c.pl);
  if (status == PLM_OK) {
    status = plm__graph_add_source(c.pl, PLM__TENSOR_INPUT, dtype, ndim, dims, NULL, &c.input);
    c.main = c.input;
  }
  if (status == PLM_OK) status = parse(&c, copy);
  free(copy);
  free(c.constants);
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

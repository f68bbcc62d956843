/* profile/tune.c: measuring the ops' tunables on a device (plm_tune_run, plume/tuning.h).
 *
 * For each op with a tunable on the context's backend, a few workloads: the sizes where
 * the knob matters (entropy and the fused op: frames of 256 x 256, and 1024 x 1024 in a
 * full run, and for their CUDA launch shape 4096 x 4096 too, where the segments are not
 * halved for a launch of too few tasks and segment_windows alone sets them; conv2d's
 * CUDA block: 5 x 5 taps over u16 frames of the same three sizes; lstm_cell and
 * dendritic: a batch of each candidate threshold, so that every candidate's split
 * between the two paths is exercised; matmul: n x n products across the TF32
 * candidates). Each workload's inputs are pseudo-random device tensors; each run
 * of the op is timed with events on one stream (device time on cuda, the worker's time on
 * host), the candidates taking turns run after run, so that a change of the machine's load
 * hits all of them. A candidate runs with call->tuning set: the process's forced values
 * and tables are not touched.
 *
 * The decision, per tunable and size class (a workload's class is its cost model's,
 * plm_size_class_of): each candidate's score is the sum over the class's workloads of
 * its median time; the best is kept only when it is not the default and its gain over
 * the default, (default - best) / default, is above twice the larger coefficient of
 * variation of the two (the noise of one run: a gain below it is not told apart from
 * the load). Each entry also records what the cost model predicts for its workloads at
 * the default (model_ms, from the device's calibration), so that plm_pipeline_predict can
 * scale the op's modelled time by the measured one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_desc.h"
#include "ops/op_tuning.h"
#include "plume/event.h"
#include "plume/profile.h"
#include "plume/tuning.h"
#include "profile/profile_internal.h"
#include "streams/error.h"

enum { MAX_SIZES = 8, MAX_WORKLOADS = 16, WARM_UPS = 1 };

/* A workload: the op's inputs and parameters at one size. */
typedef struct workload {
  plm__op_call call;
  plm__op_params params;
  plm_tensor in[PLM__OP_MAX_IN], out[PLM__OP_MAX_OUT];
  void *memory[PLM__OP_MAX_IN + PLM__OP_MAX_OUT];
  plm_size_class size_class;
  plm_op_cost cost;
} workload;

/* The sizes op's tunable is measured at (n: a frame's side, a batch, a matrix's side),
 * and the layer of dendritic (neurons, dendrites, inputs) for each: the seeds' 10 x 8 x
 * 16, and 256 x 8 x 256 in a full run. */
static int sizes_of(const plm__op_desc *op, const plm__op_tunable *t, bool quick, int64_t *sizes) {
  switch (op->kind) {
    case PLM__OP_SOBEL:
    case PLM__OP_THRESHOLD:
    case PLM__OP_LABEL:
      sizes[0] = 256;
      sizes[1] = 1024;
      return quick ? 1 : 2;
    case PLM__OP_ENTROPY:
    case PLM__OP_SOBEL_ENTROPY_THRESHOLD:
      sizes[0] = 256;
      sizes[1] = 1024;
      sizes[2] = 4096; /* the large class: segment_windows unhalved (kernels/cuda/entropy.cu) */
      return quick ? 1 : t->backend == PLM_BACKEND_CUDA ? 3 : 2;
    case PLM__OP_CONV2D: /* only for its cuda tile_width: on host no model row for it */
      if (t->backend != PLM_BACKEND_CUDA) return 0;
      sizes[0] = 256;
      sizes[1] = 1024;
      sizes[2] = 4096;
      return quick ? 1 : 3;
    case PLM__OP_LSTM_CELL:
    case PLM__OP_DENDRITIC:
      for (int k = 0; k < t->candidate_count; k++) sizes[k] = t->candidates[k];
      return t->candidate_count;
    case PLM__OP_MATMUL:
      for (int k = 0; k < 4; k++) sizes[k] = (int64_t)128 << k;
      return quick ? 2 : 4;
    default: return 0;
  }
}

static plm_shape shape2(plm_dtype dtype, int64_t a, int64_t b) {
  return (plm_shape){.dtype = dtype, .ndim = 2, .dims = {a, b}};
}

/* The input shapes and parameters of op at size n (layer: dendritic's large layer). */
static int inputs_of(const plm__op_desc *op, int64_t n, bool layer, plm_shape *in,
                     plm__op_params *params) {
  plm__op_params_default(op, params);
  switch (op->kind) {
    case PLM__OP_SOBEL: in[0] = shape2(PLM_DTYPE_U16, n, n); return 1;
    case PLM__OP_THRESHOLD: in[0] = shape2(PLM_DTYPE_F32, n, n); return 1;
    case PLM__OP_LABEL: in[0] = shape2(PLM_DTYPE_U8, n, n); return 1;
    case PLM__OP_CONV2D: /* 5 x 5 taps, same padding */
      params->conv2d.pad_y = params->conv2d.pad_x = 2;
      in[0] = shape2(PLM_DTYPE_U16, n, n);
      in[1] = shape2(PLM_DTYPE_F32, 5, 5);
      return 2;
    case PLM__OP_ENTROPY:
      params->entropy.window = 9;
      in[0] = shape2(PLM_DTYPE_U8, n, n);
      return 1;
    case PLM__OP_SOBEL_ENTROPY_THRESHOLD: {
      plm_sobel_entropy_threshold_params *p = &params->sobel_entropy_threshold;
      p->entropy.window = 9;
      p->entropy.bins = 64;
      p->entropy.range_auto = false;
      p->entropy.range_lo = 0.0;
      p->entropy.range_hi = 4.0;
      p->threshold.value = 5.0;
      in[0] = shape2(PLM_DTYPE_U8, n, n);
      return 1;
    }
    case PLM__OP_LSTM_CELL: /* the seeds' input 64, hidden 128; no biases */
      in[0] = shape2(PLM_DTYPE_F32, n, 64);
      in[1] = in[2] = shape2(PLM_DTYPE_F32, n, 128);
      in[3] = shape2(PLM_DTYPE_F32, 512, 64);
      in[4] = shape2(PLM_DTYPE_F32, 512, 128);
      return 5;
    case PLM__OP_DENDRITIC: {
      const int64_t neurons = layer ? 256 : 10, inputs = layer ? 256 : 16;
      in[0] = shape2(PLM_DTYPE_F32, n, inputs);
      in[1] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 3, .dims = {neurons, 8, inputs}};
      return 2;
    }
    case PLM__OP_MATMUL:
      params->matmul.precision = PLM_PRECISION_AUTO;
      in[0] = in[1] = shape2(PLM_DTYPE_F32, n, n);
      return 2;
    default: return 0;
  }
}

static size_t shape_bytes(const plm_shape *s) {
  size_t bytes = plm_dtype_size(s->dtype);
  for (int d = 0; d < s->ndim; d++) bytes *= (size_t)s->dims[d];
  return bytes;
}

static void workload_free(plm_context *ctx, workload *w) {
  for (int k = 0; k < PLM__OP_MAX_IN + PLM__OP_MAX_OUT; k++)
    if (w->memory[k]) plm_device_free(ctx, w->memory[k]);
  memset(w, 0, sizeof *w);
}

/* A device tensor of shape s in w's slot k, holding pseudo-random bytes (f32: in [0, 1)). */
static plm_status tensor_make(plm_context *ctx, plm_stream *stream, workload *w, int k,
                              const plm_shape *s, plm_tensor *t, uint64_t *seed) {
  const size_t bytes = shape_bytes(s);
  plm_status status = plm_device_alloc(ctx, bytes, &w->memory[k]);
  if (status == PLM_OK) status = plm_tensor_wrap(ctx, w->memory[k], s->dtype, s->ndim, s->dims, t);
  unsigned char *host = status == PLM_OK ? malloc(bytes) : NULL;
  if (status == PLM_OK && !host)
    status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for %zu bytes", bytes);
  if (status != PLM_OK) return status;
  for (size_t i = 0; i < bytes; i++) {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    host[i] = (unsigned char)(*seed >> 56);
  }
  if (s->dtype == PLM_DTYPE_F32)
    for (size_t i = 0; i < bytes / 4; i++) ((float *)host)[i] = (float)(host[4 * i] / 256.0);
  status = plm_stream_memcpy(stream, w->memory[k], host, bytes, PLM_COPY_HOST_TO_DEVICE);
  if (status == PLM_OK) status = plm_stream_synchronize(stream);
  free(host);
  return status;
}

static plm_status workload_make(plm_context *ctx, plm_stream *stream, const plm__op_desc *op,
                                int64_t n, bool layer, workload *w) {
  memset(w, 0, sizeof *w);
  plm_shape in[PLM__OP_MAX_IN], out[PLM__OP_MAX_OUT];
  const int inputs = inputs_of(op, n, layer, in, &w->params);
  uint64_t seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
  w->call.params = &w->params;
  plm_status status = PLM_OK;
  for (int k = 0; k < inputs && status == PLM_OK; k++) {
    status = tensor_make(ctx, stream, w, k, &in[k], &w->in[k], &seed);
    w->call.in[k] = &w->in[k];
  }
  if (status == PLM_OK) status = plm__op_shapes(op, &w->call, out, NULL);
  for (int k = 0; k < op->output_count && status == PLM_OK; k++) {
    /* The outputs a pipeline makes: the required ones and the main one (sobel's magnitude). */
    if (op->outputs[k].optional && op->outputs[k].role != PLM__OUT_MAIN) continue;
    status = tensor_make(ctx, stream, w, PLM__OP_MAX_IN + k, &out[k], &w->out[k], &seed);
    w->call.out[k] = &w->out[k];
  }
  if (status == PLM_OK) status = plm__op_cost(op, &w->call, &w->cost);
  w->size_class = plm_size_class_of(w->cost.bytes);
  if (status != PLM_OK) workload_free(ctx, w);
  return status;
}

/* The timing of one tunable: times[workload][candidate][run] in ms. */
typedef struct timing {
  plm_profile_calibration calibration; /* the device's, for the model's time */
  plm_stream *stream;
  plm_event *start, *end;
  double *times;
  int workloads, candidates, runs;
} timing;

static double *time_at(const timing *t, int w, int c, int r) {
  return &t->times[((size_t)w * (size_t)t->candidates + (size_t)c) * (size_t)t->runs + (size_t)r];
}

/* One run of w's call with op's tunable `index` at value (the others at their defaults;
 * index -1: all at their defaults). */
static plm_status time_run(timing *t, const plm__op_desc *op, int index, int64_t value, workload *w,
                           double *ms) {
  plm__op_tuning tuning;
  for (int k = 0; k < op->tunable_count; k++) tuning.values[k] = op->tunables[k].fallback;
  if (index >= 0) tuning.values[index] = value;
  w->call.tuning = &tuning;
  plm_status status = plm_event_record(t->start, t->stream);
  if (status == PLM_OK) status = plm__op_call_public(op, t->stream, &w->call);
  if (status == PLM_OK) status = plm_event_record(t->end, t->stream);
  if (status == PLM_OK) status = plm_event_synchronize(t->end);
  float elapsed = 0.0f;
  if (status == PLM_OK) status = plm_event_elapsed_ms(t->start, t->end, &elapsed);
  w->call.tuning = NULL;
  *ms = elapsed;
  return status;
}

/* The entries of one tunable, one per size class its workloads fall in. */
static void decide(const timing *t, const plm__op_desc *op, const plm__op_tunable *tunable,
                   const workload *w, plm_tuning_entry *entries, size_t *count) {
  for (int c = 0; c < PLM_SIZE_CLASS_COUNT; c++) {
    double score[PLM__OP_MAX_CANDIDATES] = {0}, cv[PLM__OP_MAX_CANDIDATES] = {0}, model = 0.0;
    bool any = false;
    for (int k = 0; k < t->workloads; k++) {
      if ((int)w[k].size_class != c) continue;
      any = true;
      model += plm__profile_model_ms(&w[k].cost, &t->calibration);
      for (int v = 0; v < t->candidates; v++) {
        plm_profile_op_stats stats = {0};
        plm_profile_stats_of(time_at(t, k, v, 0), (size_t)t->runs, &stats);
        score[v] += stats.p50_ms;
        if (stats.cv > cv[v]) cv[v] = stats.cv;
      }
    }
    if (!any) continue;
    int fallback = 0, best = 0;
    for (int v = 0; v < t->candidates; v++) {
      if (tunable->candidates[v] == tunable->fallback) fallback = v;
      if (score[v] < score[best]) best = v;
    }
    const double noise = cv[fallback] > cv[best] ? cv[fallback] : cv[best];
    const double gain = score[fallback] > 0 ? (score[fallback] - score[best]) / score[fallback] : 0;
    plm_tuning_entry *e = &entries[(*count)++];
    *e = (plm_tuning_entry){.size_class = (plm_size_class)c,
                            .fallback = tunable->fallback,
                            .best = tunable->candidates[best],
                            .default_ms = score[fallback],
                            .best_ms = score[best],
                            .cv = noise,
                            .kept = best != fallback && gain > 2.0 * noise,
                            .model_ms = model};
    e->value = e->kept ? e->best : e->fallback;
    snprintf(e->op, sizeof e->op, "%s", op->name);
    snprintf(e->tunable, sizeof e->tunable, "%s", tunable->name);
  }
}

/* An op without a tunable: its one "candidate" is the op as it is. */
static const plm__op_tunable model_only = {.name = "", .candidate_count = 1};

/* Measure op's tunable `index` (-1: the op alone, for the model's correction) on its
 * workloads; its entries appended to entries. */
static plm_status tune_one(plm_context *ctx, timing *t, const plm__op_desc *op, int index,
                           const plm_tune_options *options, plm_tuning_entry *entries,
                           size_t *count) {
  const plm__op_tunable *tunable = index >= 0 ? &op->tunables[index] : &model_only;
  int64_t sizes[MAX_SIZES];
  const int size_count = sizes_of(op, tunable, options->quick, sizes);
  const int layers = op->kind == PLM__OP_DENDRITIC && !options->quick ? 2 : 1;
  workload *w = calloc(MAX_WORKLOADS, sizeof *w);
  if (!w) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the workloads");
  plm_status status = PLM_OK;
  t->workloads = 0;
  for (int layer = 0; layer < layers && status == PLM_OK; layer++)
    for (int s = 0; s < size_count && status == PLM_OK && t->workloads < MAX_WORKLOADS; s++)
      if ((status = workload_make(ctx, t->stream, op, sizes[s], layer, &w[t->workloads])) == PLM_OK)
        t->workloads++;
  t->candidates = tunable->candidate_count;
  t->times = status == PLM_OK
                 ? calloc((size_t)t->workloads * (size_t)t->candidates * (size_t)t->runs + 1,
                          sizeof *t->times)
                 : NULL;
  if (status == PLM_OK && !t->times)
    status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the times");
  /* Warm-ups, then the candidates in turn, run after run. */
  for (int r = -WARM_UPS; r < t->runs && status == PLM_OK; r++)
    for (int k = 0; k < t->workloads && status == PLM_OK; k++)
      for (int v = 0; v < t->candidates && status == PLM_OK; v++) {
        double ms = 0.0;
        status = time_run(t, op, index, tunable->candidates[v], &w[k], &ms);
        if (r >= 0) *time_at(t, k, v, r) = ms;
      }
  if (status == PLM_OK) decide(t, op, tunable, w, entries, count);
  for (int k = 0; k < t->workloads; k++) workload_free(ctx, &w[k]);
  free(w);
  free(t->times);
  t->times = NULL;
  if (status == PLM_OK) return PLM_OK;
  char message[1024];
  snprintf(message, sizeof message, "%s", plm_last_error());
  return plm__fail_raw(status, "%s's %s: %s", op->name, tunable->name, message);
}

plm_tune_options plm_tune_options_default(void) {
  return (plm_tune_options){.quick = false, .op = NULL, .runs = 0};
}

plm_status plm_tune_run(plm_context *ctx, const plm_tune_options *options,
                        plm_tuning_entry **entries, size_t *count) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(entries);
  PLM__REQUIRE_NOT_NULL(count);
  *entries = NULL;
  *count = 0;
  const plm_tune_options defaults = plm_tune_options_default();
  if (!options) options = &defaults;
  if (options->runs < 0 || options->runs > 1000)
    return plm__fail(PLM_ERR_INVALID_ARG, "options->runs %d is not in 0..1000", options->runs);
  if (options->op && !plm__op_find(options->op))
    return plm__fail(PLM_ERR_INVALID_ARG, "no op named '%s'", options->op);
  const plm_backend backend = ctx->info.backend;
  size_t most = 0;
  for (int k = 0; k < PLM__OP_COUNT; k++)
    most += (size_t)(plm__op_get((plm__op_kind)k)->tunable_count + 1) * PLM_SIZE_CLASS_COUNT;
  plm_tuning_entry *out = calloc(most + 1, sizeof *out);
  timing t = {.runs = options->runs ? options->runs : options->quick ? 5 : 15};
  plm_status status = out ? PLM_OK : plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory");
  if (status == PLM_OK) status = plm__profile_calibrate(ctx, &t.calibration);
  if (status == PLM_OK) status = plm_stream_create(ctx, 0, &t.stream);
  if (status == PLM_OK) status = plm_event_create(ctx, 0, &t.start);
  if (status == PLM_OK) status = plm_event_create(ctx, 0, &t.end);
  for (int k = 0; k < PLM__OP_COUNT && status == PLM_OK; k++) {
    const plm__op_desc *op = plm__op_get((plm__op_kind)k);
    if (options->op && strcmp(options->op, op->name) != 0) continue;
    bool tuned = false;
    for (int i = 0; i < op->tunable_count && status == PLM_OK; i++)
      if (op->tunables[i].backend == backend) {
        status = tune_one(ctx, &t, op, i, options, out, count);
        tuned = true;
      }
    int64_t sizes[MAX_SIZES];
    if (!tuned && status == PLM_OK && sizes_of(op, &model_only, true, sizes) > 0)
      status = tune_one(ctx, &t, op, -1, options, out, count);
  }
  if (t.end) plm_event_destroy(t.end);
  if (t.start) plm_event_destroy(t.start);
  if (t.stream) plm_stream_destroy(t.stream);
  if (status != PLM_OK) {
    free(out);
    *count = 0;
    return plm__propagate(status);
  }
  *entries = out;
  return PLM_OK;
}

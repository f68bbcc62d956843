/* profile/tune.c: measuring the ops' tunables on a device, and the points of the
 * placement model (plm_tune_run, plume/tuning.h).
 *
 * Two kinds of measurement, each on a few workloads per op, timed with events on one
 * stream (device time on cuda, the worker's time on host), every workload run after run
 * in turn, so that a change of the machine's load hits all of them:
 *
 *   a tunable   its candidates take turns at the sizes where the knob matters (entropy,
 *               the fused op and conv2d: frames of 256 x 256, and 1024 x 1024 in a full
 *               run, and 4096 x 4096 for a CUDA launch shape, at windows 9 and 16 or
 *               kernels 5 and 9; lstm_cell and dendritic: a batch of each candidate
 *               threshold, so that every candidate's split between the two paths is
 *               exercised; matmul: n x n products across the TF32 candidates), the op's
 *               other tunables at the values in force (decided earlier in this run, else
 *               forced or the table's, else the defaults: one tunable after the other, so
 *               a later one is timed with an earlier one's winner). Decided per
 *               size class (a workload's class is its cost model's, plm_size_class_of):
 *               each candidate's score is the sum over the class's workloads of its median
 *               time; the best is kept only when it is not the default and its gain over
 *               the default, (default - best) / default, is above twice the larger
 *               coefficient of variation of the two (the noise of one run: a gain below it
 *               is not told apart from the load).
 *   the model   every op with workloads, with the values just decided, at frames from
 *               256 x 256 to 2048 x 2048 (512 x 512 quick), batches 8 to 512, matrices 128
 *               to 1024: one entry per workload (tunable "") holding its median time beside
 *               what the cost model predicts for it on the device's calibration. These are
 *               the points plm_pipeline_predict interpolates a step's time between.
 *
 * The inputs: the dense ops' (matmul, lstm_cell, dendritic) pseudo-random; the image ops'
 * like a sensor's frames and what a pipeline makes of them (support/scene.h's levels and
 * noise, sparse hot blobs, their mask and labels; the parameters of the presets; background
 * continuing a state), because their time depends on the data: local entropy takes up to
 * 3x longer when a window's pixels crowd into few bins (each count change then waits on
 * the last), and label and regions scale with the foreground. A run sets call->tuning: the
 * process's forced values and tables are not touched. The times are the machine's as it
 * is: another job sharing the cores slows every point (up to 2x on a 2-core VM under a
 * build), and the model then predicts that.
 *
 * On the CUDA emulator (plm__profile_emulated: an emulated build's cuda device, emu/), whose
 * GPU threads are fibres of about a microsecond each, the same workloads, candidates and
 * decisions run on inputs sized for it: frames of 1/EMULATED_FRAME_DIVISOR the side (16 x
 * 16 to 256 x 256, all in the small class) and matrices of 1/EMULATED_MATRIX_DIVISOR (16 to
 * 128); batches, each a tunable's candidate or a few rows, stay. Its times are the
 * emulator's on a CPU, no GPU's: a table it writes is the emulated device's own (its name
 * says emulated) and says nothing of a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "ops/op_tuning.h"
#include "plume/event.h"
#include "plume/profile.h"
#include "plume/tuning.h"
#include "profile/profile_internal.h"
#include "streams/error.h"

enum { MAX_SIZES = 8, MAX_WORKLOADS = 16, WARM_UPS = 1, BLOB_PITCH = 64, BLOB_RADIUS = 3 };

/* The emulator's sides: a GPU's frame and matrix sides divided by these (see the top). */
enum { EMULATED_FRAME_DIVISOR = 16, EMULATED_MATRIX_DIVISOR = 8 };

/* What an input holds. The image ops' run time depends on their data (entropy's on how
 * many pixels of a window share a bin, label's on the foreground), so they are measured
 * on content like a sensor's frames and what a pipeline makes of them; the dense ops
 * (matmul, lstm_cell, dendritic) on pseudo-random values. */
typedef enum content {
  RANDOM, /* bytes (f32: in [0, 1)) */
  FRAME,  /* a sensor's frame as support/scene.h draws one: 2800..3600 counts from top to
             bottom, noise of 30 counts rms, hot blobs 1000 above it (u16 or f32) */
  DETAIL, /* f32, a gradient's magnitude of FRAME: about 130 on average, the blobs 900 */
  MASK,   /* u8 0/1: the blobs, under 1% of the pixels */
  LABELS, /* i32: the blobs numbered 1..K */
  COUNT,  /* i32 (1,): K */
  KERNEL, /* f32 (k, k) summing to 1 */
  GAIN,   /* f32 about 1 */
  OFFSET, /* f32 about 0 */
  BAD     /* u8 0/1: about one pixel in 200 */
} content;

/* A workload: the op's inputs and parameters at one size. */
typedef struct workload {
  plm__op_call call;
  plm__op_params params;
  plm_tensor in[PLM__OP_MAX_IN], out[PLM__OP_MAX_OUT], state;
  void *memory[PLM__OP_MAX_IN + PLM__OP_MAX_OUT + 1]; /* the inputs, outputs, state */
  plm_size_class size_class;
  plm_op_cost cost;
} workload;

static bool is_frame_op(const plm__op_desc *op) {
  switch (op->kind) {
    case PLM__OP_conv2d:
    case PLM__OP_sobel:
    case PLM__OP_entropy:
    case PLM__OP_threshold:
    case PLM__OP_label:
    case PLM__OP_regions:
    case PLM__OP_sobel_entropy_threshold:
    case PLM__OP_cfar:
    case PLM__OP_nuc:
    case PLM__OP_badpixel:
    case PLM__OP_background: return true;
    default: return false;
  }
}

/* The sizes op is measured at (n: a frame's side, a batch, a matrix's side). A tunable's
 * run: frames of 256 x 256 (and 1024 x 1024 in a full run); lstm_cell's and dendritic's
 * GEMM threshold a batch of each candidate, so that every candidate's split between the
 * two paths is exercised. The model's run (t->candidate_count 1, model_only): frames
 * from 256 x 256 to 512 x 512 (quick) or 2048 x 2048, the spread of the model's points.
 * emulated: the CUDA emulator's sides (the top). */
static int sizes_of(const plm__op_desc *op, const plm__op_tunable *t, bool quick, bool emulated,
                    int64_t *sizes) {
  const bool model = t->name[0] == '\0';
  if (is_frame_op(op)) { /* a CUDA launch shape also at 4096 x 4096, where entropy's
                            segments are not halved for a launch of too few tasks */
    for (int k = 0; k < 4; k++)
      sizes[k] = ((int64_t)256 << (model ? k : 2 * k)) / (emulated ? EMULATED_FRAME_DIVISOR : 1);
    return model ? (quick ? 2 : 4) : quick ? 1 : t->backend == PLM_BACKEND_CUDA ? 3 : 2;
  }
  switch (op->kind) {
    case PLM__OP_lstm_cell:
    case PLM__OP_dendritic:
      if (model) {
        for (int k = 0; k < 3; k++) sizes[k] = (int64_t)8 << (3 * k);
        return quick ? 2 : 3;
      }
      for (int k = 0; k < t->candidate_count; k++) sizes[k] = t->candidates[k];
      return t->candidate_count;
    case PLM__OP_matmul:
      for (int k = 0; k < 4; k++)
        sizes[k] = ((int64_t)128 << k) / (emulated ? EMULATED_MATRIX_DIVISOR : 1);
      return quick ? 2 : 4;
    default: return 0;
  }
}

/* The variants of op's workloads at each size: entropy's and the fused op's window 9
 * and 16, conv2d's kernel 5 and 9, dendritic's layer (the seeds' 10 x 8 x 16, and 256 x 8
 * x 256 in a full run). */
static int variants_of(const plm__op_desc *op, bool quick) {
  switch (op->kind) {
    case PLM__OP_entropy:
    case PLM__OP_sobel_entropy_threshold:
    case PLM__OP_conv2d: return 2;
    case PLM__OP_dendritic: return quick ? 1 : 2;
    default: return 1;
  }
}

static plm_shape shape2(plm_dtype dtype, int64_t a, int64_t b) {
  return (plm_shape){.dtype = dtype, .ndim = 2, .dims = {a, b}};
}

/* The input shapes, contents and parameters of op at size n, variant v; the parameters
 * those of the presets and bench_pipeline's pipeline (plume/presets.h). */
static int inputs_of(const plm__op_desc *op, int64_t n, int v, plm_shape *in, content *what,
                     plm__op_params *params) {
  plm__op_params_default(op, params);
  for (int k = 0; k < PLM__OP_MAX_IN; k++) what[k] = RANDOM;
  const int window = v ? 16 : 9;
  switch (op->kind) {
    case PLM__OP_conv2d: {
      const int64_t k = v ? 9 : 5;
      params->conv2d.pad_y = params->conv2d.pad_x = (int)(k / 2);
      params->conv2d.border = PLM_BORDER_REPLICATE;
      in[0] = shape2(PLM_DTYPE_U16, n, n);
      in[1] = shape2(PLM_DTYPE_F32, k, k);
      what[0] = FRAME;
      what[1] = KERNEL;
      return 2;
    }
    case PLM__OP_sobel:
      in[0] = shape2(PLM_DTYPE_U16, n, n);
      what[0] = FRAME;
      return 1;
    case PLM__OP_threshold:
      params->threshold.value = 4.25;
      in[0] = shape2(PLM_DTYPE_F32, n, n);
      what[0] = DETAIL;
      return 1;
    case PLM__OP_label:
      params->label.connectivity = 8;
      in[0] = shape2(PLM_DTYPE_U8, n, n);
      what[0] = MASK;
      return 1;
    case PLM__OP_regions:
      /* 1024 rows, or as many regions as the frame can have (the emulator's 16 x 16) */
      params->regions.capacity = 1024 < plm__regions_bound(n, n, 4) ? 1024 : plm__regions_bound(n, n, 4);
      in[0] = shape2(PLM_DTYPE_I32, n, n);
      in[1] = shape2(PLM_DTYPE_U16, n, n);
      in[2] = (plm_shape){.dtype = PLM_DTYPE_I32, .ndim = 1, .dims = {1}};
      what[0] = LABELS;
      what[1] = FRAME;
      what[2] = COUNT;
      return 3;
    case PLM__OP_entropy: /* on a gradient's magnitude, as after sobel or conv2d */
      params->entropy.window = window;
      params->entropy.bins = 64;
      params->entropy.range_auto = false;
      params->entropy.range_lo = 0.0;
      params->entropy.range_hi = 2000.0;
      in[0] = shape2(PLM_DTYPE_F32, n, n);
      what[0] = DETAIL;
      return 1;
    case PLM__OP_sobel_entropy_threshold: {
      plm_sobel_entropy_threshold_params *p = &params->sobel_entropy_threshold;
      p->entropy.window = window;
      p->entropy.bins = 64;
      p->entropy.range_auto = false;
      p->entropy.range_lo = 0.0;
      p->entropy.range_hi = 2000.0;
      p->threshold.value = 4.25;
      in[0] = shape2(PLM_DTYPE_U16, n, n);
      what[0] = FRAME;
      return 1;
    }
    case PLM__OP_background:
      params->background.alpha = 0.02;
      in[0] = shape2(PLM_DTYPE_U16, n, n);
      what[0] = FRAME;
      return 1;
    case PLM__OP_cfar:
      params->cfar.window = 21;
      params->cfar.guard = 7;
      params->cfar.k = 5.0;
      in[0] = shape2(PLM_DTYPE_F32, n, n);
      what[0] = FRAME;
      return 1;
    case PLM__OP_nuc:
      in[0] = shape2(PLM_DTYPE_U16, n, n);
      in[1] = in[2] = shape2(PLM_DTYPE_F32, n, n);
      what[0] = FRAME;
      what[1] = GAIN;
      what[2] = OFFSET;
      return 3;
    case PLM__OP_badpixel:
      in[0] = shape2(PLM_DTYPE_U16, n, n);
      in[1] = shape2(PLM_DTYPE_U8, n, n);
      what[0] = FRAME;
      what[1] = BAD;
      return 2;
    case PLM__OP_lstm_cell: /* the seeds' input 64, hidden 128; no biases */
      in[0] = shape2(PLM_DTYPE_F32, n, 64);
      in[1] = in[2] = shape2(PLM_DTYPE_F32, n, 128);
      in[3] = shape2(PLM_DTYPE_F32, 512, 64);
      in[4] = shape2(PLM_DTYPE_F32, 512, 128);
      return 5;
    case PLM__OP_dendritic: {
      const int64_t neurons = v ? 256 : 10, inputs = v ? 256 : 16;
      in[0] = shape2(PLM_DTYPE_F32, n, inputs);
      in[1] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 3, .dims = {neurons, 8, inputs}};
      return 2;
    }
    case PLM__OP_matmul:
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
  for (int k = 0; k < PLM__OP_MAX_IN + PLM__OP_MAX_OUT + 1; k++)
    if (w->memory[k]) plm_device_free(ctx, w->memory[k]);
  memset(w, 0, sizeof *w);
}

static uint64_t next_random(uint64_t *seed) {
  *seed ^= *seed << 13;
  *seed ^= *seed >> 7;
  *seed ^= *seed << 17;
  return *seed;
}

/* The blob (1..K, in row-major order of a grid BLOB_PITCH apart) of pixel (y, x) of a
 * frame `width` wide, or 0: disks of BLOB_RADIUS about each grid cell's centre. */
static int32_t blob_at(int64_t y, int64_t x, int64_t width) {
  const int64_t cy = y % BLOB_PITCH - BLOB_PITCH / 2, cx = x % BLOB_PITCH - BLOB_PITCH / 2;
  if (cy * cy + cx * cx > BLOB_RADIUS * BLOB_RADIUS) return 0;
  return (int32_t)((y / BLOB_PITCH) * ((width + BLOB_PITCH - 1) / BLOB_PITCH) + x / BLOB_PITCH + 1);
}

/* A Gaussian-like variate of rms `rms`: the sum of four uniform ones (as the scene's). */
static double noise_of(uint64_t *seed, double rms) {
  double sum = 0.0;
  for (int k = 0; k < 4; k++) sum += (double)(next_random(seed) >> 11) * 0x1.0p-53 - 0.5;
  return sum * rms * 1.7320508075688772; /* four U(-1/2, 1/2): rms 1/sqrt(3) */
}

/* Element i of a tensor of shape s holding `what`, as a double (its dtype's value). */
static double content_at(content what, const plm_shape *s, size_t i, uint64_t *seed) {
  const int64_t width = s->ndim >= 2 ? s->dims[s->ndim - 1] : 1;
  const int64_t height = s->ndim >= 2 ? s->dims[s->ndim - 2] : 1;
  const int64_t x = (int64_t)i % width, y = (int64_t)(i / (size_t)width) % height;
  const int32_t blob = blob_at(y, x, width);
  switch (what) {
    case FRAME: /* support/scene.h's counts: sky to earth, 30 counts of noise, hot plumes */
      return 2800.0 + 800.0 * (double)y / (double)height + noise_of(seed, 30.0) +
             (blob ? 1000.0 : 0.0);
    case DETAIL: { /* the Sobel magnitude of that noise: sqrt(12) x 30 per axis */
      const double gx = noise_of(seed, 104.0), gy = noise_of(seed, 104.0);
      return sqrt(gx * gx + gy * gy) + (blob ? 900.0 : 0.0);
    }
    case MASK: return blob != 0;
    case LABELS: return blob;
    case KERNEL: return 1.0 / (double)(width * height);
    case GAIN: return 1.0 + noise_of(seed, 0.01);
    case OFFSET: return noise_of(seed, 10.0);
    case BAD: return next_random(seed) % 200 == 0;
    case COUNT: /* tensor_make's */
    case RANDOM: break;
  }
  return (double)(next_random(seed) >> 56);
}

/* A device tensor of shape s in w's slot k, holding `what` (RANDOM: pseudo-random bytes;
 * f32 in [0, 1); COUNT: the blobs of a frame of side n). */
static plm_status tensor_make(plm_context *ctx, plm_stream *stream, workload *w, int k,
                              const plm_shape *s, content what, int64_t n, plm_tensor *t,
                              uint64_t *seed) {
  const size_t bytes = shape_bytes(s), size = plm_dtype_size(s->dtype);
  const int64_t cells = (n + BLOB_PITCH - 1) / BLOB_PITCH;
  plm_status status = plm_device_alloc(ctx, bytes, &w->memory[k]);
  if (status == PLM_OK) status = plm_tensor_wrap(ctx, w->memory[k], s->dtype, s->ndim, s->dims, t);
  unsigned char *host = status == PLM_OK ? malloc(bytes) : NULL;
  if (status == PLM_OK && !host)
    status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for %zu bytes", bytes);
  if (status != PLM_OK) return status;
  for (size_t i = 0; i < bytes / size; i++) {
    double v = content_at(what, s, i, seed);
    if (what == COUNT) v = (double)(cells * cells);
    if (what == RANDOM && s->dtype == PLM_DTYPE_F32) v /= 256.0;
    switch (s->dtype) { /* clamped to the dtype: a content meant for another stays defined */
      case PLM_DTYPE_U8: host[i] = (unsigned char)fmin(fmax(v, 0.0), 255.0); break;
      case PLM_DTYPE_U16: ((uint16_t *)host)[i] = (uint16_t)fmin(fmax(v, 0.0), 65535.0); break;
      case PLM_DTYPE_I32: ((int32_t *)host)[i] = (int32_t)fmin(fmax(v, -2e9), 2e9); break;
      case PLM_DTYPE_F32: ((float *)host)[i] = (float)v; break;
      default: memset(host + i * size, (int)v, size); break;
    }
  }
  status = plm_stream_memcpy(stream, w->memory[k], host, bytes, PLM_COPY_HOST_TO_DEVICE);
  if (status == PLM_OK) status = plm_stream_synchronize(stream);
  free(host);
  return status;
}

static plm_status workload_make(plm_context *ctx, plm_stream *stream, const plm__op_desc *op,
                                int64_t n, int variant, workload *w) {
  memset(w, 0, sizeof *w);
  plm_shape in[PLM__OP_MAX_IN], out[PLM__OP_MAX_OUT];
  content what[PLM__OP_MAX_IN];
  const int inputs = inputs_of(op, n, variant, in, what, &w->params);
  uint64_t seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
  w->call.params = &w->params;
  plm_status status = PLM_OK;
  for (int k = 0; k < inputs && status == PLM_OK; k++) {
    status = tensor_make(ctx, stream, w, k, &in[k], what[k], n, &w->in[k], &seed);
    w->call.in[k] = &w->in[k];
  }
  if (status == PLM_OK) status = plm__op_shapes(op, &w->call, out, NULL);
  for (int k = 0; k < op->output_count && status == PLM_OK; k++) {
    /* The outputs a pipeline makes: the required ones and the main one (sobel's magnitude). */
    if (op->outputs[k].optional && op->outputs[k].role != PLM__OUT_MAIN) continue;
    status = tensor_make(ctx, stream, w, PLM__OP_MAX_IN + k, &out[k], RANDOM, n, &w->out[k], &seed);
    w->call.out[k] = &w->out[k];
  }
  if (status == PLM_OK && op->state_shape) { /* a stateful op continues a background */
    plm_shape state;
    op->state_shape(&w->call, &state);
    status = tensor_make(ctx, stream, w, PLM__OP_MAX_IN + PLM__OP_MAX_OUT, &state, FRAME, n,
                         &w->state, &seed);
    w->call.state = &w->state;
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

/* One run of w's call with the tunables' values `values` (in the descriptor's order). */
static plm_status time_run(timing *t, const plm__op_desc *op, const plm__op_tuning *values,
                           workload *w, double *ms) {
  w->call.tuning = values;
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

/* The values w's call runs with after this run: each tunable of ctx's backend as decided
 * among entries[0..count) in w's class, else as the process would resolve it (a value
 * forced with plm_tuning_set, the table in use: its entries this run does not measure
 * again stay, apps/tune_commands.c), else its default. */
static void values_decided(plm_context *ctx, const plm__op_desc *op, const workload *w,
                           const plm_tuning_entry *entries, size_t count, plm__op_tuning *values) {
  plm__op_tuning_resolve(ctx, op, &w->call, values);
  for (int k = 0; k < op->tunable_count; k++)
    for (size_t i = 0; i < count && op->tunables[k].backend == ctx->info.backend; i++)
      if (entries[i].size_class == w->size_class && strcmp(entries[i].op, op->name) == 0 &&
          strcmp(entries[i].tunable, op->tunables[k].name) == 0)
        values->values[k] = entries[i].value;
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

/* The model's points: one entry per workload (tunable "", value 0), its median as
 * default_ms beside its model time. */
static void points(const timing *t, const plm__op_desc *op, const workload *w,
                   plm_tuning_entry *entries, size_t *count) {
  for (int k = 0; k < t->workloads; k++) {
    plm_profile_op_stats stats = {0};
    plm_profile_stats_of(time_at(t, k, 0, 0), (size_t)t->runs, &stats);
    plm_tuning_entry *e = &entries[(*count)++];
    *e = (plm_tuning_entry){.size_class = w[k].size_class,
                            .default_ms = stats.p50_ms,
                            .best_ms = stats.p50_ms,
                            .cv = stats.cv,
                            .model_ms = plm__profile_model_ms(&w[k].cost, &t->calibration)};
    snprintf(e->op, sizeof e->op, "%s", op->name);
  }
}

/* The model's measurement: the op as it runs, one "candidate". */
static const plm__op_tunable model_only = {.name = "", .candidate_count = 1};

/* Measure op's tunable `index` on its workloads, its candidates taking turns, and decide
 * an entry per size class; or, index -1, the op with the values decided so far among
 * entries, for the model's points (an entry per workload). Appended to entries. */
static plm_status tune_one(plm_context *ctx, timing *t, const plm__op_desc *op, int index,
                           const plm_tune_options *options, plm_tuning_entry *entries,
                           size_t *count) {
  const plm__op_tunable *tunable = index >= 0 ? &op->tunables[index] : &model_only;
  int64_t sizes[MAX_SIZES];
  const int size_count =
      sizes_of(op, tunable, options->quick, plm__profile_emulated(&ctx->info), sizes);
  const int variants = variants_of(op, options->quick);
  workload *w = calloc(MAX_WORKLOADS, sizeof *w);
  if (!w) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the workloads");
  plm_status status = PLM_OK;
  t->workloads = 0;
  for (int v = 0; v < variants && status == PLM_OK; v++)
    for (int s = 0; s < size_count && status == PLM_OK && t->workloads < MAX_WORKLOADS; s++)
      if ((status = workload_make(ctx, t->stream, op, sizes[s], v, &w[t->workloads])) == PLM_OK)
        t->workloads++;
  t->candidates = tunable->candidate_count;
  t->times = status == PLM_OK
                 ? calloc((size_t)t->workloads * (size_t)t->candidates * (size_t)t->runs + 1,
                          sizeof *t->times)
                 : NULL;
  if (status == PLM_OK && !t->times)
    status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the times");
  /* Warm-ups, then the candidates in turn, run after run. */
  plm__op_tuning in_force[MAX_WORKLOADS]; /* each workload's values but the one timed */
  for (int k = 0; k < t->workloads; k++)
    values_decided(ctx, op, &w[k], entries, *count, &in_force[k]);
  for (int r = -WARM_UPS; r < t->runs && status == PLM_OK; r++)
    for (int k = 0; k < t->workloads && status == PLM_OK; k++)
      for (int v = 0; v < t->candidates && status == PLM_OK; v++) {
        plm__op_tuning values = in_force[k];
        if (index >= 0) values.values[index] = tunable->candidates[v];
        double ms = 0.0;
        status = time_run(t, op, &values, &w[k], &ms);
        if (r >= 0) *time_at(t, k, v, r) = ms;
      }
  if (status == PLM_OK && index >= 0) decide(t, op, tunable, w, entries, count);
  if (status == PLM_OK && index < 0) points(t, op, w, entries, count);
  for (int k = 0; k < t->workloads; k++) workload_free(ctx, &w[k]);
  free(w);
  free(t->times);
  t->times = NULL;
  if (status == PLM_OK) return PLM_OK;
  char message[1024];
  snprintf(message, sizeof message, "%s", plm_last_error());
  return plm__fail_raw(status, "%s's %s: %s", op->name, index >= 0 ? tunable->name : "model",
                       message);
}

plm_tune_options plm_tune_options_default(void) {
  return (plm_tune_options){.quick = false, .op = NULL, .runs = 0, .progress = NULL};
}

/* One step of a tuning run: op's tunable (its index), or its points of the model (-1). */
typedef struct tune_step {
  const plm__op_desc *op;
  int tunable;
} tune_step;

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
    most +=
        (size_t)plm__op_get((plm__op_kind)k)->tunable_count * PLM_SIZE_CLASS_COUNT + MAX_WORKLOADS;
  plm_tuning_entry *out = calloc(most + 1, sizeof *out);
  timing t = {.runs = options->runs ? options->runs : options->quick ? 5 : 15};
  plm_status status = out ? PLM_OK : plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory");
  if (status == PLM_OK) status = plm__profile_calibrate(ctx, &t.calibration);
  if (status == PLM_OK) status = plm_stream_create(ctx, 0, &t.stream);
  if (status == PLM_OK) status = plm_event_create(ctx, 0, &t.start);
  if (status == PLM_OK) status = plm_event_create(ctx, 0, &t.end);
  /* The steps, in order: each op's tunables of this backend, then its points of the model. */
  tune_step steps[PLM__OP_COUNT * (PLM__OP_MAX_TUNABLES + 1)];
  int total = 0;
  for (int k = 0; k < PLM__OP_COUNT; k++) {
    const plm__op_desc *op = plm__op_get((plm__op_kind)k);
    if (options->op && strcmp(options->op, op->name) != 0) continue;
    for (int i = 0; i < op->tunable_count; i++)
      if (op->tunables[i].backend == backend) steps[total++] = (tune_step){op, i};
    int64_t sizes[MAX_SIZES];
    if (sizes_of(op, &model_only, true, false, sizes) > 0) steps[total++] = (tune_step){op, -1};
  }
  for (int done = 0; done <= total && status == PLM_OK; done++) {
    if (options->progress)
      options->progress(options->progress_user, done, total,
                        done < total ? steps[done].op->name : NULL);
    if (done < total)
      status = tune_one(ctx, &t, steps[done].op, steps[done].tunable, options, out, count);
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

/* benchmarks/pipeline_bench.c: the pipeline comparison (benchmarks/pipeline_bench.h). */
#define _POSIX_C_SOURCE 200809L

#include "benchmarks/pipeline_bench.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile/stats.h"
#include "streams/clock.h"
#include "streams/file.h"
#include "support/cpu_share.h"
#include "support/progress.h"
#include "support/quote.h"
#include "support/result_check.h"
#include "support/scene.h"

enum { EXIT_RUNTIME_FAILURE = 1, EXIT_USAGE = 2 };

enum {
  MAX_REPEATS = 25,
  MAX_CASES = 4,
  MAX_CONFIGS = 7, /* naive, pooled, streams x3, graph, fused */
  MAX_OUTPUTS = 8,
  MAX_CHECKED = 16, /* distinct frames whose results are compared */
  SCENE_SEED = 1,
  BUSY_SHARE_PERCENT = 10 /* above it, a config's figures carry other processes' load */
};

/* The bandwidth measurements: bytes per copy (read once, written once). */
static const size_t BANDWIDTH_BYTES = (size_t)64 << 20;
enum { BANDWIDTH_RUNS = 5 };

/* ---- the configs -------------------------------------------------------------------------- */

typedef enum config_kind { NAIVE, POOLED, STREAMS, GRAPH, FUSED } config_kind;

static const char *const KIND_NAMES[] = {"naive", "pooled", "streams", "graph", "fused"};

typedef struct config {
  config_kind kind;
  int k;          /* frames in flight (streams) */
  unsigned flags; /* plan flags */
  bool graphs;    /* use_graphs */
  plm_pool *pool; /* its own */
  plm_pipeline *pl;
  bool skipped;
  char note[200]; /* why skipped, or why graphs were not used */
  /* Per timed run. */
  int runs;
  double fps[MAX_REPEATS], p50[MAX_REPEATS], p99[MAX_REPEATS], overlap[MAX_REPEATS];
  double device_ms[MAX_REPEATS], copy_ms[MAX_REPEATS], submit_us[MAX_REPEATS];
  double source_us[MAX_REPEATS];
  uint64_t requests, hits, upstream_allocs; /* over the timed runs */
  int64_t graph_replays;
  /* Medians over the runs (NaN when not measured). */
  double m_fps, m_p50, m_p99, m_overlap, m_device_ms, m_copy_ms, m_submit_us, m_source_us;
  double speedup;
  double predicted_ms; /* the cost model's time per frame on the backend (plm_pipeline_predict) */
  int corrected_steps; /* of its steps, those a tuning table's points corrected */
  int step_count;      /* the plan's steps */
  /* Over its timed runs (support/cpu_share.h): the CPUs' ticks, all and other processes'
   * (busy but not this process's, summed signed: each reading is good to a tick or two),
   * and the wall time they span; all 0 where /proc could not be read. */
  double cpu_total_ticks, cpu_others_ticks, cpu_wall_s;
} config;

typedef struct bench_case {
  int64_t height, width;
  plm_dtype dtype;
  const unsigned char *frames; /* frame_count frames of frame_bytes */
  unsigned char *owned;        /* frames, when made here */
  int64_t frame_count;
  size_t frame_bytes;
  int64_t timed_frames; /* per timed run */
  config configs[MAX_CONFIGS];
  int config_count;
  int best_streams;                        /* index of the fastest streams config */
  double device_bytes, device_bytes_fused; /* per frame, from the plans (0: none) */
  double d2h_bytes;                        /* the outputs' bytes per frame */
  double frame_h2d_ms;   /* one frame's input copied host -> device (event-timed median) */
  double copy_bound_fps; /* 1e3 / frame_h2d_ms: what the uploads alone would allow */
  /* Results check: naive's digests of frames 0..checked-1 (the first distinct frames, at
   * most MAX_CHECKED). */
  int64_t checked;
  uint64_t *reference;
} bench_case;

typedef struct bench {
  pipeline_bench_options opt;
  const char *prog, *text;
  FILE *out;
  plm_context *ctx;
  plm_backend backend;
  plm_device_info info;
  plm_profile_calibration calibration; /* the device's peaks and floors, for the model */
  double h2d_gbps, d2d_gbps;
  int repeats;
  progress_bar bar; /* config runs: warm-ups and timed runs */
  int64_t runs_done;
  bench_case cases[MAX_CASES];
  int case_count;
  char error[2048];
  int error_code;
} bench;

/* Record why the run stops; returns false so callers can `return fail(...)`. */
#if defined(__GNUC__)
static bool fail(bench *b, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif

static bool fail(bench *b, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b->error, sizeof b->error, fmt, ap);
  va_end(ap);
  b->error_code = code;
  return false;
}

#define CALL(b, where, expr)                                                     \
  do {                                                                           \
    plm_status call_status_ = (expr);                                            \
    if (call_status_ != PLM_OK)                                                  \
      return fail((b), EXIT_RUNTIME_FAILURE, "%s: %s -> %s: %s", (where), #expr, \
                  plm_status_str(call_status_), plm_last_error());               \
  } while (0)

/* The median of the finite values among n (NaN when there are none; profile/stats.h). */
static double median(const double *values, int n) {
  double sorted[MAX_REPEATS];
  size_t m = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(values[i])) sorted[m++] = values[i];
  if (m == 0) return NAN;
  plm__sort_doubles(sorted, m);
  return plm__median_sorted(sorted, m);
}

static void frame_name(const bench_case *c, char *out, size_t size) {
  snprintf(out, size, "%lldx%lld", (long long)c->height, (long long)c->width);
}

/* ---- frames ------------------------------------------------------------------------------- */

/* M frames of the synthetic scene at height x width, as u16 or (the same values) f32. */
static bool synthetic_frames(bench *b, bench_case *c, int64_t count) {
  scene_config sc = {.frames = count, .height = c->height, .width = c->width, .seed = SCENE_SEED};
  char err[SCENE_ERROR_SIZE];
  scene *s = NULL;
  plm_status status = scene_create(&sc, &s, err, sizeof err);
  if (status != PLM_OK) return fail(b, EXIT_RUNTIME_FAILURE, "scene: %s", err);
  const size_t pixels = (size_t)(c->height * c->width);
  c->frame_count = count;
  c->frame_bytes = pixels * plm_dtype_size(c->dtype);
  c->owned = malloc(c->frame_bytes * (size_t)count);
  uint16_t *u16 = malloc(pixels * sizeof *u16);
  scene_truth *truth = calloc((size_t)scene_max_plumes(s) + 1, sizeof *truth);
  bool ok = c->owned && u16 && truth;
  if (!ok) fail(b, EXIT_RUNTIME_FAILURE, "no host memory for %lld frames", (long long)count);
  for (int64_t t = 0; ok && t < count; t++) {
    int rows = 0;
    status = scene_render(s, t, u16, truth, &rows, err, sizeof err);
    if (status != PLM_OK) {
      ok = fail(b, EXIT_RUNTIME_FAILURE, "scene: %s", err);
      break;
    }
    unsigned char *frame = c->owned + (size_t)t * c->frame_bytes;
    if (c->dtype == PLM_DTYPE_U16) {
      memcpy(frame, u16, c->frame_bytes);
    } else {
      float *f32 = (float *)(void *)frame;
      for (size_t i = 0; i < pixels; i++) f32[i] = (float)u16[i];
    }
  }
  free(u16);
  free(truth);
  scene_destroy(s);
  c->frames = c->owned;
  return ok;
}

/* ---- results check ------------------------------------------------------------------------ */

/* What a run's source and sink share. */
typedef struct feed {
  const bench_case *c;
  int outputs;
  plm_shape shapes[MAX_OUTPUTS];
  int count_output; /* the i32 (1,) output, or -1 */
  uint64_t *reference;
  bool record;            /* write the reference (naive) instead of comparing */
  int64_t checked;        /* frames compared or recorded */
  int64_t first_mismatch; /* -1: none */
} feed;

static plm_status feed_source(void *user, int64_t frame, void *const *inputs, bool *end) {
  const feed *f = user;
  (void)end;
  const int64_t k = frame % f->c->frame_count;
  memcpy(inputs[0], f->c->frames + (size_t)k * f->c->frame_bytes, f->c->frame_bytes);
  return PLM_OK;
}

static uint64_t fnv1a(uint64_t hash, const void *data, size_t bytes) {
  const unsigned char *p = data;
  for (size_t i = 0; i < bytes; i++) hash = (hash ^ p[i]) * 0x100000001b3u;
  return hash;
}

/* The digest of the outputs' exact parts (see the header). */
static uint64_t digest(const feed *f, const void *const *outputs) {
  uint64_t hash = 0xcbf29ce484222325u;
  int32_t count = 0;
  if (f->count_output >= 0) memcpy(&count, outputs[f->count_output], sizeof count);
  for (int o = 0; o < f->outputs; o++) {
    const plm_shape *s = &f->shapes[o];
    size_t elements = 1;
    for (int d = 0; d < s->ndim; d++) elements *= (size_t)s->dims[d];
    if (s->dtype == PLM_DTYPE_F64 && s->ndim == 2 && s->dims[1] == PLM_REGION_COLUMNS &&
        f->count_output >= 0) {
      const int64_t rows = count < s->dims[0] ? count : s->dims[0];
      const double *table = outputs[o];
      for (int64_t r = 0; r < rows; r++)
        hash = fnv1a(hash, table + r * PLM_REGION_COLUMNS,
                     (PLM_REGION_CENTROID_COL + 1) * sizeof(double));
    } else if (s->dtype == PLM_DTYPE_U8 || s->dtype == PLM_DTYPE_U16 || s->dtype == PLM_DTYPE_I32) {
      hash = fnv1a(hash, outputs[o], elements * plm_dtype_size(s->dtype));
    }
  }
  return hash;
}

static plm_status feed_check(void *user, int64_t frame, const void *const *outputs) {
  feed *f = user;
  if (frame >= f->c->checked) return PLM_OK;
  const uint64_t hash = digest(f, outputs);
  if (f->record)
    f->reference[frame] = hash;
  else if (f->reference[frame] != hash && f->first_mismatch < 0)
    f->first_mismatch = frame;
  f->checked++;
  return PLM_OK;
}

static bool feed_open(bench *b, const config *cfg, bench_case *c, feed *f) {
  *f = (feed){.c = c, .count_output = -1, .reference = c->reference, .first_mismatch = -1};
  CALL(b, "outputs", plm_pipeline_io_count(cfg->pl, NULL, &f->outputs));
  if (f->outputs > MAX_OUTPUTS)
    return fail(b, EXIT_USAGE, "the pipeline has %d outputs (at most %d)", f->outputs, MAX_OUTPUTS);
  for (int o = 0; o < f->outputs; o++) {
    CALL(b, "outputs", plm_pipeline_output_shape(cfg->pl, o, &f->shapes[o]));
    const plm_shape *s = &f->shapes[o];
    if (s->dtype == PLM_DTYPE_I32 && s->ndim == 1 && s->dims[0] == 1 && f->count_output < 0)
      f->count_output = o;
  }
  return true;
}

/* ---- one config --------------------------------------------------------------------------- */

static const char *config_label(const config *cfg, char *buf, size_t size) {
  if (cfg->kind == STREAMS || cfg->kind == GRAPH || cfg->kind == FUSED)
    snprintf(buf, size, "%s (K=%d)", KIND_NAMES[cfg->kind], cfg->k);
  else
    snprintf(buf, size, "%s", KIND_NAMES[cfg->kind]);
  return buf;
}

static bool config_compile(bench *b, bench_case *c, config *cfg) {
  plm_pool_config pool_cfg = plm_pool_config_default();
  if (cfg->kind == NAIVE) pool_cfg.mode = PLM_POOL_PASSTHROUGH;
  CALL(b, "pool", plm_pool_create(b->ctx, &pool_cfg, &cfg->pool));
  const int64_t dims[2] = {c->height, c->width};
  plm_status status = plm_pipeline_parse(b->ctx, b->text, c->dtype, 2, dims, &cfg->pl);
  if (status != PLM_OK) return fail(b, EXIT_USAGE, "--pipeline: %s", plm_last_error());
  plm_plan_config plan = {.frames_in_flight = cfg->k, .flags = cfg->flags, .pool = cfg->pool};
  CALL(b, "compile", plm_pipeline_compile(cfg->pl, &plan));
  plm_plan_info info;
  CALL(b, "compile", plm_pipeline_plan_info(cfg->pl, &info));
  if (cfg->kind == FUSED && info.fused_steps == 0) {
    cfg->skipped = true;
    snprintf(cfg->note, sizeof cfg->note,
             "the pipeline has no fusable chain (sobel ! entropy with a fixed range ! threshold)");
    return true;
  }
  if (cfg->kind == NAIVE) {
    int outputs = 0;
    CALL(b, "outputs", plm_pipeline_io_count(cfg->pl, NULL, &outputs));
    for (int o = 0; o < outputs; o++) {
      plm_shape shape;
      CALL(b, "outputs", plm_pipeline_output_shape(cfg->pl, o, &shape));
      double bytes = (double)plm_dtype_size(shape.dtype);
      for (int d = 0; d < shape.ndim; d++) bytes *= (double)shape.dims[d];
      c->d2h_bytes += bytes;
    }
  }
  if (cfg->kind == FUSED) c->device_bytes_fused = info.device_bytes;
  if (cfg->kind == STREAMS) c->device_bytes = info.device_bytes;
  const bool cuda = b->backend == PLM_BACKEND_CUDA;
  plm_placement placement;
  CALL(b, "predict",
       plm_pipeline_predict(cfg->pl, cuda ? NULL : &b->calibration, cuda ? &b->calibration : NULL,
                            &placement));
  cfg->predicted_ms = cuda ? placement.cuda_ms : placement.host_ms;
  cfg->corrected_steps = placement.corrected_steps;
  cfg->step_count = info.steps;
  return true;
}

static void config_release(config *cfg) {
  if (cfg->pl) plm_pipeline_destroy(cfg->pl);
  if (cfg->pool) plm_pool_destroy(cfg->pool);
  cfg->pl = NULL;
  cfg->pool = NULL;
}

/* The options every run shares: where the source runs. */
static plm_run_stream_options run_options(const bench *b) {
  plm_run_stream_options options = plm_run_stream_options_default();
  options.source_ahead = b->opt.source_ahead;
  return options;
}

/* The warm-up: the first frames, each slot's first use (and, with graphs, its capture),
 * with the results recorded (naive) or compared with naive's. */
static bool config_warm_up(bench *b, bench_case *c, config *cfg) {
  feed f;
  if (!feed_open(b, cfg, c, &f)) return false;
  f.record = cfg->kind == NAIVE;
  plm_run_stream_options options = run_options(b);
  options.use_graphs = cfg->graphs;
  options.max_frames = c->checked > 2 * cfg->k ? c->checked : 2 * cfg->k;
  plm_run_stream_report report;
  char label[64];
  config_label(cfg, label, sizeof label);
  plm_status status =
      plm_pipeline_run_stream(cfg->pl, feed_source, feed_check, &f, &options, &report);
  if (status != PLM_OK)
    return fail(b, EXIT_RUNTIME_FAILURE, "%s warm-up: %s", label, plm_last_error());
  if (f.checked != c->checked)
    return fail(b, EXIT_RUNTIME_FAILURE, "%s warm-up: %lld of %lld frames checked", label,
                (long long)f.checked, (long long)c->checked);
  if (f.first_mismatch >= 0) {
    char frame[32];
    frame_name(c, frame, sizeof frame);
    return fail(b, EXIT_RUNTIME_FAILURE, "%s, %s %s: the results of frame %lld differ from naive's",
                label, frame, plm_dtype_name(c->dtype), (long long)f.first_mismatch);
  }
  return true;
}

static bool config_timed_run(bench *b, bench_case *c, config *cfg) {
  plm_run_stream_options options = run_options(b);
  options.use_graphs = cfg->graphs;
  options.record_timing = true;
  options.max_frames = c->timed_frames;
  feed f = {.c = c};
  plm_pool_stats before, after;
  CALL(b, "pool statistics", plm_pool_stats_get(cfg->pool, &before));
  plm_run_stream_report report;
  char label[64];
  config_label(cfg, label, sizeof label);
  cpu_times cpu_before, cpu_after;
  const bool cpu_known = cpu_times_now(&cpu_before);
  const double started_s = plm__monotonic_seconds();
  plm_status status = plm_pipeline_run_stream(cfg->pl, feed_source, NULL, &f, &options, &report);
  if (status != PLM_OK) return fail(b, EXIT_RUNTIME_FAILURE, "%s: %s", label, plm_last_error());
  /* Counted only while the CPUs counted stay the same (their ticks only grow). */
  if (cpu_known && cpu_times_now(&cpu_after) && cpu_after.total > cpu_before.total) {
    cfg->cpu_total_ticks += (double)(cpu_after.total - cpu_before.total);
    cfg->cpu_others_ticks += ((double)cpu_after.busy - (double)cpu_before.busy) -
                             ((double)cpu_after.own - (double)cpu_before.own);
    cfg->cpu_wall_s += plm__monotonic_seconds() - started_s;
  }
  CALL(b, "pool statistics", plm_pool_stats_get(cfg->pool, &after));
  if (report.frames_delivered != c->timed_frames)
    return fail(b, EXIT_RUNTIME_FAILURE, "%s: %lld of %lld frames delivered", label,
                (long long)report.frames_delivered, (long long)c->timed_frames);
  cfg->requests += after.requests - before.requests;
  cfg->hits += after.hits - before.hits;
  cfg->upstream_allocs += after.upstream_allocs - before.upstream_allocs;
  cfg->graph_replays += report.graph_replays;
  if (cfg->graphs && !report.graphs_used && report.graphs_note[0])
    snprintf(cfg->note, sizeof cfg->note, "graphs not used: %s", report.graphs_note);
  const int r = cfg->runs++;
  const double frames = (double)report.frames_delivered;
  cfg->fps[r] = report.frames_per_s;
  cfg->p50[r] = report.latency_p50_ms;
  cfg->p99[r] = report.latency_p99_ms;
  cfg->submit_us[r] = report.submit_p50_us;
  cfg->source_us[r] = report.source_p50_us;
  /* Without device timing (a backend that has none) the sums stay 0. */
  const bool timed = report.copy_ms > 0.0;
  cfg->overlap[r] = timed ? report.overlap_ms / report.copy_ms : NAN;
  cfg->device_ms[r] = timed ? report.compute_ms / frames : NAN;
  cfg->copy_ms[r] = timed ? report.copy_ms / frames : NAN;
  return true;
}

static void config_summarise(config *cfg, double naive_fps) {
  cfg->m_fps = median(cfg->fps, cfg->runs);
  cfg->m_p50 = median(cfg->p50, cfg->runs);
  cfg->m_p99 = median(cfg->p99, cfg->runs);
  cfg->m_overlap = median(cfg->overlap, cfg->runs);
  cfg->m_device_ms = median(cfg->device_ms, cfg->runs);
  cfg->m_copy_ms = median(cfg->copy_ms, cfg->runs);
  cfg->m_submit_us = median(cfg->submit_us, cfg->runs);
  cfg->m_source_us = median(cfg->source_us, cfg->runs);
  cfg->speedup = naive_fps > 0 ? cfg->m_fps / naive_fps : NAN;
}

/* ---- one case: a frame size and dtype ----------------------------------------------------- */

static config *add_config(bench_case *c, config_kind kind, int k, unsigned flags, bool graphs) {
  config *cfg = &c->configs[c->config_count++];
  *cfg = (config){.kind = kind, .k = k, .flags = flags, .graphs = graphs};
  return cfg;
}

static void count_run(bench *b) {
  progress_update(&b->bar, ++b->runs_done);
}

/* Warm up, then `repeats` rounds of one timed run per config in [first, last). */
static bool run_rounds(bench *b, bench_case *c, int first, int last) {
  for (int i = first; i < last; i++) {
    if (!c->configs[i].skipped && !config_warm_up(b, c, &c->configs[i])) return false;
    count_run(b);
  }
  for (int r = 0; r < b->repeats; r++)
    for (int i = first; i < last; i++) {
      if (!c->configs[i].skipped && !config_timed_run(b, c, &c->configs[i])) return false;
      count_run(b);
    }
  return true;
}

static bool run_case(bench *b, bench_case *c) {
  const unsigned eager = PLM_PLAN_ALLOCATE_PER_RUN | PLM_PLAN_NO_FUSION;
  const bool cuda = b->backend == PLM_BACKEND_CUDA;
  c->checked = c->frame_count < MAX_CHECKED ? c->frame_count : MAX_CHECKED;
  c->reference = calloc((size_t)c->checked, sizeof *c->reference);
  if (!c->reference) return fail(b, EXIT_RUNTIME_FAILURE, "no host memory");

  /* Phase 1: naive, pooled, streams K = 2, 3, 4. */
  add_config(c, NAIVE, 1, eager | PLM_PLAN_SYNCHRONOUS_STEPS, false);
  add_config(c, POOLED, 1, eager, false);
  for (int k = 2; k <= 4; k++) add_config(c, STREAMS, k, PLM_PLAN_NO_FUSION, false);
  const int phase1 = c->config_count;
  for (int i = 0; i < phase1; i++)
    if (!config_compile(b, c, &c->configs[i])) return false;
  if (!run_rounds(b, c, 0, phase1)) return false;
  const double naive_fps = median(c->configs[0].fps, c->configs[0].runs);
  c->best_streams = 2;
  for (int i = 0; i < phase1; i++) {
    config_summarise(&c->configs[i], naive_fps);
    if (c->configs[i].kind == STREAMS && c->configs[i].m_fps > c->configs[c->best_streams].m_fps)
      c->best_streams = i;
  }

  /* Phase 2: graph and fused at the best K. */
  const int k = c->configs[c->best_streams].k;
  config *graph = add_config(c, GRAPH, k, PLM_PLAN_NO_FUSION, true);
  if (!cuda) {
    graph->skipped = true;
    snprintf(graph->note, sizeof graph->note, "the %s backend has no CUDA graphs",
             plm_backend_name(b->backend));
  } else if (!config_compile(b, c, graph)) {
    return false;
  }
  config *fused = add_config(c, FUSED, k, PLM_PLAN_FUSE, cuda);
  if (!config_compile(b, c, fused)) return false;
  if (!run_rounds(b, c, phase1, c->config_count)) return false;
  for (int i = phase1; i < c->config_count; i++) config_summarise(&c->configs[i], naive_fps);
  return true;
}

/* ---- floors ------------------------------------------------------------------------------- */

/* The median bandwidth of BANDWIDTH_RUNS copies of `bytes` (after one warm-up), in GB/s,
 * counting `moved` bytes per copy. */
static bool time_copies(bench *b, plm_stream *stream, void *dst, const void *src, size_t bytes,
                        plm_copy_kind kind, double moved, double *gbps) {
  plm_event *start = NULL, *end = NULL;
  CALL(b, "bandwidth", plm_event_create(b->ctx, PLM_EVENT_DEFAULT, &start));
  plm_status status = plm_event_create(b->ctx, PLM_EVENT_DEFAULT, &end);
  double ms[BANDWIDTH_RUNS + 1];
  for (int i = 0; status == PLM_OK && i <= BANDWIDTH_RUNS; i++) {
    float elapsed = 0;
    status = plm_event_record(start, stream);
    if (status == PLM_OK) status = plm_stream_memcpy(stream, dst, src, bytes, kind);
    if (status == PLM_OK) status = plm_event_record(end, stream);
    if (status == PLM_OK) status = plm_event_synchronize(end);
    if (status == PLM_OK) status = plm_event_elapsed_ms(start, end, &elapsed);
    ms[i] = elapsed;
  }
  char message[512];
  snprintf(message, sizeof message, "%s", plm_last_error());
  if (start) plm_event_destroy(start);
  if (end) plm_event_destroy(end);
  if (status != PLM_OK)
    return fail(b, EXIT_RUNTIME_FAILURE, "bandwidth: %s: %s", plm_status_str(status), message);
  const double median_ms = median(ms + 1, BANDWIDTH_RUNS);
  *gbps = median_ms > 0 ? moved / (median_ms * 1e6) : NAN;
  return true;
}

/* Case c's copy bound: one frame's input bytes copied host -> device as the bandwidths
 * are (NaN for a frame larger than their buffers). */
static bool measure_copy_bound(bench *b, plm_stream *stream, void *dev, const void *host,
                               bench_case *c) {
  c->frame_h2d_ms = c->copy_bound_fps = NAN;
  if (c->frame_bytes > BANDWIDTH_BYTES) return true;
  double gbps = NAN;
  if (!time_copies(b, stream, dev, host, c->frame_bytes, PLM_COPY_HOST_TO_DEVICE,
                   (double)c->frame_bytes, &gbps))
    return false;
  if (gbps > 0) c->frame_h2d_ms = (double)c->frame_bytes / (gbps * 1e6);
  if (c->frame_h2d_ms > 0) c->copy_bound_fps = 1e3 / c->frame_h2d_ms;
  return true;
}

/* The bandwidths, then each case's copy bound. */
static bool measure_bandwidths(bench *b) {
  plm_pool *pool = NULL;
  plm_stream *stream = NULL;
  void *host = NULL, *dev_a = NULL, *dev_b = NULL;
  CALL(b, "bandwidth", plm_context_default_pool(b->ctx, &pool));
  CALL(b, "bandwidth", plm_stream_create(b->ctx, PLM_STREAM_DEFAULT, &stream));
  plm_status status = plm_host_alloc(b->ctx, BANDWIDTH_BYTES, &host);
  if (status == PLM_OK) status = plm_pool_alloc(pool, BANDWIDTH_BYTES, stream, &dev_a);
  if (status == PLM_OK) status = plm_pool_alloc(pool, BANDWIDTH_BYTES, stream, &dev_b);
  if (status == PLM_OK) memset(host, 1, BANDWIDTH_BYTES);
  if (status == PLM_OK) status = plm_stream_memset(stream, dev_a, 2, BANDWIDTH_BYTES);
  bool ok = status == PLM_OK || fail(b, EXIT_RUNTIME_FAILURE, "bandwidth: %s", plm_last_error());
  ok = ok && time_copies(b, stream, dev_b, host, BANDWIDTH_BYTES, PLM_COPY_HOST_TO_DEVICE,
                         (double)BANDWIDTH_BYTES, &b->h2d_gbps);
  ok = ok && time_copies(b, stream, dev_b, dev_a, BANDWIDTH_BYTES, PLM_COPY_DEVICE_TO_DEVICE,
                         2.0 * (double)BANDWIDTH_BYTES, &b->d2d_gbps);
  for (int i = 0; ok && i < b->case_count; i++)
    ok = measure_copy_bound(b, stream, dev_b, host, &b->cases[i]);
  if (dev_a) plm_pool_free(pool, dev_a, stream);
  if (dev_b) plm_pool_free(pool, dev_b, stream);
  plm_stream_synchronize(stream);
  if (host) plm_host_free(b->ctx, host);
  plm_stream_destroy(stream);
  return ok;
}

typedef struct floors {
  double h2d_bytes, h2d_ms, h2d_fps;
  double device_bytes, device_ms, device_fps;
  const config *best;
  double of_h2d, of_device;
} floors;

static floors case_floors(const bench *b, const bench_case *c) {
  floors f = {.h2d_bytes = (double)c->frame_bytes};
  f.device_bytes = c->device_bytes_fused > 0 ? c->device_bytes_fused : c->device_bytes;
  f.h2d_ms = b->h2d_gbps > 0 ? f.h2d_bytes / (b->h2d_gbps * 1e6) : NAN;
  f.device_ms = b->d2d_gbps > 0 ? f.device_bytes / (b->d2d_gbps * 1e6) : NAN;
  f.h2d_fps = f.h2d_ms > 0 ? 1e3 / f.h2d_ms : NAN;
  f.device_fps = f.device_ms > 0 ? 1e3 / f.device_ms : NAN;
  for (int i = 0; i < c->config_count; i++) {
    const config *cfg = &c->configs[i];
    if (!cfg->skipped && (!f.best || cfg->m_fps > f.best->m_fps)) f.best = cfg;
  }
  f.of_h2d = f.best ? f.best->m_fps / f.h2d_fps : NAN;
  f.of_device = f.best ? f.best->m_fps / f.device_fps : NAN;
  return f;
}

/* ---- the table ---------------------------------------------------------------------------- */

static void print_header(bench *b) {
  const plm_build_info *build = plm_build_info_get();
  fprintf(b->out, "%s: %s backend, %s; plume %s (commit %s, %s)\n", b->prog,
          plm_backend_name(b->backend), b->info.name, build->version, build->git_commit,
          build->build_type);
  if (b->backend == PLM_BACKEND_CUDA && build->cuda_emulated)
    fprintf(b->out, "NOTE: the cuda device is the CUDA emulator (emu/): it proves correctness; "
                    "its times are not a GPU's and mean nothing\n");
  fprintf(b->out, "pipeline: %s\n", b->text);
  if (b->opt.frames_from)
    fprintf(b->out, "frames: %s, %lld distinct, repeated\n",
            b->opt.frames_from->name ? b->opt.frames_from->name : "the caller's",
            (long long)b->opt.frames_from->count);
  else
    fprintf(b->out, "frames: the synthetic scene (support/scene.h, seed %d), u16 and as f32\n",
            SCENE_SEED);
  if (b->opt.source_ahead > 0)
    fprintf(b->out,
            "each frame: copied from host memory into a pinned input by the source (host "
            "memcpy) on a thread of its own, up to %d frames ahead, then",
            b->opt.source_ahead);
  else
    fprintf(b->out,
            "each frame: copied from host memory into the pinned input by the source (host "
            "memcpy) on the enqueueing thread, then");
  fprintf(b->out, " uploaded, run, its outputs downloaded; %d timed runs per config (medians)\n",
          b->repeats);
  fprintf(b->out, "bandwidth (%s): pinned host->device %.2f GB/s, device copy %.2f GB/s\n",
          b->backend == PLM_BACKEND_HOST ? "host backend: memcpy by a stream's worker thread"
                                         : "64 MiB copies, event-timed",
          b->h2d_gbps, b->d2d_gbps);
  const plm_profile_calibration *cal = &b->calibration;
  fprintf(b->out,
          "model (plm_pipeline_predict, calibration%s): copy %.2f GB/s, FMA %.1f GFLOP/s, launch "
          "%.1f us%s; pred_ms/f is its time per frame, meas_ms/f = 1000 / frames/s\n",
          cal->from_cache ? " cached" : "", cal->device_copy_gbps, cal->fma_gflops, cal->launch_us,
          b->backend == PLM_BACKEND_CUDA ? ", the frame's copies included" : "");
}

/* A config's measured time per frame, 1000 / its frames/s (NaN when it ran none), beside
 * the model's predicted_ms. */
static double measured_ms_of(const config *cfg) {
  return !cfg->skipped && cfg->m_fps > 0 ? 1e3 / cfg->m_fps : NAN;
}

/* The share of the CPUs other processes took over a config's timed runs, 0..1; NaN:
 * unknown, or timed runs under a quarter second in all (25 ticks of each CPU: each
 * reading is good to a tick or two, so a shorter span says little). */
static double others_share_of(const config *cfg) {
  if (cfg->cpu_wall_s < 0.25 || !(cfg->cpu_total_ticks > 0)) return NAN;
  const double share = cfg->cpu_others_ticks / cfg->cpu_total_ticks;
  return share < 0.0 ? 0.0 : share > 1.0 ? 1.0 : share;
}

static void print_value(FILE *out, const char *format, int width, double value) {
  if (isfinite(value))
    fprintf(out, format, width, value);
  else
    fprintf(out, "%*s", width, "-");
}

/* How busy the machine was during the case's timed runs: the most any config saw, on the
 * table; and a warning on stderr above BUSY_SHARE_PERCENT (the figures are kept). */
static void print_load(bench *b, const bench_case *c, const char *frame) {
  const config *busiest = NULL;
  for (int i = 0; i < c->config_count; i++) {
    const config *cfg = &c->configs[i];
    if (!cfg->skipped && !isnan(others_share_of(cfg)) &&
        (!busiest || others_share_of(cfg) > others_share_of(busiest)))
      busiest = cfg;
  }
  if (!busiest) {
    fprintf(b->out, "load %s %s: not known (no /proc, or timed runs too short to tell)\n", frame,
            plm_dtype_name(c->dtype));
    return;
  }
  const double percent = round(100.0 * others_share_of(busiest));
  fprintf(b->out,
          "load %s %s: other processes used at most %.0f%% of the CPUs during a config's timed "
          "runs (%s K=%d)\n",
          frame, plm_dtype_name(c->dtype), percent, KIND_NAMES[busiest->kind], busiest->k);
  if (percent > BUSY_SHARE_PERCENT)
    fprintf(stderr,
            "%s: warning: other processes used %.0f%% of the CPUs (more than %d%%) during the "
            "timed runs of %s %s %s K=%d: its figures carry that load; measure on an idle "
            "machine\n",
            b->prog, percent, BUSY_SHARE_PERCENT, frame, plm_dtype_name(c->dtype),
            KIND_NAMES[busiest->kind], busiest->k);
}

static void print_case(bench *b, const bench_case *c) {
  char frame[32];
  frame_name(c, frame, sizeof frame);
  fprintf(b->out,
          "\n%-8s %2s %-9s %-5s %10s %8s %8s %7s %7s %8s %7s %9s %9s %8s %8s %9s %9s %9s  (%lld "
          "frames per run)\n",
          "config", "K", "frame", "dtype", "frames/s", "p50_ms", "p99_ms", "xnaive", "hitrate",
          "upstream", "overlap", "dev_ms/f", "copy_ms/f", "src_us/f", "sub_us/f", "pred_ms/f",
          "meas_ms/f", "meas/pred", (long long)c->timed_frames);
  for (int i = 0; i < c->config_count; i++) {
    const config *cfg = &c->configs[i];
    fprintf(b->out, "%-8s %2d %-9s %-5s ", KIND_NAMES[cfg->kind], cfg->k, frame,
            plm_dtype_name(c->dtype));
    if (cfg->skipped) {
      fprintf(b->out, "skipped: %s\n", cfg->note);
      continue;
    }
    print_value(b->out, "%*.1f", 10, cfg->m_fps);
    print_value(b->out, " %*.3f", 8, cfg->m_p50);
    print_value(b->out, " %*.3f", 8, cfg->m_p99);
    print_value(b->out, " %*.2f", 7, cfg->speedup);
    print_value(b->out, " %*.3f", 7,
                cfg->requests ? (double)cfg->hits / (double)cfg->requests : NAN);
    fprintf(b->out, " %8llu", (unsigned long long)cfg->upstream_allocs);
    print_value(b->out, " %*.3f", 7, cfg->m_overlap);
    print_value(b->out, " %*.3f", 9, cfg->m_device_ms);
    print_value(b->out, " %*.3f", 9, cfg->m_copy_ms);
    print_value(b->out, " %*.1f", 8, cfg->m_source_us);
    print_value(b->out, " %*.1f", 8, cfg->m_submit_us);
    const double measured_ms = measured_ms_of(cfg);
    print_value(b->out, " %*.4f", 9, cfg->predicted_ms);
    print_value(b->out, " %*.4f", 9, measured_ms);
    print_value(b->out, " %*.2f", 9, measured_ms / cfg->predicted_ms);
    fprintf(b->out, "%s%s\n", cfg->note[0] ? "  " : "", cfg->note);
  }
  const floors f = case_floors(b, c);
  fprintf(b->out,
          "floors %s %s: upload %.0f B/frame -> %.4f ms (%.0f frames/s); device %.0f B/frame%s "
          "-> %.4f ms (%.0f frames/s); (download %.0f B/frame, not in the floors)\n",
          frame, plm_dtype_name(c->dtype), f.h2d_bytes, f.h2d_ms, f.h2d_fps, f.device_bytes,
          c->device_bytes_fused > 0 ? " (fused plan)" : "", f.device_ms, f.device_fps,
          c->d2h_bytes);
  fprintf(b->out, "copy bound %s %s: one frame's upload timed alone %.4f ms -> %.0f frames/s\n",
          frame, plm_dtype_name(c->dtype), c->frame_h2d_ms, c->copy_bound_fps);
  print_load(b, c, frame);
  if (f.best)
    fprintf(b->out,
            "best: %s K=%d at %.1f frames/s = %.2f%% of the upload bound, %.2f%% of the copy "
            "bound, %.2f%% of the device bound\n",
            KIND_NAMES[f.best->kind], f.best->k, f.best->m_fps, 100.0 * f.of_h2d,
            100.0 * f.best->m_fps / c->copy_bound_fps, 100.0 * f.of_device);
  fflush(b->out);
}

/* ---- goals (reported, never asserted) ----------------------------------------------------- */

typedef struct goal {
  char name[96];
  char case_name[32];
  double measured, target;
  const char *verdict; /* "met", "not met", "not applicable" */
  char detail[200];
} goal;

enum { MAX_GOALS = MAX_CASES * 6 };

static const config *find(const bench_case *c, config_kind kind) {
  for (int i = 0; i < c->config_count; i++)
    if (c->configs[i].kind == kind && !c->configs[i].skipped) return &c->configs[i];
  return NULL;
}

static goal *new_goal(goal *goals, int *count, const bench_case *c, const char *name) {
  goal *g = &goals[(*count)++];
  *g = (goal){.measured = NAN, .target = NAN, .verdict = "not applicable"};
  snprintf(g->name, sizeof g->name, "%s", name);
  char frame[24];
  frame_name(c, frame, sizeof frame);
  snprintf(g->case_name, sizeof g->case_name, "%s %s", frame, plm_dtype_name(c->dtype));
  return g;
}

static void judge(goal *g, double measured, double target, bool higher_is_better) {
  g->measured = measured;
  g->target = target;
  if (!isfinite(measured)) return;
  g->verdict = (higher_is_better ? measured >= target : measured < target) ? "met" : "not met";
}

/* The model's error over the case's configs but naive: the largest |measured / predicted -
 * 1|. naive's per-run allocation of every intermediate (what pooling removes) is not in
 * the model, so its ratio is shown beside, not judged. */
static void model_goal(goal *g, const bench_case *c) {
  double lo = INFINITY, hi = -INFINITY, worst = NAN, naive = NAN;
  int configs = 0, corrected = 0, steps = 0;
  for (int i = 0; i < c->config_count; i++) {
    const config *cfg = &c->configs[i];
    const double ratio = measured_ms_of(cfg) / cfg->predicted_ms;
    if (!(ratio > 0) || !isfinite(ratio)) continue; /* skipped, or no frame timed */
    if (cfg->kind == NAIVE) {
      naive = ratio;
      continue;
    }
    lo = fmin(lo, ratio);
    hi = fmax(hi, ratio);
    worst = fmax(isfinite(worst) ? worst : 0.0, fabs(ratio - 1.0));
    corrected += cfg->corrected_steps;
    steps += cfg->step_count;
    configs++;
  }
  if (!configs) return;
  judge(g, worst, 0.25, false);
  snprintf(g->detail, sizeof g->detail,
           "meas/pred %.2f..%.2f over %d configs (naive %.2f: its allocation per run not "
           "modelled); %d of %d steps %s",
           lo, hi, configs, naive, corrected, steps,
           corrected ? "from a tuning table's points" : "corrected: no tuning table (plume tune)");
}

static int collect_goals(const bench *b, goal *goals) {
  int n = 0;
  for (int i = 0; i < b->case_count; i++) {
    const bench_case *c = &b->cases[i];
    const floors f = case_floors(b, c);
    if (c->height == 512 && c->width == 512) {
      goal *g = new_goal(goals, &n, c, "streamed from host at >= 80% of the pinned-copy bound");
      judge(g, f.of_h2d, 0.8, true);
      snprintf(g->detail, sizeof g->detail, "best %.1f frames/s of %.0f",
               f.best ? f.best->m_fps : NAN, f.h2d_fps);
      g = new_goal(goals, &n, c, ">= 20,000 frames/s");
      judge(g, f.best ? f.best->m_fps : NAN, 20000.0, true);
    }
    const config *pooled = find(c, POOLED), *best = &c->configs[c->best_streams];
    goal *g =
        new_goal(goals, &n, c, "streams >= 1.8x pooled where copy and compute are of one order");
    if (pooled) {
      const double ratio = pooled->m_copy_ms / pooled->m_device_ms;
      snprintf(g->detail, sizeof g->detail, "pooled copy/compute = %.3f (K=%d: %.2fx)", ratio,
               best->k, best->m_fps / pooled->m_fps);
      /* "Of one order": copy within 10x of compute either way. */
      if (isfinite(ratio) && ratio >= 0.1 && ratio <= 10.0)
        judge(g, best->m_fps / pooled->m_fps, 1.8, true);
      else
        g->measured = best->m_fps / pooled->m_fps;
    }
    const config *graph = find(c, GRAPH), *fused = find(c, FUSED);
    g = new_goal(goals, &n, c, "graphs shorten device time per frame");
    if (graph) {
      snprintf(g->detail, sizeof g->detail, "device ms/frame: streams K=%d %.4f, graph %.4f%s",
               best->k, best->m_device_ms, graph->m_device_ms,
               graph->graph_replays ? "" : " (no graph was replayed)");
      judge(g, graph->m_device_ms / best->m_device_ms, 1.0, false);
      if (!graph->graph_replays) g->verdict = "not met";
    } else {
      snprintf(g->detail, sizeof g->detail, "%s", c->configs[c->config_count - 2].note);
    }
    g = new_goal(goals, &n, c, "fusion shortens device time per frame");
    if (fused) {
      const config *base = graph ? graph : best;
      snprintf(g->detail, sizeof g->detail, "device ms/frame: %s K=%d %.4f, fused %.4f",
               KIND_NAMES[base->kind], base->k, base->m_device_ms, fused->m_device_ms);
      judge(g, fused->m_device_ms / base->m_device_ms, 1.0, false);
    } else {
      snprintf(g->detail, sizeof g->detail, "%s", c->configs[c->config_count - 1].note);
    }
    model_goal(new_goal(goals, &n, c, "the cost model within 25% of each pooled config's ms/frame"),
               c);
  }
  return n;
}

static void print_goals(bench *b, const goal *goals, int n) {
  fprintf(b->out, "\ngoals (for an H100/H200; reported, not asserted)%s:\n",
          b->backend == PLM_BACKEND_HOST ? " - this run is on the host backend, so they do not "
                                           "apply as such"
                                         : "");
  for (int i = 0; i < n; i++) {
    const goal *g = &goals[i];
    fprintf(b->out, "  %-18s %-64s ", g->case_name, g->name);
    if (isfinite(g->measured))
      fprintf(b->out, "%.3f", g->measured);
    else
      fprintf(b->out, "-");
    fprintf(b->out, " (%s)%s%s\n", g->verdict, g->detail[0] ? ": " : "", g->detail);
  }
  fflush(b->out);
}

/* ---- JSON --------------------------------------------------------------------------------- */

static json_t *number(double value) {
  return isfinite(value) ? json_real(value) : json_null();
}

/* Byte counts: integers, exact (a real would keep 6 digits). */
static json_t *bytes_json(double value) {
  return isfinite(value) && value > 0 ? json_integer((json_int_t)llround(value)) : json_null();
}

static json_t *config_json(const bench_case *c, const config *cfg) {
  char frame[32];
  frame_name(c, frame, sizeof frame);
  json_t *o = json_object();
  json_object_set_new(o, "config", json_string(KIND_NAMES[cfg->kind]));
  json_object_set_new(o, "streams", json_integer(cfg->k));
  json_object_set_new(o, "frame", json_string(frame));
  json_object_set_new(o, "dtype", json_string(plm_dtype_name(c->dtype)));
  json_object_set_new(o, "skipped", json_boolean(cfg->skipped));
  json_object_set_new(o, "note", json_string(cfg->note));
  const bool ran = !cfg->skipped;
  json_object_set_new(o, "frames_per_s", number(ran ? cfg->m_fps : NAN));
  json_object_set_new(o, "latency_p50_ms", number(ran ? cfg->m_p50 : NAN));
  json_object_set_new(o, "latency_p99_ms", number(ran ? cfg->m_p99 : NAN));
  /* The host's enqueue time per frame (plm_run_stream_report's submit_p50_us). */
  json_object_set_new(o, "host_submit_us", number(ran ? cfg->m_submit_us : NAN));
  /* Its time per frame to get the inputs (submit_p50_us's companion, source_p50_us). */
  json_object_set_new(o, "host_source_us", number(ran ? cfg->m_source_us : NAN));
  json_object_set_new(o, "speedup_vs_naive", number(ran ? cfg->speedup : NAN));
  json_object_set_new(
      o, "pool_hit_rate",
      number(ran && cfg->requests ? (double)cfg->hits / (double)cfg->requests : NAN));
  json_object_set_new(o, "pool_requests",
                      ran ? json_integer((json_int_t)cfg->requests) : json_null());
  json_object_set_new(o, "upstream_allocs",
                      ran ? json_integer((json_int_t)cfg->upstream_allocs) : json_null());
  json_object_set_new(o, "overlap", number(ran ? cfg->m_overlap : NAN));
  json_object_set_new(o, "device_ms_per_frame", number(ran ? cfg->m_device_ms : NAN));
  json_object_set_new(o, "copy_ms_per_frame", number(ran ? cfg->m_copy_ms : NAN));
  json_object_set_new(o, "copy_bound_fps", number(c->copy_bound_fps));
  json_object_set_new(o, "of_copy_bound", number(ran ? cfg->m_fps / c->copy_bound_fps : NAN));
  /* The cost model (plm_pipeline_predict) against the measured time per frame. */
  const double measured_ms = measured_ms_of(cfg);
  json_object_set_new(o, "predicted_ms_per_frame", number(cfg->predicted_ms));
  json_object_set_new(o, "measured_ms_per_frame", number(measured_ms));
  json_object_set_new(o, "measured_over_predicted", number(measured_ms / cfg->predicted_ms));
  json_object_set_new(o, "steps_corrected_by_tuning", json_integer(cfg->corrected_steps));
  /* Other processes' share of the CPUs over its timed runs (support/cpu_share.h). */
  json_object_set_new(o, "others_cpu_share", number(ran ? others_share_of(cfg) : NAN));
  json_object_set_new(o, "graph_replays", json_integer(cfg->graph_replays));
  json_object_set_new(o, "runs", json_integer(cfg->runs));
  json_object_set_new(o, "frames_per_run", json_integer(c->timed_frames));
  json_t *each = json_array();
  for (int r = 0; r < cfg->runs; r++) json_array_append_new(each, number(cfg->fps[r]));
  json_object_set_new(o, "frames_per_s_each_run", each);
  return o;
}

static json_t *floors_json(const bench *b) {
  json_t *o = json_object();
  json_object_set_new(o, "pinned_h2d_gbps", number(b->h2d_gbps));
  json_object_set_new(o, "device_copy_gbps", number(b->d2d_gbps));
  json_object_set_new(
      o, "method",
      json_string(b->backend == PLM_BACKEND_HOST
                      ? "64 MiB plm_stream_memcpy, event-timed, median of 5; on the host backend "
                        "both are memcpy by a stream's worker thread"
                      : "64 MiB plm_stream_memcpy from plm_host_alloc memory and device to "
                        "device (bytes read plus written), event-timed, median of 5"));
  json_t *cases = json_array();
  for (int i = 0; i < b->case_count; i++) {
    const bench_case *c = &b->cases[i];
    const floors f = case_floors(b, c);
    char frame[32];
    frame_name(c, frame, sizeof frame);
    json_t *k = json_object();
    json_object_set_new(k, "frame", json_string(frame));
    json_object_set_new(k, "dtype", json_string(plm_dtype_name(c->dtype)));
    json_object_set_new(k, "h2d_bytes_per_frame", bytes_json(f.h2d_bytes));
    json_object_set_new(k, "h2d_floor_ms", number(f.h2d_ms));
    json_object_set_new(k, "d2h_bytes_per_frame", bytes_json(c->d2h_bytes));
    json_object_set_new(k, "h2d_floor_frames_per_s", number(f.h2d_fps));
    json_object_set_new(k, "frame_h2d_ms", number(c->frame_h2d_ms));
    json_object_set_new(k, "copy_bound_fps", number(c->copy_bound_fps));
    json_object_set_new(k, "device_bytes_per_frame_unfused", bytes_json(c->device_bytes));
    json_object_set_new(k, "device_bytes_per_frame_fused", bytes_json(c->device_bytes_fused));
    json_object_set_new(k, "device_floor_ms", number(f.device_ms));
    json_object_set_new(k, "device_floor_frames_per_s", number(f.device_fps));
    json_object_set_new(k, "best_config",
                        f.best ? json_string(KIND_NAMES[f.best->kind]) : json_null());
    json_object_set_new(k, "best_streams", f.best ? json_integer(f.best->k) : json_null());
    json_object_set_new(k, "best_frames_per_s", number(f.best ? f.best->m_fps : NAN));
    json_object_set_new(k, "best_of_h2d_bound", number(f.of_h2d));
    json_object_set_new(k, "best_of_device_bound", number(f.of_device));
    json_array_append_new(cases, k);
  }
  json_object_set_new(o, "cases", cases);
  return o;
}

static json_t *document_json(const bench *b, const goal *goals, int goal_count) {
  const plm_build_info *build = plm_build_info_get();
  json_t *doc = json_object();
  json_object_set_new(doc, "benchmark", json_string("pipeline"));
  json_object_set_new(doc, "backend", json_string(plm_backend_name(b->backend)));
  json_object_set_new(doc, "device", json_string(b->info.name));
  json_object_set_new(doc, "emulated",
                      json_boolean(b->backend == PLM_BACKEND_CUDA && build->cuda_emulated));
  json_object_set_new(doc, "commit", json_string(build->git_commit));
  json_object_set_new(doc, "plume_version", json_string(build->version));
  json_object_set_new(doc, "build_type", json_string(build->build_type));
  char date[32];
  time_t now = time(NULL);
  struct tm utc;
  gmtime_r(&now, &utc);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  json_object_set_new(doc, "date", json_string(date));
  json_object_set_new(doc, "run", json_string(b->opt.smoke ? "smoke" : b->opt.quick ? "quick" : "full"));
  json_object_set_new(doc, "pipeline", json_string(b->text));
  json_object_set_new(
      doc, "frames_source",
      json_string(
          b->opt.frames_from
              ? (b->opt.frames_from->name ? b->opt.frames_from->name : "the caller's")
              : "synthetic scene (support/scene.h), seed 1; f32 frames hold the same values"));
  json_object_set_new(doc, "repeats", json_integer(b->repeats));
  json_object_set_new(doc, "source_ahead", json_integer(b->opt.source_ahead));
  json_object_set_new(doc, "host_side",
                      json_string(b->opt.source_ahead > 0
                                      ? "each frame is copied by the source from host memory "
                                        "into a pinned input buffer (a host memcpy) on a thread "
                                        "of its own, source_ahead frames ahead, in every config"
                                      : "each frame is copied by the source from host memory "
                                        "into the pinned input buffer (a host memcpy) on the "
                                        "enqueueing thread, in every config"));
  json_t *results = json_array();
  for (int i = 0; i < b->case_count; i++)
    for (int j = 0; j < b->cases[i].config_count; j++)
      json_array_append_new(results, config_json(&b->cases[i], &b->cases[i].configs[j]));
  json_object_set_new(doc, "results", results);
  json_object_set_new(doc, "floors", floors_json(b));
  json_t *list = json_array();
  for (int i = 0; i < goal_count; i++) {
    json_t *g = json_object();
    json_object_set_new(g, "goal", json_string(goals[i].name));
    json_object_set_new(g, "case", json_string(goals[i].case_name));
    json_object_set_new(g, "measured", number(goals[i].measured));
    json_object_set_new(g, "target", number(goals[i].target));
    json_object_set_new(g, "verdict", json_string(goals[i].verdict));
    json_object_set_new(g, "detail", json_string(goals[i].detail));
    json_array_append_new(list, g);
  }
  json_object_set_new(doc, "goals", list);
  return doc;
}

/* The floors' bandwidths and cases, and each result's config, streams, frame, dtype and
 * numbers (a skipped config has nulls; a run one may have null overlap: no device timing,
 * null hit rate: no pool requests, and a null model ratio: no frame timed); a naive run. */
static bool check_pipeline(json_t *doc, char *problem, size_t size) {
  static const char *const numbers[] = {
      "frames_per_s",   "latency_p50_ms",         "latency_p99_ms",         "host_submit_us",
      "host_source_us", "speedup_vs_naive",       "pool_hit_rate",          "upstream_allocs",
      "overlap",        "predicted_ms_per_frame", "measured_over_predicted"};
  json_t *results = json_object_get(doc, "results");
  json_t *floor_doc = json_object_get(doc, "floors");
  if (!json_is_object(floor_doc) ||
      !json_is_number(json_object_get(floor_doc, "pinned_h2d_gbps")) ||
      !json_is_number(json_object_get(floor_doc, "device_copy_gbps")) ||
      !json_is_array(json_object_get(floor_doc, "cases")))
    return result_problem(problem, size, "\"floors\" lacks its bandwidths or cases");
  bool naive_seen = false;
  for (size_t i = 0; i < json_array_size(results); i++) {
    json_t *r = json_array_get(results, i);
    const char *name = json_string_value(json_object_get(r, "config"));
    const bool skipped = json_is_true(json_object_get(r, "skipped"));
    if (!name || !json_is_integer(json_object_get(r, "streams")) ||
        !json_is_string(json_object_get(r, "frame")) ||
        !json_is_string(json_object_get(r, "dtype")))
      return result_problem(problem, size, "result %zu lacks config, streams, frame or dtype", i);
    naive_seen |= strcmp(name, "naive") == 0 && !skipped;
    for (size_t k = 0; k < sizeof numbers / sizeof numbers[0]; k++) {
      json_t *v = json_object_get(r, numbers[k]);
      bool may_be_null = skipped || strcmp(numbers[k], "overlap") == 0 ||
                         strcmp(numbers[k], "pool_hit_rate") == 0 ||
                         strcmp(numbers[k], "measured_over_predicted") == 0;
      if (!v || !(json_is_number(v) || (may_be_null && json_is_null(v))))
        return result_problem(problem, size, "result %zu (%s) lacks a number \"%s\"", i, name,
                              numbers[k]);
    }
  }
  if (!naive_seen) return result_problem(problem, size, "no naive result");
  return true;
}

bool pipeline_bench_validate_json(const char *path, FILE *err) {
  static const char *const keys[] = {"benchmark", "backend", "device", "commit",
                                     "results",   "floors",  NULL};
  static const result_schema schema = {
      .prog = "bench_pipeline", .benchmark = "pipeline", .keys = keys, .check = check_pipeline};
  return result_check_file(path, &schema, err);
}

/* ---- the run ------------------------------------------------------------------------------ */

static bool plan_cases(bench *b) {
  const pipeline_bench_frames *from = b->opt.frames_from;
  if (from) {
    if (!from->pixels || from->count < 1 || from->height < 1 || from->width < 1 ||
        plm_dtype_size(from->dtype) == 0)
      return fail(b, EXIT_USAGE, "the frames supplied are empty or of an unknown dtype");
    bench_case *c = &b->cases[b->case_count++];
    *c = (bench_case){
        .height = from->height,
        .width = from->width,
        .dtype = from->dtype,
        .frames = from->pixels,
        .frame_count = from->count,
        .frame_bytes = (size_t)(from->height * from->width) * plm_dtype_size(from->dtype)};
    return true;
  }
  const int64_t sides[2] = {b->opt.smoke ? 64 : 512, 2048};
  const plm_dtype dtypes[2] = {PLM_DTYPE_U16, PLM_DTYPE_F32};
  for (int s = 0; s < (b->opt.quick || b->opt.smoke ? 1 : 2); s++)
    for (int d = 0; d < 2; d++) {
      bench_case *c = &b->cases[b->case_count++];
      *c = (bench_case){.height = sides[s], .width = sides[s], .dtype = dtypes[d]};
      if (!synthetic_frames(b, c, sides[s] >= 2048 ? 4 : b->opt.quick || b->opt.smoke ? 8 : 16)) return false;
    }
  return true;
}

static int64_t default_frames(const bench *b, const bench_case *c) {
  const double pixels = (double)c->height * (double)c->width;
  if (b->opt.frames > 0) return b->opt.frames;
  if (b->opt.smoke) return 8; /* on every backend: a smoke run proves, it does not measure */
  int64_t frames = (int64_t)((b->opt.quick ? 20.0 : 100.0) * (512.0 * 512.0) / pixels);
  /* On a GPU frames take microseconds: many more, so that a run lasts long enough. */
  if (b->backend == PLM_BACKEND_CUDA) frames *= 50;
  return frames < 8 ? 8 : frames;
}

static void release(bench *b) {
  for (int i = 0; i < b->case_count; i++) {
    bench_case *c = &b->cases[i];
    for (int j = 0; j < c->config_count; j++) config_release(&c->configs[j]);
    free(c->owned);
    free(c->reference);
  }
  if (b->ctx) {
    plm_status status = plm_context_destroy(b->ctx);
    if (status != PLM_OK)
      fprintf(stderr, "%s: warning: plm_context_destroy -> %s: %s\n", b->prog,
              plm_status_str(status), plm_last_error());
  }
}

/* ---- the profile ---------------------------------------------------------------------------- */

/* One more run of the case's fastest optimised config with a profiler attached, written
 * to opt.profile_dir with the case's frames/s per config as A/B bars. */
static bool profile_case(bench *b, bench_case *c) {
  config *cfg = &c->configs[c->best_streams];
  for (int i = 0; i < c->config_count; i++)
    if (c->configs[i].kind == FUSED && !c->configs[i].skipped && c->configs[i].pl)
      cfg = &c->configs[i];
  plm_profiler *profiler = NULL;
  CALL(b, "profile", plm_profiler_create(b->ctx, NULL, &profiler));
  plm_status status = plm_pipeline_set_profiler(cfg->pl, profiler);
  plm_run_stream_options options = run_options(b);
  options.use_graphs = false; /* a profiled run times each step; graphs replay none */
  options.max_frames = c->timed_frames;
  feed f = {.c = c};
  plm_run_stream_report report;
  if (status == PLM_OK)
    status = plm_pipeline_run_stream(cfg->pl, feed_source, NULL, &f, &options, &report);
  plm_pipeline_set_profiler(cfg->pl, NULL);

  plm_profile_ab bars[MAX_CONFIGS];
  char names[MAX_CONFIGS][64];
  size_t n = 0;
  for (int i = 0; i < c->config_count; i++) {
    const config *row = &c->configs[i];
    if (row->skipped || !(row->m_fps > 0.0)) continue;
    bars[n] = (plm_profile_ab){.config = config_label(row, names[n], sizeof names[n]),
                               .value = row->m_fps};
    n++;
  }
  char frame[32], label[64], title[160];
  frame_name(c, frame, sizeof frame);
  snprintf(title, sizeof title, "bench_pipeline: %s %s frames, %s profiled", frame,
           plm_dtype_name(c->dtype), config_label(cfg, label, sizeof label));
  const plm_profile_write_options write = {.title = title,
                                           .ab = bars,
                                           .ab_count = n,
                                           .ab_unit = "frames/s",
                                           .ab_higher_is_better = true};
  if (status == PLM_OK) status = plm_profiler_write(profiler, b->opt.profile_dir, &write);
  char message[sizeof b->error] = "";
  if (status != PLM_OK) snprintf(message, sizeof message, "%s", plm_last_error());
  plm_profiler_destroy(profiler);
  if (status != PLM_OK) return fail(b, EXIT_RUNTIME_FAILURE, "profile: %s", message);
  fprintf(b->out, "\nprofile of %s: %s/profile.json, trace.json, report.html\n", title,
          b->opt.profile_dir);
  return true;
}

static bool run_all(bench *b) {
  plm_context_config context_cfg = {.backend = b->opt.backend};
  CALL(b, "setup", plm_context_create(&context_cfg, &b->ctx));
  CALL(b, "setup", plm_context_backend(b->ctx, &b->backend));
  CALL(b, "setup", plm_context_device_info(b->ctx, &b->info));
  if (!plan_cases(b)) return false;
  /* The text, before anything is measured. */
  const int64_t dims[2] = {b->cases[0].height, b->cases[0].width};
  plm_pipeline *probe = NULL;
  if (plm_pipeline_parse(b->ctx, b->text, b->cases[0].dtype, 2, dims, &probe) != PLM_OK)
    return fail(b, EXIT_USAGE, "--pipeline: %s", plm_last_error());
  plm_pipeline_destroy(probe);
  if (!measure_bandwidths(b)) return false;
  /* The device's calibration (plume/profile.h; cached per device) for the cost model's
   * prediction of each config (plm_pipeline_predict). */
  plm_profiler *calibrating = NULL;
  CALL(b, "calibrate", plm_profiler_create(b->ctx, NULL, &calibrating));
  plm_status calibrated = plm_profiler_calibration(calibrating, &b->calibration);
  plm_profiler_destroy(calibrating);
  CALL(b, "calibrate", calibrated);
  print_header(b);
  /* Per case: naive, pooled, 3 streams, graph and fused, each warmed up and timed. */
  progress_begin(&b->bar, b->prog, "runs", (int64_t)b->case_count * 7 * (1 + b->repeats));
  for (int i = 0; i < b->case_count; i++) {
    bench_case *c = &b->cases[i];
    c->timed_frames = default_frames(b, c);
    bool ran = run_case(b, c);
    progress_clear(&b->bar); /* for the table; the next run draws it again */
    if (!ran) return false;
    print_case(b, c);
    if (i == 0 && b->opt.profile_dir && !profile_case(b, c)) return false;
    /* Free this case's pipelines and pools before the next, larger one. */
    for (int j = 0; j < c->config_count; j++) config_release(&c->configs[j]);
  }
  progress_end(&b->bar);
  return true;
}

int pipeline_bench_run(const pipeline_bench_options *options, FILE *table, const char *json_path) {
  static bench b; /* large; one run at a time */
  memset(&b, 0, sizeof b);
  b.opt = options ? *options : (pipeline_bench_options){0};
  b.prog = b.opt.prog ? b.opt.prog : "bench_pipeline";
  b.text = b.opt.pipeline ? b.opt.pipeline : PIPELINE_BENCH_DEFAULT;
  b.out = table ? table : stdout;
  b.repeats = b.opt.repeats > 0 ? b.opt.repeats : b.opt.smoke ? 1 : b.opt.quick ? 3 : 5;
  if (b.repeats > MAX_REPEATS) {
    fprintf(stderr, "%s: at most %d repeats\n", b.prog, MAX_REPEATS);
    return EXIT_USAGE;
  }
  if (b.opt.source_ahead < 0 || b.opt.source_ahead > PLM_SOURCE_AHEAD_MAX) {
    fprintf(stderr, "%s: source_ahead %d is out of range (0 to %d)\n", b.prog, b.opt.source_ahead,
            PLM_SOURCE_AHEAD_MAX);
    return EXIT_USAGE;
  }
  if (b.opt.frames < 0) {
    fprintf(stderr, "%s: frames %lld is negative\n", b.prog, (long long)b.opt.frames);
    return EXIT_USAGE;
  }
  int code = 0;
  if (!run_all(&b)) {
    fprintf(stderr, "%s: %s\n", b.prog, b.error);
    code = b.error_code ? b.error_code : EXIT_RUNTIME_FAILURE;
  }
  if (code == 0) {
    static goal goals[MAX_GOALS];
    const int goal_count = collect_goals(&b, goals);
    print_goals(&b, goals, goal_count);
    if (json_path) {
      json_t *doc = document_json(&b, goals, goal_count);
      char why[PATH_MAX + 128];
      plm__file_out out;
      plm_status written = plm__file_out_open(&out, json_path, why, sizeof why);
      const bool readable_back = written == PLM_OK && !out.direct; /* not a device or a FIFO */
      if (written == PLM_OK) {
        json_dumpf(doc, out.file, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        written = plm__file_out_commit(&out, why, sizeof why); /* a failed write shows here */
      }
      if (written != PLM_OK) {
        char shown[QUOTE_SIZE];
        fprintf(stderr, "%s: cannot write %s: %s\n", b.prog,
                quote_text(json_path, shown, sizeof shown), why);
        code = EXIT_RUNTIME_FAILURE;
      } else if (readable_back && !pipeline_bench_validate_json(json_path, stderr)) {
        code = EXIT_RUNTIME_FAILURE;
      } else {
        fprintf(b.out, "\nwrote %s\n", json_path);
      }
      json_decref(doc);
    }
  }
  release(&b);
  return code;
}

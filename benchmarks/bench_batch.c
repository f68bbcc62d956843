/* benchmarks/bench_batch.c: batch 1 against batch N (benchmarks/bench_batch.h). */
#include "bench_batch.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "benchmarks/pipeline_bench.h"
#include "support/scene.h"
#if PLUME_EMU_COUNT
#include "emu/count/emu_count.h"
#endif

enum { SIZES = 3, MAX_OUTPUTS = 8, DISTINCT_FRAMES = 16, IN_FLIGHT = 3, AHEAD = 4 };
static const int64_t sizes[SIZES] = {64, 128, 256};

/* One size's frames and the two pipelines. */
typedef struct batch_case {
  int64_t side;
  unsigned char *frames; /* DISTINCT_FRAMES u16 frames, back to back */
  size_t frame_bytes;
  plm_pipeline *single, *stacked; /* batch 1, batch N */
  int outputs;
  size_t output_bytes[MAX_OUTPUTS]; /* one frame's */
  int table, count;                 /* the regions table's and count's outputs, or -1 */
  int64_t capacity;                 /* the table's rows */
  unsigned char *reference;         /* batch 1's outputs of the distinct frames */
  size_t reference_bytes;           /* one frame's outputs, all together */
} batch_case;

/* What a run's source and sink share. */
typedef struct feed {
  const batch_case *c;
  bool record; /* keep the outputs as the reference (batch 1's warm-up) */
  bool check;  /* compare with the reference (batch N's warm-up) */
  int64_t first_mismatch;
} feed;

static int failed(const char *what) {
  fprintf(stderr, "bench_pipeline --batch: %s: %s\n", what, plm_last_error());
  return BENCH_EXIT_FAILURE;
}

static plm_status source(void *user, int64_t frame, void *const *inputs, bool *end) {
  (void)end;
  const feed *f = user;
  memcpy(inputs[0], f->c->frames + (size_t)(frame % DISTINCT_FRAMES) * f->c->frame_bytes,
         f->c->frame_bytes);
  return PLM_OK;
}

/* Output i of a frame as it is compared: a regions table's rows in use, else every byte. */
static size_t compared_bytes(const batch_case *c, int i, const void *const *outputs) {
  if (i != c->table || c->count < 0) return c->output_bytes[i];
  int32_t k = 0;
  memcpy(&k, outputs[c->count], sizeof k);
  const int64_t rows = k < 0 ? 0 : k < c->capacity ? k : c->capacity;
  return (size_t)rows * PLM_REGION_COLUMNS * sizeof(double);
}

static plm_status sink(void *user, int64_t frame, const void *const *outputs) {
  feed *f = user;
  const batch_case *c = f->c;
  if (frame >= DISTINCT_FRAMES || (!f->record && !f->check)) return PLM_OK;
  unsigned char *kept = c->reference + (size_t)frame * c->reference_bytes;
  for (int i = 0; i < c->outputs; i++) {
    const size_t bytes = compared_bytes(c, i, outputs);
    if (f->record) memcpy(kept, outputs[i], c->output_bytes[i]);
    if (f->check && memcmp(kept, outputs[i], bytes) != 0 && f->first_mismatch < 0)
      f->first_mismatch = frame;
    kept += c->output_bytes[i];
  }
  return PLM_OK;
}

/* Run `frames` frames through one of the case's pipelines. */
static plm_status run(const batch_case *c, int batch, int64_t frames, feed *f,
                      plm_run_stream_report *report) {
  plm_run_stream_options options = plm_run_stream_options_default();
  options.max_frames = frames;
  options.source_ahead = AHEAD;
  options.batch = batch;
  return plm_pipeline_run_stream(batch > 1 ? c->stacked : c->single, source, sink, f, &options,
                                 report);
}

/* The synthetic scene's frames at side x side, u16. */
static bool render_frames(batch_case *c) {
  scene_config sc = {.frames = DISTINCT_FRAMES, .height = c->side, .width = c->side, .seed = 1};
  char err[SCENE_ERROR_SIZE];
  scene *s = NULL;
  if (scene_create(&sc, &s, err, sizeof err) != PLM_OK) {
    fprintf(stderr, "bench_pipeline --batch: scene: %s\n", err);
    return false;
  }
  c->frame_bytes = (size_t)(c->side * c->side) * sizeof(uint16_t);
  c->frames = malloc(c->frame_bytes * DISTINCT_FRAMES);
  scene_truth *truth = calloc((size_t)scene_max_plumes(s) + 1, sizeof *truth);
  bool ok = c->frames && truth;
  for (int64_t t = 0; ok && t < DISTINCT_FRAMES; t++) {
    int rows = 0;
    ok = scene_render(s, t, (uint16_t *)(void *)(c->frames + (size_t)t * c->frame_bytes), truth,
                      &rows, err, sizeof err) == PLM_OK;
  }
  if (!ok) fprintf(stderr, "bench_pipeline --batch: the frames: %s\n", err);
  free(truth);
  scene_destroy(s);
  return ok;
}

/* Both pipelines, compiled; the outputs' per-frame bytes, the table and the count. */
static int build(plm_context *ctx, const char *text, int batch, batch_case *c) {
  const int64_t frame_dims[2] = {c->side, c->side}, stack_dims[3] = {batch, c->side, c->side};
  const plm_plan_config cfg = {.frames_in_flight = IN_FLIGHT};
  if (plm_pipeline_parse(ctx, text, PLM_DTYPE_U16, 2, frame_dims, &c->single) != PLM_OK)
    return failed("the pipeline"), BENCH_EXIT_USAGE;
  if (plm_pipeline_parse(ctx, text, PLM_DTYPE_U16, 3, stack_dims, &c->stacked) != PLM_OK)
    return failed("the pipeline over stacks"), BENCH_EXIT_USAGE;
  if (plm_pipeline_compile(c->single, &cfg) != PLM_OK ||
      plm_pipeline_compile(c->stacked, &cfg) != PLM_OK)
    return failed("compile");
  if (plm_pipeline_io_count(c->single, NULL, &c->outputs) != PLM_OK) return failed("outputs");
  if (c->outputs > MAX_OUTPUTS) {
    fprintf(stderr, "bench_pipeline --batch: more than %d outputs\n", MAX_OUTPUTS);
    return BENCH_EXIT_USAGE;
  }
  c->table = c->count = -1;
  for (int i = 0; i < c->outputs; i++) {
    plm_shape shape;
    if (plm_pipeline_output_shape(c->single, i, &shape) != PLM_OK) return failed("outputs");
    size_t bytes = plm_dtype_size(shape.dtype);
    for (int d = 0; d < shape.ndim; d++) bytes *= (size_t)shape.dims[d];
    c->output_bytes[i] = bytes;
    c->reference_bytes += bytes;
    if (shape.dtype == PLM_DTYPE_F64 && shape.ndim == 2 && shape.dims[1] == PLM_REGION_COLUMNS) {
      c->table = i;
      c->capacity = shape.dims[0];
    }
    if (shape.dtype == PLM_DTYPE_I32 && shape.ndim == 1 && shape.dims[0] == 1) c->count = i;
  }
  c->reference = malloc(c->reference_bytes * DISTINCT_FRAMES);
  if (!c->reference) {
    fprintf(stderr, "bench_pipeline --batch: no host memory\n");
    return BENCH_EXIT_FAILURE;
  }
  return 0;
}

static void release(batch_case *c) {
  plm_pipeline_destroy(c->single);
  plm_pipeline_destroy(c->stacked);
  free(c->frames);
  free(c->reference);
}

/* One size's figures. */
typedef struct batch_row {
  double fps[2], latency_ms[2]; /* medians: [0] batch 1, [1] batch N */
  double ratio;
  bool counted; /* the emulated figures below were taken */
  double launches[2], estimate_us[2], graph_us[2], floor_us[2]; /* per frame */
} batch_row;

#if PLUME_EMU_COUNT
/* One more run of each way, counted by the emulator; per-frame figures into row. */
static int count_runs(batch_case *c, int batch, batch_row *row) {
  const struct plm_emu_device_model *device = plm_emu_device_model_find("H100");
  const int64_t frames = 2 * (int64_t)batch;
  for (int w = 0; w < 2; w++) {
    char label[64];
    snprintf(label, sizeof label, "batch %d %lldx%lld", w ? batch : 1, (long long)c->side,
             (long long)c->side);
    feed f = {.c = c, .first_mismatch = -1};
    plm_run_stream_report report;
    if (plm_emu_count_begin(label) != 0) return BENCH_EXIT_FAILURE;
    plm_status status = run(c, w ? batch : 1, frames, &f, &report);
    plm_emu_count_end();
    if (status != PLM_OK) return failed("the counted run");
    struct plm_emu_counts counts;
    struct plm_emu_estimate estimate;
    plm_emu_count_get(label, NULL, &counts);
    plm_emu_count_estimate(&counts, device, &estimate);
    row->launches[w] = (double)counts.launches / (double)frames;
    row->estimate_us[w] = 1e6 * estimate.estimate_s / (double)frames;
    row->graph_us[w] = 1e6 * estimate.graph_estimate_s / (double)frames;
    row->floor_us[w] = 1e6 * estimate.floor_s / (double)frames;
  }
  row->counted = true;
  return 0;
}
#endif

/* Warm-ups (checking batch N's results against batch 1's), then the interleaved rounds. */
static int measure(batch_case *c, int batch, int64_t frames, int repeats, bool count,
                   batch_row *row) {
  plm_run_stream_report report;
  feed f = {.c = c, .record = true, .first_mismatch = -1};
  if (run(c, 1, frames > DISTINCT_FRAMES ? frames : DISTINCT_FRAMES, &f, &report) != PLM_OK)
    return failed("batch 1");
  f = (feed){.c = c, .check = true, .first_mismatch = -1};
  if (run(c, batch, frames > DISTINCT_FRAMES ? frames : DISTINCT_FRAMES, &f, &report) != PLM_OK)
    return failed("batch N");
  if (f.first_mismatch >= 0) {
    fprintf(stderr,
            "bench_pipeline --batch: %lldx%lld: frame %lld's outputs differ between batch 1 and "
            "batch %d\n",
            (long long)c->side, (long long)c->side, (long long)f.first_mismatch, batch);
    return BENCH_EXIT_FAILURE;
  }
  double fps[2][32], latency[2][32];
  for (int r = 0; r < repeats; r++)
    for (int w = 0; w < 2; w++) {
      f = (feed){.c = c, .first_mismatch = -1};
      if (run(c, w ? batch : 1, frames, &f, &report) != PLM_OK) return failed("a timed run");
      fps[w][r] = report.frames_per_s;
      latency[w][r] = report.latency_p50_ms;
    }
  for (int w = 0; w < 2; w++) {
    row->fps[w] = bench_median(fps[w], (size_t)repeats);
    row->latency_ms[w] = bench_median(latency[w], (size_t)repeats);
  }
  row->ratio = row->fps[0] > 0 ? row->fps[1] / row->fps[0] : NAN;
#if PLUME_EMU_COUNT
  if (count) return count_runs(c, batch, row);
#else
  (void)count;
#endif
  return 0;
}

static void print_row(FILE *out, const batch_case *c, int batch, const batch_row *row) {
  fprintf(out, "%4lldx%-4lld %12.1f %12.1f %7.2fx %12.3f %12.3f\n", (long long)c->side,
          (long long)c->side, row->fps[0], row->fps[1], row->ratio, row->latency_ms[0],
          row->latency_ms[1]);
  if (!row->counted) return;
  fprintf(out,
          "           emulated estimate (H100 SXM, not a measurement), per frame: launches %.2f -> "
          "%.2f, %.2f -> %.2f us (launches), %.2f -> %.2f us (graph), floor %.2f us (batch %d)\n",
          row->launches[0], row->launches[1], row->estimate_us[0], row->estimate_us[1],
          row->graph_us[0], row->graph_us[1], row->floor_us[1], batch);
}

static json_t *row_json(const batch_case *c, const batch_row *row) {
  json_t *j =
      json_pack("{s:I, s:I, s:f, s:f, s:f, s:f, s:f}", "height", (json_int_t)c->side, "width",
                (json_int_t)c->side, "frames_per_s_batch1", row->fps[0], "frames_per_s_batchN",
                row->fps[1], "ratio", row->ratio, "latency_p50_ms_batch1", row->latency_ms[0],
                "latency_p50_ms_batchN", row->latency_ms[1]);
  if (row->counted)
    json_object_set_new(
        j, "emulated_estimate",
        json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "note",
                  "CUDA emulator's counts, an estimate for an H100 SXM, per frame; not a "
                  "measurement",
                  "launches_batch1", row->launches[0], "launches_batchN", row->launches[1],
                  "estimate_us_batch1", row->estimate_us[0], "estimate_us_batchN",
                  row->estimate_us[1], "graph_estimate_us_batch1", row->graph_us[0],
                  "graph_estimate_us_batchN", row->graph_us[1], "floor_us", row->floor_us[1]));
  return j;
}

static bool validate(const char *path) {
  json_error_t error;
  json_t *doc = json_load_file(path, 0, &error);
  const bool ok = doc && json_is_array(json_object_get(doc, "rows")) &&
                  json_is_integer(json_object_get(doc, "batch"));
  if (!ok) fprintf(stderr, "bench_pipeline --batch: %s is not a batch result\n", path);
  json_decref(doc);
  return ok;
}

int batch_bench_run(const batch_bench_options *o, FILE *out) {
  const char *text = o->pipeline ? o->pipeline : PIPELINE_BENCH_DEFAULT;
  const int batch = o->batch;
  const int64_t frames = o->frames ? o->frames : (o->smoke ? 2 : 32) * (int64_t)batch;
  const int repeats = o->repeats ? (o->repeats < 32 ? o->repeats : 32) : o->smoke ? 1 : 5;
  plm_context *ctx = NULL;
  plm_context_config cfg = {.backend = o->backend};
  plm_backend backend;
  plm_device_info info;
  if (plm_context_create(&cfg, &ctx) != PLM_OK || plm_context_backend(ctx, &backend) != PLM_OK ||
      plm_context_device_info(ctx, &info) != PLM_OK) {
    plm_context_destroy(ctx);
    return failed("the context");
  }
  const bool count = o->emulated_cost_path != NULL;
#if !PLUME_EMU_COUNT
  if (count) {
    fprintf(stderr, "bench_pipeline: --emulated-cost needs a -DPLUME_CUDA=EMU build\n");
    plm_context_destroy(ctx);
    return BENCH_EXIT_USAGE;
  }
#endif
  if (count && backend != PLM_BACKEND_CUDA) {
    fprintf(stderr, "bench_pipeline: --emulated-cost needs the cuda backend (--backend cuda)\n");
    plm_context_destroy(ctx);
    return BENCH_EXIT_USAGE;
  }
  const run_size size = o->smoke ? RUN_SMOKE : RUN_FULL;
  bench_print_header("bench_pipeline --batch", backend, &info, size);
  fprintf(out,
          "pipeline: %s\nframes: the synthetic scene (support/scene.h, seed 1), u16; %lld a run, "
          "%d rounds; %d units in flight, the source %d units ahead\n",
          text, (long long)frames, repeats, IN_FLIGHT, AHEAD);
  fprintf(out, "%-9s %12s %12s %8s %12s %12s\n", "frame", "fps batch 1", "fps batch N", "ratio",
          "p50 ms b1", "p50 ms bN");
  json_t *doc = bench_json_document("pipeline_batch", backend, &info, size);
  json_t *rows = json_array();
  json_object_set_new(doc, "pipeline", json_string(text));
  json_object_set_new(doc, "batch", json_integer(batch));
  json_object_set_new(doc, "frames_per_run", json_integer(frames));
  json_object_set_new(doc, "repeats", json_integer(repeats));
  json_object_set_new(doc, "rows", rows);
  int code = 0;
  for (int s = 0; s < SIZES && code == 0; s++) {
    batch_case c = {.side = sizes[s]};
    batch_row row = {0};
    code = render_frames(&c) ? build(ctx, text, batch, &c) : BENCH_EXIT_FAILURE;
    if (code == 0) code = measure(&c, batch, frames, repeats, count, &row);
    if (code == 0) {
      print_row(out, &c, batch, &row);
      json_array_append_new(rows, row_json(&c, &row));
    }
    release(&c);
  }
  fprintf(out, "ratio: frames/s with batch %d over frames/s with batch 1 (medians)\n", batch);
#if PLUME_EMU_COUNT
  if (code == 0 && count && plm_emu_count_report("H100", NULL, o->emulated_cost_path) != 0)
    code = BENCH_EXIT_FAILURE;
#endif
  if (code == 0 && o->json_path && !bench_json_write("bench_pipeline", doc, o->json_path, validate))
    code = BENCH_EXIT_FAILURE;
  json_decref(doc);
  plm_context_destroy(ctx);
  return code;
}

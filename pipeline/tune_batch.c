/* pipeline/tune_batch.c: measuring plm_pipeline_run_stream's batch (plm_tune_batch,
 * plume/pipeline.h).
 *
 * The tunable is a target, PLM_TUNING_BATCH_BYTES: the input bytes a batch gathers, from
 * which plm_tuning_batch_for makes a frame count for each frame size. It is decided as the
 * ops' tunables are (profile/tune.c), on a few workloads at once:
 *
 *   the workloads  u16 frames of 64 x 64 and 128 x 128 (and 256 x 256 unless quick), each
 *                  through the pipeline at every batch N that some candidate gives it
 *                  (64 x 64: 1 to 128; 256 x 256: 1 to 8), 3 units in flight, the source
 *                  4 units ahead; after one warm-up run of each (which sizes its runs to
 *                  take MIN_RUN_MS, at least 8 batches), the timed runs take turns round
 *                  by round, so that a change of the machine's load hits them all;
 *   a candidate's  the sum over the sizes of the median time per frame at the batch it
 *   score          gives that size;
 *   the decision   the best candidate is kept when it is not the default (0: a frame at a
 *                  time) and its gain over the default is above twice the largest
 *                  coefficient of variation among the runs both were scored on.
 *
 * The frames stand in for a sensor's: a level of 1000 with noise and a few bright blobs
 * (their positions from splitmix64), so that label and regions have work as they would.
 * Every frame size is in the small class (below 1 MiB), so the entry is the small class's;
 * larger frames keep the default. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common/splitmix64.h"
#include "plume/pipeline.h"
#include "plume/presets.h"
#include "plume/tuning.h"
#include "streams/error.h"

enum {
  SIZES = 3,
  QUICK_SIZES = 2,
  MAX_BATCHES = 9, /* the distinct batches of one size: 1, 2, 4 ... 256 */
  MAX_RUNS = 64,
  DISTINCT_FRAMES = 8,
  IN_FLIGHT = 3,
  AHEAD = 4,
  MIN_FRAMES = 64, /* per timed run, at least; and 8 batches */
  MIN_RUN_MS = 60, /* per timed run, at least (by the warm-up's time per frame) */
  BLOBS = 6
};

static const int64_t sides[SIZES] = {64, 128, 256};

/* One workload: a frame size at one batch, its pipeline and its times. */
typedef struct workload {
  int batch;
  int64_t frames; /* per run: the warm-up's MIN_FRAMES or 8 batches, then MIN_RUN_MS' worth */
  plm_pipeline *pipeline;
  double ms_per_frame[MAX_RUNS];
  double median_ms, cv;
} workload;

typedef struct size_case {
  int64_t side;
  size_t frame_bytes;
  uint16_t *frames; /* DISTINCT_FRAMES frames, back to back */
  int workloads;
  workload w[MAX_BATCHES];
} size_case;

/* A level, noise of about 10 and BLOBS blobs 300 above it, sigma 2. */
static void render(uint16_t *frame, int64_t side, uint64_t seed) {
  uint64_t state = splitmix64_mix(seed);
  double cx[BLOBS], cy[BLOBS];
  for (int b = 0; b < BLOBS; b++) {
    cx[b] = 4 + splitmix64_unit(&state) * (double)(side - 8);
    cy[b] = 4 + splitmix64_unit(&state) * (double)(side - 8);
  }
  for (int64_t y = 0; y < side; y++)
    for (int64_t x = 0; x < side; x++) {
      double v = 1000 + 20 * (splitmix64_unit(&state) - 0.5) * 1.7;
      for (int b = 0; b < BLOBS; b++) {
        const double dx = (double)x - cx[b], dy = (double)y - cy[b];
        v += 300 * exp(-(dx * dx + dy * dy) / 8);
      }
      frame[y * side + x] = (uint16_t)lround(v);
    }
}

static plm_status source(void *user, int64_t frame, void *const *inputs, bool *end) {
  (void)end;
  const size_case *c = user;
  memcpy(inputs[0], c->frames + (size_t)(frame % DISTINCT_FRAMES) * (size_t)(c->side * c->side),
         c->frame_bytes);
  return PLM_OK;
}

static plm_status sink(void *user, int64_t frame, const void *const *outputs) {
  (void)user, (void)frame, (void)outputs;
  return PLM_OK;
}

/* One run of w's pipeline; its time per frame into *ms. */
static plm_status run(size_case *c, const workload *w, double *ms) {
  plm_run_stream_options options = plm_run_stream_options_default();
  options.max_frames = w->frames;
  options.source_ahead = AHEAD;
  options.batch = w->batch;
  plm_run_stream_report report;
  plm_status status = plm_pipeline_run_stream(w->pipeline, source, sink, c, &options, &report);
  if (status != PLM_OK) return status;
  *ms = report.frames_per_s > 0 ? 1e3 / report.frames_per_s : INFINITY;
  return PLM_OK;
}

/* The batches the candidates give frames of c's size, each once, ascending. */
static void batches_of(size_case *c, const plm_tunable_info *t) {
  c->workloads = 0;
  for (int k = 0; k < t->candidate_count; k++) {
    const int batch = plm_tuning_batch_for(t->candidates[k], c->frame_bytes);
    if (c->workloads == 0 || c->w[c->workloads - 1].batch != batch)
      c->w[c->workloads++] = (workload){
          .batch = batch, .frames = 8 * batch > MIN_FRAMES ? 8 * (int64_t)batch : MIN_FRAMES};
  }
}

static plm_status build(plm_context *ctx, const char *text, size_case *c) {
  c->frames = malloc(c->frame_bytes * DISTINCT_FRAMES);
  if (!c->frames) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no memory for the frames");
  for (int f = 0; f < DISTINCT_FRAMES; f++)
    render(c->frames + (size_t)f * (size_t)(c->side * c->side), c->side,
           (uint64_t)c->side * 1000 + (uint64_t)f);
  const plm_plan_config config = {.frames_in_flight = IN_FLIGHT};
  for (int k = 0; k < c->workloads; k++) {
    workload *w = &c->w[k];
    const int64_t dims[3] = {w->batch, c->side, c->side};
    plm_status status = plm_pipeline_parse(ctx, text, PLM_DTYPE_U16, w->batch > 1 ? 3 : 2,
                                           w->batch > 1 ? dims : dims + 1, &w->pipeline);
    if (status == PLM_OK) status = plm_pipeline_compile(w->pipeline, &config);
    if (status != PLM_OK) return plm__propagate(status);
  }
  return PLM_OK;
}

static void release(size_case *c) {
  for (int k = 0; k < c->workloads; k++) plm_pipeline_destroy(c->w[k].pipeline);
  free(c->frames);
}

/* The median and the coefficient of variation of w's runs, as the ops' tunables take them
 * (plm_profile_stats_of, profile/tune.c). */
static void summarise(workload *w, int runs) {
  plm_profile_op_stats stats = {0};
  plm_profile_stats_of(w->ms_per_frame, (size_t)runs, &stats);
  w->median_ms = stats.p50_ms;
  w->cv = stats.cv;
}

/* The workload of c at the batch that `bytes` gives it. */
static const workload *at(const size_case *c, int64_t bytes) {
  const int batch = plm_tuning_batch_for(bytes, c->frame_bytes);
  for (int k = 0; k < c->workloads; k++)
    if (c->w[k].batch == batch) return &c->w[k];
  return &c->w[0];
}

plm_tune_batch_options plm_tune_batch_options_default(void) {
  return (plm_tune_batch_options){.quick = false, .pipeline = NULL, .runs = 0};
}

plm_status plm_tune_batch(plm_context *ctx, const plm_tune_batch_options *options,
                          plm_tuning_entry *entry) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(entry);
  const plm_tune_batch_options o = options ? *options : plm_tune_batch_options_default();
  if (o.runs < 0 || o.runs > MAX_RUNS)
    return plm__fail(PLM_ERR_INVALID_ARG, "runs %d is not in 0..%d", o.runs, MAX_RUNS);
  plm_backend backend;
  plm_status status = plm_context_backend(ctx, &backend);
  if (status != PLM_OK) return plm__propagate(status);
  if (backend == PLM_BACKEND_CUDA && plm_build_info_get()->cuda_emulated)
    return plm__fail(PLM_ERR_UNSUPPORTED,
                     "the batch is not measured on the CUDA emulator: its times are a CPU's "
                     "running GPU threads one by one, not a GPU's");
  /* The tunable of the backend: its candidates and default. */
  plm_tunable_info t;
  status = plm_tuning_batch_tunable(backend, &t);
  if (status != PLM_OK) return plm__propagate(status);

  const int runs = o.runs ? o.runs : o.quick ? 3 : 5;
  const int size_count = o.quick ? QUICK_SIZES : SIZES;
  const char *text = o.pipeline ? o.pipeline : PLM_PRESET_DEFAULT_PIPELINE;
  size_case cases[SIZES];
  memset(cases, 0, sizeof cases);
  for (int s = 0; s < size_count; s++) {
    cases[s].side = sides[s];
    cases[s].frame_bytes = (size_t)(sides[s] * sides[s]) * sizeof(uint16_t);
    batches_of(&cases[s], &t);
  }
  for (int s = 0; status == PLM_OK && s < size_count; s++) status = build(ctx, text, &cases[s]);
  /* a warm-up of each, then the rounds */
  for (int r = -1; status == PLM_OK && r < runs; r++)
    for (int s = 0; status == PLM_OK && s < size_count; s++)
      for (int k = 0; status == PLM_OK && k < cases[s].workloads; k++) {
        double ms;
        workload *w = &cases[s].w[k];
        status = run(&cases[s], w, &ms);
        if (status == PLM_OK && r >= 0) w->ms_per_frame[r] = ms;
        if (status == PLM_OK && r < 0 && ms * (double)w->frames < MIN_RUN_MS) {
          /* long enough to time: whole batches, MIN_RUN_MS at the warm-up's rate */
          const int64_t batches = (int64_t)ceil(MIN_RUN_MS / ms / w->batch);
          w->frames = batches * w->batch;
        }
      }
  if (status == PLM_OK) {
    for (int s = 0; s < size_count; s++)
      for (int k = 0; k < cases[s].workloads; k++) summarise(&cases[s].w[k], runs);
    /* each candidate's score; the default's and the best's */
    double default_ms = 0, best_ms = INFINITY, cv = 0;
    int64_t best = t.fallback;
    for (int k = 0; k < t.candidate_count; k++) {
      double score = 0;
      for (int s = 0; s < size_count; s++) score += at(&cases[s], t.candidates[k])->median_ms;
      if (t.candidates[k] == t.fallback) default_ms = score;
      if (score < best_ms) best_ms = score, best = t.candidates[k];
    }
    for (int s = 0; s < size_count; s++) {
      const double a = at(&cases[s], t.fallback)->cv, b = at(&cases[s], best)->cv;
      cv = fmax(cv, fmax(a, b));
    }
    const bool kept = best != t.fallback && (default_ms - best_ms) / default_ms > 2 * cv;
    *entry = (plm_tuning_entry){.size_class = PLM_SIZE_SMALL,
                                .value = kept ? best : t.fallback,
                                .fallback = t.fallback,
                                .best = best,
                                .default_ms = default_ms,
                                .best_ms = best_ms,
                                .cv = cv,
                                .kept = kept};
    snprintf(entry->op, sizeof entry->op, "%s", PLM_TUNING_RUN_STREAM);
    snprintf(entry->tunable, sizeof entry->tunable, "%s", PLM_TUNING_BATCH_BYTES);
  }
  for (int s = 0; s < size_count; s++) release(&cases[s]);
  return status;
}

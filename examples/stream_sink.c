/* examples/stream_sink.c: a sequence of frames streamed through a pipeline, with a source
 * that makes each frame and a sink that receives each frame's results (plume/pipeline.h,
 * "streaming frames").
 *
 *   stream_sink [FRAMES]
 *
 * The source draws a small synthetic infrared scene, as a sensor driver would hand over
 * its frames: 128 x 128 u16 pixels, a background of 1000 with a little noise, and two
 * plumes (Gaussian blobs) moving across it. The pipeline is plume's default detection
 * preset (plume/presets.h), parsed from its text form:
 *
 *   conv2d kernel=log:9:1.5 pad=same border=replicate ! threshold value=25 !
 *   label connectivity=8 ! regions capacity=1024
 *
 * plm_pipeline_run_stream keeps three frames in flight: while frame k is computed, frame
 * k + 1 is uploaded and frame k - 1 downloaded, each frame slot on a stream of its own.
 * The sink is called on this thread once per frame, in frame order, with the frame's
 * outputs in host memory (the regions table and the count of hot spots); it prints them,
 * checks them against where the source drew the plumes, and the program ends with
 *
 *   48 frames in order, 96 of 96 plumes found, 0 false alarms
 *
 * and the run's report (frames per second, latency). The backend is plume's default
 * (cuda with a GPU, else host; PLUME_BACKEND=host|cuda overrides). Exit status 0 when
 * every plume was found, 1 otherwise or on a failure, 2 for a usage error.
 */
#include <plume/plume.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { HEIGHT = 128, WIDTH = 128, PLUMES = 2 };

#define CHECK(call)                                                                              \
  do {                                                                                           \
    plm_status check_status_ = (call);                                                           \
    if (check_status_ != PLM_OK) {                                                               \
      fprintf(stderr, "stream_sink: %s: %s\n", plm_status_str(check_status_), plm_last_error()); \
      goto fail;                                                                                 \
    }                                                                                            \
  } while (0)

/* What the source and the sink share (plm_pipeline_run_stream's `user`). */
typedef struct scene {
  int64_t frames;     /* how many frames the source makes */
  int64_t next_frame; /* the frame the sink expects next */
  long found, false_alarms;
} scene;

/* Where plume p is in frame k (row, column): both move in straight lines. */
static void plume_position(int p, int64_t k, double *row, double *col) {
  if (p == 0) {
    *row = 30.0 + 0.5 * (double)k;
    *col = 20.0 + 1.0 * (double)k;
  } else {
    *row = 96.0;
    *col = 110.0 - 0.75 * (double)k;
  }
}

/* The source: fill the pinned input buffer with frame k, or say the sequence has ended. It
 * runs on this thread just before frame k is queued (source_ahead 0, the default). */
static plm_status make_frame(void *user, int64_t k, void *const *inputs, bool *end) {
  scene *s = user;
  if (k >= s->frames) {
    *end = true;
    return PLM_OK;
  }
  uint16_t *pixels = inputs[0];
  uint32_t noise = 12345u + (uint32_t)k; /* a small xorshift: the same frames on every run */
  for (int y = 0; y < HEIGHT; y++) {
    for (int x = 0; x < WIDTH; x++) {
      noise ^= noise << 13;
      noise ^= noise >> 17;
      noise ^= noise << 5;
      double value = 1000.0 + (double)(noise % 17) - 8.0;
      for (int p = 0; p < PLUMES; p++) {
        double row, col;
        plume_position(p, k, &row, &col);
        const double r2 = (y - row) * (y - row) + (x - col) * (x - col);
        value += 600.0 * exp(-r2 / (2 * 1.2 * 1.2));
      }
      pixels[y * WIDTH + x] = (uint16_t)lround(value);
    }
  }
  return PLM_OK;
}

/* The sink: frame k's outputs, valid during the call only: outputs[0] the regions table
 * (f64, 1024 rows of PLM_REGION_COLUMNS), outputs[1] the count (one i32). */
static plm_status take_results(void *user, int64_t k, const void *const *outputs) {
  scene *s = user;
  const double *table = outputs[0];
  const int32_t count = *(const int32_t *)outputs[1];
  if (k != s->next_frame) {
    fprintf(stderr, "stream_sink: frame %lld came when %lld was expected\n", (long long)k,
            (long long)s->next_frame);
    return PLM_ERR_INVALID_STATE; /* stops the run; run_stream returns this status */
  }
  s->next_frame++;
  printf("frame %lld: %d hot spot%s", (long long)k, count, count == 1 ? "" : "s");
  int found = 0;
  for (int i = 0; i < count && i < 1024; i++) {
    const double *region = table + (size_t)i * PLM_REGION_COLUMNS;
    const double row = region[PLM_REGION_WCENTROID_ROW], col = region[PLM_REGION_WCENTROID_COL];
    printf(" (%.1f, %.1f)", row, col);
    /* A hot spot within 1.5 pixels of a plume counts as finding it. */
    int matched = 0;
    for (int p = 0; p < PLUMES; p++) {
      double true_row, true_col;
      plume_position(p, k, &true_row, &true_col);
      if (hypot(row - true_row, col - true_col) <= 1.5) matched = 1;
    }
    found += matched;
    s->false_alarms += !matched;
  }
  printf(": %d of %d plumes found\n", found, PLUMES);
  s->found += found;
  return PLM_OK;
}

int main(int argc, char **argv) {
  scene s = {.frames = 48};
  if (argc > 2 || (argc == 2 && (s.frames = atoll(argv[1])) < 1)) {
    fprintf(stderr, "usage: %s [FRAMES (at least 1, default 48)]\n", argv[0]);
    return 2;
  }
  int status = 1;
  plm_context *ctx = NULL;
  plm_pipeline *pl = NULL;

  CHECK(plm_context_create(NULL, &ctx)); /* the default backend */
  plm_backend backend;
  CHECK(plm_context_backend(ctx, &backend));
  const int64_t dims[2] = {HEIGHT, WIDTH};
  const plm_preset *preset = plm_pipeline_preset("default");
  CHECK(plm_pipeline_parse(ctx, preset->pipeline, PLM_DTYPE_U16, 2, dims, &pl));
  /* Three frame slots: three workspaces, taken from the context's pool once, here. */
  const plm_plan_config plan = {.frames_in_flight = 3};
  CHECK(plm_pipeline_compile(pl, &plan));
  plm_plan_info info;
  CHECK(plm_pipeline_plan_info(pl, &info));
  printf("pipeline '%s' on %s: %d steps, %d frames in flight, %zu bytes of workspace each\n",
         preset->name, plm_backend_name(backend), info.steps, info.frames_in_flight,
         info.workspace_bytes);

  plm_run_stream_options options = plm_run_stream_options_default();
  plm_run_stream_report report;
  CHECK(plm_pipeline_run_stream(pl, make_frame, take_results, &s, &options, &report));

  printf("%lld frames in order, %ld of %lld plumes found, %ld false alarms\n",
         (long long)report.frames_delivered, s.found, (long long)(s.frames * PLUMES),
         s.false_alarms);
  printf("%.0f frames/s, latency %.2f ms (median) %.2f ms (99th percentile)", report.frames_per_s,
         report.latency_p50_ms, report.latency_p99_ms);
  if (report.graphs_used) {
    printf(", %lld frames as CUDA graph replays", (long long)report.graph_replays);
  } else if (report.graphs_note[0]) {
    printf(" (%s)", report.graphs_note); /* why graphs were not used, on cuda */
  }
  printf("\n");
  status = report.frames_delivered == s.frames && s.found == s.frames * PLUMES ? 0 : 1;

fail:
  plm_pipeline_destroy(pl);
  if (plm_context_destroy(ctx) != PLM_OK) status = 1;
  return status;
}

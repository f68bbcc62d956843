/* benchmarks/bench_scaling.c: frames/s against devices and ranks (bench_scaling.h). */
#define _POSIX_C_SOURCE 200809L

#include "bench_scaling.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "benchmarks/pipeline_bench.h"
#ifdef PLUME_HAVE_MPI
#include "plume/mpi.h"
#endif

enum { H = 512, W = 512, PIXELS = H * W, DISTINCT_FRAMES = 8, FRAMES_IN_FLIGHT = 3 };

/* The frames: a ramp with a few bright moving squares (some regions per frame). */
typedef struct frames {
  uint16_t *pixels; /* DISTINCT_FRAMES of them */
  int64_t count;    /* per run */
} frames;

static bool frames_make(frames *f, int64_t count) {
  f->count = count;
  f->pixels = malloc((size_t)DISTINCT_FRAMES * PIXELS * sizeof *f->pixels);
  if (!f->pixels) return false;
  for (int k = 0; k < DISTINCT_FRAMES; k++)
    for (int64_t i = 0; i < PIXELS; i++) {
      int64_t y = i / W, x = i % W;
      bool square = ((y + 5 * k) / 24) % 5 == 0 && ((x + 3 * k) / 24) % 5 == 0;
      f->pixels[(int64_t)k * PIXELS + i] = (uint16_t)((square ? 1500 : 0) + (x + y + k) % 64);
    }
  return true;
}

static plm_status source(void *user, int64_t k, void *const *inputs, bool *end) {
  const frames *f = user;
  if (k >= f->count) {
    *end = true;
    return PLM_OK;
  }
  memcpy(inputs[0], f->pixels + (k % DISTINCT_FRAMES) * PIXELS, PIXELS * sizeof(uint16_t));
  return PLM_OK;
}

static const char *pipeline_of(const scaling_options *options) {
  return options->pipeline ? options->pipeline : PIPELINE_BENCH_DEFAULT;
}

static plm_pipeline *compiled(plm_context *ctx, const char *text) {
  const int64_t dims[2] = {H, W};
  plm_pipeline *pl = NULL;
  plm_plan_config cfg = {.frames_in_flight = FRAMES_IN_FLIGHT};
  if (plm_pipeline_parse(ctx, text, PLM_DTYPE_U16, 2, dims, &pl) != PLM_OK ||
      plm_pipeline_compile(pl, &cfg) != PLM_OK) {
    fprintf(stderr, "bench_pipeline: %s\n", plm_last_error());
    plm_pipeline_destroy(pl);
    return NULL;
  }
  return pl;
}

static int failed(void) {
  fprintf(stderr, "bench_pipeline: %s\n", plm_last_error());
  return BENCH_EXIT_FAILURE;
}

/* ---- devices ------------------------------------------------------------------------------ */

/* One row: n devices, the best of `repeats` runs. */
static int run_devices(plm_pipeline **pipelines, int n, const frames *f, int repeats,
                       plm_run_stream_devices_report *best) {
  memset(best, 0, sizeof *best);
  for (int r = 0; r < repeats; r++) {
    plm_run_stream_devices_report report;
    if (plm_pipeline_run_stream_devices(pipelines, n, source, NULL, (void *)f, NULL, &report) !=
        PLM_OK)
      return failed();
    if (report.frames_per_s > best->frames_per_s) *best = report;
  }
  return BENCH_EXIT_OK;
}

/* One row; the reference row (one device over every core) has no efficiency: it is not
 * one of the N devices. */
static void print_row(FILE *out, const char *devices, int threads,
                      const plm_run_stream_devices_report *report, double one, bool reference) {
  char each[160] = "";
  size_t used = 0;
  for (int d = 0; d < report->devices && used < sizeof each; d++)
    used += (size_t)snprintf(each + used, sizeof each - used, "%s%.0f", d ? " / " : "",
                             report->device_frames_per_s[d]);
  const double speedup = one > 0 ? report->frames_per_s / one : 0;
  char efficiency[16] = "-";
  if (!reference)
    snprintf(efficiency, sizeof efficiency, "%.0f%%", 100.0 * speedup / report->devices);
  fprintf(out, "%-9s %-8d %10.1f  %-24s %7.2fx %10s\n", devices, threads, report->frames_per_s,
          each, speedup, efficiency);
}

int scaling_bench_devices(const scaling_options *options, FILE *out) {
  const int most = options->devices;
  const int repeats = options->repeats ? options->repeats : 3;
  frames f;
  if (!frames_make(&f, options->frames ? options->frames : 200)) {
    fprintf(stderr, "bench_pipeline: out of memory for the frames\n");
    return BENCH_EXIT_FAILURE;
  }
  plm_backend backend = options->backend;
  plm_context *probe = NULL;
  plm_context_config probe_cfg = {.backend = backend};
  if (plm_context_create(&probe_cfg, &probe) != PLM_OK ||
      plm_context_backend(probe, &backend) != PLM_OK) {
    free(f.pixels);
    return failed();
  }
  plm_device_info info;
  plm_context_device_info(probe, &info);
  const bool host = backend == PLM_BACKEND_HOST;
  int available = 1;
  if (!host) plm_backend_device_count(backend, &available, NULL);
  const int cores = host ? info.multiprocessors : 0;
  const int budget = host ? (cores / most > 0 ? cores / most : 1) : 0;
  if (!host && most > available)
    fprintf(out, "note: %d devices asked for, %d present: rows up to %d\n", most, available,
            available);
  const int rows = host ? most : (most < available ? most : available);

  plm_context *contexts[PLM_RUN_STREAM_MAX_DEVICES] = {0};
  plm_pipeline *pipelines[PLM_RUN_STREAM_MAX_DEVICES] = {0};
  int code = BENCH_EXIT_OK;
  for (int d = 0; code == BENCH_EXIT_OK && d < rows; d++) {
    plm_context_config cfg = {.backend = backend, .device = host ? 0 : d, .host_threads = budget};
    if (plm_context_create(&cfg, &contexts[d]) != PLM_OK) code = failed();
    if (code == BENCH_EXIT_OK && !(pipelines[d] = compiled(contexts[d], pipeline_of(options))))
      code = BENCH_EXIT_FAILURE;
  }
  fprintf(out,
          "bench_pipeline --devices %d: %lld frames of %dx%d u16 per run, best of %d, %s "
          "backend (%s), %d frames in flight per device\n"
          "pipeline: %s\n",
          most, (long long)f.count, H, W, repeats, plm_backend_name(backend), info.name,
          FRAMES_IN_FLIGHT, pipeline_of(options));
  fprintf(out, "%-9s %-8s %10s  %-24s %8s %10s\n", "devices", "threads", "frames/s", "per device",
          "speedup", "efficiency");
  double one = 0;
  for (int n = 1; code == BENCH_EXIT_OK && n <= rows; n++) {
    plm_run_stream_devices_report report;
    code = run_devices(pipelines, n, &f, repeats, &report);
    if (code != BENCH_EXIT_OK) break;
    if (n == 1) one = report.frames_per_s;
    char label[16];
    snprintf(label, sizeof label, "%d", n);
    print_row(out, label, budget, &report, one, false);
  }
  /* One host device over every core: what splitting the cores is measured against. */
  if (code == BENCH_EXIT_OK && host) {
    plm_pipeline *whole = compiled(probe, pipeline_of(options));
    plm_run_stream_devices_report report;
    code = whole ? run_devices(&whole, 1, &f, repeats, &report) : BENCH_EXIT_FAILURE;
    if (code == BENCH_EXIT_OK) print_row(out, "1 (all)", cores, &report, one, true);
    plm_pipeline_destroy(whole);
  }
  for (int d = 0; d < rows; d++) {
    plm_pipeline_destroy(pipelines[d]);
    plm_context_destroy(contexts[d]);
  }
  plm_context_destroy(probe);
  free(f.pixels);
  return code;
}

/* ---- ranks -------------------------------------------------------------------------------- */

#ifdef PLUME_HAVE_MPI

static plm_status pack_count(void *user, int64_t frame, const void *const *outputs,
                             const void **bytes, size_t *length) {
  (void)user;
  (void)frame;
  *bytes = outputs[1]; /* the count of regions: 4 bytes to gather */
  *length = sizeof(int32_t);
  return PLM_OK;
}

static plm_status deliver_nothing(void *user, int64_t frame, const void *bytes, size_t length) {
  (void)user;
  (void)frame;
  (void)bytes;
  (void)length;
  return PLM_OK;
}

/* Rank 0's figure to every rank, the others waiting asleep: a blocking MPI_Bcast polls,
 * and the waiting ranks would take cores from rank 0's run alone. */
static void share_sleeping(double *value) {
  MPI_Request request;
  MPI_Ibcast(value, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &request);
  const struct timespec nap = {.tv_sec = 0, .tv_nsec = 1000000};
  for (int done = 0; !done;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done) nanosleep(&nap, NULL);
  }
}

/* Rank 0 alone, then every rank (see the header); rank 0 prints. */
static int measure_ranks(const scaling_options *options, plm_pipeline *pl, frames *f, int rank,
                         int ranks, FILE *out) {
  const int repeats = options->repeats ? options->repeats : 3;
  const int64_t per_rank = f->count;
  double alone = 0;
  for (int r = 0; rank == 0 && r < repeats; r++) {
    plm_run_stream_report report;
    if (plm_pipeline_run_stream(pl, source, NULL, f, NULL, &report) != PLM_OK) {
      alone = -1;
      break;
    }
    if (report.frames_per_s > alone) alone = report.frames_per_s;
  }
  share_sleeping(&alone);
  if (alone < 0) return rank == 0 ? failed() : BENCH_EXIT_FAILURE;
  /* All together: F frames each, the source dealing frame k mod the distinct ones. */
  f->count = per_rank * ranks;
  plm_mpi_report best = {0};
  for (int r = 0; r < repeats; r++) {
    const plm_mpi_frames all = {.count = f->count,
                                .source = source,
                                .pack = pack_count,
                                .deliver = deliver_nothing,
                                .user = f};
    plm_mpi_report report;
    if (plm_mpi_run_stream(pl, MPI_COMM_WORLD, &all, NULL, &report) != PLM_OK)
      return rank == 0 ? failed() : BENCH_EXIT_FAILURE;
    if (report.frames_per_s >= best.frames_per_s) best = report;
  }
  if (rank != 0) return BENCH_EXIT_OK;
  fprintf(out,
          "bench_pipeline under MPI: %d ranks, %lld frames of %dx%d u16 per rank, best of %d\n"
          "pipeline: %s\n",
          ranks, (long long)per_rank, H, W, repeats, pipeline_of(options));
  fprintf(out, "rank 0 alone: %.1f frames/s\n", alone);
  fprintf(out, "%d ranks: %.1f frames/s in total (", ranks, best.frames_per_s);
  for (int r = 0; r < ranks && r < PLM_MPI_REPORT_RANKS; r++)
    fprintf(out, "%srank %d %.1f", r ? ", " : "", r, best.rank_frames_per_s[r]);
  fprintf(out, " frames/s); speedup %.2fx, efficiency %.0f%%\n", best.frames_per_s / alone,
          100.0 * best.frames_per_s / (ranks * alone));
  return BENCH_EXIT_OK;
}

int scaling_bench_ranks(const scaling_options *options, FILE *out) {
  int provided = 0, rank = 0, ranks = 1;
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "bench_pipeline: MPI_Init_thread failed\n");
    return BENCH_EXIT_FAILURE;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  frames f = {0};
  plm_context *ctx = NULL;
  plm_pipeline *pl = NULL;
  plm_context_config cfg = {.backend = options->backend,
                            .device = plm_mpi_local_device(MPI_COMM_WORLD, options->backend)};
  int ready = frames_make(&f, options->frames ? options->frames : 200) &&
              plm_context_create(&cfg, &ctx) == PLM_OK &&
              (pl = compiled(ctx, pipeline_of(options))) != NULL;
  if (!ready && rank == 0) fprintf(stderr, "bench_pipeline: rank %d: %s\n", rank, plm_last_error());
  int everyone = 0;
  MPI_Allreduce(&ready, &everyone, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  int code = everyone ? measure_ranks(options, pl, &f, rank, ranks, out) : BENCH_EXIT_FAILURE;
  plm_pipeline_destroy(pl);
  plm_context_destroy(ctx);
  free(f.pixels);
  MPI_Finalize();
  return code;
}

#else

int scaling_bench_ranks(const scaling_options *options, FILE *out) {
  (void)options;
  (void)out;
  fprintf(stderr, "bench_pipeline: this build has no MPI (libopenmpi-dev, -DPLUME_MPI=ON)\n");
  return BENCH_EXIT_USAGE;
}

#endif

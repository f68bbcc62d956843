/* apps/tune_commands.c: `plume tune` (apps/tune_commands.h). */
#include "apps/tune_commands.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apps/options.h"
#include "plume/plume.h"
#include "support/cpu_share.h"
#include "support/progress.h"
#include "support/quote.h"

/* Above this share of the CPUs taken by other processes, the run's times are suspect and
 * plume tune says so. On the idle 2-core VM others take about 1% during a tune; with a
 * process spinning on each core, 84%. The runs' CV does not tell the two apart (a full
 * tune's median CV: 4% idle, 13% so loaded; a --quick one's: 4% idle, 2% loaded; 35% for
 * sobel's microsecond runs alone, idle), so it is reported, not judged. */
enum { BUSY_SHARE_PERCENT = 10 };

static const char tune_usage[] =
    "usage: plume tune [--backend host|cuda|auto] [--quick] [--op NAME] [--runs N] [-q]\n"
    "       plume tune --report [--backend host|cuda|auto]\n"
    "Measures each op's tunables on the device, and each op's time on a few workloads\n"
    "beside the cost model's (the placement model's points), and writes the table the ops\n"
    "read at plan time ($XDG_CACHE_HOME/plume; PLUME_TUNING=off|refresh); --report prints it.\n"
    "Last, the batch of small frames that runs fastest through the default preset (run_stream\n"
    "batch_bytes: what plume detect --batch auto runs); --op run_stream measures only that.\n"
    "A progress bar is drawn on stderr when it is a terminal; -q (--quiet) prints neither it\n"
    "nor the table measured, only errors.\n";

void tune_commands_print_summary(FILE *out) {
  fprintf(out,
          "  tune [--quick] [--report]          measure the ops' tunables on this device and\n"
          "                                    keep the winners (plume tune --help)\n");
}

void tune_commands_print_info(plm_context *ctx) {
  plm_tuning_table_info info;
  if (plm_tuning_table_info_get(ctx, &info) != PLM_OK) return;
  if (strcmp(info.setting, "off") == 0)
    printf("tuning:           off (PLUME_TUNING=off): the ops' defaults\n");
  else if (info.problem[0])
    printf(
        "tuning:           the table %s: %s: the ops' defaults (remove it, or make it a "
        "readable regular file)\n",
        info.path, info.problem);
  else if (info.in_use)
    printf("tuning:           table in use, %d entries, %d not the default: %s\n", info.entry_count,
           info.kept_count, info.path);
  else
    printf("tuning:           no table%s: the ops' defaults (plume tune writes one)\n",
           strcmp(info.setting, "refresh") == 0 ? " read (PLUME_TUNING=refresh)" : "");
}

/* One entry as a row; gain: what the value in use buys over the default. */
static void print_entry(const plm_tuning_entry *e) {
  const double used_ms = e->kept ? e->best_ms : e->default_ms;
  const double gain = e->default_ms > 0 ? (e->default_ms - used_ms) / e->default_ms : 0.0;
  char note[64];
  snprintf(note, sizeof note, "%s", e->kept ? "kept" : "default kept (within the noise)");
  if (!e->tunable[0])
    snprintf(note, sizeof note, "a point of the model: %.4f ms modelled", e->model_ms);
  printf("%-24s %-17s %-6s %7lld %7lld %10.4f %7lld %10.4f %5.1f%% %6.1f%% %10.2f  %s\n", e->op,
         e->tunable[0] ? e->tunable : "(model)", plm_size_class_name(e->size_class),
         (long long)e->fallback, (long long)e->value, e->default_ms, (long long)e->best, e->best_ms,
         100.0 * e->cv, 100.0 * gain, e->model_ms > 0 ? e->default_ms / e->model_ms : 0.0, note);
}

static void print_table(const plm_tuning_entry *entries, size_t count) {
  printf("%-24s %-17s %-6s %7s %7s %10s %7s %10s %6s %7s %10s\n", "op", "tunable", "class",
         "default", "chosen", "default_ms", "best", "best_ms", "cv", "gain", "meas/model");
  for (size_t k = 0; k < count; k++) print_entry(&entries[k]);
}

/* The same entry measured again: a tunable's in the same class; a point of the model of
 * the same workload (its model time, as the same calibration gives it: to the 6 digits the
 * calibration cache keeps, where one run measured it and the next read it back). */
static bool same_entry(const plm_tuning_entry *a, const plm_tuning_entry *b) {
  if (a->size_class != b->size_class || strcmp(a->op, b->op) != 0 ||
      strcmp(a->tunable, b->tunable) != 0)
    return false;
  return a->tunable[0] || fabs(a->model_ms - b->model_ms) <= 1e-4 * fabs(b->model_ms);
}

/* Append to the measured entries those of the table in use that this run did not measure
 * (another op with --op, a class --quick skips), so that a partial run refines the table
 * instead of dropping the rest of it. */
static plm_status keep_unmeasured(plm_context *ctx, plm_tuning_entry **entries, size_t *count) {
  plm_tuning_entry *old = NULL;
  size_t old_count = 0;
  plm_status status = plm_tuning_entries(ctx, &old, &old_count);
  if (status != PLM_OK || old_count == 0) return status;
  plm_tuning_entry *all = realloc(*entries, (*count + old_count) * sizeof **entries);
  if (!all) {
    free(old);
    return PLM_OK; /* the measured entries alone: the rest of the table is measured again */
  }
  *entries = all;
  const size_t measured = *count;
  for (size_t k = 0; k < old_count; k++) {
    bool again = false;
    for (size_t j = 0; j < measured && !again; j++) again = same_entry(&old[k], &all[j]);
    if (!again) all[(*count)++] = old[k];
  }
  free(old);
  return PLM_OK;
}

static int report(plm_context *ctx) {
  plm_tuning_table_info info;
  plm_tuning_entry *entries = NULL;
  size_t count = 0;
  if (plm_tuning_table_info_get(ctx, &info) != PLM_OK ||
      plm_tuning_entries(ctx, &entries, &count) != PLM_OK) {
    fprintf(stderr, "plume tune: %s\n", plm_last_error());
    return EXIT_RUNTIME_FAILURE;
  }
  if (info.problem[0]) {
    fprintf(stderr, "plume tune: the tuning table %s: %s\n", info.path, info.problem);
    free(entries);
    return EXIT_RUNTIME_FAILURE;
  }
  if (!info.in_use) {
    printf("no tuning table for %s (PLUME_TUNING=%s): the ops run with their defaults\n", info.key,
           info.setting);
    return 0;
  }
  printf("tuning table %s\nkey %s\n", info.path, info.key);
  print_table(entries, count);
  printf("%d of %d entries differ from the default\n", info.kept_count, info.entry_count);
  free(entries);
  return 0;
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of the entries' CVs (0 for none). */
static double median_cv(const plm_tuning_entry *entries, size_t count) {
  double *cv = malloc((count + 1) * sizeof *cv);
  if (!cv || count == 0) {
    free(cv);
    return 0.0;
  }
  for (size_t k = 0; k < count; k++) cv[k] = entries[k].cv;
  qsort(cv, count, sizeof *cv, by_value);
  const double median = count % 2 ? cv[count / 2] : 0.5 * (cv[count / 2 - 1] + cv[count / 2]);
  free(cv);
  return median;
}

/* What the machine did while the run measured: a line on stdout, and a warning on stderr
 * when other processes (on a VM, its host's other guests too: steal time) took more than
 * BUSY_SHARE_PERCENT of this process's CPUs (the table is written all the same: the user
 * decides). before->total 0: /proc could not be read before. */
static void say_load(const cpu_times *before, const plm_tuning_entry *entries, size_t count) {
  cpu_times after;
  const bool known = before->total > 0 && cpu_times_now(&after);
  const double others = known ? round(100.0 * cpu_share_of_others(before, &after)) : 0.0;
  const double cv = 100.0 * median_cv(entries, count);
  if (known)
    printf(
        "while measuring: other processes used %.0f%% of the CPUs; the runs' median CV "
        "%.1f%%\n",
        others, cv);
  else
    printf("while measuring: the CPUs' load not known (no /proc); the runs' median CV %.1f%%\n",
           cv);
  if (known && others > BUSY_SHARE_PERCENT)
    fprintf(stderr,
            "plume tune: warning: other processes used %.0f%% of the CPUs (more than %d%%) while "
            "it measured: the table's times, and the placement model's points with them, carry "
            "that load; run plume tune again on an idle machine\n",
            others, BUSY_SHARE_PERCENT);
}

/* plm_tune_progress_fn drawing a progress bar (support/progress.h) over the steps. */
static void draw_progress(void *user, int done, int total, const char *op) {
  progress_bar *bar = user;
  (void)op;
  if (done == 0) progress_begin(bar, "tune", "steps", total);
  progress_update(bar, done);
  if (done == total) progress_end(bar);
}

/* plm_pipeline_run_stream's batch (plm_tune_batch), its entry appended to the run's. On
 * the CUDA emulator it is not measured: said, and an error only when it was all that was
 * asked (--op run_stream). */
static plm_status tune_batch(plm_context *ctx, const plm_tune_options *tune, bool asked,
                             bool silent, progress_bar *bar, plm_tuning_entry **entries,
                             size_t *count) {
  plm_tune_batch_options options = plm_tune_batch_options_default();
  options.quick = tune->quick;
  options.runs = tune->runs < 64 ? tune->runs : 64;
  plm_tuning_entry entry;
  if (!silent) progress_begin(bar, "tune " PLM_TUNING_RUN_STREAM, "steps", 1);
  plm_status status = plm_tune_batch(ctx, &options, &entry);
  if (!silent) {
    progress_update(bar, 1);
    progress_end(bar);
  }
  if (status == PLM_ERR_UNSUPPORTED && !asked) {
    if (!silent)
      printf("%s %s not measured: %s\n", PLM_TUNING_RUN_STREAM, PLM_TUNING_BATCH_BYTES,
             plm_last_error());
    return PLM_OK;
  }
  if (status != PLM_OK) return status;
  plm_tuning_entry *all = realloc(*entries, (*count + 1) * sizeof **entries);
  if (!all) return PLM_ERR_OUT_OF_MEMORY;
  all[(*count)++] = entry;
  *entries = all;
  return PLM_OK;
}

int tune_command_main(int argc, char **argv) {
  const char *backend_text = NULL, *quick = NULL, *op = NULL, *runs_text = NULL,
             *report_flag = NULL, *quiet = NULL, *quiet_long = NULL;
  option options[] = {{"--backend", &backend_text, false},
                      {"--quick", &quick, true},
                      {"--op", &op, false},
                      {"--runs", &runs_text, false},
                      {"--report", &report_flag, true},
                      {"-q", &quiet, true},
                      {"--quiet", &quiet_long, true},
                      {NULL, NULL, false}};
  int exit_code = options_take("tune", tune_usage, options, argc, argv);
  if (exit_code >= 0) return exit_code;
  char q[QUOTE_SIZE];
  plm_context_config config = {0};
  if (backend_text && plm_backend_parse(backend_text, &config.backend) != PLM_OK) {
    fprintf(stderr, "plume tune: %s\n", quote_text(plm_last_error(), q, sizeof q));
    return EXIT_USAGE;
  }
  const bool silent = quiet || quiet_long;
  progress_bar bar = {0};
  plm_tune_options tune = plm_tune_options_default();
  tune.quick = quick != NULL;
  tune.op = op;
  if (!silent) {
    tune.progress = draw_progress;
    tune.progress_user = &bar;
  }
  uint64_t runs = 0;
  if (runs_text && !count_parse(runs_text, NULL, 1, 1000, &runs)) {
    fprintf(stderr, "plume tune: --runs %s is not a count in 1..1000\n",
            quote_value(runs_text, q, sizeof q));
    return EXIT_USAGE;
  }
  tune.runs = (int)runs;
  if (report_flag && (quick || op || runs_text || silent)) {
    fprintf(stderr, "plume tune: --report measures nothing: it takes only --backend\n");
    return EXIT_USAGE;
  }
  plm_context *ctx = NULL;
  if (plm_context_create(&config, &ctx) != PLM_OK) {
    fprintf(stderr, "plume tune: %s\n", plm_last_error());
    return EXIT_RUNTIME_FAILURE;
  }
  if (report_flag) {
    exit_code = report(ctx);
    plm_context_destroy(ctx);
    return exit_code;
  }
  plm_tuning_entry *entries = NULL;
  size_t count = 0;
  char path[512] = "";
  plm_backend backend = PLM_BACKEND_HOST;
  plm_status status = plm_context_backend(ctx, &backend);
  cpu_times before = {0}; /* stays 0 where /proc cannot be read */
  (void)cpu_times_now(&before);
  plm_tuning_table_info table;
  if (status == PLM_OK) status = plm_tuning_table_info_get(ctx, &table);
  if (status == PLM_OK && table.problem[0] && strcmp(table.setting, "off") != 0) {
    /* Said before minutes of measuring that could not be kept. */
    fprintf(stderr,
            "plume tune: the tuning table %s: %s: not replaced (remove it, or make it a readable "
            "regular file, then run plume tune again)\n",
            table.path, table.problem);
    plm_context_destroy(ctx);
    return EXIT_RUNTIME_FAILURE;
  }
  const bool batch_only = op && strcmp(op, PLM_TUNING_RUN_STREAM) == 0;
  if (status == PLM_OK && !batch_only) status = plm_tune_run(ctx, &tune, &entries, &count);
  progress_end(&bar); /* when the run stopped before its end */
  if (status == PLM_OK && (!op || batch_only))
    status = tune_batch(ctx, &tune, batch_only, silent, &bar, &entries, &count);
  exit_code = 0;
  if (status == PLM_OK && count == 0) {
    if (!silent)
      printf("nothing to tune on %s%s%s\n", plm_backend_name(backend), op ? " for " : "",
             op ? op : "");
  } else if (status == PLM_OK) {
    if (!silent) {
      print_table(entries, count);
      say_load(&before, entries, count);
    }
    status = keep_unmeasured(ctx, &entries, &count);
    if (status == PLM_OK) status = plm_tuning_store(ctx, entries, count, path, sizeof path);
  }
  if (status != PLM_OK) {
    fprintf(stderr, "plume tune: %s\n", plm_last_error());
    exit_code = status == PLM_ERR_INVALID_ARG ? EXIT_USAGE : EXIT_RUNTIME_FAILURE;
  } else if (count > 0 && !silent) {
    plm_tuning_table_info info;
    plm_tuning_table_info_get(ctx, &info);
    if (strcmp(info.setting, "off") == 0)
      printf("table not written (PLUME_TUNING=off)\n");
    else
      printf("table written to %s\n", path);
  }
  free(entries);
  plm_context_destroy(ctx);
  return exit_code;
}

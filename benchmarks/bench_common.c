/* benchmarks/bench_common.c: the skeleton and helpers every benchmark shares
 * (benchmarks/bench_common.h). */
#define _POSIX_C_SOURCE 200809L

#include "bench_common.h"

#include <errno.h>
#include <stdarg.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile/stats.h"
#include "streams/file.h"

/* ---- the skeleton of main ------------------------------------------------------------- */

const char *bench_run_size_name(run_size size) {
  return size == RUN_SMOKE ? "smoke" : size == RUN_QUICK ? "quick" : "full";
}

/* The help's column: options are listed as "  NAME VALUE", their text from column 22. */
enum { HELP_COLUMN = 22 };

static const char *default_help(const bench_option *o) {
  switch (o->kind) {
    case BENCH_OPTION_BACKEND:
      return "host, cuda or auto (default auto: cuda when a GPU is present)";
    case BENCH_OPTION_JSON: return "write the results as JSON to PATH (then re-read and check it)";
    case BENCH_OPTION_HELP: return "show this help";
    default: return "";
  }
}

void bench_print_usage(const bench_cli *cli, FILE *out) {
  fprintf(out, "%s\noptions:\n", cli->usage);
  for (const bench_option *o = cli->options; o->kind != BENCH_OPTION_END; o++) {
    int width = fprintf(out, "  %s%s%s", o->kind == BENCH_OPTION_HELP ? "-h, " : "", o->name,
                        o->value ? " " : "");
    if (o->value) width += fprintf(out, "%s", o->value);
    fprintf(out, "%*s", width <= HELP_COLUMN - 2 ? HELP_COLUMN - width : 2, "");
    char validate_help[128];
    const char *help = o->help ? o->help : default_help(o);
    if (o->kind == BENCH_OPTION_VALIDATE_JSON && !o->help) {
      snprintf(validate_help, sizeof validate_help, "check that PATH is a %s result file, and exit",
               cli->prog);
      help = validate_help;
    }
    for (const char *line = help;;) { /* continuation lines indented to the column */
      const char *end = strchr(line, '\n');
      fprintf(out, "%.*s\n", (int)(end ? end - line : (ptrdiff_t)strlen(line)), line);
      if (!end) break;
      line = end + 1;
      fprintf(out, "%*s", HELP_COLUMN, "");
    }
  }
}

/* A positive decimal integer, all of text, at most max. */
static bool parse_count(const char *text, int64_t max, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long value = strtoll(text, &end, 10);
  if (errno || end == text || *end || value < 1 || value > max || text[0] == '+') return false;
  *out = (int64_t)value;
  return true;
}

static const bench_option *find_option(const bench_cli *cli, const char *arg) {
  for (const bench_option *o = cli->options; o->kind != BENCH_OPTION_END; o++)
    if (strcmp(arg, o->name) == 0 || (o->kind == BENCH_OPTION_HELP && strcmp(arg, "-h") == 0))
      return o;
  return NULL;
}

/* The string an option of `kind` received (NULL: not given or no such option). */
static const char *given(const bench_cli *cli, bench_option_kind kind) {
  for (const bench_option *o = cli->options; o->kind != BENCH_OPTION_END; o++)
    if (o->kind == kind && o->target) return *(const char **)o->target;
  return NULL;
}

/* One option: BENCH_RUN to go on, else an exit code. */
static int take_option(const bench_cli *cli, const bench_option *o, const char *value,
                       const char **validate) {
  int64_t count = 0;
  switch (o->kind) {
    case BENCH_OPTION_RUN_SIZE: *(run_size *)o->target = (run_size)o->number; break;
    case BENCH_OPTION_FLAG: *(bool *)o->target = true; break;
    case BENCH_OPTION_STRING:
    case BENCH_OPTION_JSON:
    case BENCH_OPTION_PROFILE: *(const char **)o->target = value; break;
    case BENCH_OPTION_VALIDATE_JSON: *validate = value; break;
    case BENCH_OPTION_COUNT:
      if (!parse_count(value, o->number, &count)) {
        fprintf(stderr, "%s: %s '%s': expected an integer 1..%lld\n", cli->prog, o->name, value,
                (long long)o->number);
        return BENCH_EXIT_USAGE;
      }
      *(int64_t *)o->target = count;
      break;
    case BENCH_OPTION_BACKEND:
      if (plm_backend_parse(value, (plm_backend *)o->target) != PLM_OK) {
        fprintf(stderr, "%s: %s '%s': expected host, cuda or auto\n", cli->prog, o->name, value);
        return BENCH_EXIT_USAGE;
      }
      break;
    case BENCH_OPTION_CALLBACK: return o->parse(value, o->target);
    case BENCH_OPTION_HELP: bench_print_usage(cli, stdout); return BENCH_EXIT_OK;
    case BENCH_OPTION_END: break;
  }
  return BENCH_RUN;
}

int bench_start(const bench_cli *cli, int argc, char **argv) {
  const char *validate = NULL;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const bench_option *o = find_option(cli, arg);
    if (!o) {
      fprintf(stderr, "%s: unknown argument '%s' (see %s --help)\n", cli->prog, arg, cli->prog);
      return BENCH_EXIT_USAGE;
    }
    if (o->value && i + 1 >= argc) {
      fprintf(stderr, "%s: %s needs a value (see %s --help)\n", cli->prog, arg, cli->prog);
      return BENCH_EXIT_USAGE;
    }
    int code = take_option(cli, o, o->value ? argv[++i] : NULL, &validate);
    if (code != BENCH_RUN) return code;
  }
  if (validate) {
    if (!cli->validate_json(validate)) return BENCH_EXIT_FAILURE;
    printf("%s: a valid %s result file\n", validate, cli->prog);
    return BENCH_EXIT_OK;
  }
  if (cli->check) {
    int code = cli->check(cli->user);
    if (code != BENCH_RUN) return code;
  }
  const char *json_path = given(cli, BENCH_OPTION_JSON);
  if (json_path && !bench_json_path_writable(cli->prog, json_path)) return BENCH_EXIT_FAILURE;
  const char *profile_dir = given(cli, BENCH_OPTION_PROFILE);
  if (profile_dir && !bench_profile_dir_ready(cli->prog, profile_dir)) return BENCH_EXIT_FAILURE;
  return BENCH_RUN;
}

void bench_print_header(const char *prog, plm_backend backend, const plm_device_info *info,
                        run_size size) {
  const plm_build_info *build = plm_build_info_get();
  printf("%s: %s backend, %s; plume %s (commit %s, %s); %s run\n", prog, plm_backend_name(backend),
         info->name, build->version, build->git_commit, build->build_type,
         bench_run_size_name(size));
  if (backend == PLM_BACKEND_CUDA && build->cuda_emulated)
    printf(
        "NOTE: the cuda device is the CUDA emulator (emu/): it proves correctness; its "
        "times are not a GPU's and mean nothing\n");
}

/* ---- files and JSON --------------------------------------------------------------------- */

bool bench_json_path_writable(const char *prog, const char *path) {
  /* Where the one writer would write (streams/file.h), and whether it may; nothing made. */
  char *target = NULL, why[PATH_MAX + 128];
  bool direct = false;
  if (!plm__file_out_target(path, &target, &direct, why, sizeof why)) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, why);
    return false;
  }
  char folder[PATH_MAX];
  snprintf(folder, sizeof folder, "%s", target);
  const bool writable = direct ? access(target, W_OK) == 0 : access(dirname(folder), W_OK) == 0;
  if (!writable) fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
  free(target);
  return writable;
}

/* mkdir -p: create path and every missing folder above it; errno tells why not. */
static bool make_directories(const char *path) {
  char partial[4096];
  size_t length = strlen(path);
  if (length == 0 || length >= sizeof partial) {
    errno = length ? ENAMETOOLONG : ENOENT;
    return false;
  }
  memcpy(partial, path, length + 1);
  for (char *slash = strchr(partial + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    if (mkdir(partial, 0777) != 0 && errno != EEXIST) return false;
    *slash = '/';
  }
  return mkdir(partial, 0777) == 0 || errno == EEXIST;
}

bool bench_profile_dir_ready(const char *prog, const char *dir) {
  struct stat st;
  if (!make_directories(dir) || stat(dir, &st) != 0) {
    fprintf(stderr, "%s: cannot create %s: %s\n", prog, dir, strerror(errno));
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr, "%s: cannot create %s: %s\n", prog, dir, strerror(ENOTDIR));
    return false;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    fprintf(stderr, "%s: cannot write into %s: %s\n", prog, dir, strerror(errno));
    return false;
  }
  return true;
}

void bench_utc_date(char *out, size_t size) {
  time_t now = time(NULL);
  struct tm utc;
  gmtime_r(&now, &utc);
  strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

double bench_median(double *values, size_t count) {
  plm__sort_doubles(values, count);
  return plm__median_sorted(values, count);
}

json_t *bench_json_document(const char *benchmark, plm_backend backend, const plm_device_info *info,
                            run_size size) {
  const plm_build_info *build = plm_build_info_get();
  json_t *doc = json_object();
  json_object_set_new(doc, "benchmark", json_string(benchmark));
  json_object_set_new(doc, "backend", json_string(plm_backend_name(backend)));
  json_object_set_new(doc, "device", json_string(info->name));
  json_object_set_new(doc, "emulated",
                      json_boolean(backend == PLM_BACKEND_CUDA && build->cuda_emulated));
  json_object_set_new(doc, "commit", json_string(build->git_commit));
  if (backend == PLM_BACKEND_CUDA) {
    char driver[32], runtime[32];
    snprintf(driver, sizeof driver, "%d.%d", info->driver_version / 1000,
             info->driver_version % 1000 / 10);
    snprintf(runtime, sizeof runtime, "%d.%d", info->runtime_version / 1000,
             info->runtime_version % 1000 / 10);
    json_object_set_new(doc, "driver", json_string(driver));
    json_object_set_new(doc, "cuda_runtime", json_string(runtime));
  } else {
    json_object_set_new(doc, "driver", json_null());
    json_object_set_new(doc, "cuda_runtime", json_null());
  }
  json_object_set_new(doc, "plume_version", json_string(build->version));
  json_object_set_new(doc, "build_type", json_string(build->build_type));
  char date[32];
  bench_utc_date(date, sizeof date);
  json_object_set_new(doc, "date", json_string(date));
  json_object_set_new(doc, "run", json_string(bench_run_size_name(size)));
  return doc;
}

bool bench_json_write(const char *prog, json_t *doc, const char *path,
                      bool (*validate)(const char *path)) {
  char why[PATH_MAX + 128];
  plm__file_out out;
  plm_status written = plm__file_out_open(&out, path, why, sizeof why);
  const bool readable_back = written == PLM_OK && !out.direct; /* not a device or a FIFO */
  if (written == PLM_OK) {
    json_dumpf(doc, out.file, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    written = plm__file_out_commit(&out, why, sizeof why); /* a failed write shows here */
  }
  if (written != PLM_OK) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, why);
    return false;
  }
  if (readable_back && !validate(path)) return false;
  printf("\nwrote %s\n", path);
  return true;
}

/* ---- why a run stops ------------------------------------------------------------------- */

static char failure[2048];

bool bench_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(failure, sizeof failure, fmt, ap);
  va_end(ap);
  return false;
}

bool bench_fail_call(const char *where, const char *call, plm_status status) {
  return bench_fail("%s: %s -> %s: %s", where, call, plm_status_str(status), plm_last_error());
}

const char *bench_error(void) {
  return failure;
}

/* ---- the device a benchmark times on ------------------------------------------------ */

bool bench_device_open(plm_backend backend, bench_device *dev) {
  plm_context_config config = {.backend = backend};
  BENCH_CALL("setup", plm_context_create(&config, &dev->ctx));
  BENCH_CALL("setup", plm_context_backend(dev->ctx, &dev->backend));
  BENCH_CALL("setup", plm_context_device_info(dev->ctx, &dev->info));
  BENCH_CALL("setup", plm_context_default_pool(dev->ctx, &dev->pool));
  BENCH_CALL("setup", plm_stream_create(dev->ctx, PLM_STREAM_DEFAULT, &dev->stream));
  BENCH_CALL("setup", plm_event_create(dev->ctx, PLM_EVENT_DEFAULT, &dev->start));
  BENCH_CALL("setup", plm_event_create(dev->ctx, PLM_EVENT_DEFAULT, &dev->end));
  return true;
}

void bench_device_close(bench_device *dev, const char *prog) {
  if (dev->start) plm_event_destroy(dev->start);
  if (dev->end) plm_event_destroy(dev->end);
  if (dev->stream) plm_stream_destroy(dev->stream);
  if (dev->ctx) {
    plm_status status = plm_context_destroy(dev->ctx);
    if (status != PLM_OK)
      fprintf(stderr, "%s: warning: plm_context_destroy -> %s: %s\n", prog, plm_status_str(status),
              plm_last_error());
  }
  *dev = (bench_device){0};
}

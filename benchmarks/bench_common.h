/* benchmarks/bench_common.h: what the benchmark binaries share: the skeleton of their main
 * (options, --help, --validate-json, the checks before a run, the header line, exit
 * codes) and the JSON helpers.
 *
 * A benchmark's main declares its options in a table, the common ones by the macros
 * below and its own beside them, in the order --help lists them, then:
 *
 *   int code = bench_start(&cli, argc, argv);   parse; --help; --validate-json PATH;
 *   if (code != BENCH_RUN) return code;          --json's file and --profile's folder
 *   ... open a context on the chosen backend ...
 *   bench_print_header(prog, backend, &info, size);
 *   ... run, print the table, write the JSON (bench_json_document, bench_json_write) ...
 *   return BENCH_EXIT_OK or BENCH_EXIT_FAILURE;
 *
 * Options are read in order, "--flag value" only (the value is the next argument, whatever
 * it looks like); -h or --help prints the usage and exits 0 where it stands; a bad
 * value, a missing one or an unknown argument prints one line on stderr ("<prog>: ...
 * (see <prog> --help)") and exits 2. Messages start with the benchmark's name. Not
 * thread-safe (a process runs one benchmark).
 */
#ifndef PLUME_BENCH_COMMON_H
#define PLUME_BENCH_COMMON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plume/plume.h"

/* ---- the skeleton of main ------------------------------------------------------------- */

/* Exit codes. A benchmark never fails on timing. */
enum {
  BENCH_EXIT_OK = 0,
  BENCH_EXIT_FAILURE = 1, /* a runtime failure: an API call failed, a check of the results
                             failed, the JSON could not be written */
  BENCH_EXIT_USAGE = 2,   /* bad usage */
  BENCH_RUN = -1          /* bench_start and the parsers: go on */
};

/* How much a run does: full by default, --quick, --smoke (tiny, proves every path). */
typedef enum run_size { RUN_FULL, RUN_QUICK, RUN_SMOKE } run_size;

/* "full", "quick" or "smoke": the JSON's "run" and the header's. */
const char *bench_run_size_name(run_size size);

typedef enum bench_option_kind {
  BENCH_OPTION_END,           /* ends the table */
  BENCH_OPTION_RUN_SIZE,      /* a flag: *(run_size *)target = size */
  BENCH_OPTION_FLAG,          /* a flag: *(bool *)target = true */
  BENCH_OPTION_STRING,        /* *(const char **)target = the value */
  BENCH_OPTION_COUNT,         /* a decimal integer 1..max into *(int64_t *)target */
  BENCH_OPTION_BACKEND,       /* --backend NAME: host, cuda or auto (plm_backend_parse) */
  BENCH_OPTION_JSON,          /* --json PATH: as STRING; the file is checked before the run */
  BENCH_OPTION_PROFILE,       /* --profile DIR: as STRING; DIR is created before the run */
  BENCH_OPTION_VALIDATE_JSON, /* --validate-json PATH: check the file (cli.validate_json), exit */
  BENCH_OPTION_CALLBACK,      /* the benchmark's own: parse(value, target) */
  BENCH_OPTION_HELP           /* -h, --help */
} bench_option_kind;

typedef struct bench_option {
  bench_option_kind kind;
  const char *name;  /* "--op" */
  const char *value; /* the value's name in the usage ("NAME"); NULL: a flag */
  const char *help;  /* lines separated by '\n'; NULL for the common options' own text */
  void *target;      /* where the value goes (see the kinds) */
  int64_t number;    /* RUN_SIZE: the run_size; COUNT: the largest value allowed */
  /* CALLBACK: called with the value (NULL for a flag) and target. Returns BENCH_RUN to go
   * on, or an exit code after printing why: BENCH_EXIT_USAGE for a bad value,
   * BENCH_EXIT_OK for an option that has done the whole job (bench_ops --list-ops). */
  int (*parse)(const char *value, void *target);
} bench_option;

#define BENCH_OPT_RUN_SIZE(name_, size_, target_, help_)                                  \
  {                                                                                       \
    .kind = BENCH_OPTION_RUN_SIZE, .name = (name_), .help = (help_), .target = (target_), \
    .number = (size_)                                                                     \
  }
#define BENCH_OPT_FLAG(name_, target_, help_) \
  { .kind = BENCH_OPTION_FLAG, .name = (name_), .help = (help_), .target = (target_) }
#define BENCH_OPT_STRING(name_, value_, target_, help_)                               \
  {                                                                                   \
    .kind = BENCH_OPTION_STRING, .name = (name_), .value = (value_), .help = (help_), \
    .target = (target_)                                                               \
  }
#define BENCH_OPT_COUNT(name_, max_, target_, help_)                            \
  {                                                                             \
    .kind = BENCH_OPTION_COUNT, .name = (name_), .value = "N", .help = (help_), \
    .target = (target_), .number = (max_)                                       \
  }
#define BENCH_OPT_CALLBACK(name_, value_, parse_, target_, help_)                       \
  {                                                                                     \
    .kind = BENCH_OPTION_CALLBACK, .name = (name_), .value = (value_), .help = (help_), \
    .target = (target_), .parse = (parse_)                                              \
  }
#define BENCH_OPT_BACKEND(target_) \
  { .kind = BENCH_OPTION_BACKEND, .name = "--backend", .value = "NAME", .target = (target_) }
#define BENCH_OPT_JSON(target_) \
  { .kind = BENCH_OPTION_JSON, .name = "--json", .value = "PATH", .target = (target_) }
#define BENCH_OPT_PROFILE(target_, help_)                                               \
  {                                                                                     \
    .kind = BENCH_OPTION_PROFILE, .name = "--profile", .value = "DIR", .help = (help_), \
    .target = (target_)                                                                 \
  }
#define BENCH_OPT_VALIDATE_JSON \
  { .kind = BENCH_OPTION_VALIDATE_JSON, .name = "--validate-json", .value = "PATH" }
#define BENCH_OPT_HELP \
  { .kind = BENCH_OPTION_HELP, .name = "--help" }
#define BENCH_OPT_END \
  { .kind = BENCH_OPTION_END }

typedef struct bench_cli {
  const char *prog;                        /* "bench_ops": the messages' first word */
  const char *usage;                       /* the synopsis and what the benchmark does, printed
                                              before the options */
  const bench_option *options;             /* ends with BENCH_OPT_END */
  bool (*validate_json)(const char *path); /* prints what is wrong to stderr (a schema for
                                              support/result_check.h) */
  /* (optional) After parsing and --validate-json, before --json's file and --profile's
   * folder are checked: options that do not go together. Returns BENCH_RUN, or an exit
   * code after printing why. */
  int (*check)(void *user);
  void *user;
} bench_cli;

/* Parse argv against cli's options and prepare the run: -h/--help prints the usage
 * (stdout) and returns 0; --validate-json PATH checks the file, prints "PATH: a valid
 * <prog> result file" and returns 0, or returns 1; then cli->check; then --json's file
 * must be writable (bench_json_path_writable) and --profile's folder ready
 * (bench_profile_dir_ready), else 1. Returns BENCH_RUN when the benchmark should run. */
int bench_start(const bench_cli *cli, int argc, char **argv);

/* The usage: cli->usage, then "options:" and a line or more per option, from the table. */
void bench_print_usage(const bench_cli *cli, FILE *out);

/* The first line of the table on stdout: "<prog>: <backend> backend, <device>; plume
 * <version> (commit <commit>, <build type>); <size> run". */
void bench_print_header(const char *prog, plm_backend backend, const plm_device_info *info,
                        run_size size);

/* ---- why a run stops ------------------------------------------------------------------- */

/* A benchmark's functions return false when the run must stop, after bench_fail recorded
 * why; its main prints "<prog>: " and bench_error() on stderr and exits
 * BENCH_EXIT_FAILURE. The last message recorded is kept (up to 2 KiB). */

/* Record why the run stops; always returns false, so that a caller can
 * `return bench_fail(...)`. */
bool bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* bench_fail with "where: call -> status: plm_last_error()". */
bool bench_fail_call(const char *where, const char *call, plm_status status);

/* The message bench_fail recorded last ("" before any). */
const char *bench_error(void);

/* Run a plume call; on a failure, return bench_fail_call(where, the call's text, status). */
#define BENCH_CALL(where, expr)                                                                 \
  do {                                                                                          \
    plm_status bench_call_status_ = (expr);                                                     \
    if (bench_call_status_ != PLM_OK) return bench_fail_call(where, #expr, bench_call_status_); \
  } while (0)

/* ---- the device a benchmark times on ------------------------------------------------ */

/* A context on the chosen backend with its default pool, a stream and a pair of events to
 * time it with. */
typedef struct bench_device {
  plm_context *ctx;
  plm_backend backend; /* the one auto chose */
  plm_device_info info;
  plm_pool *pool; /* the context's default pool */
  plm_stream *stream;
  plm_event *start, *end;
} bench_device;

/* Open *dev (zeroed by the caller) on backend. false (why in bench_error()) when a call
 * fails; bench_device_close then releases what was opened. */
bool bench_device_open(plm_backend backend, bench_device *dev);

/* Release what bench_device_open opened; a failure to destroy the context is a warning on
 * stderr, prefixed by prog. */
void bench_device_close(bench_device *dev, const char *prog);

/* ---- files and JSON --------------------------------------------------------------------- */

/* Learn before a run, not after it, that the JSON at path cannot be written: where the
 * library's one writer would write it (streams/file.h: through links, a device or FIFO
 * in place; a socket or a folder refused), whether the process may (the device, else
 * the target's folder). Creates and opens nothing. Prints "<prog>: cannot write PATH:
 * reason" and returns false when it cannot. */
bool bench_json_path_writable(const char *prog, const char *path);

/* Learn before a run, not after it, that the profile directory dir (--profile) cannot
 * be written: create it and its missing parents (as mkdir -p does), then check that it
 * is a directory the process may write into. Prints "<prog>: cannot create DIR:
 * reason" or "<prog>: cannot write into DIR: reason" and returns false when it cannot.
 * What was created stays (plm_profiler_write writes into it after the run). */
bool bench_profile_dir_ready(const char *prog, const char *dir);

/* The current UTC time as "YYYY-MM-DDTHH:MM:SSZ" in out (at least 21 bytes). */
void bench_utc_date(char *out, size_t size);

/* A new JSON object holding the keys every benchmark's result file starts with:
 * benchmark (its name: "ops", "pool", ...), backend, device, emulated (true when the
 * cuda device is the CUDA emulator: its times mean nothing), commit, driver and
 * cuda_runtime ("13.0"; null on host), plume_version, build_type, date (UTC) and run
 * (bench_run_size_name: "full", "quick" or "smoke"). */
json_t *bench_json_document(const char *benchmark, plm_backend backend, const plm_device_info *info,
                            run_size size);

/* Write doc to path through the library's one writer (streams/file.h: atomically,
 * through links; a device or FIFO in place), re-read it with validate (which prints what
 * is wrong; not a device or FIFO, which cannot be read back) and print "wrote PATH".
 * Prints "<prog>: cannot write PATH: reason" (with strerror) and returns false when it
 * cannot; doc stays the caller's. */
bool bench_json_write(const char *prog, json_t *doc, const char *path,
                      bool (*validate)(const char *path));

/* The median of count doubles (sorts them in place): the middle one or the mean of the
 * two middle ones (profile/stats.h's plm__median_sorted); 0 for none. */
double bench_median(double *values, size_t count);

#endif /* PLUME_BENCH_COMMON_H */

/* apps/op_commands.c: `plume op <name> ...` (apps/op_commands.h).
 *
 * Each op is one entry of `ops` below: its name, its help text, a function that
 * takes its own options, and two thin wrappers around the library's _output and
 * enqueue functions. Everything else (the common options, files, context, stream,
 * pool, copies, timing, exit codes) is shared.
 */
#define _POSIX_C_SOURCE 200809L

#include "apps/op_commands.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apps/image_io.h"
#include "plume/plume.h"

enum { EXIT_RUNTIME_FAILURE = 1, EXIT_USAGE = 2 };
enum { ERROR_SIZE = IMAGE_ERROR_SIZE };

/* Room for any op's parsed options. */
typedef union op_args {
  max_align_t align;
  unsigned char bytes[256];
} op_args;

typedef struct op_spec {
  const char *name;
  const char *summary;  /* one line, for plume --help */
  const char *synopsis; /* the op's own options, as in a usage line */
  const char *options;  /* one line per option of its own, for plume op <name> --help */
  /* Take one of the op's options: flag (e.g. "--value") with its value. Called once
   * more with flag NULL after the last option, to check that the required ones were
   * given. args starts zeroed. Returns 0 when taken, 1 when flag is not one of this
   * op's options, -1 on a bad or missing value (with a message in err). */
  int (*option)(void *args, const char *flag, const char *value, char *err, size_t err_size);
  plm_status (*output)(const plm_tensor *in, const void *args, plm_shape *out);
  plm_status (*enqueue)(plm_stream *stream, const plm_tensor *in, const void *args,
                        plm_tensor *out);
} op_spec;

/* ---- threshold ----------------------------------------------------------------------- */

typedef struct threshold_args {
  plm_threshold_params params;
  bool have_value;
} threshold_args;
_Static_assert(sizeof(threshold_args) <= sizeof(op_args), "op_args is too small");

static bool parse_double(const char *text, double *value) {
  char *end = NULL;
  errno = 0;
  *value = strtod(text, &end);
  return end != text && *end == '\0' && errno != ERANGE;
}

static int threshold_option(void *args, const char *flag, const char *value, char *err,
                            size_t err_size) {
  threshold_args *a = args;
  if (!flag) {
    if (a->have_value) return 0;
    snprintf(err, err_size, "--value is required");
    return -1;
  }
  if (strcmp(flag, "--value") == 0) {
    if (!parse_double(value, &a->params.value)) {
      snprintf(err, err_size, "--value '%s' is not a number", value);
      return -1;
    }
    a->have_value = true;
    return 0;
  }
  if (strcmp(flag, "--cmp") == 0) {
    static const char *const names[] = {"gt", "ge", "lt", "le"};
    static const plm_compare compares[] = {PLM_COMPARE_GT, PLM_COMPARE_GE, PLM_COMPARE_LT,
                                           PLM_COMPARE_LE};
    for (size_t i = 0; i < 4; i++)
      if (strcmp(value, names[i]) == 0) {
        a->params.compare = compares[i];
        return 0;
      }
    snprintf(err, err_size, "--cmp '%s' is not one of gt, ge, lt, le", value);
    return -1;
  }
  return 1;
}

static plm_status threshold_output(const plm_tensor *in, const void *args, plm_shape *out) {
  return plm_threshold_output(in, &((const threshold_args *)args)->params, out);
}

static plm_status threshold_enqueue(plm_stream *stream, const plm_tensor *in, const void *args,
                                    plm_tensor *out) {
  return plm_threshold(stream, in, &((const threshold_args *)args)->params, out);
}

/* ---- the table ----------------------------------------------------------------------- */

static const op_spec ops[] = {
    {.name = "threshold",
     .summary = "out = (in CMP T) as a u8 0/1 mask; u8, u16 or f32 input",
     .synopsis = "--value T [--cmp gt|ge|lt|le]",
     .options = "  --value T             the threshold (required; compared in double precision)\n"
                "  --cmp gt|ge|lt|le     the comparison (default gt: in > T)\n",
     .option = threshold_option,
     .output = threshold_output,
     .enqueue = threshold_enqueue},
};

enum { OP_COUNT = sizeof ops / sizeof ops[0] };

/* ---- help ---------------------------------------------------------------------------- */

static const char common_options[] =
    "  --in PATH             input image: .npy (2-D or 3-D; u8, u16, i32, f32, f64 read as\n"
    "                        f32), PGM (P5, 8/16-bit) or grayscale PNG (8/16-bit)\n"
    "  --out PATH            output .npy (written atomically)\n"
    "  --backend B           host, cuda or auto (default auto; PLUME_BACKEND overrides auto)\n"
    "  --repeat N            run the op N more times after a warm-up and print\n"
    "                        'time_ms median=M min=A max=B' on stderr\n"
    "  -h, --help            show this help\n";

void op_commands_print_summary(FILE *out) {
  for (int i = 0; i < OP_COUNT; i++) fprintf(out, "    %-12s %s\n", ops[i].name, ops[i].summary);
}

static void print_op_usage(FILE *out, const op_spec *op) {
  fprintf(out, "usage: plume op %s --in IN --out OUT %s [--backend host|cuda|auto] [--repeat N]\n",
          op->name, op->synopsis);
  fprintf(out, "\n%s\n\noptions of %s:\n%s\ncommon options:\n%s", op->summary, op->name,
          op->options, common_options);
}

static void print_usage(FILE *out) {
  fprintf(out,
          "usage: plume op <name> --in IN --out OUT [options] [--backend host|cuda|auto] "
          "[--repeat N]\n\nops:\n");
  op_commands_print_summary(out);
  fprintf(out, "\ncommon options:\n%s\nplume op <name> --help describes an op's options.\n",
          common_options);
}

/* ---- timing -------------------------------------------------------------------------- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ---- running an op ------------------------------------------------------------------- */

typedef struct op_run {
  const op_spec *op;
  op_args args;
  const char *in_path, *out_path;
  plm_context_config config;
  long repeat; /* 0: run once, untimed */
} op_run;

/* Parse the arguments after the op's name. Returns -1 to go on, else an exit code. */
static int parse_arguments(op_run *run, int argc, char **argv) {
  const char *prefix = run->op->name;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      print_op_usage(stdout, run->op);
      return 0;
    }
    if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
      fprintf(stderr, "plume op %s: unexpected argument '%s' (see plume op %s --help)\n", prefix,
              arg, prefix);
      return EXIT_USAGE;
    }
    /* --flag value or --flag=value */
    char flag[64];
    const char *value = NULL;
    const char *equals = strchr(arg, '=');
    size_t flag_length = equals ? (size_t)(equals - arg) : strlen(arg);
    if (flag_length >= sizeof flag) {
      fprintf(stderr, "plume op %s: unknown option '%.40s...'\n", prefix, arg);
      return EXIT_USAGE;
    }
    memcpy(flag, arg, flag_length);
    flag[flag_length] = '\0';
    if (equals)
      value = equals + 1;
    else if (i + 1 < argc)
      value = argv[++i];
    else {
      fprintf(stderr, "plume op %s: option %s needs a value\n", prefix, flag);
      return EXIT_USAGE;
    }
    if (strcmp(flag, "--in") == 0) {
      run->in_path = value;
    } else if (strcmp(flag, "--out") == 0) {
      run->out_path = value;
    } else if (strcmp(flag, "--backend") == 0) {
      if (plm_backend_parse(value, &run->config.backend) != PLM_OK) {
        fprintf(stderr, "plume op %s: --backend '%s' is not host, cuda or auto\n", prefix, value);
        return EXIT_USAGE;
      }
    } else if (strcmp(flag, "--repeat") == 0) {
      char *end = NULL;
      errno = 0;
      run->repeat = strtol(value, &end, 10);
      if (end == value || *end != '\0' || errno == ERANGE || run->repeat < 1 ||
          run->repeat > 1000000) {
        fprintf(stderr, "plume op %s: --repeat '%s' is not a count from 1 to 1000000\n", prefix,
                value);
        return EXIT_USAGE;
      }
    } else {
      char err[ERROR_SIZE] = "";
      int taken = run->op->option(&run->args, flag, value, err, sizeof err);
      if (taken == 1) {
        fprintf(stderr, "plume op %s: unknown option '%s' (see plume op %s --help)\n", prefix, flag,
                prefix);
        return EXIT_USAGE;
      }
      if (taken < 0) {
        fprintf(stderr, "plume op %s: %s\n", prefix, err);
        return EXIT_USAGE;
      }
    }
  }
  if (!run->in_path || !run->out_path) {
    fprintf(stderr, "plume op %s: %s is required (see plume op %s --help)\n", prefix,
            !run->in_path ? "--in" : "--out", prefix);
    return EXIT_USAGE;
  }
  char err[ERROR_SIZE] = "";
  if (run->op->option(&run->args, NULL, NULL, err, sizeof err) != 0) {
    fprintf(stderr, "plume op %s: %s\n", prefix, err);
    return EXIT_USAGE;
  }
  return -1;
}

/* image_read's allocator: pinned staging memory of the context. */
static void *pinned_alloc(void *user, size_t bytes) {
  void *ptr = NULL;
  return plm_host_alloc(user, bytes, &ptr) == PLM_OK ? ptr : NULL;
}

static void pinned_free(void *user, void *ptr) {
  plm_host_free(user, ptr);
}

/* The resources of one run, released by release_run whatever was reached. */
typedef struct op_state {
  plm_context *ctx;
  plm_stream *stream;
  plm_pool *pool;
  image input;
  image_allocator pinned;
  plm_tensor in, out;
  bool have_in, have_out;
  void *host_out;
  double *times;
} op_state;

static int release_run(op_state *s, const char *prefix, int exit_code) {
  if (s->have_in) plm_tensor_free(s->pool, s->stream, &s->in);
  if (s->have_out) plm_tensor_free(s->pool, s->stream, &s->out);
  if (s->stream) {
    /* The stream-ordered frees and any copy still using the host buffers finish here. */
    plm_stream_synchronize(s->stream);
    plm_stream_destroy(s->stream);
  }
  image_free(&s->input, &s->pinned);
  if (s->host_out) plm_host_free(s->ctx, s->host_out);
  free(s->times);
  if (s->ctx && plm_context_destroy(s->ctx) != PLM_OK && exit_code == 0) {
    fprintf(stderr, "plume op %s: %s\n", prefix, plm_last_error());
    exit_code = EXIT_RUNTIME_FAILURE;
  }
  return exit_code;
}

/* A library call failed: print its message; exit 2 when the caller's input was at
 * fault (invalid argument), else 1. */
static int library_failure(op_state *s, const char *prefix, plm_status status) {
  fprintf(stderr, "plume op %s: %s\n", prefix, plm_last_error());
  return release_run(s, prefix, status == PLM_ERR_INVALID_ARG ? EXIT_USAGE : EXIT_RUNTIME_FAILURE);
}

/* The op once, timed between stream synchronisations when times is not NULL. */
static plm_status run_op_once(const op_run *run, op_state *s, double *time) {
  plm_status status = PLM_OK;
  if (time) status = plm_stream_synchronize(s->stream);
  double start = now_ms();
  if (status == PLM_OK) status = run->op->enqueue(s->stream, &s->in, &run->args, &s->out);
  if (status == PLM_OK && time) status = plm_stream_synchronize(s->stream);
  if (time) *time = now_ms() - start;
  return status;
}

static int execute(const op_run *run) {
  const char *prefix = run->op->name;
  op_state s = {0};
  char err[ERROR_SIZE] = "";
  plm_status status = plm_context_create(&run->config, &s.ctx);
  if (status != PLM_OK) return library_failure(&s, prefix, status);
  s.pinned = (image_allocator){pinned_alloc, pinned_free, s.ctx};
  status = image_read(run->in_path, &s.pinned, &s.input, err, sizeof err);
  if (status != PLM_OK) {
    fprintf(stderr, "plume op %s: %s\n", prefix, err);
    return release_run(&s, prefix,
                       status == PLM_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME_FAILURE : EXIT_USAGE);
  }
  if ((status = plm_stream_create(s.ctx, 0, &s.stream)) != PLM_OK ||
      (status = plm_context_default_pool(s.ctx, &s.pool)) != PLM_OK)
    return library_failure(&s, prefix, status);
  status = plm_tensor_alloc(s.pool, s.stream, s.input.dtype, s.input.ndim, s.input.dims, &s.in);
  if (status != PLM_OK) return library_failure(&s, prefix, status);
  s.have_in = true;
  plm_shape shape;
  status = run->op->output(&s.in, &run->args, &shape);
  if (status != PLM_OK) return library_failure(&s, prefix, status);
  status = plm_tensor_alloc(s.pool, s.stream, shape.dtype, shape.ndim, shape.dims, &s.out);
  if (status != PLM_OK) return library_failure(&s, prefix, status);
  s.have_out = true;
  size_t out_bytes = plm_tensor_bytes(&s.out);
  if ((status = plm_host_alloc(s.ctx, out_bytes, &s.host_out)) != PLM_OK ||
      (status = plm_stream_memcpy(s.stream, s.in.data, s.input.data, image_bytes(&s.input),
                                  PLM_COPY_HOST_TO_DEVICE)) != PLM_OK)
    return library_failure(&s, prefix, status);

  /* One run (the warm-up when timing), then the timed ones. */
  if ((status = run_op_once(run, &s, NULL)) != PLM_OK) return library_failure(&s, prefix, status);
  if (run->repeat > 0) {
    s.times = malloc((size_t)run->repeat * sizeof *s.times);
    if (!s.times) {
      fprintf(stderr, "plume op %s: out of memory for %ld timings\n", prefix, run->repeat);
      return release_run(&s, prefix, EXIT_RUNTIME_FAILURE);
    }
    for (long i = 0; i < run->repeat; i++)
      if ((status = run_op_once(run, &s, &s.times[i])) != PLM_OK)
        return library_failure(&s, prefix, status);
  }
  if ((status = plm_stream_memcpy(s.stream, s.host_out, s.out.data, out_bytes,
                                  PLM_COPY_DEVICE_TO_HOST)) != PLM_OK ||
      (status = plm_stream_synchronize(s.stream)) != PLM_OK)
    return library_failure(&s, prefix, status);
  if (run->repeat > 0) {
    qsort(s.times, (size_t)run->repeat, sizeof *s.times, compare_doubles);
    long n = run->repeat;
    double median = n % 2 ? s.times[n / 2] : 0.5 * (s.times[n / 2 - 1] + s.times[n / 2]);
    fprintf(stderr, "time_ms median=%.4f min=%.4f max=%.4f\n", median, s.times[0], s.times[n - 1]);
  }

  image result = {.dtype = shape.dtype, .ndim = shape.ndim, .data = s.host_out};
  memcpy(result.dims, shape.dims, sizeof result.dims);
  status = image_write_npy(run->out_path, &result, err, sizeof err);
  if (status != PLM_OK) {
    fprintf(stderr, "plume op %s: %s\n", prefix, err);
    return release_run(&s, prefix,
                       status == PLM_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME_FAILURE : EXIT_USAGE);
  }
  return release_run(&s, prefix, 0);
}

int op_command_main(int argc, char **argv) {
  if (argc < 1) {
    print_usage(stderr);
    return EXIT_USAGE;
  }
  if (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0) {
    print_usage(stdout);
    return 0;
  }
  const op_spec *op = NULL;
  for (int i = 0; i < OP_COUNT; i++)
    if (strcmp(argv[0], ops[i].name) == 0) op = &ops[i];
  if (!op) {
    fprintf(stderr, "plume op: unknown op '%s' (see plume op --help)\n", argv[0]);
    return EXIT_USAGE;
  }
  op_run run = {.op = op};
  int exit_code = parse_arguments(&run, argc - 1, argv + 1);
  if (exit_code >= 0) return exit_code;
  return execute(&run);
}

/* benchmarks/bench_matmul.c: matmul's precisions against each other and against
 * cuBLAS, over sizes, to place PRECISION_AUTO's switch to the tensor cores.
 *
 *   bench_matmul [--quick | --smoke] [--backend host|cuda|auto] [--json PATH]
 *   bench_matmul --validate-json PATH
 *
 * Shapes (M x N x K, row-major f32, no bias, no activation: cuBLAS's job exactly):
 * squares of 32 to 4096 (--quick: to 1024, --smoke: 32 and 64), and lstm_cell's gate
 * product at the seeds' batch 32 and at batch 4096 (N = 4 hidden = 512, K = input +
 * hidden = 192). Variants: plume at fp32, tf32, bf16 and auto; on cuda, cuBLAS SGEMM
 * (default math: CUDA cores) and cuBLAS SGEMM with TF32 tensor-op math, on the same
 * stream, loaded at run time (benchmarks/cublas_loader.h; skipped, with the reason,
 * where it is missing).
 *
 * Timing. Per shape, every variant runs twice to warm up, then `rounds` rounds (full
 * 15, quick 9, smoke 3; five times as many where every variant's second warm-up run
 * took under 1 ms: the first may carry cuBLAS's or a module's lazy start),
 * each running every variant once, in an order rotated by one each round, so that a change of the
 * machine's load between rounds reaches all of them alike. Each run is bracketed by events on the
 * stream (device time on cuda, the host stream's execution time on host); reported: median, min and
 * max in µs, GFLOP/s (2·M·N·K / median) and the median against plume fp32 and cuBLAS's.
 *
 * Crossover. For tf32 and bf16: the smallest work M·N·K from which the precision's
 * median is at most WIN (0.95) of fp32's at that shape and at every larger one, so that
 * a tie within the timing's noise is no win (JSON null when the largest shape does not
 * win: no crossover among these shapes; integers, exact, as PLM_MATMUL_AUTO_TF32_MIN_WORK
 * takes them). Printed beside
 * PLM_MATMUL_AUTO_TF32_MIN_WORK, AUTO's current rule (plume/matmul.h), with the shapes
 * where AUTO's choice is more than 10% slower than the better of fp32 and tf32. On host
 * the precisions run the same kernel on rounded inputs and AUTO stays fp32, so no
 * crossover is expected there: the rule is for the GPU.
 *
 * The benchmark never fails on timing. Exit codes: 0 success, 1 a runtime failure,
 * 2 bad usage.
 */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "cublas_loader.h"
#include "plume/plume.h"
#include "support/result_check.h"
#include "kernels/common/splitmix64.h"

typedef struct options {
  run_size size;
  plm_backend backend;
  const char *json_path; /* NULL: no JSON */
} options;

static const char usage[] =
    "usage: bench_matmul [--quick | --smoke] [--backend host|cuda|auto] [--json PATH]\n"
    "       bench_matmul --validate-json PATH\n"
    "\n"
    "matmul at fp32, tf32, bf16 and auto, and cuBLAS SGEMM (CUDA cores and TF32) on\n"
    "cuda, over square sizes 32..4096 and lstm_cell's gate product: medians of\n"
    "interleaved event-timed rounds, GFLOP/s, ratios, and the work M*N*K from which\n"
    "tensor cores pay (AUTO's rule).\n";

/* ---- shapes and variants ---------------------------------------------------------------- */

typedef struct shape {
  int64_t m, n, k;
  const char *note; /* NULL, or what the shape stands for */
} shape;

static const shape shapes[] = {
    {32, 32, 32, NULL},
    {64, 64, 64, NULL},
    {128, 128, 128, NULL},
    {256, 256, 256, NULL},
    {512, 512, 512, NULL},
    {1024, 1024, 1024, NULL},
    {2048, 2048, 2048, NULL},
    {4096, 4096, 4096, NULL},
    {32, 512, 192, "lstm_cell batch 32"},
    {4096, 512, 192, "lstm_cell batch 4096"},
};
enum { SHAPE_COUNT = sizeof shapes / sizeof shapes[0] };

typedef enum variant {
  PLUME_FP32,
  PLUME_TF32,
  PLUME_BF16,
  PLUME_AUTO,
  CUBLAS_FP32,
  CUBLAS_TF32,
  VARIANTS
} variant;

static const char *const variant_names[VARIANTS] = {"fp32", "tf32",        "bf16",
                                                    "auto", "cublas_fp32", "cublas_tf32"};
static const plm_precision precisions[] = {PLM_PRECISION_FP32, PLM_PRECISION_TF32,
                                           PLM_PRECISION_BF16, PLM_PRECISION_AUTO};

/* Whether the shape runs at this size of run. */
static bool shape_runs(const shape *s, run_size size) {
  int64_t largest = size == RUN_SMOKE ? 64 : size == RUN_QUICK ? 1024 : 4096;
  if (s->note) return size != RUN_SMOKE;
  return s->m <= largest;
}

/* ---- environment -------------------------------------------------------------------------- */

typedef struct bench_env {
  options opt;
  bench_device dev;
  cublas_peer cublas;
  bool has_cublas;
} bench_env;

typedef struct measured {
  const shape *shape;
  int rounds;
  bool ran[VARIANTS];
  double median_us[VARIANTS], min_us[VARIANTS], max_us[VARIANTS];
} measured;

static uint64_t rng_state = 20261125;

static float random_unit(void) {
  uint64_t z = splitmix64_next(&rng_state);
  return (float)((double)(z >> 40) / (double)(UINT64_C(1) << 24)) - 0.5f;
}

/* An (rows, cols) f32 tensor from the pool, random in [-0.5, 0.5), or zeros. */
static bool make_tensor(bench_env *env, int64_t rows, int64_t cols, bool random, plm_tensor *out) {
  const int64_t dims[2] = {rows, cols};
  BENCH_CALL("setup",
             plm_tensor_alloc(env->dev.pool, env->dev.stream, PLM_DTYPE_F32, 2, dims, out));
  size_t count = (size_t)(rows * cols);
  float *host = calloc(count, sizeof *host);
  if (!host) return bench_fail("out of host memory for a %zu-float operand", count);
  if (random)
    for (size_t i = 0; i < count; i++) host[i] = random_unit();
  plm_status status = plm_stream_memcpy(env->dev.stream, out->data, host, count * sizeof *host,
                                        PLM_COPY_HOST_TO_DEVICE);
  if (status == PLM_OK) status = plm_stream_synchronize(env->dev.stream);
  free(host);
  BENCH_CALL("setup", status);
  return true;
}

typedef struct operands {
  plm_tensor a, b, out;
} operands;

static bool run_variant(bench_env *env, variant v, operands *o) {
  if (v >= CUBLAS_FP32) {
    cublas_math math = v == CUBLAS_FP32 ? CUBLAS_MATH_FP32 : CUBLAS_MATH_TF32;
    if (!cublas_peer_sgemm(&env->cublas, math, (int)o->a.dims[0], (int)o->b.dims[1],
                           (int)o->a.dims[1], o->a.data, o->b.data, o->out.data))
      return bench_fail("%s", env->cublas.why);
    return true;
  }
  plm_matmul_params params = {.precision = precisions[v], .activation = PLM_ACTIVATION_NONE};
  BENCH_CALL("matmul", plm_matmul(env->dev.stream, &o->a, &o->b, NULL, &params, &o->out));
  return true;
}

static bool time_variant(bench_env *env, variant v, operands *o, double *us) {
  BENCH_CALL("timing", plm_event_record(env->dev.start, env->dev.stream));
  if (!run_variant(env, v, o)) return false;
  BENCH_CALL("timing", plm_event_record(env->dev.end, env->dev.stream));
  BENCH_CALL("timing", plm_event_synchronize(env->dev.end));
  float ms = 0;
  BENCH_CALL("timing", plm_event_elapsed_ms(env->dev.start, env->dev.end, &ms));
  *us = (double)ms * 1000.0;
  return true;
}

/* Runs under a millisecond swing with the host stream's hand-off and the launch
 * latency: they get SHORT_FACTOR times the rounds. */
enum { FULL_ROUNDS = 15, SHORT_FACTOR = 5, MAX_ROUNDS = FULL_ROUNDS * SHORT_FACTOR };

static int rounds_of(run_size size) {
  return size == RUN_SMOKE ? 3 : size == RUN_QUICK ? 9 : FULL_ROUNDS;
}

static bool measure_shape(bench_env *env, const shape *s, measured *r) {
  *r = (measured){.shape = s};
  operands o = {0};
  bool ok = make_tensor(env, s->m, s->k, true, &o.a) && make_tensor(env, s->k, s->n, true, &o.b) &&
            make_tensor(env, s->m, s->n, false, &o.out);
  int count = env->has_cublas ? VARIANTS : CUBLAS_FP32;
  static double times[VARIANTS][MAX_ROUNDS];
  double slowest_warm_up = 0; /* of the second runs */
  for (int v = 0; ok && v < count; v++)
    for (int i = 0; ok && i < 2; i++) {
      double us = 0;
      ok = time_variant(env, (variant)v, &o, &us);
      if (i == 1) slowest_warm_up = fmax(slowest_warm_up, us);
    }
  const int rounds = rounds_of(env->opt.size) * (slowest_warm_up < 1000.0 ? SHORT_FACTOR : 1);
  r->rounds = rounds;
  for (int round = 0; ok && round < rounds; round++)
    for (int i = 0; ok && i < count; i++) {
      int v = (i + round) % count;
      ok = time_variant(env, (variant)v, &o, &times[v][round]);
    }
  for (int v = 0; ok && v < count; v++) {
    r->ran[v] = true;
    r->min_us[v] = r->max_us[v] = times[v][0];
    for (int i = 1; i < rounds; i++) {
      r->min_us[v] = fmin(r->min_us[v], times[v][i]);
      r->max_us[v] = fmax(r->max_us[v], times[v][i]);
    }
    r->median_us[v] = bench_median(times[v], (size_t)rounds);
  }
  plm_tensor *tensors[] = {&o.a, &o.b, &o.out};
  for (int t = 0; t < 3; t++)
    if (tensors[t]->data) plm_tensor_free(env->dev.pool, env->dev.stream, tensors[t]);
  plm_stream_synchronize(env->dev.stream);
  return ok;
}

/* ---- results -------------------------------------------------------------------------------- */

static int64_t work_of(const shape *s) {
  return s->m * s->n * s->k;
}

static double gflops(const shape *s, double us) {
  return us > 0 ? 2.0 * (double)work_of(s) / (us * 1e3) : 0.0;
}

/* A variant beats fp32 where its median is at most this fraction of fp32's. */
#define WIN 0.95

/* The smallest work from which variant v beats fp32 at every shape of at least that
 * work (the measured ones, by work); -1 when the largest does not. */
static int64_t crossover(const measured *rs, int count, variant v) {
  int order[SHAPE_COUNT];
  for (int i = 0; i < count; i++) order[i] = i;
  for (int i = 1; i < count; i++) /* by work, a handful of shapes */
    for (int j = i; j > 0 && work_of(rs[order[j]].shape) < work_of(rs[order[j - 1]].shape); j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  int64_t from = -1;
  for (int i = count - 1; i >= 0; i--) {
    const measured *r = &rs[order[i]];
    if (!(r->median_us[v] <= WIN * r->median_us[PLUME_FP32])) break;
    from = work_of(r->shape);
  }
  return from;
}

static void shape_label(const shape *s, char *out, size_t room) {
  snprintf(out, room, "%lldx%lldx%lld", (long long)s->m, (long long)s->n, (long long)s->k);
}

static void print_results(const bench_env *env, const measured *rs, int count) {
  int variants = env->has_cublas ? VARIANTS : CUBLAS_FP32;
  printf("%-16s", "M x N x K");
  for (int v = 0; v < variants; v++) printf(" %13s", variant_names[v]);
  printf("   (median us, GFLOP/s)\n");
  for (int i = 0; i < count; i++) {
    char label[48];
    shape_label(rs[i].shape, label, sizeof label);
    printf("%-16s", label);
    for (int v = 0; v < variants; v++)
      printf(" %7.1f %5.0f", rs[i].median_us[v], gflops(rs[i].shape, rs[i].median_us[v]));
    if (rs[i].shape->note) printf("  %s", rs[i].shape->note);
    printf("\n");
  }
  printf("\nagainst plume fp32 (median / median; below 1 is faster)%s\n",
         env->has_cublas ? ", and plume fp32 / cuBLAS fp32, plume tf32 / cuBLAS tf32" : "");
  for (int i = 0; i < count; i++) {
    char label[48];
    shape_label(rs[i].shape, label, sizeof label);
    const double *m = rs[i].median_us;
    printf("%-16s tf32 %.2f  bf16 %.2f  auto %.2f", label, m[PLUME_TF32] / m[PLUME_FP32],
           m[PLUME_BF16] / m[PLUME_FP32], m[PLUME_AUTO] / m[PLUME_FP32]);
    if (env->has_cublas)
      printf("   fp32/cuBLAS %.2f  tf32/cuBLAS %.2f", m[PLUME_FP32] / m[CUBLAS_FP32],
             m[PLUME_TF32] / m[CUBLAS_TF32]);
    printf("\n");
  }
  printf(
      "\ncrossover (smallest M*N*K from which it takes at most %.2f of fp32's time at every "
      "larger shape):\n",
      WIN);
  for (variant v = PLUME_TF32; v <= PLUME_BF16; v++) {
    int64_t from = crossover(rs, count, v);
    if (from < 0)
      printf("  %s: none among these shapes\n", variant_names[v]);
    else
      printf("  %s: %lld (%.0f^3)\n", variant_names[v], (long long)from, cbrt((double)from));
  }
  printf("  AUTO's rule: tf32 from %lld (%.0f^3) on cuda, fp32 on host\n",
         (long long)PLM_MATMUL_AUTO_TF32_MIN_WORK, cbrt((double)PLM_MATMUL_AUTO_TF32_MIN_WORK));
  /* On host AUTO is fp32's very kernel: a difference there is the timing's noise. */
  for (int i = 0; env->dev.backend == PLM_BACKEND_CUDA && i < count; i++) {
    const double *m = rs[i].median_us;
    double best = fmin(m[PLUME_FP32], m[PLUME_TF32]);
    if (m[PLUME_AUTO] > 1.1 * best) {
      char label[48];
      shape_label(rs[i].shape, label, sizeof label);
      printf("  AUTO is %.2fx the better of fp32 and tf32 at %s\n", m[PLUME_AUTO] / best, label);
    }
  }
  if (!env->has_cublas) printf("cuBLAS: skipped: %s\n", env->cublas.why);
}

static json_t *work_or_null(int64_t work) {
  return work >= 0 ? json_integer(work) : json_null();
}

static json_t *document_json(const bench_env *env, const measured *rs, int count) {
  json_t *doc = bench_json_document("matmul", env->dev.backend, &env->dev.info, env->opt.size);
  json_object_set_new(doc, "cublas", env->has_cublas ? json_true() : json_false());
  if (!env->has_cublas) json_object_set_new(doc, "cublas_why", json_string(env->cublas.why));
  json_t *list = json_array();
  for (int i = 0; i < count; i++) {
    const shape *s = rs[i].shape;
    json_t *o = json_object();
    json_object_set_new(o, "m", json_integer(s->m));
    json_object_set_new(o, "n", json_integer(s->n));
    json_object_set_new(o, "k", json_integer(s->k));
    json_object_set_new(o, "work", json_integer(work_of(s)));
    json_object_set_new(o, "rounds", json_integer(rs[i].rounds));
    if (s->note) json_object_set_new(o, "note", json_string(s->note));
    json_t *variants = json_object();
    for (int v = 0; v < VARIANTS; v++) {
      if (!rs[i].ran[v]) continue;
      json_t *t = json_object();
      json_object_set_new(t, "median_us", json_real(rs[i].median_us[v]));
      json_object_set_new(t, "min_us", json_real(rs[i].min_us[v]));
      json_object_set_new(t, "max_us", json_real(rs[i].max_us[v]));
      json_object_set_new(t, "gflop_per_s", json_real(gflops(s, rs[i].median_us[v])));
      json_object_set_new(variants, variant_names[v], t);
    }
    json_object_set_new(o, "variants", variants);
    json_array_append_new(list, o);
  }
  json_object_set_new(doc, "results", list);
  json_t *cross = json_object();
  json_object_set_new(cross, "tf32_from_work", work_or_null(crossover(rs, count, PLUME_TF32)));
  json_object_set_new(cross, "bf16_from_work", work_or_null(crossover(rs, count, PLUME_BF16)));
  json_object_set_new(cross, "auto_rule_tf32_min_work",
                      json_integer(PLM_MATMUL_AUTO_TF32_MIN_WORK));
  json_object_set_new(doc, "crossover", cross);
  return doc;
}

/* The crossover's exact works (integers, or null for none) and each result's work and
 * plume variants' medians. */
static bool check_matmul(json_t *doc, char *problem, size_t size) {
  json_t *cross = json_object_get(doc, "crossover");
  if (!json_is_object(cross))
    return result_problem(problem, size, "\"crossover\" is not an object");
  static const char *const keys[] = {"tf32_from_work", "bf16_from_work", "auto_rule_tf32_min_work"};
  for (int k = 0; k < 3; k++) {
    json_t *work = json_object_get(cross, keys[k]);
    if (!json_is_integer(work) && !(k < 2 && json_is_null(work)))
      return result_problem(problem, size, "a crossover work is not an integer (or null)");
  }
  json_t *list = json_object_get(doc, "results");
  for (size_t i = 0; i < json_array_size(list); i++) {
    if (!json_is_integer(json_object_get(json_array_get(list, i), "work")))
      return result_problem(problem, size, "a result's work is not an integer");
    json_t *variants = json_object_get(json_array_get(list, i), "variants");
    for (int v = 0; v <= PLUME_AUTO; v++) {
      json_t *median = json_object_get(json_object_get(variants, variant_names[v]), "median_us");
      if (!json_is_number(median) || !(json_number_value(median) >= 0))
        return result_problem(problem, size, "a result lacks a plume variant's median_us");
    }
  }
  return true;
}

/* Check that path holds a bench_matmul result document; prints why not. */
static bool validate_json(const char *path) {
  static const result_schema schema = {
      .prog = "bench_matmul", .benchmark = "matmul", .check = check_matmul};
  return result_check_file(path, &schema, stderr);
}

/* ---- main ----------------------------------------------------------------------------------- */

static bool open_env(bench_env *env) {
  if (!bench_device_open(env->opt.backend, &env->dev)) return false;
  env->has_cublas = cublas_peer_load(&env->cublas, env->dev.stream, env->dev.backend);
  return true;
}

static void close_env(bench_env *env) {
  cublas_peer_release(&env->cublas);
  bench_device_close(&env->dev, "bench_matmul");
}

int main(int argc, char **argv) {
  bench_env env = {0};
  const bench_option table[] = {
      BENCH_OPT_RUN_SIZE("--quick", RUN_QUICK, &env.opt.size, "squares up to 1024"),
      BENCH_OPT_RUN_SIZE("--smoke", RUN_SMOKE, &env.opt.size,
                         "32 and 64 only, 3 rounds (proves every path works)"),
      BENCH_OPT_BACKEND(&env.opt.backend),
      BENCH_OPT_JSON(&env.opt.json_path),
      BENCH_OPT_VALIDATE_JSON,
      BENCH_OPT_HELP,
      BENCH_OPT_END};
  const bench_cli cli = {
      .prog = "bench_matmul", .usage = usage, .options = table, .validate_json = validate_json};
  int code = bench_start(&cli, argc, argv);
  if (code != BENCH_RUN) return code;
  if (!open_env(&env)) {
    fprintf(stderr, "bench_matmul: %s\n", bench_error());
    close_env(&env);
    return BENCH_EXIT_FAILURE;
  }
  bench_print_header("bench_matmul", env.dev.backend, &env.dev.info, env.opt.size);
  printf("\n");
  static measured rs[SHAPE_COUNT];
  int count = 0, exit_code = 0;
  for (int i = 0; i < SHAPE_COUNT; i++) {
    if (!shape_runs(&shapes[i], env.opt.size)) continue;
    if (!measure_shape(&env, &shapes[i], &rs[count])) {
      fprintf(stderr, "bench_matmul: %s\n", bench_error());
      exit_code = BENCH_EXIT_FAILURE;
      break;
    }
    count++;
  }
  if (count > 0) print_results(&env, rs, count);
  if (exit_code == 0 && env.opt.json_path) {
    json_t *doc = document_json(&env, rs, count);
    if (!bench_json_write("bench_matmul", doc, env.opt.json_path, validate_json))
      exit_code = BENCH_EXIT_FAILURE;
    json_decref(doc);
  }
  close_env(&env);
  return exit_code;
}

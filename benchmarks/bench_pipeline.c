/* benchmarks/bench_pipeline.c: what pooling, streams, graphs and fusion buy a pipeline.
 *
 *   bench_pipeline [--quick] [--backend host|cuda|auto] [--json PATH] [--pipeline TEXT]
 *                  [--frames N] [--repeats N] [--profile DIR]
 *   bench_pipeline --validate-json PATH
 *
 * The same frames through one pipeline as naive, pooled, streams (K = 2, 3, 4), graph
 * and fused, side by side in one run, at 512x512 and 2048x2048 (--quick: 512x512 only),
 * u16 and f32. The method, the configs, the floors and the JSON are described in
 * tools/pipeline_bench.h, which runs it (`plume demo` prints the same comparison for its
 * scene). --frames sets the frames per timed run (by default 20 per 512x512 frame's worth
 * with --quick, 100 without, times 20 on cuda) and --repeats the timed rounds (3 with
 * --quick, else 5). The benchmark never fails on timing. Exit codes: 0 success, 1 a
 * runtime failure (an API call failed, configs disagree on the results, the JSON could
 * not be written), 2 bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "tools/pipeline_bench.h"

enum { EXIT_RUNTIME_FAILURE = 1, EXIT_USAGE = 2 };

static void print_usage(FILE *out) {
  fprintf(out,
          "usage: bench_pipeline [--quick] [--backend host|cuda|auto] [--json PATH]\n"
          "                      [--pipeline TEXT] [--frames N] [--repeats N] [--profile DIR]\n"
          "       bench_pipeline --validate-json PATH\n"
          "\n"
          "The same frames through one pipeline in five ways, side by side: naive (every\n"
          "intermediate allocated upstream per frame, the host waiting after each step),\n"
          "pooled (allocated from a pool), streams (the planned workspace, K = 2, 3, 4 frames\n"
          "in flight, copies overlapping compute), graph (+ CUDA graphs, cuda only) and\n"
          "fused (+ fusion). Prints frames/s, latencies, speedups, pool hits, overlap and the\n"
          "copy-bandwidth floors, and writes JSON.\n"
          "\n"
          "options:\n"
          "  --quick           512x512 frames only (u16 and f32), fewer frames (under a\n"
          "                    minute on the host backend)\n"
          "  --backend NAME    host, cuda or auto (default auto: cuda when a GPU is present)\n"
          "  --json PATH       write the results as JSON to PATH (then re-read and check it)\n"
          "  --pipeline TEXT   the pipeline (plm_pipeline_parse's text); default:\n"
          "                    %s\n"
          "  --frames N        frames per timed run (default: by frame size)\n"
          "  --repeats N       timed runs per config (default 3 with --quick, else 5)\n"
          "  --profile DIR     after the first frame size's timed runs, profile one more run\n"
          "                    of its fastest optimised config and write DIR/profile.json,\n"
          "                    DIR/trace.json and DIR/report.html (the A/B bars: frames/s)\n"
          "  --validate-json PATH  check that PATH is a bench_pipeline result file, and exit\n"
          "  -h, --help        show this help\n",
          PIPELINE_BENCH_DEFAULT);
}

/* A positive decimal integer, all of text. */
static bool parse_count(const char *text, long long max, long long *out) {
  char *end = NULL;
  errno = 0;
  long long value = strtoll(text, &end, 10);
  if (errno || end == text || *end || value < 1 || value > max || text[0] == '+') return false;
  *out = value;
  return true;
}

int main(int argc, char **argv) {
  pipeline_bench_options options = {.prog = "bench_pipeline"};
  const char *json_path = NULL, *validate = NULL;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const bool has_value = i + 1 < argc;
    long long count = 0;
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      print_usage(stdout);
      return 0;
    } else if (strcmp(arg, "--quick") == 0) {
      options.quick = true;
    } else if (strcmp(arg, "--json") == 0 && has_value) {
      json_path = argv[++i];
    } else if (strcmp(arg, "--validate-json") == 0 && has_value) {
      validate = argv[++i];
    } else if (strcmp(arg, "--profile") == 0 && has_value) {
      options.profile_dir = argv[++i];
    } else if (strcmp(arg, "--pipeline") == 0 && has_value) {
      options.pipeline = argv[++i];
    } else if (strcmp(arg, "--backend") == 0 && has_value) {
      if (plm_backend_parse(argv[++i], &options.backend) != PLM_OK) {
        fprintf(stderr, "bench_pipeline: --backend '%s': expected host, cuda or auto\n", argv[i]);
        return EXIT_USAGE;
      }
    } else if (strcmp(arg, "--frames") == 0 && has_value) {
      if (!parse_count(argv[++i], 10000000, &count)) {
        fprintf(stderr, "bench_pipeline: --frames '%s': expected an integer 1..10000000\n",
                argv[i]);
        return EXIT_USAGE;
      }
      options.frames = count;
    } else if (strcmp(arg, "--repeats") == 0 && has_value) {
      if (!parse_count(argv[++i], 25, &count)) {
        fprintf(stderr, "bench_pipeline: --repeats '%s': expected an integer 1..25\n", argv[i]);
        return EXIT_USAGE;
      }
      options.repeats = (int)count;
    } else if (strcmp(arg, "--json") == 0 || strcmp(arg, "--validate-json") == 0 ||
               strcmp(arg, "--pipeline") == 0 || strcmp(arg, "--backend") == 0 ||
               strcmp(arg, "--frames") == 0 || strcmp(arg, "--repeats") == 0 ||
               strcmp(arg, "--profile") == 0) {
      fprintf(stderr, "bench_pipeline: %s needs a value (see bench_pipeline --help)\n", arg);
      return EXIT_USAGE;
    } else {
      fprintf(stderr, "bench_pipeline: unknown argument '%s' (see bench_pipeline --help)\n", arg);
      return EXIT_USAGE;
    }
  }
  if (validate) {
    if (!pipeline_bench_validate_json(validate, stderr)) return EXIT_RUNTIME_FAILURE;
    printf("%s: a valid bench_pipeline result file\n", validate);
    return 0;
  }
  if (json_path && !bench_json_path_writable("bench_pipeline", json_path))
    return EXIT_RUNTIME_FAILURE;
  return pipeline_bench_run(&options, stdout, json_path);
}

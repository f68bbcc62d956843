/* benchmarks/bench_pipeline.c: what pooling, streams, graphs and fusion buy a pipeline.
 *
 *   bench_pipeline [--quick|--smoke] [--backend host|cuda|auto] [--json PATH] [--pipeline TEXT]
 *                  [--frames N] [--repeats N] [--source-ahead N] [--profile DIR]
 *   bench_pipeline --devices N [--backend B] [--pipeline TEXT] [--frames N] [--repeats N]
 *   bench_pipeline --batch N [--smoke] [--backend B] [--pipeline TEXT] [--frames N]
 *                  [--repeats N] [--json PATH] [--emulated-cost PATH]
 *   mpirun -n R bench_pipeline [--backend B] [--pipeline TEXT] [--frames N] [--repeats N]
 *   bench_pipeline --validate-json PATH
 *
 * The same frames through one pipeline as naive, pooled, streams (K = 2, 3, 4), graph
 * and fused, side by side in one run, at 512x512 and 2048x2048 (--quick: 512x512 only),
 * u16 and f32 (--smoke: 64x64 only, 8 frames a run, one round, which proves every path
 * in seconds and measures little: what the GPU campaign's rehearsal on the CUDA emulator
 * runs, scripts/gpu-campaign). The method, the configs, the floors and the JSON are described in
 * benchmarks/pipeline_bench.h, which runs it (`plume demo` prints the same comparison for its
 * scene). --frames sets the frames per timed run (by default 20 per 512x512 frame's worth
 * with --quick, 100 without, times 20 on cuda) and --repeats the timed rounds (3 with
 * --quick, else 5). --source-ahead N (default 4) runs every config's source on a thread of
 * its own, up to N frames ahead (plm_run_stream_options.source_ahead; 0: on the
 * enqueueing thread). --profile's DIR is created (with its parents) before anything runs.
 * --devices N, and a run under mpirun (support/launcher.h), measure frames/s against the
 * number of devices and of ranks instead, with the scaling efficiency
 * (benchmarks/bench_scaling.h; --frames is then per run or per rank, default 200).
 * --batch N compares a frame at a time with batches of N frames, stacks (N, H, W) run as
 * one launch per step, at 64x64, 128x128 and 256x256 (benchmarks/bench_batch.h; --frames
 * per run, default 32 N; with --emulated-cost PATH, on the emulator's cuda backend, the
 * counted estimate per frame too).
 * The benchmark never fails on timing. Exit codes: 0 success, 1 a runtime failure (an
 * API call failed, configs disagree on the results, the JSON or the profile could not be
 * written), 2 bad usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_batch.h"
#include "bench_common.h"
#include "bench_scaling.h"
#include "benchmarks/pipeline_bench.h"
#include "support/launcher.h"

static const char usage[] =
    "usage: bench_pipeline [--quick|--smoke] [--backend host|cuda|auto] [--json PATH]\n"
    "                      [--pipeline TEXT] [--frames N] [--repeats N]\n"
    "                      [--source-ahead N] [--profile DIR]\n"
    "       bench_pipeline --devices N [--backend B] [--pipeline TEXT] [--frames N]\n"
    "       bench_pipeline --batch N [--smoke] [--backend B] [--pipeline TEXT] [--frames N]\n"
    "                      [--json PATH] [--emulated-cost PATH]\n"
    "       mpirun -n R bench_pipeline [--backend B] [--pipeline TEXT] [--frames N]\n"
    "       bench_pipeline --validate-json PATH\n"
    "\n"
    "The same frames through one pipeline in five ways, side by side: naive (every\n"
    "intermediate allocated upstream per frame, the host waiting after each step),\n"
    "pooled (allocated from a pool), streams (the planned workspace, K = 2, 3, 4 frames\n"
    "in flight, copies overlapping compute), graph (+ CUDA graphs, cuda only) and\n"
    "fused (+ fusion). Prints frames/s, latencies, speedups, pool hits, overlap and the\n"
    "copy-bandwidth floors, and writes JSON. With --devices N, or under mpirun: frames/s\n"
    "against the number of devices or ranks, and the scaling efficiency. With --batch N:\n"
    "a frame at a time against batches of N frames (one launch per step per batch) at\n"
    "64x64, 128x128 and 256x256.\n";

static bool validate_json(const char *path) {
  return pipeline_bench_validate_json(path, stderr);
}

/* The frames the source may run ahead: 0 .. PLM_SOURCE_AHEAD_MAX. */
static int parse_source_ahead(const char *value, void *target) {
  char *end = NULL;
  errno = 0;
  long ahead = strtol(value, &end, 10);
  if (errno || end == value || *end || value[0] == '+' || ahead < 0 ||
      ahead > PLM_SOURCE_AHEAD_MAX) {
    fprintf(stderr, "bench_pipeline: --source-ahead '%s': expected an integer 0..%d\n", value,
            PLM_SOURCE_AHEAD_MAX);
    return BENCH_EXIT_USAGE;
  }
  *(int *)target = (int)ahead;
  return BENCH_RUN;
}

int main(int argc, char **argv) {
  pipeline_bench_options options = {.prog = "bench_pipeline", .source_ahead = 4};
  const char *json_path = NULL;
  int64_t repeats = 0, devices = 0, batch = 0;
  const char *emulated_cost = NULL;
  const bench_option table[] = {
      BENCH_OPT_FLAG("--quick", &options.quick,
                     "512x512 frames only (u16 and f32), fewer frames (under a\n"
                     "minute on the host backend)"),
      BENCH_OPT_FLAG("--smoke", &options.smoke,
                     "128x128 frames only (u16 and f32), 8 frames a run, one round:\n"
                     "proves every path in seconds (the size for the CUDA emulator)"),
      BENCH_OPT_BACKEND(&options.backend),
      BENCH_OPT_JSON(&json_path),
      BENCH_OPT_STRING(
          "--pipeline", "TEXT", &options.pipeline,
          "the pipeline (plm_pipeline_parse's text); default:\n" PIPELINE_BENCH_DEFAULT),
      BENCH_OPT_COUNT("--frames", 10000000, &options.frames,
                      "frames per timed run (default: by frame size)"),
      BENCH_OPT_COUNT("--repeats", 25, &repeats,
                      "timed runs per config (default 3 with --quick, else 5)"),
      BENCH_OPT_CALLBACK("--source-ahead", "N", parse_source_ahead, &options.source_ahead,
                         "the source (each frame's copy into pinned memory) on a\n"
                         "thread of its own, up to N frames ahead of the enqueueing\n"
                         "thread; 0: on the enqueueing thread (default 4)"),
      BENCH_OPT_COUNT("--devices", PLM_RUN_STREAM_MAX_DEVICES, &devices,
                      "frames/s over 1 .. N devices (GPUs 0 .. N - 1; on host, N\n"
                      "host devices splitting the cores), with the scaling efficiency"),
      BENCH_OPT_COUNT("--batch", PLM_RUN_STREAM_MAX_BATCH, &batch,
                      "compare a frame at a time with batches of N frames (2 ..),\n"
                      "stacks (N, H, W) run as one launch per step, at 64x64,\n"
                      "128x128 and 256x256 (bench_batch.h)"),
      BENCH_OPT_STRING("--emulated-cost", "PATH", &emulated_cost,
                       "with --batch, on the cuda backend of a -DPLUME_CUDA=EMU build:\n"
                       "count one more run each way with the emulator and print the\n"
                       "estimate per frame (launches, us; an estimate, never a\n"
                       "measurement); PATH gets the emulator's report as JSON"),
      BENCH_OPT_PROFILE(&options.profile_dir,
                        "after the first frame size's timed runs, profile one more run\n"
                        "of its fastest optimised config and write DIR/profile.json,\n"
                        "DIR/trace.json and DIR/report.html (the A/B bars: frames/s)"),
      BENCH_OPT_VALIDATE_JSON,
      BENCH_OPT_HELP,
      BENCH_OPT_END};
  const bench_cli cli = {
      .prog = "bench_pipeline", .usage = usage, .options = table, .validate_json = validate_json};
  int code = bench_start(&cli, argc, argv);
  if (code != BENCH_RUN) return code;
  options.repeats = (int)repeats;
  const scaling_options scaling = {.pipeline = options.pipeline,
                                   .backend = options.backend,
                                   .devices = (int)devices,
                                   .frames = options.frames,
                                   .repeats = options.repeats};
  if (emulated_cost && batch == 0) {
    fprintf(stderr, "bench_pipeline: --emulated-cost goes with --batch\n");
    return BENCH_EXIT_USAGE;
  }
  if (batch == 1) {
    fprintf(stderr, "bench_pipeline: --batch 1 compares nothing: give 2 or more\n");
    return BENCH_EXIT_USAGE;
  }
  if (batch > 1) {
    const batch_bench_options batched = {.pipeline = options.pipeline,
                                         .backend = options.backend,
                                         .batch = (int)batch,
                                         .frames = options.frames,
                                         .repeats = options.repeats,
                                         .smoke = options.smoke,
                                         .json_path = json_path,
                                         .emulated_cost_path = emulated_cost};
    return batch_bench_run(&batched, stdout);
  }
  if (launched_by_mpi()) return scaling_bench_ranks(&scaling, stdout);
  if (devices > 0) return scaling_bench_devices(&scaling, stdout);
  return pipeline_bench_run(&options, stdout, json_path);
}

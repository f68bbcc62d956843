/* benchmarks/bench_batch.h: what batching small frames buys (bench_pipeline --batch N).
 *
 * The same frames through one pipeline two ways, side by side in one process:
 *
 *   batch 1   the pipeline over (H, W) frames, a frame at a time through
 *             plm_pipeline_run_stream (one enqueue of the plan, or one graph launch, per
 *             frame);
 *   batch N   the same text over (N, H, W) stacks, run with plm_run_stream_options.batch
 *             N: each step one call (on cuda, the same launches) per N frames.
 *
 * at 64x64, 128x128 and 256x256 u16 frames of the synthetic scene (support/scene.h, seed
 * 1; M distinct frames, frame k being frame k mod M). Both run with 3 frame slots (3
 * frames, or 3 batches, in flight), CUDA graphs on where the backend has them, and the
 * source on a thread of its own 4 units ahead (4 frames, or 4 batches). After a warm-up
 * of each, the timed runs are interleaved (batch 1, batch N, once each per round), and
 * per size the table gives the medians over the rounds of frames/s and of latency p50
 * (a unit's: a frame's, or a batch's from its last frame gathered to its frames
 * delivered), and the ratio of the frames/s medians (batch N / batch 1).
 *
 * Results are checked, not only timed: during the warm-ups the batch N run's outputs for
 * the first M frames are compared with batch 1's, the count exactly and the regions
 * table's rows in use (its first min(K, capacity)) byte for byte; other outputs byte for
 * byte. A difference is a failure.
 *
 * Emulated cost (emulated_cost_path; the cuda backend of a -DPLUME_CUDA=EMU build only):
 * one more run of 2N frames each way, counted by the CUDA emulator (emu/count/emu_count.h)
 * in a section "batch B HxW"; per frame: kernel launches, and the estimate for an H100 SXM
 * (the section's counts summed and taken as one: the largest of their DRAM, L2, shared and
 * atomic bounds, plus each launch's overhead, or each graph node's), beside the floor. An
 * estimate from counts, never a measurement; the path gets the emulator's per-kernel
 * report as JSON.
 *
 * Returns an exit code of bench_common.h: 0; BENCH_EXIT_FAILURE (1) when a call fails or
 * the results differ (a message on stderr); BENCH_EXIT_USAGE (2) for a pipeline that does
 * not take stacks (the library's message names the element). */
#ifndef PLUME_BENCHMARKS_BENCH_BATCH_H
#define PLUME_BENCHMARKS_BENCH_BATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "plume/plume.h"

typedef struct batch_bench_options {
  const char *pipeline; /* plm_pipeline_parse text; NULL: PIPELINE_BENCH_DEFAULT */
  plm_backend backend;
  int batch;             /* N, 2 .. PLM_RUN_STREAM_MAX_BATCH */
  int64_t frames;        /* per timed run; 0: 32 N (smoke: 2 N) */
  int repeats;           /* timed rounds; 0: 5 (smoke: 1) */
  bool smoke;            /* one round of few frames: proves the paths (the emulator's size) */
  const char *json_path; /* NULL: no JSON */
  const char *emulated_cost_path; /* NULL: no emulated cost */
} batch_bench_options;

int batch_bench_run(const batch_bench_options *options, FILE *out);

#endif /* PLUME_BENCHMARKS_BENCH_BATCH_H */

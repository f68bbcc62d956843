/* benchmarks/bench_scaling.h: frames/s against the number of devices and of MPI ranks,
 * with the scaling efficiency (bench_pipeline --devices N, bench_pipeline under mpirun).
 *
 * The same synthetic 512x512 u16 frames (eight, dealt in turn) through one pipeline:
 *
 *   devices  for n = 1 .. N devices, plm_pipeline_run_stream_devices over n of them: on
 *            cuda the GPUs 0 .. n - 1, on host n host contexts with a budget of
 *            cores / N threads each (at least 1), plus, for reference, one host context
 *            over every core (the default). Each row: frames/s in total and per device,
 *            the speedup over one device and the efficiency, speedup / n.
 *   ranks    under mpirun: rank 0 alone runs F frames (the others wait), then every rank
 *            runs F frames of its own (plm_mpi_run_stream over F x ranks frames, each
 *            rank's count of regions gathered to rank 0): frames/s in total and per rank,
 *            and the efficiency, total / (ranks x rank 0 alone). Each rank runs on its
 *            node's device for its local rank (cuda), or on the host's cores, which ranks
 *            on one machine share.
 *
 * The best of `repeats` runs is kept for each row. Figures go to out (rank 0 only under
 * MPI). Returns an exit code of bench_common.h (BENCH_EXIT_FAILURE after a message on
 * stderr when a call fails). */
#ifndef PLUME_BENCHMARKS_BENCH_SCALING_H
#define PLUME_BENCHMARKS_BENCH_SCALING_H

#include <stdint.h>
#include <stdio.h>

#include "plume/plume.h"

typedef struct scaling_options {
  const char *pipeline; /* plm_pipeline_parse text (PIPELINE_BENCH_DEFAULT when NULL) */
  plm_backend backend;
  int devices;    /* devices mode: the most devices (1 .. PLM_RUN_STREAM_MAX_DEVICES) */
  int64_t frames; /* per run (devices) or per rank (ranks); 0: 200 */
  int repeats;    /* 0: 3 */
} scaling_options;

int scaling_bench_devices(const scaling_options *options, FILE *out);

/* Initialises and finalises MPI itself. Only in a build with plume_mpi (PLUME_HAVE_MPI). */
int scaling_bench_ranks(const scaling_options *options, FILE *out);

#endif /* PLUME_BENCHMARKS_BENCH_SCALING_H */

/* apps/tune_commands.h: `plume tune`.
 *
 *   plume tune [--backend host|cuda|auto] [--quick] [--op NAME] [--runs N]
 *     Measures the ops' tunables on the backend's device (plm_tune_run, plume/tuning.h):
 *     for each tunable and size class, the default and the best candidate with their
 *     times (the sums of the workloads' medians), the noise (CV) and whether the best was
 *     kept (its gain above twice the CV); and the points of the placement model, a row
 *     "(model)" per workload of each op (its median beside the cost model's time); a line
 *     saying how much of the CPUs other processes took meanwhile (support/cpu_share.h) and
 *     the entries' median CV, with a warning on stderr above 10% of the CPUs; then
 *     writes the device's table to the cache ($XDG_CACHE_HOME/plume/tuning-*.json,
 *     atomically) and prints where. With PLUME_TUNING=off nothing is written (said on
 *     stdout). --quick: fewer sizes and runs (seconds on a CPU). The entries of the table
 *     in use that the run did not measure (other ops with --op, the classes and the
 *     workloads --quick skips) are kept.
 *
 *   plume tune --report [--backend host|cuda|auto]
 *     Prints the device's table as the ops use it, measuring nothing: for each entry the
 *     value chosen against the default and what it buys (the gain of the chosen value's
 *     time over the default's, 0% where the default was kept) and meas/model, the default's
 *     measured time over the cost model's (for a point of the model: what
 *     plm_pipeline_predict interpolates between), or that there is none.
 *
 * Exit codes: 0 success; 1 a runtime failure (the device, writing the table); 2 bad usage,
 * with a one-line message on stderr.
 */
#ifndef PLUME_APPS_TUNE_COMMANDS_H
#define PLUME_APPS_TUNE_COMMANDS_H

#include <stdio.h>

/* Run `plume tune` with the arguments after the command's name; returns the exit code. */
int tune_command_main(int argc, char **argv);

/* Its line in `plume --help`. */
void tune_commands_print_summary(FILE *out);

/* `plume info`'s line about ctx's device's table: "tuning: ..." */
struct plm_context;
void tune_commands_print_info(struct plm_context *ctx);

#endif /* PLUME_APPS_TUNE_COMMANDS_H */

/* apps/detect_mpi.c: `plume detect` over MPI ranks (apps/detect_mpi.h). */
#define _POSIX_C_SOURCE 200809L

#include "apps/detect_mpi.h"

#include <stdio.h>

#include "apps/interrupt.h"
#include "plume/mpi.h"
#include "support/quote.h"

static plm_status run_ranks(const detect_runner *self, plm_pipeline *pl,
                            const detect_frames *frames, detect_result *result, char *err,
                            size_t err_size) {
  (void)self;
  plm_mpi_check checks[DETECT_CHECKS];
  const int check_count = frames->check_count < DETECT_CHECKS ? frames->check_count : DETECT_CHECKS;
  for (int c = 0; c < check_count; c++)
    checks[c] = (plm_mpi_check){.what = frames->checks[c].what,
                                .hash = frames->checks[c].hash,
                                .shown = frames->checks[c].shown};
  const plm_mpi_frames all = {.count = frames->count,
                              .source = frames->source,
                              .pack = frames->pack,
                              .deliver = frames->deliver,
                              .describe_failure = frames->describe_failure,
                              .user = frames->job,
                              .checks = checks,
                              .check_count = check_count};
  plm_mpi_report report;
  plm_status status = plm_mpi_run_stream(pl, MPI_COMM_WORLD, &all, NULL, &report);
  result->report = report.local;
  result->ranks = report.ranks;
  result->frames_total = report.frames_delivered;
  result->seconds_total = report.seconds;
  result->frames_per_s_total = report.frames_per_s;
  for (int r = 0; r < DETECT_RANKS_SHOWN && r < PLM_MPI_REPORT_RANKS; r++)
    result->rank_frames_per_s[r] = report.rank_frames_per_s[r];
  if (status != PLM_OK) quote_text(plm_last_error(), err, err_size);
  return status;
}

static plm_status withdraw(const detect_runner *self, plm_status status, char *err,
                           size_t err_size) {
  (void)self;
  status = plm_mpi_withdraw(MPI_COMM_WORLD, status, err, NULL);
  quote_text(plm_last_error(), err, err_size);
  return status;
}

plm_status detect_run_mpi(detect_config *config, detect_result *result, bool *writes, char *err,
                          size_t err_size) {
  int provided = 0, rank = 0;
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    snprintf(err, err_size, "MPI_Init_thread failed");
    *writes = true;
    return PLM_ERR_BACKEND;
  }
  /* After MPI's own handlers, so that a signal stops the ranks as it stops one process. */
  interrupt_catch();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  *writes = rank == 0;
  const detect_runner runner = {.run = run_ranks, .withdraw = withdraw, .writes = *writes};
  config->runner = &runner;
  config->device = plm_mpi_local_device(MPI_COMM_WORLD, config->backend);
  if (!*writes) config->show_progress = config->force_progress = false;
  plm_status status = detect_run(config, result, err, err_size);
  config->runner = NULL;
  /* Only rank 0 writes, so only it knows that a write failed (a full disk: a runtime
   * failure, exit 1, not a bad argument): every rank exits with the same code. */
  int write_failed = result->write_failed;
  MPI_Allreduce(MPI_IN_PLACE, &write_failed, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  result->write_failed = write_failed;
  return status;
}

int detect_mpi_finish(int exit_code) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
  }
  return exit_code;
}

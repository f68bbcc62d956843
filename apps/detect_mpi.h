/* apps/detect_mpi.h: `plume detect` over the ranks of an MPI job (built with plume_mpi).
 *
 *   mpirun -n N plume detect --frames F --pipeline P --out D.csv
 *
 * is the command line of one process. Each rank opens the frames and builds the pipeline
 * itself, runs its contiguous block of frames (plm_mpi_share: each rank reads only its
 * frames, with the same frame reader) on its node's device for its local rank (local
 * rank mod the node's CUDA devices; the host backend's one device otherwise), and rank 0
 * writes the one CSV, in frame order, byte for byte what one process writes (plume/mpi.h
 * gathers the rows). A failure on any rank stops every rank, leaves no file and is one
 * line on rank 0's stderr naming the rank ("plume detect: rank 1: ..."); every rank
 * exits with the code of that failure (a write failure, known to rank 0 alone, is exit 1
 * on every rank). Before any frame the ranks compare their pipeline, tensors and frames
 * with rank 0's (apps/detect.h's detect_check): a rank given others fails the run, naming
 * what differs. Rank 0 keeps the CSV in a file without a name until every rank's rows
 * are in (apps/detect.h, "Processes"), so that a rank killed outright, rank 0 included,
 * leaves no temporary file. Only rank 0 prints and draws the progress bar
 * (the total of all frames: its own block as it runs, then the others' as they are
 * gathered).
 *
 * Stateful pipelines (background, the robust and calibrated presets) are refused: each
 * rank would start the state afresh at its block's first frame. --profile is refused.
 */
#ifndef PLUME_APPS_DETECT_MPI_H
#define PLUME_APPS_DETECT_MPI_H

#include <stdbool.h>
#include <stddef.h>

#include "apps/detect.h"

/* Initialise MPI (MPI_THREAD_FUNNELED) and run detect_run on this rank with a runner over
 * MPI_COMM_WORLD. *writes says whether this rank wrote (rank 0), which is the one to
 * print. The status is the one every rank agreed on; err its message. MPI stays
 * initialised for detect_mpi_finish. */
plm_status detect_run_mpi(detect_config *config, detect_result *result, bool *writes, char *err,
                          size_t err_size);

/* After rank 0 has printed: wait for every rank, finalise MPI, return exit_code. A rank
 * that exits non-zero makes mpirun stop the others with SIGTERM, which must not reach
 * rank 0 before its message is out. */
int detect_mpi_finish(int exit_code);

#endif /* PLUME_APPS_DETECT_MPI_H */

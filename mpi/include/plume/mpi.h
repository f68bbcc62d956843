/* plume/mpi.h: one stream of frames over the ranks of an MPI communicator (the
 * plume_mpi library, built when CMake finds MPI: -DPLUME_MPI=AUTO|ON|OFF).
 *
 * An application that already uses MPI gives plume its communicator; plume does not
 * initialise MPI (the application calls MPI_Init or MPI_Init_thread; MPI_THREAD_FUNNELED
 * is enough, every MPI call below is made on the thread that calls plume) and makes no
 * MPI call outside these functions. libplume itself knows nothing of MPI.
 *
 *   every rank:  plm_pipeline_parse(ctx, text, ...); plm_pipeline_compile(pl, &cfg);
 *                plm_mpi_frames frames = {.count = N, .source = read, .pack = pack,
 *                                         .deliver = write, .user = &job};
 *                plm_mpi_run_stream(pl, comm, &frames, NULL, &report);
 *
 * Frames 0 .. frames->count - 1 are shared out in contiguous blocks (plm_mpi_share): rank r runs
 * its block through its own pipeline (plm_pipeline_run_stream: its own device, K frames in
 * flight), its source is asked for the frames of that block only, by their index in the
 * whole sequence, and pack turns each frame's outputs into bytes (a CSV row, a compact
 * table: whatever the root is to receive). Rank 0 receives every frame's bytes, in frame
 * order, in deliver on the calling thread: its own block's as they are computed, then
 * each other rank's, gathered after the run. A rank holds its block's packed bytes in
 * host memory until rank 0 takes them.
 *
 * Failure: every rank returns the same status. When any rank fails (its source, its
 * work, its pack, rank 0's deliver, or a plm_mpi_withdraw before the run), the others
 * stop at their next frame (the failing rank tells them with a message), all ranks agree
 * on the failure of the lowest failing rank R, and each rank's plm_last_error() reads
 * "rank R: <R's message>" (a rank stopped because another failed does not count as
 * failing). Nothing more is delivered after a failure; the caller discards what was.
 *
 * Stateful pipelines (a node with a state carried from frame to frame: background) are
 * refused with PLM_ERR_UNSUPPORTED: each rank would start the state afresh at its
 * block's first frame, and the results would differ from one process's.
 *
 * plm_mpi_run_stream, plm_mpi_withdraw and plm_mpi_local_device are collective over comm:
 * every rank calls the same function, in the same order, with the same frame count.
 * Blocking; not thread-safe on one communicator.
 */
#ifndef PLUME_MPI_H
#define PLUME_MPI_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "plume/pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The block of frames of one of `ranks` ranks: ceil-first contiguous blocks, the first
 * frames % ranks ranks one frame more, so that blocks follow each other in rank order
 * (rank 0 the first). A rank may get no frame (more ranks than frames). Not collective;
 * errors: PLM_ERR_INVALID_ARG (frames negative, rank outside 0 .. ranks - 1, NULL out). */
plm_status plm_mpi_share(int64_t frames, int rank, int ranks, int64_t *first, int64_t *count);

/* The device index for this rank's context (plm_context_config.device): its rank among
 * the ranks of comm on its node (MPI_Comm_split_type, shared memory) modulo the node's
 * CUDA devices, when the backend is cuda, or AUTO with a GPU present and PLUME_BACKEND
 * not set to host; else 0 (the host backend has one device). Collective over comm. */
int plm_mpi_local_device(MPI_Comm comm, plm_backend backend);

/* Turn frame `frame`'s outputs (as plm_pipeline_run_stream's sink gets them) into bytes:
 * *bytes must stay valid until the next call (a buffer of the caller's), *length may be
 * 0. Called on every rank for its own frames, in order, on the calling thread. */
typedef plm_status (*plm_mpi_pack_fn)(void *user, int64_t frame, const void *const *outputs,
                                      const void **bytes, size_t *length);

/* Rank 0 only: frame `frame`'s bytes, every frame once, in order, on the calling thread. */
typedef plm_status (*plm_mpi_deliver_fn)(void *user, int64_t frame, const void *bytes,
                                         size_t length);

/* The message of this rank's failure, when the caller's is better than the run's (a
 * source that names the file it could not read): at most size bytes, NUL-terminated. */
typedef void (*plm_mpi_describe_fn)(void *user, char *message, size_t size);

/* Something every rank must hold alike before any frame runs (plm_mpi_frames.checks): the
 * pipeline's text, the tensors it names, where the frames come from and their shape. Each
 * rank hashes its own (any 64-bit hash, the same function on every rank); rank 0's checks
 * go to every rank in step 1 of the run, before any rank runs, and a rank whose hash of a
 * `what` differs from rank 0's fails with PLM_ERR_INVALID_ARG: "not the same WHAT as
 * rank 0: SHOWN here, SHOWN0 on rank 0 (every rank must run the same)" (when the shown
 * texts are alike: "not the same WHAT as rank 0 (SHOWN on both, but not alike; ...)").
 * Checks are compared in order; a rank with other `what`s or another number of checks
 * than rank 0's fails likewise. */
typedef struct plm_mpi_check {
  const char *what;  /* what it is, for the message (its first 31 bytes): "pipeline" */
  uint64_t hash;     /* of it on this rank */
  const char *shown; /* optional (NULL): a short text of it for the message (its first
                        PLM_MPI_SHOWN_SIZE - 1 bytes) */
} plm_mpi_check;

/* The most checks of a run, and the room for each one's shown text. */
enum { PLM_MPI_MAX_CHECKS = 8, PLM_MPI_SHOWN_SIZE = 192 };

/* What a plm_mpi_run_stream runs over. */
typedef struct plm_mpi_frames {
  int64_t count;              /* frames 0 .. count - 1: the same on every rank */
  plm_frame_source_fn source; /* plm_pipeline_run_stream's, asked for this rank's block */
  plm_mpi_pack_fn pack;
  plm_mpi_deliver_fn deliver;           /* rank 0's; may be NULL on the others */
  plm_mpi_describe_fn describe_failure; /* optional: NULL takes plm_last_error() */
  void *user;                           /* given to all four */
  const plm_mpi_check *checks;          /* optional: check_count of them (above) */
  int check_count;                      /* 0 .. PLM_MPI_MAX_CHECKS */
} plm_mpi_frames;

/* The longest message a failing rank sends to the others. */
enum { PLM_MPI_MESSAGE_SIZE = 1024 };

/* The ranks whose frames per second a report lists one by one. */
enum { PLM_MPI_REPORT_RANKS = 64 };

typedef struct plm_mpi_report {
  int ranks;                   /* the communicator's size */
  int failed_rank;             /* the rank whose failure was agreed on, or -1 */
  int64_t first, count;        /* this rank's block */
  plm_run_stream_report local; /* this rank's run of its block */
  /* Rank 0 only (0 elsewhere): */
  int64_t frames_delivered; /* frames given to deliver */
  double seconds;           /* from the call to the last frame delivered */
  double frames_per_s;      /* frames_delivered / seconds: all ranks together */
  double rank_frames_per_s[PLM_MPI_REPORT_RANKS]; /* each rank's block / its run's time,
                                                     for the first PLM_MPI_REPORT_RANKS */
} plm_mpi_report;

/* Run frames->count frames over the ranks of comm (above). pl is this rank's compiled
 * pipeline (the same text on every rank: frames->checks make sure of it); options as
 * plm_pipeline_run_stream's (max_frames must be 0: the blocks say how many), may be
 * NULL. report is filled on every return. Errors, the same on every rank:
 * PLM_ERR_INVALID_ARG (a NULL argument, a count negative or not the same on every rank,
 * a check that differs from rank 0's, more than PLM_MPI_MAX_CHECKS checks, max_frames
 * set), PLM_ERR_UNSUPPORTED (a stateful pipeline, options->batch above 1: the ranks run
 * a frame at a time), PLM_ERR_BACKEND (an MPI call
 * failed), and whatever the failing rank's run failed with. */
plm_status plm_mpi_run_stream(plm_pipeline *pl, MPI_Comm comm, const plm_mpi_frames *frames,
                              const plm_run_stream_options *options, plm_mpi_report *report);

/* For a rank that cannot take part in a plm_mpi_run_stream (its pipeline did not build,
 * its frames did not open): call this instead, with its failure (status, never PLM_OK,
 * and a one-line message). The other ranks' plm_mpi_run_stream stops before it runs,
 * and every rank returns the agreed failure as above. */
plm_status plm_mpi_withdraw(MPI_Comm comm, plm_status status, const char *message,
                            plm_mpi_report *report);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_MPI_H */

/* mpi/plume_mpi.c: frames over the ranks of a communicator (plume/mpi.h).
 *
 * Every rank goes through the same collective steps, whatever happened to it, so that no
 * rank waits for a collective another one skipped:
 *
 *   1. start    Bcast of rank 0's checks (plm_mpi_check: hashes of the pipeline, the
 *               frames, ...), which each rank compares with its own; then Allgather of
 *               (status, frames): a rank that withdrew, whose checks or frame count
 *               differ from rank 0's, fails here, and then nobody runs (step 2 skipped).
 *   2. run      plm_pipeline_run_stream over the rank's block. Its sink packs each frame:
 *               rank 0 delivers at once, the others append to a spool in host memory
 *               (per frame: an int64 length, then the bytes). Before each frame the sink
 *               looks for a STOP message (MPI_Iprobe): another rank failed, so this one
 *               stops too (a secondary failure, never the one reported). A rank whose own
 *               run failed sends STOP to every other rank.
 *   3. agree    Allgather of (status, primary, sent STOP); every rank then receives the
 *               STOP messages it has not yet received, so none is left in flight. The
 *               lowest rank with a primary failure broadcasts its message; every rank
 *               returns its status with "rank R: message".
 *   4. gather   (no failure) rank 0 receives rank 1's spool, then rank 2's, ..., and
 *               delivers their frames in order; a failing deliver stops delivering but
 *               not receiving (the senders would wait for ever). Rank 0 then broadcasts
 *               its status, and on failure its message, and gathers each rank's
 *               (frames, seconds) for the report.
 *
 * Only the calling thread makes MPI calls (the sink runs there; the source may run on a
 * thread of its own with source_ahead, so it makes none): MPI_THREAD_FUNNELED is enough.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime (streams/clock.h) */

#include "plume/mpi.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "streams/ascii.h"
#include "streams/clock.h"
#include "streams/error.h"

enum { TAG_STOP = 0x504c, TAG_SPOOL = 0x504d };

/* The largest piece of a spool sent in one message (MPI counts are ints). */
enum { SPOOL_PIECE = 1 << 30 };

typedef struct mpi_run {
  MPI_Comm comm;
  int rank, ranks;
  const plm_mpi_frames *frames;
  int64_t first, count;
  /* The spool of a rank other than 0. */
  unsigned char *spool;
  size_t spool_length, spool_capacity;
  /* STOP messages: received from each rank; sent by this one. */
  bool *stop_received;
  MPI_Request *stop_sent;
  bool sent_stop;
  /* This rank's failure: primary (its own) or secondary (stopped by another's STOP). */
  plm_status status;
  bool primary;
  char message[PLM_MPI_MESSAGE_SIZE];
  plm_mpi_report *report;
  double started_s;
} mpi_run;

plm_status plm_mpi_share(int64_t frames, int rank, int ranks, int64_t *first, int64_t *count) {
  if (!first || !count) return plm__fail(PLM_ERR_INVALID_ARG, "first or count is NULL");
  if (frames < 0)
    return plm__fail(PLM_ERR_INVALID_ARG, "frames %lld is negative", (long long)frames);
  if (ranks < 1 || rank < 0 || rank >= ranks)
    return plm__fail(PLM_ERR_INVALID_ARG, "rank %d is not one of 0 .. %d", rank, ranks - 1);
  const int64_t base = frames / ranks, extra = frames % ranks;
  *count = base + (rank < extra);
  *first = rank * base + (rank < extra ? rank : extra);
  return PLM_OK;
}

int plm_mpi_local_device(MPI_Comm comm, plm_backend backend) {
  MPI_Comm node;
  int local = 0, cuda = 0;
  /* Collective whatever the backend, so that every rank makes the same calls. */
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
  }
  plm_backend_device_count(PLM_BACKEND_CUDA, &cuda, NULL);
  const char *env = getenv("PLUME_BACKEND");
  const bool host_forced = env && plm__ascii_casecmp(env, "host") == 0;
  const bool on_cuda = backend == PLM_BACKEND_CUDA || (backend == PLM_BACKEND_AUTO && !host_forced);
  return on_cuda && cuda > 0 ? local % cuda : 0;
}

/* ---- failures ------------------------------------------------------------------------------ */

/* This rank failed on its own (primary) or because another did: keep the first. */
static plm_status fail_here(mpi_run *run, plm_status status, bool primary, const char *message) {
  if (run->status != PLM_OK) return run->status;
  run->status = status;
  run->primary = primary;
  snprintf(run->message, sizeof run->message, "%s", message);
  return status;
}

static plm_status mpi_failed(mpi_run *run, int code, const char *call) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int length = 0;
  MPI_Error_string(code, text, &length);
  char message[PLM_MPI_MESSAGE_SIZE];
  snprintf(message, sizeof message, "%s failed: %s", call, text);
  return fail_here(run, PLM_ERR_BACKEND, true, message);
}

/* Tell every other rank to stop (step 2); the sends complete in step 3. */
static void send_stop(mpi_run *run) {
  static const int nothing = 0;
  for (int r = 0; r < run->ranks; r++) {
    run->stop_sent[r] = MPI_REQUEST_NULL;
    if (r != run->rank) MPI_Isend(&nothing, 1, MPI_INT, r, TAG_STOP, run->comm, &run->stop_sent[r]);
  }
  run->sent_stop = true;
}

/* Whether another rank has sent STOP (received here when it has). */
static bool stop_arrived(mpi_run *run, int *from) {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, TAG_STOP, run->comm, &flag, &st);
  if (!flag) return false;
  int nothing;
  MPI_Recv(&nothing, 1, MPI_INT, st.MPI_SOURCE, TAG_STOP, run->comm, MPI_STATUS_IGNORE);
  run->stop_received[st.MPI_SOURCE] = true;
  *from = st.MPI_SOURCE;
  return true;
}

/* Step 3: agree on the failure, if any; returns the agreed status with the message
 * "rank R: ..." set on every rank. */
static plm_status agree(mpi_run *run) {
  int mine[3] = {(int)run->status, run->status != PLM_OK && run->primary, run->sent_stop};
  int *all = calloc((size_t)run->ranks * 3, sizeof *all);
  if (!all) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory to agree on a failure");
  MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, run->comm);
  for (int r = 0; r < run->ranks; r++)
    if (r != run->rank && all[3 * r + 2] && !run->stop_received[r]) {
      int nothing;
      MPI_Recv(&nothing, 1, MPI_INT, r, TAG_STOP, run->comm, MPI_STATUS_IGNORE);
      run->stop_received[r] = true;
    }
  if (run->sent_stop) MPI_Waitall(run->ranks, run->stop_sent, MPI_STATUSES_IGNORE);
  int failed = -1;
  for (int r = 0; failed < 0 && r < run->ranks; r++)
    if (all[3 * r + 1]) failed = r;
  plm_status status = failed >= 0 ? (plm_status)all[3 * failed] : PLM_OK;
  free(all);
  if (failed < 0) return PLM_OK;
  char message[PLM_MPI_MESSAGE_SIZE];
  memcpy(message, run->message, sizeof message);
  MPI_Bcast(message, (int)sizeof message, MPI_CHAR, failed, run->comm);
  message[sizeof message - 1] = '\0';
  run->report->failed_rank = failed;
  return plm__fail_raw(status, "rank %d: %s", failed, message);
}

/* ---- step 2: the rank's block -------------------------------------------------------------- */

static plm_status source_of_block(void *user, int64_t k, void *const *inputs, bool *end) {
  mpi_run *run = user;
  if (k >= run->count) {
    *end = true;
    return PLM_OK;
  }
  return run->frames->source(run->frames->user, run->first + k, inputs, end);
}

static plm_status spool_append(mpi_run *run, const void *bytes, size_t length) {
  const int64_t header = (int64_t)length;
  size_t needed = run->spool_length + sizeof header + length;
  if (needed > run->spool_capacity) {
    size_t capacity = run->spool_capacity ? run->spool_capacity : 1 << 16;
    while (capacity < needed) capacity *= 2;
    unsigned char *grown = realloc(run->spool, capacity);
    if (!grown) return PLM_ERR_OUT_OF_MEMORY;
    run->spool = grown;
    run->spool_capacity = capacity;
  }
  memcpy(run->spool + run->spool_length, &header, sizeof header);
  if (length) memcpy(run->spool + run->spool_length + sizeof header, bytes, length);
  run->spool_length = needed;
  return PLM_OK;
}

static plm_status sink_of_block(void *user, int64_t k, const void *const *outputs) {
  mpi_run *run = user;
  const plm_mpi_frames *frames = run->frames;
  const int64_t frame = run->first + k;
  int from = -1;
  if (stop_arrived(run, &from)) {
    char message[96];
    snprintf(message, sizeof message, "stopped at frame %lld: rank %d failed", (long long)frame,
             from);
    return fail_here(run, PLM_ERR_INVALID_STATE, false, message);
  }
  const void *bytes = NULL;
  size_t length = 0;
  plm_status status = frames->pack(frames->user, frame, outputs, &bytes, &length);
  if (status != PLM_OK) return status;
  if (run->rank == 0) {
    status = frames->deliver(frames->user, frame, bytes, length);
    if (status == PLM_OK) run->report->frames_delivered++;
    return status;
  }
  if (spool_append(run, bytes, length) != PLM_OK) {
    char message[128];
    snprintf(message, sizeof message, "no host memory to keep frame %lld's %zu bytes for rank 0",
             (long long)frame, length);
    return fail_here(run, PLM_ERR_OUT_OF_MEMORY, true, message);
  }
  return PLM_OK;
}

static void run_block(mpi_run *run, plm_pipeline *pl, const plm_run_stream_options *options) {
  plm_run_stream_options block = options ? *options : plm_run_stream_options_default();
  plm_status status =
      plm_pipeline_run_stream(pl, source_of_block, sink_of_block, run, &block, &run->report->local);
  if (status == PLM_OK || run->status != PLM_OK) return; /* a STOP, or a failure kept */
  char message[PLM_MPI_MESSAGE_SIZE] = "";
  if (run->frames->describe_failure)
    run->frames->describe_failure(run->frames->user, message, sizeof message);
  if (!message[0]) snprintf(message, sizeof message, "%s", plm_last_error());
  fail_here(run, status, true, message);
}

/* ---- step 4: gathering ---------------------------------------------------------------------- */

static plm_status receive_spool(mpi_run *run, int from, unsigned char **spool, int64_t *length) {
  int code = MPI_Recv(length, 1, MPI_INT64_T, from, TAG_SPOOL, run->comm, MPI_STATUS_IGNORE);
  if (code != MPI_SUCCESS) return mpi_failed(run, code, "MPI_Recv");
  *spool = malloc(*length ? (size_t)*length : 1);
  bool kept = *spool != NULL;
  unsigned char discard[4096];
  for (int64_t at = 0; at < *length;) {
    int piece = (int)(*length - at < SPOOL_PIECE ? *length - at : SPOOL_PIECE);
    if (!kept && piece > (int)sizeof discard) piece = (int)sizeof discard;
    /* Receive what a sender sends, even with no room to keep it. */
    code = MPI_Recv(kept ? *spool + at : discard, piece, MPI_BYTE, from, TAG_SPOOL, run->comm,
                    MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) return mpi_failed(run, code, "MPI_Recv");
    at += piece;
  }
  if (kept) return PLM_OK;
  char message[128];
  snprintf(message, sizeof message, "no host memory for rank %d's %lld bytes of results", from,
           (long long)*length);
  return fail_here(run, PLM_ERR_OUT_OF_MEMORY, true, message);
}

static plm_status send_spool(mpi_run *run) {
  const int64_t length = (int64_t)run->spool_length;
  int code = MPI_Send(&length, 1, MPI_INT64_T, 0, TAG_SPOOL, run->comm);
  for (int64_t at = 0; code == MPI_SUCCESS && at < length;) {
    int piece = (int)(length - at < SPOOL_PIECE ? length - at : SPOOL_PIECE);
    code = MPI_Send(run->spool + at, piece, MPI_BYTE, 0, TAG_SPOOL, run->comm);
    at += piece;
  }
  return code == MPI_SUCCESS ? PLM_OK : mpi_failed(run, code, "MPI_Send");
}

/* Deliver a spool's frames, which follow `frame`, in order. */
static plm_status deliver_spool(mpi_run *run, const unsigned char *spool, int64_t length,
                                int64_t frame) {
  for (int64_t at = 0; at < length; frame++) {
    int64_t bytes;
    memcpy(&bytes, spool + at, sizeof bytes);
    at += (int64_t)sizeof bytes;
    plm_status status = run->frames->deliver(run->frames->user, frame, spool + at, (size_t)bytes);
    if (status != PLM_OK) {
      char message[PLM_MPI_MESSAGE_SIZE] = "";
      if (run->frames->describe_failure)
        run->frames->describe_failure(run->frames->user, message, sizeof message);
      if (!message[0])
        snprintf(message, sizeof message, "frame %lld: %s", (long long)frame, plm_last_error());
      return fail_here(run, status, true, message);
    }
    run->report->frames_delivered++;
    at += bytes;
  }
  return PLM_OK;
}

static plm_status gather(mpi_run *run) {
  if (run->rank != 0) {
    send_spool(run);
  } else {
    for (int r = 1; r < run->ranks; r++) {
      unsigned char *spool = NULL;
      int64_t length = 0, first = 0, count = 0;
      plm_mpi_share(run->frames->count, r, run->ranks, &first, &count);
      if (receive_spool(run, r, &spool, &length) == PLM_OK && run->status == PLM_OK)
        deliver_spool(run, spool, length, first);
      free(spool);
    }
  }
  /* Rank 0's outcome is everybody's. */
  int status = (int)run->status;
  MPI_Bcast(&status, 1, MPI_INT, 0, run->comm);
  if (status == PLM_OK) return PLM_OK;
  MPI_Bcast(run->message, (int)sizeof run->message, MPI_CHAR, 0, run->comm);
  run->message[sizeof run->message - 1] = '\0';
  run->report->failed_rank = 0;
  return plm__fail_raw((plm_status)status, "rank 0: %s", run->message);
}

/* Each rank's frames per second, to rank 0's report. */
static void gather_rates(mpi_run *run) {
  const plm_run_stream_report *local = &run->report->local;
  double mine = local->seconds > 0 ? (double)local->frames_delivered / local->seconds : 0.0;
  double *all = run->rank == 0 ? calloc((size_t)run->ranks, sizeof *all) : NULL;
  if (run->rank == 0 && !all) mine = 0.0; /* the figures are optional */
  MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, run->comm);
  for (int r = 0; all && r < run->ranks && r < PLM_MPI_REPORT_RANKS; r++)
    run->report->rank_frames_per_s[r] = all[r];
  free(all);
}

/* ---- the public API ----------------------------------------------------------------------- */

/* The checks as they travel from rank 0 (plm_mpi_check, fixed-size texts). */
enum { WHAT_SIZE = 32 };
typedef struct wire_checks {
  int64_t count; /* -1: none sent (rank 0 withdrew) */
  struct {
    uint64_t hash;
    char what[WHAT_SIZE];
    char shown[PLM_MPI_SHOWN_SIZE];
  } check[PLM_MPI_MAX_CHECKS];
} wire_checks;

static void pack_checks(const plm_mpi_check *checks, int count, wire_checks *wire) {
  memset(wire, 0, sizeof *wire);
  wire->count = checks ? count : -1;
  for (int c = 0; checks && c < count; c++) {
    wire->check[c].hash = checks[c].hash;
    snprintf(wire->check[c].what, WHAT_SIZE, "%s", checks[c].what ? checks[c].what : "");
    snprintf(wire->check[c].shown, PLM_MPI_SHOWN_SIZE, "%s",
             checks[c].shown ? checks[c].shown : "");
  }
}

/* Compare this rank's checks with rank 0's: fails the rank at the first that differs. */
static void compare_checks(mpi_run *run, const wire_checks *mine, const wire_checks *first) {
  char text[PLM_MPI_MESSAGE_SIZE];
  if (mine->count != first->count) {
    snprintf(text, sizeof text,
             "it has %lld checks of what it runs, but rank 0 has %lld: every rank must run the "
             "same",
             (long long)mine->count, (long long)first->count);
    fail_here(run, PLM_ERR_INVALID_ARG, true, text);
    return;
  }
  for (int64_t c = 0; c < mine->count; c++) {
    const char *what = mine->check[c].what, *shown = mine->check[c].shown,
               *shown0 = first->check[c].shown;
    if (strcmp(what, first->check[c].what) != 0)
      snprintf(text, sizeof text,
               "it checks its %s where rank 0 checks its %s: every rank must run the same", what,
               first->check[c].what);
    else if (mine->check[c].hash == first->check[c].hash)
      continue;
    else if (strcmp(shown, shown0) != 0)
      snprintf(text, sizeof text,
               "not the same %s as rank 0: %s here, %s on rank 0 (every rank must run the same)",
               what, shown, shown0);
    else
      snprintf(text, sizeof text,
               "not the same %s as rank 0 (%s on both, but not alike; every rank must run the "
               "same)",
               what, shown[0] ? shown : "described alike");
    fail_here(run, PLM_ERR_INVALID_ARG, true, text);
    return;
  }
}

/* Step 1 and the set-up: the run's bookkeeping, rank 0's checks compared on every rank
 * (checks NULL: none, as for a rank that withdrew), each rank's (status, count)
 * exchanged. Returns false when nobody runs (a rank failed before the run). */
static bool start(mpi_run *run, MPI_Comm comm, plm_status status, int64_t count,
                  const plm_mpi_check *checks, int check_count, const char *message,
                  plm_mpi_report *report) {
  memset(report, 0, sizeof *report);
  report->failed_rank = -1;
  report->local.failed_frame = -1;
  run->comm = comm;
  run->report = report;
  run->started_s = plm__monotonic_seconds();
  MPI_Comm_rank(comm, &run->rank);
  MPI_Comm_size(comm, &run->ranks);
  report->ranks = run->ranks;
  run->stop_received = calloc((size_t)run->ranks, sizeof *run->stop_received);
  run->stop_sent = calloc((size_t)run->ranks, sizeof *run->stop_sent);
  int64_t *all = calloc((size_t)run->ranks * 2, sizeof *all);
  /* A few bytes per rank: without them no collective can go on. */
  if (!run->stop_received || !run->stop_sent || !all) MPI_Abort(comm, 1);
  if (status != PLM_OK) fail_here(run, status, true, message);
  /* Two copies of a few kilobytes: on the heap, not the stack. */
  wire_checks *wire = malloc(2 * sizeof *wire);
  if (!wire) MPI_Abort(comm, 1);
  pack_checks(run->status == PLM_OK ? checks : NULL, check_count, &wire[0]);
  if (run->rank == 0) wire[1] = wire[0];
  MPI_Bcast(&wire[1], (int)sizeof wire[1], MPI_BYTE, 0, comm);
  if (run->rank != 0 && run->status == PLM_OK && wire[1].count >= 0)
    compare_checks(run, &wire[0], &wire[1]);
  free(wire);
  int64_t mine[2] = {run->status != PLM_OK, count};
  MPI_Allgather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T, comm);
  bool everyone = true;
  for (int r = 0; r < run->ranks; r++) everyone = everyone && all[2 * r] == 0;
  if (everyone && all[1] != count) {
    char text[160];
    snprintf(text, sizeof text,
             "%lld frames, but rank 0 has %lld: every rank must see the same frames",
             (long long)count, (long long)all[1]);
    fail_here(run, PLM_ERR_INVALID_ARG, true, text);
  }
  for (int r = 0; r < run->ranks; r++) everyone = everyone && all[2 * r + 1] == all[1];
  free(all);
  return everyone;
}

static void finish(mpi_run *run) {
  free(run->spool);
  free(run->stop_received);
  free(run->stop_sent);
}

/* Whether this rank's arguments can run: the status, and why not in why. */
static plm_status check_arguments(plm_pipeline *pl, int rank, const plm_mpi_frames *frames,
                                  const plm_run_stream_options *options, char *why, size_t size) {
  if (!pl || !frames || !frames->source || !frames->pack) {
    snprintf(why, size, "pl, frames, frames->source or frames->pack is NULL");
    return PLM_ERR_INVALID_ARG;
  }
  if (rank == 0 && !frames->deliver) {
    snprintf(why, size, "frames->deliver is NULL on rank 0");
    return PLM_ERR_INVALID_ARG;
  }
  if (frames->count < 0) {
    snprintf(why, size, "frames->count %lld is negative", (long long)frames->count);
    return PLM_ERR_INVALID_ARG;
  }
  if (options && options->batch > 1) {
    snprintf(why, size,
             "options->batch is %d: the ranks run their blocks a frame at a time (batches are "
             "for plm_pipeline_run_stream)",
             options->batch);
    return PLM_ERR_UNSUPPORTED;
  }
  if (options && options->max_frames != 0) {
    snprintf(why, size, "options->max_frames is %lld: the ranks' blocks say how many",
             (long long)options->max_frames);
    return PLM_ERR_INVALID_ARG;
  }
  plm_plan_info info;
  plm_status status = plm_pipeline_plan_info(pl, &info);
  if (status != PLM_OK) {
    snprintf(why, size, "%s", plm_last_error());
    return status;
  }
  if (frames->check_count < 0 || frames->check_count > PLM_MPI_MAX_CHECKS ||
      (frames->check_count > 0 && !frames->checks)) {
    snprintf(why, size, "frames->check_count is %d (checks %s): 0 to %d", frames->check_count,
             frames->checks ? "given" : "NULL", PLM_MPI_MAX_CHECKS);
    return PLM_ERR_INVALID_ARG;
  }
  if (info.states == 0) return PLM_OK;
  snprintf(why, size,
           "the pipeline has %d state%s (a background, a previous value): its state carries "
           "from frame to frame, and ranks starting it afresh at their first frame would give "
           "other results than one process; run it in one process",
           info.states, info.states == 1 ? "" : "s");
  return PLM_ERR_UNSUPPORTED;
}

plm_status plm_mpi_run_stream(plm_pipeline *pl, MPI_Comm comm, const plm_mpi_frames *frames,
                              const plm_run_stream_options *options, plm_mpi_report *report) {
  if (!report) return plm__fail(PLM_ERR_INVALID_ARG, "report is NULL");
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  char why[PLM_MPI_MESSAGE_SIZE] = "";
  plm_status status = check_arguments(pl, rank, frames, options, why, sizeof why);

  mpi_run run = {.frames = frames};
  const bool checked = status == PLM_OK;
  if (start(&run, comm, status, frames ? frames->count : 0, checked ? frames->checks : NULL,
            checked ? frames->check_count : 0, why, report)) {
    plm_mpi_share(frames->count, run.rank, run.ranks, &run.first, &run.count);
    report->first = run.first;
    report->count = run.count;
    run_block(&run, pl, options);
    if (run.status != PLM_OK && run.primary) send_stop(&run);
  }
  status = agree(&run);
  if (status == PLM_OK) status = gather(&run);
  if (status == PLM_OK) gather_rates(&run);
  if (run.rank == 0) {
    report->seconds = plm__monotonic_seconds() - run.started_s;
    if (report->seconds > 0)
      report->frames_per_s = (double)report->frames_delivered / report->seconds;
  }
  finish(&run);
  return status;
}

plm_status plm_mpi_withdraw(MPI_Comm comm, plm_status status, const char *message,
                            plm_mpi_report *report) {
  plm_mpi_report ignored;
  if (!report) report = &ignored;
  if (status == PLM_OK) {
    status = PLM_ERR_INVALID_ARG;
    message = "plm_mpi_withdraw: status is PLM_OK";
  }
  mpi_run run = {0};
  start(&run, comm, status, -1, NULL, 0, message ? message : "", report);
  status = agree(&run);
  finish(&run);
  return status;
}

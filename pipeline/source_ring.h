/* pipeline/source_ring.h: frames' inputs on their way from the user's source to the
 * streaming executor (internal; the contract users see is plm_pipeline_run_stream's, in
 * plume/pipeline.h, and the executor is pipeline/executor.c).
 *
 * The ring holds R = K + N sets of pinned host input buffers (plm_host_alloc), K being
 * the frames in flight and N the frames the source may run ahead (source_ahead). Frame
 * k's inputs are entry k mod R. Two ways to fill them:
 *
 *   N = 0   the source is called on the taker's thread, inside plm__source_ring_take,
 *           for the frame taken: R = K, and entry k mod K is free because the executor
 *           has released frame k - K (retired its slot) before taking frame k. This is
 *           the executor as it always was, one code path for both ways.
 *   N > 0   a thread of the ring's own, started by open, calls the source for frames
 *           0, 1, 2, ... in order, one call at a time, each into its entry once that
 *           entry is free: frame k waits until frame k - R has been released. With K
 *           frames in flight that keeps the source at most N frames ahead of the frame
 *           the taker takes next. The thread stops after the source ends or fails (it is
 *           not called again), before frame max_frames (when not 0), or when told to
 *           stop; a call in progress always finishes first.
 *
 * The taker (one thread) takes frames in order 0, 1, 2, ... and releases them in the
 * same order once nothing reads their entry any more (their upload is complete). A
 * source failure reaches the taker as the source's status with the source's message set
 * as the taker's plm_last_error (the message is thread-local: it is captured on the
 * source's thread right after the call), so both ways report alike.
 *
 * Synchronisation (N > 0): one mutex and two condition variables, `filled` (a frame is
 * filled, or the thread is finished) and `freed` (an entry is free, or stop was asked).
 * An entry's bytes pass from the source to the taker through the mutex: written before
 * `filled_count` is raised under it, read after the taker has seen the raise. Nothing is
 * allocated after open.
 */
#ifndef PLUME_PIPELINE_SOURCE_RING_H
#define PLUME_PIPELINE_SOURCE_RING_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "plume/pipeline.h"

typedef struct plm__source_ring_config {
  plm_context *ctx; /* the buffers' context (plm_host_alloc) */
  plm_frame_source_fn source;
  void *user;
  int inputs_count;
  const size_t *input_bytes; /* per input; read during open only */
  int in_flight;             /* K >= 1 */
  int ahead;                 /* N >= 0 */
  int64_t max_frames;        /* the source is never asked for this frame or later; 0: no limit */
} plm__source_ring_config;

/* The fields are the ring's own; the executor embeds the struct (zeroed) in its run. */
typedef struct plm__source_ring {
  plm__source_ring_config cfg;
  int entries;            /* R */
  void **buffers;         /* R x inputs_count: entry e's inputs at buffers + e * inputs_count */
  int64_t released_count; /* frames 0 .. released_count - 1 released */
  /* The source's thread (ahead > 0); guarded by lock once it runs. */
  bool threaded; /* lock, conds and thread made */
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t filled, freed;
  int64_t filled_count; /* frames 0 .. filled_count - 1 are in their entries */
  bool stop_asked;
  bool finished;      /* the thread calls the source no more */
  bool ended;         /* ... because the source set end before frame filled_count */
  plm_status failure; /* ... because the source failed at frame filled_count */
  char message[1024]; /* the source's plm_last_error with that failure */
} plm__source_ring;

/* Make the ring's buffers (and, when cfg->ahead > 0, start the source's thread: the
 * source may be called from the moment this returns). ring must be zeroed. On failure
 * (PLM_ERR_OUT_OF_MEMORY for the buffers, PLM_ERR_BACKEND when no thread can be made;
 * the message is raw) plm__source_ring_close releases what was made. */
plm_status plm__source_ring_open(plm__source_ring *ring, const plm__source_ring_config *cfg);

/* The inputs of `frame`, the next frame in order (0, 1, 2, ...), below max_frames when
 * there is one. Blocks until the source has filled it (ahead > 0), or calls the source
 * for it (ahead 0). Returns PLM_OK with *inputs set, PLM_OK with *end set when the
 * source ended before this frame, or the source's status with its message (empty when
 * it set none) as this thread's plm_last_error. */
plm_status plm__source_ring_take(plm__source_ring *ring, int64_t frame, void *const **inputs,
                                 bool *end);

/* Frame `frame` (the oldest taken and not released) no longer reads its entry: the
 * source may fill it again. */
void plm__source_ring_release(plm__source_ring *ring, int64_t frame);

/* Tell the source's thread to stop and wait for it: a source call in progress finishes,
 * no other begins. Returns at once when there is no thread or it has stopped already. */
void plm__source_ring_stop(plm__source_ring *ring);

/* Stop (as above), then free the buffers. Work that reads them (uploads) must have
 * completed. Safe on a zeroed ring and after a failed open. */
void plm__source_ring_close(plm__source_ring *ring);

#endif /* PLUME_PIPELINE_SOURCE_RING_H */

/* pipeline/source_ring.c: the frames' inputs between the source and the executor
 * (pipeline/source_ring.h). */
#define _GNU_SOURCE /* pthread_setname_np */

#include "pipeline/source_ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "streams/assert.h"
#include "streams/error.h"

static void *const *entry_of(const plm__source_ring *ring, int64_t frame) {
  return ring->buffers + (size_t)(frame % ring->entries) * (size_t)ring->cfg.inputs_count;
}

static bool below_limit(const plm__source_ring *ring, int64_t frame) {
  return ring->cfg.max_frames == 0 || frame < ring->cfg.max_frames;
}

/* Call the source for frame; the thread's message is its own (cleared before). */
static plm_status call_source(plm__source_ring *ring, int64_t frame, bool *end) {
  *end = false;
  plm_clear_error();
  return ring->cfg.source(ring->cfg.user, frame, entry_of(ring, frame), end);
}

/* ---- the source's thread ----------------------------------------------------------------- */

/* Wait until frame's entry is free (frame - R released); false when stop was asked. */
static bool wait_for_entry(plm__source_ring *ring, int64_t frame) {
  pthread_mutex_lock(&ring->lock);
  while (!ring->stop_asked && frame >= ring->released_count + ring->entries)
    pthread_cond_wait(&ring->freed, &ring->lock);
  const bool go = !ring->stop_asked;
  pthread_mutex_unlock(&ring->lock);
  return go;
}

/* Publish a source call's outcome for frame filled_count; returns whether to go on. */
static bool publish(plm__source_ring *ring, plm_status status, bool end) {
  pthread_mutex_lock(&ring->lock);
  if (status != PLM_OK) {
    ring->failure = status;
    snprintf(ring->message, sizeof ring->message, "%s", plm_last_error());
  }
  ring->ended = status == PLM_OK && end;
  if (status == PLM_OK && !end) ring->filled_count++;
  ring->finished = status != PLM_OK || end;
  pthread_cond_signal(&ring->filled);
  pthread_mutex_unlock(&ring->lock);
  return status == PLM_OK && !end;
}

static void finish(plm__source_ring *ring) {
  pthread_mutex_lock(&ring->lock);
  ring->finished = true;
  pthread_cond_signal(&ring->filled);
  pthread_mutex_unlock(&ring->lock);
}

static void *source_main(void *arg) {
  plm__source_ring *ring = arg;
  for (int64_t frame = 0; below_limit(ring, frame); frame++) {
    if (!wait_for_entry(ring, frame)) break;
    bool end = false;
    plm_status status = call_source(ring, frame, &end);
    if (!publish(ring, status, end)) return NULL;
  }
  finish(ring);
  return NULL;
}

static plm_status start_thread(plm__source_ring *ring) {
  pthread_mutex_init(&ring->lock, NULL);
  pthread_cond_init(&ring->filled, NULL);
  pthread_cond_init(&ring->freed, NULL);
  int err = pthread_create(&ring->thread, NULL, source_main, ring);
  if (err != 0) {
    pthread_cond_destroy(&ring->freed);
    pthread_cond_destroy(&ring->filled);
    pthread_mutex_destroy(&ring->lock);
    return plm__fail_raw(PLM_ERR_BACKEND, "pthread_create for the source's thread failed: %s",
                         strerror(err));
  }
  pthread_setname_np(ring->thread, "plm-source");
  ring->threaded = true;
  return PLM_OK;
}

/* ---- the taker's side ---------------------------------------------------------------------- */

plm_status plm__source_ring_open(plm__source_ring *ring, const plm__source_ring_config *cfg) {
  PLM_ASSERT(cfg->in_flight >= 1 && cfg->ahead >= 0);
  ring->cfg = *cfg;
  ring->cfg.input_bytes = NULL; /* read here only */
  ring->entries = cfg->in_flight + cfg->ahead;
  const size_t count = (size_t)ring->entries * (size_t)cfg->inputs_count;
  ring->buffers = calloc(count ? count : 1, sizeof *ring->buffers);
  if (!ring->buffers)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for %d input sets", ring->entries);
  for (size_t b = 0; b < count; b++) {
    plm_status status = plm_host_alloc(cfg->ctx, cfg->input_bytes[b % (size_t)cfg->inputs_count],
                                       &ring->buffers[b]);
    if (status != PLM_OK) return status;
  }
  return cfg->ahead > 0 ? start_thread(ring) : PLM_OK;
}

/* The outcome the thread published for frame, once there is one (ahead > 0). */
static plm_status await_frame(plm__source_ring *ring, int64_t frame, bool *end) {
  pthread_mutex_lock(&ring->lock);
  while (ring->filled_count <= frame && !ring->finished)
    pthread_cond_wait(&ring->filled, &ring->lock);
  plm_status status = PLM_OK;
  if (ring->filled_count <= frame) {
    PLM_ASSERT(ring->filled_count == frame && (ring->ended || ring->failure != PLM_OK));
    *end = ring->ended;
    status = ring->failure;
    if (status == PLM_OK && !*end)
      status = plm__fail_raw(PLM_ERR_INTERNAL, "frame %lld was taken after the source stopped",
                             (long long)frame);
    else if (status != PLM_OK && ring->message[0])
      plm__fail_raw(status, "%s", ring->message);
    else
      plm_clear_error();
  }
  pthread_mutex_unlock(&ring->lock);
  return status;
}

plm_status plm__source_ring_take(plm__source_ring *ring, int64_t frame, void *const **inputs,
                                 bool *end) {
  PLM_ASSERT(below_limit(ring, frame) && frame >= ring->released_count &&
             frame < ring->released_count + ring->entries);
  *end = false;
  plm_status status =
      ring->threaded ? await_frame(ring, frame, end) : call_source(ring, frame, end);
  if (status == PLM_OK && !*end) *inputs = entry_of(ring, frame);
  return status;
}

void plm__source_ring_release(plm__source_ring *ring, int64_t frame) {
  PLM_ASSERT(frame == ring->released_count);
  if (!ring->threaded) {
    ring->released_count = frame + 1;
    return;
  }
  pthread_mutex_lock(&ring->lock);
  ring->released_count = frame + 1;
  pthread_cond_signal(&ring->freed);
  pthread_mutex_unlock(&ring->lock);
}

void plm__source_ring_stop(plm__source_ring *ring) {
  if (!ring->threaded || ring->stop_asked) return;
  pthread_mutex_lock(&ring->lock);
  ring->stop_asked = true;
  pthread_cond_signal(&ring->freed);
  pthread_mutex_unlock(&ring->lock);
  pthread_join(ring->thread, NULL);
}

void plm__source_ring_close(plm__source_ring *ring) {
  plm__source_ring_stop(ring);
  if (ring->threaded) {
    pthread_cond_destroy(&ring->freed);
    pthread_cond_destroy(&ring->filled);
    pthread_mutex_destroy(&ring->lock);
  }
  const size_t count = (size_t)ring->entries * (size_t)ring->cfg.inputs_count;
  for (size_t b = 0; ring->buffers && b < count; b++)
    if (ring->buffers[b]) plm_host_free(ring->cfg.ctx, ring->buffers[b]);
  free(ring->buffers);
  memset(ring, 0, sizeof *ring);
}

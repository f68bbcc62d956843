/* pool/pool_poison.c: the pool's free memory poisoned for AddressSanitizer, in stream
 * order (pool/pool_poison.h). Compiled to nothing without AddressSanitizer. */
#include "pool/pool_poison.h"

#if PLM_POOL_POISON

#include <stdio.h>
#include <stdlib.h>

#include <sanitizer/asan_interface.h>

#include "plume_build_config.h"
#include "pool/pool_internal.h"
#include "streams/error.h"

/* A range to poison when a stream gets to its host function. */
struct pool_note {
  plm_pool *pool;
  uintptr_t addr;
  size_t bytes;           /* 0: withdrawn */
  void *stream;           /* the backend stream it goes on */
  pool_note *prev, *next; /* in the pool's notes */
  pool_note *unsent;      /* in the making thread's list, until sent */
};

/* The notes this thread made during its current pool call, to send once the call has
 * released the pool's locks. */
static _Thread_local pool_note *unsent_notes;

void plm__pool_poison_init(plm_pool *pool) {
  /* Host memory: the host backend's, and the emulated GPU's. A GPU's is not. */
  pool->poison.on = pool->backend->kind == PLM_BACKEND_HOST || PLM_BUILD_CUDA_EMULATED;
  pool->poison.notes = NULL;
}

void plm__pool_poison_now(plm_pool *pool, uintptr_t addr, size_t bytes) {
  if (pool->poison.on && bytes) ASAN_POISON_MEMORY_REGION((void *)addr, bytes);
}

void plm__pool_unpoison_chunk(plm_pool *pool, uintptr_t addr, size_t bytes) {
  if (pool->poison.on && bytes) ASAN_UNPOISON_MEMORY_REGION((void *)addr, bytes);
}

static void unlink_note(plm_pool *pool, pool_note *note) {
  if (note->prev)
    note->prev->next = note->next;
  else
    pool->poison.notes = note->next;
  if (note->next) note->next->prev = note->prev;
}

/* Take [begin, end) out of every pending note: what is left of a note is its part
 * before the range or after it, the larger when it has both (the header says why). */
static void withdraw(plm_pool *pool, uintptr_t begin, uintptr_t end) {
  for (pool_note *note = pool->poison.notes; note; note = note->next) {
    const uintptr_t first = note->addr, last = note->addr + note->bytes;
    if (last <= begin || first >= end) continue;
    const size_t before = begin > first ? begin - first : 0;
    const size_t after = last > end ? last - end : 0;
    if (before >= after) {
      note->bytes = before;
    } else {
      note->addr = end;
      note->bytes = after;
    }
  }
}

/* A note of [addr, addr + bytes) for `stream`, listed in the pool's notes and in this
 * thread's unsent ones. Without host memory there is none (a report may be missed). */
static void make_note(plm_pool *pool, uintptr_t addr, size_t bytes, void *stream) {
  if (!pool->poison.on || !bytes) return;
  pool_note *note = malloc(sizeof *note);
  if (!note) return;
  *note = (pool_note){
      .pool = pool, .addr = addr, .bytes = bytes, .stream = stream, .next = pool->poison.notes};
  if (note->next) note->next->prev = note;
  pool->poison.notes = note;
  note->unsent = unsent_notes;
  unsent_notes = note;
}

void plm__pool_poison_handout(plm_pool *pool, uintptr_t addr, size_t size, size_t bytes,
                              void *stream) {
  if (!pool->poison.on) return;
  withdraw(pool, addr, addr + size);
  ASAN_UNPOISON_MEMORY_REGION((void *)addr, bytes);
  make_note(pool, addr + bytes, size - bytes, stream);
}

void plm__pool_poison_freed(plm_pool *pool, uintptr_t addr, size_t bytes, void *stream) {
  make_note(pool, addr, bytes, stream);
}

/* The host function of a note: its stream has got there. */
static void run_note(void *user) {
  pool_note *note = user;
  plm_pool *pool = note->pool;
  pthread_mutex_lock(&pool->lock);
  if (note->bytes) ASAN_POISON_MEMORY_REGION((void *)note->addr, note->bytes);
  unlink_note(pool, note);
  pthread_mutex_unlock(&pool->lock);
  free(note);
}

/* Whether a note may go on its stream now (the header says when it may not). */
static bool sendable(const pool_note *note) {
  const plm__backend_iface *backend = note->pool->backend;
  void *ctx = note->pool->backend_ctx;
  if (plm__in_host_callback()) return false;
  return !backend->stream_capturing || !backend->stream_capturing(ctx, note->stream);
}

/* A note that cannot go is dropped (the header says what that costs), and the caller's
 * message is kept: a failed enqueue is no failure of its call. */
void plm__pool_poison_send(void) {
  if (!unsent_notes) return;
  char message[512];
  snprintf(message, sizeof message, "%s", plm_last_error());
  bool dropped = false;
  while (unsent_notes) {
    pool_note *note = unsent_notes;
    unsent_notes = note->unsent;
    plm_pool *pool = note->pool;
    if (sendable(note) && pool->backend->stream_enqueue_host(pool->backend_ctx, note->stream,
                                                             run_note, note) == PLM_OK)
      continue;
    dropped = true;
    pthread_mutex_lock(&pool->lock);
    unlink_note(pool, note);
    pthread_mutex_unlock(&pool->lock);
    free(note);
  }
  if (dropped) plm__fail_raw(PLM_OK, "%s", message);
}

void plm__pool_poison_destroy(plm_pool *pool) {
  while (pool->poison.notes) {
    pool_note *note = pool->poison.notes;
    unlink_note(pool, note);
    free(note);
  }
}

#endif /* PLM_POOL_POISON */

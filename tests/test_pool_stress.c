/* tests/test_pool_stress.c: four threads hammering one device pool (plume/pool.h)
 * with random allocations and frees, on the backend under test.
 *
 * Each thread owns one stream and runs a deterministic random sequence (xorshift,
 * seeded from PLUME_STRESS_SEED and the thread) of allocations, with sizes from
 * 1 B to 16 MiB drawn log-uniformly, and frees. Every block gets a pattern derived
 * from its id, written into its first and last 4 KiB (the whole block when it is
 * at most 8 KiB) with a host-to-device copy right after the allocation, and read
 * back with a device-to-host copy enqueued just before its free; the thread
 * compares what it read after its next stream synchronisation (once per BATCH_OPS
 * operations), so every block is checked while the copies stay asynchronous. Only
 * stream operations touch the blocks, so the test means the same on cuda.
 *
 * A global interval set of live blocks catches overlapping allocations; every
 * pointer must be 256-byte aligned. Passes:
 *   same_stream    every block is freed on the stream it was allocated on;
 *   hand_off       some blocks are passed (after their writer's synchronisation)
 *                  through a mutex-protected queue to the next thread, which checks
 *                  and frees them on its own stream: cross-stream frees and reuse;
 *   out_of_memory  a pool with PLM_POOL_NO_STREAM_WAITS and a 1 GiB byte limit
 *                  under more demand than that: out-of-memory is an allowed result
 *                  of an allocation (counted; its message must say so), never a
 *                  crash, and the pool must stay consistent;
 *   stream_waits   the same with stream waits allowed, so that the ladder reuses
 *                  other streams' pending frees behind device-side waits;
 *   concurrent_trim  as hand_off, shorter, while the main thread calls
 *                  plm_pool_trim every TRIM_INTERVAL_MS.
 * Now and then a thread holds its stream up with a host callback that sleeps, so
 * that frees stay pending while other streams allocate.
 * Afterwards the statistics must be consistent, plm_pool_trim(pool, 0) must give
 * every chunk back, and plm_pool_destroy must succeed. While the threads run, the
 * main thread samples the statistics and aborts with a report when no thread has
 * made progress for STALL_TIMEOUT_MS (a deadlock).
 *
 * PLUME_STRESS_OPS sets the total number of random operations of the two main
 * passes (default 1,000,000); the three shorter passes run a tenth of that each,
 * on top. PLUME_STRESS_SEED changes the seeds.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "plume/pool.h"
#include "kernels/common/splitmix64.h"

enum {
  THREADS = 4,
  ALIGNMENT = 256,
  END_BYTES = 4096,              /* checked at each end of a block */
  CHECK_BYTES = 2 * END_BYTES,   /* a block this small is checked whole */
  STAGING_SLOTS = 128,           /* pattern read-backs in flight per thread */
  BATCH_OPS = 64,                /* a thread synchronises at least this often */
  MAX_INBOX_BLOCKS = 64,         /* blocks waiting in a thread's hand-off queue */
  STREAM_DELAY_ONE_IN = 256,     /* operations between stream hold-ups, on average */
  TRIM_INTERVAL_MS = 1,          /* concurrent_trim: how often */
  PATTERN_TABLE_BYTES = 1 << 20, /* patterns are windows into this table */
  STALL_TIMEOUT_MS = 120000,
  SAMPLE_INTERVAL_MS = 5
};

static const double STREAM_DELAY_MS = 0.5;
static const size_t MAX_BLOCK_BYTES = (size_t)16 << 20;
static const size_t MIB = (size_t)1 << 20;
static const uint64_t DEFAULT_OPS = 1000000;
static const uint64_t DEFAULT_SEED = 0x5eed2024u;

typedef struct pass_config {
  const char *name;
  unsigned pool_flags;
  size_t byte_limit;         /* 0: a pool from plm_pool_create(ctx, NULL, ...) */
  unsigned hand_off_percent; /* of frees, passed to the next thread */
  unsigned alloc_percent;    /* chance of allocating when under the limits */
  bool concurrent_trim;      /* the main thread trims the pool while the threads run */
  size_t max_live_blocks;    /* per thread */
  size_t max_live_bytes;     /* per thread */
  bool oom_allowed;
  unsigned seed_salt;
} pass_config;

/* ---- random numbers ------------------------------------------------------------ */

static uint64_t xorshift64(uint64_t *state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}

static uint64_t below(uint64_t *rng, uint64_t n) {
  return xorshift64(rng) % n;
}

/* 2^(24 u) bytes for u uniform in [0, 1): log-uniform from 1 B to 16 MiB. The
 * fraction's power of two uses a quadratic within 0.3% of 2^f (no libm). */
static size_t draw_size(uint64_t *rng) {
  uint64_t fixed = (xorshift64(rng) >> 32) * 24; /* 24 u, 32.32 fixed point */
  unsigned octave = (unsigned)(fixed >> 32);
  double f = (double)(fixed & 0xffffffffu) / 4294967296.0;
  double bytes = (double)((uint64_t)1 << octave) * (1.0 + f * (0.6565 + 0.3435 * f));
  size_t size = (size_t)bytes;
  if (size < 1) size = 1;
  return size > MAX_BLOCK_BYTES ? MAX_BLOCK_BYTES : size;
}

/* ---- the interval set of live blocks ------------------------------------------------ */

typedef struct interval {
  uintptr_t start, end; /* [start, end) */
  uint64_t id;
} interval;

typedef struct interval_set {
  pthread_mutex_t lock;
  interval *items; /* sorted by start; never overlapping */
  size_t count, capacity;
} interval_set;

/* The index of the first interval starting at or after addr. */
static size_t interval_lower_bound(const interval_set *set, uintptr_t addr) {
  size_t lo = 0, hi = set->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (set->items[mid].start < addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

typedef enum insert_result { INSERTED, OVERLAPS, NO_HOST_MEMORY } insert_result;

/* Insert item unless it overlaps a live interval, which is then copied to *clash. */
static insert_result interval_insert(interval_set *set, interval item, interval *clash) {
  insert_result result = INSERTED;
  pthread_mutex_lock(&set->lock);
  size_t at = interval_lower_bound(set, item.start);
  if (at > 0 && set->items[at - 1].end > item.start) {
    *clash = set->items[at - 1];
    result = OVERLAPS;
  } else if (at < set->count && set->items[at].start < item.end) {
    *clash = set->items[at];
    result = OVERLAPS;
  } else if (set->count == set->capacity) {
    size_t capacity = set->capacity ? 2 * set->capacity : 1024;
    interval *grown = realloc(set->items, capacity * sizeof *grown);
    if (grown) {
      set->items = grown;
      set->capacity = capacity;
    } else {
      result = NO_HOST_MEMORY;
    }
  }
  if (result == INSERTED) {
    memmove(&set->items[at + 1], &set->items[at], (set->count - at) * sizeof *set->items);
    set->items[at] = item;
    set->count++;
  }
  pthread_mutex_unlock(&set->lock);
  return result;
}

/* Remove the interval of block `id` starting at start; false when it is not there. */
static bool interval_remove(interval_set *set, uintptr_t start, uint64_t id) {
  pthread_mutex_lock(&set->lock);
  size_t at = interval_lower_bound(set, start);
  bool found = at < set->count && set->items[at].start == start && set->items[at].id == id;
  if (found) {
    memmove(&set->items[at], &set->items[at + 1], (set->count - at - 1) * sizeof *set->items);
    set->count--;
  }
  pthread_mutex_unlock(&set->lock);
  return found;
}

/* ---- one run: the shared state and the workers --------------------------------------- */

typedef struct block {
  unsigned char *ptr;
  size_t bytes;
  uint64_t id; /* allocating thread in the top byte, then a serial number */
} block;

typedef enum worker_phase {
  PHASE_RANDOM,
  PHASE_FREE_OWN,
  PHASE_FREE_RECEIVED,
  PHASE_DONE
} worker_phase;

static const char *const PHASE_NAMES[] = {"random operations", "freeing its own blocks",
                                          "freeing received blocks until all have handed over",
                                          "done"};

typedef struct stress_run stress_run;

typedef struct worker {
  stress_run *run;
  int index;
  plm_stream *stream;
  uint64_t seed, rng;
  uint64_t quota; /* random operations */
  uint64_t next_serial;

  block *live; /* at most max_live_blocks */
  size_t live_count, live_bytes;
  block outgoing[BATCH_OPS]; /* handed to the next thread at the next synchronisation */
  size_t outgoing_count;
  block checks[STAGING_SLOTS]; /* read back into staging slot i, compared at the sync */
  size_t check_count;
  unsigned char *staging;

  pthread_mutex_t inbox_lock; /* blocks handed over by the previous thread */
  block *inbox;
  size_t inbox_count, inbox_capacity;

  uint64_t ops, allocs, ooms, frees, received_frees, handed_off, syncs;
  atomic_uint_fast64_t progress;
  atomic_int phase;
} worker;

struct stress_run {
  const pass_config *cfg;
  plm_pool *pool;
  unsigned char *patterns; /* PATTERN_TABLE_BYTES + CHECK_BYTES, read-only once filled */
  interval_set live_set;
  worker workers[THREADS];

  pthread_mutex_t state_lock;
  pthread_cond_t state_changed;
  int freed_own; /* workers past PHASE_FREE_OWN: nobody hands off any more */
  int done;
  atomic_bool failed;
  char failure[2048]; /* the first failure; guarded by state_lock */
};

static void run_fail(stress_run *run, const char *format, ...) {
  pthread_mutex_lock(&run->state_lock);
  if (!atomic_load(&run->failed)) {
    va_list args;
    va_start(args, format);
    vsnprintf(run->failure, sizeof run->failure, format, args);
    va_end(args);
    atomic_store(&run->failed, true);
  }
  pthread_cond_broadcast(&run->state_changed);
  pthread_mutex_unlock(&run->state_lock);
}

static bool failed(const stress_run *run) {
  return atomic_load(&run->failed);
}

/* Record a failure when a plume call on a worker did not succeed. */
static bool worker_ok(worker *w, plm_status status, const char *what) {
  if (status == PLM_OK) return true;
  run_fail(w->run, "%s: thread %d: %s -> %s: %s", w->run->cfg->name, w->index, what,
           plm_status_str(status), plm_last_error());
  return false;
}

static const unsigned char *pattern_of(const stress_run *run, uint64_t id) {
  return run->patterns + splitmix64_hash(id) % PATTERN_TABLE_BYTES;
}

static size_t checked_bytes(size_t bytes) {
  return bytes <= CHECK_BYTES ? bytes : CHECK_BYTES;
}

/* Enqueue the copies between the checked parts of a block and a host buffer laid
 * out as [first END_BYTES | last END_BYTES] (or the whole small block). */
static plm_status copy_ends(plm_stream *stream, const block *b, unsigned char *host,
                            plm_copy_kind kind) {
  bool to_device = kind == PLM_COPY_HOST_TO_DEVICE;
  if (b->bytes <= CHECK_BYTES)
    return to_device ? plm_stream_memcpy(stream, b->ptr, host, b->bytes, kind)
                     : plm_stream_memcpy(stream, host, b->ptr, b->bytes, kind);
  unsigned char *tail = b->ptr + b->bytes - END_BYTES;
  plm_status status = to_device ? plm_stream_memcpy(stream, b->ptr, host, END_BYTES, kind)
                                : plm_stream_memcpy(stream, host, b->ptr, END_BYTES, kind);
  if (status != PLM_OK) return status;
  return to_device ? plm_stream_memcpy(stream, tail, host + END_BYTES, END_BYTES, kind)
                   : plm_stream_memcpy(stream, host + END_BYTES, tail, END_BYTES, kind);
}

static void verify_block(worker *w, const block *b, const unsigned char *got) {
  const unsigned char *expected = pattern_of(w->run, b->id);
  size_t n = checked_bytes(b->bytes);
  if (memcmp(got, expected, n) == 0) return;
  size_t at = 0;
  while (got[at] == expected[at]) at++;
  size_t offset = b->bytes <= CHECK_BYTES || at < END_BYTES ? at : b->bytes - CHECK_BYTES + at;
  run_fail(w->run,
           "%s: block %#" PRIx64
           " (allocated by thread %d: %zu bytes at %p), read back on "
           "thread %d's stream before its free: byte %zu is 0x%02x, expected 0x%02x (the pool "
           "handed its memory to someone else while it was live, or out of stream order)",
           w->run->cfg->name, b->id, (int)(b->id >> 56), b->bytes, (void *)b->ptr, w->index, offset,
           got[at], expected[at]);
}

/* Synchronise the stream, compare every block read back since the last time, and
 * hand the blocks set aside for it to the next thread (their pattern writes have
 * now finished, so the next thread's stream may use them without an event). */
static void batch_end(worker *w) {
  if (!worker_ok(w, plm_stream_synchronize(w->stream), "plm_stream_synchronize")) return;
  w->syncs++;
  for (size_t i = 0; i < w->check_count; i++)
    verify_block(w, &w->checks[i], w->staging + i * CHECK_BYTES);
  w->check_count = 0;
  if (w->outgoing_count == 0) return;
  worker *next = &w->run->workers[(w->index + 1) % THREADS];
  pthread_mutex_lock(&next->inbox_lock);
  if (next->inbox_count + w->outgoing_count > next->inbox_capacity) {
    size_t capacity = 2 * (next->inbox_count + w->outgoing_count);
    block *grown = realloc(next->inbox, capacity * sizeof *grown);
    if (grown) {
      next->inbox = grown;
      next->inbox_capacity = capacity;
    }
  }
  bool fits = next->inbox_count + w->outgoing_count <= next->inbox_capacity;
  if (fits) {
    memcpy(&next->inbox[next->inbox_count], w->outgoing, w->outgoing_count * sizeof *w->outgoing);
    next->inbox_count += w->outgoing_count;
  }
  pthread_mutex_unlock(&next->inbox_lock);
  if (!fits) run_fail(w->run, "no host memory for the hand-off queue");
  w->outgoing_count = 0;
}

/* Read a block back (compared at the next synchronisation) and free it, both on
 * this thread's stream. The read is enqueued before the free, so the pool's stream
 * order guarantees it sees the block's own contents. */
static void release(worker *w, const block *b) {
  if (w->check_count == STAGING_SLOTS) batch_end(w);
  if (!interval_remove(&w->run->live_set, (uintptr_t)b->ptr, b->id)) {
    run_fail(w->run, "%s: thread %d: block %#" PRIx64 " at %p vanished from the live set",
             w->run->cfg->name, w->index, b->id, (void *)b->ptr);
    return;
  }
  unsigned char *slot = w->staging + w->check_count * CHECK_BYTES;
  if (!worker_ok(w, copy_ends(w->stream, b, slot, PLM_COPY_DEVICE_TO_HOST), "read-back copy"))
    return;
  w->checks[w->check_count++] = *b;
  if (!worker_ok(w, plm_pool_free(w->run->pool, b->ptr, w->stream), "plm_pool_free")) return;
  w->frees++;
  atomic_fetch_add(&w->progress, 1);
}

static void allocate(worker *w, size_t bytes) {
  stress_run *run = w->run;
  void *ptr = (void *)1;
  plm_clear_error();
  plm_status status = plm_pool_alloc(run->pool, bytes, w->stream, &ptr);
  if (status == PLM_ERR_OUT_OF_MEMORY && run->cfg->oom_allowed) {
    if (ptr != NULL)
      run_fail(run, "%s: thread %d: failed plm_pool_alloc(%zu) left *ptr = %p", run->cfg->name,
               w->index, bytes, ptr);
    else if (!strstr(plm_last_error(), "out of memory"))
      run_fail(run, "%s: thread %d: out-of-memory message \"%s\" does not say \"out of memory\"",
               run->cfg->name, w->index, plm_last_error());
    w->ooms++;
    return;
  }
  char what[64];
  snprintf(what, sizeof what, "plm_pool_alloc(%zu)", bytes);
  if (!worker_ok(w, status, what)) return;
  block b = {.ptr = ptr, .bytes = bytes, .id = ((uint64_t)w->index << 56) | w->next_serial++};
  w->allocs++;
  if ((uintptr_t)b.ptr % ALIGNMENT != 0) {
    run_fail(run, "%s: thread %d: plm_pool_alloc(%zu) returned %p, not %d-byte aligned",
             run->cfg->name, w->index, bytes, ptr, ALIGNMENT);
    return;
  }
  interval clash;
  interval item = {.start = (uintptr_t)b.ptr, .end = (uintptr_t)b.ptr + bytes, .id = b.id};
  insert_result inserted = interval_insert(&run->live_set, item, &clash);
  if (inserted == OVERLAPS) {
    run_fail(run,
             "%s: thread %d: new block %#" PRIx64 " [%#" PRIxPTR ", %#" PRIxPTR
             ") (%zu bytes) "
             "overlaps live block %#" PRIx64 " [%#" PRIxPTR ", %#" PRIxPTR ") of thread %d",
             run->cfg->name, w->index, b.id, item.start, item.end, bytes, clash.id, clash.start,
             clash.end, (int)(clash.id >> 56));
    return;
  }
  if (inserted == NO_HOST_MEMORY) {
    run_fail(run, "no host memory for the live set");
    return;
  }
  /* The pattern table is never written while the threads run, so the copy may read
   * it whenever the stream gets to it. */
  unsigned char *pattern = (unsigned char *)pattern_of(run, b.id);
  if (!worker_ok(w, copy_ends(w->stream, &b, pattern, PLM_COPY_HOST_TO_DEVICE), "pattern copy"))
    return;
  w->live[w->live_count++] = b;
  w->live_bytes += bytes;
}

/* Whether the next thread has caught up enough to take more blocks (bounding the
 * memory in transit when it runs behind). */
static bool next_inbox_has_room(worker *w) {
  worker *next = &w->run->workers[(w->index + 1) % THREADS];
  pthread_mutex_lock(&next->inbox_lock);
  bool room = next->inbox_count < MAX_INBOX_BLOCKS;
  pthread_mutex_unlock(&next->inbox_lock);
  return room;
}

static void free_random(worker *w) {
  size_t i = (size_t)below(&w->rng, w->live_count);
  block b = w->live[i];
  w->live[i] = w->live[--w->live_count];
  w->live_bytes -= b.bytes;
  if (w->run->cfg->hand_off_percent && below(&w->rng, 100) < w->run->cfg->hand_off_percent &&
      next_inbox_has_room(w)) {
    if (w->outgoing_count == BATCH_OPS) batch_end(w);
    w->outgoing[w->outgoing_count++] = b;
    w->handed_off++;
    return;
  }
  release(w, &b);
}

/* Check and free the blocks the previous thread handed over. */
static void free_received(worker *w) {
  for (;;) {
    if (w->check_count == STAGING_SLOTS) batch_end(w);
    block b;
    pthread_mutex_lock(&w->inbox_lock);
    bool got = w->inbox_count > 0;
    if (got) b = w->inbox[--w->inbox_count];
    pthread_mutex_unlock(&w->inbox_lock);
    if (!got || failed(w->run)) return;
    release(w, &b);
    w->received_frees++;
  }
}

static void hold_up_stream(void *user) {
  (void)user;
  plm_test_sleep_ms(STREAM_DELAY_MS);
}

static void random_op(worker *w) {
  const pass_config *cfg = w->run->cfg;
  bool full = w->live_count >= cfg->max_live_blocks || w->live_bytes >= cfg->max_live_bytes;
  bool alloc = w->live_count == 0 || (!full && below(&w->rng, 100) < cfg->alloc_percent);
  if (alloc) {
    size_t bytes = draw_size(&w->rng);
    if (w->live_count > 0 && w->live_bytes + bytes > cfg->max_live_bytes)
      alloc = false;
    else
      allocate(w, bytes);
  }
  if (!alloc) free_random(w);
  /* Now and then hold the stream up, so that its frees stay pending while the host
   * runs ahead and other streams allocate: reuse must then respect stream order. */
  if (below(&w->rng, STREAM_DELAY_ONE_IN) == 0)
    worker_ok(w, plm_stream_enqueue_host(w->stream, hold_up_stream, NULL),
              "plm_stream_enqueue_host");
  w->ops++;
  atomic_fetch_add(&w->progress, 1);
  if (w->ops % BATCH_OPS == 0) {
    batch_end(w);
    free_received(w);
  }
}

static void deadline_in_ms(struct timespec *until, long ms) {
  clock_gettime(CLOCK_REALTIME, until);
  until->tv_nsec += ms * 1000000L;
  until->tv_sec += until->tv_nsec / 1000000000L;
  until->tv_nsec %= 1000000000L;
}

/* Wait until every thread has handed over its last blocks, freeing what arrives
 * meanwhile (so that blocks do not pile up in the queue of a thread that finished
 * early). */
static void free_received_until_all_freed_own(worker *w) {
  stress_run *run = w->run;
  for (;;) {
    free_received(w);
    if (w->check_count > 0) batch_end(w);
    pthread_mutex_lock(&run->state_lock);
    bool all = run->freed_own == THREADS || failed(run);
    if (!all) {
      struct timespec until;
      deadline_in_ms(&until, 1);
      pthread_cond_timedwait(&run->state_changed, &run->state_lock, &until);
    }
    pthread_mutex_unlock(&run->state_lock);
    if (all) return;
  }
}

static void count_in(stress_run *run, int *counter) {
  pthread_mutex_lock(&run->state_lock);
  (*counter)++;
  pthread_cond_broadcast(&run->state_changed);
  pthread_mutex_unlock(&run->state_lock);
}

static void *worker_main(void *arg) {
  worker *w = arg;
  stress_run *run = w->run;
  while (w->ops < w->quota && !failed(run)) random_op(w);

  atomic_store(&w->phase, PHASE_FREE_OWN);
  while (w->live_count > 0 && !failed(run)) {
    block b = w->live[--w->live_count];
    w->live_bytes -= b.bytes;
    release(w, &b);
  }
  if (!failed(run)) batch_end(w); /* compares, and hands over the last blocks */
  count_in(run, &run->freed_own);

  /* Once every thread has handed over its last blocks, nothing more can arrive. */
  atomic_store(&w->phase, PHASE_FREE_RECEIVED);
  free_received_until_all_freed_own(w);
  if (!failed(run)) free_received(w);
  if (!failed(run)) batch_end(w);
  atomic_store(&w->phase, PHASE_DONE);
  count_in(run, &run->done);
  return NULL;
}

/* ---- the main thread: statistics, stalls, the report -------------------------------- */

/* Consistency that must hold in any snapshot, even while threads run. */
static void check_stats_snapshot(stress_run *run, const plm_pool_stats *s) {
  const char *broken = NULL;
  if (s->bytes_in_use > s->bytes_reserved)
    broken = "bytes_in_use > bytes_reserved";
  else if (s->bytes_requested > s->bytes_in_use)
    broken = "bytes_requested > bytes_in_use";
  else if (s->bytes_in_use > s->peak_bytes_in_use)
    broken = "bytes_in_use > peak_bytes_in_use";
  else if (s->bytes_reserved > s->peak_bytes_reserved)
    broken = "bytes_reserved > peak_bytes_reserved";
  else if (s->peak_bytes_in_use > s->peak_bytes_reserved)
    broken = "peak_bytes_in_use > peak_bytes_reserved";
  else if (s->largest_free_block > s->bytes_reserved)
    broken = "largest_free_block > bytes_reserved";
  else if (s->hits > s->requests)
    broken = "hits > requests";
  else if (!(s->fragmentation >= 0.0 && s->fragmentation <= 1.0))
    broken = "fragmentation outside [0, 1]";
  else if (run->cfg->byte_limit && s->bytes_reserved > run->cfg->byte_limit)
    broken = "bytes_reserved > byte_limit";
  if (!broken) return;
  run_fail(run,
           "%s: inconsistent statistics (%s): requests %" PRIu64 ", hits %" PRIu64
           ", live_blocks %" PRIu64 ", bytes_in_use %" PRIu64 ", bytes_requested %" PRIu64
           ", bytes_reserved %" PRIu64 ", peak in use %" PRIu64 ", peak reserved %" PRIu64
           ", largest free %" PRIu64 ", fragmentation %g",
           run->cfg->name, broken, s->requests, s->hits, s->live_blocks, s->bytes_in_use,
           s->bytes_requested, s->bytes_reserved, s->peak_bytes_in_use, s->peak_bytes_reserved,
           s->largest_free_block, s->fragmentation);
}

static uint64_t total_progress(stress_run *run) {
  uint64_t sum = 0;
  for (int t = 0; t < THREADS; t++) sum += atomic_load(&run->workers[t].progress);
  return sum;
}

/* No thread has moved for STALL_TIMEOUT_MS: report where each one is and abort
 * (the pool's lock may be the one held, so the statistics are not read). */
static void report_stall_and_abort(stress_run *run) {
  fprintf(stderr, "%s: no progress for %d ms; the pool or a stream is deadlocked\n", run->cfg->name,
          STALL_TIMEOUT_MS);
  for (int t = 0; t < THREADS; t++) {
    worker *w = &run->workers[t];
    fprintf(stderr,
            "  thread %d: %s, %" PRIu64 " of %" PRIu64 " operations, %" PRIu64
            " allocations, %" PRIu64 " frees\n",
            t, PHASE_NAMES[atomic_load(&w->phase)], atomic_load(&w->progress), w->quota, w->allocs,
            w->frees);
  }
  fflush(stderr);
  abort();
}

/* Sample the statistics until every worker is done, watching for stalls; with
 * concurrent_trim, trim the pool (to varying sizes) every TRIM_INTERVAL_MS as well.
 * Returns the number of trims. */
static uint64_t monitor(stress_run *run) {
  bool trim = run->cfg->concurrent_trim;
  uint64_t last_progress = total_progress(run);
  double last_change = plm_test_now_ms();
  uint64_t trims = 0;
  for (;;) {
    pthread_mutex_lock(&run->state_lock);
    bool finished = run->done == THREADS;
    if (!finished) {
      struct timespec until;
      deadline_in_ms(&until, trim ? TRIM_INTERVAL_MS : SAMPLE_INTERVAL_MS);
      pthread_cond_timedwait(&run->state_changed, &run->state_lock, &until);
      finished = run->done == THREADS;
    }
    pthread_mutex_unlock(&run->state_lock);
    if (finished) return trims;
    uint64_t progress = total_progress(run);
    double now = plm_test_now_ms();
    if (progress != last_progress) {
      last_progress = progress;
      last_change = now;
    } else if (now - last_change > STALL_TIMEOUT_MS) {
      report_stall_and_abort(run);
    }
    plm_pool_stats stats;
    if (plm_pool_stats_get(run->pool, &stats) == PLM_OK) check_stats_snapshot(run, &stats);
    if (trim) {
      plm_status status = plm_pool_trim(run->pool, (size_t)(trims++ % 4) * 256 * MIB);
      if (status != PLM_OK)
        run_fail(run, "%s: concurrent plm_pool_trim -> %s: %s", run->cfg->name,
                 plm_status_str(status), plm_last_error());
    }
  }
}

static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *text = getenv(name);
  if (!text || !*text) return fallback;
  char *end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 0);
  ck_assert_msg(errno == 0 && *end == '\0' && value > 0, "%s=\"%s\" is not a positive integer",
                name, text);
  return value;
}

static double percent(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Run one pass of `ops` random operations over all threads. */
static void run_pass(const pass_config *cfg, uint64_t ops) {
  uint64_t base_seed = env_u64("PLUME_STRESS_SEED", DEFAULT_SEED);
  stress_run *run = calloc(1, sizeof *run);
  ck_assert_ptr_nonnull(run);
  run->cfg = cfg;
  pthread_mutex_init(&run->state_lock, NULL);
  pthread_cond_init(&run->state_changed, NULL);
  pthread_mutex_init(&run->live_set.lock, NULL);
  /* Pinned host memory, so that the copies stay asynchronous on cuda too. */
  PLM_CHECK_OK(
      plm_host_alloc(plm_test_ctx, PATTERN_TABLE_BYTES + CHECK_BYTES, (void **)&run->patterns));
  uint64_t fill = splitmix64_hash(base_seed) | 1;
  for (size_t i = 0; i < PATTERN_TABLE_BYTES + CHECK_BYTES; i++)
    run->patterns[i] = (unsigned char)(xorshift64(&fill) >> 56);

  if (cfg->byte_limit) {
    plm_pool_config config = plm_pool_config_default();
    config.flags = cfg->pool_flags;
    config.byte_limit = cfg->byte_limit;
    PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &config, &run->pool));
  } else {
    PLM_CHECK_OK(plm_pool_create(plm_test_ctx, NULL, &run->pool));
  }

  for (int t = 0; t < THREADS; t++) {
    worker *w = &run->workers[t];
    w->run = run;
    w->index = t;
    w->seed = splitmix64_hash(base_seed + (uint64_t)cfg->seed_salt * THREADS + (uint64_t)t) | 1;
    w->rng = w->seed;
    w->quota = ops / THREADS + ((uint64_t)t < ops % THREADS ? 1 : 0);
    w->live = calloc(cfg->max_live_blocks, sizeof *w->live);
    ck_assert_ptr_nonnull(w->live);
    PLM_CHECK_OK(
        plm_host_alloc(plm_test_ctx, (size_t)STAGING_SLOTS * CHECK_BYTES, (void **)&w->staging));
    pthread_mutex_init(&w->inbox_lock, NULL);
    atomic_init(&w->progress, 0);
    atomic_init(&w->phase, PHASE_RANDOM);
    PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &w->stream));
  }

  printf("%s: %d threads, %" PRIu64 " random operations, seed %#" PRIx64 " (thread seeds %#" PRIx64
         " %#" PRIx64 " %#" PRIx64 " %#" PRIx64 ")\n",
         cfg->name, THREADS, ops, base_seed, run->workers[0].seed, run->workers[1].seed,
         run->workers[2].seed, run->workers[3].seed);
  fflush(stdout);

  double start = plm_test_now_ms();
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++)
    ck_assert_int_eq(pthread_create(&threads[t], NULL, worker_main, &run->workers[t]), 0);
  uint64_t trims = monitor(run);
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  double seconds = (plm_test_now_ms() - start) / 1e3;
  ck_assert_msg(!failed(run), "%s", run->failure);

  uint64_t total_ops = 0, allocs = 0, frees = 0, received = 0, handed = 0, ooms = 0, syncs = 0;
  for (int t = 0; t < THREADS; t++) {
    const worker *w = &run->workers[t];
    total_ops += w->ops;
    allocs += w->allocs;
    frees += w->frees;
    received += w->received_frees;
    handed += w->handed_off;
    ooms += w->ooms;
    syncs += w->syncs;
    ck_assert_uint_eq(w->live_count, 0);
    ck_assert_uint_eq(w->inbox_count, 0);
  }
  ck_assert_uint_eq(total_ops, ops);
  ck_assert_uint_eq(frees, allocs);
  ck_assert_uint_eq(received, handed);
  ck_assert_uint_eq(run->live_set.count, 0);
  if (!cfg->oom_allowed) ck_assert_uint_eq(ooms, 0);

  for (int t = 0; t < THREADS; t++) PLM_CHECK_OK(plm_stream_synchronize(run->workers[t].stream));
  plm_pool_stats s;
  PLM_CHECK_OK(plm_pool_stats_get(run->pool, &s));
  check_stats_snapshot(run, &s);
  ck_assert_msg(!failed(run), "%s", run->failure);
  ck_assert_uint_eq(s.live_blocks, 0);
  ck_assert_uint_eq(s.bytes_in_use, 0);
  ck_assert_uint_eq(s.bytes_requested, 0);
  ck_assert_uint_eq(s.requests, allocs);
  ck_assert_uint_eq(s.failures, ooms);
  ck_assert_uint_le(s.hits, s.requests);
  ck_assert_uint_le(s.peak_bytes_in_use, s.peak_bytes_reserved);
  ck_assert_uint_le(s.bytes_reserved, s.peak_bytes_reserved);
  ck_assert_uint_le(s.largest_free_block, s.bytes_reserved);
  ck_assert(s.fragmentation >= 0.0 && s.fragmentation <= 1.0);

  printf("%s: %" PRIu64 " operations in %.2f s: %" PRIu64 " allocations, %" PRIu64
         " frees (%" PRIu64 " cross-thread), %" PRIu64 " out-of-memory, %" PRIu64
         " stream synchronisations\n",
         cfg->name, total_ops, seconds, allocs, frees, received, ooms, syncs);
  if (cfg->concurrent_trim) printf("%s: %" PRIu64 " concurrent trims\n", cfg->name, trims);
  printf("%s: pool: hit rate %.2f%% (%" PRIu64 " of %" PRIu64 "), %" PRIu64
         " upstream allocs, peak reserved %.1f MiB / peak in use %.1f MiB, %" PRIu64
         " cross-stream reuses, %" PRIu64 " inserted waits, %" PRIu64 " host synchronizations\n",
         cfg->name, percent(s.hits, s.requests), s.hits, s.requests, s.upstream_allocs,
         (double)s.peak_bytes_reserved / (double)MIB, (double)s.peak_bytes_in_use / (double)MIB,
         s.cross_stream_reuses, s.inserted_waits, s.host_synchronizations);
  fflush(stdout);

  /* Everything is free and every stream idle: trimming gives every chunk back. */
  PLM_CHECK_OK(plm_pool_trim(run->pool, 0));
  PLM_CHECK_OK(plm_pool_stats_get(run->pool, &s));
  ck_assert_uint_eq(s.bytes_reserved, 0);
  ck_assert_uint_eq(s.upstream_frees, s.upstream_allocs);
  ck_assert_uint_eq(s.largest_free_block, 0);

  for (int t = 0; t < THREADS; t++) {
    worker *w = &run->workers[t];
    PLM_CHECK_OK(plm_stream_destroy(w->stream));
    pthread_mutex_destroy(&w->inbox_lock);
    free(w->inbox);
    free(w->live);
    PLM_CHECK_OK(plm_host_free(plm_test_ctx, w->staging));
  }
  PLM_CHECK_OK(plm_pool_destroy(run->pool));
  pthread_mutex_destroy(&run->live_set.lock);
  free(run->live_set.items);
  PLM_CHECK_OK(plm_host_free(plm_test_ctx, run->patterns));
  pthread_cond_destroy(&run->state_changed);
  pthread_mutex_destroy(&run->state_lock);
  free(run);
}

/* ---- the passes ------------------------------------------------------------------------- */

static uint64_t stress_ops(void) {
  return env_u64("PLUME_STRESS_OPS", DEFAULT_OPS);
}

START_TEST(test_threads_alloc_and_free_on_their_own_streams) {
  const pass_config cfg = {.name = "same_stream",
                           .alloc_percent = 50,
                           .max_live_blocks = 64,
                           .max_live_bytes = 256 * MIB,
                           .seed_salt = 1};
  run_pass(&cfg, stress_ops() / 2);
}
END_TEST

START_TEST(test_threads_free_blocks_on_the_next_threads_stream) {
  const pass_config cfg = {.name = "hand_off",
                           .hand_off_percent = 50,
                           .alloc_percent = 50,
                           .max_live_blocks = 64,
                           .max_live_bytes = 256 * MIB,
                           .seed_salt = 2};
  uint64_t ops = stress_ops();
  run_pass(&cfg, ops - ops / 2);
}
END_TEST

/* Four threads wanting up to 512 MiB each from a pool limited to 1 GiB, which may
 * not make streams wait for each other: allocations fail with out-of-memory after
 * the whole ladder, and the pool stays consistent. */
START_TEST(test_out_of_memory_under_a_byte_limit) {
  const pass_config cfg = {.name = "out_of_memory",
                           .pool_flags = PLM_POOL_NO_STREAM_WAITS,
                           .byte_limit = 1024 * MIB,
                           .hand_off_percent = 25,
                           .alloc_percent = 80,
                           .max_live_blocks = 1024,
                           .max_live_bytes = 512 * MIB,
                           .oom_allowed = true,
                           .seed_salt = 3};
  uint64_t ops = stress_ops() / 10;
  run_pass(&cfg, ops < THREADS ? THREADS : ops);
}
END_TEST

/* The same pressure on a pool that may make streams wait for each other: the
 * ladder reuses other streams' pending frees behind device-side waits, which the
 * pattern checks (and ThreadSanitizer, on host) verify are correctly ordered. */
START_TEST(test_stream_waits_under_a_byte_limit) {
  const pass_config cfg = {.name = "stream_waits",
                           .byte_limit = 1024 * MIB,
                           .hand_off_percent = 25,
                           .alloc_percent = 80,
                           .max_live_blocks = 1024,
                           .max_live_bytes = 512 * MIB,
                           .oom_allowed = true,
                           .seed_salt = 4};
  uint64_t ops = stress_ops() / 10;
  run_pass(&cfg, ops < THREADS ? THREADS : ops);
}
END_TEST

/* plm_pool_trim from another thread while the threads allocate and free: trimming
 * must only make safe for all the frees its synchronisation covered. */
START_TEST(test_trim_while_threads_allocate_and_free) {
  const pass_config cfg = {.name = "concurrent_trim",
                           .hand_off_percent = 25,
                           .alloc_percent = 50,
                           .concurrent_trim = true,
                           .max_live_blocks = 64,
                           .max_live_bytes = 256 * MIB,
                           .seed_salt = 5};
  uint64_t ops = stress_ops() / 10;
  run_pass(&cfg, ops < THREADS ? THREADS : ops);
}
END_TEST

static Suite *pool_stress_suite(void) {
  Suite *suite = suite_create("pool_stress");
  TCase *stress = tcase_create("stress");
  plm_test_add_fixture(stress);
  tcase_add_test(stress, test_threads_alloc_and_free_on_their_own_streams);
  tcase_add_test(stress, test_threads_free_blocks_on_the_next_threads_stream);
  tcase_add_test(stress, test_out_of_memory_under_a_byte_limit);
  tcase_add_test(stress, test_stream_waits_under_a_byte_limit);
  tcase_add_test(stress, test_trim_while_threads_allocate_and_free);
  suite_add_tcase(suite, stress);
  return suite;
}

int main(void) {
  return plm_test_main(pool_stress_suite);
}

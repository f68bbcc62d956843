/* streams/parallel.c: the data-parallel CPU pool (see parallel.h).
 *
 * A job is published under `lock` with a new generation number and marked open.
 * A worker that sees the new generation joins the job (under `lock`, while it is
 * still open), takes chunks from an atomic counter until none is left, and leaves.
 * The caller takes chunks too; once none is left it closes the job and waits only
 * for the workers that joined, which are finishing their last chunk. A worker that
 * wakes after the job was closed does not join, so the caller never waits for a
 * thread to be scheduled: on a virtual machine waking an idle core takes 50-80 us,
 * longer than a whole 256x256 stencil, and a small job simply runs on the caller.
 *
 * Between jobs a worker polls the generation for SPIN_NS before it sleeps on `work`,
 * so that the passes of one kernel (label has four, back to back) find it awake; the
 * caller polls `active` likewise before sleeping on `done`. Both yield the core
 * while they poll: with two cores, the scheduler puts the thread that publishes the next
 * job (a stream's worker) or the one waiting for the op (the application's) on the
 * poller's core at times, and without yielding they waited out its time slice (perf
 * sched: 170 us of scheduling delay per op). Polling longer, to span the gap between
 * two ops, made that worse on two cores. Polling is bounded, so an idle process stops
 * using a core 50 us after its last job. `job_lock` lets one job in at a time.
 * The process-wide pool's workers live as long as the process (detached); a context's
 * pool (plm__parallel_pool_create) is stopped and joined when the context closes: a
 * worker that sees `stopping` at a new generation leaves.
 */
#define _GNU_SOURCE /* pthread_setname_np */

#include "streams/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "streams/clock.h"

enum { MAX_THREADS = 64, CHUNKS_PER_THREAD = 4 };

/* How long a thread polls before it sleeps (ns); see the top. */
enum { SPIN_NS = 50 * 1000 };

struct plm__parallel_pool {
  pthread_mutex_t job_lock;
  pthread_mutex_t lock;
  pthread_cond_t work;
  pthread_cond_t done;
  int workers;
  pthread_t *threads;              /* a context's pool: its workers, joined at destroy */
  bool stopping;                   /* guarded by lock */
  atomic_uint_fast64_t generation; /* written under lock; polled without it */
  bool open;                       /* the current job takes new workers; guarded by lock */
  atomic_int active;               /* workers in the current job; written under lock */
  int sleeping;                    /* workers waiting on `work`; guarded by lock */
  bool caller_sleeping;            /* the caller waits on `done`; guarded by lock */
  /* The job: written under lock before the generation changes, read by the workers
   * that joined it, unchanged until they have all left. */
  plm__range_fn body;
  void *context;
  int64_t count, chunk;
  atomic_int_fast64_t next;
};

static plm__parallel_pool process_pool = {.job_lock = PTHREAD_MUTEX_INITIALIZER,
                                          .lock = PTHREAD_MUTEX_INITIALIZER,
                                          .work = PTHREAD_COND_INITIALIZER,
                                          .done = PTHREAD_COND_INITIALIZER};
static pthread_once_t process_pool_started = PTHREAD_ONCE_INIT;

/* The pool of the calling thread's kernels (plm__parallel_use); NULL: process_pool. */
static _Thread_local plm__parallel_pool *thread_pool;

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static bool job_published(plm__parallel_pool *pool, uint64_t seen) {
  return atomic_load_explicit(&pool->generation, memory_order_relaxed) != seen;
}

static bool workers_left(plm__parallel_pool *pool, uint64_t unused) {
  (void)unused;
  return atomic_load_explicit(&pool->active, memory_order_relaxed) == 0;
}

/* Poll until ready(pool, arg) or SPIN_NS have passed, yielding the core now and then:
 * the thread that will make it ready may be waiting for this very core (see the top). */
static void poll_until(plm__parallel_pool *pool, bool (*ready)(plm__parallel_pool *, uint64_t),
                       uint64_t arg) {
  int64_t deadline = plm__monotonic_ns() + SPIN_NS;
  for (unsigned i = 1;; i++) {
    if (ready(pool, arg)) return;
    cpu_relax();
    if (i % 16 == 0) {
      sched_yield();
      if (plm__monotonic_ns() > deadline) return;
    }
  }
}

static void run_chunks(plm__parallel_pool *pool) {
  for (;;) {
    int64_t begin = atomic_fetch_add(&pool->next, pool->chunk);
    if (begin >= pool->count) return;
    int64_t end = begin + pool->chunk < pool->count ? begin + pool->chunk : pool->count;
    pool->body(pool->context, begin, end);
  }
}

static void *worker_main(void *arg) {
  plm__parallel_pool *pool = arg;
  uint64_t seen = 0;
  for (;;) {
    poll_until(pool, job_published, seen);
    pthread_mutex_lock(&pool->lock);
    while (atomic_load(&pool->generation) == seen) {
      pool->sleeping++;
      pthread_cond_wait(&pool->work, &pool->lock);
      pool->sleeping--;
    }
    seen = atomic_load(&pool->generation);
    if (pool->stopping) {
      pthread_mutex_unlock(&pool->lock);
      return NULL;
    }
    if (!pool->open) { /* woke too late: the caller has done the job */
      pthread_mutex_unlock(&pool->lock);
      continue;
    }
    atomic_fetch_add(&pool->active, 1);
    pthread_mutex_unlock(&pool->lock);
    run_chunks(pool);
    pthread_mutex_lock(&pool->lock);
    if (atomic_fetch_sub(&pool->active, 1) == 1 && pool->caller_sleeping)
      pthread_cond_signal(&pool->done);
    pthread_mutex_unlock(&pool->lock);
  }
  return NULL;
}

/* Start `wanted` workers; detached ones live as long as the process, the others are
 * kept in pool->threads for plm__parallel_pool_destroy. */
static void start_workers(plm__parallel_pool *pool, int wanted, bool detached) {
  for (int i = 0; i < wanted; i++) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker_main, pool) != 0) break; /* use those we have */
    char name[16];
    snprintf(name, sizeof name, "plm-cpu-%u", (unsigned)i & 63u); /* i < MAX_THREADS */
    pthread_setname_np(thread, name);
    if (detached)
      pthread_detach(thread);
    else
      pool->threads[pool->workers] = thread;
    pool->workers++;
  }
}

static void start_process_pool(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int wanted = cores > 1 ? (int)(cores < MAX_THREADS ? cores : MAX_THREADS) - 1 : 0;
  start_workers(&process_pool, wanted, true);
}

/* The calling thread's pool, started. */
static plm__parallel_pool *current_pool(void) {
  if (thread_pool) return thread_pool;
  pthread_once(&process_pool_started, start_process_pool);
  return &process_pool;
}

plm__parallel_pool *plm__parallel_pool_create(int threads) {
  if (threads < 1 || threads > MAX_THREADS) return NULL;
  plm__parallel_pool *pool = calloc(1, sizeof *pool);
  if (!pool) return NULL;
  pool->threads = calloc((size_t)threads, sizeof *pool->threads);
  if (!pool->threads) {
    free(pool);
    return NULL;
  }
  pthread_mutex_init(&pool->job_lock, NULL);
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->work, NULL);
  pthread_cond_init(&pool->done, NULL);
  start_workers(pool, threads - 1, false);
  return pool;
}

void plm__parallel_pool_destroy(plm__parallel_pool *pool) {
  if (!pool) return;
  pthread_mutex_lock(&pool->lock);
  pool->stopping = true;
  atomic_fetch_add(&pool->generation, 1);
  pthread_cond_broadcast(&pool->work);
  pthread_mutex_unlock(&pool->lock);
  for (int i = 0; i < pool->workers; i++) pthread_join(pool->threads[i], NULL);
  pthread_cond_destroy(&pool->done);
  pthread_cond_destroy(&pool->work);
  pthread_mutex_destroy(&pool->lock);
  pthread_mutex_destroy(&pool->job_lock);
  free(pool->threads);
  free(pool);
}

void plm__parallel_use(plm__parallel_pool *pool) {
  thread_pool = pool;
}

int plm__parallel_threads(void) {
  return current_pool()->workers + 1;
}

void plm__parallel_for(int64_t count, int64_t grain, plm__range_fn body, void *context) {
  if (count <= 0) return;
  if (grain < 1) grain = 1;
  plm__parallel_pool *pool = current_pool();
  int threads = pool->workers + 1;
  if (threads == 1 || count < 2 * grain) {
    /* A context's pool is its core budget: one kernel at a time, however small, whichever
     * of its streams runs it. */
    const bool budget = pool != &process_pool;
    if (budget) pthread_mutex_lock(&pool->job_lock);
    body(context, 0, count);
    if (budget) pthread_mutex_unlock(&pool->job_lock);
    return;
  }
  int64_t chunk =
      (count + (int64_t)threads * CHUNKS_PER_THREAD - 1) / ((int64_t)threads * CHUNKS_PER_THREAD);
  if (chunk < grain) chunk = grain;

  pthread_mutex_lock(&pool->job_lock);
  pthread_mutex_lock(&pool->lock);
  pool->body = body;
  pool->context = context;
  pool->count = count;
  pool->chunk = chunk;
  atomic_store(&pool->next, 0);
  pool->open = true;
  atomic_fetch_add(&pool->generation, 1);
  if (pool->sleeping > 0) pthread_cond_broadcast(&pool->work);
  pthread_mutex_unlock(&pool->lock);

  run_chunks(pool);

  /* Every chunk is taken: close the job, then wait for the workers in it. */
  pthread_mutex_lock(&pool->lock);
  pool->open = false;
  pthread_mutex_unlock(&pool->lock);
  poll_until(pool, workers_left, 0);
  pthread_mutex_lock(&pool->lock);
  while (atomic_load(&pool->active) > 0) {
    pool->caller_sleeping = true;
    pthread_cond_wait(&pool->done, &pool->lock);
  }
  pool->caller_sleeping = false;
  pthread_mutex_unlock(&pool->lock);
  pthread_mutex_unlock(&pool->job_lock);
}

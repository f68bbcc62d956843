/* kernels/cpu/parallel.c: the data-parallel CPU pool (see parallel.h).
 *
 * A job is published under `lock` with a new generation number; workers wake on
 * `work`, take chunks from an atomic counter until none is left, and the last one
 * out signals `done`. The caller takes chunks too, then waits for the workers to
 * leave the job. `job_lock` lets one job in at a time. Workers live as long as the
 * process (detached); no thread busy-waits.
 */
#define _GNU_SOURCE /* pthread_setname_np */

#include "kernels/cpu/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

enum { MAX_THREADS = 64, CHUNKS_PER_THREAD = 4 };

static struct {
  pthread_once_t started;
  pthread_mutex_t job_lock;
  pthread_mutex_t lock;
  pthread_cond_t work;
  pthread_cond_t done;
  int workers;
  uint64_t generation; /* guarded by lock */
  int active;          /* workers still in the current job; guarded by lock */
  plm__range_fn body;
  void *context;
  int64_t count, chunk;
  atomic_int_fast64_t next;
} pool = {.started = PTHREAD_ONCE_INIT,
          .job_lock = PTHREAD_MUTEX_INITIALIZER,
          .lock = PTHREAD_MUTEX_INITIALIZER,
          .work = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static void run_chunks(void) {
  for (;;) {
    int64_t begin = atomic_fetch_add(&pool.next, pool.chunk);
    if (begin >= pool.count) return;
    int64_t end = begin + pool.chunk < pool.count ? begin + pool.chunk : pool.count;
    pool.body(pool.context, begin, end);
  }
}

static void *worker_main(void *arg) {
  (void)arg;
  uint64_t seen = 0;
  pthread_mutex_lock(&pool.lock);
  for (;;) {
    while (pool.generation == seen) pthread_cond_wait(&pool.work, &pool.lock);
    seen = pool.generation;
    pthread_mutex_unlock(&pool.lock);
    run_chunks();
    pthread_mutex_lock(&pool.lock);
    if (--pool.active == 0) pthread_cond_signal(&pool.done);
  }
  return NULL;
}

static void start_workers(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int wanted = cores > 1 ? (int)(cores < MAX_THREADS ? cores : MAX_THREADS) - 1 : 0;
  for (int i = 0; i < wanted; i++) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker_main, NULL) != 0) break; /* use those we have */
    char name[16];
    snprintf(name, sizeof name, "plm-cpu-%u", (unsigned)i & 63u); /* i < MAX_THREADS */
    pthread_setname_np(thread, name);
    pthread_detach(thread);
    pool.workers++;
  }
}

int plm__parallel_threads(void) {
  pthread_once(&pool.started, start_workers);
  return pool.workers + 1;
}

void plm__parallel_for(int64_t count, int64_t grain, plm__range_fn body, void *context) {
  if (count <= 0) return;
  if (grain < 1) grain = 1;
  int threads = plm__parallel_threads();
  if (threads == 1 || count < 2 * grain) {
    body(context, 0, count);
    return;
  }
  int64_t chunk =
      (count + (int64_t)threads * CHUNKS_PER_THREAD - 1) / ((int64_t)threads * CHUNKS_PER_THREAD);
  if (chunk < grain) chunk = grain;

  pthread_mutex_lock(&pool.job_lock);
  pthread_mutex_lock(&pool.lock);
  pool.body = body;
  pool.context = context;
  pool.count = count;
  pool.chunk = chunk;
  atomic_store(&pool.next, 0);
  pool.active = pool.workers;
  pool.generation++;
  pthread_cond_broadcast(&pool.work);
  pthread_mutex_unlock(&pool.lock);

  run_chunks();

  pthread_mutex_lock(&pool.lock);
  while (pool.active > 0) pthread_cond_wait(&pool.done, &pool.lock);
  pthread_mutex_unlock(&pool.lock);
  pthread_mutex_unlock(&pool.job_lock);
}

/* benchmarks/bench_pool_threads.c: the threads workload (the header of bench_pool.c says what it
 * does). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bench_pool_shared.h"

/* ---- workload: threads ----------------------------------------------------------------- */

enum { THREAD_MAX_SIZE = 64 * 1024, THREAD_WINDOW = 16 };

/* Threads start together: each waits at the gate until it opens (or is closed
 * because another thread could not be started). */
typedef struct start_gate {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int state; /* 0 closed, 1 open, -1 abandoned */
} start_gate;

static int gate_wait(start_gate *gate) {
  pthread_mutex_lock(&gate->lock);
  while (gate->state == 0) pthread_cond_wait(&gate->cond, &gate->lock);
  int state = gate->state;
  pthread_mutex_unlock(&gate->lock);
  return state;
}

static void gate_set(start_gate *gate, int state) {
  pthread_mutex_lock(&gate->lock);
  gate->state = state;
  pthread_cond_broadcast(&gate->cond);
  pthread_mutex_unlock(&gate->lock);
}

typedef struct thread_job {
  allocator *a;
  plm_stream *stream;
  start_gate *gate;
  size_t n;
  int index;
  samples pairs;
  uint64_t start_ns, end_ns;
  uint64_t allocs;
  bool ok;
  char error[1024];
} thread_job;

static void *thread_main(void *arg) {
  thread_job *job = arg;
  rng g = {BENCH_SEED ^ 0x7468u ^ (uint64_t)job->index * 0x9E37u};
  void *ptr[THREAD_WINDOW] = {0};
  uint64_t alloc_ns[THREAD_WINDOW] = {0};
  job->ok = true;
  if (gate_wait(job->gate) < 0) return NULL;
  job->start_ns = plm__monotonic_ns();
  for (size_t i = 0; i < job->n + THREAD_WINDOW; i++) {
    size_t slot = i % THREAD_WINDOW;
    if (ptr[slot]) {
      uint64_t t0 = plm__monotonic_ns();
      plm_status status = allocator_free(job->a, ptr[slot], job->stream);
      uint64_t t1 = plm__monotonic_ns();
      if (status != PLM_OK) {
        snprintf(job->error, sizeof job->error, "thread %d: free -> %s: %s", job->index,
                 plm_status_str(status), plm_last_error());
        job->ok = false;
        break;
      }
      samples_push(&job->pairs, alloc_ns[slot] + elapsed(t0, t1));
      ptr[slot] = NULL;
    }
    if (i >= job->n) continue; /* the last THREAD_WINDOW steps only free */
    size_t size = 1 + (size_t)rng_below(&g, THREAD_MAX_SIZE);
    uint64_t t0 = plm__monotonic_ns();
    plm_status status = allocator_alloc(job->a, size, job->stream, &ptr[slot]);
    uint64_t t1 = plm__monotonic_ns();
    if (status != PLM_OK) {
      snprintf(job->error, sizeof job->error, "thread %d: alloc(%zu bytes) -> %s: %s", job->index,
               size, plm_status_str(status), plm_last_error());
      ptr[slot] = NULL;
      job->ok = false;
      break;
    }
    alloc_ns[slot] = elapsed(t0, t1);
    job->allocs++;
  }
  job->end_ns = plm__monotonic_ns();
  for (int slot = 0; slot < THREAD_WINDOW; slot++)
    if (ptr[slot]) allocator_free(job->a, ptr[slot], job->stream);
  return NULL;
}

static bool threads_run(bench_env *env, const pool_case *c, bench_mode mode, result *r) {
  const int threads = c->threads;
  const size_t n = c->n;
  char where[96];
  snprintf(where, sizeof where, "threads (%s, %d threads, n %zu each)", mode_names[mode], threads,
           n);
  r->workload = "threads";
  r->mode = mode;
  r->max_size = THREAD_MAX_SIZE;
  r->n = n;
  r->threads = threads;

  allocator a;
  if (!allocator_open(env->ctx, mode, 0, &a)) return false;
  thread_job jobs[MAX_THREADS];
  pthread_t tids[MAX_THREADS];
  start_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  bool ok = true;
  int started = 0;
  memset(jobs, 0, sizeof jobs);
  for (int t = 0; ok && t < threads; t++) {
    jobs[t] =
        (thread_job){.a = &a, .stream = env->thread_streams[t], .gate = &gate, .n = n, .index = t};
    ok = samples_reserve(&jobs[t].pairs, n);
  }
  for (int t = 0; ok && t < threads; t++) {
    int err = pthread_create(&tids[t], NULL, thread_main, &jobs[t]);
    if (err != 0)
      ok = bench_fail("%s: pthread_create failed: %s", where, strerror(err));
    else
      started++;
  }
  gate_set(&gate, ok ? 1 : -1);
  for (int t = 0; t < started; t++) pthread_join(tids[t], NULL);
  if (ok) (void)keep_snapshot(env, &a, r, "after every thread's frees");

  if (ok) {
    samples all;
    ok = samples_reserve(&all, n * (size_t)threads);
    uint64_t first = UINT64_MAX, last = 0, allocs = 0;
    for (int t = 0; ok && t < threads; t++) {
      if (!jobs[t].ok) {
        ok = bench_fail("%s: %s", where, jobs[t].error);
        break;
      }
      for (size_t i = 0; i < jobs[t].pairs.count; i++) samples_push(&all, jobs[t].pairs.v[i]);
      qsort(jobs[t].pairs.v, jobs[t].pairs.count, sizeof(uint64_t), compare_u64);
      r->per_thread_median_ns[t] = percentile(jobs[t].pairs.v, jobs[t].pairs.count, 0.5);
      if (jobs[t].start_ns < first) first = jobs[t].start_ns;
      if (jobs[t].end_ns > last) last = jobs[t].end_ns;
      allocs += jobs[t].allocs;
    }
    if (ok) {
      summarize(r, &all);
      r->wall_s = (double)(last - first) * 1e-9;
      r->throughput = r->wall_s > 0 ? (double)r->pairs / r->wall_s : 0;
      finish_stats(r, &a, where, allocs);
    }
    samples_release(&all);
  }
  for (int t = 0; t < threads; t++) samples_release(&jobs[t].pairs);
  return allocator_close(&a, where) && ok;
}

static size_t threads_plan(const pool_workload *self, run_size size, pool_case *cases) {
  size_t n = size == RUN_FULL ? 200000 : size == RUN_QUICK ? 50000 : 500;
  static const int counts[] = {1, 2, 4};
  for (int t = 0; t < 3; t++) cases[t] = (pool_case){self, 0, n, counts[t], false};
  return 3;
}

const pool_workload threads_workload = {
    .name = "threads", .plan = threads_plan, .run = threads_run};

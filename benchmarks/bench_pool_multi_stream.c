/* benchmarks/bench_pool_multi_stream.c: the multi_stream workload (the header of bench_pool.c says
 * what it does). */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "bench_pool_shared.h"

/* ---- workload: multi_stream ----------------------------------------------------------- */

enum { MULTI_STREAM_MEMSET_BYTES = 64 };

static bool multi_stream_run(bench_env *env, const pool_case *c, bench_mode mode, result *r) {
  const bool waits = c->waits;
  const size_t max_size = c->max_size, n = c->n;
  char where[128];
  snprintf(where, sizeof where, "multi_stream (%s, %s, n %zu)", mode_names[mode],
           waits ? "stream waits" : "no stream waits", n);
  r->workload = "multi_stream";
  r->mode = mode;
  r->max_size = max_size;
  r->n = n;
  r->stream_waits = waits;

  allocator a;
  if (!allocator_open(env->ctx, mode, waits ? PLM_POOL_DEFAULT : PLM_POOL_NO_STREAM_WAITS, &a))
    return false;
  plm_event *used = NULL;
  plm_status status = plm_event_create(env->ctx, PLM_EVENT_DISABLE_TIMING, &used);
  if (status != PLM_OK) {
    allocator_close(&a, where);
    return bench_fail_call(where, "plm_event_create", status);
  }
  samples pairs;
  if (!samples_reserve(&pairs, n)) {
    plm_event_destroy(used);
    allocator_close(&a, where);
    return false;
  }
  rng g = {BENCH_SEED ^ 0x5157u ^ (uint64_t)n};
  bool ok = true;
  uint64_t allocs = 0;
  uint64_t start = plm__monotonic_ns();
  for (size_t i = 0; ok && i < n; i++) {
    size_t size = 1 + (size_t)rng_below(&g, max_size);
    void *ptr = NULL;
    uint64_t t0 = plm__monotonic_ns();
    status = allocator_alloc(&a, size, env->stream1, &ptr);
    uint64_t t1 = plm__monotonic_ns();
    if (status != PLM_OK) {
      char call[96];
      snprintf(call, sizeof call, "alloc(%zu bytes) on stream 1, iteration %zu", size, i);
      ok = bench_fail_call(where, call, status);
      break;
    }
    allocs++;
    size_t touch = size < MULTI_STREAM_MEMSET_BYTES ? size : MULTI_STREAM_MEMSET_BYTES;
    if ((status = plm_stream_memset(env->stream1, ptr, 0, touch)) != PLM_OK)
      ok = bench_fail_call(where, "plm_stream_memset on stream 1", status);
    else if ((status = plm_event_record(used, env->stream1)) != PLM_OK)
      ok = bench_fail_call(where, "plm_event_record on stream 1", status);
    else if ((status = plm_stream_wait_event(env->stream2, used)) != PLM_OK)
      ok = bench_fail_call(where, "plm_stream_wait_event on stream 2", status);
    if (i + 1 == n)
      start +=
          keep_snapshot(env, &a, r, "the last block allocated, earlier ones freed on stream 2");
    uint64_t t2 = plm__monotonic_ns();
    status = allocator_free(&a, ptr, env->stream2);
    uint64_t t3 = plm__monotonic_ns();
    if (status != PLM_OK) {
      if (ok) ok = bench_fail_call(where, "free on stream 2", status);
      break;
    }
    samples_push(&pairs, elapsed(t0, t1) + elapsed(t2, t3));
  }
  r->wall_s = (double)(plm__monotonic_ns() - start) * 1e-9;
  plm_stream_synchronize(env->stream1);
  plm_stream_synchronize(env->stream2);
  if (ok) {
    summarize(r, &pairs);
    finish_stats(r, &a, where, allocs);
  }
  samples_release(&pairs);
  plm_event_destroy(used);
  return allocator_close(&a, where) && ok;
}

static size_t multi_stream_plan(const pool_workload *self, run_size size, pool_case *cases) {
  size_t n = size == RUN_FULL ? 20000 : size == RUN_QUICK ? 5000 : 100;
  cases[0] = (pool_case){self, MIB, n, 0, true};
  cases[1] = (pool_case){self, MIB, n, 0, false};
  return 2;
}

const pool_workload multi_stream_workload = {.name = "multi_stream",
                                             .plan = multi_stream_plan,
                                             .run = multi_stream_run,
                                             .stream_ordered = true};

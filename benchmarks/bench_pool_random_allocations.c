/* benchmarks/bench_pool_random_allocations.c: the random_allocations workload (the header of
 * bench_pool.c says what it does). */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "bench_pool_shared.h"

static bool random_allocations_run(bench_env *env, const pool_case *c, bench_mode mode, result *r) {
  const size_t max_size = c->max_size, n = c->n;
  char where[128];
  snprintf(where, sizeof where, "random_allocations (%s, max_size %zu, n %zu)", mode_names[mode],
           max_size, n);
  r->workload = "random_allocations";
  r->mode = mode;
  r->max_size = max_size;
  r->n = n;

  allocator a;
  if (!allocator_open(env->ctx, mode, 0, &a)) return false;
  live_set live = {.blocks = malloc(n * sizeof *live.blocks)};
  samples pairs;
  if (!live.blocks || !samples_reserve(&pairs, n)) {
    free(live.blocks);
    allocator_close(&a, where);
    return bench_fail("%s: out of host memory", where);
  }
  rng g = {BENCH_SEED ^ (uint64_t)max_size * 31 ^ (uint64_t)n};
  size_t allocs = 0;
  bool ok = true;
  uint64_t start = plm__monotonic_ns();
  while (ok && (allocs < n || live.count > 0)) {
    size_t size = 1 + (size_t)rng_below(&g, max_size);
    bool do_alloc = allocs < n && (live.count == 0 || rng_below(&g, 100) < 73);
    if (do_alloc && live.count > 0 && live.bytes + size > env->live_cap) do_alloc = false;
    if (!do_alloc) {
      ok = live_free_random(&live, &a, &g, &pairs, env->stream1, where);
    } else if ((ok = live_alloc(&live, &a, size, env->stream1, where)) && ++allocs == n) {
      start += keep_snapshot(env, &a, r, "after the last allocation");
    }
  }
  r->wall_s = (double)(plm__monotonic_ns() - start) * 1e-9;
  /* After an error, give back what is still live so the pool can be destroyed. */
  for (size_t i = 0; i < live.count; i++) allocator_free(&a, live.blocks[i].ptr, env->stream1);
  if (ok) {
    summarize(r, &pairs);
    finish_stats(r, &a, where, allocs);
  }
  free(live.blocks);
  samples_release(&pairs);
  return allocator_close(&a, where) && ok;
}

static size_t random_allocations_plan(const pool_workload *self, run_size size, pool_case *cases) {
  static const size_t max_sizes[] = {4 * KIB, MIB, 64 * MIB};
  static const size_t counts[] = {1000, 10000, 100000};
  size_t count = 0;
  for (int s = 0; s < 3; s++) {
    for (int c = 0; c < 3; c++) {
      size_t n = counts[c];
      if (size == RUN_SMOKE && c > 0) continue;
      /* --smoke: few blocks (64 MiB ones are slow under AddressSanitizer). */
      if (size == RUN_SMOKE) n = s == 2 ? 50 : 200;
      /* --quick: no 100000 with 64 MiB blocks (passthrough maps and unmaps each). */
      if (size == RUN_QUICK && c == 2 && s == 2) continue;
      cases[count++] = (pool_case){self, max_sizes[s], n, 0, false};
    }
  }
  return count;
}

static void random_allocations_trace_header(const bench_env *env, const pool_case *c, FILE *out) {
  fprintf(out, "# workload random_allocations max_size %zu n %zu live_cap %zu seed %d\n",
          c->max_size, c->n, env->live_cap, BENCH_SEED);
}

const pool_workload random_allocations_workload = {.name = "random_allocations",
                                                   .plan = random_allocations_plan,
                                                   .run = random_allocations_run,
                                                   .trace_name = trace_name_max_n,
                                                   .trace_header = random_allocations_trace_header};

/* benchmarks/bench_pool_fragmentation.c: the fragmentation workload (the header of bench_pool.c
 * says what it does). */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "bench_pool_shared.h"

/* ---- workload: fragmentation ---------------------------------------------------------- */

enum { FRAGMENTATION_PHASES = 8, FRAGMENTATION_OCTAVES = 6 };

/* The live-byte target of the fragmentation workload: 1 GiB (64 MiB with --smoke), at
 * most the random_allocations cap. */
static size_t fragmentation_target(const bench_env *env) {
  size_t target = env->opt.size == RUN_SMOKE ? 64 * MIB : GIB;
  return target < env->live_cap ? target : env->live_cap;
}

/* A size for phase `phase`: one of FRAGMENTATION_OCTAVES octaves, each equally
 * likely, and uniform within it; the lowest octave starts at 256 B x 4^phase, its
 * exponent wrapping so that sizes stay in [256 B, max_size) (max_size a power of
 * two). */
static size_t fragmentation_size(rng *g, size_t phase, size_t max_size) {
  unsigned top = 63u - (unsigned)__builtin_clzll(max_size); /* log2 max_size */
  unsigned span = top - 8 - FRAGMENTATION_OCTAVES + 1;      /* lowest octaves 8 .. top - OCTAVES */
  unsigned low = 8 + (unsigned)((phase * 2) % span);
  unsigned octave = low + (unsigned)rng_below(g, FRAGMENTATION_OCTAVES);
  size_t base = (size_t)1 << octave;
  return base + (size_t)rng_below(g, base);
}

static bool fragmentation_run(bench_env *env, const pool_case *c, bench_mode mode, result *r) {
  const size_t max_size = c->max_size, n = c->n;
  char where[128];
  snprintf(where, sizeof where, "fragmentation (%s, max_size %zu, n %zu)", mode_names[mode],
           max_size, n);
  r->workload = "fragmentation";
  r->mode = mode;
  r->max_size = max_size;
  r->n = n;

  allocator a;
  if (!allocator_open(env->ctx, mode, 0, &a)) return false;
  size_t target = fragmentation_target(env);
  size_t capacity = target / 256 + 1; /* every block has at least 256 bytes */
  if (capacity > n) capacity = n;
  live_set live = {.blocks = malloc(capacity * sizeof *live.blocks)};
  samples pairs;
  if (!live.blocks || !samples_reserve(&pairs, n)) {
    free(live.blocks);
    allocator_close(&a, where);
    return bench_fail("%s: out of host memory", where);
  }
  rng g = {BENCH_SEED ^ 0x6672u ^ (uint64_t)n};
  bool ok = true;
  uint64_t start = plm__monotonic_ns();
  for (size_t i = 0; ok && i < n; i++) {
    size_t phase = i * FRAGMENTATION_PHASES / n;
    size_t size = fragmentation_size(&g, phase, max_size);
    /* Make room: free live blocks in a random order until the new one fits. */
    while (ok && live.count > 0 && (live.bytes + size > target || live.count == capacity))
      ok = live_free_random(&live, &a, &g, &pairs, env->stream1, where);
    if (ok) ok = live_alloc(&live, &a, size, env->stream1, where);
  }
  if (ok) start += keep_snapshot(env, &a, r, "after the last allocation");
  /* The rest, in random order. */
  while (ok && live.count > 0) ok = live_free_random(&live, &a, &g, &pairs, env->stream1, where);
  r->wall_s = (double)(plm__monotonic_ns() - start) * 1e-9;
  for (size_t i = 0; i < live.count; i++) allocator_free(&a, live.blocks[i].ptr, env->stream1);
  if (ok) {
    summarize(r, &pairs);
    finish_stats(r, &a, where, n);
  }
  free(live.blocks);
  samples_release(&pairs);
  return allocator_close(&a, where) && ok;
}

static size_t fragmentation_plan(const pool_workload *self, run_size size, pool_case *cases) {
  size_t n = size == RUN_FULL ? 1000000 : size == RUN_QUICK ? 100000 : 500;
  cases[0] = (pool_case){self, 16 * MIB, n, 0, false};
  return 1;
}

static void fragmentation_trace_header(const bench_env *env, const pool_case *c, FILE *out) {
  fprintf(out, "# workload fragmentation max_size %zu n %zu live_target %zu seed %d\n", c->max_size,
          c->n, fragmentation_target(env), BENCH_SEED);
}

const pool_workload fragmentation_workload = {.name = "fragmentation",
                                              .plan = fragmentation_plan,
                                              .run = fragmentation_run,
                                              .trace_name = trace_name_max_n,
                                              .trace_header = fragmentation_trace_header};

/* benchmarks/bench_pool_run.c: what every workload of bench_pool uses (bench_pool_shared.h). */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <string.h>

#include "bench_pool_shared.h"
#include "profile/stats.h"

/* ---- warnings ------------------------------------------------------------------- */

json_t *bench_pool_warnings;

progress_bar bench_pool_bar;

void bench_pool_warn(const char *fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  progress_clear(&bench_pool_bar);
  fprintf(stderr, "bench_pool: warning: %s\n", text);
  json_array_append_new(bench_pool_warnings, json_string(text));
}

/* ---- clock and statistics ------------------------------------------------------- */

uint64_t bench_pool_timer_overhead_ns;

int compare_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

uint64_t percentile(const uint64_t *sorted, size_t count, double q) {
  return count ? sorted[plm__nearest_rank(count, q)] : 0;
}

void bench_pool_measure_timer_overhead(void) {
  enum { SAMPLES = 2001 };
  static uint64_t readings[SAMPLES];
  for (int i = 0; i < SAMPLES; i++) {
    uint64_t t0 = plm__monotonic_ns();
    uint64_t t1 = plm__monotonic_ns();
    readings[i] = t1 - t0;
  }
  qsort(readings, SAMPLES, sizeof readings[0], compare_u64);
  bench_pool_timer_overhead_ns = percentile(readings, SAMPLES, 0.5);
}

bool samples_reserve(samples *s, size_t capacity) {
  s->v = malloc((capacity ? capacity : 1) * sizeof s->v[0]);
  s->count = 0;
  s->capacity = capacity;
  return s->v != NULL || bench_fail("out of host memory for %zu samples", capacity);
}

void samples_release(samples *s) {
  free(s->v);
  s->v = NULL;
  s->count = s->capacity = 0;
}

/* ---- allocators under test --------------------------------------------------------- */

const char *const mode_names[] = {"pooled", "passthrough", "jemalloc", "cuda_async", "trace"};

FILE *bench_pool_trace_file;

unsigned bench_pool_pooled_flags;
size_t bench_pool_page_bytes;

bool allocator_open(plm_context *ctx, bench_mode mode, unsigned pool_flags, allocator *a) {
  memset(a, 0, sizeof *a);
  a->mode = mode;
  if (mode == MODE_TRACE)
    return bench_pool_trace_file != NULL || bench_fail("trace: no file to write to");
  if (mode == MODE_JEMALLOC) {
    size_t len = sizeof a->arena;
    int err = je_mallctl("arenas.create", &a->arena, &len, NULL, 0);
    if (err != 0)
      return bench_fail("jemalloc: mallctl(\"arenas.create\") failed: %s", strerror(err));
    a->jemalloc_flags = (int)(MALLOCX_ARENA(a->arena) | MALLOCX_TCACHE_NONE | MALLOCX_LG_ALIGN(8));
    return true;
  }
  plm_pool_config config = plm_pool_config_default();
  config.mode = mode == MODE_POOLED        ? PLM_POOL_POOLED
                : mode == MODE_PASSTHROUGH ? PLM_POOL_PASSTHROUGH
                                           : PLM_POOL_CUDA_ASYNC;
  config.flags = pool_flags | (mode == MODE_POOLED ? bench_pool_pooled_flags : 0);
  if (mode == MODE_POOLED) config.page_bytes = bench_pool_page_bytes;
  plm_status status = plm_pool_create(ctx, &config, &a->pool);
  if (status != PLM_OK) return bench_fail_call(mode_names[mode], "plm_pool_create", status);
  return true;
}

bool allocator_stats(allocator *a, plm_pool_stats *out) {
  if (a->mode == MODE_JEMALLOC || a->mode == MODE_TRACE) return false;
  plm_status status = plm_pool_stats_get(a->pool, out);
  if (status != PLM_OK) {
    bench_pool_warn("%s: plm_pool_stats_get -> %s: %s", mode_names[a->mode], plm_status_str(status),
                    plm_last_error());
    return false;
  }
  return true;
}

bool allocator_close(allocator *a, const char *where) {
  if (a->mode == MODE_TRACE) return true;
  if (a->mode == MODE_JEMALLOC) {
    char name[64];
    snprintf(name, sizeof name, "arena.%u.destroy", a->arena);
    je_mallctl(name, NULL, NULL, NULL, 0); /* best effort: only gives the memory back */
    return true;
  }
  plm_status status = plm_pool_destroy(a->pool);
  a->pool = NULL;
  if (status != PLM_OK) return bench_fail_call(where, "plm_pool_destroy", status);
  return true;
}

/* ---- results ---------------------------------------------------------------------- */

result *results_add(results *rs) {
  if (rs->count == rs->capacity) {
    size_t capacity = rs->capacity ? 2 * rs->capacity : 64;
    result *v = realloc(rs->v, capacity * sizeof *v);
    if (!v) return NULL;
    rs->v = v;
    rs->capacity = capacity;
  }
  result *r = &rs->v[rs->count++];
  memset(r, 0, sizeof *r);
  r->stream_waits = -1;
  return r;
}

void summarize(result *r, samples *s) {
  qsort(s->v, s->count, sizeof s->v[0], compare_u64);
  r->pairs = s->count;
  r->median_ns = percentile(s->v, s->count, 0.5);
  r->p99_ns = percentile(s->v, s->count, 0.99);
  double sum = 0;
  for (size_t i = 0; i < s->count; i++) sum += (double)s->v[i];
  r->mean_ns = s->count ? sum / (double)s->count : 0;
}

uint64_t bench_pool_device_memory;

void finish_stats(result *r, allocator *a, const char *where, uint64_t allocs) {
  r->has_stats = allocator_stats(a, &r->stats);
  if (!r->has_stats) return;
  const plm_pool_stats *s = &r->stats;
  if (s->requests != allocs)
    bench_pool_warn("%s: stats.requests %" PRIu64 " but %" PRIu64 " allocations succeeded", where,
                    s->requests, allocs);
  if (s->hits > s->requests)
    bench_pool_warn("%s: stats.hits %" PRIu64 " > requests %" PRIu64, where, s->hits, s->requests);
  if (s->peak_bytes_reserved < s->peak_bytes_in_use)
    bench_pool_warn("%s: stats.peak_bytes_reserved %" PRIu64 " < peak_bytes_in_use %" PRIu64, where,
                    s->peak_bytes_reserved, s->peak_bytes_in_use);
  if (s->bytes_reserved < s->bytes_in_use)
    bench_pool_warn("%s: stats.bytes_reserved %" PRIu64 " < bytes_in_use %" PRIu64, where,
                    s->bytes_reserved, s->bytes_in_use);
  if (s->bytes_in_use != 0 || s->live_blocks != 0)
    bench_pool_warn("%s: everything was freed but stats show %" PRIu64 " bytes in use in %" PRIu64
                    " live blocks",
                    where, s->bytes_in_use, s->live_blocks);
  if (s->upstream_frees > s->upstream_allocs)
    bench_pool_warn("%s: stats.upstream_frees %" PRIu64 " > upstream_allocs %" PRIu64, where,
                    s->upstream_frees, s->upstream_allocs);
  if (bench_pool_device_memory && s->peak_bytes_reserved > bench_pool_device_memory)
    bench_pool_warn("%s: stats.peak_bytes_reserved %" PRIu64 " exceeds the device's %" PRIu64
                    " bytes of memory",
                    where, s->peak_bytes_reserved, bench_pool_device_memory);
  if (s->fragmentation < 0 || s->fragmentation > 1)
    bench_pool_warn("%s: stats.fragmentation %g outside [0, 1]", where, s->fragmentation);
}

/* ---- the environment shared by all runs ---------------------------------------------- */

/* Whether the pooled run r keeps a snapshot of its pool (--profile): the first run of each
 * workload, max_size and stream waits does, so that a report shows each shape of load
 * once, at its smallest n. */
static bool wants_snapshot(const bench_env *env, const result *r) {
  if (!env->opt.profile_dir || r->mode != MODE_POOLED || env->snapshot_count == MAX_SNAPSHOTS)
    return false;
  for (size_t i = 0; i < env->snapshot_count; i++) {
    const kept_snapshot *k = &env->snapshots[i];
    if (strcmp(k->workload, r->workload) == 0 && k->max_size == r->max_size &&
        k->stream_waits == r->stream_waits)
      return false;
  }
  return true;
}

uint64_t keep_snapshot(bench_env *env, const allocator *a, const result *r, const char *moment) {
  if (!wants_snapshot(env, r)) return 0;
  uint64_t t0 = plm__monotonic_ns();
  kept_snapshot *k = &env->snapshots[env->snapshot_count];
  plm_status status = plm_pool_snapshot_take(a->pool, &k->snapshot);
  if (status != PLM_OK) {
    bench_pool_warn("%s: plm_pool_snapshot_take -> %s: %s", r->workload, plm_status_str(status),
                    plm_last_error());
    return plm__monotonic_ns() - t0;
  }
  char params[96];
  format_params(params, sizeof params, r);
  snprintf(k->name, sizeof k->name, "%s (%s): %s", r->workload, params, moment);
  k->workload = r->workload;
  k->max_size = r->max_size;
  k->stream_waits = r->stream_waits;
  env->snapshot_count++;
  return plm__monotonic_ns() - t0;
}

/* ---- the live set of random_allocations and fragmentation
 * --------------------------------------------------- */

bool live_alloc(live_set *live, allocator *a, size_t size, plm_stream *stream, const char *where) {
  void *ptr = NULL;
  uint64_t t0 = plm__monotonic_ns();
  plm_status status = allocator_alloc(a, size, stream, &ptr);
  uint64_t t1 = plm__monotonic_ns();
  if (status != PLM_OK) {
    char call[96];
    snprintf(call, sizeof call, "alloc(%zu bytes) with %zu bytes live", size, live->bytes);
    return bench_fail_call(where, call, status);
  }
  live->blocks[live->count++] = (live_block){ptr, size, elapsed(t0, t1)};
  live->bytes += size;
  return true;
}

bool live_free_random(live_set *live, allocator *a, rng *g, samples *pairs, plm_stream *stream,
                      const char *where) {
  size_t index = (size_t)rng_below(g, live->count);
  live_block b = live->blocks[index];
  uint64_t t0 = plm__monotonic_ns();
  plm_status status = allocator_free(a, b.ptr, stream);
  uint64_t t1 = plm__monotonic_ns();
  if (status != PLM_OK) return bench_fail_call(where, "free", status);
  samples_push(pairs, b.alloc_ns + elapsed(t0, t1));
  live->blocks[index] = live->blocks[--live->count];
  live->bytes -= b.size;
  return true;
}

/* ---- the table's parameters
 * ------------------------------------------------------------------------ */

static void format_bytes(char *out, size_t size, size_t bytes) {
  if (bytes >= MIB && bytes % MIB == 0)
    snprintf(out, size, "%zu MiB", bytes / MIB);
  else if (bytes >= KIB && bytes % KIB == 0)
    snprintf(out, size, "%zu KiB", bytes / KIB);
  else if (bytes >= MIB)
    snprintf(out, size, "%.2f MiB", (double)bytes / (double)MIB);
  else
    snprintf(out, size, "%zu B", bytes);
}

void format_params(char *out, size_t size, const result *r) {
  char bytes[32];
  format_bytes(bytes, sizeof bytes, r->max_size);
  if (strcmp(r->workload, "random_allocations") == 0 || strcmp(r->workload, "fragmentation") == 0)
    snprintf(out, size, "max %s, n %zu", bytes, r->n);
  else if (strcmp(r->workload, "steady_state") == 0)
    snprintf(out, size, "%zu frames", r->n);
  else if (strcmp(r->workload, "multi_stream") == 0)
    snprintf(out, size, "%s, n %zu", r->stream_waits ? "waits" : "no waits", r->n);
  else
    snprintf(out, size, "%d thr x %zu", r->threads, r->n);
}

void run_modes(const bench_env *env, bench_mode modes[3]) {
  modes[0] = MODE_POOLED;
  modes[1] = MODE_PASSTHROUGH;
  modes[2] = env->backend == PLM_BACKEND_CUDA ? MODE_CUDA_ASYNC : MODE_JEMALLOC;
}

void trace_name_max_n(const pool_case *c, char *out, size_t size) {
  snprintf(out, size, "max%zu-n%zu", c->max_size, c->n);
}

/* benchmarks/bench_pool.c: A/B benchmark of the stream-ordered device pool.
 *
 *   bench_pool [--quick | --smoke] [--backend host|cuda|auto] [--json PATH]
 *              [--workload NAME] [--profile DIR]
 *   bench_pool --lookup [--quick]
 *   bench_pool --validate-json PATH
 *
 * Each workload runs once per allocator mode, each run on a fresh pool (or a fresh
 * jemalloc arena), and one table row and one JSON result are written per workload x
 * mode x parameter set. Modes: `pooled` and `passthrough` (plm_pool_create with
 * PLM_POOL_POOLED / PLM_POOL_PASSTHROUGH) on both backends; on host also `jemalloc`
 * (mallocx/dallocx on an explicit arena from "arenas.create", MALLOCX_TCACHE_NONE
 * and 256-byte alignment, the pool's own alignment, of plume's private jemalloc, the
 * pinned host pool's: pool/private_jemalloc.h): the baseline the pool must stay
 * within 1.5x of; on cuda also `cuda_async` (PLM_POOL_CUDA_ASYNC: cudaMallocAsync on
 * a pool with release threshold UINT64_MAX).
 *
 * Workloads:
 *   random_allocations  RAPIDS RMM's benchmark: n allocations of uniform sizes in
 *                       [1, max_size] on one stream; each step allocates with
 *                       probability 73% (always when nothing is live), else frees a
 *                       random live block; an allocation that would take the live
 *                       bytes over the cap (4 GiB, or half the device's free memory
 *                       when that is less) frees instead; the rest is freed at the
 *                       end in random order. Fixed seed: every mode sees the same
 *                       sequence.
 *   fragmentation       RMM's and PyTorch's users' worst case: many live blocks of
 *                       mixed sizes freed in a random order while new ones of other
 *                       sizes arrive. n allocations on one stream in 8 phases; in
 *                       phase p sizes span 6 octaves (each equally likely, uniform
 *                       within it) from 256 B x 4^p, the exponent wrapping so that
 *                       sizes stay in [256 B, 16 MiB): each phase shares part of its
 *                       sizes with the last and brings larger or smaller new ones. Before each
 * allocation random live blocks are freed until live bytes plus the new block stay within 1 GiB (64
 * MiB with --smoke; at most the random_allocations cap); the rest is freed at the end in random
 * order. steady_state        the buffers of one 512x512 conv -> entropy -> segmentation frame
 * (frame_script below) allocated and freed in pipeline order on one stream, frame after frame;
 *                       upstream_allocs_after_warmup counts chunks taken upstream
 *                       after frame 10 (the goal is 0).
 *   multi_stream        allocate on stream 1, enqueue a 64-byte memset there, order
 *                       stream 2 after it with an event, free on stream 2; sizes
 *                       uniform in [1, 1 MiB]. Run with stream waits allowed and
 *                       with PLM_POOL_NO_STREAM_WAITS. Not run for jemalloc, which
 *                       has no stream order.
 *   threads             1, 2 and 4 threads, each with its own stream, on one shared
 *                       pool (or arena): each allocates sizes uniform in [1, 64 KiB]
 *                       and keeps its last 16 blocks live (a block is freed 16
 *                       allocations after it was made).
 *
 * Timing. Every plm_pool_alloc and plm_pool_free call (mallocx, dallocx) is timed on
 * its own with clock_gettime(CLOCK_MONOTONIC); the median cost of one back-to-back
 * pair of clock reads (timer_overhead_ns in the JSON) is subtracted from each
 * reading. A block's pair time is its allocation's time plus its free's time;
 * ns_per_pair_median and ns_per_pair_p99 are the median and the 99th percentile
 * (nearest rank) of the pair times of all blocks of the run (for threads: of all
 * threads' blocks together; per_thread_median_ns lists each thread's own median).
 * Throughput (threads) is pairs over the wall time of the timed loops, clock reads
 * included. Nothing else is timed: the memsets and events of multi_stream are
 * outside the readings.
 *
 * Run sizes. Full: random_allocations n in {1000, 10000, 100000} for each max_size
 * in {4 KiB, 1 MiB, 64 MiB}; fragmentation n 1,000,000; 10,000 frames; 20,000
 * multi_stream iterations; 200,000 pairs per thread. --quick: the same without n
 * 100000 at 64 MiB (passthrough's upstream calls dominate there), fragmentation n
 * 100,000, 2,000 frames, 5,000 iterations, 50,000 pairs per thread. --smoke: 200
 * allocations per max_size (50 at 64 MiB), fragmentation n 500, 30 frames, 100
 * iterations, 500 pairs per thread: it only proves that every path runs.
 *
 * The fragmentation goal, judged on every pooled run and printed once per workload
 * (met when all its runs are within, with the figures of the worst): peak reserved
 * minus peak in use at most 25% of peak in use, or one 2 MiB chunk per stream in
 * use where that is more (1 stream; 2 for multi_stream; one per thread), so that a
 * tiny workload is not judged on the chunk granularity. multi_stream without stream
 * waits is not judged: its freeing stream runs behind the host and the pool grows by
 * design; byte_limit is the documented answer. In the JSON each result carries
 * "fragmentation_goal": {"peak_bytes_reserved", "peak_bytes_in_use", "streams",
 * "excess_bytes", "allowed_bytes", "met"}, or null where it is not judged (other
 * modes, multi_stream without waits), and the "goals" array has one entry per
 * workload ({"goal", "measured", "met"}) as for the other goals.
 *
 * Profile (--profile DIR). After the table (and its JSON), a short separate pass: per
 * mode a fresh allocator and 200 steady_state frames (--smoke: 20) on stream 1, each
 * frame's 15 allocations and frees recorded as one launch, "<mode> alloc+free"
 * ("pooled alloc+free", ...), between plm_profiler_begin and plm_profiler_end (frame =
 * the frame's index, no cost model). The allocator calls run on the host, so the
 * host time of a frame is the launch's enqueue time (enqueue_mean_us in profile.json);
 * its device time is what the stream saw (next to nothing unless an upstream call
 * waits for the stream). The table's figures come from the unprofiled runs alone; the
 * report's A/B bars are the table's median ns per pair of the steady_state rows (or,
 * when steady_state did not run, of the first workload that did), lower is better.
 * DIR is created (with its parents) before anything runs.
 *
 * Pool snapshots (--profile DIR). The first pooled run of each workload, max_size and
 * stream-wait setting (so each shape of load once, at its smallest n) takes one
 * snapshot of its pool (plm_pool_snapshot_take) at its fullest moment:
 * random_allocations and fragmentation after their last allocation (before the frees that empty them),
 * steady_state in its last frame after the step with the most bytes live, multi_stream
 * in its last iteration before the last free (earlier blocks pending or reused on
 * stream 2), threads after every thread has freed everything. Taking it is left out of
 * the run's wall time and of every timed pair. report.html draws each as a segment map
 * and DIR/pool_snapshot.json holds them (docs/profile-schema.md).
 *
 * Traces (--write-trace DIR). Instead of timing anything, write the allocation
 * sequence of each random_allocations, fragmentation and steady_state case of the run
 * size (--quick, --smoke or full) into DIR/<workload>-<parameters>.trace, as the
 * workloads above make it (same seed, same cap on live bytes, which depends on the
 * device: write the traces on the machine they describe), so that other allocators
 * replay exactly what plume's pool is measured on (benchmarks/peers_gpu.py: PyTorch's caching allocator and CuPy's
 * memory pool). The format, one line each:
 *   # plume-pool-trace 1
 *   # workload NAME KEY VALUE ...      (max_size, n or frames, live_cap or
 *                                       live_target, seed)
 *   a ID BYTES                         allocate BYTES as block ID (IDs from 1, never reused)
 *   f ID                               free block ID
 * Every block is freed by the end of its file.
 *
 * Lookup (--lookup). Instead of the workloads, time the pool's pointer -> descriptor
 * lookup alone over 100,000 live blocks, in the old table (uthash) and in the one
 * that replaced it (pool/pool_live.h): ns per lookup, and per lookup + take out +
 * put back. Printed only (no JSON); the layout and loops are described in pool_lookup.c.
 *
 * On a terminal a progress bar on stderr counts the cases (workload x parameters).
 *
 * The benchmark reports its goals and never fails on timing. It exits 1 only on a
 * real error (an allocation that should fit failed, a pool call reported an error,
 * the JSON could not be written) with the call, its status and plm_last_error().
 * Exit codes: 0 success, 1 a runtime failure, 2 bad usage.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "pool_lookup.h"
#include "plume/plume.h"
#include "plume/pool.h"
#include "pool/private_jemalloc.h"
#include "profile/stats.h"
#include "streams/clock.h"
#include "streams/file.h"
#include "tools/progress.h"
#include "tools/result_check.h"
#include "tools/splitmix64.h"

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)

/* ---- options ------------------------------------------------------------------ */

typedef struct options {
  run_size size;
  plm_backend backend;
  const char *json_path;     /* NULL: no JSON */
  const char *only_workload; /* NULL: all */
  const char *profile_dir;   /* NULL: no profile */
  const char *trace_dir;     /* NULL: timed runs; else write traces there */
  bool lookup;               /* time the descriptor lookup alone */
  bool keep_pages;           /* pooled pools with PLM_POOL_KEEP_PAGES */
  bool no_slabs;             /* pooled pools with PLM_POOL_NO_SLABS */
  int64_t page_bytes;        /* pooled pools' page_bytes; 0: the default */
} options;

static const char *const workload_names[] = {"random_allocations", "fragmentation", "steady_state",
                                             "multi_stream", "threads"};

static const char usage[] =
    "usage: bench_pool [--quick | --smoke] [--backend host|cuda|auto] [--json PATH]\n"
    "                  [--workload NAME] [--profile DIR] [--keep-pages] [--no-slabs]\n"
    "                  [--page-bytes N]\n"
    "       bench_pool [--quick | --smoke] [--workload NAME] --write-trace DIR\n"
    "       bench_pool --lookup [--quick]\n"
    "       bench_pool --validate-json PATH\n"
    "\n"
    "A/B benchmark of plume's stream-ordered device pool: pooled against\n"
    "passthrough (upstream on every call) and, on host, a jemalloc arena or, on\n"
    "cuda, cudaMallocAsync. Prints a table, the ratios and the goals; writes JSON.\n";

/* ---- errors --------------------------------------------------------------------- */

static char bench_error[2048];

/* Record why the run stops; always returns false so callers can `return fail(...)`. */
static bool fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(bench_error, sizeof bench_error, fmt, ap);
  va_end(ap);
  return false;
}

static bool fail_call(const char *where, const char *call, plm_status status) {
  return fail("%s: %s -> %s: %s", where, call, plm_status_str(status), plm_last_error());
}

/* Pool statistics that make no sense are reported (stderr and JSON), not fatal. */
static json_t *warnings;

/* The progress bar (on a terminal), erased for a warning. */
static progress bar;

static void warn(const char *fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  progress_clear(&bar);
  fprintf(stderr, "bench_pool: warning: %s\n", text);
  json_array_append_new(warnings, json_string(text));
}

/* ---- clock and statistics ------------------------------------------------------- */

static uint64_t timer_overhead_ns;

static int compare_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values (q in (0, 1]; profile/stats.h); 0 for none. */
static uint64_t percentile(const uint64_t *sorted, size_t count, double q) {
  return count ? sorted[plm__nearest_rank(count, q)] : 0;
}

static void measure_timer_overhead(void) {
  enum { SAMPLES = 2001 };
  static uint64_t samples[SAMPLES];
  for (int i = 0; i < SAMPLES; i++) {
    uint64_t t0 = plm__monotonic_ns();
    uint64_t t1 = plm__monotonic_ns();
    samples[i] = t1 - t0;
  }
  qsort(samples, SAMPLES, sizeof samples[0], compare_u64);
  timer_overhead_ns = percentile(samples, SAMPLES, 0.5);
}

/* The time between two readings, less the cost of reading the clock. */
static inline uint64_t elapsed(uint64_t t0, uint64_t t1) {
  uint64_t d = t1 - t0;
  return d > timer_overhead_ns ? d - timer_overhead_ns : 0;
}

/* A growable list of pair times. */
typedef struct samples {
  uint64_t *v;
  size_t count, capacity;
} samples;

static bool samples_reserve(samples *s, size_t capacity) {
  s->v = malloc((capacity ? capacity : 1) * sizeof s->v[0]);
  s->count = 0;
  s->capacity = capacity;
  return s->v != NULL || fail("out of host memory for %zu samples", capacity);
}

static inline void samples_push(samples *s, uint64_t ns) {
  if (s->count < s->capacity) s->v[s->count++] = ns;
}

static void samples_release(samples *s) {
  free(s->v);
  s->v = NULL;
  s->count = s->capacity = 0;
}

/* ---- a deterministic PRNG (splitmix64, tools/splitmix64.h) ----------------------- */

typedef struct rng {
  uint64_t state;
} rng;

static inline uint64_t rng_next(rng *r) {
  return splitmix64_next(&r->state);
}

/* Uniform in [0, bound) (the modulo bias is below 2^-37 for the bounds used here). */
static inline uint64_t rng_below(rng *r, uint64_t bound) {
  return rng_next(r) % bound;
}

enum { BENCH_SEED = 20240611 };

/* ---- allocators under test --------------------------------------------------------- */

/* MODE_TRACE allocates nothing: it writes each call to trace_file (--write-trace) and
 * hands out the block's ID as its pointer. */
typedef enum bench_mode {
  MODE_POOLED,
  MODE_PASSTHROUGH,
  MODE_JEMALLOC,
  MODE_CUDA_ASYNC,
  MODE_TRACE
} bench_mode;

static const char *const mode_names[] = {"pooled", "passthrough", "jemalloc", "cuda_async",
                                         "trace"};

static FILE *trace_file; /* MODE_TRACE's output */

/* Flags every pooled pool gets besides its workload's (--keep-pages, --no-slabs), and
 * its page_bytes (--page-bytes; 0: the default). */
static unsigned pooled_extra_flags;
static size_t pooled_page_bytes;

typedef struct allocator {
  bench_mode mode;
  plm_pool *pool; /* every mode but jemalloc and trace */
  unsigned arena; /* jemalloc */
  int jemalloc_flags;
  uint64_t last_id; /* trace */
} allocator;

static bool allocator_open(plm_context *ctx, bench_mode mode, unsigned pool_flags, allocator *a) {
  memset(a, 0, sizeof *a);
  a->mode = mode;
  if (mode == MODE_TRACE) return trace_file != NULL || fail("trace: no file to write to");
  if (mode == MODE_JEMALLOC) {
    size_t len = sizeof a->arena;
    int err = je_mallctl("arenas.create", &a->arena, &len, NULL, 0);
    if (err != 0) return fail("jemalloc: mallctl(\"arenas.create\") failed: %s", strerror(err));
    a->jemalloc_flags = (int)(MALLOCX_ARENA(a->arena) | MALLOCX_TCACHE_NONE | MALLOCX_LG_ALIGN(8));
    return true;
  }
  plm_pool_config config = plm_pool_config_default();
  config.mode = mode == MODE_POOLED        ? PLM_POOL_POOLED
                : mode == MODE_PASSTHROUGH ? PLM_POOL_PASSTHROUGH
                                           : PLM_POOL_CUDA_ASYNC;
  config.flags = pool_flags | (mode == MODE_POOLED ? pooled_extra_flags : 0);
  if (mode == MODE_POOLED) config.page_bytes = pooled_page_bytes;
  plm_status status = plm_pool_create(ctx, &config, &a->pool);
  if (status != PLM_OK) return fail_call(mode_names[mode], "plm_pool_create", status);
  return true;
}

static inline plm_status allocator_alloc(allocator *a, size_t bytes, plm_stream *stream,
                                         void **ptr) {
  if (a->mode == MODE_TRACE) {
    uint64_t id = ++a->last_id;
    *ptr = (void *)(uintptr_t)id;
    return fprintf(trace_file, "a %" PRIu64 " %zu\n", id, bytes) > 0 ? PLM_OK : PLM_ERR_INTERNAL;
  }
  if (a->mode == MODE_JEMALLOC) {
    *ptr = je_mallocx(bytes, a->jemalloc_flags);
    return *ptr ? PLM_OK : PLM_ERR_OUT_OF_MEMORY;
  }
  return plm_pool_alloc(a->pool, bytes, stream, ptr);
}

static inline plm_status allocator_free(allocator *a, void *ptr, plm_stream *stream) {
  if (a->mode == MODE_TRACE)
    return fprintf(trace_file, "f %" PRIu64 "\n", (uint64_t)(uintptr_t)ptr) > 0 ? PLM_OK
                                                                                : PLM_ERR_INTERNAL;
  if (a->mode == MODE_JEMALLOC) {
    je_dallocx(ptr, a->jemalloc_flags);
    return PLM_OK;
  }
  return plm_pool_free(a->pool, ptr, stream);
}

/* The pool's statistics; false (and nothing written) for jemalloc and trace. */
static bool allocator_stats(allocator *a, plm_pool_stats *out) {
  if (a->mode == MODE_JEMALLOC || a->mode == MODE_TRACE) return false;
  plm_status status = plm_pool_stats_get(a->pool, out);
  if (status != PLM_OK) {
    warn("%s: plm_pool_stats_get -> %s: %s", mode_names[a->mode], plm_status_str(status),
         plm_last_error());
    return false;
  }
  return true;
}

static bool allocator_close(allocator *a, const char *where) {
  if (a->mode == MODE_TRACE) return true;
  if (a->mode == MODE_JEMALLOC) {
    char name[64];
    snprintf(name, sizeof name, "arena.%u.destroy", a->arena);
    je_mallctl(name, NULL, NULL, NULL, 0); /* best effort: only gives the memory back */
    return true;
  }
  plm_status status = plm_pool_destroy(a->pool);
  a->pool = NULL;
  if (status != PLM_OK) return fail_call(where, "plm_pool_destroy", status);
  return true;
}

/* ---- results ---------------------------------------------------------------------- */

typedef struct result {
  const char *workload;
  bench_mode mode;
  /* parameters */
  size_t max_size;
  size_t n;         /* allocations (random), frames (steady), iterations (multi), per thread */
  int threads;      /* threads workload; 0 otherwise */
  int stream_waits; /* multi_stream: 1 allowed, 0 PLM_POOL_NO_STREAM_WAITS; -1 n/a */
  /* figures */
  size_t pairs;
  uint64_t median_ns, p99_ns;
  double mean_ns;
  double wall_s;
  bool has_stats;
  plm_pool_stats stats;
  bool has_after_warmup;
  uint64_t upstream_after_warmup;
  double throughput; /* pairs per second (threads); 0 otherwise */
  uint64_t per_thread_median_ns[4];
} result;

typedef struct results {
  result *v;
  size_t count, capacity;
} results;

static result *results_add(results *rs) {
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

/* Sort the pair times and fill the result's distribution figures. */
static void summarize(result *r, samples *s) {
  qsort(s->v, s->count, sizeof s->v[0], compare_u64);
  r->pairs = s->count;
  r->median_ns = percentile(s->v, s->count, 0.5);
  r->p99_ns = percentile(s->v, s->count, 0.99);
  double sum = 0;
  for (size_t i = 0; i < s->count; i++) sum += (double)s->v[i];
  r->mean_ns = s->count ? sum / (double)s->count : 0;
}

static double hit_rate(const result *r) {
  return r->stats.requests ? (double)r->stats.hits / (double)r->stats.requests : 0;
}

static double peak_ratio(const result *r) {
  return r->stats.peak_bytes_in_use
             ? (double)r->stats.peak_bytes_reserved / (double)r->stats.peak_bytes_in_use
             : 0;
}

/* The device's memory, for the sanity checks below (0: unknown). */
static uint64_t device_total_memory;

/* Take the final statistics and check that they are consistent with what the
 * workload did (allocs successful allocations, everything freed). */
static void finish_stats(result *r, allocator *a, const char *where, uint64_t allocs) {
  r->has_stats = allocator_stats(a, &r->stats);
  if (!r->has_stats) return;
  const plm_pool_stats *s = &r->stats;
  if (s->requests != allocs)
    warn("%s: stats.requests %" PRIu64 " but %" PRIu64 " allocations succeeded", where, s->requests,
         allocs);
  if (s->hits > s->requests)
    warn("%s: stats.hits %" PRIu64 " > requests %" PRIu64, where, s->hits, s->requests);
  if (s->peak_bytes_reserved < s->peak_bytes_in_use)
    warn("%s: stats.peak_bytes_reserved %" PRIu64 " < peak_bytes_in_use %" PRIu64, where,
         s->peak_bytes_reserved, s->peak_bytes_in_use);
  if (s->bytes_reserved < s->bytes_in_use)
    warn("%s: stats.bytes_reserved %" PRIu64 " < bytes_in_use %" PRIu64, where, s->bytes_reserved,
         s->bytes_in_use);
  if (s->bytes_in_use != 0 || s->live_blocks != 0)
    warn("%s: everything was freed but stats show %" PRIu64 " bytes in use in %" PRIu64
         " live blocks",
         where, s->bytes_in_use, s->live_blocks);
  if (s->upstream_frees > s->upstream_allocs)
    warn("%s: stats.upstream_frees %" PRIu64 " > upstream_allocs %" PRIu64, where,
         s->upstream_frees, s->upstream_allocs);
  if (device_total_memory && s->peak_bytes_reserved > device_total_memory)
    warn("%s: stats.peak_bytes_reserved %" PRIu64 " exceeds the device's %" PRIu64
         " bytes of memory",
         where, s->peak_bytes_reserved, device_total_memory);
  if (s->fragmentation < 0 || s->fragmentation > 1)
    warn("%s: stats.fragmentation %g outside [0, 1]", where, s->fragmentation);
}

/* ---- the environment shared by all runs ---------------------------------------------- */

enum { MAX_THREADS = 4, MAX_SNAPSHOTS = 16 };

/* A snapshot of a pooled run's pool (--profile), kept until the profiler exists. */
typedef struct kept_snapshot {
  char name[160];
  const char *workload; /* with max_size and stream_waits: which runs it stands for */
  size_t max_size;
  bool stream_waits;
  plm_pool_snapshot *snapshot;
} kept_snapshot;

typedef struct bench_env {
  options opt;
  plm_context *ctx;
  plm_backend backend;
  plm_device_info info;
  plm_stream *stream1, *stream2;
  plm_stream *thread_streams[MAX_THREADS];
  plm_profiler *profiler; /* with --profile */
  size_t live_cap;        /* random_allocations' cap on live bytes */
  results results;
  kept_snapshot snapshots[MAX_SNAPSHOTS]; /* with --profile */
  size_t snapshot_count;
} bench_env;

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

static void format_params(char *out, size_t size, const result *r);

/* Keep a snapshot of a's pool for run r, named after the run and `moment` ("after the
 * last allocation"), when wants_snapshot says so. Returns the nanoseconds it took, which
 * the caller leaves out of the run's wall time. A failure is warned about; the run goes
 * on. */
static uint64_t keep_snapshot(bench_env *env, const allocator *a, const result *r,
                              const char *moment) {
  if (!wants_snapshot(env, r)) return 0;
  uint64_t t0 = plm__monotonic_ns();
  kept_snapshot *k = &env->snapshots[env->snapshot_count];
  plm_status status = plm_pool_snapshot_take(a->pool, &k->snapshot);
  if (status != PLM_OK) {
    warn("%s: plm_pool_snapshot_take -> %s: %s", r->workload, plm_status_str(status),
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

/* ---- workload: random_allocations --------------------------------------------------- */

typedef struct live_block {
  void *ptr;
  size_t size;
  uint64_t alloc_ns;
} live_block;

/* The live blocks of random_allocations and fragmentation (room for all of them in
 * blocks), and their bytes. */
typedef struct live_set {
  live_block *blocks;
  size_t count, bytes;
} live_set;

/* Allocate `size` bytes on stream, timed; the block joins the set. False, the failure
 * said, when the allocator refuses. */
static bool live_alloc(live_set *live, allocator *a, size_t size, plm_stream *stream,
                       const char *where) {
  void *ptr = NULL;
  uint64_t t0 = plm__monotonic_ns();
  plm_status status = allocator_alloc(a, size, stream, &ptr);
  uint64_t t1 = plm__monotonic_ns();
  if (status != PLM_OK) {
    char call[96];
    snprintf(call, sizeof call, "alloc(%zu bytes) with %zu bytes live", size, live->bytes);
    return fail_call(where, call, status);
  }
  live->blocks[live->count++] = (live_block){ptr, size, elapsed(t0, t1)};
  live->bytes += size;
  return true;
}

/* Free a live block chosen at random (the set is not empty), timed; its alloc + free
 * pair goes into pairs. False, the failure said, when the allocator refuses. */
static bool live_free_random(live_set *live, allocator *a, rng *g, samples *pairs,
                             plm_stream *stream, const char *where) {
  size_t index = (size_t)rng_below(g, live->count);
  live_block b = live->blocks[index];
  uint64_t t0 = plm__monotonic_ns();
  plm_status status = allocator_free(a, b.ptr, stream);
  uint64_t t1 = plm__monotonic_ns();
  if (status != PLM_OK) return fail_call(where, "free", status);
  samples_push(pairs, b.alloc_ns + elapsed(t0, t1));
  live->blocks[index] = live->blocks[--live->count];
  live->bytes -= b.size;
  return true;
}

static bool random_allocations(bench_env *env, bench_mode mode, size_t max_size, size_t n,
                               result *r) {
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
    return fail("%s: out of host memory", where);
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

static bool fragmentation(bench_env *env, bench_mode mode, size_t max_size, size_t n, result *r) {
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
    return fail("%s: out of host memory", where);
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

/* ---- workload: steady_state ---------------------------------------------------------- */

/* The device buffers of one frame of a 512x512 conv -> entropy -> segmentation
 * pipeline, in the order a straightforward implementation allocates and frees them:
 * a positive entry allocates buffer k, a negative one frees it. */
typedef struct frame_buffer {
  const char *name;
  size_t bytes;
} frame_buffer;

static const frame_buffer frame_buffers[] = {
    {"input u16 512x512", 512 * 512 * 2},
    {"conv padded tile f32 516x516", 516 * 516 * 4},
    {"conv kernel f32 5x5", 5 * 5 * 4},
    {"conv out f32", 512 * 512 * 4},
    {"quantised u8", 512 * 512},
    {"entropy histograms u16 512x256", 512 * 256 * 2},
    {"entropy f32", 512 * 512 * 4},
    {"global histogram u32 256", 256 * 4},
    {"threshold f32", 4},
    {"mask u8", 512 * 512},
    {"labels i32", 512 * 512 * 4},
    {"union-find equivalences i32 16384", 16384 * 4},
    {"region table 1024 x 64 B", 64 * KIB},
    {"region count u32", 4},
    {"detections 256 x 16 B", 4 * KIB},
};
enum { FRAME_BUFFERS = sizeof frame_buffers / sizeof frame_buffers[0] };

/* Buffer k is entry k - 1 of frame_buffers; +k allocates it, -k frees it. */
static const int frame_script[] = {+1,  +3,  +2,  +4,  -2,  -3,  -1, /* upload, conv */
                                   +5,  +6,  +7,  -6,  -5,  -4,  /* quantise, windowed entropy */
                                   +8,  +9,  +10, -8,  -9,  -7,  /* histogram, threshold, mask */
                                   +11, +12, -12, -10,           /* connected components */
                                   +13, +14, +15, -11, -13, -14, /* regions, detections */
                                   -15};
enum { FRAME_STEPS = sizeof frame_script / sizeof frame_script[0] };
enum { STEADY_WARMUP_FRAMES = 10 };

/* Step `step` of frame_script: allocate or free its buffer. ptr holds the buffers; a
 * freed one becomes NULL. */
static inline plm_status frame_step(allocator *a, plm_stream *stream, int step, void **ptr) {
  int k = abs(frame_script[step]) - 1;
  if (frame_script[step] > 0) return allocator_alloc(a, frame_buffers[k].bytes, stream, &ptr[k]);
  plm_status status = allocator_free(a, ptr[k], stream);
  if (status == PLM_OK) ptr[k] = NULL;
  return status;
}

/* The step of frame_script after which the most bytes are live: a frame's peak. */
static int frame_peak_step(void) {
  size_t live = 0, most = 0;
  int peak = 0;
  for (int step = 0; step < FRAME_STEPS; step++) {
    int k = abs(frame_script[step]) - 1;
    live = frame_script[step] > 0 ? live + frame_buffers[k].bytes : live - frame_buffers[k].bytes;
    if (live > most) {
      most = live;
      peak = step;
    }
  }
  return peak;
}

static bool steady_state(bench_env *env, bench_mode mode, size_t frames, result *r) {
  char where[96];
  snprintf(where, sizeof where, "steady_state (%s, %zu frames)", mode_names[mode], frames);
  r->workload = "steady_state";
  r->mode = mode;
  r->n = frames;
  for (int k = 0; k < FRAME_BUFFERS; k++)
    if (frame_buffers[k].bytes > r->max_size) r->max_size = frame_buffers[k].bytes;

  allocator a;
  if (!allocator_open(env->ctx, mode, 0, &a)) return false;
  samples pairs;
  if (!samples_reserve(&pairs, frames * FRAME_BUFFERS)) {
    allocator_close(&a, where);
    return false;
  }
  void *ptr[FRAME_BUFFERS] = {0};
  uint64_t alloc_ns[FRAME_BUFFERS] = {0};
  const int peak_step = frame_peak_step();
  plm_pool_stats warm = {0};
  bool has_warm = false, ok = true;
  uint64_t allocs = 0;
  uint64_t start = plm__monotonic_ns();
  for (size_t frame = 0; ok && frame < frames; frame++) {
    for (int step = 0; step < FRAME_STEPS; step++) {
      int k = abs(frame_script[step]) - 1;
      uint64_t t0 = plm__monotonic_ns();
      plm_status status = frame_step(&a, env->stream1, step, ptr);
      uint64_t t1 = plm__monotonic_ns();
      if (status != PLM_OK) {
        char call[160];
        snprintf(call, sizeof call, "%s(%s, %zu bytes) in frame %zu",
                 frame_script[step] > 0 ? "alloc" : "free", frame_buffers[k].name,
                 frame_buffers[k].bytes, frame);
        ok = fail_call(where, call, status);
        break;
      }
      if (frame_script[step] > 0) {
        alloc_ns[k] = elapsed(t0, t1);
        allocs++;
      } else {
        samples_push(&pairs, alloc_ns[k] + elapsed(t0, t1));
      }
      if (frame + 1 == frames && step == peak_step)
        start += keep_snapshot(env, &a, r, "the last frame at its peak");
    }
    if (frame + 1 == STEADY_WARMUP_FRAMES) has_warm = allocator_stats(&a, &warm);
  }
  r->wall_s = (double)(plm__monotonic_ns() - start) * 1e-9;
  for (int k = 0; k < FRAME_BUFFERS; k++)
    if (ptr[k]) allocator_free(&a, ptr[k], env->stream1);
  if (ok) {
    summarize(r, &pairs);
    finish_stats(r, &a, where, allocs);
    if (r->has_stats && has_warm) {
      r->has_after_warmup = true;
      r->upstream_after_warmup = r->stats.upstream_allocs - warm.upstream_allocs;
    }
  }
  samples_release(&pairs);
  return allocator_close(&a, where) && ok;
}

/* ---- workload: multi_stream ----------------------------------------------------------- */

enum { MULTI_STREAM_MEMSET_BYTES = 64 };

static bool multi_stream(bench_env *env, bench_mode mode, bool waits, size_t max_size, size_t n,
                         result *r) {
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
    return fail_call(where, "plm_event_create", status);
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
      ok = fail_call(where, call, status);
      break;
    }
    allocs++;
    size_t touch = size < MULTI_STREAM_MEMSET_BYTES ? size : MULTI_STREAM_MEMSET_BYTES;
    if ((status = plm_stream_memset(env->stream1, ptr, 0, touch)) != PLM_OK)
      ok = fail_call(where, "plm_stream_memset on stream 1", status);
    else if ((status = plm_event_record(used, env->stream1)) != PLM_OK)
      ok = fail_call(where, "plm_event_record on stream 1", status);
    else if ((status = plm_stream_wait_event(env->stream2, used)) != PLM_OK)
      ok = fail_call(where, "plm_stream_wait_event on stream 2", status);
    if (i + 1 == n)
      start +=
          keep_snapshot(env, &a, r, "the last block allocated, earlier ones freed on stream 2");
    uint64_t t2 = plm__monotonic_ns();
    status = allocator_free(&a, ptr, env->stream2);
    uint64_t t3 = plm__monotonic_ns();
    if (status != PLM_OK) {
      if (ok) ok = fail_call(where, "free on stream 2", status);
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

static bool threads_workload(bench_env *env, bench_mode mode, int threads, size_t n, result *r) {
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
      ok = fail("%s: pthread_create failed: %s", where, strerror(err));
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
        ok = fail("%s: %s", where, jobs[t].error);
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

/* ---- the table ------------------------------------------------------------------------ */

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

/* The parameters of a result, as the table shows them; equal strings group A/B runs. */
static void format_params(char *out, size_t size, const result *r) {
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

static void print_table_header(void) {
  printf("%-18s %-22s %-11s %9s %9s %8s %8s %8s %9s  %s\n", "workload", "parameters", "mode",
         "pairs", "median ns", "p99 ns", "hit rate", "upstream", "peak r/u", "notes");
}

static void print_row(const result *r) {
  char params[64], hit[16] = "-", upstream[24] = "-", peak[16] = "-", notes[96] = "";
  format_params(params, sizeof params, r);
  if (r->has_stats) {
    if (r->stats.requests) snprintf(hit, sizeof hit, "%.4f", hit_rate(r));
    snprintf(upstream, sizeof upstream, "%" PRIu64, r->stats.upstream_allocs);
    if (r->stats.peak_bytes_in_use)
      snprintf(peak, sizeof peak, peak_ratio(r) < 1000 ? "%.3f" : "%.3g", peak_ratio(r));
  }
  if (r->has_after_warmup)
    snprintf(notes, sizeof notes, "upstream after warm-up %" PRIu64, r->upstream_after_warmup);
  else if (r->stream_waits >= 0 && r->has_stats)
    snprintf(notes, sizeof notes,
             "waits %" PRIu64 ", cross-stream %" PRIu64 ", host syncs %" PRIu64,
             r->stats.inserted_waits, r->stats.cross_stream_reuses, r->stats.host_synchronizations);
  else if (r->threads)
    snprintf(notes, sizeof notes, "%.2f M pairs/s", r->throughput * 1e-6);
  printf("%-18s %-22s %-11s %9zu %9" PRIu64 " %8" PRIu64 " %8s %8s %9s  %s\n", r->workload, params,
         mode_names[r->mode], r->pairs, r->median_ns, r->p99_ns, hit, upstream, peak, notes);
  fflush(stdout);
}

/* ---- ratios and goals ---------------------------------------------------------------- */

static bool same_params(const result *a, const result *b) {
  return strcmp(a->workload, b->workload) == 0 && a->max_size == b->max_size && a->n == b->n &&
         a->threads == b->threads && a->stream_waits == b->stream_waits;
}

static const result *find_run(const results *rs, const result *like, bench_mode mode) {
  for (size_t i = 0; i < rs->count; i++)
    if (rs->v[i].mode == mode && same_params(&rs->v[i], like)) return &rs->v[i];
  return NULL;
}

static double median_ratio(const result *other, const result *pooled) {
  if (!other || !pooled) return -1;
  return (double)other->median_ns / (double)(pooled->median_ns ? pooled->median_ns : 1);
}

static json_t *json_ratio(double ratio) {
  return ratio >= 0 ? json_real(ratio) : json_null();
}

/* Print the side-by-side ratios (other mode's median / pooled median) and return them
 * as JSON. */
static json_t *print_ratios(const bench_env *env) {
  bench_mode third = env->backend == PLM_BACKEND_CUDA ? MODE_CUDA_ASYNC : MODE_JEMALLOC;
  char third_title[40];
  snprintf(third_title, sizeof third_title, "%s/pooled", mode_names[third]);
  printf("\nratios of medians (x: how many times the pooled median; > 1 means pooled is faster)\n");
  printf("%-18s %-22s %18s %18s\n", "workload", "parameters", "passthrough/pooled", third_title);
  json_t *out = json_array();
  for (size_t i = 0; i < env->results.count; i++) {
    const result *pooled = &env->results.v[i];
    if (pooled->mode != MODE_POOLED) continue;
    double pass = median_ratio(find_run(&env->results, pooled, MODE_PASSTHROUGH), pooled);
    double other = median_ratio(find_run(&env->results, pooled, third), pooled);
    char params[64], a[24] = "-", b[24] = "-";
    format_params(params, sizeof params, pooled);
    if (pass >= 0) snprintf(a, sizeof a, "%.2fx", pass);
    if (other >= 0) snprintf(b, sizeof b, "%.2fx", other);
    printf("%-18s %-22s %18s %18s\n", pooled->workload, params, a, b);
    json_t *row = json_object();
    json_object_set_new(row, "workload", json_string(pooled->workload));
    json_object_set_new(row, "parameters", json_string(params));
    json_object_set_new(row, "passthrough_over_pooled", json_ratio(pass));
    char key[48];
    snprintf(key, sizeof key, "%s_over_pooled", mode_names[third]);
    json_object_set_new(row, key, json_ratio(other));
    json_array_append_new(out, row);
  }
  return out;
}

/* One goal line: met is 1, 0, or -1 when it could not be judged here. */
static void goal(json_t *goals, const char *text, int met, const char *fmt, ...) {
  char measured[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(measured, sizeof measured, fmt, ap);
  va_end(ap);
  const char *verdict = met > 0 ? "met" : met == 0 ? "NOT MET" : "n/a";
  printf("  [%-7s] %s\n            %s\n", verdict, text, measured);
  json_t *g = json_object();
  json_object_set_new(g, "goal", json_string(text));
  json_object_set_new(g, "measured", json_string(measured));
  json_object_set_new(g, "met", met < 0 ? json_null() : json_boolean(met));
  json_array_append_new(goals, g);
}

/* The worst (smallest when `smallest`, else largest) ratio other/pooled of medians over
 * all groups that ran both; NULL *where when none did. */
static double worst_ratio(const results *rs, bench_mode other, bool smallest, char *where,
                          size_t size) {
  double worst = -1;
  where[0] = '\0';
  for (size_t i = 0; i < rs->count; i++) {
    const result *pooled = &rs->v[i];
    if (pooled->mode != MODE_POOLED) continue;
    double ratio = median_ratio(find_run(rs, pooled, other), pooled);
    if (ratio < 0) continue;
    if (worst < 0 || (smallest ? ratio < worst : ratio > worst)) {
      char params[64];
      format_params(params, sizeof params, pooled);
      worst = ratio;
      snprintf(where, size, "%s, %s", pooled->workload, params);
    }
  }
  return worst;
}

/* The fragmentation goal, judged on each pooled run: peak reserved minus peak in use
 * at most a quarter of peak in use, or one 2 MiB chunk per stream in use where that
 * is more (a tiny workload is not judged on the chunk granularity). multi_stream
 * without stream waits is not judged: its pending frees grow the pool by design, and
 * byte_limit is the documented answer. */
typedef struct frag_figures {
  bool judged;
  int streams;
  uint64_t excess, allowed; /* bytes */
} frag_figures;

static const uint64_t FRAG_CHUNK_BYTES = 2 * MIB;

static frag_figures frag_figures_of(const result *r) {
  frag_figures f = {0};
  if (r->mode != MODE_POOLED || !r->has_stats || !r->stats.peak_bytes_in_use) return f;
  if (strcmp(r->workload, "multi_stream") == 0 && !r->stream_waits) return f;
  f.judged = true;
  f.streams = r->threads ? r->threads : strcmp(r->workload, "multi_stream") == 0 ? 2 : 1;
  uint64_t reserved = r->stats.peak_bytes_reserved, in_use = r->stats.peak_bytes_in_use;
  f.excess = reserved > in_use ? reserved - in_use : 0;
  f.allowed = in_use / 4;
  if (f.allowed < FRAG_CHUNK_BYTES * (uint64_t)f.streams)
    f.allowed = FRAG_CHUNK_BYTES * (uint64_t)f.streams;
  return f;
}

/* One goal line per workload that ran: how many of its pooled runs are within, and
 * the figures of the worst one (the largest excess over what is allowed). */
static void fragmentation_goal(json_t *goals, const results *rs, const char *workload) {
  char text[160], params[64] = "";
  snprintf(text, sizeof text,
           "peak reserved - peak in use <= max(25%% of peak in use, 2 MiB per stream) on %s",
           workload);
  int runs = 0, within = 0;
  const result *worst = NULL;
  double worst_share = -1;
  bool unjudged = false;
  for (size_t i = 0; i < rs->count; i++) {
    const result *r = &rs->v[i];
    if (r->mode != MODE_POOLED || strcmp(r->workload, workload) != 0) continue;
    frag_figures f = frag_figures_of(r);
    if (!f.judged) {
      unjudged = true;
      continue;
    }
    runs++;
    within += f.excess <= f.allowed;
    double share = (double)f.excess / (double)f.allowed;
    if (share > worst_share) {
      worst_share = share;
      worst = r;
    }
  }
  if (!worst) {
    /* A workload that did not run (--workload) gets no line. */
    if (unjudged) goal(goals, text, -1, "not judged (multi_stream without waits: byte_limit)");
    return;
  }
  frag_figures f = frag_figures_of(worst);
  format_params(params, sizeof params, worst);
  goal(goals, text, within == runs,
       "%d of %d runs within%s; worst %s: reserved %.1f MiB for %.1f MiB in use (%.3fx), "
       "excess %.1f MiB, allowed %.1f MiB",
       within, runs, unjudged ? " (no waits not judged)" : "", params,
       (double)worst->stats.peak_bytes_reserved / (double)MIB,
       (double)worst->stats.peak_bytes_in_use / (double)MIB, peak_ratio(worst),
       (double)f.excess / (double)MIB, (double)f.allowed / (double)MIB);
}

static json_t *print_goals(const bench_env *env) {
  const results *rs = &env->results;
  json_t *goals = json_array();
  bool cuda = env->backend == PLM_BACKEND_CUDA;
  char where[128];
  printf("\ngoals (reported, never enforced)\n");

  const result *small = NULL;
  for (size_t i = 0; i < rs->count; i++)
    if (rs->v[i].mode == MODE_POOLED && rs->v[i].threads == 1) small = &rs->v[i];
  if (small)
    goal(goals, "<= 100 ns median per alloc+free pair on the cached small path",
         small->median_ns <= 100, "%" PRIu64 " ns (threads, 1 thread, sizes 1 B..64 KiB, pooled)",
         small->median_ns);
  else
    goal(goals, "<= 100 ns median per alloc+free pair on the cached small path", -1,
         "not measured (threads workload not run)");

  if (!cuda) {
    /* pooled / jemalloc: the largest over all groups. */
    double worst = -1;
    where[0] = '\0';
    for (size_t i = 0; i < rs->count; i++) {
      const result *pooled = &rs->v[i];
      if (pooled->mode != MODE_POOLED) continue;
      const result *je = find_run(rs, pooled, MODE_JEMALLOC);
      if (!je) continue;
      double ratio = (double)pooled->median_ns / (double)(je->median_ns ? je->median_ns : 1);
      if (ratio > worst) {
        char params[64];
        format_params(params, sizeof params, pooled);
        worst = ratio;
        snprintf(where, sizeof where, "%s, %s", pooled->workload, params);
      }
    }
    if (worst >= 0)
      goal(goals, "pooled median within 1.5x of jemalloc's (host)", worst <= 1.5,
           "worst pooled/jemalloc %.2fx (%s)", worst, where);
    else
      goal(goals, "pooled median within 1.5x of jemalloc's (host)", -1, "not measured");
  } else {
    goal(goals, "pooled median within 1.5x of jemalloc's (host)", -1, "not run on cuda");
  }

  double pass = worst_ratio(rs, MODE_PASSTHROUGH, true, where, sizeof where);
  if (cuda && pass >= 0)
    goal(goals, "on a GPU, pooled >= 100x faster than passthrough", pass >= 100,
         "smallest passthrough/pooled %.1fx (%s)", pass, where);
  else if (pass >= 0)
    goal(goals, "on a GPU, pooled >= 100x faster than passthrough", -1,
         "host backend: smallest passthrough/pooled here %.2fx (%s)", pass, where);
  else
    goal(goals, "on a GPU, pooled >= 100x faster than passthrough", -1, "not measured");

  double async = cuda ? worst_ratio(rs, MODE_CUDA_ASYNC, true, where, sizeof where) : -1;
  if (async >= 0)
    goal(goals, "on a GPU, pooled faster than cuda_async", async > 1,
         "smallest cuda_async/pooled %.2fx (%s)", async, where);
  else
    goal(goals, "on a GPU, pooled faster than cuda_async", -1,
         cuda ? "not measured" : "host backend: cuda_async needs a GPU");

  const result *steady = NULL;
  for (size_t i = 0; i < rs->count; i++)
    if (rs->v[i].mode == MODE_POOLED && rs->v[i].has_after_warmup) steady = &rs->v[i];
  if (steady)
    goal(goals, "zero upstream allocations after warm-up in steady_state",
         steady->upstream_after_warmup == 0,
         "%" PRIu64 " upstream allocations after frame %d of %zu (pooled)",
         steady->upstream_after_warmup, STEADY_WARMUP_FRAMES, steady->n);
  else
    goal(goals, "zero upstream allocations after warm-up in steady_state", -1, "not measured");

  for (size_t w = 0; w < sizeof workload_names / sizeof workload_names[0]; w++)
    fragmentation_goal(goals, rs, workload_names[w]);
  return goals;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static json_t *json_u64(uint64_t v) {
  return json_integer((json_int_t)v);
}

static json_t *result_json(const result *r) {
  json_t *o = json_object();
  json_object_set_new(o, "workload", json_string(r->workload));
  json_object_set_new(o, "mode", json_string(mode_names[r->mode]));
  json_object_set_new(o, "max_size", json_u64(r->max_size));
  json_object_set_new(o, "n", json_u64(r->n));
  if (r->threads) json_object_set_new(o, "threads", json_integer(r->threads));
  if (r->stream_waits >= 0) json_object_set_new(o, "stream_waits", json_boolean(r->stream_waits));
  json_object_set_new(o, "pairs", json_u64(r->pairs));
  json_object_set_new(o, "ns_per_pair_median", json_u64(r->median_ns));
  json_object_set_new(o, "ns_per_pair_p99", json_u64(r->p99_ns));
  json_object_set_new(o, "ns_per_pair_mean", json_real(r->mean_ns));
  json_object_set_new(o, "wall_s", json_real(r->wall_s));
  const plm_pool_stats *s = &r->stats;
  bool st = r->has_stats;
  json_object_set_new(o, "hit_rate", st && s->requests ? json_real(hit_rate(r)) : json_null());
  json_object_set_new(o, "upstream_allocs", st ? json_u64(s->upstream_allocs) : json_null());
  json_object_set_new(o, "peak_reserved_over_in_use",
                      st && s->peak_bytes_in_use ? json_real(peak_ratio(r)) : json_null());
  frag_figures frag = frag_figures_of(r);
  json_t *frag_goal = json_null();
  if (frag.judged) {
    frag_goal = json_object();
    json_object_set_new(frag_goal, "peak_bytes_reserved", json_u64(s->peak_bytes_reserved));
    json_object_set_new(frag_goal, "peak_bytes_in_use", json_u64(s->peak_bytes_in_use));
    json_object_set_new(frag_goal, "streams", json_integer(frag.streams));
    json_object_set_new(frag_goal, "excess_bytes", json_u64(frag.excess));
    json_object_set_new(frag_goal, "allowed_bytes", json_u64(frag.allowed));
    json_object_set_new(frag_goal, "met", json_boolean(frag.excess <= frag.allowed));
  }
  json_object_set_new(o, "fragmentation_goal", frag_goal);
  if (strcmp(r->workload, "steady_state") == 0)
    json_object_set_new(o, "upstream_allocs_after_warmup",
                        r->has_after_warmup ? json_u64(r->upstream_after_warmup) : json_null());
  if (strcmp(r->workload, "multi_stream") == 0) {
    json_object_set_new(o, "inserted_waits", st ? json_u64(s->inserted_waits) : json_null());
    json_object_set_new(o, "cross_stream_reuses",
                        st ? json_u64(s->cross_stream_reuses) : json_null());
  }
  if (r->threads) {
    json_object_set_new(o, "throughput_pairs_per_s", json_real(r->throughput));
    json_t *medians = json_array();
    for (int t = 0; t < r->threads; t++)
      json_array_append_new(medians, json_u64(r->per_thread_median_ns[t]));
    json_object_set_new(o, "per_thread_median_ns", medians);
  }
  if (st) {
    json_t *stats = json_object();
    json_object_set_new(stats, "requests", json_u64(s->requests));
    json_object_set_new(stats, "hits", json_u64(s->hits));
    json_object_set_new(stats, "failures", json_u64(s->failures));
    json_object_set_new(stats, "upstream_allocs", json_u64(s->upstream_allocs));
    json_object_set_new(stats, "upstream_frees", json_u64(s->upstream_frees));
    json_object_set_new(stats, "bytes_in_use", json_u64(s->bytes_in_use));
    json_object_set_new(stats, "live_blocks", json_u64(s->live_blocks));
    json_object_set_new(stats, "bytes_reserved", json_u64(s->bytes_reserved));
    json_object_set_new(stats, "peak_bytes_in_use", json_u64(s->peak_bytes_in_use));
    json_object_set_new(stats, "peak_bytes_reserved", json_u64(s->peak_bytes_reserved));
    json_object_set_new(stats, "largest_free_block", json_u64(s->largest_free_block));
    json_object_set_new(stats, "fragmentation", json_real(s->fragmentation));
    json_object_set_new(stats, "cross_stream_reuses", json_u64(s->cross_stream_reuses));
    json_object_set_new(stats, "inserted_waits", json_u64(s->inserted_waits));
    json_object_set_new(stats, "host_synchronizations", json_u64(s->host_synchronizations));
    json_object_set_new(o, "stats", stats);
  }
  return o;
}

static json_t *document_json(const bench_env *env, json_t *ratios, json_t *goals) {
  json_t *doc = bench_json_document("pool", env->backend, &env->info, env->opt.size);
  json_object_set_new(doc, "cores", json_integer(env->info.multiprocessors));
  json_object_set_new(doc, "timer_overhead_ns", json_u64(timer_overhead_ns));
  json_object_set_new(doc, "live_bytes_cap", json_u64(env->live_cap));
  json_t *list = json_array();
  for (size_t i = 0; i < env->results.count; i++)
    json_array_append_new(list, result_json(&env->results.v[i]));
  json_object_set_new(doc, "results", list);
  json_object_set_new(doc, "ratios", ratios);
  json_object_set_new(doc, "goals", goals);
  json_object_set_new(doc, "warnings", json_incref(warnings));
  return doc;
}

/* A steady_state result also holds its upstream allocations after the warm-up. */
static bool check_steady_state(json_t *doc, char *problem, size_t size) {
  json_t *list = json_object_get(doc, "results");
  for (size_t i = 0; i < json_array_size(list); i++) {
    json_t *r = json_array_get(list, i);
    const char *workload = json_string_value(json_object_get(r, "workload"));
    if (workload && strcmp(workload, "steady_state") == 0 &&
        !json_object_get(r, "upstream_allocs_after_warmup"))
      return result_problem(problem, size, "result %zu lacks \"upstream_allocs_after_warmup\"", i);
  }
  return true;
}

/* Check that path holds a bench_pool result document; prints why not. */
static bool validate_json(const char *path) {
  static const char *const keys[] = {"benchmark", "backend", "device", "commit",
                                     "driver",    "results", NULL};
  static const char *const result_keys[] = {"workload",
                                            "mode",
                                            "max_size",
                                            "n",
                                            "ns_per_pair_median",
                                            "ns_per_pair_p99",
                                            "hit_rate",
                                            "upstream_allocs",
                                            "peak_reserved_over_in_use",
                                            "fragmentation_goal",
                                            NULL};
  static const result_schema schema = {.prog = "bench_pool",
                                       .benchmark = "pool",
                                       .keys = keys,
                                       .result_keys = result_keys,
                                       .check = check_steady_state};
  return result_check_file(path, &schema, stderr);
}

/* ---- main ----------------------------------------------------------------------------- */

static bool add_run(bench_env *env, result **out) {
  *out = results_add(&env->results);
  return *out != NULL || fail("out of host memory for results");
}

static bool wants(const bench_env *env, const char *workload) {
  return !env->opt.only_workload || strcmp(env->opt.only_workload, workload) == 0;
}

/* One row group of the table: a workload with its parameters, run once per mode. */
typedef struct pool_case {
  const char *workload;
  size_t max_size, n; /* n as in result */
  int threads;        /* threads */
  bool waits;         /* multi_stream: stream waits allowed */
} pool_case;

enum { MAX_CASES = 16 };

/* The cases of this run, in the table's order; returns how many. */
static size_t plan_cases(const bench_env *env, pool_case *cases) {
  run_size size = env->opt.size;
  size_t count = 0;
  if (wants(env, "random_allocations")) {
    static const size_t max_sizes[] = {4 * KIB, MIB, 64 * MIB};
    static const size_t counts[] = {1000, 10000, 100000};
    for (int s = 0; s < 3; s++) {
      for (int c = 0; c < 3; c++) {
        size_t n = counts[c];
        if (size == RUN_SMOKE && c > 0) continue;
        /* --smoke: few blocks (64 MiB ones are slow under AddressSanitizer). */
        if (size == RUN_SMOKE) n = s == 2 ? 50 : 200;
        /* --quick: no 100000 with 64 MiB blocks (passthrough maps and unmaps each). */
        if (size == RUN_QUICK && c == 2 && s == 2) continue;
        cases[count++] = (pool_case){"random_allocations", max_sizes[s], n, 0, false};
      }
    }
  }
  if (wants(env, "fragmentation")) {
    size_t n = size == RUN_FULL ? 1000000 : size == RUN_QUICK ? 100000 : 500;
    cases[count++] = (pool_case){"fragmentation", 16 * MIB, n, 0, false};
  }
  if (wants(env, "steady_state")) {
    size_t frames = size == RUN_FULL ? 10000 : size == RUN_QUICK ? 2000 : 30;
    cases[count++] = (pool_case){"steady_state", 0, frames, 0, false};
  }
  if (wants(env, "multi_stream")) {
    size_t n = size == RUN_FULL ? 20000 : size == RUN_QUICK ? 5000 : 100;
    cases[count++] = (pool_case){"multi_stream", MIB, n, 0, true};
    cases[count++] = (pool_case){"multi_stream", MIB, n, 0, false};
  }
  if (wants(env, "threads")) {
    size_t n = size == RUN_FULL ? 200000 : size == RUN_QUICK ? 50000 : 500;
    static const int counts[] = {1, 2, 4};
    for (int t = 0; t < 3; t++) cases[count++] = (pool_case){"threads", 0, n, counts[t], false};
  }
  return count;
}

static bool run_case(bench_env *env, const pool_case *c, bench_mode mode, result *r) {
  if (strcmp(c->workload, "random_allocations") == 0)
    return random_allocations(env, mode, c->max_size, c->n, r);
  if (strcmp(c->workload, "fragmentation") == 0)
    return fragmentation(env, mode, c->max_size, c->n, r);
  if (strcmp(c->workload, "steady_state") == 0) return steady_state(env, mode, c->n, r);
  if (strcmp(c->workload, "multi_stream") == 0)
    return multi_stream(env, mode, c->waits, c->max_size, c->n, r);
  return threads_workload(env, mode, c->threads, c->n, r);
}

/* The modes every case runs in: pooled, passthrough and the backend's baseline. */
static void run_modes(const bench_env *env, bench_mode modes[3]) {
  modes[0] = MODE_POOLED;
  modes[1] = MODE_PASSTHROUGH;
  modes[2] = env->backend == PLM_BACKEND_CUDA ? MODE_CUDA_ASYNC : MODE_JEMALLOC;
}

/* Every case in every mode (multi_stream not for jemalloc, which has no stream order
 * to honour), a table row each, the progress bar counting the cases. */
static bool run_all(bench_env *env) {
  pool_case cases[MAX_CASES];
  size_t count = plan_cases(env, cases);
  bench_mode modes[3];
  run_modes(env, modes);
  bool ok = true;
  progress_begin(&bar, "bench_pool", "cases", (int64_t)count);
  for (size_t i = 0; ok && i < count; i++) {
    for (int m = 0; ok && m < 3; m++) {
      if (modes[m] == MODE_JEMALLOC && strcmp(cases[i].workload, "multi_stream") == 0) continue;
      result *r;
      ok = add_run(env, &r) && run_case(env, &cases[i], modes[m], r);
      if (!ok) break;
      progress_clear(&bar);
      print_row(r);
    }
    progress_update(&bar, (int64_t)i + 1);
  }
  progress_end(&bar);
  return ok;
}

/* ---- traces --------------------------------------------------------------------------- */

/* --write-trace DIR: the random_allocations, fragmentation and steady_state cases of
 * the run, each
 * into its own file through MODE_TRACE (the header of this file has the format). */
static bool write_traces(bench_env *env) {
  pool_case cases[MAX_CASES];
  size_t count = plan_cases(env, cases);
  size_t written = 0;
  for (size_t i = 0; i < count; i++) {
    const pool_case *c = &cases[i];
    bool steady = strcmp(c->workload, "steady_state") == 0;
    bool fragments = strcmp(c->workload, "fragmentation") == 0;
    if (!steady && !fragments && strcmp(c->workload, "random_allocations") != 0) continue;
    char path[4096], params[96];
    if (steady)
      snprintf(params, sizeof params, "frames%zu", c->n);
    else
      snprintf(params, sizeof params, "max%zu-n%zu", c->max_size, c->n);
    if (snprintf(path, sizeof path, "%s/%s-%s.trace", env->opt.trace_dir, c->workload, params) >=
        (int)sizeof path)
      return fail("--write-trace: the path %s/... is too long", env->opt.trace_dir);
    /* Through the one writer (streams/file.h): a temporary renamed into place whole. */
    plm__file_out out;
    char why[256];
    if (plm__file_out_open(&out, path, why, sizeof why) != PLM_OK)
      return fail("--write-trace: %s: %s", path, why);
    trace_file = out.file;
    fprintf(trace_file, "# plume-pool-trace 1\n");
    if (steady)
      fprintf(trace_file, "# workload steady_state frames %zu\n", c->n);
    else if (fragments)
      fprintf(trace_file, "# workload fragmentation max_size %zu n %zu live_target %zu seed %d\n",
              c->max_size, c->n, fragmentation_target(env), BENCH_SEED);
    else
      fprintf(trace_file, "# workload random_allocations max_size %zu n %zu live_cap %zu seed %d\n",
              c->max_size, c->n, env->live_cap, BENCH_SEED);
    result scratch;
    memset(&scratch, 0, sizeof scratch);
    bool ok = run_case(env, c, MODE_TRACE, &scratch);
    trace_file = NULL;
    if (!ok) {
      plm__file_out_abort(&out); /* the temporary removed, the old trace kept */
      return false;
    }
    if (plm__file_out_commit(&out, why, sizeof why) != PLM_OK)
      return fail("--write-trace: %s: %s", path, why);
    printf("%s\n", path);
    written++;
  }
  if (written == 0)
    return fail(
        "--write-trace: no random_allocations, fragmentation or steady_state case to "
        "write");
  return true;
}

/* ---- profile -------------------------------------------------------------------------- */

/* The profiled pass, after the table: per mode, a fresh allocator and `frames`
 * steady_state frames on stream 1, each frame's allocations and frees recorded as one
 * launch named "<mode> alloc+free" (frame = the frame's index, no cost model). */
static bool profile_frames(bench_env *env, size_t frames) {
  bench_mode modes[3];
  run_modes(env, modes);
  for (int m = 0; m < 3; m++) {
    char name[PLM_PROFILE_NAME_SIZE], where[64];
    snprintf(name, sizeof name, "%s alloc+free", mode_names[modes[m]]);
    snprintf(where, sizeof where, "profile (%s)", mode_names[modes[m]]);
    allocator a;
    if (!allocator_open(env->ctx, modes[m], 0, &a)) return false;
    void *ptr[FRAME_BUFFERS] = {0};
    plm_status status = PLM_OK;
    for (size_t frame = 0; status == PLM_OK && frame < frames; frame++) {
      plm_profile_mark mark;
      status = plm_profiler_begin(env->profiler, env->stream1, name, (int64_t)frame, NULL, &mark);
      for (int step = 0; status == PLM_OK && step < FRAME_STEPS; step++)
        status = frame_step(&a, env->stream1, step, ptr);
      if (status == PLM_OK) status = plm_profiler_end(env->profiler, env->stream1, &mark);
    }
    if (status != PLM_OK) fail_call(where, "a profiled steady_state frame", status);
    /* After an error, give back what is still live so the pool can be destroyed. */
    for (int k = 0; k < FRAME_BUFFERS; k++)
      if (ptr[k]) allocator_free(&a, ptr[k], env->stream1);
    plm_stream_synchronize(env->stream1);
    if (!allocator_close(&a, where) || status != PLM_OK) return false;
  }
  return true;
}

/* The A/B bars: the medians per pair of the table's steady_state rows, or of the first
 * group that ran when steady_state did not; *pooled is that group's pooled row. */
static size_t ab_bars(const bench_env *env, plm_profile_ab bars[3], const result **pooled) {
  *pooled = NULL;
  for (size_t i = 0; i < env->results.count; i++) {
    const result *r = &env->results.v[i];
    if (r->mode != MODE_POOLED) continue;
    if (!*pooled || strcmp(r->workload, "steady_state") == 0) *pooled = r;
    if (strcmp(r->workload, "steady_state") == 0) break;
  }
  if (!*pooled) return 0;
  bench_mode modes[3];
  run_modes(env, modes);
  size_t n = 0;
  for (int m = 0; m < 3; m++) {
    const result *r = find_run(&env->results, *pooled, modes[m]);
    if (r) bars[n++] = (plm_profile_ab){mode_names[modes[m]], (double)r->median_ns};
  }
  return n;
}

/* A profiler (created only now, so that it is not alive during the timed runs), the
 * profiled pass, then the three files in --profile's directory. */
static bool write_profile(bench_env *env) {
  plm_status status = plm_profiler_create(env->ctx, NULL, &env->profiler);
  if (status != PLM_OK) return fail_call("profile", "plm_profiler_create", status);
  size_t frames = env->opt.size == RUN_SMOKE ? 20 : 200;
  if (!profile_frames(env, frames)) return false;
  for (size_t i = 0; i < env->snapshot_count; i++) {
    const kept_snapshot *k = &env->snapshots[i];
    status = plm_profiler_add_pool_snapshot(env->profiler, k->name, k->snapshot);
    if (status != PLM_OK) return fail_call("profile", "plm_profiler_add_pool_snapshot", status);
  }
  plm_profile_ab bars[3];
  const result *pooled;
  size_t n = ab_bars(env, bars, &pooled);
  char title[64], unit[160] = "", params[64];
  snprintf(title, sizeof title, "bench_pool (%s)", plm_backend_name(env->backend));
  if (pooled) {
    format_params(params, sizeof params, pooled);
    snprintf(unit, sizeof unit, "ns per alloc+free pair (median; %s, %s)", pooled->workload,
             params);
  }
  const plm_profile_write_options write = {.title = title,
                                           .ab = n ? bars : NULL,
                                           .ab_count = n,
                                           .ab_unit = unit,
                                           .ab_higher_is_better = false};
  status = plm_profiler_write(env->profiler, env->opt.profile_dir, &write);
  if (status != PLM_OK) return fail_call("profile", "plm_profiler_write", status);
  printf("\nprofile: %s/report.html\n", env->opt.profile_dir);
  return true;
}

static bool open_env(bench_env *env) {
  plm_context_config config = {.backend = env->opt.backend};
  plm_status status = plm_context_create(&config, &env->ctx);
  if (status != PLM_OK) return fail_call("setup", "plm_context_create", status);
  if ((status = plm_context_backend(env->ctx, &env->backend)) != PLM_OK)
    return fail_call("setup", "plm_context_backend", status);
  if ((status = plm_context_device_info(env->ctx, &env->info)) != PLM_OK)
    return fail_call("setup", "plm_context_device_info", status);
  plm_stream **streams[2 + MAX_THREADS] = {&env->stream1, &env->stream2};
  for (int t = 0; t < MAX_THREADS; t++) streams[2 + t] = &env->thread_streams[t];
  for (int i = 0; i < 2 + MAX_THREADS; i++)
    if ((status = plm_stream_create(env->ctx, PLM_STREAM_DEFAULT, streams[i])) != PLM_OK)
      return fail_call("setup", "plm_stream_create", status);
  device_total_memory = env->info.total_memory;
  env->live_cap = 4 * GIB;
  if (env->info.free_memory && env->info.free_memory / 2 < env->live_cap)
    env->live_cap = (size_t)(env->info.free_memory / 2);
  return true;
}

static void close_env(bench_env *env) {
  plm_profiler_destroy(env->profiler); /* before its streams and context */
  for (size_t i = 0; i < env->snapshot_count; i++)
    plm_pool_snapshot_free(env->snapshots[i].snapshot);
  plm_stream_destroy(env->stream1);
  plm_stream_destroy(env->stream2);
  for (int t = 0; t < MAX_THREADS; t++) plm_stream_destroy(env->thread_streams[t]);
  plm_status status = plm_context_destroy(env->ctx);
  if (status != PLM_OK)
    warn("plm_context_destroy -> %s: %s", plm_status_str(status), plm_last_error());
  free(env->results.v);
}

/* --workload NAME: one of workload_names. */
static int parse_workload(const char *name, void *only_workload) {
  bool known = false;
  for (size_t w = 0; w < sizeof workload_names / sizeof workload_names[0]; w++)
    known |= strcmp(name, workload_names[w]) == 0;
  if (!known) {
    fprintf(stderr,
            "bench_pool: --workload '%s': expected random_allocations, fragmentation, "
            "steady_state, multi_stream or threads\n",
            name);
    return BENCH_EXIT_USAGE;
  }
  *(const char **)only_workload = name;
  return BENCH_RUN;
}

/* --write-trace times nothing, so it takes no --json or --profile; its DIR is made. */
static int check_trace_options(void *opt_) {
  const options *opt = opt_;
  if (opt->trace_dir && (opt->json_path || opt->profile_dir)) {
    fprintf(stderr, "bench_pool: --write-trace times nothing: it takes no --json or --profile\n");
    return BENCH_EXIT_USAGE;
  }
  if (opt->trace_dir && !bench_profile_dir_ready("bench_pool", opt->trace_dir))
    return BENCH_EXIT_FAILURE;
  return BENCH_RUN;
}

int main(int argc, char **argv) {
  bench_env env = {0};
  const bench_option table[] = {
      BENCH_OPT_RUN_SIZE("--quick", RUN_QUICK, &env.opt.size,
                         "fewer operations (about 30 s on host)"),
      BENCH_OPT_RUN_SIZE("--smoke", RUN_SMOKE, &env.opt.size,
                         "tiny runs that only prove every path works (seconds)"),
      BENCH_OPT_BACKEND(&env.opt.backend),
      BENCH_OPT_JSON(&env.opt.json_path),
      BENCH_OPT_CALLBACK("--workload", "NAME", parse_workload, &env.opt.only_workload,
                         "run one workload: random_allocations, steady_state,\n"
                         "multi_stream or threads"),
      BENCH_OPT_PROFILE(&env.opt.profile_dir,
                        "after the table, a short pass of steady_state frames per mode,\n"
                        "each frame's allocations and frees recorded as one launch,\n"
                        "and write DIR/profile.json, DIR/trace.json,\n"
                        "DIR/report.html (A/B bars: the table's steady_state medians;\n"
                        "maps of the pooled runs' pools) and DIR/pool_snapshot.json"),
      BENCH_OPT_STRING("--write-trace", "DIR", &env.opt.trace_dir,
                       "time nothing: write the allocation sequences of the\n"
                       "random_allocations, fragmentation and steady_state\n"
                       "cases to\n"
                       "DIR/<workload>-<parameters>.trace, for other\n"
                       "allocators to replay (format: the header of bench_pool.c)"),
      BENCH_OPT_FLAG("--keep-pages", &env.opt.keep_pages,
                     "pooled pools keep the memory under free pages\n"
                     "(PLM_POOL_KEEP_PAGES): what giving it back buys"),
      BENCH_OPT_FLAG("--no-slabs", &env.opt.no_slabs,
                     "pooled pools serve small requests as blocks of\n"
                     "their own, never from slabs (PLM_POOL_NO_SLABS):\n"
                     "what the slabs buy"),
      BENCH_OPT_COUNT("--page-bytes", 2 << 20, &env.opt.page_bytes,
                      "pooled pools give memory back in units of N bytes\n"
                      "(plm_pool_config.page_bytes, a power of two up to\n"
                      "2 MiB; default 16 KiB on host)"),
      BENCH_OPT_FLAG("--lookup", &env.opt.lookup,
                     "time the pool's pointer -> descriptor lookup alone\n"
                     "(100,000 live blocks; the old table, pool_live.h\n"
                     "and the slab map)"),
      BENCH_OPT_VALIDATE_JSON,
      BENCH_OPT_HELP,
      BENCH_OPT_END};
  const bench_cli cli = {.prog = "bench_pool",
                         .usage = usage,
                         .options = table,
                         .validate_json = validate_json,
                         .check = check_trace_options,
                         .user = &env.opt};
  int start = bench_start(&cli, argc, argv);
  if (start != BENCH_RUN) return start;
  if (env.opt.lookup) return bench_pool_lookup(env.opt.size != RUN_FULL) ? 0 : BENCH_EXIT_FAILURE;
  if (env.opt.keep_pages) pooled_extra_flags |= PLM_POOL_KEEP_PAGES;
  if (env.opt.no_slabs) pooled_extra_flags |= PLM_POOL_NO_SLABS;
  pooled_page_bytes = (size_t)env.opt.page_bytes;
  warnings = json_array();
  measure_timer_overhead();
  if (!open_env(&env)) {
    fprintf(stderr, "bench_pool: %s\n", bench_error);
    close_env(&env);
    json_decref(warnings);
    return BENCH_EXIT_FAILURE;
  }
  if (env.opt.trace_dir) {
    int code = 0;
    if (!write_traces(&env)) {
      fprintf(stderr, "bench_pool: %s\n", bench_error);
      code = BENCH_EXIT_FAILURE;
    }
    close_env(&env);
    json_decref(warnings);
    return code;
  }
  bench_print_header("bench_pool", env.backend, &env.info, env.opt.size);
  printf("per-op clock overhead %" PRIu64
         " ns (subtracted); a pair = one block's alloc + its free\n\n",
         timer_overhead_ns);
  print_table_header();

  int exit_code = 0;
  if (!run_all(&env)) {
    fprintf(stderr, "bench_pool: %s\n", bench_error);
    exit_code = BENCH_EXIT_FAILURE;
  }
  json_t *ratios = print_ratios(&env);
  json_t *goals = print_goals(&env);
  json_t *doc = document_json(&env, ratios, goals);
  if (env.opt.json_path) {
    if (!bench_json_write("bench_pool", doc, env.opt.json_path, validate_json))
      exit_code = BENCH_EXIT_FAILURE;
  }
  if (exit_code == 0 && env.opt.profile_dir && !write_profile(&env)) {
    fprintf(stderr, "bench_pool: %s\n", bench_error);
    exit_code = BENCH_EXIT_FAILURE;
  }
  json_decref(doc);
  close_env(&env);
  json_decref(warnings);
  return exit_code;
}

/* benchmarks/bench_pool_shared.h: what the files of bench_pool share (internal to bench_pool).
 *
 * bench_pool.c holds the header comment that describes the benchmark, its command line,
 * the table, the ratios and goals, the JSON, the traces and the profile; each workload
 * lives in its own file, bench_pool_<workload>.c, as one descriptor (pool_workload below)
 * that bench_pool.c lists in its table of workloads; bench_pool_run.c holds what every
 * workload uses: errors and warnings, the clock and the pair samples, the allocators under
 * test, the results and their statistics, the pool snapshots and the live set of the
 * random workloads.
 *
 * The allocator calls, the clock and the random numbers that a workload times are inline
 * here, so that each workload's timed loop is compiled as it was in one file. Not
 * thread-safe but where a workload says so (threads: each thread its own samples).
 */
#ifndef PLUME_BENCHMARKS_BENCH_POOL_SHARED_H
#define PLUME_BENCHMARKS_BENCH_POOL_SHARED_H

#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"
#include "plume/plume.h"
#include "plume/pool.h"
#include "pool/private_jemalloc.h"
#include "streams/clock.h"
#include "support/progress.h"
#include "kernels/common/splitmix64.h"

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

/* ---- warnings (bench_pool_run.c; errors are bench_common.h's bench_fail) ----------- */

/* Pool statistics that make no sense are reported (stderr and JSON), not fatal: the JSON's
 * "warnings" (made by main). */
extern json_t *bench_pool_warnings;

/* The progress bar (on a terminal), erased for a warning. */
extern progress_bar bench_pool_bar;

/* Print "bench_pool: warning: ..." (the progress bar erased) and add it to the warnings. */
void bench_pool_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- clock and statistics ------------------------------------------------------- */

/* The median cost of a pair of clock readings, subtracted from every reading. */
extern uint64_t bench_pool_timer_overhead_ns;

/* Measure bench_pool_timer_overhead_ns. */
void bench_pool_measure_timer_overhead(void);

/* qsort's order of uint64_t. */
int compare_u64(const void *a, const void *b);

/* Nearest-rank percentile of sorted values (q in (0, 1]; profile/stats.h); 0 for none. */
uint64_t percentile(const uint64_t *sorted, size_t count, double q);

/* The time between two readings, less the cost of reading the clock. */
static inline uint64_t elapsed(uint64_t t0, uint64_t t1) {
  uint64_t d = t1 - t0;
  return d > bench_pool_timer_overhead_ns ? d - bench_pool_timer_overhead_ns : 0;
}

/* A growable list of pair times. */
typedef struct samples {
  uint64_t *v;
  size_t count, capacity;
} samples;

/* Room for capacity samples; false (the failure said) when there is no memory. */
bool samples_reserve(samples *s, size_t capacity);

static inline void samples_push(samples *s, uint64_t ns) {
  if (s->count < s->capacity) s->v[s->count++] = ns;
}

void samples_release(samples *s);

/* ---- a deterministic PRNG (splitmix64, kernels/common/splitmix64.h) ------------- */

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

/* MODE_TRACE allocates nothing: it writes each call to bench_pool_trace_file
 * (--write-trace) and hands out the block's ID as its pointer. */
typedef enum bench_mode {
  MODE_POOLED,
  MODE_PASSTHROUGH,
  MODE_JEMALLOC,
  MODE_CUDA_ASYNC,
  MODE_TRACE
} bench_mode;

/* The modes' names, by bench_mode. */
extern const char *const mode_names[];

extern FILE *bench_pool_trace_file; /* MODE_TRACE's output */

/* Flags every pooled pool gets besides its workload's (--keep-pages, --no-slabs), and
 * its page_bytes (--page-bytes; 0: the default). */
extern unsigned bench_pool_pooled_flags;
extern size_t bench_pool_page_bytes;

typedef struct allocator {
  bench_mode mode;
  plm_pool *pool; /* every mode but jemalloc and trace */
  unsigned arena; /* jemalloc */
  int jemalloc_flags;
  uint64_t last_id; /* trace */
} allocator;

/* A fresh allocator of mode (a pool created with pool_flags, a jemalloc arena, or the
 * trace); false, the failure said, when it cannot be made. */
bool allocator_open(plm_context *ctx, bench_mode mode, unsigned pool_flags, allocator *a);

static inline plm_status allocator_alloc(allocator *a, size_t bytes, plm_stream *stream,
                                         void **ptr) {
  if (a->mode == MODE_TRACE) {
    uint64_t id = ++a->last_id;
    *ptr = (void *)(uintptr_t)id;
    return fprintf(bench_pool_trace_file, "a %" PRIu64 " %zu\n", id, bytes) > 0 ? PLM_OK
                                                                                : PLM_ERR_INTERNAL;
  }
  if (a->mode == MODE_JEMALLOC) {
    *ptr = je_mallocx(bytes, a->jemalloc_flags);
    return *ptr ? PLM_OK : PLM_ERR_OUT_OF_MEMORY;
  }
  return plm_pool_alloc(a->pool, bytes, stream, ptr);
}

static inline plm_status allocator_free(allocator *a, void *ptr, plm_stream *stream) {
  if (a->mode == MODE_TRACE)
    return fprintf(bench_pool_trace_file, "f %" PRIu64 "\n", (uint64_t)(uintptr_t)ptr) > 0
               ? PLM_OK
               : PLM_ERR_INTERNAL;
  if (a->mode == MODE_JEMALLOC) {
    je_dallocx(ptr, a->jemalloc_flags);
    return PLM_OK;
  }
  return plm_pool_free(a->pool, ptr, stream);
}

/* The pool's statistics; false (and nothing written) for jemalloc and trace. */
bool allocator_stats(allocator *a, plm_pool_stats *out);

/* Destroy the allocator; false, the failure said (naming where), when the pool refuses. */
bool allocator_close(allocator *a, const char *where);

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

/* A new zeroed result at the end of rs (stream_waits -1); NULL when out of memory. */
result *results_add(results *rs);

/* Sort the pair times and fill the result's distribution figures. */
void summarize(result *r, samples *s);

/* The device's memory, for the sanity checks of finish_stats (0: unknown). */
extern uint64_t bench_pool_device_memory;

/* Take the final statistics and check that they are consistent with what the
 * workload did (allocs successful allocations, everything freed). */
void finish_stats(result *r, allocator *a, const char *where, uint64_t allocs);

/* The parameters of a result, as the table shows them; equal strings group A/B runs. */
void format_params(char *out, size_t size, const result *r);

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

/* Keep a snapshot of a's pool for run r, named after the run and `moment` ("after the
 * last allocation"), when it is the first pooled run of its workload, max_size and stream
 * waits (--profile). Returns the nanoseconds it took, which the caller leaves out of the
 * run's wall time. A failure is warned about; the run goes on. */
uint64_t keep_snapshot(bench_env *env, const allocator *a, const result *r, const char *moment);

/* The modes every case runs in: pooled, passthrough and the backend's baseline. */
void run_modes(const bench_env *env, bench_mode modes[3]);

/* ---- the live set of random_allocations and fragmentation ----------------------------- */

typedef struct live_block {
  void *ptr;
  size_t size;
  uint64_t alloc_ns;
} live_block;

/* The live blocks (room for all of them in blocks), and their bytes. */
typedef struct live_set {
  live_block *blocks;
  size_t count, bytes;
} live_set;

/* Allocate `size` bytes on stream, timed; the block joins the set. False, the failure
 * said, when the allocator refuses. */
bool live_alloc(live_set *live, allocator *a, size_t size, plm_stream *stream, const char *where);

/* Free a live block chosen at random (the set is not empty), timed; its alloc + free
 * pair goes into pairs. False, the failure said, when the allocator refuses. */
bool live_free_random(live_set *live, allocator *a, rng *g, samples *pairs, plm_stream *stream,
                      const char *where);

/* ---- workloads ---------------------------------------------------------------------- */

typedef struct pool_workload pool_workload;

/* One row group of the table: a workload with its parameters, run once per mode. */
typedef struct pool_case {
  const pool_workload *workload;
  size_t max_size, n; /* n as in result */
  int threads;        /* threads */
  bool waits;         /* multi_stream: stream waits allowed */
} pool_case;

/* A workload: its name, its cases for a run size, one run of a case, and (optional) what
 * --write-trace writes of it. */
struct pool_workload {
  const char *name;
  /* The cases of a run of this size, in the table's order, written to cases (room for
   * WORKLOAD_MAX_CASES); returns how many. */
  size_t (*plan)(const pool_workload *self, run_size size, pool_case *cases);
  /* One run of case c in mode, its figures in r. False, the failure said, on an error. */
  bool (*run)(bench_env *env, const pool_case *c, bench_mode mode, result *r);
  /* (optional) --write-trace: the case's parameters in its file's name ("max4096-n200"),
   * and the trace's "# workload ..." line; NULL for a workload that is not traced. */
  void (*trace_name)(const pool_case *c, char *out, size_t size);
  void (*trace_header)(const bench_env *env, const pool_case *c, FILE *out);
  bool stream_ordered; /* it orders streams: not run for jemalloc, which has none */
};

enum { WORKLOAD_MAX_CASES = 9 };

/* trace_name of the workloads whose cases are a max_size and an n: "max4096-n200". */
void trace_name_max_n(const pool_case *c, char *out, size_t size);

extern const pool_workload random_allocations_workload;
extern const pool_workload fragmentation_workload;
extern const pool_workload steady_state_workload;
/* steady_state's upstream_allocs_after_warmup counts the chunks taken after this frame. */
enum { STEADY_WARMUP_FRAMES = 10 };
extern const pool_workload multi_stream_workload;
extern const pool_workload threads_workload;

/* The profiled pass of --profile (bench_pool_steady_state.c): per mode, a fresh allocator
 * and `frames` steady_state frames on stream 1, each frame's allocations and frees
 * recorded as one launch named "<mode> alloc+free" (frame = the frame's index, no cost
 * model). */
bool steady_state_profile(bench_env *env, size_t frames);

#endif /* PLUME_BENCHMARKS_BENCH_POOL_SHARED_H */

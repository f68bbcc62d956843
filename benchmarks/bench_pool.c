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
 * random_allocations and fragmentation after their last allocation (before the frees that empty
 * them), steady_state in its last frame after the step with the most bytes live, multi_stream in
 * its last iteration before the last free (earlier blocks pending or reused on stream 2), threads
 * after every thread has freed everything. Taking it is left out of the run's wall time and of
 * every timed pair. report.html draws each as a segment map and DIR/pool_snapshot.json holds them
 * (docs/profile-schema.md).
 *
 * Traces (--write-trace DIR). Instead of timing anything, write the allocation
 * sequence of each random_allocations, fragmentation and steady_state case of the run
 * size (--quick, --smoke or full) into DIR/<workload>-<parameters>.trace, as the
 * workloads above make it (same seed, same cap on live bytes, which depends on the
 * device: write the traces on the machine they describe), so that other allocators
 * replay exactly what plume's pool is measured on (benchmarks/peers_gpu.py: PyTorch's caching
 * allocator and CuPy's memory pool). The format, one line each: # plume-pool-trace 1 # workload
 * NAME KEY VALUE ...      (max_size, n or frames, live_cap or live_target, seed) a ID BYTES
 * allocate BYTES as block ID (IDs from 1, never reused) f ID                               free
 * block ID Every block is freed by the end of its file.
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
 *
 * The files: this one (the command line, the table of workloads, the table, ratios,
 * goals, JSON, traces and profile), bench_pool_<workload>.c (a workload each, as one
 * descriptor), bench_pool_run.c (what the workloads share) and bench_pool_shared.h.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_pool_shared.h"
#include "pool_lookup.h"
#include "plume/plume.h"
#include "plume/pool.h"
#include "streams/file.h"
#include "support/progress.h"
#include "support/result_check.h"

/* ---- the workloads ------------------------------------------------------------- */

/* Every workload, in the table's order (each descriptor in its bench_pool_<name>.c). */
static const pool_workload *const workloads[] = {&random_allocations_workload,
                                                 &fragmentation_workload, &steady_state_workload,
                                                 &multi_stream_workload, &threads_workload};
enum { WORKLOADS = sizeof workloads / sizeof workloads[0] };

/* ---- options ------------------------------------------------------------------ */

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

/* ---- the table ------------------------------------------------------------------------ */

static double hit_rate(const result *r) {
  return r->stats.requests ? (double)r->stats.hits / (double)r->stats.requests : 0;
}

static double peak_ratio(const result *r) {
  return r->stats.peak_bytes_in_use
             ? (double)r->stats.peak_bytes_reserved / (double)r->stats.peak_bytes_in_use
             : 0;
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

  for (size_t w = 0; w < WORKLOADS; w++) fragmentation_goal(goals, rs, workloads[w]->name);
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
  json_object_set_new(doc, "timer_overhead_ns", json_u64(bench_pool_timer_overhead_ns));
  json_object_set_new(doc, "live_bytes_cap", json_u64(env->live_cap));
  json_t *list = json_array();
  for (size_t i = 0; i < env->results.count; i++)
    json_array_append_new(list, result_json(&env->results.v[i]));
  json_object_set_new(doc, "results", list);
  json_object_set_new(doc, "ratios", ratios);
  json_object_set_new(doc, "goals", goals);
  json_object_set_new(doc, "warnings", json_incref(bench_pool_warnings));
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
  return *out != NULL || bench_fail("out of host memory for results");
}

static bool wants(const bench_env *env, const char *workload) {
  return !env->opt.only_workload || strcmp(env->opt.only_workload, workload) == 0;
}

enum { MAX_CASES = WORKLOADS * WORKLOAD_MAX_CASES };

/* The cases of this run, in the table's order; returns how many. */
static size_t plan_cases(const bench_env *env, pool_case *cases) {
  size_t count = 0;
  for (size_t w = 0; w < WORKLOADS; w++)
    if (wants(env, workloads[w]->name))
      count += workloads[w]->plan(workloads[w], env->opt.size, cases + count);
  return count;
}

/* Every case in every mode (a stream-ordered workload not for jemalloc, which has no
 * stream order to honour), a table row each, the progress bar counting the cases. */
static bool run_all(bench_env *env) {
  pool_case cases[MAX_CASES];
  size_t count = plan_cases(env, cases);
  bench_mode modes[3];
  run_modes(env, modes);
  bool ok = true;
  progress_begin(&bench_pool_bar, "bench_pool", "cases", (int64_t)count);
  for (size_t i = 0; ok && i < count; i++) {
    for (int m = 0; ok && m < 3; m++) {
      const pool_case *c = &cases[i];
      if (modes[m] == MODE_JEMALLOC && c->workload->stream_ordered) continue;
      result *r;
      ok = add_run(env, &r) && c->workload->run(env, c, modes[m], r);
      if (!ok) break;
      progress_clear(&bench_pool_bar);
      print_row(r);
    }
    progress_update(&bench_pool_bar, (int64_t)i + 1);
  }
  progress_end(&bench_pool_bar);
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
    if (!c->workload->trace_header) continue;
    char path[4096], params[96];
    c->workload->trace_name(c, params, sizeof params);
    if (snprintf(path, sizeof path, "%s/%s-%s.trace", env->opt.trace_dir, c->workload->name,
                 params) >= (int)sizeof path)
      return bench_fail("--write-trace: the path %s/... is too long", env->opt.trace_dir);
    /* Through the one writer (streams/file.h): a temporary renamed into place whole. */
    plm__file_out out;
    char why[256];
    if (plm__file_out_open(&out, path, why, sizeof why) != PLM_OK)
      return bench_fail("--write-trace: %s: %s", path, why);
    bench_pool_trace_file = out.file;
    fprintf(bench_pool_trace_file, "# plume-pool-trace 1\n");
    c->workload->trace_header(env, c, bench_pool_trace_file);
    result scratch;
    memset(&scratch, 0, sizeof scratch);
    bool ok = c->workload->run(env, c, MODE_TRACE, &scratch);
    bench_pool_trace_file = NULL;
    if (!ok) {
      plm__file_out_abort(&out); /* the temporary removed, the old trace kept */
      return false;
    }
    if (plm__file_out_commit(&out, why, sizeof why) != PLM_OK)
      return bench_fail("--write-trace: %s: %s", path, why);
    printf("%s\n", path);
    written++;
  }
  if (written == 0)
    return bench_fail(
        "--write-trace: no random_allocations, fragmentation or steady_state case to "
        "write");
  return true;
}

/* ---- profile -------------------------------------------------------------------------- */

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
  if (status != PLM_OK) return bench_fail_call("profile", "plm_profiler_create", status);
  size_t frames = env->opt.size == RUN_SMOKE ? 20 : 200;
  if (!steady_state_profile(env, frames)) return false;
  for (size_t i = 0; i < env->snapshot_count; i++) {
    const kept_snapshot *k = &env->snapshots[i];
    status = plm_profiler_add_pool_snapshot(env->profiler, k->name, k->snapshot);
    if (status != PLM_OK)
      return bench_fail_call("profile", "plm_profiler_add_pool_snapshot", status);
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
  if (status != PLM_OK) return bench_fail_call("profile", "plm_profiler_write", status);
  printf("\nprofile: %s/report.html\n", env->opt.profile_dir);
  return true;
}

static bool open_env(bench_env *env) {
  plm_context_config config = {.backend = env->opt.backend};
  plm_status status = plm_context_create(&config, &env->ctx);
  if (status != PLM_OK) return bench_fail_call("setup", "plm_context_create", status);
  if ((status = plm_context_backend(env->ctx, &env->backend)) != PLM_OK)
    return bench_fail_call("setup", "plm_context_backend", status);
  if ((status = plm_context_device_info(env->ctx, &env->info)) != PLM_OK)
    return bench_fail_call("setup", "plm_context_device_info", status);
  plm_stream **streams[2 + MAX_THREADS] = {&env->stream1, &env->stream2};
  for (int t = 0; t < MAX_THREADS; t++) streams[2 + t] = &env->thread_streams[t];
  for (int i = 0; i < 2 + MAX_THREADS; i++)
    if ((status = plm_stream_create(env->ctx, PLM_STREAM_DEFAULT, streams[i])) != PLM_OK)
      return bench_fail_call("setup", "plm_stream_create", status);
  bench_pool_device_memory = env->info.total_memory;
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
    bench_pool_warn("plm_context_destroy -> %s: %s", plm_status_str(status), plm_last_error());
  free(env->results.v);
}

/* --workload NAME: the name of one of the workloads. */
static int parse_workload(const char *name, void *only_workload) {
  bool known = false;
  for (size_t w = 0; w < WORKLOADS; w++) known |= strcmp(name, workloads[w]->name) == 0;
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
  if (env.opt.keep_pages) bench_pool_pooled_flags |= PLM_POOL_KEEP_PAGES;
  if (env.opt.no_slabs) bench_pool_pooled_flags |= PLM_POOL_NO_SLABS;
  bench_pool_page_bytes = (size_t)env.opt.page_bytes;
  bench_pool_warnings = json_array();
  bench_pool_measure_timer_overhead();
  if (!open_env(&env)) {
    fprintf(stderr, "bench_pool: %s\n", bench_error());
    close_env(&env);
    json_decref(bench_pool_warnings);
    return BENCH_EXIT_FAILURE;
  }
  if (env.opt.trace_dir) {
    int code = 0;
    if (!write_traces(&env)) {
      fprintf(stderr, "bench_pool: %s\n", bench_error());
      code = BENCH_EXIT_FAILURE;
    }
    close_env(&env);
    json_decref(bench_pool_warnings);
    return code;
  }
  bench_print_header("bench_pool", env.backend, &env.info, env.opt.size);
  printf("per-op clock overhead %" PRIu64
         " ns (subtracted); a pair = one block's alloc + its free\n\n",
         bench_pool_timer_overhead_ns);
  print_table_header();

  int exit_code = 0;
  if (!run_all(&env)) {
    fprintf(stderr, "bench_pool: %s\n", bench_error());
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
    fprintf(stderr, "bench_pool: %s\n", bench_error());
    exit_code = BENCH_EXIT_FAILURE;
  }
  json_decref(doc);
  close_env(&env);
  json_decref(bench_pool_warnings);
  return exit_code;
}

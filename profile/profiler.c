/* profile/profiler.c: recording launches, their statistics, and writing them out
 * (plume/profile.h).
 *
 * Each launch owns two events, recorded on its stream by _begin and _end; until
 * collected they sit beside the launch's record. Collecting waits for each end event,
 * takes both events' times from the origin (the first launch's start event, kept for
 * the profiler's life), and gives the events back. Records live in one array that grows
 * by doubling up to max_launches; everything is under the profiler's lock. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "plume/event.h"
#include "profile/profile_export.h"
#include "profile/profile_internal.h"
#include "streams/clock.h"
#include "streams/error.h"
#include "streams/runtime.h"

enum { DEFAULT_MAX_LAUNCHES = 1 << 20, MAX_STREAMS = 256, OVERHEAD_PROBES = 64 };

typedef struct pending_events {
  plm_event *start, *end; /* NULL once collected */
  bool ended;             /* _end recorded the end event */
} pending_events;

struct plm_profiler {
  plm_context *ctx;
  pthread_mutex_t lock;
  atomic_int attached; /* pipelines holding it (plm__profiler_attach) */
  size_t max_launches, capacity, count, collected;
  size_t dropped;               /* beyond max_launches */
  size_t abandoned;             /* begun but never ended (their times are NaN) */
  plm_profile_launch *launches; /* [capacity] */
  pending_events *events;       /* [capacity] */
  plm_event *origin;            /* launch 0's start event */
  const plm_stream *streams[MAX_STREAMS];
  int stream_count;
  plm_profile_calibration calibration;
  double overhead_us;
  plm__profile_pool_snapshot *pool_snapshots; /* copies: names and snapshots owned */
  size_t pool_snapshot_count;
};

static void collect_ready_locked(plm_profiler *p);

plm_profiler_config plm_profiler_config_default(void) {
  return (plm_profiler_config){.max_launches = 0, .calibrate = true};
}

/* The stream's number, numbering it when new (streams beyond MAX_STREAMS share the
 * last number). Under the lock. */
static int stream_index(plm_profiler *p, const plm_stream *stream) {
  for (int i = 0; i < p->stream_count; i++)
    if (p->streams[i] == stream) return i;
  if (p->stream_count == MAX_STREAMS) return MAX_STREAMS - 1;
  p->streams[p->stream_count] = stream;
  return p->stream_count++;
}

/* Room for one more record. Under the lock. */
static plm_status grow(plm_profiler *p) {
  if (p->count < p->capacity) return PLM_OK;
  size_t capacity = p->capacity ? 2 * p->capacity : 1024;
  if (capacity > p->max_launches) capacity = p->max_launches;
  plm_profile_launch *launches = realloc(p->launches, capacity * sizeof *launches);
  if (!launches) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no memory for %zu records", capacity);
  p->launches = launches;
  pending_events *events = realloc(p->events, capacity * sizeof *events);
  if (!events) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no memory for %zu records", capacity);
  p->events = events;
  p->capacity = capacity;
  return PLM_OK;
}

plm_status plm_profiler_begin(plm_profiler *profiler, plm_stream *stream, const char *name,
                              int64_t frame, const plm_op_cost *cost, plm_profile_mark *mark) {
  PLM__REQUIRE_NOT_NULL(profiler);
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REQUIRE_NOT_NULL(name);
  PLM__REQUIRE_NOT_NULL(mark);
  mark->index = SIZE_MAX;
  if (stream->ctx != profiler->ctx)
    return plm__fail(PLM_ERR_INVALID_ARG, "stream belongs to another context than the profiler");
  plm_profiler *p = profiler;
  pthread_mutex_lock(&p->lock);
  if (p->count >= p->max_launches) {
    p->dropped++;
    pthread_mutex_unlock(&p->lock);
    mark->host_start_ns = plm__monotonic_ns();
    return PLM_OK;
  }
  collect_ready_locked(p); /* events of finished launches go back as it runs */
  plm_status status = grow(p);
  pending_events ev = {0};
  if (status == PLM_OK) status = plm_event_create(p->ctx, 0, &ev.start);
  if (status == PLM_OK) status = plm_event_create(p->ctx, 0, &ev.end);
  if (status == PLM_OK) status = plm_event_record(ev.start, stream);
  if (status != PLM_OK) {
    if (ev.end) plm_event_destroy(ev.end);
    if (ev.start) plm_event_destroy(ev.start);
    pthread_mutex_unlock(&p->lock);
    return plm__propagate(status);
  }
  const size_t index = p->count++;
  plm_profile_launch *launch = &p->launches[index];
  memset(launch, 0, sizeof *launch);
  snprintf(launch->name, sizeof launch->name, "%s", name);
  launch->stream = stream_index(p, stream);
  launch->frame = frame;
  launch->start_ms = launch->end_ms = NAN;
  if (cost) {
    launch->bytes = cost->bytes;
    launch->flops = cost->flops;
  }
  if (!p->origin) p->origin = ev.start;
  p->events[index] = ev;
  pthread_mutex_unlock(&p->lock);
  mark->index = index;
  mark->host_start_ns = plm__monotonic_ns();
  return PLM_OK;
}

plm_status plm_profiler_end(plm_profiler *profiler, plm_stream *stream, plm_profile_mark *mark) {
  const double host_end_ns = plm__monotonic_ns();
  PLM__REQUIRE_NOT_NULL(profiler);
  PLM__REQUIRE_NOT_NULL(stream);
  PLM__REQUIRE_NOT_NULL(mark);
  if (mark->index == SIZE_MAX) return PLM_OK; /* dropped */
  plm_profiler *p = profiler;
  pthread_mutex_lock(&p->lock);
  plm_status status = PLM_OK;
  if (mark->index >= p->count || !p->events[mark->index].end)
    status = plm__fail(PLM_ERR_INVALID_ARG, "mark %zu is not a launch being recorded", mark->index);
  else if (p->streams[p->launches[mark->index].stream] != stream &&
           p->launches[mark->index].stream != MAX_STREAMS - 1)
    status = plm__fail(PLM_ERR_INVALID_ARG, "stream is not the one the launch began on");
  if (status == PLM_OK) {
    p->launches[mark->index].enqueue_us = (host_end_ns - mark->host_start_ns) / 1e3;
    status = plm_event_record(p->events[mark->index].end, stream);
    if (status == PLM_OK)
      p->events[mark->index].ended = true;
    else /* the launch is abandoned at collection: its times stay NaN */
      status = plm__propagate(status);
  }
  pthread_mutex_unlock(&p->lock);
  mark->index = SIZE_MAX;
  return status;
}

/* Give launch i's events back (the origin stays: every time is measured from it). */
static void release_events(plm_profiler *p, size_t i) {
  pending_events *ev = &p->events[i];
  if (ev->start && ev->start != p->origin) plm_event_destroy(ev->start);
  if (ev->end) plm_event_destroy(ev->end);
  ev->start = ev->end = NULL;
}

/* Resolve launch i, waiting for it or not: its start from the origin and its duration
 * between its own two events (a float of milliseconds from the origin alone would lose
 * microseconds after a few seconds). A launch never ended is abandoned (NaN times).
 * Returns PLM_ERR_NOT_READY, changing nothing, when not waiting and it has not finished.
 * Under the lock. */
static plm_status resolve(plm_profiler *p, size_t i, bool wait) {
  pending_events *ev = &p->events[i];
  plm_profile_launch *launch = &p->launches[i];
  plm_status status = PLM_OK;
  if (!ev->ended) {
    p->abandoned++;
  } else {
    bool finished = true;
    status = wait ? plm_event_synchronize(ev->end) : plm_event_query(ev->end, &finished);
    if (status == PLM_OK && !finished) return PLM_ERR_NOT_READY;
    float start = 0.0f, duration = 0.0f;
    if (status == PLM_OK) status = plm_event_elapsed_ms(p->origin, ev->start, &start);
    if (status == PLM_OK) status = plm_event_elapsed_ms(ev->start, ev->end, &duration);
    if (status == PLM_OK) {
      launch->start_ms = start;
      launch->end_ms = (double)start + duration;
    }
  }
  release_events(p, i);
  return status;
}

/* Resolve launches [collected, count), waiting for each; a failure is returned after
 * all are resolved (the failed ones abandoned), so the profiler stays usable. */
static plm_status collect_locked(plm_profiler *p) {
  plm_status first = PLM_OK;
  for (; p->collected < p->count; p->collected++) {
    plm_status status = resolve(p, p->collected, true);
    if (status != PLM_OK && first == PLM_OK) first = status;
  }
  return first;
}

/* Resolve the oldest launches that have finished, without waiting. */
static void collect_ready_locked(plm_profiler *p) {
  while (p->collected < p->count && p->events[p->collected].ended &&
         resolve(p, p->collected, false) == PLM_OK)
    p->collected++;
}

plm_status plm_profiler_collect(plm_profiler *profiler) {
  PLM__REQUIRE_NOT_NULL(profiler);
  pthread_mutex_lock(&profiler->lock);
  plm_status status = collect_locked(profiler);
  pthread_mutex_unlock(&profiler->lock);
  return plm__propagate(status);
}

/* Forget every record, giving back the events of those not collected: the overhead
 * probe's launches, and everything at destroy. */
static void forget_records(plm_profiler *p) {
  for (size_t i = p->collected; i < p->count; i++) release_events(p, i);
  if (p->origin) plm_event_destroy(p->origin);
  p->origin = NULL;
  p->count = p->collected = p->dropped = p->abandoned = 0;
  p->stream_count = 0;
}

/* The host cost of recording a launch: OVERHEAD_PROBES empty launches on a private
 * stream, timed on the host, then forgotten. */
static plm_status measure_overhead(plm_profiler *p) {
  const size_t max_launches = p->max_launches; /* every probe is recorded, not dropped */
  if (p->max_launches < OVERHEAD_PROBES) p->max_launches = OVERHEAD_PROBES;
  plm_stream *stream = NULL;
  plm_status status = plm_stream_create(p->ctx, 0, &stream);
  const double start = plm__monotonic_ns();
  int probes = 0;
  for (; status == PLM_OK && probes < OVERHEAD_PROBES; probes++) {
    plm_profile_mark mark;
    status = plm_profiler_begin(p, stream, "overhead", -1, NULL, &mark);
    if (status == PLM_OK) status = plm_profiler_end(p, stream, &mark);
  }
  const double elapsed_ns = plm__monotonic_ns() - start;
  if (status == PLM_OK) status = plm_profiler_collect(p);
  if (stream) plm_stream_destroy(stream);
  if (status == PLM_OK) p->overhead_us = elapsed_ns / 1e3 / probes;
  forget_records(p);
  p->max_launches = max_launches;
  return status;
}

plm_status plm_profiler_create(plm_context *ctx, const plm_profiler_config *cfg,
                               plm_profiler **out) {
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REFUSE_IN_HOST_CALLBACK();
  plm_profiler_config config = cfg ? *cfg : plm_profiler_config_default();
  if (config.max_launches == 0) config.max_launches = DEFAULT_MAX_LAUNCHES;
  plm_profiler *p = calloc(1, sizeof *p);
  if (!p) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no memory for a profiler");
  p->ctx = ctx;
  p->max_launches = config.max_launches;
  pthread_mutex_init(&p->lock, NULL);
  plm_status status = measure_overhead(p);
  if (status == PLM_OK && config.calibrate) status = plm__profile_calibrate(ctx, &p->calibration);
  if (status != PLM_OK) {
    plm_profiler_destroy(p);
    return plm__propagate(status);
  }
  *out = p;
  return PLM_OK;
}

/* Free the pool snapshots' copies (the profiler owns them, hence the casts). */
static void forget_pool_snapshots(plm_profiler *p) {
  for (size_t i = 0; i < p->pool_snapshot_count; i++) {
    free((char *)p->pool_snapshots[i].name);
    plm_pool_snapshot_free((plm_pool_snapshot *)p->pool_snapshots[i].snapshot);
  }
  free(p->pool_snapshots);
  p->pool_snapshots = NULL;
  p->pool_snapshot_count = 0;
}

plm_status plm_profiler_destroy(plm_profiler *profiler) {
  if (!profiler) return PLM_OK;
  const int attached = atomic_load(&profiler->attached);
  if (attached > 0)
    return plm__fail(PLM_ERR_INVALID_STATE,
                     "the profiler is attached to %d pipeline(s): detach it first "
                     "(plm_pipeline_set_profiler(pl, NULL)) or destroy them",
                     attached);
  plm_status status = collect_locked(profiler);
  forget_records(profiler);
  forget_pool_snapshots(profiler);
  free(profiler->launches);
  free(profiler->events);
  pthread_mutex_destroy(&profiler->lock);
  free(profiler);
  return status == PLM_OK ? PLM_OK : plm__propagate(status);
}

plm_context *plm__profiler_context(const plm_profiler *profiler) {
  return profiler->ctx;
}

void plm__profiler_attach(plm_profiler *profiler, int pipelines) {
  atomic_fetch_add(&profiler->attached, pipelines);
}

plm_status plm_profiler_launches(plm_profiler *profiler, const plm_profile_launch **launches,
                                 size_t *count, size_t *dropped) {
  PLM__REQUIRE_NOT_NULL(profiler);
  PLM__REQUIRE_NOT_NULL(launches);
  PLM__REQUIRE_NOT_NULL(count);
  pthread_mutex_lock(&profiler->lock);
  *launches = profiler->launches;
  *count = profiler->count;
  if (dropped) *dropped = profiler->dropped + profiler->abandoned;
  pthread_mutex_unlock(&profiler->lock);
  return PLM_OK;
}

plm_status plm_profiler_calibration(const plm_profiler *profiler, plm_profile_calibration *out) {
  PLM__REQUIRE_NOT_NULL(profiler);
  PLM__REQUIRE_NOT_NULL(out);
  *out = profiler->calibration;
  return PLM_OK;
}

plm_status plm_profiler_overhead_us(const plm_profiler *profiler, double *us) {
  PLM__REQUIRE_NOT_NULL(profiler);
  PLM__REQUIRE_NOT_NULL(us);
  *us = profiler->overhead_us;
  return PLM_OK;
}

/* ---- statistics per op ----------------------------------------------------------------- */

static _Thread_local const plm_profile_launch *sort_base; /* qsort has no context argument */

static int by_name_then_start(const void *a, const void *b) {
  const plm_profile_launch *x = &sort_base[*(const size_t *)a], *y = &sort_base[*(const size_t *)b];
  int names = strcmp(x->name, y->name);
  if (names) return names;
  return (x->start_ms > y->start_ms) - (x->start_ms < y->start_ms);
}

static int by_total_descending(const void *a, const void *b) {
  const plm_profile_op_stats *x = a, *y = b;
  if (x->total_ms != y->total_ms) return x->total_ms < y->total_ms ? 1 : -1;
  return strcmp(x->name, y->name);
}

/* The cost-model figures of one op's statistics, against the calibration. */
static void add_rates(plm_profile_op_stats *s, const plm_profile_calibration *c) {
  /* A copy between host and device moves its bytes once, over the link: against the
   * pinned bandwidth of its direction, and bound by the transfer, not by memory. */
  const bool h2d = strcmp(s->name, "h2d") == 0, d2h = strcmp(s->name, "d2h") == 0;
  const double seconds = s->mean_ms / 1e3;
  s->gb_per_s = seconds > 0.0 ? s->bytes / seconds / 1e9 : 0.0;
  s->gflop_per_s = seconds > 0.0 ? s->flops / seconds / 1e9 : 0.0;
  s->intensity = s->bytes > 0.0 ? s->flops / s->bytes : 0.0;
  const double bandwidth = h2d ? c->h2d_gbps : d2h ? c->d2h_gbps : c->device_copy_gbps;
  s->bandwidth_fraction = bandwidth > 0.0 ? s->gb_per_s / bandwidth : 0.0;
  s->compute_fraction = c->fma_gflops > 0.0 ? s->gflop_per_s / c->fma_gflops : 0.0;
  s->bound[0] = '\0';
  if (h2d || d2h) {
    snprintf(s->bound, sizeof s->bound, "%s", "link");
  } else if (c->device_copy_gbps > 0.0 && c->fma_gflops > 0.0 && s->bytes > 0.0) {
    const double ridge = c->fma_gflops / c->device_copy_gbps;
    snprintf(s->bound, sizeof s->bound, "%s", s->intensity < ridge ? "memory" : "compute");
  }
}

/* Statistics of launches order[first, last) (one name). */
static plm_status stats_of_group(const plm_profiler *p, const size_t *order, size_t first,
                                 size_t last, double *times, plm_profile_op_stats *s) {
  double bytes = 0.0, flops = 0.0, enqueue = 0.0;
  const size_t n = last - first;
  for (size_t i = first; i < last; i++) {
    const plm_profile_launch *l = &p->launches[order[i]];
    times[i - first] = l->end_ms - l->start_ms;
    bytes += l->bytes;
    flops += l->flops;
    enqueue += l->enqueue_us;
  }
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", p->launches[order[first]].name);
  plm_status status = plm_profile_stats_of(times, n, s);
  if (status != PLM_OK) return status;
  s->bytes = bytes / (double)n;
  s->flops = flops / (double)n;
  s->enqueue_mean_us = enqueue / (double)n;
  add_rates(s, &p->calibration);
  return PLM_OK;
}

plm_status plm_profiler_op_stats(plm_profiler *profiler, plm_profile_op_stats **stats,
                                 size_t *count) {
  PLM__REQUIRE_NOT_NULL(profiler);
  PLM__REQUIRE_NOT_NULL(stats);
  PLM__REQUIRE_NOT_NULL(count);
  *stats = NULL;
  *count = 0;
  plm_profiler *p = profiler;
  pthread_mutex_lock(&p->lock);
  plm_status status = collect_locked(p);
  const size_t n = p->count;
  size_t *order = NULL;
  double *times = NULL;
  plm_profile_op_stats *out = NULL;
  size_t groups = 0;
  if (status == PLM_OK && n > 0) {
    order = malloc(n * sizeof *order);
    times = malloc(n * sizeof *times);
    out = malloc(n * sizeof *out);
    if (!order || !times || !out)
      status =
          plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no memory for the statistics of %zu launches", n);
  }
  size_t timed = 0; /* launches with times (abandoned ones have none) */
  if (status == PLM_OK)
    for (size_t i = 0; i < n; i++)
      if (!isnan(p->launches[i].start_ms)) order[timed++] = i;
  if (status == PLM_OK && timed > 0) {
    sort_base = p->launches;
    qsort(order, timed, sizeof *order, by_name_then_start);
    size_t first = 0;
    for (size_t i = 1; status == PLM_OK && i <= timed; i++) {
      if (i < timed && strcmp(p->launches[order[i]].name, p->launches[order[first]].name) == 0)
        continue;
      status = stats_of_group(p, order, first, i, times, &out[groups++]);
      first = i;
    }
  }
  pthread_mutex_unlock(&p->lock);
  free(order);
  free(times);
  if (status != PLM_OK) {
    free(out);
    return plm__propagate(status);
  }
  double total = 0.0;
  for (size_t g = 0; g < groups; g++) total += out[g].total_ms;
  for (size_t g = 0; g < groups; g++) out[g].share = total > 0.0 ? out[g].total_ms / total : 0.0;
  if (groups > 0) qsort(out, groups, sizeof *out, by_total_descending);
  *stats = out;
  *count = groups;
  return PLM_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

plm_status plm_profiler_add_pool_snapshot(plm_profiler *profiler, const char *name,
                                          const plm_pool_snapshot *snapshot) {
  PLM__REQUIRE_NOT_NULL(profiler);
  PLM__REQUIRE_NOT_NULL(name);
  PLM__REQUIRE_NOT_NULL(snapshot);
  plm_pool_snapshot *copy = NULL;
  plm_status status = plm_pool_snapshot_copy(snapshot, &copy);
  if (status != PLM_OK) return plm__propagate(status);
  char *name_copy = strdup(name);
  pthread_mutex_lock(&profiler->lock);
  const size_t count = profiler->pool_snapshot_count;
  plm__profile_pool_snapshot *grown =
      name_copy ? realloc(profiler->pool_snapshots, (count + 1) * sizeof *grown) : NULL;
  if (grown) {
    grown[count] = (plm__profile_pool_snapshot){.name = name_copy, .snapshot = copy};
    profiler->pool_snapshots = grown;
    profiler->pool_snapshot_count = count + 1;
  }
  pthread_mutex_unlock(&profiler->lock);
  if (!grown) {
    free(name_copy);
    plm_pool_snapshot_free(copy);
    return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory to keep pool snapshot '%s'", name);
  }
  return PLM_OK;
}

/* mkdir -p for dir; a message naming it on failure. */
static plm_status make_directories(const char *dir) {
  char path[4096];
  int n = snprintf(path, sizeof path, "%s", dir);
  if (n < 0 || (size_t)n >= sizeof path)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "directory '%.64s...' is too long", dir);
  for (char *c = path + 1;; c++) {
    const bool last = *c == '\0';
    if (*c == '/' || last) {
      *c = '\0';
      struct stat st;
      if (stat(path, &st) != 0 && mkdir(path, 0777) != 0 && stat(path, &st) != 0)
        return plm__fail_raw(PLM_ERR_IO, "cannot create directory '%s'", path);
      if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return plm__fail_raw(PLM_ERR_IO, "'%s' is not a directory", path);
      if (last) break;
      *c = '/';
    }
  }
  return PLM_OK;
}

static int by_start(const void *a, const void *b) {
  const plm_profile_launch *x = a, *y = b;
  return (x->start_ms > y->start_ms) - (x->start_ms < y->start_ms);
}

plm_status plm_profiler_write(plm_profiler *profiler, const char *dir,
                              const plm_profile_write_options *options) {
  PLM__REQUIRE_NOT_NULL(profiler);
  PLM__REQUIRE_NOT_NULL(dir);
  PLM__REFUSE_IN_HOST_CALLBACK();
  if (!dir[0]) return plm__fail(PLM_ERR_INVALID_ARG, "dir is empty");
  const plm_profile_write_options none = {0};
  if (!options) options = &none;
  if (options->ab_count > 0 && !options->ab)
    return plm__fail(PLM_ERR_INVALID_ARG, "options->ab is NULL with ab_count %zu",
                     options->ab_count);
  plm_profile_op_stats *ops = NULL;
  size_t op_count = 0;
  plm_status status = plm_profiler_op_stats(profiler, &ops, &op_count);
  if (status != PLM_OK) return status;

  /* The launches by start time, from 0 (an event on another stream may precede the
   * origin, which is only the first recorded). */
  pthread_mutex_lock(&profiler->lock);
  const size_t recorded = profiler->count;
  plm_profile_launch *launches = recorded ? malloc(recorded * sizeof *launches) : NULL;
  size_t n = 0; /* those with times */
  for (size_t i = 0; launches && i < recorded; i++)
    if (!isnan(profiler->launches[i].start_ms)) launches[n++] = profiler->launches[i];
  const size_t dropped = profiler->dropped + profiler->abandoned;
  const int stream_count = profiler->stream_count;
  pthread_mutex_unlock(&profiler->lock);
  if (recorded && !launches) {
    free(ops);
    return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no memory to copy %zu launches", recorded);
  }
  double first = 0.0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || launches[i].start_ms < first) first = launches[i].start_ms;
  for (size_t i = 0; i < n; i++) {
    launches[i].start_ms -= first;
    launches[i].end_ms -= first;
  }
  if (n) qsort(launches, n, sizeof *launches, by_start);

  plm_device_info info;
  status = plm_context_device_info(profiler->ctx, &info);
  if (status != PLM_OK) {
    free(launches);
    free(ops);
    return plm__propagate(status);
  }
  char driver[64] = "", date[32] = "";
  if (info.backend == PLM_BACKEND_CUDA)
    snprintf(driver, sizeof driver, "driver %d, runtime %d", info.driver_version,
             info.runtime_version);
  const time_t now = time(NULL);
  struct tm utc;
  gmtime_r(&now, &utc);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  const plm__profile_snapshot snapshot = {
      .title = options->title ? options->title : "plume profile",
      .backend = plm_backend_name(info.backend),
      .device = info.name,
      .driver = driver,
      .commit = options->commit ? options->commit : plm_build_info_get()->git_commit,
      .date = date,
      .calibration = &profiler->calibration,
      .overhead_us = profiler->overhead_us,
      .launches = launches,
      .launch_count = n,
      .dropped = dropped,
      .stream_count = stream_count,
      .ops = ops,
      .op_count = op_count,
      .ab = options->ab,
      .ab_count = options->ab_count,
      .ab_unit = options->ab_unit ? options->ab_unit : "",
      .ab_higher_is_better = options->ab_higher_is_better,
      .pool_snapshots = profiler->pool_snapshots,
      .pool_snapshot_count = profiler->pool_snapshot_count};

  char path[4096];
  status = make_directories(dir);
  if (status == PLM_OK) {
    snprintf(path, sizeof path, "%s/profile.json", dir);
    status = plm__profile_write_json(&snapshot, path);
  }
  if (status == PLM_OK) {
    snprintf(path, sizeof path, "%s/trace.json", dir);
    status = plm__profile_write_trace(&snapshot, path);
  }
  if (status == PLM_OK) {
    snprintf(path, sizeof path, "%s/report.html", dir);
    status = plm__profile_write_html(&snapshot, path);
  }
  if (status == PLM_OK && snapshot.pool_snapshot_count > 0) {
    snprintf(path, sizeof path, "%s/pool_snapshot.json", dir);
    status = plm__profile_write_pool_snapshots(&snapshot, path);
  }
  free(launches);
  free(ops);
  return plm__propagate(status);
}

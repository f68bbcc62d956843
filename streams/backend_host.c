/* streams/backend_host.c: the host backend, a real asynchronous CPU backend.
 *
 * Streams. Each stream is one worker thread draining an in-order queue of tasks
 * (a singly linked list guarded by the stream's mutex). Enqueueing appends a task
 * and wakes the worker; the worker runs tasks one at a time outside the lock. Two
 * counters, `enqueued` and `finished`, answer query (equal) and synchronize (wait
 * until `finished` reaches the `enqueued` seen at the call). Task nodes are
 * recycled through a per-stream spare list, so steady enqueueing does not call
 * malloc. Before sleeping, a worker that has just emptied its queue polls `enqueued`,
 * and a synchronizer polls `finished`, for up to POLL_NS, yielding the core while they
 * poll (as CUDA's default synchronisation does): a frame's ops follow each other by a
 * few microseconds, and a condition variable's wake-up costs that much again on each
 * side. Then the worker sleeps on `work_ready`, synchronizers on `work_done` (broadcast
 * only while someone waits). The counters are atomics written under the lock, so the
 * polls read them without it.
 *
 * Events. Recording creates a marker (a small refcounted struct) and enqueues a
 * task that completes it, with a timestamp, when the worker reaches it. The event
 * points at its latest marker; a wait enqueued on another stream holds a reference
 * to the marker current at that moment, so re-recording the event later does not
 * change what an earlier wait waits for (CUDA semantics). Marker completion and
 * waiting use one mutex and condition variable per backend context.
 *
 * Shutdown. Destroying a stream sets `stopping`; the worker exits once its queue
 * is empty, so pending work always runs, and the destroyer joins it.
 */
#define _GNU_SOURCE /* pthread_setname_np */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <utlist.h>

#include "streams/assert.h"
#include "streams/backend.h"
#include "streams/clock.h"
#include "streams/error.h"
#include "streams/file.h"
#include "streams/parallel.h"

enum { DEVICE_ALIGNMENT = 256 };
enum { POLL_NS = 50 * 1000 }; /* how long a worker or a synchronizer polls before sleeping */

typedef struct host_marker {
  atomic_int refs;
  bool done;        /* guarded by host_backend.marker_lock */
  uint64_t time_ns; /* written before done is set */
} host_marker;

typedef struct host_backend host_backend;
typedef struct host_task host_task;

struct host_task {
  host_task *next;
  void (*run)(host_backend *backend, const host_task *task);
  union {
    struct {
      void *dst;
      const void *src;
      size_t bytes;
    } copy;
    struct {
      void *dst;
      int value;
      size_t bytes;
    } fill;
    struct {
      plm_host_fn fn;
      void *user;
    } call;
    struct {
      void (*fn)(const void *args);
      _Alignas(16) unsigned char args[PLM__KERNEL_ARGS_MAX];
    } kernel;
    host_marker *marker;
  } args;
};

typedef struct host_stream {
  host_backend *backend;
  pthread_t worker;
  pthread_mutex_t lock;
  pthread_cond_t work_ready;
  pthread_cond_t work_done;
  host_task *head, *tail;                  /* pending tasks, oldest first */
  host_task *spare;                        /* finished task nodes for reuse */
  atomic_uint_fast64_t enqueued, finished; /* written under lock; polled without it */
  int sync_waiters;
  bool stopping;
  struct host_stream *prev, *next; /* in host_backend.streams */
} host_stream;

typedef struct host_event {
  host_marker *latest; /* guarded by host_backend.marker_lock; NULL until recorded */
} host_event;

struct host_backend {
  plm_device_info info;
  pthread_mutex_t marker_lock;
  pthread_cond_t marker_done;
  pthread_mutex_t streams_lock;
  host_stream *streams;
  atomic_uint stream_serial; /* names worker threads */
  plm__parallel_pool *parallel; /* the kernels' threads with a core budget; NULL: the
                                   process-wide pool (streams/parallel.h) */
};

/* ---- markers ---------------------------------------------------------------- */

static host_marker *marker_new(int refs) {
  host_marker *marker = calloc(1, sizeof *marker);
  if (marker) atomic_init(&marker->refs, refs);
  return marker;
}

static void marker_release(host_marker *marker) {
  if (marker && atomic_fetch_sub(&marker->refs, 1) == 1) free(marker);
}

/* ---- tasks -------------------------------------------------------------------- */

static void run_copy(host_backend *backend, const host_task *task) {
  (void)backend;
  memcpy(task->args.copy.dst, task->args.copy.src, task->args.copy.bytes);
}

static void run_fill(host_backend *backend, const host_task *task) {
  (void)backend;
  memset(task->args.fill.dst, task->args.fill.value, task->args.fill.bytes);
}

static void run_call(host_backend *backend, const host_task *task) {
  (void)backend;
  plm__set_in_host_callback(true);
  task->args.call.fn(task->args.call.user);
  plm__set_in_host_callback(false);
}

/* A CPU kernel of plume's own: not a user callback, so it may use the CPU pool. */
static void run_kernel(host_backend *backend, const host_task *task) {
  (void)backend;
  task->args.kernel.fn(task->args.kernel.args);
}

static void run_record(host_backend *backend, const host_task *task) {
  host_marker *marker = task->args.marker;
  pthread_mutex_lock(&backend->marker_lock);
  marker->time_ns = plm__monotonic_ns();
  marker->done = true;
  pthread_cond_broadcast(&backend->marker_done);
  pthread_mutex_unlock(&backend->marker_lock);
  marker_release(marker);
}

static void run_wait(host_backend *backend, const host_task *task) {
  host_marker *marker = task->args.marker;
  pthread_mutex_lock(&backend->marker_lock);
  while (!marker->done) pthread_cond_wait(&backend->marker_done, &backend->marker_lock);
  pthread_mutex_unlock(&backend->marker_lock);
  marker_release(marker);
}

/* ---- the worker and its queue ------------------------------------------------- */

/* Poll *counter until it reaches target or POLL_NS have passed, yielding the core:
 * the thread that moves it may be waiting for this very core. Returns whether it did. */
static bool poll_counter(atomic_uint_fast64_t *counter, uint64_t target) {
  const int64_t deadline = plm__monotonic_ns() + POLL_NS;
  for (unsigned i = 1;; i++) {
    if (atomic_load_explicit(counter, memory_order_acquire) >= target) return true;
    if (i % 16 == 0) {
      sched_yield();
      if (plm__monotonic_ns() > deadline) return false;
    }
  }
}

static void *worker_main(void *arg) {
  host_stream *stream = arg;
  plm__parallel_use(stream->backend->parallel);
  pthread_mutex_lock(&stream->lock);
  for (;;) {
    if (!stream->head && !stream->stopping) { /* poll a while for the next task */
      const uint64_t next = atomic_load_explicit(&stream->finished, memory_order_relaxed) + 1;
      pthread_mutex_unlock(&stream->lock);
      poll_counter(&stream->enqueued, next);
      pthread_mutex_lock(&stream->lock);
    }
    while (!stream->head && !stream->stopping)
      pthread_cond_wait(&stream->work_ready, &stream->lock);
    host_task *task = stream->head;
    if (!task) break; /* stopping, and nothing left to run */
    stream->head = task->next;
    if (!stream->head) stream->tail = NULL;
    pthread_mutex_unlock(&stream->lock);

    task->run(stream->backend, task);

    pthread_mutex_lock(&stream->lock);
    task->next = stream->spare;
    stream->spare = task;
    atomic_fetch_add_explicit(&stream->finished, 1, memory_order_release);
    if (stream->sync_waiters > 0) pthread_cond_broadcast(&stream->work_done);
  }
  pthread_mutex_unlock(&stream->lock);
  return NULL;
}

/* Append a copy of `task` to the stream's queue. */
static plm_status enqueue(host_stream *stream, const host_task *task) {
  pthread_mutex_lock(&stream->lock);
  host_task *node = stream->spare;
  if (node) {
    stream->spare = node->next;
  } else {
    pthread_mutex_unlock(&stream->lock);
    node = malloc(sizeof *node);
    if (!node) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a stream task");
    pthread_mutex_lock(&stream->lock);
  }
  *node = *task;
  node->next = NULL;
  if (stream->tail)
    stream->tail->next = node;
  else
    stream->head = node;
  stream->tail = node;
  atomic_fetch_add_explicit(&stream->enqueued, 1, memory_order_release);
  pthread_cond_signal(&stream->work_ready);
  pthread_mutex_unlock(&stream->lock);
  return PLM_OK;
}

static void free_task_list(host_task *list) {
  while (list) {
    host_task *next = list->next;
    free(list);
    list = next;
  }
}

/* ---- streams ------------------------------------------------------------------ */

static plm_status host_stream_create(void *ctx, unsigned flags, void **out) {
  (void)flags; /* priority: recorded by the wrapper; threads here are not preempted by it */
  host_backend *backend = ctx;
  host_stream *stream = calloc(1, sizeof *stream);
  if (!stream) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a stream");
  stream->backend = backend;
  pthread_mutex_init(&stream->lock, NULL);
  pthread_cond_init(&stream->work_ready, NULL);
  pthread_cond_init(&stream->work_done, NULL);
  int err = pthread_create(&stream->worker, NULL, worker_main, stream);
  if (err != 0) {
    pthread_cond_destroy(&stream->work_done);
    pthread_cond_destroy(&stream->work_ready);
    pthread_mutex_destroy(&stream->lock);
    free(stream);
    return plm__fail_raw(PLM_ERR_BACKEND, "pthread_create for the stream's worker failed: %s",
                         strerror(err));
  }
  char name[16];
  snprintf(name, sizeof name, "plm-stream-%u", atomic_fetch_add(&backend->stream_serial, 1));
  pthread_setname_np(stream->worker, name);

  pthread_mutex_lock(&backend->streams_lock);
  DL_APPEND(backend->streams, stream);
  pthread_mutex_unlock(&backend->streams_lock);
  *out = stream;
  return PLM_OK;
}

static plm_status host_stream_synchronize(void *ctx, void *handle) {
  (void)ctx;
  host_stream *stream = handle;
  const uint64_t target = atomic_load_explicit(&stream->enqueued, memory_order_acquire);
  if (poll_counter(&stream->finished, target)) return PLM_OK;
  pthread_mutex_lock(&stream->lock);
  stream->sync_waiters++;
  while (stream->finished < target) pthread_cond_wait(&stream->work_done, &stream->lock);
  stream->sync_waiters--;
  pthread_mutex_unlock(&stream->lock);
  return PLM_OK;
}

static plm_status host_stream_destroy(void *ctx, void *handle) {
  host_backend *backend = ctx;
  host_stream *stream = handle;
  pthread_mutex_lock(&backend->streams_lock);
  DL_DELETE(backend->streams, stream);
  pthread_mutex_unlock(&backend->streams_lock);

  pthread_mutex_lock(&stream->lock);
  stream->stopping = true;
  pthread_cond_signal(&stream->work_ready);
  pthread_mutex_unlock(&stream->lock);
  pthread_join(stream->worker, NULL);

  PLM_ASSERT(stream->head == NULL && stream->finished == stream->enqueued);
  free_task_list(stream->spare);
  pthread_cond_destroy(&stream->work_done);
  pthread_cond_destroy(&stream->work_ready);
  pthread_mutex_destroy(&stream->lock);
  free(stream);
  return PLM_OK;
}

static plm_status host_stream_query(void *ctx, void *handle, bool *finished) {
  (void)ctx;
  host_stream *stream = handle;
  pthread_mutex_lock(&stream->lock);
  *finished = stream->finished == stream->enqueued;
  pthread_mutex_unlock(&stream->lock);
  return PLM_OK;
}

static plm_status host_stream_memcpy(void *ctx, void *handle, void *dst, const void *src,
                                     size_t bytes, plm_copy_kind kind) {
  (void)ctx;
  (void)kind; /* host and "device" memory are the same memory here */
  host_task task = {.run = run_copy, .args.copy = {.dst = dst, .src = src, .bytes = bytes}};
  return enqueue(handle, &task);
}

static plm_status host_stream_memset(void *ctx, void *handle, void *dst, int value, size_t bytes) {
  (void)ctx;
  host_task task = {.run = run_fill, .args.fill = {.dst = dst, .value = value, .bytes = bytes}};
  return enqueue(handle, &task);
}

static plm_status host_stream_enqueue_host(void *ctx, void *handle, plm_host_fn fn, void *user) {
  (void)ctx;
  host_task task = {.run = run_call, .args.call = {.fn = fn, .user = user}};
  return enqueue(handle, &task);
}

/* The event's latest marker with a reference taken for the caller, or NULL. */
static host_marker *acquire_latest_marker(host_backend *backend, host_event *event) {
  pthread_mutex_lock(&backend->marker_lock);
  host_marker *marker = event->latest;
  if (marker && marker->done) marker = NULL; /* nothing left to wait for */
  if (marker) atomic_fetch_add(&marker->refs, 1);
  pthread_mutex_unlock(&backend->marker_lock);
  return marker;
}

static plm_status host_stream_launch_host_kernel(void *ctx, void *handle,
                                                 void (*fn)(const void *args), const void *args,
                                                 size_t args_size) {
  (void)ctx;
  PLM_ASSERT(args_size <= PLM__KERNEL_ARGS_MAX);
  host_task task = {.run = run_kernel, .args.kernel.fn = fn};
  memcpy(task.args.kernel.args, args, args_size);
  return enqueue(handle, &task);
}

static plm_status host_stream_wait_event(void *ctx, void *handle, void *event_handle) {
  host_marker *marker = acquire_latest_marker(ctx, event_handle);
  if (!marker) return PLM_OK;
  host_task task = {.run = run_wait, .args.marker = marker};
  plm_status status = enqueue(handle, &task);
  if (status != PLM_OK) marker_release(marker);
  return status;
}

static plm_status host_synchronize(void *ctx) {
  host_backend *backend = ctx;
  pthread_mutex_lock(&backend->streams_lock);
  host_stream *stream;
  DL_FOREACH(backend->streams, stream) host_stream_synchronize(ctx, stream);
  pthread_mutex_unlock(&backend->streams_lock);
  return PLM_OK;
}

/* ---- events ------------------------------------------------------------------- */

static plm_status host_event_create(void *ctx, unsigned flags, void **out) {
  (void)ctx;
  (void)flags; /* timing is checked by the wrapper; host waits always sleep */
  host_event *event = calloc(1, sizeof *event);
  if (!event) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for an event");
  *out = event;
  return PLM_OK;
}

static void host_event_destroy(void *ctx, void *handle) {
  host_backend *backend = ctx;
  host_event *event = handle;
  pthread_mutex_lock(&backend->marker_lock);
  host_marker *marker = event->latest;
  event->latest = NULL;
  pthread_mutex_unlock(&backend->marker_lock);
  marker_release(marker);
  free(event);
}

static plm_status host_event_record(void *ctx, void *handle, void *stream) {
  host_backend *backend = ctx;
  host_event *event = handle;
  host_marker *marker = marker_new(2); /* one for the event, one for the task */
  if (!marker) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for an event record");
  host_task task = {.run = run_record, .args.marker = marker};
  plm_status status = enqueue(stream, &task);
  if (status != PLM_OK) {
    free(marker);
    return status;
  }
  pthread_mutex_lock(&backend->marker_lock);
  host_marker *previous = event->latest;
  event->latest = marker;
  pthread_mutex_unlock(&backend->marker_lock);
  marker_release(previous);
  return PLM_OK;
}

static plm_status host_event_query(void *ctx, void *handle, bool *complete) {
  host_backend *backend = ctx;
  host_event *event = handle;
  pthread_mutex_lock(&backend->marker_lock);
  *complete = !event->latest || event->latest->done;
  pthread_mutex_unlock(&backend->marker_lock);
  return PLM_OK;
}

static plm_status host_event_synchronize(void *ctx, void *handle) {
  host_backend *backend = ctx;
  host_marker *marker = acquire_latest_marker(backend, handle);
  if (!marker) return PLM_OK;
  pthread_mutex_lock(&backend->marker_lock);
  while (!marker->done) pthread_cond_wait(&backend->marker_done, &backend->marker_lock);
  pthread_mutex_unlock(&backend->marker_lock);
  marker_release(marker);
  return PLM_OK;
}

static plm_status host_event_elapsed_ms(void *ctx, void *start_handle, void *end_handle,
                                        float *ms) {
  host_backend *backend = ctx;
  host_event *start = start_handle, *end = end_handle;
  plm_status status = PLM_OK;
  pthread_mutex_lock(&backend->marker_lock);
  if (!start->latest || !end->latest)
    status = plm__fail_raw(PLM_ERR_INVALID_STATE, "an event was never recorded");
  else if (!start->latest->done || !end->latest->done)
    status = plm__fail_raw(PLM_ERR_NOT_READY, "an event's recorded work has not completed");
  else
    *ms = (float)(((double)end->latest->time_ns - (double)start->latest->time_ns) / 1e6);
  pthread_mutex_unlock(&backend->marker_lock);
  return status;
}

/* ---- memory ------------------------------------------------------------------- */

/* 256-byte aligned; a block of at least a system page starts on one, so that the pool's
 * pages, counted from a chunk's base, are whole system pages (mem_decommit_unit). */
static plm_status host_mem_alloc(void *ctx, size_t bytes, void **ptr) {
  (void)ctx;
  size_t rounded = (bytes + DEVICE_ALIGNMENT - 1) / DEVICE_ALIGNMENT * DEVICE_ALIGNMENT;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t alignment = rounded >= page && page > DEVICE_ALIGNMENT ? page : DEVICE_ALIGNMENT;
  void *memory = NULL;
  if (posix_memalign(&memory, alignment, rounded) != 0)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "host backend: no memory for %zu bytes", bytes);
  *ptr = memory;
  return PLM_OK;
}

static plm_status host_mem_free(void *ctx, void *ptr) {
  host_synchronize(ctx); /* like cudaFree: no stream may still be using it */
  free(ptr);
  return PLM_OK;
}

/* The pages of [ptr, ptr + bytes) go back to the kernel (madvise MADV_DONTNEED: the
 * addresses stay mapped and read as zeros when touched again, which faults fresh pages
 * in). Only the system pages wholly inside the range are given: a chunk from
 * posix_memalign need not start on a page. */
static plm_status host_mem_decommit(void *ctx, void *ptr, size_t bytes) {
  (void)ctx;
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t first = ((uintptr_t)ptr + page - 1) / page * page;
  uintptr_t end = ((uintptr_t)ptr + bytes) / page * page;
  if (end > first && madvise((void *)first, end - first, MADV_DONTNEED) != 0)
    return plm__fail_raw(PLM_ERR_INTERNAL, "host backend: madvise(MADV_DONTNEED) of %zu bytes: %s",
                         (size_t)(end - first), strerror(errno));
  return PLM_OK;
}

static size_t host_mem_decommit_unit(void *ctx) {
  (void)ctx;
  return (size_t)sysconf(_SC_PAGESIZE);
}

/* Nothing to do: a decommitted page is mapped again on its first touch. */
static plm_status host_mem_recommit(void *ctx, void *ptr, size_t bytes) {
  (void)ctx;
  (void)ptr;
  (void)bytes;
  return PLM_OK;
}

/* ---- device information --------------------------------------------------------- */

/* The value of the first line in `path` that starts with `key`, after the colon. */
static bool read_keyed_line(const char *path, const char *key, char *value, size_t capacity) {
  char why[160];
  FILE *file = plm__file_open_regular(path, PLM__FILE_READ, NULL, why, sizeof why);
  if (!file) return false;
  char line[512];
  bool found = false;
  size_t key_length = strlen(key);
  while (!found && fgets(line, sizeof line, file)) {
    if (strncmp(line, key, key_length) != 0) continue;
    const char *colon = strchr(line, ':');
    if (!colon) continue;
    colon++;
    while (*colon == ' ' || *colon == '\t') colon++;
    snprintf(value, capacity, "%s", colon);
    value[strcspn(value, "\n")] = '\0';
    found = true;
  }
  fclose(file);
  return found;
}

static uint64_t available_memory_bytes(void) {
  char value[64];
  if (read_keyed_line("/proc/meminfo", "MemAvailable", value, sizeof value))
    return strtoull(value, NULL, 10) * 1024u;
  long pages = sysconf(_SC_AVPHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
}

static void describe_cpu(plm_device_info *info) {
  memset(info, 0, sizeof *info);
  info->backend = PLM_BACKEND_HOST;
  if (!read_keyed_line("/proc/cpuinfo", "model name", info->name, sizeof info->name))
    snprintf(info->name, sizeof info->name, "host CPU");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  info->multiprocessors = cores > 0 ? (int)cores : 1;
  long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) info->total_memory = (uint64_t)pages * (uint64_t)page_size;
  info->free_memory = available_memory_bytes();
  long last_level = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  last_level = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (last_level <= 0) last_level = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  info->l2_cache_bytes = last_level > 0 ? (uint64_t)last_level : 0;
  info->page_release_bytes = page_size > 0 ? (uint64_t)page_size : 0; /* mem_decommit_unit */
}

static void host_device_info(void *ctx, plm_device_info *out) {
  *out = ((host_backend *)ctx)->info;
}

static plm_status host_memory_info(void *ctx, uint64_t *free_bytes, uint64_t *total_bytes) {
  *free_bytes = available_memory_bytes();
  *total_bytes = ((host_backend *)ctx)->info.total_memory;
  return PLM_OK;
}

/* ---- the backend ------------------------------------------------------------------ */

static void host_close(void *ctx) {
  host_backend *backend = ctx;
  PLM_ASSERT(backend->streams == NULL);
  plm__parallel_pool_destroy(backend->parallel);
  pthread_mutex_destroy(&backend->streams_lock);
  pthread_cond_destroy(&backend->marker_done);
  pthread_mutex_destroy(&backend->marker_lock);
  free(backend);
}

static const plm__backend_iface host_iface = {
    /* .kind                = */ PLM_BACKEND_HOST,
    /* .close               = */ host_close,
    /* .device_info         = */ host_device_info,
    /* .memory_info         = */ host_memory_info,
    /* .synchronize         = */ host_synchronize,
    /* .mem_alloc           = */ host_mem_alloc,
    /* .mem_free            = */ host_mem_free,
    /* .mem_decommit        = */ host_mem_decommit,
    /* .mem_recommit        = */ host_mem_recommit,
    /* .mem_decommit_unit   = */ host_mem_decommit_unit,
    /* .stream_create       = */ host_stream_create,
    /* .stream_destroy      = */ host_stream_destroy,
    /* .stream_synchronize  = */ host_stream_synchronize,
    /* .stream_query        = */ host_stream_query,
    /* .stream_memcpy       = */ host_stream_memcpy,
    /* .stream_memset       = */ host_stream_memset,
    /* .stream_enqueue_host = */ host_stream_enqueue_host,
    /* .stream_wait_event   = */ host_stream_wait_event,
    /* .stream_launch_host_kernel = */ host_stream_launch_host_kernel,
    /* .device_enter        = */ NULL,
    /* .device_leave        = */ NULL,
    /* .event_create        = */ host_event_create,
    /* .event_destroy       = */ host_event_destroy,
    /* .event_record        = */ host_event_record,
    /* .event_query         = */ host_event_query,
    /* .event_synchronize   = */ host_event_synchronize,
    /* .event_elapsed_ms    = */ host_event_elapsed_ms,
    /* .host_register       = */ NULL,
    /* .host_unregister     = */ NULL,
    /* .async_pool_create   = */ NULL,
    /* .async_pool_adopt    = */ NULL,
    /* .async_pool_destroy  = */ NULL,
    /* .async_alloc         = */ NULL,
    /* .async_free          = */ NULL,
    /* .async_pool_trim     = */ NULL,
    /* .async_pool_reserved = */ NULL,
    /* .stream_capture_begin = */ NULL,
    /* .stream_capture_end  = */ NULL,
    /* .graph_launch        = */ NULL,
    /* .graph_destroy       = */ NULL,
    /* .stream_capturing    = */ NULL,
    /* .event_record_external      = */ NULL, /* no graphs: the plain calls */
    /* .stream_wait_event_external = */ NULL,
    /* .stream_adopt               = */ NULL, /* plm_stream_wrap shares a plume stream */
    /* .stream_forget              = */ NULL,
};

plm_status plm__host_backend_open(int threads, const plm__backend_iface **iface, void **ctx) {
  host_backend *backend = calloc(1, sizeof *backend);
  if (!backend) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the backend");
  if (threads > 0 && !(backend->parallel = plm__parallel_pool_create(threads))) {
    free(backend);
    return plm__fail_raw(PLM_ERR_BACKEND, "no %d threads for the host device's kernels", threads);
  }
  pthread_mutex_init(&backend->marker_lock, NULL);
  pthread_cond_init(&backend->marker_done, NULL);
  pthread_mutex_init(&backend->streams_lock, NULL);
  atomic_init(&backend->stream_serial, 0);
  describe_cpu(&backend->info);
  if (threads > 0) backend->info.multiprocessors = threads;
  *iface = &host_iface;
  *ctx = backend;
  return PLM_OK;
}

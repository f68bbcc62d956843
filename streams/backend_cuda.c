/* streams/backend_cuda.c: the cuda backend, on the CUDA runtime API.
 *
 * Streams are cudaStreamNonBlocking streams (they never synchronise with the
 * legacy default stream), created at the device's greatest or least priority when
 * asked. Events map onto cudaEvent_t, copies onto cudaMemcpyAsync, host callbacks
 * onto cudaLaunchHostFunc.
 *
 * The backend keeps a list of its streams, so that synchronize waits for this
 * context's work alone: cudaDeviceSynchronize would also wait for every other
 * context's streams on the device (other pipelines, other libraries) and fails while
 * any thread captures a graph. A stream under capture is passed over: what it has
 * recorded does not run until the graph is launched, and synchronising it would
 * invalidate the capture. A capture begins under the list's write lock, so none
 * begins between synchronize's check and its wait; a stream that joins a capture by
 * waiting on an event of a captured stream meanwhile is passed over too, though CUDA
 * may then have invalidated that capture (a pipeline then runs without graphs).
 * stream_synchronize refuses a stream under capture, and leaves the capture intact.
 *
 * Host callbacks run through a trampoline that marks the CUDA callback thread as
 * inside a host callback (plm__set_in_host_callback). A host function may make no
 * CUDA call at all, so every entry of this backend that would make one refuses there
 * with PLM_ERR_INVALID_STATE (REFUSE_IN_CALLBACK, in CUDA_TRY and ON_DEVICE), and the
 * public calls that may wait refuse first, as on the host backend. The trampoline's
 * argument, a host_call (fn, user), comes without a malloc per call: a record of a
 * callback enqueued outside capture goes back to a free list when it runs; a record
 * enqueued into a capture is interned by (fn, user) and pinned for as long as the
 * backend, since a graph replays the same record every time it is launched (so there
 * is one record per distinct captured (fn, user): plume itself captures none). Every
 * record is on the backend's list of all records and is freed at close, also one
 * whose callback never ran (CUDA skips host functions after an error in the context).
 *
 * The current device is per host thread in CUDA, and applications may call
 * plume from any thread, so every call that creates, frees or synchronises device
 * state makes the context's device current for that call and then gives the
 * caller's current device back (switching only when they differ). Calls that only
 * take a stream or an event need not: CUDA routes them by the handle.
 *
 * Memory. An allocation of at least the driver's allocation granularity (2 MiB) is made
 * of physical allocations mapped into a reserved address range (streams/cuda_vmm.h), so
 * that mem_decommit can give back the memory under part of it and mem_recommit take it
 * again: the pool's page release (pool/pool_internal.h, "Giving memory back"). Smaller
 * allocations are cudaMalloc's. Where the driver's virtual memory calls are not
 * available, every allocation is cudaMalloc's, the backend's table has no mem_decommit
 * (pools keep their pages), and plm_device_info's page_release_bytes is 0. mem_free
 * waits for the context's streams before it unmaps (cudaFree waits for the device; the
 * driver's cuMemUnmap need not).
 *
 * A failed CUDA call is reported with its name and CUDA's error name and text, and
 * the runtime's last-error slot is cleared so a later launch check is not misled.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "streams/backend.h"
#include "streams/cuda_vmm.h"
#include "streams/error.h"
#include "streams/hash.h"

typedef struct cuda_backend cuda_backend;

/* The user data cudaLaunchHostFunc hands to the trampoline. */
typedef struct host_call_key {
  plm_host_fn fn;
  void *user;
} host_call_key;

typedef struct host_call {
  host_call_key key; /* written only while no callback can read it */
  cuda_backend *backend;
  bool pinned;            /* may be replayed by a graph: never recycled */
  bool in_free_list;      /* its callback ran and gave it back */
  struct host_call *next; /* in the free list */
  struct host_call *all;  /* in the backend's list of every record */
  UT_hash_handle hh;      /* in the interned table (pinned by a capture) */
} host_call;

struct cuda_backend {
  int device;
  int least_priority, greatest_priority;
  plm_device_info info;
  plm__cuda_vmm *vmm; /* allocations of a granule or more; NULL: cudaMalloc only */

  /* This context's streams, for synchronize. Read-locked while synchronising (so that
   * several threads may synchronise at once), write-locked to add or remove one. */
  pthread_rwlock_t streams_lock;
  cudaStream_t *streams;
  size_t stream_count, stream_capacity;

  /* Host-call records, all guarded by calls_lock: free ones (calls outside capture),
   * interned ones (calls captured into graphs), and every record made, for close. */
  pthread_mutex_t calls_lock;
  host_call *free_calls;     /* linked through next */
  host_call *captured_calls; /* a uthash table by key */
  host_call *all_calls;      /* linked through all */
};

static plm_status status_of(cudaError_t err) {
  switch (err) {
    case cudaSuccess: return PLM_OK;
    case cudaErrorMemoryAllocation: return PLM_ERR_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice: return PLM_ERR_NO_DEVICE;
    case cudaErrorNotReady: return PLM_ERR_NOT_READY;
    default: return PLM_ERR_BACKEND;
  }
}

static plm_status cuda_fail(cudaError_t err, const char *call) {
  (void)cudaGetLastError();
  return plm__fail_raw(status_of(err), "%s failed: %s (%s)", call, cudaGetErrorName(err),
                       cudaGetErrorString(err));
}

/* CUDA allows no CUDA call in a host function (cudaLaunchHostFunc): on the callback
 * thread every entry that would make one returns this instead. */
#define REFUSE_IN_CALLBACK(call)                                                         \
  do {                                                                                   \
    if (plm__in_host_callback())                                                         \
      return plm__fail_raw(PLM_ERR_INVALID_STATE,                                        \
                           "%s: called from a host callback (plm_stream_enqueue_host), " \
                           "where CUDA allows no CUDA call",                             \
                           (call));                                                      \
  } while (0)

#define CUDA_TRY(call)                                                        \
  do {                                                                        \
    REFUSE_IN_CALLBACK(#call);                                                \
    cudaError_t cuda_try_err_ = (call);                                       \
    if (cuda_try_err_ != cudaSuccess) return cuda_fail(cuda_try_err_, #call); \
  } while (0)

/* Make the context's device current; *previous receives the caller's. */
static plm_status device_enter(const cuda_backend *backend, int *previous) {
  *previous = backend->device;
  CUDA_TRY(cudaGetDevice(previous));
  if (*previous != backend->device) CUDA_TRY(cudaSetDevice(backend->device));
  return PLM_OK;
}

/* Give the caller its current device back. */
static void device_leave(const cuda_backend *backend, int previous) {
  if (previous != backend->device && cudaSetDevice(previous) != cudaSuccess)
    (void)cudaGetLastError();
}

/* Run `body` (statements that set `err`) with the context's device current.
 * `call` names the CUDA call for the message when err is not cudaSuccess. */
#define ON_DEVICE(backend, call, body)                                            \
  do {                                                                            \
    REFUSE_IN_CALLBACK(call);                                                     \
    int on_device_previous_ = 0;                                                  \
    plm_status on_device_status_ = device_enter((backend), &on_device_previous_); \
    if (on_device_status_ != PLM_OK) return on_device_status_;                    \
    cudaError_t err = cudaSuccess;                                                \
    body;                                                                         \
    device_leave((backend), on_device_previous_);                                 \
    if (err != cudaSuccess) return cuda_fail(err, (call));                        \
  } while (0)

/* ---- device information --------------------------------------------------------- */

static int attribute(enum cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return value;
}

static plm_status describe_device(int device, plm_device_info *info) {
  memset(info, 0, sizeof *info);
  info->backend = PLM_BACKEND_CUDA;
  info->device = device;
  struct cudaDeviceProp prop;
  CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  snprintf(info->name, sizeof info->name, "%s", prop.name);
  info->total_memory = prop.totalGlobalMem;
  info->multiprocessors = prop.multiProcessorCount;
  info->compute_capability_major = prop.major;
  info->compute_capability_minor = prop.minor;
  info->async_copy_engines = prop.asyncEngineCount;
  info->l2_cache_bytes = (uint64_t)prop.l2CacheSize;
  info->memory_bus_width_bits = prop.memoryBusWidth;
  info->memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, device);
  info->shared_per_block_optin =
      (uint64_t)attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  /* Double data rate: two transfers per clock, bus width in bits. */
  info->memory_bandwidth_gbps =
      2.0 * info->memory_clock_khz * 1e3 * (info->memory_bus_width_bits / 8.0) / 1e9;
  cudaDriverGetVersion(&info->driver_version);
  cudaRuntimeGetVersion(&info->runtime_version);
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) info->free_memory = free_bytes;
  (void)cudaGetLastError();
  return PLM_OK;
}

static void cuda_device_info(void *ctx, plm_device_info *out) {
  *out = ((cuda_backend *)ctx)->info;
}

static plm_status cuda_memory_info(void *ctx, uint64_t *free_bytes, uint64_t *total_bytes) {
  size_t free_now = 0, total = 0;
  ON_DEVICE(ctx, "cudaMemGetInfo", err = cudaMemGetInfo(&free_now, &total));
  *free_bytes = free_now;
  *total_bytes = total;
  return PLM_OK;
}

/* ---- memory and synchronisation ------------------------------------------------- */

/* A stream under capture (or one that an error of capture shows joined one). */
static bool capturing(cudaStream_t stream) {
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return capture != cudaStreamCaptureStatusNone;
}

static bool capture_error(cudaError_t err) {
  return err == cudaErrorStreamCaptureUnsupported || err == cudaErrorStreamCaptureInvalidated ||
         err == cudaErrorStreamCaptureImplicit || err == cudaErrorStreamCaptureWrongThread;
}

/* Wait for each of this context's streams (see the header: not cudaDeviceSynchronize),
 * passing over streams under capture; the first failure is reported after all have
 * been waited for. */
static plm_status cuda_synchronize(void *ctx) {
  REFUSE_IN_CALLBACK("synchronize");
  cuda_backend *backend = ctx;
  cudaError_t first = cudaSuccess;
  pthread_rwlock_rdlock(&backend->streams_lock);
  for (size_t i = 0; i < backend->stream_count; i++) {
    cudaStream_t stream = backend->streams[i];
    if (capturing(stream)) continue;
    cudaError_t err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess && capture_error(err)) { /* it joined a capture meanwhile */
      (void)cudaGetLastError();
      continue;
    }
    if (err != cudaSuccess && first == cudaSuccess) first = err;
  }
  pthread_rwlock_unlock(&backend->streams_lock);
  if (first != cudaSuccess) return cuda_fail(first, "cudaStreamSynchronize");
  return PLM_OK;
}

/* A granule or more: mapped physical allocations (see the header); less: cudaMalloc. */
static plm_status cuda_mem_alloc(void *ctx, size_t bytes, void **ptr) {
  cuda_backend *backend = ctx;
  if (backend->vmm && bytes >= plm__cuda_vmm_granularity(backend->vmm)) {
    REFUSE_IN_CALLBACK("cuMemCreate");
    return plm__cuda_vmm_alloc(backend->vmm, bytes, ptr);
  }
  ON_DEVICE(ctx, "cudaMalloc", err = cudaMalloc(ptr, bytes));
  return PLM_OK;
}

static plm_status cuda_mem_free(void *ctx, void *ptr) {
  cuda_backend *backend = ctx;
  if (backend->vmm && plm__cuda_vmm_owns(backend->vmm, ptr)) {
    plm_status synchronized = cuda_synchronize(ctx); /* as cudaFree waits */
    plm_status freed = plm__cuda_vmm_free(backend->vmm, ptr);
    return synchronized != PLM_OK ? synchronized : freed;
  }
  ON_DEVICE(ctx, "cudaFree", err = cudaFree(ptr));
  return PLM_OK;
}

/* The pool's page release (backend.h): only on the backend's VMM allocations, whose table
 * entries exist only when it has a VMM (cuda_iface_keeping_pages has none). */
static plm_status cuda_mem_decommit(void *ctx, void *ptr, size_t bytes) {
  REFUSE_IN_CALLBACK("cuMemUnmap");
  return plm__cuda_vmm_decommit(((cuda_backend *)ctx)->vmm, ptr, bytes);
}

static plm_status cuda_mem_recommit(void *ctx, void *ptr, size_t bytes) {
  REFUSE_IN_CALLBACK("cuMemCreate");
  return plm__cuda_vmm_recommit(((cuda_backend *)ctx)->vmm, ptr, bytes);
}

static size_t cuda_mem_decommit_unit(void *ctx) {
  return plm__cuda_vmm_granularity(((cuda_backend *)ctx)->vmm);
}

/* ---- streams ------------------------------------------------------------------ */

/* Add a stream to the list synchronize walks; false without host memory. */
static bool list_stream(cuda_backend *backend, cudaStream_t stream) {
  pthread_rwlock_wrlock(&backend->streams_lock);
  bool listed = true;
  if (backend->stream_count == backend->stream_capacity) {
    size_t capacity = backend->stream_capacity ? 2 * backend->stream_capacity : 16;
    cudaStream_t *grown = realloc(backend->streams, capacity * sizeof *grown);
    if (grown) {
      backend->streams = grown;
      backend->stream_capacity = capacity;
    } else {
      listed = false;
    }
  }
  if (listed) backend->streams[backend->stream_count++] = stream;
  pthread_rwlock_unlock(&backend->streams_lock);
  return listed;
}

static void unlist_stream(cuda_backend *backend, cudaStream_t stream);

static plm_status cuda_stream_create(void *ctx, unsigned flags, void **out) {
  cuda_backend *backend = ctx;
  int priority = 0;
  if (flags & PLM_STREAM_PRIORITY_HIGH) priority = backend->greatest_priority;
  if (flags & PLM_STREAM_PRIORITY_LOW) priority = backend->least_priority;
  cudaStream_t stream = NULL;
  ON_DEVICE(backend, "cudaStreamCreateWithPriority",
            err = cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority));
  if (!list_stream(backend, stream)) {
    cudaStreamDestroy(stream);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory to list a stream");
  }
  *out = stream;
  return PLM_OK;
}

/* A stream of another library (plm_stream_wrap): listed as plume's are, never destroyed.
 * NULL is the legacy default stream. */
static plm_status cuda_stream_adopt(void *ctx, void *native, void **out) {
  cuda_backend *backend = ctx;
  cudaStream_t stream = native ? (cudaStream_t)native : cudaStreamLegacy;
  if (stream == cudaStreamPerThread)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "native is cudaStreamPerThread, which is another stream on each thread "
                         "(plume waits for it from others): wrap the thread's stream itself");
  if (stream != cudaStreamLegacy) {
    int device = -1;
    CUDA_TRY(cudaStreamGetDevice(stream, &device));
    if (device != backend->device)
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "native is a stream of device %d, not of the context's device %d",
                           device, backend->device);
  }
  if (!list_stream(backend, stream))
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory to list a stream");
  *out = stream;
  return PLM_OK;
}

/* Forget an adopted stream after waiting for it (its owner destroys it). */
static plm_status cuda_stream_forget(void *ctx, void *handle) {
  REFUSE_IN_CALLBACK("cudaStreamSynchronize");
  unlist_stream(ctx, (cudaStream_t)handle);
  CUDA_TRY(cudaStreamSynchronize((cudaStream_t)handle));
  return PLM_OK;
}

static void unlist_stream(cuda_backend *backend, cudaStream_t stream) {
  pthread_rwlock_wrlock(&backend->streams_lock);
  for (size_t i = 0; i < backend->stream_count; i++) {
    if (backend->streams[i] == stream) {
      backend->streams[i] = backend->streams[--backend->stream_count];
      break;
    }
  }
  pthread_rwlock_unlock(&backend->streams_lock);
}

static plm_status cuda_stream_destroy(void *ctx, void *handle) {
  REFUSE_IN_CALLBACK("cudaStreamDestroy");
  cudaStream_t stream = handle;
  unlist_stream(ctx, stream);
  cudaError_t pending = cudaStreamSynchronize(stream);
  cudaError_t destroyed = cudaStreamDestroy(stream);
  if (pending != cudaSuccess) return cuda_fail(pending, "cudaStreamSynchronize");
  if (destroyed != cudaSuccess) return cuda_fail(destroyed, "cudaStreamDestroy");
  return PLM_OK;
}

/* A stream under capture is refused, not waited for: the wait would invalidate the
 * capture, and what the stream recorded runs only when the graph is launched. */
static plm_status cuda_stream_synchronize(void *ctx, void *handle) {
  (void)ctx;
  REFUSE_IN_CALLBACK("cudaStreamSynchronize");
  if (capturing((cudaStream_t)handle))
    return plm__fail_raw(PLM_ERR_INVALID_STATE,
                         "the stream is being captured into a graph: its work runs only when "
                         "the graph is launched");
  CUDA_TRY(cudaStreamSynchronize((cudaStream_t)handle));
  return PLM_OK;
}

static plm_status cuda_stream_query(void *ctx, void *handle, bool *finished) {
  (void)ctx;
  REFUSE_IN_CALLBACK("cudaStreamQuery");
  cudaError_t err = cudaStreamQuery((cudaStream_t)handle);
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    *finished = false;
    return PLM_OK;
  }
  if (err != cudaSuccess) return cuda_fail(err, "cudaStreamQuery");
  *finished = true;
  return PLM_OK;
}

static enum cudaMemcpyKind cuda_copy_kind(plm_copy_kind kind) {
  switch (kind) {
    case PLM_COPY_HOST_TO_DEVICE: return cudaMemcpyHostToDevice;
    case PLM_COPY_DEVICE_TO_HOST: return cudaMemcpyDeviceToHost;
    case PLM_COPY_DEVICE_TO_DEVICE: break;
  }
  return cudaMemcpyDeviceToDevice;
}

static plm_status cuda_stream_memcpy(void *ctx, void *handle, void *dst, const void *src,
                                     size_t bytes, plm_copy_kind kind) {
  (void)ctx;
  CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cuda_copy_kind(kind), (cudaStream_t)handle));
  return PLM_OK;
}

static plm_status cuda_stream_memset(void *ctx, void *handle, void *dst, int value, size_t bytes) {
  (void)ctx;
  CUDA_TRY(cudaMemsetAsync(dst, value, bytes, (cudaStream_t)handle));
  return PLM_OK;
}

/* ---- host callbacks ------------------------------------------------------------------- */

/* What CUDA runs: the user's function, with the thread marked as inside a callback. A
 * record that no graph may replay goes back to the free list first (its key copied). */
static void CUDART_CB run_host_call(void *data) {
  host_call *call = data;
  cuda_backend *backend = call->backend;
  pthread_mutex_lock(&backend->calls_lock);
  host_call_key key = call->key;
  if (!call->pinned) {
    call->next = backend->free_calls;
    call->in_free_list = true;
    backend->free_calls = call;
  }
  pthread_mutex_unlock(&backend->calls_lock);
  plm__set_in_host_callback(true);
  key.fn(key.user);
  plm__set_in_host_callback(false);
}

/* A record for key: while the stream is captured, the interned one (made and pinned on
 * first use); otherwise one from the free list or a new one. NULL when no host memory
 * is left. calls_lock held. */
static host_call *take_call(cuda_backend *backend, host_call_key key, bool captured) {
  host_call *call = NULL;
  if (captured) {
    HASH_FIND(hh, backend->captured_calls, &key, sizeof key, call);
    if (call) return call; /* its key is key already, and a replay may be reading it */
  } else if (backend->free_calls) {
    call = backend->free_calls;
    backend->free_calls = call->next;
    call->in_free_list = false;
    call->key = key; /* no callback reads a record in the free list */
    return call;
  }
  call = calloc(1, sizeof *call);
  if (!call) return NULL;
  call->backend = backend;
  call->key = key;
  call->pinned = captured;
  if (captured) {
    HASH_ADD(hh, backend->captured_calls, key, sizeof key, call);
    if (!PLM__HASH_ADDED(call)) {
      free(call);
      return NULL;
    }
  }
  call->all = backend->all_calls;
  backend->all_calls = call;
  return call;
}

static plm_status cuda_stream_enqueue_host(void *ctx, void *handle, plm_host_fn fn, void *user) {
  cuda_backend *backend = ctx;
  cudaStream_t stream = handle;
  REFUSE_IN_CALLBACK("cudaLaunchHostFunc");
  bool captured = capturing(stream);
  host_call_key key;
  memset(&key, 0, sizeof key);
  key.fn = fn;
  key.user = user;
  pthread_mutex_lock(&backend->calls_lock);
  host_call *call = take_call(backend, key, captured);
  pthread_mutex_unlock(&backend->calls_lock);
  if (!call) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a host callback");
  cudaError_t err = cudaLaunchHostFunc(stream, run_host_call, call);
  pthread_mutex_lock(&backend->calls_lock);
  if (err != cudaSuccess && !call->pinned) {
    call->next = backend->free_calls;
    call->in_free_list = true;
    backend->free_calls = call;
  } else if (err == cudaSuccess && !call->pinned && !call->in_free_list && capturing(stream)) {
    /* The stream joined a capture (another thread made it wait on a captured event)
     * between the check above and the launch: a graph may hold this record. */
    call->pinned = true;
  }
  pthread_mutex_unlock(&backend->calls_lock);
  if (err != cudaSuccess) return cuda_fail(err, "cudaLaunchHostFunc");
  return PLM_OK;
}

static plm_status cuda_stream_wait_event(void *ctx, void *handle, void *event) {
  (void)ctx;
  CUDA_TRY(cudaStreamWaitEvent((cudaStream_t)handle, (cudaEvent_t)event, 0));
  return PLM_OK;
}

static void free_calls(cuda_backend *backend) {
  HASH_CLEAR(hh, backend->captured_calls);
  host_call *call, *next;
  for (call = backend->all_calls; call; call = next) {
    next = call->all;
    free(call);
  }
  backend->all_calls = backend->free_calls = NULL;
}

/* ---- events ------------------------------------------------------------------- */

static plm_status cuda_event_create(void *ctx, unsigned flags, void **out) {
  unsigned cuda_flags = cudaEventDefault;
  if (flags & PLM_EVENT_DISABLE_TIMING) cuda_flags |= cudaEventDisableTiming;
  if (flags & PLM_EVENT_BLOCKING_SYNC) cuda_flags |= cudaEventBlockingSync;
  cudaEvent_t event = NULL;
  ON_DEVICE(ctx, "cudaEventCreateWithFlags", err = cudaEventCreateWithFlags(&event, cuda_flags));
  *out = event;
  return PLM_OK;
}

static void cuda_event_destroy(void *ctx, void *handle) {
  (void)ctx;
  if (cudaEventDestroy((cudaEvent_t)handle) != cudaSuccess) (void)cudaGetLastError();
}

static plm_status cuda_event_record(void *ctx, void *handle, void *stream) {
  (void)ctx;
  CUDA_TRY(cudaEventRecord((cudaEvent_t)handle, (cudaStream_t)stream));
  return PLM_OK;
}

static plm_status cuda_event_query(void *ctx, void *handle, bool *complete) {
  (void)ctx;
  REFUSE_IN_CALLBACK("cudaEventQuery");
  cudaError_t err = cudaEventQuery((cudaEvent_t)handle);
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    *complete = false;
    return PLM_OK;
  }
  if (err != cudaSuccess) return cuda_fail(err, "cudaEventQuery");
  *complete = true;
  return PLM_OK;
}

static plm_status cuda_event_synchronize(void *ctx, void *handle) {
  (void)ctx;
  CUDA_TRY(cudaEventSynchronize((cudaEvent_t)handle));
  return PLM_OK;
}

static plm_status cuda_event_elapsed_ms(void *ctx, void *start, void *end, float *ms) {
  (void)ctx;
  CUDA_TRY(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end));
  return PLM_OK;
}

/* ---- pinned host memory ------------------------------------------------------------ */

static plm_status cuda_host_register(void *ctx, void *ptr, size_t bytes) {
  ON_DEVICE(ctx, "cudaHostRegister", err = cudaHostRegister(ptr, bytes, cudaHostRegisterPortable));
  return PLM_OK;
}

static void cuda_host_unregister(void *ctx, void *ptr) {
  (void)ctx;
  if (cudaHostUnregister(ptr) != cudaSuccess) (void)cudaGetLastError();
}

/* ---- cudaMallocAsync, the anchor ---------------------------------------------------- */

/* Create the pool with the context's device current (cudaMemPoolCreate and its
 * attributes take it explicitly, but keep the caller's device untouched anyway). */
static cudaError_t create_async_pool(int device, bool allow_stream_waits, cudaMemPool_t *out,
                                     const char **call) {
  struct cudaMemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = NULL;
  *call = "cudaMemPoolCreate";
  cudaError_t err = cudaMemPoolCreate(&pool, &props);
  if (err != cudaSuccess) return err;
  uint64_t keep_all = UINT64_MAX;
  int internal_dependencies = allow_stream_waits ? 1 : 0;
  *call = "cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold)";
  err = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all);
  if (err == cudaSuccess) {
    *call = "cudaMemPoolSetAttribute(cudaMemPoolReuseAllowInternalDependencies)";
    err = cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies,
                                  &internal_dependencies);
  }
  if (err != cudaSuccess) {
    cudaMemPoolDestroy(pool);
    return err;
  }
  *out = pool;
  return cudaSuccess;
}

static plm_status cuda_async_pool_create(void *ctx, bool allow_stream_waits, void **out) {
  cuda_backend *backend = ctx;
  cudaMemPool_t pool = NULL;
  const char *call = "cudaMemPoolCreate";
  int previous = 0;
  plm_status status = device_enter(backend, &previous);
  if (status != PLM_OK) return status;
  cudaError_t err = create_async_pool(backend->device, allow_stream_waits, &pool, &call);
  device_leave(backend, previous);
  if (err != cudaSuccess) return cuda_fail(err, call);
  *out = pool;
  return PLM_OK;
}

/* An adopted pool must give memory this context's device may read and write: its own
 * pool, or another device's pool that was given access (cudaMemPoolSetAccess). */
static plm_status cuda_async_pool_adopt(void *ctx, void *pool) {
  cuda_backend *backend = ctx;
  struct cudaMemLocation location = {.type = cudaMemLocationTypeDevice, .id = backend->device};
  enum cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
  CUDA_TRY(cudaMemPoolGetAccess(&flags, (cudaMemPool_t)pool, &location));
  if (flags != cudaMemAccessFlagsProtReadWrite)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "cfg->cuda_mem_pool %p cannot be read and written by device %d (a pool "
                         "of another device, not given access)",
                         pool, backend->device);
  return PLM_OK;
}

static plm_status cuda_async_pool_trim(void *ctx, void *pool, size_t keep_bytes) {
  (void)ctx;
  CUDA_TRY(cudaMemPoolTrimTo((cudaMemPool_t)pool, keep_bytes));
  return PLM_OK;
}

static plm_status cuda_async_pool_reserved(void *ctx, void *pool, uint64_t *current,
                                           uint64_t *high) {
  (void)ctx;
  uint64_t now = 0, most = 0;
  CUDA_TRY(cudaMemPoolGetAttribute((cudaMemPool_t)pool, cudaMemPoolAttrReservedMemCurrent, &now));
  CUDA_TRY(cudaMemPoolGetAttribute((cudaMemPool_t)pool, cudaMemPoolAttrReservedMemHigh, &most));
  *current = now;
  *high = most;
  return PLM_OK;
}

static void cuda_async_pool_destroy(void *ctx, void *pool) {
  (void)ctx;
  if (cudaMemPoolDestroy((cudaMemPool_t)pool) != cudaSuccess) (void)cudaGetLastError();
}

static plm_status cuda_async_alloc(void *ctx, void *pool, size_t bytes, void *stream, void **ptr) {
  (void)ctx;
  CUDA_TRY(cudaMallocFromPoolAsync(ptr, bytes, (cudaMemPool_t)pool, (cudaStream_t)stream));
  return PLM_OK;
}

static plm_status cuda_async_free(void *ctx, void *pool, void *ptr, void *stream) {
  (void)ctx;
  (void)pool;
  CUDA_TRY(cudaFreeAsync(ptr, (cudaStream_t)stream));
  return PLM_OK;
}

/* ---- kernel launches ------------------------------------------------------------- */

static plm_status cuda_device_enter(void *ctx, int *previous) {
  return device_enter(ctx, previous);
}

static void cuda_device_leave(void *ctx, int previous) {
  device_leave(ctx, previous);
}

/* ---- the backend ------------------------------------------------------------------ */

/* ---- graphs ------------------------------------------------------------------------ */

/* Relaxed capture: other threads may go on using CUDA (allocating, querying events)
 * while one of the pipeline's streams is being captured. */
/* Under the stream list's write lock: no capture begins while synchronize checks and
 * waits (see the header). */
static plm_status cuda_stream_capture_begin(void *ctx, void *handle) {
  cuda_backend *backend = ctx;
  REFUSE_IN_CALLBACK("cudaStreamBeginCapture");
  pthread_rwlock_wrlock(&backend->streams_lock);
  cudaError_t err = cudaStreamBeginCapture((cudaStream_t)handle, cudaStreamCaptureModeRelaxed);
  pthread_rwlock_unlock(&backend->streams_lock);
  if (err != cudaSuccess) return cuda_fail(err, "cudaStreamBeginCapture");
  return PLM_OK;
}

/* End the capture and instantiate it; the graph itself is only needed until then, and
 * is destroyed on every path. */
static plm_status cuda_stream_capture_end(void *ctx, void *handle, void **out) {
  cudaGraph_t graph = NULL;
  cudaError_t end_err = cudaStreamEndCapture((cudaStream_t)handle, &graph);
  if (end_err != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    return cuda_fail(end_err, "cudaStreamEndCapture");
  }
  int previous = 0;
  plm_status status = device_enter(ctx, &previous);
  if (status != PLM_OK) {
    cudaGraphDestroy(graph);
    return status;
  }
  cudaGraphExec_t exec = NULL;
  cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  device_leave(ctx, previous);
  if (err != cudaSuccess) return cuda_fail(err, "cudaGraphInstantiate");
  *out = exec;
  return PLM_OK;
}

static plm_status cuda_graph_launch(void *ctx, void *graph, void *handle) {
  (void)ctx;
  CUDA_TRY(cudaGraphLaunch((cudaGraphExec_t)graph, (cudaStream_t)handle));
  return PLM_OK;
}

static void cuda_graph_destroy(void *ctx, void *graph) {
  (void)ctx;
  if (cudaGraphExecDestroy((cudaGraphExec_t)graph) != cudaSuccess) (void)cudaGetLastError();
}

/* cudaStreamIsCapturing, which CUDA allows during a capture. In a host callback, where
 * CUDA allows no call at all, the answer is the cautious one: capturing (leave it alone). */
static bool cuda_stream_capturing(void *ctx, void *handle) {
  (void)ctx;
  return plm__in_host_callback() || capturing((cudaStream_t)handle);
}

/* Events that order one graph's work after work outside it (the previous frame's
 * update of a pipeline's state): captured as external event nodes, which record or wait
 * at each replay; the plain calls outside a capture. */
static plm_status cuda_event_record_external(void *ctx, void *event, void *stream) {
  (void)ctx;
  cudaStream_t s = (cudaStream_t)stream;
  CUDA_TRY(cudaEventRecordWithFlags(
      (cudaEvent_t)event, s, capturing(s) ? cudaEventRecordExternal : cudaEventRecordDefault));
  return PLM_OK;
}

static plm_status cuda_stream_wait_event_external(void *ctx, void *stream, void *event) {
  (void)ctx;
  cudaStream_t s = (cudaStream_t)stream;
  CUDA_TRY(cudaStreamWaitEvent(s, (cudaEvent_t)event,
                               capturing(s) ? cudaEventWaitExternal : cudaEventWaitDefault));
  return PLM_OK;
}

static void cuda_close(void *ctx) {
  cuda_backend *backend = ctx;
  plm__cuda_vmm_close(backend->vmm);
  free_calls(backend);
  free(backend->streams);
  pthread_mutex_destroy(&backend->calls_lock);
  pthread_rwlock_destroy(&backend->streams_lock);
  free(backend);
}

static const plm__backend_iface cuda_iface = {
    /* .kind                = */ PLM_BACKEND_CUDA,
    /* .close               = */ cuda_close,
    /* .device_info         = */ cuda_device_info,
    /* .memory_info         = */ cuda_memory_info,
    /* .synchronize         = */ cuda_synchronize,
    /* .mem_alloc           = */ cuda_mem_alloc,
    /* .mem_free            = */ cuda_mem_free,
    /* .mem_decommit        = */ cuda_mem_decommit,
    /* .mem_recommit        = */ cuda_mem_recommit,
    /* .mem_decommit_unit   = */ cuda_mem_decommit_unit,
    /* .stream_create       = */ cuda_stream_create,
    /* .stream_destroy      = */ cuda_stream_destroy,
    /* .stream_synchronize  = */ cuda_stream_synchronize,
    /* .stream_query        = */ cuda_stream_query,
    /* .stream_memcpy       = */ cuda_stream_memcpy,
    /* .stream_memset       = */ cuda_stream_memset,
    /* .stream_enqueue_host = */ cuda_stream_enqueue_host,
    /* .stream_wait_event   = */ cuda_stream_wait_event,
    /* .stream_launch_host_kernel = */ NULL,
    /* .device_enter        = */ cuda_device_enter,
    /* .device_leave        = */ cuda_device_leave,
    /* .event_create        = */ cuda_event_create,
    /* .event_destroy       = */ cuda_event_destroy,
    /* .event_record        = */ cuda_event_record,
    /* .event_query         = */ cuda_event_query,
    /* .event_synchronize   = */ cuda_event_synchronize,
    /* .event_elapsed_ms    = */ cuda_event_elapsed_ms,
    /* .host_register       = */ cuda_host_register,
    /* .host_unregister     = */ cuda_host_unregister,
    /* .async_pool_create   = */ cuda_async_pool_create,
    /* .async_pool_adopt    = */ cuda_async_pool_adopt,
    /* .async_pool_destroy  = */ cuda_async_pool_destroy,
    /* .async_alloc         = */ cuda_async_alloc,
    /* .async_free          = */ cuda_async_free,
    /* .async_pool_trim     = */ cuda_async_pool_trim,
    /* .async_pool_reserved = */ cuda_async_pool_reserved,
    /* .stream_capture_begin = */ cuda_stream_capture_begin,
    /* .stream_capture_end  = */ cuda_stream_capture_end,
    /* .graph_launch        = */ cuda_graph_launch,
    /* .graph_destroy       = */ cuda_graph_destroy,
    /* .stream_capturing    = */ cuda_stream_capturing,
    /* .event_record_external      = */ cuda_event_record_external,
    /* .stream_wait_event_external = */ cuda_stream_wait_event_external,
    /* .stream_adopt               = */ cuda_stream_adopt,
    /* .stream_forget              = */ cuda_stream_forget,
};

/* The table of a backend without the driver's virtual memory calls: the same, less the
 * page release (NULL: pools keep their pages). Made once, from cuda_iface. */
static plm__backend_iface cuda_iface_keeping_pages;
static pthread_once_t keeping_pages_once = PTHREAD_ONCE_INIT;

static void make_iface_keeping_pages(void) {
  cuda_iface_keeping_pages = cuda_iface;
  cuda_iface_keeping_pages.mem_decommit = NULL;
  cuda_iface_keeping_pages.mem_recommit = NULL;
  cuda_iface_keeping_pages.mem_decommit_unit = NULL;
}

/* The backend's VMM (streams/cuda_vmm.h), or none with the reason kept in the device's
 * description: page_release_bytes says which. */
static plm_status open_vmm(cuda_backend *backend) {
  const char *why = "";
  plm_status status = plm__cuda_vmm_open(backend->device, &backend->vmm, &why);
  if (status == PLM_OK)
    backend->info.page_release_bytes = backend->vmm ? plm__cuda_vmm_granularity(backend->vmm) : 0;
  return status;
}

void plm__cuda_device_count(int *count, const char **reason) {
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    *count = 0;
    *reason = cudaGetErrorName(err);
    return;
  }
  *count = devices;
  *reason = devices > 0 ? "" : "cudaGetDeviceCount found no device";
}

plm_status plm__cuda_backend_open(int device, const plm__backend_iface **iface, void **ctx) {
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess) return cuda_fail(err, "cudaGetDeviceCount");
  if (devices == 0) return plm__fail_raw(PLM_ERR_NO_DEVICE, "no CUDA device is visible");
  if (device >= devices)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "device %d is out of range: %d CUDA device(s)",
                         device, devices);
  cuda_backend *backend = calloc(1, sizeof *backend);
  if (!backend) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the backend");
  backend->device = device;
  pthread_rwlock_init(&backend->streams_lock, NULL);
  pthread_mutex_init(&backend->calls_lock, NULL);
  int previous = 0;
  plm_status status = device_enter(backend, &previous);
  if (status == PLM_OK) {
    status = describe_device(device, &backend->info);
    if (status == PLM_OK) {
      err = cudaDeviceGetStreamPriorityRange(&backend->least_priority, &backend->greatest_priority);
      if (err != cudaSuccess) status = cuda_fail(err, "cudaDeviceGetStreamPriorityRange");
    }
    device_leave(backend, previous);
  }
  if (status == PLM_OK) status = open_vmm(backend);
  if (status != PLM_OK) {
    cuda_close(backend);
    return status;
  }
  pthread_once(&keeping_pages_once, make_iface_keeping_pages);
  *iface = backend->vmm ? &cuda_iface : &cuda_iface_keeping_pages;
  *ctx = backend;
  return PLM_OK;
}

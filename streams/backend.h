/* streams/backend.h: the interface every backend implements (internal).
 *
 * A backend is a table of functions plus a context pointer (`void *ctx`) that the
 * table's functions receive first. The public wrappers in streams/ check every
 * argument before calling in, so an implementation may assume: pointers are
 * valid, streams and events belong to this backend context, sizes are non-zero
 * and ranges do not wrap. Implementations report failures with plm__fail_raw()
 * (no function name); the public wrapper adds its name.
 *
 * Streams and events are opaque `void *` handles owned by the backend (a
 * cudaStream_t, or the host backend's worker). Entries marked (optional) may be
 * NULL; the wrapper then falls back as stated.
 *
 * Threading: every entry may be called from any thread, concurrently, except
 * that a handle is never destroyed while another call uses it.
 */
#ifndef PLUME_STREAMS_BACKEND_H
#define PLUME_STREAMS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/context.h"
#include "plume/event.h"
#include "plume/stream.h"

/* The most bytes of arguments a CPU kernel launch carries. */
enum { PLM__KERNEL_ARGS_MAX = 192 };

typedef struct plm__backend_iface {
  plm_backend kind;

  /* Release the backend context. Every stream and event is already destroyed. */
  void (*close)(void *ctx);

  /* Static figures of the device (everything but free_memory may be cached). */
  void (*device_info)(void *ctx, plm_device_info *out);

  /* (optional) Free and total device memory now. NULL: free_memory is reported as
   * device_info left it. */
  plm_status (*memory_info)(void *ctx, uint64_t *free_bytes, uint64_t *total_bytes);

  /* Block until all work on all of this context's streams has finished. */
  plm_status (*synchronize)(void *ctx);

  /* Synchronous device memory, 256-byte aligned. mem_free waits until the device
   * no longer uses the memory. */
  plm_status (*mem_alloc)(void *ctx, size_t bytes, void **ptr);
  plm_status (*mem_free)(void *ctx, void *ptr);

  /* (optional, both or neither) The physical memory under part of a mem_alloc block:
   * mem_decommit gives back what lies under [ptr, ptr + bytes) while the addresses stay
   * the block's (the contents are lost; nothing may be using the range), and
   * mem_recommit makes the range usable again (contents undefined). The pool calls
   * them on whole pages of free blocks (pool/pool_internal.h, "Giving memory back").
   * NULL: the pool keeps every page it has reserved until the chunk goes back. */
  plm_status (*mem_decommit)(void *ctx, void *ptr, size_t bytes);
  plm_status (*mem_recommit)(void *ctx, void *ptr, size_t bytes);
  /* (with mem_decommit) The unit mem_decommit gives back: only the units wholly inside
   * a range go (the host's system page; cuda's physical allocation granularity, 2 MiB).
   * A power of two, reported as plm_device_info.page_release_bytes. A mem_alloc block of
   * at least this size starts on a unit boundary, so that pages counted from its base are
   * whole units. */
  size_t (*mem_decommit_unit)(void *ctx);

  plm_status (*stream_create)(void *ctx, unsigned flags, void **stream);
  /* Wait for the stream's pending work, then release it. */
  plm_status (*stream_destroy)(void *ctx, void *stream);
  plm_status (*stream_synchronize)(void *ctx, void *stream);
  plm_status (*stream_query)(void *ctx, void *stream, bool *finished);
  plm_status (*stream_memcpy)(void *ctx, void *stream, void *dst, const void *src, size_t bytes,
                              plm_copy_kind kind);
  plm_status (*stream_memset)(void *ctx, void *stream, void *dst, int value, size_t bytes);
  plm_status (*stream_enqueue_host)(void *ctx, void *stream, plm_host_fn fn, void *user);
  plm_status (*stream_wait_event)(void *ctx, void *stream, void *event);
  /* (optional) Run fn(args) in stream order on a host thread, with a copy of the
   * args_size (<= PLM__KERNEL_ARGS_MAX) bytes at args: how CPU kernels are launched.
   * NULL: the backend runs its own kernels (cuda). */
  plm_status (*stream_launch_host_kernel)(void *ctx, void *stream, void (*fn)(const void *args),
                                          const void *args, size_t args_size);
  /* (optional) Make the context's device current on the calling thread while an op
   * enqueues its own kernels (CUDA refuses a kernel launch on a stream of another
   * device than the current one), *previous receiving the thread's device; then
   * device_leave(previous) gives it back. NULL: the backend has no current device. */
  plm_status (*device_enter)(void *ctx, int *previous);
  void (*device_leave)(void *ctx, int previous);

  plm_status (*event_create)(void *ctx, unsigned flags, void **event);
  void (*event_destroy)(void *ctx, void *event);
  plm_status (*event_record)(void *ctx, void *event, void *stream);
  plm_status (*event_query)(void *ctx, void *event, bool *complete);
  plm_status (*event_synchronize)(void *ctx, void *event);
  /* Both events recorded, with timing, by the wrapper's checks; may answer
   * PLM_ERR_NOT_READY. */
  plm_status (*event_elapsed_ms)(void *ctx, void *start, void *end, float *ms);

  /* (optional) Page-lock host memory for asynchronous copies, and undo it. NULL:
   * the memory is used as it is (the host backend needs nothing more). */
  plm_status (*host_register)(void *ctx, void *ptr, size_t bytes);
  void (*host_unregister)(void *ctx, void *ptr);

  /* (optional) The backend's own stream-ordered allocator (cudaMallocAsync on a
   * cudaMemPool with release threshold UINT64_MAX), the anchor pools are measured
   * against. NULL: PLM_POOL_CUDA_ASYNC is unsupported. */
  plm_status (*async_pool_create)(void *ctx, bool allow_stream_waits, void **pool);
  /* (optional) Check that a pool the caller owns (a cudaMemPool_t) can serve this
   * context's device, before the entries below use it as `pool`; it is never given
   * to async_pool_destroy. NULL: adopting a pool is unsupported. */
  plm_status (*async_pool_adopt)(void *ctx, void *pool);
  void (*async_pool_destroy)(void *ctx, void *pool);
  plm_status (*async_alloc)(void *ctx, void *pool, size_t bytes, void *stream, void **ptr);
  plm_status (*async_free)(void *ctx, void *pool, void *ptr, void *stream);
  plm_status (*async_pool_trim)(void *ctx, void *pool, size_t keep_bytes);
  /* Bytes the backend's pool holds now, and the most it has held. */
  plm_status (*async_pool_reserved)(void *ctx, void *pool, uint64_t *current, uint64_t *high);

  /* (optional) Graph capture and replay (CUDA graphs). capture_begin puts the stream
   * in capture mode: work enqueued on it (and on streams that wait on events recorded
   * in it) is recorded, not run, until capture_end, which turns the recording into an
   * executable graph. graph_launch enqueues one replay on a stream; graph_destroy
   * releases it (after the replays already enqueued have finished, as CUDA does).
   * NULL: graphs are unsupported on this backend. */
  plm_status (*stream_capture_begin)(void *ctx, void *stream);
  plm_status (*stream_capture_end)(void *ctx, void *stream, void **graph);
  plm_status (*graph_launch)(void *ctx, void *graph, void *stream);
  void (*graph_destroy)(void *ctx, void *graph);
  /* (optional) Whether the stream is being captured now (it began a capture, or joined
   * one by waiting on an event recorded in it): querying it, synchronising it or
   * recording an event on it for anything but the graph would break the capture, or put
   * the event into the graph. A capture may begin on another thread right after the
   * answer. NULL: streams are never captured. */
  bool (*stream_capturing)(void *ctx, void *stream);
  /* (optional) event_record and stream_wait_event for an event that orders work of one
   * graph after work outside it: in a capture they become external event nodes, which
   * record or wait at each replay (cudaEventRecordExternal, cudaEventWaitExternal);
   * outside a capture they are the plain calls. NULL: the plain calls always. */
  plm_status (*event_record_external)(void *ctx, void *event, void *stream);
  plm_status (*stream_wait_event_external)(void *ctx, void *stream, void *event);
  /* (optional) Another library's stream (plm_stream_wrap): stream_adopt checks `native`
   * and lists it as the backend's own streams are (synchronize covers it); stream_forget
   * waits for it and unlists it, and never destroys it. NULL: the backend's streams are
   * plume's only (the host backend), and plm_stream_wrap shares a plume stream. */
  plm_status (*stream_adopt)(void *ctx, void *native, void **stream);
  plm_status (*stream_forget)(void *ctx, void *stream);
} plm__backend_iface;

/* Open the host backend (device must be 0; the wrapper checks). threads > 0: its kernels
 * run on a pool of that many threads of its own (plm_context_config.host_threads, checked
 * by the wrapper); 0: on the process-wide pool. */
plm_status plm__host_backend_open(int threads, const plm__backend_iface **iface, void **ctx);

/* Open CUDA device `device`. PLM_ERR_NO_DEVICE when there is none, with the CUDA
 * error in the message; PLM_ERR_UNSUPPORTED in a build without CUDA. */
plm_status plm__cuda_backend_open(int device, const plm__backend_iface **iface, void **ctx);

/* CUDA devices visible: 0 with a reason (a CUDA error name, or "built without
 * CUDA") when there are none. Never fails. */
void plm__cuda_device_count(int *count, const char **reason);

/* Whether automatic choices (PLM_BACKEND_AUTO, the placement model) may pick cuda: a
 * device is visible and it is a GPU, not the CUDA emulator of an emulated build, which
 * runs only where cuda is asked for by name. */
bool plm__cuda_auto_eligible(void);

#endif /* PLUME_STREAMS_BACKEND_H */

/* plume/stream.h: streams, asynchronous copies and host callbacks.
 *
 * A stream is an in-order queue of work on a context's device. Work enqueued on
 * one stream runs in the order it was enqueued; work on different streams may run
 * concurrently, and only events (plume/event.h) order it across streams.
 *
 * Asynchronous means: the call returns once the work is queued; the work runs
 * later, and the buffers it names must stay valid (and, for sources, unchanged)
 * until it has run. Use plm_stream_synchronize, an event or a host callback to
 * learn when.
 *
 * Thread safety: every function here is thread-safe, and a stream may be used from
 * several threads at once; work enqueued concurrently from two threads is ordered
 * by whichever enqueue happened first. A stream must not be destroyed while
 * another thread is still using it.
 *
 * On cuda a stream is a cudaStream_t created with cudaStreamNonBlocking (it never
 * synchronises with the legacy default stream). On host it is a worker thread.
 */
#ifndef PLUME_STREAM_H
#define PLUME_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "plume/context.h"
#include "plume/export.h"
#include "plume/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct plm_stream plm_stream;
typedef struct plm_event plm_event; /* see plume/event.h */

/* Stream creation flags. At most one priority flag may be given. */
enum {
  PLM_STREAM_DEFAULT = 0,
  /* Scheduling priority: on cuda the device's greatest (HIGH) or least (LOW)
   * stream priority; the host backend records it but has no preemption to apply. */
  PLM_STREAM_PRIORITY_HIGH = 1u << 0,
  PLM_STREAM_PRIORITY_LOW = 1u << 1
};

typedef enum plm_copy_kind {
  PLM_COPY_HOST_TO_DEVICE = 1,
  PLM_COPY_DEVICE_TO_HOST = 2,
  PLM_COPY_DEVICE_TO_DEVICE = 3
} plm_copy_kind;

/* A function run by plm_stream_enqueue_host. */
typedef void (*plm_host_fn)(void *user);

/* Create a stream. Blocks briefly (starts a worker thread on host). Errors:
 * PLM_ERR_INVALID_ARG (ctx or out NULL, unknown flag bits, both priorities). */
PLM_API plm_status plm_stream_create(plm_context *ctx, unsigned flags, plm_stream **out);

/* A plume stream over a stream plume did not create, so that plume's work goes where the
 * caller's library puts its own (CuPy's or PyTorch's current stream) instead of beside it:
 *   cuda   native is a cudaStream_t of the context's device (NULL: the legacy default
 *          stream; cudaStreamPerThread is refused: it is another stream on each thread). plume enqueues on it and never
 *          destroys it: plm_stream_destroy waits for it and forgets it; its owner must
 *          destroy it after that, not before.
 *   host   the host backend's streams are plume's own worker threads: native must be a
 *          plm_stream * of ctx, and the new stream shares its worker (the same order).
 *          The shared stream cannot be destroyed while a wrapper of it lives.
 * The stream has no flags. Errors: PLM_ERR_INVALID_ARG (ctx or out NULL; on host, native
 * NULL or not a stream of ctx; on cuda, a stream of another device), PLM_ERR_BACKEND (on
 * cuda, native is not a stream), PLM_ERR_OUT_OF_MEMORY. */
PLM_API plm_status plm_stream_wrap(plm_context *ctx, void *native, plm_stream **out);

/* Destroy a stream. Blocks until the work already enqueued on it has finished,
 * then releases it (a plm_stream_wrap stream: forgets it). NULL is a no-op. Errors:
 * PLM_ERR_INVALID_STATE (a host stream that plm_stream_wrap streams still share: destroy
 * them first; nothing changes). */
PLM_API plm_status plm_stream_destroy(plm_stream *stream);

/* Block until all work enqueued on the stream before this call has finished. */
PLM_API plm_status plm_stream_synchronize(plm_stream *stream);

/* Set *finished to whether all work enqueued so far has finished. Never blocks. */
PLM_API plm_status plm_stream_query(plm_stream *stream, bool *finished);

/* The context a stream belongs to. */
PLM_API plm_status plm_stream_context(const plm_stream *stream, plm_context **out);

/* The flags the stream was created with. */
PLM_API plm_status plm_stream_flags(const plm_stream *stream, unsigned *out);

/* The backend's own stream, for work from other libraries in this stream's order (cuBLAS:
 * cublasSetStream(handle, (cudaStream_t)native)): on cuda the cudaStream_t, valid until
 * plm_stream_destroy. Work enqueued on it directly is ordered with the stream's, and the
 * caller keeps the device current (the context's device) for it. Errors:
 * PLM_ERR_INVALID_ARG (NULL arguments), PLM_ERR_UNSUPPORTED (the host backend, whose
 * streams are plume's own worker threads). */
PLM_API plm_status plm_stream_native_handle(const plm_stream *stream, void **native);

/* Asynchronously copy bytes from src to dst, in stream order. kind says which
 * side is device memory of the stream's context. bytes 0 is a no-op. Errors:
 * PLM_ERR_INVALID_ARG (NULL stream, NULL dst or src with bytes > 0, unknown kind,
 * a range that wraps around the address space, overlapping ranges on the same
 * side). On cuda, a pageable (not pinned) host buffer makes the copy synchronous
 * with the host, as cudaMemcpyAsync does; use pinned memory to overlap. */
PLM_API plm_status plm_stream_memcpy(plm_stream *stream, void *dst, const void *src, size_t bytes,
                                     plm_copy_kind kind);

/* Asynchronously set bytes of device memory to (unsigned char)value, in stream
 * order. bytes 0 is a no-op. Errors: PLM_ERR_INVALID_ARG (NULL stream, NULL dst
 * with bytes > 0, a range that wraps around). */
PLM_API plm_status plm_stream_memset(plm_stream *stream, void *dst, int value, size_t bytes);

/* Run fn(user) on a host thread once all work enqueued on the stream before it has
 * finished; work enqueued after it waits for fn to return. Asynchronous: this
 * call returns at once. fn must not call plume functions that enqueue work or
 * may wait for it (stream, event and synchronising calls, plm_device_free,
 * plm_stream_destroy, plm_pool_alloc, plm_pool_trim, plm_pool_destroy), as with
 * cudaLaunchHostFunc: waiting on its own stream from inside it would deadlock, and on
 * cuda a host function may make no CUDA call at all. Both backends detect the
 * waiting ones and fail them with PLM_ERR_INVALID_STATE, and on cuda every call that
 * would reach CUDA fails so too. plm_pool_free on a PLM_POOL_POOLED pool makes no
 * backend call and is allowed; on the other modes it gives the block upstream and is
 * refused. fn should return quickly, since it holds up the stream (on cuda, possibly
 * the host functions of other streams too).
 * Errors: PLM_ERR_INVALID_ARG (NULL stream or fn). */
PLM_API plm_status plm_stream_enqueue_host(plm_stream *stream, plm_host_fn fn, void *user);

/* Make all work enqueued on stream after this call wait until the work captured by
 * the event's most recent plm_event_record has finished. A device-side wait: the
 * host does not block. An event never recorded imposes no wait. Errors:
 * PLM_ERR_INVALID_ARG (NULL stream or event, event from another context). */
PLM_API plm_status plm_stream_wait_event(plm_stream *stream, plm_event *event);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_STREAM_H */

/* streams/error.h: raising errors inside plume.
 *
 * Public functions check their arguments at the boundary and fail with
 *   return plm__fail(PLM_ERR_INVALID_ARG, "flags 0x%x has unknown bits", flags);
 * which stores "plm_stream_create: flags 0x9 has unknown bits" (the calling
 * function's name comes from __func__) in the thread's message and returns the
 * status.
 *
 * Code below the boundary (backends, the pool's internals) has no public name to
 * give, so it describes only what failed with plm__fail_raw(); the public function
 * that called it then adds its own name with plm__propagate(status) on the way out.
 */
#ifndef PLUME_STREAMS_ERROR_H
#define PLUME_STREAMS_ERROR_H

#include <stdbool.h>

#include "plume/status.h"

#ifdef __cplusplus
extern "C" { /* CUDA kernels (C++) report errors through these too */
#endif

#if defined(__GNUC__)
#define PLM__PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define PLM__PRINTF(fmt_index, first_arg)
#endif

/* Set the thread's message to "func: <formatted>" and return status. */
plm_status plm__fail_in(const char *func, plm_status status, const char *fmt, ...)
    PLM__PRINTF(3, 4);

/* Set the thread's message to "<formatted>" and return status. */
plm_status plm__fail_raw(plm_status status, const char *fmt, ...) PLM__PRINTF(2, 3);

/* Prefix the thread's message with "func: " and return status; PLM_OK passes
 * through untouched, so `return plm__propagate(status);` ends any wrapper. */
plm_status plm__propagate_in(const char *func, plm_status status);

/* Whether this thread is running a host callback (plm_stream_enqueue_host), on either
 * backend (each marks the thread around the user's function). Functions that may wait
 * for streams refuse to run there: waiting on the callback's own stream would
 * deadlock; on cuda, every backend entry that makes a CUDA call refuses as well. */
bool plm__in_host_callback(void);
void plm__set_in_host_callback(bool inside);

/* Refuse, at the API boundary, a call that may wait for streams when made from a
 * host callback. */
#define PLM__REFUSE_IN_HOST_CALLBACK()                                                  \
  do {                                                                                  \
    if (plm__in_host_callback())                                                        \
      return plm__fail(PLM_ERR_INVALID_STATE,                                           \
                       "called from a host callback (plm_stream_enqueue_host); it may " \
                       "wait for streams, which would deadlock");                       \
  } while (0)

#define plm__fail(status, ...) plm__fail_in(__func__, (status), __VA_ARGS__)
#define plm__propagate(status) plm__propagate_in(__func__, (status))

/* Check an argument at the API boundary; on failure return from the caller. */
#define PLM__REQUIRE_NOT_NULL(arg)                                             \
  do {                                                                         \
    if ((arg) == NULL) return plm__fail(PLM_ERR_INVALID_ARG, #arg " is NULL"); \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif /* PLUME_STREAMS_ERROR_H */

/* plume/status.h: status codes and error messages.
 *
 * Every public function returns a plm_status: PLM_OK (0) on success, a negative
 * code on failure. A failing call also leaves a message for the calling thread,
 * read with plm_last_error(), that names the function, the argument and the bad
 * value, for example "plm_stream_create: flags 0x9 has unknown bits". A failure
 * inside the CUDA runtime also names the CUDA call and its error, for example
 * "plm_stream_memcpy: cudaMemcpyAsync failed: cudaErrorInvalidValue (invalid argument)".
 *
 * After a failed call the objects it was given are unchanged and still usable
 * (or destroyable), unless the function's own comment says otherwise.
 */
#ifndef PLUME_STATUS_H
#define PLUME_STATUS_H

#include "plume/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum plm_status {
  PLM_OK = 0,
  PLM_ERR_INVALID_ARG = -1,   /* an argument is NULL, out of range or inconsistent */
  PLM_ERR_OUT_OF_MEMORY = -2, /* host or device memory could not be had */
  PLM_ERR_NO_DEVICE = -3,     /* the backend asked for has no usable device */
  PLM_ERR_UNSUPPORTED = -4,   /* valid, but this build or backend cannot do it */
  PLM_ERR_BACKEND = -5,       /* the backend (the CUDA runtime, the OS) reported an error */
  PLM_ERR_IO = -6,            /* reading or writing a file failed */
  PLM_ERR_INVALID_STATE = -7, /* the object is not in a state that allows the call */
  PLM_ERR_NOT_READY = -8,     /* the work asked about has not completed yet */
  PLM_ERR_NOT_FOUND = -9,     /* a pointer or name the object does not know */
  PLM_ERR_INTERNAL = -10      /* a broken invariant inside plume: please report it */
} plm_status;

/* A short constant name for a status ("PLM_ERR_INVALID_ARG"); "unknown status" for
 * a value outside the enum. Never NULL; thread-safe. */
PLM_API const char *plm_status_str(plm_status status);

/* The message of the most recent failed plume call on this thread, or "" when no
 * call on this thread has failed. Successful calls leave it unchanged. The string
 * belongs to the thread and stays valid until its next failing call. */
PLM_API const char *plm_last_error(void);

/* Forget this thread's message: plm_last_error() returns "" afterwards. */
PLM_API void plm_clear_error(void);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_STATUS_H */

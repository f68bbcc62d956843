/* streams/error.c: status names and the thread-local error message. */
#include "streams/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { MESSAGE_CAPACITY = 1024 };

static _Thread_local char thread_message[MESSAGE_CAPACITY];
static _Thread_local bool thread_in_host_callback;

bool plm__in_host_callback(void) {
  return thread_in_host_callback;
}

void plm__set_in_host_callback(bool inside) {
  thread_in_host_callback = inside;
}

const char *plm_status_str(plm_status status) {
  switch (status) {
    case PLM_OK: return "PLM_OK";
    case PLM_ERR_INVALID_ARG: return "PLM_ERR_INVALID_ARG";
    case PLM_ERR_OUT_OF_MEMORY: return "PLM_ERR_OUT_OF_MEMORY";
    case PLM_ERR_NO_DEVICE: return "PLM_ERR_NO_DEVICE";
    case PLM_ERR_UNSUPPORTED: return "PLM_ERR_UNSUPPORTED";
    case PLM_ERR_BACKEND: return "PLM_ERR_BACKEND";
    case PLM_ERR_IO: return "PLM_ERR_IO";
    case PLM_ERR_INVALID_STATE: return "PLM_ERR_INVALID_STATE";
    case PLM_ERR_NOT_READY: return "PLM_ERR_NOT_READY";
    case PLM_ERR_NOT_FOUND: return "PLM_ERR_NOT_FOUND";
    case PLM_ERR_INTERNAL: return "PLM_ERR_INTERNAL";
  }
  return "unknown status";
}

const char *plm_last_error(void) {
  return thread_message;
}

void plm_clear_error(void) {
  thread_message[0] = '\0';
}

/* Formatted into a buffer of its own first, so that the arguments may include the
 * thread's current message ("frame 3: %s", plm_last_error()). */
static void set_message(const char *prefix, const char *fmt, va_list args) {
  char text[sizeof thread_message];
  int used = 0;
  if (prefix) {
    used = snprintf(text, sizeof text, "%s: ", prefix);
    if (used < 0 || (size_t)used >= sizeof text) used = 0;
  }
  if (vsnprintf(text + used, sizeof text - (size_t)used, fmt, args) < 0) text[used] = '\0';
  memcpy(thread_message, text, sizeof text);
}

plm_status plm__fail_in(const char *func, plm_status status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  set_message(func, fmt, args);
  va_end(args);
  return status;
}

plm_status plm__fail_raw(plm_status status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  set_message(NULL, fmt, args);
  va_end(args);
  return status;
}

plm_status plm__propagate_in(const char *func, plm_status status) {
  if (status == PLM_OK) return PLM_OK;
  size_t prefix = strlen(func) + 2; /* "func: " */
  if (prefix >= sizeof thread_message) return status;
  size_t kept = strnlen(thread_message, sizeof thread_message - 1);
  if (kept > sizeof thread_message - 1 - prefix) kept = sizeof thread_message - 1 - prefix;
  memmove(thread_message + prefix, thread_message, kept);
  thread_message[prefix + kept] = '\0';
  memcpy(thread_message, func, prefix - 2);
  memcpy(thread_message + prefix - 2, ": ", 2);
  return status;
}

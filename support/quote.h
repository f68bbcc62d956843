/* support/quote.h: a user's value, made safe to show in a one-line message.
 *
 * The commands' messages are one line on stderr ("plume op: unknown op 'thresh'"), and
 * they show what the user typed. Shown raw, a value holding a newline splits the
 * message, an escape sequence drives the terminal, and a megabyte of text floods it.
 * quote_value shows a value in single quotes with:
 *   - a newline, tab and carriage return as \n, \t, \r; any other control character
 *     (below 0x20, DEL), a byte that is not part of well-formed UTF-8, and the UTF-8 of
 *     a C1 control (U+0080..U+009F) or of a line or paragraph separator (U+2028,
 *     U+2029) as \xNN, byte by byte;
 *   - everything else as it is: printable ASCII, a quote or a backslash included (so
 *     that a path reads as typed), and other UTF-8 characters ("données.npy");
 *   - at most QUOTE_LIMIT bytes of the value, never a character or an escape cut in
 *     two; a longer value is shown as its start followed by "..." after the quote.
 *   quote_value("thr\nesh") -> 'thr\nesh', quote_value("a\x1b[31m") -> 'a\x1b[31m'.
 * The escapes hold no control character, so escaping a second time changes nothing.
 *
 * quote_text escapes a whole message built elsewhere (the library's, which may quote a
 * user's value raw) the same way, without quotes and without QUOTE_LIMIT: what does not
 * fit in out is cut, ending in "...".
 *
 * Both write into the caller's out (size bytes, NUL-terminated; a size below 8 gives
 * "") and return out, to be used as a printf argument. They call nothing that may set
 * errno, so one may sit beside strerror(errno) among a call's arguments. Reentrant; no
 * global state.
 */
#ifndef PLUME_SUPPORT_QUOTE_H
#define PLUME_SUPPORT_QUOTE_H

#include <stddef.h>

#include "plume/status.h"

/* The most bytes of a value that quote_value shows, and room for any of its results:
 * every byte escaped (4 characters each), the quotes, "..." and the NUL. */
enum { QUOTE_LIMIT = 200, QUOTE_SIZE = 4 * QUOTE_LIMIT + 2 + 3 + 1 };

/* value quoted and escaped, as above ("(null)" for NULL). */
const char *quote_value(const char *value, char *out, size_t size);

/* text escaped, as above ("(null)" for NULL). */
const char *quote_text(const char *text, char *out, size_t size);

/* A failure's message: printf's fmt formatted (in QUOTE_MESSAGE_SIZE bytes, longer cut)
 * and escaped as quote_text into err (err_size bytes; nothing when err is NULL or
 * err_size 0); returns status, so that a reader fails in one line:
 *   return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld is short", path, k); */
enum { QUOTE_MESSAGE_SIZE = 2048 };
plm_status quote_failure(char *err, size_t err_size, plm_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* PLUME_SUPPORT_QUOTE_H */

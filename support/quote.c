/* support/quote.c: a user's value, made safe for a one-line message (support/quote.h). */
#include "support/quote.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

/* The length of the well-formed UTF-8 character at p (2 to 4 bytes) when it may be shown
 * as it is, else 0: a stray or truncated byte, an overlong form, a surrogate, a code point
 * past U+10FFFF, a C1 control, U+2028 or U+2029. */
static size_t shown_utf8_length(const unsigned char *p) {
  if (p[0] < 0xc2 || p[0] > 0xf4) return 0;
  size_t length = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
  for (size_t i = 1; i < length; i++)
    if ((p[i] & 0xc0) != 0x80) return 0; /* stops at the NUL of a truncated one */
  bool malformed = (p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
                   (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90);
  bool breaks_a_line = (p[0] == 0xc2 && p[1] < 0xa0) ||
                       (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9));
  return malformed || breaks_a_line ? 0 : length;
}

/* The character at p as it is shown, into piece; returns how many bytes of p it takes. */
static size_t escape_one(const unsigned char *p, char piece[5]) {
  unsigned char c = p[0];
  size_t length = c >= 0x80 ? shown_utf8_length(p) : c >= 0x20 && c != 0x7f ? 1 : 0;
  if (length) {
    memcpy(piece, p, length);
    piece[length] = '\0';
    return length;
  }
  static const char hex[] = "0123456789abcdef";
  const char named = c == '\n' ? 'n' : c == '\t' ? 't' : c == '\r' ? 'r' : '\0';
  piece[0] = '\\';
  if (named) {
    piece[1] = named;
    piece[2] = '\0';
  } else {
    piece[1] = 'x';
    piece[2] = hex[c >> 4];
    piece[3] = hex[c & 15];
    piece[4] = '\0';
  }
  return 1;
}

/* text escaped, at most limit bytes of it, between the quotes (quote: "'" or ""), then
 * "..." when some of it is left out. */
static const char *escape(const char *text, size_t limit, const char *quote, char *out,
                          size_t size) {
  if (!out) return "";
  if (size < 8) {
    if (size) out[0] = '\0';
    return out;
  }
  if (!text) {
    memcpy(out, "(null)", 7);
    return out;
  }
  const unsigned char *p = (const unsigned char *)text;
  const size_t q = strlen(quote);
  size_t n = q, taken = 0;
  memcpy(out, quote, q);
  while (p[taken]) {
    char piece[5];
    size_t bytes = escape_one(p + taken, piece), width = strlen(piece);
    /* Room for the piece, the closing quote, "..." unless it is the last, and the NUL. */
    size_t ellipsis = p[taken + bytes] ? 3 : 0;
    if (taken + bytes > limit || n + width + q + ellipsis + 1 > size) break;
    memcpy(out + n, piece, width);
    n += width;
    taken += bytes;
  }
  memcpy(out + n, quote, q);
  n += q;
  if (p[taken]) {
    memcpy(out + n, "...", 3);
    n += 3;
  }
  out[n] = '\0';
  return out;
}

const char *quote_value(const char *value, char *out, size_t size) {
  return escape(value, QUOTE_LIMIT, "'", out, size);
}

const char *quote_text(const char *text, char *out, size_t size) {
  return escape(text, SIZE_MAX, "", out, size);
}

plm_status quote_failure(char *err, size_t err_size, plm_status status, const char *fmt, ...) {
  if (err && err_size) {
    char message[QUOTE_MESSAGE_SIZE];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    quote_text(message, err, err_size);
  }
  return status;
}

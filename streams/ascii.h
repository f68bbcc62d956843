/* streams/ascii.h: names compared without case as ASCII, whatever locale the program plume
 * lives in set (internal; header only, so that the tools and libplume_io use it too).
 *
 * strcasecmp follows LC_CTYPE: under tr_TR, 'I' is not the capital of 'i', so a folder's
 * "A.TIF" was no ".tif" frame to plume inside a program that had called setlocale(LC_ALL, "")
 * in Turkey. The names plume matches without case (backends, file extensions, formats) are
 * ASCII, and only ASCII letters fold here; every other byte is compared as it is.
 */
#ifndef PLUME_STREAMS_ASCII_H
#define PLUME_STREAMS_ASCII_H

#include <stddef.h>
#include <stdint.h>

static inline int plm__ascii_lower(unsigned char c) {
  return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* As strncasecmp in the C locale: < 0, 0 or > 0 over at most n bytes. */
static inline int plm__ascii_ncasecmp(const char *a, const char *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const int x = plm__ascii_lower((unsigned char)a[i]), y = plm__ascii_lower((unsigned char)b[i]);
    if (x != y || x == 0) return x - y;
  }
  return 0;
}

/* As strcasecmp in the C locale. */
static inline int plm__ascii_casecmp(const char *a, const char *b) {
  return plm__ascii_ncasecmp(a, b, SIZE_MAX);
}

#endif /* PLUME_STREAMS_ASCII_H */

/* support/count_parse.c: counts and sizes of the command line (support/count_parse.h). */
#include "support/count_parse.h"

#include <stddef.h>

bool count_parse(const char *text, const char **end, uint64_t min, uint64_t max,
                 uint64_t *value) {
  const char *p = text;
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') {
    unsigned digit = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
    p++;
  }
  if (p == text || v < min || v > max) return false;
  if (end)
    *end = p;
  else if (*p != '\0')
    return false;
  *value = v;
  return true;
}

bool size_parse(const char *text, uint64_t min, uint64_t max, int64_t *height, int64_t *width) {
  const char *end = NULL;
  uint64_t h = 0, w = 0;
  if (!count_parse(text, &end, min, max, &h) || *end != ',' ||
      !count_parse(end + 1, NULL, min, max, &w))
    return false;
  *height = (int64_t)h;
  *width = (int64_t)w;
  return true;
}

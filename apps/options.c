/* apps/options.c: "--flag value" options of the plume commands (apps/options.h). */
#include "apps/options.h"

#include <stdio.h>
#include <string.h>

#include "tools/quote.h"

int options_take(const char *command, const char *usage, option *options, int argc, char **argv) {
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    const char *equals = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
    size_t flag_length = equals ? (size_t)(equals - arg) : strlen(arg);
    option *o = NULL;
    for (option *p = options; p->flag; p++)
      if (strlen(p->flag) == flag_length && strncmp(arg, p->flag, flag_length) == 0) o = p;
    if (!o) {
      char q[QUOTE_SIZE];
      fprintf(stderr, "plume %s: unknown argument %s (see plume %s --help)\n", command,
              quote_value(arg, q, sizeof q), command);
      return EXIT_USAGE;
    }
    if (o->is_switch && equals) {
      fprintf(stderr, "plume %s: option %s takes no value\n", command, o->flag);
      return EXIT_USAGE;
    }
    if (!o->is_switch && !equals && i + 1 >= argc) {
      fprintf(stderr, "plume %s: option %s needs a value\n", command, o->flag);
      return EXIT_USAGE;
    }
    if (*o->value) {
      fprintf(stderr, "plume %s: option %s is given twice\n", command, o->flag);
      return EXIT_USAGE;
    }
    *o->value = o->is_switch ? "" : equals ? equals + 1 : argv[++i];
  }
  return -1;
}

bool options_parse_count(const char *text, const char **end, uint64_t min, uint64_t max,
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

bool options_parse_size(const char *text, uint64_t min, uint64_t max, int64_t *height,
                        int64_t *width) {
  const char *end = NULL;
  uint64_t h = 0, w = 0;
  if (!options_parse_count(text, &end, min, max, &h) || *end != ',' ||
      !options_parse_count(end + 1, NULL, min, max, &w))
    return false;
  *height = (int64_t)h;
  *width = (int64_t)w;
  return true;
}

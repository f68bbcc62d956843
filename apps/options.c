/* apps/options.c: "--flag value" options of the plume commands (apps/options.h). */
#include "apps/options.h"

#include <stdio.h>
#include <string.h>

#include "support/quote.h"

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

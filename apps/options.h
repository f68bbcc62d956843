/* apps/options.h: the options of the `plume` commands that take "--flag value" pairs
 * (scene, score, detect, demo).
 *
 * A command lists its flags in a table of {flag, &value} ending in {NULL, NULL} and
 * passes its arguments to options_take, which accepts "--flag value" and "--flag=value",
 * each flag at most once, and leaves each value (NULL when not given) in its pointer. A
 * switch (a flag without a value, such as --keep) is listed with its own .is_switch:
 * its value is set to "" when given. Messages are one line on stderr, starting
 * "plume <command>: "; every command shows a value it was given through quote_value
 * (support/quote.h), quoted and escaped, never raw. The values' counts and sizes are read
 * by support/count_parse.h. Reentrant.
 */
#ifndef PLUME_APPS_OPTIONS_H
#define PLUME_APPS_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "support/count_parse.h" /* the counts and sizes the commands parse */

/* The exit codes of every plume command: 0 success; 1 a runtime failure (the device, the
 * memory, a full disk, an interruption reports 128 + the signal); 2 bad usage or a bad
 * input file, found before anything is written. */
enum { EXIT_RUNTIME_FAILURE = 1, EXIT_USAGE = 2 };

typedef struct option {
  const char *flag;   /* "--frames"; NULL ends the table */
  const char **value; /* where the value goes */
  bool is_switch;     /* takes no value; *value becomes "" when given */
} option;

/* Take the arguments: returns -1 to go on, 0 after printing usage to stdout (-h,
 * --help), else 2 (bad usage) after a message naming the argument. */
int options_take(const char *command, const char *usage, option *options, int argc, char **argv);

#endif /* PLUME_APPS_OPTIONS_H */

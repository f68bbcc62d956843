/* support/count_parse.h: the counts and sizes of the command line (internal to the tools):
 * `plume scene --frames 2000 --size 512,512`, `--streams 3`, `--skip-frames 10`. Plain
 * decimal digits only: no sign, no spaces, no 0x, no exponent, so that "1e3" or "-1" is
 * refused rather than read as something else.
 * Reentrant; a failure leaves every output as it was. Fuzzed by tests/fuzz/fuzz_numbers.c. */
#ifndef PLUME_SUPPORT_COUNT_PARSE_H
#define PLUME_SUPPORT_COUNT_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* A decimal integer of digits only, from min to max; with end, the parse stops at the
 * first non-digit and *end is left there, else the whole text must be digits. */
bool count_parse(const char *text, const char **end, uint64_t min, uint64_t max,
                 uint64_t *value);

/* "H,W": two such integers from min to max. */
bool size_parse(const char *text, uint64_t min, uint64_t max, int64_t *height, int64_t *width);

#endif /* PLUME_SUPPORT_COUNT_PARSE_H */

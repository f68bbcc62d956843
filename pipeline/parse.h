/* pipeline/parse.h: the values of text pipelines (internal; parse_kernel.c). The
 * messages are raw and name the key. */
#ifndef PLUME_PIPELINE_PARSE_H
#define PLUME_PIPELINE_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "plume/status.h"

/* A decimal integer of digits only (no sign, no spaces) in min..max. With end, *end is
 * left after the digits; without, the digits must be all of text. */
bool plm__parse_int(const char *text, const char **end, int64_t min, int64_t max, int64_t *value);

/* A finite number (strtod, no leading space); end as for plm__parse_int. */
bool plm__parse_number(const char *text, const char **end, double *value);

/* The taps (malloc'd, row-major) and size of a conv2d element's kernel=spec, with
 * size=KHxKW (NULL when not given) for inline values; plume/pipeline.h has the grammar. */
plm_status plm__parse_kernel(const char *spec, const char *size, float **taps, int *height,
                             int *width);

#endif /* PLUME_PIPELINE_PARSE_H */

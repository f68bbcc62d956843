/* pipeline/parse.h: conv2d kernels of text pipelines (internal; parse_kernel.c; the
 * parameters' values are ops/op_params.c's). The messages are raw and name the key. */
#ifndef PLUME_PIPELINE_PARSE_H
#define PLUME_PIPELINE_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/op_desc.h"
#include "plume/status.h"

/* The taps (malloc'd, row-major) and size of a conv2d element's kernel=spec, with
 * size=KHxKW (NULL when not given) for inline values; plume/pipeline.h has the grammar. */
plm_status plm__parse_kernel(const char *spec, const char *size, float **taps, int *height,
                             int *width);

#endif /* PLUME_PIPELINE_PARSE_H */

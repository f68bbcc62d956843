/* pipeline/parse.h: the parts of the text form that other rooms of pipeline/ use
 * (internal): conv2d kernels (parse_kernel.c) and a node's parameters given as text
 * (parse.c; the values are read by ops/op_params.c). The messages are raw and name the
 * key. */
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

/* The parameters of a node of op added by name (plm_pipeline_add): the schema's defaults,
 * then text's "key=value ..." pairs (NULL or "": none), read as an element of the text
 * form reads them, with dtype the node's first input's (for the keys required or refused
 * by it) and kh, kw its kernel's size (1, 1 without one: conv2d's padding=same). Only the
 * schema's keys are taken; an unknown key's message lists them. */
plm_status plm__parse_node_params(const plm__op_desc *op, const char *text, plm_dtype dtype, int kh,
                                  int kw, plm__op_params *params);

#endif /* PLUME_PIPELINE_PARSE_H */

/* pipeline/parse.h: the parts of the text form below the text pipeline (internal): one
 * element's name, pairs and parameters (parse_element.c; the values are read by
 * ops/op_params.c), which the text pipeline (parse.c) and a node added by name (graph.c)
 * share, and conv2d kernels (parse_kernel.c). The messages are raw and name the key; an
 * element's name the element too. */
#ifndef PLUME_PIPELINE_PARSE_H
#define PLUME_PIPELINE_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/op_desc.h"
#include "plume/status.h"
#include "streams/error.h"

/* The taps (malloc'd, row-major) and size of a conv2d element's kernel=spec, with
 * size=KHxKW (NULL when not given) for inline values; plume/pipeline.h has the grammar. */
plm_status plm__parse_kernel(const char *spec, const char *size, float **taps, int *height,
                             int *width);

/* The taps (malloc'd) and length of a 1-D kernel given as key=spec (sepconv2d's kernel_x,
 * kernel_y): box:K, gauss:K:SIGMA (1-D, normalised to sum 1) or inline values, at most
 * PLM_CONV2D_MAX_KERNEL of them; log: is refused (not separable). */
plm_status plm__parse_kernel_1d(const char *key, const char *spec, float **taps, int *length);

/* One element of the text form: its name and key=value pairs, pointing into the text it
 * was cut from. index counts from 1 in a text; 0 for a node added by name, whose caller
 * names the node in its messages. */
enum { PLM__ELEMENT_MAX_PAIRS = 16 };

typedef struct plm__pair {
  const char *key, *value;
} plm__pair;

typedef struct plm__element {
  int index;
  const char *name;
  plm__pair pairs[PLM__ELEMENT_MAX_PAIRS];
  int count;
} plm__element;

/* Cut one element's text (writable, NUL-terminated: the pairs point into it) into its name
 * and pairs; a word that is not key=value, a key given twice or too many keys are refused. */
plm_status plm__element_split(char *text, plm__element *e);

/* The value of key, or NULL when the element does not give it. */
const char *plm__element_value(const plm__element *e, const char *key);

/* PLM_ERR_INVALID_ARG with the message, prefixed "element N 'name': " in a text. */
plm_status plm__element_fail(const plm__element *e, const char *fmt, ...) PLM__PRINTF(2, 3);

/* The op's parameters: the schema's defaults, then what the element gives. Which are
 * required or refused may depend on dtype, the element's first input's; kh, kw: its
 * kernel's size (1, 1 without one). The keys are not checked here (the caller knows
 * which others an element may give). */
plm_status plm__element_params(const plm__element *e, const plm__op_desc *op, plm_dtype dtype,
                               int kh, int kw, plm__op_params *params);

/* The parameters of a node of op added by name (plm_pipeline_add): the schema's defaults,
 * then text's "key=value ..." pairs (NULL or "": none), read as an element of the text
 * form reads them, with dtype the node's first input's (for the keys required or refused
 * by it) and kh, kw its kernel's size (1, 1 without one: conv2d's padding=same). Only the
 * schema's keys are taken; an unknown key's message lists them. */
plm_status plm__parse_node_params(const plm__op_desc *op, const char *text, plm_dtype dtype, int kh,
                                  int kw, plm__op_params *params);

#endif /* PLUME_PIPELINE_PARSE_H */

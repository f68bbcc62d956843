/* plume/op_info.h: the table of operations, read at run time.
 *
 * Every operation is described once inside the library (its descriptor: name, operands,
 * parameter schema); the text form of pipelines, `plume op` and the Python module's
 * plume.ops are built from it. These calls let a program outside the library (the Python
 * module through ctypes, a binding generator, a GUI) list the ops, their inputs and their
 * parameters without naming any: op indices run 0..plm_op_count()-1 in the table's order,
 * parameter and input indices 0..param_count-1 and 0..input_count-1 of plm_op_info.
 *
 * The strings are the library's own, static: valid for the life of the process. The
 * calls are thread-safe and never block.
 */
#ifndef PLUME_OP_INFO_H
#define PLUME_OP_INFO_H

#include <stdbool.h>

#include "plume/export.h"
#include "plume/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct plm_op_info {
  const char *name;    /* "threshold": the text form's element */
  const char *summary; /* one line */
  int input_count;
  int output_count;
  int param_count;
  /* Whether the text form of a pipeline (plm_pipeline_parse) can start with it on a frame:
   * false for the ops the planner makes alone (the fused op) and those that read a count
   * made by the element before (regions). */
  bool in_text;
  bool stateful; /* carries a state from frame to frame in a pipeline (background) */
  /* What it writes, exactly, and the public reference it matches: a few sentences of
   * Markdown naming the parameters (the op's header, include/plume/, is the contract). */
  const char *details;
} plm_op_info;

typedef struct plm_op_input_info {
  const char *name; /* the slot's name: "in", "gain", "kernel" */
  /* The dtypes it accepts: bit (1u << dtype) set for each plm_dtype taken. */
  unsigned dtype_mask;
  char dtypes[64]; /* the same, and the shape, for help: "u8, u16 or f32", "f32 (H, W)" */
  bool optional;
  /* Given in the text form as name=@TENSOR (a named tensor: nuc's gain, conv2d's
   * kernel) rather than by the chain. */
  bool by_name;
} plm_op_input_info;

typedef struct plm_op_param_info {
  const char *name;
  /* "int", "number", "choice" (one of choices), "pair" ("A,B" as form says), "range"
   * ("LO,HI" or "auto"): how the text form writes its value. */
  const char *type;
  const char *const *choices; /* choice: the names, NULL-terminated; else NULL */
  const char *form;           /* pair: "SY,SX"; else NULL */
  const char *help;           /* one line */
  bool required;              /* no default: the text must give it */
  bool required_for_float;    /* required when the op's first input is f32 */
  char default_text[64];      /* the default as the text form writes it; "" when required */
} plm_op_param_info;

/* The number of operations in the table. */
PLM_API int plm_op_count(void);

/* Operation `op` (0..plm_op_count()-1). Errors: PLM_ERR_INVALID_ARG (NULL out, op out of
 * range). */
PLM_API plm_status plm_op_info_get(int op, plm_op_info *out);

/* Input `input` of operation `op`. Errors: PLM_ERR_INVALID_ARG (NULL out, either index out
 * of range). */
PLM_API plm_status plm_op_input_info_get(int op, int input, plm_op_input_info *out);

/* Parameter `param` of operation `op`. Errors: PLM_ERR_INVALID_ARG (NULL out, either index
 * out of range). */
PLM_API plm_status plm_op_param_info_get(int op, int param, plm_op_param_info *out);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_OP_INFO_H */

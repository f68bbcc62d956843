/* ops/op_desc.h: one descriptor per operation, listed once (internal).
 *
 * Every operation is a plm__op_desc defined in its own ops/<op>.c and named once, by its
 * line in plume/op_functions.h's list of every op (PLM__OP_MAP below), which generates the
 * kind enum, the parameters union of a pipeline node, the table (ops/op_table.c) and the
 * public functions. Everything that handles "an op" reads the
 * descriptor instead of naming the op:
 *
 *   ops/op_dispatch.c     the one path from arguments to a kernel: the checks, the
 *                         scratch, device enter/leave, NVTX and the CPU/CUDA choice;
 *                         the public plm_<op> functions are one call into it;
 *   pipeline/           graph (output shapes), plan (scratch), run (enqueue with the
 *                         arguments compile checked), cost, describe;
 *   pipeline/parse.c      the text form's keys, values, defaults and messages come from
 *                         the slots and the parameter schema;
 *   apps/, benchmarks/,   `plume op`, bench_ops and the fixture runner list and build
 *   tests/test_fixtures   ops from the table.
 *
 * A descriptor says:
 *   details   what it writes, exactly, and the public reference it matches (the op
 *             reference and Python's help print it);
 *   operands  input and output slots: name, whether optional, the dtypes accepted (a
 *             mask, PLM__DTYPE_MASK: the dispatch checks it, and the help, the op
 *             reference and Python's signatures are made from it), how the text form
 *             gives it (its role), which inputs an output may be exactly (in place);
 *   params    a schema over the op's parameter struct: for each field its name, type,
 *             offset, default, range or choices, and flags; the default struct of every
 *             op (plm_<op>_params_default) is built from it (plm__op_params_default);
 *   check     the op's own rules on operands and parameters, on tensor descriptions:
 *             dtypes, shapes, parameter values (a NULL params included). Absent
 *             operands (NULL) are skipped: the dispatch decides what is required. Raw
 *             messages naming the operand ("in->dtype f64 is not u8, u16 or f32");
 *   shapes    the outputs' shapes of checked inputs and parameters;
 *   cost      bytes moved and flops of a checked call (plm_op_cost);
 *   pack      the kernels' argument struct of a checked call (args_size bytes), with the
 *             scratch's address; cpu(args) runs on a host stream's worker, cuda(stream,
 *             args) launches on a cudaStream_t. Scratch: cpu_scratch(args) and
 *             cuda_scratch(args) bytes (NULL: none);
 *   or, for an op composed of others (segment), its own scratch_bytes and enqueue;
 *   tunables  the knobs of its kernels that a measurement may set per device (ops/op_tuning.h):
 *             for each its name, backend, candidate values and default (today's constant).
 *             pack reads the value in force from call->tuning (plm__op_tuned), resolved
 *             once per call by the public entries and once per step by a pipeline's
 *             compile; a call without one (NULL) runs with the defaults.
 *   sample    valid operands and parameters of a requested size, as PyTorch's OpInfo's
 *             sample_inputs: bench_ops' workloads, the cross-backend test of every op
 *             (tests/test_op_samples.c) and the fuzzers start from it. The hook allocates
 *             nothing: it describes (the inputs' dtypes and shapes, a carried state's, the
 *             outputs made, the parameters) and, given host buffers the caller allocated
 *             for those shapes, fills them, deterministic from the request's seed
 *             (splitmix64, kernels/common/splitmix64.h). The caller makes the tensors and
 *             uploads (support/op_sample.h does it on a stream); see "samples" below.
 *
 * What the dispatch owns, so no op repeats it: stream and tensor checks (data set,
 * contiguous, of the stream's context), overlap rules (every output is disjoint from
 * every other operand, except exactly the memory of an input its slot allows), the
 * scratch checks and the scratch taken from the context's default pool for a public
 * call, and the choice of backend.
 */
#ifndef PLUME_OPS_OP_DESC_H
#define PLUME_OPS_OP_DESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/common/hold_reach.h"
#include "plume/plume.h"
#include "streams/runtime.h"

/* The parameters of the ops whose public functions take them as plain arguments. */
typedef struct plm__regions_params {
  int64_t capacity; /* the table's rows; 0 in a pipeline: the labels' bound */
} plm__regions_params;

typedef struct plm__segment_params {
  plm_segment_params segment;
  int64_t capacity; /* as regions' */
} plm__segment_params;

typedef struct plm__no_params {
  int unused;
} plm__no_params;

/* Every operation, in the order of its kind: the list of plume/op_functions.h, whose
 * lines are X(op, PARAMS, SHAPE_IN, IN, OUT, FORM). Adding an op is one line there and its
 * descriptor plm__op_<op> in ops/<file>.c; its kind is PLM__OP_<op> and its parameters
 * PLM__OP_PARAMS_TYPE(op, PARAMS): plm_<op>_params, plm__no_params, or the
 * plm__<op>_params above for PLM_OP_OWN_PARAMS. */
#define PLM__OP_MAP(X) PLM_OP_FUNCTIONS_MAP(X)
#define PLM__OP_PARAMS_TYPE(op, PARAMS) PLM_OP__CAT(PLM__OP_PARAMS_TYPE_, PARAMS)(op)
#define PLM__OP_PARAMS_TYPE_PLM_OP_PARAMS(op) plm_##op##_params
#define PLM__OP_PARAMS_TYPE_PLM_OP_NO_PARAMS(op) plm__no_params
#define PLM__OP_PARAMS_TYPE_PLM_OP_OWN_PARAMS(op) plm__##op##_params

typedef enum plm__op_kind {
#define PLM__OP_KIND(op, PARAMS, SHAPE_IN, IN, OUT, FORM) PLM__OP_##op,
  PLM__OP_MAP(PLM__OP_KIND)
#undef PLM__OP_KIND
      PLM__OP_COUNT
} plm__op_kind;

/* A node's or step's parameters: the op's struct, under the op's name. */
typedef union plm__op_params {
#define PLM__OP_PARAMS_MEMBER(op, PARAMS, SHAPE_IN, IN, OUT, FORM) \
  PLM__OP_PARAMS_TYPE(op, PARAMS) op;
  PLM__OP_MAP(PLM__OP_PARAMS_MEMBER)
#undef PLM__OP_PARAMS_MEMBER
} plm__op_params;

enum {
  PLM__OP_MAX_IN = 7,  /* lstm_cell reads 7 */
  PLM__OP_MAX_OUT = 3, /* sobel and segment write 3 */
  PLM__OP_MAX_PARAMS = 12,
  PLM__OP_MAX_TUNABLES = 6,
  PLM__OP_MAX_CANDIDATES = 8
};

/* ---- tunables --------------------------------------------------------------------------- */

/* A knob of an op's kernels on one backend: a value among candidates, today's constant
 * the default (one of them). Which value runs changes the speed, never the result beyond
 * the op's stated tolerance (the GEMM paths round differently; band counts and CUDA
 * launch shapes not at all). Every candidate must be valid for every input the op
 * accepts: where one does not fit an input, the kernel's plan clamps it (and says how). */
typedef struct plm__op_tunable {
  const char *name;    /* "bands_per_thread" */
  plm_backend backend; /* where it acts: PLM_BACKEND_HOST or PLM_BACKEND_CUDA */
  int64_t fallback;    /* the default */
  int candidate_count;
  int64_t candidates[PLM__OP_MAX_CANDIDATES]; /* ascending */
  const char *help;                           /* one line */
} plm__op_tunable;

/* The values in force for one call, in the order of the descriptor's tunables. */
typedef struct plm__op_tuning {
  int64_t values[PLM__OP_MAX_TUNABLES];
} plm__op_tuning;

/* ---- operands --------------------------------------------------------------------------- */

/* How the text form (pipeline/parse.c) gives an input. */
typedef enum plm__input_role {
  PLM__IN_CHAIN = 0, /* the tensor the chain has reached */
  PLM__IN_TENSOR,    /* key=@NAME, the key being the slot's name */
  PLM__IN_KERNEL,    /* key=@NAME or a kernel spec: 2-D with size=KHxKW (conv2d's), or 1-D
                        (sepconv2d's, the slot's kernel_axis; plume/pipeline.h) */
  PLM__IN_FRAME,     /* key=input (the default) or none: the pipeline's input frame */
  PLM__IN_COUNT      /* the count made by the element just before, with its main output */
} plm__input_role;

/* What the text form does with an output. */
typedef enum plm__output_role {
  PLM__OUT_MADE = 0, /* made, not read on */
  PLM__OUT_MAIN,     /* the chain continues from it (one per op) */
  PLM__OUT_COUNT,    /* the chain's count: an output of the pipeline when its element is last */
  PLM__OUT_SIDE,     /* an output of the pipeline when its element is last */
  PLM__OUT_UNMADE    /* not made by the text form */
} plm__output_role;

/* A slot's dtypes, as a mask of plm_dtype bits: PLM__DTYPE_MASK(U8) | PLM__DTYPE_MASK(F32).
 * The one place an op's dtypes are written: the dispatch refuses any other ("in->dtype
 * f64 is not u8, u16 or f32") before the op's check runs, so a check never tests a dtype
 * the mask already rules out. */
#define PLM__DTYPE_MASK(D) (1u << PLM_DTYPE_##D)
/* The images and stacks of frames most ops read. */
#define PLM__DTYPES_IMAGE (PLM__DTYPE_MASK(U8) | PLM__DTYPE_MASK(U16) | PLM__DTYPE_MASK(F32))

/* Which extent of the filter a kernel input gives: both (conv2d's (KH, KW)), or the one of
 * a 1-D kernel (sepconv2d's kernel_x (KW) and kernel_y (KH)), so that the text form's
 * specs build it in one dimension and pad=same reads (KH - 1) / 2, (KW - 1) / 2. */
typedef enum plm__kernel_axis {
  PLM__KERNEL_2D = 0,
  PLM__KERNEL_ALONG_X, /* taps across a row: KW */
  PLM__KERNEL_ALONG_Y  /* taps down a column: KH */
} plm__kernel_axis;

typedef struct plm__op_slot {
  const char *name;
  unsigned dtypes;   /* the dtypes accepted: a PLM__DTYPE_MASK set (never 0) */
  const char *shape; /* for help, after the dtypes: "(H, W)", or NULL */
  bool optional;     /* inputs: may be absent; outputs: may be unwanted */
  int role;          /* plm__input_role or plm__output_role */
  unsigned in_place; /* outputs: a mask of the inputs it may be exactly (1u << slot) */
  bool labels;       /* outputs: connected-component labels (their connectivity is known) */
  bool finite;       /* inputs: a calibration or kernel, every value finite: a pipeline's
                        text refuses a named tensor for it holding a NaN or an infinity */
  plm__kernel_axis kernel_axis; /* PLM__IN_KERNEL inputs: the filter's extent it gives */
} plm__op_slot;

/* Whether the text form takes size=KHxKW for the slot's inline values: a 2-D kernel's. */
static inline bool plm__op_slot_takes_size(const plm__op_slot *slot) {
  return slot->role == PLM__IN_KERNEL && slot->kernel_axis == PLM__KERNEL_2D;
}

/* The filter's extent that a kernel input of this shape gives, written into *kh or *kw (or
 * both, for a 2-D kernel; a shape the op would refuse writes nothing). */
void plm__op_kernel_extent(const plm__op_slot *slot, int ndim, const int64_t *dims, int *kh,
                           int *kw);

/* ---- parameters ------------------------------------------------------------------------- */

typedef enum plm__param_type {
  PLM__PARAM_INT = 0, /* int, in [min, max] */
  PLM__PARAM_INT64,   /* int64_t, in [min, max] */
  PLM__PARAM_DOUBLE,  /* double, finite */
  PLM__PARAM_FLOAT,   /* float, finite in f32 */
  PLM__PARAM_CHOICE,  /* an enum (int-sized): one of choices[], whose values are values[] (or
                         their index) */
  PLM__PARAM_PAIR,    /* two ints, "A,B" (form), at offset and offset2, each in [min, max] */
  PLM__PARAM_RANGE    /* "LO,HI" (doubles at offset, offset2) or "auto" (the bool at offset3) */
} plm__param_type;

enum {
  PLM__PARAM_REQUIRED = 1u << 0,           /* no default: the text must give it */
  PLM__PARAM_REQUIRED_FOR_FLOAT = 1u << 1, /* required when the op's first input is f32 */
  PLM__PARAM_FLOAT_ONLY = 1u << 2,         /* given only for an f32 first input */
  PLM__PARAM_SAME_PADDING = 1u << 3        /* PAIR: "same" is (KH-1)/2,(KW-1)/2 of the kernel */
};

typedef struct plm__op_param {
  const char *name;
  plm__param_type type;
  size_t offset, offset2, offset3;
  double min, max;            /* INT, INT64, PAIR */
  double fallback;            /* the default (CHOICE: the value, not the index) */
  const char *const *choices; /* CHOICE: NULL-terminated */
  const int *values;          /* CHOICE: each name's value; NULL: its index */
  unsigned flags;
  const char *form; /* PAIR: "SY,SX" */
  const char *help; /* one line: what it is (`plume op`'s help) */
} plm__op_param;

/* A hold map (kernels/common/hold_reach.h), as every op that takes one (background, cfar)
 * declares it: its optional u8 (H, W) input slot, and the hold_radius field of its params
 * struct in its schema. */
#define PLM__HOLD_SLOT                                                                  \
  {                                                                                     \
    .name = "hold", .dtypes = PLM__DTYPE_MASK(U8), .shape = "(H, W)", .optional = true, \
    .role = PLM__IN_TENSOR                                                              \
  }
#define PLM__HOLD_RADIUS_PARAM(params_type)                                                      \
  {                                                                                              \
    .name = "hold_radius", .type = PLM__PARAM_INT, .offset = offsetof(params_type, hold_radius), \
    .min = 0, .max = PLM__HOLD_MAX_RADIUS, .fallback = 2,                                        \
    .help = "the pixels within this many 4-connected steps of a held one are held"               \
  }

/* ---- samples ----------------------------------------------------------------------------- */

/* What a sample is asked for. size and width are the size of the work: an image op's frame
 * (size rows of width pixels), any other op's scale (matmul's n, a batch, a count of
 * series: plm__op_sample's scale names it) from size alone. */
typedef struct plm__op_sample_request {
  int64_t size;    /* >= 1 */
  int64_t width;   /* an image's width, >= 0; 0: size (a square); other ops ignore it */
  plm_dtype dtype; /* the first input's, one of its slot's mask; 0: the op's usual one */
  uint64_t seed;   /* the data's: the same request gives the same bytes, on every platform */
} plm__op_sample_request;

/* A sample: a valid call of its op but for the tensors, which the caller makes. */
typedef struct plm__op_sample {
  plm_shape in[PLM__OP_MAX_IN]; /* each input's dtype and shape; ndim 0: absent (optional) */
  plm_shape state;              /* a stateful op's carried state; ndim 0: a fresh one */
  unsigned outputs;             /* the outputs the call makes (a mask of slots, never 0) */
  plm__op_params params;        /* the op's parameters (a checked struct) */
  const char *scale; /* what size counts ("n", "batch", "series"); NULL: an image's rows */
} plm__op_sample;

/* The host buffers a sample fills, one of plm_shape bytes for each shape it described
 * (NULL for an absent input or a fresh state). */
typedef struct plm__op_sample_data {
  void *in[PLM__OP_MAX_IN];
  void *state;
} plm__op_sample_data;

/* ---- the descriptor ----------------------------------------------------------------------- */

/* The operands and parameters of one call. Absent inputs and unwanted outputs are NULL. */
typedef struct plm__op_call {
  const plm_tensor *in[PLM__OP_MAX_IN];
  plm_tensor *out[PLM__OP_MAX_OUT];
  const void *params;
  /* An input of labels made by a labelling op (a pipeline's): its connectivity, 4 or 8;
   * else 0. regions sizes its table from it when its capacity is 0. */
  int in_connectivity[PLM__OP_MAX_IN];
  /* A stateful op's state (the descriptor's state_shape), read and written, or NULL: the
   * op then starts from a fresh state in its scratch. state_fresh: the call initialises
   * the state instead of continuing it. */
  plm_tensor *state;
  bool state_fresh;
  /* The tunables' values (ops/op_tuning.h), or NULL: the descriptor's defaults. */
  const plm__op_tuning *tuning;
} plm__op_call;

enum {
  PLM__OP_GRAPH_ONLY = 1u << 0, /* a node that compile lowers into other steps (segment) */
  PLM__OP_PLAN_ONLY = 1u << 1,  /* a step that compile makes, never a node (the fused op) */
  PLM__OP_ONE_OUTPUT = 1u << 2, /* its optional outputs: at least one must be wanted */
  /* Its operands are arrays named by their slots on the command line (--a, --b, --out-h);
   * else an image op: --in for its first input, --out for its main output. */
  PLM__OP_NAMED_OPERANDS = 1u << 3
};

typedef struct plm__op_desc {
  const char *name;    /* "entropy": the text form's element, plume op's command */
  const char *summary; /* one line */
  /* What it writes, exactly, and the public reference it matches, in a few sentences of
   * Markdown naming the parameters: the op reference (docs/operations-reference.md) and
   * Python's help print it. Every op has one (test_op_info checks it). */
  const char *details;
  plm__op_kind kind;
  unsigned flags;
  int input_count, output_count;
  plm__op_slot inputs[PLM__OP_MAX_IN];
  plm__op_slot outputs[PLM__OP_MAX_OUT];
  size_t params_size;
  int param_count;
  const plm__op_param *params;

  plm_status (*check)(const plm__op_call *call);
  /* resolved: a copy of the params the op may complete (capacity 0 -> the bound), or NULL */
  plm_status (*shapes)(const plm__op_call *call, plm_shape *out, void *resolved);
  /* Outputs flagged `labels`: their connectivity (4 or 8) under these params. */
  int (*labels_connectivity)(const void *params);
  void (*cost)(const plm__op_call *call, plm_op_cost *cost);
  /* A stateful op (NULL: stateless): the shape of the state a call carries from one call
   * to the next (call->state), for checked inputs and parameters. A pipeline keeps one
   * per node, orders the node's frames one after another and resets it on request
   * (pipeline/pipeline_internal.h). */
  void (*state_shape)(const plm__op_call *call, plm_shape *state);

  size_t args_size;
  void (*pack)(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args);
  size_t (*cpu_scratch)(const void *args);                     /* NULL: none */
  plm_status (*cuda_scratch)(const void *args, size_t *bytes); /* NULL: none */
  void (*cpu)(const void *args);
  plm_status (*cuda)(void *stream, const void *args);

  /* Composite ops (pack is NULL): their scratch and their enqueue on checked operands. */
  plm_status (*scratch_bytes)(const plm_context *ctx, const plm__op_call *call, size_t *bytes);
  plm_status (*enqueue)(plm_stream *stream, const plm__op_call *call, void *scratch);

  int tunable_count;
  const plm__op_tunable *tunables; /* NULL when tunable_count is 0 */

  /* Describe into *sample (zeroed by the caller) a valid call of a checked request's size
   * and dtype (plm__op_sample_make); with data, also fill data's buffers. Every op has one. */
  void (*sample)(const plm__op_sample_request *request, plm__op_sample *sample,
                 const plm__op_sample_data *data);
} plm__op_desc;

/* The value of op's tunable `index` in force for call: call->tuning's, else the default. */
static inline int64_t plm__op_tuned(const plm__op_desc *op, const plm__op_call *call, int index) {
  return call->tuning ? call->tuning->values[index] : op->tunables[index].fallback;
}

/* A CUDA entry of a descriptor: the function with the cuda backend built, else NULL. */
#ifdef PLM_HAVE_CUDA
#define PLM__CUDA_ENTRY(fn) (fn)
#else
#define PLM__CUDA_ENTRY(fn) NULL
#endif

/* The .cpu and .cuda entries of a descriptor whose kernels take the op's args struct
 * typed, as kernels/common declares them: void plm__<kernel>_cpu(const ARGS *) and
 * plm_status plm__<kernel>_cuda(void *stream, const ARGS *). PLM__OP_KERNEL_ENTRIES(kernel)
 * defines <kernel>_cpu_entry and <kernel>_cuda_entry, which take the args as the descriptor
 * passes them; the descriptor names them as
 *   .cpu = <kernel>_cpu_entry, .cuda = PLM__CUDA_ENTRY(<kernel>_cuda_entry).
 * (Without the cuda backend, only the CPU entry is made.) The element-wise template's
 * kernels take const void * already (kernels/common/map_ops.h). */
#define PLM__OP_CPU_KERNEL_ENTRY(kernel)             \
  static void kernel##_cpu_entry(const void *args) { \
    plm__##kernel##_cpu(args);                       \
  }
#define PLM__OP_CUDA_KERNEL_ENTRY(kernel)                                 \
  static plm_status kernel##_cuda_entry(void *stream, const void *args) { \
    return plm__##kernel##_cuda(stream, args);                            \
  }
#ifdef PLM_HAVE_CUDA
#define PLM__OP_KERNEL_ENTRIES(kernel) \
  PLM__OP_CPU_KERNEL_ENTRY(kernel) PLM__OP_CUDA_KERNEL_ENTRY(kernel)
#else
#define PLM__OP_KERNEL_ENTRIES(kernel) PLM__OP_CPU_KERNEL_ENTRY(kernel)
#endif

/* The descriptors, each defined in its op's file. */
#define PLM__OP_DECLARE(op, PARAMS, SHAPE_IN, IN, OUT, FORM) extern const plm__op_desc plm__op_##op;
PLM__OP_MAP(PLM__OP_DECLARE)
#undef PLM__OP_DECLARE

/* Choice names several ops share, in their enums' order (NULL-terminated). */
extern const char *const plm__compare_names[];      /* plm_compare (ops/threshold.c) */
extern const char *const plm__border_names[];       /* plm_border (ops/conv.c) */
extern const char *const plm__connectivity_names[]; /* "4", "8" (ops/label.c) */
extern const int plm__connectivity_values[];

/* ---- the table (ops/op_table.c) ------------------------------------------------------------ */

/* The descriptor of a kind (kind in 0..PLM__OP_COUNT-1). */
const plm__op_desc *plm__op_get(plm__op_kind kind);

/* The descriptor named `name`, or NULL. */
const plm__op_desc *plm__op_find(const char *name);

/* A kind's name ("entropy"), and its input and output slots' names ("in", "labels"). */
const char *plm__op_name(plm__op_kind kind);
const char *plm__op_input_name(plm__op_kind kind, int slot);
const char *plm__op_output_name(plm__op_kind kind, int slot);

/* The index of an input or output slot named `name`, or -1. */
int plm__op_input_index(const plm__op_desc *op, const char *name);
int plm__op_output_index(const plm__op_desc *op, const char *name);

/* A slot's dtypes and shape as help says them: "u8, u16 or f32 (H, W)". */
void plm__op_slot_text(const plm__op_slot *slot, char *text, size_t size);

/* A dtype mask as words: "u8, u16 or f32". */
void plm__dtype_mask_text(unsigned mask, char *text, size_t size);

/* Whether the text form can start a pipeline with op on a frame: not an op the planner
 * makes alone (PLM__OP_PLAN_ONLY), and no input that is the count of the element before
 * (PLM__IN_COUNT: regions reads label's). */
bool plm__op_in_text(const plm__op_desc *op);

/* ---- samples (ops/op_sample.c) ------------------------------------------------------------ */

/* op's sample of request: the request checked (PLM_ERR_INVALID_ARG: size below 1, width
 * below 0, a dtype its first input does not take; raw messages), *sample described and,
 * with data, data's buffers filled. The same request always gives the same sample and
 * bytes; nothing is allocated and no device is touched. Thread-safe. */
plm_status plm__op_sample_make(const plm__op_desc *op, const plm__op_sample_request *request,
                               plm__op_sample *sample, const plm__op_sample_data *data);

/* For the hooks. The request's dtype, or `usual` when it asks for none. */
plm_dtype plm__sample_dtype(const plm__op_sample_request *request, plm_dtype usual);

/* The request's image: (size, width) of dtype. */
plm_shape plm__sample_image(const plm__op_sample_request *request, plm_dtype dtype);

/* Fill host (shape's bytes) with values uniform over the dtype's range from the stream
 * *state (splitmix64): u8 and u16 every value, i32 0..INT32_MAX, f32 and f64 [0, 1) on a
 * grid of 2^-24 (exact in f32, whose sums in f64 are exact too). Each element takes the
 * top bits of one number. */
void plm__sample_uniform(const plm_shape *shape, void *host, uint64_t *state);

/* The middle of the values plm__sample_uniform gives for dtype (u8 127.5, f32 0.5): a
 * threshold that half of them pass. */
double plm__sample_middle(plm_dtype dtype);

/* Fill host, a u8 shape, with a mask: 1 where a random byte (one number's top 8 bits) is
 * above `above`, else 0 (127: half the pixels; 239: one in 16). */
void plm__sample_mask(const plm_shape *shape, void *host, uint64_t *state, unsigned above);

/* Fill every input and the state that sample described with plm__sample_uniform, in slot
 * order, from request's seed: the data of a sample whose values need no more than that. */
void plm__sample_fill_uniform(const plm__op_sample_request *request, const plm__op_sample *sample,
                              const plm__op_sample_data *data);

/* ---- parameter values (ops/op_params.c) ---------------------------------------------------- */

/* The field of a parameter in a params struct. */
static inline void *plm__op_param_field(void *params, size_t offset) {
  return (char *)params + offset;
}
static inline const void *plm__op_param_cfield(const void *params, size_t offset) {
  return (const char *)params + offset;
}

/* Write the schema's defaults into params (op->params_size bytes, zeroed first). */
void plm__op_params_default(const plm__op_desc *op, void *params);

/* The choice name of a CHOICE parameter's current value in params (0, when no choice is
 * 0, is the default's), or "?". */
const char *plm__op_param_choice(const plm__op_param *param, const void *params);

/* Read `value` (text) into p's field(s) of params, as the text form's key=value and
 * `plume op`'s --key value both do; kh x kw: the op's kernel (PLM__PARAM_SAME_PADDING).
 * On failure writes why into why ("'abc' is not an integer in 1..255"; the caller names
 * the key) and returns false, params unchanged. */
bool plm__op_param_parse(const plm__op_param *p, const char *value, int kh, int kw, void *params,
                         char *why, size_t size);

/* p's value in params as text, as plm__op_param_parse reads it ("3,3", "auto", "gt"). */
void plm__op_param_format(const plm__op_param *p, const void *params, char *text, size_t size);

/* Whether the schema's default of p is a value the text form could give (not required, and
 * not a "not given" that the help explains, such as a capacity of 0 below its range, or a
 * range of 0,0). */
bool plm__op_param_has_default(const plm__op_param *p);

/* A decimal integer of digits only (no sign, no spaces) in min..max. With end, *end is
 * left after the digits; without, the digits must be all of text. */
bool plm__parse_int(const char *text, const char **end, int64_t min, int64_t max, int64_t *value);

/* A finite number (strtod, no leading space; one too small for a double, 1e-400, reads
 * as the 0 or subnormal strtod gives); end as for plm__parse_int. */
bool plm__parse_number(const char *text, const char **end, double *value);

/* ---- the dispatch (ops/op_dispatch.c) -------------------------------------------------- */

/* The public op: check everything, resolve the tunables' values (unless call->tuning
 * is set), take scratch from the stream's context's default pool, enqueue, give the
 * scratch back on the stream. The message is prefixed "plm_<op>: ". */
plm_status plm__op_call_public(const plm__op_desc *op, plm_stream *stream,
                               const plm__op_call *call);

/* Any op with its scratch from the caller (a planner's workspace, a test's block) instead
 * of the context's pool: the two entries below, for every op of the table alike. Which
 * ops need scratch, and how much, is the descriptors' data (ops/op_scratch.h). Both use
 * call->tuning's values, or the defaults without, so that with the same call the size
 * one announces is the size the other uses. Raw messages (plm__fail_raw: no function
 * name), the public op's otherwise.
 *
 * plm__op_scratch_bytes: the bytes op needs on ctx's backend for call's inputs and
 * parameters (its outputs are not looked at). Refuses (PLM_ERR_INVALID_ARG) ctx or bytes
 * NULL, a required input absent, params NULL for an op with parameters, and whatever the
 * op refuses of its inputs and parameters, as its cost does (plm__op_cost). The inputs
 * are descriptions (plm__op_check_shape): their data and context are not looked at, no
 * stream is needed and nothing is enqueued, so a planner can call it at compile time.
 * Thread-safe. The answer depends only on the shapes, the parameters, the tunables'
 * values and the backend (and, on host, the CPU pool's thread count, fixed once the pool
 * has started); CUDA sizes are asked with ctx's device current (plm__op_scratch_of).
 * 0: the op needs no scratch there. */
plm_status plm__op_scratch_bytes(const plm__op_desc *op, const plm_context *ctx,
                                 const plm__op_call *call, size_t *bytes);

/* plm__op_call_with_scratch: check everything the public op checks (stream NULL
 * included), then the scratch (PLM_ERR_INVALID_ARG: scratch_bytes below what the op
 * needs, scratch NULL while some is needed, not PLM_OP_SCRATCH_ALIGN-aligned, or
 * overlapping an operand; plm__op_check_scratch) and enqueue the op using it. scratch must
 * stay untouched by other work until the stream has run the op (its use is stream-ordered
 * like the operands'), and may be reused by any work ordered after it. Nothing is
 * allocated, so a plan of such calls can be captured into a CUDA graph and replayed. */
plm_status plm__op_call_with_scratch(const plm__op_desc *op, plm_stream *stream,
                                     const plm__op_call *call, void *scratch, size_t scratch_bytes);

/* Check a call on a stream (stream NULL: descriptions, as compile checks them; no data,
 * context or overlap checks then). Raw messages. */
plm_status plm__op_check_call(const plm__op_desc *op, const plm_stream *stream,
                              const plm__op_call *call);

/* The scratch bytes of a checked call on ctx's backend. Raw messages. */
plm_status plm__op_scratch_of(const plm__op_desc *op, const plm_context *ctx,
                              const plm__op_call *call, size_t *bytes);

/* Enqueue a checked call with its scratch (at least plm__op_scratch_of bytes, or NULL
 * when none is needed): no checks, no allocation. The pipeline's run path. Raw messages. */
plm_status plm__op_enqueue(const plm__op_desc *op, plm_stream *stream, const plm__op_call *call,
                           void *scratch);

/* The output shapes of a call's inputs and parameters (outputs ignored): the inputs are
 * checked as descriptions (plm__op_check_shape), then the op's check. Raw messages. */
plm_status plm__op_shapes(const plm__op_desc *op, const plm__op_call *call, plm_shape *out,
                          void *resolved);

/* The shapes entry of an op whose one output is f32 of its first input's shape (entropy,
 * nuc, badpixel). */
plm_status plm__op_shapes_f32_like_in(const plm__op_call *call, plm_shape *out, void *resolved);

/* The cost entry of an element-wise op that reads its one input once and writes it as f32,
 * a multiply and an add (or two comparisons) per element: scale_offset, clip. */
void plm__op_cost_f32_map(const plm__op_call *call, plm_op_cost *cost);

/* The cost of a call's inputs and parameters (as plm__op_shapes checks them). Raw. */
plm_status plm__op_cost(const plm__op_desc *op, const plm__op_call *call, plm_op_cost *cost);

#endif /* PLUME_OPS_OP_DESC_H */

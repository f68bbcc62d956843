/* plume/pipeline.h: pipelines of operations, planned once and run per frame.
 *
 * A pipeline is a graph of operations (plume/ops.h) over symbolic tensors. Build it
 * node by node (plm_pipeline_add with an op's name, or its typed plm_pipeline_add_<op>)
 * or from text (plm_pipeline_parse, with named host
 * tensors plm_pipeline_parse_with_tensors), compile it once
 * (plm_pipeline_compile), then run it on frame after frame (plm_pipeline_run):
 *
 *   plm_pipeline *pl;  plm_pipe_tensor frame, edges, mask;
 *   plm_pipeline_create(ctx, &pl);
 *   plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, dims, &frame);
 *   plm_pipeline_add_sobel(pl, frame, &sobel, NULL, NULL, &edges);
 *   plm_pipeline_add_threshold(pl, edges, &above, &mask);
 *   plm_pipeline_mark_output(pl, mask);
 *   plm_pipeline_compile(pl, NULL);                      plans, allocates, blocks once
 *   plm_pipeline_run(pl, &in, &out, stream);             per frame, asynchronous
 *   plm_pipeline_destroy(pl);
 *
 * ---- the graph -----------------------------------------------------------------------
 * A plm_pipe_tensor names a tensor of one pipeline: an input (a frame the caller
 * passes to each run), a constant (host data the pipeline copies at once, owns, and
 * uploads at compile: conv2d kernels, matmul, lstm_cell and dendritic weights), or an
 * output of a node. Each add call checks its node as it is added, with the operation's
 * own shape function (plm_<op>_output), so a wrong dtype or shape is reported by the
 * node that has it, for example
 *   plm_pipeline_add_label: node 2 'label': mask->dtype f32 is not u8
 * Nodes are numbered from 0 in the order they are added. Parameters are copied; the
 * caller's structs need not outlive the call. A failed add changes nothing: the
 * pipeline stays usable. Only nodes' outputs can be marked as pipeline outputs; the
 * order of plm_pipeline_mark_output calls is the order of the run's outputs array, and
 * the order of plm_pipeline_add_input calls that of its inputs array. Nothing can be
 * added or marked after compile.
 *
 * ---- compile: the plan ---------------------------------------------------------------
 * plm_pipeline_compile plans the graph once:
 *   - lowering: segment becomes its three parts (threshold, label, regions; plume/
 *     segment.h states they are equal), so its mask lives in the workspace;
 *   - fusion: sobel (magnitude only) -> entropy (fixed range, f32) -> threshold, whose
 *     two intermediates are not outputs and have no other consumer, becomes one fused
 *     step, when the build has the fused operation and fusion is on: by default on the
 *     host backend and not on cuda, where the fused op measured slower than the three
 *     (an H200: 1,935 against 1,359 us at 4096 x 4096 f32; 123 against 82 at 512 x 512;
 *     benchmarks/results/2026-12-04-h200-d834510); cfg's PLM_PLAN_FUSE or
 *     PLM_PLAN_NO_FUSION decides instead (plm_pipeline_plan_info counts the chains
 *     found and the ones fused). Fused or not, the results are the same bits;
 *   - steps whose results no output depends on are dropped, and a sobel output that
 *     nothing reads is not computed;
 *   - a topological order (stable: the order nodes were added, where it is free);
 *   - streams: independent branches run on up to cfg->max_streams streams per frame,
 *     joined by events; the first stream is the caller's;
 *   - lifetimes and memory: every intermediate gets a fixed offset in one workspace per
 *     frame in flight (256-byte aligned), and so does the scratch of every step whose
 *     operation needs working memory besides its operands (entropy's histograms, the
 *     fused step's, label's), sized at compile for the pipeline's context from
 *     the shapes; a step's scratch is live during that step only. Two of these buffers
 *     share memory only when every use of one is ordered (by stream order or an event)
 *     before the other is written. Offsets come from the smallest of three placements
 *     (greedy by size with best fit; in order, best fit; in order, alternating the low
 *     and high end of a workspace the size of the peak of live bytes); on a chain on
 *     one stream the workspace is that peak, which no plan can beat;
 *   - in place: threshold writes its mask over its input when the input is a u8
 *     intermediate read by nothing else. No other op runs in place, not even those whose
 *     contract would allow it (lstm_cell's out_c over c, vector_add's out over a or b).
 * Inputs, outputs and constants are not in the workspace: inputs and outputs are the
 * caller's tensors, constants have a block of their own shared by all frames.
 *
 * ---- memory ----------------------------------------------------------------------------
 * At compile, cfg->frames_in_flight workspaces (one per frame slot) and the constants
 * come from cfg->pool (the context's default pool when NULL), once; they go back at
 * destroy. A run allocates nothing from any pool, on either backend: the scratch that
 * entropy, the fused step, label, ar_forecast (on cuda), and lstm_cell
 * and dendritic (from a batch size on) take from the context's default pool per call
 * when called directly (plume/entropy.h, plume/fused.h, plume/label.h,
 * plume/forecast.h, plume/lstm.h, plume/dendritic.h) is, in a pipeline, a part of the
 * slot's workspace (plm_plan_info's scratch_bytes). So every step's memory is fixed, and
 * plm_pipeline_run_stream can capture any plan into a CUDA graph. (On host, the CPU
 * conv2d and sobel kernels still malloc working buffers of their own per work chunk,
 * inside the kernel: kernels/cpu/conv.c. No pool is involved.) The exception is a plan
 * compiled with PLM_PLAN_ALLOCATE_PER_RUN (see the plan flags): it has no workspace, and
 * each run allocates and frees its intermediates, and the steps their scratch, from
 * cfg->pool.
 *
 * ---- threads and blocking ---------------------------------------------------------------
 * Building, compiling and destroying a pipeline are for one thread at a time. After
 * compile, the queries (plm_pipeline_plan_info, plm_pipeline_describe, the shapes) are
 * thread-safe. plm_pipeline_run must not be called from two threads at once on one
 * pipeline. compile and destroy block; run does not (unless the plan has
 * PLM_PLAN_ALLOCATE_PER_RUN, where it may wait as plm_pool_alloc may, or
 * PLM_PLAN_SYNCHRONOUS_STEPS);
 * none of them may be called from a host callback (plm_stream_enqueue_host).
 *
 * A pipeline belongs to its context: plm_context_destroy destroys a pipeline left
 * alive and reports it. cfg->pool must outlive the pipeline.
 */
#ifndef PLUME_PIPELINE_H
#define PLUME_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/context.h"
#include "plume/conv.h"
#include "plume/dendritic.h"
#include "plume/entropy.h"
#include "plume/export.h"
#include "plume/forecast.h"
#include "plume/label.h"
#include "plume/op_functions.h"
#include "plume/lstm.h"
#include "plume/matmul.h"
#include "plume/ops.h"
#include "plume/pool.h"
#include "plume/profile.h"
#include "plume/segment.h"
#include "plume/status.h"
#include "plume/stream.h"
#include "plume/tensor.h"
#include "plume/threshold.h"
#include "plume/tuning.h"
#include "plume/vector.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct plm_pipeline plm_pipeline;

/* A tensor of a pipeline. Handles are small values, copied freely; a zeroed handle names
 * no tensor (for optional arguments: regions' intensity). A handle of another pipeline is
 * refused. */
typedef struct plm_pipe_tensor {
  uint32_t pipeline; /* which pipeline made it (0: none) */
  uint32_t id;       /* which tensor of that pipeline */
} plm_pipe_tensor;

/* Create an empty pipeline on ctx. Errors: PLM_ERR_INVALID_ARG (NULL ctx or out),
 * PLM_ERR_OUT_OF_MEMORY. */
PLM_API plm_status plm_pipeline_create(plm_context *ctx, plm_pipeline **out);

/* Destroy a pipeline. When it is compiled, blocks until the context's device work has
 * finished (its frames among it: plm_context_synchronize), then gives its workspaces back
 * to their pool and destroys its streams and events. NULL is a no-op. */
PLM_API plm_status plm_pipeline_destroy(plm_pipeline *pl);

/* Record every step of this pipeline's runs with profiler (plume/profile.h), each as a
 * launch named after its op ("sobel", "sobel_entropy_threshold", ...) with its cost
 * model and its frame (plm_pipeline_run numbers its calls 0, 1, ...; in
 * plm_pipeline_run_stream the frame index, with the uploads "h2d" and downloads "d2h").
 * NULL detaches. The profiler must be of the pipeline's context; while attached it
 * cannot be destroyed (plm_profiler_destroy refuses). While one is attached, run_stream uses no
 * CUDA graphs (a replay has no per-step events; graphs_note says so). Not while a run is in
 * progress on another thread. Errors: PLM_ERR_INVALID_ARG (NULL pl, a profiler of another context).
 */
PLM_API plm_status plm_pipeline_set_profiler(plm_pipeline *pl, plm_profiler *profiler);

/* ---- building ------------------------------------------------------------------------
 * Every add call checks its arguments (handles of this pipeline, the op's parameters,
 * dtypes and shapes, through the op's shape function) and, on success, stores the node
 * and sets its output handles. Errors: PLM_ERR_INVALID_ARG (with the node and the
 * argument), PLM_ERR_INVALID_STATE (after compile), PLM_ERR_OUT_OF_MEMORY. */

/* A node of any operation of the table (plume/op_info.h), by its name: the general form
 * of the typed calls below (every op a node can be has one).
 *   op            the op's name, as plm_op_info names it ("entropy", "cfar"); the ops
 *                 that compile makes alone (the fused op) are refused.
 *   inputs        one handle per input slot, in plm_op_input_info's order, input_count of
 *                 them (the op's count, or fewer when the slots left out at the end are
 *                 optional); a zeroed handle, or one left out, leaves an optional slot empty.
 *                 Every input is a handle here, the ones the text form names (a kernel,
 *                 nuc's gain) and regions' count included.
 *   params        the op's parameters as the text form writes them (plm_op_param_info):
 *                 "window=16 bins=64 range=0,400"; a key not given takes its default, and
 *                 NULL or "" takes every default. Keys that name tensors in the text form
 *                 are inputs here, not parameters; an unknown key's message lists the op's.
 *   outputs       output_count places (the op's count) for the outputs' handles, in
 *                 plm_op_info's order; NULL for one not wanted, at least one wanted. An
 *                 output the op always makes is made even when not wanted (segment's
 *                 three), and a wanted optional one is made (sobel's gx, gy).
 * For example, an entropy node and a cell-averaging CFAR over a frame:
 *   plm_pipe_tensor ent, mask, count = {0};
 *   plm_pipeline_add(pl, "entropy", &frame, 1, "window=16 bins=64 range=0,400",
 *                    (plm_pipe_tensor *[]){&ent}, 1);
 *   plm_pipeline_add(pl, "cfar", &frame, 1, "window=15 guard=5 k=4",
 *                    (plm_pipe_tensor *[]){&mask}, 1);
 * The node is checked as a typed call checks it; the messages name the node and the key:
 *   plm_pipeline_add: node 1 'entropy': key 'window': '0' is not an integer in 1..255 */
PLM_API plm_status plm_pipeline_add(plm_pipeline *pl, const char *op, const plm_pipe_tensor *inputs,
                                    int input_count, const char *params,
                                    plm_pipe_tensor *const *outputs, int output_count);

/* A frame the caller passes to each run, of dtype and shape (ndim 1..4). */
PLM_API plm_status plm_pipeline_add_input(plm_pipeline *pl, plm_dtype dtype, int ndim,
                                          const int64_t *dims, plm_pipe_tensor *out);

/* A constant: the pipeline copies the tensor's bytes from host_data now and uploads them
 * at compile, once for all frames. */
PLM_API plm_status plm_pipeline_add_constant(plm_pipeline *pl, plm_dtype dtype, int ndim,
                                             const int64_t *dims, const void *host_data,
                                             plm_pipe_tensor *out);

/* Feedback from one frame to the next: a tensor whose value in each frame is the value a
 * node's output had in the previous frame (zeros in the first frame after compile and
 * after plm_pipeline_reset_state), such as a detection mask held against the background
 * (plume/background.h's hold):
 *   plm_pipe_tensor held, residual, mask;
 *   plm_pipeline_add_previous(pl, PLM_DTYPE_U8, 2, dims, &held);
 *   plm_pipeline_add_background(pl, frame, held, &bp, &residual);
 *   plm_pipeline_add_cfar(pl, residual, (plm_pipe_tensor){0}, &cp, &mask);
 *   plm_pipeline_bind_previous(pl, held, mask);
 * plm_pipeline_add_previous makes the tensor (dtype and shape as an input's), which nodes
 * read as any other; plm_pipeline_bind_previous names the node output it follows, of the
 * same dtype and shape (a value kept by one previous tensor at most). The pipeline keeps
 * it as state (plm_pipeline_plan_info's states): frames in flight and graph replays keep
 * frame order, and the frames of a batch (plm_pipeline_run_stream's batch) cannot see one
 * another's, so a pipeline with one runs a frame at a time. Errors: PLM_ERR_INVALID_ARG
 * (handles of another pipeline or kind, a previous bound twice, another dtype or shape),
 * PLM_ERR_INVALID_STATE (after compile); compile refuses a previous tensor left unbound,
 * and one that a node reads without its value depending on that node (the frame's value
 * could overwrite it before that node has read it). */
PLM_API plm_status plm_pipeline_add_previous(plm_pipeline *pl, plm_dtype dtype, int ndim,
                                             const int64_t *dims, plm_pipe_tensor *out);
PLM_API plm_status plm_pipeline_bind_previous(plm_pipeline *pl, plm_pipe_tensor previous,
                                              plm_pipe_tensor value);

/* The typed builders, one per op of plume/op_functions.h's map, made from its line:
 *   plm_pipeline_add_<op>(pl, plm_pipe_tensor IN..., const plm_<op>_params *params,
 *                         plm_pipe_tensor *OUT...)
 * plm_<op>'s operands as handles (an absent optional input: a zeroed handle) and its
 * parameters (not NULL; none for an op without); each OUT gets a tensor, and must not
 * be NULL unless its slot is optional (at least one wanted). Per op:
 *   conv2d       kernel is usually a constant (f32, KH x KW).
 *   sobel        each of gx, gy and magnitude that is not NULL gets a tensor.
 *   label        labels and count.
 *   matmul       out = act(a · b + bias). bias may be a zeroed handle (no bias); weights
 *                and bias are usually constants (plm_pipeline_add_constant).
 *   dendritic    w (N, D, I) is usually a constant. From the batch where its sums are
 *                one matmul, those sums (4·B·N·D bytes) are the step's scratch in the
 *                slot's workspace.
 *   ar_forecast  series (S, T) -> forecasts (S, horizon). On cuda the step's per-series
 *                working memory (S * ((p + 1)^2 * 2 + 3p + 2) doubles) is its scratch in
 *                the slot's workspace, so a run allocates nothing for it and the plan
 *                can be captured into a CUDA graph; on host it needs none.
 *   nuc          gain and offset are usually constants (the calibration).
 *   background   the node keeps its state in the compiled pipeline, frame after frame
 *                (plm_pipeline_reset_state starts it again).
 * The ops whose builders take other arguments follow. */
#define PLM_PIPELINE__DECLARE_BUILDER(op, PARAMS, SHAPE_IN, IN, OUT, FORM) \
  PLM_OP__IF_BUILDER(FORM, PLM_API PLM_OP_BUILDER_SIGNATURE(op, PARAMS, IN, OUT);)
PLM_OP_FUNCTIONS_MAP(PLM_PIPELINE__DECLARE_BUILDER)
#undef PLM_PIPELINE__DECLARE_BUILDER

/* plm_regions (plume/label.h) into a table of `capacity` rows, f64 (capacity,
 * PLM_REGION_COLUMNS); intensity may be a zeroed handle (no intensity columns). capacity
 * 0 means the most components the labels' frame can hold (ceil(H/2) * ceil(W/2) under
 * 8-connectivity, ceil(H*W/2) under 4), which needs labels made by a label node. */
PLM_API plm_status plm_pipeline_add_regions(plm_pipeline *pl, plm_pipe_tensor labels,
                                            plm_pipe_tensor intensity, plm_pipe_tensor count,
                                            int64_t capacity, plm_pipe_tensor *table);

/* plm_segment (plume/segment.h): labels, count and a table of `capacity` rows (0: the
 * bound above for params->connectivity). Any of the three handles may be NULL when the
 * caller does not need to name it. */
PLM_API plm_status plm_pipeline_add_segment(plm_pipeline *pl, plm_pipe_tensor image,
                                            const plm_segment_params *params, int64_t capacity,
                                            plm_pipe_tensor *labels, plm_pipe_tensor *count,
                                            plm_pipe_tensor *table);

/* plm_lstm_cell (plume/lstm.h): out_h and out_c (both made, both required). b_ih and
 * b_hh may be zeroed handles (no bias). Every operand's dtype and shape is checked when
 * the node is added. In a pipeline out_c is always a tensor of its own, never c's
 * memory. */
PLM_API plm_status plm_pipeline_add_lstm_cell(plm_pipeline *pl, plm_pipe_tensor x,
                                              plm_pipe_tensor h, plm_pipe_tensor c,
                                              plm_pipe_tensor w_ih, plm_pipe_tensor w_hh,
                                              plm_pipe_tensor b_ih, plm_pipe_tensor b_hh,
                                              plm_pipe_tensor *out_h, plm_pipe_tensor *out_c);

/* plm_vector_add (plume/vector.h): out = alpha a + beta b; params may be NULL (a + b).
 * out is a tensor of its own (never a's or b's memory). */
PLM_API plm_status plm_pipeline_add_vector_add(plm_pipeline *pl, plm_pipe_tensor a,
                                               plm_pipe_tensor b,
                                               const plm_vector_add_params *params,
                                               plm_pipe_tensor *out);

/* plm_dot (plume/vector.h): f64 (1) for (N) operands, (R) for (R, N). */
PLM_API plm_status plm_pipeline_add_dot(plm_pipeline *pl, plm_pipe_tensor a, plm_pipe_tensor b,
                                        plm_pipe_tensor *out);

/* Make a node's output a pipeline output: each run writes it into the caller's tensor
 * outputs[i], i counting the calls. Errors: PLM_ERR_INVALID_ARG (not a tensor of this
 * pipeline, an input or a constant, already an output), PLM_ERR_INVALID_STATE (after
 * compile). */
PLM_API plm_status plm_pipeline_mark_output(plm_pipeline *pl, plm_pipe_tensor t);

/* ---- text ------------------------------------------------------------------------------
 * Build a pipeline from a GStreamer-style chain over one input frame of dtype and shape:
 *
 *   sobel ! entropy window=16 bins=64 range=auto ! threshold value=4.5 ! label ! regions
 *
 * Grammar: elements separated by '!'; an element is a name followed by key=value pairs,
 * separated by spaces or tabs; a value has no spaces. Each element reads the previous
 * element's main output (the first element reads the input frame):
 *
 *   conv2d    kernel=K|@NAME (required)  stride=SY,SX (1,1)  pad=PY,PX|same (0,0)
 *             border=zero|replicate|reflect101 (zero)  size=KHxKW (inline kernels)
 *   sepconv2d kernel_x=K1|@NAME kernel_y=K1|@NAME (required), stride, pad and border as
 *             conv2d's; K1 a 1-D kernel: box:K, gauss:K:SIGMA or inline values (at most 31)
 *   sobel     border=reflect101|replicate|zero (reflect101); its output is the magnitude
 *   entropy   window=W (required)  bins=B (0; required for f32)  range=LO,HI|auto
 *             (required for f32, refused for u8 and u16)
 *   threshold value=T (required)  cmp=gt|ge|lt|le (gt)
 *   label     connectivity=4|8 (8); its main output is the labels
 *   regions   capacity=N (the bound of plm_pipeline_add_regions)  intensity=input|none
 *             (input: the pipeline's input frame); must follow label, and reads its labels
 *             and count
 *   segment   value=T (required)  cmp=gt|ge|lt|le (gt)  connectivity=4|8 (8)  capacity=N;
 *             intensity is its own input
 *   ar_forecast  lags=P (required, 1..PLM_AR_MAX_LAGS)  horizon=H (required,
 *             1..PLM_AR_MAX_HORIZON): reads an f32 (S, T) of series, outputs (S, H)
 *
 * and, with the tensors of plm_pipeline_parse_with_tensors (below), the operations whose
 * other operands are tensors; the chain's tensor is the operand after "reads":
 *
 *   matmul     b=@NAME (required)  bias=@NAME (none)  act=none|relu|sigmoid|tanh (none)
 *              precision=fp32|tf32|bf16|auto (fp32): reads a
 *   dendritic  w=@NAME (required)  mode=sigmoid|nmda|active_bp|multiplicative (sigmoid)
 *              k=K (1)  theta=T (0)  beta=B (1), each finite in f32: reads x
 *   vector_add b=@NAME (required)  alpha=A (1)  beta=B (1): reads a
 *   dot        b=@NAME (required): reads a
 *   lstm_cell  h=@NAME c=@NAME w_ih=@NAME w_hh=@NAME (required)  b_ih=@NAME b_hh=@NAME
 *              (none): reads x; its main output is out_h. h and c are constants like
 *              the weights, so every frame starts from the same state (a state that
 *              changes per frame is an input: plm_pipeline_add_lstm_cell)
 *
 * A value @NAME names the caller's tensor NAME (a tensor key takes nothing else, and no
 * other key takes one); conv2d's kernel=@NAME is that tensor instead of a kernel spec.
 * Each tensor the text names becomes a constant of the pipeline (plm_pipeline_add_constant)
 * the first time it is named; naming it again, in the same element or another, reads the
 * same constant; a tensor the text does not name is not added. The defaults are those of
 * the C API (plm_matmul_params zeroed; vector_add's NULL params: a + b) and, for dendritic's
 * k and beta, which plm_dendritic_params leaves to the caller, `plume op dendritic`'s.
 *
 * Feedback: any element takes name=NAME (letters, digits, '_', '-', '.'; each name once),
 * which names its main output, and an optional tensor key takes ~NAME, that output as the
 * previous frame left it (zeros in the first frame: plm_pipeline_add_previous, bound by
 * the text), also from an element that comes later in the chain:
 *
 *   background alpha=0.05 hold=~det ! conv2d kernel=gauss:5:1 pad=same ! cfar k=5 name=det
 *     ! label ! regions
 *
 * holds the background near the previous frame's detections (plume/background.h). A text
 * with ~NAME is read twice: first without the previous values, to learn the named
 * outputs' shapes. Errors: no element named NAME, a name given twice or not of those
 * characters, ~NAME for a required input or for a key that takes a value, and the node's
 * own check (hold=~NAME of an f32 output: "hold->dtype f32 is not u8").
 *
 * The keys are the `plume op` flags (lstm_cell's w_ih for --w-ih, as in C). Integers are
 * plain decimal digits; numbers are finite C numbers (strtod). `pad=same` is ((KH-1)/2,
 * (KW-1)/2) for odd kernels. Kernels (f32, made in double precision; c = (K-1)/2, r^2 =
 * (i-c)^2 + (j-c)^2):
 *   box:K           K x K (1..31) taps of 1/K^2;
 *   gauss:K:SIGMA   K odd, SIGMA > 0: exp(-r^2 / (2 SIGMA^2)), scaled to sum to 1;
 *   log:K:SIGMA     K odd >= 3, SIGMA > 0: the NEGATED Laplacian of Gaussian,
 *                   (1 / (pi SIGMA^4)) (1 - r^2 / (2 SIGMA^2)) exp(-r^2 / (2 SIGMA^2)), less
 *                   its mean so the taps sum to 0: positive at the centre, so a bright
 *                   blob gives a positive response and a flat image gives 0;
 *   V1,V2,...       KH*KW numbers in row-major order, with size=KHxKW, or a square
 *                   number of values without it.
 * sepconv2d's 1-D kernels (K taps, r^2 = (i-c)^2): box:K, K taps of 1/K; gauss:K:SIGMA, K
 * odd, the same form scaled to sum to 1 (its outer product with itself is conv2d's gauss:K:SIGMA up
 * to f32 rounding); V1,V2,... up to 31 numbers; log: is refused (not separable).
 *
 * Outputs, in this order: the last element's main output, then, when it is label,
 * regions or segment, the count of components (for regions, its label element's), and
 * when it is lstm_cell, out_c. So the chain above outputs the regions table and the
 * count, and "matmul b=@w act=tanh ! lstm_cell h=@h c=@c w_ih=@wi w_hh=@wh" outputs out_h
 * and out_c.
 *
 * Errors (PLM_ERR_INVALID_ARG, and *out stays NULL) name the element, counted from 1,
 * and the key: "plm_pipeline_parse: element 2 'entropy': unknown key 'windw'"; an empty
 * element (including a leading or trailing '!'), an unknown element, a key given twice,
 * a missing required key, a bad value, a tensor key given a value or a value key given
 * a tensor, an unknown @NAME (the message lists the names), or the node's own check when
 * it is added. plm_pipeline_parse is plm_pipeline_parse_with_tensors with no tensors. */
PLM_API plm_status plm_pipeline_parse(plm_context *ctx, const char *text, plm_dtype dtype, int ndim,
                                      const int64_t *dims, plm_pipeline **out);

/* A tensor in host memory that a text pipeline names as @name: dtype and shape as
 * plm_pipeline_add_constant takes them, and host_data, row-major, of that many bytes. */
typedef struct plm_named_tensor {
  const char *name; /* letters, digits, '_', '-' and '.'; unique among the tensors */
  plm_shape shape;
  const void *host_data;
} plm_named_tensor;

/* plm_pipeline_parse over the text above with count tensors (tensors may be NULL when
 * count is 0). The tensors the text names are copied during the call, as
 * plm_pipeline_add_constant copies them; neither the array, the names nor the data need
 * outlive it. Every tensor is checked first, named or not. Errors besides the text's:
 * PLM_ERR_INVALID_ARG for count negative, tensors NULL with count > 0, a NULL or empty
 * name, one with another character, a name given twice, NULL host_data, a dtype or shape
 * plm_tensor_wrap refuses (the message names tensors[i] and its name), a tensor that the
 * text gives to a slot whose values must be finite (a calibration or a kernel: nuc's gain
 * and offset, conv2d's kernel) holding a NaN or an infinity (the message names the
 * element, the key, the tensor and its first such value: "element 1 'nuc': key 'gain':
 * tensor 'gain': element [3, 7] (flat index 103) is NaN; nuc's gain must be finite"; an
 * operand such as vector_add's b may hold them), and PLM_ERR_OUT_OF_MEMORY; *out stays
 * NULL and nothing is left allocated. */
PLM_API plm_status plm_pipeline_parse_with_tensors(plm_context *ctx, const char *text,
                                                   plm_dtype dtype, int ndim, const int64_t *dims,
                                                   const plm_named_tensor *tensors, int count,
                                                   plm_pipeline **out);

/* ---- compiling -------------------------------------------------------------------------- */

enum {
  PLM_PIPELINE_MAX_FRAMES = 16, /* frames_in_flight at most */
  PLM_PIPELINE_MAX_STREAMS = 8  /* max_streams at most */
};

/* Plan flags. The last two make an eager pipeline, as code that calls the ops one by
 * one would run it: for debugging, and for measuring what planning buys (bench_pipeline's
 * `naive` and `pooled`). They combine freely with the others and with each other.
 *
 * PLM_PLAN_ALLOCATE_PER_RUN: no workspace. Each run allocates every intermediate from
 *   cfg->pool (plm_pool_alloc on the stream of the step that writes it) just before that
 *   step is enqueued, and frees it (plm_pool_free) in stream order right after its last
 *   reader is enqueued, on that reader's stream when every other use is ordered before it
 *   there, else on the run's stream after the branches have joined. Implies
 *   PLM_PLAN_NO_REUSE (nothing in place). A run can then fail with
 *   PLM_ERR_OUT_OF_MEMORY for an intermediate (the step is named; what it had allocated
 *   is freed), and frames are never captured into CUDA graphs.
 * PLM_PLAN_SYNCHRONOUS_STEPS: after enqueueing each step, the host waits for it
 *   (plm_stream_synchronize on the step's stream), so plm_pipeline_run blocks until the
 *   frame's last step has run; a step's device failure is then reported by the run that
 *   enqueued it, with the step named. Frames are never captured into CUDA graphs. */
enum {
  PLM_PLAN_DEFAULT = 0,
  PLM_PLAN_NO_FUSION = 1u << 0,         /* keep fusable chains as separate steps */
  PLM_PLAN_NO_REUSE = 1u << 1,          /* every intermediate its own memory, nothing in place */
  PLM_PLAN_ALLOCATE_PER_RUN = 1u << 2,  /* intermediates from the pool per run (above) */
  PLM_PLAN_SYNCHRONOUS_STEPS = 1u << 3, /* the host waits after every step (above) */
  PLM_PLAN_FUSE = 1u << 4               /* fuse on every backend (default: the host's only) */
};

/* A zeroed config (or NULL) means: 1 frame in flight, up to 4 streams per frame,
 * fusion on the host backend where the build has it (compile, above), the context's
 * default pool. PLM_PLAN_FUSE with PLM_PLAN_NO_FUSION is refused. */
typedef struct plm_plan_config {
  int frames_in_flight; /* K: workspaces, one per frame slot; 0 means 1 */
  int max_streams;      /* streams per frame for independent branches; 0 means 4 */
  unsigned flags;       /* PLM_PLAN_* */
  plm_pool *pool;       /* where workspaces and constants come from; NULL: default pool */
} plm_plan_config;

/* Plan the pipeline (above), create its streams and events, take K workspaces and the
 * constants' block from the pool and upload the constants. Blocks until the upload is
 * done. Errors: PLM_ERR_INVALID_ARG (cfg out of range, a pool of another context, no
 * output), PLM_ERR_INVALID_STATE (compiled already), PLM_ERR_OUT_OF_MEMORY;
 * after an error the pipeline is as it was before the call. */
PLM_API plm_status plm_pipeline_compile(plm_pipeline *pl, const plm_plan_config *cfg);

/* What the plan came to. */
typedef struct plm_plan_info {
  size_t workspace_bytes;    /* per frame slot: the intermediates and the steps' scratch
                                (0 with PLM_PLAN_ALLOCATE_PER_RUN) */
  size_t intermediate_bytes; /* the intermediates' bytes summed (each 256-aligned), scratch
                                not counted */
  size_t scratch_bytes;      /* the steps' scratch summed (each 256-aligned); the workspace
                                without reuse is intermediate_bytes + scratch_bytes */
  size_t peak_live_bytes;    /* the most intermediate and scratch bytes live at one step,
                                in the plan's order: the least any single-stream plan
                                needs */
  size_t constant_bytes;     /* the constants' block, shared by all slots */
  int frames_in_flight;      /* K */
  int nodes;                 /* nodes added */
  int steps;                 /* operations enqueued per frame */
  int fusable_chains;        /* chains the fusion pass recognised */
  int fused_steps;           /* of those, replaced by one fused step */
  int in_place;              /* steps that write over their input */
  int streams;               /* streams a frame uses, the caller's included */
  int events;                /* events per frame slot */
  double device_bytes;       /* per frame: the steps' cost models summed (plm_<op>_cost,
                                plume/ops.h: bytes read plus written in device memory;
                                a sobel step counts only the outputs it writes) */
  double flops;              /* per frame: the steps' arithmetic, likewise */
  int states; /* stateful steps (background) and previous values: their state carries over */
  size_t state_bytes;        /* their state block, shared by all slots */
} plm_plan_info;

/* The plan of a compiled pipeline. Errors: PLM_ERR_INVALID_STATE (not compiled). */
PLM_API plm_status plm_pipeline_plan_info(const plm_pipeline *pl, plm_plan_info *out);

/* A description for people: the nodes and tensors with their shapes and, once compiled,
 * the steps with their streams, events and workspace offsets, and the plan's figures.
 * Writes at most size bytes, always NUL-terminated when size > 0 (buf may be NULL when
 * size is 0), and sets *needed (when not NULL) to the bytes the whole text takes, its
 * NUL included, as snprintf does: a shorter buffer is not an error. */
PLM_API plm_status plm_pipeline_describe(const plm_pipeline *pl, char *buf, size_t size,
                                         size_t *needed);

/* ---- placement: host or cuda by the predicted time per frame -------------------------------
 * The cost model of a compiled plan against a device's calibrated peaks (plume/profile.h):
 * each step takes max(bytes / copy bandwidth, flops / FMA rate) plus the calibrated
 * launch floor (launch_us). Where a tuning table of the device is loaded (plume/tuning.h)
 * and holds measurements of a step's op (`plume tune` records, per workload, the model's
 * time and the measured one), the step takes the time those points give for its model
 * time, interpolated between the two about it (outside their span: the nearest one's
 * measured / modelled ratio). The frame is streamed, as plm_pipeline_run_stream does it:
 * its inputs go in and its outputs come out (bytes / the calibration's h2d and d2h
 * bandwidths, plus copy_latency_us per tensor; on host, memcpy into and out of the
 * context's memory; on cuda, the pinned copies over the link). The bytes and flops are
 * the plan's as compiled, so a plan compiled on host predicts the same frame on cuda. The
 * faster backend is the choice; where the two cross as the frame grows is the pipeline's
 * break-even frame size. With several frames in flight (frames_in_flight >= 2, the host not
 * waiting after every step), a frame's copies on cuda run beside another frame's steps, so
 * its time per frame is the larger of steps and copies; on host the two share the cores and
 * add up. Not modelled: branches of one frame overlapping on several streams (a frame's
 * steps are summed), and the data: the tuning points are measured on
 * content like support/scene.h's frames, and ops whose time depends on the data (entropy's
 * on how many pixels of a window share a bin, label's on the foreground) take longer or
 * shorter on other data. */
typedef struct plm_placement {
  plm_backend choice;     /* PLM_BACKEND_HOST or PLM_BACKEND_CUDA: the faster predicted */
  double host_ms;         /* predicted per frame on host, copies included; 0 without a host
                             calibration */
  double cuda_ms;         /* on cuda, copies included (overlapped when copies_overlapped);
                             0 without a cuda calibration */
  double cuda_copy_ms;    /* cuda's uploads and downloads: part of cuda_ms, or, overlapped,
                             run beside the steps (cuda_ms is then the larger of the two) */
  double input_bytes;     /* per frame: the pipeline's inputs (uploaded on cuda) */
  double output_bytes;    /* per frame: its outputs (downloaded on cuda) */
  int corrected_steps;    /* steps whose time a tuning table's points gave */
  double host_copy_ms;    /* of host_ms, the frame's copies in and out (memcpy) */
  bool copies_overlapped; /* cuda's copies overlap another frame's steps (frames in flight) */
} plm_placement;

/* Predict a compiled pipeline's time per frame on host and on cuda from their calibrations
 * (either may be NULL: that backend is not available; not both), choose the faster, and
 * keep the prediction in the pipeline: plm_pipeline_describe prints it. The tuning table
 * of the pipeline's device is loaded from its file if no call has loaded it yet (a
 * table of another device counts only once this process has loaded it: a context of that
 * device, or plm_pipeline_place). Errors:
 * PLM_ERR_INVALID_ARG (NULL pl or out, both calibrations NULL, a calibration without a
 * copy bandwidth or FMA rate, a cuda one without h2d and d2h bandwidths),
 * PLM_ERR_INVALID_STATE (not compiled). */
PLM_API plm_status plm_pipeline_predict(plm_pipeline *pl, const plm_profile_calibration *host,
                                        const plm_profile_calibration *cuda, plm_placement *out);

/* PLM_BACKEND_AUTO for a compiled pipeline (on either backend): calibrate host and, when
 * a GPU is present, cuda (device 0; plume/profile.h: cached per device), and predict
 * (plm_pipeline_predict, which keeps the prediction for describe). Without a GPU the
 * choice is host and nothing is measured (both predictions 0). PLUME_BACKEND=host|cuda,
 * when set, is the choice, as it is for contexts. The caller builds the pipeline again on
 * the chosen backend when it is not pl's (plume detect --backend auto does). out may be
 * NULL. Blocking: up to about a second per device not yet calibrated. Errors:
 * PLM_ERR_INVALID_ARG (NULL pl or choice, a bad PLUME_BACKEND), PLM_ERR_INVALID_STATE
 * (not compiled), a calibration's failure. */
PLM_API plm_status plm_pipeline_place(plm_pipeline *pl, plm_backend *choice, plm_placement *out);

/* ---- shapes ------------------------------------------------------------------------------ */

/* How many inputs and outputs the pipeline has (either pointer may be NULL). */
PLM_API plm_status plm_pipeline_io_count(const plm_pipeline *pl, int *inputs, int *outputs);
/* The dtype and shape of input i and of output i (0-based). */
PLM_API plm_status plm_pipeline_input_shape(const plm_pipeline *pl, int i, plm_shape *out);
PLM_API plm_status plm_pipeline_output_shape(const plm_pipeline *pl, int i, plm_shape *out);
/* The dtype and shape of any tensor of the pipeline. */
PLM_API plm_status plm_pipeline_tensor_shape(const plm_pipeline *pl, plm_pipe_tensor t,
                                             plm_shape *out);

/* ---- running ------------------------------------------------------------------------------ */

/* Enqueue one frame on stream, asynchronously: inputs[i] and outputs[i] are contiguous
 * tensors of the pipeline's context of exactly the shapes above (outputs must not
 * overlap each other or the inputs). The inputs must stay unchanged and every tensor
 * valid until the stream has run the frame. Work on branches runs on the pipeline's own
 * streams, which wait for what stream has enqueued before this call; stream waits for
 * all of it at the end, so an event recorded on stream after the call covers the whole
 * frame. Successive runs use one workspace (slot 0) and are ordered after each other on
 * the device, whatever streams they are given. Every argument is checked before
 * anything is enqueued. Errors: PLM_ERR_INVALID_ARG (the argument named),
 * PLM_ERR_INVALID_STATE (not compiled; from a host callback; while a
 * plm_pipeline_run_stream runs the pipeline); an operation's failure
 * while enqueueing (PLM_ERR_BACKEND: a launch refused; with PLM_PLAN_ALLOCATE_PER_RUN
 * also PLM_ERR_OUT_OF_MEMORY for an intermediate or a step's scratch) is returned with
 * the step named, the frame's outputs are then undefined, and the pipeline stays
 * usable. Nothing is allocated (but with PLM_PLAN_ALLOCATE_PER_RUN): every step's
 * scratch is in the workspace. */
PLM_API plm_status plm_pipeline_run(plm_pipeline *pl, const plm_tensor *inputs, plm_tensor *outputs,
                                    plm_stream *stream);

/* ---- state ---------------------------------------------------------------------------------
 * A stateful node (background, plume/background.h) keeps its state in the compiled
 * pipeline, not in a frame slot: one f32 frame per node, carried from each frame to the
 * next in the order the frames are run, across plm_pipeline_run and
 * plm_pipeline_run_stream calls alike. Frame k's update of a state happens after frame
 * k - 1's and before frame k + 1's, whatever slots and streams they run on (an event
 * chain; the rest of the frames still overlaps), so K frames in flight give the same
 * bytes as one. CUDA graphs still replay: the state has a fixed address. The first frame
 * after compile initialises every state (background: b = the frame, output 0).
 *
 * plm_pipeline_reset_state makes the next frame run initialise every state again, as
 * after compile (a new sequence: another sensor, a cut in the video). Frames already
 * enqueued are not affected. Errors: PLM_ERR_INVALID_STATE (not compiled; during a
 * plm_pipeline_run_stream of this pipeline, from its source or sink; from a host
 * callback). A pipeline without state accepts it and nothing changes. */
PLM_API plm_status plm_pipeline_reset_state(plm_pipeline *pl);

/* ---- streaming frames ------------------------------------------------------------------
 * plm_pipeline_run_stream runs a compiled pipeline over a sequence of frames
 * that live in host memory, keeping K = cfg->frames_in_flight frames in flight:
 *
 *   source(user, k, inputs, &end)   fills the pinned host buffers inputs[i] (the bytes of
 *                                   input i, shaped as plm_pipeline_input_shape says) with
 *                                   frame k, or sets end to stop before frame k;
 *   sink(user, k, outputs)          receives frame k's results, outputs[i] the bytes of
 *                                   output i, valid only during the call.
 *
 * Each frame slot s (frame k uses s = k mod K) has its own stream, its own device
 * copies of the inputs and outputs, its own pinned host buffers for the outputs
 * (plm_host_alloc) and the plan's workspace s; frame k's inputs are pinned too, in set
 * k mod (K + N) of a ring of input sets (N = source_ahead, below). Frame k is uploaded,
 * computed and downloaded on slot s's stream while frames k - 1 ... k - K + 1 are still
 * queued on the others, so the upload of one frame overlaps the compute of the previous
 * one and the download of the one before. Before slot s takes frame k the host waits
 * for frame k - K and hands it to the sink: the sink sees every frame exactly once, in
 * order (0, 1, 2, ...), on the calling thread, and a slow sink holds the loop
 * (back-pressure: never more than K frames queued). Nothing is allocated per frame: the
 * buffers are made when the run starts and released when it ends.
 *
 * Which thread calls the source (options->source_ahead, N):
 *   N = 0 (the default)  the calling thread, just before it enqueues the frame: the
 *                        source's copy into the pinned inputs is part of that thread's
 *                        time per frame;
 *   N > 0                a thread the run starts (and joins before returning), which
 *                        fills a ring of K + N sets of pinned input buffers up to N
 *                        frames ahead of the frame being enqueued: frame k's buffers are
 *                        filled again for frame k + K + N once frame k has been
 *                        delivered. The calling thread only enqueues frames and hands
 *                        them to the sink. Worth it when the source's copy is a large
 *                        part of a frame's host time (512x512 frames at thousands per
 *                        second), if the source may be called from another thread.
 * Either way the source's calls are sequential (one at a time, never concurrent with
 * each other) and in frame order 0, 1, 2, ...; the sink stays on the calling thread, in
 * order. With N > 0 a source call may run while the sink runs for an earlier frame. In
 * either mode inputs[] changes from frame to frame (set k mod (K + N)). The source is
 * never asked for frame max_frames or later, nor after it set end or failed.
 *
 * CUDA graphs (cuda backend, options->use_graphs): after each slot's first frame (the
 * warm-up), the slot's work is captured into a graph and replayed for every later
 * frame on that slot: without record_timing the whole frame (upload, plan, download:
 * one launch per frame; a graph per ring set the slot meets, since the upload's source
 * address is baked in), with it the plan alone (the timing events go between). When
 * capture fails, the backend has none or the plan cannot be
 * captured (a profiler attached, PLM_PLAN_ALLOCATE_PER_RUN,
 * PLM_PLAN_SYNCHRONOUS_STEPS), frames run without graphs, and the reason is written
 * once to report->graphs_note (the library prints nothing; plume detect prints it).
 *
 * Failure: when the source, the sink or the device work of frame k fails, frames
 * 0 .. k - 1 are all delivered to the sink first, no frame after k is delivered, the
 * run stops, report->failed_frame is k, and the status is returned with the message
 * naming frame k (a source or sink returning a failure may set its own message with
 * plm_last_error's conventions; otherwise one is made). A source's failure reads the
 * same whichever thread called it ("frame k: the source failed: <its message>": with
 * N > 0 the message is taken on the source's thread and set on the calling thread).
 * When the sink, the device work or the enqueueing of frame k fails, the source's
 * thread is told to stop and joined before the run returns: it finishes a call in
 * progress and begins no other, but may have been called for up to N frames more than
 * with N = 0 (whose last call is for frame k + K - 1 when the sink or the device work
 * of frame k fails, for frame k when its enqueueing does). Everything the run allocated
 * is released on every path. The source's and sink's status must be a plm_status.
 *
 * Batches (options->batch N >= 2): many small frames run as one launch per step. The
 * pipeline is compiled over stacks of N frames (plm_pipeline_parse with dims (N, H, W)
 * where frames are (H, W)): every input and output leads with N, and every op it runs
 * takes the stack in one call and keeps its frames apart (frame f of each output is what
 * the same pipeline over (H, W) frames makes of frame f: bit for bit, stateful ops
 * updating their state frame after frame in order; regions writes a table per frame,
 * plume/label.h). The source and the sink still see single frames: the source is called
 * for frames 0, 1, 2, ... (inputs[i] pointing at frame k's place in the stack of input
 * i, its bytes input i's over N), N calls per batch, and the sink gets frame k's part of
 * each output (output i's bytes over N), in order, once each. A batch is uploaded,
 * computed (one enqueue of the plan, or one graph launch) and downloaded as one unit, so
 * K frames in flight are K batches, and report->latency_*, submit_*, source_* and
 * graph_replays count batches (a batch's latency runs from its inputs being taken, the
 * last frame gathered, to its frames reaching the sink). The last batch may be short
 * (the source ended, max_frames): it runs as a stack of its n frames alone, never from
 * a graph, so the state a stateful op carries to the next run is the same as without
 * batches. Failure as above, in frames: a source failing at frame k of a batch gets
 * frames k - j .. k - 1 of that batch run and delivered first, a batch's device failure
 * is reported for its first frame. Refused (PLM_ERR_INVALID_ARG, the message names it):
 * an input or output that does not lead with N, a step that reads the batch's frames but
 * makes an output that does not (its op mixes or drops frames). segment takes one frame
 * (threshold ! label ! regions take stacks). plm_pipeline_run_stream_devices takes no
 * batches (PLM_ERR_UNSUPPORTED).
 *
 * Blocking: returns when the last frame has been delivered (or on failure). Not to be
 * called from a host callback, nor while plm_pipeline_run is in use on the pipeline by
 * another thread; source and sink must not call plm_pipeline_run(_stream) on it. */
typedef plm_status (*plm_frame_source_fn)(void *user, int64_t frame, void *const *inputs,
                                          bool *end);
typedef plm_status (*plm_frame_sink_fn)(void *user, int64_t frame, const void *const *outputs);

/* The most frames the source may run ahead (plm_run_stream_options.source_ahead). */
#define PLM_SOURCE_AHEAD_MAX 1024
/* The most frames a batch may hold (plm_run_stream_options.batch). */
#define PLM_RUN_STREAM_MAX_BATCH 65536

typedef struct plm_run_stream_options {
  int64_t max_frames; /* stop after this many frames; 0: until the source sets end */
  bool use_graphs;    /* capture and replay CUDA graphs (cuda backend) */
  bool record_timing; /* time each frame's upload, compute and download on the device
                         (copy_ms, compute_ms, overlap_ms in the report) */
  int source_ahead;   /* 0: the source runs on the calling thread, as before; N > 0
                         (at most PLM_SOURCE_AHEAD_MAX): the source runs on a thread of
                         its own, filling a ring of pinned input buffers up to N frames
                         ahead of the frames being enqueued (above) */
  int batch;          /* frames a batch: 0 or 1, one frame at a time; N >= 2 (at most
                         PLM_RUN_STREAM_MAX_BATCH): a pipeline over stacks of N frames, run
                         a batch at a time (Batches, above) */
} plm_run_stream_options;

/* max_frames 0, use_graphs true, record_timing false, source_ahead 0 (a source may not
 * expect to be called from another thread), batch 1. */
PLM_API plm_run_stream_options plm_run_stream_options_default(void);

typedef struct plm_run_stream_report {
  int64_t frames_delivered; /* frames the sink accepted */
  int64_t failed_frame;     /* the frame that failed, or -1 */
  double seconds;           /* wall time of the whole run, set-up included */
  double frames_per_s;      /* frames_delivered / seconds */
  double latency_p50_ms;    /* from the calling thread taking a frame (the source having
                               returned it) to the sink getting it */
  double latency_p99_ms;
  int64_t graph_replays; /* frames run as a graph replay */
  bool graphs_used;      /* graph_replays > 0 */
  char graphs_note[160]; /* why graphs were not used, when asked for; else empty */
  /* With record_timing (milliseconds of device time, summed over frames): */
  double copy_ms;    /* uploads and downloads */
  double compute_ms; /* the plan */
  double overlap_ms; /* copy time during which some frame's compute was running */
  /* The calling thread's time to enqueue one frame (its copies, its plan or graph, its
   * events; the source and the sink not counted), by nearest rank over the frames: what
   * one submitting thread costs per frame. */
  double submit_p50_us;
  double submit_p99_us;
  /* The calling thread's time to get one frame's inputs, likewise: with source_ahead 0
   * the source's call, with N > 0 its wait for the source's thread (near 0 while the
   * source keeps ahead). Added to submit_*, what the calling thread spends per frame
   * before the sink. */
  double source_p50_us;
  double source_p99_us;
} plm_run_stream_report;

/* Run frames through the pipeline as above. options may be NULL (the defaults); report
 * is filled on every return. Errors: PLM_ERR_INVALID_ARG (NULL pl, source or report,
 * max_frames negative, source_ahead out of 0 .. PLM_SOURCE_AHEAD_MAX, batch out of
 * 0 .. PLM_RUN_STREAM_MAX_BATCH, a pipeline that does not take batches of that size:
 * above),
 * PLM_ERR_INVALID_STATE (not compiled; in a host callback; another plm_pipeline_run_stream
 * of this pipeline is running: one at a time), PLM_ERR_OUT_OF_MEMORY (the
 * buffers), PLM_ERR_BACKEND (no thread for the source), and whatever a frame's source,
 * work or sink failed with (report->failed_frame says which). */
PLM_API plm_status plm_pipeline_run_stream(plm_pipeline *pl, plm_frame_source_fn source,
                                           plm_frame_sink_fn sink, void *user,
                                           const plm_run_stream_options *options,
                                           plm_run_stream_report *report);

/* Which batch to run (plume/tuning.h: plm_tuning_batch reads the table's; `plume tune`
 * measures it here). plm_tune_batch times a pipeline over u16 frames of 64 x 64 and
 * 128 x 128 (and 256 x 256 unless quick), each at every batch that a candidate of
 * PLM_TUNING_BATCH_BYTES gives it, 3 units in flight, the runs taking turns round by round
 * (pipeline/tune_batch.c says how it decides), and writes the decision into *entry: op
 * PLM_TUNING_RUN_STREAM, tunable PLM_TUNING_BATCH_BYTES, class small, the value kept only
 * when it beats the default (a frame at a time) by more than twice the runs' largest
 * coefficient of variation. Nothing is stored: plm_tuning_store does that. Blocking: about
 * 5 s (quick) to 20 s on a 2-core CPU. Errors: PLM_ERR_INVALID_ARG (NULL ctx or entry, runs
 * out of 0..64, a pipeline text that does not parse over u16 frames or stacks),
 * PLM_ERR_UNSUPPORTED (the cuda backend of an emulated build: the emulator's times are no
 * GPU's), and a run's failure. */
typedef struct plm_tune_batch_options {
  bool quick;           /* two frame sizes, 3 runs */
  const char *pipeline; /* the text run (u16 frames); NULL: the default preset's */
  int runs;             /* timed runs per workload, 0..64 (0: 3 quick, else 5) */
} plm_tune_batch_options;

/* quick false, pipeline NULL, runs 0. */
PLM_API plm_tune_batch_options plm_tune_batch_options_default(void);

PLM_API plm_status plm_tune_batch(plm_context *ctx, const plm_tune_batch_options *options,
                                  plm_tuning_entry *entry);

/* ---- several devices ----------------------------------------------------------------------
 * plm_pipeline_run_stream_devices runs one sequence of frames over several devices: one
 * compiled pipeline per device (a context each: a GPU, plm_context_config.device, or a
 * host context with a core budget of its own, plm_context_config.host_threads), all
 * built from the same text or graph (the same inputs and outputs; each may have its own
 * frames_in_flight). Each device runs plm_pipeline_run_stream on a thread of its own (the
 * run starts them and joins them before it returns) and takes the next frame of the
 * sequence whenever one of its frame slots is free: a slow device takes fewer frames
 * (back-pressure from its slot ring, nothing to tune). Frames' results wait in a reorder
 * buffer (as many entries as the devices' frame slots together, the outputs' bytes each,
 * allocated when the run starts) until every earlier frame has been handed over:
 *
 *   source(user, k, inputs, &end)  as plm_pipeline_run_stream's, called once per frame,
 *                                  one call at a time and in frame order, but on the
 *                                  devices' threads (never concurrently);
 *   sink(user, k, outputs)         as plm_pipeline_run_stream's: every frame once, in
 *                                  order, on the calling thread.
 *
 * So the sink sees what one device would give it: the same frames, in the same order,
 * with the same bytes (the devices run the same plan; on different GPU models a kernel's
 * floating-point rounding may differ, which the ops' headers state).
 *
 * Stateful pipelines (a background node: plm_plan_info.states > 0) are refused with more
 * than one device: a state carries from each frame to the next, and devices taking
 * frames in turn would each see a different part of the sequence.
 *
 * Failure: when the source, a device's work or the sink fails at frame k, frames 0 .. k - 1
 * are all delivered, nothing after, the devices stop (a frame already dealt past k is
 * computed, not delivered) and the status is returned with report->failed_frame k,
 * report->failed_device the device that ran it (-1 for the sink) and the message
 * "frame k: the source failed: ...", "frame k: the sink failed: ...", or "frame k
 * (device d): <what the device's run said>". Everything the run allocated is released.
 *
 * Blocking; not from a host callback; none of the pipelines may be in another run. */
#define PLM_RUN_STREAM_MAX_DEVICES 16

typedef struct plm_run_stream_devices_report {
  int64_t frames_delivered; /* frames the sink accepted */
  int64_t failed_frame;     /* the frame that failed, or -1 */
  int failed_device;        /* the device that ran it, or -1 (none, or the sink) */
  double seconds;           /* wall time of the whole run, set-up included */
  double frames_per_s;      /* frames_delivered / seconds: all devices together */
  int devices;              /* count */
  int64_t device_frames[PLM_RUN_STREAM_MAX_DEVICES];      /* frames each device delivered */
  double device_frames_per_s[PLM_RUN_STREAM_MAX_DEVICES]; /* device_frames / seconds */
  /* Each device's own run (its frames numbered 0, 1, ... in the order it took them). */
  plm_run_stream_report device[PLM_RUN_STREAM_MAX_DEVICES];
} plm_run_stream_devices_report;

/* Run frames through pipelines[0 .. count) as above. options as plm_pipeline_run_stream's
 * (max_frames counts the whole sequence), may be NULL. report is filled on every return.
 * Errors: PLM_ERR_INVALID_ARG (NULL pipelines, source or report, count not from 1 to
 * PLM_RUN_STREAM_MAX_DEVICES, a pipeline NULL or given twice, inputs or outputs unlike
 * pipelines[0]'s, bad options), PLM_ERR_INVALID_STATE (a pipeline not compiled or already
 * streaming; in a host callback), PLM_ERR_UNSUPPORTED (a stateful pipeline with count >
 * 1), PLM_ERR_OUT_OF_MEMORY, PLM_ERR_BACKEND (no thread), and whatever a frame's source,
 * work or sink failed with. */
PLM_API plm_status plm_pipeline_run_stream_devices(plm_pipeline *const *pipelines, int count,
                                                   plm_frame_source_fn source,
                                                   plm_frame_sink_fn sink, void *user,
                                                   const plm_run_stream_options *options,
                                                   plm_run_stream_devices_report *report);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_PIPELINE_H */

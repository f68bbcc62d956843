/* pipeline/pipeline_internal.h: graphs, plans and their execution (internal).
 *
 * Three stages, each with its own data:
 *
 *   graph   what the caller built: tensors (inputs, constants, node outputs) and nodes,
 *           in the order they were added (graph.c, parse.c). Checked as it grows, never
 *           changed by compile, so it can be described and planned again.
 *   plan    what runs (plan.c, plan_facts.c, plan_memory.c): a copy of the graph's
 *           tensors plus the ones lowering adds, and steps. Passes, in order:
 *             lower     segment -> threshold, label, regions (the mask becomes a tensor);
 *             fuse      sobel -> entropy -> threshold chains (plm__plan_find_fusions
 *                       recognises them) become one plm_sobel_entropy_threshold step
 *                       unless the config says PLM_PLAN_NO_FUSION;
 *             prune     steps nothing observable depends on; unread sobel outputs;
 *             order     Kahn's algorithm, ties to the earlier step: stable;
 *             streams   a step continues the stream of the producer it reads, when that
 *                       producer is still the stream's last step; otherwise it opens a
 *                       new stream (up to max_streams, then the stream idle longest).
 *                       Stream 0 is the caller's. Events: one per step whose output is
 *                       read on another stream (recorded after it, waited before each
 *                       such reader), a fork event recorded on stream 0 at the start and
 *                       waited by the first step of every other stream, and one join
 *                       event per other stream that stream 0 waits at the end;
 *             clocks    a vector clock per step (for each stream, how many of its steps
 *                       are ordered before this step starts), from stream order and the
 *                       events: step u happens before v iff clock[v][stream u] > pos u;
 *             states    each stateful step (its op has a state_shape: background) gets
 *                       its state's range in the pipeline's state block;
 *             check     each step checked once by its op's descriptor on descriptions
 *                       of its tensors (ops/op_desc.h: the run enqueues it with no
 *                       checks), its cost model kept, and the bytes its op needs
 *                       besides its operands (plm__op_scratch_of, asked with the
 *                       pipeline's context);
 *             memory    buffers (a tensor, an in-place group, or a step's scratch) with
 *                       their uses; two buffers conflict unless every use of one happens
 *                       before the other is written; a scratch buffer is used by its
 *                       step alone, so it may share memory with anything not live
 *                       during that step; offsets by the best of three placements
 *                       (plan_memory.c). On one stream the conflicts are exactly the
 *                       overlapping step intervals.
 *   runtime what compile allocates (lifecycle.c): a control stream (allocation, constant
 *           upload, the frees at destroy), the constants' block, and per frame slot a
 *           workspace, the branch streams (streams 1..S-1), the events and a table of
 *           plm_tensor descriptors for every plan tensor with its address filled in.
 *           plm__pipeline_enqueue patches the caller's inputs and outputs into the
 *           slot's table and enqueues each step through its descriptor with the
 *           arguments compile checked (plm__op_enqueue) and its scratch at the slot's
 *           workspace + the step's scratch offset: no checks, no allocation, no locks
 *           of its own, so a slot's frame can be captured into a CUDA graph and
 *           replayed.
 *
 * Invariants: a plan tensor is produced by at most one step; steps are stored in
 * execution order; a step's waits name events recorded by earlier steps (or the fork);
 * workspace offsets (tensors' and scratch's) are multiples of PLM__PIPE_ALIGN and two
 * buffers whose byte ranges overlap never conflict.
 *
 * Frame slots. The streaming executor keeps K frames in flight: frame f uses slot
 * f mod K, its own stream, and its slot's workspace, branch streams and events, so
 * frames in different slots never share memory or events. Reusing a slot is the
 * executor's business: it must order frame f + K after frame f (plm_pipeline_run does it
 * with the slot's `done` event).
 *
 * State. A stateful step's state is the one thing frames share: it lives in the state
 * block compile allocates (one address, so a captured graph replays against it) and
 * carries from each frame to the next, across slots, runs and plm_pipeline_run /
 * plm_pipeline_run_stream alike. Frame f's update must come after frame f - 1's, on
 * whatever streams they run: before a stateful step, plm__pipeline_enqueue makes its
 * stream wait for the step's previous update (state_last, the event the previous frame
 * recorded after it) and records the slot's own state event after it. Those two cross
 * frames, so inside a graph capture they are external event nodes
 * (plm__event_record_across_graphs), acting at each replay. Everything else of the
 * frames still overlaps. The first update after compile or plm_pipeline_reset_state
 * initialises the state (the call's state_fresh, from state_fresh[]); a slot's first
 * frame is never captured, so no graph holds a fresh update.
 *
 * Previous values. A PREVIOUS tensor (plm_pipeline_add_previous) is a state too: the value
 * it is bound to, as the previous frame left it (zeros before the first frame and after a
 * reset). Its readers wait for the previous frame's copy (state_last); the value's producer
 * copies the frame's value over it right after running and records the slot's state event;
 * a fresh one is zeroed on the caller's stream before the frame's fork. Compile requires
 * every reader of a PREVIOUS to happen before its value's producer, so the copy never
 * overwrites what a reader of the same frame has yet to read.
 */
#ifndef PLUME_PIPELINE_PIPELINE_INTERNAL_H
#define PLUME_PIPELINE_PIPELINE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/op_desc.h"
#include "ops/op_internal.h" /* plm__tensor_describe: the plan's tensors described */
#include "plume/fused.h"
#include "plume/pipeline.h"
#include "streams/error.h"
#include "streams/runtime.h"

enum {
  PLM__PIPE_ALIGN = 256,             /* workspace offsets and sizes */
  PLM__PIPE_MAX_IO = PLM__OP_MAX_IN, /* inputs or outputs of one node (lstm_cell reads 7) */
  PLM__PIPE_MAX_WAITS = 8            /* events a step waits for: its inputs, and the fork */
};

/* The operations a node or step can be, and their parameters: plm__op_kind and
 * plm__op_params of ops/op_desc.h; plm__op_get(kind) is the descriptor every stage reads. */

typedef enum plm__tensor_kind {
  PLM__TENSOR_INPUT = 0,
  PLM__TENSOR_CONSTANT,
  PLM__TENSOR_VALUE,   /* a node's (or step's) output */
  PLM__TENSOR_PREVIOUS /* a value's previous frame (plm_pipeline_add_previous), state */
} plm__tensor_kind;

typedef struct plm__tensor {
  plm__tensor_kind kind;
  plm_shape shape;
  size_t bytes;
  int producer; /* VALUE: the node (graph) or step (plan) writing it; else -1 */
  int slot;     /* VALUE: which output of the producer */
  int io_index; /* INPUT: its index; VALUE marked as output: its output index; else -1 */
  void *host;   /* CONSTANT: the copied bytes (graph tensors only own them) */
  int producer_connectivity; /* VALUE labels of a label node: 4 or 8; else 0 */
  int previous_of;           /* PREVIOUS: the VALUE whose previous frame it is (-1: unbound) */
  int kept_as;               /* VALUE: the PREVIOUS that keeps it for the next frame, or -1 */
  int state;                 /* PREVIOUS in a plan: its index in plan.states, else -1 */
} plm__tensor;

/* Set indices[0..PLM__PIPE_MAX_IO) to a, b, c, then -1 (absent); returns indices. */
static inline int *plm__pipe_io(int *indices, int a, int b, int c) {
  for (int k = 0; k < PLM__PIPE_MAX_IO; k++) indices[k] = -1;
  indices[0] = a;
  indices[1] = b;
  indices[2] = c;
  return indices;
}

typedef struct plm__node {
  plm__op_kind kind;
  int inputs[PLM__PIPE_MAX_IO];  /* tensor indices, -1 when absent */
  int outputs[PLM__PIPE_MAX_IO]; /* tensor indices, -1 when absent */
  plm__op_params params;
} plm__node;

typedef struct plm__graph {
  plm__tensor *tensors;
  int tensor_count, tensor_capacity;
  plm__node *nodes;
  int node_count, node_capacity;
  int *inputs; /* tensor indices, in input order */
  int input_count, input_capacity;
  int *outputs; /* tensor indices, in output order */
  int output_count, output_capacity;
} plm__graph;

/* Where a plan tensor's memory is. */
typedef enum plm__location {
  PLM__AT_NONE = 0, /* not used by any step */
  PLM__AT_INPUT,    /* the caller's inputs[io_index] */
  PLM__AT_OUTPUT,   /* the caller's outputs[io_index] */
  PLM__AT_CONSTANT, /* constants block + offset */
  PLM__AT_WORKSPACE, /* the slot's workspace + offset */
  PLM__AT_STATE      /* a PREVIOUS: the state block + offset (its plm__state's) */
} plm__location;

typedef struct plm__step {
  plm__op_kind kind;
  int inputs[PLM__PIPE_MAX_IO]; /* plan tensor indices, -1 when absent */
  int outputs[PLM__PIPE_MAX_IO];
  plm__op_params params;
  int nodes[3]; /* the graph nodes it stands for (-1 padded): 3 for a fused step */
  int stream;   /* 0: the caller's stream; s > 0: the slot's branch stream s */
  int position; /* 1-based index among its stream's steps */
  int waits[PLM__PIPE_MAX_WAITS]; /* events to wait for before it */
  int wait_count;
  int record;            /* event recorded after it, or -1 */
  bool in_place;         /* outputs[0] is inputs[0]'s memory */
  plm_op_cost cost;      /* its op's cost model on its shapes, computed at compile */
  size_t scratch_bytes;  /* what its op needs besides its operands (0: none) */
  size_t scratch_offset; /* where that is in the workspace, when scratch_bytes > 0 */
  int state;             /* a stateful op's: its index in plan->states, else -1 */
  plm__op_tuning tuning; /* its op's tunables' values on the context, resolved at compile */
} plm__step;

/* The state of a stateful step (ops/op_desc.h's state_shape), or a PREVIOUS tensor: one for
 * the pipeline, not per slot, at offset in the pipeline's state block. A stateful step
 * waits for the previous frame's update and updates it; a PREVIOUS tensor's readers wait
 * for the previous frame's copy, and `step`, the producer of its value, copies the frame's
 * value into it after running (run.c). */
typedef struct plm__state {
  int step;
  int tensor; /* the PREVIOUS tensor, or -1: the state of step's op */
  plm_shape shape;
  size_t bytes, offset;
} plm__state;

/* Whether a step reads tensor t (through any of its inputs). */
static inline bool plm__step_reads(const plm__step *step, int t) {
  for (int k = 0; k < PLM__PIPE_MAX_IO; k++)
    if (step->inputs[k] == t) return true;
  return false;
}

/* A chain the fusion pass recognised: steps sobel, entropy, threshold. */
typedef struct plm__fusion {
  int sobel, entropy, threshold;
} plm__fusion;

typedef struct plm__plan {
  plm__tensor *tensors; /* the graph's, then the ones lowering added */
  int tensor_count;
  plm__step *steps; /* in execution order */
  int step_count;
  plm__location *location; /* per tensor */
  size_t *offset;          /* per tensor: in the workspace or the constants' block */
  int *clock;              /* step_count x PLM_PIPELINE_MAX_STREAMS vector clocks */
  int stream_count;
  int event_count;    /* per slot: event 0 is the fork, then one per recording step, then joins */
  int *join_events;   /* per stream (index 0 unused): the event stream s records at the end */
  plm__state *states; /* state_count of them, in step order */
  int state_count;
  size_t state_bytes; /* the state block: every state, each at a PLM__PIPE_ALIGN offset */
  int fusable_chains, fused_steps, in_place;
  size_t workspace_bytes, intermediate_bytes, scratch_bytes, peak_live_bytes, constant_bytes;
} plm__plan;

/* One frame slot's runtime objects. */
typedef struct plm__slot {
  void *workspace;
  plm_stream *streams[PLM_PIPELINE_MAX_STREAMS]; /* [0] unused: the caller's stream */
  plm_event **events;                            /* plan.event_count of them */
  plm_event *done; /* recorded at the end of each plm_pipeline_run on this slot */
  bool done_recorded;
  plm_tensor *tensors;      /* per plan tensor, addresses filled in (inputs/outputs per run) */
  plm_event **state_events; /* per state: recorded after this slot's update of it */
} plm__slot;

struct plm_pipeline {
  plm_context *ctx;
  plm__attachment attachment;
  uint32_t serial; /* the handles' `pipeline` */
  plm__graph graph;
  bool compiled;
  plm_plan_config config; /* as compiled, defaults filled in */
  plm__plan plan;
  plm_pool *pool;
  plm_stream *control;
  void *constants;
  plm__slot *slots;           /* config.frames_in_flight of them */
  int *release_after;         /* PLM_PLAN_ALLOCATE_PER_RUN: per plan tensor (per_run.c) */
  double device_bytes, flops; /* the plan's cost per frame (cost.c) */
  plm_profiler *profiler;     /* records each step, or NULL */
  plm_placement placement;    /* the last plm_pipeline_predict's, when predicted */
  bool predicted;
  int64_t frames_run;        /* plm_pipeline_run's calls: the frame index it records */
  void *state;               /* the state block (plan.state_bytes), or NULL */
  plm_tensor *state_tensors; /* per state, its address in the block */
  bool *state_fresh;         /* per state: its next update initialises it */
  plm_event **state_last;    /* per state: the event after its last update, or NULL */
  plm_event **saved_last;    /* state_last and state_fresh as plm__pipeline_state_save */
  bool *saved_fresh;         /* left them */
  /* Inside a batched plm_pipeline_run_stream (batch.c): its batch, and which plan
   * tensors hold the batch's frames (per plan tensor); 0 and NULL otherwise. */
  int batch;
  bool *batch_per_frame;
  /* Inside plm_pipeline_run_stream: a second run_stream, plm_pipeline_run and
   * plm_pipeline_reset_state refuse (they would share its slots and its state). */
  atomic_bool streaming;
};

/* ---- graph.c ----------------------------------------------------------------------------- */

/* Replace the thread's message (raw, or "plm_op_output: ..." whose function name is
 * dropped) by "<prefix>: <message>", prefix formatted from fmt (an empty prefix only
 * drops the function name); returns status. */
plm_status plm__pipe_reraise(plm_status status, const char *fmt, ...) PLM__PRINTF(2, 3);

/* "input", "constant", "value", "previous value": for messages. */
const char *plm__tensor_kind_name(plm__tensor_kind kind);

/* The tensor a handle names, or -1 with the message "<name> ..." set (raw). */
int plm__graph_resolve(const plm_pipeline *pl, plm_pipe_tensor t, const char *name);

/* "conv2d, sobel, ...": the ops a node can be (every op of the table but those compile
 * makes), for the messages of plm_pipeline_add and the text form. */
void plm__node_op_names(char *list, size_t size);

plm_pipe_tensor plm__graph_handle(const plm_pipeline *pl, int tensor);

/* Add a node of kind reading inputs (-1 when absent) with params; checks everything
 * with the op's shape function and appends the node and its outputs only when all
 * is well. want[k] says whether output slot k is made (sobel's optional outputs; others
 * make all). On failure the message is raw (no function or node prefix) and nothing
 * changed. outputs[k] gets the new tensors' indices (-1 when not made). */
plm_status plm__graph_add_node(plm_pipeline *pl, plm__op_kind kind, const int *inputs,
                               const plm__op_params *params, const bool *want, int *outputs);
plm_status plm__graph_add_source(plm_pipeline *pl, plm__tensor_kind kind, plm_dtype dtype, int ndim,
                                 const int64_t *dims, const void *host, int *index);
void plm__graph_free(plm__graph *graph);


/* ---- plan.c, plan_facts.c, plan_memory.c --------------------------------------------------- */

/* Build the plan of a graph under config (defaults filled in): every pass above, with
 * fusable chains replaced by fused steps when `substitute` (compile passes whether the
 * config allows it), the steps' scratch sized for ctx's backend. Host memory only;
 * on failure the plan is freed and the message is raw. */
plm_status plm__plan_build(plm_context *ctx, const plm__graph *graph, const plm_plan_config *config,
                           bool substitute, plm__plan *plan);

void plm__plan_free(plm__plan *plan);

/* The fusable chains among a plan's steps (before ordering: steps in graph order);
 * writes at most `capacity` and returns how many there are (-1 without host memory). */
int plm__plan_find_fusions(const plm__plan *plan, plm__fusion *found, int capacity);

/* How many steps read each of the plan's tensors (a step reading one twice counts once),
 * a calloc'd array of tensor_count the caller frees; NULL without host memory. */
int *plm__plan_readers(const plm__plan *plan);

/* Whether step u happens before step v in the plan's stream order and events. */
bool plm__plan_happens_before(const plm__plan *plan, int u, int v);

/* Place the plan's workspace tensors (plan->location PLM__AT_WORKSPACE) and the steps'
 * scratch (steps' scratch_bytes set), and set offsets, the steps' scratch_offset,
 * workspace_bytes, intermediate_bytes, scratch_bytes, peak_live_bytes and in_place. */
plm_status plm__plan_memory(plm__plan *plan, bool reuse);

/* ---- lifecycle.c, run.c ------------------------------------------------------------------- */

/* Check a run's tensors against the plan (the caller's stream's context, shapes,
 * overlaps). The message is raw. */
plm_status plm__pipeline_check_io(const plm_pipeline *pl, const plm_stream *stream,
                                  const plm_tensor *inputs, const plm_tensor *outputs);

/* Enqueue one frame on slot's workspace, branch streams and events, with stream as
 * stream 0. No checks (plm__pipeline_check_io has passed), no allocation, no ordering
 * against the slot's previous frame: the caller owns that. On a step's failure the
 * remaining steps are skipped, the branch streams are still joined into stream, and the
 * status is returned with a raw message naming the step. With a profiler attached each
 * step is recorded as a launch of frame `frame`. */
plm_status plm__pipeline_enqueue(plm_pipeline *pl, int slot, plm_stream *stream,
                                 const plm_tensor *inputs, plm_tensor *outputs, int64_t frame);

/* plm__pipeline_enqueue of a short batch, the first `frames` frames of the stacks only
 * (0 < frames <= pl->batch; batch.c says how). */
plm_status plm__pipeline_enqueue_frames(plm_pipeline *pl, int slot, plm_stream *stream,
                                        const plm_tensor *inputs, plm_tensor *outputs,
                                        int64_t frame, int64_t frames);

/* ---- batch.c: a pipeline over stacks, run a batch at a time ------------------------------ */

/* For a run of batch frames a stack (batch >= 2): check that every input and output
 * leads with batch, and that every step reading the batch's frames keeps them apart (its
 * outputs lead with batch too), and set pl->batch and pl->batch_per_frame. The message
 * is raw and names the input, output or step. */
plm_status plm__pipeline_batch_begin(plm_pipeline *pl, int batch);

/* Undo plm__pipeline_batch_begin (safe when it failed or was not called). */
void plm__pipeline_batch_end(plm_pipeline *pl);

/* Set the leading dimension of the slot's per-frame tensors to frames (a short batch:
 * frames < pl->batch; pl->batch puts it back). */
void plm__pipeline_batch_shrink(plm_pipeline *pl, plm__slot *slot, int64_t frames);

/* Keep the states' order (state_last, state_fresh) before enqueueing a frame that may
 * not run (a graph capture that may fail), and put it back when it did not. */
void plm__pipeline_state_save(plm_pipeline *pl);
void plm__pipeline_state_restore(plm_pipeline *pl);

/* A graph of slot's frame was launched: its updates of the states are now the last ones
 * (as plm__pipeline_enqueue would have left them). */
void plm__pipeline_state_replayed(plm_pipeline *pl, int slot);

/* Whether the slot's plan can be captured into a graph and replayed: every step's
 * memory must be fixed, so no step may take memory from a pool per call (a replay would
 * reuse the captured address after the pool handed it out again). Steps with scratch
 * get it from the workspace, so every kind qualifies today; the check stays for any
 * step whose run path would allocate. When it cannot, writes why into why (size bytes)
 * and returns false. */
bool plm__pipeline_capturable(const plm_pipeline *pl, char *why, size_t size);

/* ---- per_run.c: PLM_PLAN_ALLOCATE_PER_RUN -------------------------------------------------
 * With that flag the plan has no workspace (compile plans with PLM_PLAN_NO_REUSE and sets
 * workspace_bytes to 0): a slot's workspace tensors have no memory between runs, and
 * plm__pipeline_enqueue gives each one a block of pl->pool for the length of a run. */

/* At compile: when to free each workspace tensor, into pl->release_after (allocated
 * here): the index of the step after which it is freed on that step's stream (its last
 * use, when every other use happens before it), or -1 for "at the end of the run, on the
 * run's stream, after the joins". The message is raw. */
plm_status plm__per_run_prepare(plm_pipeline *pl);

/* Allocate step's workspace outputs in the slot's table on stream `on`. */
plm_status plm__per_run_acquire(plm_pipeline *pl, plm__slot *slot, int step, plm_stream *on);

/* Free, on stream `on`, the slot's tensors whose last use is step `step`. */
plm_status plm__per_run_release_after(plm_pipeline *pl, plm__slot *slot, int step, plm_stream *on);

/* Free, on stream, every workspace tensor of the slot still allocated (all uses of
 * which are ordered before stream's current end). */
plm_status plm__per_run_release_rest(plm_pipeline *pl, plm__slot *slot, plm_stream *stream);

/* ---- executor.c, devices.c ------------------------------------------------------------------ */

/* Check a run's options (max_frames, source_ahead) as plm_pipeline_run_stream and
 * plm_pipeline_run_stream_devices take them; the message is raw. */
plm_status plm__run_stream_options_check(const plm_run_stream_options *options);

/* ---- cost.c ------------------------------------------------------------------------------ */

/* The plan's cost per frame (plm_plan_info's device_bytes and flops): the sum of the
 * steps' cost models, which compile computed. */
plm_status plm__plan_cost(const plm_pipeline *pl, double *bytes, double *flops);

/* A step's (or node's) call on a tensor table: its inputs and outputs, its params. An
 * in-place step writes its first input's memory. */
plm__op_call plm__step_call(plm__op_kind kind, const int *inputs, const int *outputs,
                            const plm__op_params *params, bool in_place, plm_tensor *tensors);

#endif /* PLUME_PIPELINE_PIPELINE_INTERNAL_H */

/* pipeline/batch.c: a pipeline compiled over stacks of frames, run a batch at a time
 * (plm_pipeline_run_stream's options->batch; the contract is in plume/pipeline.h).
 *
 * A batch pipeline is an ordinary one whose inputs are stacks: (N, H, W) frames where a
 * frame pipeline takes (H, W). Every op it runs takes the stack in one call (one launch
 * per kernel on cuda) and keeps its frames apart: frame f of every per-frame tensor is
 * what the frame pipeline makes from frame f alone, stateful ops updating their state
 * frame after frame, in order. The streaming executor gathers N frames from the source
 * into a stack and hands its frames to the sink one by one.
 *
 * Which tensors hold frames (per_frame): the inputs, and every output of a step that
 * reads a per-frame tensor, which must then lead with the batch too: an op that mixed
 * the frames (or dropped their axis) would hand the sink bytes that are no frame's, so
 * such a step is refused, with its op named. Constants and what steps make from them
 * alone are not per frame.
 *
 * The last batch of a run may be short (n < N frames: the source ended, max_frames).
 * Running it as a full stack would feed the padding to a stateful op's state, and the
 * frames after the run would then differ from an unbatched run's. So it runs as a stack
 * of n: every per-frame tensor's leading dimension is n for that enqueue
 * (plm__pipeline_batch_shrink), every op reading it as an n-frame stack (the workspace
 * and scratch, sized for N, are more than enough), and the dimension is put back after.
 * Such a batch is never captured into, or replayed from, a CUDA graph (a graph bakes in
 * the N-frame launches).
 */
#include <stdio.h>
#include <stdlib.h>

#include "ops/op_internal.h"
#include "pipeline/pipeline_internal.h"
#include "streams/error.h"

static bool leads_with(const plm_shape *shape, int64_t batch) {
  return shape->ndim >= 1 && shape->dims[0] == batch;
}

/* The refusal of an input or output that is not a stack of `batch` frames. */
static plm_status refuse_shape(const plm_shape *shape, int batch, const char *what, int index,
                               const char *made_by) {
  char text[96];
  plm__shape_text(shape, text, sizeof text);
  return plm__fail_raw(PLM_ERR_INVALID_ARG,
                       "options->batch %d: %s %d is %s, not a stack of %d frames%s", batch, what,
                       index, text, batch, made_by);
}

plm_status plm__pipeline_batch_begin(plm_pipeline *pl, int batch) {
  const plm__plan *plan = &pl->plan;
  const plm__graph *graph = &pl->graph;
  for (int j = 0; j < plan->state_count; j++)
    if (plan->states[j].tensor >= 0)
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "options->batch %d: previous value t%d carries each frame's value to "
                           "the next frame, which the frames of one batch cannot see (run this "
                           "pipeline with batch 1)",
                           batch, plan->states[j].tensor + 1);
  for (int i = 0; i < graph->input_count; i++) {
    const plm_shape *shape = &graph->tensors[graph->inputs[i]].shape;
    if (!leads_with(shape, batch))
      return refuse_shape(shape, batch, "input", i,
                          " (compile the pipeline over stacks: (N, H, W) for (H, W) frames)");
  }
  bool *per_frame = calloc((size_t)plan->tensor_count + 1, sizeof *per_frame);
  if (!per_frame) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the batch");
  for (int t = 0; t < plan->tensor_count; t++)
    per_frame[t] = plan->tensors[t].kind == PLM__TENSOR_INPUT;
  for (int s = 0; s < plan->step_count; s++) {
    const plm__step *step = &plan->steps[s];
    bool reads_frames = false;
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++)
      reads_frames = reads_frames || (step->inputs[k] >= 0 && per_frame[step->inputs[k]]);
    if (!reads_frames) continue;
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
      const int t = step->outputs[k];
      if (t < 0) continue;
      const plm_shape *shape = &plan->tensors[t].shape;
      if (!leads_with(shape, batch)) {
        char text[96];
        plm__shape_text(shape, text, sizeof text);
        free(per_frame);
        return plm__fail_raw(PLM_ERR_INVALID_ARG,
                             "options->batch %d: step %d '%s' (node %d) reads the batch's "
                             "frames but its output %s is not a stack of %d frames: '%s' "
                             "does not keep frames apart (run this pipeline with batch 1)",
                             batch, s, plm__op_name(step->kind), step->nodes[0], text, batch,
                             plm__op_name(step->kind));
      }
      per_frame[t] = true;
    }
  }
  for (int i = 0; i < graph->output_count; i++) {
    const int t = graph->outputs[i];
    if (per_frame[t]) continue;
    free(per_frame);
    return refuse_shape(&graph->tensors[t].shape, batch, "output", i,
                        " (it does not depend on the inputs' frames)");
  }
  pl->batch = batch;
  pl->batch_per_frame = per_frame;
  return PLM_OK;
}

void plm__pipeline_batch_end(plm_pipeline *pl) {
  free(pl->batch_per_frame);
  pl->batch_per_frame = NULL;
  pl->batch = 0;
}

void plm__pipeline_batch_shrink(plm_pipeline *pl, plm__slot *slot, int64_t frames) {
  for (int t = 0; t < pl->plan.tensor_count; t++)
    if (pl->batch_per_frame[t]) slot->tensors[t].dims[0] = frames;
}

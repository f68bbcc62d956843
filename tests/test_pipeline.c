/* tests/test_pipeline.c: pipelines (plume/pipeline.h) on the backend under test.
 *
 *   planner   hand-made and random graphs, compiled, then checked by a checker of its
 *             own: no two workspace buffers (intermediates, and steps' scratch, each of
 *             the size its op asks for) that may be live at once share a byte (happens-
 *             before worked out from the steps' streams and events by a transitive
 *             closure, independently of the planner's clocks), cross-stream reads are
 *             ordered, offsets are aligned, the workspace is at most the sum of the
 *             buffers and, on chains on one stream, exactly the peak of live bytes;
 *   fusion    the recogniser on chains it must and must not fuse, and the substitution
 *             (planned; the fused pipeline is also run against the unfused one);
 *   parser    each kind of error and its message;
 *   text_tensors  plm_pipeline_parse_with_tensors: each operation that reads tensors
 *             (matmul, dendritic, vector_add, dot, lstm_cell, conv2d's kernel=@NAME), and
 *             chains of them, against the same pipeline built by hand (the same bytes);
 *             a tensor named twice is one constant; every error and its exact message;
 *   results   pipelines against the same ops run one by one on the same stream: the same
 *             bytes (intensities are integers, so region sums are exact on either
 *             backend);
 *   scratch   pipelines with entropy, the fused step, label and segment make no pool
 *             allocation per frame (the pool's counters); those ops with the caller's
 *             scratch (plm__op_scratch_bytes, plm__op_call_with_scratch) refuse scratch
 *             that is too small, NULL, misaligned or over an operand, and otherwise equal
 *             the public ops;
 *   eager     PLM_PLAN_ALLOCATE_PER_RUN and PLM_PLAN_SYNCHRONOUS_STEPS: the same results,
 *             where each intermediate is freed, nothing left allocated, out of memory
 *             mid-run, no graph capture; the plan's cost;
 *   lifecycle errors that leave a pipeline usable, and no leftovers (the fixture checks
 *             the context; the pool's live blocks are counted here).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/op_desc.h"
#include "pipeline/parse.h"
#include "pipeline/pipeline_internal.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static size_t aligned(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

static size_t shape_bytes(const plm_shape *shape) {
  size_t bytes = plm_dtype_size(shape->dtype);
  for (int d = 0; d < shape->ndim; d++) bytes *= (size_t)shape->dims[d];
  return bytes;
}

static uint64_t live_blocks(void) {
  plm_pool_stats stats;
  PLM_CHECK_OK(plm_pool_stats_get(plm_test_pool, &stats));
  return stats.live_blocks;
}

/* The scratch op asks for on the test's context for call's inputs and parameters. */
static size_t scratch_of(const plm__op_desc *op, const plm__op_call *call) {
  size_t bytes = 0;
  PLM_CHECK_OK(plm__op_scratch_bytes(op, plm_test_ctx, call, &bytes));
  return bytes;
}

/* The scratch plm_entropy and plm_label ask for on the test's context, 256-aligned. */
static size_t entropy_scratch(plm_dtype dtype, int64_t h, int64_t w,
                              const plm_entropy_params *params) {
  const plm_shape shape = {.dtype = dtype, .ndim = 2, .dims = {h, w}};
  const plm_tensor in = plm__tensor_describe(plm_test_ctx, &shape);
  return aligned(scratch_of(&plm__op_entropy, &(plm__op_call){.in = {&in}, .params = params}));
}

static size_t label_scratch(int ndim, const int64_t *dims, int connectivity) {
  plm_shape shape = {.dtype = PLM_DTYPE_U8, .ndim = ndim};
  for (int d = 0; d < ndim; d++) shape.dims[d] = dims[d];
  const plm_tensor mask = plm__tensor_describe(plm_test_ctx, &shape);
  const plm_label_params params = {.connectivity = connectivity};
  return aligned(scratch_of(&plm__op_label, &(plm__op_call){.in = {&mask}, .params = &params}));
}

static size_t max_size(size_t a, size_t b) {
  return a > b ? a : b;
}

/* A 3x3 f32 kernel constant. */
static plm_pipe_tensor kernel3(plm_pipeline *pl, float scale) {
  const float taps[9] = {1, 2, 1, 0, 4 * scale, 0, -1, 2, 1};
  const int64_t dims[2] = {3, 3};
  plm_pipe_tensor k;
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, dims, taps, &k));
  return k;
}

/* ---- the plan checker ------------------------------------------------------------------------ */

/* reach[u * n + v]: step u happens before step v, from stream order and events alone. */
static bool *happens_before_closure(const plm__plan *plan) {
  const int n = plan->step_count;
  bool *reach = calloc((size_t)n * (size_t)n + 1, sizeof *reach);
  ck_assert_ptr_nonnull(reach);
  for (int v = 0; v < n; v++) {
    const plm__step *step = &plan->steps[v];
    for (int u = v - 1; u >= 0; u--) /* the previous step on the same stream */
      if (plan->steps[u].stream == step->stream) {
        reach[u * n + v] = true;
        break;
      }
    for (int w = 0; w < step->wait_count; w++) {
      int event = step->waits[w], recorders = 0;
      if (event == 0 && plan->stream_count > 1) continue; /* the fork: before every step */
      for (int u = 0; u < v; u++)
        if (plan->steps[u].record == event) {
          reach[u * n + v] = true;
          recorders++;
        }
      ck_assert_msg(recorders == 1, "event %d waited by step %d is recorded %d times before it",
                    event, v, recorders);
    }
  }
  for (int k = 0; k < n; k++) /* Warshall */
    for (int u = 0; u < n; u++)
      if (reach[u * n + k])
        for (int v = 0; v < n; v++)
          if (reach[k * n + v]) reach[u * n + v] = true;
  return reach;
}

/* A buffer of the workspace as the checker sees it: an intermediate tensor, or the
 * scratch of a step. */
typedef struct region {
  size_t begin, end;
  int tensor; /* the tensor, or -1 for step's scratch */
  int step;
} region;

/* The step that first writes region r. */
static int first_write(const plm__plan *plan, const region *r) {
  return r->tensor < 0 ? r->step : plan->tensors[r->tensor].producer;
}

/* Whether step s uses region r: produces or reads its tensor, or is its scratch's step. */
static bool uses(const plm__plan *plan, const region *r, int s) {
  if (r->tensor < 0) return s == r->step;
  bool used = plan->tensors[r->tensor].producer == s;
  for (int k = 0; k < PLM__PIPE_MAX_IO; k++) used |= plan->steps[s].inputs[k] == r->tensor;
  return used;
}

/* Every use of a happens before b is first written. */
static bool uses_before(const plm__plan *plan, const bool *reach, const region *a,
                        const region *b) {
  const int n = plan->step_count, def = first_write(plan, b);
  for (int s = 0; s < n; s++)
    if (uses(plan, a, s) && !reach[s * n + def]) return false;
  return true;
}

/* The in-place group of a workspace tensor: follow in-place steps back to the first. */
static int group_of(const plm__plan *plan, int t) {
  for (;;) {
    int p = plan->tensors[t].producer;
    if (p < 0 || !plan->steps[p].in_place || plan->steps[p].outputs[0] != t) return t;
    t = plan->steps[p].inputs[0];
  }
}

/* Regions that may share memory however they are used: one in-place group. */
static bool same_memory(const plm__plan *plan, const region *a, const region *b) {
  return a->tensor >= 0 && b->tensor >= 0 && group_of(plan, a->tensor) == group_of(plan, b->tensor);
}

/* The scratch step s's op asks for on the test's context, with its tunables' defaults,
 * for descriptions of the step's inputs (and state) and its parameters. */
static size_t op_scratch(const plm__plan *plan, int s) {
  const plm__step *step = &plan->steps[s];
  const plm__op_desc *op = plm__op_get(step->kind);
  plm_tensor in[PLM__OP_MAX_IN], state;
  plm__op_call call = {.params = &step->params};
  for (int k = 0; k < op->input_count; k++) {
    if (step->inputs[k] < 0) continue;
    in[k] = plm__tensor_describe(plm_test_ctx, &plan->tensors[step->inputs[k]].shape);
    call.in[k] = &in[k];
  }
  if (step->state >= 0) {
    state = plm__tensor_describe(plm_test_ctx, &plan->states[step->state].shape);
    call.state = &state;
  }
  return scratch_of(op, &call);
}

static void check_plan(const plm__plan *plan) {
  bool *reach = happens_before_closure(plan);
  const int n = plan->step_count;
  /* The planner's clocks agree with the closure. */
  for (int u = 0; u < n; u++)
    for (int v = 0; v < n; v++)
      ck_assert_msg(plm__plan_happens_before(plan, u, v) == reach[u * n + v],
                    "clock says %d before %d is %d", u, v, !reach[u * n + v]);
  for (int v = 0; v < n; v++) {
    const plm__step *step = &plan->steps[v];
    ck_assert_int_lt(step->stream, plan->stream_count);
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
      int t = step->inputs[k];
      if (t < 0 || plan->tensors[t].kind != PLM__TENSOR_VALUE) continue;
      int p = plan->tensors[t].producer;
      ck_assert_msg(p >= 0 && reach[p * n + v], "step %d reads t%d before step %d wrote it", v,
                    t + 1, p);
    }
  }
  /* The workspace's regions: the intermediates, then every step's scratch, of the size its
   * op asks for. */
  region *regions = calloc((size_t)plan->tensor_count + (size_t)n + 1, sizeof *regions);
  ck_assert_ptr_nonnull(regions);
  int count = 0;
  size_t tensors = 0, scratch = 0;
  for (int t = 0; t < plan->tensor_count; t++) {
    if (plan->location[t] != PLM__AT_WORKSPACE) continue;
    regions[count++] = (region){plan->offset[t], plan->offset[t] + plan->tensors[t].bytes, t, -1};
    tensors += aligned(plan->tensors[t].bytes);
  }
  for (int v = 0; v < n; v++) {
    const plm__step *step = &plan->steps[v];
    ck_assert_msg(step->scratch_bytes == op_scratch(plan, v),
                  "step %d: scratch %zu, its op needs %zu", v, step->scratch_bytes,
                  op_scratch(plan, v));
    if (!step->scratch_bytes) continue;
    regions[count++] =
        (region){step->scratch_offset, step->scratch_offset + step->scratch_bytes, -1, v};
    scratch += aligned(step->scratch_bytes);
  }
  for (int a = 0; a < count; a++) {
    ck_assert_uint_eq(regions[a].begin % 256, 0);
    ck_assert_uint_le(regions[a].end, plan->workspace_bytes);
    for (int b = a + 1; b < count; b++) {
      const region *ra = &regions[a], *rb = &regions[b];
      if (ra->end <= rb->begin || rb->end <= ra->begin || same_memory(plan, ra, rb)) continue;
      ck_assert_msg(uses_before(plan, reach, ra, rb) || uses_before(plan, reach, rb, ra),
                    "%s%d [%zu, %zu) and %s%d [%zu, %zu) share memory while both may be live",
                    ra->tensor >= 0 ? "tensor t" : "the scratch of step ",
                    ra->tensor >= 0 ? ra->tensor + 1 : ra->step, ra->begin, ra->end,
                    rb->tensor >= 0 ? "tensor t" : "the scratch of step ",
                    rb->tensor >= 0 ? rb->tensor + 1 : rb->step, rb->begin, rb->end);
    }
  }
  ck_assert_uint_eq(tensors, plan->intermediate_bytes);
  ck_assert_uint_eq(scratch, plan->scratch_bytes);
  ck_assert_uint_le(plan->workspace_bytes, plan->intermediate_bytes + plan->scratch_bytes);
  if (plan->stream_count == 1) ck_assert_uint_ge(plan->workspace_bytes, plan->peak_live_bytes);
  free(regions);
  free(reach);
}

/* ---- planner ---------------------------------------------------------------------------- */

START_TEST(test_default_chain_plan) {
  const int64_t dims[2] = {512, 512};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                  "sobel ! entropy window=16 bins=64 range=auto ! threshold "
                                  "value=4.5 ! label connectivity=8 ! regions",
                                  PLM_DTYPE_U16, 2, dims, &pl));
  int inputs = 0, outputs = 0;
  PLM_CHECK_OK(plm_pipeline_io_count(pl, &inputs, &outputs));
  ck_assert_int_eq(inputs, 1);
  ck_assert_int_eq(outputs, 2);
  plm_shape table, count;
  PLM_CHECK_OK(plm_pipeline_output_shape(pl, 0, &table));
  PLM_CHECK_OK(plm_pipeline_output_shape(pl, 1, &count));
  ck_assert_int_eq(table.dtype, PLM_DTYPE_F64);
  ck_assert_int_eq(table.dims[0], 256 * 256); /* the 8-connectivity bound */
  ck_assert_int_eq(table.dims[1], PLM_REGION_COLUMNS);
  ck_assert_int_eq(count.dtype, PLM_DTYPE_I32);
  ck_assert_int_eq(count.dims[0], 1);

  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  const size_t frame_f32 = 512 * 512 * 4, mask = 512 * 512;
  const plm_entropy_params ep = {.window = 16, .bins = 64, .range_auto = true};
  const size_t entropy = entropy_scratch(PLM_DTYPE_F32, 512, 512, &ep);
  const size_t label = label_scratch(2, dims, 8);
  ck_assert_uint_gt(entropy, 0);
  ck_assert_uint_eq(info.intermediate_bytes, 2 * frame_f32 + mask + frame_f32);
  ck_assert_uint_eq(info.scratch_bytes, entropy + label);
  /* The peak: sobel's and entropy's f32 and entropy's scratch at step 1, or the mask, the
   * labels and label's scratch at step 3; the workspace is it. */
  const size_t peak = max_size(2 * frame_f32 + entropy, mask + frame_f32 + label);
  ck_assert_uint_eq(info.peak_live_bytes, peak);
  ck_assert_uint_eq(info.workspace_bytes, peak);
  ck_assert_int_eq(info.nodes, 5);
  ck_assert_int_eq(info.steps, 5);
  ck_assert_int_eq(info.streams, 1);
  ck_assert_int_eq(info.events, 0);
  ck_assert_int_eq(info.fusable_chains, 0); /* range=auto is not fusable */
  ck_assert_int_eq(info.frames_in_flight, 1);
  check_plan(&pl->plan);
  /* The description shows entropy's scratch where the plan put it, and the sum. */
  const plm__step *step = &pl->plan.steps[1];
  ck_assert_int_eq(step->kind, PLM__OP_entropy);
  char text[4096], line[160];
  PLM_CHECK_OK(plm_pipeline_describe(pl, text, sizeof text, NULL));
  snprintf(line, sizeof line, "\n    scratch %zu bytes at workspace[%zu, %zu)\n",
           step->scratch_bytes, step->scratch_offset, step->scratch_offset + step->scratch_bytes);
  ck_assert_msg(strstr(text, line) != NULL, "no '%s' in\n%s", line, text);
  snprintf(line, sizeof line, "; intermediates %zu bytes; scratch %zu bytes; ",
           info.intermediate_bytes, info.scratch_bytes);
  ck_assert_msg(strstr(text, line) != NULL, "no '%s' in\n%s", line, text);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* A chain of random ops whose sizes go up and down: on one stream the workspace must be
 * the peak of live bytes, max over steps of (input + output + the step's scratch),
 * computed here (no step in place, so every tensor has memory of its own; entropy's auto
 * range keeps sobel -> entropy -> threshold from being fused). */
static void check_random_chain(uint64_t *seed, int length) {
  const int64_t dims[2] = {20 + (int64_t)(plm_test_random(seed) % 40),
                           20 + (int64_t)(plm_test_random(seed) % 40)};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  plm_pipe_tensor t;
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, dims, &t));
  size_t previous = 0, expected = 0;
  for (int i = 0; i < length; i++) {
    plm_shape shape;
    PLM_CHECK_OK(plm_pipeline_tensor_shape(pl, t, &shape));
    int choice = (int)(plm_test_random(seed) % 5);
    if (choice == 1 && shape.dtype == PLM_DTYPE_U8) choice = 0; /* not in place: see above */
    size_t scratch = 0;
    if (choice == 4) {
      plm_entropy_params ep = {.window = 3, .bins = 16, .range_auto = true};
      scratch = entropy_scratch(shape.dtype, shape.dims[0], shape.dims[1], &ep);
      PLM_CHECK_OK(plm_pipeline_add_entropy(pl, t, &ep, &t));
    } else if (choice == 0) {
      plm_sobel_params sp = plm_sobel_params_default();
      PLM_CHECK_OK(plm_pipeline_add_sobel(pl, t, &sp, NULL, NULL, &t));
    } else if (choice == 1) {
      plm_threshold_params tp = {.value = 3};
      PLM_CHECK_OK(plm_pipeline_add_threshold(pl, t, &tp, &t));
    } else {
      /* Grows (pad 3) or shrinks (stride 2) the frame. */
      plm_conv2d_params cp = plm_conv2d_params_default();
      if (choice == 2 || shape.dims[0] < 12 || shape.dims[1] < 12)
        cp.pad_y = cp.pad_x = 3;
      else
        cp.stride_y = cp.stride_x = 2;
      PLM_CHECK_OK(plm_pipeline_add_conv2d(pl, t, kernel3(pl, 1), &cp, &t));
    }
    PLM_CHECK_OK(plm_pipeline_tensor_shape(pl, t, &shape));
    size_t bytes = i + 1 < length ? aligned(shape_bytes(&shape)) : 0; /* the last is an output */
    if (previous + bytes + scratch > expected) expected = previous + bytes + scratch;
    previous = bytes;
  }
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, t));
  plm_plan_config one_stream = {.max_streams = 1};
  PLM_CHECK_OK(plm_pipeline_compile(pl, &one_stream));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_uint_eq(info.peak_live_bytes, expected);
  ck_assert_msg(info.workspace_bytes == expected, "chain of %d: workspace %zu, optimum %zu", length,
                info.workspace_bytes, expected);
  check_plan(&pl->plan);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}

START_TEST(test_chains_are_optimal) {
  uint64_t seed = 0x5eed;
  for (int i = 0; i < 60; i++) check_random_chain(&seed, 2 + i % 9);
}
END_TEST

/* Random DAGs: every node reads earlier tensors chosen at random, so there are branches
 * and joins (regions reads an intensity of another branch; conv2d a computed kernel). */
static plm_pipeline *random_dag(uint64_t *seed, int nodes) {
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  plm_pipe_tensor pool[64];
  int count = 0;
  const int64_t dims[2] = {16 + (int64_t)(plm_test_random(seed) % 24), 24};
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U8, 2, dims, &pool[count++]));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, dims, &pool[count++]));
  for (int n = 0; n < nodes && count < 60; n++) {
    plm_pipe_tensor in = pool[plm_test_random(seed) % (uint64_t)count];
    plm_shape shape;
    PLM_CHECK_OK(plm_pipeline_tensor_shape(pl, in, &shape));
    bool image = shape.ndim == 2 && shape.dtype != PLM_DTYPE_I32 && shape.dtype != PLM_DTYPE_F64;
    if (!image) continue;
    switch (plm_test_random(seed) % 6) {
      case 0: {
        plm_sobel_params sp = plm_sobel_params_default();
        plm_pipe_tensor gx, mag;
        bool both = plm_test_random(seed) % 2;
        PLM_CHECK_OK(plm_pipeline_add_sobel(pl, in, &sp, both ? &gx : NULL, NULL, &mag));
        if (both) pool[count++] = gx;
        pool[count++] = mag;
        break;
      }
      case 1: {
        plm_threshold_params tp = {.value = 2};
        PLM_CHECK_OK(plm_pipeline_add_threshold(pl, in, &tp, &pool[count++]));
        break;
      }
      case 2: {
        plm_conv2d_params cp = plm_conv2d_params_default();
        cp.pad_y = cp.pad_x = 1; /* keeps the size, so joins stay possible */
        PLM_CHECK_OK(plm_pipeline_add_conv2d(pl, in, kernel3(pl, 2), &cp, &pool[count++]));
        break;
      }
      case 3: {
        plm_entropy_params ep = {.window = 3, .bins = 8, .range_lo = 0, .range_hi = 50};
        PLM_CHECK_OK(plm_pipeline_add_entropy(pl, in, &ep, &pool[count++]));
        break;
      }
      default: {
        plm_pipe_tensor mask = in, labels, n_labels, table;
        if (shape.dtype != PLM_DTYPE_U8) {
          plm_threshold_params tp = {.value = 1, .compare = PLM_COMPARE_GE};
          PLM_CHECK_OK(plm_pipeline_add_threshold(pl, in, &tp, &mask));
          pool[count++] = mask;
        }
        plm_label_params lp = {.connectivity = 4};
        PLM_CHECK_OK(plm_pipeline_add_label(pl, mask, &lp, &labels, &n_labels));
        plm_pipe_tensor intensity = pool[plm_test_random(seed) % (uint64_t)count];
        PLM_CHECK_OK(plm_pipeline_tensor_shape(pl, intensity, &shape));
        if (shape.ndim != 2 || shape.dtype == PLM_DTYPE_I32 || shape.dtype == PLM_DTYPE_F64)
          intensity = (plm_pipe_tensor){0};
        PLM_CHECK_OK(plm_pipeline_add_regions(pl, labels, intensity, n_labels, 0, &table));
        pool[count++] = labels;
        if (plm_test_random(seed) % 2) PLM_CHECK_OK(plm_pipeline_mark_output(pl, n_labels));
        break;
      }
    }
  }
  /* The last tensor and a few others are outputs (some of them also read by others). */
  for (int i = 2; i < count; i++)
    if (i == count - 1 || plm_test_random(seed) % 5 == 0) {
      plm_status status = plm_pipeline_mark_output(pl, pool[i]);
      ck_assert(status == PLM_OK || status == PLM_ERR_INVALID_ARG); /* twice is refused */
    }
  return pl;
}

START_TEST(test_random_dags_never_overlap_live_tensors) {
  uint64_t seed = 0xda65;
  int multi_stream = 0;
  for (int i = 0; i < 80; i++) {
    plm_pipeline *pl = random_dag(&seed, 4 + i % 12);
    plm_plan_config cfg = {.max_streams = 1 + i % 4, .frames_in_flight = 1 + i % 3};
    if (i % 7 == 0) cfg.flags = PLM_PLAN_NO_REUSE;
    PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
    check_plan(&pl->plan);
    plm_plan_info info;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    ck_assert_int_le(info.streams, cfg.max_streams);
    multi_stream += info.streams > 1;
    if (cfg.flags & PLM_PLAN_NO_REUSE) {
      ck_assert_uint_eq(info.workspace_bytes, info.intermediate_bytes + info.scratch_bytes);
      ck_assert_int_eq(info.in_place, 0);
    }
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  ck_assert_int_gt(multi_stream, 10); /* the generator does make branches */
}
END_TEST

START_TEST(test_branches_get_streams_and_events) {
  const int64_t dims[2] = {32, 32};
  plm_pipeline *pl = NULL;
  plm_pipe_tensor in, a, b, c, labels, count, table;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, dims, &in));
  plm_sobel_params sp = plm_sobel_params_default();
  plm_threshold_params tp = {.value = 100};
  plm_conv2d_params cp = {.stride_y = 1, .stride_x = 1, .pad_y = 1, .pad_x = 1};
  PLM_CHECK_OK(plm_pipeline_add_sobel(pl, in, &sp, NULL, NULL, &a));      /* branch 1 */
  PLM_CHECK_OK(plm_pipeline_add_conv2d(pl, in, kernel3(pl, 1), &cp, &b)); /* branch 2 */
  PLM_CHECK_OK(plm_pipeline_add_threshold(pl, a, &tp, &c));
  plm_label_params lp = {0};
  PLM_CHECK_OK(plm_pipeline_add_label(pl, c, &lp, &labels, &count));
  PLM_CHECK_OK(plm_pipeline_add_regions(pl, labels, b, count, 50, &table)); /* the join */
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, table));
  char text[4096];
  size_t needed = 0;
  PLM_CHECK_OK(plm_pipeline_describe(pl, text, sizeof text, &needed));
  ck_assert_ptr_nonnull(strstr(text, "pipeline: 1 input(s), 5 node(s), 1 output(s)\n"));
  ck_assert_ptr_nonnull(strstr(text,
                               "  node 4: regions(labels=t6, intensity=t4, count=t7) "
                               "capacity=50 -> table=t8 f64 50x12 [output 0]\n"));
  ck_assert_ptr_null(strstr(text, "plan:"));
  plm_plan_config cfg = {.frames_in_flight = 2};
  PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_int_eq(info.streams, 2);
  /* The fork, conv2d's event for the join, and stream 1's join. */
  ck_assert_int_eq(info.events, 3);
  ck_assert_uint_eq(info.constant_bytes, 256);
  const plm__plan *plan = &pl->plan;
  ck_assert_int_eq(plan->steps[0].stream, 0); /* sobel */
  ck_assert_int_eq(plan->steps[1].stream, 1); /* conv2d */
  ck_assert_int_eq(plan->steps[1].waits[0], 0);
  ck_assert_int_eq(plan->steps[4].kind, PLM__OP_regions);
  ck_assert_int_eq(plan->steps[4].stream, 0);
  check_plan(plan);

  PLM_CHECK_OK(plm_pipeline_describe(pl, text, sizeof text, &needed));
  ck_assert_uint_eq(needed, strlen(text) + 1);
  ck_assert_ptr_nonnull(
      strstr(text, "plan: 5 step(s) on 2 stream(s), 3 event(s) per slot, 2 frame"));
  ck_assert_ptr_nonnull(strstr(text, "step 1 [stream 1] conv2d"));
  ck_assert_ptr_nonnull(strstr(text, "stream 1 records e2 at the end; stream 0 waits for it"));
  /* A short buffer gets the beginning, NUL-terminated; size 0 only measures. */
  char small[16];
  size_t measured = 0;
  PLM_CHECK_OK(plm_pipeline_describe(pl, small, sizeof small, &measured));
  ck_assert_uint_eq(measured, needed);
  ck_assert_uint_eq(strlen(small), sizeof small - 1);
  ck_assert_int_eq(strncmp(small, text, sizeof small - 1), 0);
  PLM_CHECK_OK(plm_pipeline_describe(pl, NULL, 0, &measured));
  ck_assert_uint_eq(measured, needed);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

START_TEST(test_in_place_and_no_reuse) {
  const int64_t dims[2] = {40, 40};
  for (int flags = 0; flags < 2; flags++) {
    plm_pipeline *pl = NULL;
    plm_pipe_tensor in, edges, mask, inverse, labels, count;
    PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
    PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, dims, &in));
    plm_sobel_params sp = plm_sobel_params_default();
    plm_threshold_params above = {.value = 1}, zero = {.value = 0, .compare = PLM_COMPARE_LE};
    PLM_CHECK_OK(plm_pipeline_add_sobel(pl, in, &sp, NULL, NULL, &edges));
    PLM_CHECK_OK(plm_pipeline_add_threshold(pl, edges, &above, &mask));
    PLM_CHECK_OK(plm_pipeline_add_threshold(pl, mask, &zero, &inverse)); /* u8 -> u8 */
    plm_label_params lp = {0};
    PLM_CHECK_OK(plm_pipeline_add_label(pl, inverse, &lp, &labels, &count));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, labels));
    plm_plan_config cfg = {.flags = flags ? PLM_PLAN_NO_REUSE : 0};
    PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
    plm_plan_info info;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    const plm__plan *plan = &pl->plan;
    const int m = (int)mask.id - 1, inv = (int)inverse.id - 1;
    if (flags == 0) {
      ck_assert_int_eq(info.in_place, 1);
      ck_assert(plan->steps[2].in_place);
      ck_assert_uint_eq(plan->offset[m], plan->offset[inv]);
    } else {
      ck_assert_int_eq(info.in_place, 0);
      ck_assert_uint_ne(plan->offset[m], plan->offset[inv]);
      ck_assert_uint_eq(info.workspace_bytes, info.intermediate_bytes + info.scratch_bytes);
    }
    check_plan(plan);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

/* ---- fusion ------------------------------------------------------------------------------- */

typedef enum chain_variant {
  FUSABLE,
  AUTO_RANGE,    /* entropy with range=auto */
  MIDDLE_OUTPUT, /* entropy's output is also a pipeline output */
  SECOND_READER, /* sobel's magnitude is also read by a threshold */
  GX_USED,       /* sobel also makes gx, which is an output */
  GX_UNUSED,     /* sobel also makes gx, which nothing reads: pruned, still fusable */
  INTO_SEGMENT,  /* the threshold is segment's first part, but segment's regions also
                    read the entropy (as the intensity): not fusable */
  INTO_LABEL     /* the mask goes on to label and regions (intensity: the input) */
} chain_variant;

static plm_pipeline *sobel_entropy_threshold(chain_variant variant) {
  const int64_t dims[2] = {24, 30};
  plm_pipeline *pl = NULL;
  plm_pipe_tensor in, gx, mag, ent, mask, other;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, dims, &in));
  plm_sobel_params sp = plm_sobel_params_default();
  bool gx_wanted = variant == GX_USED || variant == GX_UNUSED;
  PLM_CHECK_OK(plm_pipeline_add_sobel(pl, in, &sp, gx_wanted ? &gx : NULL, NULL, &mag));
  plm_entropy_params ep = {.window = 5,
                           .bins = 32,
                           .range_lo = 0,
                           .range_hi = 4000,
                           .range_auto = variant == AUTO_RANGE};
  PLM_CHECK_OK(plm_pipeline_add_entropy(pl, mag, &ep, &ent));
  if (variant == INTO_LABEL) {
    plm_threshold_params tp = {.value = 2.5};
    plm_label_params lp = {0};
    plm_pipe_tensor labels, count, table;
    PLM_CHECK_OK(plm_pipeline_add_threshold(pl, ent, &tp, &mask));
    PLM_CHECK_OK(plm_pipeline_add_label(pl, mask, &lp, &labels, &count));
    PLM_CHECK_OK(plm_pipeline_add_regions(pl, labels, in, count, 100, &table));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, table));
    return pl;
  }
  if (variant == INTO_SEGMENT) {
    plm_segment_params seg = {.value = 2.5};
    plm_pipe_tensor table;
    PLM_CHECK_OK(plm_pipeline_add_segment(pl, ent, &seg, 100, NULL, NULL, &table));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, table));
    return pl;
  }
  plm_threshold_params tp = {.value = 2.5};
  PLM_CHECK_OK(plm_pipeline_add_threshold(pl, ent, &tp, &mask));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, mask));
  if (variant == MIDDLE_OUTPUT) PLM_CHECK_OK(plm_pipeline_mark_output(pl, ent));
  if (variant == SECOND_READER) {
    PLM_CHECK_OK(plm_pipeline_add_threshold(pl, mag, &tp, &other));
    PLM_CHECK_OK(plm_pipeline_mark_output(pl, other));
  }
  if (variant == GX_USED) PLM_CHECK_OK(plm_pipeline_mark_output(pl, gx));
  return pl;
}

/* The chains found, and fused: by default on host and not on cuda (plume/pipeline.h),
 * with PLM_PLAN_FUSE on both. */
START_TEST(test_fusion_recogniser) {
  const int expected[] = {[FUSABLE] = 1, [AUTO_RANGE] = 0, [MIDDLE_OUTPUT] = 0, [SECOND_READER] = 0,
                          [GX_USED] = 0, [GX_UNUSED] = 1,  [INTO_SEGMENT] = 0,  [INTO_LABEL] = 1};
  const bool fused_by_default = plm_test_backend != PLM_BACKEND_CUDA;
  for (int variant = FUSABLE; variant <= INTO_LABEL; variant++) {
    for (int forced = 0; forced < 2; forced++) {
      plm_pipeline *pl = sobel_entropy_threshold((chain_variant)variant);
      const plm_plan_config cfg = {.flags = forced ? PLM_PLAN_FUSE : PLM_PLAN_DEFAULT};
      PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
      plm_plan_info info;
      PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
      ck_assert_int_eq(info.fusable_chains, expected[variant]);
      ck_assert_int_eq(info.fused_steps, forced || fused_by_default ? expected[variant] : 0);
      PLM_CHECK_OK(plm_pipeline_destroy(pl));
    }
    plm_pipeline *pl = sobel_entropy_threshold((chain_variant)variant);
    PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
    plm_plan_info info;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    ck_assert_msg(info.fusable_chains == expected[variant], "variant %d: %d chains", variant,
                  info.fusable_chains);
    /* Which steps: sobel, entropy and threshold, found on the unfused plan. */
    if (expected[variant]) {
      plm_plan_config cfg = {.frames_in_flight = 1, .max_streams = 4};
      plm__plan plan;
      PLM_CHECK_OK(plm__plan_build(pl->ctx, &pl->graph, &cfg, false, &plan));
      plm__fusion found[2];
      ck_assert_int_eq(plm__plan_find_fusions(&plan, found, 2), 1);
      ck_assert_int_eq(plan.steps[found[0].sobel].kind, PLM__OP_sobel);
      ck_assert_int_eq(plan.steps[found[0].entropy].kind, PLM__OP_entropy);
      ck_assert_int_eq(plan.steps[found[0].threshold].kind, PLM__OP_threshold);
      ck_assert_int_eq(plan.steps[found[0].sobel].nodes[0], 0);
      ck_assert_int_eq(plan.steps[found[0].entropy].nodes[0], 1);
      ck_assert_int_eq(plan.steps[found[0].threshold].nodes[0], 2);
      plm__plan_free(&plan);
    }
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

/* The substitution, planned but not run: one fused step from the input to the mask, the
 * intermediates gone from the workspace. */
START_TEST(test_fusion_substitution) {
  for (int variant = FUSABLE; variant <= INTO_LABEL; variant += INTO_LABEL - FUSABLE) {
    plm_pipeline *pl = sobel_entropy_threshold((chain_variant)variant);
    plm_plan_config cfg = {.frames_in_flight = 1, .max_streams = 4};
    plm__plan plan;
    PLM_CHECK_OK(plm__plan_build(pl->ctx, &pl->graph, &cfg, true, &plan));
    ck_assert_int_eq(plan.fused_steps, 1);
    ck_assert_int_eq(plan.steps[0].kind, PLM__OP_sobel_entropy_threshold);
    ck_assert_int_eq(plan.steps[0].inputs[0], 0); /* the input frame */
    ck_assert_int_eq(plan.steps[0].nodes[0], 0);
    ck_assert_int_eq(plan.steps[0].nodes[1], 1);
    ck_assert_int_eq(plan.steps[0].nodes[2], 2);
    ck_assert_int_eq(plan.steps[0].params.sobel_entropy_threshold.entropy.window, 5);
    ck_assert_double_eq(plan.steps[0].params.sobel_entropy_threshold.threshold.value, 2.5);
    /* The fused step's scratch (none on cuda at 32 bins: shared memory). */
    const plm_shape frame = {.dtype = PLM_DTYPE_U16, .ndim = 2, .dims = {24, 30}};
    const plm_tensor in = plm__tensor_describe(plm_test_ctx, &frame);
    const plm__op_call step_call = {.in = {&in},
                                    .params = &plan.steps[0].params.sobel_entropy_threshold};
    const size_t fused = scratch_of(&plm__op_sobel_entropy_threshold, &step_call);
    ck_assert_uint_eq(plan.steps[0].scratch_bytes, fused);
    if (variant == FUSABLE) {
      ck_assert_int_eq(plan.step_count, 1);
      ck_assert_int_eq(plan.location[plan.steps[0].outputs[0]], PLM__AT_OUTPUT);
      ck_assert_uint_eq(plan.workspace_bytes, aligned(fused));
    } else { /* then label and regions read the fused mask */
      ck_assert_int_eq(plan.step_count, 3);
      ck_assert_int_eq(plan.steps[1].inputs[0], plan.steps[0].outputs[0]);
      /* The mask and the fused scratch at step 0, or the mask, the labels, the count and
       * label's scratch at step 1. */
      const size_t label = label_scratch(2, frame.dims, 8);
      ck_assert_uint_eq(plan.workspace_bytes,
                        max_size(aligned(24 * 30) + aligned(fused),
                                 aligned(24 * 30) + aligned(24 * 30 * 4) + 256 + label));
    }
    check_plan(&plan);
    plm__plan_free(&plan);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

/* ---- the parser --------------------------------------------------------------------------- */

START_TEST(test_parser_errors) {
  static const struct {
    const char *text, *message;
  } cases[] = {
      {"sobl", "element 1 'sobl': unknown element (one of conv2d, sobel"},
      {"sobel ! entropy windw=16",
       "element 2 'entropy': unknown key 'windw' (entropy takes "
       "window, bins, range)"},
      {"sobel ! entropy window=abc bins=64 range=auto",
       "element 2 'entropy': key 'window': 'abc' is not an integer in 1..255"},
      {"sobel ! entropy window=300 bins=64 range=auto", "key 'window': '300' is not an integer"},
      {"sobel ! entropy window=9 bins=64 range=1,x",
       "element 2 'entropy': key 'range': '1,x' is not LO,HI (two finite numbers) or auto"},
      {"sobel ! entropy window=9", "element 2 'entropy': missing key 'bins'"},
      {"sobel ! entropy window=9 bins=8", "element 2 'entropy': missing key 'range'"},
      {"entropy window=9 range=0,1", "element 1 'entropy': key 'range' is for f32 input, not u16"},
      {"sobel ! threshold", "element 2 'threshold': missing key 'value'"},
      {"threshold value=nan", "element 1 'threshold': key 'value': 'nan' is not a finite number"},
      {"threshold value=1 cmp=gtx", "key 'cmp': 'gtx' is not one of gt, ge, lt, le"},
      {"threshold value=1 value=2", "element 1 'threshold': key 'value' is given twice"},
      {"threshold value", "element 1 'threshold': 'value' is not key=value"},
      {"threshold =1", "element 1 'threshold': '=1' is not key=value"},
      {"sobel ! ! threshold value=1", "element 2 is empty (nothing between two '!')"},
      {"sobel !", "element 2 is empty (the text ends with '!')"},
      {"sobel ! threshold value=1 !  ", "element 3 is empty (the text ends with '!')"},
      {"! sobel", "element 1 is empty (the text starts with '!')"},
      {"", "element 1 is empty (the text is empty)"},
      {"  \t ", "element 1 is empty (the text is empty)"},
      {"sobel ! label", "element 2 'label': mask->dtype f32 is not u8"},
      {"threshold value=9 ! label connectivity=6", "key 'connectivity': '6' is not one of 4, 8"},
      {"regions", "element 1 'regions': needs a label element just before it"},
      {"threshold value=1 ! label ! regions capacity=0",
       "element 3 'regions': key 'capacity': '0' is not an integer"},
      {"threshold value=1 ! label ! regions capacity=9223372036854775807",
       "element 3 'regions': capacity 9223372036854775807 is more than the 160 regions a 16x20 "
       "frame can have"},
      {"threshold value=1 ! label ! regions intensity=frame",
       "key 'intensity': 'frame' is not one of input, none"},
      {"conv2d", "element 1 'conv2d': missing key 'kernel'"},
      {"conv2d kernel=gauss:4:1", "element 1 'conv2d': key 'kernel': 'gauss:4:1' is not"},
      {"conv2d kernel=log:1:1", "key 'kernel': 'log:1:1' is not NAME:K:SIGMA (K odd, 3..31"},
      {"conv2d kernel=gauss:5:0", "key 'kernel': 'gauss:5:0' is not NAME:K:SIGMA"},
      {"conv2d kernel=gauss:3:1e-200",
       "key 'kernel': 'gauss:3:1e-200': SIGMA 1e-200 gives taps that are not finite numbers"},
      {"conv2d kernel=log:3:1e-100",
       "key 'kernel': 'log:3:1e-100': SIGMA 1e-100 gives taps that are not finite numbers"},
      {"conv2d kernel=box:32", "key 'kernel': 'box:32' is not box:K (K 1..31)"},
      {"conv2d kernel=1,2,3", "key 'kernel': 3 values are not a square; give size=KHxKW"},
      {"conv2d kernel=1,2,3 size=2x2", "key 'kernel': 3 values, but size=2x2 needs 4"},
      {"conv2d kernel=1,2,3 size=1by3", "key 'size': '1by3' is not KHxKW"},
      {"conv2d kernel=1,2,,3", "key 'kernel': value 3 of '1,2,,3' is not a finite f32"},
      {"conv2d kernel=box:3 size=3x3", "key 'size' is for inline kernels, not 'box:3'"},
      {"conv2d kernel=box:4 pad=same", "key 'pad': 'same' needs a kernel of odd sizes, not 4x4"},
      {"conv2d kernel=box:3 stride=0,1", "key 'stride': '0,1' is not SY,SX"},
      {"conv2d kernel=box:3 pad=1", "key 'pad': '1' is not PY,PX"},
      {"conv2d kernel=box:3 border=mirror",
       "key 'border': 'mirror' is not one of zero, replicate, reflect101"},
      {"conv2d kernel=box:31", "element 1 'conv2d': "}, /* the op: output smaller than 1x1 */
  };
  const int64_t dims[2] = {16, 20};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    plm_pipeline *pl = (plm_pipeline *)&pl; /* must be reset to NULL */
    plm_clear_error();
    plm_status status =
        plm_pipeline_parse(plm_test_ctx, cases[i].text, PLM_DTYPE_U16, 2, dims, &pl);
    ck_assert_msg(status == PLM_ERR_INVALID_ARG, "'%s' -> %s (%s)", cases[i].text,
                  plm_status_str(status), plm_last_error());
    ck_assert_ptr_null(pl);
    ck_assert_msg(strncmp(plm_last_error(), "plm_pipeline_parse: ", 20) == 0 &&
                      strstr(plm_last_error(), cases[i].message) != NULL,
                  "'%s': message \"%s\" does not have \"%s\"", cases[i].text, plm_last_error(),
                  cases[i].message);
  }
  /* A bad input shape, and NULL arguments. */
  plm_pipeline *pl = NULL;
  const int64_t zero[2] = {0, 4};
  PLM_CHECK_FAILS(plm_pipeline_parse(plm_test_ctx, "sobel", PLM_DTYPE_U16, 2, zero, &pl),
                  PLM_ERR_INVALID_ARG, "plm_pipeline_parse: input: dims[0] is 0");
  PLM_CHECK_FAILS(plm_pipeline_parse(plm_test_ctx, NULL, PLM_DTYPE_U16, 2, dims, &pl),
                  PLM_ERR_INVALID_ARG, "text is NULL");
  PLM_CHECK_FAILS(plm_pipeline_parse(NULL, "sobel", PLM_DTYPE_U16, 2, dims, &pl),
                  PLM_ERR_INVALID_ARG, "ctx is NULL");
}
END_TEST

START_TEST(test_parser_accepts) {
  static const struct {
    const char *text;
    int nodes, outputs;
    plm_dtype first_output;
  } cases[] = {
      {"sobel", 1, 1, PLM_DTYPE_F32},
      {"  sobel border=replicate\t!threshold value=2.5e2 cmp=le  ", 2, 1, PLM_DTYPE_U8},
      {"conv2d kernel=gauss:5:1.5 pad=same border=reflect101 ! sobel", 2, 1, PLM_DTYPE_F32},
      {"conv2d kernel=1,0,-1,2,0,-2 size=2x3 stride=2,1 pad=0,1", 1, 1, PLM_DTYPE_F32},
      {"conv2d kernel=log:9:2 pad=4,4 ! threshold value=0", 2, 1, PLM_DTYPE_U8},
      {"entropy window=7 ! threshold value=3 ! label connectivity=4", 3, 2, PLM_DTYPE_I32},
      {"threshold value=100 ! label ! regions capacity=17 intensity=none", 3, 2, PLM_DTYPE_F64},
      {"segment value=100 cmp=ge connectivity=4 capacity=9", 1, 2, PLM_DTYPE_F64},
      {"sobel ! entropy window=16 bins=64 range=0,2000 ! threshold value=4.5", 3, 1, PLM_DTYPE_U8},
  };
  const int64_t dims[2] = {16, 20};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    plm_pipeline *pl = NULL;
    plm_status status =
        plm_pipeline_parse(plm_test_ctx, cases[i].text, PLM_DTYPE_U16, 2, dims, &pl);
    ck_assert_msg(status == PLM_OK, "'%s': %s", cases[i].text, plm_last_error());
    int outputs = 0;
    PLM_CHECK_OK(plm_pipeline_io_count(pl, NULL, &outputs));
    ck_assert_int_eq(outputs, cases[i].outputs);
    ck_assert_int_eq(pl->graph.node_count, cases[i].nodes);
    plm_shape shape;
    PLM_CHECK_OK(plm_pipeline_output_shape(pl, 0, &shape));
    ck_assert_int_eq(shape.dtype, cases[i].first_output);
    if (i == 3) { /* 2x3 kernel, stride 2,1, pad 0,1: (16-2)/2+1 x (20+2-3)/1+1 */
      ck_assert_int_eq(shape.dims[0], 8);
      ck_assert_int_eq(shape.dims[1], 20);
    }
    if (i == 7) ck_assert_int_eq(shape.dims[0], 9);
    PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

START_TEST(test_builtin_kernels) {
  float *taps = NULL;
  int kh = 0, kw = 0;
  PLM_CHECK_OK(plm__parse_kernel("box:4", NULL, &taps, &kh, &kw));
  ck_assert_int_eq(kh, 4);
  for (int i = 0; i < 16; i++) ck_assert_float_eq(taps[i], 1.0f / 16);
  free(taps);
  PLM_CHECK_OK(plm__parse_kernel("gauss:7:1.3", NULL, &taps, &kh, &kw));
  double sum = 0;
  for (int i = 0; i < 49; i++) sum += taps[i];
  ck_assert_double_eq_tol(sum, 1.0, 1e-6);
  /* exp(-r^2 / (2 sigma^2)) relative to the centre, symmetric. */
  ck_assert_double_eq_tol(taps[3 * 7 + 4] / taps[3 * 7 + 3], exp(-1 / (2 * 1.69)), 1e-6);
  ck_assert_float_eq(taps[0], taps[48]);
  ck_assert_float_eq(taps[6], taps[42]);
  free(taps);
  PLM_CHECK_OK(plm__parse_kernel("log:9:1.5", NULL, &taps, &kh, &kw));
  sum = 0;
  for (int i = 0; i < 81; i++) sum += taps[i];
  ck_assert_double_eq_tol(sum, 0.0, 1e-6);
  /* Positive centre, negative ring at r^2 > 2 sigma^2; the taps' differences follow
   * (1 / (pi s^4)) (1 - r^2 / (2 s^2)) exp(-r^2 / (2 s^2)) (the mean cancels out). */
  const double s2 = 1.5 * 1.5, pi = 3.14159265358979323846;
  double centre = 1 / (pi * s2 * s2),
         at3 = (1 - 9 / (2 * s2)) * exp(-9 / (2 * s2)) / (pi * s2 * s2);
  ck_assert(taps[40] > 0 && taps[40 + 3] < 0);
  ck_assert_double_eq_tol(taps[40] - taps[40 + 3], centre - at3, 1e-6);
  free(taps);
  PLM_CHECK_OK(plm__parse_kernel("1,-2.5,3e1,4", NULL, &taps, &kh, &kw));
  ck_assert_int_eq(kh, 2);
  ck_assert_float_eq(taps[1], -2.5f);
  ck_assert_float_eq(taps[2], 30.0f);
  free(taps);
}
END_TEST

/* ---- results against the ops one by one -------------------------------------------------- */

/* Random integer-valued frames of dtype, within 0..top. */
static void *random_frame(plm_dtype dtype, int64_t pixels, uint32_t top, uint64_t *seed) {
  size_t element = plm_dtype_size(dtype);
  unsigned char *host = malloc((size_t)pixels * element);
  ck_assert_ptr_nonnull(host);
  for (int64_t i = 0; i < pixels; i++) {
    uint32_t v = (uint32_t)(plm_test_random(seed) % (top + 1));
    if (dtype == PLM_DTYPE_U8) host[i] = (uint8_t)v;
    if (dtype == PLM_DTYPE_U16) {
      uint16_t u = (uint16_t)v;
      memcpy(host + i * 2, &u, 2);
    }
    if (dtype == PLM_DTYPE_F32) {
      float f = (float)v;
      memcpy(host + i * 4, &f, 4);
    }
  }
  return host;
}

static plm_tensor device_tensor(const plm_shape *shape) {
  plm_tensor t;
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, shape->dtype, shape->ndim, shape->dims, &t));
  /* Garbage, the same in every tensor, so that untouched table rows compare too. */
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, t.data, 0x5a, plm_tensor_bytes(&t)));
  return t;
}

static void *to_host(const plm_tensor *t) {
  void *host = malloc(plm_tensor_bytes(t));
  ck_assert_ptr_nonnull(host);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, host, t->data, plm_tensor_bytes(t),
                                 PLM_COPY_DEVICE_TO_HOST));
  return host;
}

/* What a reference computes: the ops one by one on plm_test_stream, from the input
 * tensors into the expected outputs (allocated here, freed by the caller). */
typedef void (*reference_fn)(const plm_tensor *inputs, plm_tensor *expected);

/* Run pl (compiled) on `frames` random frames and compare every output with the
 * reference's, byte for byte. Output `counted` (-1: none) is a count of components that
 * must not be 0 in every frame, so that the comparison covers the regions. */
static void check_against_reference(plm_pipeline *pl, reference_fn reference, uint32_t top,
                                    int frames, uint64_t seed, int counted) {
  int32_t most = 0;
  int n_in = 0, n_out = 0;
  PLM_CHECK_OK(plm_pipeline_io_count(pl, &n_in, &n_out));
  plm_tensor inputs[4], outputs[4], expected[4];
  void *host_in[4];
  for (int f = 0; f < frames; f++) {
    for (int i = 0; i < n_in; i++) {
      plm_shape shape;
      PLM_CHECK_OK(plm_pipeline_input_shape(pl, i, &shape));
      inputs[i] = device_tensor(&shape);
      host_in[i] = random_frame(shape.dtype, plm_tensor_numel(&inputs[i]), top, &seed);
      PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, inputs[i].data, host_in[i],
                                     plm_tensor_bytes(&inputs[i]), PLM_COPY_HOST_TO_DEVICE));
    }
    for (int o = 0; o < n_out; o++) {
      plm_shape shape;
      PLM_CHECK_OK(plm_pipeline_output_shape(pl, o, &shape));
      outputs[o] = device_tensor(&shape);
      expected[o] = device_tensor(&shape);
    }
    PLM_CHECK_OK(plm_pipeline_run(pl, inputs, outputs, plm_test_stream));
    reference(inputs, expected);
    for (int o = 0; o < n_out; o++) {
      void *got = to_host(&outputs[o]), *want = to_host(&expected[o]);
      PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
      ck_assert_msg(memcmp(got, want, plm_tensor_bytes(&outputs[o])) == 0,
                    "frame %d: output %d differs from the ops run one by one", f, o);
      if (o == counted && *(const int32_t *)got > most) most = *(const int32_t *)got;
      free(got);
      free(want);
      PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &outputs[o]));
      PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &expected[o]));
    }
    for (int i = 0; i < n_in; i++) {
      PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &inputs[i]));
      free(host_in[i]);
    }
  }
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  if (counted >= 0) ck_assert_int_gt(most, 0);
}

/* Scratch tensors of the references. */
static plm_tensor scratch(plm_dtype dtype, const plm_tensor *like) {
  plm_tensor t;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, like->ndim, like->dims, &t));
  return t;
}

static void release(plm_tensor *t) {
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, t));
}

/* The default pipeline: sobel ! entropy w16 b64 auto ! threshold 4.5 ! label 8 ! regions. */
static void default_reference(const plm_tensor *in, plm_tensor *expected) {
  plm_tensor mag = scratch(PLM_DTYPE_F32, &in[0]), ent = scratch(PLM_DTYPE_F32, &in[0]);
  plm_tensor mask = scratch(PLM_DTYPE_U8, &in[0]), labels = scratch(PLM_DTYPE_I32, &in[0]);
  plm_sobel_params sp = plm_sobel_params_default();
  plm_entropy_params ep = {.window = 16, .bins = 64, .range_auto = true};
  plm_threshold_params tp = {.value = 4.5};
  plm_label_params lp = {.connectivity = 8};
  PLM_CHECK_OK(plm_sobel(plm_test_stream, &in[0], &sp, NULL, NULL, &mag));
  PLM_CHECK_OK(plm_entropy(plm_test_stream, &mag, &ep, &ent));
  PLM_CHECK_OK(plm_threshold(plm_test_stream, &ent, &tp, &mask));
  PLM_CHECK_OK(plm_label(plm_test_stream, &mask, &lp, &labels, &expected[1]));
  PLM_CHECK_OK(plm_regions(plm_test_stream, &labels, &in[0], &expected[1], &expected[0]));
  release(&mag);
  release(&ent);
  release(&mask);
  release(&labels);
}

START_TEST(test_default_pipeline_equals_ops) {
  const plm_dtype dtypes[] = {PLM_DTYPE_U16, PLM_DTYPE_F32};
  for (int d = 0; d < 2; d++) {
    const int64_t dims[2] = {96, 128};
    plm_pipeline *pl = NULL;
    PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                    "sobel ! entropy window=16 bins=64 range=auto ! threshold "
                                    "value=4.5 ! label connectivity=8 ! regions",
                                    dtypes[d], 2, dims, &pl));
    PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
    check_against_reference(pl, default_reference, d ? 4000 : 16383, 3, 7u + (uint64_t)d, 1);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

/* The fusable chain with a fixed range, on to label and regions: the plan runs the fused
 * op, the reference the three ops it stands for, so fused equals unfused. */
static const plm_entropy_params FIXED_RANGE = {
    .window = 9, .bins = 64, .range_lo = 0.0, .range_hi = 30000.0};

static void fused_reference(const plm_tensor *in, plm_tensor *expected) {
  plm_tensor mag = scratch(PLM_DTYPE_F32, &in[0]), ent = scratch(PLM_DTYPE_F32, &in[0]);
  plm_tensor mask = scratch(PLM_DTYPE_U8, &in[0]), labels = scratch(PLM_DTYPE_I32, &in[0]);
  plm_sobel_params sp = plm_sobel_params_default();
  plm_threshold_params tp = {.value = 4.2}; /* about half the pixels of a noise frame */
  plm_label_params lp = {.connectivity = 8};
  PLM_CHECK_OK(plm_sobel(plm_test_stream, &in[0], &sp, NULL, NULL, &mag));
  PLM_CHECK_OK(plm_entropy(plm_test_stream, &mag, &FIXED_RANGE, &ent));
  PLM_CHECK_OK(plm_threshold(plm_test_stream, &ent, &tp, &mask));
  PLM_CHECK_OK(plm_label(plm_test_stream, &mask, &lp, &labels, &expected[1]));
  PLM_CHECK_OK(plm_regions(plm_test_stream, &labels, &in[0], &expected[1], &expected[0]));
  release(&mag);
  release(&ent);
  release(&mask);
  release(&labels);
}

START_TEST(test_fused_pipeline_equals_unfused_ops) {
  const plm_dtype dtypes[] = {PLM_DTYPE_U16, PLM_DTYPE_F32};
  const uint32_t tops[] = {4095, 4000};
  for (int d = 0; d < 2; d++) {
    const int64_t dims[2] = {77, 131};
    plm_pipeline *pl = NULL;
    PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                    "sobel ! entropy window=9 bins=64 range=0,30000 ! threshold "
                                    "value=4.2 ! label connectivity=8 ! regions capacity=2000",
                                    dtypes[d], 2, dims, &pl));
    const plm_plan_config fuse = {.flags = PLM_PLAN_FUSE}; /* cuda's default is unfused */
    PLM_CHECK_OK(plm_pipeline_compile(pl, &fuse));
    plm_plan_info info;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    ck_assert_int_eq(info.fused_steps, 1);
    check_against_reference(pl, fused_reference, tops[d], 3, 11u + (uint64_t)d, 1);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

/* Branches on several streams: a = sobel(in) > 100; b = conv2d(in, k) on another stream,
 * entropy of b with a fixed range; labels of a; regions of the labels with b as the
 * intensity (the join). Outputs: the entropy, the table, the count. */
static plm_tensor branch_kernel;
static plm_pipeline *branch_pipeline_with(const plm_plan_config *cfg) {
  const int64_t dims[2] = {48, 64};
  plm_pipeline *pl = NULL;
  plm_pipe_tensor in, mag, mask, conv, ent, labels, count, table;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, dims, &in));
  plm_sobel_params sp = plm_sobel_params_default();
  plm_threshold_params tp = {.value = 100};
  plm_conv2d_params cp = {
      .stride_y = 1, .stride_x = 1, .pad_y = 1, .pad_x = 1, .border = PLM_BORDER_REPLICATE};
  plm_entropy_params ep = {.window = 5, .bins = 16, .range_lo = 0, .range_hi = 2000};
  plm_label_params lp = {.connectivity = 4};
  PLM_CHECK_OK(plm_pipeline_add_sobel(pl, in, &sp, NULL, NULL, &mag));
  PLM_CHECK_OK(plm_pipeline_add_threshold(pl, mag, &tp, &mask));
  PLM_CHECK_OK(plm_pipeline_add_conv2d(pl, in, kernel3(pl, 1), &cp, &conv));
  PLM_CHECK_OK(plm_pipeline_add_entropy(pl, conv, &ep, &ent));
  PLM_CHECK_OK(plm_pipeline_add_label(pl, mask, &lp, &labels, &count));
  PLM_CHECK_OK(plm_pipeline_add_regions(pl, labels, conv, count, 300, &table));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, ent));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, table));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, count));
  PLM_CHECK_OK(plm_pipeline_compile(pl, cfg));
  return pl;
}

static plm_pipeline *branch_pipeline(int max_streams, int frames_in_flight) {
  plm_plan_config cfg = {.max_streams = max_streams, .frames_in_flight = frames_in_flight};
  return branch_pipeline_with(&cfg);
}

static void branch_reference(const plm_tensor *in, plm_tensor *expected) {
  plm_tensor mag = scratch(PLM_DTYPE_F32, &in[0]), conv = scratch(PLM_DTYPE_F32, &in[0]);
  plm_tensor mask = scratch(PLM_DTYPE_U8, &in[0]), labels = scratch(PLM_DTYPE_I32, &in[0]);
  plm_sobel_params sp = plm_sobel_params_default();
  plm_threshold_params tp = {.value = 100};
  plm_conv2d_params cp = {
      .stride_y = 1, .stride_x = 1, .pad_y = 1, .pad_x = 1, .border = PLM_BORDER_REPLICATE};
  plm_entropy_params ep = {.window = 5, .bins = 16, .range_lo = 0, .range_hi = 2000};
  plm_label_params lp = {.connectivity = 4};
  PLM_CHECK_OK(plm_sobel(plm_test_stream, &in[0], &sp, NULL, NULL, &mag));
  PLM_CHECK_OK(plm_threshold(plm_test_stream, &mag, &tp, &mask));
  PLM_CHECK_OK(plm_conv2d(plm_test_stream, &in[0], &branch_kernel, &cp, &conv));
  PLM_CHECK_OK(plm_entropy(plm_test_stream, &conv, &ep, &expected[0]));
  PLM_CHECK_OK(plm_label(plm_test_stream, &mask, &lp, &labels, &expected[2]));
  PLM_CHECK_OK(plm_regions(plm_test_stream, &labels, &conv, &expected[2], &expected[1]));
  release(&mag);
  release(&conv);
  release(&mask);
  release(&labels);
}

START_TEST(test_branches_equal_ops) {
  const float taps[9] = {1, 2, 1, 0, 4, 0, -1, 2, 1};
  const int64_t kdims[2] = {3, 3};
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, kdims, &branch_kernel));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, branch_kernel.data, taps, sizeof taps,
                                 PLM_COPY_HOST_TO_DEVICE));
  for (int streams = 1; streams <= 3; streams++) {
    plm_pipeline *pl = branch_pipeline(streams, streams);
    plm_plan_info info;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    ck_assert_int_eq(info.streams, streams == 1 ? 1 : 2);
    check_plan(&pl->plan);
    check_against_reference(pl, branch_reference, 1000, 4, 99u + (uint64_t)streams, 2);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &branch_kernel));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

/* Frames run back to back on one stream and on alternating streams, without waiting in
 * between: each frame must see its own input (slot 0 is reused in device order). */
START_TEST(test_back_to_back_frames) {
  const int64_t dims[2] = {64, 64};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                  "conv2d kernel=box:5 pad=same border=replicate ! sobel ! "
                                  "threshold value=20",
                                  PLM_DTYPE_U8, 2, dims, &pl));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_stream *other = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &other));
  enum { FRAMES = 12 };
  const size_t pixels = 64 * 64;
  plm_tensor in[FRAMES], out[FRAMES];
  unsigned char *host[FRAMES];
  uint64_t seed = 31;
  for (int f = 0; f < FRAMES; f++) {
    plm_shape shape;
    PLM_CHECK_OK(plm_pipeline_input_shape(pl, 0, &shape));
    in[f] = device_tensor(&shape);
    PLM_CHECK_OK(plm_pipeline_output_shape(pl, 0, &shape));
    out[f] = device_tensor(&shape);
    host[f] = random_frame(PLM_DTYPE_U8, (int64_t)pixels, 255, &seed);
    PLM_CHECK_OK(
        plm_stream_memcpy(plm_test_stream, in[f].data, host[f], pixels, PLM_COPY_HOST_TO_DEVICE));
  }
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  for (int f = 0; f < FRAMES; f++) free(host[f]); /* the copies have run */
  for (int f = 0; f < FRAMES; f++)
    PLM_CHECK_OK(plm_pipeline_run(pl, &in[f], &out[f], f % 2 ? other : plm_test_stream));
  PLM_CHECK_OK(plm_stream_synchronize(other));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  /* Each frame again, alone, compared with its back-to-back result. */
  for (int f = 0; f < FRAMES; f++) {
    plm_shape shape;
    PLM_CHECK_OK(plm_pipeline_output_shape(pl, 0, &shape));
    plm_tensor alone = device_tensor(&shape);
    PLM_CHECK_OK(plm_pipeline_run(pl, &in[f], &alone, plm_test_stream));
    void *a = to_host(&alone), *b = to_host(&out[f]);
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
    ck_assert_msg(memcmp(a, b, pixels) == 0, "frame %d differs when run back to back", f);
    free(a);
    free(b);
    release(&alone);
    release(&in[f]);
    release(&out[f]);
  }
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_stream_destroy(other));
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

static void segment_reference(const plm_tensor *in, plm_tensor *expected) {
  plm_tensor labels = scratch(PLM_DTYPE_I32, &in[0]);
  plm_segment_params sp = {.value = 150, .compare = PLM_COMPARE_GE, .connectivity = 4};
  PLM_CHECK_OK(plm_segment(plm_test_stream, &in[0], &sp, &labels, &expected[1], &expected[0]));
  release(&labels);
}

START_TEST(test_segment_equals_plm_segment) {
  const int64_t dims[2] = {40, 56};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                  "segment value=150 cmp=ge connectivity=4 capacity=64",
                                  PLM_DTYPE_U8, 2, dims, &pl));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_int_eq(info.steps, 3); /* lowered */
  ck_assert_uint_eq(info.workspace_bytes,
                    aligned(40 * 56) + aligned(40 * 56 * 4) + label_scratch(2, dims, 4));
  check_against_reference(pl, segment_reference, 255, 2, 5, 1);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* In place (threshold over a u8 mask) and a batch of frames through label. */
static void in_place_reference(const plm_tensor *in, plm_tensor *expected) {
  plm_tensor mask = scratch(PLM_DTYPE_U8, &in[0]), inverse = scratch(PLM_DTYPE_U8, &in[0]);
  plm_threshold_params above = {.value = 1000}, zero = {.value = 0, .compare = PLM_COMPARE_LE};
  plm_label_params lp = {.connectivity = 8};
  PLM_CHECK_OK(plm_threshold(plm_test_stream, &in[0], &above, &mask));
  PLM_CHECK_OK(plm_threshold(plm_test_stream, &mask, &zero, &inverse));
  PLM_CHECK_OK(plm_label(plm_test_stream, &inverse, &lp, &expected[0], &expected[1]));
  release(&mask);
  release(&inverse);
}

START_TEST(test_in_place_batch_equals_ops) {
  const int64_t dims[3] = {3, 30, 40};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                  "threshold value=1000 ! threshold value=0 cmp=le ! label",
                                  PLM_DTYPE_U16, 3, dims, &pl));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_int_eq(info.in_place, 1);
  ck_assert_uint_eq(info.workspace_bytes, aligned(3 * 30 * 40) + label_scratch(3, dims, 8));
  plm_shape count;
  PLM_CHECK_OK(plm_pipeline_output_shape(pl, 1, &count));
  ck_assert_int_eq(count.dims[0], 3);
  check_against_reference(pl, in_place_reference, 1200, 2, 77, 1);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* ---- scratch: from the workspace, never the pool ------------------------------------------ */

static plm_pool_stats pool_stats(void) {
  plm_pool_stats stats;
  PLM_CHECK_OK(plm_pool_stats_get(plm_test_pool, &stats));
  return stats;
}

/* Pipelines whose steps need scratch (entropy, the fused step, label on cuda, segment's
 * parts) run frame after frame without one plm_pool_alloc: every step's scratch is in the
 * slot's workspace. The same ops called directly do allocate, so the counter is live. */
START_TEST(test_no_pool_allocation_per_frame) {
  static const char *const texts[] = {
      "sobel ! entropy window=7 bins=32 range=auto ! threshold value=3 ! label ! regions",
      /* fused; 1024 bins and a window past 18 take global histograms on cuda */
      ("sobel ! entropy window=21 bins=1024 range=0,3000 ! threshold value=4 ! label "
       "connectivity=4"),
      "segment value=500 cmp=ge capacity=64",
  };
  const int64_t dims[2] = {40, 72};
  uint64_t seed = 17;
  for (int p = 0; p < 3; p++) {
    plm_pipeline *pl = NULL;
    PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, texts[p], PLM_DTYPE_U16, 2, dims, &pl));
    plm_plan_config cfg = {.frames_in_flight = 2, .flags = PLM_PLAN_FUSE};
    PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
    plm_plan_info info;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    if (p < 2) ck_assert_uint_gt(info.scratch_bytes, 0);
    ck_assert_int_eq(info.fused_steps, p == 1);
    plm_shape shape;
    plm_tensor in, out[2];
    PLM_CHECK_OK(plm_pipeline_input_shape(pl, 0, &shape));
    in = device_tensor(&shape);
    void *host = random_frame(PLM_DTYPE_U16, 40 * 72, 1000, &seed);
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, host, plm_tensor_bytes(&in),
                                   PLM_COPY_HOST_TO_DEVICE));
    for (int o = 0; o < 2; o++) {
      PLM_CHECK_OK(plm_pipeline_output_shape(pl, o, &shape));
      out[o] = device_tensor(&shape);
    }
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
    free(host);
    const plm_pool_stats before = pool_stats();
    for (int f = 0; f < 6; f++) PLM_CHECK_OK(plm_pipeline_run(pl, &in, out, plm_test_stream));
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
    const plm_pool_stats after = pool_stats();
    ck_assert_msg(after.requests == before.requests, "'%s': %llu pool allocations in 6 frames",
                  texts[p], (unsigned long long)(after.requests - before.requests));
    ck_assert_uint_eq(after.upstream_allocs, before.upstream_allocs);
    ck_assert_uint_eq(after.live_blocks, before.live_blocks);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
    release(&in);
    release(&out[0]);
    release(&out[1]);
  }
  /* The counter sees the ops' own scratch: plm_entropy called directly allocates (with
   * 1024 bins and a 25-pixel window it needs scratch on both backends: the CPU's
   * histograms, the GPU's global ones). */
  const int64_t one[2] = {16, 16};
  plm_tensor a, b;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, one, &a));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, one, &b));
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, a.data, 3, plm_tensor_bytes(&a)));
  const plm_entropy_params ep = {.window = 25, .bins = 1024};
  const plm_pool_stats before = pool_stats();
  PLM_CHECK_OK(plm_entropy(plm_test_stream, &a, &ep, &b));
  ck_assert_uint_eq(pool_stats().requests, before.requests + 1);
  release(&a);
  release(&b);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

/* A device tensor of dtype and dims filled with random integers up to top. */
static plm_tensor random_tensor(plm_dtype dtype, int ndim, const int64_t *dims, uint32_t top,
                                uint64_t *seed) {
  plm_shape shape = {.dtype = dtype, .ndim = ndim};
  for (int d = 0; d < ndim; d++) shape.dims[d] = dims[d];
  plm_tensor t = device_tensor(&shape);
  void *host = random_frame(dtype, plm_tensor_numel(&t), top, seed);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, t.data, host, plm_tensor_bytes(&t),
                                 PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  free(host);
  return t;
}

static void assert_same(const plm_tensor *a, const plm_tensor *b, const char *what) {
  void *x = to_host(a), *y = to_host(b);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert_msg(memcmp(x, y, plm_tensor_bytes(a)) == 0, "%s: the _enqueue result differs", what);
  free(x);
  free(y);
}

/* The refusals plm__op_call_with_scratch makes for any op needing `needed` bytes:
 * call(scratch, bytes) enqueues the op with that scratch; `operand` is one of its
 * operands' data. */
typedef plm_status (*enqueue_fn)(void *scratch, size_t bytes);

static void check_refusals(const char *op, enqueue_fn call, size_t needed, void *operand) {
  char message[128];
  snprintf(message, sizeof message, "scratch_bytes %zu is less than the %zu bytes %s needs",
           needed - 1, needed, op);
  void *block = NULL;
  PLM_CHECK_OK(plm_pool_alloc(plm_test_pool, needed + 512, plm_test_stream, &block));
  PLM_CHECK_FAILS(call(block, needed - 1), PLM_ERR_INVALID_ARG, message);
  ck_assert_int_eq(strncmp(plm_last_error(), "scratch_bytes ", 14), 0); /* raw */
  PLM_CHECK_FAILS(call(NULL, needed), PLM_ERR_INVALID_ARG, "scratch is NULL but");
  PLM_CHECK_FAILS(call((char *)block + 64, needed), PLM_ERR_INVALID_ARG, "is not 256-byte aligned");
  PLM_CHECK_FAILS(call(operand, needed), PLM_ERR_INVALID_ARG, "scratch overlaps ");
  PLM_CHECK_OK(plm_pool_free(plm_test_pool, block, plm_test_stream));
}

static plm_tensor e_in, e_out, e_mask, e_labels, e_count, e_table;
/* Parameters whose ops need scratch on both backends (entropy: 1024 bins and a 25-pixel
 * window take the GPU's global histograms). */
static plm_entropy_params e_params = {.window = 25, .bins = 1024};
static plm_sobel_entropy_threshold_params f_params = {
    .entropy = {.window = 25, .bins = 1024, .range_lo = 0, .range_hi = 3000},
    .threshold = {.value = 4}};
static plm_label_params l_params = {.connectivity = 8};
/* segment's as a pipeline node's: its table's rows are the capacity. */
static plm__segment_params s_params = {.segment = {.value = 500, .compare = PLM_COMPARE_GE},
                                       .capacity = 64};

/* The ops' calls on those operands. */
static const plm__op_call entropy_call = {.in = {&e_in}, .out = {&e_out}, .params = &e_params};
static const plm__op_call fused_call = {.in = {&e_in}, .out = {&e_mask}, .params = &f_params};
static const plm__op_call label_call = {
    .in = {&e_mask}, .out = {&e_labels, &e_count}, .params = &l_params};
static const plm__op_call segment_call = {
    .in = {&e_in}, .out = {&e_labels, &e_count, &e_table}, .params = &s_params};

static plm_status entropy_with(void *scratch, size_t bytes) {
  return plm__op_call_with_scratch(&plm__op_entropy, plm_test_stream, &entropy_call, scratch,
                                   bytes);
}
static plm_status fused_with(void *scratch, size_t bytes) {
  return plm__op_call_with_scratch(&plm__op_sobel_entropy_threshold, plm_test_stream, &fused_call,
                                   scratch, bytes);
}
static plm_status label_with(void *scratch, size_t bytes) {
  return plm__op_call_with_scratch(&plm__op_label, plm_test_stream, &label_call, scratch, bytes);
}
static plm_status segment_with(void *scratch, size_t bytes) {
  return plm__op_call_with_scratch(&plm__op_segment, plm_test_stream, &segment_call, scratch,
                                   bytes);
}

/* Each op with the caller's scratch: sized by plm__op_scratch_bytes, refuses scratch that
 * is too small, NULL, misaligned or over an operand, checks its arguments with the public
 * op's messages (raw), and with enough scratch gives the public op's result. */
START_TEST(test_enqueue_takes_the_callers_scratch) {
  const int64_t dims[2] = {24, 40};
  uint64_t seed = 5;
  e_in = random_tensor(PLM_DTYPE_U16, 2, dims, 1000, &seed);
  plm_shape f32 = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {24, 40}};
  e_out = device_tensor(&f32);
  plm_tensor expected = device_tensor(&f32);
  plm_tensor u8_out = random_tensor(PLM_DTYPE_U8, 2, dims, 1, &seed);

  /* entropy */
  size_t needed = scratch_of(&plm__op_entropy, &entropy_call);
  ck_assert_uint_gt(needed, 0);
  check_refusals("entropy", entropy_with, needed, e_out.data);
  plm__op_call call = entropy_call;
  call.out[0] = &u8_out;
  PLM_CHECK_FAILS(plm__op_call_with_scratch(&plm__op_entropy, plm_test_stream, &call, NULL, 0),
                  PLM_ERR_INVALID_ARG, "out->dtype u8 is not f32");
  ck_assert_str_eq(plm_last_error(), "out->dtype u8 is not f32"); /* raw */
  PLM_CHECK_FAILS(plm_entropy(plm_test_stream, &e_in, &e_params, &u8_out), PLM_ERR_INVALID_ARG,
                  "plm_entropy: out->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm__op_call_with_scratch(&plm__op_entropy, NULL, &entropy_call, NULL, 0),
                  PLM_ERR_INVALID_ARG, "stream is NULL");
  void *block = NULL;
  PLM_CHECK_OK(plm_pool_alloc(plm_test_pool, needed, plm_test_stream, &block));
  PLM_CHECK_OK(entropy_with(block, needed));
  PLM_CHECK_OK(plm_entropy(plm_test_stream, &e_in, &e_params, &expected));
  assert_same(&e_out, &expected, "entropy");
  PLM_CHECK_OK(plm_pool_free(plm_test_pool, block, plm_test_stream));

  /* sobel_entropy_threshold */
  e_mask = random_tensor(PLM_DTYPE_U8, 2, dims, 1, &seed);
  needed = scratch_of(&plm__op_sobel_entropy_threshold, &fused_call);
  ck_assert_uint_gt(needed, 0);
  check_refusals("sobel_entropy_threshold", fused_with, needed, e_mask.data);
  PLM_CHECK_OK(plm_pool_alloc(plm_test_pool, needed, plm_test_stream, &block));
  PLM_CHECK_OK(fused_with(block, needed));
  PLM_CHECK_OK(plm_sobel_entropy_threshold(plm_test_stream, &e_in, &f_params, &u8_out));
  assert_same(&e_mask, &u8_out, "sobel_entropy_threshold");
  PLM_CHECK_OK(plm_pool_free(plm_test_pool, block, plm_test_stream));

  /* label: on host one band's record and two rows of runs (kernels/common/label.h; its
   * union-find's table is in the labels) */
  plm_shape i32 = {.dtype = PLM_DTYPE_I32, .ndim = 2, .dims = {24, 40}};
  plm_shape count = {.dtype = PLM_DTYPE_I32, .ndim = 1, .dims = {1}};
  e_labels = device_tensor(&i32);
  e_count = device_tensor(&count);
  plm_tensor labels = device_tensor(&i32), n = device_tensor(&count);
  needed = scratch_of(&plm__op_label, &label_call);
  if (plm_test_backend == PLM_BACKEND_HOST) ck_assert_uint_eq(needed, 16 + 4 * 23 * 4);
  if (needed > 0) check_refusals("label", label_with, needed, e_labels.data);
  block = NULL;
  if (needed > 0) PLM_CHECK_OK(plm_pool_alloc(plm_test_pool, needed, plm_test_stream, &block));
  PLM_CHECK_OK(label_with(block, needed));
  PLM_CHECK_OK(plm_label(plm_test_stream, &e_mask, &l_params, &labels, &n));
  assert_same(&e_labels, &labels, "label");
  assert_same(&e_count, &n, "label's count");
  if (block) PLM_CHECK_OK(plm_pool_free(plm_test_pool, block, plm_test_stream));

  /* segment: its mask, then label's */
  plm_shape table = {.dtype = PLM_DTYPE_F64, .ndim = 2, .dims = {64, PLM_REGION_COLUMNS}};
  e_table = device_tensor(&table);
  plm_tensor expected_table = device_tensor(&table);
  needed = scratch_of(&plm__op_segment, &segment_call);
  ck_assert_uint_ge(needed, aligned(24 * 40));
  check_refusals("segment", segment_with, needed, e_table.data);
  PLM_CHECK_OK(plm_pool_alloc(plm_test_pool, needed, plm_test_stream, &block));
  PLM_CHECK_OK(segment_with(block, needed));
  PLM_CHECK_OK(
      plm_segment(plm_test_stream, &e_in, &s_params.segment, &labels, &n, &expected_table));
  assert_same(&e_labels, &labels, "segment's labels");
  assert_same(&e_table, &expected_table, "segment's table");
  PLM_CHECK_OK(plm_pool_free(plm_test_pool, block, plm_test_stream));

  /* The sizes refuse what the ops refuse, raw. */
  const plm_entropy_params bad = {.window = 0};
  call = entropy_call;
  call.params = &bad;
  PLM_CHECK_FAILS(plm__op_scratch_bytes(&plm__op_entropy, plm_test_ctx, &call, &needed),
                  PLM_ERR_INVALID_ARG, "params->window 0 is not in 1..255");
  ck_assert_int_eq(strncmp(plm_last_error(), "params->", 8), 0);
  call = label_call;
  call.in[0] = &e_in;
  PLM_CHECK_FAILS(plm__op_scratch_bytes(&plm__op_label, plm_test_ctx, &call, &needed),
                  PLM_ERR_INVALID_ARG, "mask->dtype u16 is not u8");
  PLM_CHECK_FAILS(plm__op_scratch_bytes(&plm__op_entropy, NULL, &entropy_call, &needed),
                  PLM_ERR_INVALID_ARG, "ctx is NULL");
  PLM_CHECK_FAILS(plm__op_scratch_bytes(&plm__op_entropy, plm_test_ctx, &entropy_call, NULL),
                  PLM_ERR_INVALID_ARG, "bytes is NULL");
  /* Any op of the table alike: a required input absent, or no parameters for an op that
   * has some (regions' own check reads its parameters without asking), and regions needs
   * none. */
  call = entropy_call;
  call.in[0] = NULL;
  PLM_CHECK_FAILS(plm__op_scratch_bytes(&plm__op_entropy, plm_test_ctx, &call, &needed),
                  PLM_ERR_INVALID_ARG, "in is NULL");
  call = (plm__op_call){.in = {&e_labels, NULL, &e_count}};
  PLM_CHECK_FAILS(plm__op_scratch_bytes(&plm__op_regions, plm_test_ctx, &call, &needed),
                  PLM_ERR_INVALID_ARG, "params is NULL");
  const plm__regions_params rows = {.capacity = 64};
  call.params = &rows;
  ck_assert_uint_eq(scratch_of(&plm__op_regions, &call), 0);

  plm_tensor *all[] = {&e_in,    &e_out,  &expected, &u8_out,  &e_mask,        &e_labels,
                       &e_count, &labels, &n,        &e_table, &expected_table};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

/* ---- eager plans: PLM_PLAN_ALLOCATE_PER_RUN and PLM_PLAN_SYNCHRONOUS_STEPS ---------------- */

static const unsigned EAGER_FLAGS[] = {
    PLM_PLAN_ALLOCATE_PER_RUN, PLM_PLAN_SYNCHRONOUS_STEPS,
    PLM_PLAN_ALLOCATE_PER_RUN | PLM_PLAN_SYNCHRONOUS_STEPS,
    PLM_PLAN_ALLOCATE_PER_RUN | PLM_PLAN_SYNCHRONOUS_STEPS | PLM_PLAN_NO_FUSION};
enum { EAGER_VARIANTS = sizeof EAGER_FLAGS / sizeof EAGER_FLAGS[0] };

static void alloc_branch_kernel(void) {
  const float taps[9] = {1, 2, 1, 0, 4, 0, -1, 2, 1};
  const int64_t kdims[2] = {3, 3};
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, kdims, &branch_kernel));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, branch_kernel.data, taps, sizeof taps,
                                 PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream)); /* taps is about to go */
}

/* The same results as the planned pipelines, and nothing left allocated after the runs:
 * the default chain (one stream, in place off), the branches (several streams, an
 * intermediate read on two of them) and the in-place batch. */
START_TEST(test_eager_plans_equal_planned_results) {
  alloc_branch_kernel();
  for (int v = 0; v < EAGER_VARIANTS; v++) {
    const unsigned flags = EAGER_FLAGS[v];
    const bool per_run = flags & PLM_PLAN_ALLOCATE_PER_RUN;
    const uint64_t before = live_blocks();

    const int64_t dims[2] = {96, 128};
    plm_pipeline *pl = NULL;
    PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                    "sobel ! entropy window=16 bins=64 range=auto ! threshold "
                                    "value=4.5 ! label connectivity=8 ! regions",
                                    PLM_DTYPE_U16, 2, dims, &pl));
    plm_plan_config cfg = {.flags = flags};
    PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
    plm_plan_info info;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    /* One stream: the workspace is the peak of live bytes, at least the two f32 frames
     * (and the entropy's scratch) at the entropy step. */
    ck_assert_uint_ge(info.peak_live_bytes, 2 * 96 * 128 * 4);
    ck_assert_uint_eq(info.workspace_bytes, per_run ? 0 : info.peak_live_bytes);
    ck_assert_uint_eq(info.intermediate_bytes, 3 * 96 * 128 * 4 + 96 * 128);
    ck_assert_uint_eq(live_blocks(), before + (per_run ? 0 : 1));
    char text[8192];
    PLM_CHECK_OK(plm_pipeline_describe(pl, text, sizeof text, NULL));
    ck_assert_msg((strstr(text, "allocated per run") != NULL) == per_run, "%s", text);
    ck_assert_msg((strstr(text, "waits after every step") != NULL) ==
                      ((flags & PLM_PLAN_SYNCHRONOUS_STEPS) != 0),
                  "%s", text);
    check_against_reference(pl, default_reference, 16383, 2, 7, 1);
    ck_assert_uint_eq(live_blocks(), before + (per_run ? 0 : 1));
    PLM_CHECK_OK(plm_pipeline_destroy(pl));

    for (int streams = 1; streams <= 3; streams++) {
      plm_plan_config branch_cfg = {
          .max_streams = streams, .frames_in_flight = streams, .flags = flags};
      pl = branch_pipeline_with(&branch_cfg);
      PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
      ck_assert_int_eq(info.streams, streams == 1 ? 1 : 2);
      check_against_reference(pl, branch_reference, 1000, 3, 99u + (uint64_t)streams, 2);
      PLM_CHECK_OK(plm_pipeline_destroy(pl));
    }

    const int64_t batch[3] = {3, 30, 40};
    PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                    "threshold value=1000 ! threshold value=0 cmp=le ! label",
                                    PLM_DTYPE_U16, 3, batch, &pl));
    PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    ck_assert_int_eq(info.in_place, per_run ? 0 : 1); /* per run: a block each */
    check_against_reference(pl, in_place_reference, 1200, 2, 77, 1);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
    ck_assert_uint_eq(live_blocks(), before);
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &branch_kernel));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

/* Where each intermediate is freed, checked against the test's own happens-before:
 * after its last use L only when every other use is ordered before L, else at the end. */
START_TEST(test_per_run_release_points) {
  alloc_branch_kernel();
  for (int streams = 1; streams <= 3; streams++) {
    plm_plan_config cfg = {.max_streams = streams, .flags = PLM_PLAN_ALLOCATE_PER_RUN};
    plm_pipeline *pl = branch_pipeline_with(&cfg);
    const plm__plan *plan = &pl->plan;
    bool *reach = happens_before_closure(plan);
    const int n = plan->step_count;
    int at_end = 0, after_step = 0;
    for (int t = 0; t < plan->tensor_count; t++) {
      if (plan->location[t] != PLM__AT_WORKSPACE) continue;
      int last = plan->tensors[t].producer;
      bool ordered = true;
      for (int s = 0; s < n; s++) {
        const plm__step *step = &plan->steps[s];
        if (step->inputs[0] == t || step->inputs[1] == t || step->inputs[2] == t) last = s;
      }
      for (int s = 0; s < n; s++) {
        const plm__step *step = &plan->steps[s];
        bool uses = plan->tensors[t].producer == s || step->inputs[0] == t ||
                    step->inputs[1] == t || step->inputs[2] == t;
        if (uses && s != last && !reach[s * n + last]) ordered = false;
      }
      ck_assert_int_eq(pl->release_after[t], ordered ? last : -1);
      at_end += !ordered;
      after_step += ordered;
    }
    /* One stream: all after their last use. Two: the conv output is read on both (by
     * entropy on its own stream and by regions, as the intensity), unordered. */
    ck_assert_int_eq(at_end, streams == 1 ? 0 : 1);
    ck_assert_int_eq(after_step, streams == 1 ? 4 : 3);
    free(reach);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &branch_kernel));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

/* From a passthrough pool every intermediate, and every step's scratch, is an upstream
 * allocation of its own, freed (on host: free(), once the device is done with it) after
 * its last reader: under AddressSanitizer a block freed too early is a use after free. */
START_TEST(test_per_run_from_a_passthrough_pool) {
  plm_pool *passthrough = NULL;
  plm_pool_config pool_cfg = {.mode = PLM_POOL_PASSTHROUGH};
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &pool_cfg, &passthrough));
  alloc_branch_kernel();
  plm_plan_config cfg = {.max_streams = 3,
                         .frames_in_flight = 2,
                         .pool = passthrough,
                         .flags = PLM_PLAN_ALLOCATE_PER_RUN | PLM_PLAN_NO_FUSION};
  plm_pipeline *pl = branch_pipeline_with(&cfg);
  plm_pool_stats stats;
  PLM_CHECK_OK(plm_pool_stats_get(passthrough, &stats));
  const uint64_t compiled = stats.upstream_allocs;
  ck_assert_uint_eq(stats.live_blocks, 1); /* the constants (the 3x3 kernel) only */
  int intermediates = 0;
  for (int t = 0; t < pl->plan.tensor_count; t++)
    intermediates += pl->plan.location[t] == PLM__AT_WORKSPACE;
  ck_assert_int_eq(intermediates, 4); /* magnitude, mask, conv, labels */
  /* The steps' scratch comes from the pipeline's pool too (plume/pipeline.h), a block per
   * step that needs one (entropy's histograms, label's rows of runs) per run. */
  int scratched = 0;
  for (int st = 0; st < pl->plan.step_count; st++)
    scratched += pl->plan.steps[st].scratch_bytes > 0;
  ck_assert_int_ge(scratched, 1);
  check_against_reference(pl, branch_reference, 1000, 3, 5, 2);
  PLM_CHECK_OK(plm_pool_stats_get(passthrough, &stats));
  ck_assert_uint_eq(stats.upstream_allocs - compiled, 3 * (uint64_t)(4 + scratched));
  ck_assert_uint_eq(stats.live_blocks, 1);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  PLM_CHECK_OK(plm_pool_destroy(passthrough));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &branch_kernel));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

/* A pool too small for two live intermediates: the run fails at the second one's step,
 * names it, frees the first, and fails the same way again (the pipeline stays usable). */
START_TEST(test_per_run_out_of_memory) {
  const int64_t dims[2] = {128, 128};
  const size_t frame_f32 = 128 * 128 * 4;
  plm_pool *small = NULL;
  plm_pool_config pool_cfg = {.byte_limit = frame_f32 + frame_f32 / 2,
                              .min_chunk_bytes = 4096,
                              .growth = PLM_POOL_GROW_FIXED};
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &pool_cfg, &small));
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                  "sobel ! entropy window=5 bins=16 range=0,1000 ! threshold "
                                  "value=2",
                                  PLM_DTYPE_U16, 2, dims, &pl));
  plm_plan_config cfg = {.pool = small, .flags = PLM_PLAN_ALLOCATE_PER_RUN | PLM_PLAN_NO_FUSION};
  PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &out));
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, in.data, 0, plm_tensor_bytes(&in)));
  for (int attempt = 0; attempt < 2; attempt++) {
    PLM_CHECK_FAILS(plm_pipeline_run(pl, &in, &out, plm_test_stream), PLM_ERR_OUT_OF_MEMORY,
                    "plm_pipeline_run: step 1 'entropy'");
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
    plm_pool_stats stats;
    PLM_CHECK_OK(plm_pool_stats_get(small, &stats));
    ck_assert_uint_eq(stats.live_blocks, 0);
    ck_assert_uint_ge(stats.failures, (uint64_t)attempt + 1);
  }
  release(&in);
  release(&out);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  PLM_CHECK_OK(plm_pool_destroy(small));
}
END_TEST

/* Eager plans are never captured into graphs, and say why. */
START_TEST(test_eager_plans_are_not_captured) {
  const int64_t dims[2] = {16, 16};
  const unsigned flags[] = {0, PLM_PLAN_ALLOCATE_PER_RUN, PLM_PLAN_SYNCHRONOUS_STEPS};
  const char *const why[] = {"", "PLM_PLAN_ALLOCATE_PER_RUN", "PLM_PLAN_SYNCHRONOUS_STEPS"};
  for (int v = 0; v < 3; v++) {
    plm_pipeline *pl = NULL;
    PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, "threshold value=3 ! threshold value=0",
                                    PLM_DTYPE_U8, 2, dims, &pl));
    plm_plan_config cfg = {.flags = flags[v]};
    PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
    char text[160] = "";
    ck_assert(plm__pipeline_capturable(pl, text, sizeof text) == (v == 0));
    ck_assert_msg(strstr(text, why[v]) != NULL, "%s", text);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

/* The plan's cost is the sum of its steps' cost models; fused, the intermediates are
 * not moved. */
START_TEST(test_plan_cost) {
  const int64_t dims[2] = {64, 80};
  const double pixels = 64.0 * 80.0;
  const char *text = "sobel ! entropy window=9 bins=32 range=0,2000 ! threshold value=3";
  for (int fused = 0; fused < 2; fused++) {
    plm_pipeline *pl = NULL;
    PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, text, PLM_DTYPE_U16, 2, dims, &pl));
    plm_plan_config cfg = {.flags = fused ? PLM_PLAN_FUSE : PLM_PLAN_NO_FUSION};
    PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
    plm_plan_info info;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    /* sobel: u16 in, the magnitude out; entropy f32 -> f32; threshold f32 -> u8. */
    const double unfused = pixels * (2 + 4) + pixels * (4 + 4) + pixels * (4 + 1);
    ck_assert_double_eq_tol(info.device_bytes, fused ? pixels * (2 + 1) : unfused, 0.5);
    ck_assert(info.flops > 0.0);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

/* ---- building errors and the lifecycle ------------------------------------------------------ */

START_TEST(test_build_errors_leave_the_pipeline_usable) {
  const int64_t dims[2] = {16, 16}, bad[2] = {16, -1}, kdims[2] = {3, 3};
  plm_pipeline *pl = NULL, *other = NULL;
  plm_pipe_tensor in, mag, mask, foreign, none = {0}, labels, count, table;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &other));
  PLM_CHECK_FAILS(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, bad, &in), PLM_ERR_INVALID_ARG,
                  "plm_pipeline_add_input: input: dims[1] is -1");
  PLM_CHECK_FAILS(plm_pipeline_add_input(pl, (plm_dtype)42, 2, dims, &in), PLM_ERR_INVALID_ARG,
                  "dtype 42 is not a plm_dtype");
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, dims, &in));
  PLM_CHECK_OK(plm_pipeline_add_input(other, PLM_DTYPE_U8, 2, dims, &foreign));

  plm_sobel_params sp = plm_sobel_params_default(), bad_border = {.border = (plm_border)9};
  plm_threshold_params tp = {.value = 5}, nan_value = {.value = NAN};
  plm_label_params lp = {0};
  plm_entropy_params ep = {.window = 300};
  PLM_CHECK_FAILS(plm_pipeline_add_sobel(pl, foreign, &sp, NULL, NULL, &mag), PLM_ERR_INVALID_ARG,
                  "plm_pipeline_add_sobel: node 0 'sobel': in is not a tensor of this pipeline");
  PLM_CHECK_FAILS(plm_pipeline_add_sobel(pl, none, &sp, NULL, NULL, &mag), PLM_ERR_INVALID_ARG,
                  "node 0 'sobel': in is a zeroed handle");
  PLM_CHECK_FAILS(plm_pipeline_add_sobel(pl, in, &sp, NULL, NULL, NULL), PLM_ERR_INVALID_ARG,
                  "node 0 'sobel': no output asked for");
  PLM_CHECK_FAILS(plm_pipeline_add_sobel(pl, in, &bad_border, NULL, NULL, &mag),
                  PLM_ERR_INVALID_ARG, "node 0 'sobel': params->border 9");
  PLM_CHECK_FAILS(plm_pipeline_add_sobel(pl, in, NULL, NULL, NULL, &mag), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  PLM_CHECK_FAILS(
      plm_pipeline_add_entropy(pl, in, &ep, &mag), PLM_ERR_INVALID_ARG,
      "plm_pipeline_add_entropy: node 0 'entropy': params->window 300 is not in 1..255");
  PLM_CHECK_FAILS(plm_pipeline_add_threshold(pl, in, &nan_value, &mask), PLM_ERR_INVALID_ARG,
                  "node 0 'threshold': params->value is NaN");
  PLM_CHECK_FAILS(plm_pipeline_add_label(pl, in, &lp, &labels, &count), PLM_ERR_INVALID_ARG,
                  "plm_pipeline_add_label: node 0 'label': mask->dtype u16 is not u8");
  const float taps[9] = {0};
  plm_pipe_tensor kernel;
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, kdims, taps, &kernel));
  plm_conv2d_params cp = plm_conv2d_params_default();
  PLM_CHECK_FAILS(plm_pipeline_add_conv2d(pl, in, in, &cp, &mag), PLM_ERR_INVALID_ARG,
                  "node 0 'conv2d': kernel");
  PLM_CHECK_FAILS(plm_pipeline_mark_output(pl, in), PLM_ERR_INVALID_ARG,
                  "plm_pipeline_mark_output: t is the pipeline's input");
  PLM_CHECK_FAILS(plm_pipeline_mark_output(pl, kernel), PLM_ERR_INVALID_ARG,
                  "t is the pipeline's constant");
  PLM_CHECK_FAILS(plm_pipeline_compile(pl, NULL), PLM_ERR_INVALID_ARG,
                  "plm_pipeline_compile: the pipeline has no output");
  PLM_CHECK_FAILS(plm_pipeline_run(pl, NULL, NULL, plm_test_stream), PLM_ERR_INVALID_STATE,
                  "plm_pipeline_run: the pipeline is not compiled");
  /* After all that, node 0 is the first good one. */
  PLM_CHECK_OK(plm_pipeline_add_sobel(pl, in, &sp, NULL, NULL, &mag));
  PLM_CHECK_OK(plm_pipeline_add_threshold(pl, mag, &tp, &mask));
  PLM_CHECK_FAILS(plm_pipeline_add_regions(pl, mask, none, mask, 10, &table), PLM_ERR_INVALID_ARG,
                  "node 2 'regions': labels->dtype u8 is not i32");
  PLM_CHECK_OK(plm_pipeline_add_label(pl, mask, &lp, &labels, &count));
  PLM_CHECK_FAILS(plm_pipeline_add_regions(pl, labels, none, labels, 10, &table),
                  PLM_ERR_INVALID_ARG, "node 3 'regions': count must be of shape (1,)");
  PLM_CHECK_FAILS(plm_pipeline_add_regions(pl, labels, none, count, -2, &table),
                  PLM_ERR_INVALID_ARG, "node 3 'regions': capacity -2 is negative");
  PLM_CHECK_OK(plm_pipeline_add_regions(pl, labels, in, count, 0, &table));
  plm_shape shape;
  PLM_CHECK_OK(plm_pipeline_tensor_shape(pl, table, &shape));
  ck_assert_int_eq(shape.dims[0], 64); /* 8-connectivity bound of 16 x 16 */
  ck_assert_int_eq(pl->graph.node_count, 4);
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, table));
  PLM_CHECK_FAILS(plm_pipeline_mark_output(pl, table), PLM_ERR_INVALID_ARG,
                  "t is output 0 already");
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, count));

  plm_plan_config bad_cfg = {.frames_in_flight = 17};
  PLM_CHECK_FAILS(plm_pipeline_compile(pl, &bad_cfg), PLM_ERR_INVALID_ARG,
                  "cfg->frames_in_flight 17 is not in 0..16");
  bad_cfg = (plm_plan_config){.max_streams = -1};
  PLM_CHECK_FAILS(plm_pipeline_compile(pl, &bad_cfg), PLM_ERR_INVALID_ARG, "cfg->max_streams -1");
  bad_cfg = (plm_plan_config){.flags = 0x80};
  PLM_CHECK_FAILS(plm_pipeline_compile(pl, &bad_cfg), PLM_ERR_INVALID_ARG,
                  "cfg->flags 0x80 has unknown bits");
  bad_cfg = (plm_plan_config){.flags = PLM_PLAN_FUSE | PLM_PLAN_NO_FUSION};
  PLM_CHECK_FAILS(plm_pipeline_compile(pl, &bad_cfg), PLM_ERR_INVALID_ARG,
                  "both PLM_PLAN_FUSE and PLM_PLAN_NO_FUSION");
  /* A pool too small for the workspace: out of memory, and the pipeline is unchanged. */
  plm_pool *tiny = NULL;
  plm_pool_config tiny_cfg = {.byte_limit = 4096, .min_chunk_bytes = 4096};
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &tiny_cfg, &tiny));
  plm_plan_config in_tiny = {.pool = tiny, .frames_in_flight = 4};
  ck_assert_int_eq(plm_pipeline_compile(pl, &in_tiny), PLM_ERR_OUT_OF_MEMORY);
  PLM_CHECK_FAILS(plm_pipeline_plan_info(pl, &(plm_plan_info){0}), PLM_ERR_INVALID_STATE,
                  "not compiled");
  PLM_CHECK_OK(plm_pool_destroy(tiny));

  const uint64_t before = live_blocks();
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  ck_assert_uint_eq(live_blocks(), before + 1); /* one workspace, no constant in use */
  PLM_CHECK_FAILS(plm_pipeline_compile(pl, NULL), PLM_ERR_INVALID_STATE, "compiled already");
  PLM_CHECK_FAILS(plm_pipeline_add_threshold(pl, mag, &tp, &mask), PLM_ERR_INVALID_STATE,
                  "plm_pipeline_add_threshold: the pipeline is compiled");
  PLM_CHECK_FAILS(plm_pipeline_mark_output(pl, mag), PLM_ERR_INVALID_STATE, "is compiled");

  /* Bad runs: nothing enqueued, and the pipeline still runs. */
  plm_tensor frame, wrong, outs[2];
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &frame));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &wrong));
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, frame.data, 0, plm_tensor_bytes(&frame)));
  for (int o = 0; o < 2; o++) {
    PLM_CHECK_OK(plm_pipeline_output_shape(pl, o, &shape));
    outs[o] = device_tensor(&shape);
  }
  PLM_CHECK_FAILS(
      plm_pipeline_run(pl, &wrong, outs, plm_test_stream), PLM_ERR_INVALID_ARG,
      "plm_pipeline_run: inputs[0] is u8 16x16 but the pipeline's input 0 is u16 16x16");
  plm_tensor swapped[2] = {outs[1], outs[0]};
  PLM_CHECK_FAILS(plm_pipeline_run(pl, &frame, swapped, plm_test_stream), PLM_ERR_INVALID_ARG,
                  "outputs[0] is i32 1 but the pipeline's output 0 is f64 64x12");
  plm_tensor same[2] = {outs[0], outs[0]};
  same[1].dtype = PLM_DTYPE_I32;
  same[1].ndim = 1;
  same[1].dims[0] = 1;
  same[1].strides[0] = 1;
  PLM_CHECK_FAILS(plm_pipeline_run(pl, &frame, same, plm_test_stream), PLM_ERR_INVALID_ARG,
                  "outputs[1] overlaps outputs[0]");
  PLM_CHECK_FAILS(plm_pipeline_run(pl, NULL, outs, plm_test_stream), PLM_ERR_INVALID_ARG,
                  "inputs is NULL");
  PLM_CHECK_FAILS(plm_pipeline_run(pl, &frame, outs, NULL), PLM_ERR_INVALID_ARG, "stream is NULL");
  PLM_CHECK_OK(plm_pipeline_run(pl, &frame, outs, plm_test_stream));
  int32_t n = -1;
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, &n, outs[1].data, 4, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert_int_eq(n, 0); /* a flat frame has no edges */
  release(&frame);
  release(&wrong);
  release(&outs[0]);
  release(&outs[1]);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));

  PLM_CHECK_FAILS(plm_pipeline_input_shape(pl, 1, &shape), PLM_ERR_INVALID_ARG,
                  "i 1 is not in 0..0");
  PLM_CHECK_FAILS(plm_pipeline_output_shape(pl, -1, &shape), PLM_ERR_INVALID_ARG,
                  "i -1 is not in 0..1");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  ck_assert_uint_eq(live_blocks(), before);
  PLM_CHECK_OK(plm_pipeline_destroy(other));
  PLM_CHECK_OK(plm_pipeline_destroy(NULL));
}
END_TEST

START_TEST(test_compile_destroy_leaves_nothing) {
  const uint64_t before = live_blocks();
  for (int k = 1; k <= 4; k++) {
    plm_pipeline *pl = branch_pipeline(4, k);
    plm_plan_info info;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    /* k workspaces and the constants' block. */
    ck_assert_uint_eq(live_blocks(), before + (uint64_t)k + 1);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
    ck_assert_uint_eq(live_blocks(), before);
  }
  /* Built but never compiled. */
  plm_pipeline *pl = sobel_entropy_threshold(FUSABLE);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* A pipeline left alive is destroyed with its context and reported. */
START_TEST(test_context_destroys_a_leftover_pipeline) {
  plm_context *ctx = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &ctx));
  const int64_t dims[2] = {32, 32};
  plm_pipeline *compiled = NULL, *built = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(ctx, "sobel ! threshold value=3 ! label ! regions", PLM_DTYPE_U8,
                                  2, dims, &compiled));
  plm_plan_config cfg = {.frames_in_flight = 3};
  PLM_CHECK_OK(plm_pipeline_compile(compiled, &cfg));
  PLM_CHECK_OK(plm_pipeline_parse(ctx, "threshold value=3", PLM_DTYPE_U8, 2, dims, &built));
  PLM_CHECK_FAILS(plm_context_destroy(ctx), PLM_ERR_INVALID_STATE,
                  "the context still owned 2 pipeline(s), 0 stream(s), 0 event(s)");
}
END_TEST

/* ---- text with tensors ------------------------------------------------------------------ */

/* The tensors the text names, made once per test (tensors_make): an f32 input x (5, 12)
 * and operands shaped for it. */
enum { TT_B = 5, TT_I = 12, TT_H = 6, TT_N = 4, TT_D = 3, TT_COUNT = 14 };
static const int64_t tt_x_dims[2] = {TT_B, TT_I};
static plm_named_tensor tt[TT_COUNT];
static float *tt_data[TT_COUNT];

/* n f32 values in [-1, 1), deterministic. */
static float *random_unit(int64_t n, uint64_t *seed) {
  float *host = malloc((size_t)n * sizeof *host);
  ck_assert_ptr_nonnull(host);
  for (int64_t i = 0; i < n; i++)
    host[i] = (float)((double)(plm_test_random(seed) >> 11) / 4503599627370496.0 - 1.0);
  return host;
}

static void tensors_make(void) {
  static const struct {
    const char *name;
    plm_dtype dtype;
    int ndim;
    int64_t dims[3];
  } specs[TT_COUNT] = {
      {"w", PLM_DTYPE_F32, 2, {TT_I, TT_I}},        /* matmul (I, I): chains */
      {"bias", PLM_DTYPE_F32, 1, {TT_I}},           /* matmul's bias */
      {"bias2", PLM_DTYPE_F32, 2, {TT_B, TT_I}},    /* vector_add after matmul */
      {"wd", PLM_DTYPE_F32, 3, {TT_N, TT_D, TT_I}}, /* dendritic */
      {"b", PLM_DTYPE_F32, 2, {TT_B, TT_I}},        /* vector_add, dot */
      {"h", PLM_DTYPE_F32, 2, {TT_B, TT_H}},        /* lstm_cell */
      {"c", PLM_DTYPE_F32, 2, {TT_B, TT_H}},        /* */
      {"w_ih", PLM_DTYPE_F32, 2, {4 * TT_H, TT_I}}, /* */
      {"w_hh", PLM_DTYPE_F32, 2, {4 * TT_H, TT_H}}, /* */
      {"b.ih", PLM_DTYPE_F32, 1, {4 * TT_H}},       /* (a name with '.') */
      {"b-hh", PLM_DTYPE_F32, 1, {4 * TT_H}},       /* (a name with '-') */
      {"wo", PLM_DTYPE_F32, 2, {TT_H, TT_I}},       /* matmul after lstm_cell */
      {"k", PLM_DTYPE_F32, 2, {3, 5}},              /* conv2d */
      {"u8w", PLM_DTYPE_U8, 2, {TT_I, TT_I}},       /* a wrong dtype */
  };
  uint64_t seed = 0x7e57ull;
  for (int t = 0; t < TT_COUNT; t++) {
    tt[t] = (plm_named_tensor){.name = specs[t].name,
                               .shape = {.dtype = specs[t].dtype, .ndim = specs[t].ndim}};
    int64_t n = 1;
    for (int d = 0; d < specs[t].ndim; d++) n *= tt[t].shape.dims[d] = specs[t].dims[d];
    tt_data[t] = random_unit(n, &seed); /* u8w: its bytes, whatever they are */
    tt[t].host_data = tt_data[t];
  }
}

static void tensors_free(void) {
  for (int t = 0; t < TT_COUNT; t++) free(tt_data[t]);
}

/* The named tensor as a constant of a pipeline built by hand. */
static plm_pipe_tensor tt_constant(plm_pipeline *pl, const char *name) {
  for (int t = 0; t < TT_COUNT; t++)
    if (strcmp(tt[t].name, name) == 0) {
      plm_pipe_tensor out;
      PLM_CHECK_OK(plm_pipeline_add_constant(pl, tt[t].shape.dtype, tt[t].shape.ndim,
                                             tt[t].shape.dims, tt[t].host_data, &out));
      return out;
    }
  ck_abort_msg("no test tensor %s", name);
  return (plm_pipe_tensor){0, 0};
}

static int count_constants(const plm_pipeline *pl) {
  int constants = 0;
  for (int t = 0; t < pl->graph.tensor_count; t++)
    constants += pl->graph.tensors[t].kind == PLM__TENSOR_CONSTANT;
  return constants;
}

/* Compile pl and run it once on x (host, (TT_B, TT_I)); the outputs' bytes, malloc'd. */
static void run_on(plm_pipeline *pl, const float *x, int *n_out, void **host_out, size_t *bytes) {
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  PLM_CHECK_OK(plm_pipeline_io_count(pl, NULL, n_out));
  const plm_shape in_shape = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {TT_B, TT_I}};
  plm_tensor in = device_tensor(&in_shape), out[4];
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, x, plm_tensor_bytes(&in),
                                 PLM_COPY_HOST_TO_DEVICE));
  for (int o = 0; o < *n_out; o++) {
    plm_shape shape;
    PLM_CHECK_OK(plm_pipeline_output_shape(pl, o, &shape));
    out[o] = device_tensor(&shape);
  }
  PLM_CHECK_OK(plm_pipeline_run(pl, &in, out, plm_test_stream));
  for (int o = 0; o < *n_out; o++) {
    host_out[o] = to_host(&out[o]);
    bytes[o] = plm_tensor_bytes(&out[o]);
  }
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  for (int o = 0; o < *n_out; o++) release(&out[o]);
  release(&in);
}

/* The pipeline parsed from text and the one `build` makes from the input by hand (adding
 * the same tensors as constants) have the same outputs, byte for byte, on one random x. */
typedef void (*hand_fn)(plm_pipeline *pl, plm_pipe_tensor x);

static void expect_text_equals_hand(const char *text, hand_fn build, int outputs) {
  plm_pipeline *parsed = NULL, *built = NULL;
  plm_status status = plm_pipeline_parse_with_tensors(plm_test_ctx, text, PLM_DTYPE_F32, 2,
                                                      tt_x_dims, tt, TT_COUNT, &parsed);
  ck_assert_msg(status == PLM_OK, "'%s': %s", text, plm_last_error());
  plm_pipe_tensor x;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &built));
  PLM_CHECK_OK(plm_pipeline_add_input(built, PLM_DTYPE_F32, 2, tt_x_dims, &x));
  build(built, x);
  ck_assert_int_eq(count_constants(parsed), count_constants(built));
  uint64_t seed = 0x1badull;
  float *host_x = random_unit(TT_B * TT_I, &seed);
  int n_text = 0, n_hand = 0;
  void *got[4], *want[4];
  size_t got_bytes[4], want_bytes[4];
  run_on(parsed, host_x, &n_text, got, got_bytes);
  run_on(built, host_x, &n_hand, want, want_bytes);
  ck_assert_msg(n_text == outputs && n_hand == outputs, "'%s': %d outputs, by hand %d, not %d",
                text, n_text, n_hand, outputs);
  for (int o = 0; o < outputs; o++) {
    plm_shape a, b;
    PLM_CHECK_OK(plm_pipeline_output_shape(parsed, o, &a));
    PLM_CHECK_OK(plm_pipeline_output_shape(built, o, &b));
    ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "'%s': output %d's shape differs", text, o);
    ck_assert_uint_eq(got_bytes[o], want_bytes[o]);
    ck_assert_msg(memcmp(got[o], want[o], got_bytes[o]) == 0,
                  "'%s': output %d differs from the pipeline built by hand", text, o);
    free(got[o]);
    free(want[o]);
  }
  free(host_x);
  PLM_CHECK_OK(plm_pipeline_destroy(parsed));
  PLM_CHECK_OK(plm_pipeline_destroy(built));
}

static void hand_matmul(plm_pipeline *pl, plm_pipe_tensor x) {
  const plm_matmul_params params = {0};
  plm_pipe_tensor out, none = {0, 0};
  PLM_CHECK_OK(plm_pipeline_add_matmul(pl, x, tt_constant(pl, "w"), none, &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

static void hand_matmul_keys(plm_pipeline *pl, plm_pipe_tensor x) {
  const plm_matmul_params params = {.precision = PLM_PRECISION_TF32,
                                    .activation = PLM_ACTIVATION_SIGMOID};
  plm_pipe_tensor w = tt_constant(pl, "w"), bias = tt_constant(pl, "bias"), out;
  PLM_CHECK_OK(plm_pipeline_add_matmul(pl, x, w, bias, &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

/* matmul relu, then + bias2: the chain of the issue. */
static void hand_matmul_vector_add(plm_pipeline *pl, plm_pipe_tensor x) {
  const plm_matmul_params relu = {.activation = PLM_ACTIVATION_RELU};
  plm_pipe_tensor hidden, out, none = {0, 0};
  PLM_CHECK_OK(plm_pipeline_add_matmul(pl, x, tt_constant(pl, "w"), none, &relu, &hidden));
  PLM_CHECK_OK(plm_pipeline_add_vector_add(pl, hidden, tt_constant(pl, "bias2"), NULL, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

/* w named twice: one constant read by both nodes. */
static void hand_matmul_twice(plm_pipeline *pl, plm_pipe_tensor x) {
  const plm_matmul_params tanh_act = {.activation = PLM_ACTIVATION_TANH}, plain = {0};
  plm_pipe_tensor w = tt_constant(pl, "w"), bias = tt_constant(pl, "bias"), hidden, out;
  PLM_CHECK_OK(plm_pipeline_add_matmul(pl, x, w, bias, &tanh_act, &hidden));
  PLM_CHECK_OK(plm_pipeline_add_matmul(pl, hidden, w, bias, &plain, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

static void hand_dendritic(plm_pipeline *pl, plm_pipe_tensor x) {
  /* The text's defaults: sigmoid, k 1, theta 0, beta 1. */
  const plm_dendritic_params params = {.mode = PLM_DENDRITE_SIGMOID, .k = 1, .beta = 1};
  plm_pipe_tensor out;
  PLM_CHECK_OK(plm_pipeline_add_dendritic(pl, x, tt_constant(pl, "wd"), &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

static void hand_dendritic_nmda(plm_pipeline *pl, plm_pipe_tensor x) {
  const plm_dendritic_params params = {
      .mode = PLM_DENDRITE_NMDA, .k = 2.5f, .theta = 0.25f, .beta = 1};
  plm_pipe_tensor out;
  PLM_CHECK_OK(plm_pipeline_add_dendritic(pl, x, tt_constant(pl, "wd"), &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

static void hand_dendritic_active_bp(plm_pipeline *pl, plm_pipe_tensor x) {
  const plm_dendritic_params params = {
      .mode = PLM_DENDRITE_ACTIVE_BP, .k = 1, .theta = -0.125f, .beta = 1.5f};
  plm_pipe_tensor out;
  PLM_CHECK_OK(plm_pipeline_add_dendritic(pl, x, tt_constant(pl, "wd"), &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

/* nmda and active_bp with the text's default k and beta (1), theta given. */
static void hand_dendritic_nmda_default(plm_pipeline *pl, plm_pipe_tensor x) {
  const plm_dendritic_params params = {
      .mode = PLM_DENDRITE_NMDA, .k = 1, .theta = 0.25f, .beta = 1};
  plm_pipe_tensor out;
  PLM_CHECK_OK(plm_pipeline_add_dendritic(pl, x, tt_constant(pl, "wd"), &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

static void hand_dendritic_active_bp_default(plm_pipeline *pl, plm_pipe_tensor x) {
  const plm_dendritic_params params = {
      .mode = PLM_DENDRITE_ACTIVE_BP, .k = 1, .theta = 0.25f, .beta = 1};
  plm_pipe_tensor out;
  PLM_CHECK_OK(plm_pipeline_add_dendritic(pl, x, tt_constant(pl, "wd"), &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

static void hand_dendritic_multiplicative(plm_pipeline *pl, plm_pipe_tensor x) {
  const plm_dendritic_params params = {.mode = PLM_DENDRITE_MULTIPLICATIVE, .k = 1, .beta = 1};
  plm_pipe_tensor out;
  PLM_CHECK_OK(plm_pipeline_add_dendritic(pl, x, tt_constant(pl, "wd"), &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

static void hand_vector_add(plm_pipeline *pl, plm_pipe_tensor x) {
  plm_pipe_tensor out;
  PLM_CHECK_OK(plm_pipeline_add_vector_add(pl, x, tt_constant(pl, "b"), NULL, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

static void hand_axpby(plm_pipeline *pl, plm_pipe_tensor x) {
  const plm_vector_add_params params = {.alpha = 2.0, .beta = -0.375};
  plm_pipe_tensor out;
  PLM_CHECK_OK(plm_pipeline_add_vector_add(pl, x, tt_constant(pl, "b"), &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

static void hand_dot(plm_pipeline *pl, plm_pipe_tensor x) {
  plm_pipe_tensor out;
  PLM_CHECK_OK(plm_pipeline_add_dot(pl, x, tt_constant(pl, "b"), &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

/* lstm_cell last: out_h, then out_c. */
static void hand_lstm_cell(plm_pipeline *pl, plm_pipe_tensor x) {
  plm_pipe_tensor h = tt_constant(pl, "h"), c = tt_constant(pl, "c");
  plm_pipe_tensor wi = tt_constant(pl, "w_ih"), wh = tt_constant(pl, "w_hh"), none = {0, 0};
  plm_pipe_tensor out_h, out_c;
  PLM_CHECK_OK(plm_pipeline_add_lstm_cell(pl, x, h, c, wi, wh, none, none, &out_h, &out_c));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out_h));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out_c));
}

/* With biases, and a matmul after it reading out_h (one output). */
static void hand_lstm_cell_then_matmul(plm_pipeline *pl, plm_pipe_tensor x) {
  plm_pipe_tensor h = tt_constant(pl, "h"), c = tt_constant(pl, "c");
  plm_pipe_tensor wi = tt_constant(pl, "w_ih"), wh = tt_constant(pl, "w_hh");
  plm_pipe_tensor bi = tt_constant(pl, "b.ih"), bh = tt_constant(pl, "b-hh");
  plm_pipe_tensor out_h, out_c, out, none = {0, 0};
  PLM_CHECK_OK(plm_pipeline_add_lstm_cell(pl, x, h, c, wi, wh, bi, bh, &out_h, &out_c));
  const plm_matmul_params params = {0};
  PLM_CHECK_OK(plm_pipeline_add_matmul(pl, out_h, tt_constant(pl, "wo"), none, &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

/* conv2d over the (5, 12) frame with the 3x5 kernel k, pad=same. */
static void hand_conv2d(plm_pipeline *pl, plm_pipe_tensor x) {
  plm_conv2d_params params = plm_conv2d_params_default();
  params.pad_y = 1;
  params.pad_x = 2;
  params.border = PLM_BORDER_REPLICATE;
  plm_pipe_tensor out;
  PLM_CHECK_OK(plm_pipeline_add_conv2d(pl, x, tt_constant(pl, "k"), &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
}

START_TEST(test_text_tensors_equal_hand_built) {
  static const struct {
    const char *text;
    hand_fn build;
    int outputs;
  } cases[] = {
      {"matmul b=@w", hand_matmul, 1},
      {"matmul b=@w bias=@bias act=sigmoid precision=tf32", hand_matmul_keys, 1},
      {"matmul b=@w act=relu ! vector_add b=@bias2", hand_matmul_vector_add, 1},
      {"matmul b=@w bias=@bias act=tanh ! matmul bias=@bias b=@w", hand_matmul_twice, 1},
      {"dendritic w=@wd", hand_dendritic, 1},
      {"dendritic w=@wd mode=nmda k=2.5 theta=0.25", hand_dendritic_nmda, 1},
      {"dendritic mode=active_bp theta=-0.125 beta=1.5 w=@wd", hand_dendritic_active_bp, 1},
      {"dendritic w=@wd mode=nmda theta=0.25", hand_dendritic_nmda_default, 1},
      {"dendritic w=@wd mode=active_bp theta=0.25", hand_dendritic_active_bp_default, 1},
      {"dendritic w=@wd mode=multiplicative", hand_dendritic_multiplicative, 1},
      {"vector_add b=@b", hand_vector_add, 1},
      {"vector_add b=@b alpha=2 beta=-0.375", hand_axpby, 1},
      {"dot b=@b", hand_dot, 1},
      {"lstm_cell h=@h c=@c w_ih=@w_ih w_hh=@w_hh", hand_lstm_cell, 2},
      {"lstm_cell h=@h c=@c w_ih=@w_ih w_hh=@w_hh b_ih=@b.ih b_hh=@b-hh ! matmul b=@wo",
       hand_lstm_cell_then_matmul, 1},
      {"conv2d kernel=@k pad=same border=replicate", hand_conv2d, 1},
  };
  tensors_make();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    expect_text_equals_hand(cases[i].text, cases[i].build, cases[i].outputs);
  tensors_free();
}
END_TEST

/* A tensor named twice becomes one constant; one not named, none; plm_pipeline_parse is
 * the case of no tensors, and a chain without tensors is the same with or without them. */
START_TEST(test_text_tensors_become_constants_once) {
  tensors_make();
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse_with_tensors(plm_test_ctx, "matmul b=@w ! matmul b=@w bias=@bias",
                                               PLM_DTYPE_F32, 2, tt_x_dims, tt, TT_COUNT, &pl));
  ck_assert_int_eq(count_constants(pl), 2); /* w and bias; nothing else of the 13 */
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_uint_eq(info.constant_bytes, aligned(TT_I * TT_I * 4) + aligned(TT_I * 4));
  PLM_CHECK_OK(plm_pipeline_destroy(pl));

  /* Tensors given to a text that names none: the same pipeline as plm_pipeline_parse's. */
  PLM_CHECK_OK(plm_pipeline_parse_with_tensors(plm_test_ctx, "threshold value=0", PLM_DTYPE_F32, 2,
                                               tt_x_dims, tt, TT_COUNT, &pl));
  ck_assert_int_eq(count_constants(pl), 0);
  ck_assert_int_eq(pl->graph.node_count, 1);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  PLM_CHECK_OK(plm_pipeline_parse_with_tensors(plm_test_ctx, "threshold value=0", PLM_DTYPE_F32, 2,
                                               tt_x_dims, NULL, 0, &pl));
  PLM_CHECK_OK(plm_pipeline_destroy(pl));

  /* conv2d's kernel as a tensor: one constant (a spec would make one of its own too). */
  PLM_CHECK_OK(plm_pipeline_parse_with_tensors(plm_test_ctx, "conv2d kernel=@k ! conv2d kernel=@k",
                                               PLM_DTYPE_F32, 2, tt_x_dims, tt, TT_COUNT, &pl));
  ck_assert_int_eq(count_constants(pl), 1);
  plm_shape shape;
  PLM_CHECK_OK(plm_pipeline_output_shape(pl, 0, &shape));
  ck_assert_int_eq(shape.dims[0], TT_B - 4); /* 3x5 kernel twice, no padding */
  ck_assert_int_eq(shape.dims[1], TT_I - 8);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));

  /* The caller's arrays need not outlive the call: the constant is a copy. */
  float *copy = malloc((size_t)TT_I * TT_I * sizeof *copy);
  ck_assert_ptr_nonnull(copy);
  memcpy(copy, tt_data[0], (size_t)TT_I * TT_I * sizeof *copy);
  char name[] = "weights";
  plm_named_tensor one = {.name = name, .shape = tt[0].shape, .host_data = copy};
  PLM_CHECK_OK(plm_pipeline_parse_with_tensors(plm_test_ctx, "matmul b=@weights", PLM_DTYPE_F32, 2,
                                               tt_x_dims, &one, 1, &pl));
  memset(copy, 0, (size_t)TT_I * TT_I * sizeof *copy);
  memset(name, 'x', sizeof name - 1);
  const plm__tensor *constant = &pl->graph.tensors[pl->graph.nodes[0].inputs[1]];
  ck_assert_int_eq(constant->kind, PLM__TENSOR_CONSTANT);
  ck_assert_int_eq(memcmp(constant->host, tt_data[0], (size_t)TT_I * TT_I * 4), 0);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free(copy);
  tensors_free();
}
END_TEST

START_TEST(test_text_tensor_errors) {
  static const char *const known =
      "(the tensors are w, bias, bias2, wd, b, h, c, w_ih, w_hh, b.ih, b-hh, wo, k, u8w)";
  static const struct {
    const char *text, *message;
    bool exact; /* the whole message, else a part of it (the ops' own checks) */
  } cases[] = {
      {"matmul", "element 1 'matmul': missing key 'b' (a tensor: b=@NAME)", true},
      {"dendritic mode=nmda", "element 1 'dendritic': missing key 'w' (a tensor: w=@NAME)", true},
      {"vector_add alpha=2", "element 1 'vector_add': missing key 'b' (a tensor: b=@NAME)", true},
      {"sobel ! dot", "element 2 'dot': missing key 'b' (a tensor: b=@NAME)", true},
      {"lstm_cell h=@h c=@c w_ih=@w_ih",
       "element 1 'lstm_cell': missing key 'w_hh' (a tensor: w_hh=@NAME)", true},
      {"matmul b=@nope", "element 1 'matmul': key 'b': no tensor named 'nope' ", true},
      {"matmul b=@w ! vector_add b=@W", "element 2 'vector_add': key 'b': no tensor named 'W' ",
       true},
      {"vector_add b=@", "element 1 'vector_add': key 'b': no tensor named '' ", true},
      {"conv2d kernel=@kk", "element 1 'conv2d': key 'kernel': no tensor named 'kk' ", true},
      {"matmul b=3",
       "element 1 'matmul': key 'b': '3' is not a tensor (b=@NAME names one of "
       "the tensors given)",
       true},
      {"lstm_cell h=@h c=@c w_ih=@w_ih w_hh=@w_hh b_hh=0",
       "element 1 'lstm_cell': key 'b_hh': '0' is not a tensor (b_hh=@NAME names one of the "
       "tensors given)",
       true},
      {"vector_add b=@b alpha=@w",
       "element 1 'vector_add': key 'alpha': '@w' names a tensor, but alpha takes a value", true},
      {"matmul b=@w act=@w",
       "element 1 'matmul': key 'act': '@w' names a tensor, but act takes a value", true},
      {"threshold value=@b",
       "element 1 'threshold': key 'value': '@b' names a tensor, but value takes a value", true},
      {"dot b=@b c=@c", "element 1 'dot': unknown key 'c' (dot takes b=@NAME)", true},
      {"matmul b=@w transpose=1",
       "element 1 'matmul': unknown key 'transpose' (matmul takes b=@NAME, bias=@NAME, act, "
       "precision)",
       true},
      {"lstm_cell x=@b",
       "element 1 'lstm_cell': unknown key 'x' (lstm_cell takes h=@NAME, c=@NAME, w_ih=@NAME, "
       "w_hh=@NAME, b_ih=@NAME, b_hh=@NAME)",
       true},
      {"conv2d kernel=box:3 weights=@k",
       "element 1 'conv2d': unknown key 'weights' (conv2d takes kernel, size, stride, pad, "
       "border)",
       true},
      {"matmul b=@w act=gelu",
       "element 1 'matmul': key 'act': 'gelu' is not one of none, relu, sigmoid, tanh", true},
      {"matmul b=@w precision=fp16",
       "element 1 'matmul': key 'precision': 'fp16' is not one of fp32, tf32, bf16, auto", true},
      {"dendritic w=@wd mode=fast",
       "element 1 'dendritic': key 'mode': 'fast' is not one of sigmoid, nmda, active_bp, "
       "multiplicative",
       true},
      {"dendritic w=@wd k=1e39",
       "element 1 'dendritic': key 'k': '1e39' is not a finite f32 number", true},
      {"dendritic w=@wd theta=x",
       "element 1 'dendritic': key 'theta': 'x' is not a finite f32 number", true},
      {"vector_add b=@b beta=inf",
       "element 1 'vector_add': key 'beta': 'inf' is not a finite number", true},
      {"conv2d kernel=@k size=3x5",
       "element 1 'conv2d': key 'size' is for inline kernels, not '@k'", true},
      {"conv2d kernel=@w pad=same",
       "element 1 'conv2d': key 'pad': 'same' needs a kernel of odd sizes, not 12x12", true},
      {"matmul b=@w b=@bias", "element 1 'matmul': key 'b' is given twice", true},
      /* The nodes' own checks when they are added, the element named. */
      {"matmul b=@b", "element 1 'matmul': ", false},
      {"matmul b=@w bias=@b", "element 1 'matmul': ", false},
      {"matmul b=@u8w", "element 1 'matmul': ", false},
      {"dendritic w=@w", "element 1 'dendritic': ", false},
      {"vector_add b=@h", "element 1 'vector_add': ", false},
      {"dot b=@bias", "element 1 'dot': ", false},
      {"lstm_cell h=@h c=@b w_ih=@w_ih w_hh=@w_hh",
       "element 1 'lstm_cell': c is 5x12, not 5x6 (B 5, I 12, H 6)", false},
      {"lstm_cell h=@h c=@c w_ih=@w_hh w_hh=@w_hh",
       "element 1 'lstm_cell': w_ih is 24x6, not 24x12 (B 5, I 12, H 6)", false},
      {"lstm_cell h=@h c=@c w_ih=@w_ih w_hh=@w_hh b_ih=@bias",
       "element 1 'lstm_cell': b_ih is 12, not 24 (B 5, I 12, H 6)", false},
      {"conv2d kernel=@wd", "element 1 'conv2d': ", false},
      /* A failure after constants were added: nothing leaks (the fixture, ASan). */
      {"matmul b=@w bias=@bias ! dendritic w=@wd ! vector_add b=@b",
       "element 3 'vector_add': ", false},
  };
  tensors_make();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    plm_pipeline *pl = (plm_pipeline *)&pl; /* must be reset to NULL */
    plm_clear_error();
    plm_status status = plm_pipeline_parse_with_tensors(plm_test_ctx, cases[i].text, PLM_DTYPE_F32,
                                                        2, tt_x_dims, tt, TT_COUNT, &pl);
    ck_assert_msg(status == PLM_ERR_INVALID_ARG, "'%s' -> %s (%s)", cases[i].text,
                  plm_status_str(status), plm_last_error());
    ck_assert_ptr_null(pl);
    char want[512];
    snprintf(want, sizeof want, "plm_pipeline_parse_with_tensors: %s%s", cases[i].message,
             strstr(cases[i].message, "no tensor named") ? known : "");
    bool good = cases[i].exact ? strcmp(plm_last_error(), want) == 0
                               : strncmp(plm_last_error(), want, strlen(want)) == 0;
    ck_assert_msg(good, "'%s': message\n  \"%s\", not\n  \"%s\"%s", cases[i].text, plm_last_error(),
                  want, cases[i].exact ? "" : "...");
  }
  tensors_free();

  /* plm_pipeline_parse names no tensors, so @NAME is unknown. */
  plm_pipeline *pl = (plm_pipeline *)&pl;
  const int64_t dims[2] = {4, 4};
  plm_clear_error();
  ck_assert_int_eq(plm_pipeline_parse(plm_test_ctx, "dot b=@w", PLM_DTYPE_F32, 2, dims, &pl),
                   PLM_ERR_INVALID_ARG);
  ck_assert_ptr_null(pl);
  ck_assert_str_eq(plm_last_error(),
                   "plm_pipeline_parse: element 1 'dot': key 'b': no tensor "
                   "named 'w' (no tensors were given)");
}
END_TEST

START_TEST(test_text_tensor_argument_errors) {
  float data[12] = {0};
  static const char *const prefix = "plm_pipeline_parse_with_tensors: ";
  const plm_shape shape = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {3, 4}};
  const plm_named_tensor good = {.name = "a", .shape = shape, .host_data = data};
  static const struct {
    int which; /* the field of tensors[1] to spoil */
    const char *message;
  } cases[] = {
      {0, "tensors[1].name is NULL"},
      {1, "tensors[1].name is empty"},
      {2,
       "tensors[1].name 'a b' is not letters, digits, '_', '-' and '.' only (the text could "
       "not name it)"},
      {3,
       "tensors[1].name 'w@1' is not letters, digits, '_', '-' and '.' only (the text could "
       "not name it)"},
      {4, "tensors[1].name 'a' is given twice (also tensors[0])"},
      {5, "tensors[1] 'b': host_data is NULL"},
      {6, "tensors[1] 'b': ndim 0 is not in 1..4"},
      {7, "tensors[1] 'b': ndim 5 is not in 1..4"},
      {8, "tensors[1] 'b': dtype 99 is not a plm_dtype"},
      {9, "tensors[1] 'b': dims[1] is 0; dimensions must be >= 1"},
  };
  const int64_t dims[2] = {3, 4};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    plm_named_tensor tensors[2] = {good, good};
    tensors[1].name = "b";
    plm_named_tensor *t = &tensors[1];
    switch (cases[i].which) {
      case 0: t->name = NULL; break;
      case 1: t->name = ""; break;
      case 2: t->name = "a b"; break;
      case 3: t->name = "w@1"; break;
      case 4: t->name = "a"; break;
      case 5: t->host_data = NULL; break;
      case 6: t->shape.ndim = 0; break;
      case 7: t->shape.ndim = 5; break;
      case 8: t->shape.dtype = (plm_dtype)99; break;
      case 9: t->shape.dims[1] = 0; break;
    }
    /* Checked whether the text names it or not. */
    plm_pipeline *pl = (plm_pipeline *)&pl;
    plm_clear_error();
    ck_assert_int_eq(plm_pipeline_parse_with_tensors(plm_test_ctx, "vector_add b=@a", PLM_DTYPE_F32,
                                                     2, dims, tensors, 2, &pl),
                     PLM_ERR_INVALID_ARG);
    ck_assert_ptr_null(pl);
    char want[256];
    snprintf(want, sizeof want, "%s%s", prefix, cases[i].message);
    ck_assert_str_eq(plm_last_error(), want);
  }
  /* Non-finite values where they must be finite (a NaN gain once blanked every frame
   * without a word): the first one is named, by its index per dimension; an operand such
   * as vector_add's b may hold them (IEEE arithmetic), and a tensor the text does not name
   * is not searched. */
  float spoiled[12] = {0};
  spoiled[7] = NAN;
  spoiled[9] = INFINITY;
  const plm_named_tensor calibration[2] = {{.name = "gain", .shape = shape, .host_data = spoiled},
                                           {.name = "offset", .shape = shape, .host_data = data}};
  static const struct {
    const char *text, *message;
  } non_finite[] = {
      {"nuc gain=@gain offset=@offset",
       "plm_pipeline_parse_with_tensors: element 1 'nuc': key 'gain': tensor 'gain': element [1, "
       "3] "
       "(flat index 7) is NaN; nuc's gain must be finite"},
      {"nuc gain=@offset offset=@gain",
       "plm_pipeline_parse_with_tensors: element 1 'nuc': key 'offset': tensor 'gain': element "
       "[1, 3] (flat index 7) is NaN; nuc's offset must be finite"},
      {"conv2d kernel=@gain",
       "plm_pipeline_parse_with_tensors: element 1 'conv2d': key 'kernel': tensor 'gain': element "
       "[1, 3] (flat index 7) is NaN; conv2d's kernel must be finite"},
  };
  for (size_t i = 0; i < sizeof non_finite / sizeof non_finite[0]; i++) {
    plm_pipeline *pl = (plm_pipeline *)&pl;
    plm_clear_error();
    ck_assert_int_eq(plm_pipeline_parse_with_tensors(plm_test_ctx, non_finite[i].text,
                                                     PLM_DTYPE_F32, 2, dims, calibration, 2, &pl),
                     PLM_ERR_INVALID_ARG);
    ck_assert_ptr_null(pl);
    ck_assert_str_eq(plm_last_error(), non_finite[i].message);
  }
  spoiled[7] = 0.0f; /* the first is now the infinity */
  plm_pipeline *refused = (plm_pipeline *)&refused;
  PLM_CHECK_FAILS(plm_pipeline_parse_with_tensors(plm_test_ctx, "nuc gain=@gain offset=@offset",
                                                  PLM_DTYPE_F32, 2, dims, calibration, 2, &refused),
                  PLM_ERR_INVALID_ARG, "element [2, 1] (flat index 9) is +inf");
  plm_pipeline *accepted = NULL;
  PLM_CHECK_OK(plm_pipeline_parse_with_tensors(plm_test_ctx, "vector_add b=@gain", PLM_DTYPE_F32, 2,
                                               dims, calibration, 2, &accepted));
  PLM_CHECK_OK(plm_pipeline_destroy(accepted));
  PLM_CHECK_OK(plm_pipeline_parse_with_tensors(plm_test_ctx, "sobel", PLM_DTYPE_F32, 2, dims,
                                               calibration, 2, &accepted));
  PLM_CHECK_OK(plm_pipeline_destroy(accepted));
  plm_pipeline *pl = (plm_pipeline *)&pl;
  PLM_CHECK_FAILS(plm_pipeline_parse_with_tensors(plm_test_ctx, "sobel", PLM_DTYPE_F32, 2, dims,
                                                  &good, -1, &pl),
                  PLM_ERR_INVALID_ARG, "plm_pipeline_parse_with_tensors: count -1 is negative");
  ck_assert_ptr_null(pl);
  PLM_CHECK_FAILS(
      plm_pipeline_parse_with_tensors(plm_test_ctx, "sobel", PLM_DTYPE_F32, 2, dims, NULL, 2, &pl),
      PLM_ERR_INVALID_ARG, "plm_pipeline_parse_with_tensors: tensors is NULL (count 2)");
  PLM_CHECK_FAILS(
      plm_pipeline_parse_with_tensors(NULL, "sobel", PLM_DTYPE_F32, 2, dims, &good, 1, &pl),
      PLM_ERR_INVALID_ARG, "plm_pipeline_parse_with_tensors: ctx is NULL");
  PLM_CHECK_FAILS(
      plm_pipeline_parse_with_tensors(plm_test_ctx, NULL, PLM_DTYPE_F32, 2, dims, &good, 1, &pl),
      PLM_ERR_INVALID_ARG, "plm_pipeline_parse_with_tensors: text is NULL");
  PLM_CHECK_FAILS(
      plm_pipeline_parse_with_tensors(plm_test_ctx, "sobel", PLM_DTYPE_F32, 2, NULL, &good, 1, &pl),
      PLM_ERR_INVALID_ARG, "plm_pipeline_parse_with_tensors: dims is NULL");
  PLM_CHECK_FAILS(plm_pipeline_parse_with_tensors(plm_test_ctx, "sobel", PLM_DTYPE_F32, 2, dims,
                                                  &good, 1, NULL),
                  PLM_ERR_INVALID_ARG, "plm_pipeline_parse_with_tensors: out is NULL");
  ck_assert_ptr_null(pl);
}
END_TEST

static Suite *pipeline_suite(void) {
  Suite *suite = suite_create("pipeline");
  TCase *planner = tcase_create("planner");
  plm_test_add_fixture(planner);
  plm_test_add_stream_fixture(planner);
  tcase_set_timeout(planner, 120);
  tcase_add_test(planner, test_default_chain_plan);
  tcase_add_test(planner, test_chains_are_optimal);
  tcase_add_test(planner, test_random_dags_never_overlap_live_tensors);
  tcase_add_test(planner, test_branches_get_streams_and_events);
  tcase_add_test(planner, test_in_place_and_no_reuse);
  tcase_add_test(planner, test_fusion_recogniser);
  tcase_add_test(planner, test_fusion_substitution);
  suite_add_tcase(suite, planner);

  TCase *parser = tcase_create("parser");
  plm_test_add_fixture(parser);
  plm_test_add_stream_fixture(parser);
  tcase_add_test(parser, test_parser_errors);
  tcase_add_test(parser, test_parser_accepts);
  tcase_add_test(parser, test_builtin_kernels);
  suite_add_tcase(suite, parser);

  TCase *text_tensors = tcase_create("text_tensors");
  plm_test_add_fixture(text_tensors);
  plm_test_add_stream_fixture(text_tensors);
  tcase_add_test(text_tensors, test_text_tensors_equal_hand_built);
  tcase_add_test(text_tensors, test_text_tensors_become_constants_once);
  tcase_add_test(text_tensors, test_text_tensor_errors);
  tcase_add_test(text_tensors, test_text_tensor_argument_errors);
  suite_add_tcase(suite, text_tensors);

  TCase *results = tcase_create("results");
  plm_test_add_fixture(results);
  plm_test_add_stream_fixture(results);
  tcase_set_timeout(results, 120);
  tcase_add_test(results, test_default_pipeline_equals_ops);
  tcase_add_test(results, test_fused_pipeline_equals_unfused_ops);
  tcase_add_test(results, test_branches_equal_ops);
  tcase_add_test(results, test_back_to_back_frames);
  tcase_add_test(results, test_segment_equals_plm_segment);
  tcase_add_test(results, test_in_place_batch_equals_ops);
  suite_add_tcase(suite, results);

  TCase *scratch_case = tcase_create("scratch");
  plm_test_add_fixture(scratch_case);
  plm_test_add_stream_fixture(scratch_case);
  tcase_add_test(scratch_case, test_no_pool_allocation_per_frame);
  tcase_add_test(scratch_case, test_enqueue_takes_the_callers_scratch);
  suite_add_tcase(suite, scratch_case);

  TCase *eager = tcase_create("eager");
  plm_test_add_fixture(eager);
  plm_test_add_stream_fixture(eager);
  tcase_set_timeout(eager, 120);
  tcase_add_test(eager, test_eager_plans_equal_planned_results);
  tcase_add_test(eager, test_per_run_release_points);
  tcase_add_test(eager, test_per_run_from_a_passthrough_pool);
  tcase_add_test(eager, test_per_run_out_of_memory);
  tcase_add_test(eager, test_eager_plans_are_not_captured);
  tcase_add_test(eager, test_plan_cost);
  suite_add_tcase(suite, eager);

  TCase *lifecycle = tcase_create("lifecycle");
  plm_test_add_fixture(lifecycle);
  plm_test_add_stream_fixture(lifecycle);
  tcase_add_test(lifecycle, test_build_errors_leave_the_pipeline_usable);
  tcase_add_test(lifecycle, test_compile_destroy_leaves_nothing);
  tcase_add_test(lifecycle, test_context_destroys_a_leftover_pipeline);
  suite_add_tcase(suite, lifecycle);
  return suite;
}

int main(void) {
  return plm_test_main(pipeline_suite);
}

/* tests/test_pipeline_add.c: nodes added by name (plm_pipeline_add, plume/pipeline.h).
 * A node added by name is the node its typed call adds (the same bytes out of the same
 * plan), the typed calls made from the ops' map (cfar, nuc, badpixel, abs_diff,
 * background) add the node their name adds, ops run in a pipeline as they run alone, optional slots
 * and outputs behave as the descriptor says, and every wrong argument is refused with a message
 * naming the node, the slot or the key, leaving the pipeline as it was. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { H = 48, W = 40 };
static const int64_t frame_dims[2] = {H, W};

/* ---- helpers --------------------------------------------------------------------------------- */

/* A frame of H x W u8 or f32 values, deterministic; a few bright blobs on noise so
 * that entropy, cfar and label all have something to find. */
static void *frame_values(plm_dtype dtype, uint64_t seed) {
  const size_t n = (size_t)H * W;
  void *host = malloc(n * (dtype == PLM_DTYPE_U8 ? 1 : 4));
  ck_assert_ptr_nonnull(host);
  for (size_t i = 0; i < n; i++) {
    const int y = (int)(i / W), x = (int)(i % W);
    const bool blob = (y / 8 + x / 8) % 3 == 0 && y % 8 > 2 && x % 8 > 2;
    const unsigned v = (unsigned)(plm_test_random(&seed) % 40u) + (blob ? 200u : 0u);
    if (dtype == PLM_DTYPE_U8)
      ((unsigned char *)host)[i] = (unsigned char)(v > 255 ? 255 : v);
    else
      ((float *)host)[i] = (float)v * 0.5f;
  }
  return host;
}

static plm_tensor upload_frame(plm_dtype dtype, uint64_t seed) {
  void *host = frame_values(dtype, seed);
  plm_tensor t = plm_test_upload(dtype, 2, frame_dims, host);
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream)); /* the upload reads host */
  free(host);
  return t;
}

/* pl's only output after one run on frame, against want. */
static void expect_pipeline_gives(plm_pipeline *pl, const plm_tensor *frame, const plm_tensor *want,
                                  const char *what) {
  plm_tensor got;
  plm_test_compile_and_run(pl, frame, &got);
  plm_test_expect_same_bytes(&got, want, what);
  plm_test_release(&got);
}

/* ---- by name equals typed ------------------------------------------------------------------ */

/* sobel -> entropy -> threshold -> label, once through the typed calls and once by name:
 * the same labels and count, on the planner's fused path (the same plan, so the same
 * steps). */
START_TEST(test_chain_by_name_equals_typed) {
  plm_tensor frame = upload_frame(PLM_DTYPE_F32, 7);
  plm_tensor typed_out[2], named_out[2];

  plm_pipeline *typed;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &typed));
  plm_pipe_tensor in, mag, ent, mask, labels, count;
  PLM_CHECK_OK(plm_pipeline_add_input(typed, PLM_DTYPE_F32, 2, frame_dims, &in));
  const plm_sobel_params sp = {.border = PLM_BORDER_REPLICATE};
  PLM_CHECK_OK(plm_pipeline_add_sobel(typed, in, &sp, NULL, NULL, &mag));
  const plm_entropy_params ep = {.window = 9, .bins = 32, .range_lo = 0, .range_hi = 400};
  PLM_CHECK_OK(plm_pipeline_add_entropy(typed, mag, &ep, &ent));
  const plm_threshold_params tp = {.value = 2.5, .compare = PLM_COMPARE_GT};
  PLM_CHECK_OK(plm_pipeline_add_threshold(typed, ent, &tp, &mask));
  const plm_label_params lp = {.connectivity = 8};
  PLM_CHECK_OK(plm_pipeline_add_label(typed, mask, &lp, &labels, &count));
  PLM_CHECK_OK(plm_pipeline_mark_output(typed, labels));
  PLM_CHECK_OK(plm_pipeline_mark_output(typed, count));
  plm_test_compile_and_run(typed, &frame, typed_out);

  plm_pipeline *named;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &named));
  PLM_CHECK_OK(plm_pipeline_add_input(named, PLM_DTYPE_F32, 2, frame_dims, &in));
  PLM_CHECK_OK(plm_pipeline_add(named, "sobel", &in, 1, "border=replicate",
                                (plm_pipe_tensor *[]){NULL, NULL, &mag}, 3));
  PLM_CHECK_OK(plm_pipeline_add(named, "entropy", &mag, 1, "window=9 bins=32 range=0,400",
                                (plm_pipe_tensor *[]){&ent}, 1));
  PLM_CHECK_OK(
      plm_pipeline_add(named, "threshold", &ent, 1, "value=2.5", (plm_pipe_tensor *[]){&mask}, 1));
  PLM_CHECK_OK(plm_pipeline_add(named, "label", &mask, 1, "connectivity=8",
                                (plm_pipe_tensor *[]){&labels, &count}, 2));
  PLM_CHECK_OK(plm_pipeline_mark_output(named, labels));
  PLM_CHECK_OK(plm_pipeline_mark_output(named, count));
  plm_test_compile_and_run(named, &frame, named_out);

  plm_plan_info a, b;
  PLM_CHECK_OK(plm_pipeline_plan_info(typed, &a));
  PLM_CHECK_OK(plm_pipeline_plan_info(named, &b));
  ck_assert_int_eq(a.steps, b.steps);
  ck_assert_int_eq(a.fused_steps, b.fused_steps);
  plm_test_expect_same_bytes(&named_out[0], &typed_out[0], "labels");
  plm_test_expect_same_bytes(&named_out[1], &typed_out[1], "count");
  for (int o = 0; o < 2; o++) {
    plm_test_release(&typed_out[o]);
    plm_test_release(&named_out[o]);
  }
  plm_test_release(&frame);
  PLM_CHECK_OK(plm_pipeline_destroy(typed));
  PLM_CHECK_OK(plm_pipeline_destroy(named));
}
END_TEST

/* segment by name with only its table asked for: every output is still made (its
 * lowered steps need them) and the table is the typed call's. */
START_TEST(test_segment_outputs_not_asked_are_made) {
  plm_tensor frame = upload_frame(PLM_DTYPE_U8, 11), typed_table, named_table;
  plm_pipe_tensor in, table;

  plm_pipeline *typed;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &typed));
  PLM_CHECK_OK(plm_pipeline_add_input(typed, PLM_DTYPE_U8, 2, frame_dims, &in));
  const plm_segment_params sp = {.value = 100, .compare = PLM_COMPARE_GT, .connectivity = 4};
  PLM_CHECK_OK(plm_pipeline_add_segment(typed, in, &sp, 64, NULL, NULL, &table));
  PLM_CHECK_OK(plm_pipeline_mark_output(typed, table));
  plm_test_compile_and_run(typed, &frame, &typed_table);

  plm_pipeline *named;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &named));
  PLM_CHECK_OK(plm_pipeline_add_input(named, PLM_DTYPE_U8, 2, frame_dims, &in));
  PLM_CHECK_OK(plm_pipeline_add(named, "segment", &in, 1, "value=100 connectivity=4 capacity=64",
                                (plm_pipe_tensor *[]){NULL, NULL, &table}, 3));
  PLM_CHECK_OK(plm_pipeline_mark_output(named, table));
  plm_test_compile_and_run(named, &frame, &named_table);
  plm_test_expect_same_bytes(&named_table, &typed_table, "segment's table");

  plm_test_release(&typed_table);
  plm_test_release(&named_table);
  plm_test_release(&frame);
  PLM_CHECK_OK(plm_pipeline_destroy(typed));
  PLM_CHECK_OK(plm_pipeline_destroy(named));
}
END_TEST

/* ---- the ops with no typed call ---------------------------------------------------------- */

START_TEST(test_cfar_by_name_equals_the_op) {
  plm_tensor frame = upload_frame(PLM_DTYPE_F32, 3);
  const plm_cfar_params cp = {.window = 9, .guard = 3, .k = 2.0, .output = PLM_CFAR_Z};
  plm_shape shape;
  PLM_CHECK_OK(plm_cfar_output(&frame, &cp, &shape));
  plm_tensor want = plm_test_garbage(&shape);
  PLM_CHECK_OK(plm_cfar(plm_test_stream, &frame, NULL, &cp, &want));

  plm_pipeline *pl;
  plm_pipe_tensor in, z;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, frame_dims, &in));
  PLM_CHECK_OK(plm_pipeline_add(pl, "cfar", &in, 1, "window=9 guard=3 k=2 output=z",
                                (plm_pipe_tensor *[]){&z}, 1));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, z));
  expect_pipeline_gives(pl, &frame, &want, "cfar z");

  plm_test_release(&want);
  plm_test_release(&frame);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* nuc's gain and offset (named tensors in the text form) are inputs here: a constant and
 * a second input; abs_diff of the corrected frame against the raw one follows it. */
START_TEST(test_nuc_then_abs_diff_by_name) {
  plm_tensor frame = upload_frame(PLM_DTYPE_F32, 5);
  float *gain = malloc(sizeof(float) * H * W), *offset = malloc(sizeof(float) * H * W);
  ck_assert_ptr_nonnull(gain);
  ck_assert_ptr_nonnull(offset);
  for (int i = 0; i < H * W; i++) {
    gain[i] = 0.9f + 0.001f * (float)(i % 97);
    offset[i] = -2.0f + 0.01f * (float)(i % 13);
  }
  plm_tensor gain_t = plm_test_upload(PLM_DTYPE_F32, 2, frame_dims, gain);
  plm_tensor offset_t = plm_test_upload(PLM_DTYPE_F32, 2, frame_dims, offset);
  plm_shape shape;
  PLM_CHECK_OK(plm_nuc_output(&frame, &gain_t, &offset_t, &shape));
  plm_tensor corrected = plm_test_garbage(&shape), want = plm_test_garbage(&shape);
  PLM_CHECK_OK(plm_nuc(plm_test_stream, &frame, &gain_t, &offset_t, &corrected));
  PLM_CHECK_OK(plm_abs_diff(plm_test_stream, &corrected, &frame, &want));

  plm_pipeline *pl;
  plm_pipe_tensor in, off_in, gain_c, nuc_out, diff;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, frame_dims, &in));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, frame_dims, &off_in));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, frame_dims, gain, &gain_c));
  PLM_CHECK_OK(plm_pipeline_add(pl, "nuc", (plm_pipe_tensor[]){in, gain_c, off_in}, 3, NULL,
                                (plm_pipe_tensor *[]){&nuc_out}, 1));
  PLM_CHECK_OK(plm_pipeline_add(pl, "abs_diff", (plm_pipe_tensor[]){nuc_out, in}, 2, "",
                                (plm_pipe_tensor *[]){&diff}, 1));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, diff));
  plm_tensor got;
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  got = plm_test_garbage(&shape);
  const plm_tensor inputs[2] = {frame, offset_t};
  PLM_CHECK_OK(plm_pipeline_run(pl, inputs, &got, plm_test_stream));
  plm_test_expect_same_bytes(&got, &want, "nuc then abs_diff");

  plm_test_release(&got);
  plm_test_release(&corrected);
  plm_test_release(&want);
  plm_test_release(&gain_t);
  plm_test_release(&offset_t);
  plm_test_release(&frame);
  free(gain);
  free(offset);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* regions by name: its optional intensity left empty with a zeroed handle, its count
 * (read from the element before in the text form) given as a handle. */
START_TEST(test_regions_optional_input_by_name) {
  plm_tensor frame = upload_frame(PLM_DTYPE_U8, 13), typed_table, named_table;
  plm_pipe_tensor in, mask, labels, count, table;
  const plm_pipe_tensor none = {0, 0};

  plm_pipeline *typed;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &typed));
  PLM_CHECK_OK(plm_pipeline_add_input(typed, PLM_DTYPE_U8, 2, frame_dims, &in));
  const plm_threshold_params tp = {.value = 100, .compare = PLM_COMPARE_GT};
  PLM_CHECK_OK(plm_pipeline_add_threshold(typed, in, &tp, &mask));
  const plm_label_params lp = {.connectivity = 4};
  PLM_CHECK_OK(plm_pipeline_add_label(typed, mask, &lp, &labels, &count));
  PLM_CHECK_OK(plm_pipeline_add_regions(typed, labels, none, count, 32, &table));
  PLM_CHECK_OK(plm_pipeline_mark_output(typed, table));
  plm_test_compile_and_run(typed, &frame, &typed_table);

  plm_pipeline *named;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &named));
  PLM_CHECK_OK(plm_pipeline_add_input(named, PLM_DTYPE_U8, 2, frame_dims, &in));
  PLM_CHECK_OK(
      plm_pipeline_add(named, "threshold", &in, 1, "value=100", (plm_pipe_tensor *[]){&mask}, 1));
  PLM_CHECK_OK(plm_pipeline_add(named, "label", &mask, 1, "connectivity=4",
                                (plm_pipe_tensor *[]){&labels, &count}, 2));
  PLM_CHECK_OK(plm_pipeline_add(named, "regions", (plm_pipe_tensor[]){labels, none, count}, 3,
                                "capacity=32", (plm_pipe_tensor *[]){&table}, 1));
  PLM_CHECK_OK(plm_pipeline_mark_output(named, table));
  plm_test_compile_and_run(named, &frame, &named_table);
  plm_test_expect_same_bytes(&named_table, &typed_table, "regions' table");

  plm_test_release(&typed_table);
  plm_test_release(&named_table);
  plm_test_release(&frame);
  PLM_CHECK_OK(plm_pipeline_destroy(typed));
  PLM_CHECK_OK(plm_pipeline_destroy(named));
}
END_TEST

/* The builders made from the ops' map (plume/op_functions.h) for the ops that had none:
 * badpixel -> nuc -> abs_diff against the raw frame -> cfar and background, once through
 * plm_pipeline_add_<op> and once by name: the same bytes. */
START_TEST(test_generated_builders_equal_by_name) {
  plm_tensor frame = upload_frame(PLM_DTYPE_F32, 17), typed_out[2], named_out[2];
  unsigned char *bad = calloc((size_t)H * W, 1);
  float *gain = malloc(sizeof(float) * H * W), *offset = malloc(sizeof(float) * H * W);
  ck_assert_ptr_nonnull(bad);
  ck_assert_ptr_nonnull(gain);
  ck_assert_ptr_nonnull(offset);
  for (int i = 0; i < H * W; i++) {
    bad[i] = i % 37 == 5;
    gain[i] = 1.1f - 0.002f * (float)(i % 53);
    offset[i] = 0.5f * (float)(i % 7);
  }
  const plm_cfar_params cp = {.window = 9, .guard = 3, .k = 2.0, .output = PLM_CFAR_Z};
  plm_background_params bp = plm_background_params_default();
  bp.alpha = 0.25f;
  bp.hold_radius = 1;
  plm_pipe_tensor in, bad_c, gain_c, offset_c, fixed, corrected, diff, z, background;

  plm_pipeline *typed;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &typed));
  PLM_CHECK_OK(plm_pipeline_add_input(typed, PLM_DTYPE_F32, 2, frame_dims, &in));
  PLM_CHECK_OK(plm_pipeline_add_constant(typed, PLM_DTYPE_U8, 2, frame_dims, bad, &bad_c));
  PLM_CHECK_OK(plm_pipeline_add_constant(typed, PLM_DTYPE_F32, 2, frame_dims, gain, &gain_c));
  PLM_CHECK_OK(plm_pipeline_add_constant(typed, PLM_DTYPE_F32, 2, frame_dims, offset, &offset_c));
  PLM_CHECK_OK(plm_pipeline_add_badpixel(typed, in, bad_c, &fixed));
  PLM_CHECK_OK(plm_pipeline_add_nuc(typed, fixed, gain_c, offset_c, &corrected));
  PLM_CHECK_OK(plm_pipeline_add_abs_diff(typed, corrected, in, &diff));
  PLM_CHECK_OK(plm_pipeline_add_cfar(typed, diff, (plm_pipe_tensor){0}, &cp, &z));
  PLM_CHECK_OK(plm_pipeline_add_background(typed, diff, bad_c, &bp, &background));
  PLM_CHECK_OK(plm_pipeline_mark_output(typed, z));
  PLM_CHECK_OK(plm_pipeline_mark_output(typed, background));
  /* What every typed builder refuses before the node: a NULL required output or params. */
  PLM_CHECK_FAILS(plm_pipeline_add_abs_diff(typed, corrected, in, NULL), PLM_ERR_INVALID_ARG,
                  "plm_pipeline_add_abs_diff: out is NULL");
  PLM_CHECK_FAILS(plm_pipeline_add_cfar(typed, diff, (plm_pipe_tensor){0}, NULL, &z),
                  PLM_ERR_INVALID_ARG, "plm_pipeline_add_cfar: params is NULL");
  plm_test_compile_and_run(typed, &frame, typed_out);

  plm_pipeline *named;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &named));
  PLM_CHECK_OK(plm_pipeline_add_input(named, PLM_DTYPE_F32, 2, frame_dims, &in));
  PLM_CHECK_OK(plm_pipeline_add_constant(named, PLM_DTYPE_U8, 2, frame_dims, bad, &bad_c));
  PLM_CHECK_OK(plm_pipeline_add_constant(named, PLM_DTYPE_F32, 2, frame_dims, gain, &gain_c));
  PLM_CHECK_OK(plm_pipeline_add_constant(named, PLM_DTYPE_F32, 2, frame_dims, offset, &offset_c));
  PLM_CHECK_OK(plm_pipeline_add(named, "badpixel", (plm_pipe_tensor[]){in, bad_c}, 2, NULL,
                                (plm_pipe_tensor *[]){&fixed}, 1));
  PLM_CHECK_OK(plm_pipeline_add(named, "nuc", (plm_pipe_tensor[]){fixed, gain_c, offset_c}, 3, NULL,
                                (plm_pipe_tensor *[]){&corrected}, 1));
  PLM_CHECK_OK(plm_pipeline_add(named, "abs_diff", (plm_pipe_tensor[]){corrected, in}, 2, NULL,
                                (plm_pipe_tensor *[]){&diff}, 1));
  PLM_CHECK_OK(plm_pipeline_add(named, "cfar", &diff, 1, "window=9 guard=3 k=2 output=z",
                                (plm_pipe_tensor *[]){&z}, 1));
  PLM_CHECK_OK(plm_pipeline_add(named, "background", (plm_pipe_tensor[]){diff, bad_c}, 2,
                                "alpha=0.25 hold_radius=1", (plm_pipe_tensor *[]){&background}, 1));
  PLM_CHECK_OK(plm_pipeline_mark_output(named, z));
  PLM_CHECK_OK(plm_pipeline_mark_output(named, background));
  plm_test_compile_and_run(named, &frame, named_out);

  plm_test_expect_same_bytes(&named_out[0], &typed_out[0], "cfar z");
  plm_test_expect_same_bytes(&named_out[1], &typed_out[1], "background");
  for (int o = 0; o < 2; o++) {
    plm_test_release(&typed_out[o]);
    plm_test_release(&named_out[o]);
  }
  plm_test_release(&frame);
  free(bad);
  free(gain);
  free(offset);
  PLM_CHECK_OK(plm_pipeline_destroy(typed));
  PLM_CHECK_OK(plm_pipeline_destroy(named));
}
END_TEST

/* ---- errors ---------------------------------------------------------------------------------- */

START_TEST(test_errors_name_the_node_and_leave_the_pipeline) {
  plm_pipeline *pl, *other;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &other));
  plm_pipe_tensor in, in_f32, foreign, out, labels;
  const plm_pipe_tensor none = {0, 0};
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U8, 2, frame_dims, &in));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, frame_dims, &in_f32));
  PLM_CHECK_OK(plm_pipeline_add_input(other, PLM_DTYPE_U8, 2, frame_dims, &foreign));
  plm_pipe_tensor *const one[] = {&out};

  /* NULL arguments. */
  PLM_CHECK_FAILS(plm_pipeline_add(NULL, "entropy", &in, 1, NULL, one, 1), PLM_ERR_INVALID_ARG,
                  "pl");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, NULL, &in, 1, NULL, one, 1), PLM_ERR_INVALID_ARG, "op");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropy", NULL, 1, NULL, one, 1), PLM_ERR_INVALID_ARG,
                  "inputs");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropy", &in, 1, NULL, NULL, 1), PLM_ERR_INVALID_ARG,
                  "outputs");
  /* No such op, and the fused op, which only compile makes: the message lists the ops. */
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropie", &in, 1, NULL, one, 1), PLM_ERR_INVALID_ARG,
                  "plm_pipeline_add: node 0: no op 'entropie' (one of ");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropie", &in, 1, NULL, one, 1), PLM_ERR_INVALID_ARG,
                  "cfar");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "sobel_entropy_threshold", &in, 1, NULL, one, 1),
                  PLM_ERR_INVALID_ARG, "no op 'sobel_entropy_threshold'");
  /* Counts that are not the op's, with its slots named. */
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "abs_diff", &in, 1, NULL, one, 1), PLM_ERR_INVALID_ARG,
                  "node 0 'abs_diff': input_count 1 is not 2 (in, ref)");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "label", &in, 1, NULL, one, 1), PLM_ERR_INVALID_ARG,
                  "node 0 'label': output_count 1 is not 2 (labels, count)");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "regions", &in, 1, NULL, one, 1), PLM_ERR_INVALID_ARG,
                  "input_count 1 is not 3 (labels, intensity (optional), count)");
  /* Optional slots at the end may be left out (cfar's hold), no more. */
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "cfar", &in, 0, NULL, one, 1), PLM_ERR_INVALID_ARG,
                  "node 0 'cfar': input_count 0 is not in 1..2 (in, hold (optional))");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "cfar", (plm_pipe_tensor[]){in, in, in}, 3, NULL, one, 1),
                  PLM_ERR_INVALID_ARG, "input_count 3 is not in 1..2");
  /* Handles: a required slot left empty, another pipeline's tensor. */
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropy", &none, 1, "window=5", one, 1),
                  PLM_ERR_INVALID_ARG, "node 0 'entropy': in is a zeroed handle");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropy", &foreign, 1, "window=5", one, 1),
                  PLM_ERR_INVALID_ARG, "node 0 'entropy': in is not a tensor of this pipeline");
  /* Parameters: an unknown key (the op's keys listed), a bad value, a key missing. */
  PLM_CHECK_FAILS(
      plm_pipeline_add(pl, "entropy", &in, 1, "window=5 bin=8", one, 1), PLM_ERR_INVALID_ARG,
      "node 0 'entropy': unknown key 'bin' (entropy's parameters: window, bins, range;");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropy", &in, 1, "window=0", one, 1), PLM_ERR_INVALID_ARG,
                  "node 0 'entropy': key 'window': '0' is not an integer in 1..");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropy", &in, 1, "window=5 window=7", one, 1),
                  PLM_ERR_INVALID_ARG, "key 'window' is given twice");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropy", &in, 1, "window", one, 1), PLM_ERR_INVALID_ARG,
                  "'window' is not key=value");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "threshold", &in, 1, NULL, one, 1), PLM_ERR_INVALID_ARG,
                  "node 0 'threshold': missing key 'value'");
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropy", &in_f32, 1, "window=5", one, 1),
                  PLM_ERR_INVALID_ARG, "node 0 'entropy': missing key 'bins' (f32 input needs it)");
  /* The text form's tensor keys are inputs here. */
  PLM_CHECK_FAILS(
      plm_pipeline_add(pl, "nuc", (plm_pipe_tensor[]){in, in_f32, in_f32}, 3, "gain=@g", one, 1),
      PLM_ERR_INVALID_ARG, "unknown key 'gain' (nuc's parameters: none;");
  /* The op's own check, through the descriptor: a u8 where f32 is needed. */
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "nuc", (plm_pipe_tensor[]){in, in, in_f32}, 3, NULL, one, 1),
                  PLM_ERR_INVALID_ARG, "node 0 'nuc': gain");
  /* No output asked for. */
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "label", &in, 1, NULL, (plm_pipe_tensor *[]){NULL, NULL}, 2),
                  PLM_ERR_INVALID_ARG, "node 0 'label': no output asked for");

  /* None of that added anything: the next node is node 0, and it works. */
  PLM_CHECK_OK(
      plm_pipeline_add(pl, "label", &in, 1, NULL, (plm_pipe_tensor *[]){&labels, NULL}, 2));
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropy", &in, 1, "window=300", one, 1),
                  PLM_ERR_INVALID_ARG, "node 1 'entropy'");
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, labels));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  /* After compile nothing can be added. */
  PLM_CHECK_FAILS(plm_pipeline_add(pl, "entropy", &in, 1, "window=5", one, 1),
                  PLM_ERR_INVALID_STATE, "compiled");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  PLM_CHECK_OK(plm_pipeline_destroy(other));
}
END_TEST

static Suite *pipeline_add_suite(void) {
  Suite *suite = suite_create("pipeline_add");
  TCase *equal = tcase_create("equal");
  plm_test_add_fixture(equal);
  plm_test_add_stream_fixture(equal);
  tcase_add_test(equal, test_chain_by_name_equals_typed);
  tcase_add_test(equal, test_segment_outputs_not_asked_are_made);
  tcase_add_test(equal, test_cfar_by_name_equals_the_op);
  tcase_add_test(equal, test_nuc_then_abs_diff_by_name);
  tcase_add_test(equal, test_regions_optional_input_by_name);
  tcase_add_test(equal, test_generated_builders_equal_by_name);
  suite_add_tcase(suite, equal);
  TCase *errors = tcase_create("errors");
  plm_test_add_fixture(errors);
  tcase_add_test(errors, test_errors_name_the_node_and_leave_the_pipeline);
  suite_add_tcase(suite, errors);
  return suite;
}

int main(void) {
  return plm_test_main(pipeline_add_suite);
}

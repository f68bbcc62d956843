/* tests/test_pipeline_previous.c: feedback from one frame to the next
 * (plm_pipeline_add_previous, plm_pipeline_bind_previous, the text's name=NAME and ~NAME;
 * plume/pipeline.h).
 *
 * The chain is the masked background of a detector: background reads the previous frame's
 * mask as its hold, a threshold of its residual makes the mask. Its reference is the op run
 * frame by frame on the host side with the mask computed there and handed back: every
 * frame's residual and mask the same bits, whether the pipeline runs frame by frame, with 1
 * to 4 frames in flight, from the text or from C, with graphs asked for, and after a reset
 * (the previous value zeroed again). Without the feedback the masks differ (the test can
 * fail). Then every refusal: binding, compiling, batching, and the text's. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "spot_scene.h"

enum { H = 19, W = 27, PIXELS = H * W, FRAMES = 24 };
static const int64_t hw[2] = {H, W};

/* The background's parameters and the threshold of the chain. */
#define CHAIN_TEXT                                                                  \
  "background alpha=0.2 hold=~mask hold_rate=0 hold_radius=1 ! threshold value=30 " \
  "name=mask"
static const float LEVEL = 30.0f;

/* The scene: its spot lingers 6 frames at each place (so a held background keeps its
 * contrast), then moves on. */
static const spot_scene scene = {.height = H,
                                 .width = W,
                                 .spot_first = 3,
                                 .spot_stride = 4,
                                 .spot_dwell = 6,
                                 .spot_span = W - 6,
                                 .spot_gain = 120};

static uint16_t scene_pixel(int64_t t, int64_t i) {
  return spot_scene_pixel(&scene, t, i);
}

static plm_background_params chain_params(void) {
  plm_background_params params = plm_background_params_default();
  params.alpha = 0.2f;
  params.hold_rate = 0.0f;
  params.hold_radius = 1;
  return params;
}

/* The reference: the op frame by frame, each frame's mask (residual > LEVEL) the next
 * frame's hold (zeros for the first); residuals and masks of every frame (malloc'd). With
 * feedback false the hold stays zero. */
static void reference(bool feedback, float **residuals, uint8_t **masks) {
  *residuals = malloc(FRAMES * PIXELS * sizeof **residuals);
  *masks = calloc(FRAMES * PIXELS, 1);
  uint16_t *frame = malloc(PIXELS * sizeof *frame);
  uint8_t *hold = calloc(PIXELS, 1);
  ck_assert(*residuals && *masks && frame && hold);
  const plm_background_params params = chain_params();
  plm_tensor state = plm_test_upload(PLM_DTYPE_F32, 2, hw, NULL);
  plm_tensor in = plm_test_upload(PLM_DTYPE_U16, 2, hw, NULL);
  plm_tensor held = plm_test_upload(PLM_DTYPE_U8, 2, hw, NULL);
  plm_tensor out = plm_test_upload(PLM_DTYPE_F32, 2, hw, NULL);
  for (int64_t t = 0; t < FRAMES; t++) {
    for (int64_t i = 0; i < PIXELS; i++) frame[i] = scene_pixel(t, i);
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, frame, PIXELS * sizeof *frame,
                                   PLM_COPY_HOST_TO_DEVICE));
    PLM_CHECK_OK(
        plm_stream_memcpy(plm_test_stream, held.data, hold, PIXELS, PLM_COPY_HOST_TO_DEVICE));
    PLM_CHECK_OK(plm_background(plm_test_stream, &in, &held, &state, t == 0, &params, &out));
    float *r = *residuals + t * PIXELS;
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, r, out.data, PIXELS * sizeof *r,
                                   PLM_COPY_DEVICE_TO_HOST));
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
    for (int64_t i = 0; i < PIXELS; i++) {
      (*masks)[t * PIXELS + i] = r[i] > LEVEL;
      if (feedback) hold[i] = r[i] > LEVEL;
    }
  }
  plm_tensor *all[] = {&state, &in, &held, &out};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) plm_test_release(all[k]);
  free(frame);
  free(hold);
}

/* ---- streaming ------------------------------------------------------------------------ */

typedef struct frames_run {
  spot_scene_run run; /* first: spot_scene_source reads it */
  uint8_t *masks;     /* each delivered frame's mask, PIXELS bytes, by run index */
} frames_run;

static plm_status keep_mask(void *user, int64_t frame, const void *const *outputs) {
  frames_run *r = user;
  memcpy(r->masks + frame * PIXELS, outputs[0], PIXELS);
  return PLM_OK;
}

static void stream_frames(plm_pipeline *pl, int64_t first, int64_t frames, bool graphs,
                          uint8_t *masks) {
  frames_run r = {.run = {&scene, first, frames}, .masks = masks};
  plm_run_stream_options options = plm_run_stream_options_default();
  options.use_graphs = graphs;
  plm_run_stream_report report;
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, spot_scene_source, keep_mask, &r, &options, &report));
  ck_assert_int_eq(report.frames_delivered, frames);
  /* On cuda the frames after each slot's first are graph replays: the copy and its event
   * replay with them. */
  if (graphs && plm_test_backend == PLM_BACKEND_CUDA)
    ck_assert_msg(report.graphs_used, "no graph replayed: %s", report.graphs_note);
}

/* ---- the chain in C ------------------------------------------------------------------- */

/* in -> background(hold = previous mask) -> residual -> threshold -> mask; both outputs. */
static plm_pipeline *chain_in_c(int frames_in_flight) {
  plm_pipeline *pl;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  plm_pipe_tensor in, previous, residual, mask;
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, hw, &in));
  PLM_CHECK_OK(plm_pipeline_add_previous(pl, PLM_DTYPE_U8, 2, hw, &previous));
  const plm_background_params bp = chain_params();
  PLM_CHECK_OK(plm_pipeline_add_background(pl, in, previous, &bp, &residual));
  const plm_threshold_params tp = {.value = LEVEL, .compare = PLM_COMPARE_GT};
  PLM_CHECK_OK(plm_pipeline_add_threshold(pl, residual, &tp, &mask));
  PLM_CHECK_OK(plm_pipeline_bind_previous(pl, previous, mask));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, mask));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, residual));
  const plm_plan_config config = {.frames_in_flight = frames_in_flight};
  PLM_CHECK_OK(plm_pipeline_compile(pl, &config));
  return pl;
}

START_TEST(test_the_chain_in_c_equals_the_op_fed_back_by_hand) {
  float *want_r;
  uint8_t *want_m, *free_m;
  float *free_r;
  reference(true, &want_r, &want_m);
  reference(false, &free_r, &free_m);
  ck_assert_msg(memcmp(want_m, free_m, FRAMES * PIXELS) != 0, "the feedback changes nothing");

  plm_pipeline *pl = chain_in_c(1);
  plm_tensor in = plm_test_upload(PLM_DTYPE_U16, 2, hw, NULL);
  plm_tensor out[2] = {plm_test_upload(PLM_DTYPE_U8, 2, hw, NULL),
                       plm_test_upload(PLM_DTYPE_F32, 2, hw, NULL)};
  uint16_t frame[PIXELS];
  uint8_t mask[PIXELS];
  float residual[PIXELS];
  for (int pass = 0; pass < 2; pass++) {
    for (int64_t t = 0; t < FRAMES; t++) {
      for (int64_t i = 0; i < PIXELS; i++) frame[i] = scene_pixel(t, i);
      PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, frame, sizeof frame,
                                     PLM_COPY_HOST_TO_DEVICE));
      PLM_CHECK_OK(plm_pipeline_run(pl, &in, out, plm_test_stream));
      PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, mask, out[0].data, sizeof mask,
                                     PLM_COPY_DEVICE_TO_HOST));
      PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, residual, out[1].data, sizeof residual,
                                     PLM_COPY_DEVICE_TO_HOST));
      PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
      ck_assert_msg(memcmp(residual, want_r + t * PIXELS, sizeof residual) == 0,
                    "pass %d, frame %lld: residual", pass, (long long)t);
      ck_assert_msg(memcmp(mask, want_m + t * PIXELS, sizeof mask) == 0,
                    "pass %d, frame %lld: mask", pass, (long long)t);
    }
    /* A reset starts the background and zeroes the previous mask: the same frames again. */
    PLM_CHECK_OK(plm_pipeline_reset_state(pl));
  }
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_int_eq(info.states, 2); /* the background's and the previous mask */
  char text[8192];
  PLM_CHECK_OK(plm_pipeline_describe(pl, text, sizeof text, NULL));
  ck_assert_msg(strstr(text, "previous: t2 u8 19x27, t4 of the frame before") != NULL, "%s", text);
  plm_test_release(&in);
  plm_test_release(&out[0]);
  plm_test_release(&out[1]);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free(want_r);
  free(want_m);
  free(free_r);
  free(free_m);
}
END_TEST

START_TEST(test_the_text_streams_the_same_masks_with_frames_in_flight) {
  float *want_r;
  uint8_t *want_m;
  reference(true, &want_r, &want_m);
  uint8_t *got = malloc(FRAMES * PIXELS);
  ck_assert_ptr_nonnull(got);
  for (int k = 1; k <= 4; k++)
    for (int graphs = 0; graphs < 2; graphs++) {
      plm_pipeline *pl = plm_test_pipeline(plm_test_ctx, CHAIN_TEXT, PLM_DTYPE_U16, H, W, k);
      memset(got, 0xff, FRAMES * PIXELS);
      /* Two runs: the second goes on from the first's background and mask. */
      stream_frames(pl, 0, 10, graphs, got);
      stream_frames(pl, 10, FRAMES - 10, graphs, got + 10 * PIXELS);
      ck_assert_msg(memcmp(got, want_m, FRAMES * PIXELS) == 0, "K = %d, graphs %d", k, graphs);
      /* After a reset, from the first frame again. */
      PLM_CHECK_OK(plm_pipeline_reset_state(pl));
      stream_frames(pl, 0, FRAMES, graphs, got);
      ck_assert_msg(memcmp(got, want_m, FRAMES * PIXELS) == 0, "K = %d, graphs %d, reset", k,
                    graphs);
      PLM_CHECK_OK(plm_pipeline_destroy(pl));
    }
  free(got);
  free(want_r);
  free(want_m);
}
END_TEST

/* ---- refusals ------------------------------------------------------------------------ */

START_TEST(test_binding_is_checked) {
  plm_pipeline *pl;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  plm_pipe_tensor in, previous, other, residual, mask, wide;
  const int64_t wider[2] = {H, W + 1};
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, hw, &in));
  PLM_CHECK_OK(plm_pipeline_add_previous(pl, PLM_DTYPE_U8, 2, hw, &previous));
  PLM_CHECK_OK(plm_pipeline_add_previous(pl, PLM_DTYPE_U8, 2, wider, &wide));
  const uint8_t zeros[PIXELS] = {0};
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_U8, 2, hw, zeros, &other));
  const plm_background_params bp = chain_params();
  PLM_CHECK_OK(plm_pipeline_add_background(pl, in, previous, &bp, &residual));
  const plm_threshold_params tp = {.value = LEVEL, .compare = PLM_COMPARE_GT};
  PLM_CHECK_OK(plm_pipeline_add_threshold(pl, residual, &tp, &mask));
  PLM_CHECK_FAILS(plm_pipeline_add_previous(pl, PLM_DTYPE_U8, 0, hw, &other), PLM_ERR_INVALID_ARG,
                  "previous value");
  PLM_CHECK_FAILS(plm_pipeline_bind_previous(pl, in, mask), PLM_ERR_INVALID_ARG,
                  "previous is the pipeline's input, not a tensor of plm_pipeline_add_previous");
  PLM_CHECK_FAILS(plm_pipeline_bind_previous(pl, previous, other), PLM_ERR_INVALID_ARG,
                  "value is the pipeline's constant");
  PLM_CHECK_FAILS(plm_pipeline_bind_previous(pl, previous, wide), PLM_ERR_INVALID_ARG,
                  "value is the pipeline's previous value");
  PLM_CHECK_FAILS(plm_pipeline_bind_previous(pl, previous, residual), PLM_ERR_INVALID_ARG,
                  "value is f32 19x27 but previous is u8 19x27");
  PLM_CHECK_FAILS(plm_pipeline_bind_previous(pl, wide, mask), PLM_ERR_INVALID_ARG,
                  "value is u8 19x27 but previous is u8 19x28");
  PLM_CHECK_FAILS(plm_pipeline_bind_previous(pl, previous, (plm_pipe_tensor){0}),
                  PLM_ERR_INVALID_ARG, "value is a zeroed handle");
  PLM_CHECK_OK(plm_pipeline_bind_previous(pl, previous, mask));
  PLM_CHECK_FAILS(plm_pipeline_bind_previous(pl, previous, mask), PLM_ERR_INVALID_ARG,
                  "previous is bound already (to t6)");
  PLM_CHECK_FAILS(plm_pipeline_mark_output(pl, previous), PLM_ERR_INVALID_ARG,
                  "t is the pipeline's previous value");
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, mask));
  /* The wider one is never bound: compile refuses it. */
  PLM_CHECK_FAILS(plm_pipeline_compile(pl, NULL), PLM_ERR_INVALID_ARG,
                  "previous value t3 is bound to no value (plm_pipeline_bind_previous)");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));

  /* A value kept twice; nothing added after compile. */
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, hw, &in));
  PLM_CHECK_OK(plm_pipeline_add_previous(pl, PLM_DTYPE_U8, 2, hw, &previous));
  PLM_CHECK_OK(plm_pipeline_add_previous(pl, PLM_DTYPE_U8, 2, hw, &other));
  PLM_CHECK_OK(plm_pipeline_add_background(pl, in, previous, &bp, &residual));
  PLM_CHECK_OK(plm_pipeline_add_threshold(pl, residual, &tp, &mask));
  PLM_CHECK_OK(plm_pipeline_bind_previous(pl, previous, mask));
  PLM_CHECK_FAILS(plm_pipeline_bind_previous(pl, other, mask), PLM_ERR_INVALID_ARG,
                  "value is kept already (by previous value t2)");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  pl = chain_in_c(1);
  PLM_CHECK_FAILS(plm_pipeline_add_previous(pl, PLM_DTYPE_U8, 2, hw, &wide), PLM_ERR_INVALID_STATE,
                  "compiled");
  PLM_CHECK_FAILS(plm_pipeline_bind_previous(pl, wide, mask), PLM_ERR_INVALID_STATE, "compiled");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* A node reading the previous value whose value does not depend on it: its frame's copy
 * could land before the read. */
START_TEST(test_a_reader_the_value_does_not_follow_is_refused) {
  plm_pipeline *pl;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  plm_pipe_tensor in, previous, residual, mask, echo;
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 2, hw, &in));
  PLM_CHECK_OK(plm_pipeline_add_previous(pl, PLM_DTYPE_U8, 2, hw, &previous));
  const plm_background_params bp = plm_background_params_default();
  PLM_CHECK_OK(plm_pipeline_add_background(pl, in, (plm_pipe_tensor){0}, &bp, &residual));
  const plm_threshold_params tp = {.value = LEVEL, .compare = PLM_COMPARE_GT};
  PLM_CHECK_OK(plm_pipeline_add_threshold(pl, residual, &tp, &mask));
  const plm_threshold_params any = {.value = 0, .compare = PLM_COMPARE_GT};
  PLM_CHECK_OK(plm_pipeline_add_threshold(pl, previous, &any, &echo));
  PLM_CHECK_OK(plm_pipeline_bind_previous(pl, previous, mask));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, echo));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, mask));
  PLM_CHECK_FAILS(plm_pipeline_compile(pl, NULL), PLM_ERR_INVALID_ARG,
                  "node 2 'threshold' reads previous value t2, but node 1 'threshold', which "
                  "makes its value t4, does not depend on it");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

START_TEST(test_a_batch_is_refused) {
  const int64_t stack[3] = {2, H, W};
  plm_pipeline *pl;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  plm_pipe_tensor in, previous, residual, mask;
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_U16, 3, stack, &in));
  PLM_CHECK_OK(plm_pipeline_add_previous(pl, PLM_DTYPE_F32, 3, stack, &previous));
  const plm_background_params bp = plm_background_params_default();
  PLM_CHECK_OK(plm_pipeline_add_background(pl, in, (plm_pipe_tensor){0}, &bp, &residual));
  const plm_vector_add_params add = {1.0f, 1.0f};
  PLM_CHECK_OK(plm_pipeline_add_vector_add(pl, residual, previous, &add, &mask));
  PLM_CHECK_OK(plm_pipeline_bind_previous(pl, previous, mask));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, mask));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  frames_run r = {.run = {&scene, 0, 4}, .masks = NULL};
  plm_run_stream_options options = plm_run_stream_options_default();
  options.batch = 2;
  plm_run_stream_report report;
  PLM_CHECK_FAILS(plm_pipeline_run_stream(pl, spot_scene_source, keep_mask, &r, &options, &report),
                  PLM_ERR_INVALID_ARG,
                  "options->batch 2: previous value t2 carries each frame's value to the next "
                  "frame");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

START_TEST(test_the_text_is_checked) {
  plm_pipeline *pl = NULL;
  const struct {
    const char *text, *message;
  } cases[] = {
      {"background hold=~nobody ! threshold value=30 name=mask",
       "element 1 'background': key 'hold': no element is named 'nobody' (name=nobody names an "
       "element's output)"},
      {"background hold=~mask ! threshold value=30 name=mask ! threshold value=0 name=mask",
       "element 3 'threshold': key 'name': an element before is named 'mask'"},
      {"background ! threshold value=30 name=m@sk",
       "element 2 'threshold': key 'name': 'm@sk' is not letters, digits, '_', '-' and '.' only"},
      {"background alpha=~mask ! threshold value=30 name=mask",
       "element 1 'background': key 'alpha': '~mask' names a tensor, but alpha takes a value"},
      {"background hold=~residual name=residual",
       "element 1 'background': hold->dtype f32 is not u8"},
      {"vector_add b=~sum name=sum",
       "element 1 'vector_add': key 'b': '~sum' is a previous frame's value, which the text gives "
       "to optional inputs only"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    plm_status status = plm_pipeline_parse(plm_test_ctx, cases[i].text, PLM_DTYPE_U16, 2, hw, &pl);
    ck_assert_msg(status == PLM_ERR_INVALID_ARG && pl == NULL, "%s: %s", cases[i].text,
                  plm_status_str(status));
    ck_assert_msg(strstr(plm_last_error(), cases[i].message) != NULL, "%s: %s", cases[i].text,
                  plm_last_error());
  }
}
END_TEST

static Suite *pipeline_previous_suite(void) {
  Suite *suite = suite_create("pipeline_previous");
  TCase *runs = tcase_create("runs");
  plm_test_add_fixture(runs);
  plm_test_add_stream_fixture(runs);
  tcase_add_test(runs, test_the_chain_in_c_equals_the_op_fed_back_by_hand);
  tcase_add_test(runs, test_the_text_streams_the_same_masks_with_frames_in_flight);
  suite_add_tcase(suite, runs);
  TCase *errors = tcase_create("errors");
  plm_test_add_fixture(errors);
  plm_test_add_stream_fixture(errors);
  tcase_add_test(errors, test_binding_is_checked);
  tcase_add_test(errors, test_a_reader_the_value_does_not_follow_is_refused);
  tcase_add_test(errors, test_a_batch_is_refused);
  tcase_add_test(errors, test_the_text_is_checked);
  suite_add_tcase(suite, errors);
  return suite;
}

int main(void) {
  return plm_test_main(pipeline_previous_suite);
}

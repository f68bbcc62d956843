/* tests/test_background.c: the background op (plume/background.h) and state in
 * pipelines (plume/pipeline.h: plm_pipeline_reset_state).
 *
 * The op on the backend under test against the reference computed here with the same
 * f32 roundings (plm__background_one's: d = x - b, then fmaf or b +- step), bit for bit,
 * itself within 1e-5 relative of the float64 recurrence; a stack equals its frames run one
 * call at a time with the state carried; the gate (its spread v in the state, the float64
 * recurrence, what it is for); the NaN rules; in place; every refusal.
 *
 * Pipelines: the same frames through a pipeline with a background node give the same
 * bytes with K = 1..4 frames in flight (each with the source inline and ahead), the same
 * as the op over the whole stack, and the same whether streamed in one run, in two runs
 * or frame by frame with plm_pipeline_run; plm_pipeline_reset_state starts the state
 * again, and is refused from inside a run_stream. */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "spot_scene.h"

enum { H = 19, W = 27, PIXELS = H * W, FRAMES = 24 };

/* A slowly changing scene with a bright spot moving across it, 2 columns a frame. */
static const spot_scene scene = {.height = H,
                                 .width = W,
                                 .spot_first = 0,
                                 .spot_stride = 2,
                                 .spot_dwell = 1,
                                 .spot_span = W,
                                 .spot_gain = 400};

static uint16_t scene_pixel(int64_t t, int64_t i) {
  return spot_scene_pixel(&scene, t, i);
}

/* ---- the reference ----------------------------------------------------------------------- */

/* One pixel, as plume/background.h states it: b, and v with a gate. */
static float reference_one(float x, float *b, float *v, bool first, bool held,
                           const plm_background_params *params) {
  if (first || !isfinite(*b)) {
    if (!first && !isfinite(x)) return x - *b;
    *b = x;
    *v = 0.0f;
    return 0.0f;
  }
  const float d = x - *b;
  if (!isfinite(x)) return d;
  float alpha = params->alpha, step = params->step;
  if (params->gate > 0.0f) {
    const float dd = fminf(d * d, FLT_MAX), gate2 = params->gate * params->gate;
    if (*v > 0.0f && dd > gate2 * *v) {
      alpha = params->alpha * params->gate_rate;
      step = params->step * params->gate_rate;
    }
    *v = fmaf(params->alpha, dd - *v, *v);
  }
  if (held) {
    alpha = fminf(alpha, params->alpha * params->hold_rate);
    step = fminf(step, params->step * params->hold_rate);
  }
  if (params->mode == PLM_BACKGROUND_MEDIAN)
    *b = d > 0.0f ? *b + step : d < 0.0f ? *b - step : *b;
  else
    *b = fmaf(alpha, d, *b);
  return d;
}

/* Whether the hold (H, W) reaches pixel p: some nonzero pixel at most radius 4-connected
 * steps away, found by measuring the distance to every nonzero one. */
static bool reference_held(const uint8_t *hold, int64_t p, int radius) {
  for (int64_t q = 0; q < PIXELS; q++)
    if (hold[q] && llabs(q / W - p / W) + llabs(q % W - p % W) <= radius) return true;
  return false;
}

/* The op over frames x[0..frames) of `pixels` each, starting from b (first: fresh); v,
 * the spread, is read and written only with a gate (it may then be NULL otherwise); hold,
 * (H, W) or NULL, with params' hold_radius. */
static void reference_with_hold(const float *x, float *out, float *b, float *v, int64_t frames,
                                int64_t pixels, bool first, const uint8_t *hold,
                                const plm_background_params *params) {
  float unused = 0.0f;
  for (int64_t p = 0; p < pixels; p++) {
    const bool held = hold && reference_held(hold, p, params->hold_radius);
    for (int64_t t = 0; t < frames; t++)
      out[t * pixels + p] =
          reference_one(x[t * pixels + p], &b[p], params->gate > 0.0f ? &v[p] : &unused,
                        first && t == 0, held, params);
  }
}

static void reference(const float *x, float *out, float *b, float *v, int64_t frames,
                      int64_t pixels, bool first, const plm_background_params *params) {
  reference_with_hold(x, out, b, v, frames, pixels, first, NULL, params);
}

static bool same_bits(const float *a, const float *b, int64_t count) {
  return memcmp(a, b, (size_t)count * sizeof *a) == 0;
}

/* Run the op over host frames of dtype (as floats in x) with a hold (H, W) or none, return
 * out (malloc'd). state may be NULL (a fresh background in scratch). */
static float *run_op_with_hold(plm_dtype dtype, const void *host, int64_t frames,
                               const uint8_t *hold, plm_tensor *state, bool first,
                               const plm_background_params *params) {
  const int64_t dims[3] = {frames, H, W};
  plm_tensor in = plm_test_upload(dtype, 3, dims, host), out, map = {0};
  if (hold) map = plm_test_upload(PLM_DTYPE_U8, 2, dims + 1, hold);
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 3, dims, &out));
  PLM_CHECK_OK(
      plm_background(plm_test_stream, &in, hold ? &map : NULL, state, first, params, &out));
  if (hold) plm_test_release(&map);
  float *got = malloc((size_t)(frames * PIXELS) * sizeof *got);
  ck_assert_ptr_nonnull(got);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got, out.data, plm_tensor_bytes(&out),
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
  return got;
}

static float *run_op(plm_dtype dtype, const void *host, int64_t frames, plm_tensor *state,
                     bool first, const plm_background_params *params) {
  return run_op_with_hold(dtype, host, frames, NULL, state, first, params);
}

/* FRAMES frames of the scene as u16 and as floats. */
static void scene_frames(uint16_t *u16, float *f32) {
  for (int64_t t = 0; t < FRAMES; t++)
    for (int64_t i = 0; i < PIXELS; i++) {
      u16[t * PIXELS + i] = scene_pixel(t, i);
      f32[t * PIXELS + i] = (float)scene_pixel(t, i);
    }
}

START_TEST(test_matches_the_reference_in_every_dtype_and_mode) {
  uint16_t *u16 = malloc(FRAMES * PIXELS * sizeof *u16);
  uint8_t *u8 = malloc(FRAMES * PIXELS);
  float *x = malloc(FRAMES * PIXELS * sizeof *x), *want = malloc(FRAMES * PIXELS * sizeof *want);
  float *b = malloc(PIXELS * sizeof *b);
  ck_assert(u16 && u8 && x && want && b);
  scene_frames(u16, x);
  const plm_background_params modes[] = {
      {.mode = PLM_BACKGROUND_EMA, .alpha = 0.05f, .step = 1.0f},
      {.mode = PLM_BACKGROUND_EMA, .alpha = 0.3f, .step = 1.0f},
      {.mode = PLM_BACKGROUND_EMA, .alpha = 1.0f, .step = 1.0f},
      {.mode = PLM_BACKGROUND_MEDIAN, .alpha = 0.05f, .step = 2.5f}};
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    reference(x, want, b, NULL, FRAMES, PIXELS, true, &modes[m]);
    float *got = run_op(PLM_DTYPE_U16, u16, FRAMES, NULL, true, &modes[m]);
    ck_assert_msg(same_bits(got, want, FRAMES * PIXELS), "u16, mode %zu", m);
    free(got);
    got = run_op(PLM_DTYPE_F32, x, FRAMES, NULL, true, &modes[m]);
    ck_assert_msg(same_bits(got, want, FRAMES * PIXELS), "f32, mode %zu", m);
    free(got);
  }
  /* u8: the scene's values mod 256. */
  for (int64_t i = 0; i < FRAMES * PIXELS; i++) {
    u8[i] = (uint8_t)u16[i];
    x[i] = (float)u8[i];
  }
  reference(x, want, b, NULL, FRAMES, PIXELS, true, &modes[1]);
  float *got = run_op(PLM_DTYPE_U8, u8, FRAMES, NULL, true, &modes[1]);
  ck_assert(same_bits(got, want, FRAMES * PIXELS));
  free(got);

  /* The f32 recurrence stays within 1e-5 relative of float64's (ema, alpha 0.3). */
  scene_frames(u16, x);
  reference(x, want, b, NULL, FRAMES, PIXELS, true, &modes[1]);
  for (int64_t p = 0; p < PIXELS; p++) {
    double b64 = x[p];
    for (int64_t t = 1; t < FRAMES; t++) {
      const double d = (double)x[t * PIXELS + p] - b64;
      ck_assert_double_le(fabs(d - (double)want[t * PIXELS + p]), 1e-5 * (fabs(b64) + 1.0));
      b64 += 0.3 * d;
    }
  }
  free(u16);
  free(u8);
  free(x);
  free(want);
  free(b);
}
END_TEST

/* The gate (plume/background.h): bit for bit the reference above in both modes, u16 and
 * f32; a stack equals its frames one call at a time with the (2, H, W) state carried; the
 * float64 recurrence, with its own gating decisions, agrees wherever no decision came near
 * its boundary; and the gate does what it is for: a target that appears on a quiet pixel
 * keeps more of its contrast than without it. */
START_TEST(test_the_gate_matches_the_reference) {
  uint16_t *u16 = malloc(FRAMES * PIXELS * sizeof *u16);
  float *x = malloc(FRAMES * PIXELS * sizeof *x), *want = malloc(FRAMES * PIXELS * sizeof *want);
  float *b = malloc(2 * PIXELS * sizeof *b), *v = b + PIXELS;
  ck_assert(u16 && x && want && b);
  scene_frames(u16, x);
  const plm_background_params gates[] = {
      {.mode = PLM_BACKGROUND_EMA, .alpha = 0.05f, .step = 1.0f, .gate = 2.0f, .gate_rate = 0.3f},
      {.mode = PLM_BACKGROUND_EMA, .alpha = 0.3f, .step = 1.0f, .gate = 1.5f, .gate_rate = 0.0f},
      {.mode = PLM_BACKGROUND_MEDIAN,
       .alpha = 0.1f,
       .step = 2.5f,
       .gate = 2.0f,
       .gate_rate = 0.5f}};
  for (size_t m = 0; m < sizeof gates / sizeof gates[0]; m++) {
    reference(x, want, b, v, FRAMES, PIXELS, true, &gates[m]);
    float *got = run_op(PLM_DTYPE_U16, u16, FRAMES, NULL, true, &gates[m]);
    ck_assert_msg(same_bits(got, want, FRAMES * PIXELS), "u16, gate %zu", m);
    free(got);
    got = run_op(PLM_DTYPE_F32, x, FRAMES, NULL, true, &gates[m]);
    ck_assert_msg(same_bits(got, want, FRAMES * PIXELS), "f32, gate %zu", m);
    free(got);
  }
  /* Without the gate, its outputs differ (the test can fail). */
  plm_background_params open = gates[0];
  open.gate = 0.0f;
  float *ungated = run_op(PLM_DTYPE_U16, u16, FRAMES, NULL, true, &open);
  reference(x, want, b, v, FRAMES, PIXELS, true, &gates[0]);
  ck_assert(!same_bits(ungated, want, FRAMES * PIXELS));
  free(ungated);

  /* The state (2, H, W) carried across calls: b then v. */
  const int64_t shape[3] = {2, H, W};
  plm_tensor state = plm_test_upload(PLM_DTYPE_F32, 3, shape, NULL);
  int64_t t = 0;
  const int64_t sizes[] = {3, 1, FRAMES - 4};
  for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
    float *part = run_op(PLM_DTYPE_U16, u16 + t * PIXELS, sizes[c], &state, t == 0, &gates[0]);
    ck_assert_msg(same_bits(part, want + t * PIXELS, sizes[c] * PIXELS), "call %zu", c);
    free(part);
    t += sizes[c];
  }
  float *carried = malloc(2 * PIXELS * sizeof *carried);
  ck_assert_ptr_nonnull(carried);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, carried, state.data, 2 * PIXELS * sizeof(float),
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert(same_bits(carried, b, 2 * PIXELS));
  free(carried);
  /* A state of the ungated shape is refused with a gate. */
  const int64_t hw[2] = {H, W};
  plm_tensor flat = plm_test_upload(PLM_DTYPE_F32, 2, hw, NULL);
  const int64_t dims[3] = {FRAMES, H, W};
  plm_tensor in = plm_test_upload(PLM_DTYPE_U16, 3, dims, u16), out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 3, dims, &out));
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &flat, true, &gates[0], &out),
                  PLM_ERR_INVALID_ARG, "state is not f32 2x19x27");

  /* The float64 recurrence (ema, alpha 0.05, gate 2, rate 0.3) with its own decisions: where
   * none came within 1% of its boundary, the f32 output is within 1e-4 of it. */
  int64_t clear = 0;
  for (int64_t p = 0; p < PIXELS; p++) {
    double b64 = x[p], v64 = 0.0, worst = 0.0;
    bool near = false;
    for (int64_t s = 1; s < FRAMES; s++) {
      const double d = (double)x[s * PIXELS + p] - b64, dd = d * d, bound = 4.0 * v64;
      if (v64 > 0.0 && fabs(dd - bound) < 0.01 * bound) near = true;
      const bool gated = v64 > 0.0 && dd > bound;
      worst = fmax(worst, fabs(d - (double)want[s * PIXELS + p]) / (fabs(b64) + 1.0));
      v64 += 0.05 * (dd - v64);
      b64 += (gated ? 0.05 * 0.3 : 0.05) * d;
    }
    if (near) continue;
    clear++;
    ck_assert_msg(worst <= 1e-4, "pixel %lld: %g relative", (long long)p, worst);
  }
  ck_assert_int_ge(clear, PIXELS / 2);

  /* A pixel quiet for 40 frames (+-1), then a target of +30: on its second frame the gate
   * (3 rms, rate 0) has kept b where it was, without it b moved by alpha 30 (out is x - b
   * before this frame's update). */
  enum { QUIET = 40, LIT = 6 };
  float pixel[QUIET + LIT], kept[2][QUIET + LIT];
  for (int i = 0; i < QUIET + LIT; i++)
    pixel[i] = 100.0f + (i % 2 ? 1.0f : -1.0f) + (i >= QUIET ? 30.0f : 0.0f);
  const int64_t one[3] = {QUIET + LIT, 1, 1};
  for (int g = 0; g < 2; g++) {
    plm_tensor p_in = plm_test_upload(PLM_DTYPE_F32, 3, one, pixel), p_out;
    PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 3, one, &p_out));
    plm_background_params params = gates[0];
    params.alpha = 0.2f;
    params.gate = g ? 3.0f : 0.0f;
    params.gate_rate = 0.0f;
    PLM_CHECK_OK(plm_background(plm_test_stream, &p_in, NULL, NULL, true, &params, &p_out));
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, kept[g], p_out.data, sizeof kept[g],
                                   PLM_COPY_DEVICE_TO_HOST));
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &p_in));
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &p_out));
  }
  ck_assert_msg(kept[1][QUIET + 1] > kept[0][QUIET + 1] + 4.0f, "gated %g, open %g",
                (double)kept[1][QUIET + 1], (double)kept[0][QUIET + 1]);

  plm_tensor *all[] = {&state, &flat, &in, &out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
  free(u16);
  free(x);
  free(want);
  free(b);
}
END_TEST

/* The hold: a map of pixels (the moving spot's row, a corner, pixels on two edges) whose
 * reach, radius 4-connected steps, moves b at hold_rate of its pace; against the reference
 * (the reach measured pixel by pixel) bit for bit, alone, with the gate (either rate the
 * smaller) and with median's step, for radii 0 to the largest; a map of ones at hold_rate r
 * is alpha times r everywhere; and the hold does what it is for: the spot's pixels keep
 * their contrast where it is held. */
START_TEST(test_the_hold_matches_the_reference) {
  uint16_t *u16 = malloc(FRAMES * PIXELS * sizeof *u16);
  float *x = malloc(FRAMES * PIXELS * sizeof *x), *want = malloc(FRAMES * PIXELS * sizeof *want);
  float *b = malloc(2 * PIXELS * sizeof *b), *v = b + PIXELS;
  uint8_t *hold = calloc(PIXELS, 1), *ones = malloc(PIXELS);
  ck_assert(u16 && x && want && b && hold && ones);
  scene_frames(u16, x);
  for (int64_t col = 0; col < W; col += 3) hold[(H / 2) * W + col] = 1;
  hold[0] = 255;             /* a corner */
  hold[3 * W + W - 1] = 2;   /* the right edge */
  hold[(H - 1) * W + 5] = 1; /* the bottom edge */
  memset(ones, 1, PIXELS);
  const plm_background_params holds[] = {{.mode = PLM_BACKGROUND_EMA,
                                          .alpha = 0.2f,
                                          .step = 1.0f,
                                          .hold_rate = 0.3f,
                                          .hold_radius = 2},
                                         {.mode = PLM_BACKGROUND_EMA,
                                          .alpha = 0.05f,
                                          .step = 1.0f,
                                          .hold_rate = 0.0f,
                                          .hold_radius = 0},
                                         {.mode = PLM_BACKGROUND_EMA,
                                          .alpha = 0.3f,
                                          .step = 1.0f,
                                          .gate = 1.5f,
                                          .gate_rate = 0.5f,
                                          .hold_rate = 0.25f,
                                          .hold_radius = 1},
                                         {.mode = PLM_BACKGROUND_EMA,
                                          .alpha = 0.3f,
                                          .step = 1.0f,
                                          .gate = 1.5f,
                                          .gate_rate = 0.1f,
                                          .hold_rate = 0.6f,
                                          .hold_radius = 3},
                                         {.mode = PLM_BACKGROUND_MEDIAN,
                                          .alpha = 0.1f,
                                          .step = 2.5f,
                                          .hold_rate = 0.4f,
                                          .hold_radius = 8}}; /* the largest */
  for (size_t m = 0; m < sizeof holds / sizeof holds[0]; m++) {
    reference_with_hold(x, want, b, v, FRAMES, PIXELS, true, hold, &holds[m]);
    float *got = run_op_with_hold(PLM_DTYPE_U16, u16, FRAMES, hold, NULL, true, &holds[m]);
    ck_assert_msg(same_bits(got, want, FRAMES * PIXELS), "u16, hold %zu", m);
    free(got);
    got = run_op_with_hold(PLM_DTYPE_F32, x, FRAMES, hold, NULL, true, &holds[m]);
    ck_assert_msg(same_bits(got, want, FRAMES * PIXELS), "f32, hold %zu", m);
    /* Without the hold the outputs differ (the test can fail). */
    float *free_b = run_op(PLM_DTYPE_F32, x, FRAMES, NULL, true, &holds[m]);
    ck_assert_msg(!same_bits(free_b, got, FRAMES * PIXELS), "hold %zu changes nothing", m);
    free(free_b);
    free(got);
  }
  /* Held everywhere at rate r: alpha * r (rounded once) for every pixel, the same bits. */
  plm_background_params slowed = holds[0];
  slowed.alpha = holds[0].alpha * holds[0].hold_rate;
  reference(x, want, b, v, FRAMES, PIXELS, true, &slowed);
  float *got = run_op_with_hold(PLM_DTYPE_U16, u16, FRAMES, ones, NULL, true, &holds[0]);
  ck_assert(same_bits(got, want, FRAMES * PIXELS));
  free(got);
  /* A spot that sits still on a pixel held at rate 0 keeps its contrast, 40, where b at
   * full pace (alpha 0.05) has learnt most of it in 23 frames. */
  float *still = malloc(FRAMES * PIXELS * sizeof *still);
  ck_assert_ptr_nonnull(still);
  for (int64_t i = 0; i < FRAMES * PIXELS; i++) still[i] = 100.0f;
  for (int64_t t = 1; t < FRAMES; t++) still[t * PIXELS + (H / 2) * W + 6] = 140.0f;
  float *held_out = run_op_with_hold(PLM_DTYPE_F32, still, FRAMES, hold, NULL, true, &holds[1]);
  float *free_out = run_op(PLM_DTYPE_F32, still, FRAMES, NULL, true, &holds[1]);
  const int64_t spot = (FRAMES - 1) * PIXELS + (H / 2) * W + 6;
  ck_assert_msg(held_out[spot] == 40.0f && free_out[spot] < 15.0f, "held %g, free %g",
                (double)held_out[spot], (double)free_out[spot]);
  free(held_out);
  free(free_out);
  free(still);
  free(u16);
  free(x);
  free(want);
  free(b);
  free(hold);
  free(ones);
}
END_TEST

START_TEST(test_a_stack_equals_its_frames_one_call_at_a_time) {
  uint16_t *u16 = malloc(FRAMES * PIXELS * sizeof *u16);
  float *x = malloc(FRAMES * PIXELS * sizeof *x);
  ck_assert(u16 && x);
  scene_frames(u16, x);
  const plm_background_params params = plm_background_params_default();
  float *whole = run_op(PLM_DTYPE_U16, u16, FRAMES, NULL, true, &params);
  const int64_t hw[2] = {H, W};
  plm_tensor state = plm_test_upload(PLM_DTYPE_F32, 2, hw, NULL);
  /* Frames 0..4 in one call, then one call per frame, then the rest in one. */
  int64_t t = 0;
  const int64_t sizes[] = {5, 1, 1, 1, FRAMES - 8};
  for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
    float *part = run_op(PLM_DTYPE_U16, u16 + t * PIXELS, sizes[c], &state, t == 0, &params);
    ck_assert_msg(same_bits(part, whole + t * PIXELS, sizes[c] * PIXELS), "call %zu", c);
    free(part);
    t += sizes[c];
  }
  /* first = true starts again, whatever the state holds. */
  float *again = run_op(PLM_DTYPE_U16, u16, FRAMES, &state, true, &params);
  ck_assert(same_bits(again, whole, FRAMES * PIXELS));
  free(again);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &state));
  free(whole);
  free(u16);
  free(x);
}
END_TEST

START_TEST(test_values_that_are_not_numbers_leave_the_background) {
  /* One pixel (1 x 1 frames): NaN first, then finite, then inf, then finite. */
  const float x[] = {NAN, 10.0f, 20.0f, INFINITY, 30.0f, NAN, 30.0f};
  const int64_t n = sizeof x / sizeof x[0], dims[3] = {n, 1, 1};
  plm_tensor in = plm_test_upload(PLM_DTYPE_F32, 3, dims, x), out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 3, dims, &out));
  const plm_background_params params = {.mode = PLM_BACKGROUND_EMA, .alpha = 0.5f, .step = 1.0f};
  PLM_CHECK_OK(plm_background(plm_test_stream, &in, NULL, NULL, true, &params, &out));
  float got[7];
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, got, out.data, sizeof got, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert(got[0] == 0.0f);  /* b = NaN */
  ck_assert(got[1] == 0.0f);  /* b was NaN: re-initialised to 10 */
  ck_assert(got[2] == 10.0f); /* 20 - 10; b = 15 */
  ck_assert(isinf(got[3]));   /* inf - 15; b stays 15 */
  ck_assert(got[4] == 15.0f); /* 30 - 15; b = 22.5 */
  ck_assert(isnan(got[5]));   /* b stays 22.5 */
  ck_assert(got[6] == 7.5f);  /* 30 - 22.5 */
  /* In place on f32 gives the same. */
  PLM_CHECK_OK(plm_background(plm_test_stream, &in, NULL, NULL, true, &params, &in));
  float in_place[7];
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in_place, in.data, sizeof in_place,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert(memcmp(in_place, got, sizeof got) == 0);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
}
END_TEST

START_TEST(test_output_shape_cost_and_defaults) {
  const plm_background_params defaults = plm_background_params_default();
  ck_assert_int_eq(defaults.mode, PLM_BACKGROUND_EMA);
  ck_assert(defaults.alpha == 0.05f && defaults.step == 1.0f);
  ck_assert(defaults.gate == 0.0f && defaults.gate_rate == 0.3f);
  ck_assert(defaults.hold_rate == 0.3f && defaults.hold_radius == 2);
  const int64_t dims[3] = {4, 6, 8};
  plm_tensor in;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, (void *)&dims, PLM_DTYPE_U16, 3, dims, &in));
  plm_shape shape;
  PLM_CHECK_OK(plm_background_output(&in, &defaults, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_F32);
  ck_assert(shape.ndim == 3 && shape.dims[0] == 4 && shape.dims[1] == 6 && shape.dims[2] == 8);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_background_cost(&in, NULL, &defaults, &cost));
  ck_assert_double_eq(cost.bytes, 4 * 48 * (2.0 + 4.0) + 8.0 * 48);
  ck_assert_double_eq(cost.flops, 3.0 * 4 * 48);
  plm_background_params gated = defaults;
  gated.gate = 2.0f;
  PLM_CHECK_OK(plm_background_cost(&in, NULL, &gated, &cost));
  ck_assert_double_eq(cost.bytes, 4 * 48 * (2.0 + 4.0) + 16.0 * 48);
  ck_assert_double_eq(cost.flops, 8.0 * 4 * 48);
  /* A hold adds its byte per pixel, once per call. */
  const int64_t map_dims[2] = {6, 8};
  plm_tensor hold;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, (void *)&map_dims, PLM_DTYPE_U8, 2, map_dims, &hold));
  PLM_CHECK_OK(plm_background_cost(&in, &hold, &gated, &cost));
  ck_assert_double_eq(cost.bytes, 4 * 48 * (2.0 + 4.0) + 17.0 * 48);
}
END_TEST

START_TEST(test_bad_input_is_refused) {
  const int64_t dims[3] = {2, 4, 5}, hw[2] = {4, 5}, wh[2] = {5, 4};
  plm_tensor in = plm_test_upload(PLM_DTYPE_U16, 3, dims, NULL);
  plm_tensor out = plm_test_upload(PLM_DTYPE_F32, 3, dims, NULL);
  plm_tensor state = plm_test_upload(PLM_DTYPE_F32, 2, hw, NULL);
  plm_tensor turned = plm_test_upload(PLM_DTYPE_F32, 2, wh, NULL);
  plm_tensor state_u16 = plm_test_upload(PLM_DTYPE_U16, 2, hw, NULL);
  plm_background_params params = plm_background_params_default();
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state, false, NULL, &out),
                  PLM_ERR_INVALID_ARG, "params is NULL");
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, NULL, false, &params, &out),
                  PLM_ERR_INVALID_ARG, "state is NULL but first is false");
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &turned, false, &params, &out),
                  PLM_ERR_INVALID_ARG, "state is not f32 4x5");
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state_u16, false, &params, &out),
                  PLM_ERR_INVALID_ARG, "state is not f32 4x5");
  plm_tensor state_in_out = state;
  state_in_out.data = out.data;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state_in_out, false, &params, &out),
                  PLM_ERR_INVALID_ARG, "overlaps out");
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &out, NULL, &state_in_out, false, &params, &out),
                  PLM_ERR_INVALID_ARG, "overlaps in");
  plm_background_params bad = params;
  bad.alpha = 0.0f;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state, true, &bad, &out),
                  PLM_ERR_INVALID_ARG, "params->alpha 0 is not in (0, 1]");
  bad.alpha = 1.5f;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state, true, &bad, &out),
                  PLM_ERR_INVALID_ARG, "params->alpha 1.5 is not in (0, 1]");
  bad = params;
  bad.step = -1.0f;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state, true, &bad, &out),
                  PLM_ERR_INVALID_ARG, "params->step -1 is not finite and > 0");
  bad = params;
  bad.gate = -1.0f;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state, true, &bad, &out),
                  PLM_ERR_INVALID_ARG, "params->gate -1 is not in [0, 1e18]");
  bad.gate = NAN;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state, true, &bad, &out),
                  PLM_ERR_INVALID_ARG, "params->gate nan is not in [0, 1e18]");
  bad = params;
  bad.gate_rate = 1.5f;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state, true, &bad, &out),
                  PLM_ERR_INVALID_ARG, "params->gate_rate 1.5 is not in [0, 1]");
  bad = params;
  bad.mode = (plm_background_mode)7;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state, true, &bad, &out),
                  PLM_ERR_INVALID_ARG, "params->mode 7 is not a plm_background_mode");
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state, true, &params, &in),
                  PLM_ERR_INVALID_ARG, "out->dtype u16 is not f32");
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &state_u16, NULL, NULL, true, &params, &turned),
                  PLM_ERR_INVALID_ARG, "out is 5x4 but in is 4x5");
  PLM_CHECK_FAILS(plm_background(plm_test_stream, NULL, NULL, NULL, true, &params, &out),
                  PLM_ERR_INVALID_ARG, "in is NULL");
  /* The hold: u8 of the frame's (H, W), its parameters in range, apart from out and state. */
  plm_tensor hold = plm_test_upload(PLM_DTYPE_U8, 2, hw, NULL);
  plm_tensor hold_turned = plm_test_upload(PLM_DTYPE_U8, 2, wh, NULL);
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, &state, NULL, true, &params, &out),
                  PLM_ERR_INVALID_ARG, "hold->dtype f32 is not u8");
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, &hold_turned, NULL, true, &params, &out),
                  PLM_ERR_INVALID_ARG, "hold is 5x4 but in's frames are 4x5");
  bad = params;
  bad.hold_rate = -0.5f;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, &hold, &state, true, &bad, &out),
                  PLM_ERR_INVALID_ARG, "params->hold_rate -0.5 is not in [0, 1]");
  bad = params;
  bad.hold_radius = 9;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, &hold, &state, true, &bad, &out),
                  PLM_ERR_INVALID_ARG, "params->hold_radius 9 is not in [0, 8]");
  bad.hold_radius = -1;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, NULL, &state, true, &bad, &out),
                  PLM_ERR_INVALID_ARG, "params->hold_radius -1 is not in [0, 8]");
  plm_tensor hold_in_state = hold;
  hold_in_state.data = state.data;
  PLM_CHECK_FAILS(plm_background(plm_test_stream, &in, &hold_in_state, &state, true, &params, &out),
                  PLM_ERR_INVALID_ARG, "overlaps");
  PLM_CHECK_OK(plm_background(plm_test_stream, &in, &hold, &state, true, &params, &out));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&in, &out, &state, &turned, &state_u16, &hold, &hold_turned};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

/* ---- pipelines ------------------------------------------------------------------------ */

#define CHAIN "background alpha=0.25 ! cfar window=7 guard=3 k=2 output=z"

static plm_pipeline *chain_pipeline(const char *text, int frames_in_flight) {
  return plm_test_pipeline(plm_test_ctx, text, PLM_DTYPE_U16, H, W, frames_in_flight);
}

typedef struct frames_run {
  spot_scene_run run; /* first: spot_scene_source reads it */
  float *kept;        /* each delivered frame's output, PIXELS floats, by run index */
  plm_pipeline *pl;   /* the sink tries to reset and rerun it (refused) when set */
  bool reset_refused, run_refused, nested_refused;
} frames_run;

static plm_status keep_sink(void *user, int64_t frame, const void *const *outputs) {
  frames_run *r = user;
  memcpy(r->kept + frame * PIXELS, outputs[0], PIXELS * sizeof(float));
  if (r->pl && frame == 2) {
    plm_clear_error();
    r->reset_refused = plm_pipeline_reset_state(r->pl) == PLM_ERR_INVALID_STATE &&
                       strstr(plm_last_error(), "run_stream") != NULL;
    r->run_refused =
        plm_pipeline_run(r->pl, NULL, NULL, plm_test_stream) == PLM_ERR_INVALID_STATE &&
        strstr(plm_last_error(), "run after it returns") != NULL;
    plm_run_stream_report report;
    r->nested_refused = plm_pipeline_run_stream(r->pl, spot_scene_source, NULL, r, NULL, &report) ==
                            PLM_ERR_INVALID_STATE &&
                        strstr(plm_last_error(), "already running this pipeline") != NULL;
  }
  return PLM_OK;
}

/* Stream scene frames first .. first + frames - 1 through pl into kept. */
static void stream_frames(plm_pipeline *pl, int64_t first, int64_t frames, int ahead, float *kept) {
  frames_run r = {.run = {&scene, first, frames}, .kept = kept};
  plm_run_stream_options options = plm_run_stream_options_default();
  options.source_ahead = ahead;
  plm_run_stream_report report;
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, spot_scene_source, keep_sink, &r, &options, &report));
  ck_assert_int_eq(report.frames_delivered, frames);
}

START_TEST(test_frames_in_flight_give_the_same_bytes) {
  float *one = malloc(FRAMES * PIXELS * sizeof *one), *got = malloc(FRAMES * PIXELS * sizeof *got);
  ck_assert(one && got);
  plm_pipeline *pl = chain_pipeline(CHAIN, 1);
  stream_frames(pl, 0, FRAMES, 0, one);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  for (int k = 1; k <= 4; k++)
    for (int ahead = 0; ahead <= 3; ahead += 3) {
      pl = chain_pipeline(CHAIN, k);
      memset(got, 0xff, FRAMES * PIXELS * sizeof *got);
      stream_frames(pl, 0, FRAMES, ahead, got);
      ck_assert_msg(memcmp(got, one, FRAMES * PIXELS * sizeof *got) == 0, "K = %d, source %d ahead",
                    k, ahead);
      PLM_CHECK_OK(plm_pipeline_destroy(pl));
    }
  free(one);
  free(got);
}
END_TEST

START_TEST(test_a_pipeline_equals_the_op_and_carries_its_state_across_runs) {
  uint16_t *u16 = malloc(FRAMES * PIXELS * sizeof *u16);
  float *x = malloc(FRAMES * PIXELS * sizeof *x), *got = malloc(FRAMES * PIXELS * sizeof *got);
  ck_assert(u16 && x && got);
  scene_frames(u16, x);
  plm_background_params params = plm_background_params_default();
  params.alpha = 0.25f;
  float *op = run_op(PLM_DTYPE_U16, u16, FRAMES, NULL, true, &params);

  /* Two streamed runs: the second continues the first's state. */
  plm_pipeline *pl = chain_pipeline("background alpha=0.25", 3);
  stream_frames(pl, 0, 10, 0, got);
  stream_frames(pl, 10, FRAMES - 10, 2, got + 10 * PIXELS);
  ck_assert(same_bits(got, op, FRAMES * PIXELS));

  /* After a reset, frame by frame with plm_pipeline_run, then streamed: the same again. */
  PLM_CHECK_OK(plm_pipeline_reset_state(pl));
  const int64_t hw[2] = {H, W};
  plm_tensor in = plm_test_upload(PLM_DTYPE_U16, 2, hw, NULL);
  plm_tensor out = plm_test_upload(PLM_DTYPE_F32, 2, hw, NULL);
  for (int64_t t = 0; t < 6; t++) {
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, u16 + t * PIXELS, PIXELS * sizeof *u16,
                                   PLM_COPY_HOST_TO_DEVICE));
    PLM_CHECK_OK(plm_pipeline_run(pl, &in, &out, plm_test_stream));
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got + t * PIXELS, out.data,
                                   PIXELS * sizeof *got, PLM_COPY_DEVICE_TO_HOST));
  }
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  stream_frames(pl, 6, FRAMES - 6, 0, got + 6 * PIXELS);
  ck_assert(same_bits(got, op, FRAMES * PIXELS));

  /* A reset from the sink of a run is refused; the run goes on. */
  PLM_CHECK_OK(plm_pipeline_reset_state(pl));
  frames_run r = {.run = {&scene, 0, FRAMES}, .kept = got, .pl = pl};
  plm_run_stream_report report;
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, spot_scene_source, keep_sink, &r, NULL, &report));
  ck_assert(r.reset_refused && r.run_refused && r.nested_refused);
  ck_assert(same_bits(got, op, FRAMES * PIXELS));

  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_int_eq(info.states, 1);
  ck_assert_uint_eq(info.state_bytes, 2304); /* 19 x 27 x 4 = 2052, to 256 */
  ck_assert_uint_eq(info.scratch_bytes, 0);  /* the state is not scratch */
  char text[8192];
  PLM_CHECK_OK(plm_pipeline_describe(pl, text, sizeof text, NULL));
  ck_assert_msg(strstr(text, "state s0 f32 19x27 at state[0, 2052)") != NULL, "%s", text);
  ck_assert_msg(strstr(text, "state: 1 state(s), 2304 bytes") != NULL, "%s", text);

  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free(op);
  free(u16);
  free(x);
  free(got);
}
END_TEST

/* A gated background in a pipeline: its (2, H, W) state is planned and carried, the same
 * bytes with 1..3 frames in flight as the op over the stack. */
START_TEST(test_a_gated_pipeline_equals_the_op) {
  uint16_t *u16 = malloc(FRAMES * PIXELS * sizeof *u16);
  float *x = malloc(FRAMES * PIXELS * sizeof *x), *got = malloc(FRAMES * PIXELS * sizeof *got);
  ck_assert(u16 && x && got);
  scene_frames(u16, x);
  plm_background_params params = plm_background_params_default();
  params.alpha = 0.25f;
  params.gate = 2.0f;
  params.gate_rate = 0.1f;
  float *op = run_op(PLM_DTYPE_U16, u16, FRAMES, NULL, true, &params);
  for (int k = 1; k <= 3; k++) {
    plm_pipeline *pl = chain_pipeline("background alpha=0.25 gate=2 gate_rate=0.1", k);
    memset(got, 0xff, FRAMES * PIXELS * sizeof *got);
    stream_frames(pl, 0, 10, 0, got);
    stream_frames(pl, 10, FRAMES - 10, 2, got + 10 * PIXELS);
    ck_assert_msg(same_bits(got, op, FRAMES * PIXELS), "K = %d", k);
    char text[8192];
    PLM_CHECK_OK(plm_pipeline_describe(pl, text, sizeof text, NULL));
    ck_assert_msg(strstr(text, "state s0 f32 2x19x27 at state[0, 4104)") != NULL, "%s", text);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  free(op);
  free(u16);
  free(x);
  free(got);
}
END_TEST

START_TEST(test_reset_state_is_refused_before_compile) {
  const int64_t dims[2] = {H, W};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, "background", PLM_DTYPE_U16, 2, dims, &pl));
  PLM_CHECK_FAILS(plm_pipeline_reset_state(pl), PLM_ERR_INVALID_STATE, "not compiled");
  PLM_CHECK_FAILS(plm_pipeline_reset_state(NULL), PLM_ERR_INVALID_ARG, "pl is NULL");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  /* A pipeline without state accepts a reset. */
  pl = chain_pipeline("threshold value=3", 2);
  PLM_CHECK_OK(plm_pipeline_reset_state(pl));
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

static Suite *background_suite(void) {
  Suite *suite = suite_create("background");
  TCase *op = tcase_create("op");
  plm_test_add_fixture(op);
  plm_test_add_stream_fixture(op);
  tcase_add_test(op, test_matches_the_reference_in_every_dtype_and_mode);
  tcase_add_test(op, test_the_gate_matches_the_reference);
  tcase_add_test(op, test_the_hold_matches_the_reference);
  tcase_add_test(op, test_a_stack_equals_its_frames_one_call_at_a_time);
  tcase_add_test(op, test_values_that_are_not_numbers_leave_the_background);
  tcase_add_test(op, test_output_shape_cost_and_defaults);
  tcase_add_test(op, test_bad_input_is_refused);
  suite_add_tcase(suite, op);
  TCase *pipeline = tcase_create("pipeline");
  plm_test_add_fixture(pipeline);
  plm_test_add_stream_fixture(pipeline);
  tcase_set_timeout(pipeline, 120);
  tcase_add_test(pipeline, test_frames_in_flight_give_the_same_bytes);
  tcase_add_test(pipeline, test_a_pipeline_equals_the_op_and_carries_its_state_across_runs);
  tcase_add_test(pipeline, test_a_gated_pipeline_equals_the_op);
  tcase_add_test(pipeline, test_reset_state_is_refused_before_compile);
  suite_add_tcase(suite, pipeline);
  return suite;
}

int main(void) {
  return plm_test_main(background_suite);
}

/* tests/test_scene.c: the synthetic infrared scene (support/scene.h).
 *
 * Determinism (the same seed gives the same bytes, frames drawn in any order or from
 * any thread are the same, a short scene is the start of a long one, and a fixed scene
 * hashes to a value recorded here, so a machine or compiler that computes other bits
 * fails), different seeds give different scenes, the truth is consistent with the
 * frames (inside the image, one row per drawn plume, a bright spot where it says), the
 * values stay within 14 bits, and bad arguments are refused with a message. The hard
 * scene is deterministic in the same ways and differs from the normal one; its
 * calibration turns its frames back into their radiance within the stated errors, its
 * bad pixels (about 0.1%) are stuck at their values in every frame, and its plumes are
 * 3..8 noise sigmas bright and move 0.3..2 px per frame. Its knobs (the family of hard
 * scenes) leave it byte for byte at their defaults and do what they name otherwise: plume
 * strength, dead and hot pixels, more discs, faster discs; out-of-range values are
 * refused. A plain unit test: no context
 * or backend is involved.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "support/scene.h"

static char err[SCENE_ERROR_SIZE];

static scene *make(int64_t frames, int64_t height, int64_t width, uint64_t seed,
                   scene_difficulty difficulty) {
  scene_config config = {
      .frames = frames, .height = height, .width = width, .seed = seed, .difficulty = difficulty};
  scene *s = NULL;
  ck_assert_msg(scene_create(&config, &s, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* All frames and truth rows of a scene, drawn in order. */
typedef struct rendered {
  uint16_t *pixels; /* [N][H][W] */
  scene_truth *truth;
  int64_t rows;
} rendered;

static rendered render_all(const scene *s) {
  scene_config c = scene_get_config(s);
  size_t frame = (size_t)(c.height * c.width);
  int max = scene_max_plumes(s);
  rendered r = {.pixels = malloc((size_t)c.frames * frame * sizeof *r.pixels),
                .truth = malloc((size_t)(c.frames * max) * sizeof *r.truth)};
  ck_assert_ptr_nonnull(r.pixels);
  ck_assert_ptr_nonnull(r.truth);
  for (int64_t t = 0; t < c.frames; t++) {
    int count = -1;
    ck_assert_msg(scene_render(s, t, r.pixels + (size_t)t * frame, r.truth + r.rows, &count, err,
                               sizeof err) == PLM_OK,
                  "%s", err);
    ck_assert_int_ge(count, 0);
    ck_assert_int_le(count, max);
    r.rows += count;
  }
  return r;
}

static void rendered_free(rendered *r) {
  free(r->pixels);
  free(r->truth);
}

/* FNV-1a, 64 bits. */
static uint64_t fnv1a(const void *data, size_t bytes, uint64_t hash) {
  const unsigned char *p = data;
  for (size_t i = 0; i < bytes; i++) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

START_TEST(test_same_seed_same_bytes_and_truth) {
  scene *a = make(12, 64, 80, 7, _i), *b = make(12, 64, 80, 7, _i);
  rendered ra = render_all(a), rb = render_all(b);
  ck_assert_int_eq(ra.rows, rb.rows);
  ck_assert_int_eq(memcmp(ra.pixels, rb.pixels, (size_t)12 * 64 * 80 * sizeof *ra.pixels), 0);
  ck_assert_int_eq(memcmp(ra.truth, rb.truth, (size_t)ra.rows * sizeof *ra.truth), 0);
  rendered_free(&ra);
  rendered_free(&rb);
  scene_destroy(a);
  scene_destroy(b);
}
END_TEST

START_TEST(test_different_seed_different_scene) {
  scene *a = make(4, 64, 64, 1, _i), *b = make(4, 64, 64, 2, _i);
  rendered ra = render_all(a), rb = render_all(b);
  size_t pixels = (size_t)4 * 64 * 64;
  size_t differ = 0;
  for (size_t i = 0; i < pixels; i++) differ += ra.pixels[i] != rb.pixels[i];
  /* Noise alone makes nearly every pixel differ. */
  ck_assert_uint_gt(differ, pixels * 9 / 10);
  bool same_truth = ra.rows == rb.rows && ra.rows > 0 &&
                    memcmp(ra.truth, rb.truth, (size_t)ra.rows * sizeof *ra.truth) == 0;
  ck_assert(!same_truth);
  rendered_free(&ra);
  rendered_free(&rb);
  scene_destroy(a);
  scene_destroy(b);
}
END_TEST

START_TEST(test_frames_in_any_order_and_a_short_scene_starts_a_long_one) {
  scene *longer = make(40, 48, 48, 3, _i), *shorter = make(15, 48, 48, 3, _i);
  rendered all = render_all(longer), start = render_all(shorter);
  size_t frame = 48 * 48;
  ck_assert_int_eq(memcmp(all.pixels, start.pixels, 15 * frame * sizeof *all.pixels), 0);
  ck_assert_int_le(start.rows, all.rows);
  ck_assert_int_eq(memcmp(all.truth, start.truth, (size_t)start.rows * sizeof *all.truth), 0);
  /* Backwards, one frame at a time, into a fresh buffer. */
  uint16_t *pixels = malloc(frame * sizeof *pixels);
  scene_truth truth[64];
  int64_t row = all.rows;
  for (int64_t t = 39; t >= 0; t--) {
    int count = 0;
    ck_assert_int_eq(scene_render(longer, t, pixels, truth, &count, err, sizeof err), PLM_OK);
    ck_assert_int_eq(memcmp(pixels, all.pixels + (size_t)t * frame, frame * sizeof *pixels), 0);
    row -= count;
    ck_assert_int_eq(memcmp(truth, all.truth + row, (size_t)count * sizeof *truth), 0);
  }
  ck_assert_int_eq(row, 0);
  free(pixels);
  rendered_free(&all);
  rendered_free(&start);
  scene_destroy(longer);
  scene_destroy(shorter);
}
END_TEST

/* Threads rendering frames of one scene at once get what one thread gets. */
typedef struct job {
  const scene *s;
  int64_t first, step;
  uint16_t *pixels;
  plm_status status;
} job;

static void *render_every_other(void *arg) {
  job *j = arg;
  scene_config c = scene_get_config(j->s);
  size_t frame = (size_t)(c.height * c.width);
  scene_truth truth[64];
  char message[SCENE_ERROR_SIZE];
  for (int64_t t = j->first; t < c.frames && j->status == PLM_OK; t += j->step) {
    int count = 0;
    j->status = scene_render(j->s, t, j->pixels + (size_t)t * frame, truth, &count, message,
                             sizeof message);
  }
  return NULL;
}

START_TEST(test_threads_render_the_same_frames) {
  scene *s = make(10, 64, 64, 11, _i);
  rendered alone = render_all(s);
  uint16_t *pixels = calloc((size_t)10 * 64 * 64, sizeof *pixels);
  job jobs[2] = {{s, 0, 2, pixels, PLM_OK}, {s, 1, 2, pixels, PLM_OK}};
  pthread_t threads[2];
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(pthread_create(&threads[i], NULL, render_every_other, &jobs[i]), 0);
  for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
  ck_assert_int_eq(jobs[0].status, PLM_OK);
  ck_assert_int_eq(jobs[1].status, PLM_OK);
  ck_assert_int_eq(memcmp(pixels, alone.pixels, (size_t)10 * 64 * 64 * sizeof *pixels), 0);
  free(pixels);
  rendered_free(&alone);
  scene_destroy(s);
}
END_TEST

/* The bytes of a fixed scene on every machine: a change here means either that the
 * scene model was changed on purpose (record the new hashes) or that this machine or
 * compiler computes different bits (a bug: see "determinism" in support/scene.h). */
START_TEST(test_known_scene_hashes) {
  static const struct {
    int64_t frames, height, width;
    uint64_t seed;
    scene_difficulty difficulty;
    uint64_t pixels_hash, truth_hash;
  } known[] = {
      {8, 96, 128, 1, SCENE_NORMAL, 0x39cb2ec6dd1f309cull, 0x7def2df689ff60e2ull},
      {3, 256, 256, 12345678901234567ull, SCENE_NORMAL, 0x6013f6cfa4360c19ull,
       0xea7c41c67f285651ull},
      {8, 96, 128, 1, SCENE_HARD, 0x428a45ae36bfde87ull, 0x8b3c0a0925bdb748ull},
      {3, 256, 256, 12345678901234567ull, SCENE_HARD, 0x96a0166b94fc61c6ull, 0x4a7c7c0f4e847fadull},
  };
  for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
    scene *s =
        make(known[k].frames, known[k].height, known[k].width, known[k].seed, known[k].difficulty);
    rendered r = render_all(s);
    uint64_t pixels = fnv1a(
        r.pixels, (size_t)(known[k].frames * known[k].height * known[k].width) * sizeof *r.pixels,
        0xcbf29ce484222325ull);
    /* The truth as the CSV prints it (four decimals). */
    uint64_t truth = 0xcbf29ce484222325ull;
    for (int64_t i = 0; i < r.rows; i++) {
      char line[SCENE_TRUTH_ROW_SIZE];
      size_t n = scene_truth_csv_row(&r.truth[i], line, sizeof line);
      truth = fnv1a(line, n, truth);
    }
    ck_assert_msg(pixels == known[k].pixels_hash && truth == known[k].truth_hash,
                  "scene %zu: pixels hash 0x%016llxull, truth hash 0x%016llxull", k,
                  (unsigned long long)pixels, (unsigned long long)truth);
    rendered_free(&r);
    scene_destroy(s);
  }
}
END_TEST

START_TEST(test_truth_is_inside_and_marks_bright_spots) {
  const int64_t n = 30, h = 128, w = 160;
  scene *s = make(n, h, w, 5, SCENE_NORMAL);
  rendered r = render_all(s);
  ck_assert_int_gt(r.rows, n); /* more than one plume per frame on average */
  int64_t bright = 0, last_frame = -1;
  for (int64_t i = 0; i < r.rows; i++) {
    const scene_truth *t = &r.truth[i];
    ck_assert_int_ge(t->frame, last_frame); /* in frame order */
    ck_assert_int_lt(t->frame, n);
    last_frame = t->frame;
    ck_assert(t->row >= 0 && t->row <= (double)(h - 1));
    ck_assert(t->col >= 0 && t->col <= (double)(w - 1));
    ck_assert(t->amplitude >= 150.0 * 0.92 && t->amplitude <= 2378.0 * 1.08);
    ck_assert(t->sigma >= 1.2 && t->sigma <= 3.0);
    /* The pixel at the centre against the mean of a ring 9..11 px away (a linear
     * background cancels in the ring's mean). */
    const uint16_t *frame = r.pixels + (size_t)(t->frame * h * w);
    int64_t y = (int64_t)(t->row + 0.5), x = (int64_t)(t->col + 0.5);
    double ring = 0;
    int ring_n = 0;
    for (int64_t dy = -11; dy <= 11; dy++)
      for (int64_t dx = -11; dx <= 11; dx++) {
        int64_t d2 = dy * dy + dx * dx, yy = y + dy, xx = x + dx;
        if (d2 < 81 || d2 > 121 || yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
        ring += frame[yy * w + xx];
        ring_n++;
      }
    if ((double)frame[y * w + x] - ring / ring_n > 0.5 * t->amplitude) bright++;
  }
  /* Nearly all: a plume crossing another or a cloud's edge may spoil a few. */
  ck_assert_msg(bright >= r.rows * 9 / 10, "%lld of %lld truth rows mark a bright spot",
                (long long)bright, (long long)r.rows);
  rendered_free(&r);
  scene_destroy(s);
}
END_TEST

START_TEST(test_values_stay_within_14_bits_and_vary) {
  scene *s = make(6, 200, 120, 9, SCENE_NORMAL);
  rendered r = render_all(s);
  uint16_t lo = UINT16_MAX, hi = 0;
  for (size_t i = 0; i < (size_t)6 * 200 * 120; i++) {
    if (r.pixels[i] < lo) lo = r.pixels[i];
    if (r.pixels[i] > hi) hi = r.pixels[i];
  }
  ck_assert_uint_le(hi, SCENE_MAX_VALUE);
  /* A cluttered scene: a wide spread of values, not a flat field. */
  ck_assert_uint_gt(hi - lo, 1000);
  rendered_free(&r);
  scene_destroy(s);
}
END_TEST

START_TEST(test_truth_rows_print_with_four_decimals) {
  scene_truth t = {.frame = 3, .row = 17.25, .col = 40.0, .amplitude = 812.5, .sigma = 1.5};
  char line[SCENE_TRUTH_ROW_SIZE];
  size_t n = scene_truth_csv_row(&t, line, sizeof line);
  ck_assert_str_eq(line, "3,17.2500,40.0000,812.5000,1.5000\n");
  ck_assert_uint_eq(n, strlen(line));
  ck_assert_str_eq(SCENE_TRUTH_HEADER, "frame,row,col,amplitude,sigma\n");
}
END_TEST

START_TEST(test_bad_arguments_are_refused) {
  scene_config ok = {.frames = 2, .height = 32, .width = 32, .seed = 0};
  scene *s = NULL;
  ck_assert_int_eq(scene_create(NULL, &s, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "config"));
  ck_assert_int_eq(scene_create(&ok, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
  scene_config bad = ok;
  bad.frames = 0;
  ck_assert_int_eq(scene_create(&bad, &s, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "frames"));
  ck_assert_ptr_null(s);
  bad.frames = SCENE_MAX_FRAMES + 1;
  ck_assert_int_eq(scene_create(&bad, &s, err, sizeof err), PLM_ERR_INVALID_ARG);
  bad = ok;
  bad.height = SCENE_MIN_SIDE - 1;
  ck_assert_int_eq(scene_create(&bad, &s, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "size"));
  bad = ok;
  bad.width = SCENE_MAX_SIDE + 1;
  ck_assert_int_eq(scene_create(&bad, &s, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_null(s);

  s = make(2, 32, 32, 0, SCENE_NORMAL);
  uint16_t pixels[32 * 32];
  scene_truth truth[64];
  int count = 0;
  ck_assert_int_eq(scene_render(s, 2, pixels, truth, &count, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "frame 2"));
  ck_assert_int_eq(scene_render(s, -1, pixels, truth, &count, err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(scene_render(NULL, 0, pixels, truth, &count, err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(scene_render(s, 0, NULL, truth, &count, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "pixels"));
  ck_assert_int_eq(scene_render(s, 0, pixels, NULL, &count, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(scene_render(s, 0, pixels, truth, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(scene_render(s, 1, pixels, truth, &count, err, sizeof err), PLM_OK);
  ck_assert_int_eq(scene_max_plumes(NULL), 0);
  scene_destroy(s);
  scene_destroy(NULL);
}
END_TEST

/* ---- the hard scene ------------------------------------------------------------------- */

START_TEST(test_hard_scene_differs_from_the_normal_one) {
  scene *normal = make(3, 64, 64, 4, SCENE_NORMAL), *hard = make(3, 64, 64, 4, SCENE_HARD);
  rendered rn = render_all(normal), rh = render_all(hard);
  size_t differ = 0, pixels = (size_t)3 * 64 * 64;
  for (size_t i = 0; i < pixels; i++) differ += rn.pixels[i] != rh.pixels[i];
  ck_assert_uint_gt(differ, pixels * 9 / 10);
  ck_assert_int_eq(scene_get_config(hard).difficulty, SCENE_HARD);
  rendered_free(&rn);
  rendered_free(&rh);
  scene_destroy(normal);
  scene_destroy(hard);
}
END_TEST

/* gain * raw + offset is the radiance times the frame's drift g(t), within the noise
 * (|n| < 3.47 sigma) and the calibration's errors (0.3% and 3 counts rms, Gaussian-like,
 * so within 3.47 times that) on every good pixel, while the raw counts are far from it. */
START_TEST(test_hard_calibration_recovers_the_radiance) {
  const int64_t h = 64, w = 96, n = 400;
  scene *s = make(n, h, w, 21, SCENE_HARD);
  const size_t pixels = (size_t)(h * w);
  float *gain = malloc(pixels * sizeof *gain), *offset = malloc(pixels * sizeof *offset);
  uint8_t *bad = malloc(pixels);
  uint16_t *raw = malloc(pixels * sizeof *raw);
  double *radiance = malloc(pixels * sizeof *radiance);
  scene_truth truth[64];
  ck_assert_int_eq(scene_calibration(s, gain, offset, bad, err, sizeof err), PLM_OK);
  double drift_lo = 2.0, drift_hi = 0.0;
  for (int64_t t = 0; t < n; t += 133) {
    int count = 0;
    ck_assert_int_eq(scene_render(s, t, raw, truth, &count, err, sizeof err), PLM_OK);
    ck_assert_int_eq(scene_render_radiance(s, t, radiance, err, sizeof err), PLM_OK);
    /* The frame's drift: the least-squares ratio of the corrected frame to the radiance. */
    double num = 0, den = 0, raw_error = 0;
    for (size_t i = 0; i < pixels; i++) {
      if (bad[i]) continue;
      double out = (double)gain[i] * raw[i] + (double)offset[i];
      num += out * radiance[i];
      den += radiance[i] * radiance[i];
      raw_error += (raw[i] - radiance[i]) * (raw[i] - radiance[i]);
    }
    double drift = num / den;
    drift_lo = fmin(drift_lo, drift);
    drift_hi = fmax(drift_hi, drift);
    ck_assert(drift > 0.95 && drift < 1.05);
    double error = 0;
    for (size_t i = 0; i < pixels; i++) {
      if (bad[i]) continue;
      double out = (double)gain[i] * raw[i] + (double)offset[i], d = out - drift * radiance[i];
      double bound = drift * 3.47 * 30.0 + 3.47 * 0.003 * radiance[i] * drift + 3.47 * 3.0 + 2.0;
      ck_assert_msg(fabs(d) <= bound, "frame %lld pixel %zu: %g from the radiance (bound %g)",
                    (long long)t, i, d, bound);
      error += d * d;
    }
    size_t good = pixels;
    for (size_t i = 0; i < pixels; i++) good -= bad[i];
    /* rms: noise 30, gain error 0.3% of ~5000, offset 3 */
    ck_assert_double_lt(sqrt(error / (double)good), 40.0);
    ck_assert_double_gt(sqrt(raw_error / (double)good), 150.0);
  }
  ck_assert_double_gt(drift_hi - drift_lo, 0.002); /* the gain drifts */
  free(gain);
  free(offset);
  free(bad);
  free(raw);
  free(radiance);
  scene_destroy(s);
}
END_TEST

START_TEST(test_hard_bad_pixels_are_stuck) {
  const int64_t h = 256, w = 256;
  const size_t pixels = (size_t)(h * w);
  scene *s = make(60, h, w, 8, SCENE_HARD);
  uint8_t *bad = malloc(pixels);
  uint16_t *first = malloc(pixels * sizeof *first), *frame = malloc(pixels * sizeof *frame);
  scene_truth truth[64];
  int count = 0;
  ck_assert_int_eq(scene_calibration(s, NULL, NULL, bad, err, sizeof err), PLM_OK);
  size_t n_bad = 0;
  for (size_t i = 0; i < pixels; i++) {
    ck_assert_uint_le(bad[i], 1);
    n_bad += bad[i];
  }
  /* 0.1% of 65,536 pixels: 66 expected */
  ck_assert_msg(n_bad >= 33 && n_bad <= 132, "%zu bad pixels", n_bad);
  ck_assert_int_eq(scene_render(s, 0, first, truth, &count, err, sizeof err), PLM_OK);
  size_t dead = 0, hot = 0;
  for (size_t i = 0; i < pixels; i++) {
    if (!bad[i]) continue;
    dead += first[i] <= 63;
    hot += first[i] >= 12000;
  }
  ck_assert_uint_eq(dead + hot, n_bad);
  ck_assert_uint_gt(dead, 0);
  ck_assert_uint_gt(hot, 0);
  for (int64_t t = 1; t < 60; t += 29) {
    ck_assert_int_eq(scene_render(s, t, frame, truth, &count, err, sizeof err), PLM_OK);
    size_t changed = 0;
    for (size_t i = 0; i < pixels; i++) {
      if (bad[i])
        ck_assert_uint_eq(frame[i], first[i]);
      else
        changed += frame[i] != first[i];
    }
    ck_assert_uint_gt(changed, pixels * 9 / 10); /* the good pixels see the noise */
  }
  free(bad);
  free(first);
  free(frame);
  scene_destroy(s);
}
END_TEST

/* Amplitudes 90..240 counts (3..8 sigmas of 30), sigma 1..2 px, and every plume's step
 * from one frame to the next 0.3..2 px: a row of frame t + 1 is the same plume as one of
 * frame t when it is the only row within 5 px of it and within 2 px + a margin. */
START_TEST(test_hard_plumes_are_faint_and_fast) {
  const int64_t n = 150, h = 128, w = 128;
  scene *s = make(n, h, w, 13, SCENE_HARD);
  rendered r = render_all(s);
  ck_assert_int_gt(r.rows, n);
  int64_t steps = 0, start = 0;
  for (int64_t i = 0; i < r.rows; i++) {
    const scene_truth *a = &r.truth[i];
    ck_assert_msg(a->amplitude >= 90.0 && a->amplitude <= 240.0, "amplitude %g", a->amplitude);
    ck_assert(a->sigma >= 1.0 && a->sigma <= 2.0);
    if (i > 0 && a->frame != r.truth[i - 1].frame) start = i;
    /* the rows of the next frame */
    int64_t next = start;
    while (next < r.rows && r.truth[next].frame == a->frame) next++;
    int near = 0;
    double step = 0;
    for (int64_t j = next; j < r.rows && r.truth[j].frame == a->frame + 1; j++) {
      double d = hypot(r.truth[j].row - a->row, r.truth[j].col - a->col);
      if (d < 5.0) near++, step = d;
    }
    if (near != 1 || step > 2.5) continue;
    ck_assert_msg(step >= 0.3 - 1e-9 && step <= 2.0 + 1e-9, "frame %lld: a step of %g px",
                  (long long)a->frame, step);
    steps++;
  }
  ck_assert_int_gt(steps, r.rows / 2);
  rendered_free(&r);
  scene_destroy(s);
}
END_TEST

START_TEST(test_difficulty_names_and_refusals) {
  scene_difficulty d = SCENE_NORMAL;
  ck_assert(scene_difficulty_parse("hard", &d) && d == SCENE_HARD);
  ck_assert(scene_difficulty_parse("normal", &d) && d == SCENE_NORMAL);
  ck_assert(!scene_difficulty_parse("Hard", &d) && !scene_difficulty_parse("", &d));
  ck_assert(!scene_difficulty_parse(NULL, &d));
  ck_assert_str_eq(scene_difficulty_name(SCENE_HARD), "hard");
  ck_assert_str_eq(scene_difficulty_name(SCENE_NORMAL), "normal");
  scene_config bad = {.frames = 2, .height = 32, .width = 32, .difficulty = (scene_difficulty)2};
  scene *s = NULL;
  ck_assert_int_eq(scene_create(&bad, &s, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "difficulty"));
  ck_assert_ptr_null(s);
  s = make(2, 32, 32, 0, SCENE_NORMAL);
  float gain[32 * 32];
  ck_assert_int_eq(scene_calibration(s, gain, NULL, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "hard"));
  ck_assert_int_eq(scene_calibration(NULL, gain, NULL, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
  double radiance[32 * 32];
  ck_assert_int_eq(scene_render_radiance(s, 2, radiance, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "frame 2"));
  ck_assert_int_eq(scene_render_radiance(s, 0, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
  /* The normal scene's radiance is its frame before the noise: within 3.47 sigma. */
  uint16_t pixels[32 * 32];
  scene_truth truth[64];
  int count = 0;
  ck_assert_int_eq(scene_render_radiance(s, 1, radiance, err, sizeof err), PLM_OK);
  ck_assert_int_eq(scene_render(s, 1, pixels, truth, &count, err, sizeof err), PLM_OK);
  for (int i = 0; i < 32 * 32; i++) ck_assert_double_le(fabs(pixels[i] - radiance[i]), 105.0);
  scene_destroy(s);
}
END_TEST

/* ---- the hard scene's knobs (a family of scenes) ---- */

static scene *make_knobs(int64_t frames, int64_t side, uint64_t seed, scene_knobs knobs) {
  scene_config config = {.frames = frames,
                         .height = side,
                         .width = side,
                         .seed = seed,
                         .difficulty = SCENE_HARD,
                         .knobs = knobs};
  scene *s = NULL;
  ck_assert_msg(scene_create(&config, &s, err, sizeof err) == PLM_OK, "%s", err);
  return s;
}

static uint64_t rendered_hash(const scene *s) {
  scene_config c = scene_get_config(s);
  rendered r = render_all(s);
  uint64_t hash = fnv1a(r.pixels, (size_t)(c.frames * c.height * c.width) * sizeof *r.pixels,
                        0xcbf29ce484222325ull);
  hash = fnv1a(r.truth, (size_t)r.rows * sizeof *r.truth, hash);
  rendered_free(&r);
  return hash;
}

/* Every knob at its default value gives the scene of no knobs, byte for byte. */
START_TEST(test_knobs_at_their_defaults_change_nothing) {
  scene *plain = make(20, 96, 96, 5, SCENE_HARD);
  scene *ones =
      make_knobs(20, 96, 5, (scene_knobs){.clutter = 1, .clutter_speed = 1, .defects = 1});
  ck_assert_uint_eq(rendered_hash(plain), rendered_hash(ones));
  scene *more = make_knobs(20, 96, 5, (scene_knobs){.defects = 2});
  ck_assert_uint_ne(rendered_hash(plain), rendered_hash(more));
  scene_destroy(plain);
  scene_destroy(ones);
  scene_destroy(more);
}
END_TEST

/* plume_sigmas sets the peaks A(t), flicker included, within min..max noise sigmas of 30
 * counts, spread over the range; one value when the range is narrower than the flicker. */
START_TEST(test_knob_plume_strength) {
  scene *s = make_knobs(150, 128, 13, (scene_knobs){.plume_sigmas = {2, 4}});
  rendered r = render_all(s);
  ck_assert_int_gt(r.rows, 150);
  int64_t low = 0, high = 0;
  for (int64_t i = 0; i < r.rows; i++) {
    double a = r.truth[i].amplitude;
    ck_assert_msg(a >= 60.0 - 1e-9 && a <= 120.0 + 1e-9, "amplitude %g", a);
    low += a < 75.0;
    high += a > 100.0;
  }
  ck_assert_int_gt(low, 0);
  ck_assert_int_gt(high, 0);
  rendered_free(&r);
  scene_destroy(s);
  s = make_knobs(60, 64, 13, (scene_knobs){.plume_sigmas = {5, 5}});
  r = render_all(s);
  ck_assert_int_gt(r.rows, 0);
  for (int64_t i = 0; i < r.rows; i++)
    ck_assert_double_le(fabs(r.truth[i].amplitude - 150.0), 150.0 * 0.08 + 1e-9);
  rendered_free(&r);
  scene_destroy(s);
}
END_TEST

/* defects scales the dead and hot pixels: 10 times 0.1% of 65,536 is 655 expected. */
START_TEST(test_knob_defects) {
  scene *s = make_knobs(1, 256, 8, (scene_knobs){.defects = 10});
  uint8_t *bad = malloc(256 * 256);
  ck_assert_int_eq(scene_calibration(s, NULL, NULL, bad, err, sizeof err), PLM_OK);
  size_t n_bad = 0;
  for (size_t i = 0; i < 256 * 256; i++) n_bad += bad[i];
  ck_assert_msg(n_bad >= 550 && n_bad <= 760, "%zu bad pixels", n_bad);
  free(bad);
  scene_destroy(s);
}
END_TEST

/* clutter adds discs after the default ones (the radiance only rises, over at least the
 * three extra discs' area), and clutter_speed moves them faster from the same start. */
START_TEST(test_knob_clutter_and_its_speed) {
  const int64_t side = 256;
  const size_t pixels = (size_t)(side * side);
  double *one = malloc(pixels * sizeof *one), *four = malloc(pixels * sizeof *four);
  scene *a = make_knobs(41, side, 3, (scene_knobs){0});
  scene *b = make_knobs(41, side, 3, (scene_knobs){.clutter = 4});
  ck_assert_int_eq(scene_render_radiance(a, 0, one, err, sizeof err), PLM_OK);
  ck_assert_int_eq(scene_render_radiance(b, 0, four, err, sizeof err), PLM_OK);
  size_t brighter = 0;
  for (size_t i = 0; i < pixels; i++) {
    ck_assert_double_ge(four[i] - one[i], -1e-6);
    brighter += four[i] - one[i] > 100.0;
  }
  ck_assert_uint_ge(brighter, 3 * 100);
  /* How much the radiance changes in 10 frames: the clouds barely move, the discs do. */
  double moved[2];
  for (int k = 0; k < 2; k++) {
    scene *s = make_knobs(11, side, 3, (scene_knobs){.clutter_speed = k ? 4 : 1});
    ck_assert_int_eq(scene_render_radiance(s, 0, one, err, sizeof err), PLM_OK);
    ck_assert_int_eq(scene_render_radiance(s, 10, four, err, sizeof err), PLM_OK);
    moved[k] = 0;
    for (size_t i = 0; i < pixels; i++) moved[k] += fabs(four[i] - one[i]);
    scene_destroy(s);
  }
  ck_assert_msg(moved[1] > 2.0 * moved[0], "changed %g at speed 1, %g at speed 4", moved[0],
                moved[1]);
  free(one);
  free(four);
  scene_destroy(a);
  scene_destroy(b);
}
END_TEST

START_TEST(test_knob_refusals) {
  const scene_knobs bad[] = {{.clutter = 17},           {.clutter = -1},
                             {.clutter = NAN},          {.clutter_speed = 20},
                             {.defects = 101},          {.plume_sigmas = {4, 2}},
                             {.plume_sigmas = {2, 0}},  {.plume_sigmas = {0.1, 2}},
                             {.plume_sigmas = {2, 200}}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    scene_config c = {
        .frames = 2, .height = 32, .width = 32, .difficulty = SCENE_HARD, .knobs = bad[i]};
    scene *s = NULL;
    ck_assert_int_eq(scene_create(&c, &s, err, sizeof err), PLM_ERR_INVALID_ARG);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(err, "scene:"));
  }
  scene_config normal = {.frames = 2, .height = 32, .width = 32, .knobs = {.clutter = 2}};
  scene *s = NULL;
  ck_assert_int_eq(scene_create(&normal, &s, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "hard"));
}
END_TEST

static Suite *scene_suite(void) {
  Suite *suite = suite_create("scene");
  TCase *tcase = tcase_create("scene");
  tcase_set_timeout(tcase, 120);
  /* The determinism tests run on both difficulties (_i). */
  tcase_add_loop_test(tcase, test_same_seed_same_bytes_and_truth, SCENE_NORMAL, SCENE_HARD + 1);
  tcase_add_loop_test(tcase, test_different_seed_different_scene, SCENE_NORMAL, SCENE_HARD + 1);
  tcase_add_loop_test(tcase, test_frames_in_any_order_and_a_short_scene_starts_a_long_one,
                      SCENE_NORMAL, SCENE_HARD + 1);
  tcase_add_loop_test(tcase, test_threads_render_the_same_frames, SCENE_NORMAL, SCENE_HARD + 1);
  tcase_add_test(tcase, test_known_scene_hashes);
  tcase_add_test(tcase, test_truth_is_inside_and_marks_bright_spots);
  tcase_add_test(tcase, test_values_stay_within_14_bits_and_vary);
  tcase_add_test(tcase, test_truth_rows_print_with_four_decimals);
  tcase_add_test(tcase, test_bad_arguments_are_refused);
  tcase_add_test(tcase, test_hard_scene_differs_from_the_normal_one);
  tcase_add_test(tcase, test_hard_calibration_recovers_the_radiance);
  tcase_add_test(tcase, test_hard_bad_pixels_are_stuck);
  tcase_add_test(tcase, test_hard_plumes_are_faint_and_fast);
  tcase_add_test(tcase, test_difficulty_names_and_refusals);
  tcase_add_test(tcase, test_knobs_at_their_defaults_change_nothing);
  tcase_add_test(tcase, test_knob_plume_strength);
  tcase_add_test(tcase, test_knob_defects);
  tcase_add_test(tcase, test_knob_clutter_and_its_speed);
  tcase_add_test(tcase, test_knob_refusals);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  SRunner *runner = srunner_create(scene_suite());
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

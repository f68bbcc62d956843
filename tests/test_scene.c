/* tests/test_scene.c: the synthetic infrared scene (tools/scene.h).
 *
 * Determinism (the same seed gives the same bytes, frames drawn in any order or from
 * any thread are the same, a short scene is the start of a long one, and a fixed scene
 * hashes to a value recorded here, so a machine or compiler that computes other bits
 * fails), different seeds give different scenes, the truth is consistent with the
 * frames (inside the image, one row per drawn plume, a bright spot where it says), the
 * values stay within 14 bits, and bad arguments are refused with a message. A plain
 * unit test: no context or backend is involved.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/scene.h"

static char err[SCENE_ERROR_SIZE];

static scene *make(int64_t frames, int64_t height, int64_t width, uint64_t seed) {
  scene_config config = {.frames = frames, .height = height, .width = width, .seed = seed};
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
  scene *a = make(12, 64, 80, 7), *b = make(12, 64, 80, 7);
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
  scene *a = make(4, 64, 64, 1), *b = make(4, 64, 64, 2);
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
  scene *longer = make(40, 48, 48, 3), *shorter = make(15, 48, 48, 3);
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
  scene *s = make(10, 64, 64, 11);
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
 * compiler computes different bits (a bug: see "determinism" in tools/scene.h). */
START_TEST(test_known_scene_hashes) {
  static const struct {
    int64_t frames, height, width;
    uint64_t seed, pixels_hash, truth_hash;
  } known[] = {
      {8, 96, 128, 1, 0x39cb2ec6dd1f309cull, 0x7def2df689ff60e2ull},
      {3, 256, 256, 12345678901234567ull, 0x6013f6cfa4360c19ull, 0xea7c41c67f285651ull},
  };
  for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
    scene *s = make(known[k].frames, known[k].height, known[k].width, known[k].seed);
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
  scene *s = make(n, h, w, 5);
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
  scene *s = make(6, 200, 120, 9);
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

  s = make(2, 32, 32, 0);
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

static Suite *scene_suite(void) {
  Suite *suite = suite_create("scene");
  TCase *tcase = tcase_create("scene");
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_same_seed_same_bytes_and_truth);
  tcase_add_test(tcase, test_different_seed_different_scene);
  tcase_add_test(tcase, test_frames_in_any_order_and_a_short_scene_starts_a_long_one);
  tcase_add_test(tcase, test_threads_render_the_same_frames);
  tcase_add_test(tcase, test_known_scene_hashes);
  tcase_add_test(tcase, test_truth_is_inside_and_marks_bright_spots);
  tcase_add_test(tcase, test_values_stay_within_14_bits_and_vary);
  tcase_add_test(tcase, test_truth_rows_print_with_four_decimals);
  tcase_add_test(tcase, test_bad_arguments_are_refused);
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

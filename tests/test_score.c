/* tests/test_score.c: scoring detections against truth (support/score.h) and the CSV
 * reader under it (support/csv.h).
 *
 * Hand-made cases with known answers: exact matches, misses, false alarms, two
 * detections of one plume, the radius's edge (inclusive) with the default and a fixed
 * radius, frames kept apart, unsorted input, empty input; the counts of each frame and the
 * JSON document of `plume score --json` (read back with jansson); then the files: columns in
 * any order, the centroid used where the weighted one is NaN, and every kind of bad
 * file refused with "PATH:LINE: ..." (and never a crash). Then the grid that finds the
 * candidate pairs against a plain test of all pairs kept here (reference_match): random
 * cases of many seeds, extreme values, and large cases. A plain unit test: no context or
 * backend is involved.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/csv.h"
#include "support/score.h"
#include "kernels/common/splitmix64.h"

static char err[SCORE_ERROR_SIZE];
static char dir[SCRATCH_DIR_SIZE];

static void make_dir(void) {
  scratch_dir_make(dir, "score");
}

static void remove_dir(void) {
  scratch_dir_remove(dir);
}

/* Write text to a file of the test directory; returns its path. */
static const char *file_with(const char *name, const char *text) {
  static char paths[4][512];
  static int next;
  char *path = paths[next++ % 4];
  snprintf(path, 512, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
  ck_assert_int_eq(fclose(f), 0);
  return path;
}

static score_result match(const score_truth *t, int64_t nt, const score_detection *d, int64_t nd,
                          double radius) {
  score_result r;
  ck_assert_msg(score_match(t, nt, d, nd, radius, &r, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(r.truths, nt);
  ck_assert_int_eq(r.detections, nd);
  ck_assert_int_eq(r.true_positives + r.false_positives, nd);
  ck_assert_int_eq(r.true_positives + r.false_negatives, nt);
  return r;
}

/* ---- matching ---------------------------------------------------------------------------- */

START_TEST(test_exact_matches) {
  score_truth t[] = {{0, 10, 10, 1.5}, {0, 50, 60, 2}, {1, 20, 30, 1}};
  score_detection d[] = {{1, 20, 30}, {0, 50, 60}, {0, 10, 10}};
  score_result r = match(t, 3, d, 3, SCORE_RADIUS_DEFAULT);
  ck_assert_int_eq(r.true_positives, 3);
  ck_assert_int_eq(r.false_positives, 0);
  ck_assert_int_eq(r.false_negatives, 0);
  ck_assert_double_eq(r.precision, 1.0);
  ck_assert_double_eq(r.recall, 1.0);
  ck_assert_double_eq(r.mean_error, 0.0);
  ck_assert_double_eq(r.max_error, 0.0);
}
END_TEST

/* score_skip_frames drops the rows of frames before the first kept, in order. */
START_TEST(test_skip_frames_leaves_early_frames_out) {
  score_truth truth[4] = {{0, 1, 1, 1}, {2, 2, 2, 1}, {1, 3, 3, 1}, {3, 4, 4, 1}};
  score_detection detections[3] = {{1, 3, 3}, {3, 4, 4}, {0, 9, 9}};
  int64_t n_truth = 4, n_detections = 3;
  score_skip_frames(truth, &n_truth, detections, &n_detections, 2);
  ck_assert_int_eq(n_truth, 2);
  ck_assert_int_eq(truth[0].frame, 2);
  ck_assert_int_eq(truth[1].frame, 3);
  ck_assert_int_eq(n_detections, 1);
  ck_assert_int_eq(detections[0].frame, 3);
  score_skip_frames(truth, &n_truth, detections, &n_detections, 0); /* nothing to drop */
  ck_assert_int_eq(n_truth, 2);
  score_skip_frames(truth, &n_truth, detections, &n_detections, 100);
  ck_assert_int_eq(n_truth, 0);
  ck_assert_int_eq(n_detections, 0);
}
END_TEST

START_TEST(test_misses_and_false_alarms) {
  score_truth t[] = {{0, 10, 10, 1}, {0, 40, 40, 1}, {0, 70, 70, 1}, {2, 5, 5, 1}};
  /* One hit 1 px off (a 3-4-5 triangle scaled: 0.6, 0.8), one false alarm far away,
   * one in a frame without truth. */
  score_detection d[] = {{0, 40.6, 40.8}, {0, 100, 100}, {1, 10, 10}};
  score_result r = match(t, 4, d, 3, SCORE_RADIUS_DEFAULT);
  ck_assert_int_eq(r.true_positives, 1);
  ck_assert_int_eq(r.false_positives, 2);
  ck_assert_int_eq(r.false_negatives, 3);
  ck_assert_double_eq_tol(r.precision, 1.0 / 3.0, 1e-15);
  ck_assert_double_eq_tol(r.recall, 0.25, 1e-15);
  ck_assert_double_eq_tol(r.mean_error, 1.0, 1e-12);
}
END_TEST

START_TEST(test_two_detections_of_one_plume) {
  /* The closer detection matches; the other is a false positive, even though it is
   * within the radius too. */
  score_truth t[] = {{0, 20, 20, 2}};
  score_detection d[] = {{0, 22, 20}, {0, 20, 20.5}};
  score_result r = match(t, 1, d, 2, SCORE_RADIUS_DEFAULT);
  ck_assert_int_eq(r.true_positives, 1);
  ck_assert_int_eq(r.false_positives, 1);
  ck_assert_int_eq(r.false_negatives, 0);
  ck_assert_double_eq(r.mean_error, 0.5);
  ck_assert_double_eq(r.precision, 0.5);
}
END_TEST

START_TEST(test_closest_pairs_first_one_to_one) {
  /* Two plumes 4 px apart, two detections between them: d0 is 0.5 from A, d1 is 1.9
   * from A and 2.1 from B. Closest first: (A, d0), then d1 must go to B. */
  score_truth t[] = {{0, 0, 10, 1}, {0, 0, 14, 1}};
  score_detection d[] = {{0, 0, 9.5}, {0, 0, 11.9}};
  score_result r = match(t, 2, d, 2, SCORE_RADIUS_DEFAULT);
  ck_assert_int_eq(r.true_positives, 2);
  ck_assert_double_eq_tol(r.mean_error, (0.5 + 2.1) / 2, 1e-12);
  ck_assert_double_eq_tol(r.max_error, 2.1, 1e-12);
  /* One detection between two plumes matches the closer one only. */
  score_detection one[] = {{0, 0, 12.5}};
  r = match(t, 2, one, 1, SCORE_RADIUS_DEFAULT);
  ck_assert_int_eq(r.true_positives, 1);
  ck_assert_int_eq(r.false_negatives, 1);
  ck_assert_double_eq(r.mean_error, 1.5);
}
END_TEST

START_TEST(test_radius_edge_is_inclusive) {
  /* sigma 1: radius max(3, 2) = 3; sigma 2.5: radius 5. Distances 3 and 5 are exact
   * (3-4-5 triangles), just beyond them is out. */
  score_truth small[] = {{0, 10, 10, 1}};
  score_detection at3[] = {{0, 13, 10}}, beyond3[] = {{0, 13.000001, 10}};
  ck_assert_int_eq(match(small, 1, at3, 1, SCORE_RADIUS_DEFAULT).true_positives, 1);
  ck_assert_int_eq(match(small, 1, beyond3, 1, SCORE_RADIUS_DEFAULT).true_positives, 0);
  score_truth large[] = {{0, 10, 10, 2.5}};
  score_detection at5[] = {{0, 13, 14}}, beyond5[] = {{0, 13, 14.00001}};
  ck_assert_int_eq(match(large, 1, at5, 1, SCORE_RADIUS_DEFAULT).true_positives, 1);
  ck_assert_int_eq(match(large, 1, beyond5, 1, SCORE_RADIUS_DEFAULT).true_positives, 0);
  /* A fixed radius replaces the default for every plume. */
  ck_assert_int_eq(match(large, 1, at5, 1, 4.9).true_positives, 0);
  ck_assert_int_eq(match(small, 1, at3, 1, 3.0).true_positives, 1);
  ck_assert_int_eq(match(small, 1, at3, 1, 2.99).true_positives, 0);
  ck_assert_int_eq(match(small, 1, beyond3, 1, 10).true_positives, 1);
}
END_TEST

START_TEST(test_frames_are_kept_apart_and_order_does_not_matter) {
  score_truth t[] = {{5, 10, 10, 1}, {0, 10, 10, 1}, {3, 10, 10, 1}, {0, 30, 30, 1}};
  score_detection d[] = {{3, 10.5, 10}, {0, 30, 31}, {4, 10, 10}, {0, 10, 10}};
  score_result r = match(t, 4, d, 4, SCORE_RADIUS_DEFAULT);
  ck_assert_int_eq(r.true_positives, 3);  /* frames 0 (twice) and 3 */
  ck_assert_int_eq(r.false_positives, 1); /* frame 4 */
  ck_assert_int_eq(r.false_negatives, 1); /* frame 5 */
  ck_assert_double_eq_tol(r.mean_error, 0.5, 1e-15);
}
END_TEST

START_TEST(test_empty_inputs) {
  score_result r = match(NULL, 0, NULL, 0, SCORE_RADIUS_DEFAULT);
  ck_assert_double_eq(r.precision, 1.0);
  ck_assert_double_eq(r.recall, 1.0);
  ck_assert(isnan(r.mean_error) && isnan(r.max_error));
  score_truth t[] = {{0, 1, 1, 1}};
  r = match(t, 1, NULL, 0, SCORE_RADIUS_DEFAULT);
  ck_assert_double_eq(r.precision, 1.0);
  ck_assert_double_eq(r.recall, 0.0);
  score_detection d[] = {{0, 1, 1}};
  r = match(NULL, 0, d, 1, SCORE_RADIUS_DEFAULT);
  ck_assert_double_eq(r.precision, 0.0);
  ck_assert_double_eq(r.recall, 1.0);
}
END_TEST

/* Frames 0 (two plumes, one found), 1 (a plume missed), 2 (a false alarm), 3 (found): each
 * frame's counts, in frame order, adding up to the totals. */
START_TEST(test_counts_of_each_frame) {
  score_truth t[] = {{3, 5, 5, 1}, {0, 10, 10, 1}, {1, 7, 7, 1}, {0, 40, 40, 1}};
  score_detection d[] = {{2, 9, 9}, {0, 10, 11}, {3, 5, 6}};
  score_result r;
  score_frame *frames = NULL;
  int64_t n = 0;
  ck_assert_msg(score_match_frames(t, 4, d, 3, SCORE_RADIUS_DEFAULT, &r, &frames, &n, err,
                                   sizeof err) == PLM_OK,
                "%s", err);
  const score_frame want[] = {{0, 2, 1, 1}, {1, 1, 0, 0}, {2, 0, 1, 0}, {3, 1, 1, 1}};
  ck_assert_int_eq(n, 4);
  for (int k = 0; k < 4; k++)
    ck_assert_msg(memcmp(&frames[k], &want[k], sizeof want[k]) == 0,
                  "frame %d: %lld truths, %lld detections, %lld true positives", k,
                  (long long)frames[k].truths, (long long)frames[k].detections,
                  (long long)frames[k].true_positives);
  ck_assert_int_eq(r.true_positives, 2);
  free(frames);
  /* Nothing at all: no frames, no allocation. */
  ck_assert_int_eq(score_match_frames(NULL, 0, NULL, 0, 2.0, &r, &frames, &n, err, sizeof err),
                   PLM_OK);
  ck_assert(frames == NULL && n == 0);
  ck_assert_int_eq(score_match_frames(t, 4, d, 3, 2.0, &r, &frames, NULL, err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err, "n_frames is NULL") != NULL, "%s", err);
}
END_TEST

/* score_result_print_json's document, read back: every figure, null for the centroid
 * errors when nothing matched, the radius as a number or the default rule's text. */
static json_t *json_of(const score_result *r, const score_frame *frames, int64_t n, double radius,
                       int64_t skipped) {
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  ck_assert_msg(score_result_print_json(f, r, frames, n, radius, skipped, err, sizeof err) ==
                    PLM_OK,
                "%s", err);
  rewind(f);
  json_error_t error;
  json_t *doc = json_loadf(f, 0, &error);
  fclose(f);
  ck_assert_msg(doc != NULL, "not JSON: %s (line %d)", error.text, error.line);
  return doc;
}

static int64_t json_count(const json_t *object, const char *key) {
  const json_t *value = json_object_get(object, key);
  ck_assert_msg(json_is_integer(value), "%s is not an integer", key);
  return (int64_t)json_integer_value(value);
}

START_TEST(test_json_document) {
  score_truth t[] = {{0, 10, 10, 1}, {1, 7, 7, 1}};
  score_detection d[] = {{0, 10, 13}, {2, 9, 9}};
  score_result r;
  score_frame *frames = NULL;
  int64_t n = 0;
  ck_assert_int_eq(score_match_frames(t, 2, d, 2, 5.0, &r, &frames, &n, err, sizeof err), PLM_OK);
  json_t *doc = json_of(&r, frames, n, 5.0, 4);
  ck_assert_double_eq(json_real_value(json_object_get(doc, "radius")), 5.0);
  ck_assert_int_eq(json_count(doc, "skipped_frames"), 4);
  ck_assert_int_eq(json_count(doc, "truths"), 2);
  ck_assert_int_eq(json_count(doc, "detections"), 2);
  ck_assert_int_eq(json_count(doc, "true_positives"), 1);
  ck_assert_int_eq(json_count(doc, "false_positives"), 1);
  ck_assert_int_eq(json_count(doc, "false_negatives"), 1);
  ck_assert_double_eq(json_real_value(json_object_get(doc, "precision")), 0.5);
  ck_assert_double_eq(json_real_value(json_object_get(doc, "recall")), 0.5);
  ck_assert_double_eq(json_real_value(json_object_get(doc, "mean_error_px")), 3.0);
  ck_assert_double_eq(json_real_value(json_object_get(doc, "max_error_px")), 3.0);
  const json_t *list = json_object_get(doc, "frames");
  ck_assert_int_eq(json_array_size(list), 3);
  const int64_t want[3][6] = {{0, 1, 1, 1, 0, 0}, {1, 1, 0, 0, 0, 1}, {2, 0, 1, 0, 1, 0}};
  static const char *const keys[6] = {"frame",          "truths",          "detections",
                                      "true_positives", "false_positives", "false_negatives"};
  for (size_t k = 0; k < 3; k++)
    for (int c = 0; c < 6; c++)
      ck_assert_msg(json_count(json_array_get(list, k), keys[c]) == want[k][c],
                    "frames[%zu].%s", k, keys[c]);
  json_decref(doc);
  free(frames);
  /* Nothing matched: the errors are null; the default radius is its rule. */
  ck_assert_int_eq(score_match_frames(t, 1, d + 1, 1, SCORE_RADIUS_DEFAULT, &r, &frames, &n, err,
                                      sizeof err),
                   PLM_OK);
  doc = json_of(&r, frames, n, SCORE_RADIUS_DEFAULT, 0);
  ck_assert(json_is_null(json_object_get(doc, "mean_error_px")));
  ck_assert(json_is_null(json_object_get(doc, "max_error_px")));
  ck_assert_str_eq(json_string_value(json_object_get(doc, "radius")), "max(3, 2 sigma)");
  json_decref(doc);
  free(frames);
}
END_TEST

START_TEST(test_bad_arguments) {
  score_truth t[] = {{0, 1, 1, 1}};
  score_detection d[] = {{0, 1, 1}};
  score_result r;
  ck_assert_int_eq(score_match(t, 1, d, 1, 0, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(score_match(NULL, 1, d, 1, 0, &r, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "truth"));
  ck_assert_int_eq(score_match(t, 1, NULL, 1, 0, &r, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(score_match(t, -1, d, 1, 0, &r, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(score_match(t, 1, d, 1, -1, &r, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "radius"));
  ck_assert_int_eq(score_match(t, 1, d, 1, INFINITY, &r, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(score_match(t, 1, d, 1, NAN, &r, err, sizeof err), PLM_ERR_INVALID_ARG);
  score_truth bad_t[] = {{-1, 1, 1, 1}};
  ck_assert_int_eq(score_match(bad_t, 1, d, 1, 0, &r, err, sizeof err), PLM_ERR_INVALID_ARG);
  score_truth nan_t[] = {{0, NAN, 1, 1}};
  ck_assert_int_eq(score_match(nan_t, 1, d, 1, 0, &r, err, sizeof err), PLM_ERR_INVALID_ARG);
  score_detection bad_d[] = {{0, 1, INFINITY}};
  ck_assert_int_eq(score_match(t, 1, bad_d, 1, 0, &r, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "detection 0"));
}
END_TEST

/* ---- the grid against all pairs --------------------------------------------------------- */

/* The reference: support/score.h's matching written plainly, as score_match was before its
 * grid. Every pair of one frame within radius, with the distance computed as score_match
 * computes it, sorted by (frame, distance, truth row, detection row) and taken greedily;
 * frames in ascending order, so that the errors add up in score_match's order and the
 * means compare exactly. O(truth x detections). */
typedef struct reference_pair {
  int64_t frame;
  double distance;
  int64_t truth, detection;
} reference_pair;

static int compare_reference_pairs(const void *a, const void *b) {
  const reference_pair *x = a, *y = b;
  if (x->frame != y->frame) return x->frame < y->frame ? -1 : 1;
  if (x->distance != y->distance) return x->distance < y->distance ? -1 : 1;
  if (x->truth != y->truth) return x->truth < y->truth ? -1 : 1;
  return (x->detection > y->detection) - (x->detection < y->detection);
}

static score_result reference_match(const score_truth *t, int64_t nt, const score_detection *d,
                                    int64_t nd, double radius) {
  size_t n = 0, room = 64;
  reference_pair *pairs = malloc(room * sizeof *pairs);
  ck_assert_ptr_nonnull(pairs);
  for (int64_t i = 0; i < nt; i++) {
    double r = radius > 0 ? radius : fmax(SCORE_RADIUS_MIN, SCORE_RADIUS_SIGMAS * t[i].sigma);
    for (int64_t j = 0; j < nd; j++) {
      if (d[j].frame != t[i].frame) continue;
      double dy = d[j].row - t[i].row, dx = d[j].col - t[i].col;
      double distance = sqrt(dy * dy + dx * dx);
      if (!(distance <= r)) continue;
      if (n == room) {
        room *= 2;
        pairs = realloc(pairs, room * sizeof *pairs);
        ck_assert_ptr_nonnull(pairs);
      }
      pairs[n++] = (reference_pair){t[i].frame, distance, i, j};
    }
  }
  qsort(pairs, n, sizeof *pairs, compare_reference_pairs);
  char *truth_taken = calloc((size_t)nt + 1, 1), *detection_taken = calloc((size_t)nd + 1, 1);
  ck_assert(truth_taken && detection_taken);
  int64_t matches = 0;
  double sum = 0, max = 0;
  for (size_t k = 0; k < n; k++) {
    if (truth_taken[pairs[k].truth] || detection_taken[pairs[k].detection]) continue;
    truth_taken[pairs[k].truth] = detection_taken[pairs[k].detection] = 1;
    matches++;
    sum += pairs[k].distance;
    if (pairs[k].distance > max) max = pairs[k].distance;
  }
  free(pairs);
  free(truth_taken);
  free(detection_taken);
  return (score_result){.truths = nt,
                        .detections = nd,
                        .true_positives = matches,
                        .false_positives = nd - matches,
                        .false_negatives = nt - matches,
                        .precision = nd ? (double)matches / (double)nd : 1.0,
                        .recall = nt ? (double)matches / (double)nt : 1.0,
                        .mean_error = matches ? sum / (double)matches : NAN,
                        .max_error = matches ? max : NAN};
}

static bool same_number(double a, double b) {
  return a == b || (isnan(a) && isnan(b));
}

/* score_match must give exactly what the reference gives. */
static void check_against_reference(const score_truth *t, int64_t nt, const score_detection *d,
                                    int64_t nd, double radius, const char *what) {
  score_result got = match(t, nt, d, nd, radius), want = reference_match(t, nt, d, nd, radius);
  ck_assert_msg(
      got.true_positives == want.true_positives && same_number(got.precision, want.precision) &&
          same_number(got.recall, want.recall) && same_number(got.mean_error, want.mean_error) &&
          same_number(got.max_error, want.max_error),
      "%s (radius %g): got TP %lld, errors %.17g %.17g; all pairs give TP %lld, "
      "errors %.17g %.17g",
      what, radius, (long long)got.true_positives, got.mean_error, got.max_error,
      (long long)want.true_positives, want.mean_error, want.max_error);
}

/* splitmix64 (kernels/common/splitmix64.h): the same numbers on every platform. */
static int64_t random_below(uint64_t *state, int64_t n) {
  return (int64_t)(splitmix64_next(state) % (uint64_t)n);
}

/* A position near one of the clusters: mostly on a lattice of whole or half pixels, so
 * that many distances are equal (ties) or fall exactly on a radius (3-4-5 triangles),
 * sometimes anywhere within 8 px. */
static void random_position(uint64_t *state, const double (*clusters)[2], int n_clusters,
                            double *row, double *col) {
  const double *centre = clusters[random_below(state, n_clusters)];
  if (random_below(state, 4) == 0) {
    *row = centre[0] + 16 * splitmix64_unit(state) - 8;
    *col = centre[1] + 16 * splitmix64_unit(state) - 8;
  } else {
    double step = random_below(state, 2) ? 1.0 : 0.5;
    *row = centre[0] + step * (double)(random_below(state, 17) - 8);
    *col = centre[1] + step * (double)(random_below(state, 17) - 8);
  }
}

START_TEST(test_grid_matches_all_pairs_on_random_cases) {
  static const double sigmas[] = {0, 0.5, 1.5, 2, 2.5, 3.25, 4};
  static const double radii[] = {SCORE_RADIUS_DEFAULT, SCORE_RADIUS_DEFAULT, 1, 2.5, 3, 5};
  enum { MAX_ROWS = 120 };
  score_truth t[MAX_ROWS];
  score_detection d[MAX_ROWS];
  for (uint64_t seed = 1; seed <= 2000; seed++) {
    uint64_t state = seed;
    int frames = 1 + (int)random_below(&state, 4);
    int64_t nt = random_below(&state, MAX_ROWS + 1), nd = random_below(&state, MAX_ROWS + 1);
    /* Clusters, some across the cells' edges at 0 and negative coordinates. */
    double clusters[4][2];
    int n_clusters = 1 + (int)random_below(&state, 4);
    for (int c = 0; c < n_clusters; c++)
      for (int axis = 0; axis < 2; axis++)
        clusters[c][axis] =
            (double)(random_below(&state, 64) - 16) * (random_below(&state, 2) ? 3 : 2.5);
    for (int64_t i = 0; i < nt; i++) {
      t[i].frame = random_below(&state, frames);
      random_position(&state, clusters, n_clusters, &t[i].row, &t[i].col);
      t[i].sigma =
          random_below(&state, 3) ? sigmas[random_below(&state, 7)] : 4 * splitmix64_unit(&state);
    }
    for (int64_t j = 0; j < nd; j++) {
      d[j].frame = random_below(&state, frames + 1); /* some in a frame without truth */
      random_position(&state, clusters, n_clusters, &d[j].row, &d[j].col);
    }
    double radius = random_below(&state, 5) ? radii[random_below(&state, 6)]
                                            : 0.1 + 9.9 * splitmix64_unit(&state);
    char what[64];
    snprintf(what, sizeof what, "seed %llu", (unsigned long long)seed);
    check_against_reference(t, nt, d, nd, radius, what);
  }
}
END_TEST

START_TEST(test_grid_matches_all_pairs_at_extremes) {
  /* Huge coordinates (cells past what an int64 holds), a plume whose radius is
   * infinite (2 sigma overflows), one reaching across the frame, pairs far apart. */
  score_truth t[] = {{0, 1e300, -1e300, 1}, {0, -1e300, 1e300, 1},  {0, 1e20, 1e20, 1},
                     {0, 0, 0, 1e308},      {1, 5, 5, 1e6},         {1, 16383, 16383, 1},
                     {2, 1e300, 1e300, 1},  {2, -1e300, -1e300, 1}, {3, 0, 0, 0}};
  score_detection d[] = {{0, 1e300, -1e300},  {0, -1e300 + 1e285, 1e300},
                         {0, 1e20 + 2, 1e20}, {0, 1e20, 1e20 + 4096},
                         {0, 1e308, -1e308},  {1, 0, 0},
                         {1, 16383, 16386},   {1, 1e7, 1e7},
                         {2, -1e300, 1e300},  {2, 1e300, -1e300},
                         {3, 3, 0},           {3, 0, -3}};
  int64_t nt = sizeof t / sizeof *t, nd = sizeof d / sizeof *d;
  check_against_reference(t, nt, d, nd, SCORE_RADIUS_DEFAULT, "extremes, default radius");
  check_against_reference(t, nt, d, nd, 3, "extremes, radius 3");
  check_against_reference(t, nt, d, nd, 1e300, "extremes, radius 1e300");
  check_against_reference(t, nt, d, nd, DBL_MAX, "extremes, radius DBL_MAX");
  /* Tiny radii: differences whose squares underflow to 0 are within any radius. */
  score_truth tiny_t[] = {{0, 1, 1, 0}, {0, 0, 0, 0}, {1, 1e-300, 0, 0}};
  score_detection tiny_d[] = {{0, 1, 1 + 0x1p-52}, {0, 1e-160, 0}, {0, 0, 1e-300},
                              {1, 0, 0},           {1, 2e-300, 0}, {1, 1e-300, 1e-310}};
  nt = sizeof tiny_t / sizeof *tiny_t;
  nd = sizeof tiny_d / sizeof *tiny_d;
  static const double tiny_radii[] = {1e-300, 1e-310, 5e-324, 1e-160, 1e-15};
  for (size_t k = 0; k < sizeof tiny_radii / sizeof *tiny_radii; k++)
    check_against_reference(tiny_t, nt, tiny_d, nd, tiny_radii[k], "tiny radius");
  /* Pairs exactly on the radius, on the cells' edges (cells as wide as a little more
   * than the largest radius). */
  score_truth edge_t[] = {{0, 0, 0, 1}, {0, 6, 6, 1}, {0, -3, 9, 1}, {0, 12, -12, 2.5}};
  score_detection edge_d[] = {{0, 3, 0},  {0, 0, -3}, {0, 6, 3},   {0, 9, 6},
                              {0, -6, 9}, {0, 0, 9},  {0, 15, -8}, {0, 7, -12}};
  check_against_reference(edge_t, 4, edge_d, 8, SCORE_RADIUS_DEFAULT, "edges, default radius");
  check_against_reference(edge_t, 4, edge_d, 8, 3, "edges, radius 3");
  check_against_reference(edge_t, 4, edge_d, 8, 5, "edges, radius 5");
}
END_TEST

START_TEST(test_grid_on_large_frames) {
  /* 3000 plumes and 3000 detections in one frame of 1000 x 1000 px, against all pairs. */
  enum { N = 3000 };
  score_truth *t = malloc(N * sizeof *t);
  score_detection *d = malloc(N * sizeof *d);
  ck_assert(t && d);
  uint64_t state = 19;
  for (int64_t i = 0; i < N; i++) {
    t[i] = (score_truth){0, 1000 * splitmix64_unit(&state), 1000 * splitmix64_unit(&state),
                         3 * splitmix64_unit(&state)};
    d[i] = (score_detection){0, 1000 * splitmix64_unit(&state), 1000 * splitmix64_unit(&state)};
  }
  check_against_reference(t, N, d, N, SCORE_RADIUS_DEFAULT, "3000 x 3000 in one frame");
  /* The same spread over a frame of 16384 x 16384 px with a radius of 3: the grid's
   * memory follows the rows, not the area. */
  for (int64_t i = 0; i < N; i++) {
    t[i].row *= 16.384, t[i].col *= 16.384;
    d[i].row = t[(i * 7) % N].row + 2 * splitmix64_unit(&state);
    d[i].col = t[(i * 7) % N].col - 2 * splitmix64_unit(&state);
  }
  check_against_reference(t, N, d, N, 3, "3000 x 3000 over 16384 x 16384 px");
  free(t);
  free(d);
}
END_TEST

START_TEST(test_grid_on_many_frames) {
  /* 100 frames of 1000 plumes on a 10 px lattice (jittered by eighths of a pixel, exact
   * in binary), rows from the last frame to the first: each plume's detection 1 px to
   * its right matches it, and a second detection 5 px below it (5 px from two plumes,
   * beyond their radius of 3) is a false positive. */
  enum { FRAMES = 100, PER_FRAME = 1000, N = FRAMES * PER_FRAME };
  score_truth *t = malloc(N * sizeof *t);
  score_detection *d = malloc(2 * N * sizeof *d);
  ck_assert(t && d);
  uint64_t state = 23;
  for (int64_t i = 0; i < N; i++) {
    int64_t frame = FRAMES - 1 - i / PER_FRAME, k = i % PER_FRAME;
    double row = 10.0 * (double)(k / 32) + (double)random_below(&state, 9) / 8;
    double col = 10.0 * (double)(k % 32) + (double)random_below(&state, 9) / 8;
    t[i] = (score_truth){frame, row, col, 1.5};
    d[2 * i] = (score_detection){frame, row + 5, col};
    d[2 * i + 1] = (score_detection){frame, row, col + 1};
  }
  score_result r = match(t, N, d, 2 * N, SCORE_RADIUS_DEFAULT);
  ck_assert_int_eq(r.true_positives, N);
  ck_assert_int_eq(r.false_positives, N);
  ck_assert_double_eq(r.mean_error, 1.0);
  ck_assert_double_eq(r.max_error, 1.0);
  free(t);
  free(d);
}
END_TEST

/* ---- files ------------------------------------------------------------------------------- */

START_TEST(test_truth_and_detections_files) {
  const char *truth = file_with("truth.csv",
                                "frame,row,col,amplitude,sigma\n"
                                "0,10.0000,20.0000,500.0000,1.5000\n"
                                "0,40.0000,40.0000,900.0000,2.5000\n"
                                "1,12.5000,8.2500,300.0000,1.2000\n");
  /* Columns of plume detect: the weighted centroid is used, or the centroid where it
   * is NaN; the other columns are ignored. */
  const char *detections =
      file_with("det.csv",
                "frame,label,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col,"
                "sum,max,wcentroid_row,wcentroid_col\n"
                "0,1,9,9,19,11,21,99,99,4500,600,10.5,20\n"
                "0,2,25,38,38,42,42,40,43,0,0,nan,nan\n"
                "1,1,4,12,8,13,9,12.5,8.5,1200,310,12.5,8.25\n"
                "1,2,1,0,0,0,0,0,0,10,10,0,0\n");
  score_truth *t = NULL;
  score_detection *d = NULL;
  int64_t nt = 0, nd = 0;
  ck_assert_msg(score_read_truth(truth, &t, &nt, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_msg(score_read_detections(detections, &d, &nd, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(nt, 3);
  ck_assert_int_eq(nd, 4);
  ck_assert_int_eq(t[2].frame, 1);
  ck_assert_double_eq(t[2].col, 8.25);
  ck_assert_double_eq(t[1].sigma, 2.5);
  ck_assert_double_eq(d[0].row, 10.5);
  ck_assert_double_eq(d[1].col, 43); /* centroid: wcentroid is nan */
  score_result r = match(t, nt, d, nd, SCORE_RADIUS_DEFAULT);
  ck_assert_int_eq(r.true_positives, 3);
  ck_assert_int_eq(r.false_positives, 1);
  ck_assert_int_eq(r.false_negatives, 0);
  ck_assert_double_eq_tol(r.mean_error, (0.5 + 3.0 + 0.0) / 3, 1e-12);
  free(t);
  free(d);
  /* Columns in another order, CRLF line ends, spaces, no newline at the end, and no
   * intensity columns at all (the centroid is used). */
  const char *shuffled =
      file_with("shuffled.csv", "sigma,col,frame,row\r\n 2 ,5,0, 7\r\n1.5,6.5,3,8");
  ck_assert_msg(score_read_truth(shuffled, &t, &nt, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(nt, 2);
  ck_assert_int_eq(t[1].frame, 3);
  ck_assert_double_eq(t[0].row, 7);
  ck_assert_double_eq(t[0].sigma, 2);
  free(t);
  const char *plain = file_with("plain.csv", "frame,centroid_row,centroid_col\n4,1.5,2.5\n");
  ck_assert_msg(score_read_detections(plain, &d, &nd, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(nd, 1);
  ck_assert_double_eq(d[0].col, 2.5);
  free(d);
  /* A header alone is a table of no rows. */
  const char *header = file_with("header.csv", "frame,row,col,amplitude,sigma\n");
  ck_assert_int_eq(score_read_truth(header, &t, &nt, err, sizeof err), PLM_OK);
  ck_assert_int_eq(nt, 0);
  free(t);
}
END_TEST

/* The file must be refused with PLM_ERR_IO and a message holding want. */
static void refused_truth(const char *text, const char *want) {
  const char *path = file_with("bad.csv", text);
  score_truth *t = (score_truth *)&t;
  int64_t n = 7;
  ck_assert_int_eq(score_read_truth(path, &t, &n, err, sizeof err), PLM_ERR_IO);
  ck_assert_msg(strstr(err, want) && strncmp(err, path, strlen(path)) == 0,
                "for %s: expected '%s' in '%s'", text, want, err);
  ck_assert_ptr_null(t);
  ck_assert_int_eq(n, 0);
  ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(test_bad_files_are_refused_with_a_line_number) {
  refused_truth("", "empty");
  refused_truth("frame,row,col,amplitude\n0,1,2,3\n", "no column 'sigma'");
  refused_truth("frame,row,col,sigma\n0,1,2\n", ":2: fewer fields");
  refused_truth("frame,row,col,sigma\n0,1,2,3\n0,1,2,3,4\n", ":3: more fields");
  refused_truth("frame,row,col,sigma\n0,1,x,3\n", ":2: field 3 (col) 'x' is not a number");
  refused_truth("frame,row,col,sigma\n0,1,,3\n", ":2: field 3");
  refused_truth("frame,row,col,sigma\n0,1,2,3\n\n0,1,2,3\n", ":3: empty line");
  refused_truth("frame,row,col,sigma\n-1,1,2,3\n", ":2: frame is not an integer");
  refused_truth("frame,row,col,sigma\n1.5,1,2,3\n", ":2: frame is not an integer");
  refused_truth("frame,row,col,sigma\n0,nan,2,3\n", ":2: row or col is not finite");
  refused_truth("frame,row,col,sigma\n0,1,2,-3\n", ":2: sigma");
  refused_truth("frame,row,col,sigma\n0,1,2,1e999\n", ":2: field 4");
  refused_truth("frame,row,row,sigma\n", ":1: column 'row' appears twice");
  refused_truth("frame,row col,sigma\n", ":1: header field 2");
  refused_truth("frame,,col,sigma\n", ":1: header field 2");
  refused_truth("frame,row,col,sigma\n0,1,2,3 4\n", ":2: field 4");

  const char *path = file_with("nul.csv", "frame,row\n0,1\n");
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  fseek(f, 12, SEEK_SET);
  fputc('\0', f);
  fclose(f);
  score_truth *t = NULL;
  int64_t n = 0;
  ck_assert_int_eq(score_read_truth(path, &t, &n, err, sizeof err), PLM_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "NUL"));
  ck_assert_int_eq(score_read_truth(dir, &t, &n, err, sizeof err), PLM_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
  char missing[512];
  snprintf(missing, sizeof missing, "%s/missing.csv", dir);
  ck_assert_int_eq(score_read_truth(missing, &t, &n, err, sizeof err), PLM_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "cannot open"));
  ck_assert_int_eq(score_read_truth(NULL, &t, &n, err, sizeof err), PLM_ERR_INVALID_ARG);

  score_detection *d = NULL;
  const char *half = file_with("half.csv", "frame,centroid_row,centroid_col,wcentroid_row\n");
  ck_assert_int_eq(score_read_detections(half, &d, &n, err, sizeof err), PLM_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "wcentroid_col"));
  const char *no_centroid = file_with("nocentroid.csv", "frame,wcentroid_row,wcentroid_col\n");
  ck_assert_int_eq(score_read_detections(no_centroid, &d, &n, err, sizeof err), PLM_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "centroid_row"));
  const char *both_nan = file_with("nan.csv",
                                   "frame,centroid_row,centroid_col,wcentroid_row,wcentroid_col\n"
                                   "0,nan,1,nan,nan\n");
  ck_assert_int_eq(score_read_detections(both_nan, &d, &n, err, sizeof err), PLM_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, ":2: the centroid is not finite"));
  ck_assert_ptr_null(d);
}
END_TEST

/* Every prefix of a good file and every single-byte change either reads or is refused
 * with a message; never a crash (run under the sanitizers in CI). */
START_TEST(test_truncated_and_corrupted_files_never_crash) {
  const char *good =
      "frame,label,area,min_row,min_col,max_row,max_col,centroid_row,"
      "centroid_col,sum,max,wcentroid_row,wcentroid_col\n"
      "0,1,9,9,19,11,21,10,20,4500,600,10.5,20\n"
      "2,1,4,12,8,13,9,12.5,8.5,1200,310,12.5,8.25\n";
  size_t length = strlen(good);
  char *text = malloc(length + 1);
  static const char replacements[] = {',', '\n', '\r', ' ', 'x', '-', '.', 'e', '9', '\0'};
  for (size_t cut = 0; cut <= length; cut++) {
    memcpy(text, good, cut);
    text[cut] = '\0';
    score_detection *d = NULL;
    int64_t n = 0;
    plm_status status = score_read_detections(file_with("cut.csv", text), &d, &n, err, sizeof err);
    ck_assert(status == PLM_OK || (status == PLM_ERR_IO && err[0]));
    free(d);
  }
  for (size_t at = 0; at < length; at += 3)
    for (size_t k = 0; k + 1 < sizeof replacements; k++) {
      memcpy(text, good, length + 1);
      text[at] = replacements[k];
      score_detection *d = NULL;
      int64_t n = 0;
      plm_status status =
          score_read_detections(file_with("flip.csv", text), &d, &n, err, sizeof err);
      ck_assert(status == PLM_OK || (status == PLM_ERR_IO && err[0]));
      free(d);
    }
  free(text);
}
END_TEST

START_TEST(test_csv_table_access) {
  const char *path = file_with("t.csv", "a,b_2,C\n1,2,3\n4,5,6\n");
  csv_table table;
  ck_assert_int_eq(csv_read(path, &table, err, sizeof err), PLM_OK);
  ck_assert_int_eq(table.columns, 3);
  ck_assert_int_eq(table.rows, 2);
  ck_assert_int_eq(csv_column(&table, "b_2"), 1);
  ck_assert_int_eq(csv_column(&table, "c"), -1); /* names are case-sensitive */
  ck_assert_int_eq(csv_column(&table, "C"), 2);
  ck_assert_double_eq(csv_value(&table, 1, 2), 6);
  csv_free(&table);
  ck_assert_int_eq(table.columns, 0);
  ck_assert_ptr_null(table.values);
  csv_free(&table);
  ck_assert_int_eq(csv_read(path, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
}
END_TEST

static Suite *score_suite(void) {
  Suite *suite = suite_create("score");
  TCase *matching = tcase_create("matching");
  tcase_add_test(matching, test_exact_matches);
  tcase_add_test(matching, test_misses_and_false_alarms);
  tcase_add_test(matching, test_skip_frames_leaves_early_frames_out);
  tcase_add_test(matching, test_two_detections_of_one_plume);
  tcase_add_test(matching, test_closest_pairs_first_one_to_one);
  tcase_add_test(matching, test_radius_edge_is_inclusive);
  tcase_add_test(matching, test_frames_are_kept_apart_and_order_does_not_matter);
  tcase_add_test(matching, test_empty_inputs);
  tcase_add_test(matching, test_counts_of_each_frame);
  tcase_add_test(matching, test_json_document);
  tcase_add_test(matching, test_bad_arguments);
  suite_add_tcase(suite, matching);
  TCase *grid = tcase_create("grid");
  tcase_set_timeout(grid, 120);
  tcase_add_test(grid, test_grid_matches_all_pairs_on_random_cases);
  tcase_add_test(grid, test_grid_matches_all_pairs_at_extremes);
  tcase_add_test(grid, test_grid_on_large_frames);
  tcase_add_test(grid, test_grid_on_many_frames);
  suite_add_tcase(suite, grid);
  TCase *files = tcase_create("files");
  tcase_add_checked_fixture(files, make_dir, remove_dir);
  tcase_set_timeout(files, 120);
  tcase_add_test(files, test_truth_and_detections_files);
  tcase_add_test(files, test_bad_files_are_refused_with_a_line_number);
  tcase_add_test(files, test_truncated_and_corrupted_files_never_crash);
  tcase_add_test(files, test_csv_table_access);
  suite_add_tcase(suite, files);
  return suite;
}

int main(void) {
  SRunner *runner = srunner_create(score_suite());
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

/* tests/test_score.c: scoring detections against truth (tools/score.h) and the CSV
 * reader under it (tools/csv.h).
 *
 * Hand-made cases with known answers: exact matches, misses, false alarms, two
 * detections of one plume, the radius's edge (inclusive) with the default and a fixed
 * radius, frames kept apart, unsorted input, empty input; then the files: columns in
 * any order, the centroid used where the weighted one is NaN, and every kind of bad
 * file refused with "PATH:LINE: ..." (and never a crash). A plain unit test: no context
 * or backend is involved.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/csv.h"
#include "tools/score.h"

static char err[SCORE_ERROR_SIZE];
static char dir[256];

static void make_dir(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/plume-score-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  char path[512];
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (rmdir(path) != 0) unlink(path);
  }
  closedir(d);
  rmdir(dir);
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
  tcase_add_test(matching, test_two_detections_of_one_plume);
  tcase_add_test(matching, test_closest_pairs_first_one_to_one);
  tcase_add_test(matching, test_radius_edge_is_inclusive);
  tcase_add_test(matching, test_frames_are_kept_apart_and_order_does_not_matter);
  tcase_add_test(matching, test_empty_inputs);
  tcase_add_test(matching, test_bad_arguments);
  suite_add_tcase(suite, matching);
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

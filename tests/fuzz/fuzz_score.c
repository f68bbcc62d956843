/* tests/fuzz/fuzz_score.c: the CSV readers of `plume score` (support/score.h, support/csv.h)
 * on arbitrary bytes.
 *
 * Feeds: the input's first byte picks the reader (its value modulo 3), the rest is the
 * file: 0 score_read_truth, 1 score_read_detections, 2 csv_read.
 * Checks: no crash, hang, leak or undefined behaviour whatever the bytes. A failure is a
 * status with a message and nothing allocated (*out NULL, an empty table). A success
 * keeps the readers' promises: a table's names are non-empty and unique, each found by
 * csv_column, and its values are all readable; truth and detections read are what
 * score_match accepts (it returns PLM_OK on them, with counts that add up), matched
 * against the same rows as detections, or as truth of sigma 1.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_files.h"
#include "support/csv.h"
#include "support/score.h"

static void check_failure(plm_status status, const char *err) {
  if (status == PLM_OK || err[0] == '\0') abort();
}

/* score_match on rows the readers gave: it must take them, and its counts add up. */
static void check_match(const score_truth *truth, int64_t n_truth,
                        const score_detection *detections, int64_t n_detections) {
  char err[SCORE_ERROR_SIZE] = "";
  score_result r;
  if (score_match(truth, n_truth, detections, n_detections, SCORE_RADIUS_DEFAULT, &r, err,
                  sizeof err) != PLM_OK)
    abort();
  if (r.true_positives + r.false_positives != n_detections ||
      r.true_positives + r.false_negatives != n_truth || r.true_positives < 0)
    abort();
}

static void read_truth(const char *path) {
  char err[SCORE_ERROR_SIZE] = "";
  score_truth *truth = NULL;
  int64_t n = -1;
  plm_status status = score_read_truth(path, &truth, &n, err, sizeof err);
  if (status != PLM_OK) {
    check_failure(status, err);
    if (truth || n != 0) abort();
    return;
  }
  score_detection *same = malloc((size_t)(n + 1) * sizeof *same);
  if (!same) abort();
  for (int64_t i = 0; i < n; i++) same[i] = (score_detection){truth[i].frame, truth[i].row, truth[i].col};
  check_match(truth, n, same, n);
  free(same);
  free(truth);
}

static void read_detections(const char *path) {
  char err[SCORE_ERROR_SIZE] = "";
  score_detection *detections = NULL;
  int64_t n = -1;
  plm_status status = score_read_detections(path, &detections, &n, err, sizeof err);
  if (status != PLM_OK) {
    check_failure(status, err);
    if (detections || n != 0) abort();
    return;
  }
  score_truth *same = malloc((size_t)(n + 1) * sizeof *same);
  if (!same) abort();
  for (int64_t i = 0; i < n; i++)
    same[i] = (score_truth){detections[i].frame, detections[i].row, detections[i].col, 1.0};
  check_match(same, n, detections, n);
  free(same);
  free(detections);
}

static void read_table(const char *path) {
  char err[CSV_ERROR_SIZE] = "";
  csv_table table;
  plm_status status = csv_read(path, &table, err, sizeof err);
  if (status != PLM_OK) {
    check_failure(status, err);
    if (table.columns || table.names || table.rows || table.values) abort();
    return;
  }
  if (table.columns < 1 || table.rows < 0) abort();
  for (int c = 0; c < table.columns; c++)
    if (table.names[c][0] == '\0' || csv_column(&table, table.names[c]) != c) abort();
  double sum = 0;
  for (int64_t r = 0; r < table.rows; r++)
    for (int c = 0; c < table.columns; c++) sum += csv_value(&table, r, c);
  (void)sum;
  csv_free(&table);
  csv_free(&table); /* an empty table is a no-op */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const int reader = data[0] % 3;
  const char *path = fuzz_write_file("table.csv", data + 1, size - 1);
  if (reader == 0) read_truth(path);
  if (reader == 1) read_detections(path);
  if (reader == 2) read_table(path);
  return 0;
}

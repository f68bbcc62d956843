/* support/score.c: detections against truth (support/score.h). */
#include "support/score.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/csv.h"
#include "support/quote.h"
#include "support/regular_file.h"

/* ---- matching -------------------------------------------------------------------------- */

/* Indices sorted by (frame, index), through a frame array. */
typedef struct by_frame {
  int64_t frame, index;
} by_frame;

static int compare_by_frame(const void *a, const void *b) {
  const by_frame *x = a, *y = b;
  if (x->frame != y->frame) return x->frame < y->frame ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

typedef struct pair {
  double distance;
  int64_t truth, detection; /* input indices */
} pair;

static int compare_pairs(const void *a, const void *b) {
  const pair *x = a, *y = b;
  if (x->distance != y->distance) return x->distance < y->distance ? -1 : 1;
  if (x->truth != y->truth) return x->truth < y->truth ? -1 : 1;
  return (x->detection > y->detection) - (x->detection < y->detection);
}

/* A detection in the grid of its frame: its cell (support/score.h) and its input index. */
typedef struct cell_entry {
  int64_t row, col, detection;
} cell_entry;

static int compare_cells(const void *a, const void *b) {
  const cell_entry *x = a, *y = b;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  if (x->col != y->col) return x->col < y->col ? -1 : 1;
  return (x->detection > y->detection) - (x->detection < y->detection);
}

typedef struct matcher {
  const score_truth *truth;
  const score_detection *detections;
  double radius;
  bool *truth_taken, *detection_taken;
  pair *pairs;
  size_t pair_count, pair_room;
  cell_entry *cells; /* the detections of the frame, sorted by cell */
  size_t cell_room;
  int64_t matches;
  double error_sum, error_max;
} matcher;

static double radius_of(const matcher *m, const score_truth *t) {
  if (m->radius > 0) return m->radius;
  double r = SCORE_RADIUS_SIGMAS * t->sigma;
  return r > SCORE_RADIUS_MIN ? r : SCORE_RADIUS_MIN;
}

/* How far from a plume, along each axis, a detection may lie and still be within radius
 * as the distance is computed (rounded): a little more than radius, and never less
 * than 2^-500, below which a squared difference may underflow to 0. Infinite for an
 * infinite radius (a sigma near DBL_MAX). */
static double reach_of(double radius) {
  double reach = radius * (1 + 0x1p-20);
  return reach > 0x1p-500 ? reach : 0x1p-500;
}

/* The grid cell of a coordinate (or of a box's edge, which may be infinite):
 * floor(x / side), held within +-2^52 so that it is an exact int64 whatever x is.
 * Monotone in x, which is all that the search relies on. */
static int64_t cell_of(double x, double side) {
  double cell = floor(x / side);
  if (!(cell >= -0x1p52)) cell = -0x1p52;
  if (cell > 0x1p52) cell = 0x1p52;
  return (int64_t)cell;
}

/* The first of cells[from..n) at or after cell (row, col), in their sorted order. */
static size_t cells_from(const cell_entry *cells, size_t from, size_t n, int64_t row, int64_t col) {
  while (from < n) {
    size_t mid = from + (n - from) / 2;
    if (cells[mid].row < row || (cells[mid].row == row && cells[mid].col < col))
      from = mid + 1;
    else
      n = mid;
  }
  return from;
}

/* Add (truth, detection) to the frame's pairs when the detection is within radius. */
static bool consider_pair(matcher *m, int64_t truth_index, double radius, int64_t detection) {
  const score_truth *truth = &m->truth[truth_index];
  const score_detection *det = &m->detections[detection];
  double dy = det->row - truth->row, dx = det->col - truth->col;
  double distance = sqrt(dy * dy + dx * dx);
  if (!(distance <= radius)) return true;
  if (m->pair_count == m->pair_room) {
    size_t room = m->pair_room ? 2 * m->pair_room : 64;
    pair *grown = realloc(m->pairs, room * sizeof *grown);
    if (!grown) return false;
    m->pairs = grown;
    m->pair_room = room;
  }
  m->pairs[m->pair_count++] = (pair){distance, truth_index, detection};
  return true;
}

/* Put the detections d[0..nd) into cells of the given side, sorted by cell. */
static bool fill_cells(matcher *m, const by_frame *d, int64_t nd, double side) {
  if ((size_t)nd > m->cell_room) {
    cell_entry *grown = realloc(m->cells, (size_t)nd * sizeof *grown);
    if (!grown) return false;
    m->cells = grown;
    m->cell_room = (size_t)nd;
  }
  for (int64_t j = 0; j < nd; j++) {
    const score_detection *det = &m->detections[d[j].index];
    m->cells[j] = (cell_entry){cell_of(det->row, side), cell_of(det->col, side), d[j].index};
  }
  qsort(m->cells, (size_t)nd, sizeof *m->cells, compare_cells);
  return true;
}

/* Match the truth rows t[0..nt) to the detections d[0..nd) of one frame. The candidate
 * pairs are those of each plume with the detections of the cells its reach touches:
 * cells are as wide as the largest reach of the frame, so that is a block of about 3 x 3
 * cells, of which only those holding a detection are visited. They include every pair
 * within radius, so the pairs kept are those that testing all pairs would keep. */
static bool match_frame(matcher *m, const by_frame *t, int64_t nt, const by_frame *d, int64_t nd) {
  double side = 0;
  for (int64_t i = 0; i < nt; i++) {
    double reach = reach_of(radius_of(m, &m->truth[t[i].index]));
    if (reach > side) side = reach;
  }
  if (side > DBL_MAX) side = DBL_MAX;
  if (!fill_cells(m, d, nd, side)) return false;
  const cell_entry *cells = m->cells;
  size_t n_cells = (size_t)nd;
  m->pair_count = 0;
  for (int64_t i = 0; i < nt; i++) {
    const score_truth *truth = &m->truth[t[i].index];
    double radius = radius_of(m, truth), reach = reach_of(radius);
    int64_t row_last = cell_of(truth->row + reach, side);
    int64_t col_first = cell_of(truth->col - reach, side);
    int64_t col_last = cell_of(truth->col + reach, side);
    size_t k = cells_from(cells, 0, n_cells, cell_of(truth->row - reach, side), INT64_MIN);
    while (k < n_cells && cells[k].row <= row_last) {
      int64_t row = cells[k].row;
      size_t end = cells_from(cells, k, n_cells, row, col_last + 1);
      for (size_t c = cells_from(cells, k, end, row, col_first); c < end; c++)
        if (!consider_pair(m, t[i].index, radius, cells[c].detection)) return false;
      k = cells_from(cells, end, n_cells, row + 1, INT64_MIN);
    }
  }
  size_t n = m->pair_count;
  if (n > 1) qsort(m->pairs, n, sizeof *m->pairs, compare_pairs);
  for (size_t k = 0; k < n; k++) {
    const pair *p = &m->pairs[k];
    if (m->truth_taken[p->truth] || m->detection_taken[p->detection]) continue;
    m->truth_taken[p->truth] = m->detection_taken[p->detection] = true;
    m->matches++;
    m->error_sum += p->distance;
    if (p->distance > m->error_max) m->error_max = p->distance;
  }
  return true;
}

static plm_status check_inputs(const score_truth *truth, int64_t n_truth,
                               const score_detection *detections, int64_t n_detections,
                               double radius, const score_result *out, char *err, size_t err_size) {
  if (!out) return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "score_match: out is NULL");
  if (n_truth < 0 || n_detections < 0)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "score_match: a negative count");
  if ((n_truth && !truth) || (n_detections && !detections))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "score_match: %s is NULL",
                         n_truth && !truth ? "truth" : "detections");
  if (!(radius >= 0) || !isfinite(radius))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "score_match: radius %g is not a finite number >= 0", radius);
  for (int64_t i = 0; i < n_truth; i++) {
    const score_truth *t = &truth[i];
    if (t->frame < 0 || !isfinite(t->row) || !isfinite(t->col) || !isfinite(t->sigma) ||
        t->sigma < 0)
      return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                           "score_match: truth %lld (frame %lld, %g, %g, sigma %g) is not valid",
                           (long long)i, (long long)t->frame, t->row, t->col, t->sigma);
  }
  for (int64_t i = 0; i < n_detections; i++) {
    const score_detection *d = &detections[i];
    if (d->frame < 0 || !isfinite(d->row) || !isfinite(d->col))
      return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                           "score_match: detection %lld (frame %lld, %g, %g) is not valid",
                           (long long)i, (long long)d->frame, d->row, d->col);
  }
  return PLM_OK;
}

/* The counts of each frame of t[0..nt) and d[0..nd) (both sorted by frame), in frame
 * order, into frames (room for nt + nd); their number. */
static int64_t count_frames(const matcher *m, const by_frame *t, int64_t nt, const by_frame *d,
                            int64_t nd, score_frame *frames) {
  int64_t n = 0, i = 0, j = 0;
  while (i < nt || j < nd) {
    const int64_t frame = j >= nd || (i < nt && t[i].frame < d[j].frame) ? t[i].frame : d[j].frame;
    score_frame f = {.frame = frame};
    for (; i < nt && t[i].frame == frame; i++) {
      f.truths++;
      f.true_positives += m->truth_taken[t[i].index];
    }
    for (; j < nd && d[j].frame == frame; j++) f.detections++;
    frames[n++] = f;
  }
  return n;
}

plm_status score_match(const score_truth *truth, int64_t n_truth, const score_detection *detections,
                       int64_t n_detections, double radius, score_result *out, char *err,
                       size_t err_size) {
  return score_match_frames(truth, n_truth, detections, n_detections, radius, out, NULL, NULL, err,
                            err_size);
}

plm_status score_match_frames(const score_truth *truth, int64_t n_truth,
                              const score_detection *detections, int64_t n_detections,
                              double radius, score_result *out, score_frame **frames,
                              int64_t *n_frames, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (frames) *frames = NULL;
  if (n_frames) *n_frames = 0;
  if (!frames != !n_frames)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "score_match_frames: %s is NULL",
                         frames ? "n_frames" : "frames");
  plm_status status =
      check_inputs(truth, n_truth, detections, n_detections, radius, out, err, err_size);
  if (status != PLM_OK) return status;
  matcher m = {.truth = truth, .detections = detections, .radius = radius};
  by_frame *t = malloc((size_t)(n_truth + 1) * sizeof *t);
  by_frame *d = malloc((size_t)(n_detections + 1) * sizeof *d);
  m.truth_taken = calloc((size_t)n_truth + 1, sizeof *m.truth_taken);
  m.detection_taken = calloc((size_t)n_detections + 1, sizeof *m.detection_taken);
  bool ok = t && d && m.truth_taken && m.detection_taken;
  if (ok) {
    for (int64_t i = 0; i < n_truth; i++) t[i] = (by_frame){truth[i].frame, i};
    for (int64_t i = 0; i < n_detections; i++) d[i] = (by_frame){detections[i].frame, i};
    qsort(t, (size_t)n_truth, sizeof *t, compare_by_frame);
    qsort(d, (size_t)n_detections, sizeof *d, compare_by_frame);
    /* Walk the frames that have both truth and detections. */
    int64_t i = 0, j = 0;
    while (ok && i < n_truth && j < n_detections) {
      if (t[i].frame < d[j].frame) {
        i++;
      } else if (d[j].frame < t[i].frame) {
        j++;
      } else {
        int64_t frame = t[i].frame, i_end = i, j_end = j;
        while (i_end < n_truth && t[i_end].frame == frame) i_end++;
        while (j_end < n_detections && d[j_end].frame == frame) j_end++;
        ok = match_frame(&m, t + i, i_end - i, d + j, j_end - j);
        i = i_end;
        j = j_end;
      }
    }
  }
  score_frame *counts = NULL;
  int64_t n_counts = 0;
  if (ok && frames && n_truth + n_detections > 0) {
    counts = malloc((size_t)(n_truth + n_detections) * sizeof *counts);
    ok = counts != NULL;
    if (ok) n_counts = count_frames(&m, t, n_truth, d, n_detections, counts);
  }
  free(t);
  free(d);
  free(m.truth_taken);
  free(m.detection_taken);
  free(m.pairs);
  free(m.cells);
  if (!ok) {
    free(counts);
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "score_match: out of memory");
  }
  if (frames) {
    *frames = counts;
    *n_frames = n_counts;
  }
  score_result r = {.truths = n_truth,
                    .detections = n_detections,
                    .true_positives = m.matches,
                    .false_positives = n_detections - m.matches,
                    .false_negatives = n_truth - m.matches};
  r.precision = n_detections ? (double)m.matches / (double)n_detections : 1.0;
  r.recall = n_truth ? (double)m.matches / (double)n_truth : 1.0;
  r.mean_error = m.matches ? m.error_sum / (double)m.matches : NAN;
  r.max_error = m.matches ? m.error_max : NAN;
  *out = r;
  return PLM_OK;
}

/* ---- files ----------------------------------------------------------------------------- */

/* The column named name, or a message. */
static plm_status need_column(const char *path, const csv_table *table, const char *name,
                              int *column, char *err, size_t err_size) {
  *column = csv_column(table, name);
  if (*column < 0)
    return path_failure(err, err_size, path, 0, PLM_ERR_IO, "no column '%s' in the header", name);
  return PLM_OK;
}

/* A frame number: a non-negative integer (as a double from the CSV). */
static bool valid_frame(double v) {
  return v >= 0 && v <= 9007199254740992.0 && v == (double)(int64_t)v;
}

plm_status score_read_truth(const char *path, score_truth **out, int64_t *count, char *err,
                            size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!path || !out || !count)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "score_read_truth: %s is NULL",
                         !path  ? "path"
                         : !out ? "out"
                                : "count");
  *out = NULL;
  *count = 0;
  csv_table table;
  plm_status status = csv_read(path, &table, err, err_size);
  if (status != PLM_OK) return status;
  int c_frame, c_row, c_col, c_sigma;
  if ((status = need_column(path, &table, "frame", &c_frame, err, err_size)) != PLM_OK ||
      (status = need_column(path, &table, "row", &c_row, err, err_size)) != PLM_OK ||
      (status = need_column(path, &table, "col", &c_col, err, err_size)) != PLM_OK ||
      (status = need_column(path, &table, "sigma", &c_sigma, err, err_size)) != PLM_OK) {
    csv_free(&table);
    return status;
  }
  score_truth *rows = malloc((size_t)(table.rows + 1) * sizeof *rows);
  if (!rows) {
    csv_free(&table);
    return path_failure(err, err_size, path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int64_t r = 0; r < table.rows; r++) {
    double frame = csv_value(&table, r, c_frame);
    score_truth t = {.row = csv_value(&table, r, c_row),
                     .col = csv_value(&table, r, c_col),
                     .sigma = csv_value(&table, r, c_sigma)};
    const char *bad = !valid_frame(frame)                     ? "frame is not an integer >= 0"
                      : !isfinite(t.row) || !isfinite(t.col)  ? "row or col is not finite"
                      : !isfinite(t.sigma) || !(t.sigma >= 0) ? "sigma is not a number >= 0"
                                                              : NULL;
    if (bad) {
      free(rows);
      csv_free(&table);
      /* Data row r is line r + 2 (the header is line 1). */
      return path_failure(err, err_size, path, r + 2, PLM_ERR_IO, "%s", bad);
    }
    t.frame = (int64_t)frame;
    rows[r] = t;
  }
  *count = table.rows;
  *out = rows;
  csv_free(&table);
  return PLM_OK;
}

plm_status score_detections_of_table(const char *path, const csv_table *table,
                                     score_detection **out, int64_t *count, char *err,
                                     size_t err_size) {
  *out = NULL;
  *count = 0;
  int c_frame, c_row, c_col;
  int c_wrow = csv_column(table, "wcentroid_row"), c_wcol = csv_column(table, "wcentroid_col");
  if ((c_wrow < 0) != (c_wcol < 0))
    return path_failure(err, err_size, path, 0, PLM_ERR_IO, "'%s' without '%s' in the header",
                        c_wrow < 0 ? "wcentroid_col" : "wcentroid_row",
                        c_wrow < 0 ? "wcentroid_row" : "wcentroid_col");
  plm_status status;
  if ((status = need_column(path, table, "frame", &c_frame, err, err_size)) != PLM_OK ||
      (status = need_column(path, table, "centroid_row", &c_row, err, err_size)) != PLM_OK ||
      (status = need_column(path, table, "centroid_col", &c_col, err, err_size)) != PLM_OK)
    return status;
  score_detection *rows = malloc((size_t)(table->rows + 1) * sizeof *rows);
  if (!rows) return path_failure(err, err_size, path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  for (int64_t r = 0; r < table->rows; r++) {
    double frame = csv_value(table, r, c_frame);
    score_detection d = {.row = csv_value(table, r, c_row), .col = csv_value(table, r, c_col)};
    if (c_wrow >= 0) {
      double wrow = csv_value(table, r, c_wrow), wcol = csv_value(table, r, c_wcol);
      if (!isnan(wrow) || !isnan(wcol)) d.row = wrow, d.col = wcol;
    }
    const char *bad = !valid_frame(frame)                    ? "frame is not an integer >= 0"
                      : !isfinite(d.row) || !isfinite(d.col) ? "the centroid is not finite"
                                                             : NULL;
    if (bad) {
      free(rows);
      return path_failure(err, err_size, path, r + 2, PLM_ERR_IO, "%s", bad);
    }
    d.frame = (int64_t)frame;
    rows[r] = d;
  }
  *count = table->rows;
  *out = rows;
  return PLM_OK;
}

plm_status score_read_detections(const char *path, score_detection **out, int64_t *count, char *err,
                                 size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!path || !out || !count)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "score_read_detections: %s is NULL",
                         !path  ? "path"
                         : !out ? "out"
                                : "count");
  *out = NULL;
  *count = 0;
  csv_table table;
  plm_status status = csv_read(path, &table, err, err_size);
  if (status != PLM_OK) return status;
  status = score_detections_of_table(path, &table, out, count, err, err_size);
  csv_free(&table);
  return status;
}

/* ---- printing -------------------------------------------------------------------------- */

void score_result_print(FILE *out, const score_result *r, double radius) {
  if (radius > 0)
    fprintf(out, "radius:            %g px\n", radius);
  else
    fprintf(out, "radius:            max(%g, %g sigma) px\n", SCORE_RADIUS_MIN,
            SCORE_RADIUS_SIGMAS);
  fprintf(out, "truth plumes:      %lld\n", (long long)r->truths);
  fprintf(out, "detections:        %lld\n", (long long)r->detections);
  fprintf(out, "true positives:    %lld\n", (long long)r->true_positives);
  fprintf(out, "false positives:   %lld\n", (long long)r->false_positives);
  fprintf(out, "false negatives:   %lld\n", (long long)r->false_negatives);
  fprintf(out, "precision:         %.4f\n", r->precision);
  fprintf(out, "recall:            %.4f\n", r->recall);
  fprintf(out, "centroid error:    mean %.3f px, max %.3f px\n", r->mean_error, r->max_error);
}

/* A JSON number for x, or null where it is not finite (JSON has no NaN). */
static json_t *json_number_or_null(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

static json_t *frames_json(const score_frame *frames, int64_t n_frames) {
  json_t *list = json_array();
  for (int64_t k = 0; list && k < n_frames; k++) {
    const score_frame *f = &frames[k];
    json_t *item = json_pack("{sI sI sI sI sI sI}", "frame", (json_int_t)f->frame, "truths",
                             (json_int_t)f->truths, "detections", (json_int_t)f->detections,
                             "true_positives", (json_int_t)f->true_positives, "false_positives",
                             (json_int_t)(f->detections - f->true_positives), "false_negatives",
                             (json_int_t)(f->truths - f->true_positives));
    if (!item || json_array_append_new(list, item) != 0) {
      json_decref(list);
      return NULL;
    }
  }
  return list;
}

plm_status score_result_print_json(FILE *out, const score_result *r, const score_frame *frames,
                                   int64_t n_frames, double radius, int64_t skipped_frames,
                                   char *err, size_t err_size) {
  char rule[64];
  snprintf(rule, sizeof rule, "max(%g, %g sigma)", SCORE_RADIUS_MIN, SCORE_RADIUS_SIGMAS);
  json_t *doc = json_pack(
      "{so sI sI sI sI sI sI sf sf so so so}", "radius",
      radius > 0 ? json_real(radius) : json_string(rule), "skipped_frames",
      (json_int_t)skipped_frames, "truths", (json_int_t)r->truths, "detections",
      (json_int_t)r->detections, "true_positives", (json_int_t)r->true_positives,
      "false_positives", (json_int_t)r->false_positives, "false_negatives",
      (json_int_t)r->false_negatives, "precision", r->precision, "recall", r->recall,
      "mean_error_px", json_number_or_null(r->mean_error), "max_error_px",
      json_number_or_null(r->max_error), "frames", frames_json(frames, n_frames));
  if (!doc)
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "the JSON result: out of memory");
  const int failed = json_dumpf(doc, out, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) != 0 ||
                     fputc('\n', out) == EOF;
  json_decref(doc);
  if (failed)
    return quote_failure(err, err_size, PLM_ERR_IO, "writing the JSON result failed");
  return PLM_OK;
}

void score_skip_frames(score_truth *truth, int64_t *n_truth, score_detection *detections,
                       int64_t *n_detections, int64_t first_frame) {
  int64_t kept = 0;
  for (int64_t i = 0; i < *n_truth; i++)
    if (truth[i].frame >= first_frame) truth[kept++] = truth[i];
  *n_truth = kept;
  kept = 0;
  for (int64_t i = 0; i < *n_detections; i++)
    if (detections[i].frame >= first_frame) detections[kept++] = detections[i];
  *n_detections = kept;
}

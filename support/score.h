/* support/score.h: scoring detections against a scene's truth (`plume score`, `plume demo`).
 *
 * Matching, frame by frame: a detection and a truth plume of the same frame may match
 * when the detection's centroid lies within the truth's radius of the plume's centre
 * (Euclidean distance <= radius, in pixels). The radius is max(3, 2 sigma) with the
 * plume's sigma from the truth table (SCORE_RADIUS_DEFAULT), or one fixed radius for
 * all. Among the pairs that may match, the closest is taken first (greedy by distance;
 * ties by truth row, then detection row, in input order), and a truth or detection is
 * taken at most once. Then
 *   TP = matched pairs, FP = detections left over, FN = truth plumes left over,
 *   precision = TP / (TP + FP) (1 when there is no detection),
 *   recall = TP / (TP + FN) (1 when there is no truth),
 *   mean and largest centroid error = the distances of the matched pairs (NaN when
 *   nothing matched).
 * A second detection of an already matched plume is a false positive; a detection in a
 * frame that has no truth rows is a false positive. Rows need not be sorted.
 *
 * Cost: the candidate pairs of a frame come from a grid, not from all truth x detection
 * pairs: the frame's detections are sorted into square cells as wide as its largest
 * radius (a sort, not a dense array, so memory is O(rows) however far apart they lie),
 * and each plume is tested against the detections of the cells around it only. Time
 * is O(n log n) per frame plus the pairs in neighbouring cells: linear-ish for plumes
 * spread over the frame, all pairs only when everything sits within one radius (or one
 * plume's radius spans the frame). The pairs found, and so the result, are exactly
 * those of testing every pair.
 *
 * Files: the truth CSV of `plume scene` (columns frame, row, col, sigma; others such as
 * amplitude are ignored) and a detections CSV as `plume detect` writes it (a frame
 * column and the REGIONS.csv columns of `plume op label`). A detection's position is
 * its intensity-weighted centroid (wcentroid_row, wcentroid_col), or, where that is
 * NaN (an intensity sum of 0) or those columns are absent, its centroid (centroid_row,
 * centroid_col). Columns are found by name, in any order (support/csv.h).
 *
 * Reentrant; no global state.
 */
#ifndef PLUME_SUPPORT_SCORE_H
#define PLUME_SUPPORT_SCORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "support/csv.h"
#include "plume/status.h"

/* radius = 0 asks for the default: max(SCORE_RADIUS_MIN, SCORE_RADIUS_SIGMAS * sigma). */
#define SCORE_RADIUS_DEFAULT 0.0
#define SCORE_RADIUS_MIN 3.0
#define SCORE_RADIUS_SIGMAS 2.0

/* Room for any message of this module. */
enum { SCORE_ERROR_SIZE = 1024 };

typedef struct score_truth {
  int64_t frame;
  double row, col; /* the plume's centre */
  double sigma;    /* its size, for the default radius */
} score_truth;

typedef struct score_detection {
  int64_t frame;
  double row, col; /* the centroid */
} score_detection;

typedef struct score_result {
  int64_t truths, detections;
  int64_t true_positives, false_positives, false_negatives;
  double precision, recall;
  double mean_error, max_error; /* px, over the matches; NaN when none */
} score_result;

/* The counts of one frame: its truth plumes and detections, and how many matched (its
 * false negatives are truths - true_positives, its false positives detections -
 * true_positives). */
typedef struct score_frame {
  int64_t frame;
  int64_t truths, detections, true_positives;
} score_frame;

/* Match detections to truth (see above) with radius (> 0), or SCORE_RADIUS_DEFAULT for
 * the per-plume default. Errors: PLM_ERR_INVALID_ARG (NULL arrays with a count > 0, a
 * negative count, a negative or non-finite radius, a negative frame, a non-finite
 * position or sigma), PLM_ERR_OUT_OF_MEMORY; the message goes into err. */
plm_status score_match(const score_truth *truth, int64_t n_truth, const score_detection *detections,
                       int64_t n_detections, double radius, score_result *out, char *err,
                       size_t err_size);

/* As score_match, and the counts of every frame that has a truth row or a detection, in
 * frame order, into *frames (malloc'd, *n_frames of them; free it with free; NULL when
 * there are none). The frames' counts add up to out's. Errors as score_match's; *frames is
 * NULL on failure. */
plm_status score_match_frames(const score_truth *truth, int64_t n_truth,
                              const score_detection *detections, int64_t n_detections,
                              double radius, score_result *out, score_frame **frames,
                              int64_t *n_frames, char *err, size_t err_size);

/* Read a truth CSV into a malloc'd array (free it with free). Errors: those of csv_read
 * (support/csv.h), and PLM_ERR_IO for a missing column, a frame that is not a
 * non-negative integer, a non-finite row, col or sigma, or a negative sigma, with
 * "PATH:LINE: ..." in err. */
plm_status score_read_truth(const char *path, score_truth **out, int64_t *count, char *err,
                            size_t err_size);

/* Read a detections CSV likewise (see above for the columns used). */
plm_status score_read_detections(const char *path, score_detection **out, int64_t *count, char *err,
                                 size_t err_size);

/* As score_read_detections, from the table csv_read made of path (named in messages), for a
 * caller that reads other columns of the same rows too (plume detect --overlay's boxes, the
 * report's strengths): the rows in the table's order. */
plm_status score_detections_of_table(const char *path, const csv_table *table,
                                     score_detection **out, int64_t *count, char *err,
                                     size_t err_size);

/* Print a result as `plume score` and `plume demo` do, one figure per line ("precision:
 * 0.9950"); radius as given to score_match (SCORE_RADIUS_DEFAULT: the default rule). */
void score_result_print(FILE *out, const score_result *r, double radius);

/* Print a result as the JSON document of `plume score --json` (through jansson, indented,
 * ending in a newline):
 *   {"radius": 5 or "max(3, 2 sigma)", "skipped_frames": N,
 *    "truths": .., "detections": .., "true_positives": .., "false_positives": ..,
 *    "false_negatives": .., "precision": .., "recall": ..,
 *    "mean_error_px": .., "max_error_px": .. (null when nothing matched),
 *    "frames": [{"frame": .., "truths": .., "detections": .., "true_positives": ..,
 *                "false_positives": .., "false_negatives": ..}, ...]}
 * frames as score_match_frames gives them. Errors: PLM_ERR_OUT_OF_MEMORY, PLM_ERR_IO (the
 * write failed), with a message in err. */
plm_status score_result_print_json(FILE *out, const score_result *r, const score_frame *frames,
                                   int64_t n_frames, double radius, int64_t skipped_frames,
                                   char *err, size_t err_size);

/* Leave frames before `first_frame` out of the score (the frames a temporal background
 * needs to settle): drops the truth rows and detections of those frames, keeping the
 * others in their order, and updates the counts. In place; no allocation. */
void score_skip_frames(score_truth *truth, int64_t *n_truth, score_detection *detections,
                       int64_t *n_detections, int64_t first_frame);

#endif /* PLUME_SUPPORT_SCORE_H */

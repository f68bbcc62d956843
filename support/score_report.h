/* support/score_report.h: a detection run's score as one HTML page a person reads
 * (`plume score --report FILE.html`; internal to the tools).
 *
 * The page holds no script and loads nothing: every chart is inline SVG, every picture a
 * PNG in a data: URL, so it opens anywhere and can be mailed. It shows:
 *   - the figures of plume score (support/score.h): truths, detections, true and false
 *     positives, false negatives, precision, recall, F1, centroid errors;
 *   - precision against recall, and the probability of detection (recall) against false
 *     alarms per frame, as a threshold on the detections' strength (their region's max,
 *     the CSV's max column) rises from the weakest detection to the strongest: each point
 *     is score_match over the detections at or above one threshold (up to 48 thresholds,
 *     at the strengths' quantiles). Where the CSV has no max column the curves are left
 *     out and the page says so;
 *   - each frame's true positives, false positives and false negatives over the frames;
 *   - when plume detect's --latency times are given, each frame's latency over the frames
 *     (the time from its read to its rows written) with its median, 99th percentile and
 *     largest;
 *   - the worst frames (the most false positives plus false negatives, up to 6), with their
 *     counts and, when the frames are given, each drawn (support/overlay.h's stretch): the
 *     truth plumes as green circles of the match radius, the detections' centroids as red
 *     crosses.
 * The page is written atomically (support/output_file.h).
 */
#ifndef PLUME_SUPPORT_SCORE_REPORT_H
#define PLUME_SUPPORT_SCORE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "support/csv.h"
#include "support/frame_reader.h"
#include "support/score.h"
#include "plume/status.h"

/* Room for any message of this module. */
enum { SCORE_REPORT_ERROR_SIZE = FRAME_READER_ERROR_SIZE + 512 };

/* The most worst frames shown, and the most thresholds of the curves. */
enum { SCORE_REPORT_WORST = 6, SCORE_REPORT_THRESHOLDS = 48 };

/* Each frame's latency as plume detect --latency writes it (apps/detect.h). */
typedef struct score_latency {
  const char *path; /* named on the page */
  int64_t n;        /* rows */
  double *frame;    /* [n] */
  double *ms;       /* [n], each finite and >= 0 */
} score_latency;

/* Read the times at path (columns frame and latency_ms; others ignored) into *out; free them
 * with score_latency_free. Errors: those of csv_read (PLM_ERR_IO, naming path),
 * PLM_ERR_IO (a column missing, a latency not finite or negative, naming its row),
 * PLM_ERR_OUT_OF_MEMORY. *out is empty on failure. */
plm_status score_latency_read(const char *path, score_latency *out, char *err, size_t err_size);

/* Free what score_latency_read took; an empty one is a no-op. */
void score_latency_free(score_latency *latency);

typedef struct score_report_input {
  const char *truth_path, *detections_path; /* named on the page */
  const score_truth *truth;
  int64_t n_truth;
  const score_detection *detections;
  int64_t n_detections;
  const double *strengths; /* per detection (the region's max), or NULL: no curves */
  double radius;           /* as given to score_match */
  int64_t skipped_frames;  /* frames left out before these (score_skip_frames) */
  frame_reader *frames;    /* the frames, for the worst frames' pictures, or NULL */
  const frame_reader_info *frames_info;
  const score_latency *latency; /* plume detect --latency's times, or NULL */
} score_report_input;

/* Write the page for in to path. Errors: PLM_ERR_INVALID_ARG (inputs score_match
 * refuses), PLM_ERR_IO (the frames could not be read, the page not written),
 * PLM_ERR_OUT_OF_MEMORY; a one-line message in err. Nothing is left at path on failure. */
plm_status score_report_write(const char *path, const score_report_input *in, char *err,
                              size_t err_size);

/* The strength of each detection of a plume detect CSV already read (table: its max
 * column), in the rows' order, into *out (malloc'd, table->rows of them; free it); *out is
 * NULL when the table has no max column. Errors: PLM_ERR_OUT_OF_MEMORY, naming path. */
plm_status score_report_strengths_of_table(const char *path, const csv_table *table, double **out,
                                           char *err, size_t err_size);

#endif /* PLUME_SUPPORT_SCORE_REPORT_H */

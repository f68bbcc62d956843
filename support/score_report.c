/* support/score_report.c: a detection run's score as one HTML page (support/score_report.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/score_report.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/stats.h"
#include "support/csv.h"
#include "support/output_file.h"
#include "support/overlay.h"
#include "support/png_io.h"
#include "support/quote.h"

/* ---- the page, as text ------------------------------------------------------------------ */

typedef struct page {
  char *text;
  size_t length, room;
  bool failed; /* out of memory: the page is dropped */
} page;

static void grow(page *p, size_t more) {
  if (p->failed || p->length + more + 1 <= p->room) return;
  size_t room = p->room ? p->room : 1 << 16;
  while (room < p->length + more + 1) room *= 2;
  char *grown = realloc(p->text, room);
  if (!grown) {
    p->failed = true;
    return;
  }
  p->text = grown;
  p->room = room;
}

static void __attribute__((format(printf, 2, 3))) add(page *p, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list again;
  va_copy(again, args);
  const int n = vsnprintf(NULL, 0, fmt, args);
  va_end(args);
  if (n > 0) grow(p, (size_t)n);
  if (n > 0 && !p->failed) {
    vsnprintf(p->text + p->length, (size_t)n + 1, fmt, again);
    p->length += (size_t)n;
  }
  va_end(again);
}

/* text with HTML's special characters escaped. */
static void add_escaped(page *p, const char *text) {
  for (; *text; text++) switch (*text) {
      case '&': add(p, "&amp;"); break;
      case '<': add(p, "&lt;"); break;
      case '>': add(p, "&gt;"); break;
      case '"': add(p, "&quot;"); break;
      default: add(p, "%c", *text);
    }
}

static void add_base64(page *p, const unsigned char *bytes, size_t n) {
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  grow(p, (n + 2) / 3 * 4);
  if (p->failed) return;
  char *out = p->text + p->length;
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = (uint32_t)bytes[i] << 16 | (i + 1 < n ? (uint32_t)bytes[i + 1] << 8 : 0) |
                       (i + 2 < n ? bytes[i + 2] : 0);
    *out++ = digits[v >> 18 & 63];
    *out++ = digits[v >> 12 & 63];
    *out++ = i + 1 < n ? digits[v >> 6 & 63] : '=';
    *out++ = i + 2 < n ? digits[v & 63] : '=';
  }
  p->length = (size_t)(out - p->text);
  p->text[p->length] = '\0';
}

/* ---- charts ----------------------------------------------------------------------------- */

typedef struct series {
  const char *name, *colour;
  const double *x, *y;
  int64_t n;
} series;

enum { CHART_W = 520, CHART_H = 320, LEFT = 60, RIGHT = 20, TOP = 30, BOTTOM = 50 };

static double chart_x(double x, double x0, double x1) {
  return LEFT + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (CHART_W - LEFT - RIGHT);
}

static double chart_y(double y, double y0, double y1) {
  return CHART_H - BOTTOM - (y1 > y0 ? (y - y0) / (y1 - y0) : 0.5) * (CHART_H - TOP - BOTTOM);
}

/* A line chart of series over [x0, x1] x [y0, y1], with five ticks on each axis. */
static void add_chart(page *p, const char *title, const char *x_label, const char *y_label,
                      const series *s, int count, double x0, double x1, double y0, double y1) {
  add(p, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
         "xmlns=\"http://www.w3.org/2000/svg\">\n", CHART_W, CHART_H, CHART_W, CHART_H);
  add(p, "<text x=\"%d\" y=\"18\" font-weight=\"bold\">%s</text>\n", LEFT, title);
  add(p, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n",
      LEFT, TOP, CHART_W - LEFT - RIGHT, CHART_H - TOP - BOTTOM);
  for (int k = 0; k <= 4; k++) {
    const double x = x0 + (x1 - x0) * k / 4, y = y0 + (y1 - y0) * k / 4;
    add(p, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%.3g</text>\n",
        chart_x(x, x0, x1), CHART_H - BOTTOM + 16, x);
    add(p, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.3g</text>\n",
        LEFT - 6, chart_y(y, y0, y1) + 4, y);
  }
  add(p, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n",
      (CHART_W + LEFT - RIGHT) / 2, CHART_H - 12, x_label);
  add(p, "<text x=\"14\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" "
         "transform=\"rotate(-90 14 %d)\">%s</text>\n", (CHART_H + TOP - BOTTOM) / 2,
      (CHART_H + TOP - BOTTOM) / 2, y_label);
  for (int k = 0; k < count; k++) {
    add(p, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", s[k].colour);
    for (int64_t i = 0; i < s[k].n; i++)
      add(p, "%.1f,%.1f ", chart_x(s[k].x[i], x0, x1), chart_y(s[k].y[i], y0, y1));
    add(p, "\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"%s\">%s</text>\n",
        CHART_W - RIGHT - 120, TOP + 16 + 16 * k, s[k].colour, s[k].name);
  }
  add(p, "</svg>\n");
}

/* ---- the curves ------------------------------------------------------------------------- */

static int compare_doubles(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct curve {
  int64_t n;
  double threshold[SCORE_REPORT_THRESHOLDS];
  double precision[SCORE_REPORT_THRESHOLDS], recall[SCORE_REPORT_THRESHOLDS];
  double alarms_per_frame[SCORE_REPORT_THRESHOLDS];
} curve;

/* Score the detections at or above each threshold: the strengths' quantiles. */
static plm_status sweep(const score_report_input *in, int64_t frames, curve *c, char *err,
                        size_t err_size) {
  c->n = 0;
  const int64_t n = in->n_detections;
  double *sorted = malloc((size_t)(n + 1) * sizeof *sorted);
  score_detection *kept = malloc((size_t)(n + 1) * sizeof *kept);
  plm_status status = sorted && kept ? PLM_OK
                                     : quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY,
                                                     "the report's curves: out of memory");
  int64_t finite = 0;
  for (int64_t i = 0; status == PLM_OK && i < n; i++)
    if (isfinite(in->strengths[i])) sorted[finite++] = in->strengths[i];
  if (status == PLM_OK) qsort(sorted, (size_t)finite, sizeof *sorted, compare_doubles);
  for (int k = 0; status == PLM_OK && finite > 0 && k < SCORE_REPORT_THRESHOLDS; k++) {
    const double t = sorted[(int64_t)((double)(finite - 1) * k / (SCORE_REPORT_THRESHOLDS - 1))];
    if (c->n > 0 && t == c->threshold[c->n - 1]) continue;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
      if (in->strengths[i] >= t) kept[m++] = in->detections[i];
    score_result r;
    status = score_match(in->truth, in->n_truth, kept, m, in->radius, &r, err, err_size);
    if (status != PLM_OK) break;
    c->threshold[c->n] = t;
    c->precision[c->n] = r.precision;
    c->recall[c->n] = r.recall;
    c->alarms_per_frame[c->n] = (double)r.false_positives / (double)frames;
    c->n++;
  }
  free(sorted);
  free(kept);
  return status;
}

/* ---- the worst frames ------------------------------------------------------------------- */

static int64_t errors_of(const score_frame *f) {
  return (f->detections - f->true_positives) + (f->truths - f->true_positives);
}

static int compare_worst(const void *a, const void *b) {
  const score_frame *x = a, *y = b;
  if (errors_of(x) != errors_of(y)) return errors_of(x) > errors_of(y) ? -1 : 1;
  return (x->frame > y->frame) - (x->frame < y->frame);
}

/* Frame k drawn: its truth as circles (green), its detections' centroids as crosses (red),
 * as a PNG in a data: URL. */
static plm_status add_picture(page *p, const score_report_input *in, int64_t k, char *err,
                              size_t err_size) {
  int64_t height = 0, width = 0; /* a folder's frames may differ (frame_reader_allow_shapes) */
  plm_status status = frame_reader_shape(in->frames, k, &height, &width, err, err_size);
  if (status != PLM_OK) return status;
  image frame = {.dtype = in->frames_info->dtype, .ndim = 2, .dims = {height, width}};
  overlay_picture pic = {.height = height, .width = width};
  frame.data = malloc(image_bytes(&frame));
  pic.rgb = malloc((size_t)(3 * height * width));
  status = frame.data && pic.rgb ? frame_reader_read(in->frames, k, frame.data, err, err_size)
                                 : quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY,
                                                 "the report's pictures: out of memory");
  if (status == PLM_OK) status = overlay_render(&frame, &pic, err, err_size);
  void *png = NULL;
  size_t length = 0;
  if (status == PLM_OK) {
    for (int64_t i = 0; i < in->n_truth; i++)
      if (in->truth[i].frame == k)
        overlay_draw_circle(&pic, in->truth[i].row, in->truth[i].col,
                            fmax(SCORE_RADIUS_MIN, SCORE_RADIUS_SIGMAS * in->truth[i].sigma),
                            OVERLAY_TRUTH);
    for (int64_t i = 0; i < in->n_detections; i++)
      if (in->detections[i].frame == k)
        overlay_draw_cross(&pic, in->detections[i].row, in->detections[i].col, 3,
                           OVERLAY_DETECTION);
    status = png_encode_rgb8(pic.height, pic.width, pic.rgb, &png, &length, "the report's picture",
                             err, err_size);
  }
  if (status == PLM_OK) {
    add(p, "<img class=\"frame\" alt=\"frame %lld\" width=\"%lld\" src=\"data:image/png;base64,",
        (long long)k, (long long)(width < 320 ? 320 : width));
    add_base64(p, png, length);
    add(p, "\">");
  }
  free(png);
  free(frame.data);
  free(pic.rgb);
  return status;
}

static plm_status add_worst_frames(page *p, const score_report_input *in, score_frame *frames,
                                   int64_t n_frames, char *err, size_t err_size) {
  qsort(frames, (size_t)n_frames, sizeof *frames, compare_worst);
  add(p, "<h2>Worst frames</h2>\n");
  if (n_frames == 0 || errors_of(&frames[0]) == 0) {
    add(p, "<p>No frame has a false positive or a false negative.</p>\n");
    return PLM_OK;
  }
  if (!in->frames)
    add(p, "<p>Give the frames (<code>--frames</code>) to see them drawn.</p>\n");
  add(p, "<table><tr><th>frame</th><th>truths</th><th>detections</th><th>true positives</th>"
         "<th>false positives</th><th>false negatives</th>%s</tr>\n",
      in->frames ? "<th>regions (red) and truth (green)</th>" : "");
  plm_status status = PLM_OK;
  for (int64_t i = 0; status == PLM_OK && i < n_frames && i < SCORE_REPORT_WORST; i++) {
    const score_frame *f = &frames[i];
    if (errors_of(f) == 0) break;
    add(p, "<tr><td>%lld</td><td>%lld</td><td>%lld</td><td>%lld</td><td>%lld</td><td>%lld</td>",
        (long long)f->frame, (long long)f->truths, (long long)f->detections,
        (long long)f->true_positives, (long long)(f->detections - f->true_positives),
        (long long)(f->truths - f->true_positives));
    if (in->frames) {
      add(p, "<td>");
      status = add_picture(p, in, f->frame, err, err_size);
      add(p, "</td>");
    }
    add(p, "</tr>\n");
  }
  add(p, "</table>\n");
  return status;
}

/* ---- the page --------------------------------------------------------------------------- */

static void add_figures(page *p, const score_report_input *in, const score_result *r) {
  add(p, "<h1>Detections scored</h1>\n<p>truth <code>");
  add_escaped(p, in->truth_path);
  add(p, "</code>, detections <code>");
  add_escaped(p, in->detections_path);
  add(p, "</code>; ");
  if (in->radius > 0)
    add(p, "match radius %g px", in->radius);
  else
    add(p, "match radius max(%g, %g sigma) px", SCORE_RADIUS_MIN, SCORE_RADIUS_SIGMAS);
  if (in->skipped_frames > 0) add(p, "; frames before %lld left out", (long long)in->skipped_frames);
  const double f1 = r->precision + r->recall > 0
                        ? 2 * r->precision * r->recall / (r->precision + r->recall)
                        : 0;
  add(p, ".</p>\n<table class=\"figures\">"
         "<tr><th>truth plumes</th><td>%lld</td></tr><tr><th>detections</th><td>%lld</td></tr>"
         "<tr><th>true positives</th><td>%lld</td></tr>"
         "<tr><th>false positives</th><td>%lld</td></tr>"
         "<tr><th>false negatives</th><td>%lld</td></tr>"
         "<tr><th>precision</th><td>%.4f</td></tr><tr><th>recall</th><td>%.4f</td></tr>"
         "<tr><th>F1</th><td>%.4f</td></tr>",
      (long long)r->truths, (long long)r->detections, (long long)r->true_positives,
      (long long)r->false_positives, (long long)r->false_negatives, r->precision, r->recall, f1);
  if (r->true_positives > 0)
    add(p, "<tr><th>centroid error</th><td>mean %.3f px, max %.3f px</td></tr>", r->mean_error,
        r->max_error);
  add(p, "</table>\n");
}

static void add_curves(page *p, const curve *c) {
  add(p, "<h2>As the threshold on a region's peak rises</h2>\n");
  if (c->n == 0) {
    add(p, "<p>No curves: the detections have no strength (no <code>max</code> column, or no "
           "detection).</p>\n");
    return;
  }
  double most_alarms = 0;
  for (int64_t i = 0; i < c->n; i++) most_alarms = fmax(most_alarms, c->alarms_per_frame[i]);
  const series pr = {"precision-recall", "#1f6fd1", c->recall, c->precision, c->n};
  add_chart(p, "Precision against recall", "recall", "precision", &pr, 1, 0, 1, 0, 1);
  const series roc = {"Pd-Pfa", "#c2410c", c->alarms_per_frame, c->recall, c->n};
  add_chart(p, "Detection against false alarms", "false alarms per frame",
            "probability of detection", &roc, 1, 0, most_alarms > 0 ? most_alarms : 1, 0, 1);
  add(p, "<p>%lld thresholds, from %.6g to %.6g (the strongest detection).</p>\n",
      (long long)c->n, c->threshold[0], c->threshold[c->n - 1]);
}

static plm_status add_frames_chart(page *p, const score_frame *frames, int64_t n) {
  double *x = malloc((size_t)(4 * n + 4) * sizeof *x);
  if (!x) return PLM_ERR_OUT_OF_MEMORY;
  double *tp = x + n + 1, *fp = tp + n + 1, *fn = fp + n + 1, most = 1;
  for (int64_t i = 0; i < n; i++) {
    x[i] = (double)frames[i].frame;
    tp[i] = (double)frames[i].true_positives;
    fp[i] = (double)(frames[i].detections - frames[i].true_positives);
    fn[i] = (double)(frames[i].truths - frames[i].true_positives);
    most = fmax(most, fmax(tp[i], fmax(fp[i], fn[i])));
  }
  const series s[3] = {{"true positives", "#15803d", x, tp, n},
                       {"false positives", "#dc2626", x, fp, n},
                       {"false negatives", "#d97706", x, fn, n}};
  add(p, "<h2>Frame by frame</h2>\n");
  add_chart(p, "Counts of each frame", "frame", "count", s, 3, n ? x[0] : 0, n ? x[n - 1] : 1, 0,
            most);
  free(x);
  return PLM_OK;
}

/* Each frame's latency over the frames, and its median, 99th percentile and largest. */
static plm_status add_latency_chart(page *p, const score_latency *latency) {
  const int64_t n = latency->n;
  add(p, "<h2>Latency over time</h2>\n");
  if (n == 0) {
    add(p, "<p>No frames in ");
    add_escaped(p, latency->path);
    add(p, ".</p>\n");
    return PLM_OK;
  }
  double *sorted = malloc((size_t)n * sizeof *sorted);
  if (!sorted) return PLM_ERR_OUT_OF_MEMORY;
  memcpy(sorted, latency->ms, (size_t)n * sizeof *sorted);
  plm__sort_doubles(sorted, (size_t)n);
  const double median = plm__median_sorted(sorted, (size_t)n),
               p99 = plm__quantile_sorted(sorted, (size_t)n, 0.99), most = sorted[n - 1];
  free(sorted);
  const series s = {"latency", "#7c3aed", latency->frame, latency->ms, n};
  add_chart(p, "Latency of each frame", "frame", "ms", &s, 1, latency->frame[0],
            n > 1 ? latency->frame[n - 1] : latency->frame[0] + 1, 0, most > 0 ? most : 1);
  add(p, "<p>%lld frames from ", (long long)n);
  add_escaped(p, latency->path);
  add(p,
      ": median %.3f ms, 99th percentile %.3f ms, largest %.3f ms (from a frame's read "
      "to its rows written).</p>\n",
      median, p99, most);
  return PLM_OK;
}

plm_status score_latency_read(const char *path, score_latency *out, char *err, size_t err_size) {
  *out = (score_latency){.path = path};
  csv_table table;
  plm_status status = csv_read(path, &table, err, err_size);
  if (status != PLM_OK) return status;
  const int frame = csv_column(&table, "frame"), ms = csv_column(&table, "latency_ms");
  if (frame < 0 || ms < 0)
    status = quote_failure(err, err_size, PLM_ERR_IO, "%s: no column '%s' in the header", path,
                           frame < 0 ? "frame" : "latency_ms");
  if (status == PLM_OK) {
    out->frame = malloc((size_t)(table.rows + 1) * sizeof *out->frame);
    out->ms = malloc((size_t)(table.rows + 1) * sizeof *out->ms);
    if (!out->frame || !out->ms)
      status = quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  for (int64_t r = 0; status == PLM_OK && r < table.rows; r++) {
    out->frame[r] = csv_value(&table, r, frame);
    out->ms[r] = csv_value(&table, r, ms);
    if (!isfinite(out->frame[r]) || !isfinite(out->ms[r]) || out->ms[r] < 0)
      status = quote_failure(err, err_size, PLM_ERR_IO,
                             "%s: row %lld: frame %g, latency_ms %g (a latency is a number >= 0)",
                             path, (long long)r + 1, out->frame[r], out->ms[r]);
  }
  out->n = status == PLM_OK ? table.rows : 0;
  csv_free(&table);
  if (status != PLM_OK) score_latency_free(out);
  return status;
}

void score_latency_free(score_latency *latency) {
  free(latency->frame);
  free(latency->ms);
  *latency = (score_latency){0};
}

plm_status score_report_write(const char *path, const score_report_input *in, char *err,
                              size_t err_size) {
  score_result r;
  score_frame *frames = NULL;
  int64_t n_frames = 0;
  plm_status status = score_match_frames(in->truth, in->n_truth, in->detections, in->n_detections,
                                         in->radius, &r, &frames, &n_frames, err, err_size);
  if (status != PLM_OK) return status;
  /* The frames' count, else (no frames, or a video that does not count them) the last
   * frame with a truth or a detection. */
  const bool counted = in->frames_info && in->frames_info->count >= 0;
  int64_t frame_count = counted ? in->frames_info->count - in->skipped_frames : 0;
  if (!counted && n_frames > 0) frame_count = frames[n_frames - 1].frame - in->skipped_frames + 1;
  if (frame_count < 1) frame_count = 1;
  curve c = {0};
  if (in->strengths) status = sweep(in, frame_count, &c, err, err_size);
  page p = {0};
  add(&p, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>plume score</title>\n"
          "<style>body{font-family:sans-serif;margin:2em;max-width:1200px}"
          "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
          "padding:4px 8px;text-align:right}svg.chart{margin:0.5em 1em 0.5em 0}"
          "img.frame{image-rendering:pixelated}</style></head><body>\n");
  if (status == PLM_OK) {
    add_figures(&p, in, &r);
    add_curves(&p, &c);
    status = add_frames_chart(&p, frames, n_frames);
    if (status == PLM_OK && in->latency) status = add_latency_chart(&p, in->latency);
    if (status != PLM_OK) status = quote_failure(err, err_size, status, "out of memory");
  }
  if (status == PLM_OK) status = add_worst_frames(&p, in, frames, n_frames, err, err_size);
  add(&p, "</body></html>\n");
  free(frames);
  if (status == PLM_OK && p.failed)
    status = quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  output_file *file = NULL;
  if (status == PLM_OK) status = output_file_open(path, &file, err, err_size);
  if (status == PLM_OK) {
    status = output_file_write(file, p.text, p.length, err, err_size);
    if (status == PLM_OK)
      status = output_files_commit(&file, 1, err, err_size);
    else
      output_file_abort(file);
  }
  free(p.text);
  return status;
}

plm_status score_report_strengths_of_table(const char *path, const csv_table *table, double **out,
                                           char *err, size_t err_size) {
  *out = NULL;
  const int column = csv_column(table, "max");
  if (column < 0) return PLM_OK;
  *out = malloc((size_t)(table->rows + 1) * sizeof **out);
  if (!*out) return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  for (int64_t r = 0; r < table->rows; r++) (*out)[r] = csv_value(table, r, column);
  return PLM_OK;
}

/* support/overlay.c: detections drawn on their frames (support/overlay.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/overlay.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/csv.h"
#include "support/output_file.h"
#include "support/png_io.h"
#include "support/quote.h"
#include "support/score.h"

/* pi, which strict C11 does not name. */
static const double kPi = 3.14159265358979323846;

/* The share of the samples left below black and above white. */
#define STRETCH_TAIL 0.005

/* The most samples of an f32 frame sorted for its percentiles (a regular subsample). */
enum { MOST_SORTED = 1 << 16 };

/* ---- gray ------------------------------------------------------------------------------ */

static int compare_floats(const void *a, const void *b) {
  const float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* The frame's stretch, black and white, from its integer samples' histogram. */
static void integer_stretch(const image *frame, int64_t n, double *black, double *white,
                            uint32_t *histogram, int bins) {
  memset(histogram, 0, (size_t)bins * sizeof *histogram);
  if (frame->dtype == PLM_DTYPE_U8)
    for (int64_t i = 0; i < n; i++) histogram[((const uint8_t *)frame->data)[i]]++;
  else
    for (int64_t i = 0; i < n; i++) histogram[((const uint16_t *)frame->data)[i]]++;
  const double tail = STRETCH_TAIL * (double)n;
  double below = 0;
  int lo = 0, hi = bins - 1;
  while (lo < bins - 1 && below + histogram[lo] <= tail) below += histogram[lo++];
  double above = 0;
  while (hi > lo && above + histogram[hi] <= tail) above += histogram[hi--];
  *black = lo;
  *white = hi;
}

/* An f32 frame's stretch, from a sorted regular subsample of its finite samples. */
static bool float_stretch(const float *v, int64_t n, double *black, double *white) {
  const int64_t step = n > MOST_SORTED ? (n + MOST_SORTED - 1) / MOST_SORTED : 1;
  float *sample = malloc((size_t)((n + step - 1) / step) * sizeof *sample);
  if (!sample) return false;
  int64_t m = 0;
  for (int64_t i = 0; i < n; i += step)
    if (isfinite(v[i])) sample[m++] = v[i];
  if (m == 0) {
    *black = 0, *white = 1;
  } else {
    qsort(sample, (size_t)m, sizeof *sample, compare_floats);
    *black = sample[(int64_t)(STRETCH_TAIL * (double)(m - 1))];
    *white = sample[(int64_t)((1.0 - STRETCH_TAIL) * (double)(m - 1) + 0.5)];
  }
  free(sample);
  return true;
}

static double sample_at(const image *frame, int64_t i) {
  switch (frame->dtype) {
    case PLM_DTYPE_U8: return ((const uint8_t *)frame->data)[i];
    case PLM_DTYPE_U16: return ((const uint16_t *)frame->data)[i];
    default: return ((const float *)frame->data)[i];
  }
}

plm_status overlay_render(const image *frame, overlay_picture *pic, char *err, size_t err_size) {
  if (frame->ndim != 2 || frame->dims[0] != pic->height || frame->dims[1] != pic->width ||
      (frame->dtype != PLM_DTYPE_U8 && frame->dtype != PLM_DTYPE_U16 &&
       frame->dtype != PLM_DTYPE_F32))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "overlay_render: a %s frame of %d dimensions for a %lldx%lld picture: "
                         "u8, u16 or f32 (H, W) are drawn",
                         plm_dtype_name(frame->dtype), frame->ndim, (long long)pic->height,
                         (long long)pic->width);
  const int64_t n = pic->height * pic->width;
  double black = 0, white = 1;
  if (frame->dtype == PLM_DTYPE_F32) {
    if (!float_stretch(frame->data, n, &black, &white))
      return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "overlay_render: out of memory");
  } else {
    const int bins = frame->dtype == PLM_DTYPE_U8 ? 256 : 65536;
    uint32_t *histogram = malloc((size_t)bins * sizeof *histogram);
    if (!histogram)
      return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "overlay_render: out of memory");
    integer_stretch(frame, n, &black, &white, histogram, bins);
    free(histogram);
  }
  const double scale = white > black ? 255.0 / (white - black) : 0.0;
  for (int64_t i = 0; i < n; i++) {
    const double x = sample_at(frame, i);
    double level = isnan(x) ? 0.0 : (x - black) * scale;
    level = level < 0 ? 0 : level > 255 ? 255 : level;
    const uint8_t gray = (uint8_t)(level + 0.5);
    pic->rgb[3 * i] = pic->rgb[3 * i + 1] = pic->rgb[3 * i + 2] = gray;
  }
  return PLM_OK;
}

/* ---- drawing --------------------------------------------------------------------------- */

static void put(overlay_picture *pic, int64_t row, int64_t col, overlay_colour c) {
  if (row < 0 || col < 0 || row >= pic->height || col >= pic->width) return;
  uint8_t *p = pic->rgb + 3 * (row * pic->width + col);
  p[0] = c.r, p[1] = c.g, p[2] = c.b;
}

void overlay_draw_box(overlay_picture *pic, int64_t top, int64_t left, int64_t bottom,
                      int64_t right, overlay_colour colour) {
  /* Only the part of each edge inside the picture is walked, whatever the box's size. */
  const int64_t col_from = left > 0 ? left : 0;
  const int64_t col_to = right < pic->width ? right : pic->width - 1;
  const int64_t row_from = top > 0 ? top : 0;
  const int64_t row_to = bottom < pic->height ? bottom : pic->height - 1;
  for (int64_t c = col_from; c <= col_to; c++) {
    put(pic, top, c, colour);
    put(pic, bottom, c, colour);
  }
  for (int64_t r = row_from; r <= row_to; r++) {
    put(pic, r, left, colour);
    put(pic, r, right, colour);
  }
}

/* x rounded to the nearest pixel index, kept well inside int64_t. */
static int64_t pixel_of(double x) {
  if (!(x > -1e15)) return (int64_t)-1e15;
  if (!(x < 1e15)) return (int64_t)1e15;
  return (int64_t)floor(x + 0.5);
}

void overlay_draw_cross(overlay_picture *pic, double row, double col, int arm,
                        overlay_colour colour) {
  const int64_t r = pixel_of(row), c = pixel_of(col);
  for (int k = -arm; k <= arm; k++) {
    put(pic, r + k, c, colour);
    put(pic, r, c + k, colour);
  }
}

void overlay_draw_circle(overlay_picture *pic, double row, double col, double radius,
                         overlay_colour colour) {
  if (!isfinite(row) || !isfinite(col) || !(radius >= 0) || radius > 1e6) return;
  /* Enough points that neighbours are at most a pixel apart. */
  const int steps = 8 + (int)ceil(2.0 * kPi * radius);
  for (int k = 0; k < steps; k++) {
    const double angle = 2.0 * kPi * k / steps;
    put(pic, pixel_of(row + radius * sin(angle)), pixel_of(col + radius * cos(angle)), colour);
  }
}

/* ---- frames with their detections ------------------------------------------------------ */

/* The detections' rows: frame, box, and the centroid plume score takes. */
typedef struct drawn_detection {
  int64_t frame, top, left, bottom, right;
  double row, col;
} drawn_detection;

/* Read detections_csv's rows, once: the centroid as plume score takes it
 * (score_detections_of_table), the box from the same rows' min/max columns. */
static plm_status read_detections(const char *path, drawn_detection **out, int64_t *count,
                                  char *err, size_t err_size) {
  csv_table table;
  plm_status status = csv_read(path, &table, err, err_size);
  if (status != PLM_OK) return status;
  score_detection *centroids = NULL;
  int64_t n = 0;
  status = score_detections_of_table(path, &table, &centroids, &n, err, err_size);
  static const char *const box_columns[4] = {"min_row", "min_col", "max_row", "max_col"};
  int columns[4];
  for (int k = 0; k < 4 && status == PLM_OK; k++)
    if ((columns[k] = csv_column(&table, box_columns[k])) < 0)
      status = quote_failure(err, err_size, PLM_ERR_IO, "%s: no column '%s' in the header", path,
                             box_columns[k]);
  drawn_detection *rows = status == PLM_OK ? malloc((size_t)(n + 1) * sizeof *rows) : NULL;
  if (status == PLM_OK && !rows)
    status = quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  for (int64_t r = 0; status == PLM_OK && r < n; r++) {
    double box[4];
    for (int k = 0; k < 4; k++) box[k] = csv_value(&table, r, columns[k]);
    for (int k = 0; k < 4 && status == PLM_OK; k++)
      if (!(fabs(box[k]) < 1e15) || box[k] != floor(box[k]))
        status = quote_failure(err, err_size, PLM_ERR_IO, "%s:%lld: %s is not a pixel index", path,
                               (long long)(r + 2), box_columns[k]);
    rows[r] = (drawn_detection){centroids[r].frame, (int64_t)box[0], (int64_t)box[1],
                                (int64_t)box[2],    (int64_t)box[3], centroids[r].row,
                                centroids[r].col};
  }
  csv_free(&table);
  free(centroids);
  if (status != PLM_OK) {
    free(rows);
    return status;
  }
  *out = rows;
  *count = n;
  return PLM_OK;
}

static int compare_detections(const void *a, const void *b) {
  const drawn_detection *x = a, *y = b;
  return (x->frame > y->frame) - (x->frame < y->frame);
}

static int compare_truth(const void *a, const void *b) {
  const score_truth *x = a, *y = b;
  return (x->frame > y->frame) - (x->frame < y->frame);
}

/* What is drawn on the pictures, sorted by frame, with the next row of each to draw. */
typedef struct drawing {
  drawn_detection *detections;
  score_truth *truth;
  int64_t n_detections, n_truth;
  int64_t next_detection, next_truth;
} drawing;

/* The k-th picture: frame k (read into frame) with its truth and detections (the next ones
 * of d, whose frames are k or later), written to dir. */
static plm_status write_picture(int64_t k, const image *frame, overlay_picture *pic, drawing *d,
                                const char *dir, char *err, size_t err_size) {
  plm_status status = overlay_render(frame, pic, err, err_size);
  if (status != PLM_OK) return status;
  for (; d->next_truth < d->n_truth && d->truth[d->next_truth].frame == k; d->next_truth++) {
    const score_truth *t = &d->truth[d->next_truth];
    const double radius = fmax(SCORE_RADIUS_MIN, SCORE_RADIUS_SIGMAS * t->sigma);
    overlay_draw_circle(pic, t->row, t->col, radius, OVERLAY_TRUTH);
  }
  for (; d->next_detection < d->n_detections && d->detections[d->next_detection].frame == k;
       d->next_detection++) {
    const drawn_detection *det = &d->detections[d->next_detection];
    overlay_draw_box(pic, det->top - 1, det->left - 1, det->bottom + 1, det->right + 1,
                     OVERLAY_DETECTION);
    overlay_draw_cross(pic, det->row, det->col, 2, OVERLAY_CENTROID);
  }
  char path[4096];
  if (snprintf(path, sizeof path, "%s/frame_%06lld.png", dir, (long long)k) >= (int)sizeof path)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: the folder's name is too long",
                         dir);
  void *png = NULL;
  size_t length = 0;
  status = png_encode_rgb8(pic->height, pic->width, pic->rgb, &png, &length, path, err, err_size);
  output_file *file = NULL;
  if (status == PLM_OK) status = output_file_open(path, &file, err, err_size);
  if (status == PLM_OK) {
    status = output_file_write(file, png, length, err, err_size);
    if (status == PLM_OK)
      status = output_files_commit(&file, 1, err, err_size);
    else
      output_file_abort(file);
  }
  free(png);
  return status;
}

/* The frame's and the picture's buffers made for frames of height x width (a folder's
 * frames may differ in shape: frame_reader_allow_shapes). */
static plm_status fit_buffers(image *frame, overlay_picture *pic, int64_t height, int64_t width,
                              char *err, size_t err_size) {
  free(frame->data);
  free(pic->rgb);
  frame->dims[0] = pic->height = height;
  frame->dims[1] = pic->width = width;
  frame->data = malloc(image_bytes(frame));
  pic->rgb = malloc((size_t)(3 * height * width));
  if (!frame->data || !pic->rgb)
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "overlay: out of memory");
  return PLM_OK;
}

/* A detection of a frame the input does not have (frames of them): refused by name. */
static plm_status past_the_frames(const drawn_detection *det, int64_t frames, const char *csv,
                                  char *err, size_t err_size) {
  if (det->frame < frames) return PLM_OK;
  return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                       "%s: a detection of frame %lld, past the %lld frames", csv,
                       (long long)det->frame, (long long)frames);
}

plm_status overlay_write_frames(frame_reader *r, const frame_reader_info *info,
                                const char *detections_csv, const char *truth_csv,
                                const char *dir, int64_t *written, char *err, size_t err_size) {
  *written = 0;
  drawing d = {0};
  plm_status status =
      read_detections(detections_csv, &d.detections, &d.n_detections, err, err_size);
  if (status == PLM_OK && truth_csv)
    status = score_read_truth(truth_csv, &d.truth, &d.n_truth, err, err_size);
  for (int64_t i = 0; status == PLM_OK && info->count >= 0 && i < d.n_detections; i++)
    status = past_the_frames(&d.detections[i], info->count, detections_csv, err, err_size);
  if (status == PLM_OK) {
    qsort(d.detections, (size_t)d.n_detections, sizeof *d.detections, compare_detections);
    if (d.truth) qsort(d.truth, (size_t)d.n_truth, sizeof *d.truth, compare_truth);
  }
  image frame = {.dtype = info->dtype, .ndim = 2};
  overlay_picture pic = {0};
  /* A count known only at the end (a video whose container does not say) is read to it. */
  bool end = false;
  for (int64_t k = 0; status == PLM_OK && !end && (info->count < 0 || k < info->count); k++) {
    int64_t height = 0, width = 0;
    status = frame_reader_shape(r, k, &height, &width, err, err_size);
    if (status == PLM_OK && (height != pic.height || width != pic.width))
      status = fit_buffers(&frame, &pic, height, width, err, err_size);
    if (status == PLM_OK) status = frame_reader_next(r, k, frame.data, &end, err, err_size);
    if (status == PLM_OK && !end) status = write_picture(k, &frame, &pic, &d, dir, err, err_size);
    if (status == PLM_OK && !end) ++*written;
  }
  for (int64_t i = 0; status == PLM_OK && info->count < 0 && i < d.n_detections; i++)
    status = past_the_frames(&d.detections[i], *written, detections_csv, err, err_size);
  free(frame.data);
  free(pic.rgb);
  free(d.detections);
  free(d.truth);
  return status;
}

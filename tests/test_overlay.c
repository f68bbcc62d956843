/* tests/test_overlay.c: detections drawn on their frames (support/overlay.h).
 *
 * The gray stretch (a hot pixel does not wash a frame out; NaN is black), the box, cross
 * and circle where they belong and clipped at the edges, the PNG read back by libpng
 * pixel for pixel, and overlay_write_frames on a stack with a detections and a truth CSV:
 * one picture a frame, each detection's box in red with its centroid in yellow, each
 * plume's circle in green; a detection past the frames refused; a Matroska video, whose
 * count is unknown until its end, read to it. A plain unit test: no backend.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/image_io.h"
#include "support/overlay.h"
#include "support/png_io.h"

static char dir[SCRATCH_DIR_SIZE];
static char err[OVERLAY_ERROR_SIZE];

static void make_dir(void) {
  scratch_dir_make(dir, "overlay");
}

static void remove_dir(void) {
  scratch_dir_remove(dir);
}

static const uint8_t *pixel(const overlay_picture *pic, int64_t row, int64_t col) {
  return pic->rgb + 3 * (row * pic->width + col);
}

static void expect_colour(const overlay_picture *pic, int64_t row, int64_t col,
                          overlay_colour want, const char *what) {
  const uint8_t *p = pixel(pic, row, col);
  ck_assert_msg(p[0] == want.r && p[1] == want.g && p[2] == want.b,
                "%s: (%lld, %lld) is (%d, %d, %d), expected (%d, %d, %d)", what, (long long)row,
                (long long)col, p[0], p[1], p[2], want.r, want.g, want.b);
}

static void expect_gray(const overlay_picture *pic, int64_t row, int64_t col, const char *what) {
  const uint8_t *p = pixel(pic, row, col);
  ck_assert_msg(p[0] == p[1] && p[1] == p[2], "%s: (%lld, %lld) is (%d, %d, %d), not gray", what,
                (long long)row, (long long)col, p[0], p[1], p[2]);
}

static overlay_picture picture(int64_t h, int64_t w) {
  overlay_picture pic = {.height = h, .width = w, .rgb = calloc((size_t)(3 * h * w), 1)};
  ck_assert_ptr_nonnull(pic.rgb);
  return pic;
}

START_TEST(test_stretch_ignores_a_few_hot_pixels) {
  /* 40 x 50 = 2000 samples of 1000..1099 and one at 65535: the tail (0.5%, 10 samples)
   * takes the hot one, so 1099 is white and 1000 black. */
  uint16_t v[40 * 50];
  for (int i = 0; i < 2000; i++) v[i] = (uint16_t)(1000 + i % 100);
  v[777] = 65535;
  image frame = {.dtype = PLM_DTYPE_U16, .ndim = 2, .dims = {40, 50}, .data = v};
  overlay_picture pic = picture(40, 50);
  ck_assert_msg(overlay_render(&frame, &pic, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_le(pixel(&pic, 0, 0)[0], 3);   /* 1000 */
  ck_assert_int_ge(pixel(&pic, 1, 49)[0], 250); /* 1099 */
  ck_assert_int_eq(pixel(&pic, 15, 27)[0], 255); /* the hot pixel, clipped */
  expect_gray(&pic, 20, 20, "u16");
  /* f32 with a NaN: black; the rest stretched alike. */
  float f[40 * 50];
  for (int i = 0; i < 2000; i++) f[i] = (float)(i % 100) * 0.5f - 10.0f;
  f[5] = NAN;
  frame = (image){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {40, 50}, .data = f};
  ck_assert_msg(overlay_render(&frame, &pic, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(pixel(&pic, 0, 5)[0], 0);
  ck_assert_int_ge(pixel(&pic, 1, 49)[0], 250);
  ck_assert_int_le(pixel(&pic, 0, 0)[0], 3);
  /* A flat u8 frame: one gray, no division by zero. */
  uint8_t flat[40 * 50];
  memset(flat, 7, sizeof flat);
  frame = (image){.dtype = PLM_DTYPE_U8, .ndim = 2, .dims = {40, 50}, .data = flat};
  ck_assert_msg(overlay_render(&frame, &pic, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(pixel(&pic, 39, 49)[0], pixel(&pic, 0, 0)[0]);
  /* Another dtype or shape is refused. */
  frame.dtype = PLM_DTYPE_I32;
  ck_assert_int_eq(overlay_render(&frame, &pic, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err, "i32") != NULL, "%s", err);
  free(pic.rgb);
}
END_TEST

START_TEST(test_shapes_are_drawn_where_they_belong_and_clipped) {
  overlay_picture pic = picture(30, 40);
  overlay_draw_box(&pic, 5, 6, 10, 12, OVERLAY_DETECTION);
  expect_colour(&pic, 5, 6, OVERLAY_DETECTION, "box corner");
  expect_colour(&pic, 10, 9, OVERLAY_DETECTION, "box bottom");
  expect_colour(&pic, 7, 12, OVERLAY_DETECTION, "box right");
  expect_colour(&pic, 7, 9, (overlay_colour){0, 0, 0}, "box inside");
  /* Partly and wholly outside, and absurdly large: what is inside is drawn, no more. */
  overlay_draw_box(&pic, -3, -4, 2, 3, OVERLAY_TRUTH);
  expect_colour(&pic, 2, 0, OVERLAY_TRUTH, "clipped box bottom");
  expect_colour(&pic, 0, 3, OVERLAY_TRUTH, "clipped box right");
  expect_colour(&pic, 1, 1, (overlay_colour){0, 0, 0}, "clipped box inside");
  overlay_draw_box(&pic, 100, 100, 200, 200, OVERLAY_TRUTH);
  overlay_draw_box(&pic, INT64_MIN / 4, INT64_MIN / 4, INT64_MAX / 4, INT64_MAX / 4,
                   OVERLAY_CENTROID);
  overlay_draw_cross(&pic, 20.4, 30.6, 2, OVERLAY_CENTROID);
  expect_colour(&pic, 20, 31, OVERLAY_CENTROID, "cross centre");
  expect_colour(&pic, 18, 31, OVERLAY_CENTROID, "cross arm");
  expect_colour(&pic, 20, 33, OVERLAY_CENTROID, "cross arm");
  overlay_draw_cross(&pic, 1e300, -1e300, 2, OVERLAY_CENTROID);
  memset(pic.rgb, 0, (size_t)(3 * 30 * 40));
  overlay_draw_circle(&pic, 15, 20, 6, OVERLAY_TRUTH);
  expect_colour(&pic, 15, 26, OVERLAY_TRUTH, "circle east");
  expect_colour(&pic, 9, 20, OVERLAY_TRUTH, "circle north");
  expect_colour(&pic, 15, 20, (overlay_colour){0, 0, 0}, "circle centre");
  overlay_draw_circle(&pic, NAN, 3, 5, OVERLAY_TRUTH);
  overlay_draw_circle(&pic, 3, 3, 1e30, OVERLAY_TRUTH);
  free(pic.rgb);
}
END_TEST

/* A PNG decoded by libpng's simplified reader into RGB. */
static uint8_t *decode_png(const void *bytes, size_t length, int64_t *h, int64_t *w) {
  png_image decoded;
  memset(&decoded, 0, sizeof decoded);
  decoded.version = PNG_IMAGE_VERSION;
  ck_assert_msg(png_image_begin_read_from_memory(&decoded, bytes, length), "%s", decoded.message);
  decoded.format = PNG_FORMAT_RGB;
  uint8_t *rgb = malloc(PNG_IMAGE_SIZE(decoded));
  ck_assert_ptr_nonnull(rgb);
  ck_assert_msg(png_image_finish_read(&decoded, NULL, rgb, 0, NULL), "%s", decoded.message);
  *h = decoded.height;
  *w = decoded.width;
  return rgb;
}

/* The picture of a PNG file, decoded. */
static overlay_picture read_png_file(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "no %s", path);
  static unsigned char png[1 << 16];
  const size_t length = fread(png, 1, sizeof png, f);
  fclose(f);
  overlay_picture pic;
  pic.rgb = decode_png(png, length, &pic.height, &pic.width);
  return pic;
}

START_TEST(test_png_reads_back_pixel_for_pixel) {
  overlay_picture pic = picture(9, 13);
  for (int64_t i = 0; i < 3 * 9 * 13; i++) pic.rgb[i] = (uint8_t)(i * 37 + 11);
  void *png = NULL;
  size_t length = 0;
  ck_assert_msg(png_encode_rgb8(pic.height, pic.width, pic.rgb, &png, &length, "x.png", err,
                                sizeof err) == PLM_OK,
                "%s", err);
  ck_assert(length > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
  int64_t h = 0, w = 0;
  uint8_t *rgb = decode_png(png, length, &h, &w);
  ck_assert(h == 9 && w == 13 && memcmp(rgb, pic.rgb, 3 * 9 * 13) == 0);
  free(rgb);
  free(png);
  overlay_picture empty = {.height = 0, .width = 4, .rgb = pic.rgb};
  ck_assert_int_eq(png_encode_rgb8(empty.height, empty.width, empty.rgb, &png, &length, "empty.png",
                                   err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  ck_assert_ptr_null(png);
  free(pic.rgb);
}
END_TEST

static const char *write_text(const char *name, const char *text) {
  const char *path = scratch_path(dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
  return path;
}

static const char header[] =
    "frame,label,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col,sum,max,"
    "wcentroid_row,wcentroid_col\n";

START_TEST(test_frames_are_drawn_with_their_detections_and_truth) {
  /* Three u8 frames of 24 x 32, a ramp. */
  enum { N = 3, H = 24, W = 32 };
  uint8_t *v = malloc(N * H * W);
  ck_assert_ptr_nonnull(v);
  for (int i = 0; i < N * H * W; i++) v[i] = (uint8_t)(i % W * 4);
  image stack = {.dtype = PLM_DTYPE_U8, .ndim = 3, .dims = {N, H, W}, .data = v};
  const char *frames = scratch_path(dir, "frames.npy");
  ck_assert_msg(image_write_npy(frames, &stack, err, sizeof err) == PLM_OK, "%s", err);
  free(v);
  char detections[1024];
  snprintf(detections, sizeof detections,
           "%s1,1,9,10,12,12,14,11,13,90,9,nan,nan\n0,1,4,2,2,3,3,2.5,2.5,4,1,2.4,2.6\n", header);
  const char *csv = write_text("d.csv", detections);
  const char *truth = write_text("t.csv", "frame,row,col,amplitude,sigma\n1,11,13,50,1\n2,5,20,50,2\n");
  char *pictures = strdup(scratch_path(dir, "pictures"));
  ck_assert_int_eq(mkdir(pictures, 0755), 0);
  frame_reader *r = NULL;
  frame_reader_info info;
  ck_assert_msg(frame_reader_open(frames, &info, &r, err, sizeof err) == PLM_OK, "%s", err);
  int64_t written = 0;
  ck_assert_msg(overlay_write_frames(r, &info, csv, truth, pictures, &written, err, sizeof err) ==
                    PLM_OK,
                "%s", err);
  ck_assert_int_eq(written, N);
  char path[SCRATCH_PATH_SIZE + 64];
  snprintf(path, sizeof path, "%s/frame_000001.png", pictures);
  overlay_picture pic = read_png_file(path);
  ck_assert(pic.height == H && pic.width == W);
  /* Frame 1's region, rows 10..12 and columns 12..14: its box one pixel outside, its
   * centroid (no weighted one: the plain centroid) as a cross, the plume's circle of
   * radius 3 about (11, 13). */
  expect_colour(&pic, 9, 11, OVERLAY_DETECTION, "box corner");
  expect_colour(&pic, 13, 15, OVERLAY_DETECTION, "box corner");
  expect_colour(&pic, 11, 13, OVERLAY_CENTROID, "centroid");
  expect_colour(&pic, 11, 16, OVERLAY_TRUTH, "truth circle");
  expect_gray(&pic, 20, 5, "far from everything");
  free(pic.rgb);
  /* Frame 2: the truth alone (radius 4 about (5, 20)), no box. */
  snprintf(path, sizeof path, "%s/frame_000002.png", pictures);
  pic = read_png_file(path);
  expect_colour(&pic, 5, 24, OVERLAY_TRUTH, "truth circle of frame 2");
  expect_gray(&pic, 11, 11, "no box in frame 2");
  free(pic.rgb);
  /* A detection of frame 3 of 3 frames: refused, naming the CSV. */
  snprintf(detections, sizeof detections, "%s3,1,1,0,0,0,0,0,0,1,1,0,0\n", header);
  csv = write_text("late.csv", detections);
  ck_assert_int_eq(overlay_write_frames(r, &info, csv, NULL, pictures, &written, err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err, "late.csv: a detection of frame 3, past the 3 frames") != NULL, "%s",
                err);
  frame_reader_close(r);
  /* A video whose container does not count its frames (Matroska: count -1) is read to
   * its end, a picture a frame, and the detections checked against the frames found. */
  ck_assert_msg(frame_reader_open(PLUME_FIXTURES_DIR "/video/gray16-ffv1.mkv", &info, &r, err,
                                  sizeof err) == PLM_OK,
                "%s", err);
  ck_assert_int_eq(info.count, -1);
  snprintf(detections, sizeof detections, "%s3,1,1,0,0,0,0,0,0,1,1,0,0\n", header);
  csv = write_text("video.csv", detections);
  ck_assert_msg(
      overlay_write_frames(r, &info, csv, NULL, pictures, &written, err, sizeof err) == PLM_OK,
      "%s", err);
  ck_assert_int_eq(written, 4); /* gray16-ffv1.npy's frames */
  frame_reader_close(r);
  ck_assert_msg(frame_reader_open(PLUME_FIXTURES_DIR "/video/gray16-ffv1.mkv", &info, &r, err,
                                  sizeof err) == PLM_OK,
                "%s", err);
  snprintf(detections, sizeof detections, "%s4,1,1,0,0,0,0,0,0,1,1,0,0\n", header);
  csv = write_text("video-late.csv", detections);
  ck_assert_int_eq(overlay_write_frames(r, &info, csv, NULL, pictures, &written, err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err, "video-late.csv: a detection of frame 4, past the 4 frames") != NULL,
                "%s", err);
  frame_reader_close(r);
  free(pictures);
}
END_TEST

int main(void) {
  Suite *suite = suite_create("overlay");
  TCase *tcase = tcase_create("overlay");
  tcase_add_checked_fixture(tcase, make_dir, remove_dir);
  tcase_add_test(tcase, test_stretch_ignores_a_few_hot_pixels);
  tcase_add_test(tcase, test_shapes_are_drawn_where_they_belong_and_clipped);
  tcase_add_test(tcase, test_png_reads_back_pixel_for_pixel);
  tcase_add_test(tcase, test_frames_are_drawn_with_their_detections_and_truth);
  suite_add_tcase(suite, tcase);
  SRunner *runner = srunner_create(suite);
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  const int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

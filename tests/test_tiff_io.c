/* tests/test_tiff_io.c: TIFF files through libtiff (support/tiff_io.h, by way of
 * support/image_io.h and support/frame_reader.h).
 *
 * Reading files another library wrote (tests/fixtures/tiff/make.py, with tifffile): u8,
 * u16 and f32, one page and stacks, strips and tiles, deflate with a predictor, both byte
 * orders, each equal sample for sample to the .npy numpy saved of the same array, read
 * whole (image_read), page by page (image_frames), and as frames of plume detect; the
 * kinds refused (colour, signed, 1-bit) and a stack whose second page has another shape,
 * each with a one-line message naming the file and the page. Writing: every dtype plume
 * writes as a TIFF, one page and a stack, read back equal; and a damaged file (cut short,
 * bytes changed) fails with a message, never a crash. A plain unit test: no backend.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/frame_reader.h"
#include "support/image_io.h"
#include "support/tiff_io.h"
#include "image_file_checks.h"

static char dir[SCRATCH_DIR_SIZE];
static char err[FRAME_READER_ERROR_SIZE];

static void make_dir(void) {
  scratch_dir_make(dir, "tiff-io");
}

static void remove_dir(void) {
  scratch_dir_remove(dir);
}

static const char *fixture(const char *name, const char *extension) {
  return fixture_file("tiff", name, extension);
}

static void expect_message(plm_status got, plm_status want, const char *a, const char *b) {
  expect_image_message(got, want, err, a, b);
}

static const char *const cases[] = {"u8-strips", "u16-stack-strips-deflate", "f32-tiled",
                                    "u16-stack-tiled-big-endian", "f32-stack-strips-big-endian"};

START_TEST(test_tifffile_files_read_as_numpy_saved_them) {
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    image want = {0}, got = {0};
    ck_assert_msg(image_read(fixture(cases[c], "npy"), NULL, &want, err, sizeof err) == PLM_OK,
                  "%s", err);
    ck_assert_msg(image_read(fixture(cases[c], "tif"), NULL, &got, err, sizeof err) == PLM_OK, "%s",
                  err);
    expect_image_equal(&got, &want, cases[c]);
    image_free(&got, NULL);
    expect_frames_equal(fixture(cases[c], "tif"), &want);
    image_free(&want, NULL);
  }
}
END_TEST

START_TEST(test_a_stack_is_the_frames_of_plume_detect) {
  frame_reader *r = NULL;
  frame_reader_info info;
  const char *path = fixture("u16-stack-tiled-big-endian", "tif");
  ck_assert_msg(frame_reader_open(path, &info, &r, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert(info.count == 2 && info.dtype == PLM_DTYPE_U16 && info.height == 17 &&
            info.width == 33 && !info.folder);
  image want = {0};
  ck_assert_int_eq(
      image_read(fixture("u16-stack-tiled-big-endian", "npy"), NULL, &want, err, sizeof err),
      PLM_OK);
  uint16_t got[17 * 33];
  bool end = true;
  ck_assert_int_eq(frame_reader_next(r, 1, got, &end, err, sizeof err), PLM_OK);
  ck_assert(!end && memcmp(got, (uint16_t *)want.data + 17 * 33, sizeof got) == 0);
  ck_assert_int_eq(frame_reader_next(r, 2, got, &end, err, sizeof err), PLM_OK);
  ck_assert(end);
  image_free(&want, NULL);
  frame_reader_close(r);
}
END_TEST

START_TEST(test_what_is_not_read_is_named) {
  image img = {0};
  expect_message(image_read(fixture("rgb", "tif"), NULL, &img, err, sizeof err),
                 PLM_ERR_UNSUPPORTED, "rgb.tif: page 0: 3 samples per pixel", "grayscale");
  expect_message(image_read(fixture("i16", "tif"), NULL, &img, err, sizeof err),
                 PLM_ERR_UNSUPPORTED, "i16.tif: page 0: 16-bit signed samples", NULL);
  expect_message(image_read(fixture("bilevel", "tif"), NULL, &img, err, sizeof err),
                 PLM_ERR_UNSUPPORTED, "bilevel.tif: page 0: 1-bit unsigned samples", NULL);
  ck_assert_ptr_null(img.data);
  /* A later page of another shape: opened (the first page is fine), refused when read. */
  expect_message(image_read(fixture("mixed-shapes", "tif"), NULL, &img, err, sizeof err),
                 PLM_ERR_IO, "mixed-shapes.tif: page 1 is u16 6x5, but page 0 is u16 4x5", NULL);
  image frame;
  int64_t count = 0;
  image_frames *frames = NULL;
  ck_assert_int_eq(
      image_frames_open(fixture("mixed-shapes", "tif"), &frame, &count, &frames, err, sizeof err),
      PLM_OK);
  uint16_t page[4 * 5];
  ck_assert_int_eq(image_frames_read(frames, 0, page, err, sizeof err), PLM_OK);
  expect_message(image_frames_read(frames, 1, page, err, sizeof err), PLM_ERR_IO,
                 "page 1 is u16 6x5", NULL);
  image_frames_close(frames);
}
END_TEST

static const char *write_file(const char *name, const void *bytes, size_t length) {
  return scratch_file(dir, name, bytes, length);
}

START_TEST(test_what_is_written_reads_back) {
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_I32, PLM_DTYPE_F32};
  const int64_t shapes[][3] = {{1, 7, 5}, {3, 40, 9}};
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
    for (int s = 0; s < 2; s++) {
      const int ndim = s == 0 ? 2 : 3;
      const int64_t *dims = s == 0 ? shapes[0] + 1 : shapes[1];
      image want = {.dtype = dtypes[d], .ndim = ndim};
      memcpy(want.dims, dims, (size_t)ndim * sizeof *dims);
      const size_t bytes = image_bytes(&want);
      want.data = malloc(bytes);
      ck_assert_ptr_nonnull(want.data);
      for (size_t i = 0; i < bytes; i++)
        ((unsigned char *)want.data)[i] = (unsigned char)(i * 29 + d);
      if (dtypes[d] == PLM_DTYPE_F32) /* finite values, a NaN's bits may not survive */
        for (size_t i = 0; i < bytes / 4; i++) ((float *)want.data)[i] = (float)i * -0.75f + 3.0f;
      void *tiff = NULL;
      size_t length = 0;
      ck_assert_msg(tiff_encode(want.dtype, want.ndim, want.dims, want.data, &tiff, &length,
                                "out.tif", err, sizeof err) == PLM_OK,
                    "%s", err);
      const char *path = write_file("out.tif", tiff, length);
      free(tiff);
      if (dtypes[d] == PLM_DTYPE_I32) {
        /* plume reads no signed TIFF (the ops take u8, u16 and f32): refused by name. */
        image got = {0};
        expect_message(image_read(path, NULL, &got, err, sizeof err), PLM_ERR_UNSUPPORTED,
                       "32-bit signed samples", NULL);
      } else {
        image got = {0};
        ck_assert_msg(image_read(path, NULL, &got, err, sizeof err) == PLM_OK, "%s", err);
        expect_image_equal(&got, &want, plm_dtype_name(dtypes[d]));
        image_free(&got, NULL);
      }
      free(want.data);
    }
  void *tiff = NULL;
  size_t length = 0;
  const int64_t dims[4] = {1, 2, 3, 4};
  uint8_t data[24] = {0};
  expect_message(tiff_encode(PLM_DTYPE_U8, 4, dims, data, &tiff, &length, "x.tif", err, sizeof err),
                 PLM_ERR_INVALID_ARG, "x.tif: 4 dimensions", NULL);
  expect_message(
      tiff_encode(PLM_DTYPE_F64, 2, dims, data, &tiff, &length, "x.tif", err, sizeof err),
      PLM_ERR_INVALID_ARG, "x.tif: f64 data", NULL);
  ck_assert_ptr_null(tiff);
}
END_TEST

START_TEST(test_a_damaged_file_fails_with_a_message) {
  /* Found by fuzz_tiff: a 2.9 KB file whose tiles claim 16 x 83,886,096 samples, for which
   * the reader asked for 2.7 GB before finding the tile's data missing. */
  image huge = {0};
  expect_message(image_read(fixture("huge-tiles", "tif"), NULL, &huge, err, sizeof err),
                 PLM_ERR_IO, "huge-tiles.tif: page 0: tiles of 16x83886096 for a page of 17x33",
                 "larger than the page");
  ck_assert_ptr_null(huge.data);
  unsigned char bytes[4096];
  const size_t length = file_bytes(fixture("u16-stack-strips-deflate", "tif"), bytes, sizeof bytes);
  ck_assert_uint_gt(length, 1000);
  /* Cut at every 97th length, and with runs of bytes changed: a failure with a message,
   * or (where the damage leaves what is read whole) a success; never a crash or a leak. */
  expect_damage_handled(dir, "tif", bytes, length, 97, 131);
}
END_TEST

int main(void) {
  Suite *suite = suite_create("tiff_io");
  TCase *tcase = tcase_create("tiff_io");
  tcase_add_checked_fixture(tcase, make_dir, remove_dir);
  tcase_set_timeout(tcase, 60);
  tcase_add_test(tcase, test_tifffile_files_read_as_numpy_saved_them);
  tcase_add_test(tcase, test_a_stack_is_the_frames_of_plume_detect);
  tcase_add_test(tcase, test_what_is_not_read_is_named);
  tcase_add_test(tcase, test_what_is_written_reads_back);
  tcase_add_test(tcase, test_a_damaged_file_fails_with_a_message);
  suite_add_tcase(suite, tcase);
  SRunner *runner = srunner_create(suite);
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  const int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

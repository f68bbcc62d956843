/* tests/test_plume_io.c: libplume_io's public API (plume/io.h), as a C program uses it.
 *
 * Every format through plm_frames_open, checked against the fixtures other libraries wrote
 * (tests/fixtures: tifffile, astropy, h5py, netCDF4-python, ffmpeg) and the .npy numpy
 * saved beside each, frame by frame, in and out of order, to the end that plm_frames_next
 * tells; HDF5's stored values; a folder of mixed shapes; raw frames from a file and from a
 * stream on standard input, whose count is learnt at its end; and the failures: each one's
 * status, and a message on plm_frames_last_error naming the file and what was wrong, left
 * as it was by the calls that succeed after it. Only plume/io.h and plume/tensor.h are
 * used; the program links libplume_io and libplume as a user's does. No backend.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checks.h"
#include "plume/io.h"
#include "scratch_dir.h"

#ifndef PLUME_FIXTURES_DIR
#error "PLUME_FIXTURES_DIR must name tests/fixtures"
#endif

static char dir[SCRATCH_DIR_SIZE];

static void make_dir(void) {
  scratch_dir_make(dir, "plume-io");
}

static void remove_dir(void) {
  scratch_dir_remove(dir);
}

static const char *fixture(const char *name) {
  static char paths[4][512];
  static int next;
  char *path = paths[next++ % 4];
  snprintf(path, sizeof paths[0], "%s/%s", PLUME_FIXTURES_DIR, name);
  return path;
}

/* The call must fail with status, leaving a one-line message that contains needle. */
static void expect_failure(plm_status got, plm_status want, const char *needle) {
  const char *message = plm_frames_last_error();
  ck_assert_msg(got == want, "status %s, expected %s (%s)", plm_status_str(got),
                plm_status_str(want), message);
  ck_assert_msg(strstr(message, needle) != NULL, "message \"%s\" lacks \"%s\"", message, needle);
  ck_assert_msg(strchr(message, '\n') == NULL, "message is not one line: %s", message);
}

static plm_frames *open_ok(const char *path, unsigned flags, plm_frames_info *info) {
  plm_frames *f = NULL;
  plm_status status = plm_frames_open(path, flags, &f);
  ck_assert_msg(status == PLM_OK, "%s: %s", path, plm_frames_last_error());
  ck_assert_int_eq(plm_frames_info_get(f, info), PLM_OK);
  return f;
}

/* Equal element by element, NaN equal to NaN (f32). */
static bool same_frame(plm_dtype dtype, const void *a, const void *b, size_t bytes) {
  if (dtype != PLM_DTYPE_F32) return memcmp(a, b, bytes) == 0;
  const float *x = a, *y = b;
  for (size_t i = 0; i < bytes / sizeof(float); i++)
    if (!(x[i] == y[i] || (isnan(x[i]) && isnan(y[i])))) return false;
  return true;
}

/* path's frames equal want's (the .npy numpy saved): the same description (a count of -1
 * where the container does not say it, as Matroska's and NUT's do not), every frame of a
 * known count read by index from the last down, then in order by plm_frames_next to its
 * end, where the count is known. */
static void expect_frames_of(const char *path, unsigned flags, const char *want) {
  plm_frames_info info, expected;
  plm_frames *f = open_ok(path, flags, &info);
  plm_frames *npy = open_ok(want, 0, &expected);
  ck_assert_msg(info.dtype == expected.dtype && info.height == expected.height &&
                    info.width == expected.width &&
                    (info.count == expected.count || info.count == -1),
                "%s: %s %lldx%lld x %lld, expected %s %lldx%lld x %lld", path,
                plm_dtype_name(info.dtype), (long long)info.height, (long long)info.width,
                (long long)info.count, plm_dtype_name(expected.dtype), (long long)expected.height,
                (long long)expected.width, (long long)expected.count);
  const size_t bytes = plm_frames_frame_bytes(&info);
  ck_assert_uint_eq(bytes, (size_t)(info.height * info.width) * plm_dtype_size(info.dtype));
  unsigned char *got = malloc(bytes), *frame = malloc(bytes);
  ck_assert(got && frame);
  for (int64_t k = info.count - 1; k >= 0; k--) {
    ck_assert_int_eq(plm_frames_read(npy, k, frame, bytes), PLM_OK);
    ck_assert_msg(plm_frames_read(f, k, got, bytes) == PLM_OK, "%s", plm_frames_last_error());
    ck_assert_msg(same_frame(info.dtype, got, frame, bytes), "%s: frame %lld differs", path,
                  (long long)k);
  }
  /* plm_frames_read(0) left the position at 1: in order from there to the end. */
  int64_t read = plm_frames_position(f);
  ck_assert_int_eq(read, info.count > 0 ? 1 : 0);
  bool end = false;
  while (plm_frames_next(f, got, bytes, &end) == PLM_OK && !end) {
    ck_assert_int_eq(plm_frames_read(npy, read, frame, bytes), PLM_OK);
    ck_assert_msg(same_frame(info.dtype, got, frame, bytes), "%s: frame %lld differs", path,
                  (long long)read);
    read++;
  }
  ck_assert_msg(end, "%s: %s", path, plm_frames_last_error());
  ck_assert_int_eq(read, expected.count);
  ck_assert_int_eq(plm_frames_info_get(f, &info), PLM_OK);
  ck_assert_int_eq(info.count, expected.count); /* known at the end */
  ck_assert_str_eq(plm_frames_file(f, 0), path);
  ck_assert_ptr_null(plm_frames_file(f, info.count));
  free(got);
  free(frame);
  plm_frames_close(f);
  plm_frames_close(npy);
}

START_TEST(test_every_format_reads_as_the_library_that_wrote_it) {
  static const char *cases[][2] = {
      {"tiff/u8-strips.tif", "tiff/u8-strips.npy"},
      {"tiff/u16-stack-strips-deflate.tif", "tiff/u16-stack-strips-deflate.npy"},
      {"tiff/u16-stack-tiled-big-endian.tif", "tiff/u16-stack-tiled-big-endian.npy"},
      {"tiff/f32-stack-strips-big-endian.tif", "tiff/f32-stack-strips-big-endian.npy"},
      {"tiff/f32-tiled.tif", "tiff/f32-tiled.npy"},
      {"fits/u8-image.fits", "fits/u8-image.npy"},
      {"fits/u16-cube.fits", "fits/u16-cube.npy"},
      {"fits/i16-image.fits", "fits/i16-image.npy"},
      {"fits/i16-scaled-blank.fits", "fits/i16-scaled-blank.npy"},
      {"fits/f32-cube-extension.fits", "fits/f32-cube-extension.npy"},
      {"hdf5/u8-image.h5", "hdf5/u8-image.npy"},
      {"hdf5/u16-cube.h5:/frames", "hdf5/u16-cube.npy"},
      {"hdf5/f32-chunked-gzip.h5:/group/radiance", "hdf5/f32-chunked-gzip.npy"},
      {"hdf5/f64-missing.h5", "hdf5/f64-missing.npy"},
      {"hdf5/i16-packed.nc:/radiance", "hdf5/i16-packed.npy"},
      {"video/gray8-ffv1.avi", "video/gray8-ffv1.npy"},
      {"video/gray10-ffv1.mkv", "video/gray10-ffv1.npy"},
      {"video/gray16-ffv1.mkv", "video/gray16-ffv1.npy"},
      {"video/gray8-raw.nut", "video/gray8-raw.npy"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    expect_frames_of(fixture(cases[i][0]), 0, fixture(cases[i][1]));
  /* HDF5's stored values: CF's attributes not applied. */
  expect_frames_of(fixture("hdf5/i16-packed.nc:/radiance"), PLM_FRAMES_STORED_VALUES,
                   fixture("hdf5/i16-packed-stored.npy"));
  expect_frames_of(fixture("hdf5/f64-missing.h5"), PLM_FRAMES_STORED_VALUES,
                   fixture("hdf5/f64-missing-stored.npy"));
}
END_TEST

/* Copy a fixture into the scratch folder as name. */
static void copy_fixture(const char *from, const char *name) {
  FILE *in = fopen(fixture(from), "rb"), *out = fopen(scratch_path(dir, name), "wb");
  ck_assert(in && out);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, in)) > 0)
    ck_assert_uint_eq(fwrite(buffer, 1, n, out), n);
  ck_assert_int_eq(fclose(in), 0);
  ck_assert_int_eq(fclose(out), 0);
}

START_TEST(test_a_folder_of_mixed_shapes_reads_each_at_its_own) {
  copy_fixture("tiff/u8-strips.tif", "a.tif"); /* u8 13x11 each */
  copy_fixture("fits/u8-image.fits", "b.fits");
  copy_fixture("hdf5/u8-image.h5", "c.h5");
  plm_frames_info info;
  plm_frames *f = open_ok(dir, PLM_FRAMES_MIXED_SHAPES, &info);
  ck_assert(info.folder && info.count == 3 && info.dtype == PLM_DTYPE_U8);
  int64_t h = 0, w = 0;
  ck_assert_int_eq(plm_frames_shape(f, 1, &h, &w), PLM_OK);
  ck_assert(h == 13 && w == 11);
  ck_assert_str_eq(plm_frames_file(f, 2), scratch_path(dir, "c.h5"));
  unsigned char frame[13 * 11], want[13 * 11];
  ck_assert_int_eq(plm_frames_read(f, 1, frame, sizeof frame), PLM_OK);
  plm_frames_info npy_info;
  plm_frames *npy = open_ok(fixture("fits/u8-image.npy"), 0, &npy_info);
  ck_assert_int_eq(plm_frames_read(npy, 0, want, sizeof want), PLM_OK);
  ck_assert(memcmp(frame, want, sizeof want) == 0);
  plm_frames_close(npy);
  plm_frames_close(f);
  /* A file of another shape: read at its own with the flag, refused without it. */
  FILE *npy_file = fopen(scratch_path(dir, "d.npy"), "wb");
  ck_assert_ptr_nonnull(npy_file);
  /* A 2x3 u8 .npy written by hand, as numpy's format 1.0 lays it out. */
  char header[118];
  memset(header, ' ', sizeof header);
  int n = snprintf(header, sizeof header,
                   "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }");
  header[n] = ' ';
  header[sizeof header - 1] = '\n';
  const unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, sizeof header, 0};
  const unsigned char data[6] = {1, 2, 3, 4, 5, 6};
  ck_assert_uint_eq(fwrite(magic, 1, sizeof magic, npy_file), sizeof magic);
  ck_assert_uint_eq(fwrite(header, 1, sizeof header, npy_file), sizeof header);
  ck_assert_uint_eq(fwrite(data, 1, sizeof data, npy_file), sizeof data);
  ck_assert_int_eq(fclose(npy_file), 0);
  f = open_ok(dir, PLM_FRAMES_MIXED_SHAPES, &info);
  ck_assert_int_eq(info.count, 4);
  ck_assert_int_eq(plm_frames_shape(f, 3, &h, &w), PLM_OK);
  ck_assert(h == 2 && w == 3);
  unsigned char small[6];
  expect_failure(plm_frames_read(f, 3, small, 5), PLM_ERR_INVALID_ARG,
                 "frame 3 is 2x3 u8, 6 bytes");
  ck_assert_int_eq(plm_frames_read(f, 3, small, sizeof small), PLM_OK);
  ck_assert(memcmp(small, data, sizeof data) == 0);
  plm_frames_close(f);
  f = open_ok(dir, 0, &info);
  expect_failure(plm_frames_read(f, 3, frame, sizeof frame), PLM_ERR_IO, "d.npy");
  plm_frames_close(f);
}
END_TEST

enum { H = 3, W = 4, N = 5, HEADER = 9 };

/* N raw frames of u16 big-endian samples after HEADER bytes; the host's values in want. */
static size_t raw_input(unsigned char *bytes, uint16_t *want) {
  memset(bytes, 'h', HEADER);
  for (int i = 0; i < N * H * W; i++) {
    want[i] = (uint16_t)(i * 997 + 13);
    bytes[HEADER + 2 * i] = (unsigned char)(want[i] >> 8);
    bytes[HEADER + 2 * i + 1] = (unsigned char)(want[i] & 0xff);
  }
  return HEADER + 2 * (size_t)(N * H * W);
}

static const plm_raw_format format = {
    .dtype = PLM_DTYPE_U16, .height = H, .width = W, .big_endian = true, .header_bytes = HEADER};

START_TEST(test_raw_frames_from_a_file_in_any_order) {
  unsigned char bytes[HEADER + 2 * N * H * W];
  uint16_t want[N * H * W], got[H * W];
  const size_t length = raw_input(bytes, want);
  FILE *out = fopen(scratch_path(dir, "frames.raw"), "wb");
  ck_assert(out && fwrite(bytes, 1, length, out) == length && fclose(out) == 0);
  plm_frames *f = NULL;
  ck_assert_msg(plm_frames_open_raw(scratch_path(dir, "frames.raw"), &format, &f) == PLM_OK, "%s",
                plm_frames_last_error());
  plm_frames_info info;
  ck_assert_int_eq(plm_frames_info_get(f, &info), PLM_OK);
  ck_assert(info.count == N && info.height == H && info.width == W && !info.folder);
  for (int k = N - 1; k >= 0; k -= 2) {
    ck_assert_int_eq(plm_frames_read(f, k, got, sizeof got), PLM_OK);
    ck_assert(memcmp(got, want + k * H * W, sizeof got) == 0);
  }
  expect_failure(plm_frames_read(f, N, got, sizeof got), PLM_ERR_INVALID_ARG,
                 "frame 5 is not in 0..4");
  plm_frames_close(f);
  /* Short by one byte: refused at open, naming the short frame. */
  out = fopen(scratch_path(dir, "short.raw"), "wb");
  ck_assert(out && fwrite(bytes, 1, length - 1, out) == length - 1 && fclose(out) == 0);
  expect_failure(plm_frames_open_raw(scratch_path(dir, "short.raw"), &format, &f), PLM_ERR_IO,
                 "short.raw: frame 4 is short");
  /* In this API's words, not the plume command's options. */
  expect_failure(PLM_ERR_IO, PLM_ERR_IO, "(is the raw format's shape, dtype or header right?)");
  ck_assert_ptr_null(strstr(plm_frames_last_error(), "--raw"));
  /* Shorter than its header. */
  out = fopen(scratch_path(dir, "header.raw"), "wb");
  ck_assert(out && fwrite(bytes, 1, HEADER - 2, out) == HEADER - 2 && fclose(out) == 0);
  expect_failure(plm_frames_open_raw(scratch_path(dir, "header.raw"), &format, &f), PLM_ERR_IO,
                 "fewer than its header of 9 bytes (the raw format's header)");
  ck_assert_ptr_null(f);
}
END_TEST

START_TEST(test_raw_frames_from_standard_input_end_where_the_input_ends) {
  unsigned char bytes[HEADER + 2 * N * H * W];
  uint16_t want[N * H * W], got[H * W];
  const size_t length = raw_input(bytes, want);
  int ends[2];
  ck_assert_int_eq(pipe(ends), 0);
  ck_assert_int_eq(write(ends[1], bytes, length), (ssize_t)length);
  ck_assert_int_eq(close(ends[1]), 0);
  const int saved = dup(STDIN_FILENO);
  ck_assert_int_eq(dup2(ends[0], STDIN_FILENO), STDIN_FILENO);
  ck_assert_int_eq(close(ends[0]), 0);
  plm_frames *f = NULL;
  ck_assert_int_eq(plm_frames_open_raw("-", &format, &f), PLM_OK);
  plm_frames_info info;
  ck_assert_int_eq(plm_frames_info_get(f, &info), PLM_OK);
  ck_assert_int_eq(info.count, -1);
  ck_assert_str_eq(plm_frames_file(f, 0), "stdin");
  /* In order only: frame 2 before frame 0 is refused, and the stream is still usable. */
  expect_failure(plm_frames_read(f, 2, got, sizeof got), PLM_ERR_INVALID_ARG, "stdin");
  bool end = false;
  int64_t k = 0;
  while (plm_frames_next(f, got, sizeof got, &end) == PLM_OK && !end) {
    ck_assert(memcmp(got, want + k * H * W, sizeof got) == 0);
    k++;
  }
  ck_assert_msg(end, "%s", plm_frames_last_error());
  ck_assert_int_eq(k, N);
  ck_assert_int_eq(plm_frames_info_get(f, &info), PLM_OK);
  ck_assert_int_eq(info.count, N); /* known now */
  ck_assert_int_eq(plm_frames_next(f, got, sizeof got, &end), PLM_OK);
  ck_assert(end);
  plm_frames_close(f);
  ck_assert_int_eq(dup2(saved, STDIN_FILENO), STDIN_FILENO);
  ck_assert_int_eq(close(saved), 0);
}
END_TEST

START_TEST(test_failures_name_the_file_and_what_was_wrong) {
  plm_frames *f = (plm_frames *)&f;
  expect_failure(plm_frames_open(scratch_path(dir, "missing.tif"), 0, &f), PLM_ERR_IO,
                 "missing.tif: cannot open");
  ck_assert_ptr_null(f);
  expect_failure(plm_frames_open(fixture("hdf5/u16-cube.h5:/nothing"), 0, &f), PLM_ERR_IO,
                 "/nothing");
  expect_failure(plm_frames_open(fixture("tiff/rgb.tif"), 0, &f), PLM_ERR_UNSUPPORTED, "rgb.tif");
  expect_failure(plm_frames_open(NULL, 0, &f), PLM_ERR_INVALID_ARG, "path is NULL");
  expect_failure(plm_frames_open(fixture("tiff/u8-strips.tif"), 0x10, &f), PLM_ERR_INVALID_ARG,
                 "unknown bits 0x10");
  plm_raw_format bad = format;
  bad.dtype = PLM_DTYPE_I32;
  expect_failure(plm_frames_open_raw("-", &bad, &f), PLM_ERR_INVALID_ARG, "raw dtype i32");
  bad = format;
  bad.width = 0;
  expect_failure(plm_frames_open_raw("-", &bad, &f), PLM_ERR_INVALID_ARG, "raw shape 3x0");
  /* A success leaves the last message as it was. */
  plm_frames_info info;
  f = open_ok(fixture("tiff/u8-strips.tif"), 0, &info);
  ck_assert_msg(strstr(plm_frames_last_error(), "raw shape 3x0") != NULL, "%s",
                plm_frames_last_error());
  unsigned char frame[13 * 11];
  expect_failure(plm_frames_read(f, 0, frame, sizeof frame - 1), PLM_ERR_INVALID_ARG,
                 "dst_bytes 142: frame 0 is 13x11 u8, 143 bytes");
  expect_failure(plm_frames_read(f, -1, frame, sizeof frame), PLM_ERR_INVALID_ARG,
                 "frame -1 is not in 0..0");
  expect_failure(plm_frames_read(f, 0, NULL, sizeof frame), PLM_ERR_INVALID_ARG, "dst is NULL");
  bool end = true;
  expect_failure(plm_frames_next(f, frame, sizeof frame, NULL), PLM_ERR_INVALID_ARG, "end is NULL");
  /* Still usable after its failures. */
  ck_assert_int_eq(plm_frames_next(f, frame, sizeof frame, &end), PLM_OK);
  ck_assert(!end);
  plm_frames_close(f);
  plm_frames_close(NULL);
  ck_assert_uint_eq(plm_frames_frame_bytes(NULL), 0);
  ck_assert_ptr_null(plm_frames_file(NULL, 0));
  expect_failure(plm_frames_info_get(NULL, &info), PLM_ERR_INVALID_ARG, "frames is NULL");
}
END_TEST

static Suite *plume_io_suite(void) {
  Suite *suite = suite_create("plume_io");
  TCase *tc = tcase_create("frames");
  tcase_add_checked_fixture(tc, make_dir, remove_dir);
  tcase_add_test(tc, test_every_format_reads_as_the_library_that_wrote_it);
  tcase_add_test(tc, test_a_folder_of_mixed_shapes_reads_each_at_its_own);
  tcase_add_test(tc, test_raw_frames_from_a_file_in_any_order);
  tcase_add_test(tc, test_raw_frames_from_standard_input_end_where_the_input_ends);
  tcase_add_test(tc, test_failures_name_the_file_and_what_was_wrong);
  suite_add_tcase(suite, tc);
  return suite;
}

int main(void) {
  SRunner *runner = srunner_create(plume_io_suite());
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

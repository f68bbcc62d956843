/* tests/image_file_checks.h: checks shared by the tests of the image file readers that
 * another library's files feed (tests/test_tiff_io.c, tests/test_fits_io.c, tests/test_hdf5_io.c;
 * header-only). Include after checks.h, scratch_dir.h and support/image_io.h.
 *
 *   expect_image_message(status, PLM_ERR_IO, err, "in.fits: frame 2", "truncated");
 *   expect_image_equal(&got, &want, "u16-cube");          same dtype, shape and bytes
 *   expect_frames_equal("x.fits", &want);                 image_frames, last frame first
 *   fixture_file("fits", "u16-cube", "npy");              tests/fixtures/fits/u16-cube.npy
 *   scratch_file(dir, "cut.fits", bytes, length);         a path to a new file of bytes
 *   file_bytes(path, buffer, size);                       a file's first bytes, their count
 *   expect_damage_handled(dir, "fits", bytes, length, 211, 173);   cut and changed copies
 *   written_values(PLM_DTYPE_U16, n);                     n values for a writer to write
 *   expect_read_as_written("out.h5:/data", dtype, ndim, dims, data);   plume's reader's view
 *
 * Failures are test failures (ck_assert). One thread. PLUME_FIXTURES_DIR (the tests/fixtures
 * folder) comes from the test's CMake definition. */
#ifndef PLUME_TESTS_IMAGE_FILE_CHECKS_H
#define PLUME_TESTS_IMAGE_FILE_CHECKS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PLUME_FIXTURES_DIR
#error "PLUME_FIXTURES_DIR (the tests/fixtures directory) must be defined"
#endif

/* The path of tests/fixtures/FOLDER/NAME.EXTENSION (two live at a time). */
static inline const char *fixture_file(const char *folder, const char *name,
                                       const char *extension) {
  static char path[2][512];
  static int turn;
  turn ^= 1;
  snprintf(path[turn], sizeof path[turn], "%s/%s/%s.%s", PLUME_FIXTURES_DIR, folder, name,
           extension);
  return path[turn];
}

/* status is want, and the one-line message err holds a and (unless NULL) b. */
static inline void expect_image_message(plm_status status, plm_status want, const char *err,
                                        const char *a, const char *b) {
  ck_assert_msg(status == want, "status %s, expected %s (%s)", plm_status_str(status),
                plm_status_str(want), err);
  ck_assert_msg(strstr(err, a) != NULL, "message \"%s\" lacks \"%s\"", err, a);
  ck_assert_msg(!b || strstr(err, b) != NULL, "message \"%s\" lacks \"%s\"", err, b);
  ck_assert_msg(strchr(err, '\n') == NULL, "message is not one line: %s", err);
}

static inline void expect_image_equal(const image *got, const image *want, const char *what) {
  ck_assert_msg(got->dtype == want->dtype && got->ndim == want->ndim, "%s: %s %dD, expected %s %dD",
                what, plm_dtype_name(got->dtype), got->ndim, plm_dtype_name(want->dtype),
                want->ndim);
  for (int d = 0; d < want->ndim; d++)
    ck_assert_msg(got->dims[d] == want->dims[d], "%s: dimension %d is %lld, expected %lld", what, d,
                  (long long)got->dims[d], (long long)want->dims[d]);
  ck_assert_msg(memcmp(got->data, want->data, image_bytes(want)) == 0,
                "%s: the samples differ from the .npy's", what);
}

/* The frames of path, read one by one with image_frames (last first), are want's (a 2-D
 * want is one frame); a frame past the last is refused by name. */
static inline void expect_frames_equal(const char *path, const image *want) {
  char err[IMAGE_ERROR_SIZE] = "";
  image frame = {0};
  int64_t count = 0;
  image_frames *frames = NULL;
  ck_assert_msg(image_frames_open(path, &frame, &count, &frames, err, sizeof err) == PLM_OK, "%s",
                err);
  const int64_t want_count = want->ndim == 3 ? want->dims[0] : 1;
  ck_assert_msg(count == want_count, "%s: %lld frames, expected %lld", path, (long long)count,
                (long long)want_count);
  ck_assert(frame.dtype == want->dtype && frame.dims[0] == want->dims[want->ndim - 2] &&
            frame.dims[1] == want->dims[want->ndim - 1]);
  const size_t frame_bytes = image_bytes(&frame);
  unsigned char *got = malloc(frame_bytes);
  ck_assert_ptr_nonnull(got);
  for (int64_t k = count - 1; k >= 0; k--) {
    ck_assert_msg(image_frames_read(frames, k, got, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_msg(
        memcmp(got, (const unsigned char *)want->data + (size_t)k * frame_bytes, frame_bytes) == 0,
        "%s: frame %lld differs", path, (long long)k);
  }
  expect_image_message(image_frames_read(frames, count, got, err, sizeof err),
                       PLM_ERR_INVALID_ARG, err, path, "is not in");
  free(got);
  image_frames_close(frames);
}

/* A new file name in the scratch folder dir, holding bytes. */
static inline const char *scratch_file(const char *dir, const char *name, const void *bytes,
                                       size_t length) {
  const char *path = scratch_path(dir, name);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(bytes, 1, length, f), length);
  ck_assert_int_eq(fclose(f), 0);
  return path;
}

/* Up to size bytes from the start of path into buffer; their count. */
static inline size_t file_bytes(const char *path, void *buffer, size_t size) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  const size_t length = fread(buffer, 1, size, f);
  fclose(f);
  return length;
}

/* Copies of a file's bytes (length of them, at most 16 KiB) cut at every cut_step-th length,
 * and with a run of 8 bytes changed at every change_step-th offset, each written to the
 * scratch folder dir as cut.EXTENSION or changed.EXTENSION and read whole: a success, or a
 * failure with a one-line message naming the file and nothing allocated; never a crash or a
 * leak. */
static inline void expect_damage_handled(const char *dir, const char *extension,
                                         const unsigned char *bytes, size_t length,
                                         size_t cut_step, size_t change_step) {
  enum { MOST = 16384 };
  ck_assert_uint_le(length, MOST);
  char err[IMAGE_ERROR_SIZE], name[2][32];
  snprintf(name[0], sizeof name[0], "cut.%s", extension);
  snprintf(name[1], sizeof name[1], "changed.%s", extension);
  static unsigned char changed[MOST];
  for (size_t cut = 4, at = 8; cut < length || at + 8 < length; cut += cut_step, at += change_step)
    for (int kind = 0; kind < 2; kind++) {
      if (kind == 0 ? cut >= length : at + 8 >= length) continue;
      memcpy(changed, bytes, length);
      for (size_t i = at; kind == 1 && i < at + 8; i++) changed[i] ^= 0x5a;
      const char *path = scratch_file(dir, name[kind], changed, kind == 0 ? cut : length);
      image img = {0};
      if (image_read(path, NULL, &img, err, sizeof err) != PLM_OK) {
        ck_assert_msg(strstr(err, name[kind]) != NULL && strchr(err, '\n') == NULL, "%s", err);
        ck_assert_ptr_null(img.data);
      }
      image_free(&img, NULL);
    }
}

/* n samples of dtype (malloc'd) for the writers' tests, every byte pattern a dtype has room
 * for exercised; floats finite, one f64 (i = 2) past f32's range. */
static inline void *written_values(plm_dtype dtype, size_t n) {
  const size_t size = dtype == PLM_DTYPE_U8    ? 1
                      : dtype == PLM_DTYPE_U16 ? 2
                      : dtype == PLM_DTYPE_F64 ? 8
                                               : 4;
  void *data = malloc(n * size);
  ck_assert_ptr_nonnull(data);
  for (size_t i = 0; i < n; i++) switch (dtype) {
      case PLM_DTYPE_U8: ((uint8_t *)data)[i] = (uint8_t)(i * 37 + 1); break;
      case PLM_DTYPE_U16: ((uint16_t *)data)[i] = (uint16_t)(i * 4099 + 65000); break;
      case PLM_DTYPE_I32: ((int32_t *)data)[i] = (int32_t)(i * 2654435761u); break;
      case PLM_DTYPE_F32: ((float *)data)[i] = (float)i * -0.75f + 1e-3f; break;
      case PLM_DTYPE_F64: ((double *)data)[i] = (double)i * 1.000000001 - 3e100 * (i == 2); break;
    }
  return data;
}

/* path, a file a writer made of data (dtype, ndim dims), reads through image_read as what was
 * written: u8, u16 and f32 as they are, f64 narrowed to f32 (as a '<f8' .npy reads). Only
 * for what the readers take: 2-D and 3-D, u8, u16, f32 and f64. */
static inline void expect_read_as_written(const char *path, plm_dtype dtype, int ndim,
                                          const int64_t *dims, const void *data) {
  char err[IMAGE_ERROR_SIZE] = "";
  image got = {0};
  ck_assert_msg(image_read(path, NULL, &got, err, sizeof err) == PLM_OK, "%s", err);
  image want = {.dtype = dtype == PLM_DTYPE_F64 ? PLM_DTYPE_F32 : dtype, .ndim = ndim};
  memcpy(want.dims, dims, (size_t)ndim * sizeof *dims);
  const size_t n = (size_t)image_numel(&want);
  float *narrowed = NULL;
  if (dtype == PLM_DTYPE_F64) {
    narrowed = malloc(n * sizeof *narrowed);
    ck_assert_ptr_nonnull(narrowed);
    for (size_t i = 0; i < n; i++) narrowed[i] = (float)((const double *)data)[i];
  }
  want.data = narrowed ? (void *)narrowed : (void *)data;
  expect_image_equal(&got, &want, path);
  image_free(&got, NULL);
  free(narrowed);
}

#endif /* PLUME_TESTS_IMAGE_FILE_CHECKS_H */

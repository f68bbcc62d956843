/* tests/test_hdf5_io.c: HDF5 and NetCDF-4 files through libhdf5 (support/hdf5_io.h, by way of
 * support/image_io.h and support/frame_reader.h).
 *
 * Reading files other libraries wrote (tests/fixtures/hdf5/make.py, with h5py and
 * netCDF4-python): u8, u16 (big-endian on disk), i16, f32 and f64 elements; 2-D and 3-D
 * datasets; contiguous, and chunked across frames with gzip and shuffle; named as
 * "FILE:/group/dataset" (or without the leading '/') or chosen as the file's only dataset of
 * 2 or 3 dimensions. Each is equal sample for sample to the .npy numpy saved of what plume
 * must read, whole (image_read), frame by frame (image_frames), and as frames of plume
 * detect, from a file and from a folder. CF attributes (scale_factor, add_offset, _FillValue,
 * a vector missing_value) give physical f32 values with NaN for fills, or the stored values
 * when asked. What is refused (32-bit integers, 4-D, 1-D, strings, a group, a missing
 * dataset, two candidates, a NetCDF classic file, a dataset named after a .npy) and damaged
 * files (cut short, bytes changed, cut while open) fail with a one-line message naming the
 * file and the dataset, never a crash or a leak, and libhdf5 prints nothing on stderr while
 * the caller's error handler stays as it was; no libhdf5 object is left open. libhdf5's own
 * leaks on some damaged files are suppressed for LeakSanitizer (tests/lsan-libhdf5.supp).
 * Writing (hdf5_encode, plume op --out x.h5): every dtype in 1 to 4 dimensions, in the dataset
 * named or /data, reads back through libhdf5 as the little-endian type, shape and values
 * written, contiguous and without times, and through plume's reader where it reads such a
 * dataset; the same array gives the same bytes; what cannot be written is refused with a
 * message naming the file, libhdf5 printing nothing. A plain unit test: no backend.
 */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/frame_reader.h"
#include "support/hdf5_io.h"
#include "support/image_io.h"
#include "image_file_checks.h"

static char dir[SCRATCH_DIR_SIZE];
static char err[FRAME_READER_ERROR_SIZE];

static void make_dir(void) {
  scratch_dir_make(dir, "hdf5-io");
}

static void remove_dir(void) {
  scratch_dir_remove(dir);
}

/* tests/fixtures/hdf5/NAME (a file name with its extension, and any ":DATASET"). */
static const char *fixture(const char *name) {
  static char path[2][512];
  static int turn;
  turn ^= 1;
  snprintf(path[turn], sizeof path[turn], "%s/hdf5/%s", PLUME_FIXTURES_DIR, name);
  return path[turn];
}

/* plume closed every file, dataset, group, datatype and attribute it opened in libhdf5. */
static void expect_no_handle_open(const char *after) {
  const ssize_t open_objects = H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL);
  ck_assert_msg(open_objects == 0, "%zd libhdf5 objects left open after %s", open_objects, after);
}

static image read_ok(const char *path, unsigned flags) {
  image img = {0};
  ck_assert_msg(image_read_as(path, flags, NULL, &img, err, sizeof err) == PLM_OK, "%s", err);
  return img;
}

/* got's f32 samples are want's, NaN where want is NaN; the count of NaNs. */
static int expect_f32_equal(const float *got, const float *want, int64_t n, const char *what) {
  int nans = 0;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(want[i])) {
      ck_assert_msg(isnan(got[i]), "%s: sample %lld: %g, expected NaN", what, (long long)i, got[i]);
      nans++;
    } else {
      ck_assert_msg(got[i] == want[i], "%s: sample %lld: %.9g, expected %.9g", what, (long long)i,
                    got[i], want[i]);
    }
  }
  return nans;
}

static const struct {
  const char *path, *want;
  plm_dtype dtype;
} cases[] = {{"u8-image.h5", "u8-image.npy", PLM_DTYPE_U8},
             {"u8-image.h5:/image", "u8-image.npy", PLM_DTYPE_U8},
             {"u16-cube.h5:/frames", "u16-cube.npy", PLM_DTYPE_U16},
             {"u16-cube.h5:frames", "u16-cube.npy", PLM_DTYPE_U16},
             {"f32-chunked-gzip.h5:/group/radiance", "f32-chunked-gzip.npy", PLM_DTYPE_F32}};

START_TEST(test_h5py_files_read_as_numpy_saved_them) {
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    image want = read_ok(fixture(cases[c].want), 0);
    image got = read_ok(fixture(cases[c].path), 0);
    ck_assert_msg(got.dtype == cases[c].dtype, "%s: read as %s", cases[c].path,
                  plm_dtype_name(got.dtype));
    expect_image_equal(&got, &want, cases[c].path);
    image_free(&got, NULL);
    expect_frames_equal(fixture(cases[c].path), &want);
    image_free(&want, NULL);
  }
}
END_TEST

/* Physical values: scale_factor x stored + add_offset, NaN for _FillValue and missing_value;
 * with IMAGE_READ_STORED_VALUES the values as stored. Whole and frame by frame. */
START_TEST(test_cf_attributes_are_applied_or_kept) {
  static const struct {
    const char *path, *physical, *stored;
    int nans;
  } packed[] = {{"i16-packed.nc", "i16-packed.npy", "i16-packed-stored.npy", 2},
                {"i16-packed.nc:/radiance", "i16-packed.npy", "i16-packed-stored.npy", 2},
                {"f64-missing.h5", "f64-missing.npy", "f64-missing-stored.npy", 2}};
  for (size_t c = 0; c < sizeof packed / sizeof *packed; c++) {
    const char *path = fixture(packed[c].path);
    for (int stored = 0; stored < 2; stored++) {
      const unsigned flags = stored ? IMAGE_READ_STORED_VALUES : 0;
      image want = read_ok(fixture(stored ? packed[c].stored : packed[c].physical), 0);
      image got = read_ok(path, flags);
      ck_assert(got.dtype == PLM_DTYPE_F32 && got.ndim == want.ndim);
      for (int d = 0; d < want.ndim; d++) ck_assert_int_eq(got.dims[d], want.dims[d]);
      const int64_t n = image_numel(&want);
      ck_assert_int_eq(expect_f32_equal(got.data, want.data, n, packed[c].path),
                       stored ? 0 : packed[c].nans);
      /* Frame by frame, last first, as plume detect reads them. */
      image frame;
      int64_t count = 0;
      image_frames *frames = NULL;
      ck_assert_msg(
          image_frames_open_as(path, flags, &frame, &count, &frames, err, sizeof err) == PLM_OK,
          "%s", err);
      const int64_t samples = frame.dims[0] * frame.dims[1];
      ck_assert_int_eq(count * samples, n);
      float *one = malloc((size_t)samples * sizeof *one);
      ck_assert_ptr_nonnull(one);
      for (int64_t k = count - 1; k >= 0; k--) {
        ck_assert_msg(image_frames_read(frames, k, one, err, sizeof err) == PLM_OK, "%s", err);
        expect_f32_equal(one, (const float *)want.data + k * samples, samples, packed[c].path);
      }
      free(one);
      image_frames_close(frames);
      image_free(&got, NULL);
      image_free(&want, NULL);
    }
  }
  /* The f64 value beyond f32's range is +inf, as a '<f8' .npy's is. */
  image got = read_ok(fixture("f64-missing.h5:/temperature"), 0);
  ck_assert(isinf(((const float *)got.data)[3 * 7 + 3]));
  image_free(&got, NULL);
  expect_no_handle_open("the packed files");
}
END_TEST

START_TEST(test_a_dataset_is_the_frames_of_plume_detect) {
  image want = read_ok(fixture("u16-cube.npy"), 0);
  frame_reader *r = NULL;
  frame_reader_info info;
  ck_assert_msg(
      frame_reader_open(fixture("u16-cube.h5:/frames"), &info, &r, err, sizeof err) == PLM_OK, "%s",
      err);
  ck_assert(info.count == 3 && info.dtype == PLM_DTYPE_U16 && info.height == 9 &&
            info.width == 14 && !info.folder);
  uint16_t got[9 * 14];
  bool end = true;
  ck_assert_int_eq(frame_reader_next(r, 2, got, &end, err, sizeof err), PLM_OK);
  ck_assert(!end && memcmp(got, (uint16_t *)want.data + 2 * 9 * 14, sizeof got) == 0);
  ck_assert_int_eq(frame_reader_next(r, 3, got, &end, err, sizeof err), PLM_OK);
  ck_assert(end);
  frame_reader_close(r);
  image_free(&want, NULL);

  /* Stored values through the frame reader: i16 as f32, no NaN. */
  ck_assert_msg(frame_reader_open_as(fixture("i16-packed.nc"), IMAGE_READ_STORED_VALUES, &info, &r,
                                     err, sizeof err) == PLM_OK,
                "%s", err);
  ck_assert(info.count == 2 && info.dtype == PLM_DTYPE_F32 && info.height == 8 && info.width == 9);
  float packed[8 * 9];
  ck_assert_msg(frame_reader_read(r, 0, packed, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert(packed[3 * 9 + 4] == -32768.0f);
  frame_reader_close(r);

  /* In a folder, a .h5 (or .hdf5, .he5, .nc) is a frame like a .npy of the same values. */
  unsigned char bytes[8192];
  const size_t length = file_bytes(fixture("u8-image.h5"), bytes, sizeof bytes);
  scratch_file(dir, "frame_0.H5", bytes, length);
  scratch_file(dir, "frame_1.he5", bytes, length);
  ck_assert_msg(frame_reader_open(dir, &info, &r, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert(info.count == 2 && info.folder && info.dtype == PLM_DTYPE_U8 && info.height == 13 &&
            info.width == 11);
  image u8 = read_ok(fixture("u8-image.npy"), 0);
  uint8_t frame[13 * 11];
  ck_assert_msg(frame_reader_read(r, 1, frame, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert(memcmp(frame, u8.data, sizeof frame) == 0);
  frame_reader_close(r);
  image_free(&u8, NULL);
}
END_TEST

static void expect_refused(const char *name, plm_status want, const char *a, const char *b) {
  image img = {0};
  expect_image_message(image_read(fixture(name), NULL, &img, err, sizeof err), want, err, a, b);
  ck_assert_ptr_null(img.data);
  image frame;
  int64_t count = 0;
  image_frames *frames = NULL;
  expect_image_message(image_frames_open(fixture(name), &frame, &count, &frames, err, sizeof err),
                       want, err, a, b);
  ck_assert_ptr_null(frames);
  expect_no_handle_open(name);
}

START_TEST(test_what_is_not_read_is_named) {
  expect_refused("refused.h5:/i32", PLM_ERR_UNSUPPORTED,
                 "refused.h5: dataset /i32: 32-bit integers", "8- and 16-bit integers");
  /* The only candidate of refused.h5 is /i32: chosen, then refused. */
  expect_refused("refused.h5", PLM_ERR_UNSUPPORTED, "refused.h5: dataset /i32: 32-bit", NULL);
  expect_refused("refused.h5:/rank4", PLM_ERR_UNSUPPORTED,
                 "refused.h5: dataset /rank4: 4-D (2, 2, 3, 4)", "(N, H, W)");
  expect_refused("refused.h5:/names", PLM_ERR_UNSUPPORTED,
                 "refused.h5: dataset /names: a dataset of strings", NULL);
  expect_refused("u8-image.h5:/time", PLM_ERR_UNSUPPORTED, "u8-image.h5: dataset /time: 1-D (4)",
                 NULL);
  expect_refused("u16-cube.h5:/nope", PLM_ERR_IO, "u16-cube.h5: no dataset /nope",
                 "(its datasets of 2 or 3 dimensions: /frames)");
  expect_refused("f32-chunked-gzip.h5:/group", PLM_ERR_IO,
                 "f32-chunked-gzip.h5: /group is a group, not a dataset", NULL);
  expect_refused("f32-chunked-gzip.h5", PLM_ERR_IO,
                 "f32-chunked-gzip.h5: 2 datasets of 2 or 3 dimensions (/group/quality, "
                 "/group/radiance): name one, as ",
                 "f32-chunked-gzip.h5:/group/quality");
  expect_refused("classic.nc", PLM_ERR_UNSUPPORTED, "classic.nc: a NetCDF classic file",
                 "nccopy -k nc4");
  expect_refused("u8-image.npy:/image", PLM_ERR_IO, "u8-image.npy: a dataset is named after it",
                 "not an HDF5 file");
  /* fuzz_hdf5's find: a damaged integer layout whose conversion overran libhdf5's stack;
   * refused unread. */
  static unsigned char packed_copy[16384];
  unsigned char smash[4096];
  const size_t length = file_bytes(
      PLUME_FIXTURES_DIR "/../fuzz/corpus/hdf5/integer-layout-stack-smash", smash, sizeof smash);
  image img = {0};
  expect_image_message(
      image_read(scratch_file(dir, "smash.h5", smash + 1, length - 1), NULL, &img, err, sizeof err),
      PLM_ERR_UNSUPPORTED, err, "smash.h5: dataset /frames: 2-byte integers of a layout other",
      "overran its stack");
  ck_assert_ptr_null(img.data);
  /* Another: a superblock whose driver information block's damaged length made libhdf5
   * take 2.8 GB; refused before libhdf5 opens the file. */
  const size_t huge = file_bytes(PLUME_FIXTURES_DIR "/../fuzz/corpus/hdf5/driver-info-huge-alloc",
                                 packed_copy, sizeof packed_copy);
  expect_image_message(image_read(scratch_file(dir, "driver.h5", packed_copy + 1, huge - 1), NULL,
                                  &img, err, sizeof err),
                       PLM_ERR_UNSUPPORTED, err,
                       "driver.h5: its superblock gives a driver information block", NULL);
  ck_assert_ptr_null(img.data);
  /* A name that is not a file and has no file before a colon is a missing file. */
  expect_refused("absent.h5:/frames", PLM_ERR_IO, "absent.h5:/frames", NULL);
}
END_TEST

/* stderr into the file `log` (made empty) until stderr_back(the returned descriptor). */
static int stderr_into(const char *log) {
  fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  const int to = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert(saved >= 0 && to >= 0 && dup2(to, STDERR_FILENO) == STDERR_FILENO);
  close(to);
  return saved;
}

static void stderr_back(int saved) {
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
}

/* libhdf5's automatic error printing is off during plume's calls and back after them: a
 * failed read prints nothing, and the handler a host program set is the one it finds. */
START_TEST(test_libhdf5_prints_nothing_and_keeps_the_handler) {
  H5E_auto2_t before = NULL, after = NULL;
  void *before_data = NULL, *after_data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &before, &before_data);
  ck_assert_ptr_nonnull((void *)before); /* libhdf5's default printer */
  const char *log = scratch_path(dir, "stderr.txt");
  const int saved = stderr_into(log);
  image img = {0};
  plm_status missing = image_read(fixture("u16-cube.h5:/nope"), NULL, &img, err, sizeof err);
  unsigned char bytes[4096];
  const size_t length = file_bytes(fixture("u16-cube.h5"), bytes, sizeof bytes);
  plm_status cut =
      image_read(scratch_file(dir, "cut.h5", bytes, length / 2), NULL, &img, err, sizeof err);
  stderr_back(saved);
  ck_assert(missing == PLM_ERR_IO && cut == PLM_ERR_IO);
  struct stat st;
  ck_assert_int_eq(stat(log, &st), 0);
  ck_assert_msg(st.st_size == 0, "libhdf5 printed %lld bytes on stderr", (long long)st.st_size);
  H5Eget_auto2(H5E_DEFAULT, &after, &after_data);
  ck_assert(after == before && after_data == before_data);
}
END_TEST

START_TEST(test_a_damaged_file_fails_with_a_message) {
  unsigned char bytes[4096];
  const size_t length = file_bytes(fixture("u16-cube.h5"), bytes, sizeof bytes);
  ck_assert_uint_lt(length, sizeof bytes);
  /* Cut inside the data: libhdf5 refuses the file at open, naming the truncation. */
  const char *path = scratch_file(dir, "cut.h5", bytes, length - 100);
  image img = {0};
  expect_image_message(image_read(path, NULL, &img, err, sizeof err), PLM_ERR_IO, err,
                       "cut.h5: not an HDF5 file libhdf5 reads: ", "truncated file");
  ck_assert_ptr_null(img.data);
  /* Cut short while open: a frame read then is refused (libhdf5 would read zeros). */
  path = scratch_file(dir, "shrinks.h5", bytes, length);
  image frame;
  int64_t count = 0;
  image_frames *frames = NULL;
  ck_assert_msg(image_frames_open(path, &frame, &count, &frames, err, sizeof err) == PLM_OK, "%s",
                err);
  ck_assert_int_eq(truncate(path, (off_t)length - 300), 0);
  uint16_t data[9 * 14];
  expect_image_message(image_frames_read(frames, 2, data, err, sizeof err), PLM_ERR_IO, err,
                       "shrinks.h5: dataset /frames: frame 2: the file shrank", NULL);
  image_frames_close(frames);
  /* Cut at every 97th length, and with runs of bytes changed: a failure with a message, or
   * (where the damage leaves what is read whole) a success; never a crash or a leak. */
  expect_damage_handled(dir, "h5", bytes, length, 97, 89);
  unsigned char packed[16384];
  const size_t packed_length = file_bytes(fixture("i16-packed.nc"), packed, sizeof packed);
  ck_assert_uint_lt(packed_length, sizeof packed);
  expect_damage_handled(dir, "nc", packed, packed_length, 211, 173);
  expect_no_handle_open("the damaged files");
}
END_TEST

/* ---- writing ------------------------------------------------------------------------------ */

/* The file at path holds, at name, dtype's little-endian HDF5 type in ndim dims, contiguous,
 * with want's values, and no object on the way to it records a time. */
static void expect_libhdf5_reads(const char *path, const char *name, plm_dtype dtype, int ndim,
                                 const int64_t *dims, const void *want, size_t n) {
  static const struct {
    plm_dtype dtype;
    size_t size;
  } sizes[] = {{PLM_DTYPE_U8, 1},
               {PLM_DTYPE_U16, 2},
               {PLM_DTYPE_I32, 4},
               {PLM_DTYPE_F32, 4},
               {PLM_DTYPE_F64, 8}};
  const hid_t types[] = {H5T_STD_U8LE, H5T_STD_U16LE, H5T_STD_I32LE, H5T_IEEE_F32LE,
                         H5T_IEEE_F64LE};
  size_t t = 0;
  while (sizes[t].dtype != dtype) t++;
  const hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  ck_assert_msg(file >= 0, "libhdf5 cannot open %s", path);
  const hid_t dataset = H5Dopen2(file, name, H5P_DEFAULT);
  ck_assert_msg(dataset >= 0, "%s: no dataset %s", path, name);
  const hid_t type = H5Dget_type(dataset), space = H5Dget_space(dataset),
              dcpl = H5Dget_create_plist(dataset);
  ck_assert_msg(H5Tequal(type, types[t]) > 0, "%s: not the type of %s", path,
                plm_dtype_name(dtype));
  ck_assert_int_eq(H5Sget_simple_extent_ndims(space), ndim);
  hsize_t shape[4] = {0};
  H5Sget_simple_extent_dims(space, shape, NULL);
  for (int d = 0; d < ndim; d++) ck_assert_int_eq((int64_t)shape[d], dims[d]);
  ck_assert_int_eq(H5Pget_layout(dcpl), H5D_CONTIGUOUS);
  ck_assert_int_eq(H5Pget_nfilters(dcpl), 0);
  void *got = malloc(n * sizes[t].size);
  ck_assert_ptr_nonnull(got);
  ck_assert(H5Dread(dataset, types[t], H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0);
  ck_assert_msg(memcmp(got, want, n * sizes[t].size) == 0, "%s: values differ", path);
  free(got);
  /* No times: the dataset and each group on the way to it, the root group included. */
  char object[256];
  snprintf(object, sizeof object, "%s", name);
  for (;;) {
    const char *at = object[0] ? object : "/";
    H5O_info_t info;
    ck_assert(H5Oget_info_by_name2(file, at, &info, H5O_INFO_TIME, H5P_DEFAULT) >= 0);
    ck_assert_msg(info.atime == 0 && info.mtime == 0 && info.ctime == 0 && info.btime == 0,
                  "%s: %s records a time", path, at);
    if (!object[0]) break;
    *strrchr(object, '/') = '\0';
  }
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Tclose(type);
  H5Dclose(dataset);
  H5Fclose(file);
}

START_TEST(test_written_datasets_read_back) {
  static const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_I32, PLM_DTYPE_F32,
                                     PLM_DTYPE_F64};
  static const int64_t shape[4] = {2, 3, 5, 7};
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
    for (int ndim = 1; ndim <= 4; ndim++) {
      const int64_t *dims = shape + 4 - ndim;
      size_t n = 1;
      for (int k = 0; k < ndim; k++) n *= (size_t)dims[k];
      void *data = written_values(dtypes[d], n);
      /* /data when none is named; a name as the reader takes it, its groups made. */
      const char *given = ndim % 2 ? NULL : "scan//radiance/";
      const char *name = given ? "/scan/radiance" : HDF5_DEFAULT_DATASET;
      void *bytes = NULL, *again = NULL;
      size_t length = 0, length_again = 0;
      ck_assert_msg(hdf5_encode(dtypes[d], ndim, dims, data, given, &bytes, &length, "out.h5", err,
                                sizeof err) == PLM_OK,
                    "%s", err);
      ck_assert_msg(hdf5_encode(dtypes[d], ndim, dims, data, given, &again, &length_again, "out.h5",
                                err, sizeof err) == PLM_OK,
                    "%s", err);
      ck_assert_msg(length == length_again && memcmp(bytes, again, length) == 0,
                    "%s %d-D: two encodings differ", plm_dtype_name(dtypes[d]), ndim);
      const char *path = scratch_file(dir, "out.h5", bytes, length);
      expect_libhdf5_reads(path, name, dtypes[d], ndim, dims, data, n);
      /* plume's reader: u8, u16 and f32 datasets of 2 and 3 dimensions as written, f64
       * narrowed to f32; it refuses i32 (as 32-bit integers) and the other ranks. */
      char named[SCRATCH_DIR_SIZE + 64];
      snprintf(named, sizeof named, "%s:%s", path, name);
      image img = {0};
      if ((ndim == 2 || ndim == 3) && dtypes[d] != PLM_DTYPE_I32)
        expect_read_as_written(named, dtypes[d], ndim, dims, data);
      else
        expect_image_message(image_read(named, NULL, &img, err, sizeof err), PLM_ERR_UNSUPPORTED,
                             err, "out.h5: dataset ", dtypes[d] == PLM_DTYPE_I32 ? "32-bit" : "-D");
      ck_assert_ptr_null(img.data);
      free(bytes);
      free(again);
      free(data);
    }
  expect_no_handle_open("the written files");
}
END_TEST

/* What hdf5_encode cannot write is refused by name, before libhdf5 or by its account, and
 * libhdf5 prints nothing. */
START_TEST(test_what_is_not_written_is_named) {
  const char *log = scratch_path(dir, "stderr.txt");
  const int saved = stderr_into(log);
  void *bytes = NULL;
  size_t length = 0;
  const int64_t five[5] = {1, 1, 1, 1, 1}, empty[2] = {3, 0}, one_by_one[2] = {1, 1};
  uint8_t one = 0;
  const plm_status rank =
      hdf5_encode(PLM_DTYPE_U8, 5, five, &one, NULL, &bytes, &length, "x.h5", err, sizeof err);
  char rank_err[sizeof err];
  snprintf(rank_err, sizeof rank_err, "%s", err);
  const plm_status zero =
      hdf5_encode(PLM_DTYPE_U8, 2, empty, &one, NULL, &bytes, &length, "x.h5", err, sizeof err);
  char zero_err[sizeof err];
  snprintf(zero_err, sizeof zero_err, "%s", err);
  const plm_status root = hdf5_encode(PLM_DTYPE_U8, 2, one_by_one, &one, "//", &bytes, &length,
                                      "x.h5", err, sizeof err);
  char root_err[sizeof err];
  snprintf(root_err, sizeof root_err, "%s", err);
  /* libhdf5's own refusal: "." names the group it is in, which exists. */
  const plm_status dot = hdf5_encode(PLM_DTYPE_U8, 2, one_by_one, &one, "scan/.", &bytes, &length,
                                     "x.h5", err, sizeof err);
  stderr_back(saved);
  expect_image_message(rank, PLM_ERR_INVALID_ARG, rank_err, "x.h5: 5 dimensions", "1 to 4");
  expect_image_message(zero, PLM_ERR_INVALID_ARG, zero_err, "x.h5: dimension 1 is 0", NULL);
  expect_image_message(root, PLM_ERR_INVALID_ARG, root_err, "x.h5: '/' is the root group",
                       "x.h5:/data");
  expect_image_message(dot, PLM_ERR_IO, err, "x.h5: dataset /scan/.: ", "already exists");
  ck_assert_ptr_null(bytes);
  ck_assert_uint_eq(length, 0);
  struct stat st;
  ck_assert_int_eq(stat(log, &st), 0);
  ck_assert_msg(st.st_size == 0, "libhdf5 printed %lld bytes on stderr", (long long)st.st_size);
  expect_no_handle_open("the refused writes");
}
END_TEST

int main(void) {
  Suite *suite = suite_create("hdf5_io");
  TCase *tcase = tcase_create("hdf5_io");
  tcase_add_checked_fixture(tcase, make_dir, remove_dir);
  tcase_set_timeout(tcase, 60);
  tcase_add_test(tcase, test_h5py_files_read_as_numpy_saved_them);
  tcase_add_test(tcase, test_cf_attributes_are_applied_or_kept);
  tcase_add_test(tcase, test_a_dataset_is_the_frames_of_plume_detect);
  tcase_add_test(tcase, test_what_is_not_read_is_named);
  tcase_add_test(tcase, test_libhdf5_prints_nothing_and_keeps_the_handler);
  tcase_add_test(tcase, test_a_damaged_file_fails_with_a_message);
  tcase_add_test(tcase, test_written_datasets_read_back);
  tcase_add_test(tcase, test_what_is_not_written_is_named);
  suite_add_tcase(suite, tcase);
  SRunner *runner = srunner_create(suite);
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  const int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

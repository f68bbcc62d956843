/* tests/test_fits_io.c: FITS files through cfitsio (support/fits_io.h, by way of
 * support/image_io.h and support/frame_reader.h).
 *
 * Reading files another library wrote (tests/fixtures/fits/make.py, with astropy): BITPIX 8,
 * 16 as unsigned (BZERO 32768), signed and scaled (BSCALE/BZERO, a BLANK pixel), and -32;
 * images and cubes; the image in an extension after an empty primary. Each is equal sample for
 * sample to the .npy numpy saved of what plume must read, whole (image_read), frame by frame
 * (image_frames), and as frames of plume detect, from a file and from a folder. Names are taken
 * literally, never as cfitsio's extended syntax. The kinds refused (32-bit integers, one axis,
 * tables only, tile-compressed) and damaged files (cut short, bytes changed, cut while open) fail
 * with a one-line message naming the file, never a crash or a leak. Writing (fits_encode, plume op
 * --out x.fits): every dtype and 1 to 4 dimensions, read back by cfitsio itself (BITPIX, BZERO, the
 * axes, the values) and by plume's reader; the same array gives the same bytes. A plain unit test:
 * no backend.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fitsio.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/fits_io.h"
#include "support/frame_reader.h"
#include "support/image_io.h"
#include "image_file_checks.h"

static char dir[SCRATCH_DIR_SIZE];
static char err[FRAME_READER_ERROR_SIZE];

static void make_dir(void) {
  scratch_dir_make(dir, "fits-io");
}

static void remove_dir(void) {
  scratch_dir_remove(dir);
}

static const char *fixture(const char *name, const char *extension) {
  return fixture_file("fits", name, extension);
}

static image read_ok(const char *path) {
  image img = {0};
  ck_assert_msg(image_read(path, NULL, &img, err, sizeof err) == PLM_OK, "%s", err);
  return img;
}

static const struct {
  const char *name;
  plm_dtype dtype;
} cases[] = {{"u8-image", PLM_DTYPE_U8},
             {"u16-cube", PLM_DTYPE_U16},
             {"i16-image", PLM_DTYPE_F32},
             {"f32-cube-extension", PLM_DTYPE_F32}};

START_TEST(test_astropy_files_read_as_numpy_saved_them) {
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    image want = read_ok(fixture(cases[c].name, "npy"));
    image got = read_ok(fixture(cases[c].name, "fits"));
    ck_assert_msg(got.dtype == cases[c].dtype, "%s: read as %s", cases[c].name,
                  plm_dtype_name(got.dtype));
    expect_image_equal(&got, &want, cases[c].name);
    image_free(&got, NULL);
    expect_frames_equal(fixture(cases[c].name, "fits"), &want);
    image_free(&want, NULL);
  }
}
END_TEST

/* Physical values, BSCALE x stored + BZERO, and NaN where a pixel is the BLANK value. */
START_TEST(test_scaled_values_are_physical_and_blank_is_nan) {
  image want = read_ok(fixture("i16-scaled-blank", "npy"));
  image got = read_ok(fixture("i16-scaled-blank", "fits"));
  ck_assert(got.dtype == PLM_DTYPE_F32 && got.ndim == 3 && got.dims[0] == 2 && got.dims[1] == 8 &&
            got.dims[2] == 9);
  const float *g = got.data, *w = want.data;
  int nans = 0;
  for (int64_t i = 0; i < image_numel(&want); i++) {
    if (isnan(w[i])) {
      ck_assert_msg(isnan(g[i]), "sample %lld: %g, expected NaN (BLANK)", (long long)i, g[i]);
      nans++;
    } else {
      ck_assert_msg(g[i] == w[i], "sample %lld: %g, expected %g", (long long)i, g[i], w[i]);
    }
  }
  ck_assert_int_eq(nans, 1);
  image_free(&got, NULL);
  image_free(&want, NULL);
}
END_TEST

START_TEST(test_a_cube_is_the_frames_of_plume_detect) {
  image want = read_ok(fixture("u16-cube", "npy"));
  frame_reader *r = NULL;
  frame_reader_info info;
  ck_assert_msg(
      frame_reader_open(fixture("u16-cube", "fits"), &info, &r, err, sizeof err) == PLM_OK, "%s",
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

  /* In a folder, a .fits (or .fit, .fts) is a frame like a .npy of the same values. */
  unsigned char bytes[8192];
  const size_t length = file_bytes(fixture("u8-image", "fits"), bytes, sizeof bytes);
  scratch_file(dir, "frame_0.FIT", bytes, length);
  scratch_file(dir, "frame_1.fts", bytes, length);
  ck_assert_msg(frame_reader_open(dir, &info, &r, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert(info.count == 2 && info.folder && info.dtype == PLM_DTYPE_U8 && info.height == 13 &&
            info.width == 11);
  image u8 = read_ok(fixture("u8-image", "npy"));
  uint8_t frame[13 * 11];
  ck_assert_msg(frame_reader_read(r, 1, frame, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert(memcmp(frame, u8.data, sizeof frame) == 0);
  frame_reader_close(r);
  image_free(&u8, NULL);
  image_free(&want, NULL);
}
END_TEST

/* cfitsio's extended syntax ("x.fits[1]", "-" for stdin, "mem://") is not applied to a
 * name: the file read is the one named. */
START_TEST(test_names_are_taken_literally) {
  unsigned char bytes[8192];
  const size_t length = file_bytes(fixture("u8-image", "fits"), bytes, sizeof bytes);
  image want = read_ok(fixture("u8-image", "npy"));
  const char *names[] = {"x.fits[1]", "-", "mem:x.fits", "x.fits+1", "y.fits[#row>2]"};
  for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
    image got = read_ok(scratch_file(dir, names[n], bytes, length));
    expect_image_equal(&got, &want, names[n]);
    image_free(&got, NULL);
  }
  image_free(&want, NULL);
}
END_TEST

START_TEST(test_what_is_not_read_is_named) {
  image img = {0};
  expect_image_message(image_read(fixture("i32-refused", "fits"), NULL, &img, err, sizeof err),
                       PLM_ERR_UNSUPPORTED, err, "i32-refused.fits: HDU 1: BITPIX 32",
                       "8- and 16-bit integers and of floats");
  expect_image_message(image_read(fixture("vector-refused", "fits"), NULL, &img, err, sizeof err),
                       PLM_ERR_UNSUPPORTED, err, "vector-refused.fits: HDU 1: NAXIS 1", NULL);
  expect_image_message(image_read(fixture("table-only", "fits"), NULL, &img, err, sizeof err),
                       PLM_ERR_IO, err, "table-only.fits: no image: none of its 2 HDUs", NULL);
  expect_image_message(image_read(fixture("rice-refused", "fits"), NULL, &img, err, sizeof err),
                       PLM_ERR_UNSUPPORTED, err,
                       "rice-refused.fits: HDU 2: a tile-compressed image", "funpack");
  /* fuzz_fits's find: a damaged RICE tile on which cfitsio 4.2 crashed; refused unread. */
  unsigned char crash[16384];
  const size_t length =
      file_bytes(PLUME_FIXTURES_DIR "/../fuzz/corpus/fits/rice-crash", crash, sizeof crash);
  const char *path = scratch_file(dir, "rice-crash.fits", crash + 1, length - 1);
  expect_image_message(image_read(path, NULL, &img, err, sizeof err), PLM_ERR_UNSUPPORTED, err,
                       "rice-crash.fits: HDU 2: a tile-compressed image", NULL);
  /* and one whose compression keywords made cfitsio divide by zero as it moved to the HDU
   * (SIGFPE in imcomp_get_compressed_image_par): refused from its header, read before. */
  const size_t fpe_length =
      file_bytes(PLUME_FIXTURES_DIR "/../fuzz/corpus/fits/tile-header-fpe", crash, sizeof crash);
  path = scratch_file(dir, "tile-header-fpe.fits", crash + 1, fpe_length - 1);
  expect_image_message(image_read(path, NULL, &img, err, sizeof err), PLM_ERR_UNSUPPORTED, err,
                       "tile-header-fpe.fits: HDU 2: a tile-compressed image", NULL);
  ck_assert_ptr_null(img.data);
}
END_TEST

/* The same header with its XTENSION (card 36 of the file) or ZIMAGE (card 46) card written
 * in ways the FITS standard does not allow but cfitsio reads as a binary table or a
 * compressed image all the same: each made cfitsio divide by zero while the reader's own
 * look at the header missed it (fuzz_fits found the first in CI). Each is refused. */
START_TEST(test_compressed_headers_cfitsio_reads_loosely_are_refused) {
  static const struct {
    int card;
    const char *text;
  } loose[] = {
      {46, "ZIMAGE= T"},              /* '=' in column 7 */
      {46, "HIERARCH ZIMAGE = T"},    /* ESO's HIERARCH convention */
      {36, "XTENSION= 'BINTABLE  '"}, /* trailing blanks inside the quotes */
      {36, "XTENSION= ' BINTABLE'"},  /* leading blanks inside them */
      {36, "XTENSION= 'A3DTABLE'"},   /* the binary table's older names */
      {36, "XTENSION= '3DTABLE'"},
      {36, "XTENSION= BINTABLE"},  /* no quotes */
      {36, "XTENSION='BINTABLE'"}, /* no blank after '=' */
  };
  unsigned char original[16384], bytes[16384];
  const size_t length = file_bytes(PLUME_FIXTURES_DIR "/../fuzz/corpus/fits/tile-header-fpe",
                                   original, sizeof original);
  for (size_t k = 0; k < sizeof loose / sizeof *loose; k++) {
    memcpy(bytes, original, length);
    unsigned char *card = bytes + 1 + 80 * loose[k].card;
    memset(card, ' ', 80);
    memcpy(card, loose[k].text, strlen(loose[k].text));
    const char *path = scratch_file(dir, "loose.fits", bytes + 1, length - 1);
    image img = {0};
    expect_image_message(image_read(path, NULL, &img, err, sizeof err), PLM_ERR_UNSUPPORTED, err,
                         "loose.fits: HDU 2: a tile-compressed image", NULL);
    ck_assert_ptr_null(img.data);
  }
}
END_TEST

/* A header of 2880 bytes at out from cards (NULL-ended), END after them, blank-padded. */
static size_t put_header(unsigned char *out, const char *const cards[]) {
  size_t n = 0;
  for (int i = 0;; i++) {
    const char *card = cards[i] ? cards[i] : "END";
    memset(out + n, ' ', 80);
    memcpy(out + n, card, strlen(card));
    n += 80;
    if (!cards[i]) break;
  }
  const size_t padded = (n + 2879) / 2880 * 2880;
  memset(out + n, ' ', padded - n);
  return padded;
}

/* Table headers after an empty primary on which cfitsio 4.2 would hang or ask for
 * gigabytes (found by a review of this reader): refused, naming the HDU. */
START_TEST(test_table_headers_cfitsio_would_hang_or_swell_on_are_refused) {
  static const char *const primary[] = {"SIMPLE  =                    T",
                                        "BITPIX  =                    8",
                                        "NAXIS   =                    0", NULL};
  /* Each table's cards after its XTENSION card, which each case gives. NAXIS1 x NAXIS2 =
   * 128 (2^57 - 45) wraps to -5760: the next header would be this one again, and the one
   * after it, without end. */
  static const char *const wrapping[] = {"BITPIX  =                    8",
                                         "NAXIS   =                    2",
                                         "NAXIS1  =                  128",
                                         "NAXIS2  =   144115188075855827",
                                         "PCOUNT  =                    0",
                                         "GCOUNT  =                    1",
                                         "TFIELDS =                    1",
                                         "TFORM1  = '128B'",
                                         NULL};
  /* 14 million fields, past the standard's 999, which cfitsio 4.2 lets by: it would
   * allocate and fill 2.2 GB for them, binary table or ASCII. */
  static const char *const wide[] = {"BITPIX  =                    8",
                                     "NAXIS   =                    2",
                                     "NAXIS1  =                    0",
                                     "NAXIS2  =                    0",
                                     "PCOUNT  =                    0",
                                     "GCOUNT  =                    1",
                                     "TFIELDS =             14000000",
                                     NULL};
  static const struct {
    const char *xtension;
    const char *const *rest;
    const char *message;
  } refused[] = {
      {"XTENSION= 'BINTABLE'", wrapping, "t.fits: HDU 2: damaged: its data would end at byte"},
      {"XTENSION= 'BINTABLE'", wide,
       "t.fits: HDU 2: damaged: a table of more than the standard's 999 fields"},
      {"XTENSION= 'TABLE   '", wide,
       "t.fits: HDU 2: damaged: a table of more than the standard's 999 fields"},
  };
  unsigned char bytes[2 * 2880];
  for (size_t k = 0; k < sizeof refused / sizeof *refused; k++) {
    const char *table[16] = {refused[k].xtension};
    for (size_t c = 0; refused[k].rest[c]; c++) table[c + 1] = refused[k].rest[c];
    const size_t first = put_header(bytes, primary);
    const size_t length = first + put_header(bytes + first, table);
    const char *path = scratch_file(dir, "t.fits", bytes, length);
    image img = {0};
    expect_image_message(image_read(path, NULL, &img, err, sizeof err), PLM_ERR_IO, err,
                         refused[k].message, NULL);
    ck_assert_ptr_null(img.data);
  }
}
END_TEST

/* A card whose quoted value begins after an '=' before column 10 and has a doubled quote as
 * its 70th character: cfitsio 4.2 parses it 2 bytes past its own stack buffer (found by a
 * review of plume's calls into the libraries; fixed in cfitsio 4.6), unseen by ASan. Refused
 * before cfitsio reads the header, the primary's (before the file is opened) or an
 * extension's, naming the HDU and the card; an early '=' with a short value is read as
 * cfitsio reads it. */
START_TEST(test_cards_cfitsio_would_parse_past_its_buffer_are_refused) {
  char overrun[81] = "='";
  memset(overrun + 2, 'C', 68);
  memcpy(overrun + 70, "''xxxxxxxx", 11);
  ck_assert_uint_eq(strlen(overrun), 80);
  const char *const image_cards[] = {
      "BITPIX  =                    8", "NAXIS   =                    2",
      "NAXIS1  =                    3", "NAXIS2  =                    2"};
  const unsigned char pixels[6] = {1, 2, 3, 4, 5, 6};
  static const char *const empty_primary[] = {"SIMPLE  =                    T",
                                              "BITPIX  =                    8",
                                              "NAXIS   =                    0", NULL};
  const char *primary[8] = {"SIMPLE  =                    T"},
             *extension[10] = {"XTENSION= 'IMAGE   '"};
  for (int c = 0; c < 4; c++) primary[c + 1] = extension[c + 1] = image_cards[c];
  extension[5] = "PCOUNT  =                    0";
  extension[6] = "GCOUNT  =                    1";
  static const struct {
    bool in_extension;
    const char *message; /* NULL: read */
  } headers[] = {{false, "t.fits: HDU 1: damaged: card 6 is a quoted value after an '='"},
                 {true, "t.fits: HDU 2: damaged: card 8 is a quoted value after an '='"},
                 {false, NULL}};
  unsigned char bytes[4 * 2880];
  for (size_t k = 0; k < sizeof headers / sizeof *headers; k++) {
    const char *card = headers[k].message ? overrun : "KEY='short'";
    size_t length = 0;
    if (headers[k].in_extension) {
      extension[7] = card;
      length = put_header(bytes, empty_primary);
      length += put_header(bytes + length, extension);
    } else {
      primary[5] = card;
      length = put_header(bytes, primary);
    }
    memset(bytes + length, 0, 2880);
    memcpy(bytes + length, pixels, sizeof pixels);
    const char *path = scratch_file(dir, "t.fits", bytes, length + 2880);
    image img = {0};
    const plm_status status = image_read(path, NULL, &img, err, sizeof err);
    if (headers[k].message) {
      expect_image_message(status, PLM_ERR_IO, err, headers[k].message, "refused before cfitsio");
      ck_assert_ptr_null(img.data);
      continue;
    }
    ck_assert_msg(status == PLM_OK, "%s", err);
    ck_assert(img.dtype == PLM_DTYPE_U8 && img.ndim == 2 && img.dims[0] == 2 && img.dims[1] == 3);
    ck_assert_mem_eq(img.data, pixels, sizeof pixels);
    image_free(&img, NULL);
  }
}
END_TEST

START_TEST(test_a_damaged_file_fails_with_a_message) {
  unsigned char bytes[8640];
  const size_t length = file_bytes(fixture("f32-cube-extension", "fits"), bytes, sizeof bytes);
  ck_assert_uint_eq(length, sizeof bytes);
  /* Cut inside the data, or without the padding of its last block of 2880 bytes (which
   * cfitsio reads whole): refused at open, naming the file and where its data ends. */
  const char *path = scratch_file(dir, "cut.fits", bytes, 5760 + 200);
  image img = {0};
  expect_image_message(image_read(path, NULL, &img, err, sizeof err), PLM_ERR_IO, err,
                       "cut.fits: HDU 2: truncated: its data ends at byte 8640, the file at 5960",
                       NULL);
  ck_assert_ptr_null(img.data);
  path = scratch_file(dir, "unpadded.fits", bytes, 5760 + 480);
  expect_image_message(image_read(path, NULL, &img, err, sizeof err), PLM_ERR_IO, err,
                       "unpadded.fits: HDU 2: truncated", NULL);
  /* Cut short while open: the frame read then fails with cfitsio's reason, and every later
   * read of that file fails too, naming the frame that failed (what cfitsio buffered is not
   * trusted after a failure). */
  path = scratch_file(dir, "shrinks.fits", bytes, length);
  image frame;
  int64_t count = 0;
  image_frames *frames = NULL;
  ck_assert_msg(image_frames_open(path, &frame, &count, &frames, err, sizeof err) == PLM_OK, "%s",
                err);
  ck_assert_int_eq(truncate(path, 5760), 0);
  float data[6 * 5];
  expect_image_message(image_frames_read(frames, 1, data, err, sizeof err), PLM_ERR_IO, err,
                       "shrinks.fits: frame 1: ", NULL);
  expect_image_message(image_frames_read(frames, 2, data, err, sizeof err), PLM_ERR_IO, err,
                       "shrinks.fits: frame 2: not read: reading frame 1 failed", NULL);
  expect_image_message(image_frames_read(frames, 1, data, err, sizeof err), PLM_ERR_IO, err,
                       "shrinks.fits: frame 1: ", NULL);
  image_frames_close(frames);
  /* Cut at every 211th length, and with runs of bytes changed: a failure with a message,
   * or (where the damage leaves what is read whole) a success; never a crash or a leak. */
  expect_damage_handled(dir, "fits", bytes, length, 211, 173);
}
END_TEST

/* ---- writing ------------------------------------------------------------------------------ */

/* The file cfitsio reads back: BITPIX, the axes, BZERO, ORIGIN and the values as stored. */
static void expect_cfitsio_reads(const char *path, plm_dtype dtype, int ndim, const int64_t *dims,
                                 const void *want, size_t n) {
  static const struct {
    plm_dtype dtype;
    int bitpix, equivalent, type;
    size_t size;
  } types[] = {{PLM_DTYPE_U8, 8, 8, TBYTE, 1},
               {PLM_DTYPE_U16, 16, 20 /* USHORT_IMG */, TUSHORT, 2},
               {PLM_DTYPE_I32, 32, 32, TINT, 4},
               {PLM_DTYPE_F32, -32, -32, TFLOAT, 4},
               {PLM_DTYPE_F64, -64, -64, TDOUBLE, 8}};
  size_t t = 0;
  while (types[t].dtype != dtype) t++;
  fitsfile *file = NULL;
  int status = 0, bitpix = 0, equivalent = 0, naxis = 0, anynul = 0;
  LONGLONG axes[4] = {0};
  char origin[FLEN_VALUE] = "";
  fits_open_file(&file, path, READONLY, &status);
  fits_get_img_type(file, &bitpix, &status);
  fits_get_img_equivtype(file, &equivalent, &status);
  fits_get_img_dim(file, &naxis, &status);
  fits_get_img_sizell(file, 4, axes, &status);
  fits_read_key_str(file, "ORIGIN", origin, NULL, &status);
  void *got = malloc(n * types[t].size);
  ck_assert_ptr_nonnull(got);
  fits_read_img(file, types[t].type, 1, (LONGLONG)n, NULL, got, &anynul, &status);
  fits_close_file(file, &status);
  ck_assert_msg(status == 0, "%s: cfitsio status %d", path, status);
  ck_assert_int_eq(bitpix, types[t].bitpix);
  ck_assert_int_eq(equivalent, types[t].equivalent);
  ck_assert_int_eq(naxis, ndim);
  for (int d = 0; d < ndim; d++) ck_assert_int_eq(axes[d], dims[ndim - 1 - d]);
  ck_assert_str_eq(origin, "plume");
  ck_assert_msg(memcmp(got, want, n * types[t].size) == 0, "%s: values differ", path);
  free(got);
}

START_TEST(test_written_arrays_read_back) {
  static const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_I32, PLM_DTYPE_F32,
                                     PLM_DTYPE_F64};
  static const int64_t shape[4] = {2, 3, 5, 7};
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
    for (int ndim = 1; ndim <= 4; ndim++) {
      const int64_t *dims = shape + 4 - ndim;
      size_t n = 1;
      for (int k = 0; k < ndim; k++) n *= (size_t)dims[k];
      void *data = written_values(dtypes[d], n);
      void *bytes = NULL, *again = NULL;
      size_t length = 0, length_again = 0;
      ck_assert_msg(fits_encode(dtypes[d], ndim, dims, data, &bytes, &length, "out.fits", err,
                                sizeof err) == PLM_OK,
                    "%s", err);
      ck_assert_uint_eq(length % 2880, 0);
      ck_assert_msg(fits_encode(dtypes[d], ndim, dims, data, &again, &length_again, "out.fits", err,
                                sizeof err) == PLM_OK,
                    "%s", err);
      ck_assert_msg(length == length_again && memcmp(bytes, again, length) == 0,
                    "%s %d-D: two encodings differ", plm_dtype_name(dtypes[d]), ndim);
      const char *path = scratch_file(dir, "out.fits", bytes, length);
      expect_cfitsio_reads(path, dtypes[d], ndim, dims, data, n);
      /* plume's reader: u8, u16 and f32 images and cubes as written; f64 narrowed to f32. */
      if ((ndim == 2 || ndim == 3) && dtypes[d] != PLM_DTYPE_I32)
        expect_read_as_written(path, dtypes[d], ndim, dims, data);
      free(bytes);
      free(again);
      free(data);
    }
  /* What is refused, by name. */
  void *bytes = NULL;
  size_t length = 0;
  const int64_t five[5] = {1, 1, 1, 1, 1}, empty[2] = {3, 0};
  uint8_t one = 0;
  expect_image_message(
      fits_encode(PLM_DTYPE_U8, 5, five, &one, &bytes, &length, "x.fits", err, sizeof err),
      PLM_ERR_INVALID_ARG, err, "x.fits: 5 dimensions", NULL);
  expect_image_message(
      fits_encode(PLM_DTYPE_U8, 2, empty, &one, &bytes, &length, "x.fits", err, sizeof err),
      PLM_ERR_INVALID_ARG, err, "x.fits: dimension 1 is 0", NULL);
  ck_assert_ptr_null(bytes);
}
END_TEST

int main(void) {
  Suite *suite = suite_create("fits_io");
  TCase *tcase = tcase_create("fits_io");
  tcase_add_checked_fixture(tcase, make_dir, remove_dir);
  tcase_set_timeout(tcase, 60);
  tcase_add_test(tcase, test_astropy_files_read_as_numpy_saved_them);
  tcase_add_test(tcase, test_scaled_values_are_physical_and_blank_is_nan);
  tcase_add_test(tcase, test_a_cube_is_the_frames_of_plume_detect);
  tcase_add_test(tcase, test_names_are_taken_literally);
  tcase_add_test(tcase, test_what_is_not_read_is_named);
  tcase_add_test(tcase, test_compressed_headers_cfitsio_reads_loosely_are_refused);
  tcase_add_test(tcase, test_table_headers_cfitsio_would_hang_or_swell_on_are_refused);
  tcase_add_test(tcase, test_cards_cfitsio_would_parse_past_its_buffer_are_refused);
  tcase_add_test(tcase, test_a_damaged_file_fails_with_a_message);
  tcase_add_test(tcase, test_written_arrays_read_back);
  suite_add_tcase(suite, tcase);
  SRunner *runner = srunner_create(suite);
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  const int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

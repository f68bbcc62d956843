/* tests/test_image_io.c: the command-line tool's image files (support/image_io.h).
 *
 * Round trips of every dtype and rank through .npy, .npy files written by hand
 * (f64, version 2.0), PGM 8/16-bit, PNG 8/16-bit written here with libpng, and
 * every kind of bad file: each must fail with a one-line message naming the file,
 * never crash (truncations at every length and random byte flips run under the
 * sanitizers in CI). A plain unit test: no context or backend is involved.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/image_io.h"
#include "support/png_io.h"

static char dir[SCRATCH_DIR_SIZE];
static char err[IMAGE_ERROR_SIZE];

static void make_dir(void) {
  scratch_dir_make(dir, "image-io");
}

static void remove_dir(void) {
  scratch_dir_remove(dir);
}

/* Files in the test directory whose name contains needle. */
static int count_files(const char *needle) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, needle)) n++;
  closedir(d);
  return n;
}

static const char *path_of(const char *name) {
  return scratch_path(dir, name);
}

static void write_bytes(const char *path, const void *data, size_t bytes) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, bytes, f), bytes);
  ck_assert_int_eq(fclose(f), 0);
}

/* The whole file, malloc'd. */
static unsigned char *read_bytes(const char *path, size_t *bytes) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  unsigned char *data = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(data);
  ck_assert_uint_eq(fread(data, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *bytes = (size_t)n;
  return data;
}

/* A .npy file with the given header dict (padded to 64 bytes) and data. */
static void write_npy(const char *path, int major, const char *dict, const void *data,
                      size_t bytes) {
  size_t preamble = major == 1 ? 10 : 12;
  size_t total = (preamble + strlen(dict) + 1 + 63) / 64 * 64;
  size_t header = total - preamble;
  unsigned char *file = malloc(total + bytes);
  ck_assert_ptr_nonnull(file);
  memcpy(file, "\x93NUMPY", 6);
  file[6] = (unsigned char)major;
  file[7] = 0;
  file[8] = (unsigned char)(header & 0xff);
  file[9] = (unsigned char)(header >> 8);
  if (major != 1) file[10] = file[11] = 0;
  memset(file + preamble, ' ', header);
  memcpy(file + preamble, dict, strlen(dict));
  file[total - 1] = '\n';
  if (bytes) memcpy(file + total, data, bytes);
  write_bytes(path, file, total + bytes);
  free(file);
}

/* The read must fail with status and a one-line message naming the file and
 * containing needle. */
static void expect_failure(const char *path, plm_status status, const char *needle) {
  image img;
  plm_status got = image_read(path, NULL, &img, err, sizeof err);
  ck_assert_msg(got == status, "%s: status %s, expected %s (%s)", path, plm_status_str(got),
                plm_status_str(status), err);
  ck_assert_ptr_null(img.data);
  ck_assert_msg(strncmp(err, path, strlen(path)) == 0, "message does not name the file: %s", err);
  ck_assert_msg(strstr(err, needle) != NULL, "message \"%s\" lacks \"%s\"", err, needle);
  ck_assert_msg(strchr(err, '\n') == NULL, "message is not one line: %s", err);
}

static void fill_pattern(void *data, size_t bytes, unsigned seed) {
  unsigned char *p = data;
  uint32_t state = seed * 2654435761u + 1;
  for (size_t i = 0; i < bytes; i++) {
    state = state * 1664525u + 1013904223u;
    p[i] = (unsigned char)(state >> 24);
  }
}

/* ---- round trips ----------------------------------------------------------------------- */

START_TEST(test_npy_round_trip_every_dtype_2d_and_3d) {
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_I32, PLM_DTYPE_F32};
  const int64_t shapes[][3] = {{1, 1, 0}, {7, 13, 0}, {3, 5, 4}, {64, 1, 1}};
  const int ndims[] = {2, 2, 3, 3};
  for (int t = 0; t < 4; t++)
    for (int s = 0; s < 4; s++) {
      image img = {.dtype = dtypes[t], .ndim = ndims[s]};
      memcpy(img.dims, shapes[s], sizeof shapes[s]);
      size_t bytes = image_bytes(&img);
      ck_assert_uint_gt(bytes, 0);
      img.data = malloc(bytes);
      fill_pattern(img.data, bytes, (unsigned)(t * 10 + s));
      if (img.dtype == PLM_DTYPE_F32) /* finite floats, so == compares */
        for (int64_t i = 0; i < image_numel(&img); i++) ((float *)img.data)[i] = (float)i * 0.25f;
      const char *path = path_of("round.npy");
      ck_assert_int_eq(image_write_npy(path, &img, err, sizeof err), PLM_OK);
      size_t file_bytes;
      unsigned char *file = read_bytes(path, &file_bytes);
      ck_assert_uint_eq((file_bytes - bytes) % 64, 0); /* data aligned as numpy aligns it */
      ck_assert_int_eq(file[6], 1);
      free(file);
      image back;
      ck_assert_msg(image_read(path, NULL, &back, err, sizeof err) == PLM_OK, "%s", err);
      ck_assert_int_eq(back.dtype, img.dtype);
      ck_assert_int_eq(back.ndim, img.ndim);
      for (int d = 0; d < img.ndim; d++) ck_assert_int_eq(back.dims[d], img.dims[d]);
      ck_assert_int_eq(memcmp(back.data, img.data, bytes), 0);
      image_free(&back, NULL);
      ck_assert_ptr_null(back.data);
      free(img.data);
    }
  ck_assert_int_eq(count_files(".tmp-"), 0);
}
END_TEST

START_TEST(test_npy_header_matches_numpy) {
  uint16_t data[6] = {1, 2, 3, 4, 5, 6};
  image img = {.dtype = PLM_DTYPE_U16, .ndim = 2, .dims = {2, 3}, .data = data};
  const char *path = path_of("header.npy");
  ck_assert_int_eq(image_write_npy(path, &img, err, sizeof err), PLM_OK);
  size_t bytes;
  unsigned char *file = read_bytes(path, &bytes);
  const char *dict = "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }";
  ck_assert_uint_eq(bytes, 128 + sizeof data);
  ck_assert_int_eq(memcmp(file, "\x93NUMPY\x01\x00\x76\x00", 10), 0);
  ck_assert_int_eq(memcmp(file + 10, dict, strlen(dict)), 0);
  ck_assert_int_eq(file[127], '\n');
  free(file);
  /* 1-D and 4-D may be written (shape "(5,)"), though only 2-D/3-D are read. */
  image one = {.dtype = PLM_DTYPE_U8, .ndim = 1, .dims = {5}, .data = data};
  ck_assert_int_eq(image_write_npy(path, &one, err, sizeof err), PLM_OK);
  file = read_bytes(path, &bytes);
  file[bytes - 1] = 0;
  ck_assert_ptr_nonnull(strstr((char *)file + 10, "'shape': (5,), }"));
  free(file);
  expect_failure(path, PLM_ERR_UNSUPPORTED, "1-D");
}
END_TEST

START_TEST(test_npy_f64_is_read_as_f32_and_version_2_headers_are_read) {
  const double values[6] = {0.0, -1.5, 1e300, -1e300, 3.0e-3, NAN};
  write_npy(path_of("f64.npy"), 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 6), }",
            values, sizeof values);
  image img;
  ck_assert_msg(image_read(path_of("f64.npy"), NULL, &img, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(img.dtype, PLM_DTYPE_F32);
  const float *f = img.data;
  ck_assert(f[0] == 0.0f && f[1] == -1.5f && f[4] == (float)3.0e-3);
  ck_assert(isinf(f[2]) && f[2] > 0 && isinf(f[3]) && f[3] < 0 && isnan(f[5]));
  image_free(&img, NULL);

  const int32_t ints[8] = {-1, 0, 1, 2, INT32_MAX, INT32_MIN, 7, 8};
  write_npy(path_of("v2.npy"), 2,
            "{\"shape\": (2,2,2), \"fortran_order\": False, \"descr\": \"<i4\"}", ints,
            sizeof ints);
  ck_assert_msg(image_read(path_of("v2.npy"), NULL, &img, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(img.dtype, PLM_DTYPE_I32);
  ck_assert_int_eq(img.ndim, 3);
  ck_assert_int_eq(memcmp(img.data, ints, sizeof ints), 0);
  image_free(&img, NULL);
}
END_TEST

/* image_read_keep_f64 keeps f64 values as they are (the fixtures' region tables need
 * every bit) and reads every other dtype as image_read does. */
START_TEST(test_npy_f64_is_kept_by_image_read_keep_f64) {
  const double values[6] = {0.1, -1.5, 1e300, 65535.0 * 65025.0, 1.0 / 3.0, NAN};
  write_npy(path_of("f64.npy"), 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
            values, sizeof values);
  image img;
  ck_assert_msg(image_read_keep_f64(path_of("f64.npy"), NULL, &img, err, sizeof err) == PLM_OK,
                "%s", err);
  ck_assert_int_eq(img.dtype, PLM_DTYPE_F64);
  ck_assert_int_eq(img.ndim, 2);
  ck_assert_int_eq(img.dims[0], 2);
  ck_assert_int_eq(img.dims[1], 3);
  ck_assert_int_eq(memcmp(img.data, values, sizeof values), 0);
  image_free(&img, NULL);

  const uint16_t words[4] = {0, 1, 40000, 65535};
  write_npy(path_of("u2.npy"), 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 2), }",
            words, sizeof words);
  ck_assert_msg(image_read_keep_f64(path_of("u2.npy"), NULL, &img, err, sizeof err) == PLM_OK, "%s",
                err);
  ck_assert_int_eq(img.dtype, PLM_DTYPE_U16);
  ck_assert_int_eq(memcmp(img.data, words, sizeof words), 0);
  image_free(&img, NULL);

  write_npy(path_of("short.npy"), 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
            values, sizeof values - 8);
  ck_assert_int_eq(image_read_keep_f64(path_of("short.npy"), NULL, &img, err, sizeof err),
                   PLM_ERR_IO);
  ck_assert_ptr_null(img.data);
  ck_assert_msg(strstr(err, "truncated") != NULL, "%s", err);
  ck_assert_int_eq(image_read_keep_f64(NULL, NULL, &img, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err, "image_read_keep_f64") != NULL, "%s", err);
}
END_TEST

START_TEST(test_pgm_8_and_16_bit) {
  const char pgm8[] = "P5\n# a comment\n3 2\n255\n\x01\x02\x03\xfd\xfe\xff";
  write_bytes(path_of("a.pgm"), pgm8, sizeof pgm8 - 1);
  image img;
  ck_assert_msg(image_read(path_of("a.pgm"), NULL, &img, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(img.dtype, PLM_DTYPE_U8);
  ck_assert_int_eq(img.ndim, 2);
  ck_assert_int_eq(img.dims[0], 2);
  ck_assert_int_eq(img.dims[1], 3);
  ck_assert_int_eq(memcmp(img.data, "\x01\x02\x03\xfd\xfe\xff", 6), 0);
  image_free(&img, NULL);

  const char pgm16[] = "P5 2 1 65535 \x01\x02\xff\x00";
  write_bytes(path_of("b.pgm"), pgm16, sizeof pgm16 - 1);
  ck_assert_msg(image_read(path_of("b.pgm"), NULL, &img, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(img.dtype, PLM_DTYPE_U16);
  ck_assert_int_eq(((uint16_t *)img.data)[0], 0x0102);
  ck_assert_int_eq(((uint16_t *)img.data)[1], 0xff00);
  image_free(&img, NULL);
}
END_TEST

/* A grayscale (or RGB) PNG written with libpng; width x height samples of depth bits. */
static void write_png(const char *path, int width, int height, int depth, int color, int interlace,
                      const void *pixels) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  ck_assert(png && info);
  if (setjmp(png_jmpbuf(png))) ck_abort_msg("libpng failed to write %s", path);
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, depth, color, interlace,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  if (depth == 16) png_set_swap(png); /* the pixels are in host (little-endian) order */
  int channels = color == PNG_COLOR_TYPE_RGB ? 3 : 1;
  size_t row_bytes = (size_t)width * (size_t)channels * (depth == 16 ? 2 : 1);
  png_bytep *rows = malloc((size_t)height * sizeof *rows);
  for (int y = 0; y < height; y++) rows[y] = (png_bytep)pixels + (size_t)y * row_bytes;
  png_write_image(png, rows);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  free(rows);
  fclose(f);
}

START_TEST(test_png_8_and_16_bit_grayscale) {
  enum { W = 37, H = 11 };
  uint8_t p8[H * W];
  uint16_t p16[H * W];
  fill_pattern(p8, sizeof p8, 1);
  fill_pattern(p16, sizeof p16, 2);
  for (int interlace = 0; interlace < 2; interlace++) {
    int mode = interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE;
    write_png(path_of("a.png"), W, H, 8, PNG_COLOR_TYPE_GRAY, mode, p8);
    write_png(path_of("b.png"), W, H, 16, PNG_COLOR_TYPE_GRAY, mode, p16);
    image img;
    ck_assert_msg(image_read(path_of("a.png"), NULL, &img, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_int_eq(img.dtype, PLM_DTYPE_U8);
    ck_assert(img.ndim == 2 && img.dims[0] == H && img.dims[1] == W);
    ck_assert_int_eq(memcmp(img.data, p8, sizeof p8), 0);
    image_free(&img, NULL);
    ck_assert_msg(image_read(path_of("b.png"), NULL, &img, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_int_eq(img.dtype, PLM_DTYPE_U16);
    ck_assert(img.ndim == 2 && img.dims[0] == H && img.dims[1] == W);
    ck_assert_int_eq(memcmp(img.data, p16, sizeof p16), 0);
    image_free(&img, NULL);
  }
}
END_TEST

/* png_encode (support/png_io.h): u8 and u16 frames read back through libpng value for
 * value; what a PNG cannot hold is refused naming it, with nothing allocated. */
START_TEST(test_png_encode_round_trip_and_refusals) {
  enum { W = 29, H = 7 };
  uint8_t p8[H * W];
  uint16_t p16[H * W];
  fill_pattern(p8, sizeof p8, 4);
  fill_pattern(p16, sizeof p16, 5);
  const int64_t dims[2] = {H, W};
  const struct {
    plm_dtype dtype;
    const void *pixels;
    size_t bytes;
  } cases[] = {{PLM_DTYPE_U8, p8, sizeof p8}, {PLM_DTYPE_U16, p16, sizeof p16}};
  for (size_t c = 0; c < 2; c++) {
    void *png = NULL;
    size_t length = 0;
    ck_assert_msg(png_encode(cases[c].dtype, 2, dims, cases[c].pixels, &png, &length, "o.png", err,
                             sizeof err) == PLM_OK,
                  "%s", err);
    write_bytes(path_of("o.png"), png, length);
    free(png);
    image img;
    ck_assert_msg(image_read(path_of("o.png"), NULL, &img, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_int_eq(img.dtype, cases[c].dtype);
    ck_assert(img.ndim == 2 && img.dims[0] == H && img.dims[1] == W);
    ck_assert_int_eq(memcmp(img.data, cases[c].pixels, cases[c].bytes), 0);
    image_free(&img, NULL);
  }
  void *png = (void *)1;
  size_t length = 1;
  ck_assert_int_eq(png_encode(PLM_DTYPE_F32, 2, dims, p16, &png, &length, "f.png", err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  ck_assert(png == NULL && length == 0 && strstr(err, "f.png: a PNG holds u8 or u16, not f32"));
  const int64_t stack[3] = {1, H, W};
  ck_assert_int_eq(png_encode(PLM_DTYPE_U8, 3, stack, p8, &png, &length, "s.png", err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  ck_assert_msg(strstr(err, "one 2-D frame, not a 3-D array"), "%s", err);
  const int64_t empty[2] = {0, W};
  ck_assert_int_eq(png_encode(PLM_DTYPE_U8, 2, empty, p8, &png, &length, "e.png", err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  ck_assert_ptr_null(png);
}
END_TEST

START_TEST(test_colour_png_is_refused) {
  uint8_t rgb[4 * 3 * 3];
  fill_pattern(rgb, sizeof rgb, 3);
  write_png(path_of("rgb.png"), 4, 3, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, rgb);
  expect_failure(path_of("rgb.png"), PLM_ERR_UNSUPPORTED, "RGB colour PNG");
}
END_TEST

/* A custom allocator is used for the pixels and for nothing else. */
static int live_blocks;
static void *counting_alloc(void *user, size_t bytes) {
  (void)user;
  live_blocks++;
  return malloc(bytes);
}
static void counting_free(void *user, void *ptr) {
  (void)user;
  live_blocks--;
  free(ptr);
}
static void *failing_alloc(void *user, size_t bytes) {
  (void)user;
  (void)bytes;
  return NULL;
}

START_TEST(test_allocator_is_used_and_its_failure_reported) {
  const char pgm8[] = "P5 2 2 255 abcd";
  write_bytes(path_of("c.pgm"), pgm8, sizeof pgm8 - 1);
  image_allocator counting = {counting_alloc, counting_free, NULL};
  image img;
  ck_assert_int_eq(image_read(path_of("c.pgm"), &counting, &img, err, sizeof err), PLM_OK);
  ck_assert_int_eq(live_blocks, 1);
  image_free(&img, &counting);
  ck_assert_int_eq(live_blocks, 0);
  image_allocator failing = {failing_alloc, counting_free, NULL};
  ck_assert_int_eq(image_read(path_of("c.pgm"), &failing, &img, err, sizeof err),
                   PLM_ERR_OUT_OF_MEMORY);
  ck_assert_ptr_nonnull(strstr(err, "cannot allocate 4 bytes"));
}
END_TEST

/* ---- bad files --------------------------------------------------------------------------- */

START_TEST(test_bad_npy_files_fail_with_a_clear_message) {
  const uint8_t data[64] = {0};
  const char *p = path_of("bad.npy");
  static const struct {
    const char *dict;
    size_t data_bytes;
    plm_status status;
    const char *needle;
  } cases[] = {
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (4, 4), }", 15, PLM_ERR_IO, "truncated"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (4, 4), }", 17, PLM_ERR_IO,
       "unexpected bytes"},
      {"{'descr': '|u1', 'fortran_order': True, 'shape': (4, 4), }", 16, PLM_ERR_UNSUPPORTED,
       "fortran_order"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", 16, PLM_ERR_UNSUPPORTED,
       "unsupported dtype '>f4'"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (2, 2), }", 32, PLM_ERR_UNSUPPORTED,
       "unsupported dtype"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (16,), }", 16, PLM_ERR_UNSUPPORTED,
       "1-D"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (), }", 1, PLM_ERR_UNSUPPORTED, "0-D"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (1, 2, 2, 4), }", 16, PLM_ERR_UNSUPPORTED,
       "4-D"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (0, 4), }", 0, PLM_ERR_IO, "absurd"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 16,
       PLM_ERR_IO, "absurd"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (9223372036854775807, 2, 2), }", 16,
       PLM_ERR_IO, "absurd"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999, 2), }", 16,
       PLM_ERR_IO, "broken .npy header"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (65536, 32769), }", 16, PLM_ERR_IO,
       "absurd"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (30000, 30000), }", 16, PLM_ERR_IO,
       "truncated: the header promises 900000000 bytes"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (4, 4) ", 16, PLM_ERR_IO,
       "broken .npy header"},
      {"{'descr': '|u1', 'fortran_order': False, }", 16, PLM_ERR_IO, "missing key 'shape'"},
      {"{'descr': '|u1', 'fortran_order': Nope, 'shape': (4, 4), }", 16, PLM_ERR_IO,
       "fortran_order is not True or False"},
      {"{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (4, 4), }", 16,
       PLM_ERR_IO, "repeated key 'descr'"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (4, 4), 'x': 1}", 16, PLM_ERR_IO,
       "unexpected or repeated key 'x'"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (4, -4), }", 16, PLM_ERR_IO,
       "broken .npy header"},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (4, 4), } junk", 16, PLM_ERR_IO,
       "after the dict"},
      {"('descr', '|u1')", 16, PLM_ERR_IO, "no '{'"},
      {"{'descr: '|u1', 'fortran_order': False, 'shape': (4, 4), }", 16, PLM_ERR_IO,
       "broken .npy header"},
      {"{'descr': [1], 'fortran_order': False, 'shape': (4, 4), }", 16, PLM_ERR_IO,
       "descr is not a simple string"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    write_npy(p, 1, cases[i].dict, data, cases[i].data_bytes);
    expect_failure(p, cases[i].status, cases[i].needle);
  }
}
END_TEST

START_TEST(test_bad_preambles_and_non_files) {
  const char *p = path_of("pre.npy");
  expect_failure(path_of("missing.npy"), PLM_ERR_IO, "cannot open: No such file");
  expect_failure(dir, PLM_ERR_IO, "not a regular file");
  write_bytes(p, "", 0);
  expect_failure(p, PLM_ERR_IO, "empty");
  write_bytes(p, "\x93NUMP", 5);
  expect_failure(p, PLM_ERR_IO, "unknown magic");
  write_bytes(p, "GIF89a......", 12);
  expect_failure(p, PLM_ERR_IO, "unknown magic");
  write_bytes(p, "P2 1 1 255 7", 12);
  expect_failure(p, PLM_ERR_UNSUPPORTED, "P2");
  write_bytes(p, "\x93NUMPY\x01", 7);
  expect_failure(p, PLM_ERR_IO, "truncated");
  write_bytes(p, "\x93NUMPY\x01\x00\x40", 9);
  expect_failure(p, PLM_ERR_IO, "truncated");
  write_bytes(p, "\x93NUMPY\x04\x00\x10\x00\x00\x00", 12);
  expect_failure(p, PLM_ERR_UNSUPPORTED, "version 4.0");
  write_bytes(p, "\x93NUMPY\x01\x00\xff\xff{", 11);
  expect_failure(p, PLM_ERR_IO, "the .npy header claims 65535 bytes");
  write_bytes(p, "\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14);
  expect_failure(p, PLM_ERR_IO, "truncated");
}
END_TEST

START_TEST(test_bad_pgm_files) {
  const char *p = path_of("bad.pgm");
  static const struct {
    const char *text;
    plm_status status;
    const char *needle;
  } cases[] = {
      {"P5 3 2 255\nabcde", PLM_ERR_IO, "truncated"},
      {"P5 3 2 255\nabcdefg", PLM_ERR_IO, "unexpected bytes"},
      {"P5 3 2 65535\nabcdefghijk", PLM_ERR_IO, "truncated"},
      {"P5 3 2 0\nabcdef", PLM_ERR_IO, "maxval is 0"},
      {"P5 3 2 70000\nabcdef", PLM_ERR_IO, "maxval exceeds 65535"},
      {"P5 x 2 255\nabcdef", PLM_ERR_IO, "the width is not a number"},
      {"P5 3", PLM_ERR_IO, "no whitespace after the width"},
      {"P5 3 2", PLM_ERR_IO, "no whitespace after the height"},
      {"P5 0 2 255\n", PLM_ERR_IO, "absurd PGM size"},
      {"P5 99999999999 2 255\n", PLM_ERR_IO, "the width exceeds"},
      {"P5 65536 65536 255\n", PLM_ERR_IO, "absurd PGM size"},
      {"P5 40000 40000 255\nab", PLM_ERR_IO, "truncated: the header promises 1600000000 bytes"},
      {"P5 3 2 255x", PLM_ERR_IO, "no whitespace after maxval"},
      {"P5 # comment to the end", PLM_ERR_IO, "the width is not a number"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    write_bytes(p, cases[i].text, strlen(cases[i].text));
    expect_failure(p, cases[i].status, cases[i].needle);
  }
}
END_TEST

START_TEST(test_truncated_and_corrupted_png) {
  uint8_t pixels[16 * 16];
  fill_pattern(pixels, sizeof pixels, 4);
  const char *good = path_of("good.png");
  const char *bad = path_of("bad.png");
  write_png(good, 16, 16, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, pixels);
  size_t bytes;
  unsigned char *file = read_bytes(good, &bytes);
  /* Every truncation after the signature fails cleanly. */
  for (size_t n = 8; n < bytes - 12; n++) {
    write_bytes(bad, file, n);
    expect_failure(bad, PLM_ERR_IO, "broken PNG");
  }
  free(file);
}
END_TEST

/* Any read either succeeds or fails with a one-line message naming the file. */
static void read_survives(const char *path) {
  image img;
  plm_status status = image_read(path, NULL, &img, err, sizeof err);
  if (status == PLM_OK) {
    ck_assert_ptr_nonnull(img.data);
    image_free(&img, NULL);
    return;
  }
  ck_assert_ptr_null(img.data);
  ck_assert_msg(strncmp(err, path, strlen(path)) == 0 && strlen(err) > strlen(path) + 2 &&
                    strchr(err, '\n') == NULL,
                "bad message: %s", err);
}

START_TEST(test_fuzzed_files_never_crash) {
  /* Three valid files of each format, then truncations and random corruptions. */
  uint16_t pixels[9 * 7];
  fill_pattern(pixels, sizeof pixels, 5);
  write_png(path_of("f.png"), 9, 7, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, pixels);
  image img = {.dtype = PLM_DTYPE_F32, .ndim = 3, .dims = {2, 3, 4}, .data = pixels};
  ck_assert_int_eq(image_write_npy(path_of("f.npy"), &img, err, sizeof err), PLM_OK);
  const char pgm[] =
      "P5\n# c\n4 3\n65535\n"
      "abcdefghijklmnopqrstuvwx";
  write_bytes(path_of("f.pgm"), pgm, sizeof pgm - 1);
  const char *sources[] = {path_of("f.png"), path_of("f.npy"), path_of("f.pgm")};
  const char *fuzz = path_of("fuzz.bin");
  uint32_t state = 12345;
  for (int s = 0; s < 3; s++) {
    size_t bytes;
    unsigned char *file = read_bytes(sources[s], &bytes);
    unsigned char *copy = malloc(bytes);
    for (size_t n = 0; n < bytes; n++) {
      write_bytes(fuzz, file, n);
      read_survives(fuzz);
    }
    for (int round = 0; round < 1500; round++) {
      memcpy(copy, file, bytes);
      int flips = 1 + round % 4;
      for (int k = 0; k < flips; k++) {
        state = state * 1664525u + 1013904223u;
        /* Mostly the header, where the parsing is. */
        size_t limit = round % 3 == 0 ? bytes : (bytes < 140 ? bytes : 140);
        size_t at = (state >> 8) % limit;
        state = state * 1664525u + 1013904223u;
        copy[at] = (round % 5 == 0) ? (unsigned char)"0123456789(),:'{} \n-"[(state >> 24) % 20]
                                    : (unsigned char)(state >> 24);
      }
      write_bytes(fuzz, copy, bytes);
      read_survives(fuzz);
    }
    free(copy);
    free(file);
  }
}
END_TEST

/* ---- writing ----------------------------------------------------------------------------- */

START_TEST(test_write_is_atomic_and_cleans_up) {
  uint8_t data[4] = {1, 2, 3, 4};
  image img = {.dtype = PLM_DTYPE_U8, .ndim = 2, .dims = {2, 2}, .data = data};
  /* A directory that does not exist: nothing is created. */
  char nowhere[600];
  snprintf(nowhere, sizeof nowhere, "%s/no/such/dir/out.npy", dir);
  ck_assert_int_eq(image_write_npy(nowhere, &img, err, sizeof err), PLM_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "cannot create a temporary file"));
  ck_assert_int_eq(strncmp(err, nowhere, strlen(nowhere)), 0);
  /* A directory in the way: refused before anything is written. */
  const char *in_the_way = path_of("in_the_way.npy");
  ck_assert_int_eq(mkdir(in_the_way, 0700), 0);
  ck_assert_int_eq(image_write_npy(in_the_way, &img, err, sizeof err), PLM_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "in_the_way.npy: is a folder"));
  ck_assert_int_eq(count_files(".tmp-"), 0);
  /* Overwriting an existing file replaces it whole, with the usual mode. */
  const char *out = path_of("out.npy");
  write_bytes(out, "old", 3);
  ck_assert_int_eq(image_write_npy(out, &img, err, sizeof err), PLM_OK);
  image back;
  ck_assert_int_eq(image_read(out, NULL, &back, err, sizeof err), PLM_OK);
  ck_assert_int_eq(memcmp(back.data, data, 4), 0);
  image_free(&back, NULL);
  struct stat st;
  ck_assert_int_eq(stat(out, &st), 0);
  mode_t mask = umask(0);
  umask(mask);
  ck_assert_int_eq(st.st_mode & 0777, 0666 & ~mask);
  ck_assert_int_eq(count_files(".tmp-"), 0);
  /* Bad images are refused before any file is made. */
  image bad = img;
  bad.dims[1] = 0;
  ck_assert_int_eq(image_write_npy(out, &bad, err, sizeof err), PLM_ERR_INVALID_ARG);
  bad = img;
  bad.dtype = (plm_dtype)99;
  ck_assert_int_eq(image_write_npy(out, &bad, err, sizeof err), PLM_ERR_INVALID_ARG);
  bad = img;
  bad.ndim = 5;
  ck_assert_int_eq(image_write_npy(out, &bad, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(image_write_npy(out, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(image_read(NULL, NULL, &back, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(count_files(".tmp-"), 0);
}
END_TEST

START_TEST(test_streamed_npy_equals_a_whole_write) {
  /* A (3, 4, 5) u16 stack written frame by frame, in uneven pieces. */
  uint16_t data[3 * 4 * 5];
  for (int i = 0; i < 60; i++) data[i] = (uint16_t)(i * 1000 + 7);
  image whole = {.dtype = PLM_DTYPE_U16, .ndim = 3, .dims = {3, 4, 5}, .data = data};
  const char *expected = path_of("whole.npy"), *streamed = path_of("streamed.npy");
  ck_assert_int_eq(image_write_npy(expected, &whole, err, sizeof err), PLM_OK);
  image_writer *w = NULL;
  image shape = whole;
  shape.data = NULL;
  ck_assert_int_eq(image_writer_open_npy(streamed, &shape, &w, err, sizeof err), PLM_OK);
  ck_assert_ptr_nonnull(w);
  ck_assert_int_eq(count_files(".tmp-"), 1);
  ck_assert_int_eq(access(streamed, F_OK), -1); /* nothing at PATH until the commit */
  ck_assert_int_eq(image_writer_write(w, data, 40, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w, (char *)data + 40, 0, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w, (char *)data + 40, 41, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w, (char *)data + 81, 39, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_commit(w, err, sizeof err), PLM_OK);
  size_t a_bytes = 0, b_bytes = 0;
  unsigned char *a = read_bytes(expected, &a_bytes), *b = read_bytes(streamed, &b_bytes);
  ck_assert_uint_eq(a_bytes, b_bytes);
  ck_assert_int_eq(memcmp(a, b, a_bytes), 0);
  free(a);
  free(b);
  ck_assert_int_eq(count_files(".tmp-"), 0);

  /* A text file in pieces. */
  const char *text = path_of("t.csv");
  ck_assert_int_eq(image_writer_open_text(text, &w, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w, "a,b\n", 4, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w, "1,2\n", 4, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_commit(w, err, sizeof err), PLM_OK);
  a = read_bytes(text, &a_bytes);
  ck_assert_uint_eq(a_bytes, 8);
  ck_assert_int_eq(memcmp(a, "a,b\n1,2\n", 8), 0);
  free(a);
}
END_TEST

START_TEST(test_streamed_npy_refuses_too_much_or_too_little) {
  uint8_t data[7] = {0};
  image shape = {.dtype = PLM_DTYPE_U8, .ndim = 2, .dims = {2, 3}};
  const char *out = path_of("short.npy");
  image_writer *w = NULL;
  /* Too much: refused, nothing written, the writer still usable. */
  ck_assert_int_eq(image_writer_open_npy(out, &shape, &w, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w, data, 4, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w, data, 3, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "exceed the 6 bytes"));
  ck_assert_int_eq(strncmp(err, out, strlen(out)), 0);
  /* Too little at the commit: refused, the temporary file removed, PATH not made. */
  ck_assert_int_eq(image_writer_commit(w, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "only 4 of the 6 bytes"));
  ck_assert_int_eq(access(out, F_OK), -1);
  ck_assert_int_eq(count_files(".tmp-"), 0);
  /* An existing file is left as it was by a failed or aborted writer. */
  write_bytes(out, "old", 3);
  ck_assert_int_eq(image_writer_open_npy(out, &shape, &w, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w, data, 6, err, sizeof err), PLM_OK);
  image_writer_abort(w);
  size_t bytes = 0;
  unsigned char *old = read_bytes(out, &bytes);
  ck_assert_uint_eq(bytes, 3);
  free(old);
  ck_assert_int_eq(count_files(".tmp-"), 0);
  image_writer_abort(NULL);
  /* Bad arguments: nothing is created. */
  ck_assert_int_eq(image_writer_open_npy(NULL, &shape, &w, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(image_writer_open_npy(out, NULL, &w, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(image_writer_open_npy(out, &shape, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
  image bad = shape;
  bad.ndim = 0;
  ck_assert_int_eq(image_writer_open_npy(out, &bad, &w, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_null(w);
  bad = shape;
  bad.dtype = (plm_dtype)42;
  ck_assert_int_eq(image_writer_open_npy(out, &bad, &w, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(image_writer_open_text(NULL, &w, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(image_writer_write(NULL, data, 1, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(image_writer_commit(NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
  char nowhere[600];
  snprintf(nowhere, sizeof nowhere, "%s/no/such/dir/out.npy", dir);
  ck_assert_int_eq(image_writer_open_npy(nowhere, &shape, &w, err, sizeof err), PLM_ERR_IO);
  ck_assert_ptr_null(w);
  ck_assert_int_eq(count_files(".tmp-"), 0);
}
END_TEST

/* ---- frame by frame ------------------------------------------------------------------- */

START_TEST(test_frames_of_a_stack_are_read_one_at_a_time_in_any_order) {
  enum { N = 5, H = 7, W = 9 };
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32, PLM_DTYPE_I32};
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
    size_t item = plm_dtype_size(dtypes[d]), frame_bytes = (size_t)H * W * item;
    unsigned char *data = malloc(N * frame_bytes), *got = malloc(frame_bytes);
    ck_assert(data && got);
    fill_pattern(data, N * frame_bytes, (unsigned)d + 10);
    if (dtypes[d] == PLM_DTYPE_F32)
      for (size_t i = 0; i < (size_t)N * H * W; i++) ((float *)data)[i] = (float)i * 0.25f - 7.0f;
    image stack = {.dtype = dtypes[d], .ndim = 3, .dims = {N, H, W}, .data = data};
    ck_assert_msg(image_write_npy(path_of("s.npy"), &stack, err, sizeof err) == PLM_OK, "%s", err);
    image frame;
    int64_t count = 0;
    image_frames *f = NULL;
    ck_assert_msg(
        image_frames_open(path_of("s.npy"), &frame, &count, &f, err, sizeof err) == PLM_OK, "%s",
        err);
    ck_assert_int_eq(count, N);
    ck_assert(frame.dtype == dtypes[d] && frame.ndim == 2 && frame.dims[0] == H &&
              frame.dims[1] == W && frame.data == NULL);
    const int64_t order[] = {3, 0, 4, 4, 1, 2};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
      memset(got, 0xab, frame_bytes);
      ck_assert_msg(image_frames_read(f, order[i], got, err, sizeof err) == PLM_OK, "%s", err);
      ck_assert_int_eq(memcmp(got, data + (size_t)order[i] * frame_bytes, frame_bytes), 0);
    }
    ck_assert_int_eq(image_frames_read(f, N, got, err, sizeof err), PLM_ERR_INVALID_ARG);
    ck_assert_msg(strstr(err, "frame 5 is not in 0..4") != NULL, "%s", err);
    ck_assert_int_eq(image_frames_read(f, -1, got, err, sizeof err), PLM_ERR_INVALID_ARG);
    ck_assert_int_eq(image_frames_read(f, 0, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
    image_frames_close(f);
    free(data);
    free(got);
  }
  image_frames_close(NULL);
}
END_TEST

START_TEST(test_frames_of_f64_2d_pgm_and_png_files) {
  /* f64 stacks are read as f32, frame by frame, as image_read reads them. */
  double f64[2][2][3] = {{{1.5, -2, 3e39}, {4, 5, 6}}, {{7, 8, 9}, {-1e-3, 0, 1}}};
  write_npy(path_of("d.npy"), 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2, 3), }",
            f64, sizeof f64);
  image frame;
  int64_t count = 0;
  image_frames *f = NULL;
  ck_assert_msg(image_frames_open(path_of("d.npy"), &frame, &count, &f, err, sizeof err) == PLM_OK,
                "%s", err);
  ck_assert(count == 2 && frame.dtype == PLM_DTYPE_F32 && frame.dims[0] == 2 && frame.dims[1] == 3);
  float got[6];
  ck_assert_int_eq(image_frames_read(f, 1, got, err, sizeof err), PLM_OK);
  ck_assert(got[0] == 7.0f && got[3] == -1e-3f && got[5] == 1.0f);
  ck_assert_int_eq(image_frames_read(f, 0, got, err, sizeof err), PLM_OK);
  ck_assert(got[0] == 1.5f && isinf(got[2]));
  image_frames_close(f);

  /* A 2-D .npy, a PGM and a PNG are one frame each. */
  uint16_t pixels[2 * 3] = {1, 2, 3, 400, 500, 65535};
  image one = {.dtype = PLM_DTYPE_U16, .ndim = 2, .dims = {2, 3}, .data = pixels};
  ck_assert_int_eq(image_write_npy(path_of("one.npy"), &one, err, sizeof err), PLM_OK);
  write_png(path_of("one.png"), 3, 2, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, pixels);
  const char pgm[] = "P5 3 2 65535 \x00\x01\x00\x02\x00\x03\x01\x90\x01\xf4\xff\xff";
  write_bytes(path_of("one.pgm"), pgm, sizeof pgm - 1);
  const char *names[] = {"one.npy", "one.png", "one.pgm"};
  for (int i = 0; i < 3; i++) {
    ck_assert_msg(
        image_frames_open(path_of(names[i]), &frame, &count, &f, err, sizeof err) == PLM_OK,
        "%s: %s", names[i], err);
    ck_assert(count == 1 && frame.dtype == PLM_DTYPE_U16 && frame.dims[0] == 2 &&
              frame.dims[1] == 3);
    uint16_t back[6] = {0};
    ck_assert_int_eq(image_frames_read(f, 0, back, err, sizeof err), PLM_OK);
    ck_assert_msg(memcmp(back, pixels, sizeof pixels) == 0, "%s", names[i]);
    ck_assert_int_eq(image_frames_read(f, 1, back, err, sizeof err), PLM_ERR_INVALID_ARG);
    image_frames_close(f);
  }
}
END_TEST

START_TEST(test_frames_of_bad_or_shrinking_files_fail_naming_the_file) {
  image frame;
  int64_t count = 7;
  image_frames *f = (image_frames *)&count; /* must be set to NULL on failure */
  ck_assert_int_eq(image_frames_open(path_of("missing.npy"), &frame, &count, &f, err, sizeof err),
                   PLM_ERR_IO);
  ck_assert_ptr_null(f);
  ck_assert_msg(strstr(err, "missing.npy: cannot open") != NULL, "%s", err);
  /* A header that promises more frames than the file holds is refused at open. */
  uint16_t data[3 * 4 * 4] = {0};
  write_npy(path_of("short.npy"), 1,
            "{'descr': '<u2', 'fortran_order': False, 'shape': (4, 4, 4), }", data, sizeof data);
  ck_assert_int_eq(image_frames_open(path_of("short.npy"), &frame, &count, &f, err, sizeof err),
                   PLM_ERR_IO);
  ck_assert_msg(strstr(err, "short.npy: truncated") != NULL, "%s", err);
  write_npy(path_of("i8.npy"), 1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2, 2), }",
            data, 4);
  ck_assert_int_eq(image_frames_open(path_of("i8.npy"), &frame, &count, &f, err, sizeof err),
                   PLM_ERR_UNSUPPORTED);
  ck_assert_int_eq(image_frames_open(NULL, &frame, &count, &f, err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(image_frames_open(path_of("i8.npy"), NULL, &count, &f, err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(image_frames_open(dir, &frame, &count, &f, err, sizeof err), PLM_ERR_IO);
  ck_assert_msg(strstr(err, "not a regular file") != NULL, "%s", err);

  /* A stack cut short after it was opened: the frames still there read, the others fail
   * naming the frame. */
  write_npy(path_of("cut.npy"), 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (3, 4, 4), }",
            data, sizeof data);
  ck_assert_int_eq(image_frames_open(path_of("cut.npy"), &frame, &count, &f, err, sizeof err),
                   PLM_OK);
  ck_assert_int_eq(truncate(path_of("cut.npy"), 128 + 4 * 4 * 2 + 5), 0);
  uint16_t got[16];
  ck_assert_int_eq(image_frames_read(f, 0, got, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_frames_read(f, 2, got, err, sizeof err), PLM_ERR_IO);
  ck_assert_msg(
      strstr(err, "cut.npy: frame 2: truncated: the file ends 0 bytes into the frame's 32") != NULL,
      "%s", err);
  ck_assert_int_eq(image_frames_read(f, 1, got, err, sizeof err), PLM_ERR_IO);
  ck_assert_msg(strstr(err, "cut.npy: frame 1: truncated: the file ends 5 bytes") != NULL, "%s",
                err);
  ck_assert_msg(strchr(err, '\n') == NULL, "%s", err);
  image_frames_close(f);
}
END_TEST

static Suite *image_io_suite(void) {
  Suite *suite = suite_create("image_io");
  TCase *tcase = tcase_create("image_io");
  tcase_add_checked_fixture(tcase, make_dir, remove_dir);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_npy_round_trip_every_dtype_2d_and_3d);
  tcase_add_test(tcase, test_npy_header_matches_numpy);
  tcase_add_test(tcase, test_npy_f64_is_read_as_f32_and_version_2_headers_are_read);
  tcase_add_test(tcase, test_npy_f64_is_kept_by_image_read_keep_f64);
  tcase_add_test(tcase, test_pgm_8_and_16_bit);
  tcase_add_test(tcase, test_png_8_and_16_bit_grayscale);
  tcase_add_test(tcase, test_colour_png_is_refused);
  tcase_add_test(tcase, test_png_encode_round_trip_and_refusals);
  tcase_add_test(tcase, test_allocator_is_used_and_its_failure_reported);
  tcase_add_test(tcase, test_bad_npy_files_fail_with_a_clear_message);
  tcase_add_test(tcase, test_bad_preambles_and_non_files);
  tcase_add_test(tcase, test_bad_pgm_files);
  tcase_add_test(tcase, test_truncated_and_corrupted_png);
  tcase_add_test(tcase, test_fuzzed_files_never_crash);
  tcase_add_test(tcase, test_write_is_atomic_and_cleans_up);
  tcase_add_test(tcase, test_streamed_npy_equals_a_whole_write);
  tcase_add_test(tcase, test_streamed_npy_refuses_too_much_or_too_little);
  tcase_add_test(tcase, test_frames_of_a_stack_are_read_one_at_a_time_in_any_order);
  tcase_add_test(tcase, test_frames_of_f64_2d_pgm_and_png_files);
  tcase_add_test(tcase, test_frames_of_bad_or_shrinking_files_fail_naming_the_file);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  SRunner *runner = srunner_create(image_io_suite());
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

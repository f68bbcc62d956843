/* tests/test_frame_reader.c: the frames of `plume detect` (support/frame_reader.h).
 *
 * A stack and a single image through the reader; folders of .npy, PGM and PNG files in
 * the byte order of their names, with the entries a folder may hold besides frames
 * (other files, hidden files, directories named like frames) left out; and every way a
 * folder can be wrong (no frames, a file of another dtype or shape, a stack, a broken
 * file), each failing with one line that names the file. A plain unit test: no context
 * or backend is involved.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/frame_reader.h"

static char dir[SCRATCH_DIR_SIZE];
static char err[FRAME_READER_ERROR_SIZE];


static void make_dir(void) {
  scratch_dir_make(dir, "frame-reader");
}

static void remove_dir(void) {
  scratch_dir_remove(dir);
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

/* A 16-bit (or 8-bit) PGM of h x w samples in host order. */
static void write_pgm(const char *path, int h, int w, int depth, const void *pixels) {
  char header[64];
  int n = snprintf(header, sizeof header, "P5\n%d %d\n%d\n", w, h, depth == 16 ? 65535 : 255);
  size_t bytes = (size_t)h * (size_t)w * (depth == 16 ? 2 : 1);
  unsigned char *file = malloc((size_t)n + bytes);
  ck_assert_ptr_nonnull(file);
  memcpy(file, header, (size_t)n);
  const unsigned char *in = pixels;
  for (size_t i = 0; i < bytes; i += (depth == 16 ? 2 : 1)) {
    if (depth == 16) {
      file[n + i] = in[i + 1]; /* big-endian */
      file[n + i + 1] = in[i];
    } else {
      file[n + i] = in[i];
    }
  }
  write_bytes(path, file, (size_t)n + bytes);
  free(file);
}

/* A grayscale PNG of h x w samples of depth bits in host order, written with libpng. */
static void write_png(const char *path, int h, int w, int depth, const void *pixels) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  ck_assert(png && info);
  if (setjmp(png_jmpbuf(png))) ck_abort_msg("libpng failed to write %s", path);
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, PNG_COLOR_TYPE_GRAY,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  if (depth == 16) png_set_swap(png);
  size_t row_bytes = (size_t)w * (depth == 16 ? 2 : 1);
  png_bytep *rows = malloc((size_t)h * sizeof *rows);
  ck_assert_ptr_nonnull(rows);
  for (int y = 0; y < h; y++) rows[y] = (png_bytep)pixels + (size_t)y * row_bytes;
  png_write_image(png, rows);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  free(rows);
  fclose(f);
}

static void write_npy(const char *path, plm_dtype dtype, int ndim, const int64_t *dims,
                      void *data) {
  image img = {.dtype = dtype, .ndim = ndim, .data = data};
  for (int d = 0; d < ndim; d++) img.dims[d] = dims[d];
  ck_assert_msg(image_write_npy(path, &img, err, sizeof err) == PLM_OK, "%s", err);
}

enum { H = 6, W = 10, FRAME = H * W };

/* Frame k's u16 pixels: different in every frame. */
static void frame_pixels(int k, uint16_t *pixels) {
  for (int i = 0; i < FRAME; i++) pixels[i] = (uint16_t)(k * 1000 + i * 37 + (i % 7) * 4099);
}

/* The reader must fail with status and one line naming `file` and containing needle. */
static void expect_message(plm_status got, plm_status want, const char *file, const char *needle) {
  ck_assert_msg(got == want, "status %s, expected %s (%s)", plm_status_str(got),
                plm_status_str(want), err);
  ck_assert_msg(strstr(err, file) != NULL, "message does not name %s: %s", file, err);
  ck_assert_msg(strstr(err, needle) != NULL, "message \"%s\" lacks \"%s\"", err, needle);
  ck_assert_msg(strchr(err, '\n') == NULL, "message is not one line: %s", err);
}

/* ---- files ------------------------------------------------------------------------------ */

START_TEST(test_a_stack_is_its_frames) {
  enum { N = 4 };
  uint16_t stack[N][FRAME], got[FRAME];
  for (int k = 0; k < N; k++) frame_pixels(k, stack[k]);
  write_npy(path_of("stack.npy"), PLM_DTYPE_U16, 3, (const int64_t[]){N, H, W}, stack);
  frame_reader_info info;
  frame_reader *r = NULL;
  ck_assert_msg(frame_reader_open(path_of("stack.npy"), &info, &r, err, sizeof err) == PLM_OK, "%s",
                err);
  ck_assert(info.dtype == PLM_DTYPE_U16 && info.height == H && info.width == W && info.count == N &&
            !info.folder);
  for (int k = N - 1; k >= 0; k--) {
    ck_assert_int_eq(frame_reader_read(r, k, got, err, sizeof err), PLM_OK);
    ck_assert_int_eq(memcmp(got, stack[k], sizeof got), 0);
    ck_assert_str_eq(frame_reader_file(r, k), path_of("stack.npy"));
  }
  ck_assert_ptr_null(frame_reader_file(r, N));
  ck_assert_ptr_null(frame_reader_file(r, -1));
  expect_message(frame_reader_read(r, N, got, err, sizeof err), PLM_ERR_INVALID_ARG, "stack.npy",
                 "frame 4 is not in 0..3");
  ck_assert_int_eq(frame_reader_read(r, 0, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(frame_reader_read(NULL, 0, got, err, sizeof err), PLM_ERR_INVALID_ARG);
  frame_reader_close(r);
  frame_reader_close(NULL);

  /* A single PNG is one frame. */
  write_png(path_of("one.png"), H, W, 16, stack[2]);
  ck_assert_int_eq(frame_reader_open(path_of("one.png"), &info, &r, err, sizeof err), PLM_OK);
  ck_assert(info.count == 1 && info.dtype == PLM_DTYPE_U16 && !info.folder);
  ck_assert_int_eq(frame_reader_read(r, 0, got, err, sizeof err), PLM_OK);
  ck_assert_int_eq(memcmp(got, stack[2], sizeof got), 0);
  frame_reader_close(r);
}
END_TEST

START_TEST(test_missing_and_bad_paths) {
  frame_reader_info info;
  frame_reader *r = (frame_reader *)&info; /* must become NULL */
  expect_message(frame_reader_open(path_of("nothing.npy"), &info, &r, err, sizeof err), PLM_ERR_IO,
                 "nothing.npy", "cannot open");
  ck_assert_ptr_null(r);
  write_bytes(path_of("text.npy"), "hello\n", 6);
  expect_message(frame_reader_open(path_of("text.npy"), &info, &r, err, sizeof err), PLM_ERR_IO,
                 "text.npy", "unknown magic");
  ck_assert_int_eq(frame_reader_open(NULL, &info, &r, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(frame_reader_open(dir, NULL, &r, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(frame_reader_open(dir, &info, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
}
END_TEST

/* ---- folders ---------------------------------------------------------------------------- */

START_TEST(test_a_folder_is_its_frame_files_in_name_order) {
  /* Frames 0..11 in files whose names sort in frame order (zero-padded), in the three
   * formats in turn and in either case of extension. */
  enum { N = 12 };
  uint16_t frames[N][FRAME], got[FRAME];
  ck_assert_int_eq(mkdir(path_of("frames"), 0777), 0);
  for (int k = 0; k < N; k++) {
    frame_pixels(k, frames[k]);
    char name[64];
    static const char *const ext[] = {"npy", "pgm", "png", "PNG"};
    snprintf(name, sizeof name, "frames/f_%04d.%s", k * 7, ext[k % 4]);
    if (k % 4 == 0)
      write_npy(path_of(name), PLM_DTYPE_U16, 2, (const int64_t[]){H, W}, frames[k]);
    else if (k % 4 == 1)
      write_pgm(path_of(name), H, W, 16, frames[k]);
    else
      write_png(path_of(name), H, W, 16, frames[k]);
  }
  /* A 3-D .npy of one frame is a frame too. */
  uint16_t last[FRAME];
  frame_pixels(99, last);
  write_npy(path_of("frames/z_last.npy"), PLM_DTYPE_U16, 3, (const int64_t[]){1, H, W}, last);
  /* Left out: other files, hidden files, directories named like frames. */
  write_bytes(path_of("frames/README.txt"), "not a frame\n", 12);
  write_bytes(path_of("frames/.hidden.npy"), "garbage", 7);
  write_bytes(path_of("frames/x.npy.tmp-abc"), "garbage", 7);
  write_bytes(path_of("frames/npy"), "garbage", 7);
  ck_assert_int_eq(mkdir(path_of("frames/sub.png"), 0777), 0);

  frame_reader_info info;
  frame_reader *r = NULL;
  ck_assert_msg(frame_reader_open(path_of("frames"), &info, &r, err, sizeof err) == PLM_OK, "%s",
                err);
  ck_assert(info.folder && info.count == N + 1 && info.dtype == PLM_DTYPE_U16 && info.height == H &&
            info.width == W);
  for (int k = 0; k < N; k++) {
    memset(got, 0, sizeof got);
    ck_assert_msg(frame_reader_read(r, k, got, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_msg(memcmp(got, frames[k], sizeof got) == 0, "frame %d (%s)", k,
                  frame_reader_file(r, k));
  }
  ck_assert_int_eq(frame_reader_read(r, N, got, err, sizeof err), PLM_OK);
  ck_assert_int_eq(memcmp(got, last, sizeof got), 0);
  ck_assert_str_eq(frame_reader_file(r, 0), path_of("frames/f_0000.npy"));
  ck_assert_str_eq(frame_reader_file(r, 3), path_of("frames/f_0021.PNG"));
  ck_assert_str_eq(frame_reader_file(r, N), path_of("frames/z_last.npy"));
  /* Out of order, again. */
  ck_assert_int_eq(frame_reader_read(r, 5, got, err, sizeof err), PLM_OK);
  ck_assert_int_eq(memcmp(got, frames[5], sizeof got), 0);
  frame_reader_close(r);
}
END_TEST

START_TEST(test_names_sort_by_bytes_not_by_number) {
  /* f10 sorts before f9: the reader takes the names' byte order, as documented. */
  ck_assert_int_eq(mkdir(path_of("order"), 0777), 0);
  uint8_t a[FRAME], b[FRAME], got[FRAME];
  memset(a, 9, sizeof a);
  memset(b, 10, sizeof b);
  write_pgm(path_of("order/f9.pgm"), H, W, 8, a);
  write_pgm(path_of("order/f10.pgm"), H, W, 8, b);
  frame_reader_info info;
  frame_reader *r = NULL;
  ck_assert_int_eq(frame_reader_open(path_of("order"), &info, &r, err, sizeof err), PLM_OK);
  ck_assert(info.count == 2 && info.dtype == PLM_DTYPE_U8);
  ck_assert_int_eq(frame_reader_read(r, 0, got, err, sizeof err), PLM_OK);
  ck_assert_int_eq(got[0], 10);
  ck_assert_int_eq(frame_reader_read(r, 1, got, err, sizeof err), PLM_OK);
  ck_assert_int_eq(got[0], 9);
  frame_reader_close(r);
}
END_TEST

START_TEST(test_a_wrong_file_in_a_folder_is_named) {
  uint16_t u16[FRAME], got[FRAME];
  uint8_t u8[FRAME];
  frame_pixels(1, u16);
  memset(u8, 7, sizeof u8);
  frame_reader_info info;
  frame_reader *r = (frame_reader *)&info;

  /* No frames at all. */
  ck_assert_int_eq(mkdir(path_of("empty"), 0777), 0);
  write_bytes(path_of("empty/notes.txt"), "x", 1);
  expect_message(frame_reader_open(path_of("empty"), &info, &r, err, sizeof err), PLM_ERR_IO,
                 "empty", "no frames in the folder");
  ck_assert_ptr_null(r);

  /* A first file that is broken fails the open, naming it. */
  ck_assert_int_eq(mkdir(path_of("broken"), 0777), 0);
  write_bytes(path_of("broken/a.png"), "not a png", 9);
  write_pgm(path_of("broken/b.pgm"), H, W, 16, u16);
  expect_message(frame_reader_open(path_of("broken"), &info, &r, err, sizeof err), PLM_ERR_IO,
                 "broken/a.png", "unknown magic");

  /* Later files are checked when their frame is read: dtype, shape, frames per file,
   * a broken file. */
  ck_assert_int_eq(mkdir(path_of("mixed"), 0777), 0);
  write_pgm(path_of("mixed/0.pgm"), H, W, 16, u16);
  write_pgm(path_of("mixed/1.pgm"), H, W, 8, u8);
  write_pgm(path_of("mixed/2.pgm"), W, H, 16, u16);
  write_npy(path_of("mixed/3.npy"), PLM_DTYPE_U16, 3, (const int64_t[]){2, H, W / 2}, u16);
  write_bytes(path_of("mixed/4.png"), "\x89PNG\r\n\x1a\n", 8);
  write_npy(path_of("mixed/5.npy"), PLM_DTYPE_U16, 2, (const int64_t[]){H, W}, u16);
  ck_assert_msg(frame_reader_open(path_of("mixed"), &info, &r, err, sizeof err) == PLM_OK, "%s",
                err);
  ck_assert_int_eq(info.count, 6);
  ck_assert_int_eq(frame_reader_read(r, 0, got, err, sizeof err), PLM_OK);
  expect_message(frame_reader_read(r, 1, got, err, sizeof err), PLM_ERR_IO, "mixed/1.pgm",
                 "a frame of u8 6x10, but the first frame");
  ck_assert_msg(strstr(err, "mixed/0.pgm) is u16 6x10") != NULL, "%s", err);
  expect_message(frame_reader_read(r, 2, got, err, sizeof err), PLM_ERR_IO, "mixed/2.pgm",
                 "a frame of u16 10x6");
  expect_message(frame_reader_read(r, 3, got, err, sizeof err), PLM_ERR_IO, "mixed/3.npy",
                 "a stack of 2 frames: a folder holds one frame per file");
  expect_message(frame_reader_read(r, 4, got, err, sizeof err), PLM_ERR_IO, "mixed/4.png",
                 "broken PNG");
  ck_assert_int_eq(frame_reader_read(r, 5, got, err, sizeof err), PLM_OK);
  ck_assert_int_eq(memcmp(got, u16, sizeof got), 0);
  /* A file removed after the open. */
  ck_assert_int_eq(unlink(path_of("mixed/5.npy")), 0);
  expect_message(frame_reader_read(r, 5, got, err, sizeof err), PLM_ERR_IO, "mixed/5.npy",
                 "cannot open");
  frame_reader_close(r);
}
END_TEST

/* frame_reader_allow_shapes: a folder's frames of several shapes, each read at its own,
 * which frame_reader_shape tells first (opening the file once for both); the dtype must
 * still be the first file's; a stack's frames keep their one shape. */
START_TEST(test_a_folder_of_several_shapes) {
  uint16_t u16[FRAME], got[FRAME];
  uint8_t u8[FRAME];
  frame_pixels(2, u16);
  memset(u8, 9, sizeof u8);
  ck_assert_int_eq(mkdir(path_of("shapes"), 0777), 0);
  write_pgm(path_of("shapes/0.pgm"), H, W, 16, u16);
  write_npy(path_of("shapes/1.npy"), PLM_DTYPE_U16, 2, (const int64_t[]){W, H}, u16);
  write_png(path_of("shapes/2.png"), 3, 4, 16, u16);
  write_pgm(path_of("shapes/3.pgm"), H, W, 8, u8);
  frame_reader_info info;
  frame_reader *r = NULL;
  ck_assert_msg(frame_reader_open(path_of("shapes"), &info, &r, err, sizeof err) == PLM_OK, "%s",
                err);
  int64_t h = 0, w = 0;
  /* Before frame_reader_allow_shapes: every frame is the first's shape. */
  ck_assert_int_eq(frame_reader_shape(r, 1, &h, &w, err, sizeof err), PLM_OK);
  ck_assert(h == H && w == W);
  expect_message(frame_reader_read(r, 1, got, err, sizeof err), PLM_ERR_IO, "shapes/1.npy",
                 "a frame of u16 10x6");
  frame_reader_allow_shapes(r);
  const int64_t shapes[3][2] = {{H, W}, {W, H}, {3, 4}};
  for (int k = 0; k < 3; k++) {
    memset(got, 0, sizeof got);
    ck_assert_msg(frame_reader_shape(r, k, &h, &w, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_msg(h == shapes[k][0] && w == shapes[k][1], "frame %d: %lldx%lld", k, (long long)h,
                  (long long)w);
    ck_assert_msg(frame_reader_read(r, k, got, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_int_eq(memcmp(got, u16, (size_t)(h * w) * sizeof *got), 0);
  }
  /* Read without asking its shape, and asked twice: the same frame. */
  ck_assert_int_eq(frame_reader_read(r, 1, got, err, sizeof err), PLM_OK);
  ck_assert_int_eq(frame_reader_shape(r, 2, &h, &w, err, sizeof err), PLM_OK);
  ck_assert_int_eq(frame_reader_shape(r, 2, &h, &w, err, sizeof err), PLM_OK);
  ck_assert(h == 3 && w == 4);
  /* Another dtype is refused, by the shape's question already. */
  expect_message(frame_reader_shape(r, 3, &h, &w, err, sizeof err), PLM_ERR_IO, "shapes/3.pgm",
                 "a frame of u8 6x10, but the first frame");
  expect_message(frame_reader_read(r, 3, got, err, sizeof err), PLM_ERR_IO, "shapes/3.pgm",
                 "a frame of u8 6x10");
  ck_assert_int_eq(frame_reader_shape(r, 4, &h, &w, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(frame_reader_shape(NULL, 0, &h, &w, err, sizeof err), PLM_ERR_INVALID_ARG);
  frame_reader_close(r);
  /* A stack: allow_shapes is a no-op, its one shape told. */
  write_npy(path_of("stack.npy"), PLM_DTYPE_U16, 3, (const int64_t[]){1, H, W}, u16);
  ck_assert_int_eq(frame_reader_open(path_of("stack.npy"), &info, &r, err, sizeof err), PLM_OK);
  frame_reader_allow_shapes(r);
  ck_assert_int_eq(frame_reader_shape(r, 0, &h, &w, err, sizeof err), PLM_OK);
  ck_assert(h == H && w == W);
  frame_reader_close(r);
}
END_TEST

static Suite *frame_reader_suite(void) {
  Suite *suite = suite_create("frame_reader");
  TCase *tcase = tcase_create("frame_reader");
  tcase_add_checked_fixture(tcase, make_dir, remove_dir);
  tcase_set_timeout(tcase, 60);
  tcase_add_test(tcase, test_a_stack_is_its_frames);
  tcase_add_test(tcase, test_missing_and_bad_paths);
  tcase_add_test(tcase, test_a_folder_is_its_frame_files_in_name_order);
  tcase_add_test(tcase, test_names_sort_by_bytes_not_by_number);
  tcase_add_test(tcase, test_a_wrong_file_in_a_folder_is_named);
  tcase_add_test(tcase, test_a_folder_of_several_shapes);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  SRunner *runner = srunner_create(frame_reader_suite());
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

/* tests/fuzz/fuzz_tiff.c: the TIFF reader of tools/tiff_io.h (libtiff under plume's checks)
 * on arbitrary bytes.
 *
 * Feeds: the input's first byte picks the reader (its value modulo 2), the rest is the
 * file, first opened with image_frames_open (a failure is checked as below); then 0
 * image_read (every page, into one array) and, when it succeeds, tiff_encode of what was
 * read and image_read of that again; 1 pages read one by one (the first 8 and the last)
 * into buffers of exactly one page's bytes. A file whose pages declare more than
 * MOST_SAMPLES samples in all (a few KB can claim 10^8 samples of a page with no data) is
 * opened only: reading it costs seconds of zeroed memory and no new path, and would
 * slow the fuzzer to a few inputs a second.
 * Checks: no crash, hang, leak or undefined behaviour (ASan, UBSan) whatever the bytes,
 * and nothing printed by libtiff; a failure is a status with a message and nothing
 * allocated; a success is u8, u16 or f32 of 2 or 3 dimensions, each >= 1, read to its last
 * byte; what plume writes of it reads back identical.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_files.h"
#include "tools/image_io.h"
#include "tools/tiff_io.h"

enum { PAGES_READ = 8, MOST_SAMPLES = 1 << 20 };

static void check_failure(plm_status status, const char *err) {
  if (status == PLM_OK || err[0] == '\0') abort();
}

static void check_image(const image *img) {
  if ((img->ndim != 2 && img->ndim != 3) || !img->data) abort();
  if (img->dtype != PLM_DTYPE_U8 && img->dtype != PLM_DTYPE_U16 && img->dtype != PLM_DTYPE_F32)
    abort();
  for (int d = 0; d < img->ndim; d++)
    if (img->dims[d] < 1) abort();
  const uint8_t *bytes = img->data;
  size_t n = image_bytes(img), sum = 0;
  for (size_t i = 0; i < n; i++) sum += bytes[i];
  if (sum == SIZE_MAX) abort(); /* keeps the loop */
}

/* What was read, written by plume and read again: the same bytes. */
static void round_trip(const image *img) {
  char err[IMAGE_ERROR_SIZE] = "";
  void *tiff = NULL;
  size_t length = 0;
  if (tiff_encode(img->dtype, img->ndim, img->dims, img->data, &tiff, &length, "again.tif", err,
                  sizeof err) != PLM_OK)
    abort();
  const char *path = fuzz_write_file("again.tif", tiff, length);
  free(tiff);
  image again = {0};
  if (image_read(path, NULL, &again, err, sizeof err) != PLM_OK) abort();
  if (again.dtype != img->dtype || again.ndim != img->ndim ||
      memcmp(again.dims, img->dims, sizeof img->dims) != 0 ||
      memcmp(again.data, img->data, image_bytes(img)) != 0)
    abort();
  image_free(&again, NULL);
}

/* Whether the pages that image_frames_open found are few enough samples to read. */
static bool small(const image *frame, int64_t count) {
  return frame->dims[0] * frame->dims[1] <= MOST_SAMPLES / count;
}

static void read_whole(const char *path) {
  char err[IMAGE_ERROR_SIZE] = "";
  image img = {0};
  plm_status status = image_read(path, NULL, &img, err, sizeof err);
  if (status != PLM_OK) {
    check_failure(status, err);
    if (img.data) abort();
    return;
  }
  check_image(&img);
  round_trip(&img);
  image_free(&img, NULL);
}

static void read_some_pages(image_frames *frames, const image *frame, int64_t count) {
  char err[IMAGE_ERROR_SIZE] = "";
  plm_status status = PLM_OK;
  void *dst = malloc(image_bytes(frame));
  if (!dst) abort();
  for (int64_t k = 0; k < count; k++) {
    if (k >= PAGES_READ && k != count - 1) continue;
    err[0] = '\0';
    status = image_frames_read(frames, k, dst, err, sizeof err);
    if (status != PLM_OK) check_failure(status, err);
  }
  free(dst);
}

/* Open path's pages; read the whole file (whole_too) or some pages, when they are small. */
static void read_file(const char *path, bool whole_too) {
  char err[IMAGE_ERROR_SIZE] = "";
  image frame = {0};
  int64_t count = 0;
  image_frames *frames = NULL;
  plm_status status = image_frames_open(path, &frame, &count, &frames, err, sizeof err);
  if (status != PLM_OK) {
    check_failure(status, err);
    if (frames) abort();
    return;
  }
  if (count < 1 || frame.ndim != 2 || frame.data || frame.dims[0] < 1 || frame.dims[1] < 1) abort();
  if (!small(&frame, count) || !whole_too) {
    if (small(&frame, 1)) read_some_pages(frames, &frame, count);
    image_frames_close(frames);
    return;
  }
  image_frames_close(frames);
  read_whole(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const int reader = data[0] % 2;
  const char *path = fuzz_write_file("in.tif", data + 1, size - 1);
  read_file(path, reader == 0);
  return 0;
}

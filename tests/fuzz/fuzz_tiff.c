/* tests/fuzz/fuzz_tiff.c: the TIFF reader of support/tiff_io.h (libtiff under plume's checks)
 * on arbitrary bytes.
 *
 * Feeds: the input's first byte picks the reader (its value modulo 2), the rest is the
 * file, read as tests/fuzz/fuzz_frames.h says: 0 whole (every page into one array) and,
 * when that succeeds, tiff_encode of what was read and image_read of that again; 1 pages
 * read one by one.
 * Checks: fuzz_frames.h's, no crash, hang, leak or undefined behaviour (ASan, UBSan)
 * whatever the bytes, nothing printed by libtiff, and what plume writes of a page read
 * reads back identical.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/fuzz_frames.h"
#include "support/image_io.h"
#include "support/tiff_io.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const int reader = data[0] % 2;
  const char *path = fuzz_write_file("in.tif", data + 1, size - 1);
  fuzz_frames_read(path, reader == 0, round_trip);
  return 0;
}

/* tests/fuzz/fuzz_fits.c: the FITS reader of support/fits_io.h (cfitsio under plume's checks)
 * on arbitrary bytes.
 *
 * Feeds: the input's first byte picks the reader (its value modulo 2), the rest is the
 * file, read as tests/fuzz/fuzz_frames.h says: 0 whole (every frame into one array), 1
 * frames read one by one. The seeds are the files astropy wrote for tests/test_fits_io.c;
 * fits.dict holds the header keywords the reader looks at.
 * Checks: fuzz_frames.h's, and no crash, hang, leak or undefined behaviour (ASan, UBSan)
 * whatever the bytes, in plume or in what cfitsio leaves it.
 */
#include <stdint.h>

#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/fuzz_frames.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *path = fuzz_write_file("in.fits", data + 1, size - 1);
  fuzz_frames_read(path, data[0] % 2 == 0, NULL);
  return 0;
}

/* tests/fuzz/fuzz_hdf5.c: the HDF5 reader of support/hdf5_io.h (libhdf5 under plume's checks)
 * on arbitrary bytes.
 *
 * Feeds: the input's first byte picks the reader (its value modulo 2), the rest is the
 * file, read as tests/fuzz/fuzz_frames.h says: 0 whole (every frame into one array), 1
 * frames read one by one; the file's only dataset of 2 or 3 dimensions is chosen, so the
 * group walk runs on every input. The seeds are the files h5py and netCDF4-python wrote for
 * tests/test_hdf5_io.c (tests/fixtures/hdf5); hdf5.dict holds the format's signatures and
 * the CF attributes' names.
 * Checks: fuzz_frames.h's; no libhdf5 object (file, group, dataset, datatype, attribute)
 * left open after the reader is closed; and no crash, hang, leak or undefined behaviour
 * (ASan, UBSan) whatever the bytes, in plume or in what libhdf5 leaves it. libhdf5's own
 * leaks on damaged files are suppressed (tests/lsan-libhdf5.supp says which and why).
 */
#include <hdf5.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/fuzz_frames.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *path = fuzz_write_file("in.h5", data + 1, size - 1);
  fuzz_frames_read(path, data[0] % 2 == 0, NULL);
  if (H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) abort();
  return 0;
}

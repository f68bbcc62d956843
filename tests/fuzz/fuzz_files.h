/* tests/fuzz/fuzz_files.h: a fuzz input as files, for the harnesses whose readers take a
 * path (support/image_io.h, support/frame_reader.h, support/csv.h have no in-memory API).
 *
 * Every file goes into one private folder per process, made on first use under $TMPDIR
 * (else /tmp) and removed with its files at exit, so harnesses running side by side
 * (ctest -j2) never share a file. A file written again is replaced whole.
 *
 * For one thread (libFuzzer calls a harness from one thread). Failures to make the
 * folder or write a file abort: they are the machine's, not the input's.
 */
#ifndef PLUME_TESTS_FUZZ_FILES_H
#define PLUME_TESTS_FUZZ_FILES_H

#include <stddef.h>
#include <stdint.h>

/* The private folder's path (made on the first call). */
const char *fuzz_dir(void);

/* Write size bytes to fuzz_dir()/name and return the file's path (valid until the next
 * call that returns a path). */
const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size);

/* Make fuzz_dir()/name an empty folder (its files from an earlier input removed) and
 * return its path (valid until the next call that returns a path). */
const char *fuzz_empty_folder(const char *name);

/* Write size bytes to the file name inside folder (a path from fuzz_empty_folder). */
void fuzz_write_in_folder(const char *folder, const char *name, const uint8_t *data,
                          size_t size);

#endif /* PLUME_TESTS_FUZZ_FILES_H */

/* cmake/make_entropy_tables.c: a program the build runs, not part of the library.
 * It writes the entropy kernels' two tables (kernels/common/entropy.h) as C initialisers,
 * comma-separated:
 *
 *   DELTA_FILE  entry c = plm__entropy_clogc(c + 1) - plm__entropy_clogc(c), what
 *               S = sum c log2 c (32.32 fixed point) gains when a count goes from c to c + 1;
 *               PLM__ENTROPY_DELTA_COUNT integers;
 *   CLOGC_FILE  entry c = the sum of DELTA_FILE's entries below c, which is
 *               plm__entropy_clogc(c) (a sum of its own steps); PLM__ENTROPY_CLOGC_COUNT
 *               integers.
 *
 * The CPU kernels read the first (plm__entropy_delta_table) and the CUDA kernels compile
 * both into their device data (kernels/cuda/entropy.cu), so every backend adds up the
 * same integers, computed once, here, with the host's log2: the GPU's log2 may differ in
 * the last bit, and a table copied to each device at run time would be a synchronous
 * first call that a graph capture cannot hold.
 *
 * Usage: make_entropy_tables DELTA_FILE CLOGC_FILE. Exit status 0, or 1 with a message
 * on stderr when a file cannot be written. */
#include <inttypes.h>
#include <stdio.h>

#include "kernels/common/entropy.h"

enum { ENTRIES_PER_LINE = 6 };

/* Entry `index` of `count`, and after it a comma and a space, or a newline at the end of
 * a line and of the file. */
static int write_entry(FILE *file, int64_t entry, int64_t index, int64_t count) {
  const int line_ends = index % ENTRIES_PER_LINE == ENTRIES_PER_LINE - 1 || index == count - 1;
  return fprintf(file, "%" PRId64 "LL,%s", entry, line_ends ? "\n" : " ") < 0 ? -1 : 0;
}

static int close_file(FILE *file, const char *path) {
  if (fclose(file) == 0) return 0;
  fprintf(stderr, "make_entropy_tables: cannot write %s\n", path);
  return -1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: make_entropy_tables DELTA_FILE CLOGC_FILE\n");
    return 1;
  }
  FILE *delta_file = fopen(argv[1], "w");
  FILE *clogc_file = fopen(argv[2], "w");
  if (!delta_file || !clogc_file) {
    fprintf(stderr, "make_entropy_tables: cannot open %s\n", delta_file ? argv[2] : argv[1]);
    if (delta_file) fclose(delta_file);
    if (clogc_file) fclose(clogc_file);
    return 1;
  }
  int failed = 0;
  int64_t clogc = 0;
  for (int64_t c = 0; c < PLM__ENTROPY_DELTA_COUNT && !failed; c++) {
    const int64_t delta = plm__entropy_clogc(c + 1) - plm__entropy_clogc(c);
    failed = write_entry(delta_file, delta, c, PLM__ENTROPY_DELTA_COUNT) ||
             (c < PLM__ENTROPY_CLOGC_COUNT &&
              write_entry(clogc_file, clogc, c, PLM__ENTROPY_CLOGC_COUNT));
    clogc += delta;
  }
  if (failed) fprintf(stderr, "make_entropy_tables: a write failed\n");
  failed |= close_file(delta_file, argv[1]);
  failed |= close_file(clogc_file, argv[2]);
  return failed ? 1 : 0;
}

/* tests/scratch_dir.h: a fresh folder for the files of a plain unit test (header-only;
 * the tests of support/: images, frames, outputs, scores). Include after <check.h>.
 *
 *   static char dir[SCRATCH_DIR_SIZE];
 *   scratch_dir_make(dir, "image-io");          $TMPDIR/plume-image-io-XXXXXX (or /tmp)
 *   scratch_path(dir, "round.npy");              a path in it (8 live at a time)
 *   scratch_dir_remove(dir);                     it and everything below it
 *
 * Failures to make the folder are test failures (ck_assert). One thread. */
#ifndef PLUME_TESTS_SCRATCH_DIR_H
#define PLUME_TESTS_SCRATCH_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SCRATCH_DIR_SIZE = 256, SCRATCH_PATH_SIZE = 512 };

static inline void scratch_dir_make(char dir[SCRATCH_DIR_SIZE], const char *name) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, SCRATCH_DIR_SIZE, "%s/plume-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static inline void scratch_dir_remove(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char child[SCRATCH_PATH_SIZE];
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (snprintf(child, sizeof child, "%s/%s", dir, e->d_name) >= (int)sizeof child) continue;
    if (unlink(child) != 0) scratch_dir_remove(child);
  }
  closedir(d);
  rmdir(dir);
}

static inline const char *scratch_path(const char *dir, const char *name) {
  static char paths[8][SCRATCH_PATH_SIZE];
  static int next;
  char *path = paths[next++ % 8];
  snprintf(path, SCRATCH_PATH_SIZE, "%s/%s", dir, name);
  return path;
}

#endif /* PLUME_TESTS_SCRATCH_DIR_H */

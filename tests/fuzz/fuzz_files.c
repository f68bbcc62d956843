/* tests/fuzz/fuzz_files.c: a fuzz input as files in a private folder (fuzz_files.h). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, lstat */
#include "tests/fuzz/fuzz_files.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[PATH_MAX];
static char path[PATH_MAX];

static void die(const char *what, const char *name) {
  perror(name);
  fprintf(stderr, "fuzz_files: cannot %s %s\n", what, name);
  abort();
}

/* Remove the files of folder (not recursive: harness folders hold files only). */
static void empty_folder(const char *folder) {
  DIR *d = opendir(folder);
  if (!d) return;
  char file[PATH_MAX];
  for (struct dirent *e; (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(file, sizeof file, "%s/%s", folder, e->d_name);
    struct stat st;
    if (lstat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
      empty_folder(file);
      rmdir(file);
    } else {
      unlink(file);
    }
  }
  closedir(d);
}

static void remove_dir(void) {
  empty_folder(dir);
  rmdir(dir);
}

const char *fuzz_dir(void) {
  if (dir[0]) return dir;
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/plume-fuzz-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(dir)) die("make", dir);
  atexit(remove_dir);
  return dir;
}

static void write_bytes(const char *file, const uint8_t *data, size_t size) {
  FILE *f = fopen(file, "wb");
  if (!f) die("create", file);
  if ((size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) die("write", file);
}

/* folder/name into out (size bytes); a path too long for it is the machine's failure. */
static void join(char *out, size_t size, const char *folder, const char *name) {
  const int n = snprintf(out, size, "%s/%s", folder, name);
  if (n < 0 || (size_t)n >= size) die("name (too long)", folder);
}

const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size) {
  join(path, sizeof path, fuzz_dir(), name);
  write_bytes(path, data, size);
  return path;
}

const char *fuzz_empty_folder(const char *name) {
  join(path, sizeof path, fuzz_dir(), name);
  if (mkdir(path, 0700) != 0) empty_folder(path);
  return path;
}

void fuzz_write_in_folder(const char *folder, const char *name, const uint8_t *data,
                          size_t size) {
  char file[PATH_MAX];
  join(file, sizeof file, folder, name);
  write_bytes(file, data, size);
}

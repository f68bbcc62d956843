/* tests/fuzz/replay.c: a harness of tests/fuzz without libFuzzer, for builds without
 * PLUME_FUZZ (gcc, the sanitizer jobs, scripts/test): `fuzz_<name> FOLDER...` feeds
 * every file of each folder (its seeds, tests/fuzz/corpus/<name>) to the harness once,
 * in name order, after the harness's LLVMFuzzerInitialize when it has one, as libFuzzer
 * does when it replays a corpus. A harness's failed check aborts, which fails the test;
 * so does a folder that cannot be read or holds no input, so that a renamed corpus
 * cannot pass having fed nothing. Exit 0 when every input went through. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Weak: only some harnesses define it. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* The whole file at path, malloc'd (one byte more, so that an empty file is not NULL);
 * NULL when it cannot be read. */
static uint8_t *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *data = NULL;
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && (data = malloc((size_t)st.st_size + 1)) != NULL &&
      fread(data, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = data ? (size_t)st.st_size : 0;
  return data;
}

/* Feed each regular file of folder (names not starting with '.'); -1 on an error. */
static long replay_folder(const char *folder) {
  struct dirent **names = NULL;
  const int count = scandir(folder, &names, NULL, alphasort);
  if (count < 0) {
    fprintf(stderr, "replay: cannot read the folder %s\n", folder);
    return -1;
  }
  long fed = 0;
  for (int i = 0; i < count; i++) {
    char path[4096];
    struct stat st;
    if (names[i]->d_name[0] != '.' &&
        snprintf(path, sizeof path, "%s/%s", folder, names[i]->d_name) < (int)sizeof path &&
        stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      size_t size = 0;
      uint8_t *data = read_file(path, &size);
      if (!data) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        fed = -1;
      } else {
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        if (fed >= 0) fed++;
      }
    }
    free(names[i]);
  }
  free(names);
  return fed;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FOLDER...\n", argv[0]);
    return 2;
  }
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  long total = 0;
  for (int i = 1; i < argc; i++) {
    const long fed = replay_folder(argv[i]);
    if (fed <= 0) {
      if (fed == 0) fprintf(stderr, "replay: no input in %s\n", argv[i]);
      return 1;
    }
    total += fed;
  }
  printf("replay: %ld inputs fed to the harness, every check held\n", total);
  return 0;
}

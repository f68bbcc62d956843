/* benchmarks/bench_common.c: small helpers shared by the benchmark binaries. */
#define _POSIX_C_SOURCE 200809L

#include "bench_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

bool bench_json_path_writable(const char *prog, const char *path) {
  FILE *probe = fopen(path, "r");
  bool existed = probe != NULL;
  if (probe) fclose(probe);
  probe = fopen(path, "a");
  if (!probe) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
    return false;
  }
  fclose(probe);
  if (!existed) remove(path);
  return true;
}

/* mkdir -p: create path and every missing folder above it; errno tells why not. */
static bool make_directories(const char *path) {
  char partial[4096];
  size_t length = strlen(path);
  if (length == 0 || length >= sizeof partial) {
    errno = length ? ENAMETOOLONG : ENOENT;
    return false;
  }
  memcpy(partial, path, length + 1);
  for (char *slash = strchr(partial + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    if (mkdir(partial, 0777) != 0 && errno != EEXIST) return false;
    *slash = '/';
  }
  return mkdir(partial, 0777) == 0 || errno == EEXIST;
}

bool bench_profile_dir_ready(const char *prog, const char *dir) {
  struct stat st;
  if (!make_directories(dir) || stat(dir, &st) != 0) {
    fprintf(stderr, "%s: cannot create %s: %s\n", prog, dir, strerror(errno));
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr, "%s: cannot create %s: %s\n", prog, dir, strerror(ENOTDIR));
    return false;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    fprintf(stderr, "%s: cannot write into %s: %s\n", prog, dir, strerror(errno));
    return false;
  }
  return true;
}

void bench_utc_date(char *out, size_t size) {
  time_t now = time(NULL);
  struct tm utc;
  gmtime_r(&now, &utc);
  strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(double *values, size_t count) {
  if (count == 0) return 0;
  qsort(values, count, sizeof values[0], compare_double);
  return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

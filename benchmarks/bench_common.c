/* benchmarks/bench_common.c: small helpers shared by the benchmark binaries. */
#define _POSIX_C_SOURCE 200809L

#include "bench_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

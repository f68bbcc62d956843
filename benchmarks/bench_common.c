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

#include "profile/stats.h"

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

double bench_median(double *values, size_t count) {
  plm__sort_doubles(values, count);
  return plm__median_sorted(values, count);
}

json_t *bench_json_document(const char *benchmark, plm_backend backend, const plm_device_info *info,
                            const char *run) {
  const plm_build_info *build = plm_build_info_get();
  json_t *doc = json_object();
  json_object_set_new(doc, "benchmark", json_string(benchmark));
  json_object_set_new(doc, "backend", json_string(plm_backend_name(backend)));
  json_object_set_new(doc, "device", json_string(info->name));
  json_object_set_new(doc, "commit", json_string(build->git_commit));
  if (backend == PLM_BACKEND_CUDA) {
    char driver[32], runtime[32];
    snprintf(driver, sizeof driver, "%d.%d", info->driver_version / 1000,
             info->driver_version % 1000 / 10);
    snprintf(runtime, sizeof runtime, "%d.%d", info->runtime_version / 1000,
             info->runtime_version % 1000 / 10);
    json_object_set_new(doc, "driver", json_string(driver));
    json_object_set_new(doc, "cuda_runtime", json_string(runtime));
  } else {
    json_object_set_new(doc, "driver", json_null());
    json_object_set_new(doc, "cuda_runtime", json_null());
  }
  json_object_set_new(doc, "plume_version", json_string(build->version));
  json_object_set_new(doc, "build_type", json_string(build->build_type));
  char date[32];
  bench_utc_date(date, sizeof date);
  json_object_set_new(doc, "date", json_string(date));
  json_object_set_new(doc, "run", json_string(run));
  return doc;
}

bool bench_json_write(const char *prog, json_t *doc, const char *path,
                      bool (*validate)(const char *path)) {
  if (json_dump_file(doc, path, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) != 0) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
    return false;
  }
  if (!validate(path)) return false;
  printf("\nwrote %s\n", path);
  return true;
}

/* benchmarks/bench_common.h: small helpers shared by the benchmark binaries. */
#ifndef PLUME_BENCH_COMMON_H
#define PLUME_BENCH_COMMON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "plume/plume.h"

/* Learn before a run, not after it, that the JSON at path cannot be written: open it
 * for appending (removing it again if it did not exist). Prints "<prog>: cannot write
 * PATH: reason" and returns false when it cannot. */
bool bench_json_path_writable(const char *prog, const char *path);

/* Learn before a run, not after it, that the profile directory dir (--profile) cannot
 * be written: create it and its missing parents (as mkdir -p does), then check that it
 * is a directory the process may write into. Prints "<prog>: cannot create DIR:
 * reason" or "<prog>: cannot write into DIR: reason" and returns false when it cannot.
 * What was created stays (plm_profiler_write writes into it after the run). */
bool bench_profile_dir_ready(const char *prog, const char *dir);

/* The current UTC time as "YYYY-MM-DDTHH:MM:SSZ" in out (at least 21 bytes). */
void bench_utc_date(char *out, size_t size);

/* A new JSON object holding the keys every benchmark's result file starts with:
 * benchmark (its name: "ops", "pool", ...), backend, device, commit, driver and
 * cuda_runtime ("13.0"; null on host), plume_version, build_type, date (UTC) and run
 * ("full", "quick" or "smoke"). */
json_t *bench_json_document(const char *benchmark, plm_backend backend, const plm_device_info *info,
                            const char *run);

/* Write doc to path (indented, reals to 6 digits), re-read it with validate (which
 * prints what is wrong) and print "wrote PATH". Prints "<prog>: cannot write PATH:
 * reason" and returns false when it cannot; doc stays the caller's. */
bool bench_json_write(const char *prog, json_t *doc, const char *path,
                      bool (*validate)(const char *path));

/* The median of count doubles (sorts them in place): the middle one or the mean of the
 * two middle ones (profile/stats.h's plm__median_sorted); 0 for none. */
double bench_median(double *values, size_t count);

#endif /* PLUME_BENCH_COMMON_H */

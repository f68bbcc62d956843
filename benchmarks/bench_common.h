/* benchmarks/bench_common.h: small helpers shared by the benchmark binaries. */
#ifndef PLUME_BENCH_COMMON_H
#define PLUME_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>

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

/* The median of count doubles (sorts them in place); 0 for none. */
double bench_median(double *values, size_t count);

#endif /* PLUME_BENCH_COMMON_H */

/* profile/stats.h: order statistics of samples, defined once (internal).
 *
 * plm_profile_stats_of (plume/profile.h), the pipeline executor's latencies, the
 * benchmarks, the comparison engine (benchmarks/pipeline_bench.h) and `plume op --repeat` take
 * their medians and percentiles from here. Three definitions, each the one its figures
 * are documented with and compared against, each named after numpy's:
 *
 *   plm__quantile_sorted  linear interpolation between the order statistics around rank
 *                         q (n - 1): numpy.percentile's default ('linear'). The
 *                         profiler's p50 and p99.
 *   plm__median_sorted    the middle value, or the mean (a + b) / 2 of the two middle
 *                         ones: numpy.median. The same value as plm__quantile_sorted at
 *                         0.5, except that a + 0.5 (b - a) may round differently in the
 *                         last bit when b > 2a. The benchmarks' medians of timings (as
 *                         benchmarks/peers_gpu.py takes its own).
 *   plm__nearest_rank     the ceil(q n)-th smallest of n values: numpy.percentile's
 *                         'inverted_cdf', always a value that occurred, for values of any
 *                         type. The pipeline's latency p50 and p99 (floats), bench_pool's
 *                         ns per pair (integers; benchmarks/peers_gpu.py measures the
 *                         peers' pools the same way).
 *
 * Sorted means ascending with no NaN (callers drop NaN first). No function allocates,
 * fails or keeps state; all are thread-safe. Non-static internal functions of libplume
 * (hidden in the shared library): the tools, tests and benchmarks reach them by linking
 * plume_static.
 */
#ifndef PLUME_PROFILE_STATS_H
#define PLUME_PROFILE_STATS_H

#include <stddef.h>

/* Sort n doubles in place, ascending (qsort; NaN must not be among them). */
void plm__sort_doubles(double *values, size_t n);

/* The q-quantile (0 <= q <= 1) of n sorted values by linear interpolation at rank
 * q (n - 1) (numpy.percentile's default); 0 when n is 0. */
double plm__quantile_sorted(const double *sorted, size_t n, double q);

/* The median of n sorted values: the middle one, or the mean of the two middle ones
 * (numpy.median); 0 when n is 0. */
double plm__median_sorted(const double *sorted, size_t n);

/* The index (0-based) of the q-quantile (0 <= q <= 1) of n >= 1 sorted values by
 * nearest rank: ceil(q n) - 1, clamped to 0..n-1. */
size_t plm__nearest_rank(size_t n, double q);

#endif /* PLUME_PROFILE_STATS_H */

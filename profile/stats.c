/* profile/stats.c: the statistics of a set of times (plm_profile_stats_of).
 *
 * Mean and population standard deviation in two passes (the second over deviations, so
 * large equal times do not cancel), percentiles by linear interpolation between order
 * statistics at rank q (n - 1) (numpy.percentile's default), and the seeds' warnings:
 * CV above 20% is high variance, a maximum above twice the mean an outlier. Also the
 * order statistics the rest of plume shares (profile/stats.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/stats.h"

#include "plume/profile.h"
#include "streams/error.h"

enum { HIGH_VARIANCE_CV_PERCENT = 20, OUTLIER_MAX_OVER_MEAN = 2 };

static int compare_doubles(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void plm__sort_doubles(double *values, size_t n) {
  if (n > 1) qsort(values, n, sizeof *values, compare_doubles);
}

double plm__quantile_sorted(const double *sorted, size_t n, double q) {
  if (n == 0) return 0.0;
  const double rank = q * (double)(n - 1);
  const size_t below = (size_t)floor(rank);
  if (below + 1 >= n) return sorted[n - 1];
  const double above_weight = rank - (double)below;
  return sorted[below] + above_weight * (sorted[below + 1] - sorted[below]);
}

double plm__median_sorted(const double *sorted, size_t n) {
  if (n == 0) return 0.0;
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

size_t plm__nearest_rank(size_t n, double q) {
  const double rank = ceil(q * (double)n);
  if (!(rank > 1.0)) return 0; /* also q NaN */
  if (rank >= (double)n) return n ? n - 1 : 0;
  return (size_t)rank - 1;
}

plm_status plm_profile_stats_of(const double *times_ms, size_t n, plm_profile_op_stats *stats) {
  PLM__REQUIRE_NOT_NULL(stats);
  if (n > 0 && !times_ms) return plm__fail(PLM_ERR_INVALID_ARG, "times_ms is NULL (n = %zu)", n);
  stats->count = (int64_t)n;
  stats->total_ms = stats->mean_ms = stats->stddev_ms = stats->min_ms = stats->max_ms = 0.0;
  stats->p50_ms = stats->p99_ms = stats->cv = stats->ops_per_s = 0.0;
  stats->high_variance = stats->outliers = false;
  if (n == 0) return PLM_OK;

  double *sorted = malloc(n * sizeof *sorted);
  if (!sorted) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no memory to sort %zu times", n);
  memcpy(sorted, times_ms, n * sizeof *sorted);
  plm__sort_doubles(sorted, n);

  double total = 0.0;
  for (size_t i = 0; i < n; i++) total += sorted[i];
  const double mean = total / (double)n;
  double squares = 0.0;
  for (size_t i = 0; i < n; i++) squares += (sorted[i] - mean) * (sorted[i] - mean);

  stats->total_ms = total;
  stats->mean_ms = mean;
  stats->stddev_ms = sqrt(squares / (double)n);
  stats->min_ms = sorted[0];
  stats->max_ms = sorted[n - 1];
  stats->p50_ms = plm__quantile_sorted(sorted, n, 0.50);
  stats->p99_ms = plm__quantile_sorted(sorted, n, 0.99);
  stats->cv = mean > 0.0 ? stats->stddev_ms / mean : 0.0;
  stats->high_variance = stats->cv * 100.0 > HIGH_VARIANCE_CV_PERCENT;
  stats->outliers = stats->max_ms > OUTLIER_MAX_OVER_MEAN * mean;
  stats->ops_per_s = mean > 0.0 ? 1000.0 / mean : 0.0;
  free(sorted);
  return PLM_OK;
}

/* tests/test_profile.c: the profiler (plume/profile.h).
 *
 *   statistics  plm_profile_stats_of against values computed by hand (mean, population
 *               stddev, numpy's interpolated percentiles, CV, the seeds' warnings); the
 *               order statistics the rest of plume shares (profile/stats.h) by hand, and
 *               the nearest rank against the two formulas it replaced;
 *   recording   launches around ops on two streams: names, streams, frames, costs,
 *               device times, statistics per op (counts, shares, GB/s from the cost);
 *               max_launches drops and counts the rest; a launch never ended (or whose
 *               end failed) is abandoned and the profiler goes on; four threads at once;
 *   pipelines   an attached profiler records every step of plm_pipeline_run (frames
 *               0, 1, 2) and, in plm_pipeline_run_stream, each frame's h2d and d2h;
 *               graphs are off while it is attached;
 *   calibration peaks measured once, then remembered; the cache file's line;
 *   writing     the three files appear in a new directory (their contents are
 *               test_profile_export's);
 *   errors      NULL arguments, a stream or pipeline of another context, a bad mark.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "profile/stats.h"

/* ---- statistics ------------------------------------------------------------------------- */

START_TEST(test_statistics_by_hand) {
  const double times[] = {4.0, 1.0, 10.0, 3.0, 2.0}; /* unsorted on purpose */
  plm_profile_op_stats s;
  PLM_CHECK_OK(plm_profile_stats_of(times, 5, &s));
  ck_assert_int_eq(s.count, 5);
  ck_assert_double_eq_tol(s.total_ms, 20.0, 1e-12);
  ck_assert_double_eq_tol(s.mean_ms, 4.0, 1e-12);
  ck_assert_double_eq_tol(s.stddev_ms, sqrt(10.0), 1e-12); /* (9 + 4 + 1 + 0 + 36) / 5 */
  ck_assert_double_eq(s.min_ms, 1.0);
  ck_assert_double_eq(s.max_ms, 10.0);
  ck_assert_double_eq_tol(s.p50_ms, 3.0, 1e-12);
  ck_assert_double_eq_tol(s.p99_ms, 4.0 + 0.96 * 6.0, 1e-12); /* rank 3.96 */
  ck_assert_double_eq_tol(s.cv, sqrt(10.0) / 4.0, 1e-12);
  ck_assert(s.high_variance);
  ck_assert(s.outliers); /* 10 > 2 x 4 */
  ck_assert_double_eq_tol(s.ops_per_s, 250.0, 1e-9);
  ck_assert_double_eq(times[0], 4.0); /* the input is left alone */

  const double steady[] = {2.0, 2.0, 2.0, 2.0};
  PLM_CHECK_OK(plm_profile_stats_of(steady, 4, &s));
  ck_assert_double_eq(s.stddev_ms, 0.0);
  ck_assert_double_eq(s.cv, 0.0);
  ck_assert(!s.high_variance && !s.outliers);

  const double even[] = {1.0, 2.0, 3.0, 4.0};
  PLM_CHECK_OK(plm_profile_stats_of(even, 4, &s));
  ck_assert_double_eq_tol(s.p50_ms, 2.5, 1e-12);
  ck_assert_double_eq_tol(s.p99_ms, 3.97, 1e-12); /* rank 2.97 */
  ck_assert(s.high_variance);                     /* CV = sqrt(1.25) / 2.5 = 0.447 */
  ck_assert(!s.outliers);

  const double one = 7.0;
  PLM_CHECK_OK(plm_profile_stats_of(&one, 1, &s));
  ck_assert_double_eq(s.p50_ms, 7.0);
  ck_assert_double_eq(s.p99_ms, 7.0);
  PLM_CHECK_OK(plm_profile_stats_of(NULL, 0, &s));
  ck_assert_int_eq(s.count, 0);
  ck_assert_double_eq(s.mean_ms, 0.0);
  PLM_CHECK_FAILS(plm_profile_stats_of(NULL, 3, &s), PLM_ERR_INVALID_ARG, "times_ms");
  PLM_CHECK_FAILS(plm_profile_stats_of(times, 5, NULL), PLM_ERR_INVALID_ARG, "stats");
}
END_TEST

START_TEST(test_order_statistics) {
  double values[] = {4.0, 1.0, 10.0, 3.0, 2.0, 7.0};
  plm__sort_doubles(values, 6);
  for (int i = 1; i < 6; i++) ck_assert(values[i - 1] <= values[i]);
  /* Linear interpolation at rank q (n - 1) (numpy.percentile's default). */
  ck_assert_double_eq_tol(plm__quantile_sorted(values, 6, 0.5), 3.5, 1e-12);
  ck_assert_double_eq_tol(plm__quantile_sorted(values, 6, 0.99), 7.0 + 0.95 * 3.0, 1e-12);
  ck_assert_double_eq(plm__quantile_sorted(values, 6, 0.0), 1.0);
  ck_assert_double_eq(plm__quantile_sorted(values, 6, 1.0), 10.0);
  ck_assert_double_eq(plm__quantile_sorted(values, 0, 0.5), 0.0);
  /* The middle value, or the mean of the two middle ones (numpy.median). */
  ck_assert_double_eq(plm__median_sorted(values, 6), 3.5);
  ck_assert_double_eq(plm__median_sorted(values, 5), 3.0);
  ck_assert_double_eq(plm__median_sorted(values, 1), 1.0);
  ck_assert_double_eq(plm__median_sorted(values, 0), 0.0);
  /* Nearest rank: the ceil(q n)-th smallest. */
  ck_assert_uint_eq(plm__nearest_rank(6, 0.5), 2);
  ck_assert_uint_eq(plm__nearest_rank(5, 0.5), 2);
  ck_assert_uint_eq(plm__nearest_rank(6, 0.99), 5);
  ck_assert_uint_eq(plm__nearest_rank(1, 0.99), 0);
  ck_assert_uint_eq(plm__nearest_rank(100, 0.99), 98);
  ck_assert_uint_eq(plm__nearest_rank(101, 0.99), 99);
  ck_assert_uint_eq(plm__nearest_rank(6, 0.0), 0);
  ck_assert_uint_eq(plm__nearest_rank(6, 1.0), 5);
  /* The same index as the two formulas it replaced, at the quantiles they took:
   * bench_pool's (size_t)(q n + 0.999999) clamped to 1..n, and the pipeline executor's
   * ceil(q n) (0 taken as 1). */
  const double qs[] = {0.5, 0.99};
  for (size_t n = 1; n <= 20000; n++)
    for (int k = 0; k < 2; k++) {
      size_t pool_rank = (size_t)(qs[k] * (double)n + 0.999999);
      if (pool_rank < 1) pool_rank = 1;
      if (pool_rank > n) pool_rank = n;
      size_t executor_rank = (size_t)ceil(qs[k] * (double)n);
      if (executor_rank == 0) executor_rank = 1;
      ck_assert_uint_eq(plm__nearest_rank(n, qs[k]), pool_rank - 1);
      ck_assert_uint_eq(plm__nearest_rank(n, qs[k]), executor_rank - 1);
    }
}
END_TEST

/* ---- recording ---------------------------------------------------------------------------- */

static plm_profiler *quiet_profiler(size_t max_launches) {
  plm_profiler_config cfg = plm_profiler_config_default();
  cfg.calibrate = false;
  cfg.max_launches = max_launches;
  plm_profiler *p = NULL;
  PLM_CHECK_OK(plm_profiler_create(plm_test_ctx, &cfg, &p));
  return p;
}

enum { PIXELS = 64 * 64 };

/* A threshold of `in` into `out` on stream, recorded as frame `frame`. */
static void recorded_threshold(plm_profiler *p, plm_stream *stream, const plm_tensor *in,
                               plm_tensor *out, int64_t frame) {
  const plm_threshold_params params = {.value = 0.5, .compare = PLM_COMPARE_GT};
  plm_op_cost cost;
  PLM_CHECK_OK(plm_threshold_cost(in, &params, &cost));
  plm_profile_mark mark;
  PLM_CHECK_OK(plm_profiler_begin(p, stream, "threshold", frame, &cost, &mark));
  PLM_CHECK_OK(plm_threshold(stream, in, &params, out));
  PLM_CHECK_OK(plm_profiler_end(p, stream, &mark));
}

START_TEST(test_launches_on_two_streams) {
  plm_profiler *p = quiet_profiler(0);
  double overhead = -1.0;
  PLM_CHECK_OK(plm_profiler_overhead_us(p, &overhead));
  ck_assert(overhead > 0.0 && overhead < 10000.0);

  plm_stream *second = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &second));
  const int64_t dims[2] = {64, 64};
  plm_tensor in, out_a, out_b;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &out_a));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &out_b));
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, in.data, 0, PIXELS * sizeof(float)));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  for (int64_t frame = 0; frame < 3; frame++) {
    recorded_threshold(p, plm_test_stream, &in, &out_a, frame);
    recorded_threshold(p, second, &in, &out_b, frame);
  }
  plm_profile_mark mark;
  PLM_CHECK_OK(plm_profiler_begin(p, second, "memset", -1, NULL, &mark));
  PLM_CHECK_OK(plm_stream_memset(second, out_b.data, 0, PIXELS));
  PLM_CHECK_OK(plm_profiler_end(p, second, &mark));
  PLM_CHECK_OK(plm_profiler_collect(p));

  const plm_profile_launch *launches = NULL;
  size_t count = 0, dropped = 99;
  PLM_CHECK_OK(plm_profiler_launches(p, &launches, &count, &dropped));
  ck_assert_uint_eq(count, 7);
  ck_assert_uint_eq(dropped, 0);
  for (size_t i = 0; i < 6; i++) {
    ck_assert_str_eq(launches[i].name, "threshold");
    ck_assert_int_eq(launches[i].stream, (int)(i % 2)); /* numbered as first seen */
    ck_assert_int_eq(launches[i].frame, (int64_t)(i / 2));
    ck_assert_double_eq(launches[i].bytes, 5.0 * PIXELS); /* f32 in, u8 out */
    ck_assert(launches[i].end_ms >= launches[i].start_ms);
    ck_assert(launches[i].enqueue_us >= 0.0);
  }
  ck_assert_str_eq(launches[6].name, "memset");
  ck_assert_int_eq(launches[6].frame, -1);
  ck_assert_double_eq(launches[6].bytes, 0.0);
  /* One stream runs its launches in order. */
  ck_assert(launches[2].start_ms >= launches[0].end_ms - 1e-3);

  plm_profile_op_stats *stats = NULL;
  size_t ops = 0;
  PLM_CHECK_OK(plm_profiler_op_stats(p, &stats, &ops));
  ck_assert_uint_eq(ops, 2);
  double shares = 0.0;
  for (size_t i = 0; i < ops; i++) {
    shares += stats[i].share;
    if (i > 0) ck_assert(stats[i - 1].total_ms >= stats[i].total_ms);
    if (strcmp(stats[i].name, "threshold") == 0) {
      ck_assert_int_eq(stats[i].count, 6);
      ck_assert_double_eq(stats[i].bytes, 5.0 * PIXELS);
      if (stats[i].mean_ms > 0.0)
        ck_assert_double_eq_tol(stats[i].gb_per_s, 5.0 * PIXELS / (stats[i].mean_ms * 1e6),
                                1e-9 * stats[i].gb_per_s + 1e-12);
      ck_assert_str_eq(stats[i].bound, ""); /* no calibration */
    } else {
      ck_assert_str_eq(stats[i].name, "memset");
      ck_assert_int_eq(stats[i].count, 1);
    }
  }
  ck_assert_double_eq_tol(shares, 1.0, 1e-9);
  free(stats);

  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out_b));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out_a));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_stream_synchronize(second));
  PLM_CHECK_OK(plm_stream_destroy(second));
  PLM_CHECK_OK(plm_profiler_destroy(p));
}
END_TEST

START_TEST(test_launches_beyond_the_limit_are_dropped) {
  plm_profiler *p = quiet_profiler(2);
  for (int i = 0; i < 5; i++) {
    plm_profile_mark mark;
    PLM_CHECK_OK(plm_profiler_begin(p, plm_test_stream, "memset", i, NULL, &mark));
    PLM_CHECK_OK(plm_profiler_end(p, plm_test_stream, &mark));
  }
  const plm_profile_launch *launches = NULL;
  size_t count = 0, dropped = 0;
  PLM_CHECK_OK(plm_profiler_launches(p, &launches, &count, &dropped));
  ck_assert_uint_eq(count, 2);
  ck_assert_uint_eq(dropped, 3);
  PLM_CHECK_OK(plm_profiler_destroy(p)); /* collects the pending events, frees them */
}
END_TEST

START_TEST(test_a_launch_never_ended_is_abandoned) {
  plm_profiler *p = quiet_profiler(0);
  plm_profile_mark first, lost, wrong, last;
  PLM_CHECK_OK(plm_profiler_begin(p, plm_test_stream, "memset", 0, NULL, &first));
  PLM_CHECK_OK(plm_profiler_end(p, plm_test_stream, &first));
  PLM_CHECK_OK(plm_profiler_begin(p, plm_test_stream, "lost", 1, NULL, &lost)); /* no end */
  /* An end on the wrong stream fails; that launch is abandoned too. */
  plm_stream *other = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &other));
  PLM_CHECK_OK(plm_profiler_begin(p, plm_test_stream, "wrong", 2, NULL, &wrong));
  PLM_CHECK_FAILS(plm_profiler_end(p, other, &wrong), PLM_ERR_INVALID_ARG, "stream");
  PLM_CHECK_OK(plm_profiler_collect(p));
  PLM_CHECK_OK(plm_profiler_begin(p, plm_test_stream, "memset", 3, NULL, &last));
  PLM_CHECK_OK(plm_profiler_end(p, plm_test_stream, &last));
  PLM_CHECK_OK(plm_profiler_collect(p)); /* the profiler goes on */

  const plm_profile_launch *launches = NULL;
  size_t count = 0, dropped = 0;
  PLM_CHECK_OK(plm_profiler_launches(p, &launches, &count, &dropped));
  ck_assert_uint_eq(count, 4);
  ck_assert_uint_eq(dropped, 2);
  ck_assert(isnan(launches[1].start_ms) && isnan(launches[2].start_ms));
  ck_assert(!isnan(launches[3].start_ms));
  plm_profile_op_stats *stats = NULL;
  size_t ops = 0;
  PLM_CHECK_OK(plm_profiler_op_stats(p, &stats, &ops));
  ck_assert_uint_eq(ops, 1); /* the abandoned ones are in no statistics */
  ck_assert_str_eq(stats[0].name, "memset");
  ck_assert_int_eq(stats[0].count, 2);
  free(stats);
  PLM_CHECK_OK(plm_stream_destroy(other));
  PLM_CHECK_OK(plm_profiler_destroy(p));
}
END_TEST

/* Four threads record on streams of their own into one profiler. */
enum { THREADS = 4, LAUNCHES_PER_THREAD = 150, KEPT = 400 };

typedef struct recorder {
  plm_profiler *profiler;
  plm_stream *stream;
  int failures;
} recorder;

static void *record_launches(void *arg) {
  recorder *r = arg;
  for (int i = 0; i < LAUNCHES_PER_THREAD; i++) {
    plm_profile_mark mark;
    if (plm_profiler_begin(r->profiler, r->stream, "memset", i, NULL, &mark) != PLM_OK ||
        plm_profiler_end(r->profiler, r->stream, &mark) != PLM_OK)
      r->failures++;
  }
  return NULL;
}

START_TEST(test_threads_record_at_once) {
  plm_profiler *p = quiet_profiler(KEPT);
  recorder recorders[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++) {
    recorders[t] = (recorder){.profiler = p};
    PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &recorders[t].stream));
  }
  for (int t = 0; t < THREADS; t++)
    ck_assert_int_eq(pthread_create(&threads[t], NULL, record_launches, &recorders[t]), 0);
  for (int t = 0; t < THREADS; t++) ck_assert_int_eq(pthread_join(threads[t], NULL), 0);
  const plm_profile_launch *launches = NULL;
  size_t count = 0, dropped = 0;
  PLM_CHECK_OK(plm_profiler_collect(p));
  PLM_CHECK_OK(plm_profiler_launches(p, &launches, &count, &dropped));
  ck_assert_uint_eq(count, KEPT);
  ck_assert_uint_eq(dropped, THREADS * LAUNCHES_PER_THREAD - KEPT);
  for (size_t i = 0; i < count; i++) {
    ck_assert(launches[i].stream >= 0 && launches[i].stream < THREADS);
    ck_assert(launches[i].end_ms >= launches[i].start_ms);
  }
  for (int t = 0; t < THREADS; t++) {
    ck_assert_int_eq(recorders[t].failures, 0);
    PLM_CHECK_OK(plm_stream_destroy(recorders[t].stream));
  }
  PLM_CHECK_OK(plm_profiler_destroy(p));
}
END_TEST

/* ---- pipelines --------------------------------------------------------------------------------
 */

enum { PH = 40, PW = 48 };

static plm_status ramp_source(void *user, int64_t frame, void *const *inputs, bool *end) {
  (void)user;
  if (frame >= 4) {
    *end = true;
    return PLM_OK;
  }
  uint16_t *in = inputs[0];
  for (int64_t i = 0; i < PH * PW; i++) in[i] = (uint16_t)((i * 13 + frame * 101) % 4096);
  return PLM_OK;
}

static bool has_launch(const plm_profile_launch *launches, size_t count, const char *name,
                       int64_t frame) {
  for (size_t i = 0; i < count; i++)
    if (strcmp(launches[i].name, name) == 0 && launches[i].frame == frame) return true;
  return false;
}

START_TEST(test_an_attached_pipeline_records_its_steps) {
  const int64_t dims[2] = {PH, PW};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                  "sobel ! threshold value=100 ! label connectivity=8 ! regions",
                                  PLM_DTYPE_U16, 2, dims, &pl));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_profiler *p = quiet_profiler(0);
  PLM_CHECK_OK(plm_pipeline_set_profiler(pl, p));

  plm_run_stream_report report;
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, ramp_source, NULL, NULL, NULL, &report));
  ck_assert_int_eq(report.frames_delivered, 4);
  ck_assert(!report.graphs_used);
  if (plm_test_backend == PLM_BACKEND_CUDA) ck_assert(strstr(report.graphs_note, "profiler"));

  PLM_CHECK_OK(plm_profiler_collect(p));
  const plm_profile_launch *launches = NULL;
  size_t count = 0;
  PLM_CHECK_OK(plm_profiler_launches(p, &launches, &count, NULL));
  const char *names[] = {"h2d", "sobel", "threshold", "label", "regions", "d2h"};
  for (int64_t frame = 0; frame < 4; frame++)
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
      ck_assert_msg(has_launch(launches, count, names[k], frame), "no %s of frame %lld", names[k],
                    (long long)frame);
  for (size_t i = 0; i < count; i++) ck_assert(launches[i].end_ms >= launches[i].start_ms);

  /* Attached, it cannot be destroyed; detached, nothing more is recorded. */
  PLM_CHECK_FAILS(plm_profiler_destroy(p), PLM_ERR_INVALID_STATE, "attached");
  PLM_CHECK_OK(plm_pipeline_set_profiler(pl, NULL));
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, ramp_source, NULL, NULL, NULL, &report));
  size_t after = 0;
  PLM_CHECK_OK(plm_profiler_launches(p, &launches, &after, NULL));
  ck_assert_uint_eq(after, count);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  PLM_CHECK_OK(plm_profiler_destroy(p));
}
END_TEST

START_TEST(test_pipeline_run_numbers_its_frames) {
  const int64_t dims[2] = {PH, PW};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(
      plm_pipeline_parse(plm_test_ctx, "threshold value=100", PLM_DTYPE_U16, 2, dims, &pl));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_profiler *p = quiet_profiler(0);
  PLM_CHECK_OK(plm_pipeline_set_profiler(pl, p));
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &out));
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, in.data, 0, PH * PW * 2));
  for (int k = 0; k < 3; k++) PLM_CHECK_OK(plm_pipeline_run(pl, &in, &out, plm_test_stream));
  PLM_CHECK_OK(plm_profiler_collect(p));
  const plm_profile_launch *launches = NULL;
  size_t count = 0;
  PLM_CHECK_OK(plm_profiler_launches(p, &launches, &count, NULL));
  ck_assert_uint_eq(count, 3);
  for (size_t i = 0; i < count; i++) {
    ck_assert_str_eq(launches[i].name, "threshold");
    ck_assert_int_eq(launches[i].frame, (int64_t)i);
    ck_assert_double_eq(launches[i].bytes, 3.0 * PH * PW);
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  PLM_CHECK_OK(plm_profiler_destroy(p));
}
END_TEST

/* ---- calibration and writing -------------------------------------------------------------------
 */

/* A fresh temporary directory (mkdtemp) under /tmp. */
static void temporary_directory(char *path, size_t size) {
  snprintf(path, size, "/tmp/plume-test-profile-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(path));
}

static void remove_files(const char *dir, const char *const *names, size_t n) {
  char path[512];
  for (size_t i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
}

START_TEST(test_calibration_is_measured_once_and_cached) {
  char cache[256];
  temporary_directory(cache, sizeof cache);
  setenv("XDG_CACHE_HOME", cache, 1);
  unsetenv("PLUME_CALIBRATION_CACHE");
  plm_profiler *first = NULL, *second = NULL;
  PLM_CHECK_OK(plm_profiler_create(plm_test_ctx, NULL, &first));
  plm_profile_calibration a, b;
  PLM_CHECK_OK(plm_profiler_calibration(first, &a));
  ck_assert(a.device_copy_gbps > 0.0 && a.h2d_gbps > 0.0 && a.d2h_gbps > 0.0);
  ck_assert(a.fma_gflops > 0.0);
  ck_assert_str_eq(a.backend, plm_backend_name(plm_test_backend));
  /* On the CUDA emulator the figures are labelled as the emulator's (plume/profile.h). */
  ck_assert_int_eq(a.emulated, plm_test_on_emulator());
  PLM_CHECK_OK(plm_profiler_create(plm_test_ctx, NULL, &second));
  PLM_CHECK_OK(plm_profiler_calibration(second, &b));
  ck_assert_double_eq(b.fma_gflops, a.fma_gflops);
  ck_assert_double_eq(b.device_copy_gbps, a.device_copy_gbps);
  ck_assert_int_eq(b.emulated, a.emulated);

  char path[512], line[1024] = "";
  snprintf(path, sizeof path, "%s/plume/calibration.tsv", cache);
  FILE *f = fopen(path, "r");
  if (!a.from_cache) { /* measured by this process: it wrote the line */
    ck_assert_msg(f != NULL, "no cache file %s", path);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert(strncmp(line, "plume-calibration-4\t", 20) == 0);
    ck_assert(strstr(line, a.device) != NULL);
  }
  if (f) fclose(f);
  PLM_CHECK_OK(plm_profiler_destroy(second));
  PLM_CHECK_OK(plm_profiler_destroy(first));
  unlink(path);
  snprintf(path, sizeof path, "%s/plume", cache);
  rmdir(path);
  rmdir(cache);
}
END_TEST

START_TEST(test_write_makes_the_three_files) {
  plm_profiler *p = quiet_profiler(0);
  plm_profile_mark mark;
  PLM_CHECK_OK(plm_profiler_begin(p, plm_test_stream, "memset", 0, NULL, &mark));
  PLM_CHECK_OK(plm_profiler_end(p, plm_test_stream, &mark));
  char dir[256], nested[320];
  temporary_directory(dir, sizeof dir);
  snprintf(nested, sizeof nested, "%s/a/b", dir);
  const plm_profile_ab bars[] = {{"one", 1.0}, {"two", 2.0}};
  const plm_profile_write_options options = {.title = "test",
                                             .ab = bars,
                                             .ab_count = 2,
                                             .ab_unit = "frames/s",
                                             .ab_higher_is_better = true};
  PLM_CHECK_OK(plm_profiler_write(p, nested, &options));
  const char *const names[] = {"profile.json", "trace.json", "report.html"};
  for (size_t i = 0; i < 3; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", nested, names[i]);
    struct stat st;
    ck_assert_msg(stat(path, &st) == 0 && st.st_size > 0, "%s missing or empty", path);
  }
  const plm_profile_write_options broken = {.ab_count = 1};
  PLM_CHECK_FAILS(plm_profiler_write(p, nested, &broken), PLM_ERR_INVALID_ARG, "ab");
  remove_files(nested, names, 3);
  rmdir(nested);
  snprintf(nested, sizeof nested, "%s/a", dir);
  rmdir(nested);
  /* A path through a regular file cannot be a directory. */
  char file[300];
  snprintf(file, sizeof file, "%s/file", dir);
  FILE *f = fopen(file, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  snprintf(nested, sizeof nested, "%s/file/sub", dir);
  PLM_CHECK_FAILS(plm_profiler_write(p, nested, NULL), PLM_ERR_IO, "file");
  unlink(file);
  rmdir(dir);
  PLM_CHECK_OK(plm_profiler_destroy(p));
}
END_TEST

/* A snapshot of the test pool, given to the profiler, is drawn in report.html and written to
 * pool_snapshot.json; the profiler keeps its own copy. */
START_TEST(test_write_adds_pool_snapshots) {
  plm_profiler *p = quiet_profiler(0);
  void *block = NULL;
  PLM_CHECK_OK(plm_pool_alloc(plm_test_pool, 300000, plm_test_stream, &block));
  plm_pool_snapshot *snapshot = NULL;
  PLM_CHECK_OK(plm_pool_snapshot_take(plm_test_pool, &snapshot));
  PLM_CHECK_OK(plm_profiler_add_pool_snapshot(p, "after one alloc", snapshot));
  PLM_CHECK_OK(plm_profiler_add_pool_snapshot(p, "the same again", snapshot));
  PLM_CHECK_FAILS(plm_profiler_add_pool_snapshot(NULL, "x", snapshot), PLM_ERR_INVALID_ARG,
                  "profiler");
  PLM_CHECK_FAILS(plm_profiler_add_pool_snapshot(p, NULL, snapshot), PLM_ERR_INVALID_ARG, "name");
  PLM_CHECK_FAILS(plm_profiler_add_pool_snapshot(p, "x", NULL), PLM_ERR_INVALID_ARG, "snapshot");
  plm_pool_snapshot_free(snapshot);
  PLM_CHECK_OK(plm_pool_free(plm_test_pool, block, plm_test_stream));

  char dir[256], path[512];
  temporary_directory(dir, sizeof dir);
  PLM_CHECK_OK(plm_profiler_write(p, dir, NULL));
  snprintf(path, sizeof path, "%s/pool_snapshot.json", dir);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "no %s", path);
  char text[4096] = "";
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  ck_assert_uint_gt(n, 0);
  ck_assert_ptr_nonnull(strstr(text, "\"plume-pool-snapshots\""));
  ck_assert_ptr_nonnull(strstr(text, "\"the same again\""));
  snprintf(path, sizeof path, "%s/report.html", dir);
  f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  static char html[1 << 20];
  html[fread(html, 1, sizeof html - 1, f)] = '\0';
  fclose(f);
  ck_assert_ptr_nonnull(strstr(html, "id=\"pool-map-1\""));
  ck_assert_ptr_nonnull(strstr(html, "after one alloc"));
  const char *const names[] = {"profile.json", "trace.json", "report.html", "pool_snapshot.json"};
  remove_files(dir, names, 4);
  rmdir(dir);
  PLM_CHECK_OK(plm_profiler_destroy(p));
}
END_TEST

/* ---- errors -------------------------------------------------------------------------------------
 */

START_TEST(test_bad_arguments) {
  plm_profiler *p = NULL;
  PLM_CHECK_FAILS(plm_profiler_create(NULL, NULL, &p), PLM_ERR_INVALID_ARG, "ctx");
  ck_assert_ptr_null(p);
  PLM_CHECK_FAILS(plm_profiler_create(plm_test_ctx, NULL, NULL), PLM_ERR_INVALID_ARG, "out");
  p = quiet_profiler(0);
  plm_profile_mark mark;
  PLM_CHECK_FAILS(plm_profiler_begin(NULL, plm_test_stream, "x", 0, NULL, &mark),
                  PLM_ERR_INVALID_ARG, "profiler");
  PLM_CHECK_FAILS(plm_profiler_begin(p, NULL, "x", 0, NULL, &mark), PLM_ERR_INVALID_ARG, "stream");
  PLM_CHECK_FAILS(plm_profiler_begin(p, plm_test_stream, NULL, 0, NULL, &mark), PLM_ERR_INVALID_ARG,
                  "name");
  PLM_CHECK_FAILS(plm_profiler_begin(p, plm_test_stream, "x", 0, NULL, NULL), PLM_ERR_INVALID_ARG,
                  "mark");
  plm_profile_mark bogus = {.index = 12345};
  PLM_CHECK_FAILS(plm_profiler_end(p, plm_test_stream, &bogus), PLM_ERR_INVALID_ARG, "mark");

  /* A stream, and a pipeline, of another context. */
  plm_context_config cfg = {.backend = plm_test_backend};
  plm_context *other = NULL;
  PLM_CHECK_OK(plm_context_create(&cfg, &other));
  plm_stream *foreign = NULL;
  PLM_CHECK_OK(plm_stream_create(other, 0, &foreign));
  PLM_CHECK_FAILS(plm_profiler_begin(p, foreign, "x", 0, NULL, &mark), PLM_ERR_INVALID_ARG,
                  "another context");
  const int64_t dims[2] = {4, 4};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(other, "threshold value=1", PLM_DTYPE_U8, 2, dims, &pl));
  PLM_CHECK_FAILS(plm_pipeline_set_profiler(pl, p), PLM_ERR_INVALID_ARG, "another context");
  PLM_CHECK_FAILS(plm_pipeline_set_profiler(NULL, p), PLM_ERR_INVALID_ARG, "pl");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  PLM_CHECK_OK(plm_stream_destroy(foreign));
  PLM_CHECK_OK(plm_context_destroy(other));

  /* The profiler still works after the refusals. */
  PLM_CHECK_OK(plm_profiler_begin(p, plm_test_stream, "memset", 0, NULL, &mark));
  PLM_CHECK_OK(plm_profiler_end(p, plm_test_stream, &mark));
  PLM_CHECK_OK(plm_profiler_collect(p));
  PLM_CHECK_FAILS(plm_profiler_write(p, NULL, NULL), PLM_ERR_INVALID_ARG, "dir");
  PLM_CHECK_FAILS(plm_profiler_write(p, "", NULL), PLM_ERR_INVALID_ARG, "empty");
  PLM_CHECK_OK(plm_profiler_destroy(p));
  PLM_CHECK_OK(plm_profiler_destroy(NULL));
}
END_TEST

static Suite *profile_suite(void) {
  Suite *suite = suite_create("profile");
  TCase *tcase = tcase_create("profile");
  tcase_set_timeout(tcase, 120);
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_add_test(tcase, test_statistics_by_hand);
  tcase_add_test(tcase, test_order_statistics);
  tcase_add_test(tcase, test_launches_on_two_streams);
  tcase_add_test(tcase, test_launches_beyond_the_limit_are_dropped);
  tcase_add_test(tcase, test_a_launch_never_ended_is_abandoned);
  tcase_add_test(tcase, test_threads_record_at_once);
  tcase_add_test(tcase, test_an_attached_pipeline_records_its_steps);
  tcase_add_test(tcase, test_pipeline_run_numbers_its_frames);
  tcase_add_test(tcase, test_calibration_is_measured_once_and_cached);
  tcase_add_test(tcase, test_write_makes_the_three_files);
  tcase_add_test(tcase, test_write_adds_pool_snapshots);
  tcase_add_test(tcase, test_bad_arguments);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(profile_suite);
}

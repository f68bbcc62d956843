/* tests/test_forecast.c: ar_forecast (plume/forecast.h) on the backend under test,
 * against a float64 reference computed here: statsmodels' AutoReg(x, lags=p,
 * trend="c").fit() is ordinary least squares of x[t] on [1, x[t-1], ..., x[t-p]],
 * t = p..T-1, solved here by the normal equations with Gaussian elimination (fine for
 * the well-conditioned AR processes used), then a recursive forecast. Singular designs
 * (a constant series, a straight line) are checked against their exact forecasts. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernels/common/forecast.h"
#include "ops/op_desc.h"

/* The reference forecast of x (length T) into out (h values), in double. */
static void reference_forecast(const float *x, int64_t length, int lags, int horizon, double *out) {
  enum { N = PLM_AR_MAX_LAGS + 1 };
  const int n = lags + 1;
  double a[N][N + 1] = {{0}}, row[N], coef[N];
  for (int64_t t = lags; t < length; t++) {
    row[0] = 1;
    for (int k = 1; k < n; k++) row[k] = x[t - k];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) a[i][j] += row[i] * row[j];
      a[i][n] += row[i] * x[t];
    }
  }
  for (int c = 0; c < n; c++) { /* elimination with partial pivoting */
    int pivot = c;
    for (int r = c + 1; r < n; r++)
      if (fabs(a[r][c]) > fabs(a[pivot][c])) pivot = r;
    for (int j = 0; j <= n; j++) {
      double swap = a[c][j];
      a[c][j] = a[pivot][j];
      a[pivot][j] = swap;
    }
    for (int r = c + 1; r < n; r++) {
      double f = a[r][c] / a[c][c];
      for (int j = c; j <= n; j++) a[r][j] -= f * a[c][j];
    }
  }
  for (int i = n - 1; i >= 0; i--) {
    double sum = a[i][n];
    for (int j = i + 1; j < n; j++) sum -= a[i][j] * coef[j];
    coef[i] = sum / a[i][i];
  }
  double history[PLM_AR_MAX_LAGS + PLM_AR_MAX_HORIZON];
  for (int k = 0; k < lags; k++) history[k] = x[length - lags + k];
  for (int s = 0; s < horizon; s++) {
    double f = coef[0];
    for (int k = 1; k < n; k++) f += coef[k] * history[s + lags - k];
    history[s + lags] = f;
    out[s] = f;
  }
}

/* S series of length T: a stable AR(2) (coefficients varying per series) driven by
 * uniform noise, with an intercept. */
static float *ar2_series(int64_t count, int64_t length, uint64_t seed) {
  float *x = malloc((size_t)(count * length) * sizeof *x);
  ck_assert_ptr_nonnull(x);
  uint64_t state = seed | 1;
  for (int64_t s = 0; s < count; s++) {
    double phi1 = 0.2 + 0.5 * (double)(s % 7) / 7, phi2 = -0.3 + 0.05 * (double)(s % 5);
    double c = 1.0 + (double)(s % 3), previous = 0, before = 0;
    for (int64_t t = 0; t < length; t++) {
      double noise = (double)(plm_test_random(&state) >> 11) / 9007199254740992.0 - 0.5;
      double v = c + phi1 * previous + phi2 * before + noise;
      x[s * length + t] = (float)v;
      before = previous;
      previous = v;
    }
  }
  return x;
}

/* Run ar_forecast on host series (S, T) and return the (S, h) forecasts (malloc'd). */
static float *run_forecast(const float *x, int64_t count, int64_t length, int lags, int horizon) {
  const int64_t dims[2] = {count, length}, out_dims[2] = {count, horizon};
  plm_tensor series, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &series));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, out_dims, &out));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, series.data, x, plm_tensor_bytes(&series),
                                 PLM_COPY_HOST_TO_DEVICE));
  plm_ar_forecast_params params = {.lags = lags, .horizon = horizon};
  PLM_CHECK_OK(plm_ar_forecast(plm_test_stream, &series, &params, &out));
  float *got = malloc(plm_tensor_bytes(&out));
  ck_assert_ptr_nonnull(got);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got, out.data, plm_tensor_bytes(&out),
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &series));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
  return got;
}

static void check_against_reference(int64_t count, int64_t length, int lags, int horizon,
                                    uint64_t seed) {
  float *x = ar2_series(count, length, seed);
  float *got = run_forecast(x, count, length, lags, horizon);
  double expected[PLM_AR_MAX_HORIZON];
  for (int64_t s = 0; s < count; s++) {
    reference_forecast(x + s * length, length, lags, horizon, expected);
    for (int k = 0; k < horizon; k++)
      ck_assert_msg(fabs(got[s * horizon + k] - expected[k]) <= 1e-4 * fabs(expected[k]) + 1e-6,
                    "S %lld T %lld p %d: series %lld step %d: %.9g, expected %.9g",
                    (long long)count, (long long)length, lags, (long long)s, k,
                    (double)got[s * horizon + k], expected[k]);
  }
  free(x);
  free(got);
}

START_TEST(test_matches_least_squares_for_one_and_for_a_thousand_series) {
  check_against_reference(1, 200, 2, 10, 1);
  check_against_reference(1000, 100, 2, 20, 2);
  check_against_reference(7, 333, 1, 1, 3);
  check_against_reference(3, 501, 5, 64, 4);
}
END_TEST

/* The backend's forecasts are the CPU kernel's, bit for bit: on host trivially (the same
 * code), on cuda because the kernels round every operation as the CPU does (no fused
 * multiply-adds; kernels/cuda/forecast.cu), in every spread of a series over lanes that
 * lanes_per_series gives the lags (a thread a series for lags 1..8; groups of 8, 16 and
 * 32 lanes; 20 and 32 put Q^T y and R's last column on a lane's second slot). The
 * (lags, spread) pairs are a sweep (tests/harness.h): on the emulated GPU, where they took
 * 100 s, each seed takes every second, so that CI's two seeds run all of them between them. */
START_TEST(test_the_backend_gives_the_cpu_kernel_s_bits) {
  enum { T = 150, H = 16 };
  float *x = ar2_series(300, T, 61);
  const int lags[] = {1, 4, 7, 8, 9, 20, 31, 32}, lanes[] = {1, 8, 16, 32};
  plm_test_sweep pairs = plm_test_sweep_start("lags and their spreads over lanes", 2);
  for (size_t i = 0; i < sizeof lags / sizeof lags[0]; i++) {
    /* fewer series past 20: the emulator's warp collectives are slow */
    const int64_t S = lags[i] > 20 ? 37 : 300;
    float *want = malloc(sizeof(float) * S * H);
    ck_assert_ptr_nonnull(want);
    const plm__ar_forecast_args args = {
        .series = x, .out = want, .count = S, .length = T, .lags = lags[i], .horizon = H};
    plm__ar_forecast_cpu(&args);
    for (size_t l = 0; l < sizeof lanes / sizeof lanes[0]; l++) {
      /* each spread the lags have once: a value that plm__ar_series_lanes raises to one
       * tried already is skipped */
      const int spread = plm__ar_series_lanes(lags[i], lanes[l]);
      if (l > 0 && spread == plm__ar_series_lanes(lags[i], lanes[l - 1])) continue;
      if (!plm_test_sweep_take(&pairs)) continue;
      PLM_CHECK_OK(
          plm_tuning_set(PLM_BACKEND_CUDA, "ar_forecast", "lanes_per_series", -1, lanes[l]));
      float *got = run_forecast(x, S, T, lags[i], H);
      for (int64_t k = 0; k < S * H; k++)
        ck_assert_msg(memcmp(&got[k], &want[k], sizeof(float)) == 0,
                      "p %d, %d lanes a series: series %lld step %lld: %a, the CPU kernel %a",
                      lags[i], spread, (long long)(k / H), (long long)(k % H), (double)got[k],
                      (double)want[k]);
      free(got);
    }
    plm_tuning_reset();
    free(want);
  }
  plm_test_sweep_finish(&pairs);
  free(x);
}
END_TEST

START_TEST(test_most_lags_and_longest_horizon) {
  check_against_reference(20, 600, PLM_AR_MAX_LAGS, PLM_AR_MAX_HORIZON, 5);
}
END_TEST

START_TEST(test_series_just_long_enough) {
  /* T = 2p + 1: p + 1 equations for p + 1 unknowns. */
  check_against_reference(5, 5, 2, 4, 6);
  check_against_reference(5, 9, 4, 3, 7);
  check_against_reference(2, 3, 1, 2, 8);
}
END_TEST

START_TEST(test_singular_designs_give_the_minimum_norm_solution_s_forecasts) {
  enum { T = 40, H = 9 };
  float x[4 * T];
  for (int t = 0; t < T; t++) {
    x[t] = 3.5f;              /* constant: forecast 3.5 */
    x[T + t] = 0.0f;          /* zeros: forecast 0 */
    x[2 * T + t] = (float)t;  /* a line: [1, t-1, t-2] are collinear; forecast T, T+1, ... */
    x[3 * T + t] = -1234.25f; /* constant, large */
  }
  for (int lags = 1; lags <= 4; lags++) {
    float *got = run_forecast(x, 4, T, lags, H);
    for (int k = 0; k < H; k++) {
      ck_assert_msg(fabsf(got[k] - 3.5f) <= 3.5e-5f, "p %d: constant step %d: %.9g", lags, k,
                    (double)got[k]);
      ck_assert_msg(got[H + k] == 0.0f, "p %d: zeros step %d: %.9g", lags, k, (double)got[H + k]);
      if (lags >= 2)
        ck_assert_msg(fabsf(got[2 * H + k] - (float)(T + k)) <= 1e-4f * (T + k),
                      "p %d: line step %d: %.9g", lags, k, (double)got[2 * H + k]);
      ck_assert_msg(fabsf(got[3 * H + k] + 1234.25f) <= 1234.25f * 1e-5f,
                    "p %d: large constant step %d: %.9g", lags, k, (double)got[3 * H + k]);
    }
    free(got);
  }
}
END_TEST

START_TEST(test_the_rotations_hypot_agrees_with_libm_at_every_scale) {
  /* The plain formula in range, libm's hypot past 2^-450 and 2^450 (forecast.h). */
  const double scales[] = {0x1p-1060, 1e-300,  0x1p-451, 0x1p-449, 1e-30,   1.0,
                           1e30,      0x1p449, 0x1p451,  1e300,    0x1p1020};
  const double pairs[][2] = {{3, 4}, {1, 1e-9}, {-5, 12}, {0, -7}, {1e-3, 1}, {0.75, 0.6}};
  for (size_t i = 0; i < sizeof scales / sizeof *scales; i++)
    for (size_t j = 0; j < sizeof pairs / sizeof *pairs; j++) {
      const double a = pairs[j][0] * scales[i], b = pairs[j][1] * scales[i];
      const double got = plm__ar_hypot(a, b), want = hypot(a, b);
      ck_assert_msg(isfinite(got) && fabs(got - want) <= 4e-16 * want,
                    "hypot(%g, %g): %.17g, libm %.17g", a, b, got, want);
    }
  ck_assert(isnan(plm__ar_hypot(NAN, 1.0)));
}
END_TEST

START_TEST(test_a_series_with_nan_gives_nan_and_spares_the_others) {
  enum { T = 30, H = 3 };
  float *x = ar2_series(3, T, 9);
  x[T + 10] = NAN;
  float *got = run_forecast(x, 3, T, 2, H);
  double expected[H];
  for (int s = 0; s < 3; s += 2) {
    reference_forecast(x + s * T, T, 2, H, expected);
    for (int k = 0; k < H; k++)
      ck_assert(fabs(got[s * H + k] - expected[k]) <= 1e-4 * fabs(expected[k]) + 1e-6);
  }
  for (int k = 0; k < H; k++) ck_assert(isnan(got[H + k]));
  free(x);
  free(got);
}
END_TEST

START_TEST(test_output_shape_and_cost) {
  const int64_t dims[2] = {4, 20};
  static float storage[80];
  plm_tensor series;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, dims, &series));
  plm_ar_forecast_params params = {.lags = 3, .horizon = 5};
  plm_shape shape;
  PLM_CHECK_OK(plm_ar_forecast_output(&series, &params, &shape));
  ck_assert(shape.dtype == PLM_DTYPE_F32 && shape.ndim == 2 && shape.dims[0] == 4 &&
            shape.dims[1] == 5);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_ar_forecast_cost(&series, &params, &cost));
  /* n = 4, m = 17: 3 * 17 * 4 * 5 + 10 * 64 + 2 * 16 + 2 * 5 * 3 = 1722 per series. */
  ck_assert_msg(cost.bytes == 400.0 && cost.flops == 4.0 * 1722.0, "bytes %g flops %g", cost.bytes,
                cost.flops);
  params.lags = 10;
  PLM_CHECK_FAILS(plm_ar_forecast_cost(&series, &params, &cost), PLM_ERR_INVALID_ARG,
                  "T = 20 are too short for params->lags 10");
  PLM_CHECK_FAILS(plm_ar_forecast_output(&series, NULL, &shape), PLM_ERR_INVALID_ARG,
                  "params is NULL");
}
END_TEST

START_TEST(test_bad_arguments_are_refused_and_nothing_is_enqueued) {
  const int64_t dims[2] = {6, 12}, out_dims[2] = {6, 4}, short_dims[2] = {6, 4};
  const int64_t rows_wrong[2] = {5, 4}, cols_wrong[2] = {6, 5}, flat[1] = {72};
  plm_tensor series, out, as_u8, as_f64, wrong_rows, wrong_cols, one_dim, too_short;
  plm_pool *pool = plm_test_pool;
  plm_stream *s = plm_test_stream;
  PLM_CHECK_OK(plm_tensor_alloc(pool, s, PLM_DTYPE_F32, 2, dims, &series));
  PLM_CHECK_OK(plm_tensor_alloc(pool, s, PLM_DTYPE_F32, 2, out_dims, &out));
  PLM_CHECK_OK(plm_tensor_alloc(pool, s, PLM_DTYPE_U8, 2, dims, &as_u8));
  PLM_CHECK_OK(plm_tensor_alloc(pool, s, PLM_DTYPE_F64, 2, out_dims, &as_f64));
  PLM_CHECK_OK(plm_tensor_alloc(pool, s, PLM_DTYPE_F32, 2, rows_wrong, &wrong_rows));
  PLM_CHECK_OK(plm_tensor_alloc(pool, s, PLM_DTYPE_F32, 2, cols_wrong, &wrong_cols));
  PLM_CHECK_OK(plm_tensor_alloc(pool, s, PLM_DTYPE_F32, 1, flat, &one_dim));
  PLM_CHECK_OK(plm_tensor_alloc(pool, s, PLM_DTYPE_F32, 2, short_dims, &too_short));
  plm_ar_forecast_params params = {.lags = 2, .horizon = 4};
  /* Whatever the allocations enqueued has run (sanitized builds poison each block's slack
   * in stream order): the calls below must enqueue nothing. */
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));

  PLM_CHECK_FAILS(plm_ar_forecast(NULL, &series, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_ar_forecast: stream is NULL");
  PLM_CHECK_FAILS(plm_ar_forecast(s, NULL, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_ar_forecast: series is NULL");
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, NULL, &out), PLM_ERR_INVALID_ARG, "params is NULL");
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, &params, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  PLM_CHECK_FAILS(plm_ar_forecast(s, &as_u8, &params, &out), PLM_ERR_INVALID_ARG,
                  "series->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, &params, &as_f64), PLM_ERR_INVALID_ARG,
                  "out->dtype f64 is not f32");
  PLM_CHECK_FAILS(plm_ar_forecast(s, &one_dim, &params, &out), PLM_ERR_INVALID_ARG,
                  "series has 1 dims, not (S, T)");
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, &params, &wrong_rows), PLM_ERR_INVALID_ARG,
                  "out is not (S, horizon) = (6, 4)");
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, &params, &wrong_cols), PLM_ERR_INVALID_ARG,
                  "out is not (S, horizon) = (6, 4)");
  plm_ar_forecast_params bad = {.lags = 0, .horizon = 4};
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->lags 0 is not in 1..32");
  bad.lags = 33;
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->lags 33 is not in 1..32");
  bad.lags = 6; /* T = 12 < 2 * 6 + 1 */
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, &bad, &out), PLM_ERR_INVALID_ARG,
                  "T = 12 are too short for params->lags 6");
  PLM_CHECK_FAILS(plm_ar_forecast(s, &too_short, &params, &out), PLM_ERR_INVALID_ARG,
                  "T = 4 are too short for params->lags 2");
  bad = (plm_ar_forecast_params){.lags = 2, .horizon = 0};
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->horizon 0 is not in 1..1024");
  bad.horizon = 1025;
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->horizon 1025 is not in 1..1024");
  plm_tensor overlapping = out;
  overlapping.data = (char *)series.data + 8;
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, &params, &overlapping), PLM_ERR_INVALID_ARG,
                  "out overlaps series");
  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_tensor foreign = out;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_ar_forecast(s, &series, &params, &foreign), PLM_ERR_INVALID_ARG,
                  "out belongs to another context than stream");
  PLM_CHECK_OK(plm_context_destroy(other));

  bool finished = false;
  PLM_CHECK_OK(plm_stream_query(s, &finished));
  ck_assert(finished);
  plm_tensor *all[] = {&series,     &out,        &as_u8,   &as_f64,
                       &wrong_rows, &wrong_cols, &one_dim, &too_short};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(pool, s, all[i]));
}
END_TEST

/* The CUDA shared kernel runs plm__ar_forecast_one with its working doubles interleaved
 * across `owners` threads (a block's threads in shared memory): owner o at offset o with stride
 * owners. Emulated here one owner at a time over a poisoned buffer: each owner writes only its own
 * slots (o, o + owners, ...; a thread that wrote another's would race on the GPU) and gives the
 * bits of the contiguous layout that the CPU kernel uses, so the GPU's indexing is checked on every
 * build. */
static void check_interleaved_layout(int64_t owners, int lags) {
  enum { T = 90, H = 11 };
  float *x = ar2_series(owners, T, 21 + (uint64_t)lags);
  /* zeroed: a forecast left unwritten compares equal here, and differs from the reference
   * below, which names it */
  float *strided = calloc((size_t)(owners * H), sizeof *strided);
  float *contiguous = calloc((size_t)(owners * H), sizeof *contiguous);
  const int64_t work_doubles = plm__ar_work_doubles(lags), total = owners * work_doubles;
  double *interleaved = malloc((size_t)total * sizeof *interleaved);
  double *own = malloc((size_t)work_doubles * sizeof *own);
  ck_assert(x && strided && contiguous && interleaved && own);
  const double poison = -1.2345e300;
  for (int64_t o = 0; o < owners; o++) {
    for (int64_t i = 0; i < total; i++) interleaved[i] = poison;
    plm__ar_forecast_one(x + o * T, T, lags, H, strided + o * H, interleaved + o, owners);
    for (int64_t i = 0; i < total; i++)
      if (i % owners != o)
        ck_assert_msg(interleaved[i] == poison, "p %d: owner %lld of %lld wrote slot %lld", lags,
                      (long long)o, (long long)owners, (long long)i);
    plm__ar_forecast_one(x + o * T, T, lags, H, contiguous + o * H, own, 1);
  }
  ck_assert(memcmp(strided, contiguous, (size_t)(owners * H) * sizeof *strided) == 0);
  double expected[H];
  for (int64_t o = 0; o < owners; o++) {
    reference_forecast(x + o * T, T, lags, H, expected);
    for (int k = 0; k < H; k++)
      ck_assert(fabs(strided[o * H + k] - expected[k]) <= 1e-4 * fabs(expected[k]) + 1e-6);
  }
  free(x), free(strided), free(contiguous), free(interleaved), free(own);
}

START_TEST(test_the_cuda_kernels_interleaved_layouts_give_the_same_bits) {
  /* Any count of owners indexes alike: 37, and a block's threads, lags 1..8, in 48 KiB. */
  check_interleaved_layout(37, 9);
  check_interleaved_layout(37, 12);
  for (int lags = 1; lags <= 8; lags++) {
    const int threads = plm__ar_shared_threads(lags);
    ck_assert_msg(threads >= 32 && threads % 32 == 0 && threads <= PLM__AR_SHARED_MAX_THREADS,
                  "p %d: %d threads", lags, threads);
    ck_assert_int_le((int64_t)threads * plm__ar_work_doubles(lags) * 8, PLM__AR_SHARED_BYTES);
    check_interleaved_layout(threads, lags);
  }
  ck_assert_int_eq(plm__ar_shared_threads(1), 256);
  ck_assert_int_eq(plm__ar_shared_threads(4), 96);
  ck_assert_int_eq(plm__ar_shared_threads(8), 32);
  ck_assert_int_eq(plm__ar_shared_threads(9), 0);
  /* The lanes a series takes: a thread where it fits, else a group holding every row (but
   * 32 lanes for 33 rows), never fewer than asked. */
  for (int lags = 1; lags <= PLM_AR_MAX_LAGS; lags++)
    for (int wanted = 1; wanted <= 32; wanted *= 2) {
      const int lanes = plm__ar_series_lanes(lags, wanted);
      if (lanes == 1) {
        ck_assert_int_le(wanted, 1);
        ck_assert_int_le(lags, 8);
        continue;
      }
      ck_assert_msg(lanes == 8 || lanes == 16 || lanes == 32, "p %d: %d lanes", lags, lanes);
      ck_assert_int_ge(lanes, wanted);
      ck_assert_msg(lanes >= lags + 1 || lanes == 32, "p %d: %d lanes", lags, lanes);
      ck_assert_msg(lanes / 2 < (wanted > lags + 1 ? wanted : lags + 1) || lanes == 8,
                    "p %d, %d wanted: %d lanes is not the least", lags, wanted, lanes);
      /* whole warps of groups whose work fits 48 KiB */
      const int threads = plm__ar_group_kernel_threads(lags, lanes);
      ck_assert_msg(
          threads >= 32 && threads % 32 == 0 && threads <= PLM__AR_GROUP_KERNEL_MAX_THREADS,
          "p %d, %d lanes: %d threads", lags, lanes, threads);
      ck_assert_int_le((int64_t)(threads / lanes) * plm__ar_group_work_doubles(lags) * 8,
                       PLM__AR_SHARED_BYTES);
    }
  ck_assert_int_eq(plm__ar_series_lanes(5, 1), 1);
  ck_assert_int_eq(plm__ar_series_lanes(5, 8), 8);
  ck_assert_int_eq(plm__ar_series_lanes(8, 8), 16);
  ck_assert_int_eq(plm__ar_series_lanes(9, 1), 16);
  ck_assert_int_eq(plm__ar_series_lanes(16, 8), 32);
  ck_assert_int_eq(plm__ar_series_lanes(PLM_AR_MAX_LAGS, 8), 32);
  ck_assert_int_eq(plm__ar_group_kernel_threads(5, 8), 256);
  ck_assert_int_eq(plm__ar_group_kernel_threads(16, 32), 128);
  ck_assert_int_eq(plm__ar_group_kernel_threads(PLM_AR_MAX_LAGS, 32), 32);
}
END_TEST

/* ---- with the caller's scratch (ops/op_desc.h), and a pipeline step ------------------- */

/* ar_forecast's scratch for a series and parameters (plm__op_scratch_bytes), and the op
 * enqueued with the caller's (plm__op_call_with_scratch). */
static plm_status forecast_scratch_bytes(const plm_context *ctx, const plm_tensor *series,
                                         const plm_ar_forecast_params *params, size_t *bytes) {
  const plm__op_call call = {.in = {series}, .params = params};
  return plm__op_scratch_bytes(&plm__op_ar_forecast, ctx, &call, bytes);
}

static plm_status forecast_with_scratch(plm_stream *stream, const plm_tensor *series,
                                        const plm_ar_forecast_params *params, plm_tensor *out,
                                        void *scratch, size_t scratch_bytes) {
  const plm__op_call call = {.in = {series}, .out = {out}, .params = params};
  return plm__op_call_with_scratch(&plm__op_ar_forecast, stream, &call, scratch, scratch_bytes);
}

/* Device series (S, T) from x and an (S, h) output. */
static void make_operands(const float *x, int64_t count, int64_t length, int horizon,
                          plm_tensor *series, plm_tensor *out) {
  const int64_t dims[2] = {count, length}, out_dims[2] = {count, horizon};
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, series));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, out_dims, out));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, series->data, x, plm_tensor_bytes(series),
                                 PLM_COPY_HOST_TO_DEVICE));
}

/* ar_forecast needs no scratch on either backend (cuda keeps a series' numbers in shared
 * memory, host on each CPU task's stack); the query still checks its arguments. */
START_TEST(test_scratch_bytes_are_none_and_the_query_checks_its_arguments) {
  const int64_t dims[2] = {37, 50};
  static float storage[37 * 50];
  plm_tensor series;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, dims, &series));
  plm_ar_forecast_params params = {.lags = 3, .horizon = 7};
  size_t bytes = 1;
  PLM_CHECK_OK(forecast_scratch_bytes(plm_test_ctx, &series, &params, &bytes));
  ck_assert_uint_eq(bytes, 0);
  params.lags = PLM_AR_MAX_LAGS;
  series.dims[1] = 2 * PLM_AR_MAX_LAGS + 1;
  PLM_CHECK_OK(forecast_scratch_bytes(plm_test_ctx, &series, &params, &bytes));
  ck_assert_uint_eq(bytes, 0);
  /* A description is enough: no data is looked at. */
  series.data = NULL;
  PLM_CHECK_OK(forecast_scratch_bytes(plm_test_ctx, &series, &params, &bytes));
  ck_assert_uint_eq(bytes, 0);

  PLM_CHECK_FAILS(forecast_scratch_bytes(NULL, &series, &params, &bytes), PLM_ERR_INVALID_ARG,
                  "ctx is NULL");
  PLM_CHECK_FAILS(forecast_scratch_bytes(plm_test_ctx, &series, &params, NULL), PLM_ERR_INVALID_ARG,
                  "bytes is NULL");
  PLM_CHECK_FAILS(forecast_scratch_bytes(plm_test_ctx, NULL, &params, &bytes), PLM_ERR_INVALID_ARG,
                  "series is NULL");
  PLM_CHECK_FAILS(forecast_scratch_bytes(plm_test_ctx, &series, NULL, &bytes), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  params.lags = PLM_AR_MAX_LAGS + 1;
  PLM_CHECK_FAILS(forecast_scratch_bytes(plm_test_ctx, &series, &params, &bytes),
                  PLM_ERR_INVALID_ARG, "params->lags 33 is not in 1..32");
  params.lags = 3;
  series.dtype = PLM_DTYPE_U8;
  PLM_CHECK_FAILS(forecast_scratch_bytes(plm_test_ctx, &series, &params, &bytes),
                  PLM_ERR_INVALID_ARG, "series->dtype u8 is not f32");
  series.dtype = PLM_DTYPE_F32;
  series.dims[1] = 6; /* T < 2p + 1 */
  PLM_CHECK_FAILS(forecast_scratch_bytes(plm_test_ctx, &series, &params, &bytes),
                  PLM_ERR_INVALID_ARG, "T = 6 are too short for params->lags 3");
}
END_TEST

/* ar_forecast with the scratch it asks for gives plm_ar_forecast's bits. */
START_TEST(test_the_enqueue_entry_with_its_scratch_matches_the_op) {
  enum { S = 45, T = 70, P = 4, H = 9 };
  float *x = ar2_series(S, T, 31);
  const plm_ar_forecast_params params = {.lags = P, .horizon = H};
  plm_tensor series, out, want;
  make_operands(x, S, T, H, &series, &out);
  const int64_t out_dims[2] = {S, H};
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, out_dims, &want));
  size_t bytes = 0;
  PLM_CHECK_OK(forecast_scratch_bytes(plm_test_ctx, &series, &params, &bytes));
  void *scratch = NULL;
  if (bytes) PLM_CHECK_OK(plm_pool_alloc(plm_test_pool, bytes, plm_test_stream, &scratch));
  PLM_CHECK_OK(forecast_with_scratch(plm_test_stream, &series, &params, &out, scratch, bytes));
  PLM_CHECK_OK(plm_ar_forecast(plm_test_stream, &series, &params, &want));
  float *got = plm_test_download(&out), *expected = plm_test_download(&want);
  ck_assert(memcmp(got, expected, sizeof(float) * S * H) == 0);
  /* More scratch than needed is fine too. */
  if (scratch) PLM_CHECK_OK(plm_pool_free(plm_test_pool, scratch, plm_test_stream));
  scratch = NULL;
  PLM_CHECK_OK(plm_pool_alloc(plm_test_pool, bytes + 4096, plm_test_stream, &scratch));
  PLM_CHECK_OK(
      forecast_with_scratch(plm_test_stream, &series, &params, &out, scratch, bytes + 4096));
  free(got);
  got = plm_test_download(&out);
  ck_assert(memcmp(got, expected, sizeof(float) * S * H) == 0);
  PLM_CHECK_OK(plm_pool_free(plm_test_pool, scratch, plm_test_stream));
  free(got), free(expected), free(x);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &series));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &want));
}
END_TEST

/* The enqueue entry checks what the op checks (raw messages: no function name); a refused
 * call enqueues nothing. No scratch is needed (lags 9: 16 lanes a series on cuda), so NULL,
 * 0 is accepted; the checks of a scratch that an op needs are tested with ops that need
 * one (test_lstm.c, test_dendritic.c, test_pipeline.c). */
START_TEST(test_the_enqueue_entry_refuses_bad_arguments) {
  enum { S = 6, T = 40, P = 9, H = 4 };
  float *x = ar2_series(S, T, 41);
  const plm_ar_forecast_params params = {.lags = P, .horizon = H};
  plm_stream *s = plm_test_stream;
  plm_tensor series, out;
  make_operands(x, S, T, H, &series, &out);
  /* Whatever the allocations enqueued has run (sanitized builds poison each block's slack
   * in stream order): the refused calls below must enqueue nothing. */
  PLM_CHECK_OK(plm_stream_synchronize(s));

  PLM_CHECK_FAILS(forecast_with_scratch(NULL, &series, &params, &out, NULL, 0), PLM_ERR_INVALID_ARG,
                  "stream is NULL");
  PLM_CHECK_FAILS(forecast_with_scratch(s, NULL, &params, &out, NULL, 0), PLM_ERR_INVALID_ARG,
                  "series is NULL");
  PLM_CHECK_FAILS(forecast_with_scratch(s, &series, NULL, &out, NULL, 0), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  PLM_CHECK_FAILS(forecast_with_scratch(s, &series, &params, NULL, NULL, 0), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  const plm_ar_forecast_params long_lags = {.lags = 20, .horizon = H};
  PLM_CHECK_FAILS(forecast_with_scratch(s, &series, &long_lags, &out, NULL, 0), PLM_ERR_INVALID_ARG,
                  "T = 40 are too short for params->lags 20");
  plm_tensor overlapping = out;
  overlapping.data = (char *)series.data + 8;
  PLM_CHECK_FAILS(forecast_with_scratch(s, &series, &params, &overlapping, NULL, 0),
                  PLM_ERR_INVALID_ARG, "out overlaps series");
  bool finished = false;
  PLM_CHECK_OK(plm_stream_query(s, &finished));
  ck_assert(finished);

  PLM_CHECK_OK(forecast_with_scratch(s, &series, &params, &out, NULL, 0));
  float *got = plm_test_download(&out);
  double expected[H];
  for (int64_t r = 0; r < S; r++) {
    reference_forecast(x + r * T, T, P, H, expected);
    for (int k = 0; k < H; k++)
      ck_assert(fabs(got[r * H + k] - expected[k]) <= 1e-4 * fabs(expected[k]) + 1e-6);
  }
  free(got);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, s, &series));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, s, &out));
  free(x);
}
END_TEST

/* "ar_forecast lags=P horizon=H" as a pipeline: its step has no scratch on either backend
 * (plm_pipeline_describe shows none); the results are plm_ar_forecast's, with a workspace
 * and allocating per run. */
START_TEST(test_a_pipeline_step_needs_no_scratch) {
  enum { S = 29, T = 64, P = 9, H = 12 };
  const int64_t dims[2] = {S, T};
  float *x = ar2_series(S, T, 51);
  const plm_ar_forecast_params params = {.lags = P, .horizon = H};
  plm_tensor series, want;
  make_operands(x, S, T, H, &series, &want);
  PLM_CHECK_OK(plm_ar_forecast(plm_test_stream, &series, &params, &want));
  float *expected = plm_test_download(&want);
  for (int per_run = 0; per_run < 2; per_run++) {
    plm_pipeline *pl = NULL;
    PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, "ar_forecast lags=9 horizon=12", PLM_DTYPE_F32, 2,
                                    dims, &pl));
    const plm_plan_config config = {.flags = per_run ? PLM_PLAN_ALLOCATE_PER_RUN : 0};
    PLM_CHECK_OK(plm_pipeline_compile(pl, &config));
    plm_plan_info info;
    PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
    ck_assert_uint_eq(info.scratch_bytes, 0);
    char text[4096];
    PLM_CHECK_OK(plm_pipeline_describe(pl, text, sizeof text, NULL));
    ck_assert_msg(strstr(text, "\n    scratch ") == NULL, "scratch in\n%s", text);
    plm_tensor out;
    const int64_t out_dims[2] = {S, H};
    PLM_CHECK_OK(
        plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, out_dims, &out));
    PLM_CHECK_OK(plm_stream_memset(plm_test_stream, out.data, 0xff, plm_tensor_bytes(&out)));
    PLM_CHECK_OK(plm_pipeline_run(pl, &series, &out, plm_test_stream));
    float *got = plm_test_download(&out);
    ck_assert_msg(memcmp(got, expected, sizeof(float) * S * H) == 0, "per_run %d", per_run);
    free(got);
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  free(expected), free(x);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &series));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &want));
}
END_TEST

static Suite *forecast_suite(void) {
  Suite *suite = suite_create("forecast");
  TCase *tcase = tcase_create("forecast");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_matches_least_squares_for_one_and_for_a_thousand_series);
  tcase_add_test(tcase, test_most_lags_and_longest_horizon);
  tcase_add_test(tcase, test_the_backend_gives_the_cpu_kernel_s_bits);
  tcase_add_test(tcase, test_series_just_long_enough);
  tcase_add_test(tcase, test_singular_designs_give_the_minimum_norm_solution_s_forecasts);
  tcase_add_test(tcase, test_the_rotations_hypot_agrees_with_libm_at_every_scale);
  tcase_add_test(tcase, test_a_series_with_nan_gives_nan_and_spares_the_others);
  tcase_add_test(tcase, test_the_cuda_kernels_interleaved_layouts_give_the_same_bits);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_arguments_are_refused_and_nothing_is_enqueued);
  tcase_add_test(tcase, test_scratch_bytes_are_none_and_the_query_checks_its_arguments);
  tcase_add_test(tcase, test_the_enqueue_entry_with_its_scratch_matches_the_op);
  tcase_add_test(tcase, test_the_enqueue_entry_refuses_bad_arguments);
  tcase_add_test(tcase, test_a_pipeline_step_needs_no_scratch);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(forecast_suite);
}

/* ops/forecast.c: ar_forecast (plume/forecast.h). */
#include <stdint.h>

#include "kernels/common/forecast.h"
#include "ops/op_internal.h"
#include "ops/op_scratch.h"
#include "streams/error.h"

static plm_status check_params(const plm_ar_forecast_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  if (params->lags < 1 || params->lags > PLM_AR_MAX_LAGS)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->lags %d is not in 1..%d", params->lags,
                         PLM_AR_MAX_LAGS);
  if (params->horizon < 1 || params->horizon > PLM_AR_MAX_HORIZON)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->horizon %d is not in 1..%d", params->horizon,
                         PLM_AR_MAX_HORIZON);
  return PLM_OK;
}

/* series as a description: f32 (S, T) with T >= 2p + 1; params valid. */
static plm_status check_series(const plm_tensor *series, const plm_ar_forecast_params *params) {
  plm_status status = check_params(params);
  if (status != PLM_OK) return status;
  if (series->dtype != PLM_DTYPE_F32)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "series->dtype %s is not f32",
                         plm_dtype_name(series->dtype));
  if (series->ndim != 2)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "series has %d dims, not (S, T)", series->ndim);
  if (series->dims[1] < 2 * (int64_t)params->lags + 1)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "series of length T = %lld are too short for params->lags %d "
                         "(T >= 2 * lags + 1 = %d gives at least lags + 1 equations)",
                         (long long)series->dims[1], params->lags, 2 * params->lags + 1);
  return PLM_OK;
}

plm_status plm_ar_forecast_output(const plm_tensor *series, const plm_ar_forecast_params *params,
                                  plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(series);
  PLM__REQUIRE_NOT_NULL(out);
  plm_status status = plm__op_check_shape(series, "series");
  if (status == PLM_OK) status = check_series(series, params);
  if (status != PLM_OK) return plm__propagate(status);
  *out = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {series->dims[0], params->horizon}};
  return PLM_OK;
}

plm_status plm_ar_forecast_cost(const plm_tensor *series, const plm_ar_forecast_params *params,
                                plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(series);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = plm__op_check_shape(series, "series");
  if (status == PLM_OK) status = check_series(series, params);
  if (status != PLM_OK) return plm__propagate(status);
  double s = (double)series->dims[0], t = (double)series->dims[1], p = params->lags,
         h = params->horizon, n = p + 1, m = t - p;
  double per_series = 3.0 * m * n * (n + 1) + 10.0 * n * n * n + 2.0 * n * n + 2.0 * h * p;
  *cost = (plm_op_cost){.bytes = 4.0 * s * t + 4.0 * s * h, .flops = s * per_series};
  return PLM_OK;
}

static void forecast_task(const void *args) {
  plm__ar_forecast_cpu(args);
}

/* The CUDA kernel's scratch for a checked series description: S * plm__ar_work_doubles(p)
 * doubles, one series' numbers interleaved with the others' (kernels/cuda/forecast.cu);
 * the CPU kernel keeps each series' numbers on its task's stack and needs none. */
static plm_status scratch_bytes_of(const plm_context *ctx, const plm_tensor *series,
                                   const plm_ar_forecast_params *params, size_t *bytes) {
  *bytes = 0;
#ifdef PLM_HAVE_CUDA
  if (ctx->backend->kind == PLM_BACKEND_CUDA) {
    const size_t per_series = (size_t)plm__ar_work_doubles(params->lags) * sizeof(double);
    if ((uint64_t)series->dims[0] > SIZE_MAX / per_series)
      return plm__fail_raw(PLM_ERR_UNSUPPORTED,
                           "the working memory of %lld series of lags %d does not fit in size_t",
                           (long long)series->dims[0], params->lags);
    *bytes = (size_t)series->dims[0] * per_series;
  }
#endif
  (void)ctx;
  (void)series;
  (void)params;
  return PLM_OK;
}

plm_status plm__ar_forecast_scratch_bytes(const plm_context *ctx, const plm_tensor *series,
                                          const plm_ar_forecast_params *params, size_t *bytes) {
  if (!ctx) return plm__fail_raw(PLM_ERR_INVALID_ARG, "ctx is NULL");
  if (!bytes) return plm__fail_raw(PLM_ERR_INVALID_ARG, "bytes is NULL");
  if (!series) return plm__fail_raw(PLM_ERR_INVALID_ARG, "series is NULL");
  plm_status status = plm__op_check_shape(series, "series");
  if (status == PLM_OK) status = check_series(series, params);
  if (status != PLM_OK) return status;
  return scratch_bytes_of(ctx, series, params, bytes);
}

/* What plm_ar_forecast checks; on success *args is the launch's (scratch unset). */
static plm_status check_call(plm_stream *stream, const plm_tensor *series,
                             const plm_ar_forecast_params *params, plm_tensor *out,
                             plm__ar_forecast_args *args) {
  if (!stream) return plm__fail_raw(PLM_ERR_INVALID_ARG, "stream is NULL");
  plm_status status = plm__op_check_tensor(stream, series, "series");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, out, "out");
  if (status == PLM_OK) status = check_series(series, params);
  if (status == PLM_OK && out->dtype != PLM_DTYPE_F32)
    status =
        plm__fail_raw(PLM_ERR_INVALID_ARG, "out->dtype %s is not f32", plm_dtype_name(out->dtype));
  if (status == PLM_OK &&
      (out->ndim != 2 || out->dims[0] != series->dims[0] || out->dims[1] != params->horizon))
    status = plm__fail_raw(
        PLM_ERR_INVALID_ARG, "out is not (S, horizon) = (%lld, %d): it has %d dims, the first %lld",
        (long long)series->dims[0], params->horizon, out->ndim, (long long)out->dims[0]);
  if (status == PLM_OK) status = plm__op_check_disjoint(series, "series", out, "out");
  if (status != PLM_OK) return status;
  *args = (plm__ar_forecast_args){.series = series->data,
                                  .out = out->data,
                                  .count = series->dims[0],
                                  .length = series->dims[1],
                                  .lags = params->lags,
                                  .horizon = params->horizon};
  return PLM_OK;
}

/* Enqueue the kernel of checked arguments whose scratch is set (on cuda). */
static plm_status launch(plm_stream *stream, const plm__ar_forecast_args *args) {
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    plm_status status;
    PLM__OP_ON_DEVICE(stream, "ar_forecast", status, plm__ar_forecast_cuda(stream->handle, args));
    return status;
  }
#endif
  return plm__op_launch_cpu(stream, forecast_task, args, sizeof *args);
}

plm_status plm__ar_forecast_enqueue(plm_stream *stream, const plm_tensor *series,
                                    const plm_ar_forecast_params *params, plm_tensor *out,
                                    void *scratch, size_t scratch_bytes) {
  plm__ar_forecast_args args;
  size_t needed = 0;
  plm_status status = check_call(stream, series, params, out, &args);
  if (status == PLM_OK) status = scratch_bytes_of(stream->ctx, series, params, &needed);
  if (status != PLM_OK) return status;
  const plm_tensor *const operands[] = {series, out};
  static const char *const names[] = {"series", "out"};
  status = plm__op_check_scratch("ar_forecast", scratch, scratch_bytes, needed, operands, names, 2);
  if (status != PLM_OK) return status;
  args.scratch = scratch;
  return launch(stream, &args);
}

plm_status plm_ar_forecast(plm_stream *stream, const plm_tensor *series,
                           const plm_ar_forecast_params *params, plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm__ar_forecast_args args;
  size_t bytes = 0;
  plm_pool *pool = NULL;
  void *scratch = NULL;
  plm_status status = check_call(stream, series, params, out, &args);
  if (status == PLM_OK) status = scratch_bytes_of(stream->ctx, series, params, &bytes);
  if (status == PLM_OK) status = plm__op_scratch_take(stream, bytes, &pool, &scratch);
  if (status != PLM_OK) return plm__propagate(status);
  args.scratch = scratch;
  status = launch(stream, &args);
  return plm__propagate(plm__op_scratch_give(stream, pool, scratch, status));
}

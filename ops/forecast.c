/* ops/forecast.c: ar_forecast (plume/forecast.h) and its descriptor. */
#include <stddef.h>
#include <stdint.h>

#include "kernels/common/forecast.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
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

/* series as a description: (S, T) with T >= 2p + 1; params valid. */
static plm_status check_series(const plm_tensor *series, const plm_ar_forecast_params *params) {
  plm_status status = check_params(params);
  if (status != PLM_OK) return status;
  if (series->ndim != 2)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "series has %d dims, not (S, T)", series->ndim);
  if (series->dims[1] < 2 * (int64_t)params->lags + 1)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "series of length T = %lld are too short for params->lags %d "
                         "(T >= 2 * lags + 1 = %d gives at least lags + 1 equations)",
                         (long long)series->dims[1], params->lags, 2 * params->lags + 1);
  return PLM_OK;
}

static plm_status check(const plm__op_call *call) {
  const plm_tensor *series = call->in[0], *out = call->out[0];
  const plm_ar_forecast_params *params = call->params;
  plm_status status = check_series(series, params);
  if (status != PLM_OK || !out) return status;
  if (out->ndim != 2 || out->dims[0] != series->dims[0] || out->dims[1] != params->horizon)
    return plm__fail_raw(
        PLM_ERR_INVALID_ARG, "out is not (S, horizon) = (%lld, %d): it has %d dims, the first %lld",
        (long long)series->dims[0], params->horizon, out->ndim, (long long)out->dims[0]);
  return PLM_OK;
}

static plm_status shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  const plm_ar_forecast_params *params = call->params;
  out[0] = (plm_shape){
      .dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {call->in[0]->dims[0], params->horizon}};
  return PLM_OK;
}

static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *series = call->in[0];
  const plm_ar_forecast_params *params = call->params;
  double s = (double)series->dims[0], t = (double)series->dims[1], p = params->lags,
         h = params->horizon, n = p + 1, m = t - p;
  double per_series = 3.0 * m * n * (n + 1) + 10.0 * n * n * n + 2.0 * n * n + 2.0 * h * p;
  *cost = (plm_op_cost){.bytes = 4.0 * s * t + 4.0 * s * h, .flops = s * per_series};
}

static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args) {
  (void)ctx, (void)scratch; /* no kernel needs scratch (kernels/common/forecast.h) */
  const plm_tensor *series = call->in[0];
  const plm_ar_forecast_params *params = call->params;
  *(plm__ar_forecast_args *)args =
      (plm__ar_forecast_args){.series = series->data,
                              .out = call->out[0] ? call->out[0]->data : NULL,
                              .count = series->dims[0],
                              .length = series->dims[1],
                              .lags = params->lags,
                              .horizon = params->horizon,
                              .lanes = plm__ar_series_lanes(
                                  params->lags, (int)plm__op_tuned(&plm__op_ar_forecast, call, 0))};
}

PLM__OP_KERNEL_ENTRIES(ar_forecast)

static const plm__op_param schema[] = {
    {.name = "lags",
     .type = PLM__PARAM_INT,
     .offset = offsetof(plm_ar_forecast_params, lags),
     .min = 1,
     .max = PLM_AR_MAX_LAGS,
     .flags = PLM__PARAM_REQUIRED,
     .help = "p, the model's order: each value from the p before it"},
    {.name = "horizon",
     .type = PLM__PARAM_INT,
     .offset = offsetof(plm_ar_forecast_params, horizon),
     .min = 1,
     .max = PLM_AR_MAX_HORIZON,
     .flags = PLM__PARAM_REQUIRED,
     .help = "h, the values forecast after each series' last"},
};

/* `size` series of the seeds' 1000 points, AR(5), 10 steps ahead. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  sample->in[0] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {request->size, 1000}};
  sample->outputs = 1u;
  sample->scale = "series";
  sample->params.ar_forecast = (plm_ar_forecast_params){.lags = 5, .horizon = 10};
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_ar_forecast = {
    .name = "ar_forecast",
    .summary = "out = h-step AR(p) forecasts (S, h) of the rows of (S, T), as statsmodels' AutoReg",
    .details =
        "f32 (S, horizon): each series fitted by least squares as AR(lags) with an "
        "intercept and forecast horizon steps recursively, as statsmodels' "
        "`AutoReg(x, lags=lags, trend=\"c\")` (`include/plume/forecast.h`).",
    .kind = PLM__OP_ar_forecast,
    .input_count = 1,
    .inputs = {{.name = "series", .dtypes = PLM__DTYPE_MASK(F32), .shape = "(S, T)"}},
    .output_count = 1,
    .outputs =
        {{.name = "out", .dtypes = PLM__DTYPE_MASK(F32), .shape = "(S, h)", .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm_ar_forecast_params),
    .param_count = sizeof schema / sizeof schema[0],
    .params = schema,
    .check = check,
    .shapes = shapes,
    .cost = cost,
    .args_size = sizeof(plm__ar_forecast_args),
    .pack = pack,
    .cpu = ar_forecast_cpu_entry,
    .cuda = PLM__CUDA_ENTRY(ar_forecast_cuda_entry),
    .tunable_count = 1,
    .tunables =
        &(const plm__op_tunable){
            .name = "lanes_per_series",
            .backend = PLM_BACKEND_CUDA,
            .fallback = 8,
            .candidate_count = 4,
            .candidates = {1, 8, 16, 32},
            .help = "the lanes a series takes: 1, a thread, rotating each equation through the "
                    "rows in turn (lags up to 8; past them 8); 8, 16 or 32, a group whose lanes "
                    "rotate it through its rows a step apart (at least lags + 1 lanes, but 32 "
                    "for 32 lags)"},
    .sample = sample,
};

/* kernels/cpu/forecast.c: ar_forecast on the CPU, the series split across cores, each
 * fitted with its working numbers on the stack (kernels/common/forecast.h). */
#include "kernels/common/forecast.h"
#include "streams/parallel.h"

enum { MAX_WORK = 2 * (PLM_AR_MAX_LAGS + 1) * (PLM_AR_MAX_LAGS + 1) + 3 * PLM_AR_MAX_LAGS + 2 };

static void forecast_range(void *context, int64_t begin, int64_t end) {
  const plm__ar_forecast_args *args = context;
  double work[MAX_WORK];
  for (int64_t s = begin; s < end; s++)
    plm__ar_forecast_one(args->series + s * args->length, args->length, args->lags, args->horizon,
                         args->out + s * args->horizon, work, 1);
}

void plm__ar_forecast_cpu(const plm__ar_forecast_args *args) {
  /* A series costs about (T - p)(p + 1)^2 * 3 flops: chunks of ~1 Mflop at least. */
  int64_t per_series = (args->length - args->lags) * (args->lags + 1) * (args->lags + 1) * 3;
  int64_t grain = 1 + (1 << 20) / (per_series > 0 ? per_series : 1);
  plm__parallel_for(args->count, grain, forecast_range, (void *)args);
}

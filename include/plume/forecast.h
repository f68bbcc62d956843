/* plume/forecast.h: autoregressive forecasts of many series at once (conventions in
 * plume/ops.h). */
#ifndef PLUME_FORECAST_H
#define PLUME_FORECAST_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ar_forecast --------------------------------------------------------------------
 * For each series x (a row of series, f32 (S, T)): fit AR(p) with an intercept by
 * ordinary least squares, as statsmodels'
 *     AutoReg(x, lags=p, trend="c").fit()
 * does (regress x[t] on [1, x[t-1], ..., x[t-p]] for t = p .. T-1: T - p equations),
 * then forecast h steps recursively, each forecast feeding the next, as that fit's
 * .predict(start=T, end=T+h-1) (dynamic) does; out (S, h) f32 receives them.
 *
 * Rules: lags p in 1..PLM_AR_MAX_LAGS, horizon h in 1..PLM_AR_MAX_HORIZON, and
 * T >= 2p + 1, so that there are at least as many equations (T - p) as unknowns (p + 1).
 *
 * The solve is in double: the design matrix is reduced to a triangular R by Givens
 * rotations, one row at a time (a QR factorisation, as stable as Householder's, never
 * forming the normal equations, and needing (p + 1)^2 numbers, not the whole design),
 * and R's singular values come from a one-sided Jacobi SVD. The coefficients are the
 * minimum-norm least-squares solution, pinv(X) y, as statsmodels' OLS (method "pinv")
 * computes it, with singular values at or below max(T - p, p + 1) * 2^-52 * the largest
 * treated as zero (numpy.linalg.matrix_rank's tolerance; numpy.linalg.pinv's default,
 * 1e-15 * the largest, is a little tighter, and the two differ only for designs that are
 * collinear to within rounding). So a singular design is not an error: a constant series
 * c is fitted exactly and forecast as c, h times, as statsmodels does; a series of all
 * zeros forecasts zeros. Non-finite values in a series give NaN forecasts for it.
 *
 * host: the series are split across cores. cuda: its working numbers ((p + 1)^2 * 2 + 3p +
 * 2 doubles a series) in the block's shared memory, no scratch: one thread per series for
 * p <= 8, one warp per series above (the lanes rotate rows of R at once). */
enum { PLM_AR_MAX_LAGS = 32, PLM_AR_MAX_HORIZON = 1024 };

typedef struct plm_ar_forecast_params {
  int lags;    /* p: 1..PLM_AR_MAX_LAGS */
  int horizon; /* h: 1..PLM_AR_MAX_HORIZON */
} plm_ar_forecast_params;

/* plm_ar_forecast_params_default: The defaults of the operation's parameter schema (ops/op_desc.h):
 * lags 0 and horizon 0: both must be set (1..PLM_AR_MAX_LAGS, 1..PLM_AR_MAX_HORIZON). */
/* plm_ar_forecast_cost: With n = p + 1 and m = T - p equations per series: bytes = 4 S T + 4 S h
 * (each series read once, the forecasts written once);
 * flops = S * (3 m n (n + 1)  (rotating each equation into R: 6 per pair of elements)
 *              + 10 n^3       (the Jacobi SVD of R: a few sweeps of n^2 / 2 column pairs)
 *              + 2 n^2        (the solution)
 *              + 2 h p)       (the forecasts). */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_FORECAST_H */

/* plume/op_placement.h: host or cuda for one op call, by the cost model that places a
 * pipeline (plume/pipeline.h's placement section: plm_placement, plm_pipeline_predict).
 *
 * An op call is predicted as a pipeline of one step whose inputs go in and whose outputs
 * come out: the op's cost (bytes, flops) at the inputs' shapes and the parameters' values,
 * against each device's calibrated peaks plus its launch floor, or, where a tuning table of
 * the device that this process has loaded holds points of the op (`plume tune`), the time
 * interpolated between them (plm_pipeline_predict's rule); plus the copies of every input
 * in and every output out (bytes / the calibration's h2d and d2h bandwidths, plus
 * copy_latency_us per tensor: memcpys on host, the link on cuda; never overlapped, one
 * call being all there is). The faster backend is the choice. `plume op --backend auto`
 * runs each op where plm_op_place puts it (which loads both devices' tables).
 *
 * The op is named as in the table (plume/op_info.h: plm_op_info's name), its inputs given
 * by shape in slot order, and its parameters as the text form of a pipeline writes them:
 * "window=9 bins=64 range=0,2000" (keys and values as plm_op_param_info describes them;
 * omitted keys take their defaults; NULL or "" for all defaults). The outputs counted as
 * coming back are the op's non-optional outputs, or its main output when every output is
 * optional (sobel's magnitude).
 *
 * Thread-safe. plm_op_predict never blocks; plm_op_place may calibrate (see there).
 */
#ifndef PLUME_OP_PLACEMENT_H
#define PLUME_OP_PLACEMENT_H

#include "plume/export.h"
#include "plume/ops.h"
#include "plume/pipeline.h"
#include "plume/profile.h"
#include "plume/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Predict one call of op `op` on inputs of shapes inputs[0 .. input_count-1] (an optional
 * input not given: ndim 0, or beyond input_count) with parameters `params`, on host and on
 * cuda from their calibrations (either may be NULL: that backend is not available; not
 * both), and choose the faster into *out (its figures are of the call: host_ms, cuda_ms
 * per call; corrected_steps counts the launches a tuning table's points gave). Errors:
 * PLM_ERR_INVALID_ARG (NULL op or out, an unknown op, input_count out of 0..the op's
 * inputs, NULL inputs with input_count > 0, a required input missing, a shape or parameter
 * the op refuses, an unknown, repeated or malformed key, both calibrations NULL, a
 * calibration without a copy bandwidth or FMA rate, a cuda one without h2d and d2h
 * bandwidths); each message names what was wrong. */
PLM_API plm_status plm_op_predict(const char *op, const plm_shape *inputs, int input_count,
                                  const char *params, const plm_profile_calibration *host,
                                  const plm_profile_calibration *cuda, plm_placement *out);

/* PLM_BACKEND_AUTO for one op call, by the rules of plm_pipeline_place: the call is
 * checked as plm_op_predict checks it; then PLUME_BACKEND=host|cuda, when set, is the
 * choice; else, without a GPU, host, with nothing measured (both predictions 0); else host
 * and cuda (device 0) are calibrated (plume/profile.h: cached per device) and
 * plm_op_predict chooses. out may be NULL. Blocking: up to about a second per device not
 * yet calibrated. Errors: plm_op_predict's, PLM_ERR_INVALID_ARG (NULL choice, a bad
 * PLUME_BACKEND), a calibration's failure. */
PLM_API plm_status plm_op_place(const char *op, const plm_shape *inputs, int input_count,
                                const char *params, plm_backend *choice, plm_placement *out);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_OP_PLACEMENT_H */

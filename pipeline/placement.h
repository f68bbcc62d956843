/* pipeline/placement.h: the pieces of the placement model (pipeline/placement.c) that a
 * compiled plan's prediction (plm_pipeline_predict, plm_pipeline_place) and one op call's
 * (plm_op_predict, plm_op_place: pipeline/call_placement.c) share, so that both predict with
 * the same arithmetic and choose by the same rules. Internal; messages are raw. */
#ifndef PLUME_PIPELINE_PLACEMENT_H
#define PLUME_PIPELINE_PLACEMENT_H

#include <stdbool.h>

#include "ops/op_desc.h"
#include "plume/pipeline.h"
#include "plume/profile.h"

/* Either calibration may be NULL, not both; each given one has a copy bandwidth and an FMA
 * rate, and cuda's also its h2d and d2h bandwidths. */
plm_status plm__placement_check(const plm_profile_calibration *host,
                                const plm_profile_calibration *cuda);

/* ms of one launch of op moving cost's bytes and doing its flops on a device of
 * calibration c: the model's time, or, where a tuning table of the device has points of op,
 * the time they give for it (plm__tuning_measured_ms; *corrected counts those launches). */
double plm__placement_launch_ms(const plm__op_desc *op, const plm_op_cost *cost,
                                const plm_profile_calibration *c, int *corrected);

/* p's host_ms and cuda_ms hold the launches' time on the devices given (host, cuda: either
 * NULL): add each device's copies of p's input_bytes in and output_bytes out, `copies`
 * transfers in all (host_copy_ms: memcpy, where the host calibration has its bandwidths;
 * cuda_copy_ms: over the link), and choose the faster. With overlap (several frames in
 * flight), cuda's copies run beside the steps: cuda_ms is the larger of the two. */
void plm__placement_choose(plm_placement *p, const plm_profile_calibration *host,
                           const plm_profile_calibration *cuda, int copies, bool overlap);

/* The rules of PLM_BACKEND_AUTO before any model: PLUME_BACKEND=host|cuda is the choice;
 * else, without a GPU, host. *model is true when neither settles it (a GPU is present and
 * the model chooses); *choice is then host. Errors: PLM_ERR_INVALID_ARG (a bad
 * PLUME_BACKEND). */
plm_status plm__placement_rule(plm_backend *choice, bool *model);

/* The calibrations of host and cuda (device 0), each made on a context of its own
 * (plume/profile.h: cached per device), with their tuning tables loaded. Blocking. */
plm_status plm__placement_calibrate(plm_profile_calibration *host, plm_profile_calibration *cuda);

/* One op call's prediction (pipeline/call_placement.c): call's inputs and its outputs are
 * descriptions or tensors (their data is not read); every input given goes up on cuda and
 * every output given comes back. plm__op_call_place applies plm__placement_rule, then
 * calibrates and predicts when the model chooses (*out's figures are then 0 otherwise). The
 * call is checked (plm__op_cost) in both. Raw messages. */
plm_status plm__op_call_predict(const plm__op_desc *op, const plm__op_call *call,
                                const plm_profile_calibration *host,
                                const plm_profile_calibration *cuda, plm_placement *out);
plm_status plm__op_call_place(const plm__op_desc *op, const plm__op_call *call, plm_backend *choice,
                              plm_placement *out);

#endif /* PLUME_PIPELINE_PLACEMENT_H */

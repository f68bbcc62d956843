/* profile/profile_internal.h: what the profiler's files share (internal). */
#ifndef PLUME_PROFILE_PROFILE_INTERNAL_H
#define PLUME_PROFILE_PROFILE_INTERNAL_H

#include "plume/profile.h"

/* The calibration of ctx's device: remembered by the process, else read from the cache
 * file, else measured (then remembered and stored); see profile/calibrate.c. Blocking. */
plm_status plm__profile_calibrate(plm_context *ctx, plm_profile_calibration *out);

/* Whether the device of info is the CUDA emulator: the cuda backend of an emulated build
 * (plm_build_info.cuda_emulated, emu/). Calibration and plume tune size their workloads
 * for it there, and what they measure is the emulator's time, no GPU's. */
bool plm__profile_emulated(const plm_device_info *info);

/* The cost model's time (ms) of one launch moving cost's bytes and doing its flops on a
 * device of calibration c: max(bytes / copy bandwidth, flops / FMA rate) plus the launch
 * floor (plm_pipeline_predict's step, plume tune's model_ms). c's copy bandwidth and FMA
 * rate are > 0. */
double plm__profile_model_ms(const plm_op_cost *cost, const plm_profile_calibration *c);

/* The context the profiler was created on. */
plm_context *plm__profiler_context(const plm_profiler *profiler);

/* A pipeline takes (+1) or lets go of (-1) the profiler; plm_profiler_destroy refuses
 * while any holds it. */
void plm__profiler_attach(plm_profiler *profiler, int pipelines);

#endif /* PLUME_PROFILE_PROFILE_INTERNAL_H */

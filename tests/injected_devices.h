/* tests/injected_devices.h: the two "devices" the placement tests predict on, as made-up
 * calibrations (plume/profile.h), so that the model's arithmetic can be checked figure by
 * figure without measuring anything:
 *   cpu_like  low peaks, a cheap launch, no copy bandwidths, so that the model charges it no
 *             copies (20 GB/s, 100 GFLOP/s, 2 us per launch);
 *   gpu_like  high peaks, a dearer launch, every input and output crossing a link (2 TB/s,
 *             20 TFLOP/s, 5 us per launch, 20 GB/s links with 10 us per copy).
 * Used by tests/test_placement.c (pipelines) and tests/test_op_placement.c (op calls). */
#ifndef PLUME_TESTS_INJECTED_DEVICES_H
#define PLUME_TESTS_INJECTED_DEVICES_H

#include "plume/ops.h"
#include "plume/profile.h"

static const plm_profile_calibration cpu_like = {.backend = "host",
                                                 .device = "injected CPU",
                                                 .device_copy_gbps = 20.0,
                                                 .fma_gflops = 100.0,
                                                 .launch_us = 2.0};
static const plm_profile_calibration gpu_like = {.backend = "cuda",
                                                 .device = "injected GPU",
                                                 .device_copy_gbps = 2000.0,
                                                 .h2d_gbps = 20.0,
                                                 .d2h_gbps = 20.0,
                                                 .fma_gflops = 20000.0,
                                                 .launch_us = 5.0,
                                                 .copy_latency_us = 10.0};

/* The model's time of one launch moving cost's bytes and doing its flops on a device of
 * calibration c, worked out by hand: max(bytes / copy bandwidth, flops / FMA rate) plus
 * the launch floor (plume/pipeline.h's placement section). */
static inline double launch_ms(const plm_op_cost *cost, const plm_profile_calibration *c) {
  const double memory = cost->bytes / (c->device_copy_gbps * 1e6);
  const double compute = cost->flops / (c->fma_gflops * 1e6);
  return (memory > compute ? memory : compute) + c->launch_us * 1e-3;
}

#endif /* PLUME_TESTS_INJECTED_DEVICES_H */

/* emu/device/launch_internal.h: what the device side's parts tell each other about launches (internal). */
#ifndef PLUME_EMU_DEVICE_LAUNCH_INTERNAL_H
#define PLUME_EMU_DEVICE_LAUNCH_INTERNAL_H

#include <cstddef>

#include "emu/emu.h"

namespace plm_emu {

/* The most shared memory, static and dynamic, a block of this launch may use. */
size_t launch_shared_limit(const kernel_launch &launch);

/* A kernel's blocks used `bytes` of static shared memory (cudaFuncGetAttributes says so). */
void launch_saw_static_shared(const void *function, size_t bytes);

}  // namespace plm_emu

#endif /* PLUME_EMU_DEVICE_LAUNCH_INTERNAL_H */

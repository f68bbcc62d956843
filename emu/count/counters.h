/* emu/count/counters.h: what the device side and the hooks call to count (internal; the
 * model and the C API are emu/count/emu_count.h's).
 *
 * A launch that runs while a section is open gets a launch_counts (count_launch_begin);
 * each executor running its blocks gets a block_counts (exec->counts) that records the
 * accesses of the block's lanes in the order they ran and, at each barrier and at the
 * block's end, groups them into warp requests and adds them to the launch's counters
 * (under the launch's lock: blocks may run on several threads). count_launch_end files
 * the launch in its section. When nothing is open, exec->counts stays null and the hooks'
 * only cost is testing it. */
#ifndef PLUME_EMU_COUNT_COUNTERS_H
#define PLUME_EMU_COUNT_COUNTERS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "emu/check/check.h"
#include "emu/count/emu_count.h"
#include "emu/emu.h"

namespace plm_emu {

struct executor;
struct launch_counts;
struct block_counts;

/* A launch starting: its counters, or null when no section is open. */
launch_counts *count_launch_begin(const kernel_launch &launch);
/* The executor's recorder for the launch's blocks (null for a null launch); freed by
 * count_executor_done, which adds what is left. */
block_counts *count_executor_start(launch_counts *launch);
void count_executor_done(block_counts *counts);
/* The launch ended: filed in its section, and freed. */
void count_launch_end(launch_counts *launch);

/* A lane's access: to shared memory at `offset` of its block's arena, or to device memory
 * at `addr` (counted only inside a registered region). */
void count_shared_access(executor *exec, int linear, size_t offset, size_t size, access_kind kind,
                         const void *pc);
void count_device_access(executor *exec, int linear, uintptr_t addr, size_t size, access_kind kind,
                         const void *pc);
/* The block's barrier released / a collective of warp `warp` completed with `mask`, and
 * the 32-bit shuffle instructions it was (0 when not a shuffle; one naming every lane of
 * the warp also starts the warp's access numbering again: counters.cpp, block_counts) /
 * the block ended. */
void count_barrier(executor *exec);
void count_collective(executor *exec, int warp, unsigned mask, uint64_t shuffles);
void count_block_end(executor *exec);

/* Registered device memory holds addr (emu/check/device_memory.cpp). */
bool device_region_holds(uintptr_t addr);

/* The launches filed, by section (for the report, emu/count/report.cpp). */
struct launch_record {
  std::string kernel, site; /* as named at the launch, and its file:line */
  dim3 grid, block;
  plm_emu_counts counts;
};
struct section_record {
  std::string label;
  std::vector<launch_record> launches;
};
/* into += from (global_atomic_hottest: the larger). */
void counts_add(plm_emu_counts &into, const plm_emu_counts &from);
/* A copy of every section, in the order they were first opened. */
std::vector<section_record> count_sections();

}  // namespace plm_emu

#endif /* PLUME_EMU_COUNT_COUNTERS_H */

/* emu/config.h: the emulator's settings, read once from the environment (internal).
 *   PLUME_EMU_SEED           the random choices (schedules, block orders, graph node
 *                            orders): a number, default 1. The same seed and the same
 *                            program give the same choices.
 *   PLUME_EMU_BLOCK_THREADS  how many blocks of one grid run at once, each on an OS
 *                            thread of its own: 1 to 16, default 1.
 *   PLUME_EMU_ON_DEFECT      what a defect report does: "abort" (default) stops the
 *                            process, as a sanitizer does; "continue" goes on (the
 *                            launch fails), for tests that look at several reports.
 *   PLUME_EMU_DEVICES        how many devices the emulated machine has: 1 to 8, default 1.
 *   PLUME_EMU_SHARED_OPTIN_KIB  the shared memory a block may opt in to, in KiB: 48 to
 *                            227, default 227 (an H100's); 99 emulates compute capability
 *                            8.6's and 8.9's, where kernels that size their path by it
 *                            (cfar's bands) take another.
 *   PLUME_EMU_COUNT          1: count the memory traffic of every launch of the process
 *                            and print the emulated cost (for an H100) on stderr at exit
 *                            (emu/count/emu_count.h); 0 or unset: count only what the
 *                            C API asks for.
 * A value that does not parse is reported on stderr once and the default used. */
#ifndef PLUME_EMU_CONFIG_H
#define PLUME_EMU_CONFIG_H

#include <cstdint>

namespace plm_emu {

uint64_t config_seed();
int config_block_threads();
bool config_continue_on_defect();
int config_devices();
bool config_count();
/* PLUME_EMU_SHARED_OPTIN_KIB in bytes. */
int config_shared_optin_bytes();

/* A 64-bit mix of two values (splitmix64's finaliser), for seeds derived from seeds. */
uint64_t mix_seed(uint64_t a, uint64_t b);

}  // namespace plm_emu

#endif /* PLUME_EMU_CONFIG_H */

/* emu/check/check.h: the emulator's checks, as its other parts call them (internal).
 *
 * Every load and store of a kernel file (compiled with ThreadSanitizer's instrumentation)
 * comes to hooks.cpp, which sends it on by address:
 *   - shared memory (an executor's arena): bounds (inside a __shared__ variable or the
 *     dynamic shared memory of the launch), reads of bytes not yet written in this block,
 *     and races: two threads of the block touching one byte in one barrier interval, at
 *     least one writing, not both atomically, and no warp collective joining them between
 *     (shared_shadow.cpp);
 *   - anything else: AddressSanitizer's shadow, where the build has it (a read past a
 *     buffer, of freed memory, of memory poisoned by a pool), then the stream order of
 *     registered device memory (device_memory.cpp, emu/emu.h).
 * Reports name the kernel, the block and thread, the address (and the shared variable),
 * and the source lines of both accesses where the sanitizer's symbolizer can say. */
#ifndef PLUME_EMU_CHECK_CHECK_H
#define PLUME_EMU_CHECK_CHECK_H

#include <cstddef>
#include <cstdint>
#include <string>

#include "emu/emu.h"

namespace plm_emu {

struct executor;

/* An access: plain, or atomic. A volatile access counts as atomic: PTX treats ld.volatile
 * and st.volatile as relaxed atomic operations (of system scope), so code that reads with
 * volatile loads what others update atomically races with nothing. */
/* The hot paths of the checks are not themselves checked by AddressSanitizer (they run
 * at every access of every kernel thread; the emulator's own tests run them under it
 * through their other callers' coverage, and their memory is the emulator's own). */
#define PLM_EMU_HOT __attribute__((no_sanitize("address")))

enum access_kind : uint8_t {
  access_read,
  access_write,
  access_atomic,     /* an atomic read-modify-write or store, or a volatile store */
  access_atomic_read /* an atomic or volatile load */
};

/* A new shadow for one executor's shared arena (shared_shadow.cpp). */
void *shared_shadow_make();

/* An access of the running thread `linear` of `exec` to its block's shared memory at
 * `offset` (already inside the arena and the launch's bounds). */
void shared_access(executor *exec, int linear, size_t offset, size_t size, access_kind kind,
                   const void *pc);

/* An access by a kernel's thread (the fibre at `fibre`, plm_emu/kernel.h) or by an
 * operation that is not a kernel (fibre == kMaxLanes) to device memory, checked in
 * stream order, for use after free and in red zones (device_memory.cpp). */
void device_access(const op_context &op, uintptr_t addr, size_t size, bool write, const void *pc,
                   size_t fibre);

/* The source line of a code address ("kernels/cuda/label.cu:97"), or the module and
 * offset where no symbolizer can say (report.cpp). */
std::string source_line(const void *pc);

/* AddressSanitizer present in the process (report.cpp). */
bool have_asan();

}  // namespace plm_emu

#endif /* PLUME_EMU_CHECK_CHECK_H */

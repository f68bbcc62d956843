/* emu/check/hooks.cpp: every memory access of a kernel file, as ThreadSanitizer's
 * instrumentation reports it, checked by the emulator (emu/check/check.h).
 *
 * The kernel files of the emulated build are compiled with -fsanitize=thread, but no
 * ThreadSanitizer runtime is linked: the compiler's calls (__tsan_read4, __tsan_write8,
 * __tsan_atomic32_fetch_add, ...) come here. A plain access is checked and returns; an
 * atomic one is done here (a real atomic operation: blocks may run on several threads)
 * and recorded as atomic. The same files also hold host code (launchers): their accesses
 * come here too, outside any kernel thread, and get AddressSanitizer's check only.
 *
 * A hook may call code the compiler instantiated in an instrumented file (a template of
 * the standard library, merged by the linker): a per-thread flag makes the hooks
 * reentrant, the inner call checking nothing. */
#include <cstdint>
#include <cstdio>
#include <string>

#include "emu/check/check.h"
#include "emu/count/counters.h"
#include "emu/device/executor.h"

extern "C" {
void *__asan_region_is_poisoned(void *beg, size_t size) __attribute__((weak));
void __asan_describe_address(void *addr) __attribute__((weak));
void __asan_get_shadow_mapping(uintptr_t *shadow_scale, uintptr_t *shadow_offset) __attribute__((weak));
}

namespace plm_emu {

namespace {

__attribute__((tls_model("initial-exec"))) thread_local bool in_hook = false;

/* AddressSanitizer's shadow (address >> scale) + offset, where the process has it: an
 * access of up to 8 bytes inside one 8-byte granule whose shadow byte is 0 is addressable
 * without a call into the sanitizer. */
struct asan_shadow {
  bool present = false;
  uintptr_t scale = 3, offset = 0;
  asan_shadow() {
    if (__asan_get_shadow_mapping && __asan_region_is_poisoned) {
      __asan_get_shadow_mapping(&scale, &offset);
      present = true;
    }
  }
};
const asan_shadow shadow_map;

inline bool poisoned(uintptr_t addr, size_t size) {
  if (!shadow_map.present) return false;
  if (size <= 8 && (addr & 7) + size <= 8 &&
      *(const volatile int8_t *)((addr >> shadow_map.scale) + shadow_map.offset) == 0)
    return false;
  return __asan_region_is_poisoned((void *)addr, size) != nullptr;
}

struct hook_scope {
  bool entered;
  hook_scope() : entered(!in_hook) { in_hook = true; }
  ~hook_scope() {
    if (entered) in_hook = false;
  }
};

const char *verb(access_kind kind) {
  switch (kind) {
    case access_read: return "reads";
    case access_write: return "writes";
    case access_atomic: return "updates atomically";
    case access_atomic_read: return "reads atomically";
  }
  return "touches";
}

/* The arena an address of the shared reservation belongs to, and the access's bounds. */
void check_shared(uintptr_t addr, size_t size, access_kind kind, const void *pc, lane *l) {
  const size_t arena = (addr - (uintptr_t)g_shared_arenas) / kSharedArenaBytes;
  if (!l) {
    report_defect("shared memory touched outside a kernel's thread",
                  std::string("code that is not a kernel's thread ") + verb(kind) + " " +
                      std::to_string(size) + " bytes of a block's shared memory at " + source_line(pc));
    return;
  }
  executor *exec = l->exec;
  const uintptr_t own_end = (uintptr_t)exec->shared + kSharedArenaBytes;
  if (arena == (size_t)exec->index + 1 && addr - own_end < kSharedArenaBytes) {
    char detail[200]; /* just past the dynamic memory, which ends the arena */
    std::snprintf(detail, sizeof detail,
                  " %s %zu bytes at byte %zu of the dynamic shared memory, which has %zu (the "
                  "launch's third <<<>>> argument)",
                  verb(kind), size, (size_t)(addr - (uintptr_t)exec->shared) - exec->dynamic_start,
                  exec->dynamic_bytes);
    report_defect("shared memory out of bounds",
                  describe_lane(exec, l->linear) + detail + " at " + source_line(pc));
    return;
  }
  if (arena != (size_t)exec->index) {
    report_defect("shared memory of another block",
                  describe_lane(exec, l->linear) + " " + verb(kind) + " " + std::to_string(size) + " bytes at " + source_line(pc) +
                      " through a pointer into shared memory that is not its block's (kept from an "
                      "earlier block, or past the end of the dynamic shared memory)");
    return;
  }
  const size_t offset = addr - (uintptr_t)exec->shared;
  const bool in_statics = offset + size <= exec->static_end;
  const bool in_dynamic = offset >= exec->dynamic_start && offset + size <= exec->dynamic_start + exec->dynamic_bytes;
  if (!in_statics && !in_dynamic) {
    char detail[320];
    if (offset >= exec->dynamic_start)
      std::snprintf(detail, sizeof detail,
                    " %s %zu bytes at byte %zu of the dynamic shared memory, which has %zu (the "
                    "launch's third <<<>>> argument)",
                    verb(kind), size, offset - exec->dynamic_start, exec->dynamic_bytes);
    else
      std::snprintf(detail, sizeof detail,
                    " %s %zu bytes at byte %zu of shared memory, past every __shared__ variable "
                    "(they end at byte %zu)",
                    verb(kind), size, offset, exec->static_end);
    report_defect("shared memory out of bounds",
                  describe_lane(exec, l->linear) + detail + " at " + source_line(pc));
    return;
  }
  shared_access(exec, l->linear, offset, size, kind, pc);
  if (__builtin_expect(exec->counts != nullptr, 0)) count_shared_access(exec, l->linear, offset, size, kind, pc);
}

void report_poisoned(uintptr_t addr, size_t size, access_kind kind, const void *pc, lane *l) {
  const std::string who = l ? describe_lane(l->exec, l->linear) : std::string("host code of a kernel file");
  char detail[256];
  std::snprintf(detail, sizeof detail,
                " %s %zu bytes at %p at %s: memory that is not allocated (past the end or before "
                "the start of a buffer, freed, or a pool's free block); AddressSanitizer's "
                "description follows",
                verb(kind), size, (void *)addr, source_line(pc).c_str());
  if (__asan_describe_address) {
    std::fprintf(stderr, "plume cuda emulator: the access below is to unaddressable memory\n");
    __asan_describe_address((void *)addr);
  }
  report_defect("device memory out of bounds or freed", who + detail);
}

inline void check_access(const void *address, size_t size, access_kind kind, const void *pc) {
  if (in_hook || size == 0) return;
  hook_scope scope;
  const uintptr_t addr = (uintptr_t)address;
  const size_t fibre = this_fibre_index();
  /* A thread's own stack: nothing to check (a kernel's locals are its own). */
  if (g_fibre_stacks && addr - g_fibre_stacks < kMaxLanes * kStackBytes) return;
  lane *l = lane_at(fibre);
  if (l && l->exec->running != l->linear) l = nullptr; /* the scheduler's stack, not a lane's */
  if (g_shared_arenas && addr - (uintptr_t)g_shared_arenas < (kMaxExecutors + 1) * kSharedArenaBytes) {
    check_shared(addr, size, kind, pc, l);
    return;
  }
  if (poisoned(addr, size)) {
    report_poisoned(addr, size, kind, pc, l);
    return;
  }
  if (l && l->exec->op) {
    device_access(*l->exec->op, addr, size, kind == access_write || kind == access_atomic, pc, fibre);
    if (__builtin_expect(l->exec->counts != nullptr, 0)) count_device_access(l->exec, l->linear, addr, size, kind, pc);
  }
}

}  // namespace

}  // namespace plm_emu

using plm_emu::access_atomic;
using plm_emu::access_atomic_read;
using plm_emu::access_read;
using plm_emu::access_write;
using plm_emu::check_access;

#define PC __builtin_return_address(0)

extern "C" {

void __tsan_init(void) {}
void __tsan_func_entry(void *) {}
void __tsan_func_exit(void) {}

#define PLM_EMU_PLAIN(n)                                                                  \
  void __tsan_read##n(void *a) { check_access(a, n, access_read, PC); }                   \
  void __tsan_write##n(void *a) { check_access(a, n, access_write, PC); }                 \
  void __tsan_unaligned_read##n(void *a) { check_access(a, n, access_read, PC); }         \
  void __tsan_unaligned_write##n(void *a) { check_access(a, n, access_write, PC); }       \
  void __tsan_volatile_read##n(void *a) { check_access(a, n, access_atomic_read, PC); }   \
  void __tsan_volatile_write##n(void *a) { check_access(a, n, access_atomic, PC); }       \
  void __tsan_unaligned_volatile_read##n(void *a) { check_access(a, n, access_atomic_read, PC); } \
  void __tsan_unaligned_volatile_write##n(void *a) { check_access(a, n, access_atomic, PC); }
PLM_EMU_PLAIN(1)
PLM_EMU_PLAIN(2)
PLM_EMU_PLAIN(4)
PLM_EMU_PLAIN(8)
PLM_EMU_PLAIN(16)
#undef PLM_EMU_PLAIN

void __tsan_read_range(void *a, unsigned long size) { check_access(a, size, access_read, PC); }
void __tsan_write_range(void *a, unsigned long size) { check_access(a, size, access_write, PC); }
void __tsan_vptr_read(void **p) { check_access(p, sizeof *p, access_read, PC); }
void __tsan_vptr_update(void **p, void *) { check_access(p, sizeof *p, access_write, PC); }

void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

/* Atomics of 1 to 8 bytes: checked as atomic accesses, done sequentially consistent. A
 * load or store is recorded as an atomic access too: it takes part in no race with other
 * atomic accesses, and in one with plain accesses. */
#define PLM_EMU_ATOMIC(bits, T)                                                                   \
  T __tsan_atomic##bits##_load(const volatile T *a, int) {                                       \
    check_access((const void *)a, sizeof(T), access_atomic_read, PC);                             \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                  \
  }                                                                                               \
  void __tsan_atomic##bits##_store(volatile T *a, T v, int) {                                     \
    check_access((const void *)a, sizeof(T), access_atomic, PC);                                  \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                     \
  }                                                                                               \
  T __tsan_atomic##bits##_exchange(volatile T *a, T v, int) {                                     \
    check_access((const void *)a, sizeof(T), access_atomic, PC);                                  \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                           \
  }                                                                                               \
  T __tsan_atomic##bits##_fetch_add(volatile T *a, T v, int) {                                    \
    check_access((const void *)a, sizeof(T), access_atomic, PC);                                  \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                               \
  T __tsan_atomic##bits##_fetch_sub(volatile T *a, T v, int) {                                    \
    check_access((const void *)a, sizeof(T), access_atomic, PC);                                  \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                               \
  T __tsan_atomic##bits##_fetch_and(volatile T *a, T v, int) {                                    \
    check_access((const void *)a, sizeof(T), access_atomic, PC);                                  \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                               \
  T __tsan_atomic##bits##_fetch_or(volatile T *a, T v, int) {                                     \
    check_access((const void *)a, sizeof(T), access_atomic, PC);                                  \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                             \
  }                                                                                               \
  T __tsan_atomic##bits##_fetch_xor(volatile T *a, T v, int) {                                    \
    check_access((const void *)a, sizeof(T), access_atomic, PC);                                  \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                               \
  T __tsan_atomic##bits##_fetch_nand(volatile T *a, T v, int) {                                   \
    check_access((const void *)a, sizeof(T), access_atomic, PC);                                  \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                           \
  }                                                                                               \
  int __tsan_atomic##bits##_compare_exchange_strong(volatile T *a, T *c, T v, int, int) {         \
    check_access((const void *)a, sizeof(T), access_atomic, PC);                                  \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
  }                                                                                               \
  int __tsan_atomic##bits##_compare_exchange_weak(volatile T *a, T *c, T v, int, int) {           \
    check_access((const void *)a, sizeof(T), access_atomic, PC);                                  \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
  }                                                                                               \
  T __tsan_atomic##bits##_compare_exchange_val(volatile T *a, T c, T v, int, int) {               \
    check_access((const void *)a, sizeof(T), access_atomic, PC);                                  \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);             \
    return c;                                                                                     \
  }
PLM_EMU_ATOMIC(8, uint8_t)
PLM_EMU_ATOMIC(16, uint16_t)
PLM_EMU_ATOMIC(32, uint32_t)
PLM_EMU_ATOMIC(64, uint64_t)
#undef PLM_EMU_ATOMIC

}  // extern "C"

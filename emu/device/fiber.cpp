/* emu/device/fiber.cpp: fibres (emu/device/fiber.h). */
#include "emu/device/fiber.h"

#include <pthread.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

/* AddressSanitizer's fiber interface, where the build has the sanitizer (weak: null
 * otherwise). */
extern "C" {
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size)
    __attribute__((weak));
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old) __attribute__((weak));
void __asan_unpoison_memory_region(void const volatile *addr, size_t size) __attribute__((weak));
}

#if defined(__x86_64__)
extern "C" void plm_emu_fiber_swap(void **save_sp, void *load_sp);
extern "C" void plm_emu_fiber_start(void);
#endif

namespace plm_emu {

/* A stack reused after a fibre that did not end (a block abandoned after a defect, a
 * trap) may keep AddressSanitizer's poison of frames that never returned: cleared before
 * the stack serves again. A fibre that ended cleanly leaves none (fiber_switch). */
static void unpoison_stack(fiber *f, void *bottom, size_t bytes) {
  if (f->dirty && __asan_unpoison_memory_region) __asan_unpoison_memory_region(bottom, bytes);
  f->dirty = false;
}

#if defined(__x86_64__)

void fiber_make(fiber *f, void *bottom, size_t bytes, void (*entry)(void *), void *arg) {
  unpoison_stack(f, bottom, bytes);
  uintptr_t top = ((uintptr_t)bottom + bytes) & ~(uintptr_t)15;
  /* From the stack pointer up, as plm_emu_fiber_swap pops them: r15, r14, r13 (arg), r12
   * (entry), rbx, rbp, then the return address. After the return the stack pointer is
   * `top`, 16-byte aligned, as plm_emu_fiber_start's call expects. */
  uint64_t *sp = (uint64_t *)(top - 7 * sizeof(uint64_t));
  sp[0] = 0;                   /* r15 */
  sp[1] = 0;                   /* r14 */
  sp[2] = (uint64_t)arg;       /* r13 */
  sp[3] = (uint64_t)entry;     /* r12 */
  sp[4] = 0;                   /* rbx */
  sp[5] = 0;                   /* rbp */
  sp[6] = (uint64_t)plm_emu_fiber_start;
  f->sp = sp;
  f->stack_bottom = bottom;
  f->stack_bytes = bytes;
}

__attribute__((no_sanitize("address"))) static void swap_to(fiber *from, fiber *to) {
  plm_emu_fiber_swap(&from->sp, to->sp);
}

#else /* ucontext */

void fiber_make(fiber *f, void *bottom, size_t bytes, void (*entry)(void *), void *arg) {
  unpoison_stack(f, bottom, bytes);
  getcontext(&f->context);
  f->context.uc_stack.ss_sp = bottom;
  f->context.uc_stack.ss_size = bytes;
  f->context.uc_link = nullptr;
  makecontext(&f->context, (void (*)())entry, 1, arg);
  f->stack_bottom = bottom;
  f->stack_bytes = bytes;
}

__attribute__((no_sanitize("address"))) static void swap_to(fiber *from, fiber *to) {
  swapcontext(&from->context, &to->context);
}

#endif

void fiber_of_this_thread(fiber *f) {
  *f = fiber();
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void *bottom = nullptr;
  size_t bytes = 0;
  if (pthread_attr_getstack(&attr, &bottom, &bytes) == 0) {
    f->stack_bottom = bottom;
    f->stack_bytes = bytes;
  }
  pthread_attr_destroy(&attr);
}

void fiber_started() {
  if (__sanitizer_finish_switch_fiber) __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
}

/* Not instrumented by AddressSanitizer: a fibre's last switch leaves this frame on its
 * stack for ever, and an instrumented frame would leave its red zones poisoned there,
 * under whatever the next fibre on that stack keeps at those addresses. */
__attribute__((no_sanitize("address"))) void fiber_switch(fiber *from, fiber *to, bool from_is_done) {
  if (!__sanitizer_start_switch_fiber) {
    swap_to(from, to);
    return;
  }
  void *fake_stack = nullptr;
  __sanitizer_start_switch_fiber(from_is_done ? nullptr : &fake_stack, to->stack_bottom,
                                 to->stack_bytes);
  swap_to(from, to);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr); /* back in `from` */
}

}  // namespace plm_emu

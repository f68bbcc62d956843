/* emu/device/fiber.h: fibres, the threads of an emulated block (internal).
 *
 * A fibre is a stack and a saved stack pointer. fiber_switch saves the callee-saved
 * registers and the floating-point control words of the running code on its own stack,
 * stores its stack pointer, loads another's and returns into that one: about twenty
 * instructions, no system call (swapcontext saves and restores the signal mask with one,
 * which took half the time of the emulator's first proof). Written in assembly for
 * x86-64 (fiber_x86_64.S); elsewhere ucontext does the same job, slower.
 *
 * A fibre starts in entry(arg) and must never return from it: it switches away for the
 * last time instead. AddressSanitizer is told about every switch (its fiber interface),
 * so that its view of "the current stack" follows the fibres. Not thread-safe: a fibre
 * runs on the OS thread that switched to it, and is switched only from there. */
#ifndef PLUME_EMU_DEVICE_FIBER_H
#define PLUME_EMU_DEVICE_FIBER_H

#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace plm_emu {

struct fiber {
#if defined(__x86_64__)
  void *sp = nullptr;
#else
  ucontext_t context;
#endif
  /* The stack, for AddressSanitizer (null: the OS thread's own stack). */
  const void *stack_bottom = nullptr;
  size_t stack_bytes = 0;
  /* It stopped without ending (fiber_make then clears its stack's poison). */
  bool dirty = false;
};

/* `f` as the calling OS thread, on its own stack: what a fibre switches back to. */
void fiber_of_this_thread(fiber *f);

/* Make `f` start entry(arg) on the stack [bottom, bottom + bytes) when first switched to.
 * entry must call fiber_started() first. */
void fiber_make(fiber *f, void *bottom, size_t bytes, void (*entry)(void *), void *arg);

/* The first thing a fibre's entry does (it completes the sanitizer's switch). */
void fiber_started();

/* Save the running fibre (or thread) in `from` and run `to`; returns when something
 * switches back to `from`. `from_is_done`: the running fibre will never run again
 * (AddressSanitizer then forgets its fake stack). */
void fiber_switch(fiber *from, fiber *to, bool from_is_done = false);

}  // namespace plm_emu

#endif /* PLUME_EMU_DEVICE_FIBER_H */

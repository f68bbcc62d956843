/* emu/device/fiber_x86_64.S: the x86-64 context switch of emu/device/fiber.h.
 *
 * plm_emu_fiber_swap(void **save_sp, void *load_sp): push the System V callee-saved
 * registers (rbp, rbx, r12 to r15), store rsp in *save_sp, load rsp from load_sp, pop the
 * same and return on the loaded stack. The SSE and x87 control words are not switched:
 * every fibre of a process runs with the thread's (nothing in a kernel changes the
 * rounding mode across a barrier: intrinsics.h's rounded forms restore it at once), and
 * loading them is among the slowest instructions of a switch.
 * plm_emu_fiber_start: where a new fibre's first switch returns to; r12 holds its
 * entry function and r13 the argument (fiber.cpp lays out the stack). */
#if defined(__x86_64__)
    .text
    .p2align 4
    .globl plm_emu_fiber_swap
    .hidden plm_emu_fiber_swap
    .type plm_emu_fiber_swap, @function
plm_emu_fiber_swap:
    .cfi_startproc
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .cfi_endproc
    .size plm_emu_fiber_swap, .-plm_emu_fiber_swap

    .p2align 4
    .globl plm_emu_fiber_start
    .hidden plm_emu_fiber_start
    .type plm_emu_fiber_start, @function
plm_emu_fiber_start:
    .cfi_startproc
    .cfi_undefined rip
    movq %r13, %rdi
    callq *%r12
    ud2
    .cfi_endproc
    .size plm_emu_fiber_start, .-plm_emu_fiber_start
#endif
    .section .note.GNU-stack, "", @progbits

/* kernels/cpu/dispatch.h: hot CPU loops compiled for more than one instruction set.
 *
 * PLM__CPU_CLONES before a function has the compiler build it twice, for AVX2 and for
 * the baseline (SSE2 on x86-64), and pick one when the library is loaded (GCC and
 * Clang target_clones, an ifunc on x86-64 ELF); elsewhere, and under ThreadSanitizer,
 * it is empty. Files using it are compiled with -ffp-contract=off, so no clone fuses
 * a multiply and an add: every clone rounds exactly as the baseline does and results
 * do not depend on the CPU. Put it on static functions only: for an extern one clang 14
 * defines only the resolver's symbol (name.ifunc), and other files do not link; an extern
 * entry point is a plain function calling the static clones (plm__sobel_magnitude_row).
 */
#ifndef PLUME_KERNELS_CPU_DISPATCH_H
#define PLUME_KERNELS_CPU_DISPATCH_H

/* ThreadSanitizer instruments the resolver, which runs before its runtime is up: a
 * crash at load time. Races do not depend on the instruction set, so a TSan build has
 * the baseline only. */
#if defined(__SANITIZE_THREAD__)
#define PLM__CPU_NO_CLONES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define PLM__CPU_NO_CLONES 1
#endif
#endif

#if defined(__x86_64__) && defined(__ELF__) && !defined(PLM__CPU_NO_CLONES) && \
    (defined(__clang__) ? __clang_major__ >= 14 : defined(__GNUC__) && __GNUC__ >= 6)
#define PLM__CPU_CLONES __attribute__((target_clones("avx2", "default")))
/* For loops whose math is fmaf: with FMA (and the AVX it implies) fmaf is one instruction
 * the loop vectorises; without it, a call into libm per element. Both round once, alike.
 * ("arch=haswell" would pick its clone by CPU model, not by feature: never on others.) */
#define PLM__CPU_CLONES_FMA __attribute__((target_clones("fma", "default")))
#else
#define PLM__CPU_CLONES
#define PLM__CPU_CLONES_FMA
#endif

#endif /* PLUME_KERNELS_CPU_DISPATCH_H */

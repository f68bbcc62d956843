/* emu/include/plm_emu/atomics.h: CUDA's atomic functions for kernels compiled for the
 * emulator (part of cuda_emu.h).
 *
 * Each is one of the compiler's __atomic builtins, sequentially consistent, so it is
 * atomic for real when blocks run on several OS threads (PLUME_EMU_BLOCK_THREADS). The
 * kernels are compiled with ThreadSanitizer's instrumentation, which turns every builtin
 * into a call of the emulator's __tsan_atomic* entry points (emu/check/hooks.cpp): they
 * do the operation and record it as atomic, so two threads updating one shared counter
 * atomically is no race, while a plain access beside an atomic one is. Operations with no
 * builtin (float add, min, max, inc, dec) are a compare-and-swap loop over an atomic load,
 * each step atomic in the same way. The _block and _system scopes are the same here. */
#ifndef PLUME_EMU_ATOMICS_H
#define PLUME_EMU_ATOMICS_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace plm_emu {

template <class T>
using if_integer = std::enable_if_t<std::is_integral<T>::value, T>;

/* old = *p; *p = update(old); return old — atomically, by compare-and-swap on the bits. */
template <class T, class Bits, class F>
T atomic_update(T *p, F update) {
  static_assert(sizeof(T) == sizeof(Bits), "the bits of the value");
  Bits *bits = reinterpret_cast<Bits *>(p);
  Bits seen = __atomic_load_n(bits, __ATOMIC_SEQ_CST);
  for (;;) {
    T old, want;
    memcpy(&old, &seen, sizeof old);
    want = update(old);
    Bits want_bits;
    memcpy(&want_bits, &want, sizeof want_bits);
    if (__atomic_compare_exchange_n(bits, &seen, want_bits, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
      return old;
  }
}

}  // namespace plm_emu

template <class T>
plm_emu::if_integer<T> atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
template <class T>
plm_emu::if_integer<T> atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
template <class T>
plm_emu::if_integer<T> atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
template <class T>
plm_emu::if_integer<T> atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
template <class T>
plm_emu::if_integer<T> atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }
template <class T>
plm_emu::if_integer<T> atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
template <class T>
plm_emu::if_integer<T> atomicCAS(T *p, T compare, T v) {
  __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return compare;
}
template <class T>
plm_emu::if_integer<T> atomicMin(T *p, T v) {
  return plm_emu::atomic_update<T, T>(p, [v](T old) { return v < old ? v : old; });
}
template <class T>
plm_emu::if_integer<T> atomicMax(T *p, T v) {
  return plm_emu::atomic_update<T, T>(p, [v](T old) { return v > old ? v : old; });
}
inline unsigned atomicInc(unsigned *p, unsigned limit) {
  return plm_emu::atomic_update<unsigned, unsigned>(
      p, [limit](unsigned old) { return old >= limit ? 0u : old + 1; });
}
inline unsigned atomicDec(unsigned *p, unsigned limit) {
  return plm_emu::atomic_update<unsigned, unsigned>(
      p, [limit](unsigned old) { return old == 0 || old > limit ? limit : old - 1; });
}

inline float atomicAdd(float *p, float v) {
  return plm_emu::atomic_update<float, uint32_t>(p, [v](float old) { return old + v; });
}
inline double atomicAdd(double *p, double v) {
  return plm_emu::atomic_update<double, uint64_t>(p, [v](double old) { return old + v; });
}
inline float atomicExch(float *p, float v) {
  return plm_emu::atomic_update<float, uint32_t>(p, [v](float) { return v; });
}
inline __half atomicAdd(__half *p, __half v) {
  return plm_emu::atomic_update<__half, uint16_t>(p, [v](__half old) { return __hadd(old, v); });
}
inline __half2 atomicAdd(__half2 *p, __half2 v) {
  return plm_emu::atomic_update<__half2, uint32_t>(p, [v](__half2 old) { return __hadd2(old, v); });
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *p, __nv_bfloat16 v) {
  return plm_emu::atomic_update<__nv_bfloat16, uint16_t>(
      p, [v](__nv_bfloat16 old) { return __float2bfloat16_rn(__bfloat162float(old) + __bfloat162float(v)); });
}

/* The scoped forms: the same operations. */
#define PLM_EMU_SCOPED(name)                                            \
  template <class T, class... A>                                        \
  auto name##_block(T *p, A... a) -> decltype(name(p, a...)) { return name(p, a...); } \
  template <class T, class... A>                                        \
  auto name##_system(T *p, A... a) -> decltype(name(p, a...)) { return name(p, a...); }
PLM_EMU_SCOPED(atomicAdd)
PLM_EMU_SCOPED(atomicSub)
PLM_EMU_SCOPED(atomicAnd)
PLM_EMU_SCOPED(atomicOr)
PLM_EMU_SCOPED(atomicXor)
PLM_EMU_SCOPED(atomicExch)
PLM_EMU_SCOPED(atomicCAS)
PLM_EMU_SCOPED(atomicMin)
PLM_EMU_SCOPED(atomicMax)
#undef PLM_EMU_SCOPED

#endif /* PLUME_EMU_ATOMICS_H */

/* emu/include/plm_emu/intrinsics.h: CUDA's integer, floating-point and memory
 * intrinsics for kernels compiled for the emulator (part of cuda_emu.h).
 *
 * Integer intrinsics are exact. Floating-point ones are the host's: the fast forms
 * (__expf, __fdividef) are the accurate functions, the rounded forms (__fadd_rz) round
 * as they say through the floating-point environment, and the math library is the
 * host's libm, so results may differ from a GPU's in the last bits (a GPU also contracts
 * a * b + c into one fused multiply-add where the emulator does not): the emulator
 * proves logic, not bits of transcendental functions. Loads with cache hints are loads;
 * fences are full fences. */
#ifndef PLUME_EMU_INTRINSICS_H
#define PLUME_EMU_INTRINSICS_H

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <limits>

namespace plm_emu {

[[noreturn]] void trap(const char *why);
void nanosleep_ns(unsigned ns);
long long clock_ticks();

/* x computed in the rounding mode `mode` (FE_TOWARDZERO, FE_UPWARD, FE_DOWNWARD). */
template <class F>
auto rounded(int mode, F f) {
  const int saved = std::fegetround();
  std::fesetround(mode);
  volatile auto r = f();
  std::fesetround(saved);
  return r;
}

template <class To, class From>
To bits_as(From from) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

}  // namespace plm_emu

/* ---- integers ------------------------------------------------------------------------ */
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned long long __brevll(unsigned long long x) {
  return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline int __mul24(int a, int b) {
  return (int)((long long)((a << 8) >> 8) * ((b << 8) >> 8));
}
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline unsigned __sad(int a, int b, unsigned c) { return (unsigned)(a > b ? a - b : b - a) + c; }
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return (a > b ? a - b : b - a) + c; }
inline int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
inline int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b) >> 1); }
inline unsigned __urhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b + 1) >> 1); }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t bytes = ((uint64_t)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; i++) r |= (unsigned)((bytes >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  return (unsigned)((((uint64_t)hi << 32 | lo) << (shift & 31)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  return (unsigned)((((uint64_t)hi << 32 | lo) << (shift > 32 ? 32 : shift)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  return (unsigned)(((uint64_t)hi << 32 | lo) >> (shift & 31));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  return (unsigned)(((uint64_t)hi << 32 | lo) >> (shift > 32 ? 32 : shift));
}

/* min and max as CUDA's headers give them for every pair of arithmetic types. */
#define PLM_EMU_MINMAX(T)                               \
  inline T min(T a, T b) { return b < a ? b : a; }      \
  inline T max(T a, T b) { return a < b ? b : a; }
PLM_EMU_MINMAX(int)
PLM_EMU_MINMAX(unsigned)
PLM_EMU_MINMAX(long)
PLM_EMU_MINMAX(unsigned long)
PLM_EMU_MINMAX(long long)
PLM_EMU_MINMAX(unsigned long long)
#undef PLM_EMU_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline unsigned umin(unsigned a, unsigned b) { return b < a ? b : a; }
inline unsigned umax(unsigned a, unsigned b) { return a < b ? b : a; }
inline long long llmin(long long a, long long b) { return b < a ? b : a; }
inline long long llmax(long long a, long long b) { return a < b ? b : a; }

/* ---- floating point -------------------------------------------------------------------- */
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x >= 1.f ? 1.f : (x > 0.f ? x : 0.f); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float sinpif(float x) { return sinf((float)M_PI * x); }
inline float cospif(float x) { return cosf((float)M_PI * x); }
inline double sinpi(double x) { return sin(M_PI * x); }
inline double cospi(double x) { return cos(M_PI * x); }
inline float exp10f_emu(float x) { return powf(10.0f, x); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f_emu(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float *s, float *c) { *s = sinf(x); *c = cosf(x); }
inline float normcdff(float x) { return 0.5f * erfcf(-x / sqrtf(2.0f)); }
inline double normcdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

#define PLM_EMU_ROUNDED_FLOAT_OP(name, T, expr)                                             \
  inline T name##_rn(T a, T b) { return expr; }                                             \
  inline T name##_rz(T a, T b) { return plm_emu::rounded(FE_TOWARDZERO, [=] { return expr; }); } \
  inline T name##_ru(T a, T b) { return plm_emu::rounded(FE_UPWARD, [=] { return expr; }); }     \
  inline T name##_rd(T a, T b) { return plm_emu::rounded(FE_DOWNWARD, [=] { return expr; }); }
PLM_EMU_ROUNDED_FLOAT_OP(__fadd, float, a + b)
PLM_EMU_ROUNDED_FLOAT_OP(__fsub, float, a - b)
PLM_EMU_ROUNDED_FLOAT_OP(__fmul, float, a * b)
PLM_EMU_ROUNDED_FLOAT_OP(__fdiv, float, a / b)
PLM_EMU_ROUNDED_FLOAT_OP(__dadd, double, a + b)
PLM_EMU_ROUNDED_FLOAT_OP(__dsub, double, a - b)
PLM_EMU_ROUNDED_FLOAT_OP(__dmul, double, a * b)
PLM_EMU_ROUNDED_FLOAT_OP(__ddiv, double, a / b)
#undef PLM_EMU_ROUNDED_FLOAT_OP
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fmaf_rz(float a, float b, float c) { return plm_emu::rounded(FE_TOWARDZERO, [=] { return fmaf(a, b, c); }); }
inline float __fmaf_ru(float a, float b, float c) { return plm_emu::rounded(FE_UPWARD, [=] { return fmaf(a, b, c); }); }
inline float __fmaf_rd(float a, float b, float c) { return plm_emu::rounded(FE_DOWNWARD, [=] { return fmaf(a, b, c); }); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline double __fma_rz(double a, double b, double c) { return plm_emu::rounded(FE_TOWARDZERO, [=] { return fma(a, b, c); }); }
inline double __fma_ru(double a, double b, double c) { return plm_emu::rounded(FE_UPWARD, [=] { return fma(a, b, c); }); }
inline double __fma_rd(double a, double b, double c) { return plm_emu::rounded(FE_DOWNWARD, [=] { return fma(a, b, c); }); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline double __dsqrt_rn(double x) { return sqrt(x); }

/* Conversions: _rn to nearest even, _rz toward zero, _ru up, _rd down; out of range
 * saturates as on a GPU (NaN gives 0 for integers, as cvt does). */
template <class I, class F>
I plm_emu_convert(F x, int mode) {
  if (x != x) return 0;
  F r = mode == 0 ? std::nearbyint(x) : mode == 1 ? std::trunc(x) : mode == 2 ? std::ceil(x) : std::floor(x);
  if (r <= (F)std::numeric_limits<I>::min()) return std::numeric_limits<I>::min();
  if (r >= (F)std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
  return (I)r;
}
#define PLM_EMU_CONVERT(name, I, F)                                             \
  inline I name##_rn(F x) { return plm_emu_convert<I, F>(x, 0); }              \
  inline I name##_rz(F x) { return plm_emu_convert<I, F>(x, 1); }              \
  inline I name##_ru(F x) { return plm_emu_convert<I, F>(x, 2); }              \
  inline I name##_rd(F x) { return plm_emu_convert<I, F>(x, 3); }
PLM_EMU_CONVERT(__float2int, int, float)
PLM_EMU_CONVERT(__float2uint, unsigned, float)
PLM_EMU_CONVERT(__float2ll, long long, float)
PLM_EMU_CONVERT(__float2ull, unsigned long long, float)
PLM_EMU_CONVERT(__double2int, int, double)
PLM_EMU_CONVERT(__double2uint, unsigned, double)
PLM_EMU_CONVERT(__double2ll, long long, double)
PLM_EMU_CONVERT(__double2ull, unsigned long long, double)
#undef PLM_EMU_CONVERT
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline float __ull2float_rn(unsigned long long x) { return (float)x; }
inline double __int2double_rn(int x) { return (double)x; }
inline double __ll2double_rn(long long x) { return (double)x; }
inline float __double2float_rn(double x) { return (float)x; }
inline float __double2float_rz(double x) { return plm_emu::rounded(FE_TOWARDZERO, [=] { return (float)x; }); }

inline int __float_as_int(float x) { return plm_emu::bits_as<int>(x); }
inline unsigned __float_as_uint(float x) { return plm_emu::bits_as<unsigned>(x); }
inline float __int_as_float(int x) { return plm_emu::bits_as<float>(x); }
inline float __uint_as_float(unsigned x) { return plm_emu::bits_as<float>(x); }
inline long long __double_as_longlong(double x) { return plm_emu::bits_as<long long>(x); }
inline double __longlong_as_double(long long x) { return plm_emu::bits_as<double>(x); }
inline int __double2hiint(double x) { return (int)(plm_emu::bits_as<unsigned long long>(x) >> 32); }
inline int __double2loint(double x) { return (int)plm_emu::bits_as<unsigned long long>(x); }
inline double __hiloint2double(int hi, int lo) {
  return plm_emu::bits_as<double>(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo);
}
inline int __isnanf(float x) { return x != x; }
inline int __isinff(float x) { return std::isinf(x); }
inline int __finitef(float x) { return std::isfinite(x); }

/* ---- memory ---------------------------------------------------------------------------- */
/* A load or store with a cache hint moves its whole object as one access, as a GPU's
 * vector instruction does (ld.global.cg.v4.u8 for a uchar4): a plain copy of a vector
 * type would be split by the host compiler into its fields, which the checks and the
 * counters would see as four accesses of a quarter the width (four times the requests
 * and, strided, four times the sectors). A memcpy of the object's size reaches the hooks
 * as one access of that size. */
namespace plm_emu {
template <class T>
__attribute__((always_inline)) inline T load_whole(const T *p) {
  static_assert(sizeof(T) <= 16, "a GPU's widest access is 16 bytes (past it, a libc memcpy the hooks do not see)");
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
__attribute__((always_inline)) inline void store_whole(T *p, const T &v) {
  static_assert(sizeof(T) <= 16, "a GPU's widest access is 16 bytes (past it, a libc memcpy the hooks do not see)");
  std::memcpy(p, &v, sizeof v);
}
}  // namespace plm_emu
template <class T> T __ldg(const T *p) { return plm_emu::load_whole(p); }
template <class T> T __ldcg(const T *p) { return plm_emu::load_whole(p); }
template <class T> T __ldca(const T *p) { return plm_emu::load_whole(p); }
template <class T> T __ldcs(const T *p) { return plm_emu::load_whole(p); }
template <class T> T __ldlu(const T *p) { return plm_emu::load_whole(p); }
template <class T> T __ldcv(const T *p) { return plm_emu::load_whole(p); }
template <class T> void __stwb(T *p, T v) { plm_emu::store_whole(p, v); }
template <class T> void __stcg(T *p, T v) { plm_emu::store_whole(p, v); }
template <class T> void __stcs(T *p, T v) { plm_emu::store_whole(p, v); }
template <class T> void __stwt(T *p, T v) { plm_emu::store_whole(p, v); }
inline void __threadfence() { __sync_synchronize(); }
inline void __threadfence_block() { __sync_synchronize(); }
inline void __threadfence_system() { __sync_synchronize(); }

/* ---- the rest ----------------------------------------------------------------------------- */
[[noreturn]] inline void __trap() { plm_emu::trap("__trap()"); }
[[noreturn]] inline void __brkpt() { plm_emu::trap("__brkpt()"); }
inline void __nanosleep(unsigned ns) { plm_emu::nanosleep_ns(ns); }
inline long long clock64() { return plm_emu::clock_ticks(); }
inline long long __clock64() { return plm_emu::clock_ticks(); }
inline unsigned __pm0() { return 0; }

#endif /* PLUME_EMU_INTRINSICS_H */

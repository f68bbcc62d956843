/* kernels/common/splitmix64.h: splitmix64, the one pseudo-random generator of plume: the
 * ops' samples (ops/op_desc.h), the support library, the benchmarks and the tests (the
 * synthetic scene, the benchmarks' allocation sequences, the tests' random cases). It
 * lives on the kernels' layer so that every layer above may include it.
 *
 * The generator is SplitMix64 (G. L. Steele Jr., D. Lea and C. H. Flood, "Fast
 * splittable pseudorandom number generators", OOPSLA 2014), with the output function
 * of Stafford's "Mix13" as in Vigna's reference splitmix64.c: the state advances by the
 * golden-ratio gamma 0x9e3779b97f4a7c15 and each output is the mix of the new state.
 * It passes BigCrush, costs a few cycles, and its numbers are the same on every platform
 * and compiler (integer arithmetic only). It is not for cryptography.
 *
 * The sequences are kept bit for bit: the scene's files (support/scene.h), its fixtures
 * and the tests' seeds depend on them, so neither the constants nor the order of the
 * operations may change. Header only (static inline); no global state, so each caller
 * keeps its own state and the functions are reentrant.
 */
#ifndef PLUME_KERNELS_COMMON_SPLITMIX64_H
#define PLUME_KERNELS_COMMON_SPLITMIX64_H

#include <stdint.h>

/* The state's increment: 2^64 divided by the golden ratio, odd. */
#define SPLITMIX64_GAMMA UINT64_C(0x9e3779b97f4a7c15)

/* The output function: a bijective mix of the 64 bits of z. */
static inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* The next number of the sequence whose state is *state (any value is a valid seed). */
static inline uint64_t splitmix64_next(uint64_t *state) {
  *state += SPLITMIX64_GAMMA;
  return splitmix64_mix(*state);
}

/* The first number of the sequence seeded with x: a hash of x, for a value derived from a
 * seed without keeping a state. */
static inline uint64_t splitmix64_hash(uint64_t x) {
  return splitmix64_mix(x + SPLITMIX64_GAMMA);
}

/* The next number as a double uniform on [0, 1): its top 53 bits. */
static inline double splitmix64_unit(uint64_t *state) {
  return (double)(splitmix64_next(state) >> 11) * 0x1p-53;
}

#endif /* PLUME_KERNELS_COMMON_SPLITMIX64_H */

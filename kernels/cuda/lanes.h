/* kernels/cuda/lanes.h: the threads of a CUDA warp and of a block as kernels' logic sees
 * them (internal; C++, nvcc only).
 *
 * Logic written against a Warp or Block parameter with these members runs on the GPU
 * with these and on the host, in the tests, with tests/emulated_lanes.h's EmulatedWarp
 * and EmulatedBlock, which have the same members. A warp:
 *   lane()                 this lane's index in its warp, 0..31;
 *   shuffle(value, from)   every lane gets lane `from`'s value (any trivially copyable
 *                          type whose size is a multiple of 4 bytes);
 *   ballot(p)              every lane gets the bits of the lanes whose p is true.
 * Every lane of the warp must call them together: the kernels launch whole warps (blocks
 * of a multiple of 32 threads, 1-D) and keep the loops around them warp-uniform.
 * A block (1-D):
 *   thread(), threads()    this thread's index in the block, and the block's threads;
 *   sync()                 a barrier of the block's threads (all of them call it). */
#ifndef PLUME_KERNELS_CUDA_LANES_H
#define PLUME_KERNELS_CUDA_LANES_H

#include <stdint.h>
#include <string.h>

struct plm__cuda_warp {
  static constexpr int kLanes = 32;
  static constexpr unsigned kAll = 0xffffffffu;

  __device__ int lane() const { return (int)(threadIdx.x & 31); }

  template <class T>
  __device__ T shuffle(const T &value, int from) const {
    static_assert(sizeof(T) % sizeof(int) == 0, "shuffled in 4-byte words");
    int words[sizeof(T) / sizeof(int)];
    memcpy(words, &value, sizeof(T));
    for (unsigned i = 0; i < sizeof(T) / sizeof(int); i++)
      words[i] = __shfl_sync(kAll, words[i], from);
    T out;
    memcpy(&out, words, sizeof(T));
    return out;
  }

  __device__ uint32_t ballot(bool p) const { return __ballot_sync(kAll, p); }
};

struct plm__cuda_block {
  __device__ int thread() const { return (int)threadIdx.x; }
  __device__ int threads() const { return (int)blockDim.x; }
  __device__ void sync() const { __syncthreads(); }
};

#endif /* PLUME_KERNELS_CUDA_LANES_H */

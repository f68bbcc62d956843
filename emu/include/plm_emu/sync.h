/* emu/include/plm_emu/sync.h: barriers and warp collectives for kernels compiled for
 * the emulator (part of cuda_emu.h).
 *
 * A thread runs on until it reaches a barrier (__syncthreads and its _count, _and, _or
 * forms) or a warp collective (__syncwarp, the shuffles, votes, matches, reductions,
 * WMMA's _sync calls); there it waits, and the block's scheduler runs another thread.
 * A warp collective completes when every lane its mask names has come to it with the
 * same mask and the same operation; the scheduler then computes every lane's result
 * from the values the lanes brought (the kinds below) and lets them go on. Lanes are
 * not in lockstep: a lane that reads what another wrote must be ordered after it by a
 * barrier or a collective, as on Volta and later GPUs, and the checks see it when not.
 *
 * Defects reported (emu/device/block.cpp): a mask without the calling lane, or naming a
 * lane the block does not have or that has returned; lanes of one mask at different
 * operations; a shuffle reading a lane outside its mask; a width that is not a power of two up to 32; a __syncthreads that some of
 * the block's threads never reach (returned, or waiting elsewhere). */
#ifndef PLUME_EMU_SYNC_H
#define PLUME_EMU_SYNC_H

#include <cstdint>
#include <cstring>

#include "plm_emu/kernel.h"

namespace plm_emu {

struct collective_call;

/* A warp collective whose lanes have all come: calls[lane] for each lane in mask. */
struct warp_group {
  unsigned mask;
  const collective_call *calls[kWarpSize];
  void *context; /* the emulator's, for reports */
  int warp;      /* the warp's index in its block */
};

/* An operation of the warp: its name (for reports), how a group's results are made, and
 * whether it moves each lane's value through SHFL instructions (the counts take it as
 * ceil(bytes / 4) of them: emu/count). */
struct collective_kind {
  const char *name;
  void (*complete)(const warp_group &group);
  bool shuffles = false;
};

/* What a lane brings to a collective (on its own stack while it waits). */
struct collective_call {
  const collective_kind *kind;
  unsigned mask;
  const void *in;
  void *out;
  size_t bytes;
  int a, b; /* the operation's own arguments (source lane, delta, width, ...) */
};

/* Wait in a warp collective until the group completes (emu/device/block.cpp). */
void warp_collective(const collective_call &call);

/* The kinds emu/device/collectives.cpp defines. */
extern const collective_kind kind_syncwarp, kind_shfl_idx, kind_shfl_up, kind_shfl_down,
    kind_shfl_xor, kind_ballot, kind_match_any, kind_match_all, kind_reduce;

enum barrier_kind { barrier_sync, barrier_count, barrier_and, barrier_or };

/* Wait at the block's barrier; the result of the _count/_and/_or forms. */
int block_barrier(barrier_kind kind, int predicate);

/* __activemask: the lanes of the warp that are converged with the caller. A lane waits
 * until none of its warp's lanes can run on (each has come to an __activemask, waits in a
 * barrier or collective, or has returned); the lanes that came to this same call site
 * then get the mask of that group. */
unsigned warp_active_mask();

template <class T>
T shuffle(const collective_kind &kind, unsigned mask, const T &value, int a, int width) {
  static_assert(sizeof(T) <= 16, "shuffled values are at most 16 bytes");
  T out;
  collective_call call{&kind, mask, &value, &out, sizeof(T), a, width};
  warp_collective(call);
  return out;
}

/* The reductions of __reduce_*_sync. */
enum reduce_op { reduce_add_u, reduce_min_u, reduce_max_u, reduce_add_i, reduce_min_i,
                 reduce_max_i, reduce_and, reduce_or, reduce_xor };

inline unsigned reduce(unsigned mask, unsigned value, reduce_op op) {
  unsigned out = 0;
  collective_call call{&kind_reduce, mask, &value, &out, sizeof value, (int)op, 0};
  warp_collective(call);
  return out;
}

}  // namespace plm_emu

inline void __syncthreads() { plm_emu::block_barrier(plm_emu::barrier_sync, 0); }
inline int __syncthreads_count(int p) { return plm_emu::block_barrier(plm_emu::barrier_count, p != 0); }
inline int __syncthreads_and(int p) { return plm_emu::block_barrier(plm_emu::barrier_and, p != 0); }
inline int __syncthreads_or(int p) { return plm_emu::block_barrier(plm_emu::barrier_or, p != 0); }

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  plm_emu::collective_call call{&plm_emu::kind_syncwarp, mask, nullptr, nullptr, 0, 0, 0};
  plm_emu::warp_collective(call);
}

inline unsigned __activemask() { return plm_emu::warp_active_mask(); }

template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
  return plm_emu::shuffle(plm_emu::kind_shfl_idx, mask, var, src_lane, width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return plm_emu::shuffle(plm_emu::kind_shfl_up, mask, var, (int)delta, width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return plm_emu::shuffle(plm_emu::kind_shfl_down, mask, var, (int)delta, width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
  return plm_emu::shuffle(plm_emu::kind_shfl_xor, mask, var, lane_mask, width);
}

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  int p = predicate != 0;
  unsigned out = 0;
  plm_emu::collective_call call{&plm_emu::kind_ballot, mask, &p, &out, sizeof p, 0, 0};
  plm_emu::warp_collective(call);
  return out;
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) == mask;
}
inline unsigned __uni_sync(unsigned mask, int predicate) {
  unsigned b = __ballot_sync(mask, predicate);
  return b == 0 || b == mask;
}

template <class T>
unsigned __match_any_sync(unsigned mask, T value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "matched values are 4 or 8 bytes");
  unsigned out = 0;
  plm_emu::collective_call call{&plm_emu::kind_match_any, mask, &value, &out, sizeof(T), 0, 0};
  plm_emu::warp_collective(call);
  return out;
}
template <class T>
unsigned __match_all_sync(unsigned mask, T value, int *pred) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "matched values are 4 or 8 bytes");
  unsigned out[2] = {0, 0}; /* the mask, then the predicate */
  plm_emu::collective_call call{&plm_emu::kind_match_all, mask, &value, out, sizeof(T), 0, 0};
  plm_emu::warp_collective(call);
  *pred = (int)out[1];
  return out[0];
}

inline unsigned __reduce_add_sync(unsigned mask, unsigned v) { return plm_emu::reduce(mask, v, plm_emu::reduce_add_u); }
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) { return plm_emu::reduce(mask, v, plm_emu::reduce_min_u); }
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) { return plm_emu::reduce(mask, v, plm_emu::reduce_max_u); }
inline int __reduce_add_sync(unsigned mask, int v) { return (int)plm_emu::reduce(mask, (unsigned)v, plm_emu::reduce_add_i); }
inline int __reduce_min_sync(unsigned mask, int v) { return (int)plm_emu::reduce(mask, (unsigned)v, plm_emu::reduce_min_i); }
inline int __reduce_max_sync(unsigned mask, int v) { return (int)plm_emu::reduce(mask, (unsigned)v, plm_emu::reduce_max_i); }
inline unsigned __reduce_and_sync(unsigned mask, unsigned v) { return plm_emu::reduce(mask, v, plm_emu::reduce_and); }
inline unsigned __reduce_or_sync(unsigned mask, unsigned v) { return plm_emu::reduce(mask, v, plm_emu::reduce_or); }
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v) { return plm_emu::reduce(mask, v, plm_emu::reduce_xor); }

#endif /* PLUME_EMU_SYNC_H */

/* emu/device/executor.h: an executor runs one block at a time on one OS thread
 * (internal to emu/device and emu/check).
 *
 * The model. A grid's blocks are run in a shuffled order, by one executor (the stream's
 * worker thread) or, with PLUME_EMU_BLOCK_THREADS=N, by N at once on N threads, so
 * blocks that communicate through global memory (atomics, flags) really interleave. An
 * executor owns, for the block it runs:
 *   - a fibre per thread (lanes[]), each on its own 128 KiB stack with a guard page, the
 *     stacks of every executor in one reservation, so a thread is found from its stack
 *     pointer (plm_emu/kernel.h);
 *   - the block's shared memory: an arena of kSharedArenaBytes, dynamic shared memory at
 *     its start, then each static __shared__ declaration in the order the block's threads
 *     first reach it; the part a block uses is filled with 0xCD when it starts (no zeros,
 *     nothing kept from the block before), and emu/check keeps a shadow of it;
 *   - the warps' state: which lanes exist, have returned, wait in which collective, and
 *     a short history of the warp's completed collectives (the race checks use it to
 *     tell whether two lanes' accesses were ordered by one);
 *   - a phase counter: it goes up when a block starts and when the block's barrier
 *     releases, so two accesses of one phase were not ordered by a barrier.
 * The scheduler (block.cpp) runs one lane at a time until it waits (barrier, collective)
 * or returns, then picks the next at random from the block's seed: now and then one warp
 * is favoured and runs ahead of the others up to its next barrier.
 *
 * Nothing here is thread-safe: an executor belongs to the thread running its block; the
 * pool of executors (executor.cpp) is. */
#ifndef PLUME_EMU_DEVICE_EXECUTOR_H
#define PLUME_EMU_DEVICE_EXECUTOR_H

#include <cstdint>

#include "emu/device/fiber.h"
#include "emu/emu.h"
#include "plm_emu/sync.h"

namespace plm_emu {

constexpr size_t kSharedArenaBytes = 256 * 1024;
constexpr int kSyncHistory = 64; /* completed collectives remembered per warp */
constexpr int kMaskMemory = 16;  /* distinct collective masks remembered per warp */
constexpr int kMaxStatics = 64;  /* static __shared__ declarations per kernel */
constexpr int kMaxGroups = 8;    /* collectives waiting at once in one warp */

enum class lane_state : uint8_t { runnable, at_barrier, at_collective, at_active_mask, exited };

struct executor;
struct block_counts;

struct lane {
  fiber context;
  executor *exec = nullptr;
  int linear = 0; /* x + y bx + z bx by */
  int warp = 0, lane_id = 0;
  lane_state state = lane_state::exited;
  /* At the barrier: its kind and predicate, and where the result goes. */
  barrier_kind barrier = barrier_sync;
  int barrier_predicate = 0, barrier_result = 0;
  /* At a warp collective: what it brought. */
  const collective_call *call = nullptr;
  /* At __activemask: its call site. */
  const void *active_site = nullptr;
};

/* A collective some of a warp's lanes wait in. */
struct warp_wait {
  unsigned mask = 0, arrived = 0;
  const collective_kind *kind = nullptr;
};

struct warp_state {
  unsigned exists = 0, exited = 0;
  unsigned at_active_mask = 0; /* lanes waiting in __activemask */
  warp_wait waits[kMaxGroups];
  int wait_count = 0;
  /* Lanes that may run, by lane index. */
  uint8_t runnable[kWarpSize];
  int runnable_count = 0;
  /* Completed collectives, by generation (sync_gen counts them): the lanes they joined. */
  uint32_t sync_gen = 0;
  unsigned sync_masks[kSyncHistory];
  /* The generation of the last collective that joined every lane of the warp (0: none),
   * which orders any two of its lanes' accesses before it: the shadow's common case. */
  uint32_t all_lanes_gen = 0;
  /* The last completion (its generation) of each distinct mask, for accesses older than
   * the history (groups of lanes syncing on their own masks fill it apart); past
   * kMaskMemory masks, masks_forgotten. */
  struct mask_completion {
    unsigned mask;
    uint32_t gen;
  } last_of_mask[kMaskMemory];
  int mask_count = 0;
  bool masks_forgotten = false;
};

struct static_shared_var {
  const void *tag;
  size_t offset, bytes;
  const char *name;
};

struct executor {
  int index = 0;
  fiber scheduler;
  lane *lanes = nullptr;            /* kMaxBlockThreads, from the global table */
  thread_view *views = nullptr;     /* the same lanes' views */
  unsigned char *shared = nullptr;  /* kSharedArenaBytes */

  /* The launch and the block being run. */
  const kernel_launch *launch = nullptr;
  const op_context *op = nullptr;
  /* emu/count's recorder while the launch is counted, else null (emu/count/counters.h);
   * beside op, which every access's hook reads too. */
  block_counts *counts = nullptr;
  uint3 block_idx{0, 0, 0};
  int threads = 0, warps = 0;
  warp_state warp[kMaxWarps];
  int at_barrier = 0, exited = 0;
  int running = -1; /* the lane running now, or -1 */
  int favourite = -1;
  int warps_runnable[kMaxWarps];
  int warps_runnable_count = 0;
  /* The block's random choices: splitmix64 (fast; the schedule needs no better). */
  struct splitmix {
    uint64_t state = 0;
    void seed(uint64_t s) { state = s; }
    uint64_t operator()() {
      uint64_t z = (state += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return z ^ (z >> 31);
    }
  } random;

  /* Shared memory: statics from 0 up to static_end, dynamic memory at the end of the arena
   * from dynamic_start; shared_limit is what the launch may use in all. */
  size_t dynamic_bytes = 0, dynamic_start = 0, static_end = 0, shared_limit = 0;
  static_shared_var statics[kMaxStatics];
  int static_count = 0;

  /* Phases (see the header) and the first phase of the current block. */
  uint32_t phase = 0, block_start_phase = 0;

  /* The block ended in a defect the caller asked to go on after (PLUME_EMU_ON_DEFECT). */
  bool abandoned = false;
  cudaError_t error = cudaSuccess;

  void *check_state = nullptr; /* emu/check's shadow of the shared arena */
};

/* Every executor's lanes, by fibre index (executor.cpp). */
extern lane g_lanes[kMaxLanes];

/* The lane of a fibre index (plm_emu/kernel.h's this_fibre_index), or null outside a
 * lane (kMaxLanes, or a lane of an executor not made yet). */
inline lane *lane_at(size_t fibre_index) {
  return fibre_index < kMaxLanes && g_lanes[fibre_index].exec ? &g_lanes[fibre_index] : nullptr;
}

/* Executors for the threads that run blocks (executor.cpp): borrowed for a grid, given
 * back after. Blocks until one is free (kMaxExecutors at most exist). */
executor *executor_borrow();
void executor_return(executor *exec);

/* Run one block of the executor's launch (block.cpp). */
void run_block(executor *exec, uint3 block_idx, uint64_t seed);

/* The running lane l has set its state (it waits, lets others run, or has stopped for
 * good: a trap): the block goes on without it until it may run again (block.cpp). */
void lane_stops(lane *l, bool for_good);

/* The 32-bit shuffle instructions a GPU issues for a completed collective of `kind`: a
 * shuffle of an n-byte value is ceil(n / 4) SHFL instructions (a double is two), whatever
 * lanes its mask names; a kind not marked `shuffles`, 0 (collectives.cpp). */
uint64_t shuffle_instructions(const collective_kind *kind, const warp_group &group);

/* Describe the running thread for reports: "kernel K (kernels/cuda/x.cu:12), block
 * (3,0,0), thread (17,0,0)". Empty outside a kernel. */
std::string describe_running_thread();
std::string describe_lane(const executor *exec, int linear);

/* The first address of the shared arenas and their span (all executors). */
extern unsigned char *g_shared_arenas;

}  // namespace plm_emu

#endif /* PLUME_EMU_DEVICE_EXECUTOR_H */

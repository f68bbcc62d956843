/* tests/emulated_lanes.h: the threads of a CUDA warp or block, emulated on the host, for
 * the tests that run a CUDA kernel's logic without a GPU (tests/test_*_cuda_logic.cpp).
 *
 * A LaneGroup runs one function on N lanes (a block; every 32 consecutive lanes a warp),
 * each a fibre of its own (the CUDA emulator's, emu/device/fiber.h), on the calling thread. A lane runs until it waits
 * at a barrier, of its warp (the exchanges of a warp's shuffle and ballot) or of the
 * whole group (a block's __syncthreads), or returns; then the scheduler resumes a lane
 * drawn at random among those that may run, now and then favouring one warp, which
 * then runs ahead of the others up to its next block barrier. A barrier lets its lanes
 * go on when all the lanes it covers have come to it. So warps run ahead of each other
 * between block barriers as on a GPU, and code that reads what another lane wrote
 * without a barrier between, or that lets a warp overwrite shared memory that another
 * warp still reads, sees varying orders. Exchanges go through per-lane slots: write, warp barrier,
 * read, warp barrier. Every lane must reach the same barriers (the code is warp- or block-uniform,
 * as the kernels require); when no lane may run and not every lane has returned, the lanes
 * diverged: reported, and fatal.
 *
 * Fibres rather than threads: the kernels' loops exchange values many times per pixel,
 * and a context switch costs far less than a barrier of 32 threads on a small machine,
 * so the tests can cover whole frames, and a seed makes a run repeatable: the emulator's
 * switch is about twenty instructions, where swapcontext's system call for the signal
 * mask took most of these suites' time. Link plume_test_fibers (tests/CMakeLists.txt).
 * Not thread-safe: one group runs at a time per thread. Not for ThreadSanitizer (it does
 * not follow the fibres' switches). */
#ifndef PLUME_TESTS_EMULATED_LANES_H
#define PLUME_TESTS_EMULATED_LANES_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "emu/device/fiber.h"

class LaneGroup {
 public:
  static constexpr int kWarp = 32;

  /* A group of `lanes` lanes (a multiple of 32, or fewer than 32: one warp); `seed`
   * picks the order in which they run. */
  LaneGroup(int lanes, uint64_t seed)
      : lanes_(lanes),
        fibers_((size_t)lanes),
        stacks_((size_t)lanes),
        state_((size_t)lanes),
        slots_((size_t)lanes * kSlotBytes),
        random_(seed) {}

  int size() const { return lanes_; }

  /* Run body(lane) on every lane; returns when every lane has returned. */
  void run(const std::function<void(int)> &body) {
    body_ = &body;
    LaneGroup *outer = current_;
    current_ = this;
    plm_emu::fiber_of_this_thread(&scheduler_);
    for (int l = 0; l < lanes_; l++) prepare_lane(l);
    std::vector<int> runnable((size_t)lanes_);
    for (int l = 0; l < lanes_; l++) runnable[(size_t)l] = l;
    std::vector<int> at_warp_barrier((size_t)(lanes_ + kWarp - 1) / kWarp, 0);
    int at_group_barrier = 0;
    int favourite = -1; /* a warp that runs ahead of the others, or none */
    while (!runnable.empty()) {
      const size_t pick = next_lane(runnable, &favourite);
      const int l = runnable[pick];
      runnable[pick] = runnable.back();
      runnable.pop_back();
      plm_emu::fiber_switch(&scheduler_, &fibers_[(size_t)l]);
      /* Lane l now waits or is done: release its barrier if it was the last to come. */
      const int first = l - l % kWarp, end = first + kWarp < lanes_ ? first + kWarp : lanes_;
      if (state_[(size_t)l] == kAtWarpBarrier &&
          ++at_warp_barrier[(size_t)(l / kWarp)] == end - first) {
        at_warp_barrier[(size_t)(l / kWarp)] = 0;
        for (int k = first; k < end; k++) release(k, runnable);
      } else if (state_[(size_t)l] == kAtGroupBarrier && ++at_group_barrier == lanes_) {
        at_group_barrier = 0;
        for (int k = 0; k < lanes_; k++) release(k, runnable);
        draw_favourite(runnable, &favourite);
      }
    }
    for (int l = 0; l < lanes_; l++)
      if (state_[(size_t)l] != kDone) diverged(l);
    current_ = outer;
  }

  /* Called by a lane's code: wait until every lane of its warp (warp = true) or of the
   * group has come to such a barrier. */
  void barrier(int lane, bool warp) {
    state_[(size_t)lane] = warp ? kAtWarpBarrier : kAtGroupBarrier;
    plm_emu::fiber_switch(&fibers_[(size_t)lane], &scheduler_);
  }

  /* The value that lane `from` of the caller's warp passed, in every lane of the warp
   * (all of them call it, as for a barrier). */
  template <class T>
  T exchange(int lane, const T &value, int from) {
    static_assert(sizeof(T) <= kSlotBytes, "a slot holds the value");
    std::memcpy(&slots_[(size_t)lane * kSlotBytes], &value, sizeof(T));
    barrier(lane, true);
    T out;
    std::memcpy(&out, &slots_[(size_t)(lane - lane % kWarp + from) * kSlotBytes], sizeof(T));
    barrier(lane, true);
    return out;
  }

  /* The values every lane of the caller's warp passed, in lane order. */
  template <class T>
  std::vector<T> gather(int lane, const T &value) {
    static_assert(sizeof(T) <= kSlotBytes, "a slot holds the value");
    std::memcpy(&slots_[(size_t)lane * kSlotBytes], &value, sizeof(T));
    barrier(lane, true);
    const int first = lane - lane % kWarp, count = lanes_ - first < kWarp ? lanes_ - first : kWarp;
    std::vector<T> all((size_t)count);
    for (int l = 0; l < count; l++)
      std::memcpy(&all[(size_t)l], &slots_[(size_t)(first + l) * kSlotBytes], sizeof(T));
    barrier(lane, true);
    return all;
  }

 private:
  enum State { kRunnable, kAtWarpBarrier, kAtGroupBarrier, kDone };
  static constexpr size_t kSlotBytes = 128;
  static constexpr size_t kStackBytes = 256 * 1024;

  /* A lane's fibre: the body, then back to the scheduler for good. Not instrumented by
   * AddressSanitizer: this frame never returns, and its red zones would stay poisoned on
   * the stack that the lane's next run (of this group) starts on. */
  __attribute__((no_sanitize("address"))) static void lane_main(void *lane_number) {
    plm_emu::fiber_started();
    const int lane = (int)(intptr_t)lane_number;
    LaneGroup *group = current_;
    (*group->body_)(lane);
    group->state_[(size_t)lane] = kDone;
    plm_emu::fiber_switch(&group->fibers_[(size_t)lane], &group->scheduler_, true);
    std::abort(); /* a finished lane is never switched to again */
  }

  /* Give lane `lane` a stack and a fibre that starts lane_main. */
  void prepare_lane(int lane) {
    std::unique_ptr<char[]> &stack = stacks_[(size_t)lane];
    if (!stack) stack.reset(new char[kStackBytes]); /* not zeroed: untouched pages stay unmapped */
    plm_emu::fiber_make(&fibers_[(size_t)lane], stack.get(), kStackBytes, lane_main,
                        (void *)(intptr_t)lane);
    state_[(size_t)lane] = kRunnable;
  }

  /* Which of the runnable lanes runs next: one of the favourite warp's while it has
   * any, else any. When the favourite has none left (it waits at a block barrier), or
   * the group's barrier has just let every lane go on, a new favourite is drawn: the
   * warp of a runnable lane (3 times in 4), which then runs ahead of the others up to
   * its next block barrier, as a warp may on a GPU, or none (every lane alike). */
  size_t next_lane(const std::vector<int> &runnable, int *favourite) {
    if (*favourite >= 0) {
      size_t candidates[kWarp], count = 0;
      for (size_t i = 0; i < runnable.size() && count < (size_t)kWarp; i++)
        if (runnable[i] / kWarp == *favourite) candidates[count++] = i;
      if (count > 0) return candidates[random_() % count];
      draw_favourite(runnable, favourite);
    }
    return (size_t)(random_() % runnable.size());
  }

  void draw_favourite(const std::vector<int> &runnable, int *favourite) {
    *favourite = random_() % 4 ? runnable[random_() % runnable.size()] / kWarp : -1;
  }

  void release(int lane, std::vector<int> &runnable) {
    state_[(size_t)lane] = kRunnable;
    runnable.push_back(lane);
  }

  [[noreturn]] void diverged(int lane) {
    std::fprintf(stderr,
                 "emulated lanes diverged: lane %d waits at a %s barrier that not all of "
                 "its lanes reach\n",
                 lane, state_[(size_t)lane] == kAtWarpBarrier ? "warp" : "block");
    std::abort();
  }

  static inline thread_local LaneGroup *current_ = nullptr;
  int lanes_;
  plm_emu::fiber scheduler_;
  std::vector<plm_emu::fiber> fibers_;
  std::vector<std::unique_ptr<char[]>> stacks_;
  std::vector<State> state_;
  std::vector<unsigned char> slots_;
  std::mt19937_64 random_;
  const std::function<void(int)> *body_ = nullptr;
};

/* A warp of 32 emulated lanes, as the kernels' Warp parameter sees it (the device's
 * counterpart is kernels/cuda/lanes.h): lane(), shuffle(value, from), ballot(p). The
 * warp may be one of several inside a LaneGroup that emulates a block: its lanes are
 * those of group lanes [32 w, 32 w + 32). */
struct EmulatedWarp {
  static constexpr int kLanes = 32;
  LaneGroup *group;
  int my_thread; /* the lane's index in the group */
  int lane() const { return my_thread % kLanes; }
  template <class T>
  T shuffle(const T &value, int from) const {
    return group->exchange(my_thread, value, from);
  }
  uint32_t ballot(bool p) const {
    const std::vector<char> all = group->gather(my_thread, (char)(p ? 1 : 0));
    uint32_t bits = 0;
    for (size_t l = 0; l < all.size(); l++) bits |= (uint32_t)(all[l] != 0) << l;
    return bits;
  }
};

/* A block of emulated threads, the whole LaneGroup, as the kernels' Block parameter sees
 * it (kernels/cuda/lanes.h): thread(), threads(), sync(). Its warps are EmulatedWarps of
 * the same group. */
struct EmulatedBlock {
  LaneGroup *group;
  int my_thread;
  int thread() const { return my_thread; }
  int threads() const { return group->size(); }
  void sync() const { group->barrier(my_thread, false); }
};

#endif /* PLUME_TESTS_EMULATED_LANES_H */

/* tests/emulated_lanes.h: the threads of a CUDA warp or block, emulated on the host, for
 * the tests that run a CUDA kernel's logic without a GPU (tests/test_*_cuda_logic.cpp).
 *
 * A LaneGroup runs one function on N lanes, each a fibre of its own (ucontext), on the
 * calling thread. The lanes run in lockstep between barriers: a round lets every lane
 * run until it reaches its next barrier (or returns), in an order shuffled afresh each
 * round, so that code which reads what another lane writes without a barrier between
 * sees the writes in varying orders, as it would on a GPU. Exchanges between lanes (a
 * warp's shuffle, ballot, reduction) go through per-lane slots between two barriers:
 * write, barrier, read, barrier. Every lane must reach the same barriers (the code is
 * warp- or block-uniform, as the kernels require); a lane that returns while another
 * still waits at a barrier, or the reverse, is a divergence, reported and fatal.
 *
 * Fibres rather than threads: the kernels' loops exchange values many times per pixel,
 * and a context switch costs far less than a barrier of 32 threads on a small machine,
 * so the tests can cover whole frames. Not thread-safe: one group runs at a time per
 * thread. Not for ThreadSanitizer (it does not follow ucontext switches). */
#ifndef PLUME_TESTS_EMULATED_LANES_H
#define PLUME_TESTS_EMULATED_LANES_H

#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

class LaneGroup {
 public:
  /* A group of `lanes` lanes; `seed` picks the orders of the rounds. */
  LaneGroup(int lanes, uint64_t seed)
      : lanes_(lanes),
        contexts_((size_t)lanes),
        stacks_((size_t)lanes),
        barriers_((size_t)lanes),
        done_((size_t)lanes),
        slots_((size_t)lanes * kSlotBytes),
        random_(seed) {}

  int size() const { return lanes_; }

  /* Run body(lane) on every lane; returns when every lane has returned. */
  void run(const std::function<void(int)> &body) {
    body_ = &body;
    LaneGroup *outer = current_;
    current_ = this;
    for (int l = 0; l < lanes_; l++) {
      std::vector<char> &stack = stacks_[(size_t)l];
      stack.resize(kStackBytes);
      getcontext(&contexts_[(size_t)l]);
      contexts_[(size_t)l].uc_stack.ss_sp = stack.data();
      contexts_[(size_t)l].uc_stack.ss_size = stack.size();
      contexts_[(size_t)l].uc_link = &scheduler_;
      makecontext(&contexts_[(size_t)l], (void (*)())lane_main, 1, l);
      barriers_[(size_t)l] = 0;
      done_[(size_t)l] = false;
    }
    std::vector<int> order((size_t)lanes_);
    for (int l = 0; l < lanes_; l++) order[(size_t)l] = l;
    for (int64_t round = 0;; round++) {
      std::shuffle(order.begin(), order.end(), random_);
      for (int l : order) swapcontext(&scheduler_, &contexts_[(size_t)l]);
      int finished = 0;
      for (int l = 0; l < lanes_; l++) {
        finished += done_[(size_t)l] ? 1 : 0;
        if (!done_[(size_t)l] && barriers_[(size_t)l] != round + 1) diverged(l, round);
      }
      if (finished == lanes_) break;
      if (finished > 0) diverged(-1, round);
    }
    current_ = outer;
  }

  /* Called by a lane's code: wait until every lane of the group has come here. */
  void barrier(int lane) {
    barriers_[(size_t)lane]++;
    swapcontext(&contexts_[(size_t)lane], &scheduler_);
  }

  /* The value that lane `from` passed, in every lane that calls it (all of them, as
   * for a barrier). */
  template <class T>
  T exchange(int lane, const T &value, int from) {
    static_assert(sizeof(T) <= kSlotBytes, "a slot holds the value");
    std::memcpy(&slots_[(size_t)lane * kSlotBytes], &value, sizeof(T));
    barrier(lane);
    T out;
    std::memcpy(&out, &slots_[(size_t)from * kSlotBytes], sizeof(T));
    barrier(lane);
    return out;
  }

  /* Every lane's value of [first, first + count), as each lane's code sees them. */
  template <class T>
  std::vector<T> gather(int lane, const T &value, int first, int count) {
    static_assert(sizeof(T) <= kSlotBytes, "a slot holds the value");
    std::memcpy(&slots_[(size_t)lane * kSlotBytes], &value, sizeof(T));
    barrier(lane);
    std::vector<T> all((size_t)count);
    for (int l = 0; l < count; l++)
      std::memcpy(&all[(size_t)l], &slots_[(size_t)(first + l) * kSlotBytes], sizeof(T));
    barrier(lane);
    return all;
  }

 private:
  static constexpr size_t kSlotBytes = 128;
  static constexpr size_t kStackBytes = 256 * 1024;

  static void lane_main(int lane) {
    LaneGroup *group = current_;
    (*group->body_)(lane);
    group->done_[(size_t)lane] = true;
  } /* returns to uc_link: the scheduler */

  [[noreturn]] void diverged(int lane, int64_t round) {
    std::fprintf(stderr,
                 "emulated lanes diverged in round %lld: lane %d stopped at barrier %lld while "
                 "others %s\n",
                 (long long)round, lane, lane >= 0 ? (long long)barriers_[(size_t)lane] : -1LL,
                 lane >= 0 ? "went on" : "returned");
    std::abort();
  }

  static inline thread_local LaneGroup *current_ = nullptr;
  int lanes_;
  ucontext_t scheduler_{};
  std::vector<ucontext_t> contexts_;
  std::vector<std::vector<char>> stacks_;
  std::vector<int64_t> barriers_;
  std::vector<bool> done_;
  std::vector<unsigned char> slots_;
  std::mt19937_64 random_;
  const std::function<void(int)> *body_ = nullptr;
};

/* A warp of 32 emulated lanes, as the kernels' Warp parameter sees it (the device's
 * counterpart is kernels/cuda/warp.h): lane(), shuffle(value, from), ballot(p). The
 * warp may be one of several inside a LaneGroup that emulates a block: its lanes are
 * those of group lanes [32 w, 32 w + 32). */
struct EmulatedWarp {
  static constexpr int kLanes = 32;
  LaneGroup *group;
  int my_thread; /* the lane's index in the group */
  int lane() const { return my_thread % kLanes; }
  template <class T>
  T shuffle(const T &value, int from) const {
    return group->exchange(my_thread, value, my_thread - lane() + from);
  }
  uint32_t ballot(bool p) const {
    const std::vector<char> all =
        group->gather(my_thread, (char)(p ? 1 : 0), my_thread - lane(), kLanes);
    uint32_t bits = 0;
    for (int l = 0; l < kLanes; l++) bits |= (uint32_t)(all[(size_t)l] != 0) << l;
    return bits;
  }
};

#endif /* PLUME_TESTS_EMULATED_LANES_H */

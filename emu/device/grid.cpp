/* emu/device/grid.cpp: a grid run block by block (run_grid, emu/emu.h).
 *
 * The blocks run in an order drawn from the seed and the launch (a bijection i -> (a i +
 * b) mod n with a prime to n: no table, however large the grid), on the calling thread's
 * executor or, with PLUME_EMU_BLOCK_THREADS = N, on N executors at once, each taking the
 * next block in that order. Each block's schedule is drawn from the seed, the launch and
 * the block's index, so a block runs the same way whichever executor runs it. */
#include <atomic>
#include <numeric>
#include <thread>
#include <vector>

#include "emu/config.h"
#include "emu/count/counters.h"
#include "emu/device/executor.h"
#include "emu/device/launch_internal.h"

namespace plm_emu {

namespace {

uint64_t gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

struct block_order {
  uint64_t count, multiplier, offset;
  uint64_t at(uint64_t i) const {
    return (uint64_t)(((unsigned __int128)multiplier * i + offset) % count);
  }
};

block_order draw_order(uint64_t count, uint64_t seed) {
  block_order order{count, 1, 0};
  if (count <= 1) return order;
  uint64_t a = mix_seed(seed, 1) % count;
  while (a == 0 || gcd(a, count) != 1) a = (a + 1) % count;
  order.multiplier = a;
  order.offset = mix_seed(seed, 2) % count;
  return order;
}

}  // namespace

cudaError_t run_grid(const kernel_launch &launch, const op_context &op) {
  const uint64_t blocks = (uint64_t)launch.grid.x * launch.grid.y * launch.grid.z;
  const uint64_t seed = mix_seed(config_seed(), op.id);
  const block_order order = draw_order(blocks, seed);
  const size_t shared_limit = launch_shared_limit(launch);
  std::atomic<uint64_t> next{0};
  std::atomic<int> error{cudaSuccess};
  std::atomic<bool> stop{false};
  launch_counts *counts = count_launch_begin(launch); /* null unless counting */

  auto work = [&] {
    executor *exec = executor_borrow();
    fiber_of_this_thread(&exec->scheduler);
    exec->launch = &launch;
    exec->op = &op;
    exec->shared_limit = shared_limit;
    exec->error = cudaSuccess;
    exec->counts = count_executor_start(counts);
    size_t static_bytes = 0;
    for (uint64_t i; !stop.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < blocks;) {
      const uint64_t b = order.at(i);
      const uint3 index{(unsigned)(b % launch.grid.x), (unsigned)((b / launch.grid.x) % launch.grid.y),
                        (unsigned)(b / ((uint64_t)launch.grid.x * launch.grid.y))};
      run_block(exec, index, mix_seed(seed, b + 3));
      if (exec->counts) count_block_end(exec);
      if (exec->static_end > static_bytes) static_bytes = exec->static_end;
      if (exec->error != cudaSuccess) {
        int none = cudaSuccess;
        error.compare_exchange_strong(none, exec->error);
        stop = true; /* a GPU's kernel ends at its first fault */
      }
    }
    launch_saw_static_shared(launch.function, static_bytes);
    count_executor_done(exec->counts);
    exec->counts = nullptr;
    exec->launch = nullptr;
    exec->op = nullptr;
    executor_return(exec);
  };

  const uint64_t helpers = std::min<uint64_t>((uint64_t)config_block_threads(), blocks) - 1;
  std::vector<std::thread> threads;
  for (uint64_t h = 0; h < helpers; h++) threads.emplace_back(work);
  work();
  for (std::thread &t : threads) t.join();
  count_launch_end(counts);
  return (cudaError_t)error.load();
}

}  // namespace plm_emu

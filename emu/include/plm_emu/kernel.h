/* emu/include/plm_emu/kernel.h: what a kernel compiled for the emulator sees of the
 * thread running it, of its launch and of its shared memory (part of cuda_emu.h).
 *
 * A kernel's thread is a fibre (emu/device/fiber.h) on a stack inside one reservation
 * that holds every fibre of every block the emulator runs at once. The running thread is
 * found from the stack pointer alone: no thread-local storage, a subtraction and a shift,
 * so threadIdx and its kin cost a few instructions. Code running outside a kernel (a
 * launcher on the host) that reads threadIdx is a defect, reported. */
#ifndef PLUME_EMU_KERNEL_H
#define PLUME_EMU_KERNEL_H

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>

#include "emu/emu.h"

namespace plm_emu {

/* The limits every part of the device side agrees on. */
constexpr int kWarpSize = 32;
constexpr int kMaxBlockThreads = 1024;
constexpr int kMaxWarps = kMaxBlockThreads / kWarpSize;
constexpr int kMaxExecutors = 16; /* blocks running at once (one per OS thread) */
constexpr unsigned kStackShift = 17;
constexpr size_t kStackBytes = size_t(1) << kStackShift; /* each fibre's stack */
constexpr size_t kMaxLanes = size_t(kMaxExecutors) * kMaxBlockThreads;

/* What a thread reads of itself: threadIdx and its block's blockIdx, blockDim, gridDim. */
struct thread_view {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};

/* Set once, when the emulator reserves the fibres' stacks (emu/device/executor.cpp). */
extern uintptr_t g_fibre_stacks;
extern thread_view g_thread_views[kMaxLanes];

[[noreturn]] void outside_kernel(const char *what);

/* The running kernel thread's index among all fibres, or kMaxLanes outside a kernel.
 * Not instrumented (the emulator's own bookkeeping, read at every threadIdx). */
__attribute__((no_sanitize_thread)) inline size_t this_fibre_index() {
  uintptr_t index = ((uintptr_t)__builtin_frame_address(0) - g_fibre_stacks) >> kStackShift;
  return index < kMaxLanes ? (size_t)index : kMaxLanes;
}

__attribute__((no_sanitize_thread)) inline const thread_view &this_thread(const char *what) {
  size_t index = this_fibre_index();
  if (__builtin_expect(index == kMaxLanes, 0)) outside_kernel(what);
  return g_thread_views[index];
}

/* The built-in variables, by value (read here, not in the instrumented kernel). */
__attribute__((no_sanitize_thread)) inline uint3 thread_idx() { return this_thread("threadIdx").thread_idx; }
__attribute__((no_sanitize_thread)) inline uint3 block_idx() { return this_thread("blockIdx").block_idx; }
__attribute__((no_sanitize_thread)) inline dim3 block_dim() { return this_thread("blockDim").block_dim; }
__attribute__((no_sanitize_thread)) inline dim3 grid_dim() { return this_thread("gridDim").grid_dim; }

/* ---- shared memory ------------------------------------------------------------------ */

/* The block's dynamic shared memory (extern __shared__), aligned to at least `align`. */
void *dynamic_shared(size_t align);

/* The block's place for one static __shared__ declaration, found by `tag` (a static of
 * the declaration's own): every thread of the block gets the same bytes, poisoned when
 * the block starts. `name` names it in reports. */
void *static_shared_bytes(const void *tag, size_t bytes, size_t align, const char *name);

template <class T>
T &static_shared(const void *tag, const char *name, size_t align) {
  size_t a = align > alignof(T) ? align : alignof(T);
  return *static_cast<T *>(static_shared_bytes(tag, sizeof(T), a, name));
}

/* ---- launches -------------------------------------------------------------------------- */

/* Where a launch is written (emu/cu2cpp.pl fills it). */
struct launch_site {
  const char *kernel;
  const void *function;
  const char *where;
};

struct launch_config {
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
};

inline launch_config config(dim3 grid, dim3 block, size_t shared = 0, cudaStream_t stream = 0) {
  return launch_config{grid, block, shared, stream};
}

template <class F, class Tuple>
struct bound_kernel final : kernel_body {
  bound_kernel(F f, Tuple args) : f_(std::move(f)), args_(std::move(args)) {}
  void run_thread() const override { std::apply(f_, args_); }
  F f_;
  Tuple args_;
};

/* Check the launch, then enqueue it (emu/device/launch.cpp): the error, if any, goes to
 * the calling thread's last error, as a launch's does. */
void submit_launch(const launch_site &site, const launch_config &config,
                   std::shared_ptr<const kernel_body> body);

/* A launch as emu/cu2cpp.pl writes it: the arguments are copied now, each thread gets
 * its own copies when it runs (a kernel's parameters are its own to change). */
template <class F, class... Args>
void launch(const launch_site &site, const launch_config &config, F kernel, Args &&...args) {
  typedef std::tuple<std::decay_t<Args>...> arguments;
  submit_launch(site, config,
                std::make_shared<bound_kernel<F, arguments>>(std::move(kernel),
                                                            arguments(std::forward<Args>(args)...)));
}

}  // namespace plm_emu

#define threadIdx (::plm_emu::thread_idx())
#define blockIdx (::plm_emu::block_idx())
#define blockDim (::plm_emu::block_dim())
#define gridDim (::plm_emu::grid_dim())
static constexpr int warpSize = 32;

#endif /* PLUME_EMU_KERNEL_H */

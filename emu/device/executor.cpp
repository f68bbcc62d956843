/* emu/device/executor.cpp: the executors, their stacks and shared arenas
 * (emu/device/executor.h). */
#include "emu/device/executor.h"

#include <sys/mman.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "emu/check/check.h"

namespace plm_emu {

uintptr_t g_fibre_stacks = 0;
thread_view g_thread_views[kMaxLanes];
unsigned char *g_shared_arenas = nullptr;

lane g_lanes[kMaxLanes];

namespace {

std::mutex pool_lock;
std::condition_variable pool_returned;
executor *pool[kMaxExecutors];
int pool_made = 0;
std::vector<executor *> pool_free;

[[noreturn]] void fatal(const char *what) {
  std::fprintf(stderr, "plume cuda emulator: %s\n", what);
  std::abort();
}

/* The reservations, once: every fibre stack and every shared arena (and one arena more,
 * unmapped, past the last, so running off the end of one is seen as shared memory). */
void reserve() {
  static std::once_flag once;
  std::call_once(once, [] {
    void *stacks = mmap(nullptr, kMaxLanes * kStackBytes, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stacks == MAP_FAILED) fatal("cannot reserve the fibres' stacks");
    /* Huge pages where the kernel gives them: a block's switches touch the top of a
     * stack every 128 KiB, one TLB entry each with 4 KiB pages. */
    (void)madvise(stacks, kMaxLanes * kStackBytes, MADV_HUGEPAGE);
    g_fibre_stacks = (uintptr_t)stacks;
    void *arenas = mmap(nullptr, (kMaxExecutors + 1) * kSharedArenaBytes, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (arenas == MAP_FAILED) fatal("cannot reserve the shared memory arenas");
    g_shared_arenas = (unsigned char *)arenas;
  });
}

executor *make_executor(int index) {
  reserve();
  executor *exec = new executor();
  exec->index = index;
  exec->lanes = &g_lanes[(size_t)index * kMaxBlockThreads];
  exec->views = &g_thread_views[(size_t)index * kMaxBlockThreads];
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  char *stacks = (char *)g_fibre_stacks + (size_t)index * kMaxBlockThreads * kStackBytes;
  if (mprotect(stacks, kMaxBlockThreads * kStackBytes, PROT_READ | PROT_WRITE) != 0)
    fatal("cannot map the fibres' stacks");
  for (int l = 0; l < kMaxBlockThreads; l++) /* a guard page under each stack */
    if (mprotect(stacks + (size_t)l * kStackBytes, page, PROT_NONE) != 0)
      fatal("cannot protect a fibre stack's guard page");
  exec->shared = g_shared_arenas + (size_t)index * kSharedArenaBytes;
  if (mprotect(exec->shared, kSharedArenaBytes, PROT_READ | PROT_WRITE) != 0)
    fatal("cannot map a shared memory arena");
  for (int l = 0; l < kMaxBlockThreads; l++) exec->lanes[l].exec = exec;
  exec->check_state = shared_shadow_make();
  return exec;
}

}  // namespace

executor *executor_borrow() {
  std::unique_lock<std::mutex> hold(pool_lock);
  for (;;) {
    if (!pool_free.empty()) {
      executor *exec = pool_free.back();
      pool_free.pop_back();
      return exec;
    }
    if (pool_made < kMaxExecutors) {
      executor *exec = make_executor(pool_made);
      pool[pool_made++] = exec;
      return exec;
    }
    pool_returned.wait(hold);
  }
}

void executor_return(executor *exec) {
  std::lock_guard<std::mutex> hold(pool_lock);
  pool_free.push_back(exec);
  pool_returned.notify_one();
}

std::string describe_lane(const executor *exec, int linear) {
  if (!exec || !exec->launch) return "";
  const thread_view &v = exec->views[linear];
  char text[512];
  std::snprintf(text, sizeof text,
                "kernel %s (launched at %s), block (%u,%u,%u) of (%u,%u,%u), thread (%u,%u,%u)",
                exec->launch->name, exec->launch->site, v.block_idx.x, v.block_idx.y,
                v.block_idx.z, v.grid_dim.x, v.grid_dim.y, v.grid_dim.z, v.thread_idx.x,
                v.thread_idx.y, v.thread_idx.z);
  return text;
}

std::string describe_running_thread() {
  size_t index = this_fibre_index();
  lane *l = lane_at(index);
  if (!l || !l->exec->launch || l->exec->running != l->linear) return "";
  return describe_lane(l->exec, l->linear);
}

void outside_kernel(const char *what) {
  report_defect(std::string(what) + " read outside a kernel",
                "a built-in variable of CUDA was read by code that is not running as a "
                "kernel's thread (host code, or a thread the emulator does not know)");
  std::abort();
}

}  // namespace plm_emu

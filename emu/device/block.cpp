/* emu/device/block.cpp: one block run to its end: the scheduler of its threads, the
 * barrier, warp collectives and shared memory (emu/device/executor.h). */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "emu/check/check.h"
#include "emu/count/counters.h"
#include "emu/device/executor.h"

namespace plm_emu {

namespace {

constexpr unsigned kAllLanes = 0xffffffffu;

/* "lanes 0-3, 8" for a mask. */
std::string lanes_text(unsigned mask) {
  std::string text;
  for (int l = 0; l < kWarpSize; l++) {
    if (!(mask & (1u << l))) continue;
    int end = l;
    while (end + 1 < kWarpSize && (mask & (1u << (end + 1)))) end++;
    if (!text.empty()) text += ", ";
    text += std::to_string(l);
    if (end > l) text += "-" + std::to_string(end);
    l = end;
  }
  return text.empty() ? "none" : text;
}

std::string warp_text(const executor *exec, int warp) {
  char text[160];
  std::snprintf(text, sizeof text, "warp %d (threads %d-%d) of kernel %s (launched at %s), block (%u,%u,%u)",
                warp, warp * kWarpSize, std::min((warp + 1) * kWarpSize, exec->threads) - 1,
                exec->launch->name, exec->launch->site, exec->block_idx.x, exec->block_idx.y,
                exec->block_idx.z);
  return text;
}

lane *running_lane(const char *what) {
  lane *l = lane_at(this_fibre_index());
  if (!l || l->exec->running != l->linear) outside_kernel(what);
  return l;
}

void hand_over(executor *exec, lane *from, bool from_is_done);

__attribute__((no_sanitize("address"))) void lane_entry(void *arg) {
  fiber_started();
  lane *l = static_cast<lane *>(arg);
  l->exec->launch->body->run_thread();
  l->state = lane_state::exited;
  hand_over(l->exec, l, true);
  std::abort(); /* an exited lane is never switched to again */
}

void make_runnable(executor *exec, int linear) {
  lane &l = exec->lanes[linear];
  l.state = lane_state::runnable;
  warp_state &w = exec->warp[l.warp];
  if (w.runnable_count == 0) exec->warps_runnable[exec->warps_runnable_count++] = l.warp;
  w.runnable[w.runnable_count++] = (uint8_t)l.lane_id;
}

/* The warp has no lane that can run: the lanes at __activemask learn who is with them
 * (those at the same call site), and go on. */
void settle_active_masks(executor *exec, int warp) {
  warp_state &w = exec->warp[warp];
  if (!w.at_active_mask || w.runnable_count) return;
  unsigned left = w.at_active_mask;
  while (left) {
    const int first = __builtin_ctz(left);
    const void *site = exec->lanes[warp * kWarpSize + first].active_site;
    unsigned group = 0;
    for (unsigned m = left; m; m &= m - 1) {
      const int l = __builtin_ctz(m);
      if (exec->lanes[warp * kWarpSize + l].active_site == site) group |= 1u << l;
    }
    left &= ~group;
    for (unsigned m = group; m; m &= m - 1) exec->lanes[warp * kWarpSize + __builtin_ctz(m)].barrier_result = (int)group;
  }
  const unsigned released = w.at_active_mask;
  w.at_active_mask = 0;
  for (unsigned m = released; m; m &= m - 1) make_runnable(exec, warp * kWarpSize + __builtin_ctz(m));
}

/* A defect of the block's structure: reported; the block cannot go on. */
void block_defect(executor *exec, const std::string &title, const std::string &detail) {
  report_defect(title, detail);
  exec->abandoned = true;
  if (exec->error == cudaSuccess) exec->error = cudaErrorLaunchFailure;
}

void release_barrier(executor *exec) {
  int count = 0;
  barrier_kind kind = exec->lanes[0].barrier;
  for (int t = 0; t < exec->threads; t++) {
    count += exec->lanes[t].barrier_predicate != 0;
    if (exec->lanes[t].barrier != kind) {
      static const char *const names[] = {"__syncthreads", "__syncthreads_count",
                                          "__syncthreads_and", "__syncthreads_or"};
      block_defect(exec, "threads of one block wait at different barriers",
                   describe_lane(exec, 0) + " waits in " + names[kind] + ", " +
                       describe_lane(exec, t) + " in " + names[exec->lanes[t].barrier]);
      return;
    }
  }
  int result = 0;
  switch (kind) {
    case barrier_sync: break;
    case barrier_count: result = count; break;
    case barrier_and: result = count == exec->threads; break;
    case barrier_or: result = count != 0; break;
  }
  exec->phase++;
  exec->at_barrier = 0;
  if (exec->counts) count_barrier(exec);
  for (int t = 0; t < exec->threads; t++) {
    exec->lanes[t].barrier_result = result;
    make_runnable(exec, t);
  }
}

void complete_wait(executor *exec, int warp, int wait_index) {
  warp_state &w = exec->warp[warp];
  warp_wait done = w.waits[wait_index];
  w.waits[wait_index] = w.waits[--w.wait_count];
  warp_group group;
  group.mask = done.mask;
  group.context = exec;
  group.warp = warp;
  for (int l = 0; l < kWarpSize; l++)
    group.calls[l] = (done.mask & (1u << l)) ? exec->lanes[warp * kWarpSize + l].call : nullptr;
  done.kind->complete(group);
  if (exec->counts) count_collective(exec, warp, done.mask, shuffle_instructions(done.kind, group));
  w.sync_gen++;
  w.sync_masks[w.sync_gen % kSyncHistory] = done.mask;
  if ((done.mask & w.exists) == w.exists) w.all_lanes_gen = w.sync_gen;
  int m = 0;
  while (m < w.mask_count && w.last_of_mask[m].mask != done.mask) m++;
  if (m < w.mask_count) w.last_of_mask[m].gen = w.sync_gen;
  else if (w.mask_count < kMaskMemory) w.last_of_mask[w.mask_count++] = {done.mask, w.sync_gen};
  else w.masks_forgotten = true;
  for (int l = 0; l < kWarpSize; l++)
    if (done.mask & (1u << l)) make_runnable(exec, warp * kWarpSize + l);
}

void arrive_at_collective(executor *exec, lane &l) {
  warp_state &w = exec->warp[l.warp];
  const collective_call &call = *l.call;
  const unsigned bit = 1u << l.lane_id;
  auto who = [&] { return describe_lane(exec, l.linear); }; /* for a report only */
  if (!(call.mask & bit)) {
    char detail[96];
    std::snprintf(detail, sizeof detail, "mask 0x%08x does not name the calling lane %d",
                  call.mask, l.lane_id);
    block_defect(exec, std::string(call.kind->name) + " called by a lane its mask leaves out",
                 who() + ": " + detail);
    return;
  }
  if (call.mask & ~w.exists) {
    char detail[160];
    std::snprintf(detail, sizeof detail,
                  "mask 0x%08x names lanes %s, which the block does not have (it has %d threads)",
                  call.mask, lanes_text(call.mask & ~w.exists).c_str(), exec->threads);
    block_defect(exec, std::string(call.kind->name) + " names lanes that do not exist",
                 who() + ": " + detail);
    return;
  }
  if (call.mask & w.exited) {
    char detail[160];
    std::snprintf(detail, sizeof detail, "mask 0x%08x names lanes %s, which have returned",
                  call.mask, lanes_text(call.mask & w.exited).c_str());
    block_defect(exec, "a warp collective names a lane that returned", who() + ": " + detail);
    return;
  }
  for (int i = 0; i < w.wait_count; i++) {
    warp_wait &wait = w.waits[i];
    if (wait.mask == call.mask) {
      if (wait.kind != call.kind) {
        block_defect(exec, "lanes of one mask in different warp collectives",
                     warp_text(exec, l.warp) + ": lanes " + lanes_text(wait.arrived) + " wait in " +
                         wait.kind->name + ", lane " + std::to_string(l.lane_id) + " came to " +
                         call.kind->name + " (mask 0x" + [&] {
                           char hex[16];
                           std::snprintf(hex, sizeof hex, "%08x", call.mask);
                           return std::string(hex);
                         }() + ")");
        return;
      }
      wait.arrived |= bit;
      if (wait.arrived == wait.mask) complete_wait(exec, l.warp, i);
      return;
    }
  }
  if (w.wait_count == kMaxGroups) {
    block_defect(exec, "too many warp collectives waiting at once",
                 warp_text(exec, l.warp) + ": more than 8 groups of lanes wait in collectives");
    return;
  }
  w.waits[w.wait_count++] = warp_wait{call.mask, bit, call.kind};
  if (call.mask == bit) complete_wait(exec, l.warp, w.wait_count - 1);
}

void lane_exited(executor *exec, lane &l) {
  warp_state &w = exec->warp[l.warp];
  const unsigned bit = 1u << l.lane_id;
  w.exited |= bit;
  exec->exited++;
  for (int i = 0; i < w.wait_count; i++) {
    if (w.waits[i].mask & bit) {
      char detail[200];
      std::snprintf(detail, sizeof detail,
                    ": lane %d returned while lanes %s wait for it in %s (mask 0x%08x)",
                    l.lane_id, lanes_text(w.waits[i].arrived).c_str(), w.waits[i].kind->name,
                    w.waits[i].mask);
      block_defect(exec, "a warp collective names a lane that returned",
                   warp_text(exec, l.warp) + detail);
      return;
    }
  }
}

/* No lane can run and the block is not done: say who waits for what. */
void report_stuck(executor *exec) {
  std::string detail;
  if (exec->at_barrier > 0 && exec->at_barrier + exec->exited == exec->threads) {
    detail = std::to_string(exec->at_barrier) + " of the block's " + std::to_string(exec->threads) +
             " threads wait at __syncthreads, and " + std::to_string(exec->exited) +
             " returned before reaching it (a barrier must be reached by every thread of "
             "the block)";
    for (int warp = 0; warp < exec->warps; warp++)
      if (exec->warp[warp].exited)
        detail += "\n  " + warp_text(exec, warp) + ": lanes " + lanes_text(exec->warp[warp].exited) +
                  " returned";
    block_defect(exec, "__syncthreads reached by part of the block", detail);
    return;
  }
  for (int warp = 0; warp < exec->warps; warp++) {
    const warp_state &w = exec->warp[warp];
    unsigned at_barrier = 0;
    for (int l = 0; l < kWarpSize && warp * kWarpSize + l < exec->threads; l++)
      if (exec->lanes[warp * kWarpSize + l].state == lane_state::at_barrier) at_barrier |= 1u << l;
    std::string line = "\n  " + warp_text(exec, warp) + ":";
    if (at_barrier) line += " lanes " + lanes_text(at_barrier) + " at __syncthreads;";
    if (w.exited) line += " lanes " + lanes_text(w.exited) + " returned;";
    for (int i = 0; i < w.wait_count; i++) {
      char text[160];
      std::snprintf(text, sizeof text, " lanes %s in %s (mask 0x%08x) waiting for lanes %s;",
                    lanes_text(w.waits[i].arrived).c_str(), w.waits[i].kind->name, w.waits[i].mask,
                    lanes_text(w.waits[i].mask & ~w.waits[i].arrived).c_str());
      line += text;
    }
    detail += line;
  }
  block_defect(exec, "the threads of a block wait for each other for ever (divergent barrier or collective)",
               "no thread can go on:" + detail);
}

/* A number below n (> 0) from a random 64-bit one, by multiplying (no division). */
inline int pick_below(uint64_t random, int n) {
  return (int)(((random >> 32) * (uint64_t)n) >> 32);
}

int pick_lane(executor *exec) {
  int warp;
  if (exec->favourite >= 0 && exec->warp[exec->favourite].runnable_count > 0) {
    warp = exec->favourite;
  } else {
    warp = exec->warps_runnable[pick_below(exec->random(), exec->warps_runnable_count)];
    exec->favourite = exec->random() % 4 == 0 ? warp : -1;
  }
  warp_state &w = exec->warp[warp];
  const int pick = pick_below(exec->random(), w.runnable_count);
  const int lane_id = w.runnable[pick];
  w.runnable[pick] = w.runnable[--w.runnable_count];
  if (w.runnable_count == 0) {
    for (int i = 0; i < exec->warps_runnable_count; i++) {
      if (exec->warps_runnable[i] == warp) {
        exec->warps_runnable[i] = exec->warps_runnable[--exec->warps_runnable_count];
        break;
      }
    }
  }
  return warp * kWarpSize + lane_id;
}

void start_block(executor *exec, uint3 block_idx, uint64_t seed) {
  const kernel_launch &launch = *exec->launch;
  exec->block_idx = block_idx;
  exec->random.seed(seed);
  exec->threads = (int)(launch.block.x * launch.block.y * launch.block.z);
  exec->warps = (exec->threads + kWarpSize - 1) / kWarpSize;
  exec->at_barrier = exec->exited = 0;
  exec->running = -1;
  exec->favourite = -1;
  exec->warps_runnable_count = 0;
  exec->abandoned = false;
  exec->phase++;
  exec->block_start_phase = exec->phase;
  /* Shared memory: statics from the start of the arena, dynamic at its end. */
  exec->static_count = 0;
  exec->static_end = 0;
  exec->dynamic_bytes = launch.dynamic_shared;
  exec->dynamic_start = (kSharedArenaBytes - launch.dynamic_shared) & ~(size_t)255;
  memset(exec->shared + exec->dynamic_start, 0xCD, kSharedArenaBytes - exec->dynamic_start);
  for (int warp = 0; warp < exec->warps; warp++) {
    warp_state &w = exec->warp[warp];
    const int lanes = std::min(kWarpSize, exec->threads - warp * kWarpSize);
    w.exists = lanes == kWarpSize ? kAllLanes : (1u << lanes) - 1u;
    w.exited = 0;
    w.wait_count = 0;
    w.runnable_count = 0;
    w.sync_gen = 0;
    w.all_lanes_gen = 0;
    w.mask_count = 0;
    w.masks_forgotten = false;
    w.at_active_mask = 0;
  }
  char *stacks = (char *)g_fibre_stacks + (size_t)exec->index * kMaxBlockThreads * kStackBytes;
  for (int t = 0; t < exec->threads; t++) {
    lane &l = exec->lanes[t];
    l.linear = t;
    l.warp = t / kWarpSize;
    l.lane_id = t % kWarpSize;
    l.call = nullptr;
    l.barrier = barrier_sync;
    l.barrier_predicate = l.barrier_result = 0;
    thread_view &v = exec->views[t];
    v.thread_idx = uint3{t % launch.block.x, (t / launch.block.x) % launch.block.y,
                         t / (launch.block.x * launch.block.y)};
    v.block_idx = block_idx;
    v.block_dim = launch.block;
    v.grid_dim = launch.grid;
    fiber_make(&l.context, stacks + (size_t)t * kStackBytes, kStackBytes, lane_entry, &l);
    make_runnable(exec, t);
  }
}

/* The running lane `from` stopped (it waits, lets others run, or returned): account for
 * it, then run the next lane straight from here, one switch and not two through the
 * scheduler, or nothing at all when the draw picks `from` itself. Back to the scheduler
 * (run_block) when no lane can run or the block was abandoned. Runs on from's stack. */
void hand_over(executor *exec, lane *from, bool from_is_done) {
  exec->running = -1;
  if (exec->abandoned) { /* a defect or a trap ended the block */
    fiber_switch(&from->context, &exec->scheduler, from_is_done);
    return;
  }
  switch (from->state) {
    case lane_state::at_active_mask: exec->warp[from->warp].at_active_mask |= 1u << from->lane_id; break;
    case lane_state::exited: lane_exited(exec, *from); break;
    case lane_state::at_barrier:
      if (++exec->at_barrier == exec->threads) release_barrier(exec);
      break;
    case lane_state::at_collective: arrive_at_collective(exec, *from); break;
    case lane_state::runnable: /* it lets others run (__nanosleep): no warp is favoured now */
      exec->favourite = -1;
      make_runnable(exec, from->linear);
      break;
  }
  settle_active_masks(exec, from->warp);
  fiber *to = &exec->scheduler;
  if (!exec->abandoned && exec->warps_runnable_count > 0) {
    const int t = pick_lane(exec);
    exec->running = t;
    if (t == from->linear) return; /* itself: go on without a switch */
    to = &exec->lanes[t].context;
  }
  fiber_switch(&from->context, to, from_is_done);
}

/* Back from waiting: the lane runs again (hand_over, run on another lane, chose it). */
void wait_here(lane *l) { hand_over(l->exec, l, false); }

}  // namespace

void run_block(executor *exec, uint3 block_idx, uint64_t seed) {
  start_block(exec, block_idx, seed);
  /* The lanes hand over to each other; control comes back here when none can run. */
  while (!exec->abandoned) {
    if (exec->warps_runnable_count == 0) {
      if (exec->exited == exec->threads) break;
      report_stuck(exec);
      break;
    }
    const int t = pick_lane(exec);
    exec->running = t;
    fiber_switch(&exec->scheduler, &exec->lanes[t].context);
  }
  exec->running = -1;
  if (exec->abandoned) /* lanes stopped mid-way: their stacks need cleaning before reuse */
    for (int t = 0; t < exec->threads; t++) exec->lanes[t].context.dirty = true;
}

void lane_stops(lane *l, bool for_good) { hand_over(l->exec, l, for_good); }

/* ---- what the kernels' threads call (plm_emu/kernel.h, plm_emu/sync.h) ---------------- */

int block_barrier(barrier_kind kind, int predicate) {
  lane *l = running_lane("__syncthreads");
  l->barrier = kind;
  l->barrier_predicate = predicate;
  l->state = lane_state::at_barrier;
  wait_here(l);
  return l->barrier_result;
}

void warp_collective(const collective_call &call) {
  lane *l = running_lane(call.kind->name);
  l->call = &call;
  l->state = lane_state::at_collective;
  wait_here(l);
  l->call = nullptr;
}

__attribute__((noinline)) unsigned warp_active_mask() {
  lane *l = running_lane("__activemask");
  l->active_site = __builtin_return_address(0);
  l->state = lane_state::at_active_mask;
  wait_here(l);
  return (unsigned)l->barrier_result;
}

void *dynamic_shared(size_t align) {
  lane *l = running_lane("extern __shared__");
  executor *exec = l->exec;
  void *start = exec->shared + exec->dynamic_start;
  if (align > 256 && (uintptr_t)start % align != 0)
    report_defect("dynamic shared memory asked for an alignment past 256 bytes",
                  describe_lane(exec, l->linear) + ": extern __shared__ __align__(" +
                      std::to_string(align) + ")");
  return start;
}

void *static_shared_bytes(const void *tag, size_t bytes, size_t align, const char *name) {
  lane *l = running_lane("__shared__");
  executor *exec = l->exec;
  for (int i = 0; i < exec->static_count; i++)
    if (exec->statics[i].tag == tag) return exec->shared + exec->statics[i].offset;
  size_t offset = (exec->static_end + align - 1) / align * align;
  size_t end = offset + bytes;
  if (exec->static_count == kMaxStatics || end > exec->dynamic_start ||
      end + exec->dynamic_bytes > exec->shared_limit) {
    char detail[320];
    std::snprintf(detail, sizeof detail,
                  ": %zu bytes of static shared memory (with %s, %zu bytes) and %zu of dynamic "
                  "shared memory are more than the %zu a block of this launch may use (48 KiB "
                  "without cudaFuncAttributeMaxDynamicSharedMemorySize, 227 KiB with it)",
                  end, name, bytes, exec->dynamic_bytes, exec->shared_limit);
    block_defect(exec, "a block uses more shared memory than the launch allows",
                 describe_lane(exec, l->linear) + detail);
    /* Not reached unless the caller goes on after defects: give the lane memory that is
     * its own to scribble on, and end the block at its next wait. */
    static thread_local unsigned char spill[kSharedArenaBytes];
    return spill;
  }
  memset(exec->shared + offset, 0xCD, bytes);
  exec->statics[exec->static_count++] = static_shared_var{tag, offset, bytes, name};
  exec->static_end = end;
  return exec->shared + offset;
}

}  // namespace plm_emu

/* emu/device/collectives.cpp: what each warp collective computes once its lanes have all
 * come (the kinds of plm_emu/sync.h), and the device's traps and clocks. Each completion
 * runs on the scheduler, with every lane of the group waiting: it reads what each lane
 * brought and writes each lane's result. */
#include <time.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "emu/check/check.h"
#include "emu/device/executor.h"
#include "mma.h"

namespace plm_emu {

namespace {

std::string who(const warp_group &g, int lane_id) {
  return describe_lane(static_cast<const executor *>(g.context), g.warp * kWarpSize + lane_id);
}

void group_defect(const warp_group &g, const std::string &title, const std::string &detail) {
  executor *exec = static_cast<executor *>(g.context);
  report_defect(title, detail);
  exec->abandoned = true;
  if (exec->error == cudaSuccess) exec->error = cudaErrorLaunchFailure;
}

bool same_sizes(const warp_group &g, const char *name) {
  size_t bytes = 0;
  for (int l = 0; l < kWarpSize; l++) {
    if (!g.calls[l]) continue;
    if (bytes && g.calls[l]->bytes != bytes) {
      group_defect(g, std::string(name) + " with values of different sizes",
                   who(g, l) + " brings " + std::to_string(g.calls[l]->bytes) +
                       " bytes where another lane of its group brings " + std::to_string(bytes));
      return false;
    }
    bytes = g.calls[l]->bytes;
  }
  return true;
}

enum shuffle_mode { by_index, up, down, by_xor };

/* The lane whose value lane `l` gets (l itself where CUDA returns the lane's own). */
int shuffle_source(shuffle_mode mode, int l, int a, int width) {
  const int segment = l & ~(width - 1), end = segment + width;
  switch (mode) {
    case by_index: return segment + (a & (width - 1));
    case up: return (l - segment) >= a ? l - a : l;
    case down: return (l - segment) + a < width ? l + a : l;
    case by_xor: {
      int from = l ^ a;
      return from < end ? from : l; /* later segments are out of reach; earlier ones not */
    }
  }
  return l;
}

template <shuffle_mode Mode>
void complete_shuffle(const warp_group &g) {
  static const char *const names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                                      "__shfl_xor_sync"};
  const char *name = names[Mode];
  if (!same_sizes(g, name)) return;
  for (int l = 0; l < kWarpSize; l++) {
    const collective_call *c = g.calls[l];
    if (!c) continue;
    const int width = c->b;
    if (width < 1 || width > kWarpSize || (width & (width - 1))) {
      group_defect(g, std::string(name) + " with a width that is not a power of two up to 32",
                   who(g, l) + ": width " + std::to_string(width));
      return;
    }
    const int from = shuffle_source(Mode, l, c->a, width);
    if (from < 0 || from >= kWarpSize || !(g.mask & (1u << from))) {
      char detail[160];
      std::snprintf(detail, sizeof detail, ": reads lane %d, which its mask 0x%08x does not name "
                    "(the value is undefined on a GPU)", from, g.mask);
      group_defect(g, std::string(name) + " reads a lane outside its mask", who(g, l) + detail);
      return;
    }
    memcpy(c->out, g.calls[from]->in, c->bytes);
  }
}

void complete_nothing(const warp_group &) {}

void complete_ballot(const warp_group &g) {
  unsigned bits = 0;
  for (int l = 0; l < kWarpSize; l++)
    if (g.calls[l] && *static_cast<const int *>(g.calls[l]->in)) bits |= 1u << l;
  for (int l = 0; l < kWarpSize; l++)
    if (g.calls[l]) *static_cast<unsigned *>(g.calls[l]->out) = bits;
}

bool same_value(const collective_call *a, const collective_call *b) {
  return memcmp(a->in, b->in, a->bytes) == 0;
}

void complete_match_any(const warp_group &g) {
  if (!same_sizes(g, "__match_any_sync")) return;
  for (int l = 0; l < kWarpSize; l++) {
    if (!g.calls[l]) continue;
    unsigned bits = 0;
    for (int k = 0; k < kWarpSize; k++)
      if (g.calls[k] && same_value(g.calls[l], g.calls[k])) bits |= 1u << k;
    *static_cast<unsigned *>(g.calls[l]->out) = bits;
  }
}

void complete_match_all(const warp_group &g) {
  if (!same_sizes(g, "__match_all_sync")) return;
  const collective_call *first = nullptr;
  bool all = true;
  for (int l = 0; l < kWarpSize; l++) {
    if (!g.calls[l]) continue;
    if (!first) first = g.calls[l];
    else if (!same_value(first, g.calls[l])) all = false;
  }
  for (int l = 0; l < kWarpSize; l++) {
    if (!g.calls[l]) continue;
    unsigned *out = static_cast<unsigned *>(g.calls[l]->out);
    out[0] = all ? g.mask : 0u;
    out[1] = all ? 1u : 0u;
  }
}

void complete_reduce(const warp_group &g) {
  bool first = true;
  unsigned acc = 0;
  int op = -1;
  for (int l = 0; l < kWarpSize; l++) {
    const collective_call *c = g.calls[l];
    if (!c) continue;
    const unsigned v = *static_cast<const unsigned *>(c->in);
    if (op >= 0 && c->a != op) {
      group_defect(g, "lanes of one mask in different __reduce_*_sync calls", who(g, l));
      return;
    }
    op = c->a;
    if (first) {
      acc = v;
      first = false;
      continue;
    }
    switch ((reduce_op)op) {
      case reduce_add_u: case reduce_add_i: acc += v; break;
      case reduce_min_u: acc = v < acc ? v : acc; break;
      case reduce_max_u: acc = v > acc ? v : acc; break;
      case reduce_min_i: acc = (int)v < (int)acc ? v : acc; break;
      case reduce_max_i: acc = (int)v > (int)acc ? v : acc; break;
      case reduce_and: acc &= v; break;
      case reduce_or: acc |= v; break;
      case reduce_xor: acc ^= v; break;
    }
  }
  for (int l = 0; l < kWarpSize; l++)
    if (g.calls[l]) *static_cast<unsigned *>(g.calls[l]->out) = acc;
}

}  // namespace

const collective_kind kind_syncwarp = {"__syncwarp", complete_nothing};
const collective_kind kind_shfl_idx = {"__shfl_sync", complete_shuffle<by_index>, true};
const collective_kind kind_shfl_up = {"__shfl_up_sync", complete_shuffle<up>, true};
const collective_kind kind_shfl_down = {"__shfl_down_sync", complete_shuffle<down>, true};
const collective_kind kind_shfl_xor = {"__shfl_xor_sync", complete_shuffle<by_xor>, true};
const collective_kind kind_ballot = {"__ballot_sync", complete_ballot};
const collective_kind kind_match_any = {"__match_any_sync", complete_match_any};
const collective_kind kind_match_all = {"__match_all_sync", complete_match_all};
const collective_kind kind_reduce = {"__reduce_*_sync", complete_reduce};
const collective_kind kind_wmma_load = {"wmma::load_matrix_sync", complete_nothing};
const collective_kind kind_wmma_store = {"wmma::store_matrix_sync", complete_nothing};

uint64_t shuffle_instructions(const collective_kind *kind, const warp_group &group) {
  if (!kind->shuffles) return 0;
  for (int l = 0; l < kWarpSize; l++)
    if (group.calls[l]) return (group.calls[l]->bytes + 3) / 4;
  return 0;
}

void wmma_misuse(const char *call, const char *why, const void *pointer, unsigned ldm) {
  char detail[160];
  std::snprintf(detail, sizeof detail, ": %s (pointer %p, ldm %u)", why, pointer, ldm);
  report_defect(std::string(call) + " breaks WMMA's rules", describe_running_thread() + detail);
}

void trap(const char *why) {
  lane *l = lane_at(this_fibre_index());
  if (!l || l->exec->running != l->linear) outside_kernel(why);
  executor *exec = l->exec;
  std::fprintf(stderr, "plume cuda emulator: %s: %s: the kernel stops (cudaErrorIllegalInstruction)\n",
               why, describe_lane(exec, l->linear).c_str());
  exec->abandoned = true;
  if (exec->error == cudaSuccess) exec->error = cudaErrorIllegalInstruction;
  l->state = lane_state::exited;
  lane_stops(l, true); /* the block is abandoned: back to its scheduler */
  std::abort();
}

void nanosleep_ns(unsigned ns) {
  lane *l = lane_at(this_fibre_index());
  if (!l || l->exec->running != l->linear) outside_kernel("__nanosleep");
  (void)ns; /* no time passes for others while this lane runs: let them run instead */
  l->state = lane_state::runnable;
  lane_stops(l, false);
}

long long clock_ticks() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

}  // namespace plm_emu

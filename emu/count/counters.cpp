/* emu/count/counters.cpp: accesses recorded, grouped into warp requests and counted
 * (emu/count/counters.h), and the sections of the C API (emu/count/emu_count.h). */
#include "emu/count/counters.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "emu/config.h"
#include "emu/device/executor.h"

namespace plm_emu {

namespace {

constexpr unsigned kSectorShift = 5;                          /* 32-byte sectors */
std::atomic<size_t> l2_sectors{(50u * 1024 * 1024) >> kSectorShift}; /* a 50 MB L2 */
constexpr unsigned kBanks = 32;                               /* of 4-byte words */

enum access_class : uint8_t { class_load, class_store, class_global_atomic, class_shared, class_shared_atomic };

/* One lane's access: its warp request is (warp, epoch, pc, size, cls, k). */
struct access_record {
  uintptr_t addr;
  const void *pc;
  uint32_t epoch, k, size;
  uint16_t warp;
  uint8_t lane, cls;
};

struct site_key {
  const void *pc;
  uint32_t size;
  uint16_t linear;
  uint8_t cls;
  bool operator==(const site_key &o) const {
    return pc == o.pc && size == o.size && linear == o.linear && cls == o.cls;
  }
};
struct site_hash {
  size_t operator()(const site_key &k) const {
    return mix_seed((uint64_t)(uintptr_t)k.pc, ((uint64_t)k.size << 24) ^ ((uint64_t)k.linear << 8) ^ k.cls);
  }
};

/* A fully associative LRU of sectors: touch says whether the sector was held. */
class sector_lru {
 public:
  explicit sector_lru(size_t capacity) : capacity_(capacity) {}
  bool touch(uint64_t sector) {
    auto it = where_.find(sector);
    if (it != where_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return true;
    }
    order_.push_front(sector);
    where_.emplace(sector, order_.begin());
    if (where_.size() > capacity_) {
      where_.erase(order_.back());
      order_.pop_back();
    }
    return false;
  }

 private:
  size_t capacity_;
  std::list<uint64_t> order_;
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

/* ---- sections ---------------------------------------------------------------------- */

std::mutex sections_lock;
std::vector<section_record> &sections() {
  static auto *all = new std::vector<section_record>(); /* kept to exit: workers may file late */
  return *all;
}
std::atomic<int> open_section{-1};

/* The section's index, made if new (under sections_lock). */
int section_index(const std::string &label) {
  std::vector<section_record> &all = sections();
  for (size_t i = 0; i < all.size(); i++)
    if (all[i].label == label) return (int)i;
  all.push_back(section_record{label, {}});
  return (int)all.size() - 1;
}

void report_at_exit() {
  plm_emu_count_end();
  plm_emu_count_report("H100", stderr, nullptr);
}

/* PLUME_EMU_COUNT=1: a section "process" opened at the first launch, reported at exit. */
int process_section() {
  static const int index = [] {
    std::lock_guard<std::mutex> hold(sections_lock);
    const int i = section_index("process");
    open_section.store(i, std::memory_order_release);
    std::atexit(report_at_exit);
    return i;
  }();
  return index;
}

}  // namespace

struct launch_counts {
  std::mutex lock;
  std::string kernel, site;
  dim3 grid, block;
  int section = -1;
  plm_emu_counts counts{};
  std::unordered_set<uint64_t> seen;
  sector_lru l2{l2_sectors.load(std::memory_order_relaxed)};
  std::unordered_map<uintptr_t, uint64_t> atomic_addresses;
};

/* A lane's executions of one site since its epoch began. */
struct site_runs {
  uint32_t epoch = 0, k = 0;
};

/* Lanes are not in lockstep here, so a warp request is the k-th execution of a site by
 * each lane, k counted from the last point where the lanes are known to be together: the
 * block's barrier (every lane's epoch 0 again, and the counts cleared), or a warp
 * collective naming every lane of the warp (a new epoch for them). Without the second, a
 * loop whose lanes run a site different numbers of times in one trip would group the
 * k-th executions of different trips, as a GPU, which issues each trip's access once for
 * the lanes at it, does not. */
struct block_counts {
  launch_counts *launch = nullptr;
  std::vector<access_record> records;
  std::unordered_map<site_key, site_runs, site_hash> executions;
  std::vector<uint32_t> lane_epoch; /* by thread of the block; empty: all 0 */
  uint32_t epochs = 0;
  plm_emu_counts local{};
};

void counts_add(plm_emu_counts &into, const plm_emu_counts &from) {
  into.launches += from.launches;
  into.blocks += from.blocks;
  into.threads += from.threads;
  into.load_requests += from.load_requests;
  into.load_bytes += from.load_bytes;
  into.load_sectors += from.load_sectors;
  into.store_requests += from.store_requests;
  into.store_bytes += from.store_bytes;
  into.store_sectors += from.store_sectors;
  into.distinct_sectors += from.distinct_sectors;
  into.l2_refetch_sectors += from.l2_refetch_sectors;
  into.shared_requests += from.shared_requests;
  into.shared_wavefronts += from.shared_wavefronts;
  into.global_atomic_requests += from.global_atomic_requests;
  into.global_atomic_ops += from.global_atomic_ops;
  into.global_atomic_steps += from.global_atomic_steps;
  into.global_atomic_hottest = std::max(into.global_atomic_hottest, from.global_atomic_hottest);
  into.shared_atomic_requests += from.shared_atomic_requests;
  into.shared_atomic_ops += from.shared_atomic_ops;
  into.shared_atomic_steps += from.shared_atomic_steps;
  into.barriers += from.barriers;
  into.collectives += from.collectives;
  into.collective_lanes += from.collective_lanes;
  into.shuffles += from.shuffles;
}

namespace {

/* The most distinct 4-byte words one bank delivers for a request's lanes (at least 1). */
uint64_t wavefronts(const access_record *first, const access_record *last, std::vector<uint64_t> &words) {
  words.clear();
  for (const access_record *r = first; r != last; r++)
    for (uint64_t w = r->addr >> 2; w <= (r->addr + r->size - 1) >> 2; w++) words.push_back(w);
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  unsigned per_bank[kBanks] = {0};
  unsigned most = 1;
  for (uint64_t w : words) most = std::max(most, ++per_bank[w % kBanks]);
  return most;
}

/* The most lanes of a request at one address. */
uint64_t same_address_steps(const access_record *first, const access_record *last,
                            std::vector<uint64_t> &addresses) {
  addresses.clear();
  for (const access_record *r = first; r != last; r++) addresses.push_back(r->addr);
  std::sort(addresses.begin(), addresses.end());
  uint64_t most = 0, run = 0;
  for (size_t i = 0; i < addresses.size(); i++) {
    run = (i > 0 && addresses[i] == addresses[i - 1]) ? run + 1 : 1;
    most = std::max(most, run);
  }
  return most;
}

/* The distinct sectors a request's lanes touch. */
uint64_t sectors(const access_record *first, const access_record *last, std::vector<uint64_t> &list) {
  list.clear();
  for (const access_record *r = first; r != last; r++)
    for (uint64_t s = r->addr >> kSectorShift; s <= (r->addr + r->size - 1) >> kSectorShift; s++) list.push_back(s);
  std::sort(list.begin(), list.end());
  return (uint64_t)(std::unique(list.begin(), list.end()) - list.begin());
}

bool is_global(uint8_t cls) { return cls <= class_global_atomic; }

/* The block's accesses so far grouped into warp requests and added to the launch. */
void flush(block_counts &b) {
  if (b.records.empty()) return;
  launch_counts &launch = *b.launch;
  std::vector<access_record> &records = b.records;
  std::vector<uint64_t> scratch;
  std::lock_guard<std::mutex> hold(launch.lock);
  plm_emu_counts &c = launch.counts;
  /* The L2 sees the sectors in the order the lanes ran. */
  for (const access_record &r : records) {
    if (!is_global(r.cls)) continue;
    for (uint64_t s = r.addr >> kSectorShift; s <= (r.addr + r.size - 1) >> kSectorShift; s++) {
      const bool held = launch.l2.touch(s);
      if (launch.seen.insert(s).second) c.distinct_sectors++;
      else if (!held) c.l2_refetch_sectors++;
    }
    if (r.cls == class_global_atomic) launch.atomic_addresses[r.addr]++;
  }
  std::sort(records.begin(), records.end(), [](const access_record &a, const access_record &b) {
    if (a.warp != b.warp) return a.warp < b.warp;
    if (a.epoch != b.epoch) return a.epoch < b.epoch;
    if (a.pc != b.pc) return a.pc < b.pc;
    if (a.size != b.size) return a.size < b.size;
    if (a.cls != b.cls) return a.cls < b.cls;
    return a.k < b.k;
  });
  for (size_t i = 0; i < records.size();) {
    size_t j = i + 1;
    const access_record &r = records[i];
    while (j < records.size() && records[j].warp == r.warp && records[j].epoch == r.epoch &&
           records[j].pc == r.pc && records[j].size == r.size && records[j].cls == r.cls &&
           records[j].k == r.k)
      j++;
    const access_record *first = &records[i], *last = first + (j - i);
    uint64_t bytes = 0;
    for (const access_record *x = first; x != last; x++) bytes += x->size;
    switch ((access_class)r.cls) {
      case class_load:
        c.load_requests++;
        c.load_bytes += bytes;
        c.load_sectors += sectors(first, last, scratch);
        break;
      case class_store:
        c.store_requests++;
        c.store_bytes += bytes;
        c.store_sectors += sectors(first, last, scratch);
        break;
      case class_global_atomic:
        c.global_atomic_requests++;
        c.global_atomic_ops += j - i;
        c.global_atomic_steps += same_address_steps(first, last, scratch);
        break;
      case class_shared:
        c.shared_requests++;
        c.shared_wavefronts += wavefronts(first, last, scratch);
        break;
      case class_shared_atomic: {
        c.shared_atomic_requests++;
        c.shared_atomic_ops += j - i;
        const uint64_t banked = wavefronts(first, last, scratch);
        c.shared_atomic_steps += std::max(banked, same_address_steps(first, last, scratch));
        break;
      }
    }
    i = j;
  }
  records.clear();
  b.executions.clear();
  b.lane_epoch.clear();
}

void record(executor *exec, int linear, uintptr_t addr, size_t size, uint8_t cls, const void *pc) {
  block_counts &b = *exec->counts;
  const uint32_t epoch = (size_t)linear < b.lane_epoch.size() ? b.lane_epoch[linear] : 0;
  site_runs &runs = b.executions[site_key{pc, (uint32_t)size, (uint16_t)linear, cls}];
  if (runs.epoch != epoch) runs = site_runs{epoch, 0};
  const uint32_t k = runs.k++;
  b.records.push_back(access_record{addr, pc, epoch, k, (uint32_t)size,
                                    (uint16_t)(linear / kWarpSize), (uint8_t)(linear % kWarpSize),
                                    cls});
}

}  // namespace

launch_counts *count_launch_begin(const kernel_launch &launch) {
  int section = open_section.load(std::memory_order_acquire);
  if (section < 0) {
    if (!config_count()) return nullptr;
    section = process_section();
  }
  launch_counts *counts = new launch_counts();
  counts->kernel = launch.name && *launch.name ? launch.name : "(unnamed)";
  counts->site = launch.site ? launch.site : "";
  counts->grid = launch.grid;
  counts->block = launch.block;
  counts->section = section;
  counts->counts.launches = 1;
  return counts;
}

block_counts *count_executor_start(launch_counts *launch) {
  if (!launch) return nullptr;
  block_counts *b = new block_counts();
  b->launch = launch;
  return b;
}

void count_executor_done(block_counts *b) {
  if (!b) return;
  flush(*b);
  {
    std::lock_guard<std::mutex> hold(b->launch->lock);
    counts_add(b->launch->counts, b->local);
  }
  delete b;
}

void count_launch_end(launch_counts *launch) {
  if (!launch) return;
  for (const auto &entry : launch->atomic_addresses)
    launch->counts.global_atomic_hottest = std::max(launch->counts.global_atomic_hottest, entry.second);
  {
    std::lock_guard<std::mutex> hold(sections_lock);
    if ((size_t)launch->section < sections().size()) /* not cleared while it ran */
      sections()[launch->section].launches.push_back(
          launch_record{launch->kernel, launch->site, launch->grid, launch->block, launch->counts});
  }
  delete launch;
}

void count_shared_access(executor *exec, int linear, size_t offset, size_t size, access_kind kind,
                         const void *pc) {
  record(exec, linear, offset, size, kind == access_atomic ? class_shared_atomic : class_shared, pc);
}

void count_device_access(executor *exec, int linear, uintptr_t addr, size_t size, access_kind kind,
                         const void *pc) {
  if (!device_region_holds(addr)) return; /* the kernel's captured arguments, host memory */
  const uint8_t cls = kind == access_atomic ? class_global_atomic : kind == access_write ? class_store : class_load;
  record(exec, linear, addr, size, cls, pc);
}

void count_barrier(executor *exec) {
  flush(*exec->counts);
  exec->counts->local.barriers++;
}

void count_collective(executor *exec, int warp, unsigned mask, uint64_t shuffles) {
  block_counts &b = *exec->counts;
  b.local.collectives++;
  b.local.shuffles += shuffles;
  b.local.collective_lanes += (uint64_t)__builtin_popcount(mask);
  const int first = warp * kWarpSize, lanes = std::min(kWarpSize, exec->threads - first);
  const unsigned every = lanes == kWarpSize ? 0xffffffffu : (1u << lanes) - 1u;
  if ((mask & every) != every) return; /* some lanes elsewhere: they stay in their epoch */
  if (b.lane_epoch.size() < (size_t)exec->threads) b.lane_epoch.resize((size_t)exec->threads, 0);
  b.epochs++;
  for (int l = 0; l < lanes; l++) b.lane_epoch[(size_t)(first + l)] = b.epochs;
}

void count_block_end(executor *exec) {
  flush(*exec->counts);
  exec->counts->local.blocks++;
  exec->counts->local.threads += (uint64_t)exec->threads;
}

std::vector<section_record> count_sections() {
  std::lock_guard<std::mutex> hold(sections_lock);
  return sections();
}

}  // namespace plm_emu

/* ---- the C API (emu/count/emu_count.h) ------------------------------------------------ */

extern "C" int plm_emu_count_begin(const char *label) {
  using namespace plm_emu;
  if (!label || !*label) {
    std::fprintf(stderr, "plume cuda emulator: plm_emu_count_begin: the label is NULL or empty\n");
    return -1;
  }
  std::lock_guard<std::mutex> hold(sections_lock);
  const int open = open_section.load(std::memory_order_acquire);
  if (open >= 0) {
    std::fprintf(stderr, "plume cuda emulator: plm_emu_count_begin(\"%s\"): section \"%s\" is still open\n",
                 label, sections()[open].label.c_str());
    return -1;
  }
  open_section.store(section_index(label), std::memory_order_release);
  return 0;
}

extern "C" int plm_emu_count_set_l2_bytes(size_t bytes) {
  if (bytes < 32) {
    std::fprintf(stderr, "plume cuda emulator: plm_emu_count_set_l2_bytes(%zu): less than one 32-byte sector\n", bytes);
    return -1;
  }
  plm_emu::l2_sectors.store(bytes >> plm_emu::kSectorShift, std::memory_order_relaxed);
  return 0;
}

extern "C" void plm_emu_count_end(void) { plm_emu::open_section.store(-1, std::memory_order_release); }

extern "C" void plm_emu_count_clear(void) {
  using namespace plm_emu;
  std::lock_guard<std::mutex> hold(sections_lock);
  const int open = open_section.load(std::memory_order_acquire);
  if (open >= 0) {
    std::fprintf(stderr, "plume cuda emulator: plm_emu_count_clear: section \"%s\" is open; nothing cleared\n",
                 sections()[open].label.c_str());
    return;
  }
  sections().clear();
}

extern "C" uint64_t plm_emu_count_get(const char *label, const char *kernel, plm_emu_counts *out) {
  using namespace plm_emu;
  plm_emu_counts sum{};
  if (label) {
    std::lock_guard<std::mutex> hold(sections_lock);
    for (const section_record &s : sections()) {
      if (s.label != label) continue;
      for (const launch_record &l : s.launches)
        if (!kernel || l.kernel == kernel) counts_add(sum, l.counts);
    }
  }
  if (out) *out = sum;
  return sum.launches;
}

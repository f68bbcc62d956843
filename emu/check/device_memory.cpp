/* emu/check/device_memory.cpp: registered device memory checked in stream order
 * (region_add, region_remove, record_access, poison, unpoison: emu/emu.h; device_access:
 * emu/check/check.h).
 *
 * Each region has a record per 256-byte granule: the operation that last wrote it (its
 * timeline and time) and up to two that read it since. An access by an operation whose
 * clock does not cover those (emu/emu.h, "Stream order, checked") is reported: a read of
 * what an unordered operation wrote, a write of what one read or wrote. Of two readers
 * the record keeps those not ordered before the newest (an operation that covers the
 * newest covers what it covers), so a third unordered reader can push one out: a miss,
 * never a false report. An operation touching a granule again is the common case and is
 * decided from two atomic loads (the last writer's and reader's ids); the rest takes the
 * region's lock. Granules are 256 bytes because device allocations and plume's pool
 * blocks are 256-byte aligned and rounded, so two allocations never share one.
 *
 * Outside every live region, an access is checked against the retired ones (freed: a use
 * after free) and the red zones of the live ones (kRedZone bytes on either side: past
 * the end or before the start), without AddressSanitizer's help.
 *
 * Regions are found through a per-thread cache of the last four used (and of gaps),
 * checked against a version that changes with every registration; a removed region's
 * records are freed only after 64 more removals, so a thread that read an old version
 * meanwhile never touches freed memory. The newest 4096 retired regions are kept. */
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "emu/check/check.h"
#include "emu/count/counters.h"
#include "emu/device/executor.h"

extern "C" {
void __asan_poison_memory_region(void const volatile *addr, size_t size) __attribute__((weak));
void __asan_unpoison_memory_region(void const volatile *addr, size_t size) __attribute__((weak));
}

namespace plm_emu {

namespace {

constexpr unsigned kGranuleShift = 8;
constexpr size_t kRetiredKept = 64;      /* removed regions whose records are kept a while */
constexpr size_t kFreedKept = 4096;      /* retired regions remembered for reports */

struct access_mark {
  uint64_t op;
  timeline_id timeline;
  uint64_t time;
  const void *pc;
};

struct granule {
  std::atomic<uint64_t> write_op, read_op; /* the newest writer's and reader's ids */
  access_mark write;
  access_mark readers[2];
};

struct region {
  uintptr_t base, end;
  std::string what;
  granule *granules;
  std::mutex lock;
};

std::shared_mutex regions_lock;
/* The tables live as long as the process (never destroyed: a kernel or a stream's worker
 * may still look at them while static objects are torn down at exit). */
std::map<uintptr_t, region *> &regions() {
  static auto *table = new std::map<uintptr_t, region *>();
  return *table;
}
std::vector<region *> &retired_records() {
  static auto *records = new std::vector<region *>();
  return *records;
}
std::atomic<uint64_t> regions_version{1};

/* Freed regions (region_retire), by base: the span and how they were freed. */
struct freed_region {
  uintptr_t end;
  std::string what, how;
};
std::map<uintptr_t, freed_region> &freed() {
  static auto *table = new std::map<uintptr_t, freed_region>();
  return *table;
}
std::vector<uintptr_t> &freed_order() {
  static auto *order = new std::vector<uintptr_t>();
  return *order;
}

/* Forget freed regions that [base, end) overlaps (under regions_lock, written). */
void forget_freed(uintptr_t base, uintptr_t end) {
  auto it = freed().upper_bound(base);
  if (it != freed().begin() && std::prev(it)->second.end > base) --it;
  while (it != freed().end() && it->first < end) it = freed().erase(it);
}

/* Retire a region's records (under regions_lock, written). */
void retire_records(region *r) {
  std::vector<region *> &retired = retired_records();
  retired.push_back(r);
  regions_version.fetch_add(1, std::memory_order_release);
  while (retired.size() > kRetiredKept) {
    std::free(retired.front()->granules);
    delete retired.front();
    retired.erase(retired.begin());
  }
}

/* What the operations were, for reports. */
std::mutex ops_lock;
std::unordered_map<uint64_t, std::string> &op_names() {
  static auto *names = new std::unordered_map<uint64_t, std::string>();
  return *names;
}

void remember_op(const op_context &op) {
  std::lock_guard<std::mutex> hold(ops_lock);
  if (op_names().size() > 1000000) op_names().clear();
  op_names().emplace(op.id, op.what);
}

std::string op_name(uint64_t id) {
  std::lock_guard<std::mutex> hold(ops_lock);
  auto it = op_names().find(id);
  return it == op_names().end() ? "an earlier operation" : it->second;
}

/* The regions a thread used last, newest first; a miss (no region) is cached too. */
constexpr int kCacheWays = 4;
struct region_cache {
  uintptr_t base[kCacheWays], end[kCacheWays];
  region *r[kCacheWays];
  uint64_t version;
};
__attribute__((tls_model("initial-exec"))) thread_local region_cache cache;

/* The live region holding addr, or null; *near: a miss that needs check_outside (in a
 * red zone, or in freed memory). Misses far from any region are cached too. */
PLM_EMU_HOT region *find_region(uintptr_t addr, bool *near) {
  *near = false;
  const uint64_t version = regions_version.load(std::memory_order_acquire);
  if (cache.version == version) {
    for (int i = 0; i < kCacheWays; i++)
      if (addr - cache.base[i] < cache.end[i] - cache.base[i]) return cache.r[i];
  } else {
    cache = region_cache();
    cache.version = version;
  }
  region *found = nullptr;
  uintptr_t base, end;
  {
    std::shared_lock<std::shared_mutex> hold(regions_lock);
    auto it = regions().upper_bound(addr);
    if (it != regions().begin() && addr < std::prev(it)->second->end) {
      found = std::prev(it)->second;
      base = found->base;
      end = found->end;
    } else { /* the gap around addr, less the red zones, as a miss (if addr is in it) */
      base = it == regions().begin() ? 0 : std::prev(it)->second->end + kRedZone;
      end = it == regions().end() ? UINTPTR_MAX : it->first - kRedZone;
      auto f = freed().upper_bound(addr);
      if (f != freed().end() && f->first < end) end = f->first;
      if (f != freed().begin() && std::prev(f)->second.end > base) base = std::prev(f)->second.end;
      if (addr < base || addr >= end) { /* near a region or freed: not cached */
        *near = true;
        return nullptr;
      }
    }
  }
  for (int i = kCacheWays - 1; i > 0; i--) {
    cache.base[i] = cache.base[i - 1];
    cache.end[i] = cache.end[i - 1];
    cache.r[i] = cache.r[i - 1];
  }
  cache.base[0] = base;
  cache.end[0] = end;
  cache.r[0] = found;
  return found;
}

/* Who makes an access, for a report: the kernel's thread, or the operation. */
std::string who_accesses(const op_context &op, size_t fibre) {
  const lane *l = lane_at(fibre);
  return l ? describe_lane(l->exec, l->linear) : op.what;
}

std::string mark_text(const access_mark &m) {
  std::string text = op_name(m.op) + " on " + timeline_label(m.timeline);
  if (m.pc) text += " at " + source_line(m.pc);
  return text;
}

void report_order(const region &r, uintptr_t addr, size_t size, bool write, const op_context &op,
                  const void *pc, size_t fibre, const access_mark &other,
                  bool other_wrote) {
  const char *title = !write ? "device memory out of stream order: a read of what an unordered operation wrote"
                      : other_wrote ? "device memory out of stream order: a write of what an unordered operation wrote"
                                    : "device memory out of stream order: a write of what an unordered operation reads";
  char where[160];
  std::snprintf(where, sizeof where, " %s %zu bytes at %p (byte %zu of %s)", write ? "writes" : "reads",
                size, (void *)addr, (size_t)(addr - r.base), r.what.c_str());
  std::string detail = who_accesses(op, fibre) + where;
  if (pc) detail += " at " + source_line(pc);
  detail += ";\nit runs on " + timeline_label(op.timeline) + ". " + (other_wrote ? "They were written by " : "They are read by ") +
            mark_text(other) +
            ",\nand nothing orders that before this: no event recorded after it that this stream "
            "waits for, no synchronization the host made before enqueuing this one";
  report_defect(title, detail);
}

PLM_EMU_HOT void check_granule(region &r, granule &g, uintptr_t addr, size_t size, bool write,
                   const op_context &op, const void *pc, size_t fibre) {
  if (write ? g.write_op.load(std::memory_order_relaxed) == op.id
            : g.read_op.load(std::memory_order_relaxed) == op.id ||
                  g.write_op.load(std::memory_order_relaxed) == op.id)
    return;
  std::lock_guard<std::mutex> hold(r.lock);
  const vclock &clock = *op.clock;
  const access_mark mine{op.id, op.timeline, op.time, pc};
  if (g.write.op && g.write.op != op.id && !clock.covers(g.write.timeline, g.write.time)) {
    /* Reported once: the granule then counts as this operation's (a write), or this one
     * as a reader of it. */
    access_mark other = g.write;
    if (write) {
      g.write = mine;
      g.write_op.store(op.id, std::memory_order_relaxed);
    } else {
      g.readers[0] = mine;
      g.read_op.store(op.id, std::memory_order_relaxed);
    }
    report_order(r, addr, size, write, op, pc, fibre, other, true);
    return;
  }
  if (write) {
    for (access_mark &reader : g.readers) {
      if (reader.op && reader.op != op.id && !clock.covers(reader.timeline, reader.time)) {
        access_mark other = reader;
        reader = access_mark();
        report_order(r, addr, size, write, op, pc, fibre, other, false);
        return;
      }
    }
    g.write = mine;
    g.readers[0] = g.readers[1] = access_mark();
    g.write_op.store(op.id, std::memory_order_relaxed);
    g.read_op.store(0, std::memory_order_relaxed);
    return;
  }
  /* A read: keep the readers this one does not cover. */
  access_mark *slot = nullptr;
  for (access_mark &reader : g.readers) {
    if (!reader.op || reader.op == op.id || clock.covers(reader.timeline, reader.time)) {
      slot = &reader;
      break;
    }
  }
  if (!slot) slot = g.readers[0].time <= g.readers[1].time ? &g.readers[0] : &g.readers[1];
  *slot = mine;
  g.read_op.store(op.id, std::memory_order_relaxed);
}

}  // namespace

void region_add(void *base, size_t bytes, const std::string &what) {
  if (!base || !bytes) return;
  region *r = new region();
  r->base = (uintptr_t)base;
  r->end = r->base + bytes;
  r->what = what;
  r->granules = static_cast<granule *>(std::calloc((bytes >> kGranuleShift) + 2, sizeof(granule)));
  if (!r->granules) {
    std::fputs("plume cuda emulator: no memory for a device region's records\n", stderr);
    std::abort();
  }
  std::unique_lock<std::shared_mutex> hold(regions_lock);
  auto it = regions().find(r->base);
  if (it != regions().end()) { /* registered again: the old records go */
    region *old = it->second;
    regions().erase(it);
    retire_records(old);
  }
  forget_freed(r->base, r->end);
  regions()[r->base] = r;
  regions_version.fetch_add(1, std::memory_order_release);
}

void region_retire(void *base, const std::string &how) {
  std::unique_lock<std::shared_mutex> hold(regions_lock);
  auto it = regions().find((uintptr_t)base);
  if (it == regions().end()) return;
  region *r = it->second;
  regions().erase(it);
  freed()[r->base] = freed_region{r->end, r->what, how};
  std::vector<uintptr_t> &order = freed_order();
  order.push_back(r->base);
  if (order.size() > kFreedKept) {
    auto old = freed().find(order.front());
    if (old != freed().end() && old->first != r->base) freed().erase(old);
    order.erase(order.begin());
  }
  retire_records(r);
}

void region_remove(void *base) {
  std::unique_lock<std::shared_mutex> hold(regions_lock);
  auto it = regions().find((uintptr_t)base);
  if (it != regions().end()) {
    region *r = it->second;
    regions().erase(it);
    retire_records(r);
  }
  freed().erase((uintptr_t)base);
}

/* An access outside every live region: of a freed one, or in a live one's red zone. */
void check_outside(const op_context &op, uintptr_t addr, size_t size, bool write, const void *pc,
                   size_t fibre) {
  std::string title, what;
  {
    std::shared_lock<std::shared_mutex> hold(regions_lock);
    auto f = freed().upper_bound(addr);
    if (f != freed().begin() && addr < std::prev(f)->second.end) {
      --f;
      char text[200];
      std::snprintf(text, sizeof text, "byte %zu of %s, freed by ", (size_t)(addr - f->first),
                    f->second.what.c_str());
      title = "device memory used after its free";
      what = text + f->second.how;
    } else {
      auto it = regions().upper_bound(addr);
      if (it != regions().end() && it->first - addr <= kRedZone) {
        char text[200];
        std::snprintf(text, sizeof text, "%zu bytes before the start of %s", (size_t)(it->first - addr),
                      it->second->what.c_str());
        title = "device memory out of bounds";
        what = text;
      } else if (it != regions().begin() && addr - std::prev(it)->second->end < kRedZone) {
        const region *below = std::prev(it)->second;
        char text[200];
        std::snprintf(text, sizeof text, "byte %zu past the end of %s (%zu bytes)",
                      (size_t)(addr - below->end), below->what.c_str(), (size_t)(below->end - below->base));
        title = "device memory out of bounds";
        what = text;
      }
    }
  }
  if (title.empty()) return;
  char access[96];
  std::snprintf(access, sizeof access, " %s %zu bytes at %p: ", write ? "writes" : "reads", size,
                (void *)addr);
  std::string detail = who_accesses(op, fibre) + access + what;
  if (pc) detail += "; at " + source_line(pc);
  report_defect(title, detail);
}

PLM_EMU_HOT void device_access(const op_context &op, uintptr_t addr, size_t size, bool write,
                               const void *pc, size_t fibre) {
  if (!op.clock || !size) return;
  bool near = false;
  region *r = find_region(addr, &near);
  if (!r) {
    if (near) check_outside(op, addr, size, write, pc, fibre);
    return;
  }
  static __attribute__((tls_model("initial-exec"))) thread_local uint64_t remembered = 0;
  if (remembered != op.id) {
    remember_op(op);
    remembered = op.id;
  }
  const uintptr_t end = addr + size < r->end ? addr + size : r->end;
  for (uintptr_t g = (addr - r->base) >> kGranuleShift; (r->base + (g << kGranuleShift)) < end; g++)
    check_granule(*r, r->granules[g], addr, size, write, op, pc, fibre);
}

bool device_region_holds(uintptr_t addr) {
  bool near = false;
  return find_region(addr, &near) != nullptr;
}

void record_access(const op_context &op, const void *addr, size_t bytes, bool write) {
  device_access(op, (uintptr_t)addr, bytes, write, nullptr, kMaxLanes);
}

void poison(const void *addr, size_t bytes) {
  if (__asan_poison_memory_region && addr && bytes) __asan_poison_memory_region(addr, bytes);
}

void unpoison(const void *addr, size_t bytes) {
  if (__asan_unpoison_memory_region && addr && bytes) __asan_unpoison_memory_region(addr, bytes);
}

}  // namespace plm_emu

/* emu/check/shared_shadow.cpp: the shadow of a block's shared memory: reads before
 * writes, and races (emu/check/check.h).
 *
 * For each byte of the arena the shadow keeps the last write, the last read and the last
 * atomic access: the phase it happened in (executor.h: phases change at each barrier and
 * each block's start), the thread, and the warp's count of completed collectives then
 * (and, in an array of their own, their sites for a report).
 * Two accesses by different threads are ordered when a barrier came between (their
 * phases differ) or when a collective that joined both came between (same warp, a
 * collective after the first access whose mask names both lanes, found in the warp's
 * history). When several threads read a byte in one phase the shadow keeps one of them,
 * whether they were several and of several warps, and the lanes of those of one warp; a
 * write after them is ordered only by a barrier, or, when they were all of one warp, by a
 * collective after the last of their reads whose mask names each of them and the writer
 * (a group of lanes syncing on its own mask orders its own reads and writes).
 *
 * The shadow is never cleared: a byte whose last write is from an earlier phase than the
 * block's first was not written by this block (a read of it is reported), and older
 * records are ordered before everything. Phases are 32-bit per executor: past 2^32 the
 * shadow is cleared and counting restarts. */
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "emu/check/check.h"
#include "emu/device/executor.h"

namespace plm_emu {

namespace {

struct access_record {
  uint32_t phase;
  uint32_t gen; /* the accessing warp's sync_gen then */
  uint16_t thread;
};

/* What every access reads: 48 bytes, where it was 88 with the sites in it and a byte's
 * 4-byte access walked 352 bytes of shadow (the emulator's hottest loads). */
struct shadow_byte {
  access_record write, read, atomic;
  uint32_t readers_gen_max;
  uint32_t readers_lanes; /* the lanes that read it in the read's phase (of one warp) */
  uint8_t readers_many, readers_warps_mixed, atomics_many;
};
static_assert(sizeof(shadow_byte) == 48, "a shadow byte stays small");

/* The phase of a byte's last write or atomic (phases only grow, and both records are
 * cleared together). */
inline uint32_t written_phase(const shadow_byte &b) {
  return b.write.phase > b.atomic.phase ? b.write.phase : b.atomic.phase;
}

/* Where each record's access was made, apart: only a report reads them. */
struct shadow_sites {
  const void *write, *read, *atomic;
};

struct shared_shadow {
  shadow_byte *bytes;  /* kSharedArenaBytes of them */
  shadow_sites *sites; /* and of these */
};

/* Whether a collective of the warp completed since its count was `gen` whose mask names
 * every lane of `need`: from the history of the last kSyncHistory collectives, or, for an
 * access older than them, from the last completion of each mask (exact while the warp has
 * used at most kMaskMemory masks; past them taken as ordered). */
bool synced_since(const executor *exec, int warp, uint32_t gen, unsigned need) {
  const warp_state &w = exec->warp[warp];
  const uint32_t since = w.sync_gen - gen; /* collectives completed since the access */
  if (since == 0) return false;
  if (w.all_lanes_gen - gen - 1 < since) return true; /* one joined every lane since */
  if (since > (uint32_t)kSyncHistory) {
    if (w.masks_forgotten) return true;
    for (int m = 0; m < w.mask_count; m++)
      if ((w.last_of_mask[m].mask & need) == need && w.last_of_mask[m].gen - gen - 1 < since)
        return true;
    return false;
  }
  for (uint32_t k = since; k >= 1; k--) /* the latest first: most often the one */
    if ((w.sync_masks[(gen + k) % kSyncHistory] & need) == need) return true;
  return false;
}

/* Whether the access in `r` (of this phase or earlier) is ordered before one by thread
 * `me` now. */
bool ordered(const executor *exec, const access_record &r, int me) {
  if (r.phase != exec->phase || r.thread == me) return true;
  const int warp = r.thread / kWarpSize;
  if (warp != me / kWarpSize) return false;
  return synced_since(exec, warp, r.gen, (1u << r.thread % kWarpSize) | (1u << me % kWarpSize));
}

std::string place(const executor *exec, size_t offset, size_t size) {
  char text[256];
  for (int i = 0; i < exec->static_count; i++) {
    const static_shared_var &v = exec->statics[i];
    if (offset >= v.offset && offset < v.offset + v.bytes) {
      std::snprintf(text, sizeof text, "%zu byte%s at byte %zu of __shared__ %s (%zu bytes)", size,
                    size == 1 ? "" : "s", offset - v.offset, v.name, v.bytes);
      return text;
    }
  }
  std::snprintf(text, sizeof text,
                "%zu byte%s at byte %zu of the dynamic shared memory (%zu bytes)", size,
                size == 1 ? "" : "s", offset - exec->dynamic_start, exec->dynamic_bytes);
  return text;
}

std::string thread_text(const executor *exec, int linear) {
  const thread_view &v = exec->views[linear];
  char text[64];
  std::snprintf(text, sizeof text, "thread (%u,%u,%u)", v.thread_idx.x, v.thread_idx.y,
                v.thread_idx.z);
  return text;
}

const char *verb(access_kind kind) {
  switch (kind) {
    case access_read: return "reads";
    case access_write: return "writes";
    case access_atomic: return "updates atomically";
    case access_atomic_read: return "reads atomically";
  }
  return "touches";
}

void report_race(const executor *exec, int me, access_kind mine, const void *pc, size_t offset,
                 size_t size, const access_record &other, const void *other_pc, access_kind theirs,
                 bool several) {
  static const char *const past[] = {"read", "wrote", "updated atomically", "read atomically"};
  const char *title = mine == access_read || mine == access_atomic_read
                          ? "shared-memory race: a read of what another thread writes"
                      : theirs == access_read
                          ? "shared-memory race: a write of what another thread reads"
                          : "shared-memory race: two threads write one place";
  std::string detail = describe_lane(exec, me) + " " + verb(mine) + " " +
                       place(exec, offset, size) + " at " + source_line(pc) + ";\n" +
                       thread_text(exec, other.thread) +
                       (several ? " (one of several threads)" : "") + " " + past[theirs] +
                       " it at " + source_line(other_pc) +
                       " in the same barrier interval, and nothing orders the two (no "
                       "__syncthreads between, no warp collective joining both threads)";
  report_defect(title, detail);
}

void report_unwritten(const executor *exec, int me, access_kind mine, const void *pc, size_t offset,
                      size_t size) {
  report_defect("shared memory read before this block wrote it",
                describe_lane(exec, me) + " " + verb(mine) + " " + place(exec, offset, size) +
                    " at " + source_line(pc) +
                    ", which no thread of this block has written: shared memory starts undefined "
                    "in every block (here 0xcd bytes)");
}

/* The site of an access of `kind` that its byte's shadow now records. */
inline void record_site(shadow_sites &site, access_kind kind, const void *pc) {
  switch (kind) {
    case access_read: site.read = pc; break;
    case access_write: site.write = pc; break;
    case access_atomic: site.atomic = pc; break;
    case access_atomic_read: break; /* leaves no record */
  }
}

/* One byte of an access by thread `me` of warp `warp`: checked against the byte's shadow
 * `b`, which it then records (the access's site in `site`). Returns -1 after a report, 0
 * when the access left the shadow as it was, 1 when it recorded itself. */
PLM_EMU_HOT inline int check_byte(executor *exec, int me, int warp, size_t offset, size_t size,
                                  access_kind kind, const void *pc, const access_record &now,
                                  shadow_byte &b, shadow_sites &site) {
  /* The common cases: this thread's own byte again in this phase with no collective
   * since its last access, and a read of what an earlier phase wrote, already recorded
   * as read by this thread since the warp's last collective (or by threads of several
   * warps, which only a barrier orders before a write anyway). */
  if (kind == access_write && b.write.phase == now.phase && b.write.thread == me &&
      b.write.gen == now.gen &&
      (b.read.phase != now.phase || (b.read.thread == me && !b.readers_many)) &&
      b.atomic.phase != now.phase)
    return 0;
  if (kind == access_read && b.read.phase == now.phase &&
      (b.read.thread == me ? b.read.gen == now.gen : b.readers_warps_mixed) &&
      b.atomic.phase != now.phase && (b.write.phase != now.phase || b.write.thread == me) &&
      written_phase(b) >= exec->block_start_phase)
    return 0;
  if (kind != access_write && written_phase(b) < exec->block_start_phase) {
    report_unwritten(exec, me, kind, pc, offset, size);
    return -1;
  }
  if (kind == access_atomic_read) { /* races only with a plain write, and leaves no record */
    if (b.write.phase == now.phase && !ordered(exec, b.write, me)) {
      report_race(exec, me, kind, pc, offset, size, b.write, site.write, access_write, false);
      return -1;
    }
    return 0;
  }
  if (b.write.phase == now.phase && !ordered(exec, b.write, me)) {
    report_race(exec, me, kind, pc, offset, size, b.write, site.write, access_write, false);
    return -1;
  }
  if (kind != access_atomic && b.atomic.phase == now.phase &&
      (b.atomics_many || !ordered(exec, b.atomic, me))) {
    report_race(exec, me, kind, pc, offset, size, b.atomic, site.atomic, access_atomic,
                b.atomics_many);
    return -1;
  }
  if (kind != access_read && b.read.phase == now.phase) {
    bool ok;
    if (!b.readers_many)
      ok = ordered(exec, b.read, me);
    else
      ok = !b.readers_warps_mixed && b.read.thread / kWarpSize == warp &&
           synced_since(exec, warp, b.readers_gen_max, b.readers_lanes | 1u << me % kWarpSize);
    if (!ok) {
      report_race(exec, me, kind, pc, offset, size, b.read, site.read, access_read, b.readers_many);
      return -1;
    }
  }
  switch (kind) {
    case access_atomic_read: return 0; /* handled above */
    case access_read:
      if (b.read.phase == now.phase) {
        if (b.read.thread != me) b.readers_many = 1;
        if (b.read.thread / kWarpSize != warp) b.readers_warps_mixed = 1;
        if (now.gen > b.readers_gen_max) b.readers_gen_max = now.gen;
        b.readers_lanes |= 1u << me % kWarpSize;
      } else {
        b.readers_many = b.readers_warps_mixed = 0;
        b.readers_gen_max = now.gen;
        b.readers_lanes = 1u << me % kWarpSize;
      }
      b.read = now;
      break;
    case access_write:
      b.write = now;
      b.read.phase = 0; /* every read so far is ordered before this write, so before */
      break;            /* whatever is ordered after it: a later write checks the write */
    case access_atomic:
      b.atomics_many = b.atomic.phase == now.phase && (b.atomics_many || b.atomic.thread != me);
      b.atomic = now;
      break;
  }
  record_site(site, kind, pc);
  return 1;
}

}  // namespace

namespace {

void *shadow_pages(size_t bytes) {
  void *pages = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (pages == MAP_FAILED) {
    std::fputs("plume cuda emulator: no memory for a shared memory shadow\n", stderr);
    std::abort();
  }
  return pages;
}

}  // namespace

void *shared_shadow_make() {
  return new shared_shadow{
      static_cast<shadow_byte *>(shadow_pages(kSharedArenaBytes * sizeof(shadow_byte))),
      static_cast<shadow_sites *>(shadow_pages(kSharedArenaBytes * sizeof(shadow_sites)))};
}

PLM_EMU_HOT void shared_access(executor *exec, int me, size_t offset, size_t size, access_kind kind,
                               const void *pc) {
  shared_shadow *shadow = static_cast<shared_shadow *>(exec->check_state);
  if (exec->phase == UINT32_MAX - 1) { /* the counter would wrap: start again */
    memset(static_cast<void *>(shadow->bytes), 0, kSharedArenaBytes * sizeof(shadow_byte));
    exec->phase = 2;
    exec->block_start_phase = 1;
  }
  const int warp = me / kWarpSize;
  const access_record now{exec->phase, exec->warp[warp].sync_gen, (uint16_t)me};
  shadow_byte *const bytes = shadow->bytes + offset;
  shadow_sites *const sites = shadow->sites + offset;
  for (size_t i = 0; i < size; i++)
    if (check_byte(exec, me, warp, offset, size, kind, pc, now, bytes[i], sites[i]) < 0) return;
}

}  // namespace plm_emu

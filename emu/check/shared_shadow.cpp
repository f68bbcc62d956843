/* emu/check/shared_shadow.cpp: the shadow of a block's shared memory: reads before
 * writes, and races (emu/check/check.h).
 *
 * For each byte of the arena the shadow keeps the last write, the last read and the last
 * atomic access: the phase it happened in (executor.h: phases change at each barrier and
 * each block's start), the thread, and the warp's count of completed collectives then.
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
  const void *pc;
};

struct shadow_byte {
  uint32_t written_phase; /* the phase of the last write (or atomic) of this byte */
  uint8_t readers_many, readers_warps_mixed, atomics_many;
  uint32_t readers_gen_max;
  uint32_t readers_lanes; /* the lanes that read it in the read's phase (of one warp) */
  access_record write, read, atomic;
};

struct shared_shadow {
  shadow_byte *bytes; /* kSharedArenaBytes of them */
};

/* Whether a collective of the warp completed since its count was `gen` whose mask names
 * every lane of `need`: from the history of the last kSyncHistory collectives, or, for an
 * access older than them, from the last completion of each mask (exact while the warp has
 * used at most kMaskMemory masks; past them taken as ordered). */
bool synced_since(const executor *exec, int warp, uint32_t gen, unsigned need) {
  const warp_state &w = exec->warp[warp];
  const uint32_t since = w.sync_gen - gen; /* collectives completed since the access */
  if (since == 0) return false;
  if (since > (uint32_t)kSyncHistory) {
    if (w.masks_forgotten) return true;
    for (int m = 0; m < w.mask_count; m++)
      if ((w.last_of_mask[m].mask & need) == need && w.last_of_mask[m].gen - gen - 1 < since)
        return true;
    return false;
  }
  for (uint32_t k = 1; k <= since; k++)
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
  std::snprintf(text, sizeof text, "%zu byte%s at byte %zu of the dynamic shared memory (%zu bytes)",
                size, size == 1 ? "" : "s", offset - exec->dynamic_start, exec->dynamic_bytes);
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
                 size_t size, const access_record &other, access_kind theirs, bool several) {
  static const char *const past[] = {"read", "wrote", "updated atomically", "read atomically"};
  const char *title = mine == access_read || mine == access_atomic_read
                          ? "shared-memory race: a read of what another thread writes"
                      : theirs == access_read ? "shared-memory race: a write of what another thread reads"
                                              : "shared-memory race: two threads write one place";
  std::string detail = describe_lane(exec, me) + " " + verb(mine) + " " + place(exec, offset, size) +
                       " at " + source_line(pc) + ";\n" + thread_text(exec, other.thread) +
                       (several ? " (one of several threads)" : "") + " " + past[theirs] +
                       " it at " + source_line(other.pc) +
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

}  // namespace

void *shared_shadow_make() {
  void *bytes = mmap(nullptr, kSharedArenaBytes * sizeof(shadow_byte), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (bytes == MAP_FAILED) {
    std::fputs("plume cuda emulator: no memory for a shared memory shadow\n", stderr);
    std::abort();
  }
  return new shared_shadow{static_cast<shadow_byte *>(bytes)};
}

PLM_EMU_HOT void shared_access(executor *exec, int me, size_t offset, size_t size, access_kind kind,
                   const void *pc) {
  shared_shadow *shadow = static_cast<shared_shadow *>(exec->check_state);
  if (exec->phase == UINT32_MAX - 1) { /* the counter would wrap: start again */
    memset(shadow->bytes, 0, kSharedArenaBytes * sizeof(shadow_byte));
    exec->phase = 2;
    exec->block_start_phase = 1;
  }
  const int warp = me / kWarpSize;
  const access_record now{exec->phase, exec->warp[warp].sync_gen, (uint16_t)me, pc};
  for (size_t i = 0; i < size; i++) {
    shadow_byte &b = shadow->bytes[offset + i];
    /* The common cases: this thread's own byte again in this phase with no collective
     * since its last access, and a read of what an earlier phase wrote, already recorded
     * as read by this thread since the warp's last collective (or by threads of several
     * warps, which only a barrier orders before a write anyway). */
    if (kind == access_write && b.write.phase == now.phase && b.write.thread == me &&
        b.write.gen == now.gen &&
        (b.read.phase != now.phase || (b.read.thread == me && !b.readers_many)) &&
        b.atomic.phase != now.phase)
      continue;
    if (kind == access_read && b.read.phase == now.phase &&
        (b.read.thread == me ? b.read.gen == now.gen : b.readers_warps_mixed) &&
        b.atomic.phase != now.phase &&
        (b.write.phase != now.phase || b.write.thread == me) &&
        b.written_phase >= exec->block_start_phase)
      continue;
    if (kind != access_write && b.written_phase < exec->block_start_phase) {
      report_unwritten(exec, me, kind, pc, offset, size);
      return;
    }
    if (kind == access_atomic_read) { /* races only with a plain write, and leaves no record */
      if (b.write.phase == now.phase && !ordered(exec, b.write, me)) {
        report_race(exec, me, kind, pc, offset, size, b.write, access_write, false);
        return;
      }
      continue;
    }
    if (b.write.phase == now.phase && !ordered(exec, b.write, me)) {
      report_race(exec, me, kind, pc, offset, size, b.write, access_write, false);
      return;
    }
    if (kind != access_atomic && b.atomic.phase == now.phase &&
        (b.atomics_many || !ordered(exec, b.atomic, me))) {
      report_race(exec, me, kind, pc, offset, size, b.atomic, access_atomic, b.atomics_many);
      return;
    }
    if (kind != access_read && b.read.phase == now.phase) {
      bool ok;
      if (!b.readers_many) ok = ordered(exec, b.read, me);
      else ok = !b.readers_warps_mixed && b.read.thread / kWarpSize == warp &&
                synced_since(exec, warp, b.readers_gen_max,
                             b.readers_lanes | 1u << me % kWarpSize);
      if (!ok) {
        report_race(exec, me, kind, pc, offset, size, b.read, access_read, b.readers_many);
        return;
      }
    }
    switch (kind) {
      case access_atomic_read: break; /* handled above */
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
        b.written_phase = now.phase;
        b.read.phase = 0; /* every read so far is ordered before this write, so before */
        break;            /* whatever is ordered after it: a later write checks the write */
      case access_atomic:
        b.atomics_many = b.atomic.phase == now.phase && (b.atomics_many || b.atomic.thread != me);
        b.atomic = now;
        b.written_phase = now.phase;
        break;
    }
  }
}

}  // namespace plm_emu

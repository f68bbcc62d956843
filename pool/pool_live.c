/* pool/pool_live.c: the live table, open addressing (see pool_live.h). */
#include "pool/pool_live.h"

#include <stdlib.h>

#include "pool/pool_block.h"
#include "streams/assert.h"

enum { MIN_SLOTS_LOG2 = 10 };

static void place(pool_live *live, uintptr_t addr, pool_block *block) {
  size_t i = pool_live_home(live, addr);
  while (live->slots[i].addr != 0) i = (i + 1) & live->mask;
  live->slots[i] = (pool_live_slot){.addr = addr, .block = block};
}

/* Move every entry into a table of 2^log2 slots; false when out of memory. */
static bool resize(pool_live *live, unsigned log2) {
  pool_live_slot *slots = calloc((size_t)1 << log2, sizeof *slots);
  if (!slots) return false;
  pool_live_slot *old = live->slots;
  size_t old_count = old ? live->mask + 1 : 0;
  live->slots = slots;
  live->mask = ((size_t)1 << log2) - 1;
  live->shift = 64u - log2;
  for (size_t i = 0; i < old_count; i++)
    if (old[i].addr) place(live, old[i].addr, old[i].block);
  free(old);
  return true;
}

static unsigned slots_log2(const pool_live *live) {
  return 64u - live->shift;
}

bool pool_live_insert(pool_live *live, pool_block *block) {
  PLM_ASSERT(block->addr != 0 && !pool_live_find(live, block->addr));
  if (!live->slots && !resize(live, MIN_SLOTS_LOG2)) return false;
  if (2 * (live->count + 1) > live->mask + 1 && !resize(live, slots_log2(live) + 1)) return false;
  place(live, block->addr, block);
  live->count++;
  return true;
}

void pool_live_remove(pool_live *live, uintptr_t addr) {
  size_t i = pool_live_home(live, addr);
  while (live->slots[i].addr != addr) {
    PLM_ASSERT(live->slots[i].addr != 0);
    i = (i + 1) & live->mask;
  }
  /* Shift back the entries of the run after i whose home is not in (i, j]. */
  for (size_t j = (i + 1) & live->mask; live->slots[j].addr != 0; j = (j + 1) & live->mask) {
    size_t home = pool_live_home(live, live->slots[j].addr);
    bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    live->slots[i] = live->slots[j];
    i = j;
  }
  live->slots[i] = (pool_live_slot){0};
  live->count--;
  /* Shrink below one eighth full (a failure to shrink leaves it as it is). */
  if (slots_log2(live) > MIN_SLOTS_LOG2 && 8 * live->count < live->mask + 1)
    resize(live, slots_log2(live) - 1);
}

void pool_live_destroy(pool_live *live) {
  free(live->slots);
  *live = (pool_live){0};
}

/* pool/pool_live.h: the live table, address -> descriptor of a USED block
 * (internal).
 *
 * Every free looks its pointer up here, so the lookup must stay in cache when a
 * hundred thousand blocks are live. The table is open addressing with linear
 * probing over slots of 16 bytes (the address and the descriptor), the slot
 * chosen by Fibonacci hashing of the address's granule number (addr / 256). A
 * find is one slot line (a probe rarely leaves it at the load kept here, at most
 * one half) and no pointer chasing: the key is in the slot, so the descriptor is
 * touched only once it is found. Removal shifts later slots of the run back
 * (Knuth's algorithm R), so there are no tombstones and finds stay short after any
 * number of frees.
 *
 * Why not what came before or the other candidates (measured with bench_pool
 * --lookup and the random_allocations workload, issue 18):
 *   - uthash (the old table) keeps a bucket array apart from the keys, a 56-byte
 *     handle in every descriptor and a list in insertion order through the
 *     descriptors: a find reads a bucket, the handle and the key (three lines),
 *     and an add or delete writes into neighbouring descriptors at random places;
 *   - a page map per chunk (an entry per 256-byte granule under a sorted array of
 *     chunks, jemalloc's rtree restricted to the pool's chunks) was built and
 *     measured slower: its memory follows the address space, not the blocks (8
 *     bytes per granule, 3 MiB of leaves for 46,000 live 4 KiB blocks, one leaf per
 *     block for blocks of 16 KiB and more), each free missed the leaf and its
 *     count, and leaves either cost a page fault each (kept) or a recycling miss
 *     (returned when empty): the 1 MiB workload's pair doubled;
 *   - a header per slab does not exist for device memory (descriptors are host
 *     side), and the pool's blocks are not slab-sized.
 *
 * Memory, host side: 16 bytes per slot, 2 to 8 slots per live block (the table
 * doubles when it would pass one half full and halves below one eighth; 1,024
 * slots at least, 16 KiB), so 32 to 128 bytes per live block whatever the bytes
 * reserved: per GiB reserved, 8 to 32 MiB when it is all in 4 KiB blocks, 32 to
 * 128 KiB in 1 MiB blocks, and at worst 128 to 512 MiB in 256-byte blocks. The
 * 100,000-allocation benchmark (46,000 live blocks of up to 4 KiB) uses 2 MiB;
 * uthash used about 3 MiB for the same blocks (56 bytes of handle per block and
 * its buckets), and the descriptor is 56 bytes smaller without the handle.
 *
 * Not thread-safe: the pool calls it with its `lock` held.
 */
#ifndef PLUME_POOL_LIVE_H
#define PLUME_POOL_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pool_block pool_block;

typedef struct pool_live_slot {
  uintptr_t addr; /* 0: empty */
  pool_block *block;
} pool_live_slot;

typedef struct pool_live {
  pool_live_slot *slots; /* NULL until the first insert */
  size_t mask;           /* slot count - 1 (a power of two) */
  unsigned shift;        /* 64 - log2(slot count) */
  size_t count;          /* blocks in the table */
} pool_live;

/* The slot where the probe for `addr` starts. */
static inline size_t pool_live_home(const pool_live *live, uintptr_t addr) {
  return (size_t)(((uint64_t)(addr >> 8) * 0x9e3779b97f4a7c15ULL) >> live->shift);
}

/* The block at `addr`, or NULL. */
static inline pool_block *pool_live_find(const pool_live *live, uintptr_t addr) {
  if (!live->slots || addr == 0) return NULL;
  for (size_t i = pool_live_home(live, addr);; i = (i + 1) & live->mask) {
    const pool_live_slot *slot = &live->slots[i];
    if (slot->addr == addr) return slot->block;
    if (slot->addr == 0) return NULL;
  }
}

/* Add a block under its address (not already in the table). False, nothing
 * changed, when host memory to grow the table runs out. */
bool pool_live_insert(pool_live *live, pool_block *block);

/* Remove the block at `addr` (in the table). */
void pool_live_remove(pool_live *live, uintptr_t addr);

/* Free the slots. */
void pool_live_destroy(pool_live *live);

#endif /* PLUME_POOL_LIVE_H */

/* benchmarks/pool_lookup.c: bench_pool --lookup.
 *
 * The device pool finds the descriptor of every block it is asked to free by
 * address. This times that lookup alone, over 100,000 live blocks, in the two
 * tables the pool has used: uthash keyed by address, as streams/hash.h configures
 * it, with its handle in the descriptor (the pool's live table until issue 18),
 * and the open-addressing table of pool/pool_live.h, which the pool uses now.
 *
 * Layout: 100,000 descriptors per table, in slabs of 256 as the pool allocates
 * them (the old descriptor with its 56-byte handle, the new one without), for
 * blocks of 1 to 16 granules (256 B to 4 KiB, uniform, fixed seed) laid back to
 * back at fake addresses (nothing is mapped there). As in a pool that has run for
 * a while, descriptors are not in address order (a random permutation of the
 * slabs' slots gives each block its descriptor) and blocks enter the tables in
 * random order. Two loops, each over the same random sequence of live addresses:
 *   find      look the address up and read the block's size (a free reads its
 *             descriptor too): ns per lookup;
 *   find+move look it up, take it out and put it back (a free takes the block
 *             out, the allocation that reuses it puts it back): the table's
 *             share of an alloc+free pair.
 * Each loop runs REPS times after a warm-up pass; the table gives the median and
 * the spread (min-max) of ns per operation, two clock reads per pass included.
 */
#define _POSIX_C_SOURCE 200809L

#include "pool_lookup.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pool/pool_block.h"
#include "pool/pool_index.h"
#include "pool/pool_live.h"
#include "streams/clock.h"
#include "streams/hash.h"

enum { BLOCKS = 100000, SLAB_BLOCKS = 256, REPS = 7 };

static const uintptr_t FIRST_BLOCK = (uintptr_t)1 << 40;

/* The descriptor as it was, with uthash's handle. */
typedef struct old_block {
  pool_block block;
  UT_hash_handle hh;
} old_block;

typedef struct lookup_env {
  old_block **old_slabs;
  pool_block **new_slabs;
  size_t slab_count;
  old_block **old_blocks; /* in address order */
  pool_block **new_blocks;
  uintptr_t *order; /* the addresses of a random sequence of blocks */
  size_t lookups;
  old_block *old_table;
  pool_live new_table;
} lookup_env;

static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

/* 0 .. BLOCKS-1 in a random order. */
static uint32_t *permutation(uint64_t *seed) {
  uint32_t *p = malloc(BLOCKS * sizeof *p);
  if (!p) return NULL;
  for (uint32_t i = 0; i < BLOCKS; i++) p[i] = i;
  for (size_t i = BLOCKS - 1; i > 0; i--) {
    size_t j = next_random(seed) % (i + 1);
    uint32_t t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  return p;
}

static bool build(lookup_env *env, size_t lookups) {
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  env->lookups = lookups;
  env->slab_count = (BLOCKS + SLAB_BLOCKS - 1) / SLAB_BLOCKS;
  env->old_slabs = calloc(env->slab_count, sizeof *env->old_slabs);
  env->new_slabs = calloc(env->slab_count, sizeof *env->new_slabs);
  env->old_blocks = calloc(BLOCKS, sizeof *env->old_blocks);
  env->new_blocks = calloc(BLOCKS, sizeof *env->new_blocks);
  env->order = malloc(lookups * sizeof *env->order);
  if (!env->old_slabs || !env->new_slabs || !env->old_blocks || !env->new_blocks || !env->order)
    return false;
  for (size_t s = 0; s < env->slab_count; s++) {
    env->old_slabs[s] = calloc(SLAB_BLOCKS, sizeof(old_block));
    env->new_slabs[s] = calloc(SLAB_BLOCKS, sizeof(pool_block));
    if (!env->old_slabs[s] || !env->new_slabs[s]) return false;
  }
  uint32_t *slot = permutation(&seed);
  uint32_t *insertion = permutation(&seed);
  bool ok = slot && insertion;
  uintptr_t next = FIRST_BLOCK;
  for (size_t i = 0; ok && i < BLOCKS; i++) {
    size_t size = (size_t)(1 + next_random(&seed) % 16) * POOL_GRANULE;
    old_block *old = &env->old_slabs[slot[i] / SLAB_BLOCKS][slot[i] % SLAB_BLOCKS];
    pool_block *block = &env->new_slabs[slot[i] / SLAB_BLOCKS][slot[i] % SLAB_BLOCKS];
    *block = (pool_block){.addr = next, .size = size, .state = BLOCK_USED};
    old->block = *block;
    env->old_blocks[i] = old;
    env->new_blocks[i] = block;
    next += size;
  }
  for (size_t i = 0; ok && i < BLOCKS; i++) {
    old_block *old = env->old_blocks[insertion[i]];
    HASH_ADD(hh, env->old_table, block.addr, sizeof old->block.addr, old);
    ok = PLM__HASH_ADDED(old) && pool_live_insert(&env->new_table, env->new_blocks[insertion[i]]);
  }
  for (size_t k = 0; ok && k < lookups; k++)
    env->order[k] = env->new_blocks[next_random(&seed) % BLOCKS]->addr;
  free(slot);
  free(insertion);
  return ok;
}

static void destroy(lookup_env *env) {
  HASH_CLEAR(hh, env->old_table);
  pool_live_destroy(&env->new_table);
  for (size_t s = 0; s < env->slab_count; s++) {
    if (env->old_slabs) free(env->old_slabs[s]);
    if (env->new_slabs) free(env->new_slabs[s]);
  }
  free(env->old_slabs);
  free(env->new_slabs);
  free(env->old_blocks);
  free(env->new_blocks);
  free(env->order);
}

typedef enum table_kind { OLD_UTHASH, NEW_LIVE } table_kind;

/* One pass over the sequence; returns ns per operation. `sink` keeps the reads. */
static double pass(lookup_env *env, table_kind kind, bool move, size_t *sink) {
  size_t sum = 0;
  uint64_t t0 = plm__monotonic_ns();
  for (size_t k = 0; k < env->lookups; k++) {
    uintptr_t addr = env->order[k];
    if (kind == OLD_UTHASH) {
      old_block *old = NULL;
      HASH_FIND(hh, env->old_table, &addr, sizeof addr, old);
      sum += old->block.size;
      if (move) {
        HASH_DELETE(hh, env->old_table, old);
        HASH_ADD(hh, env->old_table, block.addr, sizeof old->block.addr, old);
      }
    } else {
      pool_block *block = pool_live_find(&env->new_table, addr);
      sum += block->size;
      if (move) {
        pool_live_remove(&env->new_table, addr);
        pool_live_insert(&env->new_table, block);
      }
    }
  }
  uint64_t t1 = plm__monotonic_ns();
  *sink += sum;
  return (double)(t1 - t0) / (double)env->lookups;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

bool bench_pool_lookup(bool quick) {
  lookup_env env = {0};
  size_t lookups = quick ? 1000000 : 5000000;
  if (!build(&env, lookups)) {
    fprintf(stderr, "bench_pool: --lookup: out of host memory\n");
    destroy(&env);
    return false;
  }
  printf(
      "descriptor lookup by address: %d live blocks of 256 B to 4 KiB, %zu random lookups "
      "per pass,\n%d passes (median, min-max ns per operation)\n\n",
      BLOCKS, lookups, REPS);
  printf("%-30s %-10s %8s %16s\n", "table", "operation", "ns/op", "spread");
  static const char *const names[] = {"uthash (old)", "open addressing (pool_live.h)"};
  size_t sink = 0;
  for (int move = 0; move < 2; move++) {
    for (table_kind kind = OLD_UTHASH; kind <= NEW_LIVE; kind++) {
      double ns[REPS];
      pass(&env, kind, move, &sink); /* warm-up */
      for (int r = 0; r < REPS; r++) ns[r] = pass(&env, kind, move, &sink);
      qsort(ns, REPS, sizeof ns[0], compare_double);
      printf("%-30s %-10s %8.1f %7.1f-%-8.1f\n", names[kind], move ? "find+move" : "find",
             ns[REPS / 2], ns[0], ns[REPS - 1]);
    }
  }
  printf("\n(checksum %zu)\n", sink % 1000);
  destroy(&env);
  return true;
}

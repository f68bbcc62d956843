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
 *
 * A third row times what a free of a small block does now (pool/pool_slabs.h): the
 * slab map's lookup of the address and the read of the slot's state, in a real host
 * pool holding the same number of blocks (256 B to 4 KiB), over the blocks that are
 * slots (a class's first few blocks are not: slabs turn on with blocks live), in a
 * random order. There is no "move": a slot is freed by a bit.
 */
#define _POSIX_C_SOURCE 200809L

#include "pool_lookup.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "plume/pool.h"
#include "pool/pool_block.h"
#include "pool/pool_index.h"
#include "pool/pool_internal.h"
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

/* The slab row's setup: a host pool with BLOCKS live blocks of 1 to 16 granules, and
 * the addresses of those that are slots, shuffled. */
typedef struct slab_env {
  plm_context *ctx;
  plm_stream *stream;
  plm_pool *pool;
  void **blocks;
  uintptr_t *slots;
  size_t slot_count;
} slab_env;

static void slab_destroy(slab_env *e) {
  for (size_t i = 0; e->blocks && i < BLOCKS; i++)
    if (e->blocks[i]) plm_pool_free(e->pool, e->blocks[i], e->stream);
  if (e->pool) plm_pool_destroy(e->pool);
  if (e->stream) plm_stream_destroy(e->stream);
  if (e->ctx) plm_context_destroy(e->ctx);
  free(e->blocks);
  free(e->slots);
}

static bool slab_build(slab_env *e) {
  plm_context_config config = {.backend = PLM_BACKEND_HOST};
  if (plm_context_create(&config, &e->ctx) != PLM_OK ||
      plm_stream_create(e->ctx, 0, &e->stream) != PLM_OK ||
      plm_pool_create(e->ctx, NULL, &e->pool) != PLM_OK)
    return false;
  e->blocks = calloc(BLOCKS, sizeof *e->blocks);
  e->slots = calloc(BLOCKS, sizeof *e->slots);
  if (!e->blocks || !e->slots) return false;
  uint64_t seed = 0x5eed;
  for (size_t i = 0; i < BLOCKS; i++) {
    size_t bytes = (1 + (size_t)(next_random(&seed) % 16)) * POOL_GRANULE;
    if (plm_pool_alloc(e->pool, bytes, e->stream, &e->blocks[i]) != PLM_OK) return false;
    if (plm__pool_slab_find(e->pool, (uintptr_t)e->blocks[i]))
      e->slots[e->slot_count++] = (uintptr_t)e->blocks[i];
  }
  for (size_t i = e->slot_count; i > 1; i--) {
    size_t j = (size_t)(next_random(&seed) % i);
    uintptr_t t = e->slots[i - 1];
    e->slots[i - 1] = e->slots[j];
    e->slots[j] = t;
  }
  return e->slot_count > 0;
}

/* One pass of slab lookups over `lookups` addresses (cycling through the slots). */
static double slab_pass(const slab_env *e, size_t lookups, size_t *sink) {
  size_t sum = 0;
  uint64_t t0 = plm__monotonic_ns();
  for (size_t k = 0; k < lookups; k++) {
    uintptr_t addr = e->slots[k % e->slot_count];
    const pool_slab *slab = plm__pool_slab_find(e->pool, addr);
    sum += plm__pool_slot_state(slab, (unsigned)((addr - slab->base) / slab->slot_bytes));
  }
  uint64_t t1 = plm__monotonic_ns();
  *sink += sum;
  return (double)(t1 - t0) / (double)lookups;
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
  slab_env slabs = {0};
  bool built = slab_build(&slabs);
  if (built) {
    double ns[REPS];
    slab_pass(&slabs, lookups, &sink); /* warm-up */
    for (int r = 0; r < REPS; r++) ns[r] = slab_pass(&slabs, lookups, &sink);
    qsort(ns, REPS, sizeof ns[0], compare_double);
    printf("%-30s %-10s %8.1f %7.1f-%-8.1f (%zu of the blocks are slots)\n",
           "slab map (pool_slabs.h)", "find", ns[REPS / 2], ns[0], ns[REPS - 1],
           slabs.slot_count);
  } else {
    fprintf(stderr, "bench_pool: --lookup: the slab row's pool: %s\n", plm_last_error());
  }
  slab_destroy(&slabs);
  printf("\n(checksum %zu)\n", sink % 1000);
  destroy(&env);
  return built;
}

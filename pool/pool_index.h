/* pool/pool_index.h: the free-block index, a two-level segregated fit (TLSF).
 *
 * An index holds free blocks in classes. Sizes are counted in granules of 256
 * bytes (the pool's alignment). The first level is the power of two of the size
 * in granules, the second level splits each power of two into 16 equal classes;
 * sizes below 16 granules have one exact class each. A bitmap per level says which
 * classes are non-empty, so finding the smallest class whose every block fits a
 * request is two count-trailing-zeros operations: O(1) whatever the number of free
 * blocks, and a good fit (a block at most 1/16 larger than the request's class).
 *
 * Two kinds of lists share the classes:
 *   - `lists`: coalescable free blocks (the pool merges neighbours on free);
 *   - `cached`: small blocks (up to POOL_SMALL_MAX_GRANULES) kept at their exact
 *     class size and not merged, so that the hot small path is a list pop and a
 *     list push. They return to `lists` when the pool coalesces under pressure.
 * Lists are doubly linked through the block's free_prev/free_next.
 *
 * The index knows nothing of streams or chunks; the pooled resource (pool_blocks.c,
 * pool_pooled.c) decides which index a block lives in.
 */
#ifndef PLUME_POOL_INDEX_H
#define PLUME_POOL_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
  POOL_GRANULE = 256,
  POOL_SL_LOG2 = 4,
  POOL_SL_COUNT = 1 << POOL_SL_LOG2,
  POOL_FL_COUNT = 48,
  POOL_SMALL_MAX_GRANULES = 256, /* 64 KiB */
  POOL_CLASS_COUNT = POOL_FL_COUNT * POOL_SL_COUNT
};

typedef struct pool_block pool_block;

typedef struct pool_index {
  uint64_t fl_map;
  uint32_t sl_map[POOL_FL_COUNT];
  pool_block *lists[POOL_CLASS_COUNT];
  pool_block *cached[POOL_CLASS_COUNT]; /* only small classes are used */
  size_t free_bytes;                    /* in lists and cached */
  size_t cached_bytes;                  /* in cached only */
} pool_index;

/* The class a block of `granules` belongs to (rounding down). */
unsigned pool_class_of(size_t granules);

/* The smallest class all of whose blocks hold `granules`, and that class's lower
 * bound in granules (a small request is served at exactly that size). */
unsigned pool_class_for_request(size_t granules, size_t *class_granules);

void pool_index_insert(pool_index *index, pool_block *block);
void pool_index_remove(pool_index *index, pool_block *block);

/* A block of at least `granules` from `lists`, or NULL. Not removed. Checks the
 * head of the request's own class, then the smallest class that surely fits. */
pool_block *pool_index_find(const pool_index *index, size_t granules);

/* Cached small blocks of one exact class. */
void pool_index_push_cached(pool_index *index, pool_block *block, unsigned klass);
pool_block *pool_index_pop_cached(pool_index *index, unsigned klass);
void pool_index_remove_cached(pool_index *index, pool_block *block, unsigned klass);

/* A block of `lists` that `accept` takes, searching from the highest non-empty class
 * down to the class of min_granules (larger classes first; any order within a class),
 * or NULL. Not removed. O(classes + blocks looked at). */
pool_block *pool_index_find_largest(const pool_index *index, size_t min_granules,
                                    bool (*accept)(const pool_block *block));

/* The size in bytes of the largest free block (lists and cached); scans only the
 * highest non-empty class. */
size_t pool_index_largest(const pool_index *index);

#endif /* PLUME_POOL_INDEX_H */

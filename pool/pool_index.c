/* pool/pool_index.c: the two-level segregated fit index (see pool_index.h). */
#include "pool/pool_index.h"

#include "pool/pool_block.h"
#include "streams/assert.h"

static unsigned floor_log2(size_t value) {
  return 63u - (unsigned)__builtin_clzll(value);
}

static unsigned class_from_levels(unsigned fl, unsigned sl) {
  return fl * POOL_SL_COUNT + sl;
}

unsigned pool_class_of(size_t granules) {
  PLM_ASSERT(granules > 0);
  if (granules < POOL_SL_COUNT) return class_from_levels(0, (unsigned)granules);
  unsigned power = floor_log2(granules);
  unsigned sl = (unsigned)(granules >> (power - POOL_SL_LOG2)) - POOL_SL_COUNT;
  unsigned fl = power - POOL_SL_LOG2 + 1;
  PLM_ASSERT(fl < POOL_FL_COUNT);
  return class_from_levels(fl, sl);
}

/* The smallest size in granules of a class. */
static size_t class_lower_bound(unsigned klass) {
  unsigned fl = klass / POOL_SL_COUNT, sl = klass % POOL_SL_COUNT;
  if (fl == 0) return sl;
  return (size_t)(POOL_SL_COUNT + sl) << (fl - 1);
}

unsigned pool_class_for_request(size_t granules, size_t *class_granules) {
  size_t rounded = granules;
  if (granules >= POOL_SL_COUNT) {
    size_t step = (size_t)1 << (floor_log2(granules) - POOL_SL_LOG2);
    rounded = (granules + step - 1) & ~(step - 1);
  }
  unsigned klass = pool_class_of(rounded);
  if (class_granules) *class_granules = class_lower_bound(klass);
  return klass;
}

static void list_push(pool_block **head, pool_block *block) {
  block->free_prev = NULL;
  block->free_next = *head;
  if (*head) (*head)->free_prev = block;
  *head = block;
}

static void list_unlink(pool_block **head, pool_block *block) {
  if (block->free_prev)
    block->free_prev->free_next = block->free_next;
  else
    *head = block->free_next;
  if (block->free_next) block->free_next->free_prev = block->free_prev;
  block->free_prev = block->free_next = NULL;
}

void pool_index_insert(pool_index *index, pool_block *block) {
  unsigned klass = pool_class_of(block->size / POOL_GRANULE);
  unsigned fl = klass / POOL_SL_COUNT, sl = klass % POOL_SL_COUNT;
  list_push(&index->lists[klass], block);
  index->fl_map |= (uint64_t)1 << fl;
  index->sl_map[fl] |= 1u << sl;
  index->free_bytes += block->size;
}

void pool_index_remove(pool_index *index, pool_block *block) {
  unsigned klass = pool_class_of(block->size / POOL_GRANULE);
  unsigned fl = klass / POOL_SL_COUNT, sl = klass % POOL_SL_COUNT;
  list_unlink(&index->lists[klass], block);
  if (!index->lists[klass]) {
    index->sl_map[fl] &= ~(1u << sl);
    if (!index->sl_map[fl]) index->fl_map &= ~((uint64_t)1 << fl);
  }
  index->free_bytes -= block->size;
}

pool_block *pool_index_find(const pool_index *index, size_t granules) {
  /* The head of the request's own class may fit (an exact-size reuse): one check,
   * before the rounded-up search that guarantees a fit. */
  pool_block *same_class = index->lists[pool_class_of(granules)];
  if (same_class && same_class->size >= granules * POOL_GRANULE) return same_class;
  unsigned klass = pool_class_for_request(granules, NULL);
  unsigned fl = klass / POOL_SL_COUNT, sl = klass % POOL_SL_COUNT;
  if (fl >= POOL_FL_COUNT) return NULL;
  uint32_t sl_candidates = index->sl_map[fl] & (~0u << sl);
  if (!sl_candidates) {
    uint64_t fl_candidates = fl + 1 < 64 ? index->fl_map & (~(uint64_t)0 << (fl + 1)) : 0;
    if (!fl_candidates) return NULL;
    fl = (unsigned)__builtin_ctzll(fl_candidates);
    sl_candidates = index->sl_map[fl];
  }
  sl = (unsigned)__builtin_ctz(sl_candidates);
  return index->lists[class_from_levels(fl, sl)];
}

void pool_index_push_cached(pool_index *index, pool_block *block, unsigned klass) {
  list_push(&index->cached[klass], block);
  index->free_bytes += block->size;
  index->cached_bytes += block->size;
}

pool_block *pool_index_pop_cached(pool_index *index, unsigned klass) {
  pool_block *block = index->cached[klass];
  if (block) pool_index_remove_cached(index, block, klass);
  return block;
}

void pool_index_remove_cached(pool_index *index, pool_block *block, unsigned klass) {
  list_unlink(&index->cached[klass], block);
  index->free_bytes -= block->size;
  index->cached_bytes -= block->size;
}

size_t pool_index_largest(const pool_index *index) {
  size_t largest = 0;
  if (index->fl_map) {
    unsigned fl = 63u - (unsigned)__builtin_clzll(index->fl_map);
    unsigned sl = 31u - (unsigned)__builtin_clz(index->sl_map[fl]);
    for (const pool_block *b = index->lists[class_from_levels(fl, sl)]; b; b = b->free_next)
      if (b->size > largest) largest = b->size;
  }
  unsigned small_classes = pool_class_of(POOL_SMALL_MAX_GRANULES) + 1;
  for (unsigned klass = small_classes; klass-- > 0;) {
    if (index->cached[klass]) {
      if (index->cached[klass]->size > largest) largest = index->cached[klass]->size;
      break;
    }
  }
  return largest;
}

pool_block *pool_index_find_largest(const pool_index *index, size_t min_granules,
                                    bool (*accept)(const pool_block *block)) {
  const unsigned lowest = pool_class_of(min_granules);
  for (uint64_t fl_map = index->fl_map; fl_map;) {
    unsigned fl = 63u - (unsigned)__builtin_clzll(fl_map);
    fl_map &= ~((uint64_t)1 << fl);
    for (uint32_t sl_map = index->sl_map[fl]; sl_map;) {
      unsigned sl = 31u - (unsigned)__builtin_clz(sl_map);
      sl_map &= ~(1u << sl);
      unsigned klass = class_from_levels(fl, sl);
      if (klass < lowest) return NULL;
      for (pool_block *b = index->lists[klass]; b; b = b->free_next)
        if (accept(b)) return b;
    }
  }
  return NULL;
}

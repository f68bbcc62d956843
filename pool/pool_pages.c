/* pool/pool_pages.c: the memory under whole pages of free runs given back to the
 * backend and taken again (pool/pool_internal.h, "Giving memory back").
 *
 * Every function here is called with `slow_lock` held and `lock` not held; they take
 * `lock` for the block moves and release it around each backend call. While the
 * backend works on a range, its block is RELEASED but in no list: the fast path never
 * sees it (it is in no index and not live), neighbours never merge with it (only FREE
 * blocks merge), and only the slow path, which `slow_lock` serialises, lists it again.
 */
#include "pool/pool_internal.h"

bool plm__pool_pages_enabled(const plm_pool *pool) {
  return pool->backend->mem_decommit && pool->backend->mem_recommit && !pool->upstream.alloc &&
         !(pool->config.flags & PLM_POOL_KEEP_PAGES);
}

/* ---- the released index ---------------------------------------------------------------- */

static void list_released(plm_pool *pool, pool_block *block) {
  pool_index_insert(&pool->released, block);
}

static void unlist_released(plm_pool *pool, pool_block *block) {
  pool_index_remove(&pool->released, block);
}

/* List a RELEASED block, merged with the RELEASED blocks beside it. */
static void list_released_merged(plm_pool *pool, pool_block *block) {
  pool_block *prev = block->phys_prev;
  if (prev && prev->state == BLOCK_RELEASED) {
    unlist_released(pool, prev);
    plm__pool_absorb_next(pool, prev, block);
    block = prev;
  }
  pool_block *next = block->phys_next;
  if (next && next->state == BLOCK_RELEASED) {
    unlist_released(pool, next);
    plm__pool_absorb_next(pool, block, next);
  }
  list_released(pool, block);
}

/* ---- pages ------------------------------------------------------------------------------ */

/* The whole pages inside a block, page boundaries counted from its chunk's base:
 * [*first, *end), and whether there is one. */
static bool page_interior(const pool_block *block, uintptr_t *first, uintptr_t *end) {
  const uintptr_t base = block->chunk->base;
  const size_t page = block->chunk->page_bytes;
  *first = base + pool_round_up(block->addr - base, page);
  *end = base + (block->addr + block->size - base) / page * page;
  return *end > *first;
}

static bool has_free_page(const pool_block *block) {
  uintptr_t first, end;
  return page_interior(block, &first, &end);
}

/* Cut a detached block in two at `offset` bytes: a new descriptor for the rest, with
 * the block's state, owner and free history, linked after it. NULL (nothing changed)
 * when no descriptor is left. */
static pool_block *cut(plm_pool *pool, pool_block *block, size_t offset) {
  pool_block *rest = plm__pool_descriptor_new(pool);
  if (!rest) return NULL;
  rest->addr = block->addr + offset;
  rest->size = block->size - offset;
  rest->chunk = block->chunk;
  rest->state = block->state;
  rest->owner = block->owner;
  rest->freed_on = block->freed_on;
  rest->freed_at = block->freed_at;
  rest->phys_prev = block;
  rest->phys_next = block->phys_next;
  if (block->phys_next) block->phys_next->phys_prev = rest;
  block->phys_next = rest;
  block->size = offset;
  return rest;
}

/* Give back the pages inside `block`, a FREE block of the global index: its middle
 * becomes RELEASED, the parts of pages at its ends stay FREE. Returns the bytes given
 * back; 0 when no descriptor or the backend failed (the block is then whole and FREE
 * again). `lock` held on entry and on return, released around the backend call. */
static size_t decommit_block(plm_pool *pool, pool_block *block) {
  uintptr_t first, end;
  page_interior(block, &first, &end);
  plm__pool_detach_free_block(pool, block);
  pool_block *middle = block, *back = NULL;
  if (first > block->addr && !(middle = cut(pool, block, first - block->addr))) {
    plm__pool_attach_free_block(pool, block);
    return 0;
  }
  if (end < middle->addr + middle->size && !(back = cut(pool, middle, end - middle->addr))) {
    if (middle != block) plm__pool_absorb_next(pool, block, middle);
    plm__pool_attach_free_block(pool, block);
    return 0;
  }
  if (middle != block) plm__pool_attach_free_block(pool, block);
  if (back) plm__pool_attach_free_block(pool, back);
  middle->state = BLOCK_RELEASED;
  const size_t bytes = middle->size;

  pthread_mutex_unlock(&pool->lock);
  plm_status status = pool->backend->mem_decommit(pool->backend_ctx, (void *)middle->addr, bytes);
  pthread_mutex_lock(&pool->lock);

  if (status != PLM_OK) {
    middle->state = BLOCK_FREE;
    plm__pool_attach_free_block(pool, plm__pool_merge_neighbours(pool, middle));
    return 0;
  }
  middle->chunk->released += bytes;
  pool->stats.bytes_reserved -= bytes;
  pool->stats.bytes_released += bytes;
  list_released_merged(pool, middle);
  return bytes;
}

size_t plm__pool_decommit(plm_pool *pool, size_t goal_bytes) {
  if (!plm__pool_pages_enabled(pool)) return 0;
  size_t given = 0;
  pthread_mutex_lock(&pool->lock);
  while (given < goal_bytes) {
    pool_block *block =
        pool_index_find_largest(&pool->global, pool->page_bytes / POOL_GRANULE, has_free_page);
    size_t bytes = block ? decommit_block(pool, block) : 0;
    if (bytes == 0) break;
    given += bytes;
  }
  pthread_mutex_unlock(&pool->lock);
  return given;
}

void plm__pool_decommit_before_growth(plm_pool *pool, size_t need) {
  if (!plm__pool_pages_enabled(pool)) return;
  pthread_mutex_lock(&pool->lock);
  const size_t reserved = (size_t)pool->stats.bytes_reserved;
  const size_t in_use = (size_t)pool->stats.bytes_in_use;
  pthread_mutex_unlock(&pool->lock);
  const size_t after = reserved + pool_chunk_size(&pool->config, need, reserved);
  const size_t wanted = in_use + need;
  const size_t slack = wanted / 8 > pool->page_bytes ? wanted / 8 : pool->page_bytes;
  if (after > wanted + slack) plm__pool_decommit(pool, after - wanted - slack);
}

/* ---- taking pages again --------------------------------------------------------------- */

/* A FREE neighbour safe for all, which a recommitted part of a released block next to
 * it merges with; its size, or 0. */
static size_t free_beside(const pool_block *neighbour) {
  return neighbour && neighbour->state == BLOCK_FREE && !neighbour->owner ? neighbour->size : 0;
}

static size_t pages_for(size_t bytes, size_t page) {
  size_t pages = (bytes + page - 1) / page;
  return pages ? pages : 1;
}

/* Pages of one released block that, with the free blocks beside it, make a run of
 * `need` bytes: which block, how many pages, and whether they are its last ones (joining
 * the free block after it) rather than its first. The fewer of two candidates' (see
 * pool_internal.h, "Giving memory back"). `lock` held. */
typedef struct recommit_plan {
  pool_block *block;
  size_t pages;
  bool from_end;
} recommit_plan;

static bool any_block(const pool_block *block) {
  (void)block;
  return true;
}

static recommit_plan plan_recommit(const plm_pool *pool, size_t need) {
  recommit_plan best = {.pages = SIZE_MAX};
  const size_t edges = 2 * pool->page_bytes;
  const size_t near = need > edges + POOL_GRANULE ? need - edges : POOL_GRANULE;
  pool_block *const candidates[2] = {pool_index_find(&pool->released, near / POOL_GRANULE),
                                     pool_index_find_largest(&pool->released, 1, any_block)};
  for (int c = 0; c < 2; c++) {
    pool_block *r = candidates[c];
    if (!r) continue;
    const size_t before = free_beside(r->phys_prev), after = free_beside(r->phys_next);
    const size_t page = r->chunk->page_bytes, all = r->size / page;
    const recommit_plan options[3] = {
        {r, before >= need ? 1 : pages_for(need - before, page), false},
        {r, after >= need ? 1 : pages_for(need - after, page), true},
        {r, before + r->size + after >= need ? all : SIZE_MAX, false}};
    for (int i = 0; i < 3; i++)
      if (options[i].pages <= all && options[i].pages < best.pages) best = options[i];
  }
  return best;
}

bool plm__pool_recommit_for(plm_pool *pool, size_t need) {
  if (!plm__pool_pages_enabled(pool)) return false;
  pthread_mutex_lock(&pool->lock);
  recommit_plan plan = plan_recommit(pool, need);
  const size_t bytes = plan.block ? plan.pages * plan.block->chunk->page_bytes : 0;
  /* Pages taken again are memory taken from upstream: the byte limit admits them. */
  if (!plan.block || !pool_limit_admit(&pool->limit, pool->stats.bytes_reserved, bytes)) {
    pthread_mutex_unlock(&pool->lock);
    return false;
  }
  pool_block *part = plan.block;
  unlist_released(pool, part);
  if (bytes < part->size) {
    pool_block *rest = cut(pool, part, plan.from_end ? part->size - bytes : bytes);
    if (!rest) {
      list_released(pool, part);
      pool_limit_settle(&pool->limit, bytes);
      pthread_mutex_unlock(&pool->lock);
      return false;
    }
    if (plan.from_end) {
      list_released(pool, part); /* the front stays released */
      part = rest;
    } else {
      list_released(pool, rest);
    }
  }

  pthread_mutex_unlock(&pool->lock);
  plm_status status = pool->backend->mem_recommit(pool->backend_ctx, (void *)part->addr, bytes);
  pthread_mutex_lock(&pool->lock);
  pool_limit_settle(&pool->limit, bytes);

  if (status != PLM_OK) {
    list_released_merged(pool, part);
    pthread_mutex_unlock(&pool->lock);
    return false;
  }
  part->chunk->released -= bytes;
  pool->stats.bytes_released -= bytes;
  pool_count_reserved(&pool->stats, bytes);
  plm__pool_poison_now(pool, part->addr, bytes); /* fresh memory may have been mapped */
  part->state = BLOCK_FREE;
  part->owner = NULL;
  plm__pool_attach_free_block(pool, plm__pool_merge_neighbours(pool, part));
  pthread_mutex_unlock(&pool->lock);
  return true;
}

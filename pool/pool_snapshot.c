/* pool/pool_snapshot.c: plm_pool_snapshot_take, _copy and _free
 * (plume/pool.h). The snapshot reads the pool's chunks and block descriptors under
 * both locks (pool/pool_internal.h) and changes nothing: counting the blocks, then
 * copying them into arrays allocated while the locks are held, so that what is
 * copied is what was counted. */
#include <stdlib.h>
#include <string.h>

#include "pool/pool_internal.h"
#include "pool/pool_resource.h"
#include "streams/clock.h"
#include "streams/error.h"

/* The streams seen so far in a snapshot, numbered by first appearance. A snapshot
 * rarely sees more than a handful, so a linear search is enough. */
typedef struct stream_numbers {
  const plm_stream **streams;
  int count;
} stream_numbers;

static int stream_number(stream_numbers *numbers, const plm_stream *stream) {
  if (!stream) return -1;
  for (int i = 0; i < numbers->count; i++)
    if (numbers->streams[i] == stream) return i;
  numbers->streams[numbers->count] = stream;
  return numbers->count++;
}

/* A slab's block shows as its slots, each a block of the snapshot. */
static size_t count_blocks(const plm_pool *pool, size_t *segments) {
  size_t blocks = 0;
  *segments = 0;
  for (const pool_chunk *chunk = pool->chunks; chunk; chunk = chunk->next) {
    ++*segments;
    for (const pool_block *block = chunk->first; block; block = block->phys_next) {
      const pool_slab *slab = plm__pool_slab_of_block(pool, block);
      blocks += slab ? slab->slot_count : 1;
    }
  }
  return blocks;
}

static plm_pool_block_state public_state(const pool_block *block) {
  if (block->state == BLOCK_USED) return PLM_POOL_BLOCK_USED;
  if (block->state == BLOCK_RELEASED) return PLM_POOL_BLOCK_RELEASED;
  return block->owner ? PLM_POOL_BLOCK_PENDING : PLM_POOL_BLOCK_FREE;
}

/* USED blocks up to 64 KiB are served at a small class's exact size, and CACHED ones
 * are kept at it; FREE blocks are in the TLSF lists whatever their size. */
static int size_class(const pool_block *block) {
  bool small = block->size <= POOL_SMALL_MAX_BYTES;
  if (block->state == BLOCK_FREE || !small) return -1;
  return (int)pool_class_of(block->size / POOL_GRANULE);
}

static void copy_block(const pool_block *block, size_t segment, stream_numbers *numbers,
                       plm_pool_block_info *out) {
  const plm_stream *stream = block->owner ? block->owner->stream : block->freed_on;
  *out = (plm_pool_block_info){
      .segment = segment,
      .offset = block->addr - block->chunk->base,
      .size = block->size,
      .requested = block->state == BLOCK_USED ? block->requested : 0,
      .state = public_state(block),
      .stream = stream,
      .stream_index = stream_number(numbers, stream),
      .size_class = size_class(block),
      .freed_at = block->freed_at,
  };
}

/* One slot of a slab (plume/pool.h says what a slot shows). A free slot is safe for the
 * slab's owner only (PENDING on it), or for all in an orphan (FREE); a slot freed on
 * another stream is PENDING with no stream (the pool keeps the freeing stream with the
 * free, not with the slot). Slots keep no history: a USED one shows no stream and no
 * time, a free one the slab's last free. */
static void copy_slot(const pool_slab *slab, unsigned slot, size_t segment, stream_numbers *numbers,
                      plm_pool_block_info *out) {
  pool_slot_state state = plm__pool_slot_state(slab, slot);
  const plm_stream *stream = NULL;
  plm_pool_block_state public = PLM_POOL_BLOCK_USED;
  if (state == SLOT_FREE) {
    public = slab->owner ? PLM_POOL_BLOCK_PENDING : PLM_POOL_BLOCK_FREE;
    stream = slab->owner ? slab->owner->stream : slab->freed_on;
  } else if (state == SLOT_PENDING) {
    public = PLM_POOL_BLOCK_PENDING;
  }
  *out = (plm_pool_block_info){
      .segment = segment,
      .offset = slab->base + slot * slab->slot_bytes - slab->block->chunk->base,
      .size = slab->slot_bytes,
      .requested = state == SLOT_USED ? slab->requested[slot] : 0,
      .state = public,
      .stream = stream,
      .stream_index = stream_number(numbers, stream),
      .size_class = (int)slab->klass,
      .freed_at = state == SLOT_USED ? 0 : slab->freed_at,
  };
}

static void add_to_totals(plm_pool_snapshot *s, const plm_pool_block_info *b) {
  if (b->state == PLM_POOL_BLOCK_USED) {
    s->bytes_in_use += b->size;
    return;
  }
  if (b->state == PLM_POOL_BLOCK_RELEASED) {
    s->bytes_released += b->size;
    return;
  }
  if (b->state == PLM_POOL_BLOCK_PENDING)
    s->bytes_pending += b->size;
  else
    s->bytes_free += b->size;
  s->free_blocks++;
  if (b->size > s->largest_free_block) s->largest_free_block = b->size;
}

/* Copy every chunk and block into s, whose arrays hold them all. `lock` held. */
static void copy_layout(const plm_pool *pool, plm_pool_snapshot *s, stream_numbers *numbers) {
  size_t b = 0, c = 0;
  for (const pool_chunk *chunk = pool->chunks; chunk; chunk = chunk->next, c++) {
    s->segments[c] = (plm_pool_segment){.base = chunk->base,
                                        .size = chunk->size,
                                        .huge = chunk->size >= pool->config.huge_bytes,
                                        .first_block = b};
    for (const pool_block *block = chunk->first; block; block = block->phys_next) {
      const pool_slab *slab = plm__pool_slab_of_block(pool, block);
      for (unsigned slot = 0; slab && slot < slab->slot_count; slot++, b++) {
        copy_slot(slab, slot, c, numbers, &s->blocks[b]);
        add_to_totals(s, &s->blocks[b]);
      }
      if (slab) continue;
      copy_block(block, c, numbers, &s->blocks[b]);
      add_to_totals(s, &s->blocks[b++]);
    }
    s->segments[c].block_count = b - s->segments[c].first_block;
    s->bytes_reserved += chunk->size - chunk->released;
  }
  s->stream_count = numbers->count;
}

static void derive_figures(plm_pool_snapshot *s) {
  uint64_t free_bytes = s->bytes_free + s->bytes_pending;
  s->fragmentation = free_bytes ? 1.0 - (double)s->largest_free_block / (double)free_bytes : 0.0;
  s->reserved_per_in_use =
      s->bytes_in_use ? (double)s->bytes_reserved / (double)s->bytes_in_use : 0.0;
}

/* Allocate s's arrays and the stream numbering for the pool as it is. `lock` held. */
static bool allocate_arrays(const plm_pool *pool, plm_pool_snapshot *s, stream_numbers *numbers) {
  size_t segments = 0, blocks = count_blocks(pool, &segments);
  /* calloc(0) may return NULL: ask for at least one of each. */
  s->segments = calloc(segments ? segments : 1, sizeof *s->segments);
  s->blocks = calloc(blocks ? blocks : 1, sizeof *s->blocks);
  numbers->streams = calloc(blocks ? blocks : 1, sizeof *numbers->streams);
  s->segment_count = segments;
  s->block_count = blocks;
  return s->segments && s->blocks && numbers->streams;
}

plm_status plm_pool_snapshot_take(plm_pool *pool, plm_pool_snapshot **out) {
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  PLM__REQUIRE_NOT_NULL(pool);
  PLM__REFUSE_IN_HOST_CALLBACK(); /* slow_lock's holder may be waiting for this stream */
  if (!pool->resource->lays_out_chunks)
    return plm__fail(PLM_ERR_UNSUPPORTED, "pool is in %s mode, which keeps no chunks to show",
                     plm_pool_mode_name(pool->config.mode));
  plm_pool_snapshot *s = calloc(1, sizeof *s);
  if (!s) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory for a pool snapshot");
  stream_numbers numbers = {0};
  pthread_mutex_lock(&pool->slow_lock);
  pthread_mutex_lock(&pool->lock);
  bool allocated = allocate_arrays(pool, s, &numbers);
  if (allocated) copy_layout(pool, s, &numbers);
  pthread_mutex_unlock(&pool->lock);
  pthread_mutex_unlock(&pool->slow_lock);
  free(numbers.streams);
  if (!allocated) {
    size_t blocks = s->block_count;
    plm_pool_snapshot_free(s);
    return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory for a snapshot of %zu blocks", blocks);
  }
  s->taken_at = plm__monotonic_seconds();
  derive_figures(s);
  *out = s;
  return PLM_OK;
}

plm_status plm_pool_snapshot_copy(const plm_pool_snapshot *snapshot, plm_pool_snapshot **out) {
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  PLM__REQUIRE_NOT_NULL(snapshot);
  plm_pool_snapshot *copy = malloc(sizeof *copy);
  if (copy) {
    *copy = *snapshot;
    size_t segments = snapshot->segment_count ? snapshot->segment_count : 1;
    size_t blocks = snapshot->block_count ? snapshot->block_count : 1;
    copy->segments = calloc(segments, sizeof *copy->segments);
    copy->blocks = calloc(blocks, sizeof *copy->blocks);
  }
  if (!copy || !copy->segments || !copy->blocks) {
    plm_pool_snapshot_free(copy);
    return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory to copy a snapshot of %zu blocks",
                     snapshot->block_count);
  }
  if (snapshot->segment_count)
    memcpy(copy->segments, snapshot->segments, snapshot->segment_count * sizeof *copy->segments);
  if (snapshot->block_count)
    memcpy(copy->blocks, snapshot->blocks, snapshot->block_count * sizeof *copy->blocks);
  *out = copy;
  return PLM_OK;
}

void plm_pool_snapshot_free(plm_pool_snapshot *snapshot) {
  if (!snapshot) return;
  free(snapshot->segments);
  free(snapshot->blocks);
  free(snapshot);
}

const char *plm_pool_block_state_name(plm_pool_block_state state) {
  switch (state) {
    case PLM_POOL_BLOCK_USED: return "used";
    case PLM_POOL_BLOCK_FREE: return "free";
    case PLM_POOL_BLOCK_PENDING: return "pending";
    case PLM_POOL_BLOCK_RELEASED: return "released";
  }
  return "unknown";
}

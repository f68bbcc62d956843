/* tests/test_pool_snapshot.c: plm_pool_snapshot_take and its JSON (plume/pool.h) on
 * the backend under test: a known layout made on two streams, read back block by
 * block; the totals against plm_pool_stats_get; the JSON parsed back with jansson and
 * compared field by field; a copy; huge chunks; an empty pool; and bad input. */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "plume/pool.h"
#include "pool_test.h"

static const size_t KiB = 1024, MiB = 1024 * 1024;

/* A pool that grows by fixed 2 MiB chunks, so the layout below is predictable. */
static plm_pool *fixed_pool(size_t huge_bytes) {
  plm_pool_config config = plm_pool_config_default();
  config.growth = PLM_POOL_GROW_FIXED;
  config.min_chunk_bytes = 2 * MiB;
  config.huge_bytes = huge_bytes;
  return pool_with(&config);
}

/* Every segment's blocks start at offset 0, follow each other without a gap, and end at
 * the segment's size; together the segments list every block once. */
static void check_tiling(const plm_pool_snapshot *s) {
  size_t next_block = 0;
  for (size_t i = 0; i < s->segment_count; i++) {
    const plm_pool_segment *segment = &s->segments[i];
    ck_assert_uint_eq(segment->first_block, next_block);
    uint64_t offset = 0;
    for (size_t k = 0; k < segment->block_count; k++) {
      const plm_pool_block_info *b = &s->blocks[segment->first_block + k];
      ck_assert_uint_eq(b->segment, i);
      ck_assert_uint_eq(b->offset, offset);
      ck_assert_uint_gt(b->size, 0);
      ck_assert_uint_eq(b->size % 256, 0);
      offset += b->size;
    }
    ck_assert_uint_eq(offset, segment->size);
    next_block += segment->block_count;
  }
  ck_assert_uint_eq(next_block, s->block_count);
}

static void check_totals_match_stats(plm_pool *pool, const plm_pool_snapshot *s) {
  plm_pool_stats stats;
  PLM_CHECK_OK(plm_pool_stats_get(pool, &stats));
  ck_assert_uint_eq(s->bytes_reserved, stats.bytes_reserved);
  ck_assert_uint_eq(s->bytes_in_use, stats.bytes_in_use);
  ck_assert_uint_eq(s->largest_free_block, stats.largest_free_block);
  ck_assert_double_eq_tol(s->fragmentation, stats.fragmentation, 1e-12);
  ck_assert_uint_eq(s->bytes_in_use + s->bytes_free + s->bytes_pending, s->bytes_reserved);
}

static void check_block(const plm_pool_block_info *b, uint64_t offset, uint64_t size,
                        plm_pool_block_state state, int stream_index) {
  ck_assert_uint_eq(b->offset, offset);
  ck_assert_uint_eq(b->size, size);
  ck_assert_msg(b->state == state, "block at %llu is %s, expected %s", (unsigned long long)offset,
                plm_pool_block_state_name(b->state), plm_pool_block_state_name(state));
  ck_assert_int_eq(b->stream_index, stream_index);
}

/* ---- the JSON, parsed back ----------------------------------------------------------- */

static uint64_t json_u64(const json_t *object, const char *key) {
  const json_t *value = json_object_get(object, key);
  ck_assert_msg(json_is_integer(value), "\"%s\" is not an integer", key);
  return (uint64_t)json_integer_value(value);
}

static void check_json_block(const json_t *j, const plm_pool_block_info *b) {
  ck_assert_uint_eq(json_u64(j, "segment"), b->segment);
  ck_assert_uint_eq(json_u64(j, "offset"), b->offset);
  ck_assert_uint_eq(json_u64(j, "size"), b->size);
  ck_assert_uint_eq(json_u64(j, "requested"), b->requested);
  ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
                   plm_pool_block_state_name(b->state));
  const json_t *stream = json_object_get(j, "stream");
  if (b->stream_index < 0)
    ck_assert(json_is_null(stream));
  else
    ck_assert_int_eq(json_integer_value(stream), b->stream_index);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "size_class")), b->size_class);
  const json_t *freed_at = json_object_get(j, "freed_at");
  if (b->freed_at > 0)
    ck_assert_double_eq_tol(json_real_value(freed_at), b->freed_at, 1e-9);
  else
    ck_assert(json_is_null(freed_at));
}

static void check_json_round_trip(const plm_pool_snapshot *s) {
  char *text = NULL;
  PLM_CHECK_OK(plm_pool_snapshot_to_json(s, &text));
  json_error_t error;
  json_t *root = json_loads(text, 0, &error);
  ck_assert_msg(root != NULL, "the snapshot's JSON does not parse: %s", error.text);
  free(text);
  ck_assert_str_eq(json_string_value(json_object_get(root, "schema")), "plume-pool-snapshot");
  ck_assert_uint_eq(json_u64(root, "version"), 1);
  const json_t *totals = json_object_get(root, "totals");
  ck_assert_uint_eq(json_u64(totals, "bytes_reserved"), s->bytes_reserved);
  ck_assert_uint_eq(json_u64(totals, "bytes_in_use"), s->bytes_in_use);
  ck_assert_uint_eq(json_u64(totals, "bytes_free"), s->bytes_free);
  ck_assert_uint_eq(json_u64(totals, "bytes_pending"), s->bytes_pending);
  ck_assert_uint_eq(json_u64(totals, "largest_free_block"), s->largest_free_block);
  ck_assert_uint_eq(json_u64(totals, "free_blocks"), s->free_blocks);
  ck_assert_double_eq_tol(json_real_value(json_object_get(totals, "fragmentation")),
                          s->fragmentation, 1e-12);
  const json_t *segments = json_object_get(root, "segments");
  ck_assert_uint_eq(json_array_size(segments), s->segment_count);
  for (size_t i = 0; i < s->segment_count; i++) {
    const json_t *j = json_array_get(segments, i);
    ck_assert_uint_eq(json_u64(j, "base"), s->segments[i].base);
    ck_assert_uint_eq(json_u64(j, "size"), s->segments[i].size);
    ck_assert(json_boolean_value(json_object_get(j, "huge")) == s->segments[i].huge);
    ck_assert_uint_eq(json_u64(j, "first_block"), s->segments[i].first_block);
    ck_assert_uint_eq(json_u64(j, "block_count"), s->segments[i].block_count);
  }
  const json_t *blocks = json_object_get(root, "blocks");
  ck_assert_uint_eq(json_array_size(blocks), s->block_count);
  for (size_t i = 0; i < s->block_count; i++)
    check_json_block(json_array_get(blocks, i), &s->blocks[i]);
  json_decref(root);
}

/* ---- the tests ---------------------------------------------------------------------- */

START_TEST(test_snapshot_shows_a_known_layout_on_two_streams) {
  plm_pool *pool = fixed_pool(0);
  plm_stream *first = new_stream(), *second = new_stream();
  void *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  /* One chunk: a 100 KiB, c 200 KiB and d 300 KiB cut from the front of the free run in
   * address order, b (a small block above the slabs' 16 KiB) from its tail
   * (pool/pool_internal.h). */
  PLM_CHECK_OK(plm_pool_alloc(pool, 100 * KiB, first, &a));
  PLM_CHECK_OK(plm_pool_alloc(pool, 32 * KiB, first, &b));
  PLM_CHECK_OK(plm_pool_alloc(pool, 200 * KiB, first, &c));
  PLM_CHECK_OK(plm_pool_alloc(pool, 300 * KiB, second, &d));
  /* b pending on the first stream (a cached small block), c on the second. */
  PLM_CHECK_OK(plm_pool_free(pool, b, first));
  PLM_CHECK_OK(plm_pool_free(pool, c, second));

  plm_pool_snapshot *s = NULL;
  PLM_CHECK_OK(plm_pool_snapshot_take(pool, &s));
  ck_assert_uint_eq(s->segment_count, 1);
  ck_assert_uint_eq(s->segments[0].size, 2 * MiB);
  ck_assert_uint_eq(s->segments[0].base, (uintptr_t)a);
  ck_assert(!s->segments[0].huge);
  ck_assert_uint_eq(s->block_count, 5);
  check_tiling(s);
  /* Streams are numbered by first appearance in address order: c's (second) is 0. */
  check_block(&s->blocks[0], 0, 100 * KiB, PLM_POOL_BLOCK_USED, -1);
  check_block(&s->blocks[1], 100 * KiB, 200 * KiB, PLM_POOL_BLOCK_PENDING, 0);
  check_block(&s->blocks[2], 300 * KiB, 300 * KiB, PLM_POOL_BLOCK_USED, -1);
  check_block(&s->blocks[3], 600 * KiB, 2 * MiB - 632 * KiB, PLM_POOL_BLOCK_FREE, -1);
  check_block(&s->blocks[4], 2 * MiB - 32 * KiB, 32 * KiB, PLM_POOL_BLOCK_PENDING, 1);
  ck_assert_ptr_eq(s->blocks[1].stream, second);
  ck_assert_ptr_eq(s->blocks[4].stream, first);
  ck_assert_int_eq(s->stream_count, 2);
  ck_assert_uint_eq(s->blocks[0].requested, 100 * KiB);
  ck_assert_uint_eq(s->blocks[2].requested, 300 * KiB);
  /* Small classes: USED and cached blocks up to 64 KiB; the rest are TLSF's. */
  ck_assert_int_ge(s->blocks[4].size_class, 0);
  for (size_t i = 0; i < s->block_count; i++)
    if (i != 4) ck_assert_int_eq(s->blocks[i].size_class, -1);
  /* Times of the last free: only b and then c were freed, before the snapshot. */
  ck_assert(s->blocks[4].freed_at > 0 && s->blocks[4].freed_at <= s->taken_at);
  ck_assert(s->blocks[1].freed_at >= s->blocks[4].freed_at);
  ck_assert(s->blocks[0].freed_at == 0 && s->blocks[2].freed_at == 0);
  ck_assert_uint_eq(s->bytes_in_use, 400 * KiB);
  ck_assert_uint_eq(s->bytes_pending, 232 * KiB);
  ck_assert_uint_eq(s->bytes_free, 2 * MiB - 632 * KiB);
  ck_assert_uint_eq(s->free_blocks, 3);
  check_totals_match_stats(pool, s);
  check_json_round_trip(s);
  /* A copy is equal, in arrays of its own. */
  plm_pool_snapshot *copy = NULL;
  PLM_CHECK_OK(plm_pool_snapshot_copy(s, &copy));
  ck_assert_ptr_ne(copy->blocks, s->blocks);
  ck_assert_uint_eq(copy->block_count, s->block_count);
  ck_assert_mem_eq(copy->blocks, s->blocks, s->block_count * sizeof *s->blocks);
  ck_assert_mem_eq(copy->segments, s->segments, s->segment_count * sizeof *s->segments);
  ck_assert_uint_eq(copy->bytes_pending, s->bytes_pending);
  plm_pool_snapshot_free(copy);
  plm_pool_snapshot_free(s);

  PLM_CHECK_OK(plm_pool_free(pool, a, first));
  PLM_CHECK_OK(plm_pool_free(pool, d, second));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(first));
  PLM_CHECK_OK(plm_stream_destroy(second));
}
END_TEST

/* Requests up to 16 KiB become slots of a slab once enough of their class are live
 * (pool/pool_slabs.h; 16 of the 1 KiB class, whose slabs hold 65 slots): the snapshot shows each slot as a block of
 * its class, the slab's free slots pending on the stream that owns the slab, and a slot
 * freed on another stream pending with no stream until that stream has passed the free. */
START_TEST(test_snapshot_shows_the_slots_of_a_slab) {
  enum { SLOTS = 65, ON = 16 };
  plm_pool *pool = fixed_pool(0);
  plm_stream *owner = new_stream(), *other = new_stream();
  void *tail[ON], *slots[3] = {NULL};
  /* 16 blocks of 1 KiB of their own, cut from the chunk's tail, then three slots of a slab
   * at its front. */
  for (int i = 0; i < ON; i++) PLM_CHECK_OK(plm_pool_alloc(pool, 1000, owner, &tail[i]));
  for (int i = 0; i < 3; i++) PLM_CHECK_OK(plm_pool_alloc(pool, 1000, owner, &slots[i]));
  ck_assert_ptr_eq((char *)slots[1], (char *)slots[0] + KiB);
  ck_assert_ptr_eq((char *)slots[2], (char *)slots[0] + 2 * KiB);
  PLM_CHECK_OK(plm_pool_free(pool, slots[1], other)); /* pending on `other` */
  PLM_CHECK_OK(plm_pool_free(pool, slots[2], owner)); /* free at once for `owner` */

  plm_pool_snapshot *s = NULL;
  PLM_CHECK_OK(plm_pool_snapshot_take(pool, &s));
  ck_assert_uint_eq(s->segment_count, 1);
  ck_assert_uint_eq(s->segments[0].base, (uintptr_t)slots[0]);
  ck_assert_uint_eq(s->block_count, SLOTS + 1 + ON); /* slots, the free run, the tail */
  check_tiling(s);
  const plm_pool_block_info *b = s->blocks;
  check_block(&b[0], 0, KiB, PLM_POOL_BLOCK_USED, -1);
  ck_assert_uint_eq(b[0].requested, 1000);
  ck_assert_int_eq(b[1].state, PLM_POOL_BLOCK_PENDING);
  ck_assert_ptr_null(b[1].stream);
  ck_assert_uint_eq(b[1].requested, 0);
  for (int i = 2; i < SLOTS; i++) {
    ck_assert_int_eq(b[i].state, PLM_POOL_BLOCK_PENDING);
    ck_assert_ptr_eq(b[i].stream, owner);
    ck_assert_uint_eq(b[i].size, KiB);
  }
  for (int i = 0; i < SLOTS; i++) ck_assert_int_eq(b[i].size_class, b[0].size_class);
  ck_assert_int_ge(b[0].size_class, 0);
  check_block(&b[SLOTS], SLOTS * KiB, 2 * MiB - (SLOTS + ON) * KiB, PLM_POOL_BLOCK_FREE, -1);
  for (int i = SLOTS + 1; i < SLOTS + 1 + ON; i++) ck_assert_int_eq(b[i].state, PLM_POOL_BLOCK_USED);
  ck_assert_uint_eq(s->bytes_in_use, (ON + 1) * KiB);
  ck_assert_uint_eq(s->bytes_pending, (SLOTS - 1) * KiB);
  check_totals_match_stats(pool, s);
  check_json_round_trip(s);
  plm_pool_snapshot_free(s);

  /* Once `other` has passed its free (a trim waits for it), the slot is the owner's
   * again, as the slab's other free slots. */
  PLM_CHECK_OK(plm_pool_trim(pool, SIZE_MAX));
  PLM_CHECK_OK(plm_pool_snapshot_take(pool, &s));
  ck_assert_ptr_eq(s->blocks[1].stream, owner);
  check_totals_match_stats(pool, s);
  plm_pool_snapshot_free(s);

  /* Freed and trimmed, the slab goes back and the chunk with it. */
  PLM_CHECK_OK(plm_pool_free(pool, slots[0], owner));
  for (int i = 0; i < ON; i++) PLM_CHECK_OK(plm_pool_free(pool, tail[i], owner));
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  plm_pool_stats stats;
  PLM_CHECK_OK(plm_pool_stats_get(pool, &stats));
  ck_assert_uint_eq(stats.bytes_reserved, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(owner));
  PLM_CHECK_OK(plm_stream_destroy(other));
}
END_TEST

START_TEST(test_huge_requests_show_as_huge_segments) {
  plm_pool *pool = fixed_pool(4 * MiB);
  plm_stream *stream = new_stream();
  void *small = NULL, *huge = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 4 * KiB, stream, &small));
  PLM_CHECK_OK(plm_pool_alloc(pool, 5 * MiB, stream, &huge));
  plm_pool_snapshot *s = NULL;
  PLM_CHECK_OK(plm_pool_snapshot_take(pool, &s));
  ck_assert_uint_eq(s->segment_count, 2);
  check_tiling(s);
  size_t huge_index = s->segments[0].huge ? 0 : 1;
  ck_assert(s->segments[huge_index].huge && !s->segments[1 - huge_index].huge);
  ck_assert_uint_eq(s->segments[huge_index].size, 5 * MiB);
  ck_assert_uint_eq(s->segments[huge_index].block_count, 1);
  check_totals_match_stats(pool, s);
  check_json_round_trip(s);
  plm_pool_snapshot_free(s);
  PLM_CHECK_OK(plm_pool_free(pool, small, stream));
  PLM_CHECK_OK(plm_pool_free(pool, huge, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_an_empty_pool_has_no_segments) {
  plm_pool *pool = fixed_pool(0);
  plm_pool_snapshot *s = NULL;
  PLM_CHECK_OK(plm_pool_snapshot_take(pool, &s));
  ck_assert_uint_eq(s->segment_count, 0);
  ck_assert_uint_eq(s->block_count, 0);
  ck_assert_uint_eq(s->bytes_reserved, 0);
  ck_assert(s->fragmentation == 0 && s->reserved_per_in_use == 0);
  check_json_round_trip(s);
  FILE *file = tmpfile();
  ck_assert_ptr_nonnull(file);
  PLM_CHECK_OK(plm_pool_snapshot_write_json(s, file));
  rewind(file);
  json_error_t error;
  json_t *root = json_loadf(file, 0, &error);
  ck_assert_msg(root != NULL, "the written JSON does not parse: %s", error.text);
  ck_assert_uint_eq(json_array_size(json_object_get(root, "blocks")), 0);
  json_decref(root);
  fclose(file);
  plm_pool_snapshot_free(s);
  PLM_CHECK_OK(plm_pool_destroy(pool));
}
END_TEST

START_TEST(test_bad_input_is_reported) {
  plm_pool *pool = fixed_pool(0);
  plm_pool_snapshot *s = (plm_pool_snapshot *)&s; /* not NULL: the call must clear it */
  PLM_CHECK_FAILS(plm_pool_snapshot_take(NULL, &s), PLM_ERR_INVALID_ARG, "pool");
  ck_assert_ptr_null(s);
  PLM_CHECK_FAILS(plm_pool_snapshot_take(pool, NULL), PLM_ERR_INVALID_ARG, "out");
  char *text = NULL;
  PLM_CHECK_FAILS(plm_pool_snapshot_to_json(NULL, &text), PLM_ERR_INVALID_ARG, "snapshot");
  PLM_CHECK_OK(plm_pool_snapshot_take(pool, &s));
  PLM_CHECK_FAILS(plm_pool_snapshot_to_json(s, NULL), PLM_ERR_INVALID_ARG, "json");
  PLM_CHECK_FAILS(plm_pool_snapshot_write_json(s, NULL), PLM_ERR_INVALID_ARG, "file");
  PLM_CHECK_FAILS(plm_pool_snapshot_write_json(NULL, stdout), PLM_ERR_INVALID_ARG, "snapshot");
  plm_pool_snapshot *copy = (plm_pool_snapshot *)&copy;
  PLM_CHECK_FAILS(plm_pool_snapshot_copy(NULL, &copy), PLM_ERR_INVALID_ARG, "snapshot");
  ck_assert_ptr_null(copy);
  PLM_CHECK_FAILS(plm_pool_snapshot_copy(s, NULL), PLM_ERR_INVALID_ARG, "out");
  plm_pool_snapshot_free(s);
  plm_pool_snapshot_free(NULL);
  ck_assert_str_eq(plm_pool_block_state_name((plm_pool_block_state)7), "unknown");
  PLM_CHECK_OK(plm_pool_destroy(pool));

  plm_pool_config config = plm_pool_config_default();
  config.mode = PLM_POOL_PASSTHROUGH;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &config, &pool));
  PLM_CHECK_FAILS(plm_pool_snapshot_take(pool, &s), PLM_ERR_UNSUPPORTED, "passthrough");
  ck_assert_ptr_null(s);
  PLM_CHECK_OK(plm_pool_destroy(pool));
}
END_TEST

typedef struct callback_probe {
  plm_pool *pool;
  plm_status status;
  plm_pool_snapshot *snapshot;
  char message[256];
} callback_probe;

static void snapshot_from_callback(void *user) {
  callback_probe *probe = user;
  probe->status = plm_pool_snapshot_take(probe->pool, &probe->snapshot);
  snprintf(probe->message, sizeof probe->message, "%s", plm_last_error());
}

/* The slow path holds the pool's slow lock while it waits for a stream's event: a
 * snapshot from that stream's host callback would wait for it forever, so it is refused. */
START_TEST(test_a_snapshot_is_refused_in_a_host_callback) {
  plm_pool *pool = fixed_pool(0);
  plm_stream *stream = new_stream();
  callback_probe probe = {.pool = pool};
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, snapshot_from_callback, &probe));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  ck_assert_int_eq(probe.status, PLM_ERR_INVALID_STATE);
  ck_assert_ptr_null(probe.snapshot);
  ck_assert_msg(strstr(probe.message, "host callback"), "%s", probe.message);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

static Suite *pool_snapshot_suite(void) {
  Suite *suite = suite_create("pool_snapshot");
  TCase *tcase = tcase_create("snapshot");
  plm_test_add_fixture(tcase);
  tcase_add_test(tcase, test_snapshot_shows_a_known_layout_on_two_streams);
  tcase_add_test(tcase, test_snapshot_shows_the_slots_of_a_slab);
  tcase_add_test(tcase, test_huge_requests_show_as_huge_segments);
  tcase_add_test(tcase, test_an_empty_pool_has_no_segments);
  tcase_add_test(tcase, test_bad_input_is_reported);
  tcase_add_test(tcase, test_a_snapshot_is_refused_in_a_host_callback);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(pool_snapshot_suite);
}

/* tests/test_pool_slabs.c: small blocks carved from slabs (pool/pool_slabs.h) on the
 * backend under test: when a class turns slabs on and off, slots freed on the slab's
 * stream and on another, a destroyed stream's slabs adopted by another, refused frees,
 * what trim gives back, and PLM_POOL_NO_SLABS. The layout is read from addresses: in a
 * fresh 2 MiB chunk a small block that is not a slot is cut from the tail of the free
 * run, and a slab (a larger block) from its front, so a slot sits at the chunk's base.
 * Every 1000-byte request here is of the 1 KiB class, whose slabs hold 65 slots (the
 * fewest past 64 KiB), and which turns slabs on with 16 blocks live (a quarter of a
 * slab's worth) and off below 4. Block contents are never touched, so every test runs on cuda as
 * well; debug builds check the pool's invariants on every slow path. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "gate.h"
#include "harness.h"
#include "plume/pool.h"
#include "pool_test.h"

static const size_t KiB = 1024, MiB = 1024 * 1024;
enum { SLAB_SLOTS = 65, SLABS_ON = 16, SLABS_OFF = 4, REQUEST = 1000 };

static plm_pool *fixed_pool(unsigned flags) {
  plm_pool_config config = plm_pool_config_default();
  config.growth = PLM_POOL_GROW_FIXED;
  config.flags = flags;
  return pool_with(&config);
}

/* Allocate n blocks of REQUEST bytes on stream into ptrs. */
static void alloc_n(plm_pool *pool, plm_stream *stream, void **ptrs, int n) {
  for (int i = 0; i < n; i++) PLM_CHECK_OK(plm_pool_alloc(pool, REQUEST, stream, &ptrs[i]));
}

static void free_n(plm_pool *pool, plm_stream *stream, void **ptrs, int n) {
  for (int i = 0; i < n; i++) PLM_CHECK_OK(plm_pool_free(pool, ptrs[i], stream));
}

/* The chunk's base, from the first small block cut from its tail. */
static char *base_below(void *first_tail_block) {
  return (char *)first_tail_block - 2 * MiB + KiB;
}

static bool in_first_slab(const void *ptr, const char *base) {
  return (const char *)ptr >= base && (const char *)ptr < base + SLAB_SLOTS * KiB;
}

START_TEST(test_a_class_turns_slabs_on_and_off_by_its_blocks_live) {
  plm_pool *pool = fixed_pool(0);
  plm_stream *stream = new_stream();
  void *blocks[SLABS_ON + 2];
  /* The first blocks are blocks of their own, cut from the chunk's tail... */
  alloc_n(pool, stream, blocks, SLABS_ON);
  char *base = base_below(blocks[0]);
  for (int i = 1; i < SLABS_ON; i++)
    ck_assert_ptr_eq((char *)blocks[i], (char *)blocks[i - 1] - KiB);
  /* ...and then the class is served from a slab at the front: slots in address order. */
  alloc_n(pool, stream, blocks + SLABS_ON, 2);
  ck_assert_ptr_eq((char *)blocks[SLABS_ON], base);
  ck_assert_ptr_eq((char *)blocks[SLABS_ON + 1], base + KiB);
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.live_blocks, SLABS_ON + 2);
  ck_assert_uint_eq(stats.bytes_in_use, (SLABS_ON + 2) * KiB);
  ck_assert_uint_eq(stats.bytes_requested, (SLABS_ON + 2) * REQUEST);
  /* Slots and blocks free alike. Below SLABS_OFF live, the class goes back to blocks of
   * their own: with one slot still live, a new block is not a slot. */
  free_n(pool, stream, blocks, SLABS_ON + 1);
  void *after = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, REQUEST, stream, &after));
  ck_assert(!in_first_slab(after, base));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.live_blocks, 2);
  ck_assert_uint_eq(stats.bytes_in_use, 2 * KiB);
  PLM_CHECK_OK(plm_pool_free(pool, after, stream));
  PLM_CHECK_OK(plm_pool_free(pool, blocks[SLABS_ON + 1], stream));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.live_blocks, 0);
  ck_assert_uint_eq(stats.bytes_in_use, 0);
  ck_assert_uint_eq(stats.bytes_requested, 0);
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  ck_assert_uint_eq(stats_of(pool).bytes_reserved, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* Fill the first slab: SLABS_ON blocks of their own (kept in `tail`), then SLAB_SLOTS
 * slots (in `slots`, slot i at base + i KiB). Returns the chunk's base. */
static char *fill_a_slab(plm_pool *pool, plm_stream *stream, void **tail, void **slots) {
  alloc_n(pool, stream, tail, SLABS_ON);
  alloc_n(pool, stream, slots, SLAB_SLOTS);
  char *base = base_below(tail[0]);
  for (int i = 0; i < SLAB_SLOTS; i++) ck_assert_ptr_eq((char *)slots[i], base + i * KiB);
  return base;
}

/* Free the slots and the tail of fill_a_slab on `stream`; then a trim gives everything
 * back, and the pool and the stream go. */
static void empty_and_destroy(plm_pool *pool, plm_stream *stream, void **tail, void **slots) {
  free_n(pool, stream, slots, SLAB_SLOTS);
  free_n(pool, stream, tail, SLABS_ON);
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  ck_assert_uint_eq(stats_of(pool).bytes_reserved, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}

START_TEST(test_a_slot_freed_on_its_stream_is_reused_there_at_once) {
  plm_pool *pool = fixed_pool(0);
  plm_stream *stream = new_stream();
  void *tail[SLABS_ON], *slots[SLAB_SLOTS], *again = NULL;
  fill_a_slab(pool, stream, tail, slots);
  PLM_CHECK_OK(plm_pool_free(pool, slots[7], stream));
  PLM_CHECK_OK(plm_pool_alloc(pool, REQUEST, stream, &again));
  ck_assert_ptr_eq(again, slots[7]);
  empty_and_destroy(pool, stream, tail, slots);
}
END_TEST

START_TEST(test_a_slot_freed_on_another_stream_waits_for_it) {
  plm_pool *pool = fixed_pool(0);
  plm_stream *owner = new_stream(), *other = new_stream();
  void *tail[SLABS_ON], *slots[SLAB_SLOTS], *next = NULL, *again = NULL;
  char *base = fill_a_slab(pool, owner, tail, slots);
  /* Freed on `other`, slot 7 is pending there: the owner's next slot comes from a new
   * slab, not from slot 7. */
  PLM_CHECK_OK(plm_pool_free(pool, slots[7], other));
  PLM_CHECK_OK(plm_pool_alloc(pool, REQUEST, owner, &next));
  ck_assert(!in_first_slab(next, base));
  /* Once the pool knows `other` passed the free (trim waits for it), slot 7 is free for
   * the owner again. */
  PLM_CHECK_OK(plm_pool_trim(pool, SIZE_MAX));
  PLM_CHECK_OK(plm_pool_alloc(pool, REQUEST, owner, &again));
  ck_assert_ptr_eq(again, slots[7]);
  PLM_CHECK_OK(plm_pool_free(pool, again, owner));
  PLM_CHECK_OK(plm_pool_free(pool, next, owner));
  for (int i = 0; i < SLAB_SLOTS; i++)
    if (i != 7) PLM_CHECK_OK(plm_pool_free(pool, slots[i], other));
  free_n(pool, owner, tail, SLABS_ON);
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.live_blocks, 0);
  ck_assert_uint_eq(stats.bytes_reserved, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(owner));
  PLM_CHECK_OK(plm_stream_destroy(other));
}
END_TEST

/* Opens a gate after a pause, saying so first. */
typedef struct late_opener {
  gate *gate;
  atomic_bool opened;
} late_opener;

static void *open_later(void *arg) {
  late_opener *o = arg;
  nanosleep(&(struct timespec){.tv_nsec = 200 * 1000 * 1000}, NULL);
  atomic_store(&o->opened, true);
  gate_open(o->gate);
  return NULL;
}

/* A stream takes its own frees at once, so a slab may be cut from memory its stream
 * freed a moment ago, with that stream's work on it still to run. Emptied by frees on
 * another stream, the slab goes back pending on its own stream: no other stream may
 * have the memory before that stream has passed the free (the stress test caught the
 * pool handing it over at once, and giving its pages back under a pending read). */
START_TEST(test_a_slab_on_memory_its_stream_just_freed_waits_for_that_stream) {
  gate hold;
  gate_init(&hold, 10000);
  plm_pool_config config = plm_pool_config_default();
  config.growth = PLM_POOL_GROW_FIXED;
  config.byte_limit = 2 * MiB;
  /* No stream waits, no pages given back: the memory is either handed over or not. */
  config.flags = PLM_POOL_NO_STREAM_WAITS | PLM_POOL_KEEP_PAGES;
  plm_pool *pool = pool_with(&config);
  plm_stream *owner = new_stream(), *other = new_stream(), *third = new_stream();
  void *tail[SLABS_ON], *x = NULL, *slot = NULL, *big = NULL;
  alloc_n(pool, owner, tail, SLABS_ON); /* the 1 KiB class is on */
  char *base = base_below(tail[0]);
  PLM_CHECK_OK(plm_pool_alloc(pool, SLAB_SLOTS * KiB, owner, &x)); /* a slab's size */
  ck_assert_ptr_eq((char *)x, base);
  PLM_CHECK_OK(plm_stream_enqueue_host(owner, gate_wait_task, &hold));
  PLM_CHECK_OK(plm_pool_free(pool, x, owner)); /* pending on `owner`, behind the gate */
  PLM_CHECK_OK(plm_pool_alloc(pool, REQUEST, owner, &slot));
  ck_assert_ptr_eq(slot, x); /* the new slab took x's memory at once */
  PLM_CHECK_OK(plm_pool_free(pool, slot, other)); /* the slab empties once `other` passes */
  /* Under the byte limit only memory `owner` freed can hold this request (x's, and the
   * rest of the chunk, which x's free absorbed): the pool must wait for `owner` to pass
   * its free, however the slab went back. */
  late_opener opener = {.gate = &hold};
  pthread_t thread;
  ck_assert_int_eq(pthread_create(&thread, NULL, open_later, &opener), 0);
  PLM_CHECK_OK(plm_pool_alloc(pool, SLAB_SLOTS * KiB, third, &big));
  ck_assert_msg(atomic_load(&opener.opened),
                "another stream got memory its stream had freed before that stream ran");
  ck_assert_int_eq(pthread_join(thread, NULL), 0);
  ck_assert(!hold.timed_out);
  PLM_CHECK_OK(plm_pool_free(pool, big, third));
  free_n(pool, owner, tail, SLABS_ON);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(owner));
  PLM_CHECK_OK(plm_stream_destroy(other));
  PLM_CHECK_OK(plm_stream_destroy(third));
  gate_destroy(&hold);
}
END_TEST

/* Where no slab fits (a byte limit, and no free run of a slab's size), a small request
 * of a class that is on is served as a block of its own, and no failure is counted. */
START_TEST(test_a_small_request_without_room_for_a_slab_is_a_block_of_its_own) {
  plm_pool_config config = plm_pool_config_default();
  config.growth = PLM_POOL_GROW_FIXED;
  config.byte_limit = 2 * MiB;
  config.flags = PLM_POOL_KEEP_PAGES;
  plm_pool *pool = pool_with(&config);
  plm_stream *stream = new_stream();
  void *tail[SLABS_ON], *filler = NULL, *small = NULL;
  alloc_n(pool, stream, tail, SLABS_ON); /* the 1 KiB class is on */
  char *base = base_below(tail[0]);
  /* All but 32 KiB of the chunk: no room for a slab (65 KiB), room for a block. */
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB - SLABS_ON * KiB - 32 * KiB, stream, &filler));
  ck_assert_ptr_eq((char *)filler, base);
  PLM_CHECK_OK(plm_pool_alloc(pool, REQUEST, stream, &small));
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.failures, 0);
  ck_assert_uint_eq(stats.bytes_reserved, 2 * MiB);
  ck_assert_uint_eq(stats.live_blocks, SLABS_ON + 2);
  PLM_CHECK_OK(plm_pool_free(pool, small, stream));
  PLM_CHECK_OK(plm_pool_free(pool, filler, stream));
  free_n(pool, stream, tail, SLABS_ON);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_a_destroyed_streams_slabs_are_adopted) {
  plm_pool *pool = fixed_pool(0);
  plm_stream *owner = new_stream(), *heir = new_stream();
  void *tail[SLABS_ON], *slots[SLAB_SLOTS], *again = NULL;
  char *base = fill_a_slab(pool, owner, tail, slots);
  PLM_CHECK_OK(plm_stream_destroy(owner));
  /* The slab outlives its stream; a free on `heir` adopts it, and heir's next slot of
   * the class is that one. */
  PLM_CHECK_OK(plm_pool_free(pool, slots[3], heir));
  PLM_CHECK_OK(plm_pool_alloc(pool, REQUEST, heir, &again));
  ck_assert_ptr_eq(again, base + 3 * KiB);
  empty_and_destroy(pool, heir, tail, slots);
}
END_TEST

START_TEST(test_frees_that_are_not_a_live_slot_are_refused) {
  plm_pool *pool = fixed_pool(0);
  plm_stream *stream = new_stream();
  void *tail[SLABS_ON], *slots[SLAB_SLOTS];
  fill_a_slab(pool, stream, tail, slots);
  plm_pool_stats before = stats_of(pool);
  PLM_CHECK_FAILS(plm_pool_free(pool, (char *)slots[2] + 256, stream), PLM_ERR_NOT_FOUND,
                  "an interior pointer");
  PLM_CHECK_OK(plm_pool_free(pool, slots[2], stream));
  PLM_CHECK_FAILS(plm_pool_free(pool, slots[2], stream), PLM_ERR_NOT_FOUND, "already freed");
  plm_pool_stats after = stats_of(pool);
  ck_assert_uint_eq(after.live_blocks, before.live_blocks - 1);
  ck_assert_uint_eq(after.bytes_in_use, before.bytes_in_use - KiB);
  /* The slab is intact: the slot comes back once. */
  void *again = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, REQUEST, stream, &again));
  ck_assert_ptr_eq(again, slots[2]);
  free_n(pool, stream, slots, SLAB_SLOTS);
  free_n(pool, stream, tail, SLABS_ON);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_destroy_counts_live_slots) {
  plm_pool *pool = fixed_pool(0);
  plm_stream *stream = new_stream();
  void *tail[SLABS_ON], *slots[SLAB_SLOTS];
  fill_a_slab(pool, stream, tail, slots);
  free_n(pool, stream, tail, SLABS_ON);
  PLM_CHECK_FAILS(plm_pool_destroy(pool), PLM_ERR_INVALID_STATE, "65 live block(s)");
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_no_slabs_keeps_every_block_its_own) {
  plm_pool *pool = fixed_pool(PLM_POOL_NO_SLABS);
  plm_stream *stream = new_stream();
  enum { N = 3 * SLAB_SLOTS };
  void *blocks[N];
  alloc_n(pool, stream, blocks, N);
  for (int i = 1; i < N; i++) ck_assert_ptr_eq((char *)blocks[i], (char *)blocks[i - 1] - KiB);
  free_n(pool, stream, blocks, N);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

static Suite *pool_slabs_suite(void) {
  Suite *suite = suite_create("pool_slabs");
  TCase *slabs = tcase_create("slabs");
  plm_test_add_fixture(slabs);
  tcase_add_test(slabs, test_a_class_turns_slabs_on_and_off_by_its_blocks_live);
  tcase_add_test(slabs, test_a_slot_freed_on_its_stream_is_reused_there_at_once);
  tcase_add_test(slabs, test_a_slot_freed_on_another_stream_waits_for_it);
  tcase_add_test(slabs, test_a_slab_on_memory_its_stream_just_freed_waits_for_that_stream);
  tcase_add_test(slabs, test_a_small_request_without_room_for_a_slab_is_a_block_of_its_own);
  tcase_add_test(slabs, test_a_destroyed_streams_slabs_are_adopted);
  tcase_add_test(slabs, test_frees_that_are_not_a_live_slot_are_refused);
  tcase_add_test(slabs, test_destroy_counts_live_slots);
  tcase_add_test(slabs, test_no_slabs_keeps_every_block_its_own);
  suite_add_tcase(suite, slabs);
  return suite;
}

int main(void) {
  return plm_test_main(pool_slabs_suite);
}

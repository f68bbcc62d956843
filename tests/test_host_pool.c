/* tests/test_host_pool.c: the pinned host pool (plm_host_alloc / plm_host_free,
 * plume/pool.h), on the backend under test. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "plume/pool.h"
#include "pool/private_jemalloc.h"
#include "streams/runtime.h"

enum { ALIGNMENT = 256 };

/* ---- helpers ------------------------------------------------------------------ */

/* Patterns: byte i of a block with seed s is table[(i + s) % PERIOD], copied and
 * compared a chunk at a time (memcpy / memcmp), which keeps the sanitizer builds fast. */
enum { PERIOD = 4093, CHUNK = 4096 };
static unsigned char table[PERIOD + CHUNK];

static void init_table(void) {
  for (size_t k = 0; k < sizeof table; k++) {
    size_t j = k % PERIOD;
    table[k] = (unsigned char)((j * 131u) ^ (j >> 5) ^ 0x5Au);
  }
}

static void fill_pattern(void *memory, size_t n, unsigned seed) {
  unsigned char *bytes = memory;
  for (size_t i = 0; i < n; i += CHUNK) {
    size_t len = n - i < CHUNK ? n - i : CHUNK;
    memcpy(bytes + i, table + (i + seed) % PERIOD, len);
  }
}

/* The index of the first byte that differs from the pattern, or n. */
static size_t first_mismatch(const void *memory, size_t n, unsigned seed) {
  const unsigned char *bytes = memory;
  for (size_t i = 0; i < n; i += CHUNK) {
    size_t len = n - i < CHUNK ? n - i : CHUNK;
    const unsigned char *expected = table + (i + seed) % PERIOD;
    if (memcmp(bytes + i, expected, len) == 0) continue;
    for (size_t j = 0; j < len; j++)
      if (bytes[i + j] != expected[j]) return i + j;
  }
  return n;
}

static bool is_aligned(const void *ptr) {
  return (uintptr_t)ptr % ALIGNMENT == 0;
}

static plm_context *new_context(void) {
  plm_context *ctx = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &ctx));
  return ctx;
}

/* jemalloc's count of arena slots; destroyed arenas' slots are reused. The pool's jemalloc
 * is plume's private one, inside plume_static like the pool (pool/private_jemalloc.h). */
static unsigned jemalloc_narenas(void) {
  unsigned narenas = 0;
  size_t size = sizeof narenas;
  ck_assert_int_eq(je_mallctl("arenas.narenas", &narenas, &size, NULL, 0), 0);
  return narenas;
}

/* ---- sizes and alignment -------------------------------------------------------- */

START_TEST(test_blocks_are_aligned_and_usable_over_their_whole_size) {
  enum { MAX_BLOCKS = 128 };
  static const size_t max_bytes = (size_t)8 << 20;
  void *blocks[MAX_BLOCKS];
  size_t sizes[MAX_BLOCKS];
  size_t count = 0;
  /* 1, 2, 3, 5, 8, ... (odd sizes and sizes around size-class edges), then the
   * page and 2 MiB edges exactly, up to 8 MiB. */
  for (size_t bytes = 1; bytes <= max_bytes && count < MAX_BLOCKS - 12; bytes = bytes * 3 / 2 + 1)
    sizes[count++] = bytes;
  const size_t edges[] = {255,
                          256,
                          257,
                          4095,
                          4096,
                          4097,
                          (size_t)2 << 20,
                          ((size_t)2 << 20) + 1,
                          ((size_t)8 << 20) - 1,
                          (size_t)8 << 20};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) sizes[count++] = edges[i];

  /* All live at once, so that overlapping blocks would spoil each other's pattern. */
  for (size_t i = 0; i < count; i++) {
    PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, sizes[i], &blocks[i]));
    ck_assert_ptr_nonnull(blocks[i]);
    ck_assert_msg(is_aligned(blocks[i]), "block of %zu bytes at %p is not %d-aligned", sizes[i],
                  blocks[i], ALIGNMENT);
    fill_pattern(blocks[i], sizes[i], (unsigned)i);
  }
  for (size_t i = 0; i < count; i++) {
    size_t at = first_mismatch(blocks[i], sizes[i], (unsigned)i);
    ck_assert_msg(at == sizes[i], "block %zu (%zu bytes) was overwritten at byte %zu", i, sizes[i],
                  at);
  }
  for (size_t i = 0; i < count; i++) PLM_CHECK_OK(plm_host_free(plm_test_ctx, blocks[i]));
}
END_TEST

START_TEST(test_every_small_size_is_aligned) {
  for (size_t bytes = 1; bytes <= 4096 + 256; bytes++) {
    void *block = NULL;
    PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, bytes, &block));
    ck_assert_msg(is_aligned(block), "block of %zu bytes at %p is not aligned", bytes, block);
    memset(block, 0xA5, bytes);
    PLM_CHECK_OK(plm_host_free(plm_test_ctx, block));
  }
}
END_TEST

/* ---- as the host side of copies -------------------------------------------------- */

START_TEST(test_blocks_are_the_host_side_of_stream_copies) {
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  const size_t sizes[] = {1, 255, 4099, 65536, ((size_t)1 << 20) + 3, (size_t)6 << 20};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t bytes = sizes[s];
    void *upload = NULL, *download = NULL, *device = NULL;
    PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, bytes, &upload));
    PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, bytes, &download));
    PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, bytes, &device));
    fill_pattern(upload, bytes, (unsigned)s + 11);
    memset(download, 0xEE, bytes);
    PLM_CHECK_OK(plm_stream_memcpy(stream, device, upload, bytes, PLM_COPY_HOST_TO_DEVICE));
    PLM_CHECK_OK(plm_stream_memcpy(stream, download, device, bytes, PLM_COPY_DEVICE_TO_HOST));
    PLM_CHECK_OK(plm_stream_synchronize(stream));
    size_t at = first_mismatch(download, bytes, (unsigned)s + 11);
    ck_assert_msg(at == bytes, "round trip of %zu bytes differs at byte %zu", bytes, at);
    PLM_CHECK_OK(plm_device_free(plm_test_ctx, device));
    PLM_CHECK_OK(plm_host_free(plm_test_ctx, upload));
    PLM_CHECK_OK(plm_host_free(plm_test_ctx, download));
  }
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* ---- many blocks, reuse -------------------------------------------------------------- */

START_TEST(test_many_small_blocks) {
  enum { BLOCKS = 10000 };
  static void *blocks[BLOCKS];
  static size_t sizes[BLOCKS];
  for (size_t round = 0; round < 2; round++) {
    for (size_t i = 0; i < BLOCKS; i++) {
      sizes[i] = 1 + (i * 37 + round * 11) % 700;
      PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, sizes[i], &blocks[i]));
      ck_assert(is_aligned(blocks[i]));
      fill_pattern(blocks[i], sizes[i], (unsigned)i);
    }
    for (size_t i = 0; i < BLOCKS; i++)
      ck_assert_msg(first_mismatch(blocks[i], sizes[i], (unsigned)i) == sizes[i],
                    "block %zu of %zu bytes was overwritten", i, sizes[i]);
    /* Free the odd ones, check the even ones are intact, then free those too. */
    for (size_t i = 1; i < BLOCKS; i += 2) PLM_CHECK_OK(plm_host_free(plm_test_ctx, blocks[i]));
    for (size_t i = 0; i < BLOCKS; i += 2)
      ck_assert(first_mismatch(blocks[i], sizes[i], (unsigned)i) == sizes[i]);
    for (size_t i = 0; i < BLOCKS; i += 2) PLM_CHECK_OK(plm_host_free(plm_test_ctx, blocks[i]));
  }
}
END_TEST

/* Whether two blocks of `bytes` share memory. Reuse is judged by overlap, not by
 * equal addresses: large blocks start at a varying offset into their first page
 * (jemalloc's cache-oblivious placement). */
static bool overlap(const void *a, const void *b, size_t bytes) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x < y + bytes && y < x + bytes;
}

START_TEST(test_freed_memory_is_reused) {
  const size_t sizes[] = {64, 4096, (size_t)1 << 20};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    void *first = NULL;
    PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, sizes[s], &first));
    PLM_CHECK_OK(plm_host_free(plm_test_ctx, first));
    int reused = 0;
    for (int i = 0; i < 100; i++) {
      void *again = NULL;
      PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, sizes[s], &again));
      fill_pattern(again, sizes[s], (unsigned)i);
      if (overlap(again, first, sizes[s])) reused++;
      PLM_CHECK_OK(plm_host_free(plm_test_ctx, again));
    }
    ck_assert_msg(reused >= 90, "%zu-byte blocks reused freed memory only %d times in 100",
                  sizes[s], reused);
  }
}
END_TEST

/* ---- bad pointers and arguments ------------------------------------------------------- */

START_TEST(test_free_of_null_is_a_no_op) {
  PLM_CHECK_OK(plm_host_free(plm_test_ctx, NULL));
  void *block = NULL;
  PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, 100, &block));
  PLM_CHECK_OK(plm_host_free(plm_test_ctx, NULL));
  PLM_CHECK_OK(plm_host_free(plm_test_ctx, block));
}
END_TEST

START_TEST(test_free_rejects_what_is_not_a_live_block) {
  int on_stack = 0;
  void *heap = malloc(64);
  ck_assert_ptr_nonnull(heap);
  /* Before the context has a host pool at all. */
  PLM_CHECK_FAILS(plm_host_free(plm_test_ctx, &on_stack), PLM_ERR_NOT_FOUND, "plm_host_free: ptr");

  void *block = NULL;
  PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, 1000, &block));
  fill_pattern(block, 1000, 3);
  PLM_CHECK_FAILS(plm_host_free(plm_test_ctx, &on_stack), PLM_ERR_NOT_FOUND,
                  "not a live block from plm_host_alloc of this context");
  PLM_CHECK_FAILS(plm_host_free(plm_test_ctx, heap), PLM_ERR_NOT_FOUND, "never allocated");
  PLM_CHECK_FAILS(plm_host_free(plm_test_ctx, (char *)block + 1), PLM_ERR_NOT_FOUND,
                  "interior pointer");
  PLM_CHECK_FAILS(plm_host_free(plm_test_ctx, (char *)block + 256), PLM_ERR_NOT_FOUND,
                  "interior pointer");
  /* The failures changed nothing: the block is intact and still freeable, once. */
  ck_assert(first_mismatch(block, 1000, 3) == 1000);
  PLM_CHECK_OK(plm_host_free(plm_test_ctx, block));
  PLM_CHECK_FAILS(plm_host_free(plm_test_ctx, block), PLM_ERR_NOT_FOUND, "already freed");
  free(heap);
}
END_TEST

/* plm__host_pool_holds (streams/runtime.h), which DLPack's export asks to tell pinned host
 * memory from the device's: a block's first and last bytes, not the stack, the heap,
 * another context's blocks or NULL; nothing before the context's first block. */
START_TEST(test_the_pool_knows_its_memory) {
  plm_context *other = new_context();
  int on_stack = 0;
  void *heap = malloc(64), *ours = NULL, *theirs = NULL;
  ck_assert_ptr_nonnull(heap);
  ck_assert(!plm__host_pool_holds(other, heap)); /* no pool yet */
  PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, 5000, &ours));
  PLM_CHECK_OK(plm_host_alloc(other, 4096, &theirs));
  ck_assert(plm__host_pool_holds(plm_test_ctx, ours));
  ck_assert(plm__host_pool_holds(plm_test_ctx, (char *)ours + 4999));
  ck_assert(plm__host_pool_holds(other, theirs));
  ck_assert(!plm__host_pool_holds(plm_test_ctx, theirs));
  ck_assert(!plm__host_pool_holds(other, ours));
  ck_assert(!plm__host_pool_holds(plm_test_ctx, &on_stack));
  ck_assert(!plm__host_pool_holds(plm_test_ctx, heap));
  ck_assert(!plm__host_pool_holds(plm_test_ctx, NULL));
  PLM_CHECK_OK(plm_host_free(other, theirs));
  PLM_CHECK_OK(plm_host_free(plm_test_ctx, ours));
  PLM_CHECK_OK(plm_context_destroy(other));
  free(heap);
}
END_TEST

START_TEST(test_blocks_belong_to_their_context) {
  plm_context *other = new_context();
  void *theirs = NULL, *ours = NULL;
  PLM_CHECK_OK(plm_host_alloc(other, 4096, &theirs));
  PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, 4096, &ours));
  PLM_CHECK_FAILS(plm_host_free(plm_test_ctx, theirs), PLM_ERR_NOT_FOUND, "of this context");
  PLM_CHECK_FAILS(plm_host_free(other, ours), PLM_ERR_NOT_FOUND, "of this context");
  PLM_CHECK_OK(plm_host_free(other, theirs));
  PLM_CHECK_OK(plm_host_free(plm_test_ctx, ours));
  PLM_CHECK_OK(plm_context_destroy(other));
}
END_TEST

START_TEST(test_bad_arguments_are_reported) {
  void *block = (void *)0x1;
  PLM_CHECK_FAILS(plm_host_alloc(NULL, 16, &block), PLM_ERR_INVALID_ARG,
                  "plm_host_alloc: ctx is NULL");
  PLM_CHECK_FAILS(plm_host_alloc(plm_test_ctx, 16, NULL), PLM_ERR_INVALID_ARG, "ptr is NULL");
  PLM_CHECK_FAILS(plm_host_alloc(plm_test_ctx, 0, &block), PLM_ERR_INVALID_ARG, "bytes is 0");
  ck_assert_ptr_null(block);
  PLM_CHECK_FAILS(plm_host_free(NULL, NULL), PLM_ERR_INVALID_ARG, "plm_host_free: ctx is NULL");

  /* Sizes no machine can give fail cleanly, and the pool stays usable. */
  block = (void *)0x1;
  PLM_CHECK_FAILS(plm_host_alloc(plm_test_ctx, SIZE_MAX, &block), PLM_ERR_INVALID_ARG,
                  "too large to align");
  ck_assert_ptr_null(block);
  const size_t impossible[] = {SIZE_MAX - ALIGNMENT, SIZE_MAX / 2, (size_t)1 << 62,
                               (size_t)1 << 50};
  for (size_t i = 0; i < sizeof impossible / sizeof impossible[0]; i++) {
    block = (void *)0x1;
    PLM_CHECK_FAILS(plm_host_alloc(plm_test_ctx, impossible[i], &block), PLM_ERR_OUT_OF_MEMORY,
                    "no pinned host memory for");
    ck_assert_ptr_null(block);
  }
  PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, 1 << 20, &block));
  fill_pattern(block, 1 << 20, 9);
  ck_assert(first_mismatch(block, 1 << 20, 9) == 1 << 20);
  PLM_CHECK_OK(plm_host_free(plm_test_ctx, block));
}
END_TEST

/* ---- threads --------------------------------------------------------------------------- */

enum { THREADS = 4, ROUNDS_PER_THREAD = 3000, LIVE_PER_THREAD = 64, HANDOFF_BLOCKS = 500 };

typedef struct worker {
  plm_context *ctx;
  pthread_barrier_t *start;
  unsigned id;
  atomic_int failures;
  void *handoff[HANDOFF_BLOCKS]; /* allocated by this worker, freed by the next one */
  size_t handoff_bytes[HANDOFF_BLOCKS];
} worker;

static worker workers[THREADS];

static void *churn(void *arg) {
  worker *self = arg;
  void *live[LIVE_PER_THREAD] = {0};
  size_t bytes[LIVE_PER_THREAD] = {0};
  unsigned seed = self->id * 7919u + 1;
  /* All threads reach the context's first plm_host_alloc together. */
  pthread_barrier_wait(self->start);
  for (unsigned round = 0; round < ROUNDS_PER_THREAD; round++) {
    seed = seed * 1103515245u + 12345u;
    unsigned slot = (seed >> 8) % LIVE_PER_THREAD;
    if (live[slot]) {
      if (first_mismatch(live[slot], bytes[slot], self->id * 100000u + slot) != bytes[slot])
        atomic_fetch_add(&self->failures, 1);
      if (plm_host_free(self->ctx, live[slot]) != PLM_OK) atomic_fetch_add(&self->failures, 1);
      live[slot] = NULL;
    }
    /* Mostly small blocks, some up to 256 KiB. */
    bytes[slot] = (seed >> 4) % 8 == 0 ? 1 + (seed >> 12) % (256 << 10) : 1 + (seed >> 12) % 2048;
    if (plm_host_alloc(self->ctx, bytes[slot], &live[slot]) != PLM_OK || !is_aligned(live[slot])) {
      atomic_fetch_add(&self->failures, 1);
      live[slot] = NULL;
      continue;
    }
    fill_pattern(live[slot], bytes[slot], self->id * 100000u + slot);
  }
  for (unsigned slot = 0; slot < LIVE_PER_THREAD; slot++) {
    if (!live[slot]) continue;
    if (first_mismatch(live[slot], bytes[slot], self->id * 100000u + slot) != bytes[slot])
      atomic_fetch_add(&self->failures, 1);
    if (plm_host_free(self->ctx, live[slot]) != PLM_OK) atomic_fetch_add(&self->failures, 1);
  }
  for (unsigned i = 0; i < HANDOFF_BLOCKS; i++) {
    self->handoff_bytes[i] = 1 + (i * 53u + self->id) % 5000;
    if (plm_host_alloc(self->ctx, self->handoff_bytes[i], &self->handoff[i]) != PLM_OK) {
      atomic_fetch_add(&self->failures, 1);
      self->handoff[i] = NULL;
      continue;
    }
    fill_pattern(self->handoff[i], self->handoff_bytes[i], self->id + i);
  }
  return NULL;
}

/* Free the blocks the previous worker handed off. */
static void *free_handoff(void *arg) {
  worker *self = arg;
  worker *from = &workers[(self->id + THREADS - 1) % THREADS];
  for (unsigned i = 0; i < HANDOFF_BLOCKS; i++) {
    if (!from->handoff[i]) continue;
    if (first_mismatch(from->handoff[i], from->handoff_bytes[i], from->id + i) !=
        from->handoff_bytes[i])
      atomic_fetch_add(&self->failures, 1);
    if (plm_host_free(self->ctx, from->handoff[i]) != PLM_OK) atomic_fetch_add(&self->failures, 1);
  }
  return NULL;
}

START_TEST(test_threads_allocate_and_free_concurrently) {
  /* A fresh context, so that the threads also race to create its host pool. */
  plm_context *ctx = new_context();
  pthread_barrier_t start;
  ck_assert_int_eq(pthread_barrier_init(&start, NULL, THREADS), 0);
  pthread_t threads[THREADS];
  for (unsigned t = 0; t < THREADS; t++) {
    workers[t].ctx = ctx;
    workers[t].start = &start;
    workers[t].id = t;
    atomic_init(&workers[t].failures, 0);
    ck_assert_int_eq(pthread_create(&threads[t], NULL, churn, &workers[t]), 0);
  }
  for (unsigned t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  for (unsigned t = 0; t < THREADS; t++)
    ck_assert_int_eq(pthread_create(&threads[t], NULL, free_handoff, &workers[t]), 0);
  for (unsigned t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  for (unsigned t = 0; t < THREADS; t++)
    ck_assert_msg(atomic_load(&workers[t].failures) == 0, "worker %u saw %d failure(s)", t,
                  atomic_load(&workers[t].failures));
  pthread_barrier_destroy(&start);
  PLM_CHECK_OK(plm_context_destroy(ctx));
}
END_TEST

/* ---- contexts that come and go ---------------------------------------------------------- */

START_TEST(test_context_destroy_releases_live_blocks) {
  enum { CYCLES = 50 };
  unsigned arenas_after_first = 0;
  for (int cycle = 0; cycle < CYCLES; cycle++) {
    plm_context *ctx = new_context();
    void *kept[4], *freed = NULL;
    const size_t sizes[] = {10, 3000, 100000, (size_t)3 << 20};
    for (size_t i = 0; i < 4; i++) {
      PLM_CHECK_OK(plm_host_alloc(ctx, sizes[i], &kept[i]));
      fill_pattern(kept[i], sizes[i], (unsigned)cycle);
    }
    PLM_CHECK_OK(plm_host_alloc(ctx, 5000, &freed));
    PLM_CHECK_OK(plm_host_free(ctx, freed));
    /* The live blocks are the pool's to clean up: not a leftover to report. */
    PLM_CHECK_OK(plm_context_destroy(ctx));
    if (cycle == 0) arenas_after_first = jemalloc_narenas();
  }
  /* Each context's arena was destroyed, and its index reused by the next one. */
  ck_assert_uint_eq(jemalloc_narenas(), arenas_after_first);
}
END_TEST

START_TEST(test_context_without_host_blocks_has_no_arena) {
  unsigned before = 0;
  /* Settle jemalloc's own arenas first: only the pool's arena is counted. */
  plm_context *ctx = new_context();
  PLM_CHECK_OK(plm_context_destroy(ctx));
  before = jemalloc_narenas();
  for (int i = 0; i < 5; i++) {
    ctx = new_context();
    PLM_CHECK_OK(plm_context_destroy(ctx));
  }
  ck_assert_uint_eq(jemalloc_narenas(), before);
}
END_TEST

/* The private jemalloc takes its options from PLM__JE_MALLOC_CONF (host_pool.no_retain sets
 * retain:false there), never from MALLOC_CONF, which belongs to whatever else the process
 * runs. */
START_TEST(test_the_pools_jemalloc_reads_its_own_options) {
  const char *own = getenv("PLM__JE_MALLOC_CONF");
  bool retain = true;
  size_t size = sizeof retain;
  ck_assert_int_eq(je_mallctl("opt.retain", &retain, &size, NULL, 0), 0);
  ck_assert(retain == !(own && strstr(own, "retain:false")));
}
END_TEST

/* The pool's jemalloc is plume's own: the program's malloc never goes through it (this
 * test links plume_static, which once made jemalloc the whole program's malloc). Its
 * count of this thread's allocated bytes does not move for a malloc of 4 MiB. */
START_TEST(test_the_pools_jemalloc_is_not_the_programs_malloc) {
  uint64_t before = 0, after = 0;
  size_t size = sizeof before;
  ck_assert_int_eq(je_mallctl("thread.allocated", &before, &size, NULL, 0), 0);
  char *volatile memory = malloc(4u << 20);
  ck_assert_ptr_nonnull(memory);
  memory[0] = 1;
  free(memory);
  ck_assert_int_eq(je_mallctl("thread.allocated", &after, &size, NULL, 0), 0);
  ck_assert_uint_eq(after, before);
}
END_TEST

static Suite *host_pool_suite(void) {
  Suite *suite = suite_create("host_pool");
  TCase *sizes = tcase_create("sizes");
  plm_test_add_fixture(sizes);
  tcase_add_test(sizes, test_blocks_are_aligned_and_usable_over_their_whole_size);
  tcase_add_test(sizes, test_every_small_size_is_aligned);
  tcase_add_test(sizes, test_blocks_are_the_host_side_of_stream_copies);
  tcase_add_test(sizes, test_many_small_blocks);
  tcase_add_test(sizes, test_freed_memory_is_reused);
  suite_add_tcase(suite, sizes);

  TCase *bad_input = tcase_create("bad_input");
  plm_test_add_fixture(bad_input);
  tcase_add_test(bad_input, test_free_of_null_is_a_no_op);
  tcase_add_test(bad_input, test_free_rejects_what_is_not_a_live_block);
  tcase_add_test(bad_input, test_blocks_belong_to_their_context);
  tcase_add_test(bad_input, test_the_pool_knows_its_memory);
  tcase_add_test(bad_input, test_bad_arguments_are_reported);
  suite_add_tcase(suite, bad_input);

  TCase *threads = tcase_create("threads");
  plm_test_add_fixture(threads);
  tcase_add_test(threads, test_threads_allocate_and_free_concurrently);
  suite_add_tcase(suite, threads);

  TCase *lifecycle = tcase_create("lifecycle");
  plm_test_add_fixture(lifecycle);
  tcase_add_test(lifecycle, test_context_destroy_releases_live_blocks);
  tcase_add_test(lifecycle, test_context_without_host_blocks_has_no_arena);
  tcase_add_test(lifecycle, test_the_pools_jemalloc_reads_its_own_options);
  tcase_add_test(lifecycle, test_the_pools_jemalloc_is_not_the_programs_malloc);
  suite_add_tcase(suite, lifecycle);
  return suite;
}

int main(void) {
  init_table();
  return plm_test_main(host_pool_suite);
}

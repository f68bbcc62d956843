/* tests/test_pool.c: the stream-ordered device pool (plume/pool.h) on the backend
 * under test: size classes, splitting and coalescing, statistics, trimming and the
 * release threshold, the byte limit and recovery from out-of-memory, stream-order
 * safety across streams, the modes, and bad input. Block contents are touched only
 * through stream copies, so every test runs on cuda as well. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_thread.h"
#include "gate.h"
#include "harness.h"
#include "plume/pool.h"
#include "pool_test.h"
#include "streams/stream_graph.h"

enum { GATE_TIMEOUT_MS = 10000 };

static const size_t KiB = 1024, MiB = 1024 * 1024;

/* A pool with one fixed-size chunk per growth step, so layouts are predictable. */
static plm_pool *fixed_pool(size_t chunk, size_t limit, unsigned flags) {
  plm_pool_config config = plm_pool_config_default();
  config.growth = PLM_POOL_GROW_FIXED;
  config.min_chunk_bytes = chunk;
  config.byte_limit = limit;
  config.flags = flags;
  return pool_with(&config);
}

/* ---- shapes and classes ------------------------------------------------------------ */

START_TEST(test_blocks_are_256_byte_aligned) {
  plm_pool *pool = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, NULL, &pool));
  plm_stream *stream = new_stream();
  const size_t sizes[] = {1,    7,     255,   256,   257,    1000,
                          4096, 65535, 65536, 65537, 300001, 3 * MiB + 1};
  void *ptrs[sizeof sizes / sizeof sizes[0]];
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    PLM_CHECK_OK(plm_pool_alloc(pool, sizes[i], stream, &ptrs[i]));
    ck_assert_msg((uintptr_t)ptrs[i] % 256 == 0, "%zu bytes at %p", sizes[i], ptrs[i]);
  }
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    PLM_CHECK_OK(plm_pool_free(pool, ptrs[i], stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_small_blocks_reuse_their_size_class) {
  plm_pool *pool = fixed_pool(2 * MiB, 0, 0);
  plm_stream *stream = new_stream();
  void *a = NULL, *b = NULL, *c = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 100, stream, &a));
  PLM_CHECK_OK(plm_pool_free(pool, a, stream));
  PLM_CHECK_OK(plm_pool_alloc(pool, 200, stream, &b)); /* same 256-byte class */
  ck_assert_ptr_eq(a, b);
  PLM_CHECK_OK(plm_pool_alloc(pool, 300, stream, &c)); /* the 512-byte class */
  ck_assert_ptr_ne(c, b);
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.requests, 3);
  ck_assert_uint_eq(stats.upstream_allocs, 1);
  ck_assert_uint_eq(stats.bytes_in_use, 256 + 512);
  ck_assert_uint_eq(stats.bytes_requested, 200 + 300);
  ck_assert_uint_eq(stats.live_blocks, 2);
  PLM_CHECK_OK(plm_pool_free(pool, b, stream));
  PLM_CHECK_OK(plm_pool_free(pool, c, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_medium_blocks_split_and_coalesce) {
  plm_pool *pool = fixed_pool(2 * MiB, 0, 0);
  plm_stream *stream = new_stream();
  void *a = NULL, *b = NULL, *c = NULL, *merged = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 128 * KiB, stream, &a));
  PLM_CHECK_OK(plm_pool_alloc(pool, 128 * KiB, stream, &b));
  PLM_CHECK_OK(plm_pool_alloc(pool, 128 * KiB, stream, &c));
  /* One chunk, split in address order. */
  ck_assert_uint_eq((uintptr_t)b, (uintptr_t)a + 128 * KiB);
  ck_assert_uint_eq((uintptr_t)c, (uintptr_t)b + 128 * KiB);
  PLM_CHECK_OK(plm_pool_free(pool, b, stream));
  PLM_CHECK_OK(plm_pool_free(pool, a, stream));
  /* a and b merged into one 256 KiB block, reused on the same stream at once. */
  PLM_CHECK_OK(plm_pool_alloc(pool, 256 * KiB, stream, &merged));
  ck_assert_ptr_eq(merged, a);
  PLM_CHECK_OK(plm_pool_free(pool, merged, stream));
  PLM_CHECK_OK(plm_pool_free(pool, c, stream));
  /* On the stream, a, b and c merged into one pending block, which took in the rest of
   * the chunk (safe for all) too, since this stream allocates: the stream may use the
   * whole chunk at once. Trimming (keeping every chunk) makes it safe for all. */
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.largest_free_block, 2 * MiB);
  PLM_CHECK_OK(plm_pool_trim(pool, SIZE_MAX));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.upstream_allocs, 1);
  ck_assert_uint_eq(stats.largest_free_block, 2 * MiB);
  ck_assert(stats.fragmentation == 0.0);
  ck_assert_uint_eq(stats.bytes_in_use, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_fragmentation_is_reported) {
  plm_pool *pool = fixed_pool(2 * MiB, 0, 0);
  plm_stream *stream = new_stream();
  void *blocks[8];
  for (int i = 0; i < 8; i++) PLM_CHECK_OK(plm_pool_alloc(pool, 256 * KiB, stream, &blocks[i]));
  for (int i = 0; i < 8; i += 2) PLM_CHECK_OK(plm_pool_free(pool, blocks[i], stream));
  plm_pool_stats stats = stats_of(pool);
  /* Four separate 256 KiB holes: largest 256 KiB of 1 MiB free. */
  ck_assert_uint_eq(stats.largest_free_block, 256 * KiB);
  ck_assert_msg(stats.fragmentation > 0.74 && stats.fragmentation < 0.76, "fragmentation %f",
                stats.fragmentation);
  for (int i = 1; i < 8; i += 2) PLM_CHECK_OK(plm_pool_free(pool, blocks[i], stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_huge_requests_get_their_own_chunk) {
  plm_pool_config config = plm_pool_config_default();
  config.huge_bytes = 4 * MiB;
  plm_pool *pool = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &config, &pool));
  plm_stream *stream = new_stream();
  void *huge = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 5 * MiB + 100, stream, &huge));
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.bytes_reserved, 5 * MiB + 256);
  PLM_CHECK_OK(plm_pool_free(pool, huge, stream));
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.bytes_reserved, 0);
  ck_assert_uint_eq(stats.upstream_frees, stats.upstream_allocs);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* ---- the growth policy and the bound on cached memory ------------------------------ */

/* The documented growth policy (pool/pool_internal.h): a chunk is the request rounded
 * up to 2 MiB, at least min_chunk_bytes (2 MiB), and at least reserved / 8 rounded
 * down to 2 MiB, that step capped at 64 MiB. */
static size_t expected_chunk(size_t need, size_t reserved) {
  size_t bytes = (need + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
  if (bytes < 2 * MiB) bytes = 2 * MiB;
  size_t step = reserved / 8;
  if (step > 64 * MiB) step = 64 * MiB;
  step = step / (2 * MiB) * (2 * MiB);
  return bytes > step ? bytes : step;
}

START_TEST(test_chunk_sizes_follow_the_growth_policy) {
  plm_pool *pool = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, NULL, &pool));
  plm_stream *stream = new_stream();
  /* Large requests are rounded to 2 MiB, not to a power of two. */
  void *odd = NULL, *large = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 5 * MiB + 1, stream, &odd));
  ck_assert_uint_eq(stats_of(pool).bytes_reserved, 6 * MiB);
  PLM_CHECK_OK(plm_pool_alloc(pool, 70 * MiB, stream, &large));
  ck_assert_uint_eq(stats_of(pool).bytes_reserved, 76 * MiB);
  PLM_CHECK_OK(plm_pool_free(pool, odd, stream));
  PLM_CHECK_OK(plm_pool_free(pool, large, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));

  /* 2 MiB blocks kept live fill each chunk exactly, so every growth step shows: the
   * chunks grow geometrically (an eighth of what is reserved) up to 64 MiB. */
  enum { BLOCKS = 320 };
  static void *blocks[BLOCKS];
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, NULL, &pool));
  size_t reserved = 0, room = 0, chunks = 0, largest_chunk = 0;
  for (int i = 0; i < BLOCKS; i++) {
    if (room < 2 * MiB) {
      size_t chunk = expected_chunk(2 * MiB, reserved);
      reserved += chunk;
      room += chunk;
      chunks++;
      if (chunk > largest_chunk) largest_chunk = chunk;
    }
    room -= 2 * MiB;
    PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, stream, &blocks[i]));
    plm_pool_stats stats = stats_of(pool);
    ck_assert_msg(stats.bytes_reserved == reserved && stats.upstream_allocs == chunks,
                  "block %d: %llu bytes in %llu chunks reserved, expected %zu in %zu", i,
                  (unsigned long long)stats.bytes_reserved,
                  (unsigned long long)stats.upstream_allocs, reserved, chunks);
  }
  ck_assert_uint_eq(largest_chunk, 64 * MiB); /* the cap was reached */
  for (int i = 0; i < BLOCKS; i++) PLM_CHECK_OK(plm_pool_free(pool, blocks[i], stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* Every small size class in turn: eight blocks allocated, then freed. Each class used
 * to keep its eight blocks cached for ever (about 20 MiB over the 81 classes); an
 * index now caches at most 512 KiB and the rest merges back, so one stream's pattern
 * stays within one 2 MiB chunk beyond what is in use (the fragmentation bound of
 * pool_internal.h), and trimming gives the emptied chunks back. */
START_TEST(test_cached_small_blocks_are_bounded_and_go_back_on_trim) {
  plm_pool *pool = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, NULL, &pool));
  plm_stream *stream = new_stream();
  void *blocks[8];
  for (size_t granules = 1; granules <= 256; granules++) {
    for (int i = 0; i < 8; i++)
      PLM_CHECK_OK(plm_pool_alloc(pool, granules * 256, stream, &blocks[i]));
    for (int i = 0; i < 8; i++) PLM_CHECK_OK(plm_pool_free(pool, blocks[i], stream));
  }
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_le(stats.peak_bytes_in_use, 8 * 64 * KiB);
  ck_assert_msg(stats.peak_bytes_reserved <= stats.peak_bytes_in_use + 2 * MiB,
                "peak reserved %llu for peak in use %llu",
                (unsigned long long)stats.peak_bytes_reserved,
                (unsigned long long)stats.peak_bytes_in_use);
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.bytes_reserved, 0);
  ck_assert_uint_eq(stats.upstream_frees, stats.upstream_allocs);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* ---- statistics, trimming, the release threshold ------------------------------------ */

START_TEST(test_statistics_add_up) {
  plm_pool *pool = fixed_pool(4 * MiB, 0, 0);
  plm_stream *stream = new_stream();
  const size_t sizes[] = {1, 300, 5000, 70000, 1000000};
  void *ptrs[5];
  size_t in_use = 0, requested = 0;
  for (int i = 0; i < 5; i++) {
    PLM_CHECK_OK(plm_pool_alloc(pool, sizes[i], stream, &ptrs[i]));
    requested += sizes[i];
  }
  /* Small sizes are served at their class size, medium ones at 256-byte granules. */
  in_use = 256 + 512 + 5120 + 70144 + 1000192;
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.requests, 5);
  ck_assert_uint_eq(stats.hits, 4); /* the first reserved the chunk */
  ck_assert_uint_eq(stats.live_blocks, 5);
  ck_assert_uint_eq(stats.bytes_in_use, in_use);
  ck_assert_uint_eq(stats.bytes_requested, requested);
  ck_assert_uint_eq(stats.peak_bytes_in_use, in_use);
  ck_assert_uint_eq(stats.bytes_reserved, 4 * MiB);
  ck_assert_uint_eq(stats.peak_bytes_reserved, 4 * MiB);
  ck_assert_uint_eq(stats.largest_free_block, 4 * MiB - in_use);
  for (int i = 0; i < 5; i++) PLM_CHECK_OK(plm_pool_free(pool, ptrs[i], stream));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.live_blocks, 0);
  ck_assert_uint_eq(stats.bytes_in_use, 0);
  ck_assert_uint_eq(stats.bytes_requested, 0);
  ck_assert_uint_eq(stats.peak_bytes_in_use, in_use);
  ck_assert_uint_eq(stats.failures, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_trim_gives_idle_chunks_back) {
  plm_pool *pool = fixed_pool(2 * MiB, 0, 0);
  plm_stream *stream = new_stream();
  void *a = NULL, *b = NULL, *c = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, stream, &a));
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, stream, &b));
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, stream, &c));
  ck_assert_uint_eq(stats_of(pool).bytes_reserved, 6 * MiB);
  PLM_CHECK_OK(plm_pool_free(pool, a, stream));
  PLM_CHECK_OK(plm_pool_free(pool, b, stream));
  PLM_CHECK_OK(plm_pool_trim(pool, 4 * MiB)); /* keep 4 MiB: one idle chunk stays */
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.bytes_reserved, 4 * MiB);
  ck_assert_uint_eq(stats.upstream_frees, 1);
  PLM_CHECK_OK(plm_pool_free(pool, c, stream));
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.bytes_reserved, 0);
  ck_assert_uint_eq(stats.upstream_frees, 3);
  /* Still usable afterwards. */
  PLM_CHECK_OK(plm_pool_alloc(pool, 1000, stream, &a));
  PLM_CHECK_OK(plm_pool_free(pool, a, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* Reserve 4 MiB, free it, then ask for 5 MiB: only with a release threshold does
 * the slow path give the idle chunk back before growing. (Its pages would otherwise
 * go back on their own: PLM_POOL_KEEP_PAGES, here, keeps them; tests/test_pool_pages.c
 * covers them.) */
static plm_pool_stats grow_past_an_idle_chunk(size_t release_threshold) {
  plm_pool_config config = plm_pool_config_default();
  config.growth = PLM_POOL_GROW_FIXED;
  config.release_threshold = release_threshold;
  config.flags = PLM_POOL_KEEP_PAGES;
  plm_pool *pool = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &config, &pool));
  plm_stream *stream = new_stream();
  void *first = NULL, *second = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 3 * MiB, stream, &first));
  PLM_CHECK_OK(plm_pool_free(pool, first, stream));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  PLM_CHECK_OK(plm_pool_alloc(pool, 5 * MiB, stream, &second));
  plm_pool_stats stats = stats_of(pool);
  PLM_CHECK_OK(plm_pool_free(pool, second, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
  return stats;
}

START_TEST(test_release_threshold_gives_idle_chunks_back_on_the_slow_path) {
  plm_pool_stats keep_all = grow_past_an_idle_chunk(0);
  ck_assert_uint_eq(keep_all.upstream_frees, 0);
  ck_assert_uint_eq(keep_all.bytes_reserved, 4 * MiB + 6 * MiB);
  plm_pool_stats release = grow_past_an_idle_chunk(PLM_POOL_RELEASE_IDLE);
  ck_assert_uint_eq(release.upstream_frees, 1);
  ck_assert_uint_eq(release.bytes_reserved, 6 * MiB);
}
END_TEST

/* ---- the byte limit, out-of-memory and recovery -------------------------------------- */

START_TEST(test_byte_limit_out_of_memory_and_recovery) {
  plm_pool *pool = fixed_pool(2 * MiB, 8 * MiB, 0);
  plm_stream *stream = new_stream();
  void *big = NULL, *more = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 6 * MiB, stream, &big));
  PLM_CHECK_FAILS(plm_pool_alloc(pool, 4 * MiB, stream, &more), PLM_ERR_OUT_OF_MEMORY,
                  "plm_pool_alloc: out of memory for 4194304 bytes");
  ck_assert_ptr_null(more);
  const char *message = plm_last_error();
  ck_assert(strstr(message, "in use") && strstr(message, "reserved") &&
            strstr(message, "largest free block") && strstr(message, "fragmentation"));
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.failures, 1);
  ck_assert_uint_le(stats.bytes_reserved, 8 * MiB);
  /* The pool is intact: freeing makes room for the same request. */
  PLM_CHECK_OK(plm_pool_free(pool, big, stream));
  PLM_CHECK_OK(plm_pool_alloc(pool, 4 * MiB, stream, &more));
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, stream, &big));
  PLM_CHECK_OK(plm_pool_free(pool, more, stream));
  PLM_CHECK_OK(plm_pool_free(pool, big, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_out_of_memory_gives_idle_chunks_back_before_failing) {
  plm_pool *pool = fixed_pool(2 * MiB, 6 * MiB, PLM_POOL_KEEP_PAGES);
  plm_stream *stream = new_stream();
  void *a = NULL, *b = NULL, *c = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, stream, &a));
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, stream, &b));
  PLM_CHECK_OK(plm_pool_free(pool, a, stream));
  PLM_CHECK_OK(plm_pool_free(pool, b, stream));
  /* 4 MiB reserved in two idle 2 MiB chunks: a 5 MiB request fits the limit only if
   * they go back upstream first. */
  PLM_CHECK_OK(plm_pool_alloc(pool, 5 * MiB, stream, &c));
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_ge(stats.upstream_frees, 1);
  ck_assert_uint_le(stats.bytes_reserved, 6 * MiB);
  PLM_CHECK_OK(plm_pool_free(pool, c, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* ---- the byte limit and the statistics over every resource --------------------------- */

/* The resources (modes) the backend under test has: cuda_async only on cuda. */
static size_t modes_here(plm_pool_mode modes[3]) {
  size_t count = 0;
  modes[count++] = PLM_POOL_POOLED;
  modes[count++] = PLM_POOL_PASSTHROUGH;
  if (plm_test_backend == PLM_BACKEND_CUDA) modes[count++] = PLM_POOL_CUDA_ASYNC;
  return count;
}

/* One script on a pool of `mode` under a 4 MiB byte limit: blocks of several sizes (one
 * 2 MiB chunk's worth, so that the pooled resource holds them in one chunk whatever its
 * page size), a request the limit refuses, frees, and a request that fits again.
 * Returns the statistics at the end. */
static plm_pool_stats limited_script(plm_pool_mode mode, plm_stream *stream) {
  plm_pool_config config = plm_pool_config_default();
  config.mode = mode;
  config.growth = PLM_POOL_GROW_FIXED;
  config.byte_limit = 4 * MiB;
  plm_pool *pool = pool_with(&config);
  const size_t sizes[] = {100000, 300001, 1 * MiB};
  void *ptrs[3] = {NULL, NULL, NULL}, *more = NULL;
  for (size_t i = 0; i < 3; i++) PLM_CHECK_OK(plm_pool_alloc(pool, sizes[i], stream, &ptrs[i]));
  /* The limit wraps whatever the resource takes upstream: past it, every resource
   * fails the same way, with the pool's diagnostic. */
  PLM_CHECK_FAILS(plm_pool_alloc(pool, 3 * MiB, stream, &more), PLM_ERR_OUT_OF_MEMORY,
                  "plm_pool_alloc: out of memory for 3145728 bytes");
  ck_assert_ptr_null(more);
  ck_assert_ptr_nonnull(strstr(plm_last_error(), "(limit 4194304)"));
  if (mode != PLM_POOL_CUDA_ASYNC) /* cuda_async reports what its cudaMemPool holds */
    ck_assert_uint_le(stats_of(pool).bytes_reserved, 4 * MiB);
  PLM_CHECK_OK(plm_pool_free(pool, ptrs[2], stream));
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, stream, &more));
  PLM_CHECK_OK(plm_pool_free(pool, ptrs[0], stream));
  plm_pool_stats stats = stats_of(pool);
  PLM_CHECK_OK(plm_pool_free(pool, ptrs[1], stream));
  PLM_CHECK_OK(plm_pool_free(pool, more, stream));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  return stats;
}

START_TEST(test_the_byte_limit_and_statistics_wrap_every_resource) {
  plm_stream *stream = new_stream();
  plm_pool_mode modes[3];
  const size_t count = modes_here(modes);
  plm_pool_stats first = limited_script(modes[0], stream);
  ck_assert_uint_eq(first.requests, 4);
  ck_assert_uint_eq(first.failures, 1);
  ck_assert_uint_eq(first.live_blocks, 2);
  ck_assert_uint_eq(first.bytes_requested, 300001 + 2 * MiB);
  ck_assert_uint_eq(first.bytes_in_use, 300032 + 2 * MiB);
  ck_assert_uint_eq(first.peak_bytes_in_use, 100096 + 300032 + 2 * MiB);
  for (size_t m = 1; m < count; m++) {
    /* The statistics count the same over every resource. */
    plm_pool_stats stats = limited_script(modes[m], stream);
    ck_assert_msg(stats.requests == first.requests && stats.failures == first.failures &&
                      stats.live_blocks == first.live_blocks &&
                      stats.bytes_requested == first.bytes_requested &&
                      stats.bytes_in_use == first.bytes_in_use &&
                      stats.peak_bytes_in_use == first.peak_bytes_in_use,
                  "%s counts otherwise than %s", plm_pool_mode_name(modes[m]),
                  plm_pool_mode_name(modes[0]));
  }
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* ---- stream order ---------------------------------------------------------------------- */

START_TEST(test_same_stream_reuse_is_immediate) {
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  plm_pool *pool = fixed_pool(2 * MiB, 2 * MiB, PLM_POOL_NO_STREAM_WAITS);
  plm_stream *stream = new_stream();
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, gate_wait_task, &hold)); /* the stream is busy */
  void *first = NULL, *again = NULL;
  double before = plm_test_now_ms();
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, stream, &first));
  PLM_CHECK_OK(plm_pool_free(pool, first, stream));
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, stream, &again));
  ck_assert_msg(plm_test_now_ms() - before < 1000, "same-stream reuse blocked the host");
  ck_assert_ptr_eq(first, again);
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.host_synchronizations, 0);
  ck_assert_uint_eq(stats.inserted_waits, 0);
  gate_open(&hold);
  PLM_CHECK_OK(plm_pool_free(pool, again, stream));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
  gate_destroy(&hold);
}
END_TEST

/* The canary: stream A holds a block behind a gate, then writes 0xAA into it and
 * frees it. Stream B takes a block of the same size and reads it back. If B got A's
 * block, B's read must come after A's write: the canary must read 0xAA. */
typedef struct canary_run {
  void *a_block;
  void *b_block;
  unsigned char *seen; /* B's read-back */
  double alloc_ms;     /* how long B's allocation took on the host */
  bool b_waited;       /* B was still unfinished while A was held */
  plm_pool_stats stats;
} canary_run;

static void *open_gate_later(void *arg) {
  plm_test_sleep_ms(150);
  gate_open(arg);
  return NULL;
}

/* B's read-back lands in pinned memory: on cuda a device-to-host copy into pageable
 * (malloc'd) memory returns only once it has run, and this one runs only after the
 * gate that the test opens after the copy call. run.seen is a malloc'd copy of it. */
static canary_run run_canary(unsigned flags, size_t limit, bool open_from_thread) {
  enum { BYTES = 256 * 1024 };
  canary_run run = {0};
  unsigned char *pinned = NULL;
  PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, BYTES, (void **)&pinned));
  memset(pinned, 0x00, BYTES);
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  plm_pool *pool = fixed_pool(limit, limit, flags);
  plm_stream *a = new_stream(), *b = new_stream();

  PLM_CHECK_OK(plm_pool_alloc(pool, BYTES, a, &run.a_block));
  PLM_CHECK_OK(plm_stream_enqueue_host(a, gate_wait_task, &hold));
  PLM_CHECK_OK(plm_stream_memset(a, run.a_block, 0xAA, BYTES));
  PLM_CHECK_OK(plm_pool_free(pool, run.a_block, a));

  /* The clock starts before the opener: the gate opens at least its sleep after this. */
  double before = plm_test_now_ms();
  pthread_t opener;
  if (open_from_thread) ck_assert_int_eq(pthread_create(&opener, NULL, open_gate_later, &hold), 0);
  PLM_CHECK_OK(plm_pool_alloc(pool, limit, b, &run.b_block)); /* needs A's block back */
  run.alloc_ms = plm_test_now_ms() - before;
  PLM_CHECK_OK(plm_stream_memcpy(b, pinned, run.b_block, BYTES, PLM_COPY_DEVICE_TO_HOST));
  if (!open_from_thread) {
    plm_test_sleep_ms(30);
    bool finished = true;
    PLM_CHECK_OK(plm_stream_query(b, &finished));
    run.b_waited = !finished;
    gate_open(&hold);
  } else {
    pthread_join(opener, NULL);
  }
  PLM_CHECK_OK(plm_stream_synchronize(b));
  PLM_CHECK_OK(plm_stream_synchronize(a));
  ck_assert(!hold.timed_out);
  run.seen = malloc(BYTES);
  ck_assert_ptr_nonnull(run.seen);
  memcpy(run.seen, pinned, BYTES);
  PLM_CHECK_OK(plm_host_free(plm_test_ctx, pinned));
  run.stats = stats_of(pool);
  PLM_CHECK_OK(plm_pool_free(pool, run.b_block, b));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_stream_destroy(b));
  gate_destroy(&hold);
  return run;
}

static bool all_bytes(const unsigned char *bytes, size_t n, unsigned char value) {
  for (size_t i = 0; i < n; i++)
    if (bytes[i] != value) return false;
  return true;
}

START_TEST(test_cross_stream_reuse_waits_on_the_device) {
  /* The limit leaves no room to grow: B can only have A's chunk. */
  canary_run run = run_canary(PLM_POOL_DEFAULT, 2 * MiB, false);
  ck_assert_ptr_eq(run.b_block, run.a_block);
  ck_assert_msg(run.alloc_ms < 1000, "the allocation blocked the host for %.0f ms", run.alloc_ms);
  ck_assert_msg(run.b_waited, "stream B ran while A still held the block");
  ck_assert_msg(all_bytes(run.seen, 256 * 1024, 0xAA), "B read the block before A wrote it");
  ck_assert_uint_eq(run.stats.inserted_waits, 1);
  ck_assert_uint_eq(run.stats.host_synchronizations, 0);
  ck_assert_uint_eq(run.stats.cross_stream_reuses, 1);
  free(run.seen);
}
END_TEST

START_TEST(test_without_waits_the_host_blocks_only_as_the_last_resort) {
  canary_run run = run_canary(PLM_POOL_NO_STREAM_WAITS, 2 * MiB, true);
  ck_assert_ptr_eq(run.b_block, run.a_block);
  ck_assert_msg(run.alloc_ms >= 100, "the block went to B after %.0f ms, before A finished",
                run.alloc_ms);
  ck_assert_msg(all_bytes(run.seen, 256 * 1024, 0xAA), "B read the block before A wrote it");
  ck_assert_uint_eq(run.stats.inserted_waits, 0);
  ck_assert_uint_ge(run.stats.host_synchronizations, 1);
  free(run.seen);
}
END_TEST

START_TEST(test_pending_block_is_not_given_to_another_stream_while_room_remains) {
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  plm_pool *pool = fixed_pool(2 * MiB, 0, PLM_POOL_NO_STREAM_WAITS);
  plm_stream *a = new_stream(), *b = new_stream();
  void *mine = NULL, *theirs = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, a, &mine));
  PLM_CHECK_OK(plm_stream_enqueue_host(a, gate_wait_task, &hold));
  PLM_CHECK_OK(plm_pool_free(pool, mine, a));
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, b, &theirs));
  ck_assert_ptr_ne(mine, theirs); /* grown instead: A may still be using `mine` */
  ck_assert_uint_eq(stats_of(pool).upstream_allocs, 2);
  gate_open(&hold);
  PLM_CHECK_OK(plm_pool_free(pool, theirs, b));
  PLM_CHECK_OK(plm_stream_synchronize(a));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_stream_destroy(b));
  gate_destroy(&hold);
}
END_TEST

START_TEST(test_completed_free_is_reused_by_another_stream_without_a_wait) {
  plm_pool *pool = fixed_pool(2 * MiB, 2 * MiB, PLM_POOL_NO_STREAM_WAITS);
  plm_stream *a = new_stream(), *b = new_stream();
  void *first = NULL, *second = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, a, &first));
  PLM_CHECK_OK(plm_pool_free(pool, first, a));
  PLM_CHECK_OK(plm_stream_synchronize(a)); /* the free's work is done */
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, b, &second));
  ck_assert_ptr_eq(first, second);
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.inserted_waits, 0);
  ck_assert_uint_eq(stats.cross_stream_reuses, 1);
  ck_assert_uint_le(stats.host_synchronizations, 1); /* at most a wait on an idle stream */
  PLM_CHECK_OK(plm_pool_free(pool, second, b));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_stream_destroy(b));
}
END_TEST

START_TEST(test_destroying_a_stream_releases_its_pending_blocks) {
  plm_pool *pool = fixed_pool(2 * MiB, 2 * MiB, PLM_POOL_NO_STREAM_WAITS);
  plm_stream *a = new_stream(), *b = new_stream();
  void *first = NULL, *second = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, a, &first));
  PLM_CHECK_OK(plm_pool_free(pool, first, a));
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, b, &second));
  ck_assert_ptr_eq(first, second);
  ck_assert_uint_eq(stats_of(pool).host_synchronizations, 0);
  PLM_CHECK_OK(plm_pool_free(pool, second, b));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(b));
}
END_TEST

/* Calls that may wait for streams are refused inside a host callback, where waiting
 * on the callback's own stream would deadlock; a free never waits and is allowed. */
typedef struct callback_probe {
  plm_pool *pool, *passthrough;
  plm_stream *stream;
  void *block, *upstream_block;
  plm_status alloc_status, trim_status, free_status, sync_status, upstream_free_status;
  char message[256];
} callback_probe;

static void pool_calls_from_callback(void *user) {
  callback_probe *probe = user;
  void *ptr = NULL;
  probe->alloc_status = plm_pool_alloc(probe->pool, 1000, probe->stream, &ptr);
  snprintf(probe->message, sizeof probe->message, "%s", plm_last_error());
  probe->trim_status = plm_pool_trim(probe->pool, 0);
  probe->sync_status = plm_stream_synchronize(probe->stream);
  probe->free_status = plm_pool_free(probe->pool, probe->block, probe->stream);
  probe->upstream_free_status =
      plm_pool_free(probe->passthrough, probe->upstream_block, probe->stream);
}

/* On both backends: on cuda the callback runs through the backend's trampoline, which
 * marks CUDA's callback thread as inside a callback. */
START_TEST(test_waiting_calls_are_refused_in_host_callbacks) {
  plm_pool *pool = fixed_pool(2 * MiB, 0, 0);
  plm_pool_config config = plm_pool_config_default();
  config.mode = PLM_POOL_PASSTHROUGH;
  plm_pool *passthrough = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &config, &passthrough));
  plm_stream *stream = new_stream();
  callback_probe probe = {.pool = pool, .passthrough = passthrough, .stream = stream};
  PLM_CHECK_OK(plm_pool_alloc(pool, 5000, stream, &probe.block));
  PLM_CHECK_OK(plm_pool_alloc(passthrough, 5000, stream, &probe.upstream_block));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, pool_calls_from_callback, &probe));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  /* A passthrough free gives the block upstream (cudaFree waits for the device): refused
   * in the callback, the block still live and freed normally afterwards. */
  ck_assert_int_eq(probe.upstream_free_status, PLM_ERR_INVALID_STATE);
  ck_assert_uint_eq(stats_of(passthrough).live_blocks, 1);
  PLM_CHECK_OK(plm_pool_free(passthrough, probe.upstream_block, stream));
  PLM_CHECK_OK(plm_pool_destroy(passthrough));
  ck_assert_int_eq(probe.alloc_status, PLM_ERR_INVALID_STATE);
  ck_assert_msg(strstr(probe.message, "plm_pool_alloc: called from a host callback"), "%s",
                probe.message);
  ck_assert_int_eq(probe.trim_status, PLM_ERR_INVALID_STATE);
  ck_assert_int_eq(probe.sync_status, PLM_ERR_INVALID_STATE);
  ck_assert_int_eq(probe.free_status, PLM_OK);
  ck_assert_uint_eq(stats_of(pool).live_blocks, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* Stream B takes, behind a wait, a block pending on A that is only big enough
 * together with the free memory around it; what is left must still merge with A's
 * other pending neighbour (the debug build checks every invariant). */
START_TEST(test_reuse_behind_a_wait_extends_into_free_neighbours) {
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  plm_pool *pool = fixed_pool(2 * MiB, 2 * MiB, 0);
  plm_stream *a = new_stream(), *b = new_stream();
  void *x0 = NULL, *x1 = NULL, *x2 = NULL, *rest = NULL, *taken = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 512 * KiB, a, &x0));
  PLM_CHECK_OK(plm_pool_alloc(pool, 512 * KiB, a, &x1));
  PLM_CHECK_OK(plm_pool_alloc(pool, 512 * KiB, a, &x2));
  PLM_CHECK_OK(plm_pool_alloc(pool, 512 * KiB, a, &rest));
  PLM_CHECK_OK(plm_pool_free(pool, x1, a));
  PLM_CHECK_OK(plm_stream_synchronize(a));
  PLM_CHECK_OK(plm_pool_trim(pool, SIZE_MAX)); /* x1 is now free for every stream */
  PLM_CHECK_OK(plm_stream_enqueue_host(a, gate_wait_task, &hold));
  PLM_CHECK_OK(plm_pool_free(pool, x0, a));
  PLM_CHECK_OK(plm_pool_free(pool, x2, a)); /* [A: x0][free: x1][A: x2][rest] */
  PLM_CHECK_OK(plm_pool_alloc(pool, 768 * KiB, b, &taken));
  ck_assert_ptr_eq(taken, x0);
  ck_assert_uint_eq(stats_of(pool).inserted_waits, 1);
  gate_open(&hold);
  PLM_CHECK_OK(plm_pool_free(pool, taken, b));
  PLM_CHECK_OK(plm_pool_free(pool, rest, a));
  PLM_CHECK_OK(plm_pool_trim(pool, SIZE_MAX));
  ck_assert_uint_eq(stats_of(pool).largest_free_block, 2 * MiB);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_stream_destroy(b));
  gate_destroy(&hold);
}
END_TEST

/* Another thread captures stream P into a graph (P freed a block into the pool before,
 * so its epoch is open) while this thread's allocation takes the slow path, which
 * closes every stream's open epoch. Querying P (cudaStreamQuery) or recording an event
 * on it (cudaEventRecord) during the capture would fail and invalidate the capture, or
 * put the pool's mark into the graph: the slow path must leave P's epoch open until the
 * capture ends. The capture ends in a graph that runs, the allocation succeeds, and P's
 * free is reused once the capture is over. */
/* capture_run and capture_between_gates: tests/capture_thread.h. */

START_TEST(test_slow_path_leaves_a_capturing_stream_alone) {
  capture_run run = {.stream = new_stream()};
  if (!plm__stream_graph_supported(plm_test_ctx)) {
    PLM_CHECK_OK(plm_stream_destroy(run.stream));
    printf("SKIP test_slow_path_leaves_a_capturing_stream_alone: no graphs on this backend\n");
    return;
  }
  plm_pool *pool = fixed_pool(2 * MiB, 0, PLM_POOL_NO_STREAM_WAITS);
  plm_stream *other = new_stream();
  void *freed = NULL, *target = NULL, *grown = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 1 * MiB, run.stream, &freed));
  PLM_CHECK_OK(plm_pool_alloc(pool, 1 * MiB, run.stream, &target)); /* the chunk is full */
  PLM_CHECK_OK(plm_pool_free(pool, freed, run.stream));             /* P's epoch is open */
  gate_init(&run.begun, GATE_TIMEOUT_MS);
  gate_init(&run.may_end, GATE_TIMEOUT_MS);
  pthread_t capturer;
  ck_assert_int_eq(pthread_create(&capturer, NULL, capture_between_gates, &run), 0);
  ck_assert(gate_wait(&run.begun));
  PLM_CHECK_OK(run.begin);
  PLM_CHECK_OK(plm_stream_memset(run.stream, target, 7, 1 * MiB)); /* recorded */
  /* 4 MiB fits nowhere: the slow path closes epochs, then grows a chunk of 4 MiB. */
  plm_status allocated = plm_pool_alloc(pool, 4 * MiB, other, &grown);
  char message[256];
  snprintf(message, sizeof message, "%s", plm_last_error());
  gate_open(&run.may_end);
  pthread_join(capturer, NULL);
  ck_assert_msg(allocated == PLM_OK, "plm_pool_alloc during a capture: %s", message);
  ck_assert_msg(run.end == PLM_OK, "the capture was broken by the pool's slow path: %s",
                run.end_message);
  PLM_CHECK_OK(plm__stream_graph_launch(run.graph, run.stream));
  unsigned char byte = 0;
  PLM_CHECK_OK(plm_stream_memcpy(run.stream, &byte, (char *)target + 1 * MiB - 1, 1,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(run.stream));
  ck_assert_int_eq(byte, 7);
  /* Once the capture is over, the next slow path closes P's epoch: its free is reused by
   * the other stream without a chunk more. */
  void *reused = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 1 * MiB, other, &reused));
  ck_assert_ptr_eq(reused, freed);
  ck_assert_uint_eq(stats_of(pool).upstream_allocs, 2);
  plm__stream_graph_destroy(run.graph);
  PLM_CHECK_OK(plm_pool_free(pool, reused, other));
  PLM_CHECK_OK(plm_pool_free(pool, grown, other));
  PLM_CHECK_OK(plm_pool_free(pool, target, run.stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(other));
  PLM_CHECK_OK(plm_stream_destroy(run.stream));
  gate_destroy(&run.begun);
  gate_destroy(&run.may_end);
}
END_TEST

/* ---- modes, the default pool, lifecycle ------------------------------------------------ */

START_TEST(test_passthrough_goes_upstream_every_time) {
  plm_pool_config config = plm_pool_config_default();
  config.mode = PLM_POOL_PASSTHROUGH;
  plm_pool *pool = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &config, &pool));
  plm_stream *stream = new_stream();
  for (int i = 0; i < 10; i++) {
    void *ptr = NULL;
    PLM_CHECK_OK(plm_pool_alloc(pool, 1000 + (size_t)i, stream, &ptr));
    ck_assert((uintptr_t)ptr % 256 == 0);
    PLM_CHECK_OK(plm_pool_free(pool, ptr, stream));
  }
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.requests, 10);
  ck_assert_uint_eq(stats.upstream_allocs, 10);
  ck_assert_uint_eq(stats.upstream_frees, 10);
  ck_assert_uint_eq(stats.hits, 0);
  plm_pool_mode mode;
  PLM_CHECK_OK(plm_pool_mode_get(pool, &mode));
  ck_assert_int_eq(mode, PLM_POOL_PASSTHROUGH);
  ck_assert_str_eq(plm_pool_mode_name(mode), "passthrough");
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_cuda_async_mode_needs_cuda) {
  plm_pool_config config = plm_pool_config_default();
  config.mode = PLM_POOL_CUDA_ASYNC;
  plm_pool *pool = NULL;
  if (plm_test_backend == PLM_BACKEND_HOST) {
    PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool), PLM_ERR_UNSUPPORTED,
                    "cuda_async needs the cuda backend");
    ck_assert_ptr_null(pool);
    return;
  }
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &config, &pool));
  plm_stream *stream = new_stream();
  void *ptr = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 12345, stream, &ptr));
  PLM_CHECK_OK(plm_pool_free(pool, ptr, stream));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_default_pool_lives_with_the_context) {
  plm_pool *first = NULL, *again = NULL;
  PLM_CHECK_OK(plm_context_default_pool(plm_test_ctx, &first));
  PLM_CHECK_OK(plm_context_default_pool(plm_test_ctx, &again));
  ck_assert_ptr_eq(first, again);
  plm_context *owner = NULL;
  PLM_CHECK_OK(plm_pool_context(first, &owner));
  ck_assert_ptr_eq(owner, plm_test_ctx);
  PLM_CHECK_FAILS(plm_pool_destroy(first), PLM_ERR_INVALID_ARG, "default pool");
  plm_stream *stream = new_stream();
  void *ptr = NULL;
  PLM_CHECK_OK(plm_pool_alloc(first, 4096, stream, &ptr));
  PLM_CHECK_OK(plm_pool_free(first, ptr, stream));
  PLM_CHECK_OK(plm_stream_destroy(stream));
  /* The fixture's plm_context_destroy must report nothing left over. */
}
END_TEST

START_TEST(test_destroy_reports_live_blocks_and_leftover_pools) {
  plm_pool *pool = NULL;
  plm_stream *stream = new_stream();
  void *ptr = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, NULL, &pool));
  PLM_CHECK_OK(plm_pool_alloc(pool, 1000, stream, &ptr));
  PLM_CHECK_FAILS(plm_pool_destroy(pool), PLM_ERR_INVALID_STATE, "1 live block(s)");

  plm_context *ctx = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &ctx));
  PLM_CHECK_OK(plm_pool_create(ctx, NULL, &pool));
  plm_stream *other = NULL;
  PLM_CHECK_OK(plm_stream_create(ctx, 0, &other));
  PLM_CHECK_OK(plm_pool_alloc(pool, 5000, other, &ptr));
  PLM_CHECK_OK(plm_stream_destroy(other));
  PLM_CHECK_FAILS(plm_context_destroy(ctx), PLM_ERR_INVALID_STATE, "and 1 pool(s)");
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* ---- bad input -------------------------------------------------------------------------- */

START_TEST(test_bad_config_is_refused) {
  plm_pool *pool = NULL;
  plm_pool_config config = plm_pool_config_default();
  PLM_CHECK_FAILS(plm_pool_create(NULL, &config, &pool), PLM_ERR_INVALID_ARG, "ctx is NULL");
  PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  config.mode = (plm_pool_mode)9;
  PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool), PLM_ERR_INVALID_ARG,
                  "plm_pool_create: cfg->mode 9 is not a plm_pool_mode");
  config = plm_pool_config_default();
  config.flags = 0x40;
  PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool), PLM_ERR_INVALID_ARG,
                  "cfg->flags 0x40 has unknown bits");
  config = plm_pool_config_default();
  config.growth = (plm_pool_growth)5;
  PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool), PLM_ERR_INVALID_ARG,
                  "cfg->growth 5");
  config = plm_pool_config_default();
  config.byte_limit = 1 * MiB;
  config.initial_reservation = 2 * MiB;
  PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool), PLM_ERR_INVALID_ARG,
                  "above cfg->byte_limit");
  const size_t bad_pages[] = {3000, 128, 4 * MiB};
  for (size_t i = 0; i < sizeof bad_pages / sizeof bad_pages[0]; i++) {
    config = plm_pool_config_default();
    config.page_bytes = bad_pages[i];
    PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool), PLM_ERR_INVALID_ARG,
                    "is not a power of two from");
  }
  ck_assert_ptr_null(pool);
  PLM_CHECK_OK(plm_pool_destroy(NULL));
}
END_TEST

START_TEST(test_initial_reservation_is_one_chunk) {
  plm_pool_config config = plm_pool_config_default();
  config.initial_reservation = 3 * MiB;
  plm_pool *pool = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &config, &pool));
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.upstream_allocs, 1);
  ck_assert_uint_ge(stats.bytes_reserved, 3 * MiB);
  PLM_CHECK_OK(plm_pool_destroy(pool));
}
END_TEST

START_TEST(test_bad_input_is_reported_and_nothing_is_corrupted) {
  plm_pool *pool = fixed_pool(2 * MiB, 0, 0);
  plm_stream *stream = new_stream();
  void *ptr = NULL, *medium = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 1000, stream, &ptr));
  PLM_CHECK_OK(plm_pool_alloc(pool, 100000, stream, &medium));
  plm_pool_stats before = stats_of(pool);

  void *out = (void *)0x1;
  PLM_CHECK_FAILS(plm_pool_alloc(NULL, 10, stream, &out), PLM_ERR_INVALID_ARG, "pool is NULL");
  ck_assert_ptr_null(out);
  PLM_CHECK_FAILS(plm_pool_alloc(pool, 10, NULL, &out), PLM_ERR_INVALID_ARG, "stream is NULL");
  PLM_CHECK_FAILS(plm_pool_alloc(pool, 10, stream, NULL), PLM_ERR_INVALID_ARG, "ptr is NULL");
  PLM_CHECK_FAILS(plm_pool_alloc(pool, 0, stream, &out), PLM_ERR_INVALID_ARG, "bytes is 0");
  PLM_CHECK_FAILS(plm_pool_alloc(pool, SIZE_MAX, stream, &out), PLM_ERR_INVALID_ARG,
                  "larger than any device memory");
  PLM_CHECK_FAILS(plm_pool_alloc(pool, SIZE_MAX / 2, stream, &out), PLM_ERR_INVALID_ARG,
                  "larger than any device memory");
  PLM_CHECK_FAILS(plm_pool_free(NULL, ptr, stream), PLM_ERR_INVALID_ARG, "pool is NULL");
  PLM_CHECK_FAILS(plm_pool_free(pool, ptr, NULL), PLM_ERR_INVALID_ARG, "stream is NULL");
  int on_the_stack = 0;
  PLM_CHECK_FAILS(plm_pool_free(pool, &on_the_stack, stream), PLM_ERR_NOT_FOUND,
                  "is not a live block of this pool");
  PLM_CHECK_FAILS(plm_pool_free(pool, (char *)medium + 256, stream), PLM_ERR_NOT_FOUND,
                  "interior pointer");
  PLM_CHECK_OK(plm_pool_free(pool, NULL, stream));

  /* A stream of another context. */
  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_stream *foreign = NULL;
  PLM_CHECK_OK(plm_stream_create(other, 0, &foreign));
  PLM_CHECK_FAILS(plm_pool_alloc(pool, 10, foreign, &out), PLM_ERR_INVALID_ARG,
                  "stream belongs to another context");
  PLM_CHECK_FAILS(plm_pool_free(pool, ptr, foreign), PLM_ERR_INVALID_ARG,
                  "stream belongs to another context");
  PLM_CHECK_OK(plm_stream_destroy(foreign));
  PLM_CHECK_OK(plm_context_destroy(other));

  plm_pool_stats after = stats_of(pool);
  ck_assert_uint_eq(after.live_blocks, before.live_blocks);
  ck_assert_uint_eq(after.bytes_in_use, before.bytes_in_use);

  /* Double free: the first succeeds, the second is refused. */
  PLM_CHECK_OK(plm_pool_free(pool, ptr, stream));
  PLM_CHECK_FAILS(plm_pool_free(pool, ptr, stream), PLM_ERR_NOT_FOUND, "already freed");
  PLM_CHECK_OK(plm_pool_free(pool, medium, stream));
  after = stats_of(pool);
  ck_assert_uint_eq(after.live_blocks, 0);
  ck_assert_uint_eq(after.bytes_in_use, 0);

  plm_pool_stats stats;
  PLM_CHECK_FAILS(plm_pool_stats_get(NULL, &stats), PLM_ERR_INVALID_ARG, "pool is NULL");
  PLM_CHECK_FAILS(plm_pool_stats_get(pool, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  PLM_CHECK_FAILS(plm_pool_trim(NULL, 0), PLM_ERR_INVALID_ARG, "pool is NULL");
  plm_pool_mode mode;
  PLM_CHECK_FAILS(plm_pool_mode_get(NULL, &mode), PLM_ERR_INVALID_ARG, "pool is NULL");
  plm_context *owner;
  PLM_CHECK_FAILS(plm_pool_context(pool, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  (void)owner;
  PLM_CHECK_FAILS(plm_context_default_pool(NULL, &pool), PLM_ERR_INVALID_ARG, "ctx is NULL");

  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* The live table (pool/pool_live.h) refuses every pointer that is not a live block's
 * start: around and inside a chunk, inside blocks, at free blocks, freed twice. */
START_TEST(test_frees_of_pointers_that_are_not_live_blocks_are_refused) {
  plm_pool *pool = fixed_pool(2 * MiB, 2 * MiB, 0);
  plm_stream *stream = new_stream();
  void *first = NULL, *second = NULL, *medium = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 256, stream, &first)); /* the chunk's base */
  PLM_CHECK_OK(plm_pool_alloc(pool, 256, stream, &second));
  PLM_CHECK_OK(plm_pool_alloc(pool, 100000, stream, &medium));
  /* medium is cut from the front of the chunk, the small blocks from its tail
   * (pool/pool_internal.h). */
  char *base = medium;
  char *const around[] = {
      base - 256,     /* just before the chunk */
      base - 1,       /* just before, unaligned */
      base + 2 * MiB, /* just after the chunk (its end) */
      base + 2 * MiB + 256,
      (char *)first + 1,    /* inside a small block, unaligned */
      (char *)medium + 256, /* inside a block, on a granule */
      (char *)medium + 99840,
      base + 1 * MiB, /* the middle of the chunk: free memory */
  };
  for (size_t i = 0; i < sizeof around / sizeof around[0]; i++)
    PLM_CHECK_FAILS(plm_pool_free(pool, around[i], stream), PLM_ERR_NOT_FOUND,
                    "is not a live block of this pool");
  ck_assert_uint_eq(stats_of(pool).live_blocks, 3);

  /* A freed block freed again; then reused, freed once more, and refused again. */
  PLM_CHECK_OK(plm_pool_free(pool, second, stream));
  PLM_CHECK_FAILS(plm_pool_free(pool, second, stream), PLM_ERR_NOT_FOUND, "already freed");
  void *again = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 256, stream, &again));
  ck_assert_ptr_eq(again, second);
  PLM_CHECK_OK(plm_pool_free(pool, again, stream));
  PLM_CHECK_FAILS(plm_pool_free(pool, again, stream), PLM_ERR_NOT_FOUND, "already freed");
  PLM_CHECK_OK(plm_pool_free(pool, medium, stream));
  PLM_CHECK_FAILS(plm_pool_free(pool, medium, stream), PLM_ERR_NOT_FOUND, "already freed");
  PLM_CHECK_OK(plm_pool_free(pool, first, stream));
  ck_assert_uint_eq(stats_of(pool).live_blocks, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* Many live blocks (the table grows several times and shrinks again), freed in a
 * scrambled order: every free finds its block exactly once. */
START_TEST(test_many_live_blocks_are_each_found_once) {
  enum { COUNT = 20000 };
  plm_pool *pool = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, NULL, &pool));
  plm_stream *stream = new_stream();
  void **ptrs = calloc(COUNT, sizeof *ptrs);
  ck_assert_ptr_nonnull(ptrs);
  for (size_t i = 0; i < COUNT; i++)
    PLM_CHECK_OK(plm_pool_alloc(pool, 256 * (1 + i % 16), stream, &ptrs[i]));
  ck_assert_uint_eq(stats_of(pool).live_blocks, COUNT);
  /* Every other block first (odd strides of a prime walk the whole array). */
  for (size_t k = 0, i = 0; k < COUNT; k++, i = (i + 7919) % COUNT) {
    if (i % 2) continue;
    PLM_CHECK_OK(plm_pool_free(pool, ptrs[i], stream));
    PLM_CHECK_FAILS(plm_pool_free(pool, ptrs[i], stream), PLM_ERR_NOT_FOUND, "already freed");
    if (i % 16) /* a block of two granules or more: +256 is inside it */
      PLM_CHECK_FAILS(plm_pool_free(pool, (char *)ptrs[i] + 256, stream), PLM_ERR_NOT_FOUND,
                      "is not a live block");
  }
  ck_assert_uint_eq(stats_of(pool).live_blocks, COUNT / 2);
  for (size_t k = 0, i = 0; k < COUNT; k++, i = (i + 7919) % COUNT)
    if (i % 2) PLM_CHECK_OK(plm_pool_free(pool, ptrs[i], stream));
  ck_assert_uint_eq(stats_of(pool).live_blocks, 0);
  for (size_t i = 0; i < COUNT; i += 997)
    PLM_CHECK_FAILS(plm_pool_free(pool, ptrs[i], stream), PLM_ERR_NOT_FOUND, "already freed");
  free(ptrs);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* Passthrough blocks are in the same table: interior pointers and double frees are
 * refused there too. */
START_TEST(test_passthrough_refuses_what_is_not_a_live_block) {
  plm_pool_config config = plm_pool_config_default();
  config.mode = PLM_POOL_PASSTHROUGH;
  plm_pool *pool = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &config, &pool));
  plm_stream *stream = new_stream();
  void *ptr = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 4096, stream, &ptr));
  PLM_CHECK_FAILS(plm_pool_free(pool, (char *)ptr + 256, stream), PLM_ERR_NOT_FOUND,
                  "interior pointer");
  PLM_CHECK_FAILS(plm_pool_free(pool, (char *)ptr - 256, stream), PLM_ERR_NOT_FOUND,
                  "is not a live block");
  PLM_CHECK_OK(plm_pool_free(pool, ptr, stream));
  PLM_CHECK_FAILS(plm_pool_free(pool, ptr, stream), PLM_ERR_NOT_FOUND, "already freed");
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

static Suite *pool_suite(void) {
  Suite *suite = suite_create("pool");
  TCase *shapes = tcase_create("shapes");
  plm_test_add_fixture(shapes);
  tcase_add_test(shapes, test_blocks_are_256_byte_aligned);
  tcase_add_test(shapes, test_small_blocks_reuse_their_size_class);
  tcase_add_test(shapes, test_medium_blocks_split_and_coalesce);
  tcase_add_test(shapes, test_fragmentation_is_reported);
  tcase_add_test(shapes, test_huge_requests_get_their_own_chunk);
  tcase_add_test(shapes, test_chunk_sizes_follow_the_growth_policy);
  tcase_add_test(shapes, test_cached_small_blocks_are_bounded_and_go_back_on_trim);
  suite_add_tcase(suite, shapes);

  TCase *accounting = tcase_create("accounting");
  plm_test_add_fixture(accounting);
  tcase_add_test(accounting, test_statistics_add_up);
  tcase_add_test(accounting, test_trim_gives_idle_chunks_back);
  tcase_add_test(accounting, test_release_threshold_gives_idle_chunks_back_on_the_slow_path);
  tcase_add_test(accounting, test_byte_limit_out_of_memory_and_recovery);
  tcase_add_test(accounting, test_out_of_memory_gives_idle_chunks_back_before_failing);
  tcase_add_test(accounting, test_initial_reservation_is_one_chunk);
  tcase_add_test(accounting, test_the_byte_limit_and_statistics_wrap_every_resource);
  suite_add_tcase(suite, accounting);

  TCase *order = tcase_create("stream_order");
  plm_test_add_fixture(order);
  tcase_add_test(order, test_same_stream_reuse_is_immediate);
  tcase_add_test(order, test_cross_stream_reuse_waits_on_the_device);
  tcase_add_test(order, test_without_waits_the_host_blocks_only_as_the_last_resort);
  tcase_add_test(order, test_pending_block_is_not_given_to_another_stream_while_room_remains);
  tcase_add_test(order, test_completed_free_is_reused_by_another_stream_without_a_wait);
  tcase_add_test(order, test_destroying_a_stream_releases_its_pending_blocks);
  tcase_add_test(order, test_waiting_calls_are_refused_in_host_callbacks);
  tcase_add_test(order, test_reuse_behind_a_wait_extends_into_free_neighbours);
  tcase_add_test(order, test_slow_path_leaves_a_capturing_stream_alone);
  suite_add_tcase(suite, order);

  TCase *lifecycle = tcase_create("lifecycle");
  plm_test_add_fixture(lifecycle);
  tcase_add_test(lifecycle, test_passthrough_goes_upstream_every_time);
  tcase_add_test(lifecycle, test_cuda_async_mode_needs_cuda);
  tcase_add_test(lifecycle, test_default_pool_lives_with_the_context);
  tcase_add_test(lifecycle, test_destroy_reports_live_blocks_and_leftover_pools);
  tcase_add_test(lifecycle, test_bad_config_is_refused);
  tcase_add_test(lifecycle, test_bad_input_is_reported_and_nothing_is_corrupted);
  tcase_add_test(lifecycle, test_frees_of_pointers_that_are_not_live_blocks_are_refused);
  tcase_add_test(lifecycle, test_many_live_blocks_are_each_found_once);
  tcase_add_test(lifecycle, test_passthrough_refuses_what_is_not_a_live_block);
  suite_add_tcase(suite, lifecycle);
  return suite;
}

int main(void) {
  return plm_test_main(pool_suite);
}

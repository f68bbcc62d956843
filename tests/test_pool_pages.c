/* tests/test_pool_pages.c: the memory under free pages given back and taken again
 * (pool/pool_internal.h, "Giving memory back"; pool/pool_pages.c).
 *
 * One chunk is laid out by hand: a 9 MiB block X and a 32 KiB block Y in a 10 MiB
 * chunk (a small request takes the tail of a free run), so that freeing X leaves a
 * free run over pages 0..3 and most of page 4, whose last bytes Y holds. Then the
 * slow path's choices can be checked to the byte: which pages go back before the pool
 * grows, which come back (the fewest that, with the free run beside them, hold a
 * request), that PLM_POOL_KEEP_PAGES keeps them, that plm_pool_trim gives them back,
 * that a chunk of only free and released pages goes upstream, what a snapshot shows,
 * and that memory taken again holds what is written to it, by copies and by a kernel. The
 * host backend gives pages back with madvise, cuda with the driver's virtual memory calls
 * (streams/cuda_vmm.h; on the CUDA emulator too). On a backend that cannot
 * (plm_device_info.page_release_bytes 0: cuda without those calls) the same calls must
 * give nothing back and still serve every request. Contents are touched only through
 * stream copies and kernels.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "plume/pool.h"
#include "plume/vector.h"
#include "pool_test.h"

static const size_t KiB = 1024, MiB = 1024 * 1024;

/* The unit in which this backend gives pages back: the host's system page, cuda's
 * granularity (2 MiB); 0 when it cannot. */
static size_t release_unit(void) {
  plm_device_info info;
  PLM_CHECK_OK(plm_context_device_info(plm_test_ctx, &info));
  return (size_t)info.page_release_bytes;
}

static bool pages_go_back(void) {
  return release_unit() != 0;
}

/* 2 MiB pages (cuda's granularity, not the host's default 16 KiB), so that the layouts
 * below read in pages of the chunk. */
static plm_pool *fixed_pool(unsigned flags, size_t release_threshold) {
  plm_pool_config config = plm_pool_config_default();
  config.growth = PLM_POOL_GROW_FIXED;
  config.page_bytes = 2 * MiB;
  config.flags = flags;
  config.release_threshold = release_threshold;
  return pool_with(&config);
}

/* The layout above; returns Y (X is freed, and the free is complete). */
static void *free_run_beside_a_small_block(plm_pool *pool, plm_stream *stream, void **chunk) {
  void *x = NULL, *y = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 9 * MiB, stream, &x));
  PLM_CHECK_OK(plm_pool_alloc(pool, 32 * KiB, stream, &y));
  ck_assert_ptr_eq((char *)y, (char *)x + 10 * MiB - 32 * KiB);
  PLM_CHECK_OK(plm_pool_free(pool, x, stream));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  *chunk = x;
  return y;
}

/* Fill a block with a byte through the stream and read it back. */
static void check_holds(plm_stream *stream, void *block, size_t bytes, int value) {
  unsigned char *back = malloc(bytes);
  ck_assert_ptr_nonnull(back);
  PLM_CHECK_OK(plm_stream_memset(stream, block, value, bytes));
  PLM_CHECK_OK(plm_stream_memcpy(stream, back, block, bytes, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  for (size_t i = 0; i < bytes; i += 4093) ck_assert_uint_eq(back[i], (unsigned)value);
  ck_assert_uint_eq(back[bytes - 1], (unsigned)value);
  free(back);
}

START_TEST(test_pages_go_back_before_growing_and_come_back_before_new_chunks) {
  plm_pool *pool = fixed_pool(0, 0);
  plm_stream *stream = new_stream();
  void *chunk = NULL, *y = free_run_beside_a_small_block(pool, stream, &chunk);

  /* 12 MiB fits nowhere: before a 12 MiB chunk is reserved, pages 0..3 of the free
   * run go back (reserved would otherwise be 22 MiB for 12 MiB in use). */
  void *z = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 12 * MiB, stream, &z));
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.upstream_allocs, 2);
  if (pages_go_back()) {
    ck_assert_uint_eq(stats.bytes_released, 8 * MiB);
    ck_assert_uint_eq(stats.bytes_reserved, 14 * MiB);
    ck_assert_uint_eq(stats.peak_bytes_reserved, 14 * MiB);
  } else {
    ck_assert_uint_eq(stats.bytes_released, 0);
    ck_assert_uint_eq(stats.bytes_reserved, 22 * MiB);
  }

  /* 7 MiB: the free run left (pages 4, less Y) and the last 3 released pages make
   * 8 MiB - 32 KiB; those 3 come back, not all 4, and no chunk is reserved. */
  void *w = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 7 * MiB, stream, &w));
  stats = stats_of(pool);
  if (pages_go_back()) {
    ck_assert_ptr_eq((char *)w, (char *)chunk + 2 * MiB);
    ck_assert_uint_eq(stats.upstream_allocs, 2);
    ck_assert_uint_eq(stats.bytes_released, 2 * MiB);
    ck_assert_uint_eq(stats.bytes_reserved, 20 * MiB);
  }
  check_holds(stream, w, 7 * MiB, 0x5a);
  check_holds(stream, z, 12 * MiB, 0xa5);

  PLM_CHECK_OK(plm_pool_free(pool, w, stream));
  PLM_CHECK_OK(plm_pool_free(pool, z, stream));
  PLM_CHECK_OK(plm_pool_free(pool, y, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_keep_pages_keeps_them) {
  plm_pool *pool = fixed_pool(PLM_POOL_KEEP_PAGES, 0);
  plm_stream *stream = new_stream();
  void *chunk = NULL, *y = free_run_beside_a_small_block(pool, stream, &chunk), *z = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 12 * MiB, stream, &z));
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.bytes_released, 0);
  ck_assert_uint_eq(stats.bytes_reserved, 22 * MiB);
  PLM_CHECK_OK(plm_pool_trim(pool, 0)); /* Y keeps its chunk; nothing else goes */
  ck_assert_uint_eq(stats_of(pool).bytes_reserved, 22 * MiB);
  PLM_CHECK_OK(plm_pool_free(pool, z, stream));
  PLM_CHECK_OK(plm_pool_free(pool, y, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* Trim gives idle chunks back, then the pages under free runs down to keep_bytes, and
 * a snapshot shows the released pages; a chunk of only free and released blocks goes
 * back whole once Y is freed. */
START_TEST(test_trim_gives_pages_back_and_the_snapshot_shows_them) {
  plm_pool *pool = fixed_pool(0, 0);
  plm_stream *stream = new_stream();
  void *chunk = NULL, *y = free_run_beside_a_small_block(pool, stream, &chunk);
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  plm_pool_stats stats = stats_of(pool);
  const bool back = pages_go_back();
  ck_assert_uint_eq(stats.bytes_released, back ? 8 * MiB : 0);
  ck_assert_uint_eq(stats.bytes_reserved, back ? 2 * MiB : 10 * MiB);

  plm_pool_snapshot *snapshot = NULL;
  PLM_CHECK_OK(plm_pool_snapshot_take(pool, &snapshot));
  ck_assert_uint_eq(snapshot->segment_count, 1);
  ck_assert_uint_eq(snapshot->bytes_reserved, stats.bytes_reserved);
  ck_assert_uint_eq(snapshot->bytes_released, stats.bytes_released);
  ck_assert_uint_eq(snapshot->segments[0].size,
                    snapshot->bytes_reserved + snapshot->bytes_released);
  if (back) {
    ck_assert_uint_eq(snapshot->block_count, 3);
    ck_assert_int_eq(snapshot->blocks[0].state, PLM_POOL_BLOCK_RELEASED);
    ck_assert_uint_eq(snapshot->blocks[0].size, 8 * MiB);
    ck_assert_int_eq(snapshot->blocks[1].state, PLM_POOL_BLOCK_FREE);
    ck_assert_int_eq(snapshot->blocks[2].state, PLM_POOL_BLOCK_USED);
    ck_assert_str_eq(plm_pool_block_state_name(PLM_POOL_BLOCK_RELEASED), "released");
    char *json = NULL;
    PLM_CHECK_OK(plm_pool_snapshot_to_json(snapshot, &json));
    ck_assert_ptr_nonnull(strstr(json, "\"state\": \"released\""));
    ck_assert_ptr_nonnull(strstr(json, "\"bytes_released\": 8388608"));
    free(json);
  }
  plm_pool_snapshot_free(snapshot);

  PLM_CHECK_OK(plm_pool_free(pool, y, stream));
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.upstream_frees, 1);
  ck_assert_uint_eq(stats.bytes_reserved, 0);
  ck_assert_uint_eq(stats.bytes_released, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* A chunk whose pages have all gone back holds no memory but still addresses: trim
 * gives it back whatever keep_bytes is (it was kept while keep_bytes was met). */
START_TEST(test_a_wholly_released_chunk_goes_back_on_any_trim) {
  plm_pool *pool = fixed_pool(0, 0);
  plm_stream *stream = new_stream();
  void *a = NULL, *b = NULL, *c = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 4 * MiB, stream, &a));
  PLM_CHECK_OK(plm_pool_alloc(pool, 4 * MiB, stream, &b));
  PLM_CHECK_OK(plm_pool_free(pool, a, stream));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  /* 6 MiB fits nowhere: A's whole chunk goes back before a 6 MiB chunk is reserved. */
  PLM_CHECK_OK(plm_pool_alloc(pool, 6 * MiB, stream, &c));
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.upstream_allocs, 3);
  if (pages_go_back()) {
    ck_assert_uint_eq(stats.bytes_released, 4 * MiB);
    ck_assert_uint_eq(stats.bytes_reserved, 10 * MiB);
  }
  PLM_CHECK_OK(plm_pool_trim(pool, 100 * MiB));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.upstream_frees, pages_go_back() ? 1 : 0);
  ck_assert_uint_eq(stats.bytes_released, 0);
  ck_assert_uint_eq(stats.bytes_reserved, pages_go_back() ? 10 * MiB : 14 * MiB);
  PLM_CHECK_OK(plm_pool_free(pool, b, stream));
  PLM_CHECK_OK(plm_pool_free(pool, c, stream));
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.upstream_frees, stats.upstream_allocs);
  ck_assert_uint_eq(stats.bytes_reserved, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* With a byte limit, the memory under free pages makes room before the pool fails:
 * 10 MiB reserved under a 12 MiB limit, 32 KiB in use, and a 10 MiB request. */
START_TEST(test_released_pages_make_room_under_the_byte_limit) {
  plm_pool_config config = plm_pool_config_default();
  config.growth = PLM_POOL_GROW_FIXED;
  config.byte_limit = 12 * MiB;
  plm_pool *pool = pool_with(&config);
  plm_stream *stream = new_stream();
  void *chunk = NULL, *y = free_run_beside_a_small_block(pool, stream, &chunk), *z = NULL;
  plm_status status = plm_pool_alloc(pool, 10 * MiB, stream, &z);
  if (pages_go_back()) {
    PLM_CHECK_OK(status);
    plm_pool_stats stats = stats_of(pool);
    ck_assert_uint_le(stats.bytes_reserved, 12 * MiB);
    check_holds(stream, z, 10 * MiB, 0x33);
    PLM_CHECK_OK(plm_pool_free(pool, z, stream));
  } else {
    ck_assert_int_eq(status, PLM_ERR_OUT_OF_MEMORY);
  }
  PLM_CHECK_OK(plm_pool_free(pool, y, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* Many rounds of mixed sizes with frees in between: every block holds what is written
 * to it, and the statistics add up (the invariants are checked on every slow path in
 * debug builds). */
START_TEST(test_mixed_sizes_through_released_pages_stay_consistent) {
  plm_pool *pool = fixed_pool(0, 0);
  plm_stream *stream = new_stream();
  enum { LIVE = 24 };
  void *live[LIVE] = {0};
  size_t sizes[LIVE] = {0};
  uint64_t state = 12345;
  for (int round = 0; round < 300; round++) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    int k = (int)((state >> 33) % LIVE);
    if (live[k]) {
      PLM_CHECK_OK(plm_pool_free(pool, live[k], stream));
      live[k] = NULL;
      if (round % 7 == 0) PLM_CHECK_OK(plm_stream_synchronize(stream));
      continue;
    }
    sizes[k] = (size_t)((state >> 20) % (6 * MiB)) + 1;
    PLM_CHECK_OK(plm_pool_alloc(pool, sizes[k], stream, &live[k]));
    if (round % 25 == 0) check_holds(stream, live[k], sizes[k], round & 0xff);
  }
  plm_pool_stats stats = stats_of(pool);
  plm_pool_snapshot *snapshot = NULL;
  PLM_CHECK_OK(plm_pool_snapshot_take(pool, &snapshot));
  ck_assert_uint_eq(snapshot->bytes_reserved, stats.bytes_reserved);
  ck_assert_uint_eq(snapshot->bytes_released, stats.bytes_released);
  uint64_t segments = 0;
  for (size_t i = 0; i < snapshot->segment_count; i++) segments += snapshot->segments[i].size;
  ck_assert_uint_eq(segments, stats.bytes_reserved + stats.bytes_released);
  plm_pool_snapshot_free(snapshot);
  for (int k = 0; k < LIVE; k++)
    if (live[k]) PLM_CHECK_OK(plm_pool_free(pool, live[k], stream));
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.bytes_reserved, 0);
  ck_assert_uint_eq(stats.bytes_released, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* By default the host backend gives back 16 KiB pages: a 100 KiB hole between two live
 * blocks gives back the 80 KiB of whole pages inside it (its ends share pages with its
 * neighbours), where 2 MiB pages (cuda's default, its granularity) give back nothing. */
START_TEST(test_default_pages_give_back_holes_between_live_blocks) {
  plm_pool_config config = plm_pool_config_default();
  config.growth = PLM_POOL_GROW_FIXED;
  plm_pool *pool = pool_with(&config);
  plm_stream *stream = new_stream();
  void *a = NULL, *b = NULL, *c = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 100 * KiB, stream, &a));
  PLM_CHECK_OK(plm_pool_alloc(pool, 100 * KiB, stream, &b));
  PLM_CHECK_OK(plm_pool_alloc(pool, 100 * KiB, stream, &c));
  ck_assert_ptr_eq((char *)b, (char *)a + 100 * KiB);
  PLM_CHECK_OK(plm_pool_free(pool, b, stream));
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  plm_pool_stats stats = stats_of(pool);
  /* 16 KiB pages: b's [112 KiB, 192 KiB) from the chunk's base, and after c the rest of the
   * chunk from 304 KiB on. 2 MiB pages: none is wholly free. */
  const size_t unit = release_unit();
  size_t expected = unit && unit <= 16 * KiB ? 80 * KiB + 2 * MiB - 304 * KiB : 0;
  ck_assert_uint_eq(stats.bytes_released, expected);
  ck_assert_uint_eq(stats.bytes_reserved, 2 * MiB - expected);
  PLM_CHECK_OK(plm_pool_free(pool, a, stream));
  PLM_CHECK_OK(plm_pool_free(pool, c, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* A kernel (vector_add) writes into pages taken again, and what it wrote reads back:
 * the recommitted memory is mapped for the device, not only for copies. */
START_TEST(test_a_kernel_writes_into_pages_taken_again) {
  plm_pool *pool = fixed_pool(0, 0);
  plm_stream *stream = new_stream();
  void *chunk = NULL, *y = free_run_beside_a_small_block(pool, stream, &chunk), *z = NULL;
  void *w = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 12 * MiB, stream, &z)); /* pages 0..3 go back */
  PLM_CHECK_OK(plm_pool_alloc(pool, 7 * MiB, stream, &w));  /* pages 1..3 come back */
  if (pages_go_back()) ck_assert_uint_eq(stats_of(pool).bytes_released, 2 * MiB);
  enum { N = 64 * 1024 };
  const int64_t dims[1] = {N};
  float *host = malloc(N * sizeof *host);
  ck_assert_ptr_nonnull(host);
  for (int i = 0; i < N; i++) host[i] = (float)i;
  void *operands = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * N * sizeof(float), stream, &operands));
  float *a_data = operands, *b_data = (float *)operands + N;
  PLM_CHECK_OK(plm_stream_memcpy(stream, a_data, host, N * sizeof(float), PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_stream_memcpy(stream, b_data, host, N * sizeof(float), PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_stream_synchronize(stream)); /* host is read back into below */
  /* Into the first recommitted page, [2 MiB, 4 MiB) of the chunk, and the end of the last,
   * [6 MiB, 8 MiB): both were unmapped. */
  char *targets[2] = {(char *)w, (char *)w + 4 * MiB - N * sizeof(float)};
  for (int t = 0; t < 2; t++) {
    plm_tensor a, b, out;
    PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, a_data, PLM_DTYPE_F32, 1, dims, &a));
    PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, b_data, PLM_DTYPE_F32, 1, dims, &b));
    PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, targets[t], PLM_DTYPE_F32, 1, dims, &out));
    PLM_CHECK_OK(plm_vector_add(stream, &a, &b, NULL, &out));
    memset(host, 0, N * sizeof *host);
    PLM_CHECK_OK(
        plm_stream_memcpy(stream, host, targets[t], N * sizeof(float), PLM_COPY_DEVICE_TO_HOST));
    PLM_CHECK_OK(plm_stream_synchronize(stream));
    for (int i = 0; i < N; i++) ck_assert_float_eq(host[i], (float)(2 * i));
  }
  free(host);
  PLM_CHECK_OK(plm_pool_free(pool, operands, stream));
  PLM_CHECK_OK(plm_pool_free(pool, w, stream));
  PLM_CHECK_OK(plm_pool_free(pool, z, stream));
  PLM_CHECK_OK(plm_pool_free(pool, y, stream));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* The unit the backend reports is the one the pool accepts as its least page_bytes: one
 * below it is refused, naming the backend's unit. */
START_TEST(test_the_backend_unit_bounds_page_bytes) {
  const size_t unit = release_unit();
  if (!unit || unit <= 256) {
    printf("SKIP test_the_backend_unit_bounds_page_bytes: the backend gives no pages back\n");
    return;
  }
  plm_pool_config config = plm_pool_config_default();
  config.page_bytes = unit / 2;
  plm_pool *pool = NULL;
  PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool), PLM_ERR_INVALID_ARG,
                  "backend's unit");
  config.page_bytes = unit;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &config, &pool));
  PLM_CHECK_OK(plm_pool_destroy(pool));
}
END_TEST

static Suite *pool_pages_suite(void) {
  Suite *suite = suite_create("pool_pages");
  TCase *pages = tcase_create("pages");
  plm_test_add_fixture(pages);
  tcase_add_test(pages, test_pages_go_back_before_growing_and_come_back_before_new_chunks);
  tcase_add_test(pages, test_keep_pages_keeps_them);
  tcase_add_test(pages, test_trim_gives_pages_back_and_the_snapshot_shows_them);
  tcase_add_test(pages, test_a_wholly_released_chunk_goes_back_on_any_trim);
  tcase_add_test(pages, test_released_pages_make_room_under_the_byte_limit);
  tcase_add_test(pages, test_mixed_sizes_through_released_pages_stay_consistent);
  tcase_add_test(pages, test_default_pages_give_back_holes_between_live_blocks);
  tcase_add_test(pages, test_a_kernel_writes_into_pages_taken_again);
  tcase_add_test(pages, test_the_backend_unit_bounds_page_bytes);
  suite_add_tcase(suite, pages);
  return suite;
}

int main(void) {
  return plm_test_main(pool_pages_suite);
}

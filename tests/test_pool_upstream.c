/* tests/test_pool_upstream.c: a pool whose memory comes from the user's callbacks
 * (plm_pool_upstream, plume/pool.h), a context that routes its default pool and its
 * pinned host pool through them, and the refusals (an upstream with cuda_async, NULL
 * callbacks, an adopted cudaMemPool_t where there is none).
 *
 * The upstream under test counts: it serves aligned_alloc(256) memory, records every
 * live piece with the size it was asked for, and notes any free of an unknown pointer
 * or with another size, so that "every byte goes back, exactly once, with the size it
 * was taken with" is checked by its counts (and, under ASan, by the leak check). It
 * can refuse: every call, or those that would take it past a byte limit.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "plume/pool.h"
#include "pool_test.h"

static const size_t KiB = 1024, MiB = 1024 * 1024;

enum { MAX_PIECES = 4096 };

typedef struct counting_upstream {
  pthread_mutex_t lock;
  void *ptrs[MAX_PIECES];
  size_t sizes[MAX_PIECES];
  size_t live; /* pieces out */
  size_t allocs, frees;
  size_t bytes_out;   /* bytes out now */
  size_t limit;       /* refuse what would pass this many bytes out; 0: none */
  bool refuse_all;    /* refuse with PLM_ERR_OUT_OF_MEMORY */
  plm_status hard;    /* nonzero: fail every alloc with this status */
  size_t bad_frees;   /* frees of an unknown pointer, or with another size */
  size_t with_stream; /* calls that were given a stream */
  size_t last_bytes;  /* the last alloc's size */
} counting_upstream;

static plm_status counting_alloc(size_t bytes, void *stream, void *user, void **ptr) {
  counting_upstream *up = user;
  pthread_mutex_lock(&up->lock);
  plm_status status = PLM_OK;
  if (up->hard)
    status = up->hard;
  else if (up->refuse_all || (up->limit && up->bytes_out + bytes > up->limit) ||
           up->live == MAX_PIECES)
    status = PLM_ERR_OUT_OF_MEMORY;
  void *memory = NULL;
  if (status == PLM_OK) {
    memory = aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!memory) status = PLM_ERR_OUT_OF_MEMORY;
  }
  if (status == PLM_OK) {
    up->ptrs[up->live] = memory;
    up->sizes[up->live] = bytes;
    up->live++;
    up->allocs++;
    up->bytes_out += bytes;
    up->with_stream += stream != NULL;
    up->last_bytes = bytes;
    *ptr = memory;
  }
  pthread_mutex_unlock(&up->lock);
  return status;
}

static void counting_free(void *ptr, size_t bytes, void *stream, void *user) {
  counting_upstream *up = user;
  pthread_mutex_lock(&up->lock);
  size_t i = 0;
  while (i < up->live && up->ptrs[i] != ptr) i++;
  if (i == up->live || up->sizes[i] != bytes) {
    up->bad_frees++;
  } else {
    up->live--;
    up->ptrs[i] = up->ptrs[up->live];
    up->sizes[i] = up->sizes[up->live];
    up->frees++;
    up->bytes_out -= bytes;
    up->with_stream += stream != NULL;
    free(ptr);
  }
  pthread_mutex_unlock(&up->lock);
}

static counting_upstream *counting_new(void) {
  counting_upstream *up = calloc(1, sizeof *up);
  ck_assert_ptr_nonnull(up);
  pthread_mutex_init(&up->lock, NULL);
  return up;
}

static plm_pool_upstream callbacks_of(counting_upstream *up) {
  return (plm_pool_upstream){.alloc = counting_alloc, .free = counting_free, .user = up};
}

/* Every piece went back, exactly once, with its size; then free the counter. */
static void check_balanced_and_free(counting_upstream *up) {
  ck_assert_uint_eq(up->bad_frees, 0);
  ck_assert_uint_eq(up->live, 0);
  ck_assert_uint_eq(up->bytes_out, 0);
  ck_assert_uint_eq(up->allocs, up->frees);
  pthread_mutex_destroy(&up->lock);
  free(up);
}

/* Destroy a pool that still has one live block, and its stream: the destroy reports
 * the block, and every piece still goes back to the upstream, once. */
static void destroy_with_one_live_block(plm_pool *pool, plm_stream *stream, counting_upstream *up) {
  PLM_CHECK_FAILS(plm_pool_destroy(pool), PLM_ERR_INVALID_STATE, "1 live block");
  PLM_CHECK_OK(plm_stream_destroy(stream));
  check_balanced_and_free(up);
}

static plm_pool *pool_over(counting_upstream *up, plm_pool_mode mode) {
  plm_pool_upstream callbacks = callbacks_of(up);
  plm_pool_config config = plm_pool_config_default();
  config.mode = mode;
  config.upstream = &callbacks; /* copied: may go out of scope after creation */
  config.huge_bytes = 8 * MiB;
  return pool_with(&config);
}

/* Whether ptr is a piece the upstream holds. */
static bool holds(counting_upstream *up, const void *ptr, size_t *bytes) {
  for (size_t i = 0; i < up->live; i++)
    if (up->ptrs[i] == ptr) {
      if (bytes) *bytes = up->sizes[i];
      return true;
    }
  return false;
}

START_TEST(test_pooled_chunks_come_from_the_upstream_and_go_back) {
  counting_upstream *up = counting_new();
  plm_pool *pool = pool_over(up, PLM_POOL_POOLED);
  plm_stream *stream = new_stream();
  ck_assert_uint_eq(up->allocs, 0); /* nothing reserved before the first request */
  const size_t sizes[] = {100, 64 * KiB, 300 * KiB, 3 * MiB, 9 * MiB /* huge */, 1};
  void *blocks[6] = {0};
  for (int i = 0; i < 6; i++) PLM_CHECK_OK(plm_pool_alloc(pool, sizes[i], stream, &blocks[i]));
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_gt(up->allocs, 0);
  ck_assert_uint_eq(stats.upstream_allocs, up->allocs);
  ck_assert_uint_eq(stats.bytes_reserved, up->bytes_out);
  ck_assert_uint_eq(up->with_stream, 0); /* chunks are for every stream */

  /* Every segment the pool shows is a piece of the upstream's, whole: no memory came
   * from the backend. */
  plm_pool_snapshot *snapshot = NULL;
  PLM_CHECK_OK(plm_pool_snapshot_take(pool, &snapshot));
  ck_assert_uint_eq(snapshot->segment_count, up->live);
  for (size_t i = 0; i < snapshot->segment_count; i++) {
    size_t bytes = 0;
    ck_assert(holds(up, (void *)(uintptr_t)snapshot->segments[i].base, &bytes));
    ck_assert_uint_eq(bytes, snapshot->segments[i].size);
  }
  plm_pool_snapshot_free(snapshot);

  /* Trim gives every idle chunk back through free. */
  for (int i = 0; i < 6; i++) PLM_CHECK_OK(plm_pool_free(pool, blocks[i], stream));
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.bytes_reserved, 0);
  ck_assert_uint_eq(up->live, 0);
  ck_assert_uint_eq(stats.upstream_frees, up->frees);
  ck_assert_uint_eq(stats.upstream_allocs, up->allocs);

  /* A free run beside a live block keeps its pages (on the host backend they would go
   * back): they are the upstream's. X = 5 MiB and Y = 32 KiB share a 6 MiB chunk, Y at
   * its end; freeing X leaves pages 0 and 1 wholly free. */
  void *x = NULL, *y = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 5 * MiB, stream, &x));
  PLM_CHECK_OK(plm_pool_alloc(pool, 32 * KiB, stream, &y));
  ck_assert_ptr_eq((char *)y, (char *)x + 6 * MiB - 32 * KiB);
  PLM_CHECK_OK(plm_pool_free(pool, x, stream));
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  stats = stats_of(pool);
  ck_assert_uint_eq(stats.bytes_released, 0);
  ck_assert_uint_eq(stats.bytes_reserved, 6 * MiB);
  ck_assert_uint_eq(up->bytes_out, 6 * MiB);
  PLM_CHECK_OK(plm_pool_free(pool, y, stream));

  /* Destroy with a block still live: everything still goes back, once. */
  void *left = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 5 * MiB, stream, &left));
  ck_assert_uint_gt(up->live, 0);
  destroy_with_one_live_block(pool, stream, up);
}
END_TEST

START_TEST(test_passthrough_calls_the_upstream_per_block_with_its_size) {
  counting_upstream *up = counting_new();
  plm_pool *pool = pool_over(up, PLM_POOL_PASSTHROUGH);
  plm_stream *stream = new_stream();
  void *a = NULL, *b = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 1000, stream, &a));
  ck_assert_uint_eq(up->last_bytes, 1000);
  PLM_CHECK_OK(plm_pool_alloc(pool, 300000, stream, &b));
  ck_assert_uint_eq(up->last_bytes, 300000);
  ck_assert_uint_eq(up->allocs, 2);
  ck_assert_uint_eq(up->with_stream, 2); /* each block is for its stream */
  ck_assert(holds(up, a, NULL) && holds(up, b, NULL));
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.upstream_allocs, 2);
  ck_assert_uint_eq(stats.bytes_requested, 301000);
  PLM_CHECK_OK(plm_pool_free(pool, a, stream));
  ck_assert_uint_eq(up->frees, 1);
  ck_assert_uint_eq(up->bad_frees, 0);
  ck_assert(!holds(up, a, NULL));
  PLM_CHECK_FAILS(plm_pool_free(pool, a, stream), PLM_ERR_NOT_FOUND, "not a live block");
  ck_assert_uint_eq(up->frees, 1);
  ck_assert_uint_eq(stats_of(pool).upstream_frees, 1);
  /* b is still live: destroy gives it back with its size. */
  destroy_with_one_live_block(pool, stream, up);
}
END_TEST

START_TEST(test_a_refusing_upstream_is_out_of_memory_and_the_pool_stays_usable) {
  counting_upstream *up = counting_new();
  plm_pool *pool = pool_over(up, PLM_POOL_POOLED);
  plm_stream *stream = new_stream();
  void *block = NULL;
  up->refuse_all = true;
  PLM_CHECK_FAILS(plm_pool_alloc(pool, 4 * KiB, stream, &block), PLM_ERR_OUT_OF_MEMORY,
                  "the user upstream's alloc refused 2097152 bytes");
  ck_assert_ptr_null(block);
  ck_assert_uint_eq(stats_of(pool).failures, 1);
  up->refuse_all = false;
  PLM_CHECK_OK(plm_pool_alloc(pool, 4 * KiB, stream, &block));
  PLM_CHECK_OK(plm_pool_free(pool, block, stream));

  /* Under a limit the pool gives idle chunks back and retries: a 3 MiB request fits
   * once the idle 2 MiB chunk has gone back through free. */
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  up->limit = 4 * MiB;
  PLM_CHECK_OK(plm_pool_alloc(pool, 3 * MiB, stream, &block));
  ck_assert_uint_le(up->bytes_out, 4 * MiB);
  PLM_CHECK_OK(plm_pool_free(pool, block, stream));

  /* Any other status is a hard failure, named. */
  up->hard = PLM_ERR_INVALID_STATE;
  PLM_CHECK_FAILS(plm_pool_alloc(pool, 6 * MiB, stream, &block), PLM_ERR_BACKEND,
                  "PLM_ERR_INVALID_STATE");
  up->hard = PLM_OK;
  up->limit = 0;

  /* Passthrough: the same message, and usable after. */
  plm_pool *passthrough = pool_over(up, PLM_POOL_PASSTHROUGH);
  up->refuse_all = true;
  PLM_CHECK_FAILS(plm_pool_alloc(passthrough, 4 * KiB, stream, &block), PLM_ERR_OUT_OF_MEMORY,
                  "the user upstream's alloc refused 4096 bytes");
  up->refuse_all = false;
  PLM_CHECK_OK(plm_pool_alloc(passthrough, 4 * KiB, stream, &block));
  PLM_CHECK_OK(plm_pool_free(passthrough, block, stream));
  ck_assert_uint_eq(stats_of(passthrough).bytes_reserved, 0);

  PLM_CHECK_OK(plm_pool_destroy(passthrough));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
  check_balanced_and_free(up);
}
END_TEST

START_TEST(test_refusals) {
  counting_upstream *up = counting_new();
  plm_pool_upstream callbacks = callbacks_of(up);
  plm_pool_config config = plm_pool_config_default();
  plm_pool *pool = NULL;
  config.upstream = &callbacks;
  config.mode = PLM_POOL_CUDA_ASYNC;
  PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool),
                  plm_test_backend == PLM_BACKEND_HOST ? PLM_ERR_UNSUPPORTED : PLM_ERR_INVALID_ARG,
                  "cuda_async");
  config.mode = PLM_POOL_POOLED;
  callbacks.alloc = NULL;
  PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool), PLM_ERR_INVALID_ARG,
                  "cfg->upstream->alloc is NULL");
  callbacks = callbacks_of(up);
  callbacks.free = NULL;
  config.mode = PLM_POOL_PASSTHROUGH;
  PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool), PLM_ERR_INVALID_ARG,
                  "cfg->upstream->free is NULL");

  /* An adopted cudaMemPool_t: none on the host backend; only for cuda_async on cuda. */
  int not_a_pool = 0;
  config = plm_pool_config_default();
  config.cuda_mem_pool = &not_a_pool;
  if (plm_test_backend == PLM_BACKEND_HOST) {
    config.mode = PLM_POOL_CUDA_ASYNC;
    PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool), PLM_ERR_UNSUPPORTED,
                    "the host backend has no cudaMemPool");
  } else {
    PLM_CHECK_FAILS(plm_pool_create(plm_test_ctx, &config, &pool), PLM_ERR_INVALID_ARG,
                    "cfg->cuda_mem_pool is for mode cuda_async");
  }
  ck_assert_ptr_null(pool);

  /* A context's host upstream needs both callbacks. */
  callbacks = callbacks_of(up);
  callbacks.free = NULL;
  plm_context_config context_config = {.backend = plm_test_backend, .host_upstream = &callbacks};
  plm_context *ctx = NULL;
  PLM_CHECK_FAILS(plm_context_create(&context_config, &ctx), PLM_ERR_INVALID_ARG,
                  "cfg->host_upstream->free is NULL");
  ck_assert_ptr_null(ctx);

  /* A bad default pool config fails the pool's first use, saying which pool. */
  callbacks = callbacks_of(up);
  config = plm_pool_config_default();
  config.mode = PLM_POOL_CUDA_ASYNC;
  config.upstream = &callbacks;
  context_config = (plm_context_config){.backend = plm_test_backend, .default_pool = &config};
  PLM_CHECK_OK(plm_context_create(&context_config, &ctx));
  PLM_CHECK_FAILS(plm_context_default_pool(ctx, &pool),
                  plm_test_backend == PLM_BACKEND_HOST ? PLM_ERR_UNSUPPORTED : PLM_ERR_INVALID_ARG,
                  "the default pool: ");
  PLM_CHECK_OK(plm_context_destroy(ctx));
  ck_assert_uint_eq(up->allocs, 0);
  check_balanced_and_free(up);
}
END_TEST

START_TEST(test_a_context_routes_its_default_and_host_pools_through_the_upstreams) {
  /* Both from malloc's aligned_alloc: the host pool's jemalloc is plume's private one, so
   * malloc's memory may become its extents (include/plume/context.h). */
  counting_upstream *device = counting_new(), *host = counting_new();
  plm_pool_upstream device_callbacks = callbacks_of(device), host_callbacks = callbacks_of(host);
  plm_pool_config pool_config = plm_pool_config_default();
  pool_config.upstream = &device_callbacks;
  plm_context_config config = {
      .backend = plm_test_backend, .default_pool = &pool_config, .host_upstream = &host_callbacks};
  plm_context *ctx = NULL;
  PLM_CHECK_OK(plm_context_create(&config, &ctx));
  /* Copied: the caller's structs may change or go away. */
  pool_config.upstream = NULL;
  device_callbacks.alloc = NULL;
  host_callbacks.alloc = NULL;

  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(ctx, 0, &stream));
  plm_pool *pool = NULL;
  PLM_CHECK_OK(plm_context_default_pool(ctx, &pool));
  plm_tensor tensor;
  const int64_t dims[2] = {64, 48};
  PLM_CHECK_OK(plm_tensor_alloc(pool, stream, PLM_DTYPE_F32, 2, dims, &tensor));
  ck_assert_uint_gt(device->allocs, 0);
  size_t after_tensor = device->allocs;

  /* A pipeline's workspace comes from the default pool too. */
  plm_pipeline *pl = NULL;
  const int64_t image[2] = {256, 256};
  PLM_CHECK_OK(plm_pipeline_parse(ctx, "sobel ! threshold value=3", PLM_DTYPE_U16, 2, image, &pl));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  ck_assert_uint_ge(device->allocs, after_tensor);
  ck_assert_uint_eq(stats_of(pool).bytes_reserved, device->bytes_out);

  /* Pinned host memory comes from the host upstream. */
  void *staging[3] = {0};
  const size_t staging_bytes[3] = {100, 64 * KiB, 3 * MiB};
  for (int i = 0; i < 3; i++) {
    PLM_CHECK_OK(plm_host_alloc(ctx, staging_bytes[i], &staging[i]));
    memset(staging[i], 0x5a, staging_bytes[i]);
  }
  ck_assert_uint_gt(host->allocs, 0);
  ck_assert_uint_eq(host->with_stream, 0);
  PLM_CHECK_OK(plm_host_free(ctx, staging[0]));

  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  PLM_CHECK_OK(plm_tensor_free(pool, stream, &tensor));
  PLM_CHECK_OK(plm_stream_destroy(stream));
  /* The context gives everything back, the live host blocks included. */
  PLM_CHECK_OK(plm_context_destroy(ctx));
  ck_assert_uint_gt(device->frees, 0);
  check_balanced_and_free(device);
  check_balanced_and_free(host);
}
END_TEST

/* ---- four threads through one pool over the upstream ------------------------------- */

enum { THREADS = 4, ROUNDS = 400, LIVE = 8 };

typedef struct worker {
  plm_pool *pool;
  plm_stream *stream;
  uint64_t seed;
  plm_status status;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  void *live[LIVE] = {0};
  for (int round = 0; round < ROUNDS && w->status == PLM_OK; round++) {
    int k = (int)(plm_test_random(&w->seed) % LIVE);
    if (live[k]) w->status = plm_pool_free(w->pool, live[k], w->stream);
    live[k] = NULL;
    size_t bytes = 256 + plm_test_random(&w->seed) % (round % 16 == 0 ? 3 * MiB : 64 * KiB);
    if (w->status == PLM_OK) w->status = plm_pool_alloc(w->pool, bytes, w->stream, &live[k]);
  }
  for (int k = 0; k < LIVE; k++)
    if (live[k] && w->status == PLM_OK) w->status = plm_pool_free(w->pool, live[k], w->stream);
  return NULL;
}

static void run_threads(plm_pool_mode mode) {
  counting_upstream *up = counting_new();
  plm_pool_upstream callbacks = callbacks_of(up);
  plm_pool_config config = plm_pool_config_default();
  config.mode = mode;
  config.upstream = &callbacks;
  config.release_threshold = PLM_POOL_RELEASE_IDLE; /* chunks go back while others run */
  plm_pool *pool = pool_with(&config);
  worker workers[THREADS];
  pthread_t threads[THREADS];
  for (int i = 0; i < THREADS; i++) {
    workers[i] = (worker){.pool = pool, .stream = new_stream(), .seed = 0x9e3779b97f4a7c15u + i};
    ck_assert_int_eq(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(threads[i], NULL);
    ck_assert_msg(workers[i].status == PLM_OK, "thread %d: %s", i,
                  plm_status_str(workers[i].status));
  }
  plm_pool_stats stats = stats_of(pool);
  ck_assert_uint_eq(stats.live_blocks, 0);
  ck_assert_uint_eq(stats.upstream_allocs, up->allocs);
  ck_assert_uint_eq(stats.bytes_reserved, up->bytes_out);
  PLM_CHECK_OK(plm_pool_trim(pool, 0));
  ck_assert_uint_eq(up->live, 0);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  for (int i = 0; i < THREADS; i++) PLM_CHECK_OK(plm_stream_destroy(workers[i].stream));
  check_balanced_and_free(up);
}

START_TEST(test_four_threads_pooled) {
  run_threads(PLM_POOL_POOLED);
}
END_TEST

START_TEST(test_four_threads_passthrough) {
  run_threads(PLM_POOL_PASSTHROUGH);
}
END_TEST

static Suite *pool_upstream_suite(void) {
  Suite *suite = suite_create("pool_upstream");
  TCase *upstream = tcase_create("upstream");
  plm_test_add_fixture(upstream);
  tcase_add_test(upstream, test_pooled_chunks_come_from_the_upstream_and_go_back);
  tcase_add_test(upstream, test_passthrough_calls_the_upstream_per_block_with_its_size);
  tcase_add_test(upstream, test_a_refusing_upstream_is_out_of_memory_and_the_pool_stays_usable);
  tcase_add_test(upstream, test_refusals);
  tcase_add_test(upstream, test_a_context_routes_its_default_and_host_pools_through_the_upstreams);
  suite_add_tcase(suite, upstream);
  TCase *threads = tcase_create("threads");
  plm_test_add_fixture(threads);
  tcase_add_test(threads, test_four_threads_pooled);
  tcase_add_test(threads, test_four_threads_passthrough);
  suite_add_tcase(suite, threads);
  return suite;
}

int main(void) {
  return plm_test_main(pool_upstream_suite);
}

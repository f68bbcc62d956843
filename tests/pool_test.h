/* tests/pool_test.h: what the pool's suites share (test_pool.c, test_pool_snapshot.c,
 * test_pool_pages.c): a stream on the test context, a pool from a config, and a pool's
 * statistics, each checked (a failure fails the test). Header-only; include after
 * harness.h. */
#ifndef PLUME_TESTS_POOL_TEST_H
#define PLUME_TESTS_POOL_TEST_H

#include "harness.h"
#include "plume/pool.h"

static inline plm_stream *new_stream(void) {
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  return stream;
}

static inline plm_pool *pool_with(const plm_pool_config *config) {
  plm_pool *pool = NULL;
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, config, &pool));
  return pool;
}

static inline plm_pool_stats stats_of(plm_pool *pool) {
  plm_pool_stats stats;
  PLM_CHECK_OK(plm_pool_stats_get(pool, &stats));
  return stats;
}

#endif /* PLUME_TESTS_POOL_TEST_H */

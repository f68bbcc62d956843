/* tests/test_context.c: contexts, backend selection, device information and the
 * synchronous device allocations (plume/context.h). */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate.h"
#include "harness.h"

enum { GATE_TIMEOUT_MS = 10000 };

/* plm_device_alloc(SIZE_MAX / 2) must come back as PLM_ERR_OUT_OF_MEMORY. Under
 * AddressSanitizer or ThreadSanitizer an impossible allocation aborts the process
 * unless the allocator may return NULL, so this binary asks for that (the
 * sanitizers call these hooks when they start; ASAN_OPTIONS or TSAN_OPTIONS in the
 * environment still override them). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1";
}
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) {
  return "allocator_may_return_null=1";
}

enum { DEVICE_ALIGNMENT = 256, SLOW_TASK_MS = 30 };

/* ---- helpers ------------------------------------------------------------------ */

static void set_flag(void *user) {
  atomic_store((atomic_int *)user, 1);
}

static void sleep_then_set_flag(void *user) {
  plm_test_sleep_ms(SLOW_TASK_MS);
  atomic_store((atomic_int *)user, 1);
}

/* A pointer that is not NULL and not a context, to see that failures reset *out. */
static plm_context *poisoned_context(void) {
  static int not_a_context;
  return (plm_context *)(void *)&not_a_context;
}

static int cuda_device_count(void) {
  int count = -1;
  const char *reason = NULL;
  PLM_CHECK_OK(plm_backend_device_count(PLM_BACKEND_CUDA, &count, &reason));
  return count;
}

/* What AUTO should resolve to under the current environment. */
/* What AUTO detects without PLUME_BACKEND: cuda where a GPU is present, never the CUDA
 * emulator's device (plume/context.h). */
static plm_backend detected_backend(void) {
  return cuda_device_count() > 0 && !plm_build_info_get()->cuda_emulated ? PLM_BACKEND_CUDA
                                                                          : PLM_BACKEND_HOST;
}

static plm_backend expected_auto_backend(void) {
  const char *env = getenv("PLUME_BACKEND");
  if (env && *env) {
    plm_backend named = PLM_BACKEND_AUTO;
    PLM_CHECK_OK(plm_backend_parse(env, &named));
    if (named != PLM_BACKEND_AUTO) return named;
  }
  return detected_backend();
}

/* Create a context from cfg, check it runs on `expected`, destroy it. */
static void check_creates(const plm_context_config *cfg, plm_backend expected) {
  plm_context *ctx = NULL;
  PLM_CHECK_OK(plm_context_create(cfg, &ctx));
  ck_assert_ptr_nonnull(ctx);
  plm_backend backend = PLM_BACKEND_AUTO;
  PLM_CHECK_OK(plm_context_backend(ctx, &backend));
  ck_assert_msg(backend == expected, "context runs on %s, expected %s", plm_backend_name(backend),
                plm_backend_name(expected));
  PLM_CHECK_OK(plm_context_destroy(ctx));
}

/* Check that creating from cfg fails with `expected` and a message mentioning
 * `needle`, and leaves *out NULL. */
static void check_create_fails(const plm_context_config *cfg, plm_status expected,
                               const char *needle) {
  plm_context *ctx = poisoned_context();
  PLM_CHECK_FAILS(plm_context_create(cfg, &ctx), expected, needle);
  ck_assert_ptr_null(ctx);
}

/* ---- PLUME_BACKEND, saved and restored around each test that changes it ---------- */

static char *saved_backend_env;
static bool had_backend_env;

static void save_backend_env(void) {
  const char *value = getenv("PLUME_BACKEND");
  had_backend_env = value != NULL;
  saved_backend_env = value ? strdup(value) : NULL;
  ck_assert(!had_backend_env || saved_backend_env);
}

static void restore_backend_env(void) {
  if (had_backend_env)
    setenv("PLUME_BACKEND", saved_backend_env, 1);
  else
    unsetenv("PLUME_BACKEND");
  free(saved_backend_env);
  saved_backend_env = NULL;
}

/* ---- creation ---------------------------------------------------------------------- */

START_TEST(test_null_and_zeroed_config_mean_auto) {
  plm_backend expected = expected_auto_backend();
  check_creates(NULL, expected);
  plm_context_config zeroed;
  memset(&zeroed, 0, sizeof zeroed);
  check_creates(&zeroed, expected);
}
END_TEST

START_TEST(test_explicit_host_always_works) {
  plm_context_config host = {.backend = PLM_BACKEND_HOST, .device = 0};
  check_creates(&host, PLM_BACKEND_HOST);
}
END_TEST

START_TEST(test_fixture_context_runs_on_the_backend_under_test) {
  plm_backend backend = PLM_BACKEND_AUTO;
  PLM_CHECK_OK(plm_context_backend(plm_test_ctx, &backend));
  ck_assert_int_ne(backend, PLM_BACKEND_AUTO);
  ck_assert_int_eq(backend, plm_test_backend);
  PLM_CHECK_FAILS(plm_context_backend(NULL, &backend), PLM_ERR_INVALID_ARG,
                  "plm_context_backend: ctx is NULL");
  PLM_CHECK_FAILS(plm_context_backend(plm_test_ctx, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
}
END_TEST

START_TEST(test_bad_config_is_reported) {
  check_create_fails(&(plm_context_config){.backend = (plm_backend)7}, PLM_ERR_INVALID_ARG,
                     "plm_context_create: cfg->backend 7 is not AUTO, HOST or CUDA");
  check_create_fails(&(plm_context_config){.backend = (plm_backend)-1}, PLM_ERR_INVALID_ARG,
                     "cfg->backend -1");
  check_create_fails(&(plm_context_config){.backend = PLM_BACKEND_HOST, .device = -1},
                     PLM_ERR_INVALID_ARG, "cfg->device -1 is negative");
  check_create_fails(&(plm_context_config){.backend = PLM_BACKEND_AUTO, .device = -1},
                     PLM_ERR_INVALID_ARG, "cfg->device -1 is negative");
  check_create_fails(&(plm_context_config){.backend = PLM_BACKEND_HOST, .device = 3},
                     PLM_ERR_INVALID_ARG, "out of range");
  check_create_fails(&(plm_context_config){.backend = PLM_BACKEND_HOST, .device = 1},
                     PLM_ERR_INVALID_ARG, "device 1 is out of range");
  PLM_CHECK_FAILS(plm_context_create(NULL, NULL), PLM_ERR_INVALID_ARG,
                  "plm_context_create: out is NULL");
}
END_TEST

START_TEST(test_cuda_fails_cleanly_without_a_device) {
  plm_context_config cuda = {.backend = PLM_BACKEND_CUDA, .device = 0};
  if (cuda_device_count() > 0) {
    check_creates(&cuda, PLM_BACKEND_CUDA);
    return;
  }
  plm_context *ctx = poisoned_context();
  plm_clear_error();
  plm_status status = plm_context_create(&cuda, &ctx);
  ck_assert_msg(status == PLM_ERR_NO_DEVICE || status == PLM_ERR_UNSUPPORTED,
                "cuda without a device -> %s: %s", plm_status_str(status), plm_last_error());
  ck_assert_ptr_null(ctx);
  /* Which of the two depends on the build, and only on it. */
  plm_status expected =
      plm_build_info_get()->cuda_enabled ? PLM_ERR_NO_DEVICE : PLM_ERR_UNSUPPORTED;
  ck_assert_msg(status == expected, "cuda without a device -> %s in a build with cuda_enabled=%d",
                plm_status_str(status), plm_build_info_get()->cuda_enabled);
  const char *prefix = "plm_context_create: ";
  ck_assert_msg(strncmp(plm_last_error(), prefix, strlen(prefix)) == 0 &&
                    strlen(plm_last_error()) > strlen(prefix),
                "message \"%s\"", plm_last_error());
  printf("cuda unavailable, as expected here: %s\n", plm_last_error());
}
END_TEST

START_TEST(test_cuda_device_index_out_of_range) {
  int count = cuda_device_count();
  plm_context_config cuda = {.backend = PLM_BACKEND_CUDA, .device = 1000};
  if (count > 0) {
    check_create_fails(&cuda, PLM_ERR_INVALID_ARG, "device 1000 is out of range");
    return;
  }
  plm_context *ctx = poisoned_context();
  plm_status status = plm_context_create(&cuda, &ctx);
  ck_assert_msg(status == PLM_ERR_NO_DEVICE || status == PLM_ERR_UNSUPPORTED,
                "cuda device 1000 without a device -> %s: %s", plm_status_str(status),
                plm_last_error());
  ck_assert_ptr_null(ctx);
}
END_TEST

/* ---- PLUME_BACKEND --------------------------------------------------------------------- */

START_TEST(test_env_host_selects_host_for_auto) {
  ck_assert_int_eq(setenv("PLUME_BACKEND", "host", 1), 0);
  check_creates(NULL, PLM_BACKEND_HOST);
  ck_assert_int_eq(setenv("PLUME_BACKEND", "HoSt", 1), 0);
  check_creates(&(plm_context_config){.backend = PLM_BACKEND_AUTO}, PLM_BACKEND_HOST);
}
END_TEST

START_TEST(test_env_auto_or_empty_means_device_detection) {
  plm_backend detected = detected_backend();
  ck_assert_int_eq(setenv("PLUME_BACKEND", "auto", 1), 0);
  check_creates(NULL, detected);
  ck_assert_int_eq(setenv("PLUME_BACKEND", "", 1), 0);
  check_creates(NULL, detected);
  ck_assert_int_eq(unsetenv("PLUME_BACKEND"), 0);
  check_creates(NULL, detected);
}
END_TEST

START_TEST(test_env_bogus_is_an_invalid_argument) {
  ck_assert_int_eq(setenv("PLUME_BACKEND", "bogus", 1), 0);
  check_create_fails(NULL, PLM_ERR_INVALID_ARG, "PLUME_BACKEND");
  check_create_fails(&(plm_context_config){.backend = PLM_BACKEND_AUTO}, PLM_ERR_INVALID_ARG,
                     "plm_context_create: environment variable PLUME_BACKEND='bogus'");
}
END_TEST

START_TEST(test_env_cuda_follows_device_availability) {
  ck_assert_int_eq(setenv("PLUME_BACKEND", "cuda", 1), 0);
  if (cuda_device_count() > 0) {
    check_creates(NULL, PLM_BACKEND_CUDA);
    return;
  }
  plm_context *ctx = poisoned_context();
  plm_status status = plm_context_create(NULL, &ctx);
  ck_assert_msg(status == PLM_ERR_NO_DEVICE || status == PLM_ERR_UNSUPPORTED,
                "PLUME_BACKEND=cuda without a device -> %s: %s", plm_status_str(status),
                plm_last_error());
  ck_assert_ptr_null(ctx);
}
END_TEST

START_TEST(test_explicit_backend_ignores_env) {
  plm_context_config host = {.backend = PLM_BACKEND_HOST, .device = 0};
  ck_assert_int_eq(setenv("PLUME_BACKEND", "cuda", 1), 0);
  check_creates(&host, PLM_BACKEND_HOST);
  ck_assert_int_eq(setenv("PLUME_BACKEND", "bogus", 1), 0);
  check_creates(&host, PLM_BACKEND_HOST);
}
END_TEST

/* ---- backends --------------------------------------------------------------------------- */

START_TEST(test_device_count_per_backend) {
  int count = -1;
  const char *reason = NULL;
  PLM_CHECK_OK(plm_backend_device_count(PLM_BACKEND_HOST, &count, &reason));
  ck_assert_int_eq(count, 1);
  ck_assert_ptr_nonnull(reason);
  PLM_CHECK_OK(plm_backend_device_count(PLM_BACKEND_HOST, &count, NULL));
  ck_assert_int_eq(count, 1);

  count = -1;
  reason = NULL;
  PLM_CHECK_OK(plm_backend_device_count(PLM_BACKEND_CUDA, &count, &reason));
  ck_assert_int_ge(count, 0);
  ck_assert_ptr_nonnull(reason);
  if (count == 0) ck_assert_msg(reason[0] != '\0', "no cuda device and no reason given");
  printf("cuda devices: %d (%s)\n", count, reason);
  PLM_CHECK_OK(plm_backend_device_count(PLM_BACKEND_CUDA, &count, NULL));

  PLM_CHECK_FAILS(plm_backend_device_count(PLM_BACKEND_AUTO, &count, &reason), PLM_ERR_INVALID_ARG,
                  "plm_backend_device_count: backend 0");
  PLM_CHECK_FAILS(plm_backend_device_count((plm_backend)7, &count, &reason), PLM_ERR_INVALID_ARG,
                  "backend 7");
  PLM_CHECK_FAILS(plm_backend_device_count(PLM_BACKEND_HOST, NULL, &reason), PLM_ERR_INVALID_ARG,
                  "count is NULL");
}
END_TEST

START_TEST(test_backend_names_round_trip) {
  const plm_backend all[] = {PLM_BACKEND_AUTO, PLM_BACKEND_HOST, PLM_BACKEND_CUDA};
  const char *names[] = {"auto", "host", "cuda"};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    ck_assert_str_eq(plm_backend_name(all[i]), names[i]);
    plm_backend parsed = (plm_backend)99;
    PLM_CHECK_OK(plm_backend_parse(plm_backend_name(all[i]), &parsed));
    ck_assert_int_eq(parsed, all[i]);
  }
  ck_assert_str_eq(plm_backend_name((plm_backend)7), "unknown");
  ck_assert_str_eq(plm_backend_name((plm_backend)-1), "unknown");
}
END_TEST

START_TEST(test_backend_parse_ignores_case) {
  const struct {
    const char *name;
    plm_backend backend;
  } spellings[] = {{"HOST", PLM_BACKEND_HOST},
                   {"Host", PLM_BACKEND_HOST},
                   {"CUDA", PLM_BACKEND_CUDA},
                   {"cUdA", PLM_BACKEND_CUDA},
                   {"AUTO", PLM_BACKEND_AUTO}};
  for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
    plm_backend parsed = (plm_backend)99;
    PLM_CHECK_OK(plm_backend_parse(spellings[i].name, &parsed));
    ck_assert_int_eq(parsed, spellings[i].backend);
  }
}
END_TEST

START_TEST(test_backend_parse_rejects_bad_names) {
  const char *bad[] = {"", "gpu", "hostx", "hos", " host", "host ", "unknown", "cuda0"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    plm_backend parsed;
    char needle[64];
    snprintf(needle, sizeof needle, "plm_backend_parse: backend '%s'", bad[i]);
    PLM_CHECK_FAILS(plm_backend_parse(bad[i], &parsed), PLM_ERR_INVALID_ARG, needle);
  }
  plm_backend parsed;
  PLM_CHECK_FAILS(plm_backend_parse(NULL, &parsed), PLM_ERR_INVALID_ARG, "name is NULL");
  PLM_CHECK_FAILS(plm_backend_parse("host", NULL), PLM_ERR_INVALID_ARG, "out is NULL");
}
END_TEST

/* ---- device information ------------------------------------------------------------------- */

START_TEST(test_host_device_info) {
  plm_context *ctx = NULL;
  PLM_CHECK_OK(plm_context_create(&(plm_context_config){.backend = PLM_BACKEND_HOST}, &ctx));
  plm_device_info info;
  memset(&info, 0xA5, sizeof info);
  PLM_CHECK_OK(plm_context_device_info(ctx, &info));
  ck_assert_int_eq(info.backend, PLM_BACKEND_HOST);
  ck_assert_int_eq(info.device, 0);
  ck_assert_ptr_nonnull(memchr(info.name, '\0', sizeof info.name));
  ck_assert_msg(info.name[0] != '\0', "the host device has no name");
  ck_assert_int_ge(info.multiprocessors, 1);
  ck_assert_msg(info.total_memory > 0, "total_memory is 0");
  ck_assert_msg(info.free_memory <= info.total_memory, "free %llu > total %llu bytes",
                (unsigned long long)info.free_memory, (unsigned long long)info.total_memory);
  ck_assert_int_eq(info.compute_capability_major, 0);
  ck_assert_int_eq(info.compute_capability_minor, 0);
  ck_assert_int_eq(info.driver_version, 0);
  ck_assert_int_eq(info.runtime_version, 0);
  ck_assert_uint_eq(info.page_release_bytes, (uint64_t)sysconf(_SC_PAGESIZE)); /* madvise's */
  ck_assert_uint_eq(info.shared_per_block_optin, 0);                           /* cuda's only */
  printf("host device: %s, %d cores, %llu of %llu bytes free\n", info.name, info.multiprocessors,
         (unsigned long long)info.free_memory, (unsigned long long)info.total_memory);

  /* The static part is the same on every call. */
  plm_device_info again;
  PLM_CHECK_OK(plm_context_device_info(ctx, &again));
  ck_assert_str_eq(again.name, info.name);
  ck_assert_int_eq(again.multiprocessors, info.multiprocessors);
  ck_assert_uint_eq(again.total_memory, info.total_memory);
  PLM_CHECK_OK(plm_context_destroy(ctx));
}
END_TEST

START_TEST(test_device_info_of_backend_under_test) {
  plm_device_info info;
  PLM_CHECK_OK(plm_context_device_info(plm_test_ctx, &info));
  ck_assert_int_eq(info.backend, plm_test_backend);
  ck_assert_int_eq(info.device, 0);
  ck_assert_msg(info.name[0] != '\0', "the device has no name");
  ck_assert_int_ge(info.multiprocessors, 1);
  ck_assert_msg(info.total_memory > 0, "total_memory is 0");
  ck_assert_msg(info.free_memory <= info.total_memory, "free %llu > total %llu bytes",
                (unsigned long long)info.free_memory, (unsigned long long)info.total_memory);
  /* The unit of the pool's page release: a power of two, or 0 (cuda without the driver's
   * virtual memory calls); the CUDA emulator has them, with a granularity of 2 MiB. */
  ck_assert_uint_eq(info.page_release_bytes & (info.page_release_bytes - 1), 0);
  if (info.backend == PLM_BACKEND_CUDA && plm_build_info_get()->cuda_emulated)
    ck_assert_uint_eq(info.page_release_bytes, 2u << 20);
  /* cuda: at least the 48 KiB every block has without opting in (the emulator's 227 KiB,
   * or PLUME_EMU_SHARED_OPTIN_KIB's) */
  if (info.backend == PLM_BACKEND_CUDA)
    ck_assert_uint_ge(info.shared_per_block_optin, 48u << 10);
  else
    ck_assert_uint_eq(info.shared_per_block_optin, 0);
  PLM_CHECK_FAILS(plm_context_device_info(NULL, &info), PLM_ERR_INVALID_ARG,
                  "plm_context_device_info: ctx is NULL");
  PLM_CHECK_FAILS(plm_context_device_info(plm_test_ctx, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
}
END_TEST

/* ---- synchronisation and destruction -------------------------------------------------------- */

START_TEST(test_synchronize_waits_for_every_stream) {
  atomic_int done_a, done_b;
  atomic_init(&done_a, 0);
  atomic_init(&done_b, 0);
  plm_stream *a = NULL, *b = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &a));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &b));
  PLM_CHECK_OK(plm_stream_enqueue_host(a, sleep_then_set_flag, &done_a));
  PLM_CHECK_OK(plm_stream_enqueue_host(b, sleep_then_set_flag, &done_b));
  PLM_CHECK_OK(plm_context_synchronize(plm_test_ctx));
  ck_assert_msg(atomic_load(&done_a), "synchronize returned before stream a finished");
  ck_assert_msg(atomic_load(&done_b), "synchronize returned before stream b finished");
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_stream_destroy(b));

  /* With no streams at all there is nothing to wait for. */
  PLM_CHECK_OK(plm_context_synchronize(plm_test_ctx));
  PLM_CHECK_FAILS(plm_context_synchronize(NULL), PLM_ERR_INVALID_ARG,
                  "plm_context_synchronize: ctx is NULL");
}
END_TEST

/* A context waits for its own streams only: another context's stream, held at a gate,
 * does not hold up plm_context_synchronize (cudaDeviceSynchronize, which waits for the
 * whole device, would block here until the gate's deadline). */
START_TEST(test_synchronize_waits_for_its_own_streams_only) {
  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend, .device = 0};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_stream *held = NULL, *mine = NULL;
  PLM_CHECK_OK(plm_stream_create(other, 0, &held));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &mine));
  void *memory = NULL;
  PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, 1 << 20, &memory));
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  PLM_CHECK_OK(plm_stream_enqueue_host(held, gate_wait_task, &hold));
  /* Device work on this context's stream (no host callback: on cuda a held callback
   * may hold up the callbacks of every stream). */
  PLM_CHECK_OK(plm_stream_memset(mine, memory, 0x5a, 1 << 20));

  double before = plm_test_now_ms();
  plm_status status = plm_context_synchronize(plm_test_ctx);
  double waited_ms = plm_test_now_ms() - before;
  bool mine_finished = false, held_finished = true;
  PLM_CHECK_OK(plm_stream_query(mine, &mine_finished));
  PLM_CHECK_OK(plm_stream_query(held, &held_finished));
  gate_open(&hold);
  PLM_CHECK_OK(plm_stream_synchronize(held));
  ck_assert(!hold.timed_out);

  PLM_CHECK_OK(plm_device_free(plm_test_ctx, memory));
  PLM_CHECK_OK(plm_stream_destroy(mine));
  PLM_CHECK_OK(plm_stream_destroy(held));
  PLM_CHECK_OK(plm_context_destroy(other));
  gate_destroy(&hold);
  ck_assert_msg(status == PLM_OK, "plm_context_synchronize: %s", plm_last_error());
  ck_assert_msg(waited_ms < 2000, "synchronize waited %.0f ms for another context's stream",
                waited_ms);
  ck_assert_msg(mine_finished, "synchronize returned before this context's stream finished");
  ck_assert_msg(!held_finished, "the other context's stream finished while held at the gate");
}
END_TEST

START_TEST(test_destroy_null_is_a_no_op) {
  plm_clear_error();
  PLM_CHECK_OK(plm_context_destroy(NULL));
  ck_assert_str_eq(plm_last_error(), "");
}
END_TEST

START_TEST(test_destroy_reports_and_releases_leftovers) {
  plm_context *ctx = NULL;
  PLM_CHECK_OK(plm_context_create(&(plm_context_config){.backend = plm_test_backend}, &ctx));
  plm_stream *stream = NULL;
  plm_event *event = NULL;
  void *memory = NULL;
  atomic_int done;
  atomic_init(&done, 0);
  PLM_CHECK_OK(plm_stream_create(ctx, 0, &stream));
  PLM_CHECK_OK(plm_event_create(ctx, 0, &event));
  PLM_CHECK_OK(plm_device_alloc(ctx, 4096, &memory));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, sleep_then_set_flag, &done));
  PLM_CHECK_OK(plm_stream_memset(stream, memory, 0x3C, 4096));
  PLM_CHECK_OK(plm_event_record(event, stream));

  /* The pending work still runs: the flag is set once destroy has returned. */
  PLM_CHECK_FAILS(plm_context_destroy(ctx), PLM_ERR_INVALID_STATE,
                  "1 stream(s), 1 event(s), 1 device allocation(s) and 0 pool(s)");
  ck_assert_msg(strncmp(plm_last_error(), "plm_context_destroy: ", 21) == 0, "message \"%s\"",
                plm_last_error());
  ck_assert_msg(atomic_load(&done), "the leftover stream's pending work did not run");
}
END_TEST

START_TEST(test_destroy_counts_each_kind_of_leftover) {
  plm_context *ctx = NULL;
  PLM_CHECK_OK(plm_context_create(&(plm_context_config){.backend = plm_test_backend}, &ctx));
  plm_stream *streams[2] = {NULL, NULL};
  plm_event *events[3] = {NULL, NULL, NULL};
  void *memory[4] = {NULL, NULL, NULL, NULL};
  atomic_int done[2];
  for (int i = 0; i < 2; i++) {
    atomic_init(&done[i], 0);
    PLM_CHECK_OK(plm_stream_create(ctx, 0, &streams[i]));
    PLM_CHECK_OK(plm_stream_enqueue_host(streams[i], set_flag, &done[i]));
  }
  for (int i = 0; i < 3; i++) PLM_CHECK_OK(plm_event_create(ctx, 0, &events[i]));
  PLM_CHECK_OK(plm_event_record(events[0], streams[1]));
  PLM_CHECK_OK(plm_stream_wait_event(streams[0], events[0]));
  for (int i = 0; i < 4; i++) PLM_CHECK_OK(plm_device_alloc(ctx, 100 + (size_t)i, &memory[i]));
  /* Some objects destroyed properly are not counted. */
  PLM_CHECK_OK(plm_event_destroy(events[2]));
  PLM_CHECK_OK(plm_device_free(ctx, memory[3]));

  PLM_CHECK_FAILS(plm_context_destroy(ctx), PLM_ERR_INVALID_STATE,
                  "2 stream(s), 2 event(s), 3 device allocation(s) and 0 pool(s)");
  ck_assert(atomic_load(&done[0]) && atomic_load(&done[1]));
}
END_TEST

START_TEST(test_destroy_with_only_memory_left) {
  plm_context *ctx = NULL;
  PLM_CHECK_OK(plm_context_create(&(plm_context_config){.backend = plm_test_backend}, &ctx));
  void *memory = NULL;
  PLM_CHECK_OK(plm_device_alloc(ctx, 1, &memory));
  PLM_CHECK_FAILS(plm_context_destroy(ctx), PLM_ERR_INVALID_STATE,
                  "0 stream(s), 0 event(s), 1 device allocation(s) and 0 pool(s)");
}
END_TEST

/* ---- device memory ------------------------------------------------------------------------ */

START_TEST(test_device_alloc_is_aligned_and_usable) {
  const size_t sizes[] = {1, 255, 256, 257, 1000000};
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *memory = NULL;
    PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, sizes[i], &memory));
    ck_assert_ptr_nonnull(memory);
    ck_assert_msg((uintptr_t)memory % DEVICE_ALIGNMENT == 0, "%zu bytes at %p are not aligned",
                  sizes[i], memory);
    /* Every byte asked for is usable: fill it all, read back the last one. */
    unsigned char last = 0;
    PLM_CHECK_OK(plm_stream_memset(stream, memory, 0xC3, sizes[i]));
    PLM_CHECK_OK(plm_stream_memcpy(stream, &last, (unsigned char *)memory + sizes[i] - 1, 1,
                                   PLM_COPY_DEVICE_TO_HOST));
    PLM_CHECK_OK(plm_stream_synchronize(stream));
    ck_assert_uint_eq(last, 0xC3);
    PLM_CHECK_OK(plm_device_free(plm_test_ctx, memory));
  }
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_device_alloc_rejects_bad_sizes) {
  void *memory = NULL;
  PLM_CHECK_FAILS(plm_device_alloc(plm_test_ctx, 0, &memory), PLM_ERR_INVALID_ARG,
                  "plm_device_alloc: bytes is 0");
  PLM_CHECK_FAILS(plm_device_alloc(plm_test_ctx, SIZE_MAX, &memory), PLM_ERR_INVALID_ARG,
                  "too large");
  PLM_CHECK_FAILS(plm_device_alloc(plm_test_ctx, SIZE_MAX - DEVICE_ALIGNMENT + 1, &memory),
                  PLM_ERR_INVALID_ARG, "too large");
  PLM_CHECK_FAILS(plm_device_alloc(NULL, 64, &memory), PLM_ERR_INVALID_ARG,
                  "plm_device_alloc: ctx is NULL");
  PLM_CHECK_FAILS(plm_device_alloc(plm_test_ctx, 64, NULL), PLM_ERR_INVALID_ARG, "ptr is NULL");
}
END_TEST

START_TEST(test_impossible_host_allocation_fails_cleanly) {
  plm_context *ctx = NULL;
  PLM_CHECK_OK(plm_context_create(&(plm_context_config){.backend = PLM_BACKEND_HOST}, &ctx));
  void *memory = NULL;
  plm_clear_error();
  plm_status status = plm_device_alloc(ctx, SIZE_MAX / 2, &memory);
  if (status == PLM_OK) {
    /* Not expected anywhere (no machine maps 2^63 bytes), but never leak it. */
    PLM_CHECK_OK(plm_device_free(ctx, memory));
    PLM_CHECK_OK(plm_context_destroy(ctx));
    ck_abort_msg("plm_device_alloc(SIZE_MAX / 2) succeeded on the host backend");
  }
  ck_assert_msg(status == PLM_ERR_OUT_OF_MEMORY, "SIZE_MAX / 2 bytes -> %s: %s",
                plm_status_str(status), plm_last_error());
  ck_assert_msg(strncmp(plm_last_error(), "plm_device_alloc: ", 18) == 0, "message \"%s\"",
                plm_last_error());
  /* Nothing was recorded: the context is destroyed cleanly and still allocates. */
  PLM_CHECK_OK(plm_device_alloc(ctx, 64, &memory));
  PLM_CHECK_OK(plm_device_free(ctx, memory));
  PLM_CHECK_OK(plm_context_destroy(ctx));
}
END_TEST

START_TEST(test_device_free_of_null_is_a_no_op) {
  PLM_CHECK_OK(plm_device_free(plm_test_ctx, NULL));
  PLM_CHECK_FAILS(plm_device_free(NULL, NULL), PLM_ERR_INVALID_ARG, "plm_device_free: ctx is NULL");
}
END_TEST

START_TEST(test_device_free_rejects_unknown_pointers) {
  void *memory = NULL;
  PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, 1024, &memory));

  /* An interior pointer frees nothing; the allocation itself still frees. */
  PLM_CHECK_FAILS(plm_device_free(plm_test_ctx, (unsigned char *)memory + 1), PLM_ERR_NOT_FOUND,
                  "plm_device_free: ptr");
  PLM_CHECK_FAILS(plm_device_free(NULL, memory), PLM_ERR_INVALID_ARG, "ctx is NULL");
  PLM_CHECK_OK(plm_device_free(plm_test_ctx, memory));

  /* A second free of the same pointer. */
  PLM_CHECK_FAILS(plm_device_free(plm_test_ctx, memory), PLM_ERR_NOT_FOUND,
                  "not a device allocation of this context");

  /* A pointer that never came from plume. */
  int on_the_stack = 0;
  PLM_CHECK_FAILS(plm_device_free(plm_test_ctx, &on_the_stack), PLM_ERR_NOT_FOUND,
                  "not a device allocation of this context");
}
END_TEST

START_TEST(test_device_free_rejects_another_contexts_pointer) {
  plm_context *other = NULL;
  PLM_CHECK_OK(plm_context_create(&(plm_context_config){.backend = plm_test_backend}, &other));
  void *theirs = NULL;
  PLM_CHECK_OK(plm_device_alloc(other, 512, &theirs));
  PLM_CHECK_FAILS(plm_device_free(plm_test_ctx, theirs), PLM_ERR_NOT_FOUND,
                  "not a device allocation of this context");
  /* Its own context still knows it. */
  PLM_CHECK_OK(plm_device_free(other, theirs));
  PLM_CHECK_OK(plm_context_destroy(other));
}
END_TEST

START_TEST(test_device_free_waits_for_pending_work) {
  atomic_int done;
  atomic_init(&done, 0);
  void *memory = NULL;
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, 4096, &memory));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  /* The memset that uses the memory is queued behind a slow callback. */
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, sleep_then_set_flag, &done));
  PLM_CHECK_OK(plm_stream_memset(stream, memory, 0, 4096));
  PLM_CHECK_OK(plm_device_free(plm_test_ctx, memory));
  ck_assert_msg(atomic_load(&done),
                "plm_device_free returned while work using the memory was still queued");
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

static Suite *context_suite(void) {
  Suite *suite = suite_create("context");
  TCase *creation = tcase_create("creation");
  plm_test_add_fixture(creation);
  tcase_add_test(creation, test_null_and_zeroed_config_mean_auto);
  tcase_add_test(creation, test_explicit_host_always_works);
  tcase_add_test(creation, test_fixture_context_runs_on_the_backend_under_test);
  tcase_add_test(creation, test_bad_config_is_reported);
  tcase_add_test(creation, test_cuda_fails_cleanly_without_a_device);
  tcase_add_test(creation, test_cuda_device_index_out_of_range);
  suite_add_tcase(suite, creation);

  TCase *environment = tcase_create("environment");
  tcase_add_checked_fixture(environment, save_backend_env, restore_backend_env);
  tcase_add_test(environment, test_env_host_selects_host_for_auto);
  tcase_add_test(environment, test_env_auto_or_empty_means_device_detection);
  tcase_add_test(environment, test_env_bogus_is_an_invalid_argument);
  tcase_add_test(environment, test_env_cuda_follows_device_availability);
  tcase_add_test(environment, test_explicit_backend_ignores_env);
  suite_add_tcase(suite, environment);

  TCase *backends = tcase_create("backends");
  tcase_add_test(backends, test_device_count_per_backend);
  tcase_add_test(backends, test_backend_names_round_trip);
  tcase_add_test(backends, test_backend_parse_ignores_case);
  tcase_add_test(backends, test_backend_parse_rejects_bad_names);
  suite_add_tcase(suite, backends);

  TCase *device_info = tcase_create("device_info");
  plm_test_add_fixture(device_info);
  tcase_add_test(device_info, test_host_device_info);
  tcase_add_test(device_info, test_device_info_of_backend_under_test);
  suite_add_tcase(suite, device_info);

  TCase *lifecycle = tcase_create("lifecycle");
  plm_test_add_fixture(lifecycle);
  tcase_add_test(lifecycle, test_synchronize_waits_for_every_stream);
  tcase_add_test(lifecycle, test_synchronize_waits_for_its_own_streams_only);
  tcase_add_test(lifecycle, test_destroy_null_is_a_no_op);
  tcase_add_test(lifecycle, test_destroy_reports_and_releases_leftovers);
  tcase_add_test(lifecycle, test_destroy_counts_each_kind_of_leftover);
  tcase_add_test(lifecycle, test_destroy_with_only_memory_left);
  suite_add_tcase(suite, lifecycle);

  TCase *memory = tcase_create("memory");
  plm_test_add_fixture(memory);
  tcase_add_test(memory, test_device_alloc_is_aligned_and_usable);
  tcase_add_test(memory, test_device_alloc_rejects_bad_sizes);
  tcase_add_test(memory, test_impossible_host_allocation_fails_cleanly);
  tcase_add_test(memory, test_device_free_of_null_is_a_no_op);
  tcase_add_test(memory, test_device_free_rejects_unknown_pointers);
  tcase_add_test(memory, test_device_free_rejects_another_contexts_pointer);
  tcase_add_test(memory, test_device_free_waits_for_pending_work);
  suite_add_tcase(suite, memory);
  return suite;
}

int main(void) {
  return plm_test_main(context_suite);
}

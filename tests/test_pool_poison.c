/* tests/test_pool_poison.c: the pool's free memory and each block's slack poisoned for
 * AddressSanitizer, in stream order (pool/pool_poison.h), on the backend under test: on
 * host the CPU kernels and the copies are checked by the sanitizer itself, on cuda (the
 * CUDA emulator) the kernels consult its shadow and the copies are checked by it.
 *
 * A defect runs in a child process, this binary again with PLUME_POOL_POISON_CASE naming
 * it, which must die with the sanitizer's report (or the emulator's) after saying that
 * it got to the access; a correct use runs in the test itself, which a false report
 * would kill. Without AddressSanitizer nothing is poisoned: the binary says so and exits
 * with 77, which CTest reports as skipped. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gate.h"
#include "harness.h"
#include "plume/pool.h"
#include "plume/vector.h"
#include "pool_test.h"
#include "streams/stream_graph.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

extern char **environ;

enum { GATE_TIMEOUT_MS = 10000, FLOATS = 1000 };

static const size_t KiB = 1024, MiB = 1024 * 1024;

/* ---- the defects, each run in a child process ----------------------------------------- */

/* In the child a failed call ends it with 3 (not the report the parent looks for). */
#define CHILD_OK(call)                                                               \
  do {                                                                               \
    plm_status child_status_ = (call);                                               \
    if (child_status_ != PLM_OK) {                                                   \
      fprintf(stderr, "child: %s -> %s: %s\n", #call, plm_status_str(child_status_), \
              plm_last_error());                                                     \
      exit(3);                                                                       \
    }                                                                                \
  } while (0)

typedef struct child_env {
  plm_context *ctx;
  plm_stream *stream;
  plm_pool *pool;
} child_env;

/* out = a + b over `count` floats at each pointer: the kernel of the backend. */
static void add_floats(child_env *env, void *a, void *b, void *out, int64_t count) {
  const int64_t dims[1] = {count};
  plm_tensor ta, tb, tout;
  CHILD_OK(plm_tensor_wrap(env->ctx, a, PLM_DTYPE_F32, 1, dims, &ta));
  CHILD_OK(plm_tensor_wrap(env->ctx, b, PLM_DTYPE_F32, 1, dims, &tb));
  CHILD_OK(plm_tensor_wrap(env->ctx, out, PLM_DTYPE_F32, 1, dims, &tout));
  CHILD_OK(plm_vector_add(env->stream, &ta, &tb, NULL, &tout));
}

/* A block of `bytes` from the child's pool, every byte written. */
static void *written_block(child_env *env, size_t bytes) {
  void *block = NULL;
  CHILD_OK(plm_pool_alloc(env->pool, bytes, env->stream, &block));
  CHILD_OK(plm_stream_memset(env->stream, block, 0, bytes));
  return block;
}

static void reached(const char *what) {
  fprintf(stderr, "child: reached %s\n", what);
}

/* A copy reads the byte just past a block of 1000 bytes (its slack). */
static void past_end_copy(child_env *env) {
  unsigned char *block = written_block(env, 1000), byte = 0;
  CHILD_OK(plm_stream_synchronize(env->stream));
  reached("past_end_copy");
  CHILD_OK(plm_stream_memcpy(env->stream, &byte, block + 1000, 1, PLM_COPY_DEVICE_TO_HOST));
  CHILD_OK(plm_stream_synchronize(env->stream));
}

/* A kernel writes one float past a block of FLOATS floats. */
static void past_end_kernel(child_env *env) {
  float *a = written_block(env, (FLOATS + 1) * sizeof(float));
  float *b = written_block(env, (FLOATS + 1) * sizeof(float));
  float *out = written_block(env, FLOATS * sizeof(float));
  CHILD_OK(plm_stream_synchronize(env->stream));
  reached("past_end_kernel");
  add_floats(env, a, b, out, FLOATS + 1);
  CHILD_OK(plm_stream_synchronize(env->stream));
}

/* A slot of a slab read one past its bytes: with 40 blocks of its class live, the class
 * serves slots (pool_slabs.h: from a quarter of a slab's 65 slots), so the 41st is one,
 * and so is the 42nd, the slot after it. */
static void past_end_slot(child_env *env) {
  enum { LIVE = 40 };
  for (int i = 0; i < LIVE; i++) (void)written_block(env, 1000);
  unsigned char *slot = written_block(env, 1000), byte = 0;
  unsigned char *next = written_block(env, 1000);
  if (next != slot + 1024) {
    fprintf(stderr, "child: the blocks are not slots side by side\n");
    exit(3);
  }
  CHILD_OK(plm_stream_synchronize(env->stream));
  reached("past_end_slot");
  CHILD_OK(plm_stream_memcpy(env->stream, &byte, slot + 1000, 1, PLM_COPY_DEVICE_TO_HOST));
  CHILD_OK(plm_stream_synchronize(env->stream));
}

/* A copy on the freeing stream reads a block after its free. */
static void after_free_copy(child_env *env) {
  unsigned char *block = written_block(env, 64 * KiB), byte = 0;
  CHILD_OK(plm_pool_free(env->pool, block, env->stream));
  reached("after_free_copy");
  CHILD_OK(plm_stream_memcpy(env->stream, &byte, block + 100, 1, PLM_COPY_DEVICE_TO_HOST));
  CHILD_OK(plm_stream_synchronize(env->stream));
}

/* A kernel on the freeing stream reads a block after its free. */
static void after_free_kernel(child_env *env) {
  float *a = written_block(env, FLOATS * sizeof(float));
  float *b = written_block(env, FLOATS * sizeof(float));
  float *out = written_block(env, FLOATS * sizeof(float));
  CHILD_OK(plm_pool_free(env->pool, a, env->stream));
  reached("after_free_kernel");
  add_floats(env, a, b, out, FLOATS);
  CHILD_OK(plm_stream_synchronize(env->stream));
}

typedef struct child_case {
  const char *name;
  void (*run)(child_env *env);
} child_case;

static const child_case child_cases[] = {
    {"past_end_copy", past_end_copy},         {"past_end_kernel", past_end_kernel},
    {"past_end_slot", past_end_slot},         {"after_free_copy", after_free_copy},
    {"after_free_kernel", after_free_kernel},
};

/* The child: run the named case on the backend PLUME_BACKEND names; it returns only when
 * nothing was reported (exit 0: the parent fails the test). */
static int run_child(const char *name) {
  plm_backend backend = PLM_BACKEND_HOST;
  CHILD_OK(plm_backend_parse(getenv("PLUME_BACKEND"), &backend));
  child_env env = {0};
  CHILD_OK(plm_context_create(&(plm_context_config){.backend = backend}, &env.ctx));
  CHILD_OK(plm_stream_create(env.ctx, 0, &env.stream));
  CHILD_OK(plm_pool_create(env.ctx, NULL, &env.pool));
  for (size_t i = 0; i < sizeof child_cases / sizeof child_cases[0]; i++) {
    if (strcmp(child_cases[i].name, name) != 0) continue;
    child_cases[i].run(&env);
    fprintf(stderr, "child: %s ran without a report\n", name);
    _exit(0); /* the pool and its blocks are left: the process ends here */
  }
  fprintf(stderr, "child: no case %s\n", name);
  return 3;
}

/* Run a case in a child; its stderr (up to capacity bytes) in out, its wait status. */
static int spawn_child(const char *name, char *out, size_t capacity) {
  char case_var[128], backend_var[64];
  snprintf(case_var, sizeof case_var, "PLUME_POOL_POISON_CASE=%s", name);
  snprintf(backend_var, sizeof backend_var, "PLUME_BACKEND=%s", plm_backend_name(plm_test_backend));
  size_t count = 0;
  while (environ[count]) count++;
  char **envp = calloc(count + 3, sizeof *envp);
  ck_assert_ptr_nonnull(envp);
  size_t n = 0;
  for (size_t i = 0; i < count; i++)
    if (strncmp(environ[i], "PLUME_BACKEND=", 14) != 0) envp[n++] = environ[i];
  envp[n++] = case_var;
  envp[n++] = backend_var;
  int pipe_fds[2];
  ck_assert_int_eq(pipe(pipe_fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  char self[] = "/proc/self/exe";
  char *argv[] = {self, NULL};
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, self, &actions, NULL, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  free(envp);
  close(pipe_fds[1]);
  ck_assert_msg(spawned == 0, "posix_spawn: %s", strerror(spawned));
  size_t used = 0;
  for (;;) {
    char chunk[4096];
    ssize_t got = read(pipe_fds[0], chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    size_t keep = (size_t)got < capacity - 1 - used ? (size_t)got : capacity - 1 - used;
    memcpy(out + used, chunk, keep);
    used += keep;
  }
  out[used] = '\0';
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

/* The child must have got to its access and died there with a report. */
static void expect_report(const char *name) {
  static char output[1 << 16];
  int status = spawn_child(name, output, sizeof output);
  char marker[128];
  snprintf(marker, sizeof marker, "child: reached %s", name);
  ck_assert_msg(strstr(output, marker), "%s: the child did not get to the access:\n%s", name,
                output);
  ck_assert_msg(!(WIFEXITED(status) && WEXITSTATUS(status) == 0),
                "%s: no report; the child went on:\n%s", name, output);
  ck_assert_msg(strstr(output, "ERROR: AddressSanitizer") || strstr(output, "plume cuda emulator:"),
                "%s: the child died without the sanitizer's report:\n%s", name, output);
}

START_TEST(test_a_copy_one_past_a_block_is_reported) {
  expect_report("past_end_copy");
}
END_TEST

START_TEST(test_a_kernel_writing_one_past_a_block_is_reported) {
  expect_report("past_end_kernel");
}
END_TEST

START_TEST(test_a_read_one_past_a_slab_slot_is_reported) {
  expect_report("past_end_slot");
}
END_TEST

START_TEST(test_a_copy_of_a_block_after_its_free_is_reported) {
  expect_report("after_free_copy");
}
END_TEST

START_TEST(test_a_kernel_reading_a_block_after_its_free_is_reported) {
  expect_report("after_free_kernel");
}
END_TEST

/* ---- correct uses, in this process: a false report would end it ------------------------ */

/* Write every byte of a block and read it back through the stream. */
static void use_whole(plm_stream *stream, void *block, size_t bytes, int value) {
  unsigned char *back = NULL;
  PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, bytes, (void **)&back));
  PLM_CHECK_OK(plm_stream_memset(stream, block, value, bytes));
  PLM_CHECK_OK(plm_stream_memcpy(stream, back, block, bytes, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  ck_assert_uint_eq(back[0], (unsigned)value);
  ck_assert_uint_eq(back[bytes - 1], (unsigned)value);
  PLM_CHECK_OK(plm_host_free(plm_test_ctx, back));
}

/* A kernel writes every float of a block; its operands come from `pool`. */
static void kernel_fills(plm_pool *pool, plm_stream *stream, void *block, int64_t count) {
  const int64_t dims[1] = {count};
  void *operands = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * (size_t)count * sizeof(float), stream, &operands));
  PLM_CHECK_OK(plm_stream_memset(stream, operands, 0, 2 * (size_t)count * sizeof(float)));
  plm_tensor a, b, out;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, operands, PLM_DTYPE_F32, 1, dims, &a));
  PLM_CHECK_OK(
      plm_tensor_wrap(plm_test_ctx, (float *)operands + count, PLM_DTYPE_F32, 1, dims, &b));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, block, PLM_DTYPE_F32, 1, dims, &out));
  PLM_CHECK_OK(plm_vector_add(stream, &a, &b, NULL, &out));
  PLM_CHECK_OK(plm_pool_free(pool, operands, stream));
}

/* Every byte asked for is usable, for sizes that leave slack and sizes that do not, by
 * copies and by a kernel. */
START_TEST(test_every_byte_asked_for_is_usable) {
  plm_pool *pool = pool_with(NULL);
  plm_stream *stream = new_stream();
  const size_t sizes[] = {1, 255, 256, 1000, 4000, 65536 + 8, 300 * KiB + 1, 3 * MiB - 24};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *block = NULL;
    PLM_CHECK_OK(plm_pool_alloc(pool, sizes[i], stream, &block));
    use_whole(stream, block, sizes[i], (int)i + 1);
    if (sizes[i] >= sizeof(float)) kernel_fills(pool, stream, block, (int64_t)(sizes[i] / 4));
    PLM_CHECK_OK(plm_stream_synchronize(stream));
    PLM_CHECK_OK(plm_pool_free(pool, block, stream));
  }
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* A block freed while its stream is held, and taken again on the same stream before the
 * stream gets to the free: the free's note must not poison it under its new use, nor
 * the slack's note poison what the old use still writes. */
START_TEST(test_a_block_reused_on_the_same_stream_is_not_reported) {
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  plm_pool *pool = pool_with(NULL);
  plm_stream *stream = new_stream();
  void *block = NULL, *again = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 64 * KiB, stream, &block));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, gate_wait_task, &hold)); /* held */
  PLM_CHECK_OK(plm_stream_memset(stream, block, 1, 64 * KiB));          /* the old use, all of it */
  PLM_CHECK_OK(plm_pool_free(pool, block, stream));
  PLM_CHECK_OK(plm_pool_alloc(pool, 64 * KiB - 100, stream, &again)); /* slack: 100 bytes */
  ck_assert_ptr_eq(again, block);
  gate_open(&hold);
  use_whole(stream, again, 64 * KiB - 100, 2);
  kernel_fills(pool, stream, again, (64 * KiB - 100) / 4);
  PLM_CHECK_OK(plm_pool_free(pool, again, stream));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  ck_assert(!hold.timed_out);
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(stream));
  gate_destroy(&hold);
}
END_TEST

/* A block freed on a held stream A and taken by stream B behind a wait (the byte limit
 * leaves B nothing else): B's use runs after A's, and A's note, which runs before B's use
 * on the device, must leave it alone. Then the same once A's free is known complete. */
START_TEST(test_a_block_reused_on_another_stream_is_not_reported) {
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  plm_pool_config config = plm_pool_config_default();
  config.growth = PLM_POOL_GROW_FIXED;
  config.byte_limit = 2 * MiB;
  plm_pool *pool = pool_with(&config);
  plm_stream *a = new_stream(), *b = new_stream();
  void *block = NULL, *taken = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, a, &block));
  PLM_CHECK_OK(plm_stream_enqueue_host(a, gate_wait_task, &hold));
  PLM_CHECK_OK(plm_stream_memset(a, block, 1, 2 * MiB));
  PLM_CHECK_OK(plm_pool_free(pool, block, a));
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB - 1000, b, &taken));
  ck_assert_ptr_eq(taken, block);
  ck_assert_uint_eq(stats_of(pool).inserted_waits, 1);
  PLM_CHECK_OK(plm_stream_memset(b, taken, 2, 2 * MiB - 1000)); /* after A's, on the device */
  gate_open(&hold);
  use_whole(b, taken, 2 * MiB - 1000, 3);
  PLM_CHECK_OK(plm_pool_free(pool, taken, b));
  PLM_CHECK_OK(plm_stream_synchronize(b));
  /* Opportunistic: B's free is complete, A takes the block without a wait. */
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, a, &block));
  ck_assert_ptr_eq(taken, block);
  use_whole(a, block, 2 * MiB, 4);
  plm_pool *operands = pool_with(NULL); /* the byte limit leaves no room for them */
  kernel_fills(operands, a, block, 2 * MiB / 4);
  PLM_CHECK_OK(plm_pool_free(pool, block, a));
  PLM_CHECK_OK(plm_stream_synchronize(a));
  ck_assert(!hold.timed_out);
  PLM_CHECK_OK(plm_pool_destroy(operands));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_stream_destroy(b));
  gate_destroy(&hold);
}
END_TEST

/* Slab slots freed on their owner and on another stream, taken again: no report. */
START_TEST(test_slab_slots_reused_are_not_reported) {
  enum { LIVE = 48 };
  plm_pool *pool = pool_with(NULL);
  plm_stream *a = new_stream(), *b = new_stream();
  void *blocks[LIVE];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < LIVE; i++) {
      PLM_CHECK_OK(plm_pool_alloc(pool, 1000, a, &blocks[i]));
      PLM_CHECK_OK(plm_stream_memset(a, blocks[i], round, 1000));
    }
    for (int i = 0; i < LIVE; i++) {
      plm_stream *on = i % 2 ? a : b;
      if (on == b) PLM_CHECK_OK(plm_stream_synchronize(a)); /* b's use is after a's */
      use_whole(on, blocks[i], 1000, round + 1);
      PLM_CHECK_OK(plm_pool_free(pool, blocks[i], on));
    }
  }
  PLM_CHECK_OK(plm_stream_synchronize(a));
  PLM_CHECK_OK(plm_stream_synchronize(b));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_stream_destroy(b));
}
END_TEST

/* A free on a stream being captured sends no host function into the graph: one there
 * would poison the block at every replay, after the pool had given it to stream Q, which
 * uses it between the replays. */
START_TEST(test_a_free_in_a_capture_puts_no_poisoning_in_the_graph) {
  plm_stream *p = new_stream(), *q = new_stream();
  if (!plm__stream_graph_supported(plm_test_ctx)) {
    PLM_CHECK_OK(plm_stream_destroy(p));
    PLM_CHECK_OK(plm_stream_destroy(q));
    printf("SKIP test_a_free_in_a_capture_puts_no_poisoning_in_the_graph: no graphs here\n");
    return;
  }
  plm_pool_config config = plm_pool_config_default();
  config.growth = PLM_POOL_GROW_FIXED;
  config.byte_limit = 2 * MiB;
  plm_pool *pool = pool_with(&config);
  void *block = NULL, *other = NULL, *reused = NULL;
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, p, &block));
  PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, 4096, &other));
  PLM_CHECK_OK(plm__stream_graph_capture_begin(p));
  PLM_CHECK_OK(plm_stream_memset(p, other, 5, 4096));
  PLM_CHECK_OK(plm_pool_free(pool, block, p));
  plm__stream_graph *graph = NULL;
  PLM_CHECK_OK(plm__stream_graph_capture_end(p, &graph));
  PLM_CHECK_OK(plm_pool_alloc(pool, 2 * MiB, q, &reused));
  ck_assert_ptr_eq(reused, block);
  for (int replay = 0; replay < 3; replay++) {
    PLM_CHECK_OK(plm__stream_graph_launch(graph, p));
    PLM_CHECK_OK(plm_stream_synchronize(p));
    use_whole(q, reused, 2 * MiB, replay + 1);
  }
  plm__stream_graph_destroy(graph);
  PLM_CHECK_OK(plm_pool_free(pool, reused, q));
  PLM_CHECK_OK(plm_stream_synchronize(q));
  PLM_CHECK_OK(plm_device_free(plm_test_ctx, other));
  PLM_CHECK_OK(plm_pool_destroy(pool));
  PLM_CHECK_OK(plm_stream_destroy(p));
  PLM_CHECK_OK(plm_stream_destroy(q));
}
END_TEST

static Suite *pool_poison_suite(void) {
  Suite *suite = suite_create("pool_poison");
  TCase *reported = tcase_create("reported");
  plm_test_add_fixture(reported);
  tcase_set_timeout(reported, 120);
  tcase_add_test(reported, test_a_copy_one_past_a_block_is_reported);
  tcase_add_test(reported, test_a_kernel_writing_one_past_a_block_is_reported);
  tcase_add_test(reported, test_a_read_one_past_a_slab_slot_is_reported);
  tcase_add_test(reported, test_a_copy_of_a_block_after_its_free_is_reported);
  tcase_add_test(reported, test_a_kernel_reading_a_block_after_its_free_is_reported);
  suite_add_tcase(suite, reported);

  TCase *quiet = tcase_create("not_reported");
  plm_test_add_fixture(quiet);
  tcase_add_test(quiet, test_every_byte_asked_for_is_usable);
  tcase_add_test(quiet, test_a_block_reused_on_the_same_stream_is_not_reported);
  tcase_add_test(quiet, test_a_block_reused_on_another_stream_is_not_reported);
  tcase_add_test(quiet, test_slab_slots_reused_are_not_reported);
  tcase_add_test(quiet, test_a_free_in_a_capture_puts_no_poisoning_in_the_graph);
  suite_add_tcase(suite, quiet);
  return suite;
}

int main(void) {
  const char *child = getenv("PLUME_POOL_POISON_CASE");
  if (child) return run_child(child);
  if (!SANITIZED) {
    printf(
        "SKIP: the pool poisons its free memory only in AddressSanitizer builds "
        "(-DPLUME_SANITIZE=address)\n");
    return 77;
  }
  return plm_test_main(pool_poison_suite);
}

/* tests/test_error.c: status names, the thread-local error message (plume/status.h)
 * and the version and build description (plume/version.h, plm_build_info_get). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { MESSAGE_CAPACITY = 1024, LONG_NAME_LENGTH = 5000 };

/* ---- helpers ------------------------------------------------------------------ */

/* Run fn(arg) on a new thread and wait for it, so that a test can look at a
 * thread that has never called plume before. */
static void run_on_new_thread(void *(*fn)(void *), void *arg) {
  pthread_t thread;
  ck_assert_int_eq(pthread_create(&thread, NULL, fn, arg), 0);
  ck_assert_int_eq(pthread_join(thread, NULL), 0);
}

/* What a thread saw; the thread's own message buffer dies with it, so it copies. */
typedef struct thread_report {
  char message_at_start[MESSAGE_CAPACITY];
  char message_after_failure[MESSAGE_CAPACITY];
  plm_status status;
} thread_report;

static void *report_fresh_message(void *arg) {
  thread_report *report = arg;
  snprintf(report->message_at_start, sizeof report->message_at_start, "%s", plm_last_error());
  return NULL;
}

static void *fail_to_parse_a_backend(void *arg) {
  thread_report *report = arg;
  snprintf(report->message_at_start, sizeof report->message_at_start, "%s", plm_last_error());
  plm_backend backend;
  report->status = plm_backend_parse("not-a-backend", &backend);
  snprintf(report->message_after_failure, sizeof report->message_after_failure, "%s",
           plm_last_error());
  return NULL;
}

/* ---- status names -------------------------------------------------------------- */

START_TEST(test_every_status_has_its_name) {
  static const struct {
    plm_status status;
    const char *name;
  } expected[] = {
      {PLM_OK, "PLM_OK"},
      {PLM_ERR_INVALID_ARG, "PLM_ERR_INVALID_ARG"},
      {PLM_ERR_OUT_OF_MEMORY, "PLM_ERR_OUT_OF_MEMORY"},
      {PLM_ERR_NO_DEVICE, "PLM_ERR_NO_DEVICE"},
      {PLM_ERR_UNSUPPORTED, "PLM_ERR_UNSUPPORTED"},
      {PLM_ERR_BACKEND, "PLM_ERR_BACKEND"},
      {PLM_ERR_IO, "PLM_ERR_IO"},
      {PLM_ERR_INVALID_STATE, "PLM_ERR_INVALID_STATE"},
      {PLM_ERR_NOT_READY, "PLM_ERR_NOT_READY"},
      {PLM_ERR_NOT_FOUND, "PLM_ERR_NOT_FOUND"},
      {PLM_ERR_INTERNAL, "PLM_ERR_INTERNAL"},
  };
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
    ck_assert_str_eq(plm_status_str(expected[i].status), expected[i].name);
}
END_TEST

START_TEST(test_unknown_status_has_a_placeholder_name) {
  const int outside[] = {1, 42, -11, -1000};
  for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
    const char *name = plm_status_str((plm_status)outside[i]);
    ck_assert_ptr_nonnull(name);
    ck_assert_str_eq(name, "unknown status");
  }
}
END_TEST

/* ---- the thread's message ------------------------------------------------------------ */

START_TEST(test_message_is_empty_on_a_fresh_thread) {
  thread_report report;
  memset(&report, 'x', sizeof report);
  run_on_new_thread(report_fresh_message, &report);
  ck_assert_str_eq(report.message_at_start, "");
}
END_TEST

START_TEST(test_failure_leaves_function_and_message) {
  plm_clear_error();
  plm_stream *stream = NULL;
  ck_assert_int_eq(plm_stream_create(plm_test_ctx, 0x9, &stream), PLM_ERR_INVALID_ARG);
  ck_assert_str_eq(plm_last_error(), "plm_stream_create: flags 0x9 has unknown bits");
  ck_assert_ptr_null(stream);

  /* A NULL argument is named too. */
  ck_assert_int_eq(plm_stream_create(NULL, 0, &stream), PLM_ERR_INVALID_ARG);
  ck_assert_str_eq(plm_last_error(), "plm_stream_create: ctx is NULL");
}
END_TEST

START_TEST(test_successful_calls_leave_the_message_unchanged) {
  plm_stream *stream = NULL;
  ck_assert_int_eq(plm_stream_create(plm_test_ctx, 0x9, &stream), PLM_ERR_INVALID_ARG);
  const char *expected = "plm_stream_create: flags 0x9 has unknown bits";
  ck_assert_str_eq(plm_last_error(), expected);

  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  PLM_CHECK_OK(plm_stream_destroy(stream));
  plm_backend backend;
  PLM_CHECK_OK(plm_backend_parse("host", &backend));
  PLM_CHECK_OK(plm_context_backend(plm_test_ctx, &backend));
  int count = 0;
  const char *reason = NULL;
  PLM_CHECK_OK(plm_backend_device_count(PLM_BACKEND_CUDA, &count, &reason));
  (void)plm_version_string();
  (void)plm_status_str(PLM_ERR_IO);
  ck_assert_str_eq(plm_last_error(), expected);
}
END_TEST

START_TEST(test_a_later_failure_replaces_the_message) {
  plm_stream *stream = NULL;
  ck_assert_int_eq(plm_stream_create(plm_test_ctx, 0x9, &stream), PLM_ERR_INVALID_ARG);
  plm_backend backend;
  ck_assert_int_eq(plm_backend_parse("gpu", &backend), PLM_ERR_INVALID_ARG);
  ck_assert_str_eq(plm_last_error(), "plm_backend_parse: backend 'gpu' is not host, cuda or auto");
}
END_TEST

START_TEST(test_clear_error_empties_the_message) {
  plm_stream *stream = NULL;
  ck_assert_int_eq(plm_stream_create(plm_test_ctx, 0x9, &stream), PLM_ERR_INVALID_ARG);
  ck_assert_str_ne(plm_last_error(), "");
  plm_clear_error();
  ck_assert_str_eq(plm_last_error(), "");
  plm_clear_error();
  ck_assert_str_eq(plm_last_error(), "");
}
END_TEST

START_TEST(test_messages_belong_to_their_thread) {
  plm_stream *stream = NULL;
  ck_assert_int_eq(plm_stream_create(plm_test_ctx, 0x9, &stream), PLM_ERR_INVALID_ARG);
  const char *mine = "plm_stream_create: flags 0x9 has unknown bits";

  /* Thread B starts clean although this thread has a message, fails on its own,
   * and this thread's message is untouched by that. */
  thread_report report;
  memset(&report, 'x', sizeof report);
  run_on_new_thread(fail_to_parse_a_backend, &report);
  ck_assert_str_eq(report.message_at_start, "");
  ck_assert_int_eq(report.status, PLM_ERR_INVALID_ARG);
  ck_assert_str_eq(report.message_after_failure,
                   "plm_backend_parse: backend 'not-a-backend' is not host, cuda or auto");
  ck_assert_str_eq(plm_last_error(), mine);
}
END_TEST

/* Several threads fail at the same time with messages of their own, many times
 * over; each must read back exactly its own message every time. */
enum { RACING_THREADS = 4, RACING_ROUNDS = 2000 };

typedef struct racer {
  int id;
  int mismatches;
} racer;

static void *fail_repeatedly(void *arg) {
  racer *self = arg;
  char name[32], expected[128];
  snprintf(name, sizeof name, "racer-%d", self->id);
  snprintf(expected, sizeof expected, "plm_backend_parse: backend '%s' is not host, cuda or auto",
           name);
  for (int round = 0; round < RACING_ROUNDS; round++) {
    plm_backend backend;
    if (plm_backend_parse(name, &backend) != PLM_ERR_INVALID_ARG ||
        strcmp(plm_last_error(), expected) != 0)
      self->mismatches++;
    plm_clear_error();
    if (plm_last_error()[0] != '\0') self->mismatches++;
  }
  return NULL;
}

START_TEST(test_concurrent_failures_keep_separate_messages) {
  pthread_t threads[RACING_THREADS];
  racer racers[RACING_THREADS];
  for (int t = 0; t < RACING_THREADS; t++) {
    racers[t] = (racer){.id = t, .mismatches = 0};
    ck_assert_int_eq(pthread_create(&threads[t], NULL, fail_repeatedly, &racers[t]), 0);
  }
  for (int t = 0; t < RACING_THREADS; t++) ck_assert_int_eq(pthread_join(threads[t], NULL), 0);
  for (int t = 0; t < RACING_THREADS; t++)
    ck_assert_msg(racers[t].mismatches == 0, "thread %d read %d foreign or wrong messages", t,
                  racers[t].mismatches);
}
END_TEST

START_TEST(test_long_message_is_truncated_safely) {
  char *name = malloc(LONG_NAME_LENGTH + 1);
  ck_assert_ptr_nonnull(name);
  memset(name, 'n', LONG_NAME_LENGTH);
  name[LONG_NAME_LENGTH] = '\0';
  plm_backend backend;
  ck_assert_int_eq(plm_backend_parse(name, &backend), PLM_ERR_INVALID_ARG);
  const char *message = plm_last_error();
  size_t length = strlen(message);
  ck_assert_msg(length < MESSAGE_CAPACITY, "message of %zu chars", length);
  ck_assert_msg(length > MESSAGE_CAPACITY / 2, "message of %zu chars lost too much", length);
  const char *prefix = "plm_backend_parse: backend 'nnnn";
  ck_assert_msg(strncmp(message, prefix, strlen(prefix)) == 0, "message starts \"%.60s\"", message);
  free(name);
}
END_TEST

/* A message raised below the API boundary and then prefixed with the public
 * function's name on the way out must stay within bounds as well. */
START_TEST(test_long_propagated_message_is_truncated_safely) {
  const char *saved = getenv("PLUME_BACKEND");
  char *saved_copy = saved ? strdup(saved) : NULL;
  char *value = malloc(LONG_NAME_LENGTH + 1);
  ck_assert_ptr_nonnull(value);
  memset(value, 'v', LONG_NAME_LENGTH);
  value[LONG_NAME_LENGTH] = '\0';
  ck_assert_int_eq(setenv("PLUME_BACKEND", value, 1), 0);

  plm_context *ctx = NULL;
  plm_status status = plm_context_create(NULL, &ctx);
  char message[MESSAGE_CAPACITY * 2];
  snprintf(message, sizeof message, "%s", plm_last_error());

  /* Restore the environment before any check can end the test. */
  if (saved_copy)
    setenv("PLUME_BACKEND", saved_copy, 1);
  else
    unsetenv("PLUME_BACKEND");
  free(saved_copy);
  free(value);

  ck_assert_int_eq(status, PLM_ERR_INVALID_ARG);
  ck_assert_ptr_null(ctx);
  size_t length = strlen(message);
  ck_assert_msg(length < MESSAGE_CAPACITY, "message of %zu chars", length);
  const char *prefix = "plm_context_create: environment variable PLUME_BACKEND='vvvv";
  ck_assert_msg(strncmp(message, prefix, strlen(prefix)) == 0, "message starts \"%.80s\"", message);
}
END_TEST

/* ---- version and build ------------------------------------------------------------------ */

START_TEST(test_version_string_matches_the_macros) {
  char expected[64];
  snprintf(expected, sizeof expected, "%d.%d.%d", PLM_VERSION_MAJOR, PLM_VERSION_MINOR,
           PLM_VERSION_PATCH);
  ck_assert_ptr_nonnull(plm_version_string());
  ck_assert_str_eq(plm_version_string(), expected);
}
END_TEST

START_TEST(test_version_number_matches_the_macros) {
  ck_assert_int_eq(plm_version_number(), PLM_VERSION_NUMBER);
  ck_assert_int_eq(PLM_VERSION_NUMBER,
                   PLM_VERSION_MAJOR * 10000 + PLM_VERSION_MINOR * 100 + PLM_VERSION_PATCH);
}
END_TEST

START_TEST(test_build_info_is_complete) {
  const plm_build_info *info = plm_build_info_get();
  ck_assert_ptr_nonnull(info);
  ck_assert_ptr_eq(info, plm_build_info_get());
  ck_assert_ptr_nonnull(info->version);
  ck_assert_ptr_nonnull(info->git_commit);
  ck_assert_ptr_nonnull(info->build_type);
  ck_assert_ptr_nonnull(info->c_compiler);
  ck_assert_ptr_nonnull(info->build_dir);
  ck_assert_ptr_nonnull(info->cuda_toolkit);
  ck_assert_ptr_nonnull(info->cuda_architectures);
  ck_assert_str_eq(info->version, plm_version_string());
  ck_assert_msg(info->cuda_enabled == 0 || info->cuda_enabled == 1, "cuda_enabled is %d",
                info->cuda_enabled);
  if (!info->cuda_enabled) {
    ck_assert_str_eq(info->cuda_toolkit, "");
    ck_assert_str_eq(info->cuda_architectures, "");
  }
  printf("plume %s, commit '%s', %s, %s, cuda %d ('%s', '%s')\n", info->version, info->git_commit,
         info->build_type, info->c_compiler, info->cuda_enabled, info->cuda_toolkit,
         info->cuda_architectures);
}
END_TEST

static Suite *error_suite(void) {
  Suite *suite = suite_create("error");
  TCase *names = tcase_create("names");
  tcase_add_test(names, test_every_status_has_its_name);
  tcase_add_test(names, test_unknown_status_has_a_placeholder_name);
  suite_add_tcase(suite, names);

  TCase *message = tcase_create("message");
  plm_test_add_fixture(message);
  tcase_add_test(message, test_message_is_empty_on_a_fresh_thread);
  tcase_add_test(message, test_failure_leaves_function_and_message);
  tcase_add_test(message, test_successful_calls_leave_the_message_unchanged);
  tcase_add_test(message, test_a_later_failure_replaces_the_message);
  tcase_add_test(message, test_clear_error_empties_the_message);
  tcase_add_test(message, test_messages_belong_to_their_thread);
  tcase_add_test(message, test_concurrent_failures_keep_separate_messages);
  tcase_add_test(message, test_long_message_is_truncated_safely);
  tcase_add_test(message, test_long_propagated_message_is_truncated_safely);
  suite_add_tcase(suite, message);

  TCase *version = tcase_create("version");
  tcase_add_test(version, test_version_string_matches_the_macros);
  tcase_add_test(version, test_version_number_matches_the_macros);
  tcase_add_test(version, test_build_info_is_complete);
  suite_add_tcase(suite, version);
  return suite;
}

int main(void) {
  return plm_test_main(error_suite);
}

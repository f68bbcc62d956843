/* tests/test_event.c: events (plume/event.h) on the backend under test. */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "harness.h"

enum { GATE_TIMEOUT_MS = 10000 };

typedef struct sequence {
  atomic_int clock;
  int gated_task_finished_at;
  int waiter_ran_at;
} sequence;

static void finish_gated(void *user) {
  sequence *s = user;
  s->gated_task_finished_at = atomic_fetch_add(&s->clock, 1);
}

static void waiter_runs(void *user) {
  sequence *s = user;
  s->waiter_ran_at = atomic_fetch_add(&s->clock, 1);
}

static void sleep_ms_task(void *user) {
  plm_test_sleep_ms(*(const double *)user);
}

START_TEST(test_unrecorded_event_is_complete) {
  plm_event *event = NULL;
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, 0, &event));
  bool complete = false;
  PLM_CHECK_OK(plm_event_query(event, &complete));
  ck_assert(complete);
  PLM_CHECK_OK(plm_event_synchronize(event));
  PLM_CHECK_OK(plm_event_destroy(event));
  PLM_CHECK_OK(plm_event_destroy(NULL));
}
END_TEST

START_TEST(test_event_behind_slow_task_completes_only_after_it) {
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  plm_stream *stream = NULL;
  plm_event *event = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, 0, &event));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, gate_wait_task, &hold));
  PLM_CHECK_OK(plm_event_record(event, stream));

  bool complete = true;
  PLM_CHECK_OK(plm_event_query(event, &complete));
  ck_assert_msg(!complete, "event complete while the task ahead of it is still held");
  plm_test_sleep_ms(30);
  PLM_CHECK_OK(plm_event_query(event, &complete));
  ck_assert(!complete);

  gate_open(&hold);
  PLM_CHECK_OK(plm_event_synchronize(event));
  PLM_CHECK_OK(plm_event_query(event, &complete));
  ck_assert(complete);
  ck_assert(!hold.timed_out);
  PLM_CHECK_OK(plm_event_destroy(event));
  PLM_CHECK_OK(plm_stream_destroy(stream));
  gate_destroy(&hold);
}
END_TEST

START_TEST(test_wait_event_orders_streams_without_blocking_host) {
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  sequence s = {.gated_task_finished_at = -1, .waiter_ran_at = -1};
  atomic_init(&s.clock, 0);
  plm_stream *a = NULL, *b = NULL;
  plm_event *event = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &a));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &b));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, PLM_EVENT_DISABLE_TIMING, &event));

  PLM_CHECK_OK(plm_stream_enqueue_host(a, gate_wait_task, &hold));
  PLM_CHECK_OK(plm_stream_enqueue_host(a, finish_gated, &s));
  PLM_CHECK_OK(plm_event_record(event, a));
  double before = plm_test_now_ms();
  PLM_CHECK_OK(plm_stream_wait_event(b, event)); /* must not block: A is still held */
  PLM_CHECK_OK(plm_stream_enqueue_host(b, waiter_runs, &s));
  ck_assert_msg(plm_test_now_ms() - before < 1000, "plm_stream_wait_event blocked the host");

  plm_test_sleep_ms(30);
  bool finished = true;
  PLM_CHECK_OK(plm_stream_query(b, &finished));
  ck_assert_msg(!finished, "stream B ran past its wait while A was held");
  ck_assert_int_eq(s.waiter_ran_at, -1);

  gate_open(&hold);
  PLM_CHECK_OK(plm_stream_synchronize(b));
  ck_assert_int_ge(s.gated_task_finished_at, 0);
  ck_assert_int_gt(s.waiter_ran_at, s.gated_task_finished_at);
  PLM_CHECK_OK(plm_stream_synchronize(a));
  PLM_CHECK_OK(plm_event_destroy(event));
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_stream_destroy(b));
  gate_destroy(&hold);
}
END_TEST

/* A wait captures the record current when it is enqueued: re-recording the event
 * later on an idle stream must not release the earlier wait. */
START_TEST(test_wait_keeps_the_record_it_captured) {
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  sequence s = {.gated_task_finished_at = -1, .waiter_ran_at = -1};
  atomic_init(&s.clock, 0);
  plm_stream *a = NULL, *b = NULL, *c = NULL;
  plm_event *event = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &a));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &b));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &c));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, 0, &event));

  PLM_CHECK_OK(plm_stream_enqueue_host(a, gate_wait_task, &hold));
  PLM_CHECK_OK(plm_stream_enqueue_host(a, finish_gated, &s));
  PLM_CHECK_OK(plm_event_record(event, a));
  PLM_CHECK_OK(plm_stream_wait_event(b, event));
  PLM_CHECK_OK(plm_stream_enqueue_host(b, waiter_runs, &s));
  PLM_CHECK_OK(plm_event_record(event, c)); /* c is idle: this record completes at once */
  PLM_CHECK_OK(plm_event_synchronize(event));

  plm_test_sleep_ms(30);
  ck_assert_msg(s.waiter_ran_at == -1, "re-recording the event released an earlier wait");
  gate_open(&hold);
  PLM_CHECK_OK(plm_stream_synchronize(b));
  ck_assert_int_gt(s.waiter_ran_at, s.gated_task_finished_at);
  PLM_CHECK_OK(plm_context_synchronize(plm_test_ctx));
  PLM_CHECK_OK(plm_event_destroy(event));
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_stream_destroy(b));
  PLM_CHECK_OK(plm_stream_destroy(c));
  gate_destroy(&hold);
}
END_TEST

START_TEST(test_elapsed_time_is_plausible) {
  static const double pause_ms = 25.0;
  plm_stream *stream = NULL;
  plm_event *start = NULL, *end = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, 0, &start));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, PLM_EVENT_BLOCKING_SYNC, &end));
  PLM_CHECK_OK(plm_event_record(start, stream));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, sleep_ms_task, (void *)&pause_ms));
  PLM_CHECK_OK(plm_event_record(end, stream));
  PLM_CHECK_OK(plm_event_synchronize(end));
  float ms = -1.0f;
  PLM_CHECK_OK(plm_event_elapsed_ms(start, end, &ms));
  ck_assert_msg(ms >= 0.9 * pause_ms && ms < 2000.0, "elapsed %.3f ms around a %.0f ms pause", ms,
                pause_ms);
  float reverse = 0.0f;
  PLM_CHECK_OK(plm_event_elapsed_ms(end, start, &reverse));
  ck_assert(reverse < 0.0f);
  PLM_CHECK_OK(plm_event_destroy(start));
  PLM_CHECK_OK(plm_event_destroy(end));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_elapsed_refuses_pending_untimed_and_unrecorded_events) {
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  plm_stream *stream = NULL;
  plm_event *start = NULL, *end = NULL, *untimed = NULL, *never = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, 0, &start));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, 0, &end));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, PLM_EVENT_DISABLE_TIMING, &untimed));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, 0, &never));
  PLM_CHECK_OK(plm_event_record(start, stream));
  PLM_CHECK_OK(plm_event_record(untimed, stream));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, gate_wait_task, &hold));
  PLM_CHECK_OK(plm_event_record(end, stream));

  float ms;
  PLM_CHECK_FAILS(plm_event_elapsed_ms(start, end, &ms), PLM_ERR_NOT_READY, "plm_event_elapsed_ms");
  PLM_CHECK_FAILS(plm_event_elapsed_ms(start, never, &ms), PLM_ERR_INVALID_STATE,
                  "end was never recorded");
  PLM_CHECK_FAILS(plm_event_elapsed_ms(untimed, start, &ms), PLM_ERR_INVALID_STATE,
                  "PLM_EVENT_DISABLE_TIMING");
  gate_open(&hold);
  PLM_CHECK_OK(plm_event_synchronize(end));
  PLM_CHECK_OK(plm_event_elapsed_ms(start, end, &ms));

  PLM_CHECK_OK(plm_event_destroy(start));
  PLM_CHECK_OK(plm_event_destroy(end));
  PLM_CHECK_OK(plm_event_destroy(untimed));
  PLM_CHECK_OK(plm_event_destroy(never));
  PLM_CHECK_OK(plm_stream_destroy(stream));
  gate_destroy(&hold);
}
END_TEST

START_TEST(test_destroying_an_event_with_pending_work_is_safe) {
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  plm_stream *a = NULL, *b = NULL;
  plm_event *event = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &a));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &b));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, 0, &event));
  PLM_CHECK_OK(plm_stream_enqueue_host(a, gate_wait_task, &hold));
  PLM_CHECK_OK(plm_event_record(event, a));
  PLM_CHECK_OK(plm_stream_wait_event(b, event));
  PLM_CHECK_OK(plm_event_destroy(event)); /* the record and the wait are still pending */
  gate_open(&hold);
  PLM_CHECK_OK(plm_stream_synchronize(a));
  PLM_CHECK_OK(plm_stream_synchronize(b));
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_stream_destroy(b));
  gate_destroy(&hold);
}
END_TEST

START_TEST(test_bad_input_is_reported) {
  plm_event *event = NULL;
  PLM_CHECK_FAILS(plm_event_create(NULL, 0, &event), PLM_ERR_INVALID_ARG,
                  "plm_event_create: ctx is NULL");
  PLM_CHECK_FAILS(plm_event_create(plm_test_ctx, 0, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  PLM_CHECK_FAILS(plm_event_create(plm_test_ctx, 0x10, &event), PLM_ERR_INVALID_ARG,
                  "plm_event_create: flags 0x10 has unknown bits");
  ck_assert_ptr_null(event);

  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, 0, &event));
  bool complete;
  float ms;
  PLM_CHECK_FAILS(plm_event_record(NULL, stream), PLM_ERR_INVALID_ARG, "event is NULL");
  PLM_CHECK_FAILS(plm_event_record(event, NULL), PLM_ERR_INVALID_ARG, "stream is NULL");
  PLM_CHECK_FAILS(plm_event_query(NULL, &complete), PLM_ERR_INVALID_ARG, "event is NULL");
  PLM_CHECK_FAILS(plm_event_query(event, NULL), PLM_ERR_INVALID_ARG, "complete is NULL");
  PLM_CHECK_FAILS(plm_event_synchronize(NULL), PLM_ERR_INVALID_ARG, "event is NULL");
  PLM_CHECK_FAILS(plm_event_elapsed_ms(NULL, event, &ms), PLM_ERR_INVALID_ARG, "start is NULL");
  PLM_CHECK_FAILS(plm_event_elapsed_ms(event, NULL, &ms), PLM_ERR_INVALID_ARG, "end is NULL");
  PLM_CHECK_FAILS(plm_event_elapsed_ms(event, event, NULL), PLM_ERR_INVALID_ARG, "ms is NULL");

  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_stream *foreign_stream = NULL;
  plm_event *foreign_event = NULL;
  PLM_CHECK_OK(plm_stream_create(other, 0, &foreign_stream));
  PLM_CHECK_OK(plm_event_create(other, 0, &foreign_event));
  PLM_CHECK_FAILS(plm_event_record(event, foreign_stream), PLM_ERR_INVALID_ARG,
                  "event belongs to another context");
  PLM_CHECK_OK(plm_event_record(foreign_event, foreign_stream));
  PLM_CHECK_OK(plm_event_record(event, stream));
  PLM_CHECK_OK(plm_context_synchronize(other));
  PLM_CHECK_OK(plm_event_synchronize(event));
  PLM_CHECK_FAILS(plm_event_elapsed_ms(event, foreign_event, &ms), PLM_ERR_INVALID_ARG,
                  "different contexts");
  PLM_CHECK_OK(plm_event_destroy(foreign_event));
  PLM_CHECK_OK(plm_stream_destroy(foreign_stream));
  PLM_CHECK_OK(plm_context_destroy(other));

  /* Still usable afterwards. */
  PLM_CHECK_OK(plm_event_record(event, stream));
  PLM_CHECK_OK(plm_event_synchronize(event));
  PLM_CHECK_OK(plm_event_destroy(event));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

static Suite *event_suite(void) {
  Suite *suite = suite_create("event");
  TCase *semantics = tcase_create("semantics");
  plm_test_add_fixture(semantics);
  tcase_add_test(semantics, test_unrecorded_event_is_complete);
  tcase_add_test(semantics, test_event_behind_slow_task_completes_only_after_it);
  tcase_add_test(semantics, test_wait_event_orders_streams_without_blocking_host);
  tcase_add_test(semantics, test_wait_keeps_the_record_it_captured);
  tcase_add_test(semantics, test_destroying_an_event_with_pending_work_is_safe);
  suite_add_tcase(suite, semantics);

  TCase *timing = tcase_create("timing");
  plm_test_add_fixture(timing);
  tcase_add_test(timing, test_elapsed_time_is_plausible);
  tcase_add_test(timing, test_elapsed_refuses_pending_untimed_and_unrecorded_events);
  suite_add_tcase(suite, timing);

  TCase *bad_input = tcase_create("bad_input");
  plm_test_add_fixture(bad_input);
  tcase_add_test(bad_input, test_bad_input_is_reported);
  suite_add_tcase(suite, bad_input);
  return suite;
}

int main(void) {
  return plm_test_main(event_suite);
}

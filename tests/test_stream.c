/* tests/test_stream.c: streams, asynchronous copies and host callbacks
 * (plume/stream.h), on the backend under test. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_thread.h"
#include "gate.h"
#include "harness.h"
#include "streams/stream_graph.h"

enum { GATE_TIMEOUT_MS = 10000 };

/* ---- helpers ------------------------------------------------------------------ */

typedef struct order_log {
  atomic_int next;
  int seen[4096];
} order_log;

typedef struct order_entry {
  order_log *log;
  int index;
} order_entry;

static void append_to_log(void *user) {
  order_entry *entry = user;
  int slot = atomic_fetch_add(&entry->log->next, 1);
  if (slot < 4096) entry->log->seen[slot] = entry->index;
}

static void set_flag(void *user) {
  atomic_store((atomic_int *)user, 1);
}

static void sleep_20ms(void *user) {
  (void)user;
  plm_test_sleep_ms(20);
}

static void fill_pattern(unsigned char *bytes, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) bytes[i] = (unsigned char)((i * 131u + seed * 7u) ^ (i >> 8));
}

/* ---- lifecycle -------------------------------------------------------------------- */

START_TEST(test_create_destroy_with_each_flag) {
  const unsigned flags[] = {PLM_STREAM_DEFAULT, PLM_STREAM_PRIORITY_HIGH, PLM_STREAM_PRIORITY_LOW};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    plm_stream *stream = NULL;
    PLM_CHECK_OK(plm_stream_create(plm_test_ctx, flags[i], &stream));
    ck_assert_ptr_nonnull(stream);
    unsigned got = 99;
    PLM_CHECK_OK(plm_stream_flags(stream, &got));
    ck_assert_uint_eq(got, flags[i]);
    plm_context *owner = NULL;
    PLM_CHECK_OK(plm_stream_context(stream, &owner));
    ck_assert_ptr_eq(owner, plm_test_ctx);
    PLM_CHECK_OK(plm_stream_destroy(stream));
  }
  PLM_CHECK_OK(plm_stream_destroy(NULL));
}
END_TEST

/* cuda streams hand out their cudaStream_t; host streams have none to give. */
START_TEST(test_native_handle) {
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  void *native = (void *)&native;
  if (plm_test_backend == PLM_BACKEND_CUDA) {
    PLM_CHECK_OK(plm_stream_native_handle(stream, &native));
    ck_assert_ptr_nonnull(native);
  } else {
    PLM_CHECK_FAILS(plm_stream_native_handle(stream, &native), PLM_ERR_UNSUPPORTED, "host");
    ck_assert_ptr_null(native);
  }
  PLM_CHECK_FAILS(plm_stream_native_handle(NULL, &native), PLM_ERR_INVALID_ARG, "stream");
  PLM_CHECK_FAILS(plm_stream_native_handle(stream, NULL), PLM_ERR_INVALID_ARG, "native");
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_empty_stream_is_finished) {
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  bool finished = false;
  PLM_CHECK_OK(plm_stream_query(stream, &finished));
  ck_assert(finished);
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* ---- order and concurrency ---------------------------------------------------------- */

START_TEST(test_tasks_on_one_stream_run_in_order) {
  enum { TASKS = 2000 };
  static order_log log;
  static order_entry entries[TASKS];
  atomic_init(&log.next, 0);
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  for (int i = 0; i < TASKS; i++) {
    entries[i] = (order_entry){.log = &log, .index = i};
    PLM_CHECK_OK(plm_stream_enqueue_host(stream, append_to_log, &entries[i]));
  }
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  ck_assert_int_eq(atomic_load(&log.next), TASKS);
  for (int i = 0; i < TASKS; i++) ck_assert_int_eq(log.seen[i], i);
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* Two tasks on two streams that each announce their start and then wait for the
 * other's: both see the other only if the streams really run at once. */
typedef struct rendezvous {
  gate started[2];
  atomic_int saw_other[2];
} rendezvous;

typedef struct rendezvous_side {
  rendezvous *meeting;
  int me;
} rendezvous_side;

static void meet(void *user) {
  rendezvous_side *side = user;
  gate_open(&side->meeting->started[side->me]);
  bool other_started = gate_wait(&side->meeting->started[1 - side->me]);
  atomic_store(&side->meeting->saw_other[side->me], other_started ? 1 : 0);
}

START_TEST(test_two_streams_run_concurrently) {
  if (plm_test_backend != PLM_BACKEND_HOST) {
    /* CUDA may run host callbacks of all streams on one thread; kernels show its
     * concurrency instead (tests of the operations). */
    printf("SKIP test_two_streams_run_concurrently: host-callback rendezvous is host-only\n");
    return;
  }
  rendezvous meeting;
  gate_init(&meeting.started[0], 5000);
  gate_init(&meeting.started[1], 5000);
  atomic_init(&meeting.saw_other[0], 0);
  atomic_init(&meeting.saw_other[1], 0);
  rendezvous_side sides[2] = {{&meeting, 0}, {&meeting, 1}};
  plm_stream *a = NULL, *b = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &a));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &b));
  PLM_CHECK_OK(plm_stream_enqueue_host(a, meet, &sides[0]));
  PLM_CHECK_OK(plm_stream_enqueue_host(b, meet, &sides[1]));
  PLM_CHECK_OK(plm_stream_synchronize(a));
  PLM_CHECK_OK(plm_stream_synchronize(b));
  ck_assert_msg(atomic_load(&meeting.saw_other[0]) && atomic_load(&meeting.saw_other[1]),
                "the two streams did not run at the same time");
  PLM_CHECK_OK(plm_stream_destroy(a));
  PLM_CHECK_OK(plm_stream_destroy(b));
  gate_destroy(&meeting.started[0]);
  gate_destroy(&meeting.started[1]);
}
END_TEST

START_TEST(test_query_reports_pending_work_without_blocking) {
  gate hold;
  gate_init(&hold, GATE_TIMEOUT_MS);
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, gate_wait_task, &hold));
  double before = plm_test_now_ms();
  bool finished = true;
  PLM_CHECK_OK(plm_stream_query(stream, &finished));
  ck_assert_msg(plm_test_now_ms() - before < 1000, "plm_stream_query blocked");
  ck_assert(!finished);
  gate_open(&hold);
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  PLM_CHECK_OK(plm_stream_query(stream, &finished));
  ck_assert(finished);
  ck_assert(!hold.timed_out);
  PLM_CHECK_OK(plm_stream_destroy(stream));
  gate_destroy(&hold);
}
END_TEST

START_TEST(test_destroy_finishes_pending_work) {
  atomic_int done;
  atomic_init(&done, 0);
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, sleep_20ms, NULL));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, sleep_20ms, NULL));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, set_flag, &done));
  PLM_CHECK_OK(plm_stream_destroy(stream));
  ck_assert_int_eq(atomic_load(&done), 1);
}
END_TEST

/* ---- copies -------------------------------------------------------------------------- */

static void round_trip(plm_stream *stream, size_t bytes, size_t offset) {
  unsigned char *source = malloc(bytes + offset);
  unsigned char *result = malloc(bytes + offset);
  unsigned char *expected = malloc(bytes + offset);
  ck_assert(source && result && expected);
  fill_pattern(source, bytes + offset, (unsigned)bytes);
  memset(result, 0xEE, bytes + offset);
  void *device_a = NULL, *device_b = NULL;
  PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, bytes + offset, &device_a));
  PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, bytes + offset, &device_b));
  unsigned char *a = device_a, *b = device_b;

  /* host -> a (at an unaligned offset), a -> b, zero the middle third of b with a
   * memset, b -> host. */
  PLM_CHECK_OK(
      plm_stream_memcpy(stream, a + offset, source + offset, bytes, PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_stream_memcpy(stream, b + offset, a + offset, bytes, PLM_COPY_DEVICE_TO_DEVICE));
  size_t third = bytes / 3;
  PLM_CHECK_OK(plm_stream_memset(stream, b + offset + third, 0x5A, third));
  PLM_CHECK_OK(
      plm_stream_memcpy(stream, result + offset, b + offset, bytes, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(stream));

  memcpy(expected, source, bytes + offset);
  memset(expected + offset + third, 0x5A, third);
  ck_assert_msg(memcmp(result + offset, expected + offset, bytes) == 0,
                "round trip of %zu bytes at offset %zu differs", bytes, offset);
  PLM_CHECK_OK(plm_device_free(plm_test_ctx, device_a));
  PLM_CHECK_OK(plm_device_free(plm_test_ctx, device_b));
  free(source);
  free(result);
  free(expected);
}

START_TEST(test_copies_and_memset_round_trip) {
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  const size_t sizes[] = {1, 3, 255, 4096, 65537, (1u << 20) + 3};
  const size_t offsets[] = {0, 1, 13};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
      round_trip(stream, sizes[s], offsets[o]);
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_zero_byte_copies_are_no_ops) {
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  PLM_CHECK_OK(plm_stream_memcpy(stream, NULL, NULL, 0, PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_stream_memset(stream, NULL, 0, 0));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* A callback enqueued after a copy sees the copy's result, and one enqueued before
 * a copy runs before it: callbacks are in stream order with the copies. */
typedef struct copy_probe {
  const unsigned char *host;
  unsigned char expected;
  atomic_int matched;
} copy_probe;

static void probe_first_byte(void *user) {
  copy_probe *probe = user;
  atomic_store(&probe->matched, probe->host[0] == probe->expected);
}

START_TEST(test_host_callbacks_run_in_stream_order_with_copies) {
  enum { BYTES = 1 << 16 };
  unsigned char *host_in = malloc(BYTES), *host_out = malloc(BYTES);
  ck_assert(host_in && host_out);
  memset(host_in, 0x11, BYTES);
  memset(host_out, 0x00, BYTES);
  void *device = NULL;
  PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, BYTES, &device));
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));

  copy_probe before = {.host = host_out, .expected = 0x00};
  copy_probe after = {.host = host_out, .expected = 0x11};
  atomic_init(&before.matched, 0);
  atomic_init(&after.matched, 0);
  PLM_CHECK_OK(plm_stream_memcpy(stream, device, host_in, BYTES, PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, probe_first_byte, &before));
  PLM_CHECK_OK(plm_stream_memcpy(stream, host_out, device, BYTES, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, probe_first_byte, &after));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  ck_assert_msg(atomic_load(&before.matched), "callback ran after a copy enqueued behind it");
  ck_assert_msg(atomic_load(&after.matched), "callback ran before the copy enqueued ahead of it");

  PLM_CHECK_OK(plm_stream_destroy(stream));
  PLM_CHECK_OK(plm_device_free(plm_test_ctx, device));
  free(host_in);
  free(host_out);
}
END_TEST

/* ---- several threads on one stream --------------------------------------------------- */

enum { ENQUEUE_THREADS = 4, ENQUEUES_PER_THREAD = 5000 };

typedef struct producer {
  plm_stream *stream;
  int id;
  int last_seen; /* written only by the stream's callbacks, in order */
  atomic_int out_of_order;
  atomic_int failures;
} producer;

typedef struct producer_ticket {
  producer *owner;
  int sequence;
} producer_ticket;

static producer_ticket tickets[ENQUEUE_THREADS][ENQUEUES_PER_THREAD];

static void check_sequence(void *user) {
  producer_ticket *ticket = user;
  producer *owner = ticket->owner;
  if (ticket->sequence != owner->last_seen + 1) atomic_fetch_add(&owner->out_of_order, 1);
  owner->last_seen = ticket->sequence;
}

static void *produce(void *arg) {
  producer *self = arg;
  for (int i = 0; i < ENQUEUES_PER_THREAD; i++) {
    tickets[self->id][i] = (producer_ticket){.owner = self, .sequence = i};
    if (plm_stream_enqueue_host(self->stream, check_sequence, &tickets[self->id][i]) != PLM_OK)
      atomic_fetch_add(&self->failures, 1);
  }
  return NULL;
}

START_TEST(test_threads_share_a_stream_and_keep_their_order) {
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  static producer producers[ENQUEUE_THREADS];
  pthread_t threads[ENQUEUE_THREADS];
  for (int t = 0; t < ENQUEUE_THREADS; t++) {
    producers[t] = (producer){.stream = stream, .id = t, .last_seen = -1};
    atomic_init(&producers[t].out_of_order, 0);
    atomic_init(&producers[t].failures, 0);
    ck_assert_int_eq(pthread_create(&threads[t], NULL, produce, &producers[t]), 0);
  }
  for (int t = 0; t < ENQUEUE_THREADS; t++) pthread_join(threads[t], NULL);
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  for (int t = 0; t < ENQUEUE_THREADS; t++) {
    ck_assert_int_eq(atomic_load(&producers[t].failures), 0);
    ck_assert_int_eq(atomic_load(&producers[t].out_of_order), 0);
    ck_assert_int_eq(producers[t].last_seen, ENQUEUES_PER_THREAD - 1);
  }
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* ---- bad input -------------------------------------------------------------------------- */

START_TEST(test_bad_input_is_reported) {
  plm_stream *stream = NULL;
  PLM_CHECK_FAILS(plm_stream_create(NULL, 0, &stream), PLM_ERR_INVALID_ARG,
                  "plm_stream_create: ctx is NULL");
  PLM_CHECK_FAILS(plm_stream_create(plm_test_ctx, 0, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  PLM_CHECK_FAILS(plm_stream_create(plm_test_ctx, 0x9, &stream), PLM_ERR_INVALID_ARG,
                  "plm_stream_create: flags 0x9 has unknown bits");
  ck_assert_ptr_null(stream);
  PLM_CHECK_FAILS(
      plm_stream_create(plm_test_ctx, PLM_STREAM_PRIORITY_HIGH | PLM_STREAM_PRIORITY_LOW, &stream),
      PLM_ERR_INVALID_ARG, "both high and low priority");

  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  unsigned char host[64] = {0};
  void *device = NULL;
  PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, 64, &device));
  unsigned char *dev = device;

  PLM_CHECK_FAILS(plm_stream_synchronize(NULL), PLM_ERR_INVALID_ARG, "stream is NULL");
  bool finished;
  PLM_CHECK_FAILS(plm_stream_query(NULL, &finished), PLM_ERR_INVALID_ARG, "stream is NULL");
  PLM_CHECK_FAILS(plm_stream_query(stream, NULL), PLM_ERR_INVALID_ARG, "finished is NULL");
  plm_context *owner;
  PLM_CHECK_FAILS(plm_stream_context(NULL, &owner), PLM_ERR_INVALID_ARG, "stream is NULL");
  PLM_CHECK_FAILS(plm_stream_context(stream, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  unsigned flags;
  PLM_CHECK_FAILS(plm_stream_flags(NULL, &flags), PLM_ERR_INVALID_ARG, "stream is NULL");
  PLM_CHECK_FAILS(plm_stream_flags(stream, NULL), PLM_ERR_INVALID_ARG, "out is NULL");

  PLM_CHECK_FAILS(plm_stream_memcpy(NULL, dev, host, 8, PLM_COPY_HOST_TO_DEVICE),
                  PLM_ERR_INVALID_ARG, "plm_stream_memcpy: stream is NULL");
  PLM_CHECK_FAILS(plm_stream_memcpy(stream, NULL, host, 8, PLM_COPY_HOST_TO_DEVICE),
                  PLM_ERR_INVALID_ARG, "dst is NULL");
  PLM_CHECK_FAILS(plm_stream_memcpy(stream, dev, NULL, 8, PLM_COPY_HOST_TO_DEVICE),
                  PLM_ERR_INVALID_ARG, "src is NULL");
  PLM_CHECK_FAILS(plm_stream_memcpy(stream, dev, host, 8, (plm_copy_kind)7), PLM_ERR_INVALID_ARG,
                  "kind 7 is not a plm_copy_kind");
  PLM_CHECK_FAILS(plm_stream_memcpy(stream, dev, host, SIZE_MAX, PLM_COPY_HOST_TO_DEVICE),
                  PLM_ERR_INVALID_ARG, "runs past the end of the address space");
  PLM_CHECK_FAILS(plm_stream_memcpy(stream, dev + 8, dev, 16, PLM_COPY_DEVICE_TO_DEVICE),
                  PLM_ERR_INVALID_ARG, "overlap");

  PLM_CHECK_FAILS(plm_stream_memset(NULL, dev, 0, 8), PLM_ERR_INVALID_ARG, "stream is NULL");
  PLM_CHECK_FAILS(plm_stream_memset(stream, NULL, 0, 8), PLM_ERR_INVALID_ARG, "dst is NULL");
  PLM_CHECK_FAILS(plm_stream_memset(stream, dev, 0, SIZE_MAX - 4), PLM_ERR_INVALID_ARG,
                  "runs past the end of the address space");

  PLM_CHECK_FAILS(plm_stream_enqueue_host(NULL, set_flag, NULL), PLM_ERR_INVALID_ARG,
                  "stream is NULL");
  PLM_CHECK_FAILS(plm_stream_enqueue_host(stream, NULL, NULL), PLM_ERR_INVALID_ARG, "fn is NULL");

  plm_event *event = NULL;
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, 0, &event));
  PLM_CHECK_FAILS(plm_stream_wait_event(NULL, event), PLM_ERR_INVALID_ARG, "stream is NULL");
  PLM_CHECK_FAILS(plm_stream_wait_event(stream, NULL), PLM_ERR_INVALID_ARG, "event is NULL");

  /* An event of another context. */
  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_event *foreign = NULL;
  PLM_CHECK_OK(plm_event_create(other, 0, &foreign));
  PLM_CHECK_FAILS(plm_stream_wait_event(stream, foreign), PLM_ERR_INVALID_ARG,
                  "event belongs to another context");
  PLM_CHECK_OK(plm_event_destroy(foreign));
  PLM_CHECK_OK(plm_context_destroy(other));

  /* The stream is still usable after all of that. */
  PLM_CHECK_OK(plm_stream_memcpy(stream, dev, host, 64, PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_stream_synchronize(stream));

  PLM_CHECK_OK(plm_event_destroy(event));
  PLM_CHECK_OK(plm_device_free(plm_test_ctx, device));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* ---- host callbacks that call plume ---------------------------------------------------- */

typedef struct callback_calls {
  plm_stream *other, *made;
  void *memory;
  plm_event *event;
  plm_status memset_status, query_status, create_status;
  char message[256];
} callback_calls;

static void call_plume_from_callback(void *user) {
  callback_calls *calls = user;
  calls->memset_status = plm_stream_memset(calls->other, calls->memory, 0, 64);
  snprintf(calls->message, sizeof calls->message, "%s", plm_last_error());
  bool complete = false;
  calls->query_status = plm_event_query(calls->event, &complete);
  calls->create_status = plm_stream_create(plm_test_ctx, 0, &calls->made);
}

/* On cuda a host function may make no CUDA call, so every plume call that would reach
 * CUDA from one is refused with PLM_ERR_INVALID_STATE (the host backend runs the ones
 * that do not wait: the calls here). */
START_TEST(test_cuda_calls_from_a_host_callback_are_refused) {
  callback_calls calls = {0};
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &calls.other));
  PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, 64, &calls.memory));
  PLM_CHECK_OK(plm_event_create(plm_test_ctx, 0, &calls.event));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, call_plume_from_callback, &calls));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  PLM_CHECK_OK(plm_stream_synchronize(calls.other));
  if (plm_test_backend == PLM_BACKEND_CUDA) {
    ck_assert_int_eq(calls.memset_status, PLM_ERR_INVALID_STATE);
    ck_assert_msg(strstr(calls.message, "where CUDA allows no CUDA call"), "%s", calls.message);
    ck_assert_int_eq(calls.query_status, PLM_ERR_INVALID_STATE);
    ck_assert_int_eq(calls.create_status, PLM_ERR_INVALID_STATE);
  } else {
    ck_assert_int_eq(calls.memset_status, PLM_OK);
    ck_assert_int_eq(calls.query_status, PLM_OK);
    ck_assert_int_eq(calls.create_status, PLM_OK);
  }
  PLM_CHECK_OK(plm_stream_destroy(calls.made)); /* NULL (a no-op) where it was refused */
  PLM_CHECK_OK(plm_event_destroy(calls.event));
  PLM_CHECK_OK(plm_device_free(plm_test_ctx, calls.memory));
  PLM_CHECK_OK(plm_stream_destroy(calls.other));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* ---- graphs (cuda) ------------------------------------------------------------------ */

static void count_call(void *user) {
  atomic_fetch_add((atomic_int *)user, 1);
}

/* A host callback captured into a graph runs once per replay: the cuda backend's
 * trampoline keeps its record for as long as the graph may be launched. */
START_TEST(test_captured_host_callback_runs_at_every_replay) {
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  if (!plm__stream_graph_supported(plm_test_ctx)) {
    PLM_CHECK_FAILS(plm__stream_graph_capture_begin(stream), PLM_ERR_UNSUPPORTED, "");
    PLM_CHECK_OK(plm_stream_destroy(stream));
    printf("SKIP test_captured_host_callback_runs_at_every_replay: no graphs on this backend\n");
    return;
  }
  atomic_int calls;
  atomic_init(&calls, 0);
  void *memory = NULL;
  PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, 4096, &memory));
  PLM_CHECK_OK(plm__stream_graph_capture_begin(stream));
  PLM_CHECK_OK(plm_stream_memset(stream, memory, 1, 4096));
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, count_call, &calls));
  plm__stream_graph *graph = NULL;
  PLM_CHECK_OK(plm__stream_graph_capture_end(stream, &graph));
  ck_assert_int_eq(atomic_load(&calls), 0); /* recorded, not run */
  for (int i = 0; i < 3; i++) PLM_CHECK_OK(plm__stream_graph_launch(graph, stream));
  /* The same callback outside capture, between the replays and after them. */
  PLM_CHECK_OK(plm_stream_enqueue_host(stream, count_call, &calls));
  PLM_CHECK_OK(plm__stream_graph_launch(graph, stream));
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  ck_assert_int_eq(atomic_load(&calls), 5);
  plm__stream_graph_destroy(graph);
  PLM_CHECK_OK(plm_device_free(plm_test_ctx, memory));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* capture_run and capture_between_gates: tests/capture_thread.h. */

/* plm_context_synchronize while another thread captures one of the context's streams:
 * it waits for the others and passes the capturing one over (cudaDeviceSynchronize
 * would fail, or break the capture); the capture still ends in a graph that runs. */
START_TEST(test_context_synchronize_while_another_thread_captures) {
  capture_run run = {0};
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &run.stream));
  if (!plm__stream_graph_supported(plm_test_ctx)) {
    PLM_CHECK_OK(plm_stream_destroy(run.stream));
    printf("SKIP test_context_synchronize_while_another_thread_captures: no graphs here\n");
    return;
  }
  plm_stream *other = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &other));
  void *memory = NULL;
  PLM_CHECK_OK(plm_device_alloc(plm_test_ctx, 1 << 20, &memory));
  gate_init(&run.begun, GATE_TIMEOUT_MS);
  gate_init(&run.may_end, GATE_TIMEOUT_MS);
  pthread_t capturer;
  ck_assert_int_eq(pthread_create(&capturer, NULL, capture_between_gates, &run), 0);
  ck_assert(gate_wait(&run.begun));
  PLM_CHECK_OK(run.begin);
  PLM_CHECK_OK(plm_stream_memset(run.stream, memory, 2, 1 << 20)); /* recorded */
  PLM_CHECK_OK(plm_stream_memset(other, memory, 3, 1 << 20));      /* runs */
  plm_status synced = plm_context_synchronize(plm_test_ctx);
  char message[256];
  snprintf(message, sizeof message, "%s", plm_last_error());
  bool other_finished = false;
  PLM_CHECK_OK(plm_stream_query(other, &other_finished));
  gate_open(&run.may_end);
  pthread_join(capturer, NULL);
  ck_assert_msg(synced == PLM_OK, "plm_context_synchronize during a capture: %s", message);
  ck_assert_msg(other_finished, "synchronize returned before the other stream finished");
  PLM_CHECK_OK(run.end);
  PLM_CHECK_OK(plm__stream_graph_launch(run.graph, run.stream));
  PLM_CHECK_OK(plm_stream_synchronize(run.stream));
  unsigned char byte = 0;
  PLM_CHECK_OK(plm_stream_memcpy(run.stream, &byte, memory, 1, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(run.stream));
  ck_assert_int_eq(byte, 2); /* the replay ran after the other stream's memset */
  plm__stream_graph_destroy(run.graph);
  gate_destroy(&run.begun);
  gate_destroy(&run.may_end);
  PLM_CHECK_OK(plm_device_free(plm_test_ctx, memory));
  PLM_CHECK_OK(plm_stream_destroy(other));
  PLM_CHECK_OK(plm_stream_destroy(run.stream));
}
END_TEST

static Suite *stream_suite(void) {
  Suite *suite = suite_create("stream");
  TCase *lifecycle = tcase_create("lifecycle");
  plm_test_add_fixture(lifecycle);
  tcase_add_test(lifecycle, test_create_destroy_with_each_flag);
  tcase_add_test(lifecycle, test_empty_stream_is_finished);
  tcase_add_test(lifecycle, test_native_handle);
  tcase_add_test(lifecycle, test_destroy_finishes_pending_work);
  tcase_add_test(lifecycle, test_query_reports_pending_work_without_blocking);
  suite_add_tcase(suite, lifecycle);

  TCase *order = tcase_create("order");
  plm_test_add_fixture(order);
  tcase_add_test(order, test_tasks_on_one_stream_run_in_order);
  tcase_add_test(order, test_two_streams_run_concurrently);
  tcase_add_test(order, test_threads_share_a_stream_and_keep_their_order);
  suite_add_tcase(suite, order);

  TCase *copies = tcase_create("copies");
  plm_test_add_fixture(copies);
  tcase_add_test(copies, test_copies_and_memset_round_trip);
  tcase_add_test(copies, test_zero_byte_copies_are_no_ops);
  tcase_add_test(copies, test_host_callbacks_run_in_stream_order_with_copies);
  suite_add_tcase(suite, copies);

  TCase *callbacks = tcase_create("callbacks");
  plm_test_add_fixture(callbacks);
  tcase_add_test(callbacks, test_cuda_calls_from_a_host_callback_are_refused);
  suite_add_tcase(suite, callbacks);

  TCase *graphs = tcase_create("graphs");
  plm_test_add_fixture(graphs);
  tcase_add_test(graphs, test_captured_host_callback_runs_at_every_replay);
  tcase_add_test(graphs, test_context_synchronize_while_another_thread_captures);
  suite_add_tcase(suite, graphs);

  TCase *bad_input = tcase_create("bad_input");
  plm_test_add_fixture(bad_input);
  tcase_add_test(bad_input, test_bad_input_is_reported);
  suite_add_tcase(suite, bad_input);
  return suite;
}

int main(void) {
  return plm_test_main(stream_suite);
}

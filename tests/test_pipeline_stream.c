/* tests/test_pipeline_stream.c: plm_pipeline_run_stream (plume/pipeline.h).
 *
 *   order     every frame reaches the sink exactly once, in order, with its own
 *             results, for 1..4 frames in flight; the source's end and max_frames;
 *   results   two detection chains (one with entropy and label, whose scratch is in the
 *             workspace) streamed equal plm_pipeline_run frame by frame, planned and
 *             eager (PLM_PLAN_ALLOCATE_PER_RUN, PLM_PLAN_SYNCHRONOUS_STEPS), with the
 *             source inline and on its own thread;
 *   failures  a source or sink failing at frame k: frames 0..k-1 delivered, none after,
 *             failed_frame k, the message names k; the pipeline runs again afterwards;
 *   ahead     the source on a thread of its own (source_ahead 1, 3, 8): the outputs of
 *             the inline source, its calls on one other thread in frame order, the sink
 *             on the caller's; end and max_frames never passed; a source's failure
 *             reads as inline; a sink's or an enqueueing's failure stops and joins the
 *             source's thread within its bound;
 *   report    frames/s, latencies, graphs (refused with a note where there are none;
 *             on cuda every frame after the warm-ups replays, with or without steps
 *             that take scratch), the copy/compute timing and its overlap bounds;
 *   errors    NULL arguments, a negative max_frames, source_ahead out of range, a
 *             pipeline not compiled.
 * The fixture's context teardown fails any test that leaves an object behind.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { H = 23, W = 37, PIXELS = H * W };

/* Frame k's pixel i: distinct per frame, so a frame delivered as another is caught. */
static uint16_t pixel(int64_t frame, int64_t i) {
  return (uint16_t)((frame * 7919 + i * 31) % 1000);
}

/* ---- a threshold pipeline: output pixel = input > 500 -------------------------------------- */

static plm_pipeline *threshold_pipeline(int frames_in_flight) {
  const int64_t dims[2] = {H, W};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(
      plm_pipeline_parse(plm_test_ctx, "threshold value=500", PLM_DTYPE_U16, 2, dims, &pl));
  plm_plan_config cfg = {.frames_in_flight = frames_in_flight};
  PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
  return pl;
}

typedef struct feed {
  int64_t frames;         /* the source ends before this frame (-1: never) */
  int64_t fail_source;    /* the source fails at this frame (-1: never) */
  bool fail_with_message; /* ... as a failed plume call does, its message set */
  int64_t fail_sink;      /* the sink fails at this frame (-1: never) */
  int64_t slow_source_us; /* the source sleeps this long per frame */
  int64_t slow_sink_us;   /* the sink sleeps this long per frame */
  uint8_t *kept;          /* when not NULL: every frame's mask, PIXELS each */
  /* What the source saw (written by the source's calls only). */
  pthread_t caller;           /* the thread that runs the stream */
  pthread_t source_thread;    /* the thread of the source's first call */
  int64_t sourced;            /* source calls */
  int64_t highest_asked;      /* the highest frame asked for (-1: none) */
  bool source_out_of_order;   /* a call not for the frame after the previous call's */
  bool source_threads_differ; /* calls on more than one thread */
  bool source_on_caller;      /* a call on the caller's thread */
  /* What the sink saw (written by the sink only). */
  int64_t delivered; /* frames the sink has seen, each checked */
  int64_t next;      /* the frame the sink expects next */
  bool wrong;        /* a frame out of order or with wrong results */
  bool sink_off_caller;
} feed;

/* Where and in what order the source is called. */
static void note_source_call(feed *f, int64_t frame) {
  const pthread_t self = pthread_self();
  if (f->sourced == 0) f->source_thread = self;
  f->source_threads_differ |= !pthread_equal(self, f->source_thread);
  f->source_on_caller |= pthread_equal(self, f->caller) != 0;
  f->source_out_of_order |= frame != f->highest_asked + 1;
  f->highest_asked = frame;
  f->sourced++;
}

static plm_status threshold_source(void *user, int64_t frame, void *const *inputs, bool *end) {
  feed *f = user;
  note_source_call(f, frame);
  if (f->slow_source_us) plm_test_sleep_ms((double)f->slow_source_us / 1000.0);
  if (frame == f->fail_source) {
    plm_stream *stream = NULL;
    return f->fail_with_message ? plm_stream_create(NULL, 0, &stream) : PLM_ERR_NOT_FOUND;
  }
  if (f->frames >= 0 && frame >= f->frames) {
    *end = true;
    return PLM_OK;
  }
  uint16_t *in = inputs[0];
  for (int64_t i = 0; i < PIXELS; i++) in[i] = pixel(frame, i);
  return PLM_OK;
}

static plm_status threshold_sink(void *user, int64_t frame, const void *const *outputs) {
  feed *f = user;
  f->sink_off_caller |= !pthread_equal(pthread_self(), f->caller);
  if (frame == f->fail_sink) return PLM_ERR_INVALID_STATE;
  if (frame != f->next) f->wrong = true;
  const uint8_t *mask = outputs[0];
  for (int64_t i = 0; i < PIXELS; i++)
    if (mask[i] != (pixel(frame, i) > 500)) f->wrong = true;
  if (f->kept) memcpy(f->kept + frame * PIXELS, mask, PIXELS);
  if (f->slow_sink_us) plm_test_sleep_ms((double)f->slow_sink_us / 1000.0);
  f->next = frame + 1;
  f->delivered++;
  return PLM_OK;
}

static feed feed_of(int64_t frames) {
  return (feed){.frames = frames,
                .fail_source = -1,
                .fail_sink = -1,
                .caller = pthread_self(),
                .highest_asked = -1};
}

/* Options with the source `ahead` frames ahead on a thread of its own (0: inline). */
static plm_run_stream_options ahead_by(int ahead) {
  plm_run_stream_options options = plm_run_stream_options_default();
  options.source_ahead = ahead;
  return options;
}

/* Whether the source was called as source_ahead says: on the caller's thread for 0, on
 * one other thread otherwise; always in frame order. */
static void check_source_thread(const feed *f, int ahead) {
  ck_assert_msg(!f->source_out_of_order, "ahead %d: the source was called out of order", ahead);
  ck_assert_msg(!f->sink_off_caller, "ahead %d: the sink ran off the calling thread", ahead);
  if (f->sourced == 0) return;
  ck_assert_msg(!f->source_threads_differ, "ahead %d: the source ran on several threads", ahead);
  if (ahead == 0)
    ck_assert_msg(pthread_equal(f->source_thread, f->caller), "ahead 0: the source ran elsewhere");
  else
    ck_assert_msg(!f->source_on_caller, "ahead %d: the source ran on the calling thread", ahead);
}

/* ---- order ----------------------------------------------------------------------------------- */

START_TEST(test_every_frame_once_and_in_order) {
  for (int k = 1; k <= 4; k++) {
    plm_pipeline *pl = threshold_pipeline(k);
    feed f = feed_of(41);
    plm_run_stream_report report;
    PLM_CHECK_OK(plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, NULL, &report));
    ck_assert_msg(!f.wrong, "K=%d: a frame out of order or wrong", k);
    ck_assert_int_eq(f.delivered, 41);
    ck_assert_int_eq(report.frames_delivered, 41);
    ck_assert_int_eq(report.failed_frame, -1);
    ck_assert_int_eq(f.sourced, 42); /* the 42nd call said end */
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

START_TEST(test_max_frames_and_a_slow_sink) {
  plm_pipeline *pl = threshold_pipeline(3);
  feed f = feed_of(-1); /* a source that never ends */
  f.slow_sink_us = 2000;
  plm_run_stream_options options = plm_run_stream_options_default();
  options.max_frames = 12;
  plm_run_stream_report report;
  PLM_CHECK_OK(
      plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report));
  ck_assert(!f.wrong);
  ck_assert_int_eq(f.delivered, 12);
  ck_assert_int_eq(f.sourced, 12); /* back-pressure: the source never ran ahead */
  /* The same pipeline streams again, and a zero-frame run delivers nothing. */
  f = feed_of(0);
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, NULL, &report));
  ck_assert_int_eq(report.frames_delivered, 0);
  ck_assert_int_eq(f.delivered, 0);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* A NULL sink discards the results (what a benchmark wants). */
START_TEST(test_without_a_sink) {
  plm_pipeline *pl = threshold_pipeline(2);
  feed f = feed_of(9);
  plm_run_stream_report report;
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, threshold_source, NULL, &f, NULL, &report));
  ck_assert_int_eq(report.frames_delivered, 9);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* ---- results: a detection chain, streamed and run frame by frame ---------------------------- */

enum { CHAIN_FRAMES = 7 };

typedef struct chain_feed {
  uint16_t *frames; /* CHAIN_FRAMES x PIXELS */
  size_t out_bytes[2];
  uint8_t *expected[2]; /* per output: CHAIN_FRAMES results from plm_pipeline_run */
  int64_t delivered;
  bool wrong;
} chain_feed;

static plm_status chain_source(void *user, int64_t frame, void *const *inputs, bool *end) {
  chain_feed *c = user;
  if (frame >= CHAIN_FRAMES) {
    *end = true;
    return PLM_OK;
  }
  memcpy(inputs[0], c->frames + frame * PIXELS, PIXELS * sizeof(uint16_t));
  return PLM_OK;
}

/* The count (output 1, i32) equal, and the table's rows in use (the rest of the table
 * is left untouched by regions, so it holds whatever the buffer held). */
static plm_status chain_sink(void *user, int64_t frame, const void *const *outputs) {
  chain_feed *c = user;
  const uint8_t *expected_count = c->expected[1] + (size_t)frame * c->out_bytes[1];
  if (memcmp(outputs[1], expected_count, c->out_bytes[1])) c->wrong = true;
  int32_t count;
  memcpy(&count, expected_count, sizeof count);
  const size_t row_bytes = PLM_REGION_COLUMNS * sizeof(double);
  size_t used = (size_t)count * row_bytes;
  if (used > c->out_bytes[0]) used = c->out_bytes[0];
  if (count < 1 || memcmp(outputs[0], c->expected[0] + (size_t)frame * c->out_bytes[0], used))
    c->wrong = true;
  c->delivered++;
  return PLM_OK;
}

/* Two chains: the second's entropy and label take scratch (from the workspace, so on cuda
 * its frames after the warm-ups are graph replays too). */
static const char *const CHAINS[] = {
    "conv2d kernel=gauss:3:1.0 pad=same border=replicate ! threshold value=520 ! label "
    "connectivity=8 ! regions capacity=200",
    "sobel ! entropy window=5 bins=16 range=auto ! threshold value=3 ! label connectivity=4 ! "
    "regions capacity=200"};

static void check_streamed_chain(const char *chain) {
  const int64_t dims[2] = {H, W};
  chain_feed c = {0};
  c.frames = malloc(CHAIN_FRAMES * PIXELS * sizeof *c.frames);
  ck_assert_ptr_nonnull(c.frames);
  uint64_t state = 0x9e3779b97f4a7c15u;
  for (int64_t i = 0; i < CHAIN_FRAMES * PIXELS; i++)
    c.frames[i] = (uint16_t)(plm_test_random(&state) % 1024);

  /* The expected results: plm_pipeline_run on one frame at a time. */
  plm_pipeline *one = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, chain, PLM_DTYPE_U16, 2, dims, &one));
  PLM_CHECK_OK(plm_pipeline_compile(one, NULL));
  int outputs = 0;
  PLM_CHECK_OK(plm_pipeline_io_count(one, NULL, &outputs));
  ck_assert_int_eq(outputs, 2);
  plm_tensor in, out[2];
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &in));
  for (int o = 0; o < 2; o++) {
    plm_shape shape;
    PLM_CHECK_OK(plm_pipeline_output_shape(one, o, &shape));
    PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, shape.dtype, shape.ndim,
                                  shape.dims, &out[o]));
    c.out_bytes[o] = plm_tensor_bytes(&out[o]);
    /* Copied whole below, and regions writes its table's first count rows only. */
    PLM_CHECK_OK(plm_stream_memset(plm_test_stream, out[o].data, 0, c.out_bytes[o]));
    c.expected[o] = malloc(CHAIN_FRAMES * c.out_bytes[o]);
    ck_assert_ptr_nonnull(c.expected[o]);
  }
  for (int64_t k = 0; k < CHAIN_FRAMES; k++) {
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, c.frames + k * PIXELS,
                                   PIXELS * sizeof(uint16_t), PLM_COPY_HOST_TO_DEVICE));
    PLM_CHECK_OK(plm_pipeline_run(one, &in, out, plm_test_stream));
    for (int o = 0; o < 2; o++)
      PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, c.expected[o] + k * c.out_bytes[o],
                                     out[o].data, c.out_bytes[o], PLM_COPY_DEVICE_TO_HOST));
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  for (int o = 0; o < 2; o++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out[o]));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_pipeline_destroy(one));

  /* Streamed with 3 frames in flight, then eager (plume/pipeline.h's plan flags): the
   * intermediates allocated per run, the host waiting after each step. */
  const plm_plan_config configs[] = {
      {.frames_in_flight = 3},
      {.frames_in_flight = 1, .flags = PLM_PLAN_ALLOCATE_PER_RUN | PLM_PLAN_SYNCHRONOUS_STEPS},
      {.frames_in_flight = 2, .flags = PLM_PLAN_ALLOCATE_PER_RUN}};
  for (size_t v = 0; v < sizeof configs / sizeof configs[0]; v++) {
    plm_pipeline *streamed = NULL;
    PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, chain, PLM_DTYPE_U16, 2, dims, &streamed));
    PLM_CHECK_OK(plm_pipeline_compile(streamed, &configs[v]));
    plm_shape count_shape;
    PLM_CHECK_OK(plm_pipeline_output_shape(streamed, 1, &count_shape));
    ck_assert_int_eq(count_shape.dtype, PLM_DTYPE_I32);
    plm_run_stream_report report;
    for (int ahead = 0; ahead <= 2; ahead += 2) { /* the source inline, then on its thread */
      const plm_run_stream_options options = ahead_by(ahead);
      c.delivered = 0;
      c.wrong = false;
      PLM_CHECK_OK(
          plm_pipeline_run_stream(streamed, chain_source, chain_sink, &c, &options, &report));
      ck_assert_int_eq(report.frames_delivered, CHAIN_FRAMES);
      ck_assert_int_eq(c.delivered, CHAIN_FRAMES);
      ck_assert_msg(!c.wrong,
                    "config %zu, ahead %d: a streamed frame differs from plm_pipeline_run's", v,
                    ahead);
    }
    /* Eager plans are never captured; graphs were asked for (the default options). */
    if (configs[v].flags && plm_test_backend == PLM_BACKEND_CUDA)
      ck_assert_msg(strstr(report.graphs_note, "PLM_PLAN_") != NULL, "%s", report.graphs_note);
    ck_assert(!configs[v].flags || report.graph_replays == 0);
    PLM_CHECK_OK(plm_pipeline_destroy(streamed));
  }
  for (int o = 0; o < 2; o++) free(c.expected[o]);
  free(c.frames);
}

START_TEST(test_streamed_results_equal_runs_one_by_one) {
  for (size_t i = 0; i < sizeof CHAINS / sizeof CHAINS[0]; i++) check_streamed_chain(CHAINS[i]);
}
END_TEST

/* ---- failures ----------------------------------------------------------------------------------
 */

START_TEST(test_a_failing_source_stops_the_run_at_its_frame) {
  for (int k = 1; k <= 4; k++) {
    plm_pipeline *pl = threshold_pipeline(k);
    feed f = feed_of(100);
    f.fail_source = 9;
    plm_run_stream_report report;
    PLM_CHECK_FAILS(
        plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, NULL, &report),
        PLM_ERR_NOT_FOUND, "frame 9: the source failed");
    ck_assert_msg(strstr(plm_last_error(), "plm_pipeline_run_stream: ") == plm_last_error(), "%s",
                  plm_last_error());
    ck_assert(!f.wrong);
    ck_assert_int_eq(f.delivered, 9); /* 0..8 */
    ck_assert_int_eq(report.frames_delivered, 9);
    ck_assert_int_eq(report.failed_frame, 9);
    /* The pipeline is still usable. */
    f = feed_of(5);
    PLM_CHECK_OK(plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, NULL, &report));
    ck_assert_int_eq(f.delivered, 5);
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

START_TEST(test_a_failing_sink_stops_the_run_at_its_frame) {
  for (int k = 1; k <= 4; k++) {
    plm_pipeline *pl = threshold_pipeline(k);
    feed f = feed_of(100);
    f.fail_sink = 6;
    plm_run_stream_report report;
    PLM_CHECK_FAILS(
        plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, NULL, &report),
        PLM_ERR_INVALID_STATE, "frame 6: the sink failed");
    ck_assert(!f.wrong);
    ck_assert_int_eq(f.delivered, 6);
    ck_assert_int_eq(report.frames_delivered, 6);
    ck_assert_int_eq(report.failed_frame, 6);
    ck_assert_int_le(f.sourced, 6 + k); /* at most K frames ahead of the failing one */
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

/* A failure at frame 0, before anything was delivered. */
START_TEST(test_a_failure_at_the_first_frame) {
  plm_pipeline *pl = threshold_pipeline(2);
  feed f = feed_of(10);
  f.fail_sink = 0;
  plm_run_stream_report report;
  PLM_CHECK_FAILS(plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, NULL, &report),
                  PLM_ERR_INVALID_STATE, "frame 0");
  ck_assert_int_eq(report.frames_delivered, 0);
  ck_assert_int_eq(report.failed_frame, 0);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* ---- the source on its own thread (source_ahead) ------------------------------------------ */

static const int AHEADS[] = {1, 3, 8};
enum { AHEAD_COUNT = sizeof AHEADS / sizeof AHEADS[0], AHEAD_FRAMES = 41 };

/* Every frame once, in order, with the results the inline source gives; the source on
 * one other thread, called in frame order; the sink on the caller's. */
START_TEST(test_ahead_delivers_what_inline_does) {
  uint8_t *inline_masks = malloc(AHEAD_FRAMES * PIXELS), *masks = malloc(AHEAD_FRAMES * PIXELS);
  ck_assert_ptr_nonnull(inline_masks);
  ck_assert_ptr_nonnull(masks);
  for (int k = 1; k <= 3; k += 2) {
    plm_pipeline *pl = threshold_pipeline(k);
    for (int a = -1; a < AHEAD_COUNT; a++) { /* -1: inline, the reference */
      const int ahead = a < 0 ? 0 : AHEADS[a];
      feed f = feed_of(AHEAD_FRAMES);
      f.kept = a < 0 ? inline_masks : masks;
      memset(f.kept, 0xa5, AHEAD_FRAMES * PIXELS);
      const plm_run_stream_options options = ahead_by(ahead);
      plm_run_stream_report report;
      PLM_CHECK_OK(
          plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report));
      ck_assert_msg(!f.wrong, "K=%d ahead %d: a frame out of order or wrong", k, ahead);
      ck_assert_int_eq(f.delivered, AHEAD_FRAMES);
      ck_assert_int_eq(report.frames_delivered, AHEAD_FRAMES);
      ck_assert_int_eq(report.failed_frame, -1);
      ck_assert_int_eq(f.sourced, AHEAD_FRAMES + 1); /* the last call said end */
      check_source_thread(&f, ahead);
      ck_assert(report.source_p50_us >= 0.0 && report.source_p50_us <= report.source_p99_us);
      ck_assert(report.submit_p50_us > 0.0);
      if (a >= 0)
        ck_assert_msg(memcmp(masks, inline_masks, AHEAD_FRAMES * PIXELS) == 0,
                      "K=%d ahead %d: the outputs differ from the inline source's", k, ahead);
    }
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  free(masks);
  free(inline_masks);
}
END_TEST

/* End at frame 7: frames 0..6 delivered and the source never asked again after it said
 * end; max_frames: never asked for frame max_frames, though it could run ahead. */
START_TEST(test_ahead_end_and_max_frames) {
  plm_pipeline *pl = threshold_pipeline(2);
  for (int a = 0; a < AHEAD_COUNT; a++) {
    plm_run_stream_options options = ahead_by(AHEADS[a]);
    plm_run_stream_report report;
    feed f = feed_of(7);
    PLM_CHECK_OK(
        plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report));
    ck_assert(!f.wrong);
    ck_assert_int_eq(report.frames_delivered, 7);
    ck_assert_int_eq(f.delivered, 7);
    ck_assert_int_eq(f.sourced, 8);
    ck_assert_int_eq(f.highest_asked, 7);
    check_source_thread(&f, AHEADS[a]);

    f = feed_of(0); /* ends at once */
    PLM_CHECK_OK(
        plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report));
    ck_assert_int_eq(report.frames_delivered, 0);
    ck_assert_int_eq(f.sourced, 1);

    f = feed_of(-1); /* never ends; a slow sink lets the source run as far ahead as it may */
    f.slow_sink_us = 1000;
    options.max_frames = 12;
    PLM_CHECK_OK(
        plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report));
    ck_assert(!f.wrong);
    ck_assert_int_eq(f.delivered, 12);
    ck_assert_int_eq(f.sourced, 12);
    ck_assert_int_eq(f.highest_asked, 11);
    check_source_thread(&f, AHEADS[a]);
  }
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* A source failing at frame 9, with a message of its own (a failed plume call's) or
 * none: the same status and message as inline, frames 0..8 delivered, the source never
 * called again. The pipeline runs again afterwards. */
START_TEST(test_ahead_source_failure_reads_as_inline) {
  for (int k = 1; k <= 4; k++) {
    plm_pipeline *pl = threshold_pipeline(k);
    for (int with_message = 0; with_message <= 1; with_message++) {
      char inline_message[1024] = "";
      for (int a = -1; a < AHEAD_COUNT; a++) { /* -1: inline, the reference */
        const int ahead = a < 0 ? 0 : AHEADS[a];
        feed f = feed_of(100);
        f.fail_source = 9;
        f.fail_with_message = with_message;
        const plm_run_stream_options options = ahead_by(ahead);
        const plm_status expected = with_message ? PLM_ERR_INVALID_ARG : PLM_ERR_NOT_FOUND;
        plm_run_stream_report report;
        PLM_CHECK_FAILS(
            plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report),
            expected,
            with_message ? "plm_pipeline_run_stream: frame 9: the source failed: "
                           "plm_stream_create: ctx is NULL"
                         : "plm_pipeline_run_stream: frame 9: the source failed "
                           "(PLM_ERR_NOT_FOUND)");
        if (a < 0)
          snprintf(inline_message, sizeof inline_message, "%s", plm_last_error());
        else
          ck_assert_str_eq(plm_last_error(), inline_message);
        ck_assert(!f.wrong);
        ck_assert_int_eq(f.delivered, 9);
        ck_assert_int_eq(report.frames_delivered, 9);
        ck_assert_int_eq(report.failed_frame, 9);
        ck_assert_int_eq(f.sourced, 10);
        check_source_thread(&f, ahead);
        f = feed_of(5);
        PLM_CHECK_OK(
            plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report));
        ck_assert_int_eq(f.delivered, 5);
      }
    }
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
}
END_TEST

/* The source calls stop, and after the run returns the source is not called again:
 * its thread was joined (under TSan a late call would also be a race on the feed). */
static void check_source_stopped(feed *f) {
  const int64_t sourced = f->sourced;
  plm_test_sleep_ms(5.0);
  ck_assert_int_eq(f->sourced, sourced);
}

/* A sink failing at frame 6: its failure returned, frames 0..5 delivered, the source's
 * thread stopped and joined after at most K + N - 1 frames beyond 6. */
START_TEST(test_ahead_sink_failure_stops_the_source) {
  for (int k = 1; k <= 4; k++) {
    plm_pipeline *pl = threshold_pipeline(k);
    for (int a = 0; a < AHEAD_COUNT; a++) {
      feed f = feed_of(-1);
      f.fail_sink = 6;
      const plm_run_stream_options options = ahead_by(AHEADS[a]);
      plm_run_stream_report report;
      PLM_CHECK_FAILS(
          plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report),
          PLM_ERR_INVALID_STATE, "frame 6: the sink failed");
      ck_assert(!f.wrong);
      ck_assert_int_eq(f.delivered, 6);
      ck_assert_int_eq(report.frames_delivered, 6);
      ck_assert_int_eq(report.failed_frame, 6);
      ck_assert_int_le(f.highest_asked, 6 + k + AHEADS[a] - 1);
      check_source_thread(&f, AHEADS[a]);
      check_source_stopped(&f);
    }
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  /* A slow source, in a call when the sink fails: the call finishes, none follows. */
  plm_pipeline *pl = threshold_pipeline(2);
  feed f = feed_of(-1);
  f.fail_sink = 1;
  f.slow_source_us = 3000;
  const plm_run_stream_options options = ahead_by(3);
  plm_run_stream_report report;
  PLM_CHECK_FAILS(
      plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report),
      PLM_ERR_INVALID_STATE, "frame 1: the sink failed");
  ck_assert_int_eq(f.delivered, 1);
  ck_assert_int_le(f.highest_asked, 1 + 2 + 3 - 1);
  check_source_stopped(&f);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* Enqueueing frame 0 fails (an intermediate allocated per run does not fit the pool):
 * that failure is returned and the source's thread is stopped and joined. */
START_TEST(test_ahead_enqueue_failure_stops_the_source) {
  const int64_t dims[2] = {H, W};
  plm_pool *small = NULL;
  /* One chunk: room for the slot's input (1,702 bytes) and mask (851), each rounded up to
   * 256 bytes, not for sobel's f32 output (3,404) besides. */
  plm_pool_config pool_cfg = {
      .byte_limit = 4096, .min_chunk_bytes = 4096, .growth = PLM_POOL_GROW_FIXED};
  PLM_CHECK_OK(plm_pool_create(plm_test_ctx, &pool_cfg, &small));
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(
      plm_pipeline_parse(plm_test_ctx, "sobel ! threshold value=500", PLM_DTYPE_U16, 2, dims, &pl));
  plm_plan_config cfg = {.pool = small, .flags = PLM_PLAN_ALLOCATE_PER_RUN | PLM_PLAN_NO_FUSION};
  PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
  for (int ahead = 0; ahead <= 3; ahead += 3) {
    feed f = feed_of(50); /* ends, should the pool be larger than thought */
    const plm_run_stream_options options = ahead_by(ahead);
    plm_run_stream_report report;
    PLM_CHECK_FAILS(plm_pipeline_run_stream(pl, threshold_source, NULL, &f, &options, &report),
                    PLM_ERR_OUT_OF_MEMORY, "plm_pipeline_run_stream: frame 0: ");
    ck_assert_int_eq(report.failed_frame, 0);
    ck_assert_int_eq(report.frames_delivered, 0);
    ck_assert_int_le(f.highest_asked, ahead); /* frame 0 and up to N more */
    check_source_thread(&f, ahead);
    check_source_stopped(&f);
  }
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  PLM_CHECK_OK(plm_pool_destroy(small));
}
END_TEST

/* ---- the report --------------------------------------------------------------------------------
 */

START_TEST(test_the_report) {
  plm_pipeline *pl = threshold_pipeline(3);
  feed f = feed_of(30);
  plm_run_stream_options options = plm_run_stream_options_default();
  ck_assert(options.use_graphs);
  options.record_timing = true;
  plm_run_stream_report report;
  PLM_CHECK_OK(
      plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report));
  ck_assert_int_eq(report.frames_delivered, 30);
  ck_assert(report.seconds > 0.0);
  ck_assert(fabs(report.frames_per_s - 30.0 / report.seconds) < 1e-6 * report.frames_per_s);
  ck_assert(report.latency_p50_ms > 0.0);
  ck_assert(report.latency_p50_ms <= report.latency_p99_ms);
  ck_assert(report.copy_ms >= 0.0 && report.compute_ms >= 0.0);
  ck_assert(report.overlap_ms >= 0.0 && report.overlap_ms <= report.copy_ms + 1e-6);
  /* The host's enqueue time per frame: measured, and at most the frame's latency. */
  ck_assert(report.submit_p50_us > 0.0 && report.submit_p50_us <= report.submit_p99_us);
  ck_assert(report.submit_p50_us <= report.latency_p99_ms * 1e3);
  /* The source's calls (inline by default), measured apart from the enqueueing. */
  ck_assert(report.source_p50_us > 0.0 && report.source_p50_us <= report.source_p99_us);
  if (plm_test_backend == PLM_BACKEND_HOST) {
    ck_assert(!report.graphs_used);
    ck_assert_int_eq(report.graph_replays, 0);
    ck_assert_msg(strstr(report.graphs_note, "no graphs") != NULL, "%s", report.graphs_note);
  } else { /* a threshold plan takes no scratch: every frame after the warm-ups replays */
    ck_assert_msg(report.graphs_used, "%s", report.graphs_note);
    ck_assert_int_eq(report.graph_replays, 30 - 3);
  }
  /* Graphs off: no note, no replays. */
  options.use_graphs = false;
  f = feed_of(5);
  PLM_CHECK_OK(
      plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report));
  ck_assert_int_eq(report.graph_replays, 0);
  ck_assert_str_eq(report.graphs_note, "");
  /* Without record_timing: no timing events, no device figures; the host's enqueue time
   * is still measured. */
  options.record_timing = false;
  f = feed_of(5);
  PLM_CHECK_OK(
      plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report));
  ck_assert_int_eq(report.frames_delivered, 5);
  ck_assert(report.copy_ms == 0.0 && report.compute_ms == 0.0 && report.overlap_ms == 0.0);
  ck_assert(report.submit_p50_us > 0.0 && report.submit_p50_us <= report.submit_p99_us);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));

  /* A plan whose entropy and label take scratch: it is in the workspace, so on cuda this
   * plan is captured and replayed like the threshold's. */
  const int64_t dims[2] = {H, W};
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx,
                                  "entropy window=5 bins=16 ! threshold value=2 ! label ! regions "
                                  "capacity=64",
                                  PLM_DTYPE_U16, 2, dims, &pl));
  plm_plan_config cfg = {.frames_in_flight = 3};
  PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_uint_gt(info.scratch_bytes, 0);
  f = feed_of(30);
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, threshold_source, NULL, &f, NULL, &report));
  ck_assert_int_eq(report.frames_delivered, 30);
  if (plm_test_backend == PLM_BACKEND_HOST) {
    ck_assert_int_eq(report.graph_replays, 0);
    ck_assert_msg(strstr(report.graphs_note, "the host backend has no graphs") != NULL, "%s",
                  report.graphs_note);
  } else {
    ck_assert_msg(report.graphs_used, "%s", report.graphs_note);
    ck_assert_int_eq(report.graph_replays, 30 - 3);
  }
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

/* ---- errors -------------------------------------------------------------------------------------
 */

START_TEST(test_bad_arguments) {
  plm_pipeline *pl = threshold_pipeline(2);
  feed f = feed_of(3);
  plm_run_stream_report report;
  PLM_CHECK_FAILS(
      plm_pipeline_run_stream(NULL, threshold_source, threshold_sink, &f, NULL, &report),
      PLM_ERR_INVALID_ARG, "pl is NULL");
  ck_assert_int_eq(report.failed_frame, -1);
  PLM_CHECK_FAILS(plm_pipeline_run_stream(pl, NULL, threshold_sink, &f, NULL, &report),
                  PLM_ERR_INVALID_ARG, "source is NULL");
  PLM_CHECK_FAILS(plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, NULL, NULL),
                  PLM_ERR_INVALID_ARG, "report is NULL");
  plm_run_stream_options options = plm_run_stream_options_default();
  options.max_frames = -2;
  PLM_CHECK_FAILS(
      plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report),
      PLM_ERR_INVALID_ARG, "options->max_frames -2 is negative");
  options = plm_run_stream_options_default();
  ck_assert_int_eq(options.source_ahead, 0);
  options.source_ahead = -1;
  PLM_CHECK_FAILS(
      plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report),
      PLM_ERR_INVALID_ARG, "options->source_ahead -1 is out of range (0 to 1024)");
  options.source_ahead = PLM_SOURCE_AHEAD_MAX + 1;
  PLM_CHECK_FAILS(
      plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report),
      PLM_ERR_INVALID_ARG, "options->source_ahead 1025 is out of range (0 to 1024)");
  ck_assert_int_eq(f.sourced, 0);
  ck_assert_int_eq(report.failed_frame, -1);
  options.source_ahead = PLM_SOURCE_AHEAD_MAX; /* the most is taken */
  PLM_CHECK_OK(
      plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, &options, &report));
  ck_assert_int_eq(f.delivered, 3);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));

  const int64_t dims[2] = {H, W};
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, "threshold value=1", PLM_DTYPE_U16, 2, dims, &pl));
  PLM_CHECK_FAILS(plm_pipeline_run_stream(pl, threshold_source, threshold_sink, &f, NULL, &report),
                  PLM_ERR_INVALID_STATE, "not compiled");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

static Suite *stream_suite(void) {
  Suite *suite = suite_create("pipeline_stream");
  TCase *tcase = tcase_create("pipeline_stream");
  tcase_set_timeout(tcase, 120);
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_add_test(tcase, test_every_frame_once_and_in_order);
  tcase_add_test(tcase, test_max_frames_and_a_slow_sink);
  tcase_add_test(tcase, test_without_a_sink);
  tcase_add_test(tcase, test_streamed_results_equal_runs_one_by_one);
  tcase_add_test(tcase, test_a_failing_source_stops_the_run_at_its_frame);
  tcase_add_test(tcase, test_a_failing_sink_stops_the_run_at_its_frame);
  tcase_add_test(tcase, test_a_failure_at_the_first_frame);
  tcase_add_test(tcase, test_ahead_delivers_what_inline_does);
  tcase_add_test(tcase, test_ahead_end_and_max_frames);
  tcase_add_test(tcase, test_ahead_source_failure_reads_as_inline);
  tcase_add_test(tcase, test_ahead_sink_failure_stops_the_source);
  tcase_add_test(tcase, test_ahead_enqueue_failure_stops_the_source);
  tcase_add_test(tcase, test_the_report);
  tcase_add_test(tcase, test_bad_arguments);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(stream_suite);
}

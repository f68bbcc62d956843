/* tests/test_pipeline_stream.c: plm_pipeline_run_stream (plume/pipeline.h).
 *
 *   order     every frame reaches the sink exactly once, in order, with its own
 *             results, for 1..4 frames in flight; the source's end and max_frames;
 *   results   two detection chains (one with entropy and label, whose scratch is in the
 *             workspace) streamed equal plm_pipeline_run frame by frame, planned and
 *             eager (PLM_PLAN_ALLOCATE_PER_RUN, PLM_PLAN_SYNCHRONOUS_STEPS);
 *   failures  a source or sink failing at frame k: frames 0..k-1 delivered, none after,
 *             failed_frame k, the message names k; the pipeline runs again afterwards;
 *   report    frames/s, latencies, graphs (refused with a note where there are none;
 *             on cuda every frame after the warm-ups replays, with or without steps
 *             that take scratch), the copy/compute timing and its overlap bounds;
 *   errors    NULL arguments, a negative max_frames, a pipeline not compiled.
 * The fixture's context teardown fails any test that leaves an object behind.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
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
  int64_t frames;       /* the source ends before this frame (-1: never) */
  int64_t fail_source;  /* the source fails at this frame (-1: never) */
  int64_t fail_sink;    /* the sink fails at this frame (-1: never) */
  int64_t delivered;    /* frames the sink has seen, each checked */
  int64_t next;         /* the frame the sink expects next */
  int64_t sourced;      /* source calls */
  int64_t slow_sink_us; /* the sink sleeps this long per frame */
  bool wrong;           /* a frame out of order or with wrong results */
} feed;

static plm_status threshold_source(void *user, int64_t frame, void *const *inputs, bool *end) {
  feed *f = user;
  f->sourced++;
  if (frame == f->fail_source) return PLM_ERR_NOT_FOUND;
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
  if (frame == f->fail_sink) return PLM_ERR_INVALID_STATE;
  if (frame != f->next) f->wrong = true;
  const uint8_t *mask = outputs[0];
  for (int64_t i = 0; i < PIXELS; i++)
    if (mask[i] != (pixel(frame, i) > 500)) f->wrong = true;
  if (f->slow_sink_us) plm_test_sleep_ms((double)f->slow_sink_us / 1000.0);
  f->next = frame + 1;
  f->delivered++;
  return PLM_OK;
}

static feed feed_of(int64_t frames) {
  return (feed){.frames = frames, .fail_source = -1, .fail_sink = -1};
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
    c.delivered = 0;
    c.wrong = false;
    PLM_CHECK_OK(plm_pipeline_run_stream(streamed, chain_source, chain_sink, &c, NULL, &report));
    ck_assert_int_eq(report.frames_delivered, CHAIN_FRAMES);
    ck_assert_int_eq(c.delivered, CHAIN_FRAMES);
    ck_assert_msg(!c.wrong, "config %zu: a streamed frame differs from plm_pipeline_run's", v);
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
  ck_assert_int_eq(f.sourced, 0);
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
  tcase_add_test(tcase, test_the_report);
  tcase_add_test(tcase, test_bad_arguments);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(stream_suite);
}

/* tests/test_pipeline_batch.c: plm_pipeline_run_stream with options->batch (plume/pipeline.h,
 * "Batches"; pipeline/batch.c).
 *
 *   equal     a detection chain with state (background ! conv2d ! cfar ! label ! regions)
 *             over (N, H, W) stacks, batch N, gives the sink every frame's table and count
 *             byte for byte as the same chain over (H, W) frames one at a time: batches of
 *             2, 4 and 5 with a short last batch, 1 to 3 frames in flight, the source
 *             inline and on its own thread, CUDA graphs on (replayed on cuda); the
 *             table's rows past the frame's K are not compared (regions leaves them
 *             untouched: they hold what an earlier frame left there);
 *   state     a run whose last batch is short leaves the background state as unbatched
 *             frames would: a second run continues the sequence bit for bit;
 *   limits    max_frames inside a batch;
 *   failures  a source failing in the middle of a batch: the frames before it delivered
 *             (its batch's too), failed_frame the frame; a sink failing likewise;
 *   refusals  batch out of range, inputs that are not stacks of N, a step that does not
 *             keep frames apart (named), several devices.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { H = 40, W = 48, PIXELS = H * W, CAPACITY = 64, FRAMES = 11 };

#define CHAIN                                                                   \
  "background alpha=0.1 ! conv2d kernel=gauss:5:1 pad=same border=replicate ! " \
  "cfar window=9 guard=3 k=3 ! label connectivity=8 ! regions capacity=64"

enum { TABLE_BYTES = CAPACITY * PLM_REGION_COLUMNS * 8, COUNT_BYTES = 4 };

/* Frame k: a noisy flat field with two bright blobs that move from frame to frame. */
static void make_frame(int64_t k, uint16_t *frame) {
  uint64_t state = 1000 + (uint64_t)k;
  for (int64_t r = 0; r < H; r++)
    for (int64_t c = 0; c < W; c++) {
      double v = 1000.0 + (double)(plm_test_random(&state) % 61) - 30.0;
      const double blobs[2][2] = {{8.0 + 2.0 * (double)k, 10.0 + (double)k},
                                  {30.0 - (double)k, 36.0 - 1.5 * (double)k}};
      for (int b = 0; b < 2; b++) {
        const double dr = (double)r - blobs[b][0], dc = (double)c - blobs[b][1];
        v += 600.0 * exp(-(dr * dr + dc * dc) / 4.0);
      }
      frame[r * W + c] = (uint16_t)v;
    }
}

typedef struct expected_frames {
  unsigned char table[FRAMES][TABLE_BYTES];
  int32_t count[FRAMES];
} expected_frames;

typedef struct feed {
  int64_t offset;                  /* the source's frame k is frame offset + k of the sequence */
  int64_t fail_source;             /* the source fails at this frame (-1: never) */
  int64_t fail_sink;               /* the sink fails at this frame (-1: never) */
  int64_t frames;                  /* the source ends before this frame */
  const expected_frames *expected; /* NULL: keep what arrives in `got` */
  expected_frames *got;
  int64_t next;  /* the frame the sink expects */
  int64_t wrong; /* the first frame whose bytes differ (-1: none) */
} feed;

/* Frame k's count, and its table's rows of labels 1..min(K, capacity): the rows past
 * those are left untouched by regions (plume/label.h), holding whatever an earlier frame
 * left in that memory. */
static bool same_results(const expected_frames *want, int64_t k, const void *const *outputs) {
  int32_t count;
  memcpy(&count, outputs[1], COUNT_BYTES);
  if (count != want->count[k]) return false;
  const int64_t rows = count < 0 ? 0 : count < CAPACITY ? count : CAPACITY;
  return memcmp(want->table[k], outputs[0], (size_t)rows * PLM_REGION_COLUMNS * 8) == 0;
}

static plm_status source(void *user, int64_t frame, void *const *inputs, bool *end) {
  feed *f = user;
  if (frame == f->fail_source) return PLM_ERR_IO;
  if (frame >= f->frames) {
    *end = true;
    return PLM_OK;
  }
  make_frame(f->offset + frame, inputs[0]);
  return PLM_OK;
}

static plm_status sink(void *user, int64_t frame, const void *const *outputs) {
  feed *f = user;
  if (frame == f->fail_sink) return PLM_ERR_BACKEND;
  const int64_t k = f->offset + frame;
  if (frame != f->next || k >= FRAMES) {
    if (f->wrong < 0) f->wrong = frame;
    return PLM_OK;
  }
  f->next++;
  if (f->got) {
    memcpy(f->got->table[k], outputs[0], TABLE_BYTES);
    memcpy(&f->got->count[k], outputs[1], COUNT_BYTES);
  }
  if (f->expected && f->wrong < 0 && !same_results(f->expected, k, outputs)) f->wrong = frame;
  return PLM_OK;
}

/* The chain over stacks of `batch` frames (batch 1: over single (H, W) frames). */
static plm_pipeline *chain(int batch, int frames_in_flight) {
  const int64_t frame_dims[2] = {H, W}, stack_dims[3] = {batch, H, W};
  plm_pipeline *pl = NULL;
  if (batch == 1)
    PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, CHAIN, PLM_DTYPE_U16, 2, frame_dims, &pl));
  else
    PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, CHAIN, PLM_DTYPE_U16, 3, stack_dims, &pl));
  plm_plan_config cfg = {.frames_in_flight = frames_in_flight};
  PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
  return pl;
}

static feed feed_of(const expected_frames *expected, expected_frames *got) {
  return (feed){.fail_source = -1,
                .fail_sink = -1,
                .frames = FRAMES,
                .expected = expected,
                .got = got,
                .wrong = -1};
}

/* The frames one at a time: what every batched run must give. Some frames have regions. */
static expected_frames *reference(void) {
  expected_frames *want = calloc(1, sizeof *want);
  ck_assert_ptr_nonnull(want);
  plm_pipeline *pl = chain(1, 1);
  feed f = feed_of(NULL, want);
  plm_run_stream_report report;
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, source, sink, &f, NULL, &report));
  ck_assert_int_eq(report.frames_delivered, FRAMES);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  int with_regions = 0;
  for (int k = 0; k < FRAMES; k++) with_regions += want->count[k] > 0;
  ck_assert_msg(with_regions >= FRAMES / 2, "only %d of %d frames have regions", with_regions,
                FRAMES);
  return want;
}

START_TEST(test_batches_give_the_frames_bytes) {
  expected_frames *want = reference();
  const struct {
    int batch, in_flight, ahead;
  } runs[] = {{2, 1, 0}, {4, 2, 0}, {5, 3, 0}, {4, 1, 3}, {2, 2, 2}};
  for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
    plm_pipeline *pl = chain(runs[r].batch, runs[r].in_flight);
    feed f = feed_of(want, NULL);
    plm_run_stream_options options = plm_run_stream_options_default();
    options.batch = runs[r].batch;
    options.source_ahead = runs[r].ahead;
    plm_run_stream_report report;
    PLM_CHECK_OK(plm_pipeline_run_stream(pl, source, sink, &f, &options, &report));
    ck_assert_msg(f.wrong < 0, "batch %d, %d in flight, ahead %d: frame %lld differs",
                  runs[r].batch, runs[r].in_flight, runs[r].ahead, (long long)f.wrong);
    ck_assert_int_eq(f.next, FRAMES);
    ck_assert_int_eq(report.frames_delivered, FRAMES);
    ck_assert_int_eq(report.failed_frame, -1);
    /* On cuda every full batch after each slot's warm-up runs as a graph; the short one
     * never does. */
    if (plm_test_backend == PLM_BACKEND_CUDA) {
      const int64_t full = FRAMES / runs[r].batch;
      ck_assert_int_eq(report.graph_replays,
                       full > runs[r].in_flight ? full - runs[r].in_flight : 0);
    }
    PLM_CHECK_OK(plm_pipeline_destroy(pl));
  }
  free(want);
}
END_TEST

/* 7 frames in batches of 4 (4, then a short 3), then frames 7..10 in another run: the
 * short batch left the state as 7 single frames would. */
START_TEST(test_a_short_batch_leaves_the_state_as_single_frames_do) {
  expected_frames *want = reference();
  plm_pipeline *pl = chain(4, 2);
  plm_run_stream_options options = plm_run_stream_options_default();
  options.batch = 4;
  feed first = feed_of(want, NULL);
  first.frames = 7;
  plm_run_stream_report report;
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, source, sink, &first, &options, &report));
  ck_assert_int_eq(report.frames_delivered, 7);
  ck_assert_msg(first.wrong < 0, "first run: frame %lld differs", (long long)first.wrong);
  feed second = feed_of(want, NULL);
  second.offset = 7;
  second.frames = FRAMES - 7;
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, source, sink, &second, &options, &report));
  ck_assert_int_eq(report.frames_delivered, FRAMES - 7);
  ck_assert_msg(second.wrong < 0, "second run: frame %lld (of the sequence, %lld) differs",
                (long long)second.wrong, (long long)(second.wrong + 7));
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free(want);
}
END_TEST

START_TEST(test_max_frames_inside_a_batch) {
  expected_frames *want = reference();
  plm_pipeline *pl = chain(4, 2);
  plm_run_stream_options options = plm_run_stream_options_default();
  options.batch = 4;
  options.max_frames = 6;
  feed f = feed_of(want, NULL);
  plm_run_stream_report report;
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, source, sink, &f, &options, &report));
  ck_assert_int_eq(report.frames_delivered, 6);
  ck_assert_int_eq(f.next, 6);
  ck_assert_msg(f.wrong < 0, "frame %lld differs", (long long)f.wrong);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free(want);
}
END_TEST

START_TEST(test_failures_in_the_middle_of_a_batch) {
  expected_frames *want = reference();
  plm_pipeline *pl = chain(4, 2);
  for (int ahead = 0; ahead <= 2; ahead += 2) {
    plm_run_stream_options options = plm_run_stream_options_default();
    options.batch = 4;
    options.source_ahead = ahead;
    plm_run_stream_report report;
    /* The source fails at frame 6: frames 0..5 (4 and 5 in its batch) delivered. */
    feed f = feed_of(want, NULL);
    f.fail_source = 6;
    PLM_CHECK_FAILS(plm_pipeline_run_stream(pl, source, sink, &f, &options, &report), PLM_ERR_IO,
                    "frame 6: the source failed");
    ck_assert_int_eq(report.failed_frame, 6);
    ck_assert_int_eq(report.frames_delivered, 6);
    ck_assert_int_eq(f.next, 6);
    ck_assert_msg(f.wrong < 0, "frame %lld differs", (long long)f.wrong);
    PLM_CHECK_OK(plm_pipeline_reset_state(pl));
    /* At a batch's first frame: nothing of that batch. */
    f = feed_of(want, NULL);
    f.fail_source = 8;
    PLM_CHECK_FAILS(plm_pipeline_run_stream(pl, source, sink, &f, &options, &report), PLM_ERR_IO,
                    "frame 8: the source failed");
    ck_assert_int_eq(report.failed_frame, 8);
    ck_assert_int_eq(report.frames_delivered, 8);
    PLM_CHECK_OK(plm_pipeline_reset_state(pl));
    /* The sink fails at frame 5: frames 0..4 delivered. */
    f = feed_of(want, NULL);
    f.fail_sink = 5;
    PLM_CHECK_FAILS(plm_pipeline_run_stream(pl, source, sink, &f, &options, &report),
                    PLM_ERR_BACKEND, "frame 5: the sink failed");
    ck_assert_int_eq(report.failed_frame, 5);
    ck_assert_int_eq(report.frames_delivered, 5);
    ck_assert_int_eq(f.next, 5);
    PLM_CHECK_OK(plm_pipeline_reset_state(pl));
  }
  /* The pipeline still runs the whole sequence. */
  plm_run_stream_options options = plm_run_stream_options_default();
  options.batch = 4;
  feed f = feed_of(want, NULL);
  plm_run_stream_report report;
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, source, sink, &f, &options, &report));
  ck_assert_int_eq(report.frames_delivered, FRAMES);
  ck_assert_msg(f.wrong < 0, "frame %lld differs", (long long)f.wrong);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free(want);
}
END_TEST

START_TEST(test_batches_that_cannot_be_are_refused) {
  plm_run_stream_report report;
  plm_run_stream_options options = plm_run_stream_options_default();
  feed f = feed_of(NULL, NULL);
  plm_pipeline *frames = chain(1, 1), *stacks = chain(4, 1);
  options.batch = -1;
  PLM_CHECK_FAILS(plm_pipeline_run_stream(stacks, source, sink, &f, &options, &report),
                  PLM_ERR_INVALID_ARG, "options->batch -1 is out of range");
  options.batch = PLM_RUN_STREAM_MAX_BATCH + 1;
  PLM_CHECK_FAILS(plm_pipeline_run_stream(stacks, source, sink, &f, &options, &report),
                  PLM_ERR_INVALID_ARG, "options->batch 65537 is out of range");
  options.batch = 4;
  PLM_CHECK_FAILS(plm_pipeline_run_stream(frames, source, sink, &f, &options, &report),
                  PLM_ERR_INVALID_ARG, "options->batch 4: input 0 is u16 40x48, not a stack of 4");
  options.batch = 2;
  PLM_CHECK_FAILS(plm_pipeline_run_stream(stacks, source, sink, &f, &options, &report),
                  PLM_ERR_INVALID_ARG, "not a stack of 2 frames");
  ck_assert_int_eq(f.next, 0); /* nothing ran */
  /* Several devices take frames one by one. */
  options.batch = 4;
  plm_pipeline *const both[] = {stacks};
  plm_run_stream_devices_report devices;
  PLM_CHECK_FAILS(plm_pipeline_run_stream_devices(both, 1, source, sink, &f, &options, &devices),
                  PLM_ERR_UNSUPPORTED, "options->batch 4: several devices");
  /* batch 1 (and 0) on the frame pipeline is the plain run. */
  options.batch = 0;
  f = feed_of(NULL, NULL);
  PLM_CHECK_OK(plm_pipeline_run_stream(frames, source, sink, &f, &options, &report));
  ck_assert_int_eq(report.frames_delivered, FRAMES);
  PLM_CHECK_OK(plm_pipeline_destroy(frames));
  PLM_CHECK_OK(plm_pipeline_destroy(stacks));

  /* A step that reads the frames and makes something that is not a stack of them: a
   * matmul whose b is the input (4, 5) stack and a a constant (3, 4): out (3, 5). */
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_create(plm_test_ctx, &pl));
  const int64_t in_dims[2] = {4, 5}, a_dims[2] = {3, 4};
  const float a_values[12] = {0};
  plm_pipe_tensor in, a, out;
  PLM_CHECK_OK(plm_pipeline_add_input(pl, PLM_DTYPE_F32, 2, in_dims, &in));
  PLM_CHECK_OK(plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, a_dims, a_values, &a));
  const plm_matmul_params params = {0};
  PLM_CHECK_OK(plm_pipeline_add_matmul(pl, a, in, (plm_pipe_tensor){0}, &params, &out));
  PLM_CHECK_OK(plm_pipeline_mark_output(pl, out));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  options.batch = 4;
  PLM_CHECK_FAILS(plm_pipeline_run_stream(pl, source, sink, &f, &options, &report),
                  PLM_ERR_INVALID_ARG, "'matmul' does not keep frames apart");
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
}
END_TEST

static Suite *pipeline_batch_suite(void) {
  Suite *suite = suite_create("pipeline_batch");
  TCase *tcase = tcase_create("batch");
  plm_test_add_fixture(tcase);
  tcase_set_timeout(tcase, 300);
  tcase_add_test(tcase, test_batches_give_the_frames_bytes);
  tcase_add_test(tcase, test_a_short_batch_leaves_the_state_as_single_frames_do);
  tcase_add_test(tcase, test_max_frames_inside_a_batch);
  tcase_add_test(tcase, test_failures_in_the_middle_of_a_batch);
  tcase_add_test(tcase, test_batches_that_cannot_be_are_refused);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(pipeline_batch_suite);
}

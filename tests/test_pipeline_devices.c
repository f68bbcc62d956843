/* tests/test_pipeline_devices.c: plm_pipeline_run_stream_devices (plume/pipeline.h) and
 * the host backend's core budget (plm_context_config.host_threads, plume/context.h).
 *
 *   results   a detection chain (Sobel, entropy, threshold, label, regions: kernels that
 *             split their work over the device's threads, scratch in the workspace) over
 *             two devices (on host: two contexts with budgets of 1 and 2 threads) gives
 *             the sink every frame once, in order, on the calling thread, with the bytes
 *             one device gives; a device held back (the sink holding frame 0) leaves the
 *             frames to the other; the counts sum to the total; max_frames and the
 *             source's end;
 *   failures  a source or sink failing at frame k: frames 0..k-1 delivered, none after,
 *             failed_frame k, the message names k; the pipelines run again afterwards;
 *   refusals  a stateful pipeline over two devices (one is fine), NULL arguments, a count
 *             out of range, a pipeline twice, pipelines of other shapes, one not compiled;
 *   budgets   host_threads out of range is refused; the device says its budget.
 * The fixture's context teardown fails any test that leaves an object behind; the second
 * device's context is checked the same way here.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { H = 40, W = 48, PIXELS = H * W, CAPACITY = 64, FRAMES = 60 };
enum { TABLE_BYTES = CAPACITY * PLM_REGION_COLUMNS * 8, RESULT_BYTES = TABLE_BYTES + 4 };

static const char chain[] =
    "sobel ! entropy window=5 bins=16 range=0,2000 ! threshold value=2.5 ! label ! regions "
    "capacity=64";

/* Frame k's pixel i: bright squares moving with k over a ramp, distinct per frame. */
static uint16_t pixel(int64_t frame, int64_t i) {
  int64_t y = i / W, x = i % W;
  bool square = ((y + frame) / 6) % 3 == 0 && ((x + 2 * frame) / 7) % 3 == 0;
  return (uint16_t)((square ? 3000 : 0) + (x * 13 + y * 7 + frame * 3) % 200);
}

/* The second device: on host a context with a budget of its own, so the two share the
 * cores (1 and up to 2 threads); on cuda the same GPU again. */
static plm_context *second_context(int host_threads) {
  plm_context_config cfg = {.backend = plm_test_backend, .host_threads = host_threads};
  if (plm_test_backend != PLM_BACKEND_HOST) cfg.host_threads = 0;
  plm_context *ctx = NULL;
  PLM_CHECK_OK(plm_context_create(&cfg, &ctx));
  return ctx;
}

static plm_pipeline *compiled(plm_context *ctx, const char *text, int frames_in_flight) {
  return plm_test_pipeline(ctx, text, PLM_DTYPE_U16, H, W, frames_in_flight);
}

typedef struct feed {
  int64_t frames;      /* the source ends before this frame */
  int64_t fail_source; /* the source fails at this frame (-1: never) */
  int64_t fail_sink;   /* the sink fails at this frame (-1: never) */
  pthread_t caller;
  /* The source's calls come from the devices' threads, one at a time: only the source
   * takes this lock (trylock), so a call finding it held was concurrent with another.
   * The sink reads two_threads while the source runs, hence the atomics. */
  pthread_mutex_t source_lock;
  int64_t sourced_next;     /* the frame the source expects next */
  atomic_bool source_wrong; /* a call out of order, or concurrent with another */
  pthread_t first_thread;   /* the thread of the source's first call */
  atomic_bool two_threads;  /* a call came from another thread than the first */
  bool await_two;           /* the sink holds frame 0 until both devices have taken frames */
  int64_t delivered;        /* frames the sink has seen */
  bool sink_wrong;          /* out of order, or off the calling thread */
  unsigned char *results;   /* RESULT_BYTES per frame: table then count */
} feed;

static plm_status source(void *user, int64_t k, void *const *inputs, bool *end) {
  feed *f = user;
  /* One call at a time (trylock: a concurrent call is a failure, not a wait). */
  if (pthread_mutex_trylock(&f->source_lock) != 0) {
    atomic_store(&f->source_wrong, true);
    return PLM_ERR_INTERNAL;
  }
  if (k != f->sourced_next) atomic_store(&f->source_wrong, true);
  if (f->sourced_next == 0) f->first_thread = pthread_self();
  if (!pthread_equal(pthread_self(), f->first_thread)) atomic_store(&f->two_threads, true);
  f->sourced_next = k + 1;
  pthread_mutex_unlock(&f->source_lock);
  if (k >= f->frames) {
    *end = true;
    return PLM_OK;
  }
  if (k == f->fail_source) return PLM_ERR_IO;
  uint16_t *frame = inputs[0];
  for (int64_t i = 0; i < PIXELS; i++) frame[i] = pixel(k, i);
  return PLM_OK;
}

/* Keeps the count and the table's first `count` rows (the rows after them are whatever
 * the slot's buffer held). */
static plm_status sink(void *user, int64_t k, const void *const *outputs) {
  feed *f = user;
  f->sink_wrong |= k != f->delivered || !pthread_equal(pthread_self(), f->caller);
  if (k == f->fail_sink) return PLM_ERR_IO;
  /* While frame 0 is held, the first device fills its slots and its share of the reorder
   * ring and then waits: the second has to take the next frames (back-pressure). */
  for (int waited = 0; k == 0 && f->await_two && waited < 10000; waited++) {
    if (atomic_load(&f->two_threads)) break;
    plm_test_sleep_ms(1);
  }
  unsigned char *result = f->results + k * RESULT_BYTES;
  int32_t count = 0;
  memcpy(&count, outputs[1], 4);
  if (count < 0 || count > CAPACITY) count = CAPACITY;
  memcpy(result, outputs[0], (size_t)count * PLM_REGION_COLUMNS * 8);
  memcpy(result + TABLE_BYTES, outputs[1], 4);
  f->delivered++;
  return PLM_OK;
}

static feed *feed_new(int64_t frames) {
  feed *f = calloc(1, sizeof *f);
  ck_assert_ptr_nonnull(f);
  f->frames = frames;
  f->fail_source = f->fail_sink = -1;
  f->caller = pthread_self();
  pthread_mutex_init(&f->source_lock, NULL);
  f->results = calloc((size_t)FRAMES + 1, RESULT_BYTES);
  ck_assert_ptr_nonnull(f->results);
  return f;
}

static void feed_free(feed *f) {
  pthread_mutex_destroy(&f->source_lock);
  free(f->results);
  free(f);
}

/* The results of one device, plm_pipeline_run_stream. */
static feed *one_device(int64_t frames) {
  plm_pipeline *pl = compiled(plm_test_ctx, chain, 2);
  feed *f = feed_new(frames);
  plm_run_stream_report report;
  PLM_CHECK_OK(plm_pipeline_run_stream(pl, source, sink, f, NULL, &report));
  ck_assert_int_eq(report.frames_delivered, frames);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  return f;
}

START_TEST(test_two_devices_give_what_one_gives) {
  feed *expected = one_device(FRAMES);
  plm_context *other = second_context(2);
  /* Different frames in flight too: each device has its own plan. */
  plm_pipeline *pipelines[2] = {compiled(plm_test_ctx, chain, 2), compiled(other, chain, 3)};
  feed *f = feed_new(FRAMES);
  f->await_two = true;
  plm_run_stream_devices_report report;
  PLM_CHECK_OK(plm_pipeline_run_stream_devices(pipelines, 2, source, sink, f, NULL, &report));
  ck_assert(!f->source_wrong);
  ck_assert(!f->sink_wrong);
  ck_assert_int_eq(f->delivered, FRAMES);
  ck_assert_int_eq(report.frames_delivered, FRAMES);
  ck_assert_int_eq(report.failed_frame, -1);
  ck_assert_int_eq(report.devices, 2);
  ck_assert_int_eq(report.device_frames[0] + report.device_frames[1], FRAMES);
  ck_assert_int_gt(report.device_frames[0], 0);
  ck_assert_int_gt(report.device_frames[1], 0);
  ck_assert(report.frames_per_s > 0);
  ck_assert_int_eq(report.device[0].frames_delivered + report.device[1].frames_delivered, FRAMES);
  ck_assert_mem_eq(f->results, expected->results, (size_t)FRAMES * RESULT_BYTES);
  /* Some frames have regions: the comparison is not of empty tables. */
  int32_t count = 0;
  memcpy(&count, f->results + 5 * RESULT_BYTES + TABLE_BYTES, 4);
  ck_assert_int_gt(count, 0);

  /* max_frames counts the whole sequence; the source's end stops it too. */
  feed *g = feed_new(FRAMES);
  plm_run_stream_options options = plm_run_stream_options_default();
  options.max_frames = 17;
  PLM_CHECK_OK(plm_pipeline_run_stream_devices(pipelines, 2, source, sink, g, &options, &report));
  ck_assert_int_eq(g->delivered, 17);
  ck_assert(g->sourced_next == 17 && !g->source_wrong && !g->sink_wrong);
  feed *h = feed_new(9);
  PLM_CHECK_OK(plm_pipeline_run_stream_devices(pipelines, 2, source, sink, h, NULL, &report));
  ck_assert_int_eq(h->delivered, 9);
  ck_assert_mem_eq(h->results, expected->results, (size_t)9 * RESULT_BYTES);

  feed_free(f);
  feed_free(g);
  feed_free(h);
  feed_free(expected);
  PLM_CHECK_OK(plm_pipeline_destroy(pipelines[0]));
  PLM_CHECK_OK(plm_pipeline_destroy(pipelines[1]));
  PLM_CHECK_OK(plm_context_destroy(other));
}
END_TEST

/* A failure at frame k in the source or the sink: 0..k-1 delivered, nothing after. */
static void check_failure_at(bool in_source, int64_t k) {
  plm_context *other = second_context(1);
  plm_pipeline *pipelines[2] = {compiled(plm_test_ctx, chain, 2), compiled(other, chain, 2)};
  feed *f = feed_new(FRAMES);
  if (in_source)
    f->fail_source = k;
  else
    f->fail_sink = k;
  plm_run_stream_devices_report report;
  ck_assert_int_eq(plm_pipeline_run_stream_devices(pipelines, 2, source, sink, f, NULL, &report),
                   PLM_ERR_IO);
  char needle[64];
  snprintf(needle, sizeof needle, "frame %lld: the %s failed", (long long)k,
           in_source ? "source" : "sink");
  ck_assert_msg(strstr(plm_last_error(), needle), "message: %s", plm_last_error());
  ck_assert_int_eq(report.failed_frame, k);
  ck_assert_int_eq(f->delivered, k);
  ck_assert_int_eq(report.frames_delivered, k);
  ck_assert(!f->source_wrong && !f->sink_wrong);
  if (!in_source) ck_assert_int_eq(report.failed_device, -1);
  /* The pipelines are usable again. */
  feed *g = feed_new(5);
  PLM_CHECK_OK(plm_pipeline_run_stream_devices(pipelines, 2, source, sink, g, NULL, &report));
  ck_assert_int_eq(g->delivered, 5);
  feed_free(f);
  feed_free(g);
  PLM_CHECK_OK(plm_pipeline_destroy(pipelines[0]));
  PLM_CHECK_OK(plm_pipeline_destroy(pipelines[1]));
  PLM_CHECK_OK(plm_context_destroy(other));
}

START_TEST(test_a_failing_source_stops_the_run_at_its_frame) {
  check_failure_at(true, 0);
  check_failure_at(true, 23);
}
END_TEST

START_TEST(test_a_failing_sink_stops_the_run_at_its_frame) {
  check_failure_at(false, 0);
  check_failure_at(false, 31);
}
END_TEST

START_TEST(test_refusals) {
  plm_context *other = second_context(1);
  plm_pipeline *a = compiled(plm_test_ctx, chain, 2), *b = compiled(other, chain, 2);
  feed *f = feed_new(4);
  plm_run_stream_devices_report report;
  const int64_t dims[2] = {H, W};

  /* A state carried from frame to frame cannot be dealt out; on one device it runs. */
  const char stateful[] =
      "background alpha=0.1 ! threshold value=100 ! label ! regions capacity=64";
  plm_pipeline *s0 = compiled(plm_test_ctx, stateful, 2), *s1 = compiled(other, stateful, 2);
  plm_pipeline *states[2] = {s0, s1};
  ck_assert_int_eq(plm_pipeline_run_stream_devices(states, 2, source, sink, f, NULL, &report),
                   PLM_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(
      strstr(plm_last_error(), "has 1 state (a background, a previous value): its state carries"));
  PLM_CHECK_OK(plm_pipeline_run_stream_devices(states, 1, source, sink, f, NULL, &report));
  ck_assert_int_eq(f->delivered, 4);

  plm_pipeline *twice[2] = {a, a}, *pair[2] = {a, b};
  ck_assert_int_eq(plm_pipeline_run_stream_devices(twice, 2, source, sink, f, NULL, &report),
                   PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(plm_pipeline_run_stream_devices(pair, 0, source, sink, f, NULL, &report),
                   PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(plm_pipeline_run_stream_devices(pair, PLM_RUN_STREAM_MAX_DEVICES + 1, source,
                                                   sink, f, NULL, &report),
                   PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(plm_pipeline_run_stream_devices(NULL, 2, source, sink, f, NULL, &report),
                   PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(plm_pipeline_run_stream_devices(pair, 2, NULL, sink, f, NULL, &report),
                   PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(plm_pipeline_run_stream_devices(pair, 2, source, sink, f, NULL, NULL),
                   PLM_ERR_INVALID_ARG);
  plm_pipeline *smaller = compiled(other, "threshold value=100 ! label ! regions capacity=32", 2);
  plm_pipeline *mixed[2] = {a, smaller};
  ck_assert_int_eq(plm_pipeline_run_stream_devices(mixed, 2, source, sink, f, NULL, &report),
                   PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(plm_last_error(), "pipelines[1]'s inputs or outputs"));
  plm_pipeline *raw = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(other, chain, PLM_DTYPE_U16, 2, dims, &raw));
  plm_pipeline *uncompiled[2] = {a, raw};
  ck_assert_int_eq(plm_pipeline_run_stream_devices(uncompiled, 2, source, sink, f, NULL, &report),
                   PLM_ERR_INVALID_STATE);

  feed_free(f);
  plm_pipeline *all[] = {a, b, s0, s1, smaller, raw};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_pipeline_destroy(all[i]));
  PLM_CHECK_OK(plm_context_destroy(other));
}
END_TEST

/* A budget of host threads: from 1 to the cores the host backend uses (a host context's
 * multiprocessors), on a context of either backend; a host context reports its budget, a
 * cuda one ignores it (its multiprocessors are still the GPU's). */
START_TEST(test_host_budgets) {
  plm_context *ctx = NULL;
  plm_device_info info, own;
  PLM_CHECK_OK(plm_context_create(&(plm_context_config){.backend = PLM_BACKEND_HOST}, &ctx));
  PLM_CHECK_OK(plm_context_device_info(ctx, &info));
  PLM_CHECK_OK(plm_context_destroy(ctx));
  const int cores = info.multiprocessors;
  ck_assert_int_ge(cores, 1);
  plm_context_config cfg = {.backend = plm_test_backend, .host_threads = cores + 1};
  ck_assert_int_eq(plm_context_create(&cfg, &ctx), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_null(ctx);
  cfg.host_threads = -1;
  ck_assert_int_eq(plm_context_create(&cfg, &ctx), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_null(ctx);
  cfg.host_threads = 1;
  PLM_CHECK_OK(plm_context_create(&cfg, &ctx));
  PLM_CHECK_OK(plm_context_device_info(ctx, &info));
  PLM_CHECK_OK(plm_context_device_info(plm_test_ctx, &own));
  ck_assert_int_eq(info.multiprocessors,
                   plm_test_backend == PLM_BACKEND_HOST ? 1 : own.multiprocessors);
  PLM_CHECK_OK(plm_context_destroy(ctx));
}
END_TEST

static Suite *devices_suite(void) {
  Suite *suite = suite_create("pipeline_devices");
  TCase *tcase = tcase_create("devices");
  plm_test_add_fixture(tcase);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_two_devices_give_what_one_gives);
  tcase_add_test(tcase, test_a_failing_source_stops_the_run_at_its_frame);
  tcase_add_test(tcase, test_a_failing_sink_stops_the_run_at_its_frame);
  tcase_add_test(tcase, test_refusals);
  tcase_add_test(tcase, test_host_budgets);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(devices_suite);
}

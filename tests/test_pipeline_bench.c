/* tests/test_pipeline_bench.c: the pipeline comparison engine (benchmarks/pipeline_bench.h)
 * with frames a caller supplies, as `plume demo` passes its scene: every config runs and
 * agrees with naive on the results, the table and the JSON say what ran, a pipeline
 * without a fusable chain reports fused as skipped, and bad options are refused (exit
 * 2) before anything runs. Timing is never checked. Runs on the host backend.
 */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checks.h"
#include "benchmarks/pipeline_bench.h"
#include "plume/presets.h"
#include "support/scene.h"

enum { H = 64, W = 80, FRAMES = 3 };

static char json_path[256];
static uint16_t frames_u16[FRAMES * H * W];
static float frames_f32[FRAMES * H * W];

static void make_frames(void) {
  scene_config config = {.frames = FRAMES, .height = H, .width = W, .seed = 3};
  char err[SCENE_ERROR_SIZE];
  scene *s = NULL;
  ck_assert_int_eq(scene_create(&config, &s, err, sizeof err), PLM_OK);
  scene_truth *truth = calloc((size_t)scene_max_plumes(s), sizeof *truth);
  ck_assert_ptr_nonnull(truth);
  for (int t = 0; t < FRAMES; t++) {
    int rows = 0;
    ck_assert_int_eq(scene_render(s, t, frames_u16 + t * H * W, truth, &rows, err, sizeof err),
                     PLM_OK);
  }
  for (int i = 0; i < FRAMES * H * W; i++) frames_f32[i] = (float)frames_u16[i];
  free(truth);
  scene_destroy(s);
  const char *tmp = getenv("TMPDIR");
  snprintf(json_path, sizeof json_path, "%s/plume-pipeline-bench-%ld.json",
           tmp && *tmp ? tmp : "/tmp", (long)getpid());
}

static pipeline_bench_options options_for(const pipeline_bench_frames *frames) {
  return (pipeline_bench_options){.backend = PLM_BACKEND_HOST,
                                  .frames = 4,
                                  .repeats = 2,
                                  .frames_from = frames,
                                  .prog = "test_pipeline_bench"};
}

/* Run, return the table's text (caller frees) and the exit code. */
static char *run(const pipeline_bench_options *options, const char *json, int *code) {
  FILE *table = tmpfile();
  ck_assert_ptr_nonnull(table);
  *code = pipeline_bench_run(options, table, json);
  long size = ftell(table);
  ck_assert_int_ge(size, 0);
  char *text = calloc((size_t)size + 1, 1);
  ck_assert_ptr_nonnull(text);
  rewind(table);
  ck_assert_uint_eq(fread(text, 1, (size_t)size, table), (size_t)size);
  fclose(table);
  return text;
}

static json_t *result_of(json_t *doc, const char *config) {
  json_t *results = json_object_get(doc, "results");
  for (size_t i = 0; i < json_array_size(results); i++) {
    json_t *r = json_array_get(results, i);
    if (strcmp(json_string_value(json_object_get(r, "config")), config) == 0) return r;
  }
  ck_abort_msg("no %s result", config);
  return NULL;
}

START_TEST(test_supplied_frames_every_config) {
  const pipeline_bench_frames from[2] = {{.pixels = frames_u16,
                                          .count = FRAMES,
                                          .height = H,
                                          .width = W,
                                          .dtype = PLM_DTYPE_U16,
                                          .name = "scene seed 3"},
                                         {.pixels = frames_f32,
                                          .count = FRAMES,
                                          .height = H,
                                          .width = W,
                                          .dtype = PLM_DTYPE_F32,
                                          .name = "scene seed 3 as f32"}};
  for (int d = 0; d < 2; d++) {
    pipeline_bench_options options = options_for(&from[d]);
    int code = -1;
    char *table = run(&options, json_path, &code);
    ck_assert_msg(code == 0, "exit %d:\n%s", code, table);
    ck_assert_msg(strstr(table, "naive") && strstr(table, "streams") && strstr(table, "floors") &&
                      strstr(table, "skipped: the host backend has no CUDA graphs") &&
                      strstr(table, "load 64x80 "),
                  "%s", table);
    free(table);
    ck_assert(pipeline_bench_validate_json(json_path, stderr));
    json_error_t error;
    json_t *doc = json_load_file(json_path, 0, &error);
    ck_assert_ptr_nonnull(doc);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "frames_source")), from[d].name);
    json_t *results = json_object_get(doc, "results");
    ck_assert_uint_eq(json_array_size(results), 7); /* naive, pooled, 3 streams, graph, fused */
    for (size_t i = 0; i < json_array_size(results); i++) {
      json_t *r = json_array_get(results, i);
      ck_assert_str_eq(json_string_value(json_object_get(r, "frame")), "64x80");
      ck_assert_str_eq(json_string_value(json_object_get(r, "dtype")), d ? "f32" : "u16");
      const bool skipped = json_is_true(json_object_get(r, "skipped"));
      ck_assert(skipped == (strcmp(json_string_value(json_object_get(r, "config")), "graph") == 0));
      if (!skipped) {
        ck_assert_int_eq(json_integer_value(json_object_get(r, "runs")), 2);
        ck_assert(json_real_value(json_object_get(r, "frames_per_s")) > 0);
        /* The cost model beside the measurement: measured = 1000 / frames/s. */
        const double predicted = json_real_value(json_object_get(r, "predicted_ms_per_frame"));
        const double measured = json_real_value(json_object_get(r, "measured_ms_per_frame"));
        ck_assert(predicted > 0);
        ck_assert_double_eq_tol(measured * json_real_value(json_object_get(r, "frames_per_s")), 1e3,
                                1e-2); /* the JSON keeps 6 digits */
        ck_assert_double_eq_tol(json_real_value(json_object_get(r, "measured_over_predicted")),
                                measured / predicted, 1e-4 * measured / predicted);
        ck_assert(json_is_integer(json_object_get(r, "steps_corrected_by_tuning")));
        /* How busy the machine was: a share, or null (runs this short are too short to
         * tell). */
        json_t *others = json_object_get(r, "others_cpu_share");
        ck_assert(json_is_null(others) ||
                  (json_is_number(others) && json_number_value(others) >= 0.0 &&
                   json_number_value(others) <= 1.0));
      }
    }
    /* naive: 4 intermediates and entropy's and label's scratch per frame (all from its
     * passthrough pool, plume/pipeline.h) and the run's 3 input and output buffers, each
     * an upstream allocation, in each of the 2 timed runs of 4 frames; pooled: none. */
    json_t *naive = result_of(doc, "naive"), *pooled = result_of(doc, "pooled");
    ck_assert_int_eq(json_integer_value(json_object_get(naive, "upstream_allocs")),
                     2 * (4 * (4 + 2) + 3));
    ck_assert(json_real_value(json_object_get(naive, "pool_hit_rate")) == 0.0);
    ck_assert_int_eq(json_integer_value(json_object_get(pooled, "upstream_allocs")), 0);
    ck_assert(json_real_value(json_object_get(pooled, "pool_hit_rate")) == 1.0);
    ck_assert(json_real_value(json_object_get(naive, "speedup_vs_naive")) == 1.0);
    /* The fused plan moves fewer device bytes than the unfused one. */
    json_t *floors = json_array_get(json_object_get(json_object_get(doc, "floors"), "cases"), 0);
    ck_assert_int_lt(json_integer_value(json_object_get(floors, "device_bytes_per_frame_fused")),
                     json_integer_value(json_object_get(floors, "device_bytes_per_frame_unfused")));
    ck_assert_int_eq(json_integer_value(json_object_get(floors, "h2d_bytes_per_frame")),
                     H * W * (d ? 4 : 2));
    json_decref(doc);
    remove(json_path);
  }
}
END_TEST

START_TEST(test_no_fusable_chain) {
  const pipeline_bench_frames from = {
      .pixels = frames_u16, .count = FRAMES, .height = H, .width = W, .dtype = PLM_DTYPE_U16};
  pipeline_bench_options options = options_for(&from);
  options.pipeline = PLM_PRESET_DEFAULT_PIPELINE; /* conv2d ! threshold ! label ! regions */
  options.repeats = 1;
  int code = -1;
  char *table = run(&options, NULL, &code);
  ck_assert_msg(code == 0, "exit %d:\n%s", code, table);
  ck_assert_msg(strstr(table, "skipped: the pipeline has no fusable chain"), "%s", table);
  free(table);
}
END_TEST

START_TEST(test_bad_options) {
  pipeline_bench_frames from = {
      .pixels = frames_u16, .count = FRAMES, .height = H, .width = W, .dtype = PLM_DTYPE_U16};
  pipeline_bench_options options = options_for(&from);
  options.pipeline = "sobel ! entropy windw=3";
  int code = -1;
  free(run(&options, NULL, &code));
  ck_assert_int_eq(code, 2);
  options = options_for(&from);
  options.repeats = 1000;
  free(run(&options, NULL, &code));
  ck_assert_int_eq(code, 2);
  from.count = 0;
  options = options_for(&from);
  free(run(&options, NULL, &code));
  ck_assert_int_eq(code, 2);
  ck_assert(!pipeline_bench_validate_json("/nonexistent/bench.json", stderr));
}
END_TEST

static Suite *bench_suite(void) {
  Suite *suite = suite_create("pipeline_bench");
  TCase *tcase = tcase_create("pipeline_bench");
  tcase_set_timeout(tcase, 120);
  tcase_add_unchecked_fixture(tcase, make_frames, NULL);
  tcase_add_test(tcase, test_supplied_frames_every_config);
  tcase_add_test(tcase, test_no_fusable_chain);
  tcase_add_test(tcase, test_bad_options);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  SRunner *runner = srunner_create(bench_suite());
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

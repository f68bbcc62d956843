/* tests/test_scale.c: costs that must grow linearly, guarded by CTest's TIMEOUT (60 s),
 * never by a timed assertion.
 *
 * Each case does, in one go, an amount of work that takes well under a second when the
 * cost is linear (a few seconds under AddressSanitizer or on the CUDA emulator) and far
 * longer than the timeout when it is quadratic, as it was (issue 39: parsing and
 * compiling 100,000 steps took over two minutes; every op call scanned the whole tuning
 * table). The assertions check only that the work was done right; the timeout is the
 * guard, and a failure of this suite by timeout means a cost has become super-linear.
 *   - a text pipeline of 100,000 steps is parsed and compiled (the planner's conflicts,
 *     placements, order, clocks and fusion search);
 *   - a full tuning table (PLM_TUNING_MAX_ENTRIES entries, the one asked for last) answers
 *     2,000,000 look-ups (a scan of the table per look-up would take minutes). */
#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scratch_dir.h"

enum { PIPELINE_STEPS = 100000, TABLE_LOOKUPS = 2000000 };

START_TEST(test_a_pipeline_of_100000_steps_parses_and_compiles) {
  static const char step[] = "sobel ! ";
  const size_t step_size = sizeof step - 1;
  char *text = malloc(step_size * PIPELINE_STEPS + 1);
  ck_assert_ptr_nonnull(text);
  for (int s = 0; s < PIPELINE_STEPS; s++) memcpy(text + (size_t)s * step_size, step, step_size);
  text[step_size * PIPELINE_STEPS - 3] = '\0'; /* no " ! " after the last */
  const int64_t dims[2] = {8, 8};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(plm_test_ctx, text, PLM_DTYPE_F32, 2, dims, &pl));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_int_eq(info.steps, PIPELINE_STEPS);
  /* A chain on one stream: each intermediate conflicts with its neighbours only, so the
   * workspace is a few of them, not 100,000. */
  ck_assert_uint_le(info.workspace_bytes, 8 * 8 * 4 * 16);
  PLM_CHECK_OK(plm_pipeline_destroy(pl));
  free(text);
}
END_TEST

START_TEST(test_a_full_tuning_table_answers_without_scanning) {
  char dir[SCRATCH_DIR_SIZE];
  scratch_dir_make(dir, "scale");
  setenv("XDG_CACHE_HOME", dir, 1);
  setenv("PLUME_TUNING", "on", 1);
  plm_tuning_reset();
  /* Points of the model of entropy (tunable "": no value) fill the table; its one tunable
   * of this backend comes last, so a scan would pass every entry on each look-up. */
  const bool cuda = plm_test_backend == PLM_BACKEND_CUDA;
  const char *const op = cuda ? "lstm_cell" : "entropy";
  const char *const tunable = cuda ? "gemm_min_batch" : "bands_per_thread";
  const int64_t value = cuda ? 16 : 8;
  plm_tuning_entry *entries = calloc(PLM_TUNING_MAX_ENTRIES, sizeof *entries);
  ck_assert_ptr_nonnull(entries);
  for (int k = 0; k < PLM_TUNING_MAX_ENTRIES; k++) {
    plm_tuning_entry *e = &entries[k];
    *e = (plm_tuning_entry){.size_class = PLM_SIZE_SMALL, .default_ms = 1.0, .model_ms = 1.0};
    snprintf(e->op, sizeof e->op, "%s", op);
  }
  plm_tuning_entry *last = &entries[PLM_TUNING_MAX_ENTRIES - 1];
  snprintf(last->tunable, sizeof last->tunable, "%s", tunable);
  last->value = last->best = value;
  last->kept = true;
  PLM_CHECK_OK(plm_tuning_store(plm_test_ctx, entries, PLM_TUNING_MAX_ENTRIES, NULL, 0));
  plm_tuning_reset(); /* read back from the file, as a new process would */
  plm_tuning_table_info info;
  PLM_CHECK_OK(plm_tuning_table_info_get(plm_test_ctx, &info));
  ck_assert_msg(info.in_use && info.entry_count == PLM_TUNING_MAX_ENTRIES, "%d entries, %s",
                info.entry_count, info.problem);
  int64_t got = 0, wrong = 0;
  for (int k = 0; k < TABLE_LOOKUPS; k++) {
    PLM_CHECK_OK(plm_tuning_get(plm_test_ctx, op, tunable, PLM_SIZE_SMALL, &got));
    wrong += got != value;
  }
  ck_assert_int_eq(wrong, 0);
  free(entries);
  setenv("PLUME_TUNING", "off", 1);
  plm_tuning_reset();
  scratch_dir_remove(dir);
}
END_TEST

static Suite *scale_suite(void) {
  Suite *s = suite_create("scale");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600); /* CTest's TIMEOUT (60 s) is the guard: tests/CMakeLists.txt */
  plm_test_add_fixture(tc);
  tcase_add_test(tc, test_a_pipeline_of_100000_steps_parses_and_compiles);
  tcase_add_test(tc, test_a_full_tuning_table_answers_without_scanning);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return plm_test_main(scale_suite);
}

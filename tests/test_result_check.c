/* tests/test_result_check.c: the one check of a benchmark's result file
 * (support/result_check.h), behind every benchmark's --validate-json.
 *
 * A document that holds what its schema asks passes, silently; each thing a schema can
 * ask for, missing, gives its own one-line message; a benchmark's own check runs only on
 * a document that passed the rest, and its problem is the message; what cannot be read
 * (no file, a FIFO, JSON cut short) is refused with the reader's reason. A plain unit
 * test: no context or backend is involved.
 */
#define _POSIX_C_SOURCE 200809L /* mkfifo, open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/result_check.h"

static char dir[SCRATCH_DIR_SIZE];
static char path[512];
static char fifo[512];

static void make_dir(void) {
  scratch_dir_make(dir, "result-check");
  snprintf(path, sizeof path, "%s/result.json", dir);
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
}

static void remove_dir(void) { scratch_dir_remove(dir); }

static int checks_run;

/* Every result's "n" is even. */
static bool check_even(json_t *doc, char *problem, size_t size) {
  checks_run++;
  json_t *results = json_object_get(doc, "results");
  for (size_t i = 0; i < json_array_size(results); i++)
    if (json_integer_value(json_object_get(json_array_get(results, i), "n")) % 2)
      return result_problem(problem, size, "result %zu has an odd n", i);
  return true;
}

static const char *const keys[] = {"benchmark", "device", "results", NULL};
static const char *const result_keys[] = {"name", NULL};
static const char *const result_numbers[] = {"n", "median_us", NULL};
static const result_schema schema = {.prog = "bench_test",
                                     .benchmark = "test",
                                     .keys = keys,
                                     .result_keys = result_keys,
                                     .result_numbers = result_numbers,
                                     .check = check_even};

static char message[1024];

/* Check file against schema; message gets what was printed. */
static bool check_file(const char *file) {
  char *printed = NULL;
  size_t printed_size = 0;
  FILE *err = open_memstream(&printed, &printed_size);
  ck_assert_ptr_nonnull(err);
  bool valid = result_check_file(file, &schema, err);
  ck_assert_int_eq(fclose(err), 0);
  snprintf(message, sizeof message, "%s", printed);
  free(printed);
  return valid;
}

/* Check path, holding text (unless text is NULL), against schema. */
static bool check_text(const char *text) {
  if (text) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
  }
  return check_file(path);
}

static void refused_with(const char *text, const char *problem) {
  char want[1024];
  snprintf(want, sizeof want, "bench_test: %s: not a bench_test result: %s\n", path, problem);
  ck_assert_msg(!check_text(text), "%s passed", text);
  ck_assert_str_eq(message, want);
}

START_TEST(test_a_valid_document_passes_silently) {
  checks_run = 0;
  ck_assert(
      check_text("{\"benchmark\": \"test\", \"device\": null, \"results\": ["
                 "{\"name\": \"a\", \"n\": 2, \"median_us\": 1.5},"
                 "{\"name\": null, \"n\": 4, \"median_us\": 0}]}"));
  ck_assert_str_eq(message, "");
  ck_assert_int_eq(checks_run, 1);
}
END_TEST

START_TEST(test_each_missing_part_is_named) {
  checks_run = 0;
  refused_with("{\"benchmark\": \"test\", \"results\": []}", "no \"device\"");
  refused_with("{\"benchmark\": \"pool\", \"device\": 1, \"results\": []}",
               "\"benchmark\" is not \"test\"");
  refused_with("{\"benchmark\": 7, \"device\": 1, \"results\": []}",
               "\"benchmark\" is not \"test\"");
  refused_with("{\"benchmark\": \"test\", \"device\": 1, \"results\": []}",
               "\"results\" is not a non-empty array");
  refused_with("{\"benchmark\": \"test\", \"device\": 1, \"results\": {\"n\": 2}}",
               "\"results\" is not a non-empty array");
  refused_with(
      "{\"benchmark\": \"test\", \"device\": 1, \"results\": ["
      "{\"name\": \"a\", \"n\": 2, \"median_us\": 1}, {\"n\": 2, \"median_us\": 1}]}",
      "result 1 lacks \"name\"");
  refused_with(
      "{\"benchmark\": \"test\", \"device\": 1, \"results\": ["
      "{\"name\": \"a\", \"n\": \"2\", \"median_us\": 1}]}",
      "result 0 lacks a number \"n\"");
  refused_with(
      "{\"benchmark\": \"test\", \"device\": 1, \"results\": ["
      "{\"name\": \"a\", \"n\": 2, \"median_us\": null}]}",
      "result 0 lacks a number \"median_us\"");
  ck_assert_int_eq(checks_run, 0); /* the benchmark's own check waits for the rest */
  refused_with(
      "{\"benchmark\": \"test\", \"device\": 1, \"results\": ["
      "{\"name\": \"a\", \"n\": 2, \"median_us\": 1}, {\"name\": \"b\", \"n\": 3, "
      "\"median_us\": 1}]}",
      "result 1 has an odd n");
  ck_assert_int_eq(checks_run, 1);
}
END_TEST

START_TEST(test_what_cannot_be_read_is_refused) {
  char want[1024];
  ck_assert(!check_text("{\"benchmark\": "));
  snprintf(want, sizeof want, "bench_test: %s:1:14: unexpected token near end of file\n", path);
  ck_assert_str_eq(message, want);
  ck_assert(!check_text("[1, 2]"));
  ck_assert_ptr_nonnull(strstr(message, "not a bench_test result: no \"benchmark\""));
  unlink(path);
  ck_assert(!check_text(NULL));
  snprintf(want, sizeof want, "bench_test: %s: cannot open: No such file or directory\n", path);
  ck_assert_str_eq(message, want);
  /* A FIFO without a writer is refused at once, not waited on. */
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  ck_assert(!check_file(fifo));
  snprintf(want, sizeof want, "bench_test: %s: not a regular file (it is a FIFO)\n", fifo);
  ck_assert_str_eq(message, want);
}
END_TEST

static Suite *result_check_suite(void) {
  Suite *suite = suite_create("result_check");
  TCase *tc = tcase_create("result_check");
  tcase_add_unchecked_fixture(tc, make_dir, remove_dir);
  tcase_add_test(tc, test_a_valid_document_passes_silently);
  tcase_add_test(tc, test_each_missing_part_is_named);
  tcase_add_test(tc, test_what_cannot_be_read_is_refused);
  suite_add_tcase(suite, tc);
  return suite;
}

int main(void) {
  SRunner *runner = srunner_create(result_check_suite());
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

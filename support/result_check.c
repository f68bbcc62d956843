/* support/result_check.c: see result_check.h. */
#include "support/result_check.h"

#include <stdarg.h>
#include <string.h>

#include "support/quote.h"
#include "support/regular_file.h"

bool result_problem(char *problem, size_t size, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(problem, size, fmt, args);
  va_end(args);
  return false;
}

/* The first key of keys (NULL-terminated, may be NULL) that o lacks, or lacks as a number
 * when numbers; NULL when it has them all. */
static const char *missing_key(json_t *o, const char *const *keys, bool numbers) {
  for (size_t k = 0; keys && keys[k]; k++) {
    json_t *v = json_object_get(o, keys[k]);
    if (!v || (numbers && !json_is_number(v))) return keys[k];
  }
  return NULL;
}

/* The first problem of doc against schema into problem; false when there is one. */
static bool check_document(json_t *doc, const result_schema *schema, char *problem, size_t size) {
  const char *key = missing_key(doc, schema->keys, false);
  if (key) return result_problem(problem, size, "no \"%s\"", key);
  const char *benchmark = json_string_value(json_object_get(doc, "benchmark"));
  if (!benchmark || strcmp(benchmark, schema->benchmark) != 0)
    return result_problem(problem, size, "\"benchmark\" is not \"%s\"", schema->benchmark);
  json_t *results = json_object_get(doc, "results");
  if (!json_is_array(results) || json_array_size(results) == 0)
    return result_problem(problem, size, "\"results\" is not a non-empty array");
  for (size_t i = 0; i < json_array_size(results); i++) {
    json_t *r = json_array_get(results, i);
    if ((key = missing_key(r, schema->result_keys, false)))
      return result_problem(problem, size, "result %zu lacks \"%s\"", i, key);
    if ((key = missing_key(r, schema->result_numbers, true)))
      return result_problem(problem, size, "result %zu lacks a number \"%s\"", i, key);
  }
  return !schema->check || schema->check(doc, problem, size);
}

bool result_check_file(const char *path, const result_schema *schema, FILE *err) {
  if (!err) err = stderr;
  char shown[QUOTE_SIZE]; /* path as given, escaped: the messages stay one line */
  quote_text(path, shown, sizeof shown);
  char why[QUOTE_SIZE + RESULT_PROBLEM_SIZE];
  FILE *file = file_open_read(path, NULL, why, sizeof why);
  if (!file) {
    fprintf(err, "%s: %s\n", schema->prog, why);
    return false;
  }
  json_error_t error;
  json_t *doc = json_loadf(file, 0, &error);
  fclose(file);
  if (!doc) {
    fprintf(err, "%s: %s:%d:%d: %s\n", schema->prog, shown, error.line, error.column, error.text);
    return false;
  }
  char problem[RESULT_PROBLEM_SIZE] = "";
  const bool valid = check_document(doc, schema, problem, sizeof problem);
  if (!valid)
    fprintf(err, "%s: %s: not a %s result: %s\n", schema->prog, shown, schema->prog, problem);
  json_decref(doc);
  return valid;
}

/* support/result_check.h: whether a file holds a benchmark's result document, the one
 * checker behind every benchmark's --validate-json and the re-read after its JSON is
 * written (bench_ops, bench_pool, bench_matmul, bench_pipeline and `plume demo`).
 *
 * A result document is a JSON object whose "benchmark" names the benchmark ("pool") and
 * whose "results" is a non-empty array of objects. A schema says what else a benchmark
 * requires: keys of the document, keys of every result and, of those, the ones that
 * must be numbers; a benchmark's own rules (a crossover's integers, a row that must be
 * there) go in its check function, run last on a document that passed the rest.
 *
 * The file is opened by the library's one opener (streams/file.h: never blocks on a FIFO,
 * refuses what is not a regular file). What is wrong is printed as one line on err, the
 * path escaped by quote_text (support/quote.h):
 *   "<prog>: PATH: cannot open: No such file or directory"
 *   "<prog>: PATH:LINE:COLUMN: <jansson's message>"
 *   "<prog>: PATH: not a <prog> result: <problem>"
 * where problem is one of: no "KEY"; "benchmark" is not "pool"; "results" is not a
 * non-empty array; result I lacks "KEY"; result I lacks a number "KEY"; or the check
 * function's. Reentrant; no global state.
 */
#ifndef PLUME_SUPPORT_RESULT_CHECK_H
#define PLUME_SUPPORT_RESULT_CHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Room for any problem a check function writes. */
enum { RESULT_PROBLEM_SIZE = 160 };

typedef struct result_schema {
  const char *prog;      /* "bench_pool": the messages' first word */
  const char *benchmark; /* "pool": the document's "benchmark" */
  /* Each NULL-terminated (NULL: none): keys the document must hold, keys every result
   * must hold, and keys every result must hold as numbers (JSON integers or reals). */
  const char *const *keys;
  const char *const *result_keys;
  const char *const *result_numbers;
  /* (optional) The benchmark's own rules, on a document that passed those above: returns
   * false after writing the problem into problem (RESULT_PROBLEM_SIZE bytes). */
  bool (*check)(json_t *doc, char *problem, size_t size);
} result_schema;

/* Writes printf's fmt into problem (size bytes) and returns false, so that a check
 * function fails in one line: return result_problem(problem, size, "no \"%s\"", key); */
bool result_problem(char *problem, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether path holds a result document as schema says; prints what is wrong to err
 * (stderr when NULL) and returns false when it does not. */
bool result_check_file(const char *path, const result_schema *schema, FILE *err);

#endif /* PLUME_SUPPORT_RESULT_CHECK_H */

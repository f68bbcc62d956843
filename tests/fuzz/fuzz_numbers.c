/* tests/fuzz/fuzz_numbers.c: the numeric parsers of the command line on arbitrary text:
 * count_parse and size_parse (support/count_parse.h: plume scene, score, detect
 * and demo), plm__parse_int and plm__parse_number, and plm__op_param_parse, which reads
 * every op parameter of `plume op --key value` and of text pipelines (ops/op_desc.h).
 *
 * Feeds: the input's first byte picks one parameter of one op (counting through every
 * op's schema), its second byte the kernel size plm__op_param_parse is given (for
 * pad=same), the rest, up to its first NUL, is the text every parser reads.
 * Checks: no crash, leak or undefined behaviour whatever the text (sanitizers), and each
 * parser's contract: a count is digits only, in range, and prints back as the digits
 * less their leading zeros; with end, *end is the first non-digit; a size is two counts
 * in range; a number is finite, and reads with end to the same value; a failure changes
 * nothing. A parameter read is formatted back (plm__op_param_format) and that text reads
 * to the same field bytes; a failure leaves the params unchanged and says why.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_desc.h"
#include "plume/pipeline.h"
#include "support/count_parse.h"
#include "support/scene.h"

/* Every character from text to end is a digit, and end is not one. */
static int digits_up_to(const char *text, const char *end) {
  if (end <= text || (*end >= '0' && *end <= '9')) return 0;
  for (const char *p = text; p < end; p++)
    if (*p < '0' || *p > '9') return 0;
  return 1;
}

/* value printed in decimal is the digits from text to end without their leading zeros. */
static int prints_as(uint64_t value, const char *text, const char *end) {
  char printed[32];
  while (end - text > 1 && *text == '0') text++;
  snprintf(printed, sizeof printed, "%" PRIu64, value);
  return strlen(printed) == (size_t)(end - text) && memcmp(printed, text, (size_t)(end - text)) == 0;
}

static void check_count(const char *text, uint64_t min, uint64_t max) {
  uint64_t whole = 12345, part = 12345;
  const char *end = NULL;
  const int got_whole = count_parse(text, NULL, min, max, &whole);
  const int got_part = count_parse(text, &end, min, max, &part);
  if (!got_whole && whole != 12345) abort();
  if (!got_part && (part != 12345 || end)) abort();
  if (got_part && (!digits_up_to(text, end) || part < min || part > max ||
                   !prints_as(part, text, end)))
    abort();
  if (got_whole != (got_part && *end == '\0')) abort();
  if (got_whole && whole != part) abort();
}

static void check_size(const char *text) {
  int64_t h = -1, w = -1;
  if (!size_parse(text, SCENE_MIN_SIDE, SCENE_MAX_SIDE, &h, &w)) {
    if (h != -1 || w != -1) abort();
    return;
  }
  if (h < SCENE_MIN_SIDE || h > SCENE_MAX_SIDE || w < SCENE_MIN_SIDE || w > SCENE_MAX_SIDE) abort();
}

static void check_int(const char *text, int64_t min, int64_t max) {
  int64_t whole = -7, part = -7;
  const char *end = NULL;
  const int got_whole = plm__parse_int(text, NULL, min, max, &whole);
  const int got_part = plm__parse_int(text, &end, min, max, &part);
  if (!got_part && (part != -7 || end)) abort();
  if (got_part && (!digits_up_to(text, end) || part < min || part > max ||
                   !prints_as((uint64_t)part, text, end)))
    abort();
  if (got_whole != (got_part && *end == '\0')) abort();
  if (got_whole && whole != part) abort();
}

static void check_number(const char *text) {
  double whole = -7, part = -7;
  const char *end = NULL;
  const int got_whole = plm__parse_number(text, NULL, &whole);
  const int got_part = plm__parse_number(text, &end, &part);
  if (!got_part && (part != -7 || end)) abort();
  if (got_part && (!isfinite(part) || end <= text || end > text + strlen(text))) abort();
  if (got_whole != (got_part && *end == '\0')) abort();
  if (got_whole && memcmp(&whole, &part, sizeof whole) != 0) abort();
}

/* The pick-th parameter of all the ops' schemas, taken in turn; NULL when none has any. */
static const plm__op_param *param_of(unsigned pick, const plm__op_desc **op) {
  int total = 0;
  for (int k = 0; k < PLM__OP_COUNT; k++) total += plm__op_get(k)->param_count;
  if (total == 0) return NULL;
  pick %= (unsigned)total;
  for (int k = 0;; k++) {
    *op = plm__op_get(k);
    if (pick < (unsigned)(*op)->param_count) return &(*op)->params[pick];
    pick -= (unsigned)(*op)->param_count;
  }
}

static void check_param(unsigned pick, int kh, int kw, const char *text) {
  const plm__op_desc *op = NULL;
  const plm__op_param *p = param_of(pick, &op);
  if (!p) return;
  plm__op_params before, params, again;
  memset(&before, 0, sizeof before);
  plm__op_params_default(op, &before);
  memcpy(&params, &before, sizeof params);
  char why[256] = "", formatted[256];
  if (!plm__op_param_parse(p, text, kh, kw, &params, why, sizeof why)) {
    if (why[0] == '\0' || memcmp(&params, &before, sizeof params) != 0) abort();
    return;
  }
  plm__op_param_format(p, &params, formatted, sizeof formatted);
  memcpy(&again, &before, sizeof again);
  if (!plm__op_param_parse(p, formatted, kh, kw, &again, why, sizeof why) ||
      memcmp(&again, &params, sizeof again) != 0) {
    fprintf(stderr, "%s %s: '%s' reads back from '%s' differently\n", op->name, p->name, text,
            formatted);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  const unsigned pick = data[0];
  const int kernel = 1 + data[1] % PLM_CONV2D_MAX_KERNEL;
  char *text = malloc(size - 1);
  if (!text) abort();
  memcpy(text, data + 2, size - 2);
  text[size - 2] = '\0';

  check_count(text, 1, SCENE_MAX_FRAMES);
  check_count(text, 0, UINT64_MAX);
  check_count(text, 1, PLM_PIPELINE_MAX_FRAMES);
  check_size(text);
  check_int(text, 0, INT64_MAX);
  check_int(text, 1, 255);
  check_number(text);
  check_param(pick, kernel, data[1] & 0x80 ? kernel + 1 : kernel, text);
  free(text);
  return 0;
}

/* tests/fuzz/pipeline_dict_check.c: checks that the dictionary of the pipeline harness
 * (pipeline.dict) names every op and key of the op table, so that it cannot go stale
 * when an op, a parameter or a choice is added (ops/op_desc.h).
 *
 * Usage: pipeline_dict_check PATH. The dictionary is libFuzzer's format: one entry a
 * line, `"value"` or `name="value"`, with \\, \" and \xNN escapes; '#' starts a comment
 * line. It must hold, for every descriptor of the table:
 *   "<op name>"        the element (the fused op too, though the text cannot name it);
 *   "<key>="           every key the text form takes: each parameter, and each input
 *                      given as key=@NAME or key=input|none (pipeline/parse.c), and size=
 *                      for an op with a kernel input;
 *   "<choice>"         every name a CHOICE parameter takes.
 * Prints each missing entry and exits 1 when there is one, 0 otherwise, 2 when the file
 * cannot be read. Built in every configuration (ctest -L unit runs it), with or without
 * the fuzz harnesses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_desc.h"

enum { MAX_ENTRIES = 1024, ENTRY_SIZE = 256 };

static char entries[MAX_ENTRIES][ENTRY_SIZE];
static int entry_count;
static int missing;

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The value between the quotes of one entry line, unescaped; false when there is none. */
static int entry_value(const char *line, char *value) {
  const char *p = strchr(line, '"');
  if (!p || line[0] == '#') return 0;
  size_t n = 0;
  for (p++; *p && *p != '"' && n + 1 < ENTRY_SIZE; p++) {
    if (*p == '\\' && p[1] == 'x' && hex_digit(p[2]) >= 0 && hex_digit(p[3]) >= 0) {
      value[n++] = (char)(hex_digit(p[2]) * 16 + hex_digit(p[3]));
      p += 3;
    } else {
      if (*p == '\\' && p[1]) p++;
      value[n++] = *p;
    }
  }
  value[n] = '\0';
  return *p == '"';
}

static int read_dictionary(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[1024];
  while (fgets(line, sizeof line, f) && entry_count < MAX_ENTRIES)
    if (entry_value(line, entries[entry_count])) entry_count++;
  fclose(f);
  return 1;
}

/* Report text (with suffix) unless the dictionary has it as an entry. */
static void need(const char *op, const char *text, const char *suffix) {
  char wanted[ENTRY_SIZE];
  snprintf(wanted, sizeof wanted, "%s%s", text, suffix);
  for (int i = 0; i < entry_count; i++)
    if (strcmp(entries[i], wanted) == 0) return;
  printf("missing from the dictionary: \"%s\" (%s)\n", wanted, op);
  missing++;
}

static void need_op(const plm__op_desc *op) {
  need(op->name, op->name, "");
  int kernel = 0;
  for (int k = 0; k < op->input_count; k++) {
    const int role = op->inputs[k].role;
    if (role == PLM__IN_TENSOR || role == PLM__IN_KERNEL || role == PLM__IN_FRAME)
      need(op->name, op->inputs[k].name, "=");
    kernel |= role == PLM__IN_KERNEL;
  }
  if (kernel) need(op->name, "size", "=");
  for (int i = 0; i < op->param_count; i++) {
    const plm__op_param *p = &op->params[i];
    need(op->name, p->name, "=");
    for (int c = 0; p->type == PLM__PARAM_CHOICE && p->choices[c]; c++)
      need(op->name, p->choices[c], "");
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: pipeline_dict_check PATH\n");
    return 2;
  }
  if (!read_dictionary(argv[1])) {
    perror(argv[1]);
    return 2;
  }
  for (int k = 0; k < PLM__OP_COUNT; k++) need_op(plm__op_get(k));
  if (missing) {
    printf("%s: %d entries missing (tests/fuzz/pipeline_dict_check.c says which belong)\n",
           argv[1], missing);
    return 1;
  }
  printf("%s: every op and key of the %d ops (%d entries)\n", argv[1], PLM__OP_COUNT,
         entry_count);
  return 0;
}

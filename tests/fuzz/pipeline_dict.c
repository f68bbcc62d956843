/* tests/fuzz/pipeline_dict.c: writes the dictionary of the pipeline harness, the grammar's
 * entries (pipeline-grammar.dict) followed by every word of the op table, so that an op,
 * a parameter or a choice added there (ops/op_desc.h) reaches the fuzzer with nothing
 * else edited.
 *
 * Usage: pipeline_dict GRAMMAR OUT. The dictionary is libFuzzer's format: one entry a
 * line, `name="value"`; '#' starts a comment line. The table's entries, each once:
 *   op_<name>="<name>"          every op (the fused one too, though the text cannot name it);
 *   key_<key>="<key>="          every key the text form takes: each parameter, and each
 *                               input given as key=@NAME or key=input|none
 *                               (pipeline/parse.c), and size= for an op with a kernel input;
 *   choice_<name>="<name>"      every name a CHOICE parameter takes.
 * Exits 0, or 2 when GRAMMAR cannot be read or OUT written (saying which). CMake runs it
 * at build time (tests/fuzz/CMakeLists.txt), in every configuration, so it is compiled and
 * run by gcc's jobs too.
 */
#include <stdio.h>
#include <string.h>

#include "ops/op_desc.h"

enum { MAX_WORDS = 1024, WORD_SIZE = 64 };

static char written[MAX_WORDS][WORD_SIZE];
static int written_count;

/* Write kind_<text>="<text><suffix>" unless an entry of that value was written already.
 * The table's words are identifiers, digits and '_': nothing to escape. */
static void write_word(FILE *out, const char *kind, const char *text, const char *suffix) {
  char value[WORD_SIZE];
  snprintf(value, sizeof value, "%s%s", text, suffix);
  for (int i = 0; i < written_count; i++)
    if (strcmp(written[i], value) == 0) return;
  if (written_count < MAX_WORDS) strcpy(written[written_count++], value);
  fprintf(out, "%s_%s=\"%s\"\n", kind, text, value);
}

static void write_op(FILE *out, const plm__op_desc *op) {
  write_word(out, "op", op->name, "");
  int kernel = 0;
  for (int k = 0; k < op->input_count; k++) {
    const int role = op->inputs[k].role;
    if (role == PLM__IN_TENSOR || role == PLM__IN_KERNEL || role == PLM__IN_FRAME)
      write_word(out, "key", op->inputs[k].name, "=");
    kernel |= plm__op_slot_takes_size(&op->inputs[k]);
  }
  if (kernel) write_word(out, "key", "size", "=");
  for (int i = 0; i < op->param_count; i++) {
    const plm__op_param *p = &op->params[i];
    write_word(out, "key", p->name, "=");
    for (int c = 0; p->type == PLM__PARAM_CHOICE && p->choices[c]; c++)
      write_word(out, "choice", p->choices[c], "");
  }
}

static int copy_file(FILE *out, const char *path) {
  FILE *in = fopen(path, "r");
  if (!in) return 0;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, in)) > 0) fwrite(buffer, 1, n, out);
  int ok = !ferror(in);
  fclose(in);
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: pipeline_dict GRAMMAR OUT\n");
    return 2;
  }
  FILE *out = fopen(argv[2], "w");
  if (!out) {
    perror(argv[2]);
    return 2;
  }
  if (!copy_file(out, argv[1])) {
    perror(argv[1]);
    fclose(out);
    return 2;
  }
  fprintf(out, "\n# The op table's words (ops/op_desc.h), written by pipeline_dict.\n");
  for (int k = 0; k < PLM__OP_COUNT; k++) write_op(out, plm__op_get(k));
  if (fclose(out) != 0) {
    perror(argv[2]);
    return 2;
  }
  return 0;
}

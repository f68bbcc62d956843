/* tests/fuzz/fuzz_tuning_table.c: the tuning-table reader (ops/op_tuning.c, through
 * plm_tuning_table_info_get and plm_tuning_entries: plume/tuning.h) on files whose
 * content, or kind, the input chooses, in a cache directory of the harness's own
 * (XDG_CACHE_HOME in fuzz_dir()).
 *
 * Feeds: byte 0 picks what is at the table's path: 0 (and 3) the rest of the input as
 * the file, every "@KEY@" in it replaced by the table's key so that a table can match
 * this device; 1 a FIFO; 2 a folder. Each input starts from a process that has loaded no
 * table (plm_tuning_reset).
 * Checks: no crash, leak, hang or undefined behaviour (sanitizers; a FIFO that blocked
 * would time out); a table loaded holds only entries the library knows (each one's op,
 * tunable and size class resolve, and plm_tuning_get gives every tunable a candidate),
 * as many as the info says; a FIFO or a folder is not in use and is reported as not a
 * regular file, and plm_tuning_store refuses to replace it.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, mkfifo */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plume/context.h"
#include "plume/op_info.h"
#include "plume/tuning.h"
#include "tests/fuzz/fuzz_files.h"

static plm_context *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/plume", fuzz_dir());
  if (setenv("XDG_CACHE_HOME", fuzz_dir(), 1) != 0 || unsetenv("PLUME_TUNING") != 0 ||
      (mkdir(dir, 0755) != 0 && errno != EEXIST) ||
      plm_context_create(&(plm_context_config){.backend = PLM_BACKEND_HOST}, &ctx) != PLM_OK) {
    fprintf(stderr, "fuzz_tuning_table: setting up: %s\n", plm_last_error());
    abort();
  }
  return 0;
}

/* Write data to path with every "@KEY@" replaced by key (JSON-escaped). */
static void write_table(const char *path, const uint8_t *data, size_t size, const char *key) {
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  static const char marker[] = "@KEY@";
  const size_t marker_length = sizeof marker - 1;
  for (size_t k = 0; k < size;) {
    if (size - k >= marker_length && memcmp(data + k, marker, marker_length) == 0) {
      for (const char *c = key; *c; c++) {
        if (*c == '"' || *c == '\\') fputc('\\', f);
        fputc(*c, f);
      }
      k += marker_length;
    } else {
      fputc(data[k++], f);
    }
  }
  if (fclose(f) != 0) abort();
}

/* Every op's every tunable of the host resolves to one of its candidates. */
static void check_values(void) {
  const int ops = plm_op_count();
  for (int op = 0; op < ops; op++) {
    plm_op_info info;
    int tunables = 0;
    if (plm_op_info_get(op, &info) != PLM_OK || plm_op_tunable_count(op, &tunables) != PLM_OK)
      abort();
    for (int k = 0; k < tunables; k++) {
      plm_tunable_info t;
      if (plm_op_tunable_info_get(op, k, &t) != PLM_OK) abort();
      if (t.backend != PLM_BACKEND_HOST) continue;
      for (int size_class = 0; size_class < PLM_SIZE_CLASS_COUNT; size_class++) {
        int64_t value = 0;
        if (plm_tuning_get(ctx, info.name, t.name, (plm_size_class)size_class, &value) != PLM_OK)
          abort();
        int candidate = 0;
        for (int j = 0; j < t.candidate_count; j++) candidate |= t.candidates[j] == value;
        if (!candidate) abort();
      }
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ctx) LLVMFuzzerInitialize(NULL, NULL);
  const int kind = size ? data[0] % 4 : 0;
  plm_tuning_reset();
  plm_tuning_table_info info;
  if (plm_tuning_table_info_get(ctx, &info) != PLM_OK || !info.path[0]) abort();
  char key[sizeof info.key], table[sizeof info.path];
  snprintf(key, sizeof key, "%s", info.key);
  snprintf(table, sizeof table, "%s", info.path);
  if (kind == 1) {
    if (mkfifo(table, 0644) != 0) abort();
  } else if (kind == 2) {
    if (mkdir(table, 0755) != 0) abort();
  } else {
    write_table(table, size ? data + 1 : data, size ? size - 1 : 0, key);
  }
  plm_tuning_reset();
  plm_tuning_entry *entries = NULL;
  size_t count = 0;
  if (plm_tuning_table_info_get(ctx, &info) != PLM_OK ||
      plm_tuning_entries(ctx, &entries, &count) != PLM_OK)
    abort();
  if (count != (size_t)info.entry_count || (count && !info.in_use)) abort();
  for (size_t k = 0; k < count; k++) {
    int index = -1;
    plm_tunable_info t;
    if ((unsigned)entries[k].size_class >= PLM_SIZE_CLASS_COUNT) abort();
    if (entries[k].tunable[0]) {
      int op = -1, tunables = 0;
      for (int o = 0; o < plm_op_count() && op < 0; o++) {
        plm_op_info oi;
        if (plm_op_info_get(o, &oi) == PLM_OK && strcmp(oi.name, entries[k].op) == 0) op = o;
      }
      if (op < 0 || plm_op_tunable_count(op, &tunables) != PLM_OK) abort();
      for (int j = 0; j < tunables && index < 0; j++)
        if (plm_op_tunable_info_get(op, j, &t) == PLM_OK && t.backend == PLM_BACKEND_HOST &&
            strcmp(t.name, entries[k].tunable) == 0)
          index = j;
      if (index < 0) abort();
    }
  }
  free(entries);
  check_values();
  if (kind == 1 || kind == 2) {
    if (info.in_use || !strstr(info.problem, "not a regular file")) abort();
    if (plm_tuning_store(ctx, NULL, 0, NULL, 0) != PLM_ERR_IO) abort();
    struct stat st;
    if (lstat(table, &st) != 0 || (kind == 1 ? !S_ISFIFO(st.st_mode) : !S_ISDIR(st.st_mode)))
      abort();
  }
  if (kind == 2 ? rmdir(table) != 0 : unlink(table) != 0) abort();
  plm_tuning_reset();
  return 0;
}

/* support/csv.c: numeric CSV tables (support/csv.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/csv.h"
#include "support/regular_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plume/label.h"

void csv_free(csv_table *table) {
  if (!table) return;
  for (int i = 0; table->names && i < table->columns; i++) free(table->names[i]);
  free(table->names);
  free(table->values);
  memset(table, 0, sizeof *table);
}

int csv_column(const csv_table *table, const char *name) {
  if (!table || !name) return -1;
  for (int i = 0; i < table->columns; i++)
    if (strcmp(table->names[i], name) == 0) return i;
  return -1;
}

/* Read the whole file, NUL-terminated. */
static plm_status slurp(const char *path, char **text, size_t *length, char *err, size_t err_size) {
  plm_status status = file_read_all(path, CSV_MAX_BYTES, text, length, err, err_size);
  if (status == PLM_OK && memchr(*text, '\0', *length)) {
    free(*text);
    *text = NULL;
    return path_failure(err, err_size, path, 0, PLM_ERR_IO, "a NUL byte: not a text file");
  }
  return status;
}

/* Split the line (NUL-terminated, no newline) at commas in place; fields[] gets up to
 * max pointers; returns the number of fields (max + 1 when there are more). */
static int split(char *line, char **fields, int max) {
  int n = 0;
  for (char *p = line;;) {
    if (n < max) fields[n] = p;
    n++;
    char *comma = strchr(p, ',');
    if (!comma || n > max) return n;
    *comma = '\0';
    p = comma + 1;
  }
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
  return s;
}

static bool valid_name(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return false;
  return true;
}

/* The next line of text from *cursor (the newline and a '\r' before it removed);
 * NULL at the end. */
static char *next_line(char **cursor, const char *end) {
  char *start = *cursor;
  if (start >= end) return NULL;
  char *newline = memchr(start, '\n', (size_t)(end - start));
  char *stop = newline ? newline : (char *)end;
  *cursor = newline ? newline + 1 : (char *)end;
  if (stop > start && stop[-1] == '\r') stop--;
  *stop = '\0';
  return start;
}

enum { CSV_MAX_COLUMNS = 256 };

static plm_status parse(const char *path, char *text, size_t length, csv_table *t, char *err,
                        size_t err_size) {
  char *cursor = text, *end = text + length;
  char *fields[CSV_MAX_COLUMNS];
  char *header = next_line(&cursor, end);
  if (!header)
    return path_failure(err, err_size, path, 0, PLM_ERR_IO, "the file is empty: no header");
  int columns = split(header, fields, CSV_MAX_COLUMNS);
  if (columns > CSV_MAX_COLUMNS)
    return path_failure(err, err_size, path, 1, PLM_ERR_IO, "more than %d columns",
                        CSV_MAX_COLUMNS);
  t->names = calloc((size_t)columns, sizeof *t->names);
  if (!t->names)
    return path_failure(err, err_size, path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  t->columns = columns;
  for (int i = 0; i < columns; i++) {
    char *name = trim(fields[i]);
    if (!valid_name(name))
      return path_failure(err, err_size, path, 1, PLM_ERR_IO,
                          "header field %d '%.40s' is not a column name (letters, digits, '_')",
                          i + 1, name);
    for (int j = 0; j < i; j++)
      if (strcmp(t->names[j], name) == 0)
        return path_failure(err, err_size, path, 1, PLM_ERR_IO, "column '%s' appears twice", name);
    if (!(t->names[i] = strdup(name)))
      return path_failure(err, err_size, path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  }
  /* Rows: at most one per remaining newline, plus a last one without. */
  int64_t room = 1;
  for (const char *p = cursor; p < end; p++) room += *p == '\n';
  t->values = malloc((size_t)room * (size_t)columns * sizeof *t->values);
  if (!t->values)
    return path_failure(err, err_size, path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  int64_t line_number = 1;
  char *line;
  while ((line = next_line(&cursor, end)) != NULL) {
    line_number++;
    if (*line == '\0')
      return path_failure(err, err_size, path, line_number, PLM_ERR_IO, "empty line");
    int n = split(line, fields, columns);
    if (n != columns)
      return path_failure(err, err_size, path, line_number, PLM_ERR_IO,
                          "%s fields, the header has %d", n > columns ? "more" : "fewer", columns);
    double *row = t->values + t->rows * columns;
    for (int i = 0; i < columns; i++) {
      char *field = trim(fields[i]), *stop = NULL;
      errno = 0;
      row[i] = strtod(field, &stop);
      if (!*field || *stop || (errno == ERANGE && (row[i] > 1 || row[i] < -1)))
        return path_failure(err, err_size, path, line_number, PLM_ERR_IO,
                            "field %d (%s) '%.40s' is not a number", i + 1, t->names[i], field);
    }
    t->rows++;
  }
  return PLM_OK;
}

plm_status csv_read(const char *path, csv_table *out, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!path) return path_failure(err, err_size, "csv_read", 0, PLM_ERR_INVALID_ARG, "path is NULL");
  if (!out) return path_failure(err, err_size, path, 0, PLM_ERR_INVALID_ARG, "out is NULL");
  memset(out, 0, sizeof *out);
  char *text = NULL;
  size_t length = 0;
  plm_status status = slurp(path, &text, &length, err, err_size);
  if (status != PLM_OK) return status;
  status = parse(path, text, length, out, err, err_size);
  free(text);
  if (status != PLM_OK) csv_free(out);
  return status;
}

/* ---- regions tables -------------------------------------------------------------------- */

/* snprintf's count, clamped to what buf holds. */
static size_t written(int n, size_t size) {
  if (n < 0) return 0;
  return (size_t)n < size ? (size_t)n : (size ? size - 1 : 0);
}

size_t csv_regions_header(char *buf, size_t size, bool frame, bool intensity) {
  return written(
      snprintf(buf, size,
               "%slabel,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col%s\n",
               frame ? "frame," : "", intensity ? ",sum,max,wcentroid_row,wcentroid_col" : ""),
      size);
}

size_t csv_regions_row(char *buf, size_t size, int64_t frame, const double *row, bool intensity) {
  char frame_text[32] = "";
  if (frame >= 0) snprintf(frame_text, sizeof frame_text, "%lld,", (long long)frame);
  int n;
  if (intensity)
    n = snprintf(buf, size, "%s%lld,%lld,%lld,%lld,%lld,%lld,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
                 frame_text, (long long)row[PLM_REGION_LABEL], (long long)row[PLM_REGION_AREA],
                 (long long)row[PLM_REGION_MIN_ROW], (long long)row[PLM_REGION_MIN_COL],
                 (long long)row[PLM_REGION_MAX_ROW], (long long)row[PLM_REGION_MAX_COL],
                 row[PLM_REGION_CENTROID_ROW], row[PLM_REGION_CENTROID_COL], row[PLM_REGION_SUM],
                 row[PLM_REGION_MAX], row[PLM_REGION_WCENTROID_ROW], row[PLM_REGION_WCENTROID_COL]);
  else
    n = snprintf(buf, size, "%s%lld,%lld,%lld,%lld,%lld,%lld,%.17g,%.17g\n", frame_text,
                 (long long)row[PLM_REGION_LABEL], (long long)row[PLM_REGION_AREA],
                 (long long)row[PLM_REGION_MIN_ROW], (long long)row[PLM_REGION_MIN_COL],
                 (long long)row[PLM_REGION_MAX_ROW], (long long)row[PLM_REGION_MAX_COL],
                 row[PLM_REGION_CENTROID_ROW], row[PLM_REGION_CENTROID_COL]);
  return written(n, size);
}

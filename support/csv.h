/* support/csv.h: numeric CSV tables for the command-line tool and the tests: a small reader,
 * and the writer of regions tables.
 *
 * The tables plume writes (truth tables, region tables, detections): a header line of
 * column names, then rows of numbers, every field separated by one comma, no quoting.
 *   - Column names are non-empty, unique, and made of letters, digits and '_'.
 *   - Every row has as many fields as the header. A field is a number as strtod reads
 *     it, consuming the whole field ("12", "-3.5e2", "nan", "inf"); spaces around a
 *     field are allowed.
 *   - Lines end in "\n" or "\r\n"; the last line may lack its newline. Empty lines are
 *     refused, except that the file may end after the header (a table of no rows).
 * Any other file is refused with PLM_ERR_IO and a one-line message
 * "PATH:LINE: what is wrong" (LINE counts from 1); nothing is left allocated. A file is
 * read whole into memory (at most CSV_MAX_BYTES).
 *
 * Reentrant; a table is owned by its caller.
 */
#ifndef PLUME_SUPPORT_CSV_H
#define PLUME_SUPPORT_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/status.h"

/* The largest file read (1 GiB). */
#define CSV_MAX_BYTES ((int64_t)1 << 30)

/* Room for any message of this module. */
enum { CSV_ERROR_SIZE = 1024 };

typedef struct csv_table {
  int columns;    /* the header's fields */
  char **names;   /* [columns] */
  int64_t rows;   /* the data rows */
  double *values; /* [rows][columns], row-major */
} csv_table;

/* Read the table at path into *out. Errors: PLM_ERR_INVALID_ARG (NULL path or out),
 * PLM_ERR_IO (cannot open or read, not a regular file, too large, malformed as above),
 * PLM_ERR_OUT_OF_MEMORY. On failure *out is empty. */
plm_status csv_read(const char *path, csv_table *out, char *err, size_t err_size);

/* Free a table's memory and empty it; an empty table is a no-op. */
void csv_free(csv_table *table);

/* The index of the column named name, or -1. */
int csv_column(const csv_table *table, const char *name);

/* Row r's value in column c (no bounds check). */
static inline double csv_value(const csv_table *table, int64_t r, int c) {
  return table->values[r * table->columns + c];
}

/* ---- regions tables ------------------------------------------------------------------
 * The CSV of region statistics that `plume op label --regions` and `plume detect` write:
 * an optional first column frame, then the columns of plume/label.h's regions table,
 * label,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col, and with an
 * intensity image sum,max,wcentroid_row,wcentroid_col. The integer columns are written
 * as integers, the others with %.17g (read back exactly; NaN as "nan").
 *
 * Both functions write into buf (size bytes, NUL-terminated, as snprintf) and return the
 * length of the line, its newline included; CSV_REGIONS_ROW_SIZE bytes always hold one. */
enum { CSV_REGIONS_ROW_SIZE = 512 };

/* The header line; frame: with the frame column. */
size_t csv_regions_header(char *buf, size_t size, bool frame, bool intensity);

/* One row of a regions table (PLM_REGION_COLUMNS doubles); frame < 0: no frame column. */
size_t csv_regions_row(char *buf, size_t size, int64_t frame, const double *row, bool intensity);

#endif /* PLUME_SUPPORT_CSV_H */

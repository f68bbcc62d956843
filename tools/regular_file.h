/* tools/regular_file.h: opening a user's file for reading without ever blocking on one
 * that is not a regular file (internal to the tools; the readers of image files and CSV
 * tables use it).
 *
 * A FIFO, a terminal or a socket named as an input would make a plain fopen wait for a
 * writer, or read forever. regular_file_open opens `path` read-only with O_NONBLOCK
 * (opening a FIFO then returns at once, writer or not), refuses what fstat does not call
 * a regular file, then restores blocking reads and returns the stream ("rb"), *st filled.
 * On failure it returns NULL, with errno as the failing call left it, and writes to why
 * (why_size bytes, NUL-terminated) one of "cannot open: <strerror>", "cannot stat:
 * <strerror>" or "not a regular file". Thread-safe. */
#ifndef PLUME_TOOLS_REGULAR_FILE_H
#define PLUME_TOOLS_REGULAR_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

FILE *regular_file_open(const char *path, struct stat *st, char *why, size_t why_size);

/* Whether the paths a and b name one file: the same device and inode where both exist
 * (hard links and other spellings included), else the same canonical path (the
 * canonical folder and the last component), so that two outputs not yet written are
 * compared too. Commands refuse an output that names one of their inputs or another
 * output before they run. */
bool same_file(const char *a, const char *b);

/* Whether an output may be written at `path`, checked before a command runs: its folder
 * exists and is a folder this process may create files in, and path itself is not a
 * folder. False with why ("its folder 'F' does not exist: <strerror>", "'F' is not a
 * folder", "its folder 'F' cannot be written: <strerror>", "is a folder"), so that what
 * fails later, while writing (a full disk), is a runtime failure and not the command's
 * arguments. */
bool output_path_usable(const char *path, char *why, size_t why_size);

#endif /* PLUME_TOOLS_REGULAR_FILE_H */

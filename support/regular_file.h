/* support/regular_file.h: the user's files around the commands (internal to the tools):
 * opening a file to read and reading it whole, telling whether two paths name one file
 * and whether an output may be written, and the one-line messages about a file of the
 * image and CSV readers and writers. Files themselves are opened by the library's one
 * opener and writer (streams/file.h: plm__file_open_regular never blocks on a FIFO and
 * refuses what is not a regular file; plm__file_out writes through symbolic links and
 * into devices and FIFOs in place). */
#ifndef PLUME_SUPPORT_REGULAR_FILE_H
#define PLUME_SUPPORT_REGULAR_FILE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "plume/status.h"
#include "support/quote.h"

/* The message of a failure about a file, as the image and CSV readers and writers give
 * it: "PATH: message" (line > 0: "PATH:LINE: message"; path NULL: "(null)"), fmt as
 * printf's, made one line by quote_failure (support/quote.h: a control character escaped,
 * "\n"), into err (err_size bytes; nothing when err is NULL). Returns status, so that a
 * reader fails in one line:
 *   return path_failure(err, err_size, path, 0, PLM_ERR_IO, "the file is empty"); */
plm_status path_failure(char *err, size_t err_size, const char *path, int64_t line,
                        plm_status status, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Open path for reading through the library's one opener (streams/file.h: what is not a
 * regular file is refused without blocking); *st (may be NULL) gets its fstat. NULL on
 * failure with "PATH: cannot open: <strerror>" (or "cannot stat: ...", "not a regular
 * file (it is a FIFO)") in err, as path_failure writes it. */
FILE *file_open_read(const char *path, struct stat *st, char *err, size_t err_size);

/* The whole of the regular file at path, NUL-terminated, into *text (malloc'd: the caller
 * frees it), its length (without the NUL) into *length. PLM_OK, or with err as
 * path_failure writes it: PLM_ERR_IO ("cannot open: ...", "N bytes: larger than the
 * MAX read" for a file over max_bytes, "reading failed: <strerror>", "reading failed:
 * the file shrank"), PLM_ERR_OUT_OF_MEMORY ("out of memory"). */
plm_status file_read_all(const char *path, int64_t max_bytes, char **text, size_t *length,
                         char *err, size_t err_size);

/* Whether the paths a and b name one file: the same device and inode where both exist
 * (hard links and other spellings included), else the same canonical path (the
 * canonical folder and the last component), so that two outputs not yet written are
 * compared too. Commands refuse an output that names one of their inputs or another
 * output before they run. "-" (standard input or output) is never the same file as
 * anything: a command that takes it for two outputs refuses that itself. */
bool same_file(const char *a, const char *b);

/* Whether an output may be written at `path`, checked before a command runs, where
 * streams/file.h's rule sends it: a device or a FIFO this process may write (else "cannot
 * be written: <strerror>"); else the file path's symbolic links lead to, whose folder
 * exists and is a folder this process may create files in. False with why ("is a socket:
 * ...", "is a folder: ...", "its folder 'F' does not exist: <strerror>", "'F' is not a
 * folder", "its folder 'F' cannot be written: <strerror>"; F quoted by quote_value,
 * support/quote.h), so that what fails later, while writing (a full disk), is a runtime
 * failure and not the command's arguments. "-" is standard output, usable when it is
 * open for writing (else "standard output is closed"). OUTPUT_PATH_WHY_SIZE bytes hold
 * any why. */
enum { OUTPUT_PATH_WHY_SIZE = QUOTE_SIZE + 128 };
bool output_path_usable(const char *path, char *why, size_t why_size);

/* The extension of an output's name, after the last '.' of its last component, or NULL
 * for "-", a name without one (a device, a FIFO, "out"), a dot that starts the component
 * (".hidden") or ends it. */
const char *output_extension(const char *path);

/* Whether the name of an output fits the formats a command can write there, whose
 * extensions are `extensions` separated by '|' ("csv", "npy|tif|tiff"): true for a name
 * without an extension (output_extension) and one ending in any of them, in any case;
 * false with why for any other ("'m.png' ends in .png, but the data written is .npy, .tif
 * or .tiff: name it so (or - for standard output)"), so that `--out m.png` never holds
 * .npy bytes. */
bool output_extension_fits(const char *path, const char *extensions, char *why, size_t why_size);

#endif /* PLUME_SUPPORT_REGULAR_FILE_H */

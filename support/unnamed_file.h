/* support/unnamed_file.h: bytes kept on disk in a file that no folder lists (internal to the
 * tools), for an output that must not appear, even as a temporary file, until it is
 * complete: `plume detect` under MPI keeps its rows here while the ranks run, and only
 * then writes its CSV (support/output_file.h). A process killed outright (SIGKILL, which no
 * handler sees) leaves nothing behind: the kernel frees a file without a name when its
 * last descriptor closes.
 *
 * Where: an O_TMPFILE file in the folder of `near` (the output's: the bytes take the room
 * the output will take), else in $TMPDIR (or /tmp) where that folder's file system has no
 * O_TMPFILE; else, where neither has, a file created in $TMPDIR and unlinked at once (for
 * the microseconds between the two, it has a name there).
 *
 *   unnamed_file *f;
 *   unnamed_file_open("out.csv", &f, err, sizeof err);
 *   unnamed_file_write(f, bytes, n, err, sizeof err);      any number of times
 *   unnamed_file_replay(f, to, user, err, sizeof err);     every byte, in order, to `to`
 *   unnamed_file_close(f);
 *
 * One thread at a time per file. */
#ifndef PLUME_SUPPORT_UNNAMED_FILE_H
#define PLUME_SUPPORT_UNNAMED_FILE_H

#include <stddef.h>

#include "plume/status.h"

typedef struct unnamed_file unnamed_file;

/* Create the file (above). Errors: PLM_ERR_OUT_OF_MEMORY, PLM_ERR_IO ("cannot create a
 * file without a name in FOLDER: <strerror>"); *out is NULL on failure. */
plm_status unnamed_file_open(const char *near, unnamed_file **out, char *err, size_t err_size);

/* Append bytes. Errors: PLM_ERR_IO ("writing its rows to a file without a name in FOLDER
 * failed: <strerror>", a full disk). */
plm_status unnamed_file_write(unnamed_file *f, const void *data, size_t bytes, char *err,
                              size_t err_size);

/* What unnamed_file_replay hands its bytes to: a status, a message in err on failure. */
typedef plm_status (*unnamed_file_sink)(void *user, const void *data, size_t bytes, char *err,
                                        size_t err_size);

/* Read every byte written, from the first, and give them to `to` in pieces, in order.
 * Stops at to's first failure (its status and message). Errors: PLM_ERR_IO (reading). */
plm_status unnamed_file_replay(unnamed_file *f, unnamed_file_sink to, void *user, char *err,
                               size_t err_size);

/* Close and free it (its bytes go). NULL is a no-op. */
void unnamed_file_close(unnamed_file *f);

#endif /* PLUME_SUPPORT_UNNAMED_FILE_H */

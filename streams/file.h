/* streams/file.h: the one way plume opens a file (internal). Every file the library
 * reads or writes (the tuning tables, the calibration cache, the profile and report
 * writers) and, through support/regular_file.h and support/output_file.h, every file of the
 * plume command goes through these functions, so that a hostile or careless path (a
 * FIFO, a device, a symbolic link, a file that cannot be read) is treated one way.
 *
 * Reading: plm__file_open_regular refuses a path that stat does not call a regular file
 * without opening it (a FIFO's waiting writer is never let through, to die of SIGPIPE when
 * the refusal closes it), opens with O_NONBLOCK, so that a FIFO put there in between (no
 * writer) or a terminal never blocks the open, and refuses what fstat does not call a
 * regular file before a byte is read. The same opener appends (a cache of lines).
 *
 * Writing: plm__file_out_open / _write / _commit (or _abort). Where the output goes:
 *   - a regular file, or nothing yet: a temporary file beside it (TARGET.tmp-XXXXXX, the
 *     mode a plain create would give), renamed over it once everything is written,
 *     flushed and fsync'd, so that a reader sees the old file or the new one, whole;
 *   - a symbolic link: the file it leads to (through every link, relative ones from
 *     their own folder), replaced there in the same way; the link stays a link, as cp,
 *     sort -o and tee leave it (a link to a link to nothing creates the file at its end);
 *   - a character or block device or a FIFO (/dev/null, /dev/stdout, /dev/full, a named
 *     pipe): written in place, in order, as tee writes it; nothing is renamed, and the
 *     open of a FIFO waits for a reader as tee's does; a reader gone fails the write with
 *     EPIPE, not with a SIGPIPE that would end the program plume lives in (where SIGPIPE
 *     has its default action; a program's own handler still gets it);
 *   - a socket, a folder or anything else: refused ("is a socket", "is a folder").
 * Every failure names the step and gives strerror: "writing failed: No space left on
 * device" (f->file keeps the errno of every failed write, however it was written, so a
 * buffered write's failure shows with its reason at the latest on _commit's flush). The
 * structure must not move while it is open (its FILE points to it).
 *
 * Messages go to `why` (why_size bytes, NUL-terminated, without the path: the caller puts
 * it in front, "PATH: why"), so that the library raises them with plm__fail_raw and the
 * tools with their own error buffers. Thread-safe; a plm__file_out is one thread's at a
 * time.
 */
#ifndef PLUME_STREAMS_FILE_H
#define PLUME_STREAMS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#include "plume/status.h"

/* How a file is opened by plm__file_open_regular. */
typedef enum plm__file_mode {
  PLM__FILE_READ,  /* "rb" */
  PLM__FILE_APPEND /* "ab": created (mode 0666 less the umask) when missing */
} plm__file_mode;

/* Open path as mode says without blocking on what is not a regular file; *st (may be
 * NULL) gets its fstat. NULL on failure with errno as the failing call left it (EINVAL
 * for "not a regular file") and why one of "cannot open: <strerror>", "cannot stat:
 * <strerror>", "not a regular file (it is a FIFO)" (a device, a socket, a folder likewise). */
FILE *plm__file_open_regular(const char *path, plm__file_mode mode, struct stat *st, char *why,
                             size_t why_size);

/* Open path for reading as a regular file or a stream, for a reader that takes frames from
 * a sensor's pipe: a regular file or a character device is opened at once; for a FIFO the
 * call waits for a writer, as cat's open does, on the descriptor it opened without
 * blocking (to learn what the path is): the read end is never closed and opened again,
 * which would drop what a writer put in the pipe meanwhile and kill it with SIGPIPE,
 * leaving the second open waiting forever. A folder, a socket or a block device is
 * refused. Returns the descriptor (blocking reads; the caller closes it), *st its
 * fstat; -1 on failure with why: "cannot open: <strerror>", "cannot stat: <strerror>",
 * "cannot wait for a writer: <strerror>",
 * "neither a file nor a stream (it is a folder)". */
int plm__file_open_stream(const char *path, struct stat *st, char *why, size_t why_size);

/* What kind of file st is, for messages: "a FIFO", "a character device", "a block
 * device", "a socket", "a folder", "a symbolic link", "a regular file", "an unknown kind
 * of file". */
const char *plm__file_kind(const struct stat *st);

/* An output being written (fields are read-only outside streams/file.c). */
typedef struct plm__file_out {
  char *path;   /* as the caller named it */
  char *target; /* the file written: path, or where its symbolic links lead */
  char *tmp;    /* TARGET.tmp-XXXXXX until renamed over target; NULL when direct */
  bool direct;  /* a device or a FIFO, written in place */
  FILE *file;   /* open until _finish (or _abort); fprintf to it as to any FILE */
  int fd;       /* its descriptor (-1 when closed) */
  bool failed;  /* a write failed: the commit fails */
  int error;    /* the first failed write's errno */
} plm__file_out;

/* Where an output at path would go: *target (malloc'd, the caller frees it) and whether it
 * is written directly (a device or a FIFO) or replaced through a temporary file. False
 * with why for a socket, a folder or another kind of file, for links that loop or go more
 * than 40 deep, and when memory runs out. Opens nothing. */
bool plm__file_out_target(const char *path, char **target, bool *direct, char *why,
                          size_t why_size);

/* Start writing an output to path (see above). Errors: PLM_ERR_OUT_OF_MEMORY, PLM_ERR_IO
 * (what plm__file_out_target refuses, "cannot create a temporary file beside it:
 * <strerror>", "cannot open it: <strerror>"); f is then cleared and nothing is left
 * behind. */
plm_status plm__file_out_open(plm__file_out *f, const char *path, char *why, size_t why_size);

/* Start writing an output to an open descriptor (standard output, for a command's `--out
 * -`): fd is duplicated (the caller's stays open) and written in place, as a device is;
 * name stands for the path in messages ("stdout"). Errors: PLM_ERR_OUT_OF_MEMORY,
 * PLM_ERR_IO ("cannot use it: <strerror>", a descriptor that is not open). */
plm_status plm__file_out_open_fd(plm__file_out *f, const char *name, int fd, char *why,
                                 size_t why_size);

/* Append bytes. Errors: PLM_ERR_IO ("writing failed: <strerror>"); the commit then fails. */
plm_status plm__file_out_write(plm__file_out *f, const void *data, size_t bytes, char *why,
                               size_t why_size);

/* Flush, fsync (a regular file) and close: the bytes are written or this fails
 * (PLM_ERR_IO, "writing failed: <strerror>", "fsync failed: ...", "closing failed: ...").
 * Also fails when an earlier write (or an fprintf to f->file) failed. */
plm_status plm__file_out_finish(plm__file_out *f, char *why, size_t why_size);

/* After _finish: rename the temporary file over the target (nothing for a direct
 * output). Errors: PLM_ERR_IO ("cannot rename TMP to it: <strerror>"). */
plm_status plm__file_out_rename(plm__file_out *f, char *why, size_t why_size);

/* fsync the folder holding the target, so that a rename survives a crash (best effort). */
void plm__file_out_sync_folder(const plm__file_out *f);

/* _finish, _rename and _sync_folder, then free f's names; on failure the temporary file
 * is removed (the old file stays). */
plm_status plm__file_out_commit(plm__file_out *f, char *why, size_t why_size);

/* Close (when open), remove the temporary file (if any) and free f's names. A cleared f
 * is a no-op. */
void plm__file_out_abort(plm__file_out *f);

/* Free f's names (the file closed and the temporary renamed or removed already). */
void plm__file_out_free(plm__file_out *f);

#endif /* PLUME_STREAMS_FILE_H */

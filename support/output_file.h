/* support/output_file.h: the one way the commands write their outputs (internal to the
 * tools): each output is written to a temporary file beside it, and a command's outputs
 * replace their paths together, all or none. Where an output goes is streams/file.h's
 * rule, the library's own: through a symbolic link to the file it leads to (the link
 * stays), a device or a FIFO written in place (tee's way: no temporary file, nothing to
 * put back), a socket or a folder refused. The path "-" is standard output, written in
 * place as a device is (a command's `--out -`; messages call it "stdout").
 *
 *   output_file *files[2];
 *   output_file_open("labels.npy", &files[0], err, sizeof err);   PATH.tmp-XXXXXX
 *   output_file_open("regions.csv", &files[1], err, sizeof err);
 *   output_file_write(files[k], bytes, n, err, sizeof err);       any number of times
 *   output_files_commit(files, 2, err, sizeof err);               or output_file_abort
 *
 * The contract of a commit, which a full disk, a signal or a failing rename must not
 * break:
 *   1. Every temporary file is flushed, fsync'd and closed before any path is touched:
 *      a write that fails (ENOSPC, EIO) fails there, and every path keeps its old file.
 *   2. Then the temporaries are renamed over their paths, in order. Where a path already
 *      holds a file and more than one output is committed, that file is first kept
 *      under a hard link (PATH.tmp-XXXXXX.old); if a later rename fails, every path
 *      renamed before it gets its old file back (or is removed, where it had none), so
 *      the outputs are replaced all together or not at all. The links are removed at
 *      the end. A file system without hard links (EPERM, ENOTSUP) commits without them,
 *      and a failing rename may then leave earlier outputs replaced.
 *   3. The folders are fsync'd, so that the renames survive a crash.
 * Between 1 and 2 a commit looks at the cancel flag (output_files_cancel_on): a signal
 * that came during the writing or the fsyncs still keeps every old file.
 * A commit frees every file it is given, whatever happens, and on failure removes every
 * temporary file. output_file_abort removes one temporary file and frees it.
 *
 * Signals: the temporary files that are open are listed where a signal handler can
 * reach them: output_files_remove_temporaries() unlinks them with async-signal-safe
 * calls only (apps/interrupt.h calls it when a second signal asks to stop at once).
 * While a commit renames, it leaves the files alone and says so, so that the renames
 * finish. At most OUTPUT_FILE_LISTED temporaries are listed at a time; more are written
 * as well, but not removed by that handler.
 *
 * An output_file is used by one thread at a time; opening, committing and aborting
 * different files from different threads is safe. */
#ifndef PLUME_SUPPORT_OUTPUT_FILE_H
#define PLUME_SUPPORT_OUTPUT_FILE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/status.h"

enum { OUTPUT_FILE_LISTED = 32 };

/* The path that names standard output. */
#define OUTPUT_FILE_STDOUT "-"

typedef struct output_file output_file;

/* Create path's temporary file (TARGET.tmp-XXXXXX beside the file path's links lead to,
 * with the mode a plain create would give), or open the device or FIFO at path, or (for
 * "-") a copy of standard output's descriptor. Errors:
 * PLM_ERR_INVALID_ARG (NULL arguments), PLM_ERR_OUT_OF_MEMORY, PLM_ERR_IO ("PATH: is a
 * socket: ...", "PATH: cannot create a temporary file beside it: <strerror>", "PATH:
 * cannot open it: <strerror>"). */
plm_status output_file_open(const char *path, output_file **out, char *err, size_t err_size);

/* Append bytes to the temporary file (or the device). Errors: PLM_ERR_INVALID_ARG,
 * PLM_ERR_IO ("PATH: writing failed: <strerror>"). After a failure the file is still to
 * be committed (which then fails) or aborted. */
plm_status output_file_write(output_file *f, const void *data, size_t bytes, char *err,
                             size_t err_size);

/* The path the file will replace. */
const char *output_file_path(const output_file *f);

/* Commit files[0..count) together (see above). count 0 is a success. NULL entries are
 * refused (PLM_ERR_INVALID_ARG) after the others are aborted. Errors: PLM_ERR_IO with
 * the path, the step and strerror in err. Frees every file in every case. */
plm_status output_files_commit(output_file **files, int count, char *err, size_t err_size);

/* A flag (a signal handler's) that cancels every commit that has not begun to rename:
 * such a commit fails with PLM_ERR_INVALID_STATE ("interrupted") and removes its
 * temporary files. NULL (the default) cancels nothing. Set once, before any commit. */
void output_files_cancel_on(const volatile sig_atomic_t *flag);

/* Close and remove the temporary file, free f. NULL is a no-op. */
void output_file_abort(output_file *f);

/* Unlink every listed temporary file and return true; async-signal-safe. Returns false,
 * and unlinks nothing, while a commit is renaming (it is about to finish: let it). After
 * true the process is to exit (_exit): the files' handles are stale. */
bool output_files_remove_temporaries(void);

#endif /* PLUME_SUPPORT_OUTPUT_FILE_H */

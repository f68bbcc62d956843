/* support/output_file.c: outputs written beside their paths and committed all or none
 * (support/output_file.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "streams/file.h"
#include "support/regular_file.h"

#define BACKUP_SUFFIX ".old"

struct output_file {
  plm__file_out out; /* path, its target, the temporary file beside the target */
  char *backup;      /* TMP.old: the old file's link during a commit, else NULL */
  int listed;        /* its slot in the list of temporaries, or -1 */
  bool had_old;      /* a file was at the target when the commit began */
};

/* ---- the list a signal handler reads --------------------------------------------------
 * Fixed storage, so that the handler never reads freed memory: a slot is claimed (FREE
 * -> FILLING), its name written, then published (LISTED); the handler unlinks LISTED
 * names only. A slot is released (FREE) before its file is removed, so at worst the
 * handler and the thread both unlink one name, which is harmless. */

enum { SLOT_FREE, SLOT_FILLING, SLOT_LISTED };

static struct {
  atomic_int state;
  char name[PATH_MAX];
} listed_temporaries[OUTPUT_FILE_LISTED];

static atomic_int commits_renaming;

static const volatile sig_atomic_t *cancel_flag;

void output_files_cancel_on(const volatile sig_atomic_t *flag) {
  cancel_flag = flag;
}

static int list_temporary(const char *name) {
  if (strlen(name) >= PATH_MAX) return -1;
  for (int i = 0; i < OUTPUT_FILE_LISTED; i++) {
    int expected = SLOT_FREE;
    if (atomic_compare_exchange_strong(&listed_temporaries[i].state, &expected, SLOT_FILLING)) {
      strcpy(listed_temporaries[i].name, name);
      atomic_store(&listed_temporaries[i].state, SLOT_LISTED);
      return i;
    }
  }
  return -1;
}

static void unlist_temporary(output_file *f) {
  if (f->listed >= 0) atomic_store(&listed_temporaries[f->listed].state, SLOT_FREE);
  f->listed = -1;
}

bool output_files_remove_temporaries(void) {
  if (atomic_load(&commits_renaming) > 0) return false;
  for (int i = 0; i < OUTPUT_FILE_LISTED; i++)
    if (atomic_load(&listed_temporaries[i].state) == SLOT_LISTED)
      unlink(listed_temporaries[i].name);
  return true;
}

/* ---- one file ------------------------------------------------------------------------- */

static void free_file(output_file *f) {
  free(f->backup);
  plm__file_out_free(&f->out);
  free(f);
}

void output_file_abort(output_file *f) {
  if (!f) return;
  unlist_temporary(f);
  plm__file_out_abort(&f->out);
  free_file(f);
}

plm_status output_file_open(const char *path, output_file **out, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (out) *out = NULL;
  if (!path)
    return path_failure(err, err_size, "output_file_open", 0, PLM_ERR_INVALID_ARG, "path is NULL");
  if (!out) return path_failure(err, err_size, path, 0, PLM_ERR_INVALID_ARG, "out is NULL");
  output_file *f = calloc(1, sizeof *f);
  if (!f) return path_failure(err, err_size, path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  f->listed = -1;
  char why[PATH_MAX + 128];
  const bool to_stdout = strcmp(path, OUTPUT_FILE_STDOUT) == 0;
  plm_status status = to_stdout
                          ? plm__file_out_open_fd(&f->out, "stdout", STDOUT_FILENO, why, sizeof why)
                          : plm__file_out_open(&f->out, path, why, sizeof why);
  if (status != PLM_OK) {
    free(f);
    return path_failure(err, err_size, to_stdout ? "stdout" : path, 0, status, "%s", why);
  }
  if (f->out.tmp) f->listed = list_temporary(f->out.tmp);
  *out = f;
  return PLM_OK;
}

plm_status output_file_write(output_file *f, const void *data, size_t bytes, char *err,
                             size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!f)
    return path_failure(err, err_size, "output_file_write", 0, PLM_ERR_INVALID_ARG, "file is NULL");
  if (!data && bytes)
    return path_failure(err, err_size, f->out.path, 0, PLM_ERR_INVALID_ARG, "data is NULL");
  char why[256];
  plm_status status = plm__file_out_write(&f->out, data, bytes, why, sizeof why);
  return status == PLM_OK ? PLM_OK : path_failure(err, err_size, f->out.path, 0, status, "%s", why);
}

const char *output_file_path(const output_file *f) {
  return f ? f->out.path : NULL;
}

/* Step 1: flush, fsync and close; the data is on the disk or this fails. */
static plm_status finish_writing(output_file *f, char *err, size_t err_size) {
  char why[256];
  plm_status status = plm__file_out_finish(&f->out, why, sizeof why);
  return status == PLM_OK ? PLM_OK : path_failure(err, err_size, f->out.path, 0, status, "%s", why);
}

/* Keep the file at f's target (if any) under a hard link, so that it can come back. A
 * file system without hard links gives no backup, and no failure. A device or a FIFO
 * written in place has nothing to keep. */
static plm_status keep_old_file(output_file *f, char *err, size_t err_size) {
  struct stat st;
  if (f->out.direct || lstat(f->out.target, &st) != 0) return PLM_OK; /* nothing there yet */
  f->had_old = true;
  const size_t length = strlen(f->out.tmp);
  f->backup = malloc(length + sizeof BACKUP_SUFFIX);
  if (!f->backup)
    return path_failure(err, err_size, f->out.path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  memcpy(f->backup, f->out.tmp, length);
  memcpy(f->backup + length, BACKUP_SUFFIX, sizeof BACKUP_SUFFIX);
  if (link(f->out.target, f->backup) == 0) return PLM_OK;
  const int error = errno;
  free(f->backup);
  f->backup = NULL;
  if (error == EPERM || error == ENOTSUP || error == EOPNOTSUPP || error == EMLINK) return PLM_OK;
  return path_failure(err, err_size, f->out.path, 0, PLM_ERR_IO,
                      "cannot keep the old file while replacing it: %s", strerror(error));
}

/* Put back what the renames of files[0..renamed) replaced. */
static void restore_old_files(output_file **files, int renamed) {
  for (int i = renamed - 1; i >= 0; i--) {
    if (files[i]->out.direct) {
      continue; /* a device or a FIFO, written in place: nothing to put back */
    } else if (files[i]->backup) {
      if (rename(files[i]->backup, files[i]->out.target) == 0) {
        free(files[i]->backup);
        files[i]->backup = NULL;
      }
    } else if (!files[i]->had_old) {
      unlink(files[i]->out.target);
    } /* else: an old file without a link (no hard links here) cannot come back */
  }
}

static plm_status rename_all(output_file **files, int count, char *err, size_t err_size) {
  plm_status status = PLM_OK;
  for (int i = 0; i < count && count > 1 && status == PLM_OK; i++)
    status = keep_old_file(files[i], err, err_size);
  int renamed = 0;
  while (status == PLM_OK && renamed < count) {
    output_file *f = files[renamed];
    char why[PATH_MAX + 128];
    if ((status = plm__file_out_rename(&f->out, why, sizeof why)) != PLM_OK) {
      path_failure(err, err_size, f->out.path, 0, status, "%s", why);
      break;
    }
    unlist_temporary(f);
    renamed++;
  }
  if (status != PLM_OK) restore_old_files(files, renamed);
  for (int i = 0; i < count; i++)
    if (files[i]->backup) unlink(files[i]->backup);
  if (status == PLM_OK)
    for (int i = 0; i < count; i++) plm__file_out_sync_folder(&files[i]->out);
  return status;
}

plm_status output_files_commit(output_file **files, int count, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (count <= 0) return PLM_OK;
  if (!files)
    return path_failure(err, err_size, "output_files_commit", 0, PLM_ERR_INVALID_ARG,
                        "files is NULL");
  plm_status status = PLM_OK;
  for (int i = 0; i < count && status == PLM_OK; i++)
    if (!files[i])
      status = path_failure(err, err_size, "output_files_commit", 0, PLM_ERR_INVALID_ARG,
                            "files[%d] is NULL", i);
  for (int i = 0; i < count; i++)
    if (files[i] && files[i]->out.file) {
      /* Every file is closed; the first failure's message is kept. */
      char later[256];
      plm_status finished = status == PLM_OK ? finish_writing(files[i], err, err_size)
                                             : finish_writing(files[i], later, sizeof later);
      if (status == PLM_OK) status = finished;
    }
  if (status == PLM_OK && cancel_flag && *cancel_flag)
    status = path_failure(err, err_size, output_file_path(files[0]), 0, PLM_ERR_INVALID_STATE,
                          "interrupted before it was written");
  if (status == PLM_OK) {
    atomic_fetch_add(&commits_renaming, 1);
    status = rename_all(files, count, err, err_size);
    atomic_fetch_sub(&commits_renaming, 1);
  }
  for (int i = 0; i < count; i++)
    if (files[i]) {
      unlist_temporary(files[i]);
      if (status != PLM_OK && files[i]->out.tmp) unlink(files[i]->out.tmp);
      free_file(files[i]);
    }
  return status;
}

/* tools/output_file.c: outputs written beside their paths and committed all or none
 * (tools/output_file.h). */
#define _POSIX_C_SOURCE 200809L

#include "tools/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/regular_file.h"

#define TEMPORARY_SUFFIX ".tmp-XXXXXX"
#define BACKUP_SUFFIX ".old"

struct output_file {
  char *path;   /* the destination */
  char *tmp;    /* PATH.tmp-XXXXXX beside it */
  char *backup; /* PATH.tmp-XXXXXX.old: the old file's link during a commit, else NULL */
  FILE *file;   /* the open temporary file; NULL once closed */
  int listed;   /* its slot in the list of temporaries, or -1 */
  bool failed;  /* a write failed: a commit must fail */
  bool had_old; /* a file was at path when the commit began */
};

/* Write "path: message" into err, on one line (file_failure_v). */
static plm_status fail(char *err, size_t err_size, const char *path, plm_status status,
                       const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  file_failure_v(err, err_size, path, 0, status, fmt, args);
  va_end(args);
  return status;
}

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
  free(f->tmp);
  free(f->path);
  free(f);
}

void output_file_abort(output_file *f) {
  if (!f) return;
  unlist_temporary(f);
  if (f->file) fclose(f->file);
  unlink(f->tmp);
  free_file(f);
}

plm_status output_file_open(const char *path, output_file **out, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (out) *out = NULL;
  if (!path) return fail(err, err_size, "output_file_open", PLM_ERR_INVALID_ARG, "path is NULL");
  if (!out) return fail(err, err_size, path, PLM_ERR_INVALID_ARG, "out is NULL");
  const size_t length = strlen(path);
  output_file *f = calloc(1, sizeof *f);
  if (f) f->path = strdup(path);
  if (f && f->path) f->tmp = malloc(length + sizeof TEMPORARY_SUFFIX);
  if (!f || !f->path || !f->tmp) {
    if (f) free_file(f);
    return fail(err, err_size, path, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  }
  memcpy(f->tmp, path, length);
  memcpy(f->tmp + length, TEMPORARY_SUFFIX, sizeof TEMPORARY_SUFFIX);
  f->listed = -1;
  int fd = mkstemp(f->tmp);
  if (fd < 0) {
    plm_status status = fail(err, err_size, path, PLM_ERR_IO,
                             "cannot create a temporary file: %s", strerror(errno));
    free_file(f);
    return status;
  }
  f->listed = list_temporary(f->tmp);
  /* mkstemp makes the file 0600; give it the mode a plain create would. */
  mode_t mask = umask(0);
  umask(mask);
  plm_status status = PLM_OK;
  if (fchmod(fd, 0666 & ~mask) != 0)
    status = fail(err, err_size, path, PLM_ERR_IO, "chmod %s failed: %s", f->tmp, strerror(errno));
  else if (!(f->file = fdopen(fd, "wb")))
    status = fail(err, err_size, path, PLM_ERR_IO, "fdopen failed: %s", strerror(errno));
  if (status != PLM_OK) {
    if (!f->file) close(fd);
    output_file_abort(f);
    return status;
  }
  *out = f;
  return PLM_OK;
}

plm_status output_file_write(output_file *f, const void *data, size_t bytes, char *err,
                             size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!f) return fail(err, err_size, "output_file_write", PLM_ERR_INVALID_ARG, "file is NULL");
  if (!data && bytes) return fail(err, err_size, f->path, PLM_ERR_INVALID_ARG, "data is NULL");
  if (bytes && fwrite(data, 1, bytes, f->file) != bytes) {
    f->failed = true;
    return fail(err, err_size, f->path, PLM_ERR_IO, "writing %s failed: %s", f->tmp,
                strerror(errno));
  }
  return PLM_OK;
}

const char *output_file_path(const output_file *f) {
  return f ? f->path : NULL;
}

/* Step 1: flush, fsync and close; the data is on the disk or this fails. */
static plm_status finish_writing(output_file *f, char *err, size_t err_size) {
  plm_status status = PLM_OK;
  if (f->failed)
    status = fail(err, err_size, f->path, PLM_ERR_IO, "an earlier write to %s failed", f->tmp);
  else if (fflush(f->file) != 0)
    status = fail(err, err_size, f->path, PLM_ERR_IO, "writing %s failed: %s", f->tmp,
                  strerror(errno));
  else if (fsync(fileno(f->file)) != 0 && errno != EINVAL && errno != EROFS)
    status = fail(err, err_size, f->path, PLM_ERR_IO, "fsync of %s failed: %s", f->tmp,
                  strerror(errno));
  FILE *file = f->file;
  f->file = NULL;
  if (fclose(file) != 0 && status == PLM_OK)
    status = fail(err, err_size, f->path, PLM_ERR_IO, "closing %s failed: %s", f->tmp,
                  strerror(errno));
  return status;
}

/* Keep the file at f->path (if any) under a hard link, so that it can come back. A
 * file system without hard links gives no backup, and no failure. */
static plm_status keep_old_file(output_file *f, char *err, size_t err_size) {
  struct stat st;
  if (lstat(f->path, &st) != 0) return PLM_OK; /* nothing there yet */
  f->had_old = true;
  const size_t length = strlen(f->tmp);
  f->backup = malloc(length + sizeof BACKUP_SUFFIX);
  if (!f->backup) return fail(err, err_size, f->path, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  memcpy(f->backup, f->tmp, length);
  memcpy(f->backup + length, BACKUP_SUFFIX, sizeof BACKUP_SUFFIX);
  if (link(f->path, f->backup) == 0) return PLM_OK;
  const int error = errno;
  free(f->backup);
  f->backup = NULL;
  if (error == EPERM || error == ENOTSUP || error == EOPNOTSUPP || error == EMLINK) return PLM_OK;
  return fail(err, err_size, f->path, PLM_ERR_IO, "cannot keep the old file while replacing it: %s",
              strerror(error));
}

/* Step 3: fsync the folder that holds path (best effort: some file systems refuse). */
static void sync_folder(const char *path) {
  char copy[PATH_MAX];
  if (snprintf(copy, sizeof copy, "%s", path) >= (int)sizeof copy) return;
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

/* Put back what the renames of files[0..renamed) replaced. */
static void restore_old_files(output_file **files, int renamed) {
  for (int i = renamed - 1; i >= 0; i--) {
    if (files[i]->backup) {
      if (rename(files[i]->backup, files[i]->path) == 0) {
        free(files[i]->backup);
        files[i]->backup = NULL;
      }
    } else if (!files[i]->had_old) {
      unlink(files[i]->path);
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
    if (rename(f->tmp, f->path) != 0) {
      status = fail(err, err_size, f->path, PLM_ERR_IO, "cannot rename %s to it: %s", f->tmp,
                    strerror(errno));
      break;
    }
    unlist_temporary(f);
    renamed++;
  }
  if (status != PLM_OK) restore_old_files(files, renamed);
  for (int i = 0; i < count; i++)
    if (files[i]->backup) unlink(files[i]->backup);
  if (status == PLM_OK)
    for (int i = 0; i < count; i++) sync_folder(files[i]->path);
  return status;
}

plm_status output_files_commit(output_file **files, int count, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (count <= 0) return PLM_OK;
  if (!files)
    return fail(err, err_size, "output_files_commit", PLM_ERR_INVALID_ARG, "files is NULL");
  plm_status status = PLM_OK;
  for (int i = 0; i < count && status == PLM_OK; i++)
    if (!files[i])
      status = fail(err, err_size, "output_files_commit", PLM_ERR_INVALID_ARG,
                    "files[%d] is NULL", i);
  for (int i = 0; i < count; i++)
    if (files[i] && files[i]->file) {
      /* Every file is closed; the first failure's message is kept. */
      char later[256];
      plm_status finished = status == PLM_OK ? finish_writing(files[i], err, err_size)
                                             : finish_writing(files[i], later, sizeof later);
      if (status == PLM_OK) status = finished;
    }
  if (status == PLM_OK && cancel_flag && *cancel_flag)
    status = fail(err, err_size, output_file_path(files[0]), PLM_ERR_INVALID_STATE,
                  "interrupted before it was written");
  if (status == PLM_OK) {
    atomic_fetch_add(&commits_renaming, 1);
    status = rename_all(files, count, err, err_size);
    atomic_fetch_sub(&commits_renaming, 1);
  }
  for (int i = 0; i < count; i++)
    if (files[i]) {
      unlist_temporary(files[i]);
      if (status != PLM_OK) unlink(files[i]->tmp);
      free_file(files[i]);
    }
  return status;
}

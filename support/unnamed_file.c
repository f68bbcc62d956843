/* support/unnamed_file.c: a file that no folder lists (support/unnamed_file.h). */
#define _GNU_SOURCE /* O_TMPFILE */

#include "support/unnamed_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { REPLAY_PIECE = 1 << 20 };

struct unnamed_file {
  int fd;
  char folder[PATH_MAX]; /* where it is, for messages */
};

/* An O_TMPFILE in folder, or -1 with errno. */
static int open_tmpfile(const char *folder) {
#ifdef O_TMPFILE
  return open(folder, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#else
  (void)folder;
  errno = EOPNOTSUPP;
  return -1;
#endif
}

/* A file created in folder and unlinked at once, or -1 with errno. */
static int open_unlinked(const char *folder) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/plume-rows-XXXXXX", folder) >= (int)sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  const int fd = mkostemp(path, O_CLOEXEC);
  if (fd >= 0) unlink(path);
  return fd;
}

plm_status unnamed_file_open(const char *near, unnamed_file **out, char *err, size_t err_size) {
  *out = NULL;
  unnamed_file *f = calloc(1, sizeof *f);
  if (!f) {
    snprintf(err, err_size, "out of memory");
    return PLM_ERR_OUT_OF_MEMORY;
  }
  char copy[PATH_MAX], near_folder[PATH_MAX];
  snprintf(copy, sizeof copy, "%s", near);
  snprintf(near_folder, sizeof near_folder, "%s", dirname(copy));
  snprintf(f->folder, sizeof f->folder, "%s", near_folder);
  f->fd = open_tmpfile(f->folder);
  const int near_error = errno;
  if (f->fd < 0) {
    const char *tmp = getenv("TMPDIR");
    snprintf(f->folder, sizeof f->folder, "%s", tmp && tmp[0] ? tmp : "/tmp");
    f->fd = open_tmpfile(f->folder);
    if (f->fd < 0) f->fd = open_unlinked(f->folder);
  }
  if (f->fd < 0) {
    snprintf(err, err_size, "cannot create a file without a name in %s (%s) nor in %s: %s",
             near_folder, strerror(near_error), f->folder, strerror(errno));
    free(f);
    return PLM_ERR_IO;
  }
  *out = f;
  return PLM_OK;
}

plm_status unnamed_file_write(unnamed_file *f, const void *data, size_t bytes, char *err,
                              size_t err_size) {
  const char *at = data;
  while (bytes > 0) {
    const ssize_t n = write(f->fd, at, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      snprintf(err, err_size, "writing its rows to a file without a name in %s failed: %s",
               f->folder, strerror(n < 0 ? errno : EIO));
      return PLM_ERR_IO;
    }
    at += n;
    bytes -= (size_t)n;
  }
  return PLM_OK;
}

plm_status unnamed_file_replay(unnamed_file *f, unnamed_file_sink to, void *user, char *err,
                               size_t err_size) {
  char *piece = malloc(REPLAY_PIECE);
  if (!piece) {
    snprintf(err, err_size, "out of memory");
    return PLM_ERR_OUT_OF_MEMORY;
  }
  plm_status status = PLM_OK;
  for (off_t at = 0; status == PLM_OK;) {
    const ssize_t n = pread(f->fd, piece, REPLAY_PIECE, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      snprintf(err, err_size, "reading back the rows kept in a file without a name in %s: %s",
               f->folder, strerror(errno));
      status = PLM_ERR_IO;
    }
    if (n <= 0) break;
    status = to(user, piece, (size_t)n, err, err_size);
    at += n;
  }
  free(piece);
  return status;
}

void unnamed_file_close(unnamed_file *f) {
  if (!f) return;
  close(f->fd);
  free(f);
}

/* tools/regular_file.c: see tools/regular_file.h. */
#define _POSIX_C_SOURCE 200809L

#include "tools/regular_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Close fd keeping errno, which the caller reports. */
static void close_keeping_errno(int fd) {
  int saved = errno;
  close(fd);
  errno = saved;
}

FILE *regular_file_open(const char *path, struct stat *st, char *why, size_t why_size) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, why_size, "cannot open: %s", strerror(errno));
    return NULL;
  }
  if (fstat(fd, st) != 0) {
    snprintf(why, why_size, "cannot stat: %s", strerror(errno));
    close_keeping_errno(fd);
    return NULL;
  }
  if (!S_ISREG(st->st_mode)) {
    snprintf(why, why_size, "not a regular file");
    close(fd);
    errno = EINVAL;
    return NULL;
  }
  int flags = fcntl(fd, F_GETFL);
  FILE *file = flags >= 0 && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
  if (!file) {
    snprintf(why, why_size, "cannot open: %s", strerror(errno));
    close_keeping_errno(fd);
  }
  return file;
}

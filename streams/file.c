/* streams/file.c: the one opener and the one writer of files (streams/file.h). */
#define _GNU_SOURCE /* fopencookie, getrandom; realpath, readlink */

#include "streams/file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define TEMPORARY_SUFFIX ".tmp-XXXXXX"

enum { MAX_LINKS = 40 }; /* as the kernel's own limit (ELOOP) */

/* Close fd keeping errno, which the caller reports. */
static void close_keeping_errno(int fd) {
  const int saved = errno;
  close(fd);
  errno = saved;
}

const char *plm__file_kind(const struct stat *st) {
  if (S_ISREG(st->st_mode)) return "a regular file";
  if (S_ISFIFO(st->st_mode)) return "a FIFO";
  if (S_ISCHR(st->st_mode)) return "a character device";
  if (S_ISBLK(st->st_mode)) return "a block device";
  if (S_ISSOCK(st->st_mode)) return "a socket";
  if (S_ISDIR(st->st_mode)) return "a folder";
  if (S_ISLNK(st->st_mode)) return "a symbolic link";
  return "an unknown kind of file";
}

FILE *plm__file_open_regular(const char *path, plm__file_mode mode, struct stat *st, char *why,
                             size_t why_size) {
  struct stat own;
  if (!st) st = &own;
  /* A path that is there and is not a regular file is refused before it is opened: an open
   * of a FIFO would let a writer waiting on it through, and the close after it would leave
   * that writer's next write to SIGPIPE. (fstat below judges what the open gave, should the
   * path change in between.) */
  if (stat(path, st) == 0 && !S_ISREG(st->st_mode)) {
    snprintf(why, why_size, "not a regular file (it is %s)", plm__file_kind(st));
    errno = EINVAL;
    return NULL;
  }
  const int flags = mode == PLM__FILE_APPEND ? O_WRONLY | O_APPEND | O_CREAT : O_RDONLY;
  const int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int error = errno;
    snprintf(why, why_size, "cannot open: %s", strerror(error));
    errno = error;
    return NULL;
  }
  if (fstat(fd, st) != 0) {
    const int error = errno;
    snprintf(why, why_size, "cannot stat: %s", strerror(error));
    close(fd);
    errno = error;
    return NULL;
  }
  if (!S_ISREG(st->st_mode)) {
    snprintf(why, why_size, "not a regular file (it is %s)", plm__file_kind(st));
    close(fd);
    errno = EINVAL;
    return NULL;
  }
  /* Back to blocking reads and writes: a regular file's never wait anyway. */
  const int status_flags = fcntl(fd, F_GETFL);
  FILE *file = status_flags >= 0 && fcntl(fd, F_SETFL, status_flags & ~O_NONBLOCK) == 0
                   ? fdopen(fd, mode == PLM__FILE_APPEND ? "ab" : "rb")
                   : NULL;
  if (!file) {
    const int error = errno;
    snprintf(why, why_size, "cannot open: %s", strerror(error));
    close(fd);
    errno = error;
  }
  return file;
}

/* fd's stat, or -1 (fd closed) with why. */
static int stat_opened(int fd, struct stat *st, char *why, size_t why_size) {
  if (fstat(fd, st) == 0) return fd;
  const int error = errno;
  snprintf(why, why_size, "cannot stat: %s", strerror(error));
  close(fd);
  errno = error;
  return -1;
}

/* Wait until a writer has opened the FIFO read through fd (opened O_NONBLOCK): Linux's
 * poll reports nothing on such a read end until a writer has come (POLLIN once it writes,
 * POLLHUP once it has closed), so that the reads that follow see the writer's data or its
 * end, never the empty pipe of a writer not there yet. fd, or -1 (fd closed) with why. */
static int wait_for_writer(int fd, char *why, size_t why_size) {
  struct pollfd waiting = {.fd = fd, .events = POLLIN};
  int ready;
  do ready = poll(&waiting, 1, -1);
  while (ready < 0 && errno == EINTR);
  if (ready > 0) return fd;
  snprintf(why, why_size, "cannot wait for a writer: %s", strerror(errno));
  close_keeping_errno(fd);
  return -1;
}

int plm__file_open_stream(const char *path, struct stat *st, char *why, size_t why_size) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, why_size, "cannot open: %s", strerror(errno));
    return -1;
  }
  if ((fd = stat_opened(fd, st, why, why_size)) < 0) return -1;
  if (S_ISFIFO(st->st_mode) && wait_for_writer(fd, why, why_size) < 0) return -1;
  const bool taken = S_ISREG(st->st_mode) || S_ISCHR(st->st_mode) || S_ISFIFO(st->st_mode);
  const int status_flags = taken ? fcntl(fd, F_GETFL) : -1;
  if (!taken || status_flags < 0 || fcntl(fd, F_SETFL, status_flags & ~O_NONBLOCK) != 0) {
    const int error = taken ? errno : EINVAL;
    if (taken)
      snprintf(why, why_size, "cannot open: %s", strerror(error));
    else
      snprintf(why, why_size, "neither a file nor a stream (it is %s)", plm__file_kind(st));
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

/* ---- where an output goes ------------------------------------------------------------ */

/* link's target read from the link at path, made a path from the working folder (a
 * relative target is relative to the link's folder); malloc'd, NULL when it cannot be
 * read (errno set) or memory runs out. */
static char *follow_link(const char *path) {
  char target[PATH_MAX];
  const ssize_t n = readlink(path, target, sizeof target - 1);
  if (n < 0) return NULL;
  target[n] = '\0';
  if (target[0] == '/') return strdup(target);
  char folder_copy[PATH_MAX];
  snprintf(folder_copy, sizeof folder_copy, "%s", path);
  const char *folder = dirname(folder_copy);
  const size_t size = strlen(folder) + 1 + (size_t)n + 1;
  char *joined = malloc(size);
  if (joined) snprintf(joined, size, "%s/%s", folder, target);
  return joined;
}

/* The end of path's chain of links where that end does not exist yet (a dangling link: the
 * file is created there), else path itself; malloc'd, NULL with why. */
static char *end_of_dangling_links(const char *path, char *why, size_t why_size) {
  char *at = strdup(path);
  for (int hops = 0; at; hops++) {
    struct stat st;
    if (lstat(at, &st) != 0 || !S_ISLNK(st.st_mode)) return at;
    if (hops == MAX_LINKS) {
      snprintf(why, why_size, "its symbolic links go more than %d deep", MAX_LINKS);
      free(at);
      return NULL;
    }
    char *next = follow_link(at);
    if (!next) {
      snprintf(why, why_size, "cannot read its symbolic link %s: %s", at, strerror(errno));
      free(at);
      return NULL;
    }
    free(at);
    at = next;
  }
  snprintf(why, why_size, "out of memory");
  return NULL;
}

bool plm__file_out_target(const char *path, char **target, bool *direct, char *why,
                          size_t why_size) {
  *target = NULL;
  *direct = false;
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode)) {
      /* Opened through path itself: /dev/stdout's links end in /proc's magic ones. */
      *direct = true;
      *target = strdup(path);
    } else if (S_ISREG(st.st_mode)) {
      struct stat link;
      const bool is_link = lstat(path, &link) == 0 && S_ISLNK(link.st_mode);
      *target = is_link ? realpath(path, NULL) : strdup(path);
      if (!*target && is_link) {
        snprintf(why, why_size, "cannot resolve its symbolic link: %s", strerror(errno));
        return false;
      }
    } else {
      snprintf(why, why_size, "is %s: plume writes regular files, devices and FIFOs",
               plm__file_kind(&st));
      return false;
    }
  } else if (errno == ELOOP) {
    snprintf(why, why_size, "its symbolic links loop: %s", strerror(errno));
    return false;
  } else if (errno == ENOENT) {
    *target = end_of_dangling_links(path, why, why_size);
    if (!*target) return false;
  } else {
    *target = strdup(path); /* creating it fails, with the system's reason */
  }
  if (!*target) {
    snprintf(why, why_size, "out of memory");
    return false;
  }
  return true;
}

/* ---- writing --------------------------------------------------------------------------- */

void plm__file_out_free(plm__file_out *f) {
  free(f->path);
  free(f->target);
  free(f->tmp);
  *f = (plm__file_out){.fd = -1};
}

void plm__file_out_abort(plm__file_out *f) {
  if (f->file) fclose(f->file);
  f->file = NULL;
  if (f->tmp) unlink(f->tmp);
  plm__file_out_free(f);
}

/* write(2) to a pipe, a FIFO or a device written in place, without letting a reader that
 * has gone kill the process. Such a write raises SIGPIPE, whose default action ends the
 * process: the program plume lives in, for a profile written to a FIFO. Where SIGPIPE has
 * that default action, the write goes with SIGPIPE blocked in this thread and the SIGPIPE it
 * raised is taken back (unless one was pending already), so that it writes what it could and
 * the next write fails with EPIPE, which the writer reports ("writing failed: Broken pipe"). A
 * program that handles or ignores SIGPIPE (the plume command's interrupt handler) gets it as
 * before: its disposition is only read, and this thread's mask is as it was after. */
static ssize_t write_without_sigpipe(int fd, const char *data, size_t size) {
  struct sigaction action;
  if (sigaction(SIGPIPE, NULL, &action) != 0 || action.sa_handler != SIG_DFL)
    return write(fd, data, size);
  sigset_t pipe_only, before, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  if (pthread_sigmask(SIG_BLOCK, &pipe_only, &before) != 0) return write(fd, data, size);
  const bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  const ssize_t n = write(fd, data, size);
  const int error = errno;
  /* The reader may go mid-write: the count written so far, and SIGPIPE raised all the same. */
  if (!was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
    const struct timespec now = {0, 0};
    while (sigtimedwait(&pipe_only, NULL, &now) < 0 && errno == EINTR) continue;
  }
  pthread_sigmask(SIG_SETMASK, &before, NULL);
  errno = error;
  return n;
}

/* f->file writes through these, so that the errno of a failed write is kept (f->error)
 * for the message, however the caller wrote (fwrite, fprintf, a library's callback). */
static ssize_t cookie_write(void *cookie, const char *data, size_t size) {
  plm__file_out *f = cookie;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = f->direct ? write_without_sigpipe(f->fd, data + done, size - done)
                                : write(f->fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!f->failed) f->error = n < 0 ? errno : EIO;
      f->failed = true;
      return done ? (ssize_t)done : -1;
    }
    done += (size_t)n;
  }
  return (ssize_t)done;
}

static int cookie_close(void *cookie) {
  plm__file_out *f = cookie;
  const int closed = close(f->fd);
  f->fd = -1;
  return closed;
}

/* f->file over fd (taken: closed with the file, or here on failure). */
static bool open_stream(plm__file_out *f, int fd) {
  f->fd = fd;
  const cookie_io_functions_t io = {.write = cookie_write, .close = cookie_close};
  f->file = fopencookie(f, "wb", io);
  if (f->file) return true;
  close_keeping_errno(fd);
  f->fd = -1;
  return false;
}

/* Create the file named `name`, whose last six characters (XXXXXX) are made random until the
 * name is new (O_EXCL), with the mode a plain create gives: 0666 less the umask, which the
 * kernel applies. (mkstemp's file is 0600, and giving it that mode afterwards needs the umask,
 * which can only be read by setting it, process-wide: a file another thread created in
 * between got 0666.) */
static int create_temporary(char *name) {
  static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  enum { RANDOM = 6, TRIES = 100 };
  static _Atomic uint64_t fallback;
  char *random = name + strlen(name) - RANDOM;
  for (int attempt = 0; attempt < TRIES; attempt++) {
    uint64_t bits = 0;
    if (getrandom(&bits, sizeof bits, GRND_NONBLOCK) != (ssize_t)sizeof bits)
      bits = ((uint64_t)getpid() << 32 ^ (uint64_t)time(NULL)) + ++fallback * 0x9E3779B97F4A7C15u;
    for (int i = 0; i < RANDOM; i++, bits /= 62) random[i] = letters[bits % 62];
    const int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

/* Create target's temporary file beside it and open it. */
static plm_status open_temporary(plm__file_out *f, char *why, size_t why_size) {
  const size_t length = strlen(f->target);
  f->tmp = malloc(length + sizeof TEMPORARY_SUFFIX);
  if (!f->tmp) {
    snprintf(why, why_size, "out of memory");
    return PLM_ERR_OUT_OF_MEMORY;
  }
  memcpy(f->tmp, f->target, length);
  memcpy(f->tmp + length, TEMPORARY_SUFFIX, sizeof TEMPORARY_SUFFIX);
  const int fd = create_temporary(f->tmp);
  if (fd < 0) {
    snprintf(why, why_size, "cannot create a temporary file beside it: %s", strerror(errno));
    free(f->tmp);
    f->tmp = NULL;
    return PLM_ERR_IO;
  }
  if (!open_stream(f, fd)) {
    snprintf(why, why_size, "cannot open %s: %s", f->tmp, strerror(errno));
    return PLM_ERR_IO;
  }
  return PLM_OK;
}

/* Open a device or a FIFO where it is (a FIFO's open waits for a reader). */
static plm_status open_direct(plm__file_out *f, char *why, size_t why_size) {
  int fd;
  do fd = open(f->target, O_WRONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0 || !open_stream(f, fd)) {
    snprintf(why, why_size, "cannot open it: %s", strerror(errno));
    return PLM_ERR_IO;
  }
  return PLM_OK;
}

plm_status plm__file_out_open(plm__file_out *f, const char *path, char *why, size_t why_size) {
  *f = (plm__file_out){.fd = -1};
  bool direct = false;
  if (!plm__file_out_target(path, &f->target, &direct, why, why_size)) return PLM_ERR_IO;
  f->path = strdup(path);
  if (!f->path) {
    snprintf(why, why_size, "out of memory");
    plm__file_out_abort(f);
    return PLM_ERR_OUT_OF_MEMORY;
  }
  f->direct = direct;
  const plm_status status =
      direct ? open_direct(f, why, why_size) : open_temporary(f, why, why_size);
  if (status != PLM_OK) plm__file_out_abort(f);
  return status;
}

plm_status plm__file_out_open_fd(plm__file_out *f, const char *name, int fd, char *why,
                                 size_t why_size) {
  *f = (plm__file_out){.fd = -1, .direct = true};
  f->path = strdup(name);
  if (!f->path) {
    snprintf(why, why_size, "out of memory");
    return PLM_ERR_OUT_OF_MEMORY;
  }
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0 || !open_stream(f, copy)) {
    snprintf(why, why_size, "cannot use it: %s", strerror(errno));
    plm__file_out_abort(f);
    return PLM_ERR_IO;
  }
  return PLM_OK;
}

plm_status plm__file_out_write(plm__file_out *f, const void *data, size_t bytes, char *why,
                               size_t why_size) {
  if (bytes && fwrite(data, 1, bytes, f->file) != bytes) {
    if (!f->failed) f->error = errno;
    f->failed = true;
    snprintf(why, why_size, "writing failed: %s", strerror(f->error));
    return PLM_ERR_IO;
  }
  return PLM_OK;
}

plm_status plm__file_out_finish(plm__file_out *f, char *why, size_t why_size) {
  plm_status status = PLM_ERR_IO;
  FILE *file = f->file;
  f->file = NULL;
  if (!file)
    snprintf(why, why_size, "closed already");
  else if (fflush(file) != 0 || f->failed || ferror(file))
    snprintf(why, why_size, "writing failed: %s", strerror(f->failed ? f->error : EIO));
  else if (!f->direct && fsync(f->fd) != 0 && errno != EINVAL && errno != EROFS)
    snprintf(why, why_size, "fsync failed: %s", strerror(errno));
  else
    status = PLM_OK;
  if (file && fclose(file) != 0 && status == PLM_OK) {
    snprintf(why, why_size, "closing failed: %s", strerror(errno));
    status = PLM_ERR_IO;
  }
  return status;
}

plm_status plm__file_out_rename(plm__file_out *f, char *why, size_t why_size) {
  if (f->direct || !f->tmp) return PLM_OK;
  if (rename(f->tmp, f->target) != 0) {
    snprintf(why, why_size, "cannot rename %s to it: %s", f->tmp, strerror(errno));
    return PLM_ERR_IO;
  }
  free(f->tmp);
  f->tmp = NULL;
  return PLM_OK;
}

void plm__file_out_sync_folder(const plm__file_out *f) {
  char copy[PATH_MAX];
  if (!f->target || snprintf(copy, sizeof copy, "%s", f->target) >= (int)sizeof copy) return;
  const int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

plm_status plm__file_out_commit(plm__file_out *f, char *why, size_t why_size) {
  plm_status status = plm__file_out_finish(f, why, why_size);
  if (status == PLM_OK) status = plm__file_out_rename(f, why, why_size);
  if (status == PLM_OK && !f->direct) plm__file_out_sync_folder(f);
  plm__file_out_abort(f); /* removes the temporary file that is left after a failure */
  return status;
}

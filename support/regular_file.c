/* support/regular_file.c: see support/regular_file.h. */
#define _XOPEN_SOURCE 700 /* realpath */

#include "support/regular_file.h"

#include "streams/ascii.h"
#include "streams/file.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* path's folder made canonical, then its last component: "a/../b/x.npy" -> "/abs/b/x.npy".
 * False when the folder cannot be resolved (then no comparison by name is made). */
static bool canonical_path(const char *path, char *out, size_t size) {
  char folder_copy[PATH_MAX], base_copy[PATH_MAX], folder[PATH_MAX];
  if (snprintf(folder_copy, sizeof folder_copy, "%s", path) >= (int)sizeof folder_copy)
    return false;
  snprintf(base_copy, sizeof base_copy, "%s", path);
  if (!realpath(dirname(folder_copy), folder)) return false;
  return snprintf(out, size, "%s/%s", folder, basename(base_copy)) < (int)size;
}

bool same_file(const char *a, const char *b) {
  if (strcmp(a, "-") == 0 || strcmp(b, "-") == 0) return false; /* a standard stream */
  struct stat sa, sb;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  char ca[PATH_MAX + NAME_MAX + 2], cb[PATH_MAX + NAME_MAX + 2];
  return canonical_path(a, ca, sizeof ca) && canonical_path(b, cb, sizeof cb) &&
         strcmp(ca, cb) == 0;
}

bool output_path_usable(const char *path, char *why, size_t why_size) {
  if (strcmp(path, "-") == 0) {
    const int flags = fcntl(STDOUT_FILENO, F_GETFL);
    const bool writable = flags >= 0 && (flags & O_ACCMODE) != O_RDONLY;
    if (!writable)
      snprintf(why, why_size, "standard output is %s", flags < 0 ? "closed" : "read-only");
    return writable;
  }
  char *target = NULL;
  bool direct = false;
  if (!plm__file_out_target(path, &target, &direct, why, why_size)) return false;
  if (direct) {
    const bool writable = access(target, W_OK) == 0;
    if (!writable) snprintf(why, why_size, "cannot be written: %s", strerror(errno));
    free(target);
    return writable;
  }
  char copy[PATH_MAX];
  const bool fits = snprintf(copy, sizeof copy, "%s", target) < (int)sizeof copy;
  free(target);
  if (!fits) {
    snprintf(why, why_size, "the path is longer than %d bytes", PATH_MAX - 1);
    return false;
  }
  const char *folder = dirname(copy);
  char q[QUOTE_SIZE];
  struct stat st;
  if (stat(folder, &st) != 0) {
    snprintf(why, why_size, "its folder %s does not exist: %s", quote_value(folder, q, sizeof q),
             strerror(errno));
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    snprintf(why, why_size, "%s is not a folder", quote_value(folder, q, sizeof q));
    return false;
  }
  if (access(folder, W_OK | X_OK) != 0) {
    snprintf(why, why_size, "its folder %s cannot be written: %s", quote_value(folder, q, sizeof q),
             strerror(errno));
    return false;
  }
  return true;
}

plm_status path_failure(char *err, size_t err_size, const char *path, int64_t line,
                        plm_status status, const char *fmt, ...) {
  if (!err || err_size == 0) return status;
  char message[QUOTE_MESSAGE_SIZE];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  if (!path) path = "(null)";
  return line > 0
             ? quote_failure(err, err_size, status, "%s:%lld: %s", path, (long long)line, message)
             : quote_failure(err, err_size, status, "%s: %s", path, message);
}

FILE *file_open_read(const char *path, struct stat *st, char *err, size_t err_size) {
  char why[160];
  FILE *file = plm__file_open_regular(path, PLM__FILE_READ, st, why, sizeof why);
  if (!file) path_failure(err, err_size, path, 0, PLM_ERR_IO, "%s", why);
  return file;
}

plm_status file_read_all(const char *path, int64_t max_bytes, char **text, size_t *length,
                         char *err, size_t err_size) {
  struct stat st;
  FILE *file = file_open_read(path, &st, err, err_size);
  if (!file) return PLM_ERR_IO;
  plm_status status = PLM_OK;
  if ((int64_t)st.st_size > max_bytes)
    status =
        path_failure(err, err_size, path, 0, PLM_ERR_IO, "%lld bytes: larger than the %lld read",
                     (long long)st.st_size, (long long)max_bytes);
  size_t size = status == PLM_OK ? (size_t)st.st_size : 0;
  char *buf = status == PLM_OK ? malloc(size + 1) : NULL;
  if (status == PLM_OK && !buf)
    status = path_failure(err, err_size, path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  if (status == PLM_OK && size && fread(buf, 1, size, file) != size)
    status = path_failure(err, err_size, path, 0, PLM_ERR_IO, "reading failed: %s",
                          ferror(file) ? strerror(errno) : "the file shrank");
  fclose(file);
  if (status != PLM_OK) {
    free(buf);
    return status;
  }
  buf[size] = '\0';
  *text = buf;
  *length = size;
  return PLM_OK;
}

const char *output_extension(const char *path) {
  if (strcmp(path, "-") == 0) return NULL;
  const char *slash = strrchr(path, '/');
  const char *name = slash ? slash + 1 : path;
  const char *dot = strrchr(name, '.');
  return !dot || dot == name || dot[1] == '\0' ? NULL : dot + 1;
}

bool output_extension_fits(const char *path, const char *extensions, char *why, size_t why_size) {
  const char *extension = output_extension(path);
  if (!extension) return true;
  const size_t length = strlen(extension);
  for (const char *e = extensions; *e;) {
    const size_t n = strcspn(e, "|");
    if (n == length && plm__ascii_ncasecmp(e, extension, n) == 0) return true;
    e += n + (e[n] == '|');
  }
  char q[QUOTE_SIZE], listed[128];
  size_t used = 0;
  for (const char *e = extensions; *e && used < sizeof listed;) {
    const size_t n = strcspn(e, "|");
    const bool last = e[n] == '\0';
    used += (size_t)snprintf(listed + used, sizeof listed - used, "%s.%.*s",
                             e == extensions ? ""
                             : last          ? " or "
                                             : ", ",
                             (int)n, e);
    e += n + !last;
  }
  snprintf(why, why_size,
           "%s ends in .%s, but the data written is %s: name it so (or - for "
           "standard output)",
           quote_value(path, q, sizeof q), extension, listed);
  return false;
}

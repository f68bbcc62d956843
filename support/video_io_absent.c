/* support/video_io_absent.c: support/video_io.h in a build without FFmpeg (cmake
 * -DPLUME_VIDEO=OFF, e.g. scripts/gpu-campaign's, whose machine has no FFmpeg to load).
 * A video is still recognised by its first bytes (support/video_common.c), and every open
 * is refused with PLM_ERR_UNSUPPORTED naming the file, its container and the option;
 * bytes of no container read are PLM_ERR_IO, as in the build with FFmpeg. No
 * video_frames is ever made, so the calls that take one only check their arguments. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/quote.h"
#include "support/video_io.h"

void video_io_as_guest(void) {}

/* The answer to an open of bytes (a stream's or not) whose first bytes are magic[0..got). */
static plm_status refuse(const char *name, const unsigned char *magic, size_t got, bool stream,
                         char *err, size_t err_size) {
  video_container kind = video_container_of(magic, got);
  if (kind == VIDEO_CONTAINER_NONE) return video_refuse_unknown(name, stream, err, err_size);
  return quote_failure(err, err_size, PLM_ERR_UNSUPPORTED,
                       "%s: a %s video, and this plume was built without FFmpeg (cmake "
                       "-DPLUME_VIDEO=OFF): no video is read",
                       name, video_container_title(kind));
}

plm_status video_frames_open(int fd, const char *path, video_info *info, video_frames **out,
                             char *err, size_t err_size) {
  plm_status checked = video_check_open(fd, path, info, out, err, err_size);
  if (checked != PLM_OK) return checked;
  unsigned char magic[VIDEO_MAGIC_BYTES];
  struct stat st;
  const bool stream = fstat(fd, &st) != 0 || !S_ISREG(st.st_mode);
  ssize_t got;
  do { /* a stream is read from where it is; a file from its start */
    got = stream ? read(fd, magic, sizeof magic) : pread(fd, magic, sizeof magic, 0);
  } while (got < 0 && errno == EINTR);
  int error = errno;
  close(fd);
  if (got < 0) return quote_failure(err, err_size, PLM_ERR_IO, "%s: %s", path, strerror(error));
  return refuse(path, magic, (size_t)got, stream, err, err_size);
}

plm_status video_frames_open_memory(const void *bytes, size_t length, const char *name,
                                    video_info *info, video_frames **out, char *err,
                                    size_t err_size) {
  plm_status checked = video_check_open_memory(bytes, length, name, info, out, err, err_size);
  if (checked != PLM_OK) return checked;
  return refuse(name, bytes, length < VIDEO_MAGIC_BYTES ? length : VIDEO_MAGIC_BYTES, false, err,
                err_size);
}

plm_status video_frames_read(video_frames *v, int64_t k, void *dst, bool *end, char *err,
                             size_t err_size) {
  (void)v, (void)k, (void)dst, (void)end;
  return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                       "video_frames_read: this build reads no video (PLUME_VIDEO=OFF)");
}

int64_t video_frames_count(const video_frames *v) {
  (void)v;
  return -1;
}

plm_status video_frames_count_all(video_frames *v, int64_t *count, char *err, size_t err_size) {
  (void)v;
  if (count) *count = -1;
  return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                       "video_frames_count_all: this build reads no video (PLUME_VIDEO=OFF)");
}

void video_frames_close(video_frames *v) {
  (void)v;
}

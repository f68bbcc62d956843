/* support/video_common.c: what both builds of support/video_io.h share, FFmpeg's
 * (video_io.c) and the one without it (video_io_absent.c, PLUME_VIDEO=OFF): the containers
 * read, by their first bytes, so that both know a video for one, and the opens' refusals of
 * NULL arguments and of bytes of no container. No FFmpeg here. */
#include <string.h>
#include <unistd.h>

#include "support/quote.h"
#include "support/video_io.h"

video_container video_container_of(const unsigned char *bytes, size_t length) {
  static const char nut[] = "nut/multimedia container";
  static const char *const boxes[] = {"ftyp", "moov", "mdat", "wide", "free", "skip"};
  if (!bytes) return VIDEO_CONTAINER_NONE;
  if (length >= 4 && memcmp(bytes, "\x1a\x45\xdf\xa3", 4) == 0) return VIDEO_CONTAINER_MATROSKA;
  if (length >= 12 && memcmp(bytes, "RIFF", 4) == 0 && memcmp(bytes + 8, "AVI ", 4) == 0)
    return VIDEO_CONTAINER_AVI;
  if (length >= sizeof nut && memcmp(bytes, nut, sizeof nut) == 0) return VIDEO_CONTAINER_NUT;
  for (size_t b = 0; length >= 8 && b < sizeof boxes / sizeof *boxes; b++)
    if (memcmp(bytes + 4, boxes[b], 4) == 0) return VIDEO_CONTAINER_QUICKTIME;
  return VIDEO_CONTAINER_NONE;
}

const char *video_container_title(video_container kind) {
  switch (kind) {
    case VIDEO_CONTAINER_MATROSKA: return "Matroska";
    case VIDEO_CONTAINER_AVI: return "AVI";
    case VIDEO_CONTAINER_QUICKTIME: return "QuickTime/MP4";
    case VIDEO_CONTAINER_NUT: return "NUT";
    case VIDEO_CONTAINER_NONE: break;
  }
  return "none";
}

bool video_magic(const unsigned char *bytes, size_t length) {
  return video_container_of(bytes, length) != VIDEO_CONTAINER_NONE;
}

plm_status video_check_open(int fd, const char *path, const video_info *info, video_frames **out,
                            char *err, size_t err_size) {
  if (out) *out = NULL;
  if (path && info && out) return PLM_OK;
  if (fd >= 0) close(fd);
  return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "video_frames_open: %s is NULL",
                       !path   ? "path"
                       : !info ? "info"
                               : "out");
}

plm_status video_check_open_memory(const void *bytes, size_t length, const char *name,
                                   const video_info *info, video_frames **out, char *err,
                                   size_t err_size) {
  if (out) *out = NULL;
  if (name && info && out && (bytes || !length)) return PLM_OK;
  return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "video_frames_open_memory: %s is NULL",
                       !name   ? "name"
                       : !info ? "info"
                       : !out  ? "out"
                               : "bytes");
}

plm_status video_refuse_unknown(const char *name, bool stream, char *err, size_t err_size) {
  return quote_failure(err, err_size, PLM_ERR_IO,
                       "%s: not a video file of the containers read (Matroska, AVI, "
                       "QuickTime/MP4, NUT): unknown first bytes%s",
                       name,
                       stream ? " (raw frames on a stream take their format from "
                                "--raw-shape HxW and the other --raw-* options)"
                              : "");
}

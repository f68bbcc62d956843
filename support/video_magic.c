/* support/video_magic.c: the video containers read, by their first bytes (support/video_io.h);
 * no FFmpeg here, so that a build without it (PLUME_VIDEO=OFF) still knows a video for one. */
#include <string.h>

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

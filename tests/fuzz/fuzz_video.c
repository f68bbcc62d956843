/* tests/fuzz/fuzz_video.c: the video reader of support/video_io.h (FFmpeg's demuxers and
 * decoders, restricted to its format and codec whitelists, under plume's checks) on arbitrary
 * bytes, demuxed and decoded from memory through its custom AVIOContext.
 *
 * Feeds: the input's first byte picks the order frames are read in (its value modulo 3), the
 * rest is the file: 0 in order to the end (at most 8 frames), as plume detect reads them;
 * 1 the last of those first, then 0, then 2 (each earlier frame decodes again from the
 * start); 2 frame 0 twice, then frame 1, then the frame after the end (an end or a
 * failure). The seeds are the fixtures the ffmpeg program made for tests/test_video_io.c
 * (tests/fuzz/make_seeds.py).
 * Checks (abort() on a breach): a failure is a status other than PLM_OK with a one-line
 * message naming the input; an open video has u8 or u16 frames of at least 1x1, a count of
 * -1 or at least 1, and a frame read fills its buffer and writes nothing past it (GUARD
 * bytes after it, which FFmpeg's uninstrumented code could overrun unseen by ASan: libswscale
 * did, on frames of 1 to 5 columns); video_frames_count never goes down;
 * no crash, hang, leak or undefined behaviour (ASan, UBSan) in plume or in what FFmpeg
 * leaves it. Frames of more than 2^20 samples are opened only (reading their zeroed memory
 * costs time and finds nothing new). FFmpeg itself is Debian's build, not instrumented:
 * libFuzzer's coverage guidance sees plume's code only, so this is mostly a mutation fuzzer
 * of FFmpeg's whitelisted demuxers and decoders.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/image_io.h"
#include "support/video_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MOST_FRAMES = 8, MOST_SAMPLES = 1 << 20, GUARD = 256 };

static void check_message(plm_status status, const char *err) {
  if (status == PLM_OK || err[0] == '\0' || strchr(err, '\n') || strncmp(err, "fuzz", 4) != 0) {
    fprintf(stderr, "fuzz_video: bad failure %d: \"%s\"\n", (int)status, err);
    abort();
  }
}

/* Read frame k; an end is kept in *ended; a failure is checked. Returns whether it worked. */
static bool read_frame(video_frames *v, int64_t k, unsigned char *frame, size_t bytes,
                       bool *ended) {
  char err[IMAGE_ERROR_SIZE] = "";
  bool end = false;
  memset(frame, 0xA5, bytes + GUARD);
  plm_status status = video_frames_read(v, k, frame, &end, err, sizeof err);
  for (size_t i = bytes; i < bytes + GUARD; i++)
    if (frame[i] != 0xA5) {
      fprintf(stderr, "fuzz_video: frame %lld: byte %zu past its %zu was written\n", (long long)k,
              i - bytes, bytes);
      abort();
    }
  if (status != PLM_OK) {
    check_message(status, err);
    return false;
  }
  *ended = end;
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  char err[IMAGE_ERROR_SIZE] = "";
  video_info info;
  video_frames *v = NULL;
  plm_status status =
      video_frames_open_memory(data + 1, size - 1, "fuzz", &info, &v, err, sizeof err);
  if (status != PLM_OK) {
    check_message(status, err);
    if (v) abort();
    return 0;
  }
  const bool dtype_ok = info.dtype == PLM_DTYPE_U8 || info.dtype == PLM_DTYPE_U16;
  if (!dtype_ok || info.height < 1 || info.width < 1 || info.count == 0 || info.count < -1) {
    fprintf(stderr, "fuzz_video: opened as %s %lldx%lld, count %lld\n", plm_dtype_name(info.dtype),
            (long long)info.height, (long long)info.width, (long long)info.count);
    abort();
  }
  if (info.height * info.width > MOST_SAMPLES) {
    video_frames_close(v);
    return 0;
  }
  const size_t bytes = (size_t)(info.height * info.width) * plm_dtype_size(info.dtype);
  unsigned char *frame = malloc(bytes + GUARD);
  if (!frame) abort();
  const int64_t most = info.count > 0 && info.count < MOST_FRAMES ? info.count : MOST_FRAMES;
  int64_t last = -1, counted = -1;
  bool end = false;
  switch (data[0] % 3) {
    case 0:
      for (int64_t k = 0; k < most && read_frame(v, k, frame, bytes, &end) && !end; k++) last = k;
      break;
    case 1:
      for (int64_t k = 0; k < most && read_frame(v, k, frame, bytes, &end) && !end; k++) last = k;
      if (last >= 0 && read_frame(v, last, frame, bytes, &end) && end) abort();
      if (read_frame(v, 0, frame, bytes, &end) && end) abort(); /* frame 0 decoded at open */
      read_frame(v, 2, frame, bytes, &end);
      break;
    default:
      for (int k = 0; k < 2; k++) read_frame(v, 0, frame, bytes, &end);
      read_frame(v, 1, frame, bytes, &end);
      counted = video_frames_count(v);
      if (counted > 0) read_frame(v, counted, frame, bytes, &end);
      break;
  }
  const int64_t count = video_frames_count(v);
  if (count < counted || (info.count > 0 && count != info.count)) {
    fprintf(stderr, "fuzz_video: count %lld after %lld (declared %lld)\n", (long long)count,
            (long long)counted, (long long)info.count);
    abort();
  }
  free(frame);
  video_frames_close(v);
  return 0;
}

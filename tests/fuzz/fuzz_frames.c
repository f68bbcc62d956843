/* tests/fuzz/fuzz_frames.c: the checks of a harness on an image file of frames
 * (tests/fuzz/fuzz_frames.h). */
#include "tests/fuzz/fuzz_frames.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { FRAMES_READ = 8, MOST_SAMPLES = 1 << 20, GUARD = 256 };

static void check_failure(plm_status status, const char *err) {
  if (status == PLM_OK || err[0] == '\0') abort();
}

static void check_image(const image *img) {
  if ((img->ndim != 2 && img->ndim != 3) || !img->data) abort();
  if (img->dtype != PLM_DTYPE_U8 && img->dtype != PLM_DTYPE_U16 && img->dtype != PLM_DTYPE_F32)
    abort();
  for (int d = 0; d < img->ndim; d++)
    if (img->dims[d] < 1) abort();
  const uint8_t *bytes = img->data;
  size_t n = image_bytes(img), sum = 0;
  for (size_t i = 0; i < n; i++) sum += bytes[i];
  if (sum == SIZE_MAX) abort(); /* keeps the loop */
}

/* Whether the frames that image_frames_open found are few enough samples to read. */
static bool small(const image *frame, int64_t count) {
  return frame->dims[0] * frame->dims[1] <= MOST_SAMPLES / count;
}

static void read_whole(const char *path, void (*round_trip)(const image *img)) {
  char err[IMAGE_ERROR_SIZE] = "";
  image img = {0};
  plm_status status = image_read(path, NULL, &img, err, sizeof err);
  if (status != PLM_OK) {
    check_failure(status, err);
    if (img.data) abort();
    return;
  }
  check_image(&img);
  if (round_trip) round_trip(&img);
  image_free(&img, NULL);
}

static void read_some_frames(image_frames *frames, const image *frame, int64_t count) {
  char err[IMAGE_ERROR_SIZE] = "";
  plm_status status = PLM_OK;
  const size_t bytes = image_bytes(frame);
  unsigned char *dst = malloc(bytes + GUARD);
  if (!dst) abort();
  memset(dst + bytes, 0xA5, GUARD);
  for (int64_t k = 0; k < count; k++) {
    if (k >= FRAMES_READ && k != count - 1) continue;
    err[0] = '\0';
    status = image_frames_read(frames, k, dst, err, sizeof err);
    if (status != PLM_OK) check_failure(status, err);
    for (size_t i = bytes; i < bytes + GUARD; i++)
      if (dst[i] != 0xA5) abort(); /* a library wrote past the frame, unseen by ASan */
  }
  free(dst);
}

void fuzz_frames_read(const char *path, bool whole, void (*round_trip)(const image *img)) {
  char err[IMAGE_ERROR_SIZE] = "";
  image frame = {0};
  int64_t count = 0;
  image_frames *frames = NULL;
  plm_status status = image_frames_open(path, &frame, &count, &frames, err, sizeof err);
  if (status != PLM_OK) {
    check_failure(status, err);
    if (frames) abort();
    return;
  }
  if (count < 1 || frame.ndim != 2 || frame.data || frame.dims[0] < 1 || frame.dims[1] < 1) abort();
  if (!small(&frame, count) || !whole) {
    if (small(&frame, 1)) read_some_frames(frames, &frame, count);
    image_frames_close(frames);
    return;
  }
  image_frames_close(frames);
  read_whole(path, round_trip);
}


/* tests/fuzz/fuzz_image.c: the image readers of support/image_io.h and the folder reader of
 * support/frame_reader.h on arbitrary bytes.
 *
 * Feeds: the input's first byte picks the reader (its value modulo 5), the rest is the
 * file:
 *   0 image_read, 1 image_read_keep_f64, 2 image_read_array: the whole image;
 *   3 image_frames_open, then frames read one by one;
 *   4 frame_reader_open on a folder of up to three files frame_0.npy, frame_1.pgm and
 *     frame_2.png, the rest of the input split at each "PLUMEPART" (the readers know a
 *     format by its bytes, the folder takes a file by its name), then frames read.
 * Checks: no crash, hang, leak or undefined behaviour (ASan, UBSan) whatever the bytes.
 * A failure is a status with a message, nothing allocated (data NULL, *out NULL); a
 * success is an image of a known dtype, dims >= 1 and at most IMAGE_MAX_ELEMENTS
 * elements, whose data is read to its last byte (so ASan checks the allocation holds
 * image_bytes), and frames are read into buffers of exactly one frame's bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_files.h"
#include "support/frame_reader.h"
#include "support/image_io.h"

/* Frames read from one file or folder: the first ones and the last. */
enum { FRAMES_READ = 8, FOLDER_FILES = 3 };

static const char separator[] = "PLUMEPART";

/* What every failure owes its caller: a status and a message. */
static void check_failure(plm_status status, const char *err) {
  if (status == PLM_OK || err[0] == '\0') abort();
}

/* Read every byte of a successful image, as a caller would. */
static void check_image(const image *img) {
  if (img->ndim < 1 || img->ndim > PLM_TENSOR_MAX_DIMS || !img->data) abort();
  for (int d = 0; d < img->ndim; d++)
    if (img->dims[d] < 1) abort();
  if (image_numel(img) < 1 || image_numel(img) > IMAGE_MAX_ELEMENTS) abort();
  const uint8_t *bytes = img->data;
  size_t n = image_bytes(img), sum = 0;
  for (size_t i = 0; i < n; i++) sum += bytes[i];
  if (sum == SIZE_MAX) abort(); /* keeps the loop */
}

typedef plm_status (*image_reader)(const char *, const image_allocator *, image *, char *,
                                   size_t);

static void read_whole(image_reader read, const char *path) {
  char err[IMAGE_ERROR_SIZE] = "";
  image img = {0};
  plm_status status = read(path, NULL, &img, err, sizeof err);
  if (status != PLM_OK) {
    check_failure(status, err);
    if (img.data) abort();
    return;
  }
  check_image(&img);
  image_free(&img, NULL);
}

/* Whether frame k is one of those read: the first FRAMES_READ and the last. */
static int frame_is_read(int64_t k, int64_t count) {
  return k < FRAMES_READ || k == count - 1;
}

static void read_frames(const char *path) {
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
  if (count < 1 || frame.ndim != 2 || frame.data) abort();
  void *dst = malloc(image_bytes(&frame));
  if (!dst) abort();
  for (int64_t k = 0; k < count; k++) {
    if (!frame_is_read(k, count)) continue;
    err[0] = '\0';
    status = image_frames_read(frames, k, dst, err, sizeof err);
    if (status != PLM_OK) check_failure(status, err);
  }
  check_failure(image_frames_read(frames, count, dst, err, sizeof err), err);
  free(dst);
  image_frames_close(frames);
}

/* The parts of data split at each separator: at most FOLDER_FILES, the last one taking
 * the rest. */
static void write_folder(const char *folder, const uint8_t *data, size_t size) {
  static const char *const names[FOLDER_FILES] = {"frame_0.npy", "frame_1.pgm", "frame_2.png"};
  const size_t sep = sizeof separator - 1;
  for (int part = 0; part < FOLDER_FILES; part++) {
    size_t length = size;
    for (size_t i = 0; part < FOLDER_FILES - 1 && i + sep <= size; i++)
      if (memcmp(data + i, separator, sep) == 0) {
        length = i;
        break;
      }
    fuzz_write_in_folder(folder, names[part], data, length);
    if (length == size) return;
    data += length + sep;
    size -= length + sep;
  }
}

static void read_folder(const uint8_t *data, size_t size) {
  char err[FRAME_READER_ERROR_SIZE] = "";
  const char *folder = fuzz_empty_folder("frames");
  write_folder(folder, data, size);
  frame_reader_info info = {0};
  frame_reader *reader = NULL;
  plm_status status = frame_reader_open(folder, &info, &reader, err, sizeof err);
  if (status != PLM_OK) {
    check_failure(status, err);
    if (reader) abort();
    return;
  }
  if (info.count < 1 || info.height < 1 || info.width < 1 || !info.folder) abort();
  image frame = {.dtype = info.dtype, .ndim = 2, .dims = {info.height, info.width}};
  void *dst = malloc(image_bytes(&frame));
  if (!dst) abort();
  for (int64_t k = 0; k < info.count; k++) {
    if (!frame_is_read(k, info.count)) continue;
    if (!frame_reader_file(reader, k)) abort();
    err[0] = '\0';
    status = frame_reader_read(reader, k, dst, err, sizeof err);
    if (status != PLM_OK) check_failure(status, err);
  }
  free(dst);
  frame_reader_close(reader);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const int reader = data[0] % 5;
  data++;
  size--;
  if (reader == 4) {
    read_folder(data, size);
    return 0;
  }
  const char *path = fuzz_write_file("image", data, size);
  if (reader == 0) read_whole(image_read, path);
  if (reader == 1) read_whole(image_read_keep_f64, path);
  if (reader == 2) read_whole(image_read_array, path);
  if (reader == 3) read_frames(path);
  return 0;
}

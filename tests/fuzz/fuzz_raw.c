/* tests/fuzz/fuzz_raw.c: the raw frame reader of support/raw_frames.h on arbitrary bytes and
 * arbitrary formats, and its option parser on arbitrary texts.
 *
 * Feeds: the input's first byte picks what is done (its value modulo 3):
 *   0, 1  a raw input: the next 4 bytes are its format (byte 1: the dtype u8, u16 or f32
 *         by its value modulo 3, big-endian when bit 2 is set; bytes 2 and 3: height and
 *         width, 1 + value modulo 16; byte 4: the header, value modulo 32 bytes), the rest
 *         the input's bytes: 0 opens it as a file (frames read in any order), 1 as a
 *         stream on standard input (the file put in place of fd 0, read in order);
 *   2     raw_format_parse of up to 4 texts (shape, dtype, endian, header), the rest of
 *         the input split at each NUL byte; a text not there is NULL.
 * Checks, besides no crash, hang, leak or undefined behaviour (ASan, UBSan): a failure is
 * a status with a message and nothing opened; a file of S bytes with header B and frames
 * of F bytes opens exactly when S >= B and S - B is a non-zero multiple of F, with
 * (S - B) / F frames, each read whole; a stream gives exactly floor((S - B) / F) frames,
 * then its end when the remainder is 0 and else a failure (and none of it when S < B or
 * S == B); a parsed format's frame has 1 to IMAGE_MAX_ELEMENTS samples.
 */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_files.h"
#include "support/image_io.h"
#include "support/raw_frames.h"

enum { FORMAT_BYTES = 4, TEXTS = 4 };

static void check_failure(plm_status status, const char *err) {
  if (status == PLM_OK || err[0] == '\0') abort();
}

static raw_format format_of(const uint8_t *bytes) {
  static const plm_dtype dtypes[3] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  return (raw_format){.dtype = dtypes[bytes[0] % 3],
                      .big_endian = (bytes[0] & 4) != 0,
                      .height = 1 + bytes[1] % 16,
                      .width = 1 + bytes[2] % 16,
                      .header_bytes = bytes[3] % 32};
}

/* Open path as raw frames of format (as a stream on standard input when stream) and read
 * them as a caller would, checking what the sizes promise. */
static void read_raw(const char *path, const raw_format *format, size_t size, bool stream) {
  const size_t frame_bytes = raw_format_frame_bytes(format);
  const int64_t header = format->header_bytes;
  const int64_t data = (int64_t)size - header;
  const int64_t whole = data > 0 ? data / (int64_t)frame_bytes : 0;
  const bool exact = data > 0 && data % (int64_t)frame_bytes == 0;
  int saved = -1;
  if (stream) {
    const int fd = open(path, O_RDONLY);
    saved = dup(STDIN_FILENO);
    if (fd < 0 || saved < 0 || dup2(fd, STDIN_FILENO) != STDIN_FILENO) abort();
    close(fd);
  }
  char err[IMAGE_ERROR_SIZE] = "";
  raw_frames *f = NULL;
  int64_t count = 0;
  plm_status status = raw_frames_open(stream ? "-" : path, format, &count, &f, err, sizeof err);
  uint8_t *dst = malloc(frame_bytes);
  if (!dst) abort();
  if (status != PLM_OK) {
    check_failure(status, err);
    if (f || (!stream && exact) || (stream && data >= 0)) abort();
  } else if (!stream) {
    if (!exact || count != whole) abort();
    for (int64_t k = count - 1; k >= 0; k -= 1 + k / 4) {
      bool end = true;
      if (raw_frames_read(f, k, dst, &end, err, sizeof err) != PLM_OK || end) abort();
    }
  } else {
    if (count != -1 || data < 0) abort();
    int64_t k = 0;
    bool end = false;
    while ((status = raw_frames_read(f, k, dst, &end, err, sizeof err)) == PLM_OK && !end) k++;
    if (k != whole) abort();
    if (status == PLM_OK ? !exact : exact) abort();
    if (status != PLM_OK) check_failure(status, err);
  }
  free(dst);
  raw_frames_close(f);
  if (stream && (dup2(saved, STDIN_FILENO) != STDIN_FILENO || close(saved) != 0)) abort();
}

/* raw_format_parse of the texts in data, split at NUL bytes. */
static void parse_texts(const uint8_t *data, size_t size) {
  char *copy = malloc(size + 1);
  if (!copy) abort();
  memcpy(copy, data, size);
  copy[size] = '\0';
  const char *texts[TEXTS] = {NULL, NULL, NULL, NULL};
  char *at = copy;
  for (int t = 0; t < TEXTS && at <= copy + size; t++) {
    texts[t] = at;
    at += strlen(at) + 1;
  }
  raw_format format;
  char err[IMAGE_ERROR_SIZE] = "";
  plm_status status =
      raw_format_parse(texts[0], texts[1], texts[2], texts[3], &format, err, sizeof err);
  if (status != PLM_OK)
    check_failure(status, err);
  else if (raw_format_frame_bytes(&format) == 0 || format.header_bytes < 0)
    abort();
  free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const int what = data[0] % 3;
  data++;
  size--;
  if (what == 2) {
    parse_texts(data, size);
    return 0;
  }
  if (size < FORMAT_BYTES) return 0;
  const raw_format format = format_of(data);
  data += FORMAT_BYTES;
  size -= FORMAT_BYTES;
  read_raw(fuzz_write_file("frames.raw", data, size), &format, size, what == 1);
  return 0;
}

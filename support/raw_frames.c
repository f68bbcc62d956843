/* support/raw_frames.c: headerless frames from a file or a stream (support/raw_frames.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/raw_frames.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "streams/file.h"
#include "support/count_parse.h"
#include "support/image_io.h"
#include "support/quote.h"

struct raw_frames {
  raw_format format;
  char *name;         /* the path, or "stdin" */
  int fd;             /* the input; STDIN_FILENO is not closed */
  bool stream;        /* read in order, count unknown */
  int64_t count;      /* a file's frames; -1 for a stream */
  int64_t next;       /* a stream: the frame the next read gives */
  bool ended;         /* a stream: its input has ended at a frame's boundary */
  size_t frame_bytes; /* of one frame */
};

/* ---- the format -------------------------------------------------------------------------- */

plm_status raw_format_parse(const char *shape, const char *dtype, const char *endian,
                            const char *header, raw_format *out, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  char q[QUOTE_SIZE];
  if (!out)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "raw_format_parse: out is NULL");
  if (!shape)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "--raw-shape HxW is required: raw frames do not say their size");
  raw_format format = {.dtype = PLM_DTYPE_U8};
  /* HxW, or H,W as plume scene's --size. */
  const char *rest = NULL;
  uint64_t height = 0, width = 0;
  const uint64_t most = (uint64_t)IMAGE_MAX_ELEMENTS;
  bool good = count_parse(shape, &rest, 1, most, &height) && (*rest == 'x' || *rest == ',') &&
              count_parse(rest + 1, NULL, 1, most, &width) && height * width <= most;
  if (!good)
    return quote_failure(
        err, err_size, PLM_ERR_INVALID_ARG,
        "--raw-shape %s is not HxW (rows x columns, each from 1, at most %lld samples "
        "a frame), for example 512x640",
        quote_value(shape, q, sizeof q), (long long)IMAGE_MAX_ELEMENTS);
  format.height = (int64_t)height;
  format.width = (int64_t)width;
  if (dtype) {
    if (strcmp(dtype, "u8") == 0)
      format.dtype = PLM_DTYPE_U8;
    else if (strcmp(dtype, "u16") == 0)
      format.dtype = PLM_DTYPE_U16;
    else if (strcmp(dtype, "f32") == 0)
      format.dtype = PLM_DTYPE_F32;
    else
      return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                           "--raw-dtype %s is not u8, u16 or f32", quote_value(dtype, q, sizeof q));
  }
  if (endian) {
    if (strcmp(endian, "big") == 0)
      format.big_endian = true;
    else if (strcmp(endian, "little") != 0)
      return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                           "--raw-endian %s is not little or big",
                           quote_value(endian, q, sizeof q));
  }
  uint64_t skip = 0;
  if (header && !count_parse(header, NULL, 0, (uint64_t)INT64_MAX / 2, &skip))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "--raw-header %s is not a count of bytes",
                         quote_value(header, q, sizeof q));
  format.header_bytes = (int64_t)skip;
  *out = format;
  return PLM_OK;
}

size_t raw_format_frame_bytes(const raw_format *format) {
  if (!format || format->height < 1 || format->width < 1 ||
      format->height > IMAGE_MAX_ELEMENTS / format->width)
    return 0;
  const size_t size = plm_dtype_size(format->dtype);
  bool known = format->dtype == PLM_DTYPE_U8 || format->dtype == PLM_DTYPE_U16 ||
               format->dtype == PLM_DTYPE_F32;
  return known ? size * (size_t)(format->height * format->width) : 0;
}

/* ---- reading ----------------------------------------------------------------------------- */

void raw_frames_close(raw_frames *f) {
  if (!f) return;
  if (f->fd >= 0 && f->fd != STDIN_FILENO) close(f->fd);
  free(f->name);
  free(f);
}

const char *raw_frames_name(const raw_frames *f) {
  return f ? f->name : NULL;
}

/* Read up to bytes from a stream, as many as come before its end: the count read, or -1
 * (errno) on an error. */
static ssize_t read_fully(int fd, void *dst, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = read(fd, (char *)dst + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    done += (size_t)n;
  }
  return (ssize_t)done;
}

/* pread up to bytes at offset: the count read, or -1 (errno). */
static ssize_t pread_fully(int fd, void *dst, size_t bytes, off_t offset) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = pread(fd, (char *)dst + done, bytes - done, offset + (off_t)done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    done += (size_t)n;
  }
  return (ssize_t)done;
}

/* A stream's header, read and dropped. */
static plm_status skip_header(raw_frames *f, char *err, size_t err_size) {
  char buffer[65536];
  int64_t left = f->format.header_bytes;
  while (left > 0) {
    const size_t want = left < (int64_t)sizeof buffer ? (size_t)left : sizeof buffer;
    const ssize_t n = read_fully(f->fd, buffer, want);
    if (n < 0)
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: reading the header failed: %s", f->name,
                           strerror(errno));
    left -= n;
    if ((size_t)n < want)
      return quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: the input ended in its header: %lld of %lld bytes (--raw-header)",
                           f->name, (long long)(f->format.header_bytes - left),
                           (long long)f->format.header_bytes);
  }
  return PLM_OK;
}

/* A regular file's frames, from its size. */
static plm_status count_frames(raw_frames *f, off_t size, char *err, size_t err_size) {
  const int64_t header = f->format.header_bytes, bytes = (int64_t)f->frame_bytes;
  if ((int64_t)size < header)
    return quote_failure(err, err_size, PLM_ERR_IO,
                         "%s: %lld bytes, fewer than its header of %lld bytes (--raw-header)",
                         f->name, (long long)size, (long long)header);
  const int64_t data = (int64_t)size - header, whole = data / bytes, part = data % bytes;
  if (whole == 0 && part == 0)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: no frames after its header of %lld bytes",
                         f->name, (long long)header);
  if (part != 0)
    return quote_failure(
        err, err_size, PLM_ERR_IO,
        "%s: frame %lld is short: %lld of %lld bytes, %lld missing (is --raw-shape, "
        "--raw-dtype or --raw-header right?)",
        f->name, (long long)whole, (long long)part, (long long)bytes, (long long)(bytes - part));
  f->count = whole;
  return PLM_OK;
}

plm_status raw_frames_open(const char *path, const raw_format *format, int64_t *count,
                           raw_frames **out, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (out) *out = NULL;
  if (!path || !format || !count || !out)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "raw_frames_open: %s is NULL",
                         !path     ? "path"
                         : !format ? "format"
                         : !count  ? "count"
                                   : "out");
  const size_t frame_bytes = raw_format_frame_bytes(format);
  if (frame_bytes == 0 || format->header_bytes < 0)
    return quote_failure(
        err, err_size, PLM_ERR_INVALID_ARG,
        "%s: raw frames of %s %lldx%lld after %lld header bytes: not a frame format", path,
        plm_dtype_name(format->dtype), (long long)format->height, (long long)format->width,
        (long long)format->header_bytes);
  raw_frames *f = calloc(1, sizeof *f);
  const bool standard_input = strcmp(path, "-") == 0;
  if (f) f->name = strdup(standard_input ? "stdin" : path);
  if (!f || !f->name) {
    free(f);
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  *f = (raw_frames){
      .format = *format, .name = f->name, .fd = -1, .count = -1, .frame_bytes = frame_bytes};
  plm_status status = PLM_OK;
  struct stat st;
  char why[160];
  if (standard_input) {
    f->fd = STDIN_FILENO;
    if (fstat(f->fd, &st) != 0)
      status = quote_failure(err, err_size, PLM_ERR_IO, "stdin: cannot stat: %s", strerror(errno));
  } else if ((f->fd = plm__file_open_stream(path, &st, why, sizeof why)) < 0) {
    status = quote_failure(err, err_size, PLM_ERR_IO, "%s: %s", path, why);
  }
  /* Standard input is a stream even when the shell gives it a file: its offset is the
   * shell's, and a stream reads it from there. */
  if (status == PLM_OK && S_ISREG(st.st_mode) && !standard_input)
    status = count_frames(f, st.st_size, err, err_size);
  else if (status == PLM_OK)
    f->stream = true;
  if (status == PLM_OK && f->stream) status = skip_header(f, err, err_size);
  if (status != PLM_OK) {
    raw_frames_close(f);
    return status;
  }
  *count = f->count;
  *out = f;
  return PLM_OK;
}

/* Samples of the other byte order than the host's, swapped in place. */
static void swap_bytes(void *data, size_t bytes, size_t size) {
  unsigned char *p = data;
  for (size_t i = 0; i + size <= bytes; i += size)
    for (size_t a = i, b = i + size - 1; a < b; a++, b--) {
      const unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

static bool host_is_big_endian(void) {
  const uint16_t one = 1;
  unsigned char first;
  memcpy(&first, &one, 1);
  return first == 0;
}

plm_status raw_frames_read(raw_frames *f, int64_t k, void *dst, bool *end, char *err,
                           size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!f || !dst || !end)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "raw_frames_read: %s is NULL",
                         !f     ? "frames"
                         : !dst ? "dst"
                                : "end");
  *end = false;
  ssize_t got = 0;
  if (f->stream) {
    if (k != f->next)
      return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                           "%s: frame %lld asked for, but a stream gives frame %lld next", f->name,
                           (long long)k, (long long)f->next);
    if (f->ended) {
      *end = true;
      return PLM_OK;
    }
    got = read_fully(f->fd, dst, f->frame_bytes);
  } else {
    if (k < 0 || k >= f->count)
      return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: frame %lld is not in 0..%lld",
                           f->name, (long long)k, (long long)(f->count - 1));
    const off_t offset = (off_t)(f->format.header_bytes + k * (int64_t)f->frame_bytes);
    got = pread_fully(f->fd, dst, f->frame_bytes, offset);
  }
  if (got < 0)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld: reading failed: %s", f->name,
                         (long long)k, strerror(errno));
  if (f->stream && got == 0) {
    f->ended = true;
    if (k == 0)
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: no frames: the input ended %s", f->name,
                           f->format.header_bytes ? "after its header" : "before any byte");
    *end = true;
    return PLM_OK;
  }
  if ((size_t)got < f->frame_bytes) {
    f->ended = f->stream;
    return quote_failure(err, err_size, PLM_ERR_IO,
                         "%s: frame %lld is short: %lld of %zu bytes, %lld missing%s", f->name,
                         (long long)k, (long long)got, f->frame_bytes,
                         (long long)(f->frame_bytes - (size_t)got),
                         f->stream ? " (is --raw-shape, --raw-dtype or --raw-header right?)"
                                   : " (the file changed since it was opened)");
  }
  f->next = k + 1;
  const size_t size = plm_dtype_size(f->format.dtype);
  if (size > 1 && f->format.big_endian != host_is_big_endian())
    swap_bytes(dst, f->frame_bytes, size);
  return PLM_OK;
}

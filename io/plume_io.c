/* io/plume_io.c: libplume_io, the public face of support/frame_reader.h (plume/io.h).
 *
 * A plm_frames is a frame_reader and the two things the public contract adds: the frame
 * plm_frames_next reads next, and the count of a stream once it has ended (the reader
 * itself keeps -1). Messages are the reader's, kept per thread for plm_frames_last_error,
 * with the hints that name the plume command's --raw-* options said in this API's words;
 * this file adds only those of the arguments it checks itself.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plume/io.h"
#include "support/frame_reader.h"

struct plm_frames {
  frame_reader *reader;
  frame_reader_info info; /* count: the reader's, or a stream's frames once it ended */
  int64_t position;       /* the frame plm_frames_next reads next */
};

static _Thread_local char last_error[FRAME_READER_ERROR_SIZE];

/* Keep a failure's message for plm_frames_last_error; returns status. */
static plm_status fail(plm_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static plm_status fail(plm_status status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, args);
  va_end(args);
  return status;
}

/* The readers' hints that name the plume command's options, and the words of this API. */
static const char *const command_words[][2] = {
    {"(is --raw-shape, --raw-dtype or --raw-header right?)",
     "(is the raw format's shape, dtype or header right?)"},
    {"from --raw-shape HxW and the other --raw-* options",
     "from the raw format they are opened with"},
    {"(--raw-header)", "(the raw format's header)"},
};

/* A reader's failure: its message (in err) kept, in this API's words. */
static plm_status failed(plm_status status, const char *err) {
  if (status == PLM_OK) return PLM_OK;
  for (size_t i = 0; i < sizeof command_words / sizeof command_words[0]; i++) {
    const char *at = strstr(err, command_words[i][0]);
    if (at)
      return fail(status, "%.*s%s%s", (int)(at - err), err, command_words[i][1],
                  at + strlen(command_words[i][0]));
  }
  return fail(status, "%s", err);
}

static plm_status adopt(frame_reader *reader, const frame_reader_info *info, plm_frames **out) {
  plm_frames *f = malloc(sizeof *f);
  if (!f) {
    frame_reader_close(reader);
    return fail(PLM_ERR_OUT_OF_MEMORY, "plm_frames_open: out of memory");
  }
  *f = (plm_frames){.reader = reader, .info = *info};
  *out = f;
  return PLM_OK;
}

plm_status plm_frames_open(const char *path, unsigned flags, plm_frames **out) {
  if (out) *out = NULL;
  if (!path || !out)
    return fail(PLM_ERR_INVALID_ARG, "plm_frames_open: %s is NULL", !path ? "path" : "out");
  const unsigned known = PLM_FRAMES_STORED_VALUES | PLM_FRAMES_MIXED_SHAPES;
  if (flags & ~known)
    return fail(PLM_ERR_INVALID_ARG, "plm_frames_open: flags 0x%x has unknown bits 0x%x", flags,
                flags & ~known);
  frame_reader_as_guest(); /* libtiff's and FFmpeg's process-wide settings left alone */
  char err[FRAME_READER_ERROR_SIZE];
  frame_reader *reader = NULL;
  frame_reader_info info;
  const unsigned read_flags = flags & PLM_FRAMES_STORED_VALUES ? IMAGE_READ_STORED_VALUES : 0;
  plm_status status = frame_reader_open_as(path, read_flags, &info, &reader, err, sizeof err);
  if (status != PLM_OK) return failed(status, err);
  if (flags & PLM_FRAMES_MIXED_SHAPES) frame_reader_allow_shapes(reader);
  return adopt(reader, &info, out);
}

plm_status plm_frames_open_raw(const char *path, const plm_raw_format *format, plm_frames **out) {
  if (out) *out = NULL;
  if (!path || !format || !out)
    return fail(PLM_ERR_INVALID_ARG, "plm_frames_open_raw: %s is NULL",
                !path     ? "path"
                : !format ? "format"
                          : "out");
  if (format->dtype != PLM_DTYPE_U8 && format->dtype != PLM_DTYPE_U16 &&
      format->dtype != PLM_DTYPE_F32)
    return fail(PLM_ERR_INVALID_ARG, "plm_frames_open_raw: %s: raw dtype %s: u8, u16 or f32", path,
                plm_dtype_name(format->dtype));
  if (format->height < 1 || format->width < 1 || format->header_bytes < 0)
    return fail(PLM_ERR_INVALID_ARG,
                "plm_frames_open_raw: %s: raw shape %lldx%lld, header %lld bytes: the shape's "
                "sides are >= 1, the header >= 0",
                path, (long long)format->height, (long long)format->width,
                (long long)format->header_bytes);
  const raw_format raw = {.dtype = format->dtype,
                          .height = format->height,
                          .width = format->width,
                          .big_endian = format->big_endian,
                          .header_bytes = format->header_bytes};
  frame_reader_as_guest();
  char err[FRAME_READER_ERROR_SIZE];
  frame_reader *reader = NULL;
  frame_reader_info info;
  plm_status status = frame_reader_open_raw(path, &raw, &info, &reader, err, sizeof err);
  if (status != PLM_OK) return failed(status, err);
  return adopt(reader, &info, out);
}

plm_status plm_frames_info_get(const plm_frames *f, plm_frames_info *info) {
  if (!f || !info)
    return fail(PLM_ERR_INVALID_ARG, "plm_frames_info_get: %s is NULL", !f ? "frames" : "info");
  *info = (plm_frames_info){.dtype = f->info.dtype,
                            .height = f->info.height,
                            .width = f->info.width,
                            .count = f->info.count,
                            .folder = f->info.folder};
  return PLM_OK;
}

/* Bytes of a height x width frame of dtype (0 when it overflows). */
static size_t frame_bytes(plm_dtype dtype, int64_t height, int64_t width) {
  const size_t element = plm_dtype_size(dtype);
  if (height < 1 || width < 1 || element == 0) return 0;
  if ((uint64_t)height > SIZE_MAX / (uint64_t)width / element) return 0;
  return (size_t)height * (size_t)width * element;
}

size_t plm_frames_frame_bytes(const plm_frames_info *info) {
  return info ? frame_bytes(info->dtype, info->height, info->width) : 0;
}

/* k outside the frames a known count holds: the message of plm_frames_<function>. */
static plm_status out_of_range(const plm_frames *f, const char *function, int64_t k) {
  return fail(PLM_ERR_INVALID_ARG, "plm_frames_%s: %s: frame %lld is not in 0..%lld", function,
              plm_frames_file(f, 0), (long long)k, (long long)(f->info.count - 1));
}

plm_status plm_frames_shape(plm_frames *f, int64_t k, int64_t *height, int64_t *width) {
  if (!f || !height || !width)
    return fail(PLM_ERR_INVALID_ARG, "plm_frames_shape: %s is NULL",
                !f        ? "frames"
                : !height ? "height"
                          : "width");
  if (k < 0 || (f->info.count >= 0 && k >= f->info.count)) return out_of_range(f, "shape", k);
  char err[FRAME_READER_ERROR_SIZE];
  return failed(frame_reader_shape(f->reader, k, height, width, err, sizeof err), err);
}

/* Whether dst_bytes holds frame k; else the failure of plm_frames_<function>. */
static plm_status check_room(plm_frames *f, const char *function, int64_t k, size_t dst_bytes) {
  int64_t height, width;
  plm_status status = plm_frames_shape(f, k, &height, &width);
  if (status != PLM_OK) return status;
  const size_t needed = frame_bytes(f->info.dtype, height, width);
  if (dst_bytes < needed)
    return fail(PLM_ERR_INVALID_ARG,
                "plm_frames_%s: dst_bytes %zu: frame %lld is %lldx%lld %s, %zu bytes", function,
                dst_bytes, (long long)k, (long long)height, (long long)width,
                plm_dtype_name(f->info.dtype), needed);
  return PLM_OK;
}

plm_status plm_frames_read(plm_frames *f, int64_t k, void *dst, size_t dst_bytes) {
  if (!f || !dst)
    return fail(PLM_ERR_INVALID_ARG, "plm_frames_read: %s is NULL", !f ? "frames" : "dst");
  plm_status status = check_room(f, "read", k, dst_bytes);
  if (status != PLM_OK) return status;
  char err[FRAME_READER_ERROR_SIZE];
  status = frame_reader_read(f->reader, k, dst, err, sizeof err);
  if (status != PLM_OK) return failed(status, err);
  f->position = k + 1;
  return PLM_OK;
}

plm_status plm_frames_next(plm_frames *f, void *dst, size_t dst_bytes, bool *end) {
  if (end) *end = false;
  if (!f || !dst || !end)
    return fail(PLM_ERR_INVALID_ARG, "plm_frames_next: %s is NULL",
                !f     ? "frames"
                : !dst ? "dst"
                       : "end");
  const int64_t k = f->position;
  if (f->info.count >= 0 && k >= f->info.count) {
    *end = true;
    return PLM_OK;
  }
  plm_status status = check_room(f, "next", k, dst_bytes);
  if (status != PLM_OK) return status;
  char err[FRAME_READER_ERROR_SIZE];
  status = frame_reader_next(f->reader, k, dst, end, err, sizeof err);
  if (status != PLM_OK) return failed(status, err);
  if (*end)
    f->info.count = k; /* a stream's end: its count is known now */
  else
    f->position = k + 1;
  return PLM_OK;
}

int64_t plm_frames_position(const plm_frames *f) {
  return f ? f->position : 0;
}

const char *plm_frames_file(const plm_frames *f, int64_t k) {
  if (!f || k < 0 || (f->info.count >= 0 && k >= f->info.count)) return NULL;
  const char *file = frame_reader_file(f->reader, k);
  return file && strcmp(file, "-") == 0 ? "stdin" : file;
}

void plm_frames_close(plm_frames *f) {
  if (!f) return;
  frame_reader_close(f->reader);
  free(f);
}

const char *plm_frames_last_error(void) {
  return last_error;
}

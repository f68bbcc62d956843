/* support/png_io.c: PNG pictures written through libpng, in memory (support/png_io.h). */
#include "support/png_io.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/quote.h"

/* ---- libpng writing into a growing buffer ----------------------------------------------- */

typedef struct png_buffer {
  unsigned char *bytes;
  size_t length, room;
  bool failed; /* out of memory: the rest is dropped and the encoding fails */
} png_buffer;

static void append_png(png_structp png, png_bytep data, png_size_t n) {
  png_buffer *b = png_get_io_ptr(png);
  if (b->failed) return;
  if (b->length + n > b->room) {
    size_t room = b->room ? b->room : 4096;
    while (room < b->length + n) room *= 2;
    unsigned char *grown = realloc(b->bytes, room);
    if (!grown) {
      b->failed = true;
      return;
    }
    b->bytes = grown;
    b->room = room;
  }
  memcpy(b->bytes + b->length, data, n);
  b->length += n;
}

static void flush_png(png_structp png) {
  (void)png;
}

/* libpng reports an error by calling this, which longjmps back to encode_rows. */
static void png_fail(png_structp png, png_const_charp message) {
  (void)message;
  png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp message) {
  (void)png;
  (void)message;
}

/* One picture to encode: rows of row_bytes bytes from pixels. */
typedef struct png_picture {
  int64_t height, width;
  int depth, color; /* libpng's bit depth and colour type */
  const unsigned char *pixels;
  size_t row_bytes;
} png_picture;

/* The encoding itself, where libpng may longjmp back on an error. */
static bool encode_rows(png_structp png, png_infop info, const png_picture *pic) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, (png_uint_32)pic->width, (png_uint_32)pic->height, pic->depth, pic->color,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const uint16_t one = 1;
  if (pic->depth == 16 && *(const unsigned char *)&one == 1) png_set_swap(png);
  for (int64_t r = 0; r < pic->height; r++)
    png_write_row(png, (png_const_bytep)(pic->pixels + (size_t)r * pic->row_bytes));
  png_write_end(png, info);
  return true;
}

static plm_status encode(const png_picture *pic, void **bytes, size_t *length, const char *path,
                         char *err, size_t err_size) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, png_fail, png_warn);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info) {
    png_destroy_write_struct(png ? &png : NULL, NULL);
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  png_buffer buffer = {0};
  png_set_write_fn(png, &buffer, append_png, flush_png);
  const bool encoded = encode_rows(png, info, pic);
  png_destroy_write_struct(&png, &info);
  if (!encoded || buffer.failed) {
    free(buffer.bytes);
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: the PNG could not be encoded",
                         path);
  }
  *bytes = buffer.bytes;
  *length = buffer.length;
  return PLM_OK;
}

/* Whether a picture of height x width pixels of pixel_bytes each fits in a PNG. */
static bool size_fits(int64_t height, int64_t width, size_t pixel_bytes) {
  return height >= 1 && width >= 1 && height <= PNG_UINT_31_MAX &&
         width <= (int64_t)(PNG_UINT_31_MAX / pixel_bytes);
}

/* ---- the public functions ------------------------------------------------------------- */

bool png_holds(plm_dtype dtype, int ndim, char *why, size_t why_size) {
  if (dtype != PLM_DTYPE_U8 && dtype != PLM_DTYPE_U16) {
    snprintf(why, why_size, "a PNG holds u8 or u16, not %s (write .npy, .tif or .fits)",
             plm_dtype_name(dtype));
    return false;
  }
  if (ndim != 2) {
    snprintf(why, why_size,
             "a PNG holds one 2-D frame, not a %d-D array (write .npy, .tif or "
             ".fits)",
             ndim);
    return false;
  }
  return true;
}

plm_status png_encode(plm_dtype dtype, int ndim, const int64_t *dims, const void *data,
                      void **bytes, size_t *length, const char *path, char *err, size_t err_size) {
  *bytes = NULL;
  *length = 0;
  char why[160];
  if (!png_holds(dtype, ndim, why, sizeof why))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: %s", path, why);
  const size_t sample = plm_dtype_size(dtype);
  if (!size_fits(dims[0], dims[1], sample))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "%s: a %lldx%lld frame is beyond PNG's", path, (long long)dims[0],
                         (long long)dims[1]);
  const png_picture pic = {.height = dims[0],
                           .width = dims[1],
                           .depth = (int)(8 * sample),
                           .color = PNG_COLOR_TYPE_GRAY,
                           .pixels = data,
                           .row_bytes = (size_t)dims[1] * sample};
  return encode(&pic, bytes, length, path, err, err_size);
}

plm_status png_encode_rgb8(int64_t height, int64_t width, const unsigned char *rgb, void **bytes,
                           size_t *length, const char *path, char *err, size_t err_size) {
  *bytes = NULL;
  *length = 0;
  if (!size_fits(height, width, 3))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: a %lldx%lld picture", path,
                         (long long)height, (long long)width);
  const png_picture pic = {.height = height,
                           .width = width,
                           .depth = 8,
                           .color = PNG_COLOR_TYPE_RGB,
                           .pixels = rgb,
                           .row_bytes = 3 * (size_t)width};
  return encode(&pic, bytes, length, path, err, err_size);
}

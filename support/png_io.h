/* support/png_io.h: PNG pictures written through libpng, in memory (internal to the tools;
 * reading a PNG is support/image_io.c's).
 *
 * png_encode writes a 2-D (H, W) array of u8 or u16 as one grayscale PNG of 8 or 16 bits a
 * sample, every value kept (16-bit samples are stored big-endian, as PNG says, whatever the
 * host's order): `plume op --out x.png`. Other dtypes and shapes are refused with what
 * the array is and what would hold it, for a PNG holds no floats, no signed values and one
 * frame. png_encode_rgb8 writes an 8-bit RGB picture (the overlays and the score report).
 * The caller writes the bytes where it likes (an image_writer: atomically, or stdout).
 *
 * No compression level, filter or metadata is chosen: libpng's defaults, so the same array
 * always makes the same bytes with one libpng. libpng's errors longjmp back inside this
 * module and become the caller's one-line message; nothing is printed. Reentrant.
 */
#ifndef PLUME_SUPPORT_PNG_IO_H
#define PLUME_SUPPORT_PNG_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/status.h"
#include "plume/tensor.h"

/* Whether png_encode takes an array of dtype and ndim; when not, why (one phrase: "a PNG
 * holds u8 or u16, not f32 (write .npy, .tif or .fits)") in why. */
bool png_holds(plm_dtype dtype, int ndim, char *why, size_t why_size);

/* Encode a 2-D (H, W) array of u8 or u16 into *bytes (malloc'd, *length bytes; the caller
 * frees it); path names it in messages. Errors: PLM_ERR_INVALID_ARG (what png_holds
 * refuses, a dimension < 1 or above 2^31 - 1), PLM_ERR_OUT_OF_MEMORY. */
plm_status png_encode(plm_dtype dtype, int ndim, const int64_t *dims, const void *data,
                      void **bytes, size_t *length, const char *path, char *err, size_t err_size);

/* Encode height rows of width 8-bit RGB pixels (rgb: 3 * width * height bytes, row after
 * row) into *bytes as png_encode does. Errors: PLM_ERR_INVALID_ARG (an empty or huge
 * picture), PLM_ERR_OUT_OF_MEMORY. */
plm_status png_encode_rgb8(int64_t height, int64_t width, const unsigned char *rgb, void **bytes,
                           size_t *length, const char *path, char *err, size_t err_size);

#endif /* PLUME_SUPPORT_PNG_IO_H */

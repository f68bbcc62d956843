/* support/tiff_io.h: TIFF files through libtiff, page by page (internal to the tools; used
 * by support/image_io.c, which recognises a TIFF by its first bytes).
 *
 * Reading: each page (image file directory) of a TIFF is one frame. A page must be
 * grayscale (one sample per pixel, photometric min-is-black or none given) of 8- or
 * 16-bit unsigned samples (u8, u16) or 32-bit IEEE floats (f32), stored in strips or in
 * tiles, with any compression libtiff decodes (none, LZW, deflate, PackBits, ...;
 * predictors included); samples come in the host's byte order whatever the file's. The
 * pages of a file are counted at open; the first page gives the frames' dtype and shape,
 * and a later page of another dtype or shape fails when it is read, naming the page. A
 * page is decoded only when it is read, strip by strip or tile by tile into the
 * caller's buffer, so that a long stack is never held in memory. Colour, palette,
 * min-is-white, 1- to 4-bit, signed and 64-bit samples are refused (PLM_ERR_UNSUPPORTED)
 * with what the page holds.
 *
 * Writing: tiff_encode makes a TIFF of a 2-D image (one page) or a 3-D stack (N pages)
 * of u8, u16, i32 or f32 (i32 as signed 32-bit samples), uncompressed strips, in memory;
 * the caller writes its bytes where it likes (an image_writer: atomically, or stdout).
 *
 * libtiff's messages are caught per file and become the caller's one-line message
 * ("in.tif: page 3: ..."), never printed: the first use sets libtiff's process-wide
 * handlers to none (the command-line tool's process is its own), unless
 * tiff_io_as_guest was called first (libplume_io, inside another's process, leaves them
 * as that process has them: each file's own messages are caught all the same).
 * A tiff_pages is used by one thread at a time.
 */
#ifndef PLUME_SUPPORT_TIFF_IO_H
#define PLUME_SUPPORT_TIFF_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/status.h"
#include "plume/tensor.h"

/* Leave libtiff's process-wide handlers alone from now on (before the first open). */
void tiff_io_as_guest(void);

/* Whether the first bytes (at least 4) are a TIFF's or a BigTIFF's ("II*\0", "MM\0*",
 * "II+\0", "MM\0+"). */
bool tiff_magic(const unsigned char *bytes, size_t length);

typedef struct tiff_pages tiff_pages;

/* Open the TIFF on descriptor fd (taken: closed by tiff_pages_close, or here on failure),
 * named path in messages. *dtype, *height and *width are the first page's, *count the
 * pages. Errors: PLM_ERR_IO (not a TIFF libtiff can open, no pages, a page without a
 * size, more than IMAGE_MAX_ELEMENTS samples), PLM_ERR_UNSUPPORTED (the first page's
 * kind, above), PLM_ERR_OUT_OF_MEMORY; *out is NULL on failure. */
plm_status tiff_pages_open(int fd, const char *path, plm_dtype *dtype, int64_t *height,
                           int64_t *width, int64_t *count, tiff_pages **out, char *err,
                           size_t err_size);

/* Decode page k (0..count-1) into dst (height * width samples of dtype). Errors:
 * PLM_ERR_INVALID_ARG (k out of range), PLM_ERR_IO (a page of another dtype or shape
 * than the first's, a strip or tile libtiff cannot read: "in.tif: page 2: tile 5: ..."),
 * PLM_ERR_UNSUPPORTED (the page's kind), PLM_ERR_OUT_OF_MEMORY. */
plm_status tiff_pages_read(tiff_pages *p, int64_t k, void *dst, char *err, size_t err_size);

/* Close; NULL is a no-op. */
void tiff_pages_close(tiff_pages *p);

/* Encode a 2-D (H, W) or 3-D (N, H, W) array of dtype into *bytes (malloc'd, *length
 * bytes; the caller frees it). Errors: PLM_ERR_INVALID_ARG (another ndim or dtype, a
 * dimension < 1 or above 2^31 - 1), PLM_ERR_OUT_OF_MEMORY, PLM_ERR_IO (libtiff's). */
plm_status tiff_encode(plm_dtype dtype, int ndim, const int64_t *dims, const void *data,
                       void **bytes, size_t *length, const char *path, char *err, size_t err_size);

#endif /* PLUME_SUPPORT_TIFF_IO_H */

/* support/fits_io.h: FITS images and cubes through cfitsio, frame by frame (internal to the
 * tools; used by support/image_io.c, which recognises a FITS file by its first bytes).
 *
 * The image read is the first HDU that holds one: the primary HDU, or the first image
 * extension after an empty primary (NAXIS = 0). A tile-compressed image (fpack's, in a
 * binary table) is refused: Debian 12's cfitsio (4.2) crashes in its RICE decompressor on
 * damaged tiles (fuzz_fits found one within two minutes: tests/fuzz/corpus/fits/rice-crash),
 * and plume does not crash on bad input; `funpack -F` decompresses such a file first.
 * NAXIS = 2 is one frame (H, W) = (NAXIS2, NAXIS1); NAXIS = 3 is a cube
 * of NAXIS3 frames (N, H, W), as astropy and numpy see it; axes past the third must be 1 (a
 * radio cube's Stokes axis). A frame is read only when it is asked for, into the caller's
 * buffer, so a long cube is never held in memory.
 *
 * Values and dtypes follow the image's BITPIX with its BSCALE and BZERO applied (cfitsio's
 * "equivalent type"):
 *   u8   BITPIX 8, unscaled;
 *   u16  BITPIX 16 with BZERO 32768 and BSCALE 1 (how FITS stores unsigned 16-bit counts);
 *   f32  every other image of 8-, 16- or floating-point samples: signed 16-bit values (exact
 *        in f32), scaled integers as their physical values BSCALE x stored + BZERO (computed
 *        in double, rounded once to f32), and floats (BITPIX -64 narrowed to f32, as a
 *        '<f8' .npy is). A pixel equal to the image's BLANK reads as NaN (u8 and u16
 *        frames keep their stored values).
 * 32- and 64-bit integer images are refused (PLM_ERR_UNSUPPORTED), as are images of one
 * axis or of more than three with a longer fourth, tile-compressed images, and files without
 * an image HDU. Table headers on which cfitsio 4.2 would hang or swell (a data size that
 * overflows, more than 999 fields), and any header with a card whose value cfitsio 4.2
 * would parse past its own buffer (a quoted value after an '=' before column 10) or with no
 * END in 1024 blocks, are refused as damaged (PLM_ERR_IO) before it reads them.
 *
 * Writing: fits_encode makes a FITS file of an array of any dtype, in memory; the caller
 * writes its bytes where it likes (an image_writer: atomically, or stdout).
 *
 * cfitsio's messages are taken from its error stack for the caller's one-line message
 * ("in.fits: frame 3: ..."), never printed. File names are never parsed as cfitsio's
 * extended syntax ("in.fits[1]", "-"): the file is the descriptor given, opened again
 * through /proc/self/fd. A fits_frames is used by one thread at a time.
 */
#ifndef PLUME_SUPPORT_FITS_IO_H
#define PLUME_SUPPORT_FITS_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/status.h"
#include "plume/tensor.h"

/* Whether the first bytes (at least 8) begin a FITS file's primary header ("SIMPLE  ", the
 * keyword of its first card). */
bool fits_magic(const unsigned char *bytes, size_t length);

typedef struct fits_frames fits_frames;

/* Open the FITS file on descriptor fd (taken: closed by fits_frames_close, or here on
 * failure), named path in messages. *dtype, *height and *width are a frame's, *ndim the
 * image's (2 or 3) and *count its frames (1 for NAXIS = 2). Errors: PLM_ERR_IO (not a FITS file cfitsio can open, no
 * image HDU, an axis of length 0, more than IMAGE_MAX_ELEMENTS samples in a frame, a file
 * that ends before the image's data and its padding to a block of 2880 bytes),
 * PLM_ERR_UNSUPPORTED (the sample type or the axes, above), PLM_ERR_OUT_OF_MEMORY; *out is
 * NULL on failure. */
plm_status fits_frames_open(int fd, const char *path, plm_dtype *dtype, int *ndim, int64_t *height,
                            int64_t *width, int64_t *count, fits_frames **out, char *err,
                            size_t err_size);

/* Read frame k (0..count-1) into dst (height * width samples of dtype). Errors:
 * PLM_ERR_INVALID_ARG (k out of range), PLM_ERR_IO (data cfitsio cannot read, such as a file
 * cut short since it was opened: "in.fits: frame 2: ..."; after such a failure every read
 * of f fails, naming the frame that failed, for cfitsio's buffers are not to be trusted
 * then). */
plm_status fits_frames_read(fits_frames *f, int64_t k, void *dst, char *err, size_t err_size);

/* Close; NULL is a no-op. */
void fits_frames_close(fits_frames *f);

/* Encode an array of 1 to 4 dimensions as a FITS file of one primary image, in memory
 * (*bytes malloc'd, *length bytes, a multiple of 2880; the caller frees it). The axes are
 * numpy's reversed, as astropy writes them: (N, H, W) is NAXIS1 = W, NAXIS2 = H,
 * NAXIS3 = N. BITPIX by dtype: u8 8, u16 16 with BZERO 32768 (the standard's unsigned
 * 16-bit), i32 32, f32 -32, f64 -64; the values are stored exactly. The header holds only
 * the mandatory cards, BZERO and BSCALE for u16, and ORIGIN = 'plume': no date, so the
 * same array always gives the same bytes. path only names the file in messages. Errors:
 * PLM_ERR_INVALID_ARG (ndim outside 1..4, a dimension < 1), PLM_ERR_OUT_OF_MEMORY,
 * PLM_ERR_IO (cfitsio's account). */
plm_status fits_encode(plm_dtype dtype, int ndim, const int64_t *dims, const void *data,
                       void **bytes, size_t *length, const char *path, char *err, size_t err_size);

#endif /* PLUME_SUPPORT_FITS_IO_H */

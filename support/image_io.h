/* support/image_io.h: reading and writing image files for the `plume` command and the
 * tests (the fixtures' .npy files).
 *
 * Reads, recognising the format by the file's first bytes (not its name):
 *   NumPy .npy   format versions 1.0, 2.0 and 3.0; C order only; dtypes '<f4' and
 *                '<f8' (read as f32), '|u1' (u8), '<u2' (u16), '<i4' (i32); 2-D
 *                (H, W) or 3-D (N, H, W, a stack of N frames).
 *   PGM (P5)     binary graymap: maxval <= 255 gives u8, <= 65535 gives u16 (the
 *                file's big-endian samples in host order). One image per file.
 *   PNG          grayscale, 8 or 16 bits (1, 2 and 4 bits are read as u8 with their
 *                raw values), through libpng. Colour, palette and alpha PNGs are
 *                refused.
 *   TIFF         grayscale pages of u8, u16 or f32, striped or tiled, any compression
 *                libtiff decodes, through libtiff (support/tiff_io.h): one page is (H, W),
 *                N pages of one dtype and shape are a stack (N, H, W).
 *   FITS         the first image HDU, (H, W) or a cube (N, H, W), BITPIX 8 (u8), 16 with
 *                BZERO 32768 (u16), other 8-/16-bit and float images as f32 with BSCALE and
 *                BZERO applied, through cfitsio (support/fits_io.h); tile-compressed images
 *                are refused.
 *   HDF5         a dataset (H, W) or (N, H, W) of an HDF5 or NetCDF-4 file, named after the
 *                file as "in.h5:/path/to/dataset" (or the file's only dataset of 2 or 3
 *                dimensions when none is named), chunked and compressed or not, through
 *                libhdf5 (support/hdf5_io.h): u8 and u16 as stored, other integers of 8 and
 *                16 bits and floats as f32; a dataset with CF attributes (scale_factor,
 *                add_offset, _FillValue, missing_value) as f32 physical values with its fill
 *                values NaN, unless IMAGE_READ_STORED_VALUES asks for the stored ones. A
 *                NetCDF classic file (not HDF5) is refused with a hint.
 * "FILE:DATASET" is read so only when the whole does not name a file and FILE, the text
 * before one of its colons (the first that works), names a regular file
 * (image_dataset_split); the file must then be HDF5.
 *   video        Matroska, AVI, QuickTime/MP4 or NUT: the first video stream's frames as gray
 *                (u8, or u16 for 9- to 16-bit gray; colour as its luma), (H, W) for one frame,
 *                else (N, H, W), through FFmpeg's libraries (support/video_io.h); image_read
 *                decodes every frame (twice when the container does not count them: once to
 *                count); image_frames refuses a video (support/frame_reader.h streams one).
 * Writes .npy (version 1.0) of dtype u8, u16, i32 or f32 and 1 to 4 dimensions.
 *
 * A file is checked before any data memory is allocated: a header that promises
 * more data than the file holds, more than IMAGE_MAX_ELEMENTS elements, or a size
 * whose product overflows is refused, as are truncated data and bytes after the
 * data. Every failure returns a status and leaves a one-line message naming the
 * file and the problem in the caller's buffer ("in.npy: truncated: ...").
 *
 * Every writer is an output_file (support/output_file.h): PATH.tmp-XXXXXX in the same
 * directory, fsync'd and renamed over PATH at the end, so PATH is never left partly
 * written; the temporary file is removed when anything fails, and several writers
 * commit together, all or none (image_writers_commit). A file too large to hold in memory (a long
 * stack of frames) is streamed through an image_writer: open it with the .npy's whole shape, append
 * the data in pieces (frame by frame), then commit (or abort).
 *
 * This module belongs to the command-line tool, not to libplume; it uses plume's
 * dtype and status enums only. Reentrant.
 */
#ifndef PLUME_SUPPORT_IMAGE_IO_H
#define PLUME_SUPPORT_IMAGE_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/status.h"
#include "plume/tensor.h"

/* The largest number of elements a file may hold (2^31). */
#define IMAGE_MAX_ELEMENTS ((int64_t)1 << 31)

/* Room for any message of this module. */
enum { IMAGE_ERROR_SIZE = 1024 };

typedef struct image {
  plm_dtype dtype;
  int ndim; /* 2 (H, W) or 3 (N, H, W) when read; 1..4 for writing */
  int64_t dims[PLM_TENSOR_MAX_DIMS];
  void *data; /* row-major contiguous */
} image;

/* Where image_read puts the pixels: alloc(user, bytes) returns memory or NULL,
 * free(user, ptr) gives it back. A NULL allocator means malloc and free. */
typedef struct image_allocator {
  void *(*alloc)(void *user, size_t bytes);
  void (*free)(void *user, void *ptr);
  void *user;
} image_allocator;

/* Read the image at path into *out (its data from allocator). Errors, with a message
 * in err (err_size bytes, IMAGE_ERROR_SIZE is enough): PLM_ERR_INVALID_ARG (NULL
 * path or out), PLM_ERR_IO (cannot open or read, not a regular file, not a known
 * format, a malformed header, truncated or trailing data, an absurd size),
 * PLM_ERR_UNSUPPORTED (a well-formed file this reader does not take: dtype, Fortran
 * order, number of dimensions, format version, colour), PLM_ERR_OUT_OF_MEMORY. On
 * failure out->data is NULL and nothing is left allocated. */
plm_status image_read(const char *path, const image_allocator *allocator, image *out, char *err,
                      size_t err_size);

/* How image_read_as and image_frames_open_as read: flags, or'ed. */
enum {
  IMAGE_READ_KEEP_F64 = 1u,      /* as image_read_keep_f64 */
  IMAGE_READ_ANY_RANK = 2u,      /* as image_read_array */
  IMAGE_READ_STORED_VALUES = 4u, /* an HDF5 dataset's values as stored: its CF attributes
                                    (scale_factor, add_offset, fill values) not applied */
};

/* As image_read, reading as flags say (image_frames_open_as looks at
 * IMAGE_READ_STORED_VALUES only). */
plm_status image_read_as(const char *path, unsigned flags, const image_allocator *allocator,
                         image *out, char *err, size_t err_size);

/* The value of plume's --h5-values: "physical" (0, the default) or "stored"
 * (IMAGE_READ_STORED_VALUES) into *flags; false for anything else. */
bool image_values_parse(const char *text, unsigned *flags);

/* For "FILE:DATASET" (above), the length of FILE; 0 when path names a file (or folder)
 * itself, or no text before one of its colons names a regular file. */
size_t image_dataset_split(const char *path);

/* As image_read, except that a '<f8' .npy is read as f64 (PLM_DTYPE_F64) with its values
 * unchanged instead of being narrowed to f32: for files whose precision matters, such as
 * the region tables of tests/fixtures. Every other file reads as with image_read. */
plm_status image_read_keep_f64(const char *path, const image_allocator *allocator, image *out,
                               char *err, size_t err_size);

/* As image_read, except that a .npy may have any number of dimensions from 1 to
 * PLM_TENSOR_MAX_DIMS: for arrays that are not images (a bias vector, a 3-D weight
 * tensor), as `plume op matmul` and the other ops on arrays read them. */
plm_status image_read_array(const char *path, const image_allocator *allocator, image *out,
                            char *err, size_t err_size);

/* ---- reading frame by frame ----------------------------------------------------------
 * An image_frames reads the frames of one image file as they are needed, so that a long
 * stack is never held in memory:
 *   - a 3-D .npy (N, H, W) is N frames, each read from the file when it is asked for
 *     (the header and the file's size are checked at open, as image_read checks them);
 *   - a TIFF of N pages is N frames, each page decoded when it is asked for (a page of
 *     another dtype or shape than the first fails then, naming the page); a FITS cube or an
 *     HDF5 dataset of N frames likewise, each frame read when it is asked for (an HDF5
 *     frame as a hyperslab, a band of rows at a time);
 *   - a 2-D .npy, a PGM, a PNG, a 2-D FITS image or a 2-D HDF5 dataset is one frame (a PGM
 *     or PNG is read whole at open).
 * Frames have the dtype image_read would give ('<f8' is read as f32). One thread at a
 * time per image_frames; frames may be read in any order. */
typedef struct image_frames image_frames;

/* Open path; frame gets the dtype and the shape of one frame (ndim 2, dims H, W; its
 * data is NULL) and count the number of frames. Errors as image_read's; *out is NULL on
 * failure. */
plm_status image_frames_open(const char *path, image *frame, int64_t *count, image_frames **out,
                             char *err, size_t err_size);

/* As image_frames_open, reading as flags say (IMAGE_READ_STORED_VALUES; others ignored). */
plm_status image_frames_open_as(const char *path, unsigned flags, image *frame, int64_t *count,
                                image_frames **out, char *err, size_t err_size);

/* Read frame k (0..count-1) into dst (image_bytes of the frame). Errors:
 * PLM_ERR_INVALID_ARG (NULL arguments, k out of range), PLM_ERR_IO (the file changed
 * since open: "path: frame 12: truncated: ..."), PLM_ERR_OUT_OF_MEMORY. */
plm_status image_frames_read(image_frames *f, int64_t k, void *dst, char *err, size_t err_size);

/* Close; NULL is a no-op. */
void image_frames_close(image_frames *f);

/* Give back the data of an image from image_read (with the same allocator) and
 * clear its data pointer. NULL or an image without data is a no-op. */
void image_free(image *img, const image_allocator *allocator);

/* Elements and bytes of an image's shape (0 for an invalid shape or dtype). */
int64_t image_numel(const image *img);
size_t image_bytes(const image *img);

/* Write img to path as .npy, atomically (see above). Errors: PLM_ERR_INVALID_ARG
 * (NULL arguments, an unknown dtype, ndim outside 1..4, a dimension < 1),
 * PLM_ERR_IO (the temporary file could not be created, written or renamed). */
plm_status image_write_npy(const char *path, const image *img, char *err, size_t err_size);

/* Write bytes of text (e.g. a CSV) to path, atomically like image_write_npy. Errors:
 * PLM_ERR_INVALID_ARG (NULL path, or NULL text with bytes > 0), PLM_ERR_IO. */
plm_status image_write_text(const char *path, const char *text, size_t bytes, char *err,
                            size_t err_size);

/* ---- streaming writers ----------------------------------------------------------------
 * An image_writer is a temporary file beside PATH that becomes PATH on commit:
 *
 *   image_writer *w;
 *   image_writer_open_npy(path, &(image){.dtype = PLM_DTYPE_U16, .ndim = 3,
 *                                        .dims = {n, h, w}}, &w, err, sizeof err);
 *   for each frame: image_writer_write(w, frame, h * w * 2, err, sizeof err);
 *   image_writer_commit(w, err, sizeof err);   (or image_writer_abort(w) to give up)
 *
 * After a successful open the caller ends the writer with exactly one call to
 * image_writer_commit or image_writer_abort, whatever happened in between; both free
 * it. A writer is used by one thread at a time. */
typedef struct image_writer image_writer;

/* Start a .npy of shape's dtype and dims (shape->data is not used) and write its
 * header; the data, image_bytes(shape) bytes in C order, follows through
 * image_writer_write. Errors as image_write_npy's; *out is NULL on failure. */
plm_status image_writer_open_npy(const char *path, const image *shape, image_writer **out,
                                 char *err, size_t err_size);

/* Start a file of any bytes (text). Errors: PLM_ERR_INVALID_ARG, PLM_ERR_IO. */
plm_status image_writer_open_text(const char *path, image_writer **out, char *err, size_t err_size);

/* Append bytes. For a .npy, more data than the header promises is refused
 * (PLM_ERR_INVALID_ARG) and nothing is written; a write error is PLM_ERR_IO. After a
 * failure the writer is still to be committed or aborted (a commit then fails only if
 * the data is incomplete). */
plm_status image_writer_write(image_writer *w, const void *data, size_t bytes, char *err,
                              size_t err_size);

/* Finish: check that a .npy's data is complete, then commit the temporary file over
 * PATH as output_files_commit does (support/output_file.h: flushed, fsync'd, renamed).
 * Fails (and removes the temporary file, leaving PATH as it was) when the data is
 * incomplete (PLM_ERR_INVALID_ARG) or the flush, fsync, close or rename fails
 * (PLM_ERR_IO). Frees w in every case. */
plm_status image_writer_commit(image_writer *w, char *err, size_t err_size);

/* Commit writers[0..count) (at most 16) together, all or none (support/output_file.h): a
 * command's several outputs are replaced together, or each path keeps its old file.
 * Errors as image_writer_commit's, and PLM_ERR_INVALID_ARG for a NULL entry or more
 * than 16. Frees every writer in every case. */
plm_status image_writers_commit(image_writer **writers, int count, char *err, size_t err_size);

/* Give up: close and remove the temporary file, free w. NULL is a no-op. */
void image_writer_abort(image_writer *w);

#endif /* PLUME_SUPPORT_IMAGE_IO_H */

/* support/frame_reader.h: the frames of `plume detect`, one at a time, from a stack or a folder.
 *
 * A frame reader serves frames 0..N-1 of one dtype and one (H, W) shape from
 *   - a file (support/image_io.h's image_frames): a 3-D .npy (N, H, W), a TIFF of N pages, a
 *     FITS cube of N frames or an HDF5 dataset (N, H, W) ("in.h5:/path/to/dataset") is N
 *     frames, read from the file one at a time, never held whole; a 2-D .npy, a PGM, a PNG,
 *     a 2-D FITS image or a 2-D HDF5 dataset is one frame;
 *   - a folder: every entry whose name ends in .npy, .pgm, .png, .tif, .tiff, .fits, .fit,
 *     .fts, .h5, .hdf5, .he5 or .nc (in any case) and does not start with '.', other than a
 *     directory, is one frame (an HDF5 file's only dataset of 2 or 3 dimensions); frames
 *     are in the byte order of the names (strcmp: zero-pad numbers, frame_0009 before frame_0010).
 * Other entries are ignored. Each file is opened and read only when its frame is read; it must hold
 * one frame (a 2-D image, or a 3-D .npy of one frame) of the dtype and shape of the first file
 * (of its dtype alone after frame_reader_allow_shapes), else reading that frame fails naming the
 * file. A folder without any such file is refused at open;
 *   - a video file (support/video_io.h: Matroska, AVI, QuickTime/MP4 or NUT, recognised by its
 *     first bytes): its first video stream's frames, decoded one at a time as gray (u8, or
 *     u16 for 9- to 16-bit gray); the count is the container's where it says it (AVI,
 *     QuickTime), else -1 until the frames end (frame_reader_next tells it, as for a stream)
 *     or until frame_reader_count_frames counts them.
 *     Frames are decoded in order: reading one before the last read decodes again from the
 *     file's beginning, so in order is the cheap way. "-" (standard input) given to
 *     frame_reader_open is a video streamed in (a sensor's or ffmpeg's pipe, in a container
 *     that streams: Matroska, NUT, AVI): its count is -1 and its frames are read once, in
 *     order;
 *   - raw frames (support/raw_frames.h, frame_reader_open_raw): a headerless file, or a
 *     stream ("-", standard input, or a FIFO) whose count is unknown (-1) until it ends:
 *     a stream's frames are read once, in order (frame_reader_next tells its end).
 * Every failure returns a status and leaves a one-line message naming the file in the
 * caller's buffer (FRAME_READER_ERROR_SIZE bytes are enough).
 *
 * A reader is used by one thread at a time; frames may be read in any order, except a
 * stream's. The module belongs to the command-line tool and to libplume_io (io/), not to
 * libplume.
 */
#ifndef PLUME_SUPPORT_FRAME_READER_H
#define PLUME_SUPPORT_FRAME_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "support/image_io.h"
#include "support/raw_frames.h"
#include "plume/status.h"
#include "plume/tensor.h"

/* Room for any message of this module. */
enum { FRAME_READER_ERROR_SIZE = IMAGE_ERROR_SIZE + 512 };

typedef struct frame_reader frame_reader;

typedef struct frame_reader_info {
  plm_dtype dtype;       /* of every frame */
  int64_t height, width; /* of every frame */
  int64_t count;         /* N >= 1, or -1 for a stream or a video that does not say: known when
                            it ends */
  bool folder;           /* a folder of files, one frame each */
} frame_reader_info;

/* Open path (a file or a folder, above) and describe its frames in *info. Errors:
 * PLM_ERR_INVALID_ARG (NULL arguments), PLM_ERR_IO (cannot open or read, a bad file, a
 * folder without frames, a file in a folder that holds more than one frame),
 * PLM_ERR_UNSUPPORTED (a file image_read does not take, a video codec not decoded),
 * PLM_ERR_OUT_OF_MEMORY. *out is
 * NULL on failure. */
plm_status frame_reader_open(const char *path, frame_reader_info *info, frame_reader **out,
                             char *err, size_t err_size);

/* As frame_reader_open, each file read as image_frames_open_as reads it with flags
 * (IMAGE_READ_STORED_VALUES: an HDF5 dataset's stored values). */
plm_status frame_reader_open_as(const char *path, unsigned flags, frame_reader_info *info,
                                frame_reader **out, char *err, size_t err_size);

/* Open path ("-": standard input) as raw frames of *raw (support/raw_frames.h); *info says
 * raw's dtype and shape, and the count of a file's frames or -1 for a stream. Errors as
 * raw_frames_open's. */
plm_status frame_reader_open_raw(const char *path, const raw_format *raw, frame_reader_info *info,
                                 frame_reader **out, char *err, size_t err_size);

/* Read frame k (0..count-1) into dst (height * width elements of dtype). Errors:
 * PLM_ERR_INVALID_ARG (NULL arguments, k out of range), PLM_ERR_IO (a bad or changed
 * file; in a folder, a file whose dtype, shape or frame count differs from the first's),
 * PLM_ERR_UNSUPPORTED, PLM_ERR_OUT_OF_MEMORY. A stream's frames are read in order, and its
 * end (or a video's of unknown count) before frame k is PLM_ERR_IO (frame_reader_next tells
 * it apart). */
plm_status frame_reader_read(frame_reader *r, int64_t k, void *dst, char *err, size_t err_size);

/* As frame_reader_read, for any reader, a stream's included: frame k into dst, or *end set
 * (dst left as it was) when the frames end before k: k >= count for a reader that knows
 * its count, the end of the input for a stream (read in order: k is the frame after the
 * last one read). */
plm_status frame_reader_next(frame_reader *r, int64_t k, void *dst, bool *end, char *err,
                             size_t err_size);

/* Make the count known where reading the file to its end finds it: a video file whose
 * container does not declare it (Matroska, NUT) is read through now
 * (video_frames_count_all: its packets counted, or its frames decoded), and its count set
 * in the reader and in *count. For every other reader a no-op that sets *count to the count
 * it knows: -1 for a stream (standard input, a FIFO: read once, never read ahead), whose
 * count stays unknown. Frames read after it are what they were. Errors: PLM_ERR_INVALID_ARG
 * (NULL arguments), and a read's (PLM_ERR_IO, naming the file and the frame). */
plm_status frame_reader_count_frames(frame_reader *r, int64_t *count, char *err, size_t err_size);

/* The file that holds frame k (the path itself for a file); NULL when k is out of range.
 * Valid until the reader is closed. */
const char *frame_reader_file(const frame_reader *r, int64_t k);

/* Let a folder's frames differ in shape (of one dtype still: the first file's): each is
 * read at its own shape, which frame_reader_shape tells before the read. A no-op for any
 * other reader, whose frames have one shape. */
void frame_reader_allow_shapes(frame_reader *r);

/* Frame k's height and width: info's, or with frame_reader_allow_shapes a folder's file's
 * own (its file is opened and checked then, and kept open for the read of frame k).
 * Errors: PLM_ERR_INVALID_ARG (NULL arguments, k out of range), and a folder file's as
 * frame_reader_read's. */
plm_status frame_reader_shape(frame_reader *r, int64_t k, int64_t *height, int64_t *width,
                              char *err, size_t err_size);

/* Close; NULL is a no-op. */
void frame_reader_close(frame_reader *r);

/* For a library inside another's process (libplume_io), before the first open: leave the
 * process-wide settings of libtiff (its handlers) and FFmpeg (its log level) as the process
 * has them (support/tiff_io.h, support/video_io.h). The plume command, whose process is its
 * own, does not call it. */
void frame_reader_as_guest(void);

#endif /* PLUME_SUPPORT_FRAME_READER_H */

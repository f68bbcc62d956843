/* plume/io.h: frames from the files sensors and other libraries write (libplume_io).
 *
 * The plume command's frame readers (support/frame_reader.h) as a second library beside
 * libplume, so that libplume itself needs none of libtiff, cfitsio, libhdf5 or FFmpeg:
 * link -lplume_io (CMake: plume::plume_io, pkg-config: plume-io) to read frames as
 * `plume detect` does; the Python module's plume.open_frames is built on it. It reads
 *   - .npy (2-D: one frame; 3-D (N, H, W): N frames), PGM and PNG (one frame each);
 *   - TIFF through libtiff: u8, u16 or f32 pages, striped or tiled, a stack of N pages;
 *   - FITS through cfitsio: a 2-D image or an (N, H, W) cube, BZERO/BSCALE applied, BLANK
 *     as NaN;
 *   - HDF5 and NetCDF-4 through libhdf5: "file.h5:/path/to/dataset" (N, H, W) or (H, W),
 *     or a file's only dataset of 2 or 3 dimensions; CF's scale_factor, add_offset,
 *     _FillValue and missing_value applied (physical values, f32, NaN where missing),
 *     or the stored values kept with PLM_FRAMES_STORED_VALUES;
 *   - video through FFmpeg (Matroska, AVI, QuickTime/MP4, NUT): gray u8, or u16 for 9- to
 *     16-bit gray (FFV1 keeps every bit); "-" is a video streamed on standard input;
 *   - a folder: each .npy, .pgm, .png, .tif(f), .fits/.fit/.fts, .h5/.hdf5/.he5 or .nc
 *     file one frame, in the byte order of the names;
 *   - raw frames (plm_frames_open_raw): headerless samples of a format the caller gives,
 *     from a file or from a stream ("-": standard input, or a FIFO).
 * Frames are read one at a time from the file, never the whole file at once: a stack of
 * any length costs one frame of memory.
 *
 *   plm_frames *f;
 *   plm_frames_info info;
 *   if (plm_frames_open("scan.h5:/radiance", 0, &f) != PLM_OK) die(plm_frames_last_error());
 *   plm_frames_info_get(f, &info);
 *   float *frame = malloc(plm_frames_frame_bytes(&info));
 *   bool end = false;
 *   while (plm_frames_next(f, frame, plm_frames_frame_bytes(&info), &end) == PLM_OK && !end)
 *     use(frame, info.height, info.width);
 *   plm_frames_close(f);
 *
 * Every frame has the dtype and (H, W) of info, except a folder opened with
 * PLM_FRAMES_MIXED_SHAPES, whose files may differ in shape (plm_frames_shape tells each).
 * The count is N, or -1 for a stream (raw or video on standard input, a FIFO) and a
 * video whose container does not say it: plm_frames_next tells where those end.
 *
 * Errors: every function that can fail returns a plm_status and, failing, leaves a one-line
 * message for the calling thread, read with plm_frames_last_error() (not plm_last_error(),
 * which is libplume's), naming the file, the frame where there is one and what was wrong:
 * "rgb.tif: page 0: 3 samples per pixel (colour or alpha): only grayscale pages are read",
 * "stdin: frame 7 is short: 100 of 512 bytes, 412 missing (is the raw format's shape, dtype
 * or header right?)". After a failed read the plm_frames is still usable (another frame of
 * a file may be read) or closable.
 *
 * Threads: a plm_frames is used by one thread at a time; different ones by different
 * threads where the format's library allows it (Debian's libhdf5 and cfitsio are built
 * thread-safe). Every call blocks until its bytes are read (a stream's read waits for its
 * writer). libplume_io leaves the process's libtiff handlers and FFmpeg log level as they
 * are; it does set FFmpeg's log callback (process-wide, and FFmpeg cannot chain it) to one
 * that keeps its own decoders' errors and passes every other message to FFmpeg's default.
 */
#ifndef PLUME_IO_H
#define PLUME_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/export.h"
#include "plume/status.h"
#include "plume/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct plm_frames plm_frames;

/* plm_frames_open's flags. */
enum {
  /* An HDF5 or NetCDF-4 dataset's stored values, without its CF attributes applied: u8
   * and u16 as stored, other types as f32 (a folder's HDF5 files alike). */
  PLM_FRAMES_STORED_VALUES = 1u << 0,
  /* A folder's files may differ in shape (of one dtype still, the first file's): each
   * frame is read at its own shape, which plm_frames_shape tells. No effect on a file. */
  PLM_FRAMES_MIXED_SHAPES = 1u << 1
};

/* What the frames are. */
typedef struct plm_frames_info {
  plm_dtype dtype;       /* of every frame: PLM_DTYPE_U8, U16 or F32 */
  int64_t height, width; /* of every frame (a folder of mixed shapes: of its first) */
  int64_t count;         /* N >= 1, or -1 until a stream ends (plm_frames_next then
                            sets it to the frames read) */
  bool folder;           /* a folder of files, one frame each */
} plm_frames_info;

/* Raw frames' format: nothing in the input says it. The input is header_bytes skipped,
 * then frames of height x width samples, row-major, back to back. */
typedef struct plm_raw_format {
  plm_dtype dtype;       /* PLM_DTYPE_U8, U16 or F32 */
  int64_t height, width; /* >= 1 each */
  bool big_endian;       /* the samples' byte order in the input (u8: none) */
  int64_t header_bytes;  /* >= 0 */
} plm_raw_format;

/* Open path (a file, "file.h5:/dataset", a folder, or "-" for a video on standard input)
 * with flags (PLM_FRAMES_*), and describe it. Errors: PLM_ERR_INVALID_ARG (NULL path or
 * out, unknown flags), PLM_ERR_IO (a missing, unreadable or damaged file, a dataset that
 * is not there, a folder without frames), PLM_ERR_UNSUPPORTED (a format or sample type
 * plume does not read: a colour TIFF page, a video codec FFmpeg does not decode),
 * PLM_ERR_OUT_OF_MEMORY. *out is NULL on failure. Blocks while the file is opened (the
 * first frame of a video is decoded to learn its shape). */
PLM_API plm_status plm_frames_open(const char *path, unsigned flags, plm_frames **out);

/* Open path ("-": standard input, or a FIFO: a stream; else a regular file whose size must
 * be the header plus a whole number of frames) as raw frames of *format. Errors:
 * PLM_ERR_INVALID_ARG (NULL arguments, a format outside its bounds), PLM_ERR_IO (as
 * plm_frames_open's, and a file whose last frame is short), PLM_ERR_OUT_OF_MEMORY. */
PLM_API plm_status plm_frames_open_raw(const char *path, const plm_raw_format *format,
                                       plm_frames **out);

/* The frames' description. Frames of a known count (>= 0) may be read in any order;
 * those of count -1 in order, with plm_frames_next, until it says they ended. */
PLM_API plm_status plm_frames_info_get(const plm_frames *f, plm_frames_info *info);

/* Bytes of one frame of info (height x width x the dtype's size); 0 for NULL. */
PLM_API size_t plm_frames_frame_bytes(const plm_frames_info *info);

/* Frame k's height and width: info's, or a file's own in a folder opened with
 * PLM_FRAMES_MIXED_SHAPES (its file is opened and checked then). Errors as
 * plm_frames_read's. */
PLM_API plm_status plm_frames_shape(plm_frames *f, int64_t k, int64_t *height, int64_t *width);

/* Read frame k into dst (dst_bytes >= its bytes, in the host's byte order). Frames of a
 * file or a folder may be read in any order (a video's before the last one read are
 * decoded again from its start); a stream's only in order, k being the next one. Errors:
 * PLM_ERR_INVALID_ARG (NULL f or dst, dst_bytes too small, k outside 0..count-1, a
 * stream's k out of order), PLM_ERR_IO (a damaged or changed file, a folder's file of
 * another dtype or shape, a stream ended before frame k), PLM_ERR_UNSUPPORTED,
 * PLM_ERR_OUT_OF_MEMORY. */
PLM_API plm_status plm_frames_read(plm_frames *f, int64_t k, void *dst, size_t dst_bytes);

/* Read the frame after the last one read (frame 0 first) into dst, or set *end (dst left
 * as it was) when the frames have ended: the way to read a stream, and any frames in
 * order. Errors as plm_frames_read's; an input that ends inside a frame is PLM_ERR_IO. */
PLM_API plm_status plm_frames_next(plm_frames *f, void *dst, size_t dst_bytes, bool *end);

/* The index of the frame plm_frames_next reads next (frames read so far, in order). */
PLM_API int64_t plm_frames_position(const plm_frames *f);

/* The file that holds frame k (the path itself for a file, "stdin" for "-"); NULL when
 * f is NULL or k out of range. Valid until f is closed. */
PLM_API const char *plm_frames_file(const plm_frames *f, int64_t k);

/* Close; NULL is a no-op (standard input is left open). */
PLM_API void plm_frames_close(plm_frames *f);

/* The message of this thread's most recent failed plm_frames call, or "" when none has
 * failed. Valid until the thread's next failing plm_frames call. */
PLM_API const char *plm_frames_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_IO_H */

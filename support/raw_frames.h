/* support/raw_frames.h: headerless frames, as a sensor's pipe or a capture file gives them.
 *
 * A raw input is an optional header of header_bytes (skipped, never read as data), then
 * frames of height * width samples of one dtype, row-major, back to back, with nothing
 * between them and nothing after the last:
 *
 *   [header][frame 0][frame 1]...[frame N-1]        each frame H*W*size(dtype) bytes
 *
 * The samples are u8, u16 or f32, little- or big-endian (bytes swapped into the host's
 * order as they are read; u8 has no order). The format is not in the file: the caller
 * gives it (plume detect's --raw-shape HxW, --raw-dtype, --raw-endian, --raw-header, which
 * raw_format_parse reads).
 *
 * Where the frames come from:
 *   - a regular file: its size says how many frames it holds, checked at open: a size
 *     that is not the header plus a whole number of frames is refused there, naming the
 *     short last frame and the bytes it misses; frames are read with pread, in any order;
 *   - "-" (standard input), a FIFO (whose open waits for a writer) or a character device:
 *     a stream, read once, in order:
 *     the count is unknown (-1) until the input ends. A frame is read whole into the
 *     caller's buffer when it is asked for, so the input is never held in memory; an end
 *     of input at a frame's boundary is the end of the frames, an end inside a frame is
 *     an error naming the frame and the bytes it misses.
 * An input without any frame after its header is refused (at open for a file, at frame 0
 * for a stream). Every failure returns a status and leaves a one-line message naming the
 * input ("stdin" for "-"), the frame where there is one, and what was wrong, in the
 * caller's buffer (IMAGE_ERROR_SIZE bytes are enough).
 *
 * One thread at a time per raw_frames. The module belongs to the command-line tool.
 */
#ifndef PLUME_SUPPORT_RAW_FRAMES_H
#define PLUME_SUPPORT_RAW_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/status.h"
#include "plume/tensor.h"

typedef struct raw_format {
  plm_dtype dtype;       /* PLM_DTYPE_U8, U16 or F32 */
  int64_t height, width; /* of every frame, >= 1, height * width <= IMAGE_MAX_ELEMENTS */
  bool big_endian;       /* the samples' byte order in the input */
  int64_t header_bytes;  /* skipped before frame 0, >= 0 */
} raw_format;

/* The format from the options' texts: shape "HxW" (rows, then columns: "512x640" is 512
 * rows of 640 samples, as numpy's (H, W) and plume's "128x128" summaries read), dtype
 * "u8", "u16" or "f32" (NULL: u8), endian "little" or "big" (NULL: little), header a
 * count of bytes (NULL: 0). shape is required. PLM_ERR_INVALID_ARG with a message naming
 * the option (--raw-shape, --raw-dtype, --raw-endian, --raw-header) and the value. */
plm_status raw_format_parse(const char *shape, const char *dtype, const char *endian,
                            const char *header, raw_format *out, char *err, size_t err_size);

/* Bytes of one frame of format (0 for a format outside the bounds above). */
size_t raw_format_frame_bytes(const raw_format *format);

typedef struct raw_frames raw_frames;

/* Open path ("-": standard input) for frames of *format. *count is the number of frames
 * of a regular file, -1 for a stream. Errors: PLM_ERR_INVALID_ARG (NULL arguments, a
 * format outside its bounds), PLM_ERR_IO (cannot open, a folder or a socket, a file
 * shorter than its header, without frames, or whose last frame is short),
 * PLM_ERR_OUT_OF_MEMORY. *out is NULL on failure. */
plm_status raw_frames_open(const char *path, const raw_format *format, int64_t *count,
                           raw_frames **out, char *err, size_t err_size);

/* Read frame k into dst (raw_format_frame_bytes bytes, in the host's byte order), or set
 * *end (and leave dst as it was) when a stream ended cleanly before frame k. A file's
 * frames may be read in any order (k in 0..count-1); a stream's only in order, k being
 * the frame after the last one read. Errors: PLM_ERR_INVALID_ARG (NULL arguments, k out
 * of range or out of order), PLM_ERR_IO ("stdin: frame 7 is short: 100 of 512 bytes, 412
 * missing", a read error, a file that changed since open, a stream without frames). */
plm_status raw_frames_read(raw_frames *f, int64_t k, void *dst, bool *end, char *err,
                           size_t err_size);

/* The input's name in messages: the path, or "stdin" for "-". */
const char *raw_frames_name(const raw_frames *f);

/* Close (standard input is left open); NULL is a no-op. */
void raw_frames_close(raw_frames *f);

#endif /* PLUME_SUPPORT_RAW_FRAMES_H */

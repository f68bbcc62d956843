/* support/video_io.h: the frames of a video file through FFmpeg's libraries (libavformat,
 * libavcodec, libswscale), decoded one at a time as gray (internal to the tools; used by
 * support/frame_reader.c for plume detect and by support/image_io.c for plume op).
 *
 * What is read: the first video stream (an attached picture, a cover, is not one) of a
 * Matroska/WebM (.mkv, .webm), AVI, QuickTime/MP4 (.mov, .mp4) or NUT file, recognised by its
 * first bytes (video_magic), never by its name and never by FFmpeg's probing of every format
 * it knows. Only those four demuxers may open it (libavformat's format whitelist) and only
 * these decoders decode it (its codec whitelist): rawvideo, ffv1, png, huffyuv, ffvhuff,
 * utvideo, magicyuv, mjpeg, mpeg4, h264, hevc, vp8, vp9; anything else is refused, naming the
 * codec. A demuxer never opens another file (a QuickTime reference, a playlist): the file's
 * bytes come through a custom AVIOContext over the descriptor or the memory given.
 *
 * Frames and dtypes, by the pixel format of the decoded frames:
 *   u8   8-bit gray (gray, as FFV1, rawvideo or PNG store it): the samples as they are;
 *   u16  9- to 16-bit gray (gray9..gray16, either byte order: FFV1 and the other lossless
 *        codecs keep all bits): the samples as they are, in the host's byte order; a gray10
 *        frame's samples are 0..1023, never rescaled;
 *   u8   every other format (YUV, RGB, palette, gray with alpha, ...): its luma, converted
 *        by libswscale to full-range 8-bit gray: a YUV frame's Y plane, stretched from
 *        limited range (16..235 to 0..255) when the stream says it is limited (or says
 *        nothing) and kept as it is when full range (yuvj, color_range "pc"), narrowed to 8
 *        bits when deeper; an RGB frame as 0.299 R + 0.587 G + 0.114 B (BT.601's weights),
 *        rounded. A gray picture sent through a lossy YUV codec comes back near its values.
 * Every frame must have frame 0's size and pixel format: a change mid-stream is an error
 * naming the frame and both.
 *
 * Frame count: the container's, where it says it reliably, that is AVI's and QuickTime's
 * frame count of the stream (a sample table, a header field); Matroska and NUT do not say
 * it, and the count is -1 until the frames end, or until video_frames_count_all counts
 * them. A file whose frames end before the count its container declares (or the count
 * counted) fails at the first missing frame, naming it.
 *
 * A descriptor that is not a regular file (a pipe: standard input) is a stream: read once,
 * never seeked (libavformat is told it cannot seek), its count -1 whatever its container
 * says, and its frames read only in order (an earlier frame is PLM_ERR_INVALID_ARG; after a
 * failure every read fails). QuickTime/MP4 streams only when its index comes first.
 *
 * Streaming and order: frames are decoded in order, one at a time into the caller's buffer;
 * the file is never held whole (what libavformat buffers is a few packets). Reading frame
 * k after frame j: k == j costs nothing (the frame is kept, until a read meets the end),
 * k > j decodes the frames between and drops them, k < j starts again from the beginning
 * of the file (reopening the demuxer and the decoder) and decodes up to k. So reading in
 * order is the cheap way, and any order works.
 *
 * Errors name the file, the frame where there is one and what was wrong:
 * "clip.mkv: no video stream (2 streams: audio, subtitle)", "clip.avi: codec 'cinepak' is
 * not decoded here (...)", "clip.mkv: frame 3: damaged packet: ...", "clip.mkv: frame 2:
 * 16x12 gray, but frame 0 is 32x24 gray". Decoders are asked to report damage rather than
 * hide it (err_recognition: CRC checks and explode), and a packet the demuxer marks corrupt
 * (cut short) is an error, as is a frame the decoder marks corrupt. Some damage FFmpeg only
 * logs and then hides (FFV1 conceals a slice whose CRC fails; the Matroska demuxer calls an
 * element cut short the end of the file): an error our decoder or demuxer logs while a frame
 * is decoded fails that frame, with the logged text as its reason.
 *
 * FFmpeg's logging: the first open sets libavutil's log callback to one that keeps those
 * errors of our own decoders and demuxers (told from another library's by their address)
 * and prints nothing of them, and passes every other message to FFmpeg's default callback
 * (av_log_set_callback is process-global, and FFmpeg cannot tell the callback it replaces).
 * The plume program's process is its own: there the log level is set to quiet as well
 * (av_log_set_level), so that FFmpeg never prints to stderr. libplume_io, inside other
 * people's processes, calls video_io_as_guest first: the level stays the process's, so the
 * process's other FFmpeg users print as they did (a callback of their own that they set
 * before is replaced: FFmpeg gives no way to chain it).
 *
 * A build without FFmpeg (cmake -DPLUME_VIDEO=OFF: support/video_io_absent.c) keeps
 * video_magic and the container names, so that a video is still recognised as one, and
 * refuses every open with PLM_ERR_UNSUPPORTED: "clip.mkv: a Matroska video, and this plume
 * was built without FFmpeg (cmake -DPLUME_VIDEO=OFF): no video is read".
 *
 * Decoding uses one thread per video_frames (no frame threading: frames come out as soon
 * as their packet is in). A video_frames is used by one thread at a time; several may be
 * open at once in different threads.
 */
#ifndef PLUME_SUPPORT_VIDEO_IO_H
#define PLUME_SUPPORT_VIDEO_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/status.h"
#include "plume/tensor.h"

/* Leave libavutil's log level as the process has it (before the first open; above). */
void video_io_as_guest(void);

/* How many first bytes video_magic looks at, at most. */
enum { VIDEO_MAGIC_BYTES = 32 };

/* The containers read, as their first bytes say (support/video_common.c). */
typedef enum video_container {
  VIDEO_CONTAINER_NONE, /* none of them */
  VIDEO_CONTAINER_MATROSKA,
  VIDEO_CONTAINER_AVI,
  VIDEO_CONTAINER_QUICKTIME,
  VIDEO_CONTAINER_NUT,
} video_container;

/* The container whose file the first bytes (length of them, up to VIDEO_MAGIC_BYTES) begin:
 * Matroska's EBML header (1A 45 DF A3), "RIFF" then "AVI " at byte 8, a QuickTime box
 * ("ftyp", "moov", "mdat", "wide", "free", "skip") at byte 4, or NUT's "nut/multimedia
 * container"; VIDEO_CONTAINER_NONE for any other bytes and for NULL. */
video_container video_container_of(const unsigned char *bytes, size_t length);

/* Its name in messages: "Matroska", "AVI", "QuickTime/MP4", "NUT" ("none" for NONE). */
const char *video_container_title(video_container kind);

/* Whether the first bytes begin a file of one of the containers: video_container_of's
 * answer is not VIDEO_CONTAINER_NONE. */
bool video_magic(const unsigned char *bytes, size_t length);

typedef struct video_frames video_frames;

/* What a video's frames are, from its first frame (decoded at open). */
typedef struct video_info {
  plm_dtype dtype;       /* PLM_DTYPE_U8 or PLM_DTYPE_U16, above */
  int64_t height, width; /* of every frame */
  int64_t count;         /* the container's count (>= 1), or -1: known when the frames end */
  char pixel_format[32]; /* the decoded frames' (FFmpeg's name: "gray16le", "yuv420p") */
  char codec[32];        /* the stream's ("ffv1") */
} video_info;

/* Open the video on descriptor fd (taken: closed by video_frames_close, or here on
 * failure; a regular file, or a stream as above), named path in messages; decodes frame 0 to learn
 * the frames' dtype and shape. Errors: PLM_ERR_IO (not a file of the four containers, a container
 * FFmpeg cannot read, no video stream, no frame, a damaged first frame, a frame of more than
 * IMAGE_MAX_ELEMENTS samples), PLM_ERR_UNSUPPORTED (a codec not on the list above),
 * PLM_ERR_OUT_OF_MEMORY; *out is NULL on failure. */
plm_status video_frames_open(int fd, const char *path, video_info *info, video_frames **out,
                             char *err, size_t err_size);

/* As video_frames_open, on length bytes in memory (not copied: they must stay as they are
 * until video_frames_close), named name in messages: for the fuzzer and the tests. */
plm_status video_frames_open_memory(const void *bytes, size_t length, const char *name,
                                    video_info *info, video_frames **out, char *err,
                                    size_t err_size);

/* Decode frame k (>= 0) into dst (height * width samples of dtype, rows back to back), or
 * set *end (dst left as it was) when the frames end before k and the container did not
 * declare a count (k past a declared count is PLM_ERR_INVALID_ARG; a file whose frames end
 * before its declared count is PLM_ERR_IO). Errors: PLM_ERR_INVALID_ARG (NULL arguments, k
 * < 0 or past the count), PLM_ERR_IO (a damaged packet or frame, a read failure, a frame
 * of another size or pixel format than frame 0's, the frames ending before a declared
 * count: "clip.avi: frame 3: ..."), PLM_ERR_OUT_OF_MEMORY. After a failure the next read
 * starts again from the beginning of the file. */
plm_status video_frames_read(video_frames *v, int64_t k, void *dst, bool *end, char *err,
                             size_t err_size);

/* The count of frames: the container's, or the frames decoded once a read has reached the
 * end, else -1. */
int64_t video_frames_count(const video_frames *v);

/* The count of frames, exactly, for a file whose container does not declare it (Matroska,
 * NUT), found by reading the file to its end now: a video of a codec whose every packet is
 * one whole frame (libavcodec's AV_CODEC_PROP_INTRA_ONLY: rawvideo, huffyuv, ffvhuff,
 * utvideo, magicyuv, mjpeg; and ffv1 and png, which FFmpeg 5.1's descriptors do not mark
 * so) by counting its packets with the demuxer alone, any other (mpeg4, h264, hevc, vp8,
 * vp9: a packet may hold no frame, or frames come out late) by decoding every frame. The
 * count is then taken as a declared one: video_frames_count says it, reading past it is
 * PLM_ERR_INVALID_ARG and frames ending before it PLM_ERR_IO; reading frame k gives what
 * it gave before (the next read starts again from the beginning of the file, as reading
 * an earlier frame does). Sets *count; reads nothing when the count is known already
 * (declared, or the frames have ended), nor for a stream (a pipe, read once: *count -1).
 * Blocks while it reads. Errors: PLM_ERR_INVALID_ARG (NULL arguments), PLM_ERR_IO (a
 * damaged or unreadable packet or frame, named as a read names it: "clip.mkv: frame 3:
 * damaged packet: ..."), PLM_ERR_UNSUPPORTED and PLM_ERR_OUT_OF_MEMORY (as at open); the
 * count stays unknown then, and the next read starts again from the beginning. */
plm_status video_frames_count_all(video_frames *v, int64_t *count, char *err, size_t err_size);

/* Close; NULL is a no-op. */
void video_frames_close(video_frames *v);

/* ---- shared by the two builds' opens (support/video_common.c) ---- */

/* video_frames_open's and video_frames_open_memory's checks of their arguments: *out set
 * to NULL (when out is not), then PLM_OK, or PLM_ERR_INVALID_ARG naming the NULL argument
 * (video_frames_open's fd, which it takes, closed then). */
plm_status video_check_open(int fd, const char *path, const video_info *info, video_frames **out,
                            char *err, size_t err_size);
plm_status video_check_open_memory(const void *bytes, size_t length, const char *name,
                                   const video_info *info, video_frames **out, char *err,
                                   size_t err_size);

/* PLM_ERR_IO: name's first bytes begin none of the containers read (a stream's message
 * points at plume detect's raw-frame options). */
plm_status video_refuse_unknown(const char *name, bool stream, char *err, size_t err_size);

#endif /* PLUME_SUPPORT_VIDEO_IO_H */

/* support/video_io.c: video frames through FFmpeg's libraries (support/video_io.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/video_io.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "support/image_io.h"
#include "support/quote.h"

/* The demuxers that may open a file, by libavformat's names (its format whitelist), and
 * the decoders that may decode its video (the codec whitelist), as support/video_io.h
 * lists them. */
static const char format_whitelist[] = "matroska,avi,mov,nut";
static const char codec_whitelist[] =
    "rawvideo,ffv1,png,huffyuv,ffvhuff,utvideo,magicyuv,mjpeg,mpeg4,h264,hevc,vp8,vp9";
static const enum AVCodecID allowed_codecs[] = {
    AV_CODEC_ID_RAWVIDEO, AV_CODEC_ID_FFV1,    AV_CODEC_ID_PNG,      AV_CODEC_ID_HUFFYUV,
    AV_CODEC_ID_FFVHUFF,  AV_CODEC_ID_UTVIDEO, AV_CODEC_ID_MAGICYUV, AV_CODEC_ID_MJPEG,
    AV_CODEC_ID_MPEG4,    AV_CODEC_ID_H264,    AV_CODEC_ID_HEVC,     AV_CODEC_ID_VP8,
    AV_CODEC_ID_VP9};

/* libavformat's demuxer of each container read (support/video_common.c names them). */
static const char *const demuxer_of[] = {
    [VIDEO_CONTAINER_MATROSKA] = "matroska",
    [VIDEO_CONTAINER_AVI] = "avi",
    [VIDEO_CONTAINER_QUICKTIME] = "mov",
    [VIDEO_CONTAINER_NUT] = "nut",
};

/* libavformat reads through a buffer of this many bytes. */
enum { IO_BUFFER_BYTES = 64 * 1024 };

/* Where the bytes come from: a descriptor (read with pread) or memory. */
typedef struct source {
  int fd; /* -1 for memory */
  const unsigned char *bytes;
  int64_t size;     /* of the file when opened, or of the memory; -1 for a stream */
  int64_t position; /* of the next read */
  bool stream;      /* fd is a pipe (standard input): read once, in order, never seeked */
  unsigned char head[VIDEO_MAGIC_BYTES]; /* a stream's first bytes, read to recognise it */
  int head_length;
} source;

struct video_frames {
  char *name;
  source src;
  video_container kind;        /* what the first bytes say */
  const AVInputFormat *format; /* its demuxer */
  AVIOContext *io;
  AVFormatContext *demuxer;
  AVCodecContext *decoder;
  struct SwsContext *scaler; /* for frames that are not gray */
  uint8_t *gray[4];          /* scaler's output: one plane, rows padded (convert_to_gray) */
  int gray_linesize[4];
  AVPacket *packet;
  AVFrame *frame;          /* the last frame decoded: frame decoded - 1 */
  int stream;              /* the video stream's index */
  int64_t decoded;         /* frames decoded since the demuxer was opened */
  bool draining;           /* the demuxer ended: the decoder is giving what it holds */
  bool ended;              /* the decoder gave its last frame: frame holds none since */
  bool started;            /* demuxer and decoder open */
  video_info info;         /* frame 0's, and the count */
  int pixel_format;        /* frame 0's (enum AVPixelFormat) */
  int64_t last_frame;      /* the last frame that exists, once the frames have ended; else -1 */
  bool counted;            /* info.count was counted (video_frames_count_all), not declared */
  char logged[256];        /* the first error the decoder or demuxer logged since it was cleared */
  video_frames *next_live; /* the list of open videos (ffmpeg_log's) */
};

/* ---- the custom AVIOContext's callbacks ------------------------------------------------ */

static int source_read(void *opaque, uint8_t *buf, int size) {
  source *s = opaque;
  if (size <= 0) return 0;
  if (s->fd < 0) {
    int64_t left = s->size - s->position;
    if (left <= 0) return AVERROR_EOF;
    size_t n = (size_t)(left < size ? left : size);
    memcpy(buf, s->bytes + s->position, n);
    s->position += (int64_t)n;
    return (int)n;
  }
  if (s->stream && s->position < s->head_length) {
    int n = s->head_length - (int)s->position < size ? s->head_length - (int)s->position : size;
    memcpy(buf, s->head + s->position, (size_t)n);
    s->position += n;
    return n;
  }
  for (;;) {
    ssize_t n = s->stream ? read(s->fd, buf, (size_t)size)
                          : pread(s->fd, buf, (size_t)size, (off_t)s->position);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return AVERROR(errno);
    if (n == 0) return AVERROR_EOF;
    s->position += n;
    return (int)n;
  }
}

static int64_t source_seek(void *opaque, int64_t offset, int whence) {
  source *s = opaque;
  int64_t to;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return s->stream ? AVERROR(ENOSYS) : s->size;
    case SEEK_SET: to = offset; break;
    case SEEK_CUR: to = s->position + offset; break;
    case SEEK_END: to = s->size + offset; break;
    default: return AVERROR(EINVAL);
  }
  if (to < 0) return AVERROR(EINVAL);
  if (s->stream && to != s->position) return AVERROR(ESPIPE);
  s->position = to;
  return to;
}

/* A demuxer that asks for another file (a reference, a playlist's entry) gets none. */
static int refuse_io_open(struct AVFormatContext *s, AVIOContext **pb, const char *url, int flags,
                          AVDictionary **options) {
  (void)s, (void)pb, (void)url, (void)flags, (void)options;
  return AVERROR(EPERM);
}

/* ---- opening and closing the demuxer and the decoder ----------------------------------- */

/* The open videos, so that ffmpeg_log tells our decoders and demuxers (whose opaque is
 * their video_frames) from another library's in the same process (whose opaque is that
 * library's own, never to be written through). */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static video_frames *live;

static void live_add(video_frames *v) {
  pthread_mutex_lock(&live_lock);
  v->next_live = live;
  live = v;
  pthread_mutex_unlock(&live_lock);
}

static void live_remove(video_frames *v) {
  pthread_mutex_lock(&live_lock);
  for (video_frames **at = &live; *at; at = &(*at)->next_live)
    if (*at == v) {
      *at = v->next_live;
      break;
    }
  pthread_mutex_unlock(&live_lock);
}

/* Whether opaque is an open video's (compared, never dereferenced). */
static bool is_live(const void *opaque) {
  bool found = false;
  pthread_mutex_lock(&live_lock);
  for (const video_frames *v = live; v && !found; v = v->next_live) found = v == opaque;
  pthread_mutex_unlock(&live_lock);
  return found;
}

/* FFmpeg's log callback (process-global, support/video_io.h): an error that our decoder or
 * demuxer logs (a CRC mismatch FFV1 then conceals, a demuxer's read error before it reports
 * the end) is kept in its video_frames, the first since v->logged was cleared, to become a
 * failure naming the frame, and never printed; any other message goes to FFmpeg's own
 * callback, which prints it as the process's log level says (quiet in the plume command).
 * Our contexts log on the thread that decodes them (one thread each), which alone uses
 * their video_frames. */
static void ffmpeg_log(void *object, int level, const char *fmt, va_list args) {
  void *opaque = NULL;
  if (object) {
    const AVClass *kind = *(const AVClass *const *)object;
    if (kind == avcodec_get_class())
      opaque = ((AVCodecContext *)object)->opaque;
    else if (kind == avformat_get_class())
      opaque = ((AVFormatContext *)object)->opaque;
  }
  if (!opaque || !is_live(opaque)) {
    av_log_default_callback(object, level, fmt, args);
    return;
  }
  video_frames *v = opaque;
  if (level > AV_LOG_ERROR || v->logged[0]) return;
  vsnprintf(v->logged, sizeof v->logged, fmt, args);
  size_t n = strlen(v->logged);
  while (n && (v->logged[n - 1] == '\n' || v->logged[n - 1] == ' ')) v->logged[--n] = '\0';
  if (!n) snprintf(v->logged, sizeof v->logged, "an error");
}

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;
static atomic_bool guest; /* video_io_as_guest: the process's log level left alone */

void video_io_as_guest(void) {
  atomic_store(&guest, true);
}

static void quiet_ffmpeg(void) {
  if (!atomic_load(&guest)) av_log_set_level(AV_LOG_QUIET);
  av_log_set_callback(ffmpeg_log);
}

/* FFmpeg's account of an error code. */
static const char *av_why(int code, char text[AV_ERROR_MAX_STRING_SIZE]) {
  av_strerror(code, text, AV_ERROR_MAX_STRING_SIZE);
  return text;
}

/* Close what start opened, keeping the source and the frame 0's description. */
static void stop(video_frames *v) {
  avcodec_free_context(&v->decoder);
  avformat_close_input(&v->demuxer); /* frees nothing of a custom io: below */
  if (v->io) av_freep(&v->io->buffer);
  avio_context_free(&v->io);
  av_packet_free(&v->packet);
  av_frame_free(&v->frame);
  v->started = false;
  v->decoded = 0;
  v->draining = false;
  v->ended = false;
}

void video_frames_close(video_frames *v) {
  if (!v) return;
  stop(v);
  live_remove(v);
  sws_freeContext(v->scaler);
  av_freep(&v->gray[0]);
  if (v->src.fd >= 0) close(v->src.fd);
  free(v->name);
  free(v);
}

static bool allowed_codec(enum AVCodecID id) {
  for (size_t c = 0; c < sizeof allowed_codecs / sizeof *allowed_codecs; c++)
    if (allowed_codecs[c] == id) return true;
  return false;
}

/* The streams' kinds, for a file without video: "2 streams: audio, subtitle". */
static void stream_kinds(const AVFormatContext *demuxer, char *text, size_t size) {
  size_t used = (size_t)snprintf(text, size, "%u stream%s", demuxer->nb_streams,
                                 demuxer->nb_streams == 1 ? "" : "s");
  for (unsigned s = 0; s < demuxer->nb_streams && s < 8 && used < size; s++) {
    const char *kind = av_get_media_type_string(demuxer->streams[s]->codecpar->codec_type);
    used += (size_t)snprintf(text + used, size - used, "%s%s", s ? ", " : ": ",
                             kind ? kind : "unknown");
  }
}

/* Choose the first video stream that is not an attached picture; the others are skipped. */
static plm_status find_video_stream(video_frames *v, char *err, size_t err_size) {
  v->stream = -1;
  for (unsigned s = 0; s < v->demuxer->nb_streams; s++) {
    AVStream *st = v->demuxer->streams[s];
    bool video = st->codecpar->codec_type == AVMEDIA_TYPE_VIDEO &&
                 !(st->disposition & AV_DISPOSITION_ATTACHED_PIC);
    if (video && v->stream < 0)
      v->stream = (int)s;
    else
      st->discard = AVDISCARD_ALL;
  }
  if (v->stream >= 0) return PLM_OK;
  char kinds[160];
  stream_kinds(v->demuxer, kinds, sizeof kinds);
  return quote_failure(err, err_size, PLM_ERR_IO, "%s: no video stream (%s)", v->name, kinds);
}

/* Open the demuxer on the source from its first byte, and the decoder of the video stream. */
static plm_status start(video_frames *v, char *err, size_t err_size) {
  char why[AV_ERROR_MAX_STRING_SIZE];
  v->src.position = 0;
  unsigned char *buffer = av_malloc(IO_BUFFER_BYTES);
  if (buffer)
    v->io = avio_alloc_context(buffer, IO_BUFFER_BYTES, 0, &v->src, source_read, NULL, source_seek);
  if (!v->io) av_free(buffer);
  if (v->io && v->src.stream) v->io->seekable = 0;
  v->demuxer = v->io ? avformat_alloc_context() : NULL;
  v->packet = av_packet_alloc();
  v->frame = av_frame_alloc();
  if (v->demuxer) {
    v->demuxer->pb = v->io;
    v->demuxer->opaque = v;
    v->demuxer->flags |= AVFMT_FLAG_CUSTOM_IO;
    v->demuxer->io_open = refuse_io_open;
    v->demuxer->error_recognition = AV_EF_EXPLODE;
    v->demuxer->format_whitelist = av_strdup(format_whitelist);
    v->demuxer->codec_whitelist = av_strdup(codec_whitelist);
  }
  if (!v->demuxer || !v->packet || !v->frame || !v->demuxer->format_whitelist ||
      !v->demuxer->codec_whitelist)
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", v->name);
  /* avformat_open_input frees the context on failure. */
  v->logged[0] = '\0';
  int code = avformat_open_input(&v->demuxer, NULL, v->format, NULL);
  if (code < 0)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: not a %s file FFmpeg can read: %s%s%s%s",
                         v->name, video_container_title(v->kind), av_why(code, why),
                         v->logged[0] ? " (" : "", v->logged, v->logged[0] ? ")" : "");
  plm_status status = find_video_stream(v, err, err_size);
  if (status != PLM_OK) return status;
  const AVCodecParameters *par = v->demuxer->streams[v->stream]->codecpar;
  const AVCodec *codec = allowed_codec(par->codec_id) ? avcodec_find_decoder(par->codec_id) : NULL;
  const char *codec_name = avcodec_get_name(par->codec_id);
  snprintf(v->info.codec, sizeof v->info.codec, "%s", codec_name);
  if (!codec)
    return quote_failure(err, err_size, PLM_ERR_UNSUPPORTED,
                         "%s: video codec '%s' is not decoded here (the codecs read are %s)",
                         v->name, codec_name, codec_whitelist);
  v->decoder = avcodec_alloc_context3(codec);
  if (!v->decoder)
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", v->name);
  code = avcodec_parameters_to_context(v->decoder, par);
  if (code >= 0) {
    v->decoder->thread_count = 1;
    v->decoder->opaque = v;
    v->decoder->err_recognition = AV_EF_CRCCHECK | AV_EF_EXPLODE;
    v->decoder->codec_whitelist = av_strdup(codec_whitelist);
    code = v->decoder->codec_whitelist ? avcodec_open2(v->decoder, codec, NULL) : AVERROR(ENOMEM);
  }
  if (code < 0)
    return quote_failure(
        err, err_size, code == AVERROR(ENOMEM) ? PLM_ERR_OUT_OF_MEMORY : PLM_ERR_IO,
        "%s: the %s decoder cannot start: %s", v->name, codec_name, av_why(code, why));
  v->started = true;
  return PLM_OK;
}

/* ---- decoding ---------------------------------------------------------------------------- */

/* Decode the next frame into v->frame (frame v->decoded, counted when it comes), or set
 * *end when there is none. */
static plm_status decode_next(video_frames *v, bool *end, char *err, size_t err_size) {
  char why[AV_ERROR_MAX_STRING_SIZE];
  const int64_t k = v->decoded;
  *end = false;
  v->logged[0] = '\0';
  for (;;) {
    int code = avcodec_receive_frame(v->decoder, v->frame);
    if (code == 0) {
      if ((v->frame->flags & AV_FRAME_FLAG_CORRUPT) || v->frame->decode_error_flags)
        return quote_failure(err, err_size, PLM_ERR_IO,
                             "%s: frame %lld: damaged: the decoder marked it corrupt", v->name,
                             (long long)k);
      if (v->logged[0])
        return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld: damaged: %s", v->name,
                             (long long)k, v->logged);
      v->decoded++;
      return PLM_OK;
    }
    if (code == AVERROR_EOF || (code == AVERROR(EAGAIN) && v->draining)) {
      if (v->logged[0]) /* the demuxer met an error and called it the end */
        return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld: damaged: %s", v->name,
                             (long long)k, v->logged);
      *end = true;
      v->ended = true; /* avcodec_receive_frame emptied v->frame */
      return PLM_OK;
    }
    if (code != AVERROR(EAGAIN))
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld: damaged: %s", v->name,
                           (long long)k, av_why(code, why));
    code = av_read_frame(v->demuxer, v->packet);
    if (code == AVERROR_EOF) {
      v->draining = true;
      code = avcodec_send_packet(v->decoder, NULL);
      if (code < 0 && code != AVERROR_EOF)
        return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld: damaged: %s", v->name,
                             (long long)k, av_why(code, why));
      continue;
    }
    if (code < 0)
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld: reading failed: %s", v->name,
                           (long long)k, av_why(code, why));
    const bool ours = v->packet->stream_index == v->stream;
    const bool corrupt = v->packet->flags & AV_PKT_FLAG_CORRUPT;
    if (ours && !corrupt) code = avcodec_send_packet(v->decoder, v->packet);
    av_packet_unref(v->packet);
    if (ours && corrupt)
      return quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: frame %lld: damaged packet: cut short or marked corrupt by the "
                           "container",
                           v->name, (long long)k);
    if (ours && code < 0 && code != AVERROR(EAGAIN))
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld: damaged packet: %s", v->name,
                           (long long)k, av_why(code, why));
  }
}

/* Gray formats read as they are: one component of 8 to 16 bits, not packed in bits, not
 * a palette, not float, not shifted in its word. */
static bool gray_format(const AVPixFmtDescriptor *d) {
  return d && d->nb_components == 1 &&
         !(d->flags & (AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BITSTREAM | AV_PIX_FMT_FLAG_FLOAT |
                       AV_PIX_FMT_FLAG_HWACCEL)) &&
         d->comp[0].shift == 0 && d->comp[0].offset == 0 &&
         ((d->comp[0].depth == 8 && d->comp[0].step == 1) ||
          (d->comp[0].depth > 8 && d->comp[0].depth <= 16 && d->comp[0].step == 2));
}

static const char *format_name(int format) {
  const char *name = av_get_pix_fmt_name((enum AVPixelFormat)format);
  return name ? name : "unknown";
}

/* Copy the gray samples of v->frame into dst (rows back to back), 16-bit ones in the host's
 * byte order. */
static void copy_gray(const video_frames *v, const AVPixFmtDescriptor *d, void *dst) {
  const AVFrame *f = v->frame;
  const size_t row = (size_t)f->width * (d->comp[0].depth > 8 ? 2 : 1);
  const bool big = d->flags & AV_PIX_FMT_FLAG_BE;
  const uint16_t one = 1;
  const bool host_big = *(const unsigned char *)&one == 0;
  for (int y = 0; y < f->height; y++) {
    const unsigned char *from = f->data[0] + (ptrdiff_t)y * f->linesize[0];
    unsigned char *to = (unsigned char *)dst + (size_t)y * row;
    if (d->comp[0].depth == 8 || big == host_big) {
      memcpy(to, from, row);
      continue;
    }
    for (size_t i = 0; i < row; i += 2) {
      to[i] = from[i + 1];
      to[i + 1] = from[i];
    }
  }
}

/* The luma of a frame that is not gray, through libswscale (support/video_io.h's rule): its
 * gray8 is full range (0..255, RGB's white 255) whatever it is told; the source's range, as
 * the frame says it, decides whether a YUV frame's Y is stretched.
 * libswscale writes a row in whole vectors: into rows packed back to back, a frame of 1 to 5
 * columns (yuv420p, rgb24, bgr0, pal8 and most others; FFmpeg 5.1) gets up to 13 bytes
 * written past its last sample, which no sanitizer sees in an uninstrumented library. So it
 * writes into v->gray, rows padded to 64 bytes as av_image_alloc lays them out (as FFmpeg's
 * own frames are), and the rows are copied into dst. */
static plm_status convert_to_gray(video_frames *v, int64_t k, void *dst, char *err,
                                  size_t err_size) {
  const AVFrame *f = v->frame;
  if (!v->scaler) {
    const enum AVPixelFormat from = (enum AVPixelFormat)f->format;
    const bool full = f->color_range == AVCOL_RANGE_JPEG;
    struct SwsContext *s = sws_alloc_context();
    if (s && (av_opt_set_int(s, "srcw", f->width, 0) < 0 ||
              av_opt_set_int(s, "srch", f->height, 0) < 0 ||
              av_opt_set_int(s, "src_format", from, 0) < 0 ||
              av_opt_set_int(s, "dstw", f->width, 0) < 0 ||
              av_opt_set_int(s, "dsth", f->height, 0) < 0 ||
              av_opt_set_int(s, "dst_format", AV_PIX_FMT_GRAY8, 0) < 0 ||
              av_opt_set_int(s, "src_range", full, 0) < 0 ||
              av_opt_set_int(s, "sws_flags", SWS_POINT | SWS_ACCURATE_RND | SWS_BITEXACT, 0) < 0 ||
              sws_init_context(s, NULL, NULL) < 0)) {
      sws_freeContext(s);
      s = NULL;
    }
    if (!s)
      return quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: frame %lld: libswscale cannot convert %s to gray", v->name,
                           (long long)k, format_name(f->format));
    v->scaler = s;
  }
  if (!v->gray[0] &&
      av_image_alloc(v->gray, v->gray_linesize, f->width, f->height, AV_PIX_FMT_GRAY8, 64) < 0)
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY,
                         "%s: frame %lld: out of memory for a %dx%d gray frame", v->name,
                         (long long)k, f->width, f->height);
  int rows = sws_scale(v->scaler, (const uint8_t *const *)f->data, f->linesize, 0, f->height,
                       v->gray, v->gray_linesize);
  if (rows != f->height)
    return quote_failure(err, err_size, PLM_ERR_IO,
                         "%s: frame %lld: libswscale converted %d of its %d rows to gray", v->name,
                         (long long)k, rows, f->height);
  av_image_copy_plane(dst, f->width, v->gray[0], v->gray_linesize[0], f->width, f->height);
  return PLM_OK;
}

/* v->frame, frame k, into dst; it must be of frame 0's size and pixel format. */
static plm_status deliver(video_frames *v, int64_t k, void *dst, char *err, size_t err_size) {
  const AVFrame *f = v->frame;
  if (f->width != v->info.width || f->height != v->info.height || f->format != v->pixel_format)
    return quote_failure(err, err_size, PLM_ERR_IO,
                         "%s: frame %lld: %dx%d %s, but frame 0 is "
                         "%lldx%lld %s: the frame size or format changed mid-stream",
                         v->name, (long long)k, f->width, f->height, format_name(f->format),
                         (long long)v->info.width, (long long)v->info.height,
                         format_name(v->pixel_format));
  const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)f->format);
  if (!gray_format(d)) return convert_to_gray(v, k, dst, err, err_size);
  copy_gray(v, d, dst);
  return PLM_OK;
}

/* Frame 0 tells the frames' dtype, shape and pixel format. */
static plm_status describe(video_frames *v, char *err, size_t err_size) {
  const AVFrame *f = v->frame;
  const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)f->format);
  if (!d || f->width < 1 || f->height < 1)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame 0: %dx%d of pixel format %d",
                         v->name, f->width, f->height, f->format);
  if ((int64_t)f->width * f->height > IMAGE_MAX_ELEMENTS)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame 0: %dx%d is more than %lld samples",
                         v->name, f->width, f->height, (long long)IMAGE_MAX_ELEMENTS);
  v->pixel_format = f->format;
  v->info.width = f->width;
  v->info.height = f->height;
  v->info.dtype = gray_format(d) && d->comp[0].depth > 8 ? PLM_DTYPE_U16 : PLM_DTYPE_U8;
  snprintf(v->info.pixel_format, sizeof v->info.pixel_format, "%s", d->name);
  /* AVI's and QuickTime's frame counts are in their headers and sample tables. */
  const AVStream *st = v->demuxer->streams[v->stream];
  const bool counted =
      (v->kind == VIDEO_CONTAINER_AVI || v->kind == VIDEO_CONTAINER_QUICKTIME) && !v->src.stream;
  v->info.count = counted && st->nb_frames > 0 ? st->nb_frames : -1;
  return PLM_OK;
}

static plm_status open_source(video_frames *v, video_info *info, video_frames **out, char *err,
                              size_t err_size) {
  pthread_once(&quiet_once, quiet_ffmpeg);
  live_add(v);
  unsigned char magic[VIDEO_MAGIC_BYTES] = {0};
  int got = 0;
  if (v->src.stream) { /* kept in head, to be read again from position 0 */
    while (v->src.head_length < VIDEO_MAGIC_BYTES) {
      ssize_t n = read(v->src.fd, v->src.head + v->src.head_length,
                       (size_t)(VIDEO_MAGIC_BYTES - v->src.head_length));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      v->src.head_length += (int)n;
    }
    memcpy(magic, v->src.head, (size_t)v->src.head_length);
    got = v->src.head_length;
  } else {
    source probe = v->src;
    got = source_read(&probe, magic, sizeof magic);
  }
  v->kind = got > 0 ? video_container_of(magic, (size_t)got) : VIDEO_CONTAINER_NONE;
  v->format = v->kind != VIDEO_CONTAINER_NONE ? av_find_input_format(demuxer_of[v->kind]) : NULL;
  plm_status status = PLM_OK;
  if (!v->format) status = video_refuse_unknown(v->name, v->src.stream, err, err_size);
  if (status == PLM_OK) status = start(v, err, err_size);
  bool end = false;
  if (status == PLM_OK) status = decode_next(v, &end, err, err_size);
  if (status == PLM_OK && end)
    status = quote_failure(err, err_size, PLM_ERR_IO, "%s: no frame: its video stream is empty",
                           v->name);
  if (status == PLM_OK) status = describe(v, err, err_size);
  if (status != PLM_OK) {
    video_frames_close(v);
    return status;
  }
  *info = v->info;
  *out = v;
  return PLM_OK;
}

static video_frames *new_video(const char *name, int fd) {
  video_frames *v = calloc(1, sizeof *v);
  if (v) {
    v->src.fd = fd;
    v->last_frame = -1;
    v->name = strdup(name);
  }
  if (v && !v->name) {
    free(v);
    v = NULL;
  }
  return v;
}

plm_status video_frames_open(int fd, const char *path, video_info *info, video_frames **out,
                             char *err, size_t err_size) {
  plm_status checked = video_check_open(fd, path, info, out, err, err_size);
  if (checked != PLM_OK) return checked;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int error = errno;
    close(fd);
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: %s", path, strerror(error));
  }
  video_frames *v = new_video(path, fd);
  if (!v) {
    close(fd);
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  v->src.stream = !S_ISREG(st.st_mode);
  v->src.size = v->src.stream ? -1 : (int64_t)st.st_size;
  return open_source(v, info, out, err, err_size);
}

plm_status video_frames_open_memory(const void *bytes, size_t length, const char *name,
                                    video_info *info, video_frames **out, char *err,
                                    size_t err_size) {
  plm_status checked = video_check_open_memory(bytes, length, name, info, out, err, err_size);
  if (checked != PLM_OK) return checked;
  video_frames *v = new_video(name, -1);
  if (!v) return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
  v->src.bytes = bytes;
  v->src.size = (int64_t)length;
  return open_source(v, info, out, err, err_size);
}

int64_t video_frames_count(const video_frames *v) {
  if (!v) return -1;
  return v->info.count >= 0 ? v->info.count : v->last_frame >= 0 ? v->last_frame + 1 : -1;
}

/* Decode up to frame k (v->decoded == k + 1 on success), from the beginning when the last
 * frame decoded is past k or is no longer held (the end was met after it). */
static plm_status decode_to(video_frames *v, int64_t k, bool *end, char *err, size_t err_size) {
  *end = false;
  if (v->last_frame >= 0 && k > v->last_frame) {
    *end = true;
    return PLM_OK;
  }
  if (v->src.stream && !v->started)
    return quote_failure(err, err_size, PLM_ERR_IO,
                         "%s: frame %lld: the stream failed before, and a stream is read once",
                         v->name, (long long)k);
  if (!v->started || v->ended || v->decoded > k + 1) {
    stop(v);
    plm_status status = start(v, err, err_size);
    if (status != PLM_OK) return status;
  }
  while (v->decoded < k + 1) {
    plm_status status = decode_next(v, end, err, err_size);
    if (status != PLM_OK) return status;
    if (*end) {
      v->last_frame = v->decoded - 1;
      return PLM_OK;
    }
  }
  return PLM_OK;
}

plm_status video_frames_read(video_frames *v, int64_t k, void *dst, bool *end, char *err,
                             size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (end) *end = false;
  if (!v || !dst || !end)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "video_frames_read: %s is NULL",
                         !v     ? "frames"
                         : !dst ? "dst"
                                : "end");
  const int64_t count = v->info.count;
  if (k < 0 || (count >= 0 && k >= count))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: frame %lld is not in 0..%lld",
                         v->name, (long long)k, (long long)(count - 1));
  if (v->src.stream && v->started && (k + 1 < v->decoded || (v->ended && k < v->decoded)))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "%s: frame %lld: a stream is read once, in order, and frame %lld was "
                         "read already",
                         v->name, (long long)k, (long long)(v->decoded - 1));
  plm_status status = decode_to(v, k, end, err, err_size);
  if (status == PLM_OK && *end && count >= 0) {
    *end = false;
    char said[64];
    snprintf(said, sizeof said, v->counted ? "%lld were counted" : "the container declares %lld",
             (long long)count);
    status = quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: frame %lld: missing: the frames end after %lld, but %s", v->name,
                           (long long)k, (long long)(v->last_frame + 1), said);
  }
  if (status == PLM_OK && !*end) status = deliver(v, k, dst, err, err_size);
  if (status != PLM_OK) stop(v); /* the next read starts again */
  return status;
}

/* Whether each of the codec's packets is one whole frame, out of the decoder at once (no
 * packet without a frame, no frame held back), so that its packets count its frames: what
 * libavcodec's descriptors call intra-only, and FFV1 and PNG, which FFmpeg 5.1's do not. */
static bool packet_per_frame(enum AVCodecID id) {
  const AVCodecDescriptor *d = avcodec_descriptor_get(id);
  return (d && (d->props & AV_CODEC_PROP_INTRA_ONLY)) || id == AV_CODEC_ID_FFV1 ||
         id == AV_CODEC_ID_PNG;
}

/* The video stream's packets from the demuxer's start to the file's end, each one frame
 * (packet_per_frame), checked as decode_next checks them: v->last_frame is the last. */
static plm_status count_packets(video_frames *v, char *err, size_t err_size) {
  char why[AV_ERROR_MAX_STRING_SIZE];
  int64_t packets = 0;
  v->logged[0] = '\0';
  for (;;) {
    int code = av_read_frame(v->demuxer, v->packet);
    if (code == AVERROR_EOF) break;
    if (code < 0)
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld: reading failed: %s", v->name,
                           (long long)packets, av_why(code, why));
    const bool ours = v->packet->stream_index == v->stream;
    const bool corrupt = v->packet->flags & AV_PKT_FLAG_CORRUPT;
    const bool shown = !(v->packet->flags & AV_PKT_FLAG_DISCARD);
    av_packet_unref(v->packet);
    if (ours && corrupt)
      return quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: frame %lld: damaged packet: cut short or marked corrupt by the "
                           "container",
                           v->name, (long long)packets);
    if (ours && shown) packets++;
  }
  if (v->logged[0]) /* the demuxer met an error and called it the end */
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld: damaged: %s", v->name,
                         (long long)packets, v->logged);
  if (packets < 1)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: no frame: its video stream is empty",
                         v->name);
  v->last_frame = packets - 1;
  return PLM_OK;
}

/* Read the file from its beginning to its end, by its packets or by decoding every frame
 * (support/video_io.h): v->last_frame is the last frame. */
static plm_status read_to_the_end(video_frames *v, char *err, size_t err_size) {
  stop(v);
  plm_status status = start(v, err, err_size);
  if (status != PLM_OK) return status;
  if (packet_per_frame(v->decoder->codec_id)) return count_packets(v, err, err_size);
  bool end = false;
  return decode_to(v, INT64_MAX - 1, &end, err, err_size);
}

plm_status video_frames_count_all(video_frames *v, int64_t *count, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (count) *count = -1;
  if (!v || !count)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "video_frames_count_all: %s is NULL",
                         !v ? "frames" : "count");
  if (video_frames_count(v) < 0 && !v->src.stream) {
    plm_status status = read_to_the_end(v, err, err_size);
    stop(v); /* the next read starts again from the beginning of the file */
    if (status != PLM_OK) return status;
    v->info.count = v->last_frame + 1;
    v->counted = true;
  }
  *count = video_frames_count(v);
  return PLM_OK;
}

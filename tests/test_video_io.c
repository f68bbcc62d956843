/* tests/test_video_io.c: video files through FFmpeg's libraries (support/video_io.h, by way
 * of support/frame_reader.h for plume detect and support/image_io.h for plume op).
 *
 * Reading files the ffmpeg program wrote from known frames (tests/fixtures/video/make.py):
 * FFV1 gray16le in Matroska (u16, all 16 bits), rawvideo gray16be in NUT (u16 in the host's
 * order), FFV1 gray10le (u16 of 0..1023), FFV1 gray8 in AVI, rawvideo gray8 in NUT, each equal
 * sample for sample to the frames they were made of, read in order as plume detect reads them
 * (frame_reader_next to the end), out of order, and whole (image_read); a lossy MPEG-4 (yuv420p)
 * MP4 and an H.264 Matroska file with B-frames of gray frames within a tolerance; rgb24
 * rawvideo as BT.601 luma, a frame of 3 columns too, with nothing written past its buffer. The
 * count is the container's (AVI, MP4) or -1 until the end (Matroska, NUT), or until it is counted
 * (video_frames_count_all, frame_reader_count_frames: by the packets, or by decoding for H.264),
 * after which every frame reads as before. Refused, with a one-line message naming the file (and
 * the frame): a file cut short, bytes changed, a damaged packet, a size that changes mid-stream, an
 * audio-only file, a codec off the list, bytes that are no video. Through a pipe (a stream, as
 * standard input): the same frames, read once, in order, count -1. A plain unit test: no backend.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/frame_reader.h"
#include "support/image_io.h"
#include "support/video_io.h"
#include "image_file_checks.h"

static char dir[SCRATCH_DIR_SIZE];
static char err[FRAME_READER_ERROR_SIZE];

static void make_dir(void) {
  scratch_dir_make(dir, "video-io");
}

static void remove_dir(void) {
  scratch_dir_remove(dir);
}

static const char *fixture(const char *name, const char *extension) {
  return fixture_file("video", name, extension);
}

static image read_ok(const char *path) {
  image img = {0};
  ck_assert_msg(image_read(path, NULL, &img, err, sizeof err) == PLM_OK, "%s", err);
  return img;
}

/* The frames of path read as plume detect reads them: frame_reader_next from 0 until the
 * end, into one (N, H, W) array (N at most 8) of the reader's dtype. */
static image read_as_detect(const char *path, int64_t want_count) {
  frame_reader_info info;
  frame_reader *r = NULL;
  ck_assert_msg(frame_reader_open(path, &info, &r, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_msg(info.count == want_count, "%s: count %lld, expected %lld", path,
                (long long)info.count, (long long)want_count);
  ck_assert(!info.folder);
  enum { MOST = 8 };
  image all = {.dtype = info.dtype, .ndim = 3, .dims = {MOST, info.height, info.width}};
  all.data = malloc(image_bytes(&all));
  ck_assert_ptr_nonnull(all.data);
  const size_t frame_bytes = image_bytes(&all) / MOST;
  int64_t k = 0;
  for (bool end = false; !end; k++) {
    ck_assert_int_lt(k, MOST);
    ck_assert_msg(frame_reader_next(r, k, (char *)all.data + (size_t)k * frame_bytes, &end, err,
                                    sizeof err) == PLM_OK,
                  "%s", err);
    if (end) break;
  }
  all.dims[0] = k;
  ck_assert_str_eq(frame_reader_file(r, 0), path);
  frame_reader_close(r);
  return all;
}

START_TEST(test_lossless_files_read_as_they_were_made) {
  static const struct {
    const char *name, *extension, *frames; /* frames: the .npy of what it was made of */
    plm_dtype dtype;
    int64_t count; /* the container's, or -1 */
  } cases[] = {{"gray16-ffv1", "mkv", "gray16-ffv1", PLM_DTYPE_U16, -1},
               {"gray16be-raw", "nut", "gray16-ffv1", PLM_DTYPE_U16, -1},
               {"gray10-ffv1", "mkv", "gray10-ffv1", PLM_DTYPE_U16, -1},
               {"gray8-ffv1", "avi", "gray8-ffv1", PLM_DTYPE_U8, 4},
               {"gray8-raw", "nut", "gray8-raw", PLM_DTYPE_U8, -1}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const char *path = fixture(cases[c].name, cases[c].extension);
    image want = read_ok(fixture(cases[c].frames, "npy"));
    ck_assert_int_eq(want.dtype, cases[c].dtype);
    image got = read_as_detect(path, cases[c].count);
    expect_image_equal(&got, &want, path);
    image_free(&got, NULL);
    got = read_ok(path); /* whole, as plume op reads it */
    expect_image_equal(&got, &want, path);
    image_free(&got, NULL);
    image_free(&want, NULL);
  }
}
END_TEST

START_TEST(test_all_sixteen_bits_are_kept) {
  image want = read_ok(fixture("gray16-ffv1", "npy"));
  const uint16_t *v = want.data;
  int64_t high = 0, odd = 0;
  for (int64_t i = 0; i < image_numel(&want); i++) high += v[i] > 0x8000, odd += v[i] & 1;
  ck_assert_msg(high > 100 && odd > 100, "the fixture does not use all 16 bits");
  image_free(&want, NULL);
  image ten = read_ok(fixture("gray10-ffv1", "mkv"));
  uint16_t top = 0;
  for (int64_t i = 0; i < image_numel(&ten); i++)
    if (((const uint16_t *)ten.data)[i] > top) top = ((const uint16_t *)ten.data)[i];
  ck_assert_uint_eq(top, 1023); /* gray10 samples as stored, not rescaled to 16 bits */
  image_free(&ten, NULL);
}
END_TEST

START_TEST(test_frames_in_any_order) {
  const char *path = fixture("gray16-ffv1", "mkv");
  image want = read_ok(fixture("gray16-ffv1", "npy"));
  frame_reader_info info;
  frame_reader *r = NULL;
  ck_assert_msg(frame_reader_open(path, &info, &r, err, sizeof err) == PLM_OK, "%s", err);
  const size_t frame_bytes = image_bytes(&want) / 4;
  void *got = malloc(frame_bytes);
  ck_assert_ptr_nonnull(got);
  static const int64_t order[] = {3, 1, 1, 0, 2, 3, 0};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    ck_assert_msg(frame_reader_read(r, order[i], got, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_msg(memcmp(got, (char *)want.data + (size_t)order[i] * frame_bytes, frame_bytes) == 0,
                  "frame %lld differs", (long long)order[i]);
  }
  /* Past the end of frames the container does not count: an end, or an error by name. */
  bool end = false;
  ck_assert_int_eq(frame_reader_next(r, 4, got, &end, err, sizeof err), PLM_OK);
  ck_assert(end);
  expect_image_message(frame_reader_read(r, 6, got, err, sizeof err), PLM_ERR_IO, err, path,
                       "end before frame 6");
  ck_assert_msg(frame_reader_read(r, 2, got, err, sizeof err) == PLM_OK, "%s", err);
  frame_reader_close(r);
  /* Past a count the container declares: out of range. */
  ck_assert_msg(
      frame_reader_open(fixture("gray8-ffv1", "avi"), &info, &r, err, sizeof err) == PLM_OK, "%s",
      err);
  ck_assert_int_eq(frame_reader_next(r, 4, got, &end, err, sizeof err), PLM_OK);
  ck_assert(end);
  expect_image_message(frame_reader_read(r, 4, got, err, sizeof err), PLM_ERR_INVALID_ARG, err,
                       "gray8-ffv1.avi", "frame 4 is not in 0..3");
  frame_reader_close(r);
  free(got);
  image_free(&want, NULL);
}
END_TEST

/* The largest difference between two u8 arrays of n samples. */
static int largest_difference(const uint8_t *a, const uint8_t *b, int64_t n) {
  int most = 0;
  for (int64_t i = 0; i < n; i++) {
    const int d = abs((int)a[i] - (int)b[i]);
    if (d > most) most = d;
  }
  return most;
}

START_TEST(test_a_lossy_colour_video_is_its_luma_near_the_frames) {
  /* Gray frames through yuv420p and MPEG-4 at its best quality, or H.264 with B-frames
   * (decoded out of order): limited-range luma stretched back to 0..255 comes within a few
   * levels of them. */
  static const struct {
    const char *name, *extension;
    int64_t count; /* the container's, or -1 */
  } cases[] = {{"gray8-mpeg4", "mp4", 4}, {"gray8-h264", "mkv", -1}};
  image want = read_ok(fixture("gray8-mpeg4", "npy"));
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const char *path = fixture(cases[c].name, cases[c].extension);
    image got = read_as_detect(path, cases[c].count);
    ck_assert_int_eq(got.dtype, PLM_DTYPE_U8);
    ck_assert(got.dims[0] == 4 && got.dims[1] == 24 && got.dims[2] == 32);
    const int most = largest_difference(got.data, want.data, image_numel(&want));
    ck_assert_msg(most <= 6, "%s: a sample %d levels from its frame's", path, most);
    ck_assert_msg(most >= 1, "%s: exact: is it still lossy?", path);
    image_free(&got, NULL);
  }
  image_free(&want, NULL);
}
END_TEST

START_TEST(test_rgb_is_bt601_luma) {
  /* Lossless rgb24: each sample is 0.299 R + 0.587 G + 0.114 B, full range, give or take
   * libswscale's rounding of its fixed-point weights. */
  const char *path = fixture("rgb-raw", "nut");
  image rgb = {0};
  ck_assert_msg(image_read_array(fixture("rgb-raw", "npy"), NULL, &rgb, err, sizeof err) == PLM_OK,
                "%s", err);
  ck_assert(rgb.ndim == 4 && rgb.dims[3] == 3);
  image got = read_as_detect(path, -1);
  ck_assert(got.dtype == PLM_DTYPE_U8 && got.dims[0] == 4 && got.dims[1] == 24 &&
            got.dims[2] == 32);
  const uint8_t *c = rgb.data, *y = got.data;
  int most = 0;
  for (int64_t i = 0; i < image_numel(&got); i++) {
    const double luma = 0.299 * c[3 * i] + 0.587 * c[3 * i + 1] + 0.114 * c[3 * i + 2];
    const double d = fabs(y[i] - luma);
    if (d > most) most = (int)ceil(d);
  }
  ck_assert_msg(most <= 1, "%s: a sample %d levels from its BT.601 luma", path, most);
  ck_assert_uint_eq(y[0], 0); /* black and white keep the ends of the range */
  ck_assert_uint_eq(y[1], 255);
  image_free(&got, NULL);
  image_free(&rgb, NULL);
}
END_TEST

START_TEST(test_a_narrow_colour_frame_stays_in_its_buffer) {
  /* 3 columns of rgb24: libswscale would write 7 bytes past rows packed back to back (in an
   * uninstrumented library, where no sanitizer sees it), so the bytes after the frame must
   * stay as they were, and the frame must still be BT.601's luma. */
  enum { H = 24, W = 3, GUARD = 64 };
  static unsigned char bytes[16384];
  const size_t length = file_bytes(fixture("rgb-narrow", "nut"), bytes, sizeof bytes);
  image rgb = {0};
  ck_assert_msg(
      image_read_array(fixture("rgb-narrow", "npy"), NULL, &rgb, err, sizeof err) == PLM_OK, "%s",
      err);
  ck_assert(rgb.ndim == 4 && rgb.dims[1] == H && rgb.dims[2] == W && rgb.dims[3] == 3);
  video_info info;
  video_frames *v = NULL;
  ck_assert_msg(
      video_frames_open_memory(bytes, length, "narrow", &info, &v, err, sizeof err) == PLM_OK, "%s",
      err);
  ck_assert(info.dtype == PLM_DTYPE_U8 && info.height == H && info.width == W);
  uint8_t frame[H * W + GUARD];
  bool end = false;
  for (int64_t k = 0; k < rgb.dims[0]; k++) {
    memset(frame, 0xA5, sizeof frame);
    ck_assert_msg(video_frames_read(v, k, frame, &end, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert(!end);
    for (int i = H * W; i < H * W + GUARD; i++)
      ck_assert_msg(frame[i] == 0xA5, "frame %lld: byte %d past the frame was written",
                    (long long)k, i - H * W);
    const uint8_t *c = (const uint8_t *)rgb.data + k * H * W * 3;
    for (int i = 0; i < H * W; i++) {
      const double luma = 0.299 * c[3 * i] + 0.587 * c[3 * i + 1] + 0.114 * c[3 * i + 2];
      ck_assert_msg(fabs(frame[i] - luma) <= 1, "frame %lld: sample %d is %d, its luma %.1f",
                    (long long)k, i, frame[i], luma);
    }
  }
  video_frames_close(v);
  image_free(&rgb, NULL);
}
END_TEST

START_TEST(test_what_is_not_read_is_named) {
  frame_reader_info info;
  frame_reader *r = NULL;
  expect_image_message(frame_reader_open(fixture("audio-only", "mkv"), &info, &r, err, sizeof err),
                       PLM_ERR_IO, err, "audio-only.mkv: no video stream", "1 stream: audio");
  ck_assert_ptr_null(r);
  expect_image_message(frame_reader_open(fixture("cinepak", "avi"), &info, &r, err, sizeof err),
                       PLM_ERR_UNSUPPORTED, err, "cinepak.avi: video codec 'cinepak'", NULL);
  /* A container's first bytes and nothing of the container after them. */
  const char *fake = scratch_file(dir, "fake.mkv", "\x1a\x45\xdf\xa3 not a video", 17);
  expect_image_message(frame_reader_open(fake, &info, &r, err, sizeof err), PLM_ERR_IO, err,
                       "fake.mkv: not a Matroska file FFmpeg can read", NULL);
  const char *text = scratch_file(dir, "text.mkv", "just some text, no video", 24);
  expect_image_message(frame_reader_open(text, &info, &r, err, sizeof err), PLM_ERR_IO, err,
                       "text.mkv", "or video file");
  ck_assert_ptr_null(r);
  /* image_frames streams no video: frame_reader does. */
  image frame;
  int64_t count = 0;
  image_frames *frames = NULL;
  expect_image_message(
      image_frames_open(fixture("gray8-raw", "nut"), &frame, &count, &frames, err, sizeof err),
      PLM_ERR_UNSUPPORTED, err, "gray8-raw.nut: a video", NULL);
  ck_assert_ptr_null(frames);
}
END_TEST

/* Read path's frames in order; the read of frame k must fail with status and a message
 * holding path's name, "frame K" and what. */
static void expect_frame_fails(const char *path, const char *name, int64_t k, plm_status status,
                               const char *what) {
  frame_reader_info info;
  frame_reader *r = NULL;
  ck_assert_msg(frame_reader_open(path, &info, &r, err, sizeof err) == PLM_OK, "%s", err);
  void *frame = malloc((size_t)(info.height * info.width) * plm_dtype_size(info.dtype));
  ck_assert_ptr_nonnull(frame);
  bool end = false;
  for (int64_t j = 0; j < k; j++) {
    ck_assert_msg(frame_reader_next(r, j, frame, &end, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert(!end);
  }
  char where[64];
  snprintf(where, sizeof where, "%s: frame %lld", name, (long long)k);
  expect_image_message(frame_reader_next(r, k, frame, &end, err, sizeof err), status, err, where,
                       what);
  /* The reader still serves the frames before k, from the beginning again. */
  ck_assert_msg(frame_reader_read(r, 0, frame, err, sizeof err) == PLM_OK, "%s", err);
  free(frame);
  frame_reader_close(r);
}

START_TEST(test_damage_is_named_with_its_frame) {
  expect_frame_fails(fixture("damaged-packet", "avi"), "damaged-packet.avi", 2, PLM_ERR_IO,
                     "damaged");
  expect_frame_fails(fixture("size-change", "mkv"), "size-change.mkv", 2, PLM_ERR_IO,
                     "16x12 gray, but frame 0 is 32x24 gray");
  /* Cut inside frame 2's packet (make.py found it with ffprobe). */
  expect_frame_fails(fixture("cut-in-frame-2", "avi"), "cut-in-frame-2.avi", 2, PLM_ERR_IO, NULL);
  expect_frame_fails(fixture("cut-in-frame-2", "mkv"), "cut-in-frame-2.mkv", 2, PLM_ERR_IO, NULL);
  expect_frame_fails(fixture("cut-in-frame-2", "nut"), "cut-in-frame-2.nut", 2, PLM_ERR_IO, NULL);
}
END_TEST

/* Copies of a lossless file cut at every step-th length, read in order as plume detect reads
 * them: each frame delivered is the file's own frame, and the frames stop at a failure that
 * names the file and the frame or at a clean end; returns the count of cuts that ended
 * cleanly short of the frames (possible only where the container does not count them: a
 * cut between two whole frames). */
static int expect_cuts_deliver_good_frames(const char *name, const char *extension, size_t step) {
  static unsigned char bytes[16384];
  const size_t length = file_bytes(fixture(name, extension), bytes, sizeof bytes);
  image want = read_ok(fixture(name, "npy"));
  const size_t frame_bytes = image_bytes(&want) / (size_t)want.dims[0];
  void *frame = malloc(frame_bytes);
  ck_assert_ptr_nonnull(frame);
  char cut_name[32];
  snprintf(cut_name, sizeof cut_name, "cut.%s", extension);
  int short_ends = 0;
  for (size_t cut = 1; cut < length; cut += step) {
    const char *path = scratch_file(dir, cut_name, bytes, cut);
    frame_reader_info info;
    frame_reader *r = NULL;
    if (frame_reader_open(path, &info, &r, err, sizeof err) != PLM_OK) {
      ck_assert_msg(strstr(err, cut_name) && !strchr(err, '\n'), "%s", err);
      continue;
    }
    bool end = false;
    int64_t k = 0;
    plm_status status = PLM_OK;
    for (; k < 8 && (status = frame_reader_next(r, k, frame, &end, err, sizeof err)) == PLM_OK &&
           !end;
         k++)
      ck_assert_msg(memcmp(frame, (char *)want.data + (size_t)k * frame_bytes, frame_bytes) == 0,
                    "%s cut at %zu: frame %lld is not the file's", name, cut, (long long)k);
    if (status != PLM_OK) {
      char where[64];
      snprintf(where, sizeof where, "frame %lld", (long long)k);
      ck_assert_msg(strstr(err, cut_name) && strstr(err, where) && !strchr(err, '\n'), "%s", err);
    } else if (k < want.dims[0]) { /* (all frames: the cut took only what follows them) */
      ck_assert_msg(info.count < 0, "%s cut at %zu: a clean end after %lld of %lld frames", name,
                    cut, (long long)k, (long long)info.count);
      short_ends++;
    }
    frame_reader_close(r);
  }
  free(frame);
  image_free(&want, NULL);
  return short_ends;
}

START_TEST(test_cut_copies_give_their_frames_or_fail) {
  const int avi = expect_cuts_deliver_good_frames("gray8-ffv1", "avi", 37);
  const int mkv = expect_cuts_deliver_good_frames("gray16-ffv1", "mkv", 37);
  const int nut = expect_cuts_deliver_good_frames("gray8-raw", "nut", 37);
  /* AVI counts its frames; Matroska's demuxer reports a cut element (its segment's size is
   * in its header); a NUT file cut between two frames ends cleanly (seen once in these cuts). */
  ck_assert_int_eq(avi, 0);
  ck_assert_int_eq(mkv, 0);
  ck_assert_int_le(nut, 2);
}
END_TEST

START_TEST(test_damaged_copies_fail_cleanly) {
  static unsigned char bytes[16384];
  static const struct {
    const char *name, *extension;
  } files[] = {
      {"gray16-ffv1", "mkv"}, {"gray8-ffv1", "avi"}, {"gray8-raw", "nut"}, {"gray8-mpeg4", "mp4"}};
  for (size_t c = 0; c < sizeof files / sizeof *files; c++) {
    const size_t length =
        file_bytes(fixture(files[c].name, files[c].extension), bytes, sizeof bytes);
    expect_damage_handled(dir, files[c].extension, bytes, length, 97, 61);
  }
}
END_TEST

/* A pipe's read end, a child process writing the fixture's bytes into it (then exiting);
 * *child is its pid. */
static int pipe_of(const char *name, const char *extension, pid_t *child) {
  static unsigned char bytes[16384];
  const size_t length = file_bytes(fixture(name, extension), bytes, sizeof bytes);
  int ends[2];
  ck_assert_int_eq(pipe(ends), 0);
  *child = fork();
  ck_assert_int_ge(*child, 0);
  if (*child == 0) {
    close(ends[0]);
    const bool whole = write(ends[1], bytes, length) == (ssize_t)length;
    _exit(whole ? 0 : 1);
  }
  close(ends[1]);
  return ends[0];
}

START_TEST(test_a_pipe_is_read_once_in_order) {
  static const struct {
    const char *name, *extension;
  } cases[] = {{"gray16-ffv1", "mkv"}, {"gray8-ffv1", "avi"}, {"gray8-raw", "nut"}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    pid_t child;
    const int fd = pipe_of(cases[c].name, cases[c].extension, &child);
    image want = read_ok(fixture(cases[c].name, "npy"));
    const size_t frame_bytes = image_bytes(&want) / 4;
    video_info info;
    video_frames *v = NULL;
    ck_assert_msg(video_frames_open(fd, "pipe", &info, &v, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_int_eq(info.count, -1); /* a stream's count is not taken from its header */
    void *frame = malloc(frame_bytes);
    ck_assert_ptr_nonnull(frame);
    bool end = false;
    for (int64_t k = 0; k < 4; k++) {
      ck_assert_msg(video_frames_read(v, k, frame, &end, err, sizeof err) == PLM_OK, "%s", err);
      ck_assert(!end);
      ck_assert_msg(memcmp(frame, (char *)want.data + (size_t)k * frame_bytes, frame_bytes) == 0,
                    "%s.%s through a pipe: frame %lld differs", cases[c].name, cases[c].extension,
                    (long long)k);
    }
    ck_assert_msg(video_frames_read(v, 3, frame, &end, err, sizeof err) == PLM_OK, "%s", err);
    expect_image_message(video_frames_read(v, 1, frame, &end, err, sizeof err), PLM_ERR_INVALID_ARG,
                         err, "pipe: frame 1: a stream is read once", NULL);
    ck_assert_int_eq(video_frames_read(v, 4, frame, &end, err, sizeof err), PLM_OK);
    ck_assert(end);
    expect_image_message(video_frames_read(v, 3, frame, &end, err, sizeof err), PLM_ERR_INVALID_ARG,
                         err, "pipe: frame 3: a stream is read once", NULL);
    free(frame);
    video_frames_close(v);
    image_free(&want, NULL);
    int exit_status = -1;
    ck_assert_int_eq(waitpid(child, &exit_status, 0), child);
  }
  /* Damage in a stream: the frame fails, and so does every later read. */
  pid_t child;
  const int fd = pipe_of("cut-in-frame-2", "mkv", &child);
  video_info info;
  video_frames *v = NULL;
  ck_assert_msg(video_frames_open(fd, "pipe", &info, &v, err, sizeof err) == PLM_OK, "%s", err);
  uint16_t frame[24 * 32];
  bool end = false;
  for (int64_t k = 0; k < 2; k++)
    ck_assert_msg(video_frames_read(v, k, frame, &end, err, sizeof err) == PLM_OK, "%s", err);
  expect_image_message(video_frames_read(v, 2, frame, &end, err, sizeof err), PLM_ERR_IO, err,
                       "pipe: frame 2", NULL);
  expect_image_message(video_frames_read(v, 3, frame, &end, err, sizeof err), PLM_ERR_IO, err,
                       "pipe: frame 3: the stream failed before", NULL);
  video_frames_close(v);
  int exit_status = -1;
  ck_assert_int_eq(waitpid(child, &exit_status, 0), child);
}
END_TEST

START_TEST(test_memory_reads_as_the_file) {
  static unsigned char bytes[16384];
  const size_t length = file_bytes(fixture("gray8-raw", "nut"), bytes, sizeof bytes);
  image want = read_ok(fixture("gray8-raw", "npy"));
  video_info info;
  video_frames *v = NULL;
  ck_assert_msg(
      video_frames_open_memory(bytes, length, "memory", &info, &v, err, sizeof err) == PLM_OK, "%s",
      err);
  ck_assert_str_eq(info.codec, "rawvideo");
  ck_assert_str_eq(info.pixel_format, "gray");
  ck_assert_int_eq(video_frames_count(v), -1);
  uint8_t frame[24 * 32];
  bool end = false;
  for (int64_t k = 3; k >= 0; k--) {
    ck_assert_msg(video_frames_read(v, k, frame, &end, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert(!end && memcmp(frame, (uint8_t *)want.data + k * sizeof frame, sizeof frame) == 0);
  }
  ck_assert_int_eq(video_frames_read(v, 5, frame, &end, err, sizeof err), PLM_OK);
  ck_assert(end);
  ck_assert_int_eq(video_frames_count(v), 4);
  /* The last frame again, in order, after the end was met: the decoder holds it no more. */
  for (int64_t k = 0; k < 4; k++)
    ck_assert_msg(video_frames_read(v, k, frame, &end, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(video_frames_read(v, 4, frame, &end, err, sizeof err), PLM_OK);
  ck_assert(end);
  ck_assert_msg(video_frames_read(v, 3, frame, &end, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert(!end && memcmp(frame, (uint8_t *)want.data + 3 * sizeof frame, sizeof frame) == 0);
  video_frames_close(v);
  image_free(&want, NULL);
}
END_TEST

/* Frames in order, from 0, until the end: the reader must still give before's frames. */
static void expect_frames_as_before(frame_reader *r, const image *before, const char *path) {
  const size_t frame_bytes = image_bytes(before) / (size_t)before->dims[0];
  void *got = malloc(frame_bytes);
  ck_assert_ptr_nonnull(got);
  static const int64_t order[] = {3, 0, 1, 2, 3, 1};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    ck_assert_msg(frame_reader_read(r, order[i], got, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_msg(
        memcmp(got, (const char *)before->data + (size_t)order[i] * frame_bytes, frame_bytes) == 0,
        "%s: frame %lld differs after counting", path, (long long)order[i]);
  }
  bool end = false;
  ck_assert_int_eq(frame_reader_next(r, 4, got, &end, err, sizeof err), PLM_OK);
  ck_assert(end);
  expect_image_message(frame_reader_read(r, 4, got, err, sizeof err), PLM_ERR_INVALID_ARG, err,
                       path, "frame 4 is not in 0..3");
  free(got);
}

START_TEST(test_counting_finds_the_frames) {
  /* Counted by their packets (FFV1, rawvideo: one whole frame each) or, for H.264 whose
   * B-frames come out of the decoder late, by decoding them all; the same frames after. */
  static const struct {
    const char *name, *extension;
  } cases[] = {{"gray16-ffv1", "mkv"}, {"gray10-ffv1", "mkv"}, {"gray16be-raw", "nut"},
               {"gray8-raw", "nut"},   {"rgb-raw", "nut"},     {"gray8-h264", "mkv"}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const char *path = fixture(cases[c].name, cases[c].extension);
    image before = read_as_detect(path, -1);
    ck_assert_int_eq(before.dims[0], 4);
    frame_reader_info info;
    frame_reader *r = NULL;
    ck_assert_msg(frame_reader_open(path, &info, &r, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_int_eq(info.count, -1);
    int64_t count = 0;
    ck_assert_msg(frame_reader_count_frames(r, &count, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_msg(count == 4, "%s: counted %lld frames of 4", path, (long long)count);
    expect_frames_as_before(r, &before, path);
    ck_assert_msg(frame_reader_count_frames(r, &count, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert_int_eq(count, 4); /* known now: nothing read again */
    frame_reader_close(r);
    image_free(&before, NULL);
  }
  /* A count the container declares is taken as it is. */
  frame_reader_info info;
  frame_reader *r = NULL;
  ck_assert_msg(
      frame_reader_open(fixture("gray8-ffv1", "avi"), &info, &r, err, sizeof err) == PLM_OK, "%s",
      err);
  int64_t count = 0;
  ck_assert_msg(frame_reader_count_frames(r, &count, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(count, 4);
  frame_reader_close(r);
}
END_TEST

START_TEST(test_counting_in_memory_a_pipe_and_damage) {
  /* In memory, the last frame read right after counting (the decoder drained by it). */
  static unsigned char bytes[16384];
  size_t length = file_bytes(fixture("gray8-h264", "mkv"), bytes, sizeof bytes);
  video_info info;
  video_frames *v = NULL;
  ck_assert_msg(
      video_frames_open_memory(bytes, length, "memory", &info, &v, err, sizeof err) == PLM_OK, "%s",
      err);
  uint8_t first[24 * 32], frame[24 * 32];
  bool end = false;
  ck_assert_msg(video_frames_read(v, 3, first, &end, err, sizeof err) == PLM_OK, "%s", err);
  int64_t count = 0;
  ck_assert_msg(video_frames_count_all(v, &count, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(count, 4);
  ck_assert_int_eq(video_frames_count(v), 4);
  ck_assert_msg(video_frames_read(v, 3, frame, &end, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert(!end && memcmp(frame, first, sizeof frame) == 0);
  expect_image_message(video_frames_read(v, 4, frame, &end, err, sizeof err), PLM_ERR_INVALID_ARG,
                       err, "memory: frame 4 is not in 0..3", NULL);
  video_frames_close(v);
  /* A stream is not read ahead: its count stays unknown and its frames come as before. */
  pid_t child;
  const int fd = pipe_of("gray8-raw", "nut", &child);
  ck_assert_msg(video_frames_open(fd, "pipe", &info, &v, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_msg(video_frames_count_all(v, &count, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(count, -1);
  image want = read_ok(fixture("gray8-raw", "npy"));
  for (int64_t k = 0; k < 4; k++) {
    ck_assert_msg(video_frames_read(v, k, frame, &end, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert(!end && memcmp(frame, (uint8_t *)want.data + k * sizeof frame, sizeof frame) == 0);
  }
  image_free(&want, NULL);
  video_frames_close(v);
  int exit_status = -1;
  ck_assert_int_eq(waitpid(child, &exit_status, 0), child);
  /* Damage met while counting is named with its frame; the count stays unknown and the
   * frames before it are still read. */
  frame_reader_info reader_info;
  frame_reader *r = NULL;
  ck_assert_msg(frame_reader_open(fixture("cut-in-frame-2", "mkv"), &reader_info, &r, err,
                                  sizeof err) == PLM_OK,
                "%s", err);
  expect_image_message(frame_reader_count_frames(r, &count, err, sizeof err), PLM_ERR_IO, err,
                       "cut-in-frame-2.mkv: frame 2", NULL);
  uint16_t frame16[24 * 32];
  ck_assert_msg(frame_reader_read(r, 1, frame16, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_msg(frame_reader_next(r, 2, frame16, &end, err, sizeof err) != PLM_OK, "frame 2 read");
  frame_reader_close(r);
}
END_TEST

int main(void) {
  Suite *suite = suite_create("video_io");
  TCase *tcase = tcase_create("video_io");
  tcase_add_checked_fixture(tcase, make_dir, remove_dir);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_lossless_files_read_as_they_were_made);
  tcase_add_test(tcase, test_all_sixteen_bits_are_kept);
  tcase_add_test(tcase, test_frames_in_any_order);
  tcase_add_test(tcase, test_a_lossy_colour_video_is_its_luma_near_the_frames);
  tcase_add_test(tcase, test_rgb_is_bt601_luma);
  tcase_add_test(tcase, test_a_narrow_colour_frame_stays_in_its_buffer);
  tcase_add_test(tcase, test_what_is_not_read_is_named);
  tcase_add_test(tcase, test_damage_is_named_with_its_frame);
  tcase_add_test(tcase, test_cut_copies_give_their_frames_or_fail);
  tcase_add_test(tcase, test_damaged_copies_fail_cleanly);
  tcase_add_test(tcase, test_memory_reads_as_the_file);
  tcase_add_test(tcase, test_a_pipe_is_read_once_in_order);
  tcase_add_test(tcase, test_counting_finds_the_frames);
  tcase_add_test(tcase, test_counting_in_memory_a_pipe_and_damage);
  suite_add_tcase(suite, tcase);
  SRunner *runner = srunner_create(suite);
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  const int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

/* tests/test_raw_frames.c: raw frames from a file or a stream (support/raw_frames.h), and
 * through the frame reader (frame_reader_open_raw, frame_reader_next).
 *
 * The options' texts (every bad one named in its message); files of u8, u16 and f32
 * samples in either byte order after a header, read in any order and equal to the values
 * written; a stream on standard input (a pipe put in place of fd 0) read in order to its
 * end; and each way raw input goes wrong: a short last frame (naming the frame and the
 * bytes it misses), an input shorter than its header, no frames, a stream read out of
 * order. A FIFO gives a writer's whole stream: one that came and went before the open (a
 * second reader held the pipe), and one whose writer comes as the open is made, many times
 * over (the race that once dropped the stream: the open closed its read end under the
 * writer and waited for another writer forever); and the regular-file opener refuses a
 * FIFO without letting a waiting writer through to SIGPIPE. A hang fails by SIGALRM, the
 * check's watchdog. A plain unit test: no context or backend is involved.
 */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/frame_reader.h"
#include "support/raw_frames.h"
#include "support/regular_file.h"

static char dir[SCRATCH_DIR_SIZE];
static char err[FRAME_READER_ERROR_SIZE];

static void make_dir(void) {
  scratch_dir_make(dir, "raw-frames");
}

static void remove_dir(void) {
  scratch_dir_remove(dir);
}

static void write_bytes(const char *path, const void *data, size_t bytes) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, bytes, f), bytes);
  ck_assert_int_eq(fclose(f), 0);
}

/* The reader must fail with status and one line containing each of the needles. */
static void expect_message(plm_status got, plm_status want, const char *a, const char *b) {
  ck_assert_msg(got == want, "status %s, expected %s (%s)", plm_status_str(got),
                plm_status_str(want), err);
  ck_assert_msg(strstr(err, a) != NULL, "message \"%s\" lacks \"%s\"", err, a);
  ck_assert_msg(!b || strstr(err, b) != NULL, "message \"%s\" lacks \"%s\"", err, b);
  ck_assert_msg(strchr(err, '\n') == NULL, "message is not one line: %s", err);
}

enum { H = 3, W = 5, FRAME = H * W, N = 4, HEADER = 7 };

/* Sample i of frame k, as a double every dtype below holds exactly. */
static double sample(int k, int i) {
  return (double)((k * 53 + i * 17) % 251) + (k == 2 ? 0.5 : 0.0) * (i % 2);
}

/* The bytes of N frames of dtype in the given byte order after HEADER bytes of 'h'; the
 * expected frames, in the host's order, in expect. Returns the byte count. */
static size_t make_input(plm_dtype dtype, bool big, unsigned char *bytes, unsigned char *expect) {
  const size_t size = plm_dtype_size(dtype);
  memset(bytes, 'h', HEADER);
  for (int k = 0; k < N; k++)
    for (int i = 0; i < FRAME; i++) {
      unsigned char host[4];
      double v = sample(k, i);
      if (dtype == PLM_DTYPE_U8) host[0] = (unsigned char)v;
      if (dtype == PLM_DTYPE_U16) {
        uint16_t u = (uint16_t)(v * 200);
        memcpy(host, &u, 2);
      }
      if (dtype == PLM_DTYPE_F32) {
        float f = (float)v - 100.25f;
        memcpy(host, &f, 4);
      }
      const size_t at = ((size_t)k * FRAME + (size_t)i) * size;
      memcpy(expect + at, host, size);
      /* The input's order: the value's bytes from the least significant up (little) or
       * down (big); the host's order is found from a known value. */
      const uint16_t one = 1;
      unsigned char first;
      memcpy(&first, &one, 1);
      const bool host_big = first == 0;
      for (size_t b = 0; b < size; b++)
        bytes[HEADER + at + b] = big == host_big ? host[b] : host[size - 1 - b];
    }
  return HEADER + (size_t)N * FRAME * size;
}

static raw_format format_of(plm_dtype dtype, bool big) {
  return (raw_format){
      .dtype = dtype, .height = H, .width = W, .big_endian = big, .header_bytes = HEADER};
}

/* Put bytes on standard input through a pipe (they fit in its buffer); returns the old
 * standard input, for put_back_stdin. */
static int stdin_from(const void *bytes, size_t length) {
  int ends[2];
  ck_assert_int_eq(pipe(ends), 0);
  ck_assert_int_eq(write(ends[1], bytes, length), (ssize_t)length);
  ck_assert_int_eq(close(ends[1]), 0);
  int saved = dup(STDIN_FILENO);
  ck_assert_int_ge(saved, 0);
  ck_assert_int_eq(dup2(ends[0], STDIN_FILENO), STDIN_FILENO);
  ck_assert_int_eq(close(ends[0]), 0);
  return saved;
}

static void put_back_stdin(int saved) {
  ck_assert_int_eq(dup2(saved, STDIN_FILENO), STDIN_FILENO);
  ck_assert_int_eq(close(saved), 0);
}

/* ---- the options ------------------------------------------------------------------------ */

START_TEST(test_the_options_are_read_or_refused_by_name) {
  raw_format f;
  ck_assert_int_eq(raw_format_parse("512x640", "u16", "big", "128", &f, err, sizeof err), PLM_OK);
  ck_assert(f.height == 512 && f.width == 640 && f.dtype == PLM_DTYPE_U16 && f.big_endian &&
            f.header_bytes == 128);
  ck_assert_uint_eq(raw_format_frame_bytes(&f), 512 * 640 * 2);
  ck_assert_int_eq(raw_format_parse("3,4", NULL, NULL, NULL, &f, err, sizeof err), PLM_OK);
  ck_assert(f.height == 3 && f.width == 4 && f.dtype == PLM_DTYPE_U8 && !f.big_endian &&
            f.header_bytes == 0);
  ck_assert_int_eq(raw_format_parse("1x1", "f32", "little", "0", &f, err, sizeof err), PLM_OK);
  ck_assert(f.dtype == PLM_DTYPE_F32 && !f.big_endian);
  const char *shapes[] = {"512",  "512x",  "x512", "0x4",         "4x0",
                          "-4x4", "4x4x4", "4 x4", "65536x65537", ""};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
    expect_message(raw_format_parse(shapes[i], NULL, NULL, NULL, &f, err, sizeof err),
                   PLM_ERR_INVALID_ARG, "--raw-shape", "HxW");
  expect_message(raw_format_parse(NULL, "u8", NULL, NULL, &f, err, sizeof err), PLM_ERR_INVALID_ARG,
                 "--raw-shape", "required");
  expect_message(raw_format_parse("2x2", "i16", NULL, NULL, &f, err, sizeof err),
                 PLM_ERR_INVALID_ARG, "--raw-dtype 'i16'", "u8, u16 or f32");
  expect_message(raw_format_parse("2x2", NULL, "middle", NULL, &f, err, sizeof err),
                 PLM_ERR_INVALID_ARG, "--raw-endian 'middle'", "little or big");
  expect_message(raw_format_parse("2x2", NULL, NULL, "-1", &f, err, sizeof err),
                 PLM_ERR_INVALID_ARG, "--raw-header '-1'", "count of bytes");
  ck_assert_int_eq(raw_format_parse("2x2", NULL, NULL, NULL, NULL, err, sizeof err),
                   PLM_ERR_INVALID_ARG);
}
END_TEST

/* ---- files -------------------------------------------------------------------------------- */

START_TEST(test_a_file_gives_its_frames_in_any_order_and_byte_order) {
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  unsigned char bytes[HEADER + N * FRAME * 4], expect[N * FRAME * 4], got[FRAME * 4];
  for (int d = 0; d < 3; d++)
    for (int big = 0; big < 2; big++) {
      const size_t length = make_input(dtypes[d], big, bytes, expect);
      const char *path = scratch_path(dir, "frames.raw");
      write_bytes(path, bytes, length);
      const raw_format format = format_of(dtypes[d], big);
      const size_t frame_bytes = raw_format_frame_bytes(&format);
      raw_frames *f = NULL;
      int64_t count = 0;
      ck_assert_msg(raw_frames_open(path, &format, &count, &f, err, sizeof err) == PLM_OK, "%s",
                    err);
      ck_assert_int_eq(count, N);
      ck_assert_str_eq(raw_frames_name(f), path);
      const int order[] = {2, 0, 3, 1, 2};
      for (int j = 0; j < 5; j++) {
        bool end = true;
        ck_assert_msg(raw_frames_read(f, order[j], got, &end, err, sizeof err) == PLM_OK, "%s",
                      err);
        ck_assert(!end);
        ck_assert_msg(memcmp(got, expect + (size_t)order[j] * frame_bytes, frame_bytes) == 0,
                      "%s %s-endian frame %d differs", plm_dtype_name(dtypes[d]),
                      big ? "big" : "little", order[j]);
      }
      bool end = false;
      expect_message(raw_frames_read(f, N, got, &end, err, sizeof err), PLM_ERR_INVALID_ARG,
                     "frame 4 is not in 0..3", NULL);
      raw_frames_close(f);
    }
}
END_TEST

START_TEST(test_a_wrong_file_is_refused_at_open_naming_what_is_wrong) {
  unsigned char bytes[HEADER + N * FRAME * 4], expect[N * FRAME * 4];
  const size_t length = make_input(PLM_DTYPE_U16, false, bytes, expect);
  const char *path = scratch_path(dir, "short.raw");
  const raw_format format = format_of(PLM_DTYPE_U16, false);
  raw_frames *f = NULL;
  int64_t count = 0;
  /* The last frame short by 3 bytes: frame 3 has 27 of its 30. */
  write_bytes(path, bytes, length - 3);
  expect_message(raw_frames_open(path, &format, &count, &f, err, sizeof err), PLM_ERR_IO,
                 "short.raw: frame 3 is short: 27 of 30 bytes, 3 missing", NULL);
  ck_assert_ptr_null(f);
  write_bytes(path, bytes, HEADER);
  expect_message(raw_frames_open(path, &format, &count, &f, err, sizeof err), PLM_ERR_IO,
                 "short.raw", "no frames after its header of 7 bytes");
  write_bytes(path, bytes, HEADER - 2);
  expect_message(raw_frames_open(path, &format, &count, &f, err, sizeof err), PLM_ERR_IO,
                 "short.raw: 5 bytes, fewer than its header of 7 bytes", NULL);
  expect_message(
      raw_frames_open(scratch_path(dir, "none.raw"), &format, &count, &f, err, sizeof err),
      PLM_ERR_IO, "none.raw: cannot open", NULL);
  expect_message(raw_frames_open(dir, &format, &count, &f, err, sizeof err), PLM_ERR_IO,
                 "neither a file nor a stream (it is a folder)", NULL);
  raw_format bad = format;
  bad.height = 0;
  expect_message(raw_frames_open(path, &bad, &count, &f, err, sizeof err), PLM_ERR_INVALID_ARG,
                 "not a frame format", NULL);
  ck_assert_int_eq(raw_frames_open(NULL, &format, &count, &f, err, sizeof err),
                   PLM_ERR_INVALID_ARG);
  raw_frames_close(NULL);
}
END_TEST

/* ---- streams ------------------------------------------------------------------------------ */

START_TEST(test_stdin_is_read_in_order_to_its_end) {
  unsigned char bytes[HEADER + N * FRAME * 4], expect[N * FRAME * 4], got[FRAME * 4];
  const size_t length = make_input(PLM_DTYPE_F32, true, bytes, expect);
  const int saved = stdin_from(bytes, length);
  const raw_format format = format_of(PLM_DTYPE_F32, true);
  const size_t frame_bytes = raw_format_frame_bytes(&format);
  frame_reader *r = NULL;
  frame_reader_info info;
  ck_assert_msg(frame_reader_open_raw("-", &format, &info, &r, err, sizeof err) == PLM_OK, "%s",
                err);
  ck_assert(info.count == -1 && info.dtype == PLM_DTYPE_F32 && info.height == H &&
            info.width == W && !info.folder);
  ck_assert_str_eq(frame_reader_file(r, 0), "stdin");
  bool end = false;
  expect_message(frame_reader_next(r, 1, got, &end, err, sizeof err), PLM_ERR_INVALID_ARG,
                 "stdin: frame 1 asked for", "frame 0 next");
  for (int k = 0; k < N; k++) {
    ck_assert_msg(frame_reader_next(r, k, got, &end, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert(!end);
    ck_assert_msg(memcmp(got, expect + (size_t)k * frame_bytes, frame_bytes) == 0,
                  "frame %d differs", k);
  }
  memset(got, 0x5a, sizeof got);
  ck_assert_int_eq(frame_reader_next(r, N, got, &end, err, sizeof err), PLM_OK);
  ck_assert(end);
  ck_assert_int_eq(got[0], 0x5a);
  /* frame_reader_read, which has no end to tell, calls the end an error. */
  expect_message(frame_reader_read(r, N, got, err, sizeof err), PLM_ERR_IO,
                 "stdin: the input ended before frame 4", NULL);
  frame_reader_close(r);
  put_back_stdin(saved);
}
END_TEST

START_TEST(test_a_stream_that_ends_wrong_names_the_frame) {
  unsigned char bytes[HEADER + N * FRAME * 4], expect[N * FRAME * 4], got[FRAME * 4];
  const size_t length = make_input(PLM_DTYPE_U16, false, bytes, expect);
  const raw_format format = format_of(PLM_DTYPE_U16, false);
  raw_frames *f = NULL;
  int64_t count = 0;
  bool end = false;
  /* Short by 10 bytes: frames 0..2 are whole, frame 3 has 20 of its 30. */
  int saved = stdin_from(bytes, length - 10);
  ck_assert_msg(raw_frames_open("-", &format, &count, &f, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(count, -1);
  for (int k = 0; k < 3; k++)
    ck_assert_int_eq(raw_frames_read(f, k, got, &end, err, sizeof err), PLM_OK);
  expect_message(raw_frames_read(f, 3, got, &end, err, sizeof err), PLM_ERR_IO,
                 "stdin: frame 3 is short: 20 of 30 bytes, 10 missing", NULL);
  raw_frames_close(f);
  put_back_stdin(saved);
  /* The header alone: no frames, said at frame 0. */
  saved = stdin_from(bytes, HEADER);
  ck_assert_int_eq(raw_frames_open("-", &format, &count, &f, err, sizeof err), PLM_OK);
  expect_message(raw_frames_read(f, 0, got, &end, err, sizeof err), PLM_ERR_IO, "stdin: no frames",
                 "after its header");
  raw_frames_close(f);
  put_back_stdin(saved);
  /* Less than the header: refused at open. */
  saved = stdin_from(bytes, HEADER - 1);
  expect_message(raw_frames_open("-", &format, &count, &f, err, sizeof err), PLM_ERR_IO,
                 "stdin: the input ended in its header: 6 of 7 bytes", NULL);
  ck_assert_ptr_null(f);
  put_back_stdin(saved);
}
END_TEST

START_TEST(test_a_file_through_the_frame_reader_ends_at_its_count) {
  unsigned char bytes[HEADER + N * FRAME * 4], expect[N * FRAME * 4], got[FRAME * 4];
  const size_t length = make_input(PLM_DTYPE_U8, false, bytes, expect);
  const char *path = scratch_path(dir, "u8.raw");
  write_bytes(path, bytes, length);
  const raw_format format = format_of(PLM_DTYPE_U8, false);
  frame_reader *r = NULL;
  frame_reader_info info;
  ck_assert_msg(frame_reader_open_raw(path, &format, &info, &r, err, sizeof err) == PLM_OK, "%s",
                err);
  ck_assert(info.count == N && info.dtype == PLM_DTYPE_U8);
  bool end = true;
  ck_assert_int_eq(frame_reader_next(r, 3, got, &end, err, sizeof err), PLM_OK);
  ck_assert(!end);
  ck_assert(memcmp(got, expect + 3 * FRAME, FRAME) == 0);
  ck_assert_int_eq(frame_reader_read(r, 1, got, err, sizeof err), PLM_OK);
  ck_assert(memcmp(got, expect + FRAME, FRAME) == 0);
  ck_assert_int_eq(frame_reader_next(r, N, got, &end, err, sizeof err), PLM_OK);
  ck_assert(end);
  ck_assert_int_eq(frame_reader_next(r, 0, got, NULL, err, sizeof err), PLM_ERR_INVALID_ARG);
  frame_reader_close(r);
  ck_assert_int_eq(frame_reader_open_raw(path, NULL, &info, &r, err, sizeof err),
                   PLM_ERR_INVALID_ARG);
}
END_TEST

/* ---- FIFOs ------------------------------------------------------------------------------ */

enum { WATCHDOG_SECONDS = 60 }; /* a hang ends the test (SIGALRM) rather than ctest's timeout */

/* Read a FIFO's raw stream of N u16 frames through raw_frames and check it equals expect. */
static void expect_fifo_frames(const char *path, const unsigned char *expect) {
  const raw_format format = format_of(PLM_DTYPE_U16, false);
  const size_t frame_bytes = raw_format_frame_bytes(&format);
  unsigned char got[FRAME * 2];
  raw_frames *f = NULL;
  int64_t count = 0;
  bool end = false;
  ck_assert_msg(raw_frames_open(path, &format, &count, &f, err, sizeof err) == PLM_OK, "%s", err);
  ck_assert_int_eq(count, -1);
  for (int k = 0; k < N; k++) {
    ck_assert_msg(raw_frames_read(f, k, got, &end, err, sizeof err) == PLM_OK, "%s", err);
    ck_assert(!end);
    ck_assert_msg(memcmp(got, expect + (size_t)k * frame_bytes, frame_bytes) == 0,
                  "frame %d differs", k);
  }
  ck_assert_int_eq(raw_frames_read(f, N, got, &end, err, sizeof err), PLM_OK);
  ck_assert(end);
  raw_frames_close(f);
}

/* Start a FIFO check: the watchdog set, the FIFO made at name in the scratch folder (its
 * path in *path), N u16 frames after the header in bytes (expect: the frames as read). */
static size_t fifo_check_begin(const char *name, const char **path, unsigned char *bytes,
                               unsigned char *expect) {
  alarm(WATCHDOG_SECONDS);
  const size_t length = make_input(PLM_DTYPE_U16, false, bytes, expect);
  *path = scratch_path(dir, name);
  ck_assert_int_eq(mkfifo(*path, 0600), 0);
  return length;
}

START_TEST(test_a_fifo_keeps_what_a_writer_left_in_it) {
  unsigned char bytes[HEADER + N * FRAME * 2], expect[N * FRAME * 2];
  const char *path = NULL;
  const size_t length = fifo_check_begin("left.fifo", &path, bytes, expect);
  /* Another reader holds the pipe while a writer puts the whole stream in it and leaves. */
  const int holder = open(path, O_RDONLY | O_NONBLOCK);
  ck_assert_int_ge(holder, 0);
  const int writer = open(path, O_WRONLY);
  ck_assert_int_ge(writer, 0);
  ck_assert_int_eq(write(writer, bytes, length), (ssize_t)length);
  ck_assert_int_eq(close(writer), 0);
  expect_fifo_frames(path, expect);
  ck_assert_int_eq(close(holder), 0);
  alarm(0);
}
END_TEST

typedef struct fifo_writer {
  const char *path;
  const unsigned char *bytes;
  size_t length;
} fifo_writer;

/* As `cat input > fifo &`: open (waiting for the reader), write it all, close. */
static void *write_fifo(void *arg) {
  const fifo_writer *w = arg;
  const int fd = open(w->path, O_WRONLY);
  if (fd >= 0) {
    for (size_t done = 0; done < w->length;) {
      const ssize_t n = write(fd, w->bytes + done, w->length - done);
      if (n <= 0) break;
      done += (size_t)n;
    }
    close(fd);
  }
  return NULL;
}

START_TEST(test_a_fifo_whose_writer_comes_at_the_open_gives_its_stream) {
  unsigned char bytes[HEADER + N * FRAME * 2], expect[N * FRAME * 2];
  const char *path = NULL;
  const size_t length = fifo_check_begin("racing.fifo", &path, bytes, expect);
  for (int attempt = 0; attempt < 300; attempt++) {
    fifo_writer w = {.path = path, .bytes = bytes, .length = length};
    pthread_t thread;
    ck_assert_int_eq(pthread_create(&thread, NULL, write_fifo, &w), 0);
    expect_fifo_frames(path, expect);
    ck_assert_int_eq(pthread_join(thread, NULL), 0);
  }
  alarm(0);
}
END_TEST

static void sleep_ms(long ms) {
  const struct timespec pause = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L};
  nanosleep(&pause, NULL);
}

/* The opener of commands that take regular files only (support/regular_file.h, through
 * plm__file_open_regular) refuses a FIFO without opening it: a writer waiting on it (a
 * child process, as `cat x > fifo &`) stays waiting, and once a real reader comes its
 * write arrives, rather than the refusal's open and close letting it through to write
 * into a pipe with no reader (SIGPIPE). The writer writes 200 ms after its open returns;
 * the reader comes 400 ms after the refusal. */
START_TEST(test_a_fifo_is_refused_without_letting_its_writer_through) {
  alarm(WATCHDOG_SECONDS);
  const char *path = scratch_path(dir, "refused.fifo");
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  const pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    const int fd = open(path, O_WRONLY);
    if (fd < 0) _exit(3);
    sleep_ms(200);
    _exit(write(fd, "x", 1) == 1 ? 0 : 4);
  }
  sleep_ms(50); /* the child waits in its open */
  struct stat st;
  FILE *refused = file_open_read(path, &st, err, sizeof err);
  ck_assert_ptr_null(refused);
  ck_assert_msg(strstr(err, "not a regular file (it is a FIFO)") != NULL, "%s", err);
  sleep_ms(400);
  /* The reader waits 5 s at most for the byte: a writer gone (dead of SIGPIPE) never
   * writes, and poll then tells nothing. */
  const int reader = open(path, O_RDONLY | O_NONBLOCK);
  ck_assert_int_ge(reader, 0);
  struct pollfd wait_for_byte = {.fd = reader, .events = POLLIN};
  char got = 0;
  const bool arrived = poll(&wait_for_byte, 1, 5000) == 1 && read(reader, &got, 1) == 1;
  if (!arrived) kill(child, SIGKILL);
  int status = 0;
  ck_assert_int_eq(waitpid(child, &status, 0), child);
  ck_assert_msg(arrived && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "the writer's byte %s; the writer %s %d", arrived ? "arrived" : "never came",
                WIFSIGNALED(status) ? "died of signal" : "exited with",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  ck_assert_int_eq(got, 'x');
  ck_assert_int_eq(close(reader), 0);
  alarm(0);
}
END_TEST

static Suite *raw_frames_suite(void) {
  Suite *suite = suite_create("raw_frames");
  TCase *tcase = tcase_create("raw_frames");
  tcase_add_checked_fixture(tcase, make_dir, remove_dir);
  tcase_set_timeout(tcase, 60);
  tcase_add_test(tcase, test_the_options_are_read_or_refused_by_name);
  tcase_add_test(tcase, test_a_file_gives_its_frames_in_any_order_and_byte_order);
  tcase_add_test(tcase, test_a_wrong_file_is_refused_at_open_naming_what_is_wrong);
  tcase_add_test(tcase, test_stdin_is_read_in_order_to_its_end);
  tcase_add_test(tcase, test_a_stream_that_ends_wrong_names_the_frame);
  tcase_add_test(tcase, test_a_file_through_the_frame_reader_ends_at_its_count);
  tcase_add_test(tcase, test_a_fifo_keeps_what_a_writer_left_in_it);
  tcase_add_test(tcase, test_a_fifo_whose_writer_comes_at_the_open_gives_its_stream);
  tcase_add_test(tcase, test_a_fifo_is_refused_without_letting_its_writer_through);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  SRunner *runner = srunner_create(raw_frames_suite());
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

/* tests/test_video_absent.c: support/video_io.h as a build without FFmpeg (cmake
 * -DPLUME_VIDEO=OFF) has it, support/video_io_absent.c, built into this test in every build.
 *
 * The fixture videos of the four containers (tests/fixtures/video) are still known for
 * videos by their first bytes and refused with PLM_ERR_UNSUPPORTED, in a one-line message
 * naming the file, its container and the option; the descriptor is taken (closed) whatever
 * the answer; a pipe is read from where it stands; bytes of no container are PLM_ERR_IO as
 * in the build with FFmpeg; NULL arguments are PLM_ERR_INVALID_ARG; nothing is ever open,
 * so reads and counts of none fail and closing none is a no-op. A plain unit test.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/image_io.h"
#include "support/video_io.h"
#include "image_file_checks.h"

static char err[256];

/* The fixture's descriptor, open for reading. */
static int open_fixture(const char *name, const char *extension) {
  const char *path = fixture_file("video", name, extension);
  int fd = open(path, O_RDONLY);
  ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
  return fd;
}

static void expect_taken(int fd) {
  errno = 0;
  ck_assert_msg(fcntl(fd, F_GETFD) == -1 && errno == EBADF, "descriptor %d was left open", fd);
}

START_TEST(test_each_container_is_named_and_refused) {
  static const struct {
    const char *name, *extension, *title;
  } videos[] = {{"gray16-ffv1", "mkv", "Matroska"},
                {"gray8-ffv1", "avi", "AVI"},
                {"gray8-mpeg4", "mp4", "QuickTime/MP4"},
                {"gray8-raw", "nut", "NUT"}};
  for (size_t i = 0; i < sizeof videos / sizeof *videos; i++) {
    int fd = open_fixture(videos[i].name, videos[i].extension);
    video_info info;
    video_frames *v = (video_frames *)&info; /* must come back NULL */
    char path[64];
    snprintf(path, sizeof path, "%s.%s", videos[i].name, videos[i].extension);
    plm_status status = video_frames_open(fd, path, &info, &v, err, sizeof err);
    expect_image_message(status, PLM_ERR_UNSUPPORTED, err, path, "-DPLUME_VIDEO=OFF");
    char container[64];
    snprintf(container, sizeof container, "a %s video", videos[i].title);
    expect_image_message(status, PLM_ERR_UNSUPPORTED, err, container, "without FFmpeg");
    ck_assert_ptr_null(v);
    expect_taken(fd);
  }
}
END_TEST

START_TEST(test_memory_and_pipes_are_refused_alike) {
  unsigned char head[VIDEO_MAGIC_BYTES];
  int fd = open_fixture("gray8-raw", "nut");
  ck_assert_int_eq(read(fd, head, sizeof head), (ssize_t)sizeof head);
  close(fd);
  video_info info;
  video_frames *v = NULL;
  expect_image_message(
      video_frames_open_memory(head, sizeof head, "clip", &info, &v, err, sizeof err),
      PLM_ERR_UNSUPPORTED, err, "clip: a NUT video", "PLUME_VIDEO=OFF");
  ck_assert_ptr_null(v);
  int pipe_fds[2];
  ck_assert_int_eq(pipe(pipe_fds), 0);
  ck_assert_int_eq(write(pipe_fds[1], head, sizeof head), (ssize_t)sizeof head);
  close(pipe_fds[1]);
  expect_image_message(video_frames_open(pipe_fds[0], "-", &info, &v, err, sizeof err),
                       PLM_ERR_UNSUPPORTED, err, "-: a NUT video", "PLUME_VIDEO=OFF");
  expect_taken(pipe_fds[0]);
}
END_TEST

START_TEST(test_other_bytes_are_no_video) {
  int fd = open_fixture("gray8-raw", "npy");
  video_info info;
  video_frames *v = NULL;
  expect_image_message(video_frames_open(fd, "frames.npy", &info, &v, err, sizeof err), PLM_ERR_IO,
                       err, "frames.npy: not a video file", "unknown first bytes");
  expect_taken(fd);
  expect_image_message(video_frames_open_memory("", 0, "empty", &info, &v, err, sizeof err),
                       PLM_ERR_IO, err, "empty: not a video file", NULL);
  int pipe_fds[2]; /* a stream of raw frames is pointed at plume detect's --raw-* options */
  ck_assert_int_eq(pipe(pipe_fds), 0);
  ck_assert_int_eq(write(pipe_fds[1], "\x01\x02\x03\x04", 4), 4);
  close(pipe_fds[1]);
  expect_image_message(video_frames_open(pipe_fds[0], "-", &info, &v, err, sizeof err), PLM_ERR_IO,
                       err, "-: not a video file", "--raw-shape");
  expect_taken(pipe_fds[0]);
  ck_assert(!video_magic(NULL, 4));
  ck_assert_str_eq(video_container_title(VIDEO_CONTAINER_NONE), "none");
}
END_TEST

START_TEST(test_bad_arguments_and_nothing_open) {
  video_info info;
  video_frames *v = NULL;
  int fd = open_fixture("gray8-raw", "nut");
  expect_image_message(video_frames_open(fd, "x.nut", &info, NULL, err, sizeof err),
                       PLM_ERR_INVALID_ARG, err, "out is NULL", NULL);
  expect_taken(fd);
  expect_image_message(video_frames_open_memory(NULL, 8, "x", &info, &v, err, sizeof err),
                       PLM_ERR_INVALID_ARG, err, "bytes is NULL", NULL);
  bool end = false;
  unsigned char pixel;
  expect_image_message(video_frames_read(NULL, 0, &pixel, &end, err, sizeof err),
                       PLM_ERR_INVALID_ARG, err, "this build reads no video", NULL);
  int64_t count = 7;
  expect_image_message(video_frames_count_all(NULL, &count, err, sizeof err), PLM_ERR_INVALID_ARG,
                       err, "this build reads no video", NULL);
  ck_assert_int_eq(count, -1);
  ck_assert_int_eq(video_frames_count(NULL), -1);
  video_frames_close(NULL);
  video_io_as_guest();
}
END_TEST

int main(void) {
  Suite *suite = suite_create("video_absent");
  TCase *tcase = tcase_create("video_absent");
  tcase_add_test(tcase, test_each_container_is_named_and_refused);
  tcase_add_test(tcase, test_memory_and_pipes_are_refused_alike);
  tcase_add_test(tcase, test_other_bytes_are_no_video);
  tcase_add_test(tcase, test_bad_arguments_and_nothing_open);
  suite_add_tcase(suite, tcase);
  SRunner *runner = srunner_create(suite);
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  const int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

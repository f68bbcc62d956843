/* tests/test_host_process.c: plume inside another program, whose process state it must
 * leave as it found it and not depend on: the locale, the umask, SIGPIPE's default action
 * (streams/c_numbers.h, streams/ascii.h, streams/file.c).
 *
 * The locale. The program here does what a Qt or GTK application does at its start,
 * setlocale(LC_ALL, "") with LANG=de_DE.UTF-8: its printf writes 1.5 as "1,5" and its strtod
 * stops at the point of "1.5". The locale is compiled for the test by glibc's localedef from
 * the `locales` package's de_DE source into a scratch folder (LOCPATH), so that no machine
 * setting is needed; the test fails, naming the package, where it cannot be made, and checks
 * first that printf does write "1,5", so that it cannot pass for want of the locale.
 * Then, through the public API on the host backend: a text pipeline with fractional
 * parameters parses (it was refused: "'1.5' is not a finite number"), a conv2d kernel's
 * sigma and the default and robust presets too, plm_pipeline_describe writes them back with a
 * point; the calibration cache's line (which any later process reads back as C does) and
 * report.html's numbers (SVG coordinates among them) are written with points; and afterwards
 * the program's locale is as it set it, in this thread too.
 *
 * A Turkish locale, whose 'I' is not the capital of 'i' to strcasecmp: a folder's "A.FITS"
 * is a frame to libplume_io all the same (streams/ascii.h).
 *
 * The umask. Writing a profile creates its files with the program's umask applied (027:
 * 0640) and never calls umask (this program's umask, which comes before libc's for the
 * libraries it loads, counts the calls): reading it means setting it, process-wide, and a
 * file another thread created meanwhile got 0666 (a helper's race test saw 84 of 1.5 million).
 *
 * SIGPIPE. report.html is a FIFO whose reader (a child process) takes 4 KiB into a pipe of
 * 4 KiB, then goes: the write fails with PLM_ERR_IO and "Broken pipe", where SIGPIPE's default
 * action used to end this program; its disposition and the thread's mask are as before.
 */
#define _GNU_SOURCE /* syscall */

#include <check.h>
#include <ctype.h>
#include <fcntl.h>
#include <locale.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plume/io.h"
#include "plume/plume.h"

static char scratch[] = "/tmp/plume-test-process-XXXXXX";

/* Compile glibc's locale `name` (de_DE.UTF-8, tr_TR.UTF-8) from the locales package's source
 * into the scratch folder and set it as a program's setlocale(LC_ALL, "") would. */
static void set_locale(const char *name) {
  ck_assert_ptr_nonnull(mkdtemp(scratch));
  char source[16], command[600];
  snprintf(source, sizeof source, "%.5s", name);
  snprintf(command, sizeof command, "localedef -i %s -f UTF-8 %s/%s >%s/localedef.log 2>&1", source,
           scratch, name, scratch);
  const int made = system(command);
  ck_assert_msg(made == 0,
                "localedef could not make %s (%s/localedef.log): it needs Debian's locales "
                "package, which scripts/install-deps installs",
                name, scratch);
  setenv("LOCPATH", scratch, 1);
  ck_assert_ptr_nonnull(setlocale(LC_ALL, name));
}

/* A comma locale made for this process, set as a program's setlocale(LC_ALL, "") would. */
static void set_comma_locale(void) {
  set_locale("de_DE.UTF-8");
  char text[16];
  snprintf(text, sizeof text, "%g", 1.5);
  ck_assert_msg(strcmp(text, "1,5") == 0, "the locale prints 1.5 as '%s', not '1,5'", text);
}

/* The program's locale, process and thread, as set_comma_locale left it. */
static void expect_comma_locale_kept(void) {
  const char *numeric = setlocale(LC_NUMERIC, NULL);
  ck_assert_ptr_nonnull(numeric);
  ck_assert_str_eq(numeric, "de_DE.UTF-8");
  char text[16];
  snprintf(text, sizeof text, "%g", 0.25);
  ck_assert_str_eq(text, "0,25");
  ck_assert_double_eq(strtod("0,25", NULL), 0.25);
}

static void remove_scratch(void) {
  char command[600];
  snprintf(command, sizeof command, "rm -rf '%s'", scratch);
  ck_assert_int_eq(system(command), 0);
}

static plm_context *host_context(void) {
  const plm_context_config cfg = {.backend = PLM_BACKEND_HOST};
  plm_context *ctx = NULL;
  ck_assert_msg(plm_context_create(&cfg, &ctx) == PLM_OK, "%s", plm_last_error());
  return ctx;
}

START_TEST(test_pipeline_numbers_read_and_write_with_a_point) {
  set_comma_locale();
  plm_context *ctx = host_context();
  const int64_t dims[2] = {64, 64};
  plm_pipeline *pl = NULL;
  ck_assert_msg(plm_pipeline_parse(ctx, "cfar window=15 guard=5 k=1.5 ! threshold value=0.25",
                                   PLM_DTYPE_F32, 2, dims, &pl) == PLM_OK,
                "%s", plm_last_error());
  char text[4096];
  ck_assert_int_eq(plm_pipeline_describe(pl, text, sizeof text, NULL), PLM_OK);
  ck_assert_msg(strstr(text, "k=1.5") && strstr(text, "value=0.25"), "%s", text);
  ck_assert_int_eq(plm_pipeline_destroy(pl), PLM_OK);
  pl = NULL;
  ck_assert_msg(
      plm_pipeline_parse(ctx, "conv2d kernel=gauss:5:1.5", PLM_DTYPE_F32, 2, dims, &pl) == PLM_OK,
      "%s", plm_last_error());
  ck_assert_int_eq(plm_pipeline_destroy(pl), PLM_OK);
  /* The presets: "log:9:1.5", "alpha=0.05", "k=5.5". */
  const char *const presets[] = {"default", "robust"};
  for (int k = 0; k < 2; k++) {
    pl = NULL;
    ck_assert_msg(plm_pipeline_parse(ctx, plm_pipeline_preset(presets[k])->pipeline, PLM_DTYPE_F32,
                                     2, dims, &pl) == PLM_OK,
                  "%s: %s", presets[k], plm_last_error());
    ck_assert_int_eq(plm_pipeline_destroy(pl), PLM_OK);
  }
  /* A comma is still no decimal separator to plume: "1,5" is refused, naming it. */
  pl = NULL;
  ck_assert_int_eq(plm_pipeline_parse(ctx, "cfar k=1,5", PLM_DTYPE_F32, 2, dims, &pl),
                   PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(plm_last_error(), "'1,5'"));
  ck_assert_int_eq(plm_context_destroy(ctx), PLM_OK);
  expect_comma_locale_kept();
  remove_scratch();
}
END_TEST

/* The whole file's bytes, NUL-terminated (free them). */
static char *file_text(const char *path) {
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "no %s", path);
  ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
  const long size = ftell(f);
  ck_assert_int_ge(size, 0);
  rewind(f);
  char *text = malloc((size_t)size + 1);
  ck_assert_ptr_nonnull(text);
  ck_assert_uint_eq(fread(text, 1, (size_t)size, f), (size_t)size);
  text[size] = '\0';
  fclose(f);
  return text;
}

static bool matches(const char *text, const char *pattern) {
  regex_t re;
  ck_assert_int_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
  const bool found = regexec(&re, text, 0, NULL, 0) == 0;
  regfree(&re);
  return found;
}

START_TEST(test_calibration_and_report_numbers_have_a_point) {
  set_comma_locale();
  char cache[600], path[700];
  snprintf(cache, sizeof cache, "%s/cache", scratch);
  setenv("XDG_CACHE_HOME", cache, 1);
  setenv("PLUME_CALIBRATION_CACHE", "refresh", 1); /* measured here, its line written */
  plm_context *ctx = host_context();
  plm_profiler *measured = NULL;
  ck_assert_msg(plm_profiler_create(ctx, NULL, &measured) == PLM_OK, "%s", plm_last_error());
  plm_profile_calibration a;
  ck_assert_int_eq(plm_profiler_calibration(measured, &a), PLM_OK);
  ck_assert(!a.from_cache && a.device_copy_gbps > 0 && a.fma_gflops > 0);
  snprintf(path, sizeof path, "%s/plume/calibration.tsv", cache);
  char *line = file_text(path);
  ck_assert_msg(!matches(line, "[0-9],[0-9]") && matches(line, "\t[0-9]+\\.[0-9]+"),
                "the cache's line: %s", line);
  free(line);
  /* A profiled run of two ops, then report.html: its numbers and SVG coordinates. */
  plm_profiler_config cfg = plm_profiler_config_default();
  cfg.calibrate = false;
  plm_profiler *p = NULL;
  ck_assert_int_eq(plm_profiler_create(ctx, &cfg, &p), PLM_OK);
  plm_stream *stream = NULL;
  ck_assert_int_eq(plm_stream_create(ctx, 0, &stream), PLM_OK);
  for (int k = 0; k < 3; k++) {
    plm_profile_mark mark;
    ck_assert_int_eq(plm_profiler_begin(p, stream, "first", k, NULL, &mark), PLM_OK);
    ck_assert_int_eq(plm_profiler_end(p, stream, &mark), PLM_OK);
    ck_assert_int_eq(plm_profiler_begin(p, stream, "second", k, NULL, &mark), PLM_OK);
    ck_assert_int_eq(plm_profiler_end(p, stream, &mark), PLM_OK);
  }
  ck_assert_int_eq(plm_stream_synchronize(stream), PLM_OK);
  char report[600];
  snprintf(report, sizeof report, "%s/report", scratch);
  ck_assert_msg(plm_profiler_write(p, report, NULL) == PLM_OK, "%s", plm_last_error());
  snprintf(path, sizeof path, "%s/report.html", report);
  char *html = file_text(path);
  ck_assert_msg(matches(html, "=\"[0-9]+\\.[0-9]"), "report.html has no fractional attribute");
  ck_assert_msg(!matches(html, "=\"[0-9]+,[0-9]"), "report.html has an attribute with a comma");
  ck_assert_msg(!matches(html, ">[0-9]+,[0-9]+<"), "report.html has a number with a comma");
  free(html);

  ck_assert_int_eq(plm_stream_destroy(stream), PLM_OK);
  ck_assert_int_eq(plm_profiler_destroy(p), PLM_OK);
  ck_assert_int_eq(plm_profiler_destroy(measured), PLM_OK);
  ck_assert_int_eq(plm_context_destroy(ctx), PLM_OK);
  expect_comma_locale_kept();
  remove_scratch();
}
END_TEST

/* A folder's "A.FITS" under tr_TR, where glibc's strcasecmp(".FITS", ".fits") is not 0 ('I'
 * is not the capital of 'i' there): a frame all the same, as in every other locale. */
START_TEST(test_extensions_match_in_a_turkish_locale) {
  set_locale("tr_TR.UTF-8");
  /* tolower, not strcasecmp: a sanitizer's strcasecmp folds ASCII whatever the locale. */
  ck_assert_msg(tolower('I') != 'i', "the locale folds 'I' to 'i'");
  static const char *const cards[] = {
      "SIMPLE  =                    T", "BITPIX  =                    8",
      "NAXIS   =                    2", "NAXIS1  =                    3",
      "NAXIS2  =                    2", "END"};
  unsigned char fits[2 * 2880];
  memset(fits, ' ', 2880);
  for (size_t c = 0; c < sizeof cards / sizeof *cards; c++)
    memcpy(fits + 80 * c, cards[c], strlen(cards[c]));
  memset(fits + 2880, 0, 2880);
  for (int i = 0; i < 6; i++) fits[2880 + i] = (unsigned char)(10 * i);
  char folder[600], path[700];
  snprintf(folder, sizeof folder, "%s/frames", scratch);
  ck_assert_int_eq(mkdir(folder, 0700), 0);
  snprintf(path, sizeof path, "%s/A.FITS", folder);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(fits, 1, sizeof fits, f), sizeof fits);
  ck_assert_int_eq(fclose(f), 0);
  plm_frames *frames = NULL;
  ck_assert_msg(plm_frames_open(folder, 0, &frames) == PLM_OK, "%s", plm_frames_last_error());
  plm_frames_info info;
  ck_assert_int_eq(plm_frames_info_get(frames, &info), PLM_OK);
  ck_assert_int_eq(info.count, 1);
  plm_frames_close(frames);
  remove_scratch();
}
END_TEST

/* ---- the umask and SIGPIPE ---------------------------------------------------------------- */

/* umask as libc's, counting the calls. */
static int umask_calls;
mode_t umask(mode_t mask) {
  umask_calls++;
  return (mode_t)syscall(SYS_umask, mask);
}

/* A profiler of two launches of nothing, recorded on a stream of ctx's. */
static plm_profiler *profiled(plm_context *ctx, plm_stream **stream) {
  plm_profiler_config cfg = plm_profiler_config_default();
  cfg.calibrate = false;
  plm_profiler *p = NULL;
  ck_assert_int_eq(plm_profiler_create(ctx, &cfg, &p), PLM_OK);
  ck_assert_int_eq(plm_stream_create(ctx, 0, stream), PLM_OK);
  for (int k = 0; k < 2; k++) {
    plm_profile_mark mark;
    ck_assert_int_eq(plm_profiler_begin(p, *stream, "nothing", k, NULL, &mark), PLM_OK);
    ck_assert_int_eq(plm_profiler_end(p, *stream, &mark), PLM_OK);
  }
  ck_assert_int_eq(plm_stream_synchronize(*stream), PLM_OK);
  return p;
}

START_TEST(test_files_take_the_umask_without_setting_it) {
  ck_assert_ptr_nonnull(mkdtemp(scratch));
  umask(027);
  umask_calls = 0;
  plm_context *ctx = host_context();
  plm_stream *stream = NULL;
  plm_profiler *p = profiled(ctx, &stream);
  ck_assert_msg(plm_profiler_write(p, scratch, NULL) == PLM_OK, "%s", plm_last_error());
  ck_assert_msg(umask_calls == 0, "plume set the process's umask %d times", umask_calls);
  char path[600];
  snprintf(path, sizeof path, "%s/report.html", scratch);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_msg((st.st_mode & 0777) == 0640, "report.html is %o, not 0640 (umask 027)",
                (unsigned)(st.st_mode & 0777));
  ck_assert_int_eq(plm_stream_destroy(stream), PLM_OK);
  ck_assert_int_eq(plm_profiler_destroy(p), PLM_OK);
  ck_assert_int_eq(plm_context_destroy(ctx), PLM_OK);
  remove_scratch();
}
END_TEST

START_TEST(test_a_reader_gone_is_an_error_not_sigpipe) {
  ck_assert_ptr_nonnull(mkdtemp(scratch));
  char fifo[600];
  snprintf(fifo, sizeof fifo, "%s/report.html", scratch);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  int ready[2];
  ck_assert_int_eq(pipe(ready), 0);
  const pid_t reader = fork();
  ck_assert_int_ge(reader, 0);
  if (reader == 0) { /* a pipe of 4 KiB; once the writer has filled it, the reader goes */
    const int fd = open(fifo, O_RDONLY | O_NONBLOCK);
    if (fd < 0 || fcntl(fd, F_SETPIPE_SZ, 4096) < 0 || write(ready[1], "r", 1) != 1) _exit(1);
    struct pollfd data = {.fd = fd, .events = POLLIN};
    if (poll(&data, 1, 30000) != 1) _exit(2);
    usleep(100 * 1000);
    _exit(0);
  }
  char byte;
  ck_assert_int_eq(read(ready[0], &byte, 1), 1);
  plm_context *ctx = host_context();
  plm_stream *stream = NULL;
  plm_profiler *p = profiled(ctx, &stream);
  ck_assert_int_eq(plm_profiler_write(p, scratch, NULL), PLM_ERR_IO);
  ck_assert_msg(strstr(plm_last_error(), "Broken pipe"), "%s", plm_last_error());
  int status = 0;
  ck_assert_int_eq(waitpid(reader, &status, 0), reader);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  struct sigaction action;
  ck_assert_int_eq(sigaction(SIGPIPE, NULL, &action), 0);
  ck_assert(action.sa_handler == SIG_DFL);
  sigset_t mask;
  ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, NULL, &mask), 0);
  ck_assert(!sigismember(&mask, SIGPIPE));
  ck_assert_int_eq(plm_stream_destroy(stream), PLM_OK);
  ck_assert_int_eq(plm_profiler_destroy(p), PLM_OK);
  ck_assert_int_eq(plm_context_destroy(ctx), PLM_OK);
  close(ready[0]);
  close(ready[1]);
  remove_scratch();
}
END_TEST

int main(void) {
  Suite *suite = suite_create("host_process");
  TCase *tcase = tcase_create("core");
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_pipeline_numbers_read_and_write_with_a_point);
  tcase_add_test(tcase, test_calibration_and_report_numbers_have_a_point);
  tcase_add_test(tcase, test_extensions_match_in_a_turkish_locale);
  tcase_add_test(tcase, test_files_take_the_umask_without_setting_it);
  tcase_add_test(tcase, test_a_reader_gone_is_an_error_not_sigpipe);
  suite_add_tcase(suite, tcase);
  SRunner *runner = srunner_create(suite);
  srunner_run_all(runner, CK_NORMAL);
  const int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

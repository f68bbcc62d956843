/* tests/test_output_file.c: outputs committed all or none (support/output_file.h).
 *
 * Each case sets up old files, writes new ones through output_file, makes one step of
 * the commit fail where it can be made to fail on purpose (a write past a file-size
 * limit, as on a full disk; a rename over a folder put in the way), and checks the
 * contract: every path holds its old bytes (or nothing, where it had none), and no
 * temporary file or kept link (*.tmp-*) is left. "-" is standard output, written in place
 * with no temporary file; and the names the commands check before they write: "-", and an
 * extension that is not the format's. A plain unit test: no backend.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checks.h"
#include "scratch_dir.h"
#include "support/image_io.h"
#include "support/output_file.h"
#include "support/regular_file.h"

static char dir[SCRATCH_DIR_SIZE];
static char err[1024];

static void make_dir(void) {
  scratch_dir_make(dir, "output-file");
}

static void remove_dir(void) {
  scratch_dir_remove(dir);
}

/* Files in the test directory whose name contains ".tmp-". */
static int temporaries(void) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".tmp-")) n++;
  closedir(d);
  return n;
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
  ck_assert_int_eq(fclose(f), 0);
}

/* Whether path holds exactly text. */
static bool holds(const char *path, const char *text) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  char buf[256];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return n == strlen(text) && memcmp(buf, text, n) == 0;
}

static output_file *open_with(const char *path, const char *text) {
  output_file *f = NULL;
  ck_assert_int_eq(output_file_open(path, &f, err, sizeof err), PLM_OK);
  ck_assert_int_eq(output_file_write(f, text, strlen(text), err, sizeof err), PLM_OK);
  return f;
}

START_TEST(commit_replaces_every_path) {
  make_dir();
  const char *a = scratch_path(dir, "a.txt"), *b = scratch_path(dir, "b.txt");
  put(a, "old a");
  output_file *files[2] = {open_with(a, "new a"), open_with(b, "new b")};
  ck_assert_int_eq(temporaries(), 2);
  ck_assert(holds(a, "old a")); /* nothing is touched before the commit */
  ck_assert_int_eq(output_files_commit(files, 2, err, sizeof err), PLM_OK);
  ck_assert(holds(a, "new a"));
  ck_assert(holds(b, "new b"));
  ck_assert_int_eq(temporaries(), 0); /* the kept link of a's old file is gone too */
  struct stat st;
  ck_assert_int_eq(stat(a, &st), 0);
  ck_assert_int_eq(st.st_nlink, 1);
  remove_dir();
}
END_TEST

/* The second rename fails (a folder is put where b goes): a gets its old file back, and
 * b, which had none, stays a folder; nothing else is left. */
START_TEST(a_failed_rename_puts_the_old_files_back) {
  make_dir();
  const char *a = scratch_path(dir, "a.txt"), *b = scratch_path(dir, "b"),
             *c = scratch_path(dir, "c.txt");
  put(a, "old a");
  output_file *files[3] = {open_with(c, "new c"), open_with(a, "new a"), open_with(b, "new b")};
  ck_assert_int_eq(mkdir(b, 0755), 0);
  put(scratch_path(dir, "b/inside"), "keeps the folder from being replaced");
  ck_assert_int_eq(output_files_commit(files, 3, err, sizeof err), PLM_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "cannot rename"));
  ck_assert_ptr_nonnull(strstr(err, b));
  ck_assert(holds(a, "old a"));
  ck_assert_int_eq(access(c, F_OK), -1); /* c had no file: it has none again */
  struct stat st;
  ck_assert_int_eq(stat(b, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
  ck_assert_int_eq(temporaries(), 0);
  unlink(scratch_path(dir, "b/inside"));
  remove_dir();
}
END_TEST

/* A write past RLIMIT_FSIZE fails with EFBIG, as on a full disk: in a child, so that the
 * limit and SIGXFSZ stay there. The commit fails before any rename: old files kept. */
START_TEST(a_full_disk_leaves_every_old_file) {
  make_dir();
  const char *a = scratch_path(dir, "a.txt"), *b = scratch_path(dir, "b.txt");
  put(a, "old a");
  put(b, "old b");
  pid_t child = fork();
  ck_assert_int_ne(child, -1);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {.rlim_cur = 64, .rlim_max = 64};
    setrlimit(RLIMIT_FSIZE, &limit);
    char big[256];
    memset(big, 'x', sizeof big);
    output_file *files[2] = {NULL, NULL};
    if (output_file_open(a, &files[0], err, sizeof err) != PLM_OK ||
        output_file_open(b, &files[1], err, sizeof err) != PLM_OK)
      _exit(10);
    output_file_write(files[0], "new a", 5, err, sizeof err);
    output_file_write(files[1], big, sizeof big, err, sizeof err); /* buffered: may pass */
    plm_status status = output_files_commit(files, 2, err, sizeof err);
    _exit(status == PLM_ERR_IO && strstr(err, b) ? 0 : 11);
  }
  int child_status = 0;
  ck_assert_int_eq(waitpid(child, &child_status, 0), child);
  ck_assert(WIFEXITED(child_status));
  ck_assert_int_eq(WEXITSTATUS(child_status), 0);
  ck_assert(holds(a, "old a"));
  ck_assert(holds(b, "old b"));
  ck_assert_int_eq(temporaries(), 0);
  remove_dir();
}
END_TEST

START_TEST(abort_and_bad_arguments) {
  make_dir();
  const char *a = scratch_path(dir, "a.txt");
  output_file *f = open_with(a, "never");
  output_file_abort(f);
  output_file_abort(NULL);
  ck_assert_int_eq(access(a, F_OK), -1);
  ck_assert_int_eq(temporaries(), 0);
  ck_assert_int_eq(output_file_open(NULL, &f, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(output_file_open(scratch_path(dir, "missing/x"), &f, err, sizeof err),
                   PLM_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "cannot create a temporary file"));
  ck_assert_ptr_null(f);
  ck_assert_int_eq(output_files_commit(NULL, 0, err, sizeof err), PLM_OK);
  /* A NULL entry: the others are freed and removed, nothing is renamed. */
  output_file *files[2] = {open_with(a, "new"), NULL};
  ck_assert_int_eq(output_files_commit(files, 2, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_int_eq(access(a, F_OK), -1);
  ck_assert_int_eq(temporaries(), 0);
  remove_dir();
}
END_TEST

/* What a second signal does: every listed temporary file goes (in a child, which then
 * exits as the handler's _exit would). */
START_TEST(the_signal_list_removes_open_temporaries) {
  make_dir();
  const char *a = scratch_path(dir, "a.txt"), *b = scratch_path(dir, "b.txt");
  put(a, "old a");
  pid_t child = fork();
  ck_assert_int_ne(child, -1);
  if (child == 0) {
    output_file *x = open_with(a, "new a"), *y = open_with(b, "new b");
    (void)x;
    (void)y;
    _exit(output_files_remove_temporaries() ? 0 : 12);
  }
  int child_status = 0;
  ck_assert_int_eq(waitpid(child, &child_status, 0), child);
  ck_assert(WIFEXITED(child_status));
  ck_assert_int_eq(WEXITSTATUS(child_status), 0);
  ck_assert(holds(a, "old a"));
  ck_assert_int_eq(access(b, F_OK), -1);
  ck_assert_int_eq(temporaries(), 0);
  remove_dir();
}
END_TEST

/* A signal's flag cancels a commit that has not begun to rename. */
START_TEST(the_cancel_flag_keeps_the_old_files) {
  make_dir();
  const char *a = scratch_path(dir, "a.txt"), *b = scratch_path(dir, "b.txt");
  put(a, "old a");
  static volatile sig_atomic_t flag;
  output_files_cancel_on(&flag);
  output_file *files[2] = {open_with(a, "new a"), open_with(b, "new b")};
  flag = SIGTERM;
  ck_assert_int_eq(output_files_commit(files, 2, err, sizeof err), PLM_ERR_INVALID_STATE);
  ck_assert_ptr_nonnull(strstr(err, "interrupted"));
  ck_assert(holds(a, "old a"));
  ck_assert_int_eq(access(b, F_OK), -1);
  ck_assert_int_eq(temporaries(), 0);
  flag = 0;
  files[0] = open_with(a, "new a");
  ck_assert_int_eq(output_files_commit(files, 1, err, sizeof err), PLM_OK);
  ck_assert(holds(a, "new a"));
  output_files_cancel_on(NULL);
  remove_dir();
}
END_TEST

/* image_writers_commit: a .npy short of its data fails the whole set. */
START_TEST(image_writers_commit_all_or_none) {
  make_dir();
  const char *a = scratch_path(dir, "a.npy"), *b = scratch_path(dir, "b.csv");
  put(a, "old a");
  image_writer *w[2] = {NULL, NULL};
  image shape = {.dtype = PLM_DTYPE_U8, .ndim = 1, .dims = {4}};
  ck_assert_int_eq(image_writer_open_npy(a, &shape, &w[0], err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_open_text(b, &w[1], err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w[0], "abc", 3, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w[1], "x,y\n", 4, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writers_commit(w, 2, err, sizeof err), PLM_ERR_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(err, "only 3 of the 4 bytes"));
  ck_assert(holds(a, "old a"));
  ck_assert_int_eq(access(b, F_OK), -1);
  ck_assert_int_eq(temporaries(), 0);

  ck_assert_int_eq(image_writer_open_npy(a, &shape, &w[0], err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_open_text(b, &w[1], err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w[0], "abcd", 4, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writer_write(w[1], "x,y\n", 4, err, sizeof err), PLM_OK);
  ck_assert_int_eq(image_writers_commit(w, 2, err, sizeof err), PLM_OK);
  ck_assert(holds(b, "x,y\n"));
  image back = {0};
  ck_assert_int_eq(image_read_array(a, NULL, &back, err, sizeof err), PLM_OK);
  ck_assert_int_eq(memcmp(back.data, "abcd", 4), 0);
  image_free(&back, NULL);
  ck_assert_int_eq(temporaries(), 0);
  remove_dir();
}
END_TEST

/* "-" writes to standard output (here a file put in place of fd 1) in place: no temporary
 * file anywhere, the bytes there after the commit, fd 1 still open after it. */
START_TEST(a_dash_is_standard_output_written_in_place) {
  make_dir();
  const char *path = scratch_path(dir, "stdout.txt");
  fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  ck_assert_int_ge(saved, 0);
  FILE *target = fopen(path, "wb");
  ck_assert_ptr_nonnull(target);
  ck_assert_int_eq(dup2(fileno(target), STDOUT_FILENO), STDOUT_FILENO);
  output_file *files[2] = {open_with(OUTPUT_FILE_STDOUT, "to stdout"),
                           open_with(scratch_path(dir, "beside.txt"), "a file")};
  ck_assert_str_eq(output_file_path(files[0]), "stdout");
  ck_assert_int_eq(temporaries(), 1); /* beside.txt's alone */
  ck_assert_int_eq(output_files_commit(files, 2, err, sizeof err), PLM_OK);
  ck_assert(holds(path, "to stdout"));
  ck_assert(holds(scratch_path(dir, "beside.txt"), "a file"));
  ck_assert_int_ge(fcntl(STDOUT_FILENO, F_GETFD), 0);
  /* Aborted after it wrote: what was written stays, as on a device (nothing to remove). */
  output_file_abort(open_with("-", " more"));
  ck_assert(holds(path, "to stdout more"));
  ck_assert_int_eq(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
  ck_assert_int_eq(close(saved), 0);
  ck_assert_int_eq(fclose(target), 0);
  ck_assert_int_eq(temporaries(), 0);
  remove_dir();
}
END_TEST

START_TEST(names_of_outputs_are_checked_before_writing) {
  char why[OUTPUT_PATH_WHY_SIZE];
  const char *fit[][2] = {{"-", "npy"},       {"m.npy", "npy"},      {"dir.v2/M.NPY", "npy"},
                          {"out", "npy"},     {"dir.v2/out", "csv"}, {"/dev/null", "csv"},
                          {".hidden", "csv"}, {"trailing.", "csv"}};
  for (size_t i = 0; i < sizeof fit / sizeof *fit; i++)
    ck_assert_msg(output_extension_fits(fit[i][0], fit[i][1], why, sizeof why), "%s for .%s: %s",
                  fit[i][0], fit[i][1], why);
  ck_assert(!output_extension_fits("m.png", "npy", why, sizeof why));
  ck_assert_msg(
      strstr(why, "'m.png' ends in .png, but the data written is .npy: name it so") != NULL, "%s",
      why);
  ck_assert(output_extension_fits("m.TIFF", "npy|tif|tiff", why, sizeof why));
  ck_assert(!output_extension_fits("m.png", "npy|tif|tiff", why, sizeof why));
  ck_assert_msg(strstr(why, "the data written is .npy, .tif or .tiff: name it so") != NULL, "%s",
                why);
  ck_assert_ptr_null(output_extension("-"));
  ck_assert_ptr_null(output_extension("a.b/c"));
  ck_assert_str_eq(output_extension("a.b/c.Tif"), "Tif");
  ck_assert(!output_extension_fits("d/regions.npy", "csv", why, sizeof why));
  ck_assert(!output_extension_fits("m.npy.tmp", "npy", why, sizeof why));
  /* "-" is no file: never the same as another path, "-" included. */
  ck_assert(!same_file("-", "-"));
  ck_assert(!same_file("-", "."));
  ck_assert(output_path_usable("-", why, sizeof why));
  fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  ck_assert_int_ge(saved, 0);
  ck_assert_int_eq(close(STDOUT_FILENO), 0);
  const bool usable = output_path_usable("-", why, sizeof why);
  ck_assert_int_eq(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
  ck_assert_int_eq(close(saved), 0);
  ck_assert(!usable);
  ck_assert_str_eq(why, "standard output is closed");
}
END_TEST

int main(void) {
  Suite *s = suite_create("output_file");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, commit_replaces_every_path);
  tcase_add_test(tc, a_failed_rename_puts_the_old_files_back);
  tcase_add_test(tc, a_full_disk_leaves_every_old_file);
  tcase_add_test(tc, abort_and_bad_arguments);
  tcase_add_test(tc, the_signal_list_removes_open_temporaries);
  tcase_add_test(tc, the_cancel_flag_keeps_the_old_files);
  tcase_add_test(tc, image_writers_commit_all_or_none);
  tcase_add_test(tc, a_dash_is_standard_output_written_in_place);
  tcase_add_test(tc, names_of_outputs_are_checked_before_writing);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

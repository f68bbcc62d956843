/* tests/test_cpu_share.c: the share of the CPUs other processes took (tools/cpu_share.h).
 *
 * Fixed texts in the formats of /proc/stat and /proc/self/stat (proc(5)): the fields
 * summed as the header says (guest time not counted twice, steal counted busy), a process
 * name with spaces and parentheses, negative fields before utime, and malformed texts
 * refused with *out untouched; the share between two readings, clamped; and the live
 * files read on this machine, where a spinning child shows up as others' time. A plain
 * unit test: no context or backend is involved.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/cpu_share.h"

/* user 100, nice 10, system 40, idle 800, iowait 20, irq 3, softirq 7, steal 20, guest 50
 * (inside user), guest_nice 0: busy 180, total 1000. */
static const char machine[] =
    "cpu  100 10 40 800 20 3 7 20 50 0\n"
    "cpu0 50 5 20 400 10 2 3 10 25 0\n"
    "intr 12345\n";

/* utime 70, stime 30 (fields 14 and 15 of proc(5)). */
static const char own[] =
    "4242 (my (odd) name) S 1 4242 4242 0 -1 4194304 127 0 3 0 70 30 5 6 20 0 4 0 100 "
    "3133440 364 18446744073709551615\n";

START_TEST(test_the_fields_are_summed_as_documented) {
  cpu_times t = {0};
  ck_assert(cpu_times_parse(machine, own, &t));
  ck_assert_uint_eq(t.busy, 180);
  ck_assert_uint_eq(t.total, 1000);
  ck_assert_uint_eq(t.own, 100);
  /* Without the guest fields (older kernels) the same. */
  ck_assert(cpu_times_parse("cpu  100 10 40 800 20 3 7 20\n", own, &t));
  ck_assert_uint_eq(t.busy, 180);
  ck_assert_uint_eq(t.total, 1000);
}
END_TEST

START_TEST(test_malformed_texts_are_refused) {
  const cpu_times untouched = {1, 2, 3};
  cpu_times t = untouched;
  const char *bad_machine[] = {"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu  1 2 3 4 5 6 7\n",
                               "cpu  1 2 x 4 5 6 7 8\n", "cpu  1 2 -3 4 5 6 7 8\n", "intr 1\n"};
  for (size_t k = 0; k < sizeof bad_machine / sizeof *bad_machine; k++) {
    ck_assert_msg(!cpu_times_parse(bad_machine[k], own, &t), "accepted '%s'", bad_machine[k]);
    ck_assert_mem_eq(&t, &untouched, sizeof t);
  }
  const char *bad_own[] = {"", "4242 my name S 1 2 3 4 5 6 7 8 9 10 11 12\n",
                           "4242 (name) S 1 2 3 0 -1 6 7 8 9 10 -11 12\n",
                           "4242 (name) S 1 2 3 0 -1 6 7 8 9 10\n", "4242 (name)"};
  for (size_t k = 0; k < sizeof bad_own / sizeof *bad_own; k++) {
    ck_assert_msg(!cpu_times_parse(machine, bad_own[k], &t), "accepted '%s'", bad_own[k]);
    ck_assert_mem_eq(&t, &untouched, sizeof t);
  }
  ck_assert(!cpu_times_parse(NULL, own, &t));
  ck_assert(!cpu_times_parse(machine, NULL, &t));
  ck_assert(!cpu_times_parse(machine, own, NULL));
}
END_TEST

START_TEST(test_the_share_is_the_others_busy_time_over_the_interval) {
  const cpu_times before = {.busy = 1000, .total = 4000, .own = 300};
  /* 2000 ticks pass: 900 busy, of them 400 ours: the others took 500 of 2000. */
  cpu_times after = {.busy = 1900, .total = 6000, .own = 700};
  ck_assert_double_eq_tol(cpu_share_of_others(&before, &after), 0.25, 1e-12);
  /* Only ours: 0. Ours counted a tick more than the machine (sampled apart): 0, not < 0. */
  after = (cpu_times){.busy = 1400, .total = 6000, .own = 701};
  ck_assert_double_eq(cpu_share_of_others(&before, &after), 0.0);
  /* All busy, none ours: 1. No tick passed: 0. */
  after = (cpu_times){.busy = 3000, .total = 6000, .own = 300};
  ck_assert_double_eq(cpu_share_of_others(&before, &after), 1.0);
  ck_assert_double_eq(cpu_share_of_others(&before, &before), 0.0);
}
END_TEST

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The live files: readable here (Linux), and a child spinning for the interval while this
 * process sleeps is others' time: at least a quarter of one core's share of the machine
 * (it has the whole core unless the machine is saturated; a generous bound). */
START_TEST(test_a_spinning_child_is_others_time) {
  cpu_times before, after;
  ck_assert(cpu_times_now(&before));
  ck_assert_uint_gt(before.total, 0);
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    const double end = now_s() + 0.6;
    volatile unsigned long spins = 0;
    while (now_s() < end) spins++;
    _exit(0);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(child, &status, 0), child);
  ck_assert(cpu_times_now(&after));
  const double share = cpu_share_of_others(&before, &after);
  ck_assert_msg(share >= 0.25 / (double)(cores > 0 ? cores : 1),
                "a child spinning 0.6 s of the interval: others' share %.3f on %ld cores", share,
                cores);
  ck_assert(share <= 1.0);
}
END_TEST

int main(void) {
  Suite *suite = suite_create("cpu_share");
  TCase *tc = tcase_create("cpu_share");
  tcase_add_test(tc, test_the_fields_are_summed_as_documented);
  tcase_add_test(tc, test_malformed_texts_are_refused);
  tcase_add_test(tc, test_the_share_is_the_others_busy_time_over_the_interval);
  tcase_add_test(tc, test_a_spinning_child_is_others_time);
  suite_add_tcase(suite, tc);
  SRunner *runner = srunner_create(suite);
  srunner_run_all(runner, CK_NORMAL);
  const int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

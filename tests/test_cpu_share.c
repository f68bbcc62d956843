/* tests/test_cpu_share.c: the share of the CPUs other processes took (support/cpu_share.h).
 *
 * Fixed texts in the formats of /proc/stat and /proc/self/stat (proc(5)): the fields
 * summed as the header says (guest time not counted twice, steal counted busy), the lines
 * of the CPUs of an affinity only, a process name with spaces and parentheses, tpgid -1,
 * and malformed texts refused with *out untouched; the share between two readings, clamped; and the
 * live files read on this machine, where a spinning child shows up as others' time. A plain unit
 * test: no context or backend is involved.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checks.h"
#include "support/cpu_share.h"

/* The sum: user 100, nice 10, system 40, idle 800, iowait 20, irq 3, softirq 7, steal 20,
 * guest 50 (inside user), guest_nice 0: busy 180, total 1000. cpu0 busy 90 of 500, cpu1
 * 60 of 300, cpu3 30 of 200 (cpu2 offline: no line). */
static const char machine[] =
    "cpu  100 10 40 800 20 3 7 20 50 0\n"
    "cpu0 50 5 20 400 10 2 3 10 25 0\n"
    "cpu1 30 5 15 230 10 1 2 7 25 0\n"
    "cpu3 20 0 5 170 0 0 2 3 0 0\n"
    "intr 12345 1 2 3\n";

/* utime 70, stime 30 (fields 14 and 15 of proc(5)). */
static const char own[] =
    "4242 (my (odd) name) S 1 4242 4242 0 -1 4194304 127 0 3 0 70 30 5 6 20 0 4 0 100 "
    "3133440 364 18446744073709551615\n";

START_TEST(test_the_fields_are_summed_as_documented) {
  cpu_times t = {0};
  ck_assert(cpu_times_parse(machine, own, NULL, 0, &t));
  ck_assert_uint_eq(t.busy, 180);
  ck_assert_uint_eq(t.total, 1000);
  ck_assert_uint_eq(t.own, 100);
  /* Without the guest fields (older kernels) the same. */
  ck_assert(cpu_times_parse("cpu  100 10 40 800 20 3 7 20\n", own, NULL, 0, &t));
  ck_assert_uint_eq(t.busy, 180);
  ck_assert_uint_eq(t.total, 1000);
}
END_TEST

/* An affinity of CPUs 1 and 3 (and 2, which has no line) counts their lines only. */
START_TEST(test_only_the_cpus_of_the_affinity_count) {
  const bool counted[4] = {false, true, true, true};
  cpu_times t = {0};
  ck_assert(cpu_times_parse(machine, own, counted, 4, &t));
  ck_assert_uint_eq(t.busy, 60 + 30);
  ck_assert_uint_eq(t.total, 300 + 200);
  ck_assert_uint_eq(t.own, 100);
  const bool first[1] = {true};
  ck_assert(cpu_times_parse(machine, own, first, 1, &t)); /* cpu1 and cpu3 past the count */
  ck_assert_uint_eq(t.busy, 90);
  ck_assert_uint_eq(t.total, 500);
  /* No CPU counted has a line: refused. */
  const bool offline[3] = {false, false, true};
  const cpu_times untouched = t;
  ck_assert(!cpu_times_parse(machine, own, offline, 3, &t));
  ck_assert(!cpu_times_parse(machine, own, counted, 0, &t));
  ck_assert_mem_eq(&t, &untouched, sizeof t);
}
END_TEST

START_TEST(test_malformed_texts_are_refused) {
  const cpu_times untouched = {1, 2, 3};
  cpu_times t = untouched;
  const char *bad_machine[] = {"",
                               "cpu0 1 2 3 4 5 6 7 8\n",
                               "cpu  1 2 3 4 5 6 7\n",
                               "cpu  1 2 x 4 5 6 7 8\n",
                               "cpu  1 2 -3 4 5 6 7 8\n",
                               "intr 1\n",
                               "c",
                               "cpu"};
  for (size_t k = 0; k < sizeof bad_machine / sizeof *bad_machine; k++) {
    ck_assert_msg(!cpu_times_parse(bad_machine[k], own, NULL, 0, &t), "accepted '%s'",
                  bad_machine[k]);
    ck_assert_mem_eq(&t, &untouched, sizeof t);
  }
  const bool both[2] = {true, true};
  ck_assert(!cpu_times_parse("cpu  1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\ncpu1 1 2\n", own, both, 2,
                             &t)); /* a counted line cut short */
  const char *bad_own[] = {"",
                           "4242 my name S 1 2 3 4 5 6 7 8 9 10 11 12\n",
                           "4242 (name) S 1 2 3 0 -1 6 7 8 9 10 -11 12\n",
                           "4242 (name) S 1 2 3 0 -1 -6 7 8 9 10 11 12\n",
                           "4242 (name) S 1 2 3 0 - 1 6 7 8 9 10 11 12\n",
                           "4242 (name) S 1 2 3 0 -1 6 7 8 9 10\n",
                           "4242 (name)"};
  for (size_t k = 0; k < sizeof bad_own / sizeof *bad_own; k++) {
    ck_assert_msg(!cpu_times_parse(machine, bad_own[k], NULL, 0, &t), "accepted '%s'", bad_own[k]);
    ck_assert_mem_eq(&t, &untouched, sizeof t);
  }
  ck_assert(!cpu_times_parse(NULL, own, NULL, 0, &t));
  ck_assert(!cpu_times_parse(machine, NULL, NULL, 0, &t));
  ck_assert(!cpu_times_parse(machine, own, NULL, 0, NULL));
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
 * process sleeps is others' time: at least a quarter of one CPU's share of this process's
 * CPUs (the child shares the affinity and has a whole CPU unless they are saturated, and
 * then others' time fills them anyway; a generous bound). */
START_TEST(test_a_spinning_child_is_others_time) {
  cpu_times before, after;
  ck_assert(cpu_times_now(&before));
  ck_assert_uint_gt(before.total, 0);
  cpu_set_t mask;
  ck_assert_int_eq(sched_getaffinity(0, sizeof mask, &mask), 0);
  const int cores = CPU_COUNT(&mask);
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
                "a child spinning 0.6 s of the interval: others' share %.3f of %d CPUs", share,
                cores);
  ck_assert(share <= 1.0);
}
END_TEST

int main(void) {
  Suite *suite = suite_create("cpu_share");
  TCase *tc = tcase_create("cpu_share");
  tcase_add_test(tc, test_the_fields_are_summed_as_documented);
  tcase_add_test(tc, test_only_the_cpus_of_the_affinity_count);
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

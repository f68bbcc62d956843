/* tests/checks.h: Check (<check.h>) with passing checks that cost their comparison alone.
 *
 * Every plume suite includes this instead of <check.h> (harness.h does). Check's own
 * ck_assert_msg, and every ck_assert_* built on it, writes the place of each passing
 * check to its message file, one write(2) each, so that a crash can be blamed on the last
 * check that passed. With checks in loops over pixels and random cases, suites spent more
 * time in those writes than in testing (test_forecast 25 s where its work takes 0.3 s),
 * most of all under the sanitizers. Here a failing check reports exactly as Check's does
 * (file, line, the expression and the message), and a passing one writes nothing: a crash
 * is placed by the sanitizers' stack traces and the test Check names, not by the last
 * passing check. mark_point() still marks a place where a suite wants one.
 */
#ifndef PLUME_TESTS_CHECKS_H
#define PLUME_TESTS_CHECKS_H

#include <check.h>

#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                                                               \
  ((expr) ? (void)0                                                                            \
          : _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed", ##__VA_ARGS__))

#endif

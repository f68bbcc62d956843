/* tests/test_quote.c: a user's value made safe for a one-line message (support/quote.h).
 *
 * Known answers for each kind of character (named escapes, other controls, UTF-8 shown
 * or escaped), the QUOTE_LIMIT cut and a caller's small buffer, quote_text; then random
 * byte strings: never a control character out, never past the buffer, and escaping
 * twice changes nothing. A plain unit test: no context or backend is involved.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "checks.h"
#include "support/quote.h"
#include "kernels/common/splitmix64.h" /* the same strings on every platform */

static char out[QUOTE_SIZE];

static void quoted_is(const char *value, const char *want) {
  ck_assert_ptr_eq(quote_value(value, out, sizeof out), out);
  ck_assert_str_eq(out, want);
}

START_TEST(test_plain_values_are_quoted_as_they_are) {
  quoted_is("thresh", "'thresh'");
  quoted_is("", "''");
  quoted_is("--size=64,64", "'--size=64,64'");
  /* A quote and a backslash are shown as typed, as are other UTF-8 characters. */
  quoted_is("it's C:\\new", "'it's C:\\new'");
  quoted_is(
      "donn\xc3\xa9"
      "es \xe2\x82\xac \xf0\x9f\x98\x80",
      "'donn\xc3\xa9"
      "es \xe2\x82\xac \xf0\x9f\x98\x80'");
  ck_assert_str_eq(quote_value(NULL, out, sizeof out), "(null)");
}
END_TEST

START_TEST(test_control_characters_are_escaped) {
  quoted_is("thr\nesh", "'thr\\nesh'");
  quoted_is("1\t2\r", "'1\\t2\\r'");
  quoted_is("a\x1b[31mred", "'a\\x1b[31mred'");
  quoted_is("\x01\x1f\x7f", "'\\x01\\x1f\\x7f'");
  /* Bytes that are not well-formed UTF-8, and the UTF-8 of C1 controls and line
   * separators, byte by byte. */
  quoted_is("\xff\xfe", "'\\xff\\xfe'");
  quoted_is("a\xc3", "'a\\xc3'");                          /* cut short */
  quoted_is("\xc3(", "'\\xc3('");                          /* no continuation byte */
  quoted_is("\xc0\xaf", "'\\xc0\\xaf'");                   /* overlong '/' */
  quoted_is("\xe0\x80\xaf", "'\\xe0\\x80\\xaf'");          /* overlong '/' */
  quoted_is("\xed\xa0\x80", "'\\xed\\xa0\\x80'");          /* a surrogate */
  quoted_is("\xf4\x90\x80\x80", "'\\xf4\\x90\\x80\\x80'"); /* past U+10FFFF */
  quoted_is(
      "\xc2\x9b"
      "2J",
      "'\\xc2\\x9b2J'"); /* C1 CSI */
  quoted_is(
      "a\xe2\x80\xa8"
      "b\xe2\x80\xa9",
      "'a\\xe2\\x80\\xa8b\\xe2\\x80\\xa9'");
  quoted_is("\xc2\xa0\xe2\x80\xa7", "'\xc2\xa0\xe2\x80\xa7'"); /* their neighbours are shown */
}
END_TEST

START_TEST(test_long_values_are_cut_with_an_ellipsis) {
  char value[1000];
  memset(value, 'a', QUOTE_LIMIT);
  value[QUOTE_LIMIT] = '\0';
  quote_value(value, out, sizeof out);
  ck_assert_uint_eq(strlen(out), QUOTE_LIMIT + 2); /* all of it */
  ck_assert_int_eq(out[QUOTE_LIMIT + 1], '\'');
  memset(value, 'a', 999);
  value[999] = '\0';
  quote_value(value, out, sizeof out);
  ck_assert_uint_eq(strlen(out), QUOTE_LIMIT + 5);
  ck_assert_str_eq(out + QUOTE_LIMIT + 1, "'...");
  /* The worst case fills QUOTE_SIZE exactly. */
  memset(value, '\x01', 999);
  quote_value(value, out, sizeof out);
  ck_assert_uint_eq(strlen(out), QUOTE_SIZE - 1);
  ck_assert_str_eq(out + QUOTE_SIZE - 5, "'...");
  /* A character is never cut: a 2-byte one at bytes 199 and 200 is left out whole. */
  memset(value, 'a', QUOTE_LIMIT - 1);
  memcpy(value + QUOTE_LIMIT - 1, "\xc3\xa9", 3);
  quote_value(value, out, sizeof out);
  ck_assert_uint_eq(strlen(out), QUOTE_LIMIT - 1 + 5);
  ck_assert_str_eq(out + QUOTE_LIMIT, "'...");
}
END_TEST

START_TEST(test_a_small_buffer_shows_less) {
  char small[10];
  ck_assert_str_eq(quote_value("abcdefgh", small, sizeof small), "'abcd'...");
  ck_assert_str_eq(quote_value("abcd", small, sizeof small), "'abcd'");
  ck_assert_str_eq(quote_value("\n\n\n", small, sizeof small), "'\\n\\n\\n'");
  ck_assert_str_eq(quote_value("\n\n\n\n", small, sizeof small), "'\\n\\n'...");
  /* An escape is never cut: \x01 takes 4 of the 5 characters left. */
  ck_assert_str_eq(quote_value("a\x01\x01", small, sizeof small), "'a'...");
  ck_assert_str_eq(quote_value("abc", small, 7), "");
  ck_assert_str_eq(quote_value("abc", small, 8), "'abc'");
  ck_assert_str_eq(quote_text("abcdefgh", small, 8), "abcd...");
  ck_assert_ptr_nonnull(quote_value("abc", NULL, 10));
}
END_TEST

START_TEST(test_errno_is_left_as_it_was) {
  /* So that quote_value may sit beside strerror(errno) among a call's arguments. */
  errno = ENOSPC;
  quote_value("a\x01\xff\xc3\xa9", out, sizeof out);
  quote_text(NULL, out, sizeof out);
  ck_assert_int_eq(errno, ENOSPC);
}
END_TEST

START_TEST(test_quote_text_escapes_a_whole_message) {
  char message[64];
  ck_assert_str_eq(quote_text("key 'value': '1\n2' is not a number", message, sizeof message),
                   "key 'value': '1\\n2' is not a number");
  ck_assert_str_eq(quote_text("", message, sizeof message), "");
  ck_assert_str_eq(quote_text(NULL, message, sizeof message), "(null)");
  char text[1000];
  memset(text, 'x', 999);
  text[999] = '\0';
  quote_text(text, message, sizeof message);
  ck_assert_uint_eq(strlen(message), sizeof message - 1);
  ck_assert_str_eq(message + sizeof message - 4, "...");
}
END_TEST

START_TEST(test_random_bytes_come_out_on_one_line) {
  static const unsigned char alphabet[] = {'a',  ' ',  '\'', '\\', '\n', '\t', '\r', 0x01,
                                           0x1b, 0x7f, 0x80, 0x85, 0x9b, 0xa0, 0xa9, 0xbf,
                                           0xc2, 0xc3, 0xe2, 0xed, 0xf0, 0xf4, 0xff};
  char value[400], again[QUOTE_SIZE], small[24];
  uint64_t state = 1;
  for (int round = 0; round < 20000; round++) {
    size_t length = splitmix64_next(&state) % sizeof value;
    for (size_t i = 0; i < length; i++)
      value[i] =
          (char)(splitmix64_next(&state) % 4 ? alphabet[splitmix64_next(&state) % sizeof alphabet]
                                             : (char)(splitmix64_next(&state) % 255 + 1));
    value[length] = '\0';
    quote_value(value, out, sizeof out);
    size_t n = strlen(out);
    ck_assert_uint_lt(n, sizeof out);
    for (size_t i = 0; i < n; i++)
      ck_assert_msg((unsigned char)out[i] >= 0x20 && out[i] != 0x7f, "round %d: byte %zu", round,
                    i);
    ck_assert_int_eq(out[0], '\'');
    ck_assert(out[n - 1] == '\'' || (n >= 4 && strcmp(out + n - 4, "'...") == 0));
    ck_assert_int_eq(strcmp(out + n - 3, "...") == 0,
                     length > QUOTE_LIMIT || strcmp(out + n - 4, "'...") == 0);
    /* Escaping twice changes nothing; a small buffer holds a shorter start of it. */
    ck_assert_str_eq(quote_text(out, again, sizeof again), out);
    quote_value(value, small, sizeof small);
    ck_assert_uint_lt(strlen(small), sizeof small);
  }
}
END_TEST

static Suite *quote_suite(void) {
  Suite *suite = suite_create("quote");
  TCase *tc = tcase_create("quote");
  tcase_add_test(tc, test_plain_values_are_quoted_as_they_are);
  tcase_add_test(tc, test_control_characters_are_escaped);
  tcase_add_test(tc, test_long_values_are_cut_with_an_ellipsis);
  tcase_add_test(tc, test_a_small_buffer_shows_less);
  tcase_add_test(tc, test_errno_is_left_as_it_was);
  tcase_add_test(tc, test_quote_text_escapes_a_whole_message);
  tcase_add_test(tc, test_random_bytes_come_out_on_one_line);
  suite_add_tcase(suite, tc);
  return suite;
}

int main(void) {
  SRunner *runner = srunner_create(quote_suite());
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}

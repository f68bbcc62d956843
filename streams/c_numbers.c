/* streams/c_numbers.c: numbers as the C locale reads and writes them (streams/c_numbers.h). */
#define _GNU_SOURCE /* strtod_l */

#include "streams/c_numbers.h"

#include <locale.h>
#include <pthread.h>
#include <stdlib.h>

static pthread_once_t made = PTHREAD_ONCE_INIT;
static locale_t c_locale = (locale_t)0;

static void make_c_locale(void) {
  c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static locale_t the_c_locale(void) {
  pthread_once(&made, make_c_locale);
  return c_locale;
}

double plm__c_strtod(const char *text, char **end) {
  const locale_t c = the_c_locale();
  return c ? strtod_l(text, end, c) : strtod(text, end);
}

plm__c_numbers plm__c_numbers_begin(void) {
  const locale_t c = the_c_locale();
  return (plm__c_numbers){.previous = c ? (void *)uselocale(c) : NULL};
}

void plm__c_numbers_end(plm__c_numbers was) {
  if (was.previous) uselocale((locale_t)was.previous);
}

/* streams/c_numbers.h: numbers read and written as the C locale has them, whatever locale the
 * program that loaded plume set (internal).
 *
 * A host program's setlocale(LC_ALL, "") (Qt and GTK applications call it; so may a Python
 * program next to plume's module) makes the C library's strtod stop at the point of "1.5"
 * in a locale whose decimal separator is a comma (de_DE, fr_FR) and its printf write "1,5".
 * plume's texts are the C locale's wherever they are read or written: a pipeline's and an
 * op's parameters (ops/op_params.c: "cfar k=1.5" parses, and a pipeline's description
 * writes its numbers back the same way), the calibration cache (profile/calibrate.c) and
 * report.html's numbers and SVG coordinates (profile/profile_report_html.c); the JSON
 * files go through jansson, which converts for itself. The process's locale is never
 * changed: parsing passes the C locale to strtod_l, and a writer switches its own thread
 * only, for the span of one call (uselocale). Human messages keep the host's locale.
 *
 *   double v = plm__c_strtod(text, &end);              strtod, as in the C locale
 *   plm__c_numbers was = plm__c_numbers_begin();       this thread's printf and strtod as
 *   ... fprintf(f, "%.3f", x) ...                      C's, until
 *   plm__c_numbers_end(was);                           its locale before
 *
 * The C locale object is made once (newlocale, the first call; it lives as long as the
 * process); were that to fail (it needs a few bytes of memory), both fall back to the
 * thread's locale as it is. Thread-safe.
 */
#ifndef PLUME_STREAMS_C_NUMBERS_H
#define PLUME_STREAMS_C_NUMBERS_H

double plm__c_strtod(const char *text, char **end);

/* The thread's locale before plm__c_numbers_begin (a locale_t, which glibc makes a pointer:
 * held so that the files that include this need not ask for POSIX 2008's declarations). */
typedef struct plm__c_numbers {
  void *previous;
} plm__c_numbers;

plm__c_numbers plm__c_numbers_begin(void);
void plm__c_numbers_end(plm__c_numbers previous);

#endif /* PLUME_STREAMS_C_NUMBERS_H */

/* profile/profile_report_text.c: writing text into report.html: escaped user text and
 * numbers that may not be finite (profile/profile_report.h). Both the page and its
 * charts use these. */
#include <math.h>

#include "profile/profile_report.h"

void plm__report_text(FILE *f, const char *s) {
  for (const char *p = s ? s : ""; *p; p++) {
    switch (*p) {
      case '&': fputs("&amp;", f); break;
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '"': fputs("&quot;", f); break;
      case '\'': fputs("&#39;", f); break;
      default: fputc(*p, f);
    }
  }
}

void plm__report_number(FILE *f, const char *fmt, double x) {
  if (isfinite(x))
    fprintf(f, fmt, x);
  else
    fputs("n/a", f);
}

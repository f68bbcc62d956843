/* profile/profile_report_text.c: writing text into report.html: escaped user text,
 * numbers that may not be finite, and byte counts (profile/profile_report.h). Both the
 * page and its charts use these. */
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

void plm__report_bytes(FILE *f, uint64_t bytes) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    fprintf(f, "%llu B", (unsigned long long)bytes);
    return;
  }
  double value = (double)bytes / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < sizeof units / sizeof units[0]) {
    value /= 1024;
    unit++;
  }
  fprintf(f, value < 10 ? "%.2f %s" : value < 100 ? "%.1f %s" : "%.0f %s", value, units[unit]);
}

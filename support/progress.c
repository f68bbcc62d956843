/* support/progress.c: a progress bar on a terminal (support/progress.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/progress.h"
#include "streams/clock.h"

#include <stdio.h>
#include <unistd.h>

enum { BAR_WIDTH = 30 };
static const double REDRAW_S = 0.1;

/* A total not known (a stream): the count and the rate, without a bar. */
static void draw_count(progress_bar *p, int64_t done, double now) {
  double elapsed = now - p->started_s;
  fprintf(stderr, "\r%s %lld %s", p->label, (long long)done, p->unit);
  if (done > 0 && elapsed > 0) fprintf(stderr, "  %.0f %s/s", (double)done / elapsed, p->unit);
  fputs("\033[K", stderr);
  fflush(stderr);
  p->drawn_s = now;
}

static void draw(progress_bar *p, int64_t done, double now) {
  if (p->total < 0) {
    draw_count(p, done, now);
    return;
  }
  if (done > p->total) done = p->total;
  if (done < 0) done = 0;
  char bar[BAR_WIDTH + 1];
  int filled = (int)(done * BAR_WIDTH / p->total);
  for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < filled ? '#' : '-';
  bar[BAR_WIDTH] = '\0';
  double elapsed = now - p->started_s;
  fprintf(stderr, "\r%s [%s] %lld/%lld %s", p->label, bar, (long long)done, (long long)p->total,
          p->unit);
  if (done > 0 && elapsed > 0 && !p->plain) {
    double rate = (double)done / elapsed;
    fprintf(stderr, "  %.0f %s/s  %.0f s left", rate, p->unit, (double)(p->total - done) / rate);
  }
  fputs("\033[K", stderr); /* clear what a longer line left */
  fflush(stderr);
  p->drawn_s = now;
}

static void begin(progress_bar *p, bool shown, const char *label, const char *unit, int64_t total) {
  *p = (progress_bar){.shown = shown && total != 0,
                      .label = label,
                      .unit = unit,
                      .total = total,
                      .started_s = plm__monotonic_seconds()};
  if (p->shown) draw(p, 0, p->started_s);
}

void progress_begin(progress_bar *p, const char *label, const char *unit, int64_t total) {
  begin(p, isatty(STDERR_FILENO), label, unit, total);
}

void progress_begin_always(progress_bar *p, const char *label, const char *unit, int64_t total) {
  begin(p, true, label, unit, total);
}

void progress_update(progress_bar *p, int64_t done) {
  if (!p->shown) return;
  double now = plm__monotonic_seconds();
  if (now - p->drawn_s >= REDRAW_S || (p->total > 0 && done >= p->total)) draw(p, done, now);
}

void progress_clear(progress_bar *p) {
  if (!p->shown) return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  p->drawn_s = p->started_s - REDRAW_S; /* the next update redraws */
}

void progress_end(progress_bar *p) {
  if (!p->shown) return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  p->shown = false;
}

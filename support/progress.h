/* support/progress.h: a progress bar on stderr for the long runs of the plume command
 * (plume detect, plume demo) and of the benchmark binaries (bench_ops, bench_pool).
 *
 *   detect [##############----------------]  1234/2000 frames  412 frames/s  2 s left
 *
 * It is drawn only when stderr is a terminal (isatty), so output that is piped or
 * redirected never contains it; it is redrawn at most 10 times a second whatever the
 * rate of updates, and progress_end erases it, leaving the line empty for what follows.
 * A progress belongs to one thread; nothing else should write to stderr while it is
 * shown.
 */
#ifndef PLUME_SUPPORT_PROGRESS_H
#define PLUME_SUPPORT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct progress_bar {
  bool shown;        /* stderr is a terminal */
  const char *label; /* "detect" */
  const char *unit;  /* "frames" */
  int64_t total;     /* > 0; -1: not known (a stream), the count drawn without a bar */
  bool plain;        /* the count alone, no rate nor time left (steps of unequal length) */
  double started_s, drawn_s;
} progress_bar;

/* Start a bar of total steps (draws it at 0 when shown); total -1 when the count is not
 * known until the end (frames from a pipe): "detect 1234 frames  412 frames/s". A total of
 * 0 draws nothing. */
void progress_begin(progress_bar *p, const char *label, const char *unit, int64_t total);

/* progress_begin, drawn even when stderr is not a terminal (plume detect --progress: under
 * mpirun, which passes rank 0's stderr on through a pipe). */
void progress_begin_always(progress_bar *p, const char *label, const char *unit, int64_t total);

/* done steps of total are finished: redraw when 0.1 s has passed since the last drawing
 * or done reaches total. */
void progress_update(progress_bar *p, int64_t done);

/* Erase the bar for a moment, so that a line can be written to stdout or stderr (a
 * benchmark's table row); the next progress_update draws it again at once. */
void progress_clear(progress_bar *p);

/* Erase the bar. */
void progress_end(progress_bar *p);

#endif /* PLUME_SUPPORT_PROGRESS_H */

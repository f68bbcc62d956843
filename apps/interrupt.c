/* apps/interrupt.c: the commands' signal handler (apps/interrupt.h). */
#define _POSIX_C_SOURCE 200809L

#include "apps/interrupt.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include "support/output_file.h"

/* A second signal sooner than this after the first is the same request. */
enum { INSIST_AFTER_S = 2 };

volatile sig_atomic_t interrupt_signal;

/* When the first signal came (CLOCK_MONOTONIC seconds). */
static volatile sig_atomic_t first_signal_at;

static sig_atomic_t now_seconds(void) {
  struct timespec now = {0, 0};
  clock_gettime(CLOCK_MONOTONIC, &now); /* async-signal-safe */
  return (sig_atomic_t)now.tv_sec;
}

static void on_signal(int signo) {
  if (interrupt_signal == 0) {
    first_signal_at = now_seconds();
    interrupt_signal = signo;
    return;
  }
  /* A second signal: stop now, unless a commit is renaming (it ends in microseconds).
   * Not SIGPIPE, which comes back on every write to the closed pipe, nor a signal within
   * INSIST_AFTER_S of the first: one kill is often delivered twice, to the process and
   * to its group (timeout(1) does so), and that is no one insisting. */
  if (signo == SIGPIPE || now_seconds() - first_signal_at < INSIST_AFTER_S) return;
  if (output_files_remove_temporaries()) _exit(128 + interrupt_signal);
}

void interrupt_catch(void) {
  output_files_cancel_on(&interrupt_signal);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
    sigaddset(&action.sa_mask, signals[i]);
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
    sigaction(signals[i], &action, NULL);
}

int interrupt_exit_code(void) {
  return interrupt_signal ? 128 + interrupt_signal : 0;
}

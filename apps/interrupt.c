/* apps/interrupt.c: the commands' signal handler (apps/interrupt.h). */
#define _POSIX_C_SOURCE 200809L

#include "apps/interrupt.h"

#include <string.h>
#include <unistd.h>

#include "tools/output_file.h"

volatile sig_atomic_t interrupt_signal;

static void on_signal(int signo) {
  if (interrupt_signal == 0) {
    interrupt_signal = signo;
    return;
  }
  /* A second signal: stop now, unless a commit is renaming (it ends in microseconds).
   * SIGPIPE comes back on every write to the closed pipe: it is not someone insisting. */
  if (signo != SIGPIPE && output_files_remove_temporaries()) _exit(128 + interrupt_signal);
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

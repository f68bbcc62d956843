/* apps/interrupt.h: how the plume commands stop on a signal.
 *
 * SIGINT (Ctrl-C), SIGTERM (kill), SIGHUP (the terminal gone) and SIGPIPE (a closed
 * pipe) must never leave a temporary file behind, nor a half-replaced output. After
 * interrupt_catch(), the first such signal only records itself in interrupt_signal;
 * each long-running command looks at it before every frame (plume detect, scene, demo)
 * or before it writes (plume op), stops, and goes down its failure path, which removes
 * its temporary files and keeps the old outputs; the command then exits
 * interrupt_exit_code(), 128 + the signal, as a shell reports a process killed by it.
 * The flag also cancels a commit of outputs that has not begun to rename
 * (output_files_cancel_on): a signal during the final fsyncs keeps the old outputs. One
 * that comes while the outputs are being renamed into place (microseconds) lets the
 * renames finish (the outputs are then complete) and is reported by the exit code.
 *
 * A second signal at least 2 s after the first (not SIGPIPE, which each write to a
 * closed pipe raises again; and not sooner, since one kill is often delivered twice, to
 * the process and to its group), for a command that does not stop soon enough, removes
 * the listed temporary files (output_files_remove_temporaries, async-signal-safe) and
 * exits at once with 128 + the signal, leaving what is not a temporary file (plume
 * demo's folder); during a commit's renames it waits for them as the first one does.
 *
 * Process-wide; interrupt_catch is called once, from the main thread, before any
 * output is opened. */
#ifndef PLUME_APPS_INTERRUPT_H
#define PLUME_APPS_INTERRUPT_H

#include <signal.h>

/* The first signal caught, 0 before any. */
extern volatile sig_atomic_t interrupt_signal;

/* Install the handler for SIGINT, SIGTERM, SIGHUP and SIGPIPE. */
void interrupt_catch(void);

/* 128 + interrupt_signal (0 when none was caught). */
int interrupt_exit_code(void);

#endif /* PLUME_APPS_INTERRUPT_H */

/* apps/op_commands.h: `plume op <name> ...`, one operation on an image file.
 *
 *   plume op <name> --in IN --out OUT [op options] [--backend host|cuda|auto]
 *                   [--repeat N] [-h|--help]
 *
 * An op may read further files besides IN (conv2d: --kernel K) and write further
 * ones besides OUT, each named by its own flag; these may be text (label: --regions
 * CSV), made after the op has run and before any file is written.
 *
 * The flow, shared by every op: read IN and the op's other input files
 * (tools/image_io.h) into pinned host memory (plm_host_alloc) -> the context on the
 * chosen backend -> a stream -> the default pool -> the input tensors and H2D copies
 * -> the op -> D2H copies -> write OUT and any other outputs (.npy, each atomically). With --repeat N the op runs once to warm up and then N more
 * times, each timed alone between stream synchronisations, and
 * "time_ms median=M min=A max=B" is printed on stderr.
 *
 * Exit codes: 0 success; 1 a runtime failure (no device, out of memory, a backend
 * error); 2 bad usage, an unreadable, malformed or unsupported input file, an input
 * the op refuses, or an output that cannot be written. OUT is never left partly
 * written.
 *
 * Adding an op: one entry in the table in op_commands.c, with the flags of its
 * further input and output files, the function that takes its options and the
 * library's _output and enqueue functions.
 */
#ifndef PLUME_APPS_OP_COMMANDS_H
#define PLUME_APPS_OP_COMMANDS_H

#include <stdio.h>

/* Run `plume op` with the arguments after "op"; returns the exit code. */
int op_command_main(int argc, char **argv);

/* One line per op ("  threshold  ...") for `plume --help`. */
void op_commands_print_summary(FILE *out);

#endif /* PLUME_APPS_OP_COMMANDS_H */

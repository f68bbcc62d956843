/* apps/op_commands.h: `plume op <name> ...`, one operation on files.
 *
 *   plume op <name> --in IN --out OUT [op options] [--backend host|cuda|auto]
 *                   [--repeat N] [--warmup-ms MS] [-h|--help]
 *
 * Every operation of the table (ops/op_desc.h) is a command, its flags, help, defaults,
 * values and messages generated from its descriptor: an image op reads --in and writes
 * --out (further inputs named by their slots: conv2d's --kernel); an op on arrays
 * (PLM__OP_NAMED_OPERANDS) names every operand file by its slot (--a, --w-ih, --out-h);
 * each parameter is --NAME ('_' read as '-'), read as the pipeline text form reads it
 * ("--window 'abc' is not an integer in 1..255"). Not commands: the fused op (made only
 * by the pipeline's fusion) and regions (label --regions runs it). Besides the table:
 * label's and segment's --regions CSV (label's with --intensity IMG), made after the op
 * has run and before any file is written, and vector_add_batched (vector_add's flags
 * over plm_vector_add_batched).
 *
 * The flow, shared by every op: read the input files (support/image_io.h) into pinned host
 * memory (plm_host_alloc) -> the context on the chosen backend -> a stream -> the default
 * pool -> the input tensors and H2D copies -> the op -> D2H copies -> write each output
 * (.npy, each atomically). With --repeat N the op runs once to warm up and then N more
 * times, each timed alone between stream synchronisations, and
 * "time_ms median=M min=A max=B" is printed on stderr.
 *
 * Exit codes: 0 success; 1 a runtime failure (no device, out of memory, a backend
 * error); 2 bad usage, an unreadable, malformed or unsupported input file, an input
 * the op refuses, or an output that cannot be written. OUT is never left partly
 * written.
 *
 * Adding an op: nothing here; its descriptor makes its command.
 */
#ifndef PLUME_APPS_OP_COMMANDS_H
#define PLUME_APPS_OP_COMMANDS_H

#include <stdio.h>

/* Run `plume op` with the arguments after "op"; returns the exit code. */
int op_command_main(int argc, char **argv);

/* One line per op ("  threshold  ...") for `plume --help`. */
void op_commands_print_summary(FILE *out);

#endif /* PLUME_APPS_OP_COMMANDS_H */

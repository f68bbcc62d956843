/* apps/detect_commands.h: `plume detect`.
 *
 *   plume detect --frames FRAMES.npy|DIR --pipeline "TEXT" --out DETECTIONS.csv
 *                [--backend host|cuda|auto] [--streams K]
 *     Runs the pipeline over every frame of a stack or a folder (support/frame_reader.h)
 *     and writes one row per region: frame, then the regions columns of `plume op label`
 *     with the intensity columns (apps/detect.h). K frames are in flight (default 3). A
 *     progress bar on stderr when it is a terminal; at the end "N frames in S s: F
 *     frames/s" on stdout.
 *
 * Options are "--flag value" or "--flag=value". Exit codes: 0 success; 1 a runtime
 * failure (out of memory, no device, a backend failure); 2 bad usage, a bad pipeline, a
 * bad, missing or mismatched frame file, or an output that cannot be written, with a
 * one-line message on stderr. The CSV is written atomically: a failure leaves none.
 */
#ifndef PLUME_APPS_DETECT_COMMANDS_H
#define PLUME_APPS_DETECT_COMMANDS_H

#include <stdio.h>

/* Run `plume detect` with the arguments after the command's name; returns the exit code. */
int detect_command_main(int argc, char **argv);

/* Lines for `plume --help` (detect and demo). */
void detect_commands_print_summary(FILE *out);

#endif /* PLUME_APPS_DETECT_COMMANDS_H */

/* apps/scene_commands.h: `plume scene` and `plume score`.
 *
 *   plume scene --frames N --size H,W [--seed S] --out FRAMES.npy --truth TRUTH.csv
 *               [--difficulty normal|hard] [--calibration DIR]
 *               [--clutter X] [--clutter-speed X] [--plume-sigmas MIN,MAX] [--defects X]
 *     Writes the synthetic infrared scene of support/scene.h: FRAMES.npy, u16 of shape
 *     (N, H, W), streamed frame by frame (a long scene is never held in memory), and
 *     TRUTH.csv, "frame,row,col,amplitude,sigma" with one row per plume per frame. The
 *     seed defaults to 1; the same arguments give byte-identical files on any machine.
 *     N * H * W is at most 2^31 (what plume reads back). --difficulty hard writes the hard
 *     scene, and --calibration DIR (hard only; DIR must exist) its calibration as
 *     DIR/gain.npy, DIR/offset.npy and DIR/bad.npy (scene_calibration_files). The four
 *     knobs (hard only) make a family of hard scenes (scene_knobs in support/scene.h);
 *     at their defaults the files are the same bytes.
 *
 *   plume score --truth TRUTH.csv --detections DETECTIONS.csv [--radius R]
 *     Matches detections (as `plume detect` writes them) to the truth and prints
 *     true/false positives, false negatives, precision, recall and the mean centroid
 *     error; the radius defaults to max(3, 2 sigma) of each plume (support/score.h).
 *
 * Options are "--flag value" or "--flag=value". Exit codes: 0 success; 1 a runtime
 * failure (out of memory); 2 bad usage, a bad or unreadable input file, or an output
 * that cannot be written, with a one-line message on stderr. The outputs of `plume scene`
 * are written atomically and together (support/image_io.h): a failure leaves none.
 */
#ifndef PLUME_APPS_SCENE_COMMANDS_H
#define PLUME_APPS_SCENE_COMMANDS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "support/scene.h"
#include "plume/status.h"

/* Run `plume scene` / `plume score` with the arguments after the command's name;
 * returns the exit code. */
int scene_command_main(int argc, char **argv);
int score_command_main(int argc, char **argv);

/* The files of the hard scene's calibration (scene_calibration), in this order: gain and
 * offset (f32 (H, W), plm_nuc's operands) and bad (u8 (H, W), 1 for a dead or hot pixel). */
enum { SCENE_CALIBRATION_FILES = 3, SCENE_PATH_SIZE = 4096 };
extern const char *const scene_calibration_files[SCENE_CALIBRATION_FILES];

/* Write the scene of config to frames_path (.npy, u16 (N, H, W)) and its truth to
 * truth_path, and, when calibration_dir is not NULL (a hard scene's; the folder must
 * exist), its calibration files into that folder, as `plume scene` does: streamed frame
 * by frame, committed together (image_writers_commit: all the files replace their paths,
 * or none does, and a failure leaves no temporary file). With show_progress, a progress bar on a
 * terminal (support/progress.h). When stop is not NULL and *stop becomes non-zero (a signal
 * handler's flag), the writing stops before the next frame, or before the commit, with PLM_ERR_INVALID_STATE
 * ("interrupted") and leaves the paths as they were. Sets *plume_rows (when not NULL) to the
 * truth's rows. Errors: scene_create's, PLM_ERR_IO (a file that cannot be written),
 * PLM_ERR_OUT_OF_MEMORY; the message goes into err. */
plm_status scene_write_files(const scene_config *config, const char *frames_path,
                             const char *truth_path, const char *calibration_dir,
                             bool show_progress, const volatile sig_atomic_t *stop,
                             int64_t *plume_rows, char *err, size_t err_size);

/* Lines for `plume --help`. */
void scene_commands_print_summary(FILE *out);

#endif /* PLUME_APPS_SCENE_COMMANDS_H */

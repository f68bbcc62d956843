/* apps/demo.h: `plume demo`, the main job.
 *
 *   plume demo [--frames N] [--size H,W] [--seed S] [--backend host|cuda|auto]
 *              [--streams K] [--workdir DIR] [--keep]
 *              [--difficulty normal|hard] [--preset NAME | --pipeline TEXT]
 *     Writes the synthetic infrared scene of support/scene.h (default 2000 frames of
 *     512 x 512, seed 1, normal) and its truth into a working folder, runs a pipeline
 *     over it as `plume detect` does (apps/detect.h): a preset (plume/presets.h; by
 *     default 'default' on the normal scene and 'robust' on the hard one) or a text, and
 *     scores the detections against the truth as `plume score` does (support/score.h),
 *     leaving out the frames a preset's background needs to settle (its settle_frames):
 *     precision, recall and the mean centroid error in pixels, and the frames per second.
 *     With --difficulty hard the scene is the hard one and its calibration (gain.npy,
 *     offset.npy, bad.npy) goes into the folder too, given to the pipeline as the named
 *     tensors gain, offset and bad (`nuc gain=@gain offset=@offset ! ...`). The folder
 *     is a new temporary one unless --workdir names one (made if missing); its files
 *     (frames.npy, truth.csv, detections.csv and the calibration's) are removed at the
 *     end unless --keep.
 *
 * Exit codes as `plume detect`'s: 0 success; 1 a runtime failure (a file that cannot be
 * written in the working folder included: a full disk); 2 bad usage or a working
 * folder that cannot be used, with a one-line message on stderr. SIGINT, SIGTERM,
 * SIGHUP and SIGPIPE stop it before the next frame (apps/interrupt.h): it removes its
 * files (unless --keep) and exits with 128 + the signal.
 */
#ifndef PLUME_APPS_DEMO_H
#define PLUME_APPS_DEMO_H

/* Run `plume demo` with the arguments after the command's name; returns the exit code. */
int demo_command_main(int argc, char **argv);

#endif /* PLUME_APPS_DEMO_H */

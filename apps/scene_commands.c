/* apps/scene_commands.c: `plume scene` and `plume score` (apps/scene_commands.h). */
#define _POSIX_C_SOURCE 200809L

#include "apps/scene_commands.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apps/interrupt.h"
#include "apps/options.h"
#include "support/image_io.h"
#include "support/progress.h"
#include "support/quote.h"
#include "support/regular_file.h"
#include "support/scene.h"
#include "support/score.h"
#include "support/score_report.h"

enum { ERROR_SIZE = 1024 };

/* ---- plume scene ----------------------------------------------------------------------- */

static const char scene_usage[] =
    "usage: plume scene --frames N --size H,W [--seed S] --out FRAMES.npy --truth TRUTH.csv\n"
    "                   [--difficulty normal|hard] [--calibration DIR] [-q]\n"
    "                   [--clutter X] [--clutter-speed X] [--plume-sigmas MIN,MAX] [--defects X]\n"
    "\n"
    "Write a deterministic synthetic infrared scene: a 14-bit sensor (u16 values 0..16383)\n"
    "looking at a cluttered sky and earth (a soft horizon, drifting clouds and bands, column\n"
    "fixed-pattern noise, sensor noise) with hot moving plumes; see support/scene.h.\n"
    "The hard scene is a raw sensor (per-pixel gain and offset, dead and hot pixels, a\n"
    "global gain drift) looking at bright sharp drifting clutter, with plumes of 3..8\n"
    "noise sigmas: a detector needs its calibration and the frames before.\n"
    "\n"
    "options:\n"
    "  --frames N            the number of frames, 1..100000\n"
    "  --size H,W            rows and columns of a frame, each 16..16384 (N*H*W <= 2^31)\n"
    "  --seed S              the scene's seed, 0..2^64-1 (default 1); the same arguments\n"
    "                        give byte-identical files on any machine\n"
    "  --out FRAMES.npy      the frames: .npy u16 of shape (N, H, W), streamed frame by frame\n"
    "  --truth TRUTH.csv     the truth: frame,row,col,amplitude,sigma, one row per plume\n"
    "                        whose centre is inside the frame (row, col: its centre in\n"
    "                        pixels; amplitude: its peak above the background in counts;\n"
    "                        sigma: its larger standard deviation in pixels)\n"
    "  --difficulty D        normal (the default) or hard\n"
    "  --calibration DIR     with hard: write the sensor's calibration into the existing\n"
    "                        folder DIR: gain.npy and offset.npy (f32 (H, W), the operands\n"
    "                        of nuc: gain * raw + offset gives the radiance) and bad.npy\n"
    "                        (u8 (H, W), 1 for a dead or hot pixel)\n"
    "  --clutter X           with hard: X times the bright discs (default 1: 1 + H*W/65536)\n"
    "  --clutter-speed X     with hard: the discs drift X times as fast (default 1:\n"
    "                        0.05..0.3 px/frame)\n"
    "  --plume-sigmas A,B    with hard: plume peaks of A..B noise sigmas, flicker included\n"
    "                        (default 3,8; 0.5 <= A <= B <= 100)\n"
    "  --defects X           with hard: X times the dead and hot pixels (default 1: 0.05%\n"
    "                        each; up to 100)\n"
    "                        These knobs make a family of hard scenes (support/scene.h);\n"
    "                        at their defaults the scene is the same, byte for byte.\n"
    "  -q, --quiet           no progress bar, no summary\n"
    "  -h, --help            show this help\n"
    "\n"
    "All the files are written atomically, together: a failure leaves none. '-' for --out\n"
    "or --truth writes it to standard output instead (the summary then goes to stderr); a\n"
    "name that ends in another extension than .npy (--out) or .csv (--truth) is refused.\n"
    "A progress bar is drawn on stderr when it is a terminal.\n";

/* The writers of a run: the frames, the truth, then the calibration's files. */
enum { FRAMES_WRITER, TRUTH_WRITER, CALIBRATION_WRITER, MAX_WRITERS = CALIBRATION_WRITER + 3 };

typedef struct scene_run {
  scene *scene;
  image_writer *writers[MAX_WRITERS];
  int n_writers;
  uint16_t *pixels;
  scene_truth *rows;
  char *text; /* the truth lines of one frame */
  progress_bar bar;
} scene_run;

static plm_status scene_release(scene_run *r, plm_status status) {
  progress_end(&r->bar);
  for (int i = 0; i < r->n_writers; i++) image_writer_abort(r->writers[i]);
  scene_destroy(r->scene);
  free(r->pixels);
  free(r->rows);
  free(r->text);
  return status;
}

const char *const scene_calibration_files[SCENE_CALIBRATION_FILES] = {"gain.npy", "offset.npy",
                                                                      "bad.npy"};

/* Open the writers of the calibration's files in dir and write them whole: gain and
 * offset f32 (H, W), bad u8 (H, W). */
static plm_status write_calibration(scene_run *r, const char *dir, char *err, size_t err_size) {
  const scene_config config = scene_get_config(r->scene);
  const size_t pixels = (size_t)(config.height * config.width);
  float *gain = malloc(pixels * sizeof *gain), *offset = malloc(pixels * sizeof *offset);
  uint8_t *bad = malloc(pixels);
  plm_status status = PLM_ERR_OUT_OF_MEMORY;
  if (!gain || !offset || !bad)
    snprintf(err, err_size, "out of memory for the calibration of a %lldx%lld frame",
             (long long)config.height, (long long)config.width);
  else
    status = scene_calibration(r->scene, gain, offset, bad, err, err_size);
  const void *data[SCENE_CALIBRATION_FILES] = {gain, offset, bad};
  const plm_dtype dtypes[SCENE_CALIBRATION_FILES] = {PLM_DTYPE_F32, PLM_DTYPE_F32, PLM_DTYPE_U8};
  for (int i = 0; status == PLM_OK && i < SCENE_CALIBRATION_FILES; i++) {
    char path[SCENE_PATH_SIZE];
    if (snprintf(path, sizeof path, "%s/%s", dir, scene_calibration_files[i]) >= (int)sizeof path) {
      snprintf(err, err_size, "--calibration: the folder's name is too long");
      status = PLM_ERR_INVALID_ARG;
      break;
    }
    image shape = {.dtype = dtypes[i], .ndim = 2, .dims = {config.height, config.width}};
    image_writer **w = &r->writers[r->n_writers];
    if ((status = image_writer_open_npy(path, &shape, w, err, err_size)) != PLM_OK) break;
    r->n_writers++;
    status = image_writer_write(*w, data[i], image_bytes(&shape), err, err_size);
  }
  free(gain);
  free(offset);
  free(bad);
  return status;
}

plm_status scene_write_files(const scene_config *config, const char *frames_path,
                             const char *truth_path, const char *calibration_dir,
                             bool show_progress, const volatile sig_atomic_t *stop,
                             int64_t *plume_rows, char *err, size_t err_size) {
  scene_run r = {0};
  plm_status status = scene_create(config, &r.scene, err, err_size);
  if (status != PLM_OK) return scene_release(&r, status);
  const int64_t h = config->height, w = config->width, n = config->frames;
  int max_plumes = scene_max_plumes(r.scene);
  r.pixels = malloc((size_t)(h * w) * sizeof *r.pixels);
  r.rows = malloc((size_t)max_plumes * sizeof *r.rows);
  r.text = malloc((size_t)max_plumes * SCENE_TRUTH_ROW_SIZE);
  if (!r.pixels || !r.rows || !r.text) {
    snprintf(err, err_size, "out of memory for a %lldx%lld frame", (long long)h, (long long)w);
    return scene_release(&r, PLM_ERR_OUT_OF_MEMORY);
  }
  image shape = {.dtype = PLM_DTYPE_U16, .ndim = 3, .dims = {n, h, w}};
  image_writer **frames = &r.writers[FRAMES_WRITER], **truth = &r.writers[TRUTH_WRITER];
  if ((status = image_writer_open_npy(frames_path, &shape, frames, err, err_size)) != PLM_OK)
    return scene_release(&r, status);
  r.n_writers++;
  if ((status = image_writer_open_text(truth_path, truth, err, err_size)) != PLM_OK)
    return scene_release(&r, status);
  r.n_writers++;
  if ((status = image_writer_write(*truth, SCENE_TRUTH_HEADER, strlen(SCENE_TRUTH_HEADER), err,
                                   err_size)) != PLM_OK ||
      (calibration_dir &&
       (status = write_calibration(&r, calibration_dir, err, err_size)) != PLM_OK))
    return scene_release(&r, status);
  if (show_progress) progress_begin(&r.bar, "scene", "frames", n);
  int64_t plumes = 0;
  for (int64_t t = 0; t < n; t++) {
    if (stop && *stop) {
      snprintf(err, err_size, "interrupted at frame %lld of the scene", (long long)t);
      return scene_release(&r, PLM_ERR_INVALID_STATE);
    }
    int count = 0;
    if ((status = scene_render(r.scene, t, r.pixels, r.rows, &count, err, err_size)) != PLM_OK)
      return scene_release(&r, status);
    size_t length = 0;
    for (int i = 0; i < count; i++)
      length += scene_truth_csv_row(&r.rows[i], r.text + length, SCENE_TRUTH_ROW_SIZE);
    plumes += count;
    if ((status = image_writer_write(*frames, r.pixels, (size_t)(h * w) * sizeof *r.pixels, err,
                                     err_size)) != PLM_OK ||
        (status = image_writer_write(*truth, r.text, length, err, err_size)) != PLM_OK)
      return scene_release(&r, status);
    progress_update(&r.bar, t + 1);
  }
  progress_end(&r.bar);
  if (stop && *stop) {
    snprintf(err, err_size, "interrupted after the last frame, before the files were written");
    return scene_release(&r, PLM_ERR_INVALID_STATE);
  }
  /* The files are complete: they replace their paths together, or none does. */
  const int count = r.n_writers;
  r.n_writers = 0;
  status = image_writers_commit(r.writers, count, err, err_size);
  if (status != PLM_OK) return scene_release(&r, status);
  if (plume_rows) *plume_rows = plumes;
  return scene_release(&r, PLM_OK);
}

/* The outputs may be written and are different files: checked before the scene is made,
 * so that a failure while writing (a full disk) is a runtime failure. */
static int check_outputs(const char *out_path, const char *truth_path,
                         const char *calibration_dir) {
  const char *flags[2 + SCENE_CALIBRATION_FILES] = {"--out", "--truth"},
                        *paths[2 + SCENE_CALIBRATION_FILES] = {out_path, truth_path};
  char calibration[SCENE_CALIBRATION_FILES][SCENE_PATH_SIZE];
  char why[OUTPUT_PATH_WHY_SIZE], q[QUOTE_SIZE];
  int count = 2;
  for (int i = 0; calibration_dir && i < SCENE_CALIBRATION_FILES; i++, count++) {
    if (snprintf(calibration[i], SCENE_PATH_SIZE, "%s/%s", calibration_dir,
                 scene_calibration_files[i]) >= SCENE_PATH_SIZE) {
      fprintf(stderr, "plume scene: --calibration %s: too long\n",
              quote_value(calibration_dir, q, sizeof q));
      return EXIT_USAGE;
    }
    flags[count] = "--calibration";
    paths[count] = calibration[i];
  }
  for (int i = 0; i < count; i++)
    if (!output_path_usable(paths[i], why, sizeof why)) {
      fprintf(stderr, "plume scene: %s %s: %s\n", flags[i], quote_value(paths[i], q, sizeof q),
              why);
      return EXIT_USAGE;
    }
  for (int i = 0; i < count; i++)
    for (int j = i + 1; j < count; j++)
      if (same_file(paths[i], paths[j])) {
        fprintf(stderr, "plume scene: %s and %s name the same file (%s)\n", flags[i], flags[j],
                quote_value(paths[i], q, sizeof q));
        return EXIT_USAGE;
      }
  /* The frames are .npy and the truth a CSV, whatever the names say: a name for another
   * format is refused ('-', standard output, is taken). */
  const bool frames_fit = output_extension_fits(out_path, "npy", why, sizeof why);
  if (!frames_fit || !output_extension_fits(truth_path, "csv", why, sizeof why)) {
    fprintf(stderr, "plume scene: %s %s\n", frames_fit ? "--truth" : "--out", why);
    return EXIT_USAGE;
  }
  return -1;
}

static int scene_write(const scene_config *config, const char *out_path, const char *truth_path,
                       const char *calibration_dir, bool quiet) {
  const int refused = check_outputs(out_path, truth_path, calibration_dir);
  if (refused >= 0) return refused;
  char err[ERROR_SIZE] = "";
  int64_t plumes = 0;
  interrupt_catch();
  plm_status status = scene_write_files(config, out_path, truth_path, calibration_dir, !quiet,
                                        &interrupt_signal, &plumes, err, sizeof err);
  if (status != PLM_OK && interrupt_signal) {
    fprintf(stderr, "plume scene: interrupted by signal %d (%s); the outputs are as they were\n",
            (int)interrupt_signal, err);
    return interrupt_exit_code();
  }
  if (status != PLM_OK) {
    /* Exit 2 for a scene the config refuses, else 1: the outputs were checked, so a
     * failure to write them is the machine's (a full disk), not the arguments'. */
    fprintf(stderr, "plume scene: %s\n", err);
    return status == PLM_ERR_INVALID_ARG ? EXIT_USAGE : EXIT_RUNTIME_FAILURE;
  }
  /* The summary goes where no data does: stdout, or stderr when an output is stdout. */
  FILE *summary = strcmp(out_path, "-") == 0 || strcmp(truth_path, "-") == 0 ? stderr : stdout;
  if (!quiet)
    fprintf(summary,
            "scene: %lld frames of %lldx%lld (seed %llu%s), %lld plume rows -> %s, %s%s%s\n",
            (long long)config->frames, (long long)config->height, (long long)config->width,
            (unsigned long long)config->seed, config->difficulty == SCENE_HARD ? ", hard" : "",
            (long long)plumes, out_path, truth_path, calibration_dir ? ", calibration in " : "",
            calibration_dir ? calibration_dir : "");
  return interrupt_exit_code(); /* 0, or a signal that came during the renames */
}

/* A knob's value: a finite number > 0 (scene_create checks its range). */
static bool knob_parse(const char *text, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !isfinite(v) || !(v > 0.0)) return false;
  *out = v;
  return true;
}

/* The hard scene's knobs from their options (NULL when not given) into config->knobs;
 * false (with a message) when one is malformed or out of range, or given for a normal
 * scene. */
static bool scene_knobs_take(const char *clutter, const char *clutter_speed,
                             const char *plume_sigmas, const char *defects, scene_config *config) {
  if ((clutter || clutter_speed || plume_sigmas || defects) && config->difficulty != SCENE_HARD) {
    fprintf(stderr,
            "plume scene: --clutter, --clutter-speed, --plume-sigmas and --defects need "
            "--difficulty hard\n");
    return false;
  }
  scene_knobs *k = &config->knobs;
  const struct {
    const char *name, *text;
    double *value;
  } knobs[] = {{"--clutter", clutter, &k->clutter},
               {"--clutter-speed", clutter_speed, &k->clutter_speed},
               {"--defects", defects, &k->defects}};
  char q[QUOTE_SIZE];
  for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
    if (knobs[i].text && !knob_parse(knobs[i].text, knobs[i].value)) {
      fprintf(stderr, "plume scene: %s %s is not a number > 0\n", knobs[i].name,
              quote_value(knobs[i].text, q, sizeof q));
      return false;
    }
  }
  if (plume_sigmas) {
    char first[64];
    const char *comma = strchr(plume_sigmas, ',');
    size_t n = comma ? (size_t)(comma - plume_sigmas) : 0;
    if (!comma || n >= sizeof first) goto bad_sigmas;
    memcpy(first, plume_sigmas, n);
    first[n] = '\0';
    if (!knob_parse(first, &k->plume_sigmas[0]) || !knob_parse(comma + 1, &k->plume_sigmas[1]))
      goto bad_sigmas;
  }
  /* The ranges are scene_create's; its message names the knob. */
  scene *s = NULL;
  char err[SCENE_ERROR_SIZE];
  scene_config probe = *config;
  probe.frames = 1;
  probe.height = probe.width = SCENE_MIN_SIDE;
  if (scene_create(&probe, &s, err, sizeof err) != PLM_OK) {
    fprintf(stderr, "plume %s\n", err);
    return false;
  }
  scene_destroy(s);
  return true;
bad_sigmas:
  fprintf(stderr, "plume scene: --plume-sigmas %s is not MIN,MAX: two numbers > 0\n",
          quote_value(plume_sigmas, q, sizeof q));
  return false;
}

int scene_command_main(int argc, char **argv) {
  const char *frames = NULL, *size = NULL, *seed = NULL, *out = NULL, *truth = NULL,
             *difficulty = NULL, *calibration = NULL, *quiet = NULL, *quiet_long = NULL,
             *clutter = NULL, *clutter_speed = NULL, *plume_sigmas = NULL, *defects = NULL;
  option options[] = {{"--frames", &frames, false},
                      {"--size", &size, false},
                      {"--seed", &seed, false},
                      {"--out", &out, false},
                      {"--truth", &truth, false},
                      {"--difficulty", &difficulty, false},
                      {"--calibration", &calibration, false},
                      {"--clutter", &clutter, false},
                      {"--clutter-speed", &clutter_speed, false},
                      {"--plume-sigmas", &plume_sigmas, false},
                      {"--defects", &defects, false},
                      {"-q", &quiet, true},
                      {"--quiet", &quiet_long, true},
                      {NULL, NULL, false}};
  int exit_code = options_take("scene", scene_usage, options, argc, argv);
  if (exit_code >= 0) return exit_code;
  const char *missing = !frames  ? "--frames"
                        : !size  ? "--size"
                        : !out   ? "--out"
                        : !truth ? "--truth"
                                 : NULL;
  if (missing) {
    fprintf(stderr, "plume scene: %s is required (see plume scene --help)\n", missing);
    return EXIT_USAGE;
  }
  scene_config config = {.seed = 1};
  uint64_t v = 0;
  char q[QUOTE_SIZE];
  if (!count_parse(frames, NULL, 1, SCENE_MAX_FRAMES, &v)) {
    fprintf(stderr, "plume scene: --frames %s is not a count from 1 to %d\n",
            quote_value(frames, q, sizeof q), SCENE_MAX_FRAMES);
    return EXIT_USAGE;
  }
  config.frames = (int64_t)v;
  if (!size_parse(size, SCENE_MIN_SIDE, SCENE_MAX_SIDE, &config.height, &config.width)) {
    fprintf(stderr, "plume scene: --size %s is not H,W: two integers from %d to %d\n",
            quote_value(size, q, sizeof q), SCENE_MIN_SIDE, SCENE_MAX_SIDE);
    return EXIT_USAGE;
  }
  if (seed && !count_parse(seed, NULL, 0, UINT64_MAX, &config.seed)) {
    fprintf(stderr, "plume scene: --seed %s is not an integer from 0 to 2^64-1\n",
            quote_value(seed, q, sizeof q));
    return EXIT_USAGE;
  }
  if (difficulty && !scene_difficulty_parse(difficulty, &config.difficulty)) {
    fprintf(stderr, "plume scene: --difficulty %s is not normal or hard\n",
            quote_value(difficulty, q, sizeof q));
    return EXIT_USAGE;
  }
  if (!scene_knobs_take(clutter, clutter_speed, plume_sigmas, defects, &config)) return EXIT_USAGE;
  if (calibration && config.difficulty != SCENE_HARD) {
    fprintf(stderr,
            "plume scene: --calibration needs --difficulty hard (the normal scene has no "
            "calibration)\n");
    return EXIT_USAGE;
  }
  struct stat st;
  if (calibration && (stat(calibration, &st) != 0 || !S_ISDIR(st.st_mode))) {
    fprintf(stderr, "plume scene: --calibration %s is not an existing folder\n",
            quote_value(calibration, q, sizeof q));
    return EXIT_USAGE;
  }
  if (config.frames > IMAGE_MAX_ELEMENTS / (config.height * config.width)) {
    fprintf(stderr,
            "plume scene: %lld frames of %lldx%lld exceed the %lld pixels a .npy plume reads "
            "may hold\n",
            (long long)config.frames, (long long)config.height, (long long)config.width,
            (long long)IMAGE_MAX_ELEMENTS);
    return EXIT_USAGE;
  }
  if (strcmp(out, "-") == 0 && strcmp(truth, "-") == 0) {
    fprintf(stderr, "plume scene: --out and --truth are both - (standard output): one at most\n");
    return EXIT_USAGE;
  }
  if (strcmp(out, truth) == 0) {
    fprintf(stderr, "plume scene: --out and --truth name the same file %s\n",
            quote_value(out, q, sizeof q));
    return EXIT_USAGE;
  }
  /* A directory in the way would fail only at the renames, after all the work. */
  const char *paths[2] = {out, truth};
  for (int i = 0; i < 2; i++) {
    if (strcmp(paths[i], "-") != 0 && stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      fprintf(stderr, "plume scene: %s: is a directory\n", quote_value(paths[i], q, sizeof q));
      return EXIT_USAGE;
    }
  }
  return scene_write(&config, out, truth, calibration, quiet || quiet_long);
}

/* ---- plume score ----------------------------------------------------------------------- */

static const char score_usage[] =
    "usage: plume score --truth TRUTH.csv --detections DETECTIONS.csv [--radius R]\n"
    "                   [--skip-frames N] [--json]\n"
    "                   [--report FILE.html [--frames F] [--latency TIMES.csv]]\n"
    "\n"
    "Score detections against a scene's truth, frame by frame: a detection matches a plume\n"
    "of its frame when its centroid is within the radius of the plume's centre, closest\n"
    "pairs first, each plume and detection at most once; see support/score.h.\n"
    "\n"
    "options:\n"
    "  --truth TRUTH.csv     the truth of plume scene (frame,row,col,amplitude,sigma)\n"
    "  --detections CSV      detections as plume detect writes them: frame, then the\n"
    "                        regions columns of plume op label; the position is\n"
    "                        wcentroid_row,wcentroid_col (centroid_* where that is nan)\n"
    "  --radius R            the match radius in pixels (default: max(3, 2 sigma) of each\n"
    "                        plume)\n"
    "  --skip-frames N       leave frames 0..N-1 out of the score, truth and detections\n"
    "                        alike (the frames a temporal background needs to settle);\n"
    "                        default 0\n"
    "  --json                print the result as JSON, with each frame's counts (its\n"
    "                        truths, detections, true and false positives, false\n"
    "                        negatives), instead of the text; see support/score.h\n"
    "  --report FILE.html    also write a page to look at: the figures, precision against\n"
    "                        recall and detection against false alarms as a threshold on\n"
    "                        the regions' max rises, each frame's counts, the worst frames\n"
    "  --frames F            with --report: the frames (a stack, a FITS cube or a folder,\n"
    "                        as plume detect reads them), to draw the worst ones\n"
    "  --latency TIMES.csv   with --report: plume detect --latency's times, to draw each\n"
    "                        frame's latency over the frames (all of them: --skip-frames\n"
    "                        leaves them in)\n"
    "  -h, --help            show this help\n";

/* The detections CSV, read once: its rows (score_detections_of_table) and, when
 * want_strengths, each row's strength for the report (NULL without a max column). */
static plm_status read_detections(const char *path, bool want_strengths,
                                  score_detection **detections, int64_t *count, double **strengths,
                                  char *err, size_t err_size) {
  csv_table table;
  plm_status status = csv_read(path, &table, err, err_size);
  if (status != PLM_OK) return status;
  status = score_detections_of_table(path, &table, detections, count, err, err_size);
  if (status == PLM_OK && want_strengths)
    status = score_report_strengths_of_table(path, &table, strengths, err, err_size);
  csv_free(&table);
  return status;
}

/* plume score --report: the page (support/score_report.h) of in, with the worst frames
 * drawn when frames_path is given and each frame's latency when latency_path is. */
static plm_status write_report(const char *path, const char *frames_path, const char *latency_path,
                               score_report_input *in, char *err, size_t err_size) {
  frame_reader_info info;
  score_latency latency = {0};
  plm_status status = PLM_OK;
  if (frames_path) {
    status = frame_reader_open(frames_path, &info, &in->frames, err, err_size);
    frame_reader_allow_shapes(in->frames); /* a folder's frames of several shapes */
    in->frames_info = &info;
  }
  if (status == PLM_OK && latency_path) {
    status = score_latency_read(latency_path, &latency, err, err_size);
    in->latency = &latency;
  }
  if (status == PLM_OK) status = score_report_write(path, in, err, err_size);
  score_latency_free(&latency);
  frame_reader_close(in->frames);
  return status;
}

int score_command_main(int argc, char **argv) {
  const char *truth_path = NULL, *detections_path = NULL, *radius_text = NULL, *skip_text = NULL,
             *json = NULL, *report = NULL, *frames_path = NULL, *latency_path = NULL;
  option options[] = {{"--truth", &truth_path, false},
                      {"--detections", &detections_path, false},
                      {"--radius", &radius_text, false},
                      {"--skip-frames", &skip_text, false},
                      {"--json", &json, true},
                      {"--report", &report, false},
                      {"--frames", &frames_path, false},
                      {"--latency", &latency_path, false},
                      {NULL, NULL, false}};
  int exit_code = options_take("score", score_usage, options, argc, argv);
  if (exit_code >= 0) return exit_code;
  if (!truth_path || !detections_path) {
    fprintf(stderr, "plume score: %s is required (see plume score --help)\n",
            !truth_path ? "--truth" : "--detections");
    return EXIT_USAGE;
  }
  double radius = SCORE_RADIUS_DEFAULT;
  if (radius_text) {
    char *end = NULL;
    errno = 0;
    radius = strtod(radius_text, &end);
    if (end == radius_text || *end != '\0' || errno == ERANGE || !isfinite(radius) ||
        !(radius > 0)) {
      char q[QUOTE_SIZE];
      fprintf(stderr, "plume score: --radius %s is not a number > 0\n",
              quote_value(radius_text, q, sizeof q));
      return EXIT_USAGE;
    }
  }
  uint64_t skip = 0;
  if (skip_text && !count_parse(skip_text, NULL, 0, INT64_MAX, &skip)) {
    char q[QUOTE_SIZE];
    fprintf(stderr, "plume score: --skip-frames %s is not a count of frames\n",
            quote_value(skip_text, q, sizeof q));
    return EXIT_USAGE;
  }
  char err[ERROR_SIZE] = "";
  score_truth *truth = NULL;
  score_detection *detections = NULL;
  int64_t n_truth = 0, n_detections = 0;
  if ((frames_path || latency_path) && !report) {
    fprintf(stderr, "plume score: %s is drawn on --report's page: give both\n",
            frames_path ? "--frames" : "--latency");
    return EXIT_USAGE;
  }
  char why[OUTPUT_PATH_WHY_SIZE];
  if (report && (!output_path_usable(report, why, sizeof why) ||
                 !output_extension_fits(report, "html", why, sizeof why))) {
    char q[QUOTE_SIZE];
    fprintf(stderr, "plume score: --report %s: %s\n", quote_value(report, q, sizeof q), why);
    return EXIT_USAGE;
  }
  score_result result;
  score_frame *frames = NULL;
  int64_t n_frames = 0;
  double *strengths = NULL;
  plm_status status = score_read_truth(truth_path, &truth, &n_truth, err, sizeof err);
  if (status == PLM_OK)
    status = read_detections(detections_path, report != NULL, &detections, &n_detections,
                             &strengths, err, sizeof err);
  if (status == PLM_OK) {
    /* The strengths are the same CSV's rows: they leave with their detections. */
    int64_t kept = 0;
    for (int64_t i = 0; strengths && i < n_detections; i++)
      if (detections[i].frame >= (int64_t)skip) strengths[kept++] = strengths[i];
    score_skip_frames(truth, &n_truth, detections, &n_detections, (int64_t)skip);
    status = score_match_frames(truth, n_truth, detections, n_detections, radius, &result,
                                json ? &frames : NULL, json ? &n_frames : NULL, err, sizeof err);
  }
  if (status == PLM_OK && report) {
    score_report_input in = {.truth_path = truth_path,
                             .detections_path = detections_path,
                             .truth = truth,
                             .n_truth = n_truth,
                             .detections = detections,
                             .n_detections = n_detections,
                             .strengths = strengths,
                             .radius = radius,
                             .skipped_frames = (int64_t)skip};
    status = write_report(report, frames_path, latency_path, &in, err, sizeof err);
  }
  free(truth);
  free(detections);
  free(strengths);
  if (status != PLM_OK) {
    free(frames);
    fprintf(stderr, "plume score: %s\n", err);
    return status == PLM_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME_FAILURE : EXIT_USAGE;
  }
  if (!json) {
    score_result_print(stdout, &result, radius);
    return 0;
  }
  status = score_result_print_json(stdout, &result, frames, n_frames, radius, (int64_t)skip, err,
                                   sizeof err);
  free(frames);
  if (status != PLM_OK) { /* out of memory, or stdout failed: the run's, not the input's */
    fprintf(stderr, "plume score: %s\n", err);
    return EXIT_RUNTIME_FAILURE;
  }
  return 0;
}

void scene_commands_print_summary(FILE *out) {
  fprintf(out,
          "  scene --frames N --size H,W --out F.npy --truth T.csv [--difficulty hard]\n"
          "                                    write a synthetic infrared scene and its truth\n"
          "  score --truth T.csv --detections D.csv\n"
          "                                    score detections against a scene's truth\n");
}

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
#include <unistd.h>

#include "apps/image_io.h"
#include "apps/scene.h"
#include "apps/score.h"

enum { EXIT_RUNTIME_FAILURE = 1, EXIT_USAGE = 2 };
enum { ERROR_SIZE = 1024 };

/* ---- options --------------------------------------------------------------------------- */

/* A command's options: each flag's value is left in *value (NULL when not given). */
typedef struct option {
  const char *flag;
  const char **value;
} option;

/* Take "--flag value" and "--flag=value" arguments. Returns -1 to go on, 0 after
 * printing the help (-h, --help), else EXIT_USAGE after a message. */
static int take_options(const char *command, const char *usage, option *options, int argc,
                        char **argv) {
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    const char *equals = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
    size_t flag_length = equals ? (size_t)(equals - arg) : strlen(arg);
    option *o = NULL;
    for (option *p = options; p->flag; p++)
      if (strlen(p->flag) == flag_length && strncmp(arg, p->flag, flag_length) == 0) o = p;
    if (!o) {
      fprintf(stderr, "plume %s: unknown argument '%.60s' (see plume %s --help)\n", command, arg,
              command);
      return EXIT_USAGE;
    }
    if (!equals && i + 1 >= argc) {
      fprintf(stderr, "plume %s: option %s needs a value\n", command, o->flag);
      return EXIT_USAGE;
    }
    if (*o->value) {
      fprintf(stderr, "plume %s: option %s is given twice\n", command, o->flag);
      return EXIT_USAGE;
    }
    *o->value = equals ? equals + 1 : argv[++i];
  }
  return -1;
}

/* A decimal integer of digits only, from min to max. */
static bool parse_count(const char *text, const char **end, uint64_t min, uint64_t max,
                        uint64_t *value) {
  const char *p = text;
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') {
    unsigned digit = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
    p++;
  }
  if (p == text || v < min || v > max) return false;
  if (end)
    *end = p;
  else if (*p != '\0')
    return false;
  *value = v;
  return true;
}

/* ---- plume scene ----------------------------------------------------------------------- */

static const char scene_usage[] =
    "usage: plume scene --frames N --size H,W [--seed S] --out FRAMES.npy --truth TRUTH.csv\n"
    "\n"
    "Write a deterministic synthetic infrared scene: a 14-bit sensor (u16 values 0..16383)\n"
    "looking at a cluttered sky and earth (a soft horizon, drifting clouds and bands, column\n"
    "fixed-pattern noise, sensor noise) with hot moving plumes; see apps/scene.h.\n"
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
    "  -h, --help            show this help\n"
    "\n"
    "Both files are written atomically; a failure leaves neither.\n";

typedef struct scene_run {
  scene *scene;
  image_writer *frames, *truth;
  uint16_t *pixels;
  scene_truth *rows;
  char *text; /* the truth lines of one frame */
} scene_run;

static int scene_release(scene_run *r, int exit_code) {
  image_writer_abort(r->frames);
  image_writer_abort(r->truth);
  scene_destroy(r->scene);
  free(r->pixels);
  free(r->rows);
  free(r->text);
  return exit_code;
}

/* A failure with a message: exit 1 when out of memory, else 2. */
static int scene_failure(scene_run *r, plm_status status, const char *err) {
  fprintf(stderr, "plume scene: %s\n", err);
  return scene_release(r, status == PLM_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME_FAILURE : EXIT_USAGE);
}

static int scene_write(const scene_config *config, const char *out_path, const char *truth_path) {
  scene_run r = {0};
  char err[ERROR_SIZE] = "";
  plm_status status = scene_create(config, &r.scene, err, sizeof err);
  if (status != PLM_OK) return scene_failure(&r, status, err);
  const int64_t h = config->height, w = config->width, n = config->frames;
  int max_plumes = scene_max_plumes(r.scene);
  r.pixels = malloc((size_t)(h * w) * sizeof *r.pixels);
  r.rows = malloc((size_t)max_plumes * sizeof *r.rows);
  r.text = malloc((size_t)max_plumes * SCENE_TRUTH_ROW_SIZE);
  if (!r.pixels || !r.rows || !r.text) {
    fprintf(stderr, "plume scene: out of memory for a %lldx%lld frame\n", (long long)h,
            (long long)w);
    return scene_release(&r, EXIT_RUNTIME_FAILURE);
  }
  image shape = {.dtype = PLM_DTYPE_U16, .ndim = 3, .dims = {n, h, w}};
  if ((status = image_writer_open_npy(out_path, &shape, &r.frames, err, sizeof err)) != PLM_OK ||
      (status = image_writer_open_text(truth_path, &r.truth, err, sizeof err)) != PLM_OK ||
      (status = image_writer_write(r.truth, SCENE_TRUTH_HEADER, strlen(SCENE_TRUTH_HEADER), err,
                                   sizeof err)) != PLM_OK)
    return scene_failure(&r, status, err);
  int64_t plumes = 0;
  for (int64_t t = 0; t < n; t++) {
    int count = 0;
    if ((status = scene_render(r.scene, t, r.pixels, r.rows, &count, err, sizeof err)) != PLM_OK)
      return scene_failure(&r, status, err);
    size_t length = 0;
    for (int i = 0; i < count; i++)
      length += scene_truth_csv_row(&r.rows[i], r.text + length, SCENE_TRUTH_ROW_SIZE);
    plumes += count;
    if ((status = image_writer_write(r.frames, r.pixels, (size_t)(h * w) * sizeof *r.pixels, err,
                                     sizeof err)) != PLM_OK ||
        (status = image_writer_write(r.truth, r.text, length, err, sizeof err)) != PLM_OK)
      return scene_failure(&r, status, err);
  }
  /* Both files are complete: rename them into place; if the second rename fails, the
   * first file is removed again so that no half of a pair is left. */
  image_writer *frames = r.frames, *truth = r.truth;
  r.frames = NULL;
  status = image_writer_commit(frames, err, sizeof err);
  if (status != PLM_OK) return scene_failure(&r, status, err);
  r.truth = NULL;
  status = image_writer_commit(truth, err, sizeof err);
  if (status != PLM_OK) {
    unlink(out_path);
    return scene_failure(&r, status, err);
  }
  printf("scene: %lld frames of %lldx%lld (seed %llu), %lld plume rows -> %s, %s\n", (long long)n,
         (long long)h, (long long)w, (unsigned long long)config->seed, (long long)plumes, out_path,
         truth_path);
  return scene_release(&r, 0);
}

int scene_command_main(int argc, char **argv) {
  const char *frames = NULL, *size = NULL, *seed = NULL, *out = NULL, *truth = NULL;
  option options[] = {{"--frames", &frames}, {"--size", &size},   {"--seed", &seed},
                      {"--out", &out},       {"--truth", &truth}, {NULL, NULL}};
  int exit_code = take_options("scene", scene_usage, options, argc, argv);
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
  uint64_t v = 0, hv = 0, wv = 0;
  const char *end = NULL;
  if (!parse_count(frames, NULL, 1, SCENE_MAX_FRAMES, &v)) {
    fprintf(stderr, "plume scene: --frames '%.60s' is not a count from 1 to %d\n", frames,
            SCENE_MAX_FRAMES);
    return EXIT_USAGE;
  }
  config.frames = (int64_t)v;
  if (!parse_count(size, &end, SCENE_MIN_SIDE, SCENE_MAX_SIDE, &hv) || *end != ',' ||
      !parse_count(end + 1, NULL, SCENE_MIN_SIDE, SCENE_MAX_SIDE, &wv)) {
    fprintf(stderr, "plume scene: --size '%.60s' is not H,W: two integers from %d to %d\n", size,
            SCENE_MIN_SIDE, SCENE_MAX_SIDE);
    return EXIT_USAGE;
  }
  config.height = (int64_t)hv;
  config.width = (int64_t)wv;
  if (seed && !parse_count(seed, NULL, 0, UINT64_MAX, &config.seed)) {
    fprintf(stderr, "plume scene: --seed '%.60s' is not an integer from 0 to 2^64-1\n", seed);
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
  if (strcmp(out, truth) == 0) {
    fprintf(stderr, "plume scene: --out and --truth name the same file '%.200s'\n", out);
    return EXIT_USAGE;
  }
  /* A directory in the way would fail only at the renames, after all the work. */
  const char *paths[2] = {out, truth};
  for (int i = 0; i < 2; i++) {
    struct stat st;
    if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      fprintf(stderr, "plume scene: %.200s: is a directory\n", paths[i]);
      return EXIT_USAGE;
    }
  }
  return scene_write(&config, out, truth);
}

/* ---- plume score ----------------------------------------------------------------------- */

static const char score_usage[] =
    "usage: plume score --truth TRUTH.csv --detections DETECTIONS.csv [--radius R]\n"
    "\n"
    "Score detections against a scene's truth, frame by frame: a detection matches a plume\n"
    "of its frame when its centroid is within the radius of the plume's centre, closest\n"
    "pairs first, each plume and detection at most once; see apps/score.h.\n"
    "\n"
    "options:\n"
    "  --truth TRUTH.csv     the truth of plume scene (frame,row,col,amplitude,sigma)\n"
    "  --detections CSV      detections as plume detect writes them: frame, then the\n"
    "                        regions columns of plume op label; the position is\n"
    "                        wcentroid_row,wcentroid_col (centroid_* where that is nan)\n"
    "  --radius R            the match radius in pixels (default: max(3, 2 sigma) of each\n"
    "                        plume)\n"
    "  -h, --help            show this help\n";

int score_command_main(int argc, char **argv) {
  const char *truth_path = NULL, *detections_path = NULL, *radius_text = NULL;
  option options[] = {{"--truth", &truth_path},
                      {"--detections", &detections_path},
                      {"--radius", &radius_text},
                      {NULL, NULL}};
  int exit_code = take_options("score", score_usage, options, argc, argv);
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
      fprintf(stderr, "plume score: --radius '%.60s' is not a number > 0\n", radius_text);
      return EXIT_USAGE;
    }
  }
  char err[ERROR_SIZE] = "";
  score_truth *truth = NULL;
  score_detection *detections = NULL;
  int64_t n_truth = 0, n_detections = 0;
  score_result result;
  plm_status status = score_read_truth(truth_path, &truth, &n_truth, err, sizeof err);
  if (status == PLM_OK)
    status = score_read_detections(detections_path, &detections, &n_detections, err, sizeof err);
  if (status == PLM_OK)
    status =
        score_match(truth, n_truth, detections, n_detections, radius, &result, err, sizeof err);
  free(truth);
  free(detections);
  if (status != PLM_OK) {
    fprintf(stderr, "plume score: %s\n", err);
    return status == PLM_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME_FAILURE : EXIT_USAGE;
  }
  if (radius_text)
    printf("radius:            %g px\n", radius);
  else
    printf("radius:            max(%g, %g sigma) px\n", SCORE_RADIUS_MIN, SCORE_RADIUS_SIGMAS);
  printf("truth plumes:      %lld\n", (long long)result.truths);
  printf("detections:        %lld\n", (long long)result.detections);
  printf("true positives:    %lld\n", (long long)result.true_positives);
  printf("false positives:   %lld\n", (long long)result.false_positives);
  printf("false negatives:   %lld\n", (long long)result.false_negatives);
  printf("precision:         %.4f\n", result.precision);
  printf("recall:            %.4f\n", result.recall);
  printf("centroid error:    mean %.3f px, max %.3f px\n", result.mean_error, result.max_error);
  return 0;
}

void scene_commands_print_summary(FILE *out) {
  fprintf(out,
          "  scene --frames N --size H,W --out F.npy --truth T.csv\n"
          "                                    write a synthetic infrared scene and its truth\n"
          "  score --truth T.csv --detections D.csv\n"
          "                                    score detections against a scene's truth\n");
}

/* apps/demo.c: `plume demo` (apps/demo.h): scene -> detect -> score. */
#define _POSIX_C_SOURCE 200809L

#include "apps/demo.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apps/detect.h"
#include "apps/interrupt.h"
#include "apps/options.h"
#include "apps/scene_commands.h"
#include "benchmarks/pipeline_bench.h"
#include "streams/clock.h"
#include "support/image_io.h"
#include "support/quote.h"
#include "support/scene.h"
#include "support/score.h"

enum { DEMO_FRAMES = 2000, DEMO_SIDE = 512, DEMO_PATH_SIZE = 4096 };
enum { BENCH_FRAMES = 64 }; /* the scene's first frames, for the comparison */

static const char demo_usage[] =
    "usage: plume demo [--frames N] [--size H,W] [--seed S] [--backend host|cuda|auto]\n"
    "                  [--streams K] [--workdir DIR] [--keep] [--compare-frames N]\n"
    "                  [--difficulty normal|hard] [--preset NAME | --pipeline TEXT]\n"
    "\n"
    "The main job: write a synthetic infrared scene with hot moving plumes and its truth\n"
    "(as plume scene), detect the plumes with a pipeline (as plume detect), by default the\n"
    "preset 'default' on the normal scene and 'robust' on the hard one (plume detect\n"
    "--list-presets), and score the detections against the truth (as plume score, after\n"
    "the frames the preset's background needs to settle): precision, recall, the mean\n"
    "centroid error in pixels, and the frames per second. Then bench_pipeline's\n"
    "comparison (naive, pooled, streams, graph, fused) on the scene's first frames, with\n"
    "the demo's pipeline (unless it names tensors, which bench_pipeline does not take) and\n"
    "with bench_pipeline's fusable one.\n"
    "\n"
    "options:\n"
    "  --frames N            frames of the scene, 1..100000 (default 2000)\n"
    "  --size H,W            rows and columns of a frame, each 16..16384 (default 512,512)\n"
    "  --seed S              the scene's seed (default 1)\n"
    "  --backend B           host, cuda or auto (default auto; PLUME_BACKEND overrides auto)\n"
    "  --streams K           frames in flight, 1..16 (default 3)\n"
    "  --workdir DIR         where the files go (made if missing; default a new temporary\n"
    "                        folder): frames.npy (N*H*W*2 bytes: 1 GiB by default),\n"
    "                        truth.csv, detections.csv, and with hard gain.npy,\n"
    "                        offset.npy and bad.npy\n"
    "  --difficulty D        normal (the default) or hard: the scene of plume scene\n"
    "                        --difficulty D; with hard, the pipeline may name its\n"
    "                        calibration as the tensors @gain, @offset and @bad, e.g.\n"
    "                        'nuc gain=@gain offset=@offset ! conv2d ...'\n"
    "  --preset NAME         a named pipeline: default, robust or calibrated (the hard\n"
    "                        scene's calibration files are its tensors)\n"
    "  --pipeline TEXT       a pipeline of plume detect's text form instead (scored from\n"
    "                        frame 0)\n"
    "  --keep                keep the files (else they are removed at the end)\n"
    "  --compare-frames N    frames per timed run of the comparison, 0..1000000; 0 leaves\n"
    "                        it out (default: by frame size, as bench_pipeline --quick:\n"
    "                        20 frames' worth of 512x512 pixels)\n"
    "  -h, --help            show this help\n";

/* ---- the working folder ----------------------------------------------------------------- */

typedef struct demo_files {
  char dir[DEMO_PATH_SIZE];
  bool made_dir; /* removed at the end when empty, unless kept */
  char frames[DEMO_PATH_SIZE], truth[DEMO_PATH_SIZE], detections[DEMO_PATH_SIZE];
  /* the hard scene's calibration (scene_calibration_files), written into dir */
  char calibration[SCENE_CALIBRATION_FILES][DEMO_PATH_SIZE];
} demo_files;

/* The names of the calibration's tensors in the pipeline, in scene_calibration_files'
 * order. */
static const char *const calibration_tensors[SCENE_CALIBRATION_FILES] = {"gain", "offset", "bad"};

/* Make (or take) the working folder and name the files in it. Returns 0, or EXIT_USAGE
 * after a message. */
static int open_workdir(const char *workdir, demo_files *files) {
  char q[QUOTE_SIZE];
  if (workdir) {
    if (snprintf(files->dir, sizeof files->dir, "%s", workdir) >= (int)sizeof files->dir) {
      fprintf(stderr, "plume demo: --workdir is longer than %d bytes\n", DEMO_PATH_SIZE - 64);
      return EXIT_USAGE;
    }
    struct stat st;
    if (stat(workdir, &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "plume demo: --workdir %s: not a directory\n",
                quote_value(workdir, q, sizeof q));
        return EXIT_USAGE;
      }
    } else if (mkdir(workdir, 0777) != 0) {
      fprintf(stderr, "plume demo: --workdir %s: cannot make it: %s\n",
              quote_value(workdir, q, sizeof q), strerror(errno));
      return EXIT_USAGE;
    } else {
      files->made_dir = true;
    }
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(files->dir, sizeof files->dir, "%s/plume-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(files->dir)) {
      fprintf(stderr, "plume demo: cannot make a temporary folder %s: %s\n",
              quote_value(files->dir, q, sizeof q), strerror(errno));
      return EXIT_USAGE;
    }
    files->made_dir = true;
  }
  enum { FILES = 3 + SCENE_CALIBRATION_FILES };
  const char *names[FILES] = {"frames.npy", "truth.csv", "detections.csv"};
  char *paths[FILES] = {files->frames, files->truth, files->detections};
  for (int i = 0; i < SCENE_CALIBRATION_FILES; i++) {
    names[3 + i] = scene_calibration_files[i];
    paths[3 + i] = files->calibration[i];
  }
  for (int i = 0; i < FILES; i++)
    if (snprintf(paths[i], DEMO_PATH_SIZE, "%s/%s", files->dir, names[i]) >= DEMO_PATH_SIZE) {
      fprintf(stderr, "plume demo: --workdir is too long\n");
      if (files->made_dir) rmdir(files->dir);
      return EXIT_USAGE;
    }
  return 0;
}

static void close_workdir(const demo_files *files, bool keep) {
  if (keep) return;
  unlink(files->frames);
  unlink(files->truth);
  unlink(files->detections);
  for (int i = 0; i < SCENE_CALIBRATION_FILES; i++) unlink(files->calibration[i]);
  if (files->made_dir) rmdir(files->dir);
}

/* ---- the steps ---------------------------------------------------------------------------- */

typedef struct demo_config {
  scene_config scene;
  detect_config detect;
  detect_tensor tensors[SCENE_CALIBRATION_FILES]; /* the calibration, with hard */
  const char *pipeline_name;                      /* the preset's name, or "given" */
  int skip_frames; /* left out of the score: the preset's settle_frames */
  bool keep;
  int64_t compare_frames; /* per timed run of the comparison; 0: none; -1: by frame size */
} demo_config;

/* Take the arguments into config. Returns -1 to go on, else an exit code. */
static int parse_arguments(int argc, char **argv, demo_config *config, const char **workdir) {
  const char *frames = NULL, *size = NULL, *seed = NULL, *backend = NULL, *streams = NULL,
             *keep = NULL, *difficulty = NULL, *pipeline = NULL, *preset = NULL,
             *compare_frames = NULL;
  option options[] = {{"--frames", &frames, false},
                      {"--size", &size, false},
                      {"--seed", &seed, false},
                      {"--backend", &backend, false},
                      {"--streams", &streams, false},
                      {"--workdir", workdir, false},
                      {"--keep", &keep, true},
                      {"--compare-frames", &compare_frames, false},
                      {"--difficulty", &difficulty, false},
                      {"--pipeline", &pipeline, false},
                      {"--preset", &preset, false},
                      {NULL, NULL, false}};
  int exit_code = options_take("demo", demo_usage, options, argc, argv);
  if (exit_code >= 0) return exit_code;
  scene_config *sc = &config->scene;
  char q[QUOTE_SIZE];
  *sc = (scene_config){.frames = DEMO_FRAMES, .height = DEMO_SIDE, .width = DEMO_SIDE, .seed = 1};
  uint64_t v = 0;
  if (frames) {
    if (!count_parse(frames, NULL, 1, SCENE_MAX_FRAMES, &v)) {
      fprintf(stderr, "plume demo: --frames %s is not a count from 1 to %d\n",
              quote_value(frames, q, sizeof q), SCENE_MAX_FRAMES);
      return EXIT_USAGE;
    }
    sc->frames = (int64_t)v;
  }
  if (size && !size_parse(size, SCENE_MIN_SIDE, SCENE_MAX_SIDE, &sc->height, &sc->width)) {
    fprintf(stderr, "plume demo: --size %s is not H,W: two integers from %d to %d\n",
            quote_value(size, q, sizeof q), SCENE_MIN_SIDE, SCENE_MAX_SIDE);
    return EXIT_USAGE;
  }
  if (seed && !count_parse(seed, NULL, 0, UINT64_MAX, &sc->seed)) {
    fprintf(stderr, "plume demo: --seed %s is not an integer from 0 to 2^64-1\n",
            quote_value(seed, q, sizeof q));
    return EXIT_USAGE;
  }
  if (difficulty && !scene_difficulty_parse(difficulty, &sc->difficulty)) {
    fprintf(stderr, "plume demo: --difficulty %s is not normal or hard\n",
            quote_value(difficulty, q, sizeof q));
    return EXIT_USAGE;
  }
  if (pipeline && !*pipeline) {
    fprintf(stderr, "plume demo: --pipeline is empty\n");
    return EXIT_USAGE;
  }
  if (pipeline && preset) {
    fprintf(stderr, "plume demo: --pipeline and --preset are given; choose one\n");
    return EXIT_USAGE;
  }
  const plm_preset *named = NULL;
  if (!pipeline) {
    if (!preset) preset = sc->difficulty == SCENE_HARD ? "robust" : "default";
    named = plm_pipeline_preset(preset);
    if (!named) {
      fprintf(stderr, "plume demo: --preset %s is not a preset (plume detect --list-presets)\n",
              quote_value(preset, q, sizeof q));
      return EXIT_USAGE;
    }
    if (named->tensors[0] && sc->difficulty != SCENE_HARD) {
      fprintf(stderr,
              "plume demo: --preset %s needs the hard scene's calibration "
              "(--difficulty hard)\n",
              named->name);
      return EXIT_USAGE;
    }
  }
  config->pipeline_name = named ? named->name : "given";
  config->skip_frames = named ? named->settle_frames : 0;
  if (sc->frames > IMAGE_MAX_ELEMENTS / (sc->height * sc->width)) {
    fprintf(stderr, "plume demo: %lld frames of %lldx%lld exceed the %lld pixels a .npy may hold\n",
            (long long)sc->frames, (long long)sc->height, (long long)sc->width,
            (long long)IMAGE_MAX_ELEMENTS);
    return EXIT_USAGE;
  }
  detect_config *detect = &config->detect;
  *detect = (detect_config){.pipeline = named ? named->pipeline : pipeline,
                            .show_progress = true,
                            .stop = &interrupt_signal};
  if (backend && plm_backend_parse(backend, &detect->backend) != PLM_OK) {
    fprintf(stderr, "plume demo: --backend %s is not host, cuda or auto\n",
            quote_value(backend, q, sizeof q));
    return EXIT_USAGE;
  }
  if (streams) {
    if (!count_parse(streams, NULL, 1, PLM_PIPELINE_MAX_FRAMES, &v)) {
      fprintf(stderr, "plume demo: --streams %s is not a count from 1 to %d\n",
              quote_value(streams, q, sizeof q), PLM_PIPELINE_MAX_FRAMES);
      return EXIT_USAGE;
    }
    detect->frames_in_flight = (int)v;
  }
  config->keep = keep != NULL;
  config->compare_frames = -1;
  if (compare_frames) {
    if (!count_parse(compare_frames, NULL, 0, 1000000, &v)) {
      fprintf(stderr, "plume demo: --compare-frames %s is not a count from 0 to 1000000\n",
              quote_value(compare_frames, q, sizeof q));
      return EXIT_USAGE;
    }
    config->compare_frames = (int64_t)v;
  }
  return -1;
}

/* Score the detections against the truth from frame `skip` on and print the figures. */
static plm_status score_files(const demo_files *files, int64_t skip, char *err, size_t err_size) {
  score_truth *truth = NULL;
  score_detection *detections = NULL;
  int64_t n_truth = 0, n_detections = 0;
  score_result result;
  plm_status status = score_read_truth(files->truth, &truth, &n_truth, err, err_size);
  if (status == PLM_OK)
    status = score_read_detections(files->detections, &detections, &n_detections, err, err_size);
  if (status == PLM_OK) {
    score_skip_frames(truth, &n_truth, detections, &n_detections, skip);
    status = score_match(truth, n_truth, detections, n_detections, SCORE_RADIUS_DEFAULT, &result,
                         err, err_size);
  }
  free(truth);
  free(detections);
  if (status != PLM_OK) return status;
  printf(
      "\nscore: a detection matches a plume of its frame within max(%g, %g sigma) px of its "
      "centre,\nclosest pairs first (as plume score --skip-frames %lld: the frames the "
      "background\nneeds to settle are left out)\n",
      SCORE_RADIUS_MIN, SCORE_RADIUS_SIGMAS, (long long)skip);
  score_result_print(stdout, &result, SCORE_RADIUS_DEFAULT);
  return PLM_OK;
}

/* "the host backend: AMD EPYC 7B13 (2 cores)": the device a context on backend gets. */
static plm_status describe_device(plm_backend backend, char *text, size_t size) {
  plm_context_config config = {.backend = backend};
  plm_context *ctx = NULL;
  plm_device_info info;
  plm_status status = plm_context_create(&config, &ctx);
  if (status == PLM_OK) status = plm_context_device_info(ctx, &info);
  if (status == PLM_OK && info.backend == PLM_BACKEND_CUDA)
    snprintf(text, size, "the cuda backend: %s (%d SMs)", info.name, info.multiprocessors);
  else if (status == PLM_OK)
    snprintf(text, size, "the %s backend: %s (%d cores)", plm_backend_name(info.backend), info.name,
             info.multiprocessors);
  if (ctx && plm_context_destroy(ctx) != PLM_OK && status == PLM_OK) status = PLM_ERR_INTERNAL;
  return status;
}

/* bench_pipeline's comparison (benchmarks/pipeline_bench.h) on the scene's first frames, for
 * the demo's pipeline and for bench_pipeline's default one, whose sobel -> entropy ->
 * threshold chain fuses. Returns pipeline_bench_run's exit code. */
static int compare_configs(const demo_config *config, const demo_files *files, char *err,
                           size_t err_size) {
  if (config->compare_frames == 0) {
    printf("\ncomparison: left out (--compare-frames 0)\n");
    return 0;
  }
  image frame;
  int64_t count = 0;
  image_frames *frames = NULL;
  if (image_frames_open(files->frames, &frame, &count, &frames, err, err_size) != PLM_OK)
    return EXIT_RUNTIME_FAILURE;
  if (count > BENCH_FRAMES) count = BENCH_FRAMES;
  const size_t frame_bytes = image_bytes(&frame);
  char *pixels = malloc((size_t)count * frame_bytes);
  int exit_code = pixels ? 0 : EXIT_RUNTIME_FAILURE;
  if (!pixels) snprintf(err, err_size, "no host memory for %lld frames", (long long)count);
  for (int64_t k = 0; exit_code == 0 && k < count; k++)
    if (image_frames_read(frames, k, pixels + (size_t)k * frame_bytes, err, err_size) != PLM_OK)
      exit_code = EXIT_RUNTIME_FAILURE;
  image_frames_close(frames);
  char name[96];
  snprintf(name, sizeof name, "the demo's scene, seed %llu, frames 0..%lld",
           (unsigned long long)config->scene.seed, (long long)count - 1);
  const pipeline_bench_frames from = {.pixels = pixels,
                                      .count = count,
                                      .height = frame.dims[0],
                                      .width = frame.dims[1],
                                      .dtype = frame.dtype,
                                      .name = name};
  const char *pipelines[] = {config->detect.pipeline, PIPELINE_BENCH_DEFAULT};
  for (int p = 0; exit_code == 0 && p < 2 && !interrupt_signal; p++) {
    if (strchr(pipelines[p], '@')) {
      printf(
          "\ncomparison %d of 2: left out: the pipeline names tensors, which bench_pipeline "
          "does not take\n",
          p + 1);
      continue;
    }
    printf("\ncomparison %d of 2 (as bench_pipeline --quick):\n", p + 1);
    fflush(stdout);
    const pipeline_bench_options options = {.backend = config->detect.backend,
                                            .quick = true,
                                            .frames = config->compare_frames > 0
                                                          ? config->compare_frames
                                                          : 0,
                                            .pipeline = pipelines[p],
                                            .frames_from = &from,
                                            .prog = "plume demo"};
    exit_code = pipeline_bench_run(&options, stdout, NULL);
    if (exit_code != 0) snprintf(err, err_size, "the comparison failed (see above)");
  }
  free(pixels);
  return exit_code;
}

/* Report a failure, remove the files (unless kept); an interruption exits 128 + signal. */
static int demo_failure(const demo_files *files, bool keep, plm_status status, const char *err) {
  close_workdir(files, keep);
  if (interrupt_signal) {
    fprintf(stderr, "plume demo: interrupted by signal %d (%s)%s\n", (int)interrupt_signal, err,
            keep ? "" : "; its files are removed");
    return interrupt_exit_code();
  }
  fprintf(stderr, "plume demo: %s\n", err);
  /* The working folder was checked when it was made: a file that fails after that is
   * the machine's failure (a full disk), not the arguments'. */
  return status == PLM_ERR_IO ? EXIT_RUNTIME_FAILURE : detect_exit_code(status);
}

int demo_command_main(int argc, char **argv) {
  demo_config config;
  const char *workdir = NULL;
  int exit_code = parse_arguments(argc, argv, &config, &workdir);
  if (exit_code >= 0) return exit_code;
  interrupt_catch(); /* before the folder exists: a signal before it leaves nothing */
  demo_files files = {0};
  if ((exit_code = open_workdir(workdir, &files)) != 0) return exit_code;
  const double started = plm__monotonic_seconds();
  /* The backend is checked before the scene is written: an unusable one fails at once. */
  char device[320] = "";
  plm_status status = describe_device(config.detect.backend, device, sizeof device);
  if (status != PLM_OK) return demo_failure(&files, config.keep, status, plm_last_error());
  const scene_config *sc = &config.scene;
  printf("plume demo: %lld frames of %lldx%lld (seed %llu%s) through the %s pipeline\n  %s\n",
         (long long)sc->frames, (long long)sc->height, (long long)sc->width,
         (unsigned long long)sc->seed, sc->difficulty == SCENE_HARD ? ", hard" : "",
         config.pipeline_name, config.detect.pipeline);
  printf("on %s\nfiles in %s (%s)\n\n", device, files.dir,
         config.keep ? "kept" : "removed at the end");
  fflush(stdout);

  char err[DETECT_ERROR_SIZE] = "";
  int64_t plumes = 0;
  double step = plm__monotonic_seconds();
  const bool hard = sc->difficulty == SCENE_HARD;
  status = scene_write_files(sc, files.frames, files.truth, hard ? files.dir : NULL, true,
                             &interrupt_signal, &plumes, err, sizeof err);
  if (status != PLM_OK) return demo_failure(&files, config.keep, status, err);
  printf("scene: %lld frames, %lld plumes in the truth, written in %.2f s\n", (long long)sc->frames,
         (long long)plumes, plm__monotonic_seconds() - step);
  fflush(stdout);

  config.detect.frames_path = files.frames;
  config.detect.out_path = files.detections;
  /* The hard scene's calibration, for a pipeline that names @gain, @offset or @bad. */
  for (int i = 0; hard && i < SCENE_CALIBRATION_FILES; i++)
    config.tensors[i] =
        (detect_tensor){.name = calibration_tensors[i], .path = files.calibration[i]};
  config.detect.tensors = config.tensors;
  config.detect.tensor_count = hard ? SCENE_CALIBRATION_FILES : 0;
  detect_result detected;
  status = detect_run(&config.detect, &detected, err, sizeof err);
  if (status != PLM_OK) return demo_failure(&files, config.keep, status, err);
  printf("detect: %lld regions\n", (long long)detected.regions);
  detect_print_summary(stdout, &detected);

  status = score_files(&files, config.skip_frames, err, sizeof err);
  if (status == PLM_OK && interrupt_signal) {
    snprintf(err, sizeof err, "after the score");
    status = PLM_ERR_INVALID_STATE;
  }
  if (status != PLM_OK) return demo_failure(&files, config.keep, status, err);

  if (compare_configs(&config, &files, err, sizeof err) != 0)
    return demo_failure(&files, config.keep, PLM_ERR_INVALID_STATE, err);
  if (interrupt_signal) {
    snprintf(err, sizeof err, "during the comparison");
    return demo_failure(&files, config.keep, PLM_ERR_INVALID_STATE, err);
  }

  printf("\ndemo: %.1f s in all\n", plm__monotonic_seconds() - started);
  close_workdir(&files, config.keep);
  return 0;
}

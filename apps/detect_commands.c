/* apps/detect_commands.c: `plume detect` (apps/detect_commands.h). */
#include "apps/detect_commands.h"

#include <stdint.h>
#include <string.h>

#include "apps/detect.h"
#include "apps/options.h"
#include "apps/scene.h"

enum { EXIT_USAGE = 2 };

static const char detect_usage[] =
    "usage: plume detect --frames FRAMES.npy|DIR --pipeline \"TEXT\" --out DETECTIONS.csv\n"
    "                    [--backend host|cuda|auto] [--streams K] [--profile DIR]\n"
    "\n"
    "Run a pipeline over a sequence of frames and write the regions it finds.\n"
    "\n"
    "options:\n"
    "  --frames PATH         the frames: a .npy stack (N, H, W), read frame by frame, or a\n"
    "                        2-D .npy, PGM or PNG (one frame); or a folder whose .npy, .pgm\n"
    "                        and .png files (one frame each, all of one dtype and shape)\n"
    "                        are the frames in the byte order of their names (zero-pad the\n"
    "                        numbers). u8, u16 or f32 (a '<f8' .npy is read as f32).\n"
    "  --pipeline TEXT       the pipeline (the text form of plume/pipeline.h), ending in\n"
    "                        'label ! regions' or 'segment', for example\n"
    "                        \"" PLUME_DEFAULT_PIPELINE
    "\"\n"
    "                        capacity=C of regions bounds the regions kept per frame\n"
    "                        (default: the most a frame can hold)\n"
    "  --out CSV             one row per region: frame,label,area,min_row,min_col,max_row,\n"
    "                        max_col,centroid_row,centroid_col,sum,max,wcentroid_row,\n"
    "                        wcentroid_col (what plume score reads); written atomically\n"
    "  --backend B           host, cuda or auto (default auto; PLUME_BACKEND overrides auto)\n"
    "  --streams K           frames in flight, 1..16 (default 3): each has its own stream,\n"
    "                        pinned buffers and workspace, so that one frame's upload\n"
    "                        overlaps the previous one's compute\n"
    "  --profile DIR         time every step, upload and download of every frame and write\n"
    "                        DIR/profile.json (statistics per op), DIR/trace.json (Chrome\n"
    "                        trace: Perfetto, chrome://tracing) and DIR/report.html; CUDA\n"
    "                        graphs are off while profiling\n"
    "  -h, --help            show this help\n"
    "\n"
    "A progress bar is drawn on stderr when it is a terminal; at the end the frames per\n"
    "second are printed.\n";

int detect_command_main(int argc, char **argv) {
  const char *frames = NULL, *pipeline = NULL, *out = NULL, *backend = NULL, *streams = NULL,
             *profile = NULL;
  option options[] = {{"--frames", &frames, false},
                      {"--pipeline", &pipeline, false},
                      {"--out", &out, false},
                      {"--backend", &backend, false},
                      {"--streams", &streams, false},
                      {"--profile", &profile, false},
                      {NULL, NULL, false}};
  int exit_code = options_take("detect", detect_usage, options, argc, argv);
  if (exit_code >= 0) return exit_code;
  const char *missing = !frames ? "--frames" : !pipeline ? "--pipeline" : !out ? "--out" : NULL;
  if (missing) {
    fprintf(stderr, "plume detect: %s is required (see plume detect --help)\n", missing);
    return EXIT_USAGE;
  }
  detect_config config = {.frames_path = frames,
                          .pipeline = pipeline,
                          .out_path = out,
                          .show_progress = true,
                          .profile_dir = profile};
  if (backend && plm_backend_parse(backend, &config.backend) != PLM_OK) {
    fprintf(stderr, "plume detect: --backend '%.60s' is not host, cuda or auto\n", backend);
    return EXIT_USAGE;
  }
  uint64_t k = 0;
  if (streams) {
    if (!options_parse_count(streams, NULL, 1, PLM_PIPELINE_MAX_FRAMES, &k)) {
      fprintf(stderr, "plume detect: --streams '%.60s' is not a count from 1 to %d\n", streams,
              PLM_PIPELINE_MAX_FRAMES);
      return EXIT_USAGE;
    }
    config.frames_in_flight = (int)k;
  }
  char err[DETECT_ERROR_SIZE] = "";
  detect_result result;
  plm_status status = detect_run(&config, &result, err, sizeof err);
  if (status != PLM_OK) {
    fprintf(stderr, "plume detect: %s\n", err);
    return detect_exit_code(status);
  }
  printf("detect: %lld frames of %lldx%lld %s from %s, %lld regions -> %s\n",
         (long long)result.frames.count, (long long)result.frames.height,
         (long long)result.frames.width, plm_dtype_name(result.frames.dtype), frames,
         (long long)result.regions, out);
  detect_print_summary(stdout, &result);
  if (profile) printf("profile: %s/profile.json, trace.json, report.html\n", profile);
  return 0;
}

void detect_commands_print_summary(FILE *out) {
  fprintf(out,
          "  detect --frames F.npy|DIR --pipeline \"...\" --out D.csv\n"
          "                                    run a pipeline over frames, write the regions\n"
          "  demo [--frames N] [--size H,W]    a scene, the default pipeline over it, its score\n");
}

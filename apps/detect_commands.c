/* apps/detect_commands.c: `plume detect` (apps/detect_commands.h). */
#include "apps/detect_commands.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apps/detect.h"
#ifdef PLUME_HAVE_MPI
#include "apps/detect_mpi.h"
#endif
#include "apps/interrupt.h"
#include "apps/options.h"
#include "support/launcher.h"
#include "support/overlay.h"
#include "support/quote.h"
#include "support/regular_file.h"

static const char detect_usage[] =
    "usage: plume detect --frames FRAMES|DIR|- (--pipeline \"TEXT\" | --preset NAME)\n"
    "                    --out DETECTIONS.csv [--tensor NAME=FILE.npy]...\n"
    "                    [--raw-shape HxW [--raw-dtype u8|u16|f32] [--raw-endian E]\n"
    "                    [--raw-header BYTES]] [--h5-values physical|stored]\n"
    "                    [--backend host|cuda|auto] [--streams K] [--batch N|auto]\n"
    "                    [--profile DIR]\n"
    "                    [--latency TIMES.csv]\n"
    "                    [--progress] [--mpi] [-q]\n"
    "       plume detect --list-presets\n"
    "\n"
    "Run a pipeline over a sequence of frames and write the regions it finds.\n"
    "\n"
    "options:\n"
    "  --frames PATH         the frames: a .npy stack (N, H, W), a TIFF of N pages, a\n"
    "                        FITS cube or an HDF5/NetCDF-4 dataset (N, H, W) (FILE.h5:\n"
    "                        /path/to/dataset, or FILE.h5 for its only 2-D or 3-D\n"
    "                        dataset), read frame by frame, or a 2-D .npy, PGM, PNG, FITS\n"
    "                        image or HDF5 dataset (one frame); or a folder whose .npy,\n"
    "                        .pgm, .png, .tif, .tiff, .fits, .fit, .fts, .h5, .hdf5, .he5\n"
    "                        and .nc files (one frame each, all of one dtype; their sizes\n"
    "                        may differ: each size runs its own pipeline) are the frames\n"
    "                        in the byte order of their names (zero-pad the numbers). u8,\n"
    "                        u16 or f32 (a '<f8' .npy is read as f32).\n"
    "                        A video (.mkv, .avi, .mp4, .mov, .nut; '-': streamed on\n"
    "                        standard input) decoded frame by frame as gray u8 or u16.\n"
    "                        With --raw-shape: raw frames, from a file or '-' (standard\n"
    "                        input, a sensor's pipe), read frame by frame as they come\n"
    "  --raw-shape HxW       raw frames of H rows of W samples each, back to back with\n"
    "                        nothing between them (H,W is read alike)\n"
    "  --raw-dtype T         the raw samples: u8 (the default), u16 or f32\n"
    "  --raw-endian E        their byte order: little (the default) or big\n"
    "  --raw-header BYTES    bytes to skip before the first raw frame (default 0)\n"
    "  --h5-values V         an HDF5 dataset's values: physical (the default: its CF\n"
    "                        scale_factor and add_offset applied, _FillValue and\n"
    "                        missing_value as NaN, f32) or stored (as the file holds them)\n"
    "  --pipeline TEXT       the pipeline (the text form of plume/pipeline.h), ending in\n"
    "                        'label ! regions' or 'segment', for example\n"
    "                        \"" PLM_PRESET_DEFAULT_PIPELINE
    "\"\n"
    "                        capacity=C of regions bounds the regions kept per frame\n"
    "                        (default: the most a frame can hold)\n"
    "  --preset NAME         a named pipeline instead of --pipeline: default, robust or\n"
    "                        calibrated (plume/presets.h; --list-presets shows them)\n"
    "  --list-presets        print each preset's name, what it is for, the tensors it\n"
    "                        needs, the frames its background needs to settle and its text\n"
    "  --out CSV             one row per region: frame,label,area,min_row,min_col,max_row,\n"
    "                        max_col,centroid_row,centroid_col,sum,max,wcentroid_row,\n"
    "                        wcentroid_col (what plume score reads); written atomically.\n"
    "                        '-': to standard output, written as the frames finish (the\n"
    "                        summary then goes to stderr). A name ending in another\n"
    "                        extension than .csv is refused\n"
    "  --tensor NAME=FILE    an array (.npy, 1-D to 4-D; '<f8' read as f32) that the\n"
    "                        pipeline names as @NAME, for example a matched filter,\n"
    "                        \"conv2d kernel=@psf pad=same ! ...\", or a background to take\n"
    "                        away from f32 values, \"... ! vector_add b=@dark beta=-1 ! ...\";\n"
    "                        NAME is letters, digits, '_', '-' and '.'; up to 16 of them\n"
    "  --backend B           host, cuda or auto (default auto: with a GPU, the backend the\n"
    "                        cost model predicts faster for this pipeline and frame size;\n"
    "                        PLUME_BACKEND overrides auto)\n"
    "  --streams K           frames in flight, 1..16 (default 3): each has its own stream,\n"
    "                        pinned buffers and workspace, so that one frame's upload\n"
    "                        overlaps the previous one's compute\n"
    "  --batch N             run N frames at a time as one stack (N, H, W), each step one\n"
    "                        launch per N frames, which is what makes small frames fast\n"
    "                        on a GPU (default 1: a frame at a time); the rows are the\n"
    "                        same. Every element must take stacks (segment does not:\n"
    "                        write threshold ! label ! regions). Up to 65536; not with\n"
    "                        --mpi. auto: the batch plume tune measured fastest for this\n"
    "                        device and the frames' size (1 until plume tune has run)\n"
    "  --profile DIR         time every step, upload and download of every frame and write\n"
    "                        DIR/profile.json (statistics per op), DIR/trace.json (Chrome\n"
    "                        trace: Perfetto, chrome://tracing), DIR/report.html (with a\n"
    "                        map of the device pool at the end of the run) and\n"
    "                        DIR/pool_snapshot.json; CUDA graphs are off while profiling\n"
    "  --latency CSV         each frame's times after the run: frame,read_s,written_s,\n"
    "                        latency_ms (when its read finished and its rows were written,\n"
    "                        in seconds from the start, and the time between them); plume\n"
    "                        score --report --latency draws it; '-': to standard output\n"
    "                        after the run (the summary then goes to stderr). Not with --mpi\n"
    "  --overlay DIR         after the run, draw each frame with its regions (a red box\n"
    "                        and a yellow centroid) as DIR/frame_NNNNNN.png (DIR must\n"
    "                        exist; not with --out -, frames from '-' or --mpi)\n"
    "  --truth T.csv         with --overlay, draw the truth plumes of plume scene too, as\n"
    "                        green circles of the radius plume score matches within\n"
    "  --progress            draw the progress bar even when stderr is not a terminal\n"
    "                        (under mpirun, rank 0 draws it over all the ranks' frames)\n"
    "  --mpi                 share the frames among the ranks of an MPI job (mpirun -n N\n"
    "                        plume detect ...): each rank runs its block of frames on its\n"
    "                        own device, rank 0 writes the one CSV, identical to one\n"
    "                        process's; taken by itself under mpirun (OMPI_COMM_WORLD_SIZE\n"
    "                        or PMI_SIZE above 1). Not for stateful pipelines (background)\n"
    "  -q, --quiet           print no summary and draw no progress bar\n"
    "  -h, --help            show this help\n"
    "\n"
    "A progress bar is drawn on stderr when it is a terminal; at the end a summary with the\n"
    "frames per second is printed (on stdout, or on stderr with --out -).\n";

/* The --tensor NAME=FILE arguments, which may be repeated (options_take takes each flag
 * once): taken out of argv into tensors[] (names copied into names[]), the other
 * arguments left in rest[] in their order. Returns -1 to go on, else 2 after a message. */
enum { TENSOR_NAME_SIZE = 64 };

static int take_tensors(int argc, char **argv, char **rest, int *rest_count, detect_tensor *tensors,
                        char (*names)[TENSOR_NAME_SIZE], int *count) {
  *rest_count = *count = 0;
  char q[QUOTE_SIZE];
  for (int i = 0; i < argc; i++) {
    const char *value = NULL;
    if (strcmp(argv[i], "--tensor") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "plume detect: option --tensor needs a value\n");
        return EXIT_USAGE;
      }
      value = argv[++i];
    } else if (strncmp(argv[i], "--tensor=", 9) == 0) {
      value = argv[i] + 9;
    } else {
      /* Another flag's value is left with it, even when it reads "--tensor". */
      bool has_value = strncmp(argv[i], "--", 2) == 0 && !strchr(argv[i], '=') &&
                       strcmp(argv[i], "--help") != 0 && i + 1 < argc;
      rest[(*rest_count)++] = argv[i];
      if (has_value) rest[(*rest_count)++] = argv[++i];
      continue;
    }
    const char *equals = strchr(value, '=');
    size_t length = equals ? (size_t)(equals - value) : 0;
    if (!equals || length == 0 || equals[1] == '\0') {
      fprintf(stderr, "plume detect: --tensor %s is not NAME=FILE\n",
              quote_value(value, q, sizeof q));
      return EXIT_USAGE;
    }
    bool good = length < TENSOR_NAME_SIZE;
    for (size_t k = 0; good && k < length; k++) {
      char c = value[k];
      good = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '-' || c == '.';
    }
    if (!good) {
      fprintf(stderr,
              "plume detect: --tensor %s: the name is not letters, digits, '_', '-' and "
              "'.' (at most %d)\n",
              quote_value(value, q, sizeof q), TENSOR_NAME_SIZE - 1);
      return EXIT_USAGE;
    }
    if (*count == DETECT_MAX_TENSORS) {
      fprintf(stderr, "plume detect: more than %d --tensor options\n", DETECT_MAX_TENSORS);
      return EXIT_USAGE;
    }
    memcpy(names[*count], value, length);
    names[*count][length] = '\0';
    for (int t = 0; t < *count; t++)
      if (strcmp(names[t], names[*count]) == 0) {
        fprintf(stderr, "plume detect: --tensor %s is given twice\n", names[t]);
        return EXIT_USAGE;
      }
    tensors[*count] = (detect_tensor){.name = names[*count], .path = equals + 1};
    (*count)++;
  }
  return -1;
}

/* --list-presets: the table of plume/presets.h. */
static int list_presets(void) {
  int count = 0;
  const plm_preset *presets = plm_pipeline_presets(&count);
  for (int i = 0; i < count; i++) {
    const plm_preset *p = &presets[i];
    printf("%s: %s\n", p->name, p->summary);
    if (p->tensors[0]) printf("  tensors: %s (--tensor NAME=FILE.npy each)\n", p->tensors);
    if (p->settle_frames)
      printf("  settles: %d frames (plume score --skip-frames %d)\n", p->settle_frames,
             p->settle_frames);
    printf("  pipeline: %s\n", p->pipeline);
  }
  return 0;
}

/* The pipeline text of --pipeline or --preset (exactly one of them), with the tensors a
 * preset needs given. NULL after a message (exit 2). */
static const char *pipeline_text(const char *pipeline, const char *preset,
                                 const detect_tensor *tensors, int tensor_count) {
  char q[QUOTE_SIZE];
  if (pipeline && preset) {
    fprintf(stderr, "plume detect: --pipeline and --preset are given; choose one\n");
    return NULL;
  }
  if (!preset) {
    if (!pipeline)
      fprintf(stderr,
              "plume detect: --pipeline or --preset is required (see plume detect "
              "--help)\n");
    return pipeline;
  }
  const plm_preset *p = plm_pipeline_preset(preset);
  if (!p) {
    fprintf(stderr, "plume detect: --preset %s is not a preset (plume detect --list-presets)\n",
            quote_value(preset, q, sizeof q));
    return NULL;
  }
  /* Each name of p->tensors, space-separated, must be given as --tensor NAME=FILE. */
  for (const char *name = p->tensors; *name;) {
    size_t length = strcspn(name, " ");
    bool given = false;
    for (int t = 0; t < tensor_count; t++)
      given |= strlen(tensors[t].name) == length && strncmp(tensors[t].name, name, length) == 0;
    if (!given) {
      fprintf(stderr, "plume detect: --preset %s needs --tensor %.*s=FILE.npy (it needs %s)\n",
              p->name, (int)length, name, p->tensors);
      return NULL;
    }
    name += length + (name[length] == ' ');
  }
  return p->pipeline;
}

/* Print a run's outcome (when this process is the one that prints) and return the exit
 * code. */
static int report_outcome(plm_status status, const detect_result *result, bool writes,
                          const char *err, const char *frames, const char *out, const char *profile,
                          FILE *summary) {
  if (status != PLM_OK && interrupt_signal) {
    char shown[QUOTE_SIZE];
    if (writes && strcmp(out, "-") == 0)
      fprintf(stderr, "plume detect: interrupted by signal %d (%s)\n", (int)interrupt_signal, err);
    else if (writes)
      fprintf(stderr, "plume detect: interrupted by signal %d (%s); --out %s is as it was\n",
              (int)interrupt_signal, err, quote_value(out, shown, sizeof shown));
    return interrupt_exit_code();
  }
  if (status != PLM_OK) {
    if (writes) fprintf(stderr, "plume detect: %s\n", err);
    return result->write_failed ? EXIT_RUNTIME_FAILURE : detect_exit_code(status);
  }
  if (!writes || !summary) return interrupt_exit_code();
  char shape[96];
  if (result->segments > 1)
    snprintf(shape, sizeof shape,
             "several shapes (%lld runs of one shape, %lld pipelines compiled; the first "
             "%lldx%lld)",
             (long long)result->segments, (long long)result->pipelines,
             (long long)result->frames.height, (long long)result->frames.width);
  else
    snprintf(shape, sizeof shape, "%lldx%lld", (long long)result->frames.height,
             (long long)result->frames.width);
  fprintf(summary, "detect: %lld frames of %s %s from %s, %lld regions -> %s\n",
          (long long)result->frames.count, shape, plm_dtype_name(result->frames.dtype), frames,
          (long long)result->regions, out);
  detect_print_summary(summary, result);
  if (profile)
    fprintf(summary, "profile: %s/profile.json, trace.json, report.html, pool_snapshot.json\n",
            profile);
  return interrupt_exit_code(); /* 0, or a signal that came during the renames */
}

/* Whether --latency PATH can be written beside the other outputs (else a message). Under
 * MPI detect_run refuses it, all ranks agreeing (apps/detect.h). */
static bool latency_usable(const char *path, const char *out, const char *frames) {
  if (!path) return true;
  char why[OUTPUT_PATH_WHY_SIZE], q[QUOTE_SIZE];
  if (!output_extension_fits(path, "csv", why, sizeof why)) {
    fprintf(stderr, "plume detect: --latency %s\n", why);
    return false;
  }
  const char *refused = strcmp(path, "-") == 0 && strcmp(out, "-") == 0
                            ? "--out is standard output already: one of them at most"
                        : same_file(path, out)    ? "--out names the same file"
                        : same_file(path, frames) ? "--frames names the same file"
                        : !output_path_usable(path, why, sizeof why) ? why
                                                                     : NULL;
  if (refused)
    fprintf(stderr, "plume detect: --latency %s: %s\n", quote_value(path, q, sizeof q), refused);
  return refused == NULL;
}

/* Whether --overlay and --truth can be taken with the other options (else a message). */
static bool overlay_usable(const char *overlay, const char *truth, const char *out, bool stream,
                           bool under_mpi) {
  char q[QUOTE_SIZE];
  const char *refused = !overlay && truth ? "--truth draws on --overlay's pictures: give both"
                        : !overlay        ? NULL
                        : strcmp(out, "-") == 0
                            ? "--overlay reads the regions back from --out: give a file"
                        : stream    ? "--overlay reads the frames again: not from '-'"
                        : under_mpi ? "--overlay is not taken under MPI"
                                    : NULL;
  if (refused) {
    fprintf(stderr, "plume detect: %s\n", refused);
    return false;
  }
  struct stat st;
  if (overlay && (stat(overlay, &st) != 0 || !S_ISDIR(st.st_mode))) {
    fprintf(stderr, "plume detect: --overlay %s is not a folder\n",
            quote_value(overlay, q, sizeof q));
    return false;
  }
  return true;
}

/* After a run: each frame with its regions (and truth) drawn into dir (support/overlay.h). */
static int draw_overlay(const detect_config *config, const char *dir, const char *truth,
                        FILE *summary) {
  char err[OVERLAY_ERROR_SIZE] = "";
  frame_reader *r = NULL;
  frame_reader_info info;
  plm_status status =
      config->raw ? frame_reader_open_raw(config->frames_path, config->raw, &info, &r, err,
                                          sizeof err)
                  : frame_reader_open_as(config->frames_path, config->read_flags, &info, &r, err,
                                         sizeof err);
  frame_reader_allow_shapes(r); /* a folder's frames of several shapes, as the run took them */
  int64_t written = 0;
  if (status == PLM_OK)
    status = overlay_write_frames(r, &info, config->out_path, truth, dir, &written, err,
                                  sizeof err);
  frame_reader_close(r);
  if (status != PLM_OK) {
    fprintf(stderr, "plume detect: --overlay: %s\n", err);
    return detect_exit_code(status);
  }
  if (summary) fprintf(summary, "overlay: %lld pictures -> %s\n", (long long)written, dir);
  return 0;
}

int detect_command_main(int argc, char **argv) {
  const char *frames = NULL, *pipeline = NULL, *preset = NULL, *list = NULL, *out = NULL,
             *backend = NULL, *streams = NULL, *profile = NULL, *mpi = NULL, *progress = NULL,
             *raw_shape = NULL, *raw_dtype = NULL, *raw_endian = NULL, *raw_header = NULL,
             *quiet = NULL, *quiet_long = NULL, *overlay = NULL, *truth = NULL, *latency = NULL,
             *h5_values = NULL, *batch = NULL;
  option options[] = {{"--frames", &frames, false},
                      {"--raw-shape", &raw_shape, false},
                      {"--raw-dtype", &raw_dtype, false},
                      {"--raw-endian", &raw_endian, false},
                      {"--raw-header", &raw_header, false},
                      {"--h5-values", &h5_values, false},
                      {"--pipeline", &pipeline, false},
                      {"--preset", &preset, false},
                      {"--list-presets", &list, true},
                      {"--out", &out, false},
                      {"--backend", &backend, false},
                      {"--streams", &streams, false},
                      {"--batch", &batch, false},
                      {"--profile", &profile, false},
                      {"--latency", &latency, false},
                      {"--overlay", &overlay, false},
                      {"--truth", &truth, false},
                      {"--progress", &progress, true},
                      {"--mpi", &mpi, true},
                      {"-q", &quiet, true},
                      {"--quiet", &quiet_long, true},
                      {NULL, NULL, false}};
  detect_tensor tensors[DETECT_MAX_TENSORS];
  char names[DETECT_MAX_TENSORS][TENSOR_NAME_SIZE];
  char **rest = malloc((size_t)(argc + 1) * sizeof *rest);
  int rest_count = 0, tensor_count = 0;
  if (!rest) {
    fprintf(stderr, "plume detect: out of memory\n");
    return 1;
  }
  /* --help wins over everything, a malformed --tensor included. */
  for (int i = 0; i < argc; i++)
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      free(rest);
      return options_take("detect", detect_usage, options, 1, &argv[i]);
    }
  int exit_code = take_tensors(argc, argv, rest, &rest_count, tensors, names, &tensor_count);
  if (exit_code < 0) exit_code = options_take("detect", detect_usage, options, rest_count, rest);
  free(rest);
  if (exit_code >= 0) return exit_code;
  if (list) return list_presets();
  const char *missing = !frames ? "--frames" : !out ? "--out" : NULL;
  if (missing) {
    fprintf(stderr, "plume detect: %s is required (see plume detect --help)\n", missing);
    return EXIT_USAGE;
  }
  pipeline = pipeline_text(pipeline, preset, tensors, tensor_count);
  if (!pipeline) return EXIT_USAGE;
  char why[OUTPUT_PATH_WHY_SIZE], q[QUOTE_SIZE];
  /* Raw frames: with --raw-shape, or any other --raw-* option (which then asks for it);
   * without, --frames - is a video streamed in (support/frame_reader.h). */
  raw_format raw;
  const bool is_raw = raw_shape || raw_dtype || raw_endian || raw_header;
  if (is_raw) {
    char message[IMAGE_ERROR_SIZE];
    if (raw_format_parse(raw_shape, raw_dtype, raw_endian, raw_header, &raw, message,
                         sizeof message) != PLM_OK) {
      fprintf(stderr, "plume detect: %s\n", message);
      return EXIT_USAGE;
    }
  }
  unsigned read_flags = 0;
  if (h5_values && !image_values_parse(h5_values, &read_flags)) {
    fprintf(stderr, "plume detect: --h5-values %s is not physical or stored\n",
            quote_value(h5_values, q, sizeof q));
    return EXIT_USAGE;
  }
  if (!output_path_usable(out, why, sizeof why)) {
    fprintf(stderr, "plume detect: --out %s: %s\n", quote_value(out, q, sizeof q), why);
    return EXIT_USAGE;
  }
  /* The CSV would replace its own frames or a tensor file before they are read. */
  const char *clash = same_file(out, frames) ? "--frames" : NULL;
  for (int t = 0; !clash && t < tensor_count; t++)
    if (same_file(out, tensors[t].path)) clash = "--tensor";
  if (clash) {
    fprintf(stderr, "plume detect: --out and %s name the same file (%s)\n", clash,
            quote_value(out, q, sizeof q));
    return EXIT_USAGE;
  }
  if (!output_extension_fits(out, "csv", why, sizeof why)) {
    fprintf(stderr, "plume detect: --out %s\n", why);
    return EXIT_USAGE;
  }
  if (!overlay_usable(overlay, truth, out, is_raw && strcmp(frames, "-") == 0,
                      mpi || launched_by_mpi()) ||
      !latency_usable(latency, out, frames))
    return EXIT_USAGE;
  /* The data on stdout (--out - or --latency -): the summary goes to stderr; -q: nowhere, nor
   * the bar. */
  const bool silent = quiet || quiet_long;
  const bool data_on_stdout = strcmp(out, "-") == 0 || (latency && strcmp(latency, "-") == 0);
  FILE *summary = silent ? NULL : data_on_stdout ? stderr : stdout;
  detect_config config = {.frames_path = frames,
                          .raw = is_raw ? &raw : NULL,
                          .read_flags = read_flags,
                          .pipeline = pipeline,
                          .out_path = out,
                          .show_progress = !silent,
                          .force_progress = progress != NULL && !silent,
                          .profile_dir = profile,
                          .latency_path = latency,
                          .tensors = tensors,
                          .tensor_count = tensor_count};
  if (backend && plm_backend_parse(backend, &config.backend) != PLM_OK) {
    fprintf(stderr, "plume detect: --backend %s is not host, cuda or auto\n",
            quote_value(backend, q, sizeof q));
    return EXIT_USAGE;
  }
  uint64_t k = 0;
  if (streams) {
    if (!count_parse(streams, NULL, 1, PLM_PIPELINE_MAX_FRAMES, &k)) {
      fprintf(stderr, "plume detect: --streams %s is not a count from 1 to %d\n",
              quote_value(streams, q, sizeof q), PLM_PIPELINE_MAX_FRAMES);
      return EXIT_USAGE;
    }
    config.frames_in_flight = (int)k;
  }
  if (batch && strcmp(batch, "auto") == 0) {
    config.batch = DETECT_BATCH_AUTO;
  } else if (batch) {
    if (!count_parse(batch, NULL, 1, PLM_RUN_STREAM_MAX_BATCH, &k)) {
      fprintf(stderr, "plume detect: --batch %s is not a count from 1 to %d, nor auto\n",
              quote_value(batch, q, sizeof q), PLM_RUN_STREAM_MAX_BATCH);
      return EXIT_USAGE;
    }
    config.batch = (int)k;
  }
  char err[DETECT_ERROR_SIZE] = "";
  detect_result result;
  bool writes = true; /* this process prints (under MPI: rank 0) */
  config.stop = &interrupt_signal;
  if (mpi || launched_by_mpi()) {
#ifdef PLUME_HAVE_MPI
    plm_status status = detect_run_mpi(&config, &result, &writes, err, sizeof err);
    int code = report_outcome(status, &result, writes, err, frames, out, profile, summary);
    return detect_mpi_finish(code);
#else
    fprintf(stderr,
            "plume detect: %s, but this plume was built without MPI (apt-get install "
            "libopenmpi-dev, then build with -DPLUME_MPI=ON)\n",
            mpi ? "--mpi is given" : "it runs under mpirun");
    return EXIT_USAGE;
#endif
  }
  interrupt_catch();
  plm_status status = detect_run(&config, &result, err, sizeof err);
  const int code = report_outcome(status, &result, writes, err, frames, out, profile, summary);
  if (code != 0 || !overlay) return code;
  return draw_overlay(&config, overlay, truth, summary);
}

void detect_commands_print_summary(FILE *out) {
  fprintf(out,
          "  detect --frames F.npy|DIR --pipeline \"...\"|--preset NAME --out D.csv\n"
          "                                    run a pipeline over frames, write the regions\n"
          "  demo [--frames N] [--size H,W]    a scene, the default pipeline over it, its score\n");
}

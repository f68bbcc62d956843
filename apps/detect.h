/* apps/detect.h: a detection pipeline over a sequence of frames (`plume detect`,
 * `plume demo`).
 *
 * detect_run reads the frames of a stack, a folder or raw frames from a file or standard
 * input (support/frame_reader.h), runs a text pipeline (plm_pipeline_parse) over them with
 * plm_pipeline_run_stream, keeping K frames in flight, and writes one CSV row per region
 * found (support/csv.h's regions rows):
 *
 *   frame,label,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col,sum,max,
 *   wcentroid_row,wcentroid_col
 *
 * the columns of `plume op label --regions --intensity` for a stack, which `plume score`
 * reads. Rows are in frame order, then label order.
 *
 * The pipeline: its input is one frame (the frames' dtype, (H, W)); its first output must
 * be a regions table (f64 (C, 12)) and its second the count of regions, which is what a
 * text ending in `label ! regions` or in `segment` gives. `regions intensity=none` is
 * refused, since the intensity columns are written. C (the table's rows, `capacity=` of
 * regions or segment; by default the most regions a frame can hold, H*W/4 under
 * 8-connectivity, whose download costs a copy of 96 bytes per table row each frame) bounds
 * the regions kept per frame: a frame with more has its first C written, and the result
 * counts the frames and the regions so lost.
 *
 * Tensors: the pipeline may name arrays read from .npy files (config->tensors) as @NAME,
 * for example a matched filter `conv2d kernel=@psf pad=same` or a background subtraction
 * `vector_add b=@dark beta=-1` (plm_pipeline_parse_with_tensors): each file is read whole
 * (1 to 4 dimensions, '<f8' read as f32; image_read_array) before the pipeline is built,
 * becomes one of its constants, and is freed once the pipeline holds its copy.
 *
 * Frames: the source of the run reads frame k from the reader when the pipeline asks for
 * it, into the run's pinned buffer, so a long stack is never held in memory; the sink
 * writes each frame's rows as it arrives. Frames u8, u16 and f32 are taken (a file of
 * another dtype is refused). The CSV goes to a temporary file beside the output that is
 * renamed over it at the end (support/image_io.h's writer): a failure leaves no file.
 *
 * Shapes: the frames of a folder may differ in size (of one dtype: crops, several
 * sensors). The run then goes in segments, each a run of frames of one shape: the source
 * tells each frame's shape before reading it (frame_reader_shape) and ends the segment at
 * the first frame of another, whose shape gets its own pipeline, parsed and compiled from
 * the same text and tensors (on the backend the first shape chose) and kept, so that a
 * shape coming back reuses its plan and pool blocks; up to DETECT_SHAPES_KEPT are kept,
 * the least recently used destroyed first (its memory going back to the context's pool
 * for the next). A pipeline's state (a temporal background) starts again at each
 * segment: plm_pipeline_reset_state. The rows keep the sequence's frame numbers. With a
 * runner the frames must be of one shape, as a stack's or raw frames' are.
 *
 * Batches: with config->batch N >= 2 the pipeline is parsed and compiled over stacks of
 * N frames ((N, H, W): every op of the text must take stacks; segment does not, label !
 * regions does, a table per frame) and run with plm_run_stream_options.batch N, so each
 * step is one launch per N frames; the rows are those of single frames, byte for byte. A
 * segment's last batch may be short (the frames end, or their shape changes). Not with a
 * runner. With DETECT_BATCH_AUTO, N is the tuning table's for the first frame's bytes on
 * the context's device (plm_tuning_batch), kept for every segment. A text that reads a
 * previous frame's value (key=~NAME: the robust and calibrated presets' hysteresis) runs a
 * frame at a time: N >= 2 is refused, naming the key, and DETECT_BATCH_AUTO gives 1.
 *
 * Processes: with config->runner (apps/detect_mpi.h) the frames are shared among MPI
 * ranks, each reading and running its own block of frames (a video whose container does
 * not declare its count is counted first, on every rank: frame_reader_count_frames; a
 * stream is refused); every frame's rows reach the rank that writes, in frame order, so
 * the CSV is byte for byte what one process writes.
 * The ranks first agree on the pipeline, its tensors and the frames (detect_check). The
 * writing rank keeps the rows in a file that has no name (support/unnamed_file.h) until
 * every frame is in: nothing is created beside out_path while the ranks run, so that a
 * rank killed outright (SIGKILL, the node lost), the writing one included, leaves no
 * temporary file. Only then are the rows copied into the temporary file beside out_path
 * and renamed over it, as one process writes it.
 *
 * Blocks; one call at a time per thread (it uses the thread's plume error message).
 */
#ifndef PLUME_APPS_DETECT_H
#define PLUME_APPS_DETECT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "support/frame_reader.h"
#include "plume/plume.h"

/* Frames in flight when the caller gives 0: upload, compute and download of three frames
 * overlap on a GPU; on host the source's reading of one frame overlaps the compute of
 * the previous ones. */
#define DETECT_DEFAULT_FRAMES_IN_FLIGHT 3

/* Room for any message of this module. */
enum { DETECT_ERROR_SIZE = FRAME_READER_ERROR_SIZE + 512 };

/* The most pipelines kept at once for a folder of frames of several shapes (above). */
enum { DETECT_SHAPES_KEPT = 4 };

/* detect_config.batch: the tuned batch (plm_tuning_batch). */
enum { DETECT_BATCH_AUTO = -1 };

/* The most tensors a run takes. */
enum { DETECT_MAX_TENSORS = 16 };

/* The most ranks whose frames per second a result lists (apps/detect_mpi.h). */
enum { DETECT_RANKS_SHOWN = 16 };

/* A frame's CSV rows as a runner carries them from where the frame ran to where the CSV
 * is written (pack, then deliver): an int64 count of the regions the table could not hold,
 * then the rows. */
typedef plm_status (*detect_pack_fn)(void *job, int64_t frame, const void *const *outputs,
                                     const void **bytes, size_t *length);
typedef plm_status (*detect_deliver_fn)(void *job, int64_t frame, const void *bytes, size_t length);

/* What every process of a run must hold alike, so that the CSV is one pipeline's over one
 * sequence of frames (a runner compares them before any frame runs): "pipeline" (its text,
 * runs of spaces and the spaces about '!' aside), "tensors" (each one's name, dtype, shape
 * and bytes) and "frames" (the --frames path as given, their dtype, shape and count). */
enum { DETECT_CHECKS = 3, DETECT_SHOWN_SIZE = 192 };
typedef struct detect_check {
  const char *what;
  uint64_t hash;                 /* FNV-1a 64 */
  char shown[DETECT_SHOWN_SIZE]; /* a short text of it, for a message */
} detect_check;

/* What a runner runs: frames 0 .. count - 1. */
typedef struct detect_frames {
  int64_t count;
  plm_frame_source_fn source; /* reads frame k by its index in the whole sequence */
  detect_pack_fn pack;
  detect_deliver_fn deliver; /* in frame order, where the CSV is written */
  void (*describe_failure)(void *job, char *message, size_t size); /* the job's message */
  void *job;
  const detect_check *checks; /* DETECT_CHECKS of them (above) */
  int check_count;
} detect_frames;

typedef struct detect_result detect_result;

/* Where the frames run, when not all here (apps/detect_mpi.h: MPI ranks). */
typedef struct detect_runner {
  /* Run frames->count frames through pl. Returns the run's status and, on failure, a
   * one-line message in err; result's report and rank figures are filled. */
  plm_status (*run)(const struct detect_runner *self, plm_pipeline *pl, const detect_frames *frames,
                    detect_result *result, char *err, size_t err_size);
  /* This process failed before its run (status, the message in err): the others are
   * told; returns the status agreed on, its message in err. */
  plm_status (*withdraw)(const struct detect_runner *self, plm_status status, char *err,
                         size_t err_size);
  bool writes; /* this process writes out_path */
  void *state;
} detect_runner;

/* An array the pipeline names as @name. */
typedef struct detect_tensor {
  const char *name; /* letters, digits, '_', '-' and '.' */
  const char *path; /* a .npy */
} detect_tensor;

typedef struct detect_config {
  const char *frames_path; /* a stack, a folder or raw frames (support/frame_reader.h) */
  const char *pipeline;    /* plm_pipeline_parse's text */
  const char *out_path;    /* the CSV */
  plm_backend backend;     /* HOST, CUDA or AUTO (0): the faster predicted (plm_pipeline_place) */
  int device;              /* the backend's device index (plm_context_config.device) */
  int frames_in_flight;    /* K, 1..PLM_PIPELINE_MAX_FRAMES; 0: the default above */
  /* Frames a batch (plm_run_stream_options.batch; "Batches" below): 0 or 1, one frame
   * at a time; N >= 2 (at most PLM_RUN_STREAM_MAX_BATCH): N frames a launch per step;
   * DETECT_BATCH_AUTO: the batch `plume tune` chose for the device and the first frame's
   * bytes (plm_tuning_batch; 1 where it chose none). */
  int batch;
  bool show_progress;  /* a progress bar on stderr when it is a terminal */
  bool force_progress; /* ... and when it is not (mpirun pipes it): --progress */
  /* NULL: frames_path's format is read from its bytes. Else frames_path ("-": standard
   * input) is raw frames of this format (support/raw_frames.h); a stream's are read in
   * order as they come, and the result's frames.count is then the count that ran. Not
   * with a runner (MPI), which shares out a known count of frames. */
  const raw_format *raw;
  /* How a file's frames are read (support/image_io.h's IMAGE_READ_* flags): 0, or
   * IMAGE_READ_STORED_VALUES for an HDF5 dataset's stored values (--h5-values stored). */
  unsigned read_flags;
  /* When not NULL and *stop becomes non-zero (a signal handler's flag), the run stops
   * before its next frame, or before the CSV replaces out_path, with
   * PLM_ERR_INVALID_STATE ("interrupted"), leaving no file (apps/interrupt.h). */
  const volatile sig_atomic_t *stop;
  /* When not NULL: profile the run (plume/profile.h: every step, upload and download of
   * every frame; no CUDA graphs) and write profile.json, trace.json and report.html into
   * this directory after it (after the CSV, which stays when the profile fails). */
  const char *profile_dir;
  /* When not NULL: each frame's times into this CSV after the run (written atomically,
   * after the detections' CSV): "frame,read_s,written_s,latency_ms", read_s when the
   * frame's read finished and written_s when its rows were written, both in seconds from
   * the run's start (before the first frame is read), latency_ms their difference: how long
   * a frame waited in flight and ran (plume score --report draws it). Not with a runner. */
  const char *latency_path;
  const detect_tensor *tensors; /* tensor_count of them (0..DETECT_MAX_TENSORS), above */
  int tensor_count;
  /* NULL: every frame runs here. Else the runner's run replaces plm_pipeline_run_stream,
   * every failure before it goes through its withdraw, and only a runner that `writes`
   * opens out_path (the others write nothing). No profile_dir with a runner. */
  const detect_runner *runner;
} detect_config;

struct detect_result {
  frame_reader_info frames; /* the shape is the first frame's */
  int64_t segments;         /* runs of frames of one shape (1 unless their shapes differ) */
  int64_t pipelines;        /* compiled: one per shape met, again for one evicted, met again */
  plm_backend backend;      /* the backend that ran */
  plm_placement placement;  /* with backend AUTO: the prediction that chose it (with a GPU) */
  int frames_in_flight;     /* K */
  int batch;                /* frames a batch: 1, or N */
  bool batch_tuned;         /* config->batch was DETECT_BATCH_AUTO */
  int64_t capacity;         /* C: the rows of the regions table */
  int64_t regions;          /* rows written */
  int64_t truncated_frames; /* frames with more than C regions */
  int64_t missing_regions;  /* the regions of those beyond their first C */
  bool write_failed;        /* the run failed writing the CSV or the profile: a runtime failure */
  plm_run_stream_report report; /* this process's run */
  /* With a runner over several processes (0 ranks otherwise), on the writing one: */
  int ranks;
  int64_t frames_total;                         /* frames written, all ranks */
  double seconds_total, frames_per_s_total;     /* to the last frame written */
  double rank_frames_per_s[DETECT_RANKS_SHOWN]; /* the first DETECT_RANKS_SHOWN ranks' */
};

/* Run the detection (above). *result is filled as far as the run got. Errors, with a
 * one-line message in err: PLM_ERR_INVALID_ARG (a NULL or bad config, a pipeline that
 * does not parse or whose outputs are not a regions table and a count), PLM_ERR_IO and
 * PLM_ERR_UNSUPPORTED (the frames: a missing, bad or mismatched file, a dtype other than
 * u8, u16, f32; the output: cannot be written), PLM_ERR_OUT_OF_MEMORY, and the context's
 * or the run's failures (PLM_ERR_NO_DEVICE, PLM_ERR_BACKEND, ...). A tensor's file fails
 * as a frame file does, its name in the message. */
plm_status detect_run(const detect_config *config, detect_result *result, char *err,
                      size_t err_size);

/* The exit code of the plume command for a detect_run status: 0 for PLM_OK; 2 for bad
 * arguments or files (PLM_ERR_INVALID_ARG, PLM_ERR_IO, PLM_ERR_UNSUPPORTED); 1 for the
 * rest (out of memory, no device, a backend failure). */
int detect_exit_code(plm_status status);

/* Print the figures of a run as `plume detect` and `plume demo` do:
 *   N frames in S s: F frames/s (BACKEND backend, K frames in flight; latency ...)
 * then a line on graphs and, when frames were truncated, how many regions were lost. */
void detect_print_summary(FILE *out, const detect_result *result);

#endif /* PLUME_APPS_DETECT_H */

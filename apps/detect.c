/* apps/detect.c: a detection pipeline over a sequence of frames (apps/detect.h). */
#define _POSIX_C_SOURCE 200809L

#include "apps/detect.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "profile/stats.h"
#include "streams/clock.h"
#include "support/csv.h"
#include "support/image_io.h"
#include "support/progress.h"
#include "support/quote.h"
#include "support/regular_file.h"
#include "support/unnamed_file.h"

/* Failures are written by quote_failure (support/quote.h): one line, its control
 * characters escaped, since a message may hold a user's value as given, such as a word of
 * the pipeline's text in the library's message. */

/* Everything one run holds, released by release() whatever was reached. */
/* When a frame's read finished and its rows were written (--latency), from the start. */
typedef struct frame_times {
  double read_s, written_s;
} frame_times;

/* A pipeline compiled for frames of one shape. */
typedef struct shaped_pipeline {
  int64_t height, width;
  plm_pipeline *pl; /* NULL: the slot is free */
  int64_t used;     /* when it last ran (detect_job.shapes_used) */
} shaped_pipeline;

typedef struct detect_job {
  const detect_config *config;
  detect_result *result;
  frame_reader *reader;
  plm_context *ctx;
  plm_pipeline *pl;
  plm_profiler *profiler; /* with config->profile_dir */
  image_writer *csv;
  unnamed_file *kept; /* the writing rank's CSV while the ranks run (with a runner) */
  image tensors[DETECT_MAX_TENSORS];  /* config->tensors' arrays until the pipeline is built */
  detect_check checks[DETECT_CHECKS]; /* what every rank must hold alike (with a runner) */
  char *rows;                         /* one frame's packed rows (detect_pack_fn) */
  size_t rows_room;                   /* bytes */
  /* A folder of frames of several shapes runs as segments of one shape each, with a
   * pipeline compiled per shape (kept, up to DETECT_SHAPES_KEPT, the least recently used
   * destroyed first; pl is the running segment's). The run's frame k is the sequence's
   * frame first_frame + k; the source ends a segment at the first frame of another shape
   * (next_height, next_width: 0 until one is met). */
  shaped_pipeline kept_pipelines[DETECT_SHAPES_KEPT];
  int64_t shapes_used; /* a clock of the segments, for the least recently used */
  int64_t height, width, first_frame, next_height, next_width;
  /* With config->latency_path: when each frame was read and written, in seconds from
   * started (frame_times_room of them, grown as frames come). */
  double started;
  frame_times *times;
  int64_t frame_times_room;
  int64_t frames_timed; /* frames of the segments run so far: the times the run's are of */
  bool ran;             /* the runner's run was reached (no withdraw) */
  progress_bar bar;
  char *err; /* the caller's message buffer */
  size_t err_size;
  /* The source's or sink's messages: the first failure's is kept (frames before it are
   * still delivered to the sink, which must not overwrite it). */
  char scratch[DETECT_ERROR_SIZE], first_failure[DETECT_ERROR_SIZE];
} detect_job;

static void free_tensors(detect_job *job) {
  for (int t = 0; t < DETECT_MAX_TENSORS; t++) {
    free(job->tensors[t].data);
    job->tensors[t].data = NULL;
  }
}

static plm_status release(detect_job *job, plm_status status) {
  const detect_runner *runner = job->config->runner;
  if (runner && !job->ran && status != PLM_OK)
    status = runner->withdraw(runner, status, job->err, job->err_size);
  progress_end(&job->bar);
  free_tensors(job);
  image_writer_abort(job->csv);
  unnamed_file_close(job->kept);
  free(job->times);
  bool kept = false;
  for (int i = 0; i < DETECT_SHAPES_KEPT; i++) {
    kept = kept || job->kept_pipelines[i].pl == job->pl;
    plm_pipeline_destroy(job->kept_pipelines[i].pl);
  }
  if (!kept) plm_pipeline_destroy(job->pl);
  plm_profiler_destroy(job->profiler);
  if (job->ctx && plm_context_destroy(job->ctx) != PLM_OK && status == PLM_OK)
    status = quote_failure(job->err, job->err_size, PLM_ERR_INTERNAL, "%s", plm_last_error());
  frame_reader_close(job->reader);
  free(job->rows);
  return status;
}

/* A snapshot of the context's default pool, which the pipeline allocates from, for the
 * profile: taken after the run, while the pipeline still holds its workspaces. */
static plm_status add_pool_snapshot(detect_job *job) {
  plm_pool *pool = NULL;
  plm_pool_snapshot *snapshot = NULL;
  plm_status status = plm_context_default_pool(job->ctx, &pool);
  if (status == PLM_OK) status = plm_pool_snapshot_take(pool, &snapshot);
  if (status == PLM_OK)
    status = plm_profiler_add_pool_snapshot(job->profiler, "default pool at the end of the run",
                                            snapshot);
  plm_pool_snapshot_free(snapshot);
  return status;
}

/* A library call failed: its message. */
static plm_status library_failure(detect_job *job, plm_status status) {
  return release(job, quote_failure(job->err, job->err_size, status, "%s", plm_last_error()));
}

/* ---- the pipeline ----------------------------------------------------------------------- */

/* Whether text holds token as a word of its own (separated by spaces, tabs or '!'). */
static bool has_token(const char *text, const char *token) {
  const size_t n = strlen(token);
  for (const char *p = text; (p = strstr(p, token)) != NULL; p++) {
    bool starts = p == text || p[-1] == ' ' || p[-1] == '\t' || p[-1] == '!';
    bool ends = p[n] == '\0' || p[n] == ' ' || p[n] == '\t' || p[n] == '!';
    if (starts && ends) return true;
  }
  return false;
}

/* The first key=~NAME of a pipeline text (a previous frame's value: plume/pipeline.h's
 * feedback), its length in *length (length may be NULL); NULL when the text reads none. */
static const char *previous_value(const char *text, int *length) {
  for (const char *p = text; (p = strstr(p, "=~")) != NULL; p++) {
    const char *begin = p, *end = p + 2;
    while (begin > text && begin[-1] != ' ' && begin[-1] != '\t' && begin[-1] != '!') begin--;
    while (*end && *end != ' ' && *end != '\t' && *end != '!') end++;
    if (begin == p || end == p + 2) continue;
    if (length) *length = (int)(end - begin);
    return begin;
  }
  return NULL;
}

static void shape_text(const plm_shape *shape, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "%s ", plm_dtype_name(shape->dtype));
  for (int d = 0; d < shape->ndim && used < size; d++)
    used +=
        (size_t)snprintf(buf + used, size - used, d ? "x%lld" : "%lld", (long long)shape->dims[d]);
}

/* ---- what the ranks must hold alike (detect_check) ----------------------------------------- */

static const uint64_t fnv_offset = 14695981039346656037ULL, fnv_prime = 1099511628211ULL;

static uint64_t fnv1a(uint64_t hash, const void *bytes, size_t length) {
  const unsigned char *p = bytes;
  for (size_t i = 0; i < length; i++) hash = (hash ^ p[i]) * fnv_prime;
  return hash;
}

static uint64_t fnv1a_i64(uint64_t hash, int64_t value) {
  return fnv1a(hash, &value, sizeof value);
}

/* The pipeline's text with every run of spaces, tabs and newlines made one space, one
 * space on each side of every '!' and none at the ends: texts that differ only there are
 * the same pipeline. */
static void check_pipeline(const char *text, detect_check *check) {
  *check = (detect_check){.what = "pipeline"};
  char *canonical = malloc(3 * strlen(text) + 1); /* "a!b" grows to "a ! b" */
  if (!canonical) {                               /* a few bytes short: the text as given */
    check->hash = fnv1a(fnv_offset, text, strlen(text));
    return;
  }
  size_t used = 0;
  bool gap = false;
  for (const char *p = text; *p; p++) {
    if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
      gap = true;
      continue;
    }
    if ((gap || *p == '!') && used > 0 && canonical[used - 1] != ' ') canonical[used++] = ' ';
    canonical[used++] = *p;
    gap = *p == '!';
  }
  if (used > 0 && canonical[used - 1] == ' ') used--;
  canonical[used] = '\0';
  check->hash = fnv1a(fnv_offset, canonical, used);
  char quoted[QUOTE_SIZE];
  quote_value(canonical, quoted, sizeof quoted);
  free(canonical);
  /* A long text: its start, then "..." */
  const size_t length = strlen(quoted), room = sizeof check->shown;
  if (length < room) {
    memcpy(check->shown, quoted, length + 1);
  } else {
    memcpy(check->shown, quoted, room - 4);
    memcpy(check->shown + room - 4, "...", 4);
  }
}

static void shape_text(const plm_shape *shape, char *buf, size_t size);

/* The frames as this rank opened them: the path as given, dtype, shape and count (each
 * rank reads only its own block, so their bytes are not compared). */
static void check_frames(const char *path, const frame_reader_info *frames, detect_check *check) {
  uint64_t hash = fnv1a(fnv_offset, path, strlen(path) + 1);
  hash = fnv1a_i64(hash, frames->dtype);
  hash = fnv1a_i64(hash, frames->count);
  hash = fnv1a_i64(hash, frames->height);
  hash = fnv1a_i64(hash, frames->width);
  char quoted[QUOTE_SIZE];
  *check = (detect_check){.what = "frames", .hash = hash};
  snprintf(check->shown, sizeof check->shown, "%lld frames of %lldx%lld %s from %s",
           (long long)frames->count, (long long)frames->height, (long long)frames->width,
           plm_dtype_name(frames->dtype), quote_value(path, quoted, sizeof quoted));
}

/* The tensors (read, not yet freed): names, dtypes, shapes and bytes, in order. */
static void check_tensors(const detect_job *job, detect_check *check) {
  const detect_config *config = job->config;
  uint64_t hash = fnv1a_i64(fnv_offset, config->tensor_count);
  *check = (detect_check){.what = "tensors", .hash = hash};
  size_t used =
      (size_t)snprintf(check->shown, sizeof check->shown, "%s", config->tensor_count ? "" : "none");
  for (int t = 0; t < config->tensor_count; t++) {
    const image *array = &job->tensors[t];
    const char *name = config->tensors[t].name;
    plm_shape shape = {.dtype = array->dtype, .ndim = array->ndim};
    size_t bytes = plm_dtype_size(array->dtype);
    for (int d = 0; d < array->ndim; d++) {
      shape.dims[d] = array->dims[d];
      bytes *= (size_t)array->dims[d];
    }
    hash = fnv1a(hash, name, strlen(name) + 1);
    hash = fnv1a_i64(hash, shape.dtype);
    hash = fnv1a(hash, shape.dims, sizeof shape.dims[0] * (size_t)shape.ndim);
    hash = fnv1a(hash, array->data, bytes);
    char text[96];
    shape_text(&shape, text, sizeof text);
    if (used < sizeof check->shown)
      used += (size_t)snprintf(check->shown + used, sizeof check->shown - used, "%s@%s %s",
                               t ? ", " : "", name, text);
  }
  check->hash = hash;
}

/* Read config->tensors' files into job->tensors, and name them in named[]. */
static plm_status read_tensors(detect_job *job, plm_named_tensor *named) {
  const detect_config *config = job->config;
  for (int t = 0; t < config->tensor_count; t++) {
    image *array = &job->tensors[t];
    char message[IMAGE_ERROR_SIZE];
    plm_status status =
        image_read_array(config->tensors[t].path, NULL, array, message, sizeof message);
    if (status != PLM_OK)
      return quote_failure(job->err, job->err_size, status, "tensor @%s: %s",
                           config->tensors[t].name, message);
    named[t] = (plm_named_tensor){.name = config->tensors[t].name,
                                  .shape = {.dtype = array->dtype, .ndim = array->ndim},
                                  .host_data = array->data};
    for (int d = 0; d < array->ndim; d++) named[t].shape.dims[d] = array->dims[d];
  }
  return PLM_OK;
}

/* The outputs must be a regions table (f64 (C, 12)) and the count (i32 (1,)); with
 * batches of N, a table per frame (N, C, 12) and a count per frame (N,). */
static plm_status check_outputs(detect_job *job) {
  const int batch = job->result->batch;
  const int stacked = batch > 1; /* the leading dimension of a stack */
  int inputs = 0, outputs = 0;
  plm_shape table = {0}, count = {0};
  plm_status status = plm_pipeline_io_count(job->pl, &inputs, &outputs);
  if (status == PLM_OK) status = plm_pipeline_output_shape(job->pl, 0, &table);
  if (status == PLM_OK && outputs >= 2) status = plm_pipeline_output_shape(job->pl, 1, &count);
  if (status != PLM_OK)
    return quote_failure(job->err, job->err_size, status, "%s", plm_last_error());
  bool is_table = table.dtype == PLM_DTYPE_F64 && table.ndim == 2 + stacked &&
                  (!stacked || table.dims[0] == batch) &&
                  table.dims[table.ndim - 1] == PLM_REGION_COLUMNS && outputs == 2 &&
                  count.dtype == PLM_DTYPE_I32 && count.ndim == 1 &&
                  count.dims[0] == (stacked ? batch : 1);
  if (!is_table) {
    char shape[96];
    shape_text(&table, shape, sizeof shape);
    return quote_failure(job->err, job->err_size, PLM_ERR_INVALID_ARG,
                         "the pipeline's output is %s, not a regions table: end it with "
                         "'label ! regions' or with 'segment'",
                         shape);
  }
  job->result->capacity = table.dims[table.ndim - 2];
  return PLM_OK;
}

/* ---- the frames --------------------------------------------------------------------------- */

/* Keep the message of the run's first failure in the source or the sink. */
static plm_status keep_failure(detect_job *job, plm_status status) {
  if (status != PLM_OK && job->first_failure[0] == '\0')
    snprintf(job->first_failure, sizeof job->first_failure, "%s", job->scratch);
  return status;
}

/* Whether each frame's read and written times are kept: for --latency, and for a folder,
 * whose frames may run in several segments (the run's percentiles are then made from
 * them). Never for a stream, which may not end. */
static bool timed(const detect_job *job) {
  return job->config->latency_path || job->result->frames.folder;
}

/* Frame k's read time (--latency), the times' room grown to hold it. */
static plm_status note_read(detect_job *job, int64_t frame, double seconds) {
  if (frame >= job->frame_times_room) {
    int64_t room = job->frame_times_room ? 2 * job->frame_times_room : 1024;
    while (room <= frame) room *= 2;
    frame_times *grown = realloc(job->times, (size_t)room * sizeof *grown);
    if (!grown)
      return quote_failure(job->scratch, sizeof job->scratch, PLM_ERR_OUT_OF_MEMORY,
                           "out of memory for the times of frame %lld", (long long)frame);
    job->times = grown;
    job->frame_times_room = room;
  }
  job->times[frame] = (frame_times){.read_s = seconds, .written_s = -1.0};
  return PLM_OK;
}

static plm_status read_frame(void *user, int64_t run_frame, void *const *inputs, bool *end) {
  detect_job *job = user;
  const int64_t count = job->result->frames.count; /* -1: a stream, until it ends */
  const int64_t frame = job->first_frame + run_frame;
  if (count >= 0 && frame >= count) {
    *end = true;
    return PLM_OK;
  }
  if (job->config->stop && *job->config->stop)
    return keep_failure(job, quote_failure(job->scratch, sizeof job->scratch, PLM_ERR_INVALID_STATE,
                                           "interrupted at frame %lld", (long long)frame));
  int64_t height = job->height, width = job->width;
  plm_status status = job->result->frames.folder
                          ? frame_reader_shape(job->reader, frame, &height, &width, job->scratch,
                                               sizeof job->scratch)
                          : PLM_OK;
  if (status == PLM_OK && (height != job->height || width != job->width)) {
    job->next_height = height; /* the segment ends; the next runs this shape */
    job->next_width = width;
    *end = true;
    return PLM_OK;
  }
  if (status == PLM_OK)
    status =
        frame_reader_next(job->reader, frame, inputs[0], end, job->scratch, sizeof job->scratch);
  if (status == PLM_OK && !*end && timed(job))
    status = note_read(job, frame, plm__monotonic_seconds() - job->started);
  return keep_failure(job, status);
}

/* The rows of frame k (detect_pack_fn): the count of regions the table could not hold,
 * then the CSV lines, in job->rows. */
static plm_status pack_rows(void *user, int64_t run_frame, const void *const *outputs,
                            const void **bytes, size_t *length) {
  detect_job *job = user;
  const int64_t frame = job->first_frame + run_frame;
  const int64_t capacity = job->result->capacity;
  const double *table = outputs[0];
  int32_t count = 0;
  memcpy(&count, outputs[1], sizeof count);
  if (count < 0)
    return keep_failure(
        job, quote_failure(job->scratch, sizeof job->scratch, PLM_ERR_INTERNAL,
                           "frame %lld: a count of %d regions", (long long)frame, (int)count));
  const int64_t rows = count < capacity ? count : capacity, missing = count - rows;
  size_t room = sizeof missing + (size_t)rows * CSV_REGIONS_ROW_SIZE;
  if (room > job->rows_room) {
    char *grown = realloc(job->rows, room);
    if (!grown)
      return keep_failure(
          job, quote_failure(job->scratch, sizeof job->scratch, PLM_ERR_OUT_OF_MEMORY,
                             "out of memory for the %lld rows of frame %lld", (long long)rows,
                             (long long)frame));
    job->rows = grown;
    job->rows_room = room;
  }
  memcpy(job->rows, &missing, sizeof missing);
  size_t used = sizeof missing;
  for (int64_t j = 0; j < rows; j++)
    used += csv_regions_row(job->rows + used, CSV_REGIONS_ROW_SIZE, frame,
                            table + j * PLM_REGION_COLUMNS, true);
  *bytes = job->rows;
  *length = used;
  return PLM_OK;
}

/* Write frame k's packed rows into the CSV (detect_deliver_fn). */
static plm_status write_rows(void *user, int64_t run_frame, const void *bytes, size_t length) {
  detect_job *job = user;
  const int64_t frame = job->first_frame + run_frame;
  detect_result *result = job->result;
  int64_t missing = 0;
  memcpy(&missing, bytes, sizeof missing);
  const char *lines = (const char *)bytes + sizeof missing;
  const size_t text = length - sizeof missing;
  if (missing > 0) {
    result->truncated_frames++;
    result->missing_regions += missing;
  }
  plm_status status =
      job->kept ? unnamed_file_write(job->kept, lines, text, job->scratch, sizeof job->scratch)
                : image_writer_write(job->csv, lines, text, job->scratch, sizeof job->scratch);
  if (status != PLM_OK) {
    result->write_failed = true;
    return keep_failure(job, status);
  }
  for (size_t i = 0; i < text; i++) result->regions += lines[i] == '\n';
  if (job->times && frame < job->frame_times_room)
    job->times[frame].written_s = plm__monotonic_seconds() - job->started;
  progress_update(&job->bar, frame + 1);
  return PLM_OK;
}

/* The sink of a run here: pack, then write. */
static plm_status write_frame(void *user, int64_t frame, const void *const *outputs) {
  const void *bytes = NULL;
  size_t length = 0;
  plm_status status = pack_rows(user, frame, outputs, &bytes, &length);
  return status == PLM_OK ? write_rows(user, frame, bytes, length) : status;
}

static void describe_failure(void *user, char *message, size_t size) {
  detect_job *job = user;
  snprintf(message, size, "%s", job->first_failure);
}

/* ---- the run ------------------------------------------------------------------------------ */

static plm_status write_to_csv(void *user, const void *data, size_t bytes, char *err,
                               size_t err_size) {
  return image_writer_write(user, data, bytes, err, err_size);
}

/* The kept rows (the writing rank's, with a runner) into the CSV's temporary file. */
static plm_status write_kept_rows(detect_job *job) {
  plm_status status =
      image_writer_open_text(job->config->out_path, &job->csv, job->err, job->err_size);
  if (status == PLM_OK)
    status = unnamed_file_replay(job->kept, write_to_csv, job->csv, job->err, job->err_size);
  unnamed_file_close(job->kept);
  job->kept = NULL;
  return status;
}

/* The frames' times (config->latency_path, detect.h) written atomically, one row a frame
 * delivered. */
static plm_status write_latency(detect_job *job, int64_t frames) {
  const char *path = job->config->latency_path;
  const size_t row_size = 96;
  char *text = malloc((size_t)(frames + 1) * row_size);
  if (!text)
    return quote_failure(job->err, job->err_size, PLM_ERR_OUT_OF_MEMORY,
                         "%s: out of memory for %lld rows", path, (long long)frames);
  size_t used = (size_t)snprintf(text, row_size, "frame,read_s,written_s,latency_ms\n");
  for (int64_t k = 0; k < frames; k++) {
    const frame_times *t = &job->times[k];
    used += (size_t)snprintf(text + used, row_size, "%lld,%.6f,%.6f,%.4f\n", (long long)k,
                             t->read_s, t->written_s, 1e3 * (t->written_s - t->read_s));
  }
  image_writer *writer = NULL;
  plm_status status = image_writer_open_text(path, &writer, job->err, job->err_size);
  if (status == PLM_OK) status = image_writer_write(writer, text, used, job->err, job->err_size);
  if (status == PLM_OK) {
    status = image_writer_commit(writer, job->err, job->err_size);
  } else {
    image_writer_abort(writer);
  }
  free(text);
  return status;
}

static plm_status check_config(const detect_config *config, char *err, size_t err_size) {
  if (!config)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "detect_run: config is NULL");
  if (!config->frames_path || !config->pipeline || !config->out_path)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "detect_run: config->%s is NULL",
                         !config->frames_path ? "frames_path"
                         : !config->pipeline  ? "pipeline"
                                              : "out_path");
  if (config->tensor_count < 0 || config->tensor_count > DETECT_MAX_TENSORS ||
      (config->tensor_count > 0 && !config->tensors))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "detect_run: %d tensors (config->tensors %s); at most %d",
                         config->tensor_count, config->tensors ? "given" : "NULL",
                         DETECT_MAX_TENSORS);
  for (int t = 0; t < config->tensor_count; t++)
    if (!config->tensors[t].name || !config->tensors[t].path)
      return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                           "detect_run: config->tensors[%d].%s is NULL", t,
                           !config->tensors[t].name ? "name" : "path");
  if (config->runner && config->profile_dir)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "--profile is for one process, not a run over several (MPI)");
  if (config->runner && config->latency_path)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "--latency times one process's frames, not a run over several (MPI)");
  if (config->batch < DETECT_BATCH_AUTO || config->batch > PLM_RUN_STREAM_MAX_BATCH)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "a batch of %d frames is not from 1 to %d", config->batch,
                         PLM_RUN_STREAM_MAX_BATCH);
  int length = 0;
  const char *previous = previous_value(config->pipeline, &length);
  if (previous && config->batch > 1)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "--batch %d: the pipeline reads a previous frame's value (%.*s), which "
                         "the frames of one batch cannot see: run it without --batch",
                         config->batch, length, previous);
  if (config->runner && (config->batch > 1 || config->batch == DETECT_BATCH_AUTO))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "--batch runs one process's frames in batches, not a run over several "
                         "(MPI)");
  if (config->frames_in_flight < 0 || config->frames_in_flight > PLM_PIPELINE_MAX_FRAMES)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "frames in flight %d is not from 1 to %d (0: the default)",
                         config->frames_in_flight, PLM_PIPELINE_MAX_FRAMES);
  /* A directory in the way would fail only at the rename, after all the work. */
  struct stat st;
  if (strcmp(config->out_path, "-") != 0 && stat(config->out_path, &st) == 0 && S_ISDIR(st.st_mode))
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: is a directory", config->out_path);
  if (has_token(config->pipeline, "intensity=none"))
    return quote_failure(
        err, err_size, PLM_ERR_INVALID_ARG,
        "the pipeline's regions have intensity=none, but the intensity columns are "
        "written: leave intensity to its default (input)");
  return PLM_OK;
}

/* ---- segments of one shape ------------------------------------------------------------------ */

/* The run's pipeline for frames of job->height x job->width: parsed from the text with the
 * tensors, its outputs checked (the result's capacity set from them), compiled for the
 * frames in flight, profiled with the run's profiler. Errors with job->err set. */
static plm_status build_pipeline(detect_job *job, const plm_named_tensor *named,
                                 plm_pipeline **out) {
  const detect_config *config = job->config;
  const int batch = job->result->batch;
  const int64_t frame_dims[2] = {job->height, job->width};
  const int64_t stack_dims[3] = {batch, job->height, job->width};
  *out = NULL;
  plm_status status = plm_pipeline_parse_with_tensors(
      job->ctx, config->pipeline, job->result->frames.dtype, batch > 1 ? 3 : 2,
      batch > 1 ? stack_dims : frame_dims, named, config->tensor_count, &job->pl);
  if (status != PLM_OK) {
    job->pl = NULL;
    if (batch > 1)
      return quote_failure(job->err, job->err_size, status,
                           "%s (with --batch %d the pipeline runs over stacks of %d frames: "
                           "every element must take them; for segment write threshold ! label "
                           "! regions)",
                           plm_last_error(), batch, batch);
    return quote_failure(job->err, job->err_size, status, "%s", plm_last_error());
  }
  const plm_plan_config plan = {.frames_in_flight = job->result->frames_in_flight};
  if ((status = check_outputs(job)) == PLM_OK &&
      (status = plm_pipeline_compile(job->pl, &plan)) == PLM_OK && job->profiler)
    status = plm_pipeline_set_profiler(job->pl, job->profiler);
  if (status != PLM_OK && job->err[0] == '\0')
    quote_failure(job->err, job->err_size, status, "%s", plm_last_error());
  if (status != PLM_OK) {
    plm_pipeline_destroy(job->pl);
    job->pl = NULL;
    return status;
  }
  *out = job->pl;
  return PLM_OK;
}

/* Make the pipeline of frames of height x width the running one (detect.h, "Shapes"): the
 * kept one, or one built in a free slot or in place of the least recently used; its state
 * reset and the result's capacity its own. */
static plm_status use_shape(detect_job *job, const plm_named_tensor *named, int64_t height,
                            int64_t width) {
  job->height = height;
  job->width = width;
  shaped_pipeline *slot = NULL;
  for (int i = 0; i < DETECT_SHAPES_KEPT && !slot; i++)
    if (job->kept_pipelines[i].pl && job->kept_pipelines[i].height == height &&
        job->kept_pipelines[i].width == width)
      slot = &job->kept_pipelines[i];
  plm_status status = PLM_OK;
  if (slot) {
    job->pl = slot->pl;
    if ((status = plm_pipeline_reset_state(job->pl)) == PLM_OK) status = check_outputs(job);
    if (status != PLM_OK && job->err[0] == '\0')
      quote_failure(job->err, job->err_size, status, "%s", plm_last_error());
  } else {
    slot = &job->kept_pipelines[0];
    for (int i = 0; i < DETECT_SHAPES_KEPT; i++) {
      if (!job->kept_pipelines[i].pl) {
        slot = &job->kept_pipelines[i];
        break;
      }
      if (job->kept_pipelines[i].used < slot->used) slot = &job->kept_pipelines[i];
    }
    plm_pipeline_destroy(slot->pl); /* its blocks go back to the pool for the new one */
    *slot = (shaped_pipeline){.height = height, .width = width};
    job->pl = NULL;
    status = build_pipeline(job, named, &slot->pl);
    job->result->pipelines += status == PLM_OK;
  }
  slot->used = ++job->shapes_used;
  return status;
}

/* The latency percentiles of every frame so far, from its read to its rows written (by
 * nearest rank), for a run of several segments. */
static void frame_latency_percentiles(const detect_job *job, int64_t frames,
                                      plm_run_stream_report *report) {
  double *ms = frames > 0 ? malloc((size_t)frames * sizeof *ms) : NULL;
  if (!ms) return; /* none, or no memory: the segments' figures stay */
  for (int64_t k = 0; k < frames; k++)
    ms[k] = 1e3 * (job->times[k].written_s - job->times[k].read_s);
  plm__sort_doubles(ms, (size_t)frames);
  report->latency_p50_ms = ms[plm__nearest_rank((size_t)frames, 0.50)];
  report->latency_p99_ms = ms[plm__nearest_rank((size_t)frames, 0.99)];
  free(ms);
}

/* The segment's report added to the run's (detect.h's result->report). */
static void add_segment(detect_job *job, const plm_run_stream_report *segment) {
  plm_run_stream_report *run = &job->result->report;
  if (job->result->segments++ == 0) {
    *run = *segment;
    return;
  }
  run->frames_delivered += segment->frames_delivered;
  run->failed_frame = segment->failed_frame >= 0 ? job->first_frame + segment->failed_frame : -1;
  run->seconds += segment->seconds;
  run->frames_per_s = run->seconds > 0 ? (double)run->frames_delivered / run->seconds : 0;
  run->graph_replays += segment->graph_replays;
  run->graphs_used = run->graph_replays > 0;
  if (!run->graphs_note[0]) memcpy(run->graphs_note, segment->graphs_note, sizeof run->graphs_note);
  run->copy_ms += segment->copy_ms;
  run->compute_ms += segment->compute_ms;
  run->overlap_ms += segment->overlap_ms;
  run->submit_p50_us = fmax(run->submit_p50_us, segment->submit_p50_us);
  run->submit_p99_us = fmax(run->submit_p99_us, segment->submit_p99_us);
  run->source_p50_us = fmax(run->source_p50_us, segment->source_p50_us);
  run->source_p99_us = fmax(run->source_p99_us, segment->source_p99_us);
}

/* Run the frames, a segment of one shape after another, until they end or one fails. */
static plm_status run_each_segment(detect_job *job, const plm_named_tensor *named);

/* run_each_segment, and over several segments the latency percentiles of all their frames,
 * sorted once at the end. */
static plm_status run_segments(detect_job *job, const plm_named_tensor *named) {
  plm_status status = run_each_segment(job, named);
  if (job->result->segments > 1)
    frame_latency_percentiles(job, job->frames_timed, &job->result->report);
  return status;
}

static plm_status run_each_segment(detect_job *job, const plm_named_tensor *named) {
  plm_run_stream_options options = plm_run_stream_options_default();
  options.batch = job->result->batch;
  for (;;) {
    plm_run_stream_report segment;
    job->next_height = job->next_width = 0;
    plm_status status =
        plm_pipeline_run_stream(job->pl, read_frame, write_frame, job, &options, &segment);
    add_segment(job, &segment);
    job->frames_timed = job->first_frame + segment.frames_delivered;
    if (status != PLM_OK) {
      /* The source's or sink's own message names the file and the frame; the run's names
       * the frame of its segment. */
      if (job->first_failure[0])
        return quote_failure(job->err, job->err_size, status, "%s", job->first_failure);
      if (job->result->segments == 1)
        return quote_failure(job->err, job->err_size, status, "%s", plm_last_error());
      return quote_failure(job->err, job->err_size, status,
                           "the %lldx%lld frames from frame %lld on: %s", (long long)job->height,
                           (long long)job->width, (long long)job->first_frame, plm_last_error());
    }
    if (job->next_height == 0) return PLM_OK;
    job->first_frame += segment.frames_delivered;
    if ((status = use_shape(job, named, job->next_height, job->next_width)) != PLM_OK)
      return status;
  }
}

plm_status detect_run(const detect_config *config, detect_result *result, char *err,
                      size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!result)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "detect_run: result is NULL");
  memset(result, 0, sizeof *result);
  result->report.failed_frame = -1;
  plm_status status = check_config(config, err, err_size);
  if (status != PLM_OK && config && config->runner)
    return config->runner->withdraw(config->runner, status, err, err_size);
  if (status != PLM_OK) return status;
  detect_job job = {.config = config, .result = result, .err = err, .err_size = err_size};
  result->frames_in_flight =
      config->frames_in_flight ? config->frames_in_flight : DETECT_DEFAULT_FRAMES_IN_FLIGHT;
  /* A text that feeds a frame's output to the next runs a frame at a time (--batch N is
   * refused by check_config); auto then has nothing to tune. */
  const bool feedback = previous_value(config->pipeline, NULL) != NULL;
  result->batch = config->batch > 1 ? config->batch : 1;
  result->batch_tuned = config->batch == DETECT_BATCH_AUTO && !feedback;

  status = config->raw ? frame_reader_open_raw(config->frames_path, config->raw, &result->frames,
                                               &job.reader, err, err_size)
                       : frame_reader_open_as(config->frames_path, config->read_flags,
                                              &result->frames, &job.reader, err, err_size);
  if (status != PLM_OK) return release(&job, status);
  const frame_reader_info *frames = &result->frames;
  /* The ranks share the frames by their count: a video file whose container does not say
   * it is counted first (each rank counts the same file, so all agree); a stream cannot be. */
  if (config->runner && frames->count < 0 &&
      (status = frame_reader_count_frames(job.reader, &result->frames.count, err, err_size)) !=
          PLM_OK)
    return release(&job, status);
  if (config->runner && frames->count < 0) {
    const char *stream = frame_reader_file(job.reader, 0);
    return release(&job, quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                                       "%s is a stream: its frames are read once, in order, and "
                                       "cannot be shared among the ranks of an MPI job (give a "
                                       "file)",
                                       strcmp(stream, "-") == 0 ? "stdin" : stream));
  }
  if (frames->dtype != PLM_DTYPE_U8 && frames->dtype != PLM_DTYPE_U16 &&
      frames->dtype != PLM_DTYPE_F32)
    return release(&job, quote_failure(err, err_size, PLM_ERR_UNSUPPORTED,
                                       "%s: frames of %s: plume detect takes u8, u16 or f32 frames",
                                       config->frames_path, plm_dtype_name(frames->dtype)));

  plm_named_tensor named[DETECT_MAX_TENSORS];
  if ((status = read_tensors(&job, named)) != PLM_OK) return release(&job, status);
  if (config->runner) {
    check_pipeline(config->pipeline, &job.checks[0]);
    check_tensors(&job, &job.checks[1]);
    check_frames(config->frames_path, frames, &job.checks[2]);
  }

  /* A folder's frames may differ in shape: segments of one shape each (detect.h). */
  if (frames->folder && !config->runner) frame_reader_allow_shapes(job.reader);
  job.height = frames->height;
  job.width = frames->width;

  /* AUTO: the backend the cost model predicts faster for this pipeline and frame size
   * (plm_pipeline_place); built again there when it is not the context's. */
  plm_backend backend = config->backend;
  for (int attempt = 0; attempt < 2; attempt++) {
    plm_context_config context_config = {.backend = backend, .device = config->device};
    if ((status = plm_context_create(&context_config, &job.ctx)) != PLM_OK ||
        (status = plm_context_backend(job.ctx, &result->backend)) != PLM_OK)
      return library_failure(&job, status);
    if (result->batch_tuned &&
        (status = plm_tuning_batch(job.ctx,
                                   (size_t)(job.height * job.width) * plm_dtype_size(frames->dtype),
                                   &result->batch)) != PLM_OK)
      return library_failure(&job, status);
    if ((status = build_pipeline(&job, named, &job.pl)) != PLM_OK) return release(&job, status);
    if (config->backend != PLM_BACKEND_AUTO || attempt > 0) break;
    if ((status = plm_pipeline_place(job.pl, &backend, &result->placement)) != PLM_OK)
      return library_failure(&job, status);
    if (backend == result->backend) break;
    plm_pipeline_destroy(job.pl);
    job.pl = NULL;
    plm_context_destroy(job.ctx);
    job.ctx = NULL;
  }
  job.kept_pipelines[0] = (shaped_pipeline){.height = job.height, .width = job.width, .pl = job.pl};
  result->pipelines = 1;
  if (!frames->folder) free_tensors(&job); /* the pipeline has its copies; no other shape */
  if (config->profile_dir &&
      ((status = plm_profiler_create(job.ctx, NULL, &job.profiler)) != PLM_OK ||
       (status = plm_pipeline_set_profiler(job.pl, job.profiler)) != PLM_OK))
    return library_failure(&job, status);

  const detect_runner *runner = config->runner;
  const bool writes = !runner || runner->writes;
  char header[CSV_REGIONS_ROW_SIZE];
  size_t header_length = csv_regions_header(header, sizeof header, true, true);
  if (writes && runner) {
    /* Nothing beside out_path until every rank's rows are in (detect.h, "Processes"); a
     * path that cannot be written fails now, not after the run. */
    char why[OUTPUT_PATH_WHY_SIZE], shown[QUOTE_SIZE];
    if (!output_path_usable(config->out_path, why, sizeof why))
      return release(&job, quote_failure(err, err_size, PLM_ERR_IO, "--out %s: %s",
                                         quote_value(config->out_path, shown, sizeof shown), why));
    if ((status = unnamed_file_open(config->out_path, &job.kept, err, err_size)) != PLM_OK ||
        (status = unnamed_file_write(job.kept, header, header_length, err, err_size)) != PLM_OK) {
      result->write_failed = job.kept != NULL;
      return release(&job, status);
    }
  } else if (writes &&
             ((status = image_writer_open_text(config->out_path, &job.csv, err, err_size)) !=
                  PLM_OK ||
              (status = image_writer_write(job.csv, header, header_length, err, err_size)) !=
                  PLM_OK)) {
    result->write_failed = job.csv != NULL; /* opened, then not written */
    return release(&job, status);
  }

  if (config->force_progress && writes)
    progress_begin_always(&job.bar, "detect", "frames", frames->count);
  else if (config->show_progress && writes)
    progress_begin(&job.bar, "detect", "frames", frames->count);
  if (runner) {
    const detect_frames all = {.count = frames->count,
                               .source = read_frame,
                               .pack = pack_rows,
                               .deliver = write_rows,
                               .describe_failure = describe_failure,
                               .job = &job,
                               .checks = job.checks,
                               .check_count = DETECT_CHECKS};
    job.ran = true;
    result->segments = 1;
    status = runner->run(runner, job.pl, &all, result, err, err_size);
  } else {
    job.started = plm__monotonic_seconds();
    status = run_segments(&job, named);
  }
  progress_end(&job.bar);
  if (result->frames.count < 0) result->frames.count = result->report.frames_delivered;
  if (status != PLM_OK || !writes) return release(&job, status);
  /* The last frame may have been read before a signal came: nothing replaces --out. */
  if (config->stop && *config->stop)
    return release(&job, quote_failure(err, err_size, PLM_ERR_INVALID_STATE,
                                       "interrupted after the last frame, before %s was written",
                                       config->out_path));
  /* Every rank's rows are in: now the CSV beside out_path, as one process writes it. */
  if (job.kept && (status = write_kept_rows(&job)) != PLM_OK) {
    result->write_failed = true;
    return release(&job, status);
  }
  image_writer *csv = job.csv;
  job.csv = NULL;
  status = image_writer_commit(csv, err, err_size);
  if (status == PLM_OK && config->latency_path)
    status = write_latency(&job, result->report.frames_delivered);
  result->write_failed = status != PLM_OK;
  /* The detections are kept even when the profile cannot be written; a profile that
   * cannot be written (its folder cannot be made, a full disk) is a runtime failure, as
   * the CSV's would be (docs/failure-behaviour.md). */
  if (status == PLM_OK && job.profiler) {
    const plm_profile_write_options profile = {.title = "plume detect"};
    if ((status = add_pool_snapshot(&job)) != PLM_OK) return library_failure(&job, status);
    if ((status = plm_profiler_write(job.profiler, config->profile_dir, &profile)) != PLM_OK) {
      result->write_failed = true;
      return library_failure(&job, status);
    }
  }
  return release(&job, status);
}

int detect_exit_code(plm_status status) {
  switch (status) {
    case PLM_OK: return 0;
    case PLM_ERR_INVALID_ARG:
    case PLM_ERR_IO:
    case PLM_ERR_UNSUPPORTED: return 2;
    default: return 1;
  }
}

void detect_print_summary(FILE *out, const detect_result *r) {
  const plm_run_stream_report *report = &r->report;
  if (r->ranks > 0) {
    fprintf(out, "%lld frames in %.2f s: %.1f frames/s over %d ranks (", (long long)r->frames_total,
            r->seconds_total, r->frames_per_s_total, r->ranks);
    for (int k = 0; k < r->ranks && k < DETECT_RANKS_SHOWN; k++)
      fprintf(out, "%srank %d %.1f", k ? ", " : "", k, r->rank_frames_per_s[k]);
    fprintf(out, "%s frames/s; %s backend, %d frames in flight each)\n",
            r->ranks > DETECT_RANKS_SHOWN ? ", ..." : "", plm_backend_name(r->backend),
            r->frames_in_flight);
  } else if (r->batch > 1) {
    fprintf(out,
            "%lld frames in %.2f s: %.1f frames/s (%s backend, %d batches of %d frames%s in "
            "flight; latency p50 %.1f ms, p99 %.1f ms)\n",
            (long long)report->frames_delivered, report->seconds, report->frames_per_s,
            plm_backend_name(r->backend), r->frames_in_flight, r->batch,
            r->batch_tuned ? " (tuned)" : "", report->latency_p50_ms, report->latency_p99_ms);
  } else {
    fprintf(out,
            "%lld frames in %.2f s: %.1f frames/s (%s backend, %d frames in flight; latency p50 "
            "%.1f ms, p99 %.1f ms)\n",
            (long long)report->frames_delivered, report->seconds, report->frames_per_s,
            plm_backend_name(r->backend), r->frames_in_flight, report->latency_p50_ms,
            report->latency_p99_ms);
  }
  const plm_placement *p = &r->placement;
  char unit[48] = "frame";
  if (r->batch > 1) snprintf(unit, sizeof unit, "batch of %d frames", r->batch);
  if (p->host_ms > 0 && p->cuda_ms > 0)
    fprintf(out,
            "placement: predicted %.4f ms per %s on host (copies %.4f), %.4f ms on cuda (copies "
            "%.4f) -> %s\n",
            p->host_ms, unit, p->host_copy_ms, p->cuda_ms, p->cuda_copy_ms,
            plm_backend_name(p->choice));
  if (report->graphs_used && r->batch > 1)
    fprintf(out, "graphs: %lld batches of %d frames (of %lld frames) replayed from CUDA graphs\n",
            (long long)report->graph_replays, r->batch, (long long)report->frames_delivered);
  else if (report->graphs_used)
    fprintf(out, "graphs: %lld of %lld frames replayed from CUDA graphs\n",
            (long long)report->graph_replays, (long long)report->frames_delivered);
  else if (report->graphs_note[0])
    fprintf(out, "graphs: not used (%s)\n", report->graphs_note);
  if (r->truncated_frames > 0)
    fprintf(out,
            "warning: %lld frames had more regions than the table's %lld rows; %lld regions are "
            "missing from the CSV (raise capacity= of regions)\n",
            (long long)r->truncated_frames, (long long)r->capacity, (long long)r->missing_regions);
}

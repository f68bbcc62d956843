/* pipeline/devices.c: one stream of frames over several devices
 * (plm_pipeline_run_stream_devices; the contract is in plume/pipeline.h).
 *
 * Each device is a thread running plm_pipeline_run_stream on its pipeline, with a source
 * and a sink of this file's:
 *
 *   deal     (the device's source) takes the next frame of the sequence under
 *            `source_lock`, so the user's source is called once per frame, in order, one
 *            call at a time; the device's local frame k is global frame map[k mod M].
 *            A device asks for a frame only when one of its slots is free, which is the
 *            back-pressure: a slow device asks less often.
 *   deposit  (the device's sink) waits until the frame's entry of the reorder ring is free
 *            (global frame g uses entry g mod C, free once frame g - C has been delivered),
 *            copies the outputs there and marks it ready.
 *
 * The calling thread hands entry `delivered mod C` to the user's sink as soon as it is
 * ready, in frame order. No cycle of waits: the oldest undelivered frame's device is
 * never waiting for an entry (every earlier frame is delivered) nor for an earlier frame
 * of its own, so it deposits, and the calling thread moves on.
 *
 * Failure at global frame f (the source, a device's work, the sink) sets `stop` to the
 * smallest such f: nothing at or past it is dealt or delivered, deposits past it are
 * refused (the device's run then stops), and everything before it is still delivered.
 *
 * Locks: source_lock (dealing) before lock (everything else); the user's sink and the
 * copies into an entry run outside both.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline_internal.h"
#include "streams/clock.h"
#include "streams/error.h"

enum { MESSAGE_SIZE = 512 };

typedef struct ring_entry {
  int64_t frame; /* the frame held, or -1 */
  bool ready;    /* its outputs are copied in */
  int device;
  void **outputs; /* the outputs' bytes */
} ring_entry;

typedef struct devices_run devices_run;

typedef struct device {
  devices_run *run;
  int index;
  plm_pipeline *pl;
  pthread_t thread;
  bool started;
  int64_t *map; /* local frame k -> global frame, at k mod map_size */
  int map_size;
  plm_status status; /* its run's */
} device;

struct devices_run {
  plm_frame_source_fn source;
  plm_frame_sink_fn sink;
  void *user;
  plm_run_stream_options options; /* each device's: max_frames 0 */
  int64_t max_frames;
  int count;
  device devices[PLM_RUN_STREAM_MAX_DEVICES];
  int outputs_count;
  size_t *output_bytes;
  pthread_mutex_t source_lock;
  int64_t next; /* the next frame to deal; guarded by source_lock */
  bool ended;   /* the source said end, or max_frames; guarded by source_lock */
  pthread_mutex_t lock;
  pthread_cond_t changed;
  ring_entry *ring;
  int capacity;
  int64_t delivered; /* frames handed to the sink */
  int64_t end;       /* frames in the sequence, once known; else INT64_MAX */
  int64_t stop;      /* the first failed frame, or INT64_MAX */
  int finished;      /* devices whose run has returned */
  bool closing;      /* the run is over: deal no more, deposit no more */
  plm_status status; /* the failure at `stop` */
  int failed_device;
  char message[MESSAGE_SIZE];
  plm_run_stream_devices_report *report;
};

/* Keep the failure of frame `frame` when it is the earliest; under lock. */
static void fail_at(devices_run *run, int64_t frame, int device_index, plm_status status,
                    const char *message) {
  if (frame >= run->stop) return;
  run->stop = frame;
  run->status = status;
  run->failed_device = device_index;
  snprintf(run->message, sizeof run->message, "%s", message);
  pthread_cond_broadcast(&run->changed);
}

/* ---- the devices' source and sink ----------------------------------------------------------- */

static plm_status deal(void *user, int64_t k, void *const *inputs, bool *end) {
  device *dev = user;
  devices_run *run = dev->run;
  pthread_mutex_lock(&run->source_lock);
  pthread_mutex_lock(&run->lock);
  const int64_t stop = run->stop;
  const bool closing = run->closing;
  pthread_mutex_unlock(&run->lock);
  const int64_t frame = run->next;
  const bool limit = run->max_frames && frame >= run->max_frames;
  if (run->ended || limit || frame >= stop || closing) {
    if (limit && !run->ended) {
      run->ended = true;
      pthread_mutex_lock(&run->lock);
      if (frame < run->end) run->end = frame;
      pthread_cond_broadcast(&run->changed);
      pthread_mutex_unlock(&run->lock);
    }
    *end = true;
    pthread_mutex_unlock(&run->source_lock);
    return PLM_OK;
  }
  /* Mapped first: a failure of this call is the device's failure at this frame. */
  dev->map[k % dev->map_size] = frame;
  plm_clear_error();
  bool source_end = false;
  plm_status status = run->source(run->user, frame, inputs, &source_end);
  if (status != PLM_OK || source_end) {
    char message[MESSAGE_SIZE];
    if (status != PLM_OK && plm_last_error()[0])
      snprintf(message, sizeof message, "frame %lld: the source failed: %s", (long long)frame,
               plm_last_error());
    else
      snprintf(message, sizeof message, "frame %lld: the source failed (%s)", (long long)frame,
               plm_status_str(status));
    run->ended = true;
    pthread_mutex_lock(&run->lock);
    if (status != PLM_OK) fail_at(run, frame, dev->index, status, message);
    if (frame < run->end) run->end = frame;
    pthread_cond_broadcast(&run->changed);
    pthread_mutex_unlock(&run->lock);
    pthread_mutex_unlock(&run->source_lock);
    *end = source_end;
    return status;
  }
  run->next = frame + 1;
  pthread_mutex_unlock(&run->source_lock);
  return PLM_OK;
}

static plm_status deposit(void *user, int64_t k, const void *const *outputs) {
  device *dev = user;
  devices_run *run = dev->run;
  const int64_t frame = dev->map[k % dev->map_size];
  ring_entry *entry = &run->ring[frame % run->capacity];
  pthread_mutex_lock(&run->lock);
  while (frame < run->stop && !run->closing && run->delivered <= frame - run->capacity)
    pthread_cond_wait(&run->changed, &run->lock);
  const bool refused = frame >= run->stop || run->closing;
  pthread_mutex_unlock(&run->lock);
  /* Past a failure: this device stops (its status is not the run's). */
  if (refused) return PLM_ERR_INVALID_STATE;
  for (int i = 0; i < run->outputs_count; i++)
    memcpy(entry->outputs[i], outputs[i], run->output_bytes[i]);
  pthread_mutex_lock(&run->lock);
  entry->frame = frame;
  entry->device = dev->index;
  entry->ready = true;
  pthread_cond_broadcast(&run->changed);
  pthread_mutex_unlock(&run->lock);
  return PLM_OK;
}

/* The run's message names the device's local frame: "plm_pipeline_run_stream: frame k: X"
 * becomes X. */
static const char *after_frame_prefix(const char *message) {
  const char *rest = strstr(message, "frame ");
  if (!rest) return message;
  rest += strlen("frame ");
  while (*rest >= '0' && *rest <= '9') rest++;
  return strncmp(rest, ": ", 2) == 0 ? rest + 2 : message;
}

static void *device_main(void *arg) {
  device *dev = arg;
  devices_run *run = dev->run;
  plm_run_stream_report *report = &run->report->device[dev->index];
  plm_status status = plm_pipeline_run_stream(dev->pl, deal, deposit, dev, &run->options, report);
  pthread_mutex_lock(&run->lock);
  dev->status = status;
  /* A failure of its own (not a deposit refused past another's, nor the source's, which
   * deal kept): at its frame. */
  if (status != PLM_OK && report->failed_frame >= 0) {
    const int64_t frame = dev->map[report->failed_frame % dev->map_size];
    if (frame < run->stop) {
      char message[MESSAGE_SIZE];
      snprintf(message, sizeof message, "frame %lld (device %d): %s", (long long)frame, dev->index,
               after_frame_prefix(plm_last_error()));
      fail_at(run, frame, dev->index, status, message);
    }
  }
  run->finished++;
  pthread_cond_broadcast(&run->changed);
  pthread_mutex_unlock(&run->lock);
  return NULL;
}

/* ---- the calling thread --------------------------------------------------------------------- */

/* Hand the frames to the sink in order until the sequence ends or a failure. */
static void deliver_frames(devices_run *run) {
  plm_run_stream_devices_report *report = run->report;
  for (;;) {
    pthread_mutex_lock(&run->lock);
    ring_entry *entry = &run->ring[run->delivered % run->capacity];
    for (;;) {
      const int64_t frame = run->delivered;
      if (frame >= run->stop || frame >= run->end) break;
      if (entry->ready && entry->frame == frame) break;
      if (run->finished == run->count) break; /* nothing more will come */
      pthread_cond_wait(&run->changed, &run->lock);
    }
    const int64_t frame = run->delivered;
    const bool ready = frame < run->stop && entry->ready && entry->frame == frame;
    pthread_mutex_unlock(&run->lock);
    if (!ready) return;
    plm_status status = PLM_OK;
    if (run->sink) {
      plm_clear_error();
      status = run->sink(run->user, frame, (const void *const *)entry->outputs);
    }
    pthread_mutex_lock(&run->lock);
    if (status != PLM_OK) {
      char message[MESSAGE_SIZE];
      if (plm_last_error()[0])
        snprintf(message, sizeof message, "frame %lld: the sink failed: %s", (long long)frame,
                 plm_last_error());
      else
        snprintf(message, sizeof message, "frame %lld: the sink failed (%s)", (long long)frame,
                 plm_status_str(status));
      fail_at(run, frame, -1, status, message);
      pthread_mutex_unlock(&run->lock);
      return;
    }
    report->device_frames[entry->device]++;
    report->frames_delivered++;
    entry->ready = false;
    entry->frame = -1;
    run->delivered++;
    pthread_cond_broadcast(&run->changed);
    pthread_mutex_unlock(&run->lock);
  }
}

/* ---- set-up ------------------------------------------------------------------------------- */

static bool same_shapes(const plm_pipeline *a, const plm_pipeline *b) {
  const plm__graph *ga = &a->graph, *gb = &b->graph;
  if (ga->input_count != gb->input_count || ga->output_count != gb->output_count) return false;
  for (int i = 0; i < ga->input_count + ga->output_count; i++) {
    const bool input = i < ga->input_count;
    const int j = input ? i : i - ga->input_count;
    const plm_shape *x = &ga->tensors[input ? ga->inputs[j] : ga->outputs[j]].shape;
    const plm_shape *y = &gb->tensors[input ? gb->inputs[j] : gb->outputs[j]].shape;
    if (!plm__shape_equal(x, y)) return false;
  }
  return true;
}

static plm_status check_pipelines(plm_pipeline *const *pipelines, int count) {
  if (count < 1 || count > PLM_RUN_STREAM_MAX_DEVICES)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "count %d is not from 1 to %d", count,
                         PLM_RUN_STREAM_MAX_DEVICES);
  for (int i = 0; i < count; i++) {
    const plm_pipeline *pl = pipelines[i];
    if (!pl) return plm__fail_raw(PLM_ERR_INVALID_ARG, "pipelines[%d] is NULL", i);
    for (int j = 0; j < i; j++)
      if (pipelines[j] == pl)
        return plm__fail_raw(PLM_ERR_INVALID_ARG, "pipelines[%d] is pipelines[%d] again", i, j);
    if (!pl->compiled)
      return plm__fail_raw(PLM_ERR_INVALID_STATE, "pipelines[%d] is not compiled", i);
    if (!same_shapes(pipelines[0], pl))
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "pipelines[%d]'s inputs or outputs are not pipelines[0]'s: the devices "
                           "must run the same pipeline",
                           i);
    if (count > 1 && pl->plan.state_count > 0)
      return plm__fail_raw(PLM_ERR_UNSUPPORTED,
                           "pipelines[%d] has %d state%s (a background, a previous value): its "
                           "state carries from frame to frame, which devices taking frames in "
                           "turn would break; run it on one device",
                           i, pl->plan.state_count, pl->plan.state_count == 1 ? "" : "s");
  }
  return PLM_OK;
}

/* The reorder ring and each device's map of local to global frames. */
static plm_status open_run(devices_run *run, plm_pipeline *const *pipelines) {
  const plm__graph *graph = &pipelines[0]->graph;
  run->outputs_count = graph->output_count;
  run->output_bytes = calloc((size_t)run->outputs_count + 1, sizeof *run->output_bytes);
  if (!run->output_bytes) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the run");
  for (int i = 0; i < run->outputs_count; i++)
    run->output_bytes[i] = graph->tensors[graph->outputs[i]].bytes;
  for (int d = 0; d < run->count; d++) {
    device *dev = &run->devices[d];
    *dev = (device){.run = run, .index = d, .pl = pipelines[d]};
    /* Frames a device holds: its slots, and one more being dealt. */
    dev->map_size = pipelines[d]->config.frames_in_flight + run->options.source_ahead + 1;
    dev->map = calloc((size_t)dev->map_size, sizeof *dev->map);
    if (!dev->map) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the run");
    run->capacity += pipelines[d]->config.frames_in_flight;
  }
  run->ring = calloc((size_t)run->capacity, sizeof *run->ring);
  if (!run->ring) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the run");
  for (int e = 0; e < run->capacity; e++) {
    ring_entry *entry = &run->ring[e];
    entry->frame = -1;
    entry->outputs = calloc((size_t)run->outputs_count + 1, sizeof *entry->outputs);
    if (!entry->outputs) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the run");
    for (int i = 0; i < run->outputs_count; i++)
      if (!(entry->outputs[i] = malloc(run->output_bytes[i] ? run->output_bytes[i] : 1)))
        return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for %zu bytes of outputs",
                             run->output_bytes[i]);
  }
  return PLM_OK;
}

static void close_run(devices_run *run) {
  for (int e = 0; run->ring && e < run->capacity; e++) {
    for (int i = 0; run->ring[e].outputs && i < run->outputs_count; i++)
      free(run->ring[e].outputs[i]);
    free(run->ring[e].outputs);
  }
  free(run->ring);
  for (int d = 0; d < run->count; d++) free(run->devices[d].map);
  free(run->output_bytes);
}

/* Start the devices' threads; on a failure, the ones started are stopped by the caller. */
static plm_status start_devices(devices_run *run) {
  for (int d = 0; d < run->count; d++) {
    device *dev = &run->devices[d];
    int err = pthread_create(&dev->thread, NULL, device_main, dev);
    if (err != 0)
      return plm__fail_raw(PLM_ERR_BACKEND, "no thread for device %d: %s", d, strerror(err));
    dev->started = true;
  }
  return PLM_OK;
}

/* Stop dealing and depositing, and join the devices. */
static void stop_devices(devices_run *run) {
  pthread_mutex_lock(&run->lock);
  run->closing = true; /* whatever is left is not wanted */
  pthread_cond_broadcast(&run->changed);
  pthread_mutex_unlock(&run->lock);
  for (int d = 0; d < run->count; d++)
    if (run->devices[d].started) pthread_join(run->devices[d].thread, NULL);
}

plm_status plm_pipeline_run_stream_devices(plm_pipeline *const *pipelines, int count,
                                           plm_frame_source_fn source, plm_frame_sink_fn sink,
                                           void *user, const plm_run_stream_options *options,
                                           plm_run_stream_devices_report *report) {
  PLM__REQUIRE_NOT_NULL(report);
  memset(report, 0, sizeof *report);
  report->failed_frame = -1;
  report->failed_device = -1;
  PLM__REQUIRE_NOT_NULL(pipelines);
  PLM__REQUIRE_NOT_NULL(source);
  PLM__REFUSE_IN_HOST_CALLBACK();
  const plm_run_stream_options defaults = plm_run_stream_options_default();
  if (!options) options = &defaults;
  plm_status status = plm__run_stream_options_check(options);
  if (status == PLM_OK && options->batch > 1)
    status = plm__fail_raw(PLM_ERR_UNSUPPORTED,
                           "options->batch %d: several devices take frames one by one (batches "
                           "are for plm_pipeline_run_stream)",
                           options->batch);
  if (status == PLM_OK) status = check_pipelines(pipelines, count);
  if (status != PLM_OK) return plm__propagate(status);

  devices_run run = {.source = source,
                     .sink = sink,
                     .user = user,
                     .options = *options,
                     .max_frames = options->max_frames,
                     .count = count,
                     .end = INT64_MAX,
                     .stop = INT64_MAX,
                     .report = report};
  run.options.max_frames = 0;
  report->devices = count;
  for (int d = 0; d < count; d++) report->device[d].failed_frame = -1;
  pthread_mutex_init(&run.source_lock, NULL);
  pthread_mutex_init(&run.lock, NULL);
  pthread_cond_init(&run.changed, NULL);
  const double started_s = plm__monotonic_seconds();
  status = open_run(&run, pipelines);
  if (status == PLM_OK) status = start_devices(&run);
  if (status == PLM_OK) deliver_frames(&run);
  stop_devices(&run);
  /* A device that could not start its run (already streaming, no memory) fails the
   * whole run at its first frame. */
  for (int d = 0; status == PLM_OK && run.stop == INT64_MAX && d < count; d++)
    if (run.devices[d].status != PLM_OK && report->device[d].failed_frame < 0) {
      status = run.devices[d].status;
      plm__fail_raw(status, "device %d: %s", d, plm_last_error());
    }
  if (status == PLM_OK && run.stop != INT64_MAX) {
    status = run.status;
    report->failed_frame = run.stop;
    report->failed_device = run.failed_device;
    plm__fail_raw(status, "%s", run.message);
  }
  report->seconds = plm__monotonic_seconds() - started_s;
  if (report->seconds > 0) {
    report->frames_per_s = (double)report->frames_delivered / report->seconds;
    for (int d = 0; d < count; d++)
      report->device_frames_per_s[d] = (double)report->device_frames[d] / report->seconds;
  }
  close_run(&run);
  pthread_cond_destroy(&run.changed);
  pthread_mutex_destroy(&run.lock);
  pthread_mutex_destroy(&run.source_lock);
  return status == PLM_OK ? PLM_OK : plm__propagate(status);
}

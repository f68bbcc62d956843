/* profile/calibrate.c: the device's measured peaks (see plume/profile.h).
 *
 * Each bandwidth is the best of a few timed copies of 256 MiB (cuda: well beyond an
 * H100's 50 MB L2) or 64 MiB (host) between two buffers
 * (device to device: pool-less device memory; host to device and back: pinned host
 * memory from the context's host pool), timed with events on a private stream; a
 * device-to-device copy counts its bytes twice (read and written). The FMA rate is the
 * best of a few runs of the probe in kernels/common/fma_peak.h. A result is kept for the
 * process (by backend and device name) and in a cache file, one line per device:
 *   plume-calibration-4 <TAB> backend <TAB> key <TAB> copy <TAB> h2d <TAB> d2h <TAB> fma
 *       <TAB> launch_us <TAB> copy_latency_us
 * where the key is the device's name and its multiprocessors (host: cores, since the
 * CPU pool uses them all), "AMD EPYC|2".
 * in $XDG_CACHE_HOME/plume/calibration.tsv (else ~/.cache/plume/calibration.tsv).
 * The last line of a device counts (a later measurement supersedes an earlier one).
 * PLUME_CALIBRATION_CACHE=off skips the file (reading and writing); =refresh measures
 * again, in this process, and appends the result (for peaks measured while the machine
 * was busy: they stay low until measured again).
 *
 * On the CUDA emulator (plm__profile_emulated: an emulated build's cuda device, emu/), whose
 * GPU threads are fibres costing about a microsecond each and whose copies are the host's
 * memcpy, the same measurements run on workloads sized for it: copies of 4 MiB, and the
 * probe on one warp per multiprocessor for 256 steps (an H100's probe, 270,336 threads of
 * 16,384 steps, would take minutes there). The figures are the emulator's, no GPU's: the
 * calibration says so (emulated), and every report of it with it. */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common/fma_peak.h"
#include "ops/op_internal.h"
#include "ops/op_tuning.h"
#include "plume/event.h"
#include "plume/pool.h"
#include "profile/profile_internal.h"
#include "streams/c_numbers.h"
#include "streams/file.h"

enum { TIMED_RUNS = 5, MAX_REMEMBERED = 8, LINE_SIZE = 512, KEY_SIZE = 300 };

static const char CACHE_TAG[] = "plume-calibration-4";

/* ---- the process's memory of earlier calibrations ------------------------------------ */

static struct {
  pthread_mutex_t lock;
  plm_profile_calibration entries[MAX_REMEMBERED];
  char keys[MAX_REMEMBERED][KEY_SIZE];
  int count;
} remembered = {.lock = PTHREAD_MUTEX_INITIALIZER};

_Static_assert(sizeof(((plm_device_info *)0)->name) == PLM_PROFILE_DEVICE_SIZE,
               "a calibration holds a device name whole");

static bool recall(const char *backend, const char *key, plm_profile_calibration *out) {
  bool found = false;
  pthread_mutex_lock(&remembered.lock);
  for (int i = 0; i < remembered.count && !found; i++)
    if (strcmp(remembered.entries[i].backend, backend) == 0 &&
        strcmp(remembered.keys[i], key) == 0) {
      *out = remembered.entries[i];
      found = true;
    }
  pthread_mutex_unlock(&remembered.lock);
  return found;
}

static void remember(const plm_profile_calibration *c, const char *key) {
  pthread_mutex_lock(&remembered.lock);
  if (remembered.count < MAX_REMEMBERED) {
    snprintf(remembered.keys[remembered.count], KEY_SIZE, "%s", key);
    remembered.entries[remembered.count++] = *c;
  }
  pthread_mutex_unlock(&remembered.lock);
}

/* ---- the cache file ------------------------------------------------------------------ */

static bool cache_setting_is(const char *value) {
  const char *setting = getenv("PLUME_CALIBRATION_CACHE");
  return setting && strcmp(setting, value) == 0;
}

static bool cache_file_wanted(void) {
  return !cache_setting_is("off");
}

/* The cache's directory and file (plm__cache_dir; make: create the directory); false
 * when neither XDG_CACHE_HOME nor HOME is set, or the directory cannot be made. */
static bool cache_paths(char *dir, size_t dir_size, char *file, size_t file_size, bool make) {
  if (!plm__cache_dir(dir, dir_size, make)) return false;
  int n = snprintf(file, file_size, "%s/calibration.tsv", dir);
  return n >= 0 && (size_t)n < file_size;
}

/* Device names hold no tabs or newlines that would break a line; replace any. */
static void tidy_name(char *name) {
  for (char *c = name; *c; c++)
    if (*c == '\t' || *c == '\n' || *c == '\r') *c = ' ';
}

static bool cache_load(const char *backend, const char *key, const char *device, bool emulated,
                       plm_profile_calibration *out) {
  char dir[LINE_SIZE], path[LINE_SIZE], line[LINE_SIZE];
  if (!cache_file_wanted() || cache_setting_is("refresh") ||
      !cache_paths(dir, sizeof dir, path, sizeof path, false))
    return false;
  char why[LINE_SIZE];
  FILE *f = plm__file_open_regular(path, PLM__FILE_READ, NULL, why, sizeof why);
  if (!f) return false; /* a FIFO, a folder, no file: measure again */
  bool found = false;
  while (fgets(line, sizeof line, f)) { /* to the end: the last good line counts */
    line[strcspn(line, "\n")] = '\0';
    char *fields[9];
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(line, "\t", &save); tok && n < 9;
         tok = strtok_r(NULL, "\t", &save))
      fields[n++] = tok;
    if (n != 9 || strcmp(fields[0], CACHE_TAG) != 0 || strcmp(fields[1], backend) != 0 ||
        strcmp(fields[2], key) != 0)
      continue;
    plm_profile_calibration c = {.emulated = emulated};
    snprintf(c.backend, sizeof c.backend, "%s", backend);
    snprintf(c.device, sizeof c.device, "%s", device);
    double *values[6] = {&c.device_copy_gbps, &c.h2d_gbps,  &c.d2h_gbps,
                         &c.fma_gflops,       &c.launch_us, &c.copy_latency_us};
    bool parsed = true;
    for (int k = 0; k < 6; k++) {
      char *end = NULL;
      *values[k] = plm__c_strtod(fields[3 + k], &end);
      parsed &= *end == '\0';
    }
    if (!parsed || !(c.device_copy_gbps > 0) || !(c.fma_gflops > 0))
      continue; /* a damaged line: measure again */
    c.from_cache = true;
    *out = c;
    found = true;
  }
  fclose(f);
  return found;
}

/* Append the line; a failure only means the next process measures again. */
static void cache_store(const plm_profile_calibration *c, const char *key) {
  char dir[LINE_SIZE], path[LINE_SIZE];
  if (!cache_file_wanted() || !cache_paths(dir, sizeof dir, path, sizeof path, true)) return;
  char why[LINE_SIZE];
  FILE *f = plm__file_open_regular(path, PLM__FILE_APPEND, NULL, why, sizeof why);
  if (!f) return;
  const plm__c_numbers was = plm__c_numbers_begin(); /* read back by plm__c_strtod */
  fprintf(f, "%s\t%s\t%s\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\n", CACHE_TAG, c->backend, key,
          c->device_copy_gbps, c->h2d_gbps, c->d2h_gbps, c->fma_gflops, c->launch_us,
          c->copy_latency_us);
  plm__c_numbers_end(was);
  fclose(f);
}

/* ---- measuring ----------------------------------------------------------------------- */

typedef struct probe {
  plm_context *ctx;
  plm_stream *stream;
  plm_event *start, *end;
} probe;

/* Milliseconds of device time that enqueue(state) takes on the probe's stream. */
static plm_status time_once(probe *p, plm_status (*enqueue)(probe *, void *), void *state,
                            double *ms) {
  plm_status status = plm_event_record(p->start, p->stream);
  if (status == PLM_OK) status = enqueue(p, state);
  if (status == PLM_OK) status = plm_event_record(p->end, p->stream);
  if (status == PLM_OK) status = plm_event_synchronize(p->end);
  float elapsed = 0.0f;
  if (status == PLM_OK) status = plm_event_elapsed_ms(p->start, p->end, &elapsed);
  *ms = elapsed;
  return status;
}

/* The shortest of a warm-up and TIMED_RUNS timed runs. */
static plm_status best_ms(probe *p, plm_status (*enqueue)(probe *, void *), void *state,
                          double *best) {
  double ms = 0.0;
  plm_status status = time_once(p, enqueue, state, &ms);
  *best = 0.0;
  for (int run = 0; status == PLM_OK && run < TIMED_RUNS; run++) {
    status = time_once(p, enqueue, state, &ms);
    if (status == PLM_OK && ms > 0.0 && (*best == 0.0 || ms < *best)) *best = ms;
  }
  return status;
}

typedef struct copy_job {
  void *dst;
  const void *src;
  plm_copy_kind kind;
  size_t bytes;
} copy_job;

static plm_status enqueue_copy(probe *p, void *state) {
  const copy_job *job = state;
  return plm_stream_memcpy(p->stream, job->dst, job->src, job->bytes, job->kind);
}

static void fma_peak_task(const void *args) {
  plm__fma_peak_cpu(args);
}

static plm_status enqueue_fma(probe *p, void *state) {
  const plm__fma_peak_args *args = state;
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(p->stream)) {
    plm_status status;
    PLM__OP_ON_DEVICE(p->stream, "fma_peak", status, plm__fma_peak_cuda(p->stream->handle, args));
    return status;
  }
#endif
  return plm__op_launch_cpu(p->stream, fma_peak_task, args, sizeof *args);
}

/* GB/s of `bytes` in `ms`. */
static double gbps(double bytes, double ms) {
  return ms > 0.0 ? bytes / (ms * 1e6) : 0.0;
}

static plm_status measure(probe *p, const plm_device_info *info, plm_profile_calibration *c) {
  const bool on_gpu = info->backend == PLM_BACKEND_CUDA, emulated = plm__profile_emulated(info);
  const size_t COPY_BYTES = emulated ? (size_t)4 << 20 : on_gpu ? (size_t)256 << 20 : (size_t)64 << 20;
  void *device_a = NULL, *device_b = NULL, *pinned = NULL, *lanes_out = NULL;
  plm_status status = plm_device_alloc(p->ctx, COPY_BYTES, &device_a);
  if (status == PLM_OK) status = plm_device_alloc(p->ctx, COPY_BYTES, &device_b);
  if (status == PLM_OK) status = plm_host_alloc(p->ctx, COPY_BYTES, &pinned);
  if (status == PLM_OK) status = plm_stream_memset(p->stream, device_a, 1, COPY_BYTES);
  if (status == PLM_OK) memset(pinned, 1, COPY_BYTES);

  double ms = 0.0;
  copy_job d2d = {device_b, device_a, PLM_COPY_DEVICE_TO_DEVICE, COPY_BYTES};
  copy_job h2d = {device_a, pinned, PLM_COPY_HOST_TO_DEVICE, COPY_BYTES};
  copy_job d2h = {pinned, device_b, PLM_COPY_DEVICE_TO_HOST, COPY_BYTES};
  if (status == PLM_OK && (status = best_ms(p, enqueue_copy, &d2d, &ms)) == PLM_OK)
    c->device_copy_gbps = gbps(2.0 * COPY_BYTES, ms);
  if (status == PLM_OK && (status = best_ms(p, enqueue_copy, &h2d, &ms)) == PLM_OK)
    c->h2d_gbps = gbps(COPY_BYTES, ms);
  if (status == PLM_OK && (status = best_ms(p, enqueue_copy, &d2h, &ms)) == PLM_OK)
    c->d2h_gbps = gbps(COPY_BYTES, ms);

  /* GPU: 2048 threads per SM, 16384 steps (about 70 GFLOP: milliseconds on an H100, so
   * that the launch and the tail do not count); the emulator: a warp per SM, 256 steps;
   * CPU: 64 blocks of vector lanes, a few per core. */
  const int64_t units = info->multiprocessors > 0 ? info->multiprocessors : 1;
  plm__fma_peak_args fma = {.lanes = emulated ? units * 32 : on_gpu ? units * 2048 : 1024,
                            .iterations = emulated ? 256 : 16384};
  if (status == PLM_OK)
    status = plm_device_alloc(p->ctx, (size_t)fma.lanes * sizeof(float), &lanes_out);
  fma.out = lanes_out;
  if (status == PLM_OK && (status = best_ms(p, enqueue_fma, &fma, &ms)) == PLM_OK)
    c->fma_gflops = ms > 0.0 ? plm__fma_peak_flops(&fma) / (ms * 1e6) : 0.0;
  /* The floors: the probe on one lane for one step (a launch and nothing), a copy of 256
   * bytes. */
  plm__fma_peak_args tiny = {.lanes = 1, .iterations = 1, .out = lanes_out};
  copy_job small = {device_a, pinned, PLM_COPY_HOST_TO_DEVICE, 256};
  if (status == PLM_OK && (status = best_ms(p, enqueue_fma, &tiny, &ms)) == PLM_OK)
    c->launch_us = ms * 1e3;
  if (status == PLM_OK && (status = best_ms(p, enqueue_copy, &small, &ms)) == PLM_OK)
    c->copy_latency_us = ms * 1e3;

  plm_status synced = plm_stream_synchronize(p->stream);
  if (status == PLM_OK) status = synced;
  if (lanes_out) plm_device_free(p->ctx, lanes_out);
  if (pinned) plm_host_free(p->ctx, pinned);
  if (device_b) plm_device_free(p->ctx, device_b);
  if (device_a) plm_device_free(p->ctx, device_a);
  return status;
}

bool plm__profile_emulated(const plm_device_info *info) {
  return info->backend == PLM_BACKEND_CUDA && plm_build_info_get()->cuda_emulated;
}

double plm__profile_model_ms(const plm_op_cost *cost, const plm_profile_calibration *c) {
  const double memory = cost->bytes / (c->device_copy_gbps * 1e6);
  const double compute = cost->flops / (c->fma_gflops * 1e6);
  return (memory > compute ? memory : compute) + c->launch_us * 1e-3;
}

plm_status plm__profile_calibrate(plm_context *ctx, plm_profile_calibration *out) {
  plm_device_info info;
  plm_status status = plm_context_device_info(ctx, &info);
  if (status != PLM_OK) return status;
  plm_profile_calibration c = {0};
  snprintf(c.backend, sizeof c.backend, "%s", plm_backend_name(info.backend));
  memcpy(c.device, info.name, sizeof c.device); /* the same size */
  c.device[sizeof c.device - 1] = '\0';
  tidy_name(c.device);
  c.emulated = plm__profile_emulated(&info);
  char key[KEY_SIZE];
  snprintf(key, sizeof key, "%.255s|%d", c.device, info.multiprocessors);
  if (recall(c.backend, key, out)) return PLM_OK;
  if (cache_load(c.backend, key, c.device, c.emulated, out)) {
    remember(out, key);
    return PLM_OK;
  }

  probe p = {.ctx = ctx};
  status = plm_stream_create(ctx, 0, &p.stream);
  if (status == PLM_OK) status = plm_event_create(ctx, 0, &p.start);
  if (status == PLM_OK) status = plm_event_create(ctx, 0, &p.end);
  if (status == PLM_OK) status = measure(&p, &info, &c);
  if (p.end) plm_event_destroy(p.end);
  if (p.start) plm_event_destroy(p.start);
  if (p.stream) plm_stream_destroy(p.stream);
  if (status != PLM_OK) return status;
  remember(&c, key);
  cache_store(&c, key);
  *out = c;
  return PLM_OK;
}

/* benchmarks/bench_pool_steady_state.c: the steady_state workload and the profiled pass of
 * --profile (the header of bench_pool.c says what it does). */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "bench_pool_shared.h"

/* ---- workload: steady_state ---------------------------------------------------------- */

/* The device buffers of one frame of a 512x512 conv -> entropy -> segmentation
 * pipeline, in the order a straightforward implementation allocates and frees them:
 * a positive entry allocates buffer k, a negative one frees it. */
typedef struct frame_buffer {
  const char *name;
  size_t bytes;
} frame_buffer;

static const frame_buffer frame_buffers[] = {
    {"input u16 512x512", 512 * 512 * 2},
    {"conv padded tile f32 516x516", 516 * 516 * 4},
    {"conv kernel f32 5x5", 5 * 5 * 4},
    {"conv out f32", 512 * 512 * 4},
    {"quantised u8", 512 * 512},
    {"entropy histograms u16 512x256", 512 * 256 * 2},
    {"entropy f32", 512 * 512 * 4},
    {"global histogram u32 256", 256 * 4},
    {"threshold f32", 4},
    {"mask u8", 512 * 512},
    {"labels i32", 512 * 512 * 4},
    {"union-find equivalences i32 16384", 16384 * 4},
    {"region table 1024 x 64 B", 64 * KIB},
    {"region count u32", 4},
    {"detections 256 x 16 B", 4 * KIB},
};
enum { FRAME_BUFFERS = sizeof frame_buffers / sizeof frame_buffers[0] };

/* Buffer k is entry k - 1 of frame_buffers; +k allocates it, -k frees it. */
static const int frame_script[] = {+1,  +3,  +2,  +4,  -2,  -3,  -1, /* upload, conv */
                                   +5,  +6,  +7,  -6,  -5,  -4,  /* quantise, windowed entropy */
                                   +8,  +9,  +10, -8,  -9,  -7,  /* histogram, threshold, mask */
                                   +11, +12, -12, -10,           /* connected components */
                                   +13, +14, +15, -11, -13, -14, /* regions, detections */
                                   -15};
enum { FRAME_STEPS = sizeof frame_script / sizeof frame_script[0] };

/* Step `step` of frame_script: allocate or free its buffer. ptr holds the buffers; a
 * freed one becomes NULL. */
static inline plm_status frame_step(allocator *a, plm_stream *stream, int step, void **ptr) {
  int k = abs(frame_script[step]) - 1;
  if (frame_script[step] > 0) return allocator_alloc(a, frame_buffers[k].bytes, stream, &ptr[k]);
  plm_status status = allocator_free(a, ptr[k], stream);
  if (status == PLM_OK) ptr[k] = NULL;
  return status;
}

/* The step of frame_script after which the most bytes are live: a frame's peak. */
static int frame_peak_step(void) {
  size_t live = 0, most = 0;
  int peak = 0;
  for (int step = 0; step < FRAME_STEPS; step++) {
    int k = abs(frame_script[step]) - 1;
    live = frame_script[step] > 0 ? live + frame_buffers[k].bytes : live - frame_buffers[k].bytes;
    if (live > most) {
      most = live;
      peak = step;
    }
  }
  return peak;
}

static bool steady_state_run(bench_env *env, const pool_case *c, bench_mode mode, result *r) {
  const size_t frames = c->n;
  char where[96];
  snprintf(where, sizeof where, "steady_state (%s, %zu frames)", mode_names[mode], frames);
  r->workload = "steady_state";
  r->mode = mode;
  r->n = frames;
  for (int k = 0; k < FRAME_BUFFERS; k++)
    if (frame_buffers[k].bytes > r->max_size) r->max_size = frame_buffers[k].bytes;

  allocator a;
  if (!allocator_open(env->ctx, mode, 0, &a)) return false;
  samples pairs;
  if (!samples_reserve(&pairs, frames * FRAME_BUFFERS)) {
    allocator_close(&a, where);
    return false;
  }
  void *ptr[FRAME_BUFFERS] = {0};
  uint64_t alloc_ns[FRAME_BUFFERS] = {0};
  const int peak_step = frame_peak_step();
  plm_pool_stats warm = {0};
  bool has_warm = false, ok = true;
  uint64_t allocs = 0;
  uint64_t start = plm__monotonic_ns();
  for (size_t frame = 0; ok && frame < frames; frame++) {
    for (int step = 0; step < FRAME_STEPS; step++) {
      int k = abs(frame_script[step]) - 1;
      uint64_t t0 = plm__monotonic_ns();
      plm_status status = frame_step(&a, env->stream1, step, ptr);
      uint64_t t1 = plm__monotonic_ns();
      if (status != PLM_OK) {
        char call[160];
        snprintf(call, sizeof call, "%s(%s, %zu bytes) in frame %zu",
                 frame_script[step] > 0 ? "alloc" : "free", frame_buffers[k].name,
                 frame_buffers[k].bytes, frame);
        ok = bench_fail_call(where, call, status);
        break;
      }
      if (frame_script[step] > 0) {
        alloc_ns[k] = elapsed(t0, t1);
        allocs++;
      } else {
        samples_push(&pairs, alloc_ns[k] + elapsed(t0, t1));
      }
      if (frame + 1 == frames && step == peak_step)
        start += keep_snapshot(env, &a, r, "the last frame at its peak");
    }
    if (frame + 1 == STEADY_WARMUP_FRAMES) has_warm = allocator_stats(&a, &warm);
  }
  r->wall_s = (double)(plm__monotonic_ns() - start) * 1e-9;
  for (int k = 0; k < FRAME_BUFFERS; k++)
    if (ptr[k]) allocator_free(&a, ptr[k], env->stream1);
  if (ok) {
    summarize(r, &pairs);
    finish_stats(r, &a, where, allocs);
    if (r->has_stats && has_warm) {
      r->has_after_warmup = true;
      r->upstream_after_warmup = r->stats.upstream_allocs - warm.upstream_allocs;
    }
  }
  samples_release(&pairs);
  return allocator_close(&a, where) && ok;
}

static size_t steady_state_plan(const pool_workload *self, run_size size, pool_case *cases) {
  size_t frames = size == RUN_FULL ? 10000 : size == RUN_QUICK ? 2000 : 30;
  cases[0] = (pool_case){self, 0, frames, 0, false};
  return 1;
}

static void steady_state_trace_name(const pool_case *c, char *out, size_t size) {
  snprintf(out, size, "frames%zu", c->n);
}

static void steady_state_trace_header(const bench_env *env, const pool_case *c, FILE *out) {
  (void)env;
  fprintf(out, "# workload steady_state frames %zu\n", c->n);
}

const pool_workload steady_state_workload = {.name = "steady_state",
                                             .plan = steady_state_plan,
                                             .run = steady_state_run,
                                             .trace_name = steady_state_trace_name,
                                             .trace_header = steady_state_trace_header};

/* ---- the profiled pass (--profile) ---------------------------------------------------- */

bool steady_state_profile(bench_env *env, size_t frames) {
  bench_mode modes[3];
  run_modes(env, modes);
  for (int m = 0; m < 3; m++) {
    char name[PLM_PROFILE_NAME_SIZE], where[64];
    snprintf(name, sizeof name, "%s alloc+free", mode_names[modes[m]]);
    snprintf(where, sizeof where, "profile (%s)", mode_names[modes[m]]);
    allocator a;
    if (!allocator_open(env->ctx, modes[m], 0, &a)) return false;
    void *ptr[FRAME_BUFFERS] = {0};
    plm_status status = PLM_OK;
    for (size_t frame = 0; status == PLM_OK && frame < frames; frame++) {
      plm_profile_mark mark;
      status = plm_profiler_begin(env->profiler, env->stream1, name, (int64_t)frame, NULL, &mark);
      for (int step = 0; status == PLM_OK && step < FRAME_STEPS; step++)
        status = frame_step(&a, env->stream1, step, ptr);
      if (status == PLM_OK) status = plm_profiler_end(env->profiler, env->stream1, &mark);
    }
    if (status != PLM_OK) bench_fail_call(where, "a profiled steady_state frame", status);
    /* After an error, give back what is still live so the pool can be destroyed. */
    for (int k = 0; k < FRAME_BUFFERS; k++)
      if (ptr[k]) allocator_free(&a, ptr[k], env->stream1);
    plm_stream_synchronize(env->stream1);
    if (!allocator_close(&a, where) || status != PLM_OK) return false;
  }
  return true;
}

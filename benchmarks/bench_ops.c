/* benchmarks/bench_ops.c: benchmark of plume's image operations.
 *
 *   bench_ops [--quick | --smoke] [--backend host|cuda|auto] [--json PATH] [--op NAME]
 *             [--profile DIR] [--size N] [--emulated-cost PATH [--emulated-device NAME]]
 *   bench_ops --validate-json PATH
 *   bench_ops --list-ops
 *
 * Each operation of the table `ops` below runs at its seed size (the size of the
 * issue's per-frame budget, measured on an RTX 4090), at 512x512 (the product's frame)
 * for an image op seeded at another size, and at 2048x2048 and 4096x4096 (--quick
 * drops 4096x4096; --smoke runs 64x64 only). Inputs are pseudo-random
 * (fixed seed), uploaded once with plm_stream_memcpy into tensors from the context's
 * default pool; outputs are allocated once per size.
 *
 *   conv2d     f32 (H, W) with a 3x3 f32 kernel, pad 1, REFLECT101 ("same" size)
 *   conv2d_9x9 f32 (H, W) with the default preset's 9x9 LoG (log:9:1.5), pad 4, REPLICATE:
 *              a large kernel, bound by its sums rather than its bytes
 *   sobel      u8 (H, W), magnitude only (gx and gy NULL)
 *   entropy    u8 (H, W), window 16, every value its own bin
 *   threshold  f32 (H, W) > 0.5 to u8 (the segmentation step)
 *   cfar       f32 (H, W), window 15, guard 5, k 5, the u8 mask
 *   nuc        u8 (H, W) with an f32 (H, W) gain and offset, f32 out
 *   badpixel   f32 (H, W) with a u8 (H, W) map flagging 1 pixel in 16 at random, f32 out
 *   abs_diff   f32 (H, W) against an f32 (H, W) reference frame, f32 out
 *   scale_offset u8 (H, W) * 0.25 + 10 (a linear calibration), f32 out
 *   background f32 (H, W) against a carried f32 (H, W) state, ema alpha 0.05, f32 out
 *   label      u8 (H, W) mask, half of it foreground at random (many small components),
 *              8-connectivity
 *   segment    f32 (H, W) > 0.5, label's components and a region table of H W / 16 rows
 *              (regions itself runs inside it: it reads label's labels and count)
 *   fused      f32 (H, W): plm_sobel_entropy_threshold, Sobel magnitude -> entropy
 *              (window 16, 64 bins over the fixed range [0, 4)) -> > 5 bits, one op
 *   unfused    the same input and parameters through plm_sobel, plm_entropy and
 *              plm_threshold one after another (intermediates allocated once)
 *   matmul     f32 (n, n) x (n, n) + bias, ReLU, fp32 (CUDA cores on cuda); size = n
 *   lstm_cell  one torch.nn.LSTMCell step, input 64, hidden 128; size = the batch
 *   dendritic  10 neurons x 8 dendrites x 16 inputs, NMDA; size = the batch
 *   vector_add f32 (n, n) a + b; n = 316 is the seeds' 100k elements
 *   dot        n rows of n f32, one f64 sum per row; n = 316 as vector_add
 *   ar_forecast  `size` series of 1000 points, AR(5) fitted, 10 steps ahead: the seeds'
 *              one series, then 10,000 and (full runs) 100,000
 *   ar_forecast_p16  the same at AR(16) (CUDA: the scratch kernel, its working doubles
 *              in global memory): 64 series, then 1000 and (full runs) 10,000
 *   cublas_sgemm  on cuda, cuBLAS's SGEMM on matmul's n^3 (no bias or activation), on the
 *              same stream (plm_stream_native_handle), the peer matmul is measured
 *              against; libcublas is loaded at run time, and the row is skipped, with the
 *              reason, on host or where it is missing (--op matmul runs it too)
 * (for these the sizes are the seed's, 2048 and 4096 of their scale: matmul up to
 * 4096^3, batches up to 4096; the table's Mel/s counts output elements, GFLOP/s the
 * cost model's flops).
 *
 * Fusion. After the table (unless --op chose another operation), the fused op and
 * the chain again, on one input per size (512x512, 2048x2048; full runs 4096x4096,
 * --smoke 64x64), timed in alternating pairs after warm-ups of both (20 pairs;
 * --smoke 3), so that a change of the machine's load between pairs hits both halves
 * of a pair: the medians of each, and the median over the pairs of unfused / fused,
 * the speedup fusion buys (JSON: "fusion"). The cost models differ: the fused op's
 * bytes are the input and the mask only, the chain's every intermediate too.
 *
 * Timing. 3 warm-up runs, then 20 timed runs (--smoke: 1 and 3). Each run is
 * bracketed by plm_event_record on the stream before and after the operation, the
 * host waits for the second event and plm_event_elapsed_ms gives the time: device
 * time on cuda, the host stream's execution time on host. Reported: mean, sample
 * standard deviation, min, max, CV (stddev / mean), Mel/s (output elements, pixels for
 * an image, / mean), GB/s and GFLOP/s (the operation's plm_<op>_cost bytes and flops /
 * mean).
 *
 * Floor. The larger of bytes / peak bandwidth (the memory floor) and flops / peak f32
 * FMA rate (the compute floor), from the op's cost model; `bound` says which ("mem" or
 * "fma"). The bandwidth: on cuda plm_device_info's memory_bandwidth_gbps; on host
 * measured once, a 64 MiB device-to-device plm_stream_memcpy (read plus written, 128
 * MiB moved) timed with events, the median of 5 after one warm-up. The FMA rate: the
 * profiler's calibration of the device (plume/profile.h: the FMA probe, measured once
 * and cached per machine); when it is unknown the floor is the memory one alone.
 * of_floor = mean / floor (>= 1; 1 is the floor).
 *
 * The sobel cost model (plm_sobel_cost) counts all three f32 outputs; with the
 * magnitude alone two of them are not written, so 8 bytes per pixel are taken off.
 *
 * Profile (--profile DIR). After each operation's timed runs at a size, the same
 * number of runs again, each recorded with plm_profiler_begin / plm_profiler_end around
 * the enqueue (name "<op> <H>x<W>", frame = the run's index, cost = the op's cost as
 * above), the host waiting after each as in the timed runs; the table's figures come
 * from the unprofiled runs alone. The fusion pairs are not recorded again (the table's
 * fused and unfused runs are); their medians are the report's A/B bars. At the end
 * plm_profiler_write writes DIR/profile.json, DIR/trace.json and DIR/report.html.
 * DIR is created (with its parents) before anything runs.
 *
 * Size (--size N). Every image op at N x N alone (the others at their seed size); with
 * --smoke, N x N with the smoke's few runs.
 *
 * Emulated cost (--emulated-cost PATH; the cuda backend of a -DPLUME_CUDA=EMU build only).
 * After each operation's timed runs at a size, one more run inside a section of the CUDA
 * emulator's counters (emu/count/emu_count.h) named "<op> <size>", the host waiting for
 * it; at the end the emulator's report of every section, its memory traffic per kernel
 * and the estimate for an H100 SXM (--emulated-device H200: an H200) with the bound that
 * wins and the floor (distinct bytes
 * over DRAM bandwidth), is printed after the table and written to PATH as JSON. It is an
 * estimate from counts, never a measurement (emu/README.md, "Counted cost"); the table's
 * times on the emulator mean nothing.
 *
 * On a terminal a progress bar on stderr counts the cases (operation x size, then the
 * fusion sizes).
 *
 * The rows follow the op table (ops/op_desc.h): each op's workload, then the ones beside
 * it (unfused after fused, cuBLAS after matmul); every op of the table has a workload in
 * `ops` or a reason in `unmeasured`, or the run fails. A workload of a table op only
 * makes its inputs and parameters: its outputs come from the op's shapes, its cost from
 * the op's model, and it runs through the op's dispatch (plm__op_call_public), as
 * plm_<op> does. Adding an operation is one entry in `ops` and its setup function.
 * The benchmark never fails on timing. Exit codes: 0 success, 1 a runtime failure
 * (an API call failed, the JSON could not be written), 2 bad usage.
 */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "cublas_loader.h"
#include "ops/op_desc.h"
#include "pipeline/parse.h"
#include "plume/plume.h"
#include "plume/pool.h"
#include "support/progress.h"
#include "support/result_check.h"
#include "support/splitmix64.h"
#if PLUME_EMU_COUNT
#include "emu/count/emu_count.h"
#endif

/* ---- options ------------------------------------------------------------------ */

typedef struct options {
  run_size size;
  plm_backend backend;
  const char *json_path;   /* NULL: no JSON */
  const char *only_op;     /* NULL: all */
  const char *profile_dir; /* NULL: no profile */
  int64_t size_only;       /* --size N: image ops at N x N alone; 0: the usual sizes */
  const char *emulated_cost; /* --emulated-cost PATH: NULL: none */
  const char *emulated_device; /* --emulated-device NAME: NULL: H100 */
} options;

static const char usage[] =
    "usage: bench_ops [--quick | --smoke] [--backend host|cuda|auto] [--json PATH]\n"
    "                 [--op NAME] [--profile DIR] [--size N]\n"
    "                 [--emulated-cost PATH [--emulated-device H100|H200]]\n"
    "       bench_ops --validate-json PATH\n"
    "\n"
    "Benchmark of plume's operations at the issue's seed sizes and at 2048x2048 and\n"
    "4096x4096: event-timed runs, Mpix/s, GB/s and the bandwidth floor. Prints a\n"
    "table (with the seed budgets) and writes JSON.\n";

/* ---- errors --------------------------------------------------------------------- */

static char bench_error[2048];

/* Record why the run stops; always returns false so callers can `return fail(...)`. */
static bool fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(bench_error, sizeof bench_error, fmt, ap);
  va_end(ap);
  return false;
}

static bool fail_call(const char *where, const char *call, plm_status status) {
  return fail("%s: %s -> %s: %s", where, call, plm_status_str(status), plm_last_error());
}

#define CALL(where, expr)                                                     \
  do {                                                                        \
    plm_status call_status_ = (expr);                                         \
    if (call_status_ != PLM_OK) return fail_call(where, #expr, call_status_); \
  } while (0)

/* ---- environment ----------------------------------------------------------------- */

typedef struct bench_env {
  options opt;
  plm_context *ctx;
  plm_backend backend;
  plm_device_info info;
  plm_pool *pool;
  plm_stream *stream;
  plm_event *start, *end;
  double peak_gbps;        /* for the memory floor */
  const char *peak_source; /* "device_info" or "measured_copy" */
  double peak_gflops;      /* for the compute floor: the calibrated FMA rate; 0: unknown */
  plm_profiler *profiler;  /* with --profile */
  progress bar;            /* the cases done, on a terminal */
  int64_t cases_done;
} bench_env;

/* Time one enqueue (fn) on the stream with a pair of events, in microseconds. */
typedef bool (*enqueue_fn)(bench_env *env, void *state);

static bool time_once(bench_env *env, enqueue_fn fn, void *state, double *us) {
  CALL("timing", plm_event_record(env->start, env->stream));
  if (!fn(env, state)) return false;
  CALL("timing", plm_event_record(env->end, env->stream));
  CALL("timing", plm_event_synchronize(env->end));
  float ms = 0;
  CALL("timing", plm_event_elapsed_ms(env->start, env->end, &ms));
  *us = (double)ms * 1000.0;
  return true;
}

/* ---- pseudo-random inputs (splitmix64, support/splitmix64.h, fixed seed) --------------- */

static uint64_t rng_state = 20240611;

/* A (H, W) tensor of dtype from the default pool, filled with random values (u8:
 * 0..255; f32: [0, 1)). */
/* A tensor of ndim dims, filled with pseudo-random values: u8 over 0..255, f32 in [0, 1). */
static bool random_tensor_nd(bench_env *env, plm_dtype dtype, int ndim, const int64_t *dims,
                             plm_tensor *out) {
  CALL("setup", plm_tensor_alloc(env->pool, env->stream, dtype, ndim, dims, out));
  size_t count = 1;
  for (int d = 0; d < ndim; d++) count *= (size_t)dims[d];
  size_t bytes = count * plm_dtype_size(dtype);
  void *host = malloc(bytes);
  if (!host) return fail("out of host memory for a %zu-byte input", bytes);
  for (size_t i = 0; i < count; i++) {
    uint64_t r = splitmix64_next(&rng_state);
    if (dtype == PLM_DTYPE_U8)
      ((uint8_t *)host)[i] = (uint8_t)(r >> 56);
    else
      ((float *)host)[i] = (float)((double)(r >> 40) / (double)(UINT64_C(1) << 24));
  }
  plm_status status =
      plm_stream_memcpy(env->stream, out->data, host, bytes, PLM_COPY_HOST_TO_DEVICE);
  if (status == PLM_OK) status = plm_stream_synchronize(env->stream);
  free(host);
  if (status != PLM_OK) return fail_call("setup", "plm_stream_memcpy (input)", status);
  return true;
}

static bool random_tensor(bench_env *env, plm_dtype dtype, int64_t h, int64_t w, plm_tensor *out) {
  const int64_t dims[2] = {h, w};
  return random_tensor_nd(env, dtype, 2, dims, out);
}

static bool output_tensor(bench_env *env, const plm_shape *shape, plm_tensor *out) {
  CALL("setup",
       plm_tensor_alloc(env->pool, env->stream, shape->dtype, shape->ndim, shape->dims, out));
  return true;
}

/* ---- operations ----------------------------------------------------------------------- */

/* What one workload needs at one size: the tensors it made (inputs, outputs, the unfused
 * chain's intermediates, further operands), and for an op of the table its descriptor and
 * call (ops/op_desc.h), run through the op's one dispatch path; its cost. */
typedef struct op_state {
  const plm__op_desc *op; /* NULL: a workload outside the table (the chain, cuBLAS) */
  plm__op_params params;
  plm__op_call call;
  plm_tensor in, in2, out, mid[2];
  bool has_in, has_in2, has_out;
  int mid_count;
  plm_sobel_entropy_threshold_params fused; /* the unfused chain's three ops' */
  plm_tensor extra[8];                      /* further operands and outputs */
  int extra_count;
  plm_op_cost cost;
} op_state;

/* One more random f32 operand of the given dims, kept in s->extra. */
static plm_tensor *extra_operand(bench_env *env, op_state *s, int ndim, int64_t d0, int64_t d1,
                                 int64_t d2) {
  const int64_t dims[3] = {d0, d1, d2};
  plm_tensor *t = &s->extra[s->extra_count];
  if (!random_tensor_nd(env, PLM_DTYPE_F32, ndim, dims, t)) return NULL;
  s->extra_count++;
  return t;
}

/* A table op's call once its setup has set the inputs and the params: the outputs made
 * from the op's shapes (`want`: a mask of the output slots; 0: all), its cost from the
 * op's model on exactly those outputs (sobel's magnitude alone writes a third of its
 * model's outputs). */
static bool finish_call(bench_env *env, op_state *s, unsigned want) {
  const plm__op_desc *op = s->op;
  s->call.params = &s->params;
  plm_shape shapes[PLM__OP_MAX_OUT];
  CALL(op->name, plm__op_shapes(op, &s->call, shapes, NULL));
  for (int k = 0; k < op->output_count; k++) {
    if (want && !(want & (1u << k))) continue;
    plm_tensor *t = s->has_out ? &s->extra[s->extra_count++] : &s->out;
    if (!output_tensor(env, &shapes[k], t)) return false;
    s->has_out = true;
    s->call.out[k] = t;
  }
  CALL(op->name, plm__op_cost(op, &s->call, &s->cost));
  return true;
}

/* Every table op runs here: its public path (checks, scratch from the pool, kernel). */
static bool table_op_run(bench_env *env, void *state) {
  op_state *s = state;
  CALL(s->op->name, plm__op_call_public(s->op, env->stream, &s->call));
  return true;
}

/* conv2d of an f32 (H, W) input with kh x kw f32 taps, "same" size (pad kh / 2, kw / 2). */
static bool conv2d_setup_with(bench_env *env, int64_t h, int64_t w, const float *taps, int kh,
                              int kw, plm_border border, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_F32, h, w, &s->in)) return false;
  s->has_in = true;
  int64_t kdims[2] = {kh, kw};
  CALL("conv2d setup", plm_tensor_alloc(env->pool, env->stream, PLM_DTYPE_F32, 2, kdims, &s->in2));
  s->has_in2 = true;
  CALL("conv2d setup",
       plm_stream_memcpy(env->stream, s->in2.data, taps, (size_t)kh * (size_t)kw * sizeof *taps,
                         PLM_COPY_HOST_TO_DEVICE));
  CALL("conv2d setup", plm_stream_synchronize(env->stream));
  s->params.conv2d = plm_conv2d_params_default();
  s->params.conv2d.pad_y = kh / 2;
  s->params.conv2d.pad_x = kw / 2;
  s->params.conv2d.border = border;
  s->call = (plm__op_call){.in = {&s->in, &s->in2}};
  return finish_call(env, s, 0);
}

/* conv2d: f32 (H, W) with a 3x3 f32 kernel, pad 1, reflect101: "same" size. */
static bool conv2d_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  static const float taps[9] = {1 / 16.f, 2 / 16.f, 1 / 16.f, 2 / 16.f, 4 / 16.f,
                                2 / 16.f, 1 / 16.f, 2 / 16.f, 1 / 16.f};
  return conv2d_setup_with(env, h, w, taps, 3, 3, PLM_BORDER_REFLECT101, s);
}

/* The default preset's filter (PLM_PRESET_DEFAULT_PIPELINE: kernel=log:9:1.5 pad=same
 * border=replicate), a large kernel. */
static const char PRESET_LOG_KERNEL[] = "log:9:1.5";

/* conv2d_9x9: f32 (H, W) with the preset's 9x9 LoG, "same" size, replicate. */
static bool conv2d_log_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  float *taps = NULL;
  int kh = 0, kw = 0;
  CALL("conv2d_9x9 setup", plm__parse_kernel(PRESET_LOG_KERNEL, NULL, &taps, &kh, &kw));
  const bool made = conv2d_setup_with(env, h, w, taps, kh, kw, PLM_BORDER_REPLICATE, s);
  free(taps);
  return made;
}

/* sobel: u8 (H, W), the magnitude only (gx and gy not made). */
static bool sobel_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_U8, h, w, &s->in)) return false;
  s->has_in = true;
  s->params.sobel = plm_sobel_params_default();
  s->call = (plm__op_call){.in = {&s->in}};
  return finish_call(env, s, 1u << 2);
}

/* entropy: u8 (H, W), window 16, every value its own bin. */
static bool entropy_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_U8, h, w, &s->in)) return false;
  s->has_in = true;
  s->params.entropy = (plm_entropy_params){.window = 16, .bins = 0};
  s->call = (plm__op_call){.in = {&s->in}};
  return finish_call(env, s, 0);
}

/* cfar: f32 (H, W), the default window 15, guard 5, k 5, the u8 mask. */
static bool cfar_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_F32, h, w, &s->in)) return false;
  s->has_in = true;
  s->params.cfar = plm_cfar_params_default();
  s->call = (plm__op_call){.in = {&s->in}};
  return finish_call(env, s, 0);
}

/* nuc: u8 (H, W) (the generator makes u8 or f32 frames), f32 (H, W) gain and offset. */
static bool nuc_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_U8, h, w, &s->in)) return false;
  s->has_in = true;
  plm_tensor *gain = extra_operand(env, s, 2, h, w, 0);
  plm_tensor *offset = gain ? extra_operand(env, s, 2, h, w, 0) : NULL;
  if (!offset) return false;
  s->call = (plm__op_call){.in = {&s->in, gain, offset}};
  return finish_call(env, s, 0);
}

/* abs_diff: f32 (H, W) against an f32 (H, W) reference frame. */
static bool abs_diff_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_F32, h, w, &s->in)) return false;
  s->has_in = true;
  plm_tensor *ref = extra_operand(env, s, 2, h, w, 0);
  if (!ref) return false;
  s->call = (plm__op_call){.in = {&s->in, ref}};
  return finish_call(env, s, 0);
}

/* scale_offset: u8 (H, W) (the generator makes u8 or f32 frames) * 0.25 + 10. */
static bool scale_offset_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_U8, h, w, &s->in)) return false;
  s->has_in = true;
  s->params.scale_offset = (plm_scale_offset_params){.scale = 0.25f, .offset = 10.0f};
  s->call = (plm__op_call){.in = {&s->in}};
  return finish_call(env, s, 0);
}

/* background: f32 (H, W) frames against a carried f32 (H, W) state (random values: the
 * steady state's arithmetic, every call continuing it), ema alpha 0.05. */
static bool background_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_F32, h, w, &s->in)) return false;
  s->has_in = true;
  plm_tensor *state = extra_operand(env, s, 2, h, w, 0);
  if (!state) return false;
  s->params.background = plm_background_params_default();
  s->call = (plm__op_call){.in = {&s->in}, .state = state, .state_fresh = false};
  return finish_call(env, s, 0);
}

/* threshold: f32 (H, W) > 0.5 to u8, the segmentation step. */
static bool threshold_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_F32, h, w, &s->in)) return false;
  s->has_in = true;
  s->params.threshold = (plm_threshold_params){.value = 0.5, .compare = PLM_COMPARE_GT};
  s->call = (plm__op_call){.in = {&s->in}};
  return finish_call(env, s, 0);
}

/* A u8 (H, W) mask of the random bytes above `above`: at 127.5 each pixel is foreground
 * with probability 1/2, many small components, label's hard case (a mostly full mask is
 * one component). */
static bool mask_tensor(bench_env *env, int64_t h, int64_t w, double above, plm_tensor *out) {
  if (!random_tensor(env, PLM_DTYPE_U8, h, w, out)) return false;
  const plm_threshold_params cut = {.value = above, .compare = PLM_COMPARE_GT};
  CALL("mask setup", plm_threshold(env->stream, out, &cut, out)); /* in place, u8 */
  CALL("mask setup", plm_stream_synchronize(env->stream));
  return true;
}

/* label: that mask, 8-connectivity, labels and the count. */
static bool label_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!mask_tensor(env, h, w, 127.5, &s->in)) return false;
  s->has_in = true;
  s->params.label = plm_label_params_default();
  s->call = (plm__op_call){.in = {&s->in}};
  return finish_call(env, s, 0);
}

/* badpixel: f32 (H, W), a u8 (H, W) map flagging the 1 in 16 of random bytes above 239. */
static bool badpixel_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_F32, h, w, &s->in)) return false;
  s->has_in = true;
  plm_tensor *bad = &s->extra[s->extra_count];
  if (!mask_tensor(env, h, w, 239.5, bad)) return false;
  s->extra_count++;
  s->call = (plm__op_call){.in = {&s->in, bad}};
  return finish_call(env, s, 0);
}

/* segment: f32 (H, W) > 0.5, labels, count and a table of H W / 16 rows (about the
 * regions such a frame holds; the cost model counts every row of the table). */
static bool segment_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_F32, h, w, &s->in)) return false;
  s->has_in = true;
  const int64_t rows = h * w / 16 > 64 ? h * w / 16 : 64;
  s->params.segment =
      (plm__segment_op_params){.segment = plm_segment_params_default(), .capacity = rows};
  s->params.segment.segment.value = 0.5;
  s->call = (plm__op_call){.in = {&s->in}};
  return finish_call(env, s, 0);
}

/* sobel -> entropy -> threshold: the fusion chain, on f32 frames in [0, 1),
 * whose Sobel magnitudes lie in [0, 5.7). */
static plm_sobel_entropy_threshold_params fusion_params(void) {
  return (plm_sobel_entropy_threshold_params){
      .sobel = plm_sobel_params_default(),
      .entropy = {.window = 16, .bins = 64, .range_lo = 0.0, .range_hi = 4.0},
      .threshold = {.value = 5.0, .compare = PLM_COMPARE_GT}};
}

/* fused: the chain as the one op the fusion pass makes. */
static bool fused_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  s->op = &plm__op_sobel_entropy_threshold;
  if (!random_tensor(env, PLM_DTYPE_F32, h, w, &s->in)) return false;
  s->has_in = true;
  s->params.sobel_entropy_threshold = fusion_params();
  s->call = (plm__op_call){.in = {&s->in}};
  return finish_call(env, s, 0);
}

/* unfused: the same input and parameters through the three ops one after another
 * (intermediates allocated once), each op's cost as its descriptor models it. */
static bool unfused_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_F32, h, w, &s->in)) return false;
  s->has_in = true;
  s->fused = fusion_params();
  plm_shape shape;
  CALL("unfused setup", plm_sobel_output(&s->in, &s->fused.sobel, &shape));
  for (; s->mid_count < 2; s->mid_count++)
    if (!output_tensor(env, &shape, &s->mid[s->mid_count])) return false;
  CALL("unfused setup", plm_threshold_output(&s->mid[1], &s->fused.threshold, &shape));
  if (!output_tensor(env, &shape, &s->out)) return false;
  s->has_out = true;
  const plm__op_call parts[3] = {
      {.in = {&s->in}, .out = {NULL, NULL, &s->mid[0]}, .params = &s->fused.sobel},
      {.in = {&s->mid[0]}, .out = {&s->mid[1]}, .params = &s->fused.entropy},
      {.in = {&s->mid[1]}, .out = {&s->out}, .params = &s->fused.threshold}};
  const plm__op_desc *ops3[3] = {&plm__op_sobel, &plm__op_entropy, &plm__op_threshold};
  for (int k = 0; k < 3; k++) {
    plm_op_cost part;
    CALL("unfused setup", plm__op_cost(ops3[k], &parts[k], &part));
    s->cost.bytes += part.bytes;
    s->cost.flops += part.flops;
  }
  return true;
}

static bool unfused_run(bench_env *env, void *state) {
  op_state *s = state;
  CALL("unfused", plm_sobel(env->stream, &s->in, &s->fused.sobel, NULL, NULL, &s->mid[0]));
  CALL("unfused", plm_entropy(env->stream, &s->mid[0], &s->fused.entropy, &s->mid[1]));
  CALL("unfused", plm_threshold(env->stream, &s->mid[1], &s->fused.threshold, &s->out));
  return true;
}

/* ---- the core and neuron operations: `size` is their scale (see the top) ---------------- */

/* matmul: (n, n) x (n, n) + bias (n), ReLU, fp32 on CUDA cores / the host. */
static bool matmul_setup(bench_env *env, int64_t n, int64_t unused, op_state *s) {
  (void)unused;
  if (!random_tensor(env, PLM_DTYPE_F32, n, n, &s->in) ||
      !random_tensor(env, PLM_DTYPE_F32, n, n, &s->in2))
    return false;
  s->has_in = s->has_in2 = true;
  const plm_tensor *bias = extra_operand(env, s, 1, n, 0, 0);
  if (!bias) return false;
  s->params.matmul =
      (plm_matmul_params){.precision = PLM_PRECISION_FP32, .activation = PLM_ACTIVATION_RELU};
  s->call = (plm__op_call){.in = {&s->in, &s->in2, bias}};
  return finish_call(env, s, 0);
}

/* lstm_cell: the seeds' input 64 and hidden 128, batch `batch`. */
enum { LSTM_INPUT = 64, LSTM_HIDDEN = 128 };

static bool lstm_setup(bench_env *env, int64_t batch, int64_t unused, op_state *s) {
  (void)unused;
  const int64_t b = batch, i = LSTM_INPUT, h = LSTM_HIDDEN;
  if (!random_tensor(env, PLM_DTYPE_F32, b, i, &s->in)) return false;
  s->has_in = true;
  if (!extra_operand(env, s, 2, b, h, 0) || !extra_operand(env, s, 2, b, h, 0) || /* h, c */
      !extra_operand(env, s, 2, 4 * h, i, 0) || !extra_operand(env, s, 2, 4 * h, h, 0) ||
      !extra_operand(env, s, 1, 4 * h, 0, 0) || !extra_operand(env, s, 1, 4 * h, 0, 0))
    return false;
  s->call = (plm__op_call){.in = {&s->in, &s->extra[0], &s->extra[1], &s->extra[2], &s->extra[3],
                                  &s->extra[4], &s->extra[5]}};
  return finish_call(env, s, 0);
}

/* dendritic: the seeds' 10 neurons x 8 dendrites x 16 inputs, NMDA, batch `batch`. */
enum { DENDRITE_NEURONS = 10, DENDRITES = 8, DENDRITE_INPUTS = 16 };

static bool dendritic_setup(bench_env *env, int64_t batch, int64_t unused, op_state *s) {
  (void)unused;
  if (!random_tensor(env, PLM_DTYPE_F32, batch, DENDRITE_INPUTS, &s->in)) return false;
  s->has_in = true;
  const plm_tensor *w = extra_operand(env, s, 3, DENDRITE_NEURONS, DENDRITES, DENDRITE_INPUTS);
  if (!w) return false;
  s->params.dendritic =
      (plm_dendritic_params){.mode = PLM_DENDRITE_NMDA, .k = 4.0f, .theta = 2.0f, .beta = 0.5f};
  s->call = (plm__op_call){.in = {&s->in, w}};
  return finish_call(env, s, 0);
}

/* vector_add: a and b f32 (n, n), out = a + b; the seed n = 316 is the seeds' 100k. */
static bool vector_add_setup(bench_env *env, int64_t n, int64_t unused, op_state *s) {
  (void)unused;
  if (!random_tensor(env, PLM_DTYPE_F32, n, n, &s->in) ||
      !random_tensor(env, PLM_DTYPE_F32, n, n, &s->in2))
    return false;
  s->has_in = s->has_in2 = true;
  s->params.vector_add = plm_vector_add_params_default();
  s->call = (plm__op_call){.in = {&s->in, &s->in2}};
  return finish_call(env, s, 0);
}

/* dot: n rows of n f32 (the seed n = 316: 100k elements), one f64 per row. */
static bool dot_setup(bench_env *env, int64_t n, int64_t unused, op_state *s) {
  (void)unused;
  if (!random_tensor(env, PLM_DTYPE_F32, n, n, &s->in) ||
      !random_tensor(env, PLM_DTYPE_F32, n, n, &s->in2))
    return false;
  s->has_in = s->has_in2 = true;
  s->call = (plm__op_call){.in = {&s->in, &s->in2}};
  return finish_call(env, s, 0);
}

/* ar_forecast: `series` series of the seeds' 1000 points, AR(5), 10 steps ahead; and the
 * same at AR(16), past the lags whose working doubles fit shared memory (the CUDA kernel's
 * scratch path, kernels/cuda/forecast.cu). */
enum { AR_POINTS = 1000, AR_LAGS = 5, AR_SCRATCH_LAGS = 16, AR_HORIZON = 10 };

static bool forecast_setup_lags(bench_env *env, int64_t series, int lags, op_state *s) {
  if (!random_tensor(env, PLM_DTYPE_F32, series, AR_POINTS, &s->in)) return false;
  s->has_in = true;
  s->params.ar_forecast = (plm_ar_forecast_params){.lags = lags, .horizon = AR_HORIZON};
  s->call = (plm__op_call){.in = {&s->in}};
  return finish_call(env, s, 0);
}

static bool forecast_setup(bench_env *env, int64_t series, int64_t unused, op_state *s) {
  (void)unused;
  return forecast_setup_lags(env, series, AR_LAGS, s);
}

static bool forecast_scratch_setup(bench_env *env, int64_t series, int64_t unused, op_state *s) {
  (void)unused;
  return forecast_setup_lags(env, series, AR_SCRATCH_LAGS, s);
}

/* cuBLAS's SGEMM, the baseline for matmul on cuda (benchmarks/cublas_loader.h). */
static cublas_peer cublas;

/* cublas_sgemm: the matmul case's n^3 product alone (no bias, no activation) by cuBLAS,
 * on the same stream. */
static bool cublas_setup(bench_env *env, int64_t n, int64_t unused, op_state *s) {
  (void)unused;
  if (!cublas_peer_load(&cublas, env->stream, env->backend))
    return fail("cublas_sgemm: %s", cublas.why);
  if (!random_tensor(env, PLM_DTYPE_F32, n, n, &s->in) ||
      !random_tensor(env, PLM_DTYPE_F32, n, n, &s->in2) ||
      !random_tensor(env, PLM_DTYPE_F32, n, n, &s->out))
    return false;
  s->has_in = s->has_in2 = s->has_out = true;
  s->cost = (plm_op_cost){.bytes = 12.0 * (double)n * (double)n,
                          .flops = 2.0 * (double)n * (double)n * (double)n};
  return true;
}

static bool cublas_run(bench_env *env, void *state) {
  (void)env;
  op_state *s = state;
  const int n = (int)s->in.dims[0];
  if (!cublas_peer_sgemm(&cublas, CUBLAS_MATH_FP32, n, n, n, s->in.data, s->in2.data, s->out.data))
    return fail("cublas_sgemm: %s", cublas.why);
  return true;
}

/* A workload: an op of the table (`op`, run by table_op_run) or one beside it (`beside`:
 * the op it is compared with and printed after, with its own run), its seed size and the
 * issue's per-call budget there, its input's dtype and parameters for the table. The
 * loop over the table (run_all) runs every op's workloads; an op without one is said
 * with its reason (`unmeasured` below). */
typedef struct op_entry {
  const plm__op_desc *op;     /* NULL: not an op of the table */
  const plm__op_desc *beside; /* op NULL: the table op it is printed after */
  const char *label;          /* the table's and JSON's name; NULL: op->name */
  const char *dtype;          /* the input's, for the table and JSON */
  const char *detail;         /* parameters, for the table */
  int seed;                   /* the seed size (square) */
  const char *budget_name;    /* the name for the seed budget; NULL: none */
  double budget_lo_us, budget_hi_us;
  bool (*setup)(bench_env *env, int64_t h, int64_t w, op_state *s);
  enqueue_fn run;    /* NULL: table_op_run */
  const char *scale; /* NULL: an image of size x size; else what size counts ("n", "batch") */
  int large[2];      /* the larger sizes (quick: the first); {0, 0}: 2048 and 4096 */
  bool cuda_only;    /* a peer that exists only on cuda (cuBLAS) */
} op_entry;

/* The seed budgets are the (RTX 4090, per call). */
static const op_entry ops[] = {
    {.op = &plm__op_conv2d,
     .dtype = "f32",
     .detail = "3x3 same",
     .seed = 256,
     .budget_name = "conv2d 256x256 3x3",
     .budget_lo_us = 800,
     .budget_hi_us = 2000,
     .setup = conv2d_setup},
    {.op = &plm__op_conv2d,
     .label = "conv2d_9x9",
     .dtype = "f32",
     .detail = "9x9 LoG same",
     .seed = 512,
     .setup = conv2d_log_setup},
    {.op = &plm__op_sobel, .dtype = "u8", .detail = "magnitude", .seed = 256, .setup = sobel_setup},
    {.op = &plm__op_entropy,
     .dtype = "u8",
     .detail = "w16 value-bins",
     .seed = 512,
     .budget_name = "entropy 512x512 w16",
     .budget_lo_us = 3000,
     .budget_hi_us = 8000,
     .setup = entropy_setup},
    {.op = &plm__op_threshold,
     .dtype = "f32",
     .detail = "> 0.5",
     .seed = 256,
     .budget_name = "image_segmentation 256x256",
     .budget_lo_us = 400,
     .budget_hi_us = 1000,
     .setup = threshold_setup},
    {.op = &plm__op_nuc,
     .dtype = "u8",
     .detail = "f32 gain, offset",
     .seed = 512,
     .setup = nuc_setup},
    {.op = &plm__op_badpixel,
     .dtype = "f32",
     .detail = "1/16 flagged",
     .seed = 512,
     .setup = badpixel_setup},
    {.op = &plm__op_background,
     .dtype = "f32",
     .detail = "ema, state carried",
     .seed = 512,
     .setup = background_setup},
    {.op = &plm__op_abs_diff,
     .dtype = "f32",
     .detail = "f32 reference frame",
     .seed = 512,
     .setup = abs_diff_setup},
    {.op = &plm__op_scale_offset,
     .dtype = "u8",
     .detail = "* 0.25 + 10",
     .seed = 512,
     .setup = scale_offset_setup},
    {.op = &plm__op_cfar,
     .dtype = "f32",
     .detail = "w15 g5 k5 mask",
     .seed = 512,
     .setup = cfar_setup},
    {.op = &plm__op_label,
     .dtype = "u8",
     .detail = "half foreground, 8-conn",
     .seed = 512,
     .setup = label_setup},
    {.op = &plm__op_segment,
     .dtype = "f32",
     .detail = "> 0.5, 8-conn, 64k rows",
     .seed = 512,
     .setup = segment_setup},
    {.op = &plm__op_sobel_entropy_threshold,
     .label = "fused",
     .dtype = "f32",
     .detail = "sobel>entropy>threshold w16 b64",
     .seed = 512,
     .setup = fused_setup},
    {.beside = &plm__op_sobel_entropy_threshold,
     .label = "unfused",
     .dtype = "f32",
     .detail = "the same as 3 ops",
     .seed = 512,
     .setup = unfused_setup,
     .run = unfused_run},
    {.op = &plm__op_matmul,
     .dtype = "f32",
     .detail = "n^3 fp32 +bias relu",
     .seed = 256,
     .budget_name = "matmul 256^3",
     .budget_lo_us = 3000,
     .budget_hi_us = 3000,
     .setup = matmul_setup,
     .scale = "n"},
    {.beside = &plm__op_matmul,
     .label = "cublas_sgemm",
     .dtype = "f32",
     .detail = "n^3 fp32, the baseline",
     .seed = 256,
     .setup = cublas_setup,
     .run = cublas_run,
     .scale = "n",
     .cuda_only = true},
    {.op = &plm__op_lstm_cell,
     .dtype = "f32",
     .detail = "batch x 64 -> 128",
     .seed = 32,
     .budget_name = "lstm_cell 32x64x128",
     .budget_lo_us = 3000,
     .budget_hi_us = 3000,
     .setup = lstm_setup,
     .scale = "batch"},
    {.op = &plm__op_dendritic,
     .dtype = "f32",
     .detail = "batch x 10x8x16 nmda",
     .seed = 1,
     .budget_name = "dendritic 10x8x16",
     .budget_lo_us = 300,
     .budget_hi_us = 300,
     .setup = dendritic_setup,
     .scale = "batch"},
    {.op = &plm__op_vector_add,
     .dtype = "f32",
     .detail = "n x n, a + b",
     .seed = 316,
     .setup = vector_add_setup,
     .scale = "n"},
    {.op = &plm__op_dot,
     .dtype = "f32",
     .detail = "n rows of n, f64 sums",
     .seed = 316,
     .setup = dot_setup,
     .scale = "n"},
    {.op = &plm__op_ar_forecast,
     .dtype = "f32",
     .detail = "1000 pts AR(5) 10 steps",
     .seed = 1,
     .budget_name = "ar_forecast 1000 AR(5) 10",
     .budget_lo_us = 500,
     .budget_hi_us = 500,
     .setup = forecast_setup,
     .scale = "series",
     .large = {10000, 100000}},
    {.op = &plm__op_ar_forecast,
     .label = "ar_forecast_p16",
     .dtype = "f32",
     .detail = "1000 pts AR(16) 10 steps",
     .seed = 64,
     .setup = forecast_scratch_setup,
     .scale = "series",
     .large = {1000, 10000}},
};
enum { OP_COUNT = sizeof ops / sizeof ops[0] };

/* The table's ops measured by no workload here, and why. */
static const struct {
  const plm__op_desc *op;
  const char *why;
} unmeasured[] = {
    {&plm__op_regions, "measured inside segment (it reads label's labels and count)"},
};

/* The table's and JSON's name of a workload. */
static const char *entry_name(const op_entry *e) {
  return e->label ? e->label : e->op->name;
}

/* The op a workload's rows follow in the table: its own, or the one it is beside. */
static const plm__op_desc *entry_op(const op_entry *e) {
  return e->op ? e->op : e->beside;
}

static void op_state_release(bench_env *env, op_state *s) {
  if (s->has_in) plm_tensor_free(env->pool, env->stream, &s->in);
  if (s->has_in2) plm_tensor_free(env->pool, env->stream, &s->in2);
  if (s->has_out) plm_tensor_free(env->pool, env->stream, &s->out);
  for (int i = 0; i < s->mid_count; i++) plm_tensor_free(env->pool, env->stream, &s->mid[i]);
  for (int i = 0; i < s->extra_count; i++) plm_tensor_free(env->pool, env->stream, &s->extra[i]);
  plm_stream_synchronize(env->stream);
  memset(s, 0, sizeof *s);
}

/* ---- results --------------------------------------------------------------------------- */

typedef struct result {
  const op_entry *op;
  int size;
  bool seed;
  int runs;
  double mean_us, stddev_us, min_us, max_us, cv;
  double mpix_per_s, gbps, floor_us, of_floor;
  double memory_floor_us, compute_floor_us; /* floor_us is the larger */
  bool compute_bound;
  double bytes, flops, gflops;
} result;

/* The most sizes a workload runs at (run_sizes), and 512x512, the product's frame. */
enum { MAX_SIZES = 4, FRAME_SIZE = 512 };
enum { MAX_RESULTS = OP_COUNT * MAX_SIZES };

/* "512x512" for an image, "n=256" or "batch=32" for the others. */
static void size_label(const op_entry *op, int size, char *out, size_t room) {
  if (op->scale)
    snprintf(out, room, "%s=%d", op->scale, size);
  else
    snprintf(out, room, "%dx%d", size, size);
}

/* Which floor is the larger: "fma" (flops / the FMA rate) or "mem" (bytes / bandwidth). */
static const char *bound_name(const result *r) {
  return r->compute_bound ? "fma" : "mem";
}

static void print_table_header(void) {
  printf("%-10s %-5s %-11s %5s %10s %9s %10s %10s %6s %9s %8s %8s %10s %5s %8s  %s\n", "op",
         "dtype", "size", "runs", "mean_us", "stddev_us", "min_us", "max_us", "cv", "Mel/s", "GB/s",
         "GFLOP/s", "floor_us", "bound", "of_floor", "seed budget (RTX 4090)");
}

static void print_row(const result *r) {
  char size[32], budget[96] = "";
  size_label(r->op, r->size, size, sizeof size);
  if (r->seed && r->op->budget_name && r->op->budget_lo_us == r->op->budget_hi_us)
    snprintf(budget, sizeof budget, "%s: %.0f us", r->op->budget_name, r->op->budget_hi_us);
  else if (r->seed && r->op->budget_name)
    snprintf(budget, sizeof budget, "%s: %.0f-%.0f us", r->op->budget_name, r->op->budget_lo_us,
             r->op->budget_hi_us);
  printf(
      "%-10s %-5s %-11s %5d %10.1f %9.1f %10.1f %10.1f %6.3f %9.1f %8.2f %8.2f %10.1f %5s "
      "%8.1f  %s\n",
      entry_name(r->op), r->op->dtype, size, r->runs, r->mean_us, r->stddev_us, r->min_us,
      r->max_us, r->cv, r->mpix_per_s, r->gbps, r->gflops, r->floor_us, bound_name(r), r->of_floor,
      budget);
  fflush(stdout);
}

/* The profiled pass of one operation at one size: runs launches, each recorded by the
 * profiler around its enqueue as "<op> <size>x<size>" with the run's index as frame,
 * the host waiting for each before the next, as the timed runs do. */
static bool profile_op(bench_env *env, const op_entry *op, int size, int runs, op_state *s) {
  char name[PLM_PROFILE_NAME_SIZE], label[13]; /* "batch=4096" */
  size_label(op, size, label, sizeof label);
  snprintf(name, sizeof name, "%.10s %s", entry_name(op), label); /* the longest fits */
  const enqueue_fn run = op->run ? op->run : table_op_run;
  for (int i = 0; i < runs; i++) {
    plm_profile_mark mark;
    CALL("profile", plm_profiler_begin(env->profiler, env->stream, name, i, &s->cost, &mark));
    if (!run(env, s)) return false;
    CALL("profile", plm_profiler_end(env->profiler, env->stream, &mark));
    CALL("profile", plm_stream_synchronize(env->stream));
  }
  return true;
}

/* --emulated-cost: one more run of the op, counted by the CUDA emulator in a section
 * "<op> <size>" (the host waits for it). */
static bool count_op(bench_env *env, const op_entry *op, int size, op_state *s) {
#if PLUME_EMU_COUNT
  char label[64], size_text[16];
  size_label(op, size, size_text, sizeof size_text);
  snprintf(label, sizeof label, "%s %s", entry_name(op), size_text);
  const enqueue_fn run = op->run ? op->run : table_op_run;
  if (plm_emu_count_begin(label) != 0) return fail("emulated cost: cannot count %s", label);
  bool ok = run(env, s);
  plm_status status = plm_stream_synchronize(env->stream);
  plm_emu_count_end();
  if (!ok) return false;
  if (status != PLM_OK) return fail_call("emulated cost", "plm_stream_synchronize", status);
  return true;
#else
  (void)env, (void)op, (void)size, (void)s;
  return fail("--emulated-cost needs a -DPLUME_CUDA=EMU build");
#endif
}

static bool run_op(bench_env *env, const op_entry *op, int size, result *r) {
  const enqueue_fn run = op->run ? op->run : table_op_run;
  int warmups = env->opt.size == RUN_SMOKE ? 1 : 3;
  int runs = env->opt.size == RUN_SMOKE ? 3 : 20;
  op_state s;
  memset(&s, 0, sizeof s);
  s.op = op->op;
  double times[20];
  bool ok = op->setup(env, size, size, &s);
  for (int i = 0; ok && i < warmups; i++) ok = time_once(env, run, &s, &times[0]);
  for (int i = 0; ok && i < runs; i++) ok = time_once(env, run, &s, &times[i]);
  if (ok && env->profiler) ok = profile_op(env, op, size, runs, &s);
  if (ok && env->opt.emulated_cost) ok = count_op(env, op, size, &s);
  op_state cost_copy = s;
  op_state_release(env, &s);
  if (!ok) return false;

  double sum = 0, lo = times[0], hi = times[0];
  for (int i = 0; i < runs; i++) {
    sum += times[i];
    lo = fmin(lo, times[i]);
    hi = fmax(hi, times[i]);
  }
  double mean = sum / runs, var = 0;
  for (int i = 0; i < runs; i++) var += (times[i] - mean) * (times[i] - mean);
  double pixels = (double)plm_tensor_numel(&cost_copy.out); /* pixels, or elements */
  *r = (result){.op = op,
                .size = size,
                .seed = size == op->seed,
                .runs = runs,
                .mean_us = mean,
                .stddev_us = runs > 1 ? sqrt(var / (runs - 1)) : 0,
                .min_us = lo,
                .max_us = hi,
                .bytes = cost_copy.cost.bytes,
                .flops = cost_copy.cost.flops};
  r->cv = mean > 0 ? r->stddev_us / mean : 0;
  r->mpix_per_s = mean > 0 ? pixels / mean : 0; /* pixels per us = Mpix per s */
  r->gbps = mean > 0 ? r->bytes / (mean * 1e3) : 0;
  r->gflops = mean > 0 ? r->flops / (mean * 1e3) : 0;
  r->memory_floor_us = env->peak_gbps > 0 ? r->bytes / (env->peak_gbps * 1e3) : 0;
  r->compute_floor_us = env->peak_gflops > 0 ? r->flops / (env->peak_gflops * 1e3) : 0;
  r->compute_bound = r->compute_floor_us > r->memory_floor_us;
  r->floor_us = fmax(r->memory_floor_us, r->compute_floor_us);
  r->of_floor = r->floor_us > 0 ? mean / r->floor_us : 0;
  return true;
}

/* The host's copy bandwidth: bytes read plus written per second by a large
 * device-to-device plm_stream_memcpy, the median of 5 (after one warm-up). */
typedef struct copy_state {
  void *src, *dst;
  size_t bytes;
} copy_state;

static bool copy_run(bench_env *env, void *state) {
  copy_state *c = state;
  CALL("copy bandwidth",
       plm_stream_memcpy(env->stream, c->dst, c->src, c->bytes, PLM_COPY_DEVICE_TO_DEVICE));
  return true;
}

static bool measure_copy_bandwidth(bench_env *env) {
  copy_state c = {.bytes = env->opt.size == RUN_SMOKE ? ((size_t)4 << 20) : ((size_t)64 << 20)};
  CALL("copy bandwidth", plm_pool_alloc(env->pool, c.bytes, env->stream, &c.src));
  plm_status status = plm_pool_alloc(env->pool, c.bytes, env->stream, &c.dst);
  if (status != PLM_OK) {
    plm_pool_free(env->pool, c.src, env->stream);
    return fail_call("copy bandwidth", "plm_pool_alloc", status);
  }
  status = plm_stream_memset(env->stream, c.src, 1, c.bytes);
  bool ok = status == PLM_OK || fail_call("copy bandwidth", "plm_stream_memset", status);
  double times[6];
  for (int i = 0; ok && i < 6; i++) ok = time_once(env, copy_run, &c, &times[i]);
  plm_pool_free(env->pool, c.src, env->stream);
  plm_pool_free(env->pool, c.dst, env->stream);
  plm_stream_synchronize(env->stream);
  if (!ok) return false;
  double median_us = bench_median(times + 1, 5);
  env->peak_gbps = median_us > 0 ? 2.0 * (double)c.bytes / (median_us * 1e3) : 0;
  return true;
}

/* ---- fusion: the fused op and the chain, timed in alternation ---------------------------- */

typedef struct fusion_ratio {
  int size, pairs;
  double fused_us, unfused_us; /* medians */
  double speedup;              /* the median over the pairs of unfused / fused */
} fusion_ratio;

enum { MAX_FUSION = 3 };

/* The fused op and the chain at one size, on the same input: warm-ups of both, then
 * `pairs` pairs, each the fused op then the chain, each timed alone, so that a change
 * of the machine's load between pairs hits both halves of a pair. */
static bool measure_fusion(bench_env *env, int size, int warmups, int pairs, fusion_ratio *out) {
  op_state f, u;
  memset(&f, 0, sizeof f);
  memset(&u, 0, sizeof u);
  double fused_us[20], unfused_us[20], ratios[20];
  bool ok = fused_setup(env, size, size, &f) && unfused_setup(env, size, size, &u);
  if (ok) {
    plm_status status = plm_stream_memcpy(env->stream, u.in.data, f.in.data,
                                          plm_tensor_bytes(&f.in), PLM_COPY_DEVICE_TO_DEVICE);
    ok = status == PLM_OK || fail_call("fusion setup", "plm_stream_memcpy", status);
  }
  for (int i = 0; ok && i < warmups; i++)
    ok = time_once(env, table_op_run, &f, &fused_us[0]) &&
         time_once(env, unfused_run, &u, &unfused_us[0]);
  for (int i = 0; ok && i < pairs; i++) {
    ok = time_once(env, table_op_run, &f, &fused_us[i]) &&
         time_once(env, unfused_run, &u, &unfused_us[i]);
    ratios[i] = ok && fused_us[i] > 0 ? unfused_us[i] / fused_us[i] : 0.0;
  }
  op_state_release(env, &f);
  op_state_release(env, &u);
  if (!ok) return false;
  *out = (fusion_ratio){.size = size,
                        .pairs = pairs,
                        .fused_us = bench_median(fused_us, (size_t)pairs),
                        .unfused_us = bench_median(unfused_us, (size_t)pairs),
                        .speedup = bench_median(ratios, (size_t)pairs)};
  return true;
}

static void print_fusion(const fusion_ratio *ratios, size_t count) {
  if (count == 0) return;
  printf(
      "\nfusion (f32, window 16, 64 bins, fixed range): sobel_entropy_threshold against "
      "sobel, entropy, threshold,\nalternating pairs on the same input\n");
  for (size_t i = 0; i < count; i++)
    printf(
        "  %4dx%-4d  %2d pairs  unfused %10.1f us  fused %10.1f us (medians)  speedup %.2fx "
        "(median of the pairs)\n",
        ratios[i].size, ratios[i].size, ratios[i].pairs, ratios[i].unfused_us, ratios[i].fused_us,
        ratios[i].speedup);
}

/* ---- JSON -------------------------------------------------------------------------------- */

static json_t *result_json(const result *r) {
  char size[32];
  size_label(r->op, r->size, size, sizeof size);
  json_t *o = json_object();
  json_object_set_new(o, "op", json_string(entry_name(r->op)));
  json_object_set_new(o, "size", json_string(size));
  json_object_set_new(o, "dtype", json_string(r->op->dtype));
  json_object_set_new(o, "params", json_string(r->op->detail));
  json_object_set_new(o, "runs", json_integer(r->runs));
  json_object_set_new(o, "mean_us", json_real(r->mean_us));
  json_object_set_new(o, "stddev_us", json_real(r->stddev_us));
  json_object_set_new(o, "min_us", json_real(r->min_us));
  json_object_set_new(o, "max_us", json_real(r->max_us));
  json_object_set_new(o, "cv", json_real(r->cv));
  json_object_set_new(o, "mpix_per_s", json_real(r->mpix_per_s));
  json_object_set_new(o, "bytes", json_real(r->bytes));
  json_object_set_new(o, "gbps", json_real(r->gbps));
  json_object_set_new(o, "flops", json_real(r->flops));
  json_object_set_new(o, "gflop_per_s", json_real(r->gflops));
  json_object_set_new(o, "floor_us", json_real(r->floor_us));
  json_object_set_new(o, "memory_floor_us", json_real(r->memory_floor_us));
  json_object_set_new(o, "compute_floor_us", json_real(r->compute_floor_us));
  json_object_set_new(o, "bound", json_string(r->compute_bound ? "compute" : "memory"));
  json_object_set_new(o, "of_floor", json_real(r->of_floor));
  if (r->seed && r->op->budget_name) {
    json_t *b = json_object();
    json_object_set_new(b, "name", json_string(r->op->budget_name));
    json_object_set_new(b, "device", json_string("RTX 4090"));
    json_object_set_new(b, "lo_us", json_real(r->op->budget_lo_us));
    json_object_set_new(b, "hi_us", json_real(r->op->budget_hi_us));
    json_object_set_new(o, "seed_budget", b);
  }
  return o;
}

static json_t *document_json(const bench_env *env, const result *rs, size_t count,
                             const fusion_ratio *ratios, size_t fusion_count) {
  json_t *doc = bench_json_document("ops", env->backend, &env->info, env->opt.size);
  json_object_set_new(doc, "peak_gbps", json_real(env->peak_gbps));
  json_object_set_new(doc, "peak_source", json_string(env->peak_source));
  json_object_set_new(doc, "peak_gflops", json_real(env->peak_gflops));
  json_t *list = json_array();
  for (size_t i = 0; i < count; i++) json_array_append_new(list, result_json(&rs[i]));
  json_object_set_new(doc, "results", list);
  if (fusion_count > 0) {
    json_t *fusion = json_array();
    for (size_t i = 0; i < fusion_count; i++) {
      char size[32];
      snprintf(size, sizeof size, "%dx%d", ratios[i].size, ratios[i].size);
      json_t *o = json_object();
      json_object_set_new(o, "size", json_string(size));
      json_object_set_new(o, "pairs", json_integer(ratios[i].pairs));
      json_object_set_new(o, "fused_median_us", json_real(ratios[i].fused_us));
      json_object_set_new(o, "unfused_median_us", json_real(ratios[i].unfused_us));
      json_object_set_new(o, "speedup", json_real(ratios[i].speedup));
      json_array_append_new(fusion, o);
    }
    json_object_set_new(doc, "fusion", fusion);
  }
  return doc;
}

/* Check that path holds a bench_ops result document; prints why not. */
static bool validate_json(const char *path) {
  static const char *const keys[] = {"benchmark", "backend", "device", "commit", "results", NULL};
  static const char *const result_keys[] = {"op", "size", "dtype", NULL};
  static const char *const result_numbers[] = {
      "mean_us", "stddev_us", "min_us", "max_us", "cv", "mpix_per_s", "gbps", "floor_us", NULL};
  static const result_schema schema = {.prog = "bench_ops",
                                       .benchmark = "ops",
                                       .keys = keys,
                                       .result_keys = result_keys,
                                       .result_numbers = result_numbers};
  return result_check_file(path, &schema, stderr);
}

/* ---- profile ------------------------------------------------------------------------------ */

enum { AB_CONFIG_SIZE = 32 };

/* Write the profile to --profile's directory, with the fusion medians as the A/B bars
 * ("unfused 512x512", "fused 512x512", ...; microseconds, lower is better; no bars when
 * the fusion pairs did not run), and say where the report is. */
static bool write_profile(bench_env *env, const fusion_ratio *ratios, size_t fusion_count) {
  char configs[2 * MAX_FUSION][AB_CONFIG_SIZE];
  plm_profile_ab bars[2 * MAX_FUSION];
  size_t n = 0;
  for (size_t i = 0; i < fusion_count; i++) {
    for (int fused = 0; fused < 2; fused++, n++) {
      snprintf(configs[n], sizeof configs[n], "%s %dx%d", fused ? "fused" : "unfused",
               ratios[i].size, ratios[i].size);
      bars[n] = (plm_profile_ab){configs[n], fused ? ratios[i].fused_us : ratios[i].unfused_us};
    }
  }
  char title[64];
  snprintf(title, sizeof title, "bench_ops (%s)", plm_backend_name(env->backend));
  const plm_profile_write_options write = {.title = title,
                                           .ab = n ? bars : NULL,
                                           .ab_count = n,
                                           .ab_unit = "us (median of the fusion pairs)",
                                           .ab_higher_is_better = false};
  CALL("profile", plm_profiler_write(env->profiler, env->opt.profile_dir, &write));
  printf("profile: %s/report.html\n", env->opt.profile_dir);
  return true;
}

/* ---- main ----------------------------------------------------------------------------- */

/* The sizes a case runs at, from its seed size: the seed; for an image op whose seed
 * is another, also 512x512, the product's frame; then 2048 and 4096 (--quick: not
 * 4096; --smoke: 64 alone). Returns how many (at most MAX_SIZES). */
static int run_sizes(const bench_env *env, const op_entry *op, int sizes[MAX_SIZES]) {
  if (env->opt.size_only > 0) {
    sizes[0] = op->scale ? op->seed : (int)env->opt.size_only;
    return 1;
  }
  if (env->opt.size == RUN_SMOKE) {
    sizes[0] = 64;
    return 1;
  }
  int n = 0;
  sizes[n++] = op->seed;
  if (!op->scale && op->seed != FRAME_SIZE) sizes[n++] = FRAME_SIZE;
  sizes[n++] = op->large[0] ? op->large[0] : 2048;
  if (env->opt.size == RUN_FULL) sizes[n++] = op->large[1] ? op->large[1] : 4096;
  return n;
}

static bool wants_op(bench_env *env, const op_entry *op) {
  if (op->cuda_only && !cublas_peer_load(&cublas, env->stream, env->backend))
    return false; /* said after the table */
  /* --op NAME runs NAME's workload and the peers beside it (--op matmul: cuBLAS too). */
  return !env->opt.only_op || strcmp(env->opt.only_op, entry_name(op)) == 0 ||
         (op->cuda_only && strcmp(env->opt.only_op, op->beside->name) == 0);
}

/* The fusion pairs run unless --op chose an operation other than fused or unfused. */
static bool wants_fusion(const bench_env *env) {
  const char *only = env->opt.only_op;
  return !only || strcmp(only, "fused") == 0 || strcmp(only, "unfused") == 0;
}

enum { FUSION_SEED = 512 };

/* The fusion pairs' sizes: those of an image op seeded at 512x512. */
static int fusion_sizes(const bench_env *env, int sizes[MAX_SIZES]) {
  const op_entry fusion = {.seed = FUSION_SEED};
  return run_sizes(env, &fusion, sizes);
}

/* The progress bar's total: every operation x size of the table, then the fusion sizes. */
static int64_t count_cases(bench_env *env) {
  int sizes[MAX_SIZES];
  int64_t cases = 0;
  for (int o = 0; o < OP_COUNT; o++)
    if (wants_op(env, &ops[o])) cases += run_sizes(env, &ops[o], sizes);
  if (wants_fusion(env)) cases += fusion_sizes(env, sizes);
  return cases;
}

static void case_done(bench_env *env) {
  progress_update(&env->bar, ++env->cases_done);
}

/* One workload at each of its sizes, a row each. */
static bool run_workload(bench_env *env, const op_entry *op, result *rs, size_t *count) {
  int sizes[MAX_SIZES];
  int nsizes = run_sizes(env, op, sizes);
  for (int i = 0; i < nsizes; i++) {
    result *r = &rs[*count];
    if (!run_op(env, op, sizes[i], r)) return false;
    (*count)++;
    progress_clear(&env->bar);
    print_row(r);
    case_done(env);
  }
  return true;
}

/* The op table's order (ops/op_desc.h): each op's workloads, then those beside it; an op
 * with none says why (without --op). */
static bool run_all(bench_env *env, result *rs, size_t *count) {
  for (int k = 0; k < PLM__OP_COUNT; k++) {
    const plm__op_desc *table_op = plm__op_get((plm__op_kind)k);
    bool measured = false;
    for (int o = 0; o < OP_COUNT; o++) {
      if (entry_op(&ops[o]) != table_op) continue;
      measured = true;
      if (wants_op(env, &ops[o]) && !run_workload(env, &ops[o], rs, count)) return false;
    }
    for (size_t u = 0; !measured && u < sizeof unmeasured / sizeof unmeasured[0]; u++) {
      if (unmeasured[u].op != table_op) continue;
      measured = true;
      if (env->opt.only_op) continue;
      progress_clear(&env->bar);
      printf("%s: not measured here: %s\n", table_op->name, unmeasured[u].why);
    }
    if (!measured)
      return fail("%s: an op of the table with no workload in bench_ops", table_op->name);
  }
  if (cublas.why[0] && (!env->opt.only_op || strcmp(env->opt.only_op, plm__op_matmul.name) == 0 ||
                        strcmp(env->opt.only_op, "cublas_sgemm") == 0))
    printf("cublas_sgemm (the baseline of matmul): skipped: %s\n", cublas.why);
  return true;
}

/* The fusion pairs at the fused op's sizes, unless --op chose another operation. */
static bool run_fusion(bench_env *env, fusion_ratio *ratios, size_t *count) {
  if (!wants_fusion(env)) return true;
  int sizes[MAX_SIZES];
  int nsizes = fusion_sizes(env, sizes);
  int warmups = env->opt.size == RUN_SMOKE ? 1 : 3, pairs = env->opt.size == RUN_SMOKE ? 3 : 20;
  for (int i = 0; i < nsizes && i < MAX_FUSION; i++) {
    if (!measure_fusion(env, sizes[i], warmups, pairs, &ratios[*count])) return false;
    (*count)++;
    case_done(env);
  }
  return true;
}

static bool open_env(bench_env *env) {
  plm_context_config config = {.backend = env->opt.backend};
  CALL("setup", plm_context_create(&config, &env->ctx));
  CALL("setup", plm_context_backend(env->ctx, &env->backend));
  CALL("setup", plm_context_device_info(env->ctx, &env->info));
  CALL("setup", plm_context_default_pool(env->ctx, &env->pool));
  CALL("setup", plm_stream_create(env->ctx, PLM_STREAM_DEFAULT, &env->stream));
  CALL("setup", plm_event_create(env->ctx, PLM_EVENT_DEFAULT, &env->start));
  CALL("setup", plm_event_create(env->ctx, PLM_EVENT_DEFAULT, &env->end));
  /* The profiler (calibrating, or loading the cached calibration) for --profile, and for
   * the FMA rate of the compute floor in any case. */
  CALL("setup", plm_profiler_create(env->ctx, NULL, &env->profiler));
  plm_profile_calibration calibration;
  CALL("setup", plm_profiler_calibration(env->profiler, &calibration));
  env->peak_gflops = calibration.fma_gflops;
  if (!env->opt.profile_dir) {
    plm_profiler_destroy(env->profiler);
    env->profiler = NULL;
  }
  if (env->backend == PLM_BACKEND_CUDA && env->info.memory_bandwidth_gbps > 0) {
    env->peak_gbps = env->info.memory_bandwidth_gbps;
    env->peak_source = "device_info";
    return true;
  }
  env->peak_source = "measured_copy";
  return measure_copy_bandwidth(env);
}

static void close_env(bench_env *env) {
  cublas_peer_release(&cublas);
  plm_profiler_destroy(env->profiler); /* before its context */
  if (env->start) plm_event_destroy(env->start);
  if (env->end) plm_event_destroy(env->end);
  if (env->stream) plm_stream_destroy(env->stream);
  if (env->ctx) {
    plm_status status = plm_context_destroy(env->ctx);
    if (status != PLM_OK)
      fprintf(stderr, "bench_ops: warning: plm_context_destroy -> %s: %s\n", plm_status_str(status),
              plm_last_error());
  }
}

/* --op NAME: one of the table's operations. */
static int parse_op(const char *name, void *only_op) {
  bool known = false;
  for (int o = 0; o < OP_COUNT; o++) known |= strcmp(name, entry_name(&ops[o])) == 0;
  if (!known) {
    fprintf(stderr, "bench_ops: --op '%s': expected one of", name);
    for (int o = 0; o < OP_COUNT; o++) fprintf(stderr, "%s %s", o ? "," : "", entry_name(&ops[o]));
    fprintf(stderr, "\n");
    return BENCH_EXIT_USAGE;
  }
  *(const char **)only_op = name;
  return BENCH_RUN;
}

/* --list-ops: the names --op takes, one a line, peers (cuda_only) left out: what runs each
 * op on its own (scripts/gpu-campaign) loops over. */
static int list_ops(const char *unused, void *unused_target) {
  (void)unused, (void)unused_target;
  for (int o = 0; o < OP_COUNT; o++)
    if (!ops[o].cuda_only) printf("%s\n", entry_name(&ops[o]));
  return BENCH_EXIT_OK;
}

int main(int argc, char **argv) {
  bench_env env = {0};
  const bench_option table[] = {
      BENCH_OPT_RUN_SIZE("--quick", RUN_QUICK, &env.opt.size,
                         "no 4096x4096 (under a minute on host)"),
      BENCH_OPT_RUN_SIZE("--smoke", RUN_SMOKE, &env.opt.size,
                         "tiny runs that only prove every path works (seconds)"),
      BENCH_OPT_BACKEND(&env.opt.backend),
      BENCH_OPT_JSON(&env.opt.json_path),
      BENCH_OPT_CALLBACK("--op", "NAME", parse_op, &env.opt.only_op,
                         "run one workload: an op of the table (--list-ops lists\n"
                         "them; fused is the sobel -> entropy -> threshold op and\n"
                         "unfused the same three ops one after another), or\n"
                         "cublas_sgemm (--op matmul runs it too on cuda; bench_matmul\n"
                         "compares matmul's precisions)"),
      BENCH_OPT_CALLBACK("--list-ops", NULL, list_ops, NULL,
                         "print the operations --op takes (cuBLAS aside), one a line"),
      BENCH_OPT_PROFILE(&env.opt.profile_dir,
                        "after each operation's timed runs, run it as often again with\n"
                        "the profiler recording every launch, and write\n"
                        "DIR/profile.json, DIR/trace.json and DIR/report.html (the\n"
                        "table's times come from the unprofiled runs)"),
      BENCH_OPT_COUNT("--size", 16384, &env.opt.size_only,
                      "every image op at N x N alone, the others at their seed size\n"
                      "(with --smoke: the smoke's few runs)"),
      BENCH_OPT_STRING("--emulated-cost", "PATH", &env.opt.emulated_cost,
                       "on the cuda backend of a -DPLUME_CUDA=EMU build: count one\n"
                       "more run of each op at each size with the CUDA emulator's\n"
                       "counters, print the emulated cost (an estimate for an H100,\n"
                       "not a measurement) after the table and write it to PATH (JSON)"),
      BENCH_OPT_STRING("--emulated-device", "NAME", &env.opt.emulated_device,
                       "with --emulated-cost: the GPU estimated for, H100 (the\n"
                       "default: H100 SXM) or H200"),
      BENCH_OPT_VALIDATE_JSON,
      BENCH_OPT_HELP,
      BENCH_OPT_END};
  const bench_cli cli = {
      .prog = "bench_ops", .usage = usage, .options = table, .validate_json = validate_json};
  int code = bench_start(&cli, argc, argv);
  if (code != BENCH_RUN) return code;
  if (env.opt.emulated_cost && !plm_build_info_get()->cuda_emulated) {
    fprintf(stderr, "bench_ops: --emulated-cost needs a build on the CUDA emulator (-DPLUME_CUDA=EMU)\n");
    return BENCH_EXIT_USAGE;
  }
  if (env.opt.emulated_device && !env.opt.emulated_cost) {
    fprintf(stderr, "bench_ops: --emulated-device goes with --emulated-cost\n");
    return BENCH_EXIT_USAGE;
  }
#if PLUME_EMU_COUNT
  if (!env.opt.emulated_device) env.opt.emulated_device = "H100";
  if (!plm_emu_device_model_find(env.opt.emulated_device)) {
    fprintf(stderr, "bench_ops: --emulated-device '%s': expected H100 or H200\n", env.opt.emulated_device);
    return BENCH_EXIT_USAGE;
  }
#endif
  if (!open_env(&env)) {
    fprintf(stderr, "bench_ops: %s\n", bench_error);
    close_env(&env);
    return BENCH_EXIT_FAILURE;
  }
  if (env.opt.emulated_cost && env.backend != PLM_BACKEND_CUDA) {
    fprintf(stderr, "bench_ops: --emulated-cost needs the cuda backend (--backend cuda)\n");
    close_env(&env);
    return BENCH_EXIT_USAGE;
  }
  bench_print_header("bench_ops", env.backend, &env.info, env.opt.size);
  printf(
      "event-timed runs; floor = the larger of cost bytes / %.1f GB/s (%s) and cost flops "
      "/ %.0f GFLOP/s (%s)\n\n",
      env.peak_gbps,
      strcmp(env.peak_source, "device_info") == 0 ? "the device's peak"
                                                  : "measured device-to-device copy",
      env.peak_gflops,
      env.peak_gflops > 0 ? "the calibrated FMA probe" : "unknown: memory floor only");
  print_table_header();

  static result rs[MAX_RESULTS];
  size_t count = 0;
  static fusion_ratio ratios[MAX_FUSION];
  size_t fusion_count = 0;
  int exit_code = 0;
  progress_begin(&env.bar, "bench_ops", "cases", count_cases(&env));
  bool ran = run_all(&env, rs, &count) && run_fusion(&env, ratios, &fusion_count);
  progress_end(&env.bar);
  if (!ran) {
    fprintf(stderr, "bench_ops: %s\n", bench_error);
    exit_code = BENCH_EXIT_FAILURE;
  }
  int below_floor = 0;
  for (size_t i = 0; i < count; i++) below_floor += rs[i].of_floor > 0 && rs[i].of_floor < 1;
  if (below_floor)
    printf(
        "\n%d row(s) ran faster than their floor: the peaks are low (the FMA rate is the "
        "profiler's cached calibration, %.0f GFLOP/s; PLUME_CALIBRATION_CACHE=refresh measures "
        "it again, best on an idle machine)\n",
        below_floor, env.peak_gflops);
  print_fusion(ratios, fusion_count);
  if (env.opt.json_path && count > 0) {
    json_t *doc = document_json(&env, rs, count, ratios, fusion_count);
    if (!bench_json_write("bench_ops", doc, env.opt.json_path, validate_json))
      exit_code = BENCH_EXIT_FAILURE;
    json_decref(doc);
  }
#if PLUME_EMU_COUNT
  if (exit_code == 0 && env.opt.emulated_cost) {
    printf("\n");
    if (plm_emu_count_report(env.opt.emulated_device, stdout, env.opt.emulated_cost) != 0)
      exit_code = BENCH_EXIT_FAILURE;
  }
#endif
  if (exit_code == 0 && env.profiler && !write_profile(&env, ratios, fusion_count)) {
    fprintf(stderr, "bench_ops: %s\n", bench_error);
    exit_code = BENCH_EXIT_FAILURE;
  }
  close_env(&env);
  return exit_code;
}

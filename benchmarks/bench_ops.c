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
 * drops 4096x4096; --smoke runs 64x64 only). Inputs and parameters are the op's sample
 * (ops/op_desc.h, "samples"; support/op_sample.h) at a fixed seed, uploaded once with
 * plm_stream_memcpy into tensors from the context's default pool; outputs are allocated
 * once per size. As the samples make them:
 *
 *   conv2d     f32 (H, W) with a 3x3 f32 kernel, pad 1, REFLECT101 ("same" size)
 *   conv2d_9x9 f32 (H, W) with the default preset's 9x9 LoG (log:9:1.5), pad 4, REPLICATE:
 *              a large kernel, bound by its sums rather than its bytes
 *   sepconv2d_9x9 f32 (H, W) with a 9x9 Gaussian (gauss:9:2) as two 9-tap passes, pad 4,
 *              REPLICATE: conv2d_9x9's filter size as KH + KW taps (the sample, 5 + 3
 *              binomial taps, is not run)
 *   sobel      u8 (H, W), magnitude only (gx and gy NULL)
 *   entropy    u8 (H, W), window 16, every value its own bin
 *   threshold  f32 (H, W) > 0.5 to u8 (the segmentation step)
 *   cfar       f32 (H, W), window 15, guard 5, k 5, the u8 mask
 *   cfar_w63   the same at window 63: on cuda the bands with 64.0 KiB of shared memory a
 *              block, past the 48 KiB a launch has without opting in
 *              (kernels/cuda/cfar_bands.h)
 *   cfar_w127  the same at window 127, the bands' largest: on cuda where a block may take
 *              128.0 KiB of shared memory (sm_80, sm_90), else the summed-area tables
 *              (kernels/cuda/cfar.cu)
 *   cfar_w129_stack  the same at window 129 over a stack of 16 frames of (H/4, W/4), the
 *              same pixels as cfar_w127's: on cuda past the bands on every device, the
 *              tables, several of a stack's frames to a launch (kernels/cuda/cfar.cu)
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
 *   ar_forecast_p16  the same at AR(16) (CUDA: the group kernel, a warp of 32 lanes a
 *              series, its working doubles in shared memory): 64 series, then 1000 and (full
 *              runs) 10,000
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
 * The rows follow the op table (ops/op_desc.h): each op's workloads, then the ones beside
 * it (unfused after fused, cuBLAS after matmul). A workload of a table op is its op's
 * sample: its outputs come from the op's shapes, its cost from the op's model, and it
 * runs through the op's dispatch (plm__op_call_public), as plm_<op> does. `ops` gives
 * some a seed size, a budget, parameters over the sample's (ar_forecast_p16) or a setup
 * of their own (conv2d_9x9's kernel); every other op of the table, one added to it
 * included, runs its sample at 512 (its parameters the detail), unless `unmeasured`
 * says why not.
 * The benchmark never fails on timing. Exit codes: 0 success, 1 a runtime failure
 * (an API call failed, the JSON could not be written), 2 bad usage.
 */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <math.h>
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
#include "support/op_sample.h"
#include "support/progress.h"
#include "support/result_check.h"
#if PLUME_EMU_COUNT
#include "emu/count/emu_count.h"
#endif

/* ---- options ------------------------------------------------------------------ */

typedef struct options {
  run_size size;
  plm_backend backend;
  const char *json_path;       /* NULL: no JSON */
  const char *only_op;         /* NULL: all */
  const char *profile_dir;     /* NULL: no profile */
  int64_t size_only;           /* --size N: image ops at N x N alone; 0: the usual sizes */
  const char *emulated_cost;   /* --emulated-cost PATH: NULL: none */
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

/* ---- environment ----------------------------------------------------------------- */

typedef struct bench_env {
  options opt;
  bench_device dev;
  double peak_gbps;        /* for the memory floor */
  const char *peak_source; /* "device_info" or "measured_copy" */
  double peak_gflops;      /* for the compute floor: the calibrated FMA rate; 0: unknown */
  plm_profiler *profiler;  /* with --profile */
  progress_bar bar;        /* the cases done, on a terminal */
  int64_t cases_done;
} bench_env;

/* Time one enqueue (fn) on the stream with a pair of events, in microseconds. */
typedef bool (*enqueue_fn)(bench_env *env, void *state);

static bool time_once(bench_env *env, enqueue_fn fn, void *state, double *us) {
  BENCH_CALL("timing", plm_event_record(env->dev.start, env->dev.stream));
  if (!fn(env, state)) return false;
  BENCH_CALL("timing", plm_event_record(env->dev.end, env->dev.stream));
  BENCH_CALL("timing", plm_event_synchronize(env->dev.end));
  float ms = 0;
  BENCH_CALL("timing", plm_event_elapsed_ms(env->dev.start, env->dev.end, &ms));
  *us = (double)ms * 1000.0;
  return true;
}

/* ---- workloads: an op's sample (support/op_sample.h) ---------------------------------- */

/* The most sizes a workload runs at (run_sizes), and 512x512, the product's frame. */
enum { MAX_SIZES = 4, FRAME_SIZE = 512 };

static bool output_tensor(bench_env *env, const plm_shape *shape, plm_tensor *out) {
  BENCH_CALL("setup", plm_tensor_alloc(env->dev.pool, env->dev.stream, shape->dtype, shape->ndim,
                                       shape->dims, out));
  return true;
}

/* The seed of every workload's data (the same bytes on every run and machine). */
enum { BENCH_SEED = 20240611 };

/* What one workload needs at one size: for a workload of the table the tensors of its op's
 * sample and the call that runs them through the op's one dispatch path; for one beside
 * it, the tensors it made (the chain's intermediates, cuBLAS's output); its cost and the
 * elements of its main output (the table's Mel/s). */
typedef struct op_state {
  op_sample_tensors t; /* the sample, made when t.op is set */
  plm_tensor out, mid[2];
  bool has_out;
  int mid_count;
  plm_sobel_entropy_threshold_params fused; /* the unfused chain's three ops' */
  plm_op_cost cost;
  int64_t elements;
} op_state;

/* The sample of op at h x w (an image; h alone for an op of another scale) on the
 * benchmark's stream: its inputs uploaded, nothing else made yet. */
static bool sample_inputs(bench_env *env, const plm__op_desc *op, int64_t h, int64_t w,
                          op_state *s) {
  const plm__op_sample_request request = {.size = h, .width = w, .seed = BENCH_SEED};
  BENCH_CALL(op->name, op_sample_inputs(op, &request, env->dev.pool, env->dev.stream, &s->t));
  return true;
}

/* The outputs of a sample's call, its cost from the op's model on exactly those outputs
 * (sobel's magnitude alone writes a third of its model's outputs), and its main output's
 * elements (the first output made). */
static bool sample_outputs(op_state *s) {
  const plm__op_desc *op = s->t.op;
  BENCH_CALL(op->name, op_sample_outputs(&s->t, 0));
  BENCH_CALL(op->name, plm__op_cost(op, &s->t.call, &s->cost));
  for (int k = op->output_count - 1; k >= 0; k--)
    if (s->t.call.out[k]) s->elements = plm_tensor_numel(s->t.call.out[k]);
  return true;
}

/* A workload's parameters beside its sample's (op_entry's params: "lags=16"), as the
 * text form reads them. */
static bool set_params(const plm__op_desc *op, const char *text, void *params) {
  char copy[128], why[256];
  snprintf(copy, sizeof copy, "%s", text);
  for (char *save = NULL, *item = strtok_r(copy, " ", &save); item;
       item = strtok_r(NULL, " ", &save)) {
    char *value = strchr(item, '=');
    const plm__op_param *p = NULL;
    if (value) *value++ = '\0';
    for (int i = 0; value && i < op->param_count; i++)
      if (strcmp(op->params[i].name, item) == 0) p = &op->params[i];
    if (!p) return bench_fail("%s: '%s' is no key=value of its parameters", op->name, item);
    if (!plm__op_param_parse(p, value, 0, 0, params, why, sizeof why))
      return bench_fail("%s: %s=%s: %s", op->name, item, value, why);
  }
  return true;
}

/* Every table op runs here: its public path (checks, scratch from the pool, kernel). */
static bool table_op_run(bench_env *env, void *state) {
  op_state *s = state;
  BENCH_CALL(s->t.op->name, plm__op_call_public(s->t.op, env->dev.stream, &s->t.call));
  return true;
}

/* The default preset's filter (PLM_PRESET_DEFAULT_PIPELINE: kernel=log:9:1.5 pad=same
 * border=replicate), a large kernel. */
static const char PRESET_LOG_KERNEL[] = "log:9:1.5";

/* Replace input `slot` of a sample's call with an f32 tensor of dims holding taps. */
static bool replace_kernel(bench_env *env, op_state *s, int slot, int ndim, const int64_t *dims,
                           const float *taps, const char *what) {
  plm_tensor *kernel = &s->t.in[slot];
  plm_status status = plm_tensor_free(env->dev.pool, env->dev.stream, kernel);
  s->t.call.in[slot] = NULL; /* until the new kernel is there (op_sample_release frees it) */
  if (status == PLM_OK)
    status = plm_tensor_alloc(env->dev.pool, env->dev.stream, PLM_DTYPE_F32, ndim, dims, kernel);
  if (status == PLM_OK) s->t.call.in[slot] = kernel;
  if (status == PLM_OK)
    status = plm_stream_memcpy(env->dev.stream, kernel->data, taps, plm_tensor_bytes(kernel),
                               PLM_COPY_HOST_TO_DEVICE);
  if (status == PLM_OK) status = plm_stream_synchronize(env->dev.stream);
  if (status != PLM_OK) return bench_fail_call(what, "the kernel", status);
  return true;
}

/* conv2d_9x9: conv2d's sample with the preset's 9x9 LoG in place of its kernel, "same"
 * size, replicate. */
static bool conv2d_log_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!sample_inputs(env, &plm__op_conv2d, h, w, s)) return false;
  float *taps = NULL;
  int kh = 0, kw = 0;
  BENCH_CALL("conv2d_9x9 setup", plm__parse_kernel(PRESET_LOG_KERNEL, NULL, &taps, &kh, &kw));
  const int64_t dims[2] = {kh, kw};
  const bool replaced = replace_kernel(env, s, 1, 2, dims, taps, "conv2d_9x9 setup");
  free(taps);
  if (!replaced) return false;
  plm_conv2d_params *params = &s->t.sample.params.conv2d;
  params->pad_y = kh / 2;
  params->pad_x = kw / 2;
  params->border = PLM_BORDER_REPLICATE;
  return sample_outputs(s);
}

/* sepconv2d_9x9: conv2d_9x9's filter size, border and padding for a 9x9 Gaussian
 * (gauss:9:2, separable) as two 9-tap passes: 18 multiply-adds an output to conv2d's 81. */
static bool sepconv2d_gauss_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!sample_inputs(env, &plm__op_sepconv2d, h, w, s)) return false;
  float *taps = NULL;
  int k = 0;
  BENCH_CALL("sepconv2d_9x9 setup", plm__parse_kernel_1d("kernel_x", "gauss:9:2", &taps, &k));
  const int64_t dims[1] = {k};
  const bool replaced = replace_kernel(env, s, 1, 1, dims, taps, "sepconv2d_9x9 setup") &&
                        replace_kernel(env, s, 2, 1, dims, taps, "sepconv2d_9x9 setup");
  free(taps);
  if (!replaced) return false;
  plm_sepconv2d_params *params = &s->t.sample.params.sepconv2d;
  params->pad_y = params->pad_x = k / 2;
  params->border = PLM_BORDER_REPLICATE;
  return sample_outputs(s);
}

/* cfar_w63: a window whose bands on cuda opt in to more than 48 KiB of shared memory.
 * cfar_w127: the bands' largest window (BAND_WINDOW_MOST, kernels/cuda/cfar_bands.h), 128.0
 * KiB a block, which devices that give a block less (99 KiB: sm_86, sm_89) leave to the
 * summed-area tables. cfar_w129_stack: the smallest window past the bands on every device,
 * the tables. */
static const char CFAR_LARGE_WINDOW[] = "window=63";
static const char CFAR_WIDEST_BANDS_WINDOW[] = "window=127";
static const char CFAR_TABLES_WINDOW[] = "window=129";
enum { CFAR_STACK_FRAMES = 16, CFAR_STACK_SIDE_DIVISOR = 4 };

/* cfar_w129_stack: cfar's sample at h x w, its input described again as 16 frames of
 * (h/4, w/4) (the same bytes, so the same pixels as cfar_w127 at h x w), at window 129. */
static bool cfar_stack_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (h % CFAR_STACK_SIDE_DIVISOR || w % CFAR_STACK_SIDE_DIVISOR)
    return bench_fail("cfar_w129_stack: %lldx%lld is not a multiple of %d a side", (long long)h,
                      (long long)w, CFAR_STACK_SIDE_DIVISOR);
  if (!sample_inputs(env, &plm__op_cfar, h, w, s)) return false;
  plm_tensor *in = &s->t.in[0];
  const int64_t dims[3] = {CFAR_STACK_FRAMES, h / CFAR_STACK_SIDE_DIVISOR,
                           w / CFAR_STACK_SIDE_DIVISOR};
  BENCH_CALL("cfar_w129_stack setup", plm_tensor_wrap(in->ctx, in->data, in->dtype, 3, dims, in));
  if (!set_params(&plm__op_cfar, CFAR_TABLES_WINDOW, &s->t.sample.params)) return false;
  return sample_outputs(s);
}

/* unfused: the fused op's sample (its input and parameters) through the three ops one
 * after another (intermediates allocated once), each op's cost as its descriptor models
 * it. */
static bool unfused_setup(bench_env *env, int64_t h, int64_t w, op_state *s) {
  if (!sample_inputs(env, &plm__op_sobel_entropy_threshold, h, w, s)) return false;
  const plm_tensor *in = &s->t.in[0];
  s->fused = s->t.sample.params.sobel_entropy_threshold;
  plm_shape shape;
  BENCH_CALL("unfused setup", plm_sobel_output(in, &s->fused.sobel, &shape));
  for (; s->mid_count < 2; s->mid_count++)
    if (!output_tensor(env, &shape, &s->mid[s->mid_count])) return false;
  BENCH_CALL("unfused setup", plm_threshold_output(&s->mid[1], &s->fused.threshold, &shape));
  if (!output_tensor(env, &shape, &s->out)) return false;
  s->has_out = true;
  s->elements = plm_tensor_numel(&s->out);
  const plm__op_call parts[3] = {
      {.in = {in}, .out = {NULL, NULL, &s->mid[0]}, .params = &s->fused.sobel},
      {.in = {&s->mid[0]}, .out = {&s->mid[1]}, .params = &s->fused.entropy},
      {.in = {&s->mid[1]}, .out = {&s->out}, .params = &s->fused.threshold}};
  const plm__op_desc *ops3[3] = {&plm__op_sobel, &plm__op_entropy, &plm__op_threshold};
  for (int k = 0; k < 3; k++) {
    plm_op_cost part;
    BENCH_CALL("unfused setup", plm__op_cost(ops3[k], &parts[k], &part));
    s->cost.bytes += part.bytes;
    s->cost.flops += part.flops;
  }
  return true;
}

static bool unfused_run(bench_env *env, void *state) {
  op_state *s = state;
  BENCH_CALL("unfused",
             plm_sobel(env->dev.stream, &s->t.in[0], &s->fused.sobel, NULL, NULL, &s->mid[0]));
  BENCH_CALL("unfused", plm_entropy(env->dev.stream, &s->mid[0], &s->fused.entropy, &s->mid[1]));
  BENCH_CALL("unfused", plm_threshold(env->dev.stream, &s->mid[1], &s->fused.threshold, &s->out));
  return true;
}

/* cuBLAS's SGEMM, the baseline for matmul on cuda (benchmarks/cublas_loader.h). */
static cublas_peer cublas;

/* cublas_sgemm: matmul's sample's n^3 product alone (no bias, no activation) by cuBLAS,
 * on the same stream. */
static bool cublas_setup(bench_env *env, int64_t n, int64_t unused, op_state *s) {
  (void)unused;
  if (!cublas_peer_load(&cublas, env->dev.stream, env->dev.backend))
    return bench_fail("cublas_sgemm: %s", cublas.why);
  if (!sample_inputs(env, &plm__op_matmul, n, n, s)) return false;
  const plm_shape product = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {n, n}};
  if (!output_tensor(env, &product, &s->out)) return false;
  s->has_out = true;
  s->elements = n * n;
  s->cost = (plm_op_cost){.bytes = 12.0 * (double)n * (double)n,
                          .flops = 2.0 * (double)n * (double)n * (double)n};
  return true;
}

static bool cublas_run(bench_env *env, void *state) {
  (void)env;
  op_state *s = state;
  const int n = (int)s->out.dims[0];
  if (!cublas_peer_sgemm(&cublas, CUBLAS_MATH_FP32, n, n, n, s->t.in[0].data, s->t.in[1].data,
                         s->out.data))
    return bench_fail("cublas_sgemm: %s", cublas.why);
  return true;
}

/* A workload: an op of the table (`op`, made from its sample and run by table_op_run) or
 * one beside it (`beside`: the op it is compared with and printed after, with its own
 * setup and run), its seed size and the per-call budget there. The table `ops`
 * below names the workloads with a seed size, a budget, other parameters or a setup of
 * their own; every other op of the op table gets one made from its sample alone
 * (make_workloads), so an op added to the table is measured with nothing written here.
 * The input's dtype and what size counts are the sample's. */
typedef struct op_entry {
  const plm__op_desc *op;     /* NULL: not an op of the table */
  const plm__op_desc *beside; /* op NULL: the table op it is printed after */
  const char *label;          /* the table's and JSON's name; NULL: op->name */
  const char *detail;         /* parameters, for the table */
  const char *params;         /* set over the sample's, as the text form reads them */
  int seed;                   /* the seed size (square); 0: FRAME_SIZE */
  const char *budget_name;    /* the name for the seed budget; NULL: none */
  double budget_lo_us, budget_hi_us;
  /* Its own setup, NULL: its op's sample (with `params`). */
  bool (*setup)(bench_env *env, int64_t h, int64_t w, op_state *s);
  enqueue_fn run; /* NULL: table_op_run */
  int large[2];   /* the larger sizes (quick: the first); {0, 0}: 2048 and 4096 */
  bool cuda_only; /* a peer that exists only on cuda (cuBLAS) */
  /* From the sample (make_workloads): */
  const char *dtype; /* the input's, for the table and JSON */
  const char *scale; /* NULL: an image of size x size; else what size counts ("n", "batch") */
} op_entry;

/* The seed budgets are the (RTX 4090, per call). */
static const op_entry ops[] = {
    {.op = &plm__op_conv2d,
     .detail = "3x3 same",
     .seed = 256,
     .budget_name = "conv2d 256x256 3x3",
     .budget_lo_us = 800,
     .budget_hi_us = 2000},
    {.op = &plm__op_conv2d,
     .label = "conv2d_9x9",
     .detail = "9x9 LoG same",
     .seed = 512,
     .setup = conv2d_log_setup},
    {.op = &plm__op_sepconv2d,
     .label = "sepconv2d_9x9",
     .detail = "9+9 Gaussian same",
     .seed = 512,
     .setup = sepconv2d_gauss_setup},
    {.op = &plm__op_sobel, .detail = "magnitude", .seed = 256},
    {.op = &plm__op_entropy,
     .detail = "w16 value-bins",
     .seed = 512,
     .budget_name = "entropy 512x512 w16",
     .budget_lo_us = 3000,
     .budget_hi_us = 8000},
    {.op = &plm__op_threshold,
     .detail = "> 0.5",
     .seed = 256,
     .budget_name = "image_segmentation 256x256",
     .budget_lo_us = 400,
     .budget_hi_us = 1000},
    {.op = &plm__op_nuc, .detail = "f32 gain, offset", .seed = 512},
    {.op = &plm__op_badpixel, .detail = "1/16 flagged", .seed = 512},
    {.op = &plm__op_background, .detail = "ema, state carried", .seed = 512},
    {.op = &plm__op_abs_diff, .detail = "f32 reference frame", .seed = 512},
    {.op = &plm__op_scale_offset, .detail = "u8 * 0.25 + 10", .seed = 512},
    {.op = &plm__op_cfar, .detail = "w15 g5 k5 mask", .seed = 512},
    {.op = &plm__op_cfar,
     .label = "cfar_w63",
     .detail = "w63 g5 k5 mask, bands",
     .params = CFAR_LARGE_WINDOW,
     .seed = 512},
    {.op = &plm__op_cfar,
     .label = "cfar_w127",
     .detail = "w127 g5 k5 mask, 128 KiB bands",
     .params = CFAR_WIDEST_BANDS_WINDOW,
     .seed = 512},
    {.op = &plm__op_cfar,
     .label = "cfar_w129_stack",
     .detail = "16 frames of H/4 x W/4, w129, tables",
     .seed = 512,
     .setup = cfar_stack_setup},
    {.op = &plm__op_label, .detail = "half foreground, 8-conn", .seed = 512},
    {.op = &plm__op_segment, .detail = "> 0.5, 8-conn, 64k rows", .seed = 512},
    {.op = &plm__op_sobel_entropy_threshold,
     .label = "fused",
     .detail = "sobel>entropy>threshold w16 b64",
     .seed = 512},
    {.beside = &plm__op_sobel_entropy_threshold,
     .label = "unfused",
     .detail = "the same as 3 ops",
     .seed = 512,
     .setup = unfused_setup,
     .run = unfused_run},
    {.op = &plm__op_matmul,
     .detail = "n^3 fp32 +bias relu",
     .seed = 256,
     .budget_name = "matmul 256^3",
     .budget_lo_us = 3000,
     .budget_hi_us = 3000},
    {.beside = &plm__op_matmul,
     .label = "cublas_sgemm",
     .detail = "n^3 fp32, the baseline",
     .seed = 256,
     .setup = cublas_setup,
     .run = cublas_run,
     .cuda_only = true},
    {.op = &plm__op_lstm_cell,
     .detail = "batch x 64 -> 128",
     .seed = 32,
     .budget_name = "lstm_cell 32x64x128",
     .budget_lo_us = 3000,
     .budget_hi_us = 3000},
    {.op = &plm__op_dendritic,
     .detail = "batch x 10x8x16 nmda",
     .seed = 1,
     .budget_name = "dendritic 10x8x16",
     .budget_lo_us = 300,
     .budget_hi_us = 300},
    {.op = &plm__op_vector_add, .detail = "n x n, a + b", .seed = 316},
    {.op = &plm__op_dot, .detail = "n rows of n, f64 sums", .seed = 316},
    {.op = &plm__op_ar_forecast,
     .detail = "1000 pts AR(5) 10 steps",
     .seed = 1,
     .budget_name = "ar_forecast 1000 AR(5) 10",
     .budget_lo_us = 500,
     .budget_hi_us = 500,
     .large = {10000, 100000}},
    /* AR(16): past the lags whose working doubles fit shared memory (the CUDA kernel's
     * scratch path, kernels/cuda/forecast.cu). */
    {.op = &plm__op_ar_forecast,
     .label = "ar_forecast_p16",
     .detail = "1000 pts AR(16) 10 steps",
     .params = "lags=16",
     .seed = 64,
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

/* Every workload: `ops`, then one for each op of the table that has none there and no
 * reason in `unmeasured`, its sample at FRAME_SIZE (its parameters' text its detail). */
enum { MAX_WORKLOADS = OP_COUNT + PLM__OP_COUNT };
static op_entry workloads[MAX_WORKLOADS];
static char generated_details[PLM__OP_COUNT][64];
static int workload_count;

static bool has_workload(const plm__op_desc *op) {
  for (int o = 0; o < OP_COUNT; o++)
    if (entry_op(&ops[o]) == op) return true;
  for (size_t u = 0; u < sizeof unmeasured / sizeof unmeasured[0]; u++)
    if (unmeasured[u].op == op) return true;
  return false;
}

/* The parameters of op's sample as text ("window=16 bins=0"), for a generated detail. */
static void params_text(const plm__op_desc *op, const plm__op_sample *sample, char *text,
                        size_t size) {
  size_t used = 0;
  text[0] = '\0';
  for (int i = 0; i < op->param_count && used < size; i++) {
    char value[64];
    plm__op_param_format(&op->params[i], &sample->params, value, sizeof value);
    used += (size_t)snprintf(text + used, size - used, "%s%s=%s", i ? " " : "", op->params[i].name,
                             value);
  }
}

/* Fill `workloads`, each with its sample's dtype and scale. Fails (why in bench_error()) on a
 * sample the op refuses to describe. */
static bool make_workloads(void) {
  workload_count = 0;
  for (int o = 0; o < OP_COUNT; o++) workloads[workload_count++] = ops[o];
  for (int k = 0; k < PLM__OP_COUNT; k++) {
    const plm__op_desc *op = plm__op_get((plm__op_kind)k);
    if (!has_workload(op)) workloads[workload_count++] = (op_entry){.op = op};
  }
  for (int w = 0; w < workload_count; w++) {
    op_entry *e = &workloads[w];
    const plm__op_sample_request one = {.size = 1};
    plm__op_sample sample;
    BENCH_CALL(entry_name(e), plm__op_sample_make(entry_op(e), &one, &sample, NULL));
    e->dtype = plm_dtype_name(sample.in[0].dtype);
    e->scale = sample.scale;
    if (!e->seed) e->seed = FRAME_SIZE;
    if (!e->detail) {
      char *detail = generated_details[entry_op(e)->kind];
      params_text(entry_op(e), &sample, detail, sizeof generated_details[0]);
      e->detail = detail;
    }
  }
  return true;
}

static void op_state_release(bench_env *env, op_state *s) {
  if (s->t.op) op_sample_release(&s->t);
  if (s->has_out) plm_tensor_free(env->dev.pool, env->dev.stream, &s->out);
  for (int i = 0; i < s->mid_count; i++)
    plm_tensor_free(env->dev.pool, env->dev.stream, &s->mid[i]);
  plm_stream_synchronize(env->dev.stream);
  memset(s, 0, sizeof *s);
}

/* A workload at h x w: its setup, or its op's sample with its parameters. */
static bool setup_workload(bench_env *env, const op_entry *e, int64_t h, int64_t w, op_state *s) {
  if (e->setup) return e->setup(env, h, w, s);
  if (!sample_inputs(env, e->op, h, w, s)) return false;
  if (e->params && !set_params(e->op, e->params, &s->t.sample.params)) return false;
  return sample_outputs(s);
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

enum { MAX_RESULTS = MAX_WORKLOADS * MAX_SIZES };

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
    BENCH_CALL("profile",
               plm_profiler_begin(env->profiler, env->dev.stream, name, i, &s->cost, &mark));
    if (!run(env, s)) return false;
    BENCH_CALL("profile", plm_profiler_end(env->profiler, env->dev.stream, &mark));
    BENCH_CALL("profile", plm_stream_synchronize(env->dev.stream));
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
  if (plm_emu_count_begin(label) != 0) return bench_fail("emulated cost: cannot count %s", label);
  bool ok = run(env, s);
  plm_status status = plm_stream_synchronize(env->dev.stream);
  plm_emu_count_end();
  if (!ok) return false;
  if (status != PLM_OK) return bench_fail_call("emulated cost", "plm_stream_synchronize", status);
  return true;
#else
  (void)env, (void)op, (void)size, (void)s;
  return bench_fail("--emulated-cost needs a -DPLUME_CUDA=EMU build");
#endif
}

static bool run_op(bench_env *env, const op_entry *op, int size, result *r) {
  const enqueue_fn run = op->run ? op->run : table_op_run;
  int warmups = env->opt.size == RUN_SMOKE ? 1 : 3;
  int runs = env->opt.size == RUN_SMOKE ? 3 : 20;
  op_state s;
  memset(&s, 0, sizeof s);
  double times[20];
  bool ok = setup_workload(env, op, size, size, &s);
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
  double pixels = (double)cost_copy.elements; /* pixels, or elements */
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
  BENCH_CALL("copy bandwidth", plm_stream_memcpy(env->dev.stream, c->dst, c->src, c->bytes,
                                                 PLM_COPY_DEVICE_TO_DEVICE));
  return true;
}

static bool measure_copy_bandwidth(bench_env *env) {
  copy_state c = {.bytes = env->opt.size == RUN_SMOKE ? ((size_t)4 << 20) : ((size_t)64 << 20)};
  BENCH_CALL("copy bandwidth", plm_pool_alloc(env->dev.pool, c.bytes, env->dev.stream, &c.src));
  plm_status status = plm_pool_alloc(env->dev.pool, c.bytes, env->dev.stream, &c.dst);
  if (status != PLM_OK) {
    plm_pool_free(env->dev.pool, c.src, env->dev.stream);
    return bench_fail_call("copy bandwidth", "plm_pool_alloc", status);
  }
  status = plm_stream_memset(env->dev.stream, c.src, 1, c.bytes);
  bool ok = status == PLM_OK || bench_fail_call("copy bandwidth", "plm_stream_memset", status);
  double times[6];
  for (int i = 0; ok && i < 6; i++) ok = time_once(env, copy_run, &c, &times[i]);
  plm_pool_free(env->dev.pool, c.src, env->dev.stream);
  plm_pool_free(env->dev.pool, c.dst, env->dev.stream);
  plm_stream_synchronize(env->dev.stream);
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
  /* Both from the fused op's sample: the same input and parameters. */
  const op_entry fused = {.op = &plm__op_sobel_entropy_threshold};
  bool ok = setup_workload(env, &fused, size, size, &f) && unfused_setup(env, size, size, &u);
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
  json_t *doc = bench_json_document("ops", env->dev.backend, &env->dev.info, env->opt.size);
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
  snprintf(title, sizeof title, "bench_ops (%s)", plm_backend_name(env->dev.backend));
  const plm_profile_write_options write = {.title = title,
                                           .ab = n ? bars : NULL,
                                           .ab_count = n,
                                           .ab_unit = "us (median of the fusion pairs)",
                                           .ab_higher_is_better = false};
  BENCH_CALL("profile", plm_profiler_write(env->profiler, env->opt.profile_dir, &write));
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
  if (op->cuda_only && !cublas_peer_load(&cublas, env->dev.stream, env->dev.backend))
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
  for (int o = 0; o < workload_count; o++)
    if (wants_op(env, &workloads[o])) cases += run_sizes(env, &workloads[o], sizes);
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
    for (int o = 0; o < workload_count; o++) {
      if (entry_op(&workloads[o]) != table_op) continue;
      measured = true;
      if (wants_op(env, &workloads[o]) && !run_workload(env, &workloads[o], rs, count))
        return false;
    }
    for (size_t u = 0; !measured && u < sizeof unmeasured / sizeof unmeasured[0]; u++) {
      if (unmeasured[u].op != table_op) continue;
      measured = true;
      if (env->opt.only_op) continue;
      progress_clear(&env->bar);
      printf("%s: not measured here: %s\n", table_op->name, unmeasured[u].why);
    }
    if (!measured)
      return bench_fail("%s: an op of the table with no workload in bench_ops", table_op->name);
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
  if (!bench_device_open(env->opt.backend, &env->dev)) return false;
  /* The profiler (calibrating, or loading the cached calibration) for --profile, and for
   * the FMA rate of the compute floor in any case. */
  BENCH_CALL("setup", plm_profiler_create(env->dev.ctx, NULL, &env->profiler));
  plm_profile_calibration calibration;
  BENCH_CALL("setup", plm_profiler_calibration(env->profiler, &calibration));
  env->peak_gflops = calibration.fma_gflops;
  if (!env->opt.profile_dir) {
    plm_profiler_destroy(env->profiler);
    env->profiler = NULL;
  }
  if (env->dev.backend == PLM_BACKEND_CUDA && env->dev.info.memory_bandwidth_gbps > 0) {
    env->peak_gbps = env->dev.info.memory_bandwidth_gbps;
    env->peak_source = "device_info";
    return true;
  }
  env->peak_source = "measured_copy";
  return measure_copy_bandwidth(env);
}

static void close_env(bench_env *env) {
  cublas_peer_release(&cublas);
  plm_profiler_destroy(env->profiler); /* before its context */
  bench_device_close(&env->dev, "bench_ops");
}

/* --op NAME: one of the table's operations. */
static int parse_op(const char *name, void *only_op) {
  bool known = false;
  for (int o = 0; o < workload_count; o++) known |= strcmp(name, entry_name(&workloads[o])) == 0;
  if (!known) {
    fprintf(stderr, "bench_ops: --op '%s': expected one of", name);
    for (int o = 0; o < workload_count; o++)
      fprintf(stderr, "%s %s", o ? "," : "", entry_name(&workloads[o]));
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
  for (int o = 0; o < workload_count; o++)
    if (!workloads[o].cuda_only) printf("%s\n", entry_name(&workloads[o]));
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
  if (!make_workloads()) {
    fprintf(stderr, "bench_ops: %s\n", bench_error());
    return BENCH_EXIT_FAILURE;
  }
  int code = bench_start(&cli, argc, argv);
  if (code != BENCH_RUN) return code;
  if (env.opt.emulated_cost && !plm_build_info_get()->cuda_emulated) {
    fprintf(stderr,
            "bench_ops: --emulated-cost needs a build on the CUDA emulator (-DPLUME_CUDA=EMU)\n");
    return BENCH_EXIT_USAGE;
  }
  if (env.opt.emulated_device && !env.opt.emulated_cost) {
    fprintf(stderr, "bench_ops: --emulated-device goes with --emulated-cost\n");
    return BENCH_EXIT_USAGE;
  }
#if PLUME_EMU_COUNT
  if (!env.opt.emulated_device) env.opt.emulated_device = "H100";
  if (!plm_emu_device_model_find(env.opt.emulated_device)) {
    fprintf(stderr, "bench_ops: --emulated-device '%s': expected H100 or H200\n",
            env.opt.emulated_device);
    return BENCH_EXIT_USAGE;
  }
#endif
  if (!open_env(&env)) {
    fprintf(stderr, "bench_ops: %s\n", bench_error());
    close_env(&env);
    return BENCH_EXIT_FAILURE;
  }
  if (env.opt.emulated_cost && env.dev.backend != PLM_BACKEND_CUDA) {
    fprintf(stderr, "bench_ops: --emulated-cost needs the cuda backend (--backend cuda)\n");
    close_env(&env);
    return BENCH_EXIT_USAGE;
  }
  bench_print_header("bench_ops", env.dev.backend, &env.dev.info, env.opt.size);
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
    fprintf(stderr, "bench_ops: %s\n", bench_error());
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
    fprintf(stderr, "bench_ops: %s\n", bench_error());
    exit_code = BENCH_EXIT_FAILURE;
  }
  close_env(&env);
  return exit_code;
}

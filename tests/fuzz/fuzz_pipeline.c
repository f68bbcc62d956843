/* tests/fuzz/fuzz_pipeline.c: text pipelines (plm_pipeline_parse_with_tensors, plume/
 * pipeline.h) parsed, compiled and run once on the host backend.
 *
 * Feeds: the input's first byte picks the frame's dtype (its value modulo 3: u8, u16,
 * f32; the frame is 16 x 16, with a bright blob so that thresholds and labels find
 * something) and the plan's flags (its value / 3 modulo 4: none, NO_FUSION,
 * ALLOCATE_PER_RUN, NO_REUSE | SYNCHRONOUS_STEPS); the rest, up to its first NUL, is the
 * text. The caller's tensors, for the ops whose operands are tensors (matmul, dot,
 * vector_add, dendritic, lstm_cell, conv2d kernel=@k3): @m16 f32 (16, 16), @v16 f32
 * (16), @h4 f32 (16, 4), @k3 f32 (3, 3), @w3 f32 (2, 2, 16). pipeline.dict, the
 * dictionary of the ctest run, is written by the build: pipeline-grammar.dict's entries
 * and every op name, key and choice of the op table (pipeline_dict.c).
 * Checks: no crash, hang, leak or undefined behaviour whatever the text; a failure at
 * any stage is a status with a message (plm_last_error) and nothing left allocated; a
 * compiled pipeline describes itself, runs one frame into outputs of the shapes it
 * reports, and gives back every byte it took from its pool (bytes_in_use 0 after
 * destroy). Its memory comes from a pool of 64 MiB, so a text asking for a huge table
 * fails with PLM_ERR_OUT_OF_MEMORY instead of exhausting the machine; outputs over
 * 64 MiB are not run. With PLUME_FUZZ_VERBOSE set, each input's text and how far it got
 * are printed (to see what a seed exercises).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plume/context.h"
#include "plume/pipeline.h"
#include "plume/pool.h"
#include "plume/stream.h"

enum { SIDE = 16, POOL_BYTES = 64 << 20, MAX_OUTPUT_BYTES = 64 << 20 };

static plm_context *ctx;
static plm_stream *stream;
static plm_pool *pool;

static float m16[16 * 16], v16[16], h4[16 * 4], k3[3 * 3], w3[2 * 2 * 16];
static const plm_named_tensor tensors[] = {
    {"m16", {PLM_DTYPE_F32, 2, {16, 16}}, m16}, {"v16", {PLM_DTYPE_F32, 1, {16}}, v16},
    {"h4", {PLM_DTYPE_F32, 2, {16, 4}}, h4},    {"k3", {PLM_DTYPE_F32, 2, {3, 3}}, k3},
    {"w3", {PLM_DTYPE_F32, 3, {2, 2, 16}}, w3}};

static const unsigned plan_flags[4] = {PLM_PLAN_DEFAULT, PLM_PLAN_NO_FUSION,
                                       PLM_PLAN_ALLOCATE_PER_RUN,
                                       PLM_PLAN_NO_REUSE | PLM_PLAN_SYNCHRONOUS_STEPS};

/* The frame's pixel (i, j): a slope under a bright 4 x 4 blob at (5..8, 9..12). */
static double pixel(int i, int j) {
  const int blob = i >= 5 && i <= 8 && j >= 9 && j <= 12;
  return (i * 3 + j * 5) % 40 + (blob ? 200 : 0);
}

static void fill(float *values, int n, double scale) {
  for (int i = 0; i < n; i++) values[i] = (float)(scale * ((i * 37) % 17 - 8));
}

static void must(plm_status status, const char *what) {
  if (status != PLM_OK) {
    fprintf(stderr, "fuzz_pipeline: %s: %s\n", what, plm_last_error());
    abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fill(m16, 16 * 16, 0.05);
  fill(v16, 16, 0.1);
  fill(h4, 16 * 4, 0.1);
  fill(k3, 3 * 3, 0.125);
  fill(w3, 2 * 2 * 16, 0.05);
  must(plm_context_create(&(plm_context_config){.backend = PLM_BACKEND_HOST}, &ctx), "context");
  must(plm_stream_create(ctx, 0, &stream), "stream");
  plm_pool_config cfg = plm_pool_config_default();
  cfg.byte_limit = POOL_BYTES;
  must(plm_pool_create(ctx, &cfg, &pool), "pool");
  return 0;
}

/* A failure: a status and a message. */
static void check_failure(plm_status status) {
  if (status == PLM_OK || plm_last_error()[0] == '\0') abort();
}

static void say(const char *stage, plm_status status) {
  if (getenv("PLUME_FUZZ_VERBOSE"))
    fprintf(stderr, "  %s: %s\n", stage, status == PLM_OK ? "ok" : plm_last_error());
}

static void describe(const plm_pipeline *pl) {
  size_t needed = 0;
  must(plm_pipeline_describe(pl, NULL, 0, &needed), "describe");
  char *text = malloc(needed);
  if (!text) abort();
  must(plm_pipeline_describe(pl, text, needed, NULL), "describe");
  if (strlen(text) + 1 != needed) abort();
  free(text);
}

/* The bytes of a shape the pipeline reports (its tensors' bytes fit a size_t). */
static size_t shape_bytes(const plm_shape *shape) {
  size_t n = plm_dtype_size(shape->dtype);
  for (int d = 0; d < shape->ndim; d++) n *= (size_t)shape->dims[d];
  return n;
}

/* Fill an input frame: the pixels above, then the same again for any further frames. */
static void fill_frame(const plm_shape *shape, void *data) {
  const size_t n = shape_bytes(shape) / plm_dtype_size(shape->dtype);
  for (size_t k = 0; k < n; k++) {
    const double v = pixel((int)(k / SIDE % SIDE), (int)(k % SIDE));
    if (shape->dtype == PLM_DTYPE_U8) ((uint8_t *)data)[k] = (uint8_t)v;
    if (shape->dtype == PLM_DTYPE_U16) ((uint16_t *)data)[k] = (uint16_t)(v * 40);
    if (shape->dtype == PLM_DTYPE_F32) ((float *)data)[k] = (float)(v / 16);
  }
}

enum { MAX_IO = 8 };

/* The pipeline's inputs (filled) or outputs as tensors of device memory (host memory on
 * the host backend); false, with nothing allocated, when the outputs are too large. */
static int make_tensors(const plm_pipeline *pl, int count, int outputs, plm_tensor *t) {
  plm_shape shapes[MAX_IO];
  size_t total = 0;
  for (int i = 0; i < count; i++) {
    must((outputs ? plm_pipeline_output_shape : plm_pipeline_input_shape)(pl, i, &shapes[i]),
         "shape");
    total += shape_bytes(&shapes[i]);
  }
  if (total > MAX_OUTPUT_BYTES) return 0;
  for (int i = 0; i < count; i++) {
    void *data = NULL;
    must(plm_device_alloc(ctx, shape_bytes(&shapes[i]), &data), "tensor");
    if (!outputs) fill_frame(&shapes[i], data);
    must(plm_tensor_wrap(ctx, data, shapes[i].dtype, shapes[i].ndim, shapes[i].dims, &t[i]),
         "tensor");
  }
  return 1;
}

static void free_tensors(int count, plm_tensor *t) {
  for (int i = 0; i < count; i++) must(plm_device_free(ctx, t[i].data), "free");
}

/* Run one frame; a run may fail (ALLOCATE_PER_RUN: the pool's limit) with a message. */
static void run_once(plm_pipeline *pl) {
  int inputs = 0, outputs = 0;
  must(plm_pipeline_io_count(pl, &inputs, &outputs), "io count");
  if (inputs < 1 || outputs < 1 || inputs > MAX_IO || outputs > MAX_IO) abort();
  plm_tensor in[MAX_IO], out[MAX_IO];
  if (!make_tensors(pl, inputs, 0, in)) abort();
  if (make_tensors(pl, outputs, 1, out)) {
    plm_status status = plm_pipeline_run(pl, in, out, stream);
    say("run", status);
    if (status != PLM_OK) check_failure(status);
    must(plm_stream_synchronize(stream), "synchronize");
    free_tensors(outputs, out);
  }
  free_tensors(inputs, in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const plm_dtype dtypes[3] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  if (size < 1) return 0;
  const plm_dtype dtype = dtypes[data[0] % 3];
  const plm_plan_config cfg = {.flags = plan_flags[data[0] / 3 % 4], .pool = pool};
  char *text = malloc(size);
  if (!text) abort();
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';

  plm_pipeline *pl = NULL;
  const int64_t dims[2] = {SIDE, SIDE};
  plm_status status = plm_pipeline_parse_with_tensors(
      ctx, text, dtype, 2, dims, tensors, (int)(sizeof tensors / sizeof tensors[0]), &pl);
  if (getenv("PLUME_FUZZ_VERBOSE")) fprintf(stderr, "%s\n", text);
  free(text);
  say("parse", status);
  if (status != PLM_OK) {
    check_failure(status);
    if (pl) abort();
    return 0;
  }
  status = plm_pipeline_compile(pl, &cfg);
  say("compile", status);
  if (status == PLM_OK) {
    describe(pl);
    run_once(pl);
  } else {
    check_failure(status);
  }
  must(plm_pipeline_destroy(pl), "destroy");
  plm_pool_stats stats;
  must(plm_pool_stats_get(pool, &stats), "pool stats");
  if (stats.bytes_in_use != 0) {
    fprintf(stderr, "fuzz_pipeline: %llu bytes left in use in the pool\n",
            (unsigned long long)stats.bytes_in_use);
    abort();
  }
  return 0;
}

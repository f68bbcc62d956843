/* tests/test_op_samples.c: every op of the table (ops/op_desc.h) from its sample hook, as
 * PyTorch's OpInfo tests run every op from its sample_inputs. Every descriptor has a sample
 * (an op added to the table without one fails here); each sample, for every dtype its
 * first input takes, is a call the op's checks accept, with the outputs it names and the
 * state its op carries; the same request gives the same bytes and another seed others; a
 * request the op cannot take is refused. Then each op runs from its sample on the backend
 * under test and on the host backend, and their outputs are compared: the same bits,
 * except for the ops whose headers say that the backends add in different orders (the
 * table `tolerances` below, each with the header's bound). On host the two runs are the
 * host against itself; the .cuda twin (the emulated GPU in CI) is the cross-backend test. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/op_desc.h"
#include "support/op_sample.h"
#include "tensor/tensor_internal.h"

/* The dtypes a slot's mask takes, in plm_dtype order; returns how many. */
static int mask_dtypes(unsigned mask, plm_dtype dtypes[PLM_DTYPE_F64]) {
  int n = 0;
  for (int d = PLM_DTYPE_U8; d <= PLM_DTYPE_F64; d++)
    if (mask & (1u << d)) dtypes[n++] = (plm_dtype)d;
  return n;
}

/* The sizes the ops run at: a small odd frame, and one of several CUDA blocks a side (an
 * image's (size, width); any other op's scale, size). */
static const int64_t sizes[][2] = {{19, 23}, {70, 133}};

static plm__op_sample_request request_of(const plm__op_desc *op, plm_dtype dtype, uint64_t seed,
                                         int size) {
  return (plm__op_sample_request){.size = sizes[size][0],
                                  .width = sizes[size][1],
                                  .dtype = dtype,
                                  .seed = seed * 0x9e3779b9u + (uint64_t)op->kind};
}

static size_t shape_bytes(const plm_shape *shape) {
  const plm_tensor described = plm__tensor_describe(NULL, shape);
  return plm_tensor_bytes(&described);
}

/* ---- the samples ---------------------------------------------------------------------- */

/* sample's inputs are slots of op in their masks, its outputs a mask of op's slots, its
 * state op's, and the call of its descriptions passes the op's checks. */
static void check_valid(const plm__op_desc *op, const plm__op_sample_request *request,
                        const plm__op_sample *sample) {
  const char *name = op->name, *dtype = plm_dtype_name(sample->in[0].dtype);
  plm_tensor in[PLM__OP_MAX_IN];
  plm__op_call call = {.params = &sample->params};
  for (int k = 0; k < PLM__OP_MAX_IN; k++) {
    const plm_shape *shape = &sample->in[k];
    if (shape->ndim == 0) {
      ck_assert_msg(k >= op->input_count || op->inputs[k].optional, "%s %s: input %d absent", name,
                    dtype, k);
      continue;
    }
    ck_assert_msg(k < op->input_count, "%s: a sample of input %d, past its slots", name, k);
    ck_assert_msg(op->inputs[k].dtypes & (1u << shape->dtype), "%s: input %s is %s", name,
                  op->inputs[k].name, plm_dtype_name(shape->dtype));
    in[k] = plm__tensor_describe(NULL, shape);
    call.in[k] = &in[k];
  }
  if (request->dtype) ck_assert_int_eq(sample->in[0].dtype, request->dtype);
  if (!sample->scale) {
    ck_assert_int_eq(sample->in[0].dims[0], request->size);
    ck_assert_int_eq(sample->in[0].dims[1], request->width ? request->width : request->size);
  }
  ck_assert_msg(sample->outputs != 0 && sample->outputs < (1u << op->output_count),
                "%s: outputs 0x%x", name, sample->outputs);
  plm_shape shapes[PLM__OP_MAX_OUT];
  plm_status status = plm__op_shapes(op, &call, shapes, NULL);
  ck_assert_msg(status == PLM_OK, "%s %s: the sample is refused: %s", name, dtype,
                plm_last_error());
  if (sample->state.ndim > 0) {
    ck_assert_msg(op->state_shape, "%s: a state for a stateless op", name);
    plm_shape state;
    op->state_shape(&call, &state);
    ck_assert_msg(memcmp(&state, &sample->state, sizeof state) == 0, "%s: the state's shape", name);
  }
}

/* Fill the buffers of sample's shapes from request; returns them (malloc'd, NULL absent). */
static plm__op_sample_data filled(const plm__op_desc *op, const plm__op_sample_request *request,
                                  const plm__op_sample *sample) {
  plm__op_sample_data data = {.state = NULL};
  for (int k = 0; k < PLM__OP_MAX_IN; k++)
    if (sample->in[k].ndim > 0)
      ck_assert_ptr_nonnull(data.in[k] = malloc(shape_bytes(&sample->in[k])));
  if (sample->state.ndim > 0)
    ck_assert_ptr_nonnull(data.state = malloc(shape_bytes(&sample->state)));
  plm__op_sample again;
  PLM_CHECK_OK(plm__op_sample_make(op, request, &again, &data));
  ck_assert_msg(memcmp(&again, sample, sizeof again) == 0, "%s: filling changed the sample",
                op->name);
  return data;
}

static void free_data(plm__op_sample_data *data) {
  for (int k = 0; k < PLM__OP_MAX_IN; k++) free(data->in[k]);
  free(data->state);
}

/* Whether a and b hold the same bytes for every shape of sample. */
static bool same_data(const plm__op_sample *sample, const plm__op_sample_data *a,
                      const plm__op_sample_data *b) {
  bool same =
      sample->state.ndim == 0 || memcmp(a->state, b->state, shape_bytes(&sample->state)) == 0;
  for (int k = 0; k < PLM__OP_MAX_IN; k++)
    if (sample->in[k].ndim > 0)
      same &= memcmp(a->in[k], b->in[k], shape_bytes(&sample->in[k])) == 0;
  return same;
}

START_TEST(test_every_op_has_a_valid_and_deterministic_sample) {
  for (int kind = 0; kind < PLM__OP_COUNT; kind++) {
    const plm__op_desc *op = plm__op_get((plm__op_kind)kind);
    ck_assert_msg(op->sample, "%s has no sample (ops/op_desc.h, \"samples\")", op->name);
    plm_dtype dtypes[PLM_DTYPE_F64];
    const int count = mask_dtypes(op->inputs[0].dtypes, dtypes);
    for (int d = -1; d < count; d++) { /* -1: the op's usual dtype */
      const plm__op_sample_request request = request_of(op, d < 0 ? 0 : dtypes[d], 1, 0);
      plm__op_sample sample;
      PLM_CHECK_OK(plm__op_sample_make(op, &request, &sample, NULL));
      check_valid(op, &request, &sample);
      plm__op_sample_data first = filled(op, &request, &sample);
      plm__op_sample_data second = filled(op, &request, &sample);
      ck_assert_msg(same_data(&sample, &first, &second), "%s: the same seed, other bytes",
                    op->name);
      plm__op_sample_request other = request;
      other.seed++;
      plm__op_sample_data third = filled(op, &other, &sample);
      ck_assert_msg(!same_data(&sample, &first, &third), "%s: another seed, the same bytes",
                    op->name);
      free_data(&first);
      free_data(&second);
      free_data(&third);
    }
    /* A square of one element is a sample too. */
    plm__op_sample sample;
    const plm__op_sample_request one = {.size = 1, .seed = 3};
    PLM_CHECK_OK(plm__op_sample_make(op, &one, &sample, NULL));
    check_valid(op, &one, &sample);
  }
}
END_TEST

START_TEST(test_requests_an_op_cannot_take_are_refused) {
  plm__op_sample sample;
  const plm__op_sample_request empty = {.size = 0};
  PLM_CHECK_FAILS(plm__op_sample_make(&plm__op_threshold, &empty, &sample, NULL),
                  PLM_ERR_INVALID_ARG, "size 0");
  const plm__op_sample_request narrow = {.size = 4, .width = -1};
  PLM_CHECK_FAILS(plm__op_sample_make(&plm__op_threshold, &narrow, &sample, NULL),
                  PLM_ERR_INVALID_ARG, "4 x -1");
  const plm__op_sample_request u8 = {.size = 4, .dtype = PLM_DTYPE_U8};
  PLM_CHECK_FAILS(plm__op_sample_make(&plm__op_matmul, &u8, &sample, NULL), PLM_ERR_INVALID_ARG,
                  "a is f32, not u8");
}
END_TEST

/* ---- every op on the backend under test against the host ------------------------------ */

/* The ops whose backends may round differently (they sum in other orders, or nvcc may
 * contract a * b + c), each with the bound its own test holds against float64, here
 * |a - b| <= relative * (1 + max(|a|, |b|)): the samples' values are positive, so the
 * sums of magnitudes those bounds scale by are the results themselves. Every other op
 * gives the same bits on both backends: its header says so (abs_diff, badpixel, cfar,
 * nuc, background, vector_add), its shared per-element code rounds every operation as
 * written (sobel, entropy's integer table, the fused op; kernels/common), or it counts
 * (threshold, label, segment; regions' f64 sums of the sample's intensities, which lie
 * on a 2^-24 grid, are exact in any order). */
static const struct {
  const char *op;
  double relative;
} tolerances[] = {
    {"conv2d", 1e-4},      /* f32 sums (tests/test_conv.c) */
    {"matmul", 1e-5},      /* plume/matmul.h: FP32 */
    {"lstm_cell", 1e-5},   /* plume/lstm.h */
    {"dendritic", 1e-5},   /* plume/dendritic.h */
    {"dot", 1e-12},        /* plume/vector.h: f64 sums, the backends' orders differ */
    {"ar_forecast", 1e-4}, /* tests/test_forecast.c */
};

static double tolerance_of(const plm__op_desc *op) {
  for (size_t i = 0; i < sizeof tolerances / sizeof tolerances[0]; i++)
    if (strcmp(tolerances[i].op, op->name) == 0) return tolerances[i].relative;
  return 0.0;
}

static double element(plm_dtype dtype, const void *data, int64_t i) {
  switch (dtype) {
    case PLM_DTYPE_U8: return ((const uint8_t *)data)[i];
    case PLM_DTYPE_U16: return ((const uint16_t *)data)[i];
    case PLM_DTYPE_I32: return ((const int32_t *)data)[i];
    case PLM_DTYPE_F32: return ((const float *)data)[i];
    default: return ((const double *)data)[i];
  }
}

/* One run of op's sample of request on stream (pool's), every output first set to the
 * same garbage; returns each output's bytes (malloc'd) in got. */
static void run_sample(const plm__op_desc *op, const plm__op_sample_request *request,
                       plm_pool *pool, plm_stream *stream, void *got[PLM__OP_MAX_OUT],
                       plm_tensor shapes[PLM__OP_MAX_OUT]) {
  op_sample_tensors t;
  PLM_CHECK_OK(op_sample_inputs(op, request, pool, stream, &t));
  PLM_CHECK_OK(op_sample_outputs(&t, (1u << op->output_count) - 1));
  for (int k = 0; k < op->output_count; k++)
    PLM_CHECK_OK(plm_stream_memset(stream, t.out[k].data, 0x5a, plm_tensor_bytes(&t.out[k])));
  PLM_CHECK_OK(plm__op_call_public(op, stream, &t.call));
  for (int k = 0; k < op->output_count; k++) {
    const size_t bytes = plm_tensor_bytes(&t.out[k]);
    ck_assert_ptr_nonnull(got[k] = malloc(bytes));
    PLM_CHECK_OK(plm_stream_memcpy(stream, got[k], t.out[k].data, bytes, PLM_COPY_DEVICE_TO_HOST));
    shapes[k] = t.out[k];
  }
  PLM_CHECK_OK(plm_stream_synchronize(stream));
  op_sample_release(&t);
}

/* The elements of output `slot` that differ beyond the op's tolerance; prints the first. */
static int64_t differences(const plm__op_desc *op, int slot, const plm_tensor *shape,
                           const void *got, const void *want) {
  const double tolerance = tolerance_of(op);
  const int64_t count = plm_tensor_numel(shape);
  int64_t bad = 0;
  for (int64_t i = 0; i < count; i++) {
    const double a = element(shape->dtype, got, i), b = element(shape->dtype, want, i);
    const bool same = a == b || (isnan(a) && isnan(b)) ||
                      fabs(a - b) <= tolerance * (1.0 + fmax(fabs(a), fabs(b)));
    if (!same && bad++ == 0)
      printf("%s %s: element %lld: %.17g on %s, %.17g on host\n", op->name, op->outputs[slot].name,
             (long long)i, a, plm_backend_name(plm_test_backend), b);
  }
  return bad;
}

START_TEST(test_every_op_gives_the_host_result) {
  plm_context *host;
  plm_pool *host_pool;
  plm_stream *host_stream;
  PLM_CHECK_OK(plm_context_create(&(plm_context_config){.backend = PLM_BACKEND_HOST}, &host));
  PLM_CHECK_OK(plm_context_default_pool(host, &host_pool));
  PLM_CHECK_OK(plm_stream_create(host, PLM_STREAM_DEFAULT, &host_stream));
  int runs = 0, failed = 0;
  for (int kind = 0; kind < PLM__OP_COUNT; kind++) {
    const plm__op_desc *op = plm__op_get((plm__op_kind)kind);
    plm_dtype dtypes[PLM_DTYPE_F64];
    const int count = mask_dtypes(op->inputs[0].dtypes, dtypes);
    for (int run = 0; run < count * 2; run++) {
      const int d = run / 2;
      const plm__op_sample_request request = request_of(op, dtypes[d], 7, run % 2);
      void *got[PLM__OP_MAX_OUT] = {0}, *want[PLM__OP_MAX_OUT] = {0};
      plm_tensor shapes[PLM__OP_MAX_OUT], host_shapes[PLM__OP_MAX_OUT];
      run_sample(op, &request, plm_test_pool, plm_test_stream, got, shapes);
      run_sample(op, &request, host_pool, host_stream, want, host_shapes);
      for (int k = 0; k < op->output_count; k++) {
        ck_assert_int_eq(plm_tensor_numel(&shapes[k]), plm_tensor_numel(&host_shapes[k]));
        const int64_t bad = differences(op, k, &shapes[k], got[k], want[k]);
        if (bad)
          printf("%s %s %lldx%lld: %lld elements of %s differ from the host's\n", op->name,
                 plm_dtype_name(dtypes[d]), (long long)request.size, (long long)request.width,
                 (long long)bad, op->outputs[k].name);
        failed += bad != 0;
        free(got[k]);
        free(want[k]);
      }
      runs++;
    }
  }
  printf("every op from its sample: %d runs, each against the host's\n", runs);
  ck_assert_msg(failed == 0, "%d outputs differ from the host's (above)", failed);
  PLM_CHECK_OK(plm_stream_destroy(host_stream));
  PLM_CHECK_OK(plm_context_destroy(host));
}
END_TEST

static Suite *op_samples_suite(void) {
  Suite *s = suite_create("op_samples");
  TCase *samples = tcase_create("samples");
  tcase_add_test(samples, test_every_op_has_a_valid_and_deterministic_sample);
  tcase_add_test(samples, test_requests_an_op_cannot_take_are_refused);
  suite_add_tcase(s, samples);
  TCase *run = tcase_create("run");
  plm_test_add_fixture(run);
  plm_test_add_stream_fixture(run);
  tcase_set_timeout(run, 600);
  tcase_add_test(run, test_every_op_gives_the_host_result);
  suite_add_tcase(s, run);
  return s;
}

int main(void) {
  return plm_test_main(op_samples_suite);
}

/* tests/harness_unary.c: the shared cases of unary element-wise ops into f32
 * (tests/harness_unary.h). */
#define _POSIX_C_SOURCE 200809L

#include "harness_unary.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An f32 input value: a multiple of 1/256 in (-4096, 4096), 21 significant bits at most. */
static float f32_value(uint64_t r, int64_t i, const void *user) {
  (void)i, (void)user;
  return (float)((int64_t)(r % (1u << 21)) - (1 << 20)) / 256.0f;
}

/* Run the op on random inputs of dims, into a new output or in place (f32 only), the
 * tensors at their allocations' start or shifted one element past it. Returns the
 * mismatches. */
static int64_t run_case(const plm_test_unary_op *op, plm_dtype dtype, int ndim, const int64_t *dims,
                        bool in_place, bool shifted, const void *params, uint64_t seed) {
  plm_tensor in_storage, out_storage, out;
  plm_tensor in = plm_test_alloc_shifted(dtype, ndim, dims, shifted, &in_storage);
  if (!in_place) out = plm_test_alloc_shifted(PLM_DTYPE_F32, ndim, dims, shifted, &out_storage);
  const int64_t count = plm_tensor_numel(&in);
  double *x = malloc((size_t)count * sizeof *x);
  float *got = malloc((size_t)count * sizeof *got);
  ck_assert(x && got);
  void *host = plm_test_values(dtype, count, seed, f32_value, NULL, x);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, host, plm_tensor_bytes(&in),
                                 PLM_COPY_HOST_TO_DEVICE));
  plm_tensor *target = in_place ? &in : &out;
  PLM_CHECK_OK(op->run(plm_test_stream, &in, params, target));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got, target->data, (size_t)count * sizeof *got,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  int64_t bad = 0;
  for (int64_t i = 0; i < count; i++) {
    const float want = op->reference(x[i], params);
    if (memcmp(&want, &got[i], sizeof want) != 0 && bad++ == 0) {
      char text[96];
      op->describe(params, text, sizeof text);
      printf("%s %s: element %lld: %.9g %s got %.9g, expected %.9g\n", op->name,
             plm_dtype_name(dtype), (long long)i, x[i], text, (double)got[i], (double)want);
    }
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in_storage));
  if (!in_place) PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out_storage));
  free(host);
  free(x);
  free(got);
  return bad;
}

void plm_test_unary_matches_reference(const plm_test_unary_op *op, const void *params, int count,
                                      size_t params_size) {
  static const int64_t shapes[][3] = {{1, 1, 0}, {1, 37, 0}, {257, 255, 0}, {3, 7, 13}};
  static const int ndims[] = {2, 2, 2, 3};
  static const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  const char *each = params;
  for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++)
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
      for (int m = 0; m < count; m++) {
        const uint64_t seed = s * 9 + t * 3 + (uint64_t)m;
        int64_t bad = run_case(op, dtypes[t], ndims[s], shapes[s], false, false,
                               each + (size_t)m * params_size, seed);
        ck_assert_msg(bad == 0, "%s: %lld mismatches: shape %zu, dtype %s, params %d", op->name,
                      (long long)bad, s, plm_dtype_name(dtypes[t]), m);
      }
  for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
    ck_assert_msg(run_case(op, dtypes[t], 2, shapes[2], false, true, params, 13 + t) == 0,
                  "%s: mismatches one element past the allocations' start, dtype %s", op->name,
                  plm_dtype_name(dtypes[t]));
  const int64_t stack[3] = {4, 33, 70};
  ck_assert_msg(run_case(op, PLM_DTYPE_F32, 3, stack, true, false, params, 11) == 0,
                "%s: mismatches in place", op->name);
  ck_assert_msg(run_case(op, PLM_DTYPE_F32, 3, stack, true, true, params, 12) == 0,
                "%s: mismatches in place one element past the allocation's start", op->name);
}

void plm_test_unary_refuses_bad_tensors(const plm_test_unary_op *op, const void *ok_params) {
  const int64_t dims[2] = {4, 5}, wrong[2] = {5, 4};
  plm_tensor in, out, other_shape, as_u8, as_i32;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &out));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, wrong, &other_shape));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &as_u8));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &as_i32));
  char null_stream[64], null_in[64];
  snprintf(null_stream, sizeof null_stream, "plm_%s: stream is NULL", op->name);
  snprintf(null_in, sizeof null_in, "plm_%s: in is NULL", op->name);

  PLM_CHECK_FAILS(op->run(NULL, &in, ok_params, &out), PLM_ERR_INVALID_ARG, null_stream);
  PLM_CHECK_FAILS(op->run(plm_test_stream, NULL, ok_params, &out), PLM_ERR_INVALID_ARG, null_in);
  PLM_CHECK_FAILS(op->run(plm_test_stream, &in, NULL, &out), PLM_ERR_INVALID_ARG, "params is NULL");
  PLM_CHECK_FAILS(op->run(plm_test_stream, &in, ok_params, NULL), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  PLM_CHECK_FAILS(op->run(plm_test_stream, &as_i32, ok_params, &out), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(op->run(plm_test_stream, &in, ok_params, &as_u8), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not f32");
  PLM_CHECK_FAILS(op->run(plm_test_stream, &as_u8, ok_params, &as_u8), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not f32"); /* in place only for f32 */
  PLM_CHECK_FAILS(op->run(plm_test_stream, &in, ok_params, &other_shape), PLM_ERR_INVALID_ARG,
                  "out is 5x4 but in is 4x5");

  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&in, &out, &other_shape, &as_u8, &as_i32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}

/* tests/test_tensor.c: tensor descriptors (plume/tensor.h). */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <string.h>

#include "harness.h"

START_TEST(test_dtypes_have_sizes_and_names) {
  ck_assert_uint_eq(plm_dtype_size(PLM_DTYPE_U8), 1);
  ck_assert_uint_eq(plm_dtype_size(PLM_DTYPE_U16), 2);
  ck_assert_uint_eq(plm_dtype_size(PLM_DTYPE_I32), 4);
  ck_assert_uint_eq(plm_dtype_size(PLM_DTYPE_F32), 4);
  ck_assert_uint_eq(plm_dtype_size(PLM_DTYPE_F64), 8);
  ck_assert_str_eq(plm_dtype_name(PLM_DTYPE_F64), "f64");
  ck_assert_uint_eq(plm_dtype_size((plm_dtype)0), 0);
  ck_assert_str_eq(plm_dtype_name(PLM_DTYPE_U16), "u16");
  ck_assert_str_eq(plm_dtype_name((plm_dtype)99), "unknown");
}
END_TEST

START_TEST(test_wrap_describes_contiguous_row_major_memory) {
  float storage[2 * 3 * 5];
  const int64_t dims[3] = {2, 3, 5};
  plm_tensor t;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 3, dims, &t));
  ck_assert_ptr_eq(t.data, storage);
  ck_assert_ptr_eq(t.ctx, plm_test_ctx);
  ck_assert_int_eq(t.ndim, 3);
  ck_assert_int_eq(t.strides[0], 15);
  ck_assert_int_eq(t.strides[1], 5);
  ck_assert_int_eq(t.strides[2], 1);
  ck_assert_int_eq(plm_tensor_numel(&t), 30);
  ck_assert_uint_eq(plm_tensor_bytes(&t), sizeof storage);
}
END_TEST

START_TEST(test_alloc_and_free_through_a_pool) {
  plm_pool *pool = NULL;
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_context_default_pool(plm_test_ctx, &pool));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  const int64_t dims[2] = {257, 255};
  plm_tensor t;
  PLM_CHECK_OK(plm_tensor_alloc(pool, stream, PLM_DTYPE_U16, 2, dims, &t));
  ck_assert_ptr_nonnull(t.data);
  ck_assert((uintptr_t)t.data % 256 == 0);
  ck_assert_uint_eq(plm_tensor_bytes(&t), 257 * 255 * 2);
  plm_pool_stats stats;
  PLM_CHECK_OK(plm_pool_stats_get(pool, &stats));
  ck_assert_uint_eq(stats.bytes_requested, 257 * 255 * 2);
  PLM_CHECK_OK(plm_tensor_free(pool, stream, &t));
  ck_assert_ptr_null(t.data);
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

START_TEST(test_bad_shapes_are_refused) {
  float storage[4];
  plm_tensor t;
  const int64_t dims[5] = {1, 2, 2, 1, 1};
  PLM_CHECK_FAILS(plm_tensor_wrap(NULL, storage, PLM_DTYPE_F32, 1, dims, &t), PLM_ERR_INVALID_ARG,
                  "plm_tensor_wrap: ctx is NULL");
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, NULL, PLM_DTYPE_F32, 1, dims, &t),
                  PLM_ERR_INVALID_ARG, "data is NULL");
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 1, NULL, &t),
                  PLM_ERR_INVALID_ARG, "dims is NULL");
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 1, dims, NULL),
                  PLM_ERR_INVALID_ARG, "out is NULL");
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, storage, (plm_dtype)7, 1, dims, &t),
                  PLM_ERR_INVALID_ARG, "dtype 7 is not a plm_dtype");
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 0, dims, &t),
                  PLM_ERR_INVALID_ARG, "ndim 0 is not in 1..4");
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 5, dims, &t),
                  PLM_ERR_INVALID_ARG, "ndim 5");
  const int64_t zero[2] = {3, 0};
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, zero, &t),
                  PLM_ERR_INVALID_ARG, "dims[1] is 0");
  const int64_t huge[3] = {INT64_MAX / 2, 4, 4};
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 3, huge, &t),
                  PLM_ERR_INVALID_ARG, "is more than INT64_MAX (2^63 - 1) bytes");
  plm_pool *pool = NULL;
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_context_default_pool(plm_test_ctx, &pool));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  PLM_CHECK_FAILS(plm_tensor_alloc(pool, stream, PLM_DTYPE_U8, 2, zero, &t), PLM_ERR_INVALID_ARG,
                  "plm_tensor_alloc: dims[1] is 0");
  PLM_CHECK_FAILS(plm_tensor_alloc(NULL, stream, PLM_DTYPE_U8, 2, dims, &t), PLM_ERR_INVALID_ARG,
                  "pool is NULL");
  PLM_CHECK_FAILS(plm_tensor_free(pool, stream, NULL), PLM_ERR_INVALID_ARG, "tensor is NULL");
  ck_assert_int_eq(plm_tensor_numel(NULL), 0);
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

/* Shapes of more than INT64_MAX bytes and data not aligned to its elements are refused
 * by the wraps and by the ops (issue 39): plm_tensor_bytes once returned -2^63 for u8
 * {2^62, 2}, and kernels made misaligned loads. */
START_TEST(test_impossible_sizes_and_misaligned_data_are_refused) {
  static _Alignas(8) unsigned char storage[64];
  plm_tensor t;
  const int64_t too_big[2] = {INT64_C(1) << 62, 2};
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U8, 2, too_big, &t),
                  PLM_ERR_INVALID_ARG,
                  "plm_tensor_wrap: the shape 4611686018427387904x2 of u8 is more than INT64_MAX");
  const int64_t just_fits[2] = {INT64_C(1) << 62, 1};
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U8, 2, just_fits, &t));
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, just_fits, &t),
                  PLM_ERR_INVALID_ARG, "more than INT64_MAX");
  /* A descriptor filled by hand: no overflow, 0 elements and bytes. */
  plm_tensor by_hand = {.ctx = plm_test_ctx,
                        .data = storage,
                        .dtype = PLM_DTYPE_U8,
                        .ndim = 2,
                        .dims = {INT64_C(1) << 62, 2},
                        .strides = {2, 1}};
  ck_assert_int_eq(plm_tensor_numel(&by_hand), 0);
  ck_assert_uint_eq(plm_tensor_bytes(&by_hand), 0);
  by_hand.dims[1] = 1;
  by_hand.dtype = PLM_DTYPE_F64;
  ck_assert_int_eq(plm_tensor_numel(&by_hand), INT64_C(1) << 62);
  ck_assert_uint_eq(plm_tensor_bytes(&by_hand), 0);
  /* f32 at +2 bytes, f64 at +4, u16 at +1; u8 anywhere. */
  const int64_t dims[1] = {4};
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, storage + 2, PLM_DTYPE_F32, 1, dims, &t),
                  PLM_ERR_INVALID_ARG, "plm_tensor_wrap: data 0x");
  ck_assert_ptr_nonnull(
      strstr(plm_last_error(), "is not aligned to its f32 elements' 4 bytes (it is 2 bytes past"));
  PLM_CHECK_FAILS(
      plm_tensor_wrap_strided(plm_test_ctx, storage + 4, PLM_DTYPE_F64, 1, dims, NULL, &t),
      PLM_ERR_INVALID_ARG, "f64 elements' 8 bytes");
  PLM_CHECK_FAILS(plm_tensor_wrap(plm_test_ctx, storage + 1, PLM_DTYPE_U16, 1, dims, &t),
                  PLM_ERR_INVALID_ARG, "u16 elements' 2 bytes");
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage + 1, PLM_DTYPE_U8, 1, dims, &t));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage + 4, PLM_DTYPE_F32, 1, dims, &t));
}
END_TEST

/* An op refuses a descriptor made by hand around misaligned data, on either backend. */
START_TEST(test_an_op_refuses_misaligned_data) {
  const int64_t dims[1] = {16};
  plm_pool *pool = NULL;
  plm_stream *stream = NULL;
  PLM_CHECK_OK(plm_context_default_pool(plm_test_ctx, &pool));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &stream));
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(pool, stream, PLM_DTYPE_F32, 1, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(pool, stream, PLM_DTYPE_U8, 1, dims, &out));
  plm_tensor shifted = in;
  shifted.data = (char *)in.data + 2;
  shifted.dims[0] = 15;
  plm_tensor shorter = out;
  shorter.dims[0] = 15;
  const plm_threshold_params params = {.value = 1, .compare = PLM_COMPARE_GT};
  PLM_CHECK_FAILS(plm_threshold(stream, &shifted, &params, &shorter), PLM_ERR_INVALID_ARG,
                  "in->data 0x");
  ck_assert_ptr_nonnull(strstr(plm_last_error(), "is not aligned to its f32 elements' 4 bytes"));
  PLM_CHECK_OK(plm_tensor_free(pool, stream, &in));
  PLM_CHECK_OK(plm_tensor_free(pool, stream, &out));
  PLM_CHECK_OK(plm_stream_destroy(stream));
}
END_TEST

static Suite *tensor_suite(void) {
  Suite *suite = suite_create("tensor");
  TCase *tcase = tcase_create("tensor");
  plm_test_add_fixture(tcase);
  tcase_add_test(tcase, test_dtypes_have_sizes_and_names);
  tcase_add_test(tcase, test_wrap_describes_contiguous_row_major_memory);
  tcase_add_test(tcase, test_alloc_and_free_through_a_pool);
  tcase_add_test(tcase, test_bad_shapes_are_refused);
  tcase_add_test(tcase, test_impossible_sizes_and_misaligned_data_are_refused);
  tcase_add_test(tcase, test_an_op_refuses_misaligned_data);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(tensor_suite);
}

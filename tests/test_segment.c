/* tests/test_segment.c: segment (plume/segment.h) on the backend under test, against
 * threshold, label and regions run one by one on the same stream: labels, count and
 * table must be the same bytes. Intensities are integers (also in f32), so every sum
 * is exact on either backend. Then the shapes, the cost, and bad input. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Segment an image of dtype with both paths and compare everything. */
static void check_segment_equals_the_parts(plm_dtype dtype, int64_t height, int64_t width,
                                           const plm_segment_params *params, int64_t capacity,
                                           uint64_t seed) {
  const int64_t dims[2] = {height, width}, one = 1, table_dims[2] = {capacity, PLM_REGION_COLUMNS};
  int64_t pixels = height * width;
  size_t element = plm_dtype_size(dtype);
  unsigned char *host = malloc((size_t)pixels * element);
  ck_assert_ptr_nonnull(host);
  for (int64_t i = 0; i < pixels; i++) {
    uint32_t v = (uint32_t)(plm_test_random(&seed) % 200);
    if (dtype == PLM_DTYPE_U8)
      host[i] = (uint8_t)v;
    else if (dtype == PLM_DTYPE_U16) {
      uint16_t u = (uint16_t)(v * 300);
      memcpy(host + i * 2, &u, 2);
    } else {
      float f = (float)v;
      memcpy(host + i * 4, &f, 4);
    }
  }
  plm_tensor image, mask, labels[2], count[2], table[2];
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, 2, dims, &image));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &mask));
  for (int k = 0; k < 2; k++) {
    PLM_CHECK_OK(
        plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &labels[k]));
    PLM_CHECK_OK(
        plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &one, &count[k]));
    PLM_CHECK_OK(
        plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F64, 2, table_dims, &table[k]));
  }
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, image.data, host, (size_t)pixels * element,
                                 PLM_COPY_HOST_TO_DEVICE));
  /* Both tables start as the same garbage, so untouched rows compare too. */
  size_t table_bytes = plm_tensor_bytes(&table[0]);
  double *fill = malloc(table_bytes);
  ck_assert_ptr_nonnull(fill);
  for (size_t i = 0; i < table_bytes / 8; i++) fill[i] = -7.5;
  for (int k = 0; k < 2; k++)
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, table[k].data, fill, table_bytes,
                                   PLM_COPY_HOST_TO_DEVICE));

  PLM_CHECK_OK(plm_segment(plm_test_stream, &image, params, &labels[0], &count[0], &table[0]));
  plm_threshold_params tp = {.value = params->value, .compare = params->compare};
  plm_label_params lp = {.connectivity = params->connectivity};
  PLM_CHECK_OK(plm_threshold(plm_test_stream, &image, &tp, &mask));
  PLM_CHECK_OK(plm_label(plm_test_stream, &mask, &lp, &labels[1], &count[1]));
  PLM_CHECK_OK(plm_regions(plm_test_stream, &labels[1], &image, &count[1], &table[1]));

  int32_t *host_labels = malloc((size_t)pixels * 4 * 2);
  double *host_table = malloc(table_bytes * 2);
  int32_t host_count[2];
  ck_assert_ptr_nonnull(host_labels);
  ck_assert_ptr_nonnull(host_table);
  for (int k = 0; k < 2; k++) {
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, host_labels + k * pixels, labels[k].data,
                                   (size_t)pixels * 4, PLM_COPY_DEVICE_TO_HOST));
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, &host_count[k], count[k].data, 4,
                                   PLM_COPY_DEVICE_TO_HOST));
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, (char *)host_table + k * table_bytes,
                                   table[k].data, table_bytes, PLM_COPY_DEVICE_TO_HOST));
  }
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert_int_eq(host_count[0], host_count[1]);
  ck_assert_int_gt(host_count[0], 0);
  ck_assert_int_eq(memcmp(host_labels, host_labels + pixels, (size_t)pixels * 4), 0);
  /* NaN-safe: compare bit patterns. */
  ck_assert_int_eq(memcmp(host_table, (char *)host_table + table_bytes, table_bytes), 0);
  /* The intensity columns were filled (the sum of a region of a non-zero image). */
  if (host_count[0] > 0 && params->compare == PLM_COMPARE_GT)
    ck_assert(host_table[PLM_REGION_SUM] > 0.0);

  for (int k = 0; k < 2; k++) {
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &labels[k]));
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &count[k]));
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &table[k]));
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &image));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &mask));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  free(host);
  free(fill);
  free(host_labels);
  free(host_table);
}

START_TEST(test_segment_equals_threshold_label_regions) {
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  for (int t = 0; t < 3; t++) {
    double scale = dtypes[t] == PLM_DTYPE_U16 ? 300.0 : 1.0;
    plm_segment_params gt8 = {.value = 120 * scale, .compare = PLM_COMPARE_GT};
    plm_segment_params le4 = {.value = 60 * scale, .compare = PLM_COMPARE_LE, .connectivity = 4};
    plm_segment_params ge8 = {.value = 100 * scale, .compare = PLM_COMPARE_GE, .connectivity = 8};
    /* A large table, and one much shorter than K (truncation, untouched rows). */
    check_segment_equals_the_parts(dtypes[t], 37, 53, &gt8, 37 * 53, 11u + (uint64_t)t);
    check_segment_equals_the_parts(dtypes[t], 64, 40, &le4, 5, 23u + (uint64_t)t);
    check_segment_equals_the_parts(dtypes[t], 1, 300, &ge8, 200, 37u + (uint64_t)t);
  }
}
END_TEST

START_TEST(test_output_shapes_and_cost) {
  const int64_t dims[2] = {6, 7};
  plm_tensor image;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &image));
  plm_segment_params params = {.value = 3};
  plm_shape labels, count;
  PLM_CHECK_OK(plm_segment_output(&image, &params, &labels, &count));
  ck_assert_int_eq(labels.dtype, PLM_DTYPE_I32);
  ck_assert_int_eq(labels.ndim, 2);
  ck_assert_int_eq(labels.dims[0], 6);
  ck_assert_int_eq(labels.dims[1], 7);
  ck_assert_int_eq(count.dtype, PLM_DTYPE_I32);
  ck_assert_int_eq(count.ndim, 1);
  ck_assert_int_eq(count.dims[0], 1);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_segment_cost(&image, &params, 10, &cost));
  ck_assert(cost.bytes > 42.0 * (2 + 1 + 4) && cost.flops > 0.0);
  PLM_CHECK_FAILS(plm_segment_cost(&image, &params, 0, &cost), PLM_ERR_INVALID_ARG,
                  "plm_segment_cost: capacity 0 is not positive");
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &image));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

START_TEST(test_bad_input_is_refused) {
  const int64_t dims[2] = {8, 8}, other[2] = {8, 9}, stack[3] = {2, 8, 8}, one = 1, two = 2;
  const int64_t table_dims[2] = {4, PLM_REGION_COLUMNS}, narrow[2] = {4, 11};
  plm_tensor image, labels, count, table, image_i32, image_3d, labels_other, count2, table_narrow,
      table_f32;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &image));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &labels));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &one, &count));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F64, 2, table_dims, &table));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &image_i32));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 3, stack, &image_3d));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, other, &labels_other));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &two, &count2));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F64, 2, narrow, &table_narrow));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, table_dims, &table_f32));
  plm_segment_params params = {.value = 1};

  PLM_CHECK_FAILS(plm_segment(NULL, &image, &params, &labels, &count, &table), PLM_ERR_INVALID_ARG,
                  "plm_segment: stream is NULL");
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, NULL, &params, &labels, &count, &table),
                  PLM_ERR_INVALID_ARG, "plm_segment: image is NULL");
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, NULL, &labels, &count, &table),
                  PLM_ERR_INVALID_ARG, "plm_segment: params is NULL");
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &params, NULL, &count, &table),
                  PLM_ERR_INVALID_ARG, "labels is NULL");
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &params, &labels, NULL, &table),
                  PLM_ERR_INVALID_ARG, "count is NULL");
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &params, &labels, &count, NULL),
                  PLM_ERR_INVALID_ARG, "table is NULL");
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image_i32, &params, &labels, &count, &table),
                  PLM_ERR_INVALID_ARG, "image->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image_3d, &params, &labels, &count, &table),
                  PLM_ERR_INVALID_ARG, "image has 3 dimensions, not 2");
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &params, &labels_other, &count, &table),
                  PLM_ERR_INVALID_ARG, "labels must be of image's shape");
  /* labels aliasing image (an i32 image would be refused first: use table's memory). */
  plm_tensor labels_on_table = labels;
  labels_on_table.data = table.data;
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &params, &labels_on_table, &count, &table),
                  PLM_ERR_INVALID_ARG, "table overlaps labels");
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &params, &labels, &count2, &table),
                  PLM_ERR_INVALID_ARG, "count must be of shape (1,)");
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &params, &labels, &count, &table_narrow),
                  PLM_ERR_INVALID_ARG, "table must be of shape (capacity, 12)");
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &params, &labels, &count, &table_f32),
                  PLM_ERR_INVALID_ARG, "table->dtype f32 is not f64");
  plm_segment_params bad = {.value = NAN};
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &bad, &labels, &count, &table),
                  PLM_ERR_INVALID_ARG, "plm_segment: params->value is NaN");
  bad = (plm_segment_params){.value = 1, .connectivity = 6};
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &bad, &labels, &count, &table),
                  PLM_ERR_INVALID_ARG, "params->connectivity 6 is not 4 or 8");
  bad = (plm_segment_params){.value = 1, .compare = (plm_compare)9};
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &bad, &labels, &count, &table),
                  PLM_ERR_INVALID_ARG, "params->compare 9");
  plm_shape ls, cs;
  PLM_CHECK_FAILS(plm_segment_output(&image_3d, &params, &ls, &cs), PLM_ERR_INVALID_ARG,
                  "plm_segment_output: image has 3 dimensions");
  /* Nothing was enqueued by the refused calls: the outputs keep what they hold. */
  const int32_t sentinel = 12345;
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, count.data, &sentinel, 4, PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_FAILS(plm_segment(plm_test_stream, &image, &params, &labels, &count, &table_narrow),
                  PLM_ERR_INVALID_ARG, "table");
  int32_t after = 0;
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, &after, count.data, 4, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert_int_eq(after, sentinel);

  plm_tensor *all[] = {&image,    &labels,       &count,  &table,        &image_i32,
                       &image_3d, &labels_other, &count2, &table_narrow, &table_f32};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[k]));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

/* A description with a zero dimension once divided by zero in the shape checks. */
START_TEST(test_shape_queries_refuse_broken_descriptions) {
  plm_tensor broken = {.dtype = PLM_DTYPE_U8, .ndim = 2, .dims = {4, 0}};
  plm_segment_params params = {.value = 1};
  plm_op_cost cost;
  PLM_CHECK_FAILS(plm_segment_cost(&broken, &params, 16, &cost), PLM_ERR_INVALID_ARG,
                  "image->dims[1] is 0");
  broken.dims[1] = -3;
  PLM_CHECK_FAILS(plm_segment_cost(&broken, &params, 16, &cost), PLM_ERR_INVALID_ARG,
                  "image->dims[1] is -3");
}
END_TEST

static Suite *segment_suite(void) {
  Suite *suite = suite_create("segment");
  TCase *tcase = tcase_create("segment");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_segment_equals_threshold_label_regions);
  tcase_add_test(tcase, test_output_shapes_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused);
  tcase_add_test(tcase, test_shape_queries_refuse_broken_descriptions);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(segment_suite);
}

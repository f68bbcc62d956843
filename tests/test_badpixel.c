/* tests/test_badpixel.c: the badpixel op (plume/badpixel.h) on the backend under test: a
 * case worked by hand (isolated pixels, corners, an edge pair, a pixel with one valid
 * neighbour, clusters with none, a stack), NaN, and random stacks and maps against a
 * float64 reference written here as numpy.median would compute it (sorted valid
 * neighbours, the middle one or the mean of the two middle ones, cast to f32): the same
 * bits. Also the output's shape and cost, and every refusal. Inputs go to the device with
 * stream copies, so the same test runs on cuda. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Runs badpixel on host data (in of dtype and dims, bad of the last two dims) and returns
 * the f32 output, malloc'd. */
static float *run(plm_dtype dtype, int ndim, const int64_t *dims, const void *in_host,
                  const uint8_t *bad_host) {
  plm_tensor in = plm_test_upload(dtype, ndim, dims, in_host);
  plm_tensor bad = plm_test_upload(PLM_DTYPE_U8, 2, dims + ndim - 2, bad_host);
  plm_tensor out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, ndim, dims, &out));
  const int64_t count = plm_tensor_numel(&in);
  float *got = malloc((size_t)count * sizeof *got);
  ck_assert_ptr_nonnull(got);
  PLM_CHECK_OK(plm_badpixel(plm_test_stream, &in, &bad, &out));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got, out.data, (size_t)count * sizeof *got,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&in, &bad, &out};
  for (size_t i = 0; i < 3; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
  return got;
}

static void check_values(const float *got, const float *want, int64_t count, const char *what) {
  for (int64_t i = 0; i < count; i++)
    ck_assert_msg(
        memcmp(&got[i], &want[i], sizeof got[i]) == 0 || (isnan(got[i]) && isnan(want[i])),
        "%s: element %lld is %.9g, expected %.9g", what, (long long)i, got[i], want[i]);
}

/* Frame 0 (4 x 5), and frame 1 = frame 0 + 100. Flagged: the corners (0,0) and (0,4), the
 * inner (1,2), and the edge pair (3,3), (3,4).
 *   (0,0): 9, 8, 3            -> 8          (0,4): 7, 4, 0 -> 4
 *   (1,2): 9 2 7 3 4 15 11 14 -> (7 + 9) / 2 = 8
 *   (3,3): 11 14 13 19        -> (13 + 14) / 2 = 13.5 ((3,4) is bad)
 *   (3,4): 14 13              -> their mean 13.5 */
START_TEST(test_a_case_worked_by_hand_on_a_stack) {
  const uint16_t frame[20] = {5, 9, 2, 7, 1, 8, 3, 6, 4, 0, 12, 15, 11, 14, 13, 20, 18, 19, 17, 16};
  const uint8_t bad[20] = {1, 0, 0, 0, 1, 0, 0, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1};
  uint16_t in[40];
  float want[40];
  for (int i = 0; i < 40; i++) {
    in[i] = (uint16_t)(frame[i % 20] + (i >= 20 ? 100 : 0));
    want[i] = (float)in[i];
  }
  const int flagged[5] = {0, 4, 7, 18, 19};
  const float replaced[5] = {8, 4, 8, 13.5f, 13.5f};
  for (int k = 0; k < 5; k++) {
    want[flagged[k]] = replaced[k];
    want[20 + flagged[k]] = replaced[k] + 100;
  }
  const int64_t dims[3] = {2, 4, 5};
  float *got = run(PLM_DTYPE_U16, 3, dims, in, bad);
  check_values(got, want, 40, "u16 stack");
  free(got);
  /* The same frame as u8 and f32 (one frame). */
  uint8_t as_u8[20];
  float as_f32[20];
  for (int i = 0; i < 20; i++) as_u8[i] = (uint8_t)frame[i], as_f32[i] = (float)frame[i];
  got = run(PLM_DTYPE_U8, 2, dims + 1, as_u8, bad);
  check_values(got, want, 20, "u8");
  free(got);
  got = run(PLM_DTYPE_F32, 2, dims + 1, as_f32, bad);
  check_values(got, want, 20, "f32");
  free(got);
}
END_TEST

/* 3 x 3 all flagged but the corner (2,2): the three pixels next to it have it as their one
 * valid neighbour; the others have none and stay. A 1 x 1 flagged frame has none either. */
START_TEST(test_one_valid_neighbour_and_none) {
  const float in[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const uint8_t bad[9] = {1, 1, 1, 1, 1, 1, 1, 1, 0};
  const float want[9] = {1, 2, 3, 4, 9, 9, 7, 9, 9};
  const int64_t dims[2] = {3, 3}, one[2] = {1, 1};
  float *got = run(PLM_DTYPE_F32, 2, dims, in, bad);
  check_values(got, want, 9, "one valid neighbour");
  free(got);
  const uint16_t single = 77;
  const uint8_t flagged = 1;
  got = run(PLM_DTYPE_U16, 2, one, &single, &flagged);
  ck_assert(got[0] == 77.0f);
  free(got);
}
END_TEST

/* NaN is no sample. [NaN 5 7; 1 2 8], flagged (0,1) and (1,1): each sees NaN, 7, 1 and 8
 * (the other is flagged), so the median of 1 7 8: 7. The unflagged NaN is copied. */
START_TEST(test_nan_is_not_a_neighbour) {
  const float in[6] = {NAN, 5, 7, 1, 2, 8};
  const uint8_t bad[6] = {0, 1, 0, 0, 1, 0};
  const float want[6] = {NAN, 7, 7, 1, 7, 8};
  const int64_t dims[2] = {2, 3};
  float *got = run(PLM_DTYPE_F32, 2, dims, in, bad);
  check_values(got, want, 6, "NaN");
  free(got);
}
END_TEST

static int compare_doubles(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The float64 reference of one output pixel, as numpy.median of the valid neighbours. */
static float reference(const double *x, const uint8_t *bad, int64_t h, int64_t w, int64_t y,
                       int64_t c) {
  const double self = x[y * w + c];
  if (!bad[y * w + c]) return (float)self;
  double v[8];
  int n = 0;
  for (int64_t yy = y - 1; yy <= y + 1; yy++)
    for (int64_t xx = c - 1; xx <= c + 1; xx++)
      if ((yy != y || xx != c) && yy >= 0 && yy < h && xx >= 0 && xx < w && !bad[yy * w + xx] &&
          !isnan(x[yy * w + xx]))
        v[n++] = x[yy * w + xx];
  if (n == 0) return (float)self;
  qsort(v, (size_t)n, sizeof v[0], compare_doubles);
  return (float)(n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0);
}

/* Random input of dims and a random map flagging about a third of the pixels (clusters of
 * every size happen); the output against the reference. */
static void random_case(plm_dtype dtype, int ndim, const int64_t *dims, uint64_t seed) {
  const int64_t h = dims[ndim - 2], w = dims[ndim - 1], pixels = h * w;
  int64_t count = 1;
  for (int d = 0; d < ndim; d++) count *= dims[d];
  void *in = malloc((size_t)count * plm_dtype_size(dtype));
  double *x = malloc((size_t)count * sizeof *x);
  uint8_t *bad = malloc((size_t)pixels);
  float *want = malloc((size_t)count * sizeof *want);
  ck_assert(in && x && bad && want);
  uint64_t state = seed | 1;
  for (int64_t p = 0; p < pixels; p++) bad[p] = plm_test_random(&state) % 3 == 0;
  for (int64_t i = 0; i < count; i++) {
    const uint64_t r = plm_test_random(&state);
    if (dtype == PLM_DTYPE_U8) x[i] = ((uint8_t *)in)[i] = (uint8_t)r;
    if (dtype == PLM_DTYPE_U16) x[i] = ((uint16_t *)in)[i] = (uint16_t)r;
    if (dtype == PLM_DTYPE_F32)
      x[i] = ((float *)in)[i] = (float)((double)(r >> 11) / 9007199254740992.0 * 2e4 - 1e4);
  }
  for (int64_t f = 0; f < count / pixels; f++)
    for (int64_t y = 0; y < h; y++)
      for (int64_t c = 0; c < w; c++)
        want[f * pixels + y * w + c] = reference(x + f * pixels, bad, h, w, y, c);
  float *got = run(dtype, ndim, dims, in, bad);
  char what[64];
  snprintf(what, sizeof what, "%s %lldx%lld", plm_dtype_name(dtype), (long long)h, (long long)w);
  check_values(got, want, count, what);
  free(got);
  free(in);
  free(x);
  free(bad);
  free(want);
}

START_TEST(test_random_stacks_match_the_float64_median) {
  /* 2 x 70 x 600: frames of rows wider than a GPU kernel's block (kernels/cuda/badpixel.cu) */
  static const int64_t shapes[][3] = {{1, 1, 0},     {1, 37, 0}, {41, 1, 0},
                                      {257, 255, 0}, {3, 7, 13}, {2, 70, 600}};
  static const int ndims[] = {2, 2, 2, 2, 3, 3};
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++)
    for (size_t t = 0; t < 3; t++)
      random_case(dtypes[t], ndims[s], shapes[s], 0x9e3779b9u + s * 7 + t);
}
END_TEST

START_TEST(test_output_shape_and_cost) {
  const int64_t dims[3] = {2, 6, 8}, hw[2] = {6, 8};
  uint16_t storage[2 * 6 * 8];
  uint8_t map[6 * 8];
  plm_tensor in, bad;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U16, 3, dims, &in));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, map, PLM_DTYPE_U8, 2, hw, &bad));
  plm_shape shape;
  PLM_CHECK_OK(plm_badpixel_output(&in, &bad, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_F32);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert_int_eq(shape.dims[0], 2);
  ck_assert_int_eq(shape.dims[2], 8);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_badpixel_cost(&in, &bad, &cost));
  ck_assert(cost.bytes == 96.0 * (2 + 4 + 1) && cost.flops == 96.0);
  PLM_CHECK_FAILS(plm_badpixel_output(&in, NULL, &shape), PLM_ERR_INVALID_ARG, "bad is NULL");
  PLM_CHECK_FAILS(plm_badpixel_cost(&in, &bad, NULL), PLM_ERR_INVALID_ARG, "cost is NULL");
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t dims[3] = {2, 4, 5}, hw[2] = {4, 5}, wrong[2] = {5, 4}, line[1] = {20};
  plm_tensor in, out, bad, bad_shape, bad_f32, as_i32, out_u8, one_dim, in_f32;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 3, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 3, dims, &out));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, hw, &bad));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, wrong, &bad_shape));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, hw, &bad_f32));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 3, dims, &as_i32));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 3, dims, &out_u8));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 1, line, &one_dim));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 3, dims, &in_f32));

  PLM_CHECK_FAILS(plm_badpixel(NULL, &in, &bad, &out), PLM_ERR_INVALID_ARG,
                  "plm_badpixel: stream is NULL");
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, NULL, &bad, &out), PLM_ERR_INVALID_ARG,
                  "plm_badpixel: in is NULL");
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, &in, NULL, &out), PLM_ERR_INVALID_ARG,
                  "bad is NULL");
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, &in, &bad, NULL), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, &as_i32, &bad, &out), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, &one_dim, &bad, &out), PLM_ERR_INVALID_ARG,
                  "in->ndim 1: badpixel needs (H, W) or (N, H, W)");
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, &in, &bad_f32, &out), PLM_ERR_INVALID_ARG,
                  "bad->dtype f32 is not u8");
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, &in, &bad_shape, &out), PLM_ERR_INVALID_ARG,
                  "bad is 5x4 but in's frames are 4x5");
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, &in, &out_u8, &out), PLM_ERR_INVALID_ARG,
                  "bad is 2x4x5 but in's frames are 4x5");
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, &in, &bad, &out_u8), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, &in, &bad, &bad_f32), PLM_ERR_INVALID_ARG,
                  "out is 4x5 but in is 2x4x5");
  /* Never in place: the neighbours are read after a pixel may have been written. */
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, &in_f32, &bad, &in_f32), PLM_ERR_INVALID_ARG,
                  "out overlaps in");
  plm_tensor over_bad = out;
  over_bad.data = bad.data;
  PLM_CHECK_FAILS(plm_badpixel(plm_test_stream, &in, &bad, &over_bad), PLM_ERR_INVALID_ARG,
                  "out overlaps bad");

  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&in, &out, &bad, &bad_shape, &bad_f32, &as_i32, &out_u8, &one_dim, &in_f32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

static Suite *badpixel_suite(void) {
  Suite *suite = suite_create("badpixel");
  TCase *tcase = tcase_create("badpixel");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_add_test(tcase, test_a_case_worked_by_hand_on_a_stack);
  tcase_add_test(tcase, test_one_valid_neighbour_and_none);
  tcase_add_test(tcase, test_nan_is_not_a_neighbour);
  tcase_add_test(tcase, test_random_stacks_match_the_float64_median);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(badpixel_suite);
}

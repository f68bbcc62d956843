/* tests/test_fixtures.c: every op on the backend under test against the committed
 * reference fixtures of tests/fixtures/, which tests/fixtures/make_fixtures.py generates
 * with scipy, scikit-image and OpenCV (the conventions of each reference are described
 * there). MANIFEST.json lists the cases: op, parameters, the .npy input and expected files
 * (read with tools/image_io.c) and the tolerance. Each op is a loop test over its cases, so
 * a failure names the case, the first element that differs (frame, row, column, or label
 * and column of a region table), both values and the tolerance.
 *
 * The fixtures directory is compiled in (PLUME_FIXTURES_DIR); the environment variable of
 * the same name overrides it. */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/image_io.h"
#include "harness.h"

#ifndef PLUME_FIXTURES_DIR
#error "PLUME_FIXTURES_DIR (the tests/fixtures directory) must be defined"
#endif

/* ---- the manifest ---------------------------------------------------------------------- */

enum op {
  OP_CONV2D,
  OP_SOBEL,
  OP_ENTROPY,
  OP_THRESHOLD,
  OP_LABEL,
  OP_REGIONS,
  OP_SEGMENT,
  OP_MATMUL,
  OP_DOT,
  OP_AR_FORECAST,
  OP_COUNT
};
static const char *const op_names[OP_COUNT] = {"conv2d", "sobel",      "entropy", "threshold",
                                               "label",  "regions",    "segment", "matmul",
                                               "dot",    "ar_forecast"};

static const char *fixtures_dir = PLUME_FIXTURES_DIR;
static json_t *manifest;                    /* MANIFEST.json, or NULL */
static json_t *cases_of[OP_COUNT];          /* per op, an array of the manifest's cases */
static char manifest_error[8192];           /* what is wrong with the manifest */
static const char *case_name = "(no case)"; /* the case being run, for messages */

static void read_manifest(void) {
  const char *env = getenv("PLUME_FIXTURES_DIR");
  if (env && *env) fixtures_dir = env;
  char path[4096];
  snprintf(path, sizeof path, "%s/MANIFEST.json", fixtures_dir);
  json_error_t error;
  manifest = json_load_file(path, 0, &error);
  if (!manifest) {
    snprintf(manifest_error, sizeof manifest_error, "%s:%d: %s", path, error.line, error.text);
    return;
  }
  json_t *cases = json_object_get(manifest, "cases");
  if (!json_is_array(cases)) {
    snprintf(manifest_error, sizeof manifest_error, "%s: no \"cases\" array", path);
    json_decref(manifest);
    manifest = NULL;
    return;
  }
  for (int op = 0; op < OP_COUNT; op++) cases_of[op] = json_array();
  size_t i;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "op"));
    int op = 0;
    while (op < OP_COUNT && !(name && strcmp(name, op_names[op]) == 0)) op++;
    if (op == OP_COUNT) {
      snprintf(manifest_error, sizeof manifest_error, "%s: case %zu has an unknown op \"%s\"", path,
               i, name ? name : "(none)");
      continue; /* the manifest test fails with this message */
    }
    json_array_append(cases_of[op], c);
  }
}

static void free_manifest(void) {
  for (int op = 0; op < OP_COUNT; op++) json_decref(cases_of[op]);
  json_decref(manifest);
}

static size_t case_count(enum op op) {
  return cases_of[op] ? json_array_size(cases_of[op]) : 0;
}

/* The i-th case of op; sets case_name. */
static const json_t *get_case(enum op op, int i) {
  const json_t *c = json_array_get(cases_of[op], (size_t)i);
  ck_assert_ptr_nonnull(c);
  case_name = json_string_value(json_object_get(c, "name"));
  if (!case_name) case_name = "(unnamed)";
  return c;
}

#define CASE_OK(call)                                                           \
  do {                                                                          \
    plm_status case_status_ = (call);                                           \
    ck_assert_msg(case_status_ == PLM_OK, "%s: %s -> %s: %s", case_name, #call, \
                  plm_status_str(case_status_), plm_last_error());              \
  } while (0)
#define CASE_ASSERT(condition, ...)                         \
  do {                                                      \
    if (!(condition)) {                                     \
      char case_what_[2048];                                \
      snprintf(case_what_, sizeof case_what_, __VA_ARGS__); \
      ck_abort_msg("%s: %s", case_name, case_what_);        \
    }                                                       \
  } while (0)

static const json_t *field(const json_t *object, const char *key) {
  const json_t *value = json_object_get(object, key);
  CASE_ASSERT(value, "the manifest has no \"%s\"", key);
  return value;
}
static double number(const json_t *object, const char *key) {
  const json_t *value = field(object, key);
  CASE_ASSERT(json_is_number(value), "\"%s\" is not a number", key);
  return json_number_value(value);
}
static int integer(const json_t *object, const char *key) {
  const json_t *value = field(object, key);
  CASE_ASSERT(json_is_integer(value), "\"%s\" is not an integer", key);
  return (int)json_integer_value(value);
}
static const char *string(const json_t *object, const char *key) {
  const char *value = json_string_value(field(object, key));
  CASE_ASSERT(value, "\"%s\" is not a string", key);
  return value;
}
/* The two integers of a [a, b] array. */
static void pair(const json_t *object, const char *key, int *a, int *b) {
  const json_t *value = field(object, key);
  CASE_ASSERT(json_array_size(value) == 2 && json_is_integer(json_array_get(value, 0)) &&
                  json_is_integer(json_array_get(value, 1)),
              "\"%s\" is not a pair of integers", key);
  *a = (int)json_integer_value(json_array_get(value, 0));
  *b = (int)json_integer_value(json_array_get(value, 1));
}

static plm_border border_of(const char *name) {
  if (strcmp(name, "zero") == 0) return PLM_BORDER_ZERO;
  if (strcmp(name, "replicate") == 0) return PLM_BORDER_REPLICATE;
  CASE_ASSERT(strcmp(name, "reflect101") == 0, "unknown border \"%s\"", name);
  return PLM_BORDER_REFLECT101;
}

static plm_compare compare_of(const char *name) {
  static const char *const names[] = {"gt", "ge", "lt", "le"};
  for (int c = 0; c < 4; c++)
    if (strcmp(name, names[c]) == 0) return (plm_compare)c;
  CASE_ASSERT(false, "unknown comparison \"%s\"", name);
  return PLM_COMPARE_GT;
}

/* ---- files, tensors, comparisons ------------------------------------------------------- */

/* Read the fixture file named by object[key]; f64 files keep their precision. */
static image load(const json_t *object, const char *key) {
  char path[4096], err[IMAGE_ERROR_SIZE];
  snprintf(path, sizeof path, "%s/%s", fixtures_dir, string(object, key));
  image img;
  plm_status status = image_read_keep_f64(path, NULL, &img, err, sizeof err);
  CASE_ASSERT(status == PLM_OK, "%s", err);
  return img;
}

static double element(const void *data, plm_dtype dtype, int64_t i) {
  switch (dtype) {
    case PLM_DTYPE_U8: return ((const uint8_t *)data)[i];
    case PLM_DTYPE_U16: return ((const uint16_t *)data)[i];
    case PLM_DTYPE_I32: return ((const int32_t *)data)[i];
    case PLM_DTYPE_F32: return ((const float *)data)[i];
    case PLM_DTYPE_F64: return ((const double *)data)[i];
  }
  return NAN;
}

/* A tensor from the pool holding img. */
static plm_tensor upload(const image *img) {
  plm_tensor t;
  CASE_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, img->dtype, img->ndim, img->dims, &t));
  CASE_OK(plm_stream_memcpy(plm_test_stream, t.data, img->data, plm_tensor_bytes(&t),
                            PLM_COPY_HOST_TO_DEVICE));
  return t;
}

/* An integer image (labels in u16 or i32) as an i32 tensor. */
static plm_tensor upload_as_i32(const image *img) {
  image wide = *img;
  int64_t n = image_numel(img);
  int32_t *values = malloc((size_t)n * sizeof *values);
  ck_assert_ptr_nonnull(values);
  for (int64_t i = 0; i < n; i++) values[i] = (int32_t)element(img->data, img->dtype, i);
  wide.dtype = PLM_DTYPE_I32;
  wide.data = values;
  plm_tensor t = upload(&wide);
  CASE_OK(plm_stream_synchronize(plm_test_stream)); /* before values goes */
  free(values);
  return t;
}

/* A tensor of dtype and img's shape. */
static plm_tensor alloc_like(const image *img, plm_dtype dtype) {
  plm_tensor t;
  CASE_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, img->ndim, img->dims, &t));
  return t;
}

/* t's contents on the host (after the stream has run everything before). */
static void *download(const plm_tensor *t) {
  void *host = malloc(plm_tensor_bytes(t));
  ck_assert_ptr_nonnull(host);
  CASE_OK(plm_stream_memcpy(plm_test_stream, host, t->data, plm_tensor_bytes(t),
                            PLM_COPY_DEVICE_TO_HOST));
  CASE_OK(plm_stream_synchronize(plm_test_stream));
  return host;
}

static void release(plm_tensor *t) {
  CASE_OK(plm_tensor_free(plm_test_pool, plm_test_stream, t));
}

/* The comparisons below return false on a mismatch and describe it here, so that the
 * test frees its buffers before failing with this message. */
static char mismatch[2048];

static bool mismatched(const char *fmt, ...) {
  int n = snprintf(mismatch, sizeof mismatch, "%s: ", case_name);
  va_list args;
  va_start(args, fmt);
  if (n >= 0 && (size_t)n < sizeof mismatch)
    vsnprintf(mismatch + n, sizeof mismatch - (size_t)n, fmt, args);
  va_end(args);
  return false;
}

/* Compare got (dtype, expected's shape) with expected, element by element, within an
 * absolute tolerance (NaN matches NaN), naming the first mismatch. */
static bool same_image(const char *what, const void *got, plm_dtype dtype, const image *expected,
                       double tolerance) {
  int64_t n = image_numel(expected), bad = 0, first = -1;
  for (int64_t i = 0; i < n; i++) {
    double a = element(got, dtype, i), e = element(expected->data, expected->dtype, i);
    bool same = (isnan(a) && isnan(e)) || a == e || fabs(a - e) <= tolerance;
    if (!same && bad++ == 0) first = i;
  }
  if (bad == 0) return true;
  int64_t width = expected->dims[expected->ndim - 1];
  int64_t height = expected->dims[expected->ndim - 2];
  double a = element(got, dtype, first), e = element(expected->data, expected->dtype, first);
  return mismatched(
      "%s: %lld of %lld elements differ; the first at frame %lld, row %lld, column "
      "%lld: got %.9g, expected %.9g (difference %.3g, tolerance %.3g)",
      what, (long long)bad, (long long)n, (long long)(first / (width * height)),
      (long long)(first / width % height), (long long)(first % width), a, e, fabs(a - e),
      tolerance);
}

/* Compare the K x PLM_REGION_COLUMNS region table got with expected (absent when K is
 * 0): the manifest's exact_columns exactly, the others within tolerance * max(1, |e|);
 * the row after the last (the table has K + 1) must still hold table_fill. */
static const double table_fill = -7.5;

static bool same_table(const double *got, const json_t *c, int k) {
  const char *const columns[PLM_REGION_COLUMNS] = {
      "label",        "area",         "min_row", "min_col", "max_row",       "max_col",
      "centroid_row", "centroid_col", "sum",     "max",     "wcentroid_row", "wcentroid_col"};
  bool exact[PLM_REGION_COLUMNS] = {false};
  const json_t *list = field(c, "exact_columns");
  size_t i;
  const json_t *column;
  json_array_foreach(list, i, column) {
    json_int_t index = json_integer_value(column);
    CASE_ASSERT(index >= 0 && index < PLM_REGION_COLUMNS, "bad exact column");
    exact[index] = true;
  }
  double tolerance = number(c, "tolerance");
  if (k > 0) {
    image expected = load(c, "expected");
    CASE_ASSERT(expected.dtype == PLM_DTYPE_F64 && expected.ndim == 2 && expected.dims[0] == k &&
                    expected.dims[1] == PLM_REGION_COLUMNS,
                "the expected table is not f64 (%d, %d)", k, PLM_REGION_COLUMNS);
    const double *e = expected.data;
    for (int64_t j = 0; j < (int64_t)k * PLM_REGION_COLUMNS; j++) {
      int col = (int)(j % PLM_REGION_COLUMNS);
      double a = got[j];
      bool same = (isnan(a) && isnan(e[j])) || a == e[j] ||
                  (!exact[col] && fabs(a - e[j]) <= tolerance * fmax(1.0, fabs(e[j])));
      if (!same) {
        double want = e[j];
        image_free(&expected, NULL);
        return mismatched("region table: label %lld, column %s: got %.17g, expected %.17g (%s)",
                          (long long)(j / PLM_REGION_COLUMNS + 1), columns[col], a, want,
                          exact[col] ? "exact" : "relative tolerance");
      }
    }
    image_free(&expected, NULL);
  }
  for (int col = 0; col < PLM_REGION_COLUMNS; col++)
    if (got[(int64_t)k * PLM_REGION_COLUMNS + col] != table_fill)
      return mismatched("region table: row %d, after the last label, was written: %s is %.17g", k,
                        columns[col], got[(int64_t)k * PLM_REGION_COLUMNS + col]);
  return true;
}

/* An f64 table of k + 1 rows, filled with table_fill. */
static plm_tensor alloc_table(int k) {
  const int64_t dims[2] = {(int64_t)k + 1, PLM_REGION_COLUMNS};
  plm_tensor t;
  CASE_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F64, 2, dims, &t));
  size_t n = (size_t)dims[0] * PLM_REGION_COLUMNS;
  double *fill = malloc(n * sizeof *fill);
  ck_assert_ptr_nonnull(fill);
  for (size_t i = 0; i < n; i++) fill[i] = table_fill;
  CASE_OK(
      plm_stream_memcpy(plm_test_stream, t.data, fill, n * sizeof *fill, PLM_COPY_HOST_TO_DEVICE));
  CASE_OK(plm_stream_synchronize(plm_test_stream));
  free(fill);
  return t;
}

/* ---- the ops --------------------------------------------------------------------------- */

START_TEST(test_conv2d_matches_the_fixture) {
  const json_t *c = get_case(OP_CONV2D, _i), *params = field(c, "params");
  image in = load(c, "input"), kernel = load(c, "kernel"), expected = load(c, "expected");
  plm_conv2d_params p = plm_conv2d_params_default();
  pair(params, "stride", &p.stride_y, &p.stride_x);
  pair(params, "pad", &p.pad_y, &p.pad_x);
  p.border = border_of(string(params, "border"));
  plm_tensor t_in = upload(&in), t_kernel = upload(&kernel);
  plm_tensor out = alloc_like(&expected, PLM_DTYPE_F32);
  CASE_OK(plm_conv2d(plm_test_stream, &t_in, &t_kernel, &p, &out));
  float *got = download(&out);
  release(&t_in);
  release(&t_kernel);
  release(&out);
  bool ok = same_image("out", got, PLM_DTYPE_F32, &expected, number(c, "tolerance"));
  free(got);
  image_free(&in, NULL);
  image_free(&kernel, NULL);
  image_free(&expected, NULL);
  ck_assert_msg(ok, "%s", mismatch);
}
END_TEST

START_TEST(test_sobel_matches_the_fixture) {
  const json_t *c = get_case(OP_SOBEL, _i), *expected = field(c, "expected");
  const char *const parts[3] = {"gx", "gy", "magnitude"};
  image in = load(c, "input"), want[3] = {{0}};
  plm_sobel_params p = {.border = border_of(string(field(c, "params"), "border"))};
  plm_tensor t_in = upload(&in), out[3] = {{0}};
  for (int k = 0; k < 3; k++)
    if (json_object_get(expected, parts[k])) {
      want[k] = load(expected, parts[k]);
      out[k] = alloc_like(&want[k], PLM_DTYPE_F32);
    }
  CASE_OK(plm_sobel(plm_test_stream, &t_in, &p, want[0].data ? &out[0] : NULL,
                    want[1].data ? &out[1] : NULL, want[2].data ? &out[2] : NULL));
  bool ok = true;
  for (int k = 0; k < 3; k++)
    if (want[k].data) {
      float *got = download(&out[k]);
      ok = ok && same_image(parts[k], got, PLM_DTYPE_F32, &want[k], number(c, "tolerance"));
      free(got);
      release(&out[k]);
      image_free(&want[k], NULL);
    }
  release(&t_in);
  image_free(&in, NULL);
  ck_assert_msg(ok, "%s", mismatch);
}
END_TEST

START_TEST(test_entropy_matches_the_fixture) {
  const json_t *c = get_case(OP_ENTROPY, _i), *params = field(c, "params");
  image in = load(c, "input"), expected = load(c, "expected");
  plm_entropy_params p = {.window = integer(params, "window"), .bins = integer(params, "bins")};
  p.range_auto = json_is_true(json_object_get(params, "range_auto"));
  const json_t *range = json_object_get(params, "range");
  if (range) {
    CASE_ASSERT(json_array_size(range) == 2, "\"range\" is not [lo, hi]");
    p.range_lo = json_number_value(json_array_get(range, 0));
    p.range_hi = json_number_value(json_array_get(range, 1));
  }
  plm_tensor t_in = upload(&in), out = alloc_like(&expected, PLM_DTYPE_F32);
  CASE_OK(plm_entropy(plm_test_stream, &t_in, &p, &out));
  float *got = download(&out);
  release(&t_in);
  release(&out);
  bool ok = same_image("out", got, PLM_DTYPE_F32, &expected, number(c, "tolerance"));
  free(got);
  image_free(&in, NULL);
  image_free(&expected, NULL);
  ck_assert_msg(ok, "%s", mismatch);
}
END_TEST

START_TEST(test_threshold_matches_the_fixture) {
  const json_t *c = get_case(OP_THRESHOLD, _i), *params = field(c, "params");
  image in = load(c, "input"), expected = load(c, "expected");
  plm_threshold_params p = {.value = number(params, "value"),
                            .compare = compare_of(string(params, "compare"))};
  plm_tensor t_in = upload(&in), out = alloc_like(&expected, PLM_DTYPE_U8);
  CASE_OK(plm_threshold(plm_test_stream, &t_in, &p, &out));
  uint8_t *got = download(&out);
  release(&t_in);
  release(&out);
  bool ok = same_image("mask", got, PLM_DTYPE_U8, &expected, 0.0);
  free(got);
  image_free(&in, NULL);
  image_free(&expected, NULL);
  ck_assert_msg(ok, "%s", mismatch);
}
END_TEST

/* The manifest's per-frame counts against the op's. */
static bool same_counts(const json_t *counts, const int32_t *got, int64_t frames) {
  if (json_array_size(counts) != (size_t)frames)
    return mismatched("the manifest has %zu counts for %lld frames", json_array_size(counts),
                      (long long)frames);
  for (int64_t f = 0; f < frames; f++) {
    json_int_t want = json_integer_value(json_array_get(counts, (size_t)f));
    if (got[f] != want)
      return mismatched("frame %lld: count %d, expected %lld", (long long)f, got[f],
                        (long long)want);
  }
  return true;
}

START_TEST(test_label_matches_the_fixture) {
  const json_t *c = get_case(OP_LABEL, _i);
  image mask = load(c, "input"), expected = load(c, "expected");
  plm_label_params p = {.connectivity = integer(field(c, "params"), "connectivity")};
  int64_t frames = mask.ndim == 3 ? mask.dims[0] : 1;
  plm_tensor t_mask = upload(&mask), labels = alloc_like(&mask, PLM_DTYPE_I32), count;
  CASE_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &frames, &count));
  CASE_OK(plm_label(plm_test_stream, &t_mask, &p, &labels, &count));
  int32_t *got = download(&labels), *got_counts = download(&count);
  release(&t_mask);
  release(&labels);
  release(&count);
  bool ok = same_counts(field(c, "counts"), got_counts, frames) &&
            same_image("labels", got, PLM_DTYPE_I32, &expected, 0.0);
  free(got);
  free(got_counts);
  image_free(&mask, NULL);
  image_free(&expected, NULL);
  ck_assert_msg(ok, "%s", mismatch);
}
END_TEST

START_TEST(test_regions_match_the_fixture) {
  const json_t *c = get_case(OP_REGIONS, _i);
  image labels = load(c, "input"), intensity = {0};
  int32_t k = integer(c, "count");
  const int64_t one = 1;
  plm_tensor t_labels = upload_as_i32(&labels), t_intensity = {0}, count;
  if (json_object_get(c, "intensity")) {
    intensity = load(c, "intensity");
    t_intensity = upload(&intensity);
  }
  CASE_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &one, &count));
  CASE_OK(plm_stream_memcpy(plm_test_stream, count.data, &k, sizeof k, PLM_COPY_HOST_TO_DEVICE));
  plm_tensor table = alloc_table(k);
  CASE_OK(plm_regions(plm_test_stream, &t_labels, intensity.data ? &t_intensity : NULL, &count,
                      &table));
  double *got = download(&table);
  release(&t_labels);
  release(&count);
  release(&table);
  if (intensity.data) release(&t_intensity);
  bool ok = same_table(got, c, k);
  free(got);
  image_free(&labels, NULL);
  image_free(&intensity, NULL);
  ck_assert_msg(ok, "%s", mismatch);
}
END_TEST

START_TEST(test_segment_matches_the_fixture) {
  const json_t *c = get_case(OP_SEGMENT, _i), *params = field(c, "params");
  image in = load(c, "input"), expected = load(c, "labels");
  int32_t k = integer(c, "count");
  plm_segment_params p = {.value = number(params, "value"),
                          .compare = compare_of(string(params, "compare")),
                          .connectivity = integer(params, "connectivity")};
  const int64_t one = 1;
  plm_tensor t_in = upload(&in), labels = alloc_like(&in, PLM_DTYPE_I32), count;
  CASE_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &one, &count));
  plm_tensor table = alloc_table(k);
  CASE_OK(plm_segment(plm_test_stream, &t_in, &p, &labels, &count, &table));
  int32_t *got_labels = download(&labels), *got_count = download(&count);
  double *got_table = download(&table);
  release(&t_in);
  release(&labels);
  release(&count);
  release(&table);
  bool ok = (*got_count == k || mismatched("count %d, expected %d", *got_count, k)) &&
            same_image("labels", got_labels, PLM_DTYPE_I32, &expected, 0.0) &&
            same_table(got_table, c, k);
  free(got_labels);
  free(got_count);
  free(got_table);
  image_free(&in, NULL);
  image_free(&expected, NULL);
  ck_assert_msg(ok, "%s", mismatch);
}
END_TEST

/* ---- matmul, dot, ar_forecast --------------------------------------------------------------- */

/* A tensor of `ndim` dims holding img's elements (f32), e.g. a (1, N) file as (N). */
static plm_tensor upload_as(const image *img, int ndim, const int64_t *dims) {
  image shaped = *img;
  shaped.ndim = ndim;
  for (int d = 0; d < ndim; d++) shaped.dims[d] = dims[d];
  return upload(&shaped);
}

static plm_activation activation_of(const char *name) {
  static const char *const names[] = {"none", "relu", "sigmoid", "tanh"};
  for (int a = 0; a < 4; a++)
    if (strcmp(name, names[a]) == 0) return (plm_activation)a;
  CASE_ASSERT(false, "unknown activation \"%s\"", name);
  return PLM_ACTIVATION_NONE;
}

START_TEST(test_matmul_matches_the_fixture) {
  const json_t *c = get_case(OP_MATMUL, _i), *params = field(c, "params");
  image a = load(c, "input"), b = load(c, "b"), expected = load(c, "expected");
  const bool with_bias = !json_is_null(field(c, "bias"));
  image bias = {0};
  if (with_bias) bias = load(c, "bias");
  CASE_ASSERT(strcmp(string(params, "precision"), "fp32") == 0, "only fp32 cases are made");
  plm_matmul_params p = {.precision = PLM_PRECISION_FP32,
                         .activation = activation_of(string(params, "activation"))};
  plm_tensor t_a = upload(&a), t_b = upload(&b), t_bias = {0};
  const int64_t n = b.dims[1];
  if (with_bias) t_bias = upload_as(&bias, 1, &n);
  plm_tensor out = alloc_like(&expected, PLM_DTYPE_F32);
  CASE_OK(plm_matmul(plm_test_stream, &t_a, &t_b, with_bias ? &t_bias : NULL, &p, &out));
  float *got = download(&out);
  release(&t_a);
  release(&t_b);
  if (with_bias) release(&t_bias);
  release(&out);
  bool ok = same_image("out", got, PLM_DTYPE_F32, &expected, number(c, "tolerance"));
  free(got);
  image_free(&a, NULL);
  image_free(&b, NULL);
  if (with_bias) image_free(&bias, NULL);
  image_free(&expected, NULL);
  ck_assert_msg(ok, "%s", mismatch);
}
END_TEST

START_TEST(test_dot_matches_the_fixture) {
  const json_t *c = get_case(OP_DOT, _i);
  image a = load(c, "input"), b = load(c, "b"), expected = load(c, "expected");
  plm_tensor t_a = upload(&a), t_b = upload(&b), out;
  const int64_t rows = a.dims[0];
  CASE_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F64, 1, &rows, &out));
  CASE_OK(plm_dot(plm_test_stream, &t_a, &t_b, NULL, &out));
  double *got = download(&out);
  release(&t_a);
  release(&t_b);
  release(&out);
  bool ok = same_image("dot", got, PLM_DTYPE_F64, &expected, number(c, "tolerance"));
  free(got);
  image_free(&a, NULL);
  image_free(&b, NULL);
  image_free(&expected, NULL);
  ck_assert_msg(ok, "%s", mismatch);
}
END_TEST

START_TEST(test_ar_forecast_matches_the_fixture) {
  const json_t *c = get_case(OP_AR_FORECAST, _i), *params = field(c, "params");
  image series = load(c, "input"), expected = load(c, "expected");
  plm_ar_forecast_params p = {.lags = integer(params, "lags"),
                              .horizon = integer(params, "horizon")};
  plm_tensor t_series = upload(&series), out = alloc_like(&expected, PLM_DTYPE_F32);
  CASE_OK(plm_ar_forecast(plm_test_stream, &t_series, &p, &out));
  float *got = download(&out);
  release(&t_series);
  release(&out);
  bool ok = same_image("forecast", got, PLM_DTYPE_F32, &expected, number(c, "tolerance"));
  free(got);
  image_free(&series, NULL);
  image_free(&expected, NULL);
  ck_assert_msg(ok, "%s", mismatch);
}
END_TEST

/* The manifest was read and lists cases for every op (a loop over no cases would pass
 * silently otherwise). */
START_TEST(test_manifest_lists_cases_for_every_op) {
  ck_assert_msg(manifest && !manifest_error[0], "%s", manifest_error);
  for (int op = 0; op < OP_COUNT; op++)
    ck_assert_msg(case_count((enum op)op) > 0, "MANIFEST.json has no %s case", op_names[op]);
}
END_TEST

static Suite *fixtures_suite(void) {
  read_manifest();
  atexit(free_manifest);
  Suite *suite = suite_create("fixtures");
  TCase *tcase = tcase_create("fixtures");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 60);
  tcase_add_test(tcase, test_manifest_lists_cases_for_every_op);
  tcase_add_loop_test(tcase, test_conv2d_matches_the_fixture, 0, (int)case_count(OP_CONV2D));
  tcase_add_loop_test(tcase, test_sobel_matches_the_fixture, 0, (int)case_count(OP_SOBEL));
  tcase_add_loop_test(tcase, test_entropy_matches_the_fixture, 0, (int)case_count(OP_ENTROPY));
  tcase_add_loop_test(tcase, test_threshold_matches_the_fixture, 0, (int)case_count(OP_THRESHOLD));
  tcase_add_loop_test(tcase, test_label_matches_the_fixture, 0, (int)case_count(OP_LABEL));
  tcase_add_loop_test(tcase, test_regions_match_the_fixture, 0, (int)case_count(OP_REGIONS));
  tcase_add_loop_test(tcase, test_segment_matches_the_fixture, 0, (int)case_count(OP_SEGMENT));
  tcase_add_loop_test(tcase, test_matmul_matches_the_fixture, 0, (int)case_count(OP_MATMUL));
  tcase_add_loop_test(tcase, test_dot_matches_the_fixture, 0, (int)case_count(OP_DOT));
  tcase_add_loop_test(tcase, test_ar_forecast_matches_the_fixture, 0,
                      (int)case_count(OP_AR_FORECAST));
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(fixtures_suite);
}

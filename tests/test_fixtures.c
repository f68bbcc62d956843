/* tests/test_fixtures.c: every op of the table (ops/op_desc.h) on the backend under test
 * against the committed reference fixtures of tests/fixtures/, which
 * tests/fixtures/make_fixtures.py generates with scipy, scikit-image and OpenCV (the
 * conventions of each reference are described there). MANIFEST.json lists the cases and
 * says what each checks, in the op's own terms: "op" (a descriptor's name), "params" (its
 * schema's names and values, read as the text form reads them), the input files by slot
 * name ("input" for the first), "expected" (the main output's file, or an object of files
 * by output slot), "count"/"counts" for a count output, the region tables' exact columns,
 * and the tolerance. One runner serves every op: a failure names the case, the first
 * element that differs (frame, row, column, or label and column of a region table), both
 * values and the tolerance. The manifest's "without_fixtures" says, for each op of the
 * table that has no case, where it is checked instead.
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

#include "support/image_io.h"
#include "harness.h"
#include "ops/op_desc.h"

#ifndef PLUME_FIXTURES_DIR
#error "PLUME_FIXTURES_DIR (the tests/fixtures directory) must be defined"
#endif

/* ---- the manifest ---------------------------------------------------------------------- */

static const char *fixtures_dir = PLUME_FIXTURES_DIR;
static json_t *manifest;                    /* MANIFEST.json, or NULL */
static const json_t *all_cases;             /* the manifest's cases, in its order */
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
  all_cases = cases;
  size_t i;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "op"));
    if (!plm__op_find(name)) {
      snprintf(manifest_error, sizeof manifest_error, "%s: case %zu has an unknown op \"%s\"", path,
               i, name ? name : "(none)");
      all_cases = NULL;
      return; /* the manifest test fails with this message */
    }
  }
}

static void free_manifest(void) {
  json_decref(manifest);
}

static size_t case_count(void) {
  return all_cases ? json_array_size(all_cases) : 0;
}

/* The manifest's i-th case; sets case_name. */
static const json_t *get_case(int i) {
  const json_t *c = json_array_get(all_cases, (size_t)i);
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

static bool same_table(const double *got, const json_t *c, const json_t *files, const char *key,
                       int k) {
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
    image expected = load(files, key);
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

/* ---- one runner for every op ------------------------------------------------------------- */

/* A manifest value as the text form writes it: 3, 0.5, "gt", [1, 2] -> "1,2". */
static void value_text(const json_t *value, char *text, size_t size) {
  if (json_is_integer(value)) {
    snprintf(text, size, "%lld", (long long)json_integer_value(value));
  } else if (json_is_real(value)) {
    snprintf(text, size, "%.17g", json_real_value(value));
  } else if (json_is_string(value)) {
    snprintf(text, size, "%s", json_string_value(value));
  } else if (json_is_array(value)) {
    char first[64], second[64];
    CASE_ASSERT(json_array_size(value) == 2, "a parameter array is not a pair");
    value_text(json_array_get(value, 0), first, sizeof first);
    value_text(json_array_get(value, 1), second, sizeof second);
    snprintf(text, size, "%s,%s", first, second);
  } else {
    CASE_ASSERT(false, "a parameter is neither a number, a string nor a pair");
  }
}

/* The case's params, by the op's schema: its defaults, then each given value. */
static void read_params(const plm__op_desc *op, const json_t *c, plm__op_params *params) {
  plm__op_params_default(op, params);
  const json_t *given = json_object_get(c, "params");
  const char *key;
  const json_t *value;
  json_object_foreach((json_t *)given, key, value) {
    const plm__op_param *p = NULL;
    for (int i = 0; i < op->param_count; i++)
      if (strcmp(op->params[i].name, key) == 0) p = &op->params[i];
    CASE_ASSERT(p, "%s has no parameter \"%s\"", op->name, key);
    char text[128], why[256];
    value_text(value, text, sizeof text);
    CASE_ASSERT(plm__op_param_parse(p, text, 1, 1, params, why, sizeof why), "%s: %s", key, why);
  }
}

/* What one case allocates: the inputs, the outputs, their host copies. */
typedef struct run {
  const plm__op_desc *op;
  plm_tensor in[PLM__OP_MAX_IN], out[PLM__OP_MAX_OUT];
  bool has_in[PLM__OP_MAX_IN], has_out[PLM__OP_MAX_OUT];
  void *got[PLM__OP_MAX_OUT];
} run;

static void release_run(run *r) {
  for (int k = 0; k < PLM__OP_MAX_IN; k++)
    if (r->has_in[k]) release(&r->in[k]);
  for (int k = 0; k < PLM__OP_MAX_OUT; k++) {
    if (r->has_out[k]) release(&r->out[k]);
    free(r->got[k]);
  }
}

/* Input k: the file of its slot ("input" for the first), or an integer (a count, i32
 * (1,)); an integer image where the op takes i32 becomes i32. false: not given. */
static bool read_input(const plm__op_desc *op, const json_t *c, int k, plm_tensor *t) {
  const char *key = k == 0 ? "input" : op->inputs[k].name;
  const json_t *value = json_object_get(c, key);
  if (!value || json_is_null(value)) return false;
  if (json_is_integer(value)) {
    const int32_t count = (int32_t)json_integer_value(value);
    const int64_t one = 1;
    CASE_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &one, t));
    CASE_OK(
        plm_stream_memcpy(plm_test_stream, t->data, &count, sizeof count, PLM_COPY_HOST_TO_DEVICE));
    CASE_OK(plm_stream_synchronize(plm_test_stream));
    return true;
  }
  char path[4096], err[IMAGE_ERROR_SIZE];
  snprintf(path, sizeof path, "%s/%s", fixtures_dir, string(c, key));
  image img;
  CASE_ASSERT(image_read_array(path, NULL, &img, err, sizeof err) == PLM_OK, "%s", err);
  const bool i32 = op->inputs[k].dtypes == PLM__DTYPE_MASK(I32);
  *t = i32 && img.dtype != PLM_DTYPE_I32 ? upload_as_i32(&img) : upload(&img);
  CASE_OK(plm_stream_synchronize(plm_test_stream));
  image_free(&img, NULL);
  return true;
}

static bool is_region_table(const plm_shape *shape) {
  return shape->dtype == PLM_DTYPE_F64 && shape->ndim == 2 && shape->dims[1] == PLM_REGION_COLUMNS;
}

/* The expected file of output k: "expected" itself for the main output when it is a
 * file, else "expected"'s member of the output's name (NULL: not compared). */
static const char *expected_key(const plm__op_desc *op, const json_t *c, int k,
                                const json_t **holder) {
  const json_t *expected = json_object_get(c, "expected");
  *holder = c;
  if (json_is_string(expected)) return op->outputs[k].role == PLM__OUT_MAIN ? "expected" : NULL;
  *holder = expected;
  return json_object_get(expected, op->outputs[k].name) ? op->outputs[k].name : NULL;
}

/* Whether output k is compared, and so made: a file for it, a count, or a table. */
static bool wanted(const plm__op_desc *op, const json_t *c, int k, const plm_shape *shape) {
  const json_t *holder;
  if (!op->outputs[k].optional) return true;
  return expected_key(op, c, k, &holder) || is_region_table(shape);
}

/* The case's count of regions (tables have one row more, which must stay unwritten). */
static int region_count(const json_t *c) {
  return integer(c, "count");
}

static bool compare_output(const run *r, const json_t *c, int k) {
  const plm__op_desc *op = r->op;
  const plm_tensor *t = &r->out[k];
  const plm_shape shape = {.dtype = t->dtype, .ndim = t->ndim};
  const json_t *holder;
  const char *key = expected_key(op, c, k, &holder);
  if (is_region_table(&shape)) return same_table(r->got[k], c, holder, key, region_count(c));
  if (op->outputs[k].role == PLM__OUT_COUNT) {
    const json_t *counts = json_object_get(c, "counts");
    if (counts) return same_counts(counts, r->got[k], t->dims[0]);
    const int32_t got = *(const int32_t *)r->got[k], want = region_count(c);
    return got == want || mismatched("count %d, expected %d", got, want);
  }
  if (!key) return true;
  image expected = load(holder, key);
  const double tolerance =
      t->dtype == PLM_DTYPE_F32 || t->dtype == PLM_DTYPE_F64 ? number(c, "tolerance") : 0.0;
  bool ok = same_image(op->outputs[k].name, r->got[k], t->dtype, &expected, tolerance);
  image_free(&expected, NULL);
  return ok;
}

START_TEST(test_every_case_matches_its_fixture) {
  const json_t *c = get_case(_i);
  run r = {.op = plm__op_find(string(c, "op"))};
  const plm__op_desc *op = r.op;
  CASE_ASSERT(op, "no op of the table is named \"%s\"", string(c, "op"));
  plm__op_params params;
  read_params(op, c, &params);
  plm__op_call call = {.params = &params};
  for (int k = 0; k < op->input_count; k++)
    if ((r.has_in[k] = read_input(op, c, k, &r.in[k]))) call.in[k] = &r.in[k];
  /* A region table: the case's count and one row more, which must stay unwritten. */
  for (int i = 0; i < op->param_count; i++)
    if (strcmp(op->params[i].name, "capacity") == 0) {
      const int64_t capacity = (int64_t)region_count(c) + 1;
      memcpy(plm__op_param_field(&params, op->params[i].offset), &capacity, sizeof capacity);
    }
  plm_shape shapes[PLM__OP_MAX_OUT];
  CASE_OK(plm__op_shapes(op, &call, shapes, NULL));
  for (int k = 0; k < op->output_count; k++) {
    if (!wanted(op, c, k, &shapes[k])) continue;
    if (is_region_table(&shapes[k]))
      r.out[k] = alloc_table(region_count(c));
    else
      CASE_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, shapes[k].dtype, shapes[k].ndim,
                               shapes[k].dims, &r.out[k]));
    r.has_out[k] = true;
    call.out[k] = &r.out[k];
  }
  CASE_OK(plm__op_call_public(op, plm_test_stream, &call));
  for (int k = 0; k < op->output_count; k++)
    if (r.has_out[k]) r.got[k] = download(&r.out[k]);
  bool ok = true;
  for (int k = 0; ok && k < op->output_count; k++)
    if (r.has_out[k]) ok = compare_output(&r, c, k);
  release_run(&r);
  ck_assert_msg(ok, "%s", mismatch);
}
END_TEST

/* The manifest was read, and every op of the table has cases or says where else it is
 * checked (a loop over no cases would pass silently otherwise). */
START_TEST(test_manifest_covers_every_op) {
  ck_assert_msg(manifest && all_cases && !manifest_error[0], "%s", manifest_error);
  const json_t *elsewhere = json_object_get(manifest, "without_fixtures");
  for (int k = 0; k < PLM__OP_COUNT; k++) {
    const plm__op_desc *op = plm__op_get((plm__op_kind)k);
    size_t cases = 0, i;
    const json_t *c;
    json_array_foreach(all_cases, i, c) cases += strcmp(string(c, "op"), op->name) == 0;
    const char *reason = json_string_value(json_object_get(elsewhere, op->name));
    ck_assert_msg(cases > 0 || (reason && reason[0]),
                  "MANIFEST.json has no %s case and no \"without_fixtures\" reason for it",
                  op->name);
    ck_assert_msg(!(cases > 0 && reason), "%s has cases and a \"without_fixtures\" reason",
                  op->name);
  }
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
  tcase_add_test(tcase, test_manifest_covers_every_op);
  tcase_add_loop_test(tcase, test_every_case_matches_its_fixture, 0, (int)case_count());
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(fixtures_suite);
}

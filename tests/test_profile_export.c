/* tests/test_profile_export.c: the profile's files (profile/profile_export.h),
 * written from snapshots made here by hand: profile.json read back with jansson (every
 * documented key, its type and value; NaN as null), trace.json (a thread name per
 * stream, one complete event per launch with its times, stream and args), report.html
 * (self-contained, an <svg> per chart, user text escaped, an empty profile, the pool
 * snapshots' segment maps), pool_snapshot.json read back, and write
 * failures that leave no file behind. No backend is used: the writers take a snapshot.
 *
 * `test_profile_export --sample DIR` writes the sample report to DIR/report.html (and
 * its pool snapshots to DIR/pool_snapshot.json) and exits:
 * tests/report/test-report-html.sh renders it with headless Chromium.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "profile/profile_export.h"

/* ---- the sample ------------------------------------------------------------------ */

enum { FRAMES = 6, PER_FRAME = 5, LAUNCHES = FRAMES * PER_FRAME, OPS = 5 };
#define ODD_NAME "a<b&\"c\""

static plm_profile_launch launches[LAUNCHES];
static plm_profile_op_stats ops[OPS];
static const plm_profile_calibration calibration = {.backend = "host",
                                                    .device = "Test CPU <8 cores>",
                                                    .device_copy_gbps = 20,
                                                    .h2d_gbps = 10,
                                                    .d2h_gbps = 9,
                                                    .fma_gflops = 400,
                                                    .from_cache = true};
static const plm_profile_calibration no_calibration = {.backend = "host", .device = "cpu"};
static const plm_profile_ab ab[] = {{"naive", 120.5}, {"pooled", 180.25}, {"streams K=2", 240}};

static plm_profile_op_stats make_op(const char *name, int64_t count, double mean, double bytes,
                                    double flops) {
  plm_profile_op_stats op = {0};
  snprintf(op.name, sizeof op.name, "%s", name);
  op.count = count;
  op.mean_ms = mean;
  op.total_ms = mean * (double)count;
  op.stddev_ms = mean * 0.1;
  op.min_ms = mean * 0.8;
  op.max_ms = mean * 1.3;
  op.p50_ms = mean * 0.95;
  op.p99_ms = mean * 1.25;
  op.cv = 0.1;
  op.ops_per_s = 1000 / mean;
  op.bytes = bytes;
  op.flops = flops;
  op.gb_per_s = bytes / (mean * 1e6);
  op.gflop_per_s = flops / (mean * 1e6);
  op.intensity = bytes > 0 ? flops / bytes : 0;
  op.bandwidth_fraction = op.gb_per_s / calibration.device_copy_gbps;
  op.compute_fraction = op.gflop_per_s / calibration.fma_gflops;
  if (bytes > 0)
    snprintf(op.bound, sizeof op.bound, "%s", op.intensity < 20 ? "memory" : "compute");
  op.enqueue_mean_us = 3.5;
  return op;
}

/* Ops by total time; conv has high variance and outliers. Shares add up to 1. */
static void make_ops(void) {
  ops[0] = make_op("conv", FRAMES, 2.0, 8e6, 72e6);
  ops[0].stddev_ms = 0.68;
  ops[0].cv = 0.34;
  ops[0].high_variance = true;
  ops[0].max_ms = 6.2;
  ops[0].outliers = true;
  ops[1] = make_op("entropy", FRAMES, 1.5, 4e6, 400e6);
  ops[2] = make_op("h2d", FRAMES, 0.5, 4e6, 0);
  ops[3] = make_op("d2h", FRAMES, 0.4, 1e6, 0);
  ops[4] = make_op(ODD_NAME, FRAMES, 0.1, 0, 0);
  double total = 0;
  for (int i = 0; i < OPS; i++) total += ops[i].total_ms;
  for (int i = 0; i < OPS; i++) ops[i].share = ops[i].total_ms / total;
}

/* Per frame: h2d and conv on stream 0, entropy, the odd op and d2h on stream 1. */
static void make_launches(void) {
  static const int order[PER_FRAME] = {2, 0, 1, 4, 3};
  static const int stream_of[PER_FRAME] = {0, 0, 1, 1, 1};
  for (int frame = 0; frame < FRAMES; frame++) {
    double t = frame * 3.0;
    for (int k = 0; k < PER_FRAME; k++) {
      const plm_profile_op_stats *op = &ops[order[k]];
      plm_profile_launch *l = &launches[frame * PER_FRAME + k];
      snprintf(l->name, sizeof l->name, "%s", op->name);
      l->stream = stream_of[k];
      l->frame = frame;
      l->start_ms = t;
      l->end_ms = t + op->mean_ms;
      l->enqueue_us = 2 + k;
      l->bytes = op->bytes;
      l->flops = op->flops;
      t += op->mean_ms * 0.6;
    }
  }
}

/* A pool snapshot made by hand: a 2 MiB chunk in five blocks (used, pending, free,
 * used, free) and a huge 8 MiB chunk with one used block. */
static const size_t KiB = 1024, MiB = 1024 * 1024;
static const plm_pool_segment pool_segments[] = {
    {.base = 0x7f0000000000, .size = 2 * MiB, .first_block = 0, .block_count = 5},
    {.base = 0x7f0000400000, .size = 8 * MiB, .huge = true, .first_block = 5, .block_count = 1}};
static const plm_pool_block_info pool_blocks[] = {
    {0, 0, 512 * KiB, 500000, PLM_POOL_BLOCK_USED, NULL, -1, -1, 0},
    {0, 512 * KiB, 1 * KiB, 0, PLM_POOL_BLOCK_PENDING, NULL, 0, 3, 99.5},
    {0, 513 * KiB, 511 * KiB, 0, PLM_POOL_BLOCK_FREE, NULL, 1, -1, 98},
    {0, 1 * MiB, 256 * KiB, 262144, PLM_POOL_BLOCK_USED, NULL, 0, -1, 97},
    {0, 1280 * KiB, 768 * KiB, 0, PLM_POOL_BLOCK_FREE, NULL, -1, -1, 0},
    {1, 0, 8 * MiB, 8 * MiB, PLM_POOL_BLOCK_USED, NULL, -1, -1, 0}};
enum { POOL_BLOCKS = sizeof pool_blocks / sizeof pool_blocks[0] };
static const plm_pool_snapshot pool_snapshot = {.taken_at = 100,
                                                .segments = (plm_pool_segment *)pool_segments,
                                                .segment_count = 2,
                                                .blocks = (plm_pool_block_info *)pool_blocks,
                                                .block_count = POOL_BLOCKS,
                                                .stream_count = 2,
                                                .bytes_reserved = 10 * MiB,
                                                .bytes_in_use = 768 * KiB + 8 * MiB,
                                                .bytes_free = 1279 * KiB,
                                                .bytes_pending = 1 * KiB,
                                                .largest_free_block = 768 * KiB,
                                                .free_blocks = 3,
                                                .fragmentation = 0.4,
                                                .reserved_per_in_use = 10.0 / 8.75};
static const plm__profile_pool_snapshot pool_snapshots[] = {{ODD_NAME, &pool_snapshot}};

static plm__profile_snapshot sample(void) {
  make_ops();
  make_launches();
  return (plm__profile_snapshot){.title = "bench <sample> & co",
                                 .backend = "host",
                                 .device = calibration.device,
                                 .driver = "",
                                 .commit = "0123abcd",
                                 .date = "2026-11-25T12:00:00Z",
                                 .calibration = &calibration,
                                 .overhead_us = 1.25,
                                 .launches = launches,
                                 .launch_count = LAUNCHES,
                                 .dropped = 3,
                                 .stream_count = 2,
                                 .ops = ops,
                                 .op_count = OPS,
                                 .ab = ab,
                                 .ab_count = 3,
                                 .ab_unit = "frames/s",
                                 .ab_higher_is_better = true,
                                 .pool_snapshots = pool_snapshots,
                                 .pool_snapshot_count = 1};
}

static plm__profile_snapshot empty(void) {
  return (plm__profile_snapshot){.title = "empty",
                                 .backend = "host",
                                 .device = "cpu",
                                 .driver = "",
                                 .commit = "0123abcd",
                                 .date = "2026-11-25",
                                 .calibration = &no_calibration};
}

/* ---- files ----------------------------------------------------------------------- */

static char dir[256];
static char path[512];

static void make_dir(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/plume-profile-export-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* How many entries the directory holds (a leftover temporary file counts). */
static int dir_entries(void) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

static void remove_dir(void) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  char p[600];
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (unlink(p) != 0) rmdir(p);
  }
  closedir(d);
  ck_assert_int_eq(rmdir(dir), 0);
}

static const char *in_dir(const char *name) {
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static json_t *load(const char *file) {
  json_error_t error;
  json_t *root = json_load_file(in_dir(file), 0, &error);
  ck_assert_msg(root != NULL, "%s: line %d: %s", file, error.line, error.text);
  return root;
}

/* The whole file, NUL-terminated; the caller frees it. */
static char *slurp(const char *file) {
  FILE *f = fopen(in_dir(file), "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  char *text = malloc((size_t)size + 1);
  ck_assert_ptr_nonnull(text);
  ck_assert_uint_eq(fread(text, 1, (size_t)size, f), (size_t)size);
  text[size] = '\0';
  fclose(f);
  return text;
}

static int count_of(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* ---- profile.json ---------------------------------------------------------------- */

static json_t *get(json_t *object, const char *key, json_type type) {
  json_t *value = json_object_get(object, key);
  ck_assert_msg(value != NULL, "key \"%s\" is missing", key);
  ck_assert_msg(json_typeof(value) == type ||
                    (type == JSON_REAL && json_typeof(value) == JSON_INTEGER) ||
                    (type == JSON_TRUE && json_typeof(value) == JSON_FALSE),
                "key \"%s\" has type %d, expected %d", key, json_typeof(value), type);
  return value;
}

static double num(json_t *object, const char *key) {
  return json_number_value(get(object, key, JSON_REAL));
}

static const char *str(json_t *object, const char *key) {
  return json_string_value(get(object, key, JSON_STRING));
}

static void check_header(json_t *root) {
  ck_assert_str_eq(str(root, "schema"), "plume-profile");
  ck_assert_int_eq(json_integer_value(get(root, "version", JSON_INTEGER)), 1);
  ck_assert_str_eq(str(root, "title"), "bench <sample> & co");
  ck_assert_str_eq(str(root, "backend"), "host");
  ck_assert_str_eq(str(root, "device"), "Test CPU <8 cores>");
  ck_assert_str_eq(str(root, "driver"), "");
  ck_assert_str_eq(str(root, "commit"), "0123abcd");
  ck_assert_str_eq(str(root, "date"), "2026-11-25T12:00:00Z");
  ck_assert_double_eq(num(root, "overhead_us_per_launch"), 1.25);
  json_t *c = get(root, "calibration", JSON_OBJECT);
  ck_assert_double_eq(num(c, "device_copy_gbps"), 20);
  ck_assert_double_eq(num(c, "h2d_gbps"), 10);
  ck_assert_double_eq(num(c, "d2h_gbps"), 9);
  ck_assert_double_eq(num(c, "fma_gflops"), 400);
  ck_assert(json_is_true(get(c, "from_cache", JSON_TRUE)));
  ck_assert(json_is_false(get(c, "emulated", JSON_FALSE)));
  ck_assert_double_eq(num(c, "ridge_flops_per_byte"), 20);
  json_t *l = get(root, "launches", JSON_OBJECT);
  ck_assert_int_eq(json_integer_value(get(l, "recorded", JSON_INTEGER)), LAUNCHES);
  ck_assert_int_eq(json_integer_value(get(l, "dropped", JSON_INTEGER)), 3);
  ck_assert_int_eq(json_integer_value(get(l, "streams", JSON_INTEGER)), 2);
}

static void check_op(json_t *o, const plm_profile_op_stats *op) {
  ck_assert_str_eq(str(o, "name"), op->name);
  ck_assert_int_eq(json_integer_value(get(o, "count", JSON_INTEGER)), op->count);
  static const char *const keys[] = {"total_ms",
                                     "share",
                                     "mean",
                                     "stddev",
                                     "min",
                                     "max",
                                     "p50",
                                     "p99",
                                     "cv",
                                     "ops_per_s",
                                     "bytes",
                                     "flops",
                                     "gb_per_s",
                                     "gflop_per_s",
                                     "intensity",
                                     "bandwidth_fraction",
                                     "compute_fraction",
                                     "enqueue_mean_us"};
  const double values[] = {op->total_ms,
                           op->share,
                           op->mean_ms,
                           op->stddev_ms,
                           op->min_ms,
                           op->max_ms,
                           op->p50_ms,
                           op->p99_ms,
                           op->cv,
                           op->ops_per_s,
                           op->bytes,
                           op->flops,
                           op->gb_per_s,
                           op->gflop_per_s,
                           op->intensity,
                           op->bandwidth_fraction,
                           op->compute_fraction,
                           op->enqueue_mean_us};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    ck_assert_msg(num(o, keys[i]) == values[i], "%s.%s: %.17g, expected %.17g", op->name, keys[i],
                  num(o, keys[i]), values[i]);
  ck_assert_int_eq(json_is_true(get(o, "high_variance", JSON_TRUE)), op->high_variance);
  ck_assert_int_eq(json_is_true(get(o, "outliers", JSON_TRUE)), op->outliers);
  ck_assert_str_eq(str(o, "bound"), op->bound);
  json_t *warnings = get(o, "warnings", JSON_ARRAY);
  ck_assert_uint_eq(json_array_size(warnings), (size_t)op->high_variance + op->outliers);
}

START_TEST(json_has_every_key) {
  make_dir();
  plm__profile_snapshot s = sample();
  PLM_CHECK_OK(plm__profile_write_json(&s, in_dir("profile.json")));
  json_t *root = load("profile.json");
  check_header(root);
  json_t *array = get(root, "ops", JSON_ARRAY);
  ck_assert_uint_eq(json_array_size(array), OPS);
  for (size_t i = 0; i < OPS; i++) check_op(json_array_get(array, i), &ops[i]);
  json_t *warnings = json_object_get(json_array_get(array, 0), "warnings");
  ck_assert_str_eq(json_string_value(json_array_get(warnings, 0)), "high variance: CV 34% > 20%");
  ck_assert_str_eq(json_string_value(json_array_get(warnings, 1)), "outliers: max 3.1 x mean");
  json_t *bottlenecks = get(root, "bottlenecks", JSON_ARRAY);
  ck_assert_uint_eq(json_array_size(bottlenecks), 5);
  json_t *top = json_array_get(bottlenecks, 0);
  ck_assert_str_eq(str(top, "name"), "conv");
  ck_assert_double_eq(num(top, "share"), ops[0].share);
  ck_assert_ptr_nonnull(strstr(str(top, "why"), "memory bound"));
  ck_assert_ptr_nonnull(strstr(str(json_array_get(bottlenecks, 1), "why"), "compute bound"));
  json_t *a = get(root, "ab", JSON_OBJECT);
  ck_assert_str_eq(str(a, "unit"), "frames/s");
  ck_assert(json_is_true(get(a, "higher_is_better", JSON_TRUE)));
  json_t *bars = get(a, "bars", JSON_ARRAY);
  ck_assert_uint_eq(json_array_size(bars), 3);
  for (size_t i = 0; i < 3; i++) {
    ck_assert_str_eq(str(json_array_get(bars, i), "config"), ab[i].config);
    ck_assert_double_eq(num(json_array_get(bars, i), "value"), ab[i].value);
  }
  json_decref(root);
  remove_dir();
}
END_TEST

START_TEST(json_empty_has_no_ab) {
  make_dir();
  plm__profile_snapshot s = empty();
  PLM_CHECK_OK(plm__profile_write_json(&s, in_dir("profile.json")));
  json_t *root = load("profile.json");
  ck_assert_uint_eq(json_array_size(get(root, "ops", JSON_ARRAY)), 0);
  ck_assert_uint_eq(json_array_size(get(root, "bottlenecks", JSON_ARRAY)), 0);
  ck_assert_ptr_null(json_object_get(root, "ab"));
  ck_assert_double_eq(num(get(root, "calibration", JSON_OBJECT), "ridge_flops_per_byte"), 0);
  json_decref(root);
  remove_dir();
}
END_TEST

START_TEST(json_non_finite_is_null) {
  make_dir();
  plm__profile_snapshot s = sample();
  ops[1].mean_ms = NAN;
  ops[1].stddev_ms = INFINITY;
  ops[1].cv = -INFINITY;
  s.overhead_us = NAN;
  PLM_CHECK_OK(plm__profile_write_json(&s, in_dir("profile.json")));
  json_t *root = load("profile.json");
  json_t *op = json_array_get(json_object_get(root, "ops"), 1);
  ck_assert(json_is_null(json_object_get(op, "mean")));
  ck_assert(json_is_null(json_object_get(op, "stddev")));
  ck_assert(json_is_null(json_object_get(op, "cv")));
  ck_assert(json_is_null(json_object_get(root, "overhead_us_per_launch")));
  ck_assert_double_eq(num(op, "p50"), ops[1].p50_ms);
  json_decref(root);
  remove_dir();
}
END_TEST

/* A name cut inside a UTF-8 sequence (as the profiler's 23 characters may) stays JSON. */
START_TEST(json_bad_utf8_is_replaced) {
  make_dir();
  plm__profile_snapshot s = sample();
  snprintf(ops[2].name, sizeof ops[2].name, "h2d\xC3");
  snprintf(launches[0].name, sizeof launches[0].name, "x\xFFy");
  PLM_CHECK_OK(plm__profile_write_json(&s, in_dir("profile.json")));
  PLM_CHECK_OK(plm__profile_write_trace(&s, in_dir("trace.json")));
  json_t *root = load("profile.json");
  ck_assert_str_eq(str(json_array_get(json_object_get(root, "ops"), 2), "name"), "h2d\xEF\xBF\xBD");
  json_decref(root);
  root = load("trace.json");
  json_decref(root);
  remove_dir();
}
END_TEST

/* ---- trace.json ------------------------------------------------------------------ */

static void check_metadata(json_t *events, size_t *first_launch) {
  bool process = false, thread[2] = {false, false};
  size_t i = 0;
  for (; i < json_array_size(events); i++) {
    json_t *e = json_array_get(events, i);
    if (strcmp(str(e, "ph"), "M") != 0) break;
    ck_assert_int_eq(json_integer_value(get(e, "pid", JSON_INTEGER)), 1);
    const char *name = json_string_value(json_object_get(get(e, "args", JSON_OBJECT), "name"));
    if (strcmp(str(e, "name"), "process_name") == 0) {
      ck_assert_str_eq(name, "plume");
      process = true;
    } else {
      ck_assert_str_eq(str(e, "name"), "thread_name");
      json_int_t tid = json_integer_value(get(e, "tid", JSON_INTEGER));
      ck_assert(tid == 1 || tid == 2);
      char expected[32];
      snprintf(expected, sizeof expected, "stream %d", (int)tid - 1);
      ck_assert_str_eq(name, expected);
      thread[tid - 1] = true;
    }
  }
  ck_assert(process && thread[0] && thread[1]);
  *first_launch = i;
}

static void check_event(json_t *e, const plm_profile_launch *l) {
  ck_assert_str_eq(str(e, "name"), l->name);
  ck_assert_str_eq(str(e, "ph"), "X");
  bool copy = strcmp(l->name, "h2d") == 0 || strcmp(l->name, "d2h") == 0;
  ck_assert_str_eq(str(e, "cat"), copy ? "copy" : "op");
  ck_assert_double_eq_tol(num(e, "ts"), l->start_ms * 1000, 1e-9);
  ck_assert_double_eq_tol(num(e, "dur"), (l->end_ms - l->start_ms) * 1000, 1e-9);
  ck_assert_int_eq(json_integer_value(get(e, "pid", JSON_INTEGER)), 1);
  ck_assert_int_eq(json_integer_value(get(e, "tid", JSON_INTEGER)), l->stream + 1);
  json_t *args = get(e, "args", JSON_OBJECT);
  ck_assert_int_eq(json_integer_value(get(args, "frame", JSON_INTEGER)), l->frame);
  ck_assert_double_eq(num(args, "bytes"), l->bytes);
  ck_assert_double_eq(num(args, "flops"), l->flops);
  ck_assert_double_eq(num(args, "enqueue_us"), l->enqueue_us);
}

START_TEST(pool_snapshots_json_has_every_snapshot) {
  make_dir();
  plm__profile_snapshot s = sample();
  PLM_CHECK_OK(plm__profile_write_pool_snapshots(&s, in_dir("pool_snapshot.json")));
  json_t *root = load("pool_snapshot.json");
  ck_assert_str_eq(str(root, "schema"), "plume-pool-snapshots");
  ck_assert_int_eq(json_integer_value(get(root, "version", JSON_INTEGER)), 1);
  json_t *snapshots = get(root, "snapshots", JSON_ARRAY);
  ck_assert_uint_eq(json_array_size(snapshots), 1);
  json_t *named = json_array_get(snapshots, 0);
  ck_assert_str_eq(str(named, "name"), ODD_NAME);
  json_t *snapshot = get(named, "snapshot", JSON_OBJECT);
  ck_assert_str_eq(str(snapshot, "schema"), "plume-pool-snapshot");
  json_t *blocks = get(snapshot, "blocks", JSON_ARRAY);
  ck_assert_uint_eq(json_array_size(blocks), POOL_BLOCKS);
  ck_assert_str_eq(str(json_array_get(blocks, 1), "state"), "pending");
  ck_assert_int_eq(json_integer_value(get(json_array_get(blocks, 2), "stream", JSON_INTEGER)), 1);
  json_t *totals = get(snapshot, "totals", JSON_OBJECT);
  ck_assert_double_eq(num(totals, "fragmentation"), 0.4);
  ck_assert_int_eq(json_integer_value(get(totals, "bytes_reserved", JSON_INTEGER)), 10 * MiB);
  ck_assert_uint_eq(json_array_size(get(snapshot, "segments", JSON_ARRAY)), 2);
  json_decref(root);
  remove_dir();
}
END_TEST

START_TEST(trace_has_every_launch) {
  make_dir();
  plm__profile_snapshot s = sample();
  PLM_CHECK_OK(plm__profile_write_trace(&s, in_dir("trace.json")));
  json_t *root = load("trace.json");
  ck_assert_str_eq(str(root, "displayTimeUnit"), "ms");
  json_t *other = get(root, "otherData", JSON_OBJECT);
  ck_assert_str_eq(str(other, "title"), s.title);
  ck_assert_str_eq(str(other, "backend"), "host");
  ck_assert_str_eq(str(other, "device"), s.device);
  ck_assert_str_eq(str(other, "commit"), "0123abcd");
  json_t *events = get(root, "traceEvents", JSON_ARRAY);
  size_t first;
  check_metadata(events, &first);
  ck_assert_uint_eq(json_array_size(events) - first, LAUNCHES);
  bool seen[OPS] = {false};
  for (size_t i = 0; i < LAUNCHES; i++) {
    check_event(json_array_get(events, first + i), &launches[i]);
    for (int k = 0; k < OPS; k++)
      if (strcmp(launches[i].name, ops[k].name) == 0) seen[k] = true;
  }
  for (int k = 0; k < OPS; k++) ck_assert_msg(seen[k], "no event of %s", ops[k].name);
  json_decref(root);
  remove_dir();
}
END_TEST

START_TEST(trace_empty) {
  make_dir();
  plm__profile_snapshot s = empty();
  PLM_CHECK_OK(plm__profile_write_trace(&s, in_dir("trace.json")));
  json_t *root = load("trace.json");
  ck_assert_uint_eq(json_array_size(get(root, "traceEvents", JSON_ARRAY)), 1);
  json_decref(root);
  remove_dir();
}
END_TEST

/* ---- report.html ----------------------------------------------------------------- */

static void check_self_contained(const char *html) {
  ck_assert_ptr_null(strstr(html, "http://"));
  ck_assert_ptr_null(strstr(html, "https://"));
  ck_assert_ptr_null(strstr(html, "<script src"));
  ck_assert_ptr_null(strstr(html, "<link"));
  ck_assert_ptr_null(strstr(html, "@import"));
  ck_assert_ptr_null(strstr(html, "url(http"));
  ck_assert_ptr_nonnull(strstr(html, "<!DOCTYPE html>"));
  ck_assert_ptr_nonnull(strstr(html, "</html>"));
}

START_TEST(html_has_every_chart) {
  make_dir();
  plm__profile_snapshot s = sample();
  PLM_CHECK_OK(plm__profile_write_html(&s, in_dir("report.html")));
  char *html = slurp("report.html");
  check_self_contained(html);
  static const char *const charts[] = {"time-per-op", "timeline", "ab", "roofline",
                                       "pool-snapshots"};
  for (size_t i = 0; i < 5; i++) {
    char needle[64];
    snprintf(needle, sizeof needle, "<section id=\"%s\">", charts[i]);
    const char *section = strstr(html, needle);
    ck_assert_msg(section != NULL, "no section %s", charts[i]);
    const char *svg = strstr(section, "<svg"), *end = strstr(section, "</section>");
    ck_assert_msg(svg && svg < end, "no <svg in section %s", charts[i]);
  }
  ck_assert_int_eq(count_of(html, "<svg"), 5);
  ck_assert_ptr_nonnull(strstr(html, "id=\"bottlenecks\""));
  /* The pool map: a rect with a tooltip per block, an outline per segment. */
  ck_assert_ptr_nonnull(strstr(html, "id=\"pool-map-0\""));
  ck_assert_int_eq(count_of(html, "<rect class=\"block\""), POOL_BLOCKS);
  ck_assert_int_eq(count_of(html, "<rect class=\"segment\""), 2);
  ck_assert_ptr_nonnull(strstr(html,
                               "offset 0x80000 (512 KiB), 1.00 KiB, pending, on stream 0, "
                               "small class 3, last freed 0.500 s before the snapshot"));
  ck_assert_ptr_nonnull(strstr(html, "#1: 8.00 MiB, huge"));
  /* User text is escaped everywhere. */
  ck_assert_ptr_null(strstr(html, ODD_NAME));
  ck_assert_ptr_null(strstr(html, "<sample>"));
  ck_assert_ptr_null(strstr(html, "<8 cores>"));
  ck_assert_int_ge(count_of(html, "a&lt;b&amp;&quot;c&quot;"), 5);
  ck_assert_ptr_nonnull(strstr(html, "bench &lt;sample&gt; &amp; co"));
  /* The warnings, the ridge and the A/B unit are shown. */
  ck_assert_ptr_nonnull(strstr(html, "high variance: CV 34% &gt; 20%"));
  ck_assert_ptr_nonnull(strstr(html, "outliers: max 3.1 x mean"));
  ck_assert_ptr_nonnull(strstr(html, "ridge 20 flops/byte"));
  ck_assert_ptr_nonnull(strstr(html, "240 frames/s (best)"));
  /* A timeline slice for each launch of the first 4 frames only. */
  ck_assert_int_eq(count_of(html, ", frame 3:"), PER_FRAME);
  ck_assert_int_eq(count_of(html, ", frame 4:"), 0);
  free(html);
  remove_dir();
}
END_TEST

START_TEST(html_without_calibration_or_frames) {
  make_dir();
  plm__profile_snapshot s = sample();
  s.calibration = &no_calibration;
  s.ab_count = 0;
  s.pool_snapshot_count = 0;
  for (size_t i = 0; i < LAUNCHES; i++) launches[i].frame = -1;
  PLM_CHECK_OK(plm__profile_write_html(&s, in_dir("report.html")));
  char *html = slurp("report.html");
  check_self_contained(html);
  ck_assert_ptr_nonnull(strstr(html, "No calibration"));
  ck_assert_ptr_null(strstr(html, "id=\"ab\""));
  ck_assert_ptr_null(strstr(html, "id=\"pool-snapshots\""));
  ck_assert_int_eq(count_of(html, "<svg"), 3);
  /* The roofline still plots the ops: a dot per op with flops and bytes. */
  ck_assert_int_eq(count_of(html, "<circle"), 2);
  ck_assert_int_eq(count_of(html, ", frame -1:"), LAUNCHES);
  free(html);
  remove_dir();
}
END_TEST

/* A calibration measured on the CUDA emulator: profile.json says "emulated" and the
 * report's roofline note says its figures are the emulator's, no GPU's; a GPU's (the
 * sample's) has neither. */
START_TEST(an_emulated_calibration_is_labelled) {
  make_dir();
  plm__profile_snapshot s = sample();
  PLM_CHECK_OK(plm__profile_write_html(&s, in_dir("report.html")));
  char *html = slurp("report.html");
  ck_assert_ptr_null(strstr(html, "CUDA emulator"));
  free(html);
  plm_profile_calibration emulated = calibration;
  emulated.emulated = true;
  s.calibration = &emulated;
  PLM_CHECK_OK(plm__profile_write_json(&s, in_dir("profile.json")));
  json_t *root = load("profile.json");
  ck_assert(json_is_true(get(get(root, "calibration", JSON_OBJECT), "emulated", JSON_TRUE)));
  json_decref(root);
  PLM_CHECK_OK(plm__profile_write_html(&s, in_dir("report.html")));
  html = slurp("report.html");
  ck_assert_ptr_nonnull(strstr(html, "Measured on the CUDA emulator: these figures and every time "
                                     "on this page are the emulator's on a CPU, no GPU's."));
  free(html);
  remove_dir();
}
END_TEST

START_TEST(html_empty) {
  make_dir();
  plm__profile_snapshot s = empty();
  PLM_CHECK_OK(plm__profile_write_html(&s, in_dir("report.html")));
  char *html = slurp("report.html");
  check_self_contained(html);
  ck_assert_ptr_nonnull(strstr(html, "No launches were recorded"));
  free(html);
  /* Pool snapshots are drawn without launches too (bench_pool records none). */
  s.pool_snapshots = pool_snapshots;
  s.pool_snapshot_count = 1;
  PLM_CHECK_OK(plm__profile_write_html(&s, in_dir("report.html")));
  html = slurp("report.html");
  ck_assert_ptr_nonnull(strstr(html, "No launches were recorded"));
  ck_assert_int_eq(count_of(html, "<svg"), 1);
  ck_assert_int_eq(count_of(html, "<rect class=\"block\""), POOL_BLOCKS);
  free(html);
  remove_dir();
}
END_TEST

/* Numbers a broken clock or a bad statistic could give: the page is still written,
 * with "n/a" for what is not a number, and the timeline's axis ends. */
START_TEST(html_odd_numbers) {
  make_dir();
  plm__profile_snapshot s = sample();
  for (size_t i = 0; i < LAUNCHES; i++) {
    launches[i].start_ms += 1e12;
    launches[i].end_ms = launches[i].start_ms + 1e-7;
  }
  launches[1].end_ms = NAN;
  launches[2].stream = 1000;
  ops[0].mean_ms = NAN;
  ops[1].total_ms = INFINITY;
  ops[1].intensity = NAN;
  PLM_CHECK_OK(plm__profile_write_html(&s, in_dir("report.html")));
  char *html = slurp("report.html");
  check_self_contained(html);
  ck_assert_ptr_nonnull(strstr(html, "n/a"));
  ck_assert_ptr_null(strstr(html, "nan"));
  ck_assert_ptr_nonnull(strstr(html, "</html>"));
  free(html);
  remove_dir();
}
END_TEST

/* ---- failures -------------------------------------------------------------------- */

typedef plm_status (*writer)(const plm__profile_snapshot *, const char *);
static const writer writers[] = {plm__profile_write_json, plm__profile_write_trace,
                                 plm__profile_write_html, plm__profile_write_pool_snapshots};
enum { WRITERS = sizeof writers / sizeof writers[0] };

START_TEST(write_into_missing_dir_fails) {
  make_dir();
  plm__profile_snapshot s = sample();
  for (size_t i = 0; i < WRITERS; i++) {
    PLM_CHECK_FAILS(writers[i](&s, in_dir("missing/out.json")), PLM_ERR_IO, "missing/out.json");
    ck_assert_int_eq(dir_entries(), 0);
  }
  remove_dir();
}
END_TEST

/* A directory where the file should go: refused, nothing written. */
START_TEST(write_over_a_dir_fails) {
  make_dir();
  plm__profile_snapshot s = sample();
  ck_assert_int_eq(mkdir(in_dir("out"), 0755), 0);
  for (size_t i = 0; i < WRITERS; i++) {
    PLM_CHECK_FAILS(writers[i](&s, in_dir("out")), PLM_ERR_IO, "out: is a folder");
    ck_assert_int_eq(dir_entries(), 1);
  }
  remove_dir();
}
END_TEST

START_TEST(null_arguments_fail) {
  plm__profile_snapshot s = sample();
  for (size_t i = 0; i < WRITERS; i++) {
    PLM_CHECK_FAILS(writers[i](NULL, "/tmp/x"), PLM_ERR_INVALID_ARG, "snapshot is NULL");
    PLM_CHECK_FAILS(writers[i](&s, NULL), PLM_ERR_INVALID_ARG, "path is NULL");
  }
}
END_TEST

static Suite *profile_export_suite(void) {
  Suite *suite = suite_create("profile_export");
  TCase *json = tcase_create("json");
  tcase_add_test(json, json_has_every_key);
  tcase_add_test(json, json_empty_has_no_ab);
  tcase_add_test(json, json_non_finite_is_null);
  tcase_add_test(json, json_bad_utf8_is_replaced);
  tcase_add_test(json, pool_snapshots_json_has_every_snapshot);
  suite_add_tcase(suite, json);
  TCase *trace = tcase_create("trace");
  tcase_add_test(trace, trace_has_every_launch);
  tcase_add_test(trace, trace_empty);
  suite_add_tcase(suite, trace);
  TCase *html = tcase_create("html");
  tcase_add_test(html, html_has_every_chart);
  tcase_add_test(html, html_without_calibration_or_frames);
  tcase_add_test(html, html_empty);
  tcase_add_test(html, an_emulated_calibration_is_labelled);
  tcase_add_test(html, html_odd_numbers);
  suite_add_tcase(suite, html);
  TCase *failures = tcase_create("failures");
  tcase_add_test(failures, write_into_missing_dir_fails);
  tcase_add_test(failures, write_over_a_dir_fails);
  tcase_add_test(failures, null_arguments_fail);
  suite_add_tcase(suite, failures);
  return suite;
}

/* Write the sample report (and its pool snapshots) for the Chromium check. */
static int write_sample(const char *out_dir) {
  plm__profile_snapshot s = sample();
  char file[1024];
  snprintf(file, sizeof file, "%s/report.html", out_dir);
  plm_status status = plm__profile_write_html(&s, file);
  if (status == PLM_OK) {
    snprintf(file, sizeof file, "%s/pool_snapshot.json", out_dir);
    status = plm__profile_write_pool_snapshots(&s, file);
  }
  if (status != PLM_OK) fprintf(stderr, "test_profile_export: %s\n", plm_last_error());
  return status == PLM_OK ? EXIT_SUCCESS : EXIT_FAILURE;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--sample") == 0) return write_sample(argv[2]);
  return plm_test_main(profile_export_suite);
}

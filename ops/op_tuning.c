/* ops/op_tuning.c: the tunables' values in force, and the tables `plume tune` writes
 * (plume/tuning.h, ops/op_tuning.h).
 *
 * The process keeps, under one lock, the values forced by plm_tuning_set (per backend, op,
 * tunable and size class; 0: none) and up to MAX_TABLES device tables, each found by its
 * key and loaded from its file at the first call on a context of that device. A table
 * file is JSON, schema "plume-tuning" version 1 (docs/tuning-schema.md):
 *   {"schema", "version", "key", "backend", "device", "driver", "plume",
 *    "entries": [{"op", "tunable", "size_class", "value", "default", "best",
 *                 "default_ms", "best_ms", "cv", "kept"}]}
 * An entry the library does not know (an op or tunable renamed since, a value no longer
 * a candidate) is skipped on load, so an old table can only fall back to defaults.
 *
 * A table's entries are indexed once, when they are loaded or stored (table_index): the
 * value of each (op, tunable, size class) and each op's model points, so that resolving a
 * call never scans the entries, whatever their count (at most PLM_TUNING_MAX_ENTRIES).
 *
 * Beside the ops, the tables hold one subject that is no op: plm_pipeline_run_stream's
 * batch (PLM_TUNING_RUN_STREAM, PLM_TUNING_BATCH_BYTES; plm_tuning_batch), described like
 * an op's tunables (run_stream_subject) and indexed after the ops (RUN_STREAM_KIND), so
 * that setting, getting, loading and storing it are the ops' own paths. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/op_tuning.h"
#include "plume/version.h"
#include "streams/file.h"
#include "streams/error.h"

enum { MAX_TABLES = 8, MAX_POINTS = 64, PATH_SIZE = 512, SCHEMA_VERSION = 1 };

static const char SCHEMA[] = "plume-tuning";

/* The subjects of a table: the ops, then plm_pipeline_run_stream. */
enum { RUN_STREAM_KIND = PLM__OP_COUNT, SUBJECT_COUNT };

/* The bytes of input frames a batch gathers, on one backend: 0 (a frame at a time) or
 * 16 KiB to 1 MiB. */
#define BATCH_BYTES_TUNABLE(on)                                                                \
  {                                                                                            \
    .name = PLM_TUNING_BATCH_BYTES, .backend = (on), .fallback = 0, .candidate_count = 8,      \
    .candidates = {0, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20}, \
    .help = "the input bytes a batch of small frames gathers (0: a frame at a time)"           \
  }

static const plm__op_tunable run_stream_tunables[] = {BATCH_BYTES_TUNABLE(PLM_BACKEND_HOST),
                                                      BATCH_BYTES_TUNABLE(PLM_BACKEND_CUDA)};

/* plm_pipeline_run_stream as a subject of the tables: a name and tunables, no kernels. */
static const plm__op_desc run_stream_subject = {.name = PLM_TUNING_RUN_STREAM,
                                                .kind = (plm__op_kind)RUN_STREAM_KIND,
                                                .tunable_count = 2,
                                                .tunables = run_stream_tunables};

/* The op, or the run_stream subject, named `name`; NULL when none is. */
static const plm__op_desc *subject_find(const char *name) {
  if (name && strcmp(name, PLM_TUNING_RUN_STREAM) == 0) return &run_stream_subject;
  return plm__op_find(name);
}

/* What resolving needs of a table's entries, by op kind: each tunable's value per size
 * class (the first entry for it, as the entries list them), and the points of the model
 * (points_of's rule applied once). */
typedef struct table_index {
  int64_t value[SUBJECT_COUNT][PLM__OP_MAX_TUNABLES][PLM_SIZE_CLASS_COUNT];
  bool has_value[SUBJECT_COUNT][PLM__OP_MAX_TUNABLES][PLM_SIZE_CLASS_COUNT];
  plm__tuning_point points[PLM__OP_COUNT][2][MAX_POINTS]; /* [1]: of the op alone */
  int point_count[PLM__OP_COUNT][2];
} table_index;

typedef struct table {
  char key[PATH_SIZE];
  char path[PATH_SIZE];
  char problem[PATH_SIZE]; /* why a file at path could not be read ("" when none) */
  bool in_use;             /* loaded from a file, or stored in this process */
  plm_tuning_entry *entries;
  size_t count;
  table_index *index; /* of entries; NULL while there are none */
} table;

static struct {
  pthread_mutex_t lock;
  int64_t forced[2][SUBJECT_COUNT][PLM__OP_MAX_TUNABLES][PLM_SIZE_CLASS_COUNT];
  table tables[MAX_TABLES];
  int table_count;
} tuning = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const char *const class_names[] = {"small", "medium", "large"};

plm_size_class plm_size_class_of(double bytes) {
  if (bytes < (double)(1 << 20)) return PLM_SIZE_SMALL;
  return bytes < (double)(64 << 20) ? PLM_SIZE_MEDIUM : PLM_SIZE_LARGE;
}

const char *plm_size_class_name(plm_size_class size_class) {
  return (unsigned)size_class < PLM_SIZE_CLASS_COUNT ? class_names[size_class] : NULL;
}

static int class_index(const char *name) {
  for (int c = 0; name && c < PLM_SIZE_CLASS_COUNT; c++)
    if (strcmp(class_names[c], name) == 0) return c;
  return -1;
}

static int backend_slot(plm_backend backend) {
  return backend == PLM_BACKEND_CUDA ? 1 : 0;
}

/* PLUME_TUNING as read: "off", "refresh" or "on" (anything else). */
static const char *setting(void) {
  const char *value = getenv("PLUME_TUNING");
  if (value && strcmp(value, "off") == 0) return "off";
  if (value && strcmp(value, "refresh") == 0) return "refresh";
  return "on";
}

int plm__op_tunable_index(const plm__op_desc *op, const char *name, plm_backend backend) {
  for (int k = 0; name && k < op->tunable_count; k++)
    if (op->tunables[k].backend == backend && strcmp(op->tunables[k].name, name) == 0) return k;
  return -1;
}

static bool is_candidate(const plm__op_tunable *t, int64_t value) {
  for (int k = 0; k < t->candidate_count; k++)
    if (t->candidates[k] == value) return true;
  return false;
}

/* "1, 2, 4, 8 or 16" */
static void candidates_text(const plm__op_tunable *t, char *text, size_t size) {
  text[0] = '\0';
  for (int k = 0; k < t->candidate_count; k++)
    snprintf(text + strlen(text), size - strlen(text), "%s%" PRId64,
             k == 0                        ? ""
             : k + 1 == t->candidate_count ? " or "
                                           : ", ",
             t->candidates[k]);
}

/* An entry's op (or the run_stream subject) and tunable (of backend), its value a
 * candidate, or an entry of an op alone (tunable "", value 0; *index -1); NULL otherwise. */
static const plm__op_desc *entry_op(const plm_tuning_entry *e, plm_backend backend, int *index) {
  const plm__op_desc *op = subject_find(e->op);
  *index = -1;
  /* A point of the model (no tunable): value 0; an op's only. */
  if (op && e->tunable[0] == '\0')
    return (unsigned)e->size_class < PLM_SIZE_CLASS_COUNT && e->value == 0 &&
                   op != &run_stream_subject
               ? op
               : NULL;
  *index = op ? plm__op_tunable_index(op, e->tunable, backend) : -1;
  if (*index < 0 || (unsigned)e->size_class >= PLM_SIZE_CLASS_COUNT ||
      !is_candidate(&op->tunables[*index], e->value))
    return NULL;
  return op;
}

/* ---- the cache directory -------------------------------------------------------------- */

static bool make_dir(const char *dir) {
  return mkdir(dir, 0755) == 0 || errno == EEXIST;
}

bool plm__cache_dir(char *dir, size_t size, bool make) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg && xdg[0])
    n = snprintf(dir, size, "%s/plume", xdg);
  else if (home && home[0])
    n = snprintf(dir, size, "%s/.cache/plume", home);
  else
    return false;
  if (n < 0 || (size_t)n >= size) return false;
  if (!make) return true;
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = '\0';
    bool made = make_dir(dir);
    *slash = '/';
    if (!made) return false;
  }
  return make_dir(dir);
}

/* ---- keys and files --------------------------------------------------------------------- */

static void device_key(const plm_context *ctx, char *key, size_t size) {
  snprintf(key, size, "%s|%.255s|%d|%d|%s", plm_backend_name(ctx->info.backend), ctx->info.name,
           ctx->info.device, ctx->info.driver_version, plm_version_string());
  for (char *c = key; *c; c++)
    if (*c == '\n' || *c == '\t') *c = ' ';
}

/* FNV-1a: the file's name from its key (which the file holds, and loading compares). */
static uint64_t key_hash(const char *key) {
  uint64_t h = 1469598103934665603ULL;
  for (const unsigned char *c = (const unsigned char *)key; *c; c++)
    h = (h ^ *c) * 1099511628211ULL;
  return h;
}

static void table_path(const plm_context *ctx, const char *key, char *path, size_t size) {
  char dir[PATH_SIZE];
  path[0] = '\0';
  if (!plm__cache_dir(dir, sizeof dir, false)) return;
  int n = snprintf(path, size, "%s/tuning-%s-%016" PRIx64 ".json", dir,
                   plm_backend_name(ctx->info.backend), key_hash(key));
  if (n < 0 || (size_t)n >= size) path[0] = '\0';
}

static const char *string_of(json_t *object, const char *name) {
  const char *s = json_string_value(json_object_get(object, name));
  return s ? s : "";
}

/* Index t's entries (checked by entry_op for backend); false when there is no memory
 * for the index (t->index then NULL: the defaults run). */
static bool table_index_build(table *t, plm_backend backend) {
  free(t->index);
  t->index = NULL;
  if (t->count == 0) return true;
  table_index *x = calloc(1, sizeof *x);
  if (!x) return false;
  for (size_t k = 0; k < t->count; k++) {
    const plm_tuning_entry *e = &t->entries[k];
    int tunable;
    const plm__op_desc *op = entry_op(e, backend, &tunable);
    if (!op) continue;
    if (tunable >= 0 && !x->has_value[op->kind][tunable][e->size_class]) {
      x->has_value[op->kind][tunable][e->size_class] = true;
      x->value[op->kind][tunable][e->size_class] = e->value;
    }
    if (op == &run_stream_subject) continue; /* no op: no point of the model */
    /* A point: a time of the model and a measured one; a tunable's entry gives its time
     * with the value in use. */
    int *n = &x->point_count[op->kind][tunable < 0];
    if (e->model_ms > 0 && e->default_ms > 0 && *n < MAX_POINTS)
      x->points[op->kind][tunable < 0][(*n)++] = (plm__tuning_point){
          .model_ms = e->model_ms, .measured_ms = e->kept ? e->best_ms : e->default_ms};
  }
  t->index = x;
  return true;
}

/* The file's JSON through the one opener (streams/file.h: never blocking on a FIFO); NULL
 * when there is no file, or (t->problem says why) it could not be read or is larger than
 * PLM_TUNING_MAX_FILE_BYTES (not parsed). A file that reads but is no table (damaged,
 * another schema or key) is not a problem: it gives defaults, and plume tune replaces it. */
static json_t *table_read(table *t) {
  char why[PATH_SIZE];
  struct stat st;
  FILE *file = plm__file_open_regular(t->path, PLM__FILE_READ, &st, why, sizeof why);
  if (!file) {
    if (errno != ENOENT) snprintf(t->problem, sizeof t->problem, "%s", why);
    return NULL;
  }
  if (st.st_size > PLM_TUNING_MAX_FILE_BYTES) {
    snprintf(t->problem, sizeof t->problem,
             "%lld bytes, more than the %d a tuning table may take (not read)",
             (long long)st.st_size, PLM_TUNING_MAX_FILE_BYTES);
    fclose(file);
    return NULL;
  }
  json_error_t error;
  json_t *root = json_loadf(file, 0, &error);
  if (ferror(file)) snprintf(t->problem, sizeof t->problem, "reading failed: %s", strerror(errno));
  fclose(file);
  if (t->problem[0]) {
    json_decref(root);
    return NULL;
  }
  return root;
}

/* The file's entries into t (its key must be t's); nothing when anything is amiss. */
static void table_load(table *t, plm_backend backend) {
  json_t *root = table_read(t);
  json_t *entries = json_object_get(root, "entries");
  if (!root || strcmp(string_of(root, "schema"), SCHEMA) != 0 ||
      json_integer_value(json_object_get(root, "version")) != SCHEMA_VERSION ||
      strcmp(string_of(root, "key"), t->key) != 0 || !json_is_array(entries)) {
    json_decref(root);
    return;
  }
  const size_t n = json_array_size(entries);
  if (n > PLM_TUNING_MAX_ENTRIES) {
    snprintf(t->problem, sizeof t->problem,
             "%zu entries, more than the %d a tuning table may hold (not loaded)", n,
             PLM_TUNING_MAX_ENTRIES);
    json_decref(root);
    return;
  }
  t->entries = calloc(n + 1, sizeof *t->entries);
  if (!t->entries) {
    json_decref(root);
    return;
  }
  for (size_t k = 0; k < n; k++) {
    json_t *j = json_array_get(entries, k);
    plm_tuning_entry e = {.size_class = class_index(string_of(j, "size_class")),
                          .value = json_integer_value(json_object_get(j, "value")),
                          .fallback = json_integer_value(json_object_get(j, "default")),
                          .best = json_integer_value(json_object_get(j, "best")),
                          .default_ms = json_number_value(json_object_get(j, "default_ms")),
                          .best_ms = json_number_value(json_object_get(j, "best_ms")),
                          .cv = json_number_value(json_object_get(j, "cv")),
                          .kept = json_is_true(json_object_get(j, "kept")),
                          .model_ms = json_number_value(json_object_get(j, "model_ms"))};
    snprintf(e.op, sizeof e.op, "%s", string_of(j, "op"));
    snprintf(e.tunable, sizeof e.tunable, "%s", string_of(j, "tunable"));
    int index;
    if (entry_op(&e, backend, &index)) t->entries[t->count++] = e;
  }
  t->in_use = table_index_build(t, backend);
  json_decref(root);
}

static json_t *table_json(const plm_context *ctx, const table *t) {
  json_t *entries = json_array();
  for (size_t k = 0; entries && k < t->count; k++) {
    const plm_tuning_entry *e = &t->entries[k];
    json_array_append_new(
        entries, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:f, s:f, s:b, s:f}", "op", e->op,
                           "tunable", e->tunable, "size_class", class_names[e->size_class], "value",
                           (json_int_t)e->value, "default", (json_int_t)e->fallback, "best",
                           (json_int_t)e->best, "default_ms", e->default_ms, "best_ms", e->best_ms,
                           "cv", e->cv, "kept", (int)e->kept, "model_ms", e->model_ms));
  }
  return json_pack("{s:s, s:i, s:s, s:s, s:s, s:i, s:s, s:o*}", "schema", SCHEMA, "version",
                   SCHEMA_VERSION, "key", t->key, "backend", plm_backend_name(ctx->info.backend),
                   "device", ctx->info.name, "driver", ctx->info.driver_version, "plume",
                   plm_version_string(), "entries", entries);
}

/* Write t to its path through the one writer (streams/file.h: a temporary file renamed
 * over it, through a link to its target). A file there that could not be read is never
 * replaced: it may be a table the user has not lost yet. */
static plm_status table_write(const plm_context *ctx, const table *t) {
  char dir[PATH_SIZE], why[PATH_SIZE + 256];
  if (t->problem[0])
    return plm__fail_raw(PLM_ERR_IO,
                         "the tuning table %s: %s: not replaced (remove it, or make it a "
                         "readable regular file, then run plume tune again)",
                         t->path, t->problem);
  if (!plm__cache_dir(dir, sizeof dir, true) || !t->path[0])
    return plm__fail_raw(PLM_ERR_IO,
                         "no cache directory for the tuning table "
                         "(XDG_CACHE_HOME and HOME unset, or not writable)");
  json_t *root = table_json(ctx, t);
  if (!root) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no memory for the tuning table");
  plm__file_out out;
  plm_status status = plm__file_out_open(&out, t->path, why, sizeof why);
  if (status == PLM_OK) {
    json_dumpf(root, out.file, JSON_INDENT(2)); /* a failed write shows in the commit */
    status = plm__file_out_commit(&out, why, sizeof why);
  }
  json_decref(root);
  if (status != PLM_OK)
    return plm__fail_raw(status, "cannot write the tuning table %s: %s", t->path, why);
  return PLM_OK;
}

/* ctx's device's table, found or made (and loaded as PLUME_TUNING says); under the lock.
 * NULL when MAX_TABLES devices hold a table already (the defaults then). */
static table *table_of(const plm_context *ctx) {
  char key[PATH_SIZE];
  device_key(ctx, key, sizeof key);
  for (int k = 0; k < tuning.table_count; k++)
    if (strcmp(tuning.tables[k].key, key) == 0) return &tuning.tables[k];
  if (tuning.table_count == MAX_TABLES) return NULL;
  table *t = &tuning.tables[tuning.table_count++];
  *t = (table){0};
  snprintf(t->key, sizeof t->key, "%s", key);
  const char *mode = setting();
  if (strcmp(mode, "off") != 0) table_path(ctx, key, t->path, sizeof t->path);
  if (strcmp(mode, "on") == 0 && t->path[0]) table_load(t, ctx->info.backend);
  /* refresh reads no table, but still never replaces one it could not read */
  if (strcmp(mode, "refresh") == 0 && t->path[0]) json_decref(table_read(t));
  return t;
}

/* The value in force under the lock: forced, else t's entry, else the default. */
static int64_t value_of(const table *t, plm_backend backend, const plm__op_desc *op, int index,
                        plm_size_class size_class) {
  const int64_t forced = tuning.forced[backend_slot(backend)][op->kind][index][size_class];
  if (forced) return forced;
  if (t && t->index && t->index->has_value[op->kind][index][size_class])
    return t->index->value[op->kind][index][size_class];
  return op->tunables[index].fallback;
}

void plm__op_tuning_resolve(const plm_context *ctx, const plm__op_desc *op,
                            const plm__op_call *call, plm__op_tuning *out) {
  *out = (plm__op_tuning){{0}};
  if (op->tunable_count == 0) return;
  plm_op_cost cost = {0};
  if (op->cost) op->cost(call, &cost);
  const plm_size_class size_class = plm_size_class_of(cost.bytes);
  const plm_backend backend = ctx->info.backend;
  pthread_mutex_lock(&tuning.lock);
  const table *t = table_of(ctx);
  for (int k = 0; k < op->tunable_count; k++)
    out->values[k] = op->tunables[k].backend == backend ? value_of(t, backend, op, k, size_class)
                                                        : op->tunables[k].fallback;
  pthread_mutex_unlock(&tuning.lock);
}

/* The points of op in table t (the first MAX_POINTS, from its index): its entries of the
 * op alone (tunable ""), else those of its tunables (sums over a class's workloads), with
 * a model and a measured time. */
static int points_of(const table *t, const plm__op_desc *op, plm__tuning_point *points) {
  if (!t->index) return 0;
  const int alone = t->index->point_count[op->kind][1] > 0;
  const int n = t->index->point_count[op->kind][alone];
  memcpy(points, t->index->points[op->kind][alone], (size_t)n * sizeof *points);
  return n;
}

static int by_model_ms(const void *a, const void *b) {
  const double x = ((const plm__tuning_point *)a)->model_ms;
  const double y = ((const plm__tuning_point *)b)->model_ms;
  return (x > y) - (x < y);
}

/* Sort points by model time and merge those of one model time (within 1e-6 of it: two
 * workloads the model cannot tell apart, such as entropy's windows where both are
 * memory-bound) into one, the geometric mean of their times; the new count. */
static int sort_and_merge(plm__tuning_point *points, int count) {
  qsort(points, (size_t)count, sizeof *points, by_model_ms);
  int merged = 0;
  for (int k = 0; k < count;) {
    int end = k + 1;
    double log_sum = log(points[k].measured_ms);
    while (end < count && points[end].model_ms <= points[k].model_ms * (1.0 + 1e-6))
      log_sum += log(points[end++].measured_ms);
    points[merged++] = (plm__tuning_point){.model_ms = points[k].model_ms,
                                           .measured_ms = exp(log_sum / (end - k))};
    k = end;
  }
  return merged;
}

double plm__tuning_interpolate(plm__tuning_point *points, int count, double model_ms) {
  count = sort_and_merge(points, count);
  const plm__tuning_point *first = &points[0], *last = &points[count - 1];
  if (model_ms <= first->model_ms) return model_ms * first->measured_ms / first->model_ms;
  if (model_ms >= last->model_ms) return model_ms * last->measured_ms / last->model_ms;
  int k = 1;
  while (points[k].model_ms < model_ms) k++;
  const plm__tuning_point *a = &points[k - 1], *b = &points[k];
  const double t = log(model_ms / a->model_ms) / log(b->model_ms / a->model_ms);
  return exp(log(a->measured_ms) + t * (log(b->measured_ms) - log(a->measured_ms)));
}

bool plm__tuning_measured_ms(plm_backend backend, const char *device, const plm__op_desc *op,
                             double model_ms, double *measured_ms) {
  char prefix[PATH_SIZE];
  const int n = snprintf(prefix, sizeof prefix, "%s|%.255s|", plm_backend_name(backend), device);
  plm__tuning_point points[MAX_POINTS];
  int count = 0;
  pthread_mutex_lock(&tuning.lock);
  for (int k = 0; k < tuning.table_count && count == 0; k++) {
    const table *t = &tuning.tables[k];
    if (n > 0 && strncmp(t->key, prefix, (size_t)n) == 0) count = points_of(t, op, points);
  }
  pthread_mutex_unlock(&tuning.lock);
  if (count == 0 || !(model_ms > 0)) return false;
  *measured_ms = plm__tuning_interpolate(points, count, model_ms);
  return true;
}

/* ---- the public calls ---------------------------------------------------------------------- */

/* op's tunable `name` on backend, or a message naming what is unknown. */
static plm_status find_tunable(const char *caller, plm_backend backend, const char *op_name,
                               const char *name, const plm__op_desc **op, int *index) {
  if (!op_name || !name) return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "op or tunable is NULL");
  if (backend != PLM_BACKEND_HOST && backend != PLM_BACKEND_CUDA)
    return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "backend %d is not host or cuda",
                        (int)backend);
  *op = subject_find(op_name);
  if (!*op)
    return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "no op named '%s' (nor is it %s)", op_name,
                        PLM_TUNING_RUN_STREAM);
  *index = plm__op_tunable_index(*op, name, backend);
  if (*index < 0)
    return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "%s has no tunable '%s' on %s", op_name, name,
                        plm_backend_name(backend));
  return PLM_OK;
}

/* A tunable as the public calls describe it (its strings and candidates the library's own). */
static plm_tunable_info tunable_info(const plm__op_tunable *t) {
  return (plm_tunable_info){.name = t->name,
                            .backend = t->backend,
                            .fallback = t->fallback,
                            .candidate_count = t->candidate_count,
                            .candidates = t->candidates,
                            .help = t->help};
}

plm_status plm_op_tunable_count(int op, int *count) {
  PLM__REQUIRE_NOT_NULL(count);
  const plm__op_desc *desc = plm__op_get((plm__op_kind)op);
  if (!desc) return plm__fail(PLM_ERR_INVALID_ARG, "op %d is not in 0..%d", op, PLM__OP_COUNT - 1);
  *count = desc->tunable_count;
  return PLM_OK;
}

plm_status plm_op_tunable_info_get(int op, int tunable, plm_tunable_info *out) {
  PLM__REQUIRE_NOT_NULL(out);
  const plm__op_desc *desc = plm__op_get((plm__op_kind)op);
  if (!desc) return plm__fail(PLM_ERR_INVALID_ARG, "op %d is not in 0..%d", op, PLM__OP_COUNT - 1);
  if (tunable < 0 || tunable >= desc->tunable_count)
    return plm__fail(PLM_ERR_INVALID_ARG, "tunable %d is not one of %s's %d", tunable, desc->name,
                     desc->tunable_count);
  *out = tunable_info(&desc->tunables[tunable]);
  return PLM_OK;
}

plm_status plm_tuning_set(plm_backend backend, const char *op_name, const char *name,
                          int size_class, int64_t value) {
  const plm__op_desc *op = NULL;
  int index = -1;
  plm_status status = find_tunable(__func__, backend, op_name, name, &op, &index);
  if (status != PLM_OK) return status;
  if (size_class < -1 || size_class >= PLM_SIZE_CLASS_COUNT)
    return plm__fail(PLM_ERR_INVALID_ARG, "size_class %d is not -1 (all) or 0..%d", size_class,
                     PLM_SIZE_CLASS_COUNT - 1);
  const plm__op_tunable *t = &op->tunables[index];
  if (!is_candidate(t, value)) {
    char text[160];
    candidates_text(t, text, sizeof text);
    return plm__fail(PLM_ERR_INVALID_ARG, "%s's %s %" PRId64 " is not %s", op_name, name, value,
                     text);
  }
  pthread_mutex_lock(&tuning.lock);
  for (int c = 0; c < PLM_SIZE_CLASS_COUNT; c++)
    if (size_class < 0 || c == size_class)
      tuning.forced[backend_slot(backend)][op->kind][index][c] = value;
  pthread_mutex_unlock(&tuning.lock);
  return PLM_OK;
}

void plm_tuning_reset(void) {
  pthread_mutex_lock(&tuning.lock);
  memset(tuning.forced, 0, sizeof tuning.forced);
  for (int k = 0; k < tuning.table_count; k++) {
    free(tuning.tables[k].entries);
    free(tuning.tables[k].index);
  }
  tuning.table_count = 0;
  pthread_mutex_unlock(&tuning.lock);
}

plm_status plm_tuning_get(plm_context *ctx, const char *op_name, const char *name,
                          plm_size_class size_class, int64_t *value) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(value);
  const plm__op_desc *op = NULL;
  int index = -1;
  plm_status status = find_tunable(__func__, ctx->info.backend, op_name, name, &op, &index);
  if (status != PLM_OK) return status;
  if ((unsigned)size_class >= PLM_SIZE_CLASS_COUNT)
    return plm__fail(PLM_ERR_INVALID_ARG, "size_class %d is not in 0..%d", (int)size_class,
                     PLM_SIZE_CLASS_COUNT - 1);
  pthread_mutex_lock(&tuning.lock);
  *value = value_of(table_of(ctx), ctx->info.backend, op, index, size_class);
  pthread_mutex_unlock(&tuning.lock);
  return PLM_OK;
}

plm_status plm_tuning_table_info_get(plm_context *ctx, plm_tuning_table_info *out) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(out);
  *out = (plm_tuning_table_info){.setting = setting()};
  pthread_mutex_lock(&tuning.lock);
  const table *t = table_of(ctx);
  if (t) {
    out->in_use = t->in_use;
    snprintf(out->path, sizeof out->path, "%s", t->path);
    snprintf(out->problem, sizeof out->problem, "%s", t->problem);
    snprintf(out->key, sizeof out->key, "%s", t->key);
    out->entry_count = (int)t->count;
    for (size_t k = 0; k < t->count; k++)
      out->kept_count += t->entries[k].value != t->entries[k].fallback;
  }
  pthread_mutex_unlock(&tuning.lock);
  return PLM_OK;
}

plm_status plm_tuning_entries(plm_context *ctx, plm_tuning_entry **entries, size_t *count) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(entries);
  PLM__REQUIRE_NOT_NULL(count);
  *entries = NULL;
  *count = 0;
  plm_status status = PLM_OK;
  pthread_mutex_lock(&tuning.lock);
  const table *t = table_of(ctx);
  if (t && t->count) {
    *entries = malloc(t->count * sizeof **entries);
    if (*entries) {
      memcpy(*entries, t->entries, t->count * sizeof **entries);
      *count = t->count;
    } else {
      status = plm__fail(PLM_ERR_OUT_OF_MEMORY, "no memory for %zu entries", t->count);
    }
  }
  pthread_mutex_unlock(&tuning.lock);
  return status;
}

plm_status plm_tuning_store(plm_context *ctx, const plm_tuning_entry *entries, size_t count,
                            char *path, size_t path_size) {
  PLM__REQUIRE_NOT_NULL(ctx);
  if (count && !entries) return plm__fail(PLM_ERR_INVALID_ARG, "entries is NULL");
  if (count > PLM_TUNING_MAX_ENTRIES)
    return plm__fail(PLM_ERR_INVALID_ARG, "count %zu is more than the %d entries a table may hold",
                     count, PLM_TUNING_MAX_ENTRIES);
  for (size_t k = 0; k < count; k++) {
    int index;
    if (!entry_op(&entries[k], ctx->info.backend, &index))
      return plm__fail(
          PLM_ERR_INVALID_ARG, "entries[%zu]: %s's %s = %" PRId64 " is no tunable value on %s", k,
          entries[k].op, entries[k].tunable, entries[k].value, plm_backend_name(ctx->info.backend));
  }
  plm_tuning_entry *copy = malloc((count + 1) * sizeof *copy);
  if (!copy) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no memory for %zu entries", count);
  if (count) memcpy(copy, entries, count * sizeof *copy);
  plm_status status = PLM_OK;
  pthread_mutex_lock(&tuning.lock);
  table *t = table_of(ctx);
  if (!t) {
    free(copy);
    status =
        plm__fail(PLM_ERR_INVALID_STATE, "tables of %d devices are in use already", MAX_TABLES);
  } else {
    free(t->entries);
    t->entries = copy;
    t->count = count;
    t->in_use = table_index_build(t, ctx->info.backend);
    if (!t->in_use) status = plm__fail(PLM_ERR_OUT_OF_MEMORY, "no memory for the table's index");
    if (status == PLM_OK && strcmp(setting(), "off") != 0) {
      if (!t->path[0]) table_path(ctx, t->key, t->path, sizeof t->path);
      status = plm__propagate(table_write(ctx, t));
    }
    if (path && path_size) snprintf(path, path_size, "%s", t->path);
  }
  pthread_mutex_unlock(&tuning.lock);
  return status;
}

int plm_tuning_batch_for(int64_t batch_bytes, size_t frame_bytes) {
  if (frame_bytes == 0 || batch_bytes <= 0) return 1;
  int batch = 1;
  while (batch < PLM_TUNING_MAX_BATCH &&
         (uint64_t)(2 * batch) * frame_bytes <= (uint64_t)batch_bytes)
    batch *= 2;
  return batch;
}

plm_status plm_tuning_batch(plm_context *ctx, size_t frame_bytes, int *batch) {
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(batch);
  if (frame_bytes == 0) return plm__fail(PLM_ERR_INVALID_ARG, "frame_bytes is 0");
  const plm_backend backend = ctx->info.backend;
  const int index = plm__op_tunable_index(&run_stream_subject, PLM_TUNING_BATCH_BYTES, backend);
  if (index < 0)
    return plm__fail(PLM_ERR_INVALID_ARG, "no batch is tuned on the %s backend",
                     plm_backend_name(backend));
  pthread_mutex_lock(&tuning.lock);
  const int64_t bytes = value_of(table_of(ctx), backend, &run_stream_subject, index,
                                 plm_size_class_of((double)frame_bytes));
  pthread_mutex_unlock(&tuning.lock);
  *batch = plm_tuning_batch_for(bytes, frame_bytes);
  return PLM_OK;
}

plm_status plm_tuning_batch_tunable(plm_backend backend, plm_tunable_info *out) {
  PLM__REQUIRE_NOT_NULL(out);
  const int index = plm__op_tunable_index(&run_stream_subject, PLM_TUNING_BATCH_BYTES, backend);
  if (index < 0)
    return plm__fail(PLM_ERR_INVALID_ARG, "backend %d is not host or cuda", (int)backend);
  *out = tunable_info(&run_stream_tunables[index]);
  return PLM_OK;
}

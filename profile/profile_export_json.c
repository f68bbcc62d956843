/* profile/profile_export_json.c: profile.json, the statistics per op with the
 * calibration, the device and the commit (plm__profile_write_json). The keys, their
 * units and the versioning rule are in docs/profile-schema.md; a key removed or changed
 * in meaning bumps PROFILE_SCHEMA_VERSION. Non-finite numbers are written as null. */
#include <stdint.h>

#include "profile/profile_export.h"
#include "pool/pool_snapshot_json.h"
#include "profile/profile_export_common.h"
#include "streams/error.h"

enum { PROFILE_SCHEMA_VERSION = 1 };

/* Shorter names for the builders; each returns false when memory ran out. */
#define SET(object, key, value) plm__profile_json_set((object), (key), (value))
#define STR(s) plm__profile_json_string(s)
#define REAL(x) plm__profile_json_real(x)

static json_t *calibration_json(const plm_profile_calibration *c) {
  static const plm_profile_calibration none;
  if (!c) c = &none;
  json_t *o = json_object();
  if (o && SET(o, "device_copy_gbps", REAL(c->device_copy_gbps)) &&
      SET(o, "h2d_gbps", REAL(c->h2d_gbps)) && SET(o, "d2h_gbps", REAL(c->d2h_gbps)) &&
      SET(o, "fma_gflops", REAL(c->fma_gflops)) &&
      SET(o, "from_cache", json_boolean(c->from_cache)) &&
      SET(o, "emulated", json_boolean(c->emulated)) &&
      SET(o, "ridge_flops_per_byte", REAL(plm__profile_ridge(c))))
    return o;
  json_decref(o);
  return NULL;
}

static json_t *warnings_json(const plm_profile_op_stats *op) {
  char warnings[PLM__PROFILE_MAX_WARNINGS][PLM__PROFILE_TEXT_SIZE];
  int n = plm__profile_op_warnings(op, warnings);
  json_t *array = json_array();
  for (int i = 0; array && i < n; i++) {
    if (json_array_append_new(array, STR(warnings[i])) != 0) {
      json_decref(array);
      return NULL;
    }
  }
  return array;
}

/* The timing statistics of one op (ms), then its throughput and roofline figures. */
static bool op_times(json_t *o, const plm_profile_op_stats *op) {
  return SET(o, "name", STR(op->name)) && SET(o, "count", json_integer(op->count)) &&
         SET(o, "total_ms", REAL(op->total_ms)) && SET(o, "share", REAL(op->share)) &&
         SET(o, "mean", REAL(op->mean_ms)) && SET(o, "stddev", REAL(op->stddev_ms)) &&
         SET(o, "min", REAL(op->min_ms)) && SET(o, "max", REAL(op->max_ms)) &&
         SET(o, "p50", REAL(op->p50_ms)) && SET(o, "p99", REAL(op->p99_ms)) &&
         SET(o, "cv", REAL(op->cv)) && SET(o, "high_variance", json_boolean(op->high_variance)) &&
         SET(o, "outliers", json_boolean(op->outliers));
}

static bool op_rates(json_t *o, const plm_profile_op_stats *op) {
  return SET(o, "ops_per_s", REAL(op->ops_per_s)) && SET(o, "bytes", REAL(op->bytes)) &&
         SET(o, "flops", REAL(op->flops)) && SET(o, "gb_per_s", REAL(op->gb_per_s)) &&
         SET(o, "gflop_per_s", REAL(op->gflop_per_s)) && SET(o, "intensity", REAL(op->intensity)) &&
         SET(o, "bandwidth_fraction", REAL(op->bandwidth_fraction)) &&
         SET(o, "compute_fraction", REAL(op->compute_fraction)) &&
         SET(o, "bound", STR(op->bound)) && SET(o, "enqueue_mean_us", REAL(op->enqueue_mean_us)) &&
         SET(o, "warnings", warnings_json(op));
}

static json_t *ops_json(const plm__profile_snapshot *s) {
  json_t *array = json_array();
  for (size_t i = 0; array && i < s->op_count; i++) {
    json_t *o = json_object();
    if (!o || !op_times(o, &s->ops[i]) || !op_rates(o, &s->ops[i]) ||
        json_array_append_new(array, o) != 0) {
      json_decref(o);
      json_decref(array);
      return NULL;
    }
  }
  return array;
}

static json_t *bottlenecks_json(const plm__profile_snapshot *s) {
  json_t *array = json_array();
  size_t n = plm__profile_bottleneck_count(s);
  for (size_t i = 0; array && i < n; i++) {
    char why[PLM__PROFILE_TEXT_SIZE];
    plm__profile_op_why(&s->ops[i], why, sizeof why);
    json_t *o = json_object();
    if (!o || !SET(o, "name", STR(s->ops[i].name)) || !SET(o, "share", REAL(s->ops[i].share)) ||
        !SET(o, "why", STR(why)) || json_array_append_new(array, o) != 0) {
      json_decref(o);
      json_decref(array);
      return NULL;
    }
  }
  return array;
}

static json_t *ab_json(const plm__profile_snapshot *s) {
  json_t *bars = json_array();
  for (size_t i = 0; bars && i < s->ab_count; i++) {
    json_t *o = json_object();
    if (!o || !SET(o, "config", STR(s->ab[i].config)) || !SET(o, "value", REAL(s->ab[i].value)) ||
        json_array_append_new(bars, o) != 0) {
      json_decref(o);
      json_decref(bars);
      return NULL;
    }
  }
  json_t *o = bars ? json_object() : NULL;
  if (!o) {
    json_decref(bars);
    return NULL;
  }
  /* bars first: setting it hands it over to o, even when that fails. */
  if (SET(o, "bars", bars) && SET(o, "unit", STR(s->ab_unit)) &&
      SET(o, "higher_is_better", json_boolean(s->ab_higher_is_better)))
    return o;
  json_decref(o);
  return NULL;
}

static json_t *launches_json(const plm__profile_snapshot *s) {
  json_t *o = json_object();
  if (o && SET(o, "recorded", json_integer((json_int_t)s->launch_count)) &&
      SET(o, "dropped", json_integer((json_int_t)s->dropped)) &&
      SET(o, "streams", json_integer(s->stream_count)))
    return o;
  json_decref(o);
  return NULL;
}

/* The header keys: what ran, where and when. */
static bool header_json(json_t *root, const plm__profile_snapshot *s) {
  return SET(root, "schema", STR("plume-profile")) &&
         SET(root, "version", json_integer(PROFILE_SCHEMA_VERSION)) &&
         SET(root, "title", STR(s->title)) && SET(root, "backend", STR(s->backend)) &&
         SET(root, "device", STR(s->device)) && SET(root, "driver", STR(s->driver)) &&
         SET(root, "commit", STR(s->commit)) && SET(root, "date", STR(s->date));
}

static json_t *profile_json(const plm__profile_snapshot *s) {
  json_t *root = json_object();
  if (root && header_json(root, s) && SET(root, "calibration", calibration_json(s->calibration)) &&
      SET(root, "overhead_us_per_launch", REAL(s->overhead_us)) &&
      SET(root, "launches", launches_json(s)) && SET(root, "ops", ops_json(s)) &&
      SET(root, "bottlenecks", bottlenecks_json(s)) &&
      (s->ab_count == 0 || SET(root, "ab", ab_json(s))))
    return root;
  json_decref(root);
  return NULL;
}

plm_status plm__profile_write_json(const plm__profile_snapshot *snapshot, const char *path) {
  if (!snapshot || !path)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is NULL", snapshot ? "path" : "snapshot");
  if ((snapshot->op_count && !snapshot->ops) || (snapshot->ab_count && !snapshot->ab))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s: the snapshot's %s array is NULL", path,
                         snapshot->op_count && !snapshot->ops ? "ops" : "ab");
  return plm__profile_write_json_file(profile_json(snapshot), path);
}

/* ---- pool_snapshot.json ------------------------------------------------------------ */

enum { POOL_SNAPSHOTS_SCHEMA_VERSION = 1 };

static json_t *pool_snapshots_json(const plm__profile_snapshot *s) {
  json_t *array = json_array();
  for (size_t i = 0; array && i < s->pool_snapshot_count; i++) {
    const plm__profile_pool_snapshot *named = &s->pool_snapshots[i];
    json_t *o = json_object();
    if (o && !(SET(o, "name", STR(named->name)) &&
               SET(o, "snapshot", plm__pool_snapshot_json(named->snapshot)))) {
      json_decref(o);
      o = NULL;
    }
    /* Appending takes o, even when it fails. */
    if (json_array_append_new(array, o) != 0) {
      json_decref(array);
      array = NULL;
    }
  }
  json_t *root = array ? json_object() : NULL;
  if (!root) {
    json_decref(array);
    return NULL;
  }
  /* array last: setting it hands it over to root, even when that fails. */
  if (SET(root, "schema", STR("plume-pool-snapshots")) &&
      SET(root, "version", json_integer(POOL_SNAPSHOTS_SCHEMA_VERSION)) &&
      SET(root, "snapshots", array))
    return root;
  json_decref(root);
  return NULL;
}

plm_status plm__profile_write_pool_snapshots(const plm__profile_snapshot *snapshot,
                                             const char *path) {
  if (!snapshot || !path)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is NULL", snapshot ? "path" : "snapshot");
  if (snapshot->pool_snapshot_count && !snapshot->pool_snapshots)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s: the snapshot's pool_snapshots array is NULL",
                         path);
  return plm__profile_write_json_file(pool_snapshots_json(snapshot), path);
}

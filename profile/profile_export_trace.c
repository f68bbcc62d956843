/* profile/profile_export_trace.c: trace.json in the Chrome trace event format
 * (plm__profile_write_trace), which Perfetto and chrome://tracing open:
 *
 *   {"traceEvents": [...], "displayTimeUnit": "ms",
 *    "otherData": {"title", "backend", "device", "commit"}}
 *
 * Metadata events ("ph": "M") name process 1 "plume" and thread K+1 "stream K" for each
 * stream K; then each launch is a complete event ("ph": "X") named after its op, of
 * category "copy" (plm__profile_is_copy) or "op", with ts and dur in microseconds of
 * device time, on tid stream+1, and args {"frame", "bytes", "flops", "enqueue_us"}. */
#include <stdio.h>

#include "profile/profile_export.h"
#include "profile/profile_export_common.h"
#include "streams/error.h"

#define SET(object, key, value) plm__profile_json_set((object), (key), (value))
#define STR(s) plm__profile_json_string(s)
#define REAL(x) plm__profile_json_real(x)

enum { TRACE_PID = 1 };

/* A metadata event: what (process_name or thread_name) of tid is called name. */
static json_t *metadata_event(const char *what, int tid, const char *name) {
  json_t *args = json_object();
  json_t *e = args ? json_object() : NULL;
  if (!e) {
    json_decref(args);
    return NULL;
  }
  if (SET(e, "args", args) && SET(args, "name", STR(name)) && SET(e, "name", STR(what)) &&
      SET(e, "ph", STR("M")) && SET(e, "pid", json_integer(TRACE_PID)) &&
      SET(e, "tid", json_integer(tid)))
    return e;
  json_decref(e);
  return NULL;
}

static json_t *launch_args(const plm_profile_launch *l) {
  json_t *args = json_object();
  if (args && SET(args, "frame", json_integer(l->frame)) && SET(args, "bytes", REAL(l->bytes)) &&
      SET(args, "flops", REAL(l->flops)) && SET(args, "enqueue_us", REAL(l->enqueue_us)))
    return args;
  json_decref(args);
  return NULL;
}

static json_t *launch_event(const plm_profile_launch *l) {
  json_t *e = json_object();
  if (e && SET(e, "name", STR(l->name)) &&
      SET(e, "cat", STR(plm__profile_is_copy(l->name) ? "copy" : "op")) && SET(e, "ph", STR("X")) &&
      SET(e, "ts", REAL(l->start_ms * 1000)) &&
      SET(e, "dur", REAL((l->end_ms - l->start_ms) * 1000)) &&
      SET(e, "pid", json_integer(TRACE_PID)) && SET(e, "tid", json_integer(l->stream + 1)) &&
      SET(e, "args", launch_args(l)))
    return e;
  json_decref(e);
  return NULL;
}

/* Write one event on a line of its own, after a comma unless it is the first; takes e. */
static bool write_event(FILE *f, json_t *e, bool *first) {
  bool ok = e && fputs(*first ? "\n" : ",\n", f) != EOF && json_dumpf(e, f, 0) == 0;
  json_decref(e);
  *first = false;
  return ok;
}

/* The process's name, one thread name per stream, then every launch. */
static bool write_events(FILE *f, const plm__profile_snapshot *s) {
  bool first = true;
  if (!write_event(f, metadata_event("process_name", 0, "plume"), &first)) return false;
  for (int k = 0; k < s->stream_count; k++) {
    char name[32];
    snprintf(name, sizeof name, "stream %d", k);
    if (!write_event(f, metadata_event("thread_name", k + 1, name), &first)) return false;
  }
  for (size_t i = 0; i < s->launch_count; i++)
    if (!write_event(f, launch_event(&s->launches[i]), &first)) return false;
  return true;
}

static json_t *other_data(const plm__profile_snapshot *s) {
  json_t *o = json_object();
  if (o && SET(o, "title", STR(s->title)) && SET(o, "backend", STR(s->backend)) &&
      SET(o, "device", STR(s->device)) && SET(o, "commit", STR(s->commit)))
    return o;
  json_decref(o);
  return NULL;
}

/* The events are written one at a time, so a long profile needs no tree of them all in
 * memory (a million launches would take over a gigabyte as jansson objects). */
plm_status plm__profile_write_trace(const plm__profile_snapshot *snapshot, const char *path) {
  if (!snapshot || !path)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is NULL", snapshot ? "path" : "snapshot");
  if (snapshot->launch_count && !snapshot->launches)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s: the snapshot's launches array is NULL", path);
  plm__profile_file out;
  plm_status status = plm__profile_file_open(path, &out);
  if (status != PLM_OK) return status;
  json_t *other = other_data(snapshot);
  const bool written = other &&
                       fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":", out.file) != EOF &&
                       json_dumpf(other, out.file, JSON_COMPACT) == 0 &&
                       fputs(",\"traceEvents\":[", out.file) != EOF &&
                       write_events(out.file, snapshot) && fputs("]}\n", out.file) != EOF;
  json_decref(other);
  if (!written && !ferror(out.file)) { /* a write's failure shows in the commit */
    plm__profile_file_abort(&out);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "%s: no memory for the trace", path);
  }
  return plm__profile_file_commit(&out);
}

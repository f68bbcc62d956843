/* profile/profile_export.h: writing a profile out (internal).
 *
 * A snapshot is everything the three files show, gathered by plm_profiler_write
 * (profile/profiler.c) after collecting. Each writer produces one file, written to
 * PATH.tmp-XXXXXX and renamed over PATH, so a failure leaves no partial file; a
 * failure returns PLM_ERR_IO (or PLM_ERR_OUT_OF_MEMORY) with a message naming the path.
 *
 *   plm__profile_write_json   profile.json: schema "plume-profile", version 1; the keys
 *                             are documented in docs/profile-schema.md
 *   plm__profile_write_trace  trace.json: Chrome trace event format (JSON object with
 *                             "traceEvents"), complete events ("ph": "X", ts and dur
 *                             in microseconds), pid 1, one tid per stream with a
 *                             thread_name metadata event ("stream 0", ...), args
 *                             {"frame", "bytes", "flops", "enqueue_us"}
 *   plm__profile_write_html   report.html: self-contained (no network, no external
 *                             scripts, styles or fonts), charts as inline SVG
 *   plm__profile_write_pool_snapshots  pool_snapshot.json: schema
 *                             "plume-pool-snapshots", version 1 (plume/profile.h)
 */
#ifndef PLUME_PROFILE_PROFILE_EXPORT_H
#define PLUME_PROFILE_PROFILE_EXPORT_H

#include <stddef.h>

#include "plume/pool.h"
#include "plume/profile.h"

/* A pool snapshot added to the profiler, with its name. */
typedef struct plm__profile_pool_snapshot {
  const char *name;
  const plm_pool_snapshot *snapshot;
} plm__profile_pool_snapshot;

typedef struct plm__profile_snapshot {
  const char *title;   /* the report's heading */
  const char *backend; /* "host" or "cuda" */
  const char *device;  /* the device's name */
  const char *driver;  /* driver / runtime versions, or "" on host */
  const char *commit;  /* git commit */
  const char *date;    /* UTC, ISO 8601 */
  const plm_profile_calibration *calibration;
  double overhead_us;                 /* host cost of recording one launch */
  const plm_profile_launch *launches; /* by start time */
  size_t launch_count, dropped;
  int stream_count;
  const plm_profile_op_stats *ops; /* by total time, largest first */
  size_t op_count;
  const plm_profile_ab *ab; /* may be NULL */
  size_t ab_count;
  const char *ab_unit;
  bool ab_higher_is_better;
  const plm__profile_pool_snapshot *pool_snapshots; /* may be NULL */
  size_t pool_snapshot_count;
} plm__profile_snapshot;

plm_status plm__profile_write_json(const plm__profile_snapshot *snapshot, const char *path);
plm_status plm__profile_write_trace(const plm__profile_snapshot *snapshot, const char *path);
plm_status plm__profile_write_html(const plm__profile_snapshot *snapshot, const char *path);
plm_status plm__profile_write_pool_snapshots(const plm__profile_snapshot *snapshot,
                                             const char *path);

#endif /* PLUME_PROFILE_PROFILE_EXPORT_H */

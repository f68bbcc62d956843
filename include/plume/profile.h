/* plume/profile.h: where the time goes, per operation.
 *
 * A profiler records op launches: for each, the device time between two events
 * recorded on the op's stream around it (both backends: on host an event completes
 * when the stream's worker reaches it), the host time spent enqueueing it, the stream,
 * the frame index, and the bytes and flops of the op's cost model (plm_<op>_cost).
 * From the records it makes statistics per op name (count, mean, stddev, min, max,
 * p50, p99, coefficient of variation, throughput, achieved GB/s and GFLOP/s, and their
 * fraction of the device's measured peaks) and writes them out (plm_profiler_write):
 *
 *   DIR/profile.json  the statistics per op, the calibration, the device and commit;
 *                     schema "plume-profile", version 1 (docs/profile-schema.md)
 *   DIR/trace.json    Chrome trace events (Perfetto, chrome://tracing): one track per
 *                     stream, each launch a slice named after its op, frame in args
 *   DIR/report.html   one self-contained page with inline SVG charts: time per op, a
 *                     timeline of a few frames across streams, A/B bars (when given),
 *                     each op's roofline position, the bottlenecks and warnings, and a
 *                     segment map of each pool snapshot added (when any)
 *   DIR/pool_snapshot.json  the pool snapshots added with plm_profiler_add_pool_snapshot
 *                     (only when any were): schema "plume-pool-snapshots", version 1,
 *                     {"schema", "version", "snapshots": [{"name", "snapshot"}]}, each
 *                     "snapshot" a "plume-pool-snapshot" object (plm_pool_snapshot_to_json)
 *
 * Attaching: plm_pipeline_set_profiler(pl, p) (plume/pipeline.h) records every step of
 * the pipeline's runs and, in plm_pipeline_run_stream, the uploads ("h2d") and
 * downloads ("d2h") with their frame index. Anything else (an op called directly, a
 * copy) is recorded with plm_profiler_begin / plm_profiler_end around its enqueue.
 * Without a profiler the run path pays one branch per step.
 *
 * Warnings, as the seed profilers give them: an op whose CV is above 20% has high
 * variance; one whose max is above 2 x its mean has outliers.
 *
 * Calibration measures, once per device and process (then cached in memory and in
 * $XDG_CACHE_HOME/plume or ~/.cache/plume, keyed by backend and device name): device
 * copy bandwidth (bytes read plus written per second), pinned host-to-device and
 * device-to-host bandwidth (bytes per second), the f32 FMA rate (2 flops per FMA), and
 * the floors of one launch and of one small copy (plm_pipeline_predict's overheads).
 * The environment's PLUME_CALIBRATION_CACHE=off leaves the file alone; =refresh measures
 * again and records the new figures (peaks measured on a busy machine stay low until
 * then: an op faster than its floor is the sign). On the CUDA emulator of an emulated build
 * it measures the same on workloads sized for the emulator and marks the calibration
 * emulated: its figures, and every time a profile records there, are the emulator's on a
 * CPU, no GPU's (profile.json's "emulated", the report's roofline note say so). An op's
 * roofline bound is "memory" when its arithmetic intensity (flops per byte) is below the
 * ridge (FMA rate / copy bandwidth), else "compute".
 *
 * Thread-safety: a profiler may record from several threads at once (its own lock);
 * plm_profiler_collect, _op_stats and _write must not run while launches are being
 * recorded. Events are taken from the profiler's context; destroy the profiler before
 * its context.
 */
#ifndef PLUME_PROFILE_H
#define PLUME_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/context.h"
#include "plume/export.h"
#include "plume/ops.h"
#include "plume/pool.h"
#include "plume/status.h"
#include "plume/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct plm_profiler plm_profiler;

enum { PLM_PROFILE_NAME_SIZE = 24, PLM_PROFILE_DEVICE_SIZE = 256 };

typedef struct plm_profiler_config {
  size_t max_launches; /* records kept; later launches are counted as dropped (0: 1 << 20) */
  bool calibrate;      /* measure (or load) the device's peaks at create */
} plm_profiler_config;

/* max_launches 0 (the default count), calibrate true. */
PLM_API plm_profiler_config plm_profiler_config_default(void);

/* The device's measured peaks; 0 where not measured. */
typedef struct plm_profile_calibration {
  char backend[8];                      /* "host" or "cuda" */
  char device[PLM_PROFILE_DEVICE_SIZE]; /* the device's name */
  double device_copy_gbps;              /* device to device, read plus written, GB/s */
  double h2d_gbps, d2h_gbps;            /* pinned host to device and back, GB/s */
  double fma_gflops;                    /* f32, 2 flops per FMA */
  double launch_us;       /* one tiny kernel launch, event to event (the per-step floor) */
  double copy_latency_us; /* one 256-byte pinned host-to-device copy (the per-copy floor) */
  bool from_cache;        /* loaded, not measured by this process */
  bool emulated;          /* measured on the CUDA emulator (an emulated build's cuda device,
                             plm_build_info.cuda_emulated), on workloads sized for it: the
                             figures are the emulator's on this CPU, no GPU's */
} plm_profile_calibration;

/* One recorded launch (an op or a copy). Times in milliseconds of device time from the
 * profiler's origin (its first recorded event). */
typedef struct plm_profile_launch {
  char name[PLM_PROFILE_NAME_SIZE]; /* "sobel", "entropy", "h2d", "d2h", ... */
  int stream;                       /* 0, 1, ...: streams numbered as first seen */
  int64_t frame;                    /* the frame index, or -1 */
  double start_ms, end_ms;          /* device time */
  double enqueue_us;                /* host time spent enqueueing it */
  double bytes, flops;              /* of the op's cost model (0 when unknown) */
} plm_profile_launch;

/* Statistics of one op name over its launches (times in ms of device time). */
typedef struct plm_profile_op_stats {
  char name[PLM_PROFILE_NAME_SIZE];
  int64_t count;
  double total_ms, share; /* summed time, and its fraction of all ops' summed time */
  double mean_ms, stddev_ms, min_ms, max_ms, p50_ms, p99_ms;
  double cv;                    /* stddev / mean (population stddev), 0 when the mean is 0 */
  bool high_variance;           /* cv > 0.20 */
  bool outliers;                /* max > 2 x mean */
  double ops_per_s;             /* 1000 / mean_ms */
  double bytes, flops;          /* per launch (mean) */
  double gb_per_s, gflop_per_s; /* bytes / mean time, flops / mean time */
  double intensity;             /* flops per byte (0 when no bytes) */
  double bandwidth_fraction;    /* gb_per_s / the calibrated copy bandwidth (h2d, d2h:
                                 * the pinned bandwidth of that direction) */
  double compute_fraction;      /* gflop_per_s / the calibrated FMA rate */
  char bound[8];                /* "memory" or "compute" (see the top), "link" for h2d
                                 * and d2h, or "" (no calibration) */
  double enqueue_mean_us;       /* host time per enqueue */
} plm_profile_op_stats;

/* A bar of a benchmark's A/B comparison, shown in the report. */
typedef struct plm_profile_ab {
  const char *config; /* "naive", "pooled", "streams K=2", ... */
  double value;       /* in options->ab_unit */
} plm_profile_ab;

typedef struct plm_profile_write_options {
  const char *title;        /* the report's heading ("plume detect", "bench_pipeline") */
  const char *commit;       /* the git commit, or NULL (the build's) */
  const plm_profile_ab *ab; /* A/B bars, or NULL */
  size_t ab_count;
  const char *ab_unit; /* "frames/s", ... */
  bool ab_higher_is_better;
} plm_profile_write_options;

/* Create a profiler on ctx; cfg may be NULL (the defaults). Calibrating takes up to
 * about a second the first time on a device. Blocking. */
PLM_API plm_status plm_profiler_create(plm_context *ctx, const plm_profiler_config *cfg,
                                       plm_profiler **out);

/* Waits for recorded launches' events, then frees everything. NULL is a no-op.
 * Errors: PLM_ERR_INVALID_STATE while a pipeline holds it (plm_pipeline_set_profiler:
 * detach it, or destroy the pipeline, first); nothing is freed then. */
PLM_API plm_status plm_profiler_destroy(plm_profiler *profiler);

/* A launch being recorded: filled by _begin, passed to _end. */
typedef struct plm_profile_mark {
  size_t index; /* the record, or SIZE_MAX when dropped */
  double host_start_ns;
} plm_profile_mark;

/* Record around an enqueue: _begin records the start event on stream, _end the end
 * event; the launch's device time is the time between the two. frame may be -1; cost
 * may be NULL (no bytes or flops). name is copied (truncated to 23 characters).
 * Thread-safe. Errors: PLM_ERR_INVALID_ARG (NULL arguments, a stream of another
 * context), PLM_ERR_OUT_OF_MEMORY (an event). When max_launches are recorded already,
 * both succeed and the launch is counted as dropped. */
PLM_API plm_status plm_profiler_begin(plm_profiler *profiler, plm_stream *stream, const char *name,
                                      int64_t frame, const plm_op_cost *cost,
                                      plm_profile_mark *mark);
PLM_API plm_status plm_profiler_end(plm_profiler *profiler, plm_stream *stream,
                                    plm_profile_mark *mark);

/* Wait for every recorded launch and resolve its times (start from the origin, the
 * duration between the launch's own two events). A launch begun but not ended is
 * abandoned (see _launches). Events of finished launches are also given back as
 * recording goes on, so a long run holds events only for the launches in flight.
 * Blocking. After an error the launches are still resolved and the profiler usable. */
PLM_API plm_status plm_profiler_collect(plm_profiler *profiler);

/* The launches recorded so far (after collect: with their times), valid until the
 * next call on the profiler; *dropped (may be NULL) counts those not kept: beyond
 * max_launches, or abandoned (begun, but collected before their _end succeeded; their
 * records stay, with NaN times, and no statistics count them). */
PLM_API plm_status plm_profiler_launches(plm_profiler *profiler,
                                         const plm_profile_launch **launches, size_t *count,
                                         size_t *dropped);

/* Collect, then the statistics per op name, sorted by total time (largest first), in a
 * malloc'd array the caller frees with free(). */
PLM_API plm_status plm_profiler_op_stats(plm_profiler *profiler, plm_profile_op_stats **stats,
                                         size_t *count);

/* The calibration (all 0 when cfg->calibrate was false). */
PLM_API plm_status plm_profiler_calibration(const plm_profiler *profiler,
                                            plm_profile_calibration *out);

/* The host time recording costs per launch (both events and the bookkeeping), in
 * microseconds: measured at create by recording launches of nothing. */
PLM_API plm_status plm_profiler_overhead_us(const plm_profiler *profiler, double *us);

/* Statistics of n times (ms) alone, as above: count, total_ms, mean_ms, stddev_ms,
 * min_ms, max_ms, p50_ms, p99_ms (linear interpolation between order statistics, as
 * numpy.percentile), cv, high_variance, outliers and ops_per_s; the other fields are
 * left as they are. n may be 0 (all 0). times is not modified. */
PLM_API plm_status plm_profile_stats_of(const double *times_ms, size_t n,
                                        plm_profile_op_stats *stats);

/* Keep a copy of a pool snapshot (plm_pool_snapshot_take, plume/pool.h) under a name
 * ("peak of churn", "end of run"), so that plm_profiler_write draws it in report.html
 * (the section "Pool snapshots": one segment map per snapshot, in the order added) and
 * writes it to DIR/pool_snapshot.json. name and snapshot are copied: the caller may free
 * them at once. Thread-safe. Errors: PLM_ERR_INVALID_ARG (NULL profiler, name or
 * snapshot), PLM_ERR_OUT_OF_MEMORY (nothing is kept). */
PLM_API plm_status plm_profiler_add_pool_snapshot(plm_profiler *profiler, const char *name,
                                                  const plm_pool_snapshot *snapshot);

/* Collect, then write DIR/profile.json, DIR/trace.json, DIR/report.html and, when pool
 * snapshots were added, DIR/pool_snapshot.json (DIR is created when missing; each file is written
 * whole or not at all, in that order, so after a failure the later ones may be those of an earlier
 * write). Times in the files start at the earliest launch. options may be NULL. Errors:
 * PLM_ERR_INVALID_ARG (NULL or empty dir), PLM_ERR_IO (with the path). */
PLM_API plm_status plm_profiler_write(plm_profiler *profiler, const char *dir,
                                      const plm_profile_write_options *options);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_PROFILE_H */

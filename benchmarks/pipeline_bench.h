/* benchmarks/pipeline_bench.h: the pipeline comparison of bench_pipeline and `plume demo`.
 *
 * The same frames through one pipeline, run side by side in one process, in five ways
 * (configs), each with a pool of its own:
 *
 *   naive    eager code: every intermediate allocated and freed per frame in a
 *            PLM_POOL_PASSTHROUGH pool (an upstream call each), the host waiting after
 *            every step, one frame at a time on one stream (plan flags
 *            PLM_PLAN_ALLOCATE_PER_RUN | PLM_PLAN_SYNCHRONOUS_STEPS | PLM_PLAN_NO_FUSION,
 *            one frame in flight);
 *   pooled   the same allocations from a pooled pool, without the waits between steps
 *            (PLM_PLAN_ALLOCATE_PER_RUN | PLM_PLAN_NO_FUSION, one frame in flight: the
 *            frame's upload, steps and download are queued at once on one stream and the
 *            host waits at the frame's end);
 *   streams  the plan's workspace (nothing allocated per frame), K = 2, 3, 4 frames in
 *            flight on K streams, the upload of one frame overlapping the compute of
 *            another (PLM_PLAN_NO_FUSION);
 *   graph    streams at its best K, with CUDA-graph replay (cuda only: on host the row
 *            says it was skipped and why; where the plan cannot be captured the row says
 *            so, from the run's graphs_note);
 *   fused    as graph (as streams on host), with fusion on (PLM_PLAN_FUSE: cuda's
 *            default is off, as the fused op measured slower there). When the pipeline has no
 *            fusable chain the row says so instead of repeating streams.
 *
 * Every config runs through plm_pipeline_run_stream (plume/pipeline.h): frame k's source
 * copies pre-rendered frame k mod M from host memory into the pinned input buffer (a
 * host memcpy), on the enqueueing thread or, with options.source_ahead N > 0, on a
 * thread of its own up to N frames ahead (the same N for every config); the outputs
 * come back to pinned host memory, and copy/compute timing is recorded on the device
 * (record_timing). After a
 * warm-up run per config, the timed runs are interleaved (naive, pooled, streams K = 2,
 * 3, 4, once each per round, then graph and fused at the best K, once each per round),
 * so that a change in the machine's load hits every config alike. Reported per config:
 * medians over the rounds of frames/s (plm_pipeline_run_stream's report: frames over the
 * run's wall time, the set-up of its K slots included), latency p50 and p99 (from the
 * enqueueing thread taking the frame to its outputs being on the host), the enqueueing
 * thread's time per frame to enqueue it (host_submit_us) and to get its inputs
 * (host_source_us: the source's call, or with N > 0 the wait for the source's thread),
 * device (compute) and copy time per frame and overlap = copy time during which some
 * frame computed / copy time;
 * speedup_vs_naive (medians' ratio); the pool's hit rate and upstream allocations over
 * the timed runs (plm_pool_stats_get deltas of the config's own pool; ops' scratch comes
 * from the context's default pool and is not counted); others_cpu_share, the share of the
 * CPUs other processes took during its timed runs (support/cpu_share.h; null when unknown
 * or when they take under a quarter second in all). Per case the table says the most any
 * config saw, and stderr warns above 10%: such figures carry another process's load.
 *
 * Results are checked, not only timed: during the warm-ups every config's outputs for
 * frames 0..min(M, 16)-1 are compared with naive's: counts and other integer outputs exactly,
 * regions tables on their exact columns (label, area, bounding box, centroid) over the
 * rows in use; f32 and f64 outputs other than tables are not compared. A difference is
 * a failure.
 *
 * Floors: the pinned host-to-device bandwidth (a 64 MiB plm_stream_memcpy from
 * plm_host_alloc memory) and the device-to-device copy bandwidth (64 MiB, bytes read plus
 * written), measured in the same run with events (medians of 5). Per frame: the upload
 * floor = input bytes / pinned bandwidth, the device floor = the plan's device bytes
 * (plm_plan_info.device_bytes; the fused plan's where there is one) / copy bandwidth.
 * On the host backend both bandwidths are memcpy speeds of a stream's worker thread.
 * The copy bound, per case: one frame's input bytes copied from plm_host_alloc memory
 * into the pool, event-timed the same way (median of 5): copy_bound_fps = 1 / that time,
 * the frames/s the uploads alone would allow at this frame size (per-copy overheads
 * included, which the 64 MiB bandwidth leaves out), and each config's of_copy_bound =
 * its frames/s / copy_bound_fps.
 *
 * The model: each config's plan is priced by plm_pipeline_predict (plume/pipeline.h) from
 * the device's calibration (plume/profile.h, measured once per device and cached): per
 * step max(bytes / copy bandwidth, flops / FMA rate) plus the launch floor, on cuda the
 * frame's copies too. The table prints that prediction (pred_ms/f), the measured time per
 * frame (meas_ms/f = 1000 / frames/s) and their ratio (meas/pred), for every config.
 *
 * Progress: a bar on stderr, one step per config run, when stderr is a terminal
 * (support/progress.h).
 *
 * The goals (on an H100/H200: 512x512 frames streamed from host at >= 80% of the
 * pinned-copy bound and >= 20,000 frames/s; streams >= 1.8x pooled where copy and
 * compute are of the same order; graphs and fusion each shortening device time per
 * frame) are printed with the measured figures; they are reported, never asserted.
 */
#ifndef PLUME_SUPPORT_PIPELINE_BENCH_H
#define PLUME_SUPPORT_PIPELINE_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "plume/plume.h"

/* The default pipeline: the detection chain with a fixed entropy range (so that sobel,
 * entropy and threshold fuse). On the synthetic scene's frames (u16 values, or the same
 * values as f32) the Sobel magnitude is below 2000 at 99.9% of the pixels, and entropy
 * above 4.25 bits marks about 1% of them: some 30 regions per 512x512 frame. */
#define PIPELINE_BENCH_DEFAULT                                               \
  "sobel ! entropy window=16 bins=64 range=0,2000 ! threshold value=4.25 ! " \
  "label connectivity=8 ! regions capacity=1024"

/* Frames a caller supplies (plume demo's scene): `count` frames of height x width of
 * dtype, row-major, back to back. */
typedef struct pipeline_bench_frames {
  const void *pixels;
  int64_t count, height, width;
  plm_dtype dtype;
  const char *name; /* what they are, for the table and JSON ("scene seed 1") */
} pipeline_bench_frames;

typedef struct pipeline_bench_options {
  plm_backend backend;  /* PLM_BACKEND_AUTO: cuda when a GPU is present */
  bool quick;           /* synthetic frames: 512x512 only (u16 and f32), fewer frames */
  bool smoke;           /* synthetic frames: 64x64 only (u16 and f32), 8 frames a run and
                           one round: proves every path, measures little (the size the CUDA
                           emulator runs in seconds) */
  const char *pipeline; /* plm_pipeline_parse text; NULL: PIPELINE_BENCH_DEFAULT */
  int64_t frames;       /* frames per timed run; 0: by frame size */
  int repeats;          /* timed rounds; 0: 3 (quick) or 5 */
  const pipeline_bench_frames *frames_from; /* NULL: the synthetic scene (support/scene.h),
                                               512x512 (and 2048x2048 unless quick),
                                               u16 and f32 */
  const char *prog; /* the name messages start with; NULL: "bench_pipeline" */
  int source_ahead; /* plm_run_stream_options.source_ahead for every run: 0, the source on
                       the enqueueing thread; N > 0, on its own thread, N frames ahead */
  /* When not NULL: after the first case's timed runs, one more run of its fastest
   * optimised config (fused, else the best streams K) with a profiler attached
   * (plume/profile.h), written to this directory with the case's frames/s per config as
   * the report's A/B bars. The table's figures come from the unprofiled runs. */
  const char *profile_dir;
} pipeline_bench_options;

/* Run the comparison, print the table to `table` (NULL: stdout) and, when json_path is
 * not NULL, write the JSON document there (then read it back and check it). Blocking;
 * creates and destroys a context of its own; one run at a time in a process (not
 * thread-safe). Returns an exit code: 0 success; 1 a
 * runtime failure (an API call failed, results differ between configs, the JSON could
 * not be written); 2 bad options (the pipeline text, frames of a bad shape). Messages
 * go to stderr. */
int pipeline_bench_run(const pipeline_bench_options *options, FILE *table, const char *json_path);

/* Whether path holds a bench_pipeline result document (the keys of every result row,
 * the floors); prints why not to err. */
bool pipeline_bench_validate_json(const char *path, FILE *err);

#endif /* PLUME_SUPPORT_PIPELINE_BENCH_H */

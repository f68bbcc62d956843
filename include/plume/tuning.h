/* plume/tuning.h: each op's launch and tiling knobs, tuned per device.
 *
 * Some ops have knobs that change their speed and never their result beyond the op's
 * stated tolerance: the CPU work bands per pool thread of entropy and the fused
 * sobel_entropy_threshold (bit-equal results), the launch shape of their CUDA window
 * kernel (max_block_threads, segment_windows, min_tasks, changes_at_once, and entropy's
 * atomic_counts; bit-equal results), conv2d's CUDA block (tile_width; each output's taps summed in the same
 * order), the batch from which lstm_cell and dendritic run their GEMM path on each
 * backend (the f32 sums round in another order, within their headers' tolerance),
 * matmul's AUTO TF32 threshold on cuda. Each is a tunable of the op's descriptor: a name,
 * the backend it acts on, its candidate values and its default (the constant plume used
 * before it was tunable, but for changes_at_once: 1 then, 2 now).
 *
 * The values in force come, in this order, from: a value set in this process
 * (plm_tuning_set), the tuning table of the device (written by `plume tune`, which
 * measures the candidates: plm_tune_run below), the default. A table is per
 * device and size class: a call's class is that of the bytes its cost model moves
 * (plm_size_class_of). The file is
 *   $XDG_CACHE_HOME/plume/tuning-<backend>-<hash>.json  (else ~/.cache/plume/...)
 * with the hash of its key, "backend|device name|device index|driver|plume version"
 * (docs/tuning-schema.md); a table whose key is not the device's is never used. The
 * environment's PLUME_TUNING=off leaves the files alone (nothing read, nothing written);
 * =refresh reads none (the defaults run) while `plume tune` writes a new one.
 *
 * When the values are read: a pipeline's compile resolves each step's values once and
 * keeps them (plm_pipeline_describe shows them); a public op call (plm_entropy, ...)
 * resolves them once per call. The internal entries that take their scratch from the
 * caller (plm__op_scratch_bytes and plm__op_call_with_scratch, ops/op_desc.h) run with
 * the values their call carries, the defaults without, so that the size one announces
 * is the size the other uses.
 *
 * Size. A table holds at most PLM_TUNING_MAX_ENTRIES entries (`plume tune` writes a few
 * hundred), in a file of at most PLM_TUNING_MAX_FILE_BYTES: a larger file is not parsed
 * and a larger table not loaded, and plm_tuning_table_info's problem says so (the ops'
 * defaults run, and the file is not replaced); plm_tuning_store refuses more entries.
 * Loading indexes the table once, so resolving a call's values costs the same whatever
 * the table's size.
 *
 * Thread-safe: the table is guarded by a lock; a table is loaded once per device and
 * process, at the first call on a context of that device.
 */
#ifndef PLUME_TUNING_H
#define PLUME_TUNING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/context.h"
#include "plume/export.h"
#include "plume/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most entries a table may hold, and the largest file read as one. */
enum { PLM_TUNING_MAX_ENTRIES = 16384, PLM_TUNING_MAX_FILE_BYTES = 16 << 20 };

/* The size classes a table distinguishes, by the bytes a call's cost model moves. */
typedef enum plm_size_class {
  PLM_SIZE_SMALL = 0, /* below 1 MiB */
  PLM_SIZE_MEDIUM,    /* below 64 MiB */
  PLM_SIZE_LARGE,
  PLM_SIZE_CLASS_COUNT
} plm_size_class;

/* The class of a call moving `bytes`; "small", "medium", "large" (NULL out of range). */
PLM_API plm_size_class plm_size_class_of(double bytes);
PLM_API const char *plm_size_class_name(plm_size_class size_class);

/* One tunable of an op. Strings and candidates are the library's own, static. */
typedef struct plm_tunable_info {
  const char *name;    /* "bands_per_thread" */
  plm_backend backend; /* where it acts */
  int64_t fallback;    /* the default */
  int candidate_count;
  const int64_t *candidates; /* ascending */
  const char *help;
} plm_tunable_info;

/* The number of tunables of op `op` (0..plm_op_count()-1, plume/op_info.h), and tunable
 * `tunable` of it. Errors: PLM_ERR_INVALID_ARG (NULL out or count, an index out of
 * range). */
PLM_API plm_status plm_op_tunable_count(int op, int *count);
PLM_API plm_status plm_op_tunable_info_get(int op, int tunable, plm_tunable_info *out);

/* Force a value in this process, for every device of backend: `op`'s tunable `tunable`
 * of that backend, in size class `size_class`, or in every class when size_class is -1.
 * It wins over a table; pipelines compiled later and op calls made later use it.
 * value must be one of the candidates. Errors: PLM_ERR_INVALID_ARG (an unknown op or
 * tunable, a class out of range, a value not among the candidates: the message lists
 * them). */
PLM_API plm_status plm_tuning_set(plm_backend backend, const char *op, const char *tunable,
                                  int size_class, int64_t value);

/* Forget every value set with plm_tuning_set, and the tables loaded (the next call on a
 * context loads its device's table again, as PLUME_TUNING says). */
PLM_API void plm_tuning_reset(void);

/* The value in force on ctx's device for op's tunable (of ctx's backend) in a size class.
 * Errors: PLM_ERR_INVALID_ARG (NULL arguments, unknown names, a class out of range). */
PLM_API plm_status plm_tuning_get(plm_context *ctx, const char *op, const char *tunable,
                                  plm_size_class size_class, int64_t *value);

/* One measured entry of a table: what `plume tune` chose for a tunable in a class. Times
 * are the sums, over the class's workloads, of each workload's median (ms). An entry with
 * tunable "" (value, fallback and best 0) is a point of the placement model instead: one
 * workload of the op, run as the table's values say, its median (default_ms, best_ms)
 * beside its model time (model_ms); an op has one per workload measured, several in a
 * class (plm_pipeline_predict, plume/pipeline.h, interpolates between them). */
typedef struct plm_tuning_entry {
  char op[32], tunable[32];
  plm_size_class size_class;
  int64_t value;    /* the value chosen: the default unless the winner beat it clearly */
  int64_t fallback; /* the default */
  int64_t best;     /* the fastest candidate measured (may not be kept) */
  double default_ms, best_ms;
  double cv; /* the largest coefficient of variation of the two */
  bool kept; /* best != fallback and (default_ms - best_ms) / default_ms > 2 cv */
  /* What the cost model (plm_pipeline_predict's roofline on the device's calibration)
   * predicts for the same workloads at the default (0: not known): with default_ms, a
   * point of the model (an op's tunable entries are its points when it has no entry of
   * tunable ""). */
  double model_ms;
} plm_tuning_entry;

/* The table of ctx's device as this process uses it. */
typedef struct plm_tuning_table_info {
  bool in_use;         /* a table of this device was loaded */
  char path[512];      /* where it is (or would be; "" with PLUME_TUNING=off or no HOME) */
  char key[512];       /* "host|AMD EPYC 7B13|0|0|0.1.0" */
  int entry_count;     /* its entries */
  int kept_count;      /* of which not the default */
  const char *setting; /* PLUME_TUNING as read: "on", "off" or "refresh" */
  char problem[512];   /* why a file at path is not in use although it is there: it could
                          not be read ("cannot open: Permission denied", "not a regular file
                          (it is a FIFO)") or is over the caps ("760000 entries, more than
                          the 16384 a tuning table may hold (not loaded)"); such a file is
                          never replaced. "" when none */
} plm_tuning_table_info;

/* The state of ctx's device's table (loading it if this process has not yet). */
PLM_API plm_status plm_tuning_table_info_get(plm_context *ctx, plm_tuning_table_info *out);

/* The entries of ctx's device's table, a malloc'd array the caller frees with free()
 * (*count 0 and *entries NULL when none). Errors: PLM_ERR_INVALID_ARG (NULL arguments),
 * PLM_ERR_OUT_OF_MEMORY. */
PLM_API plm_status plm_tuning_entries(plm_context *ctx, plm_tuning_entry **entries, size_t *count);

/* Make `entries` ctx's device's table in this process and, unless PLUME_TUNING=off, write
 * it to the file (a temporary file renamed over it: whole or not at all; through a
 * symbolic link to its target); path (may be NULL) receives where. Entries whose op,
 * tunable or value is unknown are refused. A file at the path that could not be read
 * (plm_tuning_table_info's problem) is not replaced: PLM_ERR_IO saying so. Errors:
 * PLM_ERR_INVALID_ARG (also for more than PLM_TUNING_MAX_ENTRIES entries), PLM_ERR_IO
 * (with the path and strerror). */
PLM_API plm_status plm_tuning_store(plm_context *ctx, const plm_tuning_entry *entries, size_t count,
                                    char *path, size_t path_size);

/* ---- plm_pipeline_run_stream's batch ----------------------------------------------------- */

/* Beside the ops' tunables the tables hold one of plm_pipeline_run_stream's (plume/pipeline.h,
 * "Batches"): under op PLM_TUNING_RUN_STREAM, tunable PLM_TUNING_BATCH_BYTES, the input
 * bytes a batch of small frames gathers, on each backend: 0 (the default: a frame at a
 * time) or 16 KiB, 32 KiB, ... 1 MiB, per size class of a frame's bytes. plm_tuning_set,
 * plm_tuning_get and plm_tuning_store take it by these names as they take an op's; it has
 * no points of the model. plm_tune_batch (plume/pipeline.h) measures it. */
#define PLM_TUNING_RUN_STREAM "run_stream"
#define PLM_TUNING_BATCH_BYTES "batch_bytes"

/* The most frames plm_tuning_batch gives. */
enum { PLM_TUNING_MAX_BATCH = 256 };

/* The batch for frames of frame_bytes under a batch_bytes target: the largest power of two
 * N <= PLM_TUNING_MAX_BATCH with N * frame_bytes <= batch_bytes; 1 when batch_bytes is
 * below twice frame_bytes (0, or frame_bytes 0: 1). */
PLM_API int plm_tuning_batch_for(int64_t batch_bytes, size_t frame_bytes);

/* The batch in force on ctx's device for frames of frame_bytes (one frame's input bytes):
 * plm_tuning_batch_for of the batch_bytes in force (forced, else the table's, else 0) in
 * frame_bytes' size class. 1 unless a batch was tuned or set. The caller compiles its
 * pipeline over (N, H, W) stacks when *batch is N >= 2 and passes N as
 * plm_run_stream_options.batch. Errors: PLM_ERR_INVALID_ARG (NULL arguments, frame_bytes
 * 0). */
PLM_API plm_status plm_tuning_batch(plm_context *ctx, size_t frame_bytes, int *batch);

/* The batch_bytes tunable of backend (its candidates and default), as
 * plm_op_tunable_info_get gives an op's. Errors: PLM_ERR_INVALID_ARG (out NULL, a backend
 * not host or cuda). */
PLM_API plm_status plm_tuning_batch_tunable(plm_backend backend, plm_tunable_info *out);

/* ---- measuring (`plume tune`) ------------------------------------------------------------ */

/* How far a plm_tune_run has come: `done` of its `total` steps (a step: one tunable of one
 * op, or one op's points of the model) are measured, `op` the op of the next one (NULL at
 * the end). Called on the calling thread, before the first step and after each. */
typedef void (*plm_tune_progress_fn)(void *user, int done, int total, const char *op);

typedef struct plm_tune_options {
  bool quick;     /* fewer sizes and runs: seconds on a CPU (the CLI tests' mode) */
  const char *op; /* only this op's tunables and points; NULL: every op's */
  int runs;       /* timed runs per candidate and workload, 0..1000 (0: 5 quick, else 15) */
  plm_tune_progress_fn progress; /* NULL: none */
  void *progress_user;           /* progress's first argument */
} plm_tune_options;

/* quick false, op NULL, runs 0, no progress. */
PLM_API plm_tune_options plm_tune_options_default(void);

/* Measure the tunables of ctx's backend on ctx's device, on a stream of its own, and
 * decide one entry per tunable and size class measured (plm_tuning_entry: a candidate
 * other than the default is kept only when its gain over the default is above twice the
 * larger CV of the two); then time every op that has workloads (the image ops, matmul,
 * lstm_cell, dendritic: with or without a tunable) with the values decided, one entry per
 * workload of tunable "" (a point of the placement model). options->op limits both to
 * that op. Into *entries, a malloc'd array the caller frees with free(); nothing is
 * stored: plm_tuning_store does that. Each op runs with call-local values, so other
 * threads' calls are not affected. Blocking: seconds (quick) to about half a minute on a
 * 2-core CPU. On the CUDA emulator of an emulated build (plm_build_info.cuda_emulated) the
 * frames are 1/16 the side (16 x 16 to 256 x 256: every workload in the small class) and
 * matmul's matrices 1/8 (16 to 128), so that the same workloads and decisions fit the
 * emulator; its times are the emulator's on a CPU, no GPU's. options may be NULL (the
 * defaults). Errors:
 * PLM_ERR_INVALID_ARG (NULL arguments, runs out of range, an unknown op),
 * PLM_ERR_OUT_OF_MEMORY, an op's failure (named). */
PLM_API plm_status plm_tune_run(plm_context *ctx, const plm_tune_options *options,
                                plm_tuning_entry **entries, size_t *count);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_TUNING_H */

/* ops/op_tuning.h: the values of the ops' tunables in force (internal; plume/tuning.h).
 *
 * A descriptor lists its tunables (ops/op_desc.h); this module keeps what overrides their
 * defaults: values forced in the process (plm_tuning_set) and one table per device,
 * loaded from the cache directory the first time a context of that device asks, and
 * resolves a call's values from them (plm__op_tuning_resolve). The ops never look here:
 * pack reads call->tuning (plm__op_tuned).
 */
#ifndef PLUME_OPS_OP_TUNING_H
#define PLUME_OPS_OP_TUNING_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/common/entropy.h"
#include "ops/op_desc.h"
#include "plume/tuning.h"

/* The batch from which an op runs its GEMM path, on host then on cuda (lstm_cell,
 * dendritic): two tunables named gemm_min_batch, defaults host_default and cuda_default.
 * `what` ends the help: "the gates are two GEMMs (else per unit)". */
#define PLM__GEMM_MIN_BATCH_TUNABLES(host_default, cuda_default, what)                 \
  {.name = "gemm_min_batch",                                                           \
   .backend = PLM_BACKEND_HOST,                                                        \
   .fallback = (host_default),                                                         \
   .candidate_count = 6,                                                               \
   .candidates = {1, 2, 4, 8, 16, 32},                                                 \
   .help = "the batch from which " what},                                              \
  {                                                                                    \
    .name = "gemm_min_batch", .backend = PLM_BACKEND_CUDA, .fallback = (cuda_default), \
    .candidate_count = 6, .candidates = {8, 16, 32, 64, 128, 256},                     \
    .help = "the batch from which " what                                               \
  }

/* The CPU work bands per pool thread of a banded host kernel (entropy, the fused op). */
#define PLM__BANDS_PER_THREAD_TUNABLE(fallback_value)                                      \
  {                                                                                        \
    .name = "bands_per_thread", .backend = PLM_BACKEND_HOST, .fallback = (fallback_value), \
    .candidate_count = 5, .candidates = {1, 2, 4, 8, 16},                                  \
    .help =                                                                                \
        "CPU work bands per pool thread: more balance uneven cores, fewer cost less "      \
        "scratch and halo"                                                                 \
  }

/* The launch shape of the CUDA entropy window kernel (entropy and the fused op; what each
 * is: kernels/common/entropy.h's plm__entropy_cuda_shape), four cuda tunables in that
 * struct's order. Every candidate is valid for every input: the plan lowers the threads
 * where the histograms' shared memory does not fit them, and no shape changes a bit. */
#define PLM__ENTROPY_CUDA_TUNABLES                                                             \
  {.name = "max_block_threads",                                                                \
   .backend = PLM_BACKEND_CUDA,                                                                \
   .fallback = PLM__ENTROPY_CUDA_MAX_THREADS,                                                  \
   .candidate_count = 3,                                                                       \
   .candidates = {32, 64, 128},                                                                \
   .help =                                                                                     \
       "the most threads per block of the window kernel, one output column each "              \
       "(fewer where the histograms' shared memory does not fit them)"},                       \
      {.name = "segment_windows",                                                              \
       .backend = PLM_BACKEND_CUDA,                                                            \
       .fallback = PLM__ENTROPY_CUDA_SEGMENT_WINDOWS,                                          \
       .candidate_count = 4,                                                                   \
       .candidates = {1, 2, 4, 8},                                                             \
       .help =                                                                                 \
           "a task's output rows, in max(window, 16): longer tasks fill fewer first "          \
           "windows, shorter ones spread further"},                                            \
  {                                                                                            \
    .name = "min_tasks", .backend = PLM_BACKEND_CUDA, .fallback = PLM__ENTROPY_CUDA_MIN_TASKS, \
    .candidate_count = 6, .candidates = {128, 256, 512, 1024, 2048, 4096},                     \
    .help =                                                                                    \
        "the tasks below which a launch halves its segments (down to 8 rows), so "             \
        "that a small frame still spreads over the GPU"                                        \
  }                                                                                            \
  , {                                                                                          \
    .name = "changes_at_once", .backend = PLM_BACKEND_CUDA,                                    \
    .fallback = PLM__ENTROPY_CUDA_CHANGES_AT_ONCE, .candidate_count = 2, .candidates = {1, 2}, \
    .help =                                                                                    \
        "the histogram counts a thread loads before it stores them: 2 halves the "             \
        "chain of dependent shared-memory accesses, for two more instructions a change"        \
  }

enum { PLM__ENTROPY_CUDA_TUNABLE_COUNT = 4 };

/* The entropy op's own cuda tunable, after the window ops' (plm__entropy_cuda_shape's
 * atomic_counts; the fused op's kernel, at its register budget already, spilled with
 * atomic counts, so it has none). */
#define PLM__ENTROPY_ATOMIC_COUNTS_TUNABLE                                                   \
  {                                                                                          \
    .name = "atomic_counts", .backend = PLM_BACKEND_CUDA,                                    \
    .fallback = PLM__ENTROPY_CUDA_ATOMIC_COUNTS, .candidate_count = 2, .candidates = {0, 1}, \
    .help =                                                                                  \
        "1: each histogram count changed by one shared-memory atomic where a load and a "    \
        "store were, so a thread's changes do not wait on each other (histograms in shared " \
        "memory only)"                                                                       \
  }

/* The tunables of an op run by the window kernels (entropy, the fused op), in their
 * descriptors' order: the host's bands per thread, then the CUDA launch shape's four;
 * entropy's then its atomic_counts. */
enum {
  PLM__WINDOW_TUNE_BANDS,
  PLM__WINDOW_TUNE_CUDA_SHAPE,
  PLM__WINDOW_TUNE_COUNT = PLM__WINDOW_TUNE_CUDA_SHAPE + PLM__ENTROPY_CUDA_TUNABLE_COUNT,
  PLM__ENTROPY_TUNE_ATOMIC_COUNTS = PLM__WINDOW_TUNE_COUNT,
  PLM__ENTROPY_TUNE_COUNT
};
_Static_assert((int)PLM__ENTROPY_TUNE_COUNT <= (int)PLM__OP_MAX_TUNABLES,
               "a call's plm__op_tuning holds a window op's tunables");

/* A window op's descriptor's tunables, its host bands per thread defaulting to bands. */
#define PLM__WINDOW_OP_TUNABLES(bands)                               \
  (const plm__op_tunable[PLM__WINDOW_TUNE_COUNT]) {                  \
    PLM__BANDS_PER_THREAD_TUNABLE(bands), PLM__ENTROPY_CUDA_TUNABLES \
  }

/* The entropy op's: a window op's and its atomic_counts. */
#define PLM__ENTROPY_OP_TUNABLES(bands)                               \
  (const plm__op_tunable[PLM__ENTROPY_TUNE_COUNT]) {                  \
    PLM__BANDS_PER_THREAD_TUNABLE(bands), PLM__ENTROPY_CUDA_TUNABLES, \
        PLM__ENTROPY_ATOMIC_COUNTS_TUNABLE                            \
  }

/* The values in force of the four PLM__ENTROPY_CUDA_TUNABLES, op's tunables first..first+3
 * (atomic_counts 0: the entropy op sets its own). */
static inline plm__entropy_cuda_shape plm__entropy_cuda_shape_tuned(const plm__op_desc *op,
                                                                    const plm__op_call *call,
                                                                    int first) {
  return (plm__entropy_cuda_shape){.max_threads = (int)plm__op_tuned(op, call, first),
                                   .segment_windows = (int)plm__op_tuned(op, call, first + 1),
                                   .min_tasks = (int)plm__op_tuned(op, call, first + 2),
                                   .changes_at_once = (int)plm__op_tuned(op, call, first + 3)};
}

/* The index of op's tunable named `name` acting on backend, or -1. */
int plm__op_tunable_index(const plm__op_desc *op, const char *name, plm_backend backend);

/* The values in force for a checked call of op on ctx (its size class from the op's
 * cost model), into *tuning: forced, else ctx's device's table (loaded on first use),
 * else the defaults. Tunables of the other backend keep their defaults. */
void plm__op_tuning_resolve(const plm_context *ctx, const plm__op_desc *op,
                            const plm__op_call *call, plm__op_tuning *tuning);

/* A point of the model: one of an op's measured workloads (or a size class's sum of
 * them), what the cost model predicted for it on the device's calibration and what it
 * took with the values in use (ms). */
typedef struct plm__tuning_point {
  double model_ms, measured_ms;
} plm__tuning_point;

/* The time `count` points (sorted here by model_ms, those of one model time merged into
 * their geometric mean) give a call the model predicts model_ms for: interpolated between
 * the two points about it, linearly in log(model) -> log(measured) (a power law between
 * them); outside their span, model_ms times the nearest point's measured / model ratio.
 * count >= 1, every time > 0. */
double plm__tuning_interpolate(plm__tuning_point *points, int count, double model_ms);

/* What op takes on a device (its backend and name, as a calibration gives them) for a
 * call the model predicts model_ms for, from the points of the device's table this
 * process has loaded (the op's entries of the op alone, one per workload; else its
 * tunables' entries) by plm__tuning_interpolate: true and *measured_ms; false when the
 * table has no point of op (or none is loaded). */
bool plm__tuning_measured_ms(plm_backend backend, const char *device, const plm__op_desc *op,
                             double model_ms, double *measured_ms);

/* The cache directory of plume's files: $XDG_CACHE_HOME/plume, else $HOME/.cache/plume;
 * false when neither variable is set or the path does not fit. With make, the directory
 * (and its parent) is created when missing; false when that fails. */
bool plm__cache_dir(char *dir, size_t size, bool make);

#endif /* PLUME_OPS_OP_TUNING_H */

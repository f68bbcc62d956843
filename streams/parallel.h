/* streams/parallel.h: the data-parallel CPU pool behind the CPU kernels.
 *
 * One process-wide pool of worker threads, one per online core beyond the first,
 * started on first use. plm__parallel_for splits [0, count) into chunks of at least
 * `grain` indices and runs body(context, begin, end) on them across the pool and
 * the calling thread, returning when every chunk is done. Thread-safe: calls from
 * several streams' workers take turns (each already uses every core). Work too
 * small for two chunks, or a machine with one core, runs on the caller alone.
 *
 * A host context with a core budget (plm_context_config.host_threads) has a pool of its
 * own, of that many threads (the caller counted): its streams' workers call
 * plm__parallel_use once, and the kernels they run split their work over it instead of
 * the process-wide pool, one kernel at a time (even one too small to split, which the
 * process-wide pool lets each stream run at once), so two such contexts share the cores
 * as their budgets say. (A kernel that does not call plm__parallel_for runs on its
 * stream's worker outside the budget.)
 */
#ifndef PLUME_KERNELS_CPU_PARALLEL_H
#define PLUME_KERNELS_CPU_PARALLEL_H

#include <stdint.h>

typedef void (*plm__range_fn)(void *context, int64_t begin, int64_t end);

typedef struct plm__parallel_pool plm__parallel_pool;

/* A pool of `threads` threads, the caller included (threads - 1 workers, started now).
 * Returns NULL when threads is below 1 or no thread or memory could be had. */
plm__parallel_pool *plm__parallel_pool_create(int threads);

/* Stop and join the pool's workers; no job may be running on it. NULL is a no-op. */
void plm__parallel_pool_destroy(plm__parallel_pool *pool);

/* The pool the calling thread's plm__parallel_for uses from now on (NULL: the
 * process-wide one). */
void plm__parallel_use(plm__parallel_pool *pool);

void plm__parallel_for(int64_t count, int64_t grain, plm__range_fn body, void *context);

/* Threads the calling thread's pool uses, the caller included (the process-wide pool's:
 * the online cores, at most 64). */
int plm__parallel_threads(void);

#endif /* PLUME_KERNELS_CPU_PARALLEL_H */

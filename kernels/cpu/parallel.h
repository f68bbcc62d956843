/* kernels/cpu/parallel.h: the data-parallel CPU pool behind the CPU kernels.
 *
 * One process-wide pool of worker threads, one per online core beyond the first,
 * started on first use. plm__parallel_for splits [0, count) into chunks of at least
 * `grain` indices and runs body(context, begin, end) on them across the pool and
 * the calling thread, returning when every chunk is done. Thread-safe: calls from
 * several streams' workers take turns (each already uses every core). Work too
 * small for two chunks, or a machine with one core, runs on the caller alone.
 */
#ifndef PLUME_KERNELS_CPU_PARALLEL_H
#define PLUME_KERNELS_CPU_PARALLEL_H

#include <stdint.h>

typedef void (*plm__range_fn)(void *context, int64_t begin, int64_t end);

void plm__parallel_for(int64_t count, int64_t grain, plm__range_fn body, void *context);

/* Threads the pool uses, the caller included (the online cores, at most 64). */
int plm__parallel_threads(void);

#endif /* PLUME_KERNELS_CPU_PARALLEL_H */

/* benchmarks/pool_lookup.h: bench_pool --lookup, the pool's pointer -> descriptor
 * lookup timed alone (see pool_lookup.c). */
#ifndef PLUME_BENCH_POOL_LOOKUP_H
#define PLUME_BENCH_POOL_LOOKUP_H

#include <stdbool.h>

/* Print the table; false (with a message on stderr) when host memory runs out.
 * `quick`: fewer lookups per repetition. */
bool bench_pool_lookup(bool quick);

#endif /* PLUME_BENCH_POOL_LOOKUP_H */

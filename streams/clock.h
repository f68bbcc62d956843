/* streams/clock.h: the monotonic clock, read one way everywhere (internal, header-only).
 *
 * CLOCK_MONOTONIC never jumps (setting the date does not move it) and counts from an
 * unspecified start, so only differences of two readings mean anything: durations,
 * rates, and deadlines compared against a later reading ("now + 10 ms"). A deadline
 * handed to pthread_cond_timedwait is another matter: a condition variable made with
 * default attributes measures it on CLOCK_REALTIME (tests/gate.h), not with these.
 *
 * The lowest layer holds it so that every layer (streams, pool, kernels/cpu, pipeline,
 * profile) and the command, the tools, the tests and the benchmarks read the same
 * clock; they include it as "streams/clock.h". Each function is thread-safe, never
 * blocks and costs one clock_gettime (a vDSO call on Linux, some 20 ns). A file that
 * includes it must be compiled with _POSIX_C_SOURCE >= 199309L (the library and its
 * tools use 200809L) for CLOCK_MONOTONIC to be declared.
 */
#ifndef PLUME_STREAMS_CLOCK_H
#define PLUME_STREAMS_CLOCK_H

#include <stdint.h>
#include <time.h>

/* The monotonic clock in nanoseconds (exact: int64_t holds 292 years of them). */
static inline int64_t plm__monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

/* The monotonic clock in seconds (a double: to the nanosecond for 100 days of uptime,
 * to a few nanoseconds after). Multiply by 1e3 for milliseconds. */
static inline double plm__monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The same clock as of its last tick (CLOCK_MONOTONIC_COARSE: a few milliseconds
 * behind at most, never ahead of plm__monotonic_seconds read later), for timestamps
 * taken on hot paths that people read rather than subtract: the pool's time of each
 * free. It costs a memory read (a few ns) instead of a clock read. */
static inline double plm__monotonic_seconds_coarse(void) {
  struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
  clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif /* PLUME_STREAMS_CLOCK_H */

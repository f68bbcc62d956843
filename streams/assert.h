/* streams/assert.h: internal invariants.
 *
 * PLM_ASSERT checks a condition that only a bug in plume can break; it aborts with
 * the location in debug builds and compiles to nothing under NDEBUG. Conditions a
 * caller can cause are never asserted: they are statuses (streams/error.h).
 */
#ifndef PLUME_STREAMS_ASSERT_H
#define PLUME_STREAMS_ASSERT_H

#ifdef NDEBUG
#define PLM_ASSERT(cond) ((void)0)
#else
#include <stdio.h>
#include <stdlib.h>
#define PLM_ASSERT(cond)                                                                           \
  ((cond) ? (void)0                                                                                \
          : (fprintf(stderr, "plume: invariant broken at %s:%d: %s\n", __FILE__, __LINE__, #cond), \
             abort()))
#endif

#endif /* PLUME_STREAMS_ASSERT_H */

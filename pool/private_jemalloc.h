#ifndef PLUME_POOL_PRIVATE_JEMALLOC_H
#define PLUME_POOL_PRIVATE_JEMALLOC_H

/* plume's private jemalloc, the pinned host pool's allocator (pool/host_pool.c): built by
 * scripts/private-jemalloc with the prefix plm__je_, hidden symbols and no initial-exec
 * TLS, and linked into libplume.so and libplume.a (cmake/private_jemalloc.cmake). It has
 * no malloc or free of its own: malloc stays the program's (libc's, or a sanitizer's).
 *
 * Its API is called by the je_* names (je_mallocx, je_dallocx, je_mallctl), which
 * jemalloc.h maps to the prefixed symbols (plm__je_mallocx, ...) when
 * JEMALLOC_NO_DEMANGLE is defined. The plain names (mallocx, mallctl) are not
 * declared; nothing else in the process shares this jemalloc, and its options come
 * from PLM__JE_MALLOC_CONF, not MALLOC_CONF. Tests and benchmarks linked with
 * plume_static reach the same instance as the library through this header. */
#define JEMALLOC_NO_DEMANGLE
#include <jemalloc/jemalloc.h>

#endif

/* streams/nvtx.h: NVTX ranges, so that Nsight Systems names plume's work (internal).
 *
 * On a context of the cuda backend, plm__nvtx_push opens a range named `name` on the
 * calling thread's NVTX timeline and plm__nvtx_pop closes the innermost one; the
 * kernels and copies launched in between show under it. Elsewhere (the host backend, a
 * build without CUDA) both do nothing. Without a profiling tool attached NVTX calls
 * return at once (NVTX v3 is header-only and loads a tool only when one is injected). */
#ifndef PLUME_STREAMS_NVTX_H
#define PLUME_STREAMS_NVTX_H

#include "plume/context.h"

void plm__nvtx_push(const plm_context *ctx, const char *name);
void plm__nvtx_pop(const plm_context *ctx);

#endif /* PLUME_STREAMS_NVTX_H */

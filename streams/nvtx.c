/* streams/nvtx.c: NVTX ranges on cuda contexts (see streams/nvtx.h). */
#include "streams/nvtx.h"

#include "streams/runtime.h"

#ifdef PLM_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>

static bool on_cuda(const plm_context *ctx) {
  return ctx && ctx->backend->kind == PLM_BACKEND_CUDA;
}

void plm__nvtx_push(const plm_context *ctx, const char *name) {
  if (on_cuda(ctx)) nvtxRangePushA(name);
}

void plm__nvtx_pop(const plm_context *ctx) {
  if (on_cuda(ctx)) nvtxRangePop();
}
#else
void plm__nvtx_push(const plm_context *ctx, const char *name) {
  (void)ctx;
  (void)name;
}

void plm__nvtx_pop(const plm_context *ctx) {
  (void)ctx;
}
#endif

/* benchmarks/cublas_loader.c: cuBLAS loaded at run time (benchmarks/cublas_loader.h). */
#include "cublas_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

bool cublas_peer_load(cublas_peer *peer, plm_stream *stream, plm_backend backend) {
  if (peer->handle) return true;
  if (peer->why[0]) return false;
  void *native = NULL;
  if (plm_stream_native_handle(stream, &native) != PLM_OK) {
    snprintf(peer->why, sizeof peer->why, "the %s backend has no cuBLAS",
             plm_backend_name(backend));
    return false;
  }
  /* cuBLAS talks to the real driver: on the CUDA emulator's device it would start, fail
   * and, once unloaded, leave its C++ runtime's allocations behind (LeakSanitizer). */
  if (plm_build_info_get()->cuda_emulated) {
    snprintf(peer->why, sizeof peer->why,
             "the cuda device is the CUDA emulator: cuBLAS runs on a GPU only");
    return false;
  }
  static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  for (size_t i = 0; !peer->library && i < sizeof names / sizeof *names; i++)
    peer->library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!peer->library) {
    snprintf(peer->why, sizeof peer->why, "libcublas.so not found (%s)", dlerror());
    return false;
  }
  *(void **)&peer->create = dlsym(peer->library, "cublasCreate_v2");
  *(void **)&peer->destroy = dlsym(peer->library, "cublasDestroy_v2");
  *(void **)&peer->set_stream = dlsym(peer->library, "cublasSetStream_v2");
  *(void **)&peer->set_math_mode = dlsym(peer->library, "cublasSetMathMode");
  *(void **)&peer->sgemm = dlsym(peer->library, "cublasSgemm_v2");
  if (!peer->create || !peer->destroy || !peer->set_stream || !peer->set_math_mode ||
      !peer->sgemm || peer->create(&peer->handle) != 0 ||
      peer->set_stream(peer->handle, native) != 0) {
    snprintf(peer->why, sizeof peer->why, "cuBLAS did not start");
    if (peer->handle) peer->destroy(peer->handle);
    peer->handle = NULL;
    dlclose(peer->library);
    peer->library = NULL;
    return false;
  }
  return true;
}

bool cublas_peer_sgemm(cublas_peer *peer, cublas_math math, int m, int n, int k, const float *a,
                       const float *b, float *out) {
  const float one = 1.0f, zero = 0.0f;
  int status = peer->set_math_mode(peer->handle, (int)math);
  /* Row-major out = a b is column-major outᵀ = bᵀ aᵀ: the operands swap. */
  if (status == 0)
    status = peer->sgemm(peer->handle, 0, 0, n, m, k, &one, b, n, a, k, &zero, out, n);
  if (status != 0) {
    snprintf(peer->why, sizeof peer->why, "cuBLAS status %d at m=%d n=%d k=%d", status, m, n, k);
    return false;
  }
  return true;
}

void cublas_peer_release(cublas_peer *peer) {
  if (peer->handle) peer->destroy(peer->handle);
  if (peer->library) dlclose(peer->library);
  memset(peer, 0, sizeof *peer);
}

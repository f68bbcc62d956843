/* benchmarks/cublas_loader.h: cuBLAS's SGEMM, the peer the matmul benchmarks measure
 * plume against, loaded at run time (dlopen) so that no benchmark needs cuBLAS to build
 * or to run on host.
 *
 * Only what the benchmarks call is declared, by hand (handles are pointers, statuses
 * ints, CUBLAS_OP_N is 0). A loaded cuBLAS has one handle bound to one plume stream
 * (plm_stream_native_handle), so its work is ordered with plume's on that stream and
 * the same events time both. Not thread-safe: one benchmark thread uses it.
 */
#ifndef PLUME_BENCH_CUBLAS_LOADER_H
#define PLUME_BENCH_CUBLAS_LOADER_H

#include <stdbool.h>

#include "plume/plume.h"

/* cuBLAS's math modes (cublasMath_t) the benchmarks use. */
typedef enum cublas_math {
  CUBLAS_MATH_FP32 = 0, /* CUBLAS_DEFAULT_MATH: SGEMM on the CUDA cores, exact f32 */
  CUBLAS_MATH_TF32 = 3  /* CUBLAS_TF32_TENSOR_OP_MATH: SGEMM on the tensor cores, TF32 inputs */
} cublas_math;

typedef struct cublas_peer {
  void *library;
  void *handle;
  int (*create)(void **handle);
  int (*destroy)(void *handle);
  int (*set_stream)(void *handle, void *stream);
  int (*set_math_mode)(void *handle, int mode);
  int (*sgemm)(void *handle, int transa, int transb, int m, int n, int k, const float *alpha,
               const float *a, int lda, const float *b, int ldb, const float *beta, float *c,
               int ldc);
  char why[160]; /* why it is not there, once a load failed */
} cublas_peer;

/* Load cuBLAS and make a handle on stream (a cuda stream of backend); true when ready.
 * false, with peer->why set, on another backend or where libcublas is missing or does
 * not start; a failed load is not retried. Calling it again once ready is free. */
bool cublas_peer_load(cublas_peer *peer, plm_stream *stream, plm_backend backend);

/* Row-major out (m, n) = a (m, k) · b (k, n), f32 device pointers, with the math mode;
 * enqueued on the handle's stream. false, with peer->why set, when cuBLAS refuses. */
bool cublas_peer_sgemm(cublas_peer *peer, cublas_math math, int m, int n, int k, const float *a,
                       const float *b, float *out);

/* Destroy the handle and unload; the peer can be loaded again afterwards. */
void cublas_peer_release(cublas_peer *peer);

#endif /* PLUME_BENCH_CUBLAS_LOADER_H */

/* kernels/cuda/launch.h: launching CUDA kernels (internal, C++ only).
 *
 * A launcher (plm__<op>_cuda) is called by its op with the context's device current
 * (PLM__OP_ON_DEVICE in ops/op_internal.h) and enqueues everything on the cudaStream_t
 * it is given, never on the legacy default stream, without waiting for the device.
 * plm__cuda_check_launch turns the state left by a kernel launch into a status,
 * naming the kernel and CUDA's error; call it right after every launch.
 * plm__cuda_call_failed does the same for a runtime call a launcher makes besides its
 * kernels (a memset of scratch, a copy of a table, an attribute query). Every failed
 * runtime call also leaves its error in the runtime's per-thread last-error slot, and
 * the next launch check (of this op or of the next one) would blame its own kernel for
 * it; so every failure goes through one of these two, which empty the slot. */
#ifndef PLUME_KERNELS_CUDA_LAUNCH_H
#define PLUME_KERNELS_CUDA_LAUNCH_H

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <utility>

#include "plume/status.h"
#include "streams/error.h"

static inline plm_status plm__cuda_status_of(cudaError_t err) {
  return err == cudaErrorMemoryAllocation ? PLM_ERR_OUT_OF_MEMORY : PLM_ERR_BACKEND;
}

static inline plm_status plm__cuda_check_launch(const char *kernel) {
  cudaError_t err = cudaGetLastError(); /* reads and empties the slot */
  if (err == cudaSuccess) return PLM_OK;
  return plm__fail_raw(plm__cuda_status_of(err), "launching %s failed: %s (%s)", kernel,
                       cudaGetErrorName(err), cudaGetErrorString(err));
}

/* err (not cudaSuccess) from the call that `what` describes ("entropy: clearing the
 * histograms"), as a status and the message "<what> failed: <name> (<text>)". */
static inline plm_status plm__cuda_call_failed(cudaError_t err, const char *what) {
  (void)cudaGetLastError();
  return plm__fail_raw(plm__cuda_status_of(err), "%s failed: %s (%s)", what, cudaGetErrorName(err),
                       cudaGetErrorString(err));
}

/* The dynamic shared memory a block may have without opting in (a kernel with no static
 * shared memory). */
enum { PLM__CUDA_SHARED_WITHOUT_OPT_IN = 48 * 1024 };

/* Opt `kernel` (with no static shared memory) in to `bytes` of dynamic shared memory a
 * block: nothing to do up to PLM__CUDA_SHARED_WITHOUT_OPT_IN; past it the attribute
 * cudaFuncAttributeMaxDynamicSharedMemorySize, which launchers call this for, never
 * cudaFuncSetAttribute themselves. The attribute is the
 * kernel's, for every thread that launches it: a thread setting a smaller value between
 * another's setting and launch would fail that launch, or a graph captured with it. So the
 * value only rises: each call sets the most this kernel has been given on the current
 * device, or `bytes` where that is more, and remembers it once the runtime took it (a
 * request past the device's limit fails and changes nothing). Under a lock; each
 * translation unit keeps its own kernels'. The runtime's error, or cudaSuccess. */
static inline cudaError_t plm__cuda_opt_in_shared(const void *kernel, size_t bytes) {
  if (bytes <= PLM__CUDA_SHARED_WITHOUT_OPT_IN) return cudaSuccess;
  static std::mutex lock;
  static std::map<std::pair<int, const void *>, size_t> given;
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  const std::lock_guard<std::mutex> held(lock);
  size_t &most = given[{device, kernel}];
  const size_t value = bytes > most ? bytes : most;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)value);
  if (err == cudaSuccess) most = value;
  return err;
}

/* Blocks for a grid-stride loop over `count` elements with `threads` per block: at
 * least 1 (a grid of 0 blocks is a launch error) and at most enough to fill any GPU
 * (the loop covers the rest). */
static inline unsigned plm__cuda_blocks(int64_t count, unsigned threads) {
  int64_t blocks = (count + threads - 1) / threads;
  const int64_t most = 65535LL * 32;
  if (blocks < 1) return 1;
  return (unsigned)(blocks < most ? blocks : most);
}

/* A grid dimension of `blocks` blocks (at least 1), capped for a kernel that walks the
 * rest grid-stride: x at 2^20 (enough to fill any GPU), y and z at CUDA's 65535. */
static inline unsigned plm__cuda_grid_x(int64_t blocks) {
  const int64_t most = (int64_t)1 << 20;
  return (unsigned)(blocks < 1 ? 1 : blocks < most ? blocks : most);
}
static inline unsigned plm__cuda_grid_yz(int64_t blocks) {
  return (unsigned)(blocks < 1 ? 1 : blocks < 65535 ? blocks : 65535);
}

#endif /* PLUME_KERNELS_CUDA_LAUNCH_H */

/* emu/include/cuda_emu.h: CUDA C++ on the CPU, force-included (-include cuda_emu.h) into
 * every kernel file the emulated build compiles (kernels/cuda/*.cu after emu/cu2cpp.pl).
 *
 * It takes the toolkit's own headers for the runtime API's types and prototypes, the
 * vector types and the half and bfloat16 types (their host forms), defines CUDA's
 * qualifiers as nothing, and gives the device's built-ins: the thread's indices
 * (plm_emu/kernel.h), barriers and warp collectives (plm_emu/sync.h), atomics
 * (plm_emu/atomics.h) and intrinsics (plm_emu/intrinsics.h); <mma.h> is the emulator's
 * own WMMA (emu/include/mma.h, found before the toolkit's). Then it defines __CUDACC__
 * and __CUDA_ARCH__ 900, so what follows compiles as device code for an sm_90 GPU: the
 * kernels' device branches are the ones compiled, and tested. emu/README.md says what
 * this emulates and what it cannot see. */
#ifndef PLUME_EMU_CUDA_EMU_H
#define PLUME_EMU_CUDA_EMU_H
#ifdef __cplusplus

#include <cuda_runtime_api.h>
#include <vector_functions.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

/* The qualifiers, as nothing (the toolkit's host headers define some as nothing too).
 * __noinline__ is left alone: the standard library spells its own attribute so. */
#undef __global__
#undef __device__
#undef __host__
#undef __constant__
#undef __managed__
#undef __forceinline__
#undef __launch_bounds__
#undef __grid_constant__
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __forceinline__ inline
#define __launch_bounds__(...)
#ifndef __align__
#define __align__(n) __attribute__((aligned(n)))
#endif

#include "plm_emu/kernel.h"
#include "plm_emu/sync.h"
#include "plm_emu/atomics.h"
#include "plm_emu/intrinsics.h"

/* The C++ forms the toolkit's cuda_runtime.h (not _api.h) gives. */
template <class T>
cudaError_t cudaFuncSetAttribute(T *entry, cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute((const void *)entry, attr, value);
}
template <class T>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, T *entry) {
  return cudaFuncGetAttributes(attr, (const void *)entry);
}
template <class T>
cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src, size_t count, size_t offset = 0,
                               cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
  return cudaMemcpyToSymbol((const void *)&symbol, src, count, offset, kind);
}
template <class T>
cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t count, size_t offset = 0,
                                 cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
  return cudaMemcpyFromSymbol(dst, (const void *)&symbol, count, offset, kind);
}

#ifndef PLM_EMU_NO_DEVICE_MACROS
#define __CUDACC__ 1
#define __CUDA_ARCH__ 900
#endif

#endif /* __cplusplus */
#endif /* PLUME_EMU_CUDA_EMU_H */

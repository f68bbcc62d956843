/* streams/cuda_vmm.h: device memory whose pages the cuda backend can give back and take
 * again (internal), for the pool's page release (pool/pool_internal.h, "Giving memory
 * back").
 *
 * Why. A cudaMalloc allocation goes back whole or not at all, so a pool chunk with one
 * live block would hold all its memory. The driver's virtual memory calls separate
 * addresses from memory: an address range is reserved (cuMemAddressReserve), physical
 * allocations (cuMemCreate) are mapped into it (cuMemMap) and made readable and
 * writable by the device (cuMemSetAccess); unmapping one and releasing it (cuMemUnmap,
 * cuMemRelease) gives its memory back while the addresses stay reserved, and mapping a
 * new one there makes them usable again. PyTorch's expandable segments are built so.
 *
 * What. A VMM allocation is one reserved range of a multiple of the granularity (the
 * driver's recommended allocation granularity: 2 MiB on current GPUs), aligned to it,
 * with one physical allocation of one granule mapped at each granule, so that any
 * granule goes and comes back alone. Each allocation has a record of its handles, one
 * per granule (0 where the granule's memory has been given back); the records are kept
 * in an array sorted by base, so decommit and recommit find the allocation holding a
 * range by binary search, and mem_free tells a VMM allocation from a cudaMalloc one.
 *
 * Entry points. plume must not link libcuda (a build with CUDA must still start where
 * no driver is installed, on the host backend), so the driver's calls are looked up
 * once per process through the runtime (cudaGetDriverEntryPointByVersion; before CUDA
 * 12.5, cudaGetDriverEntryPoint), with cudaTypedefs.h's types for the ABI of CUDA
 * 10.2, where they appeared. Where one is missing (no driver, a driver older than
 * 10.2, an error) or the device gives no granularity, plm__cuda_vmm_open gives no VMM
 * and says why: the backend then makes every allocation with cudaMalloc and gives no
 * pages back.
 *
 * Limits. The memory can be read and written by the context's device only (another
 * device would need cuMemSetAccess of its own: plume shares no device memory between
 * devices), and it cannot be shared with another process through CUDA IPC.
 *
 * Contexts: the driver's calls act on the calling thread's current context, so each
 * call makes the device's primary context current first (cudaSetDevice, which since
 * CUDA 12 makes it current at once) and gives the caller its device back.
 *
 * Thread safety: every call may come from any thread. Calls on one allocation must not
 * overlap (the pool makes them under its slow-path lock; plm_device_alloc's memory is
 * freed once). Nothing here waits for the device: the caller makes sure no work uses
 * memory it frees or decommits (cuMemUnmap does not wait for it on every driver).
 */
#ifndef PLUME_STREAMS_CUDA_VMM_H
#define PLUME_STREAMS_CUDA_VMM_H

#include <stdbool.h>
#include <stddef.h>

#include "plume/status.h"

typedef struct plm__cuda_vmm plm__cuda_vmm;

/* The VMM of `device` in *out; NULL in *out, with the reason in *why (a static string),
 * when the driver's calls are not available: the caller then uses cudaMalloc. Fails
 * only for lack of host memory (PLM_ERR_OUT_OF_MEMORY). */
plm_status plm__cuda_vmm_open(int device, plm__cuda_vmm **out, const char **why);

/* Give back every allocation still held, and the record. */
void plm__cuda_vmm_close(plm__cuda_vmm *vmm);

/* The granularity: a power of two. An allocation of `bytes` holds bytes rounded up to
 * it, starts on a multiple of it, and is given back in units of it. */
size_t plm__cuda_vmm_granularity(const plm__cuda_vmm *vmm);

/* Reserve, map and make accessible `bytes` (rounded up to the granularity). Errors:
 * PLM_ERR_OUT_OF_MEMORY when the device (or the host, for the record) has no memory
 * left, PLM_ERR_BACKEND for any other failure of the driver (named); nothing is held
 * after a failure. */
plm_status plm__cuda_vmm_alloc(plm__cuda_vmm *vmm, size_t bytes, void **ptr);

/* Whether ptr is the base of one of this VMM's allocations. */
bool plm__cuda_vmm_owns(plm__cuda_vmm *vmm, const void *ptr);

/* Unmap and release the memory of the allocation at ptr (an owned base), and free its
 * addresses. A failure is reported, and what could be given back is. */
plm_status plm__cuda_vmm_free(plm__cuda_vmm *vmm, void *ptr);

/* Give back the memory of the granules wholly inside [ptr, ptr + bytes), a range inside
 * one allocation whose granules are mapped; the addresses stay reserved, and reading or
 * writing them is an error until they are recommitted. PLM_ERR_INVALID_ARG when the
 * range is in no allocation or a granule in it is not mapped. On a failure of the
 * driver the granules this call had given back are mapped again where the driver
 * allows, so that the range stays usable (contents undefined). */
plm_status plm__cuda_vmm_decommit(plm__cuda_vmm *vmm, void *ptr, size_t bytes);

/* Map new memory at the granules wholly inside [ptr, ptr + bytes), none of which may be
 * mapped, and make it readable and writable by the device; its contents are undefined.
 * Errors as plm__cuda_vmm_alloc's, and PLM_ERR_INVALID_ARG as decommit's; after a
 * failure the range is as it was (given back). */
plm_status plm__cuda_vmm_recommit(plm__cuda_vmm *vmm, void *ptr, size_t bytes);

#endif /* PLUME_STREAMS_CUDA_VMM_H */

/* streams/cuda_vmm.c: device memory on the driver's virtual memory calls
 * (streams/cuda_vmm.h). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include "streams/cuda_vmm.h"
#include "streams/error.h"

/* ---- the driver's calls, looked up once per process ------------------------------- */

typedef struct driver_calls {
  PFN_cuMemGetAllocationGranularity_v10020 granularity;
  PFN_cuMemAddressReserve_v10020 reserve;
  PFN_cuMemAddressFree_v10020 address_free;
  PFN_cuMemCreate_v10020 create;
  PFN_cuMemRelease_v10020 release;
  PFN_cuMemMap_v10020 map;
  PFN_cuMemUnmap_v10020 unmap;
  PFN_cuMemSetAccess_v10020 set_access;
  PFN_cuGetErrorName_v6000 error_name; /* optional: it names errors in messages */
  const char *missing;                 /* why the calls cannot be used; NULL: they can */
} driver_calls;

static driver_calls driver;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

/* The ABI asked for: the calls as CUDA 12.0 has them, unchanged since 10.2. */
enum { ENTRY_POINT_VERSION = 12000 };

static void *entry_point(const char *symbol) {
  void *function = NULL;
  enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  cudaError_t err = cudaGetDriverEntryPointByVersion(symbol, &function, ENTRY_POINT_VERSION,
                                                     cudaEnableDefault, &found);
#elif CUDART_VERSION >= 12000
  cudaError_t err = cudaGetDriverEntryPoint(symbol, &function, cudaEnableDefault, &found);
#else
  cudaError_t err = cudaGetDriverEntryPoint(symbol, &function, cudaEnableDefault);
  found = function ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
#endif
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return NULL;
  }
  return found == cudaDriverEntryPointSuccess ? function : NULL;
}

static void look_up_driver(void) {
  driver.granularity =
      (PFN_cuMemGetAllocationGranularity_v10020)entry_point("cuMemGetAllocationGranularity");
  driver.reserve = (PFN_cuMemAddressReserve_v10020)entry_point("cuMemAddressReserve");
  driver.address_free = (PFN_cuMemAddressFree_v10020)entry_point("cuMemAddressFree");
  driver.create = (PFN_cuMemCreate_v10020)entry_point("cuMemCreate");
  driver.release = (PFN_cuMemRelease_v10020)entry_point("cuMemRelease");
  driver.map = (PFN_cuMemMap_v10020)entry_point("cuMemMap");
  driver.unmap = (PFN_cuMemUnmap_v10020)entry_point("cuMemUnmap");
  driver.set_access = (PFN_cuMemSetAccess_v10020)entry_point("cuMemSetAccess");
  driver.error_name = (PFN_cuGetErrorName_v6000)entry_point("cuGetErrorName");
  if (!driver.granularity || !driver.reserve || !driver.address_free || !driver.create ||
      !driver.release || !driver.map || !driver.unmap || !driver.set_access)
    driver.missing =
        "the driver's virtual memory calls are not available (no driver, or one "
        "older than CUDA 10.2)";
}

/* ---- records -------------------------------------------------------------------------- */

/* One allocation: its range and a physical allocation's handle per granule (0: given
 * back). */
typedef struct vmm_allocation {
  uintptr_t base;
  size_t bytes; /* a multiple of the granularity */
  CUmemGenericAllocationHandle handles[];
} vmm_allocation;

struct plm__cuda_vmm {
  int device;
  size_t granularity;
  pthread_mutex_t lock;         /* guards the array below (not the records' handles) */
  vmm_allocation **allocations; /* sorted by base */
  size_t count, capacity;
};

/* The index of the first allocation whose base is above addr. `lock` held. */
static size_t upper_bound(const plm__cuda_vmm *vmm, uintptr_t addr) {
  size_t low = 0, high = vmm->count;
  while (low < high) {
    size_t mid = low + (high - low) / 2;
    if (vmm->allocations[mid]->base <= addr)
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

/* The allocation holding all of [addr, addr + bytes), or NULL. */
static vmm_allocation *allocation_holding(plm__cuda_vmm *vmm, uintptr_t addr, size_t bytes) {
  pthread_mutex_lock(&vmm->lock);
  size_t i = upper_bound(vmm, addr);
  vmm_allocation *found = i > 0 ? vmm->allocations[i - 1] : NULL;
  if (found && (addr - found->base > found->bytes || bytes > found->bytes - (addr - found->base)))
    found = NULL;
  pthread_mutex_unlock(&vmm->lock);
  return found;
}

static bool list_allocation(plm__cuda_vmm *vmm, vmm_allocation *allocation) {
  pthread_mutex_lock(&vmm->lock);
  bool listed = true;
  if (vmm->count == vmm->capacity) {
    size_t capacity = vmm->capacity ? 2 * vmm->capacity : 16;
    vmm_allocation **grown = realloc(vmm->allocations, capacity * sizeof *grown);
    if (grown) {
      vmm->allocations = grown;
      vmm->capacity = capacity;
    } else {
      listed = false;
    }
  }
  if (listed) {
    size_t i = upper_bound(vmm, allocation->base);
    memmove(&vmm->allocations[i + 1], &vmm->allocations[i],
            (vmm->count - i) * sizeof *vmm->allocations);
    vmm->allocations[i] = allocation;
    vmm->count++;
  }
  pthread_mutex_unlock(&vmm->lock);
  return listed;
}

/* Take the allocation based at ptr out of the array; NULL when there is none. */
static vmm_allocation *unlist_allocation(plm__cuda_vmm *vmm, uintptr_t base) {
  pthread_mutex_lock(&vmm->lock);
  size_t i = upper_bound(vmm, base);
  vmm_allocation *found =
      i > 0 && vmm->allocations[i - 1]->base == base ? vmm->allocations[i - 1] : NULL;
  if (found) {
    memmove(&vmm->allocations[i - 1], &vmm->allocations[i],
            (vmm->count - i) * sizeof *vmm->allocations);
    vmm->count--;
  }
  pthread_mutex_unlock(&vmm->lock);
  return found;
}

/* ---- the driver's calls, made on the device ---------------------------------------------- */

/* A failed driver call, named with the driver's name for its error where it has one. */
static plm_status driver_fail(CUresult result, const char *call) {
  const char *name = NULL;
  if (!driver.error_name || driver.error_name(result, &name) != CUDA_SUCCESS) name = NULL;
  plm_status status = result == CUDA_ERROR_OUT_OF_MEMORY ? PLM_ERR_OUT_OF_MEMORY : PLM_ERR_BACKEND;
  if (name) return plm__fail_raw(status, "%s failed: %s", call, name);
  return plm__fail_raw(status, "%s failed: CUresult %d", call, (int)result);
}

/* Make the device's primary context current (see the header); *previous receives the
 * caller's device. */
static plm_status enter(const plm__cuda_vmm *vmm, int *previous) {
  *previous = vmm->device;
  cudaError_t err = cudaGetDevice(previous);
  if (err == cudaSuccess) err = cudaSetDevice(vmm->device);
  if (err == cudaSuccess) return PLM_OK;
  (void)cudaGetLastError();
  return plm__fail_raw(PLM_ERR_BACKEND, "cudaSetDevice(%d) failed: %s", vmm->device,
                       cudaGetErrorName(err));
}

static void leave(const plm__cuda_vmm *vmm, int previous) {
  if (previous != vmm->device && cudaSetDevice(previous) != cudaSuccess) (void)cudaGetLastError();
}

static CUmemAllocationProp allocation_prop(const plm__cuda_vmm *vmm) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = vmm->device;
  return prop;
}

/* Give back the granules [first, end) of an allocation that are mapped. The first
 * failure is reported; the granules after it are still tried. */
static plm_status unmap_granules(const plm__cuda_vmm *vmm, vmm_allocation *allocation, size_t first,
                                 size_t end) {
  plm_status status = PLM_OK;
  for (size_t g = first; g < end; g++) {
    if (!allocation->handles[g]) continue;
    CUresult result =
        driver.unmap((CUdeviceptr)(allocation->base + g * vmm->granularity), vmm->granularity);
    if (result != CUDA_SUCCESS) {
      if (status == PLM_OK) status = driver_fail(result, "cuMemUnmap");
      continue;
    }
    result = driver.release(allocation->handles[g]);
    allocation->handles[g] = 0;
    if (result != CUDA_SUCCESS && status == PLM_OK) status = driver_fail(result, "cuMemRelease");
  }
  return status;
}

/* Map new memory at the granules [first, end) of an allocation (none mapped) and make it
 * accessible; on a failure, what this call mapped is given back. */
static plm_status map_granules(const plm__cuda_vmm *vmm, vmm_allocation *allocation, size_t first,
                               size_t end) {
  const CUmemAllocationProp prop = allocation_prop(vmm);
  plm_status status = PLM_OK;
  size_t g = first;
  for (; g < end && status == PLM_OK; g++) {
    CUmemGenericAllocationHandle handle = 0;
    CUresult result = driver.create(&handle, vmm->granularity, &prop, 0);
    if (result != CUDA_SUCCESS) {
      status = driver_fail(result, "cuMemCreate");
      break;
    }
    result = driver.map((CUdeviceptr)(allocation->base + g * vmm->granularity), vmm->granularity, 0,
                        handle, 0);
    if (result != CUDA_SUCCESS) {
      status = driver_fail(result, "cuMemMap");
      driver.release(handle);
      break;
    }
    allocation->handles[g] = handle;
  }
  if (status == PLM_OK) {
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = vmm->device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult result = driver.set_access((CUdeviceptr)(allocation->base + first * vmm->granularity),
                                        (end - first) * vmm->granularity, &access, 1);
    if (result != CUDA_SUCCESS) status = driver_fail(result, "cuMemSetAccess");
  }
  if (status != PLM_OK) unmap_granules(vmm, allocation, first, end);
  return status;
}

/* The granules wholly inside [ptr, ptr + bytes) of the allocation holding the range:
 * [*first, *end); NULL (message set) when no allocation holds it. */
static vmm_allocation *granules_of(plm__cuda_vmm *vmm, void *ptr, size_t bytes, size_t *first,
                                   size_t *end) {
  vmm_allocation *allocation = allocation_holding(vmm, (uintptr_t)ptr, bytes);
  if (!allocation) {
    plm__fail_raw(PLM_ERR_INVALID_ARG, "[%p, +%zu) is in no VMM allocation", ptr, bytes);
    return NULL;
  }
  const size_t offset = (uintptr_t)ptr - allocation->base;
  *first = (offset + vmm->granularity - 1) / vmm->granularity;
  *end = (offset + bytes) / vmm->granularity;
  if (*end < *first) *end = *first;
  return allocation;
}

/* ---- the interface ------------------------------------------------------------------------- */

plm_status plm__cuda_vmm_open(int device, plm__cuda_vmm **out, const char **why) {
  *out = NULL;
  *why = "";
  pthread_once(&driver_once, look_up_driver);
  if (driver.missing) {
    *why = driver.missing;
    return PLM_OK;
  }
  plm__cuda_vmm *vmm = calloc(1, sizeof *vmm);
  if (!vmm) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the VMM's records");
  vmm->device = device;
  int previous = 0;
  plm_status status = enter(vmm, &previous);
  size_t granularity = 0;
  if (status == PLM_OK) {
    const CUmemAllocationProp prop = allocation_prop(vmm);
    if (driver.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) !=
        CUDA_SUCCESS)
      granularity = 0;
    leave(vmm, previous);
  }
  if (granularity == 0 || (granularity & (granularity - 1)) != 0) {
    free(vmm);
    *why = "the device gives no allocation granularity for the driver's virtual memory calls";
    return PLM_OK;
  }
  vmm->granularity = granularity;
  pthread_mutex_init(&vmm->lock, NULL);
  *out = vmm;
  return PLM_OK;
}

void plm__cuda_vmm_close(plm__cuda_vmm *vmm) {
  if (!vmm) return;
  while (vmm->count > 0) plm__cuda_vmm_free(vmm, (void *)vmm->allocations[vmm->count - 1]->base);
  free(vmm->allocations);
  pthread_mutex_destroy(&vmm->lock);
  free(vmm);
}

size_t plm__cuda_vmm_granularity(const plm__cuda_vmm *vmm) {
  return vmm->granularity;
}

plm_status plm__cuda_vmm_alloc(plm__cuda_vmm *vmm, size_t bytes, void **ptr) {
  if (bytes > SIZE_MAX - vmm->granularity)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "%zu bytes is more than any device holds", bytes);
  const size_t granules = (bytes + vmm->granularity - 1) / vmm->granularity;
  vmm_allocation *allocation =
      calloc(1, sizeof *allocation + granules * sizeof allocation->handles[0]);
  if (!allocation)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a VMM allocation's record");
  allocation->bytes = granules * vmm->granularity;
  int previous = 0;
  plm_status status = enter(vmm, &previous);
  if (status != PLM_OK) {
    free(allocation);
    return status;
  }
  CUdeviceptr base = 0;
  CUresult result = driver.reserve(&base, allocation->bytes, vmm->granularity, 0, 0);
  if (result != CUDA_SUCCESS) {
    status = driver_fail(result, "cuMemAddressReserve");
  } else {
    allocation->base = (uintptr_t)base;
    status = map_granules(vmm, allocation, 0, granules);
    if (status == PLM_OK && !list_allocation(vmm, allocation)) {
      unmap_granules(vmm, allocation, 0, granules);
      status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory to list a VMM allocation");
    }
    if (status != PLM_OK) driver.address_free(base, allocation->bytes);
  }
  leave(vmm, previous);
  if (status != PLM_OK) {
    free(allocation);
    return status;
  }
  *ptr = (void *)allocation->base;
  return PLM_OK;
}

bool plm__cuda_vmm_owns(plm__cuda_vmm *vmm, const void *ptr) {
  pthread_mutex_lock(&vmm->lock);
  size_t i = upper_bound(vmm, (uintptr_t)ptr);
  bool owned = i > 0 && vmm->allocations[i - 1]->base == (uintptr_t)ptr;
  pthread_mutex_unlock(&vmm->lock);
  return owned;
}

plm_status plm__cuda_vmm_free(plm__cuda_vmm *vmm, void *ptr) {
  vmm_allocation *allocation = unlist_allocation(vmm, (uintptr_t)ptr);
  if (!allocation) return plm__fail_raw(PLM_ERR_INVALID_ARG, "%p is no VMM allocation", ptr);
  int previous = 0;
  plm_status status = enter(vmm, &previous);
  if (status == PLM_OK) {
    status = unmap_granules(vmm, allocation, 0, allocation->bytes / vmm->granularity);
    CUresult result = driver.address_free((CUdeviceptr)allocation->base, allocation->bytes);
    if (result != CUDA_SUCCESS && status == PLM_OK)
      status = driver_fail(result, "cuMemAddressFree");
    leave(vmm, previous);
  }
  free(allocation);
  return status;
}

plm_status plm__cuda_vmm_decommit(plm__cuda_vmm *vmm, void *ptr, size_t bytes) {
  size_t first = 0, end = 0;
  vmm_allocation *allocation = granules_of(vmm, ptr, bytes, &first, &end);
  if (!allocation) return PLM_ERR_INVALID_ARG;
  for (size_t g = first; g < end; g++)
    if (!allocation->handles[g])
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "granule %zu of the VMM allocation at %p is "
                           "given back already",
                           g, (void *)allocation->base);
  int previous = 0;
  plm_status status = enter(vmm, &previous);
  if (status != PLM_OK) return status;
  status = unmap_granules(vmm, allocation, first, end);
  if (status != PLM_OK) {
    /* Keep the range usable: map memory again where the unmapping went through. */
    char reason[256];
    snprintf(reason, sizeof reason, "%s", plm_last_error());
    for (size_t g = first; g < end; g++)
      if (!allocation->handles[g]) (void)map_granules(vmm, allocation, g, g + 1);
    status = plm__fail_raw(status, "%s", reason);
  }
  leave(vmm, previous);
  return status;
}

plm_status plm__cuda_vmm_recommit(plm__cuda_vmm *vmm, void *ptr, size_t bytes) {
  size_t first = 0, end = 0;
  vmm_allocation *allocation = granules_of(vmm, ptr, bytes, &first, &end);
  if (!allocation) return PLM_ERR_INVALID_ARG;
  for (size_t g = first; g < end; g++)
    if (allocation->handles[g])
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "granule %zu of the VMM allocation at %p is "
                           "mapped already",
                           g, (void *)allocation->base);
  if (first == end) return PLM_OK;
  int previous = 0;
  plm_status status = enter(vmm, &previous);
  if (status != PLM_OK) return status;
  status = map_granules(vmm, allocation, first, end);
  leave(vmm, previous);
  return status;
}

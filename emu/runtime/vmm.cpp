/* emu/runtime/vmm.cpp: the driver's virtual memory calls, reached as a program that
 * must not link libcuda reaches them: through cudaGetDriverEntryPoint and
 * cudaGetDriverEntryPointByVersion.
 *
 * Contract (CUDA Driver API, "Virtual Memory Management", with cuda.h's types and
 * CUresult errors): the granularity is 2 MiB (minimum and recommended);
 * cuMemAddressReserve reserves an address range (mmap PROT_NONE) aligned to the
 * granularity or to `alignment`, and cuMemAddressFree frees exactly a reservation
 * with no mapping left in it; cuMemCreate makes physical memory (a memfd, filled with
 * 0xCD) of a multiple of the granularity, and cuMemRelease releases its handle, which
 * is allowed while it is mapped (the memory goes with its last mapping); cuMemMap maps
 * a handle at offset 0 into a part of one reservation that is not mapped, inaccessible
 * until cuMemSetAccess grants read or read-write access (mprotect) over mapped memory;
 * cuMemUnmap takes whole mappings only, waits for the device's work (it is
 * synchronous), and turns the range back into a reservation. Sizes, addresses and
 * offsets must be multiples of the granularity; every misuse is
 * CUDA_ERROR_INVALID_VALUE (an unknown device CUDA_ERROR_INVALID_DEVICE, no memory
 * CUDA_ERROR_OUT_OF_MEMORY). Mapped ranges are device memory for copies and are
 * registered with check/ (region_add), so kernels' and copies' accesses are checked.
 * Unknown symbols give a NULL function and cudaDriverEntryPointSymbolNotFound.
 * Thread-safe. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "emu/runtime/runtime.h"

namespace plm_emu {

namespace {

constexpr size_t kGranularity = 2u << 20;

struct physical {
  int fd = -1;
  size_t bytes = 0;
  int device = 0;
  bool released = false;
  int mappings = 0;
};

struct mapping {
  size_t bytes = 0;
  CUmemGenericAllocationHandle handle = 0;
  unsigned long long access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
};

struct vmm_state {
  std::mutex lock;
  std::map<uintptr_t, size_t> reservations;
  std::map<uintptr_t, mapping> mappings;
  std::map<CUmemGenericAllocationHandle, physical> handles;
  CUmemGenericAllocationHandle next_handle = 1;
};

/* Fill the memfd's first `size` bytes with 0xCD, so that undefined contents show. Written
 * through the file, not through a mapping: a memset of a fresh mapping faults in every
 * page, which on a virtual machine with shadow page tables measured 23 ms per 2 MiB
 * granule where these writes took 1-2 ms. */
bool fill_undefined(int fd, size_t size) {
  static const auto pattern = [] {
    std::array<unsigned char, 64 * 1024> bytes;
    bytes.fill(0xCD);
    return bytes;
  }();
  for (size_t done = 0; done < size;) {
    const size_t part = std::min(pattern.size(), size - done);
    const ssize_t wrote = pwrite(fd, pattern.data(), part, (off_t)done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    done += (size_t)wrote;
  }
  return true;
}

vmm_state &vmm() {
  static auto *state = new vmm_state;
  return *state;
}

bool aligned(size_t value) { return value % kGranularity == 0; }

/* The reservation holding all of [ptr, ptr + size), or end(). */
std::map<uintptr_t, size_t>::iterator reservation_of(vmm_state &s, uintptr_t ptr, size_t size) {
  auto it = s.reservations.upper_bound(ptr);
  if (it == s.reservations.begin()) return s.reservations.end();
  --it;
  return ptr + size <= it->first + it->second ? it : s.reservations.end();
}

/* The mappings tiling [ptr, ptr + size) exactly, or an empty list when they do not. */
std::vector<std::map<uintptr_t, mapping>::iterator> tiling(vmm_state &s, uintptr_t ptr, size_t size) {
  std::vector<std::map<uintptr_t, mapping>::iterator> out;
  uintptr_t at = ptr;
  auto it = s.mappings.find(ptr);
  while (it != s.mappings.end() && it->first == at && at < ptr + size) {
    out.push_back(it);
    at += it->second.bytes;
    ++it;
  }
  if (at != ptr + size) out.clear();
  return out;
}

void destroy_physical(vmm_state &s, CUmemGenericAllocationHandle handle) {
  physical &memory = s.handles[handle];
  close(memory.fd);
  device_memory_give(memory.device, memory.bytes);
  s.handles.erase(handle);
}

CUresult refuse_in_host_function() { return in_host_function() ? CUDA_ERROR_NOT_PERMITTED : CUDA_SUCCESS; }

CUresult CUDAAPI emu_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                   CUmemAllocationGranularity_flags option) {
  if (CUresult err = refuse_in_host_function()) return err;
  if (!granularity || !prop || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(prop->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI emu_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                         unsigned long long flags) {
  (void)addr; /* a hint, which the emulator does not follow */
  if (CUresult err = refuse_in_host_function()) return err;
  if (!ptr || size == 0 || !aligned(size) || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (alignment == 0) alignment = kGranularity;
  if (alignment & (alignment - 1) || !aligned(alignment)) return CUDA_ERROR_INVALID_VALUE;
  void *raw = mmap(nullptr, size + alignment, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const uintptr_t start = ((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1);
  if (start > (uintptr_t)raw) munmap(raw, start - (uintptr_t)raw);
  const uintptr_t end = (uintptr_t)raw + size + alignment;
  if (end > start + size) munmap((void *)(start + size), end - (start + size));
  vmm_state &s = vmm();
  std::lock_guard<std::mutex> hold(s.lock);
  s.reservations[start] = size;
  *ptr = (CUdeviceptr)start;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI emu_cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  if (CUresult err = refuse_in_host_function()) return err;
  vmm_state &s = vmm();
  std::lock_guard<std::mutex> hold(s.lock);
  auto it = s.reservations.find((uintptr_t)ptr);
  if (it == s.reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  auto inside = s.mappings.lower_bound((uintptr_t)ptr);
  if (inside != s.mappings.end() && inside->first < (uintptr_t)ptr + size) return CUDA_ERROR_INVALID_VALUE;
  munmap((void *)ptr, size);
  s.reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI emu_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                                 unsigned long long flags) {
  if (CUresult err = refuse_in_host_function()) return err;
  if (!handle || !prop || flags != 0 || size == 0 || !aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(prop->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  if (!device_memory_take(prop->location.id, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  const int fd = memfd_create("plume-emu cuMemCreate", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)size) != 0 || !fill_undefined(fd, size)) {
    if (fd >= 0) close(fd);
    device_memory_give(prop->location.id, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  vmm_state &s = vmm();
  std::lock_guard<std::mutex> hold(s.lock);
  physical memory;
  memory.fd = fd;
  memory.bytes = size;
  memory.device = prop->location.id;
  *handle = s.next_handle++;
  s.handles[*handle] = memory;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI emu_cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (CUresult err = refuse_in_host_function()) return err;
  vmm_state &s = vmm();
  std::lock_guard<std::mutex> hold(s.lock);
  auto it = s.handles.find(handle);
  if (it == s.handles.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
  it->second.released = true;
  if (it->second.mappings == 0) destroy_physical(s, handle);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI emu_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                              unsigned long long flags) {
  if (CUresult err = refuse_in_host_function()) return err;
  if (!ptr || size == 0 || !aligned((size_t)ptr) || !aligned(size) || offset != 0 || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  vmm_state &s = vmm();
  int device = 0;
  {
    std::lock_guard<std::mutex> hold(s.lock);
    auto memory = s.handles.find(handle);
    if (memory == s.handles.end() || memory->second.released || size > memory->second.bytes)
      return CUDA_ERROR_INVALID_VALUE;
    if (reservation_of(s, (uintptr_t)ptr, size) == s.reservations.end()) return CUDA_ERROR_INVALID_VALUE;
    auto after = s.mappings.lower_bound((uintptr_t)ptr);
    if (after != s.mappings.end() && after->first < (uintptr_t)ptr + size) return CUDA_ERROR_INVALID_VALUE;
    if (after != s.mappings.begin()) {
      auto before = std::prev(after);
      if (before->first + before->second.bytes > (uintptr_t)ptr) return CUDA_ERROR_INVALID_VALUE;
    }
    if (mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, memory->second.fd, 0) == MAP_FAILED)
      return CUDA_ERROR_OUT_OF_MEMORY;
    memory->second.mappings++;
    device = memory->second.device;
    mapping entry;
    entry.bytes = size;
    entry.handle = handle;
    s.mappings[(uintptr_t)ptr] = entry;
  }
  memory_register((void *)ptr, size, memory_kind::mapped, device);
  region_add((void *)ptr, size, "cuMemMap of " + std::to_string(size) + " bytes");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI emu_cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (CUresult err = refuse_in_host_function()) return err;
  vmm_state &s = vmm();
  int device = -1;
  {
    std::lock_guard<std::mutex> hold(s.lock);
    auto parts = tiling(s, (uintptr_t)ptr, size);
    if (!ptr || size == 0 || parts.empty()) return CUDA_ERROR_INVALID_VALUE;
    device = s.handles[parts[0]->second.handle].device;
  }
  wait_device_idle(device); /* cuMemUnmap is synchronous */
  std::lock_guard<std::mutex> hold(s.lock);
  auto parts = tiling(s, (uintptr_t)ptr, size);
  if (parts.empty()) return CUDA_ERROR_INVALID_VALUE;
  for (auto part : parts) {
    void *base = (void *)part->first;
    const size_t bytes = part->second.bytes;
    region_remove(base);
    memory_unregister(base);
    mmap(base, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    physical &memory = s.handles[part->second.handle];
    if (--memory.mappings == 0 && memory.released) destroy_physical(s, part->second.handle);
    s.mappings.erase(part);
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI emu_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  if (CUresult err = refuse_in_host_function()) return err;
  if (!ptr || size == 0 || !desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
  vmm_state &s = vmm();
  std::lock_guard<std::mutex> hold(s.lock);
  auto parts = tiling(s, (uintptr_t)ptr, size);
  if (parts.empty()) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; i++) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(desc[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
    if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
  }
  for (auto part : parts) {
    const int owner = s.handles[part->second.handle].device;
    for (size_t i = 0; i < count; i++) {
      if (desc[i].location.id != owner) continue;
      const int prot = desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
                       : desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ   ? PROT_READ
                                                                          : PROT_NONE;
      if (mprotect((void *)part->first, part->second.bytes, prot) != 0) return CUDA_ERROR_INVALID_VALUE;
      part->second.access = desc[i].flags;
    }
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI emu_cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr) {
  if (CUresult err = refuse_in_host_function()) return err;
  if (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(location->id)) return CUDA_ERROR_INVALID_DEVICE;
  vmm_state &s = vmm();
  std::lock_guard<std::mutex> hold(s.lock);
  auto it = s.mappings.upper_bound((uintptr_t)ptr);
  if (it == s.mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if ((uintptr_t)ptr >= it->first + it->second.bytes) return CUDA_ERROR_INVALID_VALUE;
  *flags = s.handles[it->second.handle].device == location->id ? it->second.access
                                                               : (unsigned long long)CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}

/* The driver entry points the emulator has, checked against cudaTypedefs.h's types. */
struct entry_point {
  const char *symbol;
  void *function;
  unsigned since; /* the CUDA version that introduced it */
};

PFN_cuMemGetAllocationGranularity_v10020 check_granularity = emu_cuMemGetAllocationGranularity;
PFN_cuMemAddressReserve_v10020 check_reserve = emu_cuMemAddressReserve;
PFN_cuMemAddressFree_v10020 check_address_free = emu_cuMemAddressFree;
PFN_cuMemCreate_v10020 check_create = emu_cuMemCreate;
PFN_cuMemRelease_v10020 check_release = emu_cuMemRelease;
PFN_cuMemMap_v10020 check_map = emu_cuMemMap;
PFN_cuMemUnmap_v10020 check_unmap = emu_cuMemUnmap;
PFN_cuMemSetAccess_v10020 check_set_access = emu_cuMemSetAccess;
PFN_cuMemGetAccess_v10020 check_get_access = emu_cuMemGetAccess;

const entry_point entry_points[] = {
    {"cuMemGetAllocationGranularity", (void *)check_granularity, 10020},
    {"cuMemAddressReserve", (void *)check_reserve, 10020},
    {"cuMemAddressFree", (void *)check_address_free, 10020},
    {"cuMemCreate", (void *)check_create, 10020},
    {"cuMemRelease", (void *)check_release, 10020},
    {"cuMemMap", (void *)check_map, 10020},
    {"cuMemUnmap", (void *)check_unmap, 10020},
    {"cuMemSetAccess", (void *)check_set_access, 10020},
    {"cuMemGetAccess", (void *)check_get_access, 10020},
};

cudaError_t entry_point_lookup(const char *symbol, void **funcPtr, unsigned version, unsigned long long flags,
                               cudaDriverEntryPointQueryResult *status) {
  if (!symbol || !funcPtr) return cudaErrorInvalidValue;
  if (flags != cudaEnableDefault && flags != cudaEnableLegacyStream && flags != cudaEnablePerThreadDefaultStream)
    return cudaErrorInvalidValue;
  *funcPtr = nullptr;
  for (const entry_point &entry : entry_points) {
    if (std::strcmp(entry.symbol, symbol) != 0) continue;
    if (version < entry.since) {
      if (status) *status = cudaDriverEntryPointVersionNotSufficent;
      return cudaSuccess;
    }
    *funcPtr = entry.function;
    if (status) *status = cudaDriverEntryPointSuccess;
    return cudaSuccess;
  }
  if (status) *status = cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}

}  // namespace

}  // namespace plm_emu

using namespace plm_emu;

extern "C" {

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    cudaDriverEntryPointQueryResult *driverStatus) {
  EMU_ENTER();
  EMU_TRY(entry_point_lookup(symbol, funcPtr, CUDART_VERSION, flags, driverStatus));
  return cudaSuccess;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags, cudaDriverEntryPointQueryResult *driverStatus) {
  EMU_ENTER();
  EMU_TRY(entry_point_lookup(symbol, funcPtr, cudaVersion, flags, driverStatus));
  return cudaSuccess;
}

}  // extern "C"

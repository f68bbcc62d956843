/* emu/runtime/memory.cpp: device and pinned host memory, the registry of both, copies
 * and memsets (synchronous and asynchronous), symbols, pointer attributes and the
 * device's memory information.
 *
 * Contract (CUDA Runtime API, "Memory Management" and "API synchronization
 * behavior"):
 *   - cudaMalloc gives heap memory, 256-byte aligned, filled with 0xCD (so reading
 *     memory never written shows), registered with check/ (region_add); cudaFree waits
 *     for the device's work (that of streams not capturing), as a GPU's does, then poisons the memory and holds it in
 *     a quarantine before giving it back to the heap, so a late access is reported and
 *     a copy touching it is refused (cudaErrorInvalidValue);
 *   - cudaHostAlloc/cudaMallocHost give pinned memory, cudaHostRegister pins a range
 *     (cudaErrorHostMemoryAlreadyRegistered when part of it is pinned already),
 *     cudaHostUnregister takes a registered base (else
 *     cudaErrorHostMemoryNotRegistered); other host memory is pageable;
 *   - a copy's cudaMemcpyKind must agree with where its pointers are
 *     (cudaErrorInvalidValue otherwise; cudaMemcpyDefault infers it), a kind outside
 *     the enumeration is cudaErrorInvalidMemcpyDirection, and a range that runs past
 *     the end of a device allocation (or of mappings side by side), or touches freed
 *     device memory, is refused (host memory is pinned where pinned ranges cover all of
 *     it, else pageable);
 *   - cudaMemcpyAsync from pageable memory to the device stages the source at the
 *     call and returns (the source may be overwritten at once); to pageable memory it
 *     returns when the copy has finished; between host buffers it is synchronous; all
 *     others return at once. In a capture a copy touching pageable memory fails with
 *     cudaErrorStreamCaptureUnsupported and invalidates the capture;
 *   - cudaMemcpy runs on the legacy stream: from pageable memory to the device it
 *     waits for the stream's earlier work and returns once the source is staged; from
 *     pinned memory to the device, to host memory, and between host buffers it returns
 *     when done; between device buffers it returns at once. cudaMemcpyToSymbol and
 *     cudaMemcpyFromSymbol behave as cudaMemcpy to or from the symbol's address;
 *   - cudaMemset returns at once (but waits when it sets pinned host memory);
 *     cudaMemsetAsync always returns at once; both refuse pageable memory;
 *   - a copy or memset, when it runs, is recorded with check/ (record_access) as
 *     reads of its source and writes of its destination.
 * Thread-safe. */
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "emu/runtime/runtime.h"

namespace plm_emu {


namespace {

struct memory_range {
  size_t bytes = 0;
  memory_kind kind = memory_kind::device;
  int device = 0;
};

/* Freed device memory held back before the heap gets it again. */
struct quarantined {
  size_t bytes = 0;
  std::function<void()> release;
};

constexpr size_t kQuarantineBytes = 64u << 20;
constexpr size_t kQuarantineRanges = 256;

struct memory_registry {
  std::mutex lock;
  std::map<uintptr_t, memory_range> ranges;
  std::map<uintptr_t, quarantined> freed;
  std::deque<uintptr_t> freed_order;
  size_t freed_bytes = 0;
  std::atomic<size_t> used[16] = {};
};

memory_registry &registry() {
  static auto *all = new memory_registry;
  return *all;
}

/* The range of `ranges` holding addr, or end(). */
template <class Map>
typename Map::iterator holding(Map &ranges, uintptr_t addr, size_t (*size)(const typename Map::mapped_type &)) {
  auto it = ranges.upper_bound(addr);
  if (it == ranges.begin()) return ranges.end();
  --it;
  return addr < it->first + size(it->second) ? it : ranges.end();
}

size_t range_size(const memory_range &range) { return range.bytes; }
size_t freed_size(const quarantined &range) { return range.bytes; }

bool is_device_kind(memory_kind kind) {
  return kind == memory_kind::device || kind == memory_kind::pool || kind == memory_kind::mapped;
}

/* What the host can still give: MemAvailable (free memory and what the page cache
 * would give back), else the free pages. */
size_t host_available() {
  if (FILE *meminfo = std::fopen("/proc/meminfo", "r")) {
    char line[128];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, meminfo)) found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    std::fclose(meminfo);
    if (found) return (size_t)kib * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

bool valid_kind(cudaMemcpyKind kind) {
  return kind == cudaMemcpyHostToHost || kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToHost ||
         kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault;
}

bool is_host(memory_class c) { return c == memory_class::pinned || c == memory_class::pageable; }

/* Where a copy's two sides are, checked against its kind. */
cudaError_t check_copy(void *dst, const void *src, size_t count, cudaMemcpyKind kind, memory_class *dst_class,
                       memory_class *src_class) {
  if (!valid_kind(kind)) return cudaErrorInvalidMemcpyDirection;
  if (count == 0) return cudaSuccess;
  if (!dst || !src) return cudaErrorInvalidValue;
  *dst_class = classify(dst, count);
  *src_class = classify(src, count);
  if (*dst_class == memory_class::invalid || *src_class == memory_class::invalid) return cudaErrorInvalidValue;
  const bool dst_device = *dst_class == memory_class::device, src_device = *src_class == memory_class::device;
  switch (kind) {
    case cudaMemcpyHostToHost: return !dst_device && !src_device ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyHostToDevice: return dst_device && !src_device ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToHost: return !dst_device && src_device ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToDevice: return dst_device && src_device ? cudaSuccess : cudaErrorInvalidValue;
    default: return cudaSuccess;
  }
}

const char *copy_name(memory_class dst, memory_class src) {
  const bool d = dst == memory_class::device, s = src == memory_class::device;
  if (s && d) return "copy device to device";
  if (s) return "copy device to host";
  if (d) return "copy host to device";
  return "copy host to host";
}

/* The body of a copy: from a staged source when `staged` holds one. */
op_body copy_body(void *dst, const void *src, size_t count, std::shared_ptr<std::vector<char>> staged) {
  return [dst, src, count, staged](const op_context &op) {
    return run_copy(op, dst, staged ? (const void *)staged->data() : src, count);
  };
}

/* A synchronous copy on the legacy stream, after the API synchronization behavior. */
cudaError_t copy_sync(void *dst, const void *src, size_t count, memory_class dst_class, memory_class src_class) {
  std::shared_ptr<completion> wait_for;
  vclock clock;
  {
    std::lock_guard<std::mutex> hold(api_lock());
    const int device = current_device();
    cudaError_t err = capture_permits(capture_use::legacy, device);
    if (err == cudaSuccess) err = capture_permits(capture_use::unsafe, device);
    if (err != cudaSuccess) return err;
    stream_state &legacy = *legacy_stream(device);
    if (src_class == memory_class::pageable && dst_class == memory_class::device) {
      /* The stream's earlier work first; the copy returns once its source is staged. */
      wait_for = legacy.last;
      clock = legacy.clock;
      auto staged = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + count);
      enqueue(legacy, "cudaMemcpy host to device", copy_body(dst, src, count, staged));
    } else {
      std::shared_ptr<completion> done =
          enqueue(legacy, std::string("cudaMemcpy ") + copy_name(dst_class, src_class), copy_body(dst, src, count, nullptr));
      if (dst_class != memory_class::device || src_class != memory_class::device) {
        wait_for = done;
        clock = legacy.clock;
      }
    }
  }
  if (wait_for || !clock.empty()) host_wait(wait_for, clock);
  return sticky_error(current_device());
}

}  // namespace

/* ---- the registry ------------------------------------------------------------------ */

void memory_register(void *base, size_t bytes, memory_kind kind, int device) {
  memory_registry &r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  memory_range range;
  range.bytes = bytes;
  range.kind = kind;
  range.device = device;
  r.ranges[(uintptr_t)base] = range;
}

void memory_unregister(void *base) {
  memory_registry &r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  r.ranges.erase((uintptr_t)base);
}

static bool find_range(const void *ptr, uintptr_t *base, memory_range *out) {
  memory_registry &r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  auto it = holding(r.ranges, (uintptr_t)ptr, range_size);
  if (it == r.ranges.end()) return false;
  *base = it->first;
  *out = it->second;
  return true;
}

memory_class classify(const void *ptr, size_t bytes, int *device) {
  memory_registry &r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  const uintptr_t first = (uintptr_t)ptr, last = first + (bytes ? bytes - 1 : 0);
  if (last < first) return memory_class::invalid;
  auto in = holding(r.ranges, first, range_size);
  if (in != r.ranges.end() && is_device_kind(in->second.kind)) {
    /* One allocation bounds a copy; mappings (cuMemMap) side by side in an address
     * range are one contiguous buffer to the device, as on a GPU, and a copy may run
     * across them while each is mapped. */
    uintptr_t end = in->first + in->second.bytes;
    for (auto next = std::next(in); last >= end && in->second.kind == memory_kind::mapped &&
                                    next != r.ranges.end() && next->first == end &&
                                    next->second.kind == memory_kind::mapped &&
                                    next->second.device == in->second.device;
         ++next)
      end += next->second.bytes;
    if (last >= end) return memory_class::invalid;
    if (device) *device = in->second.device;
    return memory_class::device;
  }
  /* Host memory: pinned when pinned ranges cover it all (several registrations side by
   * side are one pinned buffer), else pageable; never reaching into device memory, nor
   * into freed device memory. */
  bool pinned = in != r.ranges.end();
  uintptr_t covered = first;
  for (auto it = pinned ? in : r.ranges.upper_bound(first); it != r.ranges.end() && it->first <= last; ++it) {
    if (is_device_kind(it->second.kind)) return memory_class::invalid;
    if (it->first > covered) pinned = false;
    if (it == in && device) *device = it->second.device;
    covered = std::max(covered, (uintptr_t)(it->first + it->second.bytes));
  }
  if (covered <= last) pinned = false;
  if (holding(r.freed, first, freed_size) != r.freed.end()) return memory_class::invalid;
  auto next_freed = r.freed.upper_bound(first);
  if (next_freed != r.freed.end() && next_freed->first <= last) return memory_class::invalid;
  return pinned ? memory_class::pinned : memory_class::pageable;
}

void memory_mark_freed(void *base, size_t bytes) {
  memory_registry &r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  r.freed[(uintptr_t)base] = quarantined{bytes, nullptr};
}

void memory_unmark_freed(void *base) {
  memory_registry &r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  r.freed.erase((uintptr_t)base);
}

void device_quarantine(void *base, size_t bytes, std::function<void()> release) {
  poison(base, bytes);
  std::vector<std::function<void()>> releases;
  {
    memory_registry &r = registry();
    std::lock_guard<std::mutex> hold(r.lock);
    r.freed[(uintptr_t)base] = quarantined{bytes, std::move(release)};
    r.freed_order.push_back((uintptr_t)base);
    r.freed_bytes += bytes;
    while (r.freed_order.size() > kQuarantineRanges || r.freed_bytes > kQuarantineBytes) {
      auto it = r.freed.find(r.freed_order.front());
      r.freed_order.pop_front();
      r.freed_bytes -= it->second.bytes;
      releases.push_back(std::move(it->second.release));
      r.freed.erase(it);
    }
  }
  for (auto &give_back : releases) give_back();
}

bool device_memory_take(int device, size_t bytes) {
  memory_registry &r = registry();
  const size_t total = device_properties(device).totalGlobalMem;
  size_t used = r.used[device].load();
  do {
    if (bytes > total - used || bytes > host_available()) return false;
  } while (!r.used[device].compare_exchange_weak(used, used + bytes));
  return true;
}

void device_memory_give(int device, size_t bytes) { registry().used[device] -= bytes; }

/* Ask for transparent huge pages over the whole 2 MiB pages inside [base, base + bytes),
 * before they are first touched: one fault per 2 MiB instead of 512. On a virtual machine
 * with shadow page tables each 4 KiB fault measured ~25-45 us, and filling a fresh 2 MiB
 * 12.5 ms where with huge pages it took 0.25 ms. Only a hint: where the system gives no
 * huge pages (transparent_hugepage "never") nothing changes. */
static void prefer_huge_pages(char *base, size_t bytes) {
  constexpr uintptr_t kHuge = 2u << 20;
  const uintptr_t first = ((uintptr_t)base + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = ((uintptr_t)base + bytes) & ~(kHuge - 1);
  if (end > first) (void)madvise((void *)first, end - first, MADV_HUGEPAGE);
}

void *device_heap_alloc(size_t bytes) {
  static_assert(kRedZone % 256 == 0, "the red zone keeps the 256-byte alignment");
  void *raw = nullptr;
  if (posix_memalign(&raw, 256, bytes + 2 * kRedZone) != 0) return nullptr;
  char *base = (char *)raw + kRedZone;
  prefer_huge_pages(base, bytes);
  std::memset(base, 0xCD, bytes);
  poison(raw, kRedZone);
  poison(base + bytes, kRedZone);
  return base;
}

void device_heap_free(void *base) {
  if (!base) return;
  char *raw = (char *)base - kRedZone;
  unpoison(raw, kRedZone); /* the heap's own bookkeeping lies around here */
  std::free(raw);
}

cudaError_t run_copy(const op_context &op, void *dst, const void *src, size_t bytes) {
  record_access(op, src, bytes, false);
  record_access(op, dst, bytes, true);
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t run_memset(const op_context &op, void *dst, int value, size_t bytes) {
  record_access(op, dst, bytes, true);
  std::memset(dst, value, bytes);
  return cudaSuccess;
}

}  // namespace plm_emu

using namespace plm_emu;

extern "C" {

/* ---- device memory ------------------------------------------------------------------ */

cudaError_t cudaMalloc(void **devPtr, size_t size) {
  EMU_ENTER();
  if (!devPtr) return fail(cudaErrorInvalidValue);
  const int device = current_device();
  {
    std::lock_guard<std::mutex> hold(api_lock());
    EMU_TRY(capture_permits(capture_use::unsafe, device));
  }
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  if (!device_memory_take(device, size)) return fail(cudaErrorMemoryAllocation);
  void *base = device_heap_alloc(size);
  if (!base) {
    device_memory_give(device, size);
    return fail(cudaErrorMemoryAllocation);
  }
  region_add(base, size, "cudaMalloc of " + std::to_string(size) + " bytes");
  memory_register(base, size, memory_kind::device, device);
  *devPtr = base;
  return cudaSuccess;
}

cudaError_t cudaFree(void *devPtr) {
  EMU_ENTER();
  if (!devPtr) return cudaSuccess;
  uintptr_t base = 0;
  memory_range range;
  if (!find_range(devPtr, &base, &range) || base != (uintptr_t)devPtr || !is_device_kind(range.kind) ||
      range.kind == memory_kind::mapped)
    return fail(cudaErrorInvalidValue);
  {
    std::lock_guard<std::mutex> hold(api_lock());
    EMU_TRY(capture_permits(capture_use::unsafe, range.device));
  }
  /* A GPU's cudaFree waits for the device's work before it frees. */
  wait_device_idle(range.device);
  EMU_TRY(sticky_error(range.device));
  if (range.kind == memory_kind::pool) return fail(pool_free_synchronously(devPtr));
  memory_unregister(devPtr);
  region_retire(devPtr, "cudaFree");
  const size_t bytes = range.bytes;
  const int device = range.device;
  device_quarantine(devPtr, bytes, [devPtr, bytes, device] {
    region_remove(devPtr);
    unpoison(devPtr, bytes);
    device_heap_free(devPtr);
    device_memory_give(device, bytes);
  });
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  EMU_ENTER();
  if (!free || !total) return fail(cudaErrorInvalidValue);
  const int device = current_device();
  *total = device_properties(device).totalGlobalMem;
  const size_t left = *total - registry().used[device].load();
  const size_t host = host_available();
  *free = left < host ? left : host;
  return cudaSuccess;
}

/* ---- pinned host memory ---------------------------------------------------------------- */

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
  EMU_ENTER();
  const unsigned known = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
  if (!pHost || (flags & ~known)) return fail(cudaErrorInvalidValue);
  {
    std::lock_guard<std::mutex> hold(api_lock());
    EMU_TRY(capture_permits(capture_use::unsafe, current_device()));
  }
  if (size == 0) {
    *pHost = nullptr;
    return cudaSuccess;
  }
  void *base = nullptr;
  if (size > host_available() || posix_memalign(&base, 4096, size) != 0) return fail(cudaErrorMemoryAllocation);
  memory_register(base, size, memory_kind::pinned, current_device());
  *pHost = base;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void **ptr, size_t size) { return cudaHostAlloc(ptr, size, cudaHostAllocDefault); }

cudaError_t cudaFreeHost(void *ptr) {
  EMU_ENTER();
  if (!ptr) return cudaSuccess;
  uintptr_t base = 0;
  memory_range range;
  if (!find_range(ptr, &base, &range) || base != (uintptr_t)ptr || range.kind != memory_kind::pinned)
    return fail(cudaErrorInvalidValue);
  {
    std::lock_guard<std::mutex> hold(api_lock());
    EMU_TRY(capture_permits(capture_use::unsafe, range.device));
  }
  /* Like cudaFree, it waits for the device's work first. */
  wait_device_idle(range.device);
  memory_unregister(ptr);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
  EMU_ENTER();
  const unsigned known = cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterIoMemory |
                         cudaHostRegisterReadOnly;
  if (!ptr || size == 0 || (flags & ~known)) return fail(cudaErrorInvalidValue);
  if (flags & cudaHostRegisterIoMemory) return fail(cudaErrorNotSupported);
  {
    std::lock_guard<std::mutex> hold(api_lock());
    EMU_TRY(capture_permits(capture_use::unsafe, current_device()));
  }
  memory_registry &r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  const uintptr_t first = (uintptr_t)ptr, last = first + size - 1;
  if (last < first) return fail(cudaErrorInvalidValue);
  auto in = holding(r.ranges, first, range_size);
  auto next = r.ranges.upper_bound(first);
  for (auto it : {in, next}) {
    if (it == r.ranges.end() || it->first > last) continue;
    return fail(is_device_kind(it->second.kind) ? cudaErrorInvalidValue : cudaErrorHostMemoryAlreadyRegistered);
  }
  memory_range range;
  range.bytes = size;
  range.kind = memory_kind::registered;
  range.device = current_device();
  r.ranges[first] = range;
  return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *ptr) {
  EMU_ENTER();
  {
    std::lock_guard<std::mutex> hold(api_lock());
    EMU_TRY(capture_permits(capture_use::unsafe, current_device()));
  }
  memory_registry &r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  auto it = r.ranges.find((uintptr_t)ptr);
  if (!ptr || it == r.ranges.end() || it->second.kind != memory_kind::registered)
    return fail(cudaErrorHostMemoryNotRegistered);
  r.ranges.erase(it);
  return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
  EMU_ENTER();
  if (!pDevice || flags != 0) return fail(cudaErrorInvalidValue);
  if (classify(pHost, 1) != memory_class::pinned) return fail(cudaErrorInvalidValue);
  *pDevice = pHost;
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attributes, const void *ptr) {
  EMU_ENTER();
  if (!attributes) return fail(cudaErrorInvalidValue);
  std::memset(attributes, 0, sizeof *attributes);
  uintptr_t base = 0;
  memory_range range;
  if (!find_range(ptr, &base, &range)) {
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = cudaInvalidDeviceId;
    return cudaSuccess;
  }
  attributes->device = range.device;
  attributes->devicePointer = (void *)ptr;
  if (is_device_kind(range.kind)) {
    attributes->type = cudaMemoryTypeDevice;
  } else {
    attributes->type = cudaMemoryTypeHost;
    attributes->hostPointer = (void *)ptr;
  }
  return cudaSuccess;
}

/* ---- copies and memsets ------------------------------------------------------------------ */

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind, cudaStream_t handle) {
  EMU_ENTER();
  memory_class dst_class = memory_class::invalid, src_class = memory_class::invalid;
  EMU_TRY(check_copy(dst, src, count, kind, &dst_class, &src_class));
  std::shared_ptr<completion> wait_for;
  vclock clock;
  {
    std::lock_guard<std::mutex> hold(api_lock());
    std::shared_ptr<stream_state> stream = find_stream(handle);
    if (!stream) return fail(cudaErrorInvalidResourceHandle);
    if (count == 0) return cudaSuccess;
    const std::string what = std::string("cudaMemcpyAsync ") + copy_name(dst_class, src_class);
    if (stream->capture) {
      EMU_TRY(capture_usable(*stream));
      if (dst_class == memory_class::pageable || src_class == memory_class::pageable) {
        invalidate_capture(stream->capture);
        return fail(cudaErrorStreamCaptureUnsupported);
      }
      auto node = std::make_unique<graph_node>();
      node->type = node_type::memcpy;
      node->what = what;
      node->dst = dst;
      node->src = src;
      node->bytes = count;
      capture_node(*stream, std::move(node));
      return cudaSuccess;
    }
    if (stream->kind == stream_kind::legacy) EMU_TRY(capture_permits(capture_use::legacy, stream->device));
    std::shared_ptr<std::vector<char>> staged;
    if (src_class == memory_class::pageable && dst_class == memory_class::device)
      staged = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + count);
    std::shared_ptr<completion> done = enqueue(*stream, what, copy_body(dst, src, count, staged));
    if (dst_class == memory_class::pageable || (is_host(dst_class) && is_host(src_class))) {
      wait_for = done;
      clock = stream->clock;
    }
  }
  if (wait_for) {
    host_wait(wait_for, clock);
    EMU_TRY(sticky_error(current_device()));
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind) {
  EMU_ENTER();
  memory_class dst_class = memory_class::invalid, src_class = memory_class::invalid;
  EMU_TRY(check_copy(dst, src, count, kind, &dst_class, &src_class));
  if (count == 0) return cudaSuccess;
  EMU_TRY(copy_sync(dst, src, count, dst_class, src_class));
  return cudaSuccess;
}

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               cudaMemcpyKind kind) {
  EMU_ENTER();
  if (!symbol) return fail(cudaErrorInvalidSymbol);
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return fail(cudaErrorInvalidMemcpyDirection);
  if (count == 0) return cudaSuccess;
  if (!src) return fail(cudaErrorInvalidValue);
  const memory_class src_class = classify(src, count);
  if (src_class == memory_class::invalid) return fail(cudaErrorInvalidValue);
  if ((kind == cudaMemcpyHostToDevice && src_class == memory_class::device) ||
      (kind == cudaMemcpyDeviceToDevice && src_class != memory_class::device))
    return fail(cudaErrorInvalidValue);
  /* A symbol is device memory whatever the registry says of its host address. */
  EMU_TRY(copy_sync((char *)symbol + offset, src, count, memory_class::device, src_class));
  return cudaSuccess;
}

cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  EMU_ENTER();
  if (!symbol) return fail(cudaErrorInvalidSymbol);
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return fail(cudaErrorInvalidMemcpyDirection);
  if (count == 0) return cudaSuccess;
  if (!dst) return fail(cudaErrorInvalidValue);
  const memory_class dst_class = classify(dst, count);
  if (dst_class == memory_class::invalid) return fail(cudaErrorInvalidValue);
  if ((kind == cudaMemcpyDeviceToHost && dst_class == memory_class::device) ||
      (kind == cudaMemcpyDeviceToDevice && dst_class != memory_class::device))
    return fail(cudaErrorInvalidValue);
  EMU_TRY(copy_sync(dst, (const char *)symbol + offset, count, dst_class, memory_class::device));
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t handle) {
  EMU_ENTER();
  if (count == 0) return cudaSuccess;
  const memory_class where = devPtr ? classify(devPtr, count) : memory_class::invalid;
  if (where != memory_class::device && where != memory_class::pinned) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  if (stream->capture) {
    EMU_TRY(capture_usable(*stream));
    auto node = std::make_unique<graph_node>();
    node->type = node_type::memset;
    node->what = "cudaMemsetAsync";
    node->dst = devPtr;
    node->value = value;
    node->bytes = count;
    capture_node(*stream, std::move(node));
    return cudaSuccess;
  }
  if (stream->kind == stream_kind::legacy) EMU_TRY(capture_permits(capture_use::legacy, stream->device));
  enqueue(*stream, "cudaMemsetAsync",
          [devPtr, value, count](const op_context &op) { return run_memset(op, devPtr, value, count); });
  return cudaSuccess;
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count) {
  EMU_ENTER();
  if (count == 0) return cudaSuccess;
  const memory_class where = devPtr ? classify(devPtr, count) : memory_class::invalid;
  if (where != memory_class::device && where != memory_class::pinned) return fail(cudaErrorInvalidValue);
  std::shared_ptr<completion> done;
  vclock clock;
  {
    std::lock_guard<std::mutex> hold(api_lock());
    const int device = current_device();
    EMU_TRY(capture_permits(capture_use::legacy, device));
    EMU_TRY(capture_permits(capture_use::unsafe, device));
    stream_state &legacy = *legacy_stream(device);
    done = enqueue(legacy, "cudaMemset",
                   [devPtr, value, count](const op_context &op) { return run_memset(op, devPtr, value, count); });
    clock = legacy.clock;
  }
  /* Asynchronous with respect to the host, except on pinned host memory. */
  if (where == memory_class::pinned) {
    host_wait(done, clock);
    EMU_TRY(sticky_error(current_device()));
  }
  return cudaSuccess;
}

}  // extern "C"

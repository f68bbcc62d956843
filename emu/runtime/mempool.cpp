/* emu/runtime/mempool.cpp: stream-ordered allocation (cudaMallocAsync,
 * cudaMallocFromPoolAsync, cudaFreeAsync) and memory pools (create, destroy,
 * attributes, trim, access, the device's default and current pool).
 *
 * Contract (CUDA Runtime API, "Stream Ordered Memory Allocator"): an allocation may be
 * used by work enqueued on its stream after the call (and by other streams ordered
 * after that); a free takes effect in stream order. A freed block is reused:
 *   - by the stream that freed it, or by a stream whose work is already ordered after
 *     the free (cudaMemPoolReuseFollowEventDependencies: the allocating stream's clock
 *     covers the free);
 *   - opportunistically, once the free has finished (cudaMemPoolReuseAllowOpportunistic);
 *   - behind a dependency on the free that the pool inserts into the allocating
 *     stream (cudaMemPoolReuseAllowInternalDependencies);
 * and a reuse by another stream joins the free's clock into the allocation's (emu.h).
 * Stricter than a GPU: a freed block is poisoned when the free runs and held back in
 * a quarantine (the last 8 frees, at most 32 MiB) before any reuse, so that a use
 * after the free in stream order is reported; an allocation smaller than the block it
 * gets has the rest of the block poisoned; a copy to a freed block is refused.
 * Memory goes back to the heap only when the host knows the free finished: on
 * cudaMemPoolTrimTo, and after a synchronize (stream, event, device) beyond the
 * release threshold. Attributes: the release threshold, the three reuse policies,
 * reserved and used memory, current and high (the highs reset by setting 0). Each
 * block is a heap allocation of its own (AddressSanitizer bounds it), registered with
 * check/. Not emulated: allocation and free inside a capture (memory nodes): refused
 * with cudaErrorStreamCaptureUnsupported, the capture invalidated; IPC handles; host
 * (NUMA) pools. Unknown or destroyed pools are cudaErrorInvalidValue. Thread-safe. */
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "emu/runtime/runtime.h"

namespace plm_emu {


namespace {

constexpr size_t kQuarantineBlocks = 8;
constexpr size_t kQuarantineBytes = 32u << 20;

struct pool_block {
  char *base = nullptr;
  size_t bytes = 0; /* the block */
  size_t asked = 0; /* the allocation it serves (or served) */
  /* Its free: */
  std::shared_ptr<completion> freed;
  vclock free_clock;
  timeline_id free_timeline = 0;
  uint64_t free_time = 0;
  std::weak_ptr<stream_state> free_stream;
};

struct pool_state {
  int device = 0;
  cudaMemPoolProps props;
  bool is_default = false;
  void *handle = nullptr;
  /* Guarded by api_lock. */
  uint64_t release_threshold = 0;
  int follow_event_dependencies = 1, allow_opportunistic = 1, allow_internal_dependencies = 1;
  uint64_t reserved = 0, reserved_high = 0, used = 0, used_high = 0;
  std::deque<pool_block> quarantine;
  size_t quarantine_bytes = 0;
  std::vector<pool_block> free_blocks;
  std::map<int, cudaMemAccessFlags> access;
};

handle_table<pool_state> &pool_handles() {
  static auto *table = new handle_table<pool_state>(3);
  return *table;
}

/* Every pool ever made, destroyed ones included while they hold memory; the live
 * blocks by address; each device's default and current pool. Under api_lock. */
struct pools_registry {
  std::vector<std::shared_ptr<pool_state>> all;
  std::unordered_map<uintptr_t, std::pair<std::shared_ptr<pool_state>, pool_block>> live;
  std::shared_ptr<pool_state> default_pool[16];
  std::shared_ptr<pool_state> current[16];
};

pools_registry &pools() {
  static auto *all = new pools_registry;
  return *all;
}

std::shared_ptr<pool_state> make_pool(const cudaMemPoolProps &props, bool is_default) {
  auto pool = std::make_shared<pool_state>();
  pool->device = props.location.id;
  pool->props = props;
  pool->is_default = is_default;
  pool->handle = pool_handles().add(pool);
  pools().all.push_back(pool);
  return pool;
}

std::shared_ptr<pool_state> default_pool(int device) {
  std::shared_ptr<pool_state> &pool = pools().default_pool[device];
  if (!pool) {
    cudaMemPoolProps props;
    std::memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    pool = make_pool(props, true);
  }
  return pool;
}

std::shared_ptr<pool_state> current_pool(int device) {
  std::shared_ptr<pool_state> &pool = pools().current[device];
  if (!pool) pool = default_pool(device);
  return pool;
}

/* Whether the host knows the block's free finished (so its memory may go). */
bool free_known(const pool_block &block) {
  return host_clock().covers(block.free_timeline, block.free_time) && (!block.freed || block.freed->done());
}

void release_block(pool_state &pool, const pool_block &block) {
  region_remove(block.base);
  memory_unmark_freed(block.base);
  unpoison(block.base, block.bytes);
  device_heap_free(block.base);
  device_memory_give(pool.device, block.bytes);
  pool.reserved -= block.bytes;
}

/* Give blocks whose frees the host knows back until at most `keep` bytes are reserved,
 * the largest first (from the quarantine too: memory given back to the heap is
 * AddressSanitizer's to watch). Blocks whose frees the host does not know stay. */
template <class Blocks>
void release_known(pool_state &pool, Blocks &blocks, uint64_t keep) {
  std::vector<size_t> order(blocks.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return blocks[a].bytes > blocks[b].bytes; });
  std::vector<bool> gone(blocks.size(), false);
  for (size_t i : order) {
    if (pool.reserved <= keep) break;
    if (!free_known(blocks[i])) continue;
    release_block(pool, blocks[i]);
    gone[i] = true;
  }
  Blocks kept;
  for (size_t i = 0; i < blocks.size(); i++)
    if (!gone[i]) kept.push_back(std::move(blocks[i]));
  blocks.swap(kept);
}

void trim(pool_state &pool, uint64_t keep) {
  release_known(pool, pool.free_blocks, keep);
  release_known(pool, pool.quarantine, keep);
  pool.quarantine_bytes = 0;
  for (const pool_block &block : pool.quarantine) pool.quarantine_bytes += block.bytes;
}

/* A freed block this stream may take for `asked` bytes, with what the reuse must wait
 * for; or false. */
bool find_reusable(pool_state &pool, stream_state &stream, size_t asked, pool_block *out,
                   std::vector<std::shared_ptr<completion>> *after, vclock *also) {
  size_t best = pool.free_blocks.size();
  for (size_t i = 0; i < pool.free_blocks.size(); i++) {
    const pool_block &block = pool.free_blocks[i];
    if (block.bytes < asked || block.bytes > 2 * asked + 4096) continue;
    if (best == pool.free_blocks.size() || block.bytes < pool.free_blocks[best].bytes) best = i;
  }
  if (best == pool.free_blocks.size()) return false;
  pool_block block = pool.free_blocks[best];
  const bool same_stream = block.free_stream.lock().get() == &stream;
  const bool ordered = stream.clock.covers(block.free_timeline, block.free_time);
  if (same_stream || (pool.follow_event_dependencies && ordered)) {
    /* Already ordered after the free. */
  } else if (pool.allow_opportunistic && block.freed && block.freed->done()) {
    also->join(block.free_clock);
  } else if (pool.allow_internal_dependencies) {
    if (block.freed) after->push_back(block.freed);
    also->join(block.free_clock);
  } else {
    return false;
  }
  pool.free_blocks.erase(pool.free_blocks.begin() + (long)best);
  *out = block;
  return true;
}

cudaError_t malloc_async(void **ptr, size_t size, const std::shared_ptr<pool_state> *given, cudaStream_t handle) {
  if (!ptr || size == 0) return cudaErrorInvalidValue;
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return cudaErrorInvalidResourceHandle;
  if (stream->capture) {
    cudaError_t usable = capture_usable(*stream);
    if (usable != cudaSuccess) return usable;
    invalidate_capture(stream->capture);
    return cudaErrorStreamCaptureUnsupported;
  }
  if (stream->kind == stream_kind::legacy) {
    cudaError_t err = capture_permits(capture_use::legacy, stream->device);
    if (err != cudaSuccess) return err;
  }
  std::shared_ptr<pool_state> pool = given ? *given : current_pool(stream->device);
  if (given && !pool_handles().find(pool->handle)) return cudaErrorInvalidValue;
  pool_block block;
  std::vector<std::shared_ptr<completion>> after;
  vclock also;
  if (!find_reusable(*pool, *stream, size, &block, &after, &also)) {
    const size_t bytes = (size + 255) & ~(size_t)255;
    if (pool->props.maxSize && pool->reserved + bytes > pool->props.maxSize) return cudaErrorMemoryAllocation;
    if (!device_memory_take(pool->device, bytes)) {
      trim(*pool, 0);
      if (!device_memory_take(pool->device, bytes)) return cudaErrorMemoryAllocation;
    }
    block.base = (char *)device_heap_alloc(bytes);
    if (!block.base) {
      device_memory_give(pool->device, bytes);
      return cudaErrorMemoryAllocation;
    }
    block.bytes = bytes;
    region_add(block.base, bytes, "cudaMallocAsync block of " + std::to_string(bytes) + " bytes");
    poison(block.base, bytes);
    pool->reserved += bytes;
    pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
  }
  memory_unmark_freed(block.base);
  block.asked = size;
  block.freed.reset();
  memory_register(block.base, size, memory_kind::pool, pool->device);
  pool->used += block.bytes;
  pool->used_high = std::max(pool->used_high, pool->used);
  char *base = block.base;
  const size_t block_bytes = block.bytes;
  /* In stream order, after the free of a reused block (which retired it). */
  enqueue(*stream, "cudaMallocAsync of " + std::to_string(size) + " bytes",
          [base, size, block_bytes](const op_context &op) {
            region_add(base, block_bytes, "cudaMallocAsync block of " + std::to_string(size) + " bytes");
            unpoison(base, size);
            std::memset(base, 0xCD, size);
            record_access(op, base, size, true);
            return cudaSuccess;
          },
          std::move(after), &also);
  pools().live[(uintptr_t)base] = {pool, block};
  *ptr = base;
  return cudaSuccess;
}

/* A block whose free has been enqueued (or has happened) enters the quarantine. */
void quarantine_block(pool_state &pool, pool_block block) {
  pool.used -= block.bytes;
  pool.quarantine_bytes += block.bytes;
  pool.quarantine.push_back(std::move(block));
  while (pool.quarantine.size() > kQuarantineBlocks || pool.quarantine_bytes > kQuarantineBytes) {
    pool.quarantine_bytes -= pool.quarantine.front().bytes;
    pool.free_blocks.push_back(std::move(pool.quarantine.front()));
    pool.quarantine.pop_front();
  }
}

cudaError_t pool_lookup(cudaMemPool_t handle, std::shared_ptr<pool_state> *out) {
  if (!handle) return cudaErrorInvalidValue;
  *out = pool_handles().find(handle);
  return *out ? cudaSuccess : cudaErrorInvalidValue;
}

}  // namespace

/* cudaFree of a pool's allocation: the device has been synchronised, so the free is
 * done at once. */
cudaError_t pool_free_synchronously(void *ptr) {
  std::lock_guard<std::mutex> hold(api_lock());
  auto it = pools().live.find((uintptr_t)ptr);
  if (it == pools().live.end()) return cudaErrorInvalidValue;
  std::shared_ptr<pool_state> pool = it->second.first;
  pool_block block = it->second.second;
  pools().live.erase(it);
  memory_unregister(block.base);
  memory_mark_freed(block.base, block.bytes);
  poison(block.base, block.bytes);
  region_retire(block.base, "cudaFree");
  quarantine_block(*pool, std::move(block));
  return cudaSuccess;
}

void pools_release_to_threshold(int device) {
  std::lock_guard<std::mutex> hold(api_lock());
  for (const auto &pool : pools().all)
    if (pool->device == device && pool->reserved > pool->release_threshold) trim(*pool, pool->release_threshold);
}

}  // namespace plm_emu

using namespace plm_emu;

extern "C" {

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
  EMU_ENTER();
  EMU_TRY(malloc_async(devPtr, size, nullptr, hStream));
  return cudaSuccess;
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
  EMU_ENTER();
  std::shared_ptr<pool_state> pool;
  EMU_TRY(pool_lookup(memPool, &pool));
  EMU_TRY(malloc_async(ptr, size, &pool, stream));
  return cudaSuccess;
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
  EMU_ENTER();
  if (!devPtr) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(hStream);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  auto it = pools().live.find((uintptr_t)devPtr);
  if (it == pools().live.end()) return fail(cudaErrorInvalidValue);
  if (stream->capture) {
    EMU_TRY(capture_usable(*stream));
    invalidate_capture(stream->capture);
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (stream->kind == stream_kind::legacy) EMU_TRY(capture_permits(capture_use::legacy, stream->device));
  std::shared_ptr<pool_state> pool = it->second.first;
  pool_block block = it->second.second;
  pools().live.erase(it);
  memory_unregister(block.base);
  memory_mark_freed(block.base, block.bytes);
  char *base = block.base;
  const size_t asked = block.asked, bytes = block.bytes;
  block.freed = enqueue(*stream, "cudaFreeAsync of " + std::to_string(asked) + " bytes",
                        [base, asked, bytes](const op_context &op) {
                          record_access(op, base, asked, true);
                          poison(base, bytes);
                          region_retire(base, "cudaFreeAsync (" + op.what + ")");
                          return cudaSuccess;
                        });
  block.free_clock = stream->clock;
  block.free_timeline = stream->timeline;
  block.free_time = stream->clock.at(stream->timeline);
  block.free_stream = stream;
  quarantine_block(*pool, std::move(block));
  return cudaSuccess;
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const cudaMemPoolProps *poolProps) {
  EMU_ENTER();
  if (!memPool || !poolProps) return fail(cudaErrorInvalidValue);
  if (poolProps->allocType != cudaMemAllocationTypePinned || poolProps->location.type != cudaMemLocationTypeDevice)
    return fail(cudaErrorInvalidValue);
  if (!valid_device(poolProps->location.id)) return fail(cudaErrorInvalidDevice);
  if (poolProps->handleTypes != cudaMemHandleTypeNone) return fail(cudaErrorNotSupported);
  std::lock_guard<std::mutex> hold(api_lock());
  *memPool = (cudaMemPool_t)make_pool(*poolProps, false)->handle;
  return cudaSuccess;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
  EMU_ENTER();
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<pool_state> pool;
  EMU_TRY(pool_lookup(memPool, &pool));
  if (pool->is_default) return fail(cudaErrorInvalidValue);
  pool_handles().remove(memPool);
  if (pools().current[pool->device] == pool) pools().current[pool->device] = default_pool(pool->device);
  /* What the host knows to be free goes now; the rest when a trim finds it so, or
   * with the outstanding allocations' frees. */
  trim(*pool, 0);
  return cudaSuccess;
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  EMU_ENTER();
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<pool_state> pool;
  EMU_TRY(pool_lookup(memPool, &pool));
  trim(*pool, minBytesToKeep);
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void *value) {
  EMU_ENTER();
  if (!value) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<pool_state> pool;
  EMU_TRY(pool_lookup(memPool, &pool));
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies: pool->follow_event_dependencies = *(int *)value != 0; break;
    case cudaMemPoolReuseAllowOpportunistic: pool->allow_opportunistic = *(int *)value != 0; break;
    case cudaMemPoolReuseAllowInternalDependencies: pool->allow_internal_dependencies = *(int *)value != 0; break;
    case cudaMemPoolAttrReleaseThreshold: pool->release_threshold = *(uint64_t *)value; break;
    case cudaMemPoolAttrReservedMemHigh:
      if (*(uint64_t *)value != 0) return fail(cudaErrorInvalidValue);
      pool->reserved_high = pool->reserved;
      break;
    case cudaMemPoolAttrUsedMemHigh:
      if (*(uint64_t *)value != 0) return fail(cudaErrorInvalidValue);
      pool->used_high = pool->used;
      break;
    default: return fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void *value) {
  EMU_ENTER();
  if (!value) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<pool_state> pool;
  EMU_TRY(pool_lookup(memPool, &pool));
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies: *(int *)value = pool->follow_event_dependencies; break;
    case cudaMemPoolReuseAllowOpportunistic: *(int *)value = pool->allow_opportunistic; break;
    case cudaMemPoolReuseAllowInternalDependencies: *(int *)value = pool->allow_internal_dependencies; break;
    case cudaMemPoolAttrReleaseThreshold: *(uint64_t *)value = pool->release_threshold; break;
    case cudaMemPoolAttrReservedMemCurrent: *(uint64_t *)value = pool->reserved; break;
    case cudaMemPoolAttrReservedMemHigh: *(uint64_t *)value = pool->reserved_high; break;
    case cudaMemPoolAttrUsedMemCurrent: *(uint64_t *)value = pool->used; break;
    case cudaMemPoolAttrUsedMemHigh: *(uint64_t *)value = pool->used_high; break;
    default: return fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const cudaMemAccessDesc *descList, size_t count) {
  EMU_ENTER();
  if (count && !descList) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<pool_state> pool;
  EMU_TRY(pool_lookup(memPool, &pool));
  for (size_t i = 0; i < count; i++) {
    const cudaMemAccessDesc &desc = descList[i];
    if (desc.location.type != cudaMemLocationTypeDevice || !valid_device(desc.location.id))
      return fail(cudaErrorInvalidDevice);
    if (desc.flags != cudaMemAccessFlagsProtNone && desc.flags != cudaMemAccessFlagsProtRead &&
        desc.flags != cudaMemAccessFlagsProtReadWrite)
      return fail(cudaErrorInvalidValue);
    /* The owning device always has read-write access. */
    if (desc.location.id == pool->device && desc.flags != cudaMemAccessFlagsProtReadWrite)
      return fail(cudaErrorInvalidDevice);
  }
  for (size_t i = 0; i < count; i++) pool->access[descList[i].location.id] = descList[i].flags;
  return cudaSuccess;
}

cudaError_t cudaMemPoolGetAccess(cudaMemAccessFlags *flags, cudaMemPool_t memPool, cudaMemLocation *location) {
  EMU_ENTER();
  if (!flags || !location) return fail(cudaErrorInvalidValue);
  if (location->type != cudaMemLocationTypeDevice || !valid_device(location->id)) return fail(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<pool_state> pool;
  EMU_TRY(pool_lookup(memPool, &pool));
  if (location->id == pool->device) {
    *flags = cudaMemAccessFlagsProtReadWrite;
  } else {
    auto it = pool->access.find(location->id);
    *flags = it == pool->access.end() ? cudaMemAccessFlagsProtNone : it->second;
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device) {
  EMU_ENTER();
  if (!memPool) return fail(cudaErrorInvalidValue);
  if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> hold(api_lock());
  *memPool = (cudaMemPool_t)default_pool(device)->handle;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device) {
  EMU_ENTER();
  if (!memPool) return fail(cudaErrorInvalidValue);
  if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> hold(api_lock());
  *memPool = (cudaMemPool_t)current_pool(device)->handle;
  return cudaSuccess;
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
  EMU_ENTER();
  if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<pool_state> pool;
  EMU_TRY(pool_lookup(memPool, &pool));
  if (pool->device != device) return fail(cudaErrorInvalidDevice);
  pools().current[device] = pool;
  return cudaSuccess;
}

}  // extern "C"

/* emu/device/launch.cpp: kernel launches checked and submitted, and the kernels'
 * attributes (cudaFuncSetAttribute, cudaFuncGetAttributes).
 *
 * A launch is checked against the emulated device's limits as a GPU's launch is, and the
 * error, if any, is the calling thread's last error, as CUDA leaves it: a block of more
 * than 1024 threads (or over 1024 x 1024 x 64), a grid past 2^31 - 1 x 65535 x 65535 or
 * with a zero dimension: cudaErrorInvalidConfiguration; more dynamic shared memory than
 * the kernel may have (48 KiB, or what cudaFuncAttributeMaxDynamicSharedMemorySize set
 * for it, at most 227 KiB): cudaErrorInvalidValue. A launch from a host function:
 * cudaErrorNotPermitted. The kernel's static shared memory is known once a block has run
 * (emu/device/block.cpp checks static and dynamic together there).
 *
 * Attributes are kept per kernel address. A launch that names a template kernel whose
 * arguments it deduces has no address (emu/cu2cpp.pl): it gets the defaults, as a kernel
 * nobody set attributes on. */
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "emu/config.h"
#include "emu/device/executor.h"
#include "emu/device/launch_internal.h"

namespace plm_emu {

namespace {

constexpr int kDefaultSharedPerBlock = 48 * 1024;

struct function_attributes {
  int max_dynamic_shared = -1; /* -1: not set */
  int carveout = -1;
  size_t static_shared = 0; /* seen when a block ran */
};

std::mutex attributes_lock;
std::unordered_map<const void *, function_attributes> &attributes() {
  static auto *table = new std::unordered_map<const void *, function_attributes>();
  return *table;
}

function_attributes attributes_of(const void *function) {
  std::lock_guard<std::mutex> hold(attributes_lock);
  auto it = attributes().find(function);
  return it == attributes().end() ? function_attributes() : it->second;
}

}  // namespace

size_t launch_shared_limit(const kernel_launch &launch) {
  const function_attributes a = attributes_of(launch.function);
  return a.max_dynamic_shared >= 0 ? (size_t)config_shared_optin_bytes()
                                   : (size_t)kDefaultSharedPerBlock;
}

void launch_saw_static_shared(const void *function, size_t bytes) {
  if (!function) return;
  std::lock_guard<std::mutex> hold(attributes_lock);
  function_attributes &a = attributes()[function];
  if (bytes > a.static_shared) a.static_shared = bytes;
}

cudaError_t check_launch(const kernel_launch &launch) {
  const dim3 b = launch.block, g = launch.grid;
  if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 ||
      (uint64_t)b.x * b.y * b.z > (uint64_t)kMaxBlockThreads)
    return cudaErrorInvalidConfiguration;
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 2147483647u || g.y > 65535u || g.z > 65535u)
    return cudaErrorInvalidConfiguration;
  const function_attributes a = attributes_of(launch.function);
  const size_t allowed = a.max_dynamic_shared >= 0 ? (size_t)a.max_dynamic_shared
                                                   : (size_t)kDefaultSharedPerBlock;
  if (launch.dynamic_shared > allowed) return cudaErrorInvalidValue;
  return cudaSuccess;
}

void submit_launch(const launch_site &site, const launch_config &config,
                   std::shared_ptr<const kernel_body> body) {
  if (in_host_function()) {
    set_last_error(cudaErrorNotPermitted);
    return;
  }
  kernel_launch launch;
  launch.grid = config.grid;
  launch.block = config.block;
  launch.dynamic_shared = config.shared;
  launch.name = site.kernel;
  launch.function = site.function;
  launch.site = site.where;
  launch.body = std::move(body);
  cudaError_t err = check_launch(launch);
  if (err == cudaSuccess) err = enqueue_kernel(config.stream, std::move(launch));
  if (err != cudaSuccess) set_last_error(err);
}

}  // namespace plm_emu

/* ---- the runtime's entry points for kernels ------------------------------------------- */

extern "C" cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value) {
  using namespace plm_emu;
  cudaError_t err = cudaSuccess;
  if (in_host_function()) err = cudaErrorNotPermitted;
  else if (!func) err = cudaErrorInvalidDeviceFunction;
  if (err == cudaSuccess) {
    std::lock_guard<std::mutex> hold(attributes_lock);
    function_attributes &a = attributes()[func];
    switch (attr) {
      case cudaFuncAttributeMaxDynamicSharedMemorySize:
        if (value < 0 || (size_t)value + a.static_shared > (size_t)config_shared_optin_bytes())
          err = cudaErrorInvalidValue;
        else a.max_dynamic_shared = value;
        break;
      case cudaFuncAttributePreferredSharedMemoryCarveout:
        if (value < -1 || value > 100) err = cudaErrorInvalidValue;
        else a.carveout = value;
        break;
      default: err = cudaErrorInvalidValue; break;
    }
  }
  if (err != cudaSuccess) set_last_error(err);
  return err;
}

extern "C" cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func) {
  using namespace plm_emu;
  cudaError_t err = cudaSuccess;
  if (in_host_function()) err = cudaErrorNotPermitted;
  else if (!attr) err = cudaErrorInvalidValue;
  else if (!func) err = cudaErrorInvalidDeviceFunction;
  if (err != cudaSuccess) {
    set_last_error(err);
    return err;
  }
  const function_attributes a = attributes_of(func);
  memset(attr, 0, sizeof *attr);
  attr->sharedSizeBytes = a.static_shared;
  attr->maxThreadsPerBlock = kMaxBlockThreads;
  attr->numRegs = 32;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  attr->maxDynamicSharedSizeBytes =
      a.max_dynamic_shared >= 0 ? a.max_dynamic_shared : kDefaultSharedPerBlock - (int)a.static_shared;
  attr->preferredShmemCarveout = a.carveout;
  return cudaSuccess;
}

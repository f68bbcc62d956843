/* emu/runtime/device.cpp: the emulated devices, their properties and attributes, the
 * current device of each host thread, versions, and the emulator's environment.
 *
 * Contract: PLUME_EMU_DEVICES devices (emu/config.h: default 1), each with an
 * H100-like property set whose name says it is emulated; cudaDeviceGetAttribute
 * answers every attribute of the toolkit's cudaDeviceAttr consistently with
 * cudaGetDeviceProperties; the current device is per host thread (default 0);
 * stream priorities range from 0 (least) to -5 (greatest); driver and runtime
 * versions are 13000. PLUME_EMU_SEED seeds the runtime's random choices (graph
 * node orders). Thread-safe. */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "emu/config.h"
#include "emu/runtime/runtime.h"

namespace plm_emu {

namespace {

thread_local int thread_device = 0;

constexpr size_t kKiB = 1024, kMiB = 1024 * kKiB, kGiB = 1024 * kMiB;

cudaDeviceProp make_properties(int device) {
  cudaDeviceProp p;
  std::memset(&p, 0, sizeof p);
  std::snprintf(p.name, sizeof p.name, "plume emulated H100 (SIMT on the CPU: correctness only, no timing)");
  for (int i = 0; i < 16; i++) p.uuid.bytes[i] = (char)(0xe0 + i + device);
  p.totalGlobalMem = 80 * kGiB;
  p.sharedMemPerBlock = 48 * kKiB;
  p.regsPerBlock = 65536;
  p.warpSize = 32;
  p.memPitch = 2147483647;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsDim[0] = 1024;
  p.maxThreadsDim[1] = 1024;
  p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 2147483647;
  p.maxGridSize[1] = 65535;
  p.maxGridSize[2] = 65535;
  p.totalConstMem = 64 * kKiB;
  p.major = 9;
  p.minor = 0;
  p.textureAlignment = 512;
  p.texturePitchAlignment = 32;
  p.multiProcessorCount = 132;
  p.canMapHostMemory = 1;
  p.maxTexture1D = 131072;
  p.maxTexture1DMipmap = 32768;
  p.maxTexture2D[0] = 131072;
  p.maxTexture2D[1] = 65536;
  p.maxTexture2DMipmap[0] = 32768;
  p.maxTexture2DMipmap[1] = 32768;
  p.maxTexture2DLinear[0] = 131072;
  p.maxTexture2DLinear[1] = 65000;
  p.maxTexture2DLinear[2] = 2097120;
  p.maxTexture2DGather[0] = 32768;
  p.maxTexture2DGather[1] = 32768;
  p.maxTexture3D[0] = p.maxTexture3D[1] = p.maxTexture3D[2] = 16384;
  p.maxTexture3DAlt[0] = p.maxTexture3DAlt[1] = 8192;
  p.maxTexture3DAlt[2] = 32768;
  p.maxTextureCubemap = 32768;
  p.maxTexture1DLayered[0] = 32768;
  p.maxTexture1DLayered[1] = 2048;
  p.maxTexture2DLayered[0] = p.maxTexture2DLayered[1] = 32768;
  p.maxTexture2DLayered[2] = 2048;
  p.maxTextureCubemapLayered[0] = 32768;
  p.maxTextureCubemapLayered[1] = 2046;
  p.maxSurface1D = 32768;
  p.maxSurface2D[0] = 131072;
  p.maxSurface2D[1] = 65536;
  p.maxSurface3D[0] = p.maxSurface3D[1] = p.maxSurface3D[2] = 16384;
  p.maxSurface1DLayered[0] = 32768;
  p.maxSurface1DLayered[1] = 2048;
  p.maxSurface2DLayered[0] = p.maxSurface2DLayered[1] = 32768;
  p.maxSurface2DLayered[2] = 2048;
  p.maxSurfaceCubemap = 32768;
  p.maxSurfaceCubemapLayered[0] = 32768;
  p.maxSurfaceCubemapLayered[1] = 2046;
  p.surfaceAlignment = 512;
  p.concurrentKernels = 1;
  p.ECCEnabled = 1;
  p.pciBusID = 0x18 + device;
  p.pciDeviceID = 0;
  p.pciDomainID = 0;
  p.asyncEngineCount = 2;
  p.unifiedAddressing = 1;
  p.memoryBusWidth = 5120;
  p.l2CacheSize = (int)(50 * kMiB);
  p.persistingL2CacheMaxSize = (int)(30 * kMiB);
  p.maxThreadsPerMultiProcessor = 2048;
  p.streamPrioritiesSupported = 1;
  p.globalL1CacheSupported = 1;
  p.localL1CacheSupported = 1;
  p.sharedMemPerMultiprocessor = 228 * kKiB;
  p.regsPerMultiprocessor = 65536;
  p.managedMemory = 0; /* managed memory is not emulated */
  p.multiGpuBoardGroupID = device;
  p.computePreemptionSupported = 1;
  p.canUseHostPointerForRegisteredMem = 1;
  p.cooperativeLaunch = 0; /* cudaLaunchCooperativeKernel is not emulated */
  p.sharedMemPerBlockOptin = (size_t)config_shared_optin_bytes(); /* 227 KiB by default */
  p.maxBlocksPerMultiProcessor = 32;
  p.accessPolicyMaxWindowSize = 134213632;
  p.reservedSharedMemPerBlock = 1 * kKiB;
  p.hostRegisterSupported = 1;
  p.hostRegisterReadOnlySupported = 1;
  p.memoryPoolsSupported = 1;
  p.memoryPoolSupportedHandleTypes = 0;
  p.clusterLaunch = 0;
  p.deviceNumaConfig = 0;
  p.deviceNumaId = -1;
  p.hostNumaId = -1;
  p.gpuPciDeviceID = 0x233010de;
  return p;
}

/* H100 SXM: 2619 MHz on a 5120-bit bus, double data rate: about 3.35 TB/s. */
constexpr int kMemoryClockKHz = 2619000;
constexpr int kClockKHz = 1980000;

struct attribute_value {
  cudaDeviceAttr attr;
  int (*value)(const cudaDeviceProp &p);
};

#define EMU_ATTR(attr, expr) {attr, [](const cudaDeviceProp &p) -> int { (void)p; return (int)(expr); }}
const attribute_value attribute_values[] = {
    EMU_ATTR(cudaDevAttrMaxThreadsPerBlock, p.maxThreadsPerBlock),
    EMU_ATTR(cudaDevAttrMaxBlockDimX, p.maxThreadsDim[0]),
    EMU_ATTR(cudaDevAttrMaxBlockDimY, p.maxThreadsDim[1]),
    EMU_ATTR(cudaDevAttrMaxBlockDimZ, p.maxThreadsDim[2]),
    EMU_ATTR(cudaDevAttrMaxGridDimX, p.maxGridSize[0]),
    EMU_ATTR(cudaDevAttrMaxGridDimY, p.maxGridSize[1]),
    EMU_ATTR(cudaDevAttrMaxGridDimZ, p.maxGridSize[2]),
    EMU_ATTR(cudaDevAttrMaxSharedMemoryPerBlock, p.sharedMemPerBlock),
    EMU_ATTR(cudaDevAttrTotalConstantMemory, p.totalConstMem),
    EMU_ATTR(cudaDevAttrWarpSize, p.warpSize),
    EMU_ATTR(cudaDevAttrMaxPitch, p.memPitch),
    EMU_ATTR(cudaDevAttrMaxRegistersPerBlock, p.regsPerBlock),
    EMU_ATTR(cudaDevAttrClockRate, kClockKHz),
    EMU_ATTR(cudaDevAttrTextureAlignment, p.textureAlignment),
    EMU_ATTR(cudaDevAttrGpuOverlap, p.asyncEngineCount > 0),
    EMU_ATTR(cudaDevAttrMultiProcessorCount, p.multiProcessorCount),
    EMU_ATTR(cudaDevAttrKernelExecTimeout, 0),
    EMU_ATTR(cudaDevAttrIntegrated, p.integrated),
    EMU_ATTR(cudaDevAttrCanMapHostMemory, p.canMapHostMemory),
    EMU_ATTR(cudaDevAttrComputeMode, cudaComputeModeDefault),
    EMU_ATTR(cudaDevAttrMaxTexture1DWidth, p.maxTexture1D),
    EMU_ATTR(cudaDevAttrMaxTexture2DWidth, p.maxTexture2D[0]),
    EMU_ATTR(cudaDevAttrMaxTexture2DHeight, p.maxTexture2D[1]),
    EMU_ATTR(cudaDevAttrMaxTexture3DWidth, p.maxTexture3D[0]),
    EMU_ATTR(cudaDevAttrMaxTexture3DHeight, p.maxTexture3D[1]),
    EMU_ATTR(cudaDevAttrMaxTexture3DDepth, p.maxTexture3D[2]),
    EMU_ATTR(cudaDevAttrMaxTexture2DLayeredWidth, p.maxTexture2DLayered[0]),
    EMU_ATTR(cudaDevAttrMaxTexture2DLayeredHeight, p.maxTexture2DLayered[1]),
    EMU_ATTR(cudaDevAttrMaxTexture2DLayeredLayers, p.maxTexture2DLayered[2]),
    EMU_ATTR(cudaDevAttrSurfaceAlignment, p.surfaceAlignment),
    EMU_ATTR(cudaDevAttrConcurrentKernels, p.concurrentKernels),
    EMU_ATTR(cudaDevAttrEccEnabled, p.ECCEnabled),
    EMU_ATTR(cudaDevAttrPciBusId, p.pciBusID),
    EMU_ATTR(cudaDevAttrPciDeviceId, p.pciDeviceID),
    EMU_ATTR(cudaDevAttrTccDriver, p.tccDriver),
    EMU_ATTR(cudaDevAttrMemoryClockRate, kMemoryClockKHz),
    EMU_ATTR(cudaDevAttrGlobalMemoryBusWidth, p.memoryBusWidth),
    EMU_ATTR(cudaDevAttrL2CacheSize, p.l2CacheSize),
    EMU_ATTR(cudaDevAttrMaxThreadsPerMultiProcessor, p.maxThreadsPerMultiProcessor),
    EMU_ATTR(cudaDevAttrAsyncEngineCount, p.asyncEngineCount),
    EMU_ATTR(cudaDevAttrUnifiedAddressing, p.unifiedAddressing),
    EMU_ATTR(cudaDevAttrMaxTexture1DLayeredWidth, p.maxTexture1DLayered[0]),
    EMU_ATTR(cudaDevAttrMaxTexture1DLayeredLayers, p.maxTexture1DLayered[1]),
    EMU_ATTR(cudaDevAttrMaxTexture2DGatherWidth, p.maxTexture2DGather[0]),
    EMU_ATTR(cudaDevAttrMaxTexture2DGatherHeight, p.maxTexture2DGather[1]),
    EMU_ATTR(cudaDevAttrMaxTexture3DWidthAlt, p.maxTexture3DAlt[0]),
    EMU_ATTR(cudaDevAttrMaxTexture3DHeightAlt, p.maxTexture3DAlt[1]),
    EMU_ATTR(cudaDevAttrMaxTexture3DDepthAlt, p.maxTexture3DAlt[2]),
    EMU_ATTR(cudaDevAttrPciDomainId, p.pciDomainID),
    EMU_ATTR(cudaDevAttrTexturePitchAlignment, p.texturePitchAlignment),
    EMU_ATTR(cudaDevAttrMaxTextureCubemapWidth, p.maxTextureCubemap),
    EMU_ATTR(cudaDevAttrMaxTextureCubemapLayeredWidth, p.maxTextureCubemapLayered[0]),
    EMU_ATTR(cudaDevAttrMaxTextureCubemapLayeredLayers, p.maxTextureCubemapLayered[1]),
    EMU_ATTR(cudaDevAttrMaxSurface1DWidth, p.maxSurface1D),
    EMU_ATTR(cudaDevAttrMaxSurface2DWidth, p.maxSurface2D[0]),
    EMU_ATTR(cudaDevAttrMaxSurface2DHeight, p.maxSurface2D[1]),
    EMU_ATTR(cudaDevAttrMaxSurface3DWidth, p.maxSurface3D[0]),
    EMU_ATTR(cudaDevAttrMaxSurface3DHeight, p.maxSurface3D[1]),
    EMU_ATTR(cudaDevAttrMaxSurface3DDepth, p.maxSurface3D[2]),
    EMU_ATTR(cudaDevAttrMaxSurface1DLayeredWidth, p.maxSurface1DLayered[0]),
    EMU_ATTR(cudaDevAttrMaxSurface1DLayeredLayers, p.maxSurface1DLayered[1]),
    EMU_ATTR(cudaDevAttrMaxSurface2DLayeredWidth, p.maxSurface2DLayered[0]),
    EMU_ATTR(cudaDevAttrMaxSurface2DLayeredHeight, p.maxSurface2DLayered[1]),
    EMU_ATTR(cudaDevAttrMaxSurface2DLayeredLayers, p.maxSurface2DLayered[2]),
    EMU_ATTR(cudaDevAttrMaxSurfaceCubemapWidth, p.maxSurfaceCubemap),
    EMU_ATTR(cudaDevAttrMaxSurfaceCubemapLayeredWidth, p.maxSurfaceCubemapLayered[0]),
    EMU_ATTR(cudaDevAttrMaxSurfaceCubemapLayeredLayers, p.maxSurfaceCubemapLayered[1]),
    EMU_ATTR(cudaDevAttrMaxTexture1DLinearWidth, 268435456),
    EMU_ATTR(cudaDevAttrMaxTexture2DLinearWidth, p.maxTexture2DLinear[0]),
    EMU_ATTR(cudaDevAttrMaxTexture2DLinearHeight, p.maxTexture2DLinear[1]),
    EMU_ATTR(cudaDevAttrMaxTexture2DLinearPitch, p.maxTexture2DLinear[2]),
    EMU_ATTR(cudaDevAttrMaxTexture2DMipmappedWidth, p.maxTexture2DMipmap[0]),
    EMU_ATTR(cudaDevAttrMaxTexture2DMipmappedHeight, p.maxTexture2DMipmap[1]),
    EMU_ATTR(cudaDevAttrComputeCapabilityMajor, p.major),
    EMU_ATTR(cudaDevAttrComputeCapabilityMinor, p.minor),
    EMU_ATTR(cudaDevAttrMaxTexture1DMipmappedWidth, p.maxTexture1DMipmap),
    EMU_ATTR(cudaDevAttrStreamPrioritiesSupported, p.streamPrioritiesSupported),
    EMU_ATTR(cudaDevAttrGlobalL1CacheSupported, p.globalL1CacheSupported),
    EMU_ATTR(cudaDevAttrLocalL1CacheSupported, p.localL1CacheSupported),
    EMU_ATTR(cudaDevAttrMaxSharedMemoryPerMultiprocessor, p.sharedMemPerMultiprocessor),
    EMU_ATTR(cudaDevAttrMaxRegistersPerMultiprocessor, p.regsPerMultiprocessor),
    EMU_ATTR(cudaDevAttrManagedMemory, p.managedMemory),
    EMU_ATTR(cudaDevAttrIsMultiGpuBoard, p.isMultiGpuBoard),
    EMU_ATTR(cudaDevAttrMultiGpuBoardGroupID, p.multiGpuBoardGroupID),
    EMU_ATTR(cudaDevAttrHostNativeAtomicSupported, p.hostNativeAtomicSupported),
    EMU_ATTR(cudaDevAttrSingleToDoublePrecisionPerfRatio, 2),
    EMU_ATTR(cudaDevAttrPageableMemoryAccess, p.pageableMemoryAccess),
    EMU_ATTR(cudaDevAttrConcurrentManagedAccess, p.concurrentManagedAccess),
    EMU_ATTR(cudaDevAttrComputePreemptionSupported, p.computePreemptionSupported),
    EMU_ATTR(cudaDevAttrCanUseHostPointerForRegisteredMem, p.canUseHostPointerForRegisteredMem),
    EMU_ATTR(cudaDevAttrCooperativeLaunch, p.cooperativeLaunch),
    EMU_ATTR(cudaDevAttrMaxSharedMemoryPerBlockOptin, p.sharedMemPerBlockOptin),
    EMU_ATTR(cudaDevAttrCanFlushRemoteWrites, 0),
    EMU_ATTR(cudaDevAttrHostRegisterSupported, p.hostRegisterSupported),
    EMU_ATTR(cudaDevAttrPageableMemoryAccessUsesHostPageTables, p.pageableMemoryAccessUsesHostPageTables),
    EMU_ATTR(cudaDevAttrDirectManagedMemAccessFromHost, p.directManagedMemAccessFromHost),
    EMU_ATTR(cudaDevAttrMaxBlocksPerMultiprocessor, p.maxBlocksPerMultiProcessor),
    EMU_ATTR(cudaDevAttrMaxPersistingL2CacheSize, p.persistingL2CacheMaxSize),
    EMU_ATTR(cudaDevAttrMaxAccessPolicyWindowSize, p.accessPolicyMaxWindowSize),
    EMU_ATTR(cudaDevAttrReservedSharedMemoryPerBlock, p.reservedSharedMemPerBlock),
    EMU_ATTR(cudaDevAttrSparseCudaArraySupported, p.sparseCudaArraySupported),
    EMU_ATTR(cudaDevAttrHostRegisterReadOnlySupported, p.hostRegisterReadOnlySupported),
    EMU_ATTR(cudaDevAttrTimelineSemaphoreInteropSupported, p.timelineSemaphoreInteropSupported),
    EMU_ATTR(cudaDevAttrMemoryPoolsSupported, p.memoryPoolsSupported),
    EMU_ATTR(cudaDevAttrGPUDirectRDMASupported, p.gpuDirectRDMASupported),
    EMU_ATTR(cudaDevAttrGPUDirectRDMAFlushWritesOptions, p.gpuDirectRDMAFlushWritesOptions),
    EMU_ATTR(cudaDevAttrGPUDirectRDMAWritesOrdering, p.gpuDirectRDMAWritesOrdering),
    EMU_ATTR(cudaDevAttrMemoryPoolSupportedHandleTypes, p.memoryPoolSupportedHandleTypes),
    EMU_ATTR(cudaDevAttrClusterLaunch, p.clusterLaunch),
    EMU_ATTR(cudaDevAttrDeferredMappingCudaArraySupported, p.deferredMappingCudaArraySupported),
    EMU_ATTR(cudaDevAttrIpcEventSupport, p.ipcEventSupported),
    EMU_ATTR(cudaDevAttrMemSyncDomainCount, 1),
    EMU_ATTR(cudaDevAttrNumaConfig, p.deviceNumaConfig),
    EMU_ATTR(cudaDevAttrNumaId, p.deviceNumaId),
    EMU_ATTR(cudaDevAttrMpsEnabled, p.mpsEnabled),
    EMU_ATTR(cudaDevAttrHostNumaId, p.hostNumaId),
    EMU_ATTR(cudaDevAttrD3D12CigSupported, 0),
    EMU_ATTR(cudaDevAttrVulkanCigSupported, 0),
    EMU_ATTR(cudaDevAttrGpuPciDeviceId, p.gpuPciDeviceID),
    EMU_ATTR(cudaDevAttrGpuPciSubsystemId, p.gpuPciSubsystemID),
    EMU_ATTR(cudaDevAttrHostNumaMemoryPoolsSupported, 0),
    EMU_ATTR(cudaDevAttrHostNumaMultinodeIpcSupported, p.hostNumaMultinodeIpcSupported),
    EMU_ATTR(cudaDevAttrHostMemoryPoolsSupported, 0),
    EMU_ATTR(cudaDevAttrOnlyPartialHostNativeAtomicSupported, 0),
};
#undef EMU_ATTR

}  // namespace

int device_count() { return config_devices(); }

bool valid_device(int device) { return device >= 0 && device < device_count(); }

std::mt19937_64 &random_source() {
  /* The runtime's own stream of choices, apart from the device's schedules. */
  static std::mt19937_64 source(mix_seed(config_seed(), 0x72756e74696d65ull));
  return source;
}

std::mutex &api_lock() {
  static std::mutex *lock = new std::mutex; /* never destroyed: workers may outlive main */
  return *lock;
}

const cudaDeviceProp &device_properties(int device) {
  static const std::vector<cudaDeviceProp> properties = [] {
    std::vector<cudaDeviceProp> all;
    for (int d = 0; d < 16; d++) all.push_back(make_properties(d));
    return all;
  }();
  return properties[(size_t)(valid_device(device) ? device : 0)];
}

int current_device() { return thread_device; }

}  // namespace plm_emu

using namespace plm_emu;

extern "C" {

cudaError_t cudaGetDeviceCount(int *count) {
  EMU_ENTER();
  if (!count) return fail(cudaErrorInvalidValue);
  *count = device_count();
  if (*count == 0) return fail(cudaErrorNoDevice);
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
  EMU_ENTER();
  if (!device) return fail(cudaErrorInvalidValue);
  *device = thread_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (in_host_function()) return fail(cudaErrorNotPermitted);
  if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
  thread_device = device;
  EMU_TRY(sticky_error(device));
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
  EMU_ENTER();
  if (!prop) return fail(cudaErrorInvalidValue);
  if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
  *prop = device_properties(device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device) {
  EMU_ENTER();
  if (!value) return fail(cudaErrorInvalidValue);
  if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
  for (const attribute_value &entry : attribute_values) {
    if (entry.attr == attr) {
      *value = entry.value(device_properties(device));
      return cudaSuccess;
    }
  }
  return fail(cudaErrorInvalidValue);
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
  EMU_ENTER();
  if (leastPriority) *leastPriority = 0;
  if (greatestPriority) *greatestPriority = -5;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *driverVersion) {
  EMU_ENTER();
  if (!driverVersion) return fail(cudaErrorInvalidValue);
  *driverVersion = 13000;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion) {
  EMU_ENTER();
  if (!runtimeVersion) return fail(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

}  // extern "C"

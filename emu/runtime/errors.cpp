/* emu/runtime/errors.cpp: the per-thread last error, sticky errors, and the names and
 * descriptions of every cudaError_t of the CUDA 13 toolkit.
 *
 * Contract (as the runtime documents it): a failing call records its error as the
 * calling thread's last error; cudaGetLastError returns it and resets it to
 * cudaSuccess, cudaPeekAtLastError returns it and keeps it. cudaErrorNotReady (a
 * query's "not yet") is returned without being recorded. A sticky error (an error a
 * kernel raised while running: a trap, an illegal address) makes its device's
 * context unusable: every later call returns it, and cudaGetLastError cannot reset
 * it. Inside a host function every call returns cudaErrorNotPermitted, those of this
 * file included, except cudaGetErrorName and cudaGetErrorString, which touch no state.
 * Thread-safe. */
#include <cstdio>

#include "emu/runtime/runtime.h"

namespace plm_emu {

namespace {

thread_local cudaError_t last_error = cudaSuccess;

std::atomic<int> sticky[16];

struct error_text {
  cudaError_t error;
  const char *name;
  const char *text;
};

#define EMU_ERROR(name, text) {name, #name, text}
const error_text error_texts[] = {
    EMU_ERROR(cudaSuccess, "no error"),
    EMU_ERROR(cudaErrorInvalidValue, "invalid argument"),
    EMU_ERROR(cudaErrorMemoryAllocation, "out of memory"),
    EMU_ERROR(cudaErrorInitializationError, "initialization error"),
    EMU_ERROR(cudaErrorCudartUnloading, "driver shutting down"),
    EMU_ERROR(cudaErrorProfilerDisabled, "profiler disabled while using external profiling tool"),
    EMU_ERROR(cudaErrorProfilerNotInitialized, "profiler not initialized"),
    EMU_ERROR(cudaErrorProfilerAlreadyStarted, "profiler already started"),
    EMU_ERROR(cudaErrorProfilerAlreadyStopped, "profiler already stopped"),
    EMU_ERROR(cudaErrorInvalidConfiguration, "invalid configuration argument"),
    EMU_ERROR(cudaErrorInvalidPitchValue, "invalid pitch argument"),
    EMU_ERROR(cudaErrorInvalidSymbol, "invalid device symbol"),
    EMU_ERROR(cudaErrorInvalidHostPointer, "invalid host pointer"),
    EMU_ERROR(cudaErrorInvalidDevicePointer, "invalid device pointer"),
    EMU_ERROR(cudaErrorInvalidTexture, "invalid texture reference"),
    EMU_ERROR(cudaErrorInvalidTextureBinding, "texture is not bound to a pointer"),
    EMU_ERROR(cudaErrorInvalidChannelDescriptor, "invalid channel descriptor"),
    EMU_ERROR(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"),
    EMU_ERROR(cudaErrorAddressOfConstant, "invalid address of constant"),
    EMU_ERROR(cudaErrorTextureFetchFailed, "fetch from texture failed"),
    EMU_ERROR(cudaErrorTextureNotBound, "cannot fetch from a texture that is not bound"),
    EMU_ERROR(cudaErrorSynchronizationError, "incorrect use of __syncthreads()"),
    EMU_ERROR(cudaErrorInvalidFilterSetting, "linear filtering not supported for non-float type"),
    EMU_ERROR(cudaErrorInvalidNormSetting, "read as normalized float not supported for 32-bit non-float type"),
    EMU_ERROR(cudaErrorMixedDeviceExecution, "device emulation mode and device execution mode cannot be mixed"),
    EMU_ERROR(cudaErrorNotYetImplemented, "feature not yet implemented"),
    EMU_ERROR(cudaErrorMemoryValueTooLarge, "memory size or pointer value too large to fit in 32 bit"),
    EMU_ERROR(cudaErrorStubLibrary, "CUDA driver is a stub library"),
    EMU_ERROR(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version"),
    EMU_ERROR(cudaErrorCallRequiresNewerDriver, "API call is not supported in the installed CUDA driver"),
    EMU_ERROR(cudaErrorInvalidSurface, "invalid surface reference"),
    EMU_ERROR(cudaErrorDuplicateVariableName, "duplicate global variable looked up by string name"),
    EMU_ERROR(cudaErrorDuplicateTextureName, "duplicate texture looked up by string name"),
    EMU_ERROR(cudaErrorDuplicateSurfaceName, "duplicate surface looked up by string name"),
    EMU_ERROR(cudaErrorDevicesUnavailable, "CUDA-capable device(s) is/are busy or unavailable"),
    EMU_ERROR(cudaErrorIncompatibleDriverContext, "incompatible driver context"),
    EMU_ERROR(cudaErrorMissingConfiguration, "__global__ function call is not configured"),
    EMU_ERROR(cudaErrorPriorLaunchFailure, "unspecified launch failure in prior launch"),
    EMU_ERROR(cudaErrorLaunchMaxDepthExceeded, "launch would exceed maximum depth of nested launches"),
    EMU_ERROR(cudaErrorLaunchFileScopedTex, "launch failed because kernel uses unsupported, file-scoped textures"),
    EMU_ERROR(cudaErrorLaunchFileScopedSurf, "launch failed because kernel uses unsupported, file-scoped surfaces"),
    EMU_ERROR(cudaErrorSyncDepthExceeded, "cudaDeviceSynchronize failed because caller's grid depth exceeds cudaLimitDevRuntimeSyncDepth"),
    EMU_ERROR(cudaErrorLaunchPendingCountExceeded, "launch failed because launch would exceed cudaLimitDevRuntimePendingLaunchCount"),
    EMU_ERROR(cudaErrorInvalidDeviceFunction, "invalid device function"),
    EMU_ERROR(cudaErrorNoDevice, "no CUDA-capable device is detected"),
    EMU_ERROR(cudaErrorInvalidDevice, "invalid device ordinal"),
    EMU_ERROR(cudaErrorDeviceNotLicensed, "device doesn't have valid Grid license"),
    EMU_ERROR(cudaErrorSoftwareValidityNotEstablished, "integrity checks failed"),
    EMU_ERROR(cudaErrorStartupFailure, "startup failure in cuda runtime"),
    EMU_ERROR(cudaErrorInvalidKernelImage, "device kernel image is invalid"),
    EMU_ERROR(cudaErrorDeviceUninitialized, "invalid device context"),
    EMU_ERROR(cudaErrorMapBufferObjectFailed, "mapping of buffer object failed"),
    EMU_ERROR(cudaErrorUnmapBufferObjectFailed, "unmapping of buffer object failed"),
    EMU_ERROR(cudaErrorArrayIsMapped, "array is mapped"),
    EMU_ERROR(cudaErrorAlreadyMapped, "resource already mapped"),
    EMU_ERROR(cudaErrorNoKernelImageForDevice, "no kernel image is available for execution on the device"),
    EMU_ERROR(cudaErrorAlreadyAcquired, "resource already acquired"),
    EMU_ERROR(cudaErrorNotMapped, "resource not mapped"),
    EMU_ERROR(cudaErrorNotMappedAsArray, "resource not mapped as array"),
    EMU_ERROR(cudaErrorNotMappedAsPointer, "resource not mapped as pointer"),
    EMU_ERROR(cudaErrorECCUncorrectable, "uncorrectable ECC error encountered"),
    EMU_ERROR(cudaErrorUnsupportedLimit, "limit is not supported on this architecture"),
    EMU_ERROR(cudaErrorDeviceAlreadyInUse, "exclusive-thread device already in use by a different thread"),
    EMU_ERROR(cudaErrorPeerAccessUnsupported, "peer access is not supported between these two devices"),
    EMU_ERROR(cudaErrorInvalidPtx, "a PTX JIT compilation failed"),
    EMU_ERROR(cudaErrorInvalidGraphicsContext, "invalid OpenGL or DirectX context"),
    EMU_ERROR(cudaErrorNvlinkUncorrectable, "uncorrectable NVLink error detected during the execution"),
    EMU_ERROR(cudaErrorJitCompilerNotFound, "PTX JIT compiler library not found"),
    EMU_ERROR(cudaErrorUnsupportedPtxVersion, "the provided PTX was compiled with an unsupported toolchain"),
    EMU_ERROR(cudaErrorJitCompilationDisabled, "PTX JIT compilation was disabled"),
    EMU_ERROR(cudaErrorUnsupportedExecAffinity, "the provided execution affinity is not supported"),
    EMU_ERROR(cudaErrorUnsupportedDevSideSync, "cudaDeviceSynchronize is not supported in device code"),
    EMU_ERROR(cudaErrorContained, "an exception occurred on the device and was contained"),
    EMU_ERROR(cudaErrorInvalidSource, "device kernel image is invalid"),
    EMU_ERROR(cudaErrorFileNotFound, "file not found"),
    EMU_ERROR(cudaErrorSharedObjectSymbolNotFound, "shared object symbol not found"),
    EMU_ERROR(cudaErrorSharedObjectInitFailed, "shared object initialization failed"),
    EMU_ERROR(cudaErrorOperatingSystem, "OS call failed or operation not supported on this OS"),
    EMU_ERROR(cudaErrorInvalidResourceHandle, "invalid resource handle"),
    EMU_ERROR(cudaErrorIllegalState, "the operation cannot be performed in the present state"),
    EMU_ERROR(cudaErrorLossyQuery, "attempted introspection would be semantically lossy"),
    EMU_ERROR(cudaErrorSymbolNotFound, "named symbol not found"),
    EMU_ERROR(cudaErrorNotReady, "device not ready"),
    EMU_ERROR(cudaErrorIllegalAddress, "an illegal memory access was encountered"),
    EMU_ERROR(cudaErrorLaunchOutOfResources, "too many resources requested for launch"),
    EMU_ERROR(cudaErrorLaunchTimeout, "the launch timed out and was terminated"),
    EMU_ERROR(cudaErrorLaunchIncompatibleTexturing, "launch uses incompatible texturing mode"),
    EMU_ERROR(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled"),
    EMU_ERROR(cudaErrorPeerAccessNotEnabled, "peer access has not been enabled"),
    EMU_ERROR(cudaErrorSetOnActiveProcess, "cannot set while device is active in this process"),
    EMU_ERROR(cudaErrorContextIsDestroyed, "context is destroyed"),
    EMU_ERROR(cudaErrorAssert, "device-side assert triggered"),
    EMU_ERROR(cudaErrorTooManyPeers, "peer mapping resources exhausted"),
    EMU_ERROR(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped"),
    EMU_ERROR(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region"),
    EMU_ERROR(cudaErrorHardwareStackError, "hardware stack error"),
    EMU_ERROR(cudaErrorIllegalInstruction, "an illegal instruction was encountered"),
    EMU_ERROR(cudaErrorMisalignedAddress, "misaligned address"),
    EMU_ERROR(cudaErrorInvalidAddressSpace, "operation not supported on global/shared address space"),
    EMU_ERROR(cudaErrorInvalidPc, "invalid program counter"),
    EMU_ERROR(cudaErrorLaunchFailure, "unspecified launch failure"),
    EMU_ERROR(cudaErrorCooperativeLaunchTooLarge, "too many blocks in cooperative launch"),
    EMU_ERROR(cudaErrorTensorMemoryLeak, "tensor memory not completely freed"),
    EMU_ERROR(cudaErrorNotPermitted, "operation not permitted"),
    EMU_ERROR(cudaErrorNotSupported, "operation not supported"),
    EMU_ERROR(cudaErrorSystemNotReady, "system not yet initialized"),
    EMU_ERROR(cudaErrorSystemDriverMismatch, "system has unsupported display driver / cuda driver combination"),
    EMU_ERROR(cudaErrorCompatNotSupportedOnDevice, "forward compatibility was attempted on non supported HW"),
    EMU_ERROR(cudaErrorMpsConnectionFailed, "MPS client failed to connect to the MPS control daemon or the MPS server"),
    EMU_ERROR(cudaErrorMpsRpcFailure, "the remote procedural call between the MPS server and the MPS client failed"),
    EMU_ERROR(cudaErrorMpsServerNotReady, "MPS server is not ready to accept new MPS client requests"),
    EMU_ERROR(cudaErrorMpsMaxClientsReached, "the hardware resources required to create MPS client have been exhausted"),
    EMU_ERROR(cudaErrorMpsMaxConnectionsReached, "the hardware resources required to support device connections have been exhausted"),
    EMU_ERROR(cudaErrorMpsClientTerminated, "the MPS client has been terminated by the server"),
    EMU_ERROR(cudaErrorCdpNotSupported, "the module is using CUDA Dynamic Parallelism, but the current configuration does not support it"),
    EMU_ERROR(cudaErrorCdpVersionMismatch, "CUDA Dynamic Parallelism is not supported across the versions of the modules"),
    EMU_ERROR(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing"),
    EMU_ERROR(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture"),
    EMU_ERROR(cudaErrorStreamCaptureMerge, "operation would result in a merge of separate capture sequences"),
    EMU_ERROR(cudaErrorStreamCaptureUnmatched, "capture was not ended in the same stream as it began"),
    EMU_ERROR(cudaErrorStreamCaptureUnjoined, "capturing stream has unjoined work"),
    EMU_ERROR(cudaErrorStreamCaptureIsolation, "dependency created on uncaptured work in another stream"),
    EMU_ERROR(cudaErrorStreamCaptureImplicit, "operation would make the legacy stream depend on a capturing blocking stream"),
    EMU_ERROR(cudaErrorCapturedEvent, "operation not permitted on an event last recorded in a capturing stream"),
    EMU_ERROR(cudaErrorStreamCaptureWrongThread, "attempt to terminate a thread-local capture sequence from another thread"),
    EMU_ERROR(cudaErrorTimeout, "wait operation timed out"),
    EMU_ERROR(cudaErrorGraphExecUpdateFailure, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"),
    EMU_ERROR(cudaErrorExternalDevice, "an async error has occured in external entity outside of CUDA"),
    EMU_ERROR(cudaErrorInvalidClusterSize, "a kernel launch error has occurred due to cluster misconfiguration"),
    EMU_ERROR(cudaErrorFunctionNotLoaded, "the function handle is not loaded when calling an API that requires a loaded function"),
    EMU_ERROR(cudaErrorInvalidResourceType, "one or more resources passed in are not valid resource types for the operation"),
    EMU_ERROR(cudaErrorInvalidResourceConfiguration, "one or more resources are insufficient or non-applicable for the operation"),
    EMU_ERROR(cudaErrorUnknown, "unknown error"),
};
#undef EMU_ERROR

const error_text *find_text(cudaError_t err) {
  for (const error_text &entry : error_texts)
    if (entry.error == err) return &entry;
  return nullptr;
}

}  // namespace

cudaError_t fail(cudaError_t err) {
  if (err != cudaSuccess && err != cudaErrorNotReady) last_error = err;
  return err;
}

void set_last_error(cudaError_t err) { fail(err); }

void make_sticky(int device, cudaError_t err) {
  if (device < 0 || device >= 16 || err == cudaSuccess) return;
  int expected = cudaSuccess;
  sticky[device].compare_exchange_strong(expected, (int)err);
}

cudaError_t sticky_error(int device) {
  if (device < 0 || device >= 16) return cudaSuccess;
  return (cudaError_t)sticky[device].load();
}

cudaError_t entry_check() {
  if (in_host_function()) return cudaErrorNotPermitted;
  return sticky_error(current_device());
}

}  // namespace plm_emu

using namespace plm_emu;

extern "C" {

cudaError_t cudaGetLastError(void) {
  EMU_ENTER();
  cudaError_t err = last_error;
  last_error = cudaSuccess;
  return err;
}

cudaError_t cudaPeekAtLastError(void) {
  EMU_ENTER();
  return last_error;
}

const char *cudaGetErrorName(cudaError_t error) {
  const error_text *entry = find_text(error);
  return entry ? entry->name : "unrecognized error code";
}

const char *cudaGetErrorString(cudaError_t error) {
  const error_text *entry = find_text(error);
  return entry ? entry->text : "unrecognized error code";
}

}  // extern "C"

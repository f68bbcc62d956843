/* emu/tests/test_emu_runtime.cpp: the emulated CUDA runtime's host side (emu/runtime/),
 * through the CUDA runtime API as plume calls it, each case built so that it fails
 * when the behaviour it names is wrong. Kernels appear only as hand-made launches
 * (enqueue_kernel of emu.h) whose bodies are plain host code.
 *
 * The clocks the runtime gives operations are checked through check/'s reports: a
 * scenario runs in a child process (test_emu_runtime --scenario NAME), where a defect
 * aborts, and the parent looks at how it ended.
 *
 * Run: test_emu_runtime [case-name-substring]; prints "N passed, N failed". The
 * process sees two emulated devices (PLUME_EMU_DEVICES=2, set before the first call),
 * so that the sticky-error case can spoil device 1 and leave device 0 to the others. */
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "emu/runtime/runtime.h"

namespace {

struct test_failure {};

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      throw test_failure();                                                          \
    }                                                                                \
  } while (0)

#define CHECK_ERR(call, want)                                                                          \
  do {                                                                                                 \
    cudaError_t got_ = (call);                                                                         \
    if (got_ != (want)) {                                                                              \
      std::fprintf(stderr, "  %s:%d: %s gave %s, expected %s\n", __FILE__, __LINE__, #call,            \
                   cudaGetErrorName(got_), cudaGetErrorName(want));                                    \
      throw test_failure();                                                                            \
    }                                                                                                  \
  } while (0)

#define OK(call) CHECK_ERR(call, cudaSuccess)

using namespace std::chrono_literals;

/* A host function that holds its stream until the test opens the gate. */
struct gate {
  std::atomic<bool> open{false};
};
void CUDART_CB wait_at_gate(void *data) {
  while (!((gate *)data)->open.load()) std::this_thread::sleep_for(1ms);
}

void CUDART_CB append_one(void *data) { ((std::vector<int> *)data)->push_back(1); }
void CUDART_CB append_two(void *data) { ((std::vector<int> *)data)->push_back(2); }
void CUDART_CB count_up(void *data) { ++*(std::atomic<int> *)data; }
void CUDART_CB sleep_30ms(void *) { std::this_thread::sleep_for(30ms); }

cudaStream_t new_stream(unsigned flags = cudaStreamNonBlocking) {
  cudaStream_t stream = nullptr;
  OK(cudaStreamCreateWithFlags(&stream, flags));
  return stream;
}

bool all_bytes(const void *p, size_t n, unsigned char value) {
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)p)[i] != value) return false;
  return true;
}

cudaStreamCaptureStatus capture_status(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  OK(cudaStreamIsCapturing(stream, &status));
  return status;
}

/* End a capture expected to have been invalidated. */
void end_invalidated(cudaStream_t stream) {
  cudaGraph_t graph = (cudaGraph_t)0x1;
  CHECK_ERR(cudaStreamEndCapture(stream, &graph), cudaErrorStreamCaptureInvalidated);
  CHECK(graph == nullptr);
  CHECK(capture_status(stream) == cudaStreamCaptureStatusNone);
  (void)cudaGetLastError();
}

/* End a capture expected to be intact, and drop its graph. */
void end_intact(cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  OK(cudaStreamEndCapture(stream, &graph));
  CHECK(graph != nullptr);
  OK(cudaGraphDestroy(graph));
}

/* A kernel launch made by hand: one thread that stores `value` (captured by value at the
 * launch) into *out. */
struct store_body : plm_emu::kernel_body {
  int value;
  int *out;
  store_body(int v, int *o) : value(v), out(o) {}
  void run_thread() const override { *out = value; }
};

cudaError_t launch_store(cudaStream_t stream, int value, int *out) {
  plm_emu::kernel_launch launch;
  launch.grid = dim3(1, 1, 1);
  launch.block = dim3(1, 1, 1);
  launch.name = "store";
  launch.site = __FILE__;
  launch.body = std::make_shared<store_body>(value, out);
  return plm_emu::enqueue_kernel(stream, launch);
}

/* ---- devices ------------------------------------------------------------------------- */

void test_device_properties() {
  int count = 0;
  OK(cudaGetDeviceCount(&count));
  CHECK(count == 2);
  cudaDeviceProp prop;
  OK(cudaGetDeviceProperties(&prop, 0));
  CHECK(std::strstr(prop.name, "emulated") != nullptr);
  CHECK(prop.multiProcessorCount == 132 && prop.major == 9 && prop.minor == 0 && prop.warpSize == 32);
  CHECK(prop.maxThreadsPerBlock == 1024 && prop.maxThreadsDim[2] == 64 && prop.maxGridSize[0] == 2147483647);
  CHECK(prop.sharedMemPerBlock == 48 * 1024 && prop.sharedMemPerBlockOptin == 227 * 1024);
  CHECK(prop.sharedMemPerMultiprocessor == 228 * 1024 && prop.asyncEngineCount == 2);
  int value = 0;
  OK(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  CHECK(value == (int)prop.sharedMemPerBlockOptin);
  OK(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 1));
  CHECK(value == 132);
  OK(cudaDeviceGetAttribute(&value, cudaDevAttrMemoryClockRate, 0));
  const double bandwidth = 2.0 * value * 1e3 * (prop.memoryBusWidth / 8.0);
  CHECK(bandwidth > 3.3e12 && bandwidth < 3.4e12);
  CHECK_ERR(cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, 2), cudaErrorInvalidDevice);
  int least = 1, greatest = 1;
  OK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CHECK(least == 0 && greatest == -5);
  OK(cudaDriverGetVersion(&value));
  CHECK(value == 13000);
  OK(cudaRuntimeGetVersion(&value));
  CHECK(value == 13000);
  CHECK_ERR(cudaSetDevice(2), cudaErrorInvalidDevice);
  CHECK_ERR(cudaGetLastError(), cudaErrorInvalidDevice);
  /* The current device is per host thread. */
  OK(cudaSetDevice(1));
  int other = -1;
  std::thread([&] { cudaGetDevice(&other); }).join();
  CHECK(other == 0);
  OK(cudaSetDevice(0));
}

/* ---- streams and events ---------------------------------------------------------------- */

void test_stream_order() {
  cudaStream_t stream = new_stream();
  std::vector<int> seen;
  OK(cudaLaunchHostFunc(stream, sleep_30ms, nullptr));
  OK(cudaLaunchHostFunc(stream, append_one, &seen));
  OK(cudaLaunchHostFunc(stream, append_two, &seen));
  OK(cudaStreamSynchronize(stream));
  CHECK((seen == std::vector<int>{1, 2}));
  /* A memset then a copy of the same buffer, in order. */
  void *device = nullptr;
  unsigned char *pinned = nullptr;
  OK(cudaMalloc(&device, 4096));
  OK(cudaMallocHost((void **)&pinned, 4096));
  OK(cudaLaunchHostFunc(stream, sleep_30ms, nullptr));
  OK(cudaMemsetAsync(device, 7, 4096, stream));
  OK(cudaMemcpyAsync(pinned, device, 4096, cudaMemcpyDeviceToHost, stream));
  OK(cudaStreamSynchronize(stream));
  CHECK(all_bytes(pinned, 4096, 7));
  OK(cudaFree(device));
  OK(cudaFreeHost(pinned));
  OK(cudaStreamDestroy(stream));
}

void test_non_blocking_and_legacy() {
  gate held;
  OK(cudaLaunchHostFunc(0, wait_at_gate, &held)); /* the legacy stream is held */
  /* A non-blocking stream does not wait for the legacy stream. */
  cudaStream_t free_running = new_stream(cudaStreamNonBlocking);
  std::atomic<int> ran{0};
  OK(cudaLaunchHostFunc(free_running, count_up, &ran));
  OK(cudaStreamSynchronize(free_running));
  CHECK(ran == 1);
  /* A blocking stream and cudaStreamPerThread do. */
  cudaStream_t blocking = new_stream(cudaStreamDefault);
  OK(cudaLaunchHostFunc(blocking, count_up, &ran));
  OK(cudaLaunchHostFunc(cudaStreamPerThread, count_up, &ran));
  std::this_thread::sleep_for(30ms);
  CHECK_ERR(cudaStreamQuery(blocking), cudaErrorNotReady);
  CHECK_ERR(cudaStreamQuery(cudaStreamPerThread), cudaErrorNotReady);
  CHECK(ran == 1);
  CHECK_ERR(cudaGetLastError(), cudaSuccess); /* cudaErrorNotReady is not recorded */
  held.open = true;
  OK(cudaStreamSynchronize(blocking));
  OK(cudaStreamSynchronize(cudaStreamPerThread));
  CHECK(ran == 3);
  /* The legacy stream waits for a blocking stream's earlier work. */
  gate held2;
  OK(cudaLaunchHostFunc(blocking, wait_at_gate, &held2));
  OK(cudaLaunchHostFunc(0, count_up, &ran));
  std::this_thread::sleep_for(30ms);
  CHECK_ERR(cudaStreamQuery(0), cudaErrorNotReady);
  held2.open = true;
  OK(cudaStreamSynchronize(0));
  CHECK(ran == 4);
  unsigned flags = 99;
  OK(cudaStreamGetFlags(free_running, &flags));
  CHECK(flags == cudaStreamNonBlocking);
  cudaStream_t high = nullptr;
  int priority = 0;
  OK(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, -5));
  OK(cudaStreamGetPriority(high, &priority));
  CHECK(priority == -5);
  OK(cudaStreamDestroy(high));
  OK(cudaStreamDestroy(blocking));
  OK(cudaStreamDestroy(free_running));
}

struct seen_value {
  std::atomic<int> *source;
  int seen = -1;
};
void CUDART_CB read_value(void *data) { ((seen_value *)data)->seen = ((seen_value *)data)->source->load(); }
struct gated_write {
  gate *held;
  std::atomic<int> *target;
};
void CUDART_CB write_after_gate(void *data) {
  wait_at_gate(((gated_write *)data)->held);
  ((gated_write *)data)->target->store(1);
}

void test_event_wait_across_streams() {
  cudaStream_t producer = new_stream(), consumer = new_stream();
  cudaEvent_t event = nullptr;
  OK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  gate held;
  std::atomic<int> value{0};
  gated_write write{&held, &value};
  seen_value read{&value};
  OK(cudaLaunchHostFunc(producer, write_after_gate, &write));
  OK(cudaEventRecord(event, producer));
  OK(cudaStreamWaitEvent(consumer, event, 0));
  OK(cudaLaunchHostFunc(consumer, read_value, &read));
  /* A later record does not change what the consumer waits for. */
  OK(cudaEventRecord(event, consumer));
  std::this_thread::sleep_for(30ms);
  CHECK_ERR(cudaEventQuery(event), cudaErrorNotReady);
  CHECK_ERR(cudaStreamQuery(consumer), cudaErrorNotReady);
  held.open = true;
  OK(cudaEventSynchronize(event));
  CHECK(read.seen == 1);
  OK(cudaEventQuery(event));
  /* An event never recorded is complete and no wait. */
  cudaEvent_t fresh = nullptr;
  OK(cudaEventCreate(&fresh));
  OK(cudaEventQuery(fresh));
  OK(cudaStreamWaitEvent(consumer, fresh, 0));
  CHECK_ERR(cudaStreamWaitEvent(consumer, fresh, 0x8), cudaErrorInvalidValue);
  OK(cudaEventDestroy(fresh));
  OK(cudaEventDestroy(event));
  OK(cudaStreamDestroy(producer));
  OK(cudaStreamDestroy(consumer));
}

void test_elapsed_time() {
  cudaStream_t stream = new_stream();
  cudaEvent_t start = nullptr, end = nullptr, untimed = nullptr, unrecorded = nullptr;
  OK(cudaEventCreate(&start));
  OK(cudaEventCreate(&end));
  OK(cudaEventCreate(&unrecorded));
  OK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
  gate held;
  OK(cudaEventRecord(start, stream));
  OK(cudaEventRecord(untimed, stream));
  OK(cudaLaunchHostFunc(stream, wait_at_gate, &held));
  OK(cudaLaunchHostFunc(stream, sleep_30ms, nullptr));
  OK(cudaEventRecord(end, stream));
  float ms = -1;
  CHECK_ERR(cudaEventElapsedTime(&ms, start, end), cudaErrorNotReady);
  held.open = true;
  OK(cudaEventSynchronize(end));
  OK(cudaEventElapsedTime(&ms, start, end));
  CHECK(ms >= 25.0f && ms < 10000.0f);
  CHECK_ERR(cudaEventElapsedTime(&ms, untimed, end), cudaErrorInvalidResourceHandle);
  CHECK_ERR(cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
  CHECK_ERR(cudaEventElapsedTime(&ms, start, unrecorded), cudaErrorInvalidResourceHandle);
  CHECK_ERR(cudaEventElapsedTime(nullptr, start, end), cudaErrorInvalidValue);
  CHECK_ERR(cudaEventCreateWithFlags(&untimed, cudaEventInterprocess), cudaErrorInvalidValue);
  for (cudaEvent_t e : {start, end, unrecorded}) OK(cudaEventDestroy(e));
  OK(cudaEventDestroy(untimed));
  OK(cudaStreamDestroy(stream));
}

/* ---- copies -------------------------------------------------------------------------- */

void test_pageable_copies() {
  cudaStream_t stream = new_stream();
  void *device = nullptr;
  OK(cudaMalloc(&device, 1 << 16));
  /* To pageable memory: complete on return, however long the stream takes. */
  std::vector<unsigned char> pageable(1 << 16, 0);
  OK(cudaLaunchHostFunc(stream, sleep_30ms, nullptr));
  OK(cudaMemsetAsync(device, 5, 1 << 16, stream));
  OK(cudaMemcpyAsync(pageable.data(), device, 1 << 16, cudaMemcpyDeviceToHost, stream));
  CHECK(all_bytes(pageable.data(), pageable.size(), 5));
  /* From pageable memory: staged at the call, so the source may change right after. */
  gate held;
  OK(cudaLaunchHostFunc(stream, wait_at_gate, &held));
  std::fill(pageable.begin(), pageable.end(), 1);
  OK(cudaMemcpyAsync(device, pageable.data(), 1 << 16, cudaMemcpyHostToDevice, stream));
  std::fill(pageable.begin(), pageable.end(), 2);
  /* From pinned memory it returns before the copy runs (the stream is held). */
  unsigned char *pinned = nullptr;
  OK(cudaHostAlloc((void **)&pinned, 1 << 16, cudaHostAllocDefault));
  std::memset(pinned, 0, 1 << 16);
  OK(cudaMemcpyAsync(pinned, device, 1 << 16, cudaMemcpyDeviceToHost, stream));
  CHECK(all_bytes(pinned, 1 << 16, 0));
  held.open = true;
  OK(cudaStreamSynchronize(stream));
  CHECK(all_bytes(pinned, 1 << 16, 1));
  /* cudaMemcpy to the host is complete on return; cudaMemset and a device-to-device
   * cudaMemcpy are not waited for (both on the legacy stream, in order). */
  void *second = nullptr;
  OK(cudaMalloc(&second, 1 << 16));
  OK(cudaMemset(second, 9, 1 << 16));
  OK(cudaMemcpy(device, second, 1 << 16, cudaMemcpyDeviceToDevice));
  OK(cudaMemcpy(pageable.data(), device, 1 << 16, cudaMemcpyDefault));
  CHECK(all_bytes(pageable.data(), pageable.size(), 9));
  OK(cudaFree(second));
  OK(cudaFree(device));
  OK(cudaFreeHost(pinned));
  OK(cudaStreamDestroy(stream));
}

void test_copy_checks() {
  void *device = nullptr;
  std::vector<char> host(4096);
  OK(cudaMalloc(&device, 4096));
  CHECK(((uintptr_t)device & 255) == 0);
  CHECK_ERR(cudaMemcpy(host.data(), host.data() + 2048, 64, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  CHECK_ERR(cudaMemcpy(device, host.data(), 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  CHECK_ERR(cudaMemcpy(device, host.data(), 64, (cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
  CHECK_ERR(cudaMemcpy(device, host.data(), 4097, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  CHECK_ERR(cudaMemsetAsync(host.data(), 0, 64, 0), cudaErrorInvalidValue);
  CHECK_ERR(cudaMemcpyAsync(device, host.data(), 64, cudaMemcpyHostToDevice, (cudaStream_t)0x1234), cudaErrorInvalidResourceHandle);
  /* Unwritten device memory reads as 0xCD. */
  OK(cudaMemcpy(host.data(), device, 4096, cudaMemcpyDeviceToHost));
  CHECK(all_bytes(host.data(), 4096, 0xCD));
  cudaPointerAttributes attributes;
  OK(cudaPointerGetAttributes(&attributes, (char *)device + 100));
  CHECK(attributes.type == cudaMemoryTypeDevice && attributes.device == 0);
  OK(cudaPointerGetAttributes(&attributes, host.data()));
  CHECK(attributes.type == cudaMemoryTypeUnregistered);
  OK(cudaFree(device));
  /* A freed device pointer is refused, whatever the kind says. */
  CHECK_ERR(cudaMemcpy(device, host.data(), 64, cudaMemcpyDefault), cudaErrorInvalidValue);
  CHECK_ERR(cudaMemcpy(host.data(), device, 64, cudaMemcpyDefault), cudaErrorInvalidValue);
  CHECK_ERR(cudaFree(device), cudaErrorInvalidValue);
  /* Registration. */
  OK(cudaHostRegister(host.data(), 4096, cudaHostRegisterPortable));
  CHECK_ERR(cudaHostRegister(host.data() + 1024, 1024, 0), cudaErrorHostMemoryAlreadyRegistered);
  OK(cudaPointerGetAttributes(&attributes, host.data() + 10));
  CHECK(attributes.type == cudaMemoryTypeHost);
  CHECK_ERR(cudaHostUnregister(host.data() + 1), cudaErrorHostMemoryNotRegistered);
  OK(cudaHostUnregister(host.data()));
  CHECK_ERR(cudaHostUnregister(host.data()), cudaErrorHostMemoryNotRegistered);
  /* Two registrations side by side are one pinned buffer: a copy across them is
   * asynchronous (it returns while the stream is held). */
  OK(cudaMalloc(&device, 4096));
  OK(cudaHostRegister(host.data(), 2048, 0));
  OK(cudaHostRegister(host.data() + 2048, 2048, 0));
  cudaStream_t stream = new_stream();
  gate held;
  OK(cudaLaunchHostFunc(stream, wait_at_gate, &held));
  OK(cudaMemcpyAsync(host.data(), device, 4096, cudaMemcpyDeviceToHost, stream));
  held.open = true;
  OK(cudaStreamSynchronize(stream));
  CHECK(all_bytes(host.data(), 4096, 0xCD));
  OK(cudaHostUnregister(host.data()));
  OK(cudaHostUnregister(host.data() + 2048));
  OK(cudaStreamDestroy(stream));
  OK(cudaFree(device));
  size_t free_bytes = 0, total = 0;
  OK(cudaMemGetInfo(&free_bytes, &total));
  CHECK(total == 80ull << 30 && free_bytes > 0 && free_bytes <= total);
  (void)cudaGetLastError();
}

/* ---- host functions and errors ------------------------------------------------------------ */

struct calls_inside {
  cudaError_t malloc_err = cudaSuccess, query_err = cudaSuccess, last_err = cudaSuccess, record_err = cudaSuccess;
  cudaEvent_t event = nullptr;
};
void CUDART_CB call_cuda(void *data) {
  calls_inside *c = (calls_inside *)data;
  void *p = nullptr;
  c->malloc_err = cudaMalloc(&p, 64);
  c->query_err = cudaStreamQuery(0);
  c->record_err = cudaEventRecord(c->event, 0);
  c->last_err = cudaGetLastError();
}

void test_host_function_not_permitted() {
  cudaStream_t stream = new_stream();
  calls_inside calls;
  OK(cudaEventCreate(&calls.event));
  OK(cudaLaunchHostFunc(stream, call_cuda, &calls));
  OK(cudaStreamSynchronize(stream));
  CHECK(calls.malloc_err == cudaErrorNotPermitted && calls.query_err == cudaErrorNotPermitted);
  CHECK(calls.record_err == cudaErrorNotPermitted && calls.last_err == cudaErrorNotPermitted);
  CHECK_ERR(cudaGetLastError(), cudaSuccess); /* the caller's thread is untouched */
  CHECK_ERR(cudaLaunchHostFunc(stream, nullptr, nullptr), cudaErrorInvalidValue);
  OK(cudaEventDestroy(calls.event));
  OK(cudaStreamDestroy(stream));
  (void)cudaGetLastError();
}

void test_sticky_and_non_sticky_errors() {
  void *p = nullptr;
  CHECK_ERR(cudaMalloc(nullptr, 64), cudaErrorInvalidValue);
  CHECK_ERR(cudaPeekAtLastError(), cudaErrorInvalidValue);
  CHECK_ERR(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK_ERR(cudaGetLastError(), cudaSuccess);
  OK(cudaMalloc(&p, 64));
  CHECK(std::string(cudaGetErrorName(cudaErrorStreamCaptureImplicit)) == "cudaErrorStreamCaptureImplicit");
  CHECK(std::string(cudaGetErrorString(cudaErrorInvalidValue)) == "invalid argument");
  /* An operation of device 1 fails as a faulting kernel does: the device's context is
   * spoilt for good; device 0 is not. */
  OK(cudaSetDevice(1));
  cudaStream_t stream = new_stream();
  {
    std::lock_guard<std::mutex> hold(plm_emu::api_lock());
    plm_emu::enqueue(*plm_emu::find_stream(stream), "a faulting operation",
                     [](const plm_emu::op_context &) { return cudaErrorIllegalAddress; });
  }
  CHECK_ERR(cudaStreamSynchronize(stream), cudaErrorIllegalAddress);
  void *q = nullptr;
  CHECK_ERR(cudaMalloc(&q, 64), cudaErrorIllegalAddress);
  CHECK_ERR(cudaGetLastError(), cudaErrorIllegalAddress);
  CHECK_ERR(cudaGetLastError(), cudaErrorIllegalAddress);
  /* Later work of the device is skipped. */
  std::atomic<int> ran{0};
  CHECK_ERR(cudaLaunchHostFunc(stream, count_up, &ran), cudaErrorIllegalAddress);
  OK(cudaSetDevice(0));
  (void)cudaGetLastError();
  OK(cudaFree(p));
  CHECK(ran == 0);
}

void test_destroyed_handles() {
  cudaStream_t stream = new_stream();
  gate held;
  std::atomic<int> ran{0};
  OK(cudaLaunchHostFunc(stream, wait_at_gate, &held));
  OK(cudaLaunchHostFunc(stream, count_up, &ran));
  OK(cudaStreamDestroy(stream)); /* returns at once; the work still runs */
  CHECK_ERR(cudaStreamQuery(stream), cudaErrorInvalidResourceHandle);
  CHECK_ERR(cudaStreamDestroy(stream), cudaErrorInvalidResourceHandle);
  CHECK_ERR(cudaLaunchHostFunc(stream, count_up, &ran), cudaErrorInvalidResourceHandle);
  held.open = true;
  for (int i = 0; i < 2000 && ran == 0; i++) std::this_thread::sleep_for(1ms);
  CHECK(ran == 1);
  CHECK_ERR(cudaStreamSynchronize((cudaStream_t)0x5678), cudaErrorInvalidResourceHandle);
  CHECK_ERR(cudaStreamDestroy(0), cudaErrorInvalidResourceHandle);
  cudaEvent_t event = nullptr;
  OK(cudaEventCreate(&event));
  OK(cudaEventDestroy(event));
  CHECK_ERR(cudaEventQuery(event), cudaErrorInvalidResourceHandle);
  CHECK_ERR(cudaEventRecord(event, 0), cudaErrorInvalidResourceHandle);
  cudaMemPool_t pool = nullptr;
  cudaMemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  OK(cudaMemPoolCreate(&pool, &props));
  OK(cudaMemPoolDestroy(pool));
  CHECK_ERR(cudaMemPoolTrimTo(pool, 0), cudaErrorInvalidValue);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  OK(cudaGraphCreate(&graph, 0));
  OK(cudaGraphInstantiate(&exec, graph, 0));
  OK(cudaGraphDestroy(graph));
  CHECK_ERR(cudaGraphInstantiate(&exec, graph, 0), cudaErrorInvalidResourceHandle);
  OK(cudaGraphLaunch(exec, 0)); /* the executable graph lives on */
  OK(cudaGraphExecDestroy(exec));
  CHECK_ERR(cudaGraphLaunch(exec, 0), cudaErrorInvalidResourceHandle);
  OK(cudaStreamSynchronize(0));
  (void)cudaGetLastError();
}

/* ---- capture and graphs -------------------------------------------------------------------- */

void test_capture_pageable_copy() {
  cudaStream_t stream = new_stream();
  void *device = nullptr;
  OK(cudaMalloc(&device, 4096));
  std::vector<char> pageable(4096);
  OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  CHECK(capture_status(stream) == cudaStreamCaptureStatusActive);
  CHECK_ERR(cudaMemcpyAsync(device, pageable.data(), 4096, cudaMemcpyHostToDevice, stream),
            cudaErrorStreamCaptureUnsupported);
  CHECK(capture_status(stream) == cudaStreamCaptureStatusInvalidated);
  CHECK_ERR(cudaMemsetAsync(device, 0, 4096, stream), cudaErrorStreamCaptureInvalidated);
  end_invalidated(stream);
  OK(cudaMemsetAsync(device, 0, 4096, stream)); /* out of capture, the stream works */
  OK(cudaStreamSynchronize(stream));
  OK(cudaFree(device));
  OK(cudaStreamDestroy(stream));
}

/* One illegal call in a fresh capture of the given mode: the error it gets, and
 * whether it invalidated the capture. */
void illegal_call(cudaStreamCaptureMode mode, cudaError_t want, bool invalidates,
                  const std::function<cudaError_t(cudaStream_t)> &call, unsigned flags = cudaStreamNonBlocking) {
  static int count = 0;
  const int which = ++count;
  cudaStream_t stream = new_stream(flags);
  OK(cudaStreamBeginCapture(stream, mode));
  try {
    CHECK_ERR(call(stream), want);
    CHECK(capture_status(stream) ==
          (invalidates ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive));
  } catch (const test_failure &) {
    std::fprintf(stderr, "  (illegal call %d, capture mode %d)\n", which, (int)mode);
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream, &graph);
    throw;
  }
  if (invalidates) end_invalidated(stream);
  else end_intact(stream);
  OK(cudaStreamDestroy(stream));
  (void)cudaGetLastError();
}

void test_capture_illegal_calls() {
  const cudaStreamCaptureMode modes[] = {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                                         cudaStreamCaptureModeRelaxed};
  for (cudaStreamCaptureMode mode : modes) {
    const bool relaxed = mode == cudaStreamCaptureModeRelaxed, global = mode == cudaStreamCaptureModeGlobal;
    illegal_call(mode, cudaErrorStreamCaptureUnsupported, true, [](cudaStream_t s) { return cudaStreamSynchronize(s); });
    illegal_call(mode, cudaErrorStreamCaptureUnsupported, true, [](cudaStream_t s) { return cudaStreamQuery(s); });
    illegal_call(mode, cudaErrorStreamCaptureUnsupported, true, [](cudaStream_t) { return cudaDeviceSynchronize(); });
    illegal_call(mode, cudaErrorCapturedEvent, true, [](cudaStream_t s) {
      cudaEvent_t event = nullptr;
      cudaEventCreate(&event);
      cudaEventRecord(event, s);
      cudaError_t err = cudaEventQuery(event);
      cudaEventDestroy(event);
      return err;
    });
    illegal_call(mode, cudaErrorCapturedEvent, true, [](cudaStream_t s) {
      cudaEvent_t event = nullptr;
      cudaEventCreate(&event);
      cudaEventRecord(event, s);
      cudaError_t err = cudaEventSynchronize(event);
      cudaEventDestroy(event);
      return err;
    });
    /* The legacy stream, while a blocking stream captures (and not a non-blocking one). */
    illegal_call(mode, cudaErrorStreamCaptureImplicit, true, [](cudaStream_t) { return cudaStreamQuery(0); },
                 cudaStreamDefault);
    illegal_call(mode, cudaErrorStreamCaptureImplicit, true,
                 [](cudaStream_t) { return cudaLaunchHostFunc(0, sleep_30ms, nullptr); }, cudaStreamDefault);
    illegal_call(mode, cudaSuccess, false, [](cudaStream_t) { return cudaLaunchHostFunc(0, sleep_30ms, nullptr); });
    /* Potentially unsafe calls from the capturing thread. */
    illegal_call(mode, relaxed ? cudaSuccess : cudaErrorStreamCaptureUnsupported, !relaxed, [](cudaStream_t) {
      void *p = nullptr;
      cudaError_t err = cudaMalloc(&p, 64);
      if (p) cudaFree(p);
      return err;
    });
    illegal_call(mode, relaxed ? cudaSuccess : cudaErrorStreamCaptureUnsupported, !relaxed, [](cudaStream_t) {
      cudaEvent_t event = nullptr;
      cudaEventCreate(&event);
      cudaError_t err = cudaEventQuery(event);
      cudaEventDestroy(event);
      return err;
    });
    /* ... and from another thread: only a Global capture forbids them. */
    illegal_call(mode, global ? cudaErrorStreamCaptureUnsupported : cudaSuccess, global, [](cudaStream_t) {
      cudaError_t err = cudaSuccess;
      std::thread([&] {
        void *p = nullptr;
        err = cudaMalloc(&p, 64);
        if (p) cudaFree(p);
      }).join();
      return err;
    });
    /* A wait on an event recorded outside the capture, without cudaEventWaitExternal. */
    illegal_call(mode, cudaErrorStreamCaptureIsolation, true, [](cudaStream_t s) {
      cudaEvent_t event = nullptr;
      cudaEventCreate(&event);
      cudaEventRecord(event, cudaStreamPerThread);
      cudaError_t err = cudaStreamWaitEvent(s, event, 0);
      cudaEventDestroy(event);
      return err;
    });
  }
  /* A thread in Relaxed mode may call them beside another thread's Global capture. */
  cudaStream_t stream = new_stream();
  OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  cudaError_t err = cudaErrorUnknown;
  std::thread([&] {
    cudaStreamCaptureMode mine = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mine);
    void *p = nullptr;
    err = cudaMalloc(&p, 64);
    cudaFree(p);
  }).join();
  CHECK_ERR(err, cudaSuccess);
  CHECK(capture_status(stream) == cudaStreamCaptureStatusActive);
  /* A non-Relaxed capture is ended by its own thread. */
  std::thread([&] {
    cudaGraph_t graph = nullptr;
    err = cudaStreamEndCapture(stream, &graph);
  }).join();
  CHECK_ERR(err, cudaErrorStreamCaptureWrongThread);
  CHECK_ERR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
  CHECK_ERR(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
  end_intact(stream);
  OK(cudaStreamDestroy(stream));
  (void)cudaGetLastError();
}

void test_fork_join_and_unjoined() {
  cudaStream_t origin = new_stream(), side = new_stream();
  cudaEvent_t fork = nullptr, join = nullptr;
  OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  OK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  void *a = nullptr, *b = nullptr;
  OK(cudaMalloc(&a, 4096));
  OK(cudaMalloc(&b, 4096));
  OK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  OK(cudaMemsetAsync(a, 1, 4096, origin));
  OK(cudaEventRecord(fork, origin));
  OK(cudaStreamWaitEvent(side, fork, 0));
  CHECK(capture_status(side) == cudaStreamCaptureStatusActive);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long origin_id = 0, side_id = 1;
  const cudaGraphNode_t *deps = nullptr;
  size_t ndeps = 0;
  OK(cudaStreamGetCaptureInfo(origin, &status, &origin_id, nullptr, nullptr, nullptr, nullptr));
  OK(cudaStreamGetCaptureInfo(side, &status, &side_id, nullptr, &deps, nullptr, &ndeps));
  CHECK(origin_id == side_id && ndeps == 1 && deps != nullptr);
  OK(cudaMemcpyAsync(b, a, 4096, cudaMemcpyDeviceToDevice, side));
  OK(cudaEventRecord(join, side));
  OK(cudaStreamWaitEvent(origin, join, 0));
  cudaGraph_t graph = nullptr;
  OK(cudaStreamEndCapture(origin, &graph));
  CHECK(capture_status(side) == cudaStreamCaptureStatusNone);
  cudaGraphExec_t exec = nullptr;
  OK(cudaGraphInstantiate(&exec, graph, 0));
  OK(cudaGraphLaunch(exec, origin));
  std::vector<unsigned char> host(4096);
  OK(cudaStreamSynchronize(origin));
  OK(cudaMemcpy(host.data(), b, 4096, cudaMemcpyDeviceToHost));
  CHECK(all_bytes(host.data(), 4096, 1));
  OK(cudaGraphExecDestroy(exec));
  OK(cudaGraphDestroy(graph));
  /* The same without the join back: refused at the end, and no stream stays captured. */
  OK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  OK(cudaEventRecord(fork, origin));
  OK(cudaStreamWaitEvent(side, fork, 0));
  OK(cudaMemsetAsync(b, 2, 4096, side));
  graph = (cudaGraph_t)0x1;
  CHECK_ERR(cudaStreamEndCapture(origin, &graph), cudaErrorStreamCaptureUnjoined);
  CHECK(graph == nullptr);
  CHECK(capture_status(side) == cudaStreamCaptureStatusNone && capture_status(origin) == cudaStreamCaptureStatusNone);
  /* A joined stream cannot end the capture. */
  OK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeRelaxed));
  OK(cudaEventRecord(fork, origin));
  OK(cudaStreamWaitEvent(side, fork, 0));
  CHECK_ERR(cudaStreamEndCapture(side, &graph), cudaErrorStreamCaptureUnmatched);
  end_invalidated(origin);
  OK(cudaFree(a));
  OK(cudaFree(b));
  OK(cudaEventDestroy(fork));
  OK(cudaEventDestroy(join));
  OK(cudaStreamDestroy(origin));
  OK(cudaStreamDestroy(side));
  (void)cudaGetLastError();
}

void test_graph_replay() {
  cudaStream_t stream = new_stream();
  int *pinned = nullptr;
  OK(cudaMallocHost((void **)&pinned, sizeof(int)));
  *pinned = 0;
  std::atomic<int> runs{0};
  void *device = nullptr;
  OK(cudaMalloc(&device, 256));
  int value = 41;
  OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  OK(launch_store(stream, value, pinned)); /* captured with 41 */
  value = 42;
  OK(cudaMemsetAsync(device, 3, 256, stream));
  OK(cudaLaunchHostFunc(stream, count_up, &runs));
  cudaGraph_t graph = nullptr;
  OK(cudaStreamEndCapture(stream, &graph));
  CHECK(runs == 0 && *pinned == 0); /* nothing ran during the capture */
  cudaGraphExec_t exec = nullptr;
  CHECK_ERR(cudaGraphInstantiate(&exec, graph, 1ull << 40), cudaErrorInvalidValue);
  OK(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  OK(cudaGraphDestroy(graph));
  OK(cudaGraphLaunch(exec, stream));
  OK(cudaGraphLaunch(exec, cudaStreamPerThread)); /* waits for the first launch */
  OK(cudaStreamSynchronize(cudaStreamPerThread));
  CHECK(runs == 2 && *pinned == 41);
  std::vector<unsigned char> host(256);
  OK(cudaMemcpy(host.data(), device, 256, cudaMemcpyDeviceToHost));
  CHECK(all_bytes(host.data(), 256, 3));
  /* A graph launched into a capture is refused (child graphs are not emulated). */
  cudaStream_t other = new_stream();
  OK(cudaStreamBeginCapture(other, cudaStreamCaptureModeRelaxed));
  CHECK_ERR(cudaGraphLaunch(exec, other), cudaErrorStreamCaptureUnsupported);
  end_invalidated(other);
  OK(cudaGraphExecDestroy(exec));
  OK(cudaFree(device));
  OK(cudaFreeHost(pinned));
  OK(cudaStreamDestroy(stream));
  OK(cudaStreamDestroy(other));
}

void test_external_event_nodes() {
  /* A graph records an event at each replay (cudaEventRecordExternal) and waits for one
   * recorded outside it (cudaEventWaitExternal). */
  cudaStream_t stream = new_stream(), outside = new_stream();
  cudaEvent_t done = nullptr, ready = nullptr;
  OK(cudaEventCreate(&done));
  OK(cudaEventCreate(&ready));
  std::atomic<int> value{0};
  seen_value read{&value};
  gate held;
  gated_write write{&held, &value};
  OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  OK(cudaStreamWaitEvent(stream, ready, cudaEventWaitExternal));
  OK(cudaLaunchHostFunc(stream, read_value, &read));
  OK(cudaEventRecordWithFlags(done, stream, cudaEventRecordExternal));
  cudaGraph_t graph = nullptr;
  OK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  OK(cudaGraphInstantiate(&exec, graph, 0));
  OK(cudaLaunchHostFunc(outside, write_after_gate, &write));
  OK(cudaEventRecord(ready, outside));
  OK(cudaGraphLaunch(exec, stream));
  std::this_thread::sleep_for(30ms);
  CHECK_ERR(cudaEventQuery(done), cudaErrorNotReady);
  held.open = true;
  OK(cudaEventSynchronize(done));
  CHECK(read.seen == 1);
  OK(cudaStreamSynchronize(stream));
  OK(cudaGraphExecDestroy(exec));
  OK(cudaGraphDestroy(graph));
  OK(cudaEventDestroy(done));
  OK(cudaEventDestroy(ready));
  OK(cudaStreamDestroy(stream));
  OK(cudaStreamDestroy(outside));
}

/* ---- memory pools ------------------------------------------------------------------------- */

uint64_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  uint64_t value = 0;
  OK(cudaMemPoolGetAttribute(pool, attr, &value));
  return value;
}

void test_mempool() {
  cudaMemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool = nullptr;
  OK(cudaMemPoolCreate(&pool, &props));
  uint64_t keep_all = UINT64_MAX;
  OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  CHECK(pool_attribute(pool, cudaMemPoolAttrReleaseThreshold) == UINT64_MAX);
  int flag = 1;
  OK(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &flag));
  CHECK(flag == 1);
  cudaStream_t s1 = new_stream(), s2 = new_stream();
  void *first = nullptr;
  OK(cudaMallocFromPoolAsync(&first, 1000, pool, s1));
  CHECK(((uintptr_t)first & 255) == 0);
  CHECK(pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent) >= 1000);
  /* The block holds 0xCD once its allocation has run. */
  std::vector<unsigned char> host(1000);
  OK(cudaMemcpyAsync(host.data(), first, 1000, cudaMemcpyDeviceToHost, s1));
  CHECK(all_bytes(host.data(), 1000, 0xCD));
  OK(cudaFreeAsync(first, s1));
  CHECK_ERR(cudaFreeAsync(first, s1), cudaErrorInvalidValue);
  CHECK_ERR(cudaMemcpyAsync(first, host.data(), 16, cudaMemcpyDefault, s1), cudaErrorInvalidValue);
  /* Quarantine: the next allocations do not get the freed block at once. */
  std::vector<void *> later;
  for (int i = 0; i < 8; i++) {
    void *p = nullptr;
    OK(cudaMallocFromPoolAsync(&p, 1000, pool, s1));
    CHECK(p != first);
    later.push_back(p);
  }
  for (void *p : later) OK(cudaFreeAsync(p, s1));
  /* Out of quarantine, another stream may not take it without an order, once the pool
   * allows neither opportunistic reuse nor inserted dependencies... */
  int off = 0;
  OK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &off));
  OK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &off));
  gate held;
  OK(cudaLaunchHostFunc(s1, wait_at_gate, &held)); /* nothing of s1's frees has finished */
  void *other = nullptr;
  OK(cudaMallocFromPoolAsync(&other, 1000, pool, s2));
  CHECK(other != first);
  /* ... but it may once it waits for an event recorded after the free. */
  cudaEvent_t freed = nullptr;
  OK(cudaEventCreate(&freed));
  OK(cudaEventRecord(freed, s1));
  OK(cudaStreamWaitEvent(s2, freed, 0));
  void *reused = nullptr;
  OK(cudaMallocFromPoolAsync(&reused, 1000, pool, s2));
  CHECK(reused == first);
  held.open = true;
  OK(cudaFreeAsync(reused, s2));
  OK(cudaFreeAsync(other, s2));
  OK(cudaStreamSynchronize(s1));
  OK(cudaStreamSynchronize(s2));
  const uint64_t reserved = pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent);
  CHECK(reserved >= 10 * 1024 && pool_attribute(pool, cudaMemPoolAttrReservedMemHigh) >= reserved);
  CHECK(pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent) == 0);
  /* Trimming gives back what the host knows to be free. */
  OK(cudaMemPoolTrimTo(pool, 0));
  CHECK(pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent) == 0);
  uint64_t zero = 0, nonzero = 5;
  OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero));
  CHECK(pool_attribute(pool, cudaMemPoolAttrReservedMemHigh) == 0);
  CHECK_ERR(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &nonzero), cudaErrorInvalidValue);
  CHECK_ERR(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &zero), cudaErrorInvalidValue);
  /* Access: the owner reads and writes; device 1 until given access, nothing. */
  cudaMemLocation location = {cudaMemLocationTypeDevice, 1};
  cudaMemAccessFlags access = cudaMemAccessFlagsProtReadWrite;
  OK(cudaMemPoolGetAccess(&access, pool, &location));
  CHECK(access == cudaMemAccessFlagsProtNone);
  cudaMemAccessDesc desc = {location, cudaMemAccessFlagsProtReadWrite};
  OK(cudaMemPoolSetAccess(pool, &desc, 1));
  OK(cudaMemPoolGetAccess(&access, pool, &location));
  CHECK(access == cudaMemAccessFlagsProtReadWrite);
  location.id = 0;
  OK(cudaMemPoolGetAccess(&access, pool, &location));
  CHECK(access == cudaMemAccessFlagsProtReadWrite);
  /* cudaMallocAsync takes the device's current pool; its default pool cannot go. */
  cudaMemPool_t fallback = nullptr;
  OK(cudaDeviceGetDefaultMemPool(&fallback, 0));
  CHECK_ERR(cudaMemPoolDestroy(fallback), cudaErrorInvalidValue);
  OK(cudaDeviceSetMemPool(0, pool));
  void *from_current = nullptr;
  OK(cudaMallocAsync(&from_current, 512, s1));
  OK(cudaStreamSynchronize(s1));
  CHECK(pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent) >= 512);
  OK(cudaFree(from_current)); /* a pool's allocation may also go through cudaFree */
  OK(cudaMemPoolDestroy(pool));
  cudaMemPool_t now = nullptr;
  OK(cudaDeviceGetMemPool(&now, 0));
  CHECK(now == fallback);
  /* In a capture, allocation is refused (memory nodes are not emulated). */
  OK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed));
  CHECK_ERR(cudaMallocAsync(&from_current, 512, s1), cudaErrorStreamCaptureUnsupported);
  end_invalidated(s1);
  OK(cudaEventDestroy(freed));
  OK(cudaStreamDestroy(s1));
  OK(cudaStreamDestroy(s2));
  (void)cudaGetLastError();
}

/* ---- the driver's virtual memory calls ------------------------------------------------------ */

void test_vmm() {
  PFN_cuMemGetAllocationGranularity_v10020 granularity_of = nullptr;
  PFN_cuMemAddressReserve_v10020 reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  OK(cudaGetDriverEntryPointByVersion("cuMemGetAllocationGranularity", (void **)&granularity_of, 12000,
                                      cudaEnableDefault, &status));
  CHECK(status == cudaDriverEntryPointSuccess && granularity_of);
  OK(cudaGetDriverEntryPointByVersion("cuMemAddressReserve", (void **)&reserve, 12000, cudaEnableDefault, &status));
  OK(cudaGetDriverEntryPointByVersion("cuMemAddressFree", (void **)&address_free, 12000, cudaEnableDefault, &status));
  OK(cudaGetDriverEntryPointByVersion("cuMemCreate", (void **)&create, 12000, cudaEnableDefault, &status));
  OK(cudaGetDriverEntryPointByVersion("cuMemRelease", (void **)&release, 12000, cudaEnableDefault, &status));
  OK(cudaGetDriverEntryPointByVersion("cuMemMap", (void **)&map, 12000, cudaEnableDefault, &status));
  OK(cudaGetDriverEntryPointByVersion("cuMemUnmap", (void **)&unmap, 12000, cudaEnableDefault, &status));
  OK(cudaGetDriverEntryPointByVersion("cuMemSetAccess", (void **)&set_access, 12000, cudaEnableDefault, &status));
  CHECK(reserve && address_free && create && release && map && unmap && set_access);
  void *missing = (void *)0x1;
  OK(cudaGetDriverEntryPointByVersion("cuNoSuchCall", &missing, 12000, cudaEnableDefault, &status));
  CHECK(missing == nullptr && status == cudaDriverEntryPointSymbolNotFound);

  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  CHECK(granularity_of(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS);
  CHECK(granularity == 2u << 20);
  CUdeviceptr base = 0;
  CHECK(reserve(&base, 3 * granularity, 0, 0, 0) == CUDA_SUCCESS);
  CHECK(base % granularity == 0);
  CUmemGenericAllocationHandle one = 0, two = 0;
  CHECK(create(&one, granularity + 1, &prop, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(create(&one, granularity, &prop, 0) == CUDA_SUCCESS);
  CHECK(create(&two, granularity, &prop, 0) == CUDA_SUCCESS);
  CHECK(map(base + 1, granularity, 0, one, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(map(base, granularity, 0, one, 0) == CUDA_SUCCESS);
  CHECK(map(base, granularity, 0, two, 0) == CUDA_ERROR_INVALID_VALUE); /* over a mapping */
  CUmemAccessDesc access;
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK(set_access(base, 2 * granularity, &access, 1) == CUDA_ERROR_INVALID_VALUE); /* half unmapped */
  CHECK(set_access(base, granularity, &access, 1) == CUDA_SUCCESS);
  /* Write through the mapping, as a copy does, and read it back. */
  std::vector<unsigned char> pattern(granularity, 0x5A), back(granularity, 0);
  OK(cudaMemcpy((void *)base, pattern.data(), granularity, cudaMemcpyHostToDevice));
  OK(cudaMemcpy(back.data(), (void *)base, granularity, cudaMemcpyDeviceToHost));
  CHECK(back == pattern);
  cudaPointerAttributes attributes;
  OK(cudaPointerGetAttributes(&attributes, (void *)(base + 5)));
  CHECK(attributes.type == cudaMemoryTypeDevice);
  CHECK(unmap(base, granularity / 2) == CUDA_ERROR_INVALID_VALUE);
  CHECK(unmap(base + granularity, granularity) == CUDA_ERROR_INVALID_VALUE); /* not mapped */
  CHECK(unmap(base, granularity) == CUDA_SUCCESS);
  CHECK_ERR(cudaMemcpy(back.data(), (void *)base, 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  /* Another handle at the same address: its own memory (undefined, 0xCD here). */
  CHECK(map(base, granularity, 0, two, 0) == CUDA_SUCCESS);
  CHECK(set_access(base, granularity, &access, 1) == CUDA_SUCCESS);
  OK(cudaMemcpy(back.data(), (void *)base, granularity, cudaMemcpyDeviceToHost));
  CHECK(all_bytes(back.data(), granularity, 0xCD));
  /* Releasing a mapped handle is allowed; its memory stays until unmapped. */
  CHECK(release(two) == CUDA_SUCCESS);
  CHECK(release(two) == CUDA_ERROR_INVALID_VALUE);
  OK(cudaMemcpy(back.data(), (void *)base, granularity, cudaMemcpyDeviceToHost));
  CHECK(address_free(base, 3 * granularity) == CUDA_ERROR_INVALID_VALUE); /* still mapped */
  CHECK(unmap(base, granularity) == CUDA_SUCCESS);
  /* The first handle kept what was written through it. */
  CHECK(map(base + granularity, granularity, 0, one, 0) == CUDA_SUCCESS);
  CHECK(set_access(base + granularity, granularity, &access, 1) == CUDA_SUCCESS);
  OK(cudaMemcpy(back.data(), (void *)(base + granularity), granularity, cudaMemcpyDeviceToHost));
  CHECK(back == pattern);
  /* Mappings side by side are one buffer to a copy (a pool's block may span two pages),
   * and a copy past the last one is refused. */
  CUmemGenericAllocationHandle three = 0;
  CHECK(create(&three, granularity, &prop, 0) == CUDA_SUCCESS);
  CHECK(map(base + 2 * granularity, granularity, 0, three, 0) == CUDA_SUCCESS);
  CHECK(set_access(base + 2 * granularity, granularity, &access, 1) == CUDA_SUCCESS);
  std::vector<unsigned char> across(granularity, 0x3C);
  OK(cudaMemcpy((void *)(base + granularity + granularity / 2), across.data(), granularity, cudaMemcpyHostToDevice));
  OK(cudaMemsetAsync((void *)(base + granularity), 0x11, 2 * granularity, 0));
  OK(cudaMemcpy(back.data(), (void *)(base + granularity + 64), granularity, cudaMemcpyDeviceToHost));
  CHECK(all_bytes(back.data(), granularity, 0x11));
  CHECK_ERR(cudaMemcpy(across.data(), (void *)(base + 2 * granularity + 64), granularity, cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue);
  CHECK(unmap(base + 2 * granularity, granularity) == CUDA_SUCCESS);
  CHECK(release(three) == CUDA_SUCCESS);
  CHECK_ERR(cudaMemcpy(back.data(), (void *)(base + granularity + 64), granularity, cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue); /* the second mapping is gone */
  CHECK(unmap(base + granularity, granularity) == CUDA_SUCCESS);
  CHECK(release(one) == CUDA_SUCCESS);
  CHECK(map(base, granularity, 0, one, 0) == CUDA_ERROR_INVALID_VALUE); /* released */
  CHECK(address_free(base, 2 * granularity) == CUDA_ERROR_INVALID_VALUE);
  CHECK(address_free(base, 3 * granularity) == CUDA_SUCCESS);
  (void)cudaGetLastError();
}


/* ---- stream order, through check/'s reports ------------------------------------------------ */

/* Scenarios run in a child process: a defect report aborts it. Each returns normally
 * when nothing was reported. */
void scenario_two_streams(bool ordered) {
  cudaStream_t writer = new_stream(), reader = new_stream();
  void *device = nullptr;
  int *pinned = nullptr;
  OK(cudaMalloc(&device, 4096));
  OK(cudaMallocHost((void **)&pinned, 4096));
  gate held;
  OK(cudaLaunchHostFunc(writer, wait_at_gate, &held));
  OK(cudaMemsetAsync(device, 1, 4096, writer));
  if (ordered) {
    cudaEvent_t written = nullptr;
    OK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
    OK(cudaEventRecord(written, writer));
    OK(cudaStreamWaitEvent(reader, written, 0));
    OK(cudaEventDestroy(written));
  }
  OK(cudaMemcpyAsync(pinned, device, 4096, cudaMemcpyDeviceToHost, reader));
  std::this_thread::sleep_for(20ms);
  held.open = true;
  OK(cudaStreamSynchronize(reader));
  OK(cudaStreamSynchronize(writer));
}

/* A pool block written on one stream after its free on another, with no order between. */
void scenario_use_after_free(bool ordered) {
  cudaStream_t owner = new_stream(), user = new_stream();
  void *block = nullptr;
  OK(cudaMallocAsync(&block, 4096, owner));
  OK(cudaStreamSynchronize(owner));
  gate held;
  OK(cudaLaunchHostFunc(user, wait_at_gate, &held));
  OK(cudaMemsetAsync(block, 2, 4096, user));
  if (ordered) {
    cudaEvent_t used = nullptr;
    OK(cudaEventCreateWithFlags(&used, cudaEventDisableTiming));
    OK(cudaEventRecord(used, user));
    OK(cudaStreamWaitEvent(owner, used, 0));
    OK(cudaEventDestroy(used));
  }
  OK(cudaFreeAsync(block, owner));
  std::this_thread::sleep_for(20ms);
  held.open = true;
  OK(cudaStreamSynchronize(user));
  OK(cudaStreamSynchronize(owner));
}

/* A graph whose second node reads what its first wrote: the capture's edge orders them. */
void scenario_graph_edges(bool ordered) {
  cudaStream_t origin = new_stream(), side = new_stream();
  void *device = nullptr;
  int *pinned = nullptr;
  OK(cudaMalloc(&device, 4096));
  OK(cudaMallocHost((void **)&pinned, 4096));
  cudaEvent_t fork = nullptr, join = nullptr;
  OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  OK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  OK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  OK(cudaEventRecord(fork, origin));
  OK(cudaStreamWaitEvent(side, fork, 0));
  OK(cudaMemsetAsync(device, 3, 4096, side));
  if (ordered) {
    OK(cudaEventRecord(join, side));
    OK(cudaStreamWaitEvent(origin, join, 0));
  }
  OK(cudaMemcpyAsync(pinned, device, 4096, cudaMemcpyDeviceToHost, origin));
  if (!ordered) {
    OK(cudaEventRecord(join, side));
    OK(cudaStreamWaitEvent(origin, join, 0));
  }
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  OK(cudaStreamEndCapture(origin, &graph));
  OK(cudaGraphInstantiate(&exec, graph, 0));
  OK(cudaGraphLaunch(exec, origin));
  OK(cudaStreamSynchronize(origin));
}

struct scenario {
  const char *name;
  void (*run)(bool ordered);
};
const scenario scenarios[] = {
    {"two_streams", scenario_two_streams},
    {"use_after_free", scenario_use_after_free},
    {"graph_edges", scenario_graph_edges},
};

/* Run a scenario in a child: whether it ended by a report (an abort), and its stderr. */
bool scenario_reported(const char *self, const char *name, bool ordered, std::string *err) {
  int out[2];
  CHECK(pipe(out) == 0);
  const pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    dup2(out[1], 2);
    close(out[0]);
    /* A scenario that aborts leaves its memory behind: no leak report in the child. */
    std::string asan = getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "";
    setenv("ASAN_OPTIONS", (asan + (asan.empty() ? "" : ":") + "detect_leaks=0").c_str(), 1);
    execl(self, self, "--scenario", name, ordered ? "ordered" : "unordered", (char *)nullptr);
    _exit(127);
  }
  close(out[1]);
  char buffer[4096];
  ssize_t got;
  while ((got = read(out[0], buffer, sizeof buffer)) > 0) err->append(buffer, (size_t)got);
  close(out[0]);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  const bool aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  CHECK(aborted || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
  return aborted;
}

const char *self_path = nullptr;

[[maybe_unused]] void test_stream_order_reports() {
  for (const scenario &s : scenarios) {
    std::string unordered, ordered;
    const bool caught = scenario_reported(self_path, s.name, false, &unordered);
    const bool false_alarm = scenario_reported(self_path, s.name, true, &ordered);
    if (!caught || false_alarm || unordered.find("plume cuda emulator:") == std::string::npos)
      std::fprintf(stderr, "  scenario %s: unordered %s, ordered %s\n%s%s", s.name, caught ? "reported" : "not reported",
                   false_alarm ? "reported" : "not reported", unordered.c_str(), ordered.c_str());
    CHECK(caught && !false_alarm);
    CHECK(unordered.find("plume cuda emulator:") != std::string::npos);
  }
}

struct test_case {
  const char *name;
  void (*run)();
};

const test_case cases[] = {
    {"device_properties", test_device_properties},
    {"stream_order", test_stream_order},
    {"non_blocking_and_legacy", test_non_blocking_and_legacy},
    {"event_wait_across_streams", test_event_wait_across_streams},
    {"elapsed_time", test_elapsed_time},
    {"pageable_copies", test_pageable_copies},
    {"copy_checks", test_copy_checks},
    {"host_function_not_permitted", test_host_function_not_permitted},
    {"destroyed_handles", test_destroyed_handles},
    {"capture_pageable_copy", test_capture_pageable_copy},
    {"capture_illegal_calls", test_capture_illegal_calls},
    {"fork_join_and_unjoined", test_fork_join_and_unjoined},
    {"graph_replay", test_graph_replay},
    {"external_event_nodes", test_external_event_nodes},
    {"mempool", test_mempool},
    {"vmm", test_vmm},
#ifndef PLUME_EMU_RUNTIME_STANDINS /* a build without check/ has no reports to look at */
    {"stream_order_reports", test_stream_order_reports},
#endif
    {"sticky_and_non_sticky_errors", test_sticky_and_non_sticky_errors}, /* last: spoils device 1 */
};

}  // namespace

int main(int argc, char **argv) {
  setenv("PLUME_EMU_DEVICES", "2", 1);
  self_path = argv[0];
  if (argc == 4 && std::strcmp(argv[1], "--scenario") == 0) {
    unsetenv("PLUME_EMU_ON_DEFECT"); /* a report aborts */
    for (const scenario &s : scenarios)
      if (std::strcmp(s.name, argv[2]) == 0) {
        try {
          s.run(std::strcmp(argv[3], "ordered") == 0);
        } catch (const test_failure &) {
          return 2;
        }
        return 0;
      }
    return 3;
  }
  alarm(240); /* a wait that never ends fails the run instead of hanging it */
  int passed = 0, failed = 0;
  for (const test_case &c : cases) {
    if (argc > 1 && !std::strstr(c.name, argv[1])) continue;
    try {
      c.run();
      passed++;
      std::printf("ok   %s\n", c.name);
    } catch (const test_failure &) {
      failed++;
      std::printf("FAIL %s\n", c.name);
    }
    std::fflush(stdout);
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  std::fflush(stdout);
  return failed ? 1 : 0;
}

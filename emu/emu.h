/* emu/emu.h: the seams between the emulator's three parts (internal; C++17).
 *
 *   runtime/  the host side of the CUDA runtime (and the driver's virtual memory calls):
 *             devices, streams with a worker thread each, events, copies, memory pools,
 *             host functions, stream capture and graphs, errors. It keeps the clocks
 *             below and runs each kernel launch, when it reaches the head of its stream
 *             (or its graph node runs), through run_grid.
 *   device/   a grid of blocks on the CPU: each block's threads are fibres, warps of 32
 *             lanes that are not lockstep, barriers and warp collectives, shared memory.
 *   check/    what the emulator reports: the hooks every memory access of a kernel
 *             calls (the compiler's ThreadSanitizer instrumentation, with the emulator's
 *             own entry points), races and uninitialised reads of shared memory, bounds
 *             through AddressSanitizer's shadow, and the stream order of device memory
 *             (below).
 *
 * Stream order, checked. Every operation that runs on a stream or as a graph node (a
 * kernel, a copy, a memset, an asynchronous allocation or free) runs with a vector clock
 * (vclock): what it is ordered after. The runtime computes the clocks when an operation
 * is enqueued, never from when things happened to run:
 *   - each stream, each graph node and the host is a timeline (timeline_id); an
 *     operation enqueued on a stream gets clock = join(the stream's clock, the host's),
 *     ticked on the stream's timeline; the stream's clock becomes that;
 *   - an event recorded on a stream takes the stream's clock at that point;
 *     cudaStreamWaitEvent joins the event's clock into the waiting stream's;
 *   - the host is one timeline for all host threads (host_clock): whenever a host thread
 *     learns that an operation has finished (a synchronize, a query that says done, an
 *     event synchronize, a synchronous copy, a host function starting to run), the
 *     host's clock joins that operation's clock. One timeline for every host thread is
 *     exact here: what a host thread enqueues after another learned that X finished
 *     cannot run beside X, however the two threads passed the news (a mutex, a flag);
 *   - a memory pool that reuses a freed block on another stream (opportunistically: the
 *     free has finished; or by an inserted dependency) joins the free's clock into the
 *     allocating stream's, as the dependency it relies on.
 * check/ records, per 256-byte granule of every registered device allocation
 * (region_add), the last operation that wrote it and the last that read it, and reports
 * an access by an operation whose clock does not cover theirs: a missing event wait
 * between two streams, a block used after its free in stream order, a graph with a
 * missing edge. Deterministic: the same program gives the same report however its
 * streams happen to interleave.
 *
 * Thread safety: everything here is safe to call from any thread unless it says so. */
#ifndef PLUME_EMU_EMU_H
#define PLUME_EMU_EMU_H

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace plm_emu {

/* ---- clocks (emu/clock.cpp) ------------------------------------------------------- */

/* A timeline: a stream, a graph node, the host. Ids are never reused. */
typedef uint32_t timeline_id;

/* A new timeline, labelled for reports ("stream 0x5633... (non-blocking)"). */
timeline_id timeline_new(const std::string &label);
std::string timeline_label(timeline_id timeline);

/* A vector clock: for each timeline, the last of its operations this one is ordered
 * after (0: none). Sparse and sorted by timeline. Not thread-safe (a value type). */
class vclock {
 public:
  uint64_t at(timeline_id timeline) const;
  /* This timeline's own count goes up by one; returns the new count. */
  uint64_t tick(timeline_id timeline);
  /* Entrywise maximum. */
  void join(const vclock &other);
  /* Whether the operation at `time` on `timeline` is ordered before this clock. */
  bool covers(timeline_id timeline, uint64_t time) const { return time == 0 || at(timeline) >= time; }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<std::pair<timeline_id, uint64_t>> entries_;
};

/* The host's clock: join an operation's clock into it when any host thread learns that
 * the operation finished; read it (a copy) when enqueuing. */
void host_clock_learn(const vclock &finished);
vclock host_clock();

/* What is running: one operation of a stream or of a graph's replay. */
struct op_context {
  uint64_t id = 0;              /* unique per execution of an operation */
  timeline_id timeline = 0;     /* the stream or graph node it runs on */
  uint64_t time = 0;            /* clock.at(timeline) */
  const vclock *clock = nullptr; /* valid while it runs */
  std::string what;             /* "kernel label_tiles", "cudaMemcpyAsync host to device" */
};

uint64_t op_id_new();

/* ---- device memory, checked in stream order (check/) ------------------------------ */

/* A device allocation whose accesses are checked in stream order: cudaMalloc, a memory
 * pool's allocation, a mapping of the virtual memory calls. `what` names it in reports
 * ("cudaMalloc of 4096 bytes"). Regions do not overlap. The kRedZone bytes before and
 * after a region must belong to nothing a kernel may touch (the runtime pads its
 * allocations): an access there is reported as out of bounds, with or without
 * AddressSanitizer.
 * region_retire: the region was freed (when its free ran, in stream order): an access is
 * reported as a use after free until the addresses are added again. region_remove: the
 * addresses leave the checks (unmapped memory, memory handed back to the host). Both take
 * the base region_add was given. */
constexpr size_t kRedZone = 256;
void region_add(void *base, size_t bytes, const std::string &what);
void region_retire(void *base, const std::string &how);
void region_remove(void *base);

/* An access of [addr, addr + bytes) by an operation that is not a kernel (a copy, a
 * memset; an asynchronous allocation or free counts as a write of its block). Checked
 * against the granules' last writer and reader, then recorded. Addresses outside every
 * region are ignored. */
void record_access(const op_context &op, const void *addr, size_t bytes, bool write);

/* Mark [addr, addr + bytes) unaddressable / addressable again for the checks
 * (AddressSanitizer's manual poisoning where the build has it; nothing otherwise), so a
 * kernel or copy touching freed device memory is reported. */
void poison(const void *addr, size_t bytes);
void unpoison(const void *addr, size_t bytes);

/* Print a report of a defect (the emulator's format: "plume cuda emulator: <title>"
 * then the lines of detail) and stop the process as PLUME_EMU_ON_DEFECT says (abort by
 * default; "continue" goes on, for the emulator's own tests of several reports). */
void report_defect(const std::string &title, const std::string &detail);

/* ---- kernels (device/) -------------------------------------------------------------- */

/* One thread's run of a kernel with the arguments captured at its launch (by value, as a
 * GPU takes them): device/ calls run_thread on each thread's fibre. */
struct kernel_body {
  virtual ~kernel_body() = default;
  virtual void run_thread() const = 0;
};

struct kernel_launch {
  dim3 grid, block;
  size_t dynamic_shared = 0;
  const char *name = "";            /* as written at the launch ("label_tiles") */
  const void *function = nullptr;   /* the kernel's address, where the launch names one */
  const char *site = "";            /* file:line of the launch */
  std::shared_ptr<const kernel_body> body;
};

/* Run every block of the launch on this thread (and on the emulator's block threads,
 * PLUME_EMU_BLOCK_THREADS), returning when all are done. cudaSuccess, or the error the
 * kernel raised (a trap). Defects are reported through report_defect. */
cudaError_t run_grid(const kernel_launch &launch, const op_context &op);

/* The launch configuration checked against the device's limits and the kernel's
 * attributes (cudaFuncSetAttribute): cudaSuccess or the error a GPU's launch returns
 * (cudaErrorInvalidConfiguration, cudaErrorInvalidValue). */
cudaError_t check_launch(const kernel_launch &launch);

/* ---- what device/ needs of runtime/ ---------------------------------------------- */

/* Enqueue a checked launch on a stream (0: the legacy stream; cudaStreamPerThread), or
 * add it to the stream's capture. cudaSuccess or the error the launch reports
 * (cudaErrorInvalidResourceHandle for a destroyed stream, a capture's error). */
cudaError_t enqueue_kernel(cudaStream_t stream, kernel_launch launch);

/* The calling thread's last error (cudaGetLastError), set as a failed call sets it. */
void set_last_error(cudaError_t err);

/* True on a thread running a host function (cudaLaunchHostFunc), where CUDA allows no
 * CUDA call: each entry point then returns cudaErrorNotPermitted. */
bool in_host_function();

/* The emulated device's properties (an H100-like set; name says "emulated"). */
const cudaDeviceProp &device_properties(int device);
int current_device();

}  // namespace plm_emu

#endif /* PLUME_EMU_EMU_H */

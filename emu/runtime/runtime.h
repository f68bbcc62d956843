/* emu/runtime/runtime.h: the emulated CUDA runtime's host side, internal (C++17).
 *
 * The model. plume's CUDA code calls the runtime API of the CUDA 13 toolkit's
 * cuda_runtime_api.h; this directory implements those calls (extern "C", the
 * header's own prototypes, so the compiler checks each signature) on the CPU:
 *   - a device is a set of properties (an H100-like set whose name says it is
 *     emulated), a legacy default stream, a sticky-error slot, memory counters and
 *     a default memory pool; PLUME_EMU_DEVICES of them (default 1);
 *   - a stream is a worker thread draining an in-order queue of operations; an
 *     operation waits for the operations it depends on (event waits, the legacy
 *     stream's implicit synchronisation with blocking streams, a memory pool's
 *     inserted dependency) on that worker, never on the caller;
 *   - device memory is ordinary heap memory (so AddressSanitizer's red zones
 *     bound it), 256-byte aligned, filled with 0xCD so a read of memory never
 *     written shows, and registered with check/ (region_add) so every access is
 *     checked in stream order; pinned host memory is heap memory the runtime
 *     knows to be pinned; pageable memory is everything else;
 *   - a captured stream does not run what it is given: it appends graph nodes
 *     with their dependencies, and a graph launch runs the nodes on the launching
 *     stream's worker in a topological order drawn at random (PLUME_EMU_SEED), so
 *     a dependency missing from a graph shows.
 *
 * Emulated as documented (the CUDA Runtime API reference, its "API synchronization
 * behavior" page and the programming guide's rules of stream capture): stream
 * order; the legacy stream's implicit synchronisation with blocking streams and
 * not with cudaStreamNonBlocking ones; cudaStreamPerThread; events, their waits,
 * queries and elapsed times in real milliseconds, the timing-disabled flag; which
 * copies return before they finish (a copy from pageable memory to the device is
 * staged at the call, one to pageable memory returns when done, a cudaMemcpy
 * between device buffers and a cudaMemset return at once); host functions in
 * stream order, where every runtime call fails with cudaErrorNotPermitted; stream
 * capture in its three modes with fork and join through events, and the calls
 * that are illegal during a capture failing and invalidating it; graphs replayed
 * with the arguments captured by value; memory pools with their reuse policies,
 * release threshold and trimming; the per-thread last error, and sticky errors;
 * the driver's virtual memory calls through cudaGetDriverEntryPoint.
 *
 * Stricter than a GPU: the clocks of emu.h are computed for every operation when
 * it is enqueued, and check/ reports an access of device memory that is not
 * ordered after the last conflicting one, however the threads happened to run;
 * freed device memory (cudaFree, a pool's free) is poisoned and held back in a
 * quarantine before its addresses are reused, so a late access is caught, and a
 * copy touching it is refused; a pool allocation smaller than its block has the
 * rest of the block poisoned; VMM mappings are inaccessible (PROT_NONE) until
 * cuMemSetAccess, as on a GPU; a graph's nodes run in a random order that
 * respects only its edges; a cudaMemcpyKind that contradicts the pointers is
 * refused.
 *
 * Not emulated (plainly): timing (operations run as fast as the CPU runs them;
 * elapsed times measure that); concurrency between kernels and copies beyond what
 * the worker threads give; stream priorities (accepted, not honoured); peer access;
 * managed memory, arrays, textures, IPC, external semaphores, 2D/3D copies;
 * cudaDeviceReset; graphs built node by node (cudaGraphAdd*Node), graph updates,
 * memory allocation nodes (cudaMallocAsync and cudaFreeAsync during a capture are
 * refused with cudaErrorStreamCaptureUnsupported and the capture is invalidated),
 * graph launches inside a capture (child graphs; the same); the per-thread-default-
 * stream builds' _ptsz/_ptds entry points (plume compiles without --default-stream
 * per-thread). A device's memory is bounded by what the host can give, not by the
 * 80 GiB it reports: cudaMemGetInfo says the smaller. Where the documentation is
 * silent the emulator chooses the stricter answer and says so in the file's header
 * (which calls are "potentially unsafe" during a capture, cudaFree waiting for the
 * device's streams that are not capturing, a thread's cudaStreamPerThread finishing
 * its work when the thread ends).
 *
 * Locks. One lock (api_lock) orders every enqueue: the streams' clocks and last
 * operations, captures and the graphs they build, events' records, memory pools.
 * Nothing waits while holding it: a call that must wait (a synchronize, a
 * synchronous copy) enqueues under it, releases it, then waits on a completion.
 * Workers do not take it (they run operations, whose bodies take only the locks of
 * check/ and of the memory registry). */
#ifndef PLUME_EMU_RUNTIME_RUNTIME_H
#define PLUME_EMU_RUNTIME_RUNTIME_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "emu/emu.h"

namespace plm_emu {

/* ---- environment and randomness (device.cpp) ------------------------------------- */

/* PLUME_EMU_DEVICES (emu/config.h). */
int device_count();
/* The runtime's random choices (from PLUME_EMU_SEED, emu/config.h). Under api_lock. */
std::mt19937_64 &random_source();
/* The lock described in the header essay. */
std::mutex &api_lock();

/* ---- errors (errors.cpp) ---------------------------------------------------------- */

/* Record err as the calling thread's last error (not cudaSuccess, not
 * cudaErrorNotReady, which the runtime reports without recording) and return it. */
cudaError_t fail(cudaError_t err);
/* Whether a runtime call may proceed on this thread: cudaErrorNotPermitted inside a
 * host function, the current device's sticky error once there is one, else
 * cudaSuccess. Every entry point starts with it (EMU_ENTER). */
cudaError_t entry_check();
/* A device's sticky error (an error a kernel raised: the context is unusable). */
void make_sticky(int device, cudaError_t err);
cudaError_t sticky_error(int device);

#define EMU_ENTER()                                                \
  do {                                                             \
    cudaError_t emu_enter_err_ = ::plm_emu::entry_check();         \
    if (emu_enter_err_ != cudaSuccess) return ::plm_emu::fail(emu_enter_err_); \
  } while (0)

#define EMU_TRY(expr)                                          \
  do {                                                         \
    cudaError_t emu_try_err_ = (expr);                         \
    if (emu_try_err_ != cudaSuccess) return ::plm_emu::fail(emu_try_err_); \
  } while (0)

/* ---- handles ------------------------------------------------------------------------ */

/* The live objects of one kind behind opaque CUDA handles. A handle is a value that
 * is never reused and never points to memory, so a destroyed or made-up handle is
 * refused (find gives nullptr), never dereferenced. Thread-safe. */
template <class T>
class handle_table {
 public:
  explicit handle_table(unsigned tag) : tag_(tag) {}
  void *add(std::shared_ptr<T> object) {
    std::lock_guard<std::mutex> hold(lock_);
    const uintptr_t handle = (uintptr_t)0x7e0000000000ull | ((uintptr_t)tag_ << 36) | (uintptr_t)(++count_ << 4);
    objects_[handle] = std::move(object);
    return (void *)handle;
  }
  std::shared_ptr<T> find(const void *handle) const {
    std::lock_guard<std::mutex> hold(lock_);
    auto it = objects_.find((uintptr_t)handle);
    return it == objects_.end() ? nullptr : it->second;
  }
  std::shared_ptr<T> remove(const void *handle) {
    std::lock_guard<std::mutex> hold(lock_);
    auto it = objects_.find((uintptr_t)handle);
    if (it == objects_.end()) return nullptr;
    std::shared_ptr<T> object = std::move(it->second);
    objects_.erase(it);
    return object;
  }
  std::vector<std::shared_ptr<T>> all() const {
    std::lock_guard<std::mutex> hold(lock_);
    std::vector<std::shared_ptr<T>> out;
    for (auto &entry : objects_) out.push_back(entry.second);
    return out;
  }

 private:
  mutable std::mutex lock_;
  std::unordered_map<uintptr_t, std::shared_ptr<T>> objects_;
  unsigned tag_;
  uint64_t count_ = 0;
};

/* ---- completions ---------------------------------------------------------------------- */

/* The end of one operation: waited for by hosts and by other streams' workers.
 * signal stamps the time (for cudaEventElapsedTime). Thread-safe. */
class completion {
 public:
  void signal();
  bool done() const;
  void wait() const;
  /* Valid once done. */
  std::chrono::steady_clock::time_point when() const;

 private:
  mutable std::mutex lock_;
  mutable std::condition_variable changed_;
  bool done_ = false;
  std::chrono::steady_clock::time_point when_;
};

/* ---- streams (stream.cpp) ---------------------------------------------------------------- */

struct capture_state;
struct graph_state;
struct graph_node;
struct event_record;

enum class stream_kind { created, legacy, per_thread };

/* The body of an operation: runs on the stream's worker; an error it returns becomes
 * the device's sticky error. */
typedef std::function<cudaError_t(const op_context &op)> op_body;

struct stream_state {
  int device = 0;
  unsigned flags = 0; /* cudaStreamDefault or cudaStreamNonBlocking */
  int priority = 0;
  stream_kind kind = stream_kind::created;
  timeline_id timeline = 0;
  void *handle = nullptr; /* as the application names it (0, cudaStreamPerThread, a handle) */
  unsigned long long id = 0; /* cudaStreamGetId */

  /* Guarded by api_lock. */
  vclock clock;                          /* what its next operation is ordered after */
  std::shared_ptr<completion> last;      /* its last operation's end (null: none yet) */
  std::shared_ptr<capture_state> capture; /* the capture it takes part in, if any */
  std::vector<graph_node *> capture_deps; /* the nodes its next captured node depends on */
  std::vector<cudaGraphNode_t> info_deps; /* cudaStreamGetCaptureInfo's answer, kept */
  std::vector<cudaGraphEdgeData> info_edges;
  bool destroyed = false;

  bool blocking() const { return kind != stream_kind::legacy && !(flags & cudaStreamNonBlocking); }

  /* The worker's queue. */
  struct work {
    std::string what;
    vclock clock;
    std::vector<std::shared_ptr<completion>> after;
    op_body body; /* empty: a marker (an event record, a wait) */
    std::shared_ptr<completion> done;
  };
  void start_worker();
  void push(work item);
  /* No more work will come: the worker ends when its queue is empty. */
  void retire();
  void join_worker();

 private:
  void worker_main();
  std::mutex queue_lock_;
  std::condition_variable queue_changed_;
  std::deque<work> queue_;
  bool retired_ = false;
  std::thread worker_;
};

/* The stream an application's cudaStream_t names on the calling thread (0 and
 * cudaStreamLegacy: the current device's legacy stream; cudaStreamPerThread: this
 * thread's), or nullptr for a destroyed or unknown handle. */
std::shared_ptr<stream_state> find_stream(cudaStream_t stream);
/* A device's legacy stream and every live stream of it (legacy and per-thread ones
 * included). Under api_lock. */
std::shared_ptr<stream_state> legacy_stream(int device);
std::vector<std::shared_ptr<stream_state>> device_streams(int device);

/* Enqueue an operation on a stream that is not capturing (under api_lock): its
 * clock is join(the stream's, the host's, `also`) ticked on the stream's timeline,
 * plus the legacy stream's implicit synchronisation; it runs after `after`.
 * Returns its completion. */
std::shared_ptr<completion> enqueue(stream_state &stream, const std::string &what, op_body body,
                                    std::vector<std::shared_ptr<completion>> after = {},
                                    const vclock *also = nullptr);
/* The same in two steps, for an operation whose body needs its clock first (a graph
 * launch): the clock (the stream's is not changed yet), then the push, which makes
 * `clock` the stream's. */
vclock stamp_next(stream_state &stream, std::vector<std::shared_ptr<completion>> &after, const vclock *also);
std::shared_ptr<completion> enqueue_with_clock(stream_state &stream, const std::string &what, op_body body,
                                               std::vector<std::shared_ptr<completion>> after,
                                               const vclock &clock);

/* Wait for a completion, then learn its clock (the host now knows it finished).
 * Not under api_lock. */
void host_wait(const std::shared_ptr<completion> &done, const vclock &clock);


/* Wait for the work of every stream of the device that is not capturing (the implicit
 * synchronisation of cudaFree, cudaFreeHost, cuMemUnmap), learning its clocks. Not
 * under api_lock. */
void wait_device_idle(int device);

/* ---- capture (capture.cpp) -------------------------------------------------------------- */

/* One capture sequence (cudaStreamBeginCapture to cudaStreamEndCapture). Guarded by
 * api_lock. */
struct capture_state {
  unsigned long long id = 0;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  int device = 0;
  std::weak_ptr<stream_state> origin;
  std::vector<std::weak_ptr<stream_state>> members;
  std::shared_ptr<graph_state> graph;
  cudaGraph_t graph_handle = nullptr;
  bool invalidated = false;
  bool ended = false;
};

/* Which API calls the capture rules speak of. */
enum class capture_use {
  unsafe,      /* a "potentially unsafe" call (cudaMalloc, a synchronous copy, a query or
                  synchronize of something not captured): prohibited by the modes */
  legacy,      /* a use of a device's legacy stream: illegal while a blocking stream of
                  the device captures (cudaErrorStreamCaptureImplicit) */
  device_sync  /* a synchronize of the whole device: illegal while any stream captures */
};
/* Whether the calling thread may make such a call now (under api_lock): cudaSuccess,
 * or the documented error, after invalidating the captures that forbid it. */
cudaError_t capture_permits(capture_use use, int device);
/* Invalidate a capture (an illegal call touched it). Under api_lock. */
void invalidate_capture(const std::shared_ptr<capture_state> &capture);
/* The error to give for a call on a capturing stream whose capture is invalidated
 * (cudaErrorStreamCaptureInvalidated), else cudaSuccess. */
cudaError_t capture_usable(const stream_state &stream);

/* A stream joins a capture through an event recorded in it (cudaStreamWaitEvent):
 * a fork, a join, or the documented error. Under api_lock. */
cudaError_t capture_join(const std::shared_ptr<stream_state> &joining, const event_record &record);
/* Whether a record was made in a capture that is still under way. */
bool record_captured(const event_record &record);

/* Append a node to the capture the stream takes part in (under api_lock; the
 * stream's capture is usable): it depends on the stream's current dependencies and
 * becomes them. */
graph_node *capture_node(stream_state &stream, std::unique_ptr<graph_node> node);

/* ---- graphs (graph.cpp) ---------------------------------------------------------------- */

struct event_state;
struct event_record;

enum class node_type { kernel, memcpy, memset, host, event_record, event_wait };

struct graph_node {
  node_type type = node_type::kernel;
  std::string what;
  std::vector<graph_node *> deps;
  kernel_launch launch;                  /* kernel */
  void *dst = nullptr;                   /* memcpy, memset */
  const void *src = nullptr;             /* memcpy */
  size_t bytes = 0;                      /* memcpy, memset */
  int value = 0;                         /* memset */
  cudaHostFn_t fn = nullptr;             /* host */
  void *user = nullptr;                  /* host */
  std::shared_ptr<event_state> event;    /* event_record, event_wait */
};

struct graph_state {
  int device = 0;
  std::vector<std::unique_ptr<graph_node>> nodes; /* in the order they were added */
  bool capturing = false;                         /* still being built by a capture */
};

/* A graph under construction by a capture, registered as a cudaGraph_t. */
std::shared_ptr<graph_state> graph_new(int device, cudaGraph_t *handle);
void graph_forget(cudaGraph_t handle);

/* ---- events (event.cpp) ------------------------------------------------------------------- */

/* One record of an event: either a real one (done, clock) or one made in a capture
 * (capture, deps). */
struct event_record {
  std::shared_ptr<completion> done;
  vclock clock;
  std::shared_ptr<capture_state> capture;
  std::vector<graph_node *> deps;
};

struct event_state {
  unsigned flags = 0;
  int device = 0;
  std::shared_ptr<event_record> last; /* guarded by api_lock */
};

/* ---- host functions (host_function.cpp) ------------------------------------------------- */

/* Run a host function as the documentation says: the host learns the clock of the
 * operation that runs it, and CUDA calls fail on this thread while it runs. */
void run_host_function(cudaHostFn_t fn, void *user, const op_context &op);

/* ---- memory (memory.cpp) --------------------------------------------------------------------- */

enum class memory_kind { device, pool, mapped, pinned, registered };

/* Which memory an address range is. */
enum class memory_class { device, pinned, pageable, invalid };

/* Register a range of device or pinned memory (under no lock of the caller's). */
void memory_register(void *base, size_t bytes, memory_kind kind, int device);
void memory_unregister(void *base);
/* What [ptr, ptr + bytes) is: device (inside one device range), pinned (covered by
 * pinned ranges), pageable (other host memory), invalid (runs past a device range's
 * end, reaches into device memory from the host, or touches freed device memory). */
memory_class classify(const void *ptr, size_t bytes, int *device = nullptr);
/* Device memory that was freed: poisoned and held back (the last 256 ranges, at most
 * 64 MiB) before `release` gives it back to the heap. */
void device_quarantine(void *base, size_t bytes, std::function<void()> release);
/* Freed memory a pool holds: copies touching it are refused until it is reused. */
void memory_mark_freed(void *base, size_t bytes);
void memory_unmark_freed(void *base);
/* Account for device memory taken or given back; false when the device is full. */
bool device_memory_take(int device, size_t bytes);
void device_memory_give(int device, size_t bytes);
/* Heap memory for the device: 256-byte aligned, filled with 0xCD, with kRedZone bytes
 * on either side that belong to nothing (poisoned for AddressSanitizer), as check/ needs
 * of a region (emu.h). device_heap_free takes what device_heap_alloc gave. */
void *device_heap_alloc(size_t bytes);
void device_heap_free(void *base);

/* Copy as an operation's body does: records the device accesses, then copies. */
cudaError_t run_copy(const op_context &op, void *dst, const void *src, size_t bytes);
cudaError_t run_memset(const op_context &op, void *dst, int value, size_t bytes);

/* ---- memory pools (mempool.cpp) ------------------------------------------------------------ */

/* After a synchronize (not under api_lock): the device's pools holding more than
 * their release threshold give back what the host knows to be free. */
void pools_release_to_threshold(int device);
/* cudaFree of a pool's allocation, after the device was synchronised. */
cudaError_t pool_free_synchronously(void *ptr);

/* ---- device (device.cpp) ------------------------------------------------------------------- */

bool valid_device(int device);

/* ---- the calling thread's state ------------------------------------------------------------- */

/* This thread's cudaStreamCaptureMode (cudaThreadExchangeStreamCaptureMode). */
cudaStreamCaptureMode &thread_capture_mode();

}  // namespace plm_emu

#endif /* PLUME_EMU_RUNTIME_RUNTIME_H */

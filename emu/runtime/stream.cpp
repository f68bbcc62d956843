/* emu/runtime/stream.cpp: streams (a worker thread each, draining an in-order queue),
 * the legacy default stream and cudaStreamPerThread, completions, the clocks of
 * enqueued operations, device synchronisation, and kernel launches reaching a stream.
 *
 * Contract (CUDA Runtime API, "Stream Management" and "stream synchronization
 * behavior"): operations of one stream run in the order they were enqueued; the
 * legacy stream (0, cudaStreamLegacy) waits for the work enqueued before on every
 * blocking stream of its device, and every blocking stream waits for the legacy
 * stream's earlier work; cudaStreamNonBlocking streams do neither; cudaStreamPerThread
 * is a blocking stream of each host thread (and device). cudaStreamDestroy returns at
 * once, the stream's pending work still runs, and the handle is refused from then on
 * (cudaErrorInvalidResourceHandle). cudaStreamQuery and cudaStreamSynchronize, and
 * cudaDeviceSynchronize, are refused on a capturing stream (device) as the rules of
 * capture say (capture.cpp). A kernel's error becomes its device's sticky error, and
 * the device's later operations are skipped. Thread-safe. */
#include "emu/runtime/runtime.h"

#include <cstdio>

namespace plm_emu {

/* ---- completions ------------------------------------------------------------------- */

void completion::signal() {
  std::lock_guard<std::mutex> hold(lock_);
  when_ = std::chrono::steady_clock::now();
  done_ = true;
  changed_.notify_all();
}

bool completion::done() const {
  std::lock_guard<std::mutex> hold(lock_);
  return done_;
}

void completion::wait() const {
  std::unique_lock<std::mutex> hold(lock_);
  changed_.wait(hold, [this] { return done_; });
}

std::chrono::steady_clock::time_point completion::when() const {
  std::lock_guard<std::mutex> hold(lock_);
  return when_;
}

void host_wait(const std::shared_ptr<completion> &done, const vclock &clock) {
  if (done) done->wait();
  host_clock_learn(clock);
}

/* ---- the worker ---------------------------------------------------------------------- */

void stream_state::start_worker() { worker_ = std::thread([this] { worker_main(); }); }

void stream_state::push(work item) {
  std::lock_guard<std::mutex> hold(queue_lock_);
  queue_.push_back(std::move(item));
  queue_changed_.notify_one();
}

void stream_state::retire() {
  std::lock_guard<std::mutex> hold(queue_lock_);
  retired_ = true;
  queue_changed_.notify_one();
}

void stream_state::join_worker() {
  if (worker_.joinable()) worker_.join();
}

void stream_state::worker_main() {
  for (;;) {
    work item;
    {
      std::unique_lock<std::mutex> hold(queue_lock_);
      queue_changed_.wait(hold, [this] { return !queue_.empty() || retired_; });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    for (const std::shared_ptr<completion> &before : item.after) before->wait();
    if (item.body && sticky_error(device) == cudaSuccess) {
      op_context op;
      op.id = op_id_new();
      op.timeline = timeline;
      op.time = item.clock.at(timeline);
      op.clock = &item.clock;
      op.what = item.what;
      cudaError_t err = item.body(op);
      if (err != cudaSuccess) make_sticky(device, err);
    }
    item.done->signal();
  }
}

/* ---- the registry of streams --------------------------------------------------------- */

namespace {

handle_table<stream_state> &stream_handles() {
  static auto *table = new handle_table<stream_state>(1);
  return *table;
}

struct device_streams_state {
  std::shared_ptr<stream_state> legacy;
  std::vector<std::weak_ptr<stream_state>> live;
};

/* Under api_lock; never destroyed (workers may outlive main). */
std::vector<device_streams_state> &devices_streams() {
  static auto *all = new std::vector<device_streams_state>(16);
  return *all;
}

/* Destroyed streams whose workers are still draining, joined later (under api_lock). */
std::vector<std::shared_ptr<stream_state>> &retired_streams() {
  static auto *all = new std::vector<std::shared_ptr<stream_state>>;
  return *all;
}

std::atomic<unsigned long long> next_stream_id{1};

std::shared_ptr<stream_state> new_stream(int device, unsigned flags, int priority, stream_kind kind,
                                         const std::string &label) {
  auto stream = std::make_shared<stream_state>();
  stream->device = device;
  stream->flags = flags;
  stream->priority = priority;
  stream->kind = kind;
  stream->id = next_stream_id++;
  stream->timeline = timeline_new(label);
  stream->start_worker();
  devices_streams()[(size_t)device].live.push_back(stream);
  return stream;
}

/* Join the workers of destroyed streams that have finished their work. */
void reap_retired() {
  auto &retired = retired_streams();
  for (size_t i = 0; i < retired.size();) {
    if (!retired[i]->last || retired[i]->last->done()) {
      retired[i]->join_worker();
      retired[i] = retired.back();
      retired.pop_back();
    } else {
      i++;
    }
  }
}

void retire_stream(const std::shared_ptr<stream_state> &stream) {
  stream->destroyed = true;
  stream->retire();
  retired_streams().push_back(stream);
}

/* This thread's cudaStreamPerThread, one per device. When the thread ends, its streams
 * finish their work and go (the thread waits for that work: a small deviation, since
 * CUDA would let it run on). */
struct per_thread_streams {
  std::shared_ptr<stream_state> of[16];
  ~per_thread_streams() {
    {
      std::lock_guard<std::mutex> hold(api_lock());
      for (auto &stream : of) {
        if (!stream) continue;
        stream->destroyed = true;
        stream->retire();
      }
    }
    for (auto &stream : of)
      if (stream) stream->join_worker();
  }
};
thread_local per_thread_streams thread_streams;

const char *kind_label(unsigned flags) { return flags & cudaStreamNonBlocking ? "non-blocking" : "blocking"; }

}  // namespace

std::shared_ptr<stream_state> legacy_stream(int device) {
  device_streams_state &state = devices_streams()[(size_t)device];
  if (!state.legacy) {
    char label[64];
    std::snprintf(label, sizeof label, "legacy stream of device %d", device);
    state.legacy = new_stream(device, cudaStreamDefault, 0, stream_kind::legacy, label);
    state.legacy->handle = cudaStreamLegacy;
  }
  return state.legacy;
}

std::vector<std::shared_ptr<stream_state>> device_streams(int device) {
  std::vector<std::shared_ptr<stream_state>> out;
  auto &live = devices_streams()[(size_t)device].live;
  for (size_t i = 0; i < live.size();) {
    std::shared_ptr<stream_state> stream = live[i].lock();
    if (!stream || stream->destroyed) {
      live[i] = live.back();
      live.pop_back();
      continue;
    }
    out.push_back(std::move(stream));
    i++;
  }
  return out;
}

std::shared_ptr<stream_state> find_stream(cudaStream_t stream) {
  const int device = current_device();
  if (stream == nullptr || stream == cudaStreamLegacy) return legacy_stream(device);
  if (stream == cudaStreamPerThread) {
    std::shared_ptr<stream_state> &mine = thread_streams.of[device];
    if (!mine) {
      char label[96];
      std::snprintf(label, sizeof label, "per-thread stream of device %d (thread %zu)", device,
                    std::hash<std::thread::id>()(std::this_thread::get_id()));
      mine = new_stream(device, cudaStreamDefault, 0, stream_kind::per_thread, label);
      mine->handle = cudaStreamPerThread;
    }
    return mine;
  }
  return stream_handles().find(stream);
}

/* The clock of the next operation on a stream, and the operations it must wait for:
 * the legacy stream's implicit synchronisation, the host's knowledge, `also`. */
static vclock next_clock(stream_state &stream, std::vector<std::shared_ptr<completion>> &after,
                         const vclock *also) {
  vclock clock = stream.clock;
  clock.join(host_clock());
  if (also) clock.join(*also);
  if (stream.kind == stream_kind::legacy) {
    for (const auto &other : device_streams(stream.device)) {
      if (other.get() == &stream || !other->blocking() || !other->last || other->capture) continue;
      after.push_back(other->last);
      clock.join(other->clock);
    }
  } else if (stream.blocking()) {
    std::shared_ptr<stream_state> legacy = legacy_stream(stream.device);
    if (legacy->last) {
      after.push_back(legacy->last);
      clock.join(legacy->clock);
    }
  }
  clock.tick(stream.timeline);
  return clock;
}

std::shared_ptr<completion> enqueue(stream_state &stream, const std::string &what, op_body body,
                                    std::vector<std::shared_ptr<completion>> after, const vclock *also) {
  stream_state::work item;
  item.clock = next_clock(stream, after, also);
  item.what = what;
  item.after = std::move(after);
  item.body = std::move(body);
  item.done = std::make_shared<completion>();
  stream.clock = item.clock;
  stream.last = item.done;
  std::shared_ptr<completion> done = item.done;
  stream.push(std::move(item));
  return done;
}

std::shared_ptr<completion> enqueue_with_clock(stream_state &stream, const std::string &what, op_body body,
                                               std::vector<std::shared_ptr<completion>> after,
                                               const vclock &clock) {
  stream_state::work item;
  item.clock = clock;
  item.what = what;
  item.after = std::move(after);
  item.body = std::move(body);
  item.done = std::make_shared<completion>();
  stream.clock = clock;
  stream.last = item.done;
  std::shared_ptr<completion> done = item.done;
  stream.push(std::move(item));
  return done;
}

vclock stamp_next(stream_state &stream, std::vector<std::shared_ptr<completion>> &after, const vclock *also) {
  return next_clock(stream, after, also);
}

/* A call that waits for a stream or queries it: refused during its capture, or when
 * the rules of capture forbid it to this thread. Under api_lock. */
static cudaError_t may_wait_for(stream_state &stream) {
  if (stream.capture) {
    cudaError_t usable = capture_usable(stream);
    if (usable != cudaSuccess) return usable;
    invalidate_capture(stream.capture);
    return cudaErrorStreamCaptureUnsupported;
  }
  if (stream.kind == stream_kind::legacy) {
    cudaError_t err = capture_permits(capture_use::legacy, stream.device);
    if (err != cudaSuccess) return err;
  }
  return capture_permits(capture_use::unsafe, stream.device);
}

void wait_device_idle(int device) {
  std::vector<std::pair<std::shared_ptr<completion>, vclock>> pending;
  {
    std::lock_guard<std::mutex> hold(api_lock());
    legacy_stream(device);
    for (const auto &stream : device_streams(device))
      if (!stream->capture) pending.push_back({stream->last, stream->clock});
    for (const auto &stream : retired_streams())
      if (stream->device == device) pending.push_back({stream->last, stream->clock});
  }
  for (const auto &entry : pending) host_wait(entry.first, entry.second);
}

cudaError_t enqueue_kernel(cudaStream_t handle, kernel_launch launch) {
  EMU_ENTER();
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  std::string what = std::string("kernel ") + (launch.name ? launch.name : "?");
  if (stream->capture) {
    EMU_TRY(capture_usable(*stream));
    auto node = std::make_unique<graph_node>();
    node->type = node_type::kernel;
    node->what = what;
    node->launch = std::move(launch);
    capture_node(*stream, std::move(node));
    return cudaSuccess;
  }
  if (stream->kind == stream_kind::legacy) EMU_TRY(capture_permits(capture_use::legacy, stream->device));
  enqueue(*stream, what, [launch](const op_context &op) { return run_grid(launch, op); });
  return cudaSuccess;
}

}  // namespace plm_emu

using namespace plm_emu;

extern "C" {

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority) {
  EMU_ENTER();
  if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking)) return fail(cudaErrorInvalidValue);
  /* Priorities outside [greatest, least] are clamped, as documented. */
  if (priority > 0) priority = 0;
  if (priority < -5) priority = -5;
  std::lock_guard<std::mutex> hold(api_lock());
  reap_retired();
  char label[96];
  std::snprintf(label, sizeof label, "stream %llu (%s, device %d)", (unsigned long long)next_stream_id.load(),
                kind_label(flags), current_device());
  std::shared_ptr<stream_state> stream = new_stream(current_device(), flags, priority, stream_kind::created, label);
  stream->handle = stream_handles().add(stream);
  *pStream = (cudaStream_t)stream->handle;
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags) {
  return cudaStreamCreateWithPriority(pStream, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream) {
  return cudaStreamCreateWithPriority(pStream, cudaStreamDefault, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  EMU_ENTER();
  std::lock_guard<std::mutex> hold(api_lock());
  if (handle == nullptr || handle == cudaStreamLegacy || handle == cudaStreamPerThread)
    return fail(cudaErrorInvalidResourceHandle);
  std::shared_ptr<stream_state> stream = stream_handles().find(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  if (stream->capture) {
    /* Destroying a stream in the middle of a capture breaks the capture. */
    invalidate_capture(stream->capture);
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  stream_handles().remove(handle);
  retire_stream(stream);
  reap_retired();
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t handle) {
  EMU_ENTER();
  std::shared_ptr<completion> last;
  vclock clock;
  {
    std::lock_guard<std::mutex> hold(api_lock());
    std::shared_ptr<stream_state> stream = find_stream(handle);
    if (!stream) return fail(cudaErrorInvalidResourceHandle);
    EMU_TRY(may_wait_for(*stream));
    last = stream->last;
    clock = stream->clock;
  }
  if (last && !last->done()) return cudaErrorNotReady;
  host_clock_learn(clock);
  return fail(sticky_error(current_device()));
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  EMU_ENTER();
  std::shared_ptr<completion> last;
  vclock clock;
  int device = 0;
  {
    std::lock_guard<std::mutex> hold(api_lock());
    std::shared_ptr<stream_state> stream = find_stream(handle);
    if (!stream) return fail(cudaErrorInvalidResourceHandle);
    EMU_TRY(may_wait_for(*stream));
    last = stream->last;
    clock = stream->clock;
    device = stream->device;
  }
  host_wait(last, clock);
  pools_release_to_threshold(device);
  return fail(sticky_error(device));
}

cudaError_t cudaDeviceSynchronize(void) {
  EMU_ENTER();
  const int device = current_device();
  std::vector<std::pair<std::shared_ptr<completion>, vclock>> pending;
  {
    std::lock_guard<std::mutex> hold(api_lock());
    EMU_TRY(capture_permits(capture_use::device_sync, device));
    EMU_TRY(capture_permits(capture_use::unsafe, device));
    legacy_stream(device);
    for (const auto &stream : device_streams(device)) pending.push_back({stream->last, stream->clock});
    for (const auto &stream : retired_streams())
      if (stream->device == device) pending.push_back({stream->last, stream->clock});
  }
  for (const auto &entry : pending) host_wait(entry.first, entry.second);
  pools_release_to_threshold(device);
  return fail(sticky_error(device));
}

cudaError_t cudaStreamGetDevice(cudaStream_t handle, int *device) {
  EMU_ENTER();
  if (!device) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  *device = stream->device;
  return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t handle, unsigned int *flags) {
  EMU_ENTER();
  if (!flags) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  *flags = stream->flags;
  return cudaSuccess;
}

cudaError_t cudaStreamGetPriority(cudaStream_t handle, int *priority) {
  EMU_ENTER();
  if (!priority) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  *priority = stream->priority;
  return cudaSuccess;
}

cudaError_t cudaStreamGetId(cudaStream_t handle, unsigned long long *streamId) {
  EMU_ENTER();
  if (!streamId) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  *streamId = stream->id;
  return cudaSuccess;
}

}  // extern "C"

/* emu/runtime/host_function.cpp: host functions enqueued on streams
 * (cudaLaunchHostFunc, and the older cudaStreamAddCallback).
 *
 * Contract (CUDA Runtime API): a host function runs on a thread of the runtime's, in
 * stream order: after everything enqueued on the stream before it, and everything
 * enqueued after it waits for it to return. It must make no CUDA call: on the thread
 * running it every runtime entry point returns cudaErrorNotPermitted (in_host_function
 * of emu.h). Its starting to run is the host learning that the work before it has
 * finished (host_clock_learn of its operation's clock). During a capture it becomes a
 * host node, run at each replay. After a sticky error host functions are skipped, as
 * CUDA skips them once the context has failed. Thread-safe. */
#include "emu/runtime/runtime.h"

namespace plm_emu {

namespace {

thread_local bool in_host_fn = false;

}  // namespace

bool in_host_function() { return in_host_fn; }

void run_host_function(cudaHostFn_t fn, void *user, const op_context &op) {
  host_clock_learn(*op.clock);
  in_host_fn = true;
  fn(user);
  in_host_fn = false;
}

/* Enqueue fn(user) on a stream, or add it to the stream's capture where `capturable`. */
static cudaError_t launch_host_function(cudaStream_t handle, cudaHostFn_t fn, void *user, const char *what,
                                        bool capturable) {
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return cudaErrorInvalidResourceHandle;
  if (stream->capture) {
    cudaError_t usable = capture_usable(*stream);
    if (usable != cudaSuccess) return usable;
    if (!capturable) {
      invalidate_capture(stream->capture);
      return cudaErrorStreamCaptureUnsupported;
    }
    auto node = std::make_unique<graph_node>();
    node->type = node_type::host;
    node->what = what;
    node->fn = fn;
    node->user = user;
    capture_node(*stream, std::move(node));
    return cudaSuccess;
  }
  if (stream->kind == stream_kind::legacy) {
    cudaError_t err = capture_permits(capture_use::legacy, stream->device);
    if (err != cudaSuccess) return err;
  }
  enqueue(*stream, what, [fn, user](const op_context &op) {
    run_host_function(fn, user, op);
    return cudaSuccess;
  });
  return cudaSuccess;
}

namespace {

struct stream_callback {
  cudaStreamCallback_t callback;
  cudaStream_t stream;
  void *user;
};

void run_stream_callback(void *data) {
  stream_callback *call = (stream_callback *)data;
  call->callback(call->stream, cudaSuccess, call->user);
  delete call;
}

}  // namespace

}  // namespace plm_emu

using namespace plm_emu;

extern "C" {

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
  EMU_ENTER();
  if (!fn) return fail(cudaErrorInvalidValue);
  EMU_TRY(launch_host_function(stream, fn, userData, "host function", true));
  return cudaSuccess;
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                  unsigned int flags) {
  EMU_ENTER();
  if (!callback || flags != 0) return fail(cudaErrorInvalidValue);
  /* A callback is not captured (it runs once, and frees its record). */
  auto *call = new stream_callback{callback, stream, userData};
  cudaError_t err = launch_host_function(stream, run_stream_callback, call, "stream callback", false);
  if (err != cudaSuccess) {
    delete call;
    return fail(err);
  }
  return cudaSuccess;
}

}  // extern "C"

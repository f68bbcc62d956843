/* emu/runtime/capture.cpp: stream capture (cudaStreamBeginCapture, EndCapture,
 * IsCapturing, GetCaptureInfo, cudaThreadExchangeStreamCaptureMode) and the rules of
 * what may be called while a capture is under way.
 *
 * Contract (CUDA Runtime API on these calls, and the programming guide's "Prohibited
 * and Unhandled Operations" of stream capture):
 *   - what is enqueued on a capturing stream becomes a graph node depending on the
 *     stream's current dependencies, instead of running; another stream joins the
 *     capture by waiting on an event recorded in it (a fork), and every stream that
 *     joined must be joined back into the origin stream before cudaStreamEndCapture,
 *     else it fails with cudaErrorStreamCaptureUnjoined and gives no graph;
 *   - synchronising or querying a capturing stream (cudaErrorStreamCaptureUnsupported)
 *     or an event recorded in a capture (cudaErrorCapturedEvent), a pageable copy
 *     into a capture (cudaErrorStreamCaptureUnsupported), and any use of the legacy
 *     stream while a blocking stream of its device captures
 *     (cudaErrorStreamCaptureImplicit) fail and invalidate the capture; a
 *     synchronisation of the whole device fails while any of its streams captures;
 *   - "potentially unsafe" calls (cudaMalloc, cudaFree, pinned allocations and
 *     registrations, synchronous copies and memsets, queries and synchronisations of
 *     streams and events not in the capture) fail with
 *     cudaErrorStreamCaptureUnsupported and invalidate the captures that forbid them:
 *     a thread in mode cudaStreamCaptureModeGlobal (the default, see
 *     cudaThreadExchangeStreamCaptureMode) is forbidden them by its own captures not
 *     begun in Relaxed mode and by other threads' captures begun in Global mode; in
 *     ThreadLocal mode by its own non-Relaxed captures only; in Relaxed mode never;
 *   - once invalidated, every use of the capture's streams and captured events
 *     returns cudaErrorStreamCaptureInvalidated until cudaStreamEndCapture, which
 *     returns the same error, a NULL graph, and takes the streams out of capture;
 *   - a capture begun in a mode other than Relaxed must be ended by the thread that
 *     began it (cudaErrorStreamCaptureWrongThread); it must be ended on the stream it
 *     began on (cudaErrorStreamCaptureUnmatched); the legacy stream cannot capture.
 * Thread-safe (everything under api_lock). */
#include <algorithm>
#include <set>

#include "emu/runtime/runtime.h"

namespace plm_emu {


namespace {

std::vector<std::shared_ptr<capture_state>> &active_captures() {
  static auto *all = new std::vector<std::shared_ptr<capture_state>>;
  return *all;
}

unsigned long long next_capture_id = 1;

thread_local cudaStreamCaptureMode thread_mode = cudaStreamCaptureModeGlobal;

bool has_blocking_member(const capture_state &capture) {
  for (const auto &weak : capture.members) {
    std::shared_ptr<stream_state> member = weak.lock();
    if (member && member->blocking()) return true;
  }
  return false;
}

/* Whether `capture` forbids potentially unsafe calls to the calling thread. */
bool forbids_unsafe(const capture_state &capture) {
  if (thread_mode == cudaStreamCaptureModeRelaxed) return false;
  if (capture.thread == std::this_thread::get_id()) return capture.mode != cudaStreamCaptureModeRelaxed;
  return thread_mode == cudaStreamCaptureModeGlobal && capture.mode == cudaStreamCaptureModeGlobal;
}

/* Every node the given ones depend on, them included. */
std::set<const graph_node *> ancestors(const std::vector<graph_node *> &from) {
  std::set<const graph_node *> seen;
  std::vector<const graph_node *> todo(from.begin(), from.end());
  while (!todo.empty()) {
    const graph_node *node = todo.back();
    todo.pop_back();
    if (!seen.insert(node).second) continue;
    for (const graph_node *dep : node->deps) todo.push_back(dep);
  }
  return seen;
}

/* Take every stream of a capture out of capture mode. */
void end_capture(const std::shared_ptr<capture_state> &capture) {
  capture->ended = true;
  for (const auto &weak : capture->members) {
    std::shared_ptr<stream_state> member = weak.lock();
    if (!member || member->capture != capture) continue;
    member->capture.reset();
    member->capture_deps.clear();
    member->info_deps.clear();
    member->info_edges.clear();
  }
  auto &active = active_captures();
  active.erase(std::remove(active.begin(), active.end(), capture), active.end());
}

}  // namespace

cudaStreamCaptureMode &thread_capture_mode() { return thread_mode; }

void invalidate_capture(const std::shared_ptr<capture_state> &capture) {
  if (capture) capture->invalidated = true;
}

cudaError_t capture_usable(const stream_state &stream) {
  return stream.capture && stream.capture->invalidated ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
}

cudaError_t capture_permits(capture_use use, int device) {
  cudaError_t err = cudaSuccess;
  for (const auto &capture : active_captures()) {
    switch (use) {
      case capture_use::legacy:
        if (capture->device == device && has_blocking_member(*capture)) {
          invalidate_capture(capture);
          err = cudaErrorStreamCaptureImplicit;
        }
        break;
      case capture_use::device_sync:
        if (capture->device == device) {
          invalidate_capture(capture);
          err = cudaErrorStreamCaptureUnsupported;
        }
        break;
      case capture_use::unsafe:
        if (forbids_unsafe(*capture)) {
          invalidate_capture(capture);
          err = cudaErrorStreamCaptureUnsupported;
        }
        break;
    }
  }
  return err;
}

graph_node *capture_node(stream_state &stream, std::unique_ptr<graph_node> node) {
  node->deps = stream.capture_deps;
  graph_node *added = node.get();
  stream.capture->graph->nodes.push_back(std::move(node));
  stream.capture_deps.assign(1, added);
  return added;
}

/* A stream joins a capture through an event recorded in it (cudaStreamWaitEvent).
 * Under api_lock. */
cudaError_t capture_join(const std::shared_ptr<stream_state> &joining, const event_record &record) {
  stream_state &stream = *joining;
  const std::shared_ptr<capture_state> &capture = record.capture;
  if (capture->invalidated) return cudaErrorStreamCaptureInvalidated;
  if (stream.kind == stream_kind::legacy) {
    invalidate_capture(capture);
    return cudaErrorStreamCaptureImplicit;
  }
  if (stream.capture && stream.capture != capture) {
    invalidate_capture(capture);
    invalidate_capture(stream.capture);
    return cudaErrorStreamCaptureMerge;
  }
  if (!stream.capture) {
    stream.capture = capture;
    stream.capture_deps = record.deps;
    capture->members.push_back(joining);
    return cudaSuccess;
  }
  for (graph_node *dep : record.deps)
    if (std::find(stream.capture_deps.begin(), stream.capture_deps.end(), dep) == stream.capture_deps.end())
      stream.capture_deps.push_back(dep);
  return cudaSuccess;
}

/* Whether an event record's capture is still under way (its record is "captured"). */
bool record_captured(const event_record &record) { return record.capture && !record.capture->ended; }

}  // namespace plm_emu

using namespace plm_emu;

extern "C" {

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode *mode) {
  EMU_ENTER();
  if (!mode || (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
                *mode != cudaStreamCaptureModeRelaxed))
    return fail(cudaErrorInvalidValue);
  std::swap(*mode, thread_mode);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t handle, cudaStreamCaptureMode mode) {
  EMU_ENTER();
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  if (stream->kind == stream_kind::legacy) return fail(cudaErrorStreamCaptureUnsupported);
  if (stream->capture) return fail(cudaErrorIllegalState);
  auto capture = std::make_shared<capture_state>();
  capture->id = next_capture_id++;
  capture->mode = mode;
  capture->thread = std::this_thread::get_id();
  capture->device = stream->device;
  capture->origin = stream;
  capture->members.push_back(stream);
  capture->graph = graph_new(stream->device, &capture->graph_handle);
  stream->capture = capture;
  stream->capture_deps.clear();
  active_captures().push_back(capture);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t handle, cudaGraph_t *pGraph) {
  EMU_ENTER();
  if (!pGraph) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  std::shared_ptr<capture_state> capture = stream->capture;
  if (!capture) return fail(cudaErrorIllegalState);
  if (capture->origin.lock() != stream) {
    invalidate_capture(capture);
    return fail(cudaErrorStreamCaptureUnmatched);
  }
  if (capture->mode != cudaStreamCaptureModeRelaxed && capture->thread != std::this_thread::get_id())
    return fail(cudaErrorStreamCaptureWrongThread);
  /* Every stream that joined must have been joined back into the origin stream. */
  bool unjoined = false;
  const std::set<const graph_node *> joined = ancestors(stream->capture_deps);
  for (const auto &weak : capture->members) {
    std::shared_ptr<stream_state> member = weak.lock();
    if (!member || member == stream || member->capture != capture) continue;
    for (const graph_node *node : member->capture_deps)
      if (!joined.count(node)) unjoined = true;
  }
  const bool invalidated = capture->invalidated;
  end_capture(capture);
  if (invalidated || unjoined) {
    graph_forget(capture->graph_handle);
    *pGraph = nullptr;
    return fail(invalidated ? cudaErrorStreamCaptureInvalidated : cudaErrorStreamCaptureUnjoined);
  }
  capture->graph->capturing = false;
  *pGraph = capture->graph_handle;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t handle, cudaStreamCaptureStatus *pCaptureStatus) {
  EMU_ENTER();
  if (!pCaptureStatus) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  if (stream->kind == stream_kind::legacy) EMU_TRY(capture_permits(capture_use::legacy, stream->device));
  if (!stream->capture) *pCaptureStatus = cudaStreamCaptureStatusNone;
  else if (stream->capture->invalidated) *pCaptureStatus = cudaStreamCaptureStatusInvalidated;
  else *pCaptureStatus = cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t handle, cudaStreamCaptureStatus *captureStatus_out,
                                     unsigned long long *id_out, cudaGraph_t *graph_out,
                                     const cudaGraphNode_t **dependencies_out,
                                     const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out) {
  EMU_ENTER();
  if (!captureStatus_out || (edgeData_out && !dependencies_out)) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  if (stream->kind == stream_kind::legacy) EMU_TRY(capture_permits(capture_use::legacy, stream->device));
  const std::shared_ptr<capture_state> &capture = stream->capture;
  if (!capture) {
    *captureStatus_out = cudaStreamCaptureStatusNone;
    return cudaSuccess;
  }
  *captureStatus_out = capture->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  if (id_out) *id_out = capture->id;
  if (graph_out) *graph_out = capture->graph_handle;
  stream->info_deps.clear();
  for (graph_node *node : stream->capture_deps) stream->info_deps.push_back((cudaGraphNode_t)node);
  if (dependencies_out) *dependencies_out = stream->info_deps.empty() ? nullptr : stream->info_deps.data();
  /* Every edge a capture makes is a default one (all-zero edge data). */
  stream->info_edges.assign(stream->info_deps.size(), cudaGraphEdgeData{});
  if (edgeData_out) *edgeData_out = stream->info_edges.empty() ? nullptr : stream->info_edges.data();
  if (numDependencies_out) *numDependencies_out = stream->info_deps.size();
  return cudaSuccess;
}

}  // extern "C"

/* emu/runtime/event.cpp: events (create, destroy, record, query, synchronize, elapsed
 * time) and cudaStreamWaitEvent.
 *
 * Contract (CUDA Runtime API, "Event Management"): cudaEventRecord captures the work
 * enqueued on the stream so far; cudaEventQuery says whether it has finished
 * (cudaSuccess also for an event never recorded), cudaEventSynchronize waits for it,
 * and either teaches the host that work's clock; cudaStreamWaitEvent makes the
 * stream's later work wait for the event's most recent record at the call, which
 * later records do not change (a never-recorded event is no wait). Elapsed time is in
 * real milliseconds between the two records' completions; it is refused with
 * cudaErrorInvalidResourceHandle when either event was created with
 * cudaEventDisableTiming or never recorded, and cudaErrorNotReady while either has
 * not completed. During capture: a record on a capturing stream is captured (with
 * cudaEventRecordExternal it also becomes an event record node, which records the
 * event at each replay); a wait on an event recorded in a capture joins the waiting
 * stream to the capture (a fork) or merges the dependencies (a join); a capturing
 * stream's wait on an event recorded outside its capture needs cudaEventWaitExternal
 * (an event wait node) and is otherwise cudaErrorStreamCaptureIsolation; a query or
 * synchronize of a captured event is cudaErrorCapturedEvent. Destroyed or unknown
 * events are cudaErrorInvalidResourceHandle. Thread-safe. */
#include "emu/runtime/runtime.h"

namespace plm_emu {


namespace {

handle_table<event_state> &event_handles() {
  static auto *table = new handle_table<event_state>(2);
  return *table;
}

constexpr unsigned kEventFlags = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;

/* The record a query or synchronize waits for, after the rules of capture (under
 * api_lock): null when the event was never recorded. */
cudaError_t record_to_wait_for(cudaEvent_t handle, std::shared_ptr<event_record> *out) {
  std::shared_ptr<event_state> event = event_handles().find(handle);
  if (!event) return cudaErrorInvalidResourceHandle;
  std::shared_ptr<event_record> record = event->last;
  if (record && record_captured(*record)) {
    if (record->capture->invalidated) return cudaErrorStreamCaptureInvalidated;
    invalidate_capture(record->capture);
    return cudaErrorCapturedEvent;
  }
  cudaError_t err = capture_permits(capture_use::unsafe, event->device);
  if (err != cudaSuccess) return err;
  *out = record && record->done ? record : nullptr;
  return cudaSuccess;
}

}  // namespace

std::shared_ptr<event_state> find_event(cudaEvent_t handle) { return event_handles().find(handle); }

}  // namespace plm_emu

using namespace plm_emu;

extern "C" {

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  EMU_ENTER();
  if (!event || (flags & ~kEventFlags)) return fail(cudaErrorInvalidValue);
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)) return fail(cudaErrorInvalidValue);
  auto state = std::make_shared<event_state>();
  state->flags = flags;
  state->device = current_device();
  *event = (cudaEvent_t)event_handles().add(state);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  EMU_ENTER();
  std::lock_guard<std::mutex> hold(api_lock());
  if (!event_handles().remove(event)) return fail(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t handle, cudaStream_t stream_handle, unsigned int flags) {
  EMU_ENTER();
  if (flags & ~(unsigned)cudaEventRecordExternal) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<event_state> event = event_handles().find(handle);
  std::shared_ptr<stream_state> stream = find_stream(stream_handle);
  if (!event || !stream) return fail(cudaErrorInvalidResourceHandle);
  if (event->device != stream->device) return fail(cudaErrorInvalidResourceHandle);
  auto record = std::make_shared<event_record>();
  if (stream->capture) {
    EMU_TRY(capture_usable(*stream));
    if (flags & cudaEventRecordExternal) {
      auto node = std::make_unique<graph_node>();
      node->type = node_type::event_record;
      node->what = "event record (external)";
      node->event = event;
      capture_node(*stream, std::move(node));
    }
    record->capture = stream->capture;
    record->deps = stream->capture_deps;
    event->last = record;
    return cudaSuccess;
  }
  if (stream->kind == stream_kind::legacy) EMU_TRY(capture_permits(capture_use::legacy, stream->device));
  record->done = enqueue(*stream, "cudaEventRecord", op_body());
  record->clock = stream->clock;
  event->last = record;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return cudaEventRecordWithFlags(event, stream, cudaEventRecordDefault);
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  EMU_ENTER();
  std::shared_ptr<event_record> record;
  {
    std::lock_guard<std::mutex> hold(api_lock());
    EMU_TRY(record_to_wait_for(event, &record));
  }
  if (!record) return cudaSuccess;
  if (!record->done->done()) return cudaErrorNotReady;
  host_clock_learn(record->clock);
  return fail(sticky_error(current_device()));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  EMU_ENTER();
  std::shared_ptr<event_record> record;
  int device = 0;
  {
    std::lock_guard<std::mutex> hold(api_lock());
    EMU_TRY(record_to_wait_for(event, &record));
    device = event_handles().find(event)->device;
  }
  if (!record) return cudaSuccess;
  host_wait(record->done, record->clock);
  pools_release_to_threshold(device);
  return fail(sticky_error(device));
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  EMU_ENTER();
  if (!ms) return fail(cudaErrorInvalidValue);
  std::shared_ptr<event_record> first, second;
  {
    std::lock_guard<std::mutex> hold(api_lock());
    std::shared_ptr<event_state> a = event_handles().find(start), b = event_handles().find(end);
    if (!a || !b) return fail(cudaErrorInvalidResourceHandle);
    if ((a->flags | b->flags) & cudaEventDisableTiming) return fail(cudaErrorInvalidResourceHandle);
    first = a->last;
    second = b->last;
  }
  if (!first || !second || !first->done || !second->done) return fail(cudaErrorInvalidResourceHandle);
  if (!first->done->done() || !second->done->done()) return cudaErrorNotReady;
  host_clock_learn(first->clock);
  host_clock_learn(second->clock);
  *ms = std::chrono::duration<float, std::milli>(second->done->when() - first->done->when()).count();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream_handle, cudaEvent_t handle, unsigned int flags) {
  EMU_ENTER();
  if (flags & ~(unsigned)cudaEventWaitExternal) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<stream_state> stream = find_stream(stream_handle);
  std::shared_ptr<event_state> event = event_handles().find(handle);
  if (!stream || !event) return fail(cudaErrorInvalidResourceHandle);
  std::shared_ptr<event_record> record = event->last;
  if (record && record_captured(*record)) return fail(capture_join(stream, *record));
  if (stream->capture) {
    EMU_TRY(capture_usable(*stream));
    if (!(flags & cudaEventWaitExternal)) {
      if (!record) return cudaSuccess;
      invalidate_capture(stream->capture);
      return fail(cudaErrorStreamCaptureIsolation);
    }
    auto node = std::make_unique<graph_node>();
    node->type = node_type::event_wait;
    node->what = "event wait (external)";
    node->event = event;
    capture_node(*stream, std::move(node));
    return cudaSuccess;
  }
  if (stream->kind == stream_kind::legacy) EMU_TRY(capture_permits(capture_use::legacy, stream->device));
  if (!record || !record->done) return cudaSuccess;
  enqueue(*stream, "cudaStreamWaitEvent", op_body(), {record->done}, &record->clock);
  return cudaSuccess;
}

}  // extern "C"

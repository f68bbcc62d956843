/* emu/runtime/graph.cpp: graphs (made by stream capture, or empty by cudaGraphCreate),
 * their instantiation, launch and destruction.
 *
 * Contract (CUDA Runtime API, "Graph Management"): cudaGraphInstantiate makes an
 * executable graph from a graph's nodes as they are (later changes to the graph do
 * not reach it); cudaGraphLaunch enqueues one run of it on a stream, ordered after
 * the stream's earlier work and before its later work, and after the previous launch
 * of the same executable graph; a kernel node runs with the arguments captured at its
 * launch, by value; memcpy and memset nodes copy between the addresses captured; a
 * host node runs its function as a host function; an event record node records its
 * event at each replay, an event wait node waits at each replay for the event's most
 * recent record at the launch. The nodes of one run execute on the stream's worker in
 * a topological order drawn at random (PLUME_EMU_SEED), each on its own timeline with
 * the clock of its dependencies, so a missing edge shows in check/'s reports.
 * cudaGraphExecDestroy and cudaGraphDestroy may be called while a launch is pending;
 * it completes. Not emulated: nodes added by the cudaGraphAdd*Node calls, graph
 * updates, child graphs, memory nodes; a graph launched into a capture is refused
 * with cudaErrorStreamCaptureUnsupported (the capture is invalidated). Destroyed or
 * unknown graphs and executable graphs are cudaErrorInvalidResourceHandle (a NULL one
 * cudaErrorInvalidValue). Thread-safe. */
#include <cstdio>

#include "emu/runtime/runtime.h"

namespace plm_emu {


namespace {

/* One node of an executable graph: a copy of the graph's node, its dependencies as
 * indices, its timeline. */
struct exec_node {
  graph_node node;
  std::vector<size_t> deps;
  timeline_id timeline = 0;
};

struct exec_state {
  int device = 0;
  std::vector<exec_node> nodes;
  /* Guarded by api_lock: the previous launch, which the next one follows. */
  std::shared_ptr<completion> last_launch;
  vclock last_clock;
};

/* What one launch runs, computed when it is enqueued. */
struct replay {
  std::shared_ptr<const exec_state> exec;
  std::vector<size_t> order;
  std::vector<vclock> clocks;                                /* per node */
  std::vector<std::shared_ptr<event_record>> records;        /* event record nodes: what they signal */
  std::vector<std::shared_ptr<completion>> waits;            /* event wait nodes: what they wait for */
};

handle_table<graph_state> &graph_handles() {
  static auto *table = new handle_table<graph_state>(5);
  return *table;
}

handle_table<exec_state> &exec_handles() {
  static auto *table = new handle_table<exec_state>(6);
  return *table;
}

const char *type_name(node_type type) {
  switch (type) {
    case node_type::kernel: return "kernel";
    case node_type::memcpy: return "memcpy";
    case node_type::memset: return "memset";
    case node_type::host: return "host";
    case node_type::event_record: return "event record";
    case node_type::event_wait: return "event wait";
  }
  return "node";
}

/* A topological order of the nodes, each step drawn at random among the ready ones.
 * Under api_lock (the random source). */
std::vector<size_t> random_order(const exec_state &exec) {
  const size_t count = exec.nodes.size();
  std::vector<size_t> waiting(count, 0);
  std::vector<std::vector<size_t>> dependents(count);
  for (size_t i = 0; i < count; i++) {
    waiting[i] = exec.nodes[i].deps.size();
    for (size_t dep : exec.nodes[i].deps) dependents[dep].push_back(i);
  }
  std::vector<size_t> ready, order;
  for (size_t i = 0; i < count; i++)
    if (!waiting[i]) ready.push_back(i);
  while (!ready.empty()) {
    const size_t pick = (size_t)(random_source()() % ready.size());
    const size_t node = ready[pick];
    ready[pick] = ready.back();
    ready.pop_back();
    order.push_back(node);
    for (size_t next : dependents[node])
      if (--waiting[next] == 0) ready.push_back(next);
  }
  return order;
}

cudaError_t run_node(const exec_node &entry, const op_context &op, replay &plan, size_t index) {
  const graph_node &node = entry.node;
  switch (node.type) {
    case node_type::kernel: return run_grid(node.launch, op);
    case node_type::memcpy: return run_copy(op, node.dst, node.src, node.bytes);
    case node_type::memset: return run_memset(op, node.dst, node.value, node.bytes);
    case node_type::host: run_host_function(node.fn, node.user, op); return cudaSuccess;
    case node_type::event_record: plan.records[index]->done->signal(); return cudaSuccess;
    case node_type::event_wait:
      if (plan.waits[index]) plan.waits[index]->wait();
      return cudaSuccess;
  }
  return cudaSuccess;
}

/* The body of a launch: every node in the drawn order; on an error the rest is
 * skipped, and the event records still complete so that nothing waits forever. */
cudaError_t run_replay(replay &plan) {
  cudaError_t err = cudaSuccess;
  for (size_t index : plan.order) {
    const exec_node &entry = plan.exec->nodes[index];
    if (err == cudaSuccess && sticky_error(plan.exec->device) == cudaSuccess) {
      op_context op;
      op.id = op_id_new();
      op.timeline = entry.timeline;
      op.time = plan.clocks[index].at(entry.timeline);
      op.clock = &plan.clocks[index];
      op.what = entry.node.what;
      err = run_node(entry, op, plan, index);
    }
    if (plan.records[index] && !plan.records[index]->done->done()) plan.records[index]->done->signal();
  }
  return err;
}

}  // namespace

std::shared_ptr<graph_state> graph_new(int device, cudaGraph_t *handle) {
  auto graph = std::make_shared<graph_state>();
  graph->device = device;
  graph->capturing = true;
  *handle = (cudaGraph_t)graph_handles().add(graph);
  return graph;
}

void graph_forget(cudaGraph_t handle) { graph_handles().remove(handle); }

}  // namespace plm_emu

using namespace plm_emu;

extern "C" {

cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags) {
  EMU_ENTER();
  if (!pGraph || flags) return fail(cudaErrorInvalidValue);
  std::shared_ptr<graph_state> graph = graph_new(current_device(), pGraph);
  graph->capturing = false;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  EMU_ENTER();
  if (!graph) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<graph_state> state = graph_handles().find(graph);
  if (!state) return fail(cudaErrorInvalidResourceHandle);
  if (state->capturing) return fail(cudaErrorIllegalState);
  graph_handles().remove(graph);
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  EMU_ENTER();
  const unsigned long long known = cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |
                                   cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagUseNodePriority;
  if (!pGraphExec || !graph || (flags & ~known)) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<graph_state> state = graph_handles().find(graph);
  if (!state) return fail(cudaErrorInvalidResourceHandle);
  if (state->capturing) return fail(cudaErrorIllegalState);
  auto exec = std::make_shared<exec_state>();
  exec->device = state->device;
  std::map<const graph_node *, size_t> index;
  for (const auto &node : state->nodes) index[node.get()] = index.size();
  char label[160];
  for (const auto &node : state->nodes) {
    exec_node entry;
    entry.node = *node;
    entry.node.deps.clear();
    for (const graph_node *dep : node->deps) entry.deps.push_back(index.at(dep));
    std::snprintf(label, sizeof label, "graph node %zu (%s: %s)", exec->nodes.size(), type_name(node->type),
                  node->what.c_str());
    entry.timeline = timeline_new(label);
    exec->nodes.push_back(std::move(entry));
  }
  *pGraphExec = (cudaGraphExec_t)exec_handles().add(exec);
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  return cudaGraphInstantiateWithFlags(pGraphExec, graph, flags);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  EMU_ENTER();
  if (!graphExec) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  if (!exec_handles().remove(graphExec)) return fail(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t handle) {
  EMU_ENTER();
  if (!graphExec) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> hold(api_lock());
  std::shared_ptr<exec_state> exec = exec_handles().find(graphExec);
  std::shared_ptr<stream_state> stream = find_stream(handle);
  if (!exec || !stream) return fail(cudaErrorInvalidResourceHandle);
  if (stream->device != exec->device) return fail(cudaErrorInvalidValue);
  if (stream->capture) {
    EMU_TRY(capture_usable(*stream));
    invalidate_capture(stream->capture);
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (stream->kind == stream_kind::legacy) EMU_TRY(capture_permits(capture_use::legacy, stream->device));

  std::vector<std::shared_ptr<completion>> after;
  if (exec->last_launch) after.push_back(exec->last_launch);
  const vclock base = stamp_next(*stream, after, &exec->last_clock);
  auto plan = std::make_shared<replay>();
  plan->exec = exec;
  plan->order = random_order(*exec);
  const size_t count = exec->nodes.size();
  plan->clocks.resize(count);
  plan->records.resize(count);
  plan->waits.resize(count);
  vclock end = base;
  /* Clocks in the drawn order (a topological one): each node after its dependencies. */
  for (size_t index : plan->order) {
    const exec_node &entry = exec->nodes[index];
    vclock clock = base;
    for (size_t dep : entry.deps) clock.join(plan->clocks[dep]);
    if (entry.node.type == node_type::event_wait) {
      std::shared_ptr<event_record> record = entry.node.event->last;
      if (record && record->done) {
        plan->waits[index] = record->done;
        clock.join(record->clock);
      }
    }
    clock.tick(entry.timeline);
    if (entry.node.type == node_type::event_record) {
      auto record = std::make_shared<event_record>();
      record->done = std::make_shared<completion>();
      record->clock = clock;
      entry.node.event->last = record;
      plan->records[index] = record;
    }
    plan->clocks[index] = clock;
    end.join(clock);
  }
  exec->last_launch = enqueue_with_clock(*stream, "cudaGraphLaunch", [plan](const op_context &) {
    return run_replay(*plan);
  }, std::move(after), end);
  exec->last_clock = end;
  return cudaSuccess;
}

}  // extern "C"

/* emu/clock.cpp: timelines, vector clocks and the host's clock (emu/emu.h). */
#include <algorithm>
#include <atomic>
#include <mutex>

#include "emu/emu.h"

namespace plm_emu {

namespace {

std::mutex timelines_lock;
std::vector<std::string> &timeline_labels() {
  static auto *labels = new std::vector<std::string>{"(no timeline)"};
  return *labels;
}

std::mutex host_lock;
vclock &host_clock_value() {
  static auto *clock = new vclock();
  return *clock;
}

std::atomic<uint64_t> next_op_id{1};

}  // namespace

timeline_id timeline_new(const std::string &label) {
  std::lock_guard<std::mutex> hold(timelines_lock);
  timeline_labels().push_back(label);
  return (timeline_id)(timeline_labels().size() - 1);
}

std::string timeline_label(timeline_id timeline) {
  std::lock_guard<std::mutex> hold(timelines_lock);
  if (timeline >= timeline_labels().size()) return "(unknown timeline)";
  return timeline_labels()[timeline];
}

uint64_t vclock::at(timeline_id timeline) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), timeline,
                             [](const std::pair<timeline_id, uint64_t> &e, timeline_id t) { return e.first < t; });
  return it != entries_.end() && it->first == timeline ? it->second : 0;
}

uint64_t vclock::tick(timeline_id timeline) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), timeline,
                             [](const std::pair<timeline_id, uint64_t> &e, timeline_id t) { return e.first < t; });
  if (it != entries_.end() && it->first == timeline) return ++it->second;
  entries_.insert(it, {timeline, 1});
  return 1;
}

void vclock::join(const vclock &other) {
  if (other.entries_.empty()) return;
  std::vector<std::pair<timeline_id, uint64_t>> merged;
  merged.reserve(entries_.size() + other.entries_.size());
  auto a = entries_.cbegin();
  auto b = other.entries_.cbegin();
  while (a != entries_.cend() || b != other.entries_.cend()) {
    if (b == other.entries_.cend() || (a != entries_.cend() && a->first < b->first)) {
      merged.push_back(*a++);
    } else if (a == entries_.cend() || b->first < a->first) {
      merged.push_back(*b++);
    } else {
      merged.push_back({a->first, std::max(a->second, b->second)});
      ++a;
      ++b;
    }
  }
  entries_.swap(merged);
}

void host_clock_learn(const vclock &finished) {
  std::lock_guard<std::mutex> hold(host_lock);
  host_clock_value().join(finished);
}

vclock host_clock() {
  std::lock_guard<std::mutex> hold(host_lock);
  return host_clock_value();
}

uint64_t op_id_new() { return next_op_id.fetch_add(1, std::memory_order_relaxed); }

}  // namespace plm_emu

/* emu/count/report.cpp: the emulated cost of counted launches on a named device, per
 * kernel and per section, as text and JSON (emu/count/emu_count.h).
 *
 * The estimate of one launch is the largest of four bounds plus the launch's overhead:
 *   dram    (distinct sectors + sectors the L2 fetched again) x 32 B / DRAM bandwidth;
 *   l2      sectors of the global load and store requests x 32 B / L2 bandwidth;
 *   shared  (shared wavefronts + shared atomic steps + shuffle instructions) / (SMs x
 *           clock), one wavefront (32 banks x 4 B) per SM per clock, and a warp's 32-bit
 *           shuffle one such clock: the SM's MIO unit issues one instruction a clock to
 *           the pipe that serves shared memory, shuffles included (NVIDIA's answer on
 *           the developer forums, "How does the LSU execute load/store instructions in
 *           the Ampere architecture", 2023; Nsight Compute's profiling guide lists
 *           shuffles among the LSU pipe's instructions), and the CUDA C++ Programming
 *           Guide gives warp shuffles 32 results a clock per SM for compute capability
 *           9.0, a warp's shuffle a clock;
 *   atomics the larger of the global atomic steps over the device's assumed rate and the
 *           operations on the launch's hottest address at one per clock;
 * and the overhead is one launch (or, for a graph, one graph node). A kernel's or a
 * section's estimate is the sum over its launches; its bound is the one that won the most
 * time. The floor is what a kernel cannot beat: its distinct sectors over DRAM bandwidth.
 * What this leaves out is in emu/README.md ("Counted cost"). */
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <strings.h>

#include "emu/count/counters.h"

namespace {

/* The devices. Sources (public, checked 2026):
 *   H100 SXM5: NVIDIA H100 Tensor Core GPU datasheet: HBM3 at 3.35 TB/s; NVIDIA H100
 *     Tensor Core GPU Architecture whitepaper (2022): 132 SMs, 50 MB L2, 32 banks of 4
 *     bytes of shared memory (128 B per clock per SM, the CUDA C++ Programming Guide,
 *     compute capability 9.0); boost clock 1.98 GHz (the SM clock nvidia-smi reports as
 *     the maximum on H100 SXM5).
 *   H200 SXM: NVIDIA H200 Tensor Core GPU datasheet: HBM3e at 4.8 TB/s; the same GH100
 *     die, so 132 SMs, 50 MB L2 and the same clock.
 * Not published by NVIDIA, and so assumptions until the GPU campaign measures them:
 *   L2 bandwidth about 5.5 TB/s (microbenchmarks of H100 SXM by Chips and Cheese, 2023);
 *   global atomics: one warp request's step per SM per clock, and one operation per
 *     clock on one address (an L2 slice serialises it);
 *   launch cost 2.5 us per kernel launched back to back on a stream, 1 us per kernel node
 *     of a replayed CUDA graph (NVIDIA's "Getting started with CUDA Graphs" blog shows
 *     launches of a few microseconds and graph nodes well under that). */
const plm_emu_device_model kDevices[] = {
    {"H100 SXM", 3.35e12, 5.5e12, 50e6, 132, 1.98e9, 1.0, 132.0, 2.5e-6, 1.0e-6},
    {"H200", 4.8e12, 5.5e12, 50e6, 132, 1.98e9, 1.0, 132.0, 2.5e-6, 1.0e-6},
};

/* A row of the report: a kernel of a section, or a whole section. */
struct row {
  plm_emu_counts counts{};
  double bounds[4] = {0, 0, 0, 0};     /* each bound's time, summed over launches */
  double bound_time[4] = {0, 0, 0, 0}; /* the time of the launches each bound won */
  double bound_s = 0, launch_s = 0, estimate_s = 0, graph_estimate_s = 0, floor_s = 0;
  const char *bound() const {
    static const char *const names[] = {"dram", "l2", "shared", "atomics"};
    int best = 0;
    for (int i = 1; i < 4; i++)
      if (bound_time[i] > bound_time[best]) best = i;
    return names[best];
  }
  void add(const plm_emu_counts &launch, const plm_emu_estimate &e) {
    plm_emu::counts_add(counts, launch);
    const char *const names[] = {"dram", "l2", "shared", "atomics"};
    const double each[4] = {e.dram_s, e.l2_s, e.shared_s, e.atomics_s};
    for (int i = 0; i < 4; i++) {
      bounds[i] += each[i];
      if (std::strcmp(e.bound, names[i]) == 0) bound_time[i] += e.bound_s;
    }
    bound_s += e.bound_s;
    launch_s += e.launch_s;
    estimate_s += e.estimate_s;
    graph_estimate_s += e.graph_estimate_s;
    floor_s += e.floor_s;
  }
};

/* "entropy.cu:412" of "kernels/cuda/entropy.cu:412": the rows name the launch too (a
 * launch through a variable is named by the variable, "kernel"). */
std::string short_site(const std::string &site) {
  const size_t slash = site.rfind('/');
  return slash == std::string::npos ? site : site.substr(slash + 1);
}

double ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0.0; }

void text_row(FILE *out, const std::string &name, const row &r) {
  const plm_emu_counts &c = r.counts;
  std::fprintf(out, "%-40s %5llu %9.3f %9.3f %6.2f %6.2f %9.3f %8.3f %6.2f %7.2f %8llu %6.1f %9.1f %9.3f %9.3f %9.3f %-7s\n",
               name.c_str(), (unsigned long long)c.launches, c.load_bytes / 1e6, c.store_bytes / 1e6,
               ratio(c.load_sectors, c.load_requests), ratio(c.store_sectors, c.store_requests),
               c.distinct_sectors * 32 / 1e6, c.l2_refetch_sectors * 32 / 1e6,
               ratio(c.shared_wavefronts, c.shared_requests),
               ratio(c.global_atomic_steps + c.shared_atomic_steps,
                     c.global_atomic_requests + c.shared_atomic_requests),
               (unsigned long long)c.barriers, ratio(c.collective_lanes, c.collectives), c.shuffles / 1e3,
               r.floor_s * 1e6,
               r.estimate_s * 1e6, r.graph_estimate_s * 1e6, r.bound());
}

void json_string(FILE *out, const std::string &s) {
  std::fputc('"', out);
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') std::fprintf(out, "\\%c", ch);
    else if (ch < 0x20) std::fprintf(out, "\\u%04x", ch);
    else std::fputc(ch, out);
  }
  std::fputc('"', out);
}

void json_row(FILE *out, const row &r, const char *indent) {
  const plm_emu_counts &c = r.counts;
  const struct {
    const char *name;
    uint64_t value;
  } fields[] = {{"launches", c.launches},
                {"blocks", c.blocks},
                {"threads", c.threads},
                {"load_requests", c.load_requests},
                {"load_bytes", c.load_bytes},
                {"load_sectors", c.load_sectors},
                {"store_requests", c.store_requests},
                {"store_bytes", c.store_bytes},
                {"store_sectors", c.store_sectors},
                {"distinct_sectors", c.distinct_sectors},
                {"l2_refetch_sectors", c.l2_refetch_sectors},
                {"shared_requests", c.shared_requests},
                {"shared_wavefronts", c.shared_wavefronts},
                {"global_atomic_requests", c.global_atomic_requests},
                {"global_atomic_ops", c.global_atomic_ops},
                {"global_atomic_steps", c.global_atomic_steps},
                {"global_atomic_hottest", c.global_atomic_hottest},
                {"shared_atomic_requests", c.shared_atomic_requests},
                {"shared_atomic_ops", c.shared_atomic_ops},
                {"shared_atomic_steps", c.shared_atomic_steps},
                {"barriers", c.barriers},
                {"collectives", c.collectives},
                {"collective_lanes", c.collective_lanes},
                {"shuffles", c.shuffles}};
  std::fprintf(out, "%s\"counts\": {", indent);
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    std::fprintf(out, "%s\"%s\": %llu", i ? ", " : "", fields[i].name, (unsigned long long)fields[i].value);
  std::fprintf(out, "},\n%s\"sectors_per_load_request\": %.4f, \"sectors_per_store_request\": %.4f, "
               "\"shared_replay\": %.4f, \"lanes_per_collective\": %.3f,\n",
               indent, ratio(c.load_sectors, c.load_requests), ratio(c.store_sectors, c.store_requests),
               ratio(c.shared_wavefronts, c.shared_requests), ratio(c.collective_lanes, c.collectives));
  std::fprintf(out, "%s\"estimate\": {\"dram_s\": %.6e, \"l2_s\": %.6e, \"shared_s\": %.6e, \"atomics_s\": %.6e, "
               "\"bound_s\": %.6e, \"bound\": \"%s\", \"launch_s\": %.6e, \"estimate_s\": %.6e, "
               "\"graph_estimate_s\": %.6e, \"floor_s\": %.6e}",
               indent, r.bounds[0], r.bounds[1], r.bounds[2], r.bounds[3], r.bound_s,
               r.bound(), r.launch_s, r.estimate_s, r.graph_estimate_s, r.floor_s);
}

const char kHeader[] =
    "%-40s %5s %9s %9s %6s %6s %9s %8s %6s %7s %8s %6s %9s %9s %9s %9s %-7s\n";

}  // namespace

extern "C" const plm_emu_device_model *plm_emu_device_model_find(const char *name) {
  if (!name) return nullptr;
  for (const plm_emu_device_model &d : kDevices)
    if (strcasecmp(name, d.name) == 0) return &d;
  if (strcasecmp(name, "H100") == 0) return &kDevices[0];
  if (strcasecmp(name, "H200 SXM") == 0) return &kDevices[1];
  return nullptr;
}

extern "C" void plm_emu_count_estimate(const plm_emu_counts *c, const plm_emu_device_model *d,
                                       plm_emu_estimate *e) {
  if (!c || !d || !e) return;
  const double sector = 32.0;
  e->dram_s = (double)(c->distinct_sectors + c->l2_refetch_sectors) * sector / d->dram_bytes_per_s;
  e->l2_s = (double)(c->load_sectors + c->store_sectors) * sector / d->l2_bytes_per_s;
  e->shared_s = (double)(c->shared_wavefronts + c->shared_atomic_steps + c->shuffles) /
                (d->sms * d->clock_hz * d->shared_wavefronts_per_clock_per_sm);
  e->atomics_s = std::fmax((double)c->global_atomic_steps / (d->global_atomic_steps_per_clock * d->clock_hz),
                           (double)c->global_atomic_hottest / d->clock_hz);
  const double bounds[4] = {e->dram_s, e->l2_s, e->shared_s, e->atomics_s};
  static const char *const names[] = {"dram", "l2", "shared", "atomics"};
  int best = 0;
  for (int i = 1; i < 4; i++)
    if (bounds[i] > bounds[best]) best = i;
  e->bound_s = bounds[best];
  e->bound = names[best];
  e->launch_s = (double)c->launches * d->launch_s;
  e->estimate_s = e->bound_s + e->launch_s;
  e->graph_estimate_s = e->bound_s + (double)c->launches * d->graph_node_s;
  e->floor_s = (double)c->distinct_sectors * sector / d->dram_bytes_per_s;
}

extern "C" int plm_emu_count_report(const char *device, FILE *text, const char *json_path) {
  using namespace plm_emu;
  const plm_emu_device_model *d = plm_emu_device_model_find(device);
  if (!d) {
    std::fprintf(stderr, "plume cuda emulator: plm_emu_count_report: no device '%s' (H100, H200)\n",
                 device ? device : "(null)");
    return -1;
  }
  const std::vector<section_record> sections = count_sections();
  /* Rows per section: each kernel (in order of first launch; one name launched from two
   * sites is two rows), then the section. */
  struct kernel_row {
    std::string kernel, site;
    row r;
  };
  struct section_rows {
    std::vector<kernel_row> kernels;
    row total;
  };
  std::vector<section_rows> all(sections.size());
  for (size_t s = 0; s < sections.size(); s++) {
    std::map<std::string, size_t> index;
    for (const launch_record &l : sections[s].launches) {
      plm_emu_estimate e;
      plm_emu_count_estimate(&l.counts, d, &e);
      const std::string key = l.kernel + "@" + l.site;
      auto it = index.find(key);
      if (it == index.end()) {
        it = index.emplace(key, all[s].kernels.size()).first;
        all[s].kernels.push_back(kernel_row{l.kernel, l.site, row()});
      }
      all[s].kernels[it->second].r.add(l.counts, e);
      all[s].total.add(l.counts, e);
    }
  }
  if (text) {
    std::fprintf(text, "emulated cost: an estimate for %s from the CUDA emulator's counts, not a "
                 "measurement\n(model and limits: emu/README.md, \"Counted cost\"; MB = 1e6 bytes, "
                 "us = microseconds)\n", d->name);
    for (size_t s = 0; s < sections.size(); s++) {
      std::fprintf(text, "\nsection %s\n", sections[s].label.c_str());
      std::fprintf(text, kHeader, "kernel", "runs", "load MB", "store MB", "ld s/r", "st s/r",
                   "DRAM MB", "L2 re MB", "smem", "atomic", "barriers", "lanes", "shfl k", "floor us",
                   "est us", "graph us", "bound");
      for (const kernel_row &k : all[s].kernels) text_row(text, k.kernel + " " + short_site(k.site), k.r);
      if (all[s].kernels.size() > 1) text_row(text, "(section)", all[s].total);
    }
    std::fprintf(text, "\ncolumns: ld/st s/r = 32-byte sectors per warp request (4 is perfect "
                 "for 4-byte lanes); DRAM MB = distinct sectors (the floor's bytes); L2 re = "
                 "sectors a 50 MB L2 fetched again; smem = wavefronts per shared request (the "
                 "bank-conflict replay); atomic = steps per atomic request (same-address "
                 "serialisation); lanes = lanes per warp collective; shfl k = thousands of "
                 "32-bit warp shuffles (charged to the shared pipe); est = largest bound + "
                 "launches; graph = largest bound + graph nodes\n");
  }
  if (json_path) { /* written whole or not at all: into PATH.tmp, then renamed */
    const std::string partial = std::string(json_path) + ".tmp";
    FILE *out = std::fopen(partial.c_str(), "w");
    if (!out) {
      std::fprintf(stderr, "plume cuda emulator: plm_emu_count_report: cannot write '%s'\n", json_path);
      return -1;
    }
    std::fprintf(out, "{\n  \"what\": \"emulated cost: an estimate from the CUDA emulator's counts, not a measurement\",\n");
    std::fprintf(out, "  \"device\": {\"name\": \"%s\", \"dram_bytes_per_s\": %.4g, \"l2_bytes_per_s\": %.4g, "
                 "\"l2_bytes\": %.4g, \"sms\": %d, \"clock_hz\": %.4g, \"shared_wavefronts_per_clock_per_sm\": %g, "
                 "\"global_atomic_steps_per_clock\": %g, \"launch_s\": %.3g, \"graph_node_s\": %.3g},\n",
                 d->name, d->dram_bytes_per_s, d->l2_bytes_per_s, d->l2_bytes, d->sms, d->clock_hz,
                 d->shared_wavefronts_per_clock_per_sm, d->global_atomic_steps_per_clock, d->launch_s,
                 d->graph_node_s);
    std::fprintf(out, "  \"sections\": [");
    for (size_t s = 0; s < sections.size(); s++) {
      std::fprintf(out, "%s\n    {\"label\": ", s ? "," : "");
      json_string(out, sections[s].label);
      std::fprintf(out, ",\n");
      json_row(out, all[s].total, "     ");
      std::fprintf(out, ",\n     \"kernels\": [");
      for (size_t k = 0; k < all[s].kernels.size(); k++) {
        std::fprintf(out, "%s\n       {\"kernel\": ", k ? "," : "");
        json_string(out, all[s].kernels[k].kernel);
        std::fprintf(out, ", \"site\": ");
        json_string(out, all[s].kernels[k].site);
        std::fprintf(out, ",\n");
        json_row(out, all[s].kernels[k].r, "        ");
        std::fprintf(out, "}");
      }
      std::fprintf(out, "]}");
    }
    std::fprintf(out, "\n  ]\n}\n");
    const bool written = !std::ferror(out);
    if (std::fclose(out) != 0 || !written || std::rename(partial.c_str(), json_path) != 0) {
      std::remove(partial.c_str());
      std::fprintf(stderr, "plume cuda emulator: plm_emu_count_report: cannot write '%s'\n", json_path);
      return -1;
    }
  }
  return 0;
}

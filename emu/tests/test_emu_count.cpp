/* emu/tests/test_emu_count.cpp: the emulator's counters of memory traffic against kernels
 * whose traffic is known exactly (emu/tests/count_kernels.cu), and the report.
 *
 * Known cases: a copy, vector_add and threshold count their bytes, requests and sectors
 * exactly, and the copy as float4 quads (through the cache-hint intrinsics) a quarter of
 * the requests, 16 sectors each; a stride-32 read takes 32 sectors a request, 8 times a
 * copy's 4; shared reads of stride 1, 2 and 32 take 1, 2 and 32 wavefronts, a broadcast
 * 1; 32 lanes adding to one address take 32 steps, global and shared; barriers and the
 * lanes of collectives, the shuffles among them as 32-bit instructions (a double's two)
 * that the estimate charges to the shared pipe; a full warp's collective starting its access numbering again
 * (a loop whose lanes load different numbers of times a trip); the L2's LRU (in an L2 of two sectors, 0,1,0,2,0,3 fetches nothing
 * again, 0,1,2,0,1,2 three).
 * Then the estimate names the bound that wins, the report's text and JSON, and bad calls.
 * Runs under any PLUME_EMU_SEED and PLUME_EMU_BLOCK_THREADS (CTest runs two). */
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "emu/count/emu_count.h"
#include "emu/tests/emu_check.h"
#include "emu/tests/count_kernels.h"

namespace {

using plm_emu_test::check;
using plm_emu_test::failures;

std::string u(uint64_t v) { return std::to_string((unsigned long long)v); }

/* Device memory of `count` T, every byte `value`. */
template <class T>
T *device(size_t count, int value = 0) {
  void *p = nullptr;
  CUDA_OK(cudaMalloc(&p, count * sizeof(T)));
  CUDA_OK(cudaMemset(p, value, count * sizeof(T)));
  CUDA_OK(cudaDeviceSynchronize()); /* the legacy stream's memset, before the test's stream */
  return static_cast<T *>(p);
}

/* Counts `launch` (one enqueue on s) in section `label`; returns kernel's counts. */
template <class F>
plm_emu_counts counted(const char *label, const char *kernel, cudaStream_t s, F launch) {
  check(plm_emu_count_begin(label) == 0, std::string("section ") + label + " opens");
  CUDA_OK(launch());
  CUDA_OK(cudaStreamSynchronize(s));
  plm_emu_count_end();
  plm_emu_counts c;
  const uint64_t launches = plm_emu_count_get(label, kernel, &c);
  check(launches == 1, std::string(label) + ": one launch of " + kernel + " counted (" + u(launches) + ")");
  return c;
}

void test_streaming(cudaStream_t s) {
  const int n = 4096;
  float *a = device<float>(32 * n), *b = device<float>(n), *c = device<float>(n);
  uint8_t *bytes = device<uint8_t>(n);

  plm_emu_counts copy = counted("copy", "copy_kernel", s, [&] { return count_copy(a, c, n, s); });
  check(copy.load_bytes == 4u * n && copy.store_bytes == 4u * n,
        "copy: " + u(copy.load_bytes) + " bytes loaded and " + u(copy.store_bytes) + " stored, 16384 each");
  check(copy.load_requests == n / 32 && copy.load_sectors == 4 * (n / 32) && copy.store_requests == n / 32 &&
            copy.store_sectors == 4 * (n / 32),
        "copy: 128 load and 128 store requests of 4 sectors (" + u(copy.load_requests) + ", " +
            u(copy.load_sectors) + ", " + u(copy.store_requests) + ", " + u(copy.store_sectors) + ")");
  check(copy.distinct_sectors == 2u * n * 4 / 32 && copy.l2_refetch_sectors == 0,
        "copy: 1024 distinct sectors, none fetched again (" + u(copy.distinct_sectors) + ", " +
            u(copy.l2_refetch_sectors) + ")");
  check(copy.blocks == 16 && copy.threads == 4096 && copy.shared_requests == 0 && copy.barriers == 0 &&
            copy.global_atomic_ops == 0,
        "copy: 16 blocks of 256 threads, no shared memory, barrier or atomic");

  /* A vector load or store is one access of its width: a quarter of the copy's requests,
   * 16 sectors each, the same bytes and sectors. */
  plm_emu_counts quads = counted("copy quads", "copy_quads_kernel", s,
                                 [&] { return count_copy_quads(a, c, n, s); });
  check(quads.load_bytes == 4u * n && quads.store_bytes == 4u * n && quads.load_requests == n / 128 &&
            quads.store_requests == n / 128 && quads.load_sectors == copy.load_sectors &&
            quads.store_sectors == copy.store_sectors,
        "copy as float4 quads: 32 load and 32 store requests of 16 sectors, 16384 bytes each (" +
            u(quads.load_requests) + ", " + u(quads.load_sectors) + ", " + u(quads.store_requests) + ", " +
            u(quads.store_sectors) + ", " + u(quads.load_bytes) + ")");

  plm_emu_counts strided = counted("stride32", "stride32_kernel", s, [&] { return count_stride32(a, c, 1024, s); });
  check(strided.load_requests == 32 && strided.load_sectors == 32 * 32 && strided.load_bytes == 4096,
        "stride 32: 32 load requests of 32 sectors, 4096 bytes (" + u(strided.load_requests) + ", " +
            u(strided.load_sectors) + ", " + u(strided.load_bytes) + ")");
  const double ratio = (double)strided.load_sectors / (double)strided.load_requests /
                       ((double)copy.load_sectors / (double)copy.load_requests);
  check(ratio == 8.0, "stride 32 takes 8x the sectors per request of unit stride (" + std::to_string(ratio) + ")");

  const int odd = 4010; /* the last warp has 10 lanes: 40 bytes in 2 sectors */
  plm_emu_counts add = counted("vector_add", "vector_add_kernel", s,
                               [&] { return count_vector_add(a, b, c, odd, s); });
  check(add.load_bytes == 2u * 4 * odd && add.store_bytes == 4u * odd,
        "vector_add of 4010: " + u(add.load_bytes) + " bytes loaded (32080), " + u(add.store_bytes) +
            " stored (16040)");
  check(add.load_requests == 2 * 126 && add.store_requests == 126 && add.load_sectors == 2 * 502 &&
            add.store_sectors == 502 && add.distinct_sectors == 3 * 502,
        "vector_add: 126 requests an array, 502 sectors each (" + u(add.load_requests) + ", " +
            u(add.load_sectors) + ", " + u(add.store_sectors) + ", " + u(add.distinct_sectors) + ")");

  plm_emu_counts thr = counted("threshold", "threshold_kernel", s,
                               [&] { return count_threshold(a, bytes, 0.5f, n, s); });
  check(thr.load_bytes == 4u * n && thr.store_bytes == (uint64_t)n && thr.store_sectors == n / 32 &&
            thr.distinct_sectors == (uint64_t)(4 * n + n) / 32,
        "threshold: 16384 bytes loaded, 4096 stored in 1 sector a request, 640 distinct (" +
            u(thr.load_bytes) + ", " + u(thr.store_bytes) + ", " + u(thr.store_sectors) + ", " +
            u(thr.distinct_sectors) + ")");

  const plm_emu_device_model *h100 = plm_emu_device_model_find("H100");
  check(h100 && plm_emu_device_model_find("h200") && !plm_emu_device_model_find("A100"),
        "devices: H100 and H200 known, A100 not");
  if (h100) {
    plm_emu_estimate e;
    plm_emu_count_estimate(&copy, h100, &e);
    const double dram = 1024.0 * 32 / h100->dram_bytes_per_s;
    check(std::strcmp(e.bound, "dram") == 0 && std::fabs(e.dram_s - dram) < 1e-15 &&
              std::fabs(e.estimate_s - (dram + h100->launch_s)) < 1e-15 && e.floor_s == e.dram_s,
          std::string("copy on an H100: DRAM-bound, 32 KiB over 3.35 TB/s plus a launch (") + e.bound + ")");
  }
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  CUDA_OK(cudaFree(c));
  CUDA_OK(cudaFree(bytes));
}

void test_shared(cudaStream_t s) {
  float *out = device<float>(64);
  const struct {
    int stride;
    uint64_t wavefronts;
    const char *what;
  } cases[] = {{1, 1, "unit stride"}, {2, 2, "stride 2"}, {32, 32, "stride 32"}, {0, 1, "a broadcast"}};
  for (const auto &k : cases) {
    const std::string label = std::string("shared ") + k.what;
    plm_emu_counts c = counted(label.c_str(), "shared_stride_kernel", s,
                               [&] { return count_shared_stride(k.stride, out, 2, s); });
    /* Per block: 32 unit-stride writes (1 wavefront each) and the read. */
    const uint64_t read = c.shared_wavefronts - 2 * 32;
    check(c.shared_requests == 2 * 33 && read == 2 * k.wavefronts && c.barriers == 2,
          label + ": the read takes " + u(read / 2) + " wavefronts (expected " + u(k.wavefronts) + "; " +
              u(c.shared_requests) + " requests, " + u(c.barriers) + " barriers)");
  }
  CUDA_OK(cudaFree(out));
}

void test_atomics_and_collectives(cudaStream_t s) {
  int *counters = device<int>(33), *out = device<int>(64);
  plm_emu_counts c = counted("atomics", "atomics_kernel", s, [&] { return count_atomics(counters, out, s); });
  check(c.global_atomic_requests == 4 && c.global_atomic_ops == 128 && c.global_atomic_steps == 2 * 32 + 2 &&
            c.global_atomic_hottest == 64,
        "global atomics: one address serialises 32 lanes, distinct ones 1 (" + u(c.global_atomic_requests) +
            " requests, " + u(c.global_atomic_steps) + " steps, hottest " + u(c.global_atomic_hottest) + ")");
  check(c.shared_atomic_requests == 4 && c.shared_atomic_ops == 128 && c.shared_atomic_steps == 2 * 32 + 2,
        "shared atomics: one address serialises 32 lanes, distinct ones 1 (" + u(c.shared_atomic_requests) +
            " requests, " + u(c.shared_atomic_steps) + " steps)");
  check(c.barriers == 2, "atomics: 2 barriers (" + u(c.barriers) + ")");
  std::vector<int> host(33);
  CUDA_OK(cudaMemcpy(host.data(), out, 33 * sizeof(int), cudaMemcpyDeviceToHost));
  check(host[0] == 64 && host[1] == 2 && host[32] == 2, "atomics: the sums are right");
  const plm_emu_device_model *h100 = plm_emu_device_model_find("H100 SXM");
  if (h100) {
    plm_emu_estimate e;
    plm_emu_count_estimate(&c, h100, &e);
    check(std::strcmp(e.bound, "atomics") == 0 && std::fabs(e.atomics_s - 64 / h100->clock_hz) < 1e-15,
          std::string("atomics on an H100: bound by 64 operations on one address (") + e.bound + ")");
  }

  plm_emu_counts w = counted("collectives", "collectives_kernel", s, [&] { return count_collectives(out, s); });
  check(w.collectives == 8 && w.collective_lanes == 2 * (32 + 16 + 32 + 32),
        "collectives: 8, a full __syncwarp, a half-warp shuffle, a double's shuffle and a ballot per "
        "warp (" + u(w.collectives) + ", " + u(w.collective_lanes) + " lanes)");
  check(w.shuffles == 2 * (1 + 2),
        "shuffles: 3 a warp, the int's 1 and the double's 2 (two 32-bit SHFLs), the ballot and "
        "__syncwarp none (" + u(w.shuffles) + ")");
  if (h100) {
    plm_emu_estimate e;
    plm_emu_count_estimate(&w, h100, &e);
    const double shuffles_s = 6 / (h100->sms * h100->clock_hz * h100->shared_wavefronts_per_clock_per_sm);
    check(std::fabs(e.shared_s - shuffles_s) < 1e-18,
          "shuffles on an H100: a warp's shuffle a clock of the shared pipe (" + std::to_string(e.shared_s) + " s)");
  }
  CUDA_OK(cudaFree(counters));
  CUDA_OK(cudaFree(out));
}

/* A warp collective naming every lane starts the warp's access numbering again: with a
 * __syncwarp closing each trip, a trip's first loads (32 lanes, row 2r) are one request of
 * 4 sectors and the odd lanes' second (row 2r + 1) one of 4; without it, the even lanes'
 * k-th load meets the odd lanes' k-th, of another trip, and the requests touch more
 * sectors, as no GPU's would. */
void test_divergent_trips(cudaStream_t s) {
  const int rows = 8;
  float *in = device<float>(2 * rows * 32), *out = device<float>(32);
  plm_emu_counts together = counted("divergent trips, together", "divergent_trips_kernel", s, [&] {
    return count_divergent_trips(in, out, rows, 1, s);
  });
  check(together.load_requests == 2 * rows && together.load_sectors == 8 * rows &&
            together.load_bytes == 4u * 48 * rows,
        "trips closed by __syncwarp: 2 load requests of 4 sectors a trip (" +
            u(together.load_requests) + " requests, " + u(together.load_sectors) + " sectors)");
  plm_emu_counts apart = counted("divergent trips, apart", "divergent_trips_kernel", s, [&] {
    return count_divergent_trips(in, out, rows, 0, s);
  });
  check(apart.load_requests == 2 * rows && apart.load_sectors > together.load_sectors,
        "trips without a collective: the k-th loads of different trips grouped (" +
            u(apart.load_requests) + " requests, " + u(apart.load_sectors) + " sectors)");
  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(out));
}

/* The L2's LRU: with room for 2 sectors, 0,1,0,2,0,3 keeps 0 and fetches nothing again
 * (FIFO would drop 0), 0,1,2,0,1,2 fetches each again; with 50 MB neither does. */
void test_l2(cudaStream_t s) {
  float *in = device<float>(64), *out = device<float>(8);
  const struct {
    int pattern;
    size_t l2;
    uint64_t refetch;
    const char *label;
  } cases[] = {{0, 64, 0, "l2 lru-friendly in 2 sectors"},
               {1, 64, 3, "l2 cyclic in 2 sectors"},
               {1, 50u * 1024 * 1024, 0, "l2 cyclic in 50 MB"}};
  for (const auto &k : cases) {
    check(plm_emu_count_set_l2_bytes(k.l2) == 0, "the L2 set to " + u(k.l2) + " bytes");
    plm_emu_counts c = counted(k.label, "sector_pattern_kernel", s,
                               [&] { return count_sector_pattern(k.pattern, in, out, s); });
    check(c.l2_refetch_sectors == k.refetch && c.distinct_sectors == (k.pattern == 0 ? 5u : 4u) &&
              c.load_requests == 6,
          std::string(k.label) + ": " + u(c.l2_refetch_sectors) + " sectors fetched again (expected " +
              u(k.refetch) + "), " + u(c.distinct_sectors) + " distinct");
  }
  check(plm_emu_count_set_l2_bytes(31) == -1, "an L2 of less than one sector is refused");
  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(out));
}

void test_off_and_report(cudaStream_t s) {
  float *a = device<float>(256), *b = device<float>(256);
  CUDA_OK(count_copy(a, b, 256, s)); /* no section open: not counted */
  CUDA_OK(cudaStreamSynchronize(s));
  plm_emu_counts none;
  check(plm_emu_count_get("copy", nullptr, &none) == 1, "a launch with no section open is not counted");
  check(plm_emu_count_begin(nullptr) == -1 && plm_emu_count_begin("") == -1, "a NULL or empty label is refused");
  check(plm_emu_count_begin("outer") == 0 && plm_emu_count_begin("inner") == -1,
        "a section cannot open inside another");
  plm_emu_count_end();

  const char *tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/plume-emu-count-XXXXXX";
  check(mkdtemp(&dir[0]) != nullptr, "a scratch directory");
  const std::string json = dir + "/cost.json", text = dir + "/cost.txt";
  FILE *t = std::fopen(text.c_str(), "w");
  check(plm_emu_count_report("H100", t, json.c_str()) == 0, "the report is written");
  std::fclose(t);
  check(plm_emu_count_report("A100", nullptr, nullptr) == -1, "an unknown device is refused");
  check(plm_emu_count_report("H200", nullptr, (dir + "/no/such/dir.json").c_str()) == -1,
        "a JSON file that cannot be written is refused");
  auto slurp = [](const std::string &path) {
    std::string all;
    if (FILE *f = std::fopen(path.c_str(), "r")) {
      char buf[4096];
      size_t got;
      while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) all.append(buf, got);
      std::fclose(f);
    }
    return all;
  };
  const std::string tx = slurp(text), js = slurp(json);
  check(tx.find("not a measurement") != std::string::npos && tx.find("section shared stride 32") != std::string::npos &&
            tx.find("stride32_kernel") != std::string::npos,
        "the text report says it is an estimate and names sections and kernels");
  check(js.find("\"label\": \"atomics\"") != std::string::npos && js.find("\"bound\": \"atomics\"") != std::string::npos &&
            js.find("\"kernel\": \"copy_kernel\"") != std::string::npos && js.find("not a measurement") != std::string::npos,
        "the JSON report has the sections, kernels and bounds");
  std::remove(json.c_str());
  std::remove(text.c_str());
  rmdir(dir.c_str());
  plm_emu_count_clear();
  check(plm_emu_count_get("copy", nullptr, &none) == 0, "clear forgets the sections");
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
}

}  // namespace

int main() {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  test_streaming(s);
  test_shared(s);
  test_atomics_and_collectives(s);
  test_divergent_trips(s);
  test_l2(s);
  test_off_and_report(s);
  CUDA_OK(cudaStreamDestroy(s));
  std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}

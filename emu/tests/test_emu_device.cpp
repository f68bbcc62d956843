/* emu/tests/test_emu_device.cpp: the emulator's device side and its checks, tested.
 *
 * Three parts:
 *   - correct kernels (emu/tests/device_kernels.cu): every shuffle, vote, match and
 *     reduction with widths and partial masks, the barrier's counting forms, atomics of
 *     each type on global and shared memory from many blocks, static and dynamic shared
 *     memory in 3-D blocks and grids, a warp waiting for another with __nanosleep, WMMA
 *     in tf32 and bf16, opted-in shared memory past 48 KiB, blocks talking through global
 *     atomics: each result against what CUDA documents, computed here;
 *   - launches over the device's limits: the error a GPU returns;
 *   - planted defects, each run in a child process (a report ends the process), which
 *     must end with the emulator's report: the table of emu/README.md. Also a trap
 *     (the kernel's error is sticky, so it too runs apart).
 * Every part runs on whatever PLUME_EMU_SEED and PLUME_EMU_BLOCK_THREADS say; CTest runs
 * it under several.
 *
 * Usage: test_emu_device [--case NAME] (a child runs one planted defect). */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "emu/tests/emu_check.h"
#include "emu/tests/device_kernels.h"

namespace {

using plm_emu_test::check;
using plm_emu_test::failures;

template <class T>
std::vector<T> run(correct_kernel which, size_t count, const std::vector<float> &input = {},
                   cudaError_t *launch_error = nullptr) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *in = nullptr;
  void *out = nullptr;
  if (!input.empty()) {
    CUDA_OK(cudaMalloc((void **)&in, input.size() * sizeof(float)));
    CUDA_OK(cudaMemcpyAsync(in, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  }
  CUDA_OK(cudaMalloc(&out, count * sizeof(T)));
  CUDA_OK(cudaMemsetAsync(out, 0, count * sizeof(T), s));
  correct_args args{in, (float *)out, (int)input.size()};
  cudaError_t err = launch_correct(which, &args, s);
  if (launch_error) *launch_error = err;
  else CUDA_OK(err);
  std::vector<T> host(count);
  CUDA_OK(cudaMemcpyAsync(host.data(), out, count * sizeof(T), cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaFree(out));
  if (in) CUDA_OK(cudaFree(in));
  CUDA_OK(cudaStreamDestroy(s));
  return host;
}

/* ---- correct kernels ------------------------------------------------------------------ */

void test_shuffles() {
  std::vector<int> o = run<int>(correct_shuffles, 64 * 9);
  auto v = [](int lane) { return 3 * lane + 1; };
  int wrong = 0;
  for (int t = 0; t < 64; t++) {
    const int l = t % 32;
    const int expect[9] = {
        v(5),
        v((l & ~15) + ((l + 3) & 15)),
        l >= 2 ? v(l - 2) : v(l),
        (l & 7) + 3 < 8 ? v(l + 3) : v(l),
        v(l ^ 6),
        (l ^ 8) < (l & ~7) + 8 ? v(l ^ 8) : v(l),
        l % 2 == 0 ? v((l + 2) % 32) : v(l ^ 2),
        l + 1 < 32 ? v(l + 1) : v(l),
        l >= 4 ? v(l - 4) : v(l)};
    for (int k = 0; k < 9; k++) wrong += o[9 * t + k] != expect[k];
  }
  check(wrong == 0, "every shuffle, widths 32, 16 and 8, partial masks, 8-byte values (" +
                        std::to_string(wrong) + " wrong)");
}

void test_votes() {
  std::vector<unsigned> o = run<unsigned>(correct_votes, 64 * 10);
  int wrong = 0;
  for (int t = 0; t < 64; t++) {
    const unsigned l = t % 32;
    const unsigned expect[10] = {0x49249249u, 1, 1, 0xfu << (4 * (l / 4)), 0xffffffffu, 1, 496, 31,
                                 l < 16 ? 0xaaaau : 16u, 0xffffffffu};
    for (int k = 0; k < 10; k++) wrong += o[10 * t + k] != expect[k];
  }
  check(wrong == 0, "ballot, any, all, match_any, match_all, reductions, partial masks, "
                    "activemask (" + std::to_string(wrong) + " wrong)");
}

void test_barriers() {
  std::vector<int> o = run<int>(correct_barriers, 160 * 4);
  int wrong = 0;
  for (int t = 0; t < 160; t++) wrong += o[4 * t] != 54 || o[4 * t + 1] != 1 || o[4 * t + 2] != 1 || o[4 * t + 3] != 0;
  check(wrong == 0, "__syncthreads_count, _and, _or over 160 threads");
}

void test_atomics() {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  atomic_results *r;
  CUDA_OK(cudaMalloc((void **)&r, sizeof *r));
  atomic_results start;
  memset(&start, 0, sizeof start);
  start.first = -1;
  CUDA_OK(cudaMemcpyAsync(r, &start, sizeof start, cudaMemcpyHostToDevice, s));
  correct_args args{nullptr, (float *)r, 0};
  CUDA_OK(launch_correct(correct_atomics, &args, s));
  atomic_results got;
  CUDA_OK(cudaMemcpyAsync(&got, r, sizeof got, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaFree(r));
  CUDA_OK(cudaStreamDestroy(s));
  const int n = 6 * 96;
  check(got.i == n && got.u == 2u * n && got.ull == 3ull * n && got.f == 0.25f * n && got.d == 0.125 * n,
        "atomicAdd on int, unsigned, unsigned long long, float and double from 6 blocks");
  check(got.min == -(n - 1) && got.max == n - 1 && got.bits == 0xffffffffu && got.wrap == (unsigned)(n % 10),
        "atomicMin, atomicMax, atomicOr, atomicInc");
  check(got.cas_winners == 1 && got.first >= 0 && got.first < n, "atomicCAS: exactly one winner");
  check(got.shared_counts == n && got.shared_sums == 0.5f * n, "atomics on shared memory");
}

void test_shared() {
  std::vector<int> o = run<int>(correct_shared, 8 * 256);
  int wrong = 0;
  for (int b = 0; b < 8; b++)
    for (int t = 0; t < 256; t++) wrong += o[b * 256 + t] != 1510 - 2 * t;
  check(wrong == 0, "static and dynamic shared memory, 3-D blocks and grids");
}

void test_lane_groups() {
  std::vector<int> o = run<int>(correct_lane_groups, 32);
  int wrong = 0;
  for (int lane = 0; lane < 32; lane++) wrong += o[lane] != 101 * (lane / 8) + 10;
  check(wrong == 0, "groups of 8 lanes ordered by __syncwarp on their own masks, and a whole "
                    "warp's sync older than the history of collectives");
}

void test_spin() {
  std::vector<int> o = run<int>(correct_spin, 1);
  check(o[0] == 42, "a warp waits for another with __nanosleep");
}

void test_wmma() {
  std::vector<float> in(3 * 256);
  unsigned state = 7;
  for (float &x : in) {
    state = state * 1103515245u + 12345u;
    x = (float)((int)((state >> 16) % 9) - 4) * 0.5f; /* exact in bf16 and tf32 */
  }
  std::vector<float> d = run<float>(correct_wmma, 512, in);
  const float *a = in.data(), *b = in.data() + 256, *c = in.data() + 512;
  int wrong = 0;
  for (int r = 0; r < 16; r++) {
    for (int col = 0; col < 16; col++) {
      float tf32 = c[r * 16 + col], bf16 = 0;
      for (int k = 0; k < 16; k++) {
        tf32 += a[r * 16 + k] * b[k * 16 + col];
        bf16 += a[r * 16 + k] * b[col * 16 + k];
      }
      wrong += d[r * 16 + col] != tf32;
      wrong += d[256 + col * 16 + r] != bf16;
    }
  }
  check(wrong == 0, "WMMA: tf32 16x16x8 and bf16 16x16x16 fragments, row and column major (" +
                        std::to_string(wrong) + " wrong)");
}

void test_big_shared() {
  std::vector<int> o = run<int>(correct_big_shared, 256);
  int wrong = 0;
  for (int t = 0; t < 256; t++) wrong += o[t] != 255 - t;
  check(wrong == 0, "100 KiB of dynamic shared memory after cudaFuncSetAttribute");
}

void test_blocks() {
  std::vector<int> o = run<int>(correct_blocks, 2);
  check(o[0] == 50 && o[1] == 1225 + 1000000, "blocks count through global atomics; the last one adds");
}

void test_config() {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int *out;
  CUDA_OK(cudaMalloc((void **)&out, 4096));
  struct {
    config_case which;
    cudaError_t expect;
    const char *what;
  } cases[] = {
      {config_too_many_threads, cudaErrorInvalidConfiguration, "a block of 1025 threads"},
      {config_block_z, cudaErrorInvalidConfiguration, "a block 65 deep"},
      {config_grid_y, cudaErrorInvalidConfiguration, "a grid 65536 high"},
      {config_empty_grid, cudaErrorInvalidConfiguration, "a grid of no block"},
      {config_shared_without_optin, cudaErrorInvalidValue, "64 KiB of dynamic shared memory without opting in"},
      {config_shared_past_optin, cudaErrorInvalidValue, "opting in to 228 KiB"},
  };
  for (const auto &c : cases) {
    cudaError_t got = launch_config(c.which, s, out);
    check(got == c.expect, std::string(c.what) + ": " + cudaGetErrorName(got) + ", expected " +
                               cudaGetErrorName(c.expect));
  }
  (void)cudaGetLastError();
  check(cudaStreamSynchronize(s) == cudaSuccess && cudaGetLastError() == cudaSuccess,
        "those errors were not sticky");
  CUDA_OK(cudaFree(out));
  CUDA_OK(cudaStreamDestroy(s));
}

/* ---- children: each runs one case and returns; a report would have ended it ---------- */

struct device_buffers {
  float *in, *out;
  uint8_t *bytes;
};

device_buffers make_buffers(cudaStream_t s) {
  device_buffers b;
  CUDA_OK(cudaMalloc((void **)&b.in, 256 * sizeof(float)));
  CUDA_OK(cudaMalloc((void **)&b.out, 256 * sizeof(float)));
  CUDA_OK(cudaMalloc((void **)&b.bytes, 1000));
  std::vector<float> ones(256, 1.0f);
  std::vector<uint8_t> bytes(1000);
  for (int i = 0; i < 1000; i++) bytes[i] = (uint8_t)(i * 37);
  CUDA_OK(cudaMemcpyAsync(b.in, ones.data(), 256 * sizeof(float), cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaMemcpyAsync(b.bytes, bytes.data(), 1000, cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaStreamSynchronize(s));
  return b;
}

int child_defect(defect_kernel which) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  device_buffers b = make_buffers(s);
  defect_args args{b.in, b.out, b.bytes};
  launch_defect(which, &args, s);
  cudaStreamSynchronize(s);
  return 0;
}

/* Stream B reads what stream A writes, with no event between. */
int child_missing_event_wait(bool wait) {
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  device_buffers buf = make_buffers(a);
  float *mid;
  CUDA_OK(cudaMalloc((void **)&mid, 256 * sizeof(float)));
  launch_copy(buf.in, mid, 256, a);
  if (wait) {
    cudaEvent_t written;
    CUDA_OK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
    CUDA_OK(cudaEventRecord(written, a));
    CUDA_OK(cudaStreamWaitEvent(b, written, 0));
    CUDA_OK(cudaEventDestroy(written));
  }
  launch_copy(mid, buf.out, 256, b);
  CUDA_OK(cudaDeviceSynchronize());
  return 0;
}

/* A block of a memory pool read by a kernel after its free, in stream order. */
int child_freed_block() {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  device_buffers buf = make_buffers(s);
  float *block;
  CUDA_OK(cudaMallocAsync((void **)&block, 256 * sizeof(float), s));
  launch_copy(buf.in, block, 256, s);
  CUDA_OK(cudaFreeAsync(block, s));
  launch_copy(block, buf.out, 256, s);
  CUDA_OK(cudaStreamSynchronize(s));
  return 0;
}

/* A kernel's trap: the launch fails, and the error stays. */
int child_trap() {
  cudaError_t launch_error = cudaSuccess;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int *out;
  CUDA_OK(cudaMalloc((void **)&out, 4 * 32 * sizeof(int)));
  correct_args args{nullptr, (float *)out, 0};
  launch_error = launch_correct(correct_trap, &args, s);
  const cudaError_t sync = cudaStreamSynchronize(s);
  const cudaError_t later = cudaMalloc((void **)&out, 16);
  std::printf("trap: launch %s, synchronize %s, a later call %s\n", cudaGetErrorName(launch_error),
              cudaGetErrorName(sync), cudaGetErrorName(later));
  return launch_error == cudaSuccess && sync == cudaErrorIllegalInstruction &&
                 later == cudaErrorIllegalInstruction
             ? 0
             : 1;
}

/* ---- planted defects: each must end its child with the emulator's report -------------- */

struct planted {
  const char *name;
  const char *report; /* a part of the report's title */
  int (*run)();
};

#define DEFECT(kind) [] { return child_defect(kind); }
const planted planted_defects[] = {
    {"missing_barrier", "shared memory", DEFECT(defect_missing_barrier)},
    {"plain_histogram", "shared-memory race", DEFECT(defect_plain_histogram)},
    {"past_right_edge", "out of bounds", DEFECT(defect_past_right_edge)},
    {"unwritten_shared", "read before this block wrote it", DEFECT(defect_unwritten_shared)},
    {"shared_past_end", "shared memory out of bounds", DEFECT(defect_shared_past_end)},
    {"early_return", "__syncthreads reached by part of the block", DEFECT(defect_early_return)},
    {"exited_lane", "names a lane that returned", DEFECT(defect_exited_lane)},
    {"mask_without_self", "its mask leaves out", DEFECT(defect_mask_without_self)},
    {"divergent_collectives", "in different warp collectives", DEFECT(defect_divergent_collectives)},
    {"shuffle_outside_mask", "reads a lane outside its mask", DEFECT(defect_shuffle_outside_mask)},
    {"warp_race", "shared-memory race", DEFECT(defect_warp_race)},
    {"wmma_misaligned", "breaks WMMA's rules", DEFECT(defect_wmma_misaligned)},
    {"barrier_against_collective", "wait for each other for ever", DEFECT(defect_barrier_against_collective)},
    {"group_race", "shared-memory race", DEFECT(defect_group_race)},
    {"reread_race", "shared-memory race", DEFECT(defect_reread_race)},
    {"rewrite_race", "shared-memory race", DEFECT(defect_rewrite_race)},
    {"old_read_race", "shared-memory race", DEFECT(defect_old_read_race)},
    {"missing_event_wait", "out of stream order", [] { return child_missing_event_wait(false); }},
    {"freed_block", "free", [] { return child_freed_block(); }},
};
#undef DEFECT

/* Run this program again with --case NAME; its stderr and how it ended. */
bool run_child(const char *self, const char *name, std::string *err, int *status) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return false;
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    execl(self, self, "--case", name, (char *)nullptr);
    _exit(127);
  }
  close(pipe_fds[1]);
  char buf[4096];
  ssize_t got;
  while ((got = read(pipe_fds[0], buf, sizeof buf)) > 0) err->append(buf, (size_t)got);
  close(pipe_fds[0]);
  waitpid(pid, status, 0);
  return true;
}

void test_planted(const char *self) {
  for (const planted &p : planted_defects) {
    std::string err;
    int status = 0;
    if (!run_child(self, p.name, &err, &status)) {
      check(false, std::string("planted defect ") + p.name + ": could not run a child");
      continue;
    }
    const bool aborted = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0);
    const bool reported = err.find("plume cuda emulator: ") != std::string::npos &&
                          err.find(p.report) != std::string::npos;
    check(aborted && reported, std::string("planted defect ") + p.name + " is reported (\"" + p.report + "\")");
    if (!(aborted && reported)) std::printf("--- its stderr:\n%s---\n", err.c_str());
  }
  /* The same program with the defect mended runs clean. */
  std::string err;
  int status = 0;
  run_child(self, "ordered_event_wait", &err, &status);
  check(WIFEXITED(status) && WEXITSTATUS(status) == 0 && err.find("plume cuda emulator") == std::string::npos,
        "the two streams ordered by an event: no report");
  if (!err.empty()) std::printf("--- its stderr:\n%s---\n", err.c_str());
  err.clear();
  run_child(self, "trap", &err, &status);
  check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "a trap: the kernel's error, cudaErrorIllegalInstruction, is sticky");
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 3 && std::strcmp(argv[1], "--case") == 0) {
    for (const planted &p : planted_defects)
      if (std::strcmp(argv[2], p.name) == 0) return p.run();
    if (std::strcmp(argv[2], "ordered_event_wait") == 0) return child_missing_event_wait(true);
    if (std::strcmp(argv[2], "trap") == 0) return child_trap();
    std::fprintf(stderr, "no case %s\n", argv[2]);
    return 2;
  }
  test_config(); /* first: later tests opt big_shared_kernel in to more shared memory */
  test_shuffles();
  test_votes();
  test_barriers();
  test_atomics();
  test_shared();
  test_lane_groups();
  test_spin();
  test_wmma();
  test_big_shared();
  test_blocks();
  test_planted(argv[0]);
  std::printf("%d failed\n", failures);
  return failures ? 1 : 0;
}

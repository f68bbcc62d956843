/* tests/test_cfar_cuda_logic.cpp: the CUDA cfar kernels' table logic (kernels/cuda/cfar.cu),
 * run on the host, so that a machine without a GPU checks it too.
 *
 * cfar.cu is compiled here as plain C++ (its kernels and launcher are under __CUDACC__).
 * table_row runs for every row of a frame on a block of emulated threads
 * (tests/emulated_lanes.h: fibres, in a shuffled order between barriers and exchanges),
 * with the tables and the block's shared memory scribbled over first, then table_column for
 * every column, as the two kernels do. The tables must equal plain running sums (exactly
 * for u8 and u16, whose entries are integers; within 1e-9 relative for f32, whose doubles
 * the scan adds in another order), and plm__cfar_pixel on them must give the CPU kernel's
 * outputs: the same bits for u8 and u16, z within 1e-9 and the same mask for f32. Frames of
 * widths around the warp and the block (1, 31, 32, 33, 255, 256, 257, 600), blocks of 256
 * and 64 threads (more chunks per row). Exit status 0 is success. */
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/cfar.cu"
#include "tests/emulated_lanes.h"

namespace {

std::mt19937_64 rng(2020);

struct Frame {
  plm_dtype dtype;
  int64_t h, w;
  std::vector<unsigned char> bytes;
};

Frame random_frame(plm_dtype dtype, int64_t h, int64_t w) {
  Frame f{dtype, h, w, std::vector<unsigned char>((size_t)(h * w) * 4)};
  for (int64_t i = 0; i < h * w; i++) {
    const uint64_t r = rng();
    if (dtype == PLM_DTYPE_U8) f.bytes[(size_t)i] = (uint8_t)(r % 97 == 0 ? 250 : 100 + r % 20);
    if (dtype == PLM_DTYPE_U16) ((uint16_t *)f.bytes.data())[i] = (uint16_t)r;
    if (dtype == PLM_DTYPE_F32)
      ((float *)f.bytes.data())[i] = 1000.0f + (float)(int64_t)(r % 20001) / 997.0f;
  }
  return f;
}

/* The frame's two tables as the kernels fill them, with `threads` threads per row block. */
template <typename T>
std::vector<T> kernel_tables(const Frame &f, int threads) {
  const int64_t entries = (f.h + 1) * (f.w + 1);
  std::vector<T> tables((size_t)(2 * entries));
  for (T &t : tables) t = (T)(rng() % 1000); /* scribbled: every entry must be written */
  T *sums = tables.data(), *squares = sums + entries;
  const double level = plm__cfar_level(f.bytes.data(), f.dtype);
  LaneGroup block(threads, rng());
  row_shared<T> shared;
  for (int64_t r = 0; r <= f.h; r++) {
    std::memset(&shared, 0x5a, sizeof shared);
    block.run([&](int t) {
      const EmulatedBlock b = {&block, t};
      const EmulatedWarp w = {&block, t};
      table_row(b, w, f.bytes.data(), f.w, f.dtype, level, r, sums, squares, &shared);
    });
  }
  for (int64_t c = 0; c <= f.w; c++) table_column(f.h, f.w, c, sums, squares);
  return tables;
}

/* Plain running sums, row then column, in T. */
template <typename T>
std::vector<T> plain_tables(const Frame &f) {
  const int64_t stride = f.w + 1, entries = (f.h + 1) * stride;
  std::vector<T> tables((size_t)(2 * entries), 0);
  const double level = plm__cfar_level(f.bytes.data(), f.dtype);
  for (int64_t r = 1; r <= f.h; r++)
    for (int64_t c = 1; c <= f.w; c++) {
      T v;
      load(f.bytes.data(), (r - 1) * f.w + c - 1, f.dtype, level, &v);
      const int64_t i = r * stride + c, up = i - stride;
      tables[(size_t)i] =
          v + tables[(size_t)(i - 1)] + tables[(size_t)up] - tables[(size_t)(up - 1)];
      tables[(size_t)(entries + i)] = v * v + tables[(size_t)(entries + i - 1)] +
                                      tables[(size_t)(entries + up)] -
                                      tables[(size_t)(entries + up - 1)];
    }
  return tables;
}

template <typename T>
int64_t table_mismatches(const std::vector<T> &got, const std::vector<T> &want) {
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); i++) {
    const double a = (double)got[i], b = (double)want[i];
    bad += !(a == b || std::fabs(a - b) <= 1e-9 * std::fmax(1.0, std::fabs(b)));
  }
  return bad;
}

/* plm__cfar_pixel on the kernels' tables against the CPU kernel, for one output. */
template <typename T>
int64_t output_mismatches(const Frame &f, const std::vector<T> &tables, int window, int guard,
                          double k, plm_cfar_result output) {
  const int64_t pixels = f.h * f.w;
  std::vector<unsigned char> gpu((size_t)pixels * 4), cpu((size_t)pixels * 4);
  std::vector<uint64_t> scratch((size_t)(2 * (f.h + 1) * (f.w + 1)));
  plm__cfar_args args = {f.bytes.data(), cpu.data(), scratch.data(), 1, f.h,   f.w,
                         f.dtype,        window,     guard,          k, output};
  plm__cfar_cpu(&args);
  const T *sums = tables.data(), *squares = sums + (f.h + 1) * (f.w + 1);
  const double level = plm__cfar_level(f.bytes.data(), f.dtype);
  for (int64_t i = 0; i < pixels; i++)
    plm__cfar_pixel(&args, f.bytes.data(), gpu.data(), sums, squares, level, i / f.w, i % f.w);
  int64_t bad = 0;
  for (int64_t i = 0; i < pixels; i++) {
    if (output == PLM_CFAR_MASK) {
      bad += gpu[(size_t)i] != cpu[(size_t)i];
    } else {
      const float a = ((const float *)gpu.data())[i], b = ((const float *)cpu.data())[i];
      const bool exact = f.dtype != PLM_DTYPE_F32;
      bad += exact ? std::memcmp(&a, &b, sizeof a) != 0
                   : !(std::fabs((double)a - (double)b) <= 1e-9 * std::fmax(1.0, std::fabs(b)));
    }
  }
  return bad;
}

template <typename T>
int check_frame(const Frame &f, int threads) {
  const std::vector<T> got = kernel_tables<T>(f, threads), want = plain_tables<T>(f);
  int failures = 0;
  const int64_t tables_bad = table_mismatches(got, want);
  const int windows[][2] = {{3, 1}, {7, 3}, {31, 9}};
  int64_t outputs_bad = 0;
  for (const auto &wg : windows)
    for (plm_cfar_result output : {PLM_CFAR_MASK, PLM_CFAR_Z})
      outputs_bad += output_mismatches(f, got, wg[0], wg[1], 2.0, output);
  if (tables_bad || outputs_bad) {
    std::printf("FAIL: %s %lldx%lld, %d threads: %lld table entries, %lld outputs differ\n",
                plm_dtype_name(f.dtype), (long long)f.h, (long long)f.w, threads,
                (long long)tables_bad, (long long)outputs_bad);
    failures++;
  }
  return failures;
}

}  // namespace

int main() {
  int failures = 0, cases = 0;
  const int64_t widths[] = {1, 31, 32, 33, 255, 256, 257, 600};
  for (plm_dtype dtype : {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32})
    for (int64_t w : widths)
      for (int threads : {kRowThreads, 64}) {
        const Frame f = random_frame(dtype, w > 256 ? 3 : 9, w);
        failures += dtype == PLM_DTYPE_F32 ? check_frame<double>(f, threads)
                                           : check_frame<table_int>(f, threads);
        cases++;
      }
  std::printf("cfar_cuda_logic: %d frames, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}

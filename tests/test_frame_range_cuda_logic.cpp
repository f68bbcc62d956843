/* tests/test_frame_range_cuda_logic.cpp: the CUDA frame range kernels' block and warp
 * logic (kernels/cuda/frame_range.cu), run on the host, so that a machine without a GPU
 * checks it too.
 *
 * frame_range.cu is compiled here as plain C++ (its kernels and launcher are under
 * __CUDACC__): range_part runs on the blocks of a grid one after another, each block's
 * 256 threads emulated (tests/emulated_lanes.h: fibres in lockstep, in a shuffled order
 * between barriers and exchanges), with its shared memory scribbled over before it runs
 * and with fewer blocks than tasks too (the grid-stride loop); range_finish on emulated
 * warps, likewise. The ranges must equal, bit for bit, a plain loop over each frame that
 * keeps its least and greatest finite value with -0 below +0 (kernels/common/frame_range.h),
 * and equal as numbers the CPU's loop (kernels/cpu/entropy.c: the first of equal values
 * kept). Frames: random bit patterns (every class of float: NaN, infinities, subnormals,
 * zeros of both signs), ordinary values with NaN among them, frames without a finite
 * value, zeros only, a single finite value at the far end, sizes around the plan's
 * thresholds (one part, two, the largest), and forced plans of many small parts (the
 * finish's loop over more than 32 parts per lane). The plan's bounds and the scratch size
 * are checked too. Exit status 0 is success. */
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/frame_range.cu"
#include "tests/emulated_lanes.h"

namespace {

std::mt19937_64 rng(7031);

/* The kernels' ranges for frames of frame_size elements, with `plan`, `blocks` blocks in
 * the parts kernel's grid and `warps` warps in the finish's. */
std::vector<float> run_kernels(const std::vector<float> &in, int64_t frames, int64_t frame_size,
                               plm__frame_range_plan plan, int64_t blocks, int64_t warps) {
  std::vector<float> ranges((size_t)(2 * frames), -777.0f);
  std::vector<plm__frame_range_keys> partials((size_t)(frames * plan.parts), {0x5a5a5a5a, -17});
  plm__frame_range_keys shared[kWarps];
  LaneGroup threads(kThreads, rng());
  for (int64_t b = 0; b < blocks; b++) {
    for (plm__frame_range_keys &k : shared) k = {(int32_t)rng(), (int32_t)rng()};
    threads.run([&](int t) {
      const EmulatedBlock block = {&threads, t};
      const EmulatedWarp warp = {&threads, t};
      for (int64_t task = b; task < frames * plan.parts; task += blocks)
        range_part(block, warp, in.data(), frame_size, plan, task, shared, partials.data(),
                   ranges.data());
    });
  }
  if (plan.parts == 1) return ranges;
  LaneGroup lanes(32, rng());
  for (int64_t w = 0; w < warps; w++)
    lanes.run([&](int l) {
      const EmulatedWarp warp = {&lanes, l};
      for (int64_t f = w; f < frames; f += warps)
        range_finish(warp, partials.data(), plan.parts, f, ranges.data());
    });
  return ranges;
}

bool below(float a, float b) { /* the kernels' order: -0 below +0 */
  return a < b || (a == b && std::signbit(a) && !std::signbit(b));
}

/* A frame's range by a plain loop: with the kernels' order (`total`), or with `<` as the
 * CPU's loop has it. */
void reference(const float *frame, int64_t size, bool total, float *range) {
  float lo = 0.0f, hi = 0.0f;
  bool seen = false;
  for (int64_t i = 0; i < size; i++) {
    const float v = frame[i];
    if (!std::isfinite(v)) continue;
    if (!seen || (total ? below(v, lo) : v < lo)) lo = v;
    if (!seen || (total ? below(hi, v) : v > hi)) hi = v;
    seen = true;
  }
  range[0] = lo;
  range[1] = hi;
}

int check(const char *what, const std::vector<float> &in, int64_t frames, int64_t frame_size,
          plm__frame_range_plan plan, int64_t blocks, int64_t warps) {
  const std::vector<float> got = run_kernels(in, frames, frame_size, plan, blocks, warps);
  int wrong = 0;
  for (int64_t f = 0; f < frames; f++) {
    float exact[2], cpu[2];
    reference(in.data() + f * frame_size, frame_size, true, exact);
    reference(in.data() + f * frame_size, frame_size, false, cpu);
    const float *g = got.data() + 2 * f;
    const bool ok = std::memcmp(g, exact, sizeof exact) == 0 && g[0] == cpu[0] && g[1] == cpu[1];
    if (!ok && wrong++ < 3)
      std::printf("  frame %lld: [%a, %a], expected [%a, %a] (the CPU's [%a, %a])\n", (long long)f,
                  (double)g[0], (double)g[1], (double)exact[0], (double)exact[1], (double)cpu[0],
                  (double)cpu[1]);
  }
  std::printf("%-34s %4lld frames of %8lld: %4lld parts of %6lld, %4lld blocks, %lld warps: %s\n",
              what, (long long)frames, (long long)frame_size, (long long)plan.parts,
              (long long)plan.chunk, (long long)blocks, (long long)warps, wrong ? "WRONG" : "ok");
  return wrong ? 1 : 0;
}

/* With the kernels' plan: a block per task, and a grid of 3 blocks; 4 warps, and 1. */
int check_planned(const char *what, const std::vector<float> &in, int64_t frames,
                  int64_t frame_size) {
  const plm__frame_range_plan plan = plm__frame_range_plan_of(frame_size);
  int failures = check(what, in, frames, frame_size, plan, frames * plan.parts, 4);
  if (frames * plan.parts > 3) failures += check(what, in, frames, frame_size, plan, 3, 1);
  return failures;
}

/* With parts of `chunk` elements instead of the plan's. */
int check_chunked(const char *what, const std::vector<float> &in, int64_t frames,
                  int64_t frame_size, int64_t chunk) {
  plm__frame_range_plan plan;
  plan.chunk = chunk;
  plan.parts = frame_size > chunk ? (frame_size + chunk - 1) / chunk : 1;
  return check(what, in, frames, frame_size, plan, 5, 2);
}

float from_bits(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::vector<float> random_bits(int64_t count) {
  std::vector<float> v((size_t)count);
  for (float &x : v) x = from_bits((uint32_t)rng());
  return v;
}

/* Ordinary values in [-1000, 1000), one in `nan_every` NaN. */
std::vector<float> ordinary(int64_t count, int nan_every) {
  std::vector<float> v((size_t)count);
  std::uniform_real_distribution<float> value(-1000.0f, 1000.0f);
  for (float &x : v) x = rng() % (uint64_t)nan_every == 0 ? NAN : value(rng);
  return v;
}

/* The plan: parts of whole multiples of 256 elements, at least 8192, at most 1024 per
 * frame, none empty; no scratch for frames of one part. */
int check_plan(int64_t frame_size, int64_t expected_parts) {
  const plm__frame_range_plan p = plm__frame_range_plan_of(frame_size);
  const size_t scratch = plm__frame_range_cuda_scratch_bytes(3, frame_size);
  const bool ok =
      p.parts == expected_parts && p.parts >= 1 && p.parts <= PLM__FRAME_RANGE_MAX_PARTS &&
      p.chunk % kThreads == 0 && p.chunk >= PLM__FRAME_RANGE_MIN_CHUNK &&
      p.parts * p.chunk >= frame_size && (p.parts == 1 || (p.parts - 1) * p.chunk < frame_size) &&
      (p.parts == 1 ? scratch == 0 : scratch >= (size_t)(3 * p.parts) * 8 && scratch % 256 == 0);
  std::printf(
      "plan %lld: %lld parts of %lld, scratch for 3 frames %zu bytes (expected %lld "
      "parts)%s\n",
      (long long)frame_size, (long long)p.parts, (long long)p.chunk, scratch,
      (long long)expected_parts, ok ? "" : ": WRONG");
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  int failures = 0;
  failures += check_plan(0, 1);
  failures += check_plan(1, 1);
  failures += check_plan(8192, 1);
  failures += check_plan(8193, 2);
  failures += check_plan(512 * 512, 32);
  failures += check_plan(2048 * 2048, 512);
  failures += check_plan(4096 * 4096, 1024);
  failures += check_plan(8192 * 8192 + 1, 1021);

  for (int64_t size : {1, 7, 255, 256, 257, 8191, 8192, 8193, 70001}) {
    const int64_t frames = size < 1000 ? 5 : 3;
    failures += check_planned("random bits", random_bits(frames * size), frames, size);
    failures += check_planned("ordinary values, NaN", ordinary(frames * size, 13), frames, size);
  }
  /* More than 1024 x 8192 elements: 993 parts of 8448, the last one shorter. */
  const int64_t big = 1024 * 8192 + 5;
  failures += check_planned("ordinary values, NaN", ordinary(big, 1000), 1, big);

  /* Frames without a finite value, zeros only, one finite value at the end, a least and
   * greatest value in the last element of a part. */
  const int64_t size = 20000;
  std::vector<float> special((size_t)(7 * size));
  for (int64_t i = 0; i < size; i++) {
    const float non_finite[] = {NAN, INFINITY, -INFINITY, -NAN};
    special[(size_t)i] = NAN;
    special[(size_t)(size + i)] = non_finite[rng() % 4];
    special[(size_t)(2 * size + i)] = rng() % 2 ? 0.0f : -0.0f;
    special[(size_t)(3 * size + i)] = -0.0f;
    special[(size_t)(4 * size + i)] = i == size - 1 ? -3.5f : NAN;
    special[(size_t)(5 * size + i)] = i == 8191 ? -1e30f : i == 16383 ? 1e30f : 1.0f;
    special[(size_t)(6 * size + i)] = rng() % 2 ? 0.0f : INFINITY;
  }
  failures += check_planned("special frames", special, 7, size);
  failures += check_chunked("special frames, parts of 256", special, 7, size, 256);

  /* Many parts: the finish's lanes take several each. */
  failures += check_chunked("random bits, parts of 256", random_bits(3 * 70001), 3, 70001, 256);
  failures += check_chunked("ordinary values, parts of 512", ordinary(2 * 9000, 7), 2, 9000, 512);
  /* Empty frames: 0, 0. */
  failures += check_planned("empty frames", std::vector<float>(1), 2, 0);

  std::printf(failures ? "FAILED: %d cases\n" : "all cases passed\n", failures);
  return failures ? 1 : 0;
}

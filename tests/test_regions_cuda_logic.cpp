/* tests/test_regions_cuda_logic.cpp: the CUDA regions kernel's block logic
 * (kernels/cuda/regions_block.h), run on the host, so that a machine without a GPU
 * checks it too.
 *
 * plm__regions_tile runs as kernels/cuda/label.cu's regions_accumulate runs it, a block
 * per tile with its slots in "shared memory" (scribbled before the block starts them),
 * with the block's threads emulated (tests/emulated_lanes.h: fibres, warps running ahead
 * of each other between barriers, lanes in a shuffled order between exchanges) and the
 * tiles taken in a shuffled order by a few blocks, so that the slots' and the table's
 * atomics land in varying orders; the table is started and finished by the kernels' own
 * row functions (kernels/common/label.h). The result is compared with plm__regions_cpu on
 * the same labels:
 *   - area, bounds, centroids and the intensity maximum exactly (the maximum by value:
 *     -0 and +0 may differ), and for u8 and u16 intensities every column exactly;
 *   - f32 intensity sums and weighted centroids within tests/test_label.c's tolerance,
 *     1e-9 relative (another order of summation), the worst difference printed;
 *   - rows from min(K, capacity) on untouched.
 * Labels: random runs of random labels (0, negative, past the table's rows, the same
 * label in separate runs), plm__label_cpu's labels of random masks and of large blobs,
 * one label over the whole frame, isolated pixels (more labels in a tile than it has
 * slots: the overflow path, checked to be taken), full and empty frames; each with the
 * kernel's tiling, with other tile heights (up to the largest, 64 rows) and with blocks of
 * 256 and of 96 threads; without intensity and with u8, u16 and f32 (NaN, infinities,
 * negative values, -0). The tiling plan's bounds are checked too. Exit status 0 is
 * success. */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "kernels/cuda/regions_block.h"
#include "tests/emulated_lanes.h"

namespace {

std::mt19937_64 rng(20240917);

int64_t uniform(int64_t lo, int64_t hi) { /* in [lo, hi] */
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

/* A frame of labels with its K (as plm_label's count gives it). */
struct Labels {
  int64_t height, width;
  std::vector<int32_t> values;
  int32_t k;
};

/* Runs of random length (up to max_run) of random labels in [-2, k + 5], a third of
 * them 0: labels repeat in separate runs, some are past K. */
Labels random_runs(int64_t height, int64_t width, int32_t k, int64_t max_run) {
  Labels l{height, width, std::vector<int32_t>((size_t)(height * width)), k};
  for (size_t i = 0; i < l.values.size();) {
    const int64_t run = uniform(1, max_run);
    const int32_t label = uniform(0, 2) == 0 ? 0 : (int32_t)uniform(-2, k + 5);
    for (int64_t j = 0; j < run && i < l.values.size(); j++) l.values[i++] = label;
  }
  return l;
}

/* plm__label_cpu's labels of a mask. */
Labels labelled(int64_t height, int64_t width, const std::vector<uint8_t> &mask, int connectivity) {
  Labels l{height, width, std::vector<int32_t>((size_t)(height * width)), 0};
  plm__label_args args = {};
  args.mask = mask.data();
  args.labels = l.values.data();
  args.count = &l.k;
  args.frames = 1;
  args.height = height;
  args.width = width;
  args.connectivity = connectivity;
  std::vector<char> scratch(plm__label_cpu_scratch_bytes(&args));
  args.scratch = scratch.data();
  plm__label_cpu(&args);
  return l;
}

std::vector<uint8_t> random_mask(int64_t pixels, double density) {
  std::vector<uint8_t> mask((size_t)pixels);
  std::bernoulli_distribution on(density);
  for (uint8_t &m : mask) m = on(rng) ? 1 : 0;
  return mask;
}

/* A few large discs and rectangles, some touching, on an empty frame. */
std::vector<uint8_t> blobs(int64_t height, int64_t width) {
  std::vector<uint8_t> mask((size_t)(height * width), 0);
  for (int b = 0; b < 6; b++) {
    const int64_t cy = uniform(0, height - 1), cx = uniform(0, width - 1);
    const int64_t ry = uniform(1, height / 4 + 1), rx = uniform(1, width / 6 + 1);
    const bool disc = b % 2 == 0;
    for (int64_t y = std::max<int64_t>(0, cy - ry); y < std::min(height, cy + ry); y++)
      for (int64_t x = std::max<int64_t>(0, cx - rx); x < std::min(width, cx + rx); x++) {
        const double dy = (double)(y - cy) / (double)ry, dx = (double)(x - cx) / (double)rx;
        if (!disc || dy * dy + dx * dx <= 1.0) mask[(size_t)(y * width + x)] = 1;
      }
  }
  return mask;
}

/* An intensity image of dtype as raw bytes: random values; f32 as tests/test_label.c
 * draws them, with some NaN, infinities and zeros of both signs when `special`. */
std::vector<unsigned char> intensity_of(plm_dtype dtype, int64_t pixels, bool special) {
  std::vector<unsigned char> bytes((size_t)pixels * 4);
  for (int64_t i = 0; i < pixels; i++) {
    const uint64_t r = rng();
    if (dtype == PLM_DTYPE_U8) bytes[(size_t)i] = (uint8_t)r;
    if (dtype == PLM_DTYPE_U16) ((uint16_t *)bytes.data())[i] = (uint16_t)r;
    if (dtype != PLM_DTYPE_F32) continue;
    float v = (float)((double)(r % 100000) / 997.0 - 20.0);
    if (special) {
      const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
      if ((r >> 40) % 97 == 0) v = specials[(r >> 50) % 5];
    }
    ((float *)bytes.data())[i] = v;
  }
  return bytes;
}

const char *dtype_name(const void *intensity, plm_dtype dtype) {
  if (!intensity) return "none";
  return dtype == PLM_DTYPE_U8 ? "u8" : dtype == PLM_DTYPE_U16 ? "u16" : "f32";
}

/* The table as the three CUDA kernels leave it: rows started, every tile accumulated by
 * one of a few emulated blocks of `threads` threads (block b takes tiles b, b + blocks, ...
 * of a shuffled order, its slots started once, as the kernel's), rows finished. */
template <typename T>
void run_kernels(const Labels &l, const T *intensity, int64_t capacity, plm__regions_tiling tiling,
                 int threads, double *table) {
  const int64_t rows = plm__regions_rows(l.k, capacity);
  for (int64_t j = 0; j < rows; j++) plm__regions_start_row(table + j * PLM_REGION_COLUMNS, j + 1);
  std::vector<int64_t> tiles((size_t)tiling.count);
  std::iota(tiles.begin(), tiles.end(), 0);
  std::shuffle(tiles.begin(), tiles.end(), rng);
  const size_t blocks = (size_t)uniform(1, 3);
  LaneGroup lanes(threads, rng());
  plm__regions_slots slots;
  for (size_t b = 0; b < blocks; b++) {
    std::memset(&slots, 0x5a, sizeof slots); /* shared memory starts undefined */
    lanes.run([&](int thread) {
      const EmulatedBlock block = {&lanes, thread};
      const EmulatedWarp warp = {&lanes, thread};
      plm__regions_slots_start(block, &slots);
      block.sync();
      for (size_t k = b; k < tiles.size(); k += blocks)
        plm__regions_tile(block, warp, l.values.data(), intensity, table, &slots, rows, l.height,
                          l.width, tiling, tiles[k]);
    });
  }
  for (int64_t j = 0; j < rows; j++)
    plm__regions_finish_row(table + j * PLM_REGION_COLUMNS, intensity != nullptr);
}

/* The most labels (1..rows) that one tile of the tiling holds. */
size_t most_labels_in_a_tile(const Labels &l, int64_t capacity, plm__regions_tiling tiling) {
  const int64_t rows = plm__regions_rows(l.k, capacity);
  size_t most = 0;
  for (int64_t tile = 0; tile < tiling.count; tile++) {
    const plm__regions_tile_place t = plm__regions_place(tiling, l.height, l.width, tile);
    std::set<int32_t> labels;
    for (int64_t r = t.r0; r < t.r1; r++)
      for (int64_t c = t.c0; c < t.c1; c++) {
        const int32_t label = l.values[(size_t)(r * l.width + c)];
        if (label >= 1 && label <= rows) labels.insert(label);
      }
    most = std::max(most, labels.size());
  }
  return most;
}

bool same_value(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

/* Compare with plm__regions_cpu; prints the case; returns 0 when it passes. */
int check(const char *what, const Labels &l, const void *intensity, plm_dtype dtype,
          int64_t capacity, plm__regions_tiling tiling, int threads) {
  const size_t cells = (size_t)capacity * PLM_REGION_COLUMNS;
  const double untouched = -12345.0;
  std::vector<double> got(cells, untouched), want(cells, untouched);
  plm__regions_args args = {};
  args.labels = l.values.data();
  args.intensity = intensity;
  args.intensity_dtype = dtype;
  args.count = &l.k;
  args.table = want.data();
  args.capacity = capacity;
  args.frames = 1;
  args.height = l.height;
  args.width = l.width;
  plm__regions_cpu(&args);
  if (!intensity)
    run_kernels(l, (const uint8_t *)nullptr, capacity, tiling, threads, got.data());
  else if (dtype == PLM_DTYPE_U8)
    run_kernels(l, (const uint8_t *)intensity, capacity, tiling, threads, got.data());
  else if (dtype == PLM_DTYPE_U16)
    run_kernels(l, (const uint16_t *)intensity, capacity, tiling, threads, got.data());
  else
    run_kernels(l, (const float *)intensity, capacity, tiling, threads, got.data());

  const bool exact_sums = !intensity || dtype != PLM_DTYPE_F32;
  const int64_t rows = plm__regions_rows(l.k, capacity);
  double worst = 0.0;
  int wrong = 0;
  for (int64_t j = 0; j < capacity; j++)
    for (int c = 0; c < PLM_REGION_COLUMNS; c++) {
      const double g = got[(size_t)(j * PLM_REGION_COLUMNS + c)];
      const double w = want[(size_t)(j * PLM_REGION_COLUMNS + c)];
      const bool summed =
          c == PLM_REGION_SUM || c == PLM_REGION_WCENTROID_ROW || c == PLM_REGION_WCENTROID_COL;
      bool ok = same_value(g, w);
      if (!ok && summed && !exact_sums && j < rows && std::isfinite(w)) {
        const double diff = std::fabs(g - w) / std::max(1.0, std::fabs(w));
        worst = std::max(worst, diff);
        ok = diff <= 1e-9;
      }
      if (!ok && wrong++ < 5)
        std::printf("  row %lld column %d: %.17g, the CPU %.17g\n", (long long)j, c, g, w);
    }
  std::printf(
      "%-30s %4lldx%-4lld K %-6d capacity %-6lld tiles of %2lld rows, %3d threads, intensity "
      "%-4s: %s",
      what, (long long)l.height, (long long)l.width, l.k, (long long)capacity,
      (long long)tiling.rows, threads, dtype_name(intensity, dtype), wrong ? "WRONG" : "ok");
  if (!exact_sums) std::printf(" (worst relative difference %.3g)", worst);
  std::printf("\n");
  return wrong ? 1 : 0;
}

/* The tiling of tiles `rows` high (1..PLM__REGIONS_TILE_MAX_H) of a frame. */
plm__regions_tiling tiling_of_rows(const Labels &l, int64_t rows) {
  plm__regions_tiling t = plm__regions_tiling_of(l.height, l.width);
  t.rows = rows;
  t.count = t.across * ((l.height + rows - 1) / rows);
  return t;
}

/* Every intensity kind, with the kernel's tiling and blocks (256 threads), and with other
 * tile heights: a third of the frame, and the largest tiles, in blocks of 96 threads. */
int check_all(const char *what, const Labels &l, int64_t capacity) {
  int failures = 0;
  const int64_t pixels = l.height * l.width;
  const plm__regions_tiling planned = plm__regions_tiling_of(l.height, l.width);
  const plm__regions_tiling tall =
      tiling_of_rows(l, std::min<int64_t>(PLM__REGIONS_TILE_MAX_H, 1 + l.height / 3));
  const plm__regions_tiling largest = tiling_of_rows(l, PLM__REGIONS_TILE_MAX_H);
  failures += check(what, l, nullptr, PLM_DTYPE_U8, capacity, planned, 256);
  for (plm_dtype dtype : {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32}) {
    const std::vector<unsigned char> values = intensity_of(dtype, pixels, false);
    failures += check(what, l, values.data(), dtype, capacity, planned, 256);
  }
  const std::vector<unsigned char> special = intensity_of(PLM_DTYPE_F32, pixels, true);
  failures += check(what, l, special.data(), PLM_DTYPE_F32, capacity, tall, 256);
  const std::vector<unsigned char> u16 = intensity_of(PLM_DTYPE_U16, pixels, false);
  failures += check(what, l, u16.data(), PLM_DTYPE_U16, capacity, tall, 96);
  failures += check(what, l, nullptr, PLM_DTYPE_U8, capacity, largest, 96);
  failures += check(what, l, special.data(), PLM_DTYPE_F32, capacity, largest, 256);
  return failures;
}

/* Isolated pixels, every other row and column: with 8-connectivity a label each, 1024 of a
 * 64 x 64 tile, more than its slots, so most spans take the overflow path. */
std::vector<uint8_t> isolated_pixels(int64_t height, int64_t width) {
  std::vector<uint8_t> mask((size_t)(height * width), 0);
  for (int64_t r = 0; r < height; r += 2)
    for (int64_t c = 0; c < width; c += 2) mask[(size_t)(r * width + c)] = 1;
  return mask;
}

/* The plan: tiles PLM__REGIONS_TILE_W wide covering the frame, PLM__REGIONS_TILE_MIN_H to
 * PLM__REGIONS_TILE_MAX_H rows, and at least PLM__REGIONS_WANTED_TILES tiles unless they
 * are already as low as they go. */
int check_plan(int64_t height, int64_t width, int64_t expected_rows) {
  const plm__regions_tiling t = plm__regions_tiling_of(height, width);
  const bool ok = t.rows == expected_rows && t.rows >= PLM__REGIONS_TILE_MIN_H &&
                  t.rows <= PLM__REGIONS_TILE_MAX_H && t.across * PLM__REGIONS_TILE_W >= width &&
                  (t.across - 1) * PLM__REGIONS_TILE_W < width &&
                  t.count == t.across * ((height + t.rows - 1) / t.rows) &&
                  (t.rows == PLM__REGIONS_TILE_MIN_H || t.count >= PLM__REGIONS_WANTED_TILES);
  std::printf("plan %lldx%lld: %lld tiles of %lld rows (expected %lld)%s\n", (long long)height,
              (long long)width, (long long)t.count, (long long)t.rows, (long long)expected_rows,
              ok ? "" : ": WRONG");
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  int failures = 0;
  failures += check_plan(1, 1, 4);
  failures += check_plan(256, 256, 4);
  failures += check_plan(300, 700, 12);
  failures += check_plan(512, 512, 16);
  failures += check_plan(1024, 1024, 64);
  failures += check_plan(4096, 4096, 64);
  failures += check_plan(100000, 20, 64);

  failures += check_all("random runs", random_runs(1, 1, 3, 1), 3);
  failures += check_all("random runs", random_runs(1, 300, 20, 40), 20);
  failures += check_all("random runs", random_runs(300, 1, 20, 40), 20);
  failures += check_all("random runs", random_runs(37, 53, 30, 8), 30);
  failures += check_all("random runs, short table", random_runs(61, 173, 40, 300), 25);
  failures += check_all("random runs, long runs", random_runs(64, 300, 12, 2000), 12);
  for (int connectivity : {4, 8}) {
    Labels l = labelled(97, 131, random_mask(97 * 131, 0.55), connectivity);
    failures += check_all("labelled random mask", l, l.k > 0 ? l.k : 1);
    failures += check_all("labelled random mask, short", l, std::max(1, l.k / 3));
  }
  Labels dense = labelled(200, 180, random_mask(200 * 180, 0.75), 8);
  failures += check_all("labelled dense mask", dense, dense.k);
  Labels big = labelled(150, 700, blobs(150, 700), 4);
  failures += check_all("labelled blobs", big, big.k > 0 ? big.k : 1);
  Labels full = labelled(70, 260, std::vector<uint8_t>(70 * 260, 1), 8);
  failures += check_all("one label everywhere", full, 1);
  Labels isolated = labelled(130, 200, isolated_pixels(130, 200), 8);
  const size_t crowded = most_labels_in_a_tile(isolated, isolated.k, tiling_of_rows(isolated, 64));
  std::printf("isolated pixels: %zu labels in a tile of 64 rows, %d slots\n", crowded,
              (int)PLM__REGIONS_SLOTS);
  if (crowded <= (size_t)PLM__REGIONS_SLOTS) failures++; /* the overflow path not taken */
  failures += check_all("isolated pixels (overflow)", isolated, isolated.k);
  failures += check_all("isolated pixels, short table", isolated, isolated.k / 2);
  Labels empty = labelled(33, 65, std::vector<uint8_t>(33 * 65, 0), 4);
  failures += check_all("no labels", empty, 4);

  std::printf(failures ? "FAILED: %d cases\n" : "all cases passed\n", failures);
  return failures ? 1 : 0;
}

/* tests/test_conv_cuda_logic.cpp: the CUDA conv2d and sobel kernels' staging
 * (kernels/cuda/conv.cu's stage_tile), run on the host, so that a machine without a GPU
 * checks it too.
 *
 * conv.cu is compiled here as plain C++ (its kernels and launchers are under
 * __CUDACC__). stage_tile runs for each thread (tx, ty) of a block in turn, on tiles of
 * the shapes the launchers stage (sobel's 18 x 18 with its 16 x 16 block; conv2d's, as
 * conv2d_launch_of makes them, for several taps and strides and each block its cuda
 * tunable tile_width gives: 8 x 32, 16 x 16, 32 x 8, 64 x 4; and 256 x 1, a one-row
 * output's) at origins inside, across
 * and outside a frame's edges, for u8, u16 and f32 frames and every border mode. Every
 * element of the tile must be written by exactly one thread, with the value the former
 * loop wrote there (plm__load_border at row idx / cols, column idx % cols of the tile's
 * linear index idx), bit for bit. conv2d_launch_of itself: at the default tile_width the
 * launch plume made before the block was tunable (16 x 16, a tile of (15 stride_y + kh)
 * x (15 stride_x + kw)), for any width, candidate or not, a block of 256 threads
 * whose width is a power of two, and for an output fewer rows tall than the block, a
 * block as tall as the output rounded up to a power of two. Exit status 0 is success. */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/conv.cu"

namespace {

std::mt19937_64 rng(1717);

struct Frame {
  plm_dtype dtype;
  int64_t h, w;
  std::vector<unsigned char> bytes;
};

Frame random_frame(plm_dtype dtype, int64_t h, int64_t w) {
  Frame f{dtype, h, w, std::vector<unsigned char>((size_t)(h * w) * 4)};
  for (int64_t i = 0; i < h * w; i++) {
    const uint64_t r = rng();
    if (dtype == PLM_DTYPE_U8) f.bytes[(size_t)i] = (uint8_t)r;
    if (dtype == PLM_DTYPE_U16) ((uint16_t *)f.bytes.data())[i] = (uint16_t)r;
    if (dtype == PLM_DTYPE_F32) ((float *)f.bytes.data())[i] = (float)(int64_t)(r % 20001) / 7.0f;
  }
  return f;
}

/* Stage a rows x cols tile at (y0, x0) of f as a bx x by block does; returns the number
 * of elements written other than once or with another value than the former loop's. */
int64_t check_tile(const Frame &f, int64_t y0, int64_t x0, int rows, int cols, plm_border border,
                   int bx, int by) {
  const size_t n = (size_t)rows * (size_t)cols;
  std::vector<float> tile(n), former(n);
  std::vector<int> writes(n, 0);
  for (size_t idx = 0; idx < n; idx++)
    former[idx] = plm__load_border(f.bytes.data(), f.dtype, f.h, f.w, y0 + (int64_t)idx / cols,
                                   x0 + (int64_t)idx % cols, border);
  const uint32_t poison_bits = 0x7fc0dead; /* a NaN no frame holds */
  float poison;
  std::memcpy(&poison, &poison_bits, sizeof poison);
  std::vector<float> mine(n); /* one thread's writes: poison where it wrote nothing */
  for (int ty = 0; ty < by; ty++)
    for (int tx = 0; tx < bx; tx++) {
      std::fill(mine.begin(), mine.end(), poison);
      stage_tile(mine.data(), f.bytes.data(), f.dtype, f.h, f.w, y0, x0, rows, cols, border, tx, ty,
                 bx, by);
      for (size_t idx = 0; idx < n; idx++)
        if (std::memcmp(&mine[idx], &poison, sizeof poison) != 0) {
          writes[idx]++;
          tile[idx] = mine[idx];
        }
    }
  int64_t wrong = 0;
  for (size_t idx = 0; idx < n; idx++)
    if (writes[idx] != 1 || std::memcmp(&tile[idx], &former[idx], sizeof(float)) != 0) wrong++;
  return wrong;
}

/* The block widths whose staging is checked: conv2d's tile_width candidates (ops/conv.c;
 * tests/test_tuning.c checks the listing), and 256, a one-row output's 256 x 1. */
const int kStagedWidths[] = {8, 16, 32, 64, 256};

/* The launch of a conv2d of kh x kw taps and strides at tile_width, for an output `ho`
 * rows tall (taller than any block by default). */
conv2d_launch launch_for(int kh, int kw, int stride_y, int stride_x, int tile_width,
                         int64_t ho = 1000) {
  plm__conv2d_args a = {};
  a.ho = ho;
  a.kh = kh;
  a.kw = kw;
  a.stride_y = stride_y;
  a.stride_x = stride_x;
  a.cuda_tile_width = tile_width;
  return conv2d_launch_of(&a);
}

/* What conv2d_launch_of promises; returns the failures. */
int check_launches() {
  int failures = 0;
  const int taps[][4] = {{1, 1, 1, 1}, {3, 3, 1, 1},   {5, 3, 1, 1},   {7, 7, 2, 2},
                         {3, 9, 3, 1}, {31, 31, 1, 1}, {31, 31, 4, 4}, {3, 3, 100000, 100000}};
  for (const auto &k : taps) {
    const conv2d_launch d = launch_for(k[0], k[1], k[2], k[3], PLM__CONV2D_CUDA_TILE_WIDTH);
    /* Before the block was tunable: 16 x 16, the same tile and shared memory. */
    const int64_t rows = (int64_t)15 * k[2] + k[0], cols = (int64_t)15 * k[3] + k[1];
    const int64_t most = 48 * 1024 / 4;
    const int64_t smem =
        rows <= most && cols <= most ? (rows * cols + k[0] * k[1]) * 4 : 48 * 1024 + 1;
    if (d.tile_w != 16 || d.tile_h != 16 || d.tile_rows != rows || d.tile_cols != cols ||
        d.smem != smem) {
      std::printf(
          "conv2d %dx%d strides %d, %d: the default launch is not 16 x 16 with a %lld x "
          "%lld tile  WRONG\n",
          k[0], k[1], k[2], k[3], (long long)rows, (long long)cols);
      failures++;
    }
    for (int width : {-3, 0, 1, 3, 8, 16, 24, 32, 64, 256, 1000}) {
      const conv2d_launch l = launch_for(k[0], k[1], k[2], k[3], width);
      const int expected = width < 1 ? 1 : width > 256 ? 256 : width;
      const bool ok = l.tile_w * l.tile_h == PLM__CONV2D_CUDA_TILE_THREADS &&
                      (l.tile_w & (l.tile_w - 1)) == 0 && l.tile_w <= expected &&
                      2 * l.tile_w > expected &&
                      l.tile_rows == (int64_t)(l.tile_h - 1) * k[2] + k[0] &&
                      l.tile_cols == (int64_t)(l.tile_w - 1) * k[3] + k[1] && l.smem > 0;
      if (!ok) {
        std::printf("conv2d %dx%d strides %d, %d, tile_width %d: a %d x %d block  WRONG\n", k[0],
                    k[1], k[2], k[3], width, l.tile_w, l.tile_h);
        failures++;
      }
    }
  }
  /* An output fewer rows tall than the block: a block as tall as the output rounded up
   * to a power of two, as wide as the rest of the 256 threads, whatever tile_width. */
  for (int64_t ho = 1; ho <= 300; ho++)
    for (int width : {1, 8, 16, 64, 256}) {
      const conv2d_launch l = launch_for(3, 31, 1, 1, width, ho);
      const int tall = 256 / (width < 256 ? width : 256);
      int expected_h = tall;
      if (ho < tall)
        for (expected_h = 1; expected_h < ho;) expected_h *= 2;
      if (l.tile_h != expected_h || l.tile_w * l.tile_h != PLM__CONV2D_CUDA_TILE_THREADS ||
          l.tile_rows != (int64_t)(l.tile_h - 1) + 3 || l.tile_cols != (int64_t)(l.tile_w - 1) + 31) {
        std::printf("conv2d 3x31, an output %lld rows tall, tile_width %d: a %d x %d block, "
                    "expected %d rows  WRONG\n",
                    (long long)ho, width, l.tile_w, l.tile_h, expected_h);
        failures++;
      }
    }
  std::printf("conv2d launches: %s\n",
              failures ? "FAILED"
                       : "the default's as before, every width valid, flat blocks for short outputs");
  return failures;
}

}  // namespace

int main() {
  int failures = check_launches();
  struct Shape {
    const char *what;
    int kh, kw, stride_y, stride_x;
  };
  const Shape shapes[] = {
      {"sobel", 3, 3, 1, 1},      /* 18 x 18 */
      {"conv2d 1x1", 1, 1, 1, 1}, /* 16 x 16 */
      {"conv2d 5x3", 5, 3, 1, 1}, /* 20 x 18 */
      {"conv2d 7x7 stride 2", 7, 7, 2, 2},
      {"conv2d 3x9 strides 3, 1", 3, 9, 3, 1},
      {"conv2d 33x33", 33, 33, 1, 1}, /* 48 x 48 */
  };
  const plm_border borders[] = {PLM_BORDER_ZERO, PLM_BORDER_REPLICATE, PLM_BORDER_REFLECT101};
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  const int64_t sizes[][2] = {{1, 1}, {7, 13}, {40, 35}, {64, 64}};
  for (const Shape &shape : shapes)
    for (int width : kStagedWidths) {
      const bool sobel = std::strcmp(shape.what, "sobel") == 0;
      if (sobel && width != TILE) continue; /* sobel's block is 16 x 16 */
      /* width 256: the flattest block, a one-row output's (launch_for's ho 1). */
      const conv2d_launch l = launch_for(shape.kh, shape.kw, shape.stride_y, shape.stride_x, width,
                                         width == 256 ? 1 : 1000);
      const int rows = (int)l.tile_rows, cols = (int)l.tile_cols;
      int64_t tiles = 0, wrong = 0;
      for (plm_dtype dtype : dtypes)
        for (const auto &size : sizes) {
          const Frame f = random_frame(dtype, size[0], size[1]);
          for (plm_border border : borders)
            for (int64_t y0 :
                 {(int64_t)-shape.kh, (int64_t)-1, (int64_t)0, size[0] / 2, size[0] - 3})
              for (int64_t x0 : {(int64_t)-shape.kw, (int64_t)-1, (int64_t)0, size[1] - 5}) {
                wrong += check_tile(f, y0, x0, rows, cols, border, l.tile_w, l.tile_h);
                tiles++;
              }
        }
      std::printf("%-26s %3d x %2d block, tiles of %2d x %3d: %lld tiles, %lld elements wrong\n",
                  shape.what, l.tile_w, l.tile_h, rows, cols, (long long)tiles, (long long)wrong);
      failures += wrong ? 1 : 0;
    }
  std::printf(failures ? "FAILED: %d shapes\n" : "all shapes passed\n", failures);
  return failures ? 1 : 0;
}

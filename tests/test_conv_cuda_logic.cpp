/* tests/test_conv_cuda_logic.cpp: the CUDA conv2d and sobel kernels' staging
 * (kernels/cuda/conv.cu's stage_tile), run on the host, so that a machine without a GPU
 * checks it too.
 *
 * conv.cu is compiled here as plain C++ (its kernels and launchers are under
 * __CUDACC__). stage_tile runs for each thread (tx, ty) of a 16 x 16 block in turn, on
 * tiles of the shapes the launchers stage (sobel's 18 x 18; conv2d's (15 stride_y + kh)
 * x (15 stride_x + kw) for several taps and strides) at origins inside, across and
 * outside a frame's edges, for u8, u16 and f32 frames and every border mode. Every
 * element of the tile must be written by exactly one thread, with the value the former
 * loop wrote there (plm__load_border at row idx / cols, column idx % cols of the tile's
 * linear index idx), bit for bit. Exit status 0 is success. */
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

/* Stage a rows x cols tile at (y0, x0) of f as a 16 x 16 block does; returns the number
 * of elements written other than once or with another value than the former loop's. */
int64_t check_tile(const Frame &f, int64_t y0, int64_t x0, int rows, int cols, plm_border border) {
  const size_t n = (size_t)rows * (size_t)cols;
  std::vector<float> tile(n), former(n);
  std::vector<int> writes(n, 0);
  for (size_t idx = 0; idx < n; idx++)
    former[idx] = plm__load_border(f.bytes.data(), f.dtype, f.h, f.w, y0 + (int64_t)idx / cols,
                                   x0 + (int64_t)idx % cols, border);
  const uint32_t poison_bits = 0x7fc0dead; /* a NaN no frame holds */
  float poison;
  std::memcpy(&poison, &poison_bits, sizeof poison);
  for (int ty = 0; ty < TILE; ty++)
    for (int tx = 0; tx < TILE; tx++) {
      std::vector<float> mine(n, poison);
      stage_tile(mine.data(), f.bytes.data(), f.dtype, f.h, f.w, y0, x0, rows, cols, border, tx, ty,
                 TILE, TILE);
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

}  // namespace

int main() {
  int failures = 0;
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
  for (const Shape &shape : shapes) {
    const int rows = (TILE - 1) * shape.stride_y + shape.kh;
    const int cols = (TILE - 1) * shape.stride_x + shape.kw;
    int64_t tiles = 0, wrong = 0;
    for (plm_dtype dtype : dtypes)
      for (const auto &size : sizes) {
        const Frame f = random_frame(dtype, size[0], size[1]);
        for (plm_border border : borders)
          for (int64_t y0 : {(int64_t)-shape.kh, (int64_t)-1, (int64_t)0, size[0] / 2, size[0] - 3})
            for (int64_t x0 : {(int64_t)-shape.kw, (int64_t)-1, (int64_t)0, size[1] - 5}) {
              wrong += check_tile(f, y0, x0, rows, cols, border);
              tiles++;
            }
      }
    std::printf("%-26s tiles of %2d x %2d: %lld tiles, %lld elements wrong\n", shape.what, rows,
                cols, (long long)tiles, (long long)wrong);
    failures += wrong ? 1 : 0;
  }
  std::printf(failures ? "FAILED: %d shapes\n" : "all shapes passed\n", failures);
  return failures ? 1 : 0;
}

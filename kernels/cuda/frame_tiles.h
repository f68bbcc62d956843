/* kernels/cuda/frame_tiles.h: walking an output's tiles and staging a frame's tile in
 * shared memory, for the kernels that filter a frame through a window (conv2d and sobel
 * in kernels/cuda/conv.cu, sepconv2d in kernels/cuda/sepconv.cu, badpixel's 3 x 3 in
 * kernels/cuda/badpixel.cu; internal, C++).
 *
 * stage_tile is __host__ __device__ so that the host tests run it thread by thread
 * (tests/test_conv_cuda_logic.cpp); the tile walk and the grid are CUDA only. */
#ifndef PLUME_KERNELS_CUDA_FRAME_TILES_H
#define PLUME_KERNELS_CUDA_FRAME_TILES_H

#include "kernels/common/conv.h"
#include "kernels/cuda/stage.h"

/* Loads a thread of stage_tile has in flight (plm__stage_batched): 8, one batch for the
 * 18 x 114 tile of a 3 x 3 conv2d at runs of 7 (2,052 elements over 256 threads). */
enum { STAGE_BATCH = 8 };

/* Stage rows [y0, y0 + rows) x columns [x0, x0 + cols) of one frame, border applied,
 * into tile (row-major, rows `pitch` floats apart, pitch >= cols); every thread of a
 * bx x by block takes part, thread (tx, ty) the rows ty, ty + by, ... and in each the
 * columns tx, tx + bx, ... (a warp reads along a row), with no division per element.
 * A tile inside the frame is read without the border rule, BATCH loads in flight a
 * thread (kernels/cuda/stage.h: stored one by one, a tile cost a chain of DRAM
 * latencies); a tile across the frame's edges, through the border rule, an element at a
 * time. dtype a constant where the caller's is (sobel's template), the load's switch
 * goes when compiled. */
template <int BATCH = STAGE_BATCH>
static PLM_HD void stage_tile(float *tile, const void *frame, plm_dtype dtype, int64_t h, int64_t w,
                              int64_t y0, int64_t x0, int rows, int cols, int pitch,
                              plm_border border, int tx, int ty, int bx, int by) {
  if (y0 >= 0 && x0 >= 0 && y0 + rows <= h && x0 + cols <= w) {
    plm__stage_batched<BATCH>(
        rows, cols, ty, tx, by, bx,
        [&](int r, int c) { return plm__load_f32(frame, dtype, (y0 + r) * w + x0 + c); },
        [&](int r, int c, float value) { tile[r * pitch + c] = value; });
    return;
  }
  for (int r = ty; r < rows; r += by)
    for (int c = tx; c < cols; c += bx)
      tile[r * pitch + c] = plm__load_border(frame, dtype, h, w, y0 + r, x0 + c, border);
}

#ifdef __CUDACC__

#include "kernels/cuda/launch.h"

/* The tiles of an output of n frames of h x w, tile_h x tile_w each, and a loop over
 * the ones of this block. The loop bounds are the same for every thread of a block, so
 * its body may hold __syncthreads. */
struct tiles {
  int64_t n, rows, cols; /* frames, and tiles per frame down and across */
};

static inline PLM_HD tiles tiles_of(int64_t n, int64_t h, int64_t w, int64_t tile_h,
                                    int64_t tile_w) {
  return tiles{n, (h + tile_h - 1) / tile_h, (w + tile_w - 1) / tile_w};
}

#define FOR_EACH_TILE(t, frame, tile_y, tile_x)                               \
  for (int64_t frame = blockIdx.z; frame < (t).n; frame += gridDim.z)         \
    for (int64_t tile_y = blockIdx.y; tile_y < (t).rows; tile_y += gridDim.y) \
      for (int64_t tile_x = blockIdx.x; tile_x < (t).cols; tile_x += gridDim.x)

/* This block's part of stage_tile. */
static inline __device__ void stage_tile_by_block(float *tile, const void *frame, plm_dtype dtype,
                                                  int64_t h, int64_t w, int64_t y0, int64_t x0,
                                                  int rows, int cols, int pitch,
                                                  plm_border border) {
  stage_tile(tile, frame, dtype, h, w, y0, x0, rows, cols, pitch, border, (int)threadIdx.x,
             (int)threadIdx.y, (int)blockDim.x, (int)blockDim.y);
}

/* One output a thread through a per-pixel function checking every tap against the border
 * (PIXEL(&a, frame, y, x): plm__conv2d_pixel, plm__sepconv2d_pixel), over the output's
 * blockDim.y x blockDim.x tiles: what a filter launches where its tile would not fit shared
 * memory. Args has the output's n, ho, wo and out. */
template <class Args, float (*PIXEL)(const Args *, int64_t, int64_t, int64_t)>
__global__ void direct_kernel(Args a) {
  const tiles t = tiles_of(a.n, a.ho, a.wo, blockDim.y, blockDim.x);
  FOR_EACH_TILE(t, frame, tile_y, tile_x) {
    const int64_t y = tile_y * blockDim.y + threadIdx.y, x = tile_x * blockDim.x + threadIdx.x;
    if (y < a.ho && x < a.wo) a.out[(frame * a.ho + y) * a.wo + x] = PIXEL(&a, frame, y, x);
  }
}

/* The grid over an output's tiles, each dimension capped (FOR_EACH_TILE covers the
 * rest): never refused. */
static inline dim3 make_grid(int64_t n, int64_t height, int64_t width, int tile_h, int tile_w) {
  const tiles t = tiles_of(n, height, width, tile_h, tile_w);
  return dim3(plm__cuda_grid_x(t.cols), plm__cuda_grid_yz(t.rows), plm__cuda_grid_yz(t.n));
}

#endif /* __CUDACC__ */

#endif /* PLUME_KERNELS_CUDA_FRAME_TILES_H */

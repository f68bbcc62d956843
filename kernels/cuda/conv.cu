/* kernels/cuda/conv.cu: conv2d and sobel on the GPU.
 *
 * One thread per output pixel, blocks of 16 x 16 pixels (conv2d: tile_width x 256 /
 * tile_width, its cuda tunable, 16 x 16 by default, flatter for an output fewer rows
 * tall than the block: conv2d_launch_of). A block walks
 * the tiles of the output in a grid-stride loop over (tile column, tile row, frame) on
 * grid (x, y, z), so that any output the CPU takes runs, however tall or wide or deep
 * the batch: each grid dimension is capped below its CUDA limit and the loop covers the
 * rest. Per tile, a block first stages its input tile plus halo in shared memory
 * (each pixel read once through the border rule, converted to f32), with conv2d's
 * taps beside it, then every thread sums its window from shared memory without
 * checks. When the tile of a conv2d with large strides would not fit in shared
 * memory, a plain kernel reads each tap from global memory through the border rule
 * (plm__conv2d_pixel, the same function as the CPU's fallback).
 *
 * Staging (stage_tile) walks the tile's rows and columns with two loops, each thread of
 * a bx x by block taking every by-th row and in it every bx-th column, so no element
 * costs a division. tests/test_conv_cuda_logic.cpp compiles this file as plain C++
 * (the kernels and launchers are under __CUDACC__) and checks on the host that the
 * block's threads together write every element of tiles of the launchers' shapes, for
 * every block conv2d's tile_width gives, exactly once, with the value the border rule
 * gives (as the former loop over idx / cols, idx % cols did), and that conv2d_launch_of
 * makes the launch plume made before the block was tunable at the default.
 *
 * Device cost model, per output pixel (s: the input's bytes per element, 1, 2 or 4):
 *   - conv2d, tiled: the tile of a 16 x 16 block of outputs is R x C = (15 stride_y +
 *     kh) x (15 stride_x + kw) inputs (of a W x H block, (H - 1) stride_y + kh rows
 *     by (W - 1) stride_x + kw columns), each read once through the border rule: R C / 256
 *     x s bytes read per output (3 x 3, stride 1: 1.27 s), the taps (kh kw x 4 bytes)
 *     once per block; 4 bytes written; 2 kh kw flops from shared memory. One launch.
 *     Floor: (R C / 256 x s + 4) bytes x outputs / bandwidth: a 2048 x 2048 u8 frame
 *     with 3 x 3 taps moves 22 MB, 6.6 us at 3.35 TB/s (H100 SXM). The sums bound it
 *     sooner for large taps: each multiply-add loads a tap and an input from shared
 *     memory, two warp-wide loads of the ~1 per clock an SM serves, so about 16
 *     multiply-adds per clock per SM, an eighth of the f32 peak: 15 x 15 taps on that
 *     frame are 0.94 G multiply-adds, about 225 us on 132 SMs at 1.98 GHz.
 *   - conv2d, direct (tiles past 48 KiB of shared memory): kh kw inputs per output
 *     through the caches, each through the border rule.
 *   - sobel: 18 x 18 inputs per 16 x 16 outputs, 1.27 s bytes read per pixel, 4 bytes
 *     written per output asked for (gx, gy, magnitude), about 20 flops. One launch.
 *     Floor: (1.27 s + 4 outputs) bytes x pixels / bandwidth: a 2048 x 2048 u8 frame, the
 *     magnitude only, is 22 MB, 6.6 us at 3.35 TB/s. */
#include "kernels/common/conv.h"
#include "kernels/cuda/launch.h"

enum { TILE = 16, SMEM_MAX = 48 * 1024 };

/* A conv2d launch: the block (tile_w x tile_h threads, one output each), the input tile
 * that its outputs read (with the halo) and the tiled kernel's shared memory in bytes,
 * past SMEM_MAX when the direct kernel runs instead. */
struct conv2d_launch {
  int tile_w, tile_h;
  int64_t tile_rows, tile_cols, smem;
};

/* The launch for args: tile_w the largest power of two of at most args->cuda_tile_width
 * (1..PLM__CONV2D_CUDA_TILE_THREADS; a value out of range is taken as the nearest end),
 * tile_h the rest of the block's PLM__CONV2D_CUDA_TILE_THREADS threads. An output fewer
 * rows tall than that (args->ho >= 1) gets a flatter block instead: tile_h its height
 * rounded up to a power of two, tile_w the rest, so that no row of the block's threads
 * idles (at 16 x 16 a one-row output left 15 of every 16 threads idle, and launched 16
 * times the blocks). Every width gives a valid launch: a tile too large for shared
 * memory runs the direct kernel. */
static conv2d_launch conv2d_launch_of(const plm__conv2d_args *args) {
  conv2d_launch l = {};
  l.tile_w = PLM__CONV2D_CUDA_TILE_THREADS;
  while (l.tile_w > 1 && l.tile_w > args->cuda_tile_width) l.tile_w /= 2;
  l.tile_h = PLM__CONV2D_CUDA_TILE_THREADS / l.tile_w;
  if (args->ho >= 1 && args->ho < l.tile_h) {
    l.tile_h = 1;
    while (l.tile_h < args->ho) l.tile_h *= 2;
    l.tile_w = PLM__CONV2D_CUDA_TILE_THREADS / l.tile_h;
  }
  l.tile_rows = (int64_t)(l.tile_h - 1) * args->stride_y + args->kh;
  l.tile_cols = (int64_t)(l.tile_w - 1) * args->stride_x + args->kw;
  /* Either side alone past the budget means the direct kernel; checking that first
   * keeps the product below from overflowing with huge strides. */
  const int64_t most_floats = SMEM_MAX / (int64_t)sizeof(float);
  l.smem = SMEM_MAX + 1;
  if (l.tile_rows <= most_floats && l.tile_cols <= most_floats)
    l.smem = (l.tile_rows * l.tile_cols + (int64_t)args->kh * args->kw) * (int64_t)sizeof(float);
  return l;
}

/* Stage rows [y0, y0 + rows) x columns [x0, x0 + cols) of one frame, border applied,
 * into tile (row-major, cols wide); every thread of a bx x by block takes part, thread
 * (tx, ty) the rows ty, ty + by, ... and in each the columns tx, tx + bx, ... (a warp
 * reads along a row). The row and column come from the loops' counters: no division per
 * staged element. */
static PLM_HD void stage_tile(float *tile, const void *frame, plm_dtype dtype, int64_t h, int64_t w,
                              int64_t y0, int64_t x0, int rows, int cols, plm_border border, int tx,
                              int ty, int bx, int by) {
  for (int r = ty; r < rows; r += by)
    for (int c = tx; c < cols; c += bx)
      tile[r * cols + c] = plm__load_border(frame, dtype, h, w, y0 + r, x0 + c, border);
}

#ifdef __CUDACC__
/* The most blocks along grid y and z (CUDA's limit is 65535) and along x (2^31 - 1;
 * far more than any GPU runs at once, so the grid-stride loops lose nothing). */
static const int64_t kGridYZ = 65535, kGridX = 1 << 20;

/* The tiles of an output of n frames of h x w, tile_h x tile_w each, and a loop over
 * the ones of this block. The loop bounds are the same for every thread of a block, so
 * its body may hold __syncthreads. */
struct tiles {
  int64_t n, rows, cols; /* frames, and tiles per frame down and across */
};

static PLM_HD tiles tiles_of(int64_t n, int64_t h, int64_t w, int64_t tile_h, int64_t tile_w) {
  return tiles{n, (h + tile_h - 1) / tile_h, (w + tile_w - 1) / tile_w};
}

#define FOR_EACH_TILE(t, frame, tile_y, tile_x)                               \
  for (int64_t frame = blockIdx.z; frame < (t).n; frame += gridDim.z)         \
    for (int64_t tile_y = blockIdx.y; tile_y < (t).rows; tile_y += gridDim.y) \
      for (int64_t tile_x = blockIdx.x; tile_x < (t).cols; tile_x += gridDim.x)

/* This block's part of stage_tile. */
static __device__ void stage_tile_by_block(float *tile, const void *frame, plm_dtype dtype,
                                           int64_t h, int64_t w, int64_t y0, int64_t x0, int rows,
                                           int cols, plm_border border) {
  stage_tile(tile, frame, dtype, h, w, y0, x0, rows, cols, border, (int)threadIdx.x,
             (int)threadIdx.y, (int)blockDim.x, (int)blockDim.y);
}

__global__ void conv2d_tiled_kernel(plm__conv2d_args a, int tile_rows, int tile_cols) {
  extern __shared__ float smem[];
  float *taps = smem;
  float *tile = smem + a.kh * a.kw;
  int threads = blockDim.x * blockDim.y;
  for (int idx = threadIdx.y * blockDim.x + threadIdx.x; idx < a.kh * a.kw; idx += threads)
    taps[idx] = a.taps[idx];
  size_t element = plm__conv_element_size(a.dtype);
  const tiles t = tiles_of(a.n, a.ho, a.wo, blockDim.y, blockDim.x);
  FOR_EACH_TILE(t, frame, tile_y, tile_x) {
    const int64_t oy0 = tile_y * blockDim.y, ox0 = tile_x * blockDim.x;
    const int64_t y = oy0 + threadIdx.y, x = ox0 + threadIdx.x;
    const void *in = (const char *)a.in + (size_t)(frame * a.h * a.w) * element;
    __syncthreads(); /* the taps are in; the previous tile's reads of tile are done */
    stage_tile_by_block(tile, in, a.dtype, a.h, a.w, oy0 * a.stride_y - a.pad_y,
                        ox0 * a.stride_x - a.pad_x, tile_rows, tile_cols, a.border);
    __syncthreads();
    if (y < a.ho && x < a.wo) {
      const float *window = tile + threadIdx.y * a.stride_y * tile_cols + threadIdx.x * a.stride_x;
      float sum = 0.0f;
      for (int i = 0; i < a.kh; i++)
        for (int j = 0; j < a.kw; j++) sum += taps[i * a.kw + j] * window[i * tile_cols + j];
      a.out[(frame * a.ho + y) * a.wo + x] = sum;
    }
  }
}

__global__ void conv2d_direct_kernel(plm__conv2d_args a) {
  const tiles t = tiles_of(a.n, a.ho, a.wo, blockDim.y, blockDim.x);
  FOR_EACH_TILE(t, frame, tile_y, tile_x) {
    const int64_t y = tile_y * blockDim.y + threadIdx.y, x = tile_x * blockDim.x + threadIdx.x;
    if (y < a.ho && x < a.wo)
      a.out[(frame * a.ho + y) * a.wo + x] = plm__conv2d_pixel(&a, frame, y, x);
  }
}

__global__ void sobel_kernel(plm__sobel_args a) {
  __shared__ float tile[TILE + 2][TILE + 2];
  size_t element = plm__conv_element_size(a.dtype);
  const tiles t = tiles_of(a.n, a.h, a.w, TILE, TILE);
  FOR_EACH_TILE(t, frame, tile_y, tile_x) {
    const int64_t y0 = tile_y * TILE, x0 = tile_x * TILE;
    const int64_t y = y0 + threadIdx.y, x = x0 + threadIdx.x;
    const void *in = (const char *)a.in + (size_t)(frame * a.h * a.w) * element;
    __syncthreads(); /* the previous tile's reads of tile are done */
    stage_tile_by_block(&tile[0][0], in, a.dtype, a.h, a.w, y0 - 1, x0 - 1, TILE + 2, TILE + 2,
                        a.border);
    __syncthreads();
    if (y < a.h && x < a.w) {
      const float *top = &tile[threadIdx.y][threadIdx.x];
      const float *mid = &tile[threadIdx.y + 1][threadIdx.x];
      const float *bot = &tile[threadIdx.y + 2][threadIdx.x];
      float gx = plm__sobel_gx(top, mid, bot), gy = plm__sobel_gy(top, bot);
      int64_t at = (frame * a.h + y) * a.w + x;
      if (a.gx) a.gx[at] = gx;
      if (a.gy) a.gy[at] = gy;
      if (a.magnitude) a.magnitude[at] = plm__sobel_magnitude(gx, gy);
    }
  }
}

/* The grid over an output's tiles, each dimension capped (FOR_EACH_TILE covers the
 * rest): never refused. */
static dim3 make_grid(int64_t n, int64_t height, int64_t width, int tile_h, int tile_w) {
  const tiles t = tiles_of(n, height, width, tile_h, tile_w);
  return dim3((unsigned)(t.cols < kGridX ? t.cols : kGridX),
              (unsigned)(t.rows < kGridYZ ? t.rows : kGridYZ),
              (unsigned)(t.n < kGridYZ ? t.n : kGridYZ));
}

extern "C" plm_status plm__conv2d_cuda(void *stream, const plm__conv2d_args *args) {
  const conv2d_launch l = conv2d_launch_of(args);
  const dim3 grid = make_grid(args->n, args->ho, args->wo, l.tile_h, l.tile_w);
  const dim3 block((unsigned)l.tile_w, (unsigned)l.tile_h);
  cudaStream_t s = (cudaStream_t)stream;
  if (l.smem <= SMEM_MAX) {
    conv2d_tiled_kernel<<<grid, block, (size_t)l.smem, s>>>(*args, (int)l.tile_rows,
                                                            (int)l.tile_cols);
    return plm__cuda_check_launch("conv2d_tiled_kernel");
  }
  conv2d_direct_kernel<<<grid, block, 0, s>>>(*args);
  return plm__cuda_check_launch("conv2d_direct_kernel");
}

extern "C" plm_status plm__sobel_cuda(void *stream, const plm__sobel_args *args) {
  const dim3 grid = make_grid(args->n, args->h, args->w, TILE, TILE), block(TILE, TILE);
  sobel_kernel<<<grid, block, 0, (cudaStream_t)stream>>>(*args);
  return plm__cuda_check_launch("sobel_kernel");
}
#endif

/* kernels/cuda/badpixel.cu: bad-pixel replacement on the GPU: the CPU kernel's bits, each
 * flagged pixel's 3 x 3 neighbourhood read from shared memory and handed to the CPU's
 * replacement (plm__badpixel_replace, kernels/common/badpixel.h).
 * tests/test_badpixel.c checks the kernel on every backend against a float64 median, on
 * frames narrower and wider than a tile, within one tile and across many.
 *
 * The walk: a block of 64 x 4 threads takes a tile of 64 columns by 32 rows of a frame
 * (tiles_of and FOR_EACH_TILE, kernels/cuda/frame_tiles.h: the grid capped, the rest
 * walked grid-stride, no division a pixel), stages its span (the tile and a pixel of halo
 * around it, 34 x 66) in shared memory, each pixel's value as f32 and its flag, then each
 * thread puts out 8 pixels of its column, 4 rows apart, a warp along half a row. Pixels
 * outside the frame are staged flagged, so that a flagged pixel's walk skips them as it
 * skips a flagged neighbour, with no test of the frame's bounds.
 *
 * Its cost. The floor is reading each value and flag once and writing the output: 9 bytes
 * a pixel for f32 (45 us at 4096^2 on an H100 SXM). Until 2026-12-07 a thread read its
 * pixel and, when flagged, its 8 neighbours' flags and values from global memory: a
 * warp's gathers are requests of a few lanes each (1 pixel in 16 flagged in bench_ops),
 * about 25 sectors through the L2 a warp of 32 pixels where 5 are the floor's, so the L2
 * bound it at about twice the floor. Now a span's 34 rows each take 8 sectors of values
 * and 2 of flags for the tile's columns (each warp's 32 aligned as the frame's rows are)
 * and 4 for the halo's two columns, 476 sectors for 2,048 pixels, 732 with the stores:
 * 11.4 bytes a pixel through the L2 against 9 from DRAM, so the DRAM binds (a span
 * staged from column x0 - 1 put a row's loads across one more sector a warp, and the
 * lanes of a batched walk out of step: 421 sectors for 1,024 pixels at 32 x 32, the L2
 * still binding at 1.16x). The gathers go to shared memory (a flagged lane's 16 loads, a
 * wavefront a request): 0.33 wavefronts a pixel counted with the staging, under half the
 * DRAM's time.
 * Emulated estimates for an H100 SXM, not measurements (bench_ops --op badpixel,
 * --emulated-cost, f32): 1.38 -> 0.70 us at 512^2, 22.03 -> 11.27 at 2048^2 and 88.17 ->
 * 47.28 at 4096^2 (the L2's bound, 1.96x the floor, to the DRAM's, 1.00x to 1.05x: at
 * 4096^2 the emulator's blocks, run in random order, fetch 7.4 MB of halo rows again).
 * Registers: 56 for sm_90 under __launch_bounds__(256, 4) (4 blocks of 256 an SM;
 * kernels/cuda/register_budgets.txt), the rows kept rolled; unrolled, sm_80 spilled.
 * Before 2026-12-04 a thread found its pixel from the flattened stack by four 64-bit
 * divisions (a called routine of dozens of instructions each on a GPU), and the H200
 * measured the op at 8.9x its floor (278 us at 4096^2 f32, commit d834510); neither
 * change has been timed on a GPU. */
#include "kernels/common/badpixel.h"
#include "kernels/cuda/frame_tiles.h"
#include "kernels/cuda/launch.h"

namespace {

enum {
  kTileCols = 64, /* two warps along a row */
  kBlockRows = 4,
  kRowsPerThread = 8,
  kTileRows = kBlockRows * kRowsPerThread,
  kSpanRows = kTileRows + 2, /* a pixel of halo above and below */
  kSpanCols = kTileCols + 2,
  kSpanRowsPerThread = (kSpanRows + kBlockRows - 1) / kBlockRows, /* 9: one batch of loads */
  kFlagPitch = kSpanCols + 2, /* a span row of flags, whole words */
  kThreads = kTileCols * kBlockRows
};

/* A pixel of the span as staged: its value (f32, exact for u8 and u16) and its flag,
 * nonzero where it is flagged or outside the frame. */
struct span_pixel {
  float value;
  uint8_t bad;
};

struct span {
  float values[kSpanRows][kSpanCols];
  uint8_t bad[kSpanRows][kFlagPitch];
};

/* Pixel (y, x) of frame f as the span holds it: frame_pixel for one inside the frame;
 * pixel_at for any, the frame's bounds tested (outside, a flagged 0). */
__device__ inline span_pixel frame_pixel(const plm__badpixel_args &args, int64_t f, int64_t y,
                                         int64_t x) {
  const int64_t h = args.height, w = args.width;
  return span_pixel{plm__badpixel_value(args.in, (f * h + y) * w + x, args.dtype),
                    args.bad[y * w + x]};
}
__device__ inline span_pixel pixel_at(const plm__badpixel_args &args, int64_t f, int64_t y,
                                      int64_t x) {
  if (y < 0 || y >= args.height || x < 0 || x >= args.width) return span_pixel{0.0f, 1};
  return frame_pixel(args, f, y, x);
}

/* The span of the tile whose first pixel is (y0, x0) of frame f, by the whole block: the
 * tile's columns a thread a column, all of a thread's rows' loads in flight (9 of the
 * span's 34 rows at most: one DRAM round trip), a warp's 32 columns aligned
 * as the frame's rows are (4 sectors of values, 1 of flags); then the halo's two columns,
 * a thread an element (a sector each, the least). A span inside the frame is read
 * without testing the bounds. */
__device__ void stage_span(span &sp, const plm__badpixel_args &args, int64_t f, int64_t y0,
                           int64_t x0) {
  const int64_t h = args.height, w = args.width;
  const bool inside = y0 >= 1 && x0 >= 1 && y0 - 1 + kSpanRows <= h && x0 - 1 + kSpanCols <= w;
  /* span row r, span column c */
  const auto load = [&](int r, int c) {
    const int64_t y = y0 - 1 + r, x = x0 - 1 + c;
    return inside ? frame_pixel(args, f, y, x) : pixel_at(args, f, y, x);
  };
  const auto store = [&](int r, int c, span_pixel p) {
    sp.values[r][c] = p.value;
    sp.bad[r][c] = p.bad;
  };
  plm__stage_batched<kSpanRowsPerThread>(
      kSpanRows, kTileCols, (int)threadIdx.y, (int)threadIdx.x, kBlockRows, kTileCols,
      [&](int r, int c) { return load(r, c + 1); },
      [&](int r, int c, span_pixel p) { store(r, c + 1, p); });
  const int t = (int)(threadIdx.y * kTileCols + threadIdx.x); /* of kThreads */
  if (t < 2 * kSpanRows) {
    const int r = t / 2, c = t % 2 ? kSpanCols - 1 : 0;
    store(r, c, load(r, c));
  }
}

/* The output of span pixel (r, c), one inside the halo. */
__device__ inline float output_at(const span &sp, int r, int c) {
  const float self = sp.values[r][c];
  if (!sp.bad[r][c]) return self;
  float around[9];
  uint8_t skip[9];
  PLM_UNROLLED
  for (int k = 0; k < 9; k++) {
    around[k] = sp.values[r + k / 3 - 1][c + k % 3 - 1];
    skip[k] = sp.bad[r + k / 3 - 1][c + k % 3 - 1];
  }
  return plm__badpixel_replace(self, around, skip);
}

__global__ void __launch_bounds__(kThreads, 4) badpixel_kernel(plm__badpixel_args args) {
  __shared__ span sp;
  const tiles t = tiles_of(args.frames, args.height, args.width, kTileRows, kTileCols);
  FOR_EACH_TILE(t, f, tile_y, tile_x) {
    const int64_t y0 = tile_y * kTileRows, x0 = tile_x * kTileCols;
    __syncthreads(); /* the previous tile's reads of the span are done */
    stage_span(sp, args, f, y0, x0);
    __syncthreads();
    const int64_t x = x0 + threadIdx.x;
    PLM_ROLLED
    for (int k = 0; k < kRowsPerThread; k++) {
      const int r = (int)threadIdx.y + k * kBlockRows;
      const int64_t y = y0 + r;
      if (y < args.height && x < args.width)
        args.out[(f * args.height + y) * args.width + x] = output_at(sp, r + 1, threadIdx.x + 1);
    }
  }
}

}  // namespace

extern "C" plm_status plm__badpixel_cuda(void *stream, const plm__badpixel_args *args) {
  if (args->dtype != PLM_DTYPE_U8 && args->dtype != PLM_DTYPE_U16 && args->dtype != PLM_DTYPE_F32)
    return plm__fail_raw(PLM_ERR_INTERNAL, "badpixel: dtype %d reached the kernel",
                         (int)args->dtype);
  const dim3 grid = make_grid(args->frames, args->height, args->width, kTileRows, kTileCols);
  badpixel_kernel<<<grid, dim3(kTileCols, kBlockRows), 0, (cudaStream_t)stream>>>(*args);
  return plm__cuda_check_launch("badpixel_kernel");
}

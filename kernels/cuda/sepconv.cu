/* kernels/cuda/sepconv.cu: sepconv2d on the GPU (plume/conv.h; the arithmetic's order in
 * kernels/common/sepconv.h).
 *
 * A block of SEP_BX x SEP_BY threads (32 x 8) computes tiles of SEP_W x SEP_H outputs
 * (64 x 32), walking the output's tiles in a grid-stride loop as conv2d does
 * (kernels/cuda/frame_tiles.h). Per tile it
 *   1. stages the input tile, (SEP_H - 1) stride_y + KH rows by (SEP_W - 1) stride_x + KW
 *      columns, in shared memory through the border rule (stage_tile, eight loads in
 *      flight a thread);
 *   2. sums each staged row under kernel_x at the tile's SEP_W output columns (the row
 *      pass): thread (tx, ty) the columns tx and tx + 32 of the rows ty, ty + 8, ...,
 *      each tap read once for SEP_PASS_ROWS (4) of its up to 8 rows, into a second shared
 *      array, SEP_W floats a row;
 *   3. sums those under kernel_y (the column pass): thread (tx, ty) the SEP_ROWS outputs
 *      ty SEP_ROWS .. + 3 of the columns tx and tx + 32; at stride_y 1 the four share
 *      their rows, held in registers and rotated a tap at a time (conv2d_run_sums' way
 *      down a column), so each row sum and each tap is read once for four outputs; and
 *      stores them, a warp along a row.
 * Every sum adds its terms in plm__sepconv2d_pixel's order from 0.0f with each product
 * and sum rounded on its own, so both backends give the same bits. A tile taller than
 * SEP_MAX_TILE_ROWS (64: stride_y 2 with KH above 2, any stride_y above 2) or past 48 KiB
 * of shared memory (stride_x 2 and more with long kernels) runs the direct kernel
 * instead, one output a thread through plm__sepconv2d_pixel: correct, not fast (a 3 x 3
 * stride-2 decimation is one; smaller tiles for strided launches would serve them).
 *
 * Device cost model, per output at stride 1 (s: the input's bytes per element; an H100
 * SXM: 3.35 TB/s, 132 SMs at 1.98 GHz, one shared-memory wavefront per SM a clock, a warp
 * access of 32 distinct banks one wavefront, a broadcast one too):
 *   - DRAM: the tile's (31 + KH) (63 + KW) / 2048 inputs (9 x 9: 1.41 s; the halo mostly
 *     from the L2) and 4 bytes written: a floor of (s + 4) bytes an output, 40 us for
 *     f32 at 4096 x 4096, as conv2d's.
 *   - Shared memory, accesses an output (a 32nd of a wavefront each): staging 1.41; the
 *     row pass (31 + KH) / 32 row sums an output, each KW reads, KW / 8 tap reads (a tap
 *     serves 4 rows by 2 columns) and a write (9 x 9: 1.25 x 11.1 = 13.9); the column pass
 *     (KH + 3) / 4 reads and KH / 4 taps (5.3). 9 x 9: 20.6, 0.64 wavefronts an output
 *     (the emulator counts 0.68): 44 us at 4096 x 4096, 1.1x the floor, where conv2d's 81
 *     taps cost 1.08 wavefronts an output even in runs of 7 (70 us, 1.75x).
 *     Multiply-adds: KH + KW an output (18 against 81).
 * One launch; no scratch. */
#include "kernels/common/sepconv.h"
#include "kernels/cuda/frame_tiles.h"
#include "kernels/cuda/launch.h"

enum {
  SEP_BX = 32,
  SEP_BY = 8,
  SEP_COLUMNS = 2,              /* output columns a thread: tx, tx + SEP_BX */
  SEP_ROWS = 4,                 /* consecutive output rows a thread */
  SEP_W = SEP_BX * SEP_COLUMNS, /* 64 outputs across a tile */
  SEP_H = SEP_BY * SEP_ROWS,    /* 32 down */
  SEP_PASS_ROWS = 4,   /* staged rows a thread's row pass sums together, each tap read once */
  SEP_PASS_GROUPS = 2, /* and how many times: its rows ty, ty + 8, ..., at most 8 of them */
  SEP_MAX_TILE_ROWS = SEP_BY * SEP_PASS_ROWS * SEP_PASS_GROUPS, /* (SEP_H - 1) sy + KH, at most */
  SEP_SMEM_MAX = 48 * 1024, /* the tiled kernel's dynamic shared memory, at most */
  SEP_BLOCKS_PER_SM = 3     /* __launch_bounds__: at most 80 registers, 24 warps an SM */
};

/* A launch's staged tile: rows x cols inputs, rows `pitch` floats apart, and the tiled
 * kernel's shared memory in bytes (taps, tile, row sums); past SEP_SMEM_MAX, or rows past
 * SEP_MAX_TILE_ROWS, when the direct kernel runs instead. */
struct sep_tile {
  int rows, cols, pitch;
  int64_t smem;
};

static sep_tile sep_tile_of(const plm__sepconv2d_args *a) {
  sep_tile t = {0, 0, 0, SEP_SMEM_MAX + 1};
  const int64_t rows = (int64_t)(SEP_H - 1) * a->stride_y + a->kh;
  const int64_t cols = (int64_t)(SEP_W - 1) * a->stride_x + a->kw;
  if (rows > SEP_MAX_TILE_ROWS || cols > SEP_SMEM_MAX / (int64_t)sizeof(float)) return t;
  t.rows = (int)rows;
  t.cols = t.pitch = (int)cols;
  t.smem = ((int64_t)a->kh + a->kw + rows * cols + rows * SEP_W) * (int64_t)sizeof(float);
  return t;
}

#ifdef __CUDACC__

/* Step 2: sums[r][c] = row r of the tile under kernel_x at output column c, for the rows
 * ty, ty + SEP_BY, ... and the columns tx, tx + SEP_BX. */
static __device__ void sep_row_pass(const float *taps_x, int kw, const float *tile,
                                    const sep_tile &s, int stride_x, int first_row, float *sums,
                                    int tx) {
  float acc[SEP_PASS_ROWS][SEP_COLUMNS];
  PLM_UNROLLED
  for (int q = 0; q < SEP_PASS_ROWS; q++) {
    PLM_UNROLLED
    for (int c = 0; c < SEP_COLUMNS; c++) acc[q][c] = 0.0f;
  }
  const float *first = tile + first_row * s.pitch + tx * stride_x;
  for (int j = 0; j < kw; j++) {
    const float tap = taps_x[j];
    PLM_UNROLLED
    for (int q = 0; q < SEP_PASS_ROWS; q++) {
      if (first_row + q * SEP_BY >= s.rows) continue;
      const float *in = first + q * SEP_BY * s.pitch + j;
      PLM_UNROLLED
      for (int c = 0; c < SEP_COLUMNS; c++)
        acc[q][c] = PLM__FADD(acc[q][c], PLM__FMUL(tap, in[c * SEP_BX * stride_x]));
    }
  }
  PLM_UNROLLED
  for (int q = 0; q < SEP_PASS_ROWS; q++) {
    if (first_row + q * SEP_BY >= s.rows) continue;
    PLM_UNROLLED
    for (int c = 0; c < SEP_COLUMNS; c++)
      sums[(first_row + q * SEP_BY) * SEP_W + tx + c * SEP_BX] = acc[q][c];
  }
}

/* Step 3 for one column of sums (col points at its first row, rows SEP_W apart): the
 * SEP_ROWS outputs whose windows start at rows 0, stride_y, ... of it, each adding its
 * KH terms from 0.0f, tap 0 first. At stride_y 1 the window slides: the SEP_ROWS inputs
 * under the current tap stay in registers, in[] rotated by one row a tap. */
static __device__ void sep_column_sums(const float *taps_y, int kh, const float *col, int stride_y,
                                       float out[SEP_ROWS]) {
  PLM_UNROLLED
  for (int k = 0; k < SEP_ROWS; k++) out[k] = 0.0f;
  if (stride_y != 1) {
    for (int i = 0; i < kh; i++) {
      const float tap = taps_y[i];
      PLM_UNROLLED
      for (int k = 0; k < SEP_ROWS; k++)
        out[k] = PLM__FADD(out[k], PLM__FMUL(tap, col[(k * stride_y + i) * SEP_W]));
    }
    return;
  }
  float in[SEP_ROWS]; /* slot (i + k) % SEP_ROWS: output k's input under tap i */
  PLM_UNROLLED
  for (int k = 0; k < SEP_ROWS; k++) in[k] = col[k * SEP_W];
  for (int i0 = 0; i0 < kh; i0 += SEP_ROWS) {
    PLM_UNROLLED
    for (int d = 0; d < SEP_ROWS; d++) {
      const int i = i0 + d;
      if (i >= kh) continue;
      const float tap = taps_y[i];
      PLM_UNROLLED
      for (int k = 0; k < SEP_ROWS; k++)
        out[k] = PLM__FADD(out[k], PLM__FMUL(tap, in[(d + k) % SEP_ROWS]));
      if (i + 1 < kh) in[d] = col[(i + SEP_ROWS) * SEP_W];
    }
  }
}

__global__ void __launch_bounds__(SEP_BX *SEP_BY, SEP_BLOCKS_PER_SM)
    sepconv2d_tiled_kernel(plm__sepconv2d_args a, sep_tile s) {
  extern __shared__ float smem[];
  float *taps_x = smem, *taps_y = smem + a.kw;
  float *tile = taps_y + a.kh;
  float *sums = tile + s.rows * s.pitch;
  const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
  for (int idx = ty * SEP_BX + tx; idx < a.kw + a.kh; idx += SEP_BX * SEP_BY)
    smem[idx] = idx < a.kw ? a.taps_x[idx] : a.taps_y[idx - a.kw];
  const size_t element = plm__conv_element_size(a.dtype);
  const tiles t = tiles_of(a.n, a.ho, a.wo, SEP_H, SEP_W);
  FOR_EACH_TILE(t, frame, tile_y, tile_x) {
    const int64_t oy0 = tile_y * SEP_H, ox0 = tile_x * SEP_W;
    const void *in = (const char *)a.in + (size_t)(frame * a.h * a.w) * element;
    __syncthreads(); /* the taps are in; the previous tile's reads of tile and sums are done */
    stage_tile_by_block(tile, in, a.dtype, a.h, a.w, oy0 * a.stride_y - a.pad_y,
                        ox0 * a.stride_x - a.pad_x, s.rows, s.cols, s.pitch, a.border);
    __syncthreads();
    for (int group = 0; group < SEP_PASS_GROUPS; group++)
      sep_row_pass(taps_x, a.kw, tile, s, a.stride_x, ty + group * SEP_PASS_ROWS * SEP_BY, sums,
                   tx);
    __syncthreads();
    const int r0 = ty * SEP_ROWS;
    PLM_UNROLLED
    for (int c = 0; c < SEP_COLUMNS; c++) {
      const int64_t x = ox0 + tx + c * SEP_BX;
      if (x >= a.wo) continue;
      float out[SEP_ROWS];
      sep_column_sums(taps_y, a.kh, sums + r0 * a.stride_y * SEP_W + tx + c * SEP_BX, a.stride_y,
                      out);
      PLM_UNROLLED
      for (int k = 0; k < SEP_ROWS; k++) {
        const int64_t y = oy0 + r0 + k;
        if (y < a.ho) a.out[(frame * a.ho + y) * a.wo + x] = out[k];
      }
    }
  }
}

extern "C" plm_status plm__sepconv2d_cuda(void *stream, const plm__sepconv2d_args *args) {
  const sep_tile s = sep_tile_of(args);
  cudaStream_t cs = (cudaStream_t)stream;
  const dim3 block(SEP_BX, SEP_BY);
  if (s.smem <= SEP_SMEM_MAX) {
    const dim3 grid = make_grid(args->n, args->ho, args->wo, SEP_H, SEP_W);
    sepconv2d_tiled_kernel<<<grid, block, (size_t)s.smem, cs>>>(*args, s);
    return plm__cuda_check_launch("sepconv2d_tiled_kernel");
  }
  const dim3 grid = make_grid(args->n, args->ho, args->wo, SEP_BY, SEP_BX);
  direct_kernel<plm__sepconv2d_args, plm__sepconv2d_pixel><<<grid, block, 0, cs>>>(*args);
  return plm__cuda_check_launch("direct_kernel<plm__sepconv2d_args>");
}

#endif /* __CUDACC__ */

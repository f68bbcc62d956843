/* kernels/cuda/cfar.cu: cell-averaging CFAR on the GPU, frame by frame, three kernels per
 * frame on the stream:
 *   row_sums     a block per table row: the row's running sums of v and v^2, ROW_THREADS
 *                columns at a time (a shuffle scan in each warp, the warps' totals added
 *                in order, a carry from chunk to chunk); table row 0 is written 0;
 *   column_sums  a thread per table column (adjacent threads, adjacent columns): the
 *                running sums down the column;
 *   pixels       a thread per pixel: plm__cfar_pixel (kernels/common/cfar.h) on the
 *                eight corners of the window's and the guard's boxes in each table.
 * The integer tables (u8, u16) are exact in any order, so the bits equal the CPU's; the
 * f32 tables sum their doubles in the scan's order, not the CPU's left to right.
 *
 * The row scan's block and warp logic (table_row, written against the Block and Warp of
 * kernels/cuda/lanes.h) also runs on the host in tests/test_cfar_cuda_logic.cpp (ctest
 * cfar_cuda_logic), which compiles this file as plain C++ (hence the __CUDACC__ guards)
 * with emulated threads. Not yet run on a GPU (none was available when it was written). */
#include "kernels/common/cfar.h"
#include "kernels/cuda/launch.h"
#ifdef __CUDACC__
#include "kernels/cuda/lanes.h"
#endif

namespace {

constexpr int kRowThreads = 256;
constexpr int kRowWarps = kRowThreads / 32;
constexpr unsigned kThreads = 256;

/* What row_sums keeps in shared memory: each warp's totals and the carry of the chunks
 * before. */
template <typename T>
struct row_shared {
  T warp_sums[kRowWarps], warp_squares[kRowWarps];
  T carry_sum, carry_square;
};

typedef unsigned long long table_int; /* uint64_t, as a shuffle takes it */

PLM_HD inline void load(const void *frame, int64_t i, plm_dtype dtype, double level, table_int *v) {
  (void)level;
  *v = plm__cfar_value_int(frame, i, dtype);
}
PLM_HD inline void load(const void *frame, int64_t i, plm_dtype dtype, double level, double *v) {
  (void)dtype;
  *v = plm__cfar_value_f32(frame, i, level);
}

/* The inclusive running sum of v over the lanes of a warp (every lane calls it). */
template <typename T, class Warp>
PLM_HD T warp_running_sum(const Warp &warp, T v) {
  for (int d = 1; d < 32; d *= 2) {
    const T u = warp.shuffle(v, warp.lane() >= d ? warp.lane() - d : warp.lane());
    if (warp.lane() >= d) v += u;
  }
  return v;
}

/* Table row r (0..height) of a frame by one block of whole warps (at most kRowThreads
 * threads): 0 for r = 0, else the running sums of image row r - 1, with entry 0 = 0. */
template <typename T, class Block, class Warp>
PLM_HD void table_row(const Block &block, const Warp &warp, const void *frame, int64_t width,
                      plm_dtype dtype, double level, int64_t r, T *sums, T *squares,
                      row_shared<T> *shared) {
  const int64_t stride = width + 1;
  T *srow = sums + r * stride, *qrow = squares + r * stride;
  if (r == 0) {
    for (int64_t c = block.thread(); c < stride; c += block.threads()) srow[c] = qrow[c] = 0;
    return;
  }
  const int w = block.thread() / 32, last = block.threads() - 1;
  if (block.thread() == 0) {
    srow[0] = qrow[0] = 0;
    shared->carry_sum = shared->carry_square = 0;
  }
  block.sync();
  for (int64_t base = 0; base < width; base += block.threads()) {
    const int64_t c = base + block.thread();
    T v = 0;
    if (c < width) load(frame, (r - 1) * width + c, dtype, level, &v);
    const T s = warp_running_sum(warp, v), q = warp_running_sum(warp, v * v);
    if (warp.lane() == 31) {
      shared->warp_sums[w] = s;
      shared->warp_squares[w] = q;
    }
    block.sync();
    T before_sum = shared->carry_sum, before_square = shared->carry_square;
    for (int k = 0; k < w; k++) {
      before_sum += shared->warp_sums[k];
      before_square += shared->warp_squares[k];
    }
    if (c < width) {
      srow[c + 1] = before_sum + s;
      qrow[c + 1] = before_square + q;
    }
    block.sync(); /* every thread has read the carry and the warps' totals */
    if (block.thread() == last) {
      shared->carry_sum = before_sum + s;
      shared->carry_square = before_square + q;
    }
    block.sync();
  }
}

/* Table column c: the running sums down it (rows 1..height hold each row's own sums). */
template <typename T>
PLM_HD void table_column(int64_t height, int64_t width, int64_t c, T *sums, T *squares) {
  const int64_t stride = width + 1;
  T s = sums[stride + c], q = squares[stride + c];
  for (int64_t r = 2; r <= height; r++) {
    s += sums[r * stride + c];
    q += squares[r * stride + c];
    sums[r * stride + c] = s;
    squares[r * stride + c] = q;
  }
}

#ifdef __CUDACC__
/* Block b takes table rows b, b + blocks, ...: uniform across the block. */
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    row_sums_kernel(const void *frame, int64_t height, int64_t width, plm_dtype dtype, T *sums,
                    T *squares) {
  __shared__ row_shared<T> shared;
  const plm__cuda_block block;
  const plm__cuda_warp warp;
  const double level = plm__cfar_level(frame, dtype);
  for (int64_t r = blockIdx.x; r <= height; r += gridDim.x)
    table_row(block, warp, frame, width, dtype, level, r, sums, squares, &shared);
}

template <typename T>
__global__ void column_sums_kernel(int64_t height, int64_t width, T *sums, T *squares) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c <= width; c += step)
    table_column(height, width, c, sums, squares);
}

__global__ void pixels_kernel(plm__cfar_args args, const void *frame_in, void *frame_out,
                              const void *sums, const void *squares) {
  const double level = plm__cfar_level(frame_in, args.dtype);
  const int64_t count = args.height * args.width;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step)
    plm__cfar_pixel(&args, frame_in, frame_out, sums, squares, level, i / args.width,
                    i % args.width);
}

/* One frame's tables, of entry type T. */
template <typename T>
plm_status frame_tables(cudaStream_t s, const plm__cfar_args *args, const void *frame) {
  T *sums = (T *)args->scratch, *squares = sums + plm__cfar_table_entries(args);
  row_sums_kernel<T><<<plm__cuda_blocks(args->height + 1, 1), kRowThreads, 0, s>>>(
      frame, args->height, args->width, args->dtype, sums, squares);
  plm_status status = plm__cuda_check_launch("cfar row_sums_kernel");
  if (status != PLM_OK) return status;
  column_sums_kernel<T><<<plm__cuda_blocks(args->width + 1, kThreads), kThreads, 0, s>>>(
      args->height, args->width, sums, squares);
  return plm__cuda_check_launch("cfar column_sums_kernel");
}
#endif

}  // namespace

#ifdef __CUDACC__
extern "C" plm_status plm__cfar_cuda(void *stream, const plm__cfar_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t pixels = args->height * args->width;
  const void *sums = args->scratch;
  const void *squares = (const char *)args->scratch + (size_t)plm__cfar_table_entries(args) * 8;
  for (int64_t f = 0; f < args->frames; f++) {
    const void *frame_in = plm__cfar_frame_in(args, f);
    void *frame_out = plm__cfar_frame_out(args, f);
    plm_status status = args->dtype == PLM_DTYPE_F32 ? frame_tables<double>(s, args, frame_in)
                                                     : frame_tables<table_int>(s, args, frame_in);
    if (status != PLM_OK) return status;
    pixels_kernel<<<plm__cuda_blocks(pixels, kThreads), kThreads, 0, s>>>(*args, frame_in,
                                                                          frame_out, sums, squares);
    status = plm__cuda_check_launch("cfar pixels_kernel");
    if (status != PLM_OK) return status;
  }
  return PLM_OK;
}
#endif

/* kernels/cuda/cfar.cu: cell-averaging CFAR on the GPU, frame by frame, three kernels per
 * frame on the stream:
 *   row_sums     a block per table row: the row's running sums of each cell's components
 *                (v, v^2 and, for f32, 1 when finite: kernels/common/cfar.h), ROW_THREADS
 *                columns at a time (a shuffle scan in each warp, the warps' totals added
 *                in order, a carry from chunk to chunk); table row 0 is written 0;
 *   column_sums  a thread per table column (adjacent threads, adjacent columns): the
 *                running sums down the column, in each table;
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
 * before, per table. */
template <typename T>
struct row_shared {
  T warp_totals[PLM__CFAR_MAX_TABLES][kRowWarps];
  T carry[PLM__CFAR_MAX_TABLES];
};

typedef unsigned long long table_int; /* uint64_t, as a shuffle takes it */

/* Element i's components, one per table (kernels/common/cfar.h). */
PLM_HD inline void load(const void *frame, int64_t i, plm_dtype dtype, double level,
                        table_int cell[PLM__CFAR_MAX_TABLES]) {
  (void)level;
  uint64_t c[PLM__CFAR_MAX_TABLES];
  plm__cfar_cell_int(frame, i, dtype, c);
  for (int t = 0; t < PLM__CFAR_MAX_TABLES; t++) cell[t] = c[t];
}
PLM_HD inline void load(const void *frame, int64_t i, plm_dtype dtype, double level,
                        double cell[PLM__CFAR_MAX_TABLES]) {
  (void)dtype;
  plm__cfar_cell_f32(frame, i, level, cell);
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

/* Table row r (0..height) of a frame, in each of its plm__cfar_tables tables (tables[0],
 * then one every `entries`), by one block of whole warps (at most kRowThreads threads): 0
 * for r = 0, else the running sums of image row r - 1's components, with entry 0 = 0. */
template <typename T, class Block, class Warp>
PLM_HD void table_row(const Block &block, const Warp &warp, const void *frame, int64_t width,
                      plm_dtype dtype, double level, int64_t r, int64_t entries, T *tables,
                      row_shared<T> *shared) {
  const int64_t stride = width + 1;
  const int count = plm__cfar_tables(dtype);
  T *row = tables + r * stride;
  if (r == 0) {
    for (int64_t c = block.thread(); c < stride; c += block.threads())
      for (int t = 0; t < count; t++) row[t * entries + c] = 0;
    return;
  }
  const int w = block.thread() / 32, last = block.threads() - 1;
  if (block.thread() == 0)
    for (int t = 0; t < count; t++) {
      row[t * entries] = 0;
      shared->carry[t] = 0;
    }
  block.sync();
  for (int64_t base = 0; base < width; base += block.threads()) {
    const int64_t c = base + block.thread();
    T cell[PLM__CFAR_MAX_TABLES] = {0, 0, 0}, running[PLM__CFAR_MAX_TABLES];
    if (c < width) load(frame, (r - 1) * width + c, dtype, level, cell);
    for (int t = 0; t < count; t++) running[t] = warp_running_sum(warp, cell[t]);
    if (warp.lane() == 31)
      for (int t = 0; t < count; t++) shared->warp_totals[t][w] = running[t];
    block.sync();
    T before[PLM__CFAR_MAX_TABLES];
    for (int t = 0; t < count; t++) {
      before[t] = shared->carry[t];
      for (int k = 0; k < w; k++) before[t] += shared->warp_totals[t][k];
      if (c < width) row[t * entries + c + 1] = before[t] + running[t];
    }
    block.sync(); /* every thread has read the carry and the warps' totals */
    if (block.thread() == last)
      for (int t = 0; t < count; t++) shared->carry[t] = before[t] + running[t];
    block.sync();
  }
}

/* Table column c of each of the `count` tables: the running sums down it (rows 1..height
 * hold each row's own sums). */
template <typename T>
PLM_HD void table_column(int64_t height, int64_t width, int64_t c, int count, T *tables) {
  const int64_t stride = width + 1, entries = (height + 1) * stride;
  for (int t = 0; t < count; t++) {
    T *table = tables + t * entries, s = table[stride + c];
    for (int64_t r = 2; r <= height; r++) {
      s += table[r * stride + c];
      table[r * stride + c] = s;
    }
  }
}

#ifdef __CUDACC__
/* Block b takes table rows b, b + blocks, ...: uniform across the block. */
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    row_sums_kernel(const void *frame, int64_t height, int64_t width, plm_dtype dtype, T *tables) {
  __shared__ row_shared<T> shared;
  const plm__cuda_block block;
  const plm__cuda_warp warp;
  const double level = plm__cfar_level(frame, dtype);
  const int64_t entries = (height + 1) * (width + 1);
  for (int64_t r = blockIdx.x; r <= height; r += gridDim.x)
    table_row(block, warp, frame, width, dtype, level, r, entries, tables, &shared);
}

template <typename T>
__global__ void column_sums_kernel(int64_t height, int64_t width, int count, T *tables) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c <= width; c += step)
    table_column(height, width, c, count, tables);
}

__global__ void pixels_kernel(plm__cfar_args args, const void *frame_in, void *frame_out,
                              const void *tables) {
  const double level = plm__cfar_level(frame_in, args.dtype);
  const int64_t count = args.height * args.width;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step)
    plm__cfar_pixel(&args, frame_in, frame_out, tables, level, i / args.width, i % args.width);
}

/* One frame's tables, of entry type T. */
template <typename T>
plm_status frame_tables(cudaStream_t s, const plm__cfar_args *args, const void *frame) {
  T *tables = (T *)args->scratch;
  row_sums_kernel<T><<<plm__cuda_blocks(args->height + 1, 1), kRowThreads, 0, s>>>(
      frame, args->height, args->width, args->dtype, tables);
  plm_status status = plm__cuda_check_launch("cfar row_sums_kernel");
  if (status != PLM_OK) return status;
  column_sums_kernel<T><<<plm__cuda_blocks(args->width + 1, kThreads), kThreads, 0, s>>>(
      args->height, args->width, plm__cfar_tables(args->dtype), tables);
  return plm__cuda_check_launch("cfar column_sums_kernel");
}
#endif

}  // namespace

#ifdef __CUDACC__
extern "C" plm_status plm__cfar_cuda(void *stream, const plm__cfar_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t pixels = args->height * args->width;
  for (int64_t f = 0; f < args->frames; f++) {
    const void *frame_in = plm__cfar_frame_in(args, f);
    void *frame_out = plm__cfar_frame_out(args, f);
    plm_status status = args->dtype == PLM_DTYPE_F32 ? frame_tables<double>(s, args, frame_in)
                                                     : frame_tables<table_int>(s, args, frame_in);
    if (status != PLM_OK) return status;
    pixels_kernel<<<plm__cuda_blocks(pixels, kThreads), kThreads, 0, s>>>(*args, frame_in,
                                                                          frame_out, args->scratch);
    status = plm__cuda_check_launch("cfar pixels_kernel");
    if (status != PLM_OK) return status;
  }
  return PLM_OK;
}
#endif

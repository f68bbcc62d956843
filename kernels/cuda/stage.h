/* kernels/cuda/stage.h: a block's threads copying a rectangle of a frame into shared
 * memory with several loads in flight a thread (internal; C++, __host__ __device__, so
 * that the host tests run it too).
 *
 * A kernel that stages a tile walks it with its threads, thread by thread a strided part
 * of it: the rows first_row, first_row + row_step, ... and in each the columns
 * first_col, first_col + col_step, ... of a rows x cols rectangle (with the block's
 * shape as the steps, a warp reads along a row). Written as a loop of load-then-store,
 * each store waits for its load, and a thread's loads reach DRAM one after another: a
 * tile of n elements a thread takes n round trips of DRAM latency (about 0.6 to 1 us
 * under load), and an SM holds only its resident threads' one load each in flight, a
 * few KB against the ~30 KB (4.8 TB/s x ~0.8 us over 132 SMs, Little's law) that an
 * H200 needs to stream at full bandwidth. The H200 measured kernels staging so at 5 to
 * 11x their floors (sobel 10.7x, conv2d 3 x 3 6.5x, 9 x 9 5.0x: 2026-12-04, d834510).
 *
 * plm__stage_batched takes the same elements in the same order, BATCH at a time: it
 * loads BATCH of them, then stores those, so that BATCH loads are in flight together.
 * The positions are walked twice (counters, no arrays, no division), so what a batch
 * costs in registers is its BATCH values. load(r, c) returns the value of element
 * (r, c) of the rectangle; store(r, c, value) puts it in place. The steps must be
 * positive (as the plain loop's). BATCH a compile-time constant and the loops over it
 * unrolled, so that the values stay in registers. */
#ifndef PLUME_KERNELS_CUDA_STAGE_H
#define PLUME_KERNELS_CUDA_STAGE_H

#include "kernels/common/plm_hd.h"

/* The element after (r, c) in a thread's walk: the next column, or the next row's first. */
static PLM_HD inline void plm__stage_next(int &r, int &c, int first_col, int cols, int row_step,
                                          int col_step) {
  c += col_step;
  if (c >= cols) {
    c = first_col;
    r += row_step;
  }
}

template <int BATCH, class Load, class Store>
static PLM_HD inline void plm__stage_batched(int rows, int cols, int first_row, int first_col,
                                             int row_step, int col_step, const Load &load,
                                             const Store &store) {
  using Value = decltype(load(0, 0));
  if (first_col >= cols) return; /* a thread right of a narrow rectangle has none */
  int r = first_row, c = first_col;
  while (r < rows) {
    const int batch_row = r, batch_col = c;
    Value values[BATCH];
    PLM_UNROLLED
    for (int k = 0; k < BATCH; k++) {
      values[k] = Value();
      if (r >= rows) continue;
      values[k] = load(r, c);
      plm__stage_next(r, c, first_col, cols, row_step, col_step);
    }
    r = batch_row;
    c = batch_col;
    PLM_UNROLLED
    for (int k = 0; k < BATCH; k++) {
      if (r >= rows) continue;
      store(r, c, values[k]);
      plm__stage_next(r, c, first_col, cols, row_step, col_step);
    }
  }
}

#endif /* PLUME_KERNELS_CUDA_STAGE_H */

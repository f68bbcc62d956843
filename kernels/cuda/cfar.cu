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
 * f32 tables sum their doubles in the scan's order, not the CPU's left to right. */
#include "kernels/common/cfar.h"
#include "kernels/cuda/launch.h"

enum { ROW_THREADS = 256, ROW_WARPS = ROW_THREADS / 32, THREADS = 256 };

typedef unsigned long long table_int; /* uint64_t, as __shfl_up_sync takes it */

static __device__ void load(const void *frame, int64_t i, plm_dtype dtype, double level,
                            table_int *v) {
  (void)level;
  *v = plm__cfar_value_int(frame, i, dtype);
}
static __device__ void load(const void *frame, int64_t i, plm_dtype dtype, double level,
                            double *v) {
  (void)dtype;
  *v = plm__cfar_value_f32(frame, i, level);
}

/* The inclusive running sum of v over the lanes of a warp (every lane active). */
template <typename T>
static __device__ T warp_running_sum(T v) {
  const int lane = threadIdx.x & 31;
  for (int d = 1; d < 32; d *= 2) {
    T u = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += u;
  }
  return v;
}

template <typename T>
__global__ void row_sums_kernel(const void *frame, int64_t height, int64_t width, plm_dtype dtype,
                                T *sums, T *squares) {
  __shared__ T warp_sums[ROW_WARPS], warp_squares[ROW_WARPS];
  __shared__ T carry_sum, carry_square;
  const int64_t stride = width + 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const double level = plm__cfar_level(frame, dtype);
  for (int64_t r = blockIdx.x; r <= height; r += gridDim.x) {
    T *srow = sums + r * stride, *qrow = squares + r * stride;
    if (r == 0) { /* the table's first row: 0 (r is the same for the whole block) */
      for (int64_t c = threadIdx.x; c < stride; c += blockDim.x) srow[c] = qrow[c] = 0;
      continue;
    }
    if (threadIdx.x == 0) {
      srow[0] = qrow[0] = 0;
      carry_sum = carry_square = 0;
    }
    __syncthreads();
    for (int64_t base = 0; base < width; base += ROW_THREADS) {
      const int64_t c = base + threadIdx.x;
      T v = 0;
      if (c < width) load(frame, (r - 1) * width + c, dtype, level, &v);
      const T s = warp_running_sum(v), q = warp_running_sum(v * v);
      if (lane == 31) {
        warp_sums[warp] = s;
        warp_squares[warp] = q;
      }
      __syncthreads();
      T before_sum = carry_sum, before_square = carry_square;
      for (int k = 0; k < warp; k++) {
        before_sum += warp_sums[k];
        before_square += warp_squares[k];
      }
      if (c < width) {
        srow[c + 1] = before_sum + s;
        qrow[c + 1] = before_square + q;
      }
      __syncthreads(); /* every thread has read the carry and the warps' totals */
      if (threadIdx.x == ROW_THREADS - 1) {
        carry_sum = before_sum + s;
        carry_square = before_square + q;
      }
      __syncthreads();
    }
  }
}

template <typename T>
__global__ void column_sums_kernel(int64_t height, int64_t width, T *sums, T *squares) {
  const int64_t stride = width + 1;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < stride; c += step) {
    T s = sums[stride + c], q = squares[stride + c];
    for (int64_t r = 2; r <= height; r++) {
      s += sums[r * stride + c];
      q += squares[r * stride + c];
      sums[r * stride + c] = s;
      squares[r * stride + c] = q;
    }
  }
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
static plm_status frame_tables(cudaStream_t s, const plm__cfar_args *args, const void *frame) {
  T *sums = (T *)args->scratch, *squares = sums + plm__cfar_table_entries(args);
  row_sums_kernel<T><<<plm__cuda_blocks(args->height + 1, 1), ROW_THREADS, 0, s>>>(
      frame, args->height, args->width, args->dtype, sums, squares);
  plm_status status = plm__cuda_check_launch("cfar row_sums_kernel");
  if (status != PLM_OK) return status;
  column_sums_kernel<T><<<plm__cuda_blocks(args->width + 1, THREADS), THREADS, 0, s>>>(
      args->height, args->width, sums, squares);
  return plm__cuda_check_launch("cfar column_sums_kernel");
}

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
    pixels_kernel<<<plm__cuda_blocks(pixels, THREADS), THREADS, 0, s>>>(*args, frame_in, frame_out,
                                                                        sums, squares);
    status = plm__cuda_check_launch("cfar pixels_kernel");
    if (status != PLM_OK) return status;
  }
  return PLM_OK;
}

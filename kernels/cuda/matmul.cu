/* kernels/cuda/matmul.cu: matmul on the GPU.
 *
 * FP32: a tiled SGEMM on the CUDA cores. A block of 256 threads computes a 64 x 64 tile
 * of out, each thread a 4 x 4 sub-block, stepping through the depth 16 at a time with a
 * 64 x 16 tile of a and a 16 x 64 tile of b in shared memory. Each thread loads its 8
 * elements of the next step's tiles before the step's multiply-adds, so that the loads
 * are in flight while it computes (depth_step). The H200 (2026-12-04, d834510) measured the
 * former kernel, which loaded and stored them one by one at the top of each step, at 8,869 us for
 * 4096^3, 3.3x cuBLAS's 2,697 (15.5 TFLOP/s of the FMA probe's 48): 8 round trips to L2 a step,
 * against 256 multiply-adds a thread to cover them. Now 80 registers (48 before): 3 blocks of 256
 * an SM instead of 5. Not yet timed on a GPU.
 *
 * TF32 and BF16: tensor cores through WMMA (sm_80 and later). A block of 4 warps
 * computes a 64 x 64 tile, each warp 32 x 32 as 2 x 2 fragments of 16 x 16, with f32
 * accumulators; the depth advances 16 at a time (two m16n16k8 steps for TF32, one
 * m16n16k16 step for BF16). The tiles of a and b are rounded to the precision as they
 * are staged in shared memory (plm__round_mantissa, round to nearest even: exactly what
 * the host backend does), so the tensor cores see the same inputs as the CPU.
 *
 * Both kernels zero-pad the staged tiles past m, n and k, and guard every store, so any
 * shape works. The bias and the activation are applied as out is written (the
 * accumulators go through shared memory on the tensor-core path), after out's old value
 * when accumulating. A transposed b (stored (n, k)) is staged into the same tile, its
 * threads numbered along k so that they read consecutive addresses, as a's do. Where the code built
 * for the device is older than sm_80 (no WMMA on tf32 / bf16), the FP32 kernel runs on
 * inputs rounded to the precision instead.
 */
#include <cuda_bf16.h>
#include <mma.h>

#include "kernels/common/matmul.h"
#include "kernels/cuda/launch.h"

namespace {

constexpr int TILE = 64;  /* out tile edge, both kernels */
constexpr int DEPTH = 16; /* depth step, both kernels */
constexpr int SGEMM_THREADS = 256;
constexpr int WMMA_THREADS = 128;
static_assert(PLM__MATMUL_CUDA_MAX_ROWS == 65535LL * TILE, "the grid's y counts row tiles");

/* out[row, col] from its sum: the old value added first when accumulating, then the
 * bias and the activation. */
__device__ inline void store_out(const plm__matmul_args &args, int64_t row, int64_t col,
                                 float sum) {
  float *out = args.out + row * args.n + col;
  if (args.accumulate) sum = *out + sum;
  if (args.bias) sum += args.bias[col];
  *out = plm__activate(sum, args.activation);
}

/* Element e of a DEPTH x TILE tile of b (depth step bk, column c), numbered so that
 * consecutive threads read consecutive addresses: along n for b stored (k, n), along k
 * for b stored (n, k) (b_transposed). */
__device__ inline void b_tile_element(const plm__matmul_args &args, int e, int *bk, int *c) {
  if (args.b_transposed) {
    *bk = e % DEPTH;
    *c = e / DEPTH;
  } else {
    *bk = e / TILE;
    *c = e % TILE;
  }
}

/* a's value at row gr and depth gk, and b's at depth gk and column gc: 0 past m, n or k,
 * the tiles' padding (rounding keeps 0). */
__device__ inline float a_at(const plm__matmul_args &args, int64_t gr, int64_t gk) {
  return gr < args.m && gk < args.k ? args.a[gr * args.k + gk] : 0.0f;
}

__device__ inline float b_at(const plm__matmul_args &args, int64_t gk, int64_t gc) {
  if (!(gk < args.k && gc < args.n)) return 0.0f;
  return args.b_transposed ? args.b[gc * args.k + gk] : args.b[gk * args.n + gc];
}

/* Element e of the 64 x 16 tile of a: row r, depth kk (consecutive threads along k). */
__device__ inline void a_tile_element(int e, int *r, int *kk) {
  *r = e / DEPTH;
  *kk = e % DEPTH;
}

/* A thread's elements of one depth step's tiles of a and b in the FP32 kernel: element
 * threadIdx.x + i x SGEMM_THREADS of each tile (a_tile_element, b_tile_element), 0 past m,
 * n and k, held in registers from their loads (load) to their stores into shared memory,
 * rounded to the precision (store). The kernel loads the next step's before a step's
 * multiply-adds and stores them after, so that the loads are in flight while the thread
 * computes: loaded and stored one by one at the top of each step, as before, each of a
 * thread's 8 loads waited for its store, a chain of round trips to L2 every step. (The
 * tensor-core kernel's 16 a thread, so held, took it to 168 registers and a spill.) */
struct depth_step {
  static constexpr int N = TILE * DEPTH / SGEMM_THREADS;
  static_assert(N * SGEMM_THREADS == TILE * DEPTH, "the threads cover the tiles");
  float a[N], b[N];

  __device__ void load(const plm__matmul_args &args, int64_t row0, int64_t col0, int64_t k0) {
#pragma unroll
    for (int i = 0; i < N; i++) {
      const int e = (int)threadIdx.x + i * SGEMM_THREADS;
      int r, kk, bk, c;
      a_tile_element(e, &r, &kk);
      a[i] = a_at(args, row0 + r, k0 + kk);
      b_tile_element(args, e, &bk, &c);
      b[i] = b_at(args, k0 + bk, col0 + c);
    }
  }

  /* Into the kernel's tiles: a transposed, a_tile[kk][row]. */
  __device__ void store(const plm__matmul_args &args, float (*a_tile)[TILE + 4],
                        float (*b_tile)[TILE + 4]) const {
#pragma unroll
    for (int i = 0; i < N; i++) {
      const int e = (int)threadIdx.x + i * SGEMM_THREADS;
      int r, kk, bk, c;
      a_tile_element(e, &r, &kk);
      a_tile[kk][r] = plm__round_to_precision(a[i], args.precision);
      b_tile_element(args, e, &bk, &c);
      b_tile[bk][c] = plm__round_to_precision(b[i], args.precision);
    }
  }
};

/* FP32 (or, below sm_80, rounded inputs) on the CUDA cores, the next depth step's tiles
 * loaded while a step computes (depth_step). */
__global__ void __launch_bounds__(SGEMM_THREADS) sgemm_kernel(plm__matmul_args args) {
  __shared__ float a_tile[DEPTH][TILE + 4]; /* transposed: a_tile[k][row] */
  __shared__ float b_tile[DEPTH][TILE + 4];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t row0 = (int64_t)blockIdx.y * TILE, col0 = (int64_t)blockIdx.x * TILE;
  float sums[4][4] = {};
  depth_step next;
  next.load(args, row0, col0, 0);
  for (int64_t k0 = 0; k0 < args.k; k0 += DEPTH) {
    next.store(args, a_tile, b_tile);
    __syncthreads();
    if (k0 + DEPTH < args.k) next.load(args, row0, col0, k0 + DEPTH);
#pragma unroll
    for (int kk = 0; kk < DEPTH; kk++) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; i++) av[i] = a_tile[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; j++) bv[j] = b_tile[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) sums[i][j] = fmaf(av[i], bv[j], sums[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) {
      int64_t r = row0 + ty + 16 * i, c = col0 + tx + 16 * j;
      if (r < args.m && c < args.n) store_out(args, r, c, sums[i][j]);
    }
}

/* WMMA on tf32 and bf16 exists from sm_80 on (mma.h declares it only there). Below, the
 * tensor-core kernel compiles to nothing and is never launched. */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define PLM__WMMA_TF32_BF16 1
#endif

#ifdef PLM__WMMA_TF32_BF16
/* What the tensor-core kernel stages and multiplies, per precision. */
template <plm_precision P>
struct wmma_traits;

template <>
struct wmma_traits<PLM_PRECISION_TF32> {
  typedef float staged; /* already rounded to tf32 */
  typedef nvcuda::wmma::precision::tf32 element;
  static constexpr int FRAG_K = 8;
  static constexpr int PAD = 4; /* WMMA wants ldm a multiple of 16 bytes */
  static __device__ float stage(float x) { return plm__round_tf32(x); }
};

template <>
struct wmma_traits<PLM_PRECISION_BF16> {
  typedef __nv_bfloat16 staged;
  typedef __nv_bfloat16 element;
  static constexpr int FRAG_K = 16;
  static constexpr int PAD = 8;
  static __device__ __nv_bfloat16 stage(float x) { return __float2bfloat16_rn(x); }
};

#endif /* PLM__WMMA_TF32_BF16 */

template <plm_precision P>
__global__ void __launch_bounds__(WMMA_THREADS) wmma_kernel(plm__matmul_args args) {
#ifndef PLM__WMMA_TF32_BF16
  /* Never launched below sm_80 (the launcher checks the device). */
  (void)args;
#else
  using namespace nvcuda;
  typedef wmma_traits<P> traits;
  typedef typename traits::staged staged;
  constexpr int LDA = DEPTH + traits::PAD, LDB = TILE + traits::PAD, LDC = TILE + 4;
  /* The staged tiles, and after the last step the f32 results, share the memory. */
  constexpr int STAGED_BYTES = (TILE * LDA + DEPTH * LDB) * (int)sizeof(staged);
  constexpr int OUT_BYTES = TILE * LDC * (int)sizeof(float);
  __shared__ __align__(
      32) unsigned char shared[STAGED_BYTES > OUT_BYTES ? STAGED_BYTES : OUT_BYTES];
  staged *a_tile = reinterpret_cast<staged *>(shared); /* [TILE][LDA] */
  staged *b_tile = a_tile + TILE * LDA;                /* [DEPTH][LDB] */
  float *out_tile = reinterpret_cast<float *>(shared); /* [TILE][LDC] */

  const int warp = threadIdx.x / 32;
  const int warp_row = (warp / 2) * 32, warp_col = (warp % 2) * 32;
  const int64_t row0 = (int64_t)blockIdx.y * TILE, col0 = (int64_t)blockIdx.x * TILE;

  wmma::fragment<wmma::accumulator, 16, 16, traits::FRAG_K, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int64_t k0 = 0; k0 < args.k; k0 += DEPTH) {
    for (int e = threadIdx.x; e < TILE * DEPTH; e += WMMA_THREADS) {
      int r, kk;
      a_tile_element(e, &r, &kk);
      a_tile[r * LDA + kk] =
          traits::stage(plm__round_to_precision(a_at(args, row0 + r, k0 + kk), P));
      int bk, c;
      b_tile_element(args, e, &bk, &c);
      b_tile[bk * LDB + c] =
          traits::stage(plm__round_to_precision(b_at(args, k0 + bk, col0 + c), P));
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < DEPTH; kk += traits::FRAG_K) {
      wmma::fragment<wmma::matrix_a, 16, 16, traits::FRAG_K, typename traits::element,
                     wmma::row_major>
          a_frag[2];
      wmma::fragment<wmma::matrix_b, 16, 16, traits::FRAG_K, typename traits::element,
                     wmma::row_major>
          b_frag[2];
#pragma unroll
      for (int i = 0; i < 2; i++) {
        wmma::load_matrix_sync(a_frag[i], a_tile + (warp_row + 16 * i) * LDA + kk, LDA);
        wmma::load_matrix_sync(b_frag[i], b_tile + kk * LDB + warp_col + 16 * i, LDB);
        if constexpr (P == PLM_PRECISION_TF32) {
          /* Already tf32 values: the conversion WMMA asks for changes nothing. */
          for (int t = 0; t < a_frag[i].num_elements; t++)
            a_frag[i].x[t] = wmma::__float_to_tf32(a_frag[i].x[t]);
          for (int t = 0; t < b_frag[i].num_elements; t++)
            b_frag[i].x[t] = wmma::__float_to_tf32(b_frag[i].x[t]);
        }
      }
#pragma unroll
      for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 2; j++)
      wmma::store_matrix_sync(out_tile + (warp_row + 16 * i) * LDC + warp_col + 16 * j, acc[i][j],
                              LDC, wmma::mem_row_major);
  __syncthreads();
  for (int e = threadIdx.x; e < TILE * TILE; e += WMMA_THREADS) {
    int r = e / TILE, c = e % TILE;
    int64_t gr = row0 + r, gc = col0 + c;
    if (gr < args.m && gc < args.n) store_out(args, gr, gc, out_tile[r * LDC + c]);
  }
#endif
}

}  // namespace

extern "C" plm_status plm__matmul_cuda(void *stream, const plm__matmul_args *args) {
  cudaStream_t s = (cudaStream_t)stream;
  const int64_t tiles_m = (args->m + TILE - 1) / TILE, tiles_n = (args->n + TILE - 1) / TILE;
  if (args->m > PLM__MATMUL_CUDA_MAX_ROWS || tiles_n > 2147483647LL)
    return plm__fail_raw(PLM_ERR_UNSUPPORTED, "matmul: %lld rows exceed the grid (at most %lld)",
                         (long long)args->m, PLM__MATMUL_CUDA_MAX_ROWS);
  dim3 grid((unsigned)tiles_n, (unsigned)tiles_m);
  /* The tensor-core kernel as built for this device: empty where that code is older than
   * sm_80 (a build for older architectures, even on a newer GPU). */
  const void *wmma = args->precision == PLM_PRECISION_TF32
                         ? (const void *)wmma_kernel<PLM_PRECISION_TF32>
                         : (const void *)wmma_kernel<PLM_PRECISION_BF16>;
  bool tensor_cores = false;
  if (args->precision != PLM_PRECISION_FP32) {
    cudaFuncAttributes attributes;
    cudaError_t err = cudaFuncGetAttributes(&attributes, wmma);
    if (err != cudaSuccess)
      return plm__cuda_call_failed(err, "matmul: reading wmma_kernel's attributes");
    tensor_cores = attributes.binaryVersion >= 80;
  }
  if (!tensor_cores) {
    sgemm_kernel<<<grid, SGEMM_THREADS, 0, s>>>(*args);
    return plm__cuda_check_launch("matmul sgemm_kernel");
  }
  if (args->precision == PLM_PRECISION_TF32) {
    wmma_kernel<PLM_PRECISION_TF32><<<grid, WMMA_THREADS, 0, s>>>(*args);
    return plm__cuda_check_launch("matmul wmma_kernel<tf32>");
  }
  wmma_kernel<PLM_PRECISION_BF16><<<grid, WMMA_THREADS, 0, s>>>(*args);
  return plm__cuda_check_launch("matmul wmma_kernel<bf16>");
}

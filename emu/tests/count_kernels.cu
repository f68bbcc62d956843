/* emu/tests/count_kernels.cu: kernels whose memory traffic is known exactly, for the
 * emulator's counters (emu/tests/test_emu_count.cpp checks what is counted against what
 * each comment here says a GPU is asked for). Real CUDA: nvcc compiles it unchanged. */
#include <stdint.h>

#include "emu/tests/count_kernels.h"

namespace {

constexpr int kThreads = 256;

int blocks_for(int n) { return (n + kThreads - 1) / kThreads; }

__global__ void copy_kernel(const float *in, float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

/* Four floats a thread through the cache-hint intrinsics, as one 16-byte vector each
 * (ld.global.cg.v4.f32 and st.global.cg.v4.f32 on a GPU): a warp's request is 512 bytes. */
__global__ void copy_quads_kernel(const float4 *in, float4 *out, int quads) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < quads) __stcg(&out[i], __ldcg(&in[i]));
}

__global__ void stride32_kernel(const float *in, float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[32 * i];
}

__global__ void vector_add_kernel(const float *a, const float *b, float *c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void threshold_kernel(const float *in, uint8_t *out, float bound, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > bound ? 255 : 0;
}

__global__ void shared_stride_kernel(int stride, float *out) {
  __shared__ float words[1024];
  const int lane = threadIdx.x;
  for (int w = lane; w < 1024; w += 32) words[w] = (float)w;
  __syncthreads();
  out[blockIdx.x * 32 + lane] = words[(lane * stride) % 1024];
}

__global__ void atomics_kernel(int *counters, int *out) {
  __shared__ int same;
  __shared__ int each[32];
  const int t = threadIdx.x, lane = t % 32;
  if (t == 0) same = 0;
  if (t < 32) each[t] = 0;
  __syncthreads();
  atomicAdd(&counters[0], 1);
  atomicAdd(&counters[1 + lane], 1);
  atomicAdd(&same, 1);
  atomicAdd(&each[lane], 1);
  __syncthreads();
  if (t == 0) out[0] = same;
  if (t < 32) out[1 + t] = each[t];
}

/* volatile: each read is issued, none merged with an earlier one of the same word. */
__global__ void sector_pattern_kernel(int pattern, const volatile float *in, float *out) {
  const int lru_friendly[6] = {0, 1, 0, 2, 0, 3}, cyclic[6] = {0, 1, 2, 0, 1, 2};
  float sum = 0;
  for (int k = 0; k < 6; k++) sum += in[8 * (pattern == 0 ? lru_friendly[k] : cyclic[k])];
  out[0] = sum;
}

__global__ void collectives_kernel(int *out) {
  const int t = threadIdx.x, lane = t % 32;
  __syncwarp();
  int v = t;
  if (lane < 16) v = __shfl_down_sync(0x0000ffffu, v, 1, 16);
  const double d = __shfl_xor_sync(0xffffffffu, (double)t, 1);
  const unsigned odd = __ballot_sync(0xffffffffu, t % 2);
  out[t] = v + (int)d + (int)(odd & 1u);
}

/* One warp, `rows` trips: in trip r even lanes load once and odd lanes twice, each load a
 * lane's word of a row of 32 floats (row 2r, then 2r + 1), then, with `together`, a
 * __syncwarp. */
__global__ void divergent_trips_kernel(const float *in, float *out, int rows, int together) {
  const int lane = threadIdx.x % 32;
  float sum = 0;
  for (int r = 0; r < rows; r++) {
    for (int j = 0; j <= lane % 2; j++) sum += in[(2 * r + j) * 32 + lane];
    if (together) __syncwarp();
  }
  out[lane] = sum;
}

}  // namespace

cudaError_t count_copy(const float *in, float *out, int n, cudaStream_t s) {
  copy_kernel<<<blocks_for(n), kThreads, 0, s>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t count_copy_quads(const float *in, float *out, int n, cudaStream_t s) {
  copy_quads_kernel<<<blocks_for(n / 4), kThreads, 0, s>>>((const float4 *)in, (float4 *)out, n / 4);
  return cudaGetLastError();
}

cudaError_t count_stride32(const float *in, float *out, int n, cudaStream_t s) {
  stride32_kernel<<<blocks_for(n), kThreads, 0, s>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t count_vector_add(const float *a, const float *b, float *c, int n, cudaStream_t s) {
  vector_add_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, b, c, n);
  return cudaGetLastError();
}

cudaError_t count_threshold(const float *in, uint8_t *out, float bound, int n, cudaStream_t s) {
  threshold_kernel<<<blocks_for(n), kThreads, 0, s>>>(in, out, bound, n);
  return cudaGetLastError();
}

cudaError_t count_shared_stride(int stride, float *out, int blocks, cudaStream_t s) {
  shared_stride_kernel<<<blocks, 32, 0, s>>>(stride, out);
  return cudaGetLastError();
}

cudaError_t count_atomics(int *counters, int *out, cudaStream_t s) {
  atomics_kernel<<<1, 64, 0, s>>>(counters, out);
  return cudaGetLastError();
}

cudaError_t count_sector_pattern(int pattern, const float *in, float *out, cudaStream_t s) {
  sector_pattern_kernel<<<1, 1, 0, s>>>(pattern, in, out);
  return cudaGetLastError();
}

cudaError_t count_collectives(int *out, cudaStream_t s) {
  collectives_kernel<<<1, 64, 0, s>>>(out);
  return cudaGetLastError();
}

cudaError_t count_divergent_trips(const float *in, float *out, int rows, int together,
                                  cudaStream_t s) {
  divergent_trips_kernel<<<1, 32, 0, s>>>(in, out, rows, together);
  return cudaGetLastError();
}

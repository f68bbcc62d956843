/* emu/tests/device_kernels.cu: kernels for the emulator's own tests
 * (emu/tests/test_emu_device.cpp): first kernels that use each part of the device
 * correctly, whose results the test checks; then kernels that each hold one planted
 * defect, which the emulator must report (the table in emu/README.md).
 *
 * Real CUDA: nvcc compiles this file as it is; the emulated build rewrites it like
 * kernels/cuda/*.cu. Each launcher enqueues on the stream it is given and returns. */
#include <cuda_bf16.h>
#include <mma.h>
#include <stdint.h>

#include "emu/tests/device_kernels.h"

/* ---- correct use ------------------------------------------------------------------- */

/* Every shuffle, with widths 32, 16 and 8 and a partial mask: out[9 t + k]. */
__global__ void shuffles_kernel(int *out) {
  const int lane = threadIdx.x & 31;
  const int v = lane * 3 + 1;
  int *o = out + 9 * threadIdx.x;
  o[0] = __shfl_sync(0xffffffffu, v, 5);
  o[1] = __shfl_sync(0xffffffffu, v, lane + 3, 16);
  o[2] = __shfl_up_sync(0xffffffffu, v, 2);
  o[3] = __shfl_down_sync(0xffffffffu, v, 3, 8);
  o[4] = __shfl_xor_sync(0xffffffffu, v, 6);
  o[5] = __shfl_xor_sync(0xffffffffu, v, 8, 8);
  /* A partial mask: the even lanes among themselves, the odd ones on their own. */
  if (lane % 2 == 0) o[6] = __shfl_sync(0x55555555u, v, (lane + 2) % 32);
  else o[6] = __shfl_xor_sync(0xaaaaaaaau, v, 2);
  long long wide = ((long long)v << 33) | lane;
  o[7] = (int)(__shfl_down_sync(0xffffffffu, wide, 1) >> 33);
  double d = v + 0.5;
  o[8] = (int)__shfl_up_sync(0xffffffffu, d, 4);
}

/* Votes, matches and reductions, over all lanes and over the lower half. */
__global__ void votes_kernel(unsigned *out) {
  const unsigned lane = threadIdx.x & 31;
  unsigned *o = out + 10 * threadIdx.x;
  o[0] = __ballot_sync(0xffffffffu, lane % 3 == 0);
  o[1] = __any_sync(0xffffffffu, lane == 17);
  o[2] = __all_sync(0xffffffffu, lane < 32);
  o[3] = __match_any_sync(0xffffffffu, lane / 4);
  int pred = 0;
  o[4] = __match_all_sync(0xffffffffu, 7, &pred);
  o[5] = (unsigned)pred;
  o[6] = __reduce_add_sync(0xffffffffu, lane);
  o[7] = __reduce_max_sync(0xffffffffu, lane ^ 5u);
  if (lane < 16) o[8] = __ballot_sync(0x0000ffffu, lane & 1);
  else o[8] = __reduce_min_sync(0xffff0000u, lane);
  o[9] = __activemask();
}

/* The barrier's _count, _and and _or forms. */
__global__ void barriers_kernel(int *out) {
  const int t = threadIdx.x;
  out[4 * t] = __syncthreads_count(t % 3 == 0);
  out[4 * t + 1] = __syncthreads_and(t < 1000);
  out[4 * t + 2] = __syncthreads_or(t == 77);
  out[4 * t + 3] = __syncthreads_and(t != 5);
}

/* Atomics of every type on global and shared memory, from every block. */
__global__ void atomics_kernel(atomic_results *r) {
  __shared__ int shared_count;
  __shared__ float shared_sum;
  if (threadIdx.x == 0) {
    shared_count = 0;
    shared_sum = 0.0f;
  }
  __syncthreads();
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&shared_count, 1);
  atomicAdd(&shared_sum, 0.5f);
  atomicAdd(&r->i, 1);
  atomicAdd(&r->u, 2u);
  atomicAdd(&r->ull, 3ull);
  atomicAdd(&r->f, 0.25f);
  atomicAdd(&r->d, 0.125);
  atomicMin(&r->min, -t);
  atomicMax(&r->max, t);
  atomicOr(&r->bits, 1u << (t % 32));
  atomicInc(&r->wrap, 9u);
  int seen = atomicCAS(&r->first, -1, t);
  if (seen == -1) atomicAdd(&r->cas_winners, 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(&r->shared_counts, shared_count);
    atomicAdd(&r->shared_sums, shared_sum);
  }
}

/* Dynamic and static shared memory, and 3-D blocks and grids. */
__global__ void shared_kernel(int *out) {
  extern __shared__ int dynamic[];
  __shared__ int tile[4][8][8];
  const int t = threadIdx.x + 8 * (threadIdx.y + 8 * threadIdx.z);
  tile[threadIdx.z][threadIdx.y][threadIdx.x] = t;
  dynamic[t] = 1000 + t;
  __syncthreads();
  const int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  out[block * 256 + t] = tile[3 - threadIdx.z][7 - threadIdx.y][7 - threadIdx.x] + dynamic[255 - t];
}

/* One warp waits for another through shared memory, yielding with __nanosleep. */
__global__ void spin_kernel(int *out) {
  __shared__ int flag;
  __shared__ int value;
  if (threadIdx.x == 0) flag = value = 0;
  __syncthreads();
  if (threadIdx.x == 32) {
    atomicExch(&value, 42);
    atomicExch(&flag, 1);
  }
  if (threadIdx.x == 0) {
    while (atomicAdd(&flag, 0) == 0) __nanosleep(100);
    out[0] = atomicAdd(&value, 0);
  }
}

/* 16 x 16 tiles of D = A B + C by WMMA: tf32 (k 8) and bf16 (k 16), one warp. */
__global__ void wmma_kernel(const float *a, const float *b, const float *c, float *d_tf32,
                            float *d_bf16) {
  using namespace nvcuda;
  __shared__ __align__(32) float a_tile[16 * 16];
  __shared__ __align__(32) float b_tile[16 * 16];
  __shared__ __align__(32) __nv_bfloat16 a_bf16[16 * 16];
  __shared__ __align__(32) __nv_bfloat16 b_bf16[16 * 16];
  for (int e = threadIdx.x; e < 256; e += 32) {
    a_tile[e] = a[e];
    b_tile[e] = b[e];
    a_bf16[e] = __float2bfloat16_rn(a[e]);
    b_bf16[e] = __float2bfloat16_rn(b[e]);
  }
  __syncwarp();
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
  for (int k = 0; k < 16; k += 8) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
    wmma::load_matrix_sync(fa, a_tile + k, 16);
    wmma::load_matrix_sync(fb, b_tile + k * 16, 16);
    for (int i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; i++) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(d_tf32, acc, 16, wmma::mem_row_major);
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc16;
  wmma::fill_fragment(acc16, 0.0f);
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> ha;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> hb;
  wmma::load_matrix_sync(ha, a_bf16, 16);
  wmma::load_matrix_sync(hb, b_bf16, 16); /* read as column-major: B transposed */
  wmma::mma_sync(acc16, ha, hb, acc16);
  wmma::store_matrix_sync(d_bf16, acc16, 16, wmma::mem_col_major);
}

/* A kernel that ends the grid with a trap. */
__global__ void trap_kernel(int *out) {
  if (blockIdx.x == 1 && threadIdx.x == 3) __trap();
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

/* Large dynamic shared memory, which needs the opt-in attribute. */
__global__ void big_shared_kernel(int *out) {
  extern __shared__ int big[];
  big[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = big[blockDim.x - 1 - threadIdx.x];
}

/* Blocks that talk through global memory: each adds to a counter, the last one in sums. */
__global__ void blocks_kernel(int *counter, int *total) {
  __shared__ bool last;
  if (threadIdx.x == 0) {
    atomicAdd(total, (int)blockIdx.x);
    __threadfence();
    last = atomicAdd(counter, 1) == (int)gridDim.x - 1;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) atomicAdd(total, 1000000);
}

/* Copy n floats, a grid-stride loop. */
__global__ void copy_kernel(const float *in, float *out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i];
}

/* ---- planted defects ----------------------------------------------------------------- */

/* A block's sum without the barrier between writing and reading the partial sums. */
__global__ void missing_barrier_kernel(const float *in, float *out) {
  __shared__ float sums[128];
  sums[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
  /* __syncthreads(); -- removed */
  for (int half = 64; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = sums[0];
}

/* A histogram whose bins are incremented without atomics. */
__global__ void plain_histogram_kernel(const uint8_t *in, int n, int *out) {
  __shared__ int hist[16];
  if (threadIdx.x < 16) hist[threadIdx.x] = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) hist[in[i] & 15]++; /* should be atomicAdd */
  __syncthreads();
  if (threadIdx.x < 16) out[threadIdx.x] = hist[threadIdx.x];
}

/* A 3-point stencil that reads one past the right edge of its row. */
__global__ void past_right_edge_kernel(const float *in, float *out, int width) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= width) return;
  const float left = x > 0 ? in[x - 1] : in[x];
  out[x] = left + in[x] + in[x + 1]; /* x + 1 == width on the last pixel */
}

/* Shared memory read before any thread wrote it (half the tile is filled). */
__global__ void unwritten_shared_kernel(float *out) {
  __shared__ float tile[64];
  if (threadIdx.x < 32) tile[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = tile[63 - threadIdx.x];
}

/* Dynamic shared memory indexed one past its end. */
__global__ void shared_past_end_kernel(float *out) {
  extern __shared__ float row[];
  row[threadIdx.x + 1] = 1.0f; /* blockDim.x floats were asked for */
  __syncthreads();
  out[threadIdx.x] = row[threadIdx.x];
}

/* Threads that return before a barrier the others wait at. */
__global__ void early_return_kernel(float *out, int n) {
  if ((int)threadIdx.x >= n) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

/* A full-warp shuffle after one lane returned. */
__global__ void exited_lane_kernel(int *out) {
  if (threadIdx.x == 7) return;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);
}

/* A lane in a collective whose mask leaves it out. */
__global__ void mask_without_self_kernel(int *out) {
  out[threadIdx.x] = __shfl_sync(0xfffffffeu, (int)threadIdx.x, 1);
}

/* Lanes of one warp at two different collectives with the same mask. */
__global__ void divergent_collectives_kernel(int *out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);
  else out[threadIdx.x] = (int)__ballot_sync(0xffffffffu, 1);
}

/* A shuffle reading a lane its partial mask does not name. */
__global__ void shuffle_outside_mask_kernel(int *out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0x0000ffffu, (int)threadIdx.x, 20);
  else out[threadIdx.x] = 0;
}

/* Two lanes of one warp: one writes shared memory, the other reads it, no __syncwarp. */
__global__ void warp_race_kernel(int *out) {
  __shared__ int slot[32];
  slot[threadIdx.x] = 0;
  __syncwarp();
  slot[threadIdx.x] = (int)threadIdx.x;
  out[threadIdx.x] = slot[(threadIdx.x + 1) % 32]; /* needs __syncwarp() before */
}

/* A WMMA load from a pointer that is not 32-byte aligned. */
__global__ void wmma_misaligned_kernel(const float *a, float *d) {
  using namespace nvcuda;
  __shared__ __align__(32) float tile[16 * 16 + 8];
  for (int e = threadIdx.x; e < 16 * 16 + 8; e += 32) tile[e] = a[e % 256];
  __syncwarp();
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::load_matrix_sync(fa, tile + 4, 16); /* 16 bytes past the aligned start */
  d[threadIdx.x] = fa.x[0];
}

/* Half a warp at the block's barrier while the other half waits for it in a shuffle. */
__global__ void barrier_against_collective_kernel(int *out) {
  if (threadIdx.x < 16) {
    __syncthreads();
    out[threadIdx.x] = 1;
  } else {
    out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);
  }
}

/* Four groups of 8 lanes, each ordered by __syncwarp on its own mask: every lane of a
 * group reads its group's word, then the group's first lane writes it, then every lane
 * reads it again. Then the whole warp syncs, each group syncs 40 times more on its own
 * (160 collectives: the reads are older than the emulator's history of them), and lane
 * 8 writes group 0's word, ordered after group 0's reads by the whole warp's sync.
 * out[lane] = 100 g + g + 10 for group g. */
__global__ void lane_groups_kernel(int *out) {
  __shared__ int word[4];
  const unsigned lane = threadIdx.x, group = lane / 8, mask = 0xffu << (group * 8);
  if (lane % 8 == 0) word[group] = (int)group;
  __syncwarp(mask);
  const int before = word[group];
  __syncwarp(mask); /* the group's reads before its first lane's write */
  if (lane % 8 == 0) word[group] = before + 10;
  __syncwarp(mask);
  out[lane] = before * 100 + word[group];
  __syncwarp();
  for (int k = 0; k < 40; k++) __syncwarp(mask);
  if (lane == 8) word[0] = -1;
}

/* As lane_groups_kernel, but each group's word is written by the first lane of the group
 * before it, which the readers' __syncwarp does not join. */
__global__ void group_race_kernel(int *out) {
  __shared__ int word[4];
  const unsigned lane = threadIdx.x, group = lane / 8, mask = 0xffu << (group * 8);
  if (lane % 8 == 0) word[group] = (int)group;
  __syncthreads();
  const int before = word[group];
  __syncwarp(mask);
  if (lane % 8 == 0) word[(group + 1) % 4] = before + 10; /* needs the whole warp's __syncwarp */
  __syncwarp(mask);
  out[lane] = word[group];
}

/* Lane 0 reads a word, the warp syncs, lane 0 reads it again and lane 1 writes it: the
 * second read and the write race (the sync orders only the first read). */
__global__ void reread_race_kernel(int *out) {
  __shared__ int word;
  if (threadIdx.x == 0) word = 1;
  __syncwarp();
  int got = 0;
  if (threadIdx.x == 0) got = word;
  __syncwarp();
  if (threadIdx.x == 0) got += word;
  if (threadIdx.x == 1) word = 2;
  out[threadIdx.x] = got;
}

/* Lane 0 writes a word, the warp syncs, lane 0 writes it again and lane 1 reads it: the
 * second write and the read race. */
__global__ void rewrite_race_kernel(int *out) {
  __shared__ int word;
  if (threadIdx.x == 0) word = 1;
  __syncwarp();
  if (threadIdx.x == 0) word = 2;
  out[threadIdx.x] = threadIdx.x == 1 ? word : 0;
}

/* Group 0 (lanes 0..7) reads its word, the other groups sync 40 times each on their own
 * masks (more collectives than the emulator's history holds), then lane 8 writes the word:
 * no collective joined it with the readers. */
__global__ void old_read_race_kernel(int *out) {
  __shared__ int word;
  const unsigned lane = threadIdx.x, group = lane / 8, mask = 0xffu << (group * 8);
  if (lane == 0) word = 1;
  __syncthreads();
  int got = 0;
  if (group == 0) got = word;
  else
    for (int k = 0; k < 40; k++) __syncwarp(mask);
  if (lane == 8) word = 2;
  out[lane] = got;
}

/* ---- launchers ------------------------------------------------------------------------- */

cudaError_t launch_correct(correct_kernel which, const correct_args *a, cudaStream_t s) {
  switch (which) {
    case correct_shuffles: shuffles_kernel<<<1, 64, 0, s>>>((int *)a->out); break;
    case correct_votes: votes_kernel<<<1, 64, 0, s>>>((unsigned *)a->out); break;
    case correct_barriers: barriers_kernel<<<1, 160, 0, s>>>((int *)a->out); break;
    case correct_atomics: atomics_kernel<<<6, 96, 0, s>>>((atomic_results *)a->out); break;
    case correct_shared:
      shared_kernel<<<dim3(2, 2, 2), dim3(8, 8, 4), 256 * sizeof(int), s>>>((int *)a->out);
      break;
    case correct_spin: spin_kernel<<<1, 64, 0, s>>>((int *)a->out); break;
    case correct_wmma:
      wmma_kernel<<<1, 32, 0, s>>>(a->in, a->in + 256, a->in + 512, a->out, a->out + 256);
      break;
    case correct_trap: trap_kernel<<<4, 32, 0, s>>>((int *)a->out); break;
    case correct_big_shared: {
      const size_t bytes = 100 * 1024;
      cudaError_t err = cudaFuncSetAttribute(big_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)bytes);
      if (err != cudaSuccess) return err;
      big_shared_kernel<<<2, 256, bytes, s>>>((int *)a->out);
      break;
    }
    case correct_blocks: blocks_kernel<<<50, 64, 0, s>>>((int *)a->out, (int *)a->out + 1); break;
    case correct_copy: copy_kernel<<<4, 128, 0, s>>>(a->in, a->out, a->n); break;
    case correct_lane_groups: lane_groups_kernel<<<1, 32, 0, s>>>((int *)a->out); break;
  }
  return cudaGetLastError();
}

cudaError_t launch_config(config_case which, cudaStream_t s, int *out) {
  switch (which) {
    case config_too_many_threads: copy_kernel<<<1, 1025, 0, s>>>(nullptr, nullptr, 0); break;
    case config_block_z: copy_kernel<<<1, dim3(1, 1, 65), 0, s>>>(nullptr, nullptr, 0); break;
    case config_grid_y: copy_kernel<<<dim3(1, 65536), 32, 0, s>>>(nullptr, nullptr, 0); break;
    case config_empty_grid: copy_kernel<<<0, 32, 0, s>>>(nullptr, nullptr, 0); break;
    case config_shared_without_optin: big_shared_kernel<<<1, 32, 64 * 1024, s>>>(out); break;
    case config_shared_past_optin: {
      cudaError_t err = cudaFuncSetAttribute(big_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             228 * 1024);
      if (err != cudaSuccess) return err;
      break;
    }
  }
  return cudaGetLastError();
}

void launch_defect(defect_kernel which, const defect_args *a, cudaStream_t s) {
  switch (which) {
    case defect_missing_barrier: missing_barrier_kernel<<<2, 128, 0, s>>>(a->in, a->out); break;
    case defect_plain_histogram: plain_histogram_kernel<<<1, 128, 0, s>>>(a->bytes, 1000, (int *)a->out); break;
    case defect_past_right_edge: past_right_edge_kernel<<<4, 64, 0, s>>>(a->in, a->out, 256); break;
    case defect_unwritten_shared: unwritten_shared_kernel<<<1, 64, 0, s>>>(a->out); break;
    case defect_shared_past_end: shared_past_end_kernel<<<1, 64, 64 * sizeof(float), s>>>(a->out); break;
    case defect_early_return: early_return_kernel<<<1, 64, 0, s>>>(a->out, 40); break;
    case defect_exited_lane: exited_lane_kernel<<<1, 32, 0, s>>>((int *)a->out); break;
    case defect_mask_without_self: mask_without_self_kernel<<<1, 32, 0, s>>>((int *)a->out); break;
    case defect_divergent_collectives: divergent_collectives_kernel<<<1, 32, 0, s>>>((int *)a->out); break;
    case defect_shuffle_outside_mask: shuffle_outside_mask_kernel<<<1, 32, 0, s>>>((int *)a->out); break;
    case defect_warp_race: warp_race_kernel<<<1, 32, 0, s>>>((int *)a->out); break;
    case defect_wmma_misaligned: wmma_misaligned_kernel<<<1, 32, 0, s>>>(a->in, a->out); break;
    case defect_barrier_against_collective: barrier_against_collective_kernel<<<1, 32, 0, s>>>((int *)a->out); break;
    case defect_group_race: group_race_kernel<<<1, 32, 0, s>>>((int *)a->out); break;
    case defect_reread_race: reread_race_kernel<<<1, 32, 0, s>>>((int *)a->out); break;
    case defect_rewrite_race: rewrite_race_kernel<<<1, 32, 0, s>>>((int *)a->out); break;
    case defect_old_read_race: old_read_race_kernel<<<1, 32, 0, s>>>((int *)a->out); break;
  }
}

void launch_copy(const float *in, float *out, int n, cudaStream_t s) {
  copy_kernel<<<2, 64, 0, s>>>(in, out, n);
}

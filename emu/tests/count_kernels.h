/* emu/tests/count_kernels.h: the known cases of the emulator's counters
 * (emu/tests/count_kernels.cu), as the test (emu/tests/test_emu_count.cpp) launches them.
 * Each launcher enqueues one launch on `s` and returns cudaGetLastError(). */
#ifndef PLUME_EMU_TESTS_COUNT_KERNELS_H
#define PLUME_EMU_TESTS_COUNT_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

/* out[i] = in[i], n floats, 256 threads a block. */
cudaError_t count_copy(const float *in, float *out, int n, cudaStream_t s);
/* The same copy as n / 4 float4 quads (n a multiple of 4, 16-byte aligned pointers), each
 * loaded and stored whole through __ldcg and __stcg. */
cudaError_t count_copy_quads(const float *in, float *out, int n, cudaStream_t s);
/* out[i] = in[32 i]: in holds 32 n floats (the planted stride-32 access). */
cudaError_t count_stride32(const float *in, float *out, int n, cudaStream_t s);
/* c[i] = a[i] + b[i], n floats. */
cudaError_t count_vector_add(const float *a, const float *b, float *c, int n, cudaStream_t s);
/* out[i] = in[i] > bound ? 255 : 0, n floats to n bytes. */
cudaError_t count_threshold(const float *in, uint8_t *out, float bound, int n, cudaStream_t s);
/* One warp a block, `blocks` blocks: 1024 floats of shared memory written with unit
 * stride (32 requests), a barrier, then one read of word (lane x stride) mod 1024
 * (stride 0: every lane reads word 0, a broadcast) written to out[block x 32 + lane]. */
cudaError_t count_shared_stride(int stride, float *out, int blocks, cudaStream_t s);
/* Two warps: every lane adds 1 to counters[0] (same address), then to counters[1 + lane]
 * (distinct addresses); in shared memory the same, the sums written to out[0..32]. */
cudaError_t count_atomics(int *counters, int *out, cudaStream_t s);
/* One thread reads (volatile) the floats at sectors `pattern` (0: 0,1,0,2,0,3; 1:
 * 0,1,2,0,1,2) of `in`, 8 floats a sector, and writes their sum to out[0]. */
cudaError_t count_sector_pattern(int pattern, const float *in, float *out, cudaStream_t s);
/* Two warps: a full __syncwarp, a shuffle of an int among lanes 0-15 only, a full
 * shuffle of a double and a full ballot. out: 64 ints. */
cudaError_t count_collectives(int *out, cudaStream_t s);
/* One warp, `rows` trips of a loop whose odd lanes load twice a trip and even lanes once,
 * a __syncwarp closing each trip when `together` is not 0. */
cudaError_t count_divergent_trips(const float *in, float *out, int rows, int together,
                                  cudaStream_t s);

#endif /* PLUME_EMU_TESTS_COUNT_KERNELS_H */

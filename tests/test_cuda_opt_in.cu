/* tests/test_cuda_opt_in.cu: plm__cuda_opt_in_shared (kernels/cuda/launch.h), the opt-in of
 * the entropy and cfar launchers to more than 48 KiB of dynamic shared memory a block. It
 * must raise a kernel's attribute and never lower it: a thread that asks for less between
 * another thread's opt-in and that thread's launch must not fail the launch. Built for the
 * CUDA emulator (an EMU build), which checks each launch's shared memory against the
 * kernel's attribute as a GPU does: first in one thread, asking for 96 KiB and then 56 KiB
 * (the attribute must stay at 96 and a 96 KiB launch go through; cudaFuncSetAttribute
 * itself would have lowered it), then past the device's limit (which must fail and change
 * nothing), then in two threads launching 64 and 96 KiB blocks in turn. Exit status 0 is
 * success. */
#include <cstdio>
#include <thread>

#include "kernels/cuda/launch.h"

namespace {

/* Writes the last word of its dynamic shared memory and reads it back, so that the block
 * has the bytes it launched with. */
__global__ void last_word_kernel(int *out, int words) {
  extern __shared__ int shared[];
  if (threadIdx.x == 0) shared[words - 1] = words;
  __syncthreads();
  if (threadIdx.x == 0) *out = shared[words - 1];
}

constexpr size_t kKiB = 1024;

/* Opt in to `bytes`, then launch a block with them on `stream`; true when both went
 * through and the block saw its last word. */
bool opt_in_and_launch(size_t bytes, cudaStream_t stream, int *out) {
  if (plm__cuda_opt_in_shared((const void *)last_word_kernel, bytes) != cudaSuccess) return false;
  last_word_kernel<<<1, 32, bytes, stream>>>(out, (int)(bytes / sizeof(int)));
  if (cudaGetLastError() != cudaSuccess) return false;
  int seen = 0;
  if (cudaMemcpyAsync(&seen, out, sizeof seen, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess)
    return false;
  return seen == (int)(bytes / sizeof(int));
}

int check(bool ok, const char *what) {
  if (!ok) std::printf("FAIL: %s\n", what);
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  int failures = 0;
  int *out[2] = {nullptr, nullptr};
  cudaStream_t streams[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; i++)
    if (cudaMalloc((void **)&out[i], sizeof(int)) != cudaSuccess ||
        cudaStreamCreate(&streams[i]) != cudaSuccess) {
      std::printf("FAIL: no device memory or stream\n");
      return 1;
    }

  failures += check(opt_in_and_launch(96 * kKiB, streams[0], out[0]), "a launch of 96 KiB");
  failures +=
      check(plm__cuda_opt_in_shared((const void *)last_word_kernel, 56 * kKiB) == cudaSuccess,
            "asking for 56 KiB after 96");
  cudaFuncAttributes attributes = {};
  failures +=
      check(cudaFuncGetAttributes(&attributes, (const void *)last_word_kernel) == cudaSuccess &&
                attributes.maxDynamicSharedSizeBytes == (int)(96 * kKiB),
            "the attribute stays at 96 KiB after a thread asks for 56");
  last_word_kernel<<<1, 32, 96 * kKiB, streams[0]>>>(out[0], (int)(96 * kKiB / sizeof(int)));
  failures +=
      check(cudaGetLastError() == cudaSuccess && cudaStreamSynchronize(streams[0]) == cudaSuccess,
            "a 96 KiB launch after a thread asked for 56");

  /* A request past the device's limit (the emulator's 227 KiB) fails and changes nothing:
   * a later request within it is given the most given before. */
  failures +=
      check(plm__cuda_opt_in_shared((const void *)last_word_kernel, 300 * kKiB) != cudaSuccess,
            "asking for 300 KiB fails");
  (void)cudaGetLastError(); /* the failed call's error, as plm__cuda_call_failed empties it */
  failures +=
      check(opt_in_and_launch(56 * kKiB, streams[0], out[0]) &&
                cudaFuncGetAttributes(&attributes, (const void *)last_word_kernel) == cudaSuccess &&
                attributes.maxDynamicSharedSizeBytes == (int)(96 * kKiB),
            "after a failed request, the attribute is still 96 KiB and a launch goes");

  /* Two threads, each opting in to its own size and launching it, in turn. */
  int failed[2] = {0, 0};
  const size_t sizes[2] = {64 * kKiB, 96 * kKiB};
  std::thread threads[2];
  for (int i = 0; i < 2; i++)
    threads[i] = std::thread([&, i] {
      for (int round = 0; round < 200; round++)
        failed[i] += !opt_in_and_launch(sizes[i], streams[i], out[i]);
    });
  for (std::thread &t : threads) t.join();
  failures += check(failed[0] == 0 && failed[1] == 0,
                    "two threads opting in to 64 and 96 KiB and launching, in turn");

  for (int i = 0; i < 2; i++) {
    cudaStreamDestroy(streams[i]);
    cudaFree(out[i]);
  }
  std::printf("cuda_opt_in: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}

/* emu/tests/device_kernels.h: the kernels of the emulator's own tests
 * (emu/tests/device_kernels.cu), as the test (emu/tests/test_emu_device.cpp) calls them. */
#ifndef PLUME_EMU_TESTS_DEVICE_KERNELS_H
#define PLUME_EMU_TESTS_DEVICE_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

/* Kernels that use the device correctly: the test checks what they compute. */
enum correct_kernel {
  correct_shuffles,   /* out: 64 x 9 ints */
  correct_votes,      /* out: 64 x 10 unsigned */
  correct_barriers,   /* out: 160 x 4 ints */
  correct_atomics,    /* out: an atomic_results */
  correct_shared,     /* out: 8 blocks x 256 ints */
  correct_spin,       /* out: 1 int */
  correct_wmma,       /* in: a, b, c (3 x 256 floats); out: d tf32, d bf16 (2 x 256) */
  correct_trap,       /* out: 4 x 32 ints; the launch ends in cudaErrorIllegalInstruction */
  correct_big_shared, /* out: 256 ints; 100 KiB of dynamic shared memory, opted in */
  correct_blocks,     /* out: counter, total */
  correct_copy,       /* in -> out, n floats */
  correct_lane_groups /* out: 32 ints */
};

struct correct_args {
  const float *in;
  float *out;
  int n;
};

struct atomic_results {
  int i;
  unsigned u;
  unsigned long long ull;
  float f;
  double d;
  int min, max;
  unsigned bits, wrap;
  int first, cas_winners;
  int shared_counts;
  float shared_sums;
};

/* Launches that break the device's limits: the error they return. */
enum config_case {
  config_too_many_threads,     /* 1025 threads */
  config_block_z,              /* block z 65 */
  config_grid_y,               /* grid y 65536 */
  config_empty_grid,           /* 0 blocks */
  config_shared_without_optin, /* 64 KiB dynamic, no attribute */
  config_shared_past_optin     /* the attribute at 228 KiB */
};

/* Kernels each with one planted defect (emu/README.md's table). */
enum defect_kernel {
  defect_missing_barrier,
  defect_plain_histogram,
  defect_past_right_edge,
  defect_unwritten_shared,
  defect_shared_past_end,
  defect_early_return,
  defect_exited_lane,
  defect_mask_without_self,
  defect_divergent_collectives,
  defect_shuffle_outside_mask,
  defect_warp_race,
  defect_wmma_misaligned,
  defect_barrier_against_collective,
  defect_group_race,
  defect_reread_race,
  defect_rewrite_race,
  defect_old_read_race
};

struct defect_args {
  const float *in;   /* 256 floats */
  float *out;        /* 256 floats */
  const uint8_t *bytes; /* 1000 bytes */
};

cudaError_t launch_correct(enum correct_kernel which, const struct correct_args *args, cudaStream_t s);
cudaError_t launch_config(enum config_case which, cudaStream_t s, int *out);
void launch_defect(enum defect_kernel which, const struct defect_args *args, cudaStream_t s);
void launch_copy(const float *in, float *out, int n, cudaStream_t s);

#endif /* PLUME_EMU_TESTS_DEVICE_KERNELS_H */

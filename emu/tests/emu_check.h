/* emu/tests/emu_check.h: what the emulator's device-side tests share: check() prints one
 * line per expectation ("ok: ..." or "FAILED: ...") and counts the failures, which main
 * returns; CUDA_OK ends the test at a runtime call that does not succeed. */
#ifndef PLUME_EMU_TESTS_EMU_CHECK_H
#define PLUME_EMU_TESTS_EMU_CHECK_H

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace plm_emu_test {

inline int failures = 0;

inline void check(bool ok, const std::string &what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  std::fflush(stdout);
  if (!ok) failures++;
}

}  // namespace plm_emu_test

#define CUDA_OK(call)                                                 \
  do {                                                                \
    cudaError_t err_ = (call);                                        \
    if (err_ != cudaSuccess) {                                        \
      std::printf("FAILED: %s: %s\n", #call, cudaGetErrorName(err_)); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (0)

#endif /* PLUME_EMU_TESTS_EMU_CHECK_H */

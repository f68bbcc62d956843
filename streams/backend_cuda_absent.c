/* streams/backend_cuda_absent.c: the cuda entry points of a build without CUDA
 * (PLUME_CUDA=OFF, or no nvcc found): no devices, and opening one is unsupported. */
#include "streams/backend.h"
#include "streams/error.h"

void plm__cuda_device_count(int *count, const char **reason) {
  *count = 0;
  *reason = "this build of plume has no CUDA backend";
}

plm_status plm__cuda_backend_open(int device, const plm__backend_iface **iface, void **ctx) {
  (void)device;
  (void)iface;
  (void)ctx;
  return plm__fail_raw(PLM_ERR_UNSUPPORTED,
                       "this build of plume has no CUDA backend (configured with PLUME_CUDA=OFF "
                       "or without nvcc)");
}

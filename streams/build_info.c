/* streams/build_info.c: version and build description (plume/version.h,
 * plm_build_info_get in plume/context.h). The values come from
 * plume_build_config.h, which CMake writes at configure time, and
 * plume_git_commit.h, which it rewrites at every build. */
#include "plume/context.h"
#include "plume/version.h"
#include "plume_build_config.h"
#include "plume_git_commit.h"

#define PLM__STRINGIFY_(x) #x
#define PLM__STRINGIFY(x) PLM__STRINGIFY_(x)

const char *plm_version_string(void) {
  return PLM__STRINGIFY(PLM_VERSION_MAJOR) "." PLM__STRINGIFY(PLM_VERSION_MINOR) "." PLM__STRINGIFY(
      PLM_VERSION_PATCH);
}

int plm_version_number(void) {
  return PLM_VERSION_NUMBER;
}

const plm_build_info *plm_build_info_get(void) {
  static const plm_build_info info = {
      /* .version            = */ PLM__STRINGIFY(PLM_VERSION_MAJOR) "." PLM__STRINGIFY(
          PLM_VERSION_MINOR) "." PLM__STRINGIFY(PLM_VERSION_PATCH),
      /* .git_commit         = */ PLM_BUILD_GIT_COMMIT,
      /* .build_type         = */ PLM_BUILD_TYPE,
      /* .c_compiler         = */ PLM_BUILD_C_COMPILER,
      /* .build_dir          = */ PLM_BUILD_DIR,
      /* .cuda_enabled       = */ PLM_BUILD_CUDA_ENABLED,
      /* .cuda_toolkit       = */ PLM_BUILD_CUDA_TOOLKIT,
      /* .cuda_architectures = */ PLM_BUILD_CUDA_ARCHITECTURES,
      /* .cuda_emulated      = */ PLM_BUILD_CUDA_EMULATED,
  };
  return &info;
}

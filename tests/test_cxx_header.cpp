/* tests/test_cxx_header.cpp: the public headers as seen from C++17.
 *
 * Compiled with -Wall -Wextra -Werror -pedantic, this checks that plume/plume.h is
 * valid C++ (extern "C" linkage, no C-only constructs) and that a C++ program links
 * against libplume and runs: it opens a host context, prints the version, runs a
 * host callback on a stream and tears everything down. Exit status 0 is success.
 */
#include <cstdio>

#include "plume/plume.h"

namespace {

int fail(const char *call, plm_status status) {
  std::fprintf(stderr, "%s -> %s: %s\n", call, plm_status_str(status), plm_last_error());
  return 1;
}

}  // namespace

/* A plm_host_fn with C linkage, as the header's function pointer type has. */
extern "C" void cxx_header_set_flag(void *user);
extern "C" void cxx_header_set_flag(void *user) {
  *static_cast<int *>(user) = 1;
}

int main() {
  std::printf("plume %s (%d), compiled against %d.%d.%d\n", plm_version_string(),
              plm_version_number(), PLM_VERSION_MAJOR, PLM_VERSION_MINOR, PLM_VERSION_PATCH);
  if (plm_version_number() != PLM_VERSION_NUMBER) {
    std::fprintf(stderr, "library version %d, headers %d\n", plm_version_number(),
                 PLM_VERSION_NUMBER);
    return 1;
  }

  plm_context_config config{};
  config.backend = PLM_BACKEND_HOST;
  config.device = 0;
  plm_context *ctx = nullptr;
  plm_status status = plm_context_create(&config, &ctx);
  if (status != PLM_OK) return fail("plm_context_create", status);

  plm_device_info info{};
  status = plm_context_device_info(ctx, &info);
  if (status != PLM_OK) return fail("plm_context_device_info", status);
  std::printf("backend %s, device %s\n", plm_backend_name(info.backend), info.name);

  plm_stream *stream = nullptr;
  plm_event *event = nullptr;
  int flag = 0;
  status = plm_stream_create(ctx, PLM_STREAM_PRIORITY_HIGH, &stream);
  if (status == PLM_OK) status = plm_event_create(ctx, PLM_EVENT_DEFAULT, &event);
  if (status == PLM_OK) status = plm_stream_enqueue_host(stream, cxx_header_set_flag, &flag);
  if (status == PLM_OK) status = plm_event_record(event, stream);
  if (status == PLM_OK) status = plm_event_synchronize(event);
  if (status != PLM_OK) return fail("stream work", status);
  if (flag != 1) {
    std::fprintf(stderr, "the host callback did not run\n");
    return 1;
  }

  if ((status = plm_event_destroy(event)) != PLM_OK) return fail("plm_event_destroy", status);
  if ((status = plm_stream_destroy(stream)) != PLM_OK) return fail("plm_stream_destroy", status);
  if ((status = plm_context_destroy(ctx)) != PLM_OK) return fail("plm_context_destroy", status);
  return 0;
}

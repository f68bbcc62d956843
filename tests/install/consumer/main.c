/* An application outside the plume tree: a host-backend round trip through device
 * memory into pinned host memory (served by plume's private jemalloc, inside the
 * library: a static link shows that the installed package needs no jemalloc of its
 * own). It prints "consumer ok <version> (malloc from <file>)", <file> being the object
 * that the program's own malloc calls reach: linking plume, shared or static, must leave
 * it the C library's (tests/install/check-install.sh checks). Built by check-install.sh
 * against an installed plume. */
#define _GNU_SOURCE /* dladdr */
#include <plume/plume.h>
#include <plume/pool.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                          \
  do {                                                                                       \
    plm_status check_status_ = (call);                                                       \
    if (check_status_ != PLM_OK) {                                                           \
      fprintf(stderr, "consumer: %s failed: %s: %s\n", #call, plm_status_str(check_status_), \
              plm_last_error());                                                             \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

/* The file holding the malloc that this program's calls reach (through its GOT, as
 * every call does), or "?" when the dynamic linker cannot say. */
static const char *malloc_owner(void) {
  void *(*volatile program_malloc)(size_t) = malloc;
  Dl_info info;
  if (!dladdr((void *)program_malloc, &info) || !info.dli_fname) return "?";
  const char *slash = strrchr(info.dli_fname, '/');
  return slash ? slash + 1 : info.dli_fname;
}

int main(void) {
  const char message[] = "plume install round trip";

  plm_context_config cfg = {.backend = PLM_BACKEND_HOST, .device = 0};
  plm_context *ctx = NULL;
  plm_stream *stream = NULL;
  void *dev = NULL;
  void *pinned = NULL;

  CHECK(plm_context_create(&cfg, &ctx));
  CHECK(plm_host_alloc(ctx, sizeof message, &pinned));
  char *back = pinned;
  memset(back, 0, sizeof message);
  CHECK(plm_stream_create(ctx, PLM_STREAM_DEFAULT, &stream));
  CHECK(plm_device_alloc(ctx, sizeof message, &dev));
  CHECK(plm_stream_memcpy(stream, dev, message, sizeof message, PLM_COPY_HOST_TO_DEVICE));
  CHECK(plm_stream_memcpy(stream, back, dev, sizeof message, PLM_COPY_DEVICE_TO_HOST));
  CHECK(plm_stream_synchronize(stream));
  if (memcmp(back, message, sizeof message) != 0) {
    fprintf(stderr, "consumer: round trip mismatch: got \"%.*s\"\n", (int)sizeof message, back);
    return 1;
  }
  CHECK(plm_device_free(ctx, dev));
  CHECK(plm_host_free(ctx, back));
  CHECK(plm_stream_destroy(stream));
  CHECK(plm_context_destroy(ctx));

  /* The headers installed and the library loaded must be the same plume. */
  if (plm_version_number() != PLM_VERSION_NUMBER) {
    fprintf(stderr, "consumer: headers are version %d but the library is %d (%s)\n",
            PLM_VERSION_NUMBER, plm_version_number(), plm_version_string());
    return 1;
  }
  printf("consumer ok %s (malloc from %s)\n", plm_version_string(), malloc_owner());
  return 0;
}

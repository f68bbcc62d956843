/* apps/main.c: the `plume` command, its main: the usage and the dispatch to each command.
 *
 *   plume --help | --version
 *   plume info [--backend host|cuda|auto]
 *   plume op <name> --in IN --out OUT [options]   (apps/op_commands.h)
 *   plume scene --frames N --size H,W ...         (apps/scene_commands.h)
 *   plume score --truth T.csv --detections D.csv  (apps/scene_commands.h)
 *   plume detect --frames F --pipeline P --out D  (apps/detect_commands.h)
 *   plume demo [--frames N] [--size H,W] ...      (apps/demo.h)
 *   plume tune [--quick] [--report] ...           (apps/tune_commands.h)
 *
 * Exit codes: 0 success, 1 a runtime failure, 2 bad usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "apps/demo.h"
#include "apps/detect_commands.h"
#include "apps/op_commands.h"
#include "apps/options.h"
#include "apps/scene_commands.h"
#include "apps/tune_commands.h"
#include "plume/plume.h"
#include "support/quote.h"

static void print_usage(FILE *out) {
  fprintf(out,
          "usage: plume <command> [options]\n"
          "\n"
          "plume is a memory-pooled GPU compute runtime with asynchronous streams.\n"
          "\n"
          "commands:\n"
          "  info [--backend host|cuda|auto]   describe the build, the backends and the device\n"
          "  op <name> --in IN --out OUT ...   run one operation on an image file (plume op "
          "--help):\n");
  op_commands_print_summary(out);
  scene_commands_print_summary(out);
  detect_commands_print_summary(out);
  tune_commands_print_summary(out);
  fprintf(out,
          "\n"
          "options:\n"
          "  -h, --help      show this help\n"
          "  -V, --version   print the version\n"
          "\n"
          "The backend defaults to auto (cuda when a GPU is present, else host); the\n"
          "environment variable PLUME_BACKEND=host|cuda overrides auto.\n");
}

static double gib(uint64_t bytes) {
  return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

static void print_build(void) {
  const plm_build_info *build = plm_build_info_get();
  printf("plume %s (commit %s)\n", build->version, build->git_commit);
  printf("  build type:     %s\n", build->build_type);
  printf("  C compiler:     %s\n", build->c_compiler);
  printf("  built in:       %s\n", build->build_dir);
  if (build->cuda_emulated)
    printf("  cuda backend:   on the CUDA emulator (toolkit %s headers): no GPU; it proves\n"
           "                  correctness, and no time measured on it means anything\n",
           build->cuda_toolkit);
  else if (build->cuda_enabled)
    printf("  cuda backend:   compiled in (CUDA toolkit %s, architectures %s)\n",
           build->cuda_toolkit, build->cuda_architectures);
  else
    printf("  cuda backend:   not compiled in\n");
}

static void print_backends(void) {
  int cuda_devices = 0;
  const char *reason = "";
  plm_backend_device_count(PLM_BACKEND_CUDA, &cuda_devices, &reason);
  printf("backends:\n");
  printf("  host: 1 device\n");
  if (cuda_devices > 0)
    printf("  cuda: %d device(s)\n", cuda_devices);
  else
    printf("  cuda: no device (%s)\n", reason);
}

static void print_device(const plm_device_info *info) {
  printf("device (%s backend, device %d):\n", plm_backend_name(info->backend), info->device);
  printf("  name:           %s\n", info->name);
  printf("  memory:         %.1f GiB total, %.1f GiB free\n", gib(info->total_memory),
         gib(info->free_memory));
  if (info->backend == PLM_BACKEND_CUDA) {
    printf("  SMs:            %d\n", info->multiprocessors);
    printf("  compute cap.:   %d.%d\n", info->compute_capability_major,
           info->compute_capability_minor);
    printf("  copy engines:   %d\n", info->async_copy_engines);
    printf("  L2 cache:       %.1f MiB\n", (double)info->l2_cache_bytes / (1024.0 * 1024.0));
    printf("  shared a block: %.1f KiB opting in\n", (double)info->shared_per_block_optin / 1024.0);
    printf("  memory bus:     %d bits at %d MHz, %.0f GB/s peak\n", info->memory_bus_width_bits,
           info->memory_clock_khz / 1000, info->memory_bandwidth_gbps);
    printf("  driver:         %d.%d, runtime %d.%d\n", info->driver_version / 1000,
           info->driver_version % 1000 / 10, info->runtime_version / 1000,
           info->runtime_version % 1000 / 10);
  } else {
    printf("  cores:          %d\n", info->multiprocessors);
    if (info->l2_cache_bytes)
      printf("  last-level cache: %.1f MiB\n", (double)info->l2_cache_bytes / (1024.0 * 1024.0));
  }
}

static int command_info(int argc, char **argv) {
  plm_context_config config = {0};
  char q[QUOTE_SIZE];
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      if (plm_backend_parse(argv[++i], &config.backend) != PLM_OK) {
        fprintf(stderr, "plume info: %s\n", quote_text(plm_last_error(), q, sizeof q));
        return EXIT_USAGE;
      }
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("usage: plume info [--backend host|cuda|auto]\n");
      return 0;
    } else {
      fprintf(stderr, "plume info: unknown argument %s (see plume info --help)\n",
              quote_value(argv[i], q, sizeof q));
      return EXIT_USAGE;
    }
  }
  print_build();
  print_backends();
  plm_context *ctx = NULL;
  if (plm_context_create(&config, &ctx) != PLM_OK) {
    fprintf(stderr, "plume info: %s\n", plm_last_error());
    return EXIT_RUNTIME_FAILURE;
  }
  plm_device_info info;
  int exit_code = 0;
  if (plm_context_device_info(ctx, &info) == PLM_OK) {
    print_device(&info);
    tune_commands_print_info(ctx);
  } else {
    fprintf(stderr, "plume info: %s\n", plm_last_error());
    exit_code = EXIT_RUNTIME_FAILURE;
  }
  plm_context_destroy(ctx);
  return exit_code;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return EXIT_USAGE;
  }
  const char *command = argv[1];
  if (strcmp(command, "-h") == 0 || strcmp(command, "--help") == 0 ||
      strcmp(command, "help") == 0) {
    print_usage(stdout);
    return 0;
  }
  if (strcmp(command, "-V") == 0 || strcmp(command, "--version") == 0) {
    printf("plume %s\n", plm_version_string());
    return 0;
  }
  if (strcmp(command, "info") == 0) return command_info(argc - 2, argv + 2);
  if (strcmp(command, "op") == 0) return op_command_main(argc - 2, argv + 2);
  if (strcmp(command, "scene") == 0) return scene_command_main(argc - 2, argv + 2);
  if (strcmp(command, "score") == 0) return score_command_main(argc - 2, argv + 2);
  if (strcmp(command, "detect") == 0) return detect_command_main(argc - 2, argv + 2);
  if (strcmp(command, "tune") == 0) return tune_command_main(argc - 2, argv + 2);
  if (strcmp(command, "demo") == 0) return demo_command_main(argc - 2, argv + 2);
  char q[QUOTE_SIZE];
  fprintf(stderr, "plume: unknown command %s (see plume --help)\n",
          quote_value(command, q, sizeof q));
  return EXIT_USAGE;
}

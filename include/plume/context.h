/* plume/context.h: contexts, backends and device information.
 *
 * A context binds plume to one device of one backend. Every other object (stream,
 * event, pool, pipeline) belongs to exactly one context and may only be combined
 * with objects of the same context; mixing contexts is reported as
 * PLM_ERR_INVALID_ARG.
 *
 * Backends:
 *   PLM_BACKEND_CUDA  a CUDA device: real streams, events and kernels.
 *   PLM_BACKEND_HOST  the CPU: each stream is a worker thread draining an in-order
 *                     queue; "device" memory is host memory. A real asynchronous
 *                     backend, not a mock.
 *   PLM_BACKEND_AUTO  cuda when this build has CUDA and a GPU is present, else
 *                     host. The environment variable PLUME_BACKEND=host|cuda|auto
 *                     overrides AUTO (and only AUTO: an explicit choice in the
 *                     config wins). In a build on the CUDA emulator (cmake
 *                     -DPLUME_CUDA=EMU, plm_build_info.cuda_emulated) the cuda
 *                     backend has an emulated device, which AUTO never picks: it runs
 *                     only where cuda is asked for by name.
 *
 * Thread safety: all functions here are thread-safe. A context may be used from
 * several threads at once; it must not be destroyed while another thread uses it.
 */
#ifndef PLUME_CONTEXT_H
#define PLUME_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "plume/export.h"
#include "plume/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct plm_context plm_context;

typedef enum plm_backend {
  PLM_BACKEND_AUTO = 0,
  PLM_BACKEND_HOST = 1,
  PLM_BACKEND_CUDA = 2
} plm_backend;

struct plm_pool_config;   /* plume/pool.h */
struct plm_pool_upstream; /* plume/pool.h */

/* A zeroed config (or NULL) means: backend AUTO, device 0, the default pool with a
 * zeroed plm_pool_config, the pinned host pool on mmap'd pages. */
typedef struct plm_context_config {
  plm_backend backend;
  int device; /* index among the backend's devices; the host backend has one (0) */
  /* The config of the context's default pool (plm_context_default_pool), the pool
   * that tensors, op scratch and pipeline workspaces come from unless given another;
   * copied (its upstream too) at creation. With default_pool->upstream set, all the
   * device memory plume allocates for the context goes through the caller's
   * allocator (plume/pool.h, "the pool's upstream"); with cuda_mem_pool, through the
   * caller's cudaMemPool_t. NULL: a zeroed plm_pool_config. The config is checked
   * when the pool is made, on first use: a bad one fails that use (plm_tensor_alloc,
   * plm_pipeline_compile, ...) with the reason, prefixed "the default pool: ". */
  const struct plm_pool_config *default_pool;
  /* Where the pinned host pool (plm_host_alloc) takes its memory: the caller's
   * callbacks (plume/pool.h's plm_pool_upstream; `stream` is always NULL, and the
   * memory must be ordinary host memory, 256-byte aligned) instead of mmap. On cuda
   * plume page-locks it with cudaHostRegister and unregisters it before giving it
   * back, unless host_upstream_pinned says it is page-locked already (cudaHostAlloc,
   * cudaMallocHost, a pinned memory resource): registering it again would fail. The
   * host pool keeps what it takes until the context is destroyed (pinning is slow),
   * then gives every piece back through free, with the size it asked for. Copied at
   * creation; `user` must outlive the context. The memory becomes extents of the pinned
   * pool's arena of plume's own jemalloc, which is private to libplume (it never replaces
   * the process's malloc), so any memory will do: malloc's aligned_alloc or
   * posix_memalign, cudaHostAlloc, a pinned memory resource, mmap. NULL: mmap. */
  const struct plm_pool_upstream *host_upstream;
  int host_upstream_pinned; /* nonzero: host_upstream's memory is page-locked already */
  /* The host backend's core budget: 0 (the default), its kernels split their work over
   * the process-wide pool of one thread per online core, shared by every host context;
   * N > 0 (at most the online cores), over N threads of this context's own (its streams'
   * workers and N - 1 kernel threads, started now, joined at destroy), so that several
   * host contexts in one process are several "devices" sharing the cores as their
   * budgets say (plm_pipeline_run_stream_devices). plm_context_device_info's
   * multiprocessors says the budget. Ignored by the cuda backend. */
  int host_threads;
} plm_context_config;

/* What a device is. Figures a backend does not know are 0 (or "" for strings). */
typedef struct plm_device_info {
  plm_backend backend;
  int device;                   /* index within the backend */
  char name[256];               /* GPU name, or the CPU model for host */
  uint64_t total_memory;        /* bytes of device (host: physical) memory */
  uint64_t free_memory;         /* bytes free now (host: MemAvailable) */
  int multiprocessors;          /* cuda: SMs; host: online CPU cores */
  int compute_capability_major; /* cuda only */
  int compute_capability_minor; /* cuda only */
  int async_copy_engines;       /* cuda: engines that copy while kernels run */
  uint64_t l2_cache_bytes;      /* cuda: L2; host: the last-level cache */
  int memory_bus_width_bits;    /* cuda only */
  int memory_clock_khz;         /* cuda only */
  double memory_bandwidth_gbps; /* theoretical peak from bus width and clock; cuda only */
  int driver_version;           /* cuda: e.g. 13000 for 13.0; 0 for host */
  int runtime_version;          /* cuda runtime linked into plume; 0 for host */
  uint64_t page_release_bytes;  /* the unit in which pools give back the memory under free
                                   pages of a chunk (plm_pool_config.page_bytes): host: the
                                   system page; cuda: the driver's allocation granularity
                                   (2 MiB) where its virtual memory calls are available, 0
                                   where they are not (pools then keep their pages) */
  uint64_t shared_per_block_optin; /* cuda: the shared memory a block may have when its
                                      kernel opts in (cudaDevAttrMaxSharedMemoryPerBlockOptin:
                                      99 KiB on compute capability 8.6 and 8.9, 163 on 8.0,
                                      227 on 9.0), which decides some kernels' paths (cfar's
                                      bands: plume/cfar.h); 0 for host */
} plm_device_info;

/* How this copy of libplume was built. Strings are never NULL ("" when unknown). */
typedef struct plm_build_info {
  const char *version;            /* "MAJOR.MINOR.PATCH" */
  const char *git_commit;         /* `git describe --always --dirty` at build time */
  const char *build_type;         /* CMAKE_BUILD_TYPE */
  const char *c_compiler;         /* e.g. "GNU 12.2.0" */
  const char *build_dir;          /* the directory the library was built in */
  int cuda_enabled;               /* 1 when the cuda backend was compiled in */
  const char *cuda_toolkit;       /* nvcc's version, "" without CUDA */
  const char *cuda_architectures; /* CMAKE_CUDA_ARCHITECTURES, "" without CUDA */
  int cuda_emulated;              /* 1 when the cuda backend runs on the CUDA emulator (emu/):
                                     no GPU, correctness only, no time means anything */
} plm_build_info;

/* Create a context. cfg may be NULL (AUTO, device 0). Blocks while the backend
 * starts (the CUDA runtime initialises on first use: up to a second).
 * Errors: PLM_ERR_INVALID_ARG (out NULL, unknown backend, bad device index, bad
 * PLUME_BACKEND value, a host_upstream with a NULL callback, host_threads negative or
 * above the online cores), PLM_ERR_NO_DEVICE (cuda asked for,
 * none usable), PLM_ERR_UNSUPPORTED (cuda asked for, this build has no CUDA). *out is set to NULL
 * on failure. */
PLM_API plm_status plm_context_create(const plm_context_config *cfg, plm_context **out);

/* Destroy a context. Blocks until the work of its streams is finished. Pipelines, pools,
 * streams, events and device memory the application did not destroy are destroyed
 * here (the default pool and the pinned host pool always are);
 * when there were any, the context is still destroyed but the call returns
 * PLM_ERR_INVALID_STATE with a message counting what was left. ctx NULL is a no-op
 * returning PLM_OK. */
PLM_API plm_status plm_context_destroy(plm_context *ctx);

/* The backend the context runs on (never AUTO). */
PLM_API plm_status plm_context_backend(const plm_context *ctx, plm_backend *out);

/* Block until all work enqueued on all of the context's streams has finished. Only
 * this context's streams: another context's work (on the same device too) is not
 * waited for, and a stream being captured into a graph (a pipeline capturing on
 * another thread) is passed over, since what it records runs only when the graph is
 * launched. Streams created or destroyed by other threads meanwhile wait for it to
 * return. */
PLM_API plm_status plm_context_synchronize(plm_context *ctx);

/* Describe the context's device. free_memory is read now; the rest is cached. */
PLM_API plm_status plm_context_device_info(plm_context *ctx, plm_device_info *out);

/* How many devices a backend has: 1 for host; for cuda the CUDA device count, or 0
 * when this build has no CUDA or the machine has no driver or device (then
 * reason, if not NULL, receives why, e.g. "cudaErrorInsufficientDriver"). AUTO is
 * an invalid argument. reason is never NULL after a successful call when given. */
PLM_API plm_status plm_backend_device_count(plm_backend backend, int *count, const char **reason);

/* "host", "cuda" or "auto"; "unknown" otherwise. Never NULL. */
PLM_API const char *plm_backend_name(plm_backend backend);

/* Parse "host", "cuda" or "auto" (case-insensitive). */
PLM_API plm_status plm_backend_parse(const char *name, plm_backend *out);

/* The build description of the library in use; static storage, never NULL. */
PLM_API const plm_build_info *plm_build_info_get(void);

/* Device memory straight from the backend (cudaMalloc, or aligned host memory on
 * the host backend): synchronous, 256-byte aligned, slow. The pool (plume/pool.h)
 * is the fast, stream-ordered way; these are its upstream and the baseline that
 * benchmarks compare against.
 *
 * plm_device_alloc: bytes must be > 0. Errors: PLM_ERR_INVALID_ARG (ctx or ptr
 * NULL, bytes 0 or too large to align), PLM_ERR_OUT_OF_MEMORY. */
PLM_API plm_status plm_device_alloc(plm_context *ctx, size_t bytes, void **ptr);

/* Free memory from plm_device_alloc. Blocks until the device is done with it (as
 * cudaFree does). ptr NULL is a no-op. Errors: PLM_ERR_NOT_FOUND when ptr is not
 * an allocation of this context (never allocated, already freed, or an interior
 * pointer); nothing is freed then. */
PLM_API plm_status plm_device_free(plm_context *ctx, void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_CONTEXT_H */

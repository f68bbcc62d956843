/* plume/dlpack.h: tensors across library borders with DLPack 1.x, without copies.
 *
 * DLPack (https://dmlc.github.io/dlpack/latest/) is the common in-memory tensor
 * structure of NumPy, CuPy, PyTorch, JAX, CV-CUDA and Holoscan. These are plume's own
 * declarations of its ABI, written from the public specification of version 1.1 (the
 * versioned managed tensor): the structs below have the layout, field order and values of
 * the specification's DLPackVersion, DLDevice, DLDataType, DLTensor and
 * DLManagedTensorVersioned, under plume's names, so that a program may include the real
 * dlpack.h beside this one and pass pointers between them (Debian's libdlpack-dev is 0.6,
 * before the versioned struct).
 *
 * Ownership. A managed tensor has one owner at a time: whoever holds the pointer calls its
 * deleter once when done (plm_dlpack_release does), never frees it otherwise.
 *   plm_tensor_to_dlpack  hands out a managed tensor that views a plume tensor's memory;
 *                         its deleter frees plume's small allocation (the struct, shape
 *                         and strides) and then calls the release callback given to the
 *                         export, which is where the producer lets the memory go (a
 *                         plm_tensor_free, a reference count dropped). The memory must
 *                         stay valid until then.
 *   plm_tensor_from_dlpack describes a managed tensor's memory as a plm_tensor; it does
 *                         not take ownership: the caller keeps the managed tensor alive
 *                         while the plm_tensor is used and releases it after.
 *
 * Legacy DLPack (0.x: DLManagedTensor, without version or flags; the Python capsule
 * "dltensor") is what consumers older than DLPack 1.0 ask for, NumPy 1.x among them:
 * plm_tensor_to_dlpack_legacy and plm_tensor_from_dlpack_legacy are the same export and
 * import over that struct, with the same ownership rules (the legacy deleter frees
 * plume's allocation, then calls the release callback), and plm_dlpack_release_legacy
 * calls its deleter.
 *
 * Devices. plume's host backend is kDLCPU device 0; a cuda context is kDLCUDA with its
 * device index, except that an export of the context's own pinned host memory
 * (plm_host_alloc, a view inside a block too; not another context's, nor pinned memory
 * plume did not allocate) says kDLCUDAHost device 0, as the DLPack specification and
 * PyTorch's pinned tensors do: NumPy reads it in place; CuPy refuses the type (read it
 * through NumPy, or export device memory). kDLCUDAHost is accepted on import by both:
 * ordinary memory to the host backend, memory a kernel can read through unified
 * addressing to cuda.
 *
 * Streams: the rule of the Python `__dlpack__(stream=S)` protocol. The producer must make
 * the consumer's stream S wait for the work that writes the tensor, on the device, without
 * the host waiting: plm_dlpack_order_after(consumer, producer) records an event on the
 * producer's stream and makes the consumer's wait for it. The consumer's stream is a plume
 * stream: wrap another library's cudaStream_t with plm_stream_wrap (plume/stream.h), or,
 * for one ordering without a wrapper (whose destruction would wait for that stream), give
 * the cudaStream_t itself to plm_dlpack_order_before_native / _after_native. For kDLCPU,
 * and kDLCUDAHost memory the CPU reads, there is no stream: synchronize the producer's
 * stream before handing the tensor to a CPU consumer.
 *
 * Thread safety: the functions are thread-safe; a managed tensor is not (its owner uses
 * it). A deleter may be called from any thread, after the plume context is gone too.
 */
#ifndef PLUME_DLPACK_H
#define PLUME_DLPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "plume/export.h"
#include "plume/status.h"
#include "plume/stream.h"
#include "plume/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The DLPack version plume writes and the major version it reads. */
#define PLM_DLPACK_MAJOR_VERSION 1
#define PLM_DLPACK_MINOR_VERSION 1

/* DLDeviceType values (those plume knows). */
enum {
  PLM_DL_CPU = 1,      /* kDLCPU */
  PLM_DL_CUDA = 2,     /* kDLCUDA */
  PLM_DL_CUDA_HOST = 3 /* kDLCUDAHost: pinned host memory */
};

/* DLDataTypeCode values. */
enum { PLM_DL_INT = 0, PLM_DL_UINT = 1, PLM_DL_FLOAT = 2 };

/* DLManagedTensorVersioned flags. */
#define PLM_DLPACK_FLAG_READ_ONLY ((uint64_t)1 << 0) /* the consumer must not write */
#define PLM_DLPACK_FLAG_IS_COPIED ((uint64_t)1 << 1) /* a copy the consumer owns alone */

typedef struct plm_dl_version { /* DLPackVersion */
  uint32_t major, minor;
} plm_dl_version;

typedef struct plm_dl_device { /* DLDevice */
  int32_t device_type;         /* DLDeviceType, an int-sized enum in the specification */
  int32_t device_id;
} plm_dl_device;

typedef struct plm_dl_dtype { /* DLDataType */
  uint8_t code;               /* PLM_DL_INT, _UINT or _FLOAT */
  uint8_t bits;
  uint16_t lanes; /* 1: plume has no vector types */
} plm_dl_dtype;

typedef struct plm_dl_tensor { /* DLTensor */
  void *data;
  plm_dl_device device;
  int32_t ndim;
  plm_dl_dtype dtype;
  int64_t *shape;
  int64_t *strides; /* in elements; NULL: compact row-major */
  uint64_t byte_offset;
} plm_dl_tensor;

typedef struct plm_dl_managed_tensor_versioned { /* DLManagedTensorVersioned */
  plm_dl_version version;
  void *manager_ctx;
  void (*deleter)(struct plm_dl_managed_tensor_versioned *self);
  uint64_t flags;
  plm_dl_tensor dl_tensor;
} plm_dl_managed_tensor_versioned;

typedef struct plm_dl_managed_tensor { /* DLManagedTensor: legacy DLPack 0.x */
  plm_dl_tensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct plm_dl_managed_tensor *self);
} plm_dl_managed_tensor;

/* Called once by an exported tensor's deleter, after plume's part is freed. */
typedef void (*plm_dlpack_release_fn)(void *user);

/* Export tensor (a plume tensor on its context's device, contiguous, with data) as a
 * managed tensor: version 1.1, the tensor's device, dtype, shape and compact row-major
 * strides, byte_offset 0, `flags` (PLM_DLPACK_FLAG_READ_ONLY and _IS_COPIED only). Its
 * deleter calls release(user) when release is not NULL. Errors: PLM_ERR_INVALID_ARG (NULL
 * tensor or out, a tensor that plm_tensor_wrap would refuse or without data, unknown
 * flags), PLM_ERR_UNSUPPORTED (not contiguous), PLM_ERR_OUT_OF_MEMORY; *out is NULL and
 * release is not called on failure. */
PLM_API plm_status plm_tensor_to_dlpack(const plm_tensor *tensor, uint64_t flags,
                                        plm_dlpack_release_fn release, void *user,
                                        plm_dl_managed_tensor_versioned **out);

/* Describe a managed tensor's memory as a tensor of ctx: data + byte_offset, its shape,
 * and its dtype (uint8, uint16, int32, float32, float64, one lane). *read_only (when not
 * NULL) gets its read-only flag. Does not take ownership. Errors: PLM_ERR_INVALID_ARG
 * (NULL arguments or data; a major version other than 1; ndim outside 1..4; a dimension
 * < 1; a shape of more than INT64_MAX bytes; a byte_offset that overflows data's address,
 * or a tensor that would run past the end of the address space; data + byte_offset not
 * aligned to the element size, such as float32 at +2 bytes: copy such data to aligned
 * memory first; a dtype plume lacks; a device ctx cannot use: kDLCPU on cuda, kDLCUDA on
 * host or of another device index), PLM_ERR_UNSUPPORTED (strides that are not compact row-major:
 * the message gives them and the ones expected; copy the tensor first). */
PLM_API plm_status plm_tensor_from_dlpack(plm_context *ctx,
                                          const plm_dl_managed_tensor_versioned *managed,
                                          plm_tensor *out, bool *read_only);

/* plm_tensor_to_dlpack as a legacy managed tensor (no version, no flags: a consumer of
 * legacy DLPack may write into it). Errors: those of plm_tensor_to_dlpack. */
PLM_API plm_status plm_tensor_to_dlpack_legacy(const plm_tensor *tensor,
                                               plm_dlpack_release_fn release, void *user,
                                               plm_dl_managed_tensor **out);

/* plm_tensor_from_dlpack for a legacy managed tensor (no version to check, never
 * read-only). Does not take ownership. Errors: those of plm_tensor_from_dlpack. */
PLM_API plm_status plm_tensor_from_dlpack_legacy(plm_context *ctx,
                                                 const plm_dl_managed_tensor *managed,
                                                 plm_tensor *out);

/* Call managed's deleter (once: the pointer is dead after). NULL, or a NULL deleter, is a
 * no-op. */
PLM_API void plm_dlpack_release(plm_dl_managed_tensor_versioned *managed);
PLM_API void plm_dlpack_release_legacy(plm_dl_managed_tensor *managed);

/* The stream rule: make `consumer` wait, on the device, for the work enqueued on
 * `producer` so far (an event recorded there; the host does not wait). Both of one
 * context. Errors: PLM_ERR_INVALID_ARG (NULL, or streams of two contexts), and those of
 * the event calls. The same stream twice is a no-op. */
PLM_API plm_status plm_dlpack_order_after(plm_stream *consumer, plm_stream *producer);

/* The stream rule with the other library's stream given as the backend's own, without a
 * plm_stream_wrap wrapper (Python's __dlpack__(stream=S) and __cuda_array_interface__'s
 * "stream" give a cudaStream_t as an integer; cudaStreamLegacy (1) and cudaStreamPerThread
 * (2) are taken too). Device-side waits, the host does not wait:
 *   _before_native  the native stream `consumer` waits for the work enqueued on producer;
 *   _after_native   consumer waits for the work enqueued on the native stream `producer`.
 * cuda only. Errors: PLM_ERR_INVALID_ARG (a NULL plume stream), PLM_ERR_UNSUPPORTED (the
 * host backend, whose streams have no native handle), PLM_ERR_BACKEND (not a stream of the
 * context's device), and those of the event calls. */
PLM_API plm_status plm_dlpack_order_before_native(plm_stream *producer, void *consumer);
PLM_API plm_status plm_dlpack_order_after_native(plm_stream *consumer, void *producer);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_DLPACK_H */

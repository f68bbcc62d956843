/* tensor/dlpack_exchange.c: DLPack in and out (plume/dlpack.h). An export is one allocation: the
 * managed tensor (versioned or legacy), then its shape and strides, then the release
 * callback, so that its deleter frees one block and needs nothing of plume's (it may run
 * after the context is destroyed). */
#include "plume/dlpack.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "streams/error.h"
#include "streams/runtime.h"
#include "tensor/tensor_internal.h"

typedef struct exported {
  union { /* first: the deleter's pointer is the block's */
    plm_dl_managed_tensor_versioned versioned;
    plm_dl_managed_tensor legacy;
  } managed;
  int64_t shape[PLM_TENSOR_MAX_DIMS];
  int64_t strides[PLM_TENSOR_MAX_DIMS];
  plm_dlpack_release_fn release;
  void *user;
} exported;

static void exported_free(exported *e) {
  plm_dlpack_release_fn release = e->release;
  void *user = e->user;
  free(e);
  if (release) release(user);
}

static void versioned_deleter(plm_dl_managed_tensor_versioned *self) {
  exported_free((exported *)(void *)self);
}

static void legacy_deleter(plm_dl_managed_tensor *self) {
  exported_free((exported *)(void *)self);
}

/* The failure of plm_tensor_wrap_strided ("plm_tensor_wrap_strided: strides ...") told of
 * `subject` instead: "plm_<caller>: <subject>: strides ...". */
static plm_status renamed_in(const char *caller, plm_status status, const char *subject) {
  char message[512];
  const char *tail = strstr(plm_last_error(), ": ");
  snprintf(message, sizeof message, "%s", tail ? tail + 2 : plm_last_error());
  return plm__fail_in(caller, status, "%s: %s", subject, message);
}

/* ---- dtypes and devices ------------------------------------------------------------------- */

static const struct {
  plm_dtype dtype;
  uint8_t code, bits;
} dtypes[] = {{PLM_DTYPE_U8, PLM_DL_UINT, 8},
              {PLM_DTYPE_U16, PLM_DL_UINT, 16},
              {PLM_DTYPE_I32, PLM_DL_INT, 32},
              {PLM_DTYPE_F32, PLM_DL_FLOAT, 32},
              {PLM_DTYPE_F64, PLM_DL_FLOAT, 64}};

enum { DTYPE_COUNT = sizeof dtypes / sizeof dtypes[0] };

static bool dl_dtype_of(plm_dtype dtype, plm_dl_dtype *out) {
  for (int i = 0; i < DTYPE_COUNT; i++)
    if (dtypes[i].dtype == dtype) {
      *out = (plm_dl_dtype){.code = dtypes[i].code, .bits = dtypes[i].bits, .lanes = 1};
      return true;
    }
  return false;
}

static bool plm_dtype_of(plm_dl_dtype dl, plm_dtype *out) {
  for (int i = 0; dl.lanes == 1 && i < DTYPE_COUNT; i++)
    if (dtypes[i].code == dl.code && dtypes[i].bits == dl.bits) {
      *out = dtypes[i].dtype;
      return true;
    }
  return false;
}

/* Where a tensor of ctx at data lives: kDLCPU on host; on cuda kDLCUDA of the context's
 * device, or kDLCUDAHost where data is the context's pinned host memory (plm_host_alloc),
 * which a CPU consumer such as NumPy reads in place and must not take for device memory. */
static plm_dl_device device_of(plm_context *ctx, const void *data) {
  if (ctx->backend->kind != PLM_BACKEND_CUDA)
    return (plm_dl_device){.device_type = PLM_DL_CPU, .device_id = 0};
  if (plm__host_pool_holds(ctx, data))
    return (plm_dl_device){.device_type = PLM_DL_CUDA_HOST, .device_id = 0};
  return (plm_dl_device){.device_type = PLM_DL_CUDA, .device_id = ctx->info.device};
}

/* Whether ctx's kernels and copies can use memory of `device`; else the message. */
static plm_status check_device(const plm_context *ctx, plm_dl_device device) {
  const bool cuda = ctx->backend->kind == PLM_BACKEND_CUDA;
  switch (device.device_type) {
    case PLM_DL_CUDA_HOST: return PLM_OK; /* pinned host memory: both backends reach it */
    case PLM_DL_CPU:
      if (!cuda) return PLM_OK;
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "managed->dl_tensor.device is kDLCPU but the context is cuda (copy "
                           "the tensor to the device, or use a host context)");
    case PLM_DL_CUDA:
      if (!cuda)
        return plm__fail_raw(PLM_ERR_INVALID_ARG,
                             "managed->dl_tensor.device is kDLCUDA but the context is host");
      if (device.device_id == ctx->info.device) return PLM_OK;
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "managed->dl_tensor.device is kDLCUDA:%d but the context is on "
                           "device %d",
                           (int)device.device_id, ctx->info.device);
    default:
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "managed->dl_tensor.device type %d is not kDLCPU (1), kDLCUDA (2) or "
                           "kDLCUDAHost (3)",
                           (int)device.device_type);
  }
}

/* ---- export ----------------------------------------------------------------------------- */

enum { KNOWN_FLAGS = PLM_DLPACK_FLAG_READ_ONLY | PLM_DLPACK_FLAG_IS_COPIED };

/* The block of an export of tensor (checked here) with its DLTensor filled in; the caller
 * fills the rest of its managed tensor. */
#define exported_new(tensor, release, user, out) \
  exported_new_in(__func__, (tensor), (release), (user), (out))
static plm_status exported_new_in(const char *caller, const plm_tensor *tensor,
                                  plm_dlpack_release_fn release, void *user, exported **out) {
  if (!tensor) return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "tensor is NULL");
  if (!tensor->ctx) return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "tensor->ctx is NULL");
  if (!tensor->data) return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "tensor->data is NULL");
  plm_tensor checked;
  plm_status status =
      plm_tensor_wrap_strided(tensor->ctx, tensor->data, tensor->dtype, tensor->ndim, tensor->dims,
                              tensor->strides, &checked);
  if (status != PLM_OK) return renamed_in(caller, status, "tensor");
  exported *e = calloc(1, sizeof *e);
  if (!e) return plm__fail_in(caller, PLM_ERR_OUT_OF_MEMORY, "no host memory for a managed tensor");
  for (int d = 0; d < tensor->ndim; d++) {
    e->shape[d] = checked.dims[d];
    e->strides[d] = checked.strides[d];
  }
  e->release = release;
  e->user = user;
  *out = e;
  return PLM_OK;
}

static plm_dl_tensor dl_tensor_of(const plm_tensor *tensor, exported *e) {
  plm_dl_tensor dl = {.data = tensor->data,
                      .device = device_of(tensor->ctx, tensor->data),
                      .ndim = tensor->ndim,
                      .shape = e->shape,
                      .strides = e->strides,
                      .byte_offset = 0};
  dl_dtype_of(tensor->dtype, &dl.dtype); /* checked by the wrap */
  return dl;
}

plm_status plm_tensor_to_dlpack(const plm_tensor *tensor, uint64_t flags,
                                plm_dlpack_release_fn release, void *user,
                                plm_dl_managed_tensor_versioned **out) {
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  if (flags & ~(uint64_t)KNOWN_FLAGS)
    return plm__fail(PLM_ERR_INVALID_ARG,
                     "flags 0x%llx has bits other than READ_ONLY and "
                     "IS_COPIED",
                     (unsigned long long)flags);
  exported *e = NULL;
  plm_status status = exported_new(tensor, release, user, &e);
  if (status != PLM_OK) return status;
  e->managed.versioned = (plm_dl_managed_tensor_versioned){
      .version = {.major = PLM_DLPACK_MAJOR_VERSION, .minor = PLM_DLPACK_MINOR_VERSION},
      .manager_ctx = e,
      .deleter = versioned_deleter,
      .flags = flags,
      .dl_tensor = dl_tensor_of(tensor, e)};
  *out = &e->managed.versioned;
  return PLM_OK;
}

plm_status plm_tensor_to_dlpack_legacy(const plm_tensor *tensor, plm_dlpack_release_fn release,
                                       void *user, plm_dl_managed_tensor **out) {
  PLM__REQUIRE_NOT_NULL(out);
  *out = NULL;
  exported *e = NULL;
  plm_status status = exported_new(tensor, release, user, &e);
  if (status != PLM_OK) return status;
  e->managed.legacy = (plm_dl_managed_tensor){
      .dl_tensor = dl_tensor_of(tensor, e), .manager_ctx = e, .deleter = legacy_deleter};
  *out = &e->managed.legacy;
  return PLM_OK;
}

/* ---- import ----------------------------------------------------------------------------- */

/* The checks and the wrap both imports share: t is `managed->dl_tensor`. */
#define import_dl_tensor(ctx, t, out) import_dl_tensor_in(__func__, (ctx), (t), (out))
static plm_status import_dl_tensor_in(const char *caller, plm_context *ctx, const plm_dl_tensor *t,
                                      plm_tensor *out) {
  if (!t->data) return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "managed->dl_tensor.data is NULL");
  if (t->ndim < 1 || t->ndim > PLM_TENSOR_MAX_DIMS)
    return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "managed->dl_tensor.ndim %d is not in 1..%d",
                        (int)t->ndim, PLM_TENSOR_MAX_DIMS);
  if (!t->shape)
    return plm__fail_in(caller, PLM_ERR_INVALID_ARG, "managed->dl_tensor.shape is NULL");
  plm_dtype dtype;
  if (!plm_dtype_of(t->dtype, &dtype))
    return plm__fail_in(caller, PLM_ERR_INVALID_ARG,
                        "managed->dl_tensor.dtype (code %u, %u bits, %u lanes) is not uint8, "
                        "uint16, int32, float32 or float64 with one lane",
                        t->dtype.code, t->dtype.bits, t->dtype.lanes);
  plm_status status = check_device(ctx, t->device);
  if (status != PLM_OK) return plm__propagate_in(caller, status);
  /* data + byte_offset, and the tensor's bytes after it, must stay inside the address
   * space (a wrapped pointer would be a pointer overflow, then reads anywhere). */
  if (t->byte_offset > (uint64_t)INT64_MAX ||
      t->byte_offset > (uint64_t)(UINTPTR_MAX - (uintptr_t)t->data))
    return plm__fail_in(caller, PLM_ERR_INVALID_ARG,
                        "managed->dl_tensor.byte_offset %llu overflows the address of data %p",
                        (unsigned long long)t->byte_offset, t->data);
  int64_t strides[PLM_TENSOR_MAX_DIMS];
  if (t->strides) memcpy(strides, t->strides, (size_t)t->ndim * sizeof *strides);
  plm_tensor tensor;
  status = plm_tensor_wrap_strided(ctx, (char *)t->data + t->byte_offset, dtype, (int)t->ndim,
                                   t->shape, t->strides ? strides : NULL, &tensor);
  if (status != PLM_OK) {
    /* Name the DLPack fields instead of plm_tensor_wrap_strided's arguments. */
    char shown[160];
    plm__list_text(t->shape, (int)t->ndim, shown, sizeof shown);
    char subject[200];
    snprintf(subject, sizeof subject, "managed->dl_tensor (shape %s)", shown);
    return renamed_in(caller, status, subject);
  }
  if ((uint64_t)plm_tensor_bytes(&tensor) > UINTPTR_MAX - (uintptr_t)tensor.data)
    return plm__fail_in(caller, PLM_ERR_INVALID_ARG,
                        "managed->dl_tensor: %zu bytes at data %p + byte_offset %llu run past "
                        "the end of the address space",
                        plm_tensor_bytes(&tensor), t->data, (unsigned long long)t->byte_offset);
  *out = tensor;
  return PLM_OK;
}

plm_status plm_tensor_from_dlpack(plm_context *ctx, const plm_dl_managed_tensor_versioned *managed,
                                  plm_tensor *out, bool *read_only) {
  PLM__REQUIRE_NOT_NULL(out);
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(managed);
  if (managed->version.major != PLM_DLPACK_MAJOR_VERSION)
    return plm__fail(PLM_ERR_INVALID_ARG, "managed->version is %u.%u; plume reads DLPack 1.x",
                     managed->version.major, managed->version.minor);
  plm_status status = import_dl_tensor(ctx, &managed->dl_tensor, out);
  if (status == PLM_OK && read_only) *read_only = managed->flags & PLM_DLPACK_FLAG_READ_ONLY;
  return status;
}

plm_status plm_tensor_from_dlpack_legacy(plm_context *ctx, const plm_dl_managed_tensor *managed,
                                         plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(out);
  PLM__REQUIRE_NOT_NULL(ctx);
  PLM__REQUIRE_NOT_NULL(managed);
  return import_dl_tensor(ctx, &managed->dl_tensor, out);
}

void plm_dlpack_release(plm_dl_managed_tensor_versioned *managed) {
  if (managed && managed->deleter) managed->deleter(managed);
}

void plm_dlpack_release_legacy(plm_dl_managed_tensor *managed) {
  if (managed && managed->deleter) managed->deleter(managed);
}

/* ---- the stream rule -------------------------------------------------------------------- */

plm_status plm_dlpack_order_after(plm_stream *consumer, plm_stream *producer) {
  PLM__REQUIRE_NOT_NULL(consumer);
  PLM__REQUIRE_NOT_NULL(producer);
  if (consumer->ctx != producer->ctx)
    return plm__fail(PLM_ERR_INVALID_ARG, "consumer and producer are streams of two contexts");
  if (consumer == producer || consumer->handle == producer->handle) return PLM_OK;
  plm_event *event = NULL;
  plm_status status = plm_event_create(producer->ctx, PLM_EVENT_DISABLE_TIMING, &event);
  if (status == PLM_OK) status = plm_event_record(event, producer);
  if (status == PLM_OK) status = plm_stream_wait_event(consumer, event);
  /* An event may be destroyed once waited on: the wait keeps its record. */
  if (event) plm_event_destroy(event);
  return status;
}

/* The stream rule with the other side given as the backend's own stream: an event
 * recorded on `from`, then `to` waits for it; each side is a plume stream or a native one. */
static plm_status order_native(plm_context *ctx, void *to_native, plm_stream *to, void *from_native,
                               plm_stream *from) {
  if (ctx->backend->kind != PLM_BACKEND_CUDA)
    return plm__fail_raw(PLM_ERR_UNSUPPORTED,
                         "the host backend's streams are plume's own worker threads and have no "
                         "native handle: synchronize the producer's stream for a CPU consumer");
  plm_event *event = NULL;
  plm_status status = plm_event_create(ctx, PLM_EVENT_DISABLE_TIMING, &event);
  if (status == PLM_OK) {
    status = from ? plm_event_record(event, from)
                  : ctx->backend->event_record(ctx->backend_ctx, event->handle, from_native);
    if (status == PLM_OK && !from) atomic_store(&event->recorded, true);
  }
  if (status == PLM_OK)
    status = to ? plm_stream_wait_event(to, event)
                : ctx->backend->stream_wait_event(ctx->backend_ctx, to_native, event->handle);
  if (event) plm_event_destroy(event); /* the wait keeps its record */
  return status;
}

plm_status plm_dlpack_order_before_native(plm_stream *producer, void *consumer) {
  PLM__REQUIRE_NOT_NULL(producer);
  return plm__propagate(order_native(producer->ctx, consumer, NULL, NULL, producer));
}

plm_status plm_dlpack_order_after_native(plm_stream *consumer, void *producer) {
  PLM__REQUIRE_NOT_NULL(consumer);
  return plm__propagate(order_native(consumer->ctx, NULL, consumer, producer, NULL));
}
